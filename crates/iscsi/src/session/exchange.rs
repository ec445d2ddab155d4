//! Requests and answers outside the full-feature phase (login, discovery,
//! logout): one PDU sent, the next one waited for, under one deadline for
//! the whole phase.

use super::{closed_err, protocol, secs};
use crate::conn::Conn;
use crate::pdu::{self, Bhs};
use crate::{Error, ErrorKind, Result};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The end of a login, a discovery or a logout, however the target paces
/// its answers: each must be over within the I/O timeout as a whole, not
/// per answer, or a target answering "more to come" just in time would hold
/// a login for its 8 rounds and a discovery for its 1,000.
pub(super) struct Deadline {
    until: Instant,
    total: Duration,
    /// PDUs received so far in the phase.
    answers: u32,
}

impl Deadline {
    pub(super) fn new(total: Duration) -> Deadline {
        Deadline {
            until: Instant::now() + total,
            total,
            answers: 0,
        }
    }
}

/// The most SendTargets text a discovery takes (thousands of targets): the
/// target's answer is joined in memory before it is decoded.
pub const MAX_DISCOVERY_TEXT: usize = 1 << 20;

/// One request and its answer, outside the full-feature phase (login,
/// discovery, logout): sends `bhs` with `data` and waits for the next PDU.
pub(super) fn exchange(
    conn: &mut Conn,
    bhs: Bhs,
    data: &[u8],
    dl: &mut Deadline,
    state: &str,
    cancel: Option<&AtomicBool>,
) -> Result<(Bhs, Vec<u8>)> {
    let digests = conn.dec.digests;
    pdu::encode(&mut conn.tx, bhs, data, digests);
    receive(conn, dl, state, cancel)
}

/// Sends what is queued and waits (until the phase's deadline) for the
/// next PDU, outside the full-feature phase.
pub(super) fn receive(
    conn: &mut Conn,
    dl: &mut Deadline,
    state: &str,
    cancel: Option<&AtomicBool>,
) -> Result<(Bhs, Vec<u8>)> {
    let until = dl.until;
    loop {
        conn.flush()
            .map_err(|e| closed_err(&conn.portal, state, &e))?;
        match conn.next_pdu() {
            Err(e) => return Err(protocol(&conn.portal, state, e)),
            Ok(Some((bhs, range, n))) => {
                let data = conn.rx()[range].to_vec();
                conn.consume(n);
                dl.answers += 1;
                return Ok((bhs, data));
            }
            Ok(None) => {}
        }
        if conn
            .fill()
            .map_err(|e| closed_err(&conn.portal, state, &e))?
        {
            continue;
        }
        // Woken every 100 ms to see whether the user gave up (Ctrl-C).
        let slice = until.min(Instant::now() + Duration::from_millis(100));
        conn.wait(slice)
            .map_err(|e| closed_err(&conn.portal, state, &e))?;
        if cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
            return Err(Error::new(
                ErrorKind::Interrupted,
                format!("iSCSI {}: interrupted during {state}", conn.portal),
            ));
        }
        // Checked whether or not bytes came: a PDU trickled in a byte at a
        // time does not hold the phase open either.
        if Instant::now() >= until {
            let msg = if dl.answers == 0 {
                format!(
                    "iSCSI {}: no answer within {} during {state}",
                    conn.portal,
                    secs(dl.total)
                )
            } else {
                format!(
                    "iSCSI {}: {state} did not finish within {}: the target answered {} time(s) without completing it (the I/O timeout bounds a whole login or discovery)",
                    conn.portal,
                    secs(dl.total),
                    dl.answers
                )
            };
            return Err(Error::new(ErrorKind::Timeout, msg));
        }
    }
}
