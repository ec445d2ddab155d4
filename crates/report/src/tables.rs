//! The report's tables, built once and rendered as HTML or Markdown: the
//! parameters of every test, its key metrics by kind, and every metric of
//! every test side by side.

use crate::compare::{distinct, first_tests, Comparison, ConfigData, TestData};
use crate::fmt::{count, esc, md, num, pct, size};
use crate::info::RunInfo;
use iotoll_model::metrics::{self as mn, label};
use iotoll_model::Kind;
use serde_json::Value;
use std::collections::BTreeSet;

#[derive(Debug, Clone, Default)]
pub struct TRow {
    pub cells: Vec<String>,
    /// Cells that differ between configurations.
    pub cell_diff: Vec<bool>,
    /// The configuration this row belongs to (its colour).
    pub config: Option<usize>,
    pub warn: bool,
    /// A totals or summary row (set apart in HTML).
    pub total: bool,
}

impl TRow {
    /// A row with no cell marked as differing.
    pub(crate) fn plain(cells: Vec<String>, config: Option<usize>, warn: bool) -> TRow {
        let cell_diff = vec![false; cells.len()];
        TRow {
            cells,
            cell_diff,
            config,
            warn,
            total: false,
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct Table {
    pub title: String,
    pub head: Vec<String>,
    pub rows: Vec<TRow>,
    /// A note under the table.
    pub note: Option<String>,
}

fn kind_title(kind: Kind) -> &'static str {
    match kind {
        Kind::Disk => "Disk tests",
        Kind::NetStream => "Network stream tests",
        Kind::NetRr => "Network request/response tests",
    }
}

/// The parameters worth a column, in order, per kind; the rest go into
/// "other".
fn param_columns(kind: Kind) -> &'static [(&'static str, &'static str)] {
    match kind {
        Kind::Disk => &[
            ("spec", "access spec"),
            ("mix", "mix"),
            ("bs", "block size"),
            ("read_pct", "read %"),
            ("random_pct", "random %"),
            ("qd", "QD"),
            ("workers", "workers"),
            ("spread", "spread"),
            ("cpus", "CPUs"),
            ("ntargets", "targets"),
            ("engine", "engine"),
            ("direct", "direct"),
            ("ramp_s", "ramp (s)"),
            ("time_s", "time (s)"),
            ("target", "target"),
            ("size", "size"),
        ],
        Kind::NetStream => &[
            ("dir", "direction"),
            ("conns", "connections"),
            ("msg", "message"),
            ("sockbuf", "socket buffer"),
            ("nodelay", "nodelay"),
            ("threads", "threads"),
            ("ramp_s", "ramp (s)"),
            ("time_s", "time (s)"),
            ("peer", "peer"),
        ],
        Kind::NetRr => &[
            ("conns", "connections"),
            ("req", "request"),
            ("resp", "response"),
            ("burst", "burst"),
            ("sockbuf", "socket buffer"),
            ("nodelay", "nodelay"),
            ("threads", "threads"),
            ("ramp_s", "ramp (s)"),
            ("time_s", "time (s)"),
            ("peer", "peer"),
        ],
    }
}

/// Keys left out of "other": internal or repeated elsewhere (a spec's
/// `lines` are its bs/read/random or its `mix`; `targets` are `target`
/// and `ntargets`).
const HIDDEN: &[&str] = &[
    "lines",
    "targets",
    "engine_requested",
    "target_kind",
    "target_size",
    "logical_block_size",
    "auth",
];

fn is_size(key: &str) -> bool {
    matches!(
        key,
        "bs" | "size" | "msg" | "req" | "resp" | "sockbuf" | "align" | "offset"
    )
}

fn show(key: &str, v: &Value) -> String {
    match v {
        Value::Null => "–".into(),
        Value::Number(n) if is_size(key) => n.as_f64().map(size).unwrap_or_default(),
        Value::Number(n) => n.as_f64().map(num_plain).unwrap_or_default(),
        Value::String(s) => s.clone(),
        Value::Array(a) if a.is_empty() => "–".into(),
        Value::Array(a) => a
            .iter()
            .map(|x| x.as_str().map(str::to_string).unwrap_or(x.to_string()))
            .collect::<Vec<_>>()
            .join(", "),
        other => other.to_string(),
    }
}

/// A parameter's number as written: `4`, `1.5`, `0.5`.
fn num_plain(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

/// What a parameter's value is compared by: a temporary test file's name
/// and an endpoint's address change from run to run without changing the
/// workload.
fn same_key(key: &str, v: &str) -> String {
    match key {
        "target" if v.contains("iotoll-suite-") => {
            v.chars().filter(|c| !c.is_ascii_digit()).collect()
        }
        // An endpoint's address (ip:port, in-process or remote) is where
        // it listened, never a difference (issue 23 §5).
        "peer" => String::new(),
        _ => v.to_string(),
    }
}

fn kinds(configs: &[ConfigData]) -> Vec<Kind> {
    distinct(configs.iter().flat_map(|c| c.tests.iter().map(|t| t.kind)))
}

/// Test names in order: the first configuration's, then the others'.
fn test_names(configs: &[ConfigData], kind: Kind) -> Vec<String> {
    distinct(configs.iter().flat_map(|c| {
        c.tests
            .iter()
            .filter(|t| t.kind == kind)
            .map(|t| t.name.clone())
    }))
}

/// Per kind: every test's parameters as run (one row per configuration
/// when there are several, differing cells marked).
pub fn parameters(configs: &[ConfigData], infos: &[RunInfo]) -> Vec<Table> {
    let many = configs.len() > 1;
    let mut out = Vec::new();
    for kind in kinds(configs) {
        let cols = param_columns(kind);
        let names = test_names(configs, kind);
        let spec = |ci: usize, name: &str| -> Value {
            infos
                .get(ci)
                .and_then(|i| i.test(name))
                .map(|t| t.spec.to_value())
                .filter(|s| s.is_object())
                .or_else(|| {
                    configs[ci]
                        .tests
                        .iter()
                        .find(|t| t.name == name)
                        .map(|t| t.params.clone())
                })
                .unwrap_or(Value::Null)
        };
        // Only columns some test has; "other" for the rest.
        let specs: Vec<Value> = names
            .iter()
            .flat_map(|n| (0..configs.len()).map(move |ci| spec(ci, n)))
            .collect();
        let used: Vec<&(&str, &str)> = cols
            .iter()
            .filter(|(k, _)| {
                specs
                    .iter()
                    .any(|s| s.get(*k).is_some_and(|v| !v.is_null()))
            })
            .collect();
        let mut head = vec!["test".to_string()];
        if many {
            head.push("configuration".into());
        }
        head.extend(used.iter().map(|c| c.1.to_string()));
        head.push("other".into());
        let mut rows = Vec::new();
        for name in &names {
            let per: Vec<(usize, Vec<String>)> = (0..configs.len())
                .filter(|ci| configs[*ci].tests.iter().any(|t| &t.name == name))
                .map(|ci| {
                    let s = spec(ci, name);
                    let mut cells: Vec<String> = used
                        .iter()
                        .map(|(k, _)| s.get(*k).map(|v| show(k, v)).unwrap_or_else(|| "–".into()))
                        .collect();
                    let other: Vec<String> = s
                        .as_object()
                        .into_iter()
                        .flatten()
                        .filter(|(k, v)| {
                            !cols.iter().any(|c| c.0 == k.as_str())
                                && !HIDDEN.contains(&k.as_str())
                                && !v.is_null()
                                && v.as_array().is_none_or(|a| !a.is_empty())
                        })
                        .map(|(k, v)| format!("{k}={}", show(k, v)))
                        .collect();
                    cells.push(other.join(", "));
                    (ci, cells)
                })
                .collect();
            let differs = |j: usize| {
                let k = used.get(j).map_or("other", |c| c.0);
                per.iter()
                    .any(|(_, o)| same_key(k, &o[j]) != same_key(k, &per[0].1[j]))
            };
            let cell_diff: Vec<bool> = (0..per.first().map_or(0, |p| p.1.len()))
                .map(differs)
                .collect();
            // Configurations that ran the test alike share one row.
            let alike = per.len() == configs.len() && !cell_diff.iter().any(|d| *d);
            for (ci, cells) in per.iter().take(if alike { 1 } else { per.len() }) {
                let mut lead = vec![name.clone()];
                if many {
                    lead.push(if alike {
                        "all".into()
                    } else {
                        configs[*ci].label.clone()
                    });
                }
                let mut row = TRow::plain(lead, (many && !alike).then_some(*ci), false);
                if alike {
                    // Values that do not count as a difference (an endpoint's
                    // address, a temporary file) are still each shown.
                    let all = (0..cells.len())
                        .map(|j| distinct(per.iter().map(|p| p.1[j].clone())).join(" / "));
                    row.cells.extend(all);
                } else {
                    row.cells.extend(cells.iter().cloned());
                }
                row.cell_diff.extend(cell_diff.iter().copied());
                rows.push(row);
            }
        }
        // What every row shares is said once, under the table: the items
        // of "other" and the columns with one value throughout.
        let first = if many { 2 } else { 1 };
        let mut common: Vec<String> = Vec::new();
        if rows.len() > 1 {
            let other_items = |r: &TRow| -> Vec<String> {
                let items = r.cells.last().into_iter().flat_map(|c| c.split(", "));
                items
                    .filter(|x| !x.is_empty())
                    .map(str::to_string)
                    .collect()
            };
            let shared: Vec<String> = other_items(&rows[0])
                .into_iter()
                .filter(|x| rows.iter().all(|r| other_items(r).contains(x)))
                .collect();
            for r in &mut rows {
                let rest: Vec<String> = other_items(r)
                    .into_iter()
                    .filter(|x| !shared.contains(x))
                    .collect();
                if let Some(c) = r.cells.last_mut() {
                    *c = rest.join(", ");
                }
            }
            let n = head.len() - 1;
            let constant: Vec<usize> = (first..n)
                .filter(|j| {
                    rows.iter()
                        .all(|r| r.cells[*j] == rows[0].cells[*j] && !r.cell_diff[*j])
                })
                .collect();
            for j in &constant {
                common.push(format!("{} {}", head[*j], rows[0].cells[*j]));
            }
            common.extend(shared);
            for j in constant.iter().rev() {
                head.remove(*j);
                for r in &mut rows {
                    r.cells.remove(*j);
                    r.cell_diff.remove(*j);
                }
            }
        }
        // No "other" column when nothing is in it.
        if rows
            .iter()
            .all(|r| r.cells.last().is_some_and(|c| c.is_empty()))
        {
            head.pop();
            for r in &mut rows {
                r.cells.pop();
                r.cell_diff.pop();
            }
        }
        let mut note = Vec::new();
        if !common.is_empty() {
            note.push(format!("Every test here: {}.", common.join(", ")));
        }
        if many {
            note.push("\"all\": every configuration ran the test with these parameters. Highlighted: the value differs between configurations (a temporary file's name and an endpoint's address do not count).".to_string());
        }
        out.push(Table {
            title: format!("{}: parameters", kind_title(kind)),
            head,
            rows,
            note: (!note.is_empty()).then(|| note.join(" ")),
        });
    }
    out
}

/// The columns of a kind's metrics table.
fn metric_columns(kind: Kind) -> &'static [&'static str] {
    match kind {
        Kind::Disk => &[
            mn::IOPS,
            mn::MB_S,
            mn::LAT_MEAN_US,
            mn::LAT_P99_US,
            mn::QD_ACHIEVED,
            mn::CPU_PCT,
            mn::CPU_OTHERS_PCT,
            mn::IOPS_PER_CPU_PCT,
            mn::MB_S_PER_CPU_PCT,
            mn::CPU_US_PER_IO,
        ],
        Kind::NetStream => &[
            mn::MBIT_S,
            mn::CONNS,
            mn::RETRANSMITS,
            mn::FAIRNESS,
            mn::CPU_PCT,
            mn::CPU_OTHERS_PCT,
            mn::REMOTE_CPU_PCT,
            mn::MBIT_S_PER_CPU_PCT,
            mn::REMOTE_MBIT_S_PER_CPU_PCT,
            mn::CPU_US_PER_KB,
        ],
        Kind::NetRr => &[
            mn::TRANS_S,
            mn::CONNS,
            mn::RTT_MEAN_US,
            mn::RTT_P99_US,
            mn::LATENCY_ONE_WAY_US,
            mn::CPU_PCT,
            mn::CPU_OTHERS_PCT,
            mn::REMOTE_CPU_PCT,
            mn::CPU_US_PER_TRANS,
        ],
    }
}

/// A metric of the peer host (`remote_…`: its CPU, interrupts, P/E index):
/// not shown when the peer was this host (it would be this host's CPU
/// presented as a second machine's).
pub fn remote_cpu_metric(m: &str) -> bool {
    m.starts_with("remote_")
}

/// A CPU % cell: two decimals, so that the efficiency beside it can be
/// checked against the shown values.
pub(crate) fn cpu_cell(v: Option<f64>) -> String {
    match v {
        Some(v) if v.is_finite() => format!("{v:.2}"),
        _ => "–".into(),
    }
}

/// A test's name, flagged when its repetitions disagreed.
fn test_cell(name: &str, not_repeatable: bool) -> String {
    let flag = if not_repeatable {
        " ⚠ not repeatable"
    } else {
        ""
    };
    format!("{name}{flag}")
}

/// A metric's value; the peer's CPU is not a second machine's when the peer
/// was this host.
pub(crate) fn metric_cell(m: &str, v: Option<f64>, same_host: bool) -> String {
    if same_host && remote_cpu_metric(m) {
        "(same host)".into()
    } else if m.ends_with("_pct") && !m.contains("_per_") {
        cpu_cell(v)
    } else if mn::metric_def(m).is_some_and(|d| d.unit == "count") {
        count(v)
    } else {
        num(v)
    }
}

/// "iops 980 – 1,020 (± 2.0 %)": the interval of the selection metric;
/// `unit` converts a disk MB/s metric to Mbit/s.
pub(crate) fn ci_cell(c: &iotoll_model::Ci95, unit: Option<(&str, f64)>) -> String {
    let (name, f) = unit.map_or((label(&c.metric), 1.0), |(l, f)| (l, f));
    let rel = c
        .relative_pct()
        .map_or(String::new(), |r| format!(" (± {r:.1} %)"));
    let caveat = c.caveat().map_or(String::new(), |w| format!(" ⚠ {w}"));
    format!(
        "{name} {} – {}{rel}{caveat}",
        num(Some(c.low * f)),
        num(Some(c.high * f))
    )
}

/// A multi-host test's multi-homed hosts (more than one adapter): what
/// each adapter received and sent over the host's window, from its
/// interface counters (headers included), and the host's adapters
/// together beside the payload its pairs counted. None when no host has
/// several adapters.
pub fn adapter_table(
    name: &str,
    mh: &crate::compare::MultiHost,
    label_of: Option<&str>,
) -> Option<Table> {
    let window = mh.totals.get(mn::WINDOW_S).copied().unwrap_or(0.0);
    let hosts: Vec<_> = mh.hosts.iter().filter(|h| h.ifaces.len() > 1).collect();
    if hosts.is_empty() {
        return None;
    }
    let mut rows = Vec::new();
    for h in hosts {
        let w = h.cpu.as_ref().map_or(window, |c| c.window_s);
        let ifaces: Vec<_> = h.ifaces.iter().map(|i| i.rated(w)).collect();
        let wire: f64 = ifaces.iter().filter_map(|i| i.mbit_s()).sum();
        for i in &ifaces {
            let share = i.mbit_s().filter(|_| wire > 0.0).map(|v| v / wire * 100.0);
            rows.push(TRow::plain(
                vec![
                    h.name.clone(),
                    i.name.clone(),
                    num(i.rx_mbit_s),
                    num(i.tx_mbit_s),
                    num(i.mbit_s()),
                    share.map_or("–".into(), |v| format!("{v:.1}")),
                ],
                None,
                false,
            ));
        }
        let sum = |f: fn(&iotoll_model::IfaceFigures) -> Option<f64>| {
            ifaces.iter().map(f).sum::<Option<f64>>()
        };
        rows.push(TRow {
            total: true,
            ..TRow::plain(
                vec![
                    h.name.clone(),
                    format!(
                        "all adapters (payload {} Mbit/s)",
                        num(h.metrics.get(mn::MBIT_S).copied())
                    ),
                    num(sum(|i| i.rx_mbit_s)),
                    num(sum(|i| i.tx_mbit_s)),
                    num(Some(wire)),
                    if wire > 0.0 {
                        "100.0".into()
                    } else {
                        "–".into()
                    },
                ],
                None,
                false,
            )
        });
    }
    let prefix = label_of.map(|l| format!("{l}: ")).unwrap_or_default();
    Some(Table {
        title: format!(
            "{prefix}{name}: per adapter ({})",
            crate::reps::host_table_source(mh)
        ),
        head: ["host", "adapter", "received Mbit/s", "sent Mbit/s", "Mbit/s", "share %"]
            .map(String::from)
            .to_vec(),
        rows,
        note: Some("Each adapter's interface counters over its host's window: bytes on the wire, headers included, so the adapters together carry a little more than the payload (goodput) the host's pairs counted.".into()),
    })
}

fn same_host(infos: &[RunInfo], ci: usize, test: &str) -> bool {
    infos
        .get(ci)
        .and_then(|i| i.test(test))
        .is_some_and(|t| t.same_host == Some(true))
}

/// Per kind: the key metrics of every test (a row per configuration when
/// there are several).
pub fn metrics(configs: &[ConfigData], infos: &[RunInfo]) -> Vec<Table> {
    let many = configs.len() > 1;
    let mut out = Vec::new();
    for kind in kinds(configs) {
        let names = test_names(configs, kind);
        let find = |ci: usize, n: &str| -> Option<&TestData> {
            configs[ci].tests.iter().find(|t| t.name == n)
        };
        let cols: Vec<&str> = metric_columns(kind)
            .iter()
            .copied()
            .filter(|m| {
                names.iter().any(|n| {
                    (0..configs.len()).any(|ci| {
                        find(ci, n).is_some_and(|t| t.metrics.contains_key(*m))
                            && !(remote_cpu_metric(m) && same_host(infos, ci, n))
                    })
                })
            })
            .collect();
        let any_same_host = names
            .iter()
            .any(|n| (0..configs.len()).any(|ci| same_host(infos, ci, n)));
        // Disk throughput in Mbit/s when every test of the table's
        // configurations asks (suite key unit = "mbit_s").
        let mbit = kind == Kind::Disk
            && (configs.iter().flat_map(|c| &c.tests))
                .filter(|t| t.kind == kind)
                .all(|t| iotoll_model::ci::wants_mbit(t.kind, &t.params));
        let in_unit = |m: &str| iotoll_model::ci::disk_mbit(m).filter(|_| mbit);
        let ci_of = |ci: usize, n: &str| infos.get(ci).and_then(|i| i.test(n)?.ci95.clone());
        let any_ci = names
            .iter()
            .any(|n| (0..configs.len()).any(|ci| ci_of(ci, n).is_some()));
        let mut head = vec!["test".to_string()];
        if many {
            head.push("configuration".into());
        }
        head.extend((cols.iter()).map(|m| in_unit(m).map_or(label(m), |(l, _)| l).to_string()));
        if any_ci {
            head.push("95 % CI (mean of reps)".into());
        }
        let mut rows = Vec::new();
        let mut any_interfered = false;
        for n in &names {
            for (ci, cfg) in configs.iter().enumerate() {
                let Some(t) = find(ci, n) else { continue };
                let sh = same_host(infos, ci, n);
                let warn = t.repeatable == Some(false);
                // Flagged as in the suite's table and the findings.
                let interfered = (infos.get(ci).and_then(|i| i.test(n)?.interfered)) == Some(true);
                any_interfered |= interfered;
                let flag = if interfered { " ⚑" } else { "" };
                let mut cells = vec![format!("{}{flag}", test_cell(n, warn))];
                if many {
                    cells.push(cfg.label.clone());
                }
                for m in &cols {
                    let v = t.metrics.get(*m).copied();
                    cells.push(metric_cell(
                        m,
                        in_unit(m).map_or(v, |(_, f)| v.map(|v| v * f)),
                        sh,
                    ));
                }
                if any_ci {
                    cells
                        .push(ci_of(ci, n).map_or("–".into(), |c| ci_cell(&c, in_unit(&c.metric))));
                }
                rows.push(TRow::plain(cells, many.then_some(ci), warn));
            }
        }
        let mut note = String::from(
            "Efficiency = throughput / whole-host CPU % of the same row; service demand = busy CPU-µs of the whole host per unit.",
        );
        if any_same_host {
            note.push_str(" (same host): the peer ran on this host, so its CPU is this host's and is not shown as a second machine's.");
        }
        if any_interfered {
            note.push_str(" ⚑: other processes used the CPU during the test (interference); its CPU figures include their work.");
        }
        if any_ci {
            note.push_str(" 95 % CI: the confidence interval of the mean of the selection metric over the test's repetitions (Student t, n − 1 degrees of freedom), given for 3 or more; the figure beside it is the selection (median repetition or mean).");
        }
        if mbit {
            note.push_str(" Disk throughput in Mbit/s as the suite asks (MB/s × 8, both decimal).");
        }
        out.push(Table {
            title: format!("{}: results", kind_title(kind)),
            head,
            rows,
            note: Some(note),
        });
    }
    out
}

/// Per test: every metric, one column per configuration.
pub fn every_metric(configs: &[ConfigData], infos: &[RunInfo]) -> Vec<Table> {
    first_tests(configs)
        .iter()
        .map(|t| {
            let n = &t.name;
            let per: Vec<Option<&TestData>> = configs
                .iter()
                .map(|c| c.tests.iter().find(|t| &t.name == n))
                .collect();
            let keys: BTreeSet<&String> = per
                .iter()
                .flatten()
                .flat_map(|t| t.metrics.keys())
                .collect();
            let mut head = vec!["metric".to_string()];
            head.extend(configs.iter().map(|c| c.label.clone()));
            let mut hidden = false;
            let rows = keys
                .iter()
                .filter(|k| {
                    let hide = remote_cpu_metric(k)
                        && (0..configs.len())
                            .all(|ci| per[ci].is_none() || same_host(infos, ci, n));
                    hidden |= hide;
                    !hide
                })
                .map(|k| {
                    let mut cells = vec![format!("{} ({k})", label(k))];
                    for (ci, t) in per.iter().enumerate() {
                        let v = t.and_then(|t| t.metrics.get(*k).copied());
                        cells.push(metric_cell(k, v, same_host(infos, ci, n)));
                    }
                    TRow::plain(cells, None, false)
                })
                .collect();
            Table {
                title: n.clone(),
                head,
                rows,
                note: hidden.then(|| {
                    "The peer ran on this host: its CPU figures are this host's and are left out."
                        .into()
                }),
            }
        })
        .collect()
}

/// The main metric of every test side by side: each configuration's value
/// and CPU %, the differences against the baseline, and the workload
/// parameters in which the paired tests differ.
pub fn comparison(c: &Comparison) -> Table {
    let many = c.configs.len() > 1;
    let any_differs = c.rows.iter().any(|r| !r.differs.is_empty());
    let mut head = vec!["test".to_string(), "group".into(), "metric".into()];
    for l in &c.configs {
        head.push(l.clone());
        head.push(if many {
            format!("CPU % {l}")
        } else {
            "CPU %".into()
        });
    }
    for l in c.configs.iter().skip(1) {
        head.push(format!("Δ {l}"));
    }
    if any_differs {
        head.push("workload differs".into());
    }
    let rows = c
        .rows
        .iter()
        .map(|r| {
            let mut cells = vec![
                test_cell(&r.test, r.not_repeatable),
                r.group.clone(),
                label(&r.metric).to_string(),
            ];
            let mut cell_diff = vec![false; 3];
            for (i, v) in r.values.iter().enumerate() {
                let interfered = r.interfered.get(i).copied().unwrap_or(false);
                cells.push(format!("{}{}", num(*v), if interfered { " ⚑" } else { "" }));
                cells.push(format!(
                    "{}{}",
                    cpu_cell(r.cpu_pct[i]),
                    if r.acceptable[i] == Some(false) {
                        " ✗"
                    } else {
                        ""
                    }
                ));
                cell_diff.extend([false, false]);
            }
            for d in &r.diff_pct {
                cells.push(pct(*d));
                cell_diff.push(false);
            }
            if any_differs {
                cells.push(r.differs.join(", "));
                cell_diff.push(!r.differs.is_empty());
            }
            TRow {
                cells,
                cell_diff,
                config: None,
                warn: r.not_repeatable,
                total: false,
            }
        })
        .collect();
    let mut notes = Vec::new();
    if let Some(th) = c.cpu_threshold_pct {
        notes.push(format!(
            "✗: CPU above the {} % threshold.",
            crate::fmt::tick(th)
        ));
    }
    if c.rows.iter().any(|r| r.interfered.iter().any(|i| *i)) {
        notes.push("⚑: other processes used the CPU during this configuration's test (interference); its CPU figures include their work.".into());
    }
    if any_differs {
        notes.push("Workload differs (highlighted): the paired tests did not run the same parameters, so their difference is not the configurations' alone.".into());
    }
    Table {
        title: "Main metric by test".into(),
        head,
        rows,
        note: (!notes.is_empty()).then(|| notes.join(" ")),
    }
}

/// Per result kind: each configuration's mean efficiency over the tests of
/// that kind every configuration has, and its ratio to the baseline.
pub fn efficiency(c: &Comparison, configs: &[ConfigData]) -> Vec<Table> {
    distinct(c.efficiency.iter().map(|e| (e.kind, e.class.clone())))
        .into_iter()
        .filter_map(|(kind, class)| {
            let of: Vec<&crate::compare::Efficiency> = c
                .efficiency
                .iter()
                .filter(|e| e.kind == kind && e.class == class)
                .collect();
            let metrics: Vec<&str> = kind
                .efficiency()
                .filter(|m| of.iter().any(|e| e.means.contains_key(*m)) || remote_cpu_metric(m) && of.iter().any(|e| same_host_label(configs, &e.label)))
                .collect();
            if metrics.is_empty() {
                return None;
            }
            let many = of.len() > 1;
            let mut head = vec!["configuration".to_string(), "tests".into()];
            for m in &metrics {
                head.push(label(m).to_string());
                if many {
                    head.push(format!("× {}", of[0].label));
                }
            }
            let rows = of
                .iter()
                .enumerate()
                .map(|(ci, e)| {
                    let sh = same_host_label(configs, &e.label);
                    let mut cells = vec![e.label.clone(), e.tests.to_string()];
                    for m in &metrics {
                        let v = e.means.get(*m).copied();
                        let b = of[0].means.get(*m).copied();
                        let hide = remote_cpu_metric(m)
                            && (sh || same_host_label(configs, &of[0].label));
                        cells.push(if sh && remote_cpu_metric(m) {
                            "(same host)".into()
                        } else {
                            num(v)
                        });
                        if many {
                            cells.push(match (v, b) {
                                (Some(v), Some(b)) if b > 0.0 && ci > 0 && !hide => {
                                    format!("{:.2} ×", v / b)
                                }
                                _ => "–".into(),
                            });
                        }
                    }
                    TRow::plain(cells, many.then_some(ci), false)
                })
                .collect();
            Some(Table {
                // Like tests only: one mean over 4k and 1m tests says little.
                title: match class.as_str() {
                    "" => format!("{}: efficiency", kind_title(kind)),
                    cl => format!("{}, {cl} transfers: efficiency", kind_title(kind)),
                },
                head,
                rows,
                note: Some(format!("Mean of the per-test values over the tests of this kind and transfer-size class that every configuration has ({}). Higher is better for “per % CPU”, lower for CPU µs.", of[0].names.join(", "))),
            })
        })
        .collect()
}

fn same_host_label(configs: &[ConfigData], label: &str) -> bool {
    configs.iter().any(|c| c.label == label && c.same_host_peer)
}

/// The table as HTML; `class` names it for the DOM.
pub fn to_html(t: &Table, class: &str) -> String {
    // The configuration's colour goes beside its name.
    let swatch_col = t
        .head
        .iter()
        .position(|h| h == "configuration")
        .unwrap_or(usize::MAX);
    let mut o = format!("<table class=\"{class}\"><thead><tr>");
    for h in &t.head {
        o.push_str(&format!("<th>{}</th>", esc(h)));
    }
    o.push_str("</tr></thead><tbody>\n");
    for r in &t.rows {
        o.push_str(if r.total {
            "<tr class=\"total\">"
        } else {
            "<tr>"
        });
        for (j, c) in r.cells.iter().enumerate() {
            let attr = match (r.cell_diff.get(j) == Some(&true), j == 0 && r.warn) {
                (false, false) => "",
                (true, false) => " class=\"diff\"",
                (false, true) => " class=\"warn\"",
                (true, true) => " class=\"diff warn\"",
            };
            let swatch = match (j, r.config) {
                (j, Some(ci)) if j == swatch_col => format!(
                    "<span class=\"sw\" style=\"background:{}\"></span>",
                    crate::charts::css_color(ci)
                ),
                _ => String::new(),
            };
            o.push_str(&format!("<td{attr}>{swatch}{}</td>", esc(c)));
        }
        o.push_str("</tr>\n");
    }
    o.push_str("</tbody></table>\n");
    if let Some(n) = &t.note {
        o.push_str(&format!("<p class=\"note\">{}</p>\n", esc(n)));
    }
    o
}

/// The table as Markdown; differing cells in bold.
pub fn to_md(t: &Table) -> String {
    let mut o = format!(
        "| {} |\n",
        t.head.iter().map(|h| md(h)).collect::<Vec<_>>().join(" | ")
    );
    o.push('|');
    for (i, _) in t.head.iter().enumerate() {
        o.push_str(if i == 0 { "---|" } else { "---:|" });
    }
    o.push('\n');
    for r in &t.rows {
        let cells: Vec<String> = r
            .cells
            .iter()
            .enumerate()
            .map(|(j, c)| {
                if r.cell_diff.get(j).copied().unwrap_or(false) {
                    format!("**{}**", md(c))
                } else {
                    md(c)
                }
            })
            .collect();
        o.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    if let Some(n) = &t.note {
        o.push_str(&format!("\n{}\n", md(n)));
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::test_data::{cfg, test as t};
    use crate::info::TestInfo;

    fn info(name: &str, spec: Value, same_host: Option<bool>) -> RunInfo {
        RunInfo {
            tests: vec![TestInfo {
                name: name.into(),
                spec: spec.into(),
                same_host,
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[test]
    fn parameters_show_sizes_and_mark_differences() {
        let a = cfg("A", vec![t("x", "disk", &[])]);
        let b = cfg("B", vec![t("x", "disk", &[])]);
        let sa = serde_json::json!({"bs": 4096, "qd": 8, "ramp_s": 1.0, "time_s": 5.0, "target": "/tmp/f", "engine": "io_uring", "odd": 3});
        let mut sb = sa.clone();
        sb["engine"] = "psync".into();
        let p = parameters(&[a, b], &[info("x", sa, None), info("x", sb, None)]);
        let tab = &p[0];
        let col = |h: &str| tab.head.iter().position(|x| x == h);
        // Only the differing engine keeps a column; the rest is said once.
        assert_eq!(tab.head, vec!["test", "configuration", "engine"]);
        let e = col("engine").unwrap();
        assert!(tab.rows[0].cell_diff[e] && tab.rows[1].cell_diff[e]);
        assert_eq!(
            (tab.rows[0].cells[e].as_str(), tab.rows[1].cells[e].as_str()),
            ("io_uring", "psync")
        );
        let note = tab.note.clone().unwrap();
        for want in ["block size 4k", "QD 8", "ramp (s) 1", "time (s) 5", "odd=3"] {
            assert!(note.contains(want), "{want} in {note}");
        }
        assert!(to_md(tab).contains("**psync**"));
    }

    /// A mixed spec on two targets: its `mix` and target count get columns;
    /// the `lines` and `targets` lists behind them are not dumped as JSON.
    #[test]
    fn a_mixed_spec_on_targets_shows_its_mix_not_its_lists() {
        let a = cfg("A", vec![t("x", "disk", &[])]);
        let b = cfg("B", vec![t("x", "disk", &[])]);
        let sa = serde_json::json!({"spec": "iometer-file-server", "mix": "iometer-file-server",
            "ntargets": 2, "qd": 4, "engine": "io_uring", "target": "/tmp/a",
            "lines": [{"share_pct": 100, "bs": 512}], "targets": [{"path": "/tmp/a"}, {"path": "/tmp/b"}]});
        let mut sb = sa.clone();
        (sb["mix"], sb["ntargets"]) = ("60%4kr80x100+40%64kr80x100".into(), 4.into());
        let p = parameters(&[a, b], &[info("x", sa, None), info("x", sb, None)]);
        let tab = &p[0];
        assert!(
            tab.head.iter().any(|h| h == "mix") && tab.head.iter().any(|h| h == "targets"),
            "{:?}",
            tab.head
        );
        let all = format!("{:?} {:?}", tab.rows, tab.note);
        assert!(
            !all.contains("share_pct") && !all.contains("\"path\""),
            "{all}"
        );
    }

    #[test]
    fn same_host_remote_cpu_is_not_a_second_machine() {
        let m = [
            ("mbit_s", 1000.0),
            ("cpu_pct", 50.0),
            ("remote_cpu_pct", 50.0),
            ("mbit_s_per_cpu_pct", 20.0),
        ];
        let a = [cfg("A", vec![t("s", "net-stream", &m)])];
        let same_host = |yes: bool| [info("s", Value::Null, Some(yes))];
        let tabs = metrics(&a, &same_host(true));
        let head = &tabs[0].head;
        assert!(!head.iter().any(|h| h.contains("remote")), "{head:?}");
        let all = every_metric(&a, &same_host(true));
        assert!(!all[0].rows.iter().any(|r| r.cells[0].contains("remote")));
        // A real second machine keeps its column.
        let tabs = metrics(&a, &same_host(false));
        assert!(tabs[0].head.iter().any(|h| h == "remote CPU %"));
        // Efficiency beside the CPU it is computed from: 1000 / 50.00 = 20.0.
        let r = &tabs[0].rows[0].cells;
        let col = |h: &str| tabs[0].head.iter().position(|x| x == h).unwrap();
        assert_eq!(r[col("CPU %")], "50.00");
        assert_eq!(r[col("Mbit/s per % CPU")], "20.0");
    }
}

/// issue 23 §6: the figures the studies publish (a 95 % CI beside every
/// figure with 3+ repetitions, disk Mbit/s where the suite asks, and each
/// adapter of a multi-homed host).
#[cfg(test)]
mod published {
    use super::*;
    use crate::fixtures::{doc, multi_host_run, multi_stream_doc, render, run};
    use serde_json::json;

    fn disk(iops: f64, mb_s: f64) -> iotoll_model::ResultDoc {
        let mut d = doc(
            "disk",
            json!({"bs": 32768}),
            json!({"iops": iops, "mb_s": mb_s, "cpu_pct": 10.0, "cpus": 4.0, "window_s": 10.0}),
        );
        iotoll_model::derive_metrics(&mut d.metrics);
        d
    }

    /// A run whose test `read` has three repetitions (100, 110, 120 MB/s),
    /// the median selected.
    fn three_reps(unit: Option<&str>) -> iotoll_store::RunDetail {
        let mut r = run(1, "base", vec![("read", disk(3051.8, 100.0))]);
        let t = &mut r.tests[0];
        t.select = "median:mb_s".into();
        for (rep, mb) in [(2, 110.0), (3, 120.0)] {
            t.reps.push(iotoll_store::RepRow {
                rep,
                status: iotoll_model::ResultStatus::Complete,
                doc: disk(mb / 0.032768, mb),
            });
        }
        t.selected_rep = Some(2);
        t.summary = Some(t.reps[1].doc.metrics.clone());
        if let Some(u) = unit {
            t.params = json!({ "unit": u });
        }
        t.ci95 = t.compute_ci95();
        r
    }

    fn results_table(r: &iotoll_store::RunDetail) -> Table {
        let (cfg, info) = crate::load(r);
        metrics(&[cfg], &[info]).remove(0)
    }

    fn cell<'a>(t: &'a Table, head: &str) -> &'a str {
        let i = (t.head.iter().position(|h| h == head)).unwrap_or_else(|| panic!("{:?}", t.head));
        &t.rows[0].cells[i]
    }

    #[test]
    fn the_results_table_gives_the_confidence_interval() {
        let t = results_table(&three_reps(None));
        let c = iotoll_model::Ci95::of("mb_s", [100.0, 110.0, 120.0]).unwrap();
        // 110 ± 4.303 × 10 / √3 = 110 ± 24.84.
        assert!((c.half_width - 4.303 * 10.0 / 3f64.sqrt()).abs() < 1e-9);
        let want = format!(
            "MB/s {} – {} (± 22.6 %)",
            num(Some(c.low)),
            num(Some(c.high))
        );
        assert_eq!(cell(&t, "95 % CI (mean of reps)"), want);
        assert!(t.note.as_deref().unwrap_or("").contains("Student t"));
        // One repetition: no column at all (not a column of dashes).
        let one = results_table(&run(1, "base", vec![("read", disk(3051.8, 100.0))]));
        assert!(!one.head.iter().any(|h| h.contains("CI")), "{:?}", one.head);
    }

    /// A test interfered in one of its repetitions is flagged in the
    /// results table as in the suite's table and the findings (the HTML
    /// results tables had no ⚑).
    #[test]
    fn an_interfered_test_is_flagged_in_the_results_table() {
        let mut r = three_reps(None);
        assert!(!cell(&results_table(&r), "test").contains('⚑'));
        r.tests[0].reps[2].doc.cpu.local = Some(iotoll_model::CpuReport {
            cpus: 2,
            busy_pct: 60.0,
            interference: Some(iotoll_model::result::Interference {
                threshold_pct: 5.0,
                others_pct: 40.0,
                interfered: true,
                ..Default::default()
            }),
            ..Default::default()
        });
        let t = results_table(&r);
        assert_eq!(cell(&t, "test"), "read ⚑");
        assert!(t
            .note
            .as_deref()
            .unwrap_or("")
            .contains("⚑: other processes"));
    }

    #[test]
    fn disk_throughput_in_mbit_s_where_the_suite_asks() {
        let t = results_table(&three_reps(Some("mbit_s")));
        assert_eq!(cell(&t, "Mbit/s"), "880", "110 MB/s x 8");
        assert!(!t.head.iter().any(|h| h == "MB/s"), "{:?}", t.head);
        // 110 MB/s / 10 % = 11 MB/s per % = 88 Mbit/s per %.
        assert_eq!(cell(&t, "Mbit/s per % CPU"), "88.0");
        assert!(cell(&t, "95 % CI (mean of reps)").starts_with("Mbit/s 681"));
        let plain = results_table(&three_reps(None));
        assert_eq!(cell(&plain, "MB/s"), "110");
    }

    /// Study 001's server with 4 adapters: each adapter's rates from its
    /// counters, adding up to the host's wire total, which holds the
    /// payload and its headers.
    #[test]
    fn a_multi_homed_server_has_its_adapters() {
        let mut d = multi_stream_doc(&["c1", "c2", "c3", "c4"], &["srv"], 1.0);
        let window = d.metrics["window_s"];
        let payload_mbit = d.hosts[0].metrics["mbit_s"];
        // Each adapter carries one client's pair: payload plus 66 bytes of
        // headers per 1448-byte segment each way, as counters count it.
        let seg = |bytes: u64| bytes.div_ceil(1448);
        let ifaces: Vec<iotoll_model::IfaceFigures> = (d.pairs.iter().enumerate())
            .map(|(n, p)| iotoll_model::IfaceFigures {
                name: format!("eth{n}"),
                rx_bytes: p.client_to_server_bytes + 66 * seg(p.client_to_server_bytes),
                rx_packets: seg(p.client_to_server_bytes),
                tx_bytes: p.server_to_client_bytes + 66 * seg(p.server_to_client_bytes),
                tx_packets: seg(p.server_to_client_bytes),
                ..Default::default()
            })
            .collect();
        // An older document: counters only (the rates come from the window).
        d.hosts[0].ifaces = ifaces.clone();
        let r = multi_host_run(1, "base", d);
        let (cfg, _) = crate::load(&r);
        let mh = cfg.tests.iter().find_map(|t| t.multi.as_ref()).unwrap();
        let t = adapter_table("mesh", mh, None).unwrap();
        assert_eq!(t.rows.len(), 5, "4 adapters and the host's line");
        let f = |s: &str| s.replace(',', "").parse::<f64>().unwrap();
        let each: f64 = t.rows[..4].iter().map(|r| f(&r.cells[4])).sum();
        let all = f(&t.rows[4].cells[4]);
        let wire: f64 = ifaces
            .iter()
            .map(|i| (i.rx_bytes + i.tx_bytes) as f64)
            .sum::<f64>()
            * 8.0
            / window
            / 1e6;
        // Shown rounded to 3 significant digits: within half a unit each.
        assert!((all - wire).abs() <= 0.5, "{all} vs {wire}");
        assert!((each - wire).abs() <= 4.0 * 0.5, "{each} vs {wire}");
        // Headers ride on the payload: never less than it, and at most the
        // headers every counted packet can have (66 bytes each).
        let packets: u64 = ifaces.iter().map(|i| i.rx_packets + i.tx_packets).sum();
        let headers = packets as f64 * 66.0 * 8.0 / window / 1e6;
        assert!(wire >= payload_mbit && wire - payload_mbit <= headers + 1e-6);
        // Shares add up to 100 %.
        let shares: f64 = t.rows[..4].iter().map(|r| f(&r.cells[5])).sum();
        assert!((shares - 100.0).abs() <= 4.0 * 0.05, "{shares}");
        // And the report shows it.
        let (md, html) = render(&[r]);
        assert!(md.contains("mesh: per adapter") && html.contains("mesh: per adapter"));
    }
}
