//! What the target sends in the full-feature phase: Data-In into the
//! caller's buffers, SCSI Responses, R2Ts, pings, Async messages and
//! Rejects, each checked against the task it names.

use super::{closed_err, Done, Session, Transfer};
use crate::conn::DIRECT_MIN;
use crate::pdu::{self, op, Bhs, DataSn, In, Itt, NopOut, PduError, R2tSn, Residual, Ttt};
use crate::{scsi, Error, ErrorKind, Result};
use std::fmt::Write as _;
use std::ops::Range;
use std::time::Instant;

/// A Data-In whose data segment is being read straight into its read's
/// buffer: what its header said, for when the segment is in.
#[derive(Clone, Copy)]
pub(super) struct DirectIn {
    slot: usize,
    offset: u32,
    len: u32,
    status: Option<u8>,
    residual: Residual,
}

impl Session {
    /// The slot of the outstanding command `itt` names; a PDU of kind
    /// `what` for any other ITT is a protocol error.
    fn task_of(&self, itt: Itt, what: u8) -> Result<usize> {
        let slot = (itt.0 & 0xffff) as usize;
        match self.tasks.get(slot) {
            Some(t) if t.live && t.sent && t.itt(slot) == itt => Ok(slot),
            _ => Err(self.fault(format!(
                "{} for ITT 0x{itt:08x}, which names no outstanding command",
                pdu::op_name(what)
            ))),
        }
    }

    /// A task is over: its slot is free again, and `done` hears of it
    /// (bytes transferred, or a negative errno with the reason kept for
    /// `explain`).
    fn finish(&mut self, slot: usize, residual: Residual, done: Done) {
        self.drop_transfers(slot);
        let t = &mut self.tasks[slot];
        t.live = false;
        self.live -= 1;
        let res = if t.status == scsi::STATUS_GOOD {
            let short = if residual.underflow {
                residual.count.min(t.len)
            } else {
                0
            };
            // An I/O counts the bytes that really moved, each once: a read
            // what arrived, a write what was sent. A target that sends
            // less than it claims, or answers GOOD before it took the data
            // it asked for, makes a short I/O, not a full one.
            let want = t.len - short;
            let moved = if t.read { t.got } else { t.out };
            if !t.read && moved < want {
                t.error = Some(format!(
                    "{}: the target answered GOOD with {moved} of its {want} bytes sent (it did not wait for the data it asked for)",
                    t.describe(slot)
                ));
            }
            moved.min(want) as i64
        } else {
            let mut why = format!(
                "{}: SCSI status {}",
                t.describe(slot),
                scsi::status_name(t.status)
            );
            if let Some(s) = &t.sense {
                let _ = write!(why, ", sense {s}");
            }
            t.error = Some(why);
            -(libc::EIO as i64)
        };
        done(slot, res);
    }

