//! `iotoll compare` and `iotoll report`.

use crate::{usage, DbArg};
use anyhow::Result;
use clap::Args;
use iotoll_report::files::Files;
use iotoll_report::{compare, runs, ConfigData, RunInfo};
use std::path::{Path, PathBuf};

#[derive(Args)]
#[command(
    after_help = "BASELINE and CANDIDATE are run ids or configuration labels (a label picks its latest complete run); `compare A B C` compares B and C each against A.

Tests are paired by name: a suite's test name with its swept values, or for a single run its workload (e.g. stream/dir=tx,conns=4,msg=64k). Paired tests whose workload parameters differ are flagged on their row and in the findings; --strict refuses them. What is meant to differ (MTU, engine, adapter) is the configuration, named by each run's --config label.

Differences are (candidate / baseline - 1); per group, the mean of the per-test differences (the mean of the ratios)."
)]
pub struct CompareArgs {
    /// The baseline configuration: run id or label.
    baseline: String,
    /// The candidate configuration(s): run ids or labels, each compared
    /// against the baseline.
    #[arg(required = true, value_name = "CANDIDATE")]
    candidates: Vec<String>,
    /// More configurations to compare against the baseline (the same as
    /// further CANDIDATE arguments).
    #[arg(long = "with", value_name = "LABEL")]
    with: Vec<String>,
    /// Compare this metric instead of each test's main one (iops, mbit_s, trans_s, ...).
    #[arg(long, value_name = "NAME")]
    metric: Option<String>,
    /// How to group tests: by their suite `group`, or all together.
    #[arg(long, value_name = "group|none", default_value = "group")]
    by: String,
    /// Mark each configuration/test acceptable or not by CPU %.
    #[arg(long, value_name = "PCT")]
    cpu_threshold: Option<f64>,
    #[command(flatten)]
    files: ReportFiles,
    /// Print the comparison as one JSON document.
    #[arg(long)]
    json: bool,
    /// Refuse (exit 1) when paired tests ran different workloads (other
    /// transfer size, connections, queue depth, duration, ...).
    #[arg(long)]
    strict: bool,
    #[command(flatten)]
    db: DbArg,
}

#[derive(Args)]
pub struct ReportArgs {
    /// Runs (ids or configuration labels); several are shown side by side.
    #[arg(required = true, value_name = "RUN")]
    runs: Vec<String>,
    #[command(flatten)]
    files: ReportFiles,
    /// CPU threshold to mark tests by [default: the first run's suite
    /// `cpu_threshold_pct`, if it has one].
    #[arg(long, value_name = "PCT")]
    cpu_threshold: Option<f64>,
    #[command(flatten)]
    db: DbArg,
}

/// `--html` and `--md` of the commands that write reports.
#[derive(Args)]
struct ReportFiles {
    /// Write a self-contained HTML report here.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Write a Markdown report here.
    #[arg(long, value_name = "FILE")]
    md: Option<PathBuf>,
}

fn load(db: &DbArg, which: &[String]) -> Result<(Vec<ConfigData>, Vec<RunInfo>)> {
    let store = crate::results::open_read(&db.path())?;
    let unknown = |e: &runs::RunsError| matches!(e, runs::RunsError::Unknown(_));
    runs::load(&store, which).map_err(crate::usage_if(unknown))
}

/// What a command says of a report file it wrote.
pub fn wrote(path: &Path) {
    eprintln!("iotoll: wrote {}", path.display());
}

impl ReportFiles {
    /// No file was asked for: the report goes to the terminal.
    fn none(&self) -> bool {
        self.md.is_none() && self.html.is_none()
    }

    fn files(&self) -> Files<'_> {
        let (md, html) = (self.md.as_deref(), self.html.as_deref());
        Files { md, html }
    }
}

pub fn compare_cmd(a: CompareArgs) -> Result<()> {
    let (metric, threshold) = (a.metric.as_deref(), a.cpu_threshold);
    let by_group = runs::compare_options(metric, &a.by, threshold).map_err(usage)?;
    let mut which = vec![a.baseline.clone()];
    which.extend(a.candidates.iter().cloned());
    which.extend(a.with.iter().cloned());
    let (configs, infos) = load(&a.db, &which)?;
    let c = compare(&configs, metric, by_group, threshold);
    let differing = iotoll_report::comparable::check(&c, &configs, a.strict)?;
    if !differing.is_empty() {
        eprintln!(
            "iotoll: warning: {} paired test(s) ran different workloads (see the findings; --strict refuses)",
            differing.len()
        );
    }
    let md = (a.files.files()).write(&c, &configs, &infos, "comparison", &mut wrote)?;
    // Files asked for are the output: stdout says nothing more than where
    // they went (on stderr), unless JSON is asked for too.
    if a.json {
        crate::output::print_json(&c)?;
    } else if a.files.none() {
        print!("{md}");
    }
    Ok(())
}

pub fn report_cmd(a: ReportArgs) -> Result<()> {
    runs::check_threshold(a.cpu_threshold).map_err(usage)?;
    let (configs, infos) = load(&a.db, &a.runs)?;
    let threshold = a
        .cpu_threshold
        .or_else(|| infos.first().and_then(|i| i.cpu_threshold_pct));
    let c = compare(&configs, None, true, threshold);
    let md = (a.files.files()).write(&c, &configs, &infos, "report", &mut wrote)?;
    if a.files.none() {
        print!("{md}");
    }
    Ok(())
}
