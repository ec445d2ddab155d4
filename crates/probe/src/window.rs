//! A measurement window: CPU snapshots at its start and end.

use crate::{clock, owncpus, procs, stat, ProbeError};
use iotoll_model::result::DEFAULT_INTERFERENCE_PCT;
use iotoll_model::CpuReport;
use nix::sys::resource::{getrusage, UsageWho};
use nix::sys::time::TimeVal;
use std::time::Instant;

/// How many top consumers a report lists.
const TOP_N: usize = 5;

/// The environment variable a lab sets on what it starts in a host with
/// its own CPUs (`0-3`): windows opened there measure those CPUs.
pub const HOST_CPUS_ENV: &str = "IOTOLL_HOST_CPUS";

thread_local! {
    /// The CPUs of the lab host this thread entered (`iotoll_lab::enter`).
    static HOST_CPUS: std::cell::RefCell<Option<Vec<u32>>> = const { std::cell::RefCell::new(None) };
}

/// Lab hosts entered by some thread of this process, by network namespace
/// (its inode), with how many threads are inside: a thread that an entered
/// thread starts (an endpoint's session) inherits the namespace and the
/// affinity but not the thread-local, and finds its host's CPUs here.
/// Counted so that a namespace freed at `down`, whose inode the kernel
/// may give to a new one, stays no longer than its last thread inside.
static ENTERED: std::sync::Mutex<Vec<(u64, Vec<u32>, usize)>> = std::sync::Mutex::new(Vec::new());

fn entered() -> std::sync::MutexGuard<'static, Vec<(u64, Vec<u32>, usize)>> {
    ENTERED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The network namespace of the calling thread, by inode.
fn thread_netns() -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/thread-self/ns/net")
        .ok()
        .map(|m| m.ino())
}

/// Sets the lab host CPUs of this thread (None: none); returns the old.
pub fn set_thread_host_cpus(cpus: Option<Vec<u32>>) -> Option<Vec<u32>> {
    HOST_CPUS.with(|h| h.replace(cpus))
}

/// This thread enters the lab host in namespace `netns` with CPUs `cpus`:
/// windows opened by it, and by threads it starts there, measure them.
/// Returns what [`leave_host_cpus`] restores.
pub fn enter_host_cpus(netns: u64, cpus: Vec<u32>) -> Option<Vec<u32>> {
    let mut e = entered();
    match e.iter_mut().find(|(ino, c, _)| *ino == netns && *c == cpus) {
        Some(x) => x.2 += 1,
        None => e.push((netns, cpus.clone(), 1)),
    }
    set_thread_host_cpus(Some(cpus))
}

/// Undoes [`enter_host_cpus`] for this thread.
pub fn leave_host_cpus(netns: u64, cpus: &[u32], previous: Option<Vec<u32>>) {
    let mut e = entered();
    if let Some(i) = e.iter().position(|(ino, c, _)| *ino == netns && c == cpus) {
        e[i].2 -= 1;
        if e[i].2 == 0 {
            e.swap_remove(i);
        }
    }
    set_thread_host_cpus(previous);
}

/// The CPUs of the lab host this thread runs as, if it has its own: the
/// thread's entered host, the host whose namespace it inherited from a
/// thread that entered it, else [`HOST_CPUS_ENV`]. A window opened here
/// measures those CPUs (the machine's stay beside them).
pub fn host_cpus() -> Option<Vec<u32>> {
    let inherited = || {
        let ns = thread_netns()?;
        let e = entered();
        e.iter()
            .find(|(ino, ..)| *ino == ns)
            .map(|(_, c, _)| c.clone())
    };
    HOST_CPUS
        .with(|h| h.borrow().clone())
        .or_else(inherited)
        .or_else(|| {
            let v = std::env::var(HOST_CPUS_ENV).ok()?;
            crate::affinity::parse_list(&v)
                .ok()
                .filter(|l| !l.is_empty())
        })
}

