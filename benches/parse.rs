//! Line parsing throughput (MB/s of JSON per core) on generated entity lines shaped like the real dump: many
//! languages of labels/descriptions/aliases, sitelinks, claims with item, string, time and quantity values,
//! qualifiers and references. Compares the extract worker (framing + entity parser + keep rules), the entity
//! parser alone, simd-json's tape alone, a full simd-json DOM, and zlib-rs inflate of the same bytes (the
//! target: parsing costs no more CPU per MB than inflating). The worker runs with the skim (the default) and
//! without it (`skim = false`), and the skim alone and the direct reader of plain lines (`dump::line::direct`, what
//! the default takes for nearly every line) are timed too.
//!
//! `cargo bench --bench parse` (single-threaded: one chunk at a time on the bench thread).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use std::fmt::Write as _;
use std::hint::black_box;
use std::io::{Read, Write};

const LANGS: &[&str] = &[
    "en", "fr", "de", "es", "it", "pt", "ko", "ja", "nl", "sv", "pl", "ru", "uk", "zh", "ar", "fa",
    "he", "hu", "fi", "cs", "ca", "da", "nb", "ro", "tr", "el", "bg", "sr", "hr", "sk", "sl", "et",
    "lv", "lt", "eo", "id", "ms", "vi", "th", "hi", "bn", "ta", "te", "ur", "ga", "cy", "eu", "gl",
    "is", "mk",
];

fn item_line(rng: &mut ChaCha8Rng, q: u64) -> String {
    let mut s = String::with_capacity(16 << 10);
    let nl = rng.random_range(3..LANGS.len());
    write!(s, "{{\"type\":\"item\",\"id\":\"Q{q}\",\"labels\":{{").unwrap();
    for (i, l) in LANGS[..nl].iter().enumerate() {
        let sep = if i > 0 { "," } else { "" };
        write!(
            s,
            "{sep}\"{l}\":{{\"language\":\"{l}\",\"value\":\"Label {q} in {l} \\u00e9\"}}"
        )
        .unwrap();
    }
    s.push_str("},\"descriptions\":{");
    for (i, l) in LANGS[..nl].iter().enumerate() {
        let sep = if i > 0 { "," } else { "" };
        write!(s, "{sep}\"{l}\":{{\"language\":\"{l}\",\"value\":\"a description of entity {q} in the language {l}\"}}").unwrap();
    }
    s.push_str("},\"aliases\":{");
    for (i, l) in LANGS[..nl / 2].iter().enumerate() {
        let sep = if i > 0 { "," } else { "" };
        write!(s, "{sep}\"{l}\":[{{\"language\":\"{l}\",\"value\":\"alias one\"}},{{\"language\":\"{l}\",\"value\":\"alias two\"}}]").unwrap();
    }
    s.push_str("},\"claims\":{");
    let nclaims = 1 + (rng.random::<f64>().powi(3) * 80.0) as usize;
    for c in 0..nclaims {
        let p = 17 + c * 13;
        let sep = if c > 0 { "," } else { "" };
        write!(s, "{sep}\"P{p}\":[").unwrap();
        let nst = 1 + rng.random_range(0..3);
        for k in 0..nst {
            let sep = if k > 0 { "," } else { "" };
            let value = match rng.random_range(0..4) {
                0 | 1 => format!(
                    "{{\"value\":{{\"entity-type\":\"item\",\"numeric-id\":{o},\"id\":\"Q{o}\"}},\"type\":\"wikibase-entityid\"}},\"datatype\":\"wikibase-item\"",
                    o = rng.random_range(1..100_000u64)
                ),
                2 => "{\"value\":\"some string value\",\"type\":\"string\"},\"datatype\":\"string\"".to_string(),
                _ => "{\"value\":{\"time\":\"+2001-01-01T00:00:00Z\",\"timezone\":0,\"before\":0,\"after\":0,\"precision\":11,\"calendarmodel\":\"http://www.wikidata.org/entity/Q1985727\"},\"type\":\"time\"},\"datatype\":\"time\"".to_string(),
            };
            write!(s, "{sep}{{\"mainsnak\":{{\"snaktype\":\"value\",\"property\":\"P{p}\",\"hash\":\"0123456789abcdef0123456789abcdef01234567\",\"datavalue\":{value}}},\"type\":\"statement\",\"id\":\"Q{q}${k}-ABCD-EF01-2345-6789\",\"rank\":\"normal\"").unwrap();
            if rng.random_bool(0.3) {
                s.push_str(",\"qualifiers\":{\"P580\":[{\"snaktype\":\"value\",\"property\":\"P580\",\"hash\":\"abc\",\"datavalue\":{\"value\":{\"time\":\"+1990-00-00T00:00:00Z\",\"timezone\":0,\"before\":0,\"after\":0,\"precision\":9,\"calendarmodel\":\"http://www.wikidata.org/entity/Q1985727\"},\"type\":\"time\"},\"datatype\":\"time\"}]},\"qualifiers-order\":[\"P580\"]");
            }
            if rng.random_bool(0.6) {
                s.push_str(",\"references\":[{\"hash\":\"fa278ebfc458360e5aed63d5058cca83c46134f1\",\"snaks\":{\"P143\":[{\"snaktype\":\"value\",\"property\":\"P143\",\"datavalue\":{\"value\":{\"entity-type\":\"item\",\"numeric-id\":328,\"id\":\"Q328\"},\"type\":\"wikibase-entityid\"},\"datatype\":\"wikibase-item\"}],\"P813\":[{\"snaktype\":\"value\",\"property\":\"P813\",\"datavalue\":{\"value\":{\"time\":\"+2020-01-01T00:00:00Z\",\"timezone\":0,\"before\":0,\"after\":0,\"precision\":11,\"calendarmodel\":\"http://www.wikidata.org/entity/Q1985727\"},\"type\":\"time\"},\"datatype\":\"time\"}]},\"snaks-order\":[\"P143\",\"P813\"]}]");
            }
            s.push('}');
        }
        s.push(']');
    }
    s.push_str("},\"sitelinks\":{");
    let ns = (rng.random::<f64>().powi(2) * 60.0) as usize;
    for i in 0..ns {
        let sep = if i > 0 { "," } else { "" };
        write!(s, "{sep}\"site{i}wiki\":{{\"site\":\"site{i}wiki\",\"title\":\"Title of {q}\",\"badges\":[]}}").unwrap();
    }
    write!(
        s,
        "}},\"lastrevid\":{},\"modified\":\"2024-01-01T00:00:00Z\"}}",
        1000 + q
    )
    .unwrap();
    s
}

