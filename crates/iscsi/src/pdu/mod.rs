//! The PDU codec (RFC 7143 §11): the 48-byte Basic Header Segment, AHS,
//! padding and CRC32C digests. Encoding writes into caller-owned buffers and
//! decoding reads from the receive buffer in place, so the hot path neither
//! allocates nor copies headers.

use std::fmt;

mod inbound;
mod out;
mod serial;

pub use inbound::{parse_in, In, Residual, Sn};
pub use out::{
    DataOut, LoginRequest, LogoutRequest, NopOut, ScsiCommand, Stage, TextRequest, ATTR_SIMPLE,
    CMD_READ, CMD_WRITE,
};
pub use serial::{CmdSn, DataSn, Itt, R2tSn, StatSn, Ttt};

pub const BHS_LEN: usize = 48;
/// TotalAHSLength is one byte of 4-byte words.
pub const MAX_AHS_LEN: usize = 255 * 4;
const DIGEST_LEN: usize = 4;

/// The opcodes, each with the name errors give a PDU that went wrong:
/// `op::NOP_OUT` and `op_name(op::NOP_OUT)`.
macro_rules! opcodes {
    ($($name:ident = $code:literal, $text:literal;)*) => {
        /// The PDU opcodes.
        pub mod op {
            $(pub const $name: u8 = $code;)*
        }

        /// The name of an opcode, for errors that name the PDU that went wrong.
        pub fn op_name(opcode: u8) -> &'static str {
            match opcode {
                $(op::$name => $text,)*
                _ => "unknown PDU",
            }
        }
    };
}

opcodes! {
    // Initiator opcodes.
    NOP_OUT = 0x00, "NOP-Out";
    SCSI_COMMAND = 0x01, "SCSI Command";
    TASK_MGMT = 0x02, "Task Management Request";
    LOGIN_REQ = 0x03, "Login Request";
    TEXT_REQ = 0x04, "Text Request";
    DATA_OUT = 0x05, "Data-Out";
    LOGOUT_REQ = 0x06, "Logout Request";
    SNACK = 0x10, "SNACK";
    // Target opcodes.
    NOP_IN = 0x20, "NOP-In";
    SCSI_RESPONSE = 0x21, "SCSI Response";
    TASK_MGMT_RESP = 0x22, "Task Management Response";
    LOGIN_RESP = 0x23, "Login Response";
    TEXT_RESP = 0x24, "Text Response";
    DATA_IN = 0x25, "Data-In";
    LOGOUT_RESP = 0x26, "Logout Response";
    R2T = 0x31, "R2T";
    ASYNC = 0x32, "Async Message";
    REJECT = 0x3f, "Reject";
}

/// The reserved "no tag" value of ITT and TTT.
pub const NO_TAG: u32 = 0xffff_ffff;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PduError {
    #[error("{what} PDU carries a data segment of {len} bytes, more than the {max} bytes declared as MaxRecvDataSegmentLength")]
    TooLong {
        what: &'static str,
        len: u32,
        max: u32,
    },
    #[error("header digest mismatch on a {0} PDU")]
    HeaderDigest(&'static str),
    #[error("data digest mismatch on a {0} PDU")]
    DataDigest(&'static str),
    #[error("unexpected opcode 0x{0:02x} from the target")]
    Opcode(u8),
    #[error("{0}")]
    Malformed(String),
}

/// Digests in use on a connection (negotiated at login; none until the
/// full-feature phase).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Digests {
    pub header: bool,
    pub data: bool,
}

/// Data segments are padded to a multiple of 4 bytes.
pub fn pad4(n: usize) -> usize {
    (4 - n % 4) % 4
}

/// A Basic Header Segment, with typed access to its fields.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Bhs(pub [u8; BHS_LEN]);

impl fmt::Debug for Bhs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Bhs({} itt=0x{:08x}", op_name(self.opcode()), self.itt())?;
        write!(f, " flags=0x{:02x} dsl={})", self.flags(), self.data_len())
    }
}

impl Default for Bhs {
    fn default() -> Self {
        Bhs([0; BHS_LEN])
    }
}

