//! The console: connects to every agent of a suite and drives each test
//! through Iometer's phases across them (docs/agents.md):
//!
//! - PREPARE: version and capability check, a 4-timestamp clock-offset
//!   probe per agent (the lowest-delay of [`PROBES`]), then each agent's
//!   work: files made, servers listening, clients' data connections open,
//!   servers holding every one. A refusal anywhere stops the test here,
//!   before any load runs.
//! - START: every agent starts its load (ramp-up) now; RECORD ON and OFF
//!   are instants the console chose, sent in each agent's own clock.
//! - COLLECT: each agent's report; then everything is released.
//!
//! Heartbeats run all along (crate::link). A host lost inside the test
//! aborts the others at once and makes the test invalid, the host named;
//! its figures are never aggregated as if it had been there.

use crate::checks;
use crate::link::{Event, Link};
use crate::wire::{
    self, AgentInfo, AgentReport, DiskOrder, FromAgent, PairSlot, Session, Side, ToAgent, Work,
};
use iotoll_model::metrics as mn;
use iotoll_model::{
    CpuReport, CpuSection, HostFigures, Kind, Metrics, PairFigures, ResultDoc, ResultStatus, Skew,
};
use iotoll_net::auth::Key;
use iotoll_net::proto::{Msg, TestParams};
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Clock-offset probes per agent and test; the one with the shortest
/// round trip is kept (its offset is the least disturbed).
pub const PROBES: usize = 8;
/// An agent that has not answered the handshake and PREPARE's first
/// questions in this long is unreachable.
pub const REACH: Duration = Duration::from_secs(5);
/// Once told to stop, agents have this long to report.
pub const STOP_WAIT: Duration = Duration::from_secs(2);

/// A host of the run, as the console reaches it.
#[derive(Debug, Clone)]
pub struct HostSpec {
    pub name: String,
    /// Its agent's control address.
    pub address: SocketAddr,
    /// Addresses of its adapters that data connections to it are spread
    /// over (pair k goes to `data[k % len]`); empty: the control address.
    pub data: Vec<IpAddr>,
}

#[derive(Debug, thiserror::Error)]
pub enum ConsoleError {
    /// A host cannot take part (unreachable, incompatible, refused the
    /// work): found before any load started.
    #[error("host {host}: {msg}")]
    Host { host: String, msg: String },
    /// A host was lost while the load ran: the test is invalid.
    #[error("host {host} was lost during the test ({msg}); the test is invalid and the other hosts were stopped")]
    Lost { host: String, msg: String },
    #[error("interrupted")]
    Interrupted,
    #[error("{0}")]
    Invalid(String),
}

impl ConsoleError {
    pub fn host(&self) -> Option<&str> {
        match self {
            ConsoleError::Host { host, .. } | ConsoleError::Lost { host, .. } => Some(host),
            _ => None,
        }
    }

    fn host_err(host: &str, msg: impl Into<String>) -> ConsoleError {
        ConsoleError::Host {
            host: host.to_string(),
            msg: msg.into(),
        }
    }
}

/// One connected agent.
struct Agent {
    link: Link<FromAgent>,
    info: AgentInfo,
}

/// A clock offset: the agent's wall clock minus the console's, with the
/// round trip of the probe it came from (its uncertainty is half that).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Offset {
    pub offset_ns: i64,
    pub rtt_ns: i64,
}

/// The NTP-style estimate from one probe's four timestamps: t1 sent (the
/// console's clock), t2 received and t3 answered (the agent's), t4 back.
/// None when they cannot come from one probe (the agent answered before
/// it was asked, or held the probe longer than the round trip) or the
/// offset is beyond i64: an agent's figures are never trusted to fit.
pub fn offset_of(t1: i64, t2: i64, t3: i64, t4: i64) -> Option<Offset> {
    let (t1, t2, t3, t4) = (t1 as i128, t2 as i128, t3 as i128, t4 as i128);
    let (round, held) = (t4 - t1, t3 - t2);
    if held < 0 || held > round.max(0) {
        return None;
    }
    Some(Offset {
        offset_ns: i64::try_from(((t2 - t1) + (t3 - t4)) / 2).ok()?,
        rtt_ns: i64::try_from(round - held).ok()?,
    })
}

pub struct Console {
    hosts: Vec<HostSpec>,
    key: Option<Key>,
    agents: Vec<Option<Agent>>,
    next_test: u64,
    record_on: Option<i64>,
}

impl Console {
    /// Connects to every host's agent at once (each within [`REACH`]) and
    /// checks its version. Every host that cannot take part is named.
    pub fn connect(hosts: Vec<HostSpec>, key: Option<Key>) -> Result<Console, ConsoleError> {
        let mut c = Console {
            agents: hosts.iter().map(|_| None).collect(),
            hosts,
            key,
            next_test: 0,
            record_on: None,
        };
        let all: Vec<usize> = (0..c.hosts.len()).collect();
        c.ensure(&all)?;
        Ok(c)
    }

    /// The console's wall clock (ns) at the last test's RECORD ON.
    pub fn last_record_on(&self) -> Option<i64> {
        self.record_on
    }

    pub fn hosts(&self) -> &[HostSpec] {
        &self.hosts
    }

    fn index(&self, name: &str) -> Result<usize, ConsoleError> {
        (self.hosts.iter().position(|h| h.name == name))
            .ok_or_else(|| ConsoleError::Invalid(format!("no host named '{name}' in this run")))
    }

    /// What a connected agent said about itself.
    pub fn info(&self, name: &str) -> Option<&AgentInfo> {
        let i = self.index(name).ok()?;
        self.agents[i].as_ref().map(|a| &a.info)
    }

    /// (Re)connects the agents of `which` that are not connected, in
    /// parallel; the first failure (by host order) is the error.
    fn ensure(&mut self, which: &[usize]) -> Result<(), ConsoleError> {
        let need: Vec<usize> = (which.iter().copied())
            .filter(|&i| self.agents[i].as_ref().is_none_or(|a| a.link.lost()))
            .collect();
        let results: Vec<(usize, Result<Agent, String>)> = std::thread::scope(|s| {
            let handles: Vec<_> = (need.iter())
                .map(|&i| {
                    let (h, key) = (&self.hosts[i], self.key.as_ref());
                    (i, s.spawn(move || reach(h, key)))
                })
                .collect();
            (handles.into_iter())
                .map(|(i, h)| {
                    let r = h
                        .join()
                        .unwrap_or_else(|_| Err("connection thread panicked".into()));
                    (i, r)
                })
                .collect()
        });
        let mut first = None;
        for (i, r) in results {
            match r {
                Ok(a) => self.agents[i] = Some(a),
                Err(msg) => {
                    self.agents[i] = None;
                    first = first.or(Some(ConsoleError::host_err(&self.hosts[i].name, msg)));
                }
            }
        }
        first.map_or(Ok(()), Err)
    }

