//! A crr/cc test's result: both ends' counts merged, failures named, and
//! the checks that the ends agree.

use super::engine::Out;
use super::{time_wait_note, Cause};
use crate::client::drive::Window;
use crate::client::result::{kind, spec_json, windows_disagree};
use crate::proto::{CrrEnd, ServerReport};
use crate::{ClientSpec, NetError, TestKind};
use iotoll_model::metrics as mn;
use iotoll_model::{Metrics, ResultDoc, SeriesPoint};
use iotoll_run::{latency_report, write_latency_metrics};
use std::net::{IpAddr, SocketAddr};

/// What the endpoint served: requests answered (crr), connections accepted (cc).
fn served(kind: TestKind, end: &CrrEnd) -> u64 {
    match kind {
        TestKind::Crr => end.responded,
        _ => end.accepted,
    }
}

/// Why both ends' totals (ramp-up and drain included) cannot be the same
/// test: the endpoint answered fewer requests than this host completed, or
/// more than it completed and failed; or it saw foreign connections.
/// A cc connection closed with a reset (`--linger0`) may be reset before
/// the endpoint accepts it (the kernel then drops it from the accept
/// queue): there the endpoint may serve fewer than this host completed.
/// The check is over the whole test (the endpoint counts no window of its
/// own per connection); the message gives the window's part too
/// (`window`: completed and failed), which the result's figures
/// (`failures` among them) are.
pub fn totals_disagree(
    kind: TestKind,
    linger0: bool,
    (done, failed): (u64, u64),
    window: (u64, u64),
    end: &CrrEnd,
) -> Option<String> {
    let served = served(kind, end);
    let may_miss = kind == TestKind::Cc && linger0;
    if (served < done && !may_miss) || served > done + failed {
        return Some(format!(
            "the ends disagree over the whole test, ramp-up and drain included: this host completed {done} connection(s) and saw {failed} fail, the endpoint served {served} (of these, the window's, which the result's figures count: {} completed, {} failed)",
            window.0, window.1
        ));
    }
    (end.bad_token > 0).then(|| {
        format!(
            "the endpoint dropped {} connection(s) to this test's port without its token: something else connected there",
            end.bad_token
        )
    })
}

/// How much faster than the window the ramp-up ran before it is said.
const FELL: f64 = 1.5;

/// A note when the ramp-up ran well above the window's `rate` (its
/// seconds' mean): closed connections filled the port range with TIME_WAIT
/// before the window opened, and the window measures the rate port reuse
/// allows. A longer ramp-up does not change that; `--linger0` does.
pub fn fell_at_window(points: &[SeriesPoint], rate: f64) -> Option<String> {
    let (mut n, mut span, mut prev) = (0.0, 0.0, 0.0);
    for p in points.iter().take_while(|p| p.phase == "ramp") {
        let dt = p.t_s - prev;
        (n, span, prev) = (n + p.trans_s.unwrap_or(0.0) * dt, span + dt, p.t_s);
    }
    let ramp = (span > 0.0).then(|| n / span)?;
    (ramp > FELL * rate).then(|| {
        format!("the ramp-up ran at {ramp:.0} connections/s and the window at {rate:.0}: TIME_WAIT filled the local port range before the window opened, so the window measures the rate at which the kernel frees or reuses ports (a longer ramp-up measures the same; --linger0 measures without TIME_WAIT)")
    })
}

pub(super) fn result_doc(
    spec: &ClientSpec,
    addr: &SocketAddr,
    local_ip: IpAddr,
    mut m: Window<Out>,
) -> Result<ResultDoc, NetError> {
    let ends = m.ends(spec, addr, local_ip);
    let window_s = m.closed.window_s;
    let rate = (window_s > 0.0).then(|| m.out.window_done as f64 / window_s);
    let mut notes = ends.notes.clone();
    if let Some(f) = m.out.failures.describe() {
        let first = m.out.first_error.as_deref().unwrap_or("?");
        notes.push(format!(
            "failed connections in the window: {f}; first: {first}"
        ));
    }
    if m.out.failures.get(Cause::PortsExhausted) > 0 {
        notes.push("the local port range ran out (EADDRNOTAVAIL): TIME_WAIT holds the ports; --linger0 closes with a reset and leaves none".into());
    }
    if !spec.linger0 {
        notes.push(time_wait_note(rate.unwrap_or(0.0)));
        notes.extend(rate.and_then(|r| fell_at_window(&m.series, r)));
    }
    if m.report.errors > 0 {
        let first = m.report.first_error.as_deref().unwrap_or("?");
        notes.push(format!(
            "the endpoint saw {} connection(s) fail in its window; first: {first}",
            m.report.errors
        ));
    }
    let failure = match &m.report.crr {
        Some(end) => {
            let missed = m.out.total_done.saturating_sub(served(spec.kind, end));
            if missed > 0 && spec.kind == TestKind::Cc && spec.linger0 {
                notes.push(format!("{missed} connection(s) this host completed were reset (--linger0) before the endpoint accepted them: the kernel dropped them from its accept queue"));
            }
            totals_disagree(
                spec.kind,
                spec.linger0,
                (m.out.total_done, m.out.total_failed),
                (m.out.window_done, m.out.failures.total()),
                end,
            )
        }
        None => {
            Some("the endpoint's report has no connection counts: is it an older iotoll?".into())
        }
    }
    .or_else(|| windows_disagree(window_s, m.report.window_s))
    .or_else(|| {
        (m.out.window_done == 0 && m.completed)
            .then(|| "no connection completed in the window".to_string())
    });
    // The latency section is the transaction's for crr, the connect's for cc.
    let latency = match spec.kind {
        TestKind::Crr => latency_report(&m.out.trans),
        _ => latency_report(&m.out.connect),
    };
    let doc = ResultDoc {
        config: spec.config.clone(),
        metrics: metrics(spec, &m.out, &m.report, window_s),
        latency,
        notes,
        ..ResultDoc::new(kind(spec.kind), spec_json(spec, addr, spec.conns as usize))
    };
    ends.document(m, doc, failure, None)
}

