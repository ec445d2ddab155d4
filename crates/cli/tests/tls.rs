//! `--tls` through the binary: TLS 1.3 data connections against a real
//! endpoint, the endpoint checking every byte; refusals by an endpoint
//! started with --no-tls or too old for TLS; data connections that do not
//! speak TLS; a comparison of a cleartext and a TLS run.

mod common;
use common::server::{frame, read_frame, write_frame, Server};
use common::*;
use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

const SHORT: [&str; 4] = ["--ramp", "200ms", "--time", "1s"];

fn short(kind: &str, addr: &str, words: &str) -> serde_json::Value {
    let mut a = net_args(kind, addr, words);
    a.extend(SHORT);
    net_json(&a)
}

#[test]
fn stream_over_tls_arrives_intact_both_ways() {
    let s = Server::start("127.0.0.1", &[]);
    // --verify: both ends' receivers compare every byte with the senders'
    // pattern, so a record layer that garbles, drops or repeats data fails.
    let d = short("stream", &s.addr, "--tls --verify --dir bidir --conns 3");
    assert_eq!(d["spec"]["tls"], "aes-128-gcm");
    assert_eq!(d["spec"]["verify"], true);
    let t = &d["disclosure"]["tls"];
    assert_eq!(t["protocol"], "TLS 1.3");
    assert_eq!(t["cipher_suite"], "TLS13_AES_128_GCM_SHA256");
    assert!(t["handshake_s"].as_f64().unwrap() > 0.0, "{t}");
    assert_eq!(metric(&d, "errors"), 0.0);
    let (tx, rx, all) = (
        metric(&d, "tx_mbit_s"),
        metric(&d, "rx_mbit_s"),
        metric(&d, "mbit_s"),
    );
    // The directions add up to the total. That both directions move in
    // one engine thread (a TLS sender never fills its socket, and once
    // starved the receivers beside it) is checked where it can be waited
    // for, in net's tls tests: here the endpoint is another process that a
    // busy machine may not run at all in a one-second window.
    assert!(tx > 0.0 && rx >= 0.0, "tx {tx} rx {rx}");
    assert!((tx + rx - all).abs() < 1e-6 * all, "{tx} + {rx} != {all}");
}

#[test]
fn request_response_over_each_other_cipher() {
    let s = Server::start("127.0.0.1", &[]);
    for (cipher, suite) in [
        ("aes-256-gcm", "TLS13_AES_256_GCM_SHA384"),
        ("chacha20-poly1305", "TLS13_CHACHA20_POLY1305_SHA256"),
    ] {
        let words = format!("--tls-cipher {cipher} --burst 4 --req 1k --resp 20k --conns 2");
        let d = short("rr", &s.addr, &words);
        assert_eq!(d["spec"]["tls"], cipher);
        assert_eq!(d["disclosure"]["tls"]["cipher_suite"], suite);
        assert!(metric(&d, "trans_s") > 0.0);
        assert_eq!(metric(&d, "errors"), 0.0);
    }
}

#[test]
fn bad_cipher_and_misused_verify_are_usage_errors() {
    let s = Server::start("127.0.0.1", &[]);
    net_fails(
        &["stream", &s.addr, "--tls-cipher", "rc4"],
        2,
        "unknown cipher 'rc4'",
    );
    net_fails(&["rr", &s.addr, "--verify"], 2, "unexpected argument");
}

#[test]
fn an_endpoint_started_without_tls_refuses_clearly() {
    let s = Server::start("127.0.0.1", &["--no-tls"]);
    let mut a = vec!["stream", s.addr.as_str(), "--tls"];
    a.extend(SHORT);
    net_fails(&a, 1, "started with --no-tls");
    // Cleartext still runs there.
    short("stream", &s.addr, "");
}

/// An endpoint of a release before TLS: its strict request type refuses
/// the `tls` field by name. The client says what that means.
#[test]
fn an_endpoint_too_old_for_tls_is_named() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let old = std::thread::spawn(move || {
        let (mut c, _) = l.accept().unwrap();
        let hello = r#"{"type":"hello","proto":2,"version":"0.0.9","nonce":"00","auth":false}"#;
        c.write_all(&frame(hello)).unwrap();
        let t = Duration::from_secs(10);
        read_frame(&mut c, t).expect("auth");
        write_frame(&mut c, &serde_json::json!({"type": "auth_ok", "mac": null}));
        let test = read_frame(&mut c, t).expect("test");
        assert_eq!(test["params"]["tls"], "aes-128-gcm");
        let msg = "malformed message: unknown field `tls`, expected one of `kind`, `dir` at line 1 column 200";
        write_frame(&mut c, &serde_json::json!({"type": "error", "msg": msg}));
    });
    let mut a = vec!["stream", addr.as_str(), "--tls"];
    a.extend(SHORT);
    let err = net_fails(&a, 1, "too old for --tls");
    assert!(err.contains("0.0.9"), "{err}");
    old.join().unwrap();
}