    /// Says goodbye to every agent.
    pub fn close(&mut self) {
        for a in self.agents.iter_mut().flatten() {
            a.link.send(&ToAgent::Bye {});
            a.link.close();
        }
        self.agents.iter_mut().for_each(|a| *a = None);
    }
}

impl Drop for Console {
    fn drop(&mut self) {
        self.close();
    }
}

/// Connects, authenticates, opens the console session, asks who the agent
/// is and checks it can work with this console; all within [`REACH`].
fn reach(h: &HostSpec, key: Option<&Key>) -> Result<Agent, String> {
    let (tx, rx) = std::sync::mpsc::channel();
    let (addr, key2) = (h.address, key.cloned());
    // The handshake has its own timeouts (5 s to connect, 10 s per
    // message); the console gives up at REACH whatever they say.
    std::thread::spawn(move || {
        let _ = tx.send(open_session(addr, key2.as_ref()));
    });
    let link = match rx.recv_timeout(REACH) {
        Ok(r) => r?,
        Err(_) => {
            return Err(format!(
                "agent at {} unreachable: no answer within {} s",
                h.address,
                REACH.as_secs()
            ))
        }
    };
    link.send(&ToAgent::Info {});
    let deadline = Instant::now() + REACH;
    let info = loop {
        match wait_msg(&link, deadline)? {
            FromAgent::Info { info } => break *info,
            FromAgent::Error { msg, .. } => return Err(format!("agent at {}: {msg}", h.address)),
            _ => {}
        }
    };
    compatible(&info)?;
    if info.cpus == 0 || info.cpus > checks::CPUS_MAX {
        return Err(format!(
            "agent at {} says it has {} CPUs: it is not what it says",
            h.address, info.cpus
        ));
    }
    Ok(Agent { link, info })
}

fn open_session(addr: SocketAddr, key: Option<&Key>) -> Result<Link<FromAgent>, String> {
    let hs = iotoll_net::client::handshake(&addr, key).map_err(|e| e.to_string())?;
    let mut ctl = hs.ctl;
    ctl.send(&Msg::Console {
        proto: wire::AGENT_PROTO,
    })
    .map_err(|e| format!("{addr}: {e}"))?;
    let session = Session::new(key, &hs.nonces, Side::Console);
    // An endpoint that is not an agent (`net serve`, or an iotoll from
    // before agents) answers with a plain protocol error: say so. Peeked,
    // so an agent's first frame stays for the session.
    let _ = ctl
        .stream
        .set_read_timeout(Some(Duration::from_millis(300)));
    let mut buf = vec![0u8; 4096];
    if let Ok(n) = ctl.stream.peek(&mut buf) {
        let body = buf.get(4..n).unwrap_or_default();
        if let Ok(Msg::Error { msg }) = ctl.open_peeked(body) {
            return Err(if msg.contains("unknown variant `console`") {
                format!(
                    "{addr} runs an iotoll endpoint ({}) that predates agents: run `iotoll agent` {} there",
                    hs.version,
                    iotoll_model::VERSION
                )
            } else {
                format!("{addr}: {msg}")
            });
        }
    }
    let _ = ctl.stream.set_read_timeout(None);
    Link::start(ctl, session, ToAgent::Beat {}, |m, _, _| match m {
        FromAgent::Beat {} => None,
        m => Some(m),
    })
    .map_err(|e| format!("{addr}: {e}"))
}

/// Whether an agent's iotoll can take this console's orders: the same
/// agent protocol, and the same major.minor version (0.x releases change
/// the protocol's messages).
fn compatible(info: &AgentInfo) -> Result<(), String> {
    let mine = iotoll_model::VERSION;
    let series = |v: &str| v.split('.').take(2).collect::<Vec<_>>().join(".");
    if info.proto != wire::AGENT_PROTO || series(&info.version) != series(mine) {
        return Err(format!(
            "its agent runs iotoll {} (agent protocol {}), this console is iotoll {mine} (agent protocol {}): incompatible; run the same iotoll version on every host",
            info.version,
            info.proto,
            wire::AGENT_PROTO
        ));
    }
    Ok(())
}

/// The next message (beats are filtered out), or why none came by `deadline`.
fn wait_msg(link: &Link<FromAgent>, deadline: Instant) -> Result<FromAgent, String> {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err("no answer in time".into());
        }
        match link.rx.recv_timeout(left.min(Duration::from_millis(100))) {
            Ok(Event::Msg(m, _)) => return Ok(m),
            Ok(Event::Closed(why)) => return Err(format!("connection lost: {why}")),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                if link.lost() {
                    return Err(format!(
                        "silent for {:.1} s",
                        link.silent_for().as_secs_f64()
                    ));
                }
            }
            Err(_) => return Err("connection lost".into()),
        }
    }
}

/// One host's part in a test.
struct Part {
    host: usize,
    role: &'static str,
    work: Work,
    offset: Offset,
    port: Option<u16>,
    report: Option<AgentReport>,
}

/// How a phase's wait for every part ended.
enum Waited {
    Done,
    /// (host index, why)
    Lost(usize, String),
    Refused(usize, String),
    Interrupted,
}

impl Console {
    fn agent(&self, i: usize) -> Option<&Agent> {
        self.agents[i].as_ref()
    }

    /// The clock offset of host `i` (PREPARE's probe).
    fn probe(&self, i: usize) -> Result<Offset, String> {
        let a = self.agent(i).ok_or("not connected")?;
        let mut best: Option<Offset> = None;
        let mut absurd = 0;
        for _ in 0..PROBES {
            let t1 = wire::now_ns();
            a.link.send(&ToAgent::Clock { t1 });
            let deadline = Instant::now() + REACH;
            loop {
                let left = deadline.saturating_duration_since(Instant::now());
                match a.link.rx.recv_timeout(left) {
                    // Only the answer to this probe (t1 is the console's).
                    Ok(Event::Msg(FromAgent::Clock { t1: echo, t2, t3 }, t4)) if echo == t1 => {
                        let Some(o) = offset_of(t1, t2, t3, t4) else {
                            absurd += 1;
                            break;
                        };
                        if best.is_none_or(|b| o.rtt_ns < b.rtt_ns) {
                            best = Some(o);
                        }
                        break;
                    }
                    Ok(Event::Msg(FromAgent::Error { msg, .. }, _)) => return Err(msg),
                    Ok(Event::Msg(..)) => {}
                    Ok(Event::Closed(why)) => return Err(format!("connection lost: {why}")),
                    Err(_) => return Err("no answer to the clock probe".into()),
                }
            }
        }
        match (best, absurd) {
            (Some(b), _) => Ok(b),
            (None, 0) => Err("no clock probe answered".into()),
            (None, _) => Err(
                "its answers to the clock probes are impossible (answered before asked, held longer than the round trip, or an offset beyond any clock)".into(),
            ),
        }
    }

