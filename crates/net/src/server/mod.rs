//! The endpoint: `iotoll net serve`. One test at a time; a valid test
//! request while a test runs is told "busy" at once. Handshakes run
//! concurrently (capped per source and in total, oldest dropped first), so
//! a connection that says nothing holds up nobody; every control read has
//! a deadline, every failure ends the session and frees its sockets, and
//! the accept loop never waits on a client.

pub(crate) mod data;
mod pending;
mod run;

use crate::auth::{nonce, Key, Session, Side};
use crate::engine::{EngineParams, Role};
use crate::proto::{Control, Dir, Msg, ProtoError, TestKind, TestParams, PROTO_VERSION};
use crate::tls::Cipher;
use crate::{sock, NetError};
use iotoll_run::{Phase, PhaseCell};
use std::io::Read;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::io::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub use data::{accept_groups, data_listener, data_token, MAX_HALF_OPEN};
use pending::{
    drop_oldest, make_room, source_of, take_clone, Failures, Pending, HS_AUTHED, HS_DONE,
    HS_DROPPED, HS_OPEN,
};
pub use pending::{MAX_PENDING, MAX_PENDING_PER_SOURCE};
use run::session;

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
pub(crate) const SLACK: Duration = Duration::from_secs(10);
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
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> SessionError {
        SessionError::IoIn(context.into(), source)
    }

    pub(crate) fn unexpected(want: &'static str, got: &Msg) -> SessionError {
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
    if p.kind == TestKind::Udp {
        return crate::udp::validate_params(p).map_err(SessionError::Refused);
    }
    if matches!(p.kind, TestKind::Crr | TestKind::Cc) && p.conns > crate::crr::MAX_CLIENTS {
        return refused(format!(
            "a connection-rate test has at most {} concurrent clients",
            crate::crr::MAX_CLIENTS
        ));
    }
    if matches!(p.kind, TestKind::Crr | TestKind::Cc) && p.tls.is_some() {
        return refused("TLS applies to stream and request/response tests only".into());
    }
    if p.rate.is_some() || !p.udp_ports.is_empty() {
        return refused("rate and udp_ports apply to UDP tests only".into());
    }
    let sizes: &[(&str, u64)] = match p.kind {
        TestKind::Stream => &[("msg", p.msg)],
        TestKind::Rr | TestKind::Crr => &[("req", p.req), ("resp", p.resp)],
        TestKind::Udp | TestKind::Cc => &[],
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
        // Datagrams: no data connections.
        (TestKind::Udp | TestKind::Crr | TestKind::Cc, _) => Vec::new(),
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

/// Engine threads for `pairs` endpoint pairs with `conns` connections in
/// all at one host, when none were asked for: one per CPU, or one per pair
/// when there are more pairs than CPUs, and never more than there are
/// connections. A thread per pair gives each stream its own share of a
/// busy machine's scheduler, as the peer tools' one process per stream
/// has (16 pairs on 2 CPUs: 1.29× the goodput of 2 threads, BENCHMARKS.md).
pub fn threads_for(pairs: usize, conns: usize) -> usize {
    pairs.max(default_threads()).min(conns).max(1)
}

pub fn default_threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// What the accept loop and the sessions share.
struct Shared {
    cfg: ServerConfig,
    /// The one-test slot: taken by a connection that has authenticated (when
    /// a key is set) and sent a valid test request, freed when everything
    /// its test held is released.
    busy: AtomicBool,
    /// Tests that have ended (for `--once`).
    finished: AtomicU64,
    failures: Failures,
    /// The subscriber the endpoint was started under: its connections'
    /// threads log there too.
    dispatch: tracing::Dispatch,
}

/// Holds a one-at-a-time slot (the endpoint's test, an agent's console);
/// frees it once, when released or dropped.
pub struct Slot<'a>(Option<&'a AtomicBool>);

impl<'a> Slot<'a> {
    /// The slot `busy` stands for, unless someone holds it.
    pub fn take(busy: &'a AtomicBool) -> Option<Slot<'a>> {
        let taken = busy.compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire);
        taken.is_ok().then_some(Slot(Some(busy)))
    }

    pub fn release(&mut self) {
        if let Some(busy) = self.0.take() {
            busy.store(false, Ordering::Release);
        }
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.release();
    }
}

/// [`serve_on`] saying nothing: an endpoint inside another command (a
/// suite's own), whose lines would only interleave with that command's.
pub fn serve_silently(
    listener: TcpListener,
    cfg: &ServerConfig,
    stop: &AtomicBool,
) -> Result<(), NetError> {
    let none = tracing::Dispatch::none();
    tracing::dispatcher::with_default(&none, || serve_on(listener, cfg, stop))
}

/// Runs the endpoint on a listener the caller bound (`net::start::bind`,
/// or an ephemeral port) until `stop` is set, or after one test with
/// `once`; `cfg.listen` is ignored. It logs through `tracing`: one event
/// per client, test and refusal (the client's address in the `peer`
/// field); failed handshakes summed up.
///
/// Every connection gets its own thread for its handshake (at most
/// [`MAX_PENDING`], oldest dropped first), so a silent or slow client holds
/// nobody up; only a connection that has authenticated and sent a valid
/// test request claims the one-test slot, and only such a request is ever
/// told "busy". Those threads log to the caller's subscriber.
pub fn serve_on(
    listener: TcpListener,
    cfg: &ServerConfig,
    stop: &AtomicBool,
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
    tracing::info!(
        "endpoint listening on {} ({auth})",
        addr.unwrap_or_default()
    );
    let shared = Arc::new(Shared {
        cfg: cfg.clone(),
        busy: AtomicBool::new(false),
        finished: AtomicU64::new(0),
        failures: Failures::default(),
        dispatch: tracing::dispatcher::get_default(Clone::clone),
    });
    let mut pending: Vec<Pending> = Vec::new();
    let mut dropped = 0u64;
    let mut dropped_logged = Instant::now();
    let done = || cfg.once && shared.finished.load(Ordering::Acquire) > 0;
    while !(stop.load(Ordering::Relaxed) || done()) {
        if dropped > 0 && dropped_logged.elapsed() >= Duration::from_secs(1) {
            tracing::warn!(
                dropped,
                "dropped {dropped} connection(s) still in their handshake to make room (at most {MAX_PENDING_PER_SOURCE} per source, {MAX_PENDING} in all; oldest first)"
            );
            dropped = 0;
            dropped_logged = Instant::now();
        }
        shared.failures.summarise(false);
        match listener.accept() {
            Ok((stream, peer)) => dropped += admit(stream, peer, &mut pending, &shared),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                // Sleeps in the kernel until a client arrives; wakes a few
                // times a second to see Ctrl-C and finished tests.
                sock::wait_readable(listener.as_raw_fd(), Duration::from_millis(200));
            }
            Err(e) => {
                // EMFILE and the like: back off, keep serving.
                tracing::warn!("accept: {e}");
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
    // Handshakes still under way end now.
    while drop_oldest(&mut pending, None) {}
    shared.failures.summarise(true);
    // Ctrl-C while a test runs: the process exits and the kernel closes its
    // sockets, so the client learns at once; waiting could take an hour.
    if shared.busy.load(Ordering::Acquire) {
        tracing::warn!("stopping: the running test is abandoned");
    }
    Ok(())
}

/// Starts a new connection's handshake on a thread of its own, room made
/// for it first; returns how many pending handshakes were dropped for it.
fn admit(
    stream: TcpStream,
    peer: SocketAddr,
    pending: &mut Vec<Pending>,
    shared: &Arc<Shared>,
) -> u64 {
    let _ = stream.set_nonblocking(false);
    // The log names an IPv4 client of a dual-stack listener as users
    // write it, not as ::ffff:a.b.c.d.
    let peer = SocketAddr::new(peer.ip().to_canonical(), peer.port());
    let source = source_of(peer.ip());
    let dropped = make_room(pending, source);
    let sock = match stream.try_clone() {
        Ok(s) => Arc::new(Mutex::new(Some(s))),
        Err(e) => {
            tracing::warn!(%peer, "cannot serve: {e}");
            return dropped;
        }
    };
    let p = Pending {
        source,
        state: Arc::new(AtomicU8::new(HS_OPEN)),
        sock,
    };
    let (mine, shared) = (p.clone(), shared.clone());
    let spawned = std::thread::Builder::new()
        .name("iotoll-session".into())
        .stack_size(512 << 10)
        .spawn(move || {
            let dispatch = shared.dispatch.clone();
            tracing::dispatcher::with_default(&dispatch, || {
                connection(stream, peer, &mine, &shared)
            })
        });
    match spawned {
        Ok(_) => pending.push(p),
        Err(e) => tracing::warn!(%peer, "cannot start a session: {e}"),
    }
    dropped
}

/// One connection: its handshake, then (holding the slot) its test.
fn connection(stream: TcpStream, peer: SocketAddr, hs: &Pending, shared: &Arc<Shared>) {
    let cfg = &shared.cfg;
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
                tracing::info!(%peer, "console session");
                return (hook.0)(ctl, peer, nonces);
            }
            // The handshake refused it already.
            None => return,
        },
        Err(e) => return shared.failures.failed(peer, &e),
    };
    // A rate test holds no slot: it runs beside the others.
    if matches!(params.kind, TestKind::Crr | TestKind::Cc) {
        let Some(rate_slot) = crate::crr::server::RateSlot::take() else {
            reject_busy(ctl);
            tracing::info!(%peer, "refused, {} connection-rate tests are running", crate::crr::server::MAX_RATE_TESTS);
            return;
        };
        let r = crate::crr::server::session(&mut ctl, params, peer);
        drop(rate_slot);
        return finished(&mut ctl, r, peer, shared);
    }
    let Some(mut slot) = Slot::take(&shared.busy) else {
        reject_busy(ctl);
        tracing::info!(%peer, "refused, a test is running");
        return;
    };
    let r = match params.kind {
        TestKind::Udp => crate::udp::server::session(&mut ctl, params, &mut slot, peer),
        _ => session(&mut ctl, params, cfg, &mut slot, peer),
    };
    // Everything the test held was released when `session` returned: free
    // the slot before telling the client, so its next test finds it free.
    slot.release();
    finished(&mut ctl, r, peer, shared);
}

