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

/// Two-sided Student t quantiles for df 1..=30, then at df 40, 60 and 120,
/// for the confidence levels `--confidence` takes: 90 % (t(0.95, df)),
/// 95 % (t(0.975, df)) and 99 % (t(0.995, df)), as any statistics table.
const T_TABLES: [(u32, [f64; 33]); 3] = [
    (
        90,
        [
            6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812, 1.796, 1.782,
            1.771, 1.761, 1.753, 1.746, 1.740, 1.734, 1.729, 1.725, 1.721, 1.717, 1.714, 1.711,
            1.708, 1.706, 1.703, 1.701, 1.699, 1.697, 1.684, 1.671, 1.658,
        ],
    ),
    (
        95,
        [
            12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
            2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
            2.060, 2.056, 2.052, 2.048, 2.045, 2.042, 2.021, 2.000, 1.980,
        ],
    ),
    (
        99,
        [
            63.657, 9.925, 5.841, 4.604, 4.032, 3.707, 3.499, 3.355, 3.250, 3.169, 3.106, 3.055,
            3.012, 2.977, 2.947, 2.921, 2.898, 2.878, 2.861, 2.845, 2.831, 2.819, 2.807, 2.797,
            2.787, 2.779, 2.771, 2.763, 2.756, 2.750, 2.704, 2.660, 2.617,
        ],
    ),
];

/// The degrees of freedom of the tables' last three entries.
const LARGE_DF: [u32; 3] = [40, 60, 120];

/// The confidence levels (%) there are quantiles for.
pub const LEVELS: [u32; 3] = [90, 95, 99];

/// The two-sided Student t quantile of confidence `level` % (90, 95 or 99)
/// at `df` degrees of freedom; None for df 0 or another level. Beyond 30
/// degrees of freedom a df between two rows takes the lower row's (larger)
/// quantile, so the interval is never narrower than the exact one.
pub fn t_quantile(level: u32, df: u32) -> Option<f64> {
    let (_, row) = T_TABLES.iter().find(|(l, _)| *l == level)?;
    match df {
        0 => None,
        1..=30 => Some(row[df as usize - 1]),
        _ => {
            let i = LARGE_DF.iter().rposition(|d| df >= *d);
            Some(i.map_or(row[29], |i| row[30 + i]))
        }
    }
}

/// The Student t interval at `level` % of `values` (the finite ones): their
/// count, mean, the half width and t; None with fewer than
/// [`CI_MIN_REPS`] or a level without a table.
fn student_t(level: u32, values: impl IntoIterator<Item = f64>) -> Option<(u32, f64, f64, f64)> {
    let v: Vec<f64> = values.into_iter().filter(|v| v.is_finite()).collect();
    if v.len() < CI_MIN_REPS {
        return None;
    }
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    let t = t_quantile(level, v.len() as u32 - 1)?;
    Some((v.len() as u32, mean, t * var.sqrt() / n.sqrt(), t))
}

