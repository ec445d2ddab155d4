//! The HTML report: one self-contained file (inline style, inline SVG
//! charts drawn with plotters, no script, no font or request to the
//! network), with the findings at the top, the numbers behind every chart
//! in tables, and the system disclosure side by side.

use crate::compare::{Comparison, ConfigData, Row, TestData};
use crate::disclosure;
use crate::markdown::{num, pct};
use plotters::prelude::*;
use std::fmt::Write;

const W: u32 = 900;
const H: u32 = 420;
const COLORS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn color(i: usize) -> RGBColor {
    COLORS[i % COLORS.len()]
}

fn nice_max(v: f64) -> f64 {
    if v <= 0.0 || !v.is_finite() {
        1.0
    } else {
        v * 1.15
    }
}

/// Grouped bars of `rows`' metric per configuration, CPU % as points on a
/// secondary axis, and the CPU threshold as a shaded band.
fn bar_chart(
    title: &str,
    rows: &[&Row],
    configs: &[String],
    threshold: Option<f64>,
) -> Result<String, String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (W, H)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
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
        let metric = rows.first().map(|r| r.metric.clone()).unwrap_or_default();
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .right_y_label_area_size(60)
            .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), 0f64..nice_max(vmax))
            .map_err(|e| e.to_string())?
            .set_secondary_coord(
                -0.5f64..(n as f64 - 0.5),
                0f64..nice_max(cmax).clamp(1.0, 105.0),
            );
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(n.max(1))
            .x_label_formatter(&|x| {
                let i = x.round();
                if (x - i).abs() < 1e-6 && i >= 0.0 {
                    names.get(i as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .y_desc(metric.as_str())
            .draw()
            .map_err(|e| e.to_string())?;
        chart
            .configure_secondary_axes()
            .y_desc("CPU % (points)")
            .draw()
            .map_err(|e| e.to_string())?;
        if let Some(th) = threshold {
            chart
                .draw_secondary_series(std::iter::once(Rectangle::new(
                    [(-0.5, 0.0), (n as f64 - 0.5, th)],
                    RGBColor(46, 160, 67).mix(0.12).filled(),
                )))
                .map_err(|e| e.to_string())?
                .label(format!("CPU ≤ {th} %"))
                .legend(|(x, y)| {
                    Rectangle::new(
                        [(x, y - 5), (x + 12, y + 5)],
                        RGBColor(46, 160, 67).mix(0.3).filled(),
                    )
                });
        }
        let k = configs.len().max(1) as f64;
        let w = 0.8 / k;
        for (ci, label) in configs.iter().enumerate() {
            let c = color(ci);
            let bars = rows.iter().enumerate().filter_map(|(i, r)| {
                r.values[ci].map(|v| {
                    let x0 = i as f64 - 0.4 + ci as f64 * w;
                    Rectangle::new([(x0, 0.0), (x0 + w * 0.92, v)], c.filled())
                })
            });
            chart
                .draw_series(bars)
                .map_err(|e| e.to_string())?
                .label(label.as_str())
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], c.filled()));
            let points = rows.iter().enumerate().filter_map(|(i, r)| {
                r.cpu_pct[ci].map(|v| {
                    let x = i as f64 - 0.4 + (ci as f64 + 0.46) * w;
                    Circle::new((x, v), 5, BLACK.filled())
                })
            });
            chart
                .draw_secondary_series(points)
                .map_err(|e| e.to_string())?;
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

/// Lines, one per configuration, of y against x.
fn line_chart(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[(String, Vec<(f64, f64)>)],
) -> Result<String, String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (W, H)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let xs = series.iter().flat_map(|s| s.1.iter().map(|p| p.0));
        let (xmin, xmax) = xs.fold((f64::INFINITY, 0.0f64), |(a, b), x| (a.min(x), b.max(x)));
        let ymax = series
            .iter()
            .flat_map(|s| s.1.iter().map(|p| p.1))
            .fold(0.0f64, f64::max);
        let (xmin, xmax) = if xmin.is_finite() && xmax > xmin {
            (xmin, xmax)
        } else {
            (0.0, xmax.max(1.0))
        };
        let log = xmin > 0.0 && xmax / xmin > 20.0;
        macro_rules! draw {
            ($chart:expr) => {{
                let mut chart = $chart;
                chart
                    .configure_mesh()
                    .x_desc(x_desc)
                    .y_desc(y_desc)
                    .draw()
                    .map_err(|e| e.to_string())?;
                for (ci, (label, pts)) in series.iter().enumerate() {
                    let c = color(ci);
                    chart
                        .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))
                        .map_err(|e| e.to_string())?
                        .label(label.as_str())
                        .legend(move |(x, y)| {
                            PathElement::new([(x, y), (x + 14, y)], c.stroke_width(2))
                        });
                    chart
                        .draw_series(pts.iter().map(|p| Circle::new(*p, 4, c.filled())))
                        .map_err(|e| e.to_string())?;
                }
                chart
                    .configure_series_labels()
                    .background_style(WHITE.mix(0.85))
                    .border_style(BLACK)
                    .draw()
                    .map_err(|e| e.to_string())?;
            }};
        }
        let mut b = ChartBuilder::on(&root);
        b.caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(45)
            .y_label_area_size(70);
        if log {
            draw!(b
                .build_cartesian_2d((xmin * 0.8..xmax * 1.25).log_scale(), 0f64..nice_max(ymax))
                .map_err(|e| e.to_string())?);
        } else {
            draw!(b
                .build_cartesian_2d(xmin..xmax, 0f64..nice_max(ymax))
                .map_err(|e| e.to_string())?);
        }
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

