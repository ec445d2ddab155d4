//! Canonical metric names (docs/metrics.md) and the one function that
//! computes every derived metric, so that every command agrees on them.

use crate::kind::Kind;
use std::collections::BTreeMap;

/// A flat map of canonical metric name to value. A metric that could not be
/// measured or computed is absent, never zero.
pub type Metrics = BTreeMap<String, f64>;

/// The metrics of these (name, value) pairs.
pub fn of(pairs: &[(&str, f64)]) -> Metrics {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

/// Which direction of a metric is the better one, for comparisons.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    Higher,
    Lower,
    /// A setting or a count of what was used (CPUs, connections): neither.
    Neither,
}

/// Which kinds of result carry a metric (a set of [`Kind`]s).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kinds(u8);

pub const DISK: Kinds = Kinds(Kind::Disk.bit());
pub const STREAM: Kinds = Kinds(Kind::NetStream.bit());
pub const RR: Kinds = Kinds(Kind::NetRr.bit());
pub const UDP: Kinds = Kinds(Kind::NetUdp.bit());
/// Connection rates: crr and cc.
pub const CONNRATE: Kinds = Kinds(Kind::NetCrr.bit() | Kind::NetCc.bit());
pub const CRR: Kinds = Kinds(Kind::NetCrr.bit());
pub const NET: Kinds = Kinds(STREAM.0 | RR.0 | UDP.0 | CONNRATE.0);
/// Payload moved one way: TCP streams and UDP flows.
pub const BULK: Kinds = Kinds(STREAM.0 | UDP.0);
pub const DISK_BULK: Kinds = Kinds(DISK.0 | BULK.0);
pub const ALL: Kinds = Kinds(DISK.0 | NET.0);

impl Kinds {
    pub const fn has(self, k: Kind) -> bool {
        self.0 & k.bit() != 0
    }
}

/// Everything known about one canonical metric. `METRICS` is the registry
/// that every command, the JSON Schema and docs/metrics.md ask.
#[derive(Debug, Clone, Copy)]
pub struct MetricDef {
    pub name: &'static str,
    pub unit: &'static str,
    /// What readers call it, with its unit ("MB/s per % CPU"): report
    /// tables and charts.
    pub label: &'static str,
    /// One line: what it is.
    pub meaning: &'static str,
    pub kinds: Kinds,
    pub better: Better,
    /// For an efficiency index or a service demand: the throughput metric
    /// it is the efficiency of.
    pub efficiency_of: Option<&'static str>,
    /// The kinds this metric is the headline of (the throughput, or with
    /// `efficiency_of`, the efficiency index a report leads with).
    pub headline: Kinds,
    /// The section of docs/metrics.md it is listed in.
    pub section: &'static str,
}

impl MetricDef {
    pub fn produced_by(&self, k: Kind) -> bool {
        self.kinds.has(k)
    }
    const fn headline(mut self, k: Kind) -> Self {
        self.headline = Kinds(self.headline.0 | k.bit());
        self
    }
    const fn efficiency_of(mut self, of: &'static str) -> Self {
        self.efficiency_of = Some(of);
        self
    }
    const fn in_section(mut self, section: &'static str) -> Self {
        self.section = section;
        self
    }
}

const fn m(
    name: &'static str,
    unit: &'static str,
    label: &'static str,
    kinds: Kinds,
    better: Better,
    meaning: &'static str,
) -> MetricDef {
    MetricDef {
        name,
        unit,
        label,
        meaning,
        kinds,
        better,
        efficiency_of: None,
        headline: Kinds(0),
        section: "",
    }
}

macro_rules! metric_registry {
    ($( section $title:literal { $( $konst:ident = $def:expr; )* } )*) => {
        $($( pub const $konst: &str = $def.name; )*)*
        pub const METRICS: &[MetricDef] = &[
            $($( $def.in_section($title), )*)*
        ];
    };
}

use Better::{Higher, Lower, Neither};

