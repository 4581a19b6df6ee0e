//! The contract for commands that write a folder without being a stage of the pipeline (`sword eval run`,
//! `eval batch-read`, `eval compare`, `eval chain-report`, `eval report`): the same door and the same order
//! as a stage ([`super::contract`]), for outputs whose names are only known when the command runs (one figure
//! per model, one heatmap per variant).
//!
//! A command declares its manifest's name and every file it may write ([`FolderCommand`]; or, when the names
//! depend on its arguments, [`execute_folder_writing`]); [`execute_folder`] then:
//!
//! 1. opens the folder ([`RunDir::open`]: its lock, exit code 6 when another writer holds it);
//! 2. runs the work, which records the files it reads ([`Folder::input`]: hashed) and writes its outputs
//!    through the handle ([`Folder::write`], [`Folder::create`]; a name it does not declare is an internal
//!    error, exit 1); the first output renamed into place removes the command's old manifest;
//! 3. removes each declared file this run did not write (the figure of a model no longer compared), said on
//!    stderr and listed in the manifest's `removed`;
//! 4. writes `<name>.manifest.json` (config, inputs with their hashes, outputs with theirs, counts, the total
//!    time) last, atomically, still under the lock.
//!
//! When the work or the manifest fails, the outputs already renamed into place are removed again, as for a
//! stage, so no output stays without a manifest that vouches for it.

use crate::core::error::{Error, Result};
use crate::core::progress;
use crate::store::{AtomicFile, FileRef, Manifest, RunDir};
use std::io::Write;
use std::path::Path;
use std::time::Instant;

/// What a folder-writing command declares.
#[derive(Clone, Copy, Debug)]
pub struct FolderCommand {
    /// The manifest's name (`<name>.manifest.json`).
    pub name: &'static str,
    /// Every file the command may write, relative to the folder: a name, or a pattern with at most one `*` in
    /// each part (`figures/*.svg`: every file of `figures/` whose name ends in `.svg`; `*/report.md`).
    pub writes: &'static [&'static str],
}

impl FolderCommand {
    /// Whether `rel` is a file this command declares.
    pub fn declares(&self, rel: &str) -> bool {
        declared_in(self.writes, rel)
    }
}

/// Whether `rel` matches one of `writes`.
fn declared_in<P: AsRef<str>>(writes: &[P], rel: &str) -> bool {
    writes.iter().any(|p| matches(p.as_ref(), rel))
}

/// Whether `rel` matches the pattern `pat`: part by part (split at `/`), each a name or one `*` standing for
/// any non-empty run of characters (`*/*/report.md`: the report of every model and variant).
fn matches(pat: &str, rel: &str) -> bool {
    let (mut p, mut r) = (pat.split('/'), rel.split('/'));
    loop {
        match (p.next(), r.next()) {
            (None, None) => return true,
            (Some(pp), Some(rr)) if part_matches(pp, rr) => {}
            _ => return false,
        }
    }
}

fn part_matches(pat: &str, name: &str) -> bool {
    match pat.split_once('*') {
        None => pat == name,
        Some((pre, post)) => {
            name.len() > pre.len() + post.len() && name.starts_with(pre) && name.ends_with(post)
        }
    }
}

/// The folder as a command sees it while it runs.
pub struct Folder {
    run: RunDir,
    /// The manifest's name.
    name: &'static str,
    /// The patterns of every file the command may write this run.
    writes: Vec<String>,
    manifest: Manifest,
    started: Instant,
}

impl Folder {
    /// The folder.
    pub fn dir(&self) -> &Path {
        self.run.dir()
    }

    /// The folder's handle.
    pub fn run_dir(&self) -> &RunDir {
        &self.run
    }

    /// The manifest being built.
    pub fn manifest(&mut self) -> &mut Manifest {
        &mut self.manifest
    }

    /// Set a count.
    pub fn count(&mut self, key: &str, value: u64) {
        self.manifest.counts.insert(key.to_string(), value);
    }

    /// Record a file the command reads (hashed now; inside the folder it is named relative to it).
    pub fn input(&mut self, path: &Path) -> Result<()> {
        self.manifest.inputs.push(FileRef::of(path)?);
        Ok(())
    }

