use crate::util::Workdir;

#[test]
fn help_lists_every_stage() {
    let wd = Workdir::new();
    let out = wd.run_ok(&["--help"]);
    let text = String::from_utf8_lossy(&out.stdout);
    for cmd in [
        "extract",
        "synth",
        "graph",
        "walks",
        "train",
        "embed",
        "similar",
        "distort",
        "export",
        "import-translations",
        "eval",
        "run",
    ] {
        assert!(text.contains(cmd), "--help does not mention {cmd}:\n{text}");
    }
}

#[test]
fn unknown_flag_fails_with_usage_error() {
    let wd = Workdir::new();
    let (code, err) = wd.run_err(&["extract", "--no-such-flag"]);
    assert_eq!(code, 2, "{err}");
}
