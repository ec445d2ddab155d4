//! The result document every `--json` prints (docs/json.md); its JSON
//! Schema, `docs/result.schema.json`, is generated from these types
//! ([`crate::schema`]).

use crate::metrics::Metrics;
use crate::spec::{Disclosure, DiskDisclosure, NetDisclosure, Spec};
use crate::{Kind, ResultStatus};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What `iotoll disk run --json`, `iotoll net stream --json` and `iotoll net rr --json` print on stdout. See docs/json.md.
// The derive (remote = "Self") reads `spec` and `disclosure` as written;
// `Deserialize` below then types them by `kind`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(remote = "Self")]
#[schemars(
    rename = "ResultDoc",
    title = "iotoll result document",
    deny_unknown_fields
)]
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
    pub spec: Spec,
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
    pub disclosure: Option<Disclosure>,
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

impl Serialize for ResultDoc {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        ResultDoc::serialize(self, s)
    }
}

impl<'de> Deserialize<'de> for ResultDoc {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut doc = ResultDoc::deserialize(d)?;
        if let Spec::Other(v) = std::mem::take(&mut doc.spec) {
            doc.spec = Spec::of(doc.kind, v);
        }
        if let Some(Disclosure::Other(v)) = doc.disclosure.take() {
            doc.disclosure = Some(Disclosure::of(doc.kind, v));
        }
        Ok(doc)
    }
}

impl ResultDoc {
    /// A complete document of `kind` of this version that has measured
    /// nothing yet: the builders fill in what they have.
    pub fn new(kind: Kind, spec: Spec) -> ResultDoc {
        ResultDoc {
            iotoll_version: crate::VERSION.to_string(),
            kind,
            status: ResultStatus::Complete,
            started_at: String::new(),
            config: None,
            spec,
            metrics: Metrics::new(),
            cpu: CpuSection::default(),
            latency: None,
            series: Vec::new(),
            notes: Vec::new(),
            disclosure: None,
            targets: Vec::new(),
            workers: Vec::new(),
            lines: Vec::new(),
            hosts: Vec::new(),
            pairs: Vec::new(),
            skew_us: None,
        }
    }

    /// The network disclosure: None for a disk run, an import or one of
    /// another shape.
    pub fn net_disclosure(&self) -> Option<&NetDisclosure> {
        self.disclosure.as_ref()?.net()
    }

    /// The disk disclosure: None for a network run, an import or an older
    /// document.
    pub fn disk_disclosure(&self) -> Option<&DiskDisclosure> {
        self.disclosure.as_ref()?.disk()
    }
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
    /// without a boot id counts on its own), unless it was measured on
    /// CPUs of its own (a lab host's `cpus`): those count as a machine of
    /// their own. What CPU totals weigh.
    pub fn one_per_machine<'a>(
        hosts: impl IntoIterator<Item = &'a HostFigures>,
    ) -> Vec<&'a HostFigures> {
        let mut seen: Vec<(&str, Option<&[u32]>)> = Vec::new();
        let first_of_its_machine = |h: &&'a HostFigures| {
            let own = h.cpu.as_ref().and_then(|c| c.own_cpus.as_deref());
            match h.boot_id.as_deref() {
                Some(b) if seen.contains(&(b, own)) => false,
                b => {
                    seen.extend(b.map(|b| (b, own)));
                    true
                }
            }
        };
        hosts.into_iter().filter(first_of_its_machine).collect()
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
    /// Request/response: the transactions its client completed in its window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transactions: Option<u64>,
    /// Request/response: the pair's `trans_s` and round trips (`rtt_p50_us`,
    /// `rtt_p99_us`, ...), as a local `net rr` reports them.
    #[serde(default, skip_serializing_if = "Metrics::is_empty")]
    pub metrics: Metrics,
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

/// Every figure of a part that must be a finite number is one.
fn finite(v: &[f64]) -> bool {
    v.iter().all(|x| x.is_finite())
}

fn finite_opt(v: &[Option<f64>]) -> bool {
    v.iter().flatten().all(|x| x.is_finite())
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
        let mut gone = Gone::default();
        gone.metrics(&mut self.metrics, "");
        gone.whole(&mut self.cpu.local, CpuReport::is_finite, "cpu.local");
        gone.whole(&mut self.cpu.remote, CpuReport::is_finite, "cpu.remote");
        gone.whole(&mut self.latency, LatencyReport::is_finite, "latency");
        let points = self.series.len();
        self.series.retain(|p| p.t_s.is_finite());
        if self.series.len() != points {
            gone.0.push("series[].t_s".into());
        }
        for (i, p) in self.series.iter_mut().enumerate() {
            for v in [
                &mut p.iops,
                &mut p.mb_s,
                &mut p.mbit_s,
                &mut p.trans_s,
                &mut p.cpu_pct,
            ] {
                gone.whole(v, |x| x.is_finite(), &format!("series[{i}]"));
            }
        }
        for (i, t) in self.targets.iter_mut().enumerate() {
            gone.metrics(&mut t.metrics, &format!("targets[{i}]."));
        }
        for (i, w) in self.workers.iter_mut().enumerate() {
            gone.metrics(&mut w.metrics, &format!("workers[{i}]."));
            let at = format!("workers[{i}].pinned_busy_pct");
            gone.whole(&mut w.pinned_busy_pct, |x| x.is_finite(), &at);
        }
        for (i, l) in self.lines.iter_mut().enumerate() {
            gone.zero(&mut l.ios_pct, format!("lines[{i}].ios_pct"));
            gone.zero(&mut l.bytes_pct, format!("lines[{i}].bytes_pct"));
        }
        for (i, h) in self.hosts.iter_mut().enumerate() {
            gone.metrics(&mut h.metrics, &format!("hosts[{i}]."));
            gone.whole(&mut h.cpu, CpuReport::is_finite, &format!("hosts[{i}].cpu"));
            gone.zero(&mut h.on_us, format!("hosts[{i}].on_us"));
            gone.zero(&mut h.off_us, format!("hosts[{i}].off_us"));
        }
        for (i, p) in self.pairs.iter_mut().enumerate() {
            gone.zero(&mut p.mbit_s, format!("pairs[{i}].mbit_s"));
        }
        let skew = |s: &Skew| finite(&[s.start, s.stop, s.clock]);
        gone.whole(&mut self.skew_us, skew, "skew_us");
        let Gone(mut gone) = gone;
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

/// Where [`ResultDoc::drop_non_finite`] left figures out.
#[derive(Default)]
struct Gone(Vec<String>);

impl Gone {
    /// Drops the metrics of `m` that are not finite (`at`: where `m` is).
    fn metrics(&mut self, m: &mut Metrics, at: &str) {
        let before: Vec<String> = m.keys().cloned().collect();
        m.retain(|_, v| v.is_finite());
        let dropped = before.into_iter().filter(|k| !m.contains_key(k));
        self.0.extend(dropped.map(|k| format!("{at}metrics.{k}")));
    }

    /// Drops an optional figure, or a part whole, when `finite` says it is
    /// (or holds) one that is not finite.
    fn whole<T>(&mut self, v: &mut Option<T>, finite: impl Fn(&T) -> bool, at: &str) {
        if v.as_ref().is_some_and(|v| !finite(v)) {
            *v = None;
            self.0.push(at.to_string());
        }
    }

    fn zero(&mut self, v: &mut f64, at: String) {
        if !v.is_finite() {
            *v = 0.0;
            self.0.push(at);
        }
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

mod cpu;
mod interference;
#[cfg(test)]
mod tests;

pub use cpu::*;
pub use interference::*;
