//! UDP and connection rates across lab hosts (issue 29 section 5):
//! `suite run --lab` starts an agent per host. UDP: each pair's server
//! counts its client's datagrams by sequence number; over a shaped link
//! the loss is counted exactly: what the link cannot carry is lost, sent =
//! received + lost per pair and in total, and no goodput is above the
//! link's rate. crr/cc: each pair's rate and percentiles, Little's law,
//! both ends agreeing. Needs root; skipped otherwise, failed under CI.
//! Invariants only: the machine is shared.

mod common;

use common::lab_suite::LabSuite;
use serde_json::Value;

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// The lab's links, bits per second: what no goodput may be above.
const LINK_BPS: f64 = 50e6;
/// Each pair's client offers this, bits per second: the two pairs offer
/// 1.6 times what the server's link carries.
const PAIR_RATE: f64 = 40e6;
const UDP: &str = r#"
name = "udp-hosts"
reps = 1
[[test]]
name = "udp"
kind = "net-udp"
conns = 2
size = 1000
rate = "40m"
ramp = "1s"
time = "3s"
pairs = [["c1", "server"], ["c2", "server"]]
"#;

/// Two pairs into one server over 50 Mbit/s links, each offering 40: per
/// pair and in total sent = received + lost; goodput no more than offered
/// and no more than the link; offered no more than the rate (the pacer's
/// 100 ms of credit allowed); what the server's link could not carry is
/// counted lost; both ends' CPU per host.
#[test]
fn udp_over_a_shaped_link_counts_every_lost_datagram() {
    let Some(lab) = LabSuite::new("udp", 'b') else {
        return;
    };
    let run = lab
        .run(&["server", "c1", "c2"], "rate = \"50mbit\"", UDP)
        .unwrap_or_else(|e| panic!("{e}"));
    let doc = &run["tests"][0]["reps"][0]["doc"];
    assert_eq!(doc["kind"], "net-udp", "{doc}");
    let m = &doc["metrics"];
    let window = f(&m["window_s"]);
    let link = LINK_BPS / 1e6 * 1.05;
    let pairs = doc["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 2);
    let (mut sent, mut got, mut lost, mut goodput) = (0.0, 0.0, 0.0, 0.0);
    for p in pairs {
        let pm = &p["metrics"];
        let (s, r, l) = (
            f(&pm["datagrams_sent"]),
            f(&pm["datagrams_received"]),
            f(&pm["datagrams_lost"]),
        );
        assert!(r > 0.0, "{p}");
        assert_eq!(s, r + l, "{p}");
        let offered = f(&pm["offered_mbit_s"]);
        assert!(
            offered <= PAIR_RATE / 1e6 * (1.0 + 0.2 / window),
            "{offered} {p}"
        );
        assert!(f(&pm["mbit_s"]) <= offered + 1e-9, "{p}");
        assert!(f(&pm["mbit_s"]) <= link, "{p}");
        assert!(f(&pm["loss_pct"]) >= 0.0 && f(&pm["loss_pct"]) <= 100.0);
        sent += s;
        got += r;
        lost += l;
        goodput += f(&pm["mbit_s"]);
    }
    assert_eq!(f(&m["datagrams_sent"]), sent, "{m}");
    assert_eq!(f(&m["datagrams_received"]), got, "{m}");
    assert_eq!(f(&m["datagrams_lost"]), lost, "{m}");
    assert!((f(&m["mbit_s"]) - goodput).abs() <= 1e-9 * goodput, "{m}");
    assert!(f(&m["mbit_s"]) <= link, "{m}");
    // The server's link carries at most its rate over the window: every
    // datagram beyond it was lost, and counted so.
    let carried = LINK_BPS * 1.05 * (window + 0.1) / 8.0 / 1000.0;
    assert!(
        lost >= sent - carried,
        "{sent} sent, {lost} lost: the link carries at most {carried:.0}"
    );
    assert!(
        (f(&m["loss_pct"]) - 100.0 * lost / sent).abs() < 1e-9,
        "{m}"
    );
    let hosts = doc["hosts"].as_array().unwrap();
    assert_eq!(hosts.len(), 3);
    for h in hosts {
        assert!(f(&h["cpu"]["busy_pct"]) > 0.0, "{h}");
        // Its P/E index is of its goodput (the formula, on its figures).
        let hm = &h["metrics"];
        let pe = f(&hm["mbit_s"]) / f(&hm["cpu_pct"]);
        assert!(
            (f(&hm["mbit_s_per_cpu_pct"]) - pe).abs() <= 1e-9 * pe,
            "{h}"
        );
    }
    // The hosts' sent and received goodput add up to the totals (a
    // client's sent is what its server counted; what it handed its
    // sockets is its offered rate).
    let sum = |k: &str| hosts.iter().map(|h| f(&h["metrics"][k])).sum::<f64>();
    for k in ["tx_mbit_s", "mbit_s"] {
        assert!(
            (sum(k) - f(&m["mbit_s"]) * if k == "mbit_s" { 2.0 } else { 1.0 }).abs()
                < 1e-6 * sum(k).max(1.0),
            "{k}: {hosts:?} {m}"
        );
    }
    let offered: f64 = (hosts.iter())
        .filter_map(|h| h["metrics"]["offered_mbit_s"].as_f64())
        .sum();
    assert!(
        (offered - f(&m["offered_mbit_s"])).abs() < 1e-6 * offered,
        "{hosts:?}"
    );
    assert!(f(&m["remote_cpu_pct"]) > 0.0, "{m}");
    println!(
        "udp over 2 pairs into a 50 Mbit/s link: offered {:.1} Mbit/s, goodput {:.1}, loss {:.1} % ({lost} of {sent}), jitter {:.0} us",
        f(&m["offered_mbit_s"]),
        f(&m["mbit_s"]),
        f(&m["loss_pct"]),
        f(&m["jitter_us"]),
    );
}

/// What a UDP or connection-rate test across hosts cannot be is refused
/// when the suite is read, naming the key, before any lab or agent: TLS,
/// a UDP direction other than each pair's client to its server.
#[test]
fn refusals_across_hosts_name_the_key() {
    let Some(lab) = LabSuite::new("udpref", 'b') else {
        return;
    };
    for (extra, what) in [
        ("tls = true", "unknown key"),
        ("dir = \"bidir\"", "swap the pair's hosts"),
    ] {
        let suite = UDP.replace("conns = 2", &format!("conns = 2\n{extra}"));
        let e = lab
            .run(&["server", "c1", "c2"], "", &suite)
            .expect_err("an impossible UDP test ran");
        assert!(e.contains(what), "{extra}: {e}");
    }
    let suite = RATES
        .replace("kind = [\"net-crr\", \"net-cc\"]", "kind = \"net-cc\"")
        .replace("conns = 4", "conns = 4\ntls = true");
    let e = lab
        .run(&["server", "c1", "c2"], "", &suite)
        .expect_err("an impossible connection-rate test ran");
    assert!(e.contains("unknown key"), "{e}");
    assert!(
        !std::path::Path::new(&format!("/run/netns/iotoll-{}-server", lab.name)).exists(),
        "a refused suite brought the lab up"
    );
}

const RATES: &str = r#"
name = "crr-hosts"
reps = 1
[[test]]
name = "rate"
kind = ["net-crr", "net-cc"]
conns = 4
ramp = "1s"
time = "3s"
pairs = [["c1", "server"], ["c2", "server"]]
"#;

/// crr and cc over two pairs into one server (4 clients each): each pair
/// has its rate and percentiles, and by Little's law its 4 clients, one
/// connection at a time each, are its rate times the mean time of one
/// (generous margins: the gap between connections is not timed, and a
/// connection begun before the window is counted in it); both
/// ends agreed (a disagreement fails the test); the totals' rate is the
/// pairs' sum and their p99 lies within the pairs'; every host has its
/// CPU per connection. The cc test's clients close with resets
/// (`linger0`), which the result says.
#[test]
fn crr_and_cc_over_two_pairs_obey_littles_law() {
    let Some(lab) = LabSuite::new("crr", 'b') else {
        return;
    };
    let suite = RATES.replace("kind = [\"net-crr\", \"net-cc\"]", "kind = \"net-crr\"");
    let cc = RATES
        .replace("kind = [\"net-crr\", \"net-cc\"]", "kind = \"net-cc\"")
        .replace("name = \"rate\"", "name = \"cc\"")
        .replace("conns = 4", "conns = 4\nlinger0 = true");
    let suite = format!("{suite}{}", &cc[cc.find("[[test]]").unwrap()..]);
    let run = lab
        .run(&["server", "c1", "c2"], "", &suite)
        .unwrap_or_else(|e| panic!("{e}"));
    for (t, kind, lat) in [(0, "net-crr", "trans"), (1, "net-cc", "connect")] {
        let doc = &run["tests"][t]["reps"][0]["doc"];
        assert_eq!(doc["kind"], kind, "{doc}");
        let m = &doc["metrics"];
        let pairs = doc["pairs"].as_array().unwrap();
        assert_eq!(pairs.len(), 2);
        let mut sum = 0.0;
        let mut p99s = Vec::new();
        for p in pairs {
            let pm = &p["metrics"];
            let (rate, mean_s) = (f(&pm["conn_s"]), f(&pm[&format!("{lat}_mean_us")]) / 1e6);
            assert!(rate > 0.0, "{p}");
            // A connection is counted in the window it ended in: one per
            // client may have begun before it, by at most the longest.
            let busy = rate * mean_s;
            let straddle = f(&pm[&format!("{lat}_max_us")]) / 1e6 / f(&m["window_s"]);
            let most = 4.0 * (1.0 + straddle) * 1.02;
            assert!(
                busy > 0.25 * 4.0 && busy <= most,
                "{kind}: {busy:.2} of 4 clients busy (at most {most:.2}): {p}"
            );
            assert!(f(&pm["connect_p50_us"]) <= f(&pm["connect_p99_us"]), "{p}");
            p99s.push(f(&pm["connect_p99_us"]));
            sum += rate;
            println!("{kind} {}>{}: {rate:.0} conn/s, {busy:.2} of 4 clients busy, connect p99 {:.0} us, failures {}", p["client"].as_str().unwrap(), p["server"].as_str().unwrap(), f(&pm["connect_p99_us"]), f(&pm["failures"]));
        }
        assert!((f(&m["conn_s"]) - sum).abs() <= 1e-9 * sum, "{m}");
        let p99 = f(&m["connect_p99_us"]);
        assert!(
            p99 >= p99s[0].min(p99s[1]) && p99 <= p99s[0].max(p99s[1]),
            "{p99} {p99s:?}"
        );
        for h in doc["hosts"].as_array().unwrap() {
            assert!(f(&h["metrics"]["cpu_us_per_conn"]) > 0.0, "{h}");
            // A client host's connect times are its one pair's.
            let mine = pairs.iter().find(|p| p["client"] == h["name"]);
            let mean = |m: &Value| m["metrics"]["connect_mean_us"].as_f64();
            assert_eq!(mean(h), mine.and_then(mean), "{h}");
        }
        let close = if kind == "net-cc" {
            "with a reset"
        } else {
            "with a FIN"
        };
        assert!(
            doc["notes"].to_string().contains(close),
            "{kind}: {}",
            doc["notes"]
        );
        let linger0 = kind == "net-cc";
        assert_eq!(doc["spec"]["linger0"], linger0, "{kind}: {}", doc["spec"]);
    }
}
