//! UDP across hosts: each pair's datagrams as its client counted them
//! sent in its window and its server counted them received (iotoll_net's
//! counts, by sequence number), each end's report checked on its own and
//! against the other's; written per pair as a local `net udp` writes its
//! figures, and the totals added up so that they agree with the pairs'
//! (datagrams sent = received + lost, goodput = the pairs' goodput).

use super::ends::{Reported, Words};
use super::{Console, ConsoleError, Part};
use crate::checks::{BYTES_S_MAX, IOPS_MAX};
use crate::udp::MAX_UDP_PAIRS_PER_HOST;
use crate::wire::{AgentReport, PairPort, PairSlot};
use iotoll_model::metrics as mn;
use iotoll_model::{HostFigures, Metrics, PairFigures};
use iotoll_net::proto::TestParams;
use iotoll_net::udp::{udp_metrics, Received, Sent, Way};
use iotoll_net::TestKind;

/// The pacer's most credit beyond the rate over a window, seconds of the
/// rate (its bucket holds 100 ms; a margin on top for the edges).
const PACING_CREDIT_S: f64 = 0.2;

/// A serving host's ports per pair as it sent them at PREPARE: one per
/// pair it serves in a test with a port per pair (UDP, crr, cc), none in
/// another test.
pub(super) fn check_ports(
    served: &[PairSlot],
    got: &[PairPort],
    per_pair: bool,
) -> Result<(), String> {
    if !per_pair {
        return match got.is_empty() {
            true => Ok(()),
            false => Err("it sent ports per pair for a test that has one data port".into()),
        };
    }
    let mut want: Vec<u32> = served.iter().map(|s| s.pair).collect();
    let mut have: Vec<u32> = got.iter().map(|p| p.pair).collect();
    want.sort_unstable();
    have.sort_unstable();
    if want != have {
        let shown = |v: &[u32]| {
            let v: Vec<String> = v.iter().map(|k| (k + 1).to_string()).collect();
            v.join(", ")
        };
        return Err(format!(
            "it sent ports for pairs [{}]; it serves pairs [{}]",
            shown(&have),
            shown(&want)
        ));
    }
    if let Some(p) = got.iter().find(|p| p.port == 0) {
        return Err(format!("it sent port 0 for pair {}", p.pair + 1));
    }
    Ok(())
}

/// A UDP test's parameters and pairs, before any host is asked for
/// anything: what the agents would refuse, said once, here.
pub(super) fn check_test(t: &super::NetTest) -> Result<(), String> {
    if t.params.kind != TestKind::Udp {
        return Ok(());
    }
    iotoll_net::udp::validate_placed(&t.params)?;
    match (t.pairs_per_host().into_iter()).find(|(_, k)| *k > MAX_UDP_PAIRS_PER_HOST) {
        Some((h, k)) => Err(format!(
            "host {h} is in {k} UDP pairs of the test; an agent runs one thread per UDP pair, at most {MAX_UDP_PAIRS_PER_HOST}"
        )),
        None => Ok(()),
    }
}

/// `n` datagrams of `size` bytes are `bytes` bytes, or what is wrong.
fn sized(what: &str, n: u64, bytes: u64, size: u64) -> Result<(), String> {
    if n.checked_mul(size) != Some(bytes) {
        return Err(format!(
            "{what} {n} datagrams of {size} bytes and counts {bytes} bytes"
        ));
    }
    Ok(())
}

/// A client's count of one pair, over its window of `window_s`: whole
/// datagrams, at most the test's rate (with the pacer's credit) or what
/// hardware moves.
fn check_sent(s: &Sent, p: &TestParams, window_s: f64) -> Result<(), String> {
    sized("it sent", s.datagrams, s.bytes, p.msg)?;
    let bits = s.bytes as f64 * 8.0;
    let most = match p.rate {
        Some(r) => r as f64 * (window_s + PACING_CREDIT_S) + 16.0 * p.msg as f64 * 8.0,
        None => BYTES_S_MAX * 8.0 * (window_s + 1.0),
    };
    if bits > most {
        let rate = p.rate.map_or("what hardware moves".into(), |r| {
            format!("the {:.3} Mbit/s the test paces at", r as f64 / 1e6)
        });
        return Err(format!(
            "it says it offered {:.3} Mbit/s over its {window_s:.3} s window, over {rate}",
            bits / window_s.max(1e-9) / 1e6
        ));
    }
    if s.refused as f64 > IOPS_MAX * (window_s + 1.0) {
        return Err(format!("it says {} sends were refused", s.refused));
    }
    Ok(())
}

