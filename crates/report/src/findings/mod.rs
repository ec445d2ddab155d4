//! Findings for a single run (there is nothing to compare against, so the
//! sentences are about the run's own numbers: throughput and its CPU cost
//! per kind of test, the CPU-threshold status, repeatability, interference
//! and the run's notes), and the caveats every report states whatever the
//! number of configurations.

use crate::compare::{distinct, mean, size_class, Comparison, ConfigData, Efficiency};
use crate::compare::{GroupSummary, Row, TestData};
use crate::fmt::{num, pct};
use crate::info::RunInfo;
use iotoll_model::metrics::{self as mn, label};
use iotoll_model::Kind;

/// CPU % at or above which a test is called CPU-bound.
const SATURATED_PCT: f64 = 95.0;

fn get(t: &TestData, m: &str) -> Option<f64> {
    t.metrics.get(m).copied().filter(|v| v.is_finite())
}

/// The first `shown` items of a long list joined by `sep`, and after
/// `and` how many more there are.
pub(crate) fn some<S: AsRef<str>>(items: &[S], shown: usize, sep: &str, and: &str) -> String {
    let head: Vec<&str> = items.iter().take(shown).map(AsRef::as_ref).collect();
    if items.len() > shown {
        format!("{}{and}{} more", head.join(sep), items.len() - shown)
    } else {
        head.join(sep)
    }
}

fn list(names: &[&str]) -> String {
    some(names, 6, ", ", " and ")
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
    let classes = distinct(tests.iter().map(|t| size_class(t)));
    let mut out = Vec::new();
    for class in &classes {
        let like = tests.iter().filter(|t| &size_class(t) == class);
        let parts: Vec<String> = (kind.efficiency())
            .filter_map(|e| {
                let v: Vec<f64> = (like.clone())
                    .filter(|t| !(crate::tables::remote_cpu_metric(e) && same_host(t)))
                    .filter_map(|t| get(t, e))
                    .collect();
                let m = num(Some(mean(&v)?));
                let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
                let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                Some(match v.len() {
                    1 => format!("{m} {}", label(e)),
                    n => format!(
                        "{m} {} (mean of {n} tests, {} to {})",
                        label(e),
                        num(Some(lo)),
                        num(Some(hi))
                    ),
                })
            })
            .collect();
        if parts.is_empty() {
            continue;
        }
        let parts = parts.join(", ");
        out.push(match class.as_str() {
            _ if classes.len() == 1 => parts,
            "" => format!("other sizes: {parts}"),
            c => format!("{c} transfers: {parts}"),
        });
    }
    if out.is_empty() {
        String::new()
    } else {
        format!("; efficiency: {}", out.join("; "))
    }
}

pub fn single_run(cfg: &ConfigData, info: &RunInfo, cpu_threshold: Option<f64>) -> Vec<String> {
    // Tests that failed outright come first: they have no figures below.
    let mut f: Vec<String> = info.failures_finding().into_iter().collect();
    for kind in distinct(cfg.tests.iter().map(|t| t.kind)) {
        f.extend(best_of_kind(cfg, info, kind));
    }
    let with_cpu: Vec<(&str, f64)> = (cfg.tests.iter())
        .filter_map(|t| Some((t.name.as_str(), get(t, mn::CPU_PCT)?)))
        .collect();
    f.extend(cpu_range(&with_cpu, cpu_threshold));
    let saturated: Vec<&str> = (with_cpu.iter())
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
    f.extend(repeatability(cfg, info));
    f.extend(caveats(
        std::slice::from_ref(cfg),
        std::slice::from_ref(info),
    ));
    f
}

/// A kind's best headline figure, with its CPU and efficiency.
fn best_of_kind(cfg: &ConfigData, info: &RunInfo, kind: Kind) -> Option<String> {
    let tests: Vec<&TestData> = cfg.tests.iter().filter(|t| t.kind == kind).collect();
    let head = kind.headline();
    let (bt, bv) = (tests.iter())
        .filter_map(|t| Some((*t, get(t, head)?)))
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
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
    Some(s)
}

/// CPU: the threshold's verdict, or the range over the tests.
fn cpu_range(with_cpu: &[(&str, f64)], cpu_threshold: Option<f64>) -> Option<String> {
    if let Some(th) = cpu_threshold {
        let over: Vec<&str> = (with_cpu.iter())
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
        return Some(s);
    }
    let lo = with_cpu.iter().map(|x| x.1).fold(f64::INFINITY, f64::min);
    let hi = (with_cpu.iter().map(|x| x.1)).fold(f64::NEG_INFINITY, f64::max);
    match with_cpu.len() {
        0 => None,
        1 => Some(format!(
            "Whole-host CPU was {} % (no CPU threshold was set).",
            num(Some(lo))
        )),
        _ => Some(format!(
            "Whole-host CPU ranged from {} % to {} % over the tests (no CPU threshold was set).",
            num(Some(lo)),
            num(Some(hi))
        )),
    }
}

/// Whether the repetitions agreed, or that nothing was repeated.
fn repeatability(cfg: &ConfigData, info: &RunInfo) -> Option<String> {
    let flagged: Vec<&str> = (cfg.tests.iter())
        .filter(|t| t.repeatable == Some(false))
        .map(|t| t.name.as_str())
        .collect();
    let checked = cfg.tests.iter().filter(|t| t.repeatable.is_some()).count();
    if !flagged.is_empty() {
        Some(format!(
            "Not repeatable (repetitions disagreed), read with care: {}.",
            list(&flagged)
        ))
    } else if checked > 0 {
        let spread = (info.tests.iter())
            .filter_map(|t| t.spread_pct)
            .fold(0.0f64, f64::max);
        let which = match checked {
            1 => "the one checked test".to_string(),
            n => format!("all {n} checked tests"),
        };
        Some(format!(
            "Repeatable: the repetitions of {which} agreed (largest spread {} %).",
            num(Some(spread))
        ))
    } else if info.tests.iter().any(|t| t.reps == 1) && info.tests.iter().all(|t| t.reps <= 1) {
        Some(
            "Each test ran once: repeatability was not checked (run with --reps 3 to check it)."
                .into(),
        )
    } else {
        None
    }
}

