//! The endpoint: `iotoll net serve`. One test at a time; a valid test
//! request while a test runs is told "busy" at once. Handshakes run
//! concurrently (capped per source and in total, oldest dropped first), so
//! a connection that says nothing holds up nobody; every control read has
//! a deadline, every failure ends the session and frees its sockets, and
//! the accept loop never waits on a client.

use crate::auth::{nonce, Key, Session, Side};
use crate::engine::{DataConn, Engine, EngineParams, Role};
use crate::proto::{
    Control, Dir, Msg, ProtoError, ServerReport, TestKind, TestParams, PROTO_VERSION,
};
use crate::tls::{self, Cipher, ServerTls};
use crate::{sock, NetError};
use iotoll_probe::CpuWindow;
use iotoll_run::{Phase, PhaseCell};
use std::io::Read;
use std::net::{IpAddr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::io::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Server-side limits on what a client may ask for.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_conns: u32,
    pub max_time: Duration,
    pub max_msg: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_conns: 10_000,
            max_time: Duration::from_secs(3600),
            max_msg: 16 << 20,
        }
    }
}

#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub listen: SocketAddr,
    pub key: Option<Key>,
    /// Serve one client, then exit.
    pub once: bool,
    pub limits: Limits,
    /// Data-engine threads; None: one per core.
    pub threads: Option<usize>,
    /// Deadline for each handshake message (hello to test request).
    pub handshake: Duration,
    /// Runs tests that ask for TLS (`net serve --no-tls` refuses them).
    pub tls: bool,
    /// Serves console sessions (`iotoll agent`); None: `net serve`, which
    /// refuses them.
    pub console: Option<ConsoleHook>,
}

/// What an agent does with a console's session once the handshake has
/// authenticated it: the connection, the peer, and both nonces (the
/// session's MACs are keyed on them, so a recorded session never verifies
/// again).
pub type ConsoleSession = dyn Fn(Control, SocketAddr, Nonces) + Send + Sync;

pub use crate::auth::Nonces;

#[derive(Clone)]
pub struct ConsoleHook(pub Arc<ConsoleSession>);

impl std::fmt::Debug for ConsoleHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ConsoleHook(..)")
    }
}

/// What an authenticated client asked for first.
enum First {
    Test(TestParams),
    Console(Nonces),
}

/// Default deadline for each handshake message: a client that connects and
/// says nothing holds the endpoint this long at most.
pub const HANDSHAKE: Duration = Duration::from_secs(5);

/// Slack beyond the announced ramp/time before the server gives up.
const SLACK: Duration = Duration::from_secs(10);
/// Data-connection header: token (8), index (4), client role (1).
pub const DATA_HEADER: usize = 13;

