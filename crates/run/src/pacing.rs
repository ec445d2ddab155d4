//! What every measuring run shares around its CPU window: the phase its
//! workers read, the one-second series, progress hooks, and the wait that
//! paces ramp-up and window while watching for Ctrl-C.

use crate::interval::{Labels, Ticker};
use crate::Clock;
use iotoll_model::SeriesPoint;
use iotoll_probe::HostSampler;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

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
    /// `--interval`: how often [`Progress::interval`] is wanted (None: never).
    fn interval_period(&self) -> Option<Duration> {
        None
    }
    /// An interval of the run has passed (`--interval`).
    fn interval(&mut self, _line: &crate::interval::IntervalLine) {}
}

/// Progress that shows nothing.
pub struct Silent;
impl Progress for Silent {}

/// What a measuring run gets from its caller.
pub struct RunControl<'a> {
    /// Set by a signal handler: stop cleanly and report what was measured.
    pub interrupted: &'a AtomicBool,
    pub progress: &'a mut dyn Progress,
    /// An agent's run: the window opens and closes at instants the console
    /// chose (instead of after `ramp`, for `time`), and the run marks when
    /// it really did.
    pub schedule: Option<&'a Schedule>,
}

/// A window at fixed instants, and when it really opened and closed.
#[derive(Debug)]
pub struct Schedule {
    pub on: Instant,
    pub off: Instant,
    opened: Mutex<Option<SystemTime>>,
    closed: Mutex<Option<SystemTime>>,
}

impl Schedule {
    pub fn new(on: Instant, off: Instant) -> Self {
        Schedule {
            on,
            off,
            opened: Default::default(),
            closed: Default::default(),
        }
    }

    /// Called the moment the window opens (closes): the wall clock, which
    /// the console can relate to other hosts' through its measured offset.
    pub fn mark_open(&self) {
        Self::mark(&self.opened);
    }

    /// Also ends the real-time priority a scheduled window's thread may
    /// have had for its edges (`affinity::realtime_edges`): what follows
    /// the close is the heavy part.
    pub fn mark_close(&self) {
        Self::mark(&self.closed);
        iotoll_probe::affinity::normal_priority();
    }

    fn mark(m: &Mutex<Option<SystemTime>>) {
        *m.lock().unwrap_or_else(|p| p.into_inner()) = Some(SystemTime::now());
    }

    /// When the window opened and closed (None: it did not).
    pub fn marks(&self) -> (Option<SystemTime>, Option<SystemTime>) {
        let get = |m: &Mutex<Option<SystemTime>>| *m.lock().unwrap_or_else(|p| p.into_inner());
        (get(&self.opened), get(&self.closed))
    }
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

/// Edge points shorter than this join the whole second before them.
const FOLD_BELOW: Duration = Duration::from_millis(250);

/// Samples live counters and host CPU once per second.
pub struct SeriesRecorder {
    counting: Counting,
    /// Ramp-up and window together, for progress.
    total: Duration,
    sampler: HostSampler,
    t_run: Instant,
    next: Instant,
    /// The running totals and the instant of the last point.
    last: Mark,
    /// `last` before the last point: where a short edge folded into that
    /// point starts.
    before_last: Mark,
    points: Vec<SeriesPoint>,
    /// The phase when the second being sampled began: a second that
    /// started in the ramp-up is labelled `ramp` even if measuring began
    /// during it.
    interval_phase: Option<Phase>,
    /// `--interval`'s lines, once progress has been asked for its period.
    ticker: Option<Option<Ticker>>,
    labels: Labels,
}

/// Running totals (operations, bytes) at an instant.
pub(crate) type Mark = ((u64, u64), Instant);

/// A point of `counting`'s rates between two marks, stamped with the
/// second's time since the workload's start `t_run`.
pub(crate) fn point(
    counting: Counting,
    t_run: Instant,
    phase: Phase,
    (((ops0, bytes0), t0), ((ops, bytes), t)): (Mark, Mark),
    cpu_pct: Option<f64>,
) -> SeriesPoint {
    let dt = t.duration_since(t0).as_secs_f64();
    let d_ops = ops.saturating_sub(ops0) as f64 / dt;
    let d_bytes = bytes.saturating_sub(bytes0) as f64 / dt;
    let (iops, mb_s, mbit_s, trans_s) = match counting {
        Counting::DiskIo => (Some(d_ops), Some(d_bytes / 1e6), None, None),
        Counting::NetBytes => (None, None, Some(d_bytes * 8.0 / 1e6), None),
        Counting::Transactions => (None, None, Some(d_bytes * 8.0 / 1e6), Some(d_ops)),
    };
    SeriesPoint {
        t_s: t.duration_since(t_run).as_secs_f64(),
        phase: phase.label().to_string(),
        iops,
        mb_s,
        mbit_s,
        trans_s,
        cpu_pct,
    }
}

impl SeriesRecorder {
    /// A series whose time zero is `now`.
    pub fn new(counting: Counting, total: Duration, now: Instant) -> Self {
        SeriesRecorder {
            counting,
            total,
            sampler: HostSampler::new(),
            t_run: now,
            next: now + Duration::from_secs(1),
            last: ((0, 0), now),
            before_last: ((0, 0), now),
            points: Vec::new(),
            interval_phase: None,
            ticker: None,
            labels: Labels::default(),
        }
    }

