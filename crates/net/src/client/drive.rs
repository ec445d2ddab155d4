//! The client's window, one driver for every kind of test: the ramp-up,
//! the window opened at both ends, the wait, the window closed, the
//! traffic ended and the endpoint's report collected. The engines differ
//! only in how they count and how they stop.

use super::ends::Ends;
use super::ClientSpec;
use super::{endpoint_ended, proto_err, recv, unexpected};
use crate::proto::{Control, Msg, ServerReport};
use crate::NetError;
use iotoll_model::SeriesPoint;
use iotoll_probe::ClosedWindow;
use iotoll_run::{
    Clock, Counting, HostClock, Labels, Phase, PhaseCell, RunControl, SeriesRecorder,
};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// An engine the driver runs: its counts so far and its two ways to stop.
pub(crate) trait Driven {
    type Out;
    /// (operations, bytes) so far, as the series counts them.
    fn totals(&self) -> (u64, u64);
    /// Ends the traffic after the window (the phase is already `Stop`) and
    /// returns the counts; called after window end is sent, so what is in
    /// flight drains while the endpoint closes its own window.
    fn finish(self) -> Self::Out;
    /// Ends the traffic at once on an early exit: the counts are not wanted.
    fn abandon(self);
}

/// What the window measured at this end, and the endpoint's report.
pub(crate) struct Window<O> {
    pub(crate) started_at: String,
    pub(crate) completed: bool,
    pub(crate) closed: ClosedWindow,
    pub(crate) out: O,
    pub(crate) report: ServerReport,
    pub(crate) series: Vec<SeriesPoint>,
    /// Seconds from this host's window closing to the endpoint's report.
    pub(crate) report_after_s: f64,
}

impl<O> Window<O> {
    /// Both ends of the test `spec` ran against `addr` from `local_ip`
    /// ([`Ends::of`]).
    pub(crate) fn ends(&mut self, spec: &ClientSpec, addr: &SocketAddr, local_ip: IpAddr) -> Ends {
        Ends::of(
            spec,
            addr,
            local_ip,
            &mut self.closed,
            &self.report,
            self.completed,
        )
    }
}

/// What a test's window needs besides its engine.
pub(crate) struct Plan<'a> {
    /// Its ramp-up and time are the window's.
    pub(crate) spec: &'a ClientSpec,
    pub(crate) addr: &'a SocketAddr,
    pub(crate) counting: Counting,
    /// What the `--interval` lines' figures are.
    pub(crate) labels: Labels,
    pub(crate) phase: &'a Arc<PhaseCell>,
    /// How long the endpoint's report may take after the window: longer
    /// than the endpoint waits before it gives up on the test, so the
    /// client hears why rather than timing out first.
    pub(crate) report_wait: Duration,
}

/// Runs the ramp-up and the window at both ends, then collects the
/// endpoint's report.
pub(crate) fn drive<E: Driven>(
    plan: &Plan<'_>,
    ctl: &mut Control,
    engine: E,
    rc: &mut RunControl,
) -> Result<Window<E::Out>, NetError> {
    let (addr, phase, spec) = (plan.addr, plan.phase, plan.spec);
    let clock = HostClock;
    let mut series = SeriesRecorder::new(plan.counting, spec.ramp + spec.time, clock.now())
        .with_labels(plan.labels);
    // Each wait samples the series and watches the control connection: an
    // endpoint that closes it or speaks unasked has ended the test.
    let wait = |series: &mut SeriesRecorder, until, rc: &mut RunControl, ctl: &Control| {
        let go_on = || !ctl.peer_spoke();
        series.wait(&clock, until, rc, phase, || engine.totals(), go_on)
    };
    let ramp_end = series.t_run() + spec.ramp;
    if !wait(&mut series, ramp_end, rc, ctl) {
        phase.set(Phase::Stop);
        engine.abandon();
        if ctl.peer_spoke() {
            return Err(endpoint_ended(ctl, addr));
        }
        let _ = ctl.send(&Msg::Stop {});
        return Err(NetError::Interrupted("during ramp-up"));
    }
    let started_at = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    // The series' seconds start at the window's edge, and end at it: the
    // instants the phase changed (the window's own work after is not
    // measured time).
    let edge_at = std::cell::Cell::new((clock.now(), (0, 0)));
    let window = clock.open_window(|| {
        phase.set(Phase::Measure);
        edge_at.set((clock.now(), engine.totals()));
    })?;
    let (at, counts) = edge_at.get();
    series.edge(at, Phase::Ramp, || counts, rc.progress);
    ctl.send(&Msg::WindowStart {})
        .map_err(|e| proto_err(addr, "window start", e))?;
    let completed = wait(&mut series, clock.now() + spec.time, rc, ctl);
    let closed = clock.close_window(window, || {
        phase.set(Phase::Stop);
        edge_at.set((clock.now(), engine.totals()));
    });
    let (at, counts) = edge_at.get();
    series.edge(at, Phase::Measure, || counts, rc.progress);
    let window_closed = std::time::Instant::now();
    if !completed && ctl.peer_spoke() {
        engine.abandon();
        return Err(endpoint_ended(ctl, addr));
    }
    let ended = ctl
        .send(&Msg::WindowEnd {})
        .map_err(|e| proto_err(addr, "window end", e));
    // `out` keeps the data sockets open until the endpoint has reported.
    let out = engine.finish();
    ended?;
    let report = match recv(ctl, addr, "report", plan.report_wait)? {
        Msg::Report { report } => *report,
        other => return Err(unexpected(addr, "report", &other)),
    };
    // The endpoint closed its window after this host did and before its
    // report came: how much later, at most.
    let report_after_s = window_closed.elapsed().as_secs_f64();
    let _ = ctl.send(&Msg::Stop {});
    Ok(Window {
        started_at,
        completed,
        closed,
        out,
        report,
        series: series.into_points(),
        report_after_s,
    })
}
