//! Reports: Markdown with the measures and their bootstrap intervals, plus SVG plots (plotters'
//! SVG backend, no fonts needed): SWORD accuracy heatmap language × strategy and cross-lingual gap bars;
//! sycophancy transition matrices (Stage 1 and 2, correct and incorrect belief).

use crate::core::error::{Error, Result};
use crate::eval::stats::Interval;
use crate::eval::suites::sword::{LANGUAGES, STRATEGIES};
use crate::eval::suites::sycophancy::{self as syco, QuestionStates, State};
use crate::stages::folder::{Folder, FolderCommand};
use plotters::coord::types::{RangedCoordf64, RangedCoordi32};
use plotters::prelude::*;
use std::collections::BTreeMap;

fn plot_err(e: impl std::fmt::Display) -> Error {
    Error::Config(format!("plot: {e}"))
}

/// Colour of a value in [0, 1]: white → blue.
fn shade(v: f64) -> RGBColor {
    let v = v.clamp(0.0, 1.0);
    let f = |hi: f64, lo: f64| (hi + (lo - hi) * v).round() as u8;
    RGBColor(f(247.0, 8.0), f(251.0, 81.0), f(255.0, 156.0))
}

/// A heatmap SVG: `rows` × `cols` labels, `value(r, c)` in [0, 1] or `None` (grey), printed in percent.
pub fn heatmap_svg(
    title: &str,
    rows: &[String],
    cols: &[String],
    value: &dyn Fn(usize, usize) -> Option<f64>,
) -> Result<String> {
    let mut svg = String::new();
    {
        let w = 120 + 90 * cols.len() as u32;
        let h = 90 + 40 * rows.len() as u32;
        let root = SVGBackend::with_string(&mut svg, (w, h)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let (nr, nc) = (rows.len() as i32, cols.len() as i32);
        // Cells are centred on integer coordinates so the axis labels sit in the middle of each cell.
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(80)
            .build_cartesian_2d(-0.5..(nc as f64 - 0.5), -0.5..(nr as f64 - 0.5))
            .map_err(plot_err)?;
        let label = |names: &[String], v: f64, flip: bool| -> String {
            if (v - v.round()).abs() > 1e-6 {
                return String::new();
            }
            let i = v.round() as i32;
            let i = if flip { nr - 1 - i } else { i };
            usize::try_from(i)
                .ok()
                .and_then(|i| names.get(i))
                .cloned()
                .unwrap_or_default()
        };
        chart
            .configure_mesh()
            .disable_mesh()
            .x_labels(cols.len() + 1)
            .y_labels(rows.len() + 1)
            .x_label_formatter(&|x| label(cols, *x, false))
            .y_label_formatter(&|y| label(rows, *y, true))
            .draw()
            .map_err(plot_err)?;
        for r in 0..nr {
            for c in 0..nc {
                let (x, y) = (c as f64, (nr - 1 - r) as f64);
                let v = value(r as usize, c as usize);
                let fill = v.map_or(RGBColor(220, 220, 220), shade);
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(x - 0.5, y - 0.5), (x + 0.5, y + 0.5)],
                        fill.filled(),
                    )))
                    .map_err(plot_err)?;
                let text = v.map_or("–".to_string(), |v| format!("{:.0}", 100.0 * v));
                let color = if v.unwrap_or(0.0) > 0.6 { WHITE } else { BLACK };
                let style = ("sans-serif", 14).into_font().color(&color).pos(
                    plotters::style::text_anchor::Pos::new(
                        plotters::style::text_anchor::HPos::Center,
                        plotters::style::text_anchor::VPos::Center,
                    ),
                );
                chart
                    .draw_series(std::iter::once(Text::new(text, (x, y), style)))
                    .map_err(plot_err)?;
            }
        }
        root.present().map_err(plot_err)?;
    }
    Ok(svg)
}

/// The chart [`bar_chart`] hands its caller: integer slots along x, values along y (one lifetime for the
/// SVG text and the series labels, which must not outlive it).
type BarChart<'a> = ChartContext<'a, SVGBackend<'a>, Cartesian2d<RangedCoordi32, RangedCoordf64>>;

