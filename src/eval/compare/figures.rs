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

use super::measures::{Row, EAST_ASIAN};
use super::table::{variants_and_models, Key, Lookup};
use crate::core::error::{Error, Result};
use crate::eval::suites::sword::{LANGUAGES, STRATEGIES};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

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

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

fn plot_err(e: impl std::fmt::Display) -> Error {
    Error::Config(format!("plot: {e}"))
}

const FONT: &str = "sans-serif";
/// Western languages (blue) and East-Asian languages (vermillion), Okabe–Ito.
pub const WESTERN_COLOUR: RGBColor = RGBColor(0, 114, 178);
pub const EAST_ASIAN_COLOUR: RGBColor = RGBColor(213, 94, 0);
/// One colour per strategy (ORG, SS, OS, PSS, POS), Okabe–Ito.
pub const STRATEGY_COLOURS: [RGBColor; 5] = [
    RGBColor(110, 110, 110),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
];
const MISSING: RGBColor = RGBColor(225, 225, 225);
const GRID: RGBColor = RGBColor(232, 232, 232);

/// Viridis (matplotlib's), sampled at 0, 0.1, …, 1 and interpolated linearly.
const VIRIDIS: [(u8, u8, u8); 11] = [
    (68, 1, 84),
    (72, 36, 117),
    (65, 68, 135),
    (53, 95, 141),
    (42, 120, 142),
    (33, 145, 140),
    (34, 168, 132),
    (68, 191, 112),
    (122, 209, 81),
    (189, 223, 38),
    (253, 231, 37),
];

/// Viridis colour at t in [0, 1].
pub fn viridis(t: f64) -> RGBColor {
    let t = if t.is_finite() {
        t.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let x = t * 10.0;
    let i = (x.floor() as usize).min(9);
    let f = x - i as f64;
    let (a, b) = (VIRIDIS[i], VIRIDIS[i + 1]);
    let mix = |p: u8, q: u8| (p as f64 + (q as f64 - p as f64) * f).round() as u8;
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// A colour scale over [lo, hi].
#[derive(Clone, Copy, Debug)]
pub struct Scale {
    pub lo: f64,
    pub hi: f64,
}

impl Scale {
    /// The scale over the values (rounded outwards to 0.05, at least 0.05 wide, within [0, 1]).
    pub fn of(values: impl IntoIterator<Item = f64>) -> Scale {
        let (lo, hi) = values
            .into_iter()
            .filter(|v| v.is_finite())
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
                (a.min(v), b.max(v))
            });
        if !lo.is_finite() {
            return Scale { lo: 0.0, hi: 1.0 };
        }
        let lo = ((lo * 20.0).floor() / 20.0).clamp(0.0, 1.0);
        let mut hi = ((hi * 20.0).ceil() / 20.0).clamp(0.0, 1.0);
        if hi - lo < 0.05 {
            hi = (lo + 0.05).min(1.0);
        }
        let lo = lo.min(hi - 0.05);
        Scale { lo, hi }
    }

    fn t(&self, v: f64) -> f64 {
        (v - self.lo) / (self.hi - self.lo)
    }

    fn colour(&self, v: f64) -> RGBColor {
        viridis(self.t(v))
    }

    /// Black on the light half of viridis, white on the dark half.
    fn ink(&self, v: f64) -> RGBColor {
        if self.t(v) > 0.55 {
            BLACK
        } else {
            WHITE
        }
    }
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

/// A label cut to `max` characters (an ellipsis marks the cut).
fn short(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max - 1).collect();
        t.push('…');
        t
    }
}

fn pct(v: f64) -> String {
    format!("{:.0}", 100.0 * v)
}

fn text_style(size: f64, colour: RGBColor, h: HPos, v: VPos) -> TextStyle<'static> {
    (FONT, size).into_font().color(&colour).pos(Pos::new(h, v))
}

fn draw_text(area: &Area, s: &str, at: (i32, i32), style: &TextStyle) -> Result<()> {
    area.draw(&Text::new(s.to_string(), at, style.clone()))
        .map_err(plot_err)
}

/// A heat map panel drawn in pixels: a title, row labels on the left, column labels below (rotated when
/// long), one cell per value with its value in percent, grey cells for missing values.
struct Heat {
    title: String,
    rows: Vec<String>,
    cols: Vec<String>,
    /// Row indices before which a thicker rule separates blocks.
    rules: Vec<usize>,
    values: Vec<Vec<Option<f64>>>,
    cell: (i32, i32),
    x_desc: String,
    y_desc: String,
}

const TITLE_H: i32 = 30;

