//! The stage contract: what every stage declares ([`Stage`]) and what the run folder does for it ([`Context`],
//! [`execute`]).
//!
//! A stage declares its name, its settings (one type that is both the TOML table of `pipeline/<name>.toml` and
//! the command-line flags of `sword <name>`: [`Stage::Settings`]), its other flags (what it reads from outside the run
//! folder, modes), the artifacts it reads (each with the stage that writes it: [`Input`]) and writes
//! ([`Artifact`]), how its settings are checked, and `run`, its work. Everything around the work is done
//! here, the same way for every stage:
//!
//! 1. the settings are checked ([`Stage::validate`]; exit code 2) before anything is read or locked;
//! 2. the run folder is opened for the stage ([`RunDir`]: its lock, exit 6 when another run holds it; `sword
//!    run` opens it once and hands the same handle to every stage);
//! 3. the declared inputs are checked against the manifests of the stages that wrote them (exit 3 when one is
//!    missing, stale or corrupt; `--force` only hashes them) and recorded, in declaration order;
//! 4. `run` does the work, writing its outputs through the context, which writes them through the handle
//!    (atomic files: nothing half-written is ever seen; no other way into the folder) and recording counts,
//!    rejects, timings and anything else in the manifest being built;
//! 5. every declared output must then have been written by this run, and nothing else (a stage that forgets
//!    one, or writes one it does not declare, is an internal error, exit 1);
//! 6. each artifact the stage may write ([`Stage::WRITES`], [`Stage::MAY_WRITE`]) that this run did not write
//!    is removed from the folder (an earlier run with other flags left it there: `walks.txt` after `walks
//!    --text`, `lineage.parquet` after `distort --carry-from`), said on stderr and listed in the manifest's
//!    `removed`, so that the folder never mixes this run's outputs with an earlier run's;
//! 7. the outputs' sizes and hashes, the total time and the manifest (`<name>.manifest.json`, written last,
//!    atomically) vouch for them.
//!
//! When `run` or the manifest fails, the outputs the stage had already renamed into place are removed again
//! (its old manifest went with the first of them), so the run folder never holds outputs no manifest vouches
//! for, and a rerun redoes the stage; a panic does the same while it unwinds ([`crate::store::StageGuard`]). A run that fails
//! removes nothing else: step 6 comes only after `run` succeeded and every output is in place.
//!
//! Inputs inside the run folder are recorded relative to it ([`FileRef::in_run`]), those outside as the command
//! was given them: a moved folder's manifests name its own files, a copy's the copy's. A stage may be skipped
//! ([`is_fresh`]) only when its manifest lists exactly what this invocation reads ([`reads`]: every declared
//! input, the files its flags name included), each unchanged, and its outputs are intact — so a new `--dump`
//! into an old run folder reruns extract, never publishes the old benchmark.
//!
//! `sword <name>` (the `cli` module beside this one) and `sword run` (the `pipeline` module) both end in
//! [`execute`].

use crate::core::error::{Error, Result};
use crate::core::progress;
use crate::store::layout::Artifact;
use crate::store::{check_input, AtomicFile, FileRef, InputName, Manifest, Reads, RunDir};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// A stage without settings (its flags are all [`Stage::Args`]).
#[derive(
    Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize, clap::Args,
)]
#[serde(deny_unknown_fields)]
pub struct NoSettings {}

/// How a stage reads one of its inputs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input {
    /// An artifact of the run folder that its stage's manifest must vouch for (size and hash as listed; with
    /// `--force` it is only hashed). Checked and recorded before `run`.
    Vouched(Artifact),
    /// An artifact of the run folder read as it is, whoever wrote it (a `sword.parquet` downloaded elsewhere):
    /// hashed and recorded before `run`; a missing file is an I/O error naming it.
    Hashed(Artifact),
    /// [`Input::Hashed`], when the file is there.
    HashedIfPresent(Artifact),
    /// An artifact the stage reads only when it is there, and takes itself ([`Context::optional_input`]),
    /// vouched for like [`Input::Vouched`] (distort's embeddings: the NPY form, else the word2vec text).
    Optional(Artifact),
    /// A file outside the run folder, given on the command line (an edge list, a batch output file): hashed and
    /// recorded, under the path as given, before `run`.
    File(PathBuf),
    /// A file given on the command line that `run` hashes and records itself, when it reads it (extract's
    /// dump, hashed beside the join; distort's carried benchmark, recorded once it is known to be one).
    /// [`execute`] leaves it alone; freshness ([`is_fresh`]) requires the manifest to list it, so that a run
    /// naming another file (a new dump into an old run folder) is never skipped.
    ReadByRun(PathBuf),
}

