//! Findings for a single run (there is nothing to compare against, so the
//! sentences are about the run's own numbers: throughput and its CPU cost
//! per kind of test, the CPU-threshold status, repeatability, interference
//! and the run's notes), and the caveats every report states whatever the
//! number of configurations.

use crate::compare::{distinct, Comparison, ConfigData, Efficiency, GroupSummary, Row, TestData};
use crate::fmt::{num, pct};
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

/// The efficiency figures of a run's tests of one kind, per class of like
/// tests (transfer-size class: a mean over 4k and 1m tests says little),
/// as "; efficiency: …". A peer's CPU is left out where the peer was this
/// host: it is not a second machine's (the tables say "(same host)").
fn efficiency_parts(kind: iotoll_model::Kind, tests: &[&TestData], info: &RunInfo) -> String {
    let same_host = |t: &TestData| {
        t.same_host_peer
            || info
                .test(&t.name)
                .is_some_and(|i| i.same_host == Some(true))
    };
    let classes = distinct(tests.iter().map(|t| crate::compare::size_class(t)));
    let mut out = Vec::new();
    for class in &classes {
        let like: Vec<&&TestData> = tests
            .iter()
            .filter(|t| &crate::compare::size_class(t) == class)
            .collect();
        let mut parts = Vec::new();
        for e in kind.efficiency() {
            let v: Vec<f64> = like
                .iter()
                .filter(|t| !(crate::tables::remote_cpu_metric(e) && same_host(t)))
                .filter_map(|t| get(t, e))
                .collect();
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
        if parts.is_empty() {
            continue;
        }
        if classes.len() > 1 {
            let name = match class.as_str() {
                "" => "other sizes".to_string(),
                c => format!("{c} transfers"),
            };
            out.push(format!("{name}: {}", parts.join(", ")));
        } else {
            out.push(parts.join(", "));
        }
    }
    if out.is_empty() {
        String::new()
    } else {
        format!("; efficiency: {}", out.join("; "))
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
        s.push_str(&efficiency_parts(kind, &tests, info));
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
        f.push(if with_cpu.len() == 1 {
            format!(
                "Whole-host CPU was {} % (no CPU threshold was set).",
                num(Some(lo))
            )
        } else {
            format!(
                "Whole-host CPU ranged from {} % to {} % over the tests (no CPU threshold was set).",
                num(Some(lo)),
                num(Some(hi))
            )
        });
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
        let which = match checked {
            1 => "the one checked test".to_string(),
            n => format!("all {n} checked tests"),
        };
        f.push(format!(
            "Repeatable: the repetitions of {which} agreed (largest spread {} %).",
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

/// Where a comparison's finding ranks: on tests the compared setting
/// affects first, then those it is not known to, then those it cannot
/// affect (MTU and a local disk test).
fn rank(rows: &[&Row]) -> u8 {
    if rows.iter().any(|r| r.affected == Some(true)) {
        0
    } else if !rows.is_empty() && rows.iter().all(|r| r.affected == Some(false)) {
        2
    } else {
        1
    }
}

/// What a finding on `rows` must say in the same sentence: the tests that
/// the compared setting cannot affect, interference and repeatability, for
/// the baseline and candidate `ci`.
fn marks(c: &Comparison, rows: &[&Row], ci: usize) -> String {
    let mut s = String::new();
    let unaffected: Vec<&str> = rows
        .iter()
        .filter(|r| r.affected == Some(false))
        .map(|r| r.test.as_str())
        .collect();
    let settings = crate::differs::settings_named(&c.differs);
    if !unaffected.is_empty() && unaffected.len() == rows.len() {
        s.push_str(&format!(
            " Noise: what differs ({settings}) cannot affect these tests' workload, so this difference is not the configurations'."
        ));
    } else if !unaffected.is_empty() {
        s.push_str(&format!(
            " {} of these {} tests cannot be affected by what differs ({settings}): {}.",
            unaffected.len(),
            rows.len(),
            list(&unaffected)
        ));
    }
    let interfered: Vec<String> = rows
        .iter()
        .filter_map(|r| {
            let who: Vec<&str> = [0, ci]
                .iter()
                .filter(|i| r.interfered.get(**i) == Some(&true))
                .map(|i| c.configs[*i].as_str())
                .collect();
            (!who.is_empty()).then(|| format!("{} ({})", r.test, who.join(", ")))
        })
        .collect();
    let everywhere = rows
        .iter()
        .all(|r| r.interfered.first() == Some(&true) && r.interfered.get(ci) == Some(&true));
    if !interfered.is_empty() {
        let which = if everywhere && rows.len() == 2 {
            "both tests, in both configurations".to_string()
        } else if everywhere && rows.len() > 1 {
            format!("all {} tests, in both configurations", rows.len())
        } else if everywhere {
            format!("{}, in both configurations", rows[0].test)
        } else {
            format!(
                "{} of {} tests: {}",
                interfered.len(),
                rows.len(),
                crate::compare::some(&interfered, "; ")
            )
        };
        s.push_str(&format!(
            " ⚑ Interfered on {which} (other processes used the host's CPU: their work is in these CPU and efficiency figures)."
        ));
    }
    let flagged: Vec<&str> = rows
        .iter()
        .filter(|r| r.not_repeatable)
        .map(|r| r.test.as_str())
        .collect();
    if !flagged.is_empty() {
        s.push_str(&format!(
            " ⚠ Not repeatable (repetitions disagreed) on {} of {}, read with care: {}.",
            flagged.len(),
            rows.len(),
            list(&flagged)
        ));
    }
    s
}

fn times(v: f64) -> String {
    format!("{v:.2} ×")
}

/// A group's sentence for one candidate: the mean of the per-test ratios
/// (study 002), the averages and their ratio (study 004), the largest
/// per-test ratio, wins, and the CPU ratios per test.
fn group_sentence(c: &Comparison, g: &GroupSummary) -> Option<String> {
    let (mean, lo, hi) = (g.mean_diff_pct?, g.min_diff_pct?, g.max_diff_pct?);
    let base = &c.configs[0];
    let cand = &g.candidate;
    let word = if mean >= 0.0 { "higher" } else { "lower" };
    let hint = if mn::lower_is_better(&g.metric) {
        " (lower is better)"
    } else {
        ""
    };
    let metric = label(&g.metric);
    let mut s = format!(
        "{cand} achieved an average {:.1} % {word} {metric}{hint} than {base} on {} tests",
        mean.abs(),
        g.group
    );
    if g.tests > 1 {
        s.push_str(&format!(" ({} to {})", pct(Some(lo)), pct(Some(hi))));
    }
    if let Some(m) = g.mean_of_ratios {
        s.push_str(&format!(
            ": {} by the mean of per-test ratios (mean over tests of {cand} ÷ {base})",
            times(m)
        ));
    }
    if let (Some(b), Some(v), Some(r)) = (g.base_mean, g.cand_mean, g.ratio_of_means) {
        s.push_str(&format!(
            "; averages {} vs {} {metric}, {} by the ratio of averages (mean of {cand} ÷ mean of {base})",
            num(Some(v)),
            num(Some(b)),
            times(r)
        ));
    }
    if let (Some((r, t)), true) = (&g.max_ratio, g.tests > 1) {
        s.push_str(&format!("; up to {} on {t}", times(*r)));
    }
    s.push_str(&format!("; it did better on {} of {}.", g.wins, g.tests));
    match (&g.cpu_min_ratio, &g.cpu_max_ratio) {
        (Some((lo, _)), Some((hi, _))) if g.tests > 1 && times(*lo) == times(*hi) => {
            s.push_str(&format!(
                " Whole-host CPU %, {cand} ÷ {base}: {} on every test.",
                times(*lo)
            ))
        }
        (Some((lo, tl)), Some((hi, th))) if g.tests > 1 && tl != th => s.push_str(&format!(
            " Whole-host CPU %, {cand} ÷ {base} per test: {} ({tl}) up to {} ({th}).",
            times(*lo),
            times(*hi)
        )),
        (Some((r, _)), _) => s.push_str(&format!(
            " Whole-host CPU %, {cand} ÷ {base}: {}.",
            times(*r)
        )),
        _ => {}
    }
    Some(s)
}

/// What an efficiency measure counts, for the footnote when two disagree:
/// which end, and per what.
fn counts(m: &str) -> &'static str {
    match m {
        mn::IOPS_PER_CPU_PCT => "I/Os per percent of this host's CPU (local end; a percent whatever the CPU count; per operation)",
        mn::MB_S_PER_CPU_PCT | mn::MBIT_S_PER_CPU_PCT => {
            "bytes per percent of this host's CPU (local end; a percent whatever the CPU count; per byte)"
        }
        mn::REMOTE_MBIT_S_PER_CPU_PCT => "bytes per percent of the peer's CPU (the far end only)",
        mn::CPU_US_PER_IO => "CPU time of all this host's CPUs per I/O (per operation, whatever its size)",
        mn::CPU_US_PER_KB => "CPU time of all this host's CPUs per KB moved (per byte)",
        mn::CPU_US_PER_TRANS => "CPU time of all this host's CPUs per request/response (per transaction)",
        _ => "see docs/metrics.md",
    }
}

/// When a class's efficiency measures disagree on the candidate (one says
/// 1.00 ×, another 0.66 ×), what each counts.
fn disagreement(base: &Efficiency, cand: &Efficiency, what: &str) -> Option<String> {
    // The candidate's advantage by each measure: > 1 is better.
    let adv: Vec<(&str, f64, f64)> = base
        .kind
        .efficiency()
        .filter_map(|e| {
            let (b, v) = (*base.means.get(e)?, *cand.means.get(e)?);
            (b > 0.0 && v > 0.0).then(|| {
                let a = if mn::lower_is_better(e) { b / v } else { v / b };
                (e, v / b, a)
            })
        })
        .collect();
    let lo = adv.iter().map(|x| x.2).reduce(f64::min)?;
    let hi = adv.iter().map(|x| x.2).reduce(f64::max)?;
    if hi / lo <= 1.1 {
        return None;
    }
    let each: Vec<String> = adv
        .iter()
        .map(|(e, r, _)| format!("{} {} counts {}", label(e), times(*r), counts(e)))
        .collect();
    Some(format!(
        "Footnote ({what}, {} against {}): the efficiency measures disagree. What each counts: {}. Besides what they count (which end; a percent or CPU time; per operation, byte or transaction), each is a mean of per-test values, so an index (throughput ÷ CPU, higher is better) and a cost (CPU ÷ throughput, lower is better) weigh the tests differently.",
        cand.label,
        base.label,
        each.join("; ")
    ))
}

/// Sentences drawn from a comparison's numbers only. Findings on tests
/// the compared setting can affect come first; each says in the same
/// sentence which of its tests were interfered or not repeatable.
pub fn comparison(c: &Comparison) -> Vec<String> {
    let base = &c.configs[0];
    let mut ranked: Vec<(u8, String)> = Vec::new();
    for g in &c.groups {
        let Some(s) = group_sentence(c, g) else {
            continue;
        };
        let ci = c
            .configs
            .iter()
            .position(|l| l == &g.candidate)
            .unwrap_or(1);
        let rows: Vec<&Row> = c
            .rows
            .iter()
            .filter(|r| r.group == g.group && r.values[0].is_some() && r.values[ci].is_some())
            .collect();
        ranked.push((rank(&rows), format!("{s}{}", marks(c, &rows, ci))));
    }
    // Each class's headline efficiency, candidate against baseline.
    let classes = distinct(c.efficiency.iter().map(|e| (e.kind, e.class.clone())));
    for (kind, class) in classes {
        let of: Vec<&Efficiency> = c
            .efficiency
            .iter()
            .filter(|e| e.kind == kind && e.class == class)
            .collect();
        let Some(b) = of.first() else { continue };
        let Some(e) = kind.efficiency().find(|e| b.means.contains_key(*e)) else {
            continue;
        };
        let what = if class.is_empty() {
            format!("{kind} tests")
        } else {
            format!("{kind} tests of {class} transfers")
        };
        let rows: Vec<&Row> = c
            .rows
            .iter()
            .filter(|r| b.names.contains(&r.test))
            .collect();
        for (ci, cand) in of.iter().enumerate().skip(1) {
            let (Some(bv), Some(v)) = (b.means.get(e), cand.means.get(e)) else {
                continue;
            };
            if *bv <= 0.0 {
                continue;
            }
            let verb = if mn::lower_is_better(e) {
                "used"
            } else {
                "delivered"
            };
            let s = format!(
                "On {what} {} {verb} {:.2} × {base}'s {}: {} vs {}, the mean over the {} test(s) both have.{}",
                cand.label,
                v / bv,
                label(e),
                num(Some(*v)),
                num(Some(*bv)),
                b.tests,
                marks(c, &rows, ci)
            );
            let r = rank(&rows);
            ranked.push((r, s));
            if let Some(n) = disagreement(b, cand, &what) {
                ranked.push((r, n));
            }
        }
    }
    // Stable: within a rank, the order above (groups, then efficiency).
    ranked.sort_by_key(|x| x.0);
    let mut f: Vec<String> = ranked.into_iter().map(|x| x.1).collect();
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
    if !c.unmatched.is_empty() {
        f.push(format!(
            "Compared only where every configuration has the test; {} test(s) missing somewhere: {}.",
            c.unmatched.len(),
            c.unmatched.join(", ")
        ));
    }
    f
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
        assert!(f.contains("Whole-host CPU was 12.0 %"), "{f}");
        assert!(f.contains("Each test ran once"), "{f}");
        assert!(!f.contains("CPU-bound") && !f.contains("Smoke"), "{f}");
        assert!(
            f.contains("Inconsistent: other processes' CPU % exceeds the whole-host CPU % on a"),
            "{f}"
        );
    }

    fn mtu_config(label: &str, sets: &str, tests: Vec<TestData>) -> ConfigData {
        ConfigData {
            disclosure: Some(serde_json::json!({"lab": {"sets": sets}, "os": {"kernel": "6.1"}})),
            ..test_data::cfg(label, tests)
        }
    }

    /// The README's lab workflow: the first findings were "mtu9000 achieved
    /// an average 207.1 % higher IOPS" and "10.42 × IOPS per % CPU" — disk
    /// tests MTU cannot affect, on a baseline other processes loaded, with
    /// the caveat several bullets later.
    #[test]
    fn findings_lead_with_what_the_compared_setting_can_affect() {
        let disk = |iops: f64, cpu: f64, interfered: bool| {
            let mut t = test(
                "disk/spec=db-oltp-8k",
                "disk",
                &[("iops", iops), ("cpu_pct", cpu)],
            );
            iotoll_model::rederive_metrics(&mut t.metrics);
            t.spec = serde_json::json!({"bs": 8192}).into();
            if interfered {
                t.interference = vec!["interference: cargo 93 %".into()];
            }
            t
        };
        let stream = |mbit: f64, repeatable: bool| {
            let mut t = test(
                "stream",
                "net-stream",
                &[("mbit_s", mbit), ("cpu_pct", 20.0)],
            );
            iotoll_model::rederive_metrics(&mut t.metrics);
            t.main_metric = "mbit_s".into();
            t.spec = serde_json::json!({"msg": 65536, "peer": "198.18.0.2:44933"}).into();
            t.repeatable = Some(repeatable);
            t
        };
        let base = mtu_config(
            "mtu1500",
            "",
            vec![disk(10_000.0, 96.0, true), stream(940.0, true)],
        );
        let cand = mtu_config(
            "mtu9000",
            "mtu=9000",
            vec![disk(30_710.0, 30.0, false), stream(990.0, false)],
        );
        let c = crate::compare(&[base, cand], None, true, None);
        let f = &c.findings;
        let at = |needle: &str| {
            f.iter()
                .position(|x| x.contains(needle))
                .unwrap_or(usize::MAX)
        };
        // The stream findings (MTU can affect them) come first, the disk
        // ones after, said to be noise.
        assert!(f[0].contains("on net-stream tests"), "{f:#?}");
        assert!(at("on disk tests") > at("On net-stream tests"), "{f:#?}");
        let disk_line = &f[at("on disk tests")];
        assert!(disk_line.contains("207.1 % higher IOPS"), "{disk_line}");
        assert!(
            disk_line.contains("Noise: what differs (lab.sets)"),
            "{disk_line}"
        );
        // Interference and repeatability in the same bullet, not apart.
        assert!(
            disk_line.contains("⚑ Interfered on 1 of 1 tests"),
            "{disk_line}"
        );
        assert!(
            disk_line.contains("disk/spec=db-oltp-8k (mtu1500)"),
            "{disk_line}"
        );
        let eff = &f[at("On disk tests")];
        assert!(eff.contains("Noise") && eff.contains("Interfered"), "{eff}");
        assert!(f[0].contains("⚠ Not repeatable"), "{}", f[0]);
        assert!(
            !f.iter()
                .any(|x| x.starts_with("Other processes used") || x.starts_with("Not repeatable")),
            "{f:#?}"
        );
    }

    /// "7.51 Mbit/s per % remote CPU" in the findings while the table said
    /// "(same host)": a peer on this host has no remote-CPU efficiency.
    #[test]
    fn no_remote_cpu_efficiency_when_the_peer_is_this_host() {
        let stream = |same_host: bool| {
            let mut t = t(
                "bidir",
                "net-stream",
                &[
                    ("mbit_s", 751.0),
                    ("cpu_pct", 50.0),
                    ("remote_cpu_pct", 100.0),
                ],
                None,
            );
            iotoll_model::rederive_metrics(&mut t.metrics);
            t.same_host_peer = same_host;
            t
        };
        let info = RunInfo::default();
        let f = single_run(&cfg(vec![stream(true)], Vec::new()), &info, None).join("\n");
        assert!(f.contains("15.0 Mbit/s per % CPU"), "{f}");
        assert!(!f.contains("per % remote CPU"), "{f}");
        // A loopback peer known only to the run's facts counts too.
        let info_same = RunInfo {
            tests: vec![TestInfo {
                name: "bidir".into(),
                same_host: Some(true),
                ..Default::default()
            }],
            ..Default::default()
        };
        let f = single_run(&cfg(vec![stream(false)], Vec::new()), &info_same, None).join("\n");
        assert!(!f.contains("per % remote CPU"), "{f}");
        // A second machine keeps it.
        let f = single_run(&cfg(vec![stream(false)], Vec::new()), &info, None).join("\n");
        assert!(f.contains("7.51 Mbit/s per % remote CPU"), "{f}");
        // Comparisons: no remote mean, no remote finding.
        let c = crate::compare(
            &[
                test_data::cfg("a", vec![stream(true)]),
                test_data::cfg("b", vec![stream(true)]),
            ],
            None,
            true,
            None,
        );
        assert!(c
            .efficiency
            .iter()
            .all(|e| !e.means.keys().any(|k| k.starts_with("remote"))));
        assert!(
            !c.findings.join("\n").contains("remote"),
            "{:?}",
            c.findings
        );
    }

    /// One efficiency mean over 4 KiB and 1 MiB tests said little: each
    /// class of like tests gets its own.
    #[test]
    fn efficiency_is_per_class_of_like_tests() {
        let disk = |name: &str, bs: u64, iops: f64| {
            let mut t = t(name, "disk", &[("iops", iops), ("cpu_pct", 10.0)], None);
            iotoll_model::rederive_metrics(&mut t.metrics);
            t.spec = serde_json::json!({"bs": bs}).into();
            t
        };
        let tests = || vec![disk("r4k", 4096, 50_000.0), disk("r1m", 1 << 20, 1_000.0)];
        let f = single_run(&cfg(tests(), Vec::new()), &RunInfo::default(), None).join("\n");
        assert!(f.contains("≤ 8k transfers: 5,000 IOPS per % CPU"), "{f}");
        assert!(f.contains("≥ 256k transfers: 100 IOPS per % CPU"), "{f}");
        assert!(!f.contains("2,550"), "no mean over both: {f}");
        let c = crate::compare(
            &[test_data::cfg("a", tests()), test_data::cfg("b", tests())],
            None,
            true,
            None,
        );
        let classes: Vec<(&str, usize)> = c
            .efficiency
            .iter()
            .filter(|e| e.label == "a")
            .map(|e| (e.class.as_str(), e.tests))
            .collect();
        assert_eq!(classes, vec![("≤ 8k", 1), ("≥ 256k", 1)]);
    }

    /// P/E 1.00 × but CPU µs per KB 0.66 ×: a footnote says what each
    /// counts.
    #[test]
    fn disagreeing_efficiency_measures_get_a_footnote() {
        let stream = |cpus: f64| {
            let mut t = t(
                "s",
                "net-stream",
                &[("mbit_s", 1000.0), ("cpu_pct", 20.0), ("cpus", cpus)],
                None,
            );
            iotoll_model::rederive_metrics(&mut t.metrics);
            t
        };
        let c = crate::compare(
            &[
                test_data::cfg("a", vec![stream(3.0)]),
                test_data::cfg("b", vec![stream(2.0)]),
            ],
            None,
            true,
            None,
        );
        let f = c.findings.join("\n");
        assert!(f.contains("delivered 1.00 × a's Mbit/s per % CPU"), "{f}");
        let note = c
            .findings
            .iter()
            .find(|x| x.starts_with("Footnote"))
            .unwrap_or_else(|| panic!("no footnote: {f}"));
        for want in [
            "Mbit/s per % CPU 1.00 ×",
            "CPU µs per KB 0.67 ×",
            "local end",
            "per KB moved",
        ] {
            assert!(note.contains(want), "{want} in {note}");
        }
        // Measures that agree need no footnote.
        let c = crate::compare(
            &[
                test_data::cfg("a", vec![stream(2.0)]),
                test_data::cfg("b", vec![stream(2.0)]),
            ],
            None,
            true,
            None,
        );
        assert!(!c.findings.iter().any(|x| x.starts_with("Footnote")));
    }
}