metric_registry! {
section "Throughput and latency (disk)" {
    WINDOW_S = m("window_s", "s", "window (s)", ALL, Neither, "length of the measurement window (ramp-up excluded)");
    IOPS = m("iops", "1/s", "IOPS", DISK, Higher, "I/Os that completed in full inside the window, per second").headline(Kind::Disk);
    READ_IOPS = m("read_iops", "1/s", "read IOPS", DISK, Higher, "completed reads per second");
    WRITE_IOPS = m("write_iops", "1/s", "write IOPS", DISK, Higher, "completed writes per second");
    MB_S = m("mb_s", "MB/s", "MB/s", DISK, Higher, "bytes of those I/Os per second / 10^6");
    READ_MB_S = m("read_mb_s", "MB/s", "read MB/s", DISK, Higher, "bytes read per second / 10^6");
    WRITE_MB_S = m("write_mb_s", "MB/s", "write MB/s", DISK, Higher, "bytes written per second / 10^6");
    MIB_S = m("mib_s", "MiB/s", "MiB/s", DISK, Higher, "bytes per second / 2^20");
    LAT_MEAN_US = m("lat_mean_us", "us", "mean latency (µs)", DISK, Lower, "mean I/O response time, from submission to completion");
    READ_LAT_MEAN_US = m("read_lat_mean_us", "us", "mean read latency (µs)", DISK, Lower, "mean response time of the reads (their summed times / their count; Iometer's Average Read Response Time)");
    WRITE_LAT_MEAN_US = m("write_lat_mean_us", "us", "mean write latency (µs)", DISK, Lower, "mean response time of the writes");
    READ_LAT_MAX_US = m("read_lat_max_us", "us", "max read latency (µs)", DISK, Lower, "maximum response time of a read");
    WRITE_LAT_MAX_US = m("write_lat_max_us", "us", "max write latency (µs)", DISK, Lower, "maximum response time of a write");
    LAT_MIN_US = m("lat_min_us", "us", "min latency (µs)", DISK, Lower, "minimum I/O response time");
    LAT_MAX_US = m("lat_max_us", "us", "max latency (µs)", DISK, Lower, "maximum I/O response time");
    LAT_P50_US = m("lat_p50_us", "us", "p50 latency (µs)", DISK, Lower, "median I/O response time");
    LAT_P90_US = m("lat_p90_us", "us", "p90 latency (µs)", DISK, Lower, "90th percentile I/O response time");
    LAT_P99_US = m("lat_p99_us", "us", "p99 latency (µs)", DISK, Lower, "99th percentile I/O response time");
    LAT_P999_US = m("lat_p999_us", "us", "p99.9 latency (µs)", DISK, Lower, "99.9th percentile I/O response time");
    LAT_P9999_US = m("lat_p9999_us", "us", "p99.99 latency (µs)", DISK, Lower, "99.99th percentile I/O response time");
    QD_ACHIEVED = m("qd_achieved", "count", "achieved queue depth", DISK, Neither, "mean I/Os outstanding over the window, all workers (measured; by Little's law ~ iops x lat_mean)");
    QD_COMPLETED = m("qd_completed", "count", "queue depth of the window's I/Os", DISK, Neither, "the I/Os that completed inside the window, each over its whole latency, in the same measured count as qd_achieved, over the window: by Little's law = iops x lat_mean; qd_achieved differs by the I/Os at the window's edges");
    ERRORS = m("errors", "count", "errors", ALL, Lower, "failed or short I/Os, or failed connections");
}
section "CPU (whole host, on the window)" {
    CPU_PCT = m("cpu_pct", "%", "CPU %", ALL, Lower, "whole-host busy % of all CPUs (user+nice+system+irq+softirq+steal; iowait is idle)");
    CPU_USER_PCT = m("cpu_user_pct", "%", "user CPU %", ALL, Lower, "user + nice, % of all CPUs");
    CPU_SYSTEM_PCT = m("cpu_system_pct", "%", "system CPU %", ALL, Lower, "system, % of all CPUs");
    CPU_IRQ_PCT = m("cpu_irq_pct", "%", "irq CPU %", ALL, Lower, "hard interrupts, % of all CPUs");
    CPU_SOFTIRQ_PCT = m("cpu_softirq_pct", "%", "softirq CPU %", ALL, Lower, "soft interrupts, % of all CPUs");
    CPU_IOWAIT_PCT = m("cpu_iowait_pct", "%", "iowait %", ALL, Lower, "iowait (counted as idle in cpu_pct), % of all CPUs");
    CPU_STEAL_PCT = m("cpu_steal_pct", "%", "steal %", ALL, Lower, "steal, % of all CPUs");
    CPU_SELF_PCT = m("cpu_self_pct", "%", "iotoll's own CPU %", ALL, Lower, "iotoll's own process (all threads), % of all CPUs");
    CPU_OTHERS_PCT = m("cpu_others_pct", "%", "other processes' CPU %", ALL, Lower, "user-space processes other than iotoll and its endpoint (other tenants), % of all CPUs; included in cpu_pct");
    CPU_SUT_PCT = m("cpu_sut_pct", "%", "system under test CPU %", ALL, Neither, "the system under test's processes (--sut-process, suite key sut) on this host, % of all CPUs; included in cpu_pct, never interference; absent when none used CPU");
    CPU_INITIATOR_PCT = m("cpu_initiator_pct", "%", "initiator CPU %", ALL, Lower, "cpu_pct minus cpu_sut_pct: the host's busy CPU less the system under test's processes' own; softirq and kernel threads stay in it, as a shared kernel cannot split them by process");
    INTERRUPTS_S = m("interrupts_s", "1/s", "interrupts/s", ALL, Neither, "interrupts per second (/proc/stat intr)");
    CTX_SWITCHES_S = m("ctx_switches_s", "1/s", "context switches/s", ALL, Neither, "context switches per second (/proc/stat ctxt)");
    CPUS = m("cpus", "count", "CPUs", ALL, Neither, "CPUs counted in cpu_pct (input to service demand)");
    CPU_NOMINAL_MHZ = m("cpu_nominal_mhz", "MHz", "nominal clock (MHz)", ALL, Neither, "nominal clock (input to cycles metrics); absent if unknown");
}
section "Efficiency and service demand (derived)" {
    IOPS_PER_CPU_PCT = m("iops_per_cpu_pct", "1/s/%", "IOPS per % CPU", DISK, Higher, "Iometer CPU Effectiveness: iops / cpu_pct").efficiency_of("iops").headline(Kind::Disk);
    MB_S_PER_CPU_PCT = m("mb_s_per_cpu_pct", "MB/s/%", "MB/s per % CPU", DISK, Higher, "mb_s / cpu_pct").efficiency_of("mb_s");
    MBIT_S_PER_CPU_PCT = m("mbit_s_per_cpu_pct", "Mbit/s/%", "Mbit/s per % CPU", BULK, Higher, "Performance/Efficiency index: mbit_s / cpu_pct").efficiency_of("mbit_s").headline(Kind::NetStream).headline(Kind::NetUdp);
    REMOTE_MBIT_S_PER_CPU_PCT = m("remote_mbit_s_per_cpu_pct", "Mbit/s/%", "Mbit/s per % remote CPU", BULK, Higher, "P/E index of the peer: mbit_s / remote_cpu_pct").efficiency_of("mbit_s");
    CPU_US_PER_IO = m("cpu_us_per_io", "us", "CPU µs per I/O", DISK, Lower, "service demand: cpu_pct / 100 x cpus x 10^6 / iops, busy CPU-microseconds of the whole host per I/O").efficiency_of("iops");
    CPU_US_PER_KB = m("cpu_us_per_kb", "us", "CPU µs per KB", DISK_BULK, Lower, "service demand per KB (1024 bytes) of payload: network goodput when there is one, else disk bytes").efficiency_of("mb_s");
    CPU_US_PER_TRANS = m("cpu_us_per_trans", "us", "CPU µs per transaction", RR, Lower, "service demand per request/response transaction").efficiency_of("trans_s").headline(Kind::NetRr);
    CYCLES_PER_IO = m("cycles_per_io", "cycles", "cycles per I/O", DISK, Lower, "cpu_pct / 100 x cpus x cpu_nominal_mhz x 10^6 / iops");
    CYCLES_PER_BYTE = m("cycles_per_byte", "cycles", "cycles per byte", DISK_BULK, Lower, "the same per byte of payload");
    LATENCY_ONE_WAY_US = m("latency_one_way_us", "us", "one-way latency (µs)", RR, Lower, "10^6 / (trans_s / conns) / 2 (netperf TCP_RR convention)");
}
section "Network" {
    MBIT_S = m("mbit_s", "Mbit/s", "Mbit/s", BULK, Higher, "goodput (payload: TCP's, or UDP datagrams' past iotoll's header) counted by the receiving end inside its window, tx + rx").headline(Kind::NetStream).headline(Kind::NetUdp);
    TX_MBIT_S = m("tx_mbit_s", "Mbit/s", "sent Mbit/s", BULK, Higher, "goodput of what this host sent, counted by the endpoint");
    RX_MBIT_S = m("rx_mbit_s", "Mbit/s", "received Mbit/s", BULK, Higher, "goodput of what the endpoint sent, counted by this host");
    SENT_MBIT_S = m("sent_mbit_s", "Mbit/s", "written Mbit/s", STREAM, Higher, "payload the sending ends wrote into their sockets in their windows (goodput counts what arrived)");
    CONNS = m("conns", "count", "connections", NET, Neither, "data connections (both directions for bidir)");
    CONNECT_S = m("connect_s", "s", "connect time (s)", NET, Lower, "time to establish all data connections");
    CONN_MBIT_S_MIN = m("conn_mbit_s_min", "Mbit/s", "slowest connection (Mbit/s)", BULK, Higher, "slowest connection");
    CONN_MBIT_S_MAX = m("conn_mbit_s_max", "Mbit/s", "fastest connection (Mbit/s)", BULK, Higher, "fastest connection");
    FAIRNESS = m("fairness", "ratio", "fairness (Jain)", BULK, Higher, "Jain's fairness index over the connections' rates: (sum x)^2 / (n sum x^2)");
    PAIR_FAIRNESS = m("pair_fairness", "ratio", "pair fairness (Jain)", STREAM, Higher, "multi-host: Jain's fairness index over the endpoint pairs' rates");
    PAIRS = m("pairs", "count", "endpoint pairs", NET, Neither, "multi-host: endpoint pairs (client host, server host)");
    HOSTS = m("hosts", "count", "hosts", ALL, Neither, "multi-host: hosts whose agents measured the window");
    RETRANSMITS = m("retransmits", "count", "retransmits", STREAM, Lower, "segments retransmitted by the sending sockets in the window (TCP_INFO)");
    SRTT_US = m("srtt_us", "us", "smoothed RTT (µs)", STREAM, Lower, "smoothed RTT of the sending sockets at the end of the window, averaged (TCP_INFO)");
    TRANS_S = m("trans_s", "1/s", "transactions/s", RR, Higher, "request/response transactions per second, all connections").headline(Kind::NetRr);
    RTT_MEAN_US = m("rtt_mean_us", "us", "mean round trip (µs)", RR, Lower, "mean transaction round trip (request issued to whole response)");
    RTT_P50_US = m("rtt_p50_us", "us", "p50 round trip (µs)", RR, Lower, "median transaction round trip");
    RTT_P90_US = m("rtt_p90_us", "us", "p90 round trip (µs)", RR, Lower, "90th percentile transaction round trip");
    RTT_P99_US = m("rtt_p99_us", "us", "p99 round trip (µs)", RR, Lower, "99th percentile transaction round trip");
    RTT_P999_US = m("rtt_p999_us", "us", "p99.9 round trip (µs)", RR, Lower, "99.9th percentile transaction round trip");
    RTT_MAX_US = m("rtt_max_us", "us", "max round trip (µs)", RR, Lower, "maximum transaction round trip");
}
section "Connection rates (crr, cc)" {
    CONN_S = m("conn_s", "1/s", "connections/s", CONNRATE, Higher, "connections completed per second in the window, all clients: for crr each is one transaction (connect, request, whole response, close), for cc a connect and close").headline(Kind::NetCrr).headline(Kind::NetCc);
    SERVED_CONN_S = m("served_conn_s", "1/s", "served connections/s", CONNRATE, Higher, "what the endpoint served per second of its own window (crr: requests answered, cc: connections accepted and closed): the check that both ends counted the same");
    CPU_US_PER_CONN = m("cpu_us_per_conn", "us", "CPU µs per connection", CONNRATE, Lower, "service demand: busy CPU-microseconds of the whole host per connection (crr: per transaction)").efficiency_of("conn_s").headline(Kind::NetCrr).headline(Kind::NetCc);
    CONN_S_PER_CPU_PCT = m("conn_s_per_cpu_pct", "1/s/%", "connections/s per % CPU", CONNRATE, Higher, "Performance/Efficiency index: conn_s / cpu_pct").efficiency_of("conn_s");
    CONNECT_MEAN_US = m("connect_mean_us", "us", "mean connect (µs)", CONNRATE, Lower, "mean time from socket() to an established connection (the SYN, SYN-ACK round trip)");
    CONNECT_P50_US = m("connect_p50_us", "us", "p50 connect (µs)", CONNRATE, Lower, "median connect time");
    CONNECT_P90_US = m("connect_p90_us", "us", "p90 connect (µs)", CONNRATE, Lower, "90th percentile connect time");
    CONNECT_P99_US = m("connect_p99_us", "us", "p99 connect (µs)", CONNRATE, Lower, "99th percentile connect time");
    CONNECT_P999_US = m("connect_p999_us", "us", "p99.9 connect (µs)", CONNRATE, Lower, "99.9th percentile connect time");
    CONNECT_MAX_US = m("connect_max_us", "us", "max connect (µs)", CONNRATE, Lower, "maximum connect time");
    TRANS_MEAN_US = m("trans_mean_us", "us", "mean transaction (µs)", CRR, Lower, "mean crr transaction time: socket() to the whole response (the close after is not in it)");
    TRANS_P50_US = m("trans_p50_us", "us", "p50 transaction (µs)", CRR, Lower, "median crr transaction time");
    TRANS_P90_US = m("trans_p90_us", "us", "p90 transaction (µs)", CRR, Lower, "90th percentile crr transaction time");
    TRANS_P99_US = m("trans_p99_us", "us", "p99 transaction (µs)", CRR, Lower, "99th percentile crr transaction time");
    TRANS_P999_US = m("trans_p999_us", "us", "p99.9 transaction (µs)", CRR, Lower, "99.9th percentile crr transaction time");
    TRANS_MAX_US = m("trans_max_us", "us", "max transaction (µs)", CRR, Lower, "maximum crr transaction time");
    FAILURES = m("failures", "count", "failed connections", CONNRATE, Lower, "connections that failed in the window (the failures_* metrics name the causes)");
    FAILURES_REFUSED = m("failures_refused", "count", "refused", CONNRATE, Lower, "connects refused (RST to the SYN: nothing listening)");
    FAILURES_RESET = m("failures_reset", "count", "reset", CONNRATE, Lower, "established connections the peer reset");
    FAILURES_TIMEOUT = m("failures_timeout", "count", "timed out", CONNRATE, Lower, "connect, request or response that took over 2 s");
    FAILURES_PORTS_EXHAUSTED = m("failures_ports_exhausted", "count", "ports exhausted", CONNRATE, Lower, "connects that found no free local port (EADDRNOTAVAIL): TIME_WAIT holds the range");
    FAILURES_SHORT_RESPONSE = m("failures_short_response", "count", "short responses", CONNRATE, Lower, "crr: the endpoint closed before the whole response");
    FAILURES_OTHER = m("failures_other", "count", "other failures", CONNRATE, Lower, "failures of any other cause (the result's notes give the first)");
}
section "UDP" {
    OFFERED_MBIT_S = m("offered_mbit_s", "Mbit/s", "offered Mbit/s", UDP, Neither, "payload the senders handed to their sockets in their windows (the sender's count, what --rate achieved), tx + rx");
    LOSS_PCT = m("loss_pct", "%", "loss %", UDP, Lower, "datagrams lost: 100 x (expected - received) / expected, expected from each flow's sequence numbers in the receiver's window");
    JITTER_US = m("jitter_us", "us", "jitter (µs)", UDP, Lower, "RFC 3550 interarrival jitter (J += (|D| - J) / 16 over transit-time differences) at the window's end, mean over flows");
    OUT_OF_ORDER = m("out_of_order", "count", "out of order", UDP, Lower, "datagrams that arrived after one with a higher sequence number of their flow");
    DUPLICATES = m("duplicates", "count", "duplicates", UDP, Lower, "datagrams whose sequence number the receiver had counted already");
    DATAGRAMS_SENT = m("datagrams_sent", "count", "datagrams sent", UDP, Neither, "datagrams the senders sent in their windows");
    DATAGRAMS_RECEIVED = m("datagrams_received", "count", "datagrams received", UDP, Neither, "datagrams of the test counted by the receivers in their windows, duplicates excluded");
    DATAGRAMS_LOST = m("datagrams_lost", "count", "datagrams lost", UDP, Lower, "expected minus received, over the flows");
    DATAGRAMS_IGNORED = m("datagrams_ignored", "count", "datagrams ignored", UDP, Lower, "datagrams the receivers did not count: too short, not iotoll's, another test's cookie, an unknown flow, or an absurd sequence jump");
}
section "The peer (network tests)" {
    REMOTE_CPU_PCT = m("remote_cpu_pct", "%", "remote CPU %", NET, Lower, "the peer's whole-host busy %");
    REMOTE_CPU_USER_PCT = m("remote_cpu_user_pct", "%", "remote user CPU %", NET, Lower, "the peer's user + nice");
    REMOTE_CPU_SYSTEM_PCT = m("remote_cpu_system_pct", "%", "remote system CPU %", NET, Lower, "the peer's system");
    REMOTE_CPU_IRQ_PCT = m("remote_cpu_irq_pct", "%", "remote irq CPU %", NET, Lower, "the peer's hard interrupts");
    REMOTE_CPU_SOFTIRQ_PCT = m("remote_cpu_softirq_pct", "%", "remote softirq CPU %", NET, Lower, "the peer's soft interrupts");
    REMOTE_CPU_IOWAIT_PCT = m("remote_cpu_iowait_pct", "%", "remote iowait %", NET, Lower, "the peer's iowait");
    REMOTE_CPU_STEAL_PCT = m("remote_cpu_steal_pct", "%", "remote steal %", NET, Lower, "the peer's steal");
    REMOTE_CPU_SELF_PCT = m("remote_cpu_self_pct", "%", "remote iotoll's own CPU %", NET, Lower, "the endpoint process's own CPU");
    REMOTE_CPU_OTHERS_PCT = m("remote_cpu_others_pct", "%", "remote other processes' CPU %", NET, Lower, "other processes on the peer");
    REMOTE_INTERRUPTS_S = m("remote_interrupts_s", "1/s", "remote interrupts/s", NET, Neither, "the peer's interrupts per second");
    REMOTE_CTX_SWITCHES_S = m("remote_ctx_switches_s", "1/s", "remote context switches/s", NET, Neither, "the peer's context switches per second");
    REMOTE_CPUS = m("remote_cpus", "count", "remote CPUs", NET, Neither, "the peer's CPU count");
    REMOTE_CPU_NOMINAL_MHZ = m("remote_cpu_nominal_mhz", "MHz", "remote nominal clock (MHz)", NET, Neither, "the peer's nominal clock");
}
}

