//! Queue occupancy: how many I/Os were really outstanding, measured
//! directly, and the Little's-law cross-check against IOPS and latency.
//!
//! An I/O is outstanding from the instant it is handed to the kernel (the
//! worker's time stamp just before the submitting system call) to the
//! instant the worker sees its completion: exactly the interval its latency
//! covers. Integrating the count of outstanding I/Os over the window and
//! dividing by the window gives the mean queue depth actually achieved.
//! Little's law (L = λ W) says the same figure follows from IOPS × mean
//! latency; the two differ only by the I/Os that straddle the window's
//! edges (and failed I/Os, which have no latency), so their agreement is a
//! check on the timing itself. The edges are measured too ([`ages`]), not
//! bounded: a worker descheduled across an edge keeps its I/Os outstanding
//! for as long as it does not run, longer than any latency it measures.

use std::time::Instant;

/// Integral over time of the number of I/Os outstanding on one worker.
#[derive(Debug, Clone)]
pub struct Occupancy {
    base: Instant,
    last_ns: u64,
    outstanding: u64,
    /// Sum over time of outstanding × ns, since `base`.
    area_ns: u128,
}

impl Occupancy {
    pub fn new(base: Instant) -> Self {
        Occupancy {
            base,
            last_ns: 0,
            outstanding: 0,
            area_ns: 0,
        }
    }

    fn advance(&mut self, t: Instant) {
        let ns = t.saturating_duration_since(self.base).as_nanos() as u64;
        if ns > self.last_ns {
            self.area_ns += self.outstanding as u128 * (ns - self.last_ns) as u128;
            self.last_ns = ns;
        }
    }

    /// One I/O handed to the kernel at `t`.
    pub fn started(&mut self, t: Instant) {
        self.advance(t);
        self.outstanding += 1;
    }

    /// `n` completions seen at `t`.
    pub fn completed(&mut self, t: Instant, n: u64) {
        self.advance(t);
        self.outstanding = self.outstanding.saturating_sub(n);
    }

    pub fn outstanding(&self) -> u64 {
        self.outstanding
    }

    /// Outstanding-I/O-seconds accumulated up to `t` (`t` must not precede
    /// the last event).
    pub fn io_seconds_at(&self, t: Instant) -> f64 {
        let ns = t.saturating_duration_since(self.base).as_nanos() as u64;
        let extra = self.outstanding as u128 * ns.saturating_sub(self.last_ns) as u128;
        (self.area_ns + extra) as f64 / 1e9
    }
}

/// Little's law: the mean number of I/Os outstanding implied by a
/// throughput (I/Os per second) and a mean latency (microseconds).
pub fn littles_law_depth(iops: f64, lat_mean_us: f64) -> f64 {
    iops * lat_mean_us / 1e6
}

/// The summed ages at `t` (seconds) of the I/Os outstanding then, given
/// their submission stamps: the edge terms of a worker's view of the
/// window [t0, t1]. Its occupancy integral over that span is exactly the
/// summed latencies of the I/Os it saw complete inside it, less the ages
/// at t0 of those outstanding at t0 (their latency before the span), plus
/// the ages at t1 of those outstanding at t1 (time in the span without a
/// latency in it; one outstanding since before t0 is in both terms, which
/// leaves its t1 - t0), each set taken just before the completions seen
/// at that instant.
pub fn ages(t: Instant, stamps: impl Iterator<Item = Instant>) -> f64 {
    let ns: u128 = stamps
        .map(|s| t.saturating_duration_since(s).as_nanos())
        .sum();
    ns as f64 / 1e9
}

/// How far IOPS × mean latency may be from the measured depth less its
/// edges when the timing is right: the histogram's rounding of the mean
/// latency (3 significant digits), with room to spare.
pub fn littles_law_rounding(qd_achieved: f64) -> f64 {
    0.02 * qd_achieved
}

