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

use iotoll_model::metrics::{self as mn, label, lower_is_better};
use iotoll_model::spec::Spec;
use iotoll_model::{Kind, Metrics};
use iotoll_store::RunDetail;
use serde::Serialize;
use std::collections::BTreeMap;

/// One test of one configuration.
#[derive(Debug, Clone)]
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
    pub spec: Spec,
    /// The interference warnings of the repetitions that represent the test.
    pub interference: Vec<String>,
    /// The test's peer was this very host (same kernel boot id).
    pub same_host_peer: bool,
    /// The test's configuration as run, what is meant to differ between
    /// runs of one workload: (item, value), e.g. ("engine", "psync"),
    /// ("header digest", "CRC32C").
    pub setup: Vec<(String, String)>,
    /// A multi-host test's per-host figures; None for single-host tests
    /// and documents made before multi-host tests.
    pub multi: Option<MultiHost>,
}

impl TestData {
    /// A stored test as a report shows it; None when it has no figures.
    fn of(t: &iotoll_store::TestRow) -> Option<TestData> {
        use iotoll_model::result::INTERFERENCE_NOTE as NOTE;
        let mut m = iotoll_store::export::selected_metrics(t)?.clone();
        // The row's derived metrics follow from the row's values (a
        // mean of per-repetition ratios is not the ratio of the means).
        iotoll_model::rederive_metrics(&mut m);
        let selected = t.reps.iter().find(|r| Some(r.rep) == t.selected_rep);
        let rep = selected.or(t.reps.first());
        // The repetitions that stand for the test: the selected one,
        // or those a mean is over (the clean ones when there are any).
        let clean = t.reps.iter().any(|r| !r.doc.interfered());
        let kept_reps: Vec<&iotoll_store::RepRow> = match selected {
            Some(r) => vec![r],
            None => (t.reps.iter())
                .filter(|r| !clean || !r.doc.interfered())
                .collect(),
        };
        let kept = kept_reps.iter().map(|r| &r.doc);
        let interference = (kept.clone().filter(|d| d.interfered()))
            .flat_map(|d| {
                let said = d.notes.iter().filter(|n| n.starts_with(NOTE));
                let said: Vec<String> = said.cloned().collect();
                if said.is_empty() {
                    vec![format!("{NOTE} other processes")]
                } else {
                    said
                }
            })
            .collect();
        Some(TestData {
            name: t.name.clone(),
            group: t.group.clone().unwrap_or_else(|| t.kind.to_string()),
            kind: t.kind,
            metrics: m,
            repeatable: t.repeatable,
            main_metric: iotoll_model::ci::rule_metric(&t.select, t.kind).to_string(),
            params: t.params.clone(),
            series: crate::reps::kept_series(&kept_reps, t.reps.len(), &t.select),
            spec: rep.map(|r| r.doc.spec.clone()).unwrap_or_default(),
            interference,
            // The rule single runs follow: lab hosts on CPUs of their own
            // keep the peer's CPU.
            same_host_peer: kept.clone().any(|d| !d.cpu.remote_separate()),
            setup: rep
                .map(|r| crate::differs::setup_of(t.kind, &r.doc))
                .unwrap_or_default(),
            multi: match selected {
                Some(r) => MultiHost::of(r, true),
                None => crate::reps::mean_of(&kept_reps),
            },
        })
    }
}

/// One repetition's one-second series, and how it stands for its test.
#[derive(Debug, Clone)]
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
#[derive(Debug, Clone, Default)]
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
#[derive(Debug, Clone, Default)]
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

impl ConfigData {
    pub fn test(&self, name: &str) -> Option<&TestData> {
        self.tests.iter().find(|t| t.name == name)
    }

    pub fn from_run(run: &RunDetail) -> ConfigData {
        let tests: Vec<TestData> = run.tests.iter().filter_map(TestData::of).collect();
        let same_host_peer = tests.iter().any(|t| t.same_host_peer);
        let r = &run.run;
        ConfigData {
            label: r.config.clone().unwrap_or_else(|| format!("run {}", r.id)),
            run_id: r.id,
            tests,
            disclosure: run.disclosure.clone(),
            notes: r.notes.clone(),
            same_host_peer,
        }
    }
}

