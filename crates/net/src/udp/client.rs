//! `iotoll net udp`: the client's side of a UDP test. It asks the endpoint
//! for the test over the control connection (telling it the ports of its
//! flow sockets), runs the ramp-up and the window as the stream client
//! does, and merges both ends' counts into one result.

use super::engine::{UdpEngine, UdpOut, UdpParams};
use super::server::udp_socket;
use crate::client::{
    endpoint_ended, peer_err, proto_err, recv, request_test_waiting, unexpected, Accepted,
    CONTROL_TIMEOUT,
};
use crate::proto::{Control, Msg, ServerReport};
use crate::{resolve, ClientSpec, NetError, DEFAULT_PORT};
use iotoll_model::ResultDoc;
use iotoll_probe::ClosedWindow;
use iotoll_run::{Clock, Counting, HostClock, Phase, PhaseCell, RunControl, SeriesRecorder};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::{Instant, SystemTime};

/// What both ends measured.
pub(super) struct Measured {
    pub(super) started_at: String,
    pub(super) completed: bool,
    pub(super) closed: ClosedWindow,
    pub(super) out: UdpOut,
    pub(super) report: ServerReport,
    pub(super) series: SeriesRecorder,
    pub(super) local_ip: IpAddr,
}

/// Runs a UDP test against an endpoint.
pub fn run(spec: &ClientSpec, mut rc: RunControl) -> Result<ResultDoc, NetError> {
    spec.validate()?;
    let addr = resolve(&spec.peer, DEFAULT_PORT)?;
    let socks = flow_sockets(spec, &addr)?;
    let mut params = spec.params();
    for s in &socks {
        let port = s
            .local_addr()
            .map_err(|e| NetError::io("UDP flow socket", e))?;
        params.udp_ports.push(port.port());
    }
    let Accepted {
        mut ctl,
        data_port,
        token,
        ..
    } = request_test_waiting(&addr, spec, &params, rc.interrupted)?;
    match recv(&mut ctl, &addr, "ready", CONTROL_TIMEOUT)? {
        Msg::Ready {} => {}
        other => return Err(unexpected(&addr, "ready", &other)),
    }
    let local_ip = (ctl.stream.local_addr())
        .map_err(|e| NetError::io("control connection: local address", e))?
        .ip();
    let (sends, receives) = super::client_sends_receives(spec.dir);
    let to = SocketAddr::new(addr.ip(), data_port);
    let send = match sends {
        true => socks.iter().map(|s| (s.clone(), to)).collect(),
        false => Vec::new(),
    };
    let recv_socks = if receives { socks } else { Vec::new() };
    let p = UdpParams {
        size: spec.msg,
        rate: spec.rate,
        cookie: token,
        flows: spec.conns as usize,
    };
    let phase = Arc::new(PhaseCell::new(Phase::Ramp));
    let engine = UdpEngine::start(send, recv_socks, p, phase.clone())
        .map_err(|e| NetError::io("cannot start the UDP engine", e))?;
    let measured = measure(spec, &addr, &mut ctl, engine, &phase, &mut rc, local_ip)?;
    super::result::result_doc(spec, &addr, measured)
}

/// One socket per flow, bound to `--bind`'s addresses round-robin (else
/// any address of the endpoint's family), with `--sockbuf`.
fn flow_sockets(spec: &ClientSpec, addr: &SocketAddr) -> Result<Vec<Arc<UdpSocket>>, NetError> {
    let any = match addr {
        SocketAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        SocketAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    };
    (0..spec.conns as usize)
        .map(|i| {
            let ip = spec
                .bind
                .get(i % spec.bind.len().max(1))
                .copied()
                .unwrap_or(any);
            udp_socket(ip, spec.sockbuf)
                .map_err(|e| NetError::io(format!("UDP flow socket {} on {ip}", i + 1), e))
        })
        .collect()
}

/// Runs the ramp-up and the window at both ends, then collects the
/// endpoint's report.
fn measure(
    spec: &ClientSpec,
    addr: &SocketAddr,
    ctl: &mut Control,
    engine: UdpEngine,
    phase: &Arc<PhaseCell>,
    rc: &mut RunControl,
    local_ip: IpAddr,
) -> Result<Measured, NetError> {
    let clock = HostClock;
    let mut series = SeriesRecorder::new(Counting::NetBytes, spec.ramp + spec.time, clock.now());
    let wait = |series: &mut SeriesRecorder, until, rc: &mut RunControl, ctl: &Control| {
        let go_on = || !ctl.peer_spoke();
        series.wait(&clock, until, rc, phase, || engine.totals(), go_on)
    };
    let ramp_end = series.t_run() + spec.ramp;
    if !wait(&mut series, ramp_end, rc, ctl) {
        drop(engine);
        if ctl.peer_spoke() {
            return Err(endpoint_ended(ctl, addr));
        }
        let _ = ctl.send(&Msg::Stop {});
        return Err(NetError::Interrupted("during ramp-up"));
    }
    let started_at = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
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
    if !completed && ctl.peer_spoke() {
        drop(engine);
        return Err(endpoint_ended(ctl, addr));
    }
    let ended = ctl
        .send(&Msg::WindowEnd {})
        .map_err(|e| proto_err(addr, "window end", e));
    // The receiver drains what the endpoint sent in its window while the
    // endpoint drains what this host sent.
    let out = engine.join();
    ended?;
    let t0 = Instant::now();
    let report = match recv(ctl, addr, "report", CONTROL_TIMEOUT)? {
        Msg::Report { report } => *report,
        other => return Err(unexpected(addr, "report", &other)),
    };
    let _ = ctl.send(&Msg::Stop {});
    if report.udp.is_none() {
        let msg = format!(
            "the endpoint's report has no UDP counts (it answered in {:.1} s): is it an older iotoll?",
            t0.elapsed().as_secs_f64()
        );
        return Err(peer_err(addr, msg));
    }
    Ok(Measured {
        started_at,
        completed,
        closed,
        out,
        report,
        series,
        local_ip,
    })
}
