//! Response-time histograms (HDR, nanoseconds) and their report.

use hdrhistogram::Histogram;
use iotoll_model::{metrics::metric_def, LatencyReport, Metrics};

/// The percentiles a result reports: key in the latency section, metric
/// name part, quantile.
const PERCENTILES: [(&str, &str, f64); 5] = [
    ("50", "p50", 0.5),
    ("90", "p90", 0.9),
    ("99", "p99", 0.99),
    ("99.9", "p999", 0.999),
    ("99.99", "p9999", 0.9999),
];

fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

/// A histogram from 1 ns to 1 hour at 3 significant digits.
pub fn new_histogram() -> Histogram<u64> {
    // Constant bounds that hdrhistogram accepts.
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid histogram bounds")
}

/// The latency section of a result document, in microseconds; None when
/// nothing was recorded.
pub fn latency_report(h: &Histogram<u64>) -> Option<LatencyReport> {
    if h.is_empty() {
        return None;
    }
    let percentiles_us = PERCENTILES
        .iter()
        .map(|(k, _, q)| (k.to_string(), us(h.value_at_quantile(*q))))
        .collect();
    // Logarithmic buckets from 1 us, 25 % wide: compact, and fine enough to chart.
    let histogram = h
        .iter_log(1000, 1.25)
        .filter(|v| v.count_since_last_iteration() > 0)
        .map(|v| {
            [
                us(v.value_iterated_to()),
                v.count_since_last_iteration() as f64,
            ]
        })
        .collect();
    Some(LatencyReport {
        count: h.len(),
        min_us: us(h.min()),
        max_us: us(h.max()),
        mean_us: h.mean() / 1000.0,
        stdev_us: h.stdev() / 1000.0,
        percentiles_us,
        histogram,
    })
}

/// Writes a histogram's mean, extremes and percentiles as the metrics
/// `{prefix}_{mean,min,max,p50,...}_us` the registry defines (disk has
/// `lat_*`, request/response `rtt_*`); nothing when it is empty.
pub fn write_latency_metrics(h: &Histogram<u64>, prefix: &str, m: &mut Metrics) {
    if h.is_empty() {
        return;
    }
    let stats = [
        ("mean", h.mean() / 1000.0),
        ("min", us(h.min())),
        ("max", us(h.max())),
    ];
    let percentiles = PERCENTILES
        .iter()
        .map(|(_, name, q)| (*name, us(h.value_at_quantile(*q))));
    for (what, v) in stats.into_iter().chain(percentiles) {
        if let Some(def) = metric_def(&format!("{prefix}_{what}_us")) {
            m.insert(def.name.to_string(), v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_matches_recorded_values() {
        let mut h = new_histogram();
        assert!(latency_report(&h).is_none());
        for v in [10_000u64, 20_000, 30_000, 40_000] {
            h.record(v).unwrap();
        }
        let r = latency_report(&h).unwrap();
        assert_eq!(r.count, 4);
        assert!((r.mean_us - 25.0).abs() < 0.05);
        assert!((r.min_us - 10.0).abs() < 0.01);
        assert!((r.max_us - 40.0).abs() < 0.05);
        let total: f64 = r.histogram.iter().map(|b| b[1]).sum();
        assert_eq!(total, 4.0);
        assert!((r.percentiles_us["50"] - 20.0).abs() < 0.05);
        let mut m = Metrics::new();
        write_latency_metrics(&h, "rtt", &mut m);
        let names: Vec<&str> = m.keys().map(String::as_str).collect();
        // Only what the registry defines: round trips have no min or p99.99.
        assert_eq!(
            names,
            [
                "rtt_max_us",
                "rtt_mean_us",
                "rtt_p50_us",
                "rtt_p90_us",
                "rtt_p999_us",
                "rtt_p99_us"
            ]
        );
        assert_eq!(m["rtt_mean_us"], r.mean_us);
        write_latency_metrics(&h, "lat", &mut m);
        assert_eq!(m.len(), 6 + 8);
        assert_eq!(m["lat_p50_us"], r.percentiles_us["50"]);
    }
}
