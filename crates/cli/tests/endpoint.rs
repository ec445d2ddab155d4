//! The endpoint under attack and under load: connections that say nothing,
//! handshake floods, back-to-back tests, clients that queue, vanish or
//! stall, and silent connections on a test's data port. Every wait is for
//! an observable event (a frame, a log line, a closed socket) with a
//! generous deadline; nothing relies on a fixed sleep to catch a state.

mod common;

use common::server::{read_frame, write_frame, Server};
use common::{cmd, metric, net_args, net_fails, net_json, net_run, Run};
use iotoll_net::auth::{Key, Nonces, Session, Side};
use iotoll_net::engine::Role;
use iotoll_net::proto::{Control, Msg};
use serde_json::{json, Value};
use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, SocketAddrV4, TcpStream};
use std::os::unix::io::FromRawFd;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Generous: a valid client is served far sooner; the old endpoint made it
/// wait for the 30 s handshake deadline of a silent connection.
const SERVED_WITHIN: Duration = Duration::from_secs(10);

/// A TCP connection from the local address `src` (any of 127.0.0.0/8).
fn connect_from(src: Ipv4Addr, addr: &str) -> TcpStream {
    let dst: SocketAddrV4 = addr.parse().expect("an IPv4 address");
    let sa = |ip: Ipv4Addr, port: u16| libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(ip).to_be(),
        },
        sin_zero: [0; 8],
    };
    let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: plain socket calls on a descriptor we own, with valid
    // sockaddr_in structs of the stated length.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
        let s = TcpStream::from_raw_fd(fd);
        let local = sa(src, 0);
        let rc = libc::bind(fd, (&local as *const libc::sockaddr_in).cast(), len);
        assert_eq!(rc, 0, "bind {src}: {}", std::io::Error::last_os_error());
        let remote = sa(*dst.ip(), dst.port());
        let rc = libc::connect(fd, (&remote as *const libc::sockaddr_in).cast(), len);
        assert_eq!(rc, 0, "connect {addr}: {}", std::io::Error::last_os_error());
        s
    }
}

/// A connection that waits for the endpoint's first frame (so the endpoint
/// is handling it) and then says nothing.
fn silent_from(src: Ipv4Addr, addr: &str) -> TcpStream {
    let mut s = connect_from(src, addr);
    let _ = read_frame(&mut s, Duration::from_secs(10));
    s
}

fn silent(addr: &str) -> TcpStream {
    silent_from(Ipv4Addr::LOCALHOST, addr)
}

/// Whether the endpoint has closed `s` (EOF or reset), waiting up to `t`.
fn closed_by_peer(s: &mut TcpStream, t: Duration) -> bool {
    let end = Instant::now() + t;
    let mut b = [0u8; 256];
    loop {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        s.set_read_timeout(Some(left)).unwrap();
        match s.read(&mut b) {
            Ok(0) => return true,
            Ok(_) => continue, // a frame sent before the close
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return false
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => return true,
        }
    }
}

/// Whether `s` is still open right now (nothing to read, no EOF).
fn still_open(s: &TcpStream) -> bool {
    s.set_nonblocking(true).unwrap();
    let mut b = [0u8; 1];
    let open = matches!(s.peek(&mut b), Err(e) if e.kind() == ErrorKind::WouldBlock);
    s.set_nonblocking(false).unwrap();
    open
}