/// Caveats for any number of configurations: smoke runs, interference,
/// a network peer on this host. A caveat that holds for several
/// configurations is said once, naming them.
pub fn caveats(configs: &[ConfigData], infos: &[RunInfo]) -> Vec<String> {
    // (sentence, configurations it holds for), in first-seen order.
    let mut said: Vec<(String, Vec<&str>)> = Vec::new();
    for (cfg, info) in configs.iter().zip(infos) {
        let mut mine = Vec::new();
        if let Some(n) = &info.overridden {
            mine.push(format!("Smoke run: {n}."));
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
            mine.push(format!(
                "Interfered: other processes used more CPU than allowed during {} (their CPU is counted in the whole-host figures).",
                list(&interfered)
            ));
        } else if busy > 0 && interfered.is_empty() {
            mine.push(
                "Other processes were using the CPU (see Warnings and notes); whole-host CPU counts them too.".into(),
            );
        }
        // Other processes cannot use more of the host than the host used:
        // such a figure is an accounting artefact, and says so.
        let impossible: Vec<&str> = (cfg.tests.iter())
            .filter(|t| {
                let others = get(t, "cpu_others_pct").zip(get(t, mn::CPU_PCT));
                others.is_some_and(|(o, c)| o > c + 1.0)
            })
            .map(|t| t.name.as_str())
            .collect();
        if !impossible.is_empty() {
            mine.push(format!(
                "Inconsistent: other processes' CPU % exceeds the whole-host CPU % on {}, which cannot be: the per-process accounting is wrong there, so their interference figures are not a measurement.",
                list(&impossible)
            ));
        }
        if info.same_host() {
            mine.push(
                "The network peer was this host (same kernel): remote CPU is this host's CPU, not a second machine's, and is not shown as one.".into(),
            );
        }
        for s in mine {
            match said.iter_mut().find(|x| x.0 == s) {
                Some(x) => x.1.push(&cfg.label),
                None => said.push((s, vec![&cfg.label])),
            }
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
    let tests_where = |keep: fn(&Row) -> bool| -> Vec<&str> {
        rows.iter()
            .filter(|r| keep(r))
            .map(|r| r.test.as_str())
            .collect()
    };
    let unaffected = tests_where(|r| r.affected == Some(false));
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
                some(&interfered, 6, "; ", "; and ")
            )
        };
        s.push_str(&format!(
            " ⚑ Interfered on {which} (other processes used the host's CPU: their work is in these CPU and efficiency figures)."
        ));
    }
    let flagged = tests_where(|r| r.not_repeatable);
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

/// Each class's headline efficiency, candidate against baseline, ranked
/// as `comparison` ranks its findings.
fn efficiency_findings(c: &Comparison) -> Vec<(u8, String)> {
    let base = &c.configs[0];
    let mut ranked = Vec::new();
    // Each class's entries, one per configuration (baseline first).
    for of in c.efficiency.chunks(c.configs.len().max(1)) {
        let (b, kind) = (&of[0], of[0].kind);
        let Some(e) = kind.efficiency().find(|e| b.means.contains_key(*e)) else {
            continue;
        };
        let what = match b.class.as_str() {
            "" => format!("{kind} tests"),
            class => format!("{kind} tests of {class} transfers"),
        };
        let rows: Vec<&Row> = c
            .rows
            .iter()
            .filter(|r| b.names.contains(&r.test))
            .collect();
        for (ci, cand) in of.iter().enumerate().skip(1) {
            let base_value = b.means.get(e).filter(|bv| **bv > 0.0);
            let (Some(bv), Some(v)) = (base_value, cand.means.get(e)) else {
                continue;
            };
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
    ranked
}

/// Sentences drawn from a comparison's numbers only. Findings on tests
/// the compared setting can affect come first; each says in the same
/// sentence which of its tests were interfered or not repeatable.
pub fn comparison(c: &Comparison) -> Vec<String> {
    let mut ranked: Vec<(u8, String)> = Vec::new();
    for g in &c.groups {
        let Some(s) = group_sentence(c, g) else {
            continue;
        };
        let ci = (c.configs.iter().position(|l| l == &g.candidate)).unwrap_or(1);
        let rows: Vec<&Row> = c
            .rows
            .iter()
            .filter(|r| r.group == g.group && r.values[0].is_some() && r.values[ci].is_some())
            .collect();
        ranked.push((rank(&rows), format!("{s}{}", marks(c, &rows, ci))));
    }
    ranked.extend(efficiency_findings(c));
    // Stable: within a rank, the order above (groups, then efficiency).
    ranked.sort_by_key(|x| x.0);
    let mut f: Vec<String> = ranked.into_iter().map(|x| x.1).collect();
    if let Some(th) = c.cpu_threshold_pct {
        for (label, (ok, n)) in c.configs.iter().zip(&c.threshold_counts) {
            if *n > 0 {
                f.push(format!(
                    "{label} stayed under {th} % CPU on {ok} of {n} tests."
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
mod tests;
