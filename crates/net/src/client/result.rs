//! The result of a client's test: both ends' figures merged into one
//! document, with the notes that say how to read them.

use super::drive::Window;
use super::{ClientSpec, Setup};
use crate::engine::EngineOut;
use crate::proto::{ByteStats, ServerReport, TestKind};
use crate::tls::{self, Negotiated};
use crate::NetError;
use iotoll_model::metrics as mn;
use iotoll_model::spec::Spec;
use iotoll_model::{Kind, Metrics, ResultDoc};
use iotoll_run::{jain_fairness, latency_report, write_latency_metrics};
use std::net::SocketAddr;

/// Merges both ends' figures into the result, with the notes that say how
/// to read them; a failed test is an error that carries it.
pub(super) fn result_doc(
    spec: &ClientSpec,
    addr: &SocketAddr,
    setup: &Setup,
    threads: usize,
    mut m: Window<EngineOut>,
) -> Result<ResultDoc, NetError> {
    let ends = m.ends(spec, addr, setup.local_ip);
    let mut notes = ends.notes.clone();
    notes.extend(failed_ends(&m.out, &m.report).map(|(end, errors, first)| {
        format!("{errors} connection(s) failed before {end}'s window closed; first error: {first}")
    }));
    let failure = failure(&m.out, &m.report, setup.data_conns)
        .or_else(|| windows_disagree(m.closed.window_s, m.report.window_s))
        .or_else(|| {
            received_beyond_sent(spec, &m.out, m.closed.window_s, &m.report, m.report_after_s)
        });
    let doc = ResultDoc {
        config: spec.config.clone(),
        metrics: net_metrics(spec, &m.out, m.closed.window_s, &m.report, setup.connect_s),
        latency: latency_report(&m.out.rtt),
        notes,
        ..ResultDoc::new(kind(spec.kind), spec_json(spec, addr, threads))
    };
    let tls = (setup.tls.as_ref()).map(|n| tls_disclosure(n, spec.key.is_some()));
    ends.document(m, doc, failure, tls)
}

/// The result's kind of a test of `kind`.
pub(crate) fn kind(kind: TestKind) -> Kind {
    match kind {
        TestKind::Stream => Kind::NetStream,
        TestKind::Rr => Kind::NetRr,
        TestKind::Udp => Kind::NetUdp,
        TestKind::Crr => Kind::NetCrr,
        TestKind::Cc => Kind::NetCc,
    }
}

/// Connections that may fail before a test is failed: 1 % of its data
/// connections (both directions of a bidirectional test count), so none
/// below 100 connections. A connection counts as failed when it ends
/// before the window closes (a connection lost in the ramp-up is missing
/// from the window); most failures are seen at both ends, so the larger of
/// the two ends' counts is taken.
pub fn tolerated_failures(data_conns: usize) -> u64 {
    data_conns as u64 / 100
}

/// Each end with failed connections: which, how many, the first error.
fn failed_ends<'a>(
    out: &'a EngineOut,
    r: &'a ServerReport,
) -> impl Iterator<Item = (&'static str, u64, &'a str)> {
    [
        ("this host", out.errors, &out.first_error),
        ("the endpoint", r.errors, &r.first_error),
    ]
    .into_iter()
    .filter(|(_, errors, _)| *errors > 0)
    .map(|(end, errors, first)| (end, errors, first.as_deref().unwrap_or("unknown")))
}

/// Why a test that ran to its end is nevertheless failed: an engine
/// thread panicked at this host, or more connections failed than
/// `tolerated_failures` allows (an engine thread panic at the endpoint
/// fails all of that thread's connections). None: its figures are a result.
fn failure(out: &EngineOut, report: &ServerReport, data_conns: usize) -> Option<String> {
    let failed = out.errors.max(report.errors);
    if let Some(p) = &out.panic {
        return Some(format!(
            "the test failed: this host's {p} ({} of {data_conns} data connection(s) lost)",
            out.errors
        ));
    }
    if failed <= tolerated_failures(data_conns) {
        return None;
    }
    let firsts: Vec<String> = failed_ends(out, report)
        .map(|(end, errors, first)| format!("{errors} at {end} (first: {first})"))
        .collect();
    Some(format!(
        "the test failed: {failed} of {data_conns} data connection(s) failed before the window closed, more than the {} tolerated: {}",
        tolerated_failures(data_conns),
        firsts.join("; ")
    ))
}

/// The endpoint's window is this host's (it opens and closes it on this
/// host's word): lengths further apart than half the window, or a second,
/// mean a control message held back on the way, and its figures cover
/// another interval. The agents' console holds hosts to the same rule.
pub(crate) fn windows_disagree(mine_s: f64, endpoint_s: f64) -> Option<String> {
    let allowed = (mine_s / 2.0).max(1.0);
    ((endpoint_s - mine_s).abs() > allowed).then(|| {
        format!(
            "the test is void: the endpoint's window was {endpoint_s:.3} s and this host's {mine_s:.3} s, more than {allowed:.3} s apart (a control message was held back on the path, or an end stalled): their figures are not of one window"
        )
    })
}