impl Input {
    /// The run-folder artifact, if this is one.
    pub fn artifact(&self) -> Option<&Artifact> {
        match self {
            Input::Vouched(a)
            | Input::Hashed(a)
            | Input::HashedIfPresent(a)
            | Input::Optional(a) => Some(a),
            Input::File(_) | Input::ReadByRun(_) => None,
        }
    }
}

/// A stage of the pipeline. Implemented by a unit struct per stage (`Extract`, `Graph`, ...); see the module
/// documentation for what happens around [`Stage::run`].
pub trait Stage: Send + Sync + 'static {
    /// Subcommand, manifest (`<NAME>.manifest.json`) and config file (`pipeline/<NAME>.toml`) name: one of the
    /// stage names of [`crate::store::layout`].
    const NAME: &'static str;
    /// Whether `sword <NAME>` takes `--config FILE` (a TOML table of [`Stage::Settings`]' keys, bare or under
    /// `[<NAME>]`).
    const CONFIG_FILE: bool = true;
    /// Whether `sword <NAME>` takes `--force` (accept inputs whose manifests do not vouch for them): stages
    /// with [`Input::Vouched`] or [`Input::Optional`] inputs.
    const FORCE: bool = true;

    /// The settings: TOML keys and flags from one definition; recorded in the manifest (see
    /// [`Stage::identity`]).
    ///
    /// Every field that is also a flag carries `#[arg(long, required = false)]` and no clap default, so that a
    /// flag overrides the file's value only when it is given (the `cli` module loads the file, then applies
    /// the flags with `update_from_arg_matches`); a boolean flag is `#[arg(long, action = ArgAction::Set,
    /// num_args = 0, default_missing_value = "true", required = false)]` for the same reason (a plain `bool`
    /// flag would reset the file's `true`). Fields that are not flags are `#[arg(skip)]`.
    type Settings: serde::Serialize
        + serde::de::DeserializeOwned
        + Default
        + Clone
        + std::fmt::Debug
        + clap::Args
        + clap::FromArgMatches
        + Send
        + Sync;
    /// Flags that are not settings: what to read from outside the run folder, modes of the command.
    type Args: clap::Args + clap::FromArgMatches + Default + Clone + std::fmt::Debug + Send + Sync;
    /// What `run` hands to [`Stage::done`] besides the manifest (most stages: `()`).
    type Outcome;

    /// The inputs, in the order the manifest lists them, of a stage whose inputs do not depend on its settings
    /// or flags (else it overrides [`Stage::inputs`]).
    const READS: &'static [Input] = &[];
    /// The artifacts `run` writes into the run folder, in the order the manifest lists them, of a stage whose
    /// outputs do not depend on its settings or flags (else it overrides [`Stage::outputs`]).
    const WRITES: &'static [Artifact] = &[];

    /// The artifacts that only some runs write, as a setting or flag asks (`walks --text`'s `walks.txt`,
    /// `distort --carry-from`'s `lineage.parquet`). With [`Stage::WRITES`], every artifact the stage may ever
    /// write into the run folder: [`Stage::outputs`] names only declared ones (else an internal error, exit 1),
    /// and after a successful run [`execute`] removes each declared artifact this run did not write, so that
    /// what an earlier run with other flags left does not stay beside this run's outputs as if it described
    /// them.
    const MAY_WRITE: &'static [Artifact] = &[];

    /// The inputs, in the order the manifest lists them: [`Stage::READS`] by default.
    fn inputs(&self, settings: &Self::Settings, args: &Self::Args) -> Vec<Input> {
        let _ = (settings, args);
        Self::READS.to_vec()
    }

    /// The artifacts `run` writes into the run folder, in the order the manifest lists them
    /// ([`Stage::WRITES`] by default; a stage that overrides this declares the artifacts only some runs write in
    /// [`Stage::MAY_WRITE`]). All must exist when `run` returns.
    fn outputs(&self, settings: &Self::Settings, args: &Self::Args) -> Vec<Artifact> {
        let _ = (settings, args);
        Self::WRITES.to_vec()
    }

    /// Check the settings and flags before anything is locked or read (exit code 2). Called on every path
    /// (`sword <NAME>`, `sword run`, `sword embed`, the library's [`execute`]).
    fn validate(&self, settings: &Self::Settings, args: &Self::Args) -> Result<()> {
        let _ = (settings, args);
        Ok(())
    }

    /// Bring values given on the command line into their canonical form (e.g. split a list given as one
    /// space-separated word) before validation and the manifest.
    fn normalise(&self, settings: &mut Self::Settings) {
        let _ = settings;
    }

    /// The stage's config as the manifest records it and freshness compares it: by default the settings as
    /// JSON. (A stage whose identity needs what it reads sets `Context::manifest().config` in `run`.)
    fn identity(&self, settings: &Self::Settings, args: &Self::Args) -> serde_json::Value {
        let _ = args;
        serde_json::to_value(settings).unwrap_or_default()
    }

    /// The seed the manifest records, for stages that draw random numbers.
    fn seed(&self, settings: &Self::Settings) -> Option<u64> {
        let _ = settings;
        None
    }

    /// A mode of the command that is not a run of the stage (a benchmark that writes nothing, one shard of a
    /// split run): handled here instead of [`execute`], which then does not run. Default: none.
    fn other_mode(
        &self,
        out: &Path,
        settings: &Self::Settings,
        args: &Self::Args,
    ) -> Option<Result<()>> {
        let _ = (out, settings, args);
        None
    }

    /// The work: read the inputs, write the outputs through `cx`, fill in the manifest's counts and extras.
    fn run(
        &self,
        cx: &mut Context,
        settings: &Self::Settings,
        args: &Self::Args,
    ) -> Result<Self::Outcome>;

    /// After a successful `sword <NAME>` (not inside `sword run`): by default one log line from
    /// [`Stage::summary`]. A stage that prints a result or turns an incomplete one into an exit code does it
    /// here, after its outputs and manifest are in place.
    fn done(
        &self,
        out: &Path,
        manifest: &Manifest,
        outcome: Self::Outcome,
        args: &Self::Args,
    ) -> Result<()> {
        let _ = (outcome, args);
        progress::log(self.summary(out, manifest));
        Ok(())
    }

    /// One line saying what the stage made (logged after `sword <NAME>`).
    fn summary(&self, out: &Path, manifest: &Manifest) -> String;
}

