//! The report's SVG charts (plotters' SVG backend): grouped bars with CPU
//! points, lines against a swept parameter, and per-second series with the
//! ramp-up shaded. Axes carry human metric names with units, ticks carry
//! thousands separators, sizes sit on a log₂ axis labelled `512`, `4k`,
//! `64k`, and every configuration keeps one colour in every chart.

use crate::compare::Row;
use crate::fmt::{size, tick};
use plotters::coord::Shift;
use plotters::prelude::*;

pub const W: u32 = 900;
pub const H: u32 = 420;
const COLORS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];
const THRESHOLD: RGBColor = RGBColor(46, 160, 67);
const FONT: &str = "sans-serif";

pub fn color(i: usize) -> RGBColor {
    COLORS[i % COLORS.len()]
}

/// The colour as CSS, for the tables' swatches.
pub fn css_color(i: usize) -> String {
    let c = color(i);
    format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2)
}

fn nice_max(v: f64) -> f64 {
    if v <= 0.0 || !v.is_finite() {
        1.0
    } else {
        v * 1.15
    }
}

fn e<T: std::fmt::Display>(x: T) -> String {
    x.to_string()
}

/// A legend entry's mark.
#[derive(Clone, Copy)]
enum Mark {
    /// A filled square: a bar's colour, or a band's tint.
    Fill(RGBAColor),
    Line(RGBColor),
    Dashed(RGBColor),
    Ring,
}

const LEGEND_H: u32 = 30;

/// The legend as a strip under the chart, so it never hides a point.
fn legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    entries: &[(Mark, String)],
) -> Result<(), String> {
    let style = TextStyle::from((FONT, 13).into_font()).color(&BLACK);
    let places = legend_places(entries.iter().map(|x| x.1.as_str()));
    for ((mark, text), (x, y)) in entries.iter().zip(places) {
        let line =
            |a: (i32, i32), b: (i32, i32), c: RGBColor| PathElement::new([a, b], c.stroke_width(2));
        match *mark {
            Mark::Fill(c) => area.draw(&Rectangle::new([(x, y - 6), (x + 14, y + 6)], c.filled())),
            Mark::Line(c) => area.draw(&line((x, y), (x + 18, y), c)),
            Mark::Dashed(c) => [0, 8, 16]
                .into_iter()
                .try_for_each(|dx| area.draw(&line((x + dx, y), (x + dx + 4, y), c))),
            Mark::Ring => area.draw(&Circle::new((x + 7, y), 5, BLACK.stroke_width(2))),
        }
        .map_err(e)?;
        area.draw_text(text, &style, (x + 24, y - 7)).map_err(e)?;
    }
    Ok(())
}

const LEGEND_X: i32 = 90;

/// Room a legend entry takes: its mark, its text (about 7 px a character
/// at 13 px) and the gap to the next.
fn entry_width(text: &str) -> i32 {
    24 + (text.chars().count() as i32) * 7 + 22
}

/// Where the entries with these texts go, left to right: a long legend
/// wraps rather than running off the chart.
fn legend_places<'a>(texts: impl Iterator<Item = &'a str>) -> Vec<(i32, i32)> {
    let (mut x, mut y) = (LEGEND_X, 14);
    texts
        .map(|t| {
            let w = entry_width(t);
            if x > LEGEND_X && x + w > W as i32 {
                x = LEGEND_X;
                y += LEGEND_H as i32 - 8;
            }
            x += w;
            (x - w, y)
        })
        .collect()
}

/// Rows the legend of entries with these texts takes: one for each entry
/// that starts a row.
fn legend_rows<'a>(texts: impl Iterator<Item = &'a str>) -> u32 {
    let places = legend_places(texts);
    places.iter().filter(|p| p.0 == LEGEND_X).count().max(1) as u32
}

/// A chart `h` pixels high with the legend strip of `rows` rows under it
/// (the chart keeps its height): `draw` draws the chart and returns the
/// legend's entries.
fn svg(
    h: u32,
    rows: u32,
    draw: impl FnOnce(&DrawingArea<SVGBackend, Shift>) -> Result<Vec<(Mark, String)>, String>,
) -> Result<String, String> {
    let mut svg = String::new();
    let strip_h = LEGEND_H + (rows.max(1) - 1) * (LEGEND_H - 8);
    let h = h + strip_h - LEGEND_H;
    {
        let whole = SVGBackend::with_string(&mut svg, (W, h)).into_drawing_area();
        whole.fill(&WHITE).map_err(e)?;
        let (root, strip) = whole.split_vertically(h - strip_h);
        legend(&strip, &draw(&root)?)?;
        whole.present().map_err(e)?;
    }
    Ok(svg)
}

