//! What the codec's property tests and its fuzz run share: opcodes,
//! digests, a deterministic generator, frames built by hand, the decoder's
//! outcome and an independent model of RFC 7143 framing.

#![allow(dead_code)]

use crc32c::crc32c;
use std::ops::Range;

use iotoll_iscsi::pdu::{
    encode, op, op_name, pad4, Bhs, Decoder, Digests, PduError, BHS_LEN, MAX_AHS_LEN,
};
pub const INITIATOR_OPS: [u8; 8] = [
    op::NOP_OUT,
    op::SCSI_COMMAND,
    op::TASK_MGMT,
    op::LOGIN_REQ,
    op::TEXT_REQ,
    op::DATA_OUT,
    op::LOGOUT_REQ,
    op::SNACK,
];
pub const TARGET_OPS: [u8; 10] = [
    op::NOP_IN,
    op::SCSI_RESPONSE,
    op::TASK_MGMT_RESP,
    op::LOGIN_RESP,
    op::TEXT_RESP,
    op::DATA_IN,
    op::LOGOUT_RESP,
    op::R2T,
    op::ASYNC,
    op::REJECT,
];

pub const ALL_DIGESTS: [Digests; 4] = [
    Digests {
        header: false,
        data: false,
    },
    Digests {
        header: true,
        data: false,
    },
    Digests {
        header: false,
        data: true,
    },
    Digests {
        header: true,
        data: true,
    },
];

/// The largest data segment the property tests generate, and the
/// `max_data` of their decoder.
pub const MAX_SEG: usize = 70_000;

/// xorshift64*: a small deterministic generator, so the fuzz run is the
/// same on every machine and a failure names its iteration.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        // Zero is the one fixed point of xorshift.
        Rng(seed | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }
    /// Uniform in `0..n` (n > 0); the modulo bias is irrelevant here.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }
    /// True `num` times out of `den`.
    pub fn chance(&mut self, num: usize, den: usize) -> bool {
        self.below(den) < num
    }
    pub fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let r = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&r[..chunk.len()]);
        }
    }
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        let mut v = vec![0; n];
        self.fill(&mut v);
        v
    }
    pub fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len())]
    }
}

pub fn seeded_bytes(seed: u64, n: usize) -> Vec<u8> {
    Rng::new(seed).bytes(n)
}

/// The bitwise CRC32C of RFC 7143 (reflected Castagnoli polynomial
/// 0x1EDC6F41, initial all ones, final complement): an independent check of
/// the crate's digest function.
pub fn crc32c_bitwise(bytes: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in bytes {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0x82f6_3b78
            } else {
                c >> 1
            };
        }
    }
    !c
}

/// One valid frame, built by `encode` with an AHS spliced in by hand (and
/// the header digest recomputed over BHS + AHS), with the offsets of its
/// parts.
#[derive(Debug, Clone)]
pub struct Frame {
    pub bytes: Vec<u8>,
    pub digests: Digests,
    /// End of BHS + AHS.
    pub hdr_end: usize,
    /// Start of the data segment.
    pub data_at: usize,
    pub dl: usize,
}

impl Frame {
    pub fn build(bhs: Bhs, ahs: &[u8], data: &[u8], digests: Digests) -> Frame {
        assert!(ahs.len() % 4 == 0 && ahs.len() <= MAX_AHS_LEN);
        let mut bytes = Vec::new();
        encode(
            &mut bytes,
            bhs,
            data,
            Digests {
                header: false,
                data: digests.data,
            },
        );
        bytes[4] = (ahs.len() / 4) as u8;
        bytes.splice(BHS_LEN..BHS_LEN, ahs.iter().copied());
        let hdr_end = BHS_LEN + ahs.len();
        let mut data_at = hdr_end;
        if digests.header {
            let d = crc32c(&bytes[..hdr_end]).to_le_bytes();
            bytes.splice(hdr_end..hdr_end, d);
            data_at += 4;
        }
        if ahs.is_empty() {
            // Without AHS the hand-built frame is exactly what `encode` makes.
            let mut e = Vec::new();
            encode(&mut e, bhs, data, digests);
            assert_eq!(e, bytes, "hand-built frame differs from encode");
        }
        Frame {
            bytes,
            digests,
            hdr_end,
            data_at,
            dl: data.len(),
        }
    }
    pub fn len(&self) -> usize {
        self.bytes.len()
    }
    pub fn header(&self) -> Range<usize> {
        0..self.hdr_end
    }
    pub fn header_digest(&self) -> Range<usize> {
        if self.digests.header {
            self.hdr_end..self.hdr_end + 4
        } else {
            self.hdr_end..self.hdr_end
        }
    }
    pub fn data(&self) -> Range<usize> {
        self.data_at..self.data_at + self.dl
    }
    pub fn padding(&self) -> Range<usize> {
        let end = self.data_at + self.dl;
        end..end + pad4(self.dl)
    }
    pub fn data_digest(&self) -> Range<usize> {
        let end = self.padding().end;
        if self.digests.data && self.dl > 0 {
            end..end + 4
        } else {
            end..end
        }
    }
}

