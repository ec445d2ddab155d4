//! The clients: `iotoll net stream` and `iotoll net rr`. The client drives
//! the test: it opens the data connections, runs the ramp-up, opens its CPU
//! window and tells the endpoint to open its own, then closes both and
//! merges the endpoint's report into one result.

pub(crate) mod drive;
pub(crate) mod ends;
pub(crate) mod result;

use crate::auth::{nonce, Key, Nonces, Session, Side};
use crate::engine::{DataConn, Engine, EngineOut, Role};
use crate::proto::{Control, Dir, Msg, ProtoError, TestKind, TestParams, PROTO_VERSION};
use crate::server::{default_threads, engine_params, server_roles, DATA_HEADER};
use crate::tls::{self, Cipher, ClientTls, Negotiated};
use crate::{resolve, sock, NetError, DEFAULT_PORT};
use iotoll_model::ResultDoc;
use iotoll_run::{Counting, Phase, PhaseCell, RunControl};
use result::result_doc;
pub use result::tolerated_failures;
use std::io::Write;
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

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
    /// UDP: bits per second of datagrams each sending end offers over its
    /// flows; None: unlimited. (`msg` is the datagram's size.)
    pub rate: Option<u64>,
    /// crr/cc: close with a reset (SO_LINGER 0), so no TIME_WAIT is left.
    pub linger0: bool,
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
            rate: None,
            linger0: false,
        }
    }
}

/// Client-side limits: the endpoint enforces its own as well.
pub const MAX_CONNS: u32 = 10_000;
pub const MAX_MSG: u64 = 16 << 20;

impl ClientSpec {
    /// A UDP test's defaults: datagrams that fill a 1500-byte MTU.
    pub fn udp() -> ClientSpec {
        ClientSpec {
            kind: TestKind::Udp,
            msg: crate::udp::DEFAULT_DATAGRAM,
            ..ClientSpec::default()
        }
    }