/// About `bytes` of dump text in the real layout (`[`, lines ending with `,`, `]`).
fn dump_text(bytes: usize) -> Vec<u8> {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let mut out = b"[\n".to_vec();
    let mut q = 1;
    while out.len() < bytes {
        out.extend_from_slice(item_line(&mut rng, q).as_bytes());
        out.extend_from_slice(b",\n");
        q += 1;
    }
    out.extend_from_slice(b"]\n");
    out
}

fn parse(c: &mut Criterion) {
    // Lines of `sword synth` (the generator other stages test against) ...
    let mut synth_text = b"[\n".to_vec();
    for (i, l) in sword::synth::bench_lines(16 << 20, 42).iter().enumerate() {
        if i > 0 {
            synth_text.extend_from_slice(b",\n");
        }
        synth_text.extend_from_slice(l);
    }
    synth_text.extend_from_slice(b"\n]\n");
    group(c, "parse_synth", &synth_text);
    // ... the real 2015 dump extract when `SWORD_REAL_FIXTURES` points at the fixtures (21 MB of JSON) ...
    if let Ok(root) = std::env::var("SWORD_REAL_FIXTURES") {
        let path =
            std::path::Path::new(&root).join("dumps/jsondumpdata_20151109_1000-entities.json.gz");
        let mut real = Vec::new();
        flate2::read::MultiGzDecoder::new(std::fs::File::open(&path).expect("real fixture"))
            .read_to_end(&mut real)
            .expect("real fixture inflates");
        group(c, "parse_real_2015", &real);
    }
    // ... and heavier hand-built lines (50 languages of terms, more references and sitelinks).
    group(c, "parse", &dump_text(8 << 20));
}

