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
    /// Transfer size in bytes.
    pub len: u64,
    /// The access-spec line it came from.
    pub line: usize,
}

/// One access-spec line as the generator uses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Line {
    /// Percent of the I/Os; a spec's lines add up to 100.
    pub share_pct: u32,
    pub bs: u64,
    /// Offset alignment (> 0, dividing `bs` under O_DIRECT).
    pub align: u64,
    pub read_pct: u32,
    pub random_pct: u32,
}

struct LineGen {
    line: Line,
    /// Aligned start positions a transfer of this line can have:
    /// `(len - bs) / align + 1`.
    positions: u64,
    /// Draws of `below(100)` under this pick this line or an earlier one.
    upto: u32,
}

pub struct IoGen {
    rng: Rng,
    region: Region,
    lines: Vec<LineGen>,
    /// Where the next sequential I/O starts: right after the previous one.
    next_seq: u64,
}

impl IoGen {
    /// `worker` of `workers` starts its sequential stream at its share of the
    /// region, so that workers do not read the same blocks in lock step.
    /// Callers guarantee every line's `bs <= region.len`, `align > 0`,
    /// aligned inputs, and shares adding up to 100.
    pub fn new(region: Region, lines: &[Line], worker: u32, workers: u32, seed: u64) -> Self {
        let mut upto = 0;
        let lines: Vec<LineGen> = lines
            .iter()
            .map(|&line| {
                upto += line.share_pct;
                LineGen {
                    line,
                    positions: (region.len - line.bs) / line.align + 1,
                    upto,
                }
            })
            .collect();
        let first = lines[0].line;
        let start_pos = lines[0].positions * worker as u64 / workers.max(1) as u64;
        IoGen {
            rng: Rng::new(seed),
            region,
            next_seq: region.start + start_pos * first.align,
            lines,
        }
    }

    /// The line of the next I/O: drawn by share, unless there is only one.
    #[inline]
    fn pick(&mut self) -> usize {
        if self.lines.len() == 1 {
            return 0;
        }
        let d = self.rng.below(100) as u32;
        self.lines.iter().position(|l| d < l.upto).unwrap_or(0)
    }

    #[inline]
    pub fn next_io(&mut self) -> Io {
        let i = self.pick();
        let LineGen {
            line, positions, ..
        } = self.lines[i];
        let (start, end) = (self.region.start, self.region.start + self.region.len);
        let offset = if line.random_pct > 0 && self.rng.percent(line.random_pct) {
            start + self.rng.below(positions) * line.align
        } else {
            // Continue after the previous I/O, on this line's alignment;
            // wrap when the transfer would run past the region's end.
            let at = start + (self.next_seq - start).div_ceil(line.align) * line.align;
            if at + line.bs > end {
                start
            } else {
                at
            }
        };
        self.next_seq = offset + line.bs;
        let read = line.read_pct >= 100 || (line.read_pct > 0 && self.rng.percent(line.read_pct));
        Io {
            read,
            offset,
            len: line.bs,
            line: i,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// One worker's stream over `len` bytes from `start`.
    fn gen_at(start: u64, len: u64, bs: u64, align: u64, mix: (u32, u32), seed: u64) -> IoGen {
        IoGen::new(
            Region { start, len },
            &[line(100, bs, align, mix)],
            0,
            1,
            seed,
        )
    }

    fn line(share_pct: u32, bs: u64, align: u64, (read_pct, random_pct): (u32, u32)) -> Line {
        Line {
            share_pct,
            bs,
            align,
            read_pct,
            random_pct,
        }
    }

    /// Fraction of reads and of I/Os that continue right after the previous one.
    fn fractions(g: &mut IoGen, n: usize) -> (f64, f64) {
        let mut reads = 0;
        let mut seq = 0;
        let mut prev = g.next_io();
        for _ in 0..n {
            let io = g.next_io();
            reads += io.read as usize;
            seq += (io.offset == prev.offset + prev.len) as usize;
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
            .map(|w| {
                IoGen::new(r, &[line(100, 4096, 4096, (100, 0))], w, 4, 9)
                    .next_io()
                    .offset
            })
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

    /// A File Server mix: each line's share of the I/Os within 4 sigma of
    /// its request over 400k draws, every I/O of its line's size, aligned
    /// and inside the region, and sequential I/Os of different sizes
    /// following each other without gaps.
    #[test]
    fn mixed_lines_keep_their_shares() {
        let shares = [10, 5, 5, 60, 2, 4, 4, 10];
        let sizes = [512, 1024, 2048, 4096, 8192, 16384, 32768, 65536];
        let lines: Vec<Line> = (shares.iter().zip(sizes))
            .map(|(&share, bs)| line(share, bs, 512, (80, 50)))
            .collect();
        let region = Region {
            start: 1 << 20,
            len: 64 << 20,
        };
        let mut g = IoGen::new(region, &lines, 0, 1, 7);
        let n = 400_000;
        let mut count = [0u64; 8];
        let mut prev_end = None;
        let mut seq = 0;
        for _ in 0..n {
            let io = g.next_io();
            count[io.line] += 1;
            assert_eq!(io.len, sizes[io.line]);
            assert_eq!(io.offset % 512, 0);
            assert!(io.offset >= region.start && io.offset + io.len <= region.start + region.len);
            seq += (prev_end == Some(io.offset)) as u32;
            prev_end = Some(io.offset + io.len);
        }
        for (i, &share) in shares.iter().enumerate() {
            let p = share as f64 / 100.0;
            let sigma = (p * (1.0 - p) / n as f64).sqrt();
            let got = count[i] as f64 / n as f64;
            assert!((got - p).abs() < 4.0 * sigma, "line {i}: {got} vs {p}");
        }
        // Half the I/Os are sequential: they start where the last ended.
        let seq = seq as f64 / n as f64;
        assert!((seq - 0.5).abs() < 0.01, "{seq}");
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
            let mut g = IoGen::new(region, &[line(100, bs, align, (read, random))], worker, 8, seed);
            for _ in 0..500 {
                let io = g.next_io();
                prop_assert_eq!(io.offset % align, 0);
                prop_assert!(io.offset >= region.start);
                prop_assert!(io.offset + bs <= region.start + region.len);
            }
        }
    }
}
