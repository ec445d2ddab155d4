//! The HTML report: one self-contained file (inline style, inline SVG
//! charts drawn with plotters, no script, no font or request to the
//! network), with the findings at the top, the parameters of every test,
//! the numbers behind every chart in tables, and the system disclosure
//! side by side.

use crate::charts::{self, SecondSeries};
use crate::compare::{distinct, first_tests, Comparison, ConfigData, Row, TestData};
use crate::fmt::esc;
use crate::hosts::Part;
use crate::info::RunInfo;
use crate::{disclosure, tables};
use iotoll_model::metrics::{self as mn, label};
use iotoll_model::Kind;
use std::fmt::Write;

/// The swept numeric parameter of a group's tests, if there is one.
fn swept_param(tests: &[&TestData]) -> Option<String> {
    let mut keys = tests.first()?.params.as_object()?.keys();
    keys.find(|k| {
        let vals: Vec<f64> = tests
            .iter()
            .filter_map(|t| param_num(&t.params[k.as_str()]))
            .collect();
        vals.len() == tests.len() && vals.iter().any(|v| *v != vals[0])
    })
    .cloned()
}

fn param_num(v: &serde_json::Value) -> Option<f64> {
    v.as_f64().or_else(|| {
        v.as_str()
            .and_then(|s| iotoll_model::parse_size(s).ok())
            .map(|b| b as f64)
    })
}

/// A parameter's name on an axis.
fn param_label(p: &str) -> String {
    match p {
        "bs" => "block size (bytes)",
        "msg" => "message size (bytes)",
        "req" => "request size (bytes)",
        "resp" => "response size (bytes)",
        "sockbuf" => "socket buffer (bytes)",
        "conns" => "connections",
        "qd" => "queue depth",
        "workers" => "workers",
        "read" => "read %",
        "random" => "random %",
        other => other,
    }
    .to_string()
}

struct Out {
    html: String,
    charts: usize,
}

impl Out {
    fn table(&mut self, t: &tables::Table, class: &str) {
        let _ = writeln!(self.html, "<h3>{}</h3>", esc(&t.title));
        self.html.push_str(&tables::to_html(t, class));
    }

