//! Property tests and a bounded, deterministic fuzz run of the PDU codec
//! (`iotoll_iscsi::pdu`), through its public API only.
//!
//! * round trip of random PDUs (any opcode, any BHS field, data segments of
//!   0..=70000 bytes) under every combination of header and data digests;
//! * every strict prefix of a PDU is "not yet", two PDUs back to back come
//!   out in order, a segment over `max_data` is refused;
//! * `parse_in` returns the fields written and never panics;
//! * serial-number arithmetic is a strict order on any window under 2^31;
//! * a fuzz run of mutated frames (bit flips, length fields, truncation,
//!   garbage, padding, digests, AHS) checked against an independent model of
//!   RFC 7143 framing, with semantic expectations per mutation;
//! * a stream cut at every byte boundary decodes to the same PDUs.

use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe};

use iotoll_iscsi::pdu::{
    crc32c, encode, op, op_name, pad4, parse_in, Bhs, CmdSn, DataSn, Decoder, Digests, In, Itt,
    PduError, R2tSn, Sn, StatSn, Ttt, BHS_LEN, MAX_AHS_LEN,
};
use proptest::prelude::*;

// ---- helpers ---------------------------------------------------------------

const INITIATOR_OPS: [u8; 8] = [
    op::NOP_OUT,
    op::SCSI_COMMAND,
    op::TASK_MGMT,
    op::LOGIN_REQ,
    op::TEXT_REQ,
    op::DATA_OUT,
    op::LOGOUT_REQ,
    op::SNACK,
];
const TARGET_OPS: [u8; 10] = [
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

const ALL_DIGESTS: [Digests; 4] = [
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
const MAX_SEG: usize = 70_000;

/// xorshift64*: a small deterministic generator, so the fuzz run is the
/// same on every machine and a failure names its iteration.
#[derive(Debug, Clone)]
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        // Zero is the one fixed point of xorshift.
        Rng(seed | 1)
    }
    fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }
    /// Uniform in `0..n` (n > 0); the modulo bias is irrelevant here.
    fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }
    /// True `num` times out of `den`.
    fn chance(&mut self, num: usize, den: usize) -> bool {
        self.below(den) < num
    }
    fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let r = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&r[..chunk.len()]);
        }
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        let mut v = vec![0; n];
        self.fill(&mut v);
        v
    }
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len())]
    }
}

fn seeded_bytes(seed: u64, n: usize) -> Vec<u8> {
    Rng::new(seed).bytes(n)
}