struct KeyFile {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

fn key_file() -> KeyFile {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("key");
    std::fs::write(&path, "correct horse battery staple\n").unwrap();
    common::owner_only(&path);
    KeyFile { _dir: dir, path }
}

/// The arguments of a short request/response test that must not meet a
/// busy endpoint.
fn rr_now<'a>(addr: &'a str, key: Option<&'a KeyFile>) -> Vec<&'a str> {
    let mut a = net_args("rr", addr, "--ramp 0s --time 300ms --busy-wait 0s");
    if let Some(k) = key {
        a.extend(["--auth-key", k.path.to_str().unwrap()]);
    }
    a
}

fn served_at_once(addr: &str, key: Option<&KeyFile>, what: &str) {
    let t = Instant::now();
    let (code, doc, err) = net_run(&rr_now(addr, key));
    assert_eq!(code, 0, "{what}: {err}");
    assert!(metric(&doc.unwrap(), "trans_s") > 0.0);
    assert!(
        t.elapsed() < SERVED_WITHIN,
        "{what}: served only after {:?}",
        t.elapsed()
    );
}

fn stream_params(conns: u32) -> Value {
    json!({"kind": "stream", "dir": "tx", "conns": conns, "msg": 1024, "sockbuf": null,
           "nodelay": false, "req": 1, "resp": 1, "burst": 1, "ramp_ms": 0, "time_ms": 500})
}

/// The control side of a test by hand: hello, auth (with the key, if any),
/// test request; returns the control connection (sealed after the
/// handshake when keyed, as the endpoint requires), data port and token.
fn raw_test(addr: &str, key: Option<&Key>, params: Value) -> (Control, u16, u64) {
    let mut c = TcpStream::connect(addr).unwrap();
    let t = Duration::from_secs(20);
    let hello = read_frame(&mut c, t).unwrap();
    assert_eq!(hello["type"], "hello", "{hello}");
    let sn = hello["nonce"].as_str().unwrap().to_string();
    let cn = "00112233445566778899aabbccddeeff";
    let mac = key.map(|k| k.mac("client", &sn, cn));
    write_frame(&mut c, &json!({"type": "auth", "nonce": cn, "mac": mac}));
    let ok = read_frame(&mut c, t).unwrap();
    assert_eq!(ok["type"], "auth_ok", "{ok}");
    let mut c = Control::new(c).unwrap();
    if let Some(k) = key {
        let nonces = Nonces {
            server: sn,
            client: cn.into(),
        };
        c.seal_with(Session::new(Some(k), &nonces, Side::Client));
    }
    let params = serde_json::from_value(params).unwrap();
    c.send(&Msg::Test { params }).unwrap();
    match c.recv(t).unwrap() {
        Msg::Accept {
            data_port, token, ..
        } => (c, data_port, token),
        other => panic!("expected accept, got {other:?}"),
    }
}

/// Waits for the endpoint's `ready` to a test by hand.
fn ready(c: &mut Control) {
    let ready = c.recv(Duration::from_secs(60)).unwrap();
    assert_eq!(ready, Msg::Ready {});
}

/// Opens and closes the window of a test by hand and reads the report.
fn window_to_report(c: &mut Control) {
    c.send(&Msg::WindowStart {}).unwrap();
    c.send(&Msg::WindowEnd {}).unwrap();
    let report = c.recv(Duration::from_secs(30)).unwrap();
    assert!(matches!(report, Msg::Report { .. }), "{report:?}");
}

fn data_conn(port: u16, token: u64, idx: u32) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut h = token.to_be_bytes().to_vec();
    h.extend_from_slice(&idx.to_be_bytes());
    h.push(Role::Send.code());
    s.write_all(&h).unwrap();
    s
}

#[test]
fn silent_connections_never_make_the_endpoint_busy() {
    for keyed in [false, true] {
        let k = key_file();
        let mut extra = vec!["--handshake-timeout", "30s"];
        if keyed {
            extra.extend(["--auth-key", k.path.to_str().unwrap()]);
        }
        let key = keyed.then_some(&k);
        let s = Server::start("127.0.0.1", &extra);
        for n in [1, 50] {
            let held: Vec<TcpStream> = (0..n).map(|_| silent(&s.addr)).collect();
            served_at_once(&s.addr, key, &format!("keyed {keyed}, {n} silent"));
            drop(held);
        }
        // A client without the key is refused, and does not block either.
        if keyed {
            let held = silent(&s.addr);
            net_fails(&rr_now(&s.addr, None), 1, "requires a pre-shared key");
            served_at_once(&s.addr, key, "keyed, after a client without the key");
            drop(held);
        }
        assert_eq!(s.log_count("refused, a test is running"), 0);
    }
}

