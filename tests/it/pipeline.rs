//! Integration tests for the nightly batch: `sword run`, crash safety, the Makefile, fetch-dump.sh.

use crate::util::Workdir;
use std::path::Path;
use std::process::Command;

fn script(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scripts")
        .join(name)
}

/// SHA-1 of a byte string, computed with the system `sha1sum` (an independent implementation).
fn sha1_hex(wd: &Workdir, name: &str) -> String {
    let out = Command::new("sha1sum").arg(wd.join(name)).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

#[test]
fn fetch_dump_verify_accepts_good_and_rejects_bad_checksums() {
    let wd = Workdir::new();
    wd.write("wikidata-20240911-all.json.gz", b"not really a dump\n");
    let good = sha1_hex(&wd, "wikidata-20240911-all.json.gz");
    wd.write(
        "sums.txt",
        format!("0000000000000000000000000000000000000000  other.json.gz\n{good}  wikidata-20240911-all.json.gz\n"),
    );
    let ok = Command::new("bash")
        .arg(script("fetch-dump.sh"))
        .args(["--verify"])
        .arg(wd.join("wikidata-20240911-all.json.gz"))
        .arg(wd.join("sums.txt"))
        .output()
        .unwrap();
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );

    // One flipped byte in the file: mismatch, exit 3.
    wd.write("wikidata-20240911-all.json.gz", b"not really a dumq\n");
    let bad = Command::new("bash")
        .arg(script("fetch-dump.sh"))
        .args(["--verify"])
        .arg(wd.join("wikidata-20240911-all.json.gz"))
        .arg(wd.join("sums.txt"))
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("MISMATCH"));

    // Not listed at all: exit 3 too.
    wd.write("sums.txt", format!("{good}  something-else.json.gz\n"));
    let missing = Command::new("bash")
        .arg(script("fetch-dump.sh"))
        .args(["--verify"])
        .arg(wd.join("wikidata-20240911-all.json.gz"))
        .arg(wd.join("sums.txt"))
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(3));
}

#[test]
fn fetch_dump_resumes_and_only_renames_verified_files() {
    if Command::new("curl").arg("--version").output().is_err() {
        eprintln!("curl missing: skipping");
        return;
    }
    let wd = Workdir::new();
    // A local "mirror" served through file:// so no network is involved.
    let payload: Vec<u8> = (0..200_000u32)
        .flat_map(|i| (i.wrapping_mul(2654435761)).to_le_bytes())
        .collect();
    wd.write("srv/20240911/wikidata-20240911-all.json.gz", &payload);
    let sha = sha1_hex(&wd, "srv/20240911/wikidata-20240911-all.json.gz");
    wd.write(
        "srv/20240911/wikidata-20240911-sha1sums.txt",
        format!("{sha}  wikidata-20240911-all.json.gz\n"),
    );
    // A partial earlier download to resume from.
    wd.write(
        "dest/wikidata-20240911-all.json.gz.part",
        &payload[..300_000],
    );
    let base = format!("file://{}", wd.join("srv").display());
    let run = |dest: &str| {
        Command::new("bash")
            .arg(script("fetch-dump.sh"))
            .args(["--base", &base, "--date", "20240911", "--dest"])
            .arg(wd.join(dest))
            .output()
            .unwrap()
    };
    let out = run("dest");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(wd.read("dest/wikidata-20240911-all.json.gz"), payload);
    assert!(!wd.join("dest/wikidata-20240911-all.json.gz.part").exists());

    // A corrupt partial download (wrong first bytes) resumes into a file that fails verification: it stays
    // `.part`, the final name never appears, exit 3.
    let mut wrong = payload[..300_000].to_vec();
    wrong[10] ^= 0xff;
    wd.write("dest2/wikidata-20240911-all.json.gz.part", &wrong);
    let out = run("dest2");
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!wd.join("dest2/wikidata-20240911-all.json.gz").exists());
}
