//! Comparison math. For every test (matched by name) and the chosen metric:
//! each configuration's value, the difference in % as (candidate /
//! baseline − 1), CPU % beside it, and the workload parameters in which the
//! matched tests differ; per group, the mean of the per-test differences
//! (the published method: the mean of the ratios, not the ratio of the
//! means) with min, max and wins; efficiency per configuration and result
//! kind and its ratio; CPU-threshold counts; and the findings those numbers
//! support.
//!
//! A row's derived metrics (efficiency, service demand) are recomputed from
//! that row's own values, so what is shown always equals its formula on the
//! shown numbers, whatever selection produced them.

use crate::fmt::pct;
use iotoll_model::metrics as mn;
use iotoll_model::metrics::lower_is_better;
use iotoll_model::{Kind, Metrics};
use iotoll_store::RunDetail;
use serde::Serialize;
use std::collections::BTreeMap;

/// One test of one configuration.
#[derive(Debug, Clone, Serialize)]
pub struct TestData {
    pub name: String,
    pub group: String,
    pub kind: Kind,
    /// The selected repetition's metrics (or the means).
    pub metrics: Metrics,
    pub repeatable: Option<bool>,
    /// The metric the test was selected by (its main figure).
    pub main_metric: String,
    /// The test's parameters (swept ones included).
    pub params: serde_json::Value,
    /// The one-second series of the repetitions the headline comes from:
    /// the selected one, or every one a mean is over.
    pub series: Vec<RepSeries>,
    /// The selected (or first) repetition's spec: every parameter used.
    pub spec: serde_json::Value,
    /// The interference warnings of the repetitions that represent the test.
    pub interference: Vec<String>,
    /// The test's peer was this very host (same kernel boot id).
    pub same_host_peer: bool,
    /// A multi-host test's per-host figures; None for single-host tests
    /// and documents made before multi-host tests.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub multi: Option<MultiHost>,
}

/// One repetition's one-second series, and how it stands for its test.
#[derive(Debug, Clone, Serialize)]
pub struct RepSeries {
    pub rep: i64,
    /// Repetitions the test has.
    pub of: usize,
    /// The test's selection rule (`median:iops`, `mean`, `all`).
    pub rule: String,
    pub points: Vec<iotoll_model::SeriesPoint>,
}

/// A multi-host test's breakdown, all of one repetition (the selected one,
/// or the first when the test keeps a mean, which has no breakdown), so
/// that its hosts, pairs and totals belong together.
#[derive(Debug, Clone, Serialize)]
pub struct MultiHost {
    pub rep: i64,
    pub selected: bool,
    /// A test that keeps a mean: the repetitions whose figures (hosts,
    /// pairs, totals) are averaged here, as its headline is; empty when the
    /// figures are one repetition's.
    pub mean_of: Vec<i64>,
    /// That repetition's totals as its document states them (not
    /// re-derived): what the per-host table's totals rows show.
    pub totals: Metrics,
    pub hosts: Vec<iotoll_model::HostFigures>,
    pub pairs: Vec<iotoll_model::PairFigures>,
    pub skew_us: Option<iotoll_model::Skew>,
}

impl MultiHost {
    pub(crate) fn of(rep: &iotoll_store::RepRow, selected: bool) -> Option<MultiHost> {
        let d = &rep.doc;
        (!d.hosts.is_empty()).then(|| MultiHost {
            rep: rep.rep,
            selected,
            mean_of: Vec::new(),
            totals: d.metrics.clone(),
            hosts: d.hosts.clone(),
            pairs: d.pairs.clone(),
            skew_us: d.skew_us.clone(),
        })
    }
}

/// One configuration: a stored run.
#[derive(Debug, Clone, Serialize)]
pub struct ConfigData {
    pub label: String,
    pub run_id: i64,
    pub tests: Vec<TestData>,
    pub disclosure: Option<serde_json::Value>,
    /// The run's warnings and repeatability notes.
    pub notes: Vec<String>,
    /// Some test's peer was this very host: no remote CPU is a second machine's.
    pub same_host_peer: bool,
}

