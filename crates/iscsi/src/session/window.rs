//! The command window: commands submitted, held back while CmdSN is past
//! MaxCmdSN or the send buffer is full, encoded with their immediate data,
//! and the Data-Out that follows them; the numbers target PDUs carry.

use super::{closed_err, secs, Session, Task, Transfer, MAX_SEGMENT};
use crate::pdu::{self, Bhs, CmdSn, DataOut, DataSn, R2tSn, ScsiCommand, StatSn, Ttt};
use crate::{scsi, Error, ErrorKind, Result};
use std::time::{Duration, Instant};

/// One READ(16) or WRITE(16): `len` bytes at byte `offset` of `lun`,
/// both multiples of the block size `block`.
#[derive(Debug, Clone, Copy)]
pub struct Io {
    pub lun: u64,
    pub read: bool,
    pub offset: u64,
    pub len: u32,
    pub block: u32,
}

impl Session {
    /// Starts `io` on task `slot`.
    ///
    /// # Safety
    /// `buf` must be valid for `io.len` bytes (written for a read, read for
    /// a write) until the completion of `slot` is reported, or the session
    /// is dropped.
    pub unsafe fn submit_io(&mut self, slot: usize, io: Io, buf: *mut u8) -> Result<()> {
        let Io {
            lun,
            read,
            offset,
            len,
            block,
        } = io;
        let (lba, blocks) = (offset / block as u64, len / block);
        let cdb = if read {
            scsi::read16(lba, blocks)
        } else {
            scsi::write16(lba, blocks)
        };
        let lun = scsi::encode_lun(lun).map_err(|e| Error::new(ErrorKind::Scsi, e.to_string()))?;
        // SAFETY: forwarded from the caller.
        unsafe { self.submit(slot, lun, cdb, read, len, buf) }
    }

    /// Starts `cdb` on task `slot`.
    ///
    /// # Safety
    /// As for [`Session::submit_io`].
    pub unsafe fn submit(
        &mut self,
        slot: usize,
        lun: [u8; 8],
        cdb: [u8; 16],
        read: bool,
        len: u32,
        buf: *mut u8,
    ) -> Result<()> {
        // Not the time of the last `progress`: a session may have idled
        // since, longer than the timeout.
        self.now = Instant::now();
        let now = self.now;
        let Some(t) = self.tasks.get_mut(slot) else {
            return Err(Error::new(
                ErrorKind::Protocol,
                format!("no task slot {slot}"),
            ));
        };
        if t.live {
            return Err(Error::new(
                ErrorKind::Protocol,
                format!("task slot {slot} is busy"),
            ));
        }
        *t = Task {
            live: true,
            gen: t.gen.wrapping_add(1),
            read,
            lun,
            cdb,
            len,
            buf,
            ..Task::new(now)
        };
        self.live += 1;
        self.stats.commands += 1;
        let sn = self.cmd_sn.plus(self.waiting.len() as u32);
        let window_open = sn.not_after(self.max_cmd_sn);
        if self.waiting.is_empty() && window_open && self.conn.room() {
            self.send_command(slot);
        } else {
            // The window a login grants is often a single command, and it
            // opens with the first answer: only waits after that say the
            // target's window limits the depth.
            if !window_open && self.stats.min_window != u32::MAX {
                self.stats.waited += 1;
            }
            self.waiting.push_back(slot);
        }
        Ok(())
    }

    /// Encodes the command on `slot` (with its immediate data) into the
    /// send buffer, taking the next CmdSN; the data it may send
    /// unsolicited beyond that is queued as a transfer.
    fn send_command(&mut self, slot: usize) {
        let p = &self.params;
        let digests = self.conn.dec.digests;
        let t = &mut self.tasks[slot];
        let itt = t.itt(slot);
        let (mut imm, mut unsolicited) = (0u32, 0u32);
        if !t.read && t.len > 0 {
            let first = if p.immediate_data || !p.initial_r2t {
                t.len.min(p.first_burst)
            } else {
                0
            };
            if p.immediate_data {
                imm = first.min(p.max_recv_dsl_target).min(MAX_SEGMENT);
            }
            if !p.initial_r2t {
                unsolicited = first;
            }
        }
        t.sent = true;
        t.got = 0;
        t.data_sn = DataSn(0);
        t.r2t_sn = R2tSn(0);
        t.r2ts = 0;
        t.sent_to = imm.max(unsolicited);
        t.out = imm;
        let final_ = unsolicited <= imm;
        let bhs = ScsiCommand {
            itt,
            lun: t.lun,
            read: t.read,
            write: !t.read,
            final_,
            edtl: t.len,
            cmd_sn: self.cmd_sn,
            exp_stat_sn: self.exp_stat_sn,
            cdb: &t.cdb,
        }
        .bhs();
        self.cmd_sn = self.cmd_sn.next();
        // SAFETY: the buffer is valid for len bytes (submit's contract).
        let data = |off: u32, n: u32| unsafe {
            std::slice::from_raw_parts(t.buf.add(off as usize), n as usize)
        };
        pdu::encode(&mut self.conn.tx, bhs, data(0, imm), digests);
        // Unsolicited Data-Out, up to FirstBurstLength.
        if unsolicited > imm {
            t.queued += 1;
            self.transfers.push_back(Transfer {
                slot,
                itt,
                ttt: Ttt::NONE,
                off: imm,
                end: unsolicited,
                data_sn: DataSn(0),
                r2t: false,
            });
        }
    }

