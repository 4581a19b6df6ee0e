//! The comparison's figures as SVG (plotters' SVG backend: no font files needed, text stays text), each
//! drawn from the tidy rows alone (looked up with [`Lookup`]), so what a figure shows is exactly what `figures.parquet`
//! holds.
//!
//! Per variant: `accuracy_<v>.svg` (language × strategy per model), `fig2_<v>.svg` (the paper's Fig. 2: per
//! model, the hard against the easy swap and the shuffled against the original accuracy, one point per
//! language, Western and East-Asian languages in two colours, y = x dashed, both axes over the data's range),
//! `fig3_<v>.svg` (accuracy by agreement level per model), `fig4_<v>_<S>.svg` (model × model Jaccard per
//! language, one file per strategy; two models or more), `fig5_<v>_<S>.svg` (language × language Jaccard per
//! model, one file per strategy) and `gap_<v>.svg` (cross-lingual and East-Asian gap per model × strategy
//! with 95 % intervals). Colours: viridis for every heat map (with its colour bar), Okabe–Ito for groups and
//! strategies (both readable with colour-vision deficiencies). Fonts are sized for the page and for print: a
//! heat-map or axis label is 15–17 px; the 5-model Fig. 2 (1,680 px wide) printed 17 cm wide keeps its tick
//! labels at about 5 pt, 25 cm wide (a landscape page) at about 7 pt; fewer models per row print larger.

use super::draw::*;
use super::measures::{Row, EAST_ASIAN};
use super::table::{variants_and_models, Key, Lookup};
use crate::core::error::Result;
use crate::eval::suites::sword::{LANGUAGES, STRATEGIES};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

/// One drawn figure.
#[derive(Clone, Debug)]
pub struct Figure {
    /// File name under `figures/`.
    pub file: String,
    /// The variant it shows.
    pub variant: String,
    /// Which of the paper's figures it is (`accuracy`, `fig2`, `fig3`, `fig4`, `fig5`, `gap`).
    pub kind: &'static str,
    /// Title above it in the report.
    pub title: String,
    /// What it shows, for the report.
    pub caption: String,
    pub svg: String,
}

/// The languages with an accuracy row for this variant, in the paper's order.
fn languages_of(rows: &[Row], variant: &str) -> Vec<&'static str> {
    LANGUAGES
        .iter()
        .copied()
        .filter(|l| {
            rows.iter().any(|r| {
                r.measure == "accuracy"
                    && r.variant.as_deref() == Some(variant)
                    && r.language.as_deref() == Some(*l)
            })
        })
        .collect()
}

fn is_east_asian(l: &str) -> bool {
    EAST_ASIAN.iter().any(|&i| LANGUAGES[i] == l)
}

/// Every figure of the rows.
pub fn draw_all(rows: &[Row]) -> Result<Vec<Figure>> {
    let look = Lookup::new(rows);
    let mut out = Vec::new();
    for (variant, models) in variants_and_models(rows) {
        let langs = languages_of(rows, &variant);
        let ctx = Ctx {
            look: &look,
            variant: &variant,
            models: &models,
            langs: &langs,
        };
        out.push(ctx.accuracy()?);
        out.push(ctx.fig2()?);
        out.push(ctx.fig3()?);
        out.push(ctx.gap()?);
        if models.len() >= 2 {
            for s in STRATEGIES {
                out.push(ctx.fig4(s)?);
            }
        }
        if langs.len() >= 2 {
            for s in STRATEGIES {
                out.push(ctx.fig5(s)?);
            }
        }
    }
    Ok(out)
}

