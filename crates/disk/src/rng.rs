//! The workload RNG: xoshiro256++ (`rand_xoshiro`) for offsets, the
//! read/write coin and test-file contents. Not cryptographic; it only has to
//! be fast and statistically uniform.

use rand_xoshiro::rand_core::{Rng as _, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

pub struct Rng(Xoshiro256PlusPlus);

impl Rng {
    /// Seeded through splitmix64, so any seed (even 0) spreads over the whole state.
    pub fn new(seed: u64) -> Self {
        Rng(Xoshiro256PlusPlus::seed_from_u64(seed))
    }

    /// A seed that differs per process, per call and per time.
    pub fn seed_from_time(salt: u64) -> u64 {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        t ^ (std::process::id() as u64).rotate_left(32) ^ salt.wrapping_mul(0x9E37_79B9_7F4A_7C15)
    }

    /// Uniform in `0..n` (Lemire's multiply-shift; bias below 2^-64 * n).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.0.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// True with probability `pct` / 100; exact at 0 and 100.
    #[inline]
    pub fn percent(&mut self, pct: u32) -> bool {
        (self.below(100) as u32) < pct
    }

    pub fn fill(&mut self, buf: &mut [u8]) {
        self.0.fill_bytes(buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_gives_the_stream_it_always_gave() {
        // The first outputs of the hand-written generator this replaced.
        let mut r = Rng::new(42);
        let first: Vec<u64> = (0..3).map(|_| r.0.next_u64()).collect();
        assert_eq!(
            first,
            [
                15021278609987233951,
                5881210131331364753,
                18149643915985481100
            ]
        );
    }

    #[test]
    fn below_is_in_range_and_covers_it() {
        let mut r = Rng::new(1);
        let mut seen = [0u32; 10];
        for _ in 0..100_000 {
            seen[r.below(10) as usize] += 1;
        }
        for c in seen {
            assert!((9_000..11_000).contains(&c), "{seen:?}");
        }
    }

    #[test]
    fn percent_extremes_are_exact() {
        let mut r = Rng::new(7);
        assert!((0..10_000).all(|_| r.percent(100)));
        assert!((0..10_000).all(|_| !r.percent(0)));
    }

    #[test]
    fn fill_does_not_repeat() {
        let mut r = Rng::new(3);
        let mut a = vec![0u8; 4096 + 3];
        let mut b = vec![0u8; 4096 + 3];
        r.fill(&mut a);
        r.fill(&mut b);
        assert_ne!(a, b);
        assert_ne!(a[..2048], a[2048..4096]);
    }
}
