//! The result document every `--json` prints (docs/json.md); its JSON
//! Schema, `docs/result.schema.json`, is generated from these types
//! ([`crate::schema`]).

use crate::metrics::{self as mn, Metrics};
use crate::{Kind, ResultStatus};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What `iotoll disk run --json`, `iotoll net stream --json` and `iotoll net rr --json` print on stdout. See docs/json.md.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[schemars(title = "iotoll result document", deny_unknown_fields)]
pub struct ResultDoc {
    #[schemars(regex(pattern = r"^[0-9]+\.[0-9]+\.[0-9]+"))]
    pub iotoll_version: String,
    pub kind: Kind,
    /// `interrupted` when the window was cut short (Ctrl-C).
    pub status: ResultStatus,
    /// Start of the measurement window, RFC 3339 UTC.
    #[schemars(regex(pattern = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$"))]
    pub started_at: String,
    /// Configuration label given with `--config`.
    pub config: Option<String>,
    /// Every parameter actually used, defaults filled in (the spec type of
    /// the kind), or what an import states (`ImportSpec`).
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    pub spec: serde_json::Value,
    #[schemars(schema_with = "crate::schema::metrics")]
    pub metrics: Metrics,
    pub cpu: CpuSection,
    pub latency: Option<LatencyReport>,
    pub series: Vec<SeriesPoint>,
    /// Warnings that affect interpretation.
    pub notes: Vec<String>,
    /// What the run ran on, where it matters to the figures: network runs,
    /// the interfaces and TCP settings of both ends; disk runs, their
    /// devices and where those devices' and the NICs' interrupts go.
    /// Null for an import, a multi-host result (each host's is in
    /// `hosts[].disclosure`) and a disk run of an older version.
    #[schemars(with = "Option<serde_json::Map<String, serde_json::Value>>")]
    pub disclosure: Option<serde_json::Value>,
    /// A disk run's figures per target (docs/json.md: `target`,
    /// `target_kind`, `metrics`), over the same window as the totals; the
    /// counts of `targets`, of `workers` and of `lines` each add up to
    /// them. Absent for network runs, imports and older documents.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<TargetFigures>,
    /// A disk run's figures per worker (`id`, the `cpu` it ran on,
    /// `targets`, `metrics`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workers: Vec<WorkerFigures>,
    /// A disk run's access-spec lines: the share asked and achieved.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lines: Vec<LineFigures>,
    /// A multi-host test (agents): one entry per host, each measured on
    /// its own CPU window, all windows opened at one scheduled instant.
    /// Absent for single-host runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<HostFigures>,
    /// A multi-host network test's endpoint pairs, each one client host
    /// and one server host: the bytes each way inside the window.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pairs: Vec<PairFigures>,
    /// A multi-host test: how far apart the agents' windows opened and
    /// closed, as measured (microseconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skew_us: Option<Skew>,
}

/// One host of a multi-host test, over its own window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct HostFigures {
    /// Its name in the hosts file (or lab).
    pub name: String,
    /// Where the console reached its agent (`ADDR:PORT`).
    pub address: String,
    #[schemars(extend("enum" = HOST_ROLES))]
    pub role: String,
    /// CPUs counted in its `cpu_pct` (the weight of its CPU in the totals).
    pub cpus: u32,
    /// Its kernel's boot id: hosts that share one (a lab on one machine)
    /// share one CPU, counted once in the totals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot_id: Option<String>,
    /// Its throughput (`mbit_s`, `tx_mbit_s`, `rx_mbit_s` for network
    /// tests: what it sent and received; `iops`, `mb_s` and latency for
    /// disk tests), its CPU metrics and the efficiency derived from them.
    #[schemars(schema_with = "crate::schema::metrics")]
    pub metrics: Metrics,
    /// Its whole-host CPU over its window (as `cpu.local` of a run).
    pub cpu: Option<CpuReport>,
    /// When its window opened and closed, against the scheduled instants,
    /// on the console's clock (its measured offset applied), microseconds.
    pub on_us: f64,
    pub off_us: f64,
    /// What the agent disclosed about itself (system, interfaces).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<serde_json::Map<String, serde_json::Value>>")]
    pub disclosure: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Its network interfaces' counters over its window (loopback left
    /// out): what the wire carried, headers and all, to check goodput by.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ifaces: Vec<IfaceFigures>,
}

