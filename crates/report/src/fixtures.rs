//! Stored runs built in test code, for the crate's rendering tests: a run
//! as `iotoll_report::load` gets it from the database.

use iotoll_model::{Kind, ResultDoc};
use iotoll_store::{RepRow, RunDetail, RunRow, TestRow};
use serde_json::{json, Value};

/// A result document of `kind` with `metrics` and nothing else measured.
pub fn doc(kind: &str, spec: Value, metrics: Value) -> ResultDoc {
    ResultDoc {
        started_at: "2026-11-22T10:00:00Z".into(),
        ..iotoll_model::fixtures::doc(kind, spec, metrics)
    }
}

/// A complete run labelled `config` whose tests each have one repetition,
/// selected.
pub fn run(id: i64, config: &str, tests: Vec<(&str, ResultDoc)>) -> RunDetail {
    RunDetail {
        run: RunRow {
            id,
            suite: "fixture".into(),
            config: Some(config.into()),
            started_at: "2026-11-22T10:00:00Z".into(),
            finished_at: Some("2026-11-22T10:05:00Z".into()),
            status: iotoll_model::RunStatus::Complete,
            notes: Vec::new(),
            tests: tests.len() as i64,
        },
        disclosure: Some(json!({"host": "console", "kernel": "6.1"})),
        suite_text: None,
        tests: tests
            .into_iter()
            .enumerate()
            .map(|(i, (name, doc))| {
                let kind: Kind = doc.kind;
                TestRow {
                    seq: i as i64 + 1,
                    name: name.into(),
                    kind,
                    group: Some(kind.to_string()),
                    params: json!({}),
                    select: format!("median:{}", kind.headline()),
                    selected_rep: Some(1),
                    spread_pct: Some(0.5),
                    repeatable: Some(true),
                    summary: Some(doc.metrics.clone()),
                    ci95: None,
                    confidence: None,
                    reps: vec![RepRow {
                        rep: 1,
                        status: doc.status,
                        doc,
                    }],
                }
            })
            .collect(),
    }
}

/// A single-host stream and disk run, as documents were before multi-host
/// tests: what every report rendered before them.
pub fn single_host_run(id: i64, config: &str, scale: f64) -> RunDetail {
    let mut stream = doc(
        "net-stream",
        json!({"dir": "tx", "conns": 4, "msg": 65536, "time_s": 10.0, "ramp_s": 1.0, "peer": "192.0.2.7:7575"}),
        json!({"mbit_s": 9400.0 * scale, "conns": 4.0, "cpu_pct": 23.5, "cpus": 8.0,
               "remote_cpu_pct": 18.25, "fairness": 0.999, "retransmits": 12.0, "window_s": 10.0}),
    );
    let mut disk = doc(
        "disk",
        json!({"bs": 4096, "qd": 32, "workers": 4, "read_pct": 100, "random_pct": 100,
               "time_s": 10.0, "ramp_s": 1.0, "target": "/dev/nvme0n1", "engine": "io_uring"}),
        json!({"iops": 412_345.0 * scale, "mb_s": 1689.0 * scale, "lat_mean_us": 310.2,
               "lat_p99_us": 845.0, "cpu_pct": 31.4, "cpus": 8.0, "window_s": 10.0}),
    );
    // Derived before `run` copies each document's metrics into its summary.
    for d in [&mut stream, &mut disk] {
        iotoll_model::derive_metrics(&mut d.metrics);
    }
    run(id, config, vec![("stream", stream), ("rr4k", disk)])
}

