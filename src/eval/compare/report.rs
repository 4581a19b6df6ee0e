//! `report.html` (one self-contained page: inline SVG and CSS, a Content-Security-Policy that forbids every
//! load, no script) and `report.md` (the same text and tables, figures linked from `figures/`), both written
//! from the tidy rows and the drawn figures only.

use super::figures::Figure;
use super::measures::{Row, MEASURES, TIER_MEASURES};
use super::table::{variants_and_models, Key, Lookup};
use crate::core::falsity::Tier;
use crate::eval::suites::sword::{LANGUAGES, STRATEGIES};
use std::fmt::Write as _;
use std::path::PathBuf;

/// What the report says about how it was made.
#[derive(Clone, Debug)]
pub struct Settings {
    pub bootstrap: usize,
    pub seed: u64,
    pub files: Vec<PathBuf>,
    /// The `sword.parquet` the falsity tiers were read from (`--benchmark`).
    pub benchmark: Option<PathBuf>,
    /// The section "Where the languages disagree" (HTML, Markdown), placed before the definitions.
    pub disagree: Option<(String, String)>,
}

/// A table of the report: caption, header, rows of cells (plain text).
#[derive(Clone, Debug, Default)]
pub struct Table {
    pub caption: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// A table without rows: `corner` heads the column of row labels, then one column per `columns`.
    fn new(
        caption: impl Into<String>,
        corner: &str,
        columns: impl IntoIterator<Item = impl ToString>,
    ) -> Table {
        Table {
            caption: caption.into(),
            header: std::iter::once(corner.to_string())
                .chain(columns.into_iter().map(|c| c.to_string()))
                .collect(),
            rows: Vec::new(),
        }
    }

    /// Append a row: its label, then its cells.
    fn push(&mut self, label: String, cells: impl IntoIterator<Item = String>) {
        self.rows
            .push(std::iter::once(label).chain(cells).collect());
    }
}

/// Percent with one decimal.
/// A share in percent with one decimal.
pub(super) fn pct(v: f64) -> String {
    format!("{:.1}", 100.0 * v)
}

/// A value with its interval in percent: `12.3 [10.1, 14.6]`; `–` when missing.
fn cell(r: Option<&Row>) -> String {
    match r.and_then(|r| r.value.map(|v| (v, r))) {
        Some((v, r)) => match (r.lo, r.hi) {
            (Some(lo), Some(hi)) => format!("{} [{}, {}]", pct(v), pct(lo), pct(hi)),
            _ => pct(v),
        },
        None => "–".into(),
    }
}

/// A value with its interval and denominator: `12.3 [10.1, 14.6] (n 40)`; `– (n 0)` without a value.
fn cell_interval_n(r: Option<&Row>) -> String {
    match r {
        Some(r) => format!("{} (n {})", cell(Some(r)), r.n.unwrap_or(0)),
        None => "–".into(),
    }
}

/// A value with its denominator: `12.3 (n 40)`.
fn cell_n(r: Option<&Row>) -> String {
    match r {
        Some(r) => match r.value {
            Some(v) => format!("{} (n {})", pct(v), r.n.unwrap_or(0)),
            None => format!("– (n {})", r.n.unwrap_or(0)),
        },
        None => "–".into(),
    }
}

/// Text escaped for HTML.
pub(super) fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Text fit for one Markdown table cell.
pub(super) fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// The headline of one model: its largest gap (strategy, best and worst language) and its effects.
struct Headline {
    model: String,
    strategy: String,
    gap: Option<Row>,
    relative: Option<Row>,
    best: Option<(String, f64)>,
    worst: Option<(String, f64)>,
    east_asian: Option<Row>,
    all_correct: Option<f64>,
    effects: [Option<Row>; 2],
    unparsed: Option<f64>,
}