/// One interface's counters over a window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct IfaceFigures {
    pub name: String,
    pub rx_bytes: u64,
    pub rx_packets: u64,
    pub tx_bytes: u64,
    pub tx_packets: u64,
    /// What the adapter received and sent per second of the host's window,
    /// on the wire (headers included), Mbit/s: `rx_bytes` (`tx_bytes`)
    /// × 8 / window / 10^6. Absent from an agent's report (the console
    /// adds them) and from older documents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_mbit_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_mbit_s: Option<f64>,
}

impl IfaceFigures {
    /// The counters with their rates over a window of `window_s` seconds
    /// (none for a window that is not positive).
    pub fn with_rates(mut self, window_s: f64) -> IfaceFigures {
        let rate = |b: u64| (window_s > 0.0).then(|| b as f64 * 8.0 / window_s / 1e6);
        self.rx_mbit_s = rate(self.rx_bytes);
        self.tx_mbit_s = rate(self.tx_bytes);
        self
    }

    /// The rates as stored, or, for an older document that has the
    /// counters only, over a window of `window_s` seconds.
    pub fn rated(&self, window_s: f64) -> IfaceFigures {
        match self.rx_mbit_s {
            Some(_) => self.clone(),
            None => self.clone().with_rates(window_s),
        }
    }

    /// Both directions, Mbit/s on the wire.
    pub fn mbit_s(&self) -> Option<f64> {
        Some(self.rx_mbit_s? + self.tx_mbit_s?)
    }
}

/// Values of [`HostFigures::role`].
pub const HOST_ROLES: &[&str] = &["client", "server", "client+server", "disk"];

impl HostFigures {
    /// The hosts, each machine once: a host whose kernel boot id an
    /// earlier one has shares that machine's CPU and is left out (a host
    /// without a boot id counts on its own). What CPU totals weigh.
    pub fn one_per_machine<'a>(
        hosts: impl IntoIterator<Item = &'a HostFigures>,
    ) -> Vec<&'a HostFigures> {
        let mut seen: Vec<&str> = Vec::new();
        let mut out = Vec::new();
        for h in hosts {
            if let Some(b) = h.boot_id.as_deref() {
                if seen.contains(&b) {
                    continue;
                }
                seen.push(b);
            }
            out.push(h);
        }
        out
    }
}

/// One endpoint pair of a multi-host network test.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct PairFigures {
    pub client: String,
    pub server: String,
    /// Data connections of this pair (both directions for bidir).
    pub conns: u32,
    /// Payload the server received from the client in its window.
    pub client_to_server_bytes: u64,
    /// Payload the client received from the server in its window.
    pub server_to_client_bytes: u64,
    /// Both directions, over the window.
    pub mbit_s: f64,
}

/// Measured spread of the agents' windows.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Skew {
    /// Latest minus earliest window opening, on the console's clock.
    pub start: f64,
    /// Latest minus earliest window closing.
    pub stop: f64,
    /// The largest uncertainty of the clock offsets used (half the best
    /// probe's round trip): skews below it are not resolved.
    pub clock: f64,
}

/// The I/Os a part of a disk run completed in the window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct IoCounts {
    pub reads: u64,
    pub writes: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
}

impl IoCounts {
    pub fn ios(&self) -> u64 {
        self.reads + self.writes
    }

    pub fn bytes(&self) -> u64 {
        self.read_bytes + self.write_bytes
    }
}

