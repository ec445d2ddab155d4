//! The agent's side of a console session: PREPARE (who it is, clock
//! probes, files and connections), START with RECORD ON/OFF at the
//! console's instants, COLLECT, and stopping at once when told to or when
//! the console is gone. It runs only the workloads of this crate's
//! protocol, never a command, and writes only targets its own flags allow.

use crate::crr::CrrPairs;
use crate::engines::Engines;
use crate::link::{self, Event, Link};
use crate::udp::UdpPairs;
use crate::window::{self, TcpLoad};
use crate::wire::{
    self, AgentInfo, AgentReport, AllowedTarget, DiskOrder, FromAgent, OrderLine, PairPort,
    PairSlot, Session, Side, ToAgent, Work,
};
use iotoll_disk::target::Pin;
use iotoll_disk::{DiskRequest, EngineChoice};
use iotoll_net::auth::Key;
use iotoll_net::engine::Role;
use iotoll_net::proto::{Control, TestParams};
use iotoll_net::server::{data_listener, server_roles, ConsoleHook, Nonces, Slot};
use iotoll_net::tls::ServerTls;
use iotoll_net::{ClientSpec, TestKind};
use iotoll_run::{RunControl, Schedule, Silent};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What an agent may do, from its own command line.
#[derive(Debug, Clone, Default)]
pub struct AgentConfig {
    pub key: Option<Key>,
    /// `--allow-target PATH[:rw]`.
    pub targets: Vec<AllowedTarget>,
    /// Data-engine threads; None: one per core.
    pub threads: Option<usize>,
}

/// Parses `--allow-target PATH[:rw]` (`:ro` is the default, said aloud).
pub fn parse_allow_target(s: &str) -> Result<AllowedTarget, String> {
    let (path, write) = match s.rsplit_once(':') {
        Some((p, "rw")) => (p, true),
        Some((p, "ro")) => (p, false),
        _ => (s, false),
    };
    if path.is_empty() {
        return Err(format!("--allow-target '{s}': no path"));
    }
    Ok(AllowedTarget {
        path: path.to_string(),
        write,
    })
}

/// Each allowed target pinned as it is now (its canonical path, device
/// and inode, or for a test file yet to be made its directory's): what a
/// disk test later opens must still be that, whatever its path names then.
pub fn pin_targets(targets: &[AllowedTarget]) -> Vec<Result<Pin, String>> {
    (targets.iter())
        .map(|a| {
            iotoll_disk::target::pin(std::path::Path::new(&a.path))
                .map_err(|e| format!("--allow-target {}: {e}", a.path))
        })
        .collect()
}

/// The agent's configuration with its targets pinned at its start.
struct Pinned {
    cfg: AgentConfig,
    pins: Vec<Result<Pin, String>>,
}

/// The endpoint's hook for console sessions; one console at a time. The
/// allowed targets are pinned here, once.
pub fn hook(cfg: AgentConfig) -> ConsoleHook {
    let pins = pin_targets(&cfg.targets);
    let cfg = Arc::new(Pinned { cfg, pins });
    let busy = Arc::new(AtomicBool::new(false));
    ConsoleHook(Arc::new(move |ctl, peer, nonces| {
        session(ctl, peer, nonces, &cfg, &busy)
    }))
}

/// The version this agent says it is. In builds with the `test-hooks`
/// feature (the test suite's), `IOTOLL_TEST_AGENT_VERSION` makes it claim
/// another: how the tests get an incompatible agent.
fn my_version() -> String {
    let fake = cfg!(feature = "test-hooks")
        .then(|| std::env::var("IOTOLL_TEST_AGENT_VERSION").ok())
        .flatten();
    fake.unwrap_or_else(|| iotoll_model::VERSION.into())
}

/// The certificate a TLS test's server sends the console to pin. In
/// builds with the `test-hooks` feature, `IOTOLL_TEST_WRONG_CERT` makes it
/// send another than it presents: how the tests get a pin mismatch.
fn sent_cert(tls: &ServerTls) -> String {
    let wrong =
        cfg!(feature = "test-hooks") && std::env::var_os("IOTOLL_TEST_WRONG_CERT").is_some();
    match wrong.then(ServerTls::generate) {
        Some(Ok(other)) => other.cert_hex(),
        _ => tls.cert_hex(),
    }
}

