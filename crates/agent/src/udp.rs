//! UDP across hosts, an agent's side: each pair it serves has a socket of
//! its own and a receiver counting that pair's datagrams by sequence
//! number (iotoll_net's, as a local `net udp` counts them); each pair it is
//! the client of has its flows' sockets and a sender paced at the test's
//! rate. One engine (one thread) per pair, so each pair's counts are its
//! own and its rate is its own.

use crate::window::{cannot_start, known_server, Load, Placed};
use crate::wire::{AgentReport, PairBytes, PairPort, PairSlot, PairUdp};
use iotoll_net::proto::TestParams;
use iotoll_net::udp::{udp_socket, UdpEngine, UdpOut, UdpParams};
use iotoll_run::{Phase, PhaseCell};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::os::fd::OwnedFd;
use std::sync::Arc;

/// Most UDP pairs one host takes part in: each is a thread here.
pub const MAX_UDP_PAIRS_PER_HOST: usize = 256;

/// A UDP test's pairs on this agent: each pair it serves with the socket
/// its datagrams come to, each pair it is the client of with its flows'
/// sockets.
pub(crate) type UdpPairs = Placed<Arc<UdpSocket>, Vec<Arc<UdpSocket>>>;

/// A socket on any address of `family`'s, with the test's buffers.
fn any_socket(family: IpAddr, sockbuf: Option<u64>) -> Result<Arc<UdpSocket>, String> {
    let any = match family {
        IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    };
    udp_socket(any, sockbuf).map_err(|e| format!("cannot open a UDP socket: {e}"))
}

impl UdpPairs {
    /// Opens every socket of this host's pairs; the port of each it serves.
    pub fn prepare(
        params: TestParams,
        served: Vec<PairSlot>,
        clients: Vec<PairSlot>,
    ) -> Result<(UdpPairs, Vec<PairPort>), String> {
        iotoll_net::udp::validate_placed(&params)?;
        let n = served.len() + clients.len();
        if n > MAX_UDP_PAIRS_PER_HOST {
            return Err(format!(
                "this host is in {n} UDP pairs of the test; an agent runs one thread per UDP pair, at most {MAX_UDP_PAIRS_PER_HOST}"
            ));
        }
        let _ = iotoll_net::sock::ensure_nofile((n * params.conns as usize) as u64 + 256);
        // Every address of this host, as TCP pairs come to any adapter.
        let served = (served.into_iter())
            .map(|s| {
                let sock = any_socket(Ipv6Addr::UNSPECIFIED.into(), params.sockbuf)
                    .or_else(|_| any_socket(Ipv4Addr::UNSPECIFIED.into(), params.sockbuf))?;
                Ok((s, sock))
            })
            .collect::<Result<Vec<_>, String>>()?;
        let clients = (clients.into_iter())
            .map(|s| {
                let Some(server) = s.server else {
                    return Err(format!("pair {}: no server address", s.pair + 1));
                };
                let socks = (0..params.conns)
                    .map(|_| any_socket(server.ip(), params.sockbuf))
                    .collect::<Result<Vec<_>, String>>()?;
                Ok((s, socks))
            })
            .collect::<Result<Vec<_>, String>>()?;
        let u = UdpPairs {
            params,
            served,
            clients,
        };
        let ports = u.ports(|s| s.local_addr())?;
        Ok((u, ports))
    }

    /// START: every pair's engine, on one phase.
    pub fn start(self) -> Result<(UdpLoad, Arc<PhaseCell>, usize), String> {
        let phase = Arc::new(PhaseCell::new(Phase::Ramp));
        let p = &self.params;
        let params = |cookie| UdpParams {
            size: p.msg,
            rate: p.rate,
            cookie,
            flows: p.conns as usize,
        };
        let mut load = UdpLoad {
            conns: p.conns,
            served: Vec::new(),
            clients: Vec::new(),
        };
        for (s, socks) in self.clients {
            let to = known_server(&s, "UDP port")?;
            let send: Vec<(Arc<UdpSocket>, SocketAddr)> =
                socks.into_iter().map(|s| (s, to)).collect();
            let e = UdpEngine::start(send, Vec::new(), params(s.token), phase.clone())
                .map_err(|e| cannot_start(s.pair, e))?;
            load.clients.push((s.pair, e));
        }
        for (s, sock) in self.served {
            let e = UdpEngine::start(Vec::new(), vec![sock], params(s.token), phase.clone())
                .map_err(|e| cannot_start(s.pair, e))?;
            load.served.push((s.pair, e));
        }
        let threads = load.served.len() + load.clients.len();
        Ok((load, phase, threads))
    }
}

/// A UDP test's engines on this agent, by pair.
pub(crate) struct UdpLoad {
    conns: u32,
    served: Vec<(u32, UdpEngine)>,
    clients: Vec<(u32, UdpEngine)>,
}

/// Joins engines at once: each receiver waits for the datagrams still on
/// the way, and they wait together, not one after another.
fn join_all(engines: Vec<(u32, UdpEngine)>) -> Vec<(u32, UdpOut)> {
    std::thread::scope(|sc| {
        let joins: Vec<_> = (engines.into_iter())
            .map(|(k, e)| (k, sc.spawn(move || e.join())))
            .collect();
        (joins.into_iter())
            .map(|(k, h)| {
                let out = h.join().unwrap_or_else(|_| UdpOut {
                    errors: 1,
                    first_error: Some("a UDP engine panicked".into()),
                    ..Default::default()
                });
                (k, out)
            })
            .collect()
    })
}

impl Load for UdpLoad {
    /// The served pairs' receivers (a client's engines only send).
    fn received(&self) -> (u64, u64) {
        (self.served.iter().map(|(_, e)| e.totals())).fold((0, 0), |(a, b), (c, d)| (a + c, b + d))
    }

    fn finish(self, report: &mut AgentReport) -> Vec<OwnedFd> {
        // Senders first: a host in both roles stops sending before its
        // receivers wait for the quiet that ends their count.
        let sent = join_all(self.clients);
        let received = join_all(self.served);
        let conns = self.conns;
        // Each end's bytes as its receiver or its sender counted them.
        let served = (received.iter()).map(|(k, out)| {
            let r = out.received.unwrap_or_default();
            (*k, r.bytes, 0, None, Some(r))
        });
        let ends =
            served.chain((sent.iter()).map(|(k, o)| (*k, 0, o.sent.bytes, Some(o.sent), None)));
        for (pair, rx, tx, sent, received) in ends {
            report.pairs.push(PairBytes {
                pair,
                conns,
                rx,
                tx,
            });
            report.udp.push(PairUdp {
                pair,
                sent,
                received,
            });
        }
        for (_, out) in sent.iter().chain(&received) {
            report.errors += out.errors;
            if report.first_error.is_none() {
                report.first_error = out.first_error.clone();
            }
        }
        // A UDP socket holds no connection the peer needs open.
        Vec::new()
    }
}
