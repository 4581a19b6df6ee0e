//! The export report: Markdown with counts, rejection reasons and attempts, plus SVG density plots of the
//! cosine similarities per strategy (paper Fig. 1b) and of the per-original differences PSS−SS and POS−OS
//! (Fig. 1c). SVG because it needs no font files (plotters' PNG text needs a TTF).

use crate::core::error::{Error, Result};
use crate::core::falsity::Tier;
use crate::core::ids::EntityId;
use crate::core::records::{Distortion, Strategy};
use crate::kb::benchmark::differences;
use crate::store::{Manifest, RunDir};
use plotters::prelude::*;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// Files written into the report directory.
pub const REPORT_FILES: [&str; 4] = [
    "report.md",
    "cosine_density.svg",
    "cosine_density_centred.svg",
    "cosine_diff_density.svg",
];

/// Summary numbers of a report (also stored in the export manifest).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReportSummary {
    /// Mean over originals of cos(PSS) − cos(SS) (raw cosines), `None` without pairs.
    pub mean_diff_pss_ss: Option<f64>,
    /// Mean over originals of cos(POS) − cos(OS).
    pub mean_diff_pos_os: Option<f64>,
    /// Mean of cos(PSS) − cos(SS) on centred cosines with its 95% bootstrap interval over originals.
    pub centred_pss_ss: Option<(f64, f64, f64)>,
    /// Mean of cos(POS) − cos(OS) on centred cosines with its 95% bootstrap interval over originals.
    pub centred_pos_os: Option<(f64, f64, f64)>,
    /// On centred cosines: `Some(true)` when both 95% intervals lie above 0, `Some(false)` when both means
    /// are ≤ 0, `None` otherwise (mixed, an interval reaching 0, or undetermined).
    pub property_based_more_similar: Option<bool>,
}

/// Bootstrap resamples behind the report's intervals.
pub const BOOTSTRAP_RESAMPLES: usize = 2000;

/// Mean of `xs` with its percentile bootstrap 95% interval (`resamples` resamples of the values with
/// replacement, from a ChaCha8 stream seeded by `seed`, so the same input gives the same interval); `None` for
/// fewer than two values.
pub fn bootstrap_mean_ci(xs: &[f64], resamples: usize, seed: u64) -> Option<(f64, f64, f64)> {
    use rand::rngs::ChaCha8Rng;
    use rand::{RngExt, SeedableRng};
    let n = xs.len();
    if n < 2 || resamples == 0 {
        return None;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut means: Vec<f64> = (0..resamples)
        .map(|_| (0..n).map(|_| xs[rng.random_range(0..n)]).sum::<f64>() / n as f64)
        .collect();
    means.sort_by(f64::total_cmp);
    let q = |p: f64| means[((resamples - 1) as f64 * p).round() as usize];
    Some((xs.iter().sum::<f64>() / n as f64, q(0.025), q(0.975)))
}

/// Gaussian kernel density of `xs` at `grid` points (Silverman's rule bandwidth, floored at 0.01).
pub fn kde(xs: &[f64], grid: &[f64]) -> Vec<f64> {
    let n = xs.len();
    if n == 0 {
        return vec![0.0; grid.len()];
    }
    let mean = xs.iter().sum::<f64>() / n as f64;
    let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n.max(2) - 1) as f64;
    let mut sorted = xs.to_vec();
    sorted.sort_by(f64::total_cmp);
    let q = |p: f64| sorted[((n - 1) as f64 * p).round() as usize];
    let iqr = q(0.75) - q(0.25);
    let mut spread = var.sqrt();
    if iqr > 0.0 {
        spread = spread.min(iqr / 1.34);
    }
    let h = (0.9 * spread * (n as f64).powf(-0.2)).max(0.01);
    let norm = 1.0 / (n as f64 * h * (2.0 * std::f64::consts::PI).sqrt());
    grid.iter()
        .map(|g| {
            xs.iter()
                .map(|x| (-0.5 * ((g - x) / h).powi(2)).exp())
                .sum::<f64>()
                * norm
        })
        .collect()
}

