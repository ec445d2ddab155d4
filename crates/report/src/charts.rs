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
    Bar(RGBColor),
    Line(RGBColor),
    Dashed(RGBColor),
    Ring,
    Band(RGBColor, f64),
}

const LEGEND_H: u32 = 30;

/// The legend as a strip under the chart, so it never hides a point.
fn legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    entries: &[(Mark, String)],
) -> Result<(), String> {
    let style = TextStyle::from((FONT, 13).into_font()).color(&BLACK);
    let mut x = LEGEND_X;
    let mut y = 14i32;
    for (mark, text) in entries {
        // A long legend wraps rather than running off the chart.
        let w = entry_width(text);
        if x > LEGEND_X && x + w > W as i32 {
            x = LEGEND_X;
            y += LEGEND_H as i32 - 8;
        }
        match *mark {
            Mark::Bar(c) => area
                .draw(&Rectangle::new([(x, y - 6), (x + 14, y + 6)], c.filled()))
                .map_err(e)?,
            Mark::Line(c) => area
                .draw(&PathElement::new([(x, y), (x + 18, y)], c.stroke_width(2)))
                .map_err(e)?,
            Mark::Dashed(c) => {
                for dx in [0, 8, 16] {
                    area.draw(&PathElement::new(
                        [(x + dx, y), (x + dx + 4, y)],
                        c.stroke_width(2),
                    ))
                    .map_err(e)?;
                }
            }
            Mark::Ring => area
                .draw(&Circle::new((x + 7, y), 5, BLACK.stroke_width(2)))
                .map_err(e)?,
            Mark::Band(c, a) => area
                .draw(&Rectangle::new(
                    [(x, y - 6), (x + 14, y + 6)],
                    c.mix(a).filled(),
                ))
                .map_err(e)?,
        }
        area.draw_text(text, &style, (x + 24, y - 7)).map_err(e)?;
        x += w;
    }
    Ok(())
}

const LEGEND_X: i32 = 90;

/// Room a legend entry takes: its mark, its text (about 7 px a character
/// at 13 px) and the gap to the next.
fn entry_width(text: &str) -> i32 {
    24 + (text.chars().count() as i32) * 7 + 22
}

/// Rows the legend of entries with these texts takes.
fn legend_rows<'a>(texts: impl Iterator<Item = &'a str>) -> u32 {
    let (mut rows, mut x) = (1, LEGEND_X);
    for t in texts {
        let w = entry_width(t);
        if x > LEGEND_X && x + w > W as i32 {
            rows += 1;
            x = LEGEND_X;
        }
        x += w;
    }
    rows
}

/// A chart `h` pixels high with the legend strip under it: `draw` draws the
/// chart and returns the legend's entries.
fn svg(
    h: u32,
    draw: impl FnOnce(&DrawingArea<SVGBackend, Shift>) -> Result<Vec<(Mark, String)>, String>,
) -> Result<String, String> {
    svg_rows(h, 1, draw)
}

