//! The access-spec scheduler: turns transfer size, % read, % random and a
//! region into a stream of (read or write, offset) per worker, the way
//! Iometer does. Each I/O is random with probability % random, otherwise it
//! continues sequentially right after the worker's previous I/O; each is a
//! read with probability % read.

use crate::rng::Rng;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Region {
    /// First byte of the region (aligned).
    pub start: u64,
    /// Length in bytes; at least one transfer.
    pub len: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Io {
    pub read: bool,
    pub offset: u64,
}

pub struct IoGen {
    rng: Rng,
    region: Region,
    bs: u64,
    align: u64,
    read_pct: u32,
    random_pct: u32,
    /// Aligned start positions a transfer can have: `(len - bs) / align + 1`.
    positions: u64,
    next_seq: u64,
}

impl IoGen {
    /// `worker` of `workers` starts its sequential stream at its share of the
    /// region, so that workers do not read the same blocks in lock step.
    /// Callers guarantee `bs <= region.len`, `align > 0` and aligned inputs.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        region: Region,
        bs: u64,
        align: u64,
        read_pct: u32,
        random_pct: u32,
        worker: u32,
        workers: u32,
        seed: u64,
    ) -> Self {
        let positions = (region.len - bs) / align + 1;
        let start_pos = positions * worker as u64 / workers.max(1) as u64;
        IoGen {
            rng: Rng::new(seed),
            region,
            bs,
            align,
            read_pct,
            random_pct,
            positions,
            next_seq: region.start + start_pos * align,
        }
    }

    #[inline]
    pub fn next_io(&mut self) -> Io {
        let offset = if self.random_pct > 0 && self.rng.percent(self.random_pct) {
            self.region.start + self.rng.below(self.positions) * self.align
        } else {
            self.next_seq
        };
        let after = offset + self.bs;
        // Wrap when the next transfer would run past the region's end.
        self.next_seq = if after + self.bs > self.region.start + self.region.len {
            self.region.start
        } else {
            after
        };
        let read = self.read_pct >= 100 || (self.read_pct > 0 && self.rng.percent(self.read_pct));
        Io { read, offset }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// One worker's stream over `len` bytes from `start`.
    fn gen_at(start: u64, len: u64, bs: u64, align: u64, mix: (u32, u32), seed: u64) -> IoGen {
        let (read, random) = mix;
        IoGen::new(Region { start, len }, bs, align, read, random, 0, 1, seed)
    }

    /// Fraction of reads and of I/Os that continue right after the previous one.
    fn fractions(g: &mut IoGen, n: usize) -> (f64, f64) {
        let mut reads = 0;
        let mut seq = 0;
        let mut prev = g.next_io();
        for _ in 0..n {
            let io = g.next_io();
            reads += io.read as usize;
            seq += (io.offset == prev.offset + g.bs) as usize;
            prev = io;
        }
        (reads as f64 / n as f64, seq as f64 / n as f64)
    }

    #[test]
    fn read_and_random_fractions_within_tolerance() {
        for (read, random) in [(95, 75), (70, 100), (67, 100), (0, 0), (100, 0), (50, 50)] {
            let mut g = gen_at(4096, 1 << 24, 4096, 4096, (read, random), 42);
            let (r, s) = fractions(&mut g, 200_000);
            // 200k Bernoulli trials: 3 sigma is below 0.35 percentage points.
            assert!((r - read as f64 / 100.0).abs() < 0.005, "read {read}: {r}");
            let seq_expected = 1.0 - random as f64 / 100.0;
            // A random I/O lands right after its predecessor with probability 1/4096;
            // a wrap also breaks a sequential run once per 4096 I/Os.
            assert!((s - seq_expected).abs() < 0.005, "random {random}: seq {s}");
        }
    }

    #[test]
    fn sequential_wraps_at_region_end() {
        let mut g = gen_at(0, 4 * 8192, 8192, 512, (100, 0), 1);
        let offs: Vec<u64> = (0..6).map(|_| g.next_io().offset).collect();
        assert_eq!(offs, vec![0, 8192, 16384, 24576, 0, 8192]);
    }

    #[test]
    fn workers_start_at_their_share() {
        let r = Region {
            start: 0,
            len: 1 << 20,
        };
        let starts: Vec<u64> = (0..4)
            .map(|w| IoGen::new(r, 4096, 4096, 100, 0, w, 4, 9).next_io().offset)
            .collect();
        assert_eq!(starts, vec![0, 262144, 524288, 786432]);
    }

    #[test]
    fn random_covers_both_ends() {
        let mut g = gen_at(0, 4 * 4096, 4096, 4096, (100, 100), 5);
        let mut seen = [false; 4];
        for _ in 0..1000 {
            seen[(g.next_io().offset / 4096) as usize] = true;
        }
        assert_eq!(seen, [true; 4]);
    }

    proptest! {
        #[test]
        fn offsets_are_aligned_and_in_bounds(
            start_blocks in 0u64..1000,
            len_blocks in 1u64..10_000,
            bs_blocks in 1u64..64,
            align_shift in 9u32..13,
            read in 0u32..=100,
            random in 0u32..=100,
            worker in 0u32..8,
            seed: u64,
        ) {
            let align = 1u64 << align_shift;
            let bs = bs_blocks * align;
            let len = (len_blocks * align).max(bs);
            let region = Region { start: start_blocks * align, len };
            let mut g = IoGen::new(region, bs, align, read, random, worker, 8, seed);
            for _ in 0..500 {
                let io = g.next_io();
                prop_assert_eq!(io.offset % align, 0);
                prop_assert!(io.offset >= region.start);
                prop_assert!(io.offset + bs <= region.start + region.len);
            }
        }
    }
}