impl Heat {
    fn row_label_w(&self) -> i32 {
        let chars = self
            .rows
            .iter()
            .map(|r| r.chars().count())
            .max()
            .unwrap_or(1) as i32;
        chars * 11 + 14 + if self.y_desc.is_empty() { 0 } else { 24 }
    }

    fn rotate_cols(&self) -> bool {
        self.cols
            .iter()
            .any(|c| c.chars().count() * 9 > self.cell.0 as usize)
    }

    fn col_label_h(&self) -> i32 {
        let base = if self.rotate_cols() {
            self.cols
                .iter()
                .map(|c| c.chars().count())
                .max()
                .unwrap_or(1) as i32
                * 9
                + 12
        } else {
            24
        };
        base + if self.x_desc.is_empty() { 0 } else { 24 }
    }

    fn size(&self) -> (i32, i32) {
        (
            self.row_label_w() + self.cell.0 * self.cols.len() as i32 + 12,
            TITLE_H + self.cell.1 * self.rows.len() as i32 + self.col_label_h() + 8,
        )
    }

    fn draw(&self, area: &Area, at: (i32, i32), scale: &Scale) -> Result<()> {
        let (cw, ch) = self.cell;
        let x0 = at.0 + self.row_label_w();
        let y0 = at.1 + TITLE_H;
        let grid_w = cw * self.cols.len() as i32;
        let grid_h = ch * self.rows.len() as i32;
        draw_text(
            area,
            &self.title,
            (x0 + grid_w / 2, at.1 + 4),
            &text_style(21.0, BLACK, HPos::Center, VPos::Top),
        )?;
        let value_font = (ch as f64 * 0.78).clamp(12.0, 18.0);
        for (r, row) in self.values.iter().enumerate() {
            for (c, v) in row.iter().enumerate() {
                let (x, y) = (x0 + cw * c as i32, y0 + ch * r as i32);
                let fill = v.map_or(MISSING, |v| scale.colour(v));
                area.draw(&Rectangle::new([(x, y), (x + cw, y + ch)], fill.filled()))
                    .map_err(plot_err)?;
                let (s, ink) = match v {
                    Some(v) => (pct(*v), scale.ink(*v)),
                    None => ("–".to_string(), RGBColor(120, 120, 120)),
                };
                draw_text(
                    area,
                    &s,
                    (x + cw / 2, y + ch / 2),
                    &text_style(value_font, ink, HPos::Center, VPos::Center),
                )?;
            }
        }
        for &r in &self.rules {
            let y = y0 + ch * r as i32;
            area.draw(&PathElement::new(
                vec![(x0, y), (x0 + grid_w, y)],
                WHITE.stroke_width(3),
            ))
            .map_err(plot_err)?;
        }
        area.draw(&Rectangle::new(
            [(x0, y0), (x0 + grid_w, y0 + grid_h)],
            BLACK.stroke_width(1),
        ))
        .map_err(plot_err)?;
        let label = text_style(19.0, BLACK, HPos::Right, VPos::Center);
        for (r, name) in self.rows.iter().enumerate() {
            draw_text(area, name, (x0 - 6, y0 + ch * r as i32 + ch / 2), &label)?;
        }
        let rotate = self.rotate_cols();
        for (c, name) in self.cols.iter().enumerate() {
            let x = x0 + cw * c as i32 + cw / 2;
            if rotate {
                let style = text_style(19.0, BLACK, HPos::Right, VPos::Center)
                    .transform(FontTransform::Rotate270);
                draw_text(area, name, (x, y0 + grid_h + 6), &style)?;
            } else {
                draw_text(
                    area,
                    name,
                    (x, y0 + grid_h + 5),
                    &text_style(19.0, BLACK, HPos::Center, VPos::Top),
                )?;
            }
        }
        if !self.x_desc.is_empty() {
            draw_text(
                area,
                &self.x_desc,
                (x0 + grid_w / 2, at.1 + self.size().1 - 6),
                &text_style(19.0, BLACK, HPos::Center, VPos::Bottom),
            )?;
        }
        if !self.y_desc.is_empty() {
            let style = text_style(19.0, BLACK, HPos::Center, VPos::Top)
                .transform(FontTransform::Rotate270);
            draw_text(area, &self.y_desc, (at.0 + 2, y0 + grid_h / 2), &style)?;
        }
        Ok(())
    }
}