/// The run folder as one stage sees it while it runs: its inputs, its outputs, the manifest being built.
pub struct Context {
    run: RunDir,
    stage: &'static str,
    force: bool,
    inputs: Vec<Input>,
    outputs: Vec<Artifact>,
    manifest: Manifest,
    started: Instant,
    lap: Instant,
    threads: usize,
}

impl Context {
    /// The run folder.
    pub fn dir(&self) -> &Path {
        self.run.dir()
    }

    /// The run folder's handle: the one way to write into it. A stage writes its declared outputs through
    /// [`Context::create`] and [`Context::write`]; a writer that needs the handle itself (a file another
    /// module names, several renamed together) takes it here, and [`execute`] still checks afterwards that
    /// exactly the declared outputs were written.
    pub fn run_dir(&self) -> &RunDir {
        &self.run
    }

    /// The worker threads the stage runs on: those of the thread pool [`execute`] was called in (`-j N`; all
    /// cores by default), read once for the run. No output depends on it; a stage sizes its queues by it and
    /// records it.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// The path of an artifact in the run folder.
    pub fn path(&self, a: &Artifact) -> PathBuf {
        self.run.path(a.file)
    }

    /// The manifest being built (config, seed and the declared inputs are filled in; outputs, the total time and
    /// the file are added after `run`).
    pub fn manifest(&mut self) -> &mut Manifest {
        &mut self.manifest
    }

    /// Set a count.
    pub fn count(&mut self, key: &str, value: u64) {
        self.manifest.counts.insert(key.to_string(), value);
    }

    /// Set a reject count (records skipped or refused, by reason).
    pub fn reject(&mut self, key: &str, value: u64) {
        self.manifest.rejects.insert(key.to_string(), value);
    }

    /// Record `seconds` as the timing of `phase`.
    pub fn timing(&mut self, phase: &str, seconds: f64) {
        self.manifest.timings.insert(phase.to_string(), seconds);
    }

    /// Record the time since the previous lap (or the start of `run`) as the timing of `phase`.
    pub fn lap(&mut self, phase: &str) {
        let now = Instant::now();
        self.timing(phase, now.duration_since(self.lap).as_secs_f64());
        self.lap = now;
    }

    /// Take an [`Input::Optional`] artifact: `None` when it is not there; otherwise [`Context::input`].
    pub fn optional_input(&mut self, a: &Artifact) -> Result<Option<PathBuf>> {
        if !self.path(a).exists() && self.declared_optional(a)? {
            return Ok(None);
        }
        self.input(a).map(Some)
    }

