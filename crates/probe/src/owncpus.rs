//! A lab host with CPUs of its own, measured on them: whose time fell on
//! those CPUs. The kernel counts each CPU's time (`/proc/stat`) and each
//! process's time, not a process's time per CPU; but a process whose
//! affinity lies within the host's CPUs (a cgroup cpuset narrows it too)
//! can only have run there, and one whose affinity misses them never did.
//! A process allowed on both (an unconfined tenant: a build, a hog) is
//! given the host CPUs' time that nothing confined to them explains, at
//! most its own: the CPUs' busy time less steal, interrupts and softirq,
//! this iotoll's threads there and the processes confined there. Softirq
//! a tick found running in a task is in that task's time too (this kernel
//! has no IRQ time accounting), so the remainder errs low, never high.

use crate::procs::{Consumer, Roles};
use iotoll_model::CpuReport;
use std::collections::HashMap;

/// Where a process may run, against the host's CPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// Only on the host's CPUs: all its time was there.
    Inside,
    /// Never on them.
    Outside,
    /// On them and on others (or unknown: it has exited).
    Spans,
}

/// How the note on processes placed on a host's CPUs begins.
pub const PLACED_NOTE: &str = "processes allowed on these and other CPUs";

/// `allowed` (None: unknown) against the host's CPUs `own`.
pub fn place(allowed: Option<&[u32]>, own: &[u32]) -> Place {
    match allowed {
        Some(a) if !a.is_empty() && a.iter().all(|c| own.contains(c)) => Place::Inside,
        Some(a) if !a.is_empty() && !a.iter().any(|c| own.contains(c)) => Place::Outside,
        _ => Place::Spans,
    }
}

/// The `Cpus_allowed_list` of a `/proc/.../status` text.
pub fn parse_allowed(status: &str) -> Option<Vec<u32>> {
    let line = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?;
    crate::affinity::parse_list(line.trim()).ok()
}

/// The CPUs a process (or a thread: `PID/task/TID`) may run on, read now.
fn allowed_of(proc_path: &str) -> Option<Vec<u32>> {
    let s = std::fs::read_to_string(format!("/proc/{proc_path}/status")).ok()?;
    parse_allowed(&s)
}

/// The CPUs each process may run on, by pid (None: unknown).
pub type Allowed = HashMap<i32, Option<Vec<u32>>>;

/// The CPUs each of `consumers` may run on, read at the window's end.
pub fn allowed(consumers: &[Consumer]) -> Allowed {
    (consumers.iter())
        .map(|c| (c.pid, allowed_of(&c.pid.to_string())))
        .collect()
}

/// This process's threads' exact CPU time (`schedstat`, ns), by thread id.
pub fn thread_times() -> HashMap<i32, u64> {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return HashMap::new();
    };
    let read = |tid: i32| {
        let s = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat")).ok()?;
        s.split_ascii_whitespace().next()?.parse::<u64>().ok()
    };
    (dir.flatten())
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|tid| Some((tid, read(tid)?)))
        .collect()
}

/// This process's threads' CPU seconds since `start` ([`thread_times`]
/// at the window's start): (on `own` or allowed there, confined elsewhere).
/// A thread that ended in the window is in neither: with the process's
/// exact total, the two give two upper bounds of its time on `own`.
pub fn self_split_s(start: &HashMap<i32, u64>, own: &[u32]) -> (f64, f64) {
    let (mut here, mut elsewhere) = (0u64, 0u64);
    for (tid, ns) in thread_times() {
        let d = ns.saturating_sub(start.get(&tid).copied().unwrap_or(0));
        match place(allowed_of(&format!("self/task/{tid}")).as_deref(), own) {
            Place::Outside => elsewhere += d,
            Place::Inside | Place::Spans => here += d,
        }
    }
    (here as f64 * 1e-9, elsewhere as f64 * 1e-9)
}

/// The window's consumers as they ran on the host's CPUs (`host`, its
/// report: `cpus` is their count, `self_pct` this iotoll's time there):
/// those confined there in full, those confined elsewhere left out, the
/// others given the remainder (user processes first, then kernel
/// threads), each class scaled alike. This iotoll is kept as it is: the
/// account replaces its figure with its exact one. Returns a note when
/// processes allowed elsewhere too were given host CPU time.
pub fn on_host(
    consumers: &[Consumer],
    allowed: &Allowed,
    own: &[u32],
    host: &CpuReport,
    clk_tck: f64,
    roles: &Roles,
) -> (Vec<Consumer>, Option<String>) {
    let where_ = |c: &Consumer| place(allowed.get(&c.pid).cloned().flatten().as_deref(), own);
    let cap = clk_tck * host.window_s * host.cpus as f64 / 100.0;
    if cap <= 0.0 {
        return (Vec::new(), None);
    }
    let pct = |c: &Consumer| c.ticks as f64 / cap;
    let is_self = |c: &Consumer| c.pid == roles.own_pid;
    let sum = |keep: &dyn Fn(&Consumer) -> bool| -> f64 {
        consumers.iter().filter(|c| keep(c)).map(pct).sum()
    };
    let m = &host.modes;
    let explained = m.steal + m.irq + m.softirq + host.self_pct.unwrap_or(0.0);
    let inside = sum(&|c| !is_self(c) && where_(c) == Place::Inside);
    let mut left = (host.busy_pct - explained - inside).max(0.0);
    let spans = |kernel: bool| {
        move |c: &Consumer| !is_self(c) && c.kernel_thread == kernel && where_(c) == Place::Spans
    };
    let mut share = |total: f64| {
        let s = if total > 0.0 {
            (left / total).min(1.0)
        } else {
            0.0
        };
        left -= s * total;
        s
    };
    let (user_total, kernel_total) = (sum(&spans(false)), sum(&spans(true)));
    let (user_share, kernel_share) = (share(user_total), share(kernel_total));
    let scale = |t: u64, s: f64| (t as f64 * s).round() as u64;
    let placed = (consumers.iter())
        .filter_map(|c| {
            let s = match where_(c) {
                _ if is_self(c) => 1.0,
                Place::Inside => 1.0,
                Place::Outside => return None,
                Place::Spans if c.kernel_thread => kernel_share,
                Place::Spans => user_share,
            };
            let c = Consumer {
                ticks: scale(c.ticks, s),
                own: scale(c.own, s),
                ..c.clone()
            };
            (c.ticks > 0).then_some(c)
        })
        .collect();
    let note = (user_total > 0.0 && user_share > 0.0).then(|| {
        format!(
            "{PLACED_NOTE} ({user_total:.1} % of this host's CPUs if all their time had been here) were given the {:.1} % of these CPUs' time that nothing confined to them used: the kernel does not record a process's time per CPU",
            user_share * user_total
        )
    });
    (placed, note)
}

