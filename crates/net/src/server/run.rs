//! One test on the endpoint, from its data port to its report.

use super::data::{accept_data, data_listener, data_token, MAX_HALF_OPEN};
use super::pending::MAX_PENDING;
use super::{
    default_threads, engine_params, serve_window, server_roles, ServerConfig, SessionError, Slot,
    SLACK,
};
use crate::engine::{DataConn, Engine, Role};
use crate::proto::{Control, Msg, ServerReport, TestParams};
use crate::sock;
use crate::tls::{self, ServerTls};
use iotoll_model::spec::word;
use iotoll_run::{Phase, PhaseCell};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Stops the engine and frees its sockets however the session ends.
pub(super) struct EngineGuard {
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

/// One test, holding the slot: from the data port to the report. The slot
/// is freed, and every socket and thread of the test released, before the
/// report is sent, so the client's next test finds the endpoint free.
/// Returns a summary line.
pub(super) fn session(
    ctl: &mut Control,
    params: TestParams,
    cfg: &ServerConfig,
    slot: &mut Slot<'_>,
    peer: SocketAddr,
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
    tracing::info!(
        %peer,
        "{} {} test with {} connection(s) accepted, data port {data_port}",
        word(&params.kind),
        word(&params.dir),
        params.conns
    );

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

    let closed = serve_window(ctl, &params, &phase)?;
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
        udp: None,
        crr: None,
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
        "{} {} test with {} connection(s) done in a {:.1} s window",
        word(&params.kind),
        word(&params.dir),
        params.conns,
        closed.window_s
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
