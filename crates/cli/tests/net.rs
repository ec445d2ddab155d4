//! The network side through the binary: an endpoint on loopback and real
//! stream and request/response tests against it.

mod common;
use common::proxy::{edit, type_of, Proxy, Way};
use common::server::{frame, read_frame, Server};
use common::*;
use std::io::Write;
use std::net::TcpStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const SHORT: [&str; 4] = ["--ramp", "200ms", "--time", "1s"];

/// Both ends counted: the senders' figure is there beside the receivers'.
/// Whether they agree is the client's own check (a receiver that counted
/// more than was sent, beyond what the connections and the windows' edges
/// allow, voids the test: `a_data_path_relay_that_repeats_bytes_voids_the_test`);
/// two counts at two processes' windows cannot be held to a fixed
/// tolerance on a busy machine, so a result that came back passed it.
fn agree(d: &serde_json::Value) {
    let (sent, got) = (metric(d, "sent_mbit_s"), metric(d, "mbit_s"));
    assert!(
        sent > 0.0 && got > 0.0,
        "sent {sent} vs received {got} Mbit/s"
    );
    assert_eq!(d["status"], "complete");
}

/// The endpoint, a process of this host, is never "another iotoll" nor
/// interference: in `cpu.local.top` it has role `endpoint`.
fn endpoint_is_marked(d: &serde_json::Value, endpoint: u32) {
    assert_eq!(d["disclosure"]["remote"]["identity"]["pid"], endpoint);
    let local = &d["cpu"]["local"];
    for t in local["top"].as_array().unwrap() {
        if t["pid"] == endpoint {
            assert_eq!(t["role"], "endpoint", "{t}");
        }
    }
    let others = local["interference"]["processes"].as_array().unwrap();
    assert!(others.iter().all(|p| p["pid"] != endpoint), "{others:?}");
    assert!(d["metrics"].get("cpu_others_pct").is_some());
}

/// `iotoll net stream ADDR` with `line`'s words, as a plain process.
fn raw_stream(addr: &str, line: &str) -> std::process::Command {
    let mut c = raw();
    c.arg("net").args(net_args("stream", addr, line));
    c
}

/// A short test of `kind` with `words`: must succeed.
fn short(kind: &str, addr: &str, words: &str) -> serde_json::Value {
    let mut a = net_args(kind, addr, words);
    a.extend(SHORT);
    net_json(&a)
}

#[test]
fn stream_tx_one_connection() {
    let s = Server::start("127.0.0.1", &[]);
    let d = short("stream", &s.addr, "--msg 64k --config lo-test");
    assert_eq!(d["kind"], "net-stream");
    assert_eq!(d["spec"]["dir"], "tx");
    assert_eq!(d["config"], "lo-test");
    let mbit = metric(&d, "mbit_s");
    assert!(mbit > 0.0, "goodput {mbit}");
    assert_eq!(metric(&d, "tx_mbit_s"), mbit);
    agree(&d);
    assert!(
        d["metrics"].get("rx_mbit_s").is_none(),
        "no rx in a tx test"
    );
    assert_eq!(metric(&d, "conns"), 1.0);
    assert!((metric(&d, "fairness") - 1.0).abs() < 1e-9);
    // Both ends' CPU on the same window; the endpoint is this host (same
    // kernel boot id), so its CPU is not counted a second time as remote_*.
    assert!(metric(&d, "cpu_pct") > 0.0);
    let pe = metric(&d, "mbit_s_per_cpu_pct");
    assert!((pe - mbit / metric(&d, "cpu_pct")).abs() < 1e-6 * pe);
    assert_eq!(d["cpu"]["same_host"], true);
    for k in ["remote_cpu_pct", "remote_cpus", "remote_mbit_s_per_cpu_pct"] {
        assert!(d["metrics"].get(k).is_none(), "{k} for a same-host peer");
    }
    endpoint_is_marked(&d, s.child.id());
    assert!(metric(&d, "cpu_us_per_kb") > 0.0);
    assert!(d["metrics"].get("srtt_us").is_some());
    assert!(d["metrics"].get("retransmits").is_some());
    assert_eq!(d["disclosure"]["local"]["interface"]["name"], "lo");
    assert_eq!(d["disclosure"]["remote"]["interface"]["name"], "lo");
    assert!(d["cpu"]["remote"]["cpus"].as_u64().unwrap() >= 1);
    assert!(d["notes"].to_string().contains("on this host"));
    assert!(!d["series"].as_array().unwrap().is_empty());
}