    fn figure(&mut self, svg: Result<String, String>, caption: &str, class: &str) {
        match svg {
            Ok(svg) => {
                self.charts += 1;
                let _ = writeln!(
                    self.html,
                    "<figure class=\"{class}\">{svg}<figcaption>{}</figcaption></figure>",
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
td:first-child,th:first-child{text-align:left}tr.diff td,td.diff{background:#fff3bf}.warn{color:#a61b1b}
figure{margin:1.5em 0}figcaption{font-size:13px;color:#555}ul.findings li{margin:.3em 0}
.sw{display:inline-block;width:10px;height:10px;margin-right:5px;border-radius:2px}
.note{font-size:12px;color:#555}.smoke{background:#fde2e1;border:1px solid #a61b1b;padding:.5em 1em}
details{margin:.3em 0}summary{cursor:pointer}td{white-space:nowrap}td:first-child{white-space:normal}
table.parameters td:last-child,table.compare td:last-child{white-space:normal}
table.disclosure td{text-align:left;white-space:normal;max-width:520px;overflow-wrap:anywhere}table.disclosure td:first-child{white-space:nowrap;overflow-wrap:normal}";

type Pick = fn(&iotoll_model::SeriesPoint) -> Option<f64>;

/// The per-second throughput of a test: its main metric when the series
/// has it (`mb_s` for a test selected by MB/s), else its kind's.
fn second_metric(kind: Kind, main: &str) -> (Pick, &'static str) {
    let pick = |m: &str| -> Option<(Pick, &'static str)> {
        Some(match m {
            mn::MB_S => (|p| p.mb_s, mn::MB_S),
            mn::IOPS => (|p| p.iops, mn::IOPS),
            mn::TRANS_S => (|p| p.trans_s, mn::TRANS_S),
            mn::MBIT_S => (|p| p.mbit_s, mn::MBIT_S),
            _ => return None,
        })
    };
    pick(main)
        .or_else(|| pick(kind.headline()))
        .unwrap_or((|p| p.mbit_s, mn::MBIT_S))
}

/// A series' samples at the middle of the second each one covers.
fn at_middles(
    s: &[iotoll_model::SeriesPoint],
    f: impl Fn(&iotoll_model::SeriesPoint) -> Option<f64>,
) -> Vec<(f64, f64)> {
    let mut prev = 0.0;
    s.iter()
        .filter_map(|p| {
            let mid = (prev + p.t_s) / 2.0;
            prev = p.t_s;
            Some((mid, f(p)?))
        })
        .collect()
}

/// The whole report. `what` is "comparison" or "report"; `infos` holds
/// each configuration's run facts (same order as `configs`).
pub fn render(c: &Comparison, configs: &[ConfigData], infos: &[RunInfo], what: &str) -> String {
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
    runs(&mut o, c, configs, infos);
    // A comparison opens with what was compared (crate::differs).
    if let Some(t) = crate::differs::table(&c.differs, &c.configs) {
        let _ = writeln!(o.html, "<h2 id=\"differs\">{}</h2>", esc(&t.title));
        o.html.push_str(&tables::to_html(&t, "differs"));
    }
    findings(&mut o, c, configs, infos);
    parameters(&mut o, configs, infos);
    group_charts(&mut o, c, configs);
    second_charts(&mut o, configs, infos);
    result_tables(&mut o, c, configs, infos);
    multi_host(&mut o, configs);
    notes(&mut o, configs, infos);
    disclosure_table(&mut o, c, configs);
    let _ = writeln!(o.html, "<p style=\"font-size:12px;color:#777\">{} charts. Generated by iotoll {}.</p>\n</body></html>", o.charts, iotoll_model::VERSION);
    o.html
}

/// What was run, when; smoke runs marked.
fn runs(o: &mut Out, c: &Comparison, configs: &[ConfigData], infos: &[RunInfo]) {
    let single = configs.len() == 1;
    let _ = writeln!(o.html, "<ul class=\"runs\">");
    for (i, cfg) in configs.iter().enumerate() {
        let info = infos.get(i).cloned().unwrap_or_default();
        let role = match (single, i) {
            (true, _) => "",
            (false, 0) => " — baseline",
            _ => " — candidate",
        };
        let _ = writeln!(
            o.html,
            "<li><span class=\"sw\" style=\"background:{}\"></span><b>{}</b>{role}: {}suite {}, started {}, {}, {} tests{}</li>",
            charts::css_color(i),
            esc(&cfg.label),
            if cfg.label == format!("run {}", cfg.run_id) {
                String::new()
            } else {
                format!("run {}, ", cfg.run_id)
            },
            esc(&info.suite),
            esc(&info.started_at),
            esc(info.status.label()),
            cfg.tests.len(),
            if info.overridden.is_some() { " — <b class=\"warn\">smoke run</b>" } else { "" }
        );
    }
    let _ = writeln!(o.html, "</ul>");
    for (i, info) in infos.iter().enumerate() {
        if let Some(n) = &info.overridden {
            let _ = writeln!(
                o.html,
                "<p class=\"smoke\">⚠ Smoke run{}: {}. Do not publish these numbers as the study.</p>",
                if single { String::new() } else { format!(" ({})", esc(&configs[i].label)) },
                esc(n)
            );
        }
    }
    if !single {
        let _ = writeln!(
            o.html,
            "<p>Differences are candidate / baseline − 1, each candidate against {}.</p>",
            esc(&c.configs[0])
        );
    }
}

/// The key findings, warnings in red.
fn findings(o: &mut Out, c: &Comparison, configs: &[ConfigData], infos: &[RunInfo]) {
    let findings = crate::findings::for_report(c, configs, infos);
    let _ = writeln!(
        o.html,
        "<h2 id=\"findings\">Key findings</h2><ul class=\"findings\">"
    );
    for f in &findings {
        let warn = [
            "Not repeatable",
            "CPU-bound",
            "Smoke run",
            "Interfered",
            "Inconsistent",
        ]
        .iter()
        .any(|w| f.contains(w));
        let cls = if warn { " class=\"warn\"" } else { "" };
        let _ = writeln!(o.html, "<li{cls}>{}</li>", esc(f));
    }
    let _ = writeln!(o.html, "</ul>");
}

/// The parameters of every test.
fn parameters(o: &mut Out, configs: &[ConfigData], infos: &[RunInfo]) {
    let _ = writeln!(o.html, "<h2 id=\"parameters\">Test parameters</h2>");
    for t in tables::parameters(configs, infos) {
        o.table(&t, "parameters");
    }
}

/// A group's name for a reader: a group named by a metric id (`iops`,
/// `mb_s`, as built-in suites name them) by the metric's name.
fn group_name(g: &str) -> String {
    match iotoll_model::metrics::metric_def(g) {
        Some(d) => format!("{} tests", d.label),
        None => g.to_string(),
    }
}

/// A chart's title: what it shows first, in words, then its group (a
/// title once read "iops: IOPS per configuration").
fn chart_title(what: &str, g: &str) -> String {
    format!("{what} — {}", group_name(g))
}

/// Per group: the bars of its main metric, and lines against the swept
/// parameter when the group sweeps one.
fn group_charts(o: &mut Out, c: &Comparison, configs: &[ConfigData]) {
    let single = configs.len() == 1;
    let _ = writeln!(o.html, "<h2 id=\"charts\">Charts</h2>");
    for g in &distinct(c.rows.iter().map(|r| r.group.as_str())) {
        let rows: Vec<&Row> = c.rows.iter().filter(|r| r.group == *g).collect();
        let metric = label(&rows[0].metric);
        let _ = writeln!(o.html, "<h3>{}</h3>", esc(&group_name(g)));
        o.figure(
            charts::bars(
                &chart_title(
                    &if single {
                        format!("{metric} per test")
                    } else {
                        format!("{metric} per configuration")
                    },
                    g,
                ),
                metric,
                &rows,
                &c.configs,
                c.cpu_threshold_pct,
            ),
            &format!(
                "Bars: {metric} of each test, one colour per configuration; circles: whole-host CPU % (right axis) in the same colour{}.",
                c.cpu_threshold_pct
                    .map(|t| format!("; band and tick on the CPU axis: the {} % CPU threshold", crate::fmt::tick(t)))
                    .unwrap_or_default()
            ),
            "bars",
        );
        sweep_charts(o, g, &rows, configs);
    }
}

/// Lines of the group's main metric, CPU and headline efficiency (and the
/// round trip and one-way latency, for request/response) against the
/// parameter it sweeps.
fn sweep_charts(o: &mut Out, g: &str, rows: &[&Row], configs: &[ConfigData]) {
    let tests: Vec<&TestData> = configs[0]
        .tests
        .iter()
        .filter(|t| rows.iter().any(|r| r.test == t.name))
        .collect();
    if let Some(p) = swept_param(&tests) {
        let kind = tests[0].kind;
        let eff = kind.headline_efficiency();
        let mut ms = vec![rows[0].metric.clone(), mn::CPU_PCT.into(), eff.into()];
        if kind == Kind::NetRr {
            // Both: the round trip as measured, and the one-way latency
            // studies publish against request size (half the round trip
            // of one connection's transactions, netperf's convention).
            ms.push(mn::RTT_MEAN_US.into());
            ms.push(mn::LATENCY_ONE_WAY_US.into());
        }
        let xl = param_label(&p);
        for m in ms {
            let series: Vec<charts::Line> = configs
                .iter()
                .enumerate()
                .map(|(ci, cfg)| {
                    let mut pts: Vec<(f64, f64)> = cfg
                        .tests
                        .iter()
                        .filter(|t| rows.iter().any(|r| r.test == t.name))
                        .filter_map(|t| Some((param_num(&t.params[&p])?, *t.metrics.get(&m)?)))
                        .collect();
                    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                    (ci, cfg.label.clone(), pts)
                })
                .collect();
            if series.iter().any(|s| !s.2.is_empty()) {
                let xs: Vec<f64> = series
                    .iter()
                    .flat_map(|s| s.2.iter().map(|p| p.0))
                    .collect();
                let scale = charts::scale_for(&p, &xs);
                let desc = label(&m);
                o.figure(
                    charts::lines(
                        &chart_title(&format!("{desc} against {xl}"), g),
                        &xl,
                        scale,
                        desc,
                        &series,
                    ),
                    &format!(
                        "{desc} against {xl}, one line per configuration{}.",
                        match scale {
                            charts::XScale::Linear => "",
                            charts::XScale::Log10 => " (log₁₀ axis, ticks at the tested values)",
                            _ => " (log₂ axis, ticks at the tested values)",
                        }
                    ),
                    "sweep",
                );
            }
        }
    }
}

/// The per-second series of every test: in each configuration the
/// repetitions its headline comes from (the selected one, or each one a
/// mean is over), each labelled, ramp-up shaded.
fn second_charts(o: &mut Out, configs: &[ConfigData], infos: &[RunInfo]) {
    let _ = writeln!(o.html, "<h2 id=\"seconds\">Second by second</h2>");
    for first in first_tests(configs) {
        let name = first.name.as_str();
        let (f, m) = second_metric(first.kind, &first.main_metric);
        let mut series: Vec<SecondSeries> = Vec::new();
        for (ci, cfg) in configs.iter().enumerate() {
            let Some(t) = cfg.tests.iter().find(|t| t.name == name) else {
                continue;
            };
            let kept = t.series.len();
            for (k, r) in t.series.iter().filter(|r| !r.points.is_empty()).enumerate() {
                let rep = crate::reps::rep_label(r, kept);
                series.push(SecondSeries {
                    color: ci,
                    shade: k,
                    label: match (configs.len() > 1, rep) {
                        (true, Some(rep)) => format!("{}, {rep}", cfg.label),
                        (false, Some(rep)) => rep,
                        (_, None) => cfg.label.clone(),
                    },
                    throughput: at_middles(&r.points, f),
                    cpu: at_middles(&r.points, |p| p.cpu_pct),
                    ramp_s: infos
                        .get(ci)
                        .and_then(|i| i.test(name))
                        .map(|t| t.ramp_s)
                        .unwrap_or(0.0),
                });
            }
        }
        if series.is_empty() {
            let _ = writeln!(
                o.html,
                "<p class=\"note\">{}: no per-second series in its result ({}).</p>",
                esc(name),
                if first.multi.is_some() {
                    "a test on several hosts records each host's figures over the window, not second by second"
                } else {
                    "a window shorter than a second has none, nor has an import"
                }
            );
            continue;
        }
        let desc = label(m);
        let ramp = series.iter().map(|s| s.ramp_s).fold(0.0f64, f64::max);
        o.figure(
            charts::seconds(&format!("{name}: {desc} per second"), desc, &series),
            &format!(
                "{desc} (solid, left axis) and whole-host CPU % (dashed, right axis) of {name}, each point the mean over one second of the repetition the legend names (the ones the headline comes from){}.",
                if ramp > 0.0 {
                    format!("; shaded: the {} s ramp-up, not part of the measurement", crate::fmt::tick(ramp))
                } else {
                    String::new()
                }
            ),
            "series",
        );
    }
}

/// Every number behind every chart.
fn result_tables(o: &mut Out, c: &Comparison, configs: &[ConfigData], infos: &[RunInfo]) {
    let _ = writeln!(o.html, "<h2 id=\"tables\">Results</h2>");
    for t in tables::metrics(configs, infos) {
        o.table(&t, "metrics");
    }
    o.table(&tables::comparison(c), "compare");
    if let Some(t) = c.group_table() {
        o.table(&t, "groups");
    }
    for t in tables::efficiency(c, configs) {
        o.table(&t, "efficiency");
    }
    let _ = writeln!(o.html, "<h3>Every metric of every test</h3>");
    for t in tables::every_metric(configs, infos) {
        let _ = writeln!(o.html, "<details><summary>{}</summary>", esc(&t.title));
        o.html.push_str(&tables::to_html(&t, "every-metric"));
        let _ = writeln!(o.html, "</details>");
    }
}

/// The multi-host tests: per-host tables and chart, skew, pairs (a long
/// list's every pair folded away under its summary).
fn multi_host(o: &mut Out, configs: &[ConfigData]) {
    let multi = crate::hosts::tests(configs);
    if multi.is_empty() {
        return;
    }
    // Set here, not in STYLE, so that reports without multi-host tests
    // stay byte for byte what they were: host, role, client and server
    // are names (left), totals and summaries set apart.
    let _ = writeln!(
        o.html,
        "<h2 id=\"hosts\">Multi-host tests</h2><style>table.hosts td:nth-child(2),table.hosts th:nth-child(2){{text-align:left}}tr.total td{{font-weight:bold;background:#f6f6f6}}tr:not(.total)+tr.total td{{border-top:2px solid #999}}</style>"
    );
    let many = configs.len() > 1;
    for mt in &multi {
        for part in crate::hosts::parts(mt, configs) {
            match part {
                Part::Table(t) => o.table(&t, "hosts"),
                Part::Text(s) => {
                    let _ = writeln!(o.html, "<p>{}</p>", esc(&s));
                }
                Part::Chart {
                    title,
                    y_label,
                    rows,
                    thinned,
                } => {
                    let rows: Vec<&Row> = rows.iter().collect();
                    let labels: Vec<String> = configs.iter().map(|c| c.label.clone()).collect();
                    o.figure(
                        charts::bars(&title, y_label, &rows, &labels, None),
                        &format!(
                            "Bars: each host's {y_label} over its own window{}; circles: its whole-host CPU % (right axis).{}",
                            if many { ", one colour per configuration" } else { "" },
                            thinned.map(|k| format!(" One host in {k} is named on the axis (hosts in the order of the table, which names them all).")).unwrap_or_default()
                        ),
                        "bars",
                    );
                }
                Part::AllPairs { table, pairs } => {
                    let _ = writeln!(
                        o.html,
                        "<details><summary>{}: all {pairs} pairs</summary>",
                        esc(&table.title)
                    );
                    o.html.push_str(&tables::to_html(&table, "hosts"));
                    let _ = writeln!(o.html, "</details>");
                }
            }
        }
    }
}

/// Every configuration's warnings and its tests' notes.
fn notes(o: &mut Out, configs: &[ConfigData], infos: &[RunInfo]) {
    let notes = crate::info::notes(configs, infos);
    if notes.iter().any(|n| !n.is_empty()) {
        let _ = writeln!(o.html, "<h2 id=\"notes\">Warnings and notes</h2>");
        for (cfg, notes) in configs.iter().zip(&notes) {
            if notes.is_empty() {
                continue;
            }
            let _ = writeln!(o.html, "<h3>{}</h3><ul>", esc(&cfg.label));
            for n in notes {
                let _ = match &n.test {
                    Some(t) => writeln!(
                        o.html,
                        "<li class=\"warn\">{}: {}</li>",
                        esc(t),
                        esc(&n.text)
                    ),
                    None => writeln!(o.html, "<li class=\"warn\">{}</li>", esc(&n.text)),
                };
            }
            let _ = writeln!(o.html, "</ul>");
        }
    }
}

/// The system disclosure side by side, differing rows highlighted.
fn disclosure_table(o: &mut Out, c: &Comparison, configs: &[ConfigData]) {
    let single = configs.len() == 1;
    let rows = disclosure::table(configs);
    if !rows.is_empty() {
        let _ = write!(o.html, "<h2 id=\"disclosure\">System disclosure</h2><p>{}Block devices of size 0 (unattached loop devices, unconfigured zram) are left out; <code>peer.…</code> rows are the network peer's side, from the network tests.</p><table class=\"disclosure\"><tr><th>item</th>", if single { "" } else { "Rows that differ between configurations come first, highlighted; then the rest, group by group. " });
        for l in &c.configs {
            let _ = write!(o.html, "<th>{}</th>", esc(l));
        }
        let _ = writeln!(o.html, "</tr>");
        // A heading row where the group changes (what differs comes first).
        let mut last: Option<(bool, &str)> = None;
        for r in rows {
            if last != Some((r.differs, r.group)) {
                last = Some((r.differs, r.group));
                let _ = writeln!(
                    o.html,
                    "<tr class=\"group\"><th colspan=\"{}\">{}{}</th></tr>",
                    c.configs.len() + 1,
                    esc(r.group),
                    if r.differs { " (differs)" } else { "" }
                );
            }
            let cls = if r.differs { " class=\"diff\"" } else { "" };
            let _ = write!(o.html, "<tr{cls}><td>{}</td>", esc(&r.key));
            for v in &r.values {
                let _ = write!(o.html, "<td>{}</td>", esc(v));
            }
            let _ = writeln!(o.html, "</tr>");
        }
        let _ = writeln!(o.html, "</table>");
    }
}
