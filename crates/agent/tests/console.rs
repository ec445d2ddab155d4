//! The console against in-process agents on loopback.

mod common;

use common::{agent, disk_order, endpoint, host, key, rate, rr, stream, udp};
use iotoll_agent::console::{Console, ConsoleError, DiskTest, NetTest};
use iotoll_agent::wire::AllowedTarget;
use iotoll_net::auth::Key;
use std::net::TcpListener;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

#[test]
fn pairs_add_up_and_windows_align() {
    let srv = agent(vec![]);
    let (c1, c2) = (agent(vec![]), agent(vec![]));
    let mut console = Console::connect(
        vec![host("srv", srv), host("c1", c1), host("c2", c2)],
        Some(key()),
    )
    .unwrap();
    let t = NetTest {
        pairs: vec![
            ("c1".into(), "srv".into()),
            ("c2".into(), "srv".into()),
            ("c1".into(), "srv".into()),
        ],
        params: stream(2),
        threads: None,
        config: None,
    };
    let stop = AtomicBool::new(false);
    let doc = console.run_net(&t, &stop).unwrap();
    assert_eq!(doc.pairs.len(), 3);
    assert_eq!(doc.hosts.len(), 3);
    let m = &doc.metrics;
    // Every pair moved data both ways; the pairs add up to the total.
    for p in &doc.pairs {
        assert!(
            p.client_to_server_bytes > 0 && p.server_to_client_bytes > 0,
            "{p:?}"
        );
        assert_eq!(p.conns, 4);
    }
    let sum: f64 = doc.pairs.iter().map(|p| p.mbit_s).sum();
    assert!((sum - m["mbit_s"]).abs() < 1e-9 * sum.max(1.0));
    // The server's bytes are every pair's; the clients' add up to it.
    let srv_row = doc.hosts.iter().find(|h| h.name == "srv").unwrap();
    assert_eq!(srv_row.role, "server");
    let c2s: u64 = doc.pairs.iter().map(|p| p.client_to_server_bytes).sum();
    let s2c: u64 = doc.pairs.iter().map(|p| p.server_to_client_bytes).sum();
    assert!(c2s > 0 && s2c > 0);
    let skew = doc.skew_us.as_ref().unwrap();
    assert!(skew.start >= 0.0 && skew.stop >= 0.0);
    assert!(m["cpu_pct"] > 0.0 && m["remote_cpu_pct"] > 0.0, "{m:?}");
    assert_eq!(m["pairs"], 3.0);
    // One kernel: all hosts share a boot id.
    assert_eq!(doc.cpu.same_host, Some(true));
    // The engine threads each host ran (these agents were started with
    // one: the rule for none is net's `threads_for`), said per host; the
    // spec has the most any host ran.
    let note = (doc.notes.iter())
        .find_map(|n| n.strip_prefix("engine threads: "))
        .unwrap_or_else(|| panic!("no threads note: {:?}", doc.notes));
    assert_eq!(note, "1 on srv, c1, c2");
    assert_eq!(doc.spec.net().map(|n| n.threads), Some(1));
    // The next test reuses the sessions.
    let doc2 = console.run_net(&t, &stop).unwrap();
    assert_eq!(doc2.pairs.len(), 3);
}

