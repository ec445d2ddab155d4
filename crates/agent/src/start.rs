//! `iotoll agent`'s start-up: its targets, threads and key checked (the
//! key from stdin when an ssh session starts it) and its listener bound,
//! before it says where it listens; then the endpoint with the console
//! hook on that listener.

use crate::agent::{hook, parse_allow_target, pin_targets, AgentConfig};
use iotoll_net::auth::Key;
use iotoll_net::server::HANDSHAKE;
use iotoll_net::{Limits, NetError, ServerConfig, DEFAULT_PORT};
use std::io::BufRead;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The agent's configuration and its listener from its flags (`--listen`,
/// `--auth-key FILE|-`, each `--allow-target`, `--threads`), every one
/// checked; what the user fixes is [`NetError::Invalid`].
pub fn start(
    listen: Option<&str>,
    auth_key: Option<&str>,
    allow_targets: &[String],
    threads: Option<usize>,
) -> Result<(AgentConfig, TcpListener), NetError> {
    let usage = |e: &dyn std::fmt::Display| NetError::Invalid(e.to_string());
    let targets = (allow_targets.iter())
        .map(|t| parse_allow_target(t).map_err(NetError::Invalid))
        .collect::<Result<Vec<_>, _>>()?;
    // Pinned now to see a bad one at once; the hook pins them again as
    // the agent starts serving, and that pin is the one it holds to.
    let pins = pin_targets(&targets).into_iter();
    pins.collect::<Result<Vec<_>, _>>()
        .map_err(NetError::Invalid)?;
    if threads == Some(0) {
        return Err(usage(&"--threads must be positive"));
    }
    let key = match auth_key {
        None => None,
        Some("-") => Some(key_from_stdin().map_err(|e| usage(&e))?),
        Some(p) => Some(Key::load(std::path::Path::new(p)).map_err(|e| usage(&e))?),
    };
    let listener = bind(listen, key.is_some())?;
    Ok((
        AgentConfig {
            key,
            targets,
            threads,
        },
        listener,
    ))
}

/// The agent's listener: on `--listen`, else every address with a key
/// (IPv4 where this host has no IPv6) and loopback only without one.
fn bind(given: Option<&str>, keyed: bool) -> Result<TcpListener, NetError> {
    let given = given.map(|s| iotoll_net::resolve(s, DEFAULT_PORT));
    let loopback = SocketAddr::from((Ipv4Addr::LOCALHOST, DEFAULT_PORT));
    let given = given.transpose()?.or((!keyed).then_some(loopback));
    let ip = given.unwrap_or(iotoll_net::start::DEFAULT_LISTEN).ip();
    if !(keyed || ip.is_loopback()) {
        return Err(NetError::Invalid(format!(
            "an agent takes orders to run workloads: give --auth-key FILE to listen on {ip} (without a key it listens on loopback only)"
        )));
    }
    iotoll_net::start::bind(given)
}

/// A key that `--auth-key -` could not read from stdin.
#[derive(Debug, thiserror::Error)]
pub enum StdinKeyError {
    #[error("--auth-key -: no key on stdin")]
    Missing,
    #[error("--auth-key -: the key on stdin is {0} bytes; use at least 16")]
    Short(usize),
}

/// The key on the first line of stdin (never on a command line, where
/// `ps` would show it).
pub fn key_from_stdin() -> Result<Key, StdinKeyError> {
    let mut line = String::new();
    match std::io::stdin().lock().read_line(&mut line) {
        Ok(n) if n > 0 => {}
        _ => return Err(StdinKeyError::Missing),
    }
    match line.trim() {
        k if k.len() < 16 => Err(StdinKeyError::Short(k.len())),
        k => Ok(Key::from_bytes(k.as_bytes())),
    }
}

/// Sets `stop` when stdin closes: the ssh session (or whoever started the
/// agent) is gone.
pub fn stop_when_stdin_closes(stop: Arc<AtomicBool>) {
    std::thread::spawn(move || {
        let mut sink = String::new();
        let stdin = std::io::stdin();
        while stdin.lock().read_line(&mut sink).is_ok_and(|n| n > 0) {
            sink.clear();
        }
        stop.store(true, Ordering::Relaxed);
    });
}

/// Serves network tests and consoles' sessions on `listener` until `stop`.
pub fn serve(listener: TcpListener, cfg: AgentConfig, stop: &AtomicBool) -> Result<(), NetError> {
    let server = ServerConfig {
        // serve_on serves the listener as bound; this is only its label.
        listen: (listener.local_addr()).unwrap_or(iotoll_net::start::DEFAULT_LISTEN),
        key: cfg.key.clone(),
        once: false,
        limits: Limits::default(),
        threads: cfg.threads,
        handshake: HANDSHAKE,
        tls: true,
        console: Some(hook(cfg)),
    };
    iotoll_net::serve_on(listener, &server, stop)
}
