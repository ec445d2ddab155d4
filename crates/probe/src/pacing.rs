//! What every measuring run shares around its CPU window: the phase its
//! workers read, the one-second series, progress hooks, and the wait that
//! paces ramp-up and window while watching for Ctrl-C.

use crate::HostSampler;
use iotoll_model::SeriesPoint;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::time::{Duration, Instant};

/// Where a run is. Workers read it once per batch of completions and
/// count only what completes in `Measure`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Phase {
    Ramp = 0,
    Measure = 1,
    Stop = 2,
}

impl Phase {
    pub fn label(self) -> &'static str {
        match self {
            Phase::Ramp => "ramp",
            Phase::Measure => "measure",
            Phase::Stop => "stop",
        }
    }
}

/// The shared, lock-free phase of a run.
#[derive(Debug)]
pub struct PhaseCell(AtomicU8);

impl PhaseCell {
    pub fn new(p: Phase) -> Self {
        PhaseCell(AtomicU8::new(p as u8))
    }

    #[inline]
    pub fn get(&self) -> Phase {
        // Acquire/Release: a thread that sees the effect of a phase change
        // (e.g. the peer's close after window_end) also sees the phase.
        match self.0.load(Ordering::Acquire) {
            0 => Phase::Ramp,
            1 => Phase::Measure,
            _ => Phase::Stop,
        }
    }

    pub fn set(&self, p: Phase) {
        self.0.store(p as u8, Ordering::Release);
    }
}

/// Hooks for a user interface; every method has a silent default.
pub trait Progress {
    /// Preparation (e.g. a test file): units done of total.
    fn preparing(&mut self, _done: u64, _total: u64) {}
    /// One second of the run has passed.
    fn second(&mut self, _point: &SeriesPoint, _elapsed: Duration, _total: Duration) {}
}

/// Progress that shows nothing.
pub struct Silent;
impl Progress for Silent {}

/// What a measuring run gets from its caller.
pub struct RunControl<'a> {
    /// Set by a signal handler: stop cleanly and report what was measured.
    pub interrupted: &'a AtomicBool,
    pub progress: &'a mut dyn Progress,
}

/// What the live counters of a run count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counting {
    /// I/Os and bytes: `iops`, `mb_s`.
    DiskIo,
    /// Payload bytes: `mbit_s`.
    NetBytes,
    /// Transactions and payload bytes: `trans_s`, `mbit_s`.
    Transactions,
}

/// Samples live counters and host CPU once per second.
pub struct SeriesRecorder {
    counting: Counting,
    sampler: HostSampler,
    t_run: Instant,
    next: Instant,
    last: (u64, u64),
    last_t: Instant,
    points: Vec<SeriesPoint>,
    /// The phase when the second being sampled began: a second that
    /// started in the ramp-up is labelled `ramp` even if measuring began
    /// during it.
    interval_phase: Option<Phase>,
}

impl SeriesRecorder {
    pub fn new(counting: Counting) -> Self {
        let now = Instant::now();
        SeriesRecorder {
            counting,
            sampler: HostSampler::new(),
            t_run: now,
            next: now + Duration::from_secs(1),
            last: (0, 0),
            last_t: now,
            points: Vec::new(),
            interval_phase: None,
        }
    }

    /// When the run started (the series' time zero).
    pub fn t_run(&self) -> Instant {
        self.t_run
    }

    /// Records a point if a second has passed; `counters` gives the running
    /// totals (operations, bytes) over all workers.
    pub fn poll(
        &mut self,
        phase: Phase,
        counters: impl FnOnce() -> (u64, u64),
        progress: &mut dyn Progress,
        total: Duration,
    ) {
        let now = Instant::now();
        let began = *self.interval_phase.get_or_insert(phase);
        if now < self.next {
            return;
        }
        self.next += Duration::from_secs(1);
        self.interval_phase = None;
        let (ops, bytes) = counters();
        let dt = now.duration_since(self.last_t).as_secs_f64();
        let d_ops = ops.saturating_sub(self.last.0) as f64 / dt;
        let d_bytes = bytes.saturating_sub(self.last.1) as f64 / dt;
        let (iops, mb_s, mbit_s, trans_s) = match self.counting {
            Counting::DiskIo => (Some(d_ops), Some(d_bytes / 1e6), None, None),
            Counting::NetBytes => (None, None, Some(d_bytes * 8.0 / 1e6), None),
            Counting::Transactions => (None, None, Some(d_bytes * 8.0 / 1e6), Some(d_ops)),
        };
        let p = SeriesPoint {
            t_s: now.duration_since(self.t_run).as_secs_f64(),
            phase: began.label().to_string(),
            iops,
            mb_s,
            mbit_s,
            trans_s,
            cpu_pct: self.sampler.sample(),
        };
        self.last = (ops, bytes);
        self.last_t = now;
        progress.second(&p, now.duration_since(self.t_run), total);
        self.points.push(p);
    }

    /// When the next point is due.
    pub fn next_due(&self) -> Instant {
        self.next
    }

    pub fn into_points(self) -> Vec<SeriesPoint> {
        self.points
    }
}

/// Sleeps until `until` in small steps, calling `tick` between them (to
/// sample the series; it returns when it next wants to run, or None to stop
/// waiting). Returns false as soon as `interrupted` is set or `tick` says stop.
pub fn wait_until(
    until: Instant,
    interrupted: &AtomicBool,
    mut tick: impl FnMut() -> Option<Instant>,
) -> bool {
    loop {
        if interrupted.load(Ordering::Relaxed) {
            return false;
        }
        let now = Instant::now();
        if now >= until {
            return true;
        }
        let Some(next_due) = tick() else {
            return false;
        };
        let step = until
            .min(next_due)
            .saturating_duration_since(now)
            .min(Duration::from_millis(50));
        std::thread::sleep(step);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phase_cell_round_trips() {
        let c = PhaseCell::new(Phase::Ramp);
        for p in [Phase::Measure, Phase::Stop, Phase::Ramp] {
            c.set(p);
            assert_eq!(c.get(), p);
        }
    }

    #[test]
    fn wait_until_stops_on_interrupt_or_when_tick_says_so() {
        let now = || Some(Instant::now());
        let flag = AtomicBool::new(true);
        let t = Instant::now();
        assert!(!wait_until(t + Duration::from_secs(10), &flag, now));
        // Well under the 10 s deadline, with room for a loaded machine.
        assert!(t.elapsed() < Duration::from_secs(5));
        let flag = AtomicBool::new(false);
        assert!(wait_until(
            Instant::now() + Duration::from_millis(20),
            &flag,
            now
        ));
        let t = Instant::now();
        assert!(!wait_until(t + Duration::from_secs(10), &flag, || None));
        // Well under the 10 s deadline, with room for a loaded machine.
        assert!(t.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn series_rates_per_counting() {
        let mut s = SeriesRecorder::new(Counting::Transactions);
        s.next = Instant::now();
        s.last_t = Instant::now() - Duration::from_secs(1);
        s.poll(
            Phase::Measure,
            || (1000, 125_000),
            &mut Silent,
            Duration::from_secs(1),
        );
        let p = &s.into_points()[0];
        assert!(p.iops.is_none());
        let t = p.trans_s.unwrap();
        assert!((900.0..=1000.0).contains(&t), "{t}");
        let mbit = p.mbit_s.unwrap();
        assert!((0.9..=1.0).contains(&mbit), "{mbit}");
    }
}
