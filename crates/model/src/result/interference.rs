//! Other tenants' CPU over a window and the verdict on it: for one host,
//! its peer, and a multi-host test's machines each judged once (a lab
//! host with CPUs of its own on those CPUs).

use super::{CpuReport, ResultDoc, TopConsumer, ROLE_SELF};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Other tenants' CPU over the window: what whole-host figures include
/// that the measured I/O did not cause.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Interference {
    /// `interfered` is `others_pct + steal_pct > threshold_pct`.
    #[schemars(schema_with = "crate::schema::pct")]
    pub threshold_pct: f64,
    /// User-space processes other than this iotoll and its endpoint
    /// (kernel threads excluded), % of all CPUs.
    pub others_pct: f64,
    /// Steal: time the hypervisor gave these CPUs to other guests, % of
    /// all CPUs. Whole-host CPU counts it as busy, so it interferes just
    /// as another process does.
    #[serde(default)]
    pub steal_pct: f64,
    pub interfered: bool,
    /// The largest of those processes, most CPU first (at most 5).
    #[schemars(length(max = 5))]
    pub processes: Vec<TopConsumer>,
}

/// Default `threshold_pct`: other processes above 5 % of the host's CPU
/// interfere with a CPU-efficiency measurement.
pub const DEFAULT_INTERFERENCE_PCT: f64 = 5.0;

/// Every note iotoll writes about interference begins with this.
pub const INTERFERENCE_NOTE: &str = "interference:";

impl Interference {
    /// Re-judges against `threshold_pct`.
    pub fn set_threshold(&mut self, threshold_pct: f64) {
        self.threshold_pct = threshold_pct;
        self.interfered = self.others_pct + self.steal_pct > threshold_pct;
    }

    /// What interfered, for a note: "other processes used 7.2 %" and/or
    /// "the hypervisor took 14.4 % (steal)".
    pub fn what(&self) -> String {
        let mut parts = Vec::new();
        if self.others_pct > 0.0 || self.steal_pct <= 0.0 {
            parts.push(format!("other processes used {:.1} %", self.others_pct));
        }
        if self.steal_pct > 0.0 {
            parts.push(format!(
                "the hypervisor took {:.1} % (steal: other guests ran on these CPUs)",
                self.steal_pct
            ));
        }
        parts.join(" and ")
    }

    /// The `interference:` note on `whose` CPU, as last judged, naming
    /// the processes: "interference: other processes used 7.2 % of this
    /// host's CPU in the window (threshold 5 %), and whole-host CPU counts
    /// it: sh (pid 4242) 48.1 %, rustc (pid 77) 3.0 %".
    fn note(&self, whose: &str, counted: bool) -> String {
        let counts = if counted {
            ", and whole-host CPU counts it"
        } else {
            ""
        };
        let named: Vec<String> = (self.processes.iter())
            .map(|p| format!("{} (pid {}) {:.1} %", p.comm, p.pid, p.cpu_pct))
            .collect();
        let named = if named.is_empty() {
            String::new()
        } else {
            format!(": {}", named.join(", "))
        };
        format!(
            "{INTERFERENCE_NOTE} {} of {whose} in the window (threshold {} %){counts}{named}",
            self.what(),
            self.threshold_pct
        )
    }
}

/// Whether a window was interfered with (as last judged).
fn window_interfered(c: &Option<CpuReport>) -> bool {
    (c.as_ref().and_then(|c| c.interference.as_ref())).is_some_and(|i| i.interfered)
}

impl ResultDoc {
    /// Re-judges this document's interference against `threshold_pct`
    /// (local CPU, and the peer's when it is another host) and rewrites
    /// its `interference:` note. Returns whether it is interfered.
    pub fn apply_interference_threshold(&mut self, threshold_pct: f64) -> bool {
        self.notes.retain(|n| !n.starts_with(INTERFERENCE_NOTE));
        // The peer's window is this host's when it runs on this kernel,
        // unless each is a lab host's on CPUs of its own.
        let judge_remote = self.cpu.remote_separate();
        let mut found = Vec::new();
        let sides = [
            (&mut self.cpu.local, "this host's CPU", true, true),
            (
                &mut self.cpu.remote,
                "the endpoint host's CPU",
                false,
                judge_remote,
            ),
        ];
        for (cpu, whose, counted, judged) in sides {
            if let Some(i) = cpu.as_mut().and_then(|c| c.interference.as_mut()) {
                i.set_threshold(threshold_pct);
                if i.interfered && judged {
                    found.push(i.note(whose, counted));
                }
            }
        }
        found.extend(self.judge_hosts(threshold_pct));
        let interfered = !found.is_empty();
        self.notes.extend(found);
        interfered
    }