/// `svg` with a legend of `rows` rows (the chart keeps its height).
fn svg_rows(
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

/// The CPU % point of a configuration: its colour, with a black rim and a
/// white centre so it shows on a bar of the same colour.
macro_rules! cpu_point {
    ($at:expr, $c:expr) => {
        EmptyElement::at($at)
            + Circle::new((0, 0), 8, BLACK.filled())
            + Circle::new((0, 0), 6, $c.filled())
            + Circle::new((0, 0), 2, WHITE.filled())
    };
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
    svg(H, |root| {
        let n = rows.len();
        let vmax = rows
            .iter()
            .flat_map(|r| r.values.iter().flatten())
            .fold(0.0f64, |a, b| a.max(*b));
        let cmax = rows
            .iter()
            .flat_map(|r| r.cpu_pct.iter().flatten())
            .fold(threshold.unwrap_or(0.0), |a, b| a.max(*b));
        let names: Vec<String> = rows
            .iter()
            .map(|r| r.test.rsplit('/').next().unwrap_or(&r.test).to_string())
            .collect();
        let x1 = n as f64 - 0.5;
        let mut chart = ChartBuilder::on(root)
            .caption(title, (FONT, 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(80)
            .right_y_label_area_size(60)
            .build_cartesian_2d(-0.5f64..x1, 0f64..nice_max(vmax))
            .map_err(e)?
            .set_secondary_coord(-0.5f64..x1, 0f64..nice_max(cmax).clamp(1.0, 105.0));
        axis_style!(chart.configure_mesh())
            .disable_x_mesh()
            .light_line_style(TRANSPARENT)
            .x_labels(n.max(1))
            .x_label_formatter(&|x| {
                let i = x.round();
                if (x - i).abs() < 1e-6 && i >= 0.0 {
                    names.get(i as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .y_label_formatter(&|v| tick(*v))
            .y_desc(y_label)
            .draw()
            .map_err(e)?;
        axis_style!(chart.configure_secondary_axes())
            .y_label_formatter(&|v| tick(*v))
            .y_desc("CPU % (points)")
            .draw()
            .map_err(e)?;
        let mut entries: Vec<(Mark, String)> = Vec::new();
        if let Some(th) = threshold {
            // The band lies on the CPU axis (outside the plot, from 0 to
            // the threshold) and a dashed line marks the threshold: nothing
            // covers the bars.
            let sec = chart.borrow_secondary();
            let (px, py_th) = sec.backend_coord(&(x1, th));
            let (_, py_0) = sec.backend_coord(&(x1, 0.0));
            root.draw(&Rectangle::new(
                [(px + 1, py_th), (px + 9, py_0)],
                THRESHOLD.mix(0.45).filled(),
            ))
            .map_err(e)?;
            chart
                .draw_secondary_series(DashedLineSeries::new(
                    [(-0.5, th), (x1, th)],
                    6,
                    4,
                    THRESHOLD.stroke_width(2),
                ))
                .map_err(e)?;
            entries.push((
                Mark::Band(THRESHOLD, 0.45),
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
            entries.push((Mark::Bar(c), label.clone()));
        }
        // CPU points after every bar, so no bar hides a point.
        for ci in 0..configs.len() {
            let c = color(ci);
            let points = rows.iter().enumerate().filter_map(|(i, r)| {
                r.cpu_pct[ci].map(|v| {
                    let x = i as f64 + start + (ci as f64 + 0.46) * w;
                    cpu_point!((x, v), c)
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
    /// Counts on a log₂ axis: `1`, `4`, `16`, `64`.
    Log,
}

/// The scale for a swept parameter's values.
pub fn scale_for(param: &str, xs: &[f64]) -> XScale {
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().copied().fold(0.0f64, f64::max);
    let wide = lo > 0.0 && hi / lo >= 4.0;
    match param {
        "bs" | "msg" | "req" | "resp" | "size" | "sockbuf" | "align" if wide => XScale::Size,
        _ if wide => XScale::Log,
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
    svg(H, |root| {
        let percent = y_label.contains('%') && !y_label.contains(" per ");
        let fx = |x: f64| {
            if scale == XScale::Linear {
                x
            } else {
                x.log2()
            }
        };
        let pts: Vec<Line> = series
            .iter()
            .map(|(ci, l, p)| {
                (
                    *ci,
                    l.clone(),
                    p.iter()
                        .filter(|(x, y)| y.is_finite() && (scale == XScale::Linear || *x > 0.0))
                        .map(|(x, y)| (fx(*x), *y))
                        .collect(),
                )
            })
            .collect();
        let xs = pts.iter().flat_map(|s| s.2.iter().map(|p| p.0));
        let (xmin, xmax) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
            (a.min(x), b.max(x))
        });
        let ymax = pts
            .iter()
            .flat_map(|s| s.2.iter().map(|p| p.1))
            .fold(0.0f64, f64::max);
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
        let ticks = if scale == XScale::Linear {
            10
        } else {
            ((xmax - xmin).ceil() as usize + 1).min(24)
        };
        let xfmt = |x: &f64| match scale {
            XScale::Linear => tick(*x),
            _ if (x - x.round()).abs() > 1e-6 => String::new(),
            XScale::Size => size(2f64.powi(x.round() as i32)),
            XScale::Log => tick(2f64.powi(x.round() as i32)),
        };
        let mut chart = ChartBuilder::on(root)
            .caption(title, (FONT, 18))
            .margin(12)
            .x_label_area_size(45)
            .y_label_area_size(80)
            .build_cartesian_2d(
                xmin..xmax,
                0f64..if percent {
                    nice_max(ymax).min(105.0)
                } else {
                    nice_max(ymax)
                },
            )
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
        let mut entries = Vec::new();
        let n = pts.len();
        for (k, (ci, label, p)) in pts.iter().enumerate() {
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
    let mut texts: Vec<&str> = vec!["ramp-up (not measured)"];
    texts.extend(series.iter().map(|s| s.label.as_str()));
    texts.push("CPU % (dashed, in the line's colour)");
    svg_rows(320, legend_rows(texts.into_iter()), |root| {
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
            let top = nice_max(ymax);
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(0.0, 0.0), (ramp.min(tmax), top)],
                    BLACK.mix(0.1).filled(),
                )))
                .map_err(e)?;
            entries.push((Mark::Band(BLACK, 0.1), "ramp-up (not measured)".to_string()));
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
        entries.push((
            Mark::Dashed(BLACK),
            "CPU % (dashed, in the line's colour)".into(),
        ));
        Ok(entries)
    })
}

/// `c` moved towards white for the `k`-th shade (0: `c` itself).
fn lighter(c: RGBColor, k: usize) -> RGBColor {
    let f = 1.0 - 0.6f64.powi(k.min(4) as i32);
    let up = |v: u8| v + ((255 - v) as f64 * f * 0.8) as u8;
    RGBColor(up(c.0), up(c.1), up(c.2))
}