/// Why a handshake or a test ended early: logged, and told to the client
/// when it can be (see `tells_client`).
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The endpoint will not go on with what the client asked for or did.
    #[error("{0}")]
    Refused(String),
    #[error("authentication failed")]
    AuthFailed,
    #[error("this endpoint has no key (started without --auth-key)")]
    NoKey,
    #[error("client stopped the test")]
    Stopped,
    /// (what the endpoint expected, the message that came instead)
    #[error("expected {0}, got {1}")]
    Unexpected(&'static str, String),
    #[error("while waiting for {0}: {1}")]
    Waiting(&'static str, #[source] ProtoError),
    #[error(transparent)]
    Proto(#[from] ProtoError),
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// (what the endpoint was doing, what failed)
    #[error("{0}: {1}")]
    IoIn(String, #[source] std::io::Error),
    #[error("endpoint: {0}")]
    Nofile(#[from] sock::NofileError),
    #[error("endpoint CPU window: {0}")]
    Cpu(#[source] iotoll_probe::ProbeError),
}

impl SessionError {
    fn io(context: impl Into<String>, source: std::io::Error) -> SessionError {
        SessionError::IoIn(context.into(), source)
    }

    fn unexpected(want: &'static str, got: &Msg) -> SessionError {
        SessionError::Unexpected(want, got.name())
    }

    /// False when the control connection failed (nothing can be told), or
    /// the client ended the test, or `expect` has told it already.
    fn tells_client(&self) -> bool {
        use SessionError::*;
        !matches!(self, Io(_) | Proto(_) | Waiting(..) | Stopped)
    }
}

/// Checks a test request against the limits; the error goes to the client.
pub fn validate(p: &TestParams, l: &Limits) -> Result<(), SessionError> {
    let refused = |m: String| Err(SessionError::Refused(m));
    if p.conns == 0 || p.conns > l.max_conns {
        return refused(format!(
            "conns must be between 1 and {} (this server's limit)",
            l.max_conns
        ));
    }
    let time = Duration::from_millis(p.time_ms.saturating_add(p.ramp_ms));
    if p.time_ms == 0 || time > l.max_time {
        return refused(format!(
            "ramp + time must be positive and at most {} s (this server's limit)",
            l.max_time.as_secs()
        ));
    }
    let sizes: &[(&str, u64)] = match p.kind {
        TestKind::Stream => &[("msg", p.msg)],
        TestKind::Rr => &[("req", p.req), ("resp", p.resp)],
    };
    for (name, v) in sizes {
        if *v == 0 || *v > l.max_msg {
            return refused(format!(
                "{name} must be between 1 and {} bytes (this server's limit)",
                l.max_msg
            ));
        }
    }
    if p.kind == TestKind::Rr && (p.burst == 0 || p.burst > 1024) {
        return refused("burst must be between 1 and 1024".into());
    }
    if p.kind == TestKind::Rr && p.dir != Dir::Tx {
        return refused("request/response tests have no direction".into());
    }
    if p.sockbuf.is_some_and(|b| b == 0 || b > 1 << 30) {
        return refused("sockbuf must be between 1 byte and 1 GiB".into());
    }
    if let Some(c) = &p.tls {
        if Cipher::parse(c).is_none() {
            return refused(format!(
                "unknown TLS cipher '{c}' (this endpoint knows {})",
                Cipher::names()
            ));
        }
    }
    if p.verify && p.kind != TestKind::Stream {
        return refused("verify applies to stream tests only".into());
    }
    Ok(())
}

/// Data connections a test has: (count, role of the server on each).
pub fn server_roles(p: &TestParams) -> Vec<Role> {
    let n = p.conns as usize;
    match (p.kind, p.dir) {
        (TestKind::Rr, _) => vec![Role::RrServer; n],
        (TestKind::Stream, Dir::Tx) => vec![Role::Recv; n],
        (TestKind::Stream, Dir::Rx) => vec![Role::Send; n],
        (TestKind::Stream, Dir::Bidir) => {
            let mut v = vec![Role::Recv; n];
            v.extend(std::iter::repeat_n(Role::Send, n));
            v
        }
    }
}

pub fn engine_params(p: &TestParams) -> EngineParams {
    EngineParams {
        msg: p.msg.max(1) as usize,
        req: p.req.max(1),
        resp: p.resp.max(1),
        burst: p.burst.max(1),
        verify: p.verify,
    }
}

pub fn default_threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// Where the endpoint writes one line per event.
pub type Log = Arc<dyn Fn(&str) + Send + Sync>;

/// Most connections that may be in their handshake at once from one source
/// (an IPv4 address, or an IPv6 /64) and in total; beyond them the oldest
/// is dropped, so a flood cannot exhaust descriptors or threads and a new
/// client always gets its turn.
pub const MAX_PENDING_PER_SOURCE: usize = 16;
pub const MAX_PENDING: usize = 128;

/// Where a connection is in its handshake (see [`Pending`]).
const HS_OPEN: u8 = 0;
/// The client proved the key (only with a key): dropped only after every
/// unauthenticated one.
const HS_AUTHED: u8 = 1;
/// The handshake is over: the connection holds the test slot, was told
/// busy, or was refused.
const HS_DONE: u8 = 2;
/// Dropped by the endpoint to make room.
const HS_DROPPED: u8 = 3;

/// A connection still in its handshake, as the accept loop sees it (and,
/// cloned, its own thread).
#[derive(Clone)]
struct Pending {
    source: IpAddr,
    state: Arc<AtomicU8>,
    /// A second handle on the socket, to shut it down when dropped; the
    /// connection's thread closes it when the handshake ends, so it never
    /// keeps a finished connection open.
    sock: Arc<Mutex<Option<TcpStream>>>,
}

fn take_clone(sock: &Mutex<Option<TcpStream>>) -> Option<TcpStream> {
    sock.lock().unwrap_or_else(|p| p.into_inner()).take()
}

/// What the accept loop and the sessions share.
struct Shared {
    cfg: ServerConfig,
    log: Log,
    /// The one-test slot: taken by a connection that has authenticated (when
    /// a key is set) and sent a valid test request, freed when everything
    /// its test held is released.
    busy: AtomicBool,
    /// Tests that have ended (for `--once`).
    finished: AtomicU64,
}

/// Holds the test slot; frees it once, when released or dropped.
struct Slot(Option<Arc<Shared>>);

impl Slot {
    fn release(&mut self) {
        if let Some(s) = self.0.take() {
            s.busy.store(false, Ordering::Release);
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.release();
    }
}

/// The source a per-source cap applies to: the IPv4 address, or the /64 of
/// an IPv6 one (one host usually owns a whole /64).
fn source_of(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
    }
}

/// Drops the oldest pending handshake (of `source`, if given): unauthenticated
/// ones first. False when there was none to drop.
fn drop_oldest(pending: &mut Vec<Pending>, source: Option<IpAddr>) -> bool {
    loop {
        let pick = [HS_OPEN, HS_AUTHED].into_iter().find_map(|want| {
            pending
                .iter()
                .position(|p| {
                    source.is_none_or(|s| p.source == s) && p.state.load(Ordering::Acquire) == want
                })
                .map(|i| (i, want))
        });
        let Some((i, want)) = pick else {
            return false;
        };
        match pending[i].state.compare_exchange(
            want,
            HS_DROPPED,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => {
                let p = pending.remove(i);
                if let Some(s) = take_clone(&p.sock) {
                    let _ = s.shutdown(std::net::Shutdown::Both);
                }
                return true;
            }
            // Its handshake ended meanwhile: room made all the same.
            Err(now) if now >= HS_DONE => {
                pending.remove(i);
                return true;
            }
            // It has just proven the key: choose again.
            Err(_) => {}
        }
    }
}

/// Makes room for one more pending handshake from `source`; returns how
/// many were dropped.
fn make_room(pending: &mut Vec<Pending>, source: IpAddr) -> u64 {
    pending.retain(|p| p.state.load(Ordering::Acquire) < HS_DONE);
    let mut dropped = 0;
    while pending.iter().filter(|p| p.source == source).count() >= MAX_PENDING_PER_SOURCE
        && drop_oldest(pending, Some(source))
    {
        dropped += 1;
    }
    while pending.len() >= MAX_PENDING && drop_oldest(pending, None) {
        dropped += 1;
    }
    dropped
}

/// Runs the endpoint until `stop` is set (or after one test with `once`).
pub fn serve(cfg: &ServerConfig, stop: &AtomicBool, log: Log) -> Result<(), NetError> {
    let listener = TcpListener::bind(cfg.listen)
        .map_err(|e| NetError::io(format!("cannot listen on {}", cfg.listen), e))?;
    serve_on(listener, cfg, stop, log)
}

/// Serves on a listener the caller bound (an in-process endpoint on an
/// ephemeral port); `cfg.listen` is ignored.
///
/// Every connection gets its own thread for its handshake (at most
/// [`MAX_PENDING`], oldest dropped first), so a silent or slow client holds
/// nobody up; only a connection that has authenticated and sent a valid
/// test request claims the one-test slot, and only such a request is ever
/// told "busy".
pub fn serve_on(
    listener: TcpListener,
    cfg: &ServerConfig,
    stop: &AtomicBool,
    log: Log,
) -> Result<(), NetError> {
    if cfg.handshake.is_zero() {
        return Err(NetError::Invalid(
            "the handshake timeout must be positive".into(),
        ));
    }
    listener
        .set_nonblocking(true)
        .map_err(|e| NetError::io("listener", e))?;
    // Two descriptors per pending handshake, plus the header reads of a
    // test's data port: raise the soft limit if it is low (best effort).
    let _ = sock::ensure_nofile(2 * MAX_PENDING as u64 + MAX_HALF_OPEN as u64 + 64);
    let addr = listener.local_addr().map(|a| a.to_string());
    let auth = match cfg.key {
        Some(_) => "pre-shared key required",
        None => "no authentication",
    };
    log(&format!(
        "endpoint listening on {} ({auth})",
        addr.unwrap_or_default()
    ));
    let shared = Arc::new(Shared {
        cfg: cfg.clone(),
        log: log.clone(),
        busy: AtomicBool::new(false),
        finished: AtomicU64::new(0),
    });
    let mut pending: Vec<Pending> = Vec::new();
    let mut dropped = 0u64;
    let mut dropped_logged = Instant::now();
    loop {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        if cfg.once && shared.finished.load(Ordering::Acquire) > 0 {
            break;
        }
        if dropped > 0 && dropped_logged.elapsed() >= Duration::from_secs(1) {
            log(&format!(
                "dropped {dropped} connection(s) still in their handshake to make room (at most {MAX_PENDING_PER_SOURCE} per source, {MAX_PENDING} in all; oldest first)"
            ));
            dropped = 0;
            dropped_logged = Instant::now();
        }
        match listener.accept() {
            Ok((stream, peer)) => {
                let _ = stream.set_nonblocking(false);
                let source = source_of(peer.ip());
                dropped += make_room(&mut pending, source);
                let sock = match stream.try_clone() {
                    Ok(s) => Arc::new(Mutex::new(Some(s))),
                    Err(e) => {
                        log(&format!("{peer}: cannot serve: {e}"));
                        continue;
                    }
                };
                let state = Arc::new(AtomicU8::new(HS_OPEN));
                let p = Pending {
                    source,
                    state,
                    sock,
                };
                let (mine, shared) = (p.clone(), shared.clone());
                let spawned = std::thread::Builder::new()
                    .name("iotoll-session".into())
                    .stack_size(512 << 10)
                    .spawn(move || connection(stream, peer, &mine, &shared));
                match spawned {
                    Ok(_) => pending.push(p),
                    Err(e) => log(&format!("{peer}: cannot start a session: {e}")),
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                // Sleeps in the kernel until a client arrives; wakes a few
                // times a second to see Ctrl-C and finished tests.
                sock::wait_readable(listener.as_raw_fd(), Duration::from_millis(200));
            }
            Err(e) => {
                // EMFILE and the like: back off, keep serving.
                log(&format!("accept: {e}"));
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
    // Handshakes still under way end now.
    while drop_oldest(&mut pending, None) {}
    // Ctrl-C while a test runs: the process exits and the kernel closes its
    // sockets, so the client learns at once; waiting could take an hour.
    if shared.busy.load(Ordering::Acquire) {
        log("stopping: the running test is abandoned");
    }
    Ok(())
}

/// One connection: its handshake, then (holding the slot) its test.
fn connection(stream: TcpStream, peer: SocketAddr, hs: &Pending, shared: &Arc<Shared>) {
    let (cfg, log) = (&shared.cfg, &shared.log);
    let r = handshake(stream, cfg, &hs.state);
    // Out of the accept loop's hands from here; a connection it dropped to
    // make room (and counted) ends without a word.
    let dropped = hs.state.swap(HS_DONE, Ordering::AcqRel) == HS_DROPPED;
    drop(take_clone(&hs.sock));
    let (mut ctl, params) = match r {
        _ if dropped => return,
        Ok((ctl, First::Test(p))) => (ctl, p),
        Ok((ctl, First::Console(nonces))) => match &cfg.console {
            Some(hook) => {
                log(&format!("{peer}: console session"));
                return (hook.0)(ctl, peer, nonces);
            }
            // The handshake refused it already.
            None => return,
        },
        Err(e) => return log(&format!("{peer}: session ended: {e}")),
    };
    if shared
        .busy
        .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        reject_busy(ctl);
        log(&format!("{peer}: refused, a test is running"));
        return;
    }
    let mut slot = Slot(Some(shared.clone()));
    let r = session(&mut ctl, params, cfg, &mut slot, peer, log);
    // Everything the test held was released when `session` returned: free
    // the slot before telling the client, so its next test finds it free.
    slot.release();
    match r {
        Ok(summary) => log(&format!("{peer}: {summary}")),
        Err(e) => {
            if e.tells_client() {
                let _ = ctl.send(&Msg::Error { msg: e.to_string() });
            }
            log(&format!("{peer}: session ended: {e}"));
        }
    }
    shared.finished.fetch_add(1, Ordering::AcqRel);
}

/// Stops the engine and frees its sockets however the session ends.
struct EngineGuard {
    phase: Arc<PhaseCell>,
    engine: Option<Engine>,
}

impl Drop for EngineGuard {
    fn drop(&mut self) {
        self.phase.set(Phase::Stop);
        if let Some(e) = self.engine.take() {
            e.join();
        }
    }
}

fn expect(
    ctl: &mut Control,
    got: Result<Msg, ProtoError>,
    want: &'static str,
) -> Result<Msg, SessionError> {
    let waiting = |e| SessionError::Waiting(want, e);
    match got {
        Ok(Msg::Stop {}) => Err(SessionError::Stopped),
        Ok(m) => Ok(m),
        Err(
            e @ (ProtoError::Malformed(_)
            | ProtoError::TooLarge(..)
            | ProtoError::Forged(_)
            | ProtoError::Unsealed(_)),
        ) => {
            let msg = match e {
                // Which end saw it: the client reports this as its own error.
                ProtoError::Forged(_) | ProtoError::Unsealed(_) => {
                    format!("the endpoint refused a message from this client: {e}")
                }
                _ => e.to_string(),
            };
            let _ = ctl.send(&Msg::Error { msg });
            if matches!(e, ProtoError::TooLarge(..)) {
                // The rest of the frame may still be arriving: closing with
                // it unread would reset the connection and could destroy
                // the message before the client reads it.
                close_gently(ctl);
            }
            Err(waiting(e))
        }
        Err(e) => Err(waiting(e)),
    }
}

/// Half-closes and discards what the peer still sends, for a short while,
/// so that an error message is delivered rather than reset.
fn close_gently(ctl: &mut Control) {
    let _ = ctl.stream.shutdown(std::net::Shutdown::Write);
    let end = Instant::now() + Duration::from_millis(500);
    let mut buf = [0u8; 16 << 10];
    let mut left: usize = 4 << 20;
    while left > 0 {
        let t = end.saturating_duration_since(Instant::now());
        if t.is_zero() || ctl.stream.set_read_timeout(Some(t)).is_err() {
            break;
        }
        match ctl.stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => left = left.saturating_sub(n),
        }
    }
}

fn refuse<T>(ctl: &mut Control, err: SessionError) -> Result<T, SessionError> {
    let msg = err.to_string();
    let _ = ctl.send(&Msg::Error { msg });
    Err(err)
}

/// The handshake, from hello to a valid test request (or a console
/// session, for an agent); every message within `cfg.handshake`. Claims
/// nothing: the caller takes the slot afterwards.
fn handshake(
    stream: TcpStream,
    cfg: &ServerConfig,
    state: &AtomicU8,
) -> Result<(Control, First), SessionError> {
    let mut ctl = Control::new(stream)?;
    let sn = nonce()?;
    ctl.send(&Msg::Hello {
        proto: PROTO_VERSION,
        version: iotoll_model::VERSION.to_string(),
        nonce: sn.clone(),
        auth: cfg.key.is_some(),
    })?;

    let got = ctl.recv(cfg.handshake);
    let (cn, mac) = match expect(&mut ctl, got, "auth")? {
        Msg::Auth { nonce, mac } => (nonce, mac),
        other => return refuse(&mut ctl, SessionError::unexpected("auth", &other)),
    };
    match (&cfg.key, mac) {
        (Some(k), Some(m)) if k.verify("client", &sn, &cn, &m) => {
            // Proven: dropped to make room only after every stranger.
            let _ = state.compare_exchange(HS_OPEN, HS_AUTHED, Ordering::AcqRel, Ordering::Acquire);
        }
        (Some(_), _) => return refuse(&mut ctl, SessionError::AuthFailed),
        (None, Some(_)) => return refuse(&mut ctl, SessionError::NoKey),
        (None, None) => {}
    }
    ctl.send(&Msg::AuthOk {
        mac: cfg.key.as_ref().map(|k| k.mac("server", &cn, &sn)),
    })?;
    let nonces = Nonces {
        server: sn,
        client: cn,
    };
    // The proofs cover only the handshake: everything after it (the test,
    // the data port and certificate, the report) is sealed, or someone on
    // the path could rewrite it.
    if let Some(k) = &cfg.key {
        ctl.seal_with(Session::new(Some(k), &nonces, Side::Endpoint));
    }

    let got = ctl.recv(cfg.handshake);
    let params = match expect(&mut ctl, got, "test")? {
        Msg::Test { params } => params,
        Msg::Console { .. } if cfg.console.is_some() => {
            return Ok((ctl, First::Console(nonces)));
        }
        Msg::Console { .. } => {
            let msg = format!(
                "this is `iotoll net serve` ({}): it serves network tests only; start `iotoll agent` on this host for a console",
                iotoll_model::VERSION
            );
            return refuse(&mut ctl, SessionError::Refused(msg));
        }
        other => return refuse(&mut ctl, SessionError::unexpected("test", &other)),
    };
    if let Err(e) = validate(&params, &cfg.limits) {
        return refuse(&mut ctl, e);
    }
    if params.tls.is_some() && !cfg.tls {
        let msg = "this endpoint was started with --no-tls: it runs no TLS tests";
        return refuse(&mut ctl, SessionError::Refused(msg.into()));
    }
    Ok((ctl, First::Test(params)))
}

/// A test's data port on `ip`, with the test's socket buffers (accepted
/// sockets inherit them, and the window scale is chosen from them at the
/// handshake) and a deep accept backlog: std listens with 128, which drops
/// SYNs when a thousand connections arrive at once, and each retry costs a
/// second.
pub fn data_listener(ip: IpAddr, sockbuf: Option<u64>) -> std::io::Result<TcpListener> {
    let listener = TcpListener::bind(SocketAddr::new(ip, 0))?;
    if let Some(b) = sockbuf {
        let _ = sock::set_sockbuf(&listener, b);
    }
    let _ = socket2::SockRef::from(&listener).listen(8192);
    Ok(listener)
}

/// A random token that identifies a test's (or a pair's) data connections.
pub fn data_token() -> std::io::Result<u64> {
    Ok(u64::from_le_bytes(iotoll_model::secret::random()?))
}

/// One test, holding the slot: from the data port to the report. The slot
/// is freed, and every socket and thread of the test released, before the
/// report is sent, so the client's next test finds the endpoint free.
/// Returns a summary line.
fn session(
    ctl: &mut Control,
    params: TestParams,
    cfg: &ServerConfig,
    slot: &mut Slot,
    peer: SocketAddr,
    log: &Log,
) -> Result<String, SessionError> {
    let local_ip = ctl.stream.local_addr()?.ip();
    let roles = server_roles(&params);
    sock::ensure_nofile(roles.len() as u64 + 2 * MAX_PENDING as u64 + MAX_HALF_OPEN as u64 + 64)?;
    let listener = data_listener(local_ip, params.sockbuf)
        .map_err(|e| SessionError::io("endpoint cannot open a data port", e))?;
    let data_port = listener.local_addr()?.port();
    let token = data_token()?;
    // A certificate of its own for each test, pinned by the client.
    let tls = match params.tls {
        Some(_) => Some(ServerTls::generate().map_err(|e| SessionError::Refused(e.to_string()))?),
        None => None,
    };
    let cert = tls.as_ref().map(ServerTls::cert_hex);
    ctl.send(&Msg::Accept {
        data_port,
        token,
        cert,
    })?;
    log(&format!(
        "{peer}: {:?} {:?} test with {} connection(s) accepted, data port {data_port}",
        params.kind, params.dir, params.conns
    ));

    let deadline = Instant::now() + SLACK + Duration::from_millis(roles.len() as u64);
    let conns = accept_data(listener, ctl, token, &roles, &params, deadline)?;
    let conns = match &tls {
        Some(t) => start_tls(conns, t, ctl, deadline)?,
        None => conns.into_iter().map(|(s, r)| (s.into(), r)).collect(),
    };
    ctl.send(&Msg::Ready {})?;

    let phase = Arc::new(PhaseCell::new(Phase::Ramp));
    let engine = Engine::start(
        conns,
        engine_params(&params),
        phase.clone(),
        cfg.threads.unwrap_or_else(default_threads),
    )
    .map_err(|e| SessionError::io("cannot start engine", e))?;
    let mut guard = EngineGuard {
        phase: phase.clone(),
        engine: Some(engine),
    };

    let got = ctl.recv(Duration::from_millis(params.ramp_ms) + SLACK);
    match expect(ctl, got, "window start")? {
        Msg::WindowStart {} => {}
        other => return Err(SessionError::unexpected("window_start", &other)),
    }
    let window = CpuWindow::start_with(|| phase.set(Phase::Measure)).map_err(SessionError::Cpu)?;
    let got = ctl.recv(Duration::from_millis(params.time_ms) + SLACK);
    match expect(ctl, got, "window end")? {
        Msg::WindowEnd {} => {}
        other => return Err(SessionError::unexpected("window_end", &other)),
    }
    let closed = window.finish_with(|| phase.set(Phase::Stop));
    let out = guard.engine.take().map(|e| e.join());
    drop(guard);
    let Some(out) = out else {
        return Err(SessionError::Refused("engine vanished".into()));
    };
    let report = ServerReport {
        window_s: closed.window_s,
        cpu: closed.report.as_ref().ok().cloned(),
        cpu_error: closed.report.as_ref().err().map(|e| e.to_string()),
        rx: out.rx_stats(),
        tx_bytes: out.tx_bytes(),
        transactions: out.transactions,
        retransmits: out.retransmits,
        srtt_us: out.srtt_us,
        errors: out.errors,
        first_error: out.first_error.clone(),
        disclosure: iotoll_model::spec::to_json(&iotoll_probe::sysinfo::network(local_ip)),
    };
    // Everything the test held is released before the report goes out: the
    // engine's threads have ended, its data sockets close now (the client's
    // window is already closed: it sent window_end), and the slot is free,
    // so the next test, from this client or another, can start at once.
    drop(out.sockets);
    slot.release();
    ctl.send(&Msg::Report {
        report: Box::new(report),
    })?;
    // The client acknowledges with stop, or just closes.
    let _ = ctl.recv(Duration::from_secs(2));
    Ok(format!(
        "{:?} {:?} test with {} connection(s) done in a {:.1} s window",
        params.kind, params.dir, params.conns, closed.window_s
    ))
}

/// The TLS handshakes of a test's data connections, all at once; a client
/// that does not speak TLS on them fails the test with the reason.
fn start_tls(
    conns: Vec<(TcpStream, Role)>,
    t: &ServerTls,
    ctl: &Control,
    deadline: Instant,
) -> Result<Vec<(DataConn, Role)>, SessionError> {
    let (socks, roles): (Vec<_>, Vec<_>) = conns.into_iter().unzip();
    let abort = || ctl.peer_spoke();
    match tls::handshake_all(socks, tls::Side::Server(t), deadline, &abort) {
        Ok((tls_conns, _)) => Ok(tls_conns
            .into_iter()
            .map(|c| DataConn::Tls(Box::new(c)))
            .zip(roles)
            .collect()),
        Err(tls::HandshakeError::Aborted) => Err(SessionError::Refused(
            "the client closed its control connection (or spoke out of turn) during the TLS handshakes".into(),
        )),
        Err(e) => Err(SessionError::Refused(e.to_string())),
    }
}

/// How long a data connection may take to send its header once accepted.
/// The headers are read concurrently, so this bounds only how long a
/// silent connection holds a descriptor, never the test.
const HEADER_WAIT: Duration = Duration::from_secs(2);
/// Most data connections whose header is still incomplete; beyond it the
/// oldest is dropped (a real client sends its header with the connection,
/// so it is read at once and never waits here).
pub const MAX_HALF_OPEN: usize = 256;

/// A data connection whose header has not fully arrived.
struct HalfOpen {
    s: TcpStream,
    h: [u8; DATA_HEADER],
    got: usize,
    since: Instant,
}

enum HeaderRead {
    Done,
    More,
    Gone,
}

impl HalfOpen {
    /// Reads what has arrived of the header (the socket is non-blocking).
    fn read(&mut self) -> HeaderRead {
        while self.got < DATA_HEADER {
            match self.s.read(&mut self.h[self.got..]) {
                Ok(0) => return HeaderRead::Gone,
                Ok(n) => self.got += n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return HeaderRead::More,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return HeaderRead::Gone,
            }
        }
        HeaderRead::Done
    }
}

/// Accepts the announced data connections, each identified by the test's
/// token; strays are dropped. Headers are read concurrently (an event
/// loop), each within [`HEADER_WAIT`], so connections that say nothing
/// neither slow the test nor fail it. Fails at the deadline with a count,
/// and at once when the client's control connection closes (or speaks out
/// of turn): a client that vanished never keeps the endpoint waiting.
fn accept_data(
    listener: TcpListener,
    ctl: &Control,
    token: u64,
    roles: &[Role],
    p: &TestParams,
    deadline: Instant,
) -> Result<Vec<(TcpStream, Role)>, SessionError> {
    let abort = || {
        ctl.peer_spoke()
            .then(|| "the client closed its control connection (or spoke out of turn)".to_string())
    };
    let groups = accept_groups(listener, &[(token, roles)], p, deadline, &abort)?;
    Ok(groups.into_iter().flatten().collect())
}

/// [`accept_data`] for several groups of connections at once (an agent
/// serving several endpoint pairs on one data port), each group with its
/// own token and roles; `abort` says why to give up (None: go on).
/// Returns each group's connections in the order of its roles.
pub fn accept_groups(
    listener: TcpListener,
    groups: &[(u64, &[Role])],
    p: &TestParams,
    deadline: Instant,
    abort: &dyn Fn() -> Option<String>,
) -> Result<Vec<Vec<(TcpStream, Role)>>, SessionError> {
    use mio::unix::SourceFd;
    use mio::{Interest, Poll, Token};
    let io = |what: &'static str| {
        move |e| SessionError::io(format!("accepting data connections: {what}"), e)
    };
    let mut poll = Poll::new().map_err(io("epoll"))?;
    listener.set_nonblocking(true).map_err(io("listener"))?;
    let lfd = listener.as_raw_fd();
    let r = poll
        .registry()
        .register(&mut SourceFd(&lfd), Token(0), Interest::READABLE);
    r.map_err(io("epoll"))?;
    let slots = accept_loop(&mut poll, &listener, groups, deadline, abort)?;
    let mut out = Vec::with_capacity(groups.len());
    for (g, (_, roles)) in slots.into_iter().zip(groups) {
        let mut conns = Vec::with_capacity(g.len());
        for (s, r) in g.into_iter().zip(roles.iter()) {
            let Some(s) = s else { continue };
            s.set_nonblocking(false).map_err(io("socket"))?;
            if p.nodelay {
                let _ = s.set_nodelay(true);
            }
            if let Some(b) = p.sockbuf {
                let _ = sock::set_sockbuf(&s, b);
            }
            conns.push((s, *r));
        }
        out.push(conns);
    }
    Ok(out)
}

type Slots = Vec<Vec<Option<TcpStream>>>;

fn accept_loop(
    poll: &mut mio::Poll,
    listener: &TcpListener,
    groups: &[(u64, &[Role])],
    deadline: Instant,
    abort: &dyn Fn() -> Option<String>,
) -> Result<Slots, SessionError> {
    use mio::unix::SourceFd;
    use mio::{Events, Interest, Token};
    use std::collections::HashMap;
    const LISTEN: Token = Token(0);
    let mut poll_events = Events::with_capacity(1024);
    let mut slots: Slots = (groups.iter())
        .map(|(_, roles)| (0..roles.len()).map(|_| None).collect())
        .collect();
    let want: usize = groups.iter().map(|(_, r)| r.len()).sum();
    let mut got = 0;
    let mut half: HashMap<usize, HalfOpen> = HashMap::new();
    let mut next_id = 2usize;
    // Places a connection whose header is complete; false for a stray.
    let place = |c: HalfOpen, slots: &mut Slots| -> bool {
        let h = c.h;
        let t = u64::from_be_bytes([h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]]);
        let idx = u32::from_be_bytes([h[8], h[9], h[10], h[11]]) as usize;
        let Some(g) = groups.iter().position(|(token, _)| *token == t) else {
            return false;
        };
        let roles = groups[g].1;
        let fits = idx < roles.len()
            && slots[g][idx].is_none()
            && Role::from_code(h[12]).map(Role::opposite) == Some(roles[idx]);
        if fits {
            slots[g][idx] = Some(c.s);
        }
        fits
    };
    while got < want {
        let now = Instant::now();
        if now >= deadline {
            return Err(SessionError::Refused(format!(
                "only {got} of {want} data connections arrived in time"
            )));
        }
        if let Some(why) = abort() {
            return Err(SessionError::Refused(format!(
                "{why} after {got} of {want} data connections"
            )));
        }
        // Silent connections past their time are dropped.
        half.retain(|_, c| c.since + HEADER_WAIT > now);
        let wait = deadline
            .saturating_duration_since(now)
            .min(Duration::from_millis(200));
        if let Err(e) = poll.poll(&mut poll_events, Some(wait)) {
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(SessionError::io("accepting data connections: epoll", e));
            }
        }
        for ev in poll_events.iter() {
            match ev.token() {
                LISTEN => loop {
                    let s = match listener.accept() {
                        Ok((s, _)) => s,
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                        Err(e) => return Err(SessionError::io("accepting data connections", e)),
                    };
                    if s.set_nonblocking(true).is_err() {
                        continue;
                    }
                    let mut c = HalfOpen {
                        s,
                        h: [0; DATA_HEADER],
                        got: 0,
                        since: Instant::now(),
                    };
                    match c.read() {
                        HeaderRead::Done => got += usize::from(place(c, &mut slots)),
                        HeaderRead::Gone => {}
                        HeaderRead::More => {
                            if half.len() >= MAX_HALF_OPEN {
                                if let Some(oldest) =
                                    half.iter().min_by_key(|(_, c)| c.since).map(|(k, _)| *k)
                                {
                                    half.remove(&oldest);
                                }
                            }
                            let fd = c.s.as_raw_fd();
                            if poll
                                .registry()
                                .register(&mut SourceFd(&fd), Token(next_id), Interest::READABLE)
                                .is_ok()
                            {
                                half.insert(next_id, c);
                                next_id += 1;
                            }
                        }
                    }
                },
                Token(id) => {
                    let Some(mut c) = half.remove(&id) else {
                        continue;
                    };
                    match c.read() {
                        HeaderRead::Done => {
                            let fd = c.s.as_raw_fd();
                            let _ = poll.registry().deregister(&mut SourceFd(&fd));
                            got += usize::from(place(c, &mut slots));
                        }
                        HeaderRead::More => {
                            half.insert(id, c);
                        }
                        HeaderRead::Gone => {}
                    }
                }
            }
        }
    }
    Ok(slots)
}

fn reject_busy(mut ctl: Control) {
    let _ = ctl
        .stream
        .set_write_timeout(Some(Duration::from_millis(200)));
    let _ = ctl.send(&Msg::Busy {
        msg: "a test is running; try again when it ends".into(),
    });
}
