//! `iotoll suite list | show | run` and `iotoll sysinfo`.

use crate::output::num;
use crate::{duration_arg, progress::TermProgress, signals, usage, DbArg, Interrupted};
use anyhow::{Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use iotoll_model::metrics as mn;
use iotoll_model::RunStatus;
use iotoll_suite::hosts::HostEntry;
use iotoll_suite::session::{self, host_label, Preflight};
use iotoll_suite::TestOutcome;
use iotoll_suite::{builtin, parse, OnHostFailure, OnInterference, Options, Session, Suite};
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Subcommand)]
pub enum SuiteCmd {
    /// The built-in suites.
    List,
    /// A suite's expanded tests and estimated duration.
    Show {
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
    },
    /// Run a suite: every test, its repetitions, into the results database.
    Run(Box<RunArgs>),
    /// Write a suite's disk test (access specs, test setup, workers) as an Iometer .icf.
    #[command(
        after_help = "An .icf holds one test setup: a suite with several disk tests needs --test. Access specs run at different queue depths become one group of workers per queue depth, each resting on Iometer's Idle spec while another runs; a queue depth sweep becomes Iometer's queue depth cycling. Read it back with `iotoll suite show|run FILE.icf --target ...`."
    )]
    ExportIcf {
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
    },
}

/// `--time` / `--ramp`: a smoke run of a long study.
#[derive(Args, Clone, Copy)]
pub struct Durations {
    /// Window of every test, overriding the suite's (recorded as a run note).
    #[arg(long, value_name = "DUR", value_parser = duration_arg)]
    time: Option<Duration>,
    /// Ramp-up of every test, overriding the suite's (recorded as a run note).
    #[arg(long, value_name = "DUR", value_parser = duration_arg)]
    ramp: Option<Duration>,
}

/// Applies `--time`/`--ramp` to every test: the run note saying so, if any.
fn apply_durations(suite: &mut Suite, d: Durations) -> Result<Option<String>> {
    iotoll_suite::durations::override_durations(suite, d.ramp, d.time).map_err(usage)
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
    #[command(flatten)]
    durations: Durations,
    /// Test file or region size of every disk test, overriding the suite's (e.g. 1g for a LUN smaller than the study's; recorded as a run note).
    #[arg(long, value_name = "SIZE", value_parser = crate::size_arg)]
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
    #[arg(long, value_name = "NAME|PID", value_parser = crate::sut_arg)]
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

/// A target given twice (the same file or device by any path).
fn check_targets(targets: &[PathBuf]) -> Result<()> {
    match iotoll_disk::target::given_twice(targets) {
        Some(t) => Err(usage(format!("--target {} is given twice", t.display()))),
        None => Ok(()),
    }
}

/// `session::load`, with the binary's errors.
pub fn load_with(which: &str, targets: &[PathBuf], run: bool) -> Result<(Suite, Vec<String>)> {
    session::load(which, targets, run).map_err(crate::session_err)
}

fn check_reps(reps: Option<u32>) -> Result<()> {
    anyhow::ensure!(reps != Some(0), usage("--reps must be at least 1"));
    Ok(())
}

fn fmt_dur(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..=119 => format!("{s} s"),
        120..=7199 => format!("{} min", s / 60),
        _ => format!("{:.1} h", s as f64 / 3600.0),
    }
}

