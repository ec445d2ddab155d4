//! UDP tests through the binary: an endpoint on loopback, real datagrams,
//! and the invariants that hold however busy the machine is (the counts
//! are exact; the rates are whatever the host managed).

mod common;
use common::server::Server;
use common::*;
use std::net::UdpSocket;
use std::time::Duration;

const SHORT: [&str; 4] = ["--ramp", "200ms", "--time", "1s"];

fn udp(addr: &str, words: &str) -> serde_json::Value {
    let mut a = net_args("udp", addr, words);
    a.extend(SHORT);
    net_json(&a)
}

/// What holds for every UDP result: the receiver counted no more than the
/// sender sent, loss is exactly their difference over what was sent,
/// goodput is at most the offered rate, and the derived figures agree.
fn invariants(d: &serde_json::Value) {
    assert_eq!(d["kind"], "net-udp");
    assert_eq!(d["status"], "complete");
    let (sent, got) = (metric(d, "datagrams_sent"), metric(d, "datagrams_received"));
    assert!(sent > 0.0 && got <= sent, "received {got} of {sent}");
    assert_eq!(metric(d, "datagrams_lost"), sent - got);
    let loss = metric(d, "loss_pct");
    assert!((loss - 100.0 * (sent - got) / sent).abs() < 1e-9, "{loss}");
    let (goodput, offered) = (metric(d, "mbit_s"), metric(d, "offered_mbit_s"));
    assert!(goodput <= offered + 1e-9, "{goodput} > {offered}");
    let size = d["spec"]["size"].as_f64().unwrap();
    // Every datagram counted is `size` bytes: goodput is the received count's.
    let window = metric(d, "window_s");
    let tx_rx = ["tx_mbit_s", "rx_mbit_s"].map(|k| d["metrics"].get(k).is_some());
    if tx_rx == [true, false] {
        let want = got * size * 8.0 / 1e6 / window;
        assert!(
            (goodput - want).abs() < 1e-6 * want.max(1.0),
            "{goodput} vs {want}"
        );
    }
    assert_eq!(metric(d, "duplicates"), 0.0, "loopback repeats nothing");
    assert!(metric(d, "cpu_pct") > 0.0);
    let pe = metric(d, "mbit_s_per_cpu_pct");
    assert!((pe - goodput / metric(d, "cpu_pct")).abs() < 1e-6 * pe.max(1.0));
    assert!(!d["series"].as_array().unwrap().is_empty());
    assert!(d["notes"].to_string().contains("counted exactly"));
}

#[test]
fn paced_tx_on_loopback() {
    let s = Server::start("127.0.0.1", &[]);
    let d = udp(&s.addr, "--rate 40m --size 1000 --config udp-lo");
    invariants(&d);
    assert_eq!(d["spec"]["dir"], "tx");
    assert_eq!(d["spec"]["size"], 1000);
    assert_eq!(d["spec"]["rate"], 40_000_000u64);
    assert_eq!(d["config"], "udp-lo");
    assert!(d["metrics"].get("rx_mbit_s").is_none());
    // The buckets never offer more than the rate over the window, but
    // for one datagram: credit a delayed sender kept from the ramp-up is
    // not spent in the window.
    let offered = metric(&d, "offered_mbit_s");
    let window = metric(&d, "window_s");
    let most = 40.0 * (1.0 + 1e-6) + 1000.0 * 8.0 / 1e6 / window;
    assert!(offered <= most + 1e-9, "offered {offered} Mbit/s at 40m");
    assert!(offered > 0.0);
    assert!(d["metrics"].get("jitter_us").is_some());
    assert_eq!(metric(&d, "conns"), 1.0);
    assert_eq!(d["cpu"]["same_host"], true);
    assert!(d["metrics"].get("remote_cpu_pct").is_none());
}

#[test]
fn unlimited_rx_and_bidir_flows() {
    let s = Server::start("127.0.0.1", &[]);
    let d = udp(&s.addr, "--dir rx --conns 2");
    invariants(&d);
    assert!(d["spec"]["rate"].is_null(), "unlimited");
    assert!(metric(&d, "rx_mbit_s") > 0.0);
    assert!(d["metrics"].get("tx_mbit_s").is_none());
    assert_eq!(metric(&d, "conns"), 2.0);

    let d = udp(&s.addr, "--dir bidir --conns 3 --rate 30m --size 200");
    invariants(&d);
    assert_eq!(metric(&d, "conns"), 6.0, "3 flows each way");
    let (tx, rx) = (metric(&d, "tx_mbit_s"), metric(&d, "rx_mbit_s"));
    assert!((metric(&d, "mbit_s") - (tx + rx)).abs() < 1e-6);
    let (lo, hi) = (metric(&d, "conn_mbit_s_min"), metric(&d, "conn_mbit_s_max"));
    assert!(lo <= hi, "{lo} {hi}");
}

