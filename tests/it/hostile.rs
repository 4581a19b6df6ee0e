//! Hostile input to the extract stage (the join's part): a crafted `modified`, floods of junk lines,
//! out-of-range settings and crafted entity types. Every dump is generated here, small; the expectations are
//! written by hand. The readers' memory bounds (bombs of each shape) are tested beside the readers.

use crate::util::Workdir;
use std::path::Path;

fn manifest(dir: &Path) -> serde_json::Value {
    crate::util::manifest(dir, "extract")
}

/// An item labelled in `en` and `fr` with one statement `P1 → Q(id+1)`, and `extra` spliced into its object.
fn item(id: u64, extra: &str) -> String {
    format!(
        r#"{{"type":"item","id":"Q{id}","labels":{{"en":{{"language":"en","value":"e{id}"}},"fr":{{"language":"fr","value":"f{id}"}}}},"claims":{{"P1":[{{"mainsnak":{{"snaktype":"value","property":"P1","datavalue":{{"value":{{"entity-type":"item","numeric-id":{o}}},"type":"wikibase-entityid"}},"datatype":"wikibase-item"}},"type":"statement","id":"Q{id}$x","rank":"normal"}}]}}{extra}}}"#,
        o = id + 1
    )
}

fn property() -> String {
    r#"{"type":"property","id":"P1","datatype":"wikibase-item","labels":{"en":{"language":"en","value":"p"},"fr":{"language":"fr","value":"p"}}}"#.to_string()
}

/// `[`, the lines (each followed by `,` but the last), `]`.
fn dump(lines: &[String]) -> String {
    let mut s = String::from("[\n");
    for (i, l) in lines.iter().enumerate() {
        s.push_str(l);
        s.push_str(if i + 1 < lines.len() { ",\n" } else { "\n" });
    }
    s.push_str("]\n");
    s
}

const LANGS: [&str; 4] = ["--languages", "en,fr", "--mul-fallback", ""];

fn extract(wd: &Workdir, dump: &str, out: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["extract", "--dump", dump, "--out", out];
    args.extend_from_slice(&LANGS);
    args.extend_from_slice(extra);
    wd.command(&args).output().unwrap()
}

