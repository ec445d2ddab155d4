//! `/proc/stat` snapshots and the CPU math between two of them.

use crate::ProbeError;
use iotoll_model::{CpuCore, CpuModes, CpuReport};
use std::collections::BTreeMap;

/// Jiffy counters of one CPU (or the aggregate line), in /proc/stat order:
/// user, nice, system, idle, iowait, irq, softirq, steal. guest and
/// guest_nice are already included in user and nice by the kernel, so they
/// are not kept (counting them would count twice).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTimes(pub [u64; 8]);

impl CpuTimes {
    /// Field-wise `later - self`, see [`counter_delta`].
    pub fn delta_to(&self, later: &CpuTimes) -> CpuTimes {
        CpuTimes(std::array::from_fn(|i| {
            counter_delta(self.0[i], later.0[i])
        }))
    }

    fn add(&mut self, o: &CpuTimes) {
        *self = CpuTimes(std::array::from_fn(|i| self.0[i].wrapping_add(o.0[i])));
    }

    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// user+nice+system+irq+softirq+steal: iowait is idle (as Iometer and mpstat).
    pub fn busy(&self) -> u64 {
        let [user, nice, system, _idle, _iowait, irq, softirq, steal] = self.0;
        user + nice + system + irq + softirq + steal
    }
}

/// Difference of two readings of a monotonic counter. A counter that was
/// below 2^32 and now reads less has wrapped as a 32-bit value (older
/// kernels and 32-bit hosts); any other decrease is the kernel's known
/// non-monotonic iowait/idle accounting and counts as no time at all.
pub fn counter_delta(before: u64, after: u64) -> u64 {
    if after >= before {
        after - before
    } else if before <= u32::MAX as u64 {
        (u32::MAX as u64 - before) + after + 1
    } else {
        0
    }
}

/// One reading of /proc/stat.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StatSnapshot {
    /// The aggregate `cpu` line.
    pub all: CpuTimes,
    /// `cpuN` lines of the CPUs online at the time.
    pub per_cpu: BTreeMap<u32, CpuTimes>,
    pub intr: Option<u64>,
    pub ctxt: Option<u64>,
}

pub const PROC_STAT: &str = "/proc/stat";

impl StatSnapshot {
    pub fn read() -> Result<Self, ProbeError> {
        let text = std::fs::read_to_string(PROC_STAT).map_err(ProbeError::Read)?;
        Self::parse(&text)
    }

    pub fn parse(text: &str) -> Result<Self, ProbeError> {
        let bad = ProbeError::Format;
        let mut snap = StatSnapshot::default();
        let mut saw_all = false;
        for line in text.lines() {
            let mut it = line.split_ascii_whitespace();
            let Some(key) = it.next() else { continue };
            if let Some(id) = key.strip_prefix("cpu") {
                let mut f = [0u64; 8];
                for (i, slot) in f.iter_mut().enumerate() {
                    // Kernels before 2.6.11 lack steal; treat missing trailing fields as 0.
                    match it.next() {
                        Some(v) => {
                            *slot = v
                                .parse()
                                .map_err(|_| bad(format!("field {} of '{key}': '{v}'", i + 1)))?
                        }
                        None if i >= 4 => break,
                        None => return Err(bad(format!("'{key}' has too few fields"))),
                    }
                }
                let t = CpuTimes(f);
                if id.is_empty() {
                    snap.all = t;
                    saw_all = true;
                } else {
                    let n: u32 = id.parse().map_err(|_| bad(format!("line '{key}'")))?;
                    snap.per_cpu.insert(n, t);
                }
            } else if key == "intr" {
                snap.intr = it.next().and_then(|v| v.parse().ok());
            } else if key == "ctxt" {
                snap.ctxt = it.next().and_then(|v| v.parse().ok());
            }
        }
        if !saw_all {
            return Err(bad("no aggregate 'cpu' line".into()));
        }
        Ok(snap)
    }
}

fn modes_pct(d: &CpuTimes, total: u64) -> CpuModes {
    let [user, nice, system, idle, iowait, irq, softirq, steal] =
        d.0.map(|v| v as f64 * 100.0 / total as f64);
    CpuModes {
        user,
        nice,
        system,
        irq,
        softirq,
        iowait,
        steal,
        idle,
    }
}

