//! Exports of a stored run: long CSV, JSON, and Iometer 1.1.0's
//! results.csv layout for disk results (so existing spreadsheets keep
//! working). A value that was not measured is an empty cell, never 0.

use crate::{RunDetail, TestRow};
use iotoll_model::metrics::metric_def;
use iotoll_model::Metrics;
use std::fmt::Write;

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn num(v: f64) -> String {
    // Shortest representation that reads back to the same value.
    format!("{v}")
}

/// The metrics a test is judged by: its selected repetition's, or the means.
pub fn selected_metrics(t: &TestRow) -> Option<&Metrics> {
    t.summary.as_ref().or_else(|| {
        t.reps
            .iter()
            .find(|r| Some(r.rep) == t.selected_rep)
            .map(|r| &r.doc.metrics)
    })
}

/// Long format: one row per repetition and metric, plus the means of a
/// `mean` selection as rep `mean`.
pub fn csv(run: &RunDetail) -> String {
    let mut o = String::from("run,config,test,group,rep,selected,metric,value,unit\n");
    let config = run.run.config.clone().unwrap_or_default();
    for t in &run.tests {
        let mut row = |rep: &str, selected: bool, m: &Metrics| {
            for (k, v) in m {
                let unit = metric_def(k).map(|d| d.unit).unwrap_or("");
                let _ = writeln!(
                    o,
                    "{},{},{},{},{},{},{},{},{}",
                    run.run.id,
                    csv_field(&config),
                    csv_field(&t.name),
                    csv_field(t.group.as_deref().unwrap_or("")),
                    rep,
                    selected,
                    csv_field(k),
                    num(*v),
                    csv_field(unit)
                );
            }
        };
        let all = t.select == "all";
        for r in &t.reps {
            row(
                &r.rep.to_string(),
                all || Some(r.rep) == t.selected_rep,
                &r.doc.metrics,
            );
        }
        if t.select == "mean" {
            if let Some(m) = &t.summary {
                row("mean", true, m);
            }
        }
    }
    o
}

pub fn json(run: &RunDetail) -> Result<String, serde_json::Error> {
    serde_json::to_string_pretty(run).map(|mut s| {
        s.push('\n');
        s
    })
}

/// Iometer 1.1.0 results.csv: its header block, then its results header
/// row with one `ALL` row per disk test (the selected repetition, or the
/// means). Columns iotoll does not measure are left empty.
pub const IOMETER_COLUMNS: &[&str] = &[
    "'Target Type",
    "Target Name",
    "Access Specification Name",
    "# Managers",
    "# Workers",
    "# Disks",
    "IOps",
    "Read IOps",
    "Write IOps",
    "MBps (Binary)",
    "Read MBps (Binary)",
    "Write MBps (Binary)",
    "MBps (Decimal)",
    "Read MBps (Decimal)",
    "Write MBps (Decimal)",
    "Transactions per Second",
    "Connections per Second",
    "Average Response Time",
    "Average Read Response Time",
    "Average Write Response Time",
    "Average Transaction Time",
    "Average Connection Time",
    "Maximum Response Time",
    "Maximum Read Response Time",
    "Maximum Write Response Time",
    "Maximum Transaction Time",
    "Maximum Connection Time",
    "Errors",
    "Read Errors",
    "Write Errors",
    "Bytes Read",
    "Bytes Written",
    "Read I/Os",
    "Write I/Os",
    "Connections",
    "Transactions per Connection",
    "Total Raw Read Response Time",
    "Total Raw Write Response Time",
    "Total Raw Transaction Time",
    "Total Raw Connection Time",
    "Maximum Raw Read Response Time",
    "Maximum Raw Write Response Time",
    "Maximum Raw Transaction Time",
    "Maximum Raw Connection Time",
    "Total Raw Run Time",
    "Starting Sector",
    "Maximum Size",
    "Queue Depth",
    "% CPU Utilization",
    "% User Time",
    "% Privileged Time",
    "% DPC Time",
    "% Interrupt Time",
    "Processor Speed",
    "Interrupts per Second",
    "CPU Effectiveness",
    "Packets/Second",
    "Packet Errors",
    "Segments Retransmitted/Second",
];

