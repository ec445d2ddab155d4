//! The listening socket of the endpoint (`net serve`) and of the agent.

use crate::{NetError, DEFAULT_PORT};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener};

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