/// One prepared test, until it is released.
enum Prepared {
    /// The spec, and its targets opened and checked at PREPARE: START
    /// runs on these descriptors, never on the paths again.
    Disk(Box<DiskRequest>, Vec<iotoll_disk::target::Target>),
    Net(Box<NetPairs>),
    Udp(Box<UdpPairs>),
    Crr(Box<CrrPairs>),
}

/// A network test's pairs on this agent: a server's data port, until
/// GATHER has their connections; a client's connections, opened at PREPARE.
struct NetPairs {
    serves: bool,
    params: TestParams,
    pairs: Vec<PairSlot>,
    listener: Option<TcpListener>,
    conns: Vec<Vec<(TcpStream, Role)>>,
    /// The pairs it is the client of and their connections: a client's
    /// opened at PREPARE; a server's (a host in two roles) as PREPARE
    /// named them, then as GATHER gave them, opened at GATHER.
    clients: Vec<PairSlot>,
    client_conns: Vec<Vec<(TcpStream, Role)>>,
    /// A TLS test's server: its certificate and key, made for the test.
    tls: Option<ServerTls>,
    /// Engine threads the console asked for; None: this agent's own.
    threads: Option<u32>,
}

struct Test {
    id: u64,
    prepared: Option<Prepared>,
    /// Sockets kept open after the window until every end has reported.
    held: Arc<Mutex<Vec<OwnedFd>>>,
    worker: Option<std::thread::JoinHandle<()>>,
}

fn session(
    ctl: Control,
    peer: SocketAddr,
    nonces: Nonces,
    pinned: &Arc<Pinned>,
    busy: &Arc<AtomicBool>,
) {
    let local_ip = ctl.stream.local_addr().map(|a| a.ip()).ok();
    let session = Session::new(pinned.cfg.key.as_ref(), &nonces, Side::Agent);
    // Set by an abort (on the reader thread, at once) or a lost console.
    let interrupt = Arc::new(AtomicBool::new(false));
    let flag = interrupt.clone();
    let link = Link::<ToAgent>::start(ctl, session, FromAgent::Beat {}, move |m, at, w| match m {
        ToAgent::Clock { t1 } => {
            let reply = FromAgent::Clock {
                t1,
                t2: at,
                t3: wire::now_ns(),
            };
            link::send(w, &reply);
            None
        }
        ToAgent::Abort { .. } => {
            flag.store(true, Ordering::Release);
            Some(m)
        }
        m => Some(m),
    });
    let link = match link {
        Ok(l) => l,
        Err(e) => return tracing::warn!(%peer, "console session: {e}"),
    };
    let Some(_slot) = Slot::take(busy) else {
        link.send(&FromAgent::Error {
            test: None,
            msg: "another console is driving this agent".into(),
        });
        tracing::info!(%peer, "refused, another console is driving this agent");
        std::thread::sleep(Duration::from_millis(200));
        return;
    };
    let mut c = Console {
        link,
        pinned,
        interrupt,
        local_ip,
        peer,
        test: None,
    };
    let why = loop {
        if c.link.lost() {
            break format!(
                "console lost (silent for {:.1} s)",
                c.link.silent_for().as_secs_f64()
            );
        }
        match c.link.rx.recv_timeout(Duration::from_millis(100)) {
            Ok(Event::Msg(m, _)) => {
                if let Some(why) = c.handle(m) {
                    break why;
                }
            }
            Ok(Event::Closed(why)) => break format!("console gone: {why}"),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => continue,
            Err(_) => break "console gone".into(),
        }
    };
    release(&mut c.test, &c.interrupt);
    c.link.close();
    tracing::info!(%peer, "console session ended: {why}");
}

/// A console's session with this agent, once it holds the agent.
struct Console<'a> {
    link: Link<ToAgent>,
    pinned: &'a Pinned,
    interrupt: Arc<AtomicBool>,
    local_ip: Option<std::net::IpAddr>,
    peer: SocketAddr,
    test: Option<Test>,
}