#[test]
fn stream_rx_and_bidir_many_connections() {
    let s = Server::start("127.0.0.1", &[]);
    let d = short("stream", &s.addr, "--dir rx --conns 4 --sockbuf 256k");
    assert_eq!(metric(&d, "conns"), 4.0);
    assert!(metric(&d, "rx_mbit_s") > 0.0);
    assert!(d["metrics"].get("tx_mbit_s").is_none());
    let (lo, hi) = (metric(&d, "conn_mbit_s_min"), metric(&d, "conn_mbit_s_max"));
    assert!(lo <= hi && lo > 0.0);
    let f = metric(&d, "fairness");
    assert!(f > 0.25 && f <= 1.0, "fairness {f}");
    agree(&d);

    let d = short("stream", &s.addr, "--dir bidir --conns 3 --nodelay");
    assert_eq!(metric(&d, "conns"), 6.0, "3 each way");
    let (tx, rx) = (metric(&d, "tx_mbit_s"), metric(&d, "rx_mbit_s"));
    assert!(tx > 0.0 && rx > 0.0);
    assert!((metric(&d, "mbit_s") - (tx + rx)).abs() < 1e-6);
    agree(&d);
}

#[test]
fn thousand_connections() {
    let s = Server::start("127.0.0.1", &[]);
    // Fixed 64 KiB socket buffers bound what the connections can hold.
    let d = short("stream", &s.addr, "--conns 1000 --msg 64k --sockbuf 64k");
    assert_eq!(metric(&d, "conns"), 1000.0);
    assert_eq!(metric(&d, "errors"), 0.0);
    assert!(metric(&d, "mbit_s") > 0.0);
    // What the senders wrote in their window and what arrived in the
    // endpoint's differ by what sat in socket buffers at the window's edges
    // (and by the edges' skew): at most the connections' buffer capacity —
    // the kernel doubles SO_SNDBUF/SO_RCVBUF, so 2 × 64 KiB each way per
    // connection — plus a quarter of the traffic for the skew on a loaded host.
    let (sent, got) = (metric(&d, "sent_mbit_s"), metric(&d, "mbit_s"));
    let w = metric(&d, "window_s");
    let gap_bytes = (sent - got).abs() * 1e6 / 8.0 * w;
    let capacity = 1000.0 * 4.0 * 65536.0 + 0.25 * sent.max(got) * 1e6 / 8.0 * w;
    assert!(
        gap_bytes <= capacity,
        "sent {sent} vs received {got} Mbit/s over {w} s: {gap_bytes} bytes apart, more than {capacity}"
    );
    let c = metric(&d, "connect_s");
    assert!(c < 10.0, "connecting took {c} s");
}

#[test]
fn request_response() {
    let s = Server::start("127.0.0.1", &[]);
    let d = short("rr", &s.addr, "");
    assert_eq!(d["kind"], "net-rr");
    let t = metric(&d, "trans_s");
    assert!(t > 0.0, "trans/s {t}");
    // netperf's convention: one-way latency from the transaction rate per connection.
    assert!((metric(&d, "latency_one_way_us") - 1e6 / t / 2.0).abs() < 1e-6);
    // The measured round trip agrees with the rate on one connection, one outstanding.
    let rtt = metric(&d, "rtt_mean_us");
    assert!((rtt - 1e6 / t).abs() / rtt < 0.25, "rtt {rtt} vs rate {t}");
    assert!(metric(&d, "rtt_p50_us") <= metric(&d, "rtt_p99_us"));
    assert!(metric(&d, "rtt_p99_us") <= metric(&d, "rtt_max_us") + 1.0);
    assert!(metric(&d, "cpu_us_per_trans") > 0.0);
    assert!(d["latency"]["count"].as_u64().unwrap() > 100);

    let d = short("rr", &s.addr, "--conns 3 --burst 4 --req 512 --resp 1400");
    assert_eq!(d["spec"]["burst"], 4);
    let t = metric(&d, "trans_s");
    assert!((metric(&d, "latency_one_way_us") - 1e6 / (t / 3.0) / 2.0).abs() < 1e-6);
}

#[test]
fn ipv6_loopback() {
    if !can_run(
        "an IPv6 loopback",
        std::net::TcpListener::bind("[::1]:0").is_ok(),
    ) {
        return;
    }
    let s = Server::start("::1", &[]);
    let d = short("stream", &s.addr, "");
    assert!(metric(&d, "mbit_s") > 0.0);
    assert_eq!(d["disclosure"]["local"]["interface"]["name"], "lo");
}

