//! Canonical metric names (DESIGN.md, "Metrics") and the one function that
//! computes every derived metric, so that every command agrees on them.

use std::collections::BTreeMap;

/// A flat map of canonical metric name to value. A metric that could not be
/// measured or computed is absent, never zero.
pub type Metrics = BTreeMap<String, f64>;

/// One canonical metric: its name, unit and meaning. `METRICS` is the
/// registry the JSON schema, docs and exports are checked against.
#[derive(Debug, Clone, Copy)]
pub struct MetricDef {
    pub name: &'static str,
    pub unit: &'static str,
    pub meaning: &'static str,
}

macro_rules! metric_registry {
    ($( $konst:ident = $name:literal, $unit:literal, $meaning:literal; )*) => {
        $( pub const $konst: &str = $name; )*
        pub const METRICS: &[MetricDef] = &[
            $( MetricDef { name: $name, unit: $unit, meaning: $meaning }, )*
        ];
    };
}

metric_registry! {
    WINDOW_S = "window_s", "s", "length of the measurement window (ramp-up excluded)";
    IOPS = "iops", "1/s", "completed I/Os per second";
    READ_IOPS = "read_iops", "1/s", "completed reads per second";
    WRITE_IOPS = "write_iops", "1/s", "completed writes per second";
    MB_S = "mb_s", "MB/s", "bytes transferred per second / 10^6";
    READ_MB_S = "read_mb_s", "MB/s", "bytes read per second / 10^6";
    WRITE_MB_S = "write_mb_s", "MB/s", "bytes written per second / 10^6";
    MIB_S = "mib_s", "MiB/s", "bytes transferred per second / 2^20";
    LAT_MEAN_US = "lat_mean_us", "us", "mean I/O response time";
    LAT_MIN_US = "lat_min_us", "us", "minimum I/O response time";
    LAT_MAX_US = "lat_max_us", "us", "maximum I/O response time";
    LAT_P50_US = "lat_p50_us", "us", "median I/O response time";
    LAT_P90_US = "lat_p90_us", "us", "90th percentile I/O response time";
    LAT_P99_US = "lat_p99_us", "us", "99th percentile I/O response time";
    LAT_P999_US = "lat_p999_us", "us", "99.9th percentile I/O response time";
    LAT_P9999_US = "lat_p9999_us", "us", "99.99th percentile I/O response time";
    QD_ACHIEVED = "qd_achieved", "count", "mean I/Os outstanding over the window, all workers (measured: integral of the in-flight count over the window / the window; by Little's law ~ iops x lat_mean)";
    ERRORS = "errors", "count", "failed or short I/Os, or failed connections";
    MBIT_S = "mbit_s", "Mbit/s", "TCP goodput (payload), tx + rx";
    TX_MBIT_S = "tx_mbit_s", "Mbit/s", "TCP goodput sent";
    RX_MBIT_S = "rx_mbit_s", "Mbit/s", "TCP goodput received";
    SENT_MBIT_S = "sent_mbit_s", "Mbit/s", "payload the sending ends wrote into their sockets in their windows (goodput counts what arrived)";
    CONNS = "conns", "count", "connections";
    CONNECT_S = "connect_s", "s", "time to establish all data connections";
    CONN_MBIT_S_MIN = "conn_mbit_s_min", "Mbit/s", "slowest connection";
    CONN_MBIT_S_MAX = "conn_mbit_s_max", "Mbit/s", "fastest connection";
    FAIRNESS = "fairness", "ratio", "Jain's fairness index over connections";
    RETRANSMITS = "retransmits", "count", "TCP retransmits (TCP_INFO)";
    SRTT_US = "srtt_us", "us", "smoothed RTT (TCP_INFO)";
    TRANS_S = "trans_s", "1/s", "request/response transactions per second, all connections";
    LATENCY_ONE_WAY_US = "latency_one_way_us", "us", "1e6 / (trans_s / conns) / 2 (netperf TCP_RR convention)";
    RTT_MEAN_US = "rtt_mean_us", "us", "mean transaction round trip";
    RTT_P50_US = "rtt_p50_us", "us", "median transaction round trip";
    RTT_P90_US = "rtt_p90_us", "us", "90th percentile transaction round trip";
    RTT_P99_US = "rtt_p99_us", "us", "99th percentile transaction round trip";
    RTT_P999_US = "rtt_p999_us", "us", "99.9th percentile transaction round trip";
    RTT_MAX_US = "rtt_max_us", "us", "maximum transaction round trip";
    CPU_PCT = "cpu_pct", "%", "whole-host busy % of all CPUs (user+nice+system+irq+softirq+steal; iowait is idle)";
    CPU_USER_PCT = "cpu_user_pct", "%", "user + nice, % of all CPUs";
    CPU_SYSTEM_PCT = "cpu_system_pct", "%", "system, % of all CPUs";
    CPU_IRQ_PCT = "cpu_irq_pct", "%", "hard interrupts, % of all CPUs";
    CPU_SOFTIRQ_PCT = "cpu_softirq_pct", "%", "soft interrupts, % of all CPUs";
    CPU_IOWAIT_PCT = "cpu_iowait_pct", "%", "iowait (counted as idle in cpu_pct), % of all CPUs";
    CPU_STEAL_PCT = "cpu_steal_pct", "%", "steal, % of all CPUs";
    CPU_SELF_PCT = "cpu_self_pct", "%", "iotoll's own process (all threads), % of all CPUs";
    CPU_OTHERS_PCT = "cpu_others_pct", "%", "user-space processes other than iotoll and its endpoint (other tenants), % of all CPUs; included in cpu_pct";
    INTERRUPTS_S = "interrupts_s", "1/s", "interrupts per second (/proc/stat intr)";
    CTX_SWITCHES_S = "ctx_switches_s", "1/s", "context switches per second (/proc/stat ctxt)";
    CPUS = "cpus", "count", "CPUs counted in cpu_pct (input to service demand)";
    CPU_NOMINAL_MHZ = "cpu_nominal_mhz", "MHz", "nominal clock (input to cycles metrics); absent if unknown";
    REMOTE_CPU_PCT = "remote_cpu_pct", "%", "the peer's whole-host busy %";
    REMOTE_CPUS = "remote_cpus", "count", "the peer's CPU count";
    IOPS_PER_CPU_PCT = "iops_per_cpu_pct", "1/s/%", "Iometer CPU Effectiveness: iops / cpu_pct";
    MB_S_PER_CPU_PCT = "mb_s_per_cpu_pct", "MB/s/%", "mb_s / cpu_pct";
    MBIT_S_PER_CPU_PCT = "mbit_s_per_cpu_pct", "Mbit/s/%", "Performance/Efficiency index: mbit_s / cpu_pct";
    REMOTE_MBIT_S_PER_CPU_PCT = "remote_mbit_s_per_cpu_pct", "Mbit/s/%", "P/E index of the peer: mbit_s / remote_cpu_pct";
    CPU_US_PER_IO = "cpu_us_per_io", "us", "service demand: busy CPU-microseconds of the whole host per I/O";
    CPU_US_PER_KB = "cpu_us_per_kb", "us", "service demand: busy CPU-microseconds per KB (1024 bytes)";
    CPU_US_PER_TRANS = "cpu_us_per_trans", "us", "service demand: busy CPU-microseconds per transaction";
    CYCLES_PER_IO = "cycles_per_io", "cycles", "busy CPU-seconds x nominal Hz / I/Os";
    CYCLES_PER_BYTE = "cycles_per_byte", "cycles", "busy CPU-seconds x nominal Hz / bytes";
}

