//! `iotoll net serve`'s start-up: its limits checked, its key read and
//! its listener bound (the agent's listener too).

use crate::auth::Key;
use crate::{Limits, NetError, ServerConfig, DEFAULT_PORT};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener};
use std::path::Path;
use std::time::Duration;

/// Where a listener goes when no address is given: every IPv6 and IPv4
/// address.
pub const DEFAULT_LISTEN: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V6(Ipv6Addr::UNSPECIFIED), DEFAULT_PORT);

/// A listener on `given`, else on [`DEFAULT_LISTEN`], or on every IPv4
/// address where this host has no IPv6.
pub fn bind(given: Option<SocketAddr>) -> Result<TcpListener, NetError> {
    let at = given.unwrap_or(DEFAULT_LISTEN);
    match TcpListener::bind(at) {
        Ok(l) => Ok(l),
        Err(_) if given.is_none() => {
            let v4 = SocketAddr::from((Ipv4Addr::UNSPECIFIED, DEFAULT_PORT));
            TcpListener::bind(v4).map_err(|e| NetError::io(format!("cannot listen on {v4}"), e))
        }
        Err(e) => Err(NetError::io(format!("cannot listen on {at}"), e)),
    }
}

/// The endpoint's flags, as given.
pub struct ServeOptions<'a> {
    /// `--listen ADDR[:PORT]`.
    pub listen: Option<&'a str>,
    pub auth_key: Option<&'a Path>,
    pub once: bool,
    pub limits: Limits,
    /// `--handshake-timeout`.
    pub handshake: Duration,
    /// Runs tests that ask for TLS (not `--no-tls`).
    pub tls: bool,
}

/// The endpoint's configuration and its listener, every flag checked.
pub fn start(o: &ServeOptions) -> Result<(ServerConfig, TcpListener), NetError> {
    let given = o
        .listen
        .map(|s| crate::resolve(s, DEFAULT_PORT))
        .transpose()?;
    if o.handshake.is_zero() {
        return Err(NetError::Invalid(
            "--handshake-timeout must be positive (0s would refuse every client)".into(),
        ));
    }
    let l = &o.limits;
    if l.max_conns == 0 || l.max_msg == 0 || l.max_time.is_zero() {
        return Err(NetError::Invalid(
            "--max-conns, --max-msg and --max-time must be positive".into(),
        ));
    }
    let key = o.auth_key.map(Key::load).transpose();
    let cfg = ServerConfig {
        listen: given.unwrap_or(DEFAULT_LISTEN),
        key: key.map_err(|e| NetError::Invalid(e.to_string()))?,
        once: o.once,
        limits: o.limits,
        threads: None,
        handshake: o.handshake,
        tls: o.tls,
        console: None,
    };
    Ok((cfg, bind(given)?))
}