/// Most bytes a connection can hold between a sender's count and its
/// receiver's: both ends' send and receive buffers. With --sockbuf both
/// ends fix them (the kernel doubles the value and autotuning stops): 8 x
/// sockbuf. Without it the endpoint's limits are not known here, so this
/// host's autotuning maxima stand for both ends.
fn in_flight_per_conn(sockbuf: Option<u64>) -> u64 {
    if let Some(b) = sockbuf {
        return b.saturating_mul(8);
    }
    let max = |f: &str| -> u64 {
        std::fs::read_to_string(format!("/proc/sys/net/ipv4/{f}"))
            .ok()
            .and_then(|s| s.split_whitespace().nth(2)?.parse().ok())
            .unwrap_or(32 << 20)
    };
    2 * (max("tcp_wmem") + max("tcp_rmem"))
}

/// Every byte a receiver counted was sent: a receiver that counted more
/// than its sender wrote, beyond what the connections could hold and what
/// the windows' different lengths allow, read bytes nobody sent (a relay
/// on the data path that repeated them). Checked both ways.
fn received_beyond_sent(
    spec: &ClientSpec,
    out: &EngineOut,
    mine_s: f64,
    report: &ServerReport,
    report_after_s: f64,
) -> Option<String> {
    if spec.kind != TestKind::Stream {
        return None;
    }
    let per_conn = in_flight_per_conn(spec.sockbuf) as f64;
    // The two windows' edges are apart by the control messages' latency:
    // the endpoint closed its window at most `report_after_s` after this
    // host did (its report came then), and opened it at most that less
    // the difference of the windows' lengths after this host opened its
    // own. Bytes moved in those gaps are counted at one end only.
    let close_gap = report_after_s.max(0.0);
    let open_gap = (close_gap - (report.window_s - mine_s)).max(0.0);
    let edges = close_gap + open_gap;
    let client_rx = out.rx_stats();
    let ways = [
        (
            "the endpoint",
            report.rx,
            out.tx_bytes(),
            "this host",
            mine_s,
            report.window_s,
        ),
        (
            "this host",
            client_rx,
            report.tx_bytes,
            "the endpoint",
            report.window_s,
            mine_s,
        ),
    ];
    for (receiver, got, sent, sender, sender_s, receiver_s) in ways {
        if got.conns == 0 {
            continue;
        }
        let rate = |bytes: u64, s: f64| if s > 0.0 { bytes as f64 / s } else { 0.0 };
        let rate = rate(sent, sender_s).max(rate(got.sum, receiver_s));
        let allowed = per_conn * got.conns as f64 + rate * edges;
        let excess = got.sum as f64 - sent as f64;
        if excess > allowed {
            return Some(format!(
                "the test is void: {receiver} received {} bytes in its window where {sender} sent {sent} in its own, {excess:.0} more than the connections could hold ({allowed:.0}): bytes nobody sent were counted (something on the data path repeated them)",
                got.sum
            ));
        }
    }
    None
}

/// Per-connection rates in Mbit/s, each end's connections over that end's
/// window: how many, the slowest, the fastest, and Jain's fairness.
pub(crate) fn conn_rates(ends: [(&ByteStats, f64); 2]) -> (f64, f64, f64, Option<f64>) {
    let (mut n, mut sum, mut sum_sq, mut min, mut max) = (0.0, 0.0, 0.0, f64::INFINITY, 0f64);
    for (b, window_s) in ends.into_iter().filter(|(b, w)| b.conns > 0 && *w > 0.0) {
        let (k, c) = (8.0 / 1e6 / window_s, b.conns as f64);
        (n, sum, sum_sq) = (n + c, sum + b.sum as f64 * k, sum_sq + b.sum_sq * k * k);
        (min, max) = (min.min(b.min as f64 * k), max.max(b.max as f64 * k));
    }
    (n, min, max, jain_fairness(n, sum, sum_sq))
}

/// `bytes` over `window_s` in Mbit/s; None without a window.
pub(crate) fn mbit_s(bytes: u64, window_s: f64) -> Option<f64> {
    (window_s > 0.0).then(|| bytes as f64 * 8.0 / 1e6 / window_s)
}

