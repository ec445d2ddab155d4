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
    self, AgentInfo, AgentReport, DiskOrder, FromAgent, PairPort, PairSlot, ToAgent, Work,
};
use iotoll_model::ResultDoc;
use iotoll_net::auth::Key;
use iotoll_net::proto::TestParams;
use iotoll_net::TestKind;
use session::reach;
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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

/// One host's part in a test.
struct Part {
    host: usize,
    role: &'static str,
    work: Work,
    offset: Offset,
    port: Option<u16>,
    /// A TLS test's server: the certificate it sent at PREPARE.
    cert: Option<String>,
    /// A UDP test's server: each served pair's port, sent at PREPARE.
    pair_ports: Vec<PairPort>,
    report: Option<AgentReport>,
}

impl Part {
    /// A network test's parameters.
    fn params(&self) -> Option<&TestParams> {
        match &self.work {
            Work::NetServe { params, .. } | Work::NetClient { params, .. } => Some(params),
            Work::Disk { .. } => None,
        }
    }

    /// Whether this host is pair `pair`'s server.
    fn serves_pair(&self, pair: u32) -> bool {
        self.work.slots().0.iter().any(|s| s.pair == pair)
    }

    /// Host `host`'s part before PREPARE: no offset, port or report yet.
    fn new(host: usize, role: &'static str, work: Work) -> Part {
        Part {
            host,
            role,
            work,
            offset: Offset::default(),
            port: None,
            cert: None,
            pair_ports: Vec::new(),
            report: None,
        }
    }
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
    fn wait_all(
        &self,
        parts: &mut [Part],
        of: impl Fn(&Part) -> bool,
        Run { test, interrupted }: Run,
        deadline: Instant,
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
        let live = |p: &Part| Some(p.host) != lost;
        self.send_all(parts, &live, |_| ToAgent::Abort {
            test,
            reason: reason.to_string(),
        });
        let deadline = Instant::now() + STOP_WAIT;
        for a in (parts.iter().filter(|p| live(p))).filter_map(|p| self.agent(p.host)) {
            while Instant::now() < deadline {
                let left = deadline.saturating_duration_since(Instant::now());
                match a.link.rx.recv_timeout(left) {
                    Ok(Event::Msg(FromAgent::Report { .. } | FromAgent::Error { .. }, _)) => break,
                    Ok(Event::Msg(..)) => {}
                    _ => break,
                }
            }
        }
        self.send_all(parts, &live, |_| ToAgent::Release { test });
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
        let run = Run {
            test: self.next_test,
            interrupted,
        };
        self.prepare_all(parts, run)?;
        let w = self.start_all(parts, run, ramp, time)?;
        // RECORD ON .. OFF happen at the agents; COLLECT their reports,
        // each checked as it comes (crate::checks).
        let collect = Instant::now() + ramp + w.lead + time + Duration::from_secs(60);
        let waited = self.wait_all(
            parts,
            |_| true,
            run,
            collect,
            |p, m| match m {
                FromAgent::Report { mut report, .. } => {
                    let Some(info) = self.agent(p.host).map(|a| &a.info) else {
                        return Err("not connected".into());
                    };
                    let now = Instant::now();
                    let expect = checks::Expect {
                        work: &p.work,
                        on_ns: w.on_ns,
                        off_ns: w.off_ns,
                        offset: p.offset,
                        elapsed: now.saturating_duration_since(w.start_at),
                        early: w.off_at.saturating_duration_since(now),
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
        self.settle(parts, run.test, waited, "the window")?;
        self.send_all(parts, &|_| true, |_| ToAgent::Release { test: run.test });
        Ok(w)
    }

    /// PREPARE: clock offsets, then servers, then clients (who need the
    /// servers' ports), then servers gather the connections.
    fn prepare_all(&mut self, parts: &mut [Part], run: Run) -> Result<(), ConsoleError> {
        for p in parts.iter_mut() {
            p.offset = self
                .probe(p.host)
                .map_err(|m| ConsoleError::host_err(&self.hosts[p.host].name, m))?;
        }
        // Making test files can take minutes; a lost host still shows at once.
        let prepare_wait = Instant::now() + Duration::from_secs(3600);
        let serves = |p: &Part| matches!(p.work, Work::NetServe { .. });
        self.prepare(parts, &serves, run, prepare_wait)?;
        // Clients learn their servers' data ports, pair by pair (hosts
        // may share an address: agents on one machine).
        // A TLS test's clients pin the certificate each server sent over
        // its authenticated session with the console.
        let pair_ports =
            (parts.iter()).flat_map(|p| p.pair_ports.iter().map(|u| (u.pair, u.port, None)));
        let ports: Vec<(u32, u16, Option<String>)> = (parts.iter())
            .filter_map(|p| Some((p.work.slots().0, p.port?, &p.cert)))
            .flat_map(|(served, port, cert)| {
                served.iter().map(move |s| (s.pair, port, cert.clone()))
            })
            .chain(pair_ports)
            .collect();
        for p in parts.iter_mut() {
            if let Work::NetClient { pairs, .. } | Work::NetServe { clients: pairs, .. } =
                &mut p.work
            {
                for slot in pairs.iter_mut() {
                    let port = ports.iter().find(|(k, ..)| *k == slot.pair);
                    if let (Some(s), Some((_, port, cert))) = (slot.server.as_mut(), port) {
                        s.set_port(*port);
                        slot.cert = cert.clone();
                    }
                }
            }
        }
        self.prepare(parts, &|p| !serves(p), run, prepare_wait)?;
        if parts.iter().any(serves) {
            self.send_all(parts, &serves, |p| ToAgent::Gather {
                test: run.test,
                clients: p.work.slots().1.to_vec(),
            });
            let deadline = Instant::now() + Duration::from_secs(30);
            let w = self.wait_all(parts, serves, run, deadline, |_, m| {
                Ok(matches!(m, FromAgent::Gathered { .. }))
            });
            self.settle(parts, run.test, w, "PREPARE")?;
        }
        Ok(())
    }

    /// START, with RECORD ON/OFF scheduled: far enough ahead that every
    /// agent has its order (a few round trips) and has ramped up.
    fn start_all(
        &mut self,
        parts: &mut [Part],
        run: Run,
        ramp: Duration,
        time: Duration,
    ) -> Result<DriveTimes, ConsoleError> {
        let test = run.test;
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
        let theirs = theirs.map_err(|(host, msg)| self.refuse(parts, test, host, msg, "START"))?;
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
            run,
            Instant::now() + Duration::from_secs(10),
            |_, m| Ok(matches!(m, FromAgent::Started { .. })),
        );
        self.settle(parts, test, w, "START")?;
        Ok(DriveTimes {
            on_ns: on,
            off_ns: off,
            start_at,
            off_at,
            lead,
        })
    }

    /// Sends `Prepare` to the parts `of` selects and waits for each
    /// `Prepared` (a server's carries its data port).
    fn prepare(
        &mut self,
        parts: &mut [Part],
        of: &dyn Fn(&Part) -> bool,
        run: Run,
        deadline: Instant,
    ) -> Result<(), ConsoleError> {
        self.send_all(parts, of, |p| ToAgent::Prepare {
            test: run.test,
            work: Box::new(p.work.clone()),
        });
        let w = self.wait_all(parts, of, run, deadline, |p, m| match m {
            FromAgent::Prepared {
                port,
                cert,
                pair_ports,
                ..
            } => {
                // A port per pair: UDP and connection-rate tests.
                let per_pair = (p.params()).is_some_and(|t| {
                    matches!(t.kind, TestKind::Udp | TestKind::Crr | TestKind::Cc)
                });
                udp::check_ports(p.work.slots().0, &pair_ports, per_pair)?;
                p.port = port;
                p.cert = cert;
                p.pair_ports = pair_ports;
                Ok(true)
            }
            _ => Ok(false),
        });
        self.settle(parts, run.test, w, "PREPARE")
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
        self.abort(parts, test, &format!("host {name} refused"), None);
        ConsoleError::host_err(&name, format!("{msg} (in {phase})"))
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
            Waited::Refused(i, msg) => Err(self.refuse(parts, test, i, msg, phase)),
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

/// A test as each of its phases waits on it: its number, and the flag
/// Ctrl-C sets.
#[derive(Clone, Copy)]
struct Run<'a> {
    test: u64,
    interrupted: &'a AtomicBool,
}

/// The window START scheduled: RECORD ON and OFF on the console's clock,
/// when START was sent and the window should close here, and the lead
/// given for every agent to have its order.
struct DriveTimes {
    on_ns: i64,
    off_ns: i64,
    start_at: Instant,
    off_at: Instant,
    lead: Duration,
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

impl NetTest {
    /// Each host of the test with the number of pairs it is an end of, in
    /// the order the pairs name them.
    fn pairs_per_host(&self) -> Vec<(&str, usize)> {
        let mut per_host: Vec<(&str, usize)> = Vec::new();
        for h in (self.pairs.iter()).flat_map(|(c, s)| [c.as_str(), s.as_str()]) {
            match per_host.iter_mut().find(|(n, _)| *n == h) {
                Some((_, k)) => *k += 1,
                None => per_host.push((h, 1)),
            }
        }
        per_host
    }
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
        udp::check_test(t).map_err(ConsoleError::Invalid)?;
        crr::check_test(t).map_err(ConsoleError::Invalid)?;
        let mut parts: Vec<Part> = Vec::new();
        // Host `host`'s part as a server (or a client) of a pair. A host
        // in both roles is one part: it serves, and opens its client pairs
        // once every server listens (at GATHER).
        let part_of = |host: usize, server: bool, parts: &mut Vec<Part>| {
            let role = if server { "server" } else { "client" };
            let k = parts
                .iter()
                .position(|p| p.host == host)
                .unwrap_or_else(|| {
                    let (params, threads) = (t.params.clone(), t.threads);
                    let work = Work::NetClient {
                        params,
                        pairs: vec![],
                        threads,
                    };
                    parts.push(Part::new(host, role, work));
                    parts.len() - 1
                });
            let p = &mut parts[k];
            if let (Work::NetClient { pairs, .. }, true) = (&mut p.work, server) {
                let (params, clients) = (t.params.clone(), std::mem::take(pairs));
                p.work = Work::NetServe {
                    params,
                    pairs: vec![],
                    threads: t.threads,
                    clients,
                };
            }
            if p.role != role {
                p.role = "client+server";
            }
            k
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
            let slot = PairSlot {
                pair: k as u32,
                token: tok,
                server: None,
                cert: None,
            };
            if let Work::NetServe { pairs, .. } = &mut parts[sk].work {
                pairs.push(slot.clone());
            }
            if let Work::NetClient { pairs, .. } | Work::NetServe { clients: pairs, .. } =
                &mut parts[ck].work
            {
                let server = Some(SocketAddr::new(server_ip, 0));
                pairs.push(PairSlot { server, ..slot });
            }
            names.push((c.clone(), s.clone()));
        }
        let ramp = Duration::from_millis(t.params.ramp_ms);
        let time = Duration::from_millis(t.params.time_ms);
        let times = self.drive(&mut parts, ramp, time, interrupted)?;
        self.check_across(&parts, Some(&t.params))?;
        let per_pair = match t.params.kind {
            TestKind::Rr => PerPair::Rr(self.pair_rtts(&parts, names.len())?),
            TestKind::Udp => PerPair::Udp(self.pair_ways(&parts, &t.params, names.len())?),
            TestKind::Crr | TestKind::Cc => {
                PerPair::Rate(self.pair_rates(&parts, &t.params, names.len())?)
            }
            _ => PerPair::Bytes,
        };
        Ok(self.net_doc(t, &parts, &names, &times, &per_pair))
    }

    /// Runs a disk test on every host of `t.on` at once.
    pub fn run_disk(
        &mut self,
        t: &DiskTest,
        interrupted: &AtomicBool,
    ) -> Result<ResultDoc, ConsoleError> {
        let work = Work::Disk {
            order: t.order.clone(),
        };
        let mut parts = (t.on.iter())
            .map(|name| Ok(Part::new(self.index(name)?, "disk", work.clone())))
            .collect::<Result<Vec<_>, ConsoleError>>()?;
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
        // Part `k`'s kernel, and its CPU count in what it said and in its window.
        let claim = |k: usize| {
            let info = self.agent(parts[k].host).map(|a| &a.info);
            let cpu = parts[k].report.as_ref().and_then(|r| r.cpu.as_ref());
            let cpus = (name(&parts[k]), info.map_or(0, |i| i.cpus), cpu);
            (info.and_then(|i| i.boot_id.as_deref()), cpus)
        };
        for a in 0..parts.len() {
            for (b, pb) in parts.iter().enumerate().skip(a + 1) {
                let ((ba, ca), (bb, cb)) = (claim(a), claim(b));
                if ba.is_some() && ba == bb {
                    let e = |m| ConsoleError::host_err(name(pb), m);
                    checks::one_machine(ca, cb).map_err(e)?;
                }
            }
        }
        let Some(params) = net else {
            return Ok(());
        };
        if params.kind == TestKind::Udp {
            // Loss parts a UDP pair's ends: udp::pair_ways checks them.
            return Ok(());
        }
        // Its window's edges on the console's clock, ns.
        let edges = |p: &Part| -> Option<(i128, i128)> {
            let r = p.report.as_ref()?;
            let o = i128::from(p.offset.offset_ns);
            Some((i128::from(r.on_ns?) - o, i128::from(r.off_ns?) - o))
        };
        let ends = |server: bool| {
            (parts.iter())
                .filter_map(|p| Some((p, p.report.as_ref()?)))
                .flat_map(|(p, r)| r.pairs.iter().map(move |b| (p, r, b)))
                .filter(move |(p, _, b)| p.serves_pair(b.pair) == server)
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
}

/// What a network test reports per pair beyond its bytes.
enum PerPair {
    Bytes,
    Rr(rr::PairRtts),
    Udp(Vec<iotoll_net::udp::Way>),
    Rate(Vec<crr::PairRate>),
}

mod crr;
mod docs;
mod ends;
mod rr;
mod session;
#[cfg(test)]
mod tests;
mod udp;
