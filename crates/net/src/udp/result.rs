//! A UDP test's result: each direction's sender's count against its
//! receiver's, both ends' CPU, and the notes that say how to read them.

use super::account::{Received, Sent};
use super::engine::UdpOut;
use crate::client::drive::Window;
use crate::client::result::{conn_rates, mbit_s, spec_json, windows_disagree};
use crate::proto::ServerReport;
use crate::{ClientSpec, NetError};
use iotoll_model::metrics as mn;
use iotoll_model::{Kind, Metrics, ResultDoc};
use std::net::{IpAddr, SocketAddr};

/// One direction of a test: what its sender counted in its window (of
/// `window_s`), and what its receiver counted of those datagrams.
#[derive(Debug, Clone, Copy, Default)]
pub struct Way {
    pub sent: Sent,
    pub window_s: f64,
    pub received: Received,
}

/// The directions' figures summed.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Totals {
    pub sent: u64,
    pub received: u64,
    pub lost: u64,
    pub refused: u64,
    pub out_of_order: u64,
    pub duplicates: u64,
    pub ignored: u64,
}

pub(super) fn totals(ways: &[Way]) -> Totals {
    let mut t = Totals::default();
    for w in ways {
        t.sent += w.sent.datagrams;
        t.received += w.received.datagrams;
        t.lost += w.sent.datagrams.saturating_sub(w.received.datagrams);
        t.refused += w.sent.refused;
        t.out_of_order += w.received.out_of_order;
        t.duplicates += w.received.duplicates;
        t.ignored += w.received.ignored;
    }
    t
}

/// A receiver that counted more distinct datagrams of a sender's window
/// than the sender sent in it counted datagrams nobody sent.
fn received_beyond_sent(ways: &[(&str, Way)]) -> Option<String> {
    ways.iter()
        .find(|(_, w)| w.received.datagrams > w.sent.datagrams)
        .map(|(what, w)| format!(
            "the test is void: {what}: the receiver counted {} distinct datagrams of the sender's window, the sender sent {} (datagrams nobody sent carried this test's cookie)",
            w.received.datagrams, w.sent.datagrams
        ))
}

/// The UDP metrics of `ways` (tx first, then rx, each present or not).
pub fn udp_metrics(tx: Option<Way>, rx: Option<Way>, m: &mut Metrics) {
    let mut put = |k: &str, v: Option<f64>| m.extend(v.map(|v| (k.to_string(), v)));
    let goodput = |w: &Option<Way>| w.and_then(|w| mbit_s(w.received.bytes, w.window_s));
    let offered = |w: &Option<Way>| w.and_then(|w| mbit_s(w.sent.bytes, w.window_s));
    let (tx_g, rx_g) = (goodput(&tx), goodput(&rx));
    put(mn::TX_MBIT_S, tx_g);
    put(mn::RX_MBIT_S, rx_g);
    put(mn::MBIT_S, Some(tx_g.unwrap_or(0.0) + rx_g.unwrap_or(0.0)));
    put(
        mn::OFFERED_MBIT_S,
        Some(offered(&tx).unwrap_or(0.0) + offered(&rx).unwrap_or(0.0)),
    );
    let ways: Vec<Way> = [tx, rx].into_iter().flatten().collect();
    let t = totals(&ways);
    put(mn::DATAGRAMS_SENT, Some(t.sent as f64));
    put(mn::DATAGRAMS_RECEIVED, Some(t.received as f64));
    put(mn::DATAGRAMS_LOST, Some(t.lost as f64));
    put(mn::DATAGRAMS_IGNORED, Some(t.ignored as f64));
    put(
        mn::LOSS_PCT,
        (t.sent > 0).then(|| 100.0 * t.lost as f64 / t.sent as f64),
    );
    put(mn::OUT_OF_ORDER, Some(t.out_of_order as f64));
    put(mn::DUPLICATES, Some(t.duplicates as f64));
    let (j_sum, j_n) = (ways.iter()).fold((0.0, 0), |(s, n), w| {
        (s + w.received.jitter_ns_sum, n + w.received.jitter_flows)
    });
    put(
        mn::JITTER_US,
        (j_n > 0).then(|| j_sum / j_n as f64 / 1000.0),
    );
    // An absent direction has no connections: conn_rates passes over it.
    let [t, r] = [tx, rx].map(Option::unwrap_or_default);
    let (n, min, max, fairness) = conn_rates([
        (&t.received.flows, t.window_s),
        (&r.received.flows, r.window_s),
    ]);
    put(mn::CONN_MBIT_S_MIN, (n > 0.0).then_some(min));
    put(mn::CONN_MBIT_S_MAX, (n > 0.0).then_some(max));
    put(mn::FAIRNESS, fairness);
}

