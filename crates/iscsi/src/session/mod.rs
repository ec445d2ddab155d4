//! A session: login (security and operational negotiation), then the
//! full-feature phase with its command window. One connection per session,
//! ErrorRecoveryLevel 0: any protocol fault ends the session with an error
//! that names the state it was in.
//!
//! The hot path (`submit`, `progress`) works on a non-blocking socket and
//! reused buffers: a command becomes a PDU encoded into the send buffer (its
//! immediate and unsolicited data copied behind it), Data-In is copied from
//! the receive buffer straight into the caller's I/O buffer, and the task
//! table is fixed at login. Nothing is allocated per I/O.
//!
//! `login.rs` holds the login stage by stage, `discover.rs` SendTargets,
//! `exchange.rs` the requests outside the full-feature phase, `window.rs`
//! what is sent (commands, the command window, Data-Out), `inbound.rs`
//! what the target sends, `task.rs` the task slots.

mod discover;
mod exchange;
mod inbound;
mod login;
mod task;
mod window;

use crate::conn::{self, secs, Conn};
pub use crate::conn::{MAX_SEGMENT, TX_LIMIT};
use crate::pdu::{op, CmdSn, Itt, LogoutRequest, StatSn};
use crate::{chap, scsi, text, Error, ErrorKind, Result};
pub use discover::discover;
pub use exchange::MAX_DISCOVERY_TEXT;
use exchange::{exchange, receive, Deadline};
use inbound::DirectIn;
use login::{login_phase, new_isid};
use std::collections::VecDeque;
use std::fmt::Write as _;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};
use task::{Task, Transfer};
pub use window::Io;

/// How a session is set up.
#[derive(Debug, Clone)]
pub struct Config {
    pub initiator_name: String,
    pub secrets: Option<chap::Secrets>,
    pub offer: text::Offer,
    /// Login, every command, logout: a target silent for this long ends the
    /// session with an error.
    pub timeout: Duration,
}

pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

impl Default for Config {
    fn default() -> Self {
        Config {
            initiator_name: default_initiator_name(),
            secrets: None,
            offer: text::Offer::default(),
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

/// `iqn.2026-11.org.iotoll:HOSTNAME`: the host is named so a target's logs
/// and ACLs can tell initiators apart.
pub fn default_initiator_name() -> String {
    let host: String = match nix::sys::utsname::uname() {
        Ok(u) => (u.nodename().to_string_lossy().chars())
            .map(|c| match c {
                'a'..='z' | 'A'..='Z' | '0'..='9' | '-' | '.' => c.to_ascii_lowercase(),
                _ => '-',
            })
            .collect(),
        Err(_) => "host".to_string(),
    };
    format!("iqn.2026-11.org.iotoll:{host}")
}

/// What a session negotiated, for the run's disclosure.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SessionInfo {
    pub portal: String,
    pub target: String,
    pub initiator: String,
    pub isid: String,
    pub tsih: u16,
    /// "None", "CHAP" or "CHAP (mutual)".
    pub auth: String,
    pub header_digest: String,
    pub data_digest: String,
    /// Every negotiated operational key with its result.
    pub negotiated: Vec<(String, String)>,
}

/// A target found by SendTargets discovery.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Discovered {
    pub name: String,
    /// TargetAddress values: `host:port,tpgt`.
    pub addresses: Vec<String>,
}

/// The command window as the I/Os saw it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WindowStats {
    /// Commands that had to wait because CmdSN was past MaxCmdSN.
    pub waited: u64,
    pub commands: u64,
    /// The smallest window (MaxCmdSN - ExpCmdSN + 1) seen in the
    /// full-feature phase.
    pub min_window: u32,
    /// Commands retried after a UNIT ATTENTION.
    pub unit_attentions: u64,
    /// Async messages of SCSI events (event 0) received.
    pub async_events: u64,
    /// Data-In payload bytes copied from the receive buffer into the I/O
    /// buffers, and bytes the socket read straight into them (large
    /// segments): together, every byte read.
    pub data_in_copied: u64,
    pub data_in_direct: u64,
}