/// The style of every axis: its labels and its description.
macro_rules! axis_style {
    ($axes:expr) => {
        $axes.label_style((FONT, 13)).axis_desc_style((FONT, 14))
    };
}

/// Room left and right of a bar chart's plot: the two axes' labels and
/// the margins.
pub(crate) const BARS_PLOT_MARGIN: i32 = 80 + 60 + 24;
/// About 7 px a character at 13 px, as the legend counts.
pub(crate) const CHAR_W: i32 = 7;
/// Longest rotated label; longer names are shortened in the middle.
const ROTATED_MAX: usize = 32;

/// How the category labels of an x axis are set: across when every one
/// fits its slot, else turned to run down from the axis (one line each,
/// so they never overlap however many there are).
struct XLabels {
    rotated: bool,
    longest: usize,
}

impl XLabels {
    fn for_names(names: &[String], plot_w: i32) -> XLabels {
        let longest = names.iter().map(|n| n.chars().count()).max().unwrap_or(0);
        let slot = plot_w / names.len().max(1) as i32;
        XLabels {
            rotated: longest as i32 * CHAR_W + 8 > slot,
            longest: longest.min(ROTATED_MAX),
        }
    }

    /// Height the turned labels need beyond the usual label area.
    fn extra_height(&self) -> u32 {
        if self.rotated {
            (self.longest as i32 * CHAR_W).max(0) as u32
        } else {
            0
        }
    }

    /// Draws `names[i]` under the point `at[i]` (backend coordinates of
    /// its category on the x axis).
    fn draw<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        names: &[String],
        at: &[(i32, i32)],
    ) -> Result<(), String> {
        use plotters::style::text_anchor::{HPos, Pos, VPos};
        let base = TextStyle::from((FONT, 13).into_font()).color(&BLACK);
        for (name, &(x, y)) in names.iter().zip(at) {
            if self.rotated {
                let style = base
                    .transform(FontTransform::Rotate90)
                    .pos(Pos::new(HPos::Left, VPos::Center));
                root.draw_text(&shorten(name, ROTATED_MAX), &style, (x, y + 8))
                    .map_err(e)?;
            } else {
                let style = base.pos(Pos::new(HPos::Center, VPos::Top));
                root.draw_text(name, &style, (x, y + 8)).map_err(e)?;
            }
        }
        Ok(())
    }
}

/// `s` in at most `max` characters, the middle replaced by "…" (names
/// differ at their ends: `4k-random-read`, `4k-random-write`).
fn shorten(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max {
        return s.to_string();
    }
    let head = (max - 1) / 2;
    let tail = max - 1 - head;
    let ends =
        |r: std::ops::Range<usize>| s.chars().skip(r.start).take(r.len()).collect::<String>();
    format!("{}…{}", ends(0..head), ends(n - tail..n))
}

