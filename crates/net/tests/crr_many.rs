//! A connection-rate test with 1,000 concurrent clients against an
//! endpoint in this process, on loopback: 1,000 worker threads at each end
//! of a shared 2-CPU machine. Only what holds however loaded the machine
//! is asserted: the endpoint does not give up while the workers start, and
//! both ends account for every connection (the client fails the test when
//! their totals disagree).

use iotoll_net::{ClientSpec, ServerConfig, TestKind};
use iotoll_run::{RunControl, Silent};
use std::net::TcpListener;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

fn endpoint() -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let cfg = ServerConfig {
        listen: addr,
        key: None,
        once: false,
        limits: Default::default(),
        threads: Some(1),
        handshake: iotoll_net::server::HANDSHAKE,
        tls: false,
        console: None,
    };
    std::thread::spawn(move || {
        let stop = AtomicBool::new(false);
        let _ = iotoll_net::serve_on(l, &cfg, &stop);
    });
    addr.to_string()
}

#[test]
fn a_thousand_clients_complete_with_every_connection_accounted_for() {
    let peer = endpoint();
    let spec = ClientSpec {
        peer,
        kind: TestKind::Crr,
        conns: 1000,
        // The reset close leaves no TIME_WAIT: a thousand clients on one
        // loopback address must not run out of ports on a slow machine.
        linger0: true,
        ramp: Duration::from_millis(500),
        time: Duration::from_secs(2),
        ..Default::default()
    };
    let stop = AtomicBool::new(false);
    let mut quiet = Silent;
    let rc = RunControl {
        interrupted: &stop,
        progress: &mut quiet,
        schedule: None,
    };
    let d = match iotoll_net::run(&spec, rc) {
        Ok(d) => d,
        // On a host this loaded (2,000 runnable threads on 2 CPUs) the
        // thread driving an end's window can be held up past the window
        // check's margin, and the test is then void by design; that check
        // comes after the ends' totals were found to agree, so every
        // connection was still accounted for at both ends.
        Err(iotoll_net::NetError::Failed { msg, doc }) if msg.contains("not of one window") => {
            eprintln!("void on this loaded host, the totals agreeing: {msg}");
            assert!(!msg.contains("disagree"), "{msg}");
            assert!(doc.metrics.get("conn_s").is_some_and(|r| *r > 0.0));
            return;
        }
        Err(e) => panic!("the test failed: {e}"),
    };
    let m = |k: &str| d.metrics.get(k).copied().unwrap_or(f64::NAN);
    assert_eq!(m("conns"), 1000.0);
    assert!(m("conn_s") > 0.0, "{:?}", d.notes);
    // Both ends measured the same window's connections, give or take
    // those in flight at its edges and the control round trip; beside
    // other processes that trip moves the endpoint's window by up to the
    // second the client accepts while the rate swings, and what holds is
    // the whole test's totals agreeing (the status).
    let (c, s) = (m("conn_s"), m("served_conn_s"));
    let interfered = d.interfered();
    assert!(
        (s - c).abs() <= 0.2 * c || (interfered && s > 0.0),
        "client {c}/s, endpoint {s}/s, not interfered with"
    );
}
