//! A network test's window on one agent, whatever its load (TCP engines,
//! UDP senders and receivers): the load runs from START, the CPU window
//! opens at RECORD ON and closes at RECORD OFF on the phase's edges, and
//! the load's counts, the interfaces' and the seconds of what arrived go
//! into the report.

use crate::engines::{Engines, EnginesOut};
use crate::wire::{self, AgentReport, PairBytes, PairPort, PairRr, PairSlot};
use iotoll_net::engine::EngineOut;
use iotoll_net::proto::TestParams;
use iotoll_net::TestKind;
use iotoll_probe::CpuWindow;
use iotoll_run::{Counting, HostClock, Phase, PhaseCell, SeriesRecorder, Silent};
use std::net::SocketAddr;
use std::os::fd::OwnedFd;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What runs in a network test's window on this agent.
pub(crate) trait Load {
    /// Running totals (operations, bytes) of what this host received.
    fn received(&self) -> (u64, u64);
    /// What its seconds count: bytes, unless it says otherwise.
    fn counting(&self) -> Counting {
        Counting::NetBytes
    }
    /// Stops the load and writes what it counted into `report`; returns
    /// the sockets to keep open until the test is released.
    fn finish(self, report: &mut AgentReport) -> Vec<OwnedFd>;
}

/// A UDP or connection-rate test's pairs on this agent, from PREPARE to
/// START: each pair it serves with a socket of its own (`S`), each pair it
/// is the client of with what it opened for it (`C`; a server's client
/// pairs learn their servers' ports at GATHER).
pub(crate) struct Placed<S, C> {
    pub params: TestParams,
    pub served: Vec<(PairSlot, S)>,
    pub clients: Vec<(PairSlot, C)>,
}

impl<S, C> Placed<S, C> {
    /// The port of each pair it serves, from its socket's address.
    pub fn ports(
        &self,
        local: impl Fn(&S) -> std::io::Result<SocketAddr>,
    ) -> Result<Vec<PairPort>, String> {
        (self.served.iter())
            .map(|(s, sock)| {
                let port = local(sock)
                    .map_err(|e| format!("the data port of pair {}: {e}", s.pair + 1))?
                    .port();
                Ok(PairPort { pair: s.pair, port })
            })
            .collect()
    }

    /// GATHER: the client pairs of a host that also serves, with their
    /// servers' ports now known.
    pub fn gather(&mut self, given: Vec<PairSlot>) -> Result<(), String> {
        PairSlot::same_pairs(&given, self.clients.iter().map(|c| &c.0))?;
        for ((slot, _), g) in self.clients.iter_mut().zip(given) {
            *slot = g;
        }
        Ok(())
    }
}

/// A client pair's server, once its port is known (`port` names it).
pub(crate) fn known_server(s: &PairSlot, port: &str) -> Result<SocketAddr, String> {
    (s.server.filter(|a| a.port() != 0))
        .ok_or_else(|| format!("pair {}: its server's {port} is not known", s.pair + 1))
}

/// A pair's engine could not start.
pub(crate) fn cannot_start(pair: u32, e: std::io::Error) -> String {
    format!("pair {}: cannot start: {e}", pair + 1)
}

/// A stream or request/response test's engines, with the pairs in their
/// connection order (served, then client) and their connection counts.
pub(crate) struct TcpLoad {
    pub engines: Engines,
    pub kind: TestKind,
    pub pairs: Vec<PairSlot>,
    pub sizes: Vec<usize>,
    pub client_pairs: Vec<PairSlot>,
}

impl Load for TcpLoad {
    fn received(&self) -> (u64, u64) {
        self.engines.received()
    }

    /// A request/response test's seconds are its transactions.
    fn counting(&self) -> Counting {
        match self.kind {
            TestKind::Rr => Counting::Transactions,
            _ => Counting::NetBytes,
        }
    }

    fn finish(self, report: &mut AgentReport) -> Vec<OwnedFd> {
        let EnginesOut { out, per_pair } = self.engines.join();
        report.pairs = pair_bytes(&self.pairs, &self.sizes, &out);
        if self.kind == TestKind::Rr {
            report.rr = pair_rr(&self.client_pairs, per_pair);
        }
        report.errors = out.errors;
        report.first_error = out.first_error.clone().or(out.panic.clone());
        report.retransmits = out.retransmits;
        out.sockets
    }
}

/// The interfaces' counters between two readings (loopback left out).
pub(crate) fn iface_delta(
    before: &[iotoll_model::IfaceFigures],
    after: &[iotoll_model::IfaceFigures],
) -> Vec<iotoll_model::IfaceFigures> {
    (after.iter())
        .filter(|a| a.name != "lo")
        .filter_map(|a| {
            let b = before.iter().find(|b| b.name == a.name)?;
            Some(iotoll_model::IfaceFigures {
                name: a.name.clone(),
                rx_bytes: a.rx_bytes.saturating_sub(b.rx_bytes),
                rx_packets: a.rx_packets.saturating_sub(b.rx_packets),
                tx_bytes: a.tx_bytes.saturating_sub(b.tx_bytes),
                tx_packets: a.tx_packets.saturating_sub(b.tx_packets),
                ..Default::default()
            })
        })
        .collect()
}