/// The caption of each kind of figure.
const CAPTIONS: &[(&str, &str)] = &[
    (
        "accuracy",
        "Share of statements judged correctly (ORG true, the four distortions false), per language and strategy; colour scale over the values shown.",
    ),
    (
        "fig3",
        "Rows: strategy × language; columns: the agreement level k/L (statements that exactly k of the model's L languages answered correctly). A cell is the share of those statements this language answered correctly (L/L is 100 % by definition); grey: no statement at that level.",
    ),
    (
        "fig4",
        "One matrix per language: Jaccard similarity of the sets of statements two models answered correctly, over the statements both were asked (diagonal left blank: 100 % by definition). Colour scale over the values of this strategy.",
    ),
    (
        "fig5",
        "One matrix per model: Jaccard similarity of the sets of statements two languages answered correctly, over the statements asked in both (diagonal blank). Colour scale over the values of this strategy.",
    ),
    (
        "fig2",
        "Top row of each band: per language, accuracy on the random swap (x) against the property-based swap (y); circles SS → PSS, triangles OS → POS. Below a point on the dashed y = x line, the plausible swap is the harder one. Bottom row: accuracy on the original statements (x) against the four distortions pooled (y). Blue: Western languages (en fr de es it pt); orange: East-Asian (ko ja). Axes span the values shown, the same in every panel of a row.",
    ),
    (
        "gap",
        "Top: per model and strategy, the best language's accuracy minus the worst's (the paper's headline gap), with 95 % bootstrap intervals resampling original triples. Bottom: mean accuracy of the Western languages minus that of ko and ja (negative: the East-Asian languages do better). Axes span the values and intervals shown.",
    ),
];

struct Ctx<'a> {
    look: &'a Lookup<'a>,
    variant: &'a str,
    models: &'a [String],
    langs: &'a [&'static str],
}

