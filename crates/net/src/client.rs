//! The clients: `iotoll net stream` and `iotoll net rr`. The client drives
//! the test: it opens the data connections, runs the ramp-up, opens its CPU
//! window and tells the endpoint to open its own, then closes both and
//! merges the endpoint's report into one result.

use crate::auth::{nonce, Key, Nonces, Session, Side};
use crate::engine::{DataConn, Engine, EngineOut, Role};
use crate::proto::{
    ByteStats, Control, Dir, Identity, Msg, ProtoError, ServerReport, TestKind, TestParams,
    PROTO_VERSION,
};
use crate::server::{default_threads, engine_params, server_roles, DATA_HEADER};
use crate::tls::{self, Cipher, ClientTls, Negotiated};
use crate::{resolve, sock, NetError, DEFAULT_PORT};
use iotoll_model::metrics as mn;
use iotoll_model::result::DEFAULT_INTERFERENCE_PCT;
use iotoll_model::spec::{Disclosure, NetDisclosure, Spec};
use iotoll_model::{derive_metrics, CpuSection, Kind, Metrics, ResultDoc, ResultStatus};
use iotoll_probe::ClosedWindow;
use iotoll_run::{
    interrupted_note, jain_fairness, latency_report, take_cpu_report, write_latency_metrics, Clock,
    Counting, HostClock, Phase, PhaseCell, RunControl, SeriesRecorder,
};
use std::io::Write;
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

#[derive(Debug, Clone)]
pub struct ClientSpec {
    /// HOST[:PORT] of the endpoint.
    pub peer: String,
    pub kind: TestKind,
    pub dir: Dir,
    pub conns: u32,
    pub msg: u64,
    pub sockbuf: Option<u64>,
    pub nodelay: bool,
    /// Local addresses the data connections are spread over, round-robin.
    pub bind: Vec<IpAddr>,
    pub req: u64,
    pub resp: u64,
    pub burst: u32,
    pub ramp: Duration,
    pub time: Duration,
    pub key: Option<Key>,
    pub config: Option<String>,
    /// Data-engine threads; None: one per core.
    pub threads: Option<usize>,
    /// How long to keep retrying an endpoint that is busy with another
    /// test (zero: fail at once).
    pub busy_wait: Duration,
    /// TLS 1.3 on every data connection, with this cipher.
    pub tls: Option<Cipher>,
    /// Receivers check every byte against the senders' pattern (stream).
    pub verify: bool,
}

/// Default for [`ClientSpec::busy_wait`].
pub const BUSY_WAIT: Duration = Duration::from_secs(10);

impl Default for ClientSpec {
    fn default() -> Self {
        ClientSpec {
            peer: format!("127.0.0.1:{DEFAULT_PORT}"),
            kind: TestKind::Stream,
            dir: Dir::Tx,
            conns: 1,
            msg: 128 << 10,
            sockbuf: None,
            nodelay: false,
            bind: Vec::new(),
            req: 1,
            resp: 1,
            burst: 1,
            ramp: Duration::from_secs(1),
            time: Duration::from_secs(10),
            key: None,
            config: None,
            threads: None,
            busy_wait: BUSY_WAIT,
            tls: None,
            verify: false,
        }
    }
}

/// Client-side limits: the endpoint enforces its own as well.
pub const MAX_CONNS: u32 = 10_000;
pub const MAX_MSG: u64 = 16 << 20;

impl ClientSpec {
    pub fn validate(&self) -> Result<(), NetError> {
        let bad = |m: String| Err(NetError::Invalid(m));
        if self.conns == 0 || self.conns > MAX_CONNS {
            return bad(format!(
                "--conns must be between 1 and {MAX_CONNS}, got {}",
                self.conns
            ));
        }
        let sizes: &[(&str, u64)] = match self.kind {
            TestKind::Stream => &[("--msg", self.msg)],
            TestKind::Rr => &[("--req", self.req), ("--resp", self.resp)],
        };
        for (flag, v) in sizes {
            if *v == 0 || *v > MAX_MSG {
                return bad(format!("{flag} must be between 1 byte and 16m, got {v}"));
            }
        }
        if self.sockbuf == Some(0) {
            return bad("--sockbuf must be positive".into());
        }
        if self.kind == TestKind::Rr && (self.burst == 0 || self.burst > 1024) {
            return bad(format!(
                "--burst must be between 1 and 1024, got {}",
                self.burst
            ));
        }
        if self.time.is_zero() {
            return bad("--time must be positive".into());
        }
        if self.config.as_ref().is_some_and(|c| c.trim().is_empty()) {
            return bad("--config must not be empty".into());
        }
        if self.verify && self.kind != TestKind::Stream {
            return bad("--verify applies to stream tests only".into());
        }
        Ok(())
    }