/// A server's count of one pair: whole datagrams, its flows' figures
/// adding up to it, and jitter a number within the flows it names.
fn check_received(r: &Received, p: &TestParams) -> Result<(), String> {
    sized("it received", r.datagrams, r.bytes, p.msg)?;
    if r.out_of_order > r.datagrams {
        return Err(format!(
            "it counts {} datagrams out of order of {} received",
            r.out_of_order, r.datagrams
        ));
    }
    let f = &r.flows;
    let flows_ok = f.conns == u64::from(p.conns)
        && f.sum == r.bytes
        && f.min <= f.max
        && f.max <= f.sum
        && f.sum_sq.is_finite()
        && f.sum_sq >= 0.0;
    if !flows_ok {
        return Err(format!(
            "its flows' figures ({} flows, {} bytes, min {}, max {}) are not the {} flows of the {} bytes it received",
            f.conns, f.sum, f.min, f.max, p.conns, r.bytes
        ));
    }
    let j = r.jitter_ns_sum;
    if r.jitter_flows > u64::from(p.conns)
        || !j.is_finite()
        || j < 0.0
        || j > 3.6e12 * p.conns as f64
    {
        return Err(format!(
            "its jitter ({j} ns over {} flows) is not a jitter of {} flows",
            r.jitter_flows, p.conns
        ));
    }
    Ok(())
}

impl Console {
    /// Every pair's datagrams from its two ends' reports: each end's count
    /// reported once, by the host that is that end, checked, and the
    /// server's no more than its client sent.
    pub(super) fn pair_ways(
        &self,
        parts: &[Part],
        params: &TestParams,
        pairs: usize,
    ) -> Result<Vec<Way>, ConsoleError> {
        let words = Words {
            counts: "datagram",
            client: "datagrams sent",
            server: "datagrams received",
        };
        let of = |r: &AgentReport| -> Vec<Reported<Sent, Received>> {
            (r.udp.iter())
                .map(|u| (u.pair, u.sent, u.received))
                .collect()
        };
        let sent_ok = |s: &Sent, window_s: f64| check_sent(s, params, window_s);
        let got = self.pair_ends(parts, pairs, &words, of, sent_ok, |r| {
            check_received(r, params)
        })?;
        let name = |i: usize| self.hosts[parts[i].host].name.as_str();
        (got.into_iter().enumerate())
            .map(|(k, (c, s))| {
                if s.1.datagrams > c.1.datagrams {
                    return Err(ConsoleError::host_err(
                        name(s.0),
                        format!(
                            "its report is refused: pair {}: it counted {} distinct datagrams of its client's window, and its client ({}) sent {}",
                            k + 1, s.1.datagrams, name(c.0), c.1.datagrams
                        ),
                    ));
                }
                let window_s = parts[c.0].report.as_ref().map_or(0.0, |r| r.window_s);
                Ok(Way { sent: c.1, window_s, received: s.1 })
            })
            .collect()
    }
}

/// Each pair's figures, as a local `net udp` of the pair's client would
/// write them: goodput over its client's window, offered rate, loss.
pub(super) fn write_pairs(ways: &[Way], pairs: &mut [PairFigures]) {
    for (w, p) in ways.iter().zip(pairs.iter_mut()) {
        let mut m = Metrics::new();
        udp_metrics(Some(*w), None, &mut m);
        p.mbit_s = m.get(mn::MBIT_S).copied().unwrap_or(0.0);
        p.client_to_server_bytes = w.received.bytes;
        p.metrics.extend(m);
    }
}

