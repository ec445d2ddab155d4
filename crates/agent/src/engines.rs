//! The network engines of one agent's side of a test. A request/response
//! client runs one engine per pair it is the client of: an engine keeps
//! one round-trip histogram for all its connections, and the console
//! reports each pair's percentiles and merges the pairs' histograms for
//! the totals. The rest (the pairs it serves, and every pair of a stream
//! test) run in one engine.

use crate::wire::PairSlot;
use hdrhistogram::Histogram;
use iotoll_net::engine::{DataConn, Engine, EngineOut, Role};
use iotoll_net::proto::TestParams;
use iotoll_net::tls::{self, Cipher, ClientTls, ServerTls};
use iotoll_net::TestKind;
use iotoll_run::{Phase, PhaseCell};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

type Conns<C> = Vec<Vec<(C, Role)>>;

/// The connections as the engines take them: cleartext, or for a TLS test
/// after every handshake, the served pairs' with this host's certificate
/// and each client pair's pinning the certificate its server sent the
/// console. Served and client handshakes run at once: two hosts that
/// serve each other each wait for the other's client.
pub(crate) fn secure(
    params: &TestParams,
    mine: Option<&ServerTls>,
    served: Conns<TcpStream>,
    client_pairs: &[PairSlot],
    client: Conns<TcpStream>,
    interrupt: &AtomicBool,
) -> Result<(Conns<DataConn>, Conns<DataConn>), String> {
    let plain = |c: Conns<TcpStream>| -> Conns<DataConn> {
        (c.into_iter())
            .map(|g| g.into_iter().map(|(s, r)| (DataConn::from(s), r)).collect())
            .collect()
    };
    let Some(name) = &params.tls else {
        return Ok((plain(served), plain(client)));
    };
    let cipher = Cipher::parse(name).ok_or_else(|| format!("TLS: no cipher {name}"))?;
    let deadline = Instant::now() + Duration::from_secs(10);
    let abort = || interrupt.load(Ordering::Acquire);
    let shake = |g: Vec<(TcpStream, Role)>, side: tls::Side| {
        let (socks, roles): (Vec<_>, Vec<_>) = g.into_iter().unzip();
        let (conns, _) = tls::handshake_all(socks, side, deadline, &abort)?;
        let conns = conns.into_iter().map(|c| DataConn::Tls(Box::new(c)));
        Ok::<_, tls::HandshakeError>(conns.zip(roles).collect::<Vec<_>>())
    };
    let clients = || -> Result<Conns<DataConn>, String> {
        (client.into_iter().zip(client_pairs))
            .map(|(g, slot)| {
                let k = slot.pair + 1;
                let cert = (slot.cert.as_deref()).ok_or_else(|| {
                    format!("pair {k}: TLS test without its server's certificate")
                })?;
                let pin = ClientTls::pinned(cipher, cert).map_err(|e| format!("pair {k}: {e}"))?;
                shake(g, tls::Side::Client(&pin)).map_err(|e| {
                    let e = e.to_string();
                    match e.contains("invalid peer certificate") {
                        true => format!("pair {k}: TLS: the server presented another certificate than the one it sent the console, which this host pinned ({e})"),
                        false => format!("pair {k}: TLS with its server: {e}"),
                    }
                })
            })
            .collect()
    };
    let sizes: Vec<usize> = served.iter().map(Vec::len).collect();
    let servers = || -> Result<Conns<DataConn>, String> {
        let all: Vec<_> = served.into_iter().flatten().collect();
        if all.is_empty() {
            return Ok(Vec::new());
        }
        let mine = mine.ok_or("TLS test served without a certificate")?;
        let mut all = shake(all, tls::Side::Server(mine))
            .map_err(|e| format!("TLS with a client: {e}"))?
            .into_iter();
        Ok(sizes
            .iter()
            .map(|n| all.by_ref().take(*n).collect())
            .collect())
    };
    let (s, c) = std::thread::scope(|sc| {
        let c = sc.spawn(clients);
        let s = servers();
        let c = c
            .join()
            .unwrap_or_else(|_| Err("the TLS client thread panicked".into()));
        (s, c)
    });
    let c = c?;
    if s.is_err() {
        // The client of a failed pair says why (the certificate it pinned
        // is not the one presented); the server only sees an alert. Its
        // error waits a little so the console hears the client's first.
        std::thread::sleep(Duration::from_secs(1));
    }
    Ok((s?, c))
}

