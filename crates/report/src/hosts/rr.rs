//! Request/response across hosts: each endpoint pair's transactions/s and
//! round trips, as its client measured them, and the test's, whose
//! percentiles are those of every pair's transactions (the histograms
//! merged), never a mean of the pairs' percentiles.

use super::total_row;
use crate::fmt::num;
use crate::tables::{TRow, Table};
use iotoll_model::metrics as mn;
use iotoll_model::text::printable;
use iotoll_model::{Metrics, PairFigures};

/// The figures of each row, after the pair and its hosts.
const FIGURES: [&str; 4] = [mn::TRANS_S, mn::RTT_P50_US, mn::RTT_P99_US, mn::RTT_P999_US];

/// The pairs' request/response table under `title`, with the test's
/// `totals` as its last row; None unless the pairs have rr figures.
pub fn pair_table(title: String, pairs: &[PairFigures], totals: &Metrics) -> Option<Table> {
    if !pairs.iter().any(|p| p.metrics.contains_key(mn::TRANS_S)) {
        return None;
    }
    let figures = |m: &Metrics| FIGURES.map(|k| num(m.get(k).copied()));
    let mut rows: Vec<TRow> = (pairs.iter().enumerate())
        .map(|(k, p)| {
            let mut cells = vec![
                (k + 1).to_string(),
                format!("{} → {}", printable(&p.client), printable(&p.server)),
            ];
            cells.extend(figures(&p.metrics));
            TRow::new(cells)
        })
        .collect();
    if pairs.len() > 1 {
        let mut cells = vec![format!("all {} pairs", pairs.len()), String::new()];
        cells.extend(figures(totals));
        rows.push(total_row(cells));
    }
    Some(Table {
        title,
        head: ["pair", "client → server", "trans/s", "p50 µs", "p99 µs", "p99.9 µs"]
            .map(String::from)
            .to_vec(),
        rows,
        note: Some(
            "Round trips as each pair's client measured them. All pairs: transactions/s added up; the percentiles are of every pair's transactions together (their histograms merged), not a mean of the pairs' percentiles."
                .into(),
        ),
    })
}