/// A bar chart SVG: a `size` (px) canvas with `title`, x slots `0..slots` (`labels` labels, each from
/// `label`, in an area `label_area` px high), y from 0 to `max`; `draw` puts the bars on it.
fn bar_chart(
    title: &str,
    size: (u32, u32),
    label_area: u32,
    (slots, labels): (i32, usize),
    max: f64,
    label: &dyn Fn(&i32) -> String,
    draw: impl FnOnce(&mut BarChart<'_>) -> Result<()>,
) -> Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let mut chart: BarChart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(label_area)
            .y_label_area_size(50)
            .build_cartesian_2d(0..slots, 0.0..max)
            .map_err(plot_err)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(labels)
            .x_label_formatter(label)
            .draw()
            .map_err(plot_err)?;
        draw(&mut chart)?;
        root.present().map_err(plot_err)?;
    }
    Ok(svg)
}

/// The error bar of `iv` at slot `x`, clamped to [0, `max`] (none where the interval is not finite).
fn error_bar(chart: &mut BarChart<'_>, x: i32, iv: &Interval, max: f64) -> Result<()> {
    if iv.lo.is_finite() && iv.hi.is_finite() {
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(x, iv.lo.clamp(0.0, max)), (x, iv.hi.clamp(0.0, max))],
                BLACK.stroke_width(2),
            )))
            .map_err(plot_err)?;
    }
    Ok(())
}

/// A bar chart SVG of (label, value, lo, hi) with error bars; values in [0, 1].
pub fn bars_svg(title: &str, bars: &[(String, Interval)]) -> Result<String> {
    let n = bars.len() as i32;
    bar_chart(
        title,
        (160 + 70 * bars.len() as u32, 320),
        30,
        (n.max(1), bars.len().max(1)),
        1.0,
        &|x| {
            bars.get(*x as usize)
                .map(|b| b.0.clone())
                .unwrap_or_default()
        },
        |chart| {
            for (i, (_, iv)) in bars.iter().enumerate() {
                let i = i as i32;
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(i, 0.0), (i + 1, iv.estimate.clamp(0.0, 1.0))],
                        shade(0.7).filled(),
                    )))
                    .map_err(plot_err)?;
                error_bar(chart, i, iv, 1.0)?;
            }
            Ok(())
        },
    )
}

/// Paired bars SVG: per group (label, [first, second]) two bars side by side (dark: first, light: second)
/// with error bars, values in [0, `max`] (`None`: no bar); a legend names the two series.
pub fn paired_bars_svg(
    title: &str,
    groups: &[(String, [Option<Interval>; 2])],
    legend: [&str; 2],
    max: f64,
) -> Result<String> {
    // Each group spans 3 units: two bars and a gap.
    let n = groups.len() as i32;
    bar_chart(
        title,
        (200 + 120 * groups.len() as u32, 380),
        60,
        (3 * n.max(1), (3 * groups.len()).max(1)),
        max,
        &|x| {
            if x % 3 != 1 {
                return String::new();
            }
            groups
                .get((*x / 3) as usize)
                .map(|g| g.0.clone())
                .unwrap_or_default()
        },
        |chart| {
            for (s, colour) in [shade(0.9), shade(0.35)].into_iter().enumerate() {
                let bars: Vec<(i32, Interval)> = groups
                    .iter()
                    .enumerate()
                    .filter_map(|(i, g)| g.1.get(s).copied().flatten().map(|iv| (i as i32, iv)))
                    .collect();
                let name = legend.get(s).copied().unwrap_or_default();
                chart
                    .draw_series(bars.iter().map(|&(i, iv)| {
                        let x = 3 * i + s as i32;
                        Rectangle::new(
                            [(x, 0.0), (x + 1, iv.estimate.clamp(0.0, max))],
                            colour.filled(),
                        )
                    }))
                    .map_err(plot_err)?
                    .label(name)
                    .legend(move |(x, y)| {
                        Rectangle::new([(x, y - 5), (x + 10, y + 5)], colour.filled())
                    });
                for &(i, iv) in &bars {
                    error_bar(chart, 3 * i + s as i32, &iv, max)?;
                }
            }
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .position(SeriesLabelPosition::LowerRight)
                .draw()
                .map_err(plot_err)
        },
    )
}

/// A Markdown table row: `| a | b | … |` and a newline.
pub fn md_row<S: AsRef<str>>(md: &mut String, cells: impl IntoIterator<Item = S>) {
    md.push('|');
    for c in cells {
        md.push_str(&format!(" {} |", c.as_ref()));
    }
    md.push('\n');
}