impl Console<'_> {
    /// Carries out one order; Some(why) when the session ends.
    fn handle(&mut self, m: ToAgent) -> Option<String> {
        match m {
            ToAgent::Info {} => {
                let info = info(&self.pinned.cfg, self.local_ip);
                self.link.send(&FromAgent::Info {
                    info: Box::new(info),
                });
            }
            ToAgent::Clock { .. } | ToAgent::Beat {} => {}
            ToAgent::Prepare { test: id, work } => self.prepare(id, *work),
            ToAgent::Gather { test: id, clients } => {
                let reply = match self.test.as_mut().filter(|t| t.id == id) {
                    Some(t) => gather(t, clients, &self.interrupt, &self.link).map_or_else(
                        |msg| test_error(id, msg),
                        |()| FromAgent::Gathered { test: id },
                    ),
                    None => not_prepared(id),
                };
                self.link.send(&reply);
            }
            ToAgent::Start {
                test: id,
                on_ns,
                off_ns,
            } => self.start(id, on_ns, off_ns),
            ToAgent::Abort { test: id, reason } => {
                let peer = self.peer;
                tracing::info!(%peer, test = id, "test {id} aborted by the console: {reason}");
            }
            ToAgent::Release { test: id } => {
                if self.test.as_ref().is_some_and(|t| t.id == id) {
                    release(&mut self.test, &self.interrupt);
                }
            }
            ToAgent::Bye {} => return Some("console said bye".into()),
        }
        None
    }

    /// PREPARE: whatever test was here is released first.
    fn prepare(&mut self, id: u64, work: Work) {
        release(&mut self.test, &self.interrupt);
        self.interrupt.store(false, Ordering::Release);
        let reply = match prepare(work, self.pinned, &self.interrupt) {
            Ok((p, port, pair_ports)) => {
                let cert = match &p {
                    Prepared::Net(n) => n.tls.as_ref().map(sent_cert),
                    Prepared::Disk(..) | Prepared::Udp(..) | Prepared::Crr(..) => None,
                };
                self.test = Some(Test {
                    id,
                    prepared: Some(p),
                    held: Default::default(),
                    worker: None,
                });
                FromAgent::Prepared {
                    test: id,
                    port,
                    cert,
                    pair_ports,
                }
            }
            Err(msg) => test_error(id, msg),
        };
        self.link.send(&reply);
    }

    /// START: the prepared test runs on a thread of its own, which sends
    /// its report (or why not) when the window has closed.
    fn start(&mut self, id: u64, on_ns: i64, off_ns: i64) {
        let link = &self.link;
        let Some(t) = (self.test.as_mut()).filter(|t| t.id == id && t.prepared.is_some()) else {
            link.send(&not_prepared(id));
            return;
        };
        let (on, off) = match (local_instant(on_ns), local_instant(off_ns)) {
            (Some(on), Some(off)) if on <= off => (on, off),
            _ => {
                link.send(&test_error(
                    id,
                    format!("START's window ({on_ns} .. {off_ns} ns) is not a window on this host's clock"),
                ));
                return;
            }
        };
        let Some(work) = t.prepared.take() else {
            return;
        };
        let (w, flag, held) = (link.writer.clone(), self.interrupt.clone(), t.held.clone());
        let threads = self.pinned.cfg.threads;
        link.send(&FromAgent::Started { test: id });
        let spawned = std::thread::Builder::new()
            .name("iotoll-agent-work".into())
            .spawn(move || {
                let reply = match run(work, on, off, &flag, threads, &held) {
                    Ok(report) => FromAgent::Report {
                        test: id,
                        report: Box::new(report),
                    },
                    Err(msg) => test_error(id, msg),
                };
                link::send(&w, &reply);
            });
        match spawned {
            Ok(h) => t.worker = Some(h),
            Err(e) => {
                link.send(&test_error(id, format!("cannot start the workload: {e}")));
            }
        }
    }
}

fn not_prepared(id: u64) -> FromAgent {
    test_error(id, format!("test {id} is not prepared on this agent"))
}

/// Test `id` failed or was refused here, for `msg`.
fn test_error(id: u64, msg: String) -> FromAgent {
    FromAgent::Error {
        test: Some(id),
        msg,
    }
}

