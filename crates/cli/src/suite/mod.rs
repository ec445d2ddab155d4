//! `iotoll suite list | show | run` and `iotoll sysinfo`.

use crate::{session_err, usage, DbArg, Interrupted};
use anyhow::{Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use iotoll_model::RunStatus;
use iotoll_model::{parse_duration, parse_size};
use iotoll_report::term::TermProgress;
use iotoll_report::text::suite as text;
use iotoll_run::signals;
use iotoll_suite::durations::override_durations;
use iotoll_suite::hosts::HostEntry;
use iotoll_suite::session::{self, Plan, PlanRequest, Preflight};
use iotoll_suite::{OnHostFailure, OnInterference, Options, Session};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Subcommand)]
pub enum SuiteCmd {
    /// The built-in suites.
    List,
    /// A suite's expanded tests and estimated duration.
    Show(ShowArgs),
    /// Run a suite: every test, its repetitions, into the results database.
    Run(Box<RunArgs>),
    /// Write a suite's disk test (access specs, test setup, workers) as an Iometer .icf.
    #[command(
        after_help = "An .icf holds one test setup: a suite with several disk tests needs --test. Access specs run at different queue depths become one group of workers per queue depth, each resting on Iometer's Idle spec while another runs; a queue depth sweep becomes Iometer's queue depth cycling. Read it back with `iotoll suite show|run FILE.icf --target ...`."
    )]
    ExportIcf(ExportIcfArgs),
}

#[derive(Args)]
pub struct ShowArgs {
    /// A built-in suite name, a suite file, or an Iometer .icf file.
    suite: String,
    /// The targets disk tests would run on (an .icf's targets map onto them in order).
    #[arg(long, value_name = "PATH", value_delimiter = ',')]
    target: Vec<PathBuf>,
    #[command(flatten)]
    durations: Durations,
    /// Repetitions of every test (as `suite run --reps`).
    #[arg(long, value_name = "N")]
    reps: Option<u32>,
}

#[derive(Args)]
pub struct ExportIcfArgs {
    /// A built-in suite name, a suite file, or an .icf.
    suite: String,
    /// The disk test to write [default: the suite's only one].
    #[arg(long, value_name = "NAME")]
    test: Option<String>,
    /// Target names to write for the workers, as Iometer shows them (e.g. "PHYSICALDRIVE:1", "E:") [default: PHYSICALDRIVE:1].
    #[arg(long, value_name = "NAME", value_delimiter = ',')]
    target: Vec<String>,
    /// The manager (Dynamo host) name to write [default: this host's name].
    #[arg(long, value_name = "NAME")]
    manager: Option<String>,
    /// Write here [default: standard output].
    #[arg(short, long, value_name = "FILE")]
    out: Option<PathBuf>,
}