/// Whole-host CPU over one window. Start it the moment the measurement
/// window opens (after ramp-up) and finish it the moment it closes.
/// In a lab host with its own CPUs ([`host_cpus`]) "host" is those CPUs.
pub struct CpuWindow {
    own: Option<Vec<u32>>,
    /// This process's threads' CPU time at the start, when `own` is set.
    threads: std::collections::HashMap<i32, u64>,
    procs: procs::ProcSnapshot,
    stat: stat::StatSnapshot,
    self_cpu_s: f64,
    /// Just before this process's time was read at the start: its own
    /// figure is a rate over the span between its two reads, which
    /// brackets the window. Over the window's length, a read delayed by
    /// the scheduler while the other threads ran put it above 100 % of
    /// the CPUs (100.67 % in CI, beside CPU hogs).
    self_t0: Instant,
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
    /// [`start_with`](Self::start_with) at an instant: `wait` waits for it
    /// (a ramp-up, a schedule; false: give up, no window), then the window
    /// opens at once, so a window scheduled across hosts opens on time.
    pub fn start_after(
        wait: impl FnOnce() -> bool,
        on_open: impl FnOnce(),
    ) -> Result<Option<Self>, ProbeError> {
        if !wait() {
            return Ok(None);
        }
        Self::start_with(on_open).map(Some)
    }

    /// Opens the window and calls `on_open` the moment it is open (the
    /// caller flips its workload into the measured phase there).
    ///
    /// The process table is read at each edge right after /proc/stat (and
    /// after `on_open`, so the window opens on time): its window is the
    /// host's, moved by one table read at both ends. Read before a wait,
    /// the ramp-up's CPU was charged to the window (a single-threaded hog
    /// shown at 94 % of a 2-CPU host).
    pub fn start_with(on_open: impl FnOnce()) -> Result<Self, ProbeError> {
        let own = host_cpus();
        let self_t0 = Instant::now();
        let threads = own.as_ref().map(|_| owncpus::thread_times());
        let self_cpu_s = self_cpu_s();
        let stat = stat::StatSnapshot::read()?;
        let t0 = Instant::now();
        on_open();
        let procs = procs::snapshot();
        Ok(CpuWindow {
            own,
            threads: threads.unwrap_or_default(),
            procs,
            stat,
            self_cpu_s,
            self_t0,
            t0,
        })
    }

    /// Closes the window, calls `on_close` the moment it is closed (the
    /// caller stops counting there), then computes the report. The window
    /// length is known even when no CPU figure can be given.
    pub fn finish_with(self, on_close: impl FnOnce()) -> ClosedWindow {
        let end = stat::StatSnapshot::read();
        let window_s = self.t0.elapsed().as_secs_f64();
        let self_end = self_cpu_s();
        let self_span_s = self.self_t0.elapsed().as_secs_f64().max(window_s);
        on_close();
        // This process's time on other hosts' CPUs (an in-process endpoint
        // in another lab host) is not this host's: its total less its
        // threads confined elsewhere, or its threads here, whichever is
        // less (a thread that ended in the window is in neither sum).
        let split = (self.own.as_ref()).map(|o| owncpus::self_split_s(&self.threads, o));
        let mut consumers = Vec::new();
        let report = end.and_then(|end| {
            let end_procs = procs::snapshot();
            let mut r = stat::cpu_report(&self.stat, &end, window_s, None)?;
            if let Some(own) = &self.own {
                let mut o = stat::cpu_report(&self.stat, &end, window_s, Some(own))?;
                o.own_cpus = Some(own.clone());
                o.machine = Some(iotoll_model::MachineCpu {
                    cpus: r.cpus,
                    busy_pct: r.busy_pct,
                    modes: r.modes.clone(),
                });
                o.notes.push(format!(
                    "measured on this lab host's own CPUs {} ({} of the machine's {}); top consumers, the account and interference are of these CPUs (see docs/lab.md for how processes are placed on them)",
                    crate::affinity::format_cpu_list(own),
                    o.cpus,
                    r.cpus
                ));
                r = o;
            }
            let total_s = self_end - self.self_cpu_s;
            let self_s = split.map_or(total_s, |(here, elsewhere)| here.min(total_s - elsewhere));
            if self_s.is_finite() && window_s > 0.0 {
                let self_s = self_s.max(0.0);
                let self_pct = self_s / (self_span_s * r.cpus as f64) * 100.0;
                r.self_pct = Some(self_pct);
                // Steal is busy time nothing ran in; but iotoll's exact
                // figure is the scheduler's, which counts time stolen from
                // its threads as theirs.
                let steal = r.modes.steal;
                if self_pct > r.busy_pct - steal + 1.0 {
                    let of_which = if steal > 0.0 {
                        format!(", {steal:.1} % of it steal")
                    } else {
                        String::new()
                    };
                    r.notes.push(format!(
                        "the host's tick-sampled counters (/proc/stat: {:.1} % busy{of_which}) read below iotoll's own exactly accounted CPU ({self_pct:.1} %): with tickless idle, short bursts of work between idle periods are under-sampled (and time a hypervisor stole while iotoll ran is in both its figure and steal), so whole-host CPU and service demand are understated here",
                        r.busy_pct
                    ));
                }
            }
            consumers = procs::consumers(&self.procs, &end_procs);
            (r.nominal_mhz, r.nominal_mhz_source) = clock::nominal_mhz().unzip();
            Ok(r)
        });
        let allowed = (self.own.as_ref()).map(|_| owncpus::allowed(&consumers));
        let mut closed = ClosedWindow {
            allowed: self.own.zip(allowed),
            consumers,
            ..ClosedWindow::new(window_s, report)
        };
        closed.attribute();
        closed
    }
}

