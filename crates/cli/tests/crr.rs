//! Connection-rate tests (`net crr`, `net cc`) through the binary against
//! an endpoint on loopback: the invariants that hold however busy the
//! machine is (every connection accounted for at both ends, Little's law),
//! and a rate floor this shared 2-CPU machine clears with a wide margin.

mod common;
use common::proxy::{type_of, Proxy, Way};
use common::server::Server;
use common::*;

const SHORT: [&str; 4] = ["--ramp", "300ms", "--time", "2s"];

fn rate_test(kind: &str, addr: &str, words: &str) -> serde_json::Value {
    let mut a = net_args(kind, addr, words);
    a.extend(SHORT);
    net_json(&a)
}

/// Whether other processes took more than the threshold of the CPU.
fn interfered(d: &serde_json::Value) -> bool {
    d["cpu"]["local"]["interference"]["interfered"] == true
}

/// What holds for every connection-rate result: no failure (loopback
/// refuses, resets and times out nothing; --linger0 or the kernel's reuse
/// keep the ports), the endpoint served what this host completed (the
/// client fails the test when the totals disagree), and the derived
/// figures are the ratios of the measured ones.
fn invariants(d: &serde_json::Value, kind: &str, conns: f64) {
    assert_eq!(d["kind"], kind);
    assert_eq!(d["status"], "complete", "{}", d["notes"]);
    assert_eq!(metric(d, "failures"), 0.0, "{}", d["notes"]);
    assert_eq!(metric(d, "failures_ports_exhausted"), 0.0);
    assert_eq!(metric(d, "conns"), conns);
    let rate = metric(d, "conn_s");
    // Both ends' windows differ by the control connection's round trip.
    // Beside other processes (the result says it was interfered with) that
    // trip, and with it the endpoint's window, moves by up to the second
    // the client accepts while the lowest-priority workers' rate swings:
    // the windows' counts then differ (a test.sh run beside another saw
    // 4,027/s and 2,745/s served, windows of one length), and what holds is
    // that the whole test's totals agree, which a complete status says.
    let served = metric(d, "served_conn_s");
    assert!(
        (served - rate).abs() <= 0.1 * rate || (interfered(d) && served > 0.0),
        "client {rate}/s, endpoint {served}/s, not interfered with"
    );
    let cpu = metric(d, "cpu_pct");
    let per_conn = metric(d, "cpu_us_per_conn");
    let want = cpu / 100.0 * metric(d, "cpus") * 1e6 / rate;
    assert!(
        (per_conn - want).abs() < 1e-6 * want,
        "{per_conn} vs {want}"
    );
    let pe = metric(d, "conn_s_per_cpu_pct");
    assert!((pe - rate / cpu).abs() < 1e-6 * pe);
    assert!(metric(d, "connect_p50_us") <= metric(d, "connect_p99_us"));
    assert!(!d["series"].as_array().unwrap().is_empty());
}

#[test]
fn crr_on_loopback_accounts_for_every_connection() {
    let s = Server::start("127.0.0.1", &[]);
    let d = rate_test(
        "crr",
        &s.addr,
        "--conns 4 --req 100 --resp 1k --config crr-lo",
    );
    invariants(&d, "net-crr", 4.0);
    let rate = metric(&d, "conn_s");
    // Issue 29's bar is 1,000 connections/s; this busy 2-CPU machine
    // managed over 10,000 on loopback. The workers run at the lowest
    // priority, so beside other processes (CPU hogs: the result says it
    // was interfered with) the rate is theirs to take, and only the
    // accounting above is asserted.
    assert!(
        rate >= 1000.0 || interfered(&d),
        "{rate} connections/s, not interfered with: {}",
        d["cpu"]["local"]["interference"]
    );
    // Little's law: clients busy = rate x time per transaction. Each
    // client is in a transaction but for its close and the loop around
    // it, and never in two.
    let busy = rate * metric(&d, "trans_mean_us") / 1e6;
    assert!(
        (4.0 * 0.3..=4.0 * 1.1).contains(&busy),
        "{busy} of 4 clients busy"
    );
    assert!(metric(&d, "trans_mean_us") >= metric(&d, "connect_mean_us"));
    assert_eq!(d["spec"]["req"], 100);
    assert_eq!(d["spec"]["resp"], 1024);
    assert_eq!(d["spec"]["linger0"], false);
    assert_eq!(d["config"], "crr-lo");
    // Without --linger0 the result says where TIME_WAIT is and how long
    // the ports last.
    assert!(
        d["notes"].to_string().contains("TIME_WAIT"),
        "{}",
        d["notes"]
    );
    // The latency section is the transaction's.
    assert!(d["latency"]["percentiles_us"]["99"].as_f64().unwrap() > 0.0);
}

