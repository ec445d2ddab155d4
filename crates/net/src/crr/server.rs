//! The endpoint's side of a connection-rate test. It holds no slot: a
//! crr/cc test is a listener of its own and a few threads, so the endpoint
//! keeps serving a stream, rr or UDP test (or another rate test) meanwhile.

use super::serve::CrrServer;
use super::{IO_TIMEOUT, TOKEN_LEN};
use crate::proto::{Control, Msg, ServerReport, TestParams};
use crate::server::data::{data_listener, data_token};
use crate::server::{serve_window, SessionError, SLACK};
use crate::sock;
use iotoll_run::{Phase, PhaseCell};
use std::io::{ErrorKind, Read};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Rate tests the endpoint runs at once; beyond it a client is told busy.
pub(crate) const MAX_RATE_TESTS: usize = 4;
static RUNNING: AtomicUsize = AtomicUsize::new(0);

/// A place among the running rate tests, freed on drop.
pub(crate) struct RateSlot(());

impl RateSlot {
    pub(crate) fn take() -> Option<RateSlot> {
        let n = RUNNING.fetch_add(1, Ordering::AcqRel);
        if n >= MAX_RATE_TESTS {
            RUNNING.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        Some(RateSlot(()))
    }
}

impl Drop for RateSlot {
    fn drop(&mut self) {
        RUNNING.fetch_sub(1, Ordering::AcqRel);
    }
}

/// After the window, the endpoint serves until no connection has arrived
/// for this long: the client's workers each finish the transaction they
/// are in, and those must be answered for both ends' totals to agree.
const QUIET: Duration = Duration::from_millis(500);
/// How long an accepting thread waits before it looks at the phase.
pub(crate) const ACCEPT_WAIT: Duration = Duration::from_millis(50);

#[derive(Default)]
pub(crate) struct Counts {
    pub(crate) accepted: AtomicU64,
    pub(crate) responded: AtomicU64,
    pub(crate) bad_token: AtomicU64,
    pub(crate) window_done: AtomicU64,
    pub(crate) window_errors: AtomicU64,
    pub(crate) first_error: Mutex<Option<String>>,
}

pub(crate) fn session(
    ctl: &mut Control,
    params: TestParams,
    peer: SocketAddr,
) -> Result<String, SessionError> {
    let local_ip = ctl.stream.local_addr()?.ip();
    let threads = params.conns as usize;
    sock::ensure_nofile(2 * threads as u64 + 64)?;
    let listener = data_listener(local_ip, params.sockbuf)
        .map_err(|e| SessionError::io("endpoint cannot open a data port", e))?;
    let data_port = listener.local_addr()?.port();
    let token = data_token()?;
    ctl.send(&Msg::Accept {
        data_port,
        token,
        cert: None,
    })?;
    ctl.send(&Msg::Ready {})?;
    let kind = iotoll_model::spec::word(&params.kind);
    tracing::info!(%peer, "{kind} test with {threads} client(s) accepted, data port {data_port}");
    let phase = Arc::new(PhaseCell::new(Phase::Ramp));
    let exchange = (params.req, params.resp);
    let server = CrrServer::start(
        listener,
        params.kind,
        exchange,
        token,
        threads,
        phase.clone(),
    )
    .map_err(|e| SessionError::io("cannot start the endpoint's workers", e))?;
    let closed =
        await_window_start(ctl, &params, &server).and_then(|()| serve_window(ctl, &params, &phase));
    // However the window ended, the workers stop (after the drain).
    let served = server.join();
    let closed = closed?;
    let report = ServerReport {
        window_s: closed.window_s,
        cpu: closed.report.as_ref().ok().cloned(),
        cpu_error: closed.report.as_ref().err().map(|e| e.to_string()),
        transactions: served.window_done,
        errors: served.window_errors,
        first_error: served.first_error,
        disclosure: iotoll_model::spec::to_json(&iotoll_probe::sysinfo::network(local_ip)),
        crr: Some(served.end),
        ..Default::default()
    };
    ctl.send(&Msg::Report {
        report: Box::new(report),
    })?;
    let _ = ctl.recv(Duration::from_secs(2));
    Ok(format!(
        "{kind} test done in a {:.1} s window: {} connection(s) accepted",
        closed.window_s, served.end.accepted
    ))
}

/// How long the client's workers may take to make their first connection
/// to the test's port: generous, as a loaded machine starts a thousand
/// threads slowly, and a client that died closes its control connection
/// at once anyway (this bounds only a client that hangs).
const FIRST_CONN_WAIT: Duration = Duration::from_secs(60);

/// Waits until the client's window start has come (it is then read by
/// `serve_window`). Its ramp-up is counted from its workers' first
/// connection, not from the test's acceptance: the workers start after
/// the endpoint's `ready`, and however long a loaded machine takes to
/// start them must not end the test. Past the ramp-up it waits while the
/// workers keep connecting: the thread that sends the window start can be
/// held off a loaded CPU (a thousand workers of one process beside other
/// work held it over 10 s in CI), and only a client whose connections
/// stopped for [`SLACK`] has gone wrong; a client that hangs is bounded
/// by the whole test and [`FIRST_CONN_WAIT`]. Gives up with an error the
/// client is told (its report wait is longer than [`SLACK`]).
fn await_window_start(
    ctl: &mut Control,
    params: &TestParams,
    server: &CrrServer,
) -> Result<(), SessionError> {
    let ready = Instant::now();
    let ramp = Duration::from_millis(params.ramp_ms);
    let most = ramp + Duration::from_millis(params.time_ms) + FIRST_CONN_WAIT;
    // The first connection, and the latest count and when it last grew.
    let mut first: Option<Instant> = None;
    let mut last = (0, ready);
    while !ctl.peer_spoke() {
        let now = Instant::now();
        let n = server.accepted();
        if n != last.0 {
            last = (n, now);
            first.get_or_insert(now);
        }
        let late = match first {
            Some(t) if now >= (t + ramp).max(last.1) + SLACK || now >= t + most => Some(format!(
                "the endpoint gave up waiting for the window start: none came within the {:.1} s ramp-up from the client's first connection, and {}",
                ramp.as_secs_f64(),
                if now >= t + most {
                    format!("{:.0} s after it", most.as_secs_f64())
                } else {
                    format!("no connection came for {} s", SLACK.as_secs())
                }
            )),
            Some(_) => None,
            None => (now >= ready + FIRST_CONN_WAIT).then(|| {
                format!(
                    "the endpoint gave up on the test: no connection from the client's workers within {} s of its acceptance",
                    FIRST_CONN_WAIT.as_secs()
                )
            }),
        };
        if let Some(m) = late {
            return Err(SessionError::Refused(m));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

/// Accepts and serves one connection at a time until the phase is `Stop`
/// and no connection has come to this thread for [`QUIET`] (the others
/// serve whatever still comes).
pub(crate) fn acceptor(
    l: &TcpListener,
    phase: &PhaseCell,
    c: &Counts,
    token: u64,
    exchange: Option<(u64, u64)>,
) {
    // Sized to the exchange: a thousand clients of 1-byte requests must
    // not cost the endpoint 64 MiB of buffers (a client sets the count).
    let need = exchange.map_or(1, |(req, resp)| req.max(resp).max(TOKEN_LEN as u64));
    let mut buf = vec![0u8; need.min(64 << 10) as usize];
    let mut last = Instant::now();
    loop {
        match l.accept() {
            Ok((s, _)) => {
                last = Instant::now();
                c.accepted.fetch_add(1, Ordering::AcqRel);
                let r = serve(s, token, exchange, &mut buf, c);
                let measuring = phase.get() == Phase::Measure;
                match r {
                    Ok(()) if measuring => {
                        c.window_done.fetch_add(1, Ordering::AcqRel);
                    }
                    Ok(()) => {}
                    Err(e) => {
                        if measuring {
                            c.window_errors.fetch_add(1, Ordering::AcqRel);
                        }
                        let mut f = c.first_error.lock().unwrap_or_else(|p| p.into_inner());
                        f.get_or_insert(e);
                    }
                }
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                if phase.get() == Phase::Stop && last.elapsed() >= QUIET {
                    return;
                }
            }
            Err(e) => {
                // EMFILE and the like: back off, keep serving.
                tracing::warn!("crr accept: {e}");
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
}

/// One connection: for crr the request (checked to start with the test's
/// token) and the response; then the client's close.
fn serve(
    mut s: TcpStream,
    token: u64,
    exchange: Option<(u64, u64)>,
    buf: &mut [u8],
    c: &Counts,
) -> Result<(), String> {
    s.set_read_timeout(Some(IO_TIMEOUT))
        .map_err(|e| e.to_string())?;
    if let Some((req, resp)) = exchange {
        let mut head = [0u8; TOKEN_LEN];
        s.read_exact(&mut head)
            .map_err(|e| format!("request: {e}"))?;
        if u64::from_be_bytes(head) != token {
            c.bad_token.fetch_add(1, Ordering::AcqRel);
            return Err("a connection without the test's token was dropped".into());
        }
        let mut left = req as usize;
        while left > 0 {
            let n = left.min(buf.len());
            match s.read(&mut buf[..n]) {
                Ok(0) => return Err("the client closed mid-request".into()),
                Ok(got) => left -= got,
                Err(e) => return Err(format!("request: {e}")),
            }
        }
        let _ = s.set_nodelay(true);
        let mut left = resp as usize;
        while left > 0 {
            let n = left.min(buf.len());
            std::io::Write::write_all(&mut s, &buf[..n]).map_err(|e| format!("response: {e}"))?;
            left -= n;
        }
        c.responded.fetch_add(1, Ordering::AcqRel);
    }
    // The client closes first (the TIME_WAIT is its); a reset from
    // --linger0 is its close too.
    match s.read(buf) {
        Ok(0) => Ok(()),
        Ok(_) => Err("the client sent more than its request".into()),
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => Ok(()),
        Err(e) => Err(format!("waiting for the close: {e}")),
    }
}
