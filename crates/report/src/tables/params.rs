//! The parameters table: every test's parameters as run, per kind, one
//! row per configuration where they differ, what all rows share said once.

use super::{kind_title, kinds, test_names, TRow, Table};
use crate::compare::{distinct, ConfigData};
use crate::fmt::size;
use crate::info::RunInfo;
use iotoll_model::Kind;
use serde_json::Value;

/// The parameters worth a column, in order, per kind; the rest go into
/// "other".
fn param_columns(kind: Kind) -> Vec<(&'static str, &'static str)> {
    /// What every network test has, after its own.
    const NET: &[(&str, &str)] = &[
        ("sockbuf", "socket buffer"),
        ("nodelay", "nodelay"),
        ("threads", "threads"),
        ("ramp_s", "ramp (s)"),
        ("time_s", "time (s)"),
        ("peer", "peer"),
    ];
    let (own, shared): (&[_], &[_]) = match kind {
        Kind::Disk => (
            &[
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
            &[],
        ),
        Kind::NetStream => (
            &[
                ("dir", "direction"),
                ("conns", "connections"),
                ("msg", "message"),
            ],
            NET,
        ),
        Kind::NetUdp => (
            &[
                ("dir", "direction"),
                ("conns", "flows"),
                ("size", "datagram"),
                ("rate", "rate (bit/s)"),
            ],
            NET,
        ),
        Kind::NetRr => (
            &[
                ("conns", "connections"),
                ("req", "request"),
                ("resp", "response"),
                ("burst", "burst"),
            ],
            NET,
        ),
        Kind::NetCrr => (
            &[
                ("conns", "clients"),
                ("req", "request"),
                ("resp", "response"),
                ("linger0", "linger0"),
            ],
            NET,
        ),
        Kind::NetCc => (&[("conns", "clients"), ("linger0", "linger0")], NET),
    };
    // No Nagle for datagrams.
    let nagle = |c: &(&str, &str)| kind != Kind::NetUdp || c.0 != "nodelay";
    own.iter().chain(shared).copied().filter(nagle).collect()
}

/// Keys left out of "other": internal or repeated elsewhere (a spec's
/// `lines` are its bs/read/random or its `mix`; `targets` are `target`
/// and `ntargets`; `nodelay` is a column where it means something, and every
/// network spec states it, UDP's too).
const HIDDEN: &[&str] = &[
    "nodelay",
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
        // A UDP test without --rate sent as fast as it could.
        Value::Null if key == "rate" => "unlimited".into(),
        Value::Null => "–".into(),
        Value::Number(n) if key == "rate" => (n.as_u64())
            .map(iotoll_model::format_rate)
            .unwrap_or_else(|| n.to_string()),
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

/// Per kind: every test's parameters as run (one row per configuration
/// when there are several, differing cells marked).
pub fn parameters(configs: &[ConfigData], infos: &[RunInfo]) -> Vec<Table> {
    (kinds(configs).into_iter())
        .map(|kind| kind_parameters(configs, infos, kind))
        .collect()
}

/// A test's spec in configuration `ci`: as its run recorded it, else the
/// parameters the configuration gives (an import).
fn spec_of(configs: &[ConfigData], infos: &[RunInfo], ci: usize, name: &str) -> Value {
    (infos.get(ci).and_then(|i| i.test(name)))
        .map(|t| t.spec.to_value())
        .filter(|s| s.is_object())
        .or_else(|| {
            (configs[ci].tests.iter())
                .find(|t| t.name == name)
                .map(|t| t.params.clone())
        })
        .unwrap_or(Value::Null)
}

fn kind_parameters(configs: &[ConfigData], infos: &[RunInfo], kind: Kind) -> Table {
    let many = configs.len() > 1;
    let cols = param_columns(kind);
    let names = test_names(configs, kind);
    let spec = |ci: usize, name: &str| spec_of(configs, infos, ci, name);
    // Only columns some test has; "other" for the rest.
    let specs: Vec<Value> = (names.iter())
        .flat_map(|n| (0..configs.len()).map(move |ci| (ci, n)))
        .map(|(ci, n)| spec(ci, n))
        .collect();
    let used: Vec<&(&str, &str)> = (cols.iter())
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
            .filter(|ci| configs[*ci].test(name).is_some())
            .map(|ci| (ci, cells(&spec(ci, name), &used, &cols)))
            .collect();
        rows.extend(test_rows(configs, name, &per, &used));
    }
    let mut common = Vec::new();
    if rows.len() > 1 {
        common = said_once(&mut head, &mut rows, if many { 2 } else { 1 });
    }
    // No "other" column when nothing is in it.
    if (rows.iter()).all(|r| r.cells.last().is_some_and(|c| c.is_empty())) {
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
    Table {
        title: format!("{}: parameters", kind_title(kind)),
        head,
        rows,
        note: (!note.is_empty()).then(|| note.join(" ")),
    }
}

/// A spec's cells: the used columns, then "other" (the rest of its keys).
fn cells(s: &Value, used: &[&(&str, &str)], cols: &[(&str, &str)]) -> Vec<String> {
    let mut cells: Vec<String> = (used.iter())
        .map(|(k, _)| s.get(*k).map(|v| show(k, v)).unwrap_or_else(|| "–".into()))
        .collect();
    let other: Vec<String> = (s.as_object().into_iter().flatten())
        .filter(|(k, v)| {
            // The depth asked of all workers says something only where it
            // is not the QD column's (several workers, or psync).
            let repeats_qd = k.as_str() == "qd_requested" && s.get("qd") == Some(*v);
            !cols.iter().any(|c| c.0 == k.as_str())
                && !HIDDEN.contains(&k.as_str())
                && !v.is_null()
                && v.as_array().is_none_or(|a| !a.is_empty())
                && !repeats_qd
        })
        .map(|(k, v)| format!("{k}={}", show(k, v)))
        .collect();
    cells.push(other.join(", "));
    cells
}

/// A test's rows: one per configuration (`per`: its index and cells),
/// or one "all" row when every configuration ran it alike.
fn test_rows(
    configs: &[ConfigData],
    name: &str,
    per: &[(usize, Vec<String>)],
    used: &[&(&str, &str)],
) -> Vec<TRow> {
    let many = configs.len() > 1;
    let differs = |j: usize| {
        let k = used.get(j).map_or("other", |c| c.0);
        (per.iter()).any(|(_, o)| same_key(k, &o[j]) != same_key(k, &per[0].1[j]))
    };
    let cell_diff: Vec<bool> = (0..per.first().map_or(0, |p| p.1.len()))
        .map(differs)
        .collect();
    // Configurations that ran the test alike share one row.
    let alike = per.len() == configs.len() && !cell_diff.iter().any(|d| *d);
    let mut rows = Vec::new();
    for (ci, cells) in per.iter().take(if alike { 1 } else { per.len() }) {
        let mut lead = vec![name.to_string()];
        if many {
            lead.push(match alike {
                true => "all".into(),
                false => configs[*ci].label.clone(),
            });
        }
        let mut row = TRow::plain(lead, (many && !alike).then_some(*ci), false);
        if alike {
            // Values that do not count as a difference (an endpoint's
            // address, a temporary file) are still each shown.
            let all =
                (0..cells.len()).map(|j| distinct(per.iter().map(|p| p.1[j].clone())).join(" / "));
            row.cells.extend(all);
        } else {
            row.cells.extend(cells.iter().cloned());
        }
        row.cell_diff.extend(cell_diff.iter().copied());
        rows.push(row);
    }
    rows
}

/// What every row shares, taken out of the table to be said once under
/// it: the items of "other" and the columns (from `first`) with one value
/// throughout.
fn said_once(head: &mut Vec<String>, rows: &mut [TRow], first: usize) -> Vec<String> {
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
    for r in rows.iter_mut() {
        let rest: Vec<String> = (other_items(r).into_iter())
            .filter(|x| !shared.contains(x))
            .collect();
        if let Some(c) = r.cells.last_mut() {
            *c = rest.join(", ");
        }
    }
    let n = head.len() - 1;
    let constant: Vec<usize> = (first..n)
        .filter(|j| (rows.iter()).all(|r| r.cells[*j] == rows[0].cells[*j] && !r.cell_diff[*j]))
        .collect();
    let mut common: Vec<String> = (constant.iter())
        .map(|j| format!("{} {}", head[*j], rows[0].cells[*j]))
        .collect();
    common.extend(shared);
    for j in constant.iter().rev() {
        head.remove(*j);
        for r in rows.iter_mut() {
            r.cells.remove(*j);
            r.cell_diff.remove(*j);
        }
    }
    common
}
