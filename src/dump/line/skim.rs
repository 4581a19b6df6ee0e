//! Skim: copy out of one entity line only the bytes the entity parser reads, before simd-json sees them.
//!
//! Why: simd-json builds a tape node for every value of the line and the serde visitor then walks (and skips)
//! every one of them. On real dump lines most bytes are never read by `sword extract`: sitelinks (only their
//! number is kept), qualifiers, references, aliases, and labels and descriptions in the 300-odd languages
//! that are not configured. On the 2015 real fixture these are ≈75% of the bytes. Building their tape costs
//! more CPU than inflating them (the target: parsing may cost no more CPU per MB than inflate), so a
//! cheap structural scan drops them first: strings are jumped over with `memchr2` (`"` or `\`), nesting is
//! tracked by depth, and nothing is unescaped or validated there.
//!
//! The output is a small JSON object with, in input order:
//! - `type`, `id`, `datatype`, `lastrevid`, `modified` copied as they are;
//! - `labels` and `descriptions` with only the configured languages and `mul` (non-objects such as the
//!   `[]` of old dumps copied as they are);
//! - `sitelinks` replaced by `"sitelinks#":N`, its number of entries (an array copied as it is);
//! - `claims` with, per statement, only `mainsnak`, `rank` and `id`;
//! - every other key dropped.
//!
//! Equivalence: for a line that is valid JSON, parsing the skimmed bytes gives the same [`Entity`] as
//! parsing the line (a property test checks it). When the scan meets anything it does not expect — a
//! structural error, a truncated line, a key with an escape, trailing bytes — it returns an error and the
//! caller parses the whole line the usual way, so malformed lines are reported exactly as without the skim.
//! The one difference is leniency: bytes inside dropped values are checked for structure (balanced nesting,
//! terminated strings) but not for full JSON validity (e.g. a malformed number inside a reference, or invalid
//! UTF-8 in an alias, no longer makes the line a bad line); nothing the stage reads is affected.
//!
//! [`Entity`]: crate::dump::entity::Entity

use super::cursor::{Cur, Res, SkimError};
use crate::dump::entity::Langs;

/// Comma bookkeeping for one output object or array.
struct Sep(bool);

impl Sep {
    #[inline]
    fn put(&mut self, out: &mut Vec<u8>) {
        if self.0 {
            out.push(b',');
        }
        self.0 = true;
    }
}

fn put_key(out: &mut Vec<u8>, key: &[u8]) {
    out.push(b'"');
    out.extend_from_slice(key);
    out.extend_from_slice(b"\":");
}

/// Copy the current value as it is.
fn copy_value(c: &mut Cur<'_>, out: &mut Vec<u8>) -> Res<()> {
    let (a, b) = c.value()?;
    out.extend_from_slice(&c.s[a..b]);
    Ok(())
}