impl Bhs {
    /// The header at the front of `buf`, which holds at least one.
    pub(crate) fn at(buf: &[u8]) -> Bhs {
        Bhs(buf[..BHS_LEN].try_into().expect("a whole header"))
    }
    pub fn new(opcode: u8, immediate: bool, flags: u8) -> Self {
        let mut b = Bhs::default();
        b.0[0] = opcode | if immediate { 0x40 } else { 0 };
        b.0[1] = flags;
        b
    }
    pub fn opcode(&self) -> u8 {
        self.0[0] & 0x3f
    }
    pub fn immediate(&self) -> bool {
        self.0[0] & 0x40 != 0
    }
    pub fn flags(&self) -> u8 {
        self.0[1]
    }
    /// The F (final) bit, in the same place in every PDU that has it.
    pub fn final_bit(&self) -> bool {
        self.0[1] & 0x80 != 0
    }
    pub fn byte(&self, i: usize) -> u8 {
        self.0[i]
    }
    pub fn set_byte(&mut self, i: usize, v: u8) {
        self.0[i] = v;
    }
    pub fn ahs_len(&self) -> usize {
        self.0[4] as usize * 4
    }
    pub fn data_len(&self) -> u32 {
        u32::from_be_bytes([0, self.0[5], self.0[6], self.0[7]])
    }
    pub fn set_data_len(&mut self, n: u32) {
        debug_assert!(n < 1 << 24);
        self.0[5..8].copy_from_slice(&n.to_be_bytes()[1..]);
    }
    pub fn u16_at(&self, i: usize) -> u16 {
        u16::from_be_bytes([self.0[i], self.0[i + 1]])
    }
    pub fn set_u16(&mut self, i: usize, v: u16) {
        self.0[i..i + 2].copy_from_slice(&v.to_be_bytes());
    }
    pub fn u32_at(&self, i: usize) -> u32 {
        u32::from_be_bytes([self.0[i], self.0[i + 1], self.0[i + 2], self.0[i + 3]])
    }
    pub fn set_u32(&mut self, i: usize, v: u32) {
        self.0[i..i + 4].copy_from_slice(&v.to_be_bytes());
    }
    pub fn lun(&self) -> [u8; 8] {
        self.0[8..16].try_into().expect("8 bytes")
    }
    pub fn set_lun(&mut self, lun: [u8; 8]) {
        self.0[8..16].copy_from_slice(&lun);
    }
    pub fn itt(&self) -> u32 {
        self.u32_at(16)
    }
    pub fn set_itt(&mut self, v: u32) {
        self.set_u32(16, v)
    }
    /// Target Transfer Tag (NOP, Data, R2T, Text).
    pub fn ttt(&self) -> u32 {
        self.u32_at(20)
    }
    /// StatSN of target PDUs (and of Data-In when it carries status).
    pub fn stat_sn(&self) -> u32 {
        self.u32_at(24)
    }
    pub fn exp_cmd_sn(&self) -> u32 {
        self.u32_at(28)
    }
    pub fn max_cmd_sn(&self) -> u32 {
        self.u32_at(32)
    }
}

/// Appends one whole PDU to `out`: header (with its length field set),
/// header digest, data, padding and data digest.
pub fn encode(out: &mut Vec<u8>, mut bhs: Bhs, data: &[u8], digests: Digests) {
    bhs.set_data_len(data.len() as u32);
    bhs.0[4] = 0;
    out.extend_from_slice(&bhs.0);
    if digests.header {
        out.extend_from_slice(&crc32c::crc32c(&bhs.0).to_le_bytes());
    }
    if data.is_empty() {
        return;
    }
    let start = out.len();
    out.extend_from_slice(data);
    out.extend_from_slice(&[0u8; 3][..pad4(data.len())]);
    if digests.data {
        let d = crc32c::crc32c(&out[start..]);
        out.extend_from_slice(&d.to_le_bytes());
    }
}

// ---- decoding --------------------------------------------------------------

/// One PDU decoded in place from a receive buffer.
#[derive(Debug)]
pub struct Pdu<'a> {
    pub bhs: Bhs,
    pub ahs: &'a [u8],
    /// The data segment without padding or digest.
    pub data: &'a [u8],
}

/// Splits PDUs off the front of a byte stream.
#[derive(Debug, Clone, Copy)]
pub struct Decoder {
    pub digests: Digests,
    /// The MaxRecvDataSegmentLength we declared: a longer data segment is a
    /// protocol error, not an allocation.
    pub max_data: u32,
}