/// How far IOPS × mean latency may exceed a depth of `peak` kept over a
/// window: the I/Os outstanding at its start (at most `peak`) bring their
/// latency before it, each at most `lat_max_us`; plus the rounding. (Across
/// its end the edge goes the other way, unbounded: a worker descheduled
/// there keeps its I/Os outstanding without a latency in the window.)
pub fn littles_law_tolerance(qd_achieved: f64, peak: f64, lat_max_us: f64, window_s: f64) -> f64 {
    let edges = if window_s > 0.0 {
        peak * lat_max_us / 1e6 / window_s
    } else {
        f64::INFINITY
    };
    littles_law_rounding(qd_achieved) + edges
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::time::Duration;

    fn at(base: Instant, us: u64) -> Instant {
        base + Duration::from_micros(us)
    }

    /// The starts and completions of I/Os (start, latency), by time;
    /// completions before starts at the same instant (either order gives
    /// the same integral; this keeps the count non-negative).
    fn timeline(ios: &[(u64, u64)]) -> Vec<(u64, bool)> {
        let mut events: Vec<_> = ios
            .iter()
            .flat_map(|&(s, l)| [(s, true), (s + l, false)])
            .collect();
        events.sort_by_key(|&(t, start)| (t, start));
        events
    }

    /// The integral of I/Os outstanding at `w0` and at `w1` (µs after
    /// `b`), the timeline of `ios` replayed with marks taken as a worker
    /// takes them: before the first event at or after each mark.
    fn integrals_at(b: Instant, ios: &[(u64, u64)], w0: u64, w1: u64) -> (f64, f64) {
        let mut o = Occupancy::new(b);
        let (mut a0, mut a1) = (None, None);
        for (t, start) in timeline(ios) {
            if a0.is_none() && t >= w0 {
                a0 = Some(o.io_seconds_at(at(b, w0)));
            }
            if a1.is_none() && t >= w1 {
                a1 = Some(o.io_seconds_at(at(b, w1)));
            }
            if start {
                o.started(at(b, t))
            } else {
                o.completed(at(b, t), 1)
            }
        }
        let at_mark = |a: Option<f64>, w| a.unwrap_or_else(|| o.io_seconds_at(at(b, w)));
        (at_mark(a0, w0), at_mark(a1, w1))
    }

    #[test]
    fn integrates_a_known_timeline() {
        let b = Instant::now();
        let mut o = Occupancy::new(b);
        o.started(at(b, 0));
        o.started(at(b, 0));
        o.completed(at(b, 10), 1); // 2 for 10 us
        o.started(at(b, 15)); // 1 for 5 us
        o.completed(at(b, 25), 2); // 2 for 10 us
        assert_eq!(o.outstanding(), 0);
        let s = o.io_seconds_at(at(b, 100));
        assert!((s - 45e-6).abs() < 1e-12, "{s}");
        // Mean over 25 us: 1.8 outstanding.
        assert!((s / 25e-6 - 1.8).abs() < 1e-9);
    }

    #[test]
    fn io_seconds_at_includes_the_open_interval() {
        let b = Instant::now();
        let mut o = Occupancy::new(b);
        for _ in 0..4 {
            o.started(at(b, 0));
        }
        assert!((o.io_seconds_at(at(b, 1000)) - 4e-3).abs() < 1e-12);
    }

    #[test]
    fn little_depth_of_the_issue_example() {
        // 301k IOPS at 73 us is 22 outstanding, not 32.
        assert!((littles_law_depth(301_000.0, 73.0) - 21.973).abs() < 1e-3);
        assert!((littles_law_depth(238_000.0, 133.0) - 31.654).abs() < 1e-3);
    }

    proptest! {
        /// For I/Os that start and finish inside the window, the integral of
        /// the outstanding count is exactly the sum of their latencies, so
        /// depth = (count / window) x mean latency: Little's law holds to
        /// rounding, whatever the timeline.
        #[test]
        fn littles_law_holds_inside_the_window(
            ios in proptest::collection::vec((0u64..1_000_000, 1u64..50_000), 1..300),
        ) {
            let b = Instant::now();
            let window_us = 1_100_000u64;
            let mut o = Occupancy::new(b);
            for (t, start) in timeline(&ios) {
                if start { o.started(at(b, t)) } else { o.completed(at(b, t), 1) }
            }
            prop_assert_eq!(o.outstanding(), 0);
            let window_s = window_us as f64 / 1e6;
            let measured = o.io_seconds_at(at(b, window_us)) / window_s;
            let iops = ios.len() as f64 / window_s;
            let mean_us = ios.iter().map(|&(_, l)| l as f64).sum::<f64>() / ios.len() as f64;
            let little = littles_law_depth(iops, mean_us);
            prop_assert!((measured - little).abs() <= 1e-9 * little.max(1.0), "{} vs {}", measured, little);
        }

        /// With I/Os straddling the window's edges, the difference stays
        /// within the edge tolerance.
        #[test]
        fn edges_stay_within_tolerance(
            ios in proptest::collection::vec((0u64..2_000_000, 1u64..50_000), 1..300),
        ) {
            let b = Instant::now();
            let (w0, w1) = (500_000u64, 1_500_000u64);
            let (a0, a1) = integrals_at(b, &ios, w0, w1);
            let window_s = (w1 - w0) as f64 / 1e6;
            let measured = (a1 - a0) / window_s;
            // The latency side: I/Os that complete inside the window.
            let done: Vec<f64> = ios.iter().filter(|&&(s, l)| s + l >= w0 && s + l < w1).map(|&(_, l)| l as f64).collect();
            let little = if done.is_empty() { 0.0 } else {
                littles_law_depth(done.len() as f64 / window_s, done.iter().sum::<f64>() / done.len() as f64)
            };
            let max_us = ios.iter().map(|&(_, l)| l).max().unwrap_or(0) as f64;
            // Peak concurrency bounds what straddles an edge.
            let tol = littles_law_tolerance(measured, ios.len() as f64, max_us, window_s);
            prop_assert!((measured - little).abs() <= tol, "{} vs {} (tol {})", measured, little, tol);
        }

        /// With I/Os straddling the window's edges, however long, the
        /// integral over it is the latencies of those completed inside it,
        /// less the ages at its start of those outstanding then, plus the
        /// ages at its end of those outstanding then.
        #[test]
        fn edges_are_the_ages_at_the_marks(
            ios in proptest::collection::vec((0u64..2_000_000, 1u64..900_000), 1..300),
        ) {
            let b = Instant::now();
            let (w0, w1) = (500_000u64, 1_500_000u64);
            let (a0, a1) = integrals_at(b, &ios, w0, w1);
            // Outstanding at w: started before it, not completed before it.
            let stamps = |w: u64| ios.iter().filter(move |&&(s, l)| s < w && s + l >= w).map(move |&(s, _)| at(b, s));
            let (head, tail) = (ages(at(b, w0), stamps(w0)), ages(at(b, w1), stamps(w1)));
            // The latency side: I/Os that complete inside the window.
            let lat_s: f64 = ios.iter().filter(|&&(s, l)| s + l >= w0 && s + l < w1).map(|&(_, l)| l as f64 / 1e6).sum();
            let integral = a1 - a0;
            prop_assert!((integral - (lat_s - head + tail)).abs() <= 1e-9 * integral.max(1.0), "{} vs {} - {} + {}", integral, lat_s, head, tail);
        }
    }
}