pub fn main(cmd: SuiteCmd) -> Result<()> {
    match cmd {
        SuiteCmd::List => {
            for (name, text) in builtin::BUILTIN {
                let s = parse(text, name).map_err(|e| anyhow::anyhow!("{e}"))?;
                println!(
                    "{:<30} {:>9}  ~{:<8} {}",
                    name,
                    iotoll_model::text::count(s.jobs.len(), "test"),
                    fmt_dur(s.estimated()),
                    s.description.as_deref().unwrap_or("")
                );
            }
            Ok(())
        }
        SuiteCmd::Show {
            suite,
            target,
            durations,
            reps,
        } => {
            check_targets(&target)?;
            let (mut s, mapping) = load_with(&suite, &target, false)?;
            check_reps(reps)?;
            for m in &mapping {
                println!("{m}");
            }
            let note = apply_durations(&mut s, durations)?;
            println!(
                "{}: {}, estimated {}",
                s.name,
                iotoll_model::text::count(s.jobs.len(), "test"),
                fmt_dur(iotoll_suite::durations::planned(&s, reps))
            );
            if let Some(n) = note {
                println!("{n}");
            }
            if let Some(t) = s.cpu_threshold_pct {
                println!("CPU threshold {t} %");
            }
            if !s.hosts.is_empty() {
                let hosts: Vec<String> = s.hosts.iter().map(host_label).collect();
                println!("hosts {}", hosts.join(", "));
            }
            println!(
                "{:<44} {:<12} {:<10} {:>4} {:<14} {:>6} {:>6}",
                "test", "group", "kind", "reps", "select", "ramp", "time"
            );
            for j in &s.jobs {
                let (r, t) = j.ramp_time();
                println!(
                    "{:<44} {:<12} {:<10} {:>4} {:<14} {:>6} {:>6}",
                    j.name,
                    j.group,
                    j.kind,
                    reps.unwrap_or(j.reps),
                    j.rule.label(),
                    fmt_dur(r),
                    fmt_dur(t)
                );
                // Where it runs, under the test (a pair list is long).
                if !j.placement.is_local() {
                    println!("  {}", j.placement.label());
                }
            }
            Ok(())
        }
        SuiteCmd::Run(a) => run(*a),
        SuiteCmd::ExportIcf {
            suite,
            test,
            target,
            manager,
            out,
        } => export_icf(&suite, test, target, manager, out),
    }
}

fn export_icf(
    which: &str,
    test: Option<String>,
    targets: Vec<String>,
    manager: Option<String>,
    out: Option<PathBuf>,
) -> Result<()> {
    let (suite, _) = load_with(which, &[], false)?;
    if let Some(t) = targets
        .iter()
        .find(|t| t.trim().is_empty() || t.contains(char::is_control))
    {
        return Err(usage(format!(
            "--target '{}' is not a name Iometer can show",
            t.escape_debug()
        )));
    }
    let mut seen = std::collections::HashSet::new();
    if let Some(t) = targets
        .iter()
        .find(|t| !seen.insert(t.to_ascii_uppercase()))
    {
        return Err(usage(format!("--target {t} is given twice")));
    }
    let manager = manager.unwrap_or_else(|| {
        let h = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
        Some(h.trim().to_string())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "localhost".into())
    });
    let o = iotoll_suite::icf::ExportOptions {
        test,
        targets,
        manager,
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
    };
    let (icf, notes) = iotoll_suite::icf::export(&suite, &o).map_err(usage)?;
    let text = iotoll_suite::icf::write(&icf);
    for n in &notes {
        eprintln!("note: {n}");
    }
    match out {
        Some(p) => {
            std::fs::write(&p, text).with_context(|| format!("writing {}", p.display()))?;
            eprintln!("wrote {}", p.display());
        }
        None => print!("{text}"),
    }
    Ok(())
}

impl iotoll_suite::SuiteProgress for TermProgress {
    fn test_start(
        &mut self,
        index: usize,
        total: usize,
        name: &str,
        rep: u32,
        reps: u32,
        eta: Duration,
    ) {
        self.line(&format!(
            "[{index}/{total}] {name}  repetition {rep}/{reps}  suite ETA {}",
            fmt_dur(eta)
        ));
    }

    fn line(&mut self, msg: &str) {
        TermProgress::line(self, msg);
    }
}

/// The suite of `suite run` with every override applied, checked against
/// the flags before anything starts: the suite, the notes that say so,
/// its estimated duration and the hosts its tests are placed on.
fn plan(a: &RunArgs) -> Result<(Suite, Vec<String>, Duration, Vec<HostEntry>)> {
    check_targets(&a.target)?;
    let (mut suite, mapping) = load_with(&a.suite, &a.target, true)?;
    check_reps(a.reps)?;
    let blank = a.config.as_ref().is_some_and(|c| c.trim().is_empty());
    anyhow::ensure!(!blank, usage("--config must not be empty"));
    // Every host a test names is found before anything is created or
    // recorded (a lab is only looked up here, brought up further on).
    let lab = a.lab.as_deref().map(|l| (l, &a.lab_sets[..]));
    let hosts = session::placed_hosts(&suite, a.hosts.as_deref(), lab);
    let hosts = hosts.map_err(crate::session_err)?;
    // The durations in effect decide the estimate (and so --yes).
    let mut notes: Vec<String> = apply_durations(&mut suite, a.durations)?
        .into_iter()
        .collect();
    if let Some(size) = a.size {
        notes.extend(suite.override_size(size).map_err(usage)?);
    }
    notes.extend(mapping);
    let est = iotoll_suite::durations::planned(&suite, a.reps);
    anyhow::ensure!(
        est <= Duration::from_secs(24 * 3600) || a.yes,
        usage(format!(
            "suite '{}' is estimated to take {}; add --yes to run it",
            suite.name,
            fmt_dur(est)
        ))
    );
    if let Some(p) = &a.report {
        let dir = p.parent().filter(|d| !d.as_os_str().is_empty());
        let dir = dir.unwrap_or(Path::new("."));
        let msg = format!(
            "--report {}: no such directory, or a directory",
            p.display()
        );
        anyhow::ensure!(dir.is_dir() && !p.is_dir(), usage(msg));
    }
    Ok((suite, notes, est, hosts))
}

