//! Multi-host suites on agents, in labs: the console starts an `iotoll
//! agent` process per lab host. Bytes add up and match the interfaces; a
//! killed agent or a cut link fails its test, names the host, stops the
//! others and lets the suite go on; an idle agent is small; an agent of
//! another version is named with both versions. Needs root; skipped
//! otherwise, failed under CI. Each test has its own state directory and
//! lab name.

mod common;

use common::Tmp;
use serde_json::Value;
use std::io::BufRead;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn unique(tag: &str) -> String {
    common::lab_name(tag, 'a')
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// Ethernet (14) + IPv4 (20) + TCP with timestamps (32): the headers of
/// every packet the interfaces count, data or bare ACK.
const HEADERS: u64 = 66;

/// The payload an interface carried one way: its bytes less every
/// packet's headers.
fn iface_payload(host: &Value, dir: &str) -> u64 {
    let mut n = 0;
    for i in host["ifaces"].as_array().unwrap() {
        let b = i[format!("{dir}_bytes")].as_u64().unwrap();
        let p = i[format!("{dir}_packets")].as_u64().unwrap();
        n += b.saturating_sub(p * HEADERS);
    }
    n
}

/// Socket buffers of the lab's hosts in `sixteen_pairs...`: small, so that
/// what can be queued between a sender's count and a receiver's is a
/// small part of the window's bytes.
const SOCKBUF_MAX: u64 = 262_144;

/// Most payload bytes that can be on their way (counted by one end or
/// interface, not yet by the other) at either edge of a window, for
/// `conns` connections whose buffers are at most [`SOCKBUF_MAX`] through
/// `shaped` tbf queues of quad-100m: each connection's send and receive
/// buffers, each queue's limit (lab::shaping at 100 Mbit/s: a 68,564-byte
/// bucket plus 10 ms at the rate) and every CPU's backlog of received
/// frames (net.core.netdev_max_backlog frames of an MTU each). This is
/// what scheduling can move between two counts; nothing else can.
fn in_flight_bound(conns: u64, shaped: u64) -> f64 {
    let backlog: u64 = std::fs::read_to_string("/proc/sys/net/core/netdev_max_backlog")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(1000);
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    let queue = 68_564 + 100_000_000 / 8 / 100;
    (conns * 2 * SOCKBUF_MAX + shaped * queue + cpus * backlog * 1514) as f64
}

/// The issue's case: 16 pairs over 16 client hosts, bidirectional, on
/// quad-100m. Per-pair and per-host bytes add up to the totals exactly;
/// what one end sent and the other received, and what an engine counted
/// and its interfaces carried, differ by no more than can be in flight
/// (two counts taken at different instants of a busy machine cannot be
/// held to a percentage).
#[test]
fn sixteen_pairs_add_up_and_agree_with_the_interfaces() {
    let Some(d) = Tmp::as_root() else { return };
    let name = unique("16");
    let out = d
        .suite_run(&[
            "bidirectional-transfer-study",
            "--lab",
            "quad-100m",
            "--lab-set",
            &format!("name={name}"),
            "--time",
            "4s",
            "--ramp",
            "1s",
            "--reps",
            "1",
            "--quiet",
            "--lab-set",
            &format!("tcp_rmem=4096 131072 {SOCKBUF_MAX}"),
            "--lab-set",
            &format!("tcp_wmem=4096 131072 {SOCKBUF_MAX}"),
        ])
        .output()
        .unwrap();
    // What failed is stored with the run (`--quiet` prints only the end).
    let stored = || d.last_run_id().map(|r| d.show(&r.to_string()).to_string());
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        stored().unwrap_or_default()
    );
    let run = d.last_run();
    let doc = &run["tests"][0]["reps"][0]["doc"];
    let m = &doc["metrics"];
    let pairs = doc["pairs"].as_array().unwrap();
    let hosts = doc["hosts"].as_array().unwrap();
    assert_eq!(pairs.len(), 16);
    assert_eq!(hosts.len(), 17);
    // Every client host is in exactly one pair, with the server.
    for (k, p) in pairs.iter().enumerate() {
        assert_eq!(p["client"], format!("c{}", k + 1).as_str());
        assert_eq!(p["server"], "server");
        assert!(p["client_to_server_bytes"].as_u64().unwrap() > 0, "{p}");
        assert!(p["server_to_client_bytes"].as_u64().unwrap() > 0, "{p}");
    }
    // Pairs add up to the total.
    let sum: f64 = pairs.iter().map(|p| f(&p["mbit_s"])).sum();
    assert!(
        (sum - f(&m["mbit_s"])).abs() < 1e-6 * sum,
        "{sum} vs {}",
        m["mbit_s"]
    );
    let server = hosts.iter().find(|h| h["name"] == "server").unwrap();
    let clients: Vec<&Value> = hosts.iter().filter(|h| h["role"] == "client").collect();
    assert_eq!(clients.len(), 16);
    bytes_agree(m, pairs, server, &clients);
    adapters_within_their_links(server);
    let show = common::raw()
        .args(["results", "show", "--db", &d.db])
        .arg(run["id"].to_string())
        .output()
        .unwrap();
    let show = String::from_utf8_lossy(&show.stdout);
    assert!(
        show.contains("per host:") && show.contains("per pair:"),
        "{show}"
    );
    assert!(
        show.contains("per adapter") && show.contains("server: adapters "),
        "{show}"
    );
    // One window: the agents opened and closed within a few ms of each
    // other (the benchmark reports the figure; here only a sanity bound
    // for a loaded CI host).
    let skew = &doc["skew_us"];
    assert!(
        f(&skew["start"]) < 50_000.0 && f(&skew["stop"]) < 50_000.0,
        "{skew}"
    );
    // CPU: one kernel, counted once.
    assert_eq!(f(&m["cpus"]), f(&server["cpus"]));
    assert!(
        doc["notes"].to_string().contains("one kernel"),
        "{}",
        doc["notes"]
    );
    seconds_add_up(doc);
}

