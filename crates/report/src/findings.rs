//! Findings for a single run (there is nothing to compare against, so the
//! sentences are about the run's own numbers: throughput and its CPU cost
//! per kind of test, the CPU-threshold status, repeatability, interference
//! and the run's notes), and the caveats every report states whatever the
//! number of configurations.

use crate::compare::{distinct, Comparison, ConfigData, TestData};
use crate::fmt::num;
use crate::info::RunInfo;
use iotoll_model::metrics::{self as mn, label};

/// CPU % at or above which a test is called CPU-bound.
const SATURATED_PCT: f64 = 95.0;

fn get(t: &TestData, m: &str) -> Option<f64> {
    t.metrics.get(m).copied().filter(|v| v.is_finite())
}

fn list(names: &[&str]) -> String {
    const MAX: usize = 6;
    if names.len() <= MAX {
        names.join(", ")
    } else {
        format!("{} and {} more", names[..MAX].join(", "), names.len() - MAX)
    }
}

/// The findings of one run.
pub fn single_run(cfg: &ConfigData, info: &RunInfo, cpu_threshold: Option<f64>) -> Vec<String> {
    // Tests that failed outright come first: they have no figures below.
    let mut f: Vec<String> = info.failures_finding().into_iter().collect();
    for kind in distinct(cfg.tests.iter().map(|t| t.kind)) {
        let tests: Vec<&TestData> = cfg.tests.iter().filter(|t| t.kind == kind).collect();
        let head = kind.headline();
        let best = tests
            .iter()
            .filter_map(|t| Some((*t, get(t, head)?)))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        let Some((bt, bv)) = best else { continue };
        let cpu = get(bt, mn::CPU_PCT)
            .map(|c| format!(" at {} % CPU", num(Some(c))))
            .unwrap_or_default();
        let mut s = if tests.len() == 1 {
            let what = if bt.name == kind.noun() || bt.name == kind.as_str() {
                bt.name.clone()
            } else {
                format!("{} ({})", bt.name, kind.noun())
            };
            format!("{what}: {} {}{cpu}", num(Some(bv)), label(head))
        } else {
            format!(
                "{} tests ({}): the highest {} was {} on {}{cpu}",
                tests.len(),
                kind.noun(),
                label(head),
                num(Some(bv)),
                bt.name
            )
        };
        let mut parts = Vec::new();
        for e in kind.efficiency() {
            let v: Vec<f64> = tests.iter().filter_map(|t| get(t, e)).collect();
            if v.is_empty() {
                continue;
            }
            let mean = v.iter().sum::<f64>() / v.len() as f64;
            if v.len() == 1 {
                parts.push(format!("{} {}", num(Some(mean)), label(e)));
            } else {
                let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
                let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                parts.push(format!(
                    "{} {} (mean of {} tests, {} to {})",
                    num(Some(mean)),
                    label(e),
                    v.len(),
                    num(Some(lo)),
                    num(Some(hi))
                ));
            }
        }
        if !parts.is_empty() {
            s.push_str("; efficiency: ");
            s.push_str(&parts.join(", "));
        }
        s.push('.');
        f.push(s);
    }

    // CPU: the threshold's verdict, or the range and saturation.
    let with_cpu: Vec<(&str, f64)> = cfg
        .tests
        .iter()
        .filter_map(|t| Some((t.name.as_str(), get(t, mn::CPU_PCT)?)))
        .collect();
    if let Some(th) = cpu_threshold {
        let over: Vec<&str> = with_cpu
            .iter()
            .filter(|(_, c)| *c > th)
            .map(|x| x.0)
            .collect();
        let mut s = format!(
            "Whole-host CPU stayed at or under the {} % threshold on {} of {} tests",
            num(Some(th)),
            with_cpu.len() - over.len(),
            with_cpu.len()
        );
        if !over.is_empty() {
            s.push_str(&format!(" (above it: {})", list(&over)));
        }
        s.push('.');
        f.push(s);
    } else if !with_cpu.is_empty() {
        let lo = with_cpu.iter().map(|x| x.1).fold(f64::INFINITY, f64::min);
        let hi = with_cpu
            .iter()
            .map(|x| x.1)
            .fold(f64::NEG_INFINITY, f64::max);
        f.push(format!(
            "Whole-host CPU ranged from {} % to {} % over the tests (no CPU threshold was set).",
            num(Some(lo)),
            num(Some(hi))
        ));
    }
    let saturated: Vec<&str> = with_cpu
        .iter()
        .filter(|(_, c)| *c >= SATURATED_PCT)
        .map(|x| x.0)
        .collect();
    if !saturated.is_empty() {
        f.push(format!(
            "CPU-bound: whole-host CPU was at {SATURATED_PCT} % or more on {} of {} tests ({}); their throughput may be limited by the host's CPU rather than the device or network.",
            saturated.len(),
            with_cpu.len(),
            list(&saturated)
        ));
    }

    // Repeatability.
    let flagged: Vec<&str> = cfg
        .tests
        .iter()
        .filter(|t| t.repeatable == Some(false))
        .map(|t| t.name.as_str())
        .collect();
    let checked = cfg.tests.iter().filter(|t| t.repeatable.is_some()).count();
    if !flagged.is_empty() {
        f.push(format!(
            "Not repeatable (repetitions disagreed), read with care: {}.",
            list(&flagged)
        ));
    } else if checked > 0 {
        let spread = info
            .tests
            .iter()
            .filter_map(|t| t.spread_pct)
            .fold(0.0f64, f64::max);
        f.push(format!(
            "Repeatable: the repetitions of all {checked} checked tests agreed (largest spread {} %).",
            num(Some(spread))
        ));
    } else if info.tests.iter().any(|t| t.reps == 1) && info.tests.iter().all(|t| t.reps <= 1) {
        f.push(
            "Each test ran once: repeatability was not checked (run with --reps 3 to check it)."
                .into(),
        );
    }
    f.extend(caveats(
        std::slice::from_ref(cfg),
        std::slice::from_ref(info),
    ));
    f
}