/// Looks a metric up in the registry.
pub fn metric_def(name: &str) -> Option<&'static MetricDef> {
    METRICS.iter().find(|m| m.name == name)
}

/// Why `name` is refused where a metric is asked for: the likeliest
/// intended name and every valid one, so the user need not look them up.
pub fn unknown_metric(name: &str) -> String {
    let names = METRICS.iter().map(|m| m.name);
    let hint = crate::text::closest(name, names.clone())
        .map_or_else(|| ".".to_string(), |n| format!("; did you mean '{n}'?"));
    format!(
        "'{name}' is not a metric name{hint} Metrics: {} (docs/metrics.md)",
        names.collect::<Vec<_>>().join(", ")
    )
}

/// What readers call a metric ("IOPS", "p99 latency (µs)"), or its
/// canonical name when it is not registered.
pub fn label(name: &str) -> &str {
    metric_def(name).map_or(name, |d| d.label)
}

/// Whether less of `metric` is better (the peer's CPU as much as ours).
/// An unknown name is not.
pub fn lower_is_better(name: &str) -> bool {
    metric_def(name).is_some_and(|d| d.better == Better::Lower)
}

/// Whether a result of `kind` carries `metric`.
pub fn produces(kind: Kind, name: &str) -> bool {
    metric_def(name).is_some_and(|d| d.produced_by(kind))
}