/// Per-pair and per-host bytes add up to the totals; what one end sent
/// and the other received, and what an engine counted and its interfaces
/// carried, differ by no more than can be in flight.
fn bytes_agree(m: &Value, pairs: &[Value], server: &Value, clients: &[&Value]) {
    // What the server received is every pair's upload; what the clients
    // received is every pair's download (each at its receiver's window).
    let server_rx = f(&server["metrics"]["rx_mbit_s"]);
    let up: f64 = pairs
        .iter()
        .map(|p| p["client_to_server_bytes"].as_u64().unwrap() as f64)
        .sum::<f64>()
        * 8.0
        / f(&server["metrics"]["window_s"])
        / 1e6;
    assert!((server_rx - up).abs() < 1e-6 * up, "{server_rx} vs {up}");
    let clients_rx: f64 = clients.iter().map(|h| f(&h["metrics"]["rx_mbit_s"])).sum();
    assert!((clients_rx - f(&m["rx_mbit_s"])).abs() < 1e-6 * clients_rx);
    assert!((server_rx - f(&m["tx_mbit_s"])).abs() < 1e-6 * server_rx);
    // What the clients sent and the server received differ by no more
    // than the upload's connections and queues can hold. The lab: each of
    // the 20 links is a veth pair shaped at both ends.
    let up_bytes: u64 = pairs
        .iter()
        .map(|p| p["client_to_server_bytes"].as_u64().unwrap())
        .sum();
    let clients_tx_bytes: f64 = clients
        .iter()
        .map(|h| f(&h["metrics"]["tx_mbit_s"]) * 1e6 / 8.0 * f(&h["metrics"]["window_s"]))
        .sum();
    let upload = in_flight_bound(16, 40);
    assert!(
        (clients_tx_bytes - up_bytes as f64).abs() <= upload,
        "{clients_tx_bytes} bytes sent, {up_bytes} received, more apart than {upload} in flight"
    );
    // The interfaces: received payload (bytes less headers) differs from
    // what the engine read by no more than the host's receive side holds.
    let check = |h: &Value, payload: f64, conns: u64| {
        let wire = iface_payload(h, "rx") as f64;
        let bound = in_flight_bound(conns, 0);
        assert!(
            (wire - payload).abs() <= bound,
            "host {}: interfaces carried {wire} payload bytes in, the engine counted {payload} (more apart than {bound} in flight)",
            h["name"]
        );
    };
    check(server, up_bytes as f64, 16);
    for (k, c) in clients.iter().enumerate() {
        check(
            c,
            pairs[k]["server_to_client_bytes"].as_u64().unwrap() as f64,
            1,
        );
    }
}

