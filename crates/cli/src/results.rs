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
                    .find_map(|r| r.doc.net_disclosure()?.tls);
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
    for (label, k) in shown_metrics(t.kind) {
        l.push_str(&format!("  {label} {}", g(k).unwrap_or("-".into())));
    }
    l.push_str(&format!(
        "  cpu % {}  spread % {}",
        g("cpu_pct").unwrap_or("-".into()),
        t.spread_pct.map_or("-".into(), |v| format!("{v:.1}"))
    ));
    if let Some(c) = &t.ci95 {
        l.push_str(&format!("  {}", ci_text(c)));
    }
    if t.repeatable == Some(false) {
        l.push_str("  NOT REPEATABLE");
    }
    l
}

/// "95 % CI of iops 980 to 1,020 (mean 1,000 ± 20, 3 reps)".
pub fn ci_text(c: &iotoll_model::Ci95) -> String {
    format!(
        "95 % CI of {} {} to {} (mean {} ± {}, {} reps)",
        c.metric,
        num(c.low),
        num(c.high),
        num(c.mean),
        num(c.half_width),
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