/// Outcome of a command run to completion by [`Session::command`].
#[derive(Debug, Clone)]
pub struct CmdOutcome {
    pub status: u8,
    pub sense: Option<scsi::Sense>,
    pub data: Vec<u8>,
}

/// Told of each completed command: `(slot, result)`, the result the bytes
/// transferred or a negative errno.
pub type Done<'a> = &'a mut dyn FnMut(usize, i64);

/// Slots are 16 bits of the ITT; the other 16 are a generation, so a late
/// PDU for a reused slot is recognized as stale.
pub const MAX_SLOTS: usize = 0xffff;

/// A logged-in session with `slots` task slots, plus one for its own
/// commands (`command`).
pub struct Session {
    conn: Conn,
    pub info: SessionInfo,
    pub params: text::Params,
    timeout: Duration,
    cmd_sn: CmdSn,
    exp_cmd_sn: CmdSn,
    max_cmd_sn: CmdSn,
    exp_stat_sn: StatSn,
    tasks: Vec<Task>,
    /// Slots submitted but held back by the command window (or a full
    /// send buffer).
    waiting: VecDeque<usize>,
    /// Write data to send, in order; at most one unsolicited transfer and
    /// MaxOutstandingR2T answers per task, so bounded by the task table.
    transfers: VecDeque<Transfer>,
    /// PDUs are left unread until the send buffer has room again: the one
    /// at the front needs an answer (a NOP-Out) that would not fit.
    stalled: bool,
    /// A Data-In whose data segment is being read into its buffer.
    direct: Option<DirectIn>,
    live: usize,
    stats: WindowStats,
    now: Instant,
    last_scan: Instant,
    closed: bool,
}

// SAFETY: the raw buffer pointers in tasks are the caller's (see `submit`);
// a session is used by one thread at a time.
unsafe impl Send for Session {}

fn closed_err(portal: &str, state: &str, e: &std::io::Error) -> Error {
    use std::io::ErrorKind as K;
    let why = match e.kind() {
        K::UnexpectedEof | K::ConnectionReset | K::BrokenPipe | K::ConnectionAborted => {
            format!("the target closed the connection during {state}")
        }
        _ => format!("socket error during {state}: {e}"),
    };
    Error::new(ErrorKind::Closed, format!("iSCSI {portal}: {why}"))
}

fn protocol(portal: &str, state: &str, what: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorKind::Protocol,
        format!("iSCSI {portal}: protocol error during {state}: {what}"),
    )
}

fn digest_name(on: bool) -> String {
    if on { "CRC32C" } else { "None" }.to_string()
}

impl Session {
    /// Connects to `portal`, logs in to `target` and gets `slots` task slots
    /// ready; gives up (ErrorKind::Interrupted) within 100 ms of `cancel`
    /// being set, rather than at the timeout.
    pub fn login(
        portal: &str,
        target: &str,
        cfg: &Config,
        slots: usize,
        cancel: Option<&AtomicBool>,
    ) -> Result<Session> {
        let slots = slots.min(MAX_SLOTS - 1);
        let mut conn = Conn::connect(portal, cfg.timeout)?;
        let isid = new_isid()?;
        let li = login_phase(&mut conn, cfg, Some(target), isid, cancel)?;
        let p = &li.params;
        for (asked, got, which) in [
            (cfg.offer.header_digest, p.header_digest, "header"),
            (cfg.offer.data_digest, p.data_digest, "data"),
        ] {
            if asked && !got {
                return Err(Error::new(
                    ErrorKind::Login,
                    format!("iSCSI {portal}: the target refused CRC32C {which} digests (it answered None); drop --{which}-digest or enable digests on the target"),
                ));
            }
        }
        conn.dec.max_data = p.max_recv_dsl_initiator.max(512);
        let now = Instant::now();
        let transfers = (slots + 1) * (p.max_outstanding_r2t.min(16) as usize + 1);
        let info = SessionInfo {
            portal: portal.to_string(),
            target: target.to_string(),
            initiator: cfg.initiator_name.clone(),
            isid: hex::encode(isid),
            tsih: li.tsih,
            auth: li.auth,
            header_digest: digest_name(p.header_digest),
            data_digest: digest_name(p.data_digest),
            negotiated: text::params_pairs(p),
        };
        Ok(Session {
            conn,
            info,
            params: li.params,
            timeout: cfg.timeout,
            cmd_sn: li.cmd_sn,
            exp_cmd_sn: li.exp_cmd_sn,
            max_cmd_sn: li.max_cmd_sn,
            exp_stat_sn: li.exp_stat_sn,
            tasks: (0..=slots).map(|_| Task::new(now)).collect(),
            waiting: VecDeque::with_capacity(slots + 1),
            transfers: VecDeque::with_capacity(transfers),
            stalled: false,
            direct: None,
            live: 0,
            stats: WindowStats {
                min_window: u32::MAX,
                ..Default::default()
            },
            now,
            last_scan: now,
            closed: false,
        })
    }