fn mean(xs: &[f64]) -> Option<f64> {
    (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
}

fn fmt_opt(x: Option<f64>) -> String {
    x.map(|v| format!("{v:.4}")).unwrap_or_else(|| "–".into())
}

fn plot_err(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::io(path, std::io::Error::other(format!("plot: {e}")))
}

/// Draw density curves of several named series into an SVG string. `marks[i]`, when given, is series i's
/// (mean, low, high): its mean is drawn as a vertical line and its 95% interval as a bar with end ticks near
/// the top, and both are written into the legend.
pub fn density_svg(
    title: &str,
    x_desc: &str,
    range: (f64, f64),
    series: &[(String, Vec<f64>)],
    marks: &[Option<(f64, f64, f64)>],
    path: &Path,
) -> Result<String> {
    let grid: Vec<f64> = (0..=200)
        .map(|i| range.0 + (range.1 - range.0) * f64::from(i) / 200.0)
        .collect();
    let curves: Vec<Vec<f64>> = series.iter().map(|(_, xs)| kde(xs, &grid)).collect();
    // With interval marks, leave room above the curves for them and, above those, for the legend.
    let headroom = if marks.iter().any(Option::is_some) {
        1.6
    } else {
        1.1
    };
    let ymax = curves
        .iter()
        .flatten()
        .fold(0.0f64, |a, &b| a.max(b))
        .max(0.1)
        * headroom;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (800, 500)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| plot_err(path, e))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 20))
            .margin(15)
            .x_label_area_size(40)
            .y_label_area_size(55)
            .build_cartesian_2d(range.0..range.1, 0.0..ymax)
            .map_err(|e| plot_err(path, e))?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc("density")
            .draw()
            .map_err(|e| plot_err(path, e))?;
        let colours = [RED, BLUE, GREEN, MAGENTA, CYAN, BLACK];
        for (i, ((name, xs), ys)) in series.iter().zip(&curves).enumerate() {
            let c = colours[i % colours.len()];
            let mark = marks.get(i).copied().flatten();
            let label = match mark {
                Some((m, lo, hi)) => {
                    format!(
                        "{name} (n={}): mean {m:.3}, 95% CI [{lo:.3}, {hi:.3}]",
                        xs.len()
                    )
                }
                None => format!("{name} (n={})", xs.len()),
            };
            chart
                .draw_series(LineSeries::new(
                    grid.iter().copied().zip(ys.iter().copied()),
                    c.stroke_width(2),
                ))
                .map_err(|e| plot_err(path, e))?
                .label(label)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c));
            if let Some((m, lo, hi)) = mark {
                // Just above the series' own peak, staggered so that close intervals do not overlap, and below
                // the legend.
                let peak = ys.iter().fold(0.0f64, |a, &b| a.max(b));
                let y = (peak * 1.08 + ymax * 0.03 * i as f64).min(ymax * 0.75);
                let tick = ymax * 0.015;
                let bars = [
                    vec![(m, 0.0), (m, y)],
                    vec![(lo, y), (hi, y)],
                    vec![(lo, y - tick), (lo, y + tick)],
                    vec![(hi, y - tick), (hi, y + tick)],
                ];
                chart
                    .draw_series(
                        bars.into_iter()
                            .map(|v| PathElement::new(v, c.stroke_width(2))),
                    )
                    .map_err(|e| plot_err(path, e))?;
            }
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(|e| plot_err(path, e))?;
        root.present().map_err(|e| plot_err(path, e))?;
    }
    Ok(svg)
}

/// Where the report finds English labels. The export stage's `EntityLookup` implements it; the trait keeps the
/// report below export in the module graph (export calls the report, not the other way round).
pub trait EnglishLabels {
    /// English (`en`) label of `id`, if the run has English and `id` a label in it.
    fn english_label(&self, id: EntityId) -> Option<&str>;
}

