//! Every command in README.md and docs/*.md names things that exist: the fenced `sh` blocks are read as shell,
//! and for each command
//! - every `scripts/…`, `pipeline/…` and `data/golden|eval/…` path is a file or directory of the repository;
//! - `sword [global flags] SUB [SUB …] --flag …` (also `cargo run … -- SUB …`) names subcommands the binary has
//!   and flags its `--help` lists, asked of the built binary itself (so clap's definition is the oracle);
//! - `make -f pipeline/Makefile TARGET` names a target the Makefile defines;
//! - `cargo bench --bench NAME` names a file in benches/;
//! - every block parses as shell (`bash -n`).
//!
//! The pages are read at test time, so pages added later are checked too.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const REPO: &str = env!("CARGO_MANIFEST_DIR");
const SWORD: &str = env!("CARGO_BIN_EXE_sword");

/// Commands a branch under development documents before its code lands: reported on stderr, not failed.
/// Empty on main: every documented command must exist.
const PENDING: &[&str] = &[];

/// Path prefixes that name files of the repository (generated places such as data/out are not checked).
const REPO_PREFIXES: &[&str] = &[
    "scripts/",
    "pipeline/",
    "data/golden/",
    "data/eval/",
    "benches/",
    "src/",
    "tests/",
];

/// The pages: README.md and every docs/*.md, sorted.
fn pages() -> Vec<PathBuf> {
    let mut v = vec![Path::new(REPO).join("README.md")];
    if let Ok(dir) = std::fs::read_dir(Path::new(REPO).join("docs")) {
        let mut docs: Vec<PathBuf> = dir
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "md"))
            .collect();
        docs.sort();
        v.extend(docs);
    }
    v
}

/// The fenced code blocks whose info string is `sh` (or `bash`, `shell`): (line of the opening fence, text).
fn sh_blocks(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut open: Option<(usize, bool, String)> = None;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        if let Some(rest) = t.strip_prefix("```") {
            match open.take() {
                None => {
                    let lang = rest.split_whitespace().next().unwrap_or("");
                    open = Some((
                        i + 1,
                        matches!(lang, "sh" | "bash" | "shell"),
                        String::new(),
                    ));
                }
                Some((at, true, body)) => out.push((at, body)),
                Some(_) => {}
            }
        } else if let Some((_, _, body)) = open.as_mut() {
            body.push_str(line);
            body.push('\n');
        }
    }
    out
}

/// One shell word, or a separator between commands (`|`, `;`, `&`, `&&`, `||`, redirections).
#[derive(Debug, PartialEq)]
enum Tok {
    Word(String),
    Sep,
}

/// Shell words of a block: continuation lines joined, comments dropped, quotes removed (no expansion).
fn tokens(block: &str) -> Vec<Tok> {
    let mut toks = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = block.chars().peekable();
    let mut quote: Option<char> = None;
    let flush = |word: &mut String, in_word: &mut bool, toks: &mut Vec<Tok>| {
        if *in_word {
            toks.push(Tok::Word(std::mem::take(word)));
            *in_word = false;
        }
    };
    while let Some(c) = chars.next() {
        if let Some(q) = quote {
            if c == q {
                quote = None;
            } else if c == '\\'
                && q == '"'
                && chars.peek().is_some_and(|n| matches!(n, '"' | '\\' | '$'))
            {
                word.push(chars.next().unwrap());
            } else {
                word.push(c);
            }
            continue;
        }
        match c {
            '\'' | '"' => {
                quote = Some(c);
                in_word = true;
            }
            '\\' if chars.peek() == Some(&'\n') => {
                chars.next();
                flush(&mut word, &mut in_word, &mut toks);
            }
            '\\' => {
                if let Some(n) = chars.next() {
                    word.push(n);
                    in_word = true;
                }
            }
            '#' if !in_word => {
                while chars.peek().is_some_and(|&n| n != '\n') {
                    chars.next();
                }
            }
            '\n' | ';' | '|' | '&' | '>' | '<' | '(' | ')' => {
                flush(&mut word, &mut in_word, &mut toks);
                if toks.last() != Some(&Tok::Sep) {
                    toks.push(Tok::Sep);
                }
            }
            c if c.is_whitespace() => flush(&mut word, &mut in_word, &mut toks),
            c => {
                word.push(c);
                in_word = true;
            }
        }
    }
    flush(&mut word, &mut in_word, &mut toks);
    toks
}