/// UDP over two pairs at 20 Mbit/s each (c1 serves one and is the client
/// of the other): each pair's counts add up (sent = received + lost), the
/// totals are the pairs', no pair offered more than its rate, and both
/// ends' CPU is there.
#[test]
fn udp_pairs_count_their_loss_and_add_up() {
    let (srv, c1) = (agent(vec![]), agent(vec![]));
    let mut console =
        Console::connect(vec![host("srv", srv), host("c1", c1)], Some(key())).unwrap();
    let rate = 20_000_000;
    let t = NetTest {
        pairs: vec![("c1".into(), "srv".into()), ("srv".into(), "c1".into())],
        params: udp(2, rate),
        threads: None,
        config: None,
    };
    let stop = AtomicBool::new(false);
    let doc = console.run_net(&t, &stop).unwrap();
    assert_eq!(doc.kind, iotoll_model::Kind::NetUdp);
    let m = &doc.metrics;
    let (mut sent, mut got, mut lost, mut goodput) = (0.0, 0.0, 0.0, 0.0);
    for p in &doc.pairs {
        let pm = &p.metrics;
        assert!(pm["datagrams_received"] > 0.0, "{p:?}");
        assert_eq!(
            pm["datagrams_sent"],
            pm["datagrams_received"] + pm["datagrams_lost"],
            "{p:?}"
        );
        // The pacer holds the rate; its credit is 100 ms of it.
        let most = rate as f64 / 1e6 * (1.0 + 0.2 / pm_window(&doc));
        assert!(pm["offered_mbit_s"] <= most, "{p:?}");
        assert!(pm["mbit_s"] <= pm["offered_mbit_s"] + 1e-9, "{p:?}");
        assert_eq!(p.mbit_s, pm["mbit_s"]);
        assert_eq!(p.conns, 2);
        sent += pm["datagrams_sent"];
        got += pm["datagrams_received"];
        lost += pm["datagrams_lost"];
        goodput += pm["mbit_s"];
    }
    assert_eq!(m["datagrams_sent"], sent);
    assert_eq!(m["datagrams_received"], got);
    assert_eq!(m["datagrams_lost"], lost);
    assert!((m["mbit_s"] - goodput).abs() < 1e-9 * goodput);
    assert!((m["loss_pct"] - 100.0 * lost / sent).abs() < 1e-9);
    for h in &doc.hosts {
        assert_eq!(h.role, "client+server");
        assert!(h.cpu.as_ref().is_some_and(|c| c.busy_pct > 0.0), "{h:?}");
    }
    assert_eq!(doc.spec.udp().and_then(|u| u.rate), Some(rate));
    assert!(doc
        .notes
        .iter()
        .any(|n| n.contains("lost = sent - received")));
}

/// The window a test's hosts measured, mean, seconds.
fn pm_window(doc: &iotoll_model::ResultDoc) -> f64 {
    doc.metrics["window_s"]
}

/// What the agents would refuse of a UDP test is refused before any of
/// them is asked: another direction than client to server, TLS.
#[test]
fn udp_tests_agents_cannot_run_are_refused_first() {
    let (srv, c1) = (agent(vec![]), agent(vec![]));
    let mut console =
        Console::connect(vec![host("srv", srv), host("c1", c1)], Some(key())).unwrap();
    let stop = AtomicBool::new(false);
    for (params, what) in [
        (
            iotoll_net::proto::TestParams {
                dir: iotoll_net::Dir::Bidir,
                ..udp(1, 1_000_000)
            },
            "swap the pair's hosts",
        ),
        (
            iotoll_net::proto::TestParams {
                tls: Some("aes-128-gcm".into()),
                ..udp(1, 1_000_000)
            },
            "tls applies to TCP",
        ),
    ] {
        let t = NetTest {
            pairs: vec![("c1".into(), "srv".into())],
            params,
            threads: None,
            config: None,
        };
        match console.run_net(&t, &stop) {
            Err(ConsoleError::Invalid(m)) => assert!(m.contains(what), "{m}"),
            other => panic!("{:?}", other.map(|d| d.metrics)),
        }
    }
}

