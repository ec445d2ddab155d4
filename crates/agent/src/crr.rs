//! Connection rates across hosts (crr, cc), an agent's side: each pair it
//! serves has a listener of its own and the endpoint's acceptors
//! (`iotoll_net::crr::CrrServer`, one thread per concurrent client), each
//! pair it is the client of has `conns` workers opening one connection
//! after another to it (`iotoll_net::crr::CrrEngine`), as a local
//! `net crr|cc` runs them. Connections close normally (FIN), the client
//! first: the TIME_WAIT is the client host's.

use crate::window::{cannot_start, known_server, Load, Placed};
use crate::wire::{AgentReport, CrrClient, CrrServed, PairBytes, PairCrr, PairPort, PairSlot};
use iotoll_net::crr::{ClientParams, CrrEngine, CrrServer, MAX_CLIENTS};
use iotoll_net::proto::TestParams;
use iotoll_net::server::data_listener;
use iotoll_net::TestKind;
use iotoll_run::{Counting, Phase, PhaseCell};
use std::net::{Ipv4Addr, Ipv6Addr, TcpListener};
use std::os::fd::OwnedFd;
use std::sync::Arc;

/// Most connection-rate threads one host runs for a test (its clients'
/// workers and its servers' acceptors): the local test's limit.
pub const MAX_CRR_THREADS_PER_HOST: usize = MAX_CLIENTS as usize;

/// A connection-rate test's pairs on this agent: each pair it serves with
/// its listener (its clients' workers open their connections at START).
pub(crate) type CrrPairs = Placed<TcpListener, ()>;

/// The threads a host runs for `pairs` pairs of `conns` clients each.
pub fn threads_needed(pairs: usize, conns: u32) -> usize {
    pairs.saturating_mul(conns as usize)
}

impl CrrPairs {
    /// Opens a listener for each pair this host serves; the port of each.
    pub fn prepare(
        params: TestParams,
        served: Vec<PairSlot>,
        clients: Vec<PairSlot>,
    ) -> Result<(CrrPairs, Vec<PairPort>), String> {
        let n = threads_needed(served.len() + clients.len(), params.conns);
        if n > MAX_CRR_THREADS_PER_HOST {
            return Err(format!(
                "this host would run {n} connection threads (its pairs x conns); at most {MAX_CRR_THREADS_PER_HOST}"
            ));
        }
        let _ = iotoll_net::sock::ensure_nofile(2 * n as u64 + 256);
        let listen = |ip: std::net::IpAddr| data_listener(ip, params.sockbuf);
        let served = (served.into_iter())
            .map(|s| {
                let l = listen(Ipv6Addr::UNSPECIFIED.into())
                    .or_else(|_| listen(Ipv4Addr::UNSPECIFIED.into()))
                    .map_err(|e| format!("pair {}: cannot open a data port: {e}", s.pair + 1))?;
                Ok((s, l))
            })
            .collect::<Result<Vec<_>, String>>()?;
        let c = CrrPairs {
            params,
            served,
            clients: clients.into_iter().map(|s| (s, ())).collect(),
        };
        let ports = c.ports(TcpListener::local_addr)?;
        Ok((c, ports))
    }

    /// START: every served pair's acceptors, then every client pair's
    /// workers, on one phase.
    pub fn start(self) -> Result<(CrrLoad, Arc<PhaseCell>, usize), String> {
        let phase = Arc::new(PhaseCell::new(Phase::Ramp));
        let p = &self.params;
        let mut load = CrrLoad {
            conns: p.conns,
            served: Vec::new(),
            clients: Vec::new(),
        };
        for (s, l) in self.served {
            let n = p.conns as usize;
            let srv = CrrServer::start(l, p.kind, (p.req, p.resp), s.token, n, phase.clone())
                .map_err(|e| cannot_start(s.pair, e))?;
            load.served.push((s.pair, srv));
        }
        for (s, ()) in self.clients {
            let cp = ClientParams {
                server: known_server(&s, "data port")?,
                token: s.token,
                exchange: (p.kind == TestKind::Crr).then_some((p.req, p.resp)),
                linger0: p.linger0,
                bind: Vec::new(),
            };
            let e = CrrEngine::start(cp, p.conns as usize, phase.clone())
                .map_err(|e| cannot_start(s.pair, e))?;
            load.clients.push((s.pair, e));
        }
        let threads = threads_needed(load.served.len() + load.clients.len(), p.conns);
        Ok((load, phase, threads))
    }
}

/// A connection-rate test's engines on this agent, by pair.
pub(crate) struct CrrLoad {
    conns: u32,
    served: Vec<(u32, CrrServer)>,
    clients: Vec<(u32, CrrEngine)>,
}

impl Load for CrrLoad {
    /// Connections this host completed as a client (a server's are its
    /// clients', counted there): the hosts' seconds add up to the test's.
    fn received(&self) -> (u64, u64) {
        (self.clients.iter().map(|(_, e)| e.done()).sum(), 0)
    }

    fn counting(&self) -> Counting {
        Counting::Transactions
    }

    fn finish(self, report: &mut AgentReport) -> Vec<OwnedFd> {
        // Clients first: each worker finishes its transaction; the servers
        // then answer what is still coming and stop when it is quiet.
        let clients: Vec<_> = (self.clients.into_iter())
            .map(|(k, e)| (k, e.join()))
            .collect();
        let served: Vec<_> = (self.served.into_iter())
            .map(|(k, s)| (k, s.join()))
            .collect();
        let zero = |pair: u32| PairBytes {
            pair,
            conns: self.conns,
            rx: 0,
            tx: 0,
        };
        let keys = served
            .iter()
            .map(|s| s.0)
            .chain(clients.iter().map(|c| c.0));
        report.pairs.extend(keys.map(zero));
        for (k, s) in served {
            report.errors += s.window_errors;
            report.first_error = report.first_error.take().or(s.first_error);
            report.crr.push(PairCrr {
                pair: k,
                client: None,
                server: Some(CrrServed {
                    accepted: s.end.accepted,
                    responded: s.end.responded,
                    bad_token: s.end.bad_token,
                    window_done: s.window_done,
                    window_errors: s.window_errors,
                }),
            });
        }
        for (k, o) in clients {
            report.errors += o.failures.total();
            report.first_error = report.first_error.take().or(o.first_error);
            report.crr.push(PairCrr {
                pair: k,
                client: Some(CrrClient {
                    window_done: o.window_done,
                    failures: o.failures.0,
                    total_done: o.total_done,
                    total_failed: o.total_failed,
                    connect_hist: crate::histwire::encode(&o.connect),
                    trans_hist: crate::histwire::encode(&o.trans),
                }),
                server: None,
            });
        }
        Vec::new()
    }
}