/// Logs how a test ended (telling the client what it must know) and
/// counts it.
fn finished(ctl: &mut Control, r: Result<String, SessionError>, peer: SocketAddr, shared: &Shared) {
    match r {
        Ok(summary) => tracing::info!(%peer, "{summary}"),
        Err(e) => {
            if e.tells_client() {
                let _ = ctl.send(&Msg::Error { msg: e.to_string() });
            }
            tracing::warn!(%peer, "session ended: {e}");
        }
    }
    shared.finished.fetch_add(1, Ordering::AcqRel);
}

/// The endpoint's side of a test's window, its data already flowing:
/// waits for the client's window start (within the ramp-up and
/// [`SLACK`]), measures until its window end, and sets `phase` at each
/// edge.
pub(crate) fn serve_window(
    ctl: &mut Control,
    params: &TestParams,
    phase: &PhaseCell,
) -> Result<iotoll_probe::ClosedWindow, SessionError> {
    let slack = |ms| Duration::from_millis(ms) + SLACK;
    match expect(ctl, slack(params.ramp_ms), "window start")? {
        Msg::WindowStart {} => {}
        other => return Err(SessionError::unexpected("window_start", &other)),
    }
    let window = iotoll_probe::CpuWindow::start_with(|| phase.set(Phase::Measure))
        .map_err(SessionError::Cpu)?;
    match expect(ctl, slack(params.time_ms), "window end")? {
        Msg::WindowEnd {} => {}
        other => return Err(SessionError::unexpected("window_end", &other)),
    }
    Ok(window.finish_with(|| phase.set(Phase::Stop)))
}

