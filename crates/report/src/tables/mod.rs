//! The report's tables, built once and rendered as HTML, Markdown or text
//! (`render`): the parameters of every test (`params`), its key metrics by
//! kind, every metric of every test side by side, the main metric by test
//! and efficiency (`results`).

use crate::compare::{distinct, ConfigData};
use crate::fmt::{count, num};
use crate::info::RunInfo;
use iotoll_model::metrics::{self as mn, label};
use iotoll_model::Kind;

mod params;
mod render;
mod results;
#[cfg(test)]
mod tests;

pub use params::parameters;
pub use render::{to_html, to_md, to_text};
pub use results::{adapter_table, comparison, efficiency, every_metric, metrics};

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
    /// A plain row: no cell marked, no configuration, no warning.
    pub(crate) fn new(cells: Vec<String>) -> TRow {
        TRow::plain(cells, None, false)
    }

    /// A row with no cell marked as differing.
    pub(crate) fn plain(cells: Vec<String>, config: Option<usize>, warn: bool) -> TRow {
        TRow {
            cell_diff: vec![false; cells.len()],
            cells,
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

impl Table {
    /// A table with a title and head, to be filled with rows.
    pub(crate) fn new(title: &str, head: &[&str]) -> Table {
        Table {
            title: title.into(),
            head: head.iter().map(|h| h.to_string()).collect(),
            ..Default::default()
        }
    }
}

/// "Disk tests", "Network stream tests": the kind's noun.
pub(crate) fn kind_title(kind: Kind) -> String {
    match kind {
        Kind::Disk => "Disk tests".into(),
        net => format!("Network {} tests", net.noun()),
    }
}

pub(crate) fn kinds(configs: &[ConfigData]) -> Vec<Kind> {
    distinct(configs.iter().flat_map(|c| c.tests.iter().map(|t| t.kind)))
}

/// Test names in order: the first configuration's, then the others'.
pub(crate) fn test_names(configs: &[ConfigData], kind: Kind) -> Vec<String> {
    distinct(configs.iter().flat_map(|c| {
        c.tests
            .iter()
            .filter(|t| t.kind == kind)
            .map(|t| t.name.clone())
    }))
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
pub(crate) fn test_cell(name: &str, not_repeatable: bool) -> String {
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
    } else if m.ends_with("_pct") && m.contains("cpu") && !m.contains("_per_") {
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
    let (name, f) = unit.unwrap_or((label(&c.metric), 1.0));
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

pub(crate) fn same_host(infos: &[RunInfo], ci: usize, test: &str) -> bool {
    infos
        .get(ci)
        .and_then(|i| i.test(test))
        .is_some_and(|t| t.same_host == Some(true))
}

pub(crate) fn same_host_label(configs: &[ConfigData], label: &str) -> bool {
    configs.iter().any(|c| c.label == label && c.same_host_peer)
}