/// Looks a metric up in the registry.
pub fn metric_def(name: &str) -> Option<&'static MetricDef> {
    METRICS.iter().find(|m| m.name == name)
}

/// The human name of a metric, with its unit, for charts and report tables
/// ("IOPS", "MB/s per % CPU", "mean latency (µs)"). The one place these
/// names live; `label` falls back to the canonical name.
pub fn human_label(name: &str) -> Option<&'static str> {
    Some(match name {
        "window_s" => "window (s)",
        "iops" => "IOPS",
        "read_iops" => "read IOPS",
        "write_iops" => "write IOPS",
        "mb_s" => "MB/s",
        "read_mb_s" => "read MB/s",
        "write_mb_s" => "write MB/s",
        "mib_s" => "MiB/s",
        "lat_mean_us" => "mean latency (µs)",
        "lat_min_us" => "min latency (µs)",
        "lat_max_us" => "max latency (µs)",
        "lat_p50_us" => "p50 latency (µs)",
        "lat_p90_us" => "p90 latency (µs)",
        "lat_p99_us" => "p99 latency (µs)",
        "lat_p999_us" => "p99.9 latency (µs)",
        "lat_p9999_us" => "p99.99 latency (µs)",
        "qd_achieved" => "achieved queue depth",
        "errors" => "errors",
        "mbit_s" => "Mbit/s",
        "tx_mbit_s" => "sent Mbit/s",
        "rx_mbit_s" => "received Mbit/s",
        "sent_mbit_s" => "written Mbit/s",
        "conns" => "connections",
        "connect_s" => "connect time (s)",
        "conn_mbit_s_min" => "slowest connection (Mbit/s)",
        "conn_mbit_s_max" => "fastest connection (Mbit/s)",
        "fairness" => "fairness (Jain)",
        "retransmits" => "retransmits",
        "srtt_us" => "smoothed RTT (µs)",
        "trans_s" => "transactions/s",
        "latency_one_way_us" => "one-way latency (µs)",
        "rtt_mean_us" => "mean round trip (µs)",
        "rtt_p50_us" => "p50 round trip (µs)",
        "rtt_p90_us" => "p90 round trip (µs)",
        "rtt_p99_us" => "p99 round trip (µs)",
        "rtt_p999_us" => "p99.9 round trip (µs)",
        "rtt_max_us" => "max round trip (µs)",
        "cpu_pct" => "CPU %",
        "cpu_user_pct" => "user CPU %",
        "cpu_system_pct" => "system CPU %",
        "cpu_irq_pct" => "irq CPU %",
        "cpu_softirq_pct" => "softirq CPU %",
        "cpu_iowait_pct" => "iowait %",
        "cpu_steal_pct" => "steal %",
        "cpu_self_pct" => "iotoll's own CPU %",
        "cpu_others_pct" => "other processes' CPU %",
        "interrupts_s" => "interrupts/s",
        "ctx_switches_s" => "context switches/s",
        "cpus" => "CPUs",
        "cpu_nominal_mhz" => "nominal clock (MHz)",
        "remote_cpu_pct" => "remote CPU %",
        "remote_cpus" => "remote CPUs",
        "iops_per_cpu_pct" => "IOPS per % CPU",
        "mb_s_per_cpu_pct" => "MB/s per % CPU",
        "mbit_s_per_cpu_pct" => "Mbit/s per % CPU",
        "remote_mbit_s_per_cpu_pct" => "Mbit/s per % remote CPU",
        "cpu_us_per_io" => "CPU µs per I/O",
        "cpu_us_per_kb" => "CPU µs per KB",
        "cpu_us_per_trans" => "CPU µs per transaction",
        "cycles_per_io" => "cycles per I/O",
        "cycles_per_byte" => "cycles per byte",
        _ => return None,
    })
}

