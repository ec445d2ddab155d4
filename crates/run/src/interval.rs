//! `--interval DUR`: live lines, one per interval, as `iperf -i` prints
//! them, from the same running totals the one-second series samples (no
//! work in the engines' hot path) and their own whole-host CPU delta from
//! /proc/stat. The one-second series in the result is untouched.
//!
//! An engine gets the lines for free by pacing its run through
//! [`crate::SeriesRecorder`] (`wait`, and `edge` at the window's opening and
//! closing) with its `RunControl`'s progress, as disk, stream and rr do; a
//! command gets `--interval` with the CLI's shared measuring flags
//! (`MeasureOpts`). `net udp` needs nothing more than those two.

use crate::pacing::{Counting, Phase, Progress};
use iotoll_model::SeriesPoint;
use iotoll_probe::HostSampler;
use std::time::{Duration, Instant};

/// Shortest interval `--interval` takes: shorter ones would be tick noise
/// in the CPU figure (USER_HZ is 100: 10 ms per tick per CPU).
pub const MIN_INTERVAL: Duration = Duration::from_millis(100);

/// `--interval DUR`: a duration of at least [`MIN_INTERVAL`].
pub fn parse(s: &str) -> Result<Duration, String> {
    let d = iotoll_model::parse_duration(s).map_err(|e| e.to_string())?;
    if d < MIN_INTERVAL {
        return Err(format!(
            "{s}: an interval must be at least {} ms (shorter ones are CPU tick noise)",
            MIN_INTERVAL.as_millis()
        ));
    }
    Ok(d)
}

/// What an interval line's figures are, beyond their units: a tester
/// could not tell a UDP line's sent rate from its received one, and read
/// a cc test's connections as transactions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Labels {
    /// The operations' unit: `trans/s`, `conn/s`.
    pub ops: &'static str,
    /// Whose bytes the throughput is: `sent`, `received`; None where
    /// it goes without saying (a stream's payload).
    pub rate_of: Option<&'static str>,
}

impl Default for Labels {
    fn default() -> Self {
        Labels {
            ops: "trans/s",
            rate_of: None,
        }
    }
}

/// One interval line: the point (rates over the interval, its CPU),
/// where the interval began, seconds since the workload started, and what
/// its figures are.
pub struct IntervalLine<'a> {
    pub from_s: f64,
    pub point: &'a SeriesPoint,
    pub labels: Labels,
}

/// The intervals of one run: due every `period` from the workload's
/// start, restarted at the window's edges so no interval straddles
/// ramp-up and window (the window's lines add up to its totals).
pub(crate) struct Ticker {
    period: Duration,
    pub(crate) next: Instant,
    /// The running totals and the instant the interval began.
    last: crate::pacing::Mark,
    sampler: HostSampler,
    t_run: Instant,
}

impl Ticker {
    pub(crate) fn new(period: Duration, t_run: Instant) -> Ticker {
        Ticker {
            period,
            next: t_run + period,
            last: ((0, 0), t_run),
            sampler: HostSampler::new(),
            t_run,
        }
    }

    pub(crate) fn due(&self, now: Instant) -> bool {
        now >= self.next
    }

    /// Ends the interval at `now` with the running totals `counts`,
    /// shows it, and starts the next. A sliver under a tenth of the
    /// period (or 10 ms), such as the window's last few milliseconds after
    /// the last whole interval, is not shown, as iperf3 leaves out a short
    /// last interval: its rate would be noise. It is dropped, not carried
    /// into the next line, which would then straddle a window edge; the
    /// result's series and totals still count it.
    pub(crate) fn emit(
        &mut self,
        now: Instant,
        phase: Phase,
        (counting, labels): (Counting, Labels),
        counts: (u64, u64),
        progress: &mut dyn Progress,
    ) {
        self.next = now + self.period;
        let from = std::mem::replace(&mut self.last, (counts, now));
        let dt = now.duration_since(from.1).as_secs_f64();
        if dt < (self.period.as_secs_f64() / 10.0).max(0.01) {
            return;
        }
        let span = (from, (counts, now));
        let p = crate::pacing::point(counting, self.t_run, phase, span, self.sampler.sample());
        let from_s = from.1.duration_since(self.t_run).as_secs_f64();
        progress.interval(&IntervalLine {
            from_s,
            point: &p,
            labels,
        });
    }
}
