//! The network engines of one agent's side of a test. A request/response
//! client runs one engine per pair: the engine keeps one round-trip
//! histogram for all its connections, and the console reports each
//! pair's percentiles and merges the pairs' histograms for the totals.
//! Every other side runs one engine over all its pairs' connections.

use hdrhistogram::Histogram;
use iotoll_net::engine::{DataConn, Engine, EngineOut, Role};
use iotoll_net::proto::TestParams;
use iotoll_net::TestKind;
use iotoll_run::{Phase, PhaseCell};
use std::net::TcpStream;
use std::sync::Arc;

pub(crate) struct Engines {
    all: Vec<Engine>,
}

/// What the engines did, and for a request/response client each pair's
/// transactions and round trips (in the pairs' order).
pub(crate) struct EnginesOut {
    pub out: EngineOut,
    pub per_pair: Vec<(u64, Histogram<u64>)>,
}

impl Engines {
    /// Engines over every pair's connections, in the ramp-up, and the
    /// threads they run: as asked, else [`iotoll_net::server::threads_for`]
    /// this host's pairs; a client's per-pair engines share them out.
    pub fn start(
        params: &TestParams,
        conns: Vec<Vec<(TcpStream, Role)>>,
        serves: bool,
        threads: Option<usize>,
    ) -> Result<(Engines, Arc<PhaseCell>, usize), String> {
        let all_conns = conns.iter().map(Vec::len).sum();
        let threads =
            threads.unwrap_or_else(|| iotoll_net::server::threads_for(conns.len(), all_conns));
        let groups: Vec<Vec<(TcpStream, Role)>> =
            if params.kind == TestKind::Rr && !serves && conns.len() > 1 {
                conns
            } else {
                vec![conns.into_iter().flatten().collect()]
            };
        let (one, share) = (groups.len() == 1, (threads / groups.len()).max(1));
        let phase = Arc::new(PhaseCell::new(Phase::Ramp));
        let mut all = Vec::with_capacity(groups.len());
        let mut ran = 0;
        for g in groups {
            let n = if one { threads } else { share.min(g.len()) };
            ran += n;
            let g = g.into_iter().map(|(s, r)| (DataConn::from(s), r)).collect();
            let e = Engine::start(
                g,
                iotoll_net::server::engine_params(params),
                phase.clone(),
                n,
            )
            .map_err(|e| format!("cannot start the network engine: {e}"))?;
            all.push(e);
        }
        Ok((Engines { all }, phase, ran))
    }

    /// Running totals (operations, bytes received) of every engine.
    pub fn received(&self) -> (u64, u64) {
        (self.all.iter().map(Engine::received)).fold((0, 0), |(a, b), (c, d)| (a + c, b + d))
    }

    /// Joins every engine: their outcomes as one, connections in the
    /// order given, and each engine's transactions and round trips.
    pub fn join(self) -> EnginesOut {
        let mut per_pair = Vec::with_capacity(self.all.len());
        let mut merged: Option<EngineOut> = None;
        let (mut srtt_sum, mut srtt_n) = (0.0, 0u32);
        for e in self.all {
            let o = e.join();
            per_pair.push((o.transactions, o.rtt.clone()));
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
