//! The CPU parts of a result: whole-host CPU over a window, its modes,
//! cores and top consumers, and where its busy time went.

use super::{finite, finite_opt, Interference};
use crate::metrics::{self as mn, Metrics};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct CpuSection {
    /// Absent when the window was too short to measure (under one clock tick).
    pub local: Option<CpuReport>,
    pub remote: Option<CpuReport>,
    /// Whether the peer runs on this very kernel (its boot id,
    /// `/proc/sys/kernel/random/boot_id`, equals ours): `Some(true)` for
    /// loopback, another network namespace or a container of this host.
    /// None when there is no peer or it did not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "bool")]
    pub same_host: Option<bool>,
}

impl CpuSection {
    /// Whether the peer's CPU is not this host's: another kernel, or lab
    /// hosts of one machine measured each on CPUs of its own that do not
    /// overlap. Then its figures are its own (the `remote_*` metrics, its
    /// interference); otherwise they would count this host's CPU twice.
    pub fn remote_separate(&self) -> bool {
        self.same_host != Some(true) || separate_cpus(self.local.as_ref(), self.remote.as_ref())
    }
}

/// Whether two windows were measured on lab hosts' own CPUs, and those
/// do not overlap.
pub fn separate_cpus(a: Option<&CpuReport>, b: Option<&CpuReport>) -> bool {
    let own = |r: Option<&CpuReport>| r.and_then(|r| r.own_cpus.clone());
    own(a)
        .zip(own(b))
        .is_some_and(|(x, y)| !x.iter().any(|c| y.contains(c)))
}

/// Whole-host CPU over one measurement window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct CpuReport {
    /// CPUs present at both ends of the window (the denominator of every %).
    #[schemars(range(min = 1))]
    pub cpus: u32,
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub window_s: f64,
    /// Busy % of all CPUs: user+nice+system+irq+softirq+steal.
    #[schemars(schema_with = "crate::schema::pct")]
    pub busy_pct: f64,
    pub modes: CpuModes,
    pub per_core: Vec<CpuCore>,
    /// iotoll's own process, all threads, % of all CPUs.
    pub self_pct: Option<f64>,
    /// Processes and kernel threads that used the most CPU in the window.
    #[schemars(length(max = 5))]
    pub top: Vec<TopConsumer>,
    pub interrupts_s: Option<f64>,
    pub ctx_switches_s: Option<f64>,
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub nominal_mhz: Option<f64>,
    /// Where `nominal_mhz` was read from.
    pub nominal_mhz_source: Option<String>,
    pub notes: Vec<String>,
    /// CPU used in the window by processes other than iotoll and its
    /// endpoint (docs/json.md says what counts). Absent in documents made
    /// before iotoll measured it.
    #[serde(default)]
    pub interference: Option<Interference>,
    /// Where the busy CPU of the window went: every part measured between
    /// the same two edges, adding up to `busy_pct` (docs/json.md). Absent
    /// in documents made before iotoll split it, and for several machines
    /// taken together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<CpuAccount>,
    /// The lab host's own CPUs (docs/lab.md), when it has them: `cpus`,
    /// `busy_pct`, `modes` and `per_core` are then of these CPUs only.
    /// Absent: every CPU of the machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub own_cpus: Option<Vec<u32>>,
    /// The whole machine over the same window, beside a host's own CPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<MachineCpu>,
}

/// Every CPU of the machine over a window measured on a host's own CPUs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct MachineCpu {
    #[schemars(range(min = 1))]
    pub cpus: u32,
    #[schemars(schema_with = "crate::schema::pct")]
    pub busy_pct: f64,
    pub modes: CpuModes,
}