/// Caveats for any number of configurations: smoke runs, interference,
/// a network peer on this host. A caveat that holds for several
/// configurations is said once, naming them.
pub fn caveats<'a>(configs: &'a [ConfigData], infos: &[RunInfo]) -> Vec<String> {
    // (sentence, configurations it holds for), in first-seen order.
    let mut said: Vec<(String, Vec<&str>)> = Vec::new();
    let mut say = |s: String, who: &'a str| {
        if let Some(x) = said.iter_mut().find(|x| x.0 == s) {
            x.1.push(who);
        } else {
            said.push((s, vec![who]));
        }
    };
    for (cfg, info) in configs.iter().zip(infos) {
        let who = cfg.label.as_str();
        if let Some(n) = &info.overridden {
            say(format!("Smoke run: {n}."), who);
        }
        let interfered: Vec<&str> = info
            .tests
            .iter()
            .filter(|t| t.interfered == Some(true))
            .map(|t| t.name.as_str())
            .collect();
        let busy = cfg
            .notes
            .iter()
            .filter(|n| n.starts_with("interference:") || n.starts_with("another process"))
            .count();
        // With several configurations the comparison's findings name the
        // interfered tests per configuration.
        if !interfered.is_empty() && configs.len() == 1 {
            say(
                format!(
                    "Interfered: other processes used more CPU than allowed during {} (their CPU is counted in the whole-host figures).",
                    list(&interfered)
                ),
                who,
            );
        } else if busy > 0 && interfered.is_empty() {
            say(
                "Other processes were using the CPU (see Warnings and notes); whole-host CPU counts them too.".into(),
                who,
            );
        }
        // Other processes cannot use more of the host than the host used:
        // such a figure is an accounting artefact, and says so.
        let impossible: Vec<&str> = cfg
            .tests
            .iter()
            .filter(|t| match (get(t, "cpu_others_pct"), get(t, mn::CPU_PCT)) {
                (Some(o), Some(c)) => o > c + 1.0,
                _ => false,
            })
            .map(|t| t.name.as_str())
            .collect();
        if !impossible.is_empty() {
            say(
                format!(
                    "Inconsistent: other processes' CPU % exceeds the whole-host CPU % on {}, which cannot be: the per-process accounting is wrong there, so their interference figures are not a measurement.",
                    list(&impossible)
                ),
                who,
            );
        }
        if info.same_host() {
            say(
                "The network peer was this host (same kernel): remote CPU is this host's CPU, not a second machine's, and is not shown as one.".into(),
                who,
            );
        }
    }
    said.into_iter()
        .map(|(s, who)| {
            if configs.len() == 1 {
                s
            } else if who.len() == configs.len() {
                format!("All configurations: {s}")
            } else {
                format!("{}: {s}", who.join(", "))
            }
        })
        .collect()
}

