//! Result documents built in test code (feature `test-fixtures`), for the
//! tests of every crate that reads them: one shape, not a copy per crate.

use crate::{CpuReport, HostFigures, Interference, PairFigures, ResultDoc};
use serde_json::{json, Value};

/// A complete result document of `kind` with `spec` and `metrics` and
/// nothing else measured, as iotoll 0.1.0 stored one.
pub fn doc(kind: &str, spec: Value, metrics: Value) -> ResultDoc {
    serde_json::from_value(json!({
        "iotoll_version": "0.1.0", "kind": kind, "status": "complete",
        "started_at": "2026-11-22T00:00:00Z", "config": null, "spec": spec,
        "metrics": metrics, "cpu": {"local": null, "remote": null},
        "latency": null, "series": [], "notes": [], "disclosure": null
    }))
    .expect("a valid fixture document")
}

/// A CPU window of `cpus` CPUs, `busy_pct` busy, of which other processes
/// used `others_pct`: interfered above the 5 % threshold.
pub fn cpu_with_others(cpus: u32, busy_pct: f64, others_pct: f64) -> CpuReport {
    CpuReport {
        cpus,
        busy_pct,
        interference: Some(Interference {
            threshold_pct: 5.0,
            others_pct,
            interfered: others_pct > 5.0,
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// A pair of a stream test that moved `mbit_s` client to server on 2
/// connections over a 10 s window.
pub fn pair(client: &str, server: &str, mbit_s: f64) -> PairFigures {
    PairFigures {
        client: client.into(),
        server: server.into(),
        conns: 2,
        client_to_server_bytes: (mbit_s * 1e6 / 8.0 * 10.0) as u64,
        server_to_client_bytes: 0,
        mbit_s,
        ..Default::default()
    }
}

/// A host of a stream test with `cpus` CPUs that sent `tx` and received
/// `rx` Mbit/s at `cpu` % CPU.
pub fn stream_host(name: &str, role: &str, cpus: u32, tx: f64, rx: f64, cpu: f64) -> HostFigures {
    let m = [
        ("mbit_s", tx + rx),
        ("tx_mbit_s", tx),
        ("rx_mbit_s", rx),
        ("cpu_pct", cpu),
    ];
    HostFigures {
        name: name.into(),
        role: role.into(),
        cpus,
        metrics: crate::metrics::of(&m),
        ..Default::default()
    }
}
