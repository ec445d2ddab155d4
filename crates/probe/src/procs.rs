//! Per-process CPU from `/proc/*/stat`: the top consumers of a window. This
//! is what shows where a software initiator, io_uring workers or a softirq
//! storm (ksoftirqd) spend the host's CPU.

use iotoll_model::TopConsumer;
use std::collections::HashMap;

const PF_KTHREAD: u64 = 0x0020_0000;

#[derive(Debug, Clone, PartialEq)]
pub struct ProcTimes {
    pub comm: String,
    /// utime + stime, all threads, in clock ticks.
    pub ticks: u64,
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
    let field = |n: usize| rest.get(n - 3).and_then(|v| v.parse::<u64>().ok());
    let flags = field(9)?;
    let ticks = field(14)? + field(15)?;
    let start = field(22)?;
    Some((
        pid,
        start,
        ProcTimes {
            comm,
            ticks,
            kernel_thread: flags & PF_KTHREAD != 0,
        },
    ))
}

/// Reads every process. Processes that exit while we read are skipped.
pub fn snapshot() -> ProcSnapshot {
    let mut out = HashMap::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    let mut path = String::with_capacity(32);
    for entry in dir.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        path.clear();
        path.push_str("/proc/");
        path.push_str(name);
        path.push_str("/stat");
        if let Ok(line) = std::fs::read_to_string(&path) {
            if let Some((pid, start, t)) = parse_proc_stat(&line) {
                out.insert((pid, start), t);
            }
        }
    }
    out
}

/// The `n` processes with the most CPU between two snapshots, as % of all
/// CPUs over `window_s`. A process born during the window counts in full.
pub fn top_consumers(
    start: &ProcSnapshot,
    end: &ProcSnapshot,
    window_s: f64,
    cpus: u32,
    clk_tck: f64,
    n: usize,
) -> Vec<TopConsumer> {
    if window_s <= 0.0 || cpus == 0 || clk_tck <= 0.0 {
        return Vec::new();
    }
    let mut v: Vec<(u64, TopConsumer)> = end
        .iter()
        .filter_map(|(key, e)| {
            let before = start.get(key).map_or(0, |s| s.ticks);
            let d = e.ticks.saturating_sub(before);
            (d > 0).then(|| {
                (
                    d,
                    TopConsumer {
                        pid: key.0,
                        comm: e.comm.clone(),
                        kernel_thread: e.kernel_thread,
                        cpu_pct: d as f64 / clk_tck / (window_s * cpus as f64) * 100.0,
                    },
                )
            })
        })
        .collect();
    v.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.pid.cmp(&b.1.pid)));
    v.into_iter().take(n).map(|(_, t)| t).collect()
}

/// Clock ticks per second for /proc/*/stat times.
pub fn clk_tck() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let v = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if v > 0 {
        v as f64
    } else {
        100.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(pid: i32, comm: &str, flags: u64, utime: u64, stime: u64, start: u64) -> String {
        format!(
            "{pid} ({comm}) S 1 1 1 0 -1 {flags} 0 0 0 0 {utime} {stime} 0 0 20 0 1 0 {start} 0 0"
        )
    }

    #[test]
    fn parses_awkward_names() {
        let l = line(42, "a (b) c", PF_KTHREAD | 0x40, 7, 3, 999);
        let (pid, start, t) = parse_proc_stat(&l).unwrap();
        assert_eq!((pid, start), (42, 999));
        assert_eq!(t.comm, "a (b) c");
        assert_eq!(t.ticks, 10);
        assert!(t.kernel_thread);
        assert!(parse_proc_stat("garbage").is_none());
    }

    #[test]
    fn ranks_by_delta_and_handles_pid_reuse() {
        let parse = |l: String| {
            let (p, s, t) = parse_proc_stat(&l).unwrap();
            ((p, s), t)
        };
        let start: ProcSnapshot = [
            parse(line(1, "busy", 0, 100, 0, 1)),
            parse(line(2, "idle", 0, 50, 0, 1)),
            parse(line(3, "old", 0, 500, 0, 1)),
        ]
        .into_iter()
        .collect();
        let end: ProcSnapshot = [
            parse(line(1, "busy", 0, 300, 100, 1)),
            parse(line(2, "idle", 0, 50, 0, 1)),
            // pid 3 recycled by a new process: its 20 ticks are all in the window.
            parse(line(3, "new", PF_KTHREAD, 20, 0, 77)),
        ]
        .into_iter()
        .collect();
        let top = top_consumers(&start, &end, 2.0, 2, 100.0, 5);
        assert_eq!(top.len(), 2);
        assert_eq!(top[0].comm, "busy");
        // 300 ticks = 3 CPU-s over 2 s x 2 CPUs = 75 %.
        assert!((top[0].cpu_pct - 75.0).abs() < 1e-9);
        assert_eq!(top[1].comm, "new");
        assert!(top[1].kernel_thread);
    }

    #[test]
    fn reads_this_host() {
        let s = snapshot();
        let me = std::process::id() as i32;
        assert!(s.keys().any(|(pid, _)| *pid == me));
    }
}