    /// Waits until `on` has said "done" for every part `of` selects,
    /// handling what they send; watches every part for loss, and Ctrl-C.
    #[allow(clippy::too_many_arguments)]
    fn wait_all(
        &self,
        parts: &mut [Part],
        of: impl Fn(&Part) -> bool,
        test: u64,
        deadline: Instant,
        interrupted: &AtomicBool,
        mut on: impl FnMut(&mut Part, FromAgent) -> Result<bool, String>,
    ) -> Waited {
        let mut done: Vec<bool> = parts.iter().map(|p| !of(p)).collect();
        loop {
            if done.iter().all(|d| *d) {
                return Waited::Done;
            }
            if interrupted.load(Ordering::Relaxed) {
                return Waited::Interrupted;
            }
            let mut idle = true;
            for (k, p) in parts.iter_mut().enumerate() {
                let Some(a) = self.agent(p.host) else {
                    return Waited::Lost(p.host, "not connected".into());
                };
                if done[k] {
                    if a.link.lost() {
                        return Waited::Lost(p.host, "connection lost".into());
                    }
                    continue;
                }
                match a.link.rx.try_recv() {
                    // What an earlier test left (an aborted test's last
                    // words) is no answer to this one.
                    Ok(Event::Msg(m, _)) if test_of(&m).is_some_and(|t| t < test) => {
                        idle = false;
                    }
                    Ok(Event::Msg(m, _)) if test_of(&m).is_some_and(|t| t != test) => {
                        return Waited::Refused(
                            p.host,
                            format!(
                                "it answered for test {}, and the console runs test {test}",
                                test_of(&m).unwrap_or_default()
                            ),
                        )
                    }
                    Ok(Event::Msg(FromAgent::Error { msg, .. }, _)) => {
                        return Waited::Refused(p.host, msg)
                    }
                    Ok(Event::Msg(m, _)) => {
                        idle = false;
                        match on(p, m) {
                            Ok(true) => done[k] = true,
                            Ok(false) => {}
                            Err(msg) => return Waited::Refused(p.host, msg),
                        }
                    }
                    Ok(Event::Closed(why)) => {
                        return Waited::Lost(p.host, format!("connection lost: {why}"))
                    }
                    Err(std::sync::mpsc::TryRecvError::Empty) => {
                        if a.link.lost() {
                            return Waited::Lost(
                                p.host,
                                format!(
                                    "no heartbeat for {:.1} s",
                                    a.link.silent_for().as_secs_f64()
                                ),
                            );
                        }
                    }
                    Err(_) => return Waited::Lost(p.host, "connection lost".into()),
                }
            }
            if Instant::now() >= deadline {
                let k = done.iter().position(|d| !d).unwrap_or(0);
                return Waited::Refused(parts[k].host, "no answer in time".into());
            }
            if idle {
                // The console may share a measured host (a lab): wake
                // rarely while the agents work; nothing here is urgent to
                // the millisecond (the window's edges are the agents').
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }

    fn send_all(&self, parts: &[Part], of: &dyn Fn(&Part) -> bool, msg: impl Fn(&Part) -> ToAgent) {
        for p in parts.iter().filter(|p| of(p)) {
            if let Some(a) = self.agent(p.host) {
                a.link.send(&msg(p));
            }
        }
    }

    /// Stops every part's load (another host was lost, or Ctrl-C), gives
    /// them [`STOP_WAIT`] to say so, and releases what they hold.
    fn abort(&mut self, parts: &[Part], test: u64, reason: &str, lost: Option<usize>) {
        let live: Vec<&Part> = parts.iter().filter(|p| Some(p.host) != lost).collect();
        for p in &live {
            if let Some(a) = self.agent(p.host) {
                a.link.send(&ToAgent::Abort {
                    test,
                    reason: reason.to_string(),
                });
            }
        }
        let deadline = Instant::now() + STOP_WAIT;
        for p in &live {
            let Some(a) = self.agent(p.host) else {
                continue;
            };
            while Instant::now() < deadline {
                let left = deadline.saturating_duration_since(Instant::now());
                match a.link.rx.recv_timeout(left) {
                    Ok(Event::Msg(FromAgent::Report { .. } | FromAgent::Error { .. }, _)) => break,
                    Ok(Event::Msg(..)) => {}
                    _ => break,
                }
            }
        }
        for p in &live {
            if let Some(a) = self.agent(p.host) {
                a.link.send(&ToAgent::Release { test });
            }
        }
        if let Some(i) = lost {
            if let Some(a) = self.agents[i].take() {
                a.link.close();
            }
        }
    }

    /// PREPARE .. COLLECT of one test over `parts`; the reports are left
    /// in the parts. `ramp` and `time` are the test's.
    fn drive(
        &mut self,
        parts: &mut [Part],
        ramp: Duration,
        time: Duration,
        interrupted: &AtomicBool,
    ) -> Result<DriveTimes, ConsoleError> {
        let hosts: Vec<usize> = parts.iter().map(|p| p.host).collect();
        self.ensure(&hosts)?;
        self.next_test += 1;
        let test = self.next_test;
        // PREPARE: clock offsets, then servers, then clients (who need the
        // servers' ports), then servers gather the connections.
        for p in parts.iter_mut() {
            p.offset = self
                .probe(p.host)
                .map_err(|m| ConsoleError::host_err(&self.hosts[p.host].name, m))?;
        }
        // Making test files can take minutes; a lost host still shows at once.
        let prepare_wait = Instant::now() + Duration::from_secs(3600);
        let serves = |p: &Part| matches!(p.work, Work::NetServe { .. });
        self.prepare(parts, &serves, test, prepare_wait, interrupted)?;
        // Clients learn their servers' data ports.
        let ports: Vec<(IpAddr, u16)> = (parts.iter())
            .filter_map(|p| Some((p.host, p.port?)))
            .flat_map(|(h, port)| self.data_ips(h).into_iter().map(move |ip| (ip, port)))
            .collect();
        for p in parts.iter_mut() {
            if let Work::NetClient { pairs, .. } = &mut p.work {
                for s in pairs.iter_mut().filter_map(|slot| slot.server.as_mut()) {
                    if let Some((_, port)) = ports.iter().find(|(ip, _)| *ip == s.ip()) {
                        s.set_port(*port);
                    }
                }
            }
        }
        self.prepare(parts, &|p| !serves(p), test, prepare_wait, interrupted)?;
        if parts.iter().any(serves) {
            self.send_all(parts, &serves, |_| ToAgent::Gather { test });
            let deadline = Instant::now() + Duration::from_secs(30);
            let w = self.wait_all(parts, serves, test, deadline, interrupted, |_, m| {
                Ok(matches!(m, FromAgent::Gathered { .. }))
            });
            self.settle(parts, test, w, "PREPARE")?;
        }
        // START, with RECORD ON/OFF scheduled: far enough ahead that every
        // agent has its order (a few round trips) and has ramped up.
        let max_rtt = parts.iter().map(|p| p.offset.rtt_ns).max().unwrap_or(0);
        let lead = Duration::from_millis(50) + Duration::from_nanos(4 * max_rtt.max(0) as u64);
        let ns = |d: Duration| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX);
        let start_at = Instant::now();
        let on = wire::now_ns().saturating_add(ns(ramp + lead));
        let off = on.saturating_add(ns(time));
        let off_at = start_at + ramp + lead + time;
        self.record_on = Some(on);
        // Each agent's instants in its own clock; an offset so far out
        // that they do not fit is that host's failure, never a wrap.
        let theirs = (parts.iter())
            .map(|p| {
                let o = p.offset.offset_ns;
                match (on.checked_add(o), off.checked_add(o)) {
                    (Some(a), Some(b)) => Ok((a, b)),
                    _ => Err((p.host, format!(
                        "its clock is {o} ns from the console's: the window cannot be scheduled in it"
                    ))),
                }
            })
            .collect::<Result<Vec<_>, _>>();
        let theirs = match theirs {
            Ok(t) => t,
            Err((host, msg)) => return Err(self.refuse(parts, test, host, msg, "START")),
        };
        for (p, (a, b)) in parts.iter().zip(&theirs) {
            if let Some(agent) = self.agent(p.host) {
                agent.link.send(&ToAgent::Start {
                    test,
                    on_ns: *a,
                    off_ns: *b,
                });
            }
        }
        let w = self.wait_all(
            parts,
            |_| true,
            test,
            Instant::now() + Duration::from_secs(10),
            interrupted,
            |_, m| Ok(matches!(m, FromAgent::Started { .. })),
        );
        self.settle(parts, test, w, "START")?;
        // RECORD ON .. OFF happen at the agents; COLLECT their reports,
        // each checked as it comes (crate::checks).
        let collect = Instant::now() + ramp + lead + time + Duration::from_secs(60);
        let w = self.wait_all(
            parts,
            |_| true,
            test,
            collect,
            interrupted,
            |p, m| match m {
                FromAgent::Report { mut report, .. } => {
                    let Some(info) = self.agent(p.host).map(|a| &a.info) else {
                        return Err("not connected".into());
                    };
                    let now = Instant::now();
                    let expect = checks::Expect {
                        work: &p.work,
                        on_ns: on,
                        off_ns: off,
                        offset_ns: p.offset.offset_ns,
                        rtt_ns: p.offset.rtt_ns,
                        elapsed: now.saturating_duration_since(start_at),
                        early: off_at.saturating_duration_since(now),
                        info,
                    };
                    checks::report(&mut report, &expect)
                        .map_err(|e| format!("its report is refused: {e}"))?;
                    p.report = Some(*report);
                    Ok(true)
                }
                _ => Ok(false),
            },
        );
        self.settle(parts, test, w, "the window")?;
        self.send_all(parts, &|_| true, |_| ToAgent::Release { test });
        Ok(DriveTimes {
            on_ns: on,
            off_ns: off,
        })
    }

    /// Sends `Prepare` to the parts `of` selects and waits for each
    /// `Prepared` (a server's carries its data port).
    fn prepare(
        &mut self,
        parts: &mut [Part],
        of: &dyn Fn(&Part) -> bool,
        test: u64,
        deadline: Instant,
        interrupted: &AtomicBool,
    ) -> Result<(), ConsoleError> {
        self.send_all(parts, of, |p| ToAgent::Prepare {
            test,
            work: Box::new(p.work.clone()),
        });
        let w = self.wait_all(parts, of, test, deadline, interrupted, |p, m| match m {
            FromAgent::Prepared { port, .. } => {
                p.port = port;
                Ok(true)
            }
            _ => Ok(false),
        });
        self.settle(parts, test, w, "PREPARE")
    }

    /// Host `host` refused or failed a check: the others are stopped, and
    /// this is the test's error.
    fn refuse(
        &mut self,
        parts: &[Part],
        test: u64,
        host: usize,
        msg: String,
        phase: &str,
    ) -> ConsoleError {
        let name = self.hosts[host].name.clone();
        match self.settle(parts, test, Waited::Refused(host, msg.clone()), phase) {
            Err(e) => e,
            Ok(()) => ConsoleError::host_err(&name, msg),
        }
    }

    /// Turns a phase's end into the test's error (aborting the others).
    fn settle(
        &mut self,
        parts: &[Part],
        test: u64,
        w: Waited,
        phase: &str,
    ) -> Result<(), ConsoleError> {
        match w {
            Waited::Done => Ok(()),
            Waited::Interrupted => {
                self.abort(parts, test, "the console was interrupted (Ctrl-C)", None);
                Err(ConsoleError::Interrupted)
            }
            Waited::Lost(i, msg) => {
                let host = self.hosts[i].name.clone();
                self.abort(parts, test, &format!("host {host} was lost"), Some(i));
                Err(ConsoleError::Lost {
                    host,
                    msg: format!("in {phase}: {msg}"),
                })
            }
            Waited::Refused(i, msg) => {
                let host = self.hosts[i].name.clone();
                self.abort(parts, test, &format!("host {host} refused"), None);
                Err(ConsoleError::host_err(&host, format!("{msg} (in {phase})")))
            }
        }
    }

    fn data_ips(&self, i: usize) -> Vec<IpAddr> {
        let h = &self.hosts[i];
        if h.data.is_empty() {
            vec![h.address.ip()]
        } else {
            h.data.clone()
        }
    }
}

/// The test a message is about (None: not about one).
fn test_of(m: &FromAgent) -> Option<u64> {
    match m {
        FromAgent::Prepared { test, .. }
        | FromAgent::Gathered { test }
        | FromAgent::Started { test }
        | FromAgent::Report { test, .. } => Some(*test),
        FromAgent::Error { test, .. } => *test,
        FromAgent::Info { .. } | FromAgent::Clock { .. } | FromAgent::Beat {} => None,
    }
}

/// When the window was scheduled, and how long from START to RECORD ON.
struct DriveTimes {
    on_ns: i64,
    off_ns: i64,
}

/// A network test across hosts.
#[derive(Debug, Clone)]
pub struct NetTest {
    /// (client host, server host) per pair.
    pub pairs: Vec<(String, String)>,
    /// `conns` is per pair; `ramp_ms`/`time_ms` the test's.
    pub params: TestParams,
    /// Engine threads on every agent of the test (the suite's `threads`);
    /// None: each agent's own setting.
    pub threads: Option<u32>,
    pub config: Option<String>,
}

/// A disk test on several hosts at once.
#[derive(Debug, Clone)]
pub struct DiskTest {
    pub on: Vec<String>,
    pub order: DiskOrder,
}

impl Console {
    /// Runs a network test over its endpoint pairs: one result document
    /// with every host and pair.
    pub fn run_net(
        &mut self,
        t: &NetTest,
        interrupted: &AtomicBool,
    ) -> Result<ResultDoc, ConsoleError> {
        if t.pairs.is_empty() {
            return Err(ConsoleError::Invalid(
                "a multi-host network test needs at least one pair".into(),
            ));
        }
        let mut parts: Vec<Part> = Vec::new();
        let part_of = |host: usize, server: bool, parts: &mut Vec<Part>| -> usize {
            if let Some(k) = parts.iter().position(|p| p.host == host) {
                let p = &mut parts[k];
                let both = matches!(
                    (&p.work, server),
                    (Work::NetServe { .. }, false) | (Work::NetClient { .. }, true)
                );
                if both {
                    p.role = "client+server";
                }
                return k;
            }
            parts.push(Part {
                host,
                role: if server { "server" } else { "client" },
                work: if server {
                    Work::NetServe {
                        params: t.params.clone(),
                        pairs: vec![],
                        threads: t.threads,
                    }
                } else {
                    Work::NetClient {
                        params: t.params.clone(),
                        pairs: vec![],
                        threads: t.threads,
                    }
                },
                offset: Offset {
                    offset_ns: 0,
                    rtt_ns: 0,
                },
                port: None,
                report: None,
            });
            parts.len() - 1
        };
        let mut names = Vec::new();
        for (k, (c, s)) in t.pairs.iter().enumerate() {
            let (ci, si) = (self.index(c)?, self.index(s)?);
            if ci == si {
                return Err(ConsoleError::Invalid(format!(
                    "pair {} has host {c} at both ends",
                    k + 1
                )));
            }
            let tok = iotoll_net::server::data_token().map_err(|e| {
                ConsoleError::Invalid(format!("no randomness for a data token: {e}"))
            })?;
            let data = self.data_ips(si);
            let server_ip = data[k % data.len()];
            let sk = part_of(si, true, &mut parts);
            let ck = part_of(ci, false, &mut parts);
            if parts[sk].role == "client+server" || parts[ck].role == "client+server" {
                return Err(ConsoleError::Invalid(format!(
                    "host {} is a client in one pair and a server in another: not supported yet",
                    if parts[sk].role == "client+server" {
                        s
                    } else {
                        c
                    }
                )));
            }
            if let Work::NetServe { pairs, .. } = &mut parts[sk].work {
                pairs.push(PairSlot {
                    pair: k as u32,
                    token: tok,
                    server: None,
                });
            }
            if let Work::NetClient { pairs, .. } = &mut parts[ck].work {
                pairs.push(PairSlot {
                    pair: k as u32,
                    token: tok,
                    server: Some(SocketAddr::new(server_ip, 0)),
                });
            }
            names.push((c.clone(), s.clone()));
        }
        let ramp = Duration::from_millis(t.params.ramp_ms);
        let time = Duration::from_millis(t.params.time_ms);
        let times = self.drive(&mut parts, ramp, time, interrupted)?;
        self.check_across(&parts, Some(&t.params))?;
        Ok(self.net_doc(t, &parts, &names, &times))
    }