#[cfg(test)]
mod tests {
    use super::*;
    use iotoll_model::CpuModes;

    fn consumer(pid: i32, ticks: u64, kernel_thread: bool) -> Consumer {
        Consumer {
            pid,
            comm: format!("p{pid}"),
            kernel_thread,
            ticks,
            own: ticks,
            threads: 4,
        }
    }

    /// A 1-CPU host (CPU 0 of a 2-CPU machine), 10 s at 100 ticks/s:
    /// 1,000 ticks of capacity, so one tick is 0.1 %.
    fn host(busy_pct: f64, softirq: f64, self_pct: f64) -> CpuReport {
        CpuReport {
            cpus: 1,
            window_s: 10.0,
            busy_pct,
            self_pct: Some(self_pct),
            modes: CpuModes {
                softirq,
                ..CpuModes::default()
            },
            ..CpuReport::default()
        }
    }

    fn roles() -> Roles {
        Roles {
            own_pid: 1,
            endpoint_pid: None,
            sut: Vec::new(),
        }
    }

    #[test]
    fn places_by_affinity() {
        assert_eq!(place(Some(&[0]), &[0, 1]), Place::Inside);
        assert_eq!(place(Some(&[2, 3]), &[0, 1]), Place::Outside);
        assert_eq!(place(Some(&[1, 2]), &[0, 1]), Place::Spans);
        assert_eq!(place(None, &[0]), Place::Spans);
        assert_eq!(place(Some(&[]), &[0]), Place::Spans);
        let st = "Name:\tx\nCpus_allowed:\t3\nCpus_allowed_list:\t0-1,4\n";
        assert_eq!(parse_allowed(st), Some(vec![0, 1, 4]));
        assert_eq!(parse_allowed("Name:\tx\n"), None);
    }

    /// Host CPU 0 80 % busy: iotoll 30 %, softirq 5 %, a process confined
    /// there 10 %, one confined to CPU 1 (left out), an unconfined hog that
    /// ran 700 ticks machine-wide and a bound kernel thread elsewhere. The
    /// hog gets what is left, 35 %, not its 70 %; the parts add up.
    #[test]
    fn the_unconfined_get_the_remainder_at_most_their_own() {
        let all = vec![
            consumer(1, 600, false),
            consumer(2, 100, false),
            consumer(3, 900, false),
            consumer(4, 700, false),
            consumer(5, 50, true),
        ];
        let allowed = HashMap::from([
            (1, Some(vec![0, 1])),
            (2, Some(vec![0])),
            (3, Some(vec![1])),
            (4, Some(vec![0, 1])),
            (5, Some(vec![1])),
        ]);
        let h = host(80.0, 5.0, 30.0);
        let (placed, note) = on_host(&all, &allowed, &[0], &h, 100.0, &roles());
        let ticks = |pid| placed.iter().find(|c| c.pid == pid).map(|c| c.ticks);
        assert_eq!(ticks(1), Some(600), "iotoll kept for its exact figure");
        assert_eq!(ticks(2), Some(100));
        assert_eq!(ticks(3), None);
        assert_eq!(ticks(4), Some(350));
        assert_eq!(ticks(5), None);
        assert!(note.is_some_and(|n| n.contains("35.0 %")));
        // A hog smaller than the remainder keeps its own time; the rest
        // goes to unconfined kernel threads, at most theirs.
        let mut small = all.clone();
        small[3].ticks = 200;
        small[4].ticks = 300;
        let mut a2 = allowed.clone();
        a2.insert(5, Some(vec![0, 1]));
        let (placed, _) = on_host(&small, &a2, &[0], &h, 100.0, &roles());
        let ticks = |pid| placed.iter().find(|c| c.pid == pid).map(|c| c.ticks);
        assert_eq!(ticks(4), Some(200));
        assert_eq!(ticks(5), Some(150));
    }

    /// Nothing left over: an unconfined process is not charged at all, and
    /// no note is written.
    #[test]
    fn no_remainder_no_charge() {
        let all = vec![consumer(1, 500, false), consumer(4, 700, false)];
        let allowed = HashMap::from([(1, Some(vec![0])), (4, None)]);
        let h = host(50.0, 0.0, 50.0);
        let (placed, note) = on_host(&all, &allowed, &[0], &h, 100.0, &roles());
        assert_eq!(placed.len(), 1);
        assert!(note.is_none());
    }
}
