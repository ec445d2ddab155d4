//! `compare` pairs only the same test: single runs and imports are named by
//! their workload, differing workloads are flagged (and refused with
//! `--strict`), efficiency is kept per result kind and always equals the
//! row's value over the row's CPU.

mod common;
use common::server::{free_port, Server};
use common::*;
use serde_json::Value;
use std::path::Path;
use std::process::Command as Std;

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

fn compare_json(db: &Path, args: &[&str]) -> Value {
    let out = iotoll()
        .args(["compare", "--json", "--db", s(db)])
        .args(args)
        .output()
        .expect("run iotoll");
    ok_json(&out)
}

fn run_suite(db: &Path, file: &Path, config: &str) {
    iotoll()
        .args(["suite", "run", s(file), "--quiet", "--config", config])
        .args(["--db", s(db)])
        .assert()
        .success();
}

/// The issue's case: 4 connections of 64k tx against 1 connection of 1k rx
/// were compared as "3.8 % higher". Now they are different tests.
#[test]
fn single_runs_are_named_by_workload_and_different_ones_never_pair() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("r.db");
    let srv = Server::start("127.0.0.1", &[]);
    for (config, extra) in [
        ("mtu1500", &["--conns", "4", "--msg", "64k"][..]),
        (
            "mtu9000",
            &["--conns", "1", "--msg", "1k", "--dir", "rx"][..],
        ),
    ] {
        iotoll()
            .args(["net", "stream", &srv.addr, "--time", "1s", "--ramp", "0s"])
            .args(extra)
            .args(["--config", config, "--quiet", "--db", s(&db)])
            .assert()
            .success();
    }
    let show = iotoll()
        .args(["results", "show", "mtu1500", "--db", s(&db)])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&show.stdout);
    assert!(
        text.contains("stream/dir=tx,conns=4,msg=64k"),
        "single run named by its workload: {text}"
    );
    let out = iotoll()
        .args(["compare", "mtu1500", "mtu9000", "--db", s(&db)])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "nothing in common is no result");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("nothing to compare"), "{err}");
    assert!(err.contains("stream/dir=rx,conns=1,msg=1k"), "{err}");

    // The same workload again under the second label pairs with the first.
    iotoll()
        .args(["net", "stream", &srv.addr, "--time", "1s", "--ramp", "0s"])
        .args(["--conns", "4", "--msg", "64k"])
        .args(["--config", "mtu9000", "--quiet", "--db", s(&db)])
        .assert()
        .success();
    let c = compare_json(&db, &["mtu1500", "mtu9000", "--strict"]);
    assert_eq!(c["rows"].as_array().unwrap().len(), 1);
    assert_eq!(c["rows"][0]["test"], "stream/dir=tx,conns=4,msg=64k");
    assert_eq!(c["rows"][0]["differs"], serde_json::json!([]));
}

/// Two suites whose test of the same name ran different workloads: flagged
/// on the row and in the findings; `--strict` refuses.
#[test]
fn matched_tests_with_other_parameters_are_flagged_and_refused_when_strict() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("r.db");
    for (label, conns) in [("one", 1), ("two", 2)] {
        let f = d.path().join(format!("{label}.toml"));
        std::fs::write(
            &f,
            format!(
                "name = \"s\"\nreps = 1\nramp = \"0s\"\ntime = \"1s\"\n\
                 [[test]]\nname = \"conns\"\nkind = \"net-stream\"\nconns = {conns}\nmsg = \"64k\"\n"
            ),
        )
        .unwrap();
        run_suite(&db, &f, label);
    }
    let c = compare_json(&db, &["one", "two"]);
    assert_eq!(c["rows"][0]["differs"], serde_json::json!(["conns 1 vs 2"]));
    let findings = c["findings"].to_string();
    assert!(findings.contains("conns 1 vs 2"), "{findings}");
    assert!(findings.contains("--config"), "{findings}");
    let out = iotoll()
        .args(["compare", "one", "two", "--strict", "--db", s(&db)])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--strict") && err.contains("conns 1 vs 2"),
        "{err}"
    );
    assert!(
        out.stdout.is_empty(),
        "a refused comparison prints no table"
    );
}

