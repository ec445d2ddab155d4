//! `iotoll net udp`: the client's side of a UDP test. It asks the endpoint
//! for the test over the control connection (telling it the ports of its
//! flow sockets), runs the ramp-up and the window as the stream client
//! does, and merges both ends' counts into one result.

use super::engine::{UdpEngine, UdpOut, UdpParams};
use super::server::udp_socket;
use crate::client::drive::{drive, Driven, Plan};
use crate::client::{accepted_ready, peer_err, CONTROL_TIMEOUT};
use crate::proto::Dir;
use crate::{resolve, ClientSpec, NetError, DEFAULT_PORT};
use iotoll_model::ResultDoc;
use iotoll_run::{Counting, Labels, Phase, PhaseCell, RunControl};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::sync::Arc;

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
    let (accepted, local_ip) = accepted_ready(&addr, spec, &params, rc.interrupted)?;
    let (mut ctl, data_port, token) = (accepted.ctl, accepted.data_port, accepted.token);
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
    let plan = Plan {
        addr: &addr,
        spec,
        counting: Counting::NetBytes,
        // The live totals are what this host sent, received, or both.
        labels: Labels {
            rate_of: Some(match spec.dir {
                Dir::Tx => "sent",
                Dir::Rx => "received",
                Dir::Bidir => "sent+received",
            }),
            ..Labels::default()
        },
        phase: &phase,
        report_wait: CONTROL_TIMEOUT,
    };
    let w = drive(&plan, &mut ctl, engine, &mut rc)?;
    if w.report.udp.is_none() {
        let msg = format!(
            "the endpoint's report has no UDP counts (it answered {:.1} s after the window): is it an older iotoll?",
            w.report_after_s
        );
        return Err(peer_err(&addr, msg));
    }
    super::result::result_doc(spec, &addr, local_ip, w)
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

/// The UDP engine under the shared window driver: on an early exit it is
/// dropped, which stops its threads without draining what is in flight.
impl Driven for UdpEngine {
    type Out = UdpOut;
    fn totals(&self) -> (u64, u64) {
        UdpEngine::totals(self)
    }
    fn finish(self) -> UdpOut {
        // The receiver drains what the endpoint sent in its window while
        // the endpoint drains what this host sent.
        self.join()
    }
    fn abandon(self) {
        drop(self);
    }
}
