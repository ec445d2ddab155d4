//! The results table `suite run` prints, and the notes under it.

use crate::output::num;
use iotoll_model::metrics as mn;
use iotoll_suite::{Suite, TestOutcome};

/// The run's results, a row a test: its selected figure and index, the
/// repetitions it had of those planned, spread and confidence interval.
pub fn results_table(
    run: i64,
    suite: &Suite,
    tests: &[TestOutcome],
    config: Option<&str>,
) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let config = config.unwrap_or("-");
    let _ = writeln!(o, "run {run}  suite {}  config {config}", suite.name);
    // Disk throughput in Mbit/s where the suite asks (`unit = "mbit_s"`).
    let mbit = |name: &str| {
        (suite.jobs.iter())
            .any(|j| j.name == name && iotoll_model::ci::wants_mbit(j.kind, &j.params))
    };
    let any_mbit = tests.iter().any(|t| mbit(&t.name));
    let _ = writeln!(
        o,
        "{:<40} {:<10} {:>5} {:>14} {:<14} {:>9} {:>7} {:>12} {:<22} {:>8} {:>23}",
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
        "95 % CI (mean)"
    );
    for t in tests {
        o.push_str(&row(t, mbit(&t.name)));
    }
    o
}

/// A test's row of the results table; `in_mbit`: disk throughput in
/// Mbit/s.
fn row(t: &TestOutcome, in_mbit: bool) -> String {
    let m = t.selected.metrics.as_ref();
    // A test's figure and index are those of the metric it is selected by.
    let (head, eff) = (t.metric.as_str(), t.kind.efficiency_of(&t.metric));
    let shown = |k: &str| -> (Option<f64>, String) {
        let v = m.and_then(|m| m.get(k).copied());
        match iotoll_model::ci::disk_mbit(k).filter(|_| in_mbit) {
            Some((label, f)) => (v.map(|v| v * f), label.to_string()),
            None => (v, mn::label(k).to_string()),
        }
    };
    let mut flag = match t.repeatable {
        Some(false) => "  NOT REPEATABLE".to_string(),
        _ => String::new(),
    };
    if !t.interfered.is_empty() {
        let reps: Vec<String> = t.interfered.iter().map(u32::to_string).collect();
        flag.push_str(&format!("  INTERFERED (rep {})", reps.join(", ")));
    }
    let values = t
        .reps
        .iter()
        .filter_map(|(_, d)| d.metrics.get(head).copied());
    let ci = iotoll_model::Ci95::of(head, values);
    let factor = (iotoll_model::ci::disk_mbit(head).filter(|_| in_mbit)).map_or(1.0, |x| x.1);
    let ((value, unit), (index, index_unit)) = (shown(head), shown(eff));
    let throughput = match in_mbit {
        true => shown(mn::MB_S).0,
        false => m.and_then(|m| m.get(mn::MB_S).copied()),
    };
    let or_dash = |v: Option<f64>| v.map(num).unwrap_or("-".into());
    // Of the repetitions planned: failed and not run ones count.
    let planned = t.reps.len() + t.failures.len() + t.not_run as usize;
    format!(
        "{:<40} {:<10} {:>5} {:>14} {:<14} {:>9} {:>7} {:>12} {:<22} {:>8} {:>23}{flag}\n",
        t.name,
        t.group,
        format!("{}/{planned}", t.reps.len()),
        or_dash(value),
        unit,
        or_dash(throughput),
        or_dash(m.and_then(|m| m.get(mn::CPU_PCT).copied())),
        or_dash(index),
        index_unit,
        (t.selected.spread_pct).map_or("-".into(), |s| format!("{s:.1}")),
        ci.map_or("-".into(), |c| format!(
            "{} to {}",
            num(c.low * factor),
            num(c.high * factor)
        )),
    )
}