/// How the report names an entity or property in a table cell: `ID label` with the English label
/// (`P36 capital`, `Q142 France`), or the bare id when there is no English label. `|` and line breaks in
/// the label are escaped so the Markdown table stays intact.
pub fn id_cell(id: EntityId, lookup: &dyn EnglishLabels) -> String {
    match lookup.english_label(id) {
        Some(l) if !l.trim().is_empty() => {
            let l = l
                .trim()
                .replace('\\', "\\\\")
                .replace('|', "\\|")
                .replace(['\n', '\r'], " ");
            format!("{id} {l}")
        }
        _ => id.to_string(),
    }
}

/// The reasons of the guard probe's table, in check order (`transitive_bound` joins when it occurred).
const PROBE_REASONS: [&str; 6] = [
    "self_loop",
    "exists",
    "subject_has_value",
    "symmetric",
    "inverse",
    "transitive",
];

/// The report's section on the falsity tier (docs/falsity.md): per variant strategy, how many statements and
/// the share of each tier (`certain`: a constraint or a `novalue` statement rules it out; `likely`: the subject
/// has another value; `open`: nothing recorded, possibly an unrecorded truth).
fn falsity_section(md: &mut String, rows: &[Distortion]) {
    let _ = writeln!(md, "\n## Falsity per strategy\n");
    if !rows
        .iter()
        .any(|d| d.strategy != Strategy::ORG && d.falsity.is_some())
    {
        let _ = writeln!(
            md,
            "No tier: the run's extract did not keep the falsity tables (see docs/falsity.md)."
        );
        return;
    }
    let _ = writeln!(
        md,
        "How sure each false statement is (docs/falsity.md): `certain` when a property constraint or a `novalue` statement rules it out, `likely` when the subject has another value for the property, `open` when nothing is recorded (possibly an unrecorded truth).\n\n| strategy | statements | open | likely | certain |\n|---|---:|---:|---:|---:|"
    );
    for s in Strategy::VARIANTS {
        let tiers: Vec<Tier> = rows
            .iter()
            .filter(|d| d.strategy == s)
            .filter_map(|d| d.falsity)
            .collect();
        let share = |t: Tier| {
            let k = tiers.iter().filter(|x| **x == t).count();
            if tiers.is_empty() {
                "–".to_string()
            } else {
                format!("{:.1} % ({k})", 100.0 * k as f64 / tiers.len() as f64)
            }
        };
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} |",
            s.as_str(),
            tiers.len(),
            share(Tier::Open),
            share(Tier::Likely),
            share(Tier::Certain)
        );
    }
}

/// The report's section on the guard probe (`extra.guard_probe` of `distort.manifest.json`): per strategy, the
/// share of candidates each guard rejects, i.e. how often one uniform draw would be true without that guard.
fn probe_section(md: &mut String, probe: &serde_json::Value) {
    let Some(by) = probe.get("by_strategy").and_then(|v| v.as_object()) else {
        return;
    };
    let k = probe
        .get("candidates_per_variant")
        .and_then(|v| v.as_u64())
        .unwrap_or(0);
    let mut reasons: Vec<&str> = PROBE_REASONS.to_vec();
    if by
        .values()
        .any(|v| v["rejected"].get("transitive_bound").is_some())
    {
        reasons.push("transitive_bound");
    }
    let _ = writeln!(md, "\n## How often a swap would be true: the guard probe\n");
    let _ = writeln!(
        md,
        "Each guard's verdict on up to {k} further candidates per variant (the whole pool when it is smaller), \
         drawn apart from the output. A cell is the chance that one uniform draw is rejected for that reason \
         (the mean share over variants), with the candidates it rejected in brackets. `subject_has_value` is \
         `exists` for OS/POS, where the subject is the original's.\n"
    );
    let _ = write!(md, "| strategy | candidates |");
    for r in &reasons {
        let _ = write!(md, " {r} |");
    }
    let _ = write!(md, "\n|---|---:|");
    for _ in &reasons {
        let _ = write!(md, "---:|");
    }
    let _ = writeln!(md);
    for s in ["SS", "OS", "PSS", "POS"] {
        let Some(t) = by.get(s) else { continue };
        let _ = write!(md, "| {s} | {} |", t["candidates"].as_u64().unwrap_or(0));
        for r in &reasons {
            let n = t["rejected"].get(*r).and_then(|v| v.as_u64()).unwrap_or(0);
            let share = t["share"].get(*r).and_then(|v| v.as_f64()).unwrap_or(0.0);
            if n == 0 {
                let _ = write!(md, " 0 |");
            } else {
                let _ = write!(md, " {:.3} % ({n}) |", 100.0 * share);
            }
        }
        let _ = writeln!(md);
    }
}

