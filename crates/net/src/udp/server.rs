//! A UDP test at the endpoint: its sockets, its window, its report.

use super::engine::{UdpEngine, UdpParams};
use crate::proto::{Control, Msg, ServerReport, TestParams, UdpEnd};
use crate::server::{data_token, serve_window, SessionError, Slot};
use crate::sock;
use iotoll_run::{Phase, PhaseCell};
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::Duration;

/// A UDP socket on `ip`, any port, with the test's buffers.
pub fn udp_socket(ip: IpAddr, sockbuf: Option<u64>) -> std::io::Result<Arc<UdpSocket>> {
    let s = UdpSocket::bind(SocketAddr::new(ip, 0))?;
    if let Some(b) = sockbuf {
        sock::set_sockbuf(&s, b)?;
    }
    Ok(Arc::new(s))
}

/// One UDP test, holding the slot: the endpoint receives the client's
/// flows on one port (told in `accept`) and sends its own from one socket
/// per flow to the client's flow ports. Returns a summary line.
pub(crate) fn session(
    ctl: &mut Control,
    params: TestParams,
    slot: &mut Slot<'_>,
    peer: SocketAddr,
) -> Result<String, SessionError> {
    let local_ip = ctl.stream.local_addr()?.ip().to_canonical();
    let peer_ip = peer.ip().to_canonical();
    let cant = |e| SessionError::io("endpoint cannot open a UDP socket", e);
    let data = udp_socket(local_ip, params.sockbuf).map_err(cant)?;
    let data_port = data.local_addr()?.port();
    let cookie = data_token()?;
    let (client_sends, client_receives) = super::client_sends_receives(params.dir);
    let mut send = Vec::new();
    if client_receives {
        for &port in &params.udp_ports {
            let s = udp_socket(local_ip, params.sockbuf).map_err(cant)?;
            send.push((s, SocketAddr::new(peer_ip, port)));
        }
    }
    let recv = if client_sends { vec![data] } else { Vec::new() };
    ctl.send(&Msg::Accept {
        data_port,
        token: cookie,
        cert: None,
    })?;
    ctl.send(&Msg::Ready {})?;
    tracing::info!(
        %peer,
        "udp {} test with {} flow(s) accepted, data port {data_port}",
        iotoll_model::spec::word(&params.dir),
        params.conns
    );
    let phase = Arc::new(PhaseCell::new(Phase::Ramp));
    let p = UdpParams {
        size: params.msg,
        rate: params.rate,
        cookie,
        flows: params.conns as usize,
    };
    let engine = UdpEngine::start(send, recv, p, phase.clone())
        .map_err(|e| SessionError::io("cannot start the UDP engine", e))?;
    let closed = serve_window(ctl, &params, &phase)?;
    // The receiver counts what is still on the way before it reports.
    let out = engine.join();
    let received = out.received.unwrap_or_default();
    let report = ServerReport {
        window_s: closed.window_s,
        cpu: closed.report.as_ref().ok().cloned(),
        cpu_error: closed.report.as_ref().err().map(|e| e.to_string()),
        rx: received.flows,
        tx_bytes: out.sent.bytes,
        errors: out.errors,
        first_error: out.first_error.clone(),
        disclosure: iotoll_model::spec::to_json(&iotoll_probe::sysinfo::network(local_ip)),
        udp: Some(UdpEnd {
            sent: out.sent,
            received: client_sends.then_some(received),
        }),
        ..Default::default()
    };
    slot.release();
    ctl.send(&Msg::Report {
        report: Box::new(report),
    })?;
    let _ = ctl.recv(Duration::from_secs(2));
    let dir = iotoll_model::spec::word(&params.dir);
    Ok(format!(
        "udp {dir} test with {} flow(s) done in a {:.1} s window",
        params.conns, closed.window_s
    ))
}