/// A mix of disk, stream and rr tests with `select = "mean"`: efficiency
/// per kind, and each equal to the row's value over the row's CPU.
#[test]
fn mixed_kinds_keep_efficiency_and_mean_rows_add_up() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("r.db");
    let f = d.path().join("mix.toml");
    std::fs::write(
        &f,
        r#"
name = "mix"
reps = 2
select = "mean"
repeatability_pct = 100
ramp = "0s"
time = "1s"

[[test]]
name = "rand"
kind = "disk"
bs = "4k"
read = 100
random = 100
qd = 4
size = "16m"

[[test]]
name = "stream"
kind = "net-stream"
msg = "64k"

[[test]]
name = "rr"
kind = "net-rr"
"#,
    )
    .unwrap();
    run_suite(&db, &f, "A");
    run_suite(&db, &f, "B");
    let c = compare_json(&db, &["A", "B"]);
    let eff = c["efficiency"].as_array().unwrap();
    let mean_of = |label: &str, kind: &str, m: &str| -> f64 {
        eff.iter()
            .find(|e| e["label"] == label && e["kind"] == kind)
            .and_then(|e| e["means"][m].as_f64())
            .unwrap_or_else(|| panic!("no {m} for {label}/{kind} in {eff:?}"))
    };
    let row = |test: &str| -> &Value {
        c["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["test"] == test)
            .unwrap_or_else(|| panic!("no row {test}"))
    };
    for (i, label) in ["A", "B"].iter().enumerate() {
        // One test per kind: the kind's mean is that row's own ratio.
        let r = row("rand");
        let (v, cpu) = (
            r["values"][i].as_f64().unwrap(),
            r["cpu_pct"][i].as_f64().unwrap(),
        );
        let got = mean_of(label, "disk", "iops_per_cpu_pct");
        assert!(
            (got - v / cpu).abs() <= 1e-9 * got,
            "{label}: IOPS per % CPU {got} != {v} / {cpu}"
        );
        let r = row("stream");
        let (v, cpu) = (
            r["values"][i].as_f64().unwrap(),
            r["cpu_pct"][i].as_f64().unwrap(),
        );
        let got = mean_of(label, "net-stream", "mbit_s_per_cpu_pct");
        assert!(
            (got - v / cpu).abs() <= 1e-9 * got,
            "{label}: P/E {got} != {v} / {cpu}"
        );
        assert!(mean_of(label, "net-rr", "cpu_us_per_trans") > 0.0);
    }
    let findings = c["findings"].to_string();
    for kind in ["disk", "net-stream", "net-rr"] {
        assert!(
            findings.contains(&format!("On {kind} tests B")),
            "{kind}: {findings}"
        );
    }
}