    /// Runs a disk test on every host of `t.on` at once.
    pub fn run_disk(
        &mut self,
        t: &DiskTest,
        interrupted: &AtomicBool,
    ) -> Result<ResultDoc, ConsoleError> {
        let mut parts = Vec::new();
        for name in &t.on {
            let host = self.index(name)?;
            parts.push(Part {
                host,
                role: "disk",
                work: Work::Disk {
                    order: t.order.clone(),
                },
                offset: Offset {
                    offset_ns: 0,
                    rtt_ns: 0,
                },
                port: None,
                report: None,
            });
        }
        let ramp = Duration::from_millis(t.order.ramp_ms);
        let time = Duration::from_millis(t.order.time_ms);
        let times = self.drive(&mut parts, ramp, time, interrupted)?;
        self.check_across(&parts, None)?;
        Ok(self.disk_doc(t, &parts, &times))
    }

    /// What no single report shows: hosts claiming one kernel are one
    /// machine, and each pair's two ends agree on its bytes.
    fn check_across(&self, parts: &[Part], net: Option<&TestParams>) -> Result<(), ConsoleError> {
        let name = |p: &Part| self.hosts[p.host].name.as_str();
        type Claim<'a> = (Option<&'a str>, (&'a str, u32, Option<&'a CpuReport>));
        fn claim<'a>(c: &'a Console, p: &'a Part) -> Claim<'a> {
            let info = c.agent(p.host).map(|a| &a.info);
            let cpu = p.report.as_ref().and_then(|r| r.cpu.as_ref());
            (
                info.and_then(|i| i.boot_id.as_deref()),
                (
                    c.hosts[p.host].name.as_str(),
                    info.map_or(0, |i| i.cpus),
                    cpu,
                ),
            )
        }
        for (k, a) in parts.iter().enumerate() {
            for b in &parts[k + 1..] {
                let ((ba, ca), (bb, cb)) = (claim(self, a), claim(self, b));
                if ba.is_some() && ba == bb {
                    checks::one_machine(ca, cb).map_err(|m| ConsoleError::host_err(name(b), m))?;
                }
            }
        }
        let Some(params) = net else {
            return Ok(());
        };
        // Its window's edges on the console's clock, ns.
        let edges = |p: &Part| -> Option<(i128, i128)> {
            let r = p.report.as_ref()?;
            let o = i128::from(p.offset.offset_ns);
            Some((i128::from(r.on_ns?) - o, i128::from(r.off_ns?) - o))
        };
        let ends = |server: bool| {
            (parts.iter())
                .filter(move |p| matches!(p.work, Work::NetServe { .. }) == server)
                .filter_map(|p| Some((p, p.report.as_ref()?)))
                .flat_map(|(p, r)| r.pairs.iter().map(move |b| (p, r, b)))
        };
        for (sp, sr, s) in ends(true) {
            let Some((cp, cr, c)) = ends(false).find(|(_, _, c)| c.pair == s.pair) else {
                continue;
            };
            let (Some(se), Some(ce)) = (edges(sp), edges(cp)) else {
                continue;
            };
            let apart = (se.0 - ce.0).abs() + (se.1 - ce.1).abs();
            let clocks = i128::from(sp.offset.rtt_ns.max(0) + cp.offset.rtt_ns.max(0)) / 2;
            checks::pair_agrees(&checks::PairEnds {
                pair: s.pair,
                client: c,
                server: s,
                window_s: sr.window_s.max(cr.window_s),
                edges_s: (apart + clocks) as f64 / 1e9,
                sockbuf: params.sockbuf,
            })
            .map_err(|m| {
                ConsoleError::host_err(
                    name(sp),
                    format!(
                        "its report and {}'s disagree: {m}; the test is invalid",
                        name(cp)
                    ),
                )
            })?;
        }
        Ok(())
    }

