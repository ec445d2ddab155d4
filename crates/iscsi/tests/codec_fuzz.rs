//! A bounded, deterministic fuzz run of the PDU decoder
//! (`iotoll_iscsi::pdu`), through its public API only: mutated frames (bit
//! flips, length fields, truncation, garbage, padding, digests, AHS)
//! checked against an independent model of RFC 7143 framing
//! (tests/common/codec.rs), with semantic expectations per mutation.

#[path = "common/codec.rs"]
mod codec;

use codec::*;
use iotoll_iscsi::pdu::{op_name, Bhs, Decoder, Digests, BHS_LEN};
use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe};

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