pub fn iometer_csv(run: &RunDetail) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "'Test Type,Test Description");
    let _ = writeln!(o, "0,{}", csv_field(&run.run.suite));
    let _ = writeln!(o, "'Version");
    let _ = writeln!(o, "1.1.0");
    let _ = writeln!(o, "'Time Stamp");
    let _ = writeln!(o, "{}", run.run.started_at);
    let _ = writeln!(o, "'Results");
    let _ = writeln!(o, "{}", IOMETER_COLUMNS.join(","));
    for t in run.tests.iter().filter(|t| t.kind == "disk") {
        let Some(m) = selected_metrics(t) else {
            continue;
        };
        let g = |k: &str| m.get(k).copied();
        let spec = t.reps.first().map(|r| &r.doc.spec);
        let sp = |k: &str| spec.and_then(|s| s.get(k)).and_then(|v| v.as_f64());
        let window = g("window_s");
        let times = |rate: Option<f64>| rate.zip(window).map(|(r, w)| (r * w).round());
        let bytes = |mb: Option<f64>| mb.zip(window).map(|(v, w)| (v * 1e6 * w).round());
        let mib = |mb: Option<f64>| mb.map(|v| v * 1e6 / 1048576.0);
        let ms = |us: Option<f64>| us.map(|v| v / 1000.0);
        let cells: Vec<Option<String>> = vec![
            Some("ALL".into()),
            Some("All".into()),
            Some(csv_field(
                spec.and_then(|s| s.get("spec"))
                    .and_then(|v| v.as_str())
                    .unwrap_or(&t.name),
            )),
            Some("1".into()),
            sp("workers").map(num),
            Some("1".into()),
            g("iops").map(num),
            g("read_iops").map(num),
            g("write_iops").map(num),
            mib(g("mb_s")).map(num),
            mib(g("read_mb_s")).map(num),
            mib(g("write_mb_s")).map(num),
            g("mb_s").map(num),
            g("read_mb_s").map(num),
            g("write_mb_s").map(num),
            g("iops").map(num),
            None,
            ms(g("lat_mean_us")).map(num),
            None,
            None,
            ms(g("lat_mean_us")).map(num),
            None,
            ms(g("lat_max_us")).map(num),
            None,
            None,
            ms(g("lat_max_us")).map(num),
            None,
            g("errors").map(num),
            None,
            None,
            bytes(g("read_mb_s")).map(num),
            bytes(g("write_mb_s")).map(num),
            times(g("read_iops")).map(num),
            times(g("write_iops")).map(num),
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            sp("offset")
                .zip(sp("logical_block_size"))
                .map(|(o, b)| num((o / b).floor())),
            sp("size")
                .zip(sp("logical_block_size"))
                .map(|(s, b)| num((s / b).floor())),
            sp("qd").map(num),
            g("cpu_pct").map(num),
            g("cpu_user_pct").map(num),
            g("cpu_system_pct").map(num),
            g("cpu_softirq_pct").map(num),
            g("cpu_irq_pct").map(num),
            g("cpu_nominal_mhz").map(|v| num(v * 1e6)),
            g("interrupts_s").map(num),
            g("iops_per_cpu_pct").map(num),
            None,
            None,
            None,
        ];
        debug_assert_eq!(cells.len(), IOMETER_COLUMNS.len());
        let line: Vec<String> = cells.into_iter().map(Option::unwrap_or_default).collect();
        let _ = writeln!(o, "{}", line.join(","));
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{RepRow, RunRow};

    fn doc(iops: f64, read_iops: f64, cpu: f64) -> iotoll_model::ResultDoc {
        serde_json::from_value(serde_json::json!({
            "iotoll_version": "0.1.0", "kind": "disk", "status": "complete",
            "started_at": "2026-11-22T00:00:00Z", "config": "hba", "spec": {
                "spec": "db-oltp-8k", "workers": 1, "qd": 28, "offset": 0, "size": 4294967296u64,
                "logical_block_size": 512
            },
            "metrics": {
                "window_s": 10.0, "iops": iops, "read_iops": read_iops, "write_iops": iops - read_iops,
                "mb_s": iops * 8192.0 / 1e6, "read_mb_s": read_iops * 8192.0 / 1e6,
                "write_mb_s": (iops - read_iops) * 8192.0 / 1e6, "lat_mean_us": 250.0, "lat_max_us": 4000.0,
                "errors": 0.0, "cpu_pct": cpu, "cpu_user_pct": 1.0, "cpu_system_pct": cpu - 2.0,
                "cpu_softirq_pct": 0.5, "cpu_irq_pct": 0.5, "cpu_nominal_mhz": 2600.0,
                "interrupts_s": 5000.0, "iops_per_cpu_pct": iops / cpu
            },
            "cpu": {"local": null, "remote": null}, "latency": null, "series": [], "notes": [], "disclosure": null
        }))
        .unwrap()
    }

    fn run() -> RunDetail {
        let reps = vec![
            RepRow {
                rep: 1,
                status: "complete".into(),
                doc: doc(1000.0, 700.0, 10.0),
            },
            RepRow {
                rep: 2,
                status: "complete".into(),
                doc: doc(1100.0, 770.0, 11.0),
            },
        ];
        RunDetail {
            run: RunRow {
                id: 7,
                suite: "iscsi-initiator-study".into(),
                config: Some("hba, port 1".into()),
                started_at: "2026-11-22T00:00:00Z".into(),
                finished_at: Some("2026-11-22T01:00:00Z".into()),
                status: "complete".into(),
                notes: vec![],
                tests: 1,
            },
            disclosure: None,
            suite_text: None,
            tests: vec![TestRow {
                seq: 1,
                name: "small-block/spec=db-oltp-8k".into(),
                kind: "disk".into(),
                group: Some("iops".into()),
                params: serde_json::json!({"spec": "db-oltp-8k"}),
                select: "median:iops".into(),
                selected_rep: Some(1),
                spread_pct: Some(10.0),
                repeatable: Some(false),
                summary: None,
                reps,
            }],
        }
    }

    #[test]
    fn long_csv() {
        insta::assert_snapshot!(csv(&run()));
    }

    #[test]
    fn iometer_results_csv() {
        let out = iometer_csv(&run());
        let header: Vec<&str> = out.lines().nth(7).unwrap().split(',').collect();
        assert_eq!(header.len(), IOMETER_COLUMNS.len());
        let row: Vec<&str> = out.lines().nth(8).unwrap().split(',').collect();
        assert_eq!(row.len(), IOMETER_COLUMNS.len());
        let col = |name: &str| row[IOMETER_COLUMNS.iter().position(|c| *c == name).unwrap()];
        // The selected repetition (rep 1), Iometer's units: ms, decimal MB/s.
        assert_eq!(col("IOps"), "1000");
        assert_eq!(col("Average Response Time"), "0.25");
        assert_eq!(col("MBps (Decimal)"), "8.192");
        assert_eq!(col("% CPU Utilization"), "10");
        assert_eq!(col("CPU Effectiveness"), "100");
        assert_eq!(col("Read I/Os"), "7000");
        assert_eq!(col("Maximum Size"), "8388608");
        assert_eq!(
            col("Average Read Response Time"),
            "",
            "not measured: empty, never 0"
        );
        insta::assert_snapshot!(out);
    }
}
