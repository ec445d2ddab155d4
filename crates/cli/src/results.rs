//! `iotoll results list | show | export | delete`.

use crate::{usage, usage_if, DbArg};
use anyhow::Result;
use clap::{Subcommand, ValueEnum};
use iotoll_model::text::printable;
use iotoll_report::text;
use iotoll_store::import_file::import_file;
use iotoll_store::{export, Store, StoreError};
use std::path::{Path, PathBuf};

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

/// For commands that only read: never creates, migrates or writes, so a
/// database on a read-only or full filesystem still answers.
pub fn open_read(path: &Path) -> Result<Store> {
    Store::open_read_only(path).map_err(usage_if(|e| matches!(e, StoreError::Missing(_))))
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
        ResultsCmd::List { db } => list(&db),
        ResultsCmd::Show { run, db, json } => {
            crate::output::show(json, &detail(&db, &run)?, text::run_detail)
        }
        ResultsCmd::Export { run, format, db } => export(&db, &run, format),
        ResultsCmd::Import {
            file,
            format,
            config,
            db,
        } => import(&db, &file, format, &config),
        ResultsCmd::Delete { run, db } => {
            let s = Store::open(&db.path())?;
            let id = resolve(&s, &run)?;
            s.delete_run(id)?;
            eprintln!("iotoll: deleted run {id}");
            Ok(())
        }
    }
}

fn list(db: &DbArg) -> Result<()> {
    let runs = Store::list_runs_at(&db.path())?;
    if runs.is_empty() {
        eprintln!("iotoll: no runs stored in {}", db.path().display());
        return Ok(());
    }
    print!("{}", text::run_list(&runs));
    Ok(())
}

fn export(db: &DbArg, run: &str, format: Format) -> Result<()> {
    let d = detail(db, run)?;
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

fn import(db: &DbArg, file: &Path, format: ImportFormat, config: &str) -> Result<()> {
    let format = format.to_possible_value().expect("no skipped format");
    let is_usage = |e: &StoreError| matches!(e, StoreError::Input(_));
    let i = import_file(&db.path(), file, format.get_name(), config).map_err(usage_if(is_usage))?;
    for (test, n) in &i.notes {
        eprintln!("iotoll: note: {}: {}", printable(test), printable(n));
    }
    let (n, src, id) = (i.tests, file.display(), i.run);
    println!("imported {n} test(s) from {src} as run {id} (config {config})");
    Ok(())
}