/// One target: the I/Os its workers did on it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct TargetFigures {
    /// Its path, as in `spec.targets`.
    pub target: String,
    #[schemars(extend("enum" = crate::spec::TARGET_KINDS))]
    pub target_kind: String,
    /// The workers that had it (their `id`s).
    pub workers: Vec<u32>,
    pub counts: IoCounts,
    /// `iops`, `read_iops`, `write_iops`, `mb_s`, `errors` and, when an
    /// I/O completed, `lat_mean_us`, `lat_p99_us`, `lat_max_us`.
    #[schemars(schema_with = "crate::schema::metrics")]
    pub metrics: Metrics,
}

/// One worker: the I/Os it did, on all its targets.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct WorkerFigures {
    pub id: u32,
    /// The CPU it ran on (`sched_getcpu`, sampled once per batch of
    /// completions in the window); null if it was seen on several.
    pub cpu: Option<u32>,
    /// Every CPU it was seen on in the window.
    pub ran_on: Vec<u32>,
    /// The CPU it was pinned to; null: not pinned.
    pub pinned: Option<u32>,
    /// Busy % of the CPU it was pinned to over the window (from
    /// `cpu.local.per_core`).
    pub pinned_busy_pct: Option<f64>,
    /// Its targets (places in `spec.targets`).
    pub targets: Vec<u32>,
    pub counts: IoCounts,
    #[schemars(schema_with = "crate::schema::metrics")]
    pub metrics: Metrics,
}

/// One access-spec line: what was asked and what was done.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct LineFigures {
    /// Its place in `spec.lines`.
    pub line: u32,
    pub share_pct: u32,
    pub bs: u64,
    /// I/Os and bytes of this line in the window, and their shares of all.
    pub ios: u64,
    pub bytes: u64,
    pub ios_pct: f64,
    pub bytes_pct: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
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

    /// `sh (pid 4242) 48.1 %, rustc (pid 77) 3.0 %`.
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

    /// ": " and the processes, or nothing when none are named.
    fn named_list(&self) -> String {
        if self.processes.is_empty() {
            String::new()
        } else {
            format!(": {}", self.named())
        }
    }

    pub fn named(&self) -> String {
        let v: Vec<String> = self
            .processes
            .iter()
            .map(|p| format!("{} (pid {}) {:.1} %", p.comm, p.pid, p.cpu_pct))
            .collect();
        v.join(", ")
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
            let v: Option<Vec<f64>> = reports
                .iter()
                .map(|r| f(r).map(|x| x * r.cpus as f64))
                .collect();
            v.map(|v| v.iter().sum::<f64>() / total)
        };
        let mhz: Vec<Option<f64>> = reports.iter().map(|r| r.nominal_mhz).collect();
        let same_mhz = mhz.windows(2).all(|p| p[0] == p[1]);
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
            per_core: Vec::new(),
            self_pct: all(&|r| r.self_pct),
            top: Vec::new(),
            interrupts_s: sum_opt(&|r| r.interrupts_s),
            ctx_switches_s: sum_opt(&|r| r.ctx_switches_s),
            nominal_mhz: if same_mhz {
                mhz.first().copied().flatten()
            } else {
                None
            },
            nominal_mhz_source: None,
            notes: vec![format!(
                "{} machine(s), percentages weighted by CPU count",
                reports.len()
            )],
            interference: None,
            account: None,
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

impl ResultDoc {
    /// `spec` as a kind's type (`DiskSpec`, `StreamSpec`, `RrSpec`): None
    /// for an import, which states only part of it.
    pub fn spec_as<T: serde::de::DeserializeOwned>(&self) -> Option<T> {
        T::deserialize(&self.spec).ok()
    }

    /// The network disclosure: None for a disk run or an import.
    pub fn net_disclosure(&self) -> Option<crate::spec::NetDisclosure> {
        crate::spec::NetDisclosure::deserialize(self.disclosure.as_ref()?).ok()
    }

    /// The disk disclosure: None for a network run, an import or an older
    /// document.
    pub fn disk_disclosure(&self) -> Option<crate::spec::DiskDisclosure> {
        crate::spec::DiskDisclosure::deserialize(self.disclosure.as_ref()?).ok()
    }