/// The metric table of docs/metrics.md, one section per registry section.
pub fn markdown_table() -> String {
    let mut out = String::new();
    let mut section = "";
    for d in METRICS {
        if d.section != section {
            section = d.section;
            out.push_str(&format!(
                "\n### {section}\n\n| name | unit | kinds | better | meaning |\n|---|---|---|---|---|\n"
            ));
        }
        let kinds: Vec<&str> = Kind::ALL
            .iter()
            .filter(|k| d.produced_by(**k))
            .map(|k| k.as_str())
            .collect();
        let better = match d.better {
            Higher => "higher",
            Lower => "lower",
            Neither => "",
        };
        let mut meaning = d.meaning.to_string();
        if let Some(of) = d.efficiency_of {
            meaning.push_str(&format!(" (efficiency of `{of}`)"));
        }
        let heads: Vec<&str> = (Kind::ALL.iter())
            .filter(|k| d.headline.has(**k))
            .map(|k| k.as_str())
            .collect();
        if !heads.is_empty() {
            meaning.push_str(&format!(" (**headline** of {})", heads.join(", ")));
        }
        out.push_str(&format!(
            "| `{}` | {} | {} | {better} | {} |\n",
            d.name,
            d.unit,
            kinds.join(", "),
            meaning.replace('|', "\\|")
        ));
    }
    out
}