#[derive(Debug, Clone, Default, Serialize)]
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
    /// Whether what differs between the configurations can affect this
    /// test's workload (MTU cannot affect a local disk test); None when
    /// only states differ, so what was compared is not known.
    pub affected: Option<bool>,
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
    /// The metric's average over the tests both sides have: the baseline's
    /// and the candidate's (study 004's "7.07 vs 3.20 Gbit/s").
    pub base_mean: Option<f64>,
    pub cand_mean: Option<f64>,
    /// mean(candidate) / mean(baseline) over those tests.
    pub ratio_of_means: Option<f64>,
    /// mean(candidate_i / baseline_i): 1 + mean_diff_pct / 100.
    pub mean_of_ratios: Option<f64>,
    /// The largest per-test ratio candidate / baseline and its test.
    pub max_ratio: Option<(f64, String)>,
    /// The smallest and largest per-test ratio of whole-host CPU %,
    /// candidate / baseline, with their tests.
    pub cpu_min_ratio: Option<(f64, String)>,
    pub cpu_max_ratio: Option<(f64, String)>,
}

/// One configuration's efficiency over a class of like tests (one result
/// kind and transfer-size class) that every configuration has.
#[derive(Debug, Clone, Serialize)]
pub struct Efficiency {
    pub label: String,
    pub kind: Kind,
    /// The transfer-size class (`≤ 8k`, `16k–128k`, `≥ 256k`), empty when
    /// the tests do not say their size.
    pub class: String,
    /// The tests the means are over.
    pub names: Vec<String>,
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
    /// Per class of like tests, one entry per configuration (baseline
    /// first).
    pub efficiency: Vec<Efficiency>,
    pub cpu_threshold_pct: Option<f64>,
    /// Per configuration: (tests at or under the threshold, tests with CPU).
    pub threshold_counts: Vec<(usize, usize)>,
    /// Tests present in some configurations only.
    pub unmatched: Vec<String>,
    /// What differs between the configurations (what was compared).
    pub differs: Vec<crate::differs::Difference>,
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