fn headline(look: &Lookup, variant: &str, model: &str) -> Headline {
    let key = |measure: &'static str| Key {
        measure,
        model: Some(model),
        variant: Some(variant),
        ..Key::default()
    };
    let best_strategy = STRATEGIES
        .iter()
        .filter_map(|s| {
            look.get(Key {
                strategy: Some(s),
                ..key("gap")
            })
            .and_then(|r| r.value.map(|v| (v, *s)))
        })
        .fold(None::<(f64, &str)>, |acc, (v, s)| match acc {
            Some((a, _)) if a >= v => acc,
            _ => Some((v, s)),
        });
    let strategy = best_strategy.map_or("ORG", |(_, s)| s);
    let accs: Vec<(String, f64)> = LANGUAGES
        .iter()
        .filter_map(|l| {
            look.value(Key {
                language: Some(l),
                strategy: Some(strategy),
                ..key("accuracy")
            })
            .map(|v| (l.to_string(), v))
        })
        .collect();
    // The first language whose accuracy no later one displaces (`keep(held, next)`: the held one stays).
    let pick = |keep: fn(f64, f64) -> bool| {
        accs.iter()
            .cloned()
            .fold(None::<(String, f64)>, |a, x| match a {
                Some(ref b) if keep(b.1, x.1) => a,
                _ => Some(x),
            })
    };
    let best = pick(|held, next| held >= next);
    let worst = pick(|held, next| held <= next);
    let by_strategy = |m: &'static str| {
        look.get(Key {
            strategy: Some(strategy),
            ..key(m)
        })
        .cloned()
    };
    // Share of statements right in every language, pooled over the strategies.
    let all_correct = pooled(STRATEGIES.iter().map(|s| {
        look.get(Key {
            strategy: Some(s),
            ..key("all_languages_correct")
        })
    }));
    let unparsed = pooled(LANGUAGES.iter().map(|l| {
        look.get(Key {
            language: Some(l),
            ..key("unparsed")
        })
    }));
    Headline {
        model: model.to_string(),
        strategy: strategy.to_string(),
        gap: by_strategy("gap"),
        relative: by_strategy("gap_relative"),
        best,
        worst,
        east_asian: by_strategy("east_asian_gap"),
        all_correct,
        effects: ["effect_pss_ss", "effect_pos_os"].map(|m| look.get(key(m)).cloned()),
        unparsed,
    }
}

/// The mean of the values of the rows found, each weighted by its n (`None` without any n).
fn pooled<'r>(rows: impl IntoIterator<Item = Option<&'r Row>>) -> Option<f64> {
    let (mut sum, mut total) = (0.0, 0i64);
    for r in rows.into_iter().flatten() {
        if let (Some(v), Some(n)) = (r.value, r.n) {
            sum += v * n as f64;
            total += n;
        }
    }
    (total > 0).then(|| sum / total as f64)
}

/// Whether an effect's interval lies wholly below 0 (the plausible swap is harder), above, or spans 0.
fn verdict(r: &Option<Row>) -> String {
    match r {
        Some(Row {
            value: Some(v),
            lo: Some(lo),
            hi: Some(hi),
            ..
        }) => {
            let what = if *hi < 0.0 {
                "holds (harder)"
            } else if *lo > 0.0 {
                "reversed (easier)"
            } else {
                "not shown (interval spans 0)"
            };
            format!("{} [{}, {}] {what}", pct(*v), pct(*lo), pct(*hi))
        }
        Some(Row { value: Some(v), .. }) => format!("{} (no interval)", pct(*v)),
        _ => "–".into(),
    }
}