impl Ctx<'_> {
    fn key<'k>(&'k self, measure: &'k str, model: &'k str) -> Key<'k> {
        Key {
            measure,
            model: Some(model),
            variant: Some(self.variant),
            ..Key::default()
        }
    }

    fn acc(&self, model: &str, l: &str, s: &str) -> Option<f64> {
        self.look.value(Key {
            language: Some(l),
            strategy: Some(s),
            ..self.key("accuracy", model)
        })
    }

    /// The figure of `kind` (its caption from [`CAPTIONS`]), in `KIND_VARIANT[_STRATEGY].svg`.
    fn figure(
        &self,
        kind: &'static str,
        strategy: Option<&str>,
        title: String,
        svg: String,
    ) -> Figure {
        let file = match strategy {
            Some(s) => format!("{kind}_{}_{s}.svg", self.variant),
            None => format!("{kind}_{}.svg", self.variant),
        };
        let caption = CAPTIONS
            .iter()
            .find(|(k, _)| *k == kind)
            .map_or("", |(_, c)| c);
        Figure {
            file,
            variant: self.variant.to_string(),
            kind,
            title,
            caption: caption.to_string(),
            svg,
        }
    }

    fn per_row(&self) -> usize {
        self.models.len().clamp(1, 5)
    }

    fn accuracy(&self) -> Result<Figure> {
        let panels: Vec<Heat> = self
            .models
            .iter()
            .map(|m| Heat {
                title: short(m, 28),
                rows: self.langs.iter().map(|l| l.to_string()).collect(),
                cols: STRATEGIES.iter().map(|s| s.to_string()).collect(),
                rules: vec![6.min(self.langs.len())],
                values: self
                    .langs
                    .iter()
                    .map(|l| STRATEGIES.iter().map(|s| self.acc(m, l, s)).collect())
                    .collect(),
                cell: (52, 30),
                x_desc: "strategy".into(),
                y_desc: String::new(),
            })
            .collect();
        let scale = Scale::of(
            panels
                .iter()
                .flat_map(|p| p.values.iter().flatten().flatten().copied()),
        );
        let title = format!("Accuracy (%) per language × strategy — {}", self.variant);
        let svg = heat_grid(&title, &panels, self.per_row(), &scale, "accuracy")?;
        Ok(self.figure("accuracy", None, title, svg))
    }

    fn fig3(&self) -> Result<Figure> {
        let nl = self.langs.len();
        let mut panels = Vec::new();
        for m in self.models {
            let mut rows = Vec::new();
            let mut values = Vec::new();
            let mut rules = Vec::new();
            for s in STRATEGIES {
                if !rows.is_empty() {
                    rules.push(rows.len());
                }
                for l in self.langs {
                    rows.push(format!("{s} {l}"));
                    values.push(
                        (1..=nl as i32)
                            .map(|k| {
                                self.look.value(Key {
                                    language: Some(l),
                                    strategy: Some(s),
                                    agreement: Some(k),
                                    ..self.key("accuracy_by_agreement", m)
                                })
                            })
                            .collect(),
                    );
                }
            }
            panels.push(Heat {
                title: short(m, 28),
                rows,
                cols: (1..=nl).map(|k| format!("{k}/{nl}")).collect(),
                rules,
                values,
                cell: (40, 19),
                x_desc: "languages answering correctly".into(),
                y_desc: String::new(),
            });
        }
        let scale = Scale { lo: 0.0, hi: 1.0 };
        let title = format!(
            "Fig. 3 — accuracy by agreement level (%) — {}",
            self.variant
        );
        let svg = heat_grid(
            &title,
            &panels,
            self.per_row().min(4),
            &scale,
            "accuracy at that level",
        )?;
        Ok(self.figure("fig3", None, title, svg))
    }

    /// Fig. 4 / Fig. 5 from its `panels` ([`jaccard_panel`]): the Jaccard similarity between `between`
    /// (`models` or `languages`: the measure `jaccard_<between>`) for strategy `s`, on one colour scale.
    fn jaccard_figure(
        &self,
        kind: &'static str,
        s: &str,
        between: &str,
        panels: &[Heat],
        per_row: usize,
    ) -> Result<Figure> {
        let measure = format!("jaccard_{between}");
        let scale = Scale::of(self.look.values_of(&measure, self.variant, s));
        let title = format!(
            "Fig. {} — Jaccard similarity between {between} (%), {s} — {}",
            kind.trim_start_matches("fig"),
            self.variant
        );
        let svg = heat_grid(&title, panels, per_row, &scale, "Jaccard similarity")?;
        Ok(self.figure(kind, Some(s), title, svg))
    }

    fn fig4(&self, s: &str) -> Result<Figure> {
        let cell = if self.models.len() <= 6 {
            (58, 40)
        } else {
            (34, 28)
        };
        let labels: Vec<String> = self.models.iter().map(|m| short(m, 18)).collect();
        let panels: Vec<Heat> = self
            .langs
            .iter()
            .map(|l| {
                jaccard_panel(l.to_string(), &labels, cell, |a, b| {
                    self.look.value(Key {
                        model_b: Some(&self.models[b]),
                        language: Some(l),
                        strategy: Some(s),
                        ..self.key("jaccard_models", &self.models[a])
                    })
                })
            })
            .collect();
        self.jaccard_figure("fig4", s, "models", &panels, 4)
    }

    fn fig5(&self, s: &str) -> Result<Figure> {
        let labels: Vec<String> = self.langs.iter().map(|l| l.to_string()).collect();
        let panels: Vec<Heat> = self
            .models
            .iter()
            .map(|m| {
                jaccard_panel(short(m, 28), &labels, (40, 32), |a, b| {
                    self.look.value(Key {
                        language: Some(self.langs[a]),
                        language_b: Some(self.langs[b]),
                        strategy: Some(s),
                        ..self.key("jaccard_languages", m)
                    })
                })
            })
            .collect();
        self.jaccard_figure("fig5", s, "languages", &panels, self.per_row())
    }

    /// Fig. 2: two rows of scatter panels per band of models.
    fn fig2(&self) -> Result<Figure> {
        let per_row = self.per_row();
        let bands = self.models.len().div_ceil(per_row).max(1);
        let (pw, ph) = (330, 330);
        let (top, legend_h) = (44, 40);
        let w = pw * per_row as i32 + 30;
        let h = top + legend_h + ph * 2 * bands as i32 + 10;
        // Points: (model, row) → (x, y, language, marker) with marker 0 = circle, 1 = triangle.
        type Pt = (f64, f64, &'static str, u8);
        let mut swap: Vec<Vec<Pt>> = Vec::new();
        let mut shuffle: Vec<Vec<Pt>> = Vec::new();
        for m in self.models {
            let mut a = Vec::new();
            let mut b = Vec::new();
            for &l in self.langs {
                for (mk, (easy, hard)) in [("SS", "PSS"), ("OS", "POS")].into_iter().enumerate() {
                    if let (Some(x), Some(y)) = (self.acc(m, l, easy), self.acc(m, l, hard)) {
                        a.push((x, y, l, mk as u8));
                    }
                }
                let org = self.acc(m, l, "ORG");
                let dist = self.look.value(Key {
                    language: Some(l),
                    ..self.key("accuracy_distorted", m)
                });
                if let (Some(x), Some(y)) = (org, dist) {
                    b.push((x, y, l, 0));
                }
            }
            swap.push(a);
            shuffle.push(b);
        }
        let range = |pts: &[Vec<Pt>]| {
            let s = Scale::of(pts.iter().flatten().flat_map(|p| [p.0, p.1]));
            let pad = 0.02;
            ((s.lo - pad).max(-0.01), (s.hi + pad).min(1.01))
        };
        let r_swap = range(&swap);
        let r_shuffle = range(&shuffle);
        let title = format!(
            "Fig. 2 — easy against hard swap, original against shuffled — {}",
            self.variant
        );
        let svg = canvas(w, h, &title, |root| {
            self.fig2_legend(root, (20, top))?;
            for (i, m) in self.models.iter().enumerate() {
                let (band, c) = (i / per_row, i % per_row);
                let x = 15 + pw * c as i32;
                let y = top + legend_h + 2 * ph * band as i32;
                let area = root.clone().shrink((x, y), (pw, ph));
                scatter(
                    &area,
                    &short(m, 30),
                    &swap[i],
                    r_swap,
                    "easy swap: SS, OS (%)",
                    "hard swap: PSS, POS (%)",
                )?;
                let area = root.clone().shrink((x, y + ph), (pw, ph));
                scatter(
                    &area,
                    "",
                    &shuffle[i],
                    r_shuffle,
                    "original: ORG (%)",
                    "shuffled: 4 distortions (%)",
                )?;
            }
            Ok(())
        })?;
        Ok(self.figure(
            "fig2",
            None,
            format!(
                "Fig. 2 — swap difficulty and original against shuffled accuracy — {}",
                self.variant
            ),
            svg,
        ))
    }

    fn fig2_legend(&self, root: &Area, at: (i32, i32)) -> Result<()> {
        let (mut x, y) = (at.0, at.1 + 14);
        let label = text_style(18.0, BLACK, HPos::Left, VPos::Center);
        for (name, colour) in [
            ("Western (en fr de es it pt)", WESTERN_COLOUR),
            ("East-Asian (ko ja)", EAST_ASIAN_COLOUR),
        ] {
            root.draw(&Circle::new((x + 6, y), 6, colour.filled()))
                .map_err(plot_err)?;
            draw_text(root, name, (x + 18, y), &label)?;
            x += 18 + name.chars().count() as i32 * 7 + 28;
        }
        root.draw(&Circle::new((x + 6, y), 6, BLACK.stroke_width(2)))
            .map_err(plot_err)?;
        draw_text(root, "SS → PSS", (x + 18, y), &label)?;
        x += 18 + 8 * 7 + 28;
        root.draw(&TriangleMarker::new((x + 6, y), 7, BLACK.stroke_width(2)))
            .map_err(plot_err)?;
        draw_text(root, "OS → POS", (x + 18, y), &label)?;
        x += 18 + 8 * 7 + 28;
        let mut dash = x;
        while dash < x + 28 {
            root.draw(&PathElement::new(
                vec![(dash, y), (dash + 6, y)],
                BLACK.stroke_width(1),
            ))
            .map_err(plot_err)?;
            dash += 10;
        }
        draw_text(root, "y = x", (x + 36, y), &label)?;
        Ok(())
    }

    /// Gap per model × strategy with intervals (top), East-Asian gap (bottom).
    fn gap(&self) -> Result<Figure> {
        let n = self.models.len();
        let w = (170 + 150 * n as i32).max(640);
        let ph = 330;
        let h = 44 + 40 + 2 * ph + 20 + self.model_label_h();
        let title = format!(
            "Cross-lingual gap per model and strategy — {}",
            self.variant
        );
        let svg = canvas(w, h, &title, |root| {
            let label = text_style(18.0, BLACK, HPos::Left, VPos::Center);
            let mut x = 90;
            for (i, s) in STRATEGIES.iter().enumerate() {
                root.draw(&Rectangle::new(
                    [(x, 56), (x + 16, 72)],
                    STRATEGY_COLOURS[i].filled(),
                ))
                .map_err(plot_err)?;
                draw_text(root, s, (x + 22, 64), &label)?;
                x += 22 + s.len() as i32 * 10 + 26;
            }
            draw_text(
                root,
                "bars: estimate; whiskers: 95 % bootstrap interval",
                (x + 10, 64),
                &label,
            )?;
            let top = root.clone().shrink((0, 84), (w, ph));
            self.bars(
                root,
                &top,
                "gap",
                "gap: best − worst language (points)",
                false,
            )?;
            let bottom = root
                .clone()
                .shrink((0, 84 + ph + 10), (w, ph + self.model_label_h()));
            self.bars(
                root,
                &bottom,
                "east_asian_gap",
                "Western − East-Asian mean (points)",
                true,
            )?;
            Ok(())
        })?;
        Ok(self.figure(
            "gap",
            None,
            format!("Cross-lingual gap — {}", self.variant),
            svg,
        ))
    }

    fn model_label_h(&self) -> i32 {
        let longest = self
            .models
            .iter()
            .map(|m| short(m, 24).chars().count())
            .max()
            .unwrap_or(1) as i32;
        if longest * 11 > 140 {
            longest * 11 + 10
        } else {
            30
        }
    }

    fn bars(
        &self,
        root: &Area,
        area: &Area,
        measure: &str,
        y_desc: &str,
        signed: bool,
    ) -> Result<()> {
        let n = self.models.len();
        let get = |m: &str, s: &str| {
            self.look.get(Key {
                strategy: Some(s),
                ..self.key(measure, m)
            })
        };
        let mut lo = if signed { f64::INFINITY } else { 0.0 };
        let mut hi = f64::NEG_INFINITY;
        for m in self.models {
            for s in STRATEGIES {
                if let Some(r) = get(m, s) {
                    for v in [r.value, r.lo, r.hi].into_iter().flatten() {
                        lo = lo.min(v);
                        hi = hi.max(v);
                    }
                }
            }
        }
        if !hi.is_finite() {
            (lo, hi) = (0.0, 0.1);
        }
        if signed {
            lo = lo.min(0.0);
            hi = hi.max(0.0);
        }
        let pad = ((hi - lo) * 0.08).max(0.01);
        let (lo, hi) = (if signed || lo < 0.0 { lo - pad } else { 0.0 }, hi + pad);
        let label_h = self.model_label_h();
        let mut chart = ChartBuilder::on(area)
            .margin_left(10)
            .margin_right(20)
            .x_label_area_size(label_h)
            .y_label_area_size(80)
            .build_cartesian_2d(0f64..n as f64, lo..hi)
            .map_err(plot_err)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_labels(7)
            .y_desc(y_desc)
            .y_label_formatter(&|v| format!("{:.0}", 100.0 * v))
            .label_style((FONT, 21))
            .axis_desc_style((FONT, 21))
            .light_line_style(TRANSPARENT)
            .bold_line_style(GRID)
            .draw()
            .map_err(plot_err)?;
        if signed {
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(0.0, 0.0), (n as f64, 0.0)],
                    BLACK.stroke_width(1),
                )))
                .map_err(plot_err)?;
        }
        let bw = 0.8 / STRATEGIES.len() as f64;
        for (i, m) in self.models.iter().enumerate() {
            for (j, s) in STRATEGIES.iter().enumerate() {
                let Some(r) = get(m, s) else { continue };
                let Some(v) = r.value else { continue };
                let x0 = i as f64 + 0.1 + j as f64 * bw;
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(x0 + bw * 0.08, 0.0), (x0 + bw * 0.92, v)],
                        STRATEGY_COLOURS[j].filled(),
                    )))
                    .map_err(plot_err)?;
                if let (Some(l), Some(h)) = (r.lo, r.hi) {
                    let xc = x0 + bw / 2.0;
                    let cap = bw * 0.25;
                    for seg in [
                        vec![(xc, l), (xc, h)],
                        vec![(xc - cap, l), (xc + cap, l)],
                        vec![(xc - cap, h), (xc + cap, h)],
                    ] {
                        chart
                            .draw_series(std::iter::once(PathElement::new(
                                seg,
                                BLACK.stroke_width(2),
                            )))
                            .map_err(plot_err)?;
                    }
                }
            }
            let (px, py) = chart.backend_coord(&(i as f64 + 0.5, lo));
            let name = short(m, 24);
            if label_h > 30 {
                let style = text_style(19.0, BLACK, HPos::Right, VPos::Center)
                    .transform(FontTransform::Rotate270);
                draw_text(root, &name, (px, py + 8), &style)?;
            } else {
                draw_text(
                    root,
                    &name,
                    (px, py + 8),
                    &text_style(19.0, BLACK, HPos::Center, VPos::Top),
                )?;
            }
        }
        Ok(())
    }
}

