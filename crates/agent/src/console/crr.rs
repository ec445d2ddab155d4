//! Connection rates across hosts (crr, cc): each pair's counts from its
//! client's report (connections or transactions in its window, failures
//! by cause, connect and transaction times as histograms) and its
//! server's (accepted, answered), each checked on its own, the two ends'
//! whole-test totals checked against each other as a local `net crr`
//! checks them; the totals' percentiles from the pairs' histograms merged.

use super::ends::{Reported, Words};
use super::{Console, ConsoleError, Part};
use crate::checks::IOPS_MAX;
use crate::crr::{threads_needed, MAX_CRR_THREADS_PER_HOST};
use crate::histwire;
use crate::per_s;
use crate::wire::{AgentReport, CrrClient, CrrServed};
use hdrhistogram::Histogram;
use iotoll_model::metrics as mn;
use iotoll_model::{HostFigures, Metrics, PairFigures};
use iotoll_net::crr::{totals_disagree, Cause};
use iotoll_net::proto::{CrrEnd, TestParams};
use iotoll_net::TestKind;
use iotoll_run::{new_histogram, write_latency_metrics};

/// One pair's counts, checked: its client's (with its window and its
/// histograms decoded) and its server's (with its window).
pub(super) struct PairRate {
    client: CrrClient,
    client_window_s: f64,
    connect: Histogram<u64>,
    trans: Histogram<u64>,
    server: CrrServed,
    server_window_s: f64,
}

/// A client's count of one pair: window figures within the whole test's,
/// histograms holding its window's connections (crr: transactions too).
fn client_ok(
    c: &CrrClient,
    kind: TestKind,
    window_s: f64,
) -> Result<(Histogram<u64>, Histogram<u64>), String> {
    let failed: u64 = c
        .failures
        .iter()
        .try_fold(0u64, |a, b| a.checked_add(*b))
        .ok_or("its failures overflow")?;
    if c.window_done > c.total_done || failed > c.total_failed {
        return Err(format!(
            "its window's {} connections and {failed} failures are more than its whole test's {} and {}",
            c.window_done, c.total_done, c.total_failed
        ));
    }
    if c.total_done as f64 > IOPS_MAX * (window_s + 1.0) {
        return Err(format!("it says it completed {} connections", c.total_done));
    }
    let connect = histwire::decode(&c.connect_hist, c.window_done)
        .map_err(|m| format!("connect times: {m}"))?;
    let want = if kind == TestKind::Crr {
        c.window_done
    } else {
        0
    };
    let trans =
        histwire::decode(&c.trans_hist, want).map_err(|m| format!("transaction times: {m}"))?;
    Ok((connect, trans))
}

/// A server's count of one pair: answered and in-window within accepted,
/// nothing answered in a cc test.
fn server_ok(s: &CrrServed, kind: TestKind) -> Result<(), String> {
    let within = s.responded <= s.accepted
        && s.bad_token <= s.accepted
        && s.window_done.saturating_add(s.window_errors) <= s.accepted;
    if !within {
        return Err(format!(
            "its counts (accepted {}, answered {}, without the token {}, in its window {} served and {} failed) do not fit in what it accepted",
            s.accepted, s.responded, s.bad_token, s.window_done, s.window_errors
        ));
    }
    if kind == TestKind::Cc && s.responded > 0 {
        return Err(format!(
            "it answered {} requests in a cc test, which has none",
            s.responded
        ));
    }
    Ok(())
}

/// A connection-rate test's pairs, before any host is asked: each host
/// runs a thread per concurrent client of each of its pairs, at either
/// end, at most [`MAX_CRR_THREADS_PER_HOST`].
pub(super) fn check_test(t: &super::NetTest) -> Result<(), String> {
    if !matches!(t.params.kind, TestKind::Crr | TestKind::Cc) {
        return Ok(());
    }
    for (h, k) in t.pairs_per_host() {
        let n = threads_needed(k, t.params.conns);
        if n > MAX_CRR_THREADS_PER_HOST {
            return Err(format!(
                "host {h} would run {n} connection threads ({k} pairs x {} conns); at most {MAX_CRR_THREADS_PER_HOST}",
                t.params.conns
            ));
        }
    }
    Ok(())
}

