//! iotoll's network side: the endpoint server (`server`), the stream and
//! request/response clients (`client`), the event-driven data engine
//! (`engine`), the control protocol (`proto`) with pre-shared-key
//! authentication (`auth`); the network path is disclosed by
//! `iotoll_probe::sysinfo`.

pub mod auth;
pub mod client;
pub mod crr;
pub mod engine;
pub mod proto;
pub mod server;
pub mod sock;
pub mod start;
pub mod tls;
pub mod udp;

pub use client::{run, ClientSpec};
pub use proto::{Dir, TestKind};
pub use server::{serve_on, Limits, ServerConfig};

/// The default endpoint port.
pub const DEFAULT_PORT: u16 = 7575;

#[derive(Debug, thiserror::Error)]
pub enum NetError {
    /// The request itself is wrong: a usage error.
    #[error("{0}")]
    Invalid(String),
    #[error("{peer}: {msg}")]
    Peer { peer: String, msg: String },
    #[error("{peer} is busy with another test: {msg}")]
    Busy { peer: String, msg: String },
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Nofile(#[from] sock::NofileError),
    #[error("interrupted {0}; nothing was measured")]
    Interrupted(&'static str),
    /// The test ran but failed (an engine thread panicked, or connections
    /// failed beyond `client::tolerated_failures`): never a result. `doc`
    /// holds the partial figures, with status `failed`.
    #[error("{msg}")]
    Failed {
        msg: String,
        doc: Box<iotoll_model::ResultDoc>,
    },
    #[error(transparent)]
    Probe(#[from] iotoll_probe::ProbeError),
}

impl NetError {
    pub fn is_usage(&self) -> bool {
        matches!(self, NetError::Invalid(_))
    }

    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> NetError {
        NetError::Io {
            context: context.into(),
            source,
        }
    }
}

/// Resolves `HOST[:PORT]` (`[v6]:port`, a bare v6 address, a name) with
/// the default port.
pub fn resolve(spec: &str, default_port: u16) -> Result<std::net::SocketAddr, NetError> {
    use std::net::ToSocketAddrs;
    let s = spec.trim();
    if s.is_empty() {
        return Err(NetError::Invalid("empty address".into()));
    }
    let target = if let Ok(ip) = s.parse::<std::net::IpAddr>() {
        std::net::SocketAddr::new(ip, default_port).to_string()
    } else if (s.starts_with('[') && s.ends_with(']')) || !s.contains(':') {
        format!("{s}:{default_port}")
    } else {
        s.to_string()
    };
    let bad = |e: String| NetError::Invalid(format!("cannot resolve '{spec}': {e}"));
    target
        .to_socket_addrs()
        .map_err(|e| bad(e.to_string()))?
        .next()
        .ok_or_else(|| bad("no address".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses() {
        for (spec, want) in [
            ("127.0.0.1", "127.0.0.1:7575"),
            ("127.0.0.1:9", "127.0.0.1:9"),
            ("::1", "[::1]:7575"),
            ("[::1]", "[::1]:7575"),
            ("[::1]:80", "[::1]:80"),
        ] {
            assert_eq!(resolve(spec, 7575).unwrap().to_string(), want, "{spec}");
        }
        assert!(resolve("localhost", 7575).is_ok());
        assert!(resolve("", 7575).is_err());
        assert!(resolve("127.0.0.1:notaport", 7575).is_err());
    }
}