/// What one call of `Decoder::decode` did, in a form that can be compared
/// with the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    NotYet,
    Pdu {
        n: usize,
        ahs: Range<usize>,
        data: Range<usize>,
    },
    TooLong {
        what: &'static str,
        len: u32,
        max: u32,
    },
    HeaderDigest(&'static str),
    DataDigest(&'static str),
    Other(String),
}

impl Outcome {
    pub fn kind(&self) -> usize {
        match self {
            Outcome::NotYet => 0,
            Outcome::Pdu { .. } => 1,
            Outcome::TooLong { .. } => 2,
            Outcome::HeaderDigest(_) => 3,
            Outcome::DataDigest(_) => 4,
            Outcome::Other(_) => 5,
        }
    }
}

/// Where `part` lies inside `buf`, if it does.
pub fn range_in(buf: &[u8], part: &[u8]) -> Option<Range<usize>> {
    let start = (part.as_ptr() as usize).checked_sub(buf.as_ptr() as usize)?;
    let end = start.checked_add(part.len())?;
    (end <= buf.len()).then_some(start..end)
}

/// Runs the decoder; a returned PDU is checked against the bytes it came
/// from (its BHS is the first 48 bytes, its slices lie inside `buf`).
pub fn run(dec: &Decoder, buf: &[u8]) -> Outcome {
    match dec.decode(buf) {
        Ok(None) => Outcome::NotYet,
        Ok(Some((pdu, n))) => {
            if buf.len() < BHS_LEN || pdu.bhs.0[..] != buf[..BHS_LEN] {
                return Outcome::Other("BHS is not the first 48 bytes".into());
            }
            match (range_in(buf, pdu.ahs), range_in(buf, pdu.data)) {
                (Some(ahs), Some(data)) => Outcome::Pdu { n, ahs, data },
                _ => Outcome::Other("AHS or data outside the input".into()),
            }
        }
        Err(PduError::TooLong { what, len, max }) => Outcome::TooLong { what, len, max },
        Err(PduError::HeaderDigest(w)) => Outcome::HeaderDigest(w),
        Err(PduError::DataDigest(w)) => Outcome::DataDigest(w),
        Err(e) => Outcome::Other(format!("{e:?}")),
    }
}

/// An independent model of RFC 7143 §11 framing: BHS, AHS (TotalAHSLength
/// in 4-byte words), header digest over BHS + AHS, data, padding to 4,
/// data digest over data + padding, present only with data.
pub fn model(dec: &Decoder, buf: &[u8]) -> Outcome {
    if buf.len() < BHS_LEN {
        return Outcome::NotYet;
    }
    let what = op_name(buf[0] & 0x3f);
    let le = |i: usize| u32::from_le_bytes([buf[i], buf[i + 1], buf[i + 2], buf[i + 3]]);
    // The header digest is checked as soon as it is in, before the
    // length it covers is trusted.
    let hd_end = BHS_LEN + 4 * buf[4] as usize;
    if dec.digests.header && buf.len() >= hd_end + 4 && crc32c(&buf[..hd_end]) != le(hd_end) {
        return Outcome::HeaderDigest(what);
    }
    let dl = u32::from_be_bytes([0, buf[5], buf[6], buf[7]]);
    if dl > dec.max_data {
        return Outcome::TooLong {
            what,
            len: dl,
            max: dec.max_data,
        };
    }
    let dl = dl as usize;
    let ahs = BHS_LEN..BHS_LEN + 4 * buf[4] as usize;
    let mut at = ahs.end;
    if dec.digests.header {
        at += 4;
    }
    let data = at..at + dl;
    let padded = dl.div_ceil(4) * 4;
    let mut end = at + padded;
    if dec.digests.data && dl > 0 {
        end += 4;
    }
    if buf.len() < end {
        return Outcome::NotYet;
    }
    if dec.digests.data && dl > 0 && crc32c(&buf[at..at + padded]) != le(at + padded) {
        return Outcome::DataDigest(what);
    }
    Outcome::Pdu { n: end, ahs, data }
}

/// What every outcome must satisfy, whatever the input.
pub fn check_invariants(dec: &Decoder, buf: &[u8], got: &Outcome) -> Result<(), String> {
    let frame_len = dec.frame_len(buf);
    match got {
        Outcome::NotYet => match frame_len {
            Ok(None) if buf.len() < BHS_LEN => Ok(()),
            Ok(Some(f)) if f > buf.len() => Ok(()),
            other => Err(format!("Ok(None) but frame_len {other:?}")),
        },
        Outcome::Pdu { n, ahs, data } => {
            let dl = u32::from_be_bytes([0, buf[5], buf[6], buf[7]]) as usize;
            if *n > buf.len() {
                return Err(format!("consumed {n} of {} bytes", buf.len()));
            }
            if frame_len != Ok(Some(*n)) {
                return Err(format!("consumed {n} but frame_len {frame_len:?}"));
            }
            if data.len() != dl {
                return Err(format!("data of {} bytes, header says {dl}", data.len()));
            }
            if ahs.start != BHS_LEN || ahs.len() != 4 * buf[4] as usize {
                return Err(format!("AHS at {ahs:?}"));
            }
            if data.start < ahs.end || data.end > *n {
                return Err(format!("data at {data:?} outside the frame of {n}"));
            }
            Ok(())
        }
        Outcome::TooLong { len, max, .. } => {
            let dl = u32::from_be_bytes([0, buf[5], buf[6], buf[7]]);
            if *max != dec.max_data || *len != dl || len <= max {
                return Err(format!("TooLong {len} > {max} (dl {dl})"));
            }
            // Refused on the BHS alone: the rest of the input is not needed.
            let head = run(dec, &buf[..BHS_LEN]);
            if &head != got {
                return Err(format!("on the BHS alone: {head:?}"));
            }
            Ok(())
        }
        Outcome::HeaderDigest(_) if dec.digests.header => Ok(()),
        Outcome::DataDigest(_) if dec.digests.data => Ok(()),
        other => Err(format!("{other:?} with digests {:?}", dec.digests)),
    }
}

pub fn dec(digests: Digests, max_data: u32) -> Decoder {
    Decoder { digests, max_data }
}