#[test]
fn auth_key_both_ways() {
    let t = Tmp::new();
    let k = t.key("key", "correct horse battery staple\n");
    let w = t.key("wrong", "incorrect horse battery staple\n");
    let (k, w) = (k.as_str(), w.as_str());
    let s = Server::start("127.0.0.1", &["--auth-key", k]);
    let rr = net_args("rr", &s.addr, "--ramp 0s --time 300ms");
    let keyed = |key| [&rr[..], &["--auth-key", key]].concat();
    net_fails(&rr, 1, "requires a pre-shared key");
    net_fails(&keyed(w), 1, "authentication failed");
    let (code, doc, err) = net_run(&keyed(k));
    assert_eq!(code, 0, "{err}");
    assert_eq!(doc.unwrap()["spec"]["auth"], true);

    // A client with a key refuses an endpoint that cannot prove one.
    let open = Server::start("127.0.0.1", &[]);
    net_fails(
        &["rr", &open.addr, "--time", "300ms", "--auth-key", k],
        1,
        "cannot prove",
    );
}

/// `iotoll net ARGS` storing into `t`'s database: (exit code, stderr).
fn net_into(t: &Tmp, args: &[&str]) -> (i32, String) {
    let out = iotoll()
        .arg("net")
        .args(args)
        .args(["--db", &t.db, "--quiet"])
        .output()
        .expect("run iotoll");
    (out.status.code().unwrap_or(-1), stderr(&out))
}

/// A keyed stream test through `proxy` fails naming `needle`, and nothing
/// is stored.
fn forged_and_refused(proxy: &Proxy, key: &str, needle: &str) {
    let t = Tmp::new();
    let args = ["stream", &proxy.addr, "--auth-key", key, "--ramp", "0s"];
    let (code, err) = net_into(&t, &[&args[..], &["--time", "500ms"]].concat());
    assert_eq!(code, 1, "{err}");
    assert!(err.contains(needle), "{needle:?} not in: {err}");
    assert!(err.contains("the test is void"), "{err}");
    assert_eq!(t.list().trim(), "", "something was stored");
}

/// A proxy on the path that does not know the key relays the handshake
/// untouched, then inflates the endpoint's report (received bytes x 3,
/// its CPU / 10). The client refuses the report and stores nothing.
#[test]
fn a_proxy_without_the_key_cannot_rewrite_the_report() {
    let t = Tmp::new();
    let k = t.key("key", "correct horse battery staple\n");
    let s = Server::start("127.0.0.1", &["--auth-key", &k]);
    let rewritten = Arc::new(AtomicUsize::new(0));
    let r = rewritten.clone();
    let proxy = Proxy::start(&s.addr, move |way, mut f| {
        if way == Way::ToClient && type_of(&f) == "report" {
            edit(&mut f, |m| {
                let rx = &mut m["report"]["rx"];
                rx["sum"] = (rx["sum"].as_u64().unwrap() * 3).into();
                rx["max"] = (rx["max"].as_u64().unwrap() * 3).into();
                if let Some(busy) = m["report"]["cpu"]["busy_pct"].as_f64() {
                    m["report"]["cpu"]["busy_pct"] = (busy / 10.0).into();
                }
            });
            r.fetch_add(1, Ordering::SeqCst);
        }
        vec![f]
    });
    forged_and_refused(&proxy, &k, "report: frame 3 failed authentication");
    assert_eq!(
        rewritten.load(Ordering::SeqCst),
        1,
        "the proxy saw no report"
    );
    // The same client through an honest path.
    let (code, err) = net_into(
        &t,
        &["stream", &s.addr, "--auth-key", &k, "--time", "300ms"],
    );
    assert_eq!(code, 0, "{err}");
    assert!(t.list().contains("net-stream"), "{}", t.list());
}

/// A proxy without the key replays, reorders, drops or alters the sealed
/// control messages of either end: whichever end sees it ends the test,
/// saying so, and nothing is stored.
#[test]
fn replayed_reordered_or_dropped_control_messages_end_the_test() {
    let t = Tmp::new();
    let k = t.key("key", "correct horse battery staple\n");
    let mut s = Server::start("127.0.0.1", &["--auth-key", &k]);
    // The endpoint's `ready`, twice: the client sees the copy in the window.
    let replay = Proxy::start(&s.addr, |way, f| match way {
        Way::ToClient if type_of(&f) == "ready" => vec![f.clone(), f],
        _ => vec![f],
    });
    forged_and_refused(&replay, &k, "frame 2 out of sequence (expected 3)");
    // The client's window_start held back until after its window_end.
    let mut held = None;
    let reorder = Proxy::start(&s.addr, move |way, f| match (way, type_of(&f).as_str()) {
        (Way::ToEndpoint, "window_start") => {
            held = Some(f);
            vec![]
        }
        (Way::ToEndpoint, "window_end") => [Some(f), held.take()].into_iter().flatten().collect(),
        _ => vec![f],
    });
    let refused =
        "the endpoint refused a message from this client: frame 3 out of sequence (expected 2)";
    forged_and_refused(&reorder, &k, refused);
    // The client's window_start never arrives.
    let lose = Proxy::start(&s.addr, |way, f| match way {
        Way::ToEndpoint if type_of(&f) == "window_start" => vec![],
        _ => vec![f],
    });
    forged_and_refused(&lose, &k, refused);
    // The client's request altered on its way (more connections): the
    // endpoint refuses it, and says why.
    let tamper = Proxy::start(&s.addr, |way, mut f| {
        if way == Way::ToEndpoint && type_of(&f) == "test" {
            edit(&mut f, |m| m["params"]["conns"] = 50.into());
        }
        vec![f]
    });
    forged_and_refused(
        &tamper,
        &k,
        "the endpoint refused a message from this client: frame 1 failed authentication",
    );
    // Each was refused, not the endpoint broken.
    assert!(s.alive());
}

