//! Live counters and the aggregate the result takes over them.

use std::sync::atomic::{AtomicU64, Ordering};

/// Running totals (operations, bytes) one worker or engine thread publishes
/// for the live series, on its own cache line so that publishing does not
/// slow its neighbours.
#[repr(align(128))]
#[derive(Default)]
pub struct Live {
    ops: AtomicU64,
    bytes: AtomicU64,
}

impl Live {
    #[inline]
    pub fn publish(&self, ops: u64, bytes: u64) {
        self.ops.store(ops, Ordering::Relaxed);
        self.bytes.store(bytes, Ordering::Relaxed);
    }

    /// Running totals over all of `live`.
    pub fn totals(live: &[Live]) -> (u64, u64) {
        live.iter().fold((0, 0), |(o, b), l| {
            (
                o + l.ops.load(Ordering::Relaxed),
                b + l.bytes.load(Ordering::Relaxed),
            )
        })
    }
}

/// Jain's fairness index of `n` values from their sum and sum of squares:
/// (sum x)^2 / (n * sum x^2); None without data.
pub fn jain_fairness(n: f64, sum: f64, sum_sq: f64) -> Option<f64> {
    // At most 1 by Cauchy-Schwarz; min() removes float rounding above it.
    (n > 0.0 && sum_sq > 0.0).then(|| (sum * sum / (n * sum_sq)).min(1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_add_every_publisher() {
        let live: Vec<Live> = (0..3).map(|_| Live::default()).collect();
        live[0].publish(1, 10);
        live[2].publish(5, 50);
        assert_eq!(Live::totals(&live), (6, 60));
    }

    #[test]
    fn jain_is_one_when_equal_and_one_over_n_when_one_takes_all() {
        assert_eq!(jain_fairness(4.0, 8.0, 16.0), Some(1.0));
        assert_eq!(jain_fairness(4.0, 8.0, 64.0), Some(0.25));
        assert_eq!(jain_fairness(0.0, 0.0, 0.0), None);
    }
}
