//! The iSCSI engine: iotoll's own initiator (`crates/iscsi`) driving LUNs
//! over TCP, no kernel block layer between. One session per target of the
//! worker; `queue` encodes a SCSI command into the session's send buffer,
//! `submit_and_reap` flushes every session and polls their sockets until
//! enough commands completed, checking each command's timeout.

use super::{Buffers, Done, Engine, Request};
use iotoll_iscsi::{Config, Io, IscsiUrl, Session};
use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A LUN to drive, as prepared by `target::prepare`: where it is, how to
/// log in, and its block size (offsets and lengths are multiples of it).
#[derive(Debug, Clone)]
pub struct Lun {
    pub url: IscsiUrl,
    pub config: Arc<Config>,
    pub block: u32,
}

impl Lun {
    pub fn lun(&self) -> u64 {
        self.url.lun.unwrap_or(0)
    }

    /// Logs a session in to this LUN's target with `slots` task slots;
    /// `cancel` set gives up within 100 ms.
    pub fn login(
        &self,
        slots: usize,
        cancel: Option<&std::sync::atomic::AtomicBool>,
    ) -> Result<Session, iotoll_iscsi::Error> {
        let portal = self.url.portal();
        Session::login(&portal, &self.url.iqn, &self.config, slots, cancel)
    }
}

pub struct IscsiEngine {
    sessions: Vec<Session>,
    luns: Vec<Lun>,
    bufs: Buffers,
    depth: usize,
    /// Which session each slot's command went to.
    slot_session: Vec<usize>,
    pollfds: Vec<libc::pollfd>,
}

impl IscsiEngine {
    /// Logs in one session per LUN (in the worker's own thread, so the
    /// sockets and buffers belong to its CPU).
    pub fn new(luns: Vec<Lun>, depth: usize, bs: usize, seed: u64) -> io::Result<Self> {
        let bufs = Buffers::new(depth, bs, seed)?;
        let sessions = (luns.iter())
            .map(|l| l.login(depth, None))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(IscsiEngine {
            pollfds: Vec::with_capacity(sessions.len()),
            sessions,
            luns,
            bufs,
            depth,
            slot_session: vec![0; depth],
        })
    }
}

impl Engine for IscsiEngine {
    fn depth(&self) -> usize {
        self.depth
    }

    fn queue(&mut self, slot: usize, rq: Request) -> io::Result<()> {
        let (Some(session), Some(lun)) = (self.sessions.get_mut(rq.file), self.luns.get(rq.file))
        else {
            return Err(io::Error::other(format!(
                "no iSCSI session for target {}",
                rq.file
            )));
        };
        self.slot_session[slot] = rq.file;
        // SAFETY: the slot's buffer belongs to the engine and outlives the
        // session's use of it: a slot is not queued again before its
        // completion, and sessions are dropped before the buffers.
        unsafe {
            session.submit_io(
                slot,
                Io {
                    lun: lun.lun(),
                    read: rq.read,
                    offset: rq.offset,
                    len: rq.len as u32,
                    block: lun.block,
                },
                self.bufs.slot_ptr(slot),
            )?
        };
        Ok(())
    }

    fn submit_and_reap(&mut self, min: usize, done: Done) -> io::Result<()> {
        iotoll_iscsi::session::reap_all(&mut self.sessions, min, &mut self.pollfds, done)?;
        Ok(())
    }

    fn drain(&mut self) -> usize {
        // Commands cannot be taken back at ErrorRecoveryLevel 0 short of a
        // task management request; those in flight are waited for, briefly.
        let until = Instant::now() + Duration::from_secs(2);
        let mut n = 0;
        while Instant::now() < until && self.sessions.iter().any(|s| s.outstanding() > 0) {
            let mut step = 0;
            for s in &mut self.sessions {
                if s.reap(0, &mut |_, _| step += 1).is_err() {
                    return n;
                }
            }
            n += step;
            if step == 0 {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        n
    }

    fn explain(&self, slot: usize) -> Option<String> {
        let s = self.sessions.get(*self.slot_session.get(slot)?)?;
        s.explain(slot).map(str::to_string)
    }

    fn report(&self) -> Option<String> {
        let (mut waited, mut commands, mut min_window) = (0, 0, u32::MAX);
        let mut ua = 0;
        for s in &self.sessions {
            let st = s.stats();
            waited += st.waited;
            commands += st.commands;
            min_window = min_window.min(st.min_window);
            ua += st.unit_attentions;
        }
        let mut notes = Vec::new();
        if waited > 0 {
            notes.push(format!(
                "the target's command window, not --qd, limited the depth: {waited} of {commands} commands waited for it (smallest window {min_window} commands, below the {} slots asked)",
                self.depth / self.sessions.len().max(1)
            ));
        }
        // Every new session meets one (power on or reset) on its first
        // command: only more than that is news.
        let expected = self.sessions.len() as u64;
        if ua > expected {
            notes.push(format!(
                "{} command(s) met a UNIT ATTENTION (beyond the one each new session gets) and were retried",
                ua - expected
            ));
        }
        (!notes.is_empty()).then(|| notes.join("; "))
    }
}

impl Drop for IscsiEngine {
    fn drop(&mut self) {
        // A clean logout when nothing is outstanding; the buffers are freed
        // only after the sessions (fields drop in order, but the sessions
        // are taken first to make it explicit).
        for s in std::mem::take(&mut self.sessions) {
            let _ = s.logout();
        }
    }
}
