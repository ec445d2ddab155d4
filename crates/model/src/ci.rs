//! The 95 % confidence interval of a test's selected metric over its
//! repetitions (Student t), as studies publish it beside the figure.

use crate::Kind;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Repetitions needed before an interval is given: with two, t(0.975, 1)
/// = 12.7 makes the interval wider than anything it could tell.
pub const CI_MIN_REPS: usize = 3;

/// A 95 % confidence interval of the mean of `metric` over a test's
/// repetitions: `mean ± t(0.975, n - 1) × s / √n`, `s` the sample
/// standard deviation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Ci95 {
    /// The metric the test is selected by.
    pub metric: String,
    /// Repetitions that have it.
    pub n: u32,
    pub mean: f64,
    /// `t × s / √n`: the interval is `mean ± half_width`.
    pub half_width: f64,
    pub low: f64,
    pub high: f64,
    /// The Student t quantile used (0.975, n - 1 degrees of freedom).
    pub t: f64,
}

/// Two-sided 95 % Student t quantiles t(0.975, df) for df 1..=30.
const T_975: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
    2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
    2.052, 2.048, 2.045, 2.042,
];

/// Beyond 30 degrees of freedom, the table's rows at 40, 60 and 120; a df
/// between two rows takes the lower row's (larger) quantile, so the
/// interval is never narrower than the exact one.
const T_975_LARGE: [(u32, f64); 3] = [(40, 2.021), (60, 2.000), (120, 1.980)];

/// t(0.975, df); None for df 0.
pub fn t_975(df: u32) -> Option<f64> {
    match df {
        0 => None,
        1..=30 => Some(T_975[df as usize - 1]),
        _ => Some(
            T_975_LARGE
                .iter()
                .rev()
                .find(|(d, _)| df >= *d)
                .map_or(T_975[29], |(_, t)| *t),
        ),
    }
}

impl Ci95 {
    /// The interval of `values` (the finite ones); None with fewer than
    /// [`CI_MIN_REPS`].
    pub fn of(metric: &str, values: impl IntoIterator<Item = f64>) -> Option<Ci95> {
        let v: Vec<f64> = values.into_iter().filter(|v| v.is_finite()).collect();
        if v.len() < CI_MIN_REPS {
            return None;
        }
        let n = v.len() as f64;
        let mean = v.iter().sum::<f64>() / n;
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
        let t = t_975(v.len() as u32 - 1)?;
        let half_width = t * var.sqrt() / n.sqrt();
        Some(Ci95 {
            metric: metric.to_string(),
            n: v.len() as u32,
            mean,
            half_width,
            low: mean - half_width,
            high: mean + half_width,
            t,
        })
    }

    /// Half the interval as % of the mean; None for a mean of 0.
    pub fn relative_pct(&self) -> Option<f64> {
        (self.mean != 0.0).then(|| self.half_width / self.mean.abs() * 100.0)
    }

    /// What to say beside an interval of a figure that cannot be negative
    /// (a rate, a CPU %) when it reaches below zero: the repetitions are
    /// too far apart for the Student t interval to mean anything (it
    /// assumes a normal spread, which three figures of 1,600 to 7,000 are
    /// not).
    pub fn caveat(&self) -> Option<&'static str> {
        (self.low < 0.0 && self.mean >= 0.0).then_some(
            "below zero: the repetitions are too far apart for this interval to mean anything",
        )
    }
}

/// The metric a stored selection rule (`median:METRIC`, `mean`, `all`)
/// judges a test of `kind` by: the named one, else the kind's headline.
pub fn rule_metric(rule: &str, kind: Kind) -> &str {
    rule.strip_prefix("median:")
        .filter(|m| !m.is_empty())
        .unwrap_or(kind.headline())
}

/// A disk test's throughput in Mbit/s, where its suite asks for it
/// (`unit = "mbit_s"`, stored as its parameter `unit`): the label a
/// MB/s-based metric is shown under and the factor its value takes (MB/s
/// and Mbit/s are both decimal: × 8, exactly). None for any other metric.
pub fn disk_mbit(metric: &str) -> Option<(&'static str, f64)> {
    use crate::metrics as mn;
    let label = match metric {
        mn::MB_S => "Mbit/s",
        mn::READ_MB_S => "read Mbit/s",
        mn::WRITE_MB_S => "write Mbit/s",
        mn::MB_S_PER_CPU_PCT => "Mbit/s per % CPU",
        _ => return None,
    };
    Some((label, 8.0))
}