/// `human_label`, or for a `remote_` metric "remote " and its local label,
/// or else the canonical name itself.
pub fn label(name: &str) -> String {
    if let Some(l) = human_label(name) {
        return l.to_string();
    }
    if let Some(l) = name.strip_prefix("remote_").and_then(human_label) {
        return format!("remote {l}");
    }
    name.to_string()
}

fn get(m: &Metrics, k: &str) -> Option<f64> {
    m.get(k).copied().filter(|v| v.is_finite())
}

fn put(m: &mut Metrics, k: &str, v: Option<f64>) {
    if let Some(v) = v.filter(|v| v.is_finite()) {
        m.entry(k.to_string()).or_insert(v);
    }
}

/// `a / b` when both exist and `b` is strictly positive.
fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

/// Computes every derived metric whose inputs are present: efficiency
/// (`*_per_cpu_pct`), service demand (`cpu_us_per_*`), cycles, one-way
/// latency and `mib_s`. Values already present are kept (a measured value wins
/// over a derived one). Missing inputs or a zero denominator leave the metric
/// absent.
pub fn derive_metrics(m: &mut Metrics) {
    let cpu = get(m, CPU_PCT);
    let mb_s = get(m, MB_S);
    let mbit_s = get(m, MBIT_S);
    let iops = get(m, IOPS);
    let trans_s = get(m, TRANS_S);

    put(m, MIB_S, mb_s.map(|v| v * 1e6 / 1048576.0));
    put(m, IOPS_PER_CPU_PCT, ratio(iops, cpu));
    put(m, MB_S_PER_CPU_PCT, ratio(mb_s, cpu));
    put(m, MBIT_S_PER_CPU_PCT, ratio(mbit_s, cpu));
    put(
        m,
        REMOTE_MBIT_S_PER_CPU_PCT,
        ratio(mbit_s, get(m, REMOTE_CPU_PCT)),
    );

    // Busy CPU-seconds of the whole host per second of window.
    let busy_cpu_s_per_s = match (cpu, get(m, CPUS)) {
        (Some(c), Some(n)) if n > 0.0 => Some(c / 100.0 * n),
        _ => None,
    };
    // Payload bytes per second: network goodput if this is a network result.
    let bytes_s = mbit_s.map(|v| v * 1e6 / 8.0).or(mb_s.map(|v| v * 1e6));
    let us = busy_cpu_s_per_s.map(|b| b * 1e6);
    put(m, CPU_US_PER_IO, ratio(us, iops));
    put(m, CPU_US_PER_KB, ratio(us, bytes_s.map(|b| b / 1024.0)));
    put(m, CPU_US_PER_TRANS, ratio(us, trans_s));

    let cycles_s = match (busy_cpu_s_per_s, get(m, CPU_NOMINAL_MHZ)) {
        (Some(b), Some(mhz)) if mhz > 0.0 => Some(b * mhz * 1e6),
        _ => None,
    };
    put(m, CYCLES_PER_IO, ratio(cycles_s, iops));
    put(m, CYCLES_PER_BYTE, ratio(cycles_s, bytes_s));

    let per_conn = ratio(trans_s, get(m, CONNS));
    put(
        m,
        LATENCY_ONE_WAY_US,
        ratio(Some(1e6), per_conn).map(|v| v / 2.0),
    );
}