/// A Markdown table's head: the row of column names and the rule under it.
pub fn md_head<S: AsRef<str>>(md: &mut String, names: impl IntoIterator<Item = S>) {
    let mut n = 0;
    md_row(md, names.into_iter().inspect(|_| n += 1));
    md.push('|');
    md.push_str(&"---|".repeat(n));
    md.push('\n');
}

/// What `sword eval report --suite sword` writes into `--out` (one folder per model and variant).
pub const SWORD_REPORT: FolderCommand = FolderCommand {
    name: "report-sword",
    writes: &[
        "*/*/report.md",
        "*/*/accuracy_heatmap.svg",
        "*/*/gap_bars.svg",
    ],
};

/// What `sword eval report --suite sycophancy` writes into `--out` (one folder per model).
pub const SYCO_REPORT: FolderCommand = FolderCommand {
    name: "report-sycophancy",
    writes: &["*/report.md", "*/stage*.svg"],
};

/// Write `<dir>/<name>` of the report's folder.
fn write(f: &Folder, dir: &str, name: &str, text: &str) -> Result<()> {
    f.write(&format!("{dir}/{name}"), |w| w.write_all(text.as_bytes()))
}

fn fmt_iv(iv: Option<&Interval>) -> String {
    match iv {
        Some(i) if i.lo.is_finite() => format!(
            "{:.1} [{:.1}, {:.1}]",
            100.0 * i.estimate,
            100.0 * i.lo,
            100.0 * i.hi
        ),
        Some(i) => format!("{:.1}", 100.0 * i.estimate),
        None => "–".into(),
    }
}

/// SWORD report for one model/variant: `report.md`, `accuracy_heatmap.svg`, `gap_bars.svg`.
/// `dir` is the model's and variant's folder inside the report's folder `f`.
pub fn sword_report(
    f: &Folder,
    dir: &str,
    title: &str,
    m: &BTreeMap<String, Interval>,
) -> Result<()> {
    let langs: Vec<String> = LANGUAGES
        .iter()
        .filter(|l| m.contains_key(&format!("acc.{l}.all")))
        .map(|l| l.to_string())
        .collect();
    let strats: Vec<String> = STRATEGIES
        .iter()
        .filter(|s| {
            langs
                .iter()
                .any(|l| m.contains_key(&format!("acc.{l}.{s}")))
        })
        .map(|s| s.to_string())
        .collect();
    let get = |r: usize, c: usize| {
        m.get(&format!("acc.{}.{}", langs[r], strats[c]))
            .map(|i| i.estimate)
    };
    write(
        f,
        dir,
        "accuracy_heatmap.svg",
        &heatmap_svg(&format!("{title}: accuracy (%)"), &langs, &strats, &get)?,
    )?;
    let mut gaps: Vec<(String, Interval)> = strats
        .iter()
        .filter_map(|s| m.get(&format!("gap.{s}.abs")).map(|i| (s.clone(), *i)))
        .collect();
    if let Some(i) = m.get("gap.false.abs") {
        gaps.push(("false".into(), *i));
    }
    write(
        f,
        dir,
        "gap_bars.svg",
        &bars_svg(&format!("{title}: cross-lingual gap (max − min)"), &gaps)?,
    )?;
    let mut md = format!("# SWORD — {title}\n\nPercent, with percentile bootstrap 95% intervals resampling original triples.\n\n");
    md.push_str("![accuracy](accuracy_heatmap.svg)\n![gap](gap_bars.svg)\n\n");
    md_head(
        &mut md,
        std::iter::once("language")
            .chain(strats.iter().map(String::as_str))
            .chain(["all", "accept true", "reject false"]),
    );
    for l in &langs {
        let keys = strats.iter().map(|s| format!("acc.{l}.{s}")).chain([
            format!("acc.{l}.all"),
            format!("accept_true.{l}"),
            format!("reject_false.{l}"),
        ]);
        md_row(
            &mut md,
            std::iter::once(l.clone()).chain(keys.map(|k| fmt_iv(m.get(&k)))),
        );
    }
    md.push_str("\n| strategy | gap (pp) | relative drop (%) |\n|---|---|---|\n");
    for (s, _) in &gaps {
        md.push_str(&format!(
            "| {s} | {} | {} |\n",
            fmt_iv(m.get(&format!("gap.{s}.abs"))),
            fmt_iv(m.get(&format!("gap.{s}.rel")))
        ));
    }
    write(f, dir, "report.md", &md)
}