    pub fn params(&self) -> TestParams {
        TestParams {
            kind: self.kind,
            dir: if self.kind == TestKind::Rr {
                Dir::Tx
            } else {
                self.dir
            },
            conns: self.conns,
            msg: self.msg,
            sockbuf: self.sockbuf,
            nodelay: self.nodelay,
            req: self.req,
            resp: self.resp,
            burst: self.burst,
            ramp_ms: self.ramp.as_millis() as u64,
            time_ms: self.time.as_millis() as u64,
            tls: self.tls.map(|c| c.name().to_string()),
            verify: self.verify,
        }
    }
}

fn peer_err(peer: &SocketAddr, msg: impl Into<String>) -> NetError {
    NetError::Peer {
        peer: peer.to_string(),
        msg: msg.into(),
    }
}

fn proto_err(peer: &SocketAddr, what: &str, e: ProtoError) -> NetError {
    peer_err(peer, format!("{what}: {e}"))
}

/// Reads the next message, turning the endpoint's `error` into ours.
fn recv(ctl: &mut Control, peer: &SocketAddr, what: &str, t: Duration) -> Result<Msg, NetError> {
    match ctl.recv(t) {
        Ok(Msg::Error { msg }) => Err(peer_err(peer, msg)),
        Ok(Msg::Busy { msg }) => Err(NetError::Busy {
            peer: peer.to_string(),
            msg,
        }),
        Ok(m) => Ok(m),
        Err(e) => Err(proto_err(peer, what, e)),
    }
}

fn unexpected(peer: &SocketAddr, want: &str, got: &Msg) -> NetError {
    let msg = format!("protocol error: expected {want}, got {got:?}");
    peer_err(peer, msg)
}

const CONTROL_TIMEOUT: Duration = Duration::from_secs(10);

/// The endpoint ended the test on its own: its error message, or that it left.
fn endpoint_ended(ctl: &mut Control, addr: &SocketAddr) -> NetError {
    match ctl.recv(Duration::from_secs(1)) {
        Ok(Msg::Error { msg }) => peer_err(addr, format!("the endpoint ended the test: {msg}")),
        Ok(other) => unexpected(addr, "nothing during the test", &other),
        Err(ProtoError::Closed) => peer_err(
            addr,
            "the endpoint closed the control connection during the test (stopped or crashed?)",
        ),
        Err(e) => proto_err(addr, "during the test", e),
    }
}

