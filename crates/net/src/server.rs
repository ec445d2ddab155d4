//! The endpoint: `iotoll net serve`. One test at a time; a second client
//! while a test runs is told "busy" at once. Every control read has a
//! deadline, every failure ends the session and frees its sockets, and the
//! accept loop never waits on a client.

use crate::auth::{nonce, Key};
use crate::engine::{Engine, EngineParams, Role};
use crate::proto::{
    ByteStats, Control, Dir, Identity, Msg, ProtoError, ServerReport, TestKind, TestParams,
    PROTO_VERSION,
};
use crate::{sock, NetError};
use iotoll_probe::{CpuWindow, Phase, PhaseCell};
use std::io::Read;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::io::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
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
}

/// Default deadline for each handshake message: a client that connects and
/// says nothing holds the endpoint this long at most.
pub const HANDSHAKE: Duration = Duration::from_secs(5);

/// Slack beyond the announced ramp/time before the server gives up.
const SLACK: Duration = Duration::from_secs(10);
/// Data-connection header: token (8), index (4), client role (1).
pub const DATA_HEADER: usize = 13;

/// Checks a test request against the limits; the error goes to the client.
pub fn validate(p: &TestParams, l: &Limits) -> Result<(), String> {
    if p.conns == 0 || p.conns > l.max_conns {
        return Err(format!(
            "conns must be between 1 and {} (this server's limit)",
            l.max_conns
        ));
    }
    let time = Duration::from_millis(p.time_ms.saturating_add(p.ramp_ms));
    if p.time_ms == 0 || time > l.max_time {
        return Err(format!(
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
            return Err(format!(
                "{name} must be between 1 and {} bytes (this server's limit)",
                l.max_msg
            ));
        }
    }
    if p.kind == TestKind::Rr && (p.burst == 0 || p.burst > 1024) {
        return Err("burst must be between 1 and 1024".into());
    }
    if p.kind == TestKind::Rr && p.dir != Dir::Tx {
        return Err("request/response tests have no direction".into());
    }
    if let Some(b) = p.sockbuf {
        if b == 0 || b > 1 << 30 {
            return Err("sockbuf must be between 1 byte and 1 GiB".into());
        }
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
    }
}

pub fn default_threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// Where the endpoint writes one line per event.
pub type Log = Arc<dyn Fn(&str) + Send + Sync>;

/// Runs the endpoint until `stop` is set (or after one client with `once`).
pub fn serve(cfg: &ServerConfig, stop: &AtomicBool, log: Log) -> Result<(), NetError> {
    let listener = TcpListener::bind(cfg.listen)
        .map_err(|e| NetError::Io(format!("cannot listen on {}: {e}", cfg.listen)))?;
    serve_on(listener, cfg, stop, log)
}

/// Serves on a listener the caller bound (an in-process endpoint on an
/// ephemeral port); `cfg.listen` is ignored.
pub fn serve_on(
    listener: TcpListener,
    cfg: &ServerConfig,
    stop: &AtomicBool,
    log: Log,
) -> Result<(), NetError> {
    listener
        .set_nonblocking(true)
        .map_err(|e| NetError::Io(e.to_string()))?;
    log(&format!(
        "iotoll endpoint listening on {} ({})",
        listener
            .local_addr()
            .map(|a| a.to_string())
            .unwrap_or_default(),
        if cfg.key.is_some() {
            "pre-shared key required"
        } else {
            "no authentication"
        }
    ));
    let busy = Arc::new(AtomicBool::new(false));
    let mut session: Option<std::thread::JoinHandle<()>> = None;
    loop {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        if session.as_ref().is_some_and(|h| h.is_finished()) {
            if let Some(h) = session.take() {
                let _ = h.join();
            }
            if cfg.once {
                break;
            }
        }
        match listener.accept() {
            Ok((stream, peer)) => {
                let _ = stream.set_nonblocking(false);
                if busy.load(Ordering::Acquire) {
                    reject_busy(stream);
                    log(&format!("{peer}: refused, a test is running"));
                    continue;
                }
                busy.store(true, Ordering::Release);
                let (cfg, busy2, log2) = (cfg.clone(), busy.clone(), log.clone());
                let spawned = std::thread::Builder::new()
                    .name("iotoll-session".into())
                    .spawn(move || {
                        match session_main(stream, &cfg) {
                            Ok(summary) => log2(&format!("{peer}: {summary}")),
                            Err(e) => log2(&format!("{peer}: session ended: {e}")),
                        }
                        busy2.store(false, Ordering::Release);
                    });
                match spawned {
                    Ok(h) => session = Some(h),
                    Err(e) => {
                        busy.store(false, Ordering::Release);
                        log(&format!("cannot start a session: {e}"));
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                // Sleeps in the kernel until a client arrives; wakes a few
                // times a second to see Ctrl-C and finished sessions.
                sock::wait_readable(listener.as_raw_fd(), Duration::from_millis(200));
            }
            Err(e) => {
                // EMFILE and the like: back off, keep serving.
                log(&format!("accept: {e}"));
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
    // Ctrl-C while a test runs: the process exits and the kernel closes its
    // sockets, so the client learns at once; waiting could take an hour.
    if session.as_ref().is_some_and(|h| !h.is_finished()) {
        log("stopping: the running test is abandoned");
    }
    Ok(())
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

fn expect(ctl: &mut Control, got: Result<Msg, ProtoError>, want: &str) -> Result<Msg, String> {
    match got {
        Ok(Msg::Stop {}) => Err("client stopped the test".into()),
        Ok(m) => Ok(m),
        Err(ProtoError::Malformed(e)) => {
            let _ = ctl.send(&Msg::Error {
                msg: format!("malformed message: {e}"),
            });
            Err(format!("malformed message while waiting for {want}: {e}"))
        }
        Err(e) => Err(format!("while waiting for {want}: {e}")),
    }
}

fn refuse(ctl: &mut Control, msg: String) -> Result<String, String> {
    let _ = ctl.send(&Msg::Error { msg: msg.clone() });
    Err(msg)
}

/// One client, from hello to report. Returns a summary line.
fn session_main(stream: TcpStream, cfg: &ServerConfig) -> Result<String, String> {
    let mut ctl = Control::new(stream).map_err(|e| e.to_string())?;
    let local_ip = ctl.stream.local_addr().map_err(|e| e.to_string())?.ip();
    let sn = nonce();
    ctl.send(&Msg::Hello {
        proto: PROTO_VERSION,
        version: iotoll_model::VERSION.to_string(),
        nonce: sn.clone(),
        auth: cfg.key.is_some(),
    })
    .map_err(|e| e.to_string())?;

    let got = ctl.recv(cfg.handshake);
    let (cn, mac) = match expect(&mut ctl, got, "auth")? {
        Msg::Auth { nonce, mac } => (nonce, mac),
        other => return refuse(&mut ctl, format!("expected auth, got {}", msg_name(&other))),
    };
    match (&cfg.key, mac) {
        (Some(k), Some(m)) if k.verify("client", &sn, &cn, &m) => {}
        (Some(_), _) => return refuse(&mut ctl, "authentication failed".into()),
        (None, Some(_)) => {
            return refuse(
                &mut ctl,
                "this endpoint has no key (started without --auth-key)".into(),
            )
        }
        (None, None) => {}
    }
    ctl.send(&Msg::AuthOk {
        mac: cfg.key.as_ref().map(|k| k.mac("server", &cn, &sn)),
    })
    .map_err(|e| e.to_string())?;

    let got = ctl.recv(cfg.handshake);
    let params = match expect(&mut ctl, got, "test")? {
        Msg::Test { params } => params,
        other => return refuse(&mut ctl, format!("expected test, got {}", msg_name(&other))),
    };
    if let Err(e) = validate(&params, &cfg.limits) {
        return refuse(&mut ctl, e);
    }
    let roles = server_roles(&params);
    if let Err(e) = sock::ensure_nofile(roles.len() as u64 + 64) {
        return refuse(&mut ctl, format!("endpoint: {e}"));
    }
    let listener = match TcpListener::bind(SocketAddr::new(local_ip, 0)) {
        Ok(l) => l,
        Err(e) => return refuse(&mut ctl, format!("endpoint cannot open a data port: {e}")),
    };
    if let Some(b) = params.sockbuf {
        // Accepted sockets inherit the buffers, and the window scale is
        // chosen from them at the handshake.
        let _ = sock::set_sockbuf(listener.as_raw_fd(), b);
    }
    sock::deepen_backlog(listener.as_raw_fd());
    let data_port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let token = u64::from_str_radix(&nonce()[..16], 16).unwrap_or(0x1075_7575);
    ctl.send(&Msg::Accept { data_port, token })
        .map_err(|e| e.to_string())?;

    let deadline = Instant::now() + SLACK + Duration::from_millis(roles.len() as u64);
    let conns = match accept_data(&listener, token, &roles, &params, deadline) {
        Ok(c) => c,
        Err(e) => return refuse(&mut ctl, e),
    };
    drop(listener);
    ctl.send(&Msg::Ready {}).map_err(|e| e.to_string())?;

    let phase = Arc::new(PhaseCell::new(Phase::Ramp));
    let engine = Engine::start(
        conns,
        engine_params(&params),
        phase.clone(),
        cfg.threads.unwrap_or_else(default_threads),
    )
    .map_err(|e| format!("cannot start engine: {e}"))?;
    let mut guard = EngineGuard {
        phase: phase.clone(),
        engine: Some(engine),
    };

    let got = ctl.recv(Duration::from_millis(params.ramp_ms) + SLACK);
    match expect(&mut ctl, got, "window start")? {
        Msg::WindowStart {} => {}
        other => {
            return refuse(
                &mut ctl,
                format!("expected window_start, got {}", msg_name(&other)),
            )
        }
    }
    let window = CpuWindow::start_with(|| phase.set(Phase::Measure)).map_err(|e| e.to_string())?;
    let got = ctl.recv(Duration::from_millis(params.time_ms) + SLACK);
    match expect(&mut ctl, got, "window end")? {
        Msg::WindowEnd {} => {}
        other => {
            return refuse(
                &mut ctl,
                format!("expected window_end, got {}", msg_name(&other)),
            )
        }
    }
    let closed = window.finish_with(|| phase.set(Phase::Stop));
    let out = guard.engine.take().map(|e| e.join());
    let Some(out) = out else {
        return Err("engine vanished".into());
    };
    let rx = ByteStats::from_counts(
        out.per_conn
            .iter()
            .filter(|(r, _)| matches!(r, Role::Recv))
            .map(|(_, c)| c.rx),
    );
    let tx_bytes: u64 = out.per_conn.iter().map(|(_, c)| c.tx).sum();
    let (cpu, cpu_error) = match closed.report {
        Ok(r) => (Some(r), None),
        Err(e) => (None, Some(e.to_string())),
    };
    let report = ServerReport {
        window_s: closed.window_s,
        cpu,
        cpu_error,
        rx,
        tx_bytes,
        transactions: out.transactions,
        retransmits: out.retransmits,
        srtt_us: out.srtt_us,
        errors: out.errors,
        first_error: out.first_error.clone(),
        disclosure: {
            let mut d = iotoll_probe::sysinfo::network(local_ip);
            Identity::this_process().insert_into(&mut d);
            d
        },
    };
    ctl.send(&Msg::Report {
        report: Box::new(report),
    })
    .map_err(|e| e.to_string())?;
    // The client acknowledges with stop, or just closes; only then do the
    // data connections close, so the client never sees a close in its window.
    let _ = ctl.recv(SLACK);
    drop(out.sockets);
    Ok(format!(
        "{:?} {:?} test with {} connection(s) done in a {:.1} s window",
        params.kind, params.dir, params.conns, closed.window_s
    ))
}

fn msg_name(m: &Msg) -> &'static str {
    match m {
        Msg::Hello { .. } => "hello",
        Msg::Auth { .. } => "auth",
        Msg::AuthOk { .. } => "auth_ok",
        Msg::Test { .. } => "test",
        Msg::Accept { .. } => "accept",
        Msg::Ready {} => "ready",
        Msg::WindowStart {} => "window_start",
        Msg::WindowEnd {} => "window_end",
        Msg::Report { .. } => "report",
        Msg::Stop {} => "stop",
        Msg::Busy { .. } => "busy",
        Msg::Error { .. } => "error",
    }
}

/// Accepts the announced data connections, each identified by the test's
/// token; strays are dropped. Fails at the deadline with a count.
fn accept_data(
    listener: &TcpListener,
    token: u64,
    roles: &[Role],
    p: &TestParams,
    deadline: Instant,
) -> Result<Vec<(TcpStream, Role)>, String> {
    let mut slots: Vec<Option<TcpStream>> = (0..roles.len()).map(|_| None).collect();
    let mut got = 0;
    listener.set_nonblocking(true).map_err(|e| e.to_string())?;
    while got < roles.len() {
        if Instant::now() >= deadline {
            return Err(format!(
                "only {got} of {} data connections arrived in time",
                roles.len()
            ));
        }
        let mut s = match listener.accept() {
            Ok((s, _)) => s,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                sock::wait_readable(listener.as_raw_fd(), Duration::from_millis(50));
                continue;
            }
            Err(e) => return Err(format!("accepting data connections: {e}")),
        };
        let _ = s.set_nonblocking(false);
        let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
        let mut h = [0u8; DATA_HEADER];
        if s.read_exact(&mut h).is_err() {
            continue;
        }
        let t = u64::from_be_bytes(h[..8].try_into().unwrap_or_default());
        let idx = u32::from_be_bytes(h[8..12].try_into().unwrap_or_default()) as usize;
        let client_role = Role::from_code(h[12]);
        let fits = t == token
            && idx < roles.len()
            && slots[idx].is_none()
            && client_role.map(Role::opposite) == Some(roles[idx]);
        if !fits {
            continue;
        }
        let _ = s.set_read_timeout(None);
        if p.nodelay {
            let _ = s.set_nodelay(true);
        }
        if let Some(b) = p.sockbuf {
            let _ = sock::set_sockbuf(s.as_raw_fd(), b);
        }
        slots[idx] = Some(s);
        got += 1;
    }
    Ok(slots
        .into_iter()
        .zip(roles)
        .filter_map(|(s, r)| s.map(|s| (s, *r)))
        .collect())
}

fn reject_busy(stream: TcpStream) {
    let _ = stream.set_write_timeout(Some(Duration::from_millis(200)));
    if let Ok(mut c) = Control::new(stream) {
        let _ = c.send(&Msg::Busy {
            msg: "a test is running; try again when it ends".into(),
        });
    }
}
