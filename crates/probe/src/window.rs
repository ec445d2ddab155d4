//! A measurement window: CPU snapshots at its start and end.

use crate::{clock, procs, stat, ProbeError};
use iotoll_model::CpuReport;
use std::time::Instant;

/// How many top consumers a report lists.
const TOP_N: usize = 5;

/// Whole-host CPU over one window. Start it the moment the measurement
/// window opens (after ramp-up) and finish it the moment it closes.
pub struct CpuWindow {
    procs: procs::ProcSnapshot,
    stat: stat::StatSnapshot,
    self_cpu_s: f64,
    t0: Instant,
}

/// CPU seconds used by this process, all threads (getrusage is exact to the
/// microsecond, unlike /proc/self/stat ticks).
fn self_cpu_s() -> f64 {
    // SAFETY: getrusage writes into the zeroed struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    if rc != 0 {
        return f64::NAN;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

impl CpuWindow {
    /// Opens the window and calls `on_open` the moment it is open (the
    /// caller flips its workload into the measured phase there). The
    /// process table is read first, so that reading it costs CPU outside the
    /// /proc/stat window rather than inside it.
    pub fn start_with(on_open: impl FnOnce()) -> Result<Self, ProbeError> {
        let procs = procs::snapshot();
        let self_cpu_s = self_cpu_s();
        let stat = stat::StatSnapshot::read()?;
        let t0 = Instant::now();
        on_open();
        Ok(CpuWindow {
            procs,
            stat,
            self_cpu_s,
            t0,
        })
    }

    pub fn start() -> Result<Self, ProbeError> {
        Self::start_with(|| {})
    }

    /// Closes the window, calls `on_close` the moment it is closed (the
    /// caller stops counting there), then computes the report. The window
    /// length is known even when no CPU figure can be given.
    pub fn finish_with(self, on_close: impl FnOnce()) -> ClosedWindow {
        let end = stat::StatSnapshot::read();
        let window_s = self.t0.elapsed().as_secs_f64();
        let self_end = self_cpu_s();
        on_close();
        let report = end.and_then(|end| {
            let end_procs = procs::snapshot();
            let mut r = stat::cpu_report(&self.stat, &end, window_s)?;
            let self_s = self_end - self.self_cpu_s;
            if self_s.is_finite() && window_s > 0.0 {
                let self_pct = self_s / (window_s * r.cpus as f64) * 100.0;
                r.self_pct = Some(self_pct);
                if self_pct > r.busy_pct + 1.0 {
                    r.notes.push(format!(
                        "the host's tick-sampled counters (/proc/stat: {:.1} % busy) read below iotoll's own exactly accounted CPU ({self_pct:.1} %): with tickless idle, short bursts of work between idle periods are under-sampled, so whole-host CPU and service demand are understated here",
                        r.busy_pct
                    ));
                }
            }
            r.top = procs::top_consumers(
                &self.procs,
                &end_procs,
                window_s,
                r.cpus,
                procs::clk_tck(),
                TOP_N,
            );
            if let Some((mhz, src)) = clock::nominal_mhz() {
                r.nominal_mhz = Some(mhz);
                r.nominal_mhz_source = Some(src);
            }
            Ok(r)
        });
        ClosedWindow { window_s, report }
    }

    pub fn finish(self) -> Result<CpuReport, ProbeError> {
        self.finish_with(|| {}).report
    }
}

/// A closed window: its exact length, and the CPU report if one could be made.
pub struct ClosedWindow {
    pub window_s: f64,
    pub report: Result<CpuReport, ProbeError>,
}

/// Whole-host busy % since the previous sample: the one-second series.
pub struct HostSampler {
    last: Option<stat::StatSnapshot>,
}

impl HostSampler {
    pub fn new() -> Self {
        HostSampler {
            last: stat::StatSnapshot::read().ok(),
        }
    }

    /// Busy % of all CPUs since the last call; None if unreadable or no tick passed.
    pub fn sample(&mut self) -> Option<f64> {
        let now = stat::StatSnapshot::read().ok()?;
        let prev = self.last.replace(now.clone())?;
        stat::cpu_report(&prev, &now, 1.0).ok().map(|r| r.busy_pct)
    }
}

impl Default for HostSampler {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_thread_shows_up_in_self_and_host_cpu() {
        // Spin until this thread has used 300 ms of CPU, however long a
        // loaded host makes that take.
        let thread_cpu_s = || {
            let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
            // SAFETY: ts is a valid, writable timespec.
            unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
            ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
        };
        let w = CpuWindow::start().unwrap();
        let t0 = thread_cpu_s();
        let mut x = 0u64;
        while thread_cpu_s() - t0 < 0.3 {
            for _ in 0..1000 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            }
        }
        std::hint::black_box(x);
        let r = w.finish().unwrap();
        let self_pct = r.self_pct.unwrap();
        // Back to CPU-seconds: self_pct is a share of all CPUs over the window.
        let self_s = self_pct / 100.0 * r.cpus as f64 * r.window_s;
        assert!(
            (0.25..=r.cpus as f64 * r.window_s + 0.05).contains(&self_s),
            "self {self_s} CPU-s for 0.3 s of spinning ({self_pct} % over {} s)",
            r.window_s
        );
        assert!(
            r.busy_pct + 1.0 >= self_pct * 0.7,
            "host {} < self {self_pct}",
            r.busy_pct
        );
        assert!(!r.top.is_empty());
    }
}