/// iperf3's own run, imported, pairs with the native run of the same
/// workload, and keeps iperf3's timestamp.
#[test]
fn an_iperf3_import_matches_the_native_run() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("r.db");
    let port = free_port("127.0.0.1").to_string();
    let mut iperf = match Std::new("iperf3")
        .args(["-s", "-1", "-B", "127.0.0.1", "-p", &port])
        .stdout(std::process::Stdio::null())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => panic!("iperf3 is needed (./test.sh installs it): {e}"),
    };
    // iperf3 -s needs a moment to listen; the client retries until it does.
    let mut json = Vec::new();
    for _ in 0..50 {
        let out = Std::new("iperf3")
            .args(["-c", "127.0.0.1", "-p", &port, "-P", "2", "-t", "1", "-J"])
            .output()
            .expect("run iperf3");
        // With -J, iperf3 may report "unable to connect" in the document.
        let ok = serde_json::from_slice::<Value>(&out.stdout)
            .is_ok_and(|v| v.get("error").is_none() && v.get("end").is_some());
        if out.status.success() && ok {
            json = out.stdout;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let _ = iperf.kill();
    let _ = iperf.wait();
    assert!(!json.is_empty(), "iperf3 client never connected");
    let file = d.path().join("iperf3.json");
    std::fs::write(&file, &json).unwrap();
    let before = std::time::SystemTime::now();
    iotoll()
        .args(["results", "import", s(&file), "--format", "iperf3-json"])
        .args(["--config", "iperf3", "--db", s(&db)])
        .assert()
        .success();
    let srv = Server::start("127.0.0.1", &[]);
    iotoll()
        .args(["net", "stream", &srv.addr, "--conns", "2", "--msg", "128k"])
        .args(["--time", "1s", "--ramp", "0s", "--config", "native"])
        .args(["--quiet", "--db", s(&db)])
        .assert()
        .success();
    let c = compare_json(&db, &["iperf3", "native", "--strict"]);
    let rows = c["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["test"], "stream/dir=tx,conns=2,msg=128k");
    assert!(rows[0]["diff_pct"][0].as_f64().is_some());

    // The run is dated by iperf3 (its start), not by the import.
    let v: Value = serde_json::from_slice(&json).unwrap();
    let secs = v["start"]["timestamp"]["timesecs"].as_u64().unwrap();
    let date = Std::new("date")
        .args(["-u", "-d", &format!("@{secs}"), "+%Y-%m-%dT%H:%M:%SZ"])
        .output()
        .expect("date");
    let want = String::from_utf8_lossy(&date.stdout).trim().to_string();
    let out = iotoll()
        .args(["results", "show", "iperf3", "--json", "--db", s(&db)])
        .output()
        .unwrap();
    let shown: Value = serde_json::from_slice(&out.stdout).expect("results show --json");
    assert_eq!(shown["started_at"], want.as_str());
    assert!(
        std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs) <= before,
        "iperf3 ran before the import"
    );
}

/// The two defects of copies kept apart from the registry: the peer's CPU
/// counted as a win when it grew, and `remote_cpu_system_pct` and its
/// siblings unknown to `--metric`, table import and CSV export's units.
#[test]
fn the_peers_cpu_metrics_come_from_the_registry() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("r.db");
    for (config, remote) in [("a", 20.0), ("b", 30.0)] {
        let f = d.path().join(format!("{config}.csv"));
        std::fs::write(
            &f,
            format!(
                "test,mbit_s,cpu_pct,remote_cpu_pct,remote_cpu_system_pct,remote_cpu_softirq_pct\ns,900,10,{remote},{},3\n",
                remote / 2.0
            ),
        )
        .unwrap();
        iotoll()
            .args(["results", "import", s(&f), "--format", "table"])
            .args(["--config", config, "--db", s(&db)])
            .assert()
            .success();
    }
    for metric in ["remote_cpu_pct", "remote_cpu_system_pct"] {
        let c = compare_json(&db, &["a", "b", "--metric", metric]);
        let g = &c["groups"][0];
        assert_eq!(g["metric"], metric, "{c}");
        // b's peer used more CPU: no win for b.
        assert_eq!(g["wins"], 0, "{metric}: {c}");
        assert!(g["mean_diff_pct"].as_f64().unwrap() > 0.0, "{c}");
    }
    let out = iotoll()
        .args(["results", "export", "b", "--format", "csv", "--db", s(&db)])
        .output()
        .unwrap();
    let csv = String::from_utf8_lossy(&out.stdout);
    for m in ["remote_cpu_system_pct", "remote_cpu_softirq_pct"] {
        assert!(
            csv.lines()
                .any(|l| l.contains(&format!(",{m},")) && l.ends_with(",%")),
            "{m} has no unit:\n{csv}"
        );
    }
}
