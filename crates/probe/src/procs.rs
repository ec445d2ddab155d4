//! Per-process CPU from `/proc/*/stat`: the top consumers of a window. This
//! is what shows where a software initiator, io_uring workers or a softirq
//! storm (ksoftirqd) spend the host's CPU, and which other tenants' processes
//! ran in the window (interference).
//!
//! Two snapshots cannot see a process that starts and ends between them;
//! but when a process ends, its parent collects its CPU time (cutime and
//! cstime), so each process is charged its own time plus that of the
//! children it reaped in the window. A hog started and reaped inside the
//! window shows up under its parent (a shell, a make, a supervisor).

use iotoll_model::result::{ROLE_ENDPOINT, ROLE_IOTOLL, ROLE_SELF};
use iotoll_model::{Interference, TopConsumer};
use nix::errno::Errno;
use nix::sys::signal::kill;
use nix::unistd::{sysconf, Pid, SysconfVar};
use std::collections::HashMap;

const PF_KTHREAD: u64 = 0x0020_0000;

#[derive(Debug, Clone, PartialEq)]
pub struct ProcTimes {
    pub comm: String,
    /// utime + stime, all threads, in clock ticks.
    pub ticks: u64,
    /// cutime + cstime: the CPU of ended children it has reaped, ticks.
    pub children: u64,
    pub ppid: i32,
    pub kernel_thread: bool,
}

/// Processes keyed by (pid, start time), so a recycled pid is a new process.
pub type ProcSnapshot = HashMap<(i32, u64), ProcTimes>;

/// Parses one `/proc/PID/stat` line. The command name is in parentheses and
/// may itself contain spaces and parentheses, so fields are counted from the
/// last ')'.
pub fn parse_proc_stat(line: &str) -> Option<(i32, u64, ProcTimes)> {
    let open = line.find('(')?;
    let close = line.rfind(')')?;
    let pid = line[..open].trim().parse().ok()?;
    let comm = line.get(open + 1..close)?.to_string();
    // Fields after ')' start at field 3 (state).
    let rest: Vec<&str> = line.get(close + 1..)?.split_ascii_whitespace().collect();
    let raw = |n: usize| rest.get(n - 3).copied();
    let field = |n: usize| raw(n)?.parse::<u64>().ok();
    let ppid = raw(4)?.parse::<i32>().ok()?;
    let flags = field(9)?;
    let ticks = field(14)?.checked_add(field(15)?)?;
    // cutime and cstime are signed in the kernel's format; never negative.
    let signed = |n: usize| raw(n)?.parse::<i64>().ok().map(|v| v.max(0) as u64);
    let children = signed(16)?.saturating_add(signed(17)?);
    let start = field(22)?;
    Some((
        pid,
        start,
        ProcTimes {
            comm,
            ticks,
            children,
            ppid,
            kernel_thread: flags & PF_KTHREAD != 0,
        },
    ))
}

/// When process `pid` started, in clock ticks after boot (field 22 of its
/// stat): with the pid, it names one process for the life of a boot.
pub fn start_ticks(pid: i32) -> Option<u64> {
    let line = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_proc_stat(&line).map(|(_, start, _)| start)
}

/// Reads every process. Processes that exit while we read are skipped.
pub fn snapshot() -> ProcSnapshot {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return HashMap::new();
    };
    let read = |name: String| {
        let line = std::fs::read_to_string(format!("/proc/{name}/stat")).ok()?;
        let (pid, start, t) = parse_proc_stat(&line)?;
        Some(((pid, start), t))
    };
    dir.flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|name| name.bytes().all(|b| b.is_ascii_digit()))
        .filter_map(read)
        .collect()
}

/// One process's CPU between two snapshots.
#[derive(Debug, Clone, PartialEq)]
pub struct Consumer {
    pub pid: i32,
    pub comm: String,
    pub kernel_thread: bool,
    /// Its own ticks in the window plus those of the children it reaped in
    /// the window (a child that existed at the start is charged only what
    /// it used after the start).
    pub ticks: u64,
}