    /// What the `--interval` lines' figures are (trans/s by default).
    pub fn with_labels(mut self, labels: Labels) -> Self {
        self.labels = labels;
        self
    }

    /// When the run started (the series' time zero).
    pub fn t_run(&self) -> Instant {
        self.t_run
    }

    /// Records a point if a second has passed; `counters` gives the running
    /// totals (operations, bytes) over all workers.
    pub fn poll(
        &mut self,
        now: Instant,
        phase: Phase,
        counters: impl FnOnce() -> (u64, u64),
        progress: &mut dyn Progress,
    ) {
        let began = *self.interval_phase.get_or_insert(phase);
        let t_run = self.t_run;
        let ticker = (self.ticker)
            .get_or_insert_with(|| progress.interval_period().map(|d| Ticker::new(d, t_run)));
        // After the window has closed there is nothing more to show.
        let tick = phase != Phase::Stop && ticker.as_ref().is_some_and(|t| t.due(now));
        if now < self.next && !tick {
            return;
        }
        let counts = counters();
        if let (true, Some(t)) = (tick, ticker.as_mut()) {
            t.emit(now, phase, (self.counting, self.labels), counts, progress);
        }
        if now < self.next {
            return;
        }
        self.next += Duration::from_secs(1);
        self.interval_phase = None;
        self.record(now, began, counts, progress);
    }

    /// When the series or an interval line is next due.
    fn next_due(&self) -> Instant {
        match &self.ticker {
            Some(Some(t)) => self.next.min(t.next),
            _ => self.next,
        }
    }

