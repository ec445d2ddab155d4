//! `compare` pairs only the same test: single runs and imports are named by
//! their workload, differing workloads are flagged (and refused with
//! `--strict`), efficiency is kept per result kind and always equals the
//! row's value over the row's CPU.

mod common;
use common::server::{free_port, Server};
use common::*;
use serde_json::Value;
use std::process::Command as Std;

/// `suite run FILE --config CONFIG`: must succeed.
fn run_suite(t: &Tmp, file: &str, config: &str) {
    t.cmd("suite run --quiet")
        .args([file, "--config", config])
        .succeeds();
}

/// The issue's case: 4 connections of 64k tx against 1 connection of 1k rx
/// were compared as "3.8 % higher". Now they are different tests.
#[test]
fn single_runs_are_named_by_workload_and_different_ones_never_pair() {
    let t = Tmp::new();
    let srv = Server::start("127.0.0.1", &[]);
    let stream = |config: &str, workload: &str| {
        t.cmd("net stream --time 1s --ramp 0s --quiet")
            .arg(&srv.addr)
            .args(workload.split_whitespace())
            .args(["--config", config])
            .succeeds();
    };
    stream("mtu1500", "--conns 4 --msg 64k");
    stream("mtu9000", "--conns 1 --msg 1k --dir rx");
    let text = t.cmd("results show mtu1500").succeeds();
    assert!(
        text.contains("stream/dir=tx,conns=4,msg=64k"),
        "single run named by its workload: {text}"
    );
    // Nothing in common is no result.
    let err = t
        .cmd("compare mtu1500 mtu9000")
        .fails(1, "nothing to compare");
    assert!(err.contains("stream/dir=rx,conns=1,msg=1k"), "{err}");

    // The same workload again under the second label pairs with the first.
    stream("mtu9000", "--conns 4 --msg 64k");
    let c = t.cmd("compare --json mtu1500 mtu9000 --strict").json();
    assert_eq!(c["rows"].as_array().unwrap().len(), 1);
    assert_eq!(c["rows"][0]["test"], "stream/dir=tx,conns=4,msg=64k");
    assert_eq!(c["rows"][0]["differs"], serde_json::json!([]));
}

/// Two suites whose test of the same name ran different workloads: flagged
/// on the row and in the findings; `--strict` refuses.
#[test]
fn matched_tests_with_other_parameters_are_flagged_and_refused_when_strict() {
    let t = Tmp::new();
    for (label, conns) in [("one", 1), ("two", 2)] {
        let f = t.file(
            &format!("{label}.toml"),
            format!(
                "name = \"s\"\nreps = 1\nramp = \"0s\"\ntime = \"1s\"\n\
                 [[test]]\nname = \"conns\"\nkind = \"net-stream\"\nconns = {conns}\nmsg = \"64k\"\n"
            ),
        );
        run_suite(&t, &f, label);
    }
    let c = t.cmd("compare --json one two").json();
    assert_eq!(c["rows"][0]["differs"], serde_json::json!(["conns 1 vs 2"]));
    let findings = c["findings"].to_string();
    assert!(findings.contains("conns 1 vs 2"), "{findings}");
    assert!(findings.contains("--config"), "{findings}");
    let out = t.cmd("compare one two --strict").out();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
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
    let t = Tmp::new();
    let f = t.file(
        "mix.toml",
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
    );
    run_suite(&t, &f, "A");
    run_suite(&t, &f, "B");
    let c = t.cmd("compare --json A B").json();
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
        for (test, kind, m, what) in [
            ("rand", "disk", "iops_per_cpu_pct", "IOPS per % CPU"),
            ("stream", "net-stream", "mbit_s_per_cpu_pct", "P/E"),
        ] {
            let r = row(test);
            let (v, cpu) = (
                r["values"][i].as_f64().unwrap(),
                r["cpu_pct"][i].as_f64().unwrap(),
            );
            let got = mean_of(label, kind, m);
            assert!(
                (got - v / cpu).abs() <= 1e-9 * got,
                "{label}: {what} {got} != {v} / {cpu}"
            );
        }
        assert!(mean_of(label, "net-rr", "cpu_us_per_trans") > 0.0);
    }
    // One efficiency finding per kind here (each kind's one test is its
    // own transfer-size class: "On disk tests of ≤ 8k transfers B …").
    let findings: Vec<&str> = c["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f.as_str())
        .collect();
    for kind in ["disk", "net-stream", "net-rr"] {
        assert!(
            findings
                .iter()
                .any(|f| f.starts_with(&format!("On {kind} tests")) && f.contains(" B ")),
            "{kind}: {findings:?}"
        );
    }
}

/// iperf3's own run, imported, pairs with the native run of the same
/// workload, and keeps iperf3's timestamp.
#[test]
fn an_iperf3_import_matches_the_native_run() {
    let t = Tmp::new();
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
    let file = t.file("iperf3.json", &json);
    let before = std::time::SystemTime::now();
    t.cmd("results import --format iperf3-json --config iperf3")
        .arg(&file)
        .succeeds();
    let srv = Server::start("127.0.0.1", &[]);
    t.cmd("net stream --conns 2 --msg 128k --time 1s --ramp 0s --config native --quiet")
        .arg(&srv.addr)
        .succeeds();
    let c = t.cmd("compare --json iperf3 native --strict").json();
    let rows = c["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["test"], "stream/dir=tx,conns=2,msg=128k");
    assert!(rows[0]["diff_pct"][0].as_f64().is_some());

    // The run is dated by iperf3 (its start), not by the import.
    let v: Value = serde_json::from_slice(&json).unwrap();
    let secs = v["start"]["timestamp"]["timesecs"].as_u64().unwrap();
    let date = Std::new("date")
        .args(["-u", "-d", &format!("@{secs}"), "+%Y-%m-%dT%H:%M:%SZ"])
        .succeeds();
    assert_eq!(t.show("iperf3")["started_at"], date.trim());
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
    let t = Tmp::new();
    for (config, remote) in [("a", 20.0), ("b", 30.0)] {
        let f = t.file(
            &format!("{config}.csv"),
            format!(
                "test,mbit_s,cpu_pct,remote_cpu_pct,remote_cpu_system_pct,remote_cpu_softirq_pct\ns,900,10,{remote},{},3\n",
                remote / 2.0
            ),
        );
        t.cmd("results import --format table")
            .args([&f, "--config", config])
            .succeeds();
    }
    for metric in ["remote_cpu_pct", "remote_cpu_system_pct"] {
        let c = t
            .cmd("compare --json a b")
            .args(["--metric", metric])
            .json();
        let g = &c["groups"][0];
        assert_eq!(g["metric"], metric, "{c}");
        // b's peer used more CPU: no win for b.
        assert_eq!(g["wins"], 0, "{metric}: {c}");
        assert!(g["mean_diff_pct"].as_f64().unwrap() > 0.0, "{c}");
    }
    let csv = t.cmd("results export b --format csv").succeeds();
    for m in ["remote_cpu_system_pct", "remote_cpu_softirq_pct"] {
        assert!(
            csv.lines()
                .any(|l| l.contains(&format!(",{m},")) && l.ends_with(",%,total,")),
            "{m} has no unit:\n{csv}"
        );
    }
}