/// One Fig. 2 scatter panel: points coloured by language group, labelled with their language, y = x dashed.
fn scatter(
    area: &Area,
    title: &str,
    pts: &[(f64, f64, &'static str, u8)],
    range: (f64, f64),
    x_desc: &str,
    y_desc: &str,
) -> Result<()> {
    let mut b = ChartBuilder::on(area);
    b.margin(8).x_label_area_size(62).y_label_area_size(74);
    if !title.is_empty() {
        b.caption(title, (FONT, 23));
    }
    let mut chart = b
        .build_cartesian_2d(range.0..range.1, range.0..range.1)
        .map_err(plot_err)?;
    chart
        .configure_mesh()
        .x_labels(5)
        .y_labels(5)
        .x_desc(x_desc)
        .y_desc(y_desc)
        .x_label_formatter(&|v| format!("{:.0}", 100.0 * v))
        .y_label_formatter(&|v| format!("{:.0}", 100.0 * v))
        .label_style((FONT, 21))
        .axis_desc_style((FONT, 21))
        .light_line_style(TRANSPARENT)
        .bold_line_style(GRID)
        .draw()
        .map_err(plot_err)?;
    chart
        .draw_series(DashedLineSeries::new(
            vec![(range.0, range.0), (range.1, range.1)],
            6,
            5,
            RGBColor(90, 90, 90).stroke_width(1),
        ))
        .map_err(plot_err)?;
    for &(x, y, l, marker) in pts {
        let colour = if is_east_asian(l) {
            EAST_ASIAN_COLOUR
        } else {
            WESTERN_COLOUR
        };
        let style = colour.filled();
        let label = (FONT, 18).into_font().color(&colour);
        if marker == 0 {
            chart
                .draw_series(std::iter::once(
                    EmptyElement::at((x, y))
                        + Circle::new((0, 0), 6, style)
                        + Text::new(l, (7, -20), label),
                ))
                .map_err(plot_err)?;
        } else {
            chart
                .draw_series(std::iter::once(
                    EmptyElement::at((x, y))
                        + TriangleMarker::new((0, 0), 7, style)
                        + Text::new(l, (7, 2), label),
                ))
                .map_err(plot_err)?;
        }
    }
    Ok(())
}

/// One panel of Fig. 4 / Fig. 5: the similarity between every two of `labels` (`pair(a, b)` with a < b; none on
/// the diagonal).
fn jaccard_panel(
    title: String,
    labels: &[String],
    cell: (i32, i32),
    pair: impl Fn(usize, usize) -> Option<f64>,
) -> Heat {
    Heat {
        title,
        rows: labels.to_vec(),
        cols: labels.to_vec(),
        rules: Vec::new(),
        values: symmetric(labels.len(), pair),
        cell,
        x_desc: String::new(),
        y_desc: String::new(),
    }
}