#[test]
fn a_crafted_modified_neither_panics_nor_sets_the_dump_date() {
    let wd = Workdir::new();
    // No date in the file name, so the dump date comes from the latest valid `modified`.
    let huge = format!(r#","modified":"9999999999{}""#, "9".repeat(1 << 20));
    let lines = [
        item(1, r#","modified":"999999999é""#),
        item(2, &huge),
        item(3, r#","modified":"9999-12-31T23:59:59Z""#),
        item(4, r#","modified":"2024-02-30T25:00:00Z""#),
        item(5, r#","modified":"2024-05-06T07:08:09Z""#),
        item(6, r#","modified":12"#),
        property(),
    ];
    wd.write("latest.json", dump(&lines));
    let o = extract(&wd, "latest.json", "out", &[]);
    assert!(
        o.status.success(),
        "{:?}: {}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    let m = manifest(&wd.join("out"));
    assert_eq!(m["extra"]["dump_date"], "2024-05-06");
    assert_eq!(m["extra"]["max_modified"], "2024-05-06T07:08:09Z");
    // Four strings that are no timestamp (2024-02-30T25:…: hour 25); 12 is no string at all, so no `modified`.
    assert_eq!(m["counts"]["modified_invalid"], 4, "{}", m["counts"]);
    let size = std::fs::metadata(wd.join("out/extract.manifest.json"))
        .unwrap()
        .len();
    assert!(size < 64 << 10, "manifest of {size} bytes");
    let (_, ents) = sword::store::tables::read_entities(&wd.join("out/entities.parquet")).unwrap();
    let modified: Vec<Option<&str>> = ents.iter().map(|e| e.modified.as_deref()).collect();
    assert_eq!(
        modified,
        [
            None,
            None,
            None,
            None,
            Some("2024-05-06T07:08:09Z"),
            None,
            None
        ]
    );

    // Only crafted ones: no dump date at all (rather than 9999999999).
    wd.write("crafted.json", dump(&[item(1, &huge), property()]));
    let o = extract(&wd, "crafted.json", "out2", &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let m = manifest(&wd.join("out2"));
    assert!(m["extra"]["dump_date"].is_null(), "{}", m["extra"]);
    assert!(m["extra"]["max_modified"].is_null());
}

/// Three good entities, then `n` junk lines.
fn junk_dump(n: usize) -> String {
    let mut s = dump(&[item(1, ""), item(2, ""), property()]);
    s.truncate(s.len() - 2); // drop "]\n"
    s.push_str(&"x\n".repeat(n));
    s.push_str("]\n");
    s
}

#[test]
fn junk_lines_are_counted_but_only_the_first_are_kept_and_the_limit_names_the_crossing_line() {
    let wd = Workdir::new();
    wd.write("junk.json", junk_dump(200_000));
    // All accepted: every line counted, ten shown, whatever the chunking and the threads.
    let loose = ["--max-bad-lines", "1000000", "--max-bad-share", "1"];
    let mut rejects = Vec::new();
    for (out, pre, cfg) in [
        ("a", None, None),
        ("b", Some("1"), Some("chunk_kib = 1\n")),
        ("c", Some("2"), Some("chunk_kib = 64\n")),
    ] {
        let mut extra: Vec<String> = loose.iter().map(|s| s.to_string()).collect();
        if let Some(c) = cfg {
            let p = wd.write(&format!("{out}.toml"), c);
            extra.extend(["--config".into(), p.to_string_lossy().into_owned()]);
        }
        let mut args: Vec<String> = Vec::new();
        if let Some(j) = pre {
            args.extend(["-j".into(), j.into()]);
        }
        args.extend(
            ["extract", "--dump", "junk.json", "--out", out]
                .iter()
                .map(|s| s.to_string()),
        );
        args.extend(LANGS.iter().map(|s| s.to_string()));
        args.extend(extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        wd.run_ok(&args);
        let m = manifest(&wd.join(out));
        let bad = m["extra"]["bad_lines"].as_array().unwrap().clone();
        assert_eq!(bad.len(), 10, "{out}");
        // The first junk line is line 5 (`[`, three entities), at byte offset len("[\n") + three lines.
        assert_eq!(bad[0]["line"], 5, "{out}");
        assert_eq!(bad[9]["line"], 14, "{out}");
        let r: u64 = m["rejects"]
            .as_object()
            .unwrap()
            .iter()
            .filter(|(k, _)| k.starts_with("bad_line_"))
            .map(|(_, v)| v.as_u64().unwrap())
            .sum();
        assert_eq!(r, 200_000, "{out}: {}", m["rejects"]);
        rejects.push(m["rejects"].clone());
        assert_eq!(m["counts"]["labelled_entities"], 3);
    }
    assert!(rejects.windows(2).all(|w| w[0] == w[1]), "{rejects:?}");

    // A limit below the chunk's kept examples: the message names the crossing line exactly (the sixth junk
    // line is line 10).
    let o = extract(&wd, "junk.json", "d", &["--max-bad-lines", "5"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("line 10,"), "{err}");
    assert!(err.contains("more than 5 malformed lines"), "{err}");
    assert!(!wd.join("d/triples.parquet").exists());
    // A limit past what one chunk keeps: still refused, with the count, no artifact.
    let o = extract(
        &wd,
        "junk.json",
        "e",
        &["--max-bad-lines", "5000", "--max-bad-share", "1"],
    );
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("more than 5000 malformed lines"), "{err}");
    assert!(!wd.join("e/triples.parquet").exists());
}

#[test]
fn junk_lines_across_shards_join_to_the_unsharded_counts() {
    let wd = Workdir::new();
    wd.write("junk.json", junk_dump(30_000));
    let loose = ["--max-bad-lines", "100000", "--max-bad-share", "1"];
    let o = extract(&wd, "junk.json", "whole", &loose);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for i in 0..3 {
        let spec = format!("{i}/3");
        let mut extra = loose.to_vec();
        extra.extend(["--shard", spec.as_str()]);
        let o = extract(&wd, "junk.json", "sharded", &extra);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let mut extra = loose.to_vec();
    extra.extend(["--join-shards", "3"]);
    let o = extract(&wd, "junk.json", "sharded", &extra);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (a, b) = (manifest(&wd.join("whole")), manifest(&wd.join("sharded")));
    assert_eq!(a["rejects"], b["rejects"]);
    assert_eq!(a["extra"]["bad_lines"], b["extra"]["bad_lines"]);
    assert_eq!(
        a["rejects"]["bad_line_not_object"], 30_000,
        "{}",
        a["rejects"]
    );
    for f in ["entities.parquet", "triples.parquet", "statements.parquet"] {
        assert_eq!(
            wd.read(&format!("whole/{f}")),
            wd.read(&format!("sharded/{f}"))
        );
    }
}

#[test]
fn out_of_range_line_and_chunk_sizes_are_refused_before_reading() {
    let wd = Workdir::new();
    wd.write("d.json", dump(&[item(1, ""), property()]));
    // 2^44 MiB is 2^64 bytes: shifted into bytes it would wrap to 0.
    for (mib, needle) in [
        ("17592186044416", "outside 1..=65536"),
        ("0", "outside 1..=65536"),
        ("65537", "outside 1..=65536"),
    ] {
        let o = extract(&wd, "d.json", "out", &["--max-line-mib", mib]);
        assert_eq!(o.status.code(), Some(2), "{mib}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains(needle) && err.contains("max_line_mib"),
            "{err}"
        );
        assert!(!wd.join("out/entities.parquet").exists());
    }
    let c = wd.write("c.toml", "[extract]\nchunk_kib = 18014398509481984\n");
    let c = c.to_string_lossy().into_owned();
    let o = extract(&wd, "d.json", "out", &["--config", &c]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("chunk_kib"), "{err}");
    // The largest accepted value still runs.
    let o = extract(&wd, "d.json", "out", &["--max-line-mib", "65536"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn crafted_entity_types_list_at_most_32_names_whatever_the_chunking() {
    let wd = Workdir::new();
    let mut lines = vec![item(1, ""), property()];
    // 100 types, in descending order so that the smallest come last; one overlong and one with a quote.
    for t in (0..100).rev() {
        lines.push(format!(r#"{{"type":"t{t:03}","id":"X{t}"}}"#));
    }
    lines.push(format!(r#"{{"type":"{}","id":"X"}}"#, "y".repeat(5000)));
    lines.push(r#"{"type":"a\"b","id":"X"}"#.to_string());
    wd.write("types.json", dump(&lines));
    let c = wd.write("c.toml", "[extract]\nchunk_kib = 1\n");
    let c = c.to_string_lossy().into_owned();
    let mut seen = Vec::new();
    for (out, extra) in [("a", vec![]), ("b", vec!["--config", c.as_str()])] {
        let o = extract(&wd, "types.json", out, &extra);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let m = manifest(&wd.join(out));
        let counts = m["counts"].as_object().unwrap();
        let listed: Vec<&String> = counts
            .keys()
            .filter(|k| k.starts_with("entities_other_t"))
            .collect();
        let want: Vec<String> = (0..32).map(|t| format!("entities_other_t{t:03}")).collect();
        assert_eq!(listed, want.iter().collect::<Vec<_>>(), "{out}");
        assert_eq!(counts["entities_other_unlisted"], 70, "{out}");
        assert_eq!(counts["entities_other"], 102, "{out}");
        seen.push(m["counts"].clone());
    }
    assert_eq!(seen[0], seen[1]);
}