    /// The group summary as a table: each candidate's mean of the per-test
    /// differences and ratios, the averages and their ratio, and the
    /// largest per-test ratio, each headed by its formula.
    pub fn group_table(&self) -> Option<crate::tables::Table> {
        use crate::fmt::{num, pct};
        if self.groups.is_empty() {
            return None;
        }
        let x = |v: Option<f64>| v.map_or("–".into(), |v| format!("{v:.2} ×"));
        let average_base = format!("average {}", self.configs[0]);
        // Each column: its head (with its formula) and its cell.
        type Cell<'a> = &'a dyn Fn(&GroupSummary) -> String;
        let columns: [(&str, Cell); 13] = [
            ("group", &|g| g.group.clone()),
            ("candidate", &|g| g.candidate.clone()),
            ("metric", &|g| label(&g.metric).into()),
            ("tests", &|g| g.tests.to_string()),
            (&average_base, &|g| num(g.base_mean)),
            ("average candidate", &|g| num(g.cand_mean)),
            ("ratio of averages: mean(cand) ÷ mean(base)", &|g| {
                x(g.ratio_of_means)
            }),
            ("mean of ratios: mean(cand ÷ base)", &|g| {
                x(g.mean_of_ratios)
            }),
            ("mean Δ", &|g| pct(g.mean_diff_pct)),
            ("min Δ", &|g| pct(g.min_diff_pct)),
            ("max Δ", &|g| pct(g.max_diff_pct)),
            ("up to (largest cand ÷ base)", &|g| {
                let max = g.max_ratio.as_ref();
                max.map_or("–".into(), |(r, t)| format!("{r:.2} × ({t})"))
            }),
            ("wins", &|g| format!("{} of {}", g.wins, g.tests)),
        ];
        let head = columns.iter().map(|c| c.0.to_string()).collect();
        let rows = (self.groups.iter())
            .map(|g| crate::tables::TRow::new(columns.iter().map(|c| (c.1)(g)).collect()))
            .collect();
        Some(crate::tables::Table {
            title: "By group".into(),
            head,
            rows,
            note: Some("Over the tests both configurations have. The mean of the per-test ratios (study 002's method) weighs every test alike; the ratio of the averages (study 004's) weighs tests by their size. Δ = candidate ÷ baseline − 1 per test.".into()),
        })
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

/// candidate / baseline; None without both, or with a zero baseline.
fn ratio(base: Option<f64>, cand: Option<f64>) -> Option<f64> {
    match (base, cand) {
        (Some(b), Some(c)) if b != 0.0 => Some(c / b),
        _ => None,
    }
}

/// (candidate / baseline − 1) × 100, as `ratio` has it.
pub(crate) fn diff_pct(base: Option<f64>, cand: Option<f64>) -> Option<f64> {
    ratio(base, cand).map(|r| (r - 1.0) * 100.0)
}

pub(crate) fn mean(v: &[f64]) -> Option<f64> {
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
    let differs = crate::differs::differences(configs);
    let mut rows = Vec::new();
    let mut unmatched = Vec::new();
    for first in first_tests(configs) {
        let name = &first.name;
        let m = metric.unwrap_or(&first.main_metric);
        let group: &str = if by_group { &first.group } else { "all" };
        let per: Vec<Option<&TestData>> = configs.iter().map(|c| c.test(name)).collect();
        if per.iter().any(|t| t.is_none()) {
            unmatched.push(name.clone());
        }
        let of = |m: &str| -> Vec<Option<f64>> {
            (per.iter())
                .map(|t| (*t)?.metrics.get(m).copied())
                .collect()
        };
        let (values, cpu_pct) = (of(m), of(mn::CPU_PCT));
        let diff_pct = values[1..]
            .iter()
            .map(|v| diff_pct(values[0], *v))
            .collect();
        let acceptable = cpu_pct
            .iter()
            .map(|c| cpu_threshold_pct.and_then(|th| c.map(|c| c <= th)))
            .collect();
        let specs: Vec<Option<(Kind, serde_json::Value)>> = (per.iter())
            .map(|t| t.map(|t| (t.kind, t.spec.to_value())))
            .collect();
        let specs: Vec<Option<(Kind, &serde_json::Value)>> = (specs.iter())
            .map(|t| t.as_ref().map(|(k, v)| (*k, v)))
            .collect();
        let affected =
            (per.iter().flatten().next()).and_then(|t| crate::differs::affects(&differs, t));
        rows.push(Row {
            test: name.clone(),
            group: group.into(),
            metric: m.to_string(),
            values,
            cpu_pct,
            diff_pct,
            acceptable,
            not_repeatable: per.iter().flatten().any(|t| t.repeatable == Some(false)),
            differs: iotoll_model::workload::differences(&specs),
            interfered: (per.iter())
                .map(|t| t.is_some_and(|t| !t.interference.is_empty()))
                .collect(),
            affected,
        });
    }

    let mut groups = Vec::new();
    let group_names = distinct(rows.iter().map(|r| r.group.clone()));
    for (ci, cand) in configs.iter().enumerate().skip(1) {
        for g in &group_names {
            let in_group: Vec<&Row> = rows.iter().filter(|r| &r.group == g).collect();
            groups.push(group_summary(&cand.label, g, &in_group, ci));
        }
    }

    let efficiency = efficiency_classes(configs, &unmatched);
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
        differs,
        findings: Vec::new(),
    };
    c.findings = crate::findings::comparison(&c);
    c
}

/// The largest (or smallest) of per-test values, with its test.
fn extreme(v: &[(f64, String)], largest: bool) -> Option<(f64, String)> {
    (v.iter().cloned()).reduce(|a, b| if (a.0 >= b.0) == largest { a } else { b })
}

/// One group's figures for candidate `ci` (1-based among configurations):
/// the mean of the per-test differences, the averages and their ratio, and
/// the largest per-test ratios of the metric and of CPU %.
fn group_summary(candidate: &str, group: &str, in_group: &[&Row], ci: usize) -> GroupSummary {
    // Tests with a value on both sides: every average is over the same tests.
    let both: Vec<(&Row, f64, f64)> = in_group
        .iter()
        .filter_map(|r| match (r.values[0], r.values[ci]) {
            (Some(b), Some(c)) if b != 0.0 => Some((*r, b, c)),
            _ => None,
        })
        .collect();
    let diffs: Vec<f64> = both.iter().map(|(_, b, c)| (c / b - 1.0) * 100.0).collect();
    let metric = in_group
        .first()
        .map(|r| r.metric.clone())
        .unwrap_or_default();
    // Better is lower for latencies and service demand.
    let better = if lower_is_better(&metric) { -1.0 } else { 1.0 };
    let wins = diffs.iter().filter(|d| **d * better > 0.0).count();
    // An average of IOPS and Mbit/s (a group of several kinds, `--by none`)
    // is no figure: averages only over one metric.
    let one_metric = both.iter().all(|(r, _, _)| r.metric == metric);
    let avg = |f: fn(&(&Row, f64, f64)) -> f64| {
        one_metric
            .then(|| mean(&both.iter().map(f).collect::<Vec<_>>()))
            .flatten()
    };
    let (base_mean, cand_mean) = (avg(|x| x.1), avg(|x| x.2));
    let ratios: Vec<(f64, String)> = both
        .iter()
        .map(|(r, b, c)| (c / b, r.test.clone()))
        .collect();
    let cpu: Vec<(f64, String)> = both
        .iter()
        .filter_map(|(r, _, _)| match (r.cpu_pct[0], r.cpu_pct[ci]) {
            (Some(b), Some(c)) if b > 0.0 => Some((c / b, r.test.clone())),
            _ => None,
        })
        .collect();
    let mean_diff_pct = mean(&diffs);
    GroupSummary {
        group: group.to_string(),
        candidate: candidate.to_string(),
        metric,
        tests: diffs.len(),
        mean_diff_pct,
        min_diff_pct: diffs.iter().copied().reduce(f64::min),
        max_diff_pct: diffs.iter().copied().reduce(f64::max),
        wins,
        base_mean,
        cand_mean,
        ratio_of_means: ratio(base_mean, cand_mean),
        mean_of_ratios: mean_diff_pct.map(|d| 1.0 + d / 100.0),
        max_ratio: extreme(&ratios, true),
        cpu_min_ratio: extreme(&cpu, false),
        cpu_max_ratio: extreme(&cpu, true),
    }
}

/// A test's transfer-size class: small I/O (IOPS-bound), medium, large
/// (streaming); empty when the test does not say its size.
pub(crate) fn size_class(t: &TestData) -> String {
    let s = t.spec.stated();
    let size = match t.kind {
        Kind::Disk => s.bs.or_else(|| {
            let lines = s.lines.as_ref()?.iter();
            lines.filter_map(|l| l.bs).reduce(f64::max)
        }),
        Kind::NetStream => s.msg,
        Kind::NetUdp => s.size,
        Kind::NetCc => None,
        Kind::NetRr | Kind::NetCrr => match (s.req, s.resp) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        },
    };
    match size {
        None => String::new(),
        Some(b) if b <= 8192.0 => "≤ 8k".into(),
        Some(b) if b <= 131_072.0 => "16k–128k".into(),
        Some(_) => "≥ 256k".into(),
    }
}

