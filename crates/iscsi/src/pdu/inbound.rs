//! Target PDUs, typed: what the session reads from a header it received.

use super::{op, Bhs, CmdSn, DataSn, Itt, PduError, R2tSn, StatSn, Ttt};

/// The fields every target PDU that carries a StatSN shares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sn {
    pub stat_sn: StatSn,
    pub exp_cmd_sn: CmdSn,
    pub max_cmd_sn: CmdSn,
}

impl Sn {
    fn of(b: &Bhs) -> Sn {
        Sn {
            stat_sn: StatSn(b.stat_sn()),
            exp_cmd_sn: CmdSn(b.exp_cmd_sn()),
            max_cmd_sn: CmdSn(b.max_cmd_sn()),
        }
    }
}

/// SCSI Response / Data-In residual flags (§11.4.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Residual {
    pub overflow: bool,
    pub underflow: bool,
    pub count: u32,
}

impl Residual {
    fn of(flags: u8, count: u32) -> Residual {
        Residual {
            overflow: flags & 0x04 != 0,
            underflow: flags & 0x02 != 0,
            count,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum In {
    NopIn {
        itt: Itt,
        ttt: Ttt,
        lun: [u8; 8],
        sn: Sn,
    },
    ScsiResponse {
        itt: Itt,
        /// iSCSI service response: 0 = command completed at target.
        response: u8,
        status: u8,
        residual: Residual,
        sn: Sn,
    },
    DataIn {
        itt: Itt,
        final_: bool,
        /// Status carried in this PDU (the S bit): no SCSI Response follows.
        status: Option<u8>,
        residual: Residual,
        sn: Sn,
        data_sn: DataSn,
        offset: u32,
    },
    R2T {
        itt: Itt,
        ttt: Ttt,
        sn: Sn,
        r2t_sn: R2tSn,
        offset: u32,
        len: u32,
    },
    Async {
        event: u8,
        code: u8,
        params: [u16; 3],
        sn: Sn,
    },
    Reject {
        reason: u8,
        sn: Sn,
    },
    LoginResponse {
        transit: bool,
        cont: bool,
        csg: u8,
        nsg: u8,
        tsih: u16,
        itt: Itt,
        class: u8,
        detail: u8,
        sn: Sn,
    },
    TextResponse {
        final_: bool,
        cont: bool,
        itt: Itt,
        ttt: Ttt,
        sn: Sn,
    },
    LogoutResponse {
        response: u8,
        itt: Itt,
        sn: Sn,
    },
    TaskMgmtResponse {
        response: u8,
        itt: Itt,
        sn: Sn,
    },
}

/// Types a target PDU; an initiator opcode or an unknown one from the
/// target is an error.
pub fn parse_in(b: &Bhs) -> Result<In, PduError> {
    let flags = b.flags();
    let sn = Sn::of(b);
    Ok(match b.opcode() {
        op::NOP_IN => In::NopIn {
            itt: Itt(b.itt()),
            ttt: Ttt(b.ttt()),
            lun: b.lun(),
            sn,
        },
        op::SCSI_RESPONSE => In::ScsiResponse {
            itt: Itt(b.itt()),
            response: b.byte(2),
            status: b.byte(3),
            residual: Residual::of(flags, b.u32_at(44)),
            sn,
        },
        op::DATA_IN => {
            let s = flags & 0x01 != 0;
            if s && flags & 0x80 == 0 {
                return Err(PduError::Malformed(
                    "Data-In with the status bit but not the final bit".into(),
                ));
            }
            In::DataIn {
                itt: Itt(b.itt()),
                final_: flags & 0x80 != 0,
                status: s.then_some(b.byte(3)),
                residual: Residual::of(if s { flags } else { 0 }, b.u32_at(44)),
                sn,
                data_sn: DataSn(b.u32_at(36)),
                offset: b.u32_at(40),
            }
        }
        op::R2T => In::R2T {
            itt: Itt(b.itt()),
            ttt: Ttt(b.ttt()),
            sn,
            r2t_sn: R2tSn(b.u32_at(36)),
            offset: b.u32_at(40),
            len: b.u32_at(44),
        },
        op::ASYNC => In::Async {
            event: b.byte(36),
            code: b.byte(37),
            params: [b.u16_at(38), b.u16_at(40), b.u16_at(42)],
            sn,
        },
        op::REJECT => In::Reject {
            reason: b.byte(2),
            sn,
        },
        op::LOGIN_RESP => In::LoginResponse {
            transit: flags & 0x80 != 0,
            cont: flags & 0x40 != 0,
            csg: (flags >> 2) & 3,
            nsg: flags & 3,
            tsih: b.u16_at(14),
            itt: Itt(b.itt()),
            class: b.byte(36),
            detail: b.byte(37),
            sn,
        },
        op::TEXT_RESP => In::TextResponse {
            final_: flags & 0x80 != 0,
            cont: flags & 0x40 != 0,
            itt: Itt(b.itt()),
            ttt: Ttt(b.ttt()),
            sn,
        },
        op::LOGOUT_RESP => In::LogoutResponse {
            response: b.byte(2),
            itt: Itt(b.itt()),
            sn,
        },
        op::TASK_MGMT_RESP => In::TaskMgmtResponse {
            response: b.byte(2),
            itt: Itt(b.itt()),
            sn,
        },
        other => return Err(PduError::Opcode(other)),
    })
}