/// Every process that used CPU between two snapshots, most first. A
/// process born during the window counts in full.
pub fn consumers(start: &ProcSnapshot, end: &ProcSnapshot) -> Vec<Consumer> {
    // Children present at the start and gone at the end were reaped (or
    // orphaned): their parent's cutime grew by their whole life, of which
    // the part before the window is removed here. A parent that is gone
    // too passed it on to its own reaper (`$(cmd)` in a shell: the
    // subshell reaps cmd, the shell the subshell), so the part before the
    // window goes to the nearest ancestor still there at the end.
    let gone = |pid: i32| {
        start
            .iter()
            .find(|(k, _)| k.0 == pid)
            .filter(|(k, _)| !end.contains_key(k))
            .map(|(_, s)| s.ppid)
    };
    let mut before_window: HashMap<i32, u64> = HashMap::new();
    for (key, s) in start {
        if !end.contains_key(key) {
            let mut reaper = s.ppid;
            // Bounded: a pid chain cannot be longer than the snapshot.
            for _ in 0..start.len() {
                match gone(reaper) {
                    Some(up) if up != reaper => reaper = up,
                    _ => break,
                }
            }
            *before_window.entry(reaper).or_insert(0) += s.ticks.saturating_add(s.children);
        }
    }
    let mut v: Vec<Consumer> = end
        .iter()
        .filter_map(|(key, e)| {
            let (own0, kids0) = start.get(key).map_or((0, 0), |s| (s.ticks, s.children));
            let own = e.ticks.saturating_sub(own0);
            let kids = e
                .children
                .saturating_sub(kids0)
                .saturating_sub(before_window.get(&key.0).copied().unwrap_or(0));
            let d = own.saturating_add(kids);
            (d > 0).then(|| Consumer {
                pid: key.0,
                comm: e.comm.clone(),
                kernel_thread: e.kernel_thread,
                ticks: d,
            })
        })
        .collect();
    v.sort_by(|a, b| b.ticks.cmp(&a.ticks).then(a.pid.cmp(&b.pid)));
    v
}

/// Who is who in a measurement.
#[derive(Debug, Clone, Copy)]
pub struct Roles {
    /// This iotoll process.
    pub own_pid: i32,
    /// The iotoll endpoint of this test when it runs on this host (same
    /// kernel boot id) and told us its pid.
    pub endpoint_pid: Option<i32>,
}

impl Roles {
    pub fn this_process() -> Roles {
        Roles {
            own_pid: std::process::id() as i32,
            endpoint_pid: None,
        }
    }

    fn of(&self, c: &Consumer) -> Option<&'static str> {
        if c.pid == self.own_pid {
            Some(ROLE_SELF)
        } else if !c.kernel_thread && Some(c.pid) == self.endpoint_pid {
            // Whatever its binary is called: the caller verified the pid.
            Some(ROLE_ENDPOINT)
        } else if !c.kernel_thread && c.comm == "iotoll" {
            Some(ROLE_IOTOLL)
        } else {
            None
        }
    }
}

/// How many processes an interference report names.
pub const INTERFERENCE_N: usize = 5;

/// The `n` largest consumers, with their roles, and the interference: the
/// user-space processes other than this iotoll and its endpoint (another
/// iotoll counts; kernel threads do not, they do the I/O's own work), as %
/// of all CPUs over `window_s`, judged against `threshold_pct`.
pub fn attribute(
    all: &[Consumer],
    window_s: f64,
    cpus: u32,
    clk_tck: f64,
    roles: &Roles,
    n: usize,
    threshold_pct: f64,
) -> (Vec<TopConsumer>, Option<Interference>) {
    if window_s <= 0.0 || cpus == 0 || clk_tck <= 0.0 {
        return (Vec::new(), None);
    }
    let pct = |ticks: u64| ticks as f64 / clk_tck / (window_s * cpus as f64) * 100.0;
    let top_of = |c: &Consumer| TopConsumer {
        pid: c.pid,
        comm: c.comm.clone(),
        kernel_thread: c.kernel_thread,
        cpu_pct: pct(c.ticks),
        role: roles.of(c).map(str::to_string),
    };
    let top = all.iter().take(n).map(top_of).collect();
    let others: Vec<&Consumer> = all
        .iter()
        .filter(|c| !c.kernel_thread && !matches!(roles.of(c), Some(ROLE_SELF | ROLE_ENDPOINT)))
        .collect();
    let others_pct = pct(others.iter().map(|c| c.ticks).sum());
    let mut i = Interference {
        threshold_pct,
        others_pct,
        // Filled in with the window's modes (window::bound_by_host).
        steal_pct: 0.0,
        interfered: false,
        processes: others
            .iter()
            .take(INTERFERENCE_N)
            .map(|c| top_of(c))
            .collect(),
    };
    i.set_threshold(threshold_pct);
    (top, Some(i))
}