    fn handle(&mut self, bhs: Bhs, data: Range<usize>, done: Done) -> Result<()> {
        let parsed = pdu::parse_in(&bhs).map_err(|e| self.fault(e))?;
        match parsed {
            In::DataIn {
                itt,
                status,
                residual,
                offset,
                data_sn,
                ..
            } => {
                self.note_sn(&bhs, status.is_some())?;
                let slot = self.task_of(itt, op::DATA_IN)?;
                let n = data.len() as u32;
                self.check_data_in(slot, n, offset, data_sn)?;
                self.conn.large = data.len() >= DIRECT_MIN;
                let t = &mut self.tasks[slot];
                // SAFETY: offset + n <= len (checked), and buf is valid for
                // len bytes while the task is live (submit's contract).
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        self.conn.rx()[data].as_ptr(),
                        t.buf.add(offset as usize),
                        n as usize,
                    );
                }
                t.got += n;
                self.stats.data_in_copied += n as u64;
                if let Some(s) = status {
                    self.tasks[slot].status = s;
                    self.finish(slot, residual, done);
                }
            }
            In::ScsiResponse {
                itt,
                response,
                status,
                residual,
                ..
            } => {
                self.note_sn(&bhs, true)?;
                let slot = self.task_of(itt, op::SCSI_RESPONSE)?;
                self.scsi_response(slot, data, response, status, residual, done);
            }
            In::R2T {
                itt,
                ttt,
                r2t_sn,
                offset,
                len,
                ..
            } => {
                self.note_sn(&bhs, false)?;
                let slot = self.task_of(itt, op::R2T)?;
                self.r2t(slot, ttt, r2t_sn, offset, len)?;
            }
            In::NopIn { itt, ttt, lun, .. } => {
                self.note_sn(&bhs, itt != Itt::NONE)?;
                if ttt != Ttt::NONE {
                    // The target pings: answer at once, without a CmdSN.
                    let b = NopOut {
                        itt: Itt::NONE,
                        ttt,
                        lun,
                        cmd_sn: self.cmd_sn,
                        exp_stat_sn: self.exp_stat_sn,
                    };
                    pdu::encode(&mut self.conn.tx, b.bhs(), &[], self.conn.dec.digests);
                }
            }
            In::Async {
                event,
                code,
                params,
                ..
            } => {
                self.note_sn(&bhs, true)?;
                self.async_message(event, code, params)?;
            }
            In::Reject { reason, .. } => {
                self.note_sn(&bhs, true)?;
                return Err(self.rejected(data, reason));
            }
            _ => {
                let what = format!(
                    "unexpected {} in the full-feature phase",
                    pdu::op_name(bhs.opcode())
                );
                return Err(self.fault(what));
            }
        }
        Ok(())
    }

    /// Checks that `n` bytes of Data-In at `offset` for the read on `slot`
    /// are the next in order and inside the read, and counts the PDU.
    fn check_data_in(&mut self, slot: usize, n: u32, offset: u32, data_sn: DataSn) -> Result<()> {
        let t = &mut self.tasks[slot];
        let bad = if !t.read || offset.checked_add(n).is_none_or(|end| end > t.len) {
            Some(format!(
                "Data-In of {n} bytes at offset {offset} for a {} of {} bytes",
                t.describe(slot),
                t.len
            ))
        } else if data_sn != t.data_sn {
            Some(format!(
                "Data-In with DataSN {data_sn} for a {}, where DataSN {} was next (a Data-In PDU was lost, repeated or reordered)",
                t.describe(slot),
                t.data_sn
            ))
        } else if n > 0 && offset != t.got {
            // DataPDUInOrder=Yes and DataSequenceInOrder=Yes (both
            // always negotiated): the data comes in order, each
            // byte once, so a read has all its bytes exactly when
            // `got` reaches its length.
            Some(format!(
                "Data-In of {n} bytes at offset {offset} for a {}, where offset {} was next (DataPDUInOrder=Yes: each byte once, in order)",
                t.describe(slot),
                t.got
            ))
        } else {
            None
        };
        if let Some(what) = bad {
            return Err(self.fault(what));
        }
        t.data_sn = t.data_sn.next();
        Ok(())
    }

    /// The PDU at the front is a Data-In with a large data segment not all
    /// received yet: checked like any Data-In, then its segment is read
    /// straight into the read's buffer (see `end_direct`). False for any
    /// other PDU, left to the whole-PDU path.
    fn start_direct(&mut self) -> Result<bool> {
        let header = self.conn.header().map_err(|e| self.fault(e))?;
        let Some((bhs, hdr, _)) = header else {
            return Ok(false);
        };
        let len = bhs.data_len();
        if bhs.opcode() != op::DATA_IN || (len as usize) < DIRECT_MIN {
            return Ok(false);
        }
        let parsed = pdu::parse_in(&bhs).map_err(|e| self.fault(e))?;
        let In::DataIn {
            itt,
            status,
            residual,
            offset,
            data_sn,
            ..
        } = parsed
        else {
            return Ok(false);
        };
        self.note_sn(&bhs, status.is_some())?;
        let slot = self.task_of(itt, op::DATA_IN)?;
        self.check_data_in(slot, len, offset, data_sn)?;
        // SAFETY: offset + len <= the read's length (checked), buf is valid
        // for it while the task is live (submit's contract), and the task
        // stays live until `end_direct`: no other PDU is read before.
        let copied = unsafe {
            let dst = self.tasks[slot].buf.add(offset as usize);
            self.conn.read_into(hdr, dst, len as usize)
        };
        self.stats.data_in_copied += copied as u64;
        self.stats.data_in_direct += (len as usize - copied) as u64;
        self.direct = Some(DirectIn {
            slot,
            offset,
            len,
            status,
            residual,
        });
        Ok(true)
    }

    /// Ends the Data-In `d` once its segment and its padding and digest are
    /// in: the digest checked over the segment where it landed. False while
    /// bytes are still to come.
    fn end_direct(&mut self, d: DirectIn, done: Done) -> Result<bool> {
        let pad = pdu::pad4(d.len as usize);
        let digest = self.conn.dec.digests.data;
        let tail = pad + if digest { 4 } else { 0 };
        let rx = self.conn.received();
        if self.conn.direct_left() > 0 || rx.len() < tail {
            return Ok(false);
        }
        if digest {
            let t = &self.tasks[d.slot];
            // SAFETY: the segment was read into buf[offset..offset + len],
            // inside the read (checked at `start_direct`).
            let seg =
                unsafe { std::slice::from_raw_parts(t.buf.add(d.offset as usize), d.len as usize) };
            let crc = crc32c::crc32c_append(crc32c::crc32c(seg), &rx[..pad]);
            if crc.to_le_bytes()[..] != rx[pad..tail] {
                return Err(self.fault(PduError::DataDigest(pdu::op_name(op::DATA_IN))));
            }
        }
        self.conn.consume(tail);
        self.direct = None;
        self.tasks[d.slot].got += d.len;
        if let Some(s) = d.status {
            self.tasks[d.slot].status = s;
            self.finish(d.slot, d.residual, done);
        }
        Ok(true)
    }

    /// The SCSI Response that ends the command on `slot`, unless it is a
    /// unit attention to run it again after.
    fn scsi_response(
        &mut self,
        slot: usize,
        data: Range<usize>,
        response: u8,
        status: u8,
        residual: Residual,
        done: Done,
    ) {
        let sense = if status == scsi::STATUS_CHECK_CONDITION {
            scsi::parse_iscsi_sense(&self.conn.rx()[data])
        } else {
            None
        };
        self.drop_transfers(slot);
        let t = &mut self.tasks[slot];
        if response != 0 {
            t.status = 0xff;
            t.error = Some(format!(
                "{}: the target failed the command (iSCSI response 0x{response:02x})",
                t.describe(slot)
            ));
            t.live = false;
            self.live -= 1;
            done(slot, -(libc::EIO as i64));
            return;
        }
        if sense.is_some_and(|s| s.key == scsi::SENSE_UNIT_ATTENTION) && t.retries < 3 {
            // A unit attention (reset, LUN inventory changed) is a
            // notice, not a failure: the command runs again.
            t.retries += 1;
            t.sent = false;
            self.stats.unit_attentions += 1;
            self.waiting.push_front(slot);
            return;
        }
        t.status = status;
        t.sense = sense;
        self.finish(slot, residual, done);
    }

    /// An R2T for the write on `slot`: checked against what the write
    /// sent and the negotiated limits, then queued as a transfer.
    fn r2t(&mut self, slot: usize, ttt: Ttt, r2t_sn: R2tSn, offset: u32, len: u32) -> Result<()> {
        let (max_burst, max_r2t) = (self.params.max_burst, self.params.max_outstanding_r2t);
        let t = &mut self.tasks[slot];
        // What is wrong with it, after "R2T ... of a WRITE(16) ...".
        let why = if t.read || offset.checked_add(len).is_none_or(|end| end > t.len) {
            Some(format!(" of {} bytes", t.len))
        } else if r2t_sn != t.r2t_sn {
            Some(format!(", where R2TSN {} was next", t.r2t_sn))
        } else if offset < t.sent_to {
            // DataSequenceInOrder=Yes, ErrorRecoveryLevel 0: no
            // range is asked for twice, nor one sent unsolicited.
            Some(format!(
                ", whose bytes up to offset {} were already sent or asked for",
                t.sent_to
            ))
        } else if len == 0 || len > max_burst {
            Some(format!(
                ": an R2T may ask for 1 to MaxBurstLength ({max_burst}) bytes"
            ))
        } else if t.r2ts >= max_r2t {
            Some(format!(
                ", while {} R2T(s) of it are still being answered (MaxOutstandingR2T={max_r2t})",
                t.r2ts
            ))
        } else {
            None
        };
        if let Some(why) = why {
            let asks = format!("R2T (R2TSN {r2t_sn}) for {len} bytes at offset {offset}");
            let what = format!("{asks} of a {}{why}", t.describe(slot));
            return Err(self.fault(what));
        }
        t.r2t_sn = t.r2t_sn.next();
        t.sent_to = offset + len;
        t.r2ts += 1;
        t.queued += 1;
        let itt = t.itt(slot);
        self.transfers.push_back(Transfer {
            slot,
            itt,
            ttt,
            off: offset,
            end: offset + len,
            data_sn: DataSn(0),
            r2t: true,
        });
        Ok(())
    }

    /// An Async message: SCSI events are counted, the rest end the session.
    fn async_message(&mut self, event: u8, code: u8, params: [u16; 3]) -> Result<()> {
        let portal = &self.conn.portal;
        match event {
            0 => self.stats.async_events += 1,
            255 => {}
            1 => {
                return Err(Error::new(
                    ErrorKind::Closed,
                    format!("iSCSI {portal}: the target asked to end the session (Async event 1, logout within {} s) during {}", params[2], self.state()),
                ))
            }
            2 | 3 => {
                return Err(Error::new(
                    ErrorKind::Closed,
                    format!("iSCSI {portal}: the target announced it drops the connection (Async event {event}) during {}", self.state()),
                ))
            }
            4 => {
                return Err(self.fault("the target asks to renegotiate parameters (Async event 4), which iotoll does not support"))
            }
            _ => {
                return Err(self.fault(format!("Async message with event {event} (vendor code {code})")))
            }
        }
        Ok(())
    }

    /// The error a Reject makes, naming our PDU it carries back.
    fn rejected(&self, data: Range<usize>, reason: u8) -> Error {
        let d = &self.conn.rx()[data];
        let what = if d.len() >= pdu::BHS_LEN {
            let r = Bhs::at(d);
            format!(
                "the target rejected our {} PDU (ITT 0x{:08x}): {}",
                pdu::op_name(r.opcode()),
                r.itt(),
                pdu::reject_reason(reason)
            )
        } else {
            format!("the target rejected a PDU: {}", pdu::reject_reason(reason))
        };
        self.fault(what)
    }

    /// Does all the socket allows without waiting: sends what is queued,
    /// handles every PDU received; the number of commands completed.
    pub fn progress(&mut self, done: Done) -> Result<usize> {
        if self.closed {
            return Err(Error::new(
                ErrorKind::Closed,
                format!("iSCSI {}: the session is closed", self.conn.portal),
            ));
        }
        let r = self.progress_inner(done);
        if r.is_err() {
            self.closed = true;
        }
        r
    }

    fn progress_inner(&mut self, done: Done) -> Result<usize> {
        let mut n = 0;
        let mut counting = |slot: usize, res: i64| {
            n += 1;
            done(slot, res);
        };
        self.now = Instant::now();
        loop {
            self.send()?;
            self.stalled = false;
            let mut handled = false;
            loop {
                if let Some(d) = self.direct {
                    if !self.end_direct(d, &mut counting)? {
                        break;
                    }
                    handled = true;
                    continue;
                }
                let next = self.conn.next_pdu().map_err(|e| self.fault(e))?;
                let Some((bhs, range, len)) = next else {
                    handled |= self.start_direct()?;
                    break;
                };
                // A ping needs an answer in the send buffer: with no room,
                // reading stops here until the target takes what is
                // queued (backpressure, rather than a buffer that grows
                // as fast as the target pings).
                if bhs.opcode() == op::NOP_IN && bhs.ttt() != pdu::NO_TAG && !self.conn.room() {
                    self.stalled = true;
                    break;
                }
                self.handle(bhs, range, &mut counting)?;
                self.conn.consume(len);
                handled = true;
            }
            if handled {
                continue;
            }
            if self.stalled {
                break;
            }
            let got = self
                .conn
                .fill()
                .map_err(|e| closed_err(&self.conn.portal, &self.state(), &e))?;
            if !got {
                break;
            }
        }
        self.send()?;
        Ok(n)
    }
}