/// A relay on the data path that sends every byte from the endpoint twice
/// (the control connection untouched, sealed with the key): the client
/// received more than the endpoint sent, beyond what the connections could
/// hold, so the test is void, not a doubled goodput stored as complete.
#[test]
fn a_data_path_relay_that_repeats_bytes_voids_the_test() {
    let t = Tmp::new();
    let k = t.key("key", "correct horse battery staple\n");
    let s = Server::start("127.0.0.2", &["--auth-key", &k]);
    // The proxy's address is this test's alone, so the endpoint's data
    // port (chosen on 127.0.0.2) is free there whatever else runs.
    let proxy = Proxy::start_on("127.0.0.47", &s.addr, |way, f| {
        if way == Way::ToClient && type_of(&f) == "accept" {
            let port = common::proxy::msg_of(&f)["data_port"].as_u64().unwrap();
            // The client opens its data connections to the control
            // connection's address (the proxy's) at the endpoint's port.
            let l = std::net::TcpListener::bind(("127.0.0.47", port as u16)).unwrap();
            std::thread::spawn(move || {
                for c in l.incoming().map_while(Result::ok) {
                    let e = TcpStream::connect(("127.0.0.2", port as u16)).unwrap();
                    let (mut c_r, mut e_w) = (c.try_clone().unwrap(), e.try_clone().unwrap());
                    std::thread::spawn(move || std::io::copy(&mut c_r, &mut e_w));
                    let (mut e_r, mut c_w) = (e, c);
                    std::thread::spawn(move || {
                        let mut buf = vec![0u8; 64 << 10];
                        while let Ok(n) = std::io::Read::read(&mut e_r, &mut buf) {
                            if n == 0
                                || c_w.write_all(&buf[..n]).is_err()
                                || c_w.write_all(&buf[..n]).is_err()
                            {
                                break;
                            }
                        }
                    });
                }
            });
        }
        vec![f]
    });
    // --sockbuf fixes what the connections can hold (8 x 64 KiB): a second
    // of loopback traffic is far more.
    let words = "--dir rx --sockbuf 64k";
    voided(&t, &proxy, &k, words, "bytes nobody sent");
}

/// A keyed 1 s stream test through `proxy` with `words` is void, saying
/// `why`, and nothing is stored as complete.
fn voided(t: &Tmp, proxy: &Proxy, key: &str, words: &str, why: &str) {
    let mut args = vec!["stream", proxy.addr.as_str(), "--auth-key", key];
    args.extend(words.split_whitespace());
    args.extend(["--ramp", "0s", "--time", "1s"]);
    let (code, err) = net_into(t, &args);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("the test is void") && err.contains(why),
        "{err}"
    );
    assert!(!t.list().contains("complete"), "{}", t.list());
}

/// A control message held back on the path (window_end, 2.5 s) makes the
/// endpoint's window longer than this host's: its CPU and bytes are of
/// another interval, so the test is void, not stored as complete.
#[test]
fn a_held_back_window_message_voids_the_test() {
    let t = Tmp::new();
    let k = t.key("key", "correct horse battery staple\n");
    let s = Server::start("127.0.0.1", &["--auth-key", &k]);
    let proxy = Proxy::start(&s.addr, |way, f| {
        if way == Way::ToEndpoint && type_of(&f) == "window_end" {
            std::thread::sleep(Duration::from_millis(2500));
        }
        vec![f]
    });
    voided(&t, &proxy, &k, "", "not of one window");
}