/// crr and cc over two pairs into one server: each pair's rate and
/// connect (and transaction) percentiles, Little's law per pair (its
/// clients, each one connection at a time, are its rate times the mean
/// time of one), both ends agreeing (else the test fails), the totals'
/// rates added up and percentiles within the pairs', CPU per connection
/// per host.
#[test]
fn connection_rates_across_hosts_have_per_pair_figures() {
    use iotoll_net::proto::TestKind;
    let srv = agent(vec![]);
    let (c1, c2) = (agent(vec![]), agent(vec![]));
    let hosts = vec![host("srv", srv), host("c1", c1), host("c2", c2)];
    let mut console = Console::connect(hosts, Some(key())).unwrap();
    let stop = AtomicBool::new(false);
    for (kind, lat) in [(TestKind::Crr, "trans"), (TestKind::Cc, "connect")] {
        let t = NetTest {
            pairs: vec![("c1".into(), "srv".into()), ("c2".into(), "srv".into())],
            params: rate(kind, 2),
            threads: None,
            config: None,
        };
        let doc = console.run_net(&t, &stop).unwrap();
        let m = &doc.metrics;
        let mut sum = 0.0;
        for p in &doc.pairs {
            let pm = &p.metrics;
            let (conn_s, mean_s) = (pm["conn_s"], pm[&format!("{lat}_mean_us")] / 1e6);
            assert!(conn_s > 0.0 && p.transactions.unwrap() > 0, "{p:?}");
            // Little's law: 2 clients busy all the time, with the gap
            // between one connection and the next outside the measured time.
            // Counted in the window it ended in: one per client may have
            // begun before it, by at most the longest.
            let busy = conn_s * mean_s;
            let straddle = pm[&format!("{lat}_max_us")] / 1e6 / m["window_s"];
            assert!(
                busy > 0.3 && busy <= 2.0 * (1.0 + straddle) * 1.02,
                "{kind:?}: {busy} clients busy: {pm:?}"
            );
            println!(
                "{kind:?} pair {}>{}: {conn_s:.0}/s, {busy:.2} clients busy",
                p.client, p.server
            );
            assert!(pm["connect_p50_us"] <= pm["connect_p99_us"]);
            // A loaded host may time a connection out: named, and counted.
            let causes: f64 = (pm.iter())
                .filter(|(k, _)| k.starts_with("failures_"))
                .map(|(_, v)| v)
                .sum();
            assert_eq!(pm["failures"], causes, "{pm:?}");
            sum += conn_s;
        }
        assert!((m["conn_s"] - sum).abs() <= 1e-9 * sum, "{m:?}");
        let p99s: Vec<f64> = doc
            .pairs
            .iter()
            .map(|p| p.metrics["connect_p99_us"])
            .collect();
        let p99 = m["connect_p99_us"];
        assert!(
            p99 >= p99s[0].min(p99s[1]) && p99 <= p99s[0].max(p99s[1]),
            "{p99} {p99s:?}"
        );
        for h in &doc.hosts {
            assert!(h.metrics["cpu_us_per_conn"] > 0.0, "{h:?}");
        }
        let want = if kind == TestKind::Crr {
            iotoll_model::Kind::NetCrr
        } else {
            iotoll_model::Kind::NetCc
        };
        assert_eq!(doc.kind, want);
        assert_eq!(
            m.contains_key("trans_p99_us"),
            kind == TestKind::Crr,
            "{m:?}"
        );
    }
}

/// A connection-rate test where each host serves one pair and is the
/// client of the other: both pairs ran, each host in both roles.
#[test]
fn a_host_serves_and_connects_in_one_rate_test() {
    let (a, b) = (agent(vec![]), agent(vec![]));
    let mut console = Console::connect(vec![host("a", a), host("b", b)], Some(key())).unwrap();
    let t = NetTest {
        pairs: vec![("a".into(), "b".into()), ("b".into(), "a".into())],
        params: rate(iotoll_net::proto::TestKind::Cc, 1),
        threads: None,
        config: None,
    };
    let doc = console.run_net(&t, &AtomicBool::new(false)).unwrap();
    // Its workers run at the lowest priority: beside other load a pair may
    // complete no connection in a one-second window, and the hosts' CPU
    // then says the test was interfered with.
    let interfered = doc.hosts.iter().any(|h| {
        let i = h.cpu.as_ref().and_then(|c| c.interference.as_ref());
        i.is_some_and(|i| i.interfered)
    });
    for p in &doc.pairs {
        let n = p.metrics["conn_s"];
        assert!(n > 0.0 || (n == 0.0 && interfered), "{p:?} {:?}", doc.hosts);
    }
    for h in &doc.hosts {
        assert_eq!(h.role, "client+server");
    }
}

