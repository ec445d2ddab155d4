//! `suite list`, `suite show`, and the results table `suite run` prints
//! with the notes under it.

use crate::tables::{to_text, TRow, Table};
use iotoll_model::metrics as mn;
use iotoll_model::text::count;
use iotoll_model::units::format_number as num;
use iotoll_suite::durations::length as duration;
use iotoll_suite::session::host_label;
use iotoll_suite::{Suite, TestOutcome};
use std::fmt::Write;

/// `suite list`: the built-in suites, a line each.
pub fn list() -> Result<String, iotoll_suite::SuiteError> {
    let mut o = String::new();
    for (name, text) in iotoll_suite::builtin::BUILTIN {
        let s = iotoll_suite::parse(text, name)?;
        let _ = writeln!(
            o,
            "{:<30} {:>9}  ~{:<8} {}",
            name,
            count(s.jobs.len(), "test"),
            duration(s.estimated()),
            s.description.as_deref().unwrap_or("")
        );
    }
    Ok(o)
}

/// `suite show`: a suite's expanded tests, where they run, and how long;
/// `note` says which durations were overridden.
pub fn show(s: &Suite, reps: Option<u32>, note: Option<&str>) -> String {
    let mut o = String::new();
    let est = iotoll_suite::durations::planned(s, reps);
    let tests = count(s.jobs.len(), "test");
    let _ = writeln!(o, "{}: {tests}, estimated {}", s.name, duration(est));
    if let Some(n) = note {
        let _ = writeln!(o, "{n}");
    }
    if let Some(t) = s.cpu_threshold_pct {
        let _ = writeln!(o, "CPU threshold {t} %");
    }
    if !s.hosts.is_empty() {
        let hosts: Vec<String> = s.hosts.iter().map(host_label).collect();
        let _ = writeln!(o, "hosts {}", hosts.join(", "));
    }
    let line = |c: [&str; 7]| {
        let [a, b, c, d, e, f, g] = c;
        format!("{a:<44} {b:<12} {c:<10} {d:>4} {e:<14} {f:>6} {g:>6}\n")
    };
    o.push_str(&line([
        "test", "group", "kind", "reps", "select", "ramp", "time",
    ]));
    for j in &s.jobs {
        let (r, t) = j.ramp_time();
        let n = reps.unwrap_or(j.reps).to_string();
        let (kind, rule, r, t) = (j.kind.as_str(), j.rule.label(), duration(r), duration(t));
        o.push_str(&line([&j.name, &j.group, kind, &n, &rule, &r, &t]));
        // Where it runs, under the test (a pair list is long).
        if !j.placement.is_local() {
            let _ = writeln!(o, "  {}", j.placement.label());
        }
        if let Some(c) = &j.confidence {
            let _ = writeln!(
                o,
                "  until its {} % interval is ±{} % of the mean: 3 to {n} repetitions (estimated at {n})",
                c.level,
                c.width_pct / 2.0
            );
        }
    }
    o
}

/// The run's results after `suite run`, a row a test: its selected figure
/// and index, the repetitions it had of those planned, spread and
/// confidence interval.
pub fn results(run: i64, suite: &Suite, tests: &[TestOutcome], config: Option<&str>) -> String {
    let config = config.unwrap_or("-");
    let head = format!("run {run}  suite {}  config {config}\n", suite.name);
    // Disk throughput in Mbit/s where the suite asks (`unit = "mbit_s"`).
    let mbit = |name: &str| {
        (suite.jobs.iter())
            .any(|j| j.name == name && iotoll_model::ci::wants_mbit(j.kind, &j.params))
    };
    let any_mbit = tests.iter().any(|t| mbit(&t.name));
    let mut t = Table::new(
        "",
        &[
            "test",
            "group",
            "reps",
            "value",
            "unit",
            if any_mbit { "Mbit/s" } else { "MB/s" },
            "cpu %",
            "efficiency",
            "",
            "spread %",
            "95 % CI (mean)",
        ],
    );
    t.rows = (tests.iter())
        .map(|t| TRow::new(row(t, mbit(&t.name))))
        .collect();
    head + &to_text(&t, "", "llrrlrrrlrrl")
}