/// Commands: the words between separators, with leading shell keywords, `env`/`nice`/`time` wrappers and
/// variable assignments removed.
fn commands(block: &str) -> Vec<Vec<String>> {
    let mut cmds = Vec::new();
    let mut cur: Vec<String> = Vec::new();
    for t in tokens(block).into_iter().chain([Tok::Sep]) {
        match t {
            Tok::Word(w) => cur.push(w),
            Tok::Sep => {
                let mut words = std::mem::take(&mut cur);
                while let Some(first) = words.first() {
                    let is_assign = first.split_once('=').is_some_and(|(k, _)| {
                        !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                    });
                    if matches!(
                        first.as_str(),
                        "do" | "then" | "else" | "time" | "env" | "!" | "/usr/bin/time"
                    ) || is_assign
                    {
                        words.remove(0);
                    } else if first == "nice" {
                        words.remove(0);
                        if words.first().is_some_and(|w| w == "-n") {
                            words.drain(..2.min(words.len()));
                        }
                    } else if first == "-f" || first == "-v" || first == "-o" {
                        // options of /usr/bin/time: `-f FORMAT`, `-o FILE`, `-v`
                        let n = if first == "-v" { 1 } else { 2 };
                        words.drain(..n.min(words.len()));
                    } else {
                        break;
                    }
                }
                if !words.is_empty() {
                    cmds.push(words);
                }
            }
        }
    }
    cmds
}

/// `--help` of the binary for a subcommand path, cached.
struct Help {
    cache: BTreeMap<Vec<String>, Option<String>>,
}

impl Help {
    fn get(&mut self, path: &[String]) -> Option<&str> {
        self.cache
            .entry(path.to_vec())
            .or_insert_with(|| {
                let out = Command::new(SWORD)
                    .args(path)
                    .arg("--help")
                    .output()
                    .expect("run sword --help");
                out.status
                    .success()
                    .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
            })
            .as_deref()
    }

    /// The subcommand names listed under `Commands:` in a help text.
    fn subcommands(help: &str) -> Vec<String> {
        let mut in_cmds = false;
        let mut v = Vec::new();
        for line in help.lines() {
            if line.starts_with("Commands:") {
                in_cmds = true;
            } else if in_cmds {
                if !line.starts_with("  ") {
                    break;
                }
                if let Some(w) = line.split_whitespace().next() {
                    v.push(w.to_string());
                }
            }
        }
        v
    }
}

/// Does `help` list the option `flag` (`--name` or `-x`) as a whole word?
fn lists_flag(help: &str, flag: &str) -> bool {
    help.match_indices(flag).any(|(i, _)| {
        let before = help[..i].chars().next_back();
        let after = help[i + flag.len()..].chars().next();
        before.is_none_or(|c| !(c.is_alphanumeric() || c == '-'))
            && after.is_none_or(|c| !(c.is_alphanumeric() || c == '-' || c == '_'))
    })
}