/// Connects, checks the endpoint's version and runs the mutual
/// authentication; returns the control connection ready for a test.
pub fn handshake(addr: &SocketAddr, key: Option<&Key>) -> Result<Handshake, NetError> {
    let s = TcpStream::connect_timeout(addr, Duration::from_secs(5)).map_err(|e| {
        let hint = match e.kind() {
            std::io::ErrorKind::ConnectionRefused => {
                " (nothing listens there: start `iotoll net serve` on that host, or give its port)"
            }
            _ => "",
        };
        peer_err(addr, format!("cannot connect: {e}{hint}"))
    })?;
    let mut ctl = Control::new(s).map_err(|e| peer_err(addr, e.to_string()))?;
    let (proto, sn, server_auth, version) = match recv(&mut ctl, addr, "hello", CONTROL_TIMEOUT)? {
        Msg::Hello {
            proto,
            nonce,
            auth,
            version,
        } => (proto, nonce, auth, version),
        other => return Err(unexpected(addr, "hello", &other)),
    };
    if proto != PROTO_VERSION {
        return Err(peer_err(
            addr,
            format!("speaks control protocol {proto}, this iotoll speaks {PROTO_VERSION}; use the same iotoll version on both ends"),
        ));
    }
    match (server_auth, key) {
        (true, None) => return Err(peer_err(addr, "the endpoint requires a pre-shared key: add --auth-key FILE")),
        (false, Some(_)) => {
            return Err(peer_err(
                addr,
                "the endpoint has no key (started without --auth-key), so it cannot prove who it is; refusing because --auth-key was given",
            ))
        }
        _ => {}
    }
    let cn =
        nonce().map_err(|e| peer_err(addr, format!("no randomness for the challenge: {e}")))?;
    ctl.send(&Msg::Auth {
        nonce: cn.clone(),
        mac: key.map(|k| k.mac("client", &sn, &cn)),
    })
    .map_err(|e| proto_err(addr, "auth", e))?;
    let mac = match recv(&mut ctl, addr, "auth", CONTROL_TIMEOUT)? {
        Msg::AuthOk { mac } => mac,
        other => return Err(unexpected(addr, "auth_ok", &other)),
    };
    if key.is_some_and(|k| !mac.is_some_and(|m| k.verify("server", &cn, &sn, &m))) {
        let msg = "the endpoint failed to prove the pre-shared key";
        return Err(peer_err(addr, msg));
    }
    let nonces = Nonces {
        server: sn,
        client: cn,
    };
    // The proofs cover only the handshake: the rest is sealed, or someone
    // on the path could rewrite the data port, the certificate the client
    // pins, or the endpoint's report.
    if let Some(k) = key {
        ctl.seal_with(Session::new(Some(k), &nonces, Side::Client));
    }
    Ok(Handshake {
        ctl,
        version,
        nonces,
    })
}

/// An authenticated control connection: the endpoint's iotoll version and
/// the session's two challenges.
pub struct Handshake {
    pub ctl: Control,
    pub version: String,
    pub nonces: Nonces,
}

/// What the endpoint accepted: where to open the data connections, and
/// with TLS its certificate.
struct Accepted {
    ctl: Control,
    data_port: u16,
    token: u64,
    cert: Option<String>,
}

/// Connects, authenticates and asks for the test.
fn request_test(
    addr: &SocketAddr,
    key: Option<&Key>,
    params: &TestParams,
) -> Result<Accepted, NetError> {
    let Handshake {
        mut ctl, version, ..
    } = handshake(addr, key)?;
    ctl.send(&Msg::Test {
        params: params.clone(),
    })
    .map_err(|e| proto_err(addr, "test", e))?;
    match recv(&mut ctl, addr, "accept", CONTROL_TIMEOUT) {
        Ok(Msg::Accept {
            data_port,
            token,
            cert,
        }) => Ok(Accepted {
            ctl,
            data_port,
            token,
            cert,
        }),
        Ok(other) => Err(unexpected(addr, "accept", &other)),
        Err(e) => Err(too_old(e, params, &version)),
    }
}

/// An endpoint that predates a feature refuses the request's field by
/// name; say which feature and which version.
fn too_old(e: NetError, params: &TestParams, version: &str) -> NetError {
    let NetError::Peer { peer, msg } = e else {
        return e;
    };
    let feature = [
        ("tls", params.tls.is_some(), "--tls"),
        ("verify", params.verify, "--verify"),
    ]
    .into_iter()
    .find(|(field, asked, _)| *asked && msg.contains(&format!("unknown field `{field}`")));
    match feature {
        Some((_, _, flag)) => NetError::Peer {
            peer,
            msg: format!(
                "the endpoint's iotoll ({version}) is too old for {flag}: it does not know the request (it said: {msg}); run iotoll {} or later there",
                iotoll_model::VERSION
            ),
        },
        None => NetError::Peer { peer, msg },
    }
}