    fn declared(&self, rel: &str) -> Result<()> {
        if declared_in(&self.writes, rel) {
            return Ok(());
        }
        Err(Error::internal(format!(
            "{} writes {rel}, which it does not declare",
            self.name
        )))
    }

    /// Start writing the declared output `rel` atomically.
    pub fn create(&self, rel: &str) -> Result<AtomicFile> {
        self.declared(rel)?;
        self.run.create(rel)
    }

    /// Write the declared output `rel` atomically with the bytes `f` produces.
    pub fn write(
        &self,
        rel: &str,
        f: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
    ) -> Result<()> {
        self.declared(rel)?;
        self.run.write(rel, f)
    }
}

/// Run the command `cmd` writing into `dir` (see the module documentation for the steps); `config` is what
/// its manifest records as its settings. Returns the manifest written and what `work` returned.
pub fn execute_folder<T>(
    cmd: &FolderCommand,
    dir: &Path,
    config: serde_json::Value,
    work: impl FnOnce(&mut Folder) -> Result<T>,
) -> Result<(Manifest, T)> {
    let writes = cmd.writes.iter().map(|p| p.to_string()).collect();
    execute_folder_writing(cmd.name, writes, dir, config, work)
}

/// [`execute_folder`] for a command whose outputs are named by its arguments: `writes` are the patterns (as
/// in [`FolderCommand::writes`]) of the files this run may write, and so of the files it removes when it does
/// not write them. `sword eval collect-longform` names the model in them, so that collecting one model into
/// a folder that others share never removes another model's files.
pub fn execute_folder_writing<T>(
    name: &'static str,
    writes: Vec<String>,
    dir: &Path,
    config: serde_json::Value,
    work: impl FnOnce(&mut Folder) -> Result<T>,
) -> Result<(Manifest, T)> {
    let run = RunDir::open(dir)?;
    let guard = run.begin_stage(name)?;
    let mut manifest = Manifest::new(name);
    manifest.config = config;
    let mut f = Folder {
        run: run.clone(),
        name,
        writes,
        manifest,
        started: Instant::now(),
    };
    let result = work(&mut f).and_then(|t| finish(f).map(|m| (m, t)));
    if result.is_err() {
        let removed = run.remove_outputs();
        if removed > 0 {
            progress::log(format!(
                "{name}: failed; removed the {removed} output(s) it had put in place (no manifest vouches for them)"
            ));
        }
    }
    drop(guard);
    result
}

/// The files of the folder that `pat` names and that are there now, sorted.
fn present(run: &RunDir, pat: &str) -> Result<Vec<String>> {
    // The paths (relative) matching the parts seen so far, part by part.
    let mut found = vec![String::new()];
    let parts: Vec<&str> = pat.split('/').collect();
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        let mut next = Vec::new();
        for base in &found {
            let join = |name: &str| {
                if base.is_empty() {
                    name.to_string()
                } else {
                    format!("{base}/{name}")
                }
            };
            if !part.contains('*') {
                next.push(join(part));
                continue;
            }
            let dir = run.path(base);
            let entries = match std::fs::read_dir(&dir) {
                Ok(e) => e,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => continue,
                Err(e) => return Err(Error::io(&dir, e)),
            };
            for e in entries {
                let e = e.map_err(|err| Error::io(&dir, err))?;
                let name = e.file_name().to_string_lossy().into_owned();
                if part_matches(part, &name) && (last || e.file_type().is_ok_and(|t| t.is_dir())) {
                    next.push(join(&name));
                }
            }
        }
        found = next;
    }
    let mut out: Vec<String> = found
        .into_iter()
        .filter(|rel| {
            std::fs::symlink_metadata(run.path(rel)).is_ok_and(|m| m.file_type().is_file())
        })
        .collect();
    out.sort();
    Ok(out)
}