    /// One host's row: its CPU, its window against the schedule.
    fn host_row(
        &self,
        p: &Part,
        r: &AgentReport,
        times: &DriveTimes,
        mut metrics: Metrics,
    ) -> HostFigures {
        let h = &self.hosts[p.host];
        let info = self.agent(p.host).map(|a| &a.info);
        if let Some(c) = &r.cpu {
            c.write_metrics(&mut metrics, "");
        }
        metrics.insert(mn::WINDOW_S.into(), r.window_s);
        iotoll_model::derive_metrics(&mut metrics);
        let console = |ns: Option<i64>, at: i64| {
            ns.map_or(0.0, |n| (n - p.offset.offset_ns - at) as f64 / 1e3)
        };
        let mut notes = r.notes.clone();
        if let Some(e) = &r.cpu_error {
            notes.push(format!("CPU not measured: {e}"));
        }
        HostFigures {
            name: h.name.clone(),
            address: h.address.to_string(),
            role: p.role.to_string(),
            cpus: r
                .cpu
                .as_ref()
                .map_or_else(|| info.map_or(0, |i| i.cpus), |c| c.cpus),
            boot_id: info.and_then(|i| i.boot_id.clone()),
            metrics,
            cpu: r.cpu.clone(),
            on_us: console(r.on_ns, times.on_ns),
            off_us: console(r.off_ns, times.off_ns),
            disclosure: info.map(|i| i.disclosure.clone()),
            notes,
            // Rates over the window the counters were read on (the host's).
            ifaces: (r.ifaces.iter())
                .map(|i| i.clone().with_rates(r.window_s))
                .collect(),
        }
    }