/// `suite run`: the session's steps in order (`iotoll_suite::session`),
/// then the results table, the notes and the report.
fn run(a: RunArgs) -> Result<()> {
    // First of all: a Ctrl-C or SIGTERM, however early, ends the run as
    // interrupted (exit 130, the run stored as aborted), never by the
    // signal's default action (143 and nothing stored).
    let flag = signals::install();
    let e = crate::session_err;
    let (suite, notes, est, resolved) = plan(&a)?;
    let key = crate::net::load_key(&a.auth_key)?;
    let peer = match &a.peer {
        Some(p) => Some(iotoll_net::resolve(p, iotoll_net::DEFAULT_PORT).map_err(usage)?),
        None => None,
    };
    let mut s = Session::open(Some(&a.db.path())).map_err(e)?;
    if let Some(l) = &a.lab {
        let (server, client) = (a.server.as_deref(), a.client.as_deref());
        s.bring_up_lab(l, &a.lab_sets, server, client, say)
            .map_err(e)?;
    }
    let mut progress = TermProgress::new(a.quiet);
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
        .begin(&suite, a.config.as_deref(), &fmt_dur(est), &mut progress)
        .map_err(e)?;
    s.watch_system_under_test(&suite, &a.sut_process);
    let res = s.run_tests(&suite, &opts, &flag, &mut progress);
    progress.clear();
    let outcome = res.map_err(e)?;
    let finished = s.finish(&outcome);
    // Every repetition is stored: shown before saying the run could not
    // be marked finished.
    print!(
        "{}",
        results_table(run_id, &suite, &outcome.tests, a.config.as_deref())
    );
    finished.map_err(e)?;
    let overridden = s.notes().iter().filter(|n| {
        n.starts_with(iotoll_suite::durations::OVERRIDE_NOTE)
            || n.starts_with(iotoll_suite::file::SIZE_NOTE)
    });
    let all: Vec<String> = overridden.chain(&outcome.notes).cloned().collect();
    for n in terminal_notes(&all) {
        println!("note: {n}");
    }
    let db = a.db.path();
    println!(
        "\nrun {run_id} {} — stored in {}",
        outcome.status.label(),
        db.display()
    );
    // The report covers what was stored, complete or not.
    if let (Some(p), Some(store)) = (&a.report, s.store()) {
        crate::report::write_run_report(store, run_id, suite.cpu_threshold_pct, p)?;
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

/// What the session says of a lab it brings up or takes down.
fn say(msg: &str) {
    eprintln!("iotoll: {msg}");
}

/// The run's notes under its results table, readable however long the
/// study: each repetition's interference (printed as it happened, flagged
/// INTERFERED in the table) is one count when there are more than a few,
/// not a line each (a 27-test study printed 81).
fn terminal_notes(notes: &[String]) -> Vec<String> {
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

pub fn results_table(
    run: i64,
    suite: &Suite,
    tests: &[TestOutcome],
    config: Option<&str>,
) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "run {run}  suite {}  config {}",
        suite.name,
        config.unwrap_or("-")
    );
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
        let m = t.selected.metrics.as_ref();
        // A test's figure and index are those of the metric it is selected by.
        let (head, eff) = (t.metric.as_str(), t.kind.efficiency_of(&t.metric));
        let in_mbit = mbit(&t.name);
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
        let ci = iotoll_model::Ci95::of(
            head,
            t.reps
                .iter()
                .filter_map(|(_, d)| d.metrics.get(head).copied()),
        );
        let factor = iotoll_model::ci::disk_mbit(head)
            .filter(|_| in_mbit)
            .map_or(1.0, |x| x.1);
        let ((value, unit), (index, index_unit)) = (shown(head), shown(eff));
        let throughput = if in_mbit {
            shown(mn::MB_S).0
        } else {
            m.and_then(|m| m.get(mn::MB_S).copied())
        };
        let _ = writeln!(
            o,
            "{:<40} {:<10} {:>5} {:>14} {:<14} {:>9} {:>7} {:>12} {:<22} {:>8} {:>23}{flag}",
            t.name,
            t.group,
            // Of the repetitions planned: failed and not run ones count.
            format!(
                "{}/{}",
                t.reps.len(),
                t.reps.len() + t.failures.len() + t.not_run as usize
            ),
            value.map(num).unwrap_or("-".into()),
            unit,
            throughput.map(num).unwrap_or("-".into()),
            m.and_then(|m| m.get(mn::CPU_PCT).copied())
                .map(num)
                .unwrap_or("-".into()),
            index.map(num).unwrap_or("-".into()),
            index_unit,
            t.selected
                .spread_pct
                .map_or("-".into(), |s| format!("{s:.1}")),
            ci.map_or("-".into(), |c| format!(
                "{} to {}",
                num(c.low * factor),
                num(c.high * factor)
            )),
        );
    }
    o
}

