//! Reaching an agent: the connection, the handshake and the console
//! session, and the check that the agent can work with this console.

use super::{Agent, HostSpec, REACH};
use crate::checks;
use crate::link::{Event, Link};
use crate::wire::{self, AgentInfo, FromAgent, Session, Side, ToAgent};
use iotoll_net::auth::Key;
use iotoll_net::proto::Msg;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// Connects, authenticates, opens the console session, asks who the agent
/// is and checks it can work with this console; all within [`REACH`].
pub(super) fn reach(h: &HostSpec, key: Option<&Key>) -> Result<Agent, String> {
    let (tx, rx) = std::sync::mpsc::channel();
    let (addr, key2) = (h.address, key.cloned());
    // The handshake has its own timeouts (5 s to connect, 10 s per
    // message); the console gives up at REACH whatever they say.
    std::thread::spawn(move || {
        let _ = tx.send(open_session(addr, key2.as_ref()));
    });
    let unreachable = |_| {
        let s = REACH.as_secs();
        format!("agent at {} unreachable: no answer within {s} s", h.address)
    };
    let link = rx.recv_timeout(REACH).map_err(unreachable)??;
    link.send(&ToAgent::Info {});
    let deadline = Instant::now() + REACH;
    let info = loop {
        match wait_msg(&link, deadline)? {
            FromAgent::Info { info } => break *info,
            FromAgent::Error { msg, .. } => return Err(format!("agent at {}: {msg}", h.address)),
            _ => {}
        }
    };
    compatible(&info)?;
    if info.cpus == 0 || info.cpus > checks::CPUS_MAX {
        return Err(format!(
            "agent at {} says it has {} CPUs: it is not what it says",
            h.address, info.cpus
        ));
    }
    Ok(Agent { link, info })
}

fn open_session(addr: SocketAddr, key: Option<&Key>) -> Result<Link<FromAgent>, String> {
    let hs = iotoll_net::client::handshake(&addr, key).map_err(|e| e.to_string())?;
    let mut ctl = hs.ctl;
    ctl.send(&Msg::Console {
        proto: wire::AGENT_PROTO,
    })
    .map_err(|e| format!("{addr}: {e}"))?;
    let session = Session::new(key, &hs.nonces, Side::Console);
    // An endpoint that is not an agent (`net serve`, or an iotoll from
    // before agents) answers with a plain protocol error: say so. Peeked,
    // so an agent's first frame stays for the session.
    let _ = ctl
        .stream
        .set_read_timeout(Some(Duration::from_millis(300)));
    let mut buf = vec![0u8; 4096];
    if let Ok(n) = ctl.stream.peek(&mut buf) {
        let body = buf.get(4..n).unwrap_or_default();
        if let Ok(Msg::Error { msg }) = ctl.open_peeked(body) {
            return Err(if msg.contains("unknown variant `console`") {
                format!(
                    "{addr} runs an iotoll endpoint ({}) that predates agents: run `iotoll agent` {} there",
                    hs.version,
                    iotoll_model::VERSION
                )
            } else {
                format!("{addr}: {msg}")
            });
        }
    }
    let _ = ctl.stream.set_read_timeout(None);
    Link::start(ctl, session, ToAgent::Beat {}, |m, _, _| match m {
        FromAgent::Beat {} => None,
        m => Some(m),
    })
    .map_err(|e| format!("{addr}: {e}"))
}

/// Whether an agent's iotoll can take this console's orders: the same
/// agent protocol, and the same major.minor version (0.x releases change
/// the protocol's messages).
pub(super) fn compatible(info: &AgentInfo) -> Result<(), String> {
    let mine = iotoll_model::VERSION;
    let series = |v: &str| v.split('.').take(2).collect::<Vec<_>>().join(".");
    if info.proto != wire::AGENT_PROTO || series(&info.version) != series(mine) {
        return Err(format!(
            "its agent runs iotoll {} (agent protocol {}), this console is iotoll {mine} (agent protocol {}): incompatible; run the same iotoll version on every host",
            info.version,
            info.proto,
            wire::AGENT_PROTO
        ));
    }
    Ok(())
}

/// The next message (beats are filtered out), or why none came by `deadline`.
pub(super) fn wait_msg(link: &Link<FromAgent>, deadline: Instant) -> Result<FromAgent, String> {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err("no answer in time".into());
        }
        match link.rx.recv_timeout(left.min(Duration::from_millis(100))) {
            Ok(Event::Msg(m, _)) => return Ok(m),
            Ok(Event::Closed(why)) => return Err(format!("connection lost: {why}")),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                if link.lost() {
                    return Err(format!(
                        "silent for {:.1} s",
                        link.silent_for().as_secs_f64()
                    ));
                }
            }
            Err(_) => return Err("connection lost".into()),
        }
    }
}