/// Round tick values within the scale: a step of 5, 10, 20 or 25 points giving three to six ticks.
pub fn ticks(scale: &Scale) -> Vec<f64> {
    let span = scale.hi - scale.lo;
    let step = [0.05, 0.1, 0.2, 0.25]
        .into_iter()
        .find(|s| span / s <= 5.0 + 1e-9)
        .unwrap_or(0.25);
    let first = (scale.lo / step - 1e-9).ceil() as i64;
    let last = (scale.hi / step + 1e-9).floor() as i64;
    (first..=last).map(|i| i as f64 * step).collect()
}

/// An n × n matrix of a symmetric measure stored once per pair: cell (i, j) is `pair(min, max)`, the diagonal
/// blank.
fn symmetric(n: usize, pair: impl Fn(usize, usize) -> Option<f64>) -> Vec<Vec<Option<f64>>> {
    (0..n)
        .map(|i| {
            (0..n)
                .map(|j| (i != j).then(|| pair(i.min(j), i.max(j))).flatten())
                .collect()
        })
        .collect()
}

/// Width of a vertical colour bar with its labels.
const BAR_W: i32 = 110;

/// A vertical colour bar for `scale` at `at`, `h` pixels tall, ticks in percent, `label` rotated beside it.
fn colour_bar(area: &Area, at: (i32, i32), h: i32, scale: &Scale, label: &str) -> Result<()> {
    let (x, y) = (at.0 + 14, at.1);
    let w = 20;
    let steps = 64;
    for i in 0..steps {
        let t0 = i as f64 / steps as f64;
        let v = scale.lo + (scale.hi - scale.lo) * (t0 + 0.5 / steps as f64);
        let y1 = y + h - (h as f64 * t0) as i32;
        let y0 = y + h - (h as f64 * (i + 1) as f64 / steps as f64) as i32;
        area.draw(&Rectangle::new(
            [(x, y0), (x + w, y1)],
            scale.colour(v).filled(),
        ))
        .map_err(plot_err)?;
    }
    area.draw(&Rectangle::new(
        [(x, y), (x + w, y + h)],
        BLACK.stroke_width(1),
    ))
    .map_err(plot_err)?;
    for v in ticks(scale) {
        let ty = y + h - (h as f64 * scale.t(v)).round() as i32;
        area.draw(&PathElement::new(
            vec![(x + w, ty), (x + w + 5, ty)],
            BLACK.stroke_width(1),
        ))
        .map_err(plot_err)?;
        draw_text(
            area,
            &format!("{}%", pct(v)),
            (x + w + 8, ty),
            &text_style(17.0, BLACK, HPos::Left, VPos::Center),
        )?;
    }
    let style =
        text_style(18.0, BLACK, HPos::Center, VPos::Top).transform(FontTransform::Rotate270);
    draw_text(area, label, (x + w + 58, y + h / 2), &style)?;
    Ok(())
}

/// A white canvas of `w` × `h` pixels with `title` centred on top; `draw` adds the rest. The SVG text.
fn canvas(w: i32, h: i32, title: &str, draw: impl FnOnce(&Area) -> Result<()>) -> Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (w as u32, h as u32)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        draw_text(
            &root,
            title,
            (w / 2, 10),
            &text_style(22.0, BLACK, HPos::Center, VPos::Top),
        )?;
        draw(&root)?;
        root.present().map_err(plot_err)?;
    }
    Ok(svg)
}