    /// Sends the commands held back by the window, as far as it and the
    /// send buffer now allow.
    fn launch_waiting(&mut self) {
        while self.cmd_sn.not_after(self.max_cmd_sn) && self.conn.room() {
            let Some(slot) = self.waiting.pop_front() else {
                break;
            };
            self.send_command(slot);
        }
    }

    /// Encodes queued Data-Out into the send buffer while it has room, in
    /// PDUs the target takes.
    fn pump(&mut self) {
        let digests = self.conn.dec.digests;
        let seg = self.params.max_recv_dsl_target.clamp(512, MAX_SEGMENT);
        while self.conn.room() {
            let Some(x) = self.transfers.front_mut() else {
                break;
            };
            // Transfers of a task leave the queue when it ends, so the slot
            // is live and its buffer valid.
            let t = &mut self.tasks[x.slot];
            let n = (x.end - x.off).min(seg);
            let last = x.off + n == x.end;
            let b = DataOut {
                itt: x.itt,
                ttt: x.ttt,
                lun: t.lun,
                exp_stat_sn: self.exp_stat_sn,
                data_sn: x.data_sn,
                offset: x.off,
                final_: last,
            }
            .bhs();
            // SAFETY: off + n <= end <= len, and buf is valid for len bytes
            // while the task is live (submit's contract).
            let d = unsafe { std::slice::from_raw_parts(t.buf.add(x.off as usize), n as usize) };
            pdu::encode(&mut self.conn.tx, b, d, digests);
            x.off += n;
            x.data_sn = x.data_sn.next();
            t.out += n;
            if last {
                if x.r2t {
                    t.r2ts = t.r2ts.saturating_sub(1);
                }
                t.queued = t.queued.saturating_sub(1);
                self.transfers.pop_front();
            }
        }
    }

    /// Drops what is still queued to send for the task on `slot`: it ended
    /// (the target may end a write before asking for all its data), and its
    /// buffer is the caller's again.
    pub(super) fn drop_transfers(&mut self, slot: usize) {
        let t = &mut self.tasks[slot];
        if t.queued > 0 {
            self.transfers.retain(|x| x.slot != slot);
        }
        t.queued = 0;
        t.r2ts = 0;
    }

    /// Sends all the socket takes now: waiting commands and queued
    /// Data-Out, through the bounded send buffer.
    pub(super) fn send(&mut self) -> Result<()> {
        loop {
            self.launch_waiting();
            self.pump();
            self.conn
                .flush()
                .map_err(|e| closed_err(&self.conn.portal, &self.state(), &e))?;
            // The socket took everything: there may be room for more.
            let more = !self.transfers.is_empty()
                || (!self.waiting.is_empty() && self.cmd_sn.not_after(self.max_cmd_sn));
            if self.conn.wants_write() || !more {
                return Ok(());
            }
        }
    }

    /// Takes the numbers a target PDU carries. A PDU with status must
    /// carry the StatSN expected: on one connection at ErrorRecoveryLevel 0
    /// statuses arrive in order and none can be asked for again, so any
    /// other value (a gap, a repeat, a jump of 2^31) is a lost, repeated or
    /// forged status (RFC 7143 §4.2.2.2 lets the initiator's tolerance be
    /// anything up to 2^31-1; iotoll's is 0).
    pub(super) fn note_sn(&mut self, b: &Bhs, has_status: bool) -> Result<()> {
        if has_status {
            let stat_sn = StatSn(b.stat_sn());
            if stat_sn != self.exp_stat_sn {
                let what = format!(
                    "{} (ITT 0x{:08x}) with StatSN {stat_sn}, where StatSN {} was next",
                    pdu::op_name(b.opcode()),
                    b.itt(),
                    self.exp_stat_sn
                );
                return Err(self.fault(what));
            }
            self.exp_stat_sn = stat_sn.next();
        }
        let (exp, max) = (CmdSn(b.exp_cmd_sn()), CmdSn(b.max_cmd_sn()));
        // MaxCmdSN below ExpCmdSN - 1 is invalid and ignored (§4.2.2.1).
        if !max.before(exp.prev()) {
            if self.exp_cmd_sn.before(exp) {
                self.exp_cmd_sn = exp;
            }
            if self.max_cmd_sn.before(max) {
                self.max_cmd_sn = max;
            }
            let w = self.window();
            if w < self.stats.min_window {
                self.stats.min_window = w;
            }
        }
        Ok(())
    }

    /// An error if the oldest outstanding command has waited longer than
    /// the timeout.
    pub fn check_timeout(&mut self, now: Instant) -> Result<()> {
        if self.live == 0 || now.duration_since(self.last_scan) < Duration::from_millis(100) {
            return Ok(());
        }
        self.last_scan = now;
        if let Some((slot, t)) = self.oldest() {
            if now.duration_since(t.since) > self.timeout {
                let waiting = if !self.waiting.contains(&slot) {
                    String::new()
                } else if !self.cmd_sn.not_after(self.max_cmd_sn) {
                    format!(
                        " (still waiting for the command window: CmdSN {} > MaxCmdSN {})",
                        self.cmd_sn, self.max_cmd_sn
                    )
                } else {
                    format!(
                        " (still waiting to be sent: the target has not taken the {} bytes queued before it)",
                        self.conn.unsent()
                    )
                };
                let e = Error::new(
                    ErrorKind::Timeout,
                    format!(
                        "iSCSI {}: no answer within {} to a {}{waiting}, with {} command(s) outstanding",
                        self.conn.portal,
                        secs(self.timeout),
                        t.describe(slot),
                        self.live
                    ),
                );
                self.closed = true;
                return Err(e);
            }
        }
        Ok(())
    }
}
