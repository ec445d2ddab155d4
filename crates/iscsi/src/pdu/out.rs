//! Initiator PDUs, each encoded from a struct that names its fields: a
//! StatSN cannot take a CmdSN's place, nor a TTT an ITT's.

use super::{op, Bhs, CmdSn, DataSn, Itt, StatSn, Ttt};

/// SCSI Command flags.
pub const CMD_READ: u8 = 0x40;
pub const CMD_WRITE: u8 = 0x20;
/// Task attribute SIMPLE.
pub const ATTR_SIMPLE: u8 = 0x01;
/// The F (final) bit.
const FINAL: u8 = 0x80;

/// The fields at 20..32 most initiator PDUs share: a tag (TTT or EDTL),
/// CmdSN and ExpStatSN.
fn numbered(mut b: Bhs, itt: Itt, at20: u32, cmd_sn: CmdSn, exp_stat_sn: StatSn) -> Bhs {
    b.set_itt(itt.0);
    b.set_u32(20, at20);
    b.set_u32(24, cmd_sn.0);
    b.set_u32(28, exp_stat_sn.0);
    b
}

/// SCSI Command (§11.3).
#[derive(Debug, Clone, Copy)]
pub struct ScsiCommand<'a> {
    pub itt: Itt,
    pub lun: [u8; 8],
    pub read: bool,
    pub write: bool,
    /// No unsolicited Data-Out follows this PDU.
    pub final_: bool,
    /// Expected Data Transfer Length.
    pub edtl: u32,
    pub cmd_sn: CmdSn,
    pub exp_stat_sn: StatSn,
    /// Up to 16 bytes are sent.
    pub cdb: &'a [u8],
}

impl ScsiCommand<'_> {
    pub fn bhs(&self) -> Bhs {
        let mut flags = ATTR_SIMPLE | (FINAL * u8::from(self.final_));
        if self.read {
            flags |= CMD_READ;
        }
        if self.write {
            flags |= CMD_WRITE;
        }
        let mut b = Bhs::new(op::SCSI_COMMAND, false, flags);
        b.set_lun(self.lun);
        let mut b = numbered(b, self.itt, self.edtl, self.cmd_sn, self.exp_stat_sn);
        let n = self.cdb.len().min(16);
        b.0[32..32 + n].copy_from_slice(&self.cdb[..n]);
        b
    }
}

/// SCSI Data-Out (§11.7): CmdSN is reserved.
#[derive(Debug, Clone, Copy)]
pub struct DataOut {
    pub itt: Itt,
    /// The R2T's TTT, or none for unsolicited data.
    pub ttt: Ttt,
    pub lun: [u8; 8],
    pub exp_stat_sn: StatSn,
    pub data_sn: DataSn,
    /// Buffer offset of this PDU's data.
    pub offset: u32,
    /// The last PDU of its sequence.
    pub final_: bool,
}

impl DataOut {
    pub fn bhs(&self) -> Bhs {
        let mut b = Bhs::new(op::DATA_OUT, false, FINAL * u8::from(self.final_));
        b.set_lun(self.lun);
        let mut b = numbered(b, self.itt, self.ttt.0, CmdSn(0), self.exp_stat_sn);
        b.set_u32(36, self.data_sn.0);
        b.set_u32(40, self.offset);
        b
    }
}

/// NOP-Out (§11.18), immediate: a ping of our own (ITT set) or the answer
/// to a target's NOP-In (ITT none, its TTT echoed).
#[derive(Debug, Clone, Copy)]
pub struct NopOut {
    pub itt: Itt,
    pub ttt: Ttt,
    pub lun: [u8; 8],
    pub cmd_sn: CmdSn,
    pub exp_stat_sn: StatSn,
}

impl NopOut {
    pub fn bhs(&self) -> Bhs {
        let mut b = Bhs::new(op::NOP_OUT, true, FINAL);
        b.set_lun(self.lun);
        numbered(b, self.itt, self.ttt.0, self.cmd_sn, self.exp_stat_sn)
    }
}

/// Login stages, as their two bits in CSG and NSG (§11.12.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    Security = 0,
    Operational = 1,
    FullFeature = 3,
}

/// Login Request (§11.12), immediate; version 0 (RFC 7143 keeps 0 for
/// RFC 3720 too).
#[derive(Debug, Clone, Copy)]
pub struct LoginRequest {
    pub isid: [u8; 6],
    pub tsih: u16,
    pub itt: Itt,
    pub cid: u16,
    pub cmd_sn: CmdSn,
    pub exp_stat_sn: StatSn,
    /// The current stage.
    pub csg: Stage,
    /// The stage asked to move on to (the T bit and NSG), if any.
    pub transit: Option<Stage>,
}

impl LoginRequest {
    pub fn bhs(&self) -> Bhs {
        let mut flags = (self.csg as u8) << 2;
        if let Some(nsg) = self.transit {
            flags |= FINAL | nsg as u8;
        }
        let mut b = Bhs::new(op::LOGIN_REQ, true, flags);
        b.0[8..14].copy_from_slice(&self.isid);
        b.set_u16(14, self.tsih);
        // CID sits in the upper half of the word at 20.
        let cid = u32::from(self.cid) << 16;
        numbered(b, self.itt, cid, self.cmd_sn, self.exp_stat_sn)
    }
}

/// Text Request (§11.10), immediate and final.
#[derive(Debug, Clone, Copy)]
pub struct TextRequest {
    pub itt: Itt,
    /// None to start, the target's TTT to ask for the rest of an answer.
    pub ttt: Ttt,
    pub cmd_sn: CmdSn,
    pub exp_stat_sn: StatSn,
}

impl TextRequest {
    pub fn bhs(&self) -> Bhs {
        let b = Bhs::new(op::TEXT_REQ, true, FINAL);
        numbered(b, self.itt, self.ttt.0, self.cmd_sn, self.exp_stat_sn)
    }
}

/// Logout Request (§11.14), immediate, reason 0: close the session.
#[derive(Debug, Clone, Copy)]
pub struct LogoutRequest {
    pub itt: Itt,
    pub cmd_sn: CmdSn,
    pub exp_stat_sn: StatSn,
}

impl LogoutRequest {
    pub fn bhs(&self) -> Bhs {
        let b = Bhs::new(op::LOGOUT_REQ, true, FINAL);
        numbered(b, self.itt, 0, self.cmd_sn, self.exp_stat_sn)
    }
}