pub fn sysinfo(json: bool) -> Result<()> {
    let h = crate::host();
    if json {
        // Through a JSON value: keys in the order every stored record has.
        return crate::output::print_json(&iotoll_model::spec::to_json(&h));
    }
    // As JSON writes it (2300.0, not 2300), "-" for what could not be read.
    fn s<T: serde::Serialize>(v: &T) -> String {
        match iotoll_model::spec::to_json(v) {
            serde_json::Value::String(s) => s,
            serde_json::Value::Null => "-".into(),
            other => other.to_string(),
        }
    }
    println!("host         {}", h.host);
    println!(
        "iotoll       {} ({})",
        h.iotoll.version,
        s(&h.iotoll.commit)
    );
    println!(
        "os           {} {} ({})",
        h.os.kernel,
        h.os.arch,
        s(&h.os.distribution)
    );
    let c = &h.cpu;
    println!(
        "cpu          {}  {} socket(s), {} core(s), {} thread(s)  nominal {} MHz ({})  current {} MHz  governor {}  smt {}",
        s(&c.model), c.sockets, c.cores, c.threads, s(&c.nominal_mhz),
        s(&c.nominal_mhz_source), s(&c.current_mhz), s(&c.governor), s(&c.smt)
    );
    let caches: Vec<String> = c
        .caches
        .iter()
        .map(|x| format!("L{} {} {}", x.level, s(&x.kind), s(&x.size)))
        .collect();
    println!("caches       {}", caches.join(", "));
    let gib = |v: Option<u64>| s(&v.map(|b| format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64)));
    let m = &h.memory;
    println!(
        "memory       {}  swap {} (used {})",
        gib(m.total_bytes),
        gib(m.swap_total_bytes),
        gib(m.swap_used_bytes)
    );
    for i in &h.interfaces {
        let l = &i.link;
        let mut offs: Vec<&str> = l
            .offloads
            .iter()
            .flat_map(|o| o.flags())
            .filter_map(|(k, on)| (on == Some(true)).then_some(k))
            .collect();
        offs.sort_unstable();
        println!(
            "interface    {:<10} mtu {:<6} speed {:<6} driver {:<10} [{}] {}",
            i.name,
            s(&l.mtu),
            s(&l.speed_mbit),
            s(&l.driver),
            offs.join(" "),
            i.addresses.join(" ")
        );
    }
    for b in &h.block_devices {
        println!(
            "block        {:<10} {:<20} {} rotational {} scheduler {} queue depth {}",
            b.name,
            s(&b.model),
            gib(b.size_bytes),
            s(&b.rotational),
            s(&b.scheduler),
            s(&b.queue_depth)
        );
    }
    for (k, v) in &h.tcp {
        println!("tcp          {k} = {}", s(v));
    }
    Ok(())
}

#[cfg(test)]
mod table_tests {
    use super::*;
    use iotoll_suite::select::Selected;

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
            name: job.name.clone(),
            group: job.group.clone(),
            kind: job.kind,
            rule: job.rule.clone(),
            metric: job.metric.clone(),
            reps: docs,
            selected,
            repeatable: Some(true),
            failures: vec![],
            not_run: 0,
            interfered: vec![],
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