    /// Re-judges this document's interference against `threshold_pct`
    /// (local CPU, and the peer's when it is another host) and rewrites
    /// its `interference:` note. Returns whether it is interfered.
    pub fn apply_interference_threshold(&mut self, threshold_pct: f64) -> bool {
        self.notes.retain(|n| !n.starts_with(INTERFERENCE_NOTE));
        let same_host = self.cpu.same_host == Some(true);
        let mut found = Vec::new();
        if let Some(i) = self
            .cpu
            .local
            .as_mut()
            .and_then(|c| c.interference.as_mut())
        {
            i.set_threshold(threshold_pct);
            if i.interfered {
                found.push(format!(
                    "{INTERFERENCE_NOTE} {} of this host's CPU in the window (threshold {} %), and whole-host CPU counts it{}",
                    i.what(),
                    threshold_pct,
                    i.named_list()
                ));
            }
        }
        if let Some(i) = self
            .cpu
            .remote
            .as_mut()
            .and_then(|c| c.interference.as_mut())
        {
            i.set_threshold(threshold_pct);
            if i.interfered && !same_host {
                found.push(format!(
                    "{INTERFERENCE_NOTE} {} of the endpoint host's CPU in the window (threshold {} %){}",
                    i.what(),
                    threshold_pct,
                    i.named_list()
                ));
            }
        }
        found.extend(self.judge_hosts(threshold_pct));
        let interfered = !found.is_empty();
        self.notes.extend(found);
        interfered
    }