fn main_metric_of(kind: Kind, select: &str) -> String {
    select
        .strip_prefix("median:")
        .unwrap_or(kind.headline())
        .to_string()
}

impl ConfigData {
    pub fn from_run(run: &RunDetail) -> ConfigData {
        let tests: Vec<TestData> = run
            .tests
            .iter()
            .filter_map(|t| {
                let mut m = iotoll_store::export::selected_metrics(t)?.clone();
                // The row's derived metrics follow from the row's values (a
                // mean of per-repetition ratios is not the ratio of the means).
                iotoll_model::rederive_metrics(&mut m);
                let selected = t.reps.iter().find(|r| Some(r.rep) == t.selected_rep);
                let rep = selected.or(t.reps.first());
                // The repetitions that stand for the test: the selected one,
                // or those a mean is over (the clean ones when there are any).
                let docs = t.reps.iter().map(|r| &r.doc);
                let clean = docs.clone().any(|d| !d.interfered());
                let kept_reps: Vec<&iotoll_store::RepRow> = match selected {
                    Some(r) => vec![r],
                    None => (t.reps.iter())
                        .filter(|r| !clean || !r.doc.interfered())
                        .collect(),
                };
                let kept: Vec<&iotoll_model::ResultDoc> =
                    kept_reps.iter().map(|r| &r.doc).collect();
                let interference = kept
                    .iter()
                    .filter(|d| d.interfered())
                    .flat_map(|d| {
                        let said: Vec<String> = d
                            .notes
                            .iter()
                            .filter(|n| n.starts_with(iotoll_model::result::INTERFERENCE_NOTE))
                            .cloned()
                            .collect();
                        if said.is_empty() {
                            vec![format!(
                                "{} other processes",
                                iotoll_model::result::INTERFERENCE_NOTE
                            )]
                        } else {
                            said
                        }
                    })
                    .collect();
                let same_host_peer = kept.iter().any(|d| d.cpu.same_host == Some(true));
                Some(TestData {
                    name: t.name.clone(),
                    group: t.group.clone().unwrap_or_else(|| t.kind.to_string()),
                    kind: t.kind,
                    metrics: m,
                    repeatable: t.repeatable,
                    main_metric: main_metric_of(t.kind, &t.select),
                    params: t.params.clone(),
                    series: crate::reps::kept_series(&kept_reps, t.reps.len(), &t.select),
                    spec: rep.map(|r| r.doc.spec.clone()).unwrap_or_default(),
                    interference,
                    same_host_peer,
                    multi: match selected {
                        Some(r) => MultiHost::of(r, true),
                        None => crate::reps::mean_of(&kept_reps),
                    },
                })
            })
            .collect();
        let same_host_peer = tests.iter().any(|t| t.same_host_peer);
        ConfigData {
            label: run
                .run
                .config
                .clone()
                .unwrap_or_else(|| format!("run {}", run.run.id)),
            run_id: run.run.id,
            tests,
            disclosure: run.disclosure.clone(),
            notes: run.run.notes.clone(),
            same_host_peer,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub test: String,
    pub group: String,
    pub metric: String,
    /// Per configuration (baseline first); None where the test is missing
    /// or the metric was not measured.
    pub values: Vec<Option<f64>>,
    pub cpu_pct: Vec<Option<f64>>,
    /// Per candidate: (candidate / baseline − 1) × 100.
    pub diff_pct: Vec<Option<f64>>,
    /// Per configuration: CPU % at or under the threshold.
    pub acceptable: Vec<Option<bool>>,
    /// Some configuration's repetitions of this test disagreed.
    pub not_repeatable: bool,
    /// Workload parameters in which the matched tests differ, e.g.
    /// `"conns 4 vs 1"` (values in configuration order); empty when the
    /// same workload ran everywhere.
    pub differs: Vec<String>,
    /// Per configuration: another process used the host's CPU during the
    /// test's window beyond the interference threshold.
    pub interfered: Vec<bool>,
}

#[derive(Debug, Clone, Serialize)]
pub struct GroupSummary {
    pub group: String,
    pub candidate: String,
    pub metric: String,
    /// Tests with a value on both sides.
    pub tests: usize,
    pub mean_diff_pct: Option<f64>,
    pub min_diff_pct: Option<f64>,
    pub max_diff_pct: Option<f64>,
    /// Tests where the candidate's value is higher (lower for latencies and
    /// service demand).
    pub wins: usize,
}

/// One configuration's efficiency over the tests of one result kind that
/// every configuration has.
#[derive(Debug, Clone, Serialize)]
pub struct Efficiency {
    pub label: String,
    pub kind: Kind,
    /// How many tests the means are over.
    pub tests: usize,
    /// Efficiency metric -> mean of the per-test values (the mean of the
    /// ratios, as for groups).
    pub means: BTreeMap<String, f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub configs: Vec<String>,
    pub run_ids: Vec<i64>,
    pub rows: Vec<Row>,
    pub groups: Vec<GroupSummary>,
    pub efficiency: Vec<Efficiency>,
    pub cpu_threshold_pct: Option<f64>,
    /// Per configuration: (tests at or under the threshold, tests with CPU).
    pub threshold_counts: Vec<(usize, usize)>,
    /// Tests present in some configurations only.
    pub unmatched: Vec<String>,
    pub findings: Vec<String>,
}

impl Comparison {
    /// No test has a value on both sides of any pair: nothing was compared.
    pub fn compared_nothing(&self) -> bool {
        self.configs.len() > 1
            && self
                .rows
                .iter()
                .all(|r| r.diff_pct.iter().all(|d| d.is_none()))
    }

    /// The rows whose paired tests ran different workloads, as
    /// `test (conns 4 vs 1, msg 64k vs 1k)`.
    pub fn differing(&self) -> Vec<String> {
        self.rows
            .iter()
            .filter(|r| !r.differs.is_empty())
            .map(|r| format!("{} ({})", r.test, r.differs.join(", ")))
            .collect()
    }
}

/// The distinct values, in the order first seen (kinds of test, in the
/// order a run has them).
pub(crate) fn distinct<T: PartialEq>(it: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut out = Vec::new();
    for x in it {
        if !out.contains(&x) {
            out.push(x);
        }
    }
    out
}

/// Each test name's first test, in order: the baseline's tests, then
/// those only others have.
pub(crate) fn first_tests<'a>(
    configs: impl IntoIterator<Item = &'a ConfigData>,
) -> Vec<&'a TestData> {
    let mut out: Vec<&TestData> = Vec::new();
    for t in configs.into_iter().flat_map(|c| &c.tests) {
        if !out.iter().any(|o| o.name == t.name) {
            out.push(t);
        }
    }
    out
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// Compares `configs[0]` (the baseline) with every other configuration.
/// `metric` overrides each test's main metric; `by_group` false puts every
/// test in one group.
pub fn compare(
    configs: &[ConfigData],
    metric: Option<&str>,
    by_group: bool,
    cpu_threshold_pct: Option<f64>,
) -> Comparison {
    let names: Vec<(String, String, String)> = first_tests(configs)
        .into_iter()
        .map(|t| {
            let m = metric.unwrap_or(&t.main_metric).to_string();
            let g = if by_group { &t.group } else { "all" };
            (t.name.clone(), g.to_string(), m)
        })
        .collect();
    let find = |c: &ConfigData, name: &str| c.tests.iter().find(|t| t.name == name).cloned();
    let mut rows = Vec::new();
    let mut unmatched = Vec::new();
    for (name, group, m) in &names {
        let per: Vec<Option<TestData>> = configs.iter().map(|c| find(c, name)).collect();
        if per.iter().any(|t| t.is_none()) {
            unmatched.push(name.clone());
        }
        let of = |m: &str| -> Vec<Option<f64>> {
            let get = |t: &Option<TestData>| t.as_ref()?.metrics.get(m).copied();
            per.iter().map(get).collect()
        };
        let (values, cpu_pct) = (of(m), of(mn::CPU_PCT));
        let diff_pct = values[1..]
            .iter()
            .map(|v| match (values[0], v) {
                (Some(b), Some(c)) if b != 0.0 => Some((c / b - 1.0) * 100.0),
                _ => None,
            })
            .collect();
        let acceptable = cpu_pct
            .iter()
            .map(|c| cpu_threshold_pct.and_then(|th| c.map(|c| c <= th)))
            .collect();
        let specs: Vec<Option<(Kind, &serde_json::Value)>> = per
            .iter()
            .map(|t| t.as_ref().map(|t| (t.kind, &t.spec)))
            .collect();
        rows.push(Row {
            test: name.clone(),
            group: group.clone(),
            metric: m.clone(),
            values,
            cpu_pct,
            diff_pct,
            acceptable,
            not_repeatable: per.iter().flatten().any(|t| t.repeatable == Some(false)),
            differs: iotoll_model::workload::differences(&specs),
            interfered: per
                .iter()
                .map(|t| t.as_ref().is_some_and(|t| !t.interference.is_empty()))
                .collect(),
        });
    }

    let mut groups = Vec::new();
    let group_names = distinct(rows.iter().map(|r| r.group.clone()));
    for (ci, cand) in configs.iter().enumerate().skip(1) {
        for g in &group_names {
            let in_group: Vec<&Row> = rows.iter().filter(|r| &r.group == g).collect();
            let diffs: Vec<f64> = in_group.iter().filter_map(|r| r.diff_pct[ci - 1]).collect();
            let metric = in_group
                .first()
                .map(|r| r.metric.clone())
                .unwrap_or_default();
            let wins = in_group
                .iter()
                .filter_map(|r| r.diff_pct[ci - 1].map(|d| (d, lower_is_better(&r.metric))))
                .filter(|(d, lower)| if *lower { *d < 0.0 } else { *d > 0.0 })
                .count();
            groups.push(GroupSummary {
                group: g.clone(),
                candidate: cand.label.clone(),
                metric,
                tests: diffs.len(),
                mean_diff_pct: mean(&diffs),
                min_diff_pct: diffs.iter().copied().reduce(f64::min),
                max_diff_pct: diffs.iter().copied().reduce(f64::max),
                wins,
            });
        }
    }

    // Efficiency per result kind, over the tests of that kind every
    // configuration has (a mix of disk, stream and rr tests keeps each).
    let common: Vec<&TestData> = first_tests(configs.iter().take(1))
        .into_iter()
        .filter(|t| !unmatched.contains(&t.name))
        .collect();
    let mut efficiency = Vec::new();
    for kind in distinct(common.iter().map(|t| t.kind)) {
        let of_kind: Vec<&String> = common
            .iter()
            .filter(|t| t.kind == kind)
            .map(|t| &t.name)
            .collect();
        for c in configs {
            let mut means = BTreeMap::new();
            for e in kind.efficiency() {
                let v: Vec<f64> = of_kind
                    .iter()
                    .filter_map(|n| find(c, n).and_then(|t| t.metrics.get(e).copied()))
                    .collect();
                if v.len() == of_kind.len() {
                    if let Some(m) = mean(&v) {
                        means.insert(e.to_string(), m);
                    }
                }
            }
            efficiency.push(Efficiency {
                label: c.label.clone(),
                kind,
                tests: of_kind.len(),
                means,
            });
        }
    }
    let threshold_counts = (0..configs.len())
        .map(|i| {
            let with: Vec<bool> = rows.iter().filter_map(|r| r.acceptable[i]).collect();
            (with.iter().filter(|a| **a).count(), with.len())
        })
        .collect();
    let mut c = Comparison {
        configs: configs.iter().map(|c| c.label.clone()).collect(),
        run_ids: configs.iter().map(|c| c.run_id).collect(),
        rows,
        groups,
        efficiency,
        cpu_threshold_pct,
        threshold_counts,
        unmatched,
        findings: Vec::new(),
    };
    c.findings = findings(&c);
    c
}

/// Sentences drawn from the numbers only.
pub fn findings(c: &Comparison) -> Vec<String> {
    let mut f = Vec::new();
    let base = &c.configs[0];
    for g in &c.groups {
        let (Some(mean), Some(lo), Some(hi)) = (g.mean_diff_pct, g.min_diff_pct, g.max_diff_pct)
        else {
            continue;
        };
        let word = if mean >= 0.0 { "higher" } else { "lower" };
        let hint = if lower_is_better(&g.metric) {
            " (lower is better)"
        } else {
            ""
        };
        let range = if g.tests > 1 {
            format!(" ({} to {})", pct(Some(lo)), pct(Some(hi)))
        } else {
            String::new()
        };
        f.push(format!(
            "{} achieved an average {:.1} % {word} {}{hint} than {base} on {} tests{range}; it did better on {} of {}.",
            g.candidate,
            mean.abs(),
            iotoll_model::metrics::label(&g.metric),
            g.group,
            g.wins,
            g.tests
        ));
    }
    // Each kind's headline efficiency, candidate against baseline.
    for kind in distinct(c.efficiency.iter().map(|e| e.kind)) {
        let of_kind: Vec<&Efficiency> = c.efficiency.iter().filter(|e| e.kind == kind).collect();
        let Some(b) = of_kind.first() else { continue };
        let Some(e) = kind.efficiency().find(|e| b.means.contains_key(*e)) else {
            continue;
        };
        let name = iotoll_model::metrics::label(e);
        for cand in of_kind.iter().skip(1) {
            if let (Some(bv), Some(v)) = (b.means.get(e), cand.means.get(e)) {
                if *bv > 0.0 {
                    let verb = if lower_is_better(e) {
                        "used"
                    } else {
                        "delivered"
                    };
                    f.push(format!(
                        "On {kind} tests {} {verb} {:.2} × {base}'s {name}: {} vs {}, the mean over the {} test(s) both have.",
                        cand.label,
                        v / bv,
                        iotoll_model::units::format_number(*v),
                        iotoll_model::units::format_number(*bv),
                        b.tests,
                    ));
                }
            }
        }
    }
    if let Some(th) = c.cpu_threshold_pct {
        for (i, (ok, n)) in c.threshold_counts.iter().enumerate() {
            if *n > 0 {
                f.push(format!(
                    "{} stayed under {th} % CPU on {ok} of {n} tests.",
                    c.configs[i]
                ));
            }
        }
    }
    if c.compared_nothing() {
        f.push(
            "Nothing was compared: the configurations have no test with the same name and a value on both sides."
                .to_string(),
        );
    }
    let differing = c.differing();
    if !differing.is_empty() {
        f.push(format!(
            "Different workloads were paired, so these differences are not the configurations' alone: {}. A comparison holds the workload fixed and lets only the configuration differ (MTU, engine, adapter: what the --config labels name); rerun with the same parameters, or use --strict to refuse such a comparison.",
            differing.join("; ")
        ));
    }
    let interfered: Vec<String> = c
        .rows
        .iter()
        .filter(|r| r.interfered.iter().any(|i| *i))
        .map(|r| {
            let who: Vec<&str> = r
                .interfered
                .iter()
                .zip(&c.configs)
                .filter(|(i, _)| **i)
                .map(|(_, l)| l.as_str())
                .collect();
            format!("{} ({})", r.test, who.join(", "))
        })
        .collect();
    if !interfered.is_empty() {
        f.push(format!(
            "Other processes used the host's CPU during {} of {} tests, so their CPU and efficiency figures include someone else's work (rows marked): {}.",
            interfered.len(),
            c.rows.len(),
            some(&interfered, "; ")
        ));
    }
    let flagged: Vec<&str> = c
        .rows
        .iter()
        .filter(|r| r.not_repeatable)
        .map(|r| r.test.as_str())
        .collect();
    if !flagged.is_empty() {
        f.push(format!(
            "Not repeatable (repetitions disagreed) on {} of {} tests, read with care: {}.",
            flagged.len(),
            c.rows.len(),
            some(&flagged, ", ")
        ));
    }
    if !c.unmatched.is_empty() {
        f.push(format!(
            "Compared only where every configuration has the test; {} test(s) missing somewhere: {}.",
            c.unmatched.len(),
            c.unmatched.join(", ")
        ));
    }
    f
}

/// The first few items of a long list, and how many more there are.
fn some<S: AsRef<str>>(items: &[S], sep: &str) -> String {
    const SHOWN: usize = 6;
    let head: Vec<&str> = items.iter().take(SHOWN).map(AsRef::as_ref).collect();
    let mut out = head.join(sep);
    if items.len() > SHOWN {
        out.push_str(&format!("{sep}and {} more", items.len() - SHOWN));
    }
    out
}

/// Tests and configurations for the crate's unit tests.
#[cfg(test)]
pub(crate) mod test_data {
    use super::{ConfigData, TestData};