fn headline_table(look: &Lookup, variant: &str, models: &[String]) -> (Table, String) {
    let hs: Vec<Headline> = models.iter().map(|m| headline(look, variant, m)).collect();
    let mut t = Table::new(
        "Headline per model: the strategy with the largest cross-lingual gap, its best and worst language, the East-Asian gap on that strategy, statements right in every language, the swap effects (pooled over languages) and unparsed answers. Percent (points for differences), 95 % bootstrap intervals in brackets.",
        "model",
        [
            "largest gap (points)",
            "relative (%)",
            "strategy",
            "best",
            "worst",
            "East-Asian gap",
            "right in all languages",
            "PSS − SS",
            "POS − OS",
            "unparsed",
        ],
    );
    for h in &hs {
        t.push(
            h.model.clone(),
            [
                cell(h.gap.as_ref()),
                cell(h.relative.as_ref()),
                h.strategy.clone(),
                h.best
                    .as_ref()
                    .map_or("–".into(), |(l, v)| format!("{l} {}", pct(*v))),
                h.worst
                    .as_ref()
                    .map_or("–".into(), |(l, v)| format!("{l} {}", pct(*v))),
                cell(h.east_asian.as_ref()),
                h.all_correct.map_or("–".into(), pct),
                verdict(&h.effects[0]),
                verdict(&h.effects[1]),
                h.unparsed.map_or("–".into(), pct),
            ],
        );
    }
    let top = hs
        .iter()
        .filter_map(|h| h.gap.as_ref().and_then(|g| g.value).map(|v| (v, h)))
        .fold(None::<(f64, &Headline)>, |a, x| match a {
            Some((b, _)) if b >= x.0 => a,
            _ => Some(x),
        });
    let sentence = match top {
        Some((v, h)) => format!(
            "The largest cross-lingual gap is {:.1} points ({} % relative) between languages of {} on {} ({} against {}).",
            100.0 * v,
            h.relative.as_ref().and_then(|r| r.value).map_or("–".into(), |r| format!("{:.0}", 100.0 * r)),
            h.model,
            h.strategy,
            h.best.as_ref().map_or("–".into(), |(l, a)| format!("{l} {}", pct(*a))),
            h.worst.as_ref().map_or("–".into(), |(l, a)| format!("{l} {}", pct(*a))),
        ),
        None => "No cross-lingual gap: fewer than two languages.".into(),
    };
    (t, sentence)
}

