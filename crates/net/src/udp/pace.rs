//! The sender's pacing: a token bucket on the monotonic clock, filled at
//! the offered rate and at most a few datagrams deep, so the rate holds in
//! every millisecond instead of in bursts (iperf3's `-b` sends a burst per
//! timer tick). A sender that falls behind loses the credit past the
//! bucket's depth: it never catches up in a burst, and the result states
//! what it actually offered.

/// Time the bucket holds at most, ns, beside its floor of two datagrams:
/// 1 ms of the rate (42 datagrams of 1472 bytes at 500 Mbit/s), so a
/// wake-up that a busy host delays by up to that much costs no rate, and
/// no burst is longer. On time, the sender sends a datagram or two per
/// wake-up; only a late one finds more. (iperf3 sends whatever it is behind
/// at each 1 ms timer tick, however far behind; on this shared 2-CPU host,
/// 500 µs held 73-98 % of 100 Mbit/s, 1 ms 73-99 %, 2 ms 99-100 %.)
const DEPTH_NS: u128 = 1_000_000;

#[derive(Debug, Clone)]
pub struct TokenBucket {
    /// Bits per second.
    rate: u64,
    /// Tokens in bit-nanoseconds per second (bits x 1e9), so that integer
    /// arithmetic loses nothing between refills.
    tokens: u128,
    depth: u128,
    last_ns: u64,
}

impl TokenBucket {
    /// A bucket for `rate` bits per second of datagrams of `size` bytes,
    /// full at `now_ns`.
    pub fn new(rate: u64, size: u64, now_ns: u64) -> Self {
        let per_datagram = size as u128 * 8 * 1_000_000_000;
        let depth = (rate as u128 * DEPTH_NS).max(2 * per_datagram);
        TokenBucket {
            rate,
            tokens: per_datagram,
            depth,
            last_ns: now_ns,
        }
    }

    fn refill(&mut self, now_ns: u64) {
        let dt = now_ns.saturating_sub(self.last_ns) as u128;
        self.tokens = (self.tokens + dt * self.rate as u128).min(self.depth);
        self.last_ns = self.last_ns.max(now_ns);
    }

    /// Takes a datagram of `size` bytes if the bucket holds it: None;
    /// otherwise how many ns until it will.
    pub fn take(&mut self, size: u64, now_ns: u64) -> Option<u64> {
        self.refill(now_ns);
        let need = size as u128 * 8 * 1_000_000_000;
        if self.tokens >= need {
            self.tokens -= need;
            return None;
        }
        let wait = (need - self.tokens).div_ceil(self.rate.max(1) as u128);
        Some(wait.min(u64::MAX as u128) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sends as the sender's loop does, on a fake clock that advances by
    /// each wait (plus `late_ns` of oversleep), for `secs`: datagrams sent.
    fn run(rate: u64, size: u64, secs: u64, late_ns: u64) -> (u64, u64) {
        let mut now = 0u64;
        let mut b = TokenBucket::new(rate, size, now);
        let (mut sent, mut most_in_1ms, mut in_ms, mut ms) = (0u64, 0u64, 0u64, 0u64);
        while now < secs * 1_000_000_000 {
            match b.take(size, now) {
                None => {
                    sent += 1;
                    if now / 1_000_000 != ms {
                        (ms, in_ms) = (now / 1_000_000, 0);
                    }
                    in_ms += 1;
                    most_in_1ms = most_in_1ms.max(in_ms);
                }
                Some(wait) => now += wait + late_ns,
            }
        }
        (sent, most_in_1ms)
    }

    #[test]
    fn the_rate_holds_exactly_and_smoothly_on_a_fake_clock() {
        for (rate, size) in [
            (500_000_000, 1472),
            (100_000_000, 1472),
            (950_000_000, 1472),
            (1_000_000, 64),
        ] {
            let (sent, most) = run(rate, size, 2, 0);
            let want = 2 * rate / (size * 8);
            assert!(sent.abs_diff(want) <= 2, "{rate}: {sent} vs {want}");
            // No burst: a millisecond holds its share, plus the bucket.
            let per_ms = rate / 1000 / (size * 8);
            let depth = (rate / 1000 / (size * 8)).max(2);
            assert!(
                most <= per_ms + depth + 1,
                "{rate}: {most} in 1 ms, {per_ms} due"
            );
        }
    }

    #[test]
    fn a_late_sender_uses_the_bucket_and_never_bursts_to_catch_up() {
        // 800 µs of oversleep on every wait: the bucket's depth absorbs it.
        let (sent, _) = run(500_000_000, 1472, 1, 800_000);
        let want = 500_000_000 / (1472 * 8);
        assert!(sent.abs_diff(want) * 100 <= want, "{sent} vs {want}");
        // A sender stalled for 10 ms finds at most the bucket's depth.
        let mut b = TokenBucket::new(500_000_000, 1472, 0);
        let mut burst = 0;
        while b.take(1472, 10_000_000).is_none() {
            burst += 1;
        }
        assert!(burst <= 43, "{burst} datagrams at once after a stall");
        // The clock never runs backwards for the bucket.
        assert!(b.take(1472, 0).is_some());
    }
}