/// The window's busy CPU split by who used it, each % of all CPUs. The
/// parts add up to the host's busy figure (within rounding), except when
/// the host's tick-sampled counters read below iotoll's own exactly
/// measured CPU (a note says so).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct CpuAccount {
    /// This iotoll process, all threads (`self_pct`).
    pub self_pct: f64,
    /// This test's iotoll endpoint when it runs on this host.
    pub endpoint_pct: f64,
    /// This test's other agents on this machine (a lab's hosts share one
    /// kernel, so each host's window sees the others' agents): the test's
    /// own work, not interference.
    #[serde(default)]
    pub agents_pct: f64,
    /// The processes of the system under test (`--sut-process`, or those
    /// in a lab host's namespace): the work being measured, not interference.
    #[serde(default)]
    pub sut_pct: f64,
    /// Every other user-space process (another iotoll too): interference.
    pub others_pct: f64,
    /// Kernel threads (kworker, ksoftirqd, ...).
    pub kernel_threads_pct: f64,
    /// Kernel work no process was charged with: interrupts and softirqs
    /// that arrived while a CPU was idle, and the tick-sampling remainder.
    pub kernel_other_pct: f64,
    /// Time the hypervisor gave these CPUs to other guests.
    pub steal_pct: f64,
}

impl CpuAccount {
    /// The sum of the parts: the host's busy figure.
    pub fn total(&self) -> f64 {
        self.self_pct
            + self.endpoint_pct
            + self.agents_pct
            + self.sut_pct
            + self.others_pct
            + self.kernel_threads_pct
            + self.kernel_other_pct
            + self.steal_pct
    }
}