/// Each host's rates as the totals count them: what it sent is the
/// goodput of the pairs it is the client of (the receiver's count, which
/// `tx_mbit_s` is everywhere), what it received its served pairs'; what
/// its senders handed their sockets is its `offered_mbit_s`.
pub(super) fn host_rates(pairs: &[PairFigures], hosts: &mut [HostFigures]) {
    for h in hosts {
        let (mut tx, mut rx, mut offered) = (0.0, 0.0, 0.0);
        for p in pairs {
            if p.client == h.name {
                tx += p.mbit_s;
                offered += p.metrics.get(mn::OFFERED_MBIT_S).copied().unwrap_or(0.0);
            }
            if p.server == h.name {
                rx += p.mbit_s;
            }
        }
        let m = &mut h.metrics;
        m.insert(mn::TX_MBIT_S.into(), tx);
        m.insert(mn::RX_MBIT_S.into(), rx);
        m.insert(mn::MBIT_S.into(), tx + rx);
        if offered > 0.0 {
            m.insert(mn::OFFERED_MBIT_S.into(), offered);
        }
        // Its efficiency is of these rates, not of the ones it was built with.
        iotoll_model::rederive_metrics(m);
    }
}

/// The test's totals from its pairs': counts and rates added up, loss
/// and jitter over all of them (not a mean of the pairs' percentages).
pub(super) fn write_totals(ways: &[Way], pairs: &[PairFigures], m: &mut Metrics) -> Vec<String> {
    let sum = |k: &str| pairs.iter().filter_map(|p| p.metrics.get(k)).sum::<f64>();
    for k in [
        mn::MBIT_S,
        mn::TX_MBIT_S,
        mn::OFFERED_MBIT_S,
        mn::DATAGRAMS_SENT,
        mn::DATAGRAMS_RECEIVED,
        mn::DATAGRAMS_LOST,
        mn::DATAGRAMS_IGNORED,
        mn::OUT_OF_ORDER,
        mn::DUPLICATES,
    ] {
        m.insert(k.into(), sum(k));
    }
    m.remove(mn::RX_MBIT_S);
    let (sent, lost) = (ways.iter()).fold((0u64, 0u64), |(s, l), w| {
        let lost = w.sent.datagrams.saturating_sub(w.received.datagrams);
        (s + w.sent.datagrams, l + lost)
    });
    m.remove(mn::LOSS_PCT);
    if sent > 0 {
        m.insert(mn::LOSS_PCT.into(), 100.0 * lost as f64 / sent as f64);
    }
    let (j, n) = (ways.iter()).fold((0.0, 0), |(j, n), w| {
        (j + w.received.jitter_ns_sum, n + w.received.jitter_flows)
    });
    m.remove(mn::JITTER_US);
    if n > 0 {
        m.insert(mn::JITTER_US.into(), j / n as f64 / 1000.0);
    }
    let received = sent - lost;
    let mut notes = vec![format!(
        "UDP loss is counted exactly, pair by pair: each pair's client numbers its datagrams and marks those it sends inside its window; the pair's server counts the marked ones that arrive (until its flows go quiet after the window), so lost = sent - received ({sent} - {received} = {lost}); each pair's goodput is what arrived over its client's window, and the total is the pairs' sum"
    )];
    let refused: u64 = ways.iter().map(|w| w.sent.refused).sum();
    if refused > 0 {
        notes.push(format!("{refused} sends were refused by a full socket or device queue (ENOBUFS/EAGAIN) and retried: not sent, not counted; the offered rate is what went out"));
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use iotoll_net::proto::ByteStats;

    fn way(sent: u64, got: u64, size: u64) -> Way {
        Way {
            sent: Sent {
                datagrams: sent,
                bytes: sent * size,
                refused: 0,
            },
            window_s: 2.0,
            received: Received {
                datagrams: got,
                bytes: got * size,
                flows: ByteStats::from_counts([got * size]),
                jitter_ns_sum: 4000.0,
                jitter_flows: 1,
                ..Default::default()
            },
        }
    }

    /// Totals that add up: sent = received + lost, goodput the pairs'
    /// sum, loss over all datagrams (not the mean of the pairs' loss %).
    #[test]
    fn totals_add_the_pairs_up() {
        let ways = [way(10_000, 9_000, 1000), way(1_000, 1_000, 1000)];
        let mut pairs = vec![PairFigures::default(), PairFigures::default()];
        write_pairs(&ways, &mut pairs);
        let mut m = Metrics::new();
        write_totals(&ways, &pairs, &mut m);
        assert_eq!(pairs[0].metrics[mn::LOSS_PCT], 10.0);
        assert_eq!(pairs[1].metrics[mn::LOSS_PCT], 0.0);
        assert_eq!(pairs[0].mbit_s, 9_000.0 * 8000.0 / 2.0 / 1e6);
        assert_eq!(m[mn::DATAGRAMS_SENT], 11_000.0);
        assert_eq!(m[mn::DATAGRAMS_RECEIVED] + m[mn::DATAGRAMS_LOST], 11_000.0);
        assert_eq!(m[mn::MBIT_S], pairs[0].mbit_s + pairs[1].mbit_s);
        assert!((m[mn::LOSS_PCT] - 100.0 * 1000.0 / 11_000.0).abs() < 1e-9);
        assert_eq!(m[mn::JITTER_US], 4.0);
        assert!(!m.contains_key(mn::RX_MBIT_S));
    }

    /// One flow of 1,000-byte datagrams at `rate` for 1 s, no ramp-up.
    fn udp(rate: Option<u64>) -> TestParams {
        iotoll_net::ClientSpec {
            kind: iotoll_net::TestKind::Udp,
            conns: 1,
            msg: 1000,
            rate,
            ramp: std::time::Duration::ZERO,
            time: std::time::Duration::from_secs(1),
            ..Default::default()
        }
        .params()
    }

    /// A lying end's counts are refused with what is wrong.
    #[test]
    fn counts_that_cannot_be_are_refused() {
        let w = way(1000, 900, 1000);
        let p = udp(Some(8_000_000));
        assert_eq!(check_sent(&w.sent, &p, 1.0), Ok(()));
        assert_eq!(check_received(&w.received, &p), Ok(()));
        // 1000 datagrams of 1000 bytes in 1 s is 8 Mbit/s; at 4 Mbit/s
        // with the pacer's credit, it cannot have been sent.
        let e = check_sent(&w.sent, &udp(Some(4_000_000)), 1.0).unwrap_err();
        assert!(e.contains("offered 8.000 Mbit/s"), "{e}");
        let mut s = w.sent;
        s.bytes += 1;
        assert!(check_sent(&s, &p, 1.0).unwrap_err().contains("counts"));
        s.datagrams = u64::MAX;
        assert!(check_sent(&s, &p, 1.0).is_err(), "overflow");
        let mut r = w.received;
        r.out_of_order = 901;
        assert!(check_received(&r, &p).unwrap_err().contains("out of order"));
        let mut r = w.received;
        r.flows.sum += 1;
        assert!(check_received(&r, &p).unwrap_err().contains("flows"));
        let mut r = w.received;
        r.jitter_ns_sum = f64::NAN;
        assert!(check_received(&r, &p).unwrap_err().contains("jitter"));
        let mut r = w.received;
        r.jitter_flows = 2;
        assert!(check_received(&r, &p).unwrap_err().contains("jitter"));
    }

    #[test]
    fn ports_are_one_per_served_pair() {
        let slot = |pair| PairSlot {
            pair,
            token: 1,
            server: None,
            cert: None,
        };
        let port = |pair, port| PairPort { pair, port };
        let served = [slot(0), slot(2)];
        assert_eq!(
            check_ports(&served, &[port(2, 9), port(0, 8)], true),
            Ok(())
        );
        let e = check_ports(&served, &[port(0, 8)], true).unwrap_err();
        assert!(
            e.contains("ports for pairs [1];") && e.contains("serves pairs [1, 3]"),
            "{e}"
        );
        assert!(check_ports(&served, &[port(0, 8), port(2, 0)], true)
            .unwrap_err()
            .contains("port 0"));
        assert!(check_ports(&served, &[port(0, 8)], false).is_err());
        assert_eq!(check_ports(&served, &[], false), Ok(()));
    }
}
