//! Request/response across lab hosts (issue 29 section 5): the console
//! starts an `iotoll agent` per host; each pair reports its transactions
//! and percentiles, the totals add the transactions up and take the
//! percentiles of the merged histograms. Needs root; skipped otherwise,
//! failed under CI.

mod common;

use common::lab_suite::LabSuite;
use serde_json::Value;

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

const RR: &str = r#"
name = "rr-hosts"
reps = 1
[[test]]
name = "rr"
kind = "net-rr"
conns = 2
ramp = "1s"
time = "3s"
pairs = [["c1", "server"], ["c2", "server"], ["c1", "server"]]
"#;

/// Three hosts, three pairs (c1 a client twice): each pair's percentiles;
/// the totals' transactions are the pairs', and their p99 lies within the
/// pairs' (a merged histogram's percentile can be no lower than the
/// lowest pair's and no higher than the highest's).
#[test]
fn rr_over_three_hosts_has_per_pair_percentiles() {
    let Some(lab) = LabSuite::new("rr", 'c') else {
        return;
    };
    let run = (lab.run(&["server", "c1", "c2"], "", RR)).unwrap_or_else(|e| panic!("{e}"));
    let doc = &run["tests"][0]["reps"][0]["doc"];
    assert_eq!(doc["kind"], "net-rr", "{doc}");
    let m = &doc["metrics"];
    let pairs = doc["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 3);
    let mut trans = 0.0;
    for p in pairs {
        let pm = &p["metrics"];
        assert!(p["transactions"].as_u64().unwrap() > 0, "{p}");
        for k in ["rtt_p50_us", "rtt_p90_us", "rtt_p99_us", "rtt_p999_us"] {
            assert!(f(&pm[k]) > 0.0, "{k}: {p}");
        }
        assert!(f(&pm["rtt_p50_us"]) <= f(&pm["rtt_p99_us"]), "{p}");
        trans += f(&pm["trans_s"]);
    }
    assert!(
        (trans - f(&m["trans_s"])).abs() <= 1e-6 * trans,
        "{trans} {m}"
    );
    let p99s: Vec<f64> = pairs
        .iter()
        .map(|p| f(&p["metrics"]["rtt_p99_us"]))
        .collect();
    let (lo, hi) = (
        p99s.iter().cloned().fold(f64::MAX, f64::min),
        p99s.iter().cloned().fold(0.0, f64::max),
    );
    let p99 = f(&m["rtt_p99_us"]);
    assert!(p99 >= lo && p99 <= hi, "{p99} not within {p99s:?}");
    // Both ends' CPU, per host as streams have it.
    let hosts = doc["hosts"].as_array().unwrap();
    assert_eq!(hosts.len(), 3);
    // Each host's transactions are those of its pairs, either end (the
    // server's are all three pairs'), and so is its CPU per transaction.
    for h in hosts {
        assert!(f(&h["cpu"]["busy_pct"]) > 0.0, "{h}");
        let hm = &h["metrics"];
        assert!(
            f(&hm["trans_s"]) > 0.0 && f(&hm["cpu_us_per_trans"]) > 0.0,
            "{h}"
        );
    }
    let server = hosts.iter().find(|h| h["name"] == "server").unwrap();
    let st = f(&server["metrics"]["trans_s"]);
    assert!(
        (st - trans).abs() <= 0.05 * trans,
        "server {st} of {trans} trans/s"
    );
    assert!(f(&m["cpu_us_per_trans"]) > 0.0, "{m}");
    // The test's seconds count each transaction once (at its client):
    // their mean over the window (each point over its own span) is the
    // total's, within what the hosts' window edges move.
    let points = doc["series"].as_array().unwrap();
    let (mut sum, mut span, mut prev) = (0.0, 0.0, None);
    for p in points {
        let t = f(&p["t_s"]);
        if p["phase"] == "measure" {
            let dt = t - prev.unwrap_or(t - 1.0);
            (sum, span) = (sum + f(&p["trans_s"]) * dt, span + dt);
        }
        prev = Some(t);
    }
    let mean = sum / span.max(1e-9);
    assert!(
        span > 0.0 && (mean - trans).abs() <= 0.25 * trans,
        "series mean {mean} against {trans} trans/s: {points:?}"
    );
    println!(
        "rr over 3 hosts: {:.0} trans/s, p99 {p99:.1} us (pairs {p99s:?})",
        f(&m["trans_s"])
    );
}

const RING: &str = r#"
name = "ring"
reps = 1
[[test]]
name = "ring"
kind = "net-rr"
conns = 1
ramp = "1s"
time = "2s"
pairs = [["c1", "server"], ["server", "c2"], ["c2", "c1"]]
"#;

/// Each host the client of one pair and the server of another, in one
/// test: every pair has its transactions, every host both roles.
#[test]
fn a_host_is_client_and_server_in_one_test() {
    let Some(lab) = LabSuite::new("ring", 'c') else {
        return;
    };
    let run = (lab.run(&["server", "c1", "c2"], "", RING)).unwrap_or_else(|e| panic!("{e}"));
    let doc = &run["tests"][0]["reps"][0]["doc"];
    let pairs = doc["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 3);
    for p in pairs {
        assert!(p["transactions"].as_u64().unwrap() > 0, "{p}");
        assert!(f(&p["metrics"]["rtt_p99_us"]) > 0.0, "{p}");
    }
    for h in doc["hosts"].as_array().unwrap() {
        assert_eq!(h["role"], "client+server", "{h}");
    }
}

const TLS: &str = r#"
name = "tls-hosts"
reps = 1
[[test]]
name = "tls"
kind = "net-rr"
tls = true
conns = 1
ramp = "1s"
time = "2s"
pairs = [["c1", "server"], ["server", "c2"]]
"#;

/// TLS across lab hosts (the server host also a client): every pair ran,
/// and the stored spec says TLS with the cipher the suite asked for.
#[test]
fn tls_across_hosts_runs_pinned() {
    let Some(lab) = LabSuite::new("tls", 'c') else {
        return;
    };
    let run = (lab.run(&["server", "c1", "c2"], "", TLS)).unwrap_or_else(|e| panic!("{e}"));
    let doc = &run["tests"][0]["reps"][0]["doc"];
    assert_eq!(doc["spec"]["tls"], "aes-128-gcm", "{}", doc["spec"]);
    for p in doc["pairs"].as_array().unwrap() {
        assert!(p["transactions"].as_u64().unwrap() > 0, "{p}");
    }
}

/// Every serving agent sends the console another certificate than the one
/// it presents (test hook): the client's pin refuses it, the test fails
/// and the error says so.
#[test]
fn a_pinned_certificate_mismatch_across_hosts_is_refused() {
    let Some(lab) = LabSuite::new("pin", 'c') else {
        return;
    };
    let e = (lab.run_env(
        &["server", "c1"],
        "",
        &TLS.replace(r#", ["server", "c2"]"#, ""),
        &[("IOTOLL_TEST_WRONG_CERT", "1")],
    ))
    .expect_err("a test whose certificates were swapped ran");
    assert!(e.contains("another certificate") && e.contains("c1"), "{e}");
    let at = e.find("host c1").unwrap_or(0);
    println!("refused: {}", e[at..].chars().take(200).collect::<String>());
}