/// Request/response over three pairs (two from c1): each pair's
/// transactions and percentiles, the totals' added up and merged.
#[test]
fn rr_pairs_have_their_percentiles_and_the_totals_are_merged() {
    let srv = agent(vec![]);
    let (c1, c2) = (agent(vec![]), agent(vec![]));
    let hosts = vec![host("srv", srv), host("c1", c1), host("c2", c2)];
    let mut console = Console::connect(hosts, Some(key())).unwrap();
    let t = NetTest {
        pairs: vec![
            ("c1".into(), "srv".into()),
            ("c2".into(), "srv".into()),
            ("c1".into(), "srv".into()),
        ],
        params: rr(2),
        threads: None,
        config: None,
    };
    let doc = console.run_net(&t, &AtomicBool::new(false)).unwrap();
    assert_eq!(doc.kind, iotoll_model::Kind::NetRr);
    assert!(matches!(doc.spec, iotoll_model::spec::Spec::Rr(_)));
    let m = &doc.metrics;
    let mut trans = 0;
    for p in &doc.pairs {
        let n = p.transactions.unwrap_or_else(|| panic!("{p:?}"));
        assert!(n > 0, "{p:?}");
        trans += n;
        for k in [
            "trans_s",
            "rtt_p50_us",
            "rtt_p90_us",
            "rtt_p99_us",
            "rtt_p999_us",
        ] {
            assert!(p.metrics.get(k).is_some_and(|v| *v > 0.0), "{k}: {p:?}");
        }
        let pm = &p.metrics;
        assert!(pm["rtt_p50_us"] <= pm["rtt_p99_us"] && pm["rtt_p99_us"] <= pm["rtt_p999_us"]);
    }
    let sum: f64 = doc.pairs.iter().map(|p| p.metrics["trans_s"]).sum();
    assert!((sum - m["trans_s"]).abs() < 1e-9 * sum, "{sum} {m:?}");
    assert!(trans > 0);
    // Merged, the totals' percentiles lie within the pairs'.
    for k in ["rtt_p50_us", "rtt_p99_us"] {
        let each = doc.pairs.iter().map(|p| p.metrics[k]);
        let (lo, hi) = each.fold((f64::MAX, 0.0f64), |(a, b), v| (a.min(v), b.max(v)));
        assert!(
            m[k] >= lo && m[k] <= hi,
            "{k}: {} not in [{lo}, {hi}]",
            m[k]
        );
    }
    assert!(m["cpu_pct"] > 0.0 && m["remote_cpu_pct"] > 0.0, "{m:?}");
    assert!(m["cpu_us_per_trans"] > 0.0, "{m:?}");
}

/// A ring (a serves c, is the client of b, ...): every host is a client
/// in one pair and the server of another, in one test, stream and rr.
#[test]
fn a_host_is_client_and_server_at_once() {
    let (a, b, c) = (agent(vec![]), agent(vec![]), agent(vec![]));
    let hosts = vec![host("a", a), host("b", b), host("c", c)];
    let mut console = Console::connect(hosts, Some(key())).unwrap();
    for params in [stream(1), rr(1)] {
        let t = NetTest {
            pairs: vec![
                ("a".into(), "b".into()),
                ("b".into(), "c".into()),
                ("c".into(), "a".into()),
            ],
            params,
            threads: None,
            config: None,
        };
        let doc = console.run_net(&t, &AtomicBool::new(false)).unwrap();
        assert_eq!(doc.hosts.len(), 3);
        for h in &doc.hosts {
            assert_eq!(h.role, "client+server", "{}", h.name);
        }
        for p in &doc.pairs {
            assert!(
                p.client_to_server_bytes > 0 && p.server_to_client_bytes > 0,
                "{p:?}"
            );
            if doc.kind == iotoll_model::Kind::NetRr {
                assert!(p.transactions.is_some_and(|n| n > 0), "{p:?}");
                assert!(p.metrics["rtt_p99_us"] > 0.0, "{p:?}");
            }
        }
        let m = &doc.metrics;
        assert!(m["cpu_pct"] > 0.0 && m["remote_cpu_pct"] > 0.0, "{m:?}");
    }
}