    fn net_doc(
        &self,
        t: &NetTest,
        parts: &[Part],
        names: &[(String, String)],
        times: &DriveTimes,
    ) -> ResultDoc {
        let mut notes = Vec::new();
        let mut hosts = Vec::new();
        // pair -> (client->server bytes at the server, its window; server->client at the client, its window)
        let mut c2s = vec![(0u64, 0f64); names.len()];
        let mut s2c = vec![(0u64, 0f64); names.len()];
        let mut conns = vec![0u32; names.len()];
        let (mut errors, mut retransmits) = (0u64, 0u64);
        let mut interrupted = false;
        let mut seconds = Vec::new();
        for p in parts {
            let Some(r) = &p.report else { continue };
            let server = matches!(p.work, Work::NetServe { .. });
            let (mut rx, mut tx) = (0u64, 0u64);
            for pb in &r.pairs {
                let k = pb.pair as usize;
                if k >= names.len() {
                    continue;
                }
                rx += pb.rx;
                tx += pb.tx;
                if server {
                    c2s[k] = (pb.rx, r.window_s);
                    conns[k] = pb.conns;
                } else {
                    s2c[k] = (pb.rx, r.window_s);
                }
            }
            errors += r.errors;
            retransmits += r.retransmits;
            interrupted |= r.interrupted;
            if let Some(e) = &r.first_error {
                notes.push(format!(
                    "host {}: {} connection(s) failed; first: {e}",
                    self.hosts[p.host].name, r.errors
                ));
            }
            let mut m = Metrics::new();
            let rate = |b: u64| {
                if r.window_s > 0.0 {
                    b as f64 * 8.0 / r.window_s / 1e6
                } else {
                    0.0
                }
            };
            m.insert(mn::RX_MBIT_S.into(), rate(rx));
            m.insert(mn::TX_MBIT_S.into(), rate(tx));
            m.insert(mn::MBIT_S.into(), rate(rx) + rate(tx));
            m.insert(
                mn::CONNS.into(),
                r.pairs.iter().map(|p| p.conns as f64).sum(),
            );
            seconds.push((hosts.len(), r.series.clone()));
            hosts.push(self.host_row(p, r, times, m));
        }
        let rate = |(b, w): (u64, f64)| {
            if w > 0.0 {
                b as f64 * 8.0 / w / 1e6
            } else {
                0.0
            }
        };
        let pairs: Vec<PairFigures> = (names.iter().enumerate())
            .map(|(k, (c, s))| PairFigures {
                client: c.clone(),
                server: s.clone(),
                conns: conns[k],
                client_to_server_bytes: c2s[k].0,
                server_to_client_bytes: s2c[k].0,
                mbit_s: rate(c2s[k]) + rate(s2c[k]),
            })
            .collect();
        let mut m = Metrics::new();
        let tx: f64 = (0..names.len()).map(|k| rate(c2s[k])).sum();
        let rx: f64 = (0..names.len()).map(|k| rate(s2c[k])).sum();
        m.insert(mn::TX_MBIT_S.into(), tx);
        m.insert(mn::RX_MBIT_S.into(), rx);
        m.insert(mn::MBIT_S.into(), pairs.iter().map(|p| p.mbit_s).sum());
        m.insert(mn::CONNS.into(), conns.iter().map(|c| *c as f64).sum());
        m.insert(mn::PAIRS.into(), pairs.len() as f64);
        m.insert(mn::HOSTS.into(), hosts.len() as f64);
        m.insert(mn::ERRORS.into(), errors as f64);
        m.insert(mn::RETRANSMITS.into(), retransmits as f64);
        let rates: Vec<f64> = pairs.iter().map(|p| p.mbit_s).collect();
        let sum: f64 = rates.iter().sum();
        let sum_sq: f64 = rates.iter().map(|r| r * r).sum();
        if let Some(f) = iotoll_run::jain_fairness(rates.len() as f64, sum, sum_sq) {
            m.insert(mn::PAIR_FAIRNESS.into(), f);
        }
        let window = mean(
            hosts
                .iter()
                .map(|h| h.metrics.get(mn::WINDOW_S).copied().unwrap_or(0.0)),
        );
        m.insert(mn::WINDOW_S.into(), window);
        let local = weighted_cpu(&hosts, |h| h.role == "client");
        let remote = weighted_cpu(&hosts, |h| h.role == "server");
        if let Some(c) = &local {
            c.write_metrics(&mut m, "");
        }
        if let Some(c) = &remote {
            c.write_metrics(&mut m, "remote_");
        }
        iotoll_model::derive_metrics(&mut m);
        let same_host = shared_kernel(&hosts);
        if same_host {
            notes.push("every host runs on one kernel (a lab on one machine): each host's CPU is that machine's CPU, and the clients' and servers' CPU are the same figure".into());
        }
        if interrupted {
            notes.push("a window was cut short (the test was stopped)".into());
        }
        let skew = skew(parts, times);
        let spec = {
            use iotoll_model::spec::{NetSpec, Spec, StreamSpec};
            let servers: Vec<String> = (parts.iter())
                .filter(|p| matches!(p.work, Work::NetServe { .. }))
                .map(|p| self.hosts[p.host].address.to_string())
                .collect();
            Spec::Stream(Box::new(StreamSpec {
                net: NetSpec {
                    peer: servers.join(","),
                    conns: t.params.conns,
                    sockbuf: t.params.sockbuf,
                    nodelay: t.params.nodelay,
                    bind: vec![],
                    ramp_s: t.params.ramp_ms as f64 / 1e3,
                    time_s: t.params.time_ms as f64 / 1e3,
                    threads: iotoll_net::server::default_threads(),
                    auth: self.key.is_some(),
                    tls: None,
                    verify: t.params.verify,
                },
                dir: iotoll_model::spec::word(&t.params.dir),
                msg: t.params.msg,
            }))
        };
        ResultDoc {
            spec,
            cpu: CpuSection {
                local,
                remote,
                same_host: Some(same_host),
            },
            series: crate::series::merge(&hosts, &seconds),
            hosts,
            pairs,
            ..multi_host_doc(
                Kind::NetStream,
                interrupted,
                times,
                t.config.clone(),
                m,
                notes,
                skew,
            )
        }
    }