/// Both ends' counts, and this host's latencies and failures by cause
/// (the CPU figures are the ends', `Ends::cpu`).
fn metrics(spec: &ClientSpec, out: &Out, report: &ServerReport, window_s: f64) -> Metrics {
    let rate = (window_s > 0.0).then(|| out.window_done as f64 / window_s);
    let mut metrics = Metrics::new();
    let mut put = |k: &str, v: f64| metrics.insert(k.to_string(), v);
    put(mn::WINDOW_S, window_s);
    put(mn::CONNS, f64::from(spec.conns));
    if let Some(r) = rate {
        put(mn::CONN_S, r);
    }
    if report.window_s > 0.0 {
        put(
            mn::SERVED_CONN_S,
            report.transactions as f64 / report.window_s,
        );
    }
    put(mn::FAILURES, out.failures.total() as f64);
    for c in Cause::ALL {
        put(
            &format!("failures_{}", c.name()),
            out.failures.get(c) as f64,
        );
    }
    put(mn::ERRORS, (out.failures.total() + report.errors) as f64);
    write_latency_metrics(&out.connect, "connect", &mut metrics);
    write_latency_metrics(&out.trans, "trans", &mut metrics);
    metrics
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ramp-up that ran well above the window is said (TIME_WAIT filled
    /// the ports), one near it is not.
    #[test]
    fn a_rate_that_fell_at_the_window_is_said() {
        let point = |t_s: f64, phase: &str, trans_s: f64| SeriesPoint {
            t_s,
            phase: phase.into(),
            trans_s: Some(trans_s),
            iops: None,
            mb_s: None,
            mbit_s: None,
            cpu_pct: None,
        };
        let points = [
            point(0.5, "ramp", 20_000.0),
            point(1.0, "ramp", 10_000.0),
            point(2.0, "measure", 640.0),
        ];
        let m = fell_at_window(&points, 640.0).unwrap();
        assert!(
            m.contains("ramp-up ran at 15000 connections/s and the window at 640"),
            "{m}"
        );
        assert_eq!(fell_at_window(&points, 12_000.0), None);
        assert_eq!(fell_at_window(&points[2..], 640.0), None);
    }

    #[test]
    fn both_ends_totals_must_agree() {
        let end = |accepted, responded| CrrEnd {
            accepted,
            responded,
            bad_token: 0,
        };
        // The window's part: 90 % of the completed, one failure.
        let totals_disagree = |k, l, done: u64, failed: u64, end: &CrrEnd| {
            totals_disagree(k, l, (done, failed), (done * 9 / 10, failed.min(1)), end)
        };
        // (kind, --linger0, completed, failed, the endpoint's counts, agree)
        for (kind, linger0, done, failed, served, agree) in [
            (TestKind::Crr, false, 100, 0, end(100, 100), true),
            // A response sent whose reading failed at the client: allowed.
            (TestKind::Crr, false, 99, 1, end(100, 100), true),
            (TestKind::Crr, false, 100, 0, end(100, 99), false),
            (TestKind::Crr, false, 90, 1, end(100, 100), false),
            (TestKind::Cc, false, 50, 0, end(50, 0), true),
            (TestKind::Cc, false, 50, 0, end(49, 0), false),
            // With resets, a cc connection can be gone before its accept.
            (TestKind::Cc, true, 50, 0, end(49, 0), true),
            (TestKind::Cc, true, 50, 0, end(51, 0), false),
        ] {
            let r = totals_disagree(kind, linger0, done, failed, &served);
            assert_eq!(
                r.is_none(),
                agree,
                "{kind:?} {done} {failed} {served:?}: {r:?}"
            );
        }
        // The message says which counts are the whole test's and gives
        // the window's, which the result's table shows.
        let m = totals_disagree(TestKind::Crr, false, 100, 3, &end(110, 110)).unwrap();
        assert!(m.contains("over the whole test"), "{m}");
        assert!(
            m.contains("completed 100 connection(s) and saw 3 fail"),
            "{m}"
        );
        assert!(
            m.contains("the window's, which the result's figures count: 90 completed, 1 failed"),
            "{m}"
        );
        let foreign = CrrEnd {
            bad_token: 2,
            ..end(10, 10)
        };
        assert!(totals_disagree(TestKind::Crr, false, 10, 0, &foreign)
            .unwrap()
            .contains("without its token"));
    }
}