/// After successful work: the outputs written (each declared), the declared files not written removed, the
/// manifest written last.
fn finish(mut f: Folder) -> Result<Manifest> {
    let dir = f.dir().to_path_buf();
    let mut names: Vec<String> = Vec::new();
    for p in f.run.committed() {
        let rel = p
            .strip_prefix(&dir)
            .map(|r| r.to_string_lossy().into_owned())
            .map_err(|_| Error::internal(format!("{} wrote outside its folder", p.display())))?;
        f.declared(&rel)?;
        if !names.contains(&rel) {
            names.push(rel);
        }
    }
    for pat in &f.writes {
        for rel in present(&f.run, pat)? {
            if !names.contains(&rel) && f.run.remove(&rel)? {
                progress::log(format!(
                    "{}: removed {rel}, which an earlier run wrote and this one did not",
                    f.name
                ));
                f.manifest.removed.push(rel);
            }
        }
    }
    for r in &mut f.manifest.inputs {
        *r = r.clone().relative_to(&dir);
    }
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    f.manifest.add_outputs_of(&f.run, &refs)?;
    f.manifest
        .timings
        .insert("total".into(), f.started.elapsed().as_secs_f64());
    f.manifest.write(&f.run)?;
    Ok(f.manifest)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIGS: FolderCommand = FolderCommand {
        name: "figs",
        writes: &["report.md", "figures/*.svg"],
    };

    #[test]
    fn patterns_match_one_level_and_a_non_empty_name() {
        assert!(matches("figures/*.svg", "figures/a.svg"));
        assert!(!matches("figures/*.svg", "figures/.svg"));
        assert!(!matches("figures/*.svg", "figures/a/b.svg"));
        assert!(!matches("figures/*.svg", "figures/a.svg.bak"));
        assert!(matches("sword_*.svg", "sword_plain.svg"));
        assert!(!matches("sword_*.svg", "text_ok.svg"));
        assert!(matches("report.md", "report.md"));
        assert!(!matches("report.md", "x/report.md"));
        assert!(matches("*/*/report.md", "m/plain/report.md"));
        assert!(!matches("*/*/report.md", "m/report.md"));
        assert!(matches("*/stage*.svg", "m/stage1_x.svg"));
    }

    fn write_figs(d: &Path, figs: &[&str], fail: bool) -> Result<Manifest> {
        let input = d.join("../in.txt");
        execute_folder(&FIGS, d, serde_json::json!({"k": 1}), |f| {
            f.input(&input)?;
            for name in figs {
                f.write(&format!("figures/{name}.svg"), |w| w.write_all(b"<svg/>"))?;
            }
            if fail {
                return Err(Error::Config("failed".into()));
            }
            f.write("report.md", |w| w.write_all(b"# r\n"))?;
            f.count("figures", figs.len() as u64);
            Ok(())
        })
        .map(|(m, ())| m)
    }

    #[test]
    fn outputs_are_listed_stale_ones_removed_and_a_failure_leaves_no_unvouched_output() {
        let top = tempfile::tempdir().unwrap();
        std::fs::write(top.path().join("in.txt"), b"abc").unwrap();
        let d = top.path().join("out");
        let m = write_figs(&d, &["a", "b"], false).unwrap();
        let names: Vec<&str> = m.outputs.iter().map(|o| o.path.as_str()).collect();
        assert_eq!(names, ["figures/a.svg", "figures/b.svg", "report.md"]);
        assert_eq!(m.inputs.len(), 1);
        assert_eq!(m.inputs[0].size, 3);
        // A file of someone else's in the folder stays; the figure this run did not draw goes.
        std::fs::write(d.join("figures/notes.txt"), b"mine").unwrap();
        let m = write_figs(&d, &["a"], false).unwrap();
        assert_eq!(m.removed, ["figures/b.svg"]);
        assert!(!d.join("figures/b.svg").exists());
        assert!(d.join("figures/notes.txt").exists());
        let on_disk = Manifest::read(&Manifest::path_in(&d, "figs")).unwrap();
        assert_eq!(on_disk.removed, ["figures/b.svg"]);
        crate::store::check_input(&d, "figs", "figures/a.svg", false).unwrap();
        // A failure after one output: it goes again, and so did the old manifest; nothing else is removed.
        let e = write_figs(&d, &["c"], true).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(!d.join("figures/c.svg").exists());
        assert!(!Manifest::path_in(&d, "figs").exists());
        assert!(d.join("figures/a.svg").exists() && d.join("report.md").exists());
        // An undeclared name is an internal error.
        let e = execute_folder(&FIGS, &d, serde_json::Value::Null, |f| {
            f.write("other.txt", |w| w.write_all(b"x"))
        })
        .map(|_| ())
        .unwrap_err();
        assert_eq!(e.exit_code(), 1);
        assert!(!d.join("other.txt").exists());
    }
}
