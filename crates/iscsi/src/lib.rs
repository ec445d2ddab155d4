//! The iSCSI initiator protocol (RFC 7143), ErrorRecoveryLevel 0, one
//! connection per session: the PDU codec, login with security and
//! operational negotiation, and a session with its command window. No
//! workload logic: the disk engine `engines/iscsi.rs` drives it.

pub mod chap;
mod conn;
pub mod inquiry;
pub mod pdu;
pub mod scsi;
pub mod session;
pub mod text;
pub mod url;

pub use session::{Config, Io, Session, SessionInfo};
pub use url::IscsiUrl;

/// What went wrong, for the exit code and for tests; the message names the
/// portal, the state (login stage, command, PDU type) and the cause.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// No TCP connection to the portal.
    Connect,
    /// The target refused the login (not found, not authorized, bad
    /// parameters).
    Login,
    /// CHAP failed, either way.
    Auth,
    /// The target did not answer within the timeout.
    Timeout,
    /// The target closed or reset the connection.
    Closed,
    /// The target broke the protocol (or rejected one of our PDUs).
    Protocol,
    /// A SCSI command failed (status and sense are in the message).
    Scsi,
    /// The caller gave up (Ctrl-C) while waiting for the target.
    Interrupted,
}

/// A result whose error is, unless said otherwise, an iSCSI [`Error`].
pub(crate) type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{msg}")]
pub struct Error {
    pub kind: ErrorKind,
    pub msg: String,
}

impl Error {
    pub fn new(kind: ErrorKind, msg: impl Into<String>) -> Self {
        Error {
            kind,
            msg: msg.into(),
        }
    }

    pub(crate) fn connect(portal: &str, why: impl std::fmt::Display) -> Self {
        Error::new(
            ErrorKind::Connect,
            format!("iSCSI portal {portal}: cannot connect: {why}"),
        )
    }
}

impl From<Error> for std::io::Error {
    fn from(e: Error) -> Self {
        std::io::Error::other(e.msg)
    }
}