/// The suite key `unit`: disk throughput in MB/s (the default) or in
/// Mbit/s (MB/s × 8, as study 003 publishes it).
pub const DISK_UNIT_MB_S: &str = "mb_s";
pub const DISK_UNIT_MBIT_S: &str = "mbit_s";
/// The parameter a disk test's `unit = "mbit_s"` is stored as.
pub const UNIT_PARAM: &str = "unit";

/// Whether a stored test's parameters ask for disk throughput in Mbit/s.
pub fn wants_mbit(kind: Kind, params: &serde_json::Value) -> bool {
    kind == Kind::Disk && params.get(UNIT_PARAM).and_then(|u| u.as_str()) == Some(DISK_UNIT_MBIT_S)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_quantiles_match_the_table() {
        // Student t, two-sided 95 % (any statistics table).
        for (df, want) in [
            (1, 12.706),
            (2, 4.303),
            (3, 3.182),
            (4, 2.776),
            (5, 2.571),
            (9, 2.262),
            (10, 2.228),
            (19, 2.093),
            (29, 2.045),
            (30, 2.042),
            (40, 2.021),
            (60, 2.000),
            (120, 1.980),
        ] {
            assert_eq!(t_975(df), Some(want), "df {df}");
        }
        assert_eq!(t_975(0), None);
        // Between rows: the lower row's, never narrower than exact.
        assert_eq!(t_975(45), Some(2.021));
        assert_eq!(t_975(1000), Some(1.980));
        // Decreasing with df.
        let all: Vec<f64> = (1..200).map(|d| t_975(d).unwrap()).collect();
        assert!(all.windows(2).all(|w| w[1] <= w[0]), "{all:?}");
    }

    #[test]
    fn interval_is_its_formula() {
        // 10, 12, 14: mean 12, s = 2, half = 4.303 * 2 / sqrt 3.
        let c = Ci95::of("iops", [10.0, 12.0, 14.0]).unwrap();
        assert_eq!(c.n, 3);
        assert!((c.mean - 12.0).abs() < 1e-12);
        let half = 4.303 * 2.0 / 3f64.sqrt();
        assert!((c.half_width - half).abs() < 1e-12, "{c:?}");
        assert!((c.low - (12.0 - half)).abs() < 1e-12);
        assert!((c.high - (12.0 + half)).abs() < 1e-12);
        assert_eq!(c.t, 4.303);
        // Five equal values: an interval of width 0, still given.
        let c = Ci95::of("mb_s", [5.0; 5]).unwrap();
        assert_eq!((c.low, c.high, c.t), (5.0, 5.0, 2.776));
        // Fewer than three (finite) values: none.
        assert_eq!(Ci95::of("iops", [1.0, 2.0]), None);
        assert_eq!(Ci95::of("iops", [1.0, 2.0, f64::NAN]), None);
    }

    #[test]
    fn rule_metric_names_what_selects() {
        assert_eq!(rule_metric("median:mb_s", Kind::Disk), "mb_s");
        assert_eq!(rule_metric("mean", Kind::Disk), Kind::Disk.headline());
        assert_eq!(rule_metric("all", Kind::NetStream), "mbit_s");
    }

    /// Three rates of 1,600, 4,000 and 7,000 give an interval from below
    /// zero (seen: "Mbit/s -1,663 – 10,115"): it is said to mean nothing.
    #[test]
    fn an_interval_below_zero_of_a_rate_is_said_to_mean_nothing() {
        let c = Ci95::of("mbit_s", [1600.0, 4000.0, 7000.0]).unwrap();
        assert!(c.low < 0.0);
        assert!(c.caveat().is_some());
        let tight = Ci95::of("mbit_s", [990.0, 1000.0, 1010.0]).unwrap();
        assert_eq!(tight.caveat(), None);
    }
}