/// A test's cells in the results table; `in_mbit`: disk throughput in
/// Mbit/s. The last says what went wrong (not repeatable, interfered).
fn row(t: &TestOutcome, in_mbit: bool) -> Vec<String> {
    let m = t.selected.metrics.as_ref();
    // A test's figure and index are those of the metric it is selected by.
    let (head, eff) = (t.metric.as_str(), t.kind.efficiency_of(&t.metric));
    let mbit = |k: &str| iotoll_model::ci::disk_mbit(k).filter(|_| in_mbit);
    let shown = |k: &str| -> (Option<f64>, String) {
        let v = m.and_then(|m| m.get(k).copied());
        match mbit(k) {
            Some((label, f)) => (v.map(|v| v * f), label.to_string()),
            None => (v, mn::label(k).to_string()),
        }
    };
    let mut flags = Vec::new();
    if t.repeatable == Some(false) {
        flags.push("NOT REPEATABLE".to_string());
    }
    if !t.interfered.is_empty() {
        let reps: Vec<String> = t.interfered.iter().map(u32::to_string).collect();
        flags.push(format!("INTERFERED (rep {})", reps.join(", ")));
    }
    let values = (t.reps.iter()).filter_map(|(_, d)| d.metrics.get(head).copied());
    let ci = iotoll_model::Ci95::of(head, values);
    let factor = mbit(head).map_or(1.0, |x| x.1);
    let ((value, unit), (index, index_unit)) = (shown(head), shown(eff));
    let or_dash = super::or_dash;
    // Of the repetitions planned: failed and not run ones count.
    let planned = t.reps.len() + t.failures.len() + t.not_run as usize;
    vec![
        t.name.clone(),
        t.group.clone(),
        format!("{}/{planned}", t.reps.len()),
        or_dash(value),
        unit,
        // MB/s, or in Mbit/s where the suite asks.
        or_dash(shown(mn::MB_S).0),
        or_dash(shown(mn::CPU_PCT).0),
        or_dash(index),
        index_unit,
        (t.selected.spread_pct).map_or("-".into(), |s| format!("{s:.1}")),
        ci.map_or("-".into(), |c| {
            format!("{} to {}", num(c.low * factor), num(c.high * factor))
        }),
        flags.join("  "),
    ]
}

/// What `suite run` prints after the results table: the run's notes, and
/// where the run is stored with its status.
pub fn run_end_notes(
    run: i64,
    closing_notes: &[String],
    status: &str,
    db: &std::path::Path,
) -> String {
    let mut out = String::new();
    for n in notes(closing_notes) {
        out.push_str(&format!("note: {n}\n"));
    }
    out.push_str(&format!(
        "\nrun {run} {status} — stored in {}\n",
        db.display()
    ));
    out
}