/// TLS on the data connections across agents, a host in two roles among
/// them: each client pins the certificate its server sent the console.
#[test]
fn tls_across_agents_pins_the_servers_certificate() {
    let (a, b, c) = (agent(vec![]), agent(vec![]), agent(vec![]));
    let hosts = vec![host("a", a), host("b", b), host("c", c)];
    let mut console = Console::connect(hosts, Some(key())).unwrap();
    for params in [stream(1), rr(1)] {
        let t = NetTest {
            pairs: vec![("a".into(), "b".into()), ("b".into(), "c".into())],
            params: iotoll_net::proto::TestParams {
                tls: Some("aes-128-gcm".into()),
                ..params
            },
            threads: None,
            config: None,
        };
        let doc = console.run_net(&t, &AtomicBool::new(false)).unwrap();
        assert_eq!(
            doc.spec.net().and_then(|n| n.tls.as_deref()),
            Some("aes-128-gcm")
        );
        for p in &doc.pairs {
            assert!(
                p.client_to_server_bytes > 0 && p.server_to_client_bytes > 0,
                "{p:?}"
            );
        }
    }
}

#[test]
fn wrong_key_and_unreachable_are_named() {
    let a = agent(vec![]);
    let r = Console::connect(
        vec![host("h1", a)],
        Some(Key::from_bytes(b"another-key-0123456789")),
    );
    let e = r.err().unwrap();
    assert!(
        matches!(&e, ConsoleError::Host { host, .. } if host == "h1"),
        "{e}"
    );
    // No key at all against a keyed agent.
    let e = Console::connect(vec![host("h1", a)], None).err().unwrap();
    assert!(
        e.to_string().contains("h1") && e.to_string().contains("key"),
        "{e}"
    );
    // Nobody listening.
    let dead = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let t0 = std::time::Instant::now();
    let e = Console::connect(vec![host("h1", a), host("gone", dead)], Some(key()))
        .err()
        .unwrap();
    assert!(
        matches!(&e, ConsoleError::Host { host, .. } if host == "gone"),
        "{e}"
    );
    assert!(t0.elapsed() < std::time::Duration::from_secs(6));
}

#[test]
fn disk_on_two_hosts_and_a_target_not_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let f1 = dir.path().join("a.tst");
    let f2 = dir.path().join("b.tst");
    let allow = |p: &std::path::Path, write| AllowedTarget {
        path: p.display().to_string(),
        write,
    };
    let h1 = agent(vec![allow(&f1, true)]);
    let h2 = agent(vec![allow(&f2, true)]);
    let ro = agent(vec![allow(&f1, false)]);
    let mut console = Console::connect(
        vec![host("h1", h1), host("h2", h2), host("ro", ro)],
        Some(key()),
    )
    .unwrap();
    let order = |read| disk_order(read, 4 << 20);
    let stop = AtomicBool::new(false);
    let doc = console
        .run_disk(
            &DiskTest {
                on: vec!["h1".into(), "h2".into()],
                order: order(70),
            },
            &stop,
        )
        .unwrap();
    assert_eq!(doc.hosts.len(), 2);
    let sum: f64 = doc.hosts.iter().map(|h| h.metrics["iops"]).sum();
    assert!((sum - doc.metrics["iops"]).abs() < 1e-6 * sum, "{sum}");
    assert!(doc.metrics["iops"] > 0.0);
    // Writing on a read-only target: refused at PREPARE, naming the host.
    let e = console
        .run_disk(
            &DiskTest {
                on: vec!["h1".into(), "ro".into()],
                order: order(70),
            },
            &stop,
        )
        .err()
        .unwrap();
    assert!(
        matches!(&e, ConsoleError::Host { host, msg } if host == "ro" && msg.contains("read-only")),
        "{e}"
    ); // A path the agent was not started with: refused, and nothing made.
    let mut other = order(100);
    let elsewhere = dir.path().join("elsewhere.tst");
    other.targets = vec![elsewhere.display().to_string()];
    let before = std::fs::metadata(&f2).unwrap().modified().unwrap();
    let e = console
        .run_disk(
            &DiskTest {
                on: vec!["h2".into()],
                order: other,
            },
            &stop,
        )
        .err()
        .unwrap();
    assert!(
        matches!(&e, ConsoleError::Host { host, msg } if host == "h2" && msg.contains("is not allowed")),
        "{e}"
    );
    assert!(!elsewhere.exists());
    assert_eq!(std::fs::metadata(&f2).unwrap().modified().unwrap(), before);
}

