//! `iotoll net crr` and `iotoll net cc`: the client's side. It asks the
//! endpoint for the test, starts one worker per concurrent client, and
//! runs the window with the shared driver.

use super::engine::{CrrEngine, Params};
use super::MAX_CLIENTS;
use crate::client::drive::{drive, Plan};
use crate::client::{accepted_ready, CONTROL_TIMEOUT};
use crate::proto::TestKind;
use crate::{resolve, sock, ClientSpec, NetError, DEFAULT_PORT};
use iotoll_model::ResultDoc;
use iotoll_run::{Counting, Labels, Phase, PhaseCell, RunControl};
use std::net::SocketAddr;
use std::sync::Arc;

/// The client's checks of a crr/cc test beyond the common ones.
pub fn validate(s: &ClientSpec) -> Result<(), String> {
    if s.conns == 0 || s.conns > MAX_CLIENTS {
        return Err(format!(
            "--conns must be between 1 and {MAX_CLIENTS} for a connection-rate test (one thread each at both ends), got {}",
            s.conns
        ));
    }
    if s.tls.is_some() {
        return Err("--tls applies to net stream and net rr, not to connection-rate tests".into());
    }
    if s.verify {
        return Err("--verify applies to stream tests only".into());
    }
    if s.threads.is_some() {
        return Err(
            "--threads does not apply: a connection-rate test runs one thread per --conns client"
                .into(),
        );
    }
    if s.burst != 1 {
        return Err("--burst does not apply: each connection carries one transaction".into());
    }
    Ok(())
}

/// Runs a crr or cc test against an endpoint.
pub fn run(spec: &ClientSpec, mut rc: RunControl) -> Result<ResultDoc, NetError> {
    spec.validate()?;
    let addr = resolve(&spec.peer, DEFAULT_PORT)?;
    // Each worker holds one socket at a time; the margin covers the
    // control connection and the CPU probe's files.
    sock::ensure_nofile(u64::from(spec.conns) + 64)?;
    let params = spec.params();
    let (accepted, local_ip) = accepted_ready(&addr, spec, &params, rc.interrupted)?;
    let (mut ctl, data_port, token) = (accepted.ctl, accepted.data_port, accepted.token);
    let p = Params {
        server: SocketAddr::new(addr.ip(), data_port),
        token,
        exchange: (spec.kind == TestKind::Crr).then_some((spec.req, spec.resp)),
        linger0: spec.linger0,
        bind: spec.bind.clone(),
    };
    let phase = Arc::new(PhaseCell::new(Phase::Ramp));
    let engine = CrrEngine::start(p, spec.conns as usize, phase.clone())
        .map_err(|e| NetError::io("cannot start the connection workers", e))?;
    let plan = Plan {
        addr: &addr,
        spec,
        counting: Counting::Transactions,
        // Each connection is the transaction (and cc has no other).
        labels: Labels {
            ops: "conn/s",
            rate_of: None,
        },
        phase: &phase,
        // The endpoint gives up SLACK after the workers' last connection.
        report_wait: CONTROL_TIMEOUT + crate::server::SLACK,
    };
    let w = drive(&plan, &mut ctl, engine, &mut rc)?;
    super::result::result_doc(spec, &addr, local_ip, w)
}