/// Asks a real endpoint for a TLS test by hand, then opens its one data
/// connection and sends `first` on it instead of a ClientHello. Returns
/// the endpoint's answer on the control connection.
fn tls_test_then(addr: &str, first: &[u8]) -> serde_json::Value {
    let mut c = TcpStream::connect(addr).unwrap();
    let t = Duration::from_secs(5);
    read_frame(&mut c, t).expect("hello");
    c.write_all(&frame(r#"{"type":"auth","nonce":"00","mac":null}"#))
        .unwrap();
    read_frame(&mut c, t).expect("auth_ok");
    let test = r#"{"type":"test","params":{"kind":"stream","dir":"tx","conns":1,"msg":1024,"sockbuf":null,"nodelay":false,"req":1,"resp":1,"burst":1,"ramp_ms":0,"time_ms":1000,"tls":"aes-128-gcm"}}"#;
    c.write_all(&frame(test)).unwrap();
    let acc = read_frame(&mut c, t).expect("accept");
    assert!(acc["cert"].as_str().is_some_and(|h| h.len() > 100), "{acc}");
    let port = acc["data_port"].as_u64().unwrap() as u16;
    let token = acc["token"].as_u64().unwrap();
    let mut d = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut h = token.to_be_bytes().to_vec();
    h.extend(0u32.to_be_bytes());
    h.push(0); // this end sends
    d.write_all(&h).unwrap();
    let _ = d.write_all(first);
    let answer = read_frame(&mut c, Duration::from_secs(20)).expect("the endpoint's reason");
    drop(d);
    answer
}

/// A client that sends cleartext on a TLS test, and one that sends a
/// handshake of garbage: each test fails with the reason, and the endpoint
/// goes on serving TLS tests at once.
#[test]
fn data_connections_that_do_not_speak_tls_fail_cleanly() {
    let s = Server::start("127.0.0.1", &[]);
    let cleartext = vec![0x5a; 64 << 10];
    let mut garbage = vec![0x16, 0x03, 0x01, 0x00, 0x40];
    garbage.extend((0..64u32).map(|i| i.wrapping_mul(2654435761).to_le_bytes()[3]));
    for first in [cleartext, garbage] {
        let answer = tls_test_then(&s.addr, &first);
        assert_eq!(answer["type"], "error", "{answer}");
        let msg = answer["msg"].as_str().unwrap_or_default();
        assert!(
            msg.contains("TLS handshake on data connection 1 failed"),
            "{msg}"
        );
        let d = short("stream", &s.addr, "--tls --verify");
        assert!(metric(&d, "mbit_s") > 0.0);
    }
}

/// The `tls:` lines of a human output or of `results show`.
fn tls_lines(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| l.trim_start().starts_with("tls:"))
        .collect()
}

/// A cleartext and a TLS run: the TLS one says so in its human output and
/// in `results show`, with the suite the handshakes agreed on, and the
/// cleartext one says nothing of TLS; `compare` pairs the two. (One pair
/// of streams for all of it: more would slow `many_tls_connections`,
/// which shares these cores.)
#[test]
fn compare_pairs_a_cleartext_and_a_tls_run() {
    let tmp = Tmp::new();
    let s = Server::start("127.0.0.1", &[]);
    for (label, extra) in [("clear", ""), ("tls", "--tls")] {
        let line = format!(
            "net stream {} --ramp 200ms --time 1s --quiet --config {label} {extra}",
            s.addr
        );
        let human = tmp.cmd(&line).succeeds();
        let shown = tmp.cmd("results show").arg(label).succeeds();
        for text in [&human, &shown] {
            let tls = tls_lines(text);
            if extra.is_empty() {
                assert!(tls.is_empty() && !text.contains("TLS"), "{text}");
            } else {
                assert_eq!(tls.len(), 1, "{text}");
                for want in ["TLS 1.3", "TLS13_AES_128_GCM_SHA256", "X25519", "CPU AES"] {
                    assert!(tls[0].contains(want), "{want} not in {text}");
                }
            }
        }
    }
    let out = tmp.cmd("compare clear tls --json").output().unwrap();
    let c = ok_json(&out);
    let rows = c["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 1, "{c}");
    let r = &rows[0];
    assert_eq!(r["test"], "stream/dir=tx,conns=1,msg=128k", "{r}");
    let values = r["values"].as_array().unwrap();
    assert!(
        values.iter().all(|v| v.as_f64().is_some_and(|v| v > 0.0)),
        "{r}"
    );
    // TLS is the configuration under test, not a different workload.
    assert!(r["differs"].as_array().is_none_or(|d| d.is_empty()), "{r}");
}

/// Hundreds of TLS connections: all handshakes at once in one event loop
/// at each end, every connection counted.
#[test]
fn many_tls_connections() {
    let s = Server::start("127.0.0.1", &[]);
    // A 3 s window: an engine thread takes its 300 connections in turns of
    // up to 16 messages each, and on two loaded cores one round of turns
    // can take most of a second (a 1 s window saw a connection move
    // nothing in 3 runs of 8 beside another test's streams).
    let mut a = net_args("stream", &s.addr, "--tls --conns 300 --dir bidir --msg 16k");
    a.extend(["--ramp", "500ms", "--time", "3s"]);
    let d = net_json(&a);
    assert_eq!(metric(&d, "conns"), 600.0);
    assert_eq!(metric(&d, "errors"), 0.0);
    assert!(
        metric(&d, "conn_mbit_s_min") > 0.0,
        "a connection moved nothing"
    );
}

/// A proxy on the control path that does not know the key swaps the
/// `accept`: its own certificate and data port (the attack of a TLS
/// interceptor), or only the data port (a relay that sees every byte).
/// The client refuses the `accept` before it opens a data connection, so
/// it never pins the proxy's certificate, and nothing is stored.
#[test]
fn a_proxy_without_the_key_cannot_swap_the_certificate_or_the_data_port() {
    use common::proxy::{edit, type_of, Proxy, Way};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let t = Tmp::new();
    let k = t.key("key", "correct horse battery staple\n");
    let mut s = Server::start("127.0.0.1", &["--auth-key", &k]);
    let refused = |proxy: &Proxy, tls: &[&str]| {
        let out = iotoll()
            .args(["net", "stream", &proxy.addr, "--auth-key", &k])
            .args(["--ramp", "0s", "--time", "500ms"])
            .args(tls)
            .args(["--db", &t.db, "--quiet"])
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(
            err.contains("accept: frame 1 failed authentication"),
            "{err}"
        );
        assert!(err.contains("the test is void"), "{err}");
        assert_eq!(t.list().trim(), "", "something was stored");
    };

    // The interceptor: its own certificate, its own port, where it
    // completes the TLS handshakes as the endpoint would.
    let mine = iotoll_net::tls::ServerTls::generate().unwrap();
    let cert = mine.cert_hex();
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let pinned = Arc::new(AtomicUsize::new(0));
    let p2 = pinned.clone();
    std::thread::spawn(move || {
        for mut c in l.incoming().map_while(Result::ok) {
            let mut header = [0u8; 13];
            if std::io::Read::read_exact(&mut c, &mut header).is_err() {
                continue;
            }
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            let side = iotoll_net::tls::Side::Server(&mine);
            if iotoll_net::tls::handshake_all(vec![c], side, deadline, &|| false).is_ok() {
                p2.fetch_add(1, Ordering::SeqCst);
            }
        }
    });
    let swap = Proxy::start(&s.addr, move |way, mut f| {
        if way == Way::ToClient && type_of(&f) == "accept" {
            edit(&mut f, |m| {
                m["cert"] = cert.clone().into();
                m["data_port"] = port.into();
            });
        }
        vec![f]
    });
    refused(&swap, &["--tls"]);
    assert_eq!(
        pinned.load(Ordering::SeqCst),
        0,
        "the client pinned the proxy's certificate"
    );

    // A relay: the data connections through the proxy's own port.
    let relayed = Arc::new(AtomicUsize::new(0));
    let r2 = relayed.clone();
    let relay = Proxy::start(&s.addr, move |way, mut f| {
        if way == Way::ToClient && type_of(&f) == "accept" {
            edit(&mut f, |m| {
                let real = m["data_port"].as_u64().unwrap() as u16;
                let l = TcpListener::bind("127.0.0.1:0").unwrap();
                m["data_port"] = l.local_addr().unwrap().port().into();
                let r3 = r2.clone();
                std::thread::spawn(move || {
                    for c in l.incoming().map_while(Result::ok) {
                        r3.fetch_add(1, Ordering::SeqCst);
                        let e = TcpStream::connect(("127.0.0.1", real)).unwrap();
                        let (mut c2, mut e2) = (c.try_clone().unwrap(), e.try_clone().unwrap());
                        let (mut c, mut e) = (c, e);
                        std::thread::spawn(move || std::io::copy(&mut c2, &mut e2));
                        std::thread::spawn(move || std::io::copy(&mut e, &mut c));
                    }
                });
            });
        }
        vec![f]
    });
    refused(&relay, &[]);
    assert_eq!(
        relayed.load(Ordering::SeqCst),
        0,
        "data went through the relay"
    );
    assert!(s.alive());
}
