//! The module graph under src/ has no cycle: stages depend on each other in the direction the data flows, so a
//! cycle means a type or helper lives in the wrong module.
//!
//! Each file is a module (`src/a.rs`, `src/a/mod.rs` = `a`; `src/a/b.rs` = `a::b`; lib.rs and main.rs are left
//! out). Its dependencies are read from the text: every `crate::…` path (in `use` lines, in code and in doc
//! comments, whose intra-doc links are dependencies too; `use crate::{a, b::c}` groups expanded) and every
//! `super::…` path (resolved from the inline module it stands in, so `use super::*` in `mod tests` is the file
//! itself). A path names the longest module prefix it has. Plain `//` comments and string literals are skipped.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

const REPO: &str = env!("CARGO_MANIFEST_DIR");

/// Module path of a source file relative to src/, or None for the crate roots.
fn module_of(rel: &Path) -> Option<Vec<String>> {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|s| s.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop()?;
    let stem = last.strip_suffix(".rs")?;
    if parts.is_empty() && (stem == "lib" || stem == "main") {
        return None;
    }
    if stem != "mod" {
        parts.push(stem.to_string());
    }
    Some(parts)
}

fn rs_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rs_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The source with plain comments, string and char literals blanked (newlines kept, so lines still count);
/// doc comments (`///`, `//!`) are kept, with their braces blanked so they do not count as nesting.
fn code_text(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    let blank = |s: &[u8], out: &mut String| {
        for &c in s {
            out.push(if c == b'\n' { '\n' } else { ' ' });
        }
    };
    while i < b.len() {
        let rest = &b[i..];
        if rest.starts_with(b"//") {
            let end = rest.iter().position(|&c| c == b'\n').unwrap_or(rest.len());
            let line = &src[i..i + end];
            if line.starts_with("///") || line.starts_with("//!") {
                out.extend(
                    line.chars()
                        .map(|c| if matches!(c, '{' | '}') { ' ' } else { c }),
                );
            } else {
                blank(&rest[..end], &mut out);
            }
            i += end;
        } else if rest.starts_with(b"/*") {
            let end = src[i + 2..].find("*/").map_or(rest.len(), |e| e + 4);
            blank(&rest[..end], &mut out);
            i += end;
        } else if rest[0] == b'"'
            || rest.starts_with(b"r\"")
            || rest.starts_with(b"r#")
            || rest.starts_with(b"b\"")
        {
            // string literal, raw or not
            let (hashes, start) = if rest[0] == b'r' || rest.starts_with(b"br") {
                let h = rest[1..].iter().take_while(|&&c| c == b'#').count();
                (Some(h), 1 + h + 1)
            } else if rest[0] == b'b' {
                (None, 2)
            } else {
                (None, 1)
            };
            if start > rest.len() || rest[start - 1] != b'"' {
                out.push(rest[0] as char);
                i += 1;
                continue;
            }
            let mut j = start;
            match hashes {
                Some(h) => {
                    let close: Vec<u8> = std::iter::once(b'"')
                        .chain(std::iter::repeat_n(b'#', h))
                        .collect();
                    while j < rest.len() && !rest[j..].starts_with(&close) {
                        j += 1;
                    }
                    j = (j + close.len()).min(rest.len());
                }
                None => {
                    while j < rest.len() && rest[j] != b'"' {
                        j += if rest[j] == b'\\' { 2 } else { 1 };
                    }
                    j = (j + 1).min(rest.len());
                }
            }
            blank(&rest[..j], &mut out);
            i += j;
        } else if rest[0] == b'\'' {
            // a char literal ('x', '\n', '\u{..}', '{'), not a lifetime ('a)
            let len = if rest.get(1) == Some(&b'\\') {
                rest[2..].iter().position(|&c| c == b'\'').map(|p| p + 3)
            } else {
                let ch = src[i + 1..].chars().next().map_or(1, char::len_utf8);
                (rest.get(1 + ch) == Some(&b'\'')).then_some(2 + ch)
            };
            match len {
                Some(n) => {
                    blank(&rest[..n], &mut out);
                    i += n;
                }
                None => {
                    out.push('\'');
                    i += 1;
                }
            }
        } else {
            let ch = src[i..].chars().next().unwrap();
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

/// Expand a `use` tree starting right after `crate::` or `super::` (`a::b`, `{a, b::{c, self}}`, `a::*`) into
/// paths of identifiers.
fn expand(tree: &str) -> Vec<Vec<String>> {
    fn parse(s: &str, i: &mut usize, prefix: &[String], out: &mut Vec<Vec<String>>) {
        let b = s.as_bytes();
        let mut path = prefix.to_vec();
        loop {
            while *i < b.len() && (b[*i] as char).is_whitespace() {
                *i += 1;
            }
            if *i < b.len() && b[*i] == b'{' {
                *i += 1;
                loop {
                    parse(s, i, &path, out);
                    while *i < b.len() && (b[*i] as char).is_whitespace() {
                        *i += 1;
                    }
                    if *i < b.len() && b[*i] == b',' {
                        *i += 1;
                        continue;
                    }
                    if *i < b.len() && b[*i] == b'}' {
                        *i += 1;
                    }
                    return;
                }
            }
            let start = *i;
            while *i < b.len() && ((b[*i] as char).is_alphanumeric() || b[*i] == b'_') {
                *i += 1;
            }
            let id = &s[start..*i];
            if id.is_empty() || id == "self" {
                out.push(path);
                return;
            }
            if id == "super" {
                path.push("super".into());
            } else {
                path.push(id.to_string());
            }
            if s[*i..].starts_with("::") {
                *i += 2;
            } else {
                out.push(path);
                return;
            }
        }
    }
    let mut out = Vec::new();
    parse(tree, &mut 0, &[], &mut out);
    out
}

/// One dependency: target module and the line that shows it.
type Deps = BTreeMap<Vec<String>, BTreeMap<Vec<String>, usize>>;

/// The longest prefix of `path` that is a module of the crate.
fn longest_module(path: &[String], modules: &BTreeSet<Vec<String>>) -> Option<Vec<String>> {
    (1..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|p| modules.contains(p))
}

/// Whether the code just before `at` (attributes, then an optional visibility) carries `#[cfg(test)]`: the item
/// that starts at `at` (a `mod`) is compiled for the tests only.
fn cfg_test_before(text: &str, at: usize) -> bool {
    let mut head = text[..at].trim_end();
    for vis in ["pub(crate)", "pub(super)", "pub"] {
        if let Some(h) = head.strip_suffix(vis) {
            head = h.trim_end();
            break;
        }
    }
    while head.ends_with(']') {
        let Some(open) = head.rfind("#[") else {
            return false;
        };
        if head[open..].replace(' ', "") == "#[cfg(test)]" {
            return true;
        }
        head = head[..open].trim_end();
    }
    false
}

/// The dependencies of every module.
fn module_graph() -> (Deps, BTreeMap<Vec<String>, String>) {
    let (all, _, names) = module_graphs();
    (all, names)
}

/// The dependencies of every module: all of them, and those of the code built into the library (without the
/// test modules: `#[cfg(test)] mod tests { … }` and files declared `#[cfg(test)] mod tests;`).
fn module_graphs() -> (Deps, Deps, BTreeMap<Vec<String>, String>) {
    let src = Path::new(REPO).join("src");
    let mut files = Vec::new();
    rs_files(&src, &mut files);
    let mut by_module = BTreeMap::new();
    for f in &files {
        if let Some(m) = module_of(f.strip_prefix(&src).unwrap()) {
            by_module.insert(m, f.clone());
        }
    }
    let modules: BTreeSet<Vec<String>> = by_module.keys().cloned().collect();
    let mut deps: Deps = BTreeMap::new();
    let mut built: Deps = BTreeMap::new();
    // Modules declared `#[cfg(test)] mod name;` (their files, and everything below them, are test code).
    let mut test_files: BTreeSet<Vec<String>> = BTreeSet::new();
    let mut names = BTreeMap::new();
    for (m, f) in &by_module {
        names.insert(
            m.clone(),
            f.strip_prefix(REPO).unwrap().display().to_string(),
        );
        let text = code_text(&std::fs::read_to_string(f).unwrap());
        let b = text.as_bytes();
        // inline modules: (brace depth at which they close, name, test only)
        let mut inline: Vec<(usize, String, bool)> = Vec::new();
        let mut depth = 0usize;
        let mut line = 1usize;
        let mut i = 0;
        let entry = deps.entry(m.clone()).or_default();
        let built_entry = built.entry(m.clone()).or_default();
        while i < b.len() {
            let c = b[i];
            let word_start = i == 0
                || !((b[i - 1] as char).is_alphanumeric() || b[i - 1] == b'_' || b[i - 1] == b':');
            match c {
                b'\n' => line += 1,
                b'{' => depth += 1,
                b'}' => {
                    depth = depth.saturating_sub(1);
                    if inline.last().is_some_and(|(d, _, _)| *d == depth) {
                        inline.pop();
                    }
                }
                _ => {}
            }
            if !text.is_char_boundary(i) {
                i += 1;
                continue;
            }
            let rest = &text[i..];
            if word_start && rest.starts_with("mod ") {
                let after = rest[4..].trim_start();
                let name: String = after
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                let tail = after[name.len()..].trim_start();
                let test = cfg_test_before(&text, i);
                if !name.is_empty() && tail.starts_with('{') {
                    inline.push((depth, name, test));
                } else if !name.is_empty() && tail.starts_with(';') && test {
                    let mut here = m.clone();
                    here.extend(inline.iter().map(|(_, n, _)| n.clone()));
                    here.push(name);
                    test_files.insert(here);
                }
            }
            let (base, skip) = if word_start && rest.starts_with("crate::") {
                (Vec::new(), "crate::".len())
            } else if word_start && rest.starts_with("super::") {
                let mut here = m.clone();
                here.extend(inline.iter().map(|(_, n, _)| n.clone()));
                here.pop();
                (here, "super::".len())
            } else {
                i += 1;
                continue;
            };
            // the path tree runs to the end of the use item or expression
            let end = text[i + skip..]
                .find(|c: char| {
                    !(c.is_alphanumeric()
                        || matches!(c, '_' | ':' | '{' | '}' | ',' | '*')
                        || c.is_whitespace())
                })
                .map_or(text.len(), |e| i + skip + e);
            let mut tree = &text[i + skip..end];
            // an unbalanced `}` ends a group that began before this path
            let mut open = 0i32;
            for (k, ch) in tree.char_indices() {
                match ch {
                    '{' => open += 1,
                    '}' if open == 0 => {
                        tree = &tree[..k];
                        break;
                    }
                    '}' => open -= 1,
                    _ => {}
                }
            }
            for p in expand(tree) {
                let mut full = base.clone();
                for seg in p {
                    if seg == "super" {
                        full.pop();
                    } else {
                        full.push(seg);
                    }
                }
                if let Some(t) = longest_module(&full, &modules) {
                    if &t != m {
                        if !inline.iter().any(|(_, _, test)| *test) {
                            built_entry.entry(t.clone()).or_insert(line);
                        }
                        entry.entry(t).or_insert(line);
                    }
                }
            }
            i += skip;
        }
    }
    built.retain(|m, _| !test_files.iter().any(|t| m.starts_with(t)));
    (deps, built, names)
}

/// The cycles: in each strongly connected component with more than one module, every pair of modules that
/// import each other (`[a, b, a]`), or, when it has no such pair, its shortest cycle through its first module.
fn cycles(deps: &Deps) -> Vec<Vec<Vec<String>>> {
    let nodes: Vec<&Vec<String>> = deps.keys().collect();
    let reach = |from: &Vec<String>| -> BTreeSet<Vec<String>> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.clone()];
        while let Some(n) = stack.pop() {
            for t in deps.get(&n).into_iter().flat_map(|d| d.keys()) {
                if seen.insert(t.clone()) {
                    stack.push(t.clone());
                }
            }
        }
        seen
    };
    let reachable: BTreeMap<&Vec<String>, BTreeSet<Vec<String>>> =
        nodes.iter().map(|n| (*n, reach(n))).collect();
    let mut done = BTreeSet::new();
    let mut out = Vec::new();
    for n in &nodes {
        if done.contains(*n) || !reachable[n].contains(*n) {
            continue;
        }
        let scc: BTreeSet<Vec<String>> = nodes
            .iter()
            .filter(|o| reachable[n].contains(**o) && reachable[**o].contains(*n))
            .map(|o| (*o).clone())
            .collect();
        done.extend(scc.iter().cloned());
        let pairs: Vec<Vec<Vec<String>>> = scc
            .iter()
            .flat_map(|a| scc.iter().filter(move |b| a < *b).map(move |b| (a, b)))
            .filter(|(a, b)| deps[*a].contains_key(*b) && deps[*b].contains_key(*a))
            .map(|(a, b)| vec![a.clone(), b.clone(), a.clone()])
            .collect();
        if !pairs.is_empty() {
            out.extend(pairs);
            continue;
        }
        // shortest cycle from n back to n inside the component (breadth first)
        let mut prev: BTreeMap<Vec<String>, Vec<String>> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([(*n).clone()]);
        let mut cycle = None;
        while let Some(x) = queue.pop_front() {
            for t in deps[&x].keys().filter(|t| scc.contains(*t)) {
                if t == *n {
                    let mut path = vec![x.clone()];
                    while let Some(p) = prev.get(path.last().unwrap()) {
                        path.push(p.clone());
                    }
                    path.reverse();
                    path.push((*n).clone());
                    cycle = Some(path);
                    break;
                }
                if !prev.contains_key(t) {
                    prev.insert(t.clone(), x.clone());
                    queue.push_back(t.clone());
                }
            }
            if cycle.is_some() {
                break;
            }
        }
        out.push(cycle.unwrap());
    }
    out
}

/// The layers, bottom up: the order of the `pub mod` lines of lib.rs.
fn layers() -> Vec<String> {
    let lib = std::fs::read_to_string(Path::new(REPO).join("src/lib.rs")).unwrap();
    lib.lines()
        .filter_map(|l| l.strip_prefix("pub mod "))
        .map(|l| l.trim_end_matches(';').to_string())
        .collect()
}

/// The stage folders: the folders directly under src/stages/.
fn stage_folders() -> BTreeSet<String> {
    std::fs::read_dir(Path::new(REPO).join("src/stages"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect()
}

/// The imports that break the layering, each (from, to, why): a module importing from a higher layer than its
/// own (its first path segment's place in `layers`), or a module of one stage folder importing from another
/// stage folder (`stages::distort::…` → `stages::revalidate::…`). A module whose layer is not in `layers` is
/// named too.
fn layer_violations(
    deps: &Deps,
    layers: &[String],
    folders: &BTreeSet<String>,
) -> Vec<(Vec<String>, Vec<String>, &'static str)> {
    let place = |m: &[String]| layers.iter().position(|l| *l == m[0]);
    let folder = |m: &[String]| {
        (m.len() >= 2 && m[0] == "stages" && folders.contains(&m[1])).then(|| m[1].clone())
    };
    let mut out = Vec::new();
    for (m, ts) in deps {
        for t in ts.keys() {
            let why = match (place(m), place(t)) {
                (None, _) | (_, None) => Some("a layer lib.rs does not list"),
                (Some(a), Some(b)) if b > a => Some("a lower layer imports a higher one"),
                _ => match (folder(m), folder(t)) {
                    (Some(a), Some(b)) if a != b => Some("a stage folder imports another"),
                    _ => None,
                },
            };
            if let Some(why) = why {
                out.push((m.clone(), t.clone(), why));
            }
        }
    }
    out
}

#[test]
fn layers_import_only_from_below_and_stage_folders_not_from_each_other() {
    let (_, built, names) = module_graphs();
    let layers = layers();
    let folders = stage_folders();
    // lib.rs lists every top-level module (folder or file) under src/, and the stage folders are found.
    let top: BTreeSet<String> = built.keys().map(|m| m[0].clone()).collect();
    let listed: BTreeSet<String> = layers.iter().cloned().collect();
    assert_eq!(
        top, listed,
        "lib.rs's `pub mod` lines vs the modules under src/"
    );
    assert!(
        [
            "extract",
            "embed",
            "distort",
            "export",
            "revalidate",
            "translate"
        ]
        .iter()
        .all(|f| folders.contains(*f)),
        "{folders:?}"
    );
    let found = layer_violations(&built, &layers, &folders);
    let report: Vec<String> = found
        .iter()
        .map(|(m, t, why)| {
            format!(
                "{} -> {} ({}:{}): {why}",
                m.join("::"),
                t.join("::"),
                names[m],
                built[m][t]
            )
        })
        .collect();
    assert!(
        found.is_empty(),
        "{} import(s) against the layers (bottom up: {}):\n{}",
        found.len(),
        layers.join(" < "),
        report.join("\n")
    );
}

/// A newcomer finds a stage's `impl Stage` in `stage.rs` of its folder, whichever stage it is: every file under
/// src/stages/ that implements the trait is named stage.rs, and every stage folder (or, for embed/, each of its
/// stage subfolders) has one.
#[test]
fn every_impl_stage_is_in_a_stage_rs() {
    let root = Path::new(REPO).join("src/stages");
    let mut files = Vec::new();
    rs_files(&root, &mut files);
    let mut holders = BTreeSet::new();
    let mut misplaced = Vec::new();
    for f in &files {
        let text = code_text(&std::fs::read_to_string(f).unwrap());
        let implements = text.lines().any(|l| {
            let l = l.trim_start();
            l.starts_with("impl Stage for")
                || l.starts_with("impl crate::stages::contract::Stage for")
        });
        // The contract's own toy stage, in its tests, is not a stage of the pipeline.
        if implements && !f.ends_with("contract.rs") {
            let rel = f.strip_prefix(&root).unwrap().to_path_buf();
            if rel.file_name().unwrap() == "stage.rs" {
                holders.insert(rel.parent().unwrap().display().to_string());
            } else {
                misplaced.push(rel.display().to_string());
            }
        }
    }
    assert!(
        misplaced.is_empty(),
        "impl Stage outside a stage.rs: {misplaced:?}"
    );
    let want: BTreeSet<String> = [
        "distort",
        "embed/graph",
        "embed/train",
        "embed/walks",
        "export",
        "extract",
        "revalidate",
        "translate",
    ]
    .map(String::from)
    .into();
    assert_eq!(holders, want);
}

#[test]
fn planted_upward_and_sideways_imports_are_named() {
    let m = |s: &str| s.split("::").map(String::from).collect::<Vec<_>>();
    let layers: Vec<String> = ["core", "kb", "synth", "stages"].map(String::from).to_vec();
    let folders: BTreeSet<String> = ["distort", "revalidate"].map(String::from).into();
    let mut deps: Deps = BTreeMap::new();
    // Allowed: downward, within a layer, a stage folder to the contract, within one stage folder.
    deps.entry(m("synth::later"))
        .or_default()
        .insert(m("kb::benchmark"), 1);
    deps.entry(m("stages::distort::stage"))
        .or_default()
        .insert(m("kb::index"), 2);
    deps.entry(m("stages::distort::stage"))
        .or_default()
        .insert(m("stages::contract"), 3);
    deps.entry(m("stages::distort::carry"))
        .or_default()
        .insert(m("stages::distort::ids"), 4);
    deps.entry(m("stages::pipeline"))
        .or_default()
        .insert(m("stages::distort"), 5);
    assert!(layer_violations(&deps, &layers, &folders).is_empty());
    // Upward (synth → a stage, core → kb) and sideways (distort → revalidate): each named once.
    deps.entry(m("synth::later"))
        .or_default()
        .insert(m("stages::distort"), 6);
    deps.entry(m("core::records"))
        .or_default()
        .insert(m("kb::index"), 7);
    deps.entry(m("stages::distort::carry"))
        .or_default()
        .insert(m("stages::revalidate::stage"), 8);
    deps.entry(m("eval::run"))
        .or_default()
        .insert(m("core::records"), 9);
    let found: Vec<(String, String, &str)> = layer_violations(&deps, &layers, &folders)
        .into_iter()
        .map(|(a, b, why)| (a.join("::"), b.join("::"), why))
        .collect();
    assert_eq!(
        found,
        vec![
            (
                "core::records".into(),
                "kb::index".into(),
                "a lower layer imports a higher one"
            ),
            (
                "eval::run".into(),
                "core::records".into(),
                "a layer lib.rs does not list"
            ),
            (
                "stages::distort::carry".into(),
                "stages::revalidate::stage".into(),
                "a stage folder imports another"
            ),
            (
                "synth::later".into(),
                "stages::distort".into(),
                "a lower layer imports a higher one"
            ),
        ]
    );
}

#[test]
fn test_modules_are_found_by_their_attribute() {
    let text = "fn a() {}\n#[cfg(test)]\nmod tests {\n}\n#[cfg(test)] #[allow(x)]\npub(crate) mod b;\nmod c;\n";
    let at = |name: &str| text.find(name).unwrap();
    assert!(cfg_test_before(text, at("mod tests")));
    assert!(cfg_test_before(
        text,
        at("pub(crate) mod b") + "pub(crate) ".len()
    ));
    assert!(!cfg_test_before(text, at("mod c")));
    assert!(!cfg_test_before(text, at("fn a")));
}

#[test]
fn the_module_graph_has_no_cycle() {
    let (deps, names) = module_graph();
    assert!(
        deps.len() >= 20,
        "only {} modules found under src/",
        deps.len()
    );
    let show = |m: &Vec<String>| m.join("::");
    let found = cycles(&deps);
    let report: Vec<String> = found
        .iter()
        .map(|c| {
            let hops: Vec<String> = c
                .windows(2)
                .map(|w| {
                    format!(
                        "{} -> {} ({}:{})",
                        show(&w[0]),
                        show(&w[1]),
                        names[&w[0]],
                        deps[&w[0]][&w[1]]
                    )
                })
                .collect();
            format!(
                "cycle {}\n    {}",
                c.iter().map(show).collect::<Vec<_>>().join(" -> "),
                hops.join("\n    ")
            )
        })
        .collect();
    assert!(
        found.is_empty(),
        "{} cycle(s) in the module graph (modules that import each other):\n{}",
        found.len(),
        report.join("\n")
    );
}

#[test]
fn use_trees_and_literals_are_read_by_hand() {
    let paths = expand("{store::{self, Manifest}, error::Result, walks}");
    let want: Vec<Vec<String>> = [
        vec!["store"],
        vec!["store", "Manifest"],
        vec!["error", "Result"],
        vec!["walks"],
    ]
    .iter()
    .map(|p| p.iter().map(|s| s.to_string()).collect())
    .collect();
    assert_eq!(paths, want);
    let code = code_text(
        "let s = \"crate::x {\"; // crate::y\n/// [`crate::z`]\nlet c = '{'; fn f<'a>() {}\n",
    );
    assert!(
        !code.contains("crate::x") && !code.contains("crate::y") && code.contains("crate::z"),
        "{code}"
    );
    assert_eq!(code.matches('{').count(), 1, "{code}");
    assert_eq!(code.lines().count(), 3);
}

#[test]
fn a_planted_cycle_is_named() {
    let m = |s: &str| s.split("::").map(String::from).collect::<Vec<_>>();
    let mut deps: Deps = BTreeMap::new();
    deps.entry(m("a")).or_default().insert(m("b"), 1);
    deps.entry(m("b")).or_default().insert(m("c"), 2);
    deps.entry(m("c")).or_default().insert(m("a"), 3);
    deps.entry(m("d")).or_default().insert(m("a"), 4);
    deps.entry(m("e")).or_default();
    let found = cycles(&deps);
    assert_eq!(found, vec![vec![m("a"), m("b"), m("c"), m("a")]]);
    deps.get_mut(&m("c")).unwrap().clear();
    assert!(cycles(&deps).is_empty());
    // two pairs in one component are both named
    deps.entry(m("b")).or_default().insert(m("a"), 5);
    deps.entry(m("c")).or_default().insert(m("b"), 6);
    assert_eq!(
        cycles(&deps),
        vec![vec![m("a"), m("b"), m("a")], vec![m("b"), m("c"), m("b")]]
    );
}