/// The metrics `derive_metrics` computes.
pub const DERIVED: &[&str] = &[
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

/// Recomputes every derived metric from the measured values now in `m`,
/// replacing what was there: for values that were combined (a mean over
/// repetitions), whose ratios must be the ratio of the means, not the mean
/// of the ratios. A derived value whose inputs are absent is kept (a
/// published table may state an index without its inputs).
pub fn rederive_metrics(m: &mut Metrics) {
    let mut fresh = m.clone();
    for k in DERIVED {
        fresh.remove(*k);
    }
    derive_metrics(&mut fresh);
    for k in DERIVED {
        if let Some(v) = fresh.get(*k) {
            m.insert(k.to_string(), *v);
        }
    }
}

#[cfg(test)]
mod tests {
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

    fn m(pairs: &[(&str, f64)]) -> Metrics {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
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
    fn derived_list_is_what_derive_metrics_makes() {
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
        let mut made: Vec<&str> = x
            .keys()
            .filter(|k| !before.contains(k))
            .map(String::as_str)
            .collect();
        let mut want = DERIVED.to_vec();
        made.sort();
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
    fn every_registered_metric_has_a_human_label() {
        for m in METRICS {
            assert!(
                human_label(m.name).is_some(),
                "{} has no human label",
                m.name
            );
        }
        assert_eq!(label("iops_per_cpu_pct"), "IOPS per % CPU");
        assert_eq!(label("remote_cpu_user_pct"), "remote user CPU %");
        assert_eq!(label("no_such_metric"), "no_such_metric");
    }
}