/// The bitwise CRC32C of RFC 7143 (reflected Castagnoli polynomial
/// 0x1EDC6F41, initial all ones, final complement): an independent check of
/// the crate's digest function.
fn crc32c_bitwise(bytes: &[u8]) -> u32 {
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
struct Frame {
    bytes: Vec<u8>,
    digests: Digests,
    /// End of BHS + AHS.
    hdr_end: usize,
    /// Start of the data segment.
    data_at: usize,
    dl: usize,
}

impl Frame {
    fn build(bhs: Bhs, ahs: &[u8], data: &[u8], digests: Digests) -> Frame {
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
    fn len(&self) -> usize {
        self.bytes.len()
    }
    fn header(&self) -> Range<usize> {
        0..self.hdr_end
    }
    fn header_digest(&self) -> Range<usize> {
        if self.digests.header {
            self.hdr_end..self.hdr_end + 4
        } else {
            self.hdr_end..self.hdr_end
        }
    }
    fn data(&self) -> Range<usize> {
        self.data_at..self.data_at + self.dl
    }
    fn padding(&self) -> Range<usize> {
        let end = self.data_at + self.dl;
        end..end + pad4(self.dl)
    }
    fn data_digest(&self) -> Range<usize> {
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
enum Outcome {
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
    fn kind(&self) -> usize {
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
fn range_in(buf: &[u8], part: &[u8]) -> Option<Range<usize>> {
    let start = (part.as_ptr() as usize).checked_sub(buf.as_ptr() as usize)?;
    let end = start.checked_add(part.len())?;
    (end <= buf.len()).then_some(start..end)
}

/// Runs the decoder; a returned PDU is checked against the bytes it came
/// from (its BHS is the first 48 bytes, its slices lie inside `buf`).
fn run(dec: &Decoder, buf: &[u8]) -> Outcome {
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
fn model(dec: &Decoder, buf: &[u8]) -> Outcome {
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
fn check_invariants(dec: &Decoder, buf: &[u8], got: &Outcome) -> Result<(), String> {
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

fn dec(digests: Digests, max_data: u32) -> Decoder {
    Decoder { digests, max_data }
}

// ---- deterministic checks --------------------------------------------------

/// RFC 7143 appendix B.4 (and RFC 3720): CRC32C examples, as they appear on
/// the wire; the codec sends the digest least significant byte first.
#[test]
fn crc32c_matches_rfc_examples_and_a_bitwise_reference() {
    let zeros = [0u8; 32];
    let ones = [0xffu8; 32];
    let inc: Vec<u8> = (0..32).collect();
    let dec_: Vec<u8> = (0..32).rev().collect();
    for (input, wire) in [
        (&zeros[..], [0xaa, 0x36, 0x91, 0x8a]),
        (&ones[..], [0x43, 0xab, 0xa8, 0x62]),
        (&inc[..], [0x4e, 0x79, 0xdd, 0x46]),
        (&dec_[..], [0x5c, 0xdb, 0x3f, 0x11]),
    ] {
        assert_eq!(crc32c(input).to_le_bytes(), wire);
        assert_eq!(crc32c_bitwise(input).to_le_bytes(), wire);
        // And the data digest `encode` appends is those bytes.
        let mut out = Vec::new();
        encode(
            &mut out,
            Bhs::new(op::DATA_OUT, false, 0x80),
            input,
            ALL_DIGESTS[2],
        );
        assert_eq!(out[out.len() - 4..], wire);
    }
    assert_eq!(crc32c_bitwise(b"123456789"), 0xe306_9283);
    let mut rng = Rng::new(7);
    for n in 0..300 {
        let b = rng.bytes(n);
        assert_eq!(crc32c(&b), crc32c_bitwise(&b), "length {n}");
    }
}

#[test]
fn data_segment_sizes_at_the_edges_round_trip() {
    for digests in ALL_DIGESTS {
        for n in [
            0, 1, 2, 3, 4, 5, 47, 48, 49, 4095, 4096, 65535, 65536, MAX_SEG,
        ] {
            let data = seeded_bytes(n as u64, n);
            let mut out = Vec::new();
            encode(&mut out, Bhs::new(op::DATA_IN, false, 0x80), &data, digests);
            let want = BHS_LEN
                + if digests.header { 4 } else { 0 }
                + if n > 0 {
                    n + pad4(n) + if digests.data { 4 } else { 0 }
                } else {
                    0
                };
            assert_eq!(out.len(), want, "{n} bytes, {digests:?}");
            let d = dec(digests, n as u32);
            match d.decode(&out) {
                Ok(Some((pdu, used))) => {
                    assert_eq!(used, want);
                    assert!(pdu.data == &data[..]);
                }
                other => panic!("{n} bytes, {digests:?}: {other:?}"),
            }
        }
    }
}

// ---- properties ------------------------------------------------------------

fn any_opcode() -> impl Strategy<Value = u8> {
    let mut all = INITIATOR_OPS.to_vec();
    all.extend_from_slice(&TARGET_OPS);
    prop::sample::select(all)
}

/// A BHS with every field random, including junk in TotalAHSLength and
/// DataSegmentLength that `encode` must overwrite.
fn any_bhs() -> impl Strategy<Value = Bhs> {
    (
        any_opcode(),
        any::<bool>(),
        any::<u8>(),
        any::<[u8; 2]>(),
        any::<[u8; 4]>(),
        any::<[u8; 8]>(),
        any::<u32>(),
        any::<[u32; 7]>(),
    )
        .prop_map(|(opcode, imm, flags, b23, junk, lun, itt, words)| {
            let mut b = Bhs::new(opcode, imm, flags);
            b.set_byte(2, b23[0]);
            b.set_byte(3, b23[1]);
            for (i, j) in junk.iter().enumerate() {
                b.set_byte(4 + i, *j);
            }
            b.set_lun(lun);
            b.set_itt(itt);
            for (i, w) in words.iter().enumerate() {
                b.set_u32(20 + 4 * i, *w);
            }
            b
        })
}

/// Data segment lengths: many small ones (where padding varies most), some
/// medium, some up to `MAX_SEG`, and the 64 KiB edges.
fn seg_len() -> impl Strategy<Value = usize> {
    prop_oneof![
        4 => 0usize..=64,
        3 => 0usize..=4096,
        2 => 0usize..=MAX_SEG,
        1 => prop::sample::select(vec![65535usize, 65536, MAX_SEG - 1, MAX_SEG]),
    ]
}

/// What `encode` should put on the wire for `bhs` with `n` bytes of data.
fn expected_bhs(bhs: Bhs, n: usize) -> Bhs {
    let mut want = bhs;
    want.set_byte(4, 0);
    want.set_data_len(n as u32);
    want
}

proptest! {
    #[test]
    fn encode_decode_round_trips(
        bhs in any_bhs(),
        len in seg_len(),
        seed in any::<u64>(),
        bhs2 in any_bhs(),
        len2 in 0usize..=64,
    ) {
        let data = seeded_bytes(seed, len);
        let data2 = seeded_bytes(!seed, len2);
        for digests in ALL_DIGESTS {
            let d = dec(digests, MAX_SEG as u32);
            let mut buf = Vec::new();
            encode(&mut buf, bhs, &data, digests);
            let n1 = buf.len();
            prop_assert_eq!(n1 % 4, 0);
            encode(&mut buf, bhs2, &data2, digests);
            prop_assert_eq!(buf.len() % 4, 0);

            // The first PDU, then the second, then nothing.
            let (pdu, used) = match d.decode(&buf) {
                Ok(Some(x)) => x,
                other => return Err(TestCaseError::fail(format!("first: {other:?}"))),
            };
            prop_assert_eq!(used, n1);
            prop_assert_eq!(pdu.bhs, expected_bhs(bhs, len));
            prop_assert!(pdu.ahs.is_empty());
            prop_assert!(pdu.data == &data[..], "data differs");
            prop_assert_eq!(d.frame_len(&buf), Ok(Some(n1)));
            let (pdu2, used2) = match d.decode(&buf[n1..]) {
                Ok(Some(x)) => x,
                other => return Err(TestCaseError::fail(format!("second: {other:?}"))),
            };
            prop_assert_eq!(n1 + used2, buf.len());
            prop_assert_eq!(pdu2.bhs, expected_bhs(bhs2, len2));
            prop_assert!(pdu2.data == &data2[..], "second data differs");
            prop_assert!(matches!(d.decode(&buf[buf.len()..]), Ok(None)));

            // Every strict prefix of the first PDU is "not yet".
            for cut in 0..n1 {
                prop_assert!(
                    matches!(d.decode(&buf[..cut]), Ok(None)),
                    "prefix of {} bytes of {}", cut, n1
                );
            }

            // max_data is inclusive, and one byte less is refused.
            let exact = dec(digests, len as u32);
            prop_assert!(matches!(exact.decode(&buf), Ok(Some((_, u))) if u == n1));
            if len > 0 {
                let short = dec(digests, len as u32 - 1);
                let want = PduError::TooLong {
                    what: op_name(bhs.opcode()),
                    len: len as u32,
                    max: len as u32 - 1,
                };
                prop_assert_eq!(short.decode(&buf).err(), Some(want.clone()));
                prop_assert_eq!(short.decode(&buf[..BHS_LEN]).err(), Some(want));
            }
        }
    }

    #[test]
    fn an_ahs_spliced_in_by_hand_decodes(
        bhs in any_bhs(),
        ahs_words in 0usize..=255,
        len in 0usize..=600,
        seed in any::<u64>(),
        digests in prop::sample::select(ALL_DIGESTS.to_vec()),
    ) {
        let ahs = seeded_bytes(seed ^ 0xa5a5, ahs_words * 4);
        let data = seeded_bytes(seed, len);
        let f = Frame::build(bhs, &ahs, &data, digests);
        prop_assert_eq!(f.len() % 4, 0);
        let d = dec(digests, MAX_SEG as u32);
        let (pdu, used) = match d.decode(&f.bytes) {
            Ok(Some(x)) => x,
            other => return Err(TestCaseError::fail(format!("{other:?}"))),
        };
        prop_assert_eq!(used, f.len());
        prop_assert!(pdu.ahs == &ahs[..], "AHS differs");
        prop_assert!(pdu.data == &data[..], "data differs");
        prop_assert_eq!(pdu.bhs.ahs_len(), ahs.len());
        for cut in 0..f.len() {
            prop_assert!(matches!(d.decode(&f.bytes[..cut]), Ok(None)), "prefix {}", cut);
        }
    }

    #[test]
    fn parse_in_returns_the_fields_written(
        opcode in prop::sample::select(TARGET_OPS.to_vec()),
        raw in any::<[u8; 48]>(),
        itt in any::<u32>(),
        stat_sn in any::<u32>(),
        exp_cmd_sn in any::<u32>(),
        max_cmd_sn in any::<u32>(),
    ) {
        let mut b = Bhs(raw);
        b.set_byte(0, (raw[0] & 0xc0) | opcode);
        b.set_itt(itt);
        b.set_u32(24, stat_sn);
        b.set_u32(28, exp_cmd_sn);
        b.set_u32(32, max_cmd_sn);
        let want_sn = Sn {
            stat_sn: StatSn(stat_sn),
            exp_cmd_sn: CmdSn(exp_cmd_sn),
            max_cmd_sn: CmdSn(max_cmd_sn),
        };
        let flags = b.flags();
        let u32_at = |i: usize| u32::from_be_bytes([raw[i], raw[i + 1], raw[i + 2], raw[i + 3]]);
        let got = parse_in(&b);
        if opcode == op::DATA_IN && flags & 0x01 != 0 && flags & 0x80 == 0 {
            prop_assert!(matches!(got, Err(PduError::Malformed(_))), "{:?}", got);
            return Ok(());
        }
        let got = match got {
            Ok(x) => x,
            Err(e) => return Err(TestCaseError::fail(format!("{e:?}"))),
        };
        let (got_op, got_itt, sn) = match got {
            In::NopIn { itt, ttt, lun, sn } => {
                prop_assert_eq!(ttt, Ttt(u32_at(20)));
                prop_assert_eq!(&lun[..], &raw[8..16]);
                (op::NOP_IN, Some(itt), sn)
            }
            In::ScsiResponse { itt, response, status, residual, sn } => {
                prop_assert_eq!((response, status), (raw[2], raw[3]));
                prop_assert_eq!(residual.count, u32_at(44));
                prop_assert_eq!(residual.overflow, flags & 0x04 != 0);
                prop_assert_eq!(residual.underflow, flags & 0x02 != 0);
                (op::SCSI_RESPONSE, Some(itt), sn)
            }
            In::DataIn { itt, final_, status, residual, sn, data_sn, offset } => {
                prop_assert_eq!(final_, flags & 0x80 != 0);
                prop_assert_eq!(status, (flags & 0x01 != 0).then_some(raw[3]));
                prop_assert_eq!(residual.count, u32_at(44));
                prop_assert_eq!((data_sn, offset), (DataSn(u32_at(36)), u32_at(40)));
                (op::DATA_IN, Some(itt), sn)
            }
            In::R2T { itt, ttt, sn, r2t_sn, offset, len } => {
                prop_assert_eq!(
                    (ttt, r2t_sn, offset, len),
                    (Ttt(u32_at(20)), R2tSn(u32_at(36)), u32_at(40), u32_at(44))
                );
                (op::R2T, Some(itt), sn)
            }
            In::Async { event, code, params, sn } => {
                prop_assert_eq!((event, code), (raw[36], raw[37]));
                prop_assert_eq!(
                    params,
                    [
                        u16::from_be_bytes([raw[38], raw[39]]),
                        u16::from_be_bytes([raw[40], raw[41]]),
                        u16::from_be_bytes([raw[42], raw[43]]),
                    ]
                );
                (op::ASYNC, None, sn)
            }
            In::Reject { reason, sn } => {
                prop_assert_eq!(reason, raw[2]);
                (op::REJECT, None, sn)
            }
            In::LoginResponse { transit, cont, csg, nsg, tsih, itt, class, detail, sn } => {
                prop_assert_eq!((transit, cont), (flags & 0x80 != 0, flags & 0x40 != 0));
                prop_assert_eq!((csg, nsg), ((flags >> 2) & 3, flags & 3));
                prop_assert_eq!(tsih, u16::from_be_bytes([raw[14], raw[15]]));
                prop_assert_eq!((class, detail), (raw[36], raw[37]));
                (op::LOGIN_RESP, Some(itt), sn)
            }
            In::TextResponse { final_, cont, itt, ttt, sn } => {
                prop_assert_eq!((final_, cont), (flags & 0x80 != 0, flags & 0x40 != 0));
                prop_assert_eq!(ttt, Ttt(u32_at(20)));
                (op::TEXT_RESP, Some(itt), sn)
            }
            In::LogoutResponse { response, itt, sn } => {
                prop_assert_eq!(response, raw[2]);
                (op::LOGOUT_RESP, Some(itt), sn)
            }
            In::TaskMgmtResponse { response, itt, sn } => {
                prop_assert_eq!(response, raw[2]);
                (op::TASK_MGMT_RESP, Some(itt), sn)
            }
        };
        prop_assert_eq!(got_op, opcode);
        if let Some(got_itt) = got_itt {
            prop_assert_eq!(got_itt, Itt(itt));
        }
        prop_assert_eq!(sn, want_sn);
    }

    #[test]
    fn parse_in_never_panics_and_refuses_initiator_opcodes(raw in any::<[u8; 48]>()) {
        let b = Bhs(raw);
        let opcode = raw[0] & 0x3f;
        match parse_in(&b) {
            Err(PduError::Opcode(o)) => {
                prop_assert_eq!(o, opcode);
                prop_assert!(!TARGET_OPS.contains(&opcode));
            }
            Err(PduError::Malformed(_)) => {
                prop_assert_eq!(opcode, op::DATA_IN);
                prop_assert_eq!(raw[1] & 0x81, 0x01);
            }
            Err(e) => return Err(TestCaseError::fail(format!("{e:?}"))),
            Ok(_) => prop_assert!(TARGET_OPS.contains(&opcode)),
        }
    }

    #[test]
    fn serial_numbers_are_a_strict_order_on_a_window(
        a in any::<u32>(),
        d in 1u32..(1 << 31),
        e in 1u32..(1 << 31),
    ) {
        let a = CmdSn(a);
        let b = a.plus(d);
        prop_assert!(a.before(b));
        prop_assert!(!b.before(a));
        prop_assert!(a.not_after(b) && !b.not_after(a));
        prop_assert!(!a.before(a) && a.not_after(a));
        prop_assert_eq!(b.since(a), d);
        // Transitive inside a window of less than 2^31.
        if u64::from(d) + u64::from(e) < 1 << 31 {
            let c = b.plus(e);
            prop_assert!(b.before(c) && a.before(c) && !c.before(a));
        }
    }
}

// ---- bounded fuzz run --------------------------------------------------------

const FUZZ_ITERS: u32 = 200_000;

/// A random valid frame; its data length is within `max_data`.
fn random_frame(rng: &mut Rng, digests: Digests, max_data: u32) -> Frame {
    let mut b = Bhs::default();
    rng.fill(&mut b.0);
    let opcode = if rng.chance(1, 2) {
        rng.pick(&TARGET_OPS)
    } else {
        rng.pick(&INITIATOR_OPS)
    };
    b.set_byte(0, (b.byte(0) & 0xc0) | opcode);
    let ahs_words = match rng.below(4) {
        0 | 1 => 0,
        2 => rng.range(1, 4),
        _ => rng.range(0, 255),
    };
    let cap = match rng.below(8) {
        0..=4 => 64,
        5 | 6 => 600,
        _ => 9000,
    };
    let dl = rng.range(0, cap.min(max_data as usize));
    let ahs = rng.bytes(ahs_words * 4);
    let data = rng.bytes(dl);
    Frame::build(b, &ahs, &data, digests)
}

/// Flips one random bit of `buf[at]`.
fn flip(rng: &mut Rng, buf: &mut [u8], at: usize) {
    buf[at] ^= 1 << rng.below(8);
}

/// A position in `r`, which must not be empty.
fn pos_in(rng: &mut Rng, r: &Range<usize>) -> usize {
    r.start + rng.below(r.len())
}

/// What a mutation promises about the outcome, beyond the model.
#[derive(Debug)]
enum Expect {
    /// Exactly this outcome.
    Exactly(Outcome),
    /// Not a decoded PDU (a length field changed under a header digest).
    NoPdu,
    /// Only the model and the invariants.
    Model,
}

/// One fuzz case: a valid frame, the decoder it is fed to and what it
/// decodes to unmutated.
struct Case {
    f: Frame,
    d: Decoder,
    ok: Outcome,
    /// The opcode's name, as errors carry it.
    what: &'static str,
}

impl Case {
    fn new(rng: &mut Rng) -> Case {
        let digests = rng.pick(&ALL_DIGESTS);
        let max_data = rng.pick(&[0u32, 1, 4, 512, 8192, 65536, (1 << 24) - 1]);
        let d = dec(digests, max_data);
        let f = random_frame(rng, digests, max_data);
        let ok = Outcome::Pdu {
            n: f.len(),
            ahs: BHS_LEN..f.hdr_end,
            data: f.data(),
        };
        let what = op_name(f.bytes[0] & 0x3f);
        Case { f, d, ok, what }
    }

    /// Applies mutation number `mutation` (0..10) to `buf`, a copy of the
    /// frame, and says what it promises.
    fn mutate(&self, rng: &mut Rng, buf: &mut Vec<u8>, mutation: usize) -> Expect {
        let (f, ok) = (&self.f, &self.ok);
        match mutation {
            // Random bit flips anywhere in the frame.
            0 => {
                let mut touched = Vec::new();
                for _ in 0..rng.range(1, 3) {
                    let at = rng.below(buf.len());
                    flip(rng, buf, at);
                    touched.push(at);
                }
                expect_after_flips(f, buf, &touched, ok)
            }
            1 => self.aimed_flip(rng, buf),
            2 => self.overwrite_lengths(rng, buf),
            // Truncation: never a PDU, never an error.
            3 => {
                let keep = rng.below(f.len());
                buf.truncate(keep);
                Expect::Exactly(Outcome::NotYet)
            }
            // Garbage after the frame is left alone.
            4 => {
                let extra = {
                    let n = rng.range(1, 64);
                    rng.bytes(n)
                };
                buf.extend_from_slice(&extra);
                Expect::Exactly(ok.clone())
            }
            5 => self.nonzero_padding(rng, buf),
            6 => self.overwrite_digest(rng, buf),
            // Havoc: several edits at once, including inserted and deleted
            // bytes; only the model and the invariants hold.
            7 | 8 => {
                for _ in 0..rng.range(1, 6) {
                    havoc(rng, buf);
                }
                Expect::Model
            }
            // Pure garbage, sometimes with a plausible length.
            _ => {
                *buf = {
                    let n = rng.range(0, 200);
                    rng.bytes(n)
                };
                if buf.len() >= BHS_LEN && rng.chance(1, 2) {
                    buf[4] = rng.range(0, 3) as u8;
                    buf[5] = 0;
                    buf[6] = 0;
                }
                Expect::Model
            }
        }
    }

    /// One flip aimed at a region, so that small regions (padding,
    /// digests) are hit often.
    fn aimed_flip(&self, rng: &mut Rng, buf: &mut [u8]) -> Expect {
        let f = &self.f;
        let regions = [
            f.header(),
            f.header_digest(),
            f.data(),
            f.padding(),
            f.data_digest(),
        ];
        let r = &regions[rng.below(regions.len())];
        if r.is_empty() {
            return Expect::Exactly(self.ok.clone());
        }
        let mut at = pos_in(rng, r);
        if (4..8).contains(&at) {
            at = 0;
        }
        flip(rng, buf, at);
        expect_after_flips(f, buf, &[at], &self.ok)
    }

    /// Length fields overwritten with random or huge values, and sometimes
    /// only the BHS is there.
    fn overwrite_lengths(&self, rng: &mut Rng, buf: &mut Vec<u8>) -> Expect {
        let (f, max_data, digests) = (&self.f, self.d.max_data, self.d.digests);
        let v = match rng.below(4) {
            0 => rng.next_u32(),
            1 => 0xff00_0000 | rng.next_u32(),
            2 => (u32::from(buf[4]) << 24) | rng.range(max_data as usize, 0xff_ffff) as u32,
            _ => {
                let dl = f.dl as i64 + rng.range(0, 16) as i64 - 8;
                (u32::from(rng.next_u32() as u8) << 24) | (dl.clamp(0, 0xff_ffff) as u32)
            }
        };
        buf[4..8].copy_from_slice(&v.to_be_bytes());
        if rng.chance(1, 4) {
            buf.truncate(BHS_LEN);
        }
        let dl = v & 0xff_ffff;
        // A header digest that is in and no longer matches is reported
        // first (the model says which).
        let digest_in = digests.header && buf.len() >= BHS_LEN + 4 * buf[4] as usize + 4;
        if dl > max_data && !(digest_in && buf[4..8] != f.bytes[4..8]) {
            Expect::Exactly(Outcome::TooLong {
                what: self.what,
                len: dl,
                max: max_data,
            })
        } else if buf[4..8] != f.bytes[4..8] && digests.header {
            Expect::NoPdu
        } else {
            Expect::Model
        }
    }

    /// Non-zero padding: covered by the data digest, ignored without.
    fn nonzero_padding(&self, rng: &mut Rng, buf: &mut [u8]) -> Expect {
        let p = self.f.padding();
        if p.is_empty() {
            return Expect::Exactly(self.ok.clone());
        }
        let at = pos_in(rng, &p);
        buf[at] = rng.range(1, 255) as u8;
        if self.d.digests.data {
            Expect::Exactly(Outcome::DataDigest(self.what))
        } else {
            Expect::Exactly(self.ok.clone())
        }
    }

    /// A digest overwritten with another value.
    fn overwrite_digest(&self, rng: &mut Rng, buf: &mut [u8]) -> Expect {
        let f = &self.f;
        let r = if rng.chance(1, 2) {
            f.header_digest()
        } else {
            f.data_digest()
        };
        if r.is_empty() {
            return Expect::Exactly(self.ok.clone());
        }
        let old = u32::from_le_bytes([
            buf[r.start],
            buf[r.start + 1],
            buf[r.start + 2],
            buf[r.start + 3],
        ]);
        let new = old ^ rng.next_u32().max(1);
        buf[r.clone()].copy_from_slice(&new.to_le_bytes());
        if r == f.header_digest() {
            Expect::Exactly(Outcome::HeaderDigest(self.what))
        } else {
            Expect::Exactly(Outcome::DataDigest(self.what))
        }
    }

    /// Decodes the mutated `buf` and checks the outcome against the
    /// invariants, the model and the mutation's promise.
    fn judge(
        &self,
        buf: &[u8],
        expect: &Expect,
        mutation: usize,
        ctx: &dyn Fn() -> String,
    ) -> Outcome {
        let d = &self.d;
        let got = match catch_unwind(AssertUnwindSafe(|| run(d, buf))) {
            Ok(o) => o,
            Err(_) => panic!("{}: decode panicked", ctx()),
        };
        if let Err(e) = check_invariants(d, buf, &got) {
            panic!("{}: {e}", ctx());
        }
        let want = model(d, buf);
        assert_eq!(got, want, "{}: differs from the model", ctx());
        match expect {
            Expect::Exactly(o) => assert_eq!(&got, o, "{}: not as expected", ctx()),
            Expect::NoPdu => assert!(
                !matches!(got, Outcome::Pdu { .. }),
                "{}: a changed length under a header digest decoded",
                ctx()
            ),
            Expect::Model => {}
        }
        if let Outcome::Pdu { data, .. } = &got {
            if mutation == 4 || mutation == 5 {
                let f = &self.f;
                assert_eq!(&buf[data.clone()], &f.bytes[f.data()], "{}", ctx());
            }
        }
        got
    }
}

#[test]
fn decoder_fuzz_run() {
    let mut rng = Rng::new(0x1057_c0de_5eed_0001);
    // Outcome kinds seen per mutation, to show that the run reaches them.
    let mut seen = [[0u32; 6]; 10];
    for iter in 0..FUZZ_ITERS {
        let case = Case::new(&mut rng);
        let mut buf = case.f.bytes.clone();
        let mutation = rng.below(10);
        let expect = case.mutate(&mut rng, &mut buf, mutation);
        let ctx = || {
            format!(
                "iteration {iter}, mutation {mutation}, {:?}, {} bytes, head {:02x?}",
                case.d,
                buf.len(),
                &buf[..buf.len().min(BHS_LEN)]
            )
        };
        let got = case.judge(&buf, &expect, mutation, &ctx);
        seen[mutation][got.kind()] += 1;
    }
    // Each kind of outcome that a mutation can lead to is reached.
    let total = |k: usize| seen.iter().map(|s| s[k]).sum::<u32>();
    for (k, name) in ["NotYet", "Pdu", "TooLong", "HeaderDigest", "DataDigest"]
        .iter()
        .enumerate()
    {
        assert!(
            total(k) > 100,
            "the run reached {name} only {} times",
            total(k)
        );
    }
    assert_eq!(total(5), 0);
    assert!(seen[5][4] > 100, "padding flips seen by the data digest");
    assert!(seen[5][1] > 100, "padding flips ignored without digest");
}

/// The outcome that bit flips at `touched` must lead to. Flips that reach
/// the length fields change the framing: under a header digest that is
/// never a PDU; without one the model decides. Otherwise: a flip in BHS,
/// AHS or header digest is a header digest error when header digests are
/// on; then a flip in data, padding or data digest is a data digest error
/// when data digests are on; otherwise the frame decodes as before (a flip
/// in the BHS shows in the decoded BHS, which `run` checks).
fn expect_after_flips(f: &Frame, buf: &[u8], touched: &[usize], ok: &Outcome) -> Expect {
    if buf[4..8] != f.bytes[4..8] {
        return if f.digests.header {
            Expect::NoPdu
        } else {
            Expect::Model
        };
    }
    let changed: Vec<usize> = touched
        .iter()
        .copied()
        .filter(|&i| buf[i] != f.bytes[i])
        .collect();
    let what = op_name(buf[0] & 0x3f);
    let in_header = |i: &usize| *i < f.header_digest().end;
    let in_data = |i: &usize| *i >= f.data_at && *i < f.data_digest().end;
    if f.digests.header && changed.iter().any(in_header) {
        Expect::Exactly(Outcome::HeaderDigest(what))
    } else if f.digests.data && f.dl > 0 && changed.iter().any(in_data) {
        Expect::Exactly(Outcome::DataDigest(what))
    } else {
        Expect::Exactly(ok.clone())
    }
}

/// One random edit: overwrite, flip, insert, delete, truncate or append.
fn havoc(rng: &mut Rng, buf: &mut Vec<u8>) {
    match rng.below(7) {
        0 if !buf.is_empty() => {
            let at = rng.below(buf.len());
            buf[at] = rng.next_u32() as u8;
        }
        1 if !buf.is_empty() => {
            let at = rng.below(buf.len());
            flip(rng, buf, at);
        }
        2 => {
            let at = rng.range(0, buf.len());
            let ins = {
                let n = rng.range(1, 8);
                rng.bytes(n)
            };
            buf.splice(at..at, ins);
        }
        3 if !buf.is_empty() => {
            let at = rng.below(buf.len());
            let n = rng.range(1, 8).min(buf.len() - at);
            buf.drain(at..at + n);
        }
        4 => {
            let keep = rng.range(0, buf.len());
            buf.truncate(keep);
        }
        5 => {
            let extra = {
                let n = rng.range(1, 32);
                rng.bytes(n)
            };
            buf.extend_from_slice(&extra);
        }
        _ if buf.len() >= 8 => {
            let v = rng.next_u32().to_be_bytes();
            buf[4..8].copy_from_slice(&v);
        }
        _ => {}
    }
}

// ---- streams cut anywhere ----------------------------------------------------

/// What one decoded PDU carried, owned.
type Owned = (Bhs, Vec<u8>, Vec<u8>, usize);

fn drain(d: &Decoder, buf: &mut Vec<u8>, out: &mut Vec<Owned>) {
    loop {
        let taken = match d.decode(buf) {
            Ok(Some((pdu, n))) => {
                out.push((pdu.bhs, pdu.ahs.to_vec(), pdu.data.to_vec(), n));
                n
            }
            Ok(None) => return,
            Err(e) => panic!("{e:?}"),
        };
        buf.drain(..taken);
    }
}

#[test]
fn a_stream_cut_at_every_byte_boundary_decodes_the_same() {
    let mut rng = Rng::new(0xc0ff_ee00_1234_5678);
    for digests in ALL_DIGESTS {
        let d = dec(digests, 8192);
        let mut stream = Vec::new();
        let mut frames = Vec::new();
        for (i, dl) in [0usize, 1, 2, 3, 4, 5, 7, 48, 100, 0, 257]
            .iter()
            .enumerate()
        {
            let mut b = Bhs::new(rng.pick(&TARGET_OPS), false, 0x80);
            b.set_itt(i as u32);
            let ahs = if i % 4 == 1 { rng.bytes(8) } else { Vec::new() };
            let data = rng.bytes(*dl);
            let f = Frame::build(b, &ahs, &data, digests);
            stream.extend_from_slice(&f.bytes);
            frames.push((ahs, data, f.len()));
        }

        // The whole stream at once.
        let mut whole = Vec::new();
        let mut all = stream.clone();
        drain(&d, &mut all, &mut whole);
        assert!(all.is_empty());
        assert_eq!(whole.len(), frames.len());
        for (i, ((bhs, ahs, data, n), (fa, fd, fl))) in whole.iter().zip(&frames).enumerate() {
            assert_eq!(bhs.itt(), i as u32);
            assert_eq!((ahs, data, *n), (fa, fd, *fl));
        }

        // Growing prefixes, one byte more each time, decoding in place
        // from a moving start.
        let mut grown = Vec::new();
        let mut start = 0;
        for end in 0..=stream.len() {
            while let Ok(Some((pdu, n))) = d.decode(&stream[start..end]) {
                grown.push((pdu.bhs, pdu.ahs.to_vec(), pdu.data.to_vec(), n));
                start += n;
            }
            assert!(d.decode(&stream[start..end]).is_ok());
        }
        assert_eq!(start, stream.len());
        assert_eq!(grown, whole, "{digests:?}: byte by byte");

        // Two reads, cut at every boundary, through a receive buffer that
        // is drained from the front.
        for cut in 0..=stream.len() {
            let mut got = Vec::new();
            let mut rx = stream[..cut].to_vec();
            drain(&d, &mut rx, &mut got);
            rx.extend_from_slice(&stream[cut..]);
            drain(&d, &mut rx, &mut got);
            assert!(rx.is_empty());
            assert_eq!(got, whole, "{digests:?}: cut at {cut}");
        }
    }
}
