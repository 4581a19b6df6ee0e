//! The nightly never promotes a worse run: `OUT/latest` moves only to a complete run whose counts
//! pass the sanity check against the run it points to; a refused promotion exits 7 and says why; bad dumps
//! fail their stage and leave `latest` alone; retention never removes the run `latest` points to nor the
//! newest complete run. docs/nightly-safety.md describes the rule.

use crate::util::{pipeline_nightly, Workdir};
use std::process::Output;

/// `pipeline/nightly nightly ARGS`.
fn nightly(wd: &Workdir, args: &[&str]) -> Output {
    let mut all = vec!["nightly"];
    all.extend_from_slice(args);
    pipeline_nightly(wd, &all)
}

fn log(o: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn latest(wd: &Workdir) -> String {
    std::fs::read_link(wd.join("out/latest"))
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

/// The artifacts of a finished run, with their bytes.
fn files_of(wd: &Workdir, run: &str) -> Vec<(String, Vec<u8>)> {
    [
        "extract.manifest.json",
        "export.manifest.json",
        "entities.parquet",
        "triples.parquet",
        "walks.bin",
        "embeddings.npy",
        "distortions.parquet",
        "sword.parquet",
        "report/report.md",
    ]
    .iter()
    .map(|n| (n.to_string(), wd.read(&format!("out/{run}/{n}"))))
    .collect()
}

#[test]
fn nightly_keeps_latest_on_the_good_run_and_exits_non_zero_for_worse_or_bad_dumps() {
    let wd = Workdir::new();
    std::fs::create_dir_all(wd.join("dumps")).unwrap();
    let synth = |n: &str, name: &str| {
        wd.run_ok(&["synth", "--entities", n, "--seed", "4", "--out", name]);
        wd.join(name).to_string_lossy().into_owned()
    };
    let dump = |p: &str| format!("DUMP={p}");

    // A good run: promoted.
    let good = synth("1500", "dumps/wikidata-20240101-all.json.gz");
    let o = nightly(&wd, &[&dump(&good), "KEEP=1"]);
    assert!(o.status.success(), "{}", log(&o));
    assert_eq!(latest(&wd), "20240101");
    let good_files = files_of(&wd, "20240101");

    // A much smaller dump (a fifth of the entities): every stage succeeds, the promotion is refused (exit 7),
    // the summary says why, and the good run keeps every file (KEEP=1 would have removed it).
    let small = synth("300", "dumps/wikidata-20240102-all.json.gz");
    let o = nightly(&wd, &[&dump(&small), "KEEP=1"]);
    assert_eq!(o.status.code(), Some(7), "{}", log(&o));
    assert_eq!(latest(&wd), "20240101");
    let summary = String::from_utf8(wd.read("out/20240102/logs/summary.txt")).unwrap();
    assert!(
        summary.contains("promotion REFUSED") && summary.contains("labelled entities"),
        "{summary}"
    );
    assert!(log(&o).contains("retention: keeping"), "{}", log(&o));
    assert_eq!(files_of(&wd, "20240101"), good_files);

    // A dump cut short, an HTML page: extract refuses them (exit 2), latest stays.
    let bytes = std::fs::read(&good).unwrap();
    let cut = wd.write(
        "dumps/wikidata-20240103-all.json.gz",
        &bytes[..bytes.len() / 2],
    );
    let o = nightly(&wd, &[&dump(&cut.to_string_lossy()), "KEEP=1"]);
    assert_eq!(o.status.code(), Some(2), "{}", log(&o));
    assert!(log(&o).contains("ends early"), "{}", log(&o));
    let page = wd.write(
        "dumps/wikidata-20240104-all.json.gz",
        "<html><body>503 Service Unavailable</body></html>\n",
    );
    let o = nightly(&wd, &[&dump(&page.to_string_lossy()), "KEEP=1"]);
    assert_eq!(o.status.code(), Some(2), "{}", log(&o));
    assert!(!wd.join("out/20240104/entities.parquet").exists());
    assert_eq!(latest(&wd), "20240101");
    assert_eq!(files_of(&wd, "20240101"), good_files);

    // A lower bound lets the smaller run through (configurable), and so does FORCE=1.
    let o = nightly(&wd, &[&dump(&small), "KEEP=1", "MIN_RATIO=0.01"]);
    assert!(o.status.success(), "{}", log(&o));
    assert_eq!(latest(&wd), "20240102");
    let o = nightly(&wd, &[&dump(&good), "KEEP=1", "FORCE=1"]);
    assert!(o.status.success(), "{}", log(&o));
    assert_eq!(latest(&wd), "20240101");
    // Retention (KEEP=1): 20240104 (failed) stays as the newest dated run, 20240101 as the run latest points
    // to, 20240102 as the newest complete run; 20240103 (refused, incomplete) goes.
    assert!(wd.join("out/20240101/sword.parquet").exists());
    assert!(
        wd.join("out/20240102/sword.parquet").exists(),
        "{}",
        log(&o)
    );
    assert!(wd.join("out/20240104").exists());
    assert!(!wd.join("out/20240103").exists(), "{}", log(&o));
}