/// Check one command; problems are pushed as messages, pending ones as notes.
fn check_command(
    words: &[String],
    help: &mut Help,
    problems: &mut Vec<String>,
    notes: &mut Vec<String>,
) {
    let repo = Path::new(REPO);
    let pending = |what: &str| PENDING.contains(&what);
    // Repository paths anywhere in the command (also inside VAR=path words).
    for w in words {
        let w = w.split_once('=').map_or(w.as_str(), |(_, v)| v);
        let w = w.strip_prefix("./").unwrap_or(w);
        if !REPO_PREFIXES.iter().any(|p| w.starts_with(p)) {
            continue;
        }
        let path: String = w
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '/' | '-'))
            .collect();
        let path = path.trim_end_matches(['.', ',']);
        if w[path.len()..].starts_with(['$', '*', '{', '<', '…'])
            || path.ends_with('/') && path.matches('/').count() == 1
        {
            continue;
        }
        if !repo.join(path).exists() {
            problems.push(format!("`{path}` does not exist"));
        }
    }
    let prog = words[0].as_str();
    // sword itself, or `cargo run [cargo flags] -- SUB ...`.
    let args: Option<&[String]> = if prog == "sword" || prog.ends_with("/sword") {
        Some(&words[1..])
    } else if prog == "cargo" && words.get(1).is_some_and(|w| w == "run") {
        words
            .iter()
            .position(|w| w == "--")
            .map(|i| &words[i + 1..])
    } else {
        None
    };
    if let Some(args) = args {
        check_sword(args, help, problems, notes, &pending);
    }
    if prog == "cargo" && words.get(1).is_some_and(|w| w == "bench") {
        if let Some(i) = words.iter().position(|w| w == "--bench") {
            if let Some(name) = words.get(i + 1) {
                if !repo.join("benches").join(format!("{name}.rs")).exists() {
                    problems.push(format!("no bench `{name}` in benches/"));
                }
            }
        }
    }
    if prog == "make" {
        let Some(i) = words.iter().position(|w| w == "-f") else {
            return;
        };
        let Some(file) = words.get(i + 1) else { return };
        let Ok(mut makefile) = std::fs::read_to_string(repo.join(file)) else {
            return;
        };
        // Targets of included files count too (`include $(CONF)/eval.mk`: $(VAR)/ is the Makefile's folder).
        let dir = repo
            .join(file)
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let included: Vec<PathBuf> = makefile
            .lines()
            .filter_map(|l| l.strip_prefix("include "))
            .flat_map(str::split_whitespace)
            .map(|w| match w.split_once(")/") {
                Some((_, rest)) if w.starts_with("$(") => dir.join(rest),
                _ => dir.join(w),
            })
            .collect();
        for inc in included {
            match std::fs::read_to_string(&inc) {
                Ok(text) => makefile.push_str(&text),
                Err(_) => problems.push(format!(
                    "{file} includes {}, which is missing",
                    inc.display()
                )),
            }
        }
        for t in words[i + 2..]
            .iter()
            .filter(|w| !w.contains('=') && !w.starts_with('-'))
        {
            let defined = makefile.lines().any(|l| {
                l.split_once(':')
                    .is_some_and(|(head, _)| head.split_whitespace().any(|h| h == t))
                    && !l.starts_with(['\t', '#', ' '])
            });
            let what = format!("make -f {file} {t}");
            if defined {
                continue;
            } else if pending(&what) {
                notes.push(format!("pending: `{what}` (target not in this tree yet)"));
            } else {
                problems.push(format!("{file} has no target `{t}`"));
            }
        }
    }
}

/// Check the arguments of one `sword` call: global flags, the subcommand path, then every flag.
fn check_sword(
    args: &[String],
    help: &mut Help,
    problems: &mut Vec<String>,
    notes: &mut Vec<String>,
    pending: &dyn Fn(&str) -> bool,
) {
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "-q" | "--quiet" => i += 1,
            "-j" | "--threads" => i += 2,
            a if a.starts_with("-j") || a.starts_with("--threads=") => i += 1,
            _ => break,
        }
    }
    let mut path: Vec<String> = Vec::new();
    while let Some(next) = args.get(i) {
        let Some(h) = help.get(&path) else { break };
        let subs = Help::subcommands(h);
        if subs.is_empty() {
            break;
        }
        if subs.iter().any(|s| s == next) {
            path.push(next.clone());
            i += 1;
            continue;
        }
        let what = format!(
            "sword {}",
            path.iter()
                .chain([next])
                .cloned()
                .collect::<Vec<_>>()
                .join(" ")
        );
        if next.starts_with('-') && path.is_empty() {
            break; // `sword --help`, `sword --version`
        } else if pending(&what) {
            notes.push(format!(
                "pending: `{what}` (subcommand not in this tree yet)"
            ));
        } else {
            problems.push(format!(
                "`{what}`: no such subcommand (has: {})",
                subs.join(", ")
            ));
        }
        return;
    }
    let Some(h) = help.get(&path).map(str::to_owned) else {
        problems.push(format!("`sword {} --help` fails", path.join(" ")));
        return;
    };
    for a in &args[i..] {
        let flag = a.split_once('=').map_or(a.as_str(), |(f, _)| f);
        let is_long = flag.len() > 2 && flag.starts_with("--");
        let is_short =
            flag.len() == 2 && flag.starts_with('-') && flag.as_bytes()[1].is_ascii_alphabetic();
        if (is_long || is_short) && !lists_flag(&h, flag) {
            problems.push(format!("`sword {}` has no flag `{flag}`", path.join(" ")));
        }
    }
}