/// The server's adapters each carried traffic at no more than its link.
fn adapters_within_their_links(server: &Value) {
    // issue 23 §6: the server's four adapters, each with its rates over
    // the server's window (its counters' bytes x 8 / window), each
    // carrying traffic (address k uses adapter k), none beyond its shaped
    // 100 Mbit/s by more than its queue (a bucket and 10 ms at the rate)
    // can let through, and together what the server's interfaces carried.
    let sw = f(&server["cpu"]["window_s"]);
    let adapters: Vec<&Value> = (server["ifaces"].as_array().unwrap().iter())
        .filter(|i| i["rx_bytes"].as_u64().unwrap() > 0)
        .collect();
    assert_eq!(adapters.len(), 4, "{}", server["ifaces"]);
    let queue = (68_564 + 100_000_000 / 8 / 100) as f64;
    for a in &adapters {
        for dir in ["rx", "tx"] {
            let bytes = a[format!("{dir}_bytes")].as_u64().unwrap() as f64;
            let rate = f(&a[format!("{dir}_mbit_s")]);
            assert!(
                (rate - bytes * 8.0 / sw / 1e6).abs() <= 1e-9 * rate.max(1.0),
                "{a}"
            );
            assert!(bytes > 0.0, "{a}");
            assert!(bytes <= 100e6 / 8.0 * sw + queue, "{a}: beyond its link");
        }
    }
}

/// The window's seconds add up to its goodput and never exceed the links.
fn seconds_add_up(doc: &Value) {
    let m = &doc["metrics"];
    // Second by second (there was no series: the report said the 4 s
    // window was "shorter than a second"): the hosts' received bytes added
    // up, never more than the server's four 100 Mbit/s links carry both ways,
    // and the window's seconds add up to its goodput.
    let series = doc["series"].as_array().unwrap();
    let (mut prev, mut bytes) = (0.0, 0.0);
    for p in series {
        let (t, mbit) = (f(&p["t_s"]), f(&p["mbit_s"]));
        if p["phase"] == "measure" {
            assert!(
                mbit <= 2.0 * 400.0 * 1.02,
                "{mbit} Mbit/s at {t} s: {series:?}"
            );
            bytes += mbit * 1e6 / 8.0 * (t - prev);
        }
        prev = t;
    }
    let window_bytes = f(&m["mbit_s"]) * 1e6 / 8.0 * f(&m["window_s"]);
    // The seconds count bytes as they reach the receiving host's TCP (so
    // no second runs above the links' rate when a starved receiver reads
    // late); goodput counts what the receivers read. They differ by what
    // the receive queues held at the two edges, at most one receive buffer
    // a connection; on a machine whose receivers keep up, under 1 %.
    let queued = f(&m["conns"]) * SOCKBUF_MAX as f64;
    assert!(
        (bytes - window_bytes).abs() <= 0.01 * window_bytes + queued,
        "the seconds add up to {bytes} B, the window's goodput is {window_bytes} B (receive queues hold at most {queued} B): {series:?}"
    );
}

/// A small lab: a server and three clients on one unshaped switch.
fn trio(d: &Tmp, name: &str) -> String {
    d.file(
        "trio.toml",
        format!(
            "name = \"{name}\"\n[[host]]\nname = \"server\"\n[[host]]\nname = \"c1\"\n[[host]]\nname = \"c2\"\n[[host]]\nname = \"c3\"\n"
        ),
    )
}