/// Efficiency per class of like tests (kind and transfer-size class) that
/// every configuration has. A peer's CPU is left out of a class in which
/// some configuration's peer was this host: it is not a second machine's.
fn efficiency_classes(configs: &[ConfigData], unmatched: &[String]) -> Vec<Efficiency> {
    let common: Vec<&TestData> = first_tests(configs.iter().take(1))
        .into_iter()
        .filter(|t| !unmatched.contains(&t.name))
        .collect();
    let mut out = Vec::new();
    for (kind, class) in distinct(common.iter().map(|t| (t.kind, size_class(t)))) {
        let names: Vec<String> = common
            .iter()
            .filter(|t| t.kind == kind && size_class(t) == class)
            .map(|t| t.name.clone())
            .collect();
        let same_host = configs.iter().any(|c| {
            names
                .iter()
                .any(|n| c.test(n).is_some_and(|t| t.same_host_peer))
        });
        for c in configs {
            // A mean only where every test of the class has the measure.
            let means = (kind.efficiency())
                .filter(|e| !(same_host && crate::tables::remote_cpu_metric(e)))
                .filter_map(|e| {
                    let v: Option<Vec<f64>> = names
                        .iter()
                        .map(|n| c.test(n)?.metrics.get(e).copied())
                        .collect();
                    Some((e.to_string(), mean(&v?)?))
                })
                .collect();
            out.push(Efficiency {
                label: c.label.clone(),
                kind,
                class: class.clone(),
                names: names.clone(),
                tests: names.len(),
                means,
            });
        }
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
            metrics: iotoll_model::metrics::of(metrics),
            repeatable: None,
            main_metric: "iops".into(),
            params: serde_json::json!({}),
            series: Vec::new(),
            spec: serde_json::json!({}).into(),
            interference: Vec::new(),
            same_host_peer: false,
            setup: Vec::new(),
            multi: None,
        }
    }

    impl TestData {
        /// These metrics and what follows from them.
        pub fn with(mut self, m: &[(&str, f64)]) -> TestData {
            self.metrics = iotoll_model::metrics::of(m);
            iotoll_model::rederive_metrics(&mut self.metrics);
            self
        }
    }

    /// `base` compared with `cand`, each test in its group, no threshold.
    pub fn compared(base: ConfigData, cand: ConfigData) -> super::Comparison {
        super::compare(&[base, cand], None, true, None)
    }

    pub fn cfg(label: &str, tests: Vec<TestData>) -> ConfigData {
        ConfigData {
            label: label.into(),
            run_id: 1,
            tests,
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_data::{cfg, compared, test};
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
        let b = vec![t("a", "read", 100.0, 10.0), t("b", "read", 1000.0, 20.0)];
        let c = vec![t("a", "read", 200.0, 5.0), t("b", "read", 1000.0, 40.0)];
        let (b, c) = (cfg("base", b), cfg("cand", c));
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
        let b = vec![t("a", "g", 100.0, 0.0), t("only-base", "g", 5.0, 1.0)];
        let b = cfg("base", b);
        let c = cfg("cand", vec![t("a", "g", 150.0, 10.0)]);
        let r = compared(b, c);
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
        let configs = [cfg("base", vec![b]), cfg("cand", vec![c])];
        let r = compare(&configs, Some("latency_one_way_us"), false, None);
        assert_eq!(r.groups[0].wins, 1, "20 % lower latency is a win");
        assert!(r.rows[0].not_repeatable);
        insta::assert_snapshot!(r.findings.join("\n"));
    }

    /// A stream test of `mbit` whose spec is `spec`.
    fn stream(mbit: f64, spec: serde_json::Value) -> TestData {
        let mut t = t("net-stream", "g", mbit, 10.0);
        t.kind = Kind::NetStream;
        t.spec = Spec::of(t.kind, spec);
        t
    }

    #[test]
    fn differing_workloads_are_named_per_row_and_in_the_findings() {
        let a = stream(
            100.0,
            serde_json::json!({"dir": "tx", "conns": 4, "msg": 65536}),
        );
        let b = stream(
            104.0,
            serde_json::json!({"dir": "rx", "conns": 1, "msg": 1024}),
        );
        let r = compared(cfg("mtu1500", vec![a]), cfg("mtu9000", vec![b]));
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
            TestData {
                kind,
                ..t(name, group, 0.0, 0.0)
            }
            .with(m)
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
        let r = compared(base, cand);
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
        let r = compared(cfg("base", vec![b]), cfg("cand", vec![c]));
        assert_eq!(r.rows[0].interfered, vec![true, false]);
        assert!(r
            .findings
            .iter()
            .any(|f| f.contains("their work is in these CPU") && f.contains("a (base)")));
    }

    #[test]
    fn nothing_in_common_is_said() {
        let (x, y) = (t("x", "g", 1.0, 1.0), t("y", "g", 1.0, 1.0));
        let r = compared(cfg("a", vec![x]), cfg("b", vec![y]));
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

    /// Study 004 publishes averages (7.07 vs 3.20 Gbit/s), study 002 the
    /// mean of the per-test ratios: both, each with its formula, and the
    /// largest per-test ratio naming its test, for throughput and CPU.
    #[test]
    fn averages_and_their_ratio_beside_the_mean_of_ratios() {
        let s = |name: &str, mbit: f64, cpu: f64| {
            TestData {
                main_metric: "mbit_s".into(),
                ..t(name, "g", 0.0, 0.0)
            }
            .with(&[("mbit_s", mbit), ("cpu_pct", cpu)])
        };
        let base = cfg("base", vec![s("a", 1000.0, 20.0), s("b", 5400.0, 40.0)]);
        let cand = cfg("cand", vec![s("a", 3000.0, 10.0), s("b", 11_140.0, 60.0)]);
        let r = compared(base, cand);
        let g = &r.groups[0];
        // Averages 3,200 and 7,070; their ratio 2.209; per-test ratios 3
        // and 2.063, whose mean is 2.531.
        assert_eq!((g.base_mean, g.cand_mean), (Some(3200.0), Some(7070.0)));
        assert!((g.ratio_of_means.unwrap() - 7070.0 / 3200.0).abs() < 1e-9);
        let mor = (3.0 + 11_140.0 / 5400.0) / 2.0;
        assert!((g.mean_of_ratios.unwrap() - mor).abs() < 1e-9);
        assert!((g.mean_diff_pct.unwrap() - (mor - 1.0) * 100.0).abs() < 1e-9);
        assert_eq!(g.max_ratio, Some((3.0, "a".to_string())));
        assert_eq!(g.cpu_min_ratio, Some((0.5, "a".to_string())));
        assert_eq!(g.cpu_max_ratio, Some((1.5, "b".to_string())));
        let f = &r.findings[0];
        for want in [
            "2.53 × by the mean of per-test ratios (mean over tests of cand ÷ base)",
            "averages 7,070 vs 3,200 Mbit/s, 2.21 × by the ratio of averages (mean of cand ÷ mean of base)",
            "up to 3.00 × on a",
            "Whole-host CPU %, cand ÷ base per test: 0.50 × (a) up to 1.50 × (b)",
        ] {
            assert!(f.contains(want), "{want} in {f}");
        }
        // Several metrics in one group (`--by none` over kinds): no average.
        let mut iops = s("c", 100.0, 10.0);
        iops.main_metric = "iops".into();
        iops.metrics.insert("iops".into(), 100.0);
        let mixed = |x: f64| cfg("m", vec![s("a", 1000.0 * x, 20.0), iops.clone()]);
        let m = compare(&[mixed(1.0), mixed(2.0)], None, false, None);
        assert_eq!(
            (m.groups[0].base_mean, m.groups[0].ratio_of_means),
            (None, None)
        );
        assert!(!m.findings[0].contains("averages"), "{}", m.findings[0]);
        let table = r.group_table().unwrap();
        assert!(table
            .head
            .iter()
            .any(|h| h.contains("mean(cand) ÷ mean(base)")));
        assert!(table.head.iter().any(|h| h.contains("mean(cand ÷ base)")));
        assert!(table.rows[0].cells.contains(&"3.00 × (a)".to_string()));
    }
}