    /// Ends the interval being sampled at a window's edge (`now`, just
    /// after it opened or closed; `phase` the one before it): a partial
    /// point for the time since the last one, and the next seconds counted
    /// from here. Without edges the seconds ran on from the workload's
    /// start: the one that straddled the window's opening was counted as
    /// measured, and the window's last second was lost (a 2 s window had
    /// one point), so a window's points did not add up to its total.
    pub fn edge(
        &mut self,
        now: Instant,
        phase: Phase,
        counters: impl FnOnce() -> (u64, u64),
        progress: &mut dyn Progress,
    ) {
        let began = self.interval_phase.take().unwrap_or(phase);
        self.next = now + Duration::from_secs(1);
        let counts = counters();
        if let Some(Some(t)) = &mut self.ticker {
            t.emit(now, phase, (self.counting, self.labels), counts, progress);
        }
        let since = now.duration_since(self.last.1);
        // A sliver (a window opened at the workload's start) is not a
        // point: its rate would be noise. The next point covers it.
        if since < Duration::from_millis(10) {
            return;
        }
        // A short edge after a whole second of the same phase is folded
        // into that second: a 20 ms point's rate is burst timing (a shaper
        // releases megabytes at once), and it was drawn at 12 Gbit/s on a
        // 10 Gbit/s link. The points still cover the phase exactly.
        let same = self.points.last().is_some_and(|p| p.phase == began.label());
        if since < FOLD_BELOW && same {
            if let Some(p) = self.points.pop() {
                let t = self.before_last.1;
                let folded = now.duration_since(t).as_secs_f64();
                let prev = self.last.1.duration_since(t).as_secs_f64();
                self.last = self.before_last;
                self.record(now, began, counts, progress);
                // The merged point's CPU: both parts' by their lengths.
                let b = self.points.last().and_then(|q| q.cpu_pct);
                if let (Some(q), Some(a), Some(b)) = (self.points.last_mut(), p.cpu_pct, b) {
                    let short = folded - prev;
                    q.cpu_pct = Some((a * prev + b * short) / folded);
                }
                return;
            }
        }
        self.record(now, began, counts, progress);
    }

    fn record(
        &mut self,
        now: Instant,
        began: Phase,
        counts: (u64, u64),
        progress: &mut dyn Progress,
    ) {
        let span = (self.last, (counts, now));
        let p = point(
            self.counting,
            self.t_run,
            began,
            span,
            self.sampler.sample(),
        );
        self.before_last = std::mem::replace(&mut self.last, (counts, now));
        progress.second(&p, now.duration_since(self.t_run), self.total);
        self.points.push(p);
    }

    /// Waits until `until`, recording the series from the running totals
    /// `counters` gives; false as soon as Ctrl-C is pressed or `go_on` says
    /// the run cannot go on.
    pub fn wait<C: Clock>(
        &mut self,
        clock: &C,
        until: Instant,
        ctl: &mut RunControl,
        phase: &PhaseCell,
        counters: impl Fn() -> (u64, u64),
        go_on: impl Fn() -> bool,
    ) -> bool {
        wait_until(clock, until, ctl.interrupted, || {
            self.poll(clock.now(), phase.get(), &counters, ctl.progress);
            go_on().then_some(self.next_due())
        })
    }