/// A console's session recorded on the wire and played again to the agent
/// is refused: the agent's fresh nonce makes the old proof worthless, and
/// nothing of the session (not even `info`) is answered.
#[test]
fn a_replayed_session_is_refused() {
    use std::io::{Read, Write};
    let agent_addr = agent(vec![]);
    // A relay that records what the console sends.
    let relay = TcpListener::bind("127.0.0.1:0").unwrap();
    let relay_addr = relay.local_addr().unwrap();
    let recorded = Arc::new(std::sync::Mutex::new(Vec::new()));
    let rec = recorded.clone();
    std::thread::spawn(move || {
        let (mut c, _) = relay.accept().unwrap();
        let mut a = std::net::TcpStream::connect(agent_addr).unwrap();
        let (mut c2, mut a2) = (c.try_clone().unwrap(), a.try_clone().unwrap());
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut a2, &mut c2);
        });
        let mut buf = [0u8; 65536];
        loop {
            match c.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    rec.lock().unwrap().extend_from_slice(&buf[..n]);
                    if a.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            }
        }
        let _ = a.shutdown(std::net::Shutdown::Both);
    });
    let mut console = Console::connect(vec![host("h1", relay_addr)], Some(key())).unwrap();
    assert!(console.info("h1").is_some());
    console.close();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let bytes = recorded.lock().unwrap().clone();
    assert!(bytes.len() > 100, "recorded {} bytes", bytes.len());
    // Played again to the agent, as fast as it will take them.
    let mut s = std::net::TcpStream::connect(agent_addr).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    let _ = s.write_all(&bytes);
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer);
    assert!(text.contains("authentication failed"), "{text}");
    assert!(
        !text.contains("hostname") && !text.contains("\\\"info\\\""),
        "{text}"
    );
}

/// An agent that accepts the connection but never answers is given up on
/// within 5 s, named.
#[test]
fn a_silent_agent_is_unreachable_within_5_s() {
    // The kernel completes the handshake for a listener nobody accepts on.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let t0 = std::time::Instant::now();
    let e = Console::connect(
        vec![host("mute", silent.local_addr().unwrap())],
        Some(key()),
    )
    .err()
    .unwrap();
    let took = t0.elapsed();
    assert!(
        matches!(&e, ConsoleError::Host { host, msg } if host == "mute" && msg.contains("unreachable")),
        "{e}"
    );
    assert!(took < std::time::Duration::from_millis(5500), "{took:?}");
    drop(silent);
}

/// `net serve` is an endpoint only: a console reaching one is told so by
/// name, and the endpoint serves network tests as before.
#[test]
fn net_serve_refuses_a_console_by_name() {
    let addr = endpoint(None);
    let e = Console::connect(vec![host("ep", addr)], Some(key()))
        .err()
        .unwrap();
    assert!(
        matches!(&e, ConsoleError::Host { host, msg } if host == "ep" && msg.contains("net serve") && msg.contains("iotoll agent")),
        "{e}"
    );
}