/// The swept numeric parameter of a group's tests, if there is one.
fn swept_param(tests: &[&TestData]) -> Option<String> {
    let first = tests.first()?;
    let keys = first
        .params
        .as_object()?
        .keys()
        .cloned()
        .collect::<Vec<_>>();
    keys.into_iter().find(|k| {
        let vals: Vec<f64> = tests
            .iter()
            .filter_map(|t| param_num(&t.params[k]))
            .collect();
        vals.len() == tests.len() && vals.iter().any(|v| *v != vals[0])
    })
}

fn param_num(v: &serde_json::Value) -> Option<f64> {
    v.as_f64().or_else(|| {
        v.as_str()
            .and_then(|s| iotoll_model::parse_size(s).ok())
            .map(|b| b as f64)
    })
}

struct Out {
    html: String,
    charts: usize,
}

impl Out {
    fn figure(&mut self, svg: Result<String, String>, caption: &str) {
        match svg {
            Ok(svg) => {
                self.charts += 1;
                let _ = writeln!(
                    self.html,
                    "<figure>{svg}<figcaption>{}</figcaption></figure>",
                    esc(caption)
                );
            }
            Err(e) => {
                let _ = writeln!(
                    self.html,
                    "<p class=\"warn\">chart not drawn: {}</p>",
                    esc(&e)
                );
            }
        }
    }
}

