//! Agents, endpoints and consoles on loopback, for the agent crate's tests.
#![allow(dead_code)]

use iotoll_agent::link::{Event, Link};
use iotoll_agent::wire::{
    self, AllowedTarget, DiskOrder, FromAgent, OrderLine, Session, Side, ToAgent,
};
use iotoll_net::auth::Key;
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub fn key() -> Key {
    Key::from_bytes(b"console-test-key-0123456789")
}

/// An agent serving on an ephemeral loopback port, for the test's life.
pub fn agent(targets: Vec<AllowedTarget>) -> SocketAddr {
    let log: iotoll_net::server::Log = Arc::new(|_: &str| {});
    let hook = iotoll_agent::agent::hook(
        iotoll_agent::agent::AgentConfig {
            key: Some(key()),
            targets,
            threads: Some(1),
        },
        log,
    );
    endpoint(Some(hook))
}

/// The endpoint on an ephemeral loopback port, with console sessions
/// (an agent) or without (`net serve`), for the test's life.
pub fn endpoint(console: Option<iotoll_net::server::ConsoleHook>) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let cfg = iotoll_net::ServerConfig {
        listen: addr,
        key: Some(key()),
        once: false,
        limits: Default::default(),
        threads: Some(1),
        handshake: iotoll_net::server::HANDSHAKE,
        tls: false,
        console,
    };
    std::thread::spawn(move || {
        let stop = AtomicBool::new(false);
        let _ = iotoll_net::serve_on(l, &cfg, &stop, Arc::new(|_: &str| {}));
    });
    addr
}

pub fn allow(p: &std::path::Path, write: bool) -> AllowedTarget {
    AllowedTarget {
        path: p.display().to_string(),
        write,
    }
}

/// One line of `read`% reads, 4 KiB random, on a `size`-byte region.
pub fn disk_order(read: u32, size: u64) -> DiskOrder {
    DiskOrder {
        targets: vec![],
        spec_name: None,
        lines: vec![OrderLine {
            share_pct: 100,
            bs: 4096,
            read_pct: read,
            random_pct: 100,
            burst_delay_us: 0,
            burst_len: 1,
            align: None,
        }],
        qd: 4,
        workers: 1,
        spread: false,
        size: Some(size),
        offset: 0,
        engine: "auto".into(),
        buffered: true,
        ramp_ms: 200,
        time_ms: 1000,
        config: None,
    }
}

/// A console session opened by hand, to send an agent exactly the
/// messages a test wants, when it wants.
pub fn raw_console(addr: SocketAddr) -> Link<FromAgent> {
    let hs = iotoll_net::client::handshake(&addr, Some(&key())).unwrap();
    let mut ctl = hs.ctl;
    ctl.send(&iotoll_net::proto::Msg::Console {
        proto: wire::AGENT_PROTO,
    })
    .unwrap();
    let session = Session::new(Some(&key()), &hs.nonces, Side::Console);
    Link::start(ctl, session, ToAgent::Beat {}, |m, _, _| match m {
        FromAgent::Beat {} => None,
        m => Some(m),
    })
    .unwrap()
}

/// The next message `want` accepts (others skipped), within 60 s.
pub fn expect(link: &Link<FromAgent>, want: impl Fn(&FromAgent) -> bool) -> FromAgent {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(!left.is_zero(), "no such message within 60 s");
        match link.rx.recv_timeout(left) {
            Ok(Event::Msg(m, _)) if want(&m) => return m,
            Ok(Event::Msg(..)) => {}
            Ok(Event::Closed(why)) => panic!("session closed: {why}"),
            Err(e) => panic!("{e}"),
        }
    }
}