/// Grouped bars of `rows`' metric per configuration (left axis, `y_label`),
/// whole-host CPU % of each as a point in the configuration's colour (right
/// axis), and the CPU threshold as a dashed line with a band along the CPU
/// axis.
pub fn bars(
    title: &str,
    y_label: &str,
    rows: &[&Row],
    configs: &[String],
    threshold: Option<f64>,
) -> Result<String, String> {
    let names: Vec<String> = rows
        .iter()
        .map(|r| r.test.rsplit('/').next().unwrap_or(&r.test).to_string())
        .collect();
    let xl = XLabels::for_names(&names, W as i32 - BARS_PLOT_MARGIN);
    svg(H + xl.extra_height(), 1, |root| {
        let n = rows.len();
        let vmax = rows
            .iter()
            .flat_map(|r| r.values.iter().flatten())
            .fold(0.0f64, |a, b| a.max(*b));
        let cmax = rows
            .iter()
            .flat_map(|r| r.cpu_pct.iter().flatten())
            .fold(threshold.unwrap_or(0.0), |a, b| a.max(*b));
        let x1 = n as f64 - 0.5;
        let mut chart = ChartBuilder::on(root)
            .caption(title, (FONT, 18))
            .margin(12)
            .x_label_area_size(40 + xl.extra_height())
            .y_label_area_size(80)
            .right_y_label_area_size(60)
            .build_cartesian_2d(-0.5f64..x1, 0f64..nice_max(vmax))
            .map_err(e)?
            .set_secondary_coord(-0.5f64..x1, 0f64..nice_max(cmax).clamp(1.0, 105.0));
        axis_style!(chart.configure_mesh())
            .disable_x_mesh()
            .light_line_style(TRANSPARENT)
            .x_labels(0)
            .y_label_formatter(&|v| tick(*v))
            .y_desc(y_label)
            .draw()
            .map_err(e)?;
        let at: Vec<(i32, i32)> = (0..n)
            .map(|i| chart.backend_coord(&(i as f64, 0.0)))
            .collect();
        xl.draw(root, &names, &at)?;
        axis_style!(chart.configure_secondary_axes())
            .y_label_formatter(&|v| tick(*v))
            .y_desc("CPU % (points)")
            .draw()
            .map_err(e)?;
        let mut entries: Vec<(Mark, String)> = Vec::new();
        if let Some(th) = threshold {
            // The band lies on the CPU axis only (outside the plot, from 0
            // to the threshold), with a tick at the threshold: a line
            // across the plot cut the bars, whose axis is another one.
            let sec = chart.borrow_secondary();
            let (px, py_th) = sec.backend_coord(&(x1, th));
            let (_, py_0) = sec.backend_coord(&(x1, 0.0));
            root.draw(&Rectangle::new(
                [(px + 1, py_th), (px + 9, py_0)],
                THRESHOLD.mix(0.45).filled(),
            ))
            .map_err(e)?;
            root.draw(&PathElement::new(
                [(px + 1, py_th), (px + 14, py_th)],
                THRESHOLD.stroke_width(2),
            ))
            .map_err(e)?;
            entries.push((
                Mark::Fill(THRESHOLD.mix(0.45)),
                format!("CPU ≤ {} % (threshold)", tick(th)),
            ));
        }
        let k = configs.len().max(1) as f64;
        let w = (0.8 / k).min(0.3);
        let start = -w * k / 2.0;
        for (ci, label) in configs.iter().enumerate() {
            let c = color(ci);
            let bars = rows.iter().enumerate().filter_map(|(i, r)| {
                r.values[ci].map(|v| {
                    let x0 = i as f64 + start + ci as f64 * w;
                    Rectangle::new([(x0, 0.0), (x0 + w * 0.92, v)], c.filled())
                })
            });
            chart.draw_series(bars).map_err(e)?;
            entries.push((Mark::Fill(c.to_rgba()), label.clone()));
        }
        // CPU points after every bar, so no bar hides a point.
        for ci in 0..configs.len() {
            let c = color(ci);
            let points = rows.iter().enumerate().filter_map(|(i, r)| {
                r.cpu_pct[ci].map(|v| {
                    let x = i as f64 + start + (ci as f64 + 0.46) * w;
                    // In its colour, with a black rim and a white centre so
                    // it shows on a bar of the same colour.
                    EmptyElement::at((x, v))
                        + Circle::new((0, 0), 8, BLACK.filled())
                        + Circle::new((0, 0), 6, c.filled())
                        + Circle::new((0, 0), 2, WHITE.filled())
                })
            });
            chart.draw_secondary_series(points).map_err(e)?;
        }
        entries.push((
            Mark::Ring,
            "CPU % (right axis), in each configuration's colour".into(),
        ));
        Ok(entries)
    })
}

/// Line width and marker radius of the `k`-th of `n` lines: the first
/// drawn is the widest, so equal lines stay visible under later ones.
fn under(k: usize, n: usize) -> (u32, u32) {
    let up = n.saturating_sub(k + 1).min(2) as u32;
    (2 + up * 3 / 2, 4 + up)
}

/// How an x axis is scaled and labelled.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum XScale {
    Linear,
    /// Byte sizes on a log₂ axis: `512`, `4k`, `64k`.
    Size,
    /// Counts that are powers of two on a log₂ axis: `1`, `4`, `16`, `64`.
    Log,
    /// Other counts spanning 4× or more (connections 1, 5, 10, 100, 1000)
    /// on a log₁₀ axis.
    Log10,
}