impl Decoder {
    /// The whole length of the PDU starting at `buf`, once its header is in
    /// (`Ok(None)` until then).
    pub fn frame_len(&self, buf: &[u8]) -> Result<Option<usize>, PduError> {
        if buf.len() < BHS_LEN {
            return Ok(None);
        }
        let bhs = Bhs::at(buf);
        // With header digests, a corrupted length is caught by the digest
        // as soon as the header is in, rather than trusted and waited for.
        let hd_end = BHS_LEN + bhs.ahs_len();
        if self.digests.header
            && buf.len() >= hd_end + DIGEST_LEN
            && crc32c::crc32c(&buf[..hd_end]) != digest_at(buf, hd_end)
        {
            return Err(PduError::HeaderDigest(op_name(bhs.opcode())));
        }
        let dl = bhs.data_len();
        if dl > self.max_data {
            return Err(PduError::TooLong {
                what: op_name(bhs.opcode()),
                len: dl,
                max: self.max_data,
            });
        }
        let dl = dl as usize;
        let mut n = hd_end + if self.digests.header { DIGEST_LEN } else { 0 };
        if dl > 0 {
            n += dl + pad4(dl);
            if self.digests.data {
                n += DIGEST_LEN;
            }
        }
        Ok(Some(n))
    }

    /// Decodes the PDU at the front of `buf` and says how many bytes it
    /// took; `Ok(None)` when `buf` does not hold a whole PDU yet.
    pub fn decode<'a>(&self, buf: &'a [u8]) -> Result<Option<(Pdu<'a>, usize)>, PduError> {
        let Some(total) = self.frame_len(buf)? else {
            return Ok(None);
        };
        if buf.len() < total {
            return Ok(None);
        }
        let bhs = Bhs::at(buf);
        let ahs_end = BHS_LEN + bhs.ahs_len();
        let ahs = &buf[BHS_LEN..ahs_end];
        // The header digest, if any, is behind the AHS; frame_len checked it.
        let at = ahs_end + if self.digests.header { DIGEST_LEN } else { 0 };
        let dl = bhs.data_len() as usize;
        let data = &buf[at..at + dl];
        if dl > 0 && self.digests.data {
            let d = at + dl + pad4(dl);
            if crc32c::crc32c(&buf[at..d]) != digest_at(buf, d) {
                return Err(PduError::DataDigest(op_name(bhs.opcode())));
            }
        }
        Ok(Some((Pdu { bhs, ahs, data }, total)))
    }
}

/// The CRC32C digest stored (little-endian) at `buf[at..]`.
fn digest_at(buf: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(buf[at..at + DIGEST_LEN].try_into().expect("4 bytes"))
}

/// Reject reasons (§11.17.1).
pub fn reject_reason(r: u8) -> &'static str {
    match r {
        0x02 => "data (payload) digest error",
        0x03 => "SNACK reject",
        0x04 => "protocol error",
        0x05 => "command not supported",
        0x06 => "immediate command rejected: too many immediate commands",
        0x07 => "task in progress",
        0x08 => "invalid data ACK",
        0x09 => "invalid PDU field",
        0x0a => "long operation reject: out of resources",
        0x0c => "waiting for logout",
        _ => "reserved reason",
    }
}

/// Login status (§11.13.5), for errors a user can act on.
pub fn login_status(class: u8, detail: u8) -> String {
    let s = match (class, detail) {
        (1, 1) => "target moved temporarily",
        (1, 2) => "target moved permanently",
        (2, 0) => "initiator error",
        (2, 1) => "authentication failed",
        (2, 2) => "authorization failure (this initiator may not access the target)",
        (2, 3) => "target not found (no such IQN at this portal)",
        (2, 4) => "target removed",
        (2, 5) => "unsupported version",
        (2, 6) => "too many connections",
        (2, 7) => "missing parameter",
        (2, 8) => "cannot include in session",
        (2, 9) => "session type not supported",
        (2, 10) => "session does not exist",
        (2, 11) => "invalid request during login",
        (3, 0) => "target error",
        (3, 1) => "service unavailable",
        (3, 2) => "out of resources",
        _ => "",
    };
    if s.is_empty() {
        format!("status class {class} detail {detail}")
    } else {
        format!("{s} (status {class}/{detail})")
    }
}

#[cfg(test)]
mod tests;