/// A closed window: its exact length, and the CPU report if one could be made.
pub struct ClosedWindow {
    pub window_s: f64,
    pub report: Result<CpuReport, ProbeError>,
    /// Every process's CPU in the window, most first.
    consumers: Vec<procs::Consumer>,
    roles: procs::Roles,
    /// The host's own CPUs, and where each consumer may run: processes are
    /// placed on those CPUs (`owncpus`) and accounted against them.
    allowed: Option<(Vec<u32>, owncpus::Allowed)>,
}

impl ClosedWindow {
    /// A window measured elsewhere (e.g. on a test's clock): no process table.
    pub fn new(window_s: f64, report: Result<CpuReport, ProbeError>) -> Self {
        ClosedWindow {
            window_s,
            report,
            consumers: Vec::new(),
            roles: procs::Roles::this_process(),
            allowed: None,
        }
    }

    /// Marks `pid` as this test's endpoint, running on this host (the peer
    /// said its kernel boot id is ours): it gets role `endpoint` and stops
    /// counting as interference.
    pub fn mark_endpoint(&mut self, pid: i32) {
        self.roles.endpoint_pid = Some(pid);
        self.attribute();
    }

    /// Every process's figure, the split of busy CPU and the interference,
    /// accounted once under the current roles (at the threshold already
    /// set, or the default).
    fn attribute(&mut self) {
        let Ok(r) = &self.report else { return };
        let threshold = r
            .interference
            .as_ref()
            .map_or(DEFAULT_INTERFERENCE_PCT, |i| i.threshold_pct);
        let accounted = self.account(threshold);
        let Ok(r) = &mut self.report else { return };
        r.notes
            .retain(|n| !n.starts_with(procs::SCALED_NOTE) && !n.starts_with(owncpus::PLACED_NOTE));
        match accounted {
            Some(a) => {
                r.top = a.top(TOP_N);
                r.interference = Some(a.interference);
                r.account = Some(a.account);
                r.notes.extend(a.notes);
            }
            None => {
                r.top = Vec::new();
                r.interference = None;
                r.account = None;
            }
        }
    }

    /// The window's processes accounted in its host figures.
    fn account(&self, threshold_pct: f64) -> Option<procs::Accounting> {
        let r = self.report.as_ref().ok()?;
        // The report's window is this one (`finish_with`).
        let clk_tck = procs::clk_tck();
        let Some((own, allowed)) = &self.allowed else {
            return procs::account(&self.consumers, r, clk_tck, &self.roles, threshold_pct);
        };
        let (placed, note) =
            owncpus::on_host(&self.consumers, allowed, own, r, clk_tck, &self.roles);
        let mut a = procs::account(&placed, r, clk_tck, &self.roles, threshold_pct)?;
        a.notes.extend(note);
        Some(a)
    }

    /// Every process of the window as accounted (tests look beyond the top).
    #[cfg(test)]
    fn everyone(&self) -> Vec<iotoll_model::TopConsumer> {
        self.account(5.0).map(|a| a.everyone).unwrap_or_default()
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
        stat::cpu_report(&prev, &now, 1.0, None)
            .ok()
            .map(|r| r.busy_pct)
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
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Child, Command, Stdio};