fn group(c: &mut Criterion, name: &str, text: &[u8]) {
    let rules =
        sword::stages::extract::Rules::new(&sword::stages::extract::Config::default()).unwrap();
    let langs = sword::dump::entity::Langs {
        langs: sword::stages::extract::Config::default().languages,
    };
    let lines: Vec<&[u8]> = text
        .split(|&b| b == b'\n')
        .filter(|l| l.len() > 2)
        .collect();
    let mut g = c.benchmark_group(name);
    g.throughput(Throughput::Bytes(text.len() as u64));
    g.sample_size(10);
    g.bench_function("extract_worker_chunk", |b| {
        b.iter(|| {
            black_box(sword::stages::extract::work_chunk(
                &rules,
                black_box(text),
                true,
            ))
            .len
        })
    });
    let whole = sword::stages::extract::Rules::new(&sword::stages::extract::Config {
        skim: false,
        ..sword::stages::extract::Config::default()
    })
    .unwrap();
    g.bench_function("extract_worker_chunk_no_skim", |b| {
        b.iter(|| {
            black_box(sword::stages::extract::work_chunk(
                &whole,
                black_box(text),
                true,
            ))
            .len
        })
    });
    // `--skip-unlabelled-statements`: unlabelled items' claims and descriptions jumped over.
    let skip = sword::stages::extract::Rules::new(&sword::stages::extract::Config {
        unlabelled_statements: sword::stages::extract::UnlabelledStatements::Skip,
        ..sword::stages::extract::Config::default()
    })
    .unwrap();
    g.bench_function("extract_worker_chunk_skip_unlabelled", |b| {
        b.iter(|| {
            black_box(sword::stages::extract::work_chunk(
                &skip,
                black_box(text),
                true,
            ))
            .len
        })
    });
    g.bench_function("skim_only", |b| {
        let mut out = Vec::new();
        b.iter(|| {
            let mut n = 0usize;
            for l in &lines {
                let (s, e) = sword::dump::entity::trim_line(l);
                if sword::dump::line::skim::skim(&l[s..e], &langs, &mut out).is_ok() {
                    n += out.len();
                }
            }
            n
        })
    });
    g.bench_function("direct_only", |b| {
        // The reader of plain lines (`dump::line::direct`): the entity read in place, no copy, no simd-json.
        b.iter(|| {
            let mut n = 0usize;
            for l in &lines {
                let (s, e) = sword::dump::entity::trim_line(l);
                if let Ok(t) = std::str::from_utf8(&l[s..e]) {
                    if let Ok(ent) = sword::dump::line::direct::entity(t, &langs, None) {
                        n += ent.statements.len();
                    }
                }
            }
            n
        })
    });
    g.bench_function("entity_parser", |b| {
        let mut buf = Vec::new();
        let mut buffers = simd_json::Buffers::new(1 << 16);
        b.iter(|| over_lines(&lines, &mut buf, |l| statements(l, &langs, &mut buffers)))
    });
    let skimmed: Vec<Vec<u8>> = lines
        .iter()
        .map(|l| {
            let (s, e) = sword::dump::entity::trim_line(l);
            let mut out = Vec::new();
            if sword::dump::line::skim::skim(&l[s..e], &langs, &mut out).is_err() {
                out = l[s..e].to_vec();
            }
            out
        })
        .collect();
    eprintln!(
        "{name}: {} lines, skimmed to {:.1}% of the bytes",
        lines.len(),
        100.0 * skimmed.iter().map(|l| l.len()).sum::<usize>() as f64 / text.len() as f64
    );
    let skimmed: Vec<&[u8]> = skimmed.iter().map(|l| l.as_slice()).collect();
    g.bench_function("entity_parser_on_skimmed_lines", |b| {
        let mut buf = Vec::new();
        let mut buffers = simd_json::Buffers::new(1 << 16);
        b.iter(|| over_lines(&skimmed, &mut buf, |l| statements(l, &langs, &mut buffers)))
    });
    g.bench_function("simd_json_tape_only", |b| {
        let mut buf = Vec::new();
        b.iter(|| over_lines(&lines, &mut buf, |l| simd_json::to_tape(l).is_ok() as usize))
    });
    g.bench_function("simd_json_dom", |b| {
        let mut buf = Vec::new();
        b.iter(|| {
            over_lines(&lines, &mut buf, |l| {
                simd_json::to_borrowed_value(l).is_ok() as usize
            })
        })
    });
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(6));
    enc.write_all(text).unwrap();
    let gz = enc.finish().unwrap();
    g.bench_function("zlib_rs_inflate_same_json", |b| {
        let mut out = Vec::with_capacity(text.len());
        b.iter(|| {
            out.clear();
            flate2::read::GzDecoder::new(&gz[..])
                .read_to_end(&mut out)
                .unwrap()
        })
    });
    g.finish();
}

/// Sum of `f` over the lines, each trimmed and copied into one reused buffer (simd-json parses in place).
fn over_lines(lines: &[&[u8]], buf: &mut Vec<u8>, mut f: impl FnMut(&mut [u8]) -> usize) -> usize {
    let mut n = 0;
    for l in lines {
        let (s, e) = sword::dump::entity::trim_line(l);
        buf.clear();
        buf.extend_from_slice(&l[s..e]);
        n += f(buf);
    }
    n
}

/// Statements of the entity on one line (0 for frames and malformed lines).
fn statements(
    line: &mut [u8],
    langs: &sword::dump::entity::Langs,
    buffers: &mut simd_json::Buffers,
) -> usize {
    match sword::dump::line::parse_entity(line, langs, buffers) {
        Ok(sword::dump::entity::Line::Entity(ent)) => ent.statements.len(),
        _ => 0,
    }
}

criterion_group!(benches, parse);
criterion_main!(benches);