/// Panels laid out `per_row` to a row with a figure title above and a colour bar on the right: the SVG.
fn heat_grid(
    title: &str,
    panels: &[Heat],
    per_row: usize,
    scale: &Scale,
    bar_label: &str,
) -> Result<String> {
    let (pw, ph) = panels
        .iter()
        .map(Heat::size)
        .fold((0, 0), |(a, b), (w, h)| (a.max(w), b.max(h)));
    let per_row = per_row.max(1).min(panels.len().max(1));
    let rows = panels.len().div_ceil(per_row).max(1);
    let top = 44;
    let w = pw * per_row as i32 + BAR_W + 24;
    let h = top + ph * rows as i32 + 10;
    canvas(w, h, title, |root| {
        for (i, p) in panels.iter().enumerate() {
            let (r, c) = (i / per_row, i % per_row);
            p.draw(root, (12 + pw * c as i32, top + ph * r as i32), scale)?;
        }
        let bar_h = (ph - TITLE_H - 40).clamp(120, 420);
        colour_bar(
            root,
            (12 + pw * per_row as i32, top + TITLE_H),
            bar_h,
            scale,
            bar_label,
        )?;
        Ok(())
    })
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

    fn figure(
        &self,
        kind: &'static str,
        file: String,
        title: String,
        caption: &str,
        svg: String,
    ) -> Figure {
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
        Ok(self.figure(
            "accuracy",
            format!("accuracy_{}.svg", self.variant),
            title,
            "Share of statements judged correctly (ORG true, the four distortions false), per language and strategy; colour scale over the values shown.",
            svg,
        ))
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
        Ok(self.figure(
            "fig3",
            format!("fig3_{}.svg", self.variant),
            title,
            "Rows: strategy × language; columns: the agreement level k/L (statements that exactly k of the model's L languages answered correctly). A cell is the share of those statements this language answered correctly (L/L is 100 % by definition); grey: no statement at that level.",
            svg,
        ))
    }

    fn jaccard_scale(&self, measure: &str, strategy: &str) -> Scale {
        Scale::of(self.look.values_of(measure, self.variant, strategy))
    }

    fn fig4(&self, s: &str) -> Result<Figure> {
        let n = self.models.len();
        let cell = if n <= 6 { (58, 40) } else { (34, 28) };
        let labels: Vec<String> = self.models.iter().map(|m| short(m, 18)).collect();
        let panels: Vec<Heat> = self
            .langs
            .iter()
            .map(|l| Heat {
                title: l.to_string(),
                rows: labels.clone(),
                cols: labels.clone(),
                rules: Vec::new(),
                values: symmetric(n, |a, b| {
                    self.look.value(Key {
                        model_b: Some(&self.models[b]),
                        language: Some(l),
                        strategy: Some(s),
                        ..self.key("jaccard_models", &self.models[a])
                    })
                }),
                cell,
                x_desc: String::new(),
                y_desc: String::new(),
            })
            .collect();
        let scale = self.jaccard_scale("jaccard_models", s);
        let title = format!(
            "Fig. 4 — Jaccard similarity between models (%), {s} — {}",
            self.variant
        );
        let svg = heat_grid(&title, &panels, 4, &scale, "Jaccard similarity")?;
        Ok(self.figure(
            "fig4",
            format!("fig4_{}_{s}.svg", self.variant),
            title,
            "One matrix per language: Jaccard similarity of the sets of statements two models answered correctly, over the statements both were asked (diagonal left blank: 100 % by definition). Colour scale over the values of this strategy.",
            svg,
        ))
    }

    fn fig5(&self, s: &str) -> Result<Figure> {
        let n = self.langs.len();
        let panels: Vec<Heat> = self
            .models
            .iter()
            .map(|m| Heat {
                title: short(m, 28),
                rows: self.langs.iter().map(|l| l.to_string()).collect(),
                cols: self.langs.iter().map(|l| l.to_string()).collect(),
                rules: Vec::new(),
                values: symmetric(n, |a, b| {
                    self.look.value(Key {
                        language: Some(self.langs[a]),
                        language_b: Some(self.langs[b]),
                        strategy: Some(s),
                        ..self.key("jaccard_languages", m)
                    })
                }),
                cell: (40, 32),
                x_desc: String::new(),
                y_desc: String::new(),
            })
            .collect();
        let scale = self.jaccard_scale("jaccard_languages", s);
        let title = format!(
            "Fig. 5 — Jaccard similarity between languages (%), {s} — {}",
            self.variant
        );
        let svg = heat_grid(
            &title,
            &panels,
            self.per_row(),
            &scale,
            "Jaccard similarity",
        )?;
        Ok(self.figure(
            "fig5",
            format!("fig5_{}_{s}.svg", self.variant),
            title,
            "One matrix per model: Jaccard similarity of the sets of statements two languages answered correctly, over the statements asked in both (diagonal blank). Colour scale over the values of this strategy.",
            svg,
        ))
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
            format!("fig2_{}.svg", self.variant),
            format!("Fig. 2 — swap difficulty and original against shuffled accuracy — {}", self.variant),
            "Top row of each band: per language, accuracy on the random swap (x) against the property-based swap (y); circles SS → PSS, triangles OS → POS. Below a point on the dashed y = x line, the plausible swap is the harder one. Bottom row: accuracy on the original statements (x) against the four distortions pooled (y). Blue: Western languages (en fr de es it pt); orange: East-Asian (ko ja). Axes span the values shown, the same in every panel of a row.",
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
            format!("gap_{}.svg", self.variant),
            format!("Cross-lingual gap — {}", self.variant),
            "Top: per model and strategy, the best language's accuracy minus the worst's (the paper's headline gap), with 95 % bootstrap intervals resampling original triples. Bottom: mean accuracy of the Western languages minus that of ko and ja (negative: the East-Asian languages do better). Axes span the values and intervals shown.",
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
