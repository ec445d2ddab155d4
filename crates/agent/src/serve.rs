//! Running an agent as `iotoll agent` does: its key from stdin when an ssh
//! session starts it, and the endpoint with the console hook on a listener.

use crate::agent::{hook, AgentConfig};
use iotoll_net::auth::Key;
use iotoll_net::server::HANDSHAKE;
use iotoll_net::{Limits, NetError, ServerConfig};
use std::io::BufRead;
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

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
        listen: (listener.local_addr()).unwrap_or(iotoll_net::listen::DEFAULT_LISTEN),
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
