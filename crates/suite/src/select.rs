//! Which repetition represents a test, and whether its repetitions agree.

use iotoll_model::Metrics;

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
                Some(m) => Err(format!("'{m}' is not a metric name (see docs/metrics.md)")),
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
#[derive(Debug, Clone, PartialEq)]
pub struct Selected {
    /// Index into the repetitions of the one kept (median rule).
    pub index: Option<usize>,
    /// The metrics that represent the test (None for `all`).
    pub metrics: Option<Metrics>,
    /// (max - min) / median of `metric` over the repetitions, %; None with
    /// fewer than two.
    pub spread_pct: Option<f64>,
}

/// Applies `rule` to the repetitions' metrics; `metric` is the one the
/// spread is computed on.
pub fn select(reps: &[&Metrics], rule: &Rule, metric: &str) -> Selected {
    let values: Vec<(usize, f64)> = reps
        .iter()
        .enumerate()
        .filter_map(|(i, m)| {
            m.get(metric)
                .copied()
                .filter(|v| v.is_finite())
                .map(|v| (i, v))
        })
        .collect();
    let mut sorted = values.clone();
    sorted.sort_by(|a, b| a.1.total_cmp(&b.1));
    let median = (!sorted.is_empty()).then(|| sorted[(sorted.len() - 1) / 2]);
    // A spread needs at least two repetitions.
    let spread_pct = match (sorted.first(), sorted.last(), median) {
        (Some(lo), Some(hi), Some((_, med))) if med > 0.0 && sorted.len() >= 2 => {
            Some((hi.1 - lo.1) / med * 100.0)
        }
        _ => None,
    };
    match rule {
        Rule::Median(_) => Selected {
            index: median.map(|(i, _)| i),
            metrics: median.map(|(i, _)| reps[i].clone()),
            spread_pct,
        },
        Rule::Mean => Selected {
            index: None,
            metrics: Some(mean(reps)),
            spread_pct,
        },
        Rule::All => Selected {
            index: None,
            metrics: None,
            spread_pct,
        },
    }
}

/// Every metric averaged over the repetitions that have it.
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

    proptest! {
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