#[test]
fn handshake_flood_drops_the_oldest_per_source_and_in_all() {
    let s = Server::start("127.0.0.1", &["--handshake-timeout", "30s"]);
    served_at_once(&s.addr, None, "before the flood");
    let base = s.open_fds();
    let other = Ipv4Addr::new(127, 0, 0, 2);
    let bystanders: Vec<TcpStream> = (0..4).map(|_| silent_from(other, &s.addr)).collect();
    // 200 from one source: at most 16 of them are kept.
    let mut flood: Vec<TcpStream> = (0..200).map(|_| silent(&s.addr)).collect();
    assert!(
        closed_by_peer(&mut flood[0], Duration::from_secs(10)),
        "the oldest connection of the flood was not dropped (its deadline is 30 s)"
    );
    let fds = s.fds_at_most(base + 2 * (16 + 4) + 8, Duration::from_secs(10));
    assert!(
        fds <= base + 2 * (16 + 4) + 8,
        "{fds} descriptors open with 204 handshakes pending (was {base})"
    );
    // Another source is not touched by this one's flood.
    assert!(bystanders.iter().all(still_open), "bystanders dropped");
    assert!(still_open(flood.last().unwrap()), "the newest was dropped");
    served_at_once(&s.addr, None, "during the flood");
    assert!(
        s.wait_log("dropped", Duration::from_secs(10)),
        "{:?}",
        s.log.lock().unwrap()
    );
    drop(flood);
    drop(bystanders);

    // 10 sources of 15 each: 150 > 128 in all, the oldest go first.
    let mut wide: Vec<TcpStream> = (0..150)
        .map(|i| silent_from(Ipv4Addr::new(127, 0, 1, 10 + (i / 15) as u8), &s.addr))
        .collect();
    assert!(
        closed_by_peer(&mut wide[0], Duration::from_secs(10)),
        "the oldest handshake was not dropped at the total cap"
    );
    assert!(still_open(wide.last().unwrap()));
    let fds = s.fds_at_most(base + 2 * 128 + 8, Duration::from_secs(10));
    assert!(
        fds <= base + 2 * 128 + 8,
        "{fds} descriptors open with 150 handshakes pending (was {base})"
    );
    served_at_once(&s.addr, None, "at the total cap");
}

