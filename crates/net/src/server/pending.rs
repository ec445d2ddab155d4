//! The connections in their handshake, as the accept loop sees them:
//! capped per source and in total (the oldest dropped first), and the
//! handshakes that failed, said once a while rather than one line each.

use super::SessionError;
use std::net::{IpAddr, Ipv6Addr, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Most connections that may be in their handshake at once from one source
/// (an IPv4 address, or an IPv6 /64) and in total; beyond them the oldest
/// is dropped, so a flood cannot exhaust descriptors or threads and a new
/// client always gets its turn.
pub const MAX_PENDING_PER_SOURCE: usize = 16;
pub const MAX_PENDING: usize = 128;

/// Where a connection is in its handshake (see [`Pending`]).
pub(super) const HS_OPEN: u8 = 0;
/// The client proved the key (only with a key): dropped only after every
/// unauthenticated one.
pub(super) const HS_AUTHED: u8 = 1;
/// The handshake is over: the connection holds the test slot, was told
/// busy, or was refused.
pub(super) const HS_DONE: u8 = 2;
/// Dropped by the endpoint to make room.
pub(super) const HS_DROPPED: u8 = 3;

/// A connection still in its handshake, as the accept loop sees it (and,
/// cloned, its own thread).
#[derive(Clone)]
pub(super) struct Pending {
    pub(super) source: IpAddr,
    pub(super) state: Arc<AtomicU8>,
    /// A second handle on the socket, to shut it down when dropped; the
    /// connection's thread closes it when the handshake ends, so it never
    /// keeps a finished connection open.
    pub(super) sock: Arc<Mutex<Option<TcpStream>>>,
}

pub(super) fn take_clone(sock: &Mutex<Option<TcpStream>>) -> Option<TcpStream> {
    sock.lock().unwrap_or_else(|p| p.into_inner()).take()
}

/// The source a per-source cap applies to: the IPv4 address, or the /64 of
/// an IPv6 one (one host usually owns a whole /64).
pub(super) fn source_of(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
    }
}

/// Drops the oldest pending handshake (of `source`, if given): unauthenticated
/// ones first. False when there was none to drop.
pub(super) fn drop_oldest(pending: &mut Vec<Pending>, source: Option<IpAddr>) -> bool {
    loop {
        let pick = [HS_OPEN, HS_AUTHED].into_iter().find_map(|want| {
            pending
                .iter()
                .position(|p| {
                    source.is_none_or(|s| p.source == s) && p.state.load(Ordering::Acquire) == want
                })
                .map(|i| (i, want))
        });
        let Some((i, want)) = pick else {
            return false;
        };
        match pending[i].state.compare_exchange(
            want,
            HS_DROPPED,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => {
                let p = pending.remove(i);
                if let Some(s) = take_clone(&p.sock) {
                    let _ = s.shutdown(std::net::Shutdown::Both);
                }
                return true;
            }
            // Its handshake ended meanwhile: room made all the same.
            Err(now) if now >= HS_DONE => {
                pending.remove(i);
                return true;
            }
            // It has just proven the key: choose again.
            Err(_) => {}
        }
    }
}

/// Makes room for one more pending handshake from `source`; returns how
/// many were dropped.
pub(super) fn make_room(pending: &mut Vec<Pending>, source: IpAddr) -> u64 {
    pending.retain(|p| p.state.load(Ordering::Acquire) < HS_DONE);
    let mut dropped = 0;
    while pending.iter().filter(|p| p.source == source).count() >= MAX_PENDING_PER_SOURCE
        && drop_oldest(pending, Some(source))
    {
        dropped += 1;
    }
    while pending.len() >= MAX_PENDING && drop_oldest(pending, None) {
        dropped += 1;
    }
    dropped
}

/// Handshakes that failed. The first after a quiet spell is said in full;
/// the rest of a flood are counted (each said only at debug level) and
/// summed up in one line once [`FAILED_EVERY`] has passed since the last
/// line, so a thousand failing connections take two lines, not a thousand.
#[derive(Default)]
pub(super) struct Failures(Mutex<Tally>);

#[derive(Default)]
struct Tally {
    said_at: Option<Instant>,
    more: u64,
    last: String,
}

pub(super) const FAILED_EVERY: Duration = Duration::from_secs(10);

impl Failures {
    fn tally(&self) -> std::sync::MutexGuard<'_, Tally> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn failed(&self, peer: SocketAddr, e: &SessionError) {
        let mut t = self.tally();
        let quiet = t.more == 0 && t.said_at.is_none_or(|at| at.elapsed() >= FAILED_EVERY);
        if quiet {
            t.said_at = Some(Instant::now());
            drop(t);
            tracing::warn!(%peer, "session ended: {e}");
        } else {
            t.more += 1;
            t.last = format!("{peer}: {e}");
            drop(t);
            tracing::debug!(%peer, "session ended: {e}");
        }
    }

    /// Sums up the failures counted since the last line, once it is time
    /// (or at once, when the endpoint stops).
    pub(super) fn summarise(&self, stopping: bool) {
        let mut t = self.tally();
        let due = stopping || t.said_at.is_none_or(|at| at.elapsed() >= FAILED_EVERY);
        if t.more == 0 || !due {
            return;
        }
        let (n, last) = (std::mem::take(&mut t.more), std::mem::take(&mut t.last));
        t.said_at = Some(Instant::now());
        drop(t);
        tracing::warn!(
            failed = n,
            "{n} more connection(s) ended in their handshake (the last: {last})"
        );
    }
}
