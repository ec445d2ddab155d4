//! `iotoll results list | show | export | delete`.

use crate::output::num;
use crate::{usage, DbArg};
use anyhow::Result;
use clap::{Subcommand, ValueEnum};
use iotoll_model::text::printable;
use iotoll_model::Kind;
use iotoll_store::{export, import, Store};
use std::path::PathBuf;

#[derive(Clone, Copy, ValueEnum)]
pub enum Format {
    /// Long CSV: one row per metric of each level (total, host, pair, target, worker).
    Csv,
    /// The run as `results show --json` gives it.
    Json,
    /// Iometer's results.csv layout, for tools that read it.
    IometerCsv,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum ImportFormat {
    /// CSV: a `test` column, an optional `group` column, one column per canonical metric; quote test names with commas ("stream/dir=tx,conns=4,msg=64k").
    Table,
    /// fio --output-format=json.
    FioJson,
    /// iperf3 -J (client side).
    Iperf3Json,
}

#[derive(Subcommand)]
pub enum ResultsCmd {
    /// One run per line: id, configuration, suite, start, status.
    List {
        #[command(flatten)]
        db: DbArg,
    },
    /// A run's tests, repetitions, selections and disclosure.
    Show {
        /// Run id, or a configuration label (its latest complete run).
        run: String,
        #[command(flatten)]
        db: DbArg,
        /// Print the run as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Write a run as long CSV, JSON, or Iometer's results.csv layout (on stdout).
    Export {
        /// Run id, or a configuration label (its latest complete run).
        run: String,
        /// What to write.
        #[arg(long, value_enum, default_value = "json")]
        format: Format,
        #[command(flatten)]
        db: DbArg,
    },
    /// Results from elsewhere as a configuration to compare against.
    Import {
        /// The file: a CSV table, fio JSON output or iperf3 -J output.
        file: PathBuf,
        #[arg(long, value_enum)]
        format: ImportFormat,
        /// The configuration label the results get.
        #[arg(long, value_name = "LABEL")]
        config: String,
        #[command(flatten)]
        db: DbArg,
    },
    /// Remove a run and everything it holds.
    Delete {
        /// Run id, or a configuration label (its latest complete run).
        run: String,
        #[command(flatten)]
        db: DbArg,
    },
}

fn open(db: &DbArg) -> Result<Store> {
    Ok(Store::open(&db.path())?)
}

/// For commands that only read: never creates, migrates or writes, so a
/// database on a read-only or full filesystem still answers.
pub fn open_read(path: &std::path::Path) -> Result<Store> {
    Store::open_read_only(path).map_err(|e| match e {
        iotoll_store::StoreError::Missing(_) => usage(e),
        e => e.into(),
    })
}

fn resolve(store: &Store, run: &str) -> Result<i64> {
    store.resolve(run).map_err(usage)
}

/// A stored run by its id or label, read only.
fn detail(db: &DbArg, run: &str) -> Result<iotoll_store::RunDetail> {
    let s = open_read(&db.path())?;
    Ok(s.run_detail(resolve(&s, run)?)?)
}

pub fn main(cmd: ResultsCmd) -> Result<()> {
    match cmd {
        ResultsCmd::List { db } => {
            let s = match Store::open_read_only(&db.path()) {
                // None yet: it is set up (as a measuring command would), so
                // the path is known to be usable; where that fails there is
                // still nothing stored to list.
                Err(iotoll_store::StoreError::Missing(_)) => Store::open(&db.path()).ok(),
                r => Some(r?),
            };
            let runs = s.map(|s| s.list_runs()).transpose()?.unwrap_or_default();
            if runs.is_empty() {
                eprintln!("iotoll: no runs stored in {}", db.path().display());
                return Ok(());
            }
            // A header, then one run per line beginning with its id; each
            // column as wide as its longest cell, so long labels stay aligned.
            let rows: Vec<[String; 6]> = runs
                .iter()
                .map(|r| {
                    [
                        r.id.to_string(),
                        printable(r.config.as_deref().unwrap_or("-")).into_owned(),
                        printable(&r.suite).into_owned(),
                        printable(&r.started_at).into_owned(),
                        r.status.label().to_string(),
                        r.tests.to_string(),
                    ]
                })
                .collect();
            let head = ["id", "config", "suite", "started", "status", "tests"];
            let mut width = head.map(|h| h.chars().count());
            for row in &rows {
                for (w, cell) in width.iter_mut().zip(row) {
                    *w = (*w).max(cell.chars().count());
                }
            }
            let line = |cells: [&str; 6]| {
                let padded: Vec<String> = (cells.iter().zip(width))
                    .map(|(c, w)| format!("{c:<w$}"))
                    .collect();
                println!("{}", padded.join("  ").trim_end());
            };
            line(head);
            for row in &rows {
                line(row.each_ref().map(|c| c.as_str()));
            }
            Ok(())
        }
        ResultsCmd::Show { run, db, json } => {
            let d = detail(&db, &run)?;
            if json {
                return crate::output::print_json(&d);
            }
            println!(
                "run {}  suite {}  config {}  {}  {} -> {}",
                d.run.id,
                printable(&d.run.suite),
                printable(d.run.config.as_deref().unwrap_or("-")),
                d.run.status.label(),
                printable(&d.run.started_at),
                printable(d.run.finished_at.as_deref().unwrap_or("-"))
            );
            for t in &d.tests {
                println!("  {}", test_line(t));
                // Every repetition asked for the same cipher; the selected
                // one's handshakes stand for the test.
                let tls = t
                    .reps
                    .iter()
                    .filter(|r| t.selected_rep.is_none_or(|s| s == r.rep))
                    .find_map(|r| r.doc.net_disclosure()?.tls.clone());
                if let Some(tls) = tls {
                    println!("    tls: {}", printable(&crate::output::tls_summary(&tls)));
                }
                print!("{}", multi_host(t));
                // Repetitions other processes interfered with, and by whom;
                // the endpoint's side only when it is another host.
                for r in &t.reps {
                    let cpu = &r.doc.cpu;
                    let remote = cpu.remote.as_ref().filter(|_| cpu.same_host != Some(true));
                    for (side, c) in [("", cpu.local.as_ref()), ("endpoint host: ", remote)] {
                        let Some(i) = c.and_then(|c| c.interference.as_ref()) else {
                            continue;
                        };
                        if !i.interfered {
                            continue;
                        }
                        let who: Vec<String> =
                            i.processes.iter().map(crate::output::consumer).collect();
                        println!(
                            "    rep {}{}: INTERFERED {side}others {} % of the host (threshold {} %): {}",
                            r.rep,
                            if t.selected_rep == Some(r.rep) { " (selected)" } else { "" },
                            num(i.others_pct),
                            num(i.threshold_pct),
                            who.join(", ")
                        );
                    }
                    // A multi-host test: every host, one verdict per machine.
                    let hosts = r.doc.interfered_hosts();
                    if let Some(i) = (r.doc.hosts.iter())
                        .filter_map(|h| h.cpu.as_ref()?.interference.as_ref())
                        .find(|i| i.interfered)
                    {
                        let who: Vec<String> =
                            i.processes.iter().map(crate::output::consumer).collect();
                        println!(
                            "    rep {}{}: INTERFERED on host {}: others {} % + steal {} % (threshold {} %): {}",
                            r.rep,
                            if t.selected_rep == Some(r.rep) { " (selected)" } else { "" },
                            printable(&hosts.join(", ")),
                            num(i.others_pct),
                            num(i.steal_pct),
                            num(i.threshold_pct),
                            who.join(", ")
                        );
                    }
                }
            }
            for n in &d.run.notes {
                println!("  note: {}", printable(n));
            }
            Ok(())
        }
        ResultsCmd::Export { run, format, db } => {
            let d = detail(&db, &run)?;
            let text = match format {
                Format::Csv => export::csv(&d),
                Format::Json => export::json(&d)?,
                Format::IometerCsv => {
                    let e = export::iometer_csv(&d).map_err(usage)?;
                    for why in &e.skipped {
                        eprintln!("iotoll: warning: iometer-csv: left out: {why}");
                    }
                    e.text
                }
            };
            use std::io::Write;
            std::io::stdout().lock().write_all(text.as_bytes())?;
            Ok(())
        }
        ResultsCmd::Import {
            file,
            format,
            config,
            db,
        } => {
            anyhow::ensure!(
                !config.trim().is_empty(),
                usage("--config must not be empty")
            );
            let src = file.display().to_string();
            let bad = |e: String| usage(format!("{src}: {e}"));
            // Streamed: memory follows the results, not the file.
            let f = std::fs::File::open(&file).map_err(|e| bad(e.to_string()))?;
            // A file or a pipe; a directory or device (/dev/zero) is no input.
            let kind = f.metadata().map(|m| m.file_type());
            anyhow::ensure!(
                kind.is_ok_and(|k| {
                    use std::os::unix::fs::FileTypeExt;
                    k.is_file() || k.is_fifo() || k.is_socket()
                }),
                bad("not a file or a pipe (a directory or a device)".into())
            );
            let (id, n) = match format {
                // Row by row into the database: memory of one row.
                ImportFormat::Table => {
                    let rows = import::table_rows(f, &src).map_err(bad)?;
                    open(&db)?
                        .import_stream("table", &src, &config, rows)
                        .map_err(|e| match e {
                            iotoll_store::StoreError::Input(m) => bad(m),
                            e => e.into(),
                        })?
                }
                ImportFormat::FioJson | ImportFormat::Iperf3Json => {
                    let (name, parsed) = match format {
                        ImportFormat::FioJson => ("fio-json", import::fio_json(f, &src)),
                        _ => ("iperf3-json", import::iperf3_json(f, &src)),
                    };
                    let tests = parsed.map_err(bad)?;
                    let id = open(&db)?.import(name, &src, &config, &tests)?;
                    for t in &tests {
                        for n in t.doc.notes.iter().take(1) {
                            eprintln!("iotoll: note: {}: {}", printable(&t.name), printable(n));
                        }
                    }
                    (id, tests.len())
                }
            };
            println!("imported {n} test(s) from {src} as run {id} (config {config})");
            Ok(())
        }
        ResultsCmd::Delete { run, db } => {
            let s = open(&db)?;
            let id = resolve(&s, &run)?;
            s.delete_run(id)?;
            eprintln!("iotoll: deleted run {id}");
            Ok(())
        }
    }
}

/// The headline metrics of a test's kind, as (label, metric).
fn shown_metrics(kind: Kind) -> &'static [(&'static str, &'static str)] {
    match kind {
        Kind::Disk => &[
            ("iops", "iops"),
            ("MB/s", "mb_s"),
            ("lat us", "lat_mean_us"),
        ],
        Kind::NetStream => &[("mbit/s", "mbit_s")],
        Kind::NetRr => &[("trans/s", "trans_s"), ("rtt us", "rtt_mean_us")],
    }
}

/// One `results show` line: only the fields that apply to the test's kind.
fn test_line(t: &iotoll_store::TestRow) -> String {
    let m = export::selected_metrics(t);
    let g = |k: &str| m.and_then(|m| m.get(k).copied()).map(num);
    let mut l = format!(
        "{:<40} {:<10} {} reps  {}",
        printable(&t.name),
        printable(t.group.as_deref().unwrap_or("-")),
        t.reps.len(),
        t.select
    );
    let mbit = iotoll_model::ci::wants_mbit(t.kind, &t.params);
    for (label, k) in shown_metrics(t.kind) {
        // Disk throughput in Mbit/s where the suite asks (unit = "mbit_s").
        let (label, v) = match iotoll_model::ci::disk_mbit(k).filter(|_| mbit) {
            Some((l, f)) => (l, m.and_then(|m| m.get(*k)).map(|v| num(v * f))),
            None => (*label, g(k)),
        };
        l.push_str(&format!("  {label} {}", v.unwrap_or("-".into())));
    }
    // The metric the test is selected by, when the kind's columns lack it.
    let sel = t.select_metric();
    if !shown_metrics(t.kind).iter().any(|(_, k)| *k == sel) {
        l.push_str(&format!("  {sel} {}", g(sel).unwrap_or("-".into())));
    }
    l.push_str(&format!(
        "  cpu % {}  spread % {}",
        g("cpu_pct").unwrap_or("-".into()),
        t.spread_pct.map_or("-".into(), |v| format!("{v:.1}"))
    ));
    if let Some(c) = &t.ci95 {
        l.push_str(&format!("  {}", ci_text(c, mbit)));
    }
    if t.repeatable == Some(false) {
        l.push_str("  NOT REPEATABLE");
    }
    l
}

/// "95 % CI of iops 980 to 1,020 (mean 1,000 ± 20, 3 reps)"; `mbit`
/// shows a disk MB/s metric in Mbit/s.
pub fn ci_text(c: &iotoll_model::Ci95, mbit: bool) -> String {
    let (name, f) = match iotoll_model::ci::disk_mbit(&c.metric).filter(|_| mbit) {
        Some((l, f)) => (l, f),
        None => (c.metric.as_str(), 1.0),
    };
    let caveat = c.caveat().map_or(String::new(), |w| format!(": {w}"));
    format!(
        "95 % CI of {name} {} to {} (mean {} ± {}, {} reps){caveat}",
        num(c.low * f),
        num(c.high * f),
        num(c.mean * f),
        num(c.half_width * f),
        c.n
    )
}

/// A multi-host test's per-host, per-pair and per-adapter tables, of the
/// repetition its figures are (or, for a mean, the first complete one,
/// said so); empty for a single-host test.
fn multi_host(t: &iotoll_store::TestRow) -> String {
    let complete = || (t.reps.iter()).filter(|r| r.status == iotoll_model::ResultStatus::Complete);
    let (rep, which) = match t.selected_rep {
        Some(s) => (t.reps.iter().find(|r| r.rep == s), "selected"),
        None => (complete().next(), "one of the mean's"),
    };
    let Some(rep) = rep.filter(|r| !r.doc.hosts.is_empty()) else {
        return String::new();
    };
    format!(
        "    repetition {} ({which}):\n{}",
        rep.rep,
        crate::output::host_tables(&rep.doc, "    ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(kind: &str, metrics: serde_json::Value) -> iotoll_store::TestRow {
        iotoll_store::TestRow {
            seq: 1,
            name: "t".into(),
            kind: kind.parse().unwrap(),
            group: None,
            params: serde_json::json!({}),
            select: "mean".into(),
            selected_rep: None,
            spread_pct: Some(1.25),
            repeatable: Some(true),
            summary: serde_json::from_value(metrics).ok(),
            ci95: None,
            reps: vec![],
        }
    }

    fn doc(metrics: serde_json::Value) -> iotoll_model::ResultDoc {
        serde_json::from_value(serde_json::json!({
            "iotoll_version": "0.1.0", "kind": "net-stream", "status": "complete",
            "started_at": "2026-11-22T00:00:00Z", "config": null, "spec": {},
            "metrics": metrics, "cpu": {"local": null, "remote": null},
            "latency": null, "series": [], "notes": [], "disclosure": null
        }))
        .unwrap()
    }

    /// issue 23 §7: `results show` of a multi-host run prints its
    /// per-host and per-pair tables (and §6: a multi-homed host's adapters,
    /// and the 95 % CI of 3+ repetitions).
    #[test]
    fn show_prints_a_multi_host_tests_hosts_pairs_and_adapters() {
        let mut t = row("net-stream", serde_json::json!({"mbit_s": 1600.0}));
        t.select = "median:mbit_s".into();
        let mut d = doc(serde_json::json!({"mbit_s": 1600.0, "window_s": 10.0}));
        let host =
            |name: &str, role: &str, tx: f64, rx: f64, ifaces: usize| iotoll_model::HostFigures {
                name: name.into(),
                role: role.into(),
                cpus: 4,
                metrics: [
                    ("mbit_s", tx + rx),
                    ("tx_mbit_s", tx),
                    ("rx_mbit_s", rx),
                    ("cpu_pct", 12.5),
                ]
                .iter()
                .map(|(k, v)| (k.to_string(), *v))
                .collect(),
                ifaces: (0..ifaces)
                    .map(|n| {
                        iotoll_model::IfaceFigures {
                            name: format!("eth{n}"),
                            rx_bytes: (rx * 1e6 / 8.0 * 10.0) as u64 / ifaces as u64,
                            tx_bytes: (tx * 1e6 / 8.0 * 10.0) as u64 / ifaces as u64,
                            ..Default::default()
                        }
                        .with_rates(10.0)
                    })
                    .collect(),
                ..Default::default()
            };
        d.hosts = vec![
            host("srv", "server", 0.0, 1600.0, 4),
            host("c1", "client", 800.0, 0.0, 1),
            host("c2", "client", 800.0, 0.0, 1),
        ];
        let pair = |c: &str| iotoll_model::PairFigures {
            client: c.into(),
            server: "srv".into(),
            conns: 2,
            client_to_server_bytes: 1_000_000_000,
            server_to_client_bytes: 0,
            mbit_s: 800.0,
        };
        d.pairs = vec![pair("c1"), pair("c2")];
        t.selected_rep = Some(2);
        t.reps = (1..=3)
            .map(|rep| {
                let mut d = d.clone();
                d.metrics
                    .insert("mbit_s".into(), 1590.0 + 10.0 * rep as f64);
                iotoll_store::RepRow {
                    rep,
                    status: iotoll_model::ResultStatus::Complete,
                    doc: d,
                }
            })
            .collect();
        t.ci95 = t.compute_ci95();
        let out = multi_host(&t);
        assert!(out.contains("repetition 2 (selected)"), "{out}");
        for want in [
            "per host:",
            "srv",
            "c1",
            "per pair:",
            "c2",
            "srv",
            "800",
            "per adapter",
        ] {
            assert!(out.contains(want), "{want}: {out}");
        }
        // The server's 4 adapters, 400 Mbit/s each, adding up to its 1,600.
        let adapters: Vec<&str> = out.lines().filter(|l| l.contains(" eth")).collect();
        assert_eq!(adapters.len(), 4, "{out}");
        assert!(
            adapters.iter().all(|l| l.trim_end().ends_with(" 400")),
            "{out}"
        );
        assert!(out.contains("srv: adapters 1,600 Mbit/s on the wire (headers included) for 1,600 Mbit/s of payload"), "{out}");
        // Single-homed clients have no adapter lines.
        assert!(
            !out.lines()
                .any(|l| l.trim_start().starts_with("c1") && l.contains("eth0")),
            "{out}"
        );
        // 1600, 1610, 1620: 1610 ± 4.303 × 10 / √3 = ± 24.8.
        let line = test_line(&t);
        assert!(
            line.contains("95 % CI of mbit_s 1,585 to 1,635 (mean 1,610 ± 24.8, 3 reps)"),
            "{line}"
        );
    }

    #[test]
    fn show_prints_the_metric_a_test_is_selected_by() {
        let mut t = row(
            "disk",
            serde_json::json!({"iops": 1000.0, "lat_p99_us": 812.0}),
        );
        t.select = "median:lat_p99_us".into();
        let l = test_line(&t);
        assert!(l.contains("lat_p99_us 812"), "{l}");
        t.select = "median:iops".into();
        assert_eq!(test_line(&t).matches("1,000").count(), 1);
    }

    #[test]
    fn show_prints_disk_mbit_s_where_the_suite_asks() {
        let mut t = row("disk", serde_json::json!({"iops": 1000.0, "mb_s": 4.096}));
        t.params = serde_json::json!({"unit": "mbit_s"});
        let l = test_line(&t);
        assert!(l.contains("Mbit/s 32.8") && !l.contains("MB/s"), "{l}");
    }

    #[test]
    fn show_prints_only_the_fields_of_the_kind() {
        let net = test_line(&row(
            "net-stream",
            serde_json::json!({"mbit_s": 940.0, "cpu_pct": 12.0}),
        ));
        assert!(
            net.contains("mbit/s 940 ") && net.contains("cpu % 12"),
            "{net}"
        );
        assert!(!net.contains("iops") && !net.contains("trans/s"), "{net}");
        let rr = test_line(&row("net-rr", serde_json::json!({"trans_s": 5000.0})));
        assert!(
            rr.contains("trans/s 5,000") && !rr.contains("mbit/s"),
            "{rr}"
        );
        let disk = test_line(&row(
            "disk",
            serde_json::json!({"iops": 1000.0, "mb_s": 4.096, "cpu_pct": 3.0}),
        ));
        assert!(
            disk.contains("iops 1,000") && disk.contains("MB/s 4.10"),
            "{disk}"
        );
        assert!(
            !disk.contains("mbit/s") && !disk.contains("trans/s"),
            "{disk}"
        );
        // A metric of the kind that was not measured is shown as missing.
        assert!(disk.contains("lat us -"), "{disk}");
    }
}