/// `--time` / `--ramp`: a smoke run of a long study.
#[derive(Args, Clone, Copy)]
pub struct Durations {
    /// Window of every test, overriding the suite's (recorded as a run note).
    #[arg(long, value_name = "DUR", value_parser = parse_duration)]
    time: Option<Duration>,
    /// Ramp-up of every test, overriding the suite's (recorded as a run note).
    #[arg(long, value_name = "DUR", value_parser = parse_duration)]
    ramp: Option<Duration>,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum OnInterferenceArg {
    Warn,
    Rerun,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum OnHostFailureArg {
    Continue,
    Stop,
}

#[derive(Args)]
#[command(
    after_help = "Without --target, disk tests use one temporary test file (deleted afterwards); without --peer, network tests run against an in-process endpoint on loopback. Tests placed on hosts (`on`, `pairs`, `clients`/`server`: docs/suites.md, \"Hosts and placement\") need --hosts FILE or --lab NAME unless the suite's [hosts] defines them all; every host is checked before anything runs.
Each repetition is committed to the database the moment it finishes. Ctrl-C stops the run, marks it aborted and keeps every finished repetition (exit 130)."
)]
pub struct RunArgs {
    /// A built-in suite name (see `iotoll suite list`) or a suite file.
    suite: String,
    /// Configuration label of this run (e.g. "sw-initiator", "mtu9000").
    #[arg(long, value_name = "LABEL")]
    config: Option<String>,
    /// Disk target of every disk test (file, block device or iscsi://HOST[:PORT]/IQN/LUN); repeat it, or give a comma list, for several (an .icf's targets map onto them in order).
    #[arg(long, value_name = "PATH|URL", value_delimiter = ',')]
    target: Vec<PathBuf>,
    /// Allow writing to --target (destroys its contents).
    #[arg(long)]
    allow_destructive: bool,
    #[command(flatten)]
    iscsi: crate::iscsi::LoginArgs,
    /// Endpoint for every network test: HOST[:PORT] running `iotoll net serve`.
    #[arg(long, value_name = "HOST[:PORT]")]
    peer: Option<String>,
    /// Pre-shared key file for the endpoint.
    #[arg(long, value_name = "FILE")]
    auth_key: Option<PathBuf>,
    /// Run in a lab (`iotoll lab`): the endpoint in --server's host, every test in --client's. A lab that is not up is brought up for the run and taken down after it.
    #[arg(long, value_name = "NAME|FILE")]
    lab: Option<String>,
    /// Hosts of multi-host tests (a file with a [hosts] table, docs/suites.md); its entries override the suite's of the same name.
    #[arg(long, value_name = "FILE")]
    hosts: Option<PathBuf>,
    /// Start the agents of the hosts file's hosts through the system's ssh (each host's `ssh` destination, else its address), with a per-run key, and stop them at the end.
    #[arg(long, requires = "hosts")]
    ssh: bool,
    /// The iotoll program on the remote hosts, for --ssh.
    #[arg(long, value_name = "PATH", default_value = "iotoll", requires = "ssh")]
    ssh_agent: String,
    /// An extra argument for ssh, before the destination (repeatable; e.g. --ssh-arg=-F --ssh-arg=cfg).
    #[arg(
        long = "ssh-arg",
        value_name = "ARG",
        allow_hyphen_values = true,
        requires = "ssh"
    )]
    ssh_args: Vec<String>,
    /// When a host of a multi-host test is lost: continue (that test fails, the suite goes on with the next) or stop (the run stops there).
    #[arg(long, value_name = "ACTION", value_enum, default_value = "continue")]
    on_host_failure: OnHostFailureArg,
    /// Override a key of a lab this run brings up (as `lab up --set`; repeatable).
    #[arg(long = "lab-set", value_name = "KEY=VALUE", requires = "lab")]
    lab_sets: Vec<String>,
    /// The lab host the endpoint runs in [default: server, target or b].
    #[arg(long, value_name = "HOST", requires = "lab")]
    server: Option<String>,
    /// The lab host the tests run in [default: c1, initiator or a].
    #[arg(long, value_name = "HOST", requires = "lab")]
    client: Option<String>,
    /// Repetitions of every test (overrides the suite).
    #[arg(long, value_name = "N")]
    reps: Option<u32>,
    /// Repeat each test (at least 3, at most --reps times) until the
    /// Student t interval of its selected metric at LEVEL % (90, 95 or 99)
    /// is at most WIDTH % of the mean wide, e.g. 95,5 (±2.5 %); overrides
    /// the suite's `confidence`. A test that does not get there is flagged
    /// as not repeatable.
    #[arg(long, value_name = "LEVEL,WIDTH", value_parser = iotoll_model::ci::Confidence::parse)]
    confidence: Option<iotoll_model::ci::Confidence>,
    #[command(flatten)]
    durations: Durations,
    /// The live progress line shows each test's last interval of this
    /// length (e.g. 500ms; at least 100ms) instead of its last second.
    #[arg(long, value_name = "DUR", value_parser = iotoll_run::interval::parse)]
    interval: Option<std::time::Duration>,
    /// Test file or region size of every disk test, overriding the suite's (e.g. 1g for a LUN smaller than the study's; recorded as a run note).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    size: Option<u64>,
    #[command(flatten)]
    db: DbArg,
    /// Write the run's report here when it ends (HTML; Markdown if FILE ends in .md).
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
    /// Other processes using more than this % of the host's CPU in a
    /// repetition's window make it interfered [default: the suite's
    /// interference_pct, else 5].
    #[arg(long, value_name = "PCT", value_parser = crate::pct_arg)]
    interference_pct: Option<f64>,
    /// A process of the system under test on this host, by command name or
    /// pid; repeatable, beside the suite's `sut`. Its CPU is its own part
    /// (cpu_sut_pct), not interference.
    #[arg(long, value_name = "NAME|PID")]
    sut_process: Vec<iotoll_probe::procs::SutProcess>,
    /// What to do with an interfered repetition: warn (keep it; a clean one
    /// is selected if any), or rerun (also run one more repetition, at most
    /// 2 per test).
    #[arg(long, value_name = "ACTION", value_enum, default_value = "warn")]
    on_interference: OnInterferenceArg,
    /// Run even if the estimated duration exceeds 24 hours.
    #[arg(long)]
    yes: bool,
    /// No progress on stderr.
    #[arg(long, short)]
    quiet: bool,
}

