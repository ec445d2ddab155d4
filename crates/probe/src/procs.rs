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

use iotoll_model::result::{ROLE_ENDPOINT, ROLE_IOTOLL, ROLE_SELF, ROLE_SUT};
use iotoll_model::{CpuReport, Interference, TopConsumer};
use nix::unistd::{sysconf, SysconfVar};
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
    /// Its threads when read: at most this many CPUs' worth of time.
    pub threads: u32,
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
    let threads = field(20).map_or(1, |t| t.clamp(1, u32::MAX as u64) as u32);
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
            threads,
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
    /// Its own part of `ticks`, without its children's.
    pub own: u64,
    /// The most threads it had at either edge of the window.
    pub threads: u32,
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
            let s = start.get(key);
            let (own0, kids0) = s.map_or((0, 0), |s| (s.ticks, s.children));
            let threads = s.map_or(e.threads, |s| s.threads.max(e.threads));
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
                own,
                threads,
            })
        })
        .collect();
    v.sort_by(|a, b| b.ticks.cmp(&a.ticks).then(a.pid.cmp(&b.pid)));
    v
}

/// A process named as part of the system under test (`--sut-process`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SutProcess {
    Pid(i32),
    /// Its command name as the kernel keeps it (`comm`, at most 15 bytes).
    Name(String),
    /// Every process in a network namespace (by its inode): a lab host's,
    /// so that what runs in the lab's target host (tgtd) is the target's.
    NetNs(u64),
}

impl SutProcess {
    /// The namespace a file names (`/run/netns/NAME`), if it exists.
    pub fn netns(path: &std::path::Path) -> Option<SutProcess> {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(path)
            .ok()
            .map(|m| SutProcess::NetNs(m.ino()))
    }

    fn matches(&self, c: &Consumer) -> bool {
        use std::os::unix::fs::MetadataExt;
        match self {
            SutProcess::Pid(p) => *p == c.pid,
            SutProcess::Name(n) => !c.kernel_thread && *n == c.comm,
            // The test's own agents in a lab host stay iotoll's.
            SutProcess::NetNs(ino) => {
                !c.kernel_thread
                    && !is_iotoll(c)
                    && std::fs::metadata(format!("/proc/{}/ns/net", c.pid))
                        .is_ok_and(|m| m.ino() == *ino)
            }
        }
    }
}

impl std::str::FromStr for SutProcess {
    type Err = String;

    /// `1234` is a pid, anything else a command name; names longer than the
    /// kernel keeps are cut as it cuts them, so `--sut-process
    /// very-long-daemon-name` still matches.
    fn from_str(s: &str) -> Result<SutProcess, String> {
        let bad = || format!("'{s}' is neither a process name nor a pid above 0");
        let t = s.trim();
        if t.is_empty() {
            return Err(bad());
        }
        if t.bytes().all(|b| b.is_ascii_digit()) {
            let pid = t.parse().ok().filter(|p| *p > 0);
            return pid.map(SutProcess::Pid).ok_or_else(bad);
        }
        let mut end = t.len().min(15);
        while !t.is_char_boundary(end) {
            end -= 1;
        }
        Ok(SutProcess::Name(t[..end].to_string()))
    }
}

/// Who is who in a measurement.
#[derive(Debug, Clone)]
pub struct Roles {
    /// This iotoll process.
    pub own_pid: i32,
    /// The iotoll endpoint of this test when it runs on this host (same
    /// kernel boot id) and told us its pid.
    pub endpoint_pid: Option<i32>,
    /// The processes of the system under test on this host.
    pub sut: Vec<SutProcess>,
}

/// The system under test named for this process's measurements
/// (`--sut-process`, a suite's `sut`): every window it closes counts them
/// as such, whichever command opened it.
static SUT: std::sync::Mutex<Vec<SutProcess>> = std::sync::Mutex::new(Vec::new());

/// Names the processes of the system under test for the windows this
/// process closes from now on (empty: none).
pub fn set_sut_processes(sut: Vec<SutProcess>) {
    *SUT.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = sut;
}

impl Roles {
    pub fn this_process() -> Roles {
        Roles {
            own_pid: std::process::id() as i32,
            endpoint_pid: None,
            sut: SUT
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone(),
        }
    }

    fn of(&self, c: &Consumer) -> Option<&'static str> {
        if c.pid == self.own_pid {
            Some(ROLE_SELF)
        } else if !c.kernel_thread && Some(c.pid) == self.endpoint_pid {
            // Whatever its binary is called: the caller verified the pid.
            Some(ROLE_ENDPOINT)
        } else if self.sut.iter().any(|s| s.matches(c)) {
            Some(ROLE_SUT)
        } else if is_iotoll(c) {
            Some(ROLE_IOTOLL)
        } else {
            None
        }
    }
}

