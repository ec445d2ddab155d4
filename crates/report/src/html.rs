//! The HTML report: one self-contained file (inline style, inline SVG
//! charts drawn with plotters, no script, no font or request to the
//! network), with the findings at the top, the parameters of every test,
//! the numbers behind every chart in tables, and the system disclosure
//! side by side.

use crate::charts::{self, SecondSeries};
use crate::compare::{distinct, first_tests, Comparison, ConfigData, Row, TestData};
use crate::hosts::Part;
use crate::info::RunInfo;
use crate::{disclosure, tables};
use iotoll_model::metrics::{self as mn, label};
use iotoll_model::Kind;
use maud::{html, Markup, PreEscaped, DOCTYPE};

/// The swept numeric parameter of a group's tests, if there is one.
fn swept_param(tests: &[&TestData]) -> Option<String> {
    let mut keys = tests.first()?.params.as_object()?.keys();
    keys.find(|k| {
        let vals: Vec<f64> = tests
            .iter()
            .filter_map(|t| param_num(k, &t.params[k.as_str()]))
            .collect();
        vals.len() == tests.len() && vals.iter().any(|v| *v != vals[0])
    })
    .cloned()
}

/// A parameter's number: sizes are binary (`64k` = 65,536 bytes), a UDP
/// `rate` decimal as iperf's `-b` (`500m` = 500,000,000 bits/s).
fn param_num(key: &str, v: &serde_json::Value) -> Option<f64> {
    v.as_f64().or_else(|| {
        let s = v.as_str()?;
        let n = match key {
            "rate" => iotoll_model::parse_rate(s).ok()?,
            _ => iotoll_model::parse_size(s).ok()?,
        };
        Some(n as f64)
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

/// A table under its title.
fn table(t: &tables::Table, class: &str) -> Markup {
    html! { h3 { (t.title) } "\n" (PreEscaped(tables::to_html(t, class))) }
}

/// A table folded away under its summary.
fn folded(summary: &str, t: &tables::Table, class: &str) -> Markup {
    html! {
        details { summary { (summary) } "\n" (PreEscaped(tables::to_html(t, class))) }
        "\n"
    }
}

/// A chart with its caption, counted in `drawn` (the charts drawn so
/// far: the report's last line counts them).
fn figure(drawn: &mut usize, svg: Result<String, String>, caption: &str, class: &str) -> Markup {
    match svg {
        Ok(svg) => {
            *drawn += 1;
            html! { figure class=(class) { (PreEscaped(svg)) figcaption { (caption) } } "\n" }
        }
        Err(e) => html! { p.warn { "chart not drawn: " (e) } "\n" },
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
            // A rate test's series counts its connections (each one
            // transaction) in `trans_s`; its Mbit/s is only the payload.
            mn::CONN_S | mn::SERVED_CONN_S => (|p| p.trans_s, mn::CONN_S),
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
/// each configuration's run facts (same order as `configs`). Every text
/// from a run (names, labels, notes, a peer's disclosure) goes through
/// maud, which escapes it: none can add markup.
pub fn render(c: &Comparison, configs: &[ConfigData], infos: &[RunInfo], what: &str) -> String {
    let title = format!("iotoll {what}: {}", c.configs.join(" vs "));
    let mut drawn = 0;
    let body = html! {
        (runs(c, configs, infos))
        // A comparison opens with what was compared (crate::differs).
        @if let Some(t) = crate::differs::table(&c.differs, &c.configs) {
            h2 #differs { (t.title) } "\n" (PreEscaped(tables::to_html(&t, "differs")))
        }
        (findings(c, configs, infos))
        (parameters(configs, infos))
        (group_charts(&mut drawn, c, configs))
        (second_charts(&mut drawn, configs, infos))
        (result_tables(c, configs, infos))
        (multi_host(&mut drawn, configs))
        (notes(configs, infos))
        (disclosure_table(c, configs))
    };
    html! {
        (DOCTYPE) "\n"
        html lang="en" {
            head { meta charset="utf-8"; title { (title) } style { (PreEscaped(STYLE)) } }
            body {
                "\n" h1 { (title) } "\n"
                (body)
                p style="font-size:12px;color:#777" {
                    (drawn) " charts. Generated by iotoll " (iotoll_model::VERSION) "."
                }
                "\n"
            }
        }
        "\n"
    }
    .into_string()
}

/// What was run, when; smoke runs marked.
fn runs(c: &Comparison, configs: &[ConfigData], infos: &[RunInfo]) -> Markup {
    let single = configs.len() == 1;
    let role = |i: usize| match (single, i) {
        (true, _) => "",
        (false, 0) => " — baseline",
        _ => " — candidate",
    };
    let info = |i: usize| infos.get(i).cloned().unwrap_or_default();
    html! {
        ul.runs {
            "\n"
            @for (i, cfg) in configs.iter().enumerate() {
                @let info = info(i);
                li {
                    span class="sw" style=(format!("background:{}", charts::css_color(i))) {}
                    b { (cfg.label) } (role(i)) ": "
                    @if cfg.label != format!("run {}", cfg.run_id) { "run " (cfg.run_id) ", " }
                    "suite " (info.suite) ", started " (info.started_at) ", "
                    (info.status.label()) ", " (cfg.tests.len()) " tests"
                    @if info.overridden.is_some() { " — " b.warn { "smoke run" } }
                }
                "\n"
            }
        }
        "\n"
        @for (i, info) in infos.iter().enumerate() {
            @if let Some(n) = &info.overridden {
                p.smoke {
                    "⚠ Smoke run"
                    @if !single { " (" (configs[i].label) ")" }
                    ": " (n) ". Do not publish these numbers as the study."
                }
                "\n"
            }
        }
        @if !single {
            p { "Differences are candidate / baseline − 1, each candidate against " (c.configs[0]) "." }
            "\n"
        }
    }
}

/// The key findings, warnings in red.
fn findings(c: &Comparison, configs: &[ConfigData], infos: &[RunInfo]) -> Markup {
    const WARNINGS: [&str; 5] = [
        "Not repeatable",
        "CPU-bound",
        "Smoke run",
        "Interfered",
        "Inconsistent",
    ];
    let warn = |f: &str| WARNINGS.iter().any(|w| f.contains(w)).then_some("warn");
    html! {
        h2 #findings { "Key findings" }
        ul.findings {
            "\n"
            @for f in crate::findings::for_report(c, configs, infos) {
                li class=[warn(&f)] { (f) } "\n"
            }
        }
        "\n"
    }
}

fn parameters(configs: &[ConfigData], infos: &[RunInfo]) -> Markup {
    html! {
        h2 #parameters { "Test parameters" } "\n"
        @for t in tables::parameters(configs, infos) { (table(&t, "parameters")) }
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
fn group_charts(drawn: &mut usize, c: &Comparison, configs: &[ConfigData]) -> Markup {
    let single = configs.len() == 1;
    let mut parts = vec![html! { h2 #charts { "Charts" } "\n" }];
    for g in &distinct(c.rows.iter().map(|r| r.group.as_str())) {
        let rows: Vec<&Row> = c.rows.iter().filter(|r| r.group == *g).collect();
        let metric = label(&rows[0].metric);
        let per = if single { "test" } else { "configuration" };
        let threshold = c.cpu_threshold_pct.map(|t| {
            let t = crate::fmt::tick(t);
            format!("; band and tick on the CPU axis: the {t} % CPU threshold")
        });
        let bars = figure(
            drawn,
            charts::bars(
                &chart_title(&format!("{metric} per {per}"), g),
                metric,
                &rows,
                &c.configs,
                c.cpu_threshold_pct,
            ),
            &format!(
                "Bars: {metric} of each test, one colour per configuration; circles: whole-host CPU % (right axis) in the same colour{}.",
                threshold.unwrap_or_default()
            ),
            "bars",
        );
        parts.push(html! { h3 { (group_name(g)) } "\n" (bars) });
        parts.extend(sweep_charts(drawn, g, &rows, configs));
    }
    html! { @for p in &parts { (p) } }
}

/// Lines of the group's main metric, CPU and headline efficiency (and the
/// round trip and one-way latency, for request/response) against the
/// parameter it sweeps.
fn sweep_charts(drawn: &mut usize, g: &str, rows: &[&Row], configs: &[ConfigData]) -> Vec<Markup> {
    // Each configuration's tests of the group.
    let per: Vec<Vec<&TestData>> = (configs.iter())
        .map(|c| {
            (c.tests.iter())
                .filter(|t| rows.iter().any(|r| r.test == t.name))
                .collect()
        })
        .collect();
    let Some(p) = swept_param(&per[0]) else {
        return Vec::new();
    };
    let kind = per[0][0].kind;
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
    let mut out = Vec::new();
    for m in ms {
        let series: Vec<charts::Line> = (configs.iter().zip(&per).enumerate())
            .map(|(ci, (cfg, tests))| {
                let mut pts: Vec<(f64, f64)> = (tests.iter())
                    .filter_map(|t| Some((param_num(&p, &t.params[&p])?, *t.metrics.get(&m)?)))
                    .collect();
                pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                (ci, cfg.label.clone(), pts)
            })
            .collect();
        if series.iter().all(|s| s.2.is_empty()) {
            continue;
        }
        let xs: Vec<f64> = series
            .iter()
            .flat_map(|s| s.2.iter().map(|p| p.0))
            .collect();
        let scale = charts::scale_for(&p, &xs);
        let desc = label(&m);
        let axis = match scale {
            charts::XScale::Linear => "",
            charts::XScale::Log10 => " (log₁₀ axis, ticks at the tested values)",
            _ => " (log₂ axis, ticks at the tested values)",
        };
        out.push(figure(
            drawn,
            charts::lines(
                &chart_title(&format!("{desc} against {xl}"), g),
                &xl,
                scale,
                desc,
                &series,
            ),
            &format!("{desc} against {xl}, one line per configuration{axis}."),
            "sweep",
        ));
    }
    out
}

/// The per-second series of every test: in each configuration the
/// repetitions its headline comes from (the selected one, or each one a
/// mean is over), each labelled, ramp-up shaded.
fn second_charts(drawn: &mut usize, configs: &[ConfigData], infos: &[RunInfo]) -> Markup {
    let mut parts = vec![html! { h2 #seconds { "Second by second" } "\n" }];
    for first in first_tests(configs) {
        let name = first.name.as_str();
        let (f, m) = second_metric(first.kind, &first.main_metric);
        let mut series: Vec<SecondSeries> = Vec::new();
        for (ci, cfg) in configs.iter().enumerate() {
            let Some(t) = cfg.test(name) else {
                continue;
            };
            let kept = t.series.len();
            let ramp_s = infos
                .get(ci)
                .and_then(|i| i.test(name))
                .map_or(0.0, |t| t.ramp_s);
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
                    ramp_s,
                });
            }
        }
        if series.is_empty() {
            let why = if first.multi.is_some() {
                "a test on several hosts records each host's figures over the window, not second by second"
            } else {
                "a window shorter than a second has none, nor has an import"
            };
            parts.push(html! {
                p.note { (name) ": no per-second series in its result (" (why) ")." } "\n"
            });
            continue;
        }
        let desc = label(m);
        let ramp = series.iter().map(|s| s.ramp_s).fold(0.0f64, f64::max);
        let shaded = if ramp > 0.0 {
            let ramp = crate::fmt::tick(ramp);
            format!("; shaded: the {ramp} s ramp-up, not part of the measurement")
        } else {
            String::new()
        };
        parts.push(figure(
            drawn,
            charts::seconds(&format!("{name}: {desc} per second"), desc, &series),
            &format!(
                "{desc} (solid, left axis) and whole-host CPU % (dashed, right axis) of {name}, each point the mean over one second of the repetition the legend names (the ones the headline comes from){shaded}."
            ),
            "series",
        ));
    }
    html! { @for p in &parts { (p) } }
}

/// Every number behind every chart.
fn result_tables(c: &Comparison, configs: &[ConfigData], infos: &[RunInfo]) -> Markup {
    html! {
        h2 #tables { "Results" } "\n"
        @for t in tables::metrics(configs, infos) { (table(&t, "metrics")) }
        (table(&tables::comparison(c), "compare"))
        @if let Some(t) = c.group_table() { (table(&t, "groups")) }
        @for t in tables::efficiency(c, configs) { (table(&t, "efficiency")) }
        h3 { "Every metric of every test" } "\n"
        @for t in tables::every_metric(configs, infos) { (folded(&t.title, &t, "every-metric")) }
    }
}

/// Set with the multi-host tests, not in STYLE, so that reports without
/// them stay byte for byte what they were: host, role, client and server
/// are names (left), totals and summaries set apart.
const HOSTS_STYLE: &str = "table.hosts td:nth-child(2),table.hosts th:nth-child(2){text-align:left}tr.total td{font-weight:bold;background:#f6f6f6}tr:not(.total)+tr.total td{border-top:2px solid #999}";

/// The multi-host tests: per-host tables and chart, skew, pairs (a long
/// list's every pair folded away under its summary).
fn multi_host(drawn: &mut usize, configs: &[ConfigData]) -> Markup {
    let multi = crate::hosts::parts(configs);
    if multi.is_empty() {
        return html! {};
    }
    let mut parts = vec![html! {
        h2 #hosts { "Multi-host tests" } style { (PreEscaped(HOSTS_STYLE)) } "\n"
    }];
    let many = configs.len() > 1;
    let labels: Vec<String> = configs.iter().map(|c| c.label.clone()).collect();
    for part in multi {
        parts.push(match part {
            Part::Table(t) => table(&t, "hosts"),
            Part::Text(s) => html! { p { (s) } "\n" },
            Part::Chart {
                title,
                y_label,
                rows,
                thinned,
            } => {
                let rows: Vec<&Row> = rows.iter().collect();
                let colours = if many { ", one colour per configuration" } else { "" };
                let thinned = thinned.map(|k| format!(" One host in {k} is named on the axis (hosts in the order of the table, which names them all).")).unwrap_or_default();
                figure(
                    drawn,
                    charts::bars(&title, y_label, &rows, &labels, None),
                    &format!(
                        "Bars: each host's {y_label} over its own window{colours}; circles: its whole-host CPU % (right axis).{thinned}"
                    ),
                    "bars",
                )
            }
            Part::AllPairs { table, pairs } => {
                folded(&format!("{}: all {pairs} pairs", table.title), &table, "hosts")
            }
        });
    }
    html! { @for p in &parts { (p) } }
}

/// Every configuration's warnings and its tests' notes.
fn notes(configs: &[ConfigData], infos: &[RunInfo]) -> Markup {
    let notes = crate::info::notes(configs, infos);
    if notes.iter().all(|n| n.is_empty()) {
        return html! {};
    }
    html! {
        h2 #notes { "Warnings and notes" } "\n"
        @for (cfg, notes) in configs.iter().zip(&notes).filter(|(_, n)| !n.is_empty()) {
            h3 { (cfg.label) }
            ul {
                "\n"
                @for n in notes {
                    li.warn {
                        @if let Some(t) = &n.test { (t) ": " }
                        (n.text)
                    }
                    "\n"
                }
            }
            "\n"
        }
    }
}

/// The system disclosure side by side, differing rows highlighted.
fn disclosure_table(c: &Comparison, configs: &[ConfigData]) -> Markup {
    let rows = disclosure::table(configs);
    if rows.is_empty() {
        return html! {};
    }
    // A heading row where the group changes (what differs comes first).
    let mut last: Option<(bool, &str)> = None;
    let heads: Vec<bool> = (rows.iter())
        .map(|r| last.replace((r.differs, r.group)) != Some((r.differs, r.group)))
        .collect();
    html! {
        h2 #disclosure { "System disclosure" }
        p {
            @if configs.len() > 1 {
                "Rows that differ between configurations come first, highlighted; then the rest, group by group. "
            }
            "Block devices of size 0 (unattached loop devices, unconfigured zram) are left out; "
            code { "peer.…" }
            " rows are the network peer's side, from the network tests."
        }
        table.disclosure {
            tr { th { "item" } @for l in &c.configs { th { (l) } } }
            "\n"
            @for (r, head) in rows.iter().zip(heads) {
                @if head {
                    tr.group {
                        th colspan=(c.configs.len() + 1) {
                            (r.group) @if r.differs { " (differs)" }
                        }
                    }
                    "\n"
                }
                tr class=[r.differs.then_some("diff")] {
                    td { (r.key) } @for v in &r.values { td { (v) } }
                }
                "\n"
            }
        }
        "\n"
    }
}

#[cfg(test)]
mod tests {

    /// A tester saw `rate = "500m"` on a chart's axis as 524,288,000: a UDP
    /// rate is decimal, as iperf's `-b`; sizes stay binary.
    #[test]
    fn a_rate_parameter_is_decimal_and_a_size_binary() {
        let v = |s: &str| serde_json::Value::String(s.into());
        use super::param_num;
        assert_eq!(param_num("rate", &v("500m")), Some(500e6));
        assert_eq!(param_num("bs", &v("64k")), Some(65_536.0));
        assert_eq!(param_num("conns", &serde_json::json!(8)), Some(8.0));
    }

    use crate::fixtures::{doc, run};
    use serde_json::json;

    /// A tester saw crr's per-second chart in Mbit/s: a rate test's is in
    /// connections/s, from the series' transactions, whatever selects it.
    #[test]
    fn a_rate_tests_seconds_are_connections_per_second() {
        use super::second_metric;
        use iotoll_model::metrics as mn;
        use iotoll_model::Kind;
        let p = iotoll_model::SeriesPoint {
            t_s: 1.0,
            phase: "measure".into(),
            iops: None,
            mb_s: None,
            mbit_s: Some(9.0),
            trans_s: Some(1234.0),
            cpu_pct: None,
        };
        for (kind, main) in [
            (Kind::NetCrr, mn::CONN_S),
            (Kind::NetCc, mn::CONN_S),
            (Kind::NetCrr, mn::SERVED_CONN_S),
            (Kind::NetCc, mn::CONNECT_P99_US),
        ] {
            let (pick, m) = second_metric(kind, main);
            assert_eq!((pick(&p), m), (Some(1234.0), mn::CONN_S), "{kind:?} {main}");
        }
        assert_eq!(super::label(mn::CONN_S), "connections/s");
        let (pick, m) = second_metric(Kind::NetStream, mn::MBIT_S);
        assert_eq!((pick(&p), m), (Some(9.0), mn::MBIT_S));
    }

    /// A tester saw a suite's report leave out the peer's CPU as "(same
    /// host)" for lab hosts on CPUs of their own, where a single run keeps
    /// it: a report follows the single run's rule.
    #[test]
    fn lab_hosts_on_cpus_of_their_own_keep_the_peers_cpu() {
        let with_cpus = |local: Vec<u32>, remote: Vec<u32>| {
            let metrics = json!({"mbit_s": 900.0, "cpu_pct": 30.0, "cpus": 2.0,
                "remote_cpu_pct": 40.0, "window_s": 3.0});
            let mut d = doc("net-stream", json!({"peer": "10.9.0.2:7575"}), metrics);
            let cpu = |own| iotoll_model::CpuReport {
                own_cpus: Some(own),
                ..Default::default()
            };
            d.cpu = iotoll_model::CpuSection {
                local: Some(cpu(local)),
                remote: Some(cpu(remote)),
                same_host: Some(true),
            };
            let (md, _) = crate::fixtures::render(&[run(1, "lab", vec![("s", d)])]);
            md
        };
        let own = with_cpus(vec![0], vec![1]);
        assert!(!own.contains("(same host)"), "{own}");
        assert!(own.contains("40"), "{own}");
        let shared = with_cpus(vec![0, 1], vec![1]);
        assert!(shared.contains("(same host)"), "{shared}");
    }

    /// Text from a run is text: a hostile configuration label, test name,
    /// note or disclosure value adds no element or attribute to the report.
    #[test]
    fn hostile_text_from_a_run_adds_no_markup() {
        let evil = r#"<script>alert(1)</script>"><img src=x onerror=alert(2)>"#;
        let metrics = json!({"iops": 1000.0, "cpu_pct": 5.0, "cpus": 2.0, "window_s": 3.0});
        let mut d = doc("disk", json!({"bs": 4096}), metrics);
        d.notes.push(format!("a note: {evil}"));
        let name = format!("disk/{evil}");
        let mut r = run(1, evil, vec![(name.as_str(), d)]);
        r.disclosure = Some(json!({"host": evil, "kernel": "6.1"}));
        let html = crate::fixtures::html_of(&r, None);
        for tag in ["<script", "<img"] {
            assert!(!html.contains(tag), "{tag} in the report");
        }
        let text =
            "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&gt;&lt;img src=x onerror=alert(2)&gt;";
        // The title, the heading, the runs list, the note and the disclosure
        // at least, each as text.
        let said = html.matches(text).count();
        assert!(said >= 5, "said {said} times:\n{html}");
    }
}