    fn disk_doc(&self, t: &DiskTest, parts: &[Part], times: &DriveTimes) -> ResultDoc {
        let mut notes = Vec::new();
        let mut hosts = Vec::new();
        let mut m = Metrics::new();
        let mut interrupted = false;
        let mut lat_weighted = 0.0;
        let mut first_spec = None;
        let mut seconds = Vec::new();
        const SUMMED: [&str; 7] = [
            mn::IOPS,
            mn::READ_IOPS,
            mn::WRITE_IOPS,
            mn::MB_S,
            mn::READ_MB_S,
            mn::WRITE_MB_S,
            mn::ERRORS,
        ];
        for p in parts {
            let Some(r) = &p.report else { continue };
            interrupted |= r.interrupted;
            let mut hm = Metrics::new();
            if let Some(d) = &r.disk {
                for k in SUMMED.iter().chain(&[
                    mn::LAT_MEAN_US,
                    mn::LAT_P99_US,
                    mn::LAT_MAX_US,
                    mn::QD_ACHIEVED,
                ]) {
                    if let Some(v) = d.metrics.get(*k) {
                        hm.insert(k.to_string(), *v);
                    }
                }
                for k in SUMMED {
                    *m.entry(k.to_string()).or_insert(0.0) +=
                        d.metrics.get(k).copied().unwrap_or(0.0);
                }
                let iops = d.metrics.get(mn::IOPS).copied().unwrap_or(0.0);
                lat_weighted += iops * d.metrics.get(mn::LAT_MEAN_US).copied().unwrap_or(0.0);
                if let Some(v) = d.metrics.get(mn::LAT_MAX_US) {
                    let e = m.entry(mn::LAT_MAX_US.to_string()).or_insert(0.0);
                    *e = e.max(*v);
                }
                first_spec = first_spec.or_else(|| Some(d.spec.clone()));
                notes.extend(
                    d.notes
                        .iter()
                        .map(|n| format!("host {}: {n}", self.hosts[p.host].name)),
                );
                seconds.push((hosts.len(), d.series.clone()));
            }
            hosts.push(self.host_row(p, r, times, hm));
        }
        if let Some(iops) = m.get(mn::IOPS).copied().filter(|i| *i > 0.0) {
            m.insert(mn::LAT_MEAN_US.into(), lat_weighted / iops);
        }
        notes.push("latency percentiles are per host (hosts[].metrics); the totals give the mean (weighted by I/Os) and the maximum".into());
        let window = mean(
            hosts
                .iter()
                .map(|h| h.metrics.get(mn::WINDOW_S).copied().unwrap_or(0.0)),
        );
        m.insert(mn::WINDOW_S.into(), window);
        m.insert(mn::HOSTS.into(), hosts.len() as f64);
        let local = weighted_cpu(&hosts, |_| true);
        if let Some(c) = &local {
            c.write_metrics(&mut m, "");
        }
        iotoll_model::derive_metrics(&mut m);
        if shared_kernel(&hosts) && hosts.len() > 1 {
            notes.push("every host runs on one kernel (a lab on one machine): each host's CPU is that machine's CPU".into());
        }
        ResultDoc {
            spec: first_spec.unwrap_or_default(),
            cpu: CpuSection {
                local,
                remote: None,
                same_host: None,
            },
            series: crate::series::merge(&hosts, &seconds),
            hosts,
            ..multi_host_doc(
                Kind::Disk,
                interrupted,
                times,
                t.order.config.clone(),
                m,
                notes,
                skew(parts, times),
            )
        }
    }
}

