//! Each endpoint pair's own figures across hosts, as a local test of its
//! kind reports them: request/response transactions and round trips,
//! connection rates and connect times, UDP goodput and loss. The test's
//! row adds the pairs' rates up and takes its percentiles from every
//! pair's histogram merged, never a mean of the pairs' percentiles.

use super::total_row;
use crate::fmt::{count, num};
use crate::tables::{TRow, Table};
use iotoll_model::metrics as mn;
use iotoll_model::text::printable;
use iotoll_model::{Metrics, PairFigures};

/// A kind's pair columns (metric, heading), what its title says and the
/// note under it; chosen by the metric only that kind's pairs carry.
struct Columns {
    what: &'static str,
    cols: &'static [(&'static str, &'static str)],
    note: &'static str,
}

const KINDS: [(&str, Columns); 4] = [
    (
        mn::RTT_P50_US,
        Columns {
            what: "transactions",
            cols: &[
                (mn::TRANS_S, "trans/s"),
                (mn::RTT_P50_US, "p50 µs"),
                (mn::RTT_P99_US, "p99 µs"),
                (mn::RTT_P999_US, "p99.9 µs"),
            ],
            note: "Round trips as each pair's client measured them. All pairs: transactions/s added up; the percentiles are of every pair's transactions together (their histograms merged), not a mean of the pairs' percentiles.",
        },
    ),
    (
        mn::TRANS_P50_US,
        Columns {
            what: "connections (crr)",
            cols: &[
                (mn::CONN_S, "conn/s"),
                (mn::SERVED_CONN_S, "served/s"),
                (mn::CONNECT_P50_US, "connect p50 µs"),
                (mn::CONNECT_P99_US, "connect p99 µs"),
                (mn::TRANS_P50_US, "trans p50 µs"),
                (mn::TRANS_P99_US, "trans p99 µs"),
                (mn::FAILURES, "failed"),
            ],
            note: "Each pair's clients' connections (connect, request, response, close) over its client's window; served/s is its server's count. All pairs: rates and failures added up; the percentiles are of every pair's connections together (their histograms merged).",
        },
    ),
    (
        mn::CONNECT_P50_US,
        Columns {
            what: "connections (cc)",
            cols: &[
                (mn::CONN_S, "conn/s"),
                (mn::SERVED_CONN_S, "served/s"),
                (mn::CONNECT_P50_US, "connect p50 µs"),
                (mn::CONNECT_P99_US, "connect p99 µs"),
                (mn::CONNECT_P999_US, "connect p99.9 µs"),
                (mn::FAILURES, "failed"),
            ],
            note: "Each pair's clients' connections (connect, close) over its client's window; served/s is its server's count. All pairs: rates and failures added up; the percentiles are of every pair's connections together (their histograms merged).",
        },
    ),
    (
        mn::OFFERED_MBIT_S,
        Columns {
            what: "datagrams",
            cols: &[
                (mn::OFFERED_MBIT_S, "offered Mbit/s"),
                (mn::MBIT_S, "goodput Mbit/s"),
                (mn::DATAGRAMS_SENT, "sent"),
                (mn::DATAGRAMS_RECEIVED, "received"),
                (mn::DATAGRAMS_LOST, "lost"),
                (mn::LOSS_PCT, "loss %"),
                (mn::JITTER_US, "jitter µs"),
            ],
            note: "Each pair's server counts its client's datagrams by sequence number over its window: sent = received + lost. All pairs: rates and counts added up, loss over all the datagrams, jitter the mean of the pairs'.",
        },
    ),
];

/// The pairs' own figures under `title` (`{what}` in it is the kind's
/// word), with the test's `totals` as its last row; None unless the
/// pairs carry a kind's figures.
pub fn pair_table(title: &str, pairs: &[PairFigures], totals: &Metrics) -> Option<Table> {
    let has = |k: &str| pairs.iter().any(|p| p.metrics.contains_key(k));
    let (_, c) = KINDS.iter().find(|(key, _)| has(key))?;
    // Datagrams and failures are whole numbers.
    let is_count = |k: &str| mn::metric_def(k).is_some_and(|d| d.unit == "count");
    let figures = |m: &Metrics| -> Vec<String> {
        (c.cols.iter())
            .map(|(k, _)| match is_count(k) {
                true => count(m.get(*k).copied()),
                false => num(m.get(*k).copied()),
            })
            .collect()
    };
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
    let mut head = vec!["pair".to_string(), "client → server".to_string()];
    head.extend(c.cols.iter().map(|(_, h)| h.to_string()));
    Some(Table {
        title: title.replace("{what}", c.what),
        head,
        rows,
        note: Some(c.note.into()),
    })
}

/// Whether the pairs move bulk data (streams, rr, UDP), so their bytes
/// and Mbit/s table says something; a connection-rate test's pairs carry
/// their requests and responses in their own figures only.
pub fn moves_bytes(pairs: &[PairFigures]) -> bool {
    !pairs.iter().any(|p| p.metrics.contains_key(mn::CONN_S))
}
