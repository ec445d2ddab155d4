//! Request/response across hosts: each pair's transactions and round
//! trips from its client's report, checked, and the totals' percentiles
//! from the pairs' histograms merged (a percentile of percentiles is not
//! a percentile of the transactions).

use super::{Console, Part};
use crate::histwire;
use hdrhistogram::Histogram;
use iotoll_model::metrics as mn;
use iotoll_model::{Metrics, PairFigures};
use iotoll_run::{new_histogram, write_latency_metrics};

/// Each pair's transactions and round trips, in the pairs' order.
pub(super) type PairRtts = Vec<(u64, Histogram<u64>)>;

impl Console {
    /// Every pair's round trips from its client's report: each pair
    /// reported once, by the host that is its client, its histogram well
    /// formed and holding its transactions.
    pub(super) fn pair_rtts(
        &self,
        parts: &[Part],
        pairs: usize,
    ) -> Result<PairRtts, super::ConsoleError> {
        let mut got: Vec<Option<(u64, Histogram<u64>)>> = vec![None; pairs];
        for p in parts {
            let mine = p.work.slots().1;
            let Some(r) = &p.report else { continue };
            let host = self.hosts[p.host].name.as_str();
            let err = |m: String| super::ConsoleError::host_err(host, m);
            for rr in &r.rr {
                // Pairs are numbered from 1 in what users read.
                let k = u64::from(rr.pair) + 1;
                let slot = (got.get_mut(rr.pair as usize))
                    .filter(|_| mine.iter().any(|s| s.pair == rr.pair))
                    .ok_or_else(|| {
                        err(format!(
                            "it reported round trips of pair {k}, which it is not the client of"
                        ))
                    })?;
                if slot.is_some() {
                    return Err(err(format!("it reported pair {k}'s round trips twice")));
                }
                let h = histwire::decode(&rr.rtt_hist, rr.transactions)
                    .map_err(|m| err(format!("pair {k}: {m}")))?;
                *slot = Some((rr.transactions, h));
            }
        }
        (got.into_iter().enumerate())
            .map(|(k, g)| {
                g.ok_or_else(|| {
                    super::ConsoleError::Invalid(format!(
                        "pair {} has no round trips in its client's report",
                        k + 1
                    ))
                })
            })
            .collect()
    }
}

/// Writes each pair's transactions/s and percentiles into its figures,
/// and the test's: transactions added up, percentiles of the merged
/// histogram. `window_s` is each pair's client window.
pub(super) fn write(rtts: &PairRtts, window_s: &[f64], pairs: &mut [PairFigures], m: &mut Metrics) {
    let mut all = new_histogram();
    let mut trans_s = 0.0;
    for ((k, (n, h)), p) in rtts.iter().enumerate().zip(pairs.iter_mut()) {
        let rate = crate::per_s(*n as f64, window_s.get(k).copied().unwrap_or(0.0));
        trans_s += rate;
        p.transactions = Some(*n);
        p.metrics.insert(mn::TRANS_S.into(), rate);
        write_latency_metrics(h, "rtt", &mut p.metrics);
        // Same bounds on both: adding cannot fail.
        let _ = all.add(h);
    }
    m.insert(mn::TRANS_S.into(), trans_s);
    write_latency_metrics(&all, "rtt", m);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two pairs whose merged p99 is not the mean of their p99s: a slow
    /// pair with few transactions and a fast one with many.
    #[test]
    fn totals_are_merged_not_averaged() {
        let mut fast = new_histogram();
        fast.record_n(10_000, 9_800).unwrap();
        fast.record_n(20_000, 200).unwrap();
        let mut slow = new_histogram();
        slow.record_n(1_000_000, 100).unwrap();
        let rtts = vec![(10_000, fast), (100, slow)];
        let mut pairs = vec![PairFigures::default(), PairFigures::default()];
        let mut m = Metrics::new();
        write(&rtts, &[1.0, 1.0], &mut pairs, &mut m);
        let p99 = |m: &Metrics| m[mn::RTT_P99_US];
        let (a, b) = (p99(&pairs[0].metrics), p99(&pairs[1].metrics));
        let total = p99(&m);
        assert!(
            (a - 20.0).abs() < 0.1 && (b - 1000.0).abs() < 1.0,
            "{a} {b}"
        );
        // Of 10,100 transactions, 100 took 1 ms: the 99th percentile is
        // 20 us (10,000 at or under it), far from the pairs' mean of 510 us.
        let averaged = (a + b) / 2.0;
        assert!((total - 20.0).abs() < 0.1, "{total}");
        assert!((total - averaged).abs() > 400.0);
        assert!(total >= a.min(b) && total <= a.max(b));
        assert_eq!(m[mn::TRANS_S], 10_100.0);
        assert_eq!(pairs[1].transactions, Some(100));
    }
}
