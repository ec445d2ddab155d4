//! Which repetition represents a test, and whether its repetitions agree.

use iotoll_model::metrics as mn;
use iotoll_model::units::format_number;
use iotoll_model::Metrics;

/// Whole-host CPU figures that differ by at most this many points agree,
/// whatever their ratio: below ~20 % busy, tick sampling and the host's own
/// daemons move the figure by about a point, and 0.5 % vs 1.0 % is no
/// evidence of a different run.
pub const CPU_FLOOR_POINTS: f64 = 1.0;

#[derive(Debug, Clone, PartialEq)]
pub enum Rule {
    /// Keep the whole repetition whose METRIC is the median (the classic
    /// studies' method). With an even count, the lower of the two middle ones.
    Median(String),
    /// Average every metric over the repetitions.
    Mean,
    /// Keep them all; nothing is selected.
    All,
}

impl Rule {
    /// `median:METRIC`, `median` (with the kind's default metric), `mean`, `all`.
    pub fn parse(s: &str, default_metric: &str) -> Result<Rule, String> {
        match s.trim() {
            "mean" => Ok(Rule::Mean),
            "all" => Ok(Rule::All),
            "median" => Ok(Rule::Median(default_metric.to_string())),
            other => match other.strip_prefix("median:") {
                Some(m) if iotoll_model::metrics::metric_def(m).is_some() => {
                    Ok(Rule::Median(m.to_string()))
                }
                Some(m) => Err(iotoll_model::metrics::unknown_metric(m)),
                None => Err(format!(
                    "select = '{other}': use median:METRIC, mean or all"
                )),
            },
        }
    }

    pub fn label(&self) -> String {
        match self {
            Rule::Median(m) => format!("median:{m}"),
            Rule::Mean => "mean".into(),
            Rule::All => "all".into(),
        }
    }
}

/// What a test's repetitions come down to.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Selected {
    /// Index into the repetitions of the one kept (median rule).
    pub index: Option<usize>,
    /// The metrics that represent the test (None for `all`).
    pub metrics: Option<Metrics>,
    /// (max - min) / median of `metric` over the repetitions, %; None with
    /// fewer than two.
    pub spread_pct: Option<f64>,
    /// The same for `cpu_pct`.
    pub cpu_spread_pct: Option<f64>,
    /// What disagreed beyond the repeatability limit, e.g.
    /// `cpu_pct 5.7 to 93.7 % ...`; empty when the repetitions agree.
    pub disagree: Vec<String>,
}

/// (max - min) / median %, min, max, median of `metric` over the reps that
/// have it; None with fewer than two or a median that is not positive.
fn spread(reps: &[&Metrics], metric: &str) -> Option<(f64, f64, f64, f64)> {
    let mut v: Vec<f64> = reps
        .iter()
        .filter_map(|m| m.get(metric).copied().filter(|v| v.is_finite()))
        .collect();
    v.sort_by(f64::total_cmp);
    let (lo, hi, med) = (*v.first()?, *v.last()?, v[(v.len() - 1) / 2]);
    (v.len() >= 2 && med > 0.0).then(|| ((hi - lo) / med * 100.0, lo, hi, med))
}

/// Whether the repetitions agree within `limit_pct`: the headline `metric`
/// by its spread, and whole-host `cpu_pct` by its spread or, for small CPU
/// figures, within [`CPU_FLOOR_POINTS`]. None when neither can be judged
/// (fewer than two repetitions with the metrics). Returns the verdict and
/// what disagreed.
pub fn agreement(reps: &[&Metrics], metric: &str, limit_pct: f64) -> (Option<bool>, Vec<String>) {
    let mut disagree = Vec::new();
    let head = spread(reps, metric).map(|(s, lo, hi, _)| {
        let ok = s <= limit_pct;
        if !ok {
            disagree.push(format!(
                "{metric} spread {s:.1} % > {limit_pct} % ({} to {})",
                format_number(lo),
                format_number(hi)
            ));
        }
        ok
    });
    let cpu = if metric == mn::CPU_PCT {
        None
    } else {
        spread(reps, mn::CPU_PCT).map(|(s, lo, hi, med)| {
            let ok = hi - lo <= (limit_pct / 100.0 * med).max(CPU_FLOOR_POINTS);
            if !ok {
                disagree.push(format!(
                    "cpu_pct spread {s:.1} % > {limit_pct} % ({lo:.1} to {hi:.1} % of the host, more than {CPU_FLOOR_POINTS} point apart)"
                ));
            }
            ok
        })
    };
    let verdict = match (head, cpu) {
        (None, None) => None,
        (h, c) => Some(h.unwrap_or(true) && c.unwrap_or(true)),
    };
    (verdict, disagree)
}

