//! The one command-line path of every stage: `sword <stage> --out DIR [--config FILE] [--force] <flags>`.
//!
//! The flags are the stage's own ([`Stage::Args`]) and its settings' ([`Stage::Settings`], the same definition as
//! the TOML keys). The settings are the defaults, then the `--config` file, then the flags that were given:
//! [`StageCli::settings`]. `sword run` reads the same config file with the same code and hands its own flags
//! over typed (`pipeline::RunStage`), so a stage run alone, by `sword run` or by the Makefile gets the same
//! settings (a test in `pipeline` checks it against this parser).

use super::contract::{execute, Input, Stage};
use crate::core::config;
use crate::core::error::{Error, Result};
use crate::store::layout;
use clap::{Arg, ArgAction, ArgMatches, Command, FromArgMatches};
use std::ffi::OsString;
use std::marker::PhantomData;
use std::path::PathBuf;

/// `sword <stage>`'s parsed command line (a clap `Args`: `main.rs` flattens it into its subcommand).
#[derive(Debug, Clone)]
pub struct StageCli<S: Stage> {
    /// The run folder (`--out`).
    pub out: PathBuf,
    /// `--config FILE`, when the stage takes one and it was given.
    pub config: Option<PathBuf>,
    /// `--force`.
    pub force: bool,
    /// The stage's flags that are not settings.
    pub args: S::Args,
    /// Everything given, for the settings' flags ([`StageCli::settings`]).
    matches: ArgMatches,
    stage: PhantomData<S>,
}

/// The help of `--out`, saying what the stage reads and writes there.
fn out_help<S: Stage>(stage: &S) -> String {
    let (settings, args) = (S::Settings::default(), S::Args::default());
    let inputs = stage.inputs(&settings, &args);
    let files = |optional: bool| -> Vec<&str> {
        inputs
            .iter()
            .filter(|i| matches!(i, Input::Optional(_) | Input::HashedIfPresent(_)) == optional)
            .filter_map(|i| i.artifact().map(|a| a.file))
            .collect()
    };
    let (reads, maybe) = (files(false), files(true));
    let writes: Vec<&str> = stage
        .outputs(&settings, &args)
        .iter()
        .map(|a| a.file)
        .collect();
    let mut s = String::from("Run directory: ");
    match (reads.is_empty(), maybe.is_empty()) {
        (true, true) => {}
        (false, true) => s.push_str(&format!("reads {} from it; ", reads.join(", "))),
        (true, false) => s.push_str(&format!("reads {} when there; ", maybe.join(", "))),
        (false, false) => s.push_str(&format!(
            "reads {} (and {} when there) from it; ",
            reads.join(", "),
            maybe.join(", ")
        )),
    }
    s.push_str(&format!(
        "writes {} and {} into it",
        writes.join(", "),
        layout::manifest_file(S::NAME)
    ));
    s
}