    /// A multi-host test's interference, judged once per machine (hosts
    /// that share a kernel boot id, a lab's, are one machine): the first
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
            let same: Vec<usize> = (i..self.hosts.len())
                .filter(|&j| j == i || (boot.is_some() && self.hosts[j].boot_id == boot))
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
                notes.push(format!(
                    "{INTERFERENCE_NOTE} {} of {whose} in the window (threshold {threshold_pct} %), and whole-host CPU counts it{}",
                    verdict.what(),
                    verdict.named_list()
                ));
            }
            let own: Vec<f64> = (same.iter())
                .map(|&j| {
                    (self.hosts[j].cpu.as_ref())
                        .and_then(|c| c.self_pct)
                        .unwrap_or(0.0)
                })
                .collect();
            let all_agents: f64 = own.iter().sum();
            for (k, &j) in same.iter().enumerate() {
                let h = &mut self.hosts[j];
                if let Some(c) = h.cpu.as_mut() {
                    c.interference = Some(verdict.clone());
                    // Each host's account moves the other agents out of
                    // "others" once (judging again must not move them twice),
                    // and the host's metric says what the account says.
                    if let Some(a) = c.account.as_mut().filter(|a| a.agents_pct == 0.0) {
                        let agents = (all_agents - own[k]).clamp(0.0, a.others_pct);
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
        (self.hosts.iter())
            .filter(|h| {
                (h.cpu.as_ref())
                    .and_then(|c| c.interference.as_ref())
                    .is_some_and(|i| i.interfered)
            })
            .map(|h| h.name.as_str())
            .collect()
    }

    /// Whether this repetition is interfered (as last judged).
    pub fn interfered(&self) -> bool {
        let same_host = self.cpu.same_host == Some(true);
        let hit = |c: &Option<CpuReport>| {
            c.as_ref()
                .and_then(|c| c.interference.as_ref())
                .is_some_and(|i| i.interfered)
        };
        hit(&self.cpu.local)
            || (!same_host && hit(&self.cpu.remote))
            || !self.interfered_hosts().is_empty()
    }
}

/// Every figure of a part that must be a finite number is one.
fn finite(v: &[f64]) -> bool {
    v.iter().all(|x| x.is_finite())
}

fn finite_opt(v: &[Option<f64>]) -> bool {
    v.iter().flatten().all(|x| x.is_finite())
}

impl CpuModes {
    fn is_finite(&self) -> bool {
        finite(&[
            self.user,
            self.nice,
            self.system,
            self.irq,
            self.softirq,
            self.iowait,
            self.steal,
            self.idle,
        ])
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
    }
}

impl LatencyReport {
    pub fn is_finite(&self) -> bool {
        finite(&[self.min_us, self.max_us, self.mean_us, self.stdev_us])
            && self.percentiles_us.values().all(|v| v.is_finite())
            && self.histogram.iter().all(|b| finite(b))
    }
}

impl ResultDoc {
    /// Leaves out every figure that is not a finite number, wherever it
    /// is: JSON has no such numbers (serde writes `null`), so a document
    /// holding one could be written but never read back. A metric or an
    /// optional figure is dropped, a CPU window or latency report with
    /// one is dropped whole, any other figure becomes 0; a note names
    /// what was left out. Returns whether anything was.
    pub fn drop_non_finite(&mut self) -> bool {
        let mut gone: Vec<String> = Vec::new();
        let metrics = |m: &mut Metrics, at: &str, gone: &mut Vec<String>| {
            let before: Vec<String> = m.keys().cloned().collect();
            m.retain(|_, v| v.is_finite());
            gone.extend(
                before
                    .into_iter()
                    .filter(|k| !m.contains_key(k))
                    .map(|k| format!("{at}metrics.{k}")),
            );
        };
        let cpu = |c: &mut Option<CpuReport>, at: &str, gone: &mut Vec<String>| {
            if c.as_ref().is_some_and(|c| !c.is_finite()) {
                *c = None;
                gone.push(at.to_string());
            }
        };
        let zero = |v: &mut f64, at: String, gone: &mut Vec<String>| {
            if !v.is_finite() {
                *v = 0.0;
                gone.push(at);
            }
        };
        let none = |v: &mut Option<f64>, at: String, gone: &mut Vec<String>| {
            if v.is_some_and(|x| !x.is_finite()) {
                *v = None;
                gone.push(at);
            }
        };
        metrics(&mut self.metrics, "", &mut gone);
        cpu(&mut self.cpu.local, "cpu.local", &mut gone);
        cpu(&mut self.cpu.remote, "cpu.remote", &mut gone);
        if self.latency.as_ref().is_some_and(|l| !l.is_finite()) {
            self.latency = None;
            gone.push("latency".into());
        }
        let points = self.series.len();
        self.series.retain(|p| p.t_s.is_finite());
        if self.series.len() != points {
            gone.push("series[].t_s".into());
        }
        for (i, p) in self.series.iter_mut().enumerate() {
            for v in [
                &mut p.iops,
                &mut p.mb_s,
                &mut p.mbit_s,
                &mut p.trans_s,
                &mut p.cpu_pct,
            ] {
                none(v, format!("series[{i}]"), &mut gone);
            }
        }
        for (i, t) in self.targets.iter_mut().enumerate() {
            metrics(&mut t.metrics, &format!("targets[{i}]."), &mut gone);
        }
        for (i, w) in self.workers.iter_mut().enumerate() {
            metrics(&mut w.metrics, &format!("workers[{i}]."), &mut gone);
            none(
                &mut w.pinned_busy_pct,
                format!("workers[{i}].pinned_busy_pct"),
                &mut gone,
            );
        }
        for (i, l) in self.lines.iter_mut().enumerate() {
            zero(&mut l.ios_pct, format!("lines[{i}].ios_pct"), &mut gone);
            zero(&mut l.bytes_pct, format!("lines[{i}].bytes_pct"), &mut gone);
        }
        for (i, h) in self.hosts.iter_mut().enumerate() {
            metrics(&mut h.metrics, &format!("hosts[{i}]."), &mut gone);
            cpu(&mut h.cpu, &format!("hosts[{i}].cpu"), &mut gone);
            zero(&mut h.on_us, format!("hosts[{i}].on_us"), &mut gone);
            zero(&mut h.off_us, format!("hosts[{i}].off_us"), &mut gone);
        }
        for (i, p) in self.pairs.iter_mut().enumerate() {
            zero(&mut p.mbit_s, format!("pairs[{i}].mbit_s"), &mut gone);
        }
        if (self.skew_us.as_ref()).is_some_and(|s| !finite(&[s.start, s.stop, s.clock])) {
            self.skew_us = None;
            gone.push("skew_us".into());
        }
        gone.dedup();
        if gone.is_empty() {
            return false;
        }
        self.notes.push(format!(
            "figures that were not finite numbers were left out: {}",
            gone.join(", ")
        ));
        true
    }
}

/// Response-time distribution, microseconds.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct LatencyReport {
    #[schemars(range(min = 1))]
    pub count: u64,
    pub min_us: f64,
    pub max_us: f64,
    pub mean_us: f64,
    pub stdev_us: f64,
    /// Keyed by percentile: "50", "90", "99", "99.9", "99.99".
    #[schemars(extend("required" = ["50", "90", "99", "99.9", "99.99"]))]
    pub percentiles_us: BTreeMap<String, f64>,
    /// `[upper bound of the bucket in us, count]`, ascending; empty buckets omitted.
    #[schemars(extend("items" = {"type": "array", "minItems": 2, "maxItems": 2,
        "prefixItems": [{"type": "number"}, {"type": "number", "minimum": 1}]}))]
    pub histogram: Vec<[f64; 2]>,
}

