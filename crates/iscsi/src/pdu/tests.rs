//! The codec's unit tests; tests/codec_props.rs holds its properties and
//! tests/codec_fuzz.rs its fuzz run.

use super::*;

fn dec(d: Digests) -> Decoder {
    Decoder {
        digests: d,
        max_data: 1 << 20,
    }
}

#[test]
fn a_pdu_round_trips_with_and_without_digests() {
    let cdb = [0x88u8; 16];
    for digests in [
        Digests::default(),
        Digests {
            header: true,
            data: true,
        },
    ] {
        for data in [&b""[..], b"a", b"abcde", &[7u8; 4096][..]] {
            let bhs = ScsiCommand {
                itt: Itt(9),
                lun: [0, 1, 0, 0, 0, 0, 0, 0],
                read: false,
                write: true,
                final_: true,
                edtl: 4096,
                cmd_sn: CmdSn(5),
                exp_stat_sn: StatSn(6),
                cdb: &cdb,
            }
            .bhs();
            let mut out = Vec::new();
            encode(&mut out, bhs, data, digests);
            assert_eq!(out.len() % 4, 0);
            out.extend_from_slice(b"next");
            let (pdu, n) = dec(digests).decode(&out).unwrap().unwrap();
            assert_eq!(n, out.len() - 4);
            assert_eq!(pdu.data, data);
            assert_eq!(pdu.bhs.itt(), 9);
            assert_eq!(pdu.bhs.u32_at(20), 4096);
            assert_eq!(&pdu.bhs.0[32..48], &cdb);
            // Every strict prefix is "not yet".
            for cut in [0, 1, 47, n - 1] {
                assert!(dec(digests).decode(&out[..cut]).unwrap().is_none());
            }
        }
    }
}

#[test]
fn a_corrupted_digest_is_named() {
    let d = Digests {
        header: true,
        data: true,
    };
    let mut out = Vec::new();
    encode(&mut out, Bhs::new(op::DATA_IN, false, 0x80), b"hello", d);
    let mut h = out.clone();
    h[20] ^= 1;
    assert_eq!(
        dec(d).decode(&h).unwrap_err(),
        PduError::HeaderDigest("Data-In")
    );
    let mut x = out.clone();
    x[53] ^= 1;
    assert_eq!(
        dec(d).decode(&x).unwrap_err(),
        PduError::DataDigest("Data-In")
    );
}

#[test]
fn an_oversized_segment_is_refused_before_it_is_read() {
    let mut b = Bhs::new(op::DATA_IN, false, 0);
    b.set_data_len(9000);
    let d = Decoder {
        digests: Digests::default(),
        max_data: 8192,
    };
    assert!(matches!(
        d.decode(&b.0),
        Err(PduError::TooLong { len: 9000, .. })
    ));
}

#[test]
fn target_pdus_are_typed() {
    let mut b = Bhs::new(op::DATA_IN, false, 0x81 | 0x02);
    b.set_itt(3);
    b.set_u32(24, 10);
    b.set_u32(28, 11);
    b.set_u32(32, 40);
    b.set_u32(36, 2);
    b.set_u32(40, 8192);
    b.set_u32(44, 512);
    b.set_byte(3, 0);
    match parse_in(&b).unwrap() {
        In::DataIn {
            itt,
            final_,
            status,
            residual,
            sn,
            data_sn,
            offset,
        } => {
            assert_eq!(
                (itt, final_, status, data_sn, offset),
                (Itt(3), true, Some(0), DataSn(2), 8192)
            );
            assert!(residual.underflow && residual.count == 512);
            assert_eq!(sn.max_cmd_sn, CmdSn(40));
        }
        other => panic!("{other:?}"),
    }
    let s_without_f = Bhs::new(op::DATA_IN, false, 0x01);
    assert!(parse_in(&s_without_f).is_err());
    assert_eq!(
        parse_in(&Bhs::new(op::SCSI_COMMAND, false, 0)),
        Err(PduError::Opcode(1))
    );
}

#[test]
fn login_request_flags() {
    let b = LoginRequest {
        isid: [0x40, 0, 0, 1, 2, 3],
        tsih: 0,
        itt: Itt(1),
        cid: 0,
        cmd_sn: CmdSn(0),
        exp_stat_sn: StatSn(0),
        csg: Stage::Operational,
        transit: Some(Stage::FullFeature),
    }
    .bhs();
    assert_eq!(b.flags(), 0x80 | (1 << 2) | 3);
    assert!(b.immediate());
    assert_eq!(b.opcode(), op::LOGIN_REQ);
}

/// Every initiator PDU, byte for byte as the positional builders these
/// structs replaced encoded it (checked against them on 20,000 random
/// inputs before they went).
#[test]
fn initiator_pdus_keep_their_wire_bytes() {
    let cdb: Vec<u8> = (1..=16).collect();
    let lun = [1, 2, 3, 4, 5, 6, 7, 8];
    let cases = [
        (
            ScsiCommand {
                itt: Itt(0x0102_0304),
                lun,
                read: true,
                write: false,
                final_: true,
                edtl: 0x1122_3344,
                cmd_sn: CmdSn(0xffff_fffe),
                exp_stat_sn: StatSn(0x5566_7788),
                cdb: &cdb,
            }
            .bhs(),
            "01c100000000000001020304050607080102030411223344fffffffe556677880102030405060708090a0b0c0d0e0f10",
        ),
        (
            DataOut {
                itt: Itt(0x0a0b_0c0d),
                ttt: Ttt(0x1112_1314),
                lun,
                exp_stat_sn: StatSn(0x2122_2324),
                data_sn: DataSn(0x3132_3334),
                offset: 0x4142_4344,
                final_: true,
            }
            .bhs(),
            "058000000000000001020304050607080a0b0c0d11121314000000002122232400000000313233344142434400000000",
        ),
        (
            NopOut {
                itt: Itt::NONE,
                ttt: Ttt(0x1234_5678),
                lun,
                cmd_sn: CmdSn(0x99),
                exp_stat_sn: StatSn(0x77),
            }
            .bhs(),
            "40800000000000000102030405060708ffffffff12345678000000990000007700000000000000000000000000000000",
        ),
        (
            LoginRequest {
                isid: [0x80, 1, 2, 3, 4, 5],
                tsih: 0x1234,
                itt: Itt(0x0bad_cafe),
                cid: 0x4321,
                cmd_sn: CmdSn(1),
                exp_stat_sn: StatSn(0xdead_beef),
                csg: Stage::Operational,
                transit: Some(Stage::FullFeature),
            }
            .bhs(),
            "438700000000000080010203040512340badcafe4321000000000001deadbeef00000000000000000000000000000000",
        ),
        (
            TextRequest {
                itt: Itt(5),
                ttt: Ttt::NONE,
                cmd_sn: CmdSn(6),
                exp_stat_sn: StatSn(7),
            }
            .bhs(),
            "4480000000000000000000000000000000000005ffffffff000000060000000700000000000000000000000000000000",
        ),
        (
            LogoutRequest {
                itt: Itt(NO_TAG - 1),
                cmd_sn: CmdSn(0x10),
                exp_stat_sn: StatSn(0x20),
            }
            .bhs(),
            "46800000000000000000000000000000fffffffe00000000000000100000002000000000000000000000000000000000",
        ),
    ];
    for (bhs, want) in cases {
        assert_eq!(hex::encode(bhs.0), want, "{bhs:?}");
    }
}