    /// Take an [`Input::Optional`] artifact the stage needs now (another optional input it read calls for it):
    /// checked against its stage's manifest like a vouched input (only hashed with `--force`; missing, stale or
    /// corrupt: exit code 3), recorded, and its path returned.
    pub fn input(&mut self, a: &Artifact) -> Result<PathBuf> {
        self.declared_optional(a)?;
        let r = check_input(self.run.dir(), a.stage, a.file, self.force)?;
        self.manifest.inputs.push(r);
        Ok(self.path(a))
    }

    fn declared_optional(&self, a: &Artifact) -> Result<bool> {
        if self.inputs.contains(&Input::Optional(*a)) {
            return Ok(true);
        }
        Err(Error::internal(format!(
            "stage {} reads {}, which it does not declare as an optional input",
            self.stage, a.file
        )))
    }

    fn declared_output(&self, a: &Artifact) -> Result<()> {
        if !self.outputs.contains(a) {
            return Err(Error::internal(format!(
                "stage {} writes {}, which it does not declare as an output",
                self.stage, a.file
            )));
        }
        Ok(())
    }

    /// Start writing a declared output atomically (it appears under its name when committed).
    pub fn create(&self, a: &Artifact) -> Result<AtomicFile> {
        self.declared_output(a)?;
        self.run.create(a.file)
    }

    /// Write a declared output atomically with the bytes `f` produces.
    pub fn write(
        &self,
        a: &Artifact,
        f: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
    ) -> Result<()> {
        let mut file = self.create(a)?;
        let path = file.path().to_path_buf();
        f(&mut file).map_err(|e| Error::io(path, e))?;
        file.commit()
    }

    /// Whether an input the stage read comes from an incomplete build (a dump that ends early): the outputs
    /// then say so too (the manifest inherits it by itself, see [`Manifest::write`]).
    pub fn inputs_incomplete(&self) -> Vec<String> {
        self.manifest.incomplete_inputs(self.run.dir())
    }
}

/// Run `stage` in the run folder `dir` with `settings` and `args` (see the module documentation for the
/// steps): the folder is opened ([`RunDir::open`]) once the settings are accepted. Returns the manifest
/// written and what `run` returned.
pub fn execute<S: Stage>(
    stage: &S,
    dir: &Path,
    settings: &S::Settings,
    args: &S::Args,
    force: bool,
) -> Result<(Manifest, S::Outcome)> {
    stage.validate(settings, args)?;
    let run = RunDir::open(dir)?;
    run_stage(stage, &run, settings, args, force)
}

/// [`execute`] in a run folder already open (`sword run`, `sword embed`: one handle for every stage).
pub fn execute_in<S: Stage>(
    stage: &S,
    run: &RunDir,
    settings: &S::Settings,
    args: &S::Args,
    force: bool,
) -> Result<(Manifest, S::Outcome)> {
    stage.validate(settings, args)?;
    run_stage(stage, run, settings, args, force)
}

/// The worker threads of the rayon pool the caller runs in (`-j N`; all cores by default): the one place the
/// pool is asked. A [`Context`] reads it once for its stage ([`Context::threads`]); the modes a stage runs
/// outside a context (extract's `--decode-only` and `--shard`) read it here. The layers below take it as a
/// parameter.
pub fn pool_threads() -> usize {
    rayon::current_num_threads()
}

fn run_stage<S: Stage>(
    stage: &S,
    run: &RunDir,
    settings: &S::Settings,
    args: &S::Args,
    force: bool,
) -> Result<(Manifest, S::Outcome)> {
    let dir = run.dir();
    let outputs = stage.outputs(settings, args);
    let stale = not_written::<S>(&outputs)?;
    let guard = run.begin_stage(S::NAME)?;
    let mut manifest = Manifest::new(S::NAME);
    manifest.config = stage.identity(settings, args);
    manifest.seed = stage.seed(settings);
    let inputs = stage.inputs(settings, args);
    for input in &inputs {
        match input {
            Input::Vouched(a) => manifest
                .inputs
                .push(check_input(dir, a.stage, a.file, force)?),
            Input::Hashed(a) => manifest.inputs.push(FileRef::of(&dir.join(a.file))?),
            Input::HashedIfPresent(a) => {
                let p = dir.join(a.file);
                if p.exists() {
                    manifest.inputs.push(FileRef::of(&p)?);
                }
            }
            Input::File(p) => manifest.inputs.push(FileRef::of(p)?),
            Input::Optional(_) | Input::ReadByRun(_) => {}
        }
    }
    let now = Instant::now();
    let mut cx = Context {
        run: run.clone(),
        stage: S::NAME,
        force,
        inputs,
        outputs,
        manifest,
        started: now,
        lap: now,
        threads: pool_threads(),
    };
    let result = stage
        .run(&mut cx, settings, args)
        .and_then(|outcome| finish(cx, &stale).map(|m| (m, outcome)));
    if result.is_err() {
        let removed = run.remove_outputs();
        if removed > 0 {
            progress::log(format!(
                "{}: failed; removed the {removed} output(s) it had put in place (no manifest vouches for them)",
                S::NAME
            ));
        }
    }
    drop(guard);
    result
}