    pub fn stats(&self) -> WindowStats {
        let mut s = self.stats;
        if s.min_window == u32::MAX {
            s.min_window = self.window();
        }
        s
    }

    /// MaxCmdSN - ExpCmdSN + 1: how many commands the target takes now.
    pub fn window(&self) -> u32 {
        self.max_cmd_sn
            .since(self.exp_cmd_sn)
            .wrapping_add(1)
            .min(1 << 31)
    }

    pub fn outstanding(&self) -> usize {
        self.live
    }

    pub fn pollfd(&self) -> libc::pollfd {
        conn::pollfd(self.conn.fd(), !self.stalled, self.conn.wants_write())
    }

    /// Bytes in the send buffer not yet taken by the socket: at most
    /// [`conn::TX_LIMIT`] and one PDU, whatever the target does.
    pub fn unsent(&self) -> usize {
        self.conn.unsent()
    }

    /// Why the I/O last completed on `slot` failed (status, sense), if it did.
    pub fn explain(&self, slot: usize) -> Option<&str> {
        self.tasks.get(slot).and_then(|t| t.error.as_deref())
    }

    /// A protocol error in the session's present state.
    fn fault(&self, what: impl std::fmt::Display) -> Error {
        protocol(&self.conn.portal, &self.state(), what)
    }

    /// The slot and task of the command outstanding longest.
    fn oldest(&self) -> Option<(usize, &Task)> {
        (self.tasks.iter().enumerate())
            .filter(|(_, t)| t.live)
            .min_by_key(|(_, t)| t.since)
    }

    fn state(&self) -> String {
        let mut s = String::from("the full-feature phase");
        if self.live > 0 {
            let _ = write!(s, " with {} command(s) outstanding", self.live);
            if let Some((slot, t)) = self.oldest() {
                let _ = write!(s, ", the oldest a {}", t.describe(slot));
            }
        }
        s
    }

    /// Progress until at least `min` commands completed (or none is left).
    pub fn reap(&mut self, min: usize, done: Done) -> Result<usize> {
        reap_all(
            std::slice::from_mut(self),
            min,
            &mut Vec::with_capacity(1),
            done,
        )
    }

    /// Runs one command to completion on the session's own slot (the last
    /// one): for INQUIRY, REPORT LUNS, READ CAPACITY. `data_in` is the
    /// allocation length of a command that returns data.
    pub fn command(&mut self, lun: u64, cdb: [u8; 16], data_in: u32) -> Result<CmdOutcome> {
        let slot = self.tasks.len() - 1;
        let mut buf = vec![0u8; data_in as usize];
        let lun = scsi::encode_lun(lun).map_err(|e| Error::new(ErrorKind::Scsi, e.to_string()))?;
        // SAFETY: buf lives until the command completes below, or the
        // session fails and is never used for it again.
        unsafe { self.submit(slot, lun, cdb, true, data_in, buf.as_mut_ptr())? };
        let mut res = None;
        while res.is_none() {
            self.reap(1, &mut |s, r| {
                if s == slot {
                    res = Some(r);
                }
            })?;
        }
        let t = &self.tasks[slot];
        let n = res.unwrap_or(0).max(0) as usize;
        buf.truncate(n.min(t.got as usize));
        Ok(CmdOutcome {
            status: t.status,
            sense: t.sense,
            data: buf,
        })
    }