/// Test `a` loads the server from c1 and c2 for 8 s; test `b` is a disk
/// test on c1 alone, so nothing loads the server after `a`, and it lasts
/// long enough (6 s) that the lab is still up when the server's counters
/// are read after `a` was stopped.
const TWO_TESTS: &str = r#"
name = "kill"
reps = 1
[[test]]
name = "a"
kind = "net-stream"
dir = "bidir"
conns = 2
ramp = "1s"
time = "8s"
pairs = [["c1", "server"], ["c2", "server"]]

[[test]]
name = "b"
kind = "disk"
bs = "4k"
read = 100
random = 100
size = "8m"
ramp = "0s"
time = "6s"
on = ["c1"]
"#;

/// A running suite's stderr, line by line, with when each line came.
struct Lines(Arc<Mutex<Vec<(Instant, String)>>>);

impl Lines {
    fn follow(child: &mut std::process::Child) -> Lines {
        let lines = Arc::new(Mutex::new(Vec::new()));
        let l = lines.clone();
        let err = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(err).lines().map_while(Result::ok) {
                l.lock().unwrap().push((Instant::now(), line));
            }
        });
        Lines(lines)
    }

    /// When a line containing `s` came, waiting up to `t` for it.
    fn wait_for(&self, s: &str, t: Duration) -> Option<Instant> {
        let end = Instant::now() + t;
        while Instant::now() < end {
            if let Some((at, _)) = self.0.lock().unwrap().iter().find(|(_, l)| l.contains(s)) {
                return Some(*at);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    fn text(&self) -> String {
        let v = self.0.lock().unwrap();
        v.iter()
            .map(|(_, l)| l.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Starts `suite run` of [`TWO_TESTS`] in `lab` and returns 3 s into test
/// `a` (its window has opened).
fn two_tests(d: &Tmp, lab: &str, more: &[&str]) -> (std::process::Child, Lines) {
    let suite = d.file("two.toml", TWO_TESTS);
    let mut child = d
        .suite_run(&[&[suite.as_str(), "--lab", lab][..], more].concat())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = Lines::follow(&mut child);
    let started = lines.wait_for("[1/2] a", Duration::from_secs(60));
    assert!(started.is_some(), "test a never started:\n{}", lines.text());
    std::thread::sleep(Duration::from_secs(3));
    (child, lines)
}

/// The pid of the `iotoll agent` in a lab host's namespace.
fn agent_pid(lab: &str, host: &str) -> i32 {
    let out = std::process::Command::new("ip")
        .args(["netns", "pids", &format!("iotoll-{lab}-{host}")])
        .output()
        .unwrap();
    let pids: Vec<i32> = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect();
    let agent = pids.iter().copied().find(|p| {
        std::fs::read_to_string(format!("/proc/{p}/cmdline"))
            .is_ok_and(|c| c.split('\0').any(|w| w == "agent"))
    });
    agent.unwrap_or_else(|| panic!("no agent in {lab}/{host}: {pids:?}"))
}

/// The server host's bytes sent so far, per interface (lo left out);
/// None when its namespace is gone (the lab was taken down).
fn server_tx(lab: &str) -> Option<std::collections::BTreeMap<String, u64>> {
    let ns = format!("iotoll-{lab}-server");
    if !std::path::Path::new("/run/netns").join(&ns).exists() {
        return None;
    }
    let out = std::process::Command::new("ip")
        .args(["netns", "exec", &ns, "cat", "/proc/net/dev"])
        .output()
        .unwrap();
    if !out.status.success() && !std::path::Path::new("/run/netns").join(&ns).exists() {
        return None;
    }
    assert!(
        out.status.success(),
        "reading the server's counters: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.split_once(':'))
            .filter(|(n, _)| n.trim() != "lo")
            .filter_map(|(n, r)| {
                Some((
                    n.trim().to_string(),
                    r.split_whitespace().nth(8)?.parse().ok()?,
                ))
            })
            .collect(),
    )
}

/// Bytes the server sent between two readings, over the interfaces in
/// both (a link cut in between takes its interface and its counter away).
fn sent_between(
    a: &std::collections::BTreeMap<String, u64>,
    b: &std::collections::BTreeMap<String, u64>,
) -> u64 {
    b.iter()
        .filter_map(|(n, after)| Some(after.saturating_sub(*a.get(n)?)))
        .sum()
}

/// Runs the two tests; `cut` acts on the lab 3 s into test `a` (its window
/// has opened) and returns what it did; then checks what the console did.
fn host_failure(tag: &str, cut: impl FnOnce(&str) -> &'static str, within: Duration) {
    host_failure_then(tag, cut, within, false)
}

/// [`host_failure`]; with `stop`, `--on-host-failure stop`: the run ends
/// with test `a`.
fn host_failure_then(
    tag: &str,
    cut: impl FnOnce(&str) -> &'static str,
    within: Duration,
    stop: bool,
) {
    let Some(d) = Tmp::as_root() else { return };
    let name = unique(tag);
    let lab = trio(&d, &name);
    let policy = if stop { "stop" } else { "continue" };
    let (mut child, lines) = two_tests(&d, &lab, &["--on-host-failure", policy]);
    let what = cut(&name);
    let t_cut = Instant::now();
    let lost = lines.wait_for("was lost", Duration::from_secs(10));
    let Some(lost) = lost else {
        let _ = child.kill();
        panic!(
            "{what}: the console never said a host was lost:\n{}",
            lines.text()
        );
    };
    let took = lost.saturating_duration_since(t_cut);
    assert!(
        took <= within,
        "{what}: lost after {took:?}:\n{}",
        lines.text()
    );
    // A killed agent's connection closes at once: the console says so,
    // not that its heartbeat went silent (which takes link::LOST_AFTER).
    if what.starts_with("kill -9") {
        assert!(
            lines.text().contains("closed by peer"),
            "{what}: not seen as a closed connection:\n{}",
            lines.text()
        );
    }
    // The other agents stopped their load within 2 s of the loss: the
    // server's interfaces carry almost nothing more (heartbeats only).
    let wait = (t_cut + within + Duration::from_secs(2)).saturating_duration_since(Instant::now());
    std::thread::sleep(wait);
    let (a, t_a) = (server_tx(&name), Instant::now());
    std::thread::sleep(Duration::from_secs(1));
    match (a, server_tx(&name)) {
        (Some(a), Some(b)) => {
            let b = sent_between(&a, &b);
            assert!(
                b < 200_000,
                "{what}: the server still sent {b} bytes in {:?} after the test was stopped",
                t_a.elapsed()
            );
        }
        // With --on-host-failure stop the run ends at the loss and takes
        // its lab down: nothing is left to send.
        _ if stop => {}
        _ => panic!(
            "{what}: the lab went down while test b should have been running:\n{}",
            lines.text()
        ),
    }
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(1), "{}", lines.text());
    let text = lines.text();
    assert!(text.contains("host c2 was lost during the test"), "{text}");
    let run = d.last_run();
    let tests = run["tests"].as_array().unwrap();
    if stop {
        assert_eq!(tests.len(), 1, "--on-host-failure stop ran on: {run}");
        assert!(
            run["notes"].to_string().contains("--on-host-failure stop"),
            "{run}"
        );
        return;
    }
    // The suite went on: test b ran and completed.
    assert_eq!(tests.len(), 2, "{run}");
    assert_eq!(
        tests[0]["reps"].as_array().map_or(0, |r| r.len()),
        0,
        "a is invalid"
    );
    let b = &tests[1]["reps"][0]["doc"];
    assert_eq!(b["status"], "complete", "{b}");
    assert!(f(&b["metrics"]["iops"]) > 0.0);
    assert_eq!(b["hosts"][0]["name"], "c1");
}

#[test]
fn a_killed_agent_fails_its_test_and_the_suite_goes_on() {
    host_failure(
        "kill",
        |lab| {
            let pid = agent_pid(lab, "c2");
            // SAFETY: kill(2) on the agent this run started in the lab.
            assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
            "kill -9 of c2's agent"
        },
        // A killed process's connection closes at once (seen as such,
        // above); a loaded machine may take a moment to say so.
        Duration::from_secs(2),
    );
}

#[test]
fn on_host_failure_stop_ends_the_run_at_the_lost_host() {
    host_failure_then(
        "stop",
        |lab| {
            let pid = agent_pid(lab, "c2");
            // SAFETY: kill(2) on the agent this run started in the lab.
            assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
            "kill -9 of c2's agent"
        },
        Duration::from_secs(2),
        true,
    );
}

#[test]
fn a_cut_link_is_detected_within_3_s() {
    host_failure(
        "cut",
        |lab| {
            let ns = format!("iotoll-{lab}-c2");
            let out = std::process::Command::new("ip")
                .args(["-n", &ns, "-o", "link", "show"])
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout).to_string();
            let dev = text
                .lines()
                .filter_map(|l| l.split(": ").nth(1))
                .map(|n| n.split('@').next().unwrap_or(n).to_string())
                .find(|n| n != "lo")
                .unwrap_or_else(|| panic!("no link in {ns}: {text}"));
            let st = std::process::Command::new("ip")
                .args(["-n", &ns, "link", "set", &dev, "down"])
                .status()
                .unwrap();
            assert!(st.success());
            "c2's link set down"
        },
        Duration::from_secs(3),
    );
}

/// An agent of another version is named, with both versions, before any
/// test runs; an idle agent stays under 16 MiB.
#[test]
#[cfg_attr(
    not(feature = "test-hooks"),
    ignore = "needs the test-hooks feature: run ./test.sh"
)]
fn an_incompatible_agent_is_named_and_an_idle_one_is_small() {
    let Some(d) = Tmp::as_root() else { return };
    let key = d.file("k", "incompatible-agent-key-0123\n");
    common::owner_only(&key);
    let mut agent = common::raw()
        .args(["agent", "--listen", "127.0.0.1:0", "--auth-key", &key])
        .env("IOTOLL_TEST_AGENT_VERSION", "0.0.9")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(agent.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("iotoll agent listening on ")
        .unwrap()
        .to_string();
    std::thread::sleep(Duration::from_millis(500));
    let rss_kib: u64 = std::fs::read_to_string(format!("/proc/{}/status", agent.id()))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap();
    assert!(rss_kib < 16 * 1024, "idle agent RSS {rss_kib} KiB");
    let hosts = d.file("hosts.toml", format!("[hosts]\nh1 = \"{addr}\"\n"));
    let suite = d.file(
        "one.toml",
        "name = \"one\"\n[[test]]\nname = \"d\"\nkind = \"disk\"\ntime = \"1s\"\non = [\"h1\"]\n",
    );
    let out = d
        .suite_run(&[&suite, "--hosts", &hosts, "--auth-key", &key])
        .output()
        .unwrap();
    let _ = agent.kill();
    let _ = agent.wait();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("host h1") && err.contains("0.0.9"), "{err}");
    assert!(err.contains(env!("CARGO_PKG_VERSION")), "{err}");
}

/// Ctrl-C at the console stops every agent's load within 2 s; the run is
/// stored as aborted (exit 130). The lab is up before the run, so it stays
/// up to be looked at.
#[test]
fn ctrl_c_at_the_console_stops_every_agent_within_2_s() {
    let Some(d) = Tmp::as_root() else { return };
    let name = unique("int");
    let lab = trio(&d, &name);
    let up = common::raw()
        .env("IOTOLL_LAB_DIR", d.dir.path())
        .args(["lab", "up", &lab])
        .output()
        .unwrap();
    assert!(
        up.status.success(),
        "{}",
        String::from_utf8_lossy(&up.stderr)
    );
    let (mut child, lines) = two_tests(&d, &name, &[]);
    // Load flows before it is stopped: waited for, however slowly it comes.
    let moving = server_tx(&name).expect("the lab is up");
    assert!(
        common::within(Duration::from_secs(60), || {
            server_tx(&name).is_some_and(|now| sent_between(&moving, &now) > 1_000_000)
        }),
        "no load to stop"
    ); // SAFETY: kill(2) on the child this test started.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    std::thread::sleep(Duration::from_secs(2));
    let a = server_tx(&name);
    std::thread::sleep(Duration::from_secs(1));
    // The lab was up before the run, so the run leaves it up.
    let up = "the lab stays up";
    let b = sent_between(&a.expect(up), &server_tx(&name).expect(up));
    let status = child.wait().unwrap();
    let down = common::raw()
        .env("IOTOLL_LAB_DIR", d.dir.path())
        .args(["lab", "down", &name])
        .output()
        .unwrap();
    assert!(
        b < 200_000,
        "the server still sent {b} bytes 2-3 s after Ctrl-C"
    );
    assert_eq!(status.code(), Some(130), "{}", lines.text());
    assert!(
        down.status.success(),
        "{}",
        String::from_utf8_lossy(&down.stderr)
    );
}

/// One agent serving 10,000 connections stays within the endpoint's
/// figures (BENCHMARKS.md, 10,000 connections of 64 KiB: the endpoint's
/// peak RSS, target <= 128 MiB): measured side by side with `net serve` of
/// the same build, the agent's peak is at most 4 MiB above it.
#[test]
fn an_agent_serving_10000_connections_stays_within_the_endpoint() {
    let Some(d) = Tmp::as_root() else { return };
    let key = d.file("k", "ten-thousand-agent-key-0123\n");
    common::owner_only(&key);
    let peak = |cmd: &[&str]| -> u64 {
        let mut server = common::raw()
            .args(cmd)
            .args(["--listen", "127.0.0.1:0", "--auth-key", &key])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The agent says where it listens on stdout, the endpoint on stderr.
        let (tx, rx) = std::sync::mpsc::channel();
        for out in [
            Box::new(server.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
            Box::new(server.stderr.take().unwrap()),
        ] {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for l in std::io::BufReader::new(out).lines().map_while(Result::ok) {
                    if let Some(a) = l.split("listening on ").nth(1) {
                        let _ = tx.send(a.split_whitespace().next().unwrap_or("").to_string());
                    }
                }
            });
        }
        let addr = rx.recv_timeout(Duration::from_secs(10)).expect("listening");
        let out = common::raw()
            .args([
                "net",
                "stream",
                &addr,
                "--conns",
                "10000",
                "--msg",
                "64k",
                "--ramp",
                "0s",
                "--time",
                "2s",
                "--auth-key",
                &key,
                "--no-db",
                "--json",
                "--quiet",
            ])
            .output()
            .unwrap();
        let hwm_kib: u64 = std::fs::read_to_string(format!("/proc/{}/status", server.id()))
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap();
        let _ = server.kill();
        let _ = server.wait();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(f(&doc["metrics"]["conns"]), 10_000.0);
        assert!(f(&doc["metrics"]["mbit_s"]) > 0.0);
        hwm_kib
    };
    let endpoint = peak(&["net", "serve"]);
    let agent = peak(&["agent"]);
    eprintln!("peak RSS with 10,000 connections: endpoint {endpoint} KiB, agent {agent} KiB");
    assert!(
        agent <= endpoint + 4096,
        "agent {agent} KiB, endpoint {endpoint} KiB"
    );
    assert!(agent < 128 * 1024);
}

/// issue 24: allowed targets are pinned when the agent starts; one that
/// cannot be (its directory is missing) refuses the start, named, instead
/// of being resolved by name later.
#[test]
fn an_allowed_target_that_cannot_be_pinned_refuses_the_agent() {
    let mut agent = common::raw()
        .args(["agent", "--listen", "127.0.0.1:0"])
        .args(["--allow-target", "/nonexistent-iotoll-dir/x.tst:rw"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(st) = agent.try_wait().unwrap() {
            break st;
        }
        if Instant::now() > deadline {
            let _ = agent.kill();
            let _ = agent.wait();
            panic!("the agent started");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut agent.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(2), "{err}");
    assert!(
        err.contains("/nonexistent-iotoll-dir") && err.contains("does not exist"),
        "{err}"
    );
}
