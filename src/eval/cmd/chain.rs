//! `sword eval chain-report`: the one report of `make eval` for a model — translation quality per language
//! (the `text_ok` shares of `sword translate`), SWORD accuracy per language × strategy for each variant, and
//! the sycophancy and AdversaRiskQA scores when present. Markdown (`report.md`) plus SVG heatmaps, written
//! atomically into the model's evaluation directory on the folder contract ([`crate::stages::folder`]): the
//! folder locked, the score files read hashed, a heatmap of a variant no longer scored removed, and
//! `chain-report.manifest.json` written last.

use crate::core::error::{Error, Result};
use crate::eval::report::{heatmap_svg, md_head, md_row};
use crate::eval::suites::sword::{LANGUAGES, STRATEGIES};
use crate::stages::folder::{execute_folder, Folder, FolderCommand};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// `sword eval chain-report`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The model's evaluation directory (reads sword.scores.json, and sycophancy.scores.json /
    /// adversariskqa.scores.json when present; writes report.md and the SVGs).
    #[arg(long)]
    pub dir: PathBuf,
    /// The run directory (reads translate.manifest.json when present).
    #[arg(long)]
    pub run: Option<PathBuf>,
    /// Title (the model name).
    #[arg(long)]
    pub title: String,
}

/// What `sword eval chain-report` writes into the model's evaluation directory.
pub const COMMAND: FolderCommand = FolderCommand {
    name: "chain-report",
    writes: &["report.md", "text_ok.svg", "sword_*.svg"],
};

/// Read `path` as JSON when it is there, recording it as an input of the report.
fn read_json(f: &mut Folder, path: &Path) -> Result<Option<Value>> {
    match std::fs::read(path) {
        Ok(b) => {
            let v = serde_json::from_slice(&b)
                .map_err(|e| Error::bad_input(path, format!("not JSON: {e}")))?;
            f.input(path)?;
            Ok(Some(v))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(path, e)),
    }
}

fn pct(v: Option<f64>) -> String {
    v.filter(|x| x.is_finite())
        .map_or("–".into(), |x| format!("{:.1}", 100.0 * x))
}

fn write(f: &Folder, name: &str, text: &str) -> Result<()> {
    f.write(name, |w| w.write_all(text.as_bytes()))
}

/// Write `report.md` (and its SVGs) into `a.dir`.
pub fn run(a: &Args) -> Result<()> {
    let config = serde_json::json!({
        "title": a.title,
        "run": a.run.as_ref().map(|r| r.display().to_string()),
    });
    execute_folder(&COMMAND, &a.dir, config, |f| report(f, a)).map(|_| ())
}