fn net_metrics(
    spec: &ClientSpec,
    out: &EngineOut,
    window_s: f64,
    report: &ServerReport,
    connect_s: f64,
) -> Metrics {
    let mut m = Metrics::new();
    let mut put = |k: &str, v: Option<f64>| m.extend(v.map(|v| (k.to_string(), v)));
    put(mn::WINDOW_S, Some(window_s));
    put(mn::ERRORS, Some((out.errors + report.errors) as f64));
    put(mn::CONNECT_S, Some(connect_s));
    match spec.kind {
        TestKind::Stream => {
            // Goodput is what the receiving end counted in its window.
            let client_rx = out.rx_stats();
            let (n, min, max, fairness) =
                conn_rates([(&report.rx, report.window_s), (&client_rx, window_s)]);
            let tx = mbit_s(report.rx.sum, report.window_s).filter(|_| report.rx.conns > 0);
            let rx = mbit_s(client_rx.sum, window_s).filter(|_| client_rx.conns > 0);
            put(mn::TX_MBIT_S, tx);
            put(mn::RX_MBIT_S, rx);
            put(mn::MBIT_S, Some(tx.unwrap_or(0.0) + rx.unwrap_or(0.0)));
            // What the senders wrote, each end over its own window: the
            // check that both ends' counts agree.
            let sent = mbit_s(out.tx_bytes(), window_s).unwrap_or(0.0)
                + mbit_s(report.tx_bytes, report.window_s).unwrap_or(0.0);
            put(mn::SENT_MBIT_S, Some(sent));
            put(mn::CONNS, Some(n));
            put(mn::CONN_MBIT_S_MIN, (n > 0.0).then_some(min));
            put(mn::CONN_MBIT_S_MAX, (n > 0.0).then_some(max));
            put(mn::FAIRNESS, fairness);
            let retransmits = out.retransmits + report.retransmits;
            put(mn::RETRANSMITS, Some(retransmits as f64));
            let srtts: Vec<f64> = [out.srtt_us, report.srtt_us]
                .into_iter()
                .flatten()
                .collect();
            let srtt = srtts.iter().sum::<f64>() / srtts.len() as f64;
            put(mn::SRTT_US, (!srtts.is_empty()).then_some(srtt));
        }
        TestKind::Rr | TestKind::Udp | TestKind::Crr | TestKind::Cc => {
            put(mn::CONNS, Some(spec.conns as f64));
            put(
                mn::TRANS_S,
                (window_s > 0.0).then(|| out.transactions as f64 / window_s),
            );
            write_latency_metrics(&out.rtt, "rtt", &mut m);
        }
    }
    m
}

pub(crate) fn spec_json(spec: &ClientSpec, addr: &SocketAddr, threads: usize) -> Spec {
    let net = iotoll_model::spec::NetSpec {
        peer: addr.to_string(),
        conns: spec.conns,
        sockbuf: spec.sockbuf,
        nodelay: spec.nodelay,
        bind: spec.bind.iter().map(|a| a.to_string()).collect(),
        ramp_s: spec.ramp.as_secs_f64(),
        time_s: spec.time.as_secs_f64(),
        threads,
        auth: spec.key.is_some(),
        tls: spec.tls.map(|c| c.name().to_string()),
        verify: spec.verify,
    };
    spec.params().spec(net)
}

pub(crate) fn tls_disclosure(n: &Negotiated, keyed: bool) -> iotoll_model::spec::TlsDisclosure {
    iotoll_model::spec::TlsDisclosure {
        protocol: "TLS 1.3".into(),
        cipher_suite: n.cipher.suite_name().into(),
        key_exchange: n.group.clone(),
        implementation: tls::IMPLEMENTATION.into(),
        certificate: if keyed {
            "the endpoint's own for this test (ECDSA P-256, self-signed), pinned by the client through the control connection, sealed with the pre-shared key"
        } else {
            "the endpoint's own for this test (ECDSA P-256, self-signed), pinned by the client through the control connection, unauthenticated (no --auth-key): anyone on the path could have swapped it"
        }
        .into(),
        handshake_s: n.handshake_s,
        cpu_aes: iotoll_probe::sysinfo::cpu_flag("aes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::Key;
    use crate::client::ends::unauthenticated_note;

    #[test]
    fn an_unkeyed_result_says_the_path_could_forge_it() {
        let far: SocketAddr = "192.0.2.10:7575".parse().unwrap();
        let spec = ClientSpec::default();
        let note = unauthenticated_note(&spec, &far).unwrap();
        assert!(note.contains("no --auth-key") && !note.contains("certificate"));
        let tls = ClientSpec {
            tls: Some(crate::tls::DEFAULT_CIPHER),
            ..ClientSpec::default()
        };
        assert!(unauthenticated_note(&tls, &far)
            .unwrap()
            .contains("certificate"));
        let keyed = ClientSpec {
            key: Some(Key::from_bytes(b"0123456789abcdef")),
            ..ClientSpec::default()
        };
        assert_eq!(unauthenticated_note(&keyed, &far), None);
        // Loopback has no path to stand on.
        let lo: SocketAddr = "127.0.0.1:7575".parse().unwrap();
        assert_eq!(unauthenticated_note(&spec, &lo), None);
    }
}
