//! A measurement window: CPU snapshots at its start and end.

use crate::{clock, procs, stat, ProbeError};
use iotoll_model::result::DEFAULT_INTERFERENCE_PCT;
use iotoll_model::CpuReport;
use nix::sys::resource::{getrusage, UsageWho};
use nix::sys::time::TimeVal;
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
    let s = |t: TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 * 1e-6;
    let usage = getrusage(UsageWho::RUSAGE_SELF);
    usage.map_or(f64::NAN, |u| s(u.user_time()) + s(u.system_time()))
}

impl CpuWindow {
    /// Opens the window and calls `on_open` the moment it is open (the
    /// caller flips its workload into the measured phase there). The
    /// process table is read first, so that reading it costs CPU outside the
    /// /proc/stat window rather than inside it.
    pub fn start_with(on_open: impl FnOnce()) -> Result<Self, ProbeError> {
        let procs = procs::snapshot();
        Self::open(procs, on_open)
    }

    /// [`start_with`](Self::start_with) at an instant: the process table is
    /// read first, then `wait` waits for the instant (false: give up, no
    /// window), then the window opens at once. So a window scheduled
    /// across hosts opens on time, not one table-read late.
    pub fn start_after(
        wait: impl FnOnce() -> bool,
        on_open: impl FnOnce(),
    ) -> Result<Option<Self>, ProbeError> {
        let procs = procs::snapshot();
        if !wait() {
            return Ok(None);
        }
        Self::open(procs, on_open).map(Some)
    }

    fn open(procs: procs::ProcSnapshot, on_open: impl FnOnce()) -> Result<Self, ProbeError> {
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
        let mut consumers = Vec::new();
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
            consumers = procs::consumers(&self.procs, &end_procs);
            (r.nominal_mhz, r.nominal_mhz_source) = clock::nominal_mhz().unzip();
            Ok(r)
        });
        let mut closed = ClosedWindow {
            window_s,
            report,
            consumers,
        };
        closed.attribute(&procs::Roles::this_process());
        closed
    }

    pub fn finish(self) -> Result<CpuReport, ProbeError> {
        self.finish_with(|| {}).report
    }
}

/// A closed window: its exact length, and the CPU report if one could be made.
pub struct ClosedWindow {
    pub window_s: f64,
    pub report: Result<CpuReport, ProbeError>,
    /// Every process's CPU in the window, most first.
    consumers: Vec<procs::Consumer>,
}

impl ClosedWindow {
    /// A window measured elsewhere (e.g. on a test's clock): no process table.
    pub fn new(window_s: f64, report: Result<CpuReport, ProbeError>) -> Self {
        ClosedWindow {
            window_s,
            report,
            consumers: Vec::new(),
        }
    }

    /// Marks `pid` as this test's endpoint, running on this host (the peer
    /// said its kernel boot id is ours): it gets role `endpoint` in the top
    /// list and stops counting as interference.
    pub fn mark_endpoint(&mut self, pid: i32) {
        self.attribute(&procs::Roles {
            endpoint_pid: Some(pid),
            ..procs::Roles::this_process()
        });
    }

    /// The top list and interference under `roles` (at the threshold
    /// already set, or the default), bounded by the host.
    fn attribute(&mut self, roles: &procs::Roles) {
        if let Ok(r) = &mut self.report {
            let threshold = r
                .interference
                .as_ref()
                .map_or(DEFAULT_INTERFERENCE_PCT, |i| i.threshold_pct);
            (r.top, r.interference) = procs::attribute(
                &self.consumers,
                self.window_s,
                r.cpus,
                procs::clk_tck(),
                roles,
                TOP_N,
                threshold,
            );
            bound_by_host(r);
        }
    }
}

