//! The clock and CPU source a run runs on: the host's, or a test's fake.

use iotoll_model::CpuReport;
use iotoll_probe::{ClosedWindow, CpuWindow, ProbeError};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Where a run reads the time, sleeps and measures CPU: the host
/// ([`HostClock`]), or in tests a [`FakeClock`] that makes a run
/// deterministic and fast. Workers read `now` once per batch of
/// completions, so runners take it as a generic parameter (no dynamic call
/// on the hot path).
pub trait Clock: Clone + Send + Sync + 'static {
    type Window;
    fn now(&self) -> Instant;
    fn sleep(&self, d: Duration);
    /// Opens the CPU window and calls `on_open` the moment it is open.
    fn open_window(&self, on_open: impl FnOnce()) -> Result<Self::Window, ProbeError>;
    /// Opens the window once `wait` returns true (None if it returns
    /// false). Nothing of the window is read before `wait`: whatever is
    /// measured is measured on the window alone.
    fn open_window_after(
        &self,
        wait: impl FnOnce() -> bool,
        on_open: impl FnOnce(),
    ) -> Result<Option<Self::Window>, ProbeError> {
        if !wait() {
            return Ok(None);
        }
        self.open_window(on_open).map(Some)
    }
    /// Closes it and calls `on_close` the moment it is closed.
    fn close_window(&self, w: Self::Window, on_close: impl FnOnce()) -> ClosedWindow;
}

/// The host's monotonic clock and its whole-host CPU accounting.
#[derive(Debug, Clone, Copy, Default)]
pub struct HostClock;

impl Clock for HostClock {
    type Window = CpuWindow;

    #[inline]
    fn now(&self) -> Instant {
        Instant::now()
    }

    fn sleep(&self, d: Duration) {
        std::thread::sleep(d)
    }

    fn open_window(&self, on_open: impl FnOnce()) -> Result<CpuWindow, ProbeError> {
        CpuWindow::start_with(on_open)
    }

    fn open_window_after(
        &self,
        wait: impl FnOnce() -> bool,
        on_open: impl FnOnce(),
    ) -> Result<Option<CpuWindow>, ProbeError> {
        CpuWindow::start_after(wait, on_open)
    }

    fn close_window(&self, w: CpuWindow, on_close: impl FnOnce()) -> ClosedWindow {
        w.finish_with(on_close)
    }
}

type Action = Box<dyn FnOnce() + Send>;

/// A clock for tests. Its time stands still except when someone sleeps on
/// it or calls `advance`: then it jumps at once, and the actions scheduled
/// with `at` up to the new time run (e.g. a phase change at a given
/// instant). Its CPU window reports the given CPU figures over the window's
/// exact fake length.
///
/// With `lockstep` n > 0, a sleeper then waits until other threads have
/// read the clock n times, so that work paced by a sleeping thread (a
/// run's ramp-up and window) is sure to happen in each step, whatever the
/// scheduler does. (A real-time bound of 10 s ends the wait if nobody is
/// left to read.)
#[derive(Clone)]
pub struct FakeClock(Arc<FakeState>);

struct FakeState {
    base: Instant,
    cpu: CpuReport,
    /// Nanoseconds since `base`, and the actions not yet due, by time.
    now: Mutex<(u64, Vec<(u64, Action)>)>,
    reads: AtomicU64,
    lockstep: u64,
}

impl FakeClock {
    pub fn new(cpu: CpuReport, lockstep: u64) -> Self {
        FakeClock(Arc::new(FakeState {
            base: Instant::now(),
            cpu,
            now: Mutex::new((0, Vec::new())),
            reads: AtomicU64::new(0),
            lockstep,
        }))
    }

    /// Runs `f` when the clock reaches `t` after its start.
    pub fn at(&self, t: Duration, f: impl FnOnce() + Send + 'static) {
        let mut g = self.0.now.lock().unwrap_or_else(PoisonError::into_inner);
        g.1.push((t.as_nanos() as u64, Box::new(f)));
        g.1.sort_by_key(|(t, _)| *t);
    }

    pub fn advance(&self, d: Duration) {
        let due: Vec<Action> = {
            let mut g = self.0.now.lock().unwrap_or_else(PoisonError::into_inner);
            g.0 += d.as_nanos() as u64;
            let n = g.1.partition_point(|(t, _)| *t <= g.0);
            g.1.drain(..n).map(|(_, f)| f).collect()
        };
        // Outside the lock: an action may read the clock.
        due.into_iter().for_each(|f| f());
    }
}

impl Clock for FakeClock {
    type Window = Instant;

    fn now(&self) -> Instant {
        self.0.reads.fetch_add(1, Ordering::AcqRel);
        let g = self.0.now.lock().unwrap_or_else(PoisonError::into_inner);
        self.0.base + Duration::from_nanos(g.0)
    }

    fn sleep(&self, d: Duration) {
        self.advance(d);
        let (reads, bound) = (self.0.reads.load(Ordering::Acquire), Instant::now());
        while self.0.reads.load(Ordering::Acquire) < reads + self.0.lockstep
            && bound.elapsed() < Duration::from_secs(10)
        {
            std::thread::yield_now();
        }
    }

    fn open_window(&self, on_open: impl FnOnce()) -> Result<Instant, ProbeError> {
        let t0 = self.now();
        on_open();
        Ok(t0)
    }

    fn close_window(&self, t0: Instant, on_close: impl FnOnce()) -> ClosedWindow {
        let window_s = self.now().duration_since(t0).as_secs_f64();
        on_close();
        let cpu = CpuReport {
            window_s,
            ..self.0.cpu.clone()
        };
        ClosedWindow::new(window_s, Ok(cpu))
    }
}