/// A multi-host stream test (bidirectional, 60 % of each pair's bytes
/// client to server): every client with every server, 4-CPU clients at
/// 20 %, 22 %, … CPU and 16-CPU servers at 30 %, 31 %, …; the totals as the
/// console would compute them (CPU weighted by CPU count).
pub fn multi_stream_doc(clients: &[&str], servers: &[&str], scale: f64) -> ResultDoc {
    use iotoll_model::{HostFigures, PairFigures, Skew};
    let window_s = 10.0;
    let mut pairs = Vec::new();
    for (i, c) in clients.iter().enumerate() {
        for (j, s) in servers.iter().enumerate() {
            let rate = scale * (1800.0 + 100.0 * ((i * 7 + j * 3) % 5) as f64 + 0.37 * i as f64)
                / servers.len() as f64;
            let bytes = rate * 1e6 / 8.0 * window_s;
            pairs.push(PairFigures {
                client: c.to_string(),
                server: s.to_string(),
                conns: 4,
                client_to_server_bytes: (bytes * 0.6).round() as u64,
                server_to_client_bytes: (bytes * 0.4).round() as u64,
                mbit_s: rate,
                ..Default::default()
            });
        }
    }
    let host = |name: &str, role: &str, cpus: u32, cpu: f64, n: usize| {
        let client = role == "client";
        let mine = |p: &&PairFigures| name == if client { &p.client } else { &p.server };
        let total: f64 = pairs.iter().filter(mine).map(|p| p.mbit_s).sum();
        // A client sends 60 % of its pairs' bytes, a server 40 %.
        let (tx, rx) = if client { (0.6, 0.4) } else { (0.4, 0.6) };
        let mut metrics = iotoll_model::metrics::of(&[
            ("mbit_s", total),
            ("tx_mbit_s", total * tx),
            ("rx_mbit_s", total * rx),
            ("cpu_pct", cpu),
            ("cpus", cpus as f64),
            ("window_s", window_s),
        ]);
        iotoll_model::derive_metrics(&mut metrics);
        HostFigures {
            name: name.into(),
            address: format!("192.0.2.{}:7576", n + 10),
            role: role.into(),
            cpus,
            boot_id: Some(format!("boot-{name}")),
            metrics,
            on_us: -3.5 * n as f64,
            off_us: 12.25 + n as f64,
            ..Default::default()
        }
    };
    let mut hosts: Vec<HostFigures> = servers
        .iter()
        .enumerate()
        .map(|(j, s)| host(s, "server", 16, 30.0 + j as f64, j))
        .collect();
    hosts.extend(
        clients
            .iter()
            .enumerate()
            .map(|(i, c)| host(c, "client", 4, 20.0 + 2.0 * i as f64, servers.len() + i)),
    );
    let weighted = |role: &str| {
        let hs: Vec<&HostFigures> = hosts.iter().filter(|h| h.role == role).collect();
        let n: f64 = hs.iter().map(|h| h.cpus as f64).sum();
        let cpu = hs
            .iter()
            .map(|h| h.metrics["cpu_pct"] * h.cpus as f64)
            .sum::<f64>()
            / n;
        (cpu, n)
    };
    let (cpu, cpus) = weighted("client");
    let (remote_cpu, remote_cpus) = weighted("server");
    let total: f64 = pairs.iter().map(|p| p.mbit_s).sum();
    let sq: f64 = pairs.iter().map(|p| p.mbit_s * p.mbit_s).sum();
    let d = doc(
        "net-stream",
        json!({"dir": "bidir", "conns": 4, "msg": 65536, "time_s": window_s, "ramp_s": 1.0,
               "hosts": clients.len() + servers.len()}),
        json!({"mbit_s": total, "tx_mbit_s": total * 0.6, "rx_mbit_s": total * 0.4,
               "conns": 4.0 * pairs.len() as f64, "cpu_pct": cpu, "cpus": cpus,
               "remote_cpu_pct": remote_cpu, "remote_cpus": remote_cpus,
               "pair_fairness": total * total / (pairs.len() as f64 * sq),
               "pairs": pairs.len() as f64, "hosts": hosts.len() as f64, "window_s": window_s}),
    );
    let mut d = ResultDoc {
        hosts,
        pairs,
        skew_us: Some(Skew {
            start: 48.5,
            stop: 96.0,
            clock: 20.0,
        }),
        ..d
    };
    iotoll_model::derive_metrics(&mut d.metrics);
    d
}

/// `single_host_run` with a multi-host stream test `mesh` added.
pub fn multi_host_run(id: i64, config: &str, doc: ResultDoc) -> RunDetail {
    let mut r = single_host_run(id, config, 1.0);
    let mut m = run(id, config, vec![("mesh", doc)]);
    let mut t = m.tests.remove(0);
    t.seq = 3;
    r.tests.push(t);
    r.run.tests += 1;
    r
}

/// The report of `runs` (baseline first) as Markdown and HTML, with the
/// version string fixed so a snapshot outlives a version bump.
pub fn render(runs: &[RunDetail]) -> (String, String) {
    let (configs, infos): (Vec<_>, Vec<_>) = runs.iter().map(crate::load).unzip();
    let c = crate::compare(&configs, None, true, None);
    let what = if runs.len() == 1 {
        "report"
    } else {
        "comparison"
    };
    let md = crate::markdown::render(&c, &configs, &infos);
    let html = crate::html::render(&c, &configs, &infos, what).replace(
        &format!("iotoll {}", iotoll_model::VERSION),
        "iotoll VERSION",
    );
    (md, html)
}

/// The HTML report of `run`, with a CPU threshold.
pub fn html_of(run: &RunDetail, threshold: Option<f64>) -> String {
    let (configs, infos): (Vec<_>, Vec<_>) = [run].into_iter().map(crate::load).unzip();
    let c = crate::compare(&configs, None, true, threshold);
    crate::html::render(&c, &configs, &infos, "report")
}

/// With `IOTOLL_REPORT_DUMP=DIR`, writes a rendered report into DIR as
/// `NAME.md` and `NAME.html`, to look at it as a reader would.
pub fn dump(name: &str, md: &str, html: &str) {
    if let Some(dir) = std::env::var_os("IOTOLL_REPORT_DUMP") {
        let dir = std::path::PathBuf::from(dir);
        for (ext, text) in [("md", md), ("html", html)] {
            let p = dir.join(format!("{name}.{ext}"));
            std::fs::write(&p, text).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reports of documents without hosts: these snapshots were taken
    /// before multi-host results existed, and must not change.
    #[test]
    fn single_host_reports_are_unchanged() {
        let (md, html) = render(&[single_host_run(1, "base", 1.0)]);
        insta::assert_snapshot!("single_host_report_md", md);
        insta::assert_snapshot!("single_host_report_html", html);
        let (md, html) = render(&[
            single_host_run(1, "base", 1.0),
            single_host_run(2, "cand", 1.1),
        ]);
        insta::assert_snapshot!("single_host_compare_md", md);
        insta::assert_snapshot!("single_host_compare_html", html);
    }
}