/// The run's notes under its results table, readable however long the
/// study: each repetition's interference (printed as it happened, flagged
/// INTERFERED in the table) is one count when there are more than a few,
/// not a line each (a 27-test study printed 81).
pub fn notes(all: &[String]) -> Vec<String> {
    let interference = |n: &String| {
        n.split_once(": ").is_some_and(|(head, rest)| {
            head.contains(" repetition ")
                && rest.starts_with(iotoll_model::result::INTERFERENCE_NOTE)
        })
    };
    let (reps, others): (Vec<&String>, Vec<&String>) = all.iter().partition(|n| interference(n));
    let mut out: Vec<String> = others.into_iter().cloned().collect();
    // A few are shown whole (they name the processes).
    const WHOLE: usize = 6;
    match reps.as_slice() {
        few if few.len() <= WHOLE => out.extend(few.iter().map(|n| n.to_string())),
        many => {
            let mut tests: Vec<&str> = many
                .iter()
                .filter_map(|n| n.split(" repetition ").next())
                .collect();
            tests.dedup();
            out.push(format!(
                "other processes interfered with {} of {} (INTERFERED above; `iotoll report` lists by what)",
                count(many.len(), "repetition"),
                count(tests.len(), "test")
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use iotoll_suite::select::Selected;
    use serde_json::json;

    fn outcome(suite: &Suite, name: &str, reps: &[(f64, f64)]) -> TestOutcome {
        let job = suite.jobs.iter().find(|j| j.name == name).expect("job");
        let docs: Vec<(u32, iotoll_model::ResultDoc)> = (reps.iter().enumerate())
            .map(|(i, (iops, mb_s))| {
                let mut doc = iotoll_model::fixtures::doc("disk", json!({}), json!({}));
                doc.metrics = mn::of(&[(mn::IOPS, *iops), (mn::MB_S, *mb_s), (mn::CPU_PCT, 10.0)]);
                iotoll_model::derive_metrics(&mut doc.metrics);
                (i as u32 + 1, doc)
            })
            .collect();
        let ms: Vec<&iotoll_model::Metrics> = docs.iter().map(|(_, d)| &d.metrics).collect();
        let selected: Selected = iotoll_suite::select(&ms, &job.rule, &job.metric);
        TestOutcome {
            reps: docs,
            selected,
            repeatable: Some(true),
            ..TestOutcome::new(job)
        }
    }

    /// issue 23 §7: dss-1m selected by MB/s showed "111 IOPS ... IOPS per
    /// % CPU"; its row must lead with MB/s and MB/s per % CPU.
    #[test]
    fn the_table_shows_each_tests_select_metric() {
        let text = "name = \"s\"\nreps = 3\n[[test]]\nname = \"dss-1m\"\nkind = \"disk\"\nbs = \"1m\"\nselect = \"median:mb_s\"\n[[test]]\nname = \"oltp\"\nkind = \"disk\"\nbs = \"8k\"\n";
        let suite = iotoll_suite::parse(text, "s.toml").unwrap();
        let dss = [(111.0, 116.4), (112.0, 117.4), (110.0, 115.3)];
        let oltp = [(5000.0, 41.0), (5100.0, 41.8), (4900.0, 40.1)];
        let t = [
            outcome(&suite, "dss-1m", &dss),
            outcome(&suite, "oltp", &oltp),
        ];
        let out = results(1, &suite, &t, None);
        let row = |n: &str| out.lines().find(|l| l.starts_with(n)).unwrap().to_string();
        let dss = row("dss-1m");
        assert!(
            dss.contains("MB/s per % CPU") && !dss.contains("IOPS"),
            "{out}"
        );
        assert!(dss.contains(" 116 "), "the median MB/s: {out}");
        let oltp = row("oltp");
        assert!(
            oltp.contains("IOPS per % CPU") && oltp.contains(" 5,000 "),
            "{out}"
        );
        // The 95 % CI of the select metric: 116.37 ± 4.303 × 1.05 / √3.
        let ci = iotoll_model::Ci95::of("mb_s", [116.4, 117.4, 115.3]).unwrap();
        assert!(
            dss.contains(&format!("{} to {}", num(ci.low), num(ci.high))),
            "{out}"
        );
    }

    /// issue 23 §6: study 003 publishes disk throughput in Mbit/s.
    #[test]
    fn a_suite_unit_of_mbit_s_shows_disk_throughput_in_mbit_s() {
        let text = "name = \"s\"\nreps = 3\nselect = \"median:mb_s\"\nunit = \"mbit_s\"\n[[test]]\nname = \"read\"\nkind = \"disk\"\nbs = \"32k\"\n";
        let suite = iotoll_suite::parse(text, "s.toml").unwrap();
        assert_eq!(suite.jobs[0].params["unit"], "mbit_s");
        let reps = [(1000.0, 100.0), (1000.0, 101.0), (1000.0, 99.0)];
        let t = [outcome(&suite, "read", &reps)];
        let out = results(1, &suite, &t, None);
        let row = out.lines().find(|l| l.starts_with("read")).unwrap();
        // 100 MB/s = 800 Mbit/s; 100 / 10 % CPU = 10 MB/s per % = 80 Mbit/s per %.
        assert!(row.contains(" 800 ") && row.contains("Mbit/s "), "{out}");
        assert!(
            row.contains(" 80 ") && row.contains("Mbit/s per % CPU"),
            "{out}"
        );
        assert!(out.lines().next().is_some_and(|_| out.contains("Mbit/s")));
        // The built-in study 003 asks for it.
        let hw = iotoll_suite::builtin::find("hw-iscsi-study").unwrap();
        let hw = iotoll_suite::parse(hw, "hw-iscsi-study").unwrap();
        assert!(hw.jobs.iter().all(|j| j.params["unit"] == "mbit_s"));
        let gbit = "name = \"s\"\nunit = \"gbit\"\n[[test]]\nkind = \"disk\"\nname = \"x\"\n";
        let bad = iotoll_suite::parse(gbit, "s.toml");
        assert!(bad.unwrap_err().to_string().contains("unknown unit 'gbit'"));
    }

    /// 27 tests of 3 interfered repetitions printed 81 notes under the
    /// table: they are one, the others stay as they are.
    #[test]
    fn many_repetitions_interference_is_one_note() {
        let mut all = vec!["durations overridden: time 1s".to_string()];
        for t in 1..=27 {
            for rep in 1..=3 {
                all.push(format!(
                    "rr/conns={t} repetition {rep}: interference: other processes used 40.0 % of this host's CPU"
                ));
            }
        }
        all.push("rr/conns=2: not repeatable: trans_s 30 %".into());
        let out = notes(&all);
        assert_eq!(
            out,
            vec![
                "durations overridden: time 1s".to_string(),
                "rr/conns=2: not repeatable: trans_s 30 %".into(),
                "other processes interfered with 81 repetitions of 27 tests (INTERFERED above; `iotoll report` lists by what)".into(),
            ]
        );
        let few = &all[..7];
        assert_eq!(notes(few), few.to_vec());
    }
}