/// Stops a running workload and frees everything the test held.
fn release(test: &mut Option<Test>, interrupt: &AtomicBool) {
    if let Some(mut t) = test.take() {
        if let Some(h) = t.worker.take() {
            if !h.is_finished() {
                interrupt.store(true, Ordering::Release);
            }
            let _ = h.join();
        }
        t.held.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }
}

/// The instant of this host's monotonic clock at wall-clock `ns`; None
/// when it cannot be one (the console's figure is absurd).
fn local_instant(ns: i64) -> Option<Instant> {
    let d = i128::from(ns) - i128::from(wire::now_ns());
    let now = Instant::now();
    let span = Duration::from_nanos(u64::try_from(d.unsigned_abs()).ok()?);
    if d >= 0 {
        now.checked_add(span)
    } else {
        Some(now.checked_sub(span).unwrap_or(now))
    }
}

fn info(cfg: &AgentConfig, local_ip: Option<std::net::IpAddr>) -> AgentInfo {
    let host = iotoll_probe::sysinfo::host(iotoll_model::VERSION, None);
    let network = local_ip.map(iotoll_probe::sysinfo::network);
    AgentInfo {
        version: my_version(),
        proto: wire::AGENT_PROTO,
        hostname: host.host.clone(),
        cpus: iotoll_probe::affinity::online_cpus().len() as u32,
        boot_id: iotoll_probe::sysinfo::boot_id(),
        targets: cfg.targets.clone(),
        disclosure: serde_json::json!({
            "host": iotoll_model::spec::to_json(&host),
            "network": network.map(|n| iotoll_model::spec::to_json(&n)),
        }),
    }
}

fn prepare(
    work: Work,
    pinned: &Pinned,
    interrupt: &AtomicBool,
) -> Result<(Prepared, Option<u16>, Vec<PairPort>), String> {
    match work {
        Work::Disk { order } => {
            let (spec, chosen) = disk_spec(&order, &pinned.cfg.targets)?;
            let pins = (chosen.iter())
                .map(|&i| pinned.pins[i].clone())
                .collect::<Result<Vec<_>, _>>()?;
            // PREPARE makes the test files, so the window is not spent on
            // it, and opens every target once, checked against its pin.
            let targets =
                iotoll_disk::target::prepare_pinned(&spec, &pins, interrupt, &mut |_, _| {})
                    .map_err(|e| e.to_string())?;
            Ok((Prepared::Disk(Box::new(spec), targets), None, Vec::new()))
        }
        // A client-only host's pairs are its client pairs, as a server's
        // own client pairs are.
        Work::NetServe {
            params,
            pairs,
            threads,
            clients,
        } => prepare_net(true, params, pairs, clients, threads),
        Work::NetClient {
            params,
            pairs,
            threads,
        } => prepare_net(false, params, Vec::new(), pairs, threads),
    }
}

/// A network test's pairs on this host: those it serves and those it is
/// the client of (`serves`: it has a data port, even if it serves none).
fn prepare_net(
    serves: bool,
    params: TestParams,
    pairs: Vec<PairSlot>,
    clients: Vec<PairSlot>,
    threads: Option<u32>,
) -> Result<(Prepared, Option<u16>, Vec<PairPort>), String> {
    check_params(&params)?;
    if params.kind == TestKind::Udp {
        let (u, ports) = UdpPairs::prepare(params, pairs, clients)?;
        return Ok((Prepared::Udp(Box::new(u)), None, ports));
    }
    if is_rate(&params) {
        let (c, ports) = CrrPairs::prepare(params, pairs, clients)?;
        return Ok((Prepared::Crr(Box::new(c)), None, ports));
    }
    let (mut listener, mut port, mut tls, mut client_conns) = (None, None, None, Vec::new());
    if serves {
        // Every address of this host: pairs may come to any adapter.
        let listen = |ip: std::net::IpAddr| data_listener(ip, params.sockbuf);
        let l = listen(std::net::Ipv6Addr::UNSPECIFIED.into())
            .or_else(|_| listen(std::net::Ipv4Addr::UNSPECIFIED.into()))
            .map_err(|e| format!("cannot open a data port: {e}"))?;
        let n: usize = pairs.len() * server_roles(&params).len();
        let _ = iotoll_net::sock::ensure_nofile(n as u64 + 256);
        port = Some(
            l.local_addr()
                .map_err(|e| format!("data port: {e}"))?
                .port(),
        );
        listener = Some(l);
        tls = (params.tls.as_ref())
            .map(|_| ServerTls::generate())
            .transpose()
            .map_err(|e| format!("TLS: {e}"))?;
    } else {
        client_conns = open_pairs(&params, &clients)?;
    }
    let n = NetPairs {
        serves,
        params,
        pairs,
        listener,
        conns: Vec::new(),
        clients,
        client_conns,
        tls,
        threads,
    };
    Ok((Prepared::Net(Box::new(n)), port, Vec::new()))
}