/// No process can have used more CPU in the window than the whole host was
/// busy, nor other processes more than the host's busy time beside iotoll's
/// own and its endpoint's (when that runs here). A reaper (pid 1, a subreaper) can still be charged more: when it
/// reaps an orphan, its children's time grows by the orphan's whole life,
/// part of which was before the window and is not known to be its. Per-
/// process figures are bounded by these facts, and the interference
/// verdict is taken on the bounded figure plus the window's steal.
fn bound_by_host(r: &mut CpuReport) {
    let busy = r.busy_pct.max(0.0);
    for t in &mut r.top {
        t.cpu_pct = t.cpu_pct.min(busy);
    }
    if let Some(i) = &mut r.interference {
        i.steal_pct = r.modes.steal.max(0.0);
        // The endpoint on this host is not interference either.
        let endpoint: f64 = (r.top.iter())
            .filter(|t| t.role.as_deref() == Some(iotoll_model::result::ROLE_ENDPOINT))
            .map(|t| t.cpu_pct)
            .sum();
        let room = (busy - r.self_pct.unwrap_or(0.0) - endpoint - i.steal_pct).max(0.0);
        i.others_pct = i.others_pct.min(room);
        for p in &mut i.processes {
            p.cpu_pct = p.cpu_pct.min(room);
        }
        let threshold = i.threshold_pct;
        i.set_threshold(threshold);
    }
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
    use iotoll_model::result::Interference;

    /// At the 5 % threshold, with no steal and no processes named.
    fn interference(others_pct: f64, interfered: bool) -> Option<Interference> {
        Some(Interference {
            threshold_pct: 5.0,
            others_pct,
            steal_pct: 0.0,
            interfered,
            processes: Vec::new(),
        })
    }

    #[test]
    fn a_reapers_share_is_bounded_by_the_host() {
        // Seen: a subreaper charged 889.75 % with the host 22.07 % busy.
        let mut r = CpuReport {
            busy_pct: 22.07,
            self_pct: Some(2.0),
            top: vec![iotoll_model::TopConsumer {
                pid: 1057,
                comm: "reaper".into(),
                kernel_thread: false,
                cpu_pct: 889.75,
                role: None,
            }],
            interference: interference(889.75, true),
            ..Default::default()
        };
        bound_by_host(&mut r);
        assert_eq!(r.top[0].cpu_pct, 22.07);
        let i = r.interference.unwrap();
        assert!((i.others_pct - 20.07).abs() < 1e-9);
        assert!(i.interfered, "still over 5 % after bounding");
    }

    #[test]
    fn others_get_no_more_than_the_host_beside_iotoll_and_its_endpoint() {
        // Seen: others 92.2 % beside the endpoint's 41.7 % and iotoll's
        // 7.2 %, the host 99.5 % busy.
        let top = |pid, cpu_pct, role: Option<&str>| iotoll_model::TopConsumer {
            pid,
            comm: "x".into(),
            kernel_thread: false,
            cpu_pct,
            role: role.map(str::to_string),
        };
        let mut r = CpuReport {
            busy_pct: 99.5,
            self_pct: Some(7.2),
            top: vec![
                top(1, 99.5, None),
                top(2, 41.7, Some(iotoll_model::result::ROLE_ENDPOINT)),
            ],
            interference: interference(92.2, true),
            ..Default::default()
        };
        bound_by_host(&mut r);
        let i = r.interference.unwrap();
        assert!(
            (i.others_pct - (99.5 - 7.2 - 41.7)).abs() < 1e-9,
            "{}",
            i.others_pct
        );
    }

    #[test]
    fn steal_interferes_like_another_process() {
        // Seen: 14.4 % steal inflated a disk test's whole-host CPU from
        // about 13 % to 27.7 % with no process to blame.
        let mut r = CpuReport {
            busy_pct: 27.7,
            self_pct: Some(10.3),
            modes: iotoll_model::result::CpuModes {
                steal: 14.4,
                ..Default::default()
            },
            interference: interference(0.5, false),
            ..Default::default()
        };
        bound_by_host(&mut r);
        let i = r.interference.unwrap();
        assert_eq!(i.steal_pct, 14.4);
        assert!(i.interfered);
        assert!(i.what().contains("14.4 % (steal"), "{}", i.what());
        // Below the threshold together: clean.
        let mut quiet = i.clone();
        quiet.steal_pct = 1.5;
        quiet.set_threshold(5.0);
        assert!(!quiet.interfered);
    }

    #[test]
    fn a_busy_thread_shows_up_in_self_and_host_cpu() {
        // Spins for 0.3 s of this process's own CPU time (not wall time:
        // on a busy shared machine the thread gets less than a core).
        let w = CpuWindow::start().unwrap();
        let c0 = self_cpu_s();
        let mut x = 0u64;
        while self_cpu_s() - c0 < 0.3 {
            for _ in 0..10_000 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            }
        }
        std::hint::black_box(x);
        let closed = w.finish_with(|| {});
        let r = closed.report.as_ref().unwrap();
        let self_pct = r.self_pct.unwrap();
        let self_cpu_s = self_pct / 100.0 * r.window_s * r.cpus as f64;
        assert!(
            self_cpu_s >= 0.3 && self_pct <= 100.0 + 1e-6,
            "self {self_pct} % of a {} s window",
            r.window_s
        );
        assert!(
            r.busy_pct + 1.0 >= self_pct * 0.7,
            "host {} < self {self_pct}",
            r.busy_pct
        );
        assert!(!r.top.is_empty());
        // Ranked among every process, not a top five that a busy host
        // fills with others.
        let me = everyone(&closed)
            .into_iter()
            .find(|t| t.pid == std::process::id() as i32);
        assert_eq!(me.and_then(|t| t.role), Some("self".into()));
        let i = r.interference.as_ref().expect("interference measured");
        assert!(i
            .processes
            .iter()
            .all(|p| p.pid != std::process::id() as i32));
    }

    /// Every process of a closed window, ranked and given its role.
    fn everyone(w: &ClosedWindow) -> Vec<iotoll_model::TopConsumer> {
        let cpus = w.report.as_ref().map_or(0, |r| r.cpus);
        let roles = procs::Roles::this_process();
        let (all, _) = procs::attribute(
            &w.consumers,
            w.window_s,
            cpus,
            procs::clk_tck(),
            &roles,
            usize::MAX,
            5.0,
        );
        all
    }

    /// A process that starts and ends inside the window is seen, under the
    /// parent that reaped it: here a shell whose child does a fixed amount
    /// of work and exits, while the shell itself only waits.
    #[test]
    fn a_child_started_and_reaped_inside_the_window_is_seen() {
        use std::io::BufRead;
        let w = CpuWindow::start().unwrap();
        let mut parent = std::process::Command::new("sh")
            .arg("-c")
            .arg("sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done'; echo done; exec sleep 30")
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(parent.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "done");
        let closed = w.finish_with(|| {});
        let _ = parent.kill();
        let _ = parent.wait();
        let pid = parent.id() as i32;
        let cpus = closed.report.as_ref().unwrap().cpus;
        let all = everyone(&closed);
        let seen = all.iter().find(|p| p.pid == pid);
        // 300,000 shell iterations are well over 0.1 CPU-second on any
        // machine; only the reaped child's time can charge the parent, an
        // other process (it counts as interference), this much.
        assert!(
            seen.is_some_and(|p| p.role.is_none()
                && !p.kernel_thread
                && p.cpu_pct * closed.window_s * cpus as f64 >= 5.0),
            "parent {pid} not charged: {all:?}"
        );
    }
}