/// Below this share of `--rate`, a sender is said to have fallen short
/// (pacing holds it within one datagram of the rate otherwise).
const SHORT_OF_RATE: f64 = 0.97;

impl Way {
    /// A note when its sender (`who`) offered less than `rate` asked: the
    /// figures are then of what it could send, which iperf3 leaves the
    /// user to notice.
    pub fn short_of_rate(&self, who: &str, rate: Option<u64>) -> Option<String> {
        let asked = rate? as f64 / 1e6;
        let offered = mbit_s(self.sent.bytes, self.window_s)?;
        (offered < SHORT_OF_RATE * asked).then(|| {
            format!("{who} offered {offered:.1} Mbit/s of the {asked:.1} asked (rate): the sender could not keep up (its CPU, socket buffer or device queue), so the figures are of what it offered")
        })
    }
}

/// What a reader of the counts must know: how loss is counted, and what
/// was refused, ignored or failed at either end.
fn count_notes(t: &Totals, out: &UdpOut, report: &ServerReport) -> Vec<String> {
    let mut notes = vec![format!(
        "UDP loss is counted exactly: each sender numbers its datagrams and marks those it sends inside its window; the receiver counts the marked ones that arrive (until the flows go quiet after the window), so lost = sent - received ({} - {} = {}); goodput is what arrived over the sender's window",
        t.sent, t.received, t.lost
    )];
    if t.refused > 0 {
        notes.push(format!(
            "{} sends were refused by a full socket or device queue (ENOBUFS/EAGAIN) and retried: not sent, not counted; the offered rate is what went out",
            t.refused
        ));
    }
    if t.ignored > 0 {
        notes.push(format!(
            "{} datagrams were not counted: too short, not iotoll's, another test's cookie, an unknown flow, or an absurd sequence jump",
            t.ignored
        ));
    }
    for (end, n, first) in [
        ("this host", out.errors, &out.first_error),
        ("the endpoint", report.errors, &report.first_error),
    ] {
        if n > 0 {
            let first = first.as_deref().unwrap_or("unknown");
            notes.push(format!("{n} sends failed at {end}; first error: {first}"));
        }
    }
    notes
}