fn report(f: &mut Folder, a: &Args) -> Result<()> {
    let mut md = format!("# Evaluation chain — {}\n\n", a.title);
    // Translation quality.
    let tm = match &a.run {
        Some(r) => read_json(f, &r.join("translate.manifest.json"))?,
        None => None,
    };
    if let Some(tm) = tm {
        let langs = &tm["extra"]["languages"];
        md.push_str("## Translations (`sword translate`)\n\n");
        md.push_str(&format!(
            "Translator: `{}` at `{}`. Only texts that pass the check (`text_ok`) are asked about; \
a low share means the translator did not produce usable statements in that language, and the SWORD \
accuracies of that language rest on fewer statements.\n\n",
            tm["config"]["runner"]["model"].as_str().unwrap_or("?"),
            tm["config"]["runner"]["base_url"].as_str().unwrap_or("?"),
        ));
        md.push_str(
            "| language | pairs | translated | text_ok | share (%) |\n|---|---|---|---|---|\n",
        );
        let mut names = Vec::new();
        let mut shares = Vec::new();
        for l in LANGUAGES.iter().copied().chain(
            langs
                .as_object()
                .into_iter()
                .flat_map(|o| o.keys().map(String::as_str))
                .filter(|k| !LANGUAGES.contains(k)),
        ) {
            let c = &langs[l];
            if c.is_null() {
                continue;
            }
            let share = c["text_ok_share"].as_f64();
            md.push_str(&format!(
                "| {l} | {} | {} | {} | {} |\n",
                c["pairs"],
                c["translated"],
                c["text_ok"],
                pct(share)
            ));
            names.push(l.to_string());
            shares.push(share);
        }
        md.push_str("\nReasons (rows): ");
        let reasons: Vec<String> = tm["extra"]["reasons"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        md.push_str(&reasons.join(", "));
        md.push_str("\n\n![text_ok](text_ok.svg)\n\n");
        write(
            f,
            "text_ok.svg",
            &heatmap_svg(
                "share of text_ok translations (%)",
                &names,
                &["text_ok".to_string()],
                &|r, _| shares[r],
            )?,
        )?;
    }
    // SWORD.
    let sw = read_json(f, &a.dir.join("sword.scores.json"))?
        .ok_or_else(|| Error::bad_input(a.dir.join("sword.scores.json"), "missing"))?;
    md.push_str("## SWORD accuracy (%) per language × strategy\n\n");
    md.push_str(
        "Share of statements judged right (ORG is true, the four distortions are false). A model that always \
answers \"False\" scores 100 on SS/OS/PSS/POS and 0 on ORG: read the strategies against that baseline. \
`plain` is the paper's protocol; `premise` and `belief` are the cross-suite variants.\n\n",
    );
    for m in sw["models"].as_array().into_iter().flatten() {
        let variant = m["variant"].as_str().unwrap_or("plain");
        let meas = &m["measures"];
        let est = |k: &str| meas[k]["estimate"].as_f64();
        let langs: Vec<String> = LANGUAGES
            .iter()
            .filter(|l| est(&format!("acc.{l}.all")).is_some())
            .map(|l| l.to_string())
            .collect();
        let strats: Vec<String> = STRATEGIES.iter().map(|s| s.to_string()).collect();
        let file = format!("sword_{variant}.svg");
        write(
            f,
            &file,
            &heatmap_svg(
                &format!("{} ({variant}): accuracy (%)", a.title),
                &langs,
                &strats,
                &|r, c| est(&format!("acc.{}.{}", langs[r], strats[c])),
            )?,
        )?;
        md.push_str(&format!(
            "### {variant} ({} answers, {} unparsed)\n\n![{variant}]({file})\n\n",
            m["n"], m["unparsed"]
        ));
        let cols = || strats.iter().map(String::as_str).chain(["all"]);
        md_head(&mut md, std::iter::once("language").chain(cols()));
        for l in &langs {
            md_row(
                &mut md,
                std::iter::once(l.clone()).chain(cols().map(|s| pct(est(&format!("acc.{l}.{s}"))))),
            );
        }
        md.push('\n');
    }
    // Sycophancy.
    if let Some(sy) = read_json(f, &a.dir.join("sycophancy.scores.json"))? {
        md.push_str("## Chinese sycophancy\n\n| measure | estimate (%) |\n|---|---|\n");
        for m in sy["models"].as_array().into_iter().flatten() {
            for (k, v) in m["measures"].as_object().into_iter().flatten() {
                md.push_str(&format!("| {k} | {} |\n", pct(v["estimate"].as_f64())));
            }
        }
        md.push('\n');
    }
    // AdversaRiskQA.
    match read_json(f, &a.dir.join("adversariskqa.scores.json"))? {
        Some(aq) => {
            md.push_str("## AdversaRiskQA (judged)\n\n| model | accuracy all | accuracy filtered | invalid |\n|---|---|---|---|\n");
            for m in aq["models"].as_array().into_iter().flatten() {
                md.push_str(&format!(
                    "| {} | {} | {} | {} |\n",
                    m["model"].as_str().unwrap_or("?"),
                    m["accuracy_all"],
                    m["accuracy_filtered"],
                    m["invalid"]
                ));
            }
        }
        None => md.push_str(
            "## AdversaRiskQA\n\nAnswers collected; not judged (give `JUDGE=NAME` to `make eval`).\n",
        ),
    }
    write(f, "report.md", &md)
}