impl Console {
    /// Every pair's counts from its two ends' reports: each end reported
    /// once, by the host that is that end, checked; the ends' totals
    /// agreeing, or the pair is named.
    pub(super) fn pair_rates(
        &self,
        parts: &[Part],
        params: &TestParams,
        pairs: usize,
    ) -> Result<Vec<PairRate>, ConsoleError> {
        let words = Words {
            counts: "connection",
            client: "a client's counts",
            server: "a server's counts",
        };
        let of = |r: &AgentReport| -> Vec<Reported<CrrClient, CrrServed>> {
            (r.crr.iter())
                .map(|u| (u.pair, u.client.clone(), u.server.clone()))
                .collect()
        };
        let server_ok = |s: &CrrServed| server_ok(s, params.kind);
        let got = self.pair_ends(parts, pairs, &words, of, |_, _| Ok(()), server_ok)?;
        let name = |i: usize| self.hosts[parts[i].host].name.as_str();
        let window = |i: usize| parts[i].report.as_ref().map_or(0.0, |r| r.window_s);
        (got.into_iter().enumerate())
            .map(|(k, ((ci, c), (si, s)))| {
                let (connect, trans) = client_ok(&c, params.kind, window(ci)).map_err(|m| {
                    ConsoleError::host_err(
                        name(ci),
                        format!("its report is refused: pair {}: {m}", k + 1),
                    )
                })?;
                let end = CrrEnd {
                    accepted: s.accepted,
                    responded: s.responded,
                    bad_token: s.bad_token,
                };
                if let Some(m) = totals_disagree(
                    params.kind,
                    params.linger0,
                    (c.total_done, c.total_failed),
                    (c.window_done, c.failures.iter().sum()),
                    &end,
                ) {
                    // The local test's words are the client's ("this host").
                    let m = m
                        .replace("this host", &format!("its client {}", name(ci)))
                        .replace("the endpoint", "it");
                    return Err(ConsoleError::host_err(
                        name(si),
                        format!("pair {}: {m}; the test is invalid", k + 1),
                    ));
                }
                Ok(PairRate {
                    client: c,
                    client_window_s: window(ci),
                    connect,
                    trans,
                    server: s,
                    server_window_s: window(si),
                })
            })
            .collect()
    }
}

/// The figures a local `net crr|cc` has, written into `m`: rates
/// (connections/s, as its clients and its servers counted them),
/// failures by cause, connect and transaction times.
fn rate_metrics(
    (conn_s, served_s): (f64, f64),
    failures: &[u64; 6],
    connect: &Histogram<u64>,
    trans: &Histogram<u64>,
    m: &mut Metrics,
) {
    m.insert(mn::CONN_S.into(), conn_s);
    m.insert(mn::SERVED_CONN_S.into(), served_s);
    m.insert(mn::FAILURES.into(), failures.iter().sum::<u64>() as f64);
    for (c, n) in Cause::ALL.iter().zip(failures) {
        m.insert(format!("failures_{}", c.name()), *n as f64);
    }
    // An empty histogram (cc has no transactions) writes nothing.
    write_latency_metrics(connect, "connect", m);
    write_latency_metrics(trans, "trans", m);
}

/// Each pair's figures, and the test's: rates and failures added up,
/// percentiles of the merged histograms.
pub(super) fn write(
    rates: &[PairRate],
    linger0: bool,
    pairs: &mut [PairFigures],
    m: &mut Metrics,
) -> Vec<String> {
    let (mut failures, mut total) = ([0u64; 6], (0.0, 0.0));
    for (r, p) in rates.iter().zip(pairs.iter_mut()) {
        let c = &r.client;
        let rates = (
            per_s(c.window_done as f64, r.client_window_s),
            per_s(r.server.window_done as f64, r.server_window_s),
        );
        // The totals are the pairs' rates added up, in the pairs' order.
        total = (total.0 + rates.0, total.1 + rates.1);
        rate_metrics(rates, &c.failures, &r.connect, &r.trans, &mut p.metrics);
        p.transactions = Some(c.window_done);
        for (a, b) in failures.iter_mut().zip(c.failures) {
            *a += b;
        }
    }
    let (connect, trans) = merged(rates.iter());
    rate_metrics(total, &failures, &connect, &trans, m);
    for k in [mn::MBIT_S, mn::TX_MBIT_S, mn::RX_MBIT_S] {
        m.remove(k);
    }
    let close = match linger0 {
        true => "with a reset (linger0: no TIME_WAIT)",
        false => "with a FIN (the TIME_WAIT is the client host's)",
    };
    let mut notes = vec![format!("connection rates across hosts: each pair's clients close first {close}; each pair's conn_s is its client's over its client's window, the totals' the pairs' sum, and the totals' connect and transaction percentiles are read from the pairs' histograms merged")];
    if let Some(f) = iotoll_net::crr::Failures(failures).describe() {
        notes.push(format!("failed connections in the windows: {f}"));
    }
    notes
}

/// The connect and transaction times of `rates`, their histograms merged.
fn merged<'a>(rates: impl Iterator<Item = &'a PairRate>) -> (Histogram<u64>, Histogram<u64>) {
    let (mut connect, mut trans) = (new_histogram(), new_histogram());
    for r in rates {
        // Same bounds on both: adding cannot fail.
        let _ = connect.add(&r.connect);
        let _ = trans.add(&r.trans);
    }
    (connect, trans)
}

/// Each client host's connect (crr: and transaction) times: its pairs'
/// histograms merged, as the totals' are, so its row is not "–" (a host
/// with no client pair gets none).
pub(super) fn host_latencies(rates: &[PairRate], pairs: &[PairFigures], hosts: &mut [HostFigures]) {
    for h in hosts {
        let mine = (rates.iter().zip(pairs)).filter(|(_, p)| p.client == h.name);
        let (connect, trans) = merged(mine.map(|(r, _)| r));
        write_latency_metrics(&connect, "connect", &mut h.metrics);
        write_latency_metrics(&trans, "trans", &mut h.metrics);
    }
}