/// Applies `rule` to the repetitions' metrics; `metric` is the one the
/// spread is computed on.
pub fn select(reps: &[&Metrics], rule: &Rule, metric: &str) -> Selected {
    let mut sorted: Vec<(usize, f64)> = (reps.iter().enumerate())
        .filter_map(|(i, m)| Some((i, m.get(metric).copied().filter(|v| v.is_finite())?)))
        .collect();
    sorted.sort_by(|a, b| a.1.total_cmp(&b.1));
    let median = (!sorted.is_empty()).then(|| sorted[(sorted.len() - 1) / 2].0);
    let (index, metrics) = match rule {
        Rule::Median(_) => (median, median.map(|i| reps[i].clone())),
        Rule::Mean => (None, Some(mean(reps))),
        Rule::All => (None, None),
    };
    Selected {
        index,
        metrics,
        // A spread needs at least two repetitions.
        spread_pct: spread(reps, metric).map(|s| s.0),
        cpu_spread_pct: spread(reps, mn::CPU_PCT).map(|s| s.0),
        disagree: Vec::new(),
    }
}

/// Like [`select`], but a repetition marked in `interfered` (other
/// processes used the host's CPU in its window) is chosen or averaged only
/// when no clean one exists; the spreads still cover every repetition.
pub fn select_clean(reps: &[&Metrics], interfered: &[bool], rule: &Rule, metric: &str) -> Selected {
    let clean: Vec<usize> = (0..reps.len())
        .filter(|i| !interfered.get(*i).copied().unwrap_or(false))
        .collect();
    let all = select(reps, rule, metric);
    if clean.is_empty() || clean.len() == reps.len() {
        return all;
    }
    let kept: Vec<&Metrics> = clean.iter().map(|i| reps[*i]).collect();
    let sel = select(&kept, rule, metric);
    Selected {
        index: sel.index.map(|i| clean[i]),
        metrics: sel.metrics,
        ..all
    }
}