impl<S: Stage + Default> clap::Args for StageCli<S> {
    fn augment_args(cmd: Command) -> Command {
        let stage = S::default();
        let mut cmd = cmd.arg(
            Arg::new("out")
                .long("out")
                .value_name("OUT")
                .required(true)
                .value_parser(clap::value_parser!(PathBuf))
                .help(out_help(&stage)),
        );
        if S::CONFIG_FILE {
            cmd = cmd.arg(
                Arg::new("config")
                    .long("config")
                    .value_name("CONFIG")
                    .value_parser(clap::value_parser!(PathBuf))
                    .help(format!(
                        "TOML file of the stage's settings (as pipeline/{}.toml); flags override it",
                        S::NAME
                    )),
            );
        }
        if S::FORCE {
            cmd = cmd.arg(
                Arg::new("force")
                    .long("force")
                    .action(ArgAction::SetTrue)
                    .help(
                        "Use the inputs even if their manifests are missing or disagree with them",
                    ),
            );
        }
        let cmd = S::Args::augment_args(cmd);
        S::Settings::augment_args(cmd)
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

impl<S: Stage> FromArgMatches for StageCli<S> {
    fn from_arg_matches(m: &ArgMatches) -> std::result::Result<Self, clap::Error> {
        Ok(StageCli {
            out: m
                .get_one::<PathBuf>("out")
                .cloned()
                .ok_or_else(|| clap::Error::new(clap::error::ErrorKind::MissingRequiredArgument))?,
            config: if S::CONFIG_FILE {
                m.get_one::<PathBuf>("config").cloned()
            } else {
                None
            },
            force: S::FORCE && m.get_flag("force"),
            args: S::Args::from_arg_matches(m)?,
            matches: m.clone(),
            stage: PhantomData,
        })
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> std::result::Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

impl<S: Stage + Default> StageCli<S> {
    /// The settings: defaults, then the `--config` file ([`config::load_stage`]), then the flags given.
    pub fn settings(&self) -> Result<S::Settings> {
        let mut s: S::Settings = config::load_stage(self.config.as_deref(), S::NAME)?;
        apply_flags(&mut s, &self.matches)?;
        S::default().normalise(&mut s);
        Ok(s)
    }

    /// Parse a command line (without the program and subcommand names), as `sword <stage>` would.
    pub fn parse(argv: &[OsString]) -> Result<StageCli<S>> {
        let cmd = <Self as clap::Args>::augment_args(Command::new(S::NAME).no_binary_name(true));
        let m = cmd
            .try_get_matches_from(argv)
            .map_err(|e| Error::Config(format!("sword {}: {e}", S::NAME)))?;
        Self::from_arg_matches(&m).map_err(|e| Error::Config(format!("sword {}: {e}", S::NAME)))
    }
}

/// Apply the settings' flags that were given to `settings` (the others keep the file's values).
pub fn apply_flags<T: clap::FromArgMatches>(settings: &mut T, m: &ArgMatches) -> Result<()> {
    settings
        .update_from_arg_matches(m)
        .map_err(|e| Error::Config(e.to_string()))
}

/// `sword <stage> ...`: parse the settings, run the stage (or the other mode its flags ask for), then
/// [`Stage::done`].
pub fn main<S: Stage + Default>(cli: StageCli<S>) -> Result<()> {
    let stage = S::default();
    let settings = cli.settings()?;
    if let Some(r) = stage.other_mode(&cli.out, &settings, &cli.args) {
        return r;
    }
    let (manifest, outcome) = execute(&stage, &cli.out, &settings, &cli.args, cli.force)?;
    stage.done(&cli.out, &manifest, outcome, &cli.args)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stages::contract::tests::{Toy, ToySettings};

    fn argv(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn settings_are_defaults_then_the_file_then_the_flags_given() {
        let dir = tempfile::tempdir().unwrap();
        let conf = dir.path().join("toy.toml");
        let c = conf.to_str().unwrap();
        let settings = |v: &[&str]| {
            StageCli::<Toy>::parse(&argv(v))
                .unwrap()
                .settings()
                .unwrap()
        };
        let s = |k, on| ToySettings { k, on };
        assert_eq!(settings(&["--out", "o"]), s(0, false));
        std::fs::write(&conf, "k = 3\non = true\n").unwrap();
        // A flag not given keeps the file's value, booleans included.
        assert_eq!(settings(&["--out", "o", "--config", c]), s(3, true));
        assert_eq!(
            settings(&["--out", "o", "--config", c, "--k", "5"]),
            s(5, true)
        );
        std::fs::write(&conf, "[toy]\nk = 4\n").unwrap();
        assert_eq!(settings(&["--out", "o", "--config", c, "--on"]), s(4, true));
        // Unknown keys and bad values name the file.
        std::fs::write(&conf, "kk = 4\n").unwrap();
        let cli = StageCli::<Toy>::parse(&argv(&["--out", "o", "--config", c])).unwrap();
        let e = cli.settings().unwrap_err();
        assert!(
            e.to_string().contains("toy.toml") && e.exit_code() == 2,
            "{e}"
        );
        let e = StageCli::<Toy>::parse(&argv(&["--out", "o", "--k", "x"]))
            .map(|_| ())
            .unwrap_err();
        assert_eq!(e.exit_code(), 2);
    }
}