/// A client's data connections, pair by pair, to the pairs' servers.
fn open_pairs(
    params: &TestParams,
    pairs: &[PairSlot],
) -> Result<Vec<Vec<(TcpStream, Role)>>, String> {
    let roles: Vec<Role> = server_roles(params)
        .into_iter()
        .map(Role::opposite)
        .collect();
    let _ = iotoll_net::sock::ensure_nofile((pairs.len() * roles.len()) as u64 + 256);
    let spec = ClientSpec {
        sockbuf: params.sockbuf,
        nodelay: params.nodelay,
        ..Default::default()
    };
    let mut conns = Vec::with_capacity(pairs.len());
    for p in pairs {
        let Some(server) = p.server else {
            return Err(format!("pair {}: no server address", p.pair));
        };
        let socks = iotoll_net::client::open_data(&spec, server, p.token, &roles)
            .map_err(|e| format!("pair {}: {e}", p.pair))?;
        conns.push(socks.into_iter().zip(roles.iter().copied()).collect());
    }
    Ok(conns)
}

/// A connection-rate test (crr, cc).
fn is_rate(p: &TestParams) -> bool {
    matches!(p.kind, TestKind::Crr | TestKind::Cc)
}

fn check_params(p: &TestParams) -> Result<(), String> {
    if p.kind == TestKind::Udp {
        // The endpoint's checks want a local client's flow ports; agents
        // open their own.
        let max = iotoll_net::Limits::default().max_time;
        let time = Duration::from_millis(p.time_ms.saturating_add(p.ramp_ms));
        if p.time_ms == 0 || time > max {
            return Err(format!(
                "ramp + time must be positive and at most {} s",
                max.as_secs()
            ));
        }
        return iotoll_net::udp::validate_placed(p);
    }
    iotoll_net::server::validate(p, &iotoll_net::Limits::default()).map_err(|e| e.to_string())?;
    if !matches!(p.kind, TestKind::Stream | TestKind::Rr) && !is_rate(p) {
        return Err(format!(
            "multi-host tests run stream, request/response, UDP and connection-rate workloads, not {:?}",
            p.kind
        ));
    }
    Ok(())
}