/// An iotoll process: named so, or named as this process is (agents and
/// endpoints started from its own binary, whatever the binary is called:
/// a tester's renamed build was shown as interference).
fn is_iotoll(c: &Consumer) -> bool {
    static OWN: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let own = OWN.get_or_init(|| {
        let c = std::fs::read_to_string("/proc/self/comm").unwrap_or_default();
        c.trim_end_matches('\n').to_string()
    });
    !c.kernel_thread && (c.comm == "iotoll" || (!own.is_empty() && c.comm == *own))
}

/// How the note on scaled per-process figures begins.
pub const SCALED_NOTE: &str = "per-process CPU (sampled at the clock tick)";

/// How many processes an interference report names.
pub const INTERFERENCE_N: usize = 5;

/// Every consumer's CPU in the window, % of all CPUs, with its role, most
/// first. A process's own time is bounded by its threads (one thread
/// cannot use more than one CPU for the window); the children it reaped
/// are added on top, as they ran on threads of their own, up to all CPUs.
pub fn figures(
    all: &[Consumer],
    window_s: f64,
    cpus: u32,
    clk_tck: f64,
    roles: &Roles,
) -> Vec<TopConsumer> {
    if window_s <= 0.0 || cpus == 0 || clk_tck <= 0.0 {
        return Vec::new();
    }
    let pct = |ticks: u64| ticks as f64 / clk_tck / (window_s * cpus as f64) * 100.0;
    let mut v: Vec<TopConsumer> = all
        .iter()
        .map(|c| {
            let bound = (100.0 * f64::from(c.threads.max(1)) / cpus as f64).min(100.0);
            let own = pct(c.own).min(bound);
            // Nothing uses more than all CPUs for the window: the table
            // is read a little after each edge, and a read delayed at the
            // end adds ticks the window did not have.
            let kids = pct(c.ticks.saturating_sub(c.own)).min(100.0 - own);
            TopConsumer {
                pid: c.pid,
                comm: c.comm.clone(),
                kernel_thread: c.kernel_thread,
                cpu_pct: own + kids,
                role: roles.of(c).map(str::to_string),
            }
        })
        .collect();
    v.sort_by(|a, b| b.cpu_pct.total_cmp(&a.cpu_pct).then(a.pid.cmp(&b.pid)));
    v
}

/// One accounting of a window: every process's figure, the split of the
/// host's busy CPU, and the interference, all from the same figures.
#[derive(Debug, Clone, PartialEq)]
pub struct Accounting {
    /// Every process that used CPU, most first, as accounted.
    pub everyone: Vec<TopConsumer>,
    pub account: iotoll_model::CpuAccount,
    pub interference: Interference,
    /// Why the figures were adjusted, when they were.
    pub notes: Vec<String>,
}

impl Accounting {
    /// The `n` largest consumers.
    pub fn top(&self, n: usize) -> Vec<TopConsumer> {
        self.everyone.iter().take(n).cloned().collect()
    }
}