/// [`execute`] as a library call: the stage's value is its default, inputs must be vouched for (no `--force`),
/// the manifest is returned.
pub fn run<S: Stage + Default>(
    dir: &Path,
    settings: &S::Settings,
    args: &S::Args,
) -> Result<Manifest> {
    execute(&S::default(), dir, settings, args, false).map(|(m, _)| m)
}

/// The artifacts the stage declares ([`Stage::WRITES`], [`Stage::MAY_WRITE`]) that a run writing `outputs`
/// does not write; an output it does not declare is an internal error.
fn not_written<S: Stage>(outputs: &[Artifact]) -> Result<Vec<Artifact>> {
    let declared: Vec<Artifact> = S::WRITES.iter().chain(S::MAY_WRITE).copied().collect();
    if let Some(a) = outputs.iter().find(|a| !declared.contains(a)) {
        return Err(Error::internal(format!(
            "stage {} writes {}, which neither its WRITES nor its MAY_WRITE declares",
            S::NAME,
            a.file
        )));
    }
    Ok(declared
        .into_iter()
        .filter(|a| !outputs.contains(a))
        .collect())
}

/// After a successful `run`: every declared output must be there; the declared artifacts this run did not write
/// (`stale`) are removed and listed; every output listed with its size and hash, the total time, the manifest
/// written.
fn finish(mut cx: Context, stale: &[Artifact]) -> Result<Manifest> {
    // Written by this run through the handle, not merely there: an output an earlier run left would pass an
    // existence check.
    let committed = cx.run.committed();
    for a in &cx.outputs {
        if !committed.contains(&cx.path(a)) {
            return Err(Error::internal(format!(
                "stage {} did not write its output {}",
                cx.stage, a.file
            )));
        }
    }
    if let Some(p) = committed
        .iter()
        .find(|p| !cx.outputs.iter().any(|a| cx.path(a) == **p))
    {
        return Err(Error::internal(format!(
            "stage {} wrote {}, which it does not declare as an output",
            cx.stage,
            p.display()
        )));
    }
    // Before the manifest: if a removal fails, the stage fails and its new outputs go (a rerun tries again);
    // no manifest vouches for the file meanwhile (the old one went with the first output renamed into place).
    // The manifest's atomic write makes the unlink durable with it (the same folder, synced).
    for a in stale {
        if cx.run.remove(a.file)? {
            progress::log(format!(
                "{}: removed {}, which an earlier run wrote and this one did not (it described outputs that \
                 are gone)",
                cx.stage, a.file
            ));
            cx.manifest.removed.push(a.file.to_string());
        }
    }
    // Inputs inside the run folder are named relative to it (a moved folder's manifest still names its own
    // files, a copy's the copy's); the others as the command was given them. `run` and `execute` hashed them
    // under the paths they opened.
    let dir = cx.dir().to_path_buf();
    for r in &mut cx.manifest.inputs {
        *r = r.clone().relative_to(&dir);
    }
    let names: Vec<&str> = cx.outputs.iter().map(|a| a.file).collect();
    cx.manifest.add_outputs_of(&cx.run, &names)?;
    cx.manifest
        .timings
        .insert("total".into(), cx.started.elapsed().as_secs_f64());
    cx.manifest.write(&cx.run)?;
    Ok(cx.manifest)
}