/// A table of pairs: a row `a / b` for every pair of `items` (in order, each pair once), a column for each of
/// `cols`, the cell the value at `key(a, b, col)` with its n (figs. 4 and 5: Jaccard similarities).
fn pair_table<'k>(
    look: &Lookup,
    caption: String,
    corner: &str,
    items: &[&'k str],
    cols: &[&'k str],
    key: impl Fn(&'k str, &'k str, &'k str) -> Key<'k>,
) -> Table {
    let mut t = Table::new(caption, corner, cols);
    for (i, a) in items.iter().enumerate() {
        for b in &items[i + 1..] {
            t.push(
                format!("{a} / {b}"),
                cols.iter().map(|c| cell_n(look.get(key(a, b, c)))),
            );
        }
    }
    t
}

/// The tables behind one figure.
fn tables_for(fig: &Figure, look: &Lookup, models: &[String], langs: &[&str]) -> Vec<Table> {
    let v = fig.variant.as_str();
    let mut out = Vec::new();
    match fig.kind {
        "accuracy" | "fig2" => {
            for m in models {
                let mut t = Table::new(
                    format!("{m}: accuracy (%) [95 % interval]"),
                    "language",
                    STRATEGIES.iter().copied().chain(["distorted"]),
                );
                for l in langs {
                    let mut row = vec![l.to_string()];
                    for s in STRATEGIES {
                        row.push(cell(look.get(Key {
                            measure: "accuracy",
                            model: Some(m),
                            variant: Some(v),
                            language: Some(l),
                            strategy: Some(s),
                            ..Key::default()
                        })));
                    }
                    row.push(cell(look.get(Key {
                        measure: "accuracy_distorted",
                        model: Some(m),
                        variant: Some(v),
                        language: Some(l),
                        ..Key::default()
                    })));
                    t.rows.push(row);
                }
                out.push(t);
            }
        }
        "fig3" => {
            let nl = langs.len() as i32;
            for m in models {
                let mut t = Table::new(
                    format!(
                        "{m}: accuracy (%) by agreement level k/{nl} (n statements at that level)"
                    ),
                    "strategy / language",
                    (0..=nl).map(|k| format!("{k}/{nl}")),
                );
                // A row: `label`, then the value at `key` at each agreement level.
                let by_level = |label: String, key: Key| -> Vec<String> {
                    std::iter::once(label)
                        .chain((0..=nl).map(|a| {
                            cell_n(look.get(Key {
                                agreement: Some(a),
                                ..key
                            }))
                        }))
                        .collect()
                };
                for s in STRATEGIES {
                    let key = Key {
                        model: Some(m),
                        variant: Some(v),
                        strategy: Some(s),
                        ..Key::default()
                    };
                    t.rows.push(by_level(
                        format!("{s}: share of statements"),
                        Key {
                            measure: "agreement_share",
                            ..key
                        },
                    ));
                    for l in langs {
                        t.rows.push(by_level(
                            format!("{s} {l}"),
                            Key {
                                measure: "accuracy_by_agreement",
                                language: Some(l),
                                ..key
                            },
                        ));
                    }
                }
                out.push(t);
            }
        }
        "fig4" | "fig5" => {
            // The strategy is the last part of the file name (`fig4_<variant>_<strategy>.svg`).
            let s = fig
                .file
                .trim_end_matches(".svg")
                .rsplit('_')
                .next()
                .unwrap_or("");
            let models: Vec<&str> = models.iter().map(String::as_str).collect();
            out.push(if fig.kind == "fig4" {
                pair_table(
                    look,
                    format!("Jaccard similarity between models (%), {s} (n statements both asked)"),
                    "models",
                    &models,
                    langs,
                    |a, b, l| Key {
                        measure: "jaccard_models",
                        model: Some(a),
                        model_b: Some(b),
                        variant: Some(v),
                        language: Some(l),
                        strategy: Some(s),
                        ..Key::default()
                    },
                )
            } else {
                pair_table(
                    look,
                    format!(
                        "Jaccard similarity between languages (%), {s} (n statements asked in both)"
                    ),
                    "languages",
                    langs,
                    &models,
                    |a, b, m| Key {
                        measure: "jaccard_languages",
                        model: Some(m),
                        variant: Some(v),
                        language: Some(a),
                        language_b: Some(b),
                        strategy: Some(s),
                        ..Key::default()
                    },
                )
            });
        }
        "gap" => {
            for (measure, what) in [
                ("gap", "Cross-lingual gap (points) [95 % interval]"),
                ("gap_relative", "Relative gap (%) [95 % interval]"),
                (
                    "east_asian_gap",
                    "Western − East-Asian mean accuracy (points) [95 % interval]",
                ),
                (
                    "all_languages_correct",
                    "Statements right in every language (%) [95 % interval]",
                ),
            ] {
                let mut t = Table::new(what, "model", STRATEGIES);
                for m in models {
                    t.push(
                        m.clone(),
                        STRATEGIES.iter().map(|s| {
                            cell(look.get(Key {
                                measure,
                                model: Some(m),
                                variant: Some(v),
                                strategy: Some(s),
                                ..Key::default()
                            }))
                        }),
                    );
                }
                out.push(t);
            }
        }
        _ => {}
    }
    out
}

/// The tables of accuracy by falsity tier (`--benchmark`): the swap effects per tier for every model, then
/// per model its accuracy per distortion strategy × tier in each language and pooled. Empty without
/// tier rows.
fn tier_tables(look: &Lookup, variant: &str, models: &[String], langs: &[&str]) -> Vec<Table> {
    let has = models.iter().any(|m| {
        look.get(Key {
            measure: "effect_pss_ss_by_tier",
            model: Some(m),
            variant: Some(variant),
            tier: Some("open"),
            ..Key::default()
        })
        .is_some()
    });
    if !has {
        return Vec::new();
    }
    // The `tier` column's values, weakest first.
    let tiers = Tier::ALL.map(Tier::as_str);
    let effects = ["effect_pss_ss_by_tier", "effect_pos_os_by_tier"];
    let mut t = Table::new(
        "Swap effects by falsity tier (points, all languages pooled) [95 % interval]: does the plausible swap stay harder on the statements that are certainly false?",
        "model",
        ["PSS − SS", "POS − OS"].iter().flat_map(|e| tiers.iter().map(move |t| format!("{e} {t}"))),
    );
    for m in models {
        t.push(
            m.clone(),
            effects.iter().flat_map(|e| {
                tiers.iter().map(move |tier| {
                    verdict(
                        &look
                            .get(Key {
                                measure: e,
                                model: Some(m),
                                variant: Some(variant),
                                tier: Some(tier),
                                ..Key::default()
                            })
                            .cloned(),
                    )
                })
            }),
        );
    }
    let mut out = vec![t];
    for m in models {
        let mut t = Table::new(
            format!(
                "{m}: accuracy (%) by falsity tier [95 % interval] (n statements; pooled: n answers)"
            ),
            "strategy / tier",
            langs.iter().copied().chain(["pooled"]),
        );
        for s in &STRATEGIES[1..] {
            for tier in tiers {
                let key = Key {
                    model: Some(m),
                    variant: Some(variant),
                    strategy: Some(s),
                    tier: Some(tier),
                    ..Key::default()
                };
                t.push(
                    format!("{s} {tier}"),
                    langs
                        .iter()
                        .map(|l| {
                            cell_interval_n(look.get(Key {
                                measure: "accuracy_by_tier",
                                language: Some(l),
                                ..key
                            }))
                        })
                        .chain([cell_interval_n(look.get(Key {
                            measure: "accuracy_by_tier_pooled",
                            ..key
                        }))]),
                );
            }
        }
        out.push(t);
    }
    out
}

fn html_table(out: &mut String, t: &Table) {
    let _ = write!(
        out,
        "<table>\n<caption>{}</caption>\n<thead><tr>",
        esc(&t.caption)
    );
    for h in &t.header {
        let _ = write!(out, "<th>{}</th>", esc(h));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for r in &t.rows {
        out.push_str("<tr>");
        for (i, c) in r.iter().enumerate() {
            let tag = if i == 0 { "th" } else { "td" };
            let _ = write!(out, "<{tag}>{}</{tag}>", esc(c));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n");
}

fn md_table(out: &mut String, t: &Table) {
    let _ = writeln!(out, "{}\n", md_cell(&t.caption));
    let _ = writeln!(
        out,
        "| {} |",
        t.header
            .iter()
            .map(|h| md_cell(h))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    let _ = writeln!(out, "|{}", "---|".repeat(t.header.len()));
    for r in &t.rows {
        let _ = writeln!(
            out,
            "| {} |",
            r.iter().map(|c| md_cell(c)).collect::<Vec<_>>().join(" | ")
        );
    }
    out.push('\n');
}

const CSS: &str = "body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,'Helvetica Neue',Arial,sans-serif;\
margin:2rem auto;max-width:1500px;padding:0 1.5rem;color:#1a1a1a;line-height:1.45}\
h1{font-size:1.8rem;margin-bottom:.2rem}h2{margin-top:2.5rem;border-bottom:2px solid #ddd;padding-bottom:.2rem}\
h3{margin-top:2rem}p.lead{font-size:1.15rem;background:#f3f6fa;border-left:4px solid #0072b2;padding:.6rem 1rem}\
figure{margin:1rem 0 .5rem 0}figure svg{max-width:100%;height:auto;display:block}\
figcaption{font-size:.95rem;color:#333;max-width:70rem;margin-top:.4rem}\
table{border-collapse:collapse;font-size:.85rem;margin:.6rem 0 1.2rem 0;font-variant-numeric:tabular-nums}\
caption{caption-side:top;text-align:left;font-weight:600;padding:.3rem 0}\
th,td{border:1px solid #ccc;padding:.2rem .5rem;text-align:right;white-space:nowrap}\
thead th{background:#f0f0f0;text-align:center}tbody th{text-align:left;background:#fafafa}\
details{margin:.3rem 0 1.5rem 0}summary{cursor:pointer;color:#0b5394}\
dl dt{font-weight:600;font-family:ui-monospace,monospace;margin-top:.6rem}dl dd{margin-left:1.5rem}\
code{font-family:ui-monospace,monospace;background:#f4f4f4;padding:0 .2rem}\
.scroll{overflow-x:auto}";

/// `report.html` and `report.md` of the rows and figures.
pub fn render(rows: &[Row], figs: &[Figure], settings: &Settings) -> (String, String) {
    let look = Lookup::new(rows);
    let vm = variants_and_models(rows);
    let mut html = String::new();
    let mut md = String::new();
    let title = "SWORD: models compared";
    let _ = write!(
        html,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\n\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{title}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<h1>{title}</h1>\n"
    );
    let _ = writeln!(md, "# {title}\n");
    let n_models: usize = vm.iter().map(|(_, m)| m.len()).sum();
    let intro = format!(
        "{} model × variant groups from {} samples file(s); accuracies with 95 % percentile bootstrap intervals over {} replicates (seed {}) resampling original triples. Every figure is drawn from figures.parquet (the same rows as figures.csv), which holds every number of this page.",
        n_models,
        settings.files.len(),
        settings.bootstrap,
        settings.seed
    );
    let _ = writeln!(html, "<p>{}</p>", esc(&intro));
    let _ = writeln!(md, "{intro}\n");
    for (variant, models) in &vm {
        let langs: Vec<&str> = LANGUAGES
            .iter()
            .copied()
            .filter(|l| {
                models.iter().any(|m| {
                    STRATEGIES.iter().any(|s| {
                        look.get(Key {
                            measure: "accuracy",
                            model: Some(m),
                            variant: Some(variant),
                            language: Some(l),
                            strategy: Some(s),
                            ..Key::default()
                        })
                        .is_some()
                    })
                })
            })
            .collect();
        let (t, sentence) = headline_table(&look, variant, models);
        let _ = writeln!(html, "<h2>Variant <code>{}</code></h2>", esc(variant));
        let _ = writeln!(md, "## Variant `{variant}`\n");
        let _ = writeln!(
            html,
            "<p class=\"lead\">{}</p>\n<div class=\"scroll\">",
            esc(&sentence)
        );
        let _ = writeln!(md, "**{sentence}**\n");
        html_table(&mut html, &t);
        html.push_str("</div>\n");
        md_table(&mut md, &t);
        for f in figs.iter().filter(|f| f.variant == *variant) {
            let _ = writeln!(
                html,
                "<h3>{}</h3>\n<figure>\n{}\n<figcaption>{}</figcaption>\n</figure>",
                esc(&f.title),
                f.svg.trim(),
                esc(&f.caption)
            );
            let _ = writeln!(
                md,
                "### {}\n\n![{}](figures/{})\n\n{}\n",
                f.title, f.kind, f.file, f.caption
            );
            let tables = tables_for(f, &look, models, &langs);
            if !tables.is_empty() {
                html.push_str("<details><summary>Numbers behind this figure</summary>\n<div class=\"scroll\">\n");
                for t in &tables {
                    html_table(&mut html, t);
                    md_table(&mut md, t);
                }
                html.push_str("</div></details>\n");
            }
        }
        let tiers = tier_tables(&look, variant, models, &langs);
        if !tiers.is_empty() {
            let title = "Accuracy by falsity tier";
            let lead = "How sure each distortion's \"false\" is (from the benchmark's falsity column): open when nothing says the subject has any value for the property (possibly an unrecorded truth), likely when it has another value, certain when a novalue statement or a property constraint rules the statement out. If the plausible swaps are harder only on open statements, part of the effect is label noise.";
            let _ = writeln!(
                html,
                "<h3>{title}</h3>\n<p>{}</p>\n<div class=\"scroll\">",
                esc(lead)
            );
            let _ = writeln!(md, "### {title}\n\n{lead}\n");
            for t in &tiers {
                html_table(&mut html, t);
                md_table(&mut md, t);
            }
            html.push_str("</div>\n");
        }
        if models.len() < 2 {
            let note = "One model only: no model × model comparison (Fig. 4).";
            let _ = writeln!(html, "<p>{note}</p>");
            let _ = writeln!(md, "{note}\n");
        }
    }
    if let Some((h, m)) = &settings.disagree {
        html.push_str(h);
        md.push_str(m);
    }
    html.push_str("<h2>How each number is defined</h2>\n<p>An answer is correct when its verdict equals the statement's label (ORG true, SS/OS/PSS/POS false); an answer without a verdict, or no answer, is wrong. Intervals: 95 % percentile bootstrap, resampling original triples (an original with all its distortions, in every language), exactly as <code>sword eval score</code> draws them. <code>n</code> is the denominator behind a value. Columns of figures.parquet / figures.csv: measure, model, model_b, variant, language, language_b, strategy, agreement, value, lo, hi, n (values are fractions; null where a column does not apply).</p>\n<dl>\n");
    md.push_str("## How each number is defined\n\nAn answer is correct when its verdict equals the statement's label (ORG true, SS/OS/PSS/POS false); an answer without a verdict, or no answer, is wrong. Intervals: 95 % percentile bootstrap, resampling original triples, exactly as `sword eval score` draws them. `n` is the denominator behind a value. Columns of figures.parquet / figures.csv: measure, model, model_b, variant, language, language_b, strategy, agreement, value, lo, hi, n (values are fractions; null where a column does not apply).\n\n");
    let by_tier = rows.iter().any(|r| r.tier.is_some());
    let tier_defs: &[(&str, &str)] = if by_tier {
        &[("tier (column)", "The falsity tier (open, likely, certain) of the *_by_tier rows, read from the benchmark's sword.parquet; null on every other row.")]
    } else {
        &[]
    };
    let tier_measures = if by_tier { TIER_MEASURES } else { &[] };
    for (name, def) in MEASURES.iter().chain(tier_measures).chain(tier_defs) {
        let _ = writeln!(html, "<dt>{name}</dt><dd>{}</dd>", esc(def));
        let _ = writeln!(md, "- `{name}`: {def}");
    }
    html.push_str("</dl>\n<h2>Inputs</h2>\n<ul>\n");
    md.push_str("\n## Inputs\n\n");
    for f in &settings.files {
        let _ = writeln!(
            html,
            "<li><code>{}</code></li>",
            esc(&f.display().to_string())
        );
        let _ = writeln!(md, "- `{}`", f.display());
    }
    if let Some(b) = &settings.benchmark {
        let _ = writeln!(
            html,
            "<li>falsity tiers: <code>{}</code></li>",
            esc(&b.display().to_string())
        );
        let _ = writeln!(md, "- falsity tiers: `{}`", b.display());
    }
    html.push_str("</ul>\n<p>Load the table: <code>pandas.read_parquet(\"figures.parquet\")</code>, <code>arrow::read_parquet(\"figures.parquet\")</code> in R, or <code>figures.csv</code> anywhere.</p>\n</body>\n</html>\n");
    md.push_str("\nLoad the table: `pandas.read_parquet(\"figures.parquet\")`, `arrow::read_parquet(\"figures.parquet\")` in R, or `figures.csv` anywhere.\n");
    (html, md)
}