#[test]
fn cc_with_linger0_leaves_no_time_wait_note() {
    let s = Server::start("127.0.0.1", &[]);
    let d = rate_test("cc", &s.addr, "--conns 2 --linger0");
    invariants(&d, "net-cc", 2.0);
    // As crr's floor: beside CPU hogs the lowest-priority workers' rate is
    // theirs to take (below 400/s seen beside three).
    assert!(metric(&d, "conn_s") >= 1000.0 || interfered(&d));
    assert!(
        d["metrics"].get("trans_mean_us").is_none(),
        "cc has no data"
    );
    assert_eq!(d["spec"]["linger0"], true);
    assert_eq!(d["spec"]["req"], 0);
    assert!(!d["notes"].to_string().contains("TIME_WAIT"));
}

/// A rate test holds no slot: a stream test on the same endpoint runs
/// while it does, and both complete.
#[test]
fn a_stream_test_runs_beside_a_rate_test() {
    let s = Server::start("127.0.0.1", &[]);
    let addr = s.addr.clone();
    let crr = std::thread::spawn(move || {
        let a = net_args("crr", &addr, "--conns 2 --ramp 200ms --time 4s");
        net_json(&a)
    });
    assert!(
        s.wait_log(
            "crr test with 2 client(s) accepted",
            std::time::Duration::from_secs(10)
        ),
        "the rate test did not start"
    );
    let st = net_json(&net_args(
        "stream",
        &s.addr,
        "--ramp 0s --time 1s --busy-wait 0s",
    ));
    assert_eq!(st["status"], "complete");
    assert!(metric(&st, "mbit_s") > 0.0);
    let d = crr.join().unwrap();
    invariants(&d, "net-crr", 2.0);
}

#[test]
fn bad_rate_test_input_is_refused_by_name() {
    // Validated before anything connects: no endpoint needed.
    let addr = "127.0.0.1:9";
    net_fails(&net_args("crr", addr, "--conns 5000"), 2, "--conns");
    // The range stated as it is (clap said "not in 0..=4294967295").
    let e = net_fails(&net_args("crr", addr, "--conns -1"), 2, "at least 1");
    assert!(
        e.contains("1000 crr/cc clients") && !e.contains("4294967295"),
        "{e}"
    );
    net_fails(&net_args("cc", addr, "--conns 0"), 2, "at least 1");
    net_fails(&net_args("cc", addr, "--tls"), 2, "--tls");
    net_fails(&net_args("crr", addr, "--threads 2"), 2, "--threads");
    net_fails(&net_args("crr", addr, "--req 0"), 2, "--req");
    net_fails(&net_args("rr", addr, "--linger0"), 2, "--linger0");
}

/// An endpoint that gives up on a test tells the client why, and the
/// client says so (a tester saw only "report: Connection reset by
/// peer"). A proxy loses the client's window start and end: the endpoint
/// waits the ramp-up and its slack from the workers' first connection,
/// then ends the test.
#[test]
fn an_endpoint_that_gives_up_says_why() {
    let s = Server::start("127.0.0.1", &[]);
    let lose = Proxy::start(&s.addr, |way, f| match way {
        Way::ToEndpoint if matches!(type_of(&f).as_str(), "window_start" | "window_end") => {
            vec![]
        }
        _ => vec![f],
    });
    let a = net_args("cc", &lose.addr, "--conns 2 --ramp 0s --time 5s --linger0");
    let err = net_fails(&a, 1, "the endpoint gave up waiting for the window start");
    assert!(err.contains("first connection"), "{err}");
}