    /// A test of `kind` (`"disk"`, `"net-stream"`, ...), which is its group too.
    pub fn test(name: &str, kind: &str, metrics: &[(&str, f64)]) -> TestData {
        TestData {
            name: name.into(),
            group: kind.into(),
            kind: kind.parse().unwrap(),
            metrics: metrics.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            repeatable: None,
            main_metric: "iops".into(),
            params: serde_json::json!({}),
            series: Vec::new(),
            spec: serde_json::json!({}),
            interference: Vec::new(),
            same_host_peer: false,
            multi: None,
        }
    }

    pub fn cfg(label: &str, tests: Vec<TestData>) -> ConfigData {
        ConfigData {
            label: label.into(),
            run_id: 1,
            tests,
            disclosure: None,
            notes: Vec::new(),
            same_host_peer: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_data::{cfg, test};
    use super::*;

    fn t(name: &str, group: &str, mb: f64, cpu: f64) -> TestData {
        let mut x = TestData {
            group: group.into(),
            repeatable: Some(true),
            main_metric: "mb_s".into(),
            ..test(name, "disk", &[("mb_s", mb), ("cpu_pct", cpu)])
        };
        if cpu > 0.0 {
            x.metrics.insert("mb_s_per_cpu_pct".into(), mb / cpu);
        }
        x
    }

    #[test]
    fn mean_of_ratios_not_ratio_of_means() {
        // Baseline 100 and 1000; candidate 200 (+100 %) and 1000 (0 %).
        // Mean of ratios: +50 %. Ratio of means would be 1200/1100 - 1 = +9.1 %.
        let b = cfg(
            "base",
            vec![t("a", "read", 100.0, 10.0), t("b", "read", 1000.0, 20.0)],
        );
        let c = cfg(
            "cand",
            vec![t("a", "read", 200.0, 5.0), t("b", "read", 1000.0, 40.0)],
        );
        let r = compare(&[b, c], None, true, Some(8.0));
        let g = &r.groups[0];
        assert!((g.mean_diff_pct.unwrap() - 50.0).abs() < 1e-9);
        assert_eq!((g.min_diff_pct, g.max_diff_pct), (Some(0.0), Some(100.0)));
        assert_eq!((g.tests, g.wins), (2, 1));
        assert_eq!(r.rows[0].diff_pct, vec![Some(100.0)]);
        // Threshold 8 %: base 0 of 2 (10, 20), candidate 1 of 2 (5, 40).
        assert_eq!(r.threshold_counts, vec![(0, 2), (1, 2)]);
        assert_eq!(r.rows[0].acceptable, vec![Some(false), Some(true)]);
        // Efficiency: base mean(10, 50) = 30; cand mean(40, 25) = 32.5.
        assert!((r.efficiency[0].means["mb_s_per_cpu_pct"] - 30.0).abs() < 1e-9);
        assert!((r.efficiency[1].means["mb_s_per_cpu_pct"] - 32.5).abs() < 1e-9);
        insta::assert_snapshot!(r.findings.join("\n"));
    }

    #[test]
    fn a_missing_test_and_zero_cpu() {
        let b = cfg(
            "base",
            vec![t("a", "g", 100.0, 0.0), t("only-base", "g", 5.0, 1.0)],
        );
        let c = cfg("cand", vec![t("a", "g", 150.0, 10.0)]);
        let r = compare(&[b, c], None, true, None);
        assert_eq!(r.unmatched, vec!["only-base".to_string()]);
        let missing = r.rows.iter().find(|x| x.test == "only-base").unwrap();
        assert_eq!(missing.values, vec![Some(5.0), None]);
        assert_eq!(missing.diff_pct, vec![None]);
        // The group average uses only tests both sides have.
        assert_eq!(r.groups[0].tests, 1);
        assert!((r.groups[0].mean_diff_pct.unwrap() - 50.0).abs() < 1e-9);
        // Zero CPU: no efficiency for the baseline, so no efficiency claim.
        assert!(!r.efficiency[0].means.contains_key("mb_s_per_cpu_pct"));
        assert!(!r.findings.iter().any(|f| f.contains("mb_s_per_cpu_pct")));
        assert!(r.findings.iter().any(|f| f.contains("only-base")));
        insta::assert_snapshot!(r.findings.join("\n"));
    }

    #[test]
    fn lower_is_better_metrics_and_not_repeatable_flags() {
        let mut b = t("rr", "lat", 0.0, 1.0);
        b.metrics.insert("latency_one_way_us".into(), 50.0);
        let mut c = t("rr", "lat", 0.0, 1.0);
        c.metrics.insert("latency_one_way_us".into(), 40.0);
        c.repeatable = Some(false);
        let r = compare(
            &[cfg("base", vec![b]), cfg("cand", vec![c])],
            Some("latency_one_way_us"),
            false,
            None,
        );
        assert_eq!(r.groups[0].wins, 1, "20 % lower latency is a win");
        assert!(r.rows[0].not_repeatable);
        insta::assert_snapshot!(r.findings.join("\n"));
    }

    fn with_spec(mut t: TestData, kind: &str, spec: serde_json::Value) -> TestData {
        t.kind = kind.parse().unwrap();
        t.spec = spec;
        t
    }

    #[test]
    fn differing_workloads_are_named_per_row_and_in_the_findings() {
        let a = with_spec(
            t("net-stream", "g", 100.0, 10.0),
            "net-stream",
            serde_json::json!({"dir": "tx", "conns": 4, "msg": 65536}),
        );
        let b = with_spec(
            t("net-stream", "g", 104.0, 10.0),
            "net-stream",
            serde_json::json!({"dir": "rx", "conns": 1, "msg": 1024}),
        );
        let r = compare(
            &[cfg("mtu1500", vec![a]), cfg("mtu9000", vec![b])],
            None,
            true,
            None,
        );
        assert_eq!(
            r.rows[0].differs,
            vec!["dir tx vs rx", "conns 4 vs 1", "msg 64k vs 1k"]
        );
        let f = r.findings.join("\n");
        assert!(f.contains("Different workloads were paired"), "{f}");
        assert!(f.contains("conns 4 vs 1"), "{f}");
        assert!(f.contains("--config"), "{f}");
    }

    #[test]
    fn efficiency_is_kept_per_kind_in_a_mixed_comparison() {
        // A stream test has the P/E index, an rr test CPU µs per transaction:
        // neither may hide the other.
        let net = |name: &str, group: &str, kind: Kind, m: &[(&str, f64)]| {
            let mut x = t(name, group, 0.0, 0.0);
            x.kind = kind;
            x.metrics = m.iter().map(|(k, v)| (k.to_string(), *v)).collect();
            iotoll_model::rederive_metrics(&mut x.metrics);
            x
        };
        let stream = |mbit: f64, cpu: f64| {
            net(
                "s",
                "tx",
                Kind::NetStream,
                &[("mbit_s", mbit), ("cpu_pct", cpu)],
            )
        };
        let rr = |trans: f64, cpu: f64| {
            let m = [("trans_s", trans), ("cpu_pct", cpu), ("cpus", 2.0)];
            net("r", "rr", Kind::NetRr, &m)
        };
        let base = cfg("mtu1500", vec![stream(992.0, 49.6), rr(10_000.0, 50.0)]);
        let cand = cfg("mtu9000", vec![stream(990.0, 24.75), rr(10_000.0, 25.0)]);
        let r = compare(&[base, cand], None, true, None);
        for (label, kind, m, want) in [
            // 992 / 49.6 = 20; 990 / 24.75 = 40.
            ("mtu1500", "net-stream", "mbit_s_per_cpu_pct", 20.0),
            ("mtu9000", "net-stream", "mbit_s_per_cpu_pct", 40.0),
            // 50 % of 2 CPUs = 1e6 busy µs per s over 10,000 transactions = 100 µs.
            ("mtu1500", "net-rr", "cpu_us_per_trans", 100.0),
            ("mtu9000", "net-rr", "cpu_us_per_trans", 50.0),
        ] {
            let v = r
                .efficiency
                .iter()
                .find(|e| e.label == label && e.kind.as_str() == kind)
                .and_then(|e| e.means.get(m).copied());
            assert!(
                v.is_some_and(|v| (v - want).abs() < 1e-9),
                "{label} {m}: {v:?}"
            );
        }
        let f = r.findings.join("\n");
        for want in [
            "On net-stream tests mtu9000 delivered 2.00 × mtu1500's Mbit/s per % CPU",
            "On net-rr tests mtu9000 used 0.50 × mtu1500's CPU µs per transaction",
        ] {
            assert!(f.contains(want), "{f}");
        }
    }

    #[test]
    fn interfered_tests_are_marked_for_their_configuration() {
        let mut b = t("a", "g", 100.0, 10.0);
        b.interference = vec!["interference: 40.1 % of the host by stress (pid 42)".into()];
        let c = t("a", "g", 100.0, 10.0);
        let r = compare(
            &[cfg("base", vec![b]), cfg("cand", vec![c])],
            None,
            true,
            None,
        );
        assert_eq!(r.rows[0].interfered, vec![true, false]);
        assert!(r
            .findings
            .iter()
            .any(|f| f.contains("someone else's work") && f.contains("a (base)")));
    }

    #[test]
    fn nothing_in_common_is_said() {
        let r = compare(
            &[
                cfg("a", vec![t("x", "g", 1.0, 1.0)]),
                cfg("b", vec![t("y", "g", 1.0, 1.0)]),
            ],
            None,
            true,
            None,
        );
        assert!(r
            .findings
            .iter()
            .any(|f| f.starts_with("Nothing was compared")));
    }

    #[test]
    fn the_peers_cpu_is_lower_is_better() {
        assert!(lower_is_better("remote_cpu_pct"));
        assert!(lower_is_better("cpu_pct"));
        assert!(!lower_is_better("remote_mbit_s_per_cpu_pct"));
    }
}