impl Ci95 {
    /// The interval of `values` (the finite ones); None with fewer than
    /// [`CI_MIN_REPS`].
    pub fn of(metric: &str, values: impl IntoIterator<Item = f64>) -> Option<Ci95> {
        let (n, mean, half_width, t) = student_t(95, values)?;
        Some(Ci95 {
            metric: metric.to_string(),
            n,
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

/// `--confidence LEVEL,WIDTH` (suite key `confidence`): repeat a test
/// until the Student t interval of its selected metric at `level` % is at
/// most `width_pct` % of the mean wide (± half of it), as netperf's `-I`
/// and Chariot's confidence interval do.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Confidence {
    /// 90, 95 or 99.
    pub level: u32,
    /// The interval's whole width as % of the mean.
    pub width_pct: f64,
}

/// What the repetitions so far say under a [`Confidence`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Verdict {
    /// The confidence asked for: its level (%) and the interval's whole
    /// width (% of the mean).
    pub level: u32,
    pub width_pct: f64,
    /// Repetitions with a finite value of the metric.
    pub n: u32,
    pub mean: f64,
    /// The interval's half-width as % of the mean; None for a mean of 0.
    pub half_pct: Option<f64>,
    pub converged: bool,
}

impl Confidence {
    /// `95,5` (also with spaces, `%` signs, or a decimal width: `99, 2.5%`).
    pub fn parse(s: &str) -> Result<Confidence, String> {
        let bad = || {
            format!("'{s}': expected LEVEL,WIDTH, e.g. 95,5 (95 % confidence, interval 5 % of the mean wide)")
        };
        let (level, width) = s.split_once(',').ok_or_else(bad)?;
        let num = |x: &str| x.trim().trim_end_matches('%').trim().to_string();
        let level: u32 = num(level).parse().map_err(|_| bad())?;
        if !LEVELS.contains(&level) {
            return Err(format!(
                "'{s}': confidence level {level} % is not supported (90, 95 or 99)"
            ));
        }
        let width_pct: f64 = num(width).parse().map_err(|_| bad())?;
        if !(width_pct.is_finite() && width_pct > 0.0 && width_pct <= 100.0) {
            return Err(format!(
                "'{s}': the interval's width must be more than 0 and at most 100 (% of the mean)"
            ));
        }
        Ok(Confidence { level, width_pct })
    }

    /// As it is written: `95,5`.
    pub fn label(&self) -> String {
        format!("{},{}", self.level, self.width_pct)
    }

    /// Whether `values` (the finite ones) pin the mean down: with at least
    /// [`CI_MIN_REPS`] of them, `t × s / √n` is at most half the width (in
    /// % of the mean). None with fewer: no verdict yet.
    pub fn judge(&self, values: impl IntoIterator<Item = f64>) -> Option<Verdict> {
        let (n, mean, half, _) = student_t(self.level, values)?;
        let half_pct = (mean != 0.0).then(|| half / mean.abs() * 100.0);
        Some(Verdict {
            level: self.level,
            width_pct: self.width_pct,
            n,
            mean,
            half_pct,
            converged: half_pct.is_some_and(|h| h <= self.width_pct / 2.0),
        })
    }
}

impl Verdict {
    /// The run's note for test `name` under `c`, e.g. "d: converged after 3
    /// repetitions: 95 % interval ±0.4 % of the mean (wanted ±2.5 %)".
    pub fn note(&self, name: &str, c: &Confidence) -> String {
        let half = self.half_pct.map_or("undefined (mean 0)".into(), |h| {
            format!("±{h:.2} % of the mean")
        });
        format!(
            "{name}: {} after {}: {} % interval {half} (wanted ±{} %)",
            if self.converged {
                "converged"
            } else {
                "not converged"
            },
            crate::text::count(self.n as usize, "repetition"),
            c.level,
            c.width_pct / 2.0
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

    #[test]
    fn quantiles_of_each_level() {
        // Student t, two-sided (any statistics table); beyond 30 degrees
        // of freedom, between rows: the lower row's, never narrower than
        // exact (95 % df 45 and 1000).
        for (level, df, want) in [
            (95, 1, 12.706),
            (95, 3, 3.182),
            (95, 4, 2.776),
            (95, 5, 2.571),
            (95, 9, 2.262),
            (95, 10, 2.228),
            (95, 19, 2.093),
            (95, 29, 2.045),
            (95, 30, 2.042),
            (95, 40, 2.021),
            (95, 60, 2.000),
            (95, 120, 1.980),
            (95, 45, 2.021),
            (95, 1000, 1.980),
            (90, 1, 6.314),
            (90, 2, 2.920),
            (90, 30, 1.697),
            (90, 60, 1.671),
            (95, 2, 4.303),
            (99, 1, 63.657),
            (99, 2, 9.925),
            (99, 9, 3.250),
            (99, 120, 2.617),
            (99, 70, 2.660),
        ] {
            assert_eq!(t_quantile(level, df), Some(want), "{level} % df {df}");
        }
        assert_eq!(t_quantile(80, 5), None);
        assert_eq!(t_quantile(95, 0), None);
        // Decreasing with df.
        for l in LEVELS {
            let all: Vec<f64> = (1..200).map(|d| t_quantile(l, d).unwrap()).collect();
            assert!(all.windows(2).all(|w| w[1] <= w[0]), "{l}: {all:?}");
        }
    }

    #[test]
    fn confidence_parses_and_refuses() {
        let c = Confidence::parse("95,5").unwrap();
        assert_eq!((c.level, c.width_pct), (95, 5.0));
        assert_eq!(c.label(), "95,5");
        let c = Confidence::parse(" 99 %, 2.5% ").unwrap();
        assert_eq!((c.level, c.width_pct), (99, 2.5));
        let e = Confidence::parse("80,5").unwrap_err();
        assert!(e.contains("80 % is not supported (90, 95 or 99)"), "{e}");
        for bad in ["95", "95,", "x,5", "95,0", "95,-1", "95,nan", "95,101", ""] {
            assert!(Confidence::parse(bad).is_err(), "{bad}");
        }
    }

    /// The decision, with exact Student t values: n = 3 at 95 % takes
    /// t(0.975, 2) = 4.303, so 100, 101, 102 (s = 1) give a half-width of
    /// 4.303 / √3 = 2.484, which is 2.460 % of the mean 101.
    #[test]
    fn convergence_is_decided_by_the_t_interval() {
        let c = Confidence::parse("95,5").unwrap();
        assert_eq!(c.judge([100.0, 101.0]), None, "two are not enough");
        let v = c.judge([100.0, 101.0, 102.0]).unwrap();
        let half = 4.303 / 3f64.sqrt() / 101.0 * 100.0;
        assert!((v.half_pct.unwrap() - half).abs() < 1e-9, "{v:?}");
        assert!(v.converged, "{half} <= 2.5");
        // s = 1.02: 4.303 × 1.02 / √3 / 101 = 2.509 % > 2.5 %.
        let v = c.judge([99.98, 101.0, 102.02]).unwrap();
        assert!(!v.converged, "{v:?}");
        // The same series at 90 % (t = 2.920): 1.703 %, converged.
        let v90 = Confidence::parse("90,5")
            .unwrap()
            .judge([99.98, 101.0, 102.02]);
        let v90 = v90.unwrap();
        assert!((v90.half_pct.unwrap() - 2.920 * 1.02 / 3f64.sqrt() / 101.0 * 100.0).abs() < 1e-9);
        assert!(v90.converged);
        // At 99 % (t = 9.925) s = 0.3 of 101 gives 9.925 × 0.3 / √3 / 101
        // = 1.70 %, within ±2.5 %; s = 0.5 gives 2.84 %, not.
        let c99 = Confidence::parse("99,5").unwrap();
        assert!(c99.judge([100.7, 101.0, 101.3]).unwrap().converged);
        assert!(!c99.judge([100.5, 101.0, 101.5]).unwrap().converged);
        // A scripted noisy series never converges; a fourth, fifth value
        // that agree narrow it (t(0.975, 4) = 2.776).
        let noisy = [100.0, 130.0, 80.0, 120.0, 90.0, 110.0, 70.0];
        for n in 3..=noisy.len() {
            assert!(
                !c.judge(noisy[..n].iter().copied()).unwrap().converged,
                "{n}"
            );
        }
        let v = c.judge([100.0, 102.0, 98.0, 100.0, 100.0]).unwrap();
        let half = 2.776 * 2f64.sqrt() / 5f64.sqrt() / 100.0 * 100.0;
        assert_eq!(v.n, 5);
        assert!(
            (v.half_pct.unwrap() - half).abs() < 1e-9 && v.converged,
            "{v:?}"
        );
        // Mean 0: no relative width, never converged.
        let z = c.judge([0.0, 0.0, 0.0]).unwrap();
        assert_eq!((z.half_pct, z.converged), (None, false));
        // Equal values: width 0, converged.
        assert!(c.judge([7.0; 3]).unwrap().converged);
    }

    #[test]
    fn verdict_notes_say_how_many_and_whether() {
        let c = Confidence::parse("95,5").unwrap();
        let v = c.judge([100.0, 101.0, 102.0]).unwrap();
        assert_eq!(
            v.note("d", &c),
            "d: converged after 3 repetitions: 95 % interval ±2.46 % of the mean (wanted ±2.5 %)"
        );
        let v = c.judge([100.0, 130.0, 80.0]).unwrap();
        assert!(v
            .note("d", &c)
            .starts_with("d: not converged after 3 repetitions"));
    }
}