pub fn main(cmd: SuiteCmd) -> Result<()> {
    match cmd {
        SuiteCmd::List => {
            // The built-in suites, a line each.
            print!("{}", text::list()?);
            Ok(())
        }
        SuiteCmd::Show(a) => show(a),
        SuiteCmd::Run(a) => run(*a),
        SuiteCmd::ExportIcf(a) => export_icf(a),
    }
}

/// `suite show`: a suite's expanded tests, where they run, and how long.
fn show(a: ShowArgs) -> Result<()> {
    let (mut s, mapping) = session::load(&a.suite, &a.target, false).map_err(session_err)?;
    session::check_reps(a.reps).map_err(session_err)?;
    for m in &mapping {
        println!("{m}");
    }
    let (ramp, time) = (a.durations.ramp, a.durations.time);
    let note = override_durations(&mut s, ramp, time).map_err(usage)?;
    // What `suite run` would refuse (confidence with fewer than 3 reps).
    s.apply_confidence(None, a.reps).map_err(usage)?;
    print!("{}", text::show(&s, a.reps, note.as_deref()));
    Ok(())
}

fn export_icf(a: ExportIcfArgs) -> Result<()> {
    let (suite, _) = session::load(&a.suite, &[], false).map_err(session_err)?;
    let o = iotoll_suite::icf_export::export_options(a.test, a.target, a.manager);
    let o = o.map_err(usage)?;
    let (icf, notes) = iotoll_suite::icf::export(&suite, &o).map_err(usage)?;
    let text = iotoll_suite::icf::write(&icf);
    for n in &notes {
        eprintln!("note: {n}");
    }
    match a.out {
        Some(p) => {
            std::fs::write(&p, text).with_context(|| format!("writing {}", p.display()))?;
            eprintln!("wrote {}", p.display());
        }
        None => print!("{text}"),
    }
    Ok(())
}

