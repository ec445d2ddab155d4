//! Exports of a stored run: long CSV, JSON, and Iometer 1.1.0's
//! results.csv layout for disk results (so existing spreadsheets keep
//! working). A value that was not measured is an empty cell, never 0.

use crate::{RunDetail, TestRow};
use iotoll_model::metrics::{self as mn, metric_def};
use iotoll_model::{Metrics, ResultDoc};

/// A CSV writer into memory, quoting fields where RFC 4180 needs it; rows
/// may differ in length (Iometer's header block). Writing to memory cannot
/// fail, so its results are not checked.
fn writer() -> csv::Writer<Vec<u8>> {
    csv::WriterBuilder::new()
        .flexible(true)
        .from_writer(Vec::new())
}

/// A cell as it is safe to write: text that a spreadsheet would take for
/// a formula (it begins with `=`, `+`, `-`, `@`, a tab or a carriage
/// return: OWASP's CSV injection rule) gets a leading `'`. A cell that is
/// a plain number (`-5`, `-1.5e-3`: digits, sign, point and exponent
/// only) is left as it is: a number is data, never a formula, and a
/// quote would turn a negative figure into text. Every CSV row the
/// project writes goes through [`row`], so through this.
pub fn csv_cell(s: &str) -> std::borrow::Cow<'_, str> {
    let risky = s.starts_with(['=', '+', '-', '@', '\t', '\r']);
    if risky && !is_plain_number(s) {
        std::borrow::Cow::Owned(format!("'{s}"))
    } else {
        std::borrow::Cow::Borrowed(s)
    }
}

fn is_plain_number(s: &str) -> bool {
    s.bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'+' | b'-' | b'.' | b'e' | b'E'))
        && s.bytes().any(|b| b.is_ascii_digit())
        && s.parse::<f64>().is_ok_and(f64::is_finite)
}

/// Writes one row, every cell through [`csv_cell`].
fn row(w: &mut csv::Writer<Vec<u8>>, cells: impl IntoIterator<Item = impl AsRef<str>>) {
    let _ = w.write_record(cells.into_iter().map(|c| csv_cell(c.as_ref()).into_owned()));
}

fn text(w: csv::Writer<Vec<u8>>) -> String {
    // Only UTF-8 text went in.
    String::from_utf8_lossy(&w.into_inner().unwrap_or_default()).into_owned()
}

fn num(v: f64) -> String {
    // Shortest representation that reads back to the same value.
    format!("{v}")
}

/// The metrics a test is judged by: its selected repetition's, or the means.
pub fn selected_metrics(t: &TestRow) -> Option<&Metrics> {
    t.summary.as_ref().or_else(|| {
        t.reps
            .iter()
            .find(|r| Some(r.rep) == t.selected_rep)
            .map(|r| &r.doc.metrics)
    })
}

/// The long CSV's columns: `level` says what a row is a part of (`total`,
/// `host`, `pair`, `adapter`, `target`, `worker`) and `part` names it.
pub const CSV_HEAD: &str = "run,config,test,group,rep,selected,metric,value,unit,level,part";

/// The parts of one repetition's document, each as (level, part, metrics):
/// the totals first, then its hosts, pairs and adapters (multi-host tests),
/// targets and workers (disk runs). Each level's rows add up to the totals
/// as the document's do.
fn levels(doc: &ResultDoc) -> Vec<(&'static str, String, Metrics)> {
    let mut out = vec![("total", String::new(), doc.metrics.clone())];
    for h in &doc.hosts {
        out.push(("host", h.name.clone(), h.metrics.clone()));
    }
    for p in &doc.pairs {
        let m = mn::of(&[
            (mn::CONNS, p.conns as f64),
            (mn::MBIT_S, p.mbit_s),
            ("client_to_server_bytes", p.client_to_server_bytes as f64),
            ("server_to_client_bytes", p.server_to_client_bytes as f64),
        ]);
        out.push(("pair", format!("{}->{}", p.client, p.server), m));
    }
    for h in &doc.hosts {
        for i in &h.ifaces {
            let mut m = mn::of(&[
                ("rx_bytes", i.rx_bytes as f64),
                ("tx_bytes", i.tx_bytes as f64),
                ("rx_packets", i.rx_packets as f64),
                ("tx_packets", i.tx_packets as f64),
            ]);
            for (k, v) in [(mn::RX_MBIT_S, i.rx_mbit_s), (mn::TX_MBIT_S, i.tx_mbit_s)] {
                m.extend(v.map(|v| (k.to_string(), v)));
            }
            out.push(("adapter", format!("{}/{}", h.name, i.name), m));
        }
    }
    for t in &doc.targets {
        out.push(("target", t.target.clone(), t.metrics.clone()));
    }
    for w in &doc.workers {
        out.push(("worker", w.id.to_string(), w.metrics.clone()));
    }
    out
}

/// Long format: one row per repetition, part and metric (`level` and
/// `part`: the totals, then each host, pair, adapter, target and worker),
/// plus the means of a `mean` selection as rep `mean`, and the 95 %
/// confidence interval of the selection metric (3 or more repetitions) as
/// reps `ci95_low` and `ci95_high`.
pub fn csv(run: &RunDetail) -> String {
    let mut w = writer();
    row(&mut w, CSV_HEAD.split(','));
    let id = run.run.id.to_string();
    let config = run.run.config.as_deref().unwrap_or("");
    for t in &run.tests {
        let group = t.group.as_deref().unwrap_or("");
        let mut emit = |rep: &str, selected: bool, level: &str, part: &str, m: &Metrics| {
            for (k, v) in m {
                let unit = metric_def(k).map(|d| d.unit).unwrap_or(match k.as_str() {
                    "rx_bytes"
                    | "tx_bytes"
                    | "client_to_server_bytes"
                    | "server_to_client_bytes" => "bytes",
                    _ => "count",
                });
                let sel = selected.to_string();
                let r: [&str; 11] = [
                    &id,
                    config,
                    &t.name,
                    group,
                    rep,
                    &sel,
                    k,
                    &num(*v),
                    unit,
                    level,
                    part,
                ];
                row(&mut w, r);
            }
        };
        let all = t.select == "all";
        for r in &t.reps {
            let sel = all || Some(r.rep) == t.selected_rep;
            for (level, part, m) in levels(&r.doc) {
                emit(&r.rep.to_string(), sel, level, &part, &m);
            }
        }
        if t.select == "mean" {
            if let Some(m) = &t.summary {
                emit("mean", true, "total", "", m);
            }
        }
        if let Some(c) = &t.ci95 {
            for (rep, v) in [("ci95_low", c.low), ("ci95_high", c.high)] {
                let m: Metrics = [(c.metric.clone(), v)].into_iter().collect();
                emit(rep, false, "total", "", &m);
            }
        }
    }
    text(w)
}

pub fn json(run: &RunDetail) -> Result<String, serde_json::Error> {
    serde_json::to_string_pretty(run).map(|s| s + "\n")
}

mod iometer;
#[cfg(test)]
mod tests;

pub use iometer::{iometer_csv, IometerEmpty, IometerExport, IOMETER_COLUMNS};