#[test]
fn a_reconnecting_attacker_on_another_address_never_blocks_a_keyed_client() {
    let k = key_file();
    let s = Server::start(
        "127.0.0.1",
        &[
            "--handshake-timeout",
            "30s",
            "--auth-key",
            k.path.to_str().unwrap(),
        ],
    );
    let stop = Arc::new(AtomicBool::new(false));
    let (addr, stop2) = (s.addr.clone(), stop.clone());
    // Keeps 24 silent connections open, replacing each that is dropped.
    let attacker = std::thread::spawn(move || {
        let mut held: Vec<TcpStream> = Vec::new();
        let mut opened = 0u32;
        while !stop2.load(Ordering::Relaxed) {
            held.retain(still_open);
            if held.len() < 24 {
                held.push(silent_from(Ipv4Addr::new(127, 0, 0, 3), &addr));
                opened += 1;
            } else {
                // Pacing only (keeps ephemeral ports in supply).
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        opened
    });
    for i in 0..3 {
        served_at_once(&s.addr, Some(&k), &format!("keyed client {i}"));
    }
    stop.store(true, Ordering::Relaxed);
    let opened = attacker.join().unwrap();
    assert!(opened > 16, "the attacker opened only {opened} connections");
    eprintln!("the attacker opened {opened} connections");
    assert!(s.wait_log("dropped", Duration::from_secs(10)));
}

#[test]
fn back_to_back_tests_after_a_thousand_connections() {
    let s = Server::start("127.0.0.1", &[]);
    let base = s.open_fds();
    // The report came after the endpoint released the test's sockets.
    let released = || {
        let fds = s.open_fds();
        assert!(
            fds <= base + 4,
            "the endpoint still held {fds} descriptors (was {base}) after reporting"
        );
    };
    let args = "--conns 1000 --msg 64k --sockbuf 64k --ramp 0s --time 1s --busy-wait 0s";
    let d = net_json(&net_args("stream", &s.addr, args));
    assert_eq!(metric(&d, "conns"), 1000.0);
    released();
    // The next test, at once, never meets "busy".
    served_at_once(&s.addr, None, "right after the 1,000-connection stream");
    let d = net_json(&net_args("stream", &s.addr, args));
    assert_eq!(metric(&d, "conns"), 1000.0);

    // By hand, acknowledging nothing: once the report is here, the endpoint
    // has let go of the test although the client still holds its end.
    let (mut c, port, token) = raw_test(&s.addr, None, stream_params(1000));
    let data: Vec<TcpStream> = (0..1000).map(|i| data_conn(port, token, i)).collect();
    ready(&mut c);
    window_to_report(&mut c);
    released();
    served_at_once(&s.addr, None, "while the previous client has not said stop");
    drop((c, data));
}

#[test]
fn a_second_client_queues_while_a_test_runs() {
    let s = Server::start("127.0.0.1", &[]);
    let addr = s.addr.clone();
    let first =
        std::thread::spawn(move || net_run(&net_args("stream", &addr, "--ramp 0s --time 3s")));
    assert!(s.wait_log("accepted", Duration::from_secs(20)));
    let (code, doc, err) = net_run(&net_args("rr", &s.addr, "--ramp 0s --time 300ms"));
    assert_eq!(code, 0, "{err}");
    assert!(metric(&doc.unwrap(), "trans_s") > 0.0);
    assert!(
        err.contains("busy with another test") && err.contains("retrying for up to 10s"),
        "{err}"
    );
    let (code, _, err) = first.join().unwrap();
    assert_eq!(code, 0, "{err}");

    // With --busy-wait 0s a busy endpoint is an error at once.
    let addr = s.addr.clone();
    let first =
        std::thread::spawn(move || net_run(&net_args("stream", &addr, "--ramp 0s --time 3s")));
    assert!(s.wait_count("accepted", 3));
    let err = net_fails(&rr_now(&s.addr, None), 1, "busy with another test");
    assert!(!err.contains("retrying"), "{err}");
    let (code, _, err) = first.join().unwrap();
    assert_eq!(code, 0, "{err}");
}

#[test]
fn two_clients_started_together_both_succeed() {
    let s = Server::start("127.0.0.1", &[]);
    let runs: Vec<_> = (0..2)
        .map(|_| {
            let addr = s.addr.clone();
            std::thread::spawn(move || {
                net_run(&net_args(
                    "rr",
                    &addr,
                    "--ramp 0s --time 1s --busy-wait 30s",
                ))
            })
        })
        .collect();
    for r in runs {
        let (code, doc, err) = r.join().unwrap();
        assert_eq!(code, 0, "{err}");
        assert!(metric(&doc.unwrap(), "trans_s") > 0.0);
    }
}

/// Seconds from opening 8 silent connections to a keyed test's data port
/// (when `silent`) and then 300 real ones to the endpoint's `ready`; the
/// test then runs to its report.
fn keyed_data_port(s: &Server, key: &Key, silent: bool) -> f64 {
    let n = 300;
    let (mut c, port, token) = raw_test(&s.addr, Some(key), stream_params(n));
    let t = Instant::now();
    let strays: Vec<TcpStream> = if silent {
        (0..8)
            .map(|_| TcpStream::connect(("127.0.0.1", port)).unwrap())
            .collect()
    } else {
        Vec::new()
    };
    let data: Vec<TcpStream> = (0..n).map(|i| data_conn(port, token, i)).collect();
    ready(&mut c);
    let took = t.elapsed().as_secs_f64();
    window_to_report(&mut c);
    c.send(&Msg::Stop {}).unwrap();
    drop((strays, data));
    took
}

#[test]
fn silent_connections_on_a_keyed_data_port_neither_slow_nor_fail_the_test() {
    let k = key_file();
    let s = Server::start("127.0.0.1", &["--auth-key", k.path.to_str().unwrap()]);
    let key = Key::load(&k.path).unwrap();
    let base = keyed_data_port(&s, &key, false);
    let with = keyed_data_port(&s, &key, true);
    eprintln!("ready after {base:.3} s without, {with:.3} s with 8 silent data connections");
    // Read one after another with 2 s each, 8 silent connections cost 16 s
    // (and failed the test at its 10 s deadline).
    assert!(
        with < base + 4.0,
        "8 silent data connections stretched the connect phase from {base:.2} s to {with:.2} s"
    );
}

#[test]
fn a_client_that_vanishes_after_accept_frees_the_endpoint_at_once() {
    let s = Server::start("127.0.0.1", &[]);
    // Asks for 5,000 data connections, then disappears without opening any.
    let (c, _, _) = raw_test(&s.addr, None, stream_params(5000));
    let t = Instant::now();
    drop(c);
    assert!(
        s.wait_log("closed its control connection", Duration::from_secs(20)),
        "{:?}",
        s.log.lock().unwrap()
    );
    let took = t.elapsed();
    eprintln!("a vanished client's test ended {took:?} after it left");
    assert!(
        took < Duration::from_secs(3),
        "the test ended after {took:?}"
    );
    served_at_once(&s.addr, None, "after a vanished client");

    // A real client whose --bind fails after accept.
    let before = s.log_count("session ended");
    let args = "--bind 192.0.2.1 --ramp 0s --time 1s --busy-wait 0s";
    net_fails(&net_args("stream", &s.addr, args), 1, "bind 192.0.2.1");
    session_ends_soon(&s, before);
    served_at_once(&s.addr, None, "after a client whose --bind failed");

    // A real client killed while it opens its connections.
    let mut victim = common::raw()
        .arg("net")
        .args(net_args(
            "stream",
            &s.addr,
            "--conns 5000 --ramp 0s --time 30s --quiet",
        ))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let seen = s.wait_count("5000 connection(s) accepted", 2);
    let before = s.log_count("session ended");
    victim.kill().unwrap();
    victim.wait().unwrap();
    assert!(seen, "{:?}", s.log.lock().unwrap());
    session_ends_soon(&s, before);
    served_at_once(&s.addr, None, "after a killed client");
}

/// The endpoint ends the session after the `before` ended ones within 8 s.
fn session_ends_soon(s: &Server, before: usize) {
    let t = Instant::now();
    s.wait_count("session ended", before + 1);
    assert!(
        t.elapsed() < Duration::from_secs(8),
        "the endpoint noticed only after {:?}: {:?}",
        t.elapsed(),
        s.log.lock().unwrap()
    );
}

#[test]
fn a_zero_handshake_timeout_is_refused() {
    cmd("net serve --listen 127.0.0.1:0 --handshake-timeout 0s")
        .timeout(Duration::from_secs(20))
        .fails(2, "--handshake-timeout must be positive");
}

#[test]
fn an_oversize_control_frame_gets_an_error_message() {
    let s = Server::start("127.0.0.1", &[]);
    let mut c = TcpStream::connect(&s.addr).unwrap();
    let hello = read_frame(&mut c, Duration::from_secs(10)).unwrap();
    assert_eq!(hello["type"], "hello");
    // Announces 4 GiB and starts sending the body.
    let mut f = vec![0xff, 0xff, 0xff, 0xff];
    f.extend_from_slice(&[b' '; 100_000]);
    let _ = c.write_all(&f);
    let e = read_frame(&mut c, Duration::from_secs(10)).unwrap();
    assert_eq!(e["type"], "error", "{e}");
    assert!(
        e["msg"]
            .as_str()
            .unwrap()
            .contains("exceeds the 65536-byte limit"),
        "{e}"
    );
    served_at_once(&s.addr, None, "after an over-size frame");
}
