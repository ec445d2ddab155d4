//! The iSCSI initiator protocol (RFC 7143), ErrorRecoveryLevel 0, one
//! connection per session: the PDU codec, login with security and
//! operational negotiation, and a session with its command window. No
//! workload logic: the disk engine `engines/iscsi.rs` drives it.

pub mod chap;
pub mod pdu;
pub mod scsi;
pub mod text;
pub mod url;