impl XScale {
    fn to_axis(self, x: f64) -> f64 {
        match self {
            XScale::Linear => x,
            XScale::Size | XScale::Log => x.log2(),
            XScale::Log10 => x.log10(),
        }
    }
}

pub fn scale_for(param: &str, xs: &[f64]) -> XScale {
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().copied().fold(0.0f64, f64::max);
    let wide = lo > 0.0 && hi / lo >= 4.0;
    let powers_of_two = xs
        .iter()
        .all(|x| *x >= 1.0 && x.fract() == 0.0 && (*x as u64).is_power_of_two());
    match param {
        "bs" | "msg" | "req" | "resp" | "size" | "sockbuf" | "align" if wide => XScale::Size,
        _ if wide && powers_of_two => XScale::Log,
        _ if wide => XScale::Log10,
        _ => XScale::Linear,
    }
}

/// One configuration's line: its colour index, label and (x, y) points.
pub type Line = (usize, String, Vec<(f64, f64)>);

/// Lines, one per configuration (in its colour), of y against x.
pub fn lines(
    title: &str,
    x_label: &str,
    scale: XScale,
    y_label: &str,
    series: &[Line],
) -> Result<String, String> {
    svg(H, 1, |root| {
        let percent = y_label.contains('%') && !y_label.contains(" per ");
        // Each line's points on the axes (a log axis has no place for 0).
        let pts: Vec<Vec<(f64, f64)>> = (series.iter())
            .map(|s| {
                (s.2.iter())
                    .filter(|(x, y)| y.is_finite() && (scale == XScale::Linear || *x > 0.0))
                    .map(|(x, y)| (scale.to_axis(*x), *y))
                    .collect()
            })
            .collect();
        let xs = pts.iter().flatten().map(|p| p.0);
        let (xmin, xmax) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
            (a.min(x), b.max(x))
        });
        let ymax = pts.iter().flatten().map(|p| p.1).fold(0.0f64, f64::max);
        let (xmin, xmax) = if xmin.is_finite() && xmax > xmin {
            let pad = if scale == XScale::Linear {
                (xmax - xmin) * 0.03
            } else {
                0.25
            };
            (xmin - pad, xmax + pad)
        } else if xmin.is_finite() {
            (xmin - 1.0, xmin + 1.0)
        } else {
            (0.0, 1.0)
        };
        // A log axis is labelled at the tested values themselves (drawn
        // below), not at powers the test never ran: 5 and 100 connections
        // had no label between 4, 8, 64 and 128.
        let ticks = if scale == XScale::Linear { 10 } else { 0 };
        let ytop = if percent {
            nice_max(ymax).min(105.0)
        } else {
            nice_max(ymax)
        };
        let xfmt = |x: &f64| tick(*x);
        let mut chart = ChartBuilder::on(root)
            .caption(title, (FONT, 18))
            .margin(12)
            .x_label_area_size(45)
            .y_label_area_size(80)
            .build_cartesian_2d(xmin..xmax, 0f64..ytop)
            .map_err(e)?;
        axis_style!(chart.configure_mesh())
            .light_line_style(TRANSPARENT)
            .x_labels(ticks)
            .x_label_formatter(&xfmt)
            .y_label_formatter(&|v| tick(*v))
            .x_desc(x_label)
            .y_desc(y_label)
            .draw()
            .map_err(e)?;
        if scale != XScale::Linear {
            let mut tested: Vec<f64> = series
                .iter()
                .flat_map(|s| s.2.iter().map(|p| p.0))
                .filter(|x| *x > 0.0)
                .collect();
            tested.sort_by(f64::total_cmp);
            tested.dedup();
            tested_ticks(root, &chart, scale, &tested)?;
        }
        let mut entries = Vec::new();
        let n = pts.len();
        for (k, ((ci, label, _), p)) in series.iter().zip(&pts).enumerate() {
            let c = color(*ci);
            // Earlier lines are wider, so a line drawn over an equal one
            // leaves it visible on both sides.
            let (w, r) = under(k, n);
            chart
                .draw_series(LineSeries::new(p.iter().copied(), c.stroke_width(w)))
                .map_err(e)?;
            chart
                .draw_series(p.iter().map(|q| Circle::new(*q, r, c.filled())))
                .map_err(e)?;
            entries.push((Mark::Line(c), label.clone()));
        }
        Ok(entries)
    })
}