/// [`request_test`], retrying for up to `spec.busy_wait` while the endpoint
/// is busy with another test (saying so once on stderr), so two users of one
/// endpoint queue instead of failing. The one retry loop of every client
/// (`net stream`, `net rr`, suites).
fn request_test_waiting(
    addr: &SocketAddr,
    spec: &ClientSpec,
    params: &TestParams,
    interrupted: &AtomicBool,
) -> Result<Accepted, NetError> {
    use std::sync::atomic::Ordering;
    let t0 = Instant::now();
    let end = t0 + spec.busy_wait;
    let mut told = false;
    loop {
        let (peer, msg) = match request_test(addr, spec.key.as_ref(), params) {
            Err(NetError::Busy { peer, msg }) => (peer, msg),
            r => return r,
        };
        if Instant::now() >= end {
            let msg = if told {
                format!(
                    "{msg} (still busy after waiting {:.0} s; --busy-wait sets how long)",
                    t0.elapsed().as_secs_f64()
                )
            } else {
                msg
            };
            return Err(NetError::Busy { peer, msg });
        }
        if !told {
            eprintln!(
                "iotoll: {peer} is busy with another test; retrying for up to {} (--busy-wait)",
                humantime::format_duration(spec.busy_wait)
            );
            told = true;
        }
        // Retry a few times a second; Ctrl-C ends the wait.
        let next = (Instant::now() + Duration::from_millis(200)).min(end);
        while Instant::now() < next {
            if interrupted.load(Ordering::Relaxed) {
                return Err(NetError::Interrupted("while waiting for a busy endpoint"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Opens the data connections: buffers set before connect (the window
/// scale is chosen at the handshake), local addresses round-robin (from
/// `spec`: `sockbuf`, `bind`, `nodelay`).
pub fn open_data(
    spec: &ClientSpec,
    server: SocketAddr,
    token: u64,
    roles: &[Role],
) -> Result<Vec<TcpStream>, NetError> {
    use socket2::{Domain, Protocol, Socket, Type};
    let mut out = Vec::with_capacity(roles.len());
    for (i, role) in roles.iter().enumerate() {
        let ctx = |what: &str, e: std::io::Error| {
            peer_err(&server, format!("data connection {}: {what}: {e}", i + 1))
        };
        let s = Socket::new(
            Domain::for_address(server),
            Type::STREAM,
            Some(Protocol::TCP),
        )
        .map_err(|e| ctx("socket", e))?;
        if let Some(b) = spec.sockbuf {
            sock::set_sockbuf(&s, b).map_err(|e| ctx("sockbuf", e))?;
        }
        if !spec.bind.is_empty() {
            let ip = spec.bind[i % spec.bind.len()];
            s.bind(&SocketAddr::new(ip, 0).into())
                .map_err(|e| ctx(&format!("bind {ip}"), e))?;
        }
        s.connect_timeout(&server.into(), Duration::from_secs(5))
            .map_err(|e| ctx("connect", e))?;
        let mut t: TcpStream = s.into();
        let mut h = [0u8; DATA_HEADER];
        h[..8].copy_from_slice(&token.to_be_bytes());
        h[8..12].copy_from_slice(&(i as u32).to_be_bytes());
        h[12] = role.code();
        t.write_all(&h).map_err(|e| ctx("header", e))?;
        if spec.nodelay {
            let _ = t.set_nodelay(true);
        }
        out.push(t);
    }
    Ok(out)
}

/// Runs a stream or request/response test against an endpoint.
pub fn run(spec: &ClientSpec, mut rc: RunControl) -> Result<ResultDoc, NetError> {
    spec.validate()?;
    let addr = resolve(&spec.peer, DEFAULT_PORT)?;
    let mut setup = set_up(spec, &addr, rc.interrupted)?;
    let measured = measure(spec, &addr, &mut setup, &mut rc)?;
    result_doc(spec, &addr, &setup, measured)
}

/// A test the endpoint accepted, with its data connections open.
struct Setup {
    ctl: Control,
    params: TestParams,
    local_ip: IpAddr,
    /// Handed to the engine when the test starts.
    conns: Vec<(DataConn, Role)>,
    data_conns: usize,
    connect_s: f64,
    /// With TLS: what the handshakes agreed on.
    tls: Option<Negotiated>,
}

/// Asks the endpoint for the test and opens the data connections; the
/// endpoint says when it has them all.
fn set_up(
    spec: &ClientSpec,
    addr: &SocketAddr,
    interrupted: &AtomicBool,
) -> Result<Setup, NetError> {
    let params = spec.params();
    let roles: Vec<Role> = server_roles(&params)
        .into_iter()
        .map(Role::opposite)
        .collect();
    sock::ensure_nofile(roles.len() as u64 + 64)?;

    let Accepted {
        mut ctl,
        data_port,
        token,
        cert,
    } = request_test_waiting(addr, spec, &params, interrupted)?;
    let local_ip = ctl
        .stream
        .local_addr()
        .map_err(|e| NetError::io("control connection: local address", e))?
        .ip();
    let t_connect = Instant::now();
    let socks = open_data(spec, SocketAddr::new(addr.ip(), data_port), token, &roles)?;
    let connect_s = t_connect.elapsed().as_secs_f64();
    let t = CONTROL_TIMEOUT + Duration::from_millis(roles.len() as u64);
    let (conns, tls) = match spec.tls {
        Some(cipher) => {
            let (c, n) = start_tls(socks, cipher, cert, &mut ctl, addr, Instant::now() + t)?;
            (c, Some(n))
        }
        None => (socks.into_iter().map(DataConn::from).collect(), None),
    };
    let conns: Vec<(DataConn, Role)> = conns.into_iter().zip(roles).collect();
    match recv(&mut ctl, addr, "ready", t)? {
        Msg::Ready {} => {}
        other => return Err(unexpected(addr, "ready", &other)),
    }
    Ok(Setup {
        ctl,
        params,
        local_ip,
        data_conns: conns.len(),
        conns,
        connect_s,
        tls,
    })
}

/// The TLS handshakes of the data connections, the endpoint's certificate
/// (from the control connection) pinned. If the endpoint ends the test
/// meanwhile, its reason is the error.
fn start_tls(
    socks: Vec<TcpStream>,
    cipher: Cipher,
    cert: Option<String>,
    ctl: &mut Control,
    addr: &SocketAddr,
    deadline: Instant,
) -> Result<(Vec<DataConn>, Negotiated), NetError> {
    let Some(cert) = cert else {
        return Err(peer_err(
            addr,
            "the endpoint accepted a TLS test without sending its certificate",
        ));
    };
    let client = ClientTls::pinned(cipher, &cert).map_err(|e| peer_err(addr, e.to_string()))?;
    let abort = || ctl.peer_spoke();
    match tls::handshake_all(socks, tls::Side::Client(&client), deadline, &abort) {
        Ok((conns, n)) => Ok((
            conns
                .into_iter()
                .map(|c| DataConn::Tls(Box::new(c)))
                .collect(),
            n,
        )),
        Err(tls::HandshakeError::Aborted) => Err(endpoint_ended(ctl, addr)),
        // The endpoint usually says why (its side of the same failure).
        Err(e) if ctl.peer_spoke() => {
            let theirs = endpoint_ended(ctl, addr);
            Err(peer_err(addr, format!("{e}; {theirs}")))
        }
        Err(e) => Err(peer_err(addr, e.to_string())),
    }
}

/// What both ends measured.
struct Measured {
    threads: usize,
    started_at: String,
    completed: bool,
    closed: ClosedWindow,
    out: EngineOut,
    report: ServerReport,
    series: SeriesRecorder,
    /// Seconds from this host's window closing to the endpoint's report.
    report_after_s: f64,
}

/// Runs the ramp-up and the window at both ends, then collects the
/// endpoint's report.
fn measure(
    spec: &ClientSpec,
    addr: &SocketAddr,
    setup: &mut Setup,
    rc: &mut RunControl,
) -> Result<Measured, NetError> {
    let conns = std::mem::take(&mut setup.conns);
    let ctl = &mut setup.ctl;
    let threads = spec.threads.unwrap_or_else(default_threads);
    let phase = Arc::new(PhaseCell::new(Phase::Ramp));
    let engine = Engine::start(conns, engine_params(&setup.params), phase.clone(), threads)
        .map_err(|e| NetError::io("cannot start engine", e))?;
    let counting = match spec.kind {
        TestKind::Stream => Counting::NetBytes,
        TestKind::Rr => Counting::Transactions,
    };
    let clock = HostClock;
    let mut series = SeriesRecorder::new(counting, spec.ramp + spec.time, clock.now());
    // Each wait samples the series and watches the control connection: an
    // endpoint that closes it or speaks unasked has ended the test.
    let wait = |series: &mut SeriesRecorder, until, rc: &mut RunControl, ctl: &Control| {
        let go_on = || !ctl.peer_spoke();
        series.wait(&clock, until, rc, &phase, || engine.totals(), go_on)
    };
    let ramp_end = series.t_run() + spec.ramp;
    if !wait(&mut series, ramp_end, rc, ctl) {
        phase.set(Phase::Stop);
        engine.join();
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
        engine.join();
        return Err(endpoint_ended(ctl, addr));
    }
    let ended = ctl
        .send(&Msg::WindowEnd {})
        .map_err(|e| proto_err(addr, "window end", e));
    // `out` keeps the data sockets open until the endpoint has reported.
    let out = engine.join();
    ended?;
    let report = match recv(ctl, addr, "report", CONTROL_TIMEOUT)? {
        Msg::Report { report } => *report,
        other => return Err(unexpected(addr, "report", &other)),
    };
    // The endpoint closed its window after this host did and before its
    // report came: how much later, at most.
    let report_after_s = window_closed.elapsed().as_secs_f64();
    let _ = ctl.send(&Msg::Stop {});
    Ok(Measured {
        threads,
        started_at,
        completed,
        closed,
        out,
        report,
        series,
        report_after_s,
    })
}

/// Says where the endpoint runs when it is this host.
fn same_host_note(
    me: &Identity,
    same_host: Option<bool>,
    addr: &SocketAddr,
    local_ip: IpAddr,
) -> Option<String> {
    let local = addr.ip().is_loopback() || local_ip == addr.ip();
    if same_host == Some(true) {
        Some(format!(
            "the endpoint is on this host (same kernel boot id {}{}): its traffic is host-internal copying, not a NIC, and its CPU is this host's CPU, so the remote_* CPU metrics are left out of metrics (they would count the same kernel twice); cpu.remote is kept for transparency",
            me.boot_id.as_deref().unwrap_or("?"),
            if local {
                ""
            } else {
                ", though at another address: a network namespace or container"
            }
        ))
    } else if local {
        Some("the endpoint is on this host: loopback traffic is host-internal copying, not a NIC, and both ends' CPU is the same host's".into())
    } else {
        None
    }
}

/// Says that nothing the endpoint sent can be trusted when the control
/// connection is not keyed and leaves this host (loopback has no path to
/// stand on).
fn unauthenticated_note(spec: &ClientSpec, addr: &SocketAddr) -> Option<String> {
    if spec.key.is_some() || addr.ip().is_loopback() {
        return None;
    }
    let pin = match spec.tls {
        Some(_) => ", and the certificate this host pinned for TLS,",
        None => "",
    };
    Some(format!(
        "not authenticated (no --auth-key): the endpoint's figures in this result{pin} came over a control connection that anyone on the path could have rewritten; run both ends with --auth-key to rule that out"
    ))
}

/// Merges both ends' figures into the result, with the notes that say how
/// to read them; a failed test is an error that carries it.
fn result_doc(
    spec: &ClientSpec,
    addr: &SocketAddr,
    setup: &Setup,
    m: Measured,
) -> Result<ResultDoc, NetError> {
    let Measured {
        mut closed,
        out,
        report,
        ..
    } = m;
    let (local_ip, completed) = (setup.local_ip, m.completed);
    // Same kernel at both ends (loopback, another network namespace or a
    // container of this host): the boot ids say so, whatever the addresses.
    let local_disclosure = iotoll_probe::sysinfo::network(local_ip);
    let me = local_disclosure.identity.clone().unwrap_or_default();
    let peer = Identity::from_disclosure(&report.disclosure);
    let same_host = me.same_host(&peer);
    if let Some(pid) = crate::proto::local_pid_of(&me, &peer) {
        closed.mark_endpoint(pid);
    }

    let mut notes = Vec::new();
    if !completed {
        notes.push(interrupted_note(closed.window_s, spec.time));
    }
    notes.extend(same_host_note(&me, same_host, addr, local_ip));
    notes.extend(unauthenticated_note(spec, addr));
    notes.extend(failed_ends(&out, &report).map(|(end, errors, first)| {
        format!("{errors} connection(s) failed before {end}'s window closed; first error: {first}")
    }));
    let failure = failure(&out, &report, setup.data_conns)
        .or_else(|| windows_disagree(closed.window_s, report.window_s))
        .or_else(|| received_beyond_sent(spec, &out, closed.window_s, &report, m.report_after_s));
    if let Some(f) = &failure {
        notes.insert(0, format!("failed: {f}"));
    }
    let cpu = take_cpu_report(closed.report, "local CPU", &mut notes);
    if let Some(e) = &report.cpu_error {
        notes.push(format!("endpoint CPU not measured: {e}"));
    }
    let metrics = net_metrics(
        spec,
        &out,
        closed.window_s,
        &report,
        cpu.as_ref(),
        setup.connect_s,
        same_host == Some(true),
    );
    let kind = match spec.kind {
        TestKind::Stream => Kind::NetStream,
        TestKind::Rr => Kind::NetRr,
    };
    let mut doc = ResultDoc {
        status: if completed {
            ResultStatus::Complete
        } else {
            ResultStatus::Interrupted
        },
        started_at: m.started_at,
        config: spec.config.clone(),
        metrics,
        cpu: CpuSection {
            local: cpu,
            remote: report.cpu.clone(),
            same_host,
        },
        latency: latency_report(&out.rtt),
        series: m.series.into_points(),
        notes,
        disclosure: Some(Disclosure::Net(Box::new(NetDisclosure {
            local: local_disclosure,
            remote: report.disclosure.clone(),
            tls: (setup.tls.as_ref()).map(|n| tls_disclosure(n, spec.key.is_some())),
        }))),
        ..ResultDoc::new(kind, spec_json(spec, addr, m.threads))
    };
    doc.apply_interference_threshold(DEFAULT_INTERFERENCE_PCT);
    if let Some(msg) = failure {
        doc.status = ResultStatus::Failed;
        return Err(NetError::Failed {
            msg,
            doc: Box::new(doc),
        });
    }
    Ok(doc)
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
fn windows_disagree(mine_s: f64, endpoint_s: f64) -> Option<String> {
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
fn conn_rates(ends: [(&ByteStats, f64); 2]) -> (f64, f64, f64, Option<f64>) {
    let (mut n, mut sum, mut sum_sq, mut min, mut max) = (0.0, 0.0, 0.0, f64::INFINITY, 0f64);
    for (b, window_s) in ends.into_iter().filter(|(b, w)| b.conns > 0 && *w > 0.0) {
        let (k, c) = (8.0 / 1e6 / window_s, b.conns as f64);
        (n, sum, sum_sq) = (n + c, sum + b.sum as f64 * k, sum_sq + b.sum_sq * k * k);
        (min, max) = (min.min(b.min as f64 * k), max.max(b.max as f64 * k));
    }
    (n, min, max, jain_fairness(n, sum, sum_sq))
}

/// `bytes` over `window_s` in Mbit/s; None without a window.
fn mbit_s(bytes: u64, window_s: f64) -> Option<f64> {
    (window_s > 0.0).then(|| bytes as f64 * 8.0 / 1e6 / window_s)
}

fn net_metrics(
    spec: &ClientSpec,
    out: &EngineOut,
    window_s: f64,
    report: &ServerReport,
    cpu: Option<&iotoll_model::CpuReport>,
    connect_s: f64,
    same_host: bool,
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
        TestKind::Rr => {
            put(mn::CONNS, Some(spec.conns as f64));
            put(
                mn::TRANS_S,
                (window_s > 0.0).then(|| out.transactions as f64 / window_s),
            );
            write_latency_metrics(&out.rtt, "rtt", &mut m);
        }
    }
    if let Some(c) = cpu {
        c.write_metrics(&mut m, "");
    }
    // A peer on this kernel is this host: its CPU is already in ours.
    if let Some(c) = report.cpu.as_ref().filter(|_| !same_host) {
        c.write_metrics(&mut m, "remote_");
    }
    derive_metrics(&mut m);
    m
}

fn spec_json(spec: &ClientSpec, addr: &SocketAddr, threads: usize) -> Spec {
    use iotoll_model::spec::{NetSpec, RrSpec, StreamSpec};
    let net = NetSpec {
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
    match spec.kind {
        TestKind::Stream => Spec::Stream(Box::new(StreamSpec {
            net,
            dir: iotoll_model::spec::word(&spec.dir),
            msg: spec.msg,
        })),
        TestKind::Rr => Spec::Rr(Box::new(RrSpec {
            net,
            req: spec.req,
            resp: spec.resp,
            burst: spec.burst,
        })),
    }
}

fn tls_disclosure(n: &Negotiated, keyed: bool) -> iotoll_model::spec::TlsDisclosure {
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