/// `suite run`: the session's steps in order (`iotoll_suite::session`),
/// then the results table, the notes and the report.
fn run(a: RunArgs) -> Result<()> {
    // First of all: a Ctrl-C or SIGTERM, however early, ends the run as
    // interrupted (exit 130, the run stored as aborted), never by the
    // signal's default action (143 and nothing stored).
    let flag = signals::install();
    let e = session_err;
    let Plan {
        suite,
        notes,
        estimate: est,
        hosts: resolved,
        peer,
        key,
    } = session::plan(&PlanRequest {
        suite: &a.suite,
        targets: &a.target,
        reps: a.reps,
        config: a.config.as_deref(),
        hosts_file: a.hosts.as_deref(),
        lab: a.lab.as_deref().map(|l| (l, &a.lab_sets[..])),
        ramp: a.durations.ramp,
        time: a.durations.time,
        size: a.size,
        yes: a.yes,
        report: a.report.as_deref(),
        peer: a.peer.as_deref(),
        auth_key: a.auth_key.as_deref(),
        confidence: a.confidence,
    })
    .map_err(e)?;
    let mut s = Session::open(Some(&a.db.path())).map_err(e)?;
    if let Some(l) = &a.lab {
        let (server, client) = (a.server.as_deref(), a.client.as_deref());
        // What the session says of a lab it brings up or takes down.
        let say = |msg: &str| eprintln!("iotoll: {msg}");
        s.bring_up_lab(l, &a.lab_sets, server, client, say)
            .map_err(e)?;
    }
    let mut progress = TermProgress::new(a.quiet)
        .with_interval(a.interval, iotoll_report::term::IntervalTo::ProgressLine);
    let pre = Preflight {
        targets: &a.target,
        peer,
        notes,
        hosts_file: a.hosts.as_deref(),
        hosts: &resolved,
    };
    s.preflight(&suite, pre, &crate::host(), &mut progress);
    let opts = options(&a, key, s.lab_run(), resolved);
    s.check(&suite, &opts, &flag, &mut progress).map_err(e)?;
    let run_id = s
        .begin(
            &suite,
            a.config.as_deref(),
            &iotoll_suite::durations::length(est),
            &mut progress,
        )
        .map_err(e)?;
    s.watch_system_under_test(&suite, &a.sut_process);
    let res = s.run_tests(&suite, &opts, &flag, &mut progress);
    progress.clear();
    let outcome = res.map_err(e)?;
    let finished = s.finish(&outcome);
    end(&a, &s, &suite, &outcome, run_id, finished.map_err(e))
}

/// The end of `suite run`: the results table (every repetition is stored,
/// so it is shown before saying the run could not be marked finished),
/// the notes, the report, and the exit status.
fn end(
    a: &RunArgs,
    s: &Session,
    suite: &iotoll_suite::Suite,
    outcome: &iotoll_suite::runner::Outcome,
    run_id: i64,
    finished: Result<()>,
) -> Result<()> {
    let config = a.config.as_deref();
    print!("{}", text::results(run_id, suite, &outcome.tests, config));
    finished?;
    let (notes, status) = (s.closing_notes(outcome), outcome.status.label());
    print!(
        "{}",
        text::run_end_notes(run_id, &notes, status, &a.db.path())
    );
    // The report covers what was stored, complete or not.
    if let (Some(p), Some(store)) = (&a.report, s.store()) {
        let threshold = suite.cpu_threshold_pct;
        let wrote = &mut crate::report::wrote;
        iotoll_report::files::write_run_report(store, run_id, threshold, p, wrote)?;
        println!("report written to {}", p.display());
    }
    match outcome.status {
        RunStatus::Aborted => Err(Interrupted.into()),
        RunStatus::Failed => {
            anyhow::bail!("some repetitions failed (see above); run {run_id} is marked failed")
        }
        _ => Ok(()),
    }
}

/// The runner's options from the command line.
fn options(
    a: &RunArgs,
    auth_key: Option<iotoll_net::auth::Key>,
    lab: Option<iotoll_suite::runner::LabRun>,
    hosts: Vec<HostEntry>,
) -> Options {
    Options {
        targets: a.target.clone(),
        allow_destructive: a.allow_destructive,
        peer: a.peer.clone(),
        auth_key,
        reps: a.reps,
        config: a.config.clone(),
        interference_pct: a.interference_pct,
        on_interference: match a.on_interference {
            OnInterferenceArg::Warn => OnInterference::Warn,
            OnInterferenceArg::Rerun => OnInterference::Rerun,
        },
        iscsi: a.iscsi.options(),
        lab,
        hosts,
        on_host_failure: match a.on_host_failure {
            OnHostFailureArg::Continue => OnHostFailure::Continue,
            OnHostFailureArg::Stop => OnHostFailure::Stop,
        },
        agent_exe: std::env::current_exe().ok(),
        ssh: a.ssh.then(|| iotoll_suite::runner::SshOptions {
            agent: a.ssh_agent.clone(),
            args: a.ssh_args.clone(),
        }),
    }
}