pub(crate) struct Engines {
    all: Vec<Engine>,
    /// The engines from this one on are a request/response client's, one
    /// per pair.
    first_pair: usize,
}

/// What the engines did, and for a request/response client each pair's
/// transactions and round trips (in the pairs' order).
pub(crate) struct EnginesOut {
    pub out: EngineOut,
    pub per_pair: Vec<(u64, Histogram<u64>)>,
}

impl Engines {
    /// Engines over every pair's connections (the pairs it serves, then
    /// the pairs it is the client of), in the ramp-up, and the threads
    /// they run: as asked, else [`iotoll_net::server::threads_for`] this
    /// host's pairs, shared out among the engines.
    pub fn start(
        params: &TestParams,
        served: Vec<Vec<(DataConn, Role)>>,
        client: Vec<Vec<(DataConn, Role)>>,
        threads: Option<usize>,
    ) -> Result<(Engines, Arc<PhaseCell>, usize), String> {
        let pairs = served.len() + client.len();
        let all_conns = served.iter().chain(&client).map(Vec::len).sum();
        let threads = threads.unwrap_or_else(|| iotoll_net::server::threads_for(pairs, all_conns));
        let flat = |v: Vec<Vec<(DataConn, Role)>>| v.into_iter().flatten().collect::<Vec<_>>();
        let mut groups: Vec<Vec<(DataConn, Role)>> = Vec::new();
        let mut first_pair = 0;
        if params.kind == TestKind::Rr {
            if !served.is_empty() {
                groups.push(flat(served));
                first_pair = 1;
            }
            groups.extend(client);
        } else {
            groups.push(flat(served.into_iter().chain(client).collect()));
            first_pair = 1;
        }
        let (one, share) = (groups.len() == 1, (threads / groups.len().max(1)).max(1));
        let phase = Arc::new(PhaseCell::new(Phase::Ramp));
        let mut all = Vec::with_capacity(groups.len());
        let mut ran = 0;
        for g in groups {
            let n = if one { threads } else { share.min(g.len()) };
            ran += n;
            let e = Engine::start(
                g,
                iotoll_net::server::engine_params(params),
                phase.clone(),
                n,
            )
            .map_err(|e| format!("cannot start the network engine: {e}"))?;
            all.push(e);
        }
        Ok((Engines { all, first_pair }, phase, ran))
    }

    /// Running totals (operations, bytes received) of every engine; the
    /// operations are the client engines' only (a request/response test's
    /// transactions, each counted at its client, so the hosts' seconds add
    /// up to the test's).
    pub fn received(&self) -> (u64, u64) {
        (self.all.iter().enumerate()).fold((0, 0), |(ops, bytes), (k, e)| {
            let (o, b) = e.received();
            let o = if k >= self.first_pair { o } else { 0 };
            (ops + o, bytes + b)
        })
    }

    /// Joins every engine: their outcomes as one, connections in the
    /// order given, and each engine's transactions and round trips.
    pub fn join(self) -> EnginesOut {
        let mut per_pair = Vec::with_capacity(self.all.len());
        let mut merged: Option<EngineOut> = None;
        let (mut srtt_sum, mut srtt_n) = (0.0, 0u32);
        for (k, e) in self.all.into_iter().enumerate() {
            let o = e.join();
            if k >= self.first_pair {
                per_pair.push((o.transactions, o.rtt.clone()));
            }
            if let Some(s) = o.srtt_us {
                srtt_sum += s;
                srtt_n += 1;
            }
            merged = Some(match merged {
                None => o,
                Some(mut m) => {
                    m.per_conn.extend(o.per_conn);
                    m.transactions += o.transactions;
                    let _ = m.rtt.add(&o.rtt);
                    m.retransmits += o.retransmits;
                    m.errors += o.errors;
                    m.panic = m.panic.or(o.panic);
                    // A panic is preferred over any other failure.
                    m.first_error = m.panic.clone().or(m.first_error).or(o.first_error);
                    m.sockets.extend(o.sockets);
                    m
                }
            });
        }
        let mut out = merged.unwrap_or_else(empty_out);
        out.srtt_us = (srtt_n > 0).then(|| srtt_sum / f64::from(srtt_n));
        EnginesOut { out, per_pair }
    }
}

fn empty_out() -> EngineOut {
    EngineOut {
        per_conn: Vec::new(),
        transactions: 0,
        rtt: iotoll_run::new_histogram(),
        retransmits: 0,
        srtt_us: None,
        errors: 0,
        first_error: None,
        panic: None,
        sockets: Vec::new(),
    }
}
