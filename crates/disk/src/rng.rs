//! xoshiro256++: a small, fast generator for offsets, the read/write coin and
//! test-file contents. Not cryptographic; it only has to be fast and
//! statistically uniform.

pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    pub fn new(seed: u64) -> Self {
        // splitmix64 spreads any seed (even 0) over the whole state.
        let mut x = seed;
        let mut next = || {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        Rng {
            s: [next(), next(), next(), next()],
        }
    }

    /// A seed that differs per process, per call and per time.
    pub fn seed_from_time(salt: u64) -> u64 {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        t ^ (std::process::id() as u64).rotate_left(32) ^ salt.wrapping_mul(0x9E37_79B9_7F4A_7C15)
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = (s[0].wrapping_add(s[3])).rotate_left(23).wrapping_add(s[0]);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in `0..n` (Lemire's multiply-shift; bias below 2^-64 * n).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// True with probability `pct` / 100; exact at 0 and 100.
    #[inline]
    pub fn percent(&mut self, pct: u32) -> bool {
        (self.below(100) as u32) < pct
    }

    pub fn fill(&mut self, buf: &mut [u8]) {
        let mut chunks = buf.chunks_exact_mut(8);
        for c in &mut chunks {
            c.copy_from_slice(&self.next_u64().to_le_bytes());
        }
        let rest = chunks.into_remainder();
        let last = self.next_u64().to_le_bytes();
        let n = rest.len();
        rest.copy_from_slice(&last[..n]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn below_is_in_range_and_covers_it() {
        let mut r = Rng::new(1);
        let mut seen = [0u32; 10];
        for _ in 0..100_000 {
            let v = r.below(10);
            seen[v as usize] += 1;
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
