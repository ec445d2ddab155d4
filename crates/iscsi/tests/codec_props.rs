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

//!
//! The fuzz run is tests/codec_fuzz.rs; what both use, tests/common/codec.rs.

#[path = "common/codec.rs"]
mod codec;

use codec::*;
// Ours, not proptest's.
use codec::Rng;
use crc32c::crc32c;
use iotoll_iscsi::pdu::{
    encode, op, op_name, pad4, parse_in, Bhs, CmdSn, DataSn, Decoder, In, Itt, PduError, R2tSn, Sn,
    StatSn, Ttt, BHS_LEN,
};
use proptest::prelude::*;

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