/// Merges both ends' counts into the result; a failed test is an error
/// that carries it.
pub(super) fn result_doc(
    spec: &ClientSpec,
    addr: &SocketAddr,
    local_ip: IpAddr,
    mut m: Window<UdpOut>,
) -> Result<ResultDoc, NetError> {
    let ends = m.ends(spec, addr, local_ip);
    let end = m.report.udp.unwrap_or_default();
    let (sends, receives) = super::client_sends_receives(spec.dir);
    let tx = sends.then(|| Way {
        sent: m.out.sent,
        window_s: m.closed.window_s,
        received: end.received.unwrap_or_default(),
    });
    let rx = receives.then(|| Way {
        sent: end.sent,
        window_s: m.report.window_s,
        received: m.out.received.unwrap_or_default(),
    });

    let mut notes = ends.notes.clone();
    let ways: Vec<Way> = [tx, rx].into_iter().flatten().collect();
    let t = totals(&ways);
    notes.extend(count_notes(&t, &m.out, &m.report));
    for (who, w) in [("this host", tx), ("the endpoint", rx)] {
        notes.extend(w.and_then(|w| w.short_of_rate(who, spec.rate)));
    }
    let named: Vec<(&str, Way)> = [
        ("this host to the endpoint", tx),
        ("the endpoint to this host", rx),
    ]
    .into_iter()
    .filter_map(|(n, w)| Some((n, w?)))
    .collect();
    let failure = windows_disagree(m.closed.window_s, m.report.window_s)
        .or_else(|| received_beyond_sent(&named))
        .or_else(|| {
            (t.sent == 0 && m.completed)
                .then(|| "the test failed: no datagram was sent in the window".to_string())
        });
    let mut metrics = Metrics::new();
    metrics.insert(mn::WINDOW_S.into(), m.closed.window_s);
    metrics.insert(mn::ERRORS.into(), (m.out.errors + m.report.errors) as f64);
    metrics.insert(mn::CONNS.into(), (spec.conns as usize * ways.len()) as f64);
    udp_metrics(tx, rx, &mut metrics);
    let doc = ResultDoc {
        config: spec.config.clone(),
        metrics,
        notes,
        ..ResultDoc::new(Kind::NetUdp, spec_json(spec, addr, 1))
    };
    ends.document(m, doc, failure, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::ByteStats;

    fn way(sent: u64, got: u64, size: u64, window_s: f64) -> Way {
        Way {
            sent: Sent {
                datagrams: sent,
                bytes: sent * size,
                refused: 0,
            },
            window_s,
            received: Received {
                datagrams: got,
                bytes: got * size,
                flows: ByteStats::from_counts([got * size]),
                jitter_ns_sum: 2000.0,
                jitter_flows: 1,
                ..Default::default()
            },
        }
    }

    #[test]
    fn loss_goodput_and_offered_rate_from_both_counts() {
        let mut m = Metrics::new();
        // 10,000 datagrams of 1250 bytes in 1 s: 100 Mbit/s offered, 9,900 arrived.
        udp_metrics(Some(way(10_000, 9_900, 1250, 1.0)), None, &mut m);
        assert_eq!(m[mn::OFFERED_MBIT_S], 100.0);
        assert_eq!(m[mn::MBIT_S], 99.0);
        assert_eq!(m[mn::TX_MBIT_S], 99.0);
        assert!(!m.contains_key(mn::RX_MBIT_S));
        assert_eq!(m[mn::LOSS_PCT], 1.0);
        assert_eq!(m[mn::DATAGRAMS_LOST], 100.0);
        assert_eq!(m[mn::JITTER_US], 2.0);
        // Both ways: summed, loss over all datagrams sent.
        let mut m = Metrics::new();
        let (tx, rx) = (way(1000, 1000, 1000, 2.0), way(3000, 2700, 1000, 1.5));
        udp_metrics(Some(tx), Some(rx), &mut m);
        assert_eq!(m[mn::LOSS_PCT], 100.0 * 300.0 / 4000.0);
        assert_eq!(m[mn::OFFERED_MBIT_S], 4.0 + 16.0);
        assert_eq!(m[mn::MBIT_S], 4.0 + 14.4);
        assert!(m[mn::FAIRNESS] < 1.0);
        // Nothing sent: no loss figure, never 0 %.
        let mut m = Metrics::new();
        udp_metrics(Some(way(0, 0, 1000, 1.0)), None, &mut m);
        assert!(!m.contains_key(mn::LOSS_PCT));
    }

    /// A sender that offered less than the rate asked is said to; one
    /// within the pacer's datagram of it, or unpaced, is not.
    #[test]
    fn a_sender_short_of_its_rate_is_noted() {
        // 100 Mbit/s offered (10,000 datagrams of 1250 bytes in 1 s).
        let w = way(10_000, 10_000, 1250, 1.0);
        let m = w.short_of_rate("this host", Some(120_000_000)).unwrap();
        assert!(m.contains("offered 100.0 Mbit/s of the 120.0 asked"), "{m}");
        assert_eq!(w.short_of_rate("this host", Some(100_000_000)), None);
        assert_eq!(w.short_of_rate("this host", Some(101_000_000)), None);
        assert_eq!(w.short_of_rate("this host", None), None);
    }

    #[test]
    fn a_receiver_that_counted_more_than_was_sent_voids_the_test() {
        let ok = [("a", way(10, 10, 100, 1.0))];
        assert_eq!(received_beyond_sent(&ok), None);
        let bad = [("a", way(10, 10, 100, 1.0)), ("b", way(10, 11, 100, 1.0))];
        assert!(received_beyond_sent(&bad).unwrap().contains("void"));
    }
}