/// The window over a started `load` whose phase is `phase`, from `on` to
/// `off` (earlier if interrupted); `threads` it runs.
pub(crate) fn run(
    load: impl Load,
    phase: Arc<PhaseCell>,
    threads: usize,
    (on, off): (Instant, Instant),
    interrupt: &AtomicBool,
    held: &Mutex<Vec<OwnedFd>>,
    rt_edges: bool,
) -> Result<AgentReport, String> {
    let clock = HostClock;
    // What arrived, second by second: the console adds the hosts' up.
    let series = std::cell::RefCell::new(SeriesRecorder::new(
        load.counting(),
        on.saturating_duration_since(Instant::now()) + off.saturating_duration_since(on),
        Instant::now(),
    ));
    let tick = || {
        let mut s = series.borrow_mut();
        s.poll(Instant::now(), phase.get(), || load.received(), &mut Silent);
        Some(Instant::now() + Duration::from_millis(50))
    };
    // An edge: the phase changes, and the counts and the wall clock are
    // read at that instant (what arrives while the window's own work goes
    // on after it is not in the window); then, at normal priority (other
    // agents' edges on these CPUs come first), the interfaces' counters.
    let mark = |to: Phase| {
        phase.set(to);
        let at = (Instant::now(), load.received(), wire::now_ns());
        iotoll_probe::affinity::normal_priority();
        (at, iotoll_probe::sysinfo::iface_counters())
    };
    // The series' seconds end at the instants the phase changed.
    let edge = |(at, counts, _): (Instant, (u64, u64), i64), before: Phase| {
        let mut s = series.borrow_mut();
        s.edge(at, before, || counts, &mut Silent);
    };
    let mut report = AgentReport {
        threads: threads as u32,
        ..AgentReport::default()
    };
    let mut opened = None;
    let window = CpuWindow::start_after(
        || iotoll_run::wait_until(&clock, on, interrupt, tick),
        || opened = Some(mark(Phase::Measure)),
    );
    if rt_edges {
        let _ = iotoll_probe::affinity::realtime_edges();
    }
    let (window, (on_at, before)) = match (window, opened) {
        (Ok(Some(w)), Some(opened)) => (w, opened),
        (Err(e), _) => {
            phase.set(Phase::Stop);
            load.finish(&mut AgentReport::default());
            return Err(format!("CPU window: {e}"));
        }
        _ => {
            // Stopped in the ramp-up: no window.
            report.interrupted = true;
            phase.set(Phase::Stop);
            hold(held, load.finish(&mut AgentReport::default()));
            return Ok(report);
        }
    };
    edge(on_at, Phase::Ramp);
    let completed = iotoll_run::wait_until(&clock, off, interrupt, tick);
    let mut closing = None;
    let closed = window.finish_with(|| closing = Some(mark(Phase::Stop)));
    let (off_at, after) = closing.unwrap_or_else(|| mark(Phase::Stop));
    edge(off_at, Phase::Measure);
    report.series = series.into_inner().into_points();
    let sockets = load.finish(&mut report);
    report.on_ns = Some(on_at.2);
    report.off_ns = Some(off_at.2);
    report.window_s = closed.window_s;
    report.cpu_error = closed.report.as_ref().err().map(|e| e.to_string());
    report.cpu = closed.report.ok();
    report.ifaces = iface_delta(&before, &after);
    report.interrupted = !completed;
    // The sockets stay open until every end has closed its window.
    hold(held, sockets);
    Ok(report)
}

/// Keeps a test's sockets open until it is released.
pub(crate) fn hold(held: &Mutex<Vec<OwnedFd>>, sockets: Vec<OwnedFd>) {
    held.lock()
        .unwrap_or_else(|p| p.into_inner())
        .extend(sockets);
}

/// A request/response client's round trips per client pair (one engine
/// each).
fn pair_rr(
    pairs: &[PairSlot],
    per_engine: Vec<(u64, hdrhistogram::Histogram<u64>)>,
) -> Vec<PairRr> {
    if per_engine.len() != pairs.len() {
        return Vec::new();
    }
    (pairs.iter().zip(per_engine))
        .map(|(p, (transactions, h))| PairRr {
            pair: p.pair,
            transactions,
            rtt_hist: crate::histwire::encode(&h),
        })
        .collect()
}

/// Each pair's bytes in the window; `sizes` are the pairs' connection
/// counts, in the engine's order.
fn pair_bytes(pairs: &[PairSlot], sizes: &[usize], out: &EngineOut) -> Vec<PairBytes> {
    let mut at = 0;
    (pairs.iter().zip(sizes))
        .map(|(p, n)| {
            let all = out.per_conn.len();
            let mine = &out.per_conn[at.min(all)..(at + n).min(all)];
            at += n;
            PairBytes {
                pair: p.pair,
                conns: *n as u32,
                rx: mine.iter().map(|(_, c)| c.rx).sum(),
                tx: mine.iter().map(|(_, c)| c.tx).sum(),
            }
        })
        .collect()
}
