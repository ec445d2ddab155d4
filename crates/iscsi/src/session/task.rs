//! A task slot: one command in flight and what is known of it, and the
//! write data still to send for one.

use crate::pdu::{DataSn, Itt, R2tSn, Ttt};
use crate::scsi;
use std::fmt::Write as _;
use std::time::Instant;

pub(super) struct Task {
    pub(super) live: bool,
    /// The command is on its way to the target (not held back in
    /// `waiting`): only then may the target answer it.
    pub(super) sent: bool,
    pub(super) gen: u16,
    pub(super) read: bool,
    pub(super) lun: [u8; 8],
    pub(super) cdb: [u8; 16],
    pub(super) len: u32,
    pub(super) buf: *mut u8,
    /// Data-In bytes received: with DataPDUInOrder=Yes (which iotoll
    /// always negotiates) also the offset the next Data-In must start at,
    /// so each byte is counted once.
    pub(super) got: u32,
    /// The DataSN the next Data-In must carry.
    pub(super) data_sn: DataSn,
    /// The R2TSN the next R2T must carry.
    pub(super) r2t_sn: R2tSn,
    /// Write data sent unsolicited or asked for by an R2T: the end of it
    /// (DataSequenceInOrder=Yes), below which an R2T asks again.
    pub(super) sent_to: u32,
    /// R2Ts whose last Data-Out is not yet in the send buffer.
    pub(super) r2ts: u32,
    /// Write data put in the send buffer (immediate and Data-Out): a
    /// write has moved its bytes only when this reaches its length.
    pub(super) out: u32,
    /// Entries of this task in the session's transfer queue.
    pub(super) queued: u32,
    pub(super) since: Instant,
    pub(super) retries: u8,
    pub(super) status: u8,
    pub(super) sense: Option<scsi::Sense>,
    pub(super) error: Option<String>,
}

impl Task {
    pub(super) fn new(now: Instant) -> Task {
        Task {
            live: false,
            sent: false,
            gen: 0,
            read: true,
            lun: [0; 8],
            cdb: [0; 16],
            len: 0,
            buf: std::ptr::null_mut(),
            got: 0,
            data_sn: DataSn(0),
            r2t_sn: R2tSn(0),
            sent_to: 0,
            r2ts: 0,
            out: 0,
            queued: 0,
            since: now,
            retries: 0,
            status: 0,
            sense: None,
            error: None,
        }
    }

    pub(super) fn itt(&self, slot: usize) -> Itt {
        Itt((self.gen as u32) << 16 | slot as u32)
    }

    pub(super) fn describe(&self, slot: usize) -> String {
        let name = match self.cdb[0] {
            scsi::OP_READ_16 => "READ(16)",
            scsi::OP_WRITE_16 => "WRITE(16)",
            scsi::OP_INQUIRY => "INQUIRY",
            scsi::OP_REPORT_LUNS => "REPORT LUNS",
            scsi::OP_SERVICE_ACTION_IN_16 => "READ CAPACITY(16)",
            scsi::OP_TEST_UNIT_READY => "TEST UNIT READY",
            _ => "SCSI command",
        };
        let mut s = name.to_string();
        if matches!(self.cdb[0], scsi::OP_READ_16 | scsi::OP_WRITE_16) {
            let lba = u64::from_be_bytes(self.cdb[2..10].try_into().unwrap_or([0; 8]));
            let blocks = u32::from_be_bytes(self.cdb[10..14].try_into().unwrap_or([0; 4]));
            let _ = write!(s, " of {blocks} blocks at LBA {lba}");
        }
        let _ = write!(s, " (ITT 0x{:08x})", self.itt(slot));
        s
    }
}

/// Write data still to send for a task: unsolicited Data-Out (TTT
/// reserved) or the answer to one R2T. Data-Out PDUs are encoded from it
/// into the send buffer as far as the buffer has room, straight from the
/// caller's I/O buffer.
#[derive(Debug, Clone, Copy)]
pub(super) struct Transfer {
    pub(super) slot: usize,
    pub(super) itt: Itt,
    pub(super) ttt: Ttt,
    pub(super) off: u32,
    pub(super) end: u32,
    pub(super) data_sn: DataSn,
    pub(super) r2t: bool,
}