/// Strangers' datagrams at the endpoint's data port (garbage, short,
/// another test's cookie, a flow that does not exist) are ignored and
/// said so; the test's own counts stay exact.
#[test]
fn foreign_datagrams_are_ignored_and_counted_apart() {
    let s = Server::start("127.0.0.1", &[]);
    let mut c = raw();
    c.arg("net").args(net_args(
        "udp",
        &s.addr,
        "--rate 20m --ramp 300ms --time 2s --json",
    ));
    let run = measuring(&mut c);
    assert!(
        s.wait_log("data port", Duration::from_secs(10)),
        "no UDP test at the endpoint"
    );
    let line = s
        .log
        .lock()
        .unwrap()
        .iter()
        .find(|l| l.contains("data port"))
        .cloned();
    let port: u16 = line
        .and_then(|l| l.rsplit(' ').next()?.trim().parse().ok())
        .expect("data port in the log");
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let to = ("127.0.0.1", port);
    let mut header = [0u8; 64];
    header[..4].copy_from_slice(b"IOTU");
    header[16] = 0x80; // in the window
    let mut wrong_flow = header;
    wrong_flow[4..8].copy_from_slice(&7u32.to_be_bytes());
    // Keep at it through the window: the endpoint opens it after the ramp.
    for _ in 0..60 {
        for d in [&b"garbage"[..], &header[..31], &header[..], &wrong_flow[..]] {
            let _ = sock.send_to(d, to);
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    let out = run.finish();
    assert!(out.status.success(), "{}", stderr(&out));
    let d: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    validate(&d);
    invariants(&d);
    assert!(metric(&d, "datagrams_ignored") > 0.0);
    assert!(d["notes"].to_string().contains("were not counted"));
}

#[test]
fn bad_input_is_refused_before_anything_runs() {
    for (words, needle) in [
        ("udp 127.0.0.1 --size 31", "--size"),
        ("udp 127.0.0.1 --size 65508", "65507"),
        ("udp 127.0.0.1 --rate 0", "not a rate"),
        ("udp 127.0.0.1 --rate fast", "not a rate"),
        ("udp 127.0.0.1 --rate 1.5", "not a rate"),
        ("udp 127.0.0.1 --conns 0", "--conns"),
        ("udp 127.0.0.1 --conns 1025", "1024"),
        ("udp 127.0.0.1 --tls", "--tls"),
        ("udp 127.0.0.1 --threads 2", "--threads"),
        ("udp 127.0.0.1 --dir up", "unknown direction"),
        ("udp 127.0.0.1 --rate 1k --time 2s", "every 11.8 s"),
    ] {
        let args: Vec<&str> = words.split_whitespace().collect();
        let (code, doc, err) = net_run(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(doc.is_none());
        assert!(err.contains(needle), "{args:?}: {needle:?} not in {err}");
    }
}

/// A suite's `net-udp` test against the suite's own endpoint: stored, and
/// shown with its loss.
#[test]
fn a_suite_runs_udp_tests() {
    let t = Tmp::new();
    let file = t.file(
        "udp.toml",
        r#"
name = "udp"
ramp = "200ms"
time = "1s"

[[test]]
name = "u"
kind = "net-udp"
rate = ["20m", 30000000]
size = 512
dir = "tx"
"#,
    );
    let table = t.cmd("suite run --quiet").arg(&file).succeeds();
    assert!(
        table.contains("u/rate=20m") && table.contains("u/rate=30000000"),
        "{table}"
    );
    let run = t.show("1");
    let docs = stored_docs(&run);
    assert_eq!(docs.len(), 2);
    for d in docs {
        invariants(d);
        assert_eq!(d["spec"]["size"], 512);
    }
    // A key the kind does not take names the kind's keys.
    let bad = t.file(
        "bad.toml",
        "name = \"b\"\n[[test]]\nname = \"u\"\nkind = \"net-udp\"\nmsg = \"1k\"\n",
    );
    let err = t.cmd("suite run --quiet").arg(&bad).fails(2, "unknown key");
    assert!(err.contains("rate"), "{err}");
}
