//! Agents, endpoints and consoles on loopback, for the agent crate's tests.
#![allow(dead_code)]

use iotoll_agent::link::{Event, Link};
use iotoll_agent::wire::{self, AllowedTarget, DiskOrder, FromAgent, Session, Side, ToAgent};
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
    let hook = iotoll_agent::agent::hook(iotoll_agent::agent::AgentConfig {
        key: Some(key()),
        targets,
        threads: Some(1),
    });
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
        let _ = iotoll_net::serve_on(l, &cfg, &stop);
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
    DiskOrder::from_spec(&iotoll_disk::DiskRequest {
        lines: vec![iotoll_disk::AccessLine::new(100, 4096, read, 100)],
        qd: 4,
        size: Some(size),
        buffered: true,
        ramp: Duration::from_millis(200),
        time: Duration::from_secs(1),
        ..Default::default()
    })
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

/// What a hostile agent's relay does to the messages passing it: each of
/// the agent's becomes what `from_agent` returns (none, itself, or more),
/// each of the console's what `to_agent` returns.
pub struct Rewrite {
    pub from_agent: Box<dyn FnMut(FromAgent) -> Vec<FromAgent> + Send>,
    pub to_agent: Box<dyn FnMut(ToAgent) -> ToAgent + Send>,
}

impl Rewrite {
    /// Rewrites what the agent sends; what the console sends passes.
    pub fn from_agent(f: impl FnMut(FromAgent) -> Vec<FromAgent> + Send + 'static) -> Rewrite {
        Rewrite {
            from_agent: Box::new(f),
            to_agent: Box::new(|m| m),
        }
    }

    pub fn reports(
        mut f: impl FnMut(&mut iotoll_agent::wire::AgentReport) + Send + 'static,
    ) -> Rewrite {
        Rewrite {
            from_agent: Box::new(move |m| match m {
                FromAgent::Report { test, mut report } => {
                    f(&mut report);
                    vec![FromAgent::Report { test, report }]
                }
                m => vec![m],
            }),
            to_agent: Box::new(|m| m),
        }
    }
}

/// A hostile agent: a real agent allowing `targets`, behind a relay that
/// holds the key. The relay ends the console's session as an agent and
/// opens its own to the real agent as a console, opens every frame each
/// way, lets `make()`'s rewrite change it, and seals it again: the
/// console sees an authenticated agent that says whatever the test wants.
pub fn hostile_agent(
    targets: Vec<AllowedTarget>,
    make: impl Fn() -> Rewrite + Send + Sync + 'static,
) -> SocketAddr {
    use iotoll_net::proto::Control;
    let real = agent(targets);
    let hook = iotoll_net::server::ConsoleHook(Arc::new(
        move |down: Control, _peer, nonces: iotoll_net::server::Nonces| {
            let Rewrite {
                mut from_agent,
                mut to_agent,
            } = make();
            let Ok(hs) = iotoll_net::client::handshake(&real, Some(&key())) else {
                return;
            };
            let mut up = hs.ctl;
            let proto = wire::AGENT_PROTO;
            if up.send(&iotoll_net::proto::Msg::Console { proto }).is_err() {
                return;
            }
            let mut from_console = Session::new(Some(&key()), &nonces, Side::Agent);
            let mut to_console = from_console.clone();
            let mut from_real = Session::new(Some(&key()), &hs.nonces, Side::Console);
            let mut to_real = from_real.clone();
            let (Ok(down_w), Ok(up_w)) = (down.stream.try_clone(), up.stream.try_clone()) else {
                return;
            };
            let (Ok(mut down_w), Ok(mut up_w)) = (Control::new(down_w), Control::new(up_w)) else {
                return;
            };
            let day = Duration::from_secs(86_400);
            let mut down_r = down;
            let console_side = std::thread::spawn(move || {
                while let Ok(f) = wire::recv_frame(&mut down_r, day) {
                    let Ok(m) = from_console.open::<ToAgent>(&f) else {
                        break;
                    };
                    if up_w.send_frame(&to_real.seal(&to_agent(m))).is_err() {
                        break;
                    }
                }
                let _ = up_w.stream.shutdown(std::net::Shutdown::Both);
            });
            while let Ok(f) = wire::recv_frame(&mut up, day) {
                let Ok(m) = from_real.open::<FromAgent>(&f) else {
                    break;
                };
                for m in from_agent(m) {
                    let _ = down_w.send_frame(&to_console.seal(&m));
                }
            }
            let _ = down_w.stream.shutdown(std::net::Shutdown::Both);
            let _ = console_side.join();
        },
    ));
    endpoint(Some(hook))
}

pub fn host(name: &str, address: SocketAddr) -> iotoll_agent::console::HostSpec {
    iotoll_agent::console::HostSpec {
        name: name.into(),
        address,
        data: vec![],
    }
}

/// A bidirectional stream test of `conns` connections per direction.
/// A request/response test of `conns` connections per pair.
#[allow(dead_code)]
pub fn rr(conns: u32) -> iotoll_net::proto::TestParams {
    iotoll_net::proto::TestParams {
        kind: iotoll_net::proto::TestKind::Rr,
        dir: iotoll_net::proto::Dir::Tx,
        msg: 1,
        ..stream(conns)
    }
}

/// A UDP test of `conns` flows per pair, each pair's client sending at
/// `rate` bits per second.
#[allow(dead_code)]
pub fn udp(conns: u32, rate: u64) -> iotoll_net::proto::TestParams {
    iotoll_net::proto::TestParams {
        kind: iotoll_net::proto::TestKind::Udp,
        dir: iotoll_net::proto::Dir::Tx,
        msg: 1000,
        rate: Some(rate),
        ..stream(conns)
    }
}

/// A connection-rate test (`kind` crr or cc) of `conns` concurrent
/// clients per pair, 1-byte request and response.
#[allow(dead_code)]
pub fn rate(kind: iotoll_net::proto::TestKind, conns: u32) -> iotoll_net::proto::TestParams {
    iotoll_net::proto::TestParams {
        kind,
        dir: iotoll_net::proto::Dir::Tx,
        msg: 1,
        ..stream(conns)
    }
}

pub fn stream(conns: u32) -> iotoll_net::proto::TestParams {
    iotoll_net::proto::TestParams {
        kind: iotoll_net::proto::TestKind::Stream,
        dir: iotoll_net::proto::Dir::Bidir,
        conns,
        msg: 65536,
        sockbuf: None,
        nodelay: false,
        req: 1,
        resp: 1,
        burst: 1,
        ramp_ms: 300,
        time_ms: 1000,
        tls: None,
        verify: false,
        rate: None,
        udp_ports: Vec::new(),
        linger0: false,
    }
}