    pub fn into_points(self) -> Vec<SeriesPoint> {
        self.points
    }
}

/// Sleeps until `until` in small steps, calling `tick` between them (to
/// sample the series; it returns when it next wants to run, or None to stop
/// waiting). Returns false as soon as `interrupted` is set or `tick` says stop.
pub fn wait_until(
    clock: &impl Clock,
    until: Instant,
    interrupted: &AtomicBool,
    mut tick: impl FnMut() -> Option<Instant>,
) -> bool {
    loop {
        if interrupted.load(Ordering::Relaxed) {
            return false;
        }
        let now = clock.now();
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
        clock.sleep(step);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FakeClock;
    use iotoll_model::CpuReport;
    use std::sync::Arc;

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
        let clock = FakeClock::new(CpuReport::default(), 0);
        let (t0, ten_s) = (clock.now(), Duration::from_secs(10));
        // The series wants nothing before the deadline.
        let now = || Some(t0 + Duration::from_secs(100));
        let flag = AtomicBool::new(true);
        assert!(!wait_until(&clock, t0 + ten_s, &flag, now));
        assert_eq!(
            clock.now(),
            t0,
            "an interrupt ends the wait before any sleep"
        );
        let flag = AtomicBool::new(false);
        assert!(wait_until(&clock, t0 + ten_s, &flag, now));
        assert_eq!(clock.now(), t0 + ten_s, "not a step more");
        let t1 = clock.now();
        assert!(!wait_until(&clock, t1 + ten_s, &flag, || None));
        assert_eq!(clock.now(), t1);
        // Ctrl-C during the wait ends it at the next step (50 ms at most).
        let flag = Arc::new(AtomicBool::new(false));
        let f = flag.clone();
        clock.at(Duration::from_secs(11), move || {
            f.store(true, Ordering::Relaxed)
        });
        assert!(!wait_until(&clock, t1 + ten_s, &flag, now));
        assert_eq!(clock.now(), t1 + Duration::from_secs(1));
    }

    #[test]
    fn series_rates_per_counting() {
        let clock = FakeClock::new(CpuReport::default(), 0);
        let mut s =
            SeriesRecorder::new(Counting::Transactions, Duration::from_secs(2), clock.now());
        let mut ctl = RunControl {
            interrupted: &AtomicBool::new(false),
            progress: &mut Silent,
            schedule: None,
        };
        let phase = Arc::new(PhaseCell::new(Phase::Ramp));
        let sent = std::cell::Cell::new((0, 0));
        let p2 = phase.clone();
        clock.at(Duration::from_millis(1500), move || p2.set(Phase::Measure));
        let until = clock.now() + Duration::from_millis(3500);
        let counters = || {
            let (ops, bytes) = sent.get();
            sent.set((ops + 1000, bytes + 125_000));
            (ops + 1000, bytes + 125_000)
        };
        assert!(s.wait(&clock, until, &mut ctl, &phase, counters, || true));
        let points = s.into_points();
        // One point a second; the second that began in the ramp-up is `ramp`.
        let phases: Vec<&str> = points.iter().map(|p| p.phase.as_str()).collect();
        assert_eq!(phases, ["ramp", "ramp", "measure"]);
        for p in &points {
            assert!(p.iops.is_none());
            assert_eq!(p.trans_s, Some(1000.0));
            assert_eq!(p.mbit_s, Some(1.0));
        }
    }

    /// A window of 2.1 s: its last 0.1 s joins the second before it (a
    /// 20 ms edge point was drawn at 12 Gbit/s on a 10 Gbit/s link), and
    /// the measured points still cover the window exactly, their bytes
    /// adding up to the window's.
    #[test]
    fn a_short_closing_edge_joins_the_second_before_it() {
        let clock = FakeClock::new(CpuReport::default(), 0);
        let t0 = clock.now();
        let mut s = SeriesRecorder::new(Counting::NetBytes, Duration::from_secs(3), t0);
        let mut quiet = Silent;
        // 1 MB a second, counted at each instant asked.
        let at = |t: Instant| {
            let ms = t.duration_since(t0).as_millis() as u64;
            (0, ms * 1000)
        };
        let open = t0 + Duration::from_millis(1000);
        s.edge(open, Phase::Ramp, || at(open), &mut quiet);
        for k in 1..=2 {
            let t = open + Duration::from_secs(k);
            s.poll(t, Phase::Measure, || at(t), &mut quiet);
        }
        let close = open + Duration::from_millis(2100);
        s.edge(close, Phase::Measure, || at(close), &mut quiet);
        let p = s.into_points();
        let t: Vec<f64> = p.iter().map(|p| p.t_s).collect();
        assert_eq!(t, [1.0, 2.0, 3.1], "{p:?}");
        let measured: f64 = (p.windows(2))
            .filter(|w| w[1].phase == "measure")
            .map(|w| w[1].mbit_s.unwrap() * (w[1].t_s - w[0].t_s) * 1e6 / 8.0)
            .sum();
        assert!((measured - 2.1e6).abs() < 1.0, "{measured}");
    }

    /// Collects `--interval` lines.
    struct Lines(Duration, Vec<(f64, SeriesPoint)>);
    impl Progress for Lines {
        fn interval_period(&self) -> Option<Duration> {
            Some(self.0)
        }
        fn interval(&mut self, l: &crate::interval::IntervalLine) {
            self.1.push((l.from_s, l.point.clone()));
        }
    }

    /// 500 ms intervals over a 0.7 s ramp-up and a 1.2 s window: a line
    /// every 500 ms, cut at both edges, so the window's lines cover it
    /// exactly and add up to its bytes; nothing after it closes; the
    /// one-second series is what it is without them.
    #[test]
    fn interval_lines_are_cut_at_the_window_edges() {
        let clock = FakeClock::new(CpuReport::default(), 0);
        let t0 = clock.now();
        let mut s = SeriesRecorder::new(Counting::NetBytes, Duration::from_secs(2), t0);
        let mut lines = Lines(Duration::from_millis(500), Vec::new());
        let at = |t: Instant| (0, t.duration_since(t0).as_millis() as u64 * 1000);
        let ms = |m: u64| t0 + Duration::from_millis(m);
        for m in (50..700).step_by(50) {
            s.poll(ms(m), Phase::Ramp, || at(ms(m)), &mut lines);
        }
        s.edge(ms(700), Phase::Ramp, || at(ms(700)), &mut lines);
        for m in (750..1900).step_by(50) {
            s.poll(ms(m), Phase::Measure, || at(ms(m)), &mut lines);
        }
        s.edge(ms(1900), Phase::Measure, || at(ms(1900)), &mut lines);
        s.poll(ms(2500), Phase::Stop, || at(ms(2500)), &mut lines);
        let spans: Vec<(f64, f64, &str)> = (lines.1.iter())
            .map(|(f, p)| (*f, p.t_s, p.phase.as_str()))
            .collect();
        assert_eq!(
            spans,
            [
                (0.0, 0.5, "ramp"),
                (0.5, 0.7, "ramp"),
                (0.7, 1.2, "measure"),
                (1.2, 1.7, "measure"),
                (1.7, 1.9, "measure")
            ]
        );
        let bytes: f64 = (lines.1.iter())
            .filter(|(_, p)| p.phase == "measure")
            .map(|(f, p)| p.mbit_s.unwrap() * (p.t_s - f) * 1e6 / 8.0)
            .sum();
        assert!((bytes - 1.2e6).abs() < 1.0, "{bytes}");
        let t: Vec<f64> = s.into_points().iter().map(|p| p.t_s).collect();
        // (The 0.2 s closing edge joins the second before it, as always.)
        assert_eq!(t, [0.7, 1.9]);
    }

    /// A tester saw a 10 ms line at a window's end: a last interval under
    /// a tenth of the period is left out (as iperf3 does), and not carried
    /// into a line across the edge either.
    #[test]
    fn a_sliver_of_an_interval_is_left_out() {
        let clock = FakeClock::new(CpuReport::default(), 0);
        let t0 = clock.now();
        let mut s = SeriesRecorder::new(Counting::NetBytes, Duration::from_secs(3), t0);
        let mut lines = Lines(Duration::from_secs(1), Vec::new());
        let at = |t: Instant| (0, t.duration_since(t0).as_millis() as u64 * 1000);
        let ms = |m: u64| t0 + Duration::from_millis(m);
        // The ramp-up ends 30 ms after a line, the window 40 ms after one
        // (lines are due every second from the window's opening, and come
        // at the next 50 ms poll).
        for m in (50..1030).step_by(50) {
            s.poll(ms(m), Phase::Ramp, || at(ms(m)), &mut lines);
        }
        s.edge(ms(1030), Phase::Ramp, || at(ms(1030)), &mut lines);
        for m in (1050..3090).step_by(50) {
            s.poll(ms(m), Phase::Measure, || at(ms(m)), &mut lines);
        }
        s.edge(ms(3090), Phase::Measure, || at(ms(3090)), &mut lines);
        let spans: Vec<(f64, f64, &str)> = (lines.1.iter())
            .map(|(f, p)| (*f, p.t_s, p.phase.as_str()))
            .collect();
        assert_eq!(
            spans,
            [
                (0.0, 1.0, "ramp"),
                (1.03, 2.05, "measure"),
                (2.05, 3.05, "measure")
            ]
        );
    }
}