/// Tick marks and labels at the tested values of a log axis; a label that
/// would run into the previous one is left out (its tick stays).
fn tested_ticks<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    chart: &ChartContext<
        DB,
        Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
    >,
    scale: XScale,
    tested: &[f64],
) -> Result<(), String> {
    use plotters::style::text_anchor::{HPos, Pos, VPos};
    let style = TextStyle::from((FONT, 13).into_font())
        .color(&BLACK)
        .pos(Pos::new(HPos::Center, VPos::Top));
    let y0 = chart.y_range().start;
    let mut right_of_last = i32::MIN;
    for &x in tested {
        let (px, py) = chart.backend_coord(&(scale.to_axis(x), y0));
        root.draw(&PathElement::new(
            [(px, py), (px, py + 5)],
            BLACK.stroke_width(1),
        ))
        .map_err(e)?;
        let text = match scale {
            XScale::Size => size(x),
            _ => tick(x),
        };
        let half = text.chars().count() as i32 * CHAR_W / 2;
        if px - half > right_of_last + 4 {
            root.draw_text(&text, &style, (px, py + 7)).map_err(e)?;
            right_of_last = px + half;
        }
    }
    Ok(())
}

/// One configuration's per-second series of a test.
pub struct SecondSeries {
    pub color: usize,
    /// The k-th repetition of its configuration in the chart: drawn in a
    /// lighter shade of the configuration's colour, so each stays apart.
    pub shade: usize,
    pub label: String,
    /// (time since the workload started, throughput), at each second's middle.
    pub throughput: Vec<(f64, f64)>,
    pub cpu: Vec<(f64, f64)>,
    pub ramp_s: f64,
}

/// Throughput (solid, left axis) and whole-host CPU % (dashed, right axis)
/// second by second, one colour per configuration, the ramp-up shaded.
pub fn seconds(title: &str, y_label: &str, series: &[SecondSeries]) -> Result<String, String> {
    const RAMP: &str = "ramp-up (not measured)";
    const CPU: &str = "CPU % (dashed, in the line's colour)";
    let mut texts: Vec<&str> = vec![RAMP];
    texts.extend(series.iter().map(|s| s.label.as_str()));
    texts.push(CPU);
    svg(320, legend_rows(texts.into_iter()), |root| {
        let tmax = series
            .iter()
            .flat_map(|s| s.throughput.iter().chain(&s.cpu).map(|p| p.0 + 0.5))
            .fold(1.0f64, f64::max);
        let ymax = series
            .iter()
            .flat_map(|s| s.throughput.iter().map(|p| p.1))
            .fold(0.0f64, f64::max);
        let cmax = series
            .iter()
            .flat_map(|s| s.cpu.iter().map(|p| p.1))
            .fold(0.0f64, f64::max);
        let ramp = series.iter().map(|s| s.ramp_s).fold(0.0f64, f64::max);
        let mut chart = ChartBuilder::on(root)
            .caption(title, (FONT, 16))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(80)
            .right_y_label_area_size(60)
            .build_cartesian_2d(0f64..tmax, 0f64..nice_max(ymax))
            .map_err(e)?
            .set_secondary_coord(0f64..tmax, 0f64..nice_max(cmax).clamp(1.0, 105.0));
        axis_style!(chart.configure_mesh())
            .light_line_style(TRANSPARENT)
            .x_label_formatter(&|v| tick(*v))
            .y_label_formatter(&|v| tick(*v))
            .x_desc("seconds since the workload started")
            .y_desc(y_label)
            .draw()
            .map_err(e)?;
        axis_style!(chart.configure_secondary_axes())
            .y_label_formatter(&|v| tick(*v))
            .y_desc("CPU % (dashed)")
            .draw()
            .map_err(e)?;
        let mut entries = Vec::new();
        if ramp > 0.0 {
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(0.0, 0.0), (ramp.min(tmax), nice_max(ymax))],
                    BLACK.mix(0.1).filled(),
                )))
                .map_err(e)?;
            entries.push((Mark::Fill(BLACK.mix(0.1)), RAMP.into()));
        }
        for (k, s) in series.iter().enumerate() {
            let c = lighter(color(s.color), s.shade);
            let (w, _) = under(k, series.len());
            entries.push((Mark::Line(c), s.label.clone()));
            chart
                .draw_series(LineSeries::new(
                    s.throughput.iter().copied(),
                    c.stroke_width(w),
                ))
                .map_err(e)?;
            chart
                .draw_series(s.throughput.iter().map(|q| Circle::new(*q, 3, c.filled())))
                .map_err(e)?;
            chart
                .draw_secondary_series(DashedLineSeries::new(
                    s.cpu.iter().copied(),
                    5,
                    4,
                    c.stroke_width(w),
                ))
                .map_err(e)?;
        }
        entries.push((Mark::Dashed(BLACK), CPU.into()));
        Ok(entries)
    })
}

