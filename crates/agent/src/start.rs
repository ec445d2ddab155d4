//! `iotoll agent`'s start-up: its targets, threads and key checked and its
//! listener bound, before it says where it listens.

use crate::agent::{parse_allow_target, pin_targets, AgentConfig};
use crate::serve::key_from_stdin;
use iotoll_net::auth::Key;
use iotoll_net::{NetError, DEFAULT_PORT};
use std::net::{Ipv4Addr, SocketAddr, TcpListener};

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
    let ip = given.unwrap_or(iotoll_net::listen::DEFAULT_LISTEN).ip();
    if !(keyed || ip.is_loopback()) {
        return Err(NetError::Invalid(format!(
            "an agent takes orders to run workloads: give --auth-key FILE to listen on {ip} (without a key it listens on loopback only)"
        )));
    }
    iotoll_net::listen::bind(given)
}