/// Problems of every sh block of one page's text (named `name` in messages), and notes on pending commands.
fn check_page(name: &str, text: &str, help: &mut Help) -> (Vec<String>, Vec<String>) {
    let mut problems = Vec::new();
    let mut notes = Vec::new();
    for (line, block) in sh_blocks(text) {
        let syntax = Command::new("bash")
            .arg("-n")
            .arg("-c")
            .arg(&block)
            .output()
            .expect("run bash -n");
        if !syntax.status.success() {
            problems.push(format!(
                "{name}:{line}: does not parse as shell: {}",
                String::from_utf8_lossy(&syntax.stderr).trim()
            ));
        }
        for cmd in commands(&block) {
            let mut p = Vec::new();
            let mut n = Vec::new();
            check_command(&cmd, help, &mut p, &mut n);
            let shown = cmd.join(" ");
            problems.extend(
                p.into_iter()
                    .map(|m| format!("{name}:{line}: {m}\n    in: {shown}")),
            );
            notes.extend(n.into_iter().map(|m| format!("{name}:{line}: {m}")));
        }
    }
    (problems, notes)
}

#[test]
fn every_documented_command_names_existing_scripts_subcommands_and_flags() {
    let mut help = Help {
        cache: BTreeMap::new(),
    };
    let mut problems = Vec::new();
    let mut blocks = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let name = page
            .strip_prefix(REPO)
            .unwrap_or(&page)
            .display()
            .to_string();
        blocks += sh_blocks(&text).len();
        let (p, notes) = check_page(&name, &text, &mut help);
        problems.extend(p);
        for n in notes {
            eprintln!("{n}");
        }
    }
    assert!(
        blocks >= 5,
        "only {blocks} sh blocks found in README.md and docs/"
    );
    assert!(
        problems.is_empty(),
        "{} problem(s) in the documented commands:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn the_readme_is_short_and_starts_with_the_two_commands() {
    let text = std::fs::read_to_string(Path::new(REPO).join("README.md")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines.len() <= 200,
        "README.md has {} lines (at most 200)",
        lines.len()
    );
    let head = lines[..15.min(lines.len())].join("\n");
    assert!(
        head.contains("cargo run --release -- run --out data/out/demo"),
        "main job not in the first 15 lines"
    );
    assert!(
        head.contains("cargo test"),
        "`cargo test` not in the first 15 lines"
    );
}

#[test]
fn the_checker_catches_what_it_should() {
    // Hand-written pages: each bad command must produce exactly the expected problem, the good ones none.
    let mut help = Help {
        cache: BTreeMap::new(),
    };
    let page = "\
text\n\
```sh\n\
sword -q -j 2 synth --entities 10 --out x.json   # fine\n\
sword synth --no-such-flag 1\n\
sword eval score --suite sword --results r.jsonl --bootstrap 10 | head\n\
sword eval nosuch --x\n\
scripts/no-such-script.sh --dest d\n\
cargo run --release -- extract --dump d.json --out r \\\n    --max-bad-lines 3\n\
for k in 0 1; do sword extract --dump d --out r --shard $k/2; done\n\
make -f pipeline/Makefile no-such-target DUMP=x\n\
cargo bench --bench nosuch\n\
```\n\
```text\n\
sword --not-checked-in-text-blocks\n\
```\n";
    let (problems, notes) = check_page("t.md", page, &mut help);
    let want = [
        "`sword synth` has no flag `--no-such-flag`",
        "`sword eval nosuch`: no such subcommand",
        "`scripts/no-such-script.sh` does not exist",
        "pipeline/Makefile has no target `no-such-target`",
        "no bench `nosuch` in benches/",
    ];
    assert_eq!(problems.len(), want.len(), "{problems:#?}");
    for (p, w) in problems.iter().zip(want) {
        assert!(p.contains(w), "{p} should say {w}");
    }
    assert!(notes.is_empty(), "{notes:?}");
    let (problems, _) = check_page("t.md", "```sh\nif then fi (\n```\n", &mut help);
    assert!(
        problems
            .iter()
            .any(|p| p.contains("does not parse as shell")),
        "{problems:?}"
    );
}

#[test]
fn shell_words_and_commands_by_hand() {
    let cmds = commands("A=1 nice -n 10 sword -q run --out \"a b\" # note\nx 'y # z' | wc -l\nfoo \\\n  --bar; done\n");
    let want: Vec<Vec<&str>> = vec![
        vec!["sword", "-q", "run", "--out", "a b"],
        vec!["x", "y # z"],
        vec!["wc", "-l"],
        vec!["foo", "--bar"],
        vec!["done"],
    ];
    assert_eq!(cmds, want);
    assert!(lists_flag("  --seed <SEED>  Seed", "--seed"));
    assert!(!lists_flag("  --seeds <S>", "--seed"));
    assert!(!lists_flag("  --max-seed <S>", "--seed"));
}
