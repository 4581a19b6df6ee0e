//! Drawing primitives for the comparison's figures: colours (viridis for heat maps, Okabe–Ito for groups and
//! strategies), colour scales and ticks, text, a heat-map panel, a colour bar, a titled canvas and a grid of
//! panels. The figures module composes them into the paper's figures.

use crate::core::error::{Error, Result};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

pub(super) type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

pub(super) fn plot_err(e: impl std::fmt::Display) -> Error {
    Error::Config(format!("plot: {e}"))
}

pub(super) const FONT: &str = "sans-serif";
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
pub(super) const MISSING: RGBColor = RGBColor(225, 225, 225);
pub(super) const GRID: RGBColor = RGBColor(232, 232, 232);

/// Viridis (matplotlib's), sampled at 0, 0.1, …, 1 and interpolated linearly.
pub(super) const VIRIDIS: [(u8, u8, u8); 11] = [
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

    pub(super) fn t(&self, v: f64) -> f64 {
        (v - self.lo) / (self.hi - self.lo)
    }

    pub(super) fn colour(&self, v: f64) -> RGBColor {
        viridis(self.t(v))
    }

    /// Black on the light half of viridis, white on the dark half.
    pub(super) fn ink(&self, v: f64) -> RGBColor {
        if self.t(v) > 0.55 {
            BLACK
        } else {
            WHITE
        }
    }
}

/// A label cut to `max` characters (an ellipsis marks the cut).
pub(super) fn short(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max - 1).collect();
        t.push('…');
        t
    }
}

pub(super) fn pct(v: f64) -> String {
    format!("{:.0}", 100.0 * v)
}

pub(super) fn text_style(size: f64, colour: RGBColor, h: HPos, v: VPos) -> TextStyle<'static> {
    (FONT, size).into_font().color(&colour).pos(Pos::new(h, v))
}

pub(super) fn draw_text(area: &Area, s: &str, at: (i32, i32), style: &TextStyle) -> Result<()> {
    area.draw(&Text::new(s.to_string(), at, style.clone()))
        .map_err(plot_err)
}

/// A heat map panel drawn in pixels: a title, row labels on the left, column labels below (rotated when
/// long), one cell per value with its value in percent, grey cells for missing values.
pub(super) struct Heat {
    pub(super) title: String,
    pub(super) rows: Vec<String>,
    pub(super) cols: Vec<String>,
    /// Row indices before which a thicker rule separates blocks.
    pub(super) rules: Vec<usize>,
    pub(super) values: Vec<Vec<Option<f64>>>,
    pub(super) cell: (i32, i32),
    pub(super) x_desc: String,
    pub(super) y_desc: String,
}

pub(super) const TITLE_H: i32 = 30;

impl Heat {
    pub(super) fn row_label_w(&self) -> i32 {
        let chars = self
            .rows
            .iter()
            .map(|r| r.chars().count())
            .max()
            .unwrap_or(1) as i32;
        chars * 11 + 14 + if self.y_desc.is_empty() { 0 } else { 24 }
    }

    pub(super) fn rotate_cols(&self) -> bool {
        self.cols
            .iter()
            .any(|c| c.chars().count() * 9 > self.cell.0 as usize)
    }

    pub(super) fn col_label_h(&self) -> i32 {
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

    pub(super) fn size(&self) -> (i32, i32) {
        (
            self.row_label_w() + self.cell.0 * self.cols.len() as i32 + 12,
            TITLE_H + self.cell.1 * self.rows.len() as i32 + self.col_label_h() + 8,
        )
    }

    pub(super) fn draw(&self, area: &Area, at: (i32, i32), scale: &Scale) -> Result<()> {
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
pub(super) fn symmetric(
    n: usize,
    pair: impl Fn(usize, usize) -> Option<f64>,
) -> Vec<Vec<Option<f64>>> {
    (0..n)
        .map(|i| {
            (0..n)
                .map(|j| (i != j).then(|| pair(i.min(j), i.max(j))).flatten())
                .collect()
        })
        .collect()
}

/// Width of a vertical colour bar with its labels.
pub(super) const BAR_W: i32 = 110;

/// A vertical colour bar for `scale` at `at`, `h` pixels tall, ticks in percent, `label` rotated beside it.
pub(super) fn colour_bar(
    area: &Area,
    at: (i32, i32),
    h: i32,
    scale: &Scale,
    label: &str,
) -> Result<()> {
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
pub(super) fn canvas(
    w: i32,
    h: i32,
    title: &str,
    draw: impl FnOnce(&Area) -> Result<()>,
) -> Result<String> {
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
pub(super) fn heat_grid(
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
