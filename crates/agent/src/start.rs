//! `iotoll agent`'s start-up: its targets, threads and key checked and its
//! listener bound, before it says where it listens.

use crate::agent::{parse_allow_target, pin_targets, AgentConfig};
use crate::serve::key_from_stdin;
use iotoll_net::auth::Key;
use iotoll_net::{NetError, DEFAULT_PORT};
use std::net::{Ipv4Addr, SocketAddr, TcpListener};

/// The agent's flags, as given.
pub struct StartOptions<'a> {
    /// `--listen ADDR[:PORT]`.
    pub listen: Option<&'a str>,
    /// `--auth-key FILE|-`.
    pub auth_key: Option<&'a str>,
    /// `--allow-target PATH[:rw]`, each.
    pub allow_targets: &'a [String],
    pub threads: Option<usize>,
}

/// Why an agent could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The user's to fix on the command line.
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Net(#[from] NetError),
}

impl StartError {
    pub fn is_usage(&self) -> bool {
        match self {
            StartError::Usage(_) => true,
            StartError::Net(e) => e.is_usage(),
        }
    }
}

fn usage(e: impl std::fmt::Display) -> StartError {
    StartError::Usage(e.to_string())
}

/// The agent's configuration and its listener, every flag checked.
pub fn start(o: &StartOptions) -> Result<(AgentConfig, TcpListener), StartError> {
    let targets = (o.allow_targets.iter())
        .map(|t| parse_allow_target(t).map_err(StartError::Usage))
        .collect::<Result<Vec<_>, _>>()?;
    // Pinned now to see a bad one at once; the hook pins them again as
    // the agent starts serving, and that pin is the one it holds to.
    let pins = pin_targets(&targets).into_iter();
    pins.collect::<Result<Vec<_>, _>>()
        .map_err(StartError::Usage)?;
    if o.threads == Some(0) {
        return Err(usage("--threads must be positive"));
    }
    let key = match o.auth_key {
        None => None,
        Some("-") => Some(key_from_stdin().map_err(usage)?),
        Some(p) => Some(Key::load(std::path::Path::new(p)).map_err(usage)?),
    };
    let listener = listen(o.listen, key.is_some())?;
    let threads = o.threads;
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
fn listen(given: Option<&str>, keyed: bool) -> Result<TcpListener, StartError> {
    let given = given.map(|s| iotoll_net::resolve(s, DEFAULT_PORT));
    let loopback = SocketAddr::from((Ipv4Addr::LOCALHOST, DEFAULT_PORT));
    let given = given.transpose()?.or((!keyed).then_some(loopback));
    let ip = given.unwrap_or(iotoll_net::listen::DEFAULT_LISTEN).ip();
    if !(keyed || ip.is_loopback()) {
        return Err(usage(format!(
            "an agent takes orders to run workloads: give --auth-key FILE to listen on {ip} (without a key it listens on loopback only)"
        )));
    }
    Ok(iotoll_net::listen::bind(given)?)
}