/// Each mode as % of all CPUs over the window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields, transform = crate::schema::pct_properties)]
pub struct CpuModes {
    pub user: f64,
    pub nice: f64,
    pub system: f64,
    pub irq: f64,
    pub softirq: f64,
    pub iowait: f64,
    pub steal: f64,
    pub idle: f64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct CpuCore {
    pub cpu: u32,
    #[schemars(schema_with = "crate::schema::pct")]
    pub busy_pct: f64,
    pub modes: CpuModes,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct TopConsumer {
    pub pid: i32,
    pub comm: String,
    pub kernel_thread: bool,
    /// Share of all CPUs over the window (with the children it reaped in
    /// the window).
    pub cpu_pct: f64,
    /// `self` (this iotoll process), `endpoint` (the iotoll endpoint of this
    /// test, on this host), `iotoll` (another iotoll process), `sut` (a
    /// process of the system under test); absent for anything else.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = [ROLE_SELF, ROLE_ENDPOINT, ROLE_IOTOLL, ROLE_SUT]))]
    pub role: Option<String>,
}

/// Values of [`TopConsumer::role`].
pub const ROLE_SELF: &str = "self";
pub const ROLE_ENDPOINT: &str = "endpoint";
pub const ROLE_IOTOLL: &str = "iotoll";
/// A process of the system under test (`--sut-process`, a lab host's).
pub const ROLE_SUT: &str = "sut";

impl CpuReport {
    /// Several machines' windows as one: every percentage weighted by each
    /// machine's CPU count (a 32-core server at 10 % outweighs a 2-core
    /// client at 90 %), never a plain average; rates and CPU counts add.
    /// The caller passes each machine once (hosts sharing a kernel share
    /// its CPU). Per-core figures and top consumers stay with each host.
    pub fn weighted(reports: &[&CpuReport]) -> Option<CpuReport> {
        let total: f64 = reports.iter().map(|r| r.cpus as f64).sum();
        if reports.is_empty() || total <= 0.0 {
            return None;
        }
        let w = |f: &dyn Fn(&CpuReport) -> f64| -> f64 {
            reports.iter().map(|r| f(r) * r.cpus as f64).sum::<f64>() / total
        };
        let sum_opt = |f: &dyn Fn(&CpuReport) -> Option<f64>| -> Option<f64> {
            reports.iter().map(|r| f(r)).sum()
        };
        let all = |f: &dyn Fn(&CpuReport) -> Option<f64>| -> Option<f64> {
            let each = reports.iter().map(|r| Some(f(r)? * r.cpus as f64));
            each.sum::<Option<f64>>().map(|v| v / total)
        };
        let mhz = reports[0].nominal_mhz;
        let same_mhz = reports[1..].iter().all(|r| r.nominal_mhz == mhz);
        Some(CpuReport {
            cpus: reports.iter().map(|r| r.cpus).sum(),
            window_s: reports.iter().map(|r| r.window_s).fold(0.0, f64::max),
            busy_pct: w(&|r| r.busy_pct),
            modes: CpuModes {
                user: w(&|r| r.modes.user),
                nice: w(&|r| r.modes.nice),
                system: w(&|r| r.modes.system),
                irq: w(&|r| r.modes.irq),
                softirq: w(&|r| r.modes.softirq),
                iowait: w(&|r| r.modes.iowait),
                steal: w(&|r| r.modes.steal),
                idle: w(&|r| r.modes.idle),
            },
            self_pct: all(&|r| r.self_pct),
            interrupts_s: sum_opt(&|r| r.interrupts_s),
            ctx_switches_s: sum_opt(&|r| r.ctx_switches_s),
            nominal_mhz: mhz.filter(|_| same_mhz),
            notes: vec![format!(
                "{} machine(s), percentages weighted by CPU count",
                reports.len()
            )],
            ..CpuReport::default()
        })
    }

    /// Writes the canonical CPU metrics of this window into `m`, with
    /// `prefix` (`""` local, `"remote_"` for the peer).
    pub fn write_metrics(&self, m: &mut Metrics, prefix: &str) {
        let mut put = |k: &str, v: Option<f64>| {
            if let Some(v) = v {
                m.insert(format!("{prefix}{k}"), v);
            }
        };
        put(mn::CPU_PCT, Some(self.busy_pct));
        put(mn::CPU_USER_PCT, Some(self.modes.user + self.modes.nice));
        put(mn::CPU_SYSTEM_PCT, Some(self.modes.system));
        put(mn::CPU_IRQ_PCT, Some(self.modes.irq));
        put(mn::CPU_SOFTIRQ_PCT, Some(self.modes.softirq));
        put(mn::CPU_IOWAIT_PCT, Some(self.modes.iowait));
        put(mn::CPU_STEAL_PCT, Some(self.modes.steal));
        put(mn::CPU_SELF_PCT, self.self_pct);
        put(mn::INTERRUPTS_S, self.interrupts_s);
        put(mn::CTX_SWITCHES_S, self.ctx_switches_s);
        put(mn::CPUS, Some(self.cpus as f64));
        put(mn::CPU_NOMINAL_MHZ, self.nominal_mhz);
        put(
            mn::CPU_OTHERS_PCT,
            self.interference.as_ref().map(|i| i.others_pct),
        );
        let sut = self
            .account
            .as_ref()
            .map(|a| a.sut_pct)
            .filter(|v| *v > 0.0);
        put(mn::CPU_SUT_PCT, sut);
        put(
            mn::CPU_INITIATOR_PCT,
            sut.map(|s| (self.busy_pct - s).max(0.0)),
        );
    }
}

impl CpuModes {
    /// Each mode by its name, in the document's order.
    pub fn list(&self) -> [(&'static str, f64); 8] {
        [
            ("user", self.user),
            ("nice", self.nice),
            ("system", self.system),
            ("irq", self.irq),
            ("softirq", self.softirq),
            ("iowait", self.iowait),
            ("steal", self.steal),
            ("idle", self.idle),
        ]
    }

    fn is_finite(&self) -> bool {
        self.list().iter().all(|(_, v)| v.is_finite())
    }
}

impl CpuReport {
    /// Whether every figure of the window is a finite number.
    pub fn is_finite(&self) -> bool {
        finite(&[self.window_s, self.busy_pct])
            && self.modes.is_finite()
            && (self.per_core.iter()).all(|c| c.busy_pct.is_finite() && c.modes.is_finite())
            && finite_opt(&[
                self.self_pct,
                self.interrupts_s,
                self.ctx_switches_s,
                self.nominal_mhz,
            ])
            && self.top.iter().all(|t| t.cpu_pct.is_finite())
            && self.interference.as_ref().is_none_or(|i| {
                finite(&[i.threshold_pct, i.others_pct, i.steal_pct])
                    && i.processes.iter().all(|t| t.cpu_pct.is_finite())
            })
            && (self.machine.as_ref()).is_none_or(|m| m.busy_pct.is_finite() && m.modes.is_finite())
    }
}