    /// Runs `cdb` on `lun` and requires GOOD status: the data, or an error
    /// (kind `Scsi`) naming the command `what`, the status and the sense.
    pub fn command_ok(
        &mut self,
        lun: u64,
        cdb: [u8; 16],
        data_in: u32,
        what: &str,
    ) -> Result<Vec<u8>> {
        let out = self.command(lun, cdb, data_in)?;
        if out.status != scsi::STATUS_GOOD {
            let sense = out
                .sense
                .map(|s| format!(", sense {s}"))
                .unwrap_or_default();
            return Err(Error::new(
                ErrorKind::Scsi,
                format!(
                    "{what} of LUN {lun} failed: SCSI status {}{sense}",
                    scsi::status_name(out.status)
                ),
            ));
        }
        Ok(out.data)
    }

    pub fn inquiry(&mut self, lun: u64) -> Result<scsi::Inquiry> {
        let d = self.command_ok(lun, scsi::cdb16(&scsi::inquiry(96)), 96, "INQUIRY")?;
        scsi::Inquiry::parse(&d)
            .map_err(|e| Error::new(ErrorKind::Scsi, format!("INQUIRY of LUN {lun}: {e}")))
    }

    pub fn read_capacity(&mut self, lun: u64) -> Result<scsi::Capacity> {
        let what = "READ CAPACITY(16)";
        let d = self.command_ok(lun, scsi::read_capacity16(32), 32, what)?;
        scsi::Capacity::parse(&d)
            .map_err(|e| Error::new(ErrorKind::Scsi, format!("{what} of LUN {lun}: {e}")))
    }

    /// The target's LUNs (REPORT LUNS to LUN 0, which every target answers).
    pub fn report_luns(&mut self) -> Result<Vec<u64>> {
        let cdb = scsi::cdb16(&scsi::report_luns(16384));
        let d = self.command_ok(0, cdb, 16384, "REPORT LUNS")?;
        Ok(scsi::parse_report_luns(&d))
    }

    /// Logs out (when no command is outstanding) and closes the connection.
    pub fn logout(mut self) -> Result<()> {
        if self.closed || self.live > 0 {
            return Ok(());
        }
        self.closed = true;
        let req = LogoutRequest {
            itt: Itt(Itt::NONE.0 - 1),
            cmd_sn: self.cmd_sn,
            exp_stat_sn: self.exp_stat_sn,
        };
        let mut dl = Deadline::new(self.timeout.min(Duration::from_secs(5)));
        // A NOP-In may come first; the Logout Response ends it.
        let (mut bhs, _) = exchange(&mut self.conn, req.bhs(), &[], &mut dl, "logout", None)?;
        for _ in 0..16 {
            if bhs.opcode() == op::LOGOUT_RESP {
                return Ok(());
            }
            (bhs, _) = receive(&mut self.conn, &mut dl, "logout", None)?;
        }
        Err(protocol(&self.conn.portal, "logout", "no Logout Response"))
    }
}

/// Progress on all `sessions` until at least `min` commands completed
/// among them (or none is outstanding): their sockets are polled together,
/// waking at least every 100 ms to check every command's timeout. `fds` is
/// reused between calls, so the hot path does not allocate.
pub fn reap_all(
    sessions: &mut [Session],
    min: usize,
    fds: &mut Vec<libc::pollfd>,
    done: Done,
) -> Result<usize> {
    let mut n = 0;
    loop {
        for s in sessions.iter_mut() {
            n += s.progress(done)?;
        }
        if n >= min || sessions.iter().all(|s| s.live == 0) {
            return Ok(n);
        }
        fds.clear();
        fds.extend(sessions.iter().map(Session::pollfd));
        let until = Instant::now() + Duration::from_millis(100);
        conn::poll(fds, until).map_err(|e| {
            let s = &sessions[0];
            closed_err(&s.conn.portal, &s.state(), &e)
        })?;
        let now = Instant::now();
        for s in sessions.iter_mut() {
            s.check_timeout(now)?;
        }
    }
}