fn get(m: &Metrics, k: &str) -> Option<f64> {
    m.get(k).copied().filter(|v| v.is_finite())
}

/// `a / b` when both exist and `b` is strictly positive.
fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    a.zip(b.filter(|b| *b > 0.0)).map(|(a, b)| a / b)
}

/// Every derived metric whose inputs are present in `m` (none is the
/// input of another): efficiency (`*_per_cpu_pct`), service demand
/// (`cpu_us_per_*`), cycles, one-way latency and `mib_s`. Missing inputs
/// or a zero denominator leave the metric out.
fn derived(m: &Metrics) -> Vec<(&'static str, f64)> {
    let cpu = get(m, CPU_PCT);
    let mb_s = get(m, MB_S);
    let mbit_s = get(m, MBIT_S);
    let iops = get(m, IOPS);
    let trans_s = get(m, TRANS_S);
    let conn_s = get(m, CONN_S);

    // Busy CPU-seconds of the whole host per second of window.
    let cpus = get(m, CPUS).filter(|n| *n > 0.0);
    let busy_cpu_s_per_s = cpu.zip(cpus).map(|(c, n)| c / 100.0 * n);
    // Payload bytes per second: network goodput if this is a network result.
    let bytes_s = mbit_s.map(|v| v * 1e6 / 8.0).or(mb_s.map(|v| v * 1e6));
    let us = busy_cpu_s_per_s.map(|b| b * 1e6);
    let mhz = get(m, CPU_NOMINAL_MHZ).filter(|v| *v > 0.0);
    let cycles_s = busy_cpu_s_per_s.zip(mhz).map(|(b, mhz)| b * mhz * 1e6);
    let per_conn = ratio(trans_s, get(m, CONNS));
    let all = [
        (MIB_S, mb_s.map(|v| v * 1e6 / 1048576.0)),
        (IOPS_PER_CPU_PCT, ratio(iops, cpu)),
        (MB_S_PER_CPU_PCT, ratio(mb_s, cpu)),
        (MBIT_S_PER_CPU_PCT, ratio(mbit_s, cpu)),
        (
            REMOTE_MBIT_S_PER_CPU_PCT,
            ratio(mbit_s, get(m, REMOTE_CPU_PCT)),
        ),
        (CPU_US_PER_IO, ratio(us, iops)),
        (CPU_US_PER_KB, ratio(us, bytes_s.map(|b| b / 1024.0))),
        (CPU_US_PER_TRANS, ratio(us, trans_s)),
        (CONN_S_PER_CPU_PCT, ratio(conn_s, cpu)),
        (CPU_US_PER_CONN, ratio(us, conn_s)),
        (CYCLES_PER_IO, ratio(cycles_s, iops)),
        (CYCLES_PER_BYTE, ratio(cycles_s, bytes_s)),
        (
            LATENCY_ONE_WAY_US,
            ratio(Some(1e6), per_conn).map(|v| v / 2.0),
        ),
    ];
    let finite = |(k, v): (&'static str, Option<f64>)| Some((k, v.filter(|v| v.is_finite())?));
    all.into_iter().filter_map(finite).collect()
}

/// Computes every derived metric whose inputs are present ([`derived`]).
/// Values already present are kept (a measured value wins over a derived
/// one).
pub fn derive_metrics(m: &mut Metrics) {
    for (k, v) in derived(m) {
        m.entry(k.to_string()).or_insert(v);
    }
}

/// Recomputes every derived metric from the measured values now in `m`,
/// replacing what was there: for values that were combined (a mean over
/// repetitions), whose ratios must be the ratio of the means, not the mean
/// of the ratios. A derived value whose inputs are absent is kept (a
/// published table may state an index without its inputs).
pub fn rederive_metrics(m: &mut Metrics) {
    for (k, v) in derived(m) {
        m.insert(k.to_string(), v);
    }
}

#[cfg(test)]
mod tests {
    use super::of as m;
    use super::*;

    #[test]
    fn rederive_replaces_ratios_of_combined_values() {
        // The mean of two repetitions (992 Mbit/s at 49.7 % CPU) carrying the
        // mean of their ratios: the row must show 992 / 49.7.
        let mut x = m(&[(MBIT_S, 992.0), (CPU_PCT, 49.7), (MBIT_S_PER_CPU_PCT, 92.0)]);
        rederive_metrics(&mut x);
        assert!((x[MBIT_S_PER_CPU_PCT] - 992.0 / 49.7).abs() < 1e-9);
        // An index stated without its inputs stays.
        let mut y = m(&[(MB_S_PER_CPU_PCT, 7.5)]);
        rederive_metrics(&mut y);
        assert_eq!(y[MB_S_PER_CPU_PCT], 7.5);
    }

    #[test]
    fn disk_efficiency_and_service_demand() {
        let mut x = m(&[
            (IOPS, 10_000.0),
            (MB_S, 40.96),
            (CPU_PCT, 25.0),
            (CPUS, 2.0),
            (CPU_NOMINAL_MHZ, 2600.0),
        ]);
        derive_metrics(&mut x);
        assert_eq!(x[IOPS_PER_CPU_PCT], 400.0);
        assert!((x[MB_S_PER_CPU_PCT] - 1.6384).abs() < 1e-12);
        // 25 % of 2 CPUs = 0.5 CPU-s per s = 500,000 us / 10,000 IOs = 50 us.
        assert!((x[CPU_US_PER_IO] - 50.0).abs() < 1e-9);
        // 0.5 CPU-s * 2.6e9 Hz / 10,000 IOs = 130,000 cycles.
        assert!((x[CYCLES_PER_IO] - 130_000.0).abs() < 1e-6);
        // 40.96e6 B/s = 40,000 KB/s; 500,000 us / 40,000 = 12.5 us/KB.
        assert!((x[CPU_US_PER_KB] - 12.5).abs() < 1e-9);
        assert!((x[MIB_S] - 40.96e6 / 1048576.0).abs() < 1e-9);
        assert!(!x.contains_key(CPU_US_PER_TRANS));
        assert!(!x.contains_key(LATENCY_ONE_WAY_US));
    }

    #[test]
    fn network_pe_index_and_one_way_latency() {
        let mut x = m(&[
            (MBIT_S, 9400.0),
            (CPU_PCT, 47.0),
            (REMOTE_CPU_PCT, 20.0),
            (TRANS_S, 20_000.0),
            (CONNS, 2.0),
            (CPUS, 4.0),
        ]);
        derive_metrics(&mut x);
        assert!((x[MBIT_S_PER_CPU_PCT] - 200.0).abs() < 1e-9);
        assert!((x[REMOTE_MBIT_S_PER_CPU_PCT] - 470.0).abs() < 1e-9);
        // 10,000 trans/s per connection -> 100 us round trip -> 50 us one way.
        assert!((x[LATENCY_ONE_WAY_US] - 50.0).abs() < 1e-9);
        // Service demand per KB uses goodput: 9400 Mbit/s = 1.175e9 B/s.
        let us = 0.47 * 4.0 * 1e6;
        assert!((x[CPU_US_PER_KB] - us / (1.175e9 / 1024.0)).abs() < 1e-9);
        assert!(!x.contains_key(CYCLES_PER_BYTE), "no clock, no cycles");
    }

    #[test]
    fn zero_or_missing_inputs_leave_metrics_absent() {
        let mut x = m(&[(IOPS, 100.0), (CPU_PCT, 0.0), (CPUS, 2.0)]);
        derive_metrics(&mut x);
        assert!(!x.contains_key(IOPS_PER_CPU_PCT));
        let mut y = m(&[(IOPS, 100.0), (CPU_PCT, 10.0)]);
        derive_metrics(&mut y);
        assert_eq!(y[IOPS_PER_CPU_PCT], 10.0);
        assert!(!y.contains_key(CPU_US_PER_IO), "needs cpus");
        let mut z = m(&[(IOPS, 0.0), (CPU_PCT, 10.0), (CPUS, 2.0)]);
        derive_metrics(&mut z);
        assert!(!z.contains_key(CPU_US_PER_IO), "zero I/Os: no per-I/O cost");
    }

    #[test]
    fn derive_metrics_makes_every_derived_metric() {
        let mut x = m(&[
            (IOPS, 1.0),
            (MB_S, 1.0),
            (MBIT_S, 1.0),
            (TRANS_S, 1.0),
            (CONNS, 1.0),
            (CPU_PCT, 1.0),
            (REMOTE_CPU_PCT, 1.0),
            (CPUS, 1.0),
            (CPU_NOMINAL_MHZ, 1.0),
        ]);
        let before: Vec<String> = x.keys().cloned().collect();
        derive_metrics(&mut x);
        let made: Vec<&str> = x
            .keys()
            .filter(|k| !before.contains(k))
            .map(String::as_str)
            .collect();
        let mut want = vec![
            MIB_S,
            IOPS_PER_CPU_PCT,
            MB_S_PER_CPU_PCT,
            MBIT_S_PER_CPU_PCT,
            REMOTE_MBIT_S_PER_CPU_PCT,
            CPU_US_PER_IO,
            CPU_US_PER_KB,
            CPU_US_PER_TRANS,
            CYCLES_PER_IO,
            CYCLES_PER_BYTE,
            LATENCY_ONE_WAY_US,
        ];
        want.sort();
        assert_eq!(made, want);
        // Stale derived values are replaced, measured ones kept.
        x.insert(IOPS_PER_CPU_PCT.into(), 99.0);
        x.insert(IOPS.into(), 4.0);
        rederive_metrics(&mut x);
        assert_eq!(x[IOPS_PER_CPU_PCT], 4.0);
        assert_eq!(x[IOPS], 4.0);
    }

    #[test]
    fn measured_values_win() {
        let mut x = m(&[(MB_S, 1.0), (MIB_S, 0.5)]);
        derive_metrics(&mut x);
        assert_eq!(x[MIB_S], 0.5);
    }

    /// docs/metrics.md's tables are what `markdown_table` makes;
    /// `IOTOLL_BLESS=1` rewrites them.
    #[test]
    fn metrics_md_matches_the_registry() {
        const BEGIN: &str = "<!-- generated from crates/model/src/metrics.rs: begin -->\n";
        const END: &str = "<!-- generated: end -->";
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/metrics.md");
        let doc = std::fs::read_to_string(path).unwrap();
        let (head, rest) = doc.split_once(BEGIN).expect("begin marker");
        let (_, tail) = rest.split_once(END).expect("end marker");
        let want = format!("{head}{BEGIN}{}{END}{tail}", markdown_table());
        if std::env::var_os("IOTOLL_BLESS").is_some() {
            std::fs::write(path, &want).unwrap();
        }
        assert!(
            doc == want,
            "docs/metrics.md differs from the registry: run IOTOLL_BLESS=1 cargo test -p iotoll-model metrics_md"
        );
    }

    #[test]
    fn registry_names_are_unique() {
        let mut names: Vec<_> = METRICS.iter().map(|m| m.name).collect();
        names.sort();
        let n = names.len();
        names.dedup();
        assert_eq!(n, names.len());
        assert!(metric_def("cpu_pct").is_some());
    }

    #[test]
    fn labels_and_directions() {
        assert_eq!(label("iops_per_cpu_pct"), "IOPS per % CPU");
        assert_eq!(label("remote_cpu_user_pct"), "remote user CPU %");
        assert_eq!(label("no_such_metric"), "no_such_metric");
        // More peer CPU is no win (it was, before the registry said so).
        assert!(lower_is_better("remote_cpu_pct"));
        assert!(lower_is_better("cpu_us_per_io"));
        assert!(!lower_is_better("remote_mbit_s_per_cpu_pct"));
        assert!(!lower_is_better("conns"));
    }

    #[test]
    fn every_remote_metric_the_engines_write_is_registered() {
        // `CpuReport::write_metrics(.., "remote_")` writes these.
        let mut m = Metrics::new();
        let cpu = crate::CpuReport {
            self_pct: Some(1.0),
            interrupts_s: Some(1.0),
            ctx_switches_s: Some(1.0),
            nominal_mhz: Some(1.0),
            interference: Some(Default::default()),
            ..Default::default()
        };
        cpu.write_metrics(&mut m, "remote_");
        cpu.write_metrics(&mut m, "");
        for k in m.keys() {
            let d = metric_def(k).unwrap_or_else(|| panic!("{k} is not registered"));
            assert!(
                d.produced_by(Kind::NetStream) && d.produced_by(Kind::NetRr),
                "{k}"
            );
            assert_eq!(k.starts_with("remote_"), !d.produced_by(Kind::Disk), "{k}");
        }
        assert_eq!(m.len(), 26);
    }

    #[test]
    fn every_kind_produces_cpu_and_its_headline() {
        for &k in Kind::ALL {
            assert!(produces(k, CPU_PCT) && produces(k, k.headline()));
        }
        assert!(!produces(Kind::Disk, REMOTE_CPU_PCT));
        assert!(produces(Kind::NetRr, REMOTE_CPU_SYSTEM_PCT));
        assert!(!produces(Kind::NetRr, MBIT_S));
    }
}