/// The whole-host CPU report between two snapshots taken `window_s` apart,
/// of the CPUs `only` (a lab host's own CPUs) from their per-CPU lines;
/// `None`: every CPU.
///
/// Host totals are the sum over CPUs present in both snapshots, not the
/// aggregate line: a CPU that goes offline takes its counters out of the
/// aggregate, which would make it run backwards.
pub fn cpu_report(
    start: &StatSnapshot,
    end: &StatSnapshot,
    window_s: f64,
    only: Option<&[u32]>,
) -> Result<CpuReport, ProbeError> {
    let mut notes = Vec::new();
    let mut host = CpuTimes::default();
    let mut per_core = Vec::new();
    let common: Vec<u32> = start
        .per_cpu
        .keys()
        .filter(|k| end.per_cpu.contains_key(k))
        .filter(|k| only.is_none_or(|o| o.contains(k)))
        .copied()
        .collect();
    if common.is_empty() && only.is_some() {
        return Err(ProbeError::EmptyWindow);
    }
    if common.is_empty() {
        host = start.all.delta_to(&end.all);
    } else {
        for cpu in &common {
            let d = start.per_cpu[cpu].delta_to(&end.per_cpu[cpu]);
            host.add(&d);
            let total = d.total();
            if total > 0 {
                per_core.push(CpuCore {
                    cpu: *cpu,
                    busy_pct: d.busy() as f64 * 100.0 / total as f64,
                    modes: modes_pct(&d, total),
                });
            }
        }
        let only_in = |a: &StatSnapshot, b: &StatSnapshot| -> Vec<String> {
            let keys = a.per_cpu.keys().filter(|k| !b.per_cpu.contains_key(k));
            keys.map(|k| k.to_string()).collect()
        };
        let (gone, came) = (only_in(start, end), only_in(end, start));
        if !gone.is_empty() || !came.is_empty() {
            notes.push(format!(
                "CPU set changed during the window (offline: [{}], online: [{}]); percentages are of the {} CPUs present throughout",
                gone.join(","),
                came.join(","),
                common.len()
            ));
        }
    }
    let total = host.total();
    if total == 0 {
        return Err(ProbeError::EmptyWindow);
    }
    let rate = |a: Option<u64>, b: Option<u64>| match (a, b) {
        (Some(a), Some(b)) if window_s > 0.0 => Some(counter_delta(a, b) as f64 / window_s),
        _ => None,
    };
    Ok(CpuReport {
        cpus: if common.is_empty() {
            end.per_cpu.len().max(1) as u32
        } else {
            common.len() as u32
        },
        window_s,
        busy_pct: host.busy() as f64 * 100.0 / total as f64,
        modes: modes_pct(&host, total),
        per_core,
        interrupts_s: rate(start.intr, end.intr),
        ctx_switches_s: rate(start.ctxt, end.ctxt),
        notes,
        ..CpuReport::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "cpu  1000 10 500 8000 100 20 30 0 0 0
cpu0 500 5 250 4000 50 10 15 0 0 0
cpu1 500 5 250 4000 50 10 15 0 0 0
intr 100000 1 2 3
ctxt 50000
btime 1700000000
processes 1234
";
    const B: &str = "cpu  1300 10 700 8800 200 30 60 0 0 0
cpu0 700 5 350 4200 100 15 30 0 0 0
cpu1 600 5 350 4600 100 15 30 0 0 0
intr 120000 1 2 3
ctxt 60000
";

    #[test]
    fn parses_and_computes_modes() {
        let a = StatSnapshot::parse(A).unwrap();
        let b = StatSnapshot::parse(B).unwrap();
        assert_eq!(a.per_cpu.len(), 2);
        assert_eq!(a.intr, Some(100000));
        let r = cpu_report(&a, &b, 2.0, None).unwrap();
        // deltas: user 300, system 200, idle 800, iowait 100, irq 10, softirq 30 -> total 1440
        let total = 1440.0;
        assert_eq!(r.cpus, 2);
        assert!((r.busy_pct - 540.0 * 100.0 / total).abs() < 1e-9);
        assert!((r.modes.iowait - 100.0 * 100.0 / total).abs() < 1e-9);
        assert!((r.modes.softirq - 30.0 * 100.0 / total).abs() < 1e-9);
        let sum: f64 = r.modes.list().iter().map(|(_, v)| v).sum();
        assert!((sum - 100.0).abs() < 1e-9);
        assert_eq!(r.interrupts_s, Some(10000.0));
        assert_eq!(r.ctx_switches_s, Some(5000.0));
        // cpu0: busy 200+100+5+15=320 of 320+200+50=570
        let c0 = &r.per_core[0];
        assert!((c0.busy_pct - 320.0 * 100.0 / 570.0).abs() < 1e-9);
        assert!(r.notes.is_empty());
    }

    #[test]
    fn iowait_counts_as_idle() {
        let a = StatSnapshot::parse("cpu 0 0 0 0 0 0 0 0\ncpu0 0 0 0 0 0 0 0 0\n").unwrap();
        let b = StatSnapshot::parse("cpu 0 0 0 50 50 0 0 0\ncpu0 0 0 0 50 50 0 0 0\n").unwrap();
        let r = cpu_report(&a, &b, 1.0, None).unwrap();
        assert_eq!(r.busy_pct, 0.0);
        assert_eq!(r.modes.iowait, 50.0);
    }

    #[test]
    fn counter_wrap_32_bit() {
        assert_eq!(counter_delta(u32::MAX as u64 - 9, 10), 20);
        assert_eq!(counter_delta(5, 15), 10);
        // A 64-bit counter going backwards (iowait accounting) counts as zero.
        assert_eq!(counter_delta(1 << 40, (1 << 40) - 3), 0);
        let w = u32::MAX - 99;
        let a = StatSnapshot::parse(&format!(
            "cpu0 {w} 0 0 {w} 0 0 0 0\ncpu {w} 0 0 {w} 0 0 0 0\nctxt {}\n",
            u32::MAX - 4
        ))
        .unwrap();
        let b = StatSnapshot::parse("cpu0 100 0 0 300 0 0 0 0\ncpu 100 0 0 300 0 0 0 0\nctxt 5\n")
            .unwrap();
        let r = cpu_report(&a, &b, 1.0, None).unwrap();
        // user +200, idle +400
        assert!((r.busy_pct - 200.0 / 6.0).abs() < 1e-9);
        assert_eq!(r.ctx_switches_s, Some(10.0));
    }

    #[test]
    fn cpu_going_offline_between_snapshots() {
        let a = StatSnapshot::parse(A).unwrap();
        // cpu1 went offline: the aggregate line lost its counters and runs backwards.
        let b = StatSnapshot::parse(
            "cpu  700 5 350 4200 100 15 30 0 0 0\ncpu0 700 5 350 4200 100 15 30 0 0 0\n",
        )
        .unwrap();
        let r = cpu_report(&a, &b, 1.0, None).unwrap();
        assert_eq!(r.cpus, 1);
        assert_eq!(r.per_core.len(), 1);
        assert!((r.busy_pct - 320.0 * 100.0 / 570.0).abs() < 1e-9);
        assert!(r.notes[0].contains("offline: [1]"), "{:?}", r.notes);
        assert_eq!(r.interrupts_s, None);
    }

    #[test]
    fn own_cpus_from_their_lines_only() {
        let (a, b) = (
            StatSnapshot::parse(A).unwrap(),
            StatSnapshot::parse(B).unwrap(),
        );
        let all = cpu_report(&a, &b, 2.0, None).unwrap();
        let c0 = cpu_report(&a, &b, 2.0, Some(&[0])).unwrap();
        let c1 = cpu_report(&a, &b, 2.0, Some(&[1])).unwrap();
        assert_eq!((c0.cpus, c1.cpus), (1, 1));
        // cpu0: busy 200+100+5+15=320 of 570; cpu1: 100+100+5+15=220 of 870.
        assert!((c0.busy_pct - 320.0 * 100.0 / 570.0).abs() < 1e-9);
        assert!((c1.busy_pct - 220.0 * 100.0 / 870.0).abs() < 1e-9);
        assert_eq!(c0.per_core.len(), 1);
        // The two halves, weighted by their ticks, are the whole.
        let whole = (c0.busy_pct * 570.0 + c1.busy_pct * 870.0) / 1440.0;
        assert!((whole - all.busy_pct).abs() < 1e-9);
        assert!(cpu_report(&a, &b, 2.0, Some(&[7])).is_err());
    }

    #[test]
    fn empty_window_is_an_error_not_zero() {
        let a = StatSnapshot::parse(A).unwrap();
        assert!(matches!(
            cpu_report(&a, &a, 0.001, None),
            Err(ProbeError::EmptyWindow)
        ));
    }

    #[test]
    fn bad_input_is_an_error() {
        assert!(StatSnapshot::parse("intr 5\n").is_err());
        assert!(StatSnapshot::parse("cpu x 1 2 3\n").is_err());
        assert!(StatSnapshot::parse("cpu 1 2\n").is_err());
        // Old kernels without steal: accepted.
        assert!(StatSnapshot::parse("cpu 1 2 3 4 5 6 7\n").is_ok());
    }

    #[test]
    fn reads_this_host() {
        let s = StatSnapshot::read().unwrap();
        assert!(!s.per_cpu.is_empty());
        assert!(s.all.total() > 0);
    }
}