/// A key file group or others may read or change is refused by every
/// command that takes `--auth-key` (as CHAP secret files are), before it
/// listens or connects; owner-only ones are taken.
#[test]
fn key_files_group_or_others_may_read_are_refused_everywhere() {
    use std::os::unix::fs::PermissionsExt;
    let t = Tmp::new();
    let k = t.key("key", "correct horse battery staple\n");
    let suite = t.file(
        "s.toml",
        "name = \"s\"\nreps = 1\nramp = \"0s\"\ntime = \"100ms\"\n[[test]]\nname = \"r\"\nkind = \"net-rr\"\n",
    );
    let closed = format!("127.0.0.1:{}", common::server::free_port("127.0.0.1"));
    for mode in [0o644, 0o640, 0o604, 0o660, 0o622, 0o600 | 0o002] {
        std::fs::set_permissions(&k, std::fs::Permissions::from_mode(mode)).unwrap();
        let refused = |args: &[&str]| {
            let err = iotoll()
                .args(args)
                .timeout(Duration::from_secs(60))
                .fails(2, "UNPROTECTED AUTH KEY FILE");
            assert!(
                err.contains(&k) && err.contains(&format!("{mode:04o}")),
                "{err}"
            );
        };
        refused(&["net", "serve", "--listen", "127.0.0.1:0", "--auth-key", &k]);
        refused(&["agent", "--listen", "127.0.0.1:0", "--auth-key", &k]);
        refused(&["net", "rr", &closed, "--auth-key", &k]);
        refused(&["net", "stream", &closed, "--auth-key", &k]);
        let db = t.path("r.db");
        refused(&[
            "suite",
            "run",
            &suite,
            "--peer",
            &closed,
            "--auth-key",
            &k,
            "--db",
            &db,
        ]);
    }
    // Owner-only (0600 and 0400): taken (the test then fails to connect).
    for mode in [0o600, 0o400] {
        std::fs::set_permissions(&k, std::fs::Permissions::from_mode(mode)).unwrap();
        net_fails(&["rr", &closed, "--auth-key", &k], 1, "cannot connect");
    }
    // Owner-only, but another user's (who may change it): refused too.
    if is_root() {
        std::os::unix::fs::chown(&k, Some(65534), None).unwrap();
        let err = iotoll()
            .args(["net", "rr", &closed, "--auth-key", &k])
            .fails(2, "UNPROTECTED AUTH KEY FILE");
        assert!(err.contains("belongs to uid 65534"), "{err}");
    }
}

/// While a test runs, another client is told "busy" at once (it does not
/// wait for the test to end). The first client is caught measuring (its
/// progress says so), never after a guessed delay.
#[test]
fn second_client_gets_busy_at_once() {
    let s = Server::start("127.0.0.1", &[]);
    let mut first = measuring(&mut raw_stream(&s.addr, "--ramp 0s --time 60s"));
    let t = Instant::now();
    net_fails(
        &net_args("rr", &s.addr, "--time 1s --busy-wait 0s"),
        1,
        "busy",
    );
    // The first test has most of a minute to go: an answer within 20 s was
    // not a wait for it.
    assert!(
        t.elapsed() < Duration::from_secs(20),
        "busy answer took {:?}",
        t.elapsed()
    );
    first.signal(libc::SIGINT);
    let out = first.finish();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
}