const STYLE: &str = "body{font-family:sans-serif;margin:2em auto;max-width:1000px;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:13px}td,th{border:1px solid #ccc;padding:3px 7px;text-align:right}
td:first-child,th:first-child{text-align:left}tr.diff td{background:#fff3bf}.warn{color:#a61b1b}
figure{margin:1.5em 0}figcaption{font-size:13px;color:#555}ul.findings li{margin:.3em 0}";

/// The whole report. `what` is "comparison" or "report".
pub fn render(c: &Comparison, configs: &[ConfigData], what: &str) -> String {
    let title = format!("iotoll {what}: {}", c.configs.join(" vs "));
    let mut o = Out {
        html: String::new(),
        charts: 0,
    };
    let _ = write!(
        o.html,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style></head><body>\n<h1>{}</h1>\n",
        esc(&title),
        esc(&title)
    );
    let runs: Vec<String> = c
        .configs
        .iter()
        .zip(&c.run_ids)
        .map(|(l, r)| format!("{} (run {r})", esc(l)))
        .collect();
    let _ = writeln!(
        o.html,
        "<p>Configurations: {}. Differences are candidate / baseline − 1 against the first.</p>",
        runs.join(", ")
    );
    let _ = writeln!(
        o.html,
        "<h2 id=\"findings\">Key findings</h2><ul class=\"findings\">"
    );
    for f in &c.findings {
        let cls = if f.starts_with("Not repeatable") {
            " class=\"warn\""
        } else {
            ""
        };
        let _ = writeln!(o.html, "<li{cls}>{}</li>", esc(f));
    }
    let _ = writeln!(o.html, "</ul>");

    // Charts per group.
    let _ = writeln!(o.html, "<h2 id=\"charts\">Charts</h2>");
    let mut groups: Vec<&str> = Vec::new();
    for r in &c.rows {
        if !groups.contains(&r.group.as_str()) {
            groups.push(&r.group);
        }
    }
    for g in &groups {
        let rows: Vec<&Row> = c.rows.iter().filter(|r| r.group == *g).collect();
        o.figure(
            bar_chart(
                &format!("{g}: {} per configuration", rows[0].metric),
                &rows,
                &c.configs,
                c.cpu_threshold_pct,
            ),
            &format!(
                "Bars: {} of each test per configuration; points: whole-host CPU % (right axis){}.",
                rows[0].metric,
                c.cpu_threshold_pct
                    .map(|t| format!("; shaded: CPU ≤ {t} %"))
                    .unwrap_or_default()
            ),
        );
        let tests: Vec<&TestData> = configs[0]
            .tests
            .iter()
            .filter(|t| rows.iter().any(|r| r.test == t.name))
            .collect();
        if let Some(p) = swept_param(&tests) {
            let metric = rows[0].metric.clone();
            let kind = tests[0].kind.clone();
            let eff = match kind.as_str() {
                "disk" => "iops_per_cpu_pct",
                "net-stream" => "mbit_s_per_cpu_pct",
                _ => "cpu_us_per_trans",
            };
            let mut charts: Vec<(String, String)> = vec![
                (metric.clone(), metric.clone()),
                ("cpu_pct".into(), "CPU %".into()),
                (eff.into(), eff.into()),
            ];
            if kind == "net-rr" {
                charts.push(("rtt_mean_us".into(), "round trip us (mean)".into()));
            }
            for (m, desc) in charts {
                let series: Vec<(String, Vec<(f64, f64)>)> = configs
                    .iter()
                    .map(|cfg| {
                        let mut pts: Vec<(f64, f64)> = cfg
                            .tests
                            .iter()
                            .filter(|t| rows.iter().any(|r| r.test == t.name))
                            .filter_map(|t| Some((param_num(&t.params[&p])?, *t.metrics.get(&m)?)))
                            .collect();
                        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                        (cfg.label.clone(), pts)
                    })
                    .collect();
                if series.iter().any(|s| !s.1.is_empty()) {
                    o.figure(
                        line_chart(&format!("{g}: {desc} against {p}"), &p, &desc, &series),
                        &format!("{desc} against {p}, one line per configuration."),
                    );
                }
            }
        }
    }
    // The per-second series of one repetition of each configuration.
    for cfg in configs {
        if let Some(t) = cfg.tests.iter().find(|t| !t.series.is_empty()) {
            let pick = |f: fn(&iotoll_model::SeriesPoint) -> Option<f64>| {
                t.series
                    .iter()
                    .filter_map(|p| Some((p.t_s, f(p)?)))
                    .collect::<Vec<_>>()
            };
            let (tp, tp_name) = if t.series.iter().any(|p| p.iops.is_some()) {
                (pick(|p| p.iops), "IOPS")
            } else if t.series.iter().any(|p| p.trans_s.is_some()) {
                (pick(|p| p.trans_s), "trans/s")
            } else {
                (pick(|p| p.mbit_s), "Mbit/s")
            };
            o.figure(
                line_chart(
                    &format!("{}: {} per second", cfg.label, t.name),
                    "s",
                    tp_name,
                    &[(tp_name.to_string(), tp)],
                ),
                &format!(
                    "{} of {} ({}), second by second, ramp-up included.",
                    tp_name, t.name, cfg.label
                ),
            );
            o.figure(
                line_chart(
                    &format!("{}: CPU per second", cfg.label),
                    "s",
                    "CPU %",
                    &[("CPU %".into(), pick(|p| p.cpu_pct))],
                ),
                &format!("Whole-host CPU % during {} ({}).", t.name, cfg.label),
            );
        }
    }

    // Tables: every number behind every chart.
    let _ = writeln!(o.html, "<h2 id=\"tables\">Results</h2>\n<table><thead><tr><th>test</th><th>group</th><th>metric</th>");
    for l in &c.configs {
        let _ = write!(o.html, "<th>{}</th><th>CPU %</th>", esc(l));
    }
    for l in &c.configs[1..] {
        let _ = write!(o.html, "<th>Δ {}</th>", esc(l));
    }
    let _ = writeln!(o.html, "</tr></thead><tbody>");
    for r in &c.rows {
        let flag = if r.not_repeatable {
            " <span class=\"warn\">⚠ not repeatable</span>"
        } else {
            ""
        };
        let _ = write!(
            o.html,
            "<tr><td>{}{flag}</td><td>{}</td><td>{}</td>",
            esc(&r.test),
            esc(&r.group),
            esc(&r.metric)
        );
        for (i, v) in r.values.iter().enumerate() {
            let bad = if r.acceptable[i] == Some(false) {
                " class=\"warn\""
            } else {
                ""
            };
            let _ = write!(
                o.html,
                "<td>{}</td><td{bad}>{}</td>",
                num(*v),
                num(r.cpu_pct[i])
            );
        }
        for d in &r.diff_pct {
            let _ = write!(o.html, "<td>{}</td>", pct(*d));
        }
        let _ = writeln!(o.html, "</tr>");
    }
    let _ = writeln!(o.html, "</tbody></table>");
    if !c.groups.is_empty() {
        let _ = writeln!(o.html, "<h3>By group (mean of the per-test differences)</h3><table><tr><th>group</th><th>candidate</th><th>metric</th><th>tests</th><th>mean Δ</th><th>min Δ</th><th>max Δ</th><th>wins</th></tr>");
        for g in &c.groups {
            let _ = writeln!(
                o.html,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{} of {}</td></tr>",
                esc(&g.group), esc(&g.candidate), esc(&g.metric), g.tests, pct(g.mean_diff_pct), pct(g.min_diff_pct), pct(g.max_diff_pct), g.wins, g.tests
            );
        }
        let _ = writeln!(o.html, "</table>");
    }
    let mut keys: Vec<&String> = c.efficiency.iter().flat_map(|e| e.means.keys()).collect();
    keys.sort();
    keys.dedup();
    if !keys.is_empty() {
        let _ = write!(o.html, "<h3>Efficiency (mean over the tests every configuration has)</h3><table><tr><th>configuration</th>");
        for k in &keys {
            let _ = write!(o.html, "<th>{}</th>", esc(k));
        }
        let _ = writeln!(o.html, "</tr>");
        for e in &c.efficiency {
            let _ = write!(o.html, "<tr><td>{}</td>", esc(&e.label));
            for k in &keys {
                let _ = write!(o.html, "<td>{}</td>", num(e.means.get(*k).copied()));
            }
            let _ = writeln!(o.html, "</tr>");
        }
        let _ = writeln!(o.html, "</table>");
    }
    if configs.iter().any(|c| !c.notes.is_empty()) {
        let _ = writeln!(o.html, "<h2 id=\"notes\">Warnings and notes</h2>");
        for cfg in configs.iter().filter(|c| !c.notes.is_empty()) {
            let _ = writeln!(o.html, "<h3>{}</h3><ul>", esc(&cfg.label));
            for n in &cfg.notes {
                let _ = writeln!(o.html, "<li class=\"warn\">{}</li>", esc(n));
            }
            let _ = writeln!(o.html, "</ul>");
        }
    }
    let rows = disclosure::table(configs);
    if !rows.is_empty() {
        let _ = write!(o.html, "<h2 id=\"disclosure\">System disclosure</h2><p>Rows that differ between configurations are highlighted.</p><table><tr><th>item</th>");
        for l in &c.configs {
            let _ = write!(o.html, "<th>{}</th>", esc(l));
        }
        let _ = writeln!(o.html, "</tr>");
        for r in rows {
            let cls = if r.differs { " class=\"diff\"" } else { "" };
            let _ = write!(o.html, "<tr{cls}><td>{}</td>", esc(&r.key));
            for v in &r.values {
                let _ = write!(o.html, "<td>{}</td>", esc(v));
            }
            let _ = writeln!(o.html, "</tr>");
        }
        let _ = writeln!(o.html, "</table>");
    }
    let _ = writeln!(o.html, "<p style=\"font-size:12px;color:#777\">{} charts. Generated by iotoll {}.</p>\n</body></html>", o.charts, iotoll_model::VERSION);
    o.html
}