/// The disk test an order asks for, on targets this agent allows, and
/// which of them (places in `allowed`).
fn disk_spec(
    o: &DiskOrder,
    allowed: &[AllowedTarget],
) -> Result<(DiskRequest, Vec<usize>), String> {
    let list = || {
        allowed
            .iter()
            .map(|a| format!("{}{}", a.path, if a.write { ":rw" } else { "" }))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if allowed.is_empty() {
        return Err(
            "this agent allows no disk targets: start it with --allow-target PATH[:rw]".into(),
        );
    }
    // The order names a target by the text the agent announced; what is
    // opened is checked against the target's pin, not this text.
    let chosen: Vec<usize> = if o.targets.is_empty() {
        (0..allowed.len()).collect()
    } else {
        (o.targets.iter())
            .map(|t| {
                allowed.iter().position(|a| &a.path == t).ok_or_else(|| {
                    format!(
                        "target {t} is not allowed by this agent (allowed: {})",
                        list()
                    )
                })
            })
            .collect::<Result<_, _>>()?
    };
    let targets: Vec<&AllowedTarget> = chosen.iter().map(|&i| &allowed[i]).collect();
    let writes = o.lines.iter().any(|l| l.read_pct < 100);
    if writes {
        if let Some(ro) = targets.iter().find(|a| !a.write) {
            return Err(format!(
                "target {} is allowed read-only on this agent and the test writes (the agent's --allow-target {}:rw allows writing)",
                ro.path, ro.path
            ));
        }
    }
    let lines = o.lines.iter().map(OrderLine::access_line).collect();
    let spec = DiskRequest {
        targets: targets.iter().map(|a| PathBuf::from(&a.path)).collect(),
        // Only a target allowed for writing may be created.
        create: targets.iter().all(|a| a.write),
        keep: true,
        spec_name: o.spec_name.clone(),
        lines,
        qd: o.qd,
        workers: o.workers,
        spread: o.spread,
        cpus: None,
        size: o.size,
        offset: o.offset,
        engine: EngineChoice::parse(&o.engine)?,
        buffered: o.buffered,
        ramp: Duration::from_millis(o.ramp_ms),
        time: Duration::from_millis(o.time_ms),
        config: o.config.clone(),
        // `:rw` is this agent's own consent to writing the target.
        allow_destructive: writes,
        iscsi: Default::default(),
    };
    spec.validate().map_err(|e| e.to_string())?;
    Ok((spec, chosen))
}

/// Servers: their own client pairs' connections opened (a host in two
/// roles), then every served pair's data connections in (or why not).
fn gather(
    t: &mut Test,
    given: Vec<PairSlot>,
    interrupt: &AtomicBool,
    link: &Link<ToAgent>,
) -> Result<(), String> {
    let n = match t.prepared.as_mut() {
        Some(Prepared::Udp(u)) => return u.gather(given),
        Some(Prepared::Crr(c)) => return c.gather(given),
        Some(Prepared::Net(n)) if n.serves => n,
        _ => return Err(format!("test {} serves no network pairs here", t.id)),
    };
    let NetPairs {
        params,
        pairs,
        listener,
        conns,
        clients,
        client_conns,
        ..
    } = &mut **n;
    let Some(l) = listener.take() else {
        return Ok(());
    };
    PairSlot::same_pairs(&given, clients.iter())?;
    // Connecting needs only the other servers' listening sockets (their
    // backlog), so two hosts that serve each other cannot wait on each other.
    *client_conns = open_pairs(params, &given)?;
    *clients = given;
    let roles = server_roles(params);
    let groups: Vec<(u64, &[Role])> = pairs.iter().map(|p| (p.token, &roles[..])).collect();
    let n = groups.len() * roles.len();
    let deadline = Instant::now() + Duration::from_secs(10) + Duration::from_millis(n as u64);
    let abort = || {
        if interrupt.load(Ordering::Acquire) {
            Some("the console aborted the test".to_string())
        } else if link.lost() {
            Some("the console was lost".to_string())
        } else {
            None
        }
    };
    *conns = iotoll_net::server::accept_groups(l, &groups, params, deadline, &abort)
        .map_err(|e| e.to_string())?;
    Ok(())
}

/// START to COLLECT on this agent: the load from now, the window from `on`
/// to `off` (earlier if interrupted).
fn run(
    work: Prepared,
    on: Instant,
    off: Instant,
    interrupt: &AtomicBool,
    threads: Option<usize>,
    held: &Mutex<Vec<OwnedFd>>,
) -> Result<AgentReport, String> {
    // The thread that opens and closes the window must wake on time even
    // when the load saturates every CPU (a lab's agents share two).
    let rt = iotoll_probe::affinity::realtime_edges();
    let r = match work {
        Prepared::Disk(spec, targets) => run_disk(&spec, targets, on, off, interrupt),
        Prepared::Net(n) => {
            let threads = n.threads.map(|t| t as usize).or(threads);
            run_net(*n, (on, off), interrupt, threads, held, rt.is_ok())
        }
        Prepared::Udp(u) => u.start().and_then(|(load, phase, threads)| {
            window::run(load, phase, threads, (on, off), interrupt, held, rt.is_ok())
        }),
        Prepared::Crr(c) => c.start().and_then(|(load, phase, threads)| {
            window::run(load, phase, threads, (on, off), interrupt, held, rt.is_ok())
        }),
    };
    r.map(|mut report| {
        if let Err(e) = rt {
            report.notes.push(format!("the window's edges ran at normal priority ({e}): under full load they may be late by milliseconds (see on_us, off_us)"));
        }
        report
    })
}

fn run_disk(
    spec: &DiskRequest,
    targets: Vec<iotoll_disk::target::Target>,
    on: Instant,
    off: Instant,
    interrupt: &AtomicBool,
) -> Result<AgentReport, String> {
    let schedule = Schedule::new(on, off);
    let before = iotoll_probe::sysinfo::iface_counters();
    let r = iotoll_disk::runner::run_prepared(
        spec,
        targets,
        RunControl {
            interrupted: interrupt,
            progress: &mut Silent,
            schedule: Some(&schedule),
        },
    );
    let after = iotoll_probe::sysinfo::iface_counters();
    let doc = match r {
        Ok(doc) => doc,
        Err(iotoll_disk::DiskError::Failed { msg, .. }) => return Err(msg),
        Err(e) => return Err(e.to_string()),
    };
    let (opened, closed) = schedule.marks();
    let metric = |k: &str| doc.metrics.get(k).copied().unwrap_or(0.0);
    Ok(AgentReport {
        on_ns: opened.map(wire::system_time_ns),
        off_ns: closed.map(wire::system_time_ns),
        window_s: metric(iotoll_model::metrics::WINDOW_S),
        cpu: doc.cpu.local.clone(),
        ifaces: window::iface_delta(&before, &after),
        interrupted: doc.status == iotoll_model::ResultStatus::Interrupted,
        errors: metric(iotoll_model::metrics::ERRORS) as u64,
        disk: Some(Box::new(doc)),
        ..Default::default()
    })
}

fn run_net(
    n: NetPairs,
    window: (Instant, Instant),
    interrupt: &AtomicBool,
    threads: Option<usize>,
    held: &Mutex<Vec<OwnedFd>>,
    rt_edges: bool,
) -> Result<AgentReport, String> {
    // Served pairs, then client pairs: the engines' connection order.
    let pairs: Vec<PairSlot> = n.pairs.iter().chain(&n.clients).cloned().collect();
    let sizes: Vec<usize> = (n.conns.iter().chain(&n.client_conns))
        .map(Vec::len)
        .collect();
    let client_pairs = n.clients;
    let (served, client) = crate::engines::secure(
        &n.params,
        n.tls.as_ref(),
        n.conns,
        &client_pairs,
        n.client_conns,
        interrupt,
    )?;
    let (engines, phase, threads) = Engines::start(&n.params, served, client, threads)?;
    let load = TcpLoad {
        engines,
        kind: n.params.kind,
        pairs,
        sizes,
        client_pairs,
    };
    window::run(load, phase, threads, window, interrupt, held, rt_edges)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allow_target_flags() {
        let a = parse_allow_target("/dev/sdb:rw").unwrap();
        assert_eq!((a.path.as_str(), a.write), ("/dev/sdb", true));
        let a = parse_allow_target("/data/f.tst").unwrap();
        assert_eq!((a.path.as_str(), a.write), ("/data/f.tst", false));
        let a = parse_allow_target("/x:ro").unwrap();
        assert_eq!((a.path.as_str(), a.write), ("/x", false));
        assert!(parse_allow_target(":rw").is_err());
    }

    fn order(read: u32) -> DiskOrder {
        DiskOrder::from_spec(&DiskRequest {
            lines: vec![iotoll_disk::AccessLine::new(100, 4096, read, 100)],
            size: Some(1 << 20),
            time: Duration::from_secs(1),
            ..DiskRequest::default()
        })
    }

    #[test]
    fn targets_are_the_agents_to_allow() {
        let ro = vec![AllowedTarget {
            path: "/data/a".into(),
            write: false,
        }];
        let e = disk_spec(&order(50), &ro).unwrap_err();
        assert!(e.contains("read-only") && e.contains("/data/a:rw"), "{e}");
        let (s, _) = disk_spec(&order(100), &ro).unwrap();
        assert_eq!(s.targets, vec![PathBuf::from("/data/a")]);
        assert!(!s.create && !s.allow_destructive);
        let mut o = order(100);
        o.targets = vec!["/etc/passwd".into()];
        let e = disk_spec(&o, &ro).unwrap_err();
        assert!(
            e.contains("/etc/passwd is not allowed") && e.contains("/data/a"),
            "{e}"
        );
        let e = disk_spec(&order(100), &[]).unwrap_err();
        assert!(e.contains("--allow-target"), "{e}");
    }
}