/// Keys in `keys`.
fn any_of<'k>(keys: &'k [&'k [u8]]) -> impl Fn(&[u8]) -> bool + 'k {
    move |k| keys.contains(&k)
}

/// Copy the members of an object whose key `keep` accepts (a non-object is copied as it is); `inner` may handle
/// a kept member's value itself (returning `Some`), else the value is copied as it is.
fn object_with(
    c: &mut Cur<'_>,
    out: &mut Vec<u8>,
    keep: impl Fn(&[u8]) -> bool,
    mut inner: impl FnMut(&[u8], &mut Cur<'_>, &mut Vec<u8>) -> Option<Res<()>>,
) -> Res<()> {
    if c.peek() != Some(b'{') {
        return copy_value(c, out);
    }
    out.push(b'{');
    let mut sep = Sep(false);
    c.members(|c, k| {
        if keep(k) {
            sep.put(out);
            put_key(out, k);
            if let Some(r) = inner(k, c, out) {
                return r;
            }
            copy_value(c, out)
        } else {
            c.value().map(drop)
        }
    })?;
    out.push(b'}');
    Ok(())
}

/// Copy an array element by element, each by `each` (a non-array is copied as it is).
fn array_with(
    c: &mut Cur<'_>,
    out: &mut Vec<u8>,
    mut each: impl FnMut(&mut Cur<'_>, &mut Vec<u8>) -> Res<()>,
) -> Res<()> {
    if c.peek() != Some(b'[') {
        return copy_value(c, out);
    }
    out.push(b'[');
    let mut sep = Sep(false);
    c.elements(|c| {
        sep.put(out);
        each(c, out)
    })?;
    out.push(b']');
    Ok(())
}

/// A main snak: `snaktype`, `datatype`, and of `datavalue` its `type` and, of its `value`, only the entity
/// keys (`entity-type`, `numeric-id`, `id`): the parser reads nothing else, and strings, times, quantities and
/// coordinates (most main snaks of a real dump) shrink to `{}` or `0`, which it reads the same way.
fn mainsnak(c: &mut Cur<'_>, out: &mut Vec<u8>) -> Res<()> {
    object_with(
        c,
        out,
        any_of(&[b"snaktype", b"datatype", b"datavalue"]),
        |k, c, out| {
            (k == b"datavalue").then(|| {
                object_with(c, out, any_of(&[b"type", b"value"]), |k, c, out| {
                    (k == b"value").then(|| match c.peek() {
                        Some(b'{') => object_with(
                            c,
                            out,
                            any_of(&[b"entity-type", b"numeric-id", b"id"]),
                            |_, _, _| None,
                        ),
                        Some(b'"' | b'[') | Some(b'0'..=b'9' | b'-' | b't' | b'f') => {
                            c.value()?;
                            out.push(b'0');
                            Ok(())
                        }
                        _ => copy_value(c, out),
                    })
                })
            })
        },
    )
}

/// Write the skimmed form of `line` (one trimmed entity line, starting with `{`) into `out` (cleared first).
pub fn skim(line: &[u8], langs: &Langs, out: &mut Vec<u8>) -> Result<(), SkimError> {
    out.clear();
    let mut c = Cur { s: line, i: 0 };
    let keep_lang = |k: &[u8]| k == b"mul" || langs.langs.iter().any(|l| l.as_bytes() == k);
    out.push(b'{');
    let mut top = Sep(false);
    c.members(|c, key| {
        match key {
            b"type" | b"id" | b"datatype" | b"lastrevid" | b"modified" => {
                top.put(out);
                put_key(out, key);
                copy_value(c, out)?;
            }
            b"labels" | b"descriptions" => {
                top.put(out);
                put_key(out, key);
                object_with(c, out, keep_lang, |_, _, _| None)?;
            }
            b"sitelinks" => {
                top.put(out);
                if c.peek() != Some(b'{') {
                    put_key(out, key);
                    return copy_value(c, out);
                }
                let mut n = 0u64;
                c.members(|c, _| {
                    n += 1;
                    c.value().map(drop)
                })?;
                put_key(out, b"sitelinks#");
                out.extend_from_slice(n.to_string().as_bytes());
            }
            b"claims" => {
                top.put(out);
                put_key(out, key);
                // Every property, each an array of statements.
                object_with(
                    c,
                    out,
                    |_| true,
                    |_, c, out| {
                        Some(array_with(c, out, |c, out| {
                            object_with(
                                c,
                                out,
                                any_of(&[b"mainsnak", b"rank", b"id"]),
                                |k, c, out| (k == b"mainsnak").then(|| mainsnak(c, out)),
                            )
                        }))
                    },
                )?;
            }
            _ => {
                c.value()?;
            }
        }
        Ok(())
    })?;
    if c.peek().is_some() {
        return c.err("bytes after the entity object");
    }
    out.push(b'}');
    Ok(())
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::dump::entity::trim_line;
    use crate::dump::line::cursor::*;
    use crate::dump::line::serde::parse_entity;

    pub(in crate::dump) fn langs() -> Langs {
        Langs {
            langs: vec!["en".into(), "ko".into()],
        }
    }

    fn sk(s: &str) -> Result<String, SkimError> {
        let mut out = Vec::new();
        skim(s.as_bytes(), &langs(), &mut out).map(|()| String::from_utf8(out).unwrap())
    }

    #[test]
    fn keeps_what_the_parser_reads_in_input_order() {
        let line = r#"{ "type" : "item", "id":"Q1","labels":{"fr":{"language":"fr","value":"un"},"en":{"language":"en","value":"one \"1\" \\"},"mul":{"language":"mul","value":"One"}},"aliases":{"en":[{"language":"en","value":"uno"}]},"claims":{"P31":[{"mainsnak":{"snaktype":"value","property":"P31","datavalue":{"value":{"entity-type":"item","id":"Q5"},"type":"wikibase-entityid"}},"type":"statement","qualifiers":{"P580":[{"x":"]}"}]},"id":"Q1$a","rank":"normal","references":[{"hash":"h","snaks":{}}]}],"P18":[],"P569":[{"mainsnak":{"snaktype":"value","property":"P569","datavalue":{"value":{"time":"+1952-03-11T00:00:00Z","precision":11},"type":"time"},"datatype":"time"},"rank":"normal"}],"P373":[{"mainsnak":{"datatype":"string","datavalue":{"type":"string","value":"Douglas"}}}]},"sitelinks":{"enwiki":{"site":"enwiki","title":"A {","badges":[]},"frwiki":{"site":"frwiki","title":"B","badges":["Q1"]}},"lastrevid":42,"modified":"2024-01-01T00:00:00Z","descriptions":[]}"#;
        assert_eq!(
            sk(line).unwrap(),
            r#"{"type":"item","id":"Q1","labels":{"en":{"language":"en","value":"one \"1\" \\"},"mul":{"language":"mul","value":"One"}},"claims":{"P31":[{"mainsnak":{"snaktype":"value","datavalue":{"value":{"entity-type":"item","id":"Q5"},"type":"wikibase-entityid"}},"id":"Q1$a","rank":"normal"}],"P18":[],"P569":[{"mainsnak":{"snaktype":"value","datavalue":{"value":{},"type":"time"},"datatype":"time"},"rank":"normal"}],"P373":[{"mainsnak":{"datatype":"string","datavalue":{"type":"string","value":0}}}]},"sitelinks#":2,"lastrevid":42,"modified":"2024-01-01T00:00:00Z","descriptions":[]}"#
        );
    }

    #[test]
    fn arrays_and_empty_objects_are_copied_as_they_are() {
        assert_eq!(
            sk(r#"{"labels":[],"claims":[],"sitelinks":[]}"#).unwrap(),
            r#"{"labels":[],"claims":[],"sitelinks":[]}"#
        );
        assert_eq!(
            sk(r#"{"sitelinks":{},"claims":{}}"#).unwrap(),
            r#"{"sitelinks#":0,"claims":{}}"#
        );
        assert_eq!(sk("{}").unwrap(), "{}");
    }

    #[test]
    fn refuses_what_it_does_not_expect() {
        for (line, what) in [
            (
                r#"{"type":"item","claims":{"P1":[{"a":"b"}"#,
                "expected `,` or `]`",
            ),
            (
                r#"{"type":"item","aliases":{"en":[1,2"#,
                "unterminated object or array",
            ),
            (r#"{"type":"it"#, "unterminated string"),
            (r#"{"ty\u0070e":"item"}"#, "key with an escape"),
            (r#"{"type":"item"} x"#, "bytes after the entity object"),
            (r#"{"type":"item",}"#, "expected a key"),
            (r#"{"type" "item"}"#, "expected `:`"),
            (r#"{"type":}"#, "expected a value"),
            ("[", "expected an object"),
            ("", "expected an object"),
        ] {
            assert_eq!(sk(line).unwrap_err().what, what, "{line}");
        }
    }

    /// Parse `line` the way `extract::handle_line` does: skimmed when the skim accepts it, else whole.
    /// Returns (whole-line parse, skim-path parse) as Debug strings of the owned results.
    fn both(line: &[u8], langs: &Langs) -> (String, String, bool) {
        let mut buffers = simd_json::Buffers::new(1024);
        let mut whole = line.to_vec();
        let a = format!("{:?}", parse_entity(&mut whole, langs, &mut buffers));
        let mut out = Vec::new();
        let skimmed = skim(line, langs, &mut out).is_ok();
        if !skimmed {
            out = line.to_vec();
        }
        let b = format!("{:?}", parse_entity(&mut out, langs, &mut buffers));
        (a, b, skimmed)
    }

    pub(in crate::dump) fn eight() -> Langs {
        Langs {
            langs: ["en", "fr", "de", "es", "it", "pt", "ko", "ja"]
                .iter()
                .map(|s| s.to_string())
                .collect(),
        }
    }

    pub(in crate::dump) fn lines(bytes: &[u8]) -> Vec<&[u8]> {
        bytes
            .split(|&b| b == b'\n')
            .map(|l| {
                let (a, b) = trim_line(l);
                &l[a..b]
            })
            .filter(|l| l.first() == Some(&b'{'))
            .collect()
    }

    /// The skimmed line parses to the same entity as the whole line, on generated lines of every shape the
    /// generator writes (legacy 2015 serialisation, `mul`, lexemes, properties, long lines).
    #[test]
    fn skimmed_lines_parse_like_whole_lines_on_generated_dumps() {
        for seed in [1, 2, 3] {
            let cfg = crate::synth::Config {
                entities: 1500,
                seed,
                legacy_share: 0.3,
                ..crate::synth::Config::default()
            };
            let mut bytes = Vec::new();
            crate::synth::generate(&cfg, 2, &mut bytes).unwrap();
            let ls = lines(&bytes);
            assert!(ls.len() > 1000);
            let (mut kept, mut total) = (0usize, 0usize);
            for l in ls {
                let (a, b, skimmed) = both(l, &eight());
                assert!(skimmed, "{}", String::from_utf8_lossy(l));
                assert_eq!(a, b, "{}", String::from_utf8_lossy(l));
                let mut out = Vec::new();
                skim(l, &eight(), &mut out).unwrap();
                kept += out.len();
                total += l.len();
            }
            // The point of the skim: most bytes never reach simd-json.
            assert!(kept * 2 < total, "kept {kept} of {total} bytes");
        }
    }

    /// One mutation of a line for the proptests: 0 truncates at `cut`, 1 overwrites the byte at `at`, 2 inserts
    /// `byte` there, anything else splices `insert` in there (`at` and `cut` are fractions of the length).
    pub(in crate::dump) fn mutate(
        l: &mut Vec<u8>,
        op: u8,
        at: f64,
        cut: f64,
        byte: u8,
        insert: &[u8],
    ) {
        let i = ((l.len() as f64) * at) as usize;
        match op {
            0 => l.truncate(((l.len() as f64) * cut) as usize),
            1 => {
                if i < l.len() {
                    l[i] = byte
                }
            }
            2 => l.insert(i.min(l.len()), byte),
            _ => {
                let i = i.min(l.len());
                l.splice(i..i, insert.iter().copied());
            }
        }
    }

    /// A generated line (40 entities, a 0.3 legacy share, one of 50 seeds) after one [`mutate`] by an op
    /// below `ops`, `insert` picked from `inserts`: the input of the proptests on damaged lines.
    pub(in crate::dump) fn mutated_lines(
        ops: u8,
        inserts: Vec<&'static [u8]>,
    ) -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        use proptest::prelude::*;
        let picks = (0u64..50, 0usize..1000, 0.0f64..1.0, 0.0f64..1.0);
        let edits = (any::<u8>(), 0u8..ops, proptest::sample::select(inserts));
        (picks, edits).prop_map(|((seed, pick, cut, at), (byte, op, insert))| {
            let ls = synth_lines(40, seed, 0.3);
            let mut l = ls[pick % ls.len()].clone();
            mutate(&mut l, op, at, cut, byte, insert);
            l
        })
    }

    pub(in crate::dump) fn synth_lines(
        entities: u64,
        seed: u64,
        legacy_share: f64,
    ) -> Vec<Vec<u8>> {
        let cfg = crate::synth::Config {
            entities,
            seed,
            legacy_share,
            ..crate::synth::Config::default()
        };
        let mut bytes = Vec::new();
        crate::synth::generate(&cfg, 2, &mut bytes).unwrap();
        lines(&bytes).into_iter().map(<[u8]>::to_vec).collect()
    }

    /// Every entity line of the real fixtures under `root` (`SWORD_REAL_FIXTURES`), per file: dump lines as
    /// they are, API files (`{"entities":{"Q42":{...}}}`, pretty-printed) as one compact line per entity.
    pub(in crate::dump) fn real_fixture_lines(
        root: &std::path::Path,
    ) -> Vec<(std::path::PathBuf, Vec<Vec<u8>>)> {
        let mut files = vec![];
        for dir in ["dumps", "entities", "generated"] {
            for e in std::fs::read_dir(root.join(dir)).unwrap() {
                let path = e.unwrap().path();
                if path.is_file() && path.extension().is_some_and(|x| x != "md") {
                    files.push(path);
                }
            }
        }
        files.sort();
        let mut all = vec![];
        for f in files {
            let raw = std::fs::read(&f).unwrap();
            let bytes = match raw.get(..2) {
                Some([0x1f, 0x8b]) => {
                    let mut v = Vec::new();
                    std::io::Read::read_to_end(
                        &mut flate2::read::MultiGzDecoder::new(&raw[..]),
                        &mut v,
                    )
                    .unwrap();
                    v
                }
                Some([b'B', b'Z']) => {
                    let mut v = Vec::new();
                    std::io::Read::read_to_end(
                        &mut bzip2::read::MultiBzDecoder::new(&raw[..]),
                        &mut v,
                    )
                    .unwrap();
                    v
                }
                _ => raw,
            };
            // API files (`{"entities":{"Q42":{...}}}`, pretty-printed) become one compact line per entity.
            let mut api_lines = Vec::new();
            if f.parent().is_some_and(|d| d.ends_with("entities")) {
                let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
                let entities = v.get("entities").and_then(|e| e.as_object()).cloned();
                match entities {
                    Some(map) => {
                        api_lines.extend(map.values().map(|e| serde_json::to_vec(e).unwrap()))
                    }
                    None => api_lines.push(serde_json::to_vec(&v).unwrap()),
                }
            }
            let ls: Vec<Vec<u8>> = if api_lines.is_empty() {
                lines(&bytes).into_iter().map(<[u8]>::to_vec).collect()
            } else {
                api_lines
            };
            all.push((f, ls));
        }
        all
    }

    /// The same on every real fixture line (`SWORD_REAL_FIXTURES`), and with other language sets.
    #[test]
    fn skimmed_lines_parse_like_whole_lines_on_real_fixtures() {
        let Ok(root) = std::env::var("SWORD_REAL_FIXTURES") else {
            return;
        };
        let (mut n, mut accepted) = (0, 0);
        for (f, ls) in real_fixture_lines(std::path::Path::new(&root)) {
            for l in &ls {
                for langs in [eight(), langs()] {
                    let (a, b, skimmed) = both(l, &langs);
                    accepted += usize::from(skimmed);
                    assert_eq!(
                        a,
                        b,
                        "{}: {}",
                        f.display(),
                        String::from_utf8_lossy(&l[..l.len().min(200)])
                    );
                }
                n += 1;
            }
        }
        assert!(n > 1000, "{n} lines");
        // Only the malformed mock lines take the whole-line path.
        assert!(accepted + 20 >= 2 * n, "skimmed {accepted} of {}", 2 * n);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]
        /// Cut, flipped or inserted bytes: never a panic; whenever the whole line still parses, the skim path
        /// gives the same entity (or falls back to the whole line).
        #[test]
        fn mutated_lines_never_panic_and_valid_ones_agree(
            // Ops 0..3: cut, overwrite or insert a byte (nothing is spliced in).
            l in mutated_lines(3, vec![&b""[..]]),
        ) {
            let (a, b, _) = both(&l, &eight());
            if a.starts_with("Ok(") {
                proptest::prop_assert_eq!(a, b);
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        /// The block scanner finds the same end as the byte-by-byte scan, on strings over the bytes that
        /// matter (quotes, backslashes, brackets) of lengths that cross several 64-byte blocks.
        #[test]
        fn block_scan_equals_byte_scan(
            body in proptest::collection::vec(proptest::sample::select(b"{}[]\"\\\\ax".to_vec()), 0..400),
            open in proptest::sample::select(b"{[".to_vec()),
        ) {
            let mut line = vec![open];
            line.extend_from_slice(&body);
            let mut a = Cur { s: &line, i: 0 };
            let fast = a.nested().ok().map(|()| a.i);
            let mut b = Cur { s: &line, i: 0 };
            let slow = b.nested_scalar().ok().map(|()| b.i);
            proptest::prop_assert_eq!(fast, slow);
            // The SSE2 masks too, whatever the CPU the tests run on, and every wider kind the CPU has.
            proptest::prop_assert_eq!(skip_nested_with(&line, 0, block_masks), slow);
            proptest::prop_assert_eq!(every_width(&line), vec![slow; every_width(&line).len()]);
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        /// The same on lines of long runs without brackets (whole 64-byte blocks of string bytes, quotes and
        /// backslashes, as in the long strings of a reference), with a bracket now and then.
        #[test]
        fn block_scan_equals_byte_scan_over_bracket_free_blocks(
            pieces in proptest::collection::vec(proptest::sample::select(vec![
                "a".repeat(70), format!("\"{}\"", "b".repeat(80)), format!("\"{}", "c".repeat(65)),
                "\\\"".to_string(), "\\\\".to_string(), "\\".to_string(), "\"".to_string(),
                "{".to_string(), "}".to_string(), "[".to_string(), "]".to_string(),
            ]), 0..40),
            open in proptest::sample::select(b"{[".to_vec()),
        ) {
            let mut line = vec![open];
            line.extend(pieces.concat().bytes());
            let mut a = Cur { s: &line, i: 0 };
            let fast = a.nested().ok().map(|()| a.i);
            let mut b = Cur { s: &line, i: 0 };
            let slow = b.nested_scalar().ok().map(|()| b.i);
            proptest::prop_assert_eq!(fast, slow);
            proptest::prop_assert_eq!(skip_nested_with(&line, 0, block_masks), slow);
            proptest::prop_assert_eq!(every_width(&line), vec![slow; every_width(&line).len()]);
        }
    }

    /// The AVX2 and AVX-512 scanners' ends of the object at the start of `line`, those the CPU runs.
    fn every_width(line: &[u8]) -> Vec<Option<usize>> {
        let mut v = Vec::new();
        #[cfg(target_arch = "x86_64")]
        {
            use super::super::cursor::{skip_nested_avx2, skip_nested_avx512};
            let popcnt = std::is_x86_feature_detected!("popcnt");
            if popcnt && std::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU has AVX2 and POPCNT (checked just above).
                v.push(unsafe { skip_nested_avx2(line, 0) });
            }
            if popcnt && std::is_x86_feature_detected!("avx512bw") {
                // SAFETY: the CPU has AVX-512BW and POPCNT (checked just above).
                v.push(unsafe { skip_nested_avx512(line, 0) });
            }
        }
        v
    }

    #[test]
    fn escaped_quotes_and_backslashes_inside_dropped_values() {
        let line = r#"{"aliases":{"en":[{"value":"a \" ] } \\"},{"value":"\\\"{"}]},"id":"Q2"}"#;
        assert_eq!(sk(line).unwrap(), r#"{"id":"Q2"}"#);
        // A backslash right before the end of the line cannot run past it.
        assert!(sk(r#"{"id":"Q2\"#).is_err());
    }
}