/// Every metric averaged over the repetitions that have it; then every
/// derived metric (efficiency, service demand, one-way latency) is computed
/// again from the means, since a mean of ratios is not the ratio of means.
pub fn mean(reps: &[&Metrics]) -> Metrics {
    let mut sum: Metrics = Metrics::new();
    let mut n: std::collections::BTreeMap<String, f64> = Default::default();
    for m in reps {
        for (k, v) in m.iter().filter(|(_, v)| v.is_finite()) {
            *sum.entry(k.clone()).or_insert(0.0) += v;
            *n.entry(k.clone()).or_insert(0.0) += 1.0;
        }
    }
    for (k, v) in sum.iter_mut() {
        *v /= n[k];
    }
    iotoll_model::rederive_metrics(&mut sum);
    sum
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn m(iops: f64, cpu: f64) -> Metrics {
        [("iops".to_string(), iops), ("cpu_pct".to_string(), cpu)]
            .into_iter()
            .collect()
    }

    #[test]
    fn rules_parse() {
        assert_eq!(
            Rule::parse("median:iops", "x").unwrap(),
            Rule::Median("iops".into())
        );
        assert_eq!(
            Rule::parse("median", "mb_s").unwrap(),
            Rule::Median("mb_s".into())
        );
        assert_eq!(Rule::parse("mean", "x").unwrap(), Rule::Mean);
        assert!(Rule::parse("median:nonsense", "x").is_err());
        assert!(Rule::parse("best", "x").is_err());
    }

    #[test]
    fn median_keeps_the_whole_repetition() {
        let reps = [m(100.0, 5.0), m(300.0, 9.0), m(200.0, 7.0)];
        let r: Vec<&Metrics> = reps.iter().collect();
        let s = select(&r, &Rule::Median("iops".into()), "iops");
        assert_eq!(s.index, Some(2));
        assert_eq!(
            s.metrics.unwrap()["cpu_pct"],
            7.0,
            "the median rep's own CPU"
        );
        assert!((s.spread_pct.unwrap() - 100.0).abs() < 1e-9);
    }

    #[test]
    fn mean_rederives_efficiency() {
        // The reported case: 992 Mbit/s at 49.7 % CPU must read 20.0 Mbit/s
        // per % CPU, not the mean of the repetitions' ratios.
        let rep = |mbit: f64, cpu: f64| -> Metrics {
            let mut x: Metrics = [
                (mn::MBIT_S.to_string(), mbit),
                (mn::CPU_PCT.to_string(), cpu),
                (mn::CPUS.to_string(), 2.0),
            ]
            .into_iter()
            .collect();
            iotoll_model::derive_metrics(&mut x);
            x
        };
        let reps = [rep(990.0, 5.7), rep(994.0, 93.7)];
        let r: Vec<&Metrics> = reps.iter().collect();
        let got = select(&r, &Rule::Mean, mn::MBIT_S).metrics.unwrap();
        assert!((got[mn::MBIT_S] - 992.0).abs() < 1e-9);
        assert!((got[mn::CPU_PCT] - 49.7).abs() < 1e-9);
        assert!((got[mn::MBIT_S_PER_CPU_PCT] - 992.0 / 49.7).abs() < 1e-9);
    }

    #[test]
    fn cpu_must_agree_too() {
        // The reported case: the headline agrees (0.2 %), CPU does not.
        let reps = [m(1000.0, 93.7), m(1002.0, 5.7)];
        let r: Vec<&Metrics> = reps.iter().collect();
        let (ok, why) = agreement(&r, "iops", 5.0);
        assert_eq!(ok, Some(false));
        assert_eq!(why.len(), 1, "{why:?}");
        assert!(why[0].starts_with("cpu_pct"), "{why:?}");
        // Small CPU figures within a point agree, though 100 % apart.
        let reps = [m(1000.0, 0.5), m(1002.0, 1.0)];
        let r: Vec<&Metrics> = reps.iter().collect();
        assert_eq!(agreement(&r, "iops", 5.0), (Some(true), vec![]));
        // Both disagree: both named.
        let reps = [m(1000.0, 10.0), m(2000.0, 40.0)];
        let r: Vec<&Metrics> = reps.iter().collect();
        let (ok, why) = agreement(&r, "iops", 5.0);
        assert_eq!(ok, Some(false));
        assert!(why[0].starts_with("iops") && why[1].starts_with("cpu_pct"));
    }

    #[test]
    fn clean_repetitions_are_preferred() {
        let reps = [m(100.0, 90.0), m(300.0, 9.0), m(200.0, 7.0)];
        let r: Vec<&Metrics> = reps.iter().collect();
        let rule = Rule::Median("iops".into());
        // Without interference the median is rep 3 (index 2).
        assert_eq!(select_clean(&r, &[false; 3], &rule, "iops").index, Some(2));
        // Rep 3 interfered: the median of the clean ones (100, 300 -> lower middle).
        let s = select_clean(&r, &[false, false, true], &rule, "iops");
        assert_eq!(s.index, Some(0));
        // The spread still covers all three.
        assert!((s.spread_pct.unwrap() - 100.0).abs() < 1e-9);
        let mean = select_clean(&r, &[true, false, false], &Rule::Mean, "iops");
        assert_eq!(mean.metrics.unwrap()["iops"], 250.0);
        // All interfered: chosen among all.
        assert_eq!(select_clean(&r, &[true; 3], &rule, "iops").index, Some(2));
    }

    proptest! {
        #[test]
        fn mean_efficiency_is_mean_value_over_mean_cpu(
            reps in prop::collection::vec((1.0f64..1e6, 0.1f64..100.0), 1..8)
        ) {
            let ms: Vec<Metrics> = reps.iter().map(|(v, c)| {
                let mut x: Metrics = [
                    (mn::IOPS.to_string(), *v),
                    (mn::MBIT_S.to_string(), *v / 10.0),
                    (mn::TRANS_S.to_string(), *v),
                    (mn::CONNS.to_string(), 2.0),
                    (mn::CPU_PCT.to_string(), *c),
                    (mn::CPUS.to_string(), 2.0),
                ].into_iter().collect();
                iotoll_model::derive_metrics(&mut x);
                x
            }).collect();
            let r: Vec<&Metrics> = ms.iter().collect();
            let got = select(&r, &Rule::Mean, "iops").metrics.unwrap();
            let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs().max(1.0);
            prop_assert!(close(got[mn::IOPS_PER_CPU_PCT], got[mn::IOPS] / got[mn::CPU_PCT]));
            prop_assert!(close(got[mn::MBIT_S_PER_CPU_PCT], got[mn::MBIT_S] / got[mn::CPU_PCT]));
            prop_assert!(close(
                got[mn::CPU_US_PER_TRANS],
                got[mn::CPU_PCT] / 100.0 * 2.0 * 1e6 / got[mn::TRANS_S]
            ));
            prop_assert!(close(got[mn::LATENCY_ONE_WAY_US], 1e6 / (got[mn::TRANS_S] / 2.0) / 2.0));
        }

        #[test]
        fn median_is_the_median(vals in prop::collection::vec(1.0f64..1e6, 1..12)) {
            let reps: Vec<Metrics> = vals.iter().map(|v| m(*v, 1.0)).collect();
            let r: Vec<&Metrics> = reps.iter().collect();
            let s = select(&r, &Rule::Median("iops".into()), "iops");
            let chosen = vals[s.index.unwrap()];
            let below = vals.iter().filter(|v| **v < chosen).count();
            let above = vals.iter().filter(|v| **v > chosen).count();
            // At most half strictly on either side (lower-middle for even counts).
            prop_assert!(below <= vals.len() / 2 && above <= vals.len() / 2, "{vals:?} chose {chosen}");
            prop_assert!(below <= (vals.len() - 1) / 2);
        }

        #[test]
        fn mean_is_the_mean(vals in prop::collection::vec(0.0f64..1e6, 1..12)) {
            let reps: Vec<Metrics> = vals.iter().map(|v| m(*v, *v / 2.0)).collect();
            let r: Vec<&Metrics> = reps.iter().collect();
            let s = select(&r, &Rule::Mean, "iops");
            let want = vals.iter().sum::<f64>() / vals.len() as f64;
            let got = s.metrics.unwrap();
            prop_assert!((got["iops"] - want).abs() <= 1e-9 * want.max(1.0));
            prop_assert!((got["cpu_pct"] - want / 2.0).abs() <= 1e-9 * want.max(1.0));
        }

        #[test]
        fn spread_is_range_over_median(vals in prop::collection::vec(1.0f64..1e6, 2..12)) {
            let reps: Vec<Metrics> = vals.iter().map(|v| m(*v, 1.0)).collect();
            let r: Vec<&Metrics> = reps.iter().collect();
            let s = select(&r, &Rule::All, "iops");
            let mut v = vals.clone();
            v.sort_by(f64::total_cmp);
            let want = (v[v.len() - 1] - v[0]) / v[(v.len() - 1) / 2] * 100.0;
            prop_assert!((s.spread_pct.unwrap() - want).abs() < 1e-6 * want.max(1.0));
        }
    }
}