/// What a run of `stage` in `dir` with `settings` and `args` reads, as its manifest would name it: the
/// vouched and hashed artifacts, an artifact hashed when present that is there now, the files given on the
/// command line (outside the folder as given, inside it relative to it) as required; the optional artifacts as
/// optional (distort takes the NPY embeddings or else the text form).
pub fn reads<S: Stage>(stage: &S, dir: &Path, settings: &S::Settings, args: &S::Args) -> Reads {
    let mut r = Reads {
        required: Vec::new(),
        optional: Vec::new(),
    };
    let artifact = |a: &Artifact| InputName {
        in_run: true,
        path: a.file.to_string(),
    };
    for input in stage.inputs(settings, args) {
        match &input {
            Input::Vouched(a) | Input::Hashed(a) => r.required.push(artifact(a)),
            Input::HashedIfPresent(a) if dir.join(a.file).exists() => r.required.push(artifact(a)),
            Input::HashedIfPresent(_) => {}
            Input::Optional(a) => r.optional.push(artifact(a)),
            Input::File(p) | Input::ReadByRun(p) => r.required.push(InputName::of(dir, p)),
        }
    }
    r
}

/// Whether a run of `stage` in `dir` with `settings` and `args` may be skipped: its manifest was made with the
/// same identity ([`Stage::identity`]), from exactly the inputs this run reads ([`reads`]), each unchanged, and
/// its outputs are as it lists them ([`crate::store::is_fresh`]).
pub fn is_fresh<S: Stage>(stage: &S, dir: &Path, settings: &S::Settings, args: &S::Args) -> bool {
    crate::store::is_fresh(
        dir,
        S::NAME,
        &stage.identity(settings, args),
        &reads(stage, dir, settings, args),
    )
}