/// Whether process `pid` exists (EPERM: it does, as another user's).
pub fn pid_alive(pid: i64) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    pid > 0 && matches!(kill(Pid::from_raw(pid), None), Ok(()) | Err(Errno::EPERM))
}

/// Clock ticks per second for /proc/*/stat times.
pub fn clk_tck() -> f64 {
    let v = sysconf(SysconfVar::CLK_TCK).ok().flatten();
    v.filter(|v| *v > 0).map_or(100.0, |v| v as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(pid: i32, comm: &str, flags: u64, utime: u64, stime: u64, start: u64) -> String {
        fam(pid, 1, comm, flags, utime, stime, 0, start)
    }

    /// A stat line with a parent and reaped children's time.
    #[allow(clippy::too_many_arguments)]
    fn fam(
        pid: i32,
        ppid: i32,
        comm: &str,
        flags: u64,
        utime: u64,
        stime: u64,
        cutime: u64,
        start: u64,
    ) -> String {
        format!(
            "{pid} ({comm}) S {ppid} 1 1 0 -1 {flags} 0 0 0 0 {utime} {stime} {cutime} 0 20 0 1 0 {start} 0 0"
        )
    }

    fn snap(lines: &[String]) -> ProcSnapshot {
        lines
            .iter()
            .map(|l| {
                let (p, s, t) = parse_proc_stat(l).unwrap();
                ((p, s), t)
            })
            .collect()
    }

    #[test]
    fn parses_awkward_names() {
        let l = line(42, "a (b) c", PF_KTHREAD | 0x40, 7, 3, 999);
        let (pid, start, t) = parse_proc_stat(&l).unwrap();
        assert_eq!((pid, start), (42, 999));
        assert_eq!(t.comm, "a (b) c");
        assert_eq!(t.ticks, 10);
        assert_eq!(t.ppid, 1);
        assert!(t.kernel_thread);
        assert!(parse_proc_stat("garbage").is_none());
    }

    #[test]
    fn ranks_by_delta_and_handles_pid_reuse() {
        let start = snap(&[
            line(1, "busy", 0, 100, 0, 1),
            line(2, "idle", 0, 50, 0, 1),
            line(3, "old", 0, 500, 0, 1),
        ]);
        let end = snap(&[
            line(1, "busy", 0, 300, 100, 1),
            line(2, "idle", 0, 50, 0, 1),
            // pid 3 recycled by a new process: its 20 ticks are all in the window.
            line(3, "new", PF_KTHREAD, 20, 0, 77),
        ]);
        let nobody = Roles {
            own_pid: -1,
            endpoint_pid: None,
        };
        let (top, _) = attribute(&consumers(&start, &end), 2.0, 2, 100.0, &nobody, 5, 5.0);
        assert_eq!(top.len(), 2);
        assert_eq!(top[0].comm, "busy");
        // 300 ticks = 3 CPU-s over 2 s x 2 CPUs = 75 %.
        assert!((top[0].cpu_pct - 75.0).abs() < 1e-9);
        assert_eq!(top[1].comm, "new");
        assert!(top[1].kernel_thread);
    }

    #[test]
    fn reaped_children_are_charged_to_their_parent() {
        let start = snap(&[
            fam(10, 1, "sh", 0, 5, 0, 0, 1),
            // A child with 40 ticks before the window, reaped in it.
            fam(11, 10, "old-child", 0, 40, 0, 0, 2),
        ]);
        let end = snap(&[
            // cutime grew by the old child's 40 + 60 ticks and by a child
            // born and reaped inside the window (30 ticks).
            fam(10, 1, "sh", 0, 5, 0, 130, 1),
            // Born in the window, still running: counted in full.
            fam(12, 1, "hog", 0, 70, 0, 0, 9),
        ]);
        let c = consumers(&start, &end);
        let get = |pid: i32| c.iter().find(|c| c.pid == pid).map(|c| c.ticks);
        assert_eq!(
            get(10),
            Some(90),
            "60 after the start + 30, not the 40 before"
        );
        assert_eq!(get(12), Some(70));
        assert_eq!(get(11), None);
    }

    /// `x=$(long-job)` in a shell: a subshell runs the job; both the job
    /// (reaped by the subshell) and the subshell (reaped by the shell) end
    /// in the window. The shell is charged what the job used in the window,
    /// not its life before it.
    #[test]
    fn a_grandchild_s_life_before_the_window_is_not_charged_to_the_shell() {
        let start = snap(&[
            fam(10, 1, "bash", 0, 5, 0, 0, 1),
            fam(20, 10, "bash", 0, 1, 0, 0, 2),
            fam(30, 20, "job", 0, 800, 0, 0, 3),
        ]);
        let end = snap(&[
            // The job used 100 more ticks, then both ended: the shell's
            // cutime grew by the subshell's 1 + the job's 900.
            fam(10, 1, "bash", 0, 5, 0, 901, 1),
        ]);
        let c = consumers(&start, &end);
        assert_eq!(c.len(), 1, "{c:?}");
        assert_eq!(c[0].ticks, 100, "{c:?}");
    }

    #[test]
    fn roles_and_interference() {
        let start = snap(&[]);
        let end = snap(&[
            line(100, "iotoll", 0, 50, 0, 1),
            line(200, "iotoll", 0, 30, 0, 1),
            line(300, "iotoll", 0, 20, 0, 1),
            line(400, "sh", 0, 15, 0, 1),
            line(500, "kworker/0:1", PF_KTHREAD, 80, 0, 1),
            line(600, "cron", 0, 1, 0, 1),
        ]);
        let roles = Roles {
            own_pid: 100,
            endpoint_pid: Some(200),
        };
        // 1 s window, 1 CPU, 100 ticks/s: ticks are percent.
        let (top, i) = attribute(&consumers(&start, &end), 1.0, 1, 100.0, &roles, 5, 10.0);
        let role = |pid: i32| {
            top.iter()
                .find(|t| t.pid == pid)
                .and_then(|t| t.role.clone())
        };
        assert_eq!(top.len(), 5);
        assert_eq!(role(100).as_deref(), Some("self"));
        assert_eq!(role(200).as_deref(), Some("endpoint"));
        assert_eq!(role(300).as_deref(), Some("iotoll"));
        assert_eq!(role(400), None);
        let i = i.unwrap();
        // Another iotoll (20) + sh (15) + cron (1); not self, the endpoint
        // or the kernel thread.
        assert!((i.others_pct - 36.0).abs() < 1e-9, "{i:?}");
        assert!(i.interfered);
        let pids: Vec<i32> = i.processes.iter().map(|p| p.pid).collect();
        assert_eq!(pids, [300, 400, 600]);
        let (_, i) = attribute(&consumers(&start, &end), 1.0, 1, 100.0, &roles, 5, 40.0);
        assert!(!i.unwrap().interfered, "36 % is not above 40 %");
    }

    #[test]
    fn pids_alive_and_not() {
        assert!(pid_alive(std::process::id() as i64) && pid_alive(1));
        assert!(!pid_alive(0) && !pid_alive(-1) && !pid_alive(i64::MAX));
        assert_eq!(clk_tck(), 100.0, "USER_HZ on Linux");
    }

    #[test]
    fn reads_this_host() {
        let s = snapshot();
        let me = std::process::id() as i32;
        assert!(s.keys().any(|(pid, _)| *pid == me));
    }
}