    /// A multi-host test's interference, judged once per machine (hosts
    /// that share a kernel boot id, a lab's, are one machine; lab hosts
    /// with CPUs of their own are each judged on theirs): the first
    /// host's window, less what the test's other agents on that machine
    /// used (each agent sees the others as another iotoll), is every one
    /// of its hosts' verdict. Returns a note for each interfered machine.
    fn judge_hosts(&mut self, threshold_pct: f64) -> Vec<String> {
        let mut notes = Vec::new();
        let mut done: Vec<usize> = Vec::new();
        for i in 0..self.hosts.len() {
            if done.contains(&i) {
                continue;
            }
            let boot = self.hosts[i].boot_id.clone();
            let cpus = |j: usize| (self.hosts[j].cpu.as_ref()).and_then(|c| c.own_cpus.clone());
            let same: Vec<usize> = (i..self.hosts.len())
                .filter(|&j| {
                    j == i
                        || (boot.is_some() && self.hosts[j].boot_id == boot && cpus(j) == cpus(i))
                })
                .collect();
            done.extend(&same);
            let Some(cpu) = self.hosts[i].cpu.as_ref() else {
                continue;
            };
            let Some(mut verdict) = cpu.interference.clone() else {
                continue;
            };
            // The test's own agents: their exact CPU, and their pids when seen.
            let agents = same
                .iter()
                .skip(1)
                .filter_map(|&j| self.hosts[j].cpu.as_ref());
            let agents_pct: f64 = agents.clone().filter_map(|c| c.self_pct).sum();
            let agent_pids: Vec<i32> = (agents.flat_map(|c| &c.top))
                .filter(|t| t.role.as_deref() == Some(ROLE_SELF))
                .map(|t| t.pid)
                .collect();
            if let Some(a) = &cpu.account {
                verdict.others_pct = (a.others_pct - agents_pct).max(0.0);
            }
            verdict.processes.retain(|p| !agent_pids.contains(&p.pid));
            verdict.set_threshold(threshold_pct);
            if verdict.interfered {
                let names: Vec<&str> = same.iter().map(|&j| self.hosts[j].name.as_str()).collect();
                let whose = match names.len() {
                    1 => format!("host {}'s CPU", names[0]),
                    _ => format!(
                        "the CPU of hosts {} (one machine: one kernel)",
                        names.join(", ")
                    ),
                };
                notes.push(verdict.note(&whose, true));
            }
            let all_agents: f64 = (same.iter())
                .map(|&j| (self.hosts[j].cpu.as_ref()).and_then(|c| c.self_pct))
                .map(|own| own.unwrap_or(0.0))
                .sum();
            for &j in &same {
                let h = &mut self.hosts[j];
                if let Some(c) = h.cpu.as_mut() {
                    c.interference = Some(verdict.clone());
                    // Each host's account moves the other agents out of
                    // "others" once (judging again must not move them twice),
                    // and the host's metric says what the account says.
                    if let Some(a) = c.account.as_mut().filter(|a| a.agents_pct == 0.0) {
                        let own = c.self_pct.unwrap_or(0.0);
                        let agents = (all_agents - own).clamp(0.0, a.others_pct);
                        a.agents_pct = agents;
                        a.others_pct -= agents;
                        if let Some(m) = h.metrics.get_mut(crate::metrics::CPU_OTHERS_PCT) {
                            *m = a.others_pct;
                        }
                    }
                }
            }
        }
        notes
    }

    /// The hosts of a multi-host test whose machine was interfered with.
    pub fn interfered_hosts(&self) -> Vec<&str> {
        let hosts = self.hosts.iter().filter(|h| window_interfered(&h.cpu));
        hosts.map(|h| h.name.as_str()).collect()
    }

    /// Whether this repetition is interfered (as last judged).
    pub fn interfered(&self) -> bool {
        window_interfered(&self.cpu.local)
            || (self.cpu.remote_separate() && window_interfered(&self.cpu.remote))
            || !self.interfered_hosts().is_empty()
    }
}