    #[test]
    fn a_busy_thread_shows_up_in_self_and_host_cpu() {
        // Spins for 0.3 s of this process's own CPU time (not wall time:
        // on a busy shared machine the thread gets less than a core).
        let w = CpuWindow::start_with(|| {}).unwrap();
        let c0 = self_cpu_s();
        spin_until(|| self_cpu_s() - c0 >= 0.3);
        let closed = w.finish_with(|| {});
        let r = closed.report.as_ref().unwrap();
        let self_pct = r.self_pct.unwrap();
        // The rate is over the span between the probe's own CPU reads,
        // which is the window plus the edge reads (well under 50 ms even
        // on a loaded machine), so over the window it reads that much less.
        let self_cpu_s = self_pct / 100.0 * (r.window_s + 0.05) * r.cpus as f64;
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
        let me = closed
            .everyone()
            .into_iter()
            .find(|t| t.pid == std::process::id() as i32);
        assert_eq!(me.and_then(|t| t.role), Some("self".into()));
        let i = r.interference.as_ref().expect("interference measured");
        assert!(i
            .processes
            .iter()
            .all(|p| p.pid != std::process::id() as i32));
    }

    /// issue 28: a window opened as a lab host with CPUs of its own counts
    /// this process's time there only. Seen: an in-process pair's client
    /// on CPU 0 charged with its endpoint's threads on CPU 1 (165 % of one
    /// CPU). A thread confined to another CPU spins for 0.3 s of its own
    /// CPU time in the window: none of it is this host's.
    #[test]
    fn threads_on_other_cpus_are_not_this_hosts() {
        let cpus = crate::affinity::allowed_cpus().unwrap_or_default();
        let [here, there, ..] = cpus[..] else {
            eprintln!("skipped: needs two usable CPUs, has {cpus:?}");
            return;
        };
        let before = set_thread_host_cpus(Some(vec![here]));
        let outer0 = self_cpu_s();
        let w = CpuWindow::start_with(|| {}).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let spinner = std::thread::spawn(move || {
            crate::affinity::pin_current_thread_to(&[there]).unwrap();
            let t0 = thread_cpu_s();
            spin_until(|| thread_cpu_s() - t0 >= 0.3);
            tx.send(thread_cpu_s() - t0).unwrap();
            // Alive at the window's end, as an endpoint's threads are.
            let _ = done_rx.recv();
        });
        let spun = rx.recv().unwrap();
        let closed = w.finish_with(|| {});
        let outer = self_cpu_s() - outer0;
        drop(done_tx);
        spinner.join().unwrap();
        set_thread_host_cpus(before);
        let r = closed.report.as_ref().unwrap();
        assert_eq!(r.own_cpus, Some(vec![here]));
        let self_s = r.self_pct.unwrap() / 100.0 * r.window_s * r.cpus as f64;
        // Other tests' threads run beside this one and may run here: the
        // bound is this process's whole time less the spinner's.
        assert!(
            self_s <= outer - spun + 0.02,
            "this host's self {self_s:.3} s of the process's {outer:.3} s, the spinner on CPU {there} {spun:.3} s"
        );
    }

    /// Busy work until `done` (asked every 10,000 steps).
    fn spin_until(done: impl Fn() -> bool) {
        let mut x = 0u64;
        while !done() {
            for _ in 0..10_000 {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
        }
    }

    /// This thread's CPU seconds.
    fn thread_cpu_s() -> f64 {
        let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID).unwrap();
        t.tv_sec() as f64 + t.tv_nsec() as f64 * 1e-9
    }

    /// A process that starts and ends inside the window is seen, under the
    /// parent that reaped it: here a shell whose child does a fixed amount
    /// of work and exits, while the shell itself only waits.
    #[test]
    fn a_child_started_and_reaped_inside_the_window_is_seen() {
        let w = CpuWindow::start_with(|| {}).unwrap();
        let parent = Reap(sh_then_sleep(&format!("sh -c '{SPIN}'")));
        let closed = w.finish_with(|| {});
        let pid = parent.0.id() as i32;
        drop(parent);
        let cpus = closed.report.as_ref().unwrap().cpus;
        let all = closed.everyone();
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

    /// A shell that runs `script`, prints `done` and then sleeps: reading
    /// the line is the event that the work (and any reaping) is over.
    fn sh_then_sleep(script: &str) -> Child {
        let mut c = Command::new("sh")
            .arg("-c")
            .arg(format!("{script}; echo done; exec sleep 60"))
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(c.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "done");
        c
    }

    const SPIN: &str = "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done";

    /// Not a test on its own: with IOTOLL_TEST_HOG_THREADS=N this test
    /// binary, run again by [`threaded_hog`], spins N threads until its
    /// stdin closes.
    #[test]
    fn hog_process() {
        let Some(n) = std::env::var("IOTOLL_TEST_HOG_THREADS")
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
        else {
            return;
        };
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        for _ in 0..n {
            let stop = stop.clone();
            std::thread::spawn(move || {
                spin_until(|| stop.load(std::sync::atomic::Ordering::Relaxed))
            });
        }
        println!("hog ready");
        let _ = std::io::stdout().flush();
        // Until the test closes stdin, or a minute if it never does.
        let stdin = std::thread::spawn(|| std::io::stdin().read_line(&mut String::new()));
        let deadline = Instant::now() + std::time::Duration::from_secs(60);
        while !stdin.is_finished() && Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        std::process::exit(0);
    }

    /// This test binary as a hog of `n` spinning threads, once they spin.
    fn threaded_hog(n: usize) -> Child {
        let mut c = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "window::tests::hog_process", "--nocapture"])
            .args(["--test-threads", "1"])
            .env("IOTOLL_TEST_HOG_THREADS", n.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(c.stdout.take().unwrap());
        let mut line = String::new();
        // The harness prints the test's name on the same line.
        while out.read_line(&mut line).unwrap() > 0 && !line.contains("hog ready") {
            line.clear();
        }
        assert!(line.contains("hog ready"), "{line}");
        c
    }