    pub fn validate(&self) -> Result<(), NetError> {
        let bad = |m: String| Err(NetError::Invalid(m));
        if self.kind == TestKind::Udp {
            crate::udp::validate(self).map_err(NetError::Invalid)?;
        }
        if matches!(self.kind, TestKind::Crr | TestKind::Cc) {
            crate::crr::client::validate(self).map_err(NetError::Invalid)?;
        }
        if self.linger0 && !matches!(self.kind, TestKind::Crr | TestKind::Cc) {
            return bad("--linger0 applies to crr and cc tests only".into());
        }
        if self.conns == 0 || self.conns > MAX_CONNS {
            return bad(format!(
                "--conns must be between 1 and {MAX_CONNS}, got {}",
                self.conns
            ));
        }
        let sizes: &[(&str, u64)] = match self.kind {
            TestKind::Stream => &[("--msg", self.msg)],
            TestKind::Rr | TestKind::Crr => &[("--req", self.req), ("--resp", self.resp)],
            TestKind::Udp | TestKind::Cc => &[],
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
            dir: if matches!(self.kind, TestKind::Rr | TestKind::Crr | TestKind::Cc) {
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
            rate: self.rate,
            udp_ports: Vec::new(),
            linger0: self.linger0,
        }
    }
}

pub(crate) fn peer_err(peer: &SocketAddr, msg: impl Into<String>) -> NetError {
    NetError::Peer {
        peer: peer.to_string(),
        msg: msg.into(),
    }
}

pub(crate) fn proto_err(peer: &SocketAddr, what: &str, e: ProtoError) -> NetError {
    use std::io::ErrorKind as K;
    // A bare "report: Connection reset by peer" left a tester guessing
    // which end had given up.
    let gone = match &e {
        ProtoError::Closed => true,
        ProtoError::Io(io) => matches!(
            io.kind(),
            K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe
        ),
        _ => false,
    };
    let hint = if gone {
        " (the endpoint closed the control connection without a word: it stopped, or ended the test; its log says why)"
    } else {
        ""
    };
    peer_err(peer, format!("{what}: {e}{hint}"))
}

/// Reads the next message, turning the endpoint's `error` into ours.
pub(crate) fn recv(
    ctl: &mut Control,
    peer: &SocketAddr,
    what: &str,
    t: Duration,
) -> Result<Msg, NetError> {
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

pub(crate) fn unexpected(peer: &SocketAddr, want: &str, got: &Msg) -> NetError {
    let msg = format!("protocol error: expected {want}, got {got:?}");
    peer_err(peer, msg)
}

pub(crate) const CONTROL_TIMEOUT: Duration = Duration::from_secs(10);

/// The endpoint ended the test on its own: its error message, or that it left.
pub(crate) fn endpoint_ended(ctl: &mut Control, addr: &SocketAddr) -> NetError {
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
                " (nothing listens there: start `iotoll net serve` on that host, or give its port; a suite's agent on it may have stopped)"
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
pub(crate) struct Accepted {
    pub(crate) ctl: Control,
    pub(crate) data_port: u16,
    pub(crate) token: u64,
    pub(crate) cert: Option<String>,
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
    let msg = match feature {
        Some((_, _, flag)) => format!(
            "the endpoint's iotoll ({version}) is too old for {flag}: it does not know the request (it said: {msg}); run iotoll {} or later there",
            iotoll_model::VERSION
        ),
        None => msg,
    };
    NetError::Peer { peer, msg }
}

/// A test the endpoint accepted and is ready for, and this host's address
/// on the control connection: for the tests (UDP, crr, cc) whose data
/// paths open after the endpoint's ready.
pub(crate) fn accepted_ready(
    addr: &SocketAddr,
    spec: &ClientSpec,
    params: &TestParams,
    interrupted: &AtomicBool,
) -> Result<(Accepted, IpAddr), NetError> {
    let mut a = request_test_waiting(addr, spec, params, interrupted)?;
    expect_ready(&mut a.ctl, addr, CONTROL_TIMEOUT)?;
    let local_ip = local_ip(&a.ctl)?;
    Ok((a, local_ip))
}

/// [`request_test`], retrying for up to `spec.busy_wait` while the endpoint
/// is busy with another test (saying so once, as a warning), so two users of one
/// endpoint queue instead of failing. The one retry loop of every client
/// (`net stream`, `net rr`, suites).
pub(crate) fn request_test_waiting(
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
            tracing::warn!(
                "{peer} is busy with another test; retrying for up to {} (--busy-wait)",
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

/// Runs a stream, request/response or UDP test against an endpoint.
pub fn run(spec: &ClientSpec, mut rc: RunControl) -> Result<ResultDoc, NetError> {
    match spec.kind {
        TestKind::Udp => return crate::udp::client::run(spec, rc),
        TestKind::Crr | TestKind::Cc => return crate::crr::client::run(spec, rc),
        _ => {}
    }
    spec.validate()?;
    let addr = resolve(&spec.peer, DEFAULT_PORT)?;
    let mut setup = set_up(spec, &addr, rc.interrupted)?;
    let conns = std::mem::take(&mut setup.conns);
    let threads = spec.threads.unwrap_or_else(default_threads);
    let phase = Arc::new(PhaseCell::new(Phase::Ramp));
    let engine = Engine::start(conns, engine_params(&setup.params), phase.clone(), threads)
        .map_err(|e| NetError::io("cannot start engine", e))?;
    let counting = match spec.kind {
        TestKind::Rr => Counting::Transactions,
        _ => Counting::NetBytes,
    };
    let plan = drive::Plan {
        addr: &addr,
        spec,
        counting,
        labels: Default::default(),
        phase: &phase,
        report_wait: CONTROL_TIMEOUT,
    };
    let w = drive::drive(&plan, &mut setup.ctl, engine, &mut rc)?;
    result_doc(spec, &addr, &setup, threads, w)
}

/// A test the endpoint accepted, with its data connections open.
pub(super) struct Setup {
    pub(super) ctl: Control,
    pub(super) params: TestParams,
    pub(super) local_ip: IpAddr,
    /// Handed to the engine when the test starts.
    pub(super) conns: Vec<(DataConn, Role)>,
    pub(super) data_conns: usize,
    pub(super) connect_s: f64,
    /// With TLS: what the handshakes agreed on.
    pub(super) tls: Option<Negotiated>,
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
    let local_ip = local_ip(&ctl)?;
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
    expect_ready(&mut ctl, addr, t)?;
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

/// This host's address on the control connection: where its data
/// connections and datagrams leave from.
pub(crate) fn local_ip(ctl: &Control) -> Result<IpAddr, NetError> {
    let a = ctl.stream.local_addr();
    a.map(|a| a.ip())
        .map_err(|e| NetError::io("control connection: local address", e))
}

/// Waits up to `t` for the endpoint's word that it is ready to start.
pub(crate) fn expect_ready(
    ctl: &mut Control,
    addr: &SocketAddr,
    t: Duration,
) -> Result<(), NetError> {
    match recv(ctl, addr, "ready", t)? {
        Msg::Ready {} => Ok(()),
        other => Err(unexpected(addr, "ready", &other)),
    }
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

/// The stream/rr engine under the shared window driver: on an early exit
/// it is stopped and joined, so its threads never outlive the test.
impl drive::Driven for Engine {
    type Out = EngineOut;
    fn totals(&self) -> (u64, u64) {
        Engine::totals(self)
    }
    fn finish(self) -> EngineOut {
        self.join()
    }
    fn abandon(self) {
        self.join();
    }
}