/// Accounts the window's processes in the host's busy CPU: this iotoll
/// (its exact figure), its endpoint, the system under test, other
/// processes (interference), kernel threads, steal, and kernel work no
/// process was charged with (the remainder). Per-process times are
/// sampled at the clock tick and read a moment apart from /proc/stat, so
/// together they can exceed the host's busy time by a few ticks (or a
/// reaper by an orphan's whole life): then every figure but iotoll's own
/// is scaled down alike, so that the parts add up, and a note says by how
/// much. Interference is judged on the accounted figures plus steal.
pub fn account(
    all: &[Consumer],
    host: &CpuReport,
    clk_tck: f64,
    roles: &Roles,
    threshold_pct: f64,
) -> Option<Accounting> {
    // No process table (unreadable /proc, a test's clock): no account
    // rather than one that gives every busy tick to the kernel.
    if all.is_empty() || host.window_s <= 0.0 || host.cpus == 0 || clk_tck <= 0.0 {
        return None;
    }
    let mut everyone = figures(all, host.window_s, host.cpus, clk_tck, roles);
    let busy = host.busy_pct.max(0.0);
    let steal = host.modes.steal.clamp(0.0, busy);
    let is = |t: &TopConsumer, r: &str| t.role.as_deref() == Some(r);
    if let Some(exact) = host.self_pct.filter(|v| v.is_finite()) {
        match everyone.iter_mut().find(|t| is(t, ROLE_SELF)) {
            Some(t) => t.cpu_pct = exact.max(0.0),
            None if exact > 0.0 => everyone.push(TopConsumer {
                pid: roles.own_pid,
                comm: "iotoll".into(),
                kernel_thread: false,
                cpu_pct: exact,
                role: Some(ROLE_SELF.into()),
            }),
            None => {}
        }
    }
    let self_pct = sum_of(&everyone, |t| is(t, ROLE_SELF));
    let room = (busy - steal - self_pct).max(0.0);
    let rest = sum_of(&everyone, |t| !is(t, ROLE_SELF));
    let mut notes = Vec::new();
    if rest > room {
        let f = if rest > 0.0 { room / rest } else { 0.0 };
        for t in everyone.iter_mut().filter(|t| !is(t, ROLE_SELF)) {
            t.cpu_pct *= f;
        }
        // A tick or two of skew is rounding, not worth a note.
        if rest - room >= 1.0 {
            notes.push(format!(
                "{SCALED_NOTE} came to {:.1} % beside the host's {:.1} % busy less iotoll's own and steal: every process's figure is scaled by {f:.3} so that the parts add up",
                rest, room
            ));
        }
    }
    everyone.sort_by(|a, b| b.cpu_pct.total_cmp(&a.cpu_pct).then(a.pid.cmp(&b.pid)));
    let sum = |keep: &dyn Fn(&TopConsumer) -> bool| sum_of(&everyone, keep);
    let is_other = |t: &TopConsumer| {
        !t.kernel_thread
            && !matches!(
                t.role.as_deref(),
                Some(ROLE_SELF | ROLE_ENDPOINT | ROLE_SUT)
            )
    };
    let mut a = iotoll_model::CpuAccount {
        self_pct,
        endpoint_pct: sum(&|t| is(t, ROLE_ENDPOINT)),
        agents_pct: 0.0,
        sut_pct: sum(&|t| is(t, ROLE_SUT)),
        others_pct: sum(&is_other),
        kernel_threads_pct: sum(&|t| t.kernel_thread && t.role.is_none()),
        kernel_other_pct: 0.0,
        steal_pct: steal,
    };
    // Only below zero when iotoll's own exact figure exceeds the host's
    // tick-sampled busy time (the window's note explains it).
    a.kernel_other_pct = (busy - a.total()).max(0.0);
    let mut interference = Interference {
        threshold_pct,
        others_pct: a.others_pct,
        steal_pct: steal,
        interfered: false,
        processes: everyone
            .iter()
            .filter(|t| is_other(t))
            .take(INTERFERENCE_N)
            .cloned()
            .collect(),
    };
    interference.set_threshold(threshold_pct);
    Some(Accounting {
        everyone,
        account: a,
        interference,
        notes,
    })
}

/// The CPU of the consumers `keep` selects, %.
fn sum_of(v: &[TopConsumer], keep: impl Fn(&TopConsumer) -> bool) -> f64 {
    // `+ 0.0`: an empty sum is -0.0, which JSON would show as such.
    v.iter().filter(|t| keep(t)).map(|t| t.cpu_pct).sum::<f64>() + 0.0
}