/// One second of the run.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct SeriesPoint {
    /// Seconds since the workload started (ramp-up included).
    pub t_s: f64,
    /// `ramp` or `measure`.
    #[schemars(extend("enum" = ["ramp", "measure", "stop"]))]
    pub phase: String,
    pub iops: Option<f64>,
    pub mb_s: Option<f64>,
    pub mbit_s: Option<f64>,
    pub trans_s: Option<f64>,
    #[schemars(range(max = 100.0001))]
    pub cpu_pct: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// issue 24: a non-finite figure anywhere (not only in `metrics`)
    /// is left out, and the document then reads back.
    #[test]
    fn every_non_finite_figure_is_left_out_and_the_document_reads_back() {
        let cpu = CpuReport {
            cpus: 4,
            window_s: 1.0,
            busy_pct: f64::INFINITY,
            ..Default::default()
        };
        let mut d: ResultDoc = serde_json::from_value(serde_json::json!({
            "iotoll_version": "0.1.0", "kind": "disk", "status": "complete",
            "started_at": "2026-11-22T00:00:00Z", "config": null, "spec": {},
            "metrics": {"iops": 1.0}, "cpu": {"local": null, "remote": null},
            "latency": null, "series": [], "notes": [], "disclosure": null
        }))
        .unwrap();
        d.metrics.insert("cpu_pct".into(), f64::NAN);
        d.cpu.local = Some(cpu.clone());
        d.hosts = vec![HostFigures {
            name: "h".into(),
            cpu: Some(cpu),
            on_us: f64::NEG_INFINITY,
            ..Default::default()
        }];
        d.pairs = vec![PairFigures {
            mbit_s: f64::NAN,
            ..Default::default()
        }];
        d.skew_us = Some(Skew {
            start: f64::INFINITY,
            stop: 0.0,
            clock: 0.0,
        });
        let text = serde_json::to_string(&d).unwrap();
        assert!(serde_json::from_str::<ResultDoc>(&text).is_err(), "damaged");
        assert!(d.drop_non_finite());
        let back: ResultDoc = serde_json::from_str(&serde_json::to_string(&d).unwrap()).unwrap();
        assert!(back.cpu.local.is_none() && back.hosts[0].cpu.is_none());
        assert_eq!((back.hosts[0].on_us, back.pairs[0].mbit_s), (0.0, 0.0));
        assert!(back.skew_us.is_none() && !back.metrics.contains_key("cpu_pct"));
        assert_eq!(back.metrics["iops"], 1.0);
        let note = back.notes.last().unwrap();
        assert!(
            note.contains("hosts[0].cpu") && note.contains("cpu.local"),
            "{note}"
        );
        assert!(!d.drop_non_finite(), "clean now");
    }

    /// A host of a multi-host test whose window saw `others_pct` of other
    /// processes, its own agent using `self_pct`.
    fn host(name: &str, boot: &str, others_pct: f64, self_pct: f64) -> HostFigures {
        let agent = TopConsumer {
            pid: name.len() as i32 * 1000,
            comm: "iotoll".into(),
            kernel_thread: false,
            cpu_pct: self_pct,
            role: Some(ROLE_SELF.into()),
        };
        HostFigures {
            name: name.into(),
            address: "192.0.2.1:7576".into(),
            role: "client".into(),
            cpus: 2,
            boot_id: Some(boot.into()),
            cpu: Some(CpuReport {
                cpus: 2,
                busy_pct: others_pct + self_pct,
                self_pct: Some(self_pct),
                top: vec![agent],
                interference: Some(Interference {
                    others_pct,
                    ..Default::default()
                }),
                account: Some(CpuAccount {
                    self_pct,
                    others_pct,
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn doc(hosts: Vec<HostFigures>) -> ResultDoc {
        let mut d: ResultDoc = serde_json::from_value(
            serde_json::json!({"iotoll_version": "x", "kind": "net-stream",
                "status": "complete", "started_at": "2026-01-01T00:00:00Z", "spec": null,
                "metrics": {}, "cpu": {"local": null, "remote": null}, "latency": null,
                "series": [], "notes": []}),
        )
        .unwrap();
        d.hosts = hosts;
        d
    }

    /// Seen: other processes used 95-99 % of a lab's CPU, the stored host
    /// records said `interfered: true`, and the test was not flagged.
    #[test]
    fn a_multi_host_test_is_interfered_when_a_host_is() {
        let mut d = doc(vec![
            host("s1", "other", 1.0, 3.0),
            host("c1", "lab", 60.0, 10.0),
            host("c2", "lab", 60.0, 10.0),
        ]);
        assert!(d.apply_interference_threshold(5.0));
        assert!(d.interfered());
        assert_eq!(d.interfered_hosts(), ["c1", "c2"]);
        let notes: Vec<&String> = (d.notes.iter())
            .filter(|n| n.starts_with(INTERFERENCE_NOTE))
            .collect();
        assert_eq!(notes.len(), 1, "once per machine: {notes:?}");
        assert!(
            notes[0].contains("hosts c1, c2 (one machine"),
            "{}",
            notes[0]
        );
        // c2's agent (10 %) is the test's own, not interference.
        assert!(notes[0].contains("50.0 %"), "{}", notes[0]);
    }

    /// In a lab every host's agent sees the others' agents; they are the
    /// test's own, and the machine is judged once.
    #[test]
    fn a_labs_own_agents_do_not_interfere() {
        let mut d = doc(vec![
            host("c1", "lab", 8.0, 4.0),
            host("c2", "lab", 8.0, 4.0),
            host("s1", "lab", 8.0, 4.0),
        ]);
        for h in &mut d.hosts {
            h.metrics.insert(crate::metrics::CPU_OTHERS_PCT.into(), 8.0);
        }
        assert!(!d.apply_interference_threshold(5.0), "{:?}", d.notes);
        assert!(!d.interfered());
        let i = d.hosts[1]
            .cpu
            .as_ref()
            .unwrap()
            .interference
            .as_ref()
            .unwrap();
        assert_eq!(i.others_pct, 0.0);
        // Every host's account says the same: the other two agents are
        // the test's, not others, and the parts still add up; judging
        // again moves nothing twice.
        for _ in 0..2 {
            for h in &d.hosts {
                let c = h.cpu.as_ref().unwrap();
                let a = c.account.as_ref().unwrap();
                assert_eq!((a.agents_pct, a.others_pct), (8.0, 0.0), "{}", h.name);
                assert_eq!(h.metrics[crate::metrics::CPU_OTHERS_PCT], 0.0, "{}", h.name);
                assert_eq!(a.total(), c.busy_pct);
            }
            d.apply_interference_threshold(5.0);
        }
    }
}