/// The findings a report shows: a single run's from its numbers, a
/// comparison's with the caveats of every configuration.
pub fn for_report(c: &Comparison, configs: &[ConfigData], infos: &[RunInfo]) -> Vec<String> {
    if configs.len() == 1 {
        single_run(
            &configs[0],
            &infos.first().cloned().unwrap_or_default(),
            c.cpu_threshold_pct,
        )
    } else {
        let mut f = c.findings.clone();
        f.extend(caveats(configs, infos));
        f
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::test_data::{self, test};
    use crate::info::TestInfo;

    fn t(name: &str, kind: &str, pairs: &[(&str, f64)], repeatable: Option<bool>) -> TestData {
        TestData {
            repeatable,
            ..test(name, kind, pairs)
        }
    }

    fn cfg(tests: Vec<TestData>, notes: Vec<String>) -> ConfigData {
        ConfigData {
            notes,
            ..test_data::cfg("x", tests)
        }
    }

    #[test]
    fn a_single_run_gets_findings_from_its_numbers() {
        let c = cfg(
            vec![
                t(
                    "a",
                    "disk",
                    &[
                        ("iops", 1000.0),
                        ("cpu_pct", 10.0),
                        ("iops_per_cpu_pct", 100.0),
                    ],
                    Some(true),
                ),
                t(
                    "b",
                    "disk",
                    &[
                        ("iops", 3000.0),
                        ("cpu_pct", 97.0),
                        ("iops_per_cpu_pct", 3000.0 / 97.0),
                    ],
                    Some(false),
                ),
                t(
                    "s",
                    "net-stream",
                    &[
                        ("mbit_s", 9000.0),
                        ("cpu_pct", 45.0),
                        ("mbit_s_per_cpu_pct", 200.0),
                    ],
                    None,
                ),
            ],
            vec!["interference: rustc (pid 7) used 30 % of the CPUs".into()],
        );
        let info = RunInfo {
            overridden: Some("durations overridden: ramp 0s, time 1s".into()),
            tests: vec![TestInfo {
                name: "s".into(),
                same_host: Some(true),
                interfered: Some(true),
                reps: 1,
                ..Default::default()
            }],
            ..Default::default()
        };
        let f = single_run(&c, &info, Some(50.0));
        let all = f.join("\n");
        for want in [
            "2 tests (disk): the highest IOPS was 3,000 on b at 97.0 % CPU",
            // Mean of 100 and 30.93 = 65.46.
            "65.5 IOPS per % CPU (mean of 2 tests, 30.9 to 100)",
            "s (stream): 9,000 Mbit/s at 45.0 % CPU; efficiency: 200 Mbit/s per % CPU.",
            "under the 50.0 % threshold on 2 of 3 tests (above it: b)",
            "CPU-bound",
            "(b)",
            "Not repeatable",
            ": b.",
            "Smoke run",
            "Interfered",
            "during s",
            "The network peer was this host",
        ] {
            assert!(all.contains(want), "{want} in {all}");
        }
        assert!(!all.contains("iops_per_cpu_pct"), "human names only: {all}");
    }

    #[test]
    fn no_threshold_and_single_repetitions() {
        let c = cfg(
            vec![t(
                "a",
                "net-rr",
                &[
                    ("trans_s", 20000.0),
                    ("cpu_pct", 12.0),
                    ("cpu_others_pct", 300.0),
                ],
                None,
            )],
            Vec::new(),
        );
        let info = RunInfo {
            tests: vec![TestInfo {
                name: "a".into(),
                reps: 1,
                ..Default::default()
            }],
            ..Default::default()
        };
        let f = single_run(&c, &info, None).join("\n");
        assert!(f.contains("ranged from 12.0 % to 12.0 %"), "{f}");
        assert!(f.contains("Each test ran once"), "{f}");
        assert!(!f.contains("CPU-bound") && !f.contains("Smoke"), "{f}");
        assert!(
            f.contains("Inconsistent: other processes' CPU % exceeds the whole-host CPU % on a"),
            "{f}"
        );
    }
}