/// Write the report into the folder `sub` of the run folder `run`. Ids in its tables carry their English
/// labels from `lookup` (see [`id_cell`]).
pub fn write_report(
    run: &RunDir,
    sub: &str,
    rows: &[Distortion],
    distort_manifest: Option<&Manifest>,
    lookup: &dyn EnglishLabels,
) -> Result<ReportSummary> {
    let variants = [Strategy::SS, Strategy::OS, Strategy::PSS, Strategy::POS];
    let cos_of = |s: Strategy, centred: bool| -> Vec<f64> {
        rows.iter()
            .filter(|d| d.strategy == s)
            .filter_map(|d| if centred { d.cosine_centred } else { d.cosine })
            .map(f64::from)
            .collect()
    };
    let raw: Vec<(String, Vec<f64>)> = variants
        .iter()
        .map(|s| (s.as_str().to_string(), cos_of(*s, false)))
        .collect();
    let cen: Vec<(String, Vec<f64>)> = variants
        .iter()
        .map(|s| (s.as_str().to_string(), cos_of(*s, true)))
        .collect();
    let d_pss = differences(rows, Strategy::PSS, Strategy::SS, false);
    let d_pos = differences(rows, Strategy::POS, Strategy::OS, false);
    let dc_pss = differences(rows, Strategy::PSS, Strategy::SS, true);
    let dc_pos = differences(rows, Strategy::POS, Strategy::OS, true);

    let ci_pss = bootstrap_mean_ci(&dc_pss, BOOTSTRAP_RESAMPLES, 0x5EED_0001);
    let ci_pos = bootstrap_mean_ci(&dc_pos, BOOTSTRAP_RESAMPLES, 0x5EED_0002);
    let ci_strategy: Vec<Option<(f64, f64, f64)>> = cen
        .iter()
        .enumerate()
        .map(|(i, (_, xs))| bootstrap_mean_ci(xs, BOOTSTRAP_RESAMPLES, 0x5EED_0010 + i as u64))
        .collect();
    // Fig. 1b (densities per strategy, centred with each mean and its interval) and Fig. 1c (per-original
    // differences, the centred ones with their intervals).
    for (name, title, xd, range, series, marks) in [
        (
            "cosine_density.svg",
            "Cosine similarity of original and replacement (raw)",
            "cosine",
            (-1.0, 1.0),
            raw.clone(),
            vec![],
        ),
        (
            "cosine_density_centred.svg",
            "Cosine similarity of original and replacement (centred)",
            "cosine (mean vector subtracted)",
            (-1.0, 1.0),
            cen.clone(),
            ci_strategy.clone(),
        ),
        (
            "cosine_diff_density.svg",
            "Per-original differences: property-based minus random",
            "cosine difference",
            (-2.0, 2.0),
            vec![
                ("PSS-SS".to_string(), d_pss.clone()),
                ("POS-OS".to_string(), d_pos.clone()),
                ("PSS-SS centred".to_string(), dc_pss.clone()),
                ("POS-OS centred".to_string(), dc_pos.clone()),
            ],
            vec![None, None, ci_pss, ci_pos],
        ),
    ] {
        let rel = Path::new(sub).join(name);
        let svg = density_svg(title, xd, range, &series, &marks, &run.path(&rel))?;
        run.write(&rel, |w| w.write_all(svg.as_bytes()))?;
    }

    let m_pss = mean(&d_pss);
    let m_pos = mean(&d_pos);
    // The verdict reads the centred cosines (the raw ones share a common direction that swamps the
    // differences): yes when both 95% intervals lie above 0, no when both means are ≤ 0.
    let verdict = match (ci_pss, ci_pos) {
        (Some(a), Some(b)) if a.1 > 0.0 && b.1 > 0.0 => Some(true),
        (Some(a), Some(b)) if a.0 <= 0.0 && b.0 <= 0.0 => Some(false),
        _ => None,
    };
    let mut md = String::new();
    let _ = writeln!(md, "# SWORD distortion report\n");
    let _ = writeln!(
        md,
        "## Similarity: are property-based replacements more similar than random ones?\n"
    );
    let verdict_text = match (verdict, ci_pss, ci_pos) {
        (Some(true), _, _) => "**Yes** in this run, as in the paper: on centred cosines (mean vector subtracted), PSS replacements are closer to the original subject than SS ones and POS closer to the original object than OS ones, with both 95% bootstrap intervals over originals above 0.",
        (Some(false), _, _) => "**No** in this run, unlike the paper: on centred cosines, property-based replacements are on average not closer to the original than random ones.",
        (None, None, _) | (None, _, None) => "**Undetermined**: too few originals have both a property-based and a random variant with cosines (embeddings missing or variants dropped).",
        (None, _, _) => "**Not shown** in this run: on centred cosines at least one 95% bootstrap interval of PSS − SS or POS − OS reaches 0 or below.",
    };
    let _ = writeln!(md, "{verdict_text}\n");
    let _ = writeln!(md, "Raw means (without centring) are listed too; they are dominated by the direction all embeddings share.\n");
    let _ = writeln!(md, "| difference | n | mean (raw) | share > 0 (raw) | mean (centred) | 95% bootstrap interval (centred) |\n|---|---:|---:|---:|---:|---|");
    for (name, d, dc, ci) in [
        ("PSS − SS", &d_pss, &dc_pss, ci_pss),
        ("POS − OS", &d_pos, &dc_pos, ci_pos),
    ] {
        let pos = if d.is_empty() {
            None
        } else {
            Some(d.iter().filter(|x| **x > 0.0).count() as f64 / d.len() as f64)
        };
        let _ = writeln!(
            md,
            "| {name} | {} | {} | {} | {} | {} |",
            d.len(),
            fmt_opt(mean(d)),
            fmt_opt(pos),
            fmt_opt(mean(dc)),
            ci.map_or("–".to_string(), |(_, lo, hi)| format!(
                "[{lo:.4}, {hi:.4}]"
            ))
        );
    }
    let _ = writeln!(md, "\n![cosine density](cosine_density.svg)\n\n![centred cosine density](cosine_density_centred.svg)\n\n![differences](cosine_diff_density.svg)\n");
    let _ = writeln!(md, "## Cosine per strategy\n\n| strategy | n with cosine | mean raw | mean centred |\n|---|---:|---:|---:|");
    for (i, s) in variants.iter().enumerate() {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} |",
            s.as_str(),
            raw[i].1.len(),
            fmt_opt(mean(&raw[i].1)),
            fmt_opt(mean(&cen[i].1))
        );
    }
    let _ = writeln!(
        md,
        "\n## Statements per strategy\n\n| strategy | statements |\n|---|---:|"
    );
    for s in Strategy::ALL {
        let n = rows.iter().filter(|d| d.strategy == s).count();
        let _ = writeln!(md, "| {} | {n} |", s.as_str());
    }
    falsity_section(&mut md, rows);
    let _ = writeln!(md, "\n## Statements per property\n\n| property | ORG | SS | OS | PSS | POS |\n|---|---:|---:|---:|---:|---:|");
    let mut per_prop: BTreeMap<crate::core::ids::Pid, [u64; 5]> = BTreeMap::new();
    for d in rows {
        let k = Strategy::ALL
            .iter()
            .position(|s| *s == d.strategy)
            .unwrap_or(0);
        per_prop.entry(d.property).or_default()[k] += 1;
    }
    let mut pp: Vec<_> = per_prop.into_iter().collect();
    pp.sort_by(|a, b| b.1[0].cmp(&a.1[0]).then(a.0.cmp(&b.0)));
    for (p, c) in pp.iter().take(50) {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} |",
            id_cell(EntityId::Property(*p), lookup),
            c[0],
            c[1],
            c[2],
            c[3],
            c[4]
        );
    }
    if pp.len() > 50 {
        let _ = writeln!(md, "\n({} more properties not shown.)", pp.len() - 50);
    }
    let _ = writeln!(md, "\n## Rejections\n");
    match distort_manifest {
        Some(m) if !m.rejects.is_empty() => {
            let _ = writeln!(md, "`attempt_rejected:<reason>` counts rejected candidate draws; `variant_dropped:<strategy>:<reason>` counts variants dropped after `max_attempts` draws (named by their most frequent reason) or for an empty pool.\n\n| reason | count |\n|---|---:|");
            for (k, v) in &m.rejects {
                let _ = writeln!(md, "| {k} | {v} |");
            }
        }
        Some(_) => {
            let _ = writeln!(md, "No candidate was rejected.");
        }
        None => {
            let _ = writeln!(md, "(distort.manifest.json not found.)");
        }
    }
    if let Some(probe) = distort_manifest.and_then(|m| m.extra.get("guard_probe")) {
        probe_section(&mut md, probe);
    }
    let _ = writeln!(
        md,
        "\n## Attempts per emitted variant\n\n| attempts | variants |\n|---|---:|"
    );
    let mut buckets: BTreeMap<&str, u64> = BTreeMap::new();
    let order = ["1", "2", "3–5", "6–10", "11–50", "51+"];
    for d in rows.iter().filter(|d| d.strategy != Strategy::ORG) {
        let b = match d.attempts {
            0 | 1 => order[0],
            2 => order[1],
            3..=5 => order[2],
            6..=10 => order[3],
            11..=50 => order[4],
            _ => order[5],
        };
        *buckets.entry(b).or_default() += 1;
    }
    for b in order {
        let _ = writeln!(md, "| {b} | {} |", buckets.get(b).copied().unwrap_or(0));
    }
    run.write(Path::new(sub).join("report.md"), |w| {
        w.write_all(md.as_bytes())
    })?;
    Ok(ReportSummary {
        mean_diff_pss_ss: m_pss,
        mean_diff_pos_os: m_pos,
        centred_pss_ss: ci_pss,
        centred_pos_os: ci_pos,
        property_based_more_similar: verdict,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bootstrap_interval_of_the_mean() {
        // A constant sample: every resample has the same mean.
        assert_eq!(
            bootstrap_mean_ci(&[0.25; 7], 500, 1),
            Some((0.25, 0.25, 0.25))
        );
        assert_eq!(bootstrap_mean_ci(&[1.0], 500, 1), None);
        // 0..400 / 400: mean 0.49875, standard deviation 0.2887, so the 95% interval of the mean is about
        // ± 1.96 · 0.2887 / √400 = ± 0.0283 (normal approximation, computed by hand).
        let xs: Vec<f64> = (0..400).map(|i| f64::from(i) / 400.0).collect();
        let (m, lo, hi) = bootstrap_mean_ci(&xs, 4000, 7).unwrap();
        assert!((m - 0.49875).abs() < 1e-12);
        assert!((m - lo - 0.0283).abs() < 0.004, "{lo}");
        assert!((hi - m - 0.0283).abs() < 0.004, "{hi}");
        // Seeded: the same input gives the same interval.
        assert_eq!(bootstrap_mean_ci(&xs, 4000, 7), Some((m, lo, hi)));
    }

    /// Hand-made English labels: P36 and Q142 and P17 are labelled, P5's label holds a pipe, P999 and Q7
    /// have none. (The export stage's `EntityLookup`, which fills this from the run, is tested in export.)
    struct Labels(BTreeMap<EntityId, &'static str>);

    impl EnglishLabels for Labels {
        fn english_label(&self, id: EntityId) -> Option<&str> {
            self.0.get(&id).copied()
        }
    }

    fn lookup() -> Labels {
        use crate::core::ids::{Pid, Qid};
        Labels(BTreeMap::from([
            (EntityId::Property(Pid(36)), "capital"),
            (EntityId::Item(Qid(142)), "France"),
            (EntityId::Property(Pid(17)), "country"),
            (EntityId::Property(Pid(5)), "a|b"),
        ]))
    }

    #[test]
    fn id_cells_carry_the_english_label_or_stand_alone() {
        use crate::core::ids::{Pid, Qid};
        let l = lookup();
        assert_eq!(id_cell(EntityId::Property(Pid(36)), &l), "P36 capital");
        assert_eq!(id_cell(EntityId::Item(Qid(142)), &l), "Q142 France");
        assert_eq!(id_cell(EntityId::Property(Pid(17)), &l), "P17 country");
        // A French label only, or no record: the bare id.
        assert_eq!(id_cell(EntityId::Property(Pid(999)), &l), "P999");
        assert_eq!(id_cell(EntityId::Item(Qid(7)), &l), "Q7");
        // A pipe would split the Markdown cell.
        assert_eq!(id_cell(EntityId::Property(Pid(5)), &l), r"P5 a\|b");
        // No English label anywhere: every id is bare.
        let no_en = Labels(BTreeMap::new());
        assert_eq!(id_cell(EntityId::Property(Pid(36)), &no_en), "P36");
    }

    /// The shares of each tier per strategy, counted by hand: SS has 3 rows (1 open, 2 certain), POS 1
    /// likely, OS and PSS none; ORG rows (no tier) are not counted.
    #[test]
    fn the_falsity_table_gives_each_tier_share_per_strategy() {
        let t = crate::core::records::Triple {
            subject: crate::core::ids::Qid(1),
            property: crate::core::ids::Pid(2),
            object: crate::core::ids::Qid(3),
            rank: crate::core::records::Rank::Normal,
            statement_id: String::new(),
        };
        let row = |strategy: Strategy, falsity: Option<Tier>| Distortion {
            strategy,
            falsity,
            ..Distortion::original(0, &t)
        };
        let rows = vec![
            row(Strategy::ORG, None),
            row(Strategy::SS, Some(Tier::Open)),
            row(Strategy::SS, Some(Tier::Certain)),
            row(Strategy::SS, Some(Tier::Certain)),
            row(Strategy::POS, Some(Tier::Likely)),
        ];
        let mut md = String::new();
        falsity_section(&mut md, &rows);
        let table: Vec<&str> = md.lines().filter(|l| l.starts_with("| ")).collect();
        assert_eq!(
            table,
            [
                "| strategy | statements | open | likely | certain |",
                "| SS | 3 | 33.3 % (1) | 0.0 % (0) | 66.7 % (2) |",
                "| OS | 0 | – | – | – |",
                "| PSS | 0 | – | – | – |",
                "| POS | 1 | 0.0 % (0) | 100.0 % (1) | 0.0 % (0) |",
            ]
        );
        let mut md = String::new();
        falsity_section(&mut md, &rows[..1]);
        assert!(md.contains("No tier"), "{md}");
    }

    #[test]
    fn report_property_table_names_properties_with_labels() {
        use crate::core::ids::{Pid, Qid};
        let row = |n: u32, strategy: Strategy, p: u64| Distortion {
            statement_id: crate::core::records::statement_id(n, strategy),
            original_id: n,
            strategy,
            subject: Qid(142),
            property: Pid(p),
            object: Qid(7),
            replaced_role: None,
            original_entity: None,
            replacement_entity: None,
            cosine: None,
            cosine_centred: None,
            attempts: 1,
            original_rank: crate::core::records::Rank::Normal,
            original_statement_id: String::new(),
            falsity: None,
        };
        let rows = vec![
            row(0, Strategy::ORG, 36),
            row(0, Strategy::SS, 36),
            row(1, Strategy::ORG, 36),
            row(1, Strategy::POS, 36),
            row(2, Strategy::ORG, 999),
            row(3, Strategy::ORG, 17),
            row(3, Strategy::OS, 17),
        ];
        let dir = tempfile::tempdir().unwrap();
        let run = RunDir::open(dir.path()).unwrap();
        write_report(&run, "", &rows, None, &lookup()).unwrap();
        let md = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
        let start = md.find("## Statements per property").unwrap();
        let table: Vec<&str> = md[start..]
            .lines()
            .skip(2)
            .take_while(|l| !l.is_empty())
            .collect();
        // Most ORG first; ties by property number.
        assert_eq!(
            table,
            [
                "| property | ORG | SS | OS | PSS | POS |",
                "|---|---:|---:|---:|---:|---:|",
                "| P36 capital | 2 | 1 | 0 | 0 | 1 |",
                "| P17 country | 1 | 0 | 1 | 0 | 0 |",
                "| P999 | 1 | 0 | 0 | 0 | 0 |",
            ]
        );
    }

    #[test]
    fn the_probe_table_gives_each_share_with_its_count() {
        let probe = serde_json::json!({
            "candidates_per_variant": 100,
            "by_strategy": {
                "SS": {"candidates": 200, "rejected": {"exists": 3}, "share": {"exists": 0.015}},
                "PSS": {"candidates": 150, "rejected": {"inverse": 1, "exists": 12},
                        "share": {"inverse": 0.005, "exists": 0.08}},
            }
        });
        let mut md = String::new();
        probe_section(&mut md, &probe);
        let rows: Vec<&str> = md.lines().filter(|l| l.starts_with('|')).collect();
        assert_eq!(
            rows,
            [
                "| strategy | candidates | self_loop | exists | subject_has_value | symmetric | inverse | transitive |",
                "|---|---:|---:|---:|---:|---:|---:|---:|",
                "| SS | 200 | 0 | 1.500 % (3) | 0 | 0 | 0 | 0 |",
                "| PSS | 150 | 0 | 8.000 % (12) | 0 | 0 | 0.500 % (1) | 0 |",
            ]
        );
        assert!(md.contains("up to 100 further candidates"));
    }

    #[test]
    fn kde_integrates_to_one() {
        let xs = [0.1, 0.2, 0.25, 0.5, -0.3];
        let grid: Vec<f64> = (0..=4000).map(|i| -2.0 + f64::from(i) * 0.001).collect();
        let ys = kde(&xs, &grid);
        let area: f64 = ys.iter().sum::<f64>() * 0.001;
        assert!((area - 1.0).abs() < 1e-3, "{area}");
    }

    #[test]
    fn svg_is_written_without_fonts() {
        let svg = density_svg(
            "t",
            "x",
            (-1.0, 1.0),
            &[("A".into(), vec![0.1, 0.2]), ("B".into(), vec![])],
            &[Some((0.15, 0.1, 0.2)), None],
            Path::new("mem"),
        )
        .unwrap();
        assert!(svg.starts_with("<svg"));
        assert!(
            svg.contains("A (n=2): mean 0.150, 95% CI [0.100, 0.200]"),
            "{svg}"
        );
        assert!(svg.contains("B (n=0)"));
    }
}