pub use iotoll_model::os::pid_alive;

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

    /// A table read late at the window's end counts ticks past it: no
    /// process, with the children it reaped, is shown above all CPUs.
    #[test]
    fn no_process_is_shown_above_all_cpus() {
        let start = snap(&[fam(5, 1, "sh", 0, 0, 0, 0, 9)]);
        let end = snap(&[fam(5, 1, "sh", 0, 100, 0, 900, 9)]);
        // 10 CPU-s in a window of 4 s x 2 CPUs at 100 ticks/s.
        let top = figures(&consumers(&start, &end), 4.0, 2, 100.0, &own(-1));
        assert_eq!(top.len(), 1);
        assert!((top[0].cpu_pct - 100.0).abs() < 1e-9, "{top:?}");
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
        let top = figures(&consumers(&start, &end), 4.0, 4, 100.0, &own(-1));
        assert_eq!(top.len(), 2);
        assert_eq!(top[0].comm, "busy");
        // 300 ticks = 3 CPU-s over 4 s x 4 CPUs = 18.75 %.
        assert!((top[0].cpu_pct - 18.75).abs() < 1e-9);
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

    /// A 1 s window on 1 CPU at 100 ticks/s: ticks are percent.
    fn host(busy_pct: f64, steal_pct: f64, self_pct: Option<f64>) -> CpuReport {
        let modes = iotoll_model::CpuModes {
            steal: steal_pct,
            ..Default::default()
        };
        CpuReport {
            window_s: 1.0,
            cpus: 1,
            busy_pct,
            modes,
            self_pct,
            ..Default::default()
        }
    }

    /// Roles with this pid as iotoll's own, none else.
    fn own(pid: i32) -> Roles {
        Roles {
            own_pid: pid,
            ..Roles::this_process()
        }
    }

    /// The account of a window that starts with no process and ends with
    /// `end`, at a 5 % interference threshold.
    fn account_of(end: &[String], host: CpuReport, roles: &Roles) -> Accounting {
        let all = consumers(&snap(&[]), &snap(end));
        account(&all, &host, 100.0, roles, 5.0).unwrap()
    }

    /// Agents and endpoints a renamed build started are named as it is.
    #[test]
    fn processes_named_as_this_one_are_iotoll() {
        let me = std::fs::read_to_string("/proc/self/comm").unwrap();
        let end = [
            line(800, me.trim(), 0, 2, 0, 1),
            line(900, "iotoll-x", 0, 2, 0, 1),
        ];
        let a = account_of(&end, host(10.0, 0.0, None), &own(-1));
        let role = |pid: i32| {
            a.everyone
                .iter()
                .find(|t| t.pid == pid)
                .map(|t| t.role.clone())
        };
        assert_eq!(role(800), Some(Some("iotoll".to_string())));
        assert_eq!(role(900), Some(None));
    }

    #[test]
    fn roles_and_interference() {
        let start = snap(&[]);
        let end = snap(&[
            line(100, "iotoll", 0, 50, 0, 1),
            line(200, "iotoll", 0, 30, 0, 1),
            line(300, "iotoll", 0, 20, 0, 1),
            line(400, "sh", 0, 15, 0, 1),
            line(500, "kworker/0:1", PF_KTHREAD, 10, 0, 1),
            line(600, "cron", 0, 1, 0, 1),
            line(700, "tgtd", 0, 4, 0, 1),
        ]);
        let roles = Roles {
            own_pid: 100,
            endpoint_pid: Some(200),
            sut: vec!["tgtd".parse().unwrap()],
        };
        let all = consumers(&start, &end);
        let a = account(&all, &host(140.0, 0.0, None), 100.0, &roles, 10.0).unwrap();
        let role = |pid: i32| {
            a.everyone
                .iter()
                .find(|t| t.pid == pid)
                .and_then(|t| t.role.clone())
        };
        assert_eq!(role(100).as_deref(), Some("self"));
        assert_eq!(role(200).as_deref(), Some("endpoint"));
        assert_eq!(role(300).as_deref(), Some("iotoll"));
        assert_eq!(role(700).as_deref(), Some("sut"));
        assert_eq!(role(400), None);
        let i = &a.interference;
        // Another iotoll (20) + sh (15) + cron (1); not self, the endpoint,
        // the system under test or the kernel thread.
        assert!((i.others_pct - 36.0).abs() < 1e-9, "{i:?}");
        assert!(i.interfered);
        let pids: Vec<i32> = i.processes.iter().map(|p| p.pid).collect();
        assert_eq!(pids, [300, 400, 600]);
        let c = &a.account;
        assert_eq!(
            (c.self_pct, c.endpoint_pct, c.sut_pct, c.others_pct),
            (50.0, 30.0, 4.0, 36.0)
        );
        assert_eq!(c.kernel_threads_pct, 10.0);
        // 140 busy - 130 in processes: kernel work no process was charged.
        assert!((c.kernel_other_pct - 10.0).abs() < 1e-9, "{c:?}");
        assert!((c.total() - 140.0).abs() < 1e-9);
        let none = account(
            &all,
            &host(140.0, 0.0, None),
            100.0,
            &Roles::this_process(),
            10.0,
        );
        let none = none.unwrap().account;
        assert!(none.endpoint_pct.is_sign_positive() && none.sut_pct.is_sign_positive());
        let a = account(&all, &host(140.0, 0.0, None), 100.0, &roles, 40.0).unwrap();
        assert!(!a.interference.interfered, "36 % is not above 40 %");
    }

    #[test]
    fn one_thread_uses_one_cpu_at_most() {
        // 180 ticks of one thread in a 1 s window: tick skew, or time from
        // before the window; 4 threads may use 4 CPU-seconds.
        let start = snap(&[]);
        let mut four = line(2, "four", 0, 300, 0, 1);
        four = four.replacen(" 20 0 1 0 ", " 20 0 4 0 ", 1);
        let end = snap(&[line(1, "one", 0, 180, 0, 1), four]);
        let v = figures(
            &consumers(&start, &end),
            1.0,
            4,
            100.0,
            &Roles::this_process(),
        );
        let get = |c: &str| v.iter().find(|t| t.comm == c).map(|t| t.cpu_pct);
        assert_eq!(get("one"), Some(25.0), "one of 4 CPUs");
        assert_eq!(get("four"), Some(75.0));
    }

    #[test]
    fn a_reapers_share_is_bounded_by_the_host() {
        // Seen: a subreaper charged 889.75 % with the host 22.07 % busy.
        let end = [fam(1057, 1, "reaper", 0, 0, 0, 8900, 1)];
        let a = account_of(&end, host(22.07, 0.0, Some(2.0)), &own(9));
        let reaper = &a.everyone[0];
        assert!((reaper.cpu_pct - 20.07).abs() < 1e-9, "{reaper:?}");
        assert!(a.interference.interfered);
        assert!((a.account.total() - 22.07).abs() < 1e-9);
        assert!(a.notes[0].starts_with(SCALED_NOTE), "{:?}", a.notes);
    }

    #[test]
    fn the_parts_add_up_and_each_process_has_one_figure() {
        // Seen: others 92.2 % beside the endpoint's 41.7 % and iotoll's
        // 7.2 %, the host 99.5 % busy; the processes named summed to more
        // than the others' figure; the top list and the notes disagreed.
        let end = [
            line(1, "hog", 0, 99, 0, 1),
            line(2, "iotoll", 0, 42, 0, 1),
            line(3, "iotoll", 0, 9, 0, 1),
        ];
        let roles = Roles {
            endpoint_pid: Some(2),
            sut: Vec::new(),
            ..own(3)
        };
        let a = account_of(&end, host(99.5, 0.0, Some(7.2)), &roles);
        let c = &a.account;
        assert_eq!(c.self_pct, 7.2, "iotoll's exact figure, once");
        assert!((c.total() - 99.5).abs() < 1e-9, "{c:?}");
        assert!(c.others_pct + c.endpoint_pct <= 99.5 - 7.2 + 1e-9);
        let named: f64 = a.interference.processes.iter().map(|p| p.cpu_pct).sum();
        assert!((named - a.interference.others_pct).abs() < 1e-9);
        let me = a.everyone.iter().find(|t| t.pid == 3).unwrap();
        assert_eq!(me.cpu_pct, 7.2);
    }

    #[test]
    fn steal_interferes_like_another_process() {
        // Seen: 14.4 % steal inflated a disk test's whole-host CPU from
        // about 13 % to 27.7 % with no process to blame.
        let end = [line(9, "iotoll", 0, 10, 0, 1)];
        let a = account_of(&end, host(27.7, 14.4, Some(10.3)), &own(9));
        let i = &a.interference;
        assert_eq!(i.steal_pct, 14.4);
        assert!(i.interfered);
        assert!(i.what().contains("14.4 % (steal"), "{}", i.what());
        assert!((a.account.total() - 27.7).abs() < 1e-9);
        let a = account_of(&end, host(13.0, 1.5, Some(10.3)), &own(9));
        assert!(!a.interference.interfered);
    }

    #[test]
    fn sut_processes_by_name_or_pid() {
        let parse = |s: &str| s.parse::<SutProcess>().ok();
        assert_eq!(parse(" 42 "), Some(SutProcess::Pid(42)));
        assert_eq!(parse("0"), None);
        assert_eq!(parse(""), None);
        assert_eq!(
            parse("a-very-long-daemon-name"),
            Some(SutProcess::Name("a-very-long-dae".into()))
        );
    }

    /// A lab host's processes are matched by their network namespace; the
    /// test's own agents there (iotoll) are not the system under test.
    #[test]
    fn the_system_under_test_by_network_namespace() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let here = SutProcess::netns(std::path::Path::new("/proc/self/ns/net")).unwrap();
        let SutProcess::NetNs(ino) = here else {
            panic!("{here:?}")
        };
        let c = |comm: &str| Consumer {
            pid: child.id() as i32,
            comm: comm.into(),
            kernel_thread: false,
            ticks: 1,
            own: 1,
            threads: 1,
        };
        let matched = (
            here.matches(&c("sleep")),
            SutProcess::NetNs(ino + 1).matches(&c("sleep")),
            here.matches(&c("iotoll")),
        );
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(matched, (true, false, false));
        assert_eq!(
            SutProcess::netns(std::path::Path::new("/run/netns/nonexistent-x")),
            None
        );
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