#[test]
fn limits_and_bad_input() {
    let s = Server::start(
        "127.0.0.1",
        &["--max-conns", "2", "--max-msg", "1m", "--max-time", "5s"],
    );
    for (words, needle) in [
        ("--conns 3 --time 1s", "this server's limit"),
        ("--msg 2m --time 1s", "msg must be"),
        ("--time 10s", "at most 5 s"),
    ] {
        net_fails(&net_args("stream", &s.addr, words), 1, needle);
    }

    for (words, needle) in [
        ("stream 127.0.0.1 --conns 0", "--conns"),
        ("stream 127.0.0.1 --conns 10001", "--conns"),
        ("stream 127.0.0.1 --msg 0", "--msg"),
        ("stream 127.0.0.1 --msg 17m", "--msg"),
        ("stream 127.0.0.1 --msg -1", "--msg"),
        ("stream 127.0.0.1 --dir sideways", "unknown direction"),
        ("stream 127.0.0.1 --bind 10.0.0.300", "not an IP address"),
        ("stream 127.0.0.1 --time 0s", "--time"),
        ("rr 127.0.0.1 --burst 0", "--burst"),
        ("rr 127.0.0.1 --req 0", "--req"),
        ("stream no.such.host.invalid", "cannot resolve"),
    ] {
        let args: Vec<&str> = words.split_whitespace().collect();
        let (code, doc, err) = net_run(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(doc.is_none());
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    // Nothing listening: a runtime error naming the peer.
    let port = common::server::free_port("127.0.0.1").to_string();
    let peer = format!("127.0.0.1:{port}");
    let err = net_fails(&["rr", &peer, "--time", "1s"], 1, "cannot connect");
    assert!(err.contains(&port), "{err}");
    assert!(err.contains("start `iotoll net serve`"), "{err}");
    let t = Tmp::new();
    let key = t.key("short", "abc");
    net_fails(&["rr", &s.addr, "--auth-key", &key], 2, "too short");
}

#[test]
fn bind_spreads_connections_over_local_addresses() {
    let s = Server::start("127.0.0.1", &[]);
    // Caught measuring (an event), its data connections are established.
    let mut run = measuring(&mut raw_stream(
        &s.addr,
        "--conns 4 --bind 127.0.0.1,127.0.0.2 --ramp 0s --time 60s --json --no-db",
    ));
    // The kernel's view of the data connections while they run.
    let ss = std::process::Command::new("ss")
        .args(["-Htn", "state", "established"])
        .output();
    run.signal(libc::SIGINT);
    let out = run.finish();
    assert_eq!(out.status.code(), Some(130));
    let d: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON result");
    assert_eq!(d["spec"]["conns"], 4);
    assert_eq!(
        d["spec"]["bind"],
        serde_json::json!(["127.0.0.1", "127.0.0.2"])
    );
    let ss = String::from_utf8(ss.expect("ss from iproute2").stdout).unwrap();
    let from = |ip: &str| {
        ss.lines()
            .filter(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                // Recv-Q Send-Q Local Peer: a client socket from `ip` to the endpoint's host.
                f.len() >= 4
                    && f[2].starts_with(&format!("{ip}:"))
                    && f[3].starts_with("127.0.0.1:")
            })
            .count()
    };
    assert!(
        from("127.0.0.2") >= 2,
        "no data connections from 127.0.0.2:\n{ss}"
    );
}

/// An unreachable host: a clear error, well within the connect timeout.
/// A network namespace whose loopback is down has no route at all.
#[test]
fn unreachable_host() {
    if !can_run("root (network namespaces)", is_root()) {
        return;
    }
    let ns = format!("iotoll-test-{}", std::process::id());
    let ok = std::process::Command::new("ip")
        .args(["netns", "add", &ns])
        .status()
        .map(|s| s.success());
    assert!(matches!(ok, Ok(true)), "ip netns add");
    let t = Instant::now();
    let out = std::process::Command::new("ip")
        .args(["netns", "exec", &ns])
        .arg(bin_path())
        .args("net rr 127.0.0.1 --time 1s --quiet --no-db".split_whitespace())
        .output();
    let _ = std::process::Command::new("ip")
        .args(["netns", "del", &ns])
        .status();
    let out = out.unwrap();
    assert!(
        t.elapsed() < Duration::from_secs(8),
        "took {:?}",
        t.elapsed()
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("127.0.0.1:7575")
            && err.contains("cannot connect")
            && err.contains("unreachable"),
        "{err}"
    );
}

#[test]
fn ctrl_c_during_a_stream_reports_what_was_measured() {
    let s = Server::start("127.0.0.1", &[]);
    let mut run = measuring(&mut raw_stream(&s.addr, "--ramp 0s --time 30s --json"));
    run.signal(libc::SIGINT);
    let out = run.finish();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let d: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    validate(&d);
    assert_eq!(d["status"], "interrupted");
    assert!(metric(&d, "window_s") < 20.0);
    assert!(metric(&d, "mbit_s") > 0.0);
}

/// A connection that reads the hello, so `bytes` land in the auth slot.
fn send_raw(addr: &str, bytes: &[u8]) -> TcpStream {
    let mut c = TcpStream::connect(addr.trim_start_matches('[').replace("]:", ":").as_str())
        .or_else(|_| TcpStream::connect(addr))
        .unwrap();
    read_frame(&mut c, Duration::from_secs(2)).expect("the hello");
    let _ = c.write_all(bytes);
    c
}

/// A valid test still runs (retrying while the endpoint finishes off an
/// abusive session).
fn still_serves(addr: &str) {
    let end = Instant::now() + Duration::from_secs(15);
    loop {
        let (code, doc, err) = net_run(&["rr", addr, "--ramp", "0s", "--time", "300ms"]);
        if code == 0 {
            assert!(metric(&doc.unwrap(), "trans_s") > 0.0);
            return;
        }
        assert!(
            err.contains("busy") && Instant::now() < end,
            "endpoint stopped serving: {err}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn endpoint_survives_abuse_without_leaking() {
    let mut s = Server::start("127.0.0.1", &[]);
    still_serves(&s.addr);
    let fds_before = s.open_fds();

    // Random bytes.
    let mut junk = vec![0u8; 4096];
    for (i, b) in junk.iter_mut().enumerate() {
        *b = (i as u32).wrapping_mul(2654435761).to_le_bytes()[2];
    }
    drop(send_raw(&s.addr, &junk));
    still_serves(&s.addr);
    // A length prefix of 4 GiB.
    drop(send_raw(&s.addr, &[0xff, 0xff, 0xff, 0xff, b'{']));
    still_serves(&s.addr);
    // A message of the wrong type, and one with wrongly typed fields.
    drop(send_raw(&s.addr, &frame(r#"{"type":"window_end"}"#)));
    still_serves(&s.addr);
    drop(send_raw(
        &s.addr,
        &frame(r#"{"type":"auth","nonce":5,"mac":[1]}"#),
    ));
    still_serves(&s.addr);
    // A client that connects and says nothing (held open past the deadline).
    let silent = TcpStream::connect(&s.addr).unwrap();
    still_serves(&s.addr);
    drop(silent);
    // A client that announces a frame and stops sending.
    let stalled = send_raw(&s.addr, &[0, 0, 0, 100, b'{', b'"']);
    still_serves(&s.addr);
    drop(stalled);
    // A client that asks for 5 data connections and opens 2.
    {
        let mut c = send_raw(
            &s.addr,
            &frame(r#"{"type":"auth","nonce":"00","mac":null}"#),
        );
        let t = Duration::from_secs(2);
        read_frame(&mut c, t).expect("auth_ok");
        let test = r#"{"type":"test","params":{"kind":"stream","dir":"tx","conns":5,"msg":1024,"sockbuf":null,"nodelay":false,"req":1,"resp":1,"burst":1,"ramp_ms":0,"time_ms":1000}}"#;
        c.write_all(&frame(test)).unwrap();
        let acc = read_frame(&mut c, t).expect("accept");
        let port = acc["data_port"].as_u64().unwrap();
        let _d1 = TcpStream::connect(("127.0.0.1", port as u16)).unwrap();
        let _d2 = TcpStream::connect(("127.0.0.1", port as u16)).unwrap();
        // The endpoint gives up on its own (its deadline) and says why.
        let err = read_frame(&mut c, Duration::from_secs(20)).expect("the reason");
        assert!(err.to_string().contains("only 0 of 5"), "{err}");
    }
    still_serves(&s.addr);
    // 1,000 idle connections at once.
    let idle: Vec<TcpStream> = (0..1000)
        .filter_map(|_| TcpStream::connect(&s.addr).ok())
        .collect();
    assert!(idle.len() > 900);
    // Held until the endpoint has dealt with the flood (it drops the
    // oldest beyond its per-source limit and says so).
    assert!(
        s.wait_log(
            "still in their handshake to make room",
            Duration::from_secs(30)
        ),
        "the flood was not seen: {:?}",
        s.log.lock().unwrap()
    );
    drop(idle);
    still_serves(&s.addr);
    // A bad auth key is a clean refusal.
    drop(send_raw(
        &s.addr,
        &frame(r#"{"type":"auth","nonce":"00","mac":"abcd"}"#),
    ));
    still_serves(&s.addr);

    // A client that disappears mid-test: the endpoint ends that test itself.
    let mut victim = measuring(&mut raw_stream(&s.addr, "--conns 8 --ramp 0s --time 60s"));
    let ended = s.log_count("session ended");
    victim.signal(libc::SIGKILL);
    drop(victim.finish());
    // The test had most of a minute to go: the endpoint ending it within
    // 20 s noticed the client's loss, it did not run the test out.
    assert!(
        within(Duration::from_secs(20), || s.log_count("session ended")
            > ended),
        "test not ended: {:?}",
        s.log.lock().unwrap()
    );
    still_serves(&s.addr);

    assert!(s.alive(), "endpoint died");
    // Every connection above is closed at our end; the endpoint's
    // descriptors come back down as it sees them close.
    let fds_after = s.fds_at_most(fds_before + 2, Duration::from_secs(30));
    assert!(
        fds_after <= fds_before + 2,
        "descriptors leaked: {fds_before} -> {fds_after}"
    );
    // Connections in their handshake never make the endpoint busy.
    assert_eq!(
        s.log_count("refused, a test is running"),
        0,
        "idle connections were told busy: {:?}",
        s.log.lock().unwrap()
    );
}

#[test]
fn client_notices_an_endpoint_that_stops_mid_test() {
    let mut s = Server::start("127.0.0.1", &[]);
    let client = measuring(&mut raw_stream(&s.addr, "--ramp 0s --time 60s"));
    let t = Instant::now();
    // SAFETY: signalling our own child.
    unsafe { libc::kill(s.child.id() as i32, libc::SIGINT) };
    let out = client.finish();
    let err = stderr(&out);
    // The test had most of a minute to go.
    assert!(
        t.elapsed() < Duration::from_secs(20),
        "client took {:?}",
        t.elapsed()
    );
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("closed the control connection"), "{err}");
    assert!(s.wait_log("abandoned", Duration::from_secs(20)));
    // The endpoint stops cleanly on Ctrl-C.
    let status = s.child.wait().expect("endpoint exits");
    assert_eq!(status.code(), Some(0), "endpoint exit: {status:?}");
}

/// Runs `ip ARGS`, panicking with its stderr on failure.
fn ip(args: &[&str]) {
    std::process::Command::new("ip").args(args).succeeds();
}

/// Two network namespaces of this host joined by a veth pair; both are
/// deleted (with the pair) however the test ends.
struct Netns {
    client: String,
    server: String,
}

impl Netns {
    fn new() -> Netns {
        let tag = std::process::id();
        let n = Netns {
            client: format!("suite-{tag}-c"),
            server: format!("suite-{tag}-s"),
        };
        ip(&["netns", "add", &n.client]);
        ip(&["netns", "add", &n.server]);
        ip(&[
            "-n", &n.client, "link", "add", "vc", "type", "veth", "peer", "name", "vs", "netns",
            &n.server,
        ]);
        for (ns, dev, addr) in [
            (&n.client, "vc", "10.201.0.1/24"),
            (&n.server, "vs", "10.201.0.2/24"),
        ] {
            ip(&["-n", ns, "addr", "add", addr, "dev", dev]);
            ip(&["-n", ns, "link", "set", dev, "up"]);
            ip(&["-n", ns, "link", "set", "lo", "up"]);
        }
        n
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        for ns in [&self.client, &self.server] {
            let _ = std::process::Command::new("ip")
                .args(["netns", "del", ns])
                .status();
        }
    }
}

struct Kill(std::process::Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// An endpoint in another network namespace of this host, reached over a
/// veth pair at another address: not loopback, not our address, yet the
/// same kernel. The boot ids say so: `cpu.same_host`, a note, no remote_*
/// CPU metrics, and the endpoint's PID marked in the local top list.
#[test]
fn a_peer_in_another_namespace_is_the_same_host() {
    if !can_run("root (creating network namespaces)", is_root()) {
        return;
    }
    let ns = Netns::new();
    // The endpoint is told apart by pid and start time, not by its binary's
    // name: run it by another name. A symbolic link gives the process that
    // name (exec takes it from the path, not the file); a copy could not be
    // run while another test thread's fork still held it open for writing
    // ("Text file busy").
    let t = Tmp::new();
    let renamed = t.path("lab-endpoint");
    std::os::unix::fs::symlink(bin_path(), &renamed).unwrap();
    let server = std::process::Command::new("ip")
        .args(["netns", "exec", &ns.server])
        .arg(&renamed)
        .args(["net", "serve", "--listen", "10.201.0.2:7575"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start the endpoint");
    let mut server = Kill(server);
    // `ip netns exec` execs the command: the child is the endpoint itself.
    let endpoint = server.0.id();
    let mut line = String::new();
    let mut err = std::io::BufReader::new(server.0.stderr.take().unwrap());
    std::io::BufRead::read_line(&mut err, &mut line).unwrap();
    assert!(line.contains("listening"), "{line}");
    let d = std::process::Command::new("ip")
        .args(["netns", "exec", &ns.client])
        .arg(bin_path())
        .args(words("net stream 10.201.0.2 --json --quiet --no-db"))
        .args(SHORT)
        .json();
    validate(&d);
    assert!(metric(&d, "mbit_s") > 0.0);
    assert_eq!(d["disclosure"]["local"]["interface"]["name"], "vc");
    assert_eq!(d["cpu"]["same_host"], true);
    let notes = d["notes"].to_string();
    assert!(
        notes.contains("same kernel boot id") && notes.contains("namespace"),
        "{notes}"
    );
    // Off loopback without a key: the result says the path could forge it.
    assert!(
        notes.contains("not authenticated (no --auth-key)"),
        "{notes}"
    );
    for k in ["remote_cpu_pct", "remote_mbit_s_per_cpu_pct"] {
        assert!(d["metrics"].get(k).is_none(), "{k}");
    }
    assert!(
        d["cpu"]["remote"]["cpus"].as_u64().is_some(),
        "kept for transparency"
    );
    endpoint_is_marked(&d, endpoint);
}