/// A multi-host result's common parts; the caller adds its spec, CPU,
/// hosts and pairs.
fn multi_host_doc(
    kind: Kind,
    interrupted: bool,
    times: &DriveTimes,
    config: Option<String>,
    metrics: Metrics,
    notes: Vec<String>,
    skew: Skew,
) -> ResultDoc {
    ResultDoc {
        status: if interrupted {
            ResultStatus::Interrupted
        } else {
            ResultStatus::Complete
        },
        started_at: rfc3339(times.on_ns),
        config,
        metrics,
        notes,
        skew_us: Some(skew),
        ..ResultDoc::new(kind, Default::default())
    }
}

fn mean(v: impl Iterator<Item = f64>) -> f64 {
    let (n, s) = v.fold((0usize, 0.0), |(n, s), x| (n + 1, s + x));
    if n == 0 {
        0.0
    } else {
        s / n as f64
    }
}

/// The CPU of the hosts `which` selects, each machine once (hosts that
/// share a kernel boot id share its CPU), weighted by CPU count.
fn weighted_cpu(hosts: &[HostFigures], which: impl Fn(&HostFigures) -> bool) -> Option<CpuReport> {
    let measured = hosts.iter().filter(|h| which(h) && h.cpu.is_some());
    let reports: Vec<&CpuReport> = (HostFigures::one_per_machine(measured).into_iter())
        .filter_map(|h| h.cpu.as_ref())
        .collect();
    CpuReport::weighted(&reports)
}

/// Every host on one kernel (all boot ids known and equal).
fn shared_kernel(hosts: &[HostFigures]) -> bool {
    let ids: Vec<Option<&str>> = hosts.iter().map(|h| h.boot_id.as_deref()).collect();
    ids.first().is_some_and(|f| f.is_some()) && ids.windows(2).all(|w| w[0] == w[1])
}

/// How far apart the windows opened and closed, on the console's clock.
fn skew(parts: &[Part], _times: &DriveTimes) -> Skew {
    let spread = |f: &dyn Fn(&AgentReport) -> Option<i64>| -> f64 {
        let v: Vec<i64> = (parts.iter())
            .filter_map(|p| Some(f(p.report.as_ref()?)? - p.offset.offset_ns))
            .collect();
        match (v.iter().max(), v.iter().min()) {
            (Some(a), Some(b)) => (a - b) as f64 / 1e3,
            _ => 0.0,
        }
    };
    Skew {
        start: spread(&|r| r.on_ns),
        stop: spread(&|r| r.off_ns),
        clock: parts.iter().map(|p| p.offset.rtt_ns).max().unwrap_or(0) as f64 / 2e3,
    }
}

fn rfc3339(ns: i64) -> String {
    let t = std::time::UNIX_EPOCH + Duration::from_nanos(ns.max(0) as u64);
    humantime::format_rfc3339_seconds(t).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_from_four_timestamps() {
        // The agent's clock is 1 ms ahead; 100 us each way; 20 us inside.
        let (t1, d, ahead) = (1_000_000_000i64, 100_000i64, 1_000_000i64);
        let t2 = t1 + d + ahead;
        let t3 = t2 + 20_000;
        let t4 = t3 - ahead + d;
        let o = offset_of(t1, t2, t3, t4).unwrap();
        assert_eq!(
            o,
            Offset {
                offset_ns: ahead,
                rtt_ns: 2 * d
            }
        );
        // An asymmetric path errs by half the asymmetry, never more than
        // half the round trip.
        let t4 = t3 - ahead + 3 * d;
        let o = offset_of(t1, t2, t3, t4).unwrap();
        assert!((o.offset_ns - ahead).abs() <= o.rtt_ns / 2);
    }

    /// issue 24: an agent's clock near i64::MAX wrapped the offset (292
    /// years); now nothing wraps, and impossible probes are refused.
    #[test]
    fn offsets_never_wrap() {
        let t1 = 1_795_000_000_000_000_000i64;
        let (t2, t3) = (i64::MAX - 1_000, i64::MAX - 500);
        let o = offset_of(t1, t2, t3, t1 + 2_000).unwrap();
        assert!(o.offset_ns > 7_000_000_000_000_000_000, "{o:?}");
        assert!(offset_of(t1, i64::MIN, i64::MAX, t1 + 10).is_none());
        // Held 1 s inside a 1 ms round trip; answered before asked.
        assert!(offset_of(t1, t1, t1 + 1_000_000_000, t1 + 1_000_000).is_none());
        assert!(offset_of(t1, t1 + 10, t1 + 5, t1 + 100).is_none());
    }

    #[test]
    fn versions() {
        let info = |v: &str, proto| AgentInfo {
            version: v.into(),
            proto,
            hostname: "h".into(),
            cpus: 2,
            boot_id: None,
            targets: vec![],
            disclosure: serde_json::Value::Null,
        };
        assert!(compatible(&info(iotoll_model::VERSION, wire::AGENT_PROTO)).is_ok());
        let e = compatible(&info("0.0.9", wire::AGENT_PROTO)).unwrap_err();
        assert!(
            e.contains("0.0.9") && e.contains(iotoll_model::VERSION),
            "{e}"
        );
        assert!(compatible(&info(iotoll_model::VERSION, 99)).is_err());
    }

    #[test]
    fn cpu_weighted_once_per_machine() {
        let cpu = |cpus, busy| CpuReport {
            cpus,
            window_s: 1.0,
            busy_pct: busy,
            ..Default::default()
        };
        let host = |name: &str, role: &str, boot: &str, c| HostFigures {
            name: name.into(),
            role: role.into(),
            boot_id: Some(boot.into()),
            cpu: Some(c),
            ..Default::default()
        };
        let hosts = vec![
            host("srv", "server", "k0", cpu(32, 10.0)),
            host("c1", "client", "k1", cpu(2, 90.0)),
            host("c2", "client", "k1", cpu(2, 90.0)),
            host("c3", "client", "k2", cpu(6, 10.0)),
        ];
        let c = weighted_cpu(&hosts, |h| h.role == "client").unwrap();
        // k1 once: (2 x 90 + 6 x 10) / 8.
        assert_eq!(c.cpus, 8);
        assert!((c.busy_pct - 30.0).abs() < 1e-9, "{}", c.busy_pct);
        let all = weighted_cpu(&hosts, |_| true).unwrap();
        assert_eq!(all.cpus, 40);
        assert!((all.busy_pct - (320.0 + 180.0 + 60.0) / 40.0).abs() < 1e-9);
        assert!(!shared_kernel(&hosts));
    }
}