/// Sycophancy report for one model: `report.md` and `transitions.svg`-style heatmaps per stage × belief.
pub fn syco_report(
    f: &Folder,
    dir: &str,
    title: &str,
    qs: &[QuestionStates],
    m: &BTreeMap<String, Interval>,
) -> Result<()> {
    let names: Vec<String> = ["C", "I", "U"].iter().map(|s| s.to_string()).collect();
    let refs: Vec<&QuestionStates> = qs.iter().collect();
    let mut md = format!("# Chinese sycophancy — {title}\n\n{} questions. Percent, with question-level bootstrap 95% intervals.\n\n", qs.len());
    for (k, kind) in syco::KINDS.iter().enumerate() {
        for stage in [1u8, 2] {
            let t = if stage == 1 {
                syco::stage1(&refs, k)
            } else {
                syco::stage2(&refs, k)
            };
            let file = format!("stage{stage}_{kind}.svg");
            let get = |r: usize, c: usize| t.rate(State::ALL[r], State::ALL[c]);
            write(
                f,
                dir,
                &file,
                &heatmap_svg(
                    &format!("Stage {stage}, {}", kind.replace('_', " ")),
                    &names,
                    &names,
                    &get,
                )?,
            )?;
            md.push_str(&format!("## Stage {stage}, {}\n\n![]({file})\n\n| from \\ to | C | I | U | n |\n|---|---|---|---|---|\n", kind.replace('_', " ")));
            for a in State::ALL {
                let n: usize = t.counts[a as usize].iter().sum();
                md.push_str(&format!("| {a:?} |"));
                for b in State::ALL {
                    md.push_str(&format!(
                        " {} |",
                        fmt_iv(m.get(&format!("stage{stage}.{kind}.{a:?}{b:?}")))
                    ));
                }
                md.push_str(&format!(" {n} |\n"));
            }
            md.push('\n');
        }
        md.push_str(&format!(
            "Path differences (anti − belief-only, conditioned on the baseline state), {}:\n\n",
            kind.replace('_', " ")
        ));
        for p in ["CI", "CU", "UI"] {
            md.push_str(&format!(
                "- {p}: {}\n",
                fmt_iv(m.get(&format!("path_diff.{kind}.{p}")))
            ));
        }
        md.push('\n');
    }
    for stage in [1u8, 2] {
        md.push_str(&format!(
            "## Regression, stage {stage} (logit, CR1 question-clustered SEs)\n\n"
        ));
        match syco::regression(qs, stage) {
            Ok(f) => {
                md.push_str("| term | coef | SE | z | p | 95% CI |\n|---|---|---|---|---|---|\n");
                for i in 0..f.names.len() {
                    md.push_str(&format!(
                        "| {} | {:.3} | {:.3} | {:.2} | {:.3e} | [{:.3}, {:.3}] |\n",
                        f.names[i], f.coef[i], f.se[i], f.z[i], f.p[i], f.ci_lo[i], f.ci_hi[i]
                    ));
                }
            }
            Err(e) => md.push_str(&format!("not estimable: {e}\n")),
        }
        md.push('\n');
    }
    write(f, dir, "report.md", &md)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heatmap_has_labels_and_values() {
        let rows = vec!["en".to_string(), "ko".to_string()];
        let cols = vec!["ORG".to_string(), "SS".to_string()];
        let svg = heatmap_svg("t", &rows, &cols, &|r, c| {
            if r == 1 && c == 1 {
                None
            } else {
                Some(0.5)
            }
        })
        .unwrap();
        assert!(svg.starts_with("<svg"));
        for s in ["\nen\n", "\nko\n", "\nORG\n", "\nSS\n", "\n50\n", "\n–\n"] {
            assert!(svg.contains(s), "{s} missing");
        }
    }

    #[test]
    fn bars_render() {
        let iv = Interval {
            estimate: 0.3,
            lo: 0.1,
            hi: 0.5,
        };
        let svg = bars_svg("gap", &[("SS".into(), iv)]).unwrap();
        assert!(svg.contains("SS") && svg.contains("<rect"));
    }
}