/// The stages whose artifacts `inputs` names (each once, in order): what a stage depends on.
pub fn producers(inputs: &[Input]) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for a in inputs.iter().filter_map(Input::artifact) {
        if !out.contains(&a.stage) {
            out.push(a.stage);
        }
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) const IN: Artifact = Artifact {
        file: "in.txt",
        stage: "maker",
    };
    pub(crate) const A: Artifact = Artifact {
        file: "a.txt",
        stage: "toy",
    };
    const B: Artifact = Artifact {
        file: "sub/b.txt",
        stage: "toy",
    };
    const C: Artifact = Artifact {
        file: "c.txt",
        stage: "toy",
    };
    const D: Artifact = Artifact {
        file: "d.txt",
        stage: "toy",
    };

    /// A stage for the contract's own tests: reads `in.txt`, writes `a.txt` and `sub/b.txt` (and `d.txt` with
    /// `--mode extra`), or misbehaves as `--mode` says.
    #[derive(Clone, Copy, Debug, Default)]
    pub(crate) struct Toy;

    #[derive(
        Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize, clap::Args,
    )]
    #[serde(default, deny_unknown_fields)]
    pub(crate) struct ToySettings {
        /// A number.
        #[arg(long, required = false)]
        pub(crate) k: u32,
        /// A switch.
        #[arg(long, action = clap::ArgAction::Set, num_args = 0, default_missing_value = "true", required = false)]
        pub(crate) on: bool,
    }

    #[derive(Clone, Debug, Default, clap::Args)]
    pub(crate) struct ToyArgs {
        /// `ok`, `extra` (writes d.txt too), `fail` (after writing a.txt), `undeclared` (writes c.txt),
        /// `unlisted` (names c.txt as an output), `forget` (writes only a.txt).
        #[arg(long, default_value = "ok")]
        pub(crate) mode: String,
    }

    impl Stage for Toy {
        const NAME: &'static str = "toy";
        type Settings = ToySettings;
        type Args = ToyArgs;
        type Outcome = u32;

        fn inputs(&self, _: &ToySettings, _: &ToyArgs) -> Vec<Input> {
            vec![Input::Vouched(IN)]
        }

        const WRITES: &'static [Artifact] = &[A, B];
        const MAY_WRITE: &'static [Artifact] = &[D];

        fn outputs(&self, _: &ToySettings, args: &ToyArgs) -> Vec<Artifact> {
            let mut v = Self::WRITES.to_vec();
            match args.mode.as_str() {
                "extra" => v.push(D),
                "unlisted" => v.push(C),
                _ => {}
            }
            v
        }

        fn validate(&self, s: &ToySettings, _: &ToyArgs) -> Result<()> {
            if s.k == 13 {
                return Err(Error::Config("k must not be 13".into()));
            }
            Ok(())
        }

        fn run(&self, cx: &mut Context, s: &ToySettings, args: &ToyArgs) -> Result<u32> {
            let input = std::fs::read(cx.path(&IN)).map_err(|e| Error::io(cx.path(&IN), e))?;
            cx.write(&A, |w| w.write_all(&input))?;
            match args.mode.as_str() {
                "fail" => return Err(Error::Config("failed after a.txt".into())),
                "undeclared" => cx.write(&C, |w| w.write_all(b"c"))?,
                "forget" => return Ok(0),
                "extra" => cx.write(&D, |w| w.write_all(b"d"))?,
                _ => {}
            }
            cx.write(&B, |w| write!(w, "{}", s.k))?;
            cx.count("bytes", input.len() as u64);
            cx.lap("work");
            Ok(s.k + 1)
        }

        fn summary(&self, _: &Path, m: &Manifest) -> String {
            format!("toy: {} bytes", m.counts["bytes"])
        }
    }

    /// A run folder whose `in.txt` the manifest of `maker` vouches for.
    pub(crate) fn folder() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(IN.file), b"hello").unwrap();
        let mut m = Manifest::new("maker");
        m.add_outputs(dir.path(), &[IN.file]).unwrap();
        m.write(&RunDir::open(dir.path()).unwrap()).unwrap();
        dir
    }

    fn args(mode: &str) -> ToyArgs {
        ToyArgs { mode: mode.into() }
    }

    /// A toy run in `d` with the default settings: its manifest.
    fn runs(d: &Path, mode: &str, force: bool) -> Manifest {
        execute(&Toy, d, &ToySettings::default(), &args(mode), force)
            .unwrap()
            .0
    }

    /// The error of a toy run in `d` with the default settings that must fail.
    fn fails(d: &Path, mode: &str, force: bool) -> Error {
        execute(&Toy, d, &ToySettings::default(), &args(mode), force)
            .map(|_| ())
            .unwrap_err()
    }

    fn output_names(m: &Manifest) -> Vec<&str> {
        m.outputs.iter().map(|o| o.path.as_str()).collect()
    }

    #[test]
    fn a_run_records_inputs_outputs_settings_counts_and_the_total_time() {
        let dir = folder();
        let d = dir.path();
        let s = ToySettings { k: 7, on: true };
        let (m, outcome) = execute(&Toy, d, &s, &args("ok"), false).unwrap();
        assert_eq!(outcome, 8);
        assert_eq!(std::fs::read(d.join("a.txt")).unwrap(), b"hello");
        assert_eq!(std::fs::read(d.join("sub/b.txt")).unwrap(), b"7");
        let on_disk = Manifest::read(&Manifest::path_in(d, "toy")).unwrap();
        for m in [&m, &on_disk] {
            assert_eq!(m.config, serde_json::json!({"k": 7, "on": true}));
            assert_eq!(m.inputs.len(), 1);
            assert!(m.inputs[0].path.ends_with("in.txt"), "{:?}", m.inputs);
            assert_eq!(output_names(m), ["a.txt", "sub/b.txt"]);
            assert_eq!(m.counts["bytes"], 5);
            assert!(m.timings.contains_key("total") && m.timings.contains_key("work"));
        }
        // The next stage may take the outputs: the manifest vouches for them.
        check_input(d, "toy", "a.txt", false).unwrap();
    }

    #[test]
    fn a_failed_run_leaves_no_output_and_no_manifest_and_bad_settings_touch_nothing() {
        let dir = folder();
        let d = dir.path();
        runs(d, "ok", false);
        let e = fails(d, "fail", false);
        assert_eq!(e.exit_code(), 2, "{e}");
        // The new a.txt went again, and the old manifest went with the first rename: nothing is vouched for.
        assert!(!d.join("a.txt").exists());
        assert!(!Manifest::path_in(d, "toy").exists());
        assert!(
            d.join("sub/b.txt").exists(),
            "an output this run did not replace stays"
        );
        assert!(check_input(d, "toy", "sub/b.txt", false).is_err());
        // Settings refused before the lock and the inputs: nothing is written or removed.
        runs(d, "ok", false);
        let bad = ToySettings { k: 13, on: false };
        let e = execute(&Toy, d, &bad, &args("ok"), false).unwrap_err();
        assert_eq!(e.exit_code(), 2, "{e}");
        check_input(d, "toy", "a.txt", false).unwrap();
    }

    /// Every file under `d` (relative path, bytes).
    fn files(d: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
        let mut out = std::collections::BTreeMap::new();
        let mut todo = vec![d.to_path_buf()];
        while let Some(dir) = todo.pop() {
            for e in std::fs::read_dir(&dir).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    todo.push(p);
                } else {
                    let rel = p.strip_prefix(d).unwrap().to_string_lossy().into_owned();
                    out.insert(rel, std::fs::read(&p).unwrap());
                }
            }
        }
        out
    }

    #[test]
    fn a_run_removes_the_declared_outputs_it_did_not_write_and_a_failed_run_removes_none() {
        let dir = folder();
        let d = dir.path();
        let m = runs(d, "extra", false);
        assert_eq!(output_names(&m), ["a.txt", "sub/b.txt", "d.txt"]);
        let raw: serde_json::Value =
            serde_json::from_slice(&std::fs::read(Manifest::path_in(d, "toy")).unwrap()).unwrap();
        assert!(raw.get("removed").is_none(), "nothing removed: no key");
        // A run that does not write d.txt removes the one the first run left, and its manifest says so.
        let m = runs(d, "ok", false);
        assert!(!d.join("d.txt").exists());
        assert_eq!(output_names(&m), ["a.txt", "sub/b.txt"]);
        assert_eq!(m.removed, ["d.txt"]);
        let on_disk = Manifest::read(&Manifest::path_in(d, "toy")).unwrap();
        assert_eq!(on_disk.removed, ["d.txt"]);
        assert!(
            runs(d, "ok", false).removed.is_empty(),
            "nothing left to remove"
        );

        // Failures remove nothing of an earlier run's beyond what they replaced. Refused after the lock (an input
        // changed) before writing anything: every file is as the successful run left it, its manifest too.
        runs(d, "extra", false);
        let before = files(d);
        std::fs::write(d.join(IN.file), b"changed").unwrap();
        assert_eq!(fails(d, "ok", false).exit_code(), 3);
        std::fs::write(d.join(IN.file), b"hello").unwrap();
        assert_eq!(files(d), before);
        // Failed after writing a.txt (bad input; an internal error): the new a.txt goes again, the old manifest
        // went with it (as for every failure), d.txt stays.
        for mode in ["fail", "undeclared"] {
            runs(d, "extra", false);
            fails(d, mode, false);
            assert_eq!(std::fs::read(d.join("d.txt")).unwrap(), b"d", "{mode}");
            assert!(d.join("sub/b.txt").exists(), "{mode}");
            assert!(!d.join("a.txt").exists(), "{mode}");
            assert!(!Manifest::path_in(d, "toy").exists(), "{mode}");
        }
    }

    #[test]
    fn a_stage_that_breaks_its_declarations_is_an_internal_error() {
        let dir = folder();
        let d = dir.path();
        for mode in ["undeclared", "unlisted", "forget"] {
            let e = fails(d, mode, false);
            assert_eq!(e.exit_code(), 1, "{mode}: {e}");
            assert!(e.to_string().contains("toy"), "{e}");
            assert!(
                !d.join("a.txt").exists() && !d.join("c.txt").exists(),
                "{mode}"
            );
            assert!(!Manifest::path_in(d, "toy").exists());
        }
    }

    #[test]
    fn an_output_an_earlier_run_left_does_not_count_as_written() {
        let dir = folder();
        let d = dir.path();
        runs(d, "ok", false);
        assert!(d.join("sub/b.txt").exists());
        // `forget` writes a.txt only: b.txt is still there, from the first run, but this run did not write it.
        let e = fails(d, "forget", false);
        assert_eq!(e.exit_code(), 1, "{e}");
        assert!(
            e.to_string().contains("did not write its output sub/b.txt"),
            "{e}"
        );
        assert!(!d.join("a.txt").exists());
        assert!(!Manifest::path_in(d, "toy").exists());
    }

    #[test]
    fn inputs_are_vouched_for_unless_forced() {
        let dir = folder();
        let d = dir.path();
        std::fs::write(d.join(IN.file), b"changed").unwrap();
        let e = fails(d, "ok", false);
        assert_eq!(e.exit_code(), 3, "{e}");
        assert!(!d.join("a.txt").exists());
        let m = runs(d, "ok", true);
        assert_eq!(m.inputs[0].size, 7);
        std::fs::remove_file(d.join(IN.file)).unwrap();
        let e = fails(d, "ok", true);
        assert!(e.to_string().contains("in.txt"), "{e}");
    }

    #[test]
    fn producers_name_each_stage_once_in_order() {
        let inputs = [
            Input::Vouched(crate::store::layout::TRIPLES),
            Input::File("x".into()),
            Input::Optional(crate::store::layout::EMBEDDINGS_NPY),
            Input::Vouched(crate::store::layout::PROPERTIES),
            Input::Optional(crate::store::layout::NODES),
        ];
        assert_eq!(producers(&inputs), ["extract", "train", "graph"]);
    }
}