/// The client's next message, within `t`; what it must not send (stop,
/// or a frame the endpoint refuses, said to the client) is the error.
pub(crate) fn expect(
    ctl: &mut Control,
    t: Duration,
    want: &'static str,
) -> Result<Msg, SessionError> {
    let waiting = |e| SessionError::Waiting(want, e);
    match ctl.recv(t) {
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

    let (cn, mac) = match expect(&mut ctl, cfg.handshake, "auth")? {
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

    let params = match expect(&mut ctl, cfg.handshake, "test")? {
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

fn reject_busy(mut ctl: Control) {
    let _ = ctl
        .stream
        .set_write_timeout(Some(Duration::from_millis(200)));
    let _ = ctl.send(&Msg::Busy {
        msg: "a test is running; try again when it ends".into(),
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_are_one_per_cpu_or_per_pair_and_never_past_the_connections() {
        let cpus = default_threads();
        assert_eq!(threads_for(1, 1), 1);
        assert_eq!(threads_for(0, 0), 1);
        assert_eq!(threads_for(1, 64), cpus.min(64));
        assert_eq!(threads_for(cpus + 14, cpus + 14), cpus + 14);
        assert_eq!(threads_for(3, 2), 2);
        assert_eq!(threads_for(100, 1000), 100.max(cpus));
    }
}