/// The run's notes under its results table, readable however long the
/// study: each repetition's interference (printed as it happened, flagged
/// INTERFERED in the table) is one count when there are more than a few,
/// not a line each (a 27-test study printed 81).
pub fn terminal_notes(notes: &[String]) -> Vec<String> {
    let interference = |n: &String| {
        n.split_once(": ").is_some_and(|(head, rest)| {
            head.contains(" repetition ")
                && rest.starts_with(iotoll_model::result::INTERFERENCE_NOTE)
        })
    };
    let (reps, mut out): (Vec<&String>, Vec<String>) = (
        notes.iter().filter(|n| interference(n)).collect(),
        notes.iter().filter(|n| !interference(n)).cloned().collect(),
    );
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
                iotoll_model::text::count(many.len(), "repetition"),
                iotoll_model::text::count(tests.len(), "test")
            ));
        }
    }
    out
}

#[cfg(test)]
mod table_tests {
    use super::*;
    use iotoll_model::metrics as mn;
    use iotoll_suite::select::Selected;
    use iotoll_suite::Suite;

    fn outcome(suite: &Suite, name: &str, reps: &[(f64, f64)]) -> TestOutcome {
        let job = suite.jobs.iter().find(|j| j.name == name).expect("job");
        let docs: Vec<(u32, iotoll_model::ResultDoc)> = (reps.iter().enumerate())
            .map(|(i, (iops, mb_s))| {
                let mut metrics: iotoll_model::Metrics = [
                    (mn::IOPS.to_string(), *iops),
                    (mn::MB_S.to_string(), *mb_s),
                    (mn::CPU_PCT.to_string(), 10.0),
                ]
                .into_iter()
                .collect();
                iotoll_model::derive_metrics(&mut metrics);
                let doc = serde_json::from_value(serde_json::json!({
                    "iotoll_version": "0.1.0", "kind": "disk", "status": "complete",
                    "started_at": "2026-11-22T00:00:00Z", "config": null, "spec": {},
                    "metrics": metrics, "cpu": {"local": null, "remote": null},
                    "latency": null, "series": [], "notes": [], "disclosure": null
                }))
                .expect("doc");
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
        let t = [
            outcome(
                &suite,
                "dss-1m",
                &[(111.0, 116.4), (112.0, 117.4), (110.0, 115.3)],
            ),
            outcome(
                &suite,
                "oltp",
                &[(5000.0, 41.0), (5100.0, 41.8), (4900.0, 40.1)],
            ),
        ];
        let out = results_table(1, &suite, &t, None);
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
        let t = [outcome(
            &suite,
            "read",
            &[(1000.0, 100.0), (1000.0, 101.0), (1000.0, 99.0)],
        )];
        let out = results_table(1, &suite, &t, None);
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
        let bad = iotoll_suite::parse(
            "name = \"s\"\nunit = \"gbit\"\n[[test]]\nkind = \"disk\"\nname = \"x\"\n",
            "s.toml",
        );
        assert!(bad.unwrap_err().to_string().contains("unknown unit 'gbit'"));
    }
}

#[cfg(test)]
mod tests {
    use super::terminal_notes;

    /// 27 tests of 3 interfered repetitions printed 81 notes under the
    /// table: they are one, the others stay as they are.
    #[test]
    fn many_repetitions_interference_is_one_note() {
        let mut notes = vec!["durations overridden: time 1s".to_string()];
        for t in 1..=27 {
            for rep in 1..=3 {
                notes.push(format!(
                    "rr/conns={t} repetition {rep}: interference: other processes used 40.0 % of this host's CPU"
                ));
            }
        }
        notes.push("rr/conns=2: not repeatable: trans_s 30 %".into());
        let out = terminal_notes(&notes);
        assert_eq!(
            out,
            vec![
                "durations overridden: time 1s".to_string(),
                "rr/conns=2: not repeatable: trans_s 30 %".into(),
                "other processes interfered with 81 repetitions of 27 tests (INTERFERED above; `iotoll report` lists by what)".into(),
            ]
        );
        let few = &notes[..7];
        assert_eq!(terminal_notes(few), few.to_vec());
    }
}