/// `c` moved towards white for the `k`-th shade (0: `c` itself).
fn lighter(c: RGBColor, k: usize) -> RGBColor {
    let f = 1.0 - 0.6f64.powi(k.min(4) as i32);
    let up = |v: u8| v + ((255 - v) as f64 * f * 0.8) as u8;
    RGBColor(up(c.0), up(c.1), up(c.2))
}

#[cfg(test)]
mod tests {
    use crate::fixtures::{doc, html_of, run};
    use serde_json::json;

    /// The SVG charts of `html` whose title contains `title`.
    fn charts_titled<'a>(html: &'a str, title: &str) -> Vec<&'a str> {
        html.split("<svg")
            .skip(1)
            .map(|s| &s[..s.find("</svg>").unwrap_or(s.len())])
            .filter(|s| s.contains(title))
            .collect()
    }

    /// Text elements of an SVG: (x, y, rotated, text).
    fn texts(svg: &str) -> Vec<(f64, f64, bool, String)> {
        svg.split("<text")
            .skip(1)
            .filter_map(|t| {
                let attr = |name: &str| -> Option<f64> {
                    let at = t.find(&format!(" {name}=\""))? + name.len() + 3;
                    t[at..].split('"').next()?.parse().ok()
                };
                let body = t
                    .split_once('>')?
                    .1
                    .split("</text>")
                    .next()?
                    .trim()
                    .to_string();
                Some((attr("x")?, attr("y")?, t.contains("rotate(90"), body))
            })
            .collect()
    }

    /// Twelve access specifications (Iometer's, long names) in a group
    /// named `iops`, with an 8 % CPU threshold: the report's bar chart.
    fn twelve_specs_chart() -> String {
        let names: Vec<String> = (1..=12)
            .map(|i| format!("disk/spec=access-specification-{i:02}"))
            .collect();
        let tests: Vec<(&str, iotoll_model::ResultDoc)> = names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let d = doc(
                    "disk",
                    json!({"bs": 4096}),
                    json!({"iops": 1000.0 + 300.0 * i as f64, "cpu_pct": 5.0 + i as f64, "cpus": 2.0, "window_s": 3.0}),
                );
                (n.as_str(), d)
            })
            .collect();
        let mut r = run(1, "base", tests);
        for t in &mut r.tests {
            t.group = Some("iops".into());
        }
        let html = html_of(&r, Some(8.0));
        crate::fixtures::dump("twelve-specs", "", &html);
        let bars = charts_titled(&html, "IOPS per test");
        assert_eq!(bars.len(), 1, "one bar chart of IOPS");
        bars[0].to_string()
    }

    /// Their labels on the x axis do not overlap (they did: unreadable).
    #[test]
    fn twelve_long_names_on_the_x_axis_do_not_overlap() {
        let svg = twelve_specs_chart();
        let labels: Vec<(f64, f64, bool, String)> = texts(&svg)
            .into_iter()
            .filter(|t| t.3.starts_with("spec=access"))
            .collect();
        assert_eq!(labels.len(), 12, "{labels:?}");
        // Across, a label takes about 7 px a character; turned, 13 px.
        for w in labels.windows(2) {
            let (a, b) = (&w[0], &w[1]);
            let room = if a.2 && b.2 {
                13.0
            } else {
                a.3.chars().count() as f64 * 7.0
            };
            assert!(
                b.0 - a.0 >= room,
                "labels overlap: {:?} and {:?}",
                (a.0, &a.3),
                (b.0, &b.3)
            );
        }
    }

    /// The title says what the chart shows in words, not `iops:`.
    #[test]
    fn a_chart_title_uses_human_names() {
        let svg = twelve_specs_chart();
        let title = texts(&svg)
            .into_iter()
            .map(|t| t.3)
            .find(|t| t.contains("IOPS per test"))
            .expect("a title");
        assert!(!title.contains("iops"), "raw metric id in {title:?}");
    }

    /// The threshold is drawn in its green on the CPU axis; nothing in
    /// that green reaches into the plot (dashes across it cut the bars).
    #[test]
    fn the_cpu_threshold_keeps_to_the_cpu_axis() {
        let svg = twelve_specs_chart();
        let green = svg.split('<').filter(|el| el.contains("#2EA043"));
        let xs: Vec<f64> = green
            .filter(|el| el.starts_with("polyline"))
            .flat_map(|el| {
                let points = el.split("points=\"").nth(1).unwrap_or("");
                (points.split_whitespace()).filter_map(|p| p.split(',').next()?.parse().ok())
            })
            .collect();
        assert!(!xs.is_empty(), "no threshold tick");
        let span =
            xs.iter().fold(f64::MIN, |a, b| a.max(*b)) - xs.iter().fold(f64::MAX, |a, b| a.min(*b));
        assert!(span <= 20.0, "threshold lines span {span} px of the chart");
    }

    /// A run of one group, `group`, sweeping `param` over `values`: the
    /// test of each value named and measured by `test`.
    fn sweep(
        group: &str,
        param: &str,
        values: &[f64],
        test: impl Fn(f64) -> (String, iotoll_model::ResultDoc),
    ) -> iotoll_store::RunDetail {
        let tests: Vec<(String, iotoll_model::ResultDoc)> =
            values.iter().map(|v| test(*v)).collect();
        let tests = (tests.iter()).map(|(n, d)| (n.as_str(), d.clone()));
        let mut r = run(1, "base", tests.collect());
        for (t, v) in r.tests.iter_mut().zip(values) {
            t.group = Some(group.into());
            t.params = json!({ param: v });
        }
        r
    }

    /// Connections 1, 5, 10, 100, 1000: a log₁₀ axis with a tick label at
    /// each tested value.
    #[test]
    fn connection_counts_get_a_log10_axis_ticked_at_the_tested_values() {
        let conns: [f64; 5] = [1.0, 5.0, 10.0, 100.0, 1000.0];
        let r = sweep("conns", "conns", &conns, |c| {
            let d = doc(
                "net-stream",
                json!({"conns": c}),
                json!({"mbit_s": 900.0 + c.ln(), "cpu_pct": 10.0, "cpus": 2.0, "window_s": 3.0}),
            );
            (format!("conns/dir=tx,conns={c}"), d)
        });
        let html = html_of(&r, None);
        crate::fixtures::dump("conns-sweep", "", &html);
        assert!(html.contains("log₁₀ axis"), "no log₁₀ axis");
        let line = charts_titled(&html, "against")
            .into_iter()
            .next()
            .expect("a sweep chart");
        let labels: Vec<String> = texts(line).into_iter().map(|t| t.3).collect();
        for c in ["1", "5", "10", "100", "1,000"] {
            assert!(labels.iter().any(|l| l == c), "no tick {c}: {labels:?}");
        }
        for c in ["2", "4", "8", "16", "64", "128", "512"] {
            assert!(
                !labels.iter().any(|l| l == c),
                "tick {c} was never tested: {labels:?}"
            );
        }
    }

    /// A request/response sweep over request sizes charts the one-way
    /// latency against request size (study 004's figure), not only the
    /// round trip.
    #[test]
    fn a_request_size_sweep_charts_one_way_latency() {
        let reqs: [f64; 4] = [64.0, 1024.0, 16384.0, 65536.0];
        let r = sweep("rr", "req", &reqs, |r| {
            let m = json!({"trans_s": 20_000.0 - r / 8.0, "conns": 1.0,
                           "rtt_mean_us": 50.0 + r / 1000.0,
                           "cpu_pct": 10.0, "cpus": 2.0, "window_s": 3.0});
            let mut d = doc("net-rr", json!({"req": r}), m);
            iotoll_model::derive_metrics(&mut d.metrics);
            (format!("rr/req={r}"), d)
        });
        let html = html_of(&r, None);
        let chart = charts_titled(&html, "one-way latency (µs) against request size");
        assert_eq!(chart.len(), 1, "no one-way latency chart");
    }
}