    /// Ends the child when the test ends, passed or failed.
    struct Reap(Child);

    impl Drop for Reap {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    fn threads_of(pid: u32) -> usize {
        std::fs::read_dir(format!("/proc/{pid}/task")).map_or(0, |d| d.count())
    }

    /// Seen: a disk run's process table was read before its ramp-up, so a
    /// hog's ramp-up CPU was divided by the window alone (a single thread
    /// at 94 % of a 2-CPU host; a hog that had ended before the window
    /// named the top consumer). A hog that ends (and is reaped) during
    /// the ramp-up must be charged nothing, one that runs in the window
    /// its CPU there, a 3-thread hog running throughout no more than its
    /// threads allow; and the parts of the account add up to busy CPU.
    #[test]
    fn the_ramp_up_is_not_charged_to_the_window() {
        let hog = Reap(threaded_hog(3));
        let mut ramp_only = None;
        let w = CpuWindow::start_after(
            || {
                ramp_only = Some(Reap(sh_then_sleep(&format!("sh -c '{SPIN}'"))));
                true
            },
            || {},
        )
        .unwrap()
        .unwrap();
        let in_window = Reap(sh_then_sleep(SPIN));
        let hog_threads = threads_of(hog.0.id());
        let closed = w.finish_with(|| {});
        let (hog, ramp_only, in_window) = (&hog.0, &ramp_only.unwrap().0, &in_window.0);
        let r = closed.report.as_ref().unwrap();
        let all = closed.everyone();
        let find = |pid: u32| all.iter().find(|t| t.pid == pid as i32).map(|t| t.cpu_pct);
        // % of all CPUs -> CPU seconds in the window.
        let cpu_s = |pct: f64| pct / 100.0 * closed.window_s * r.cpus as f64;
        // Its shell ran `echo` and `exec` in the window, a tick at most.
        let ramp_s = find(ramp_only.id()).map_or(0.0, cpu_s);
        assert!(ramp_s < 0.03, "ramp-up hog charged {ramp_s} s: {all:?}");
        let window = find(in_window.id()).expect("the window's hog is seen");
        assert!(cpu_s(window) > 0.0);
        assert!(
            window <= 100.0 / r.cpus as f64 + 1e-9,
            "{window} %: one thread"
        );
        let threaded = find(hog.id()).expect("the threaded hog is seen");
        let bound = 100.0 * hog_threads as f64 / r.cpus as f64;
        assert!(threaded <= bound + 1e-9, "{threaded} % > {bound} %");
        // One accounting: its parts add up to busy, and the interference
        // and the top list give each process the same figure.
        let a = r.account.as_ref().expect("an account");
        let self_over = r.notes.iter().any(|n| n.contains("tickless"));
        assert!(
            self_over || (a.total() - r.busy_pct).abs() < 1e-6,
            "{a:?} vs {}",
            r.busy_pct
        );
        assert_eq!(Some(a.self_pct), r.self_pct);
        let i = r.interference.as_ref().unwrap();
        assert_eq!(i.others_pct, a.others_pct);
        for p in i.processes.iter().chain(&r.top) {
            assert_eq!(Some(p.cpu_pct), find(p.pid as u32), "{p:?}");
        }
        for p in &all {
            assert!(p.cpu_pct <= r.busy_pct + 1e-9, "{p:?}");
        }
    }
}
