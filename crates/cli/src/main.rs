//! The `iotoll` binary: clap definitions and glue only.

mod agent;
mod disk;
mod iscsi;
mod k8s;
mod lab;
mod net;
mod output;
mod report;
mod results;
mod suite;

use clap::{Args, Parser, Subcommand};
use iotoll_model::{parse_duration, ResultStatus};
use iotoll_run::signals::{self, EXIT_INTERRUPTED};
use iotoll_suite::session::MeasureError;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Parser)]
#[command(
    name = "iotoll",
    version = env!("IOTOLL_LONG_VERSION"),
    about = "What storage and network I/O cost the host: throughput, IOPS and latency beside whole-host CPU, on the same window",
    long_about = None,
    after_help = "Examples:\n  iotoll suite run quick --report quick.html\n  iotoll disk run --spec db-oltp-8k --time 10s --config nvme-a\n  iotoll net serve                      (on the peer)\n  iotoll net stream PEER --conns 100 --msg 64k --config mtu9000\n  iotoll compare mtu1500 mtu9000 --html mtu.html\n  iotoll results list"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// An agent: the network endpoint plus a console's disk and network work, for multi-host suites.
    Agent(agent::AgentArgs),
    /// Disk workloads with Iometer access specifications.
    #[command(subcommand)]
    Disk(disk::DiskCmd),
    /// iSCSI targets as iotoll's own initiator sees them: discovery, LUNs.
    #[command(subcommand)]
    Iscsi(iscsi::IscsiCmd),
    /// Lab topologies: hosts in network namespaces on a switch, shaped links, MTU, offloads.
    #[command(subcommand)]
    Lab(lab::LabCmd),
    /// Network workloads: an endpoint, TCP streams and request/response.
    #[command(subcommand)]
    Net(net::NetCmd),
    /// Suites: sweeps of tests with repetitions, into the results database.
    #[command(subcommand)]
    Suite(suite::SuiteCmd),
    /// The results database: list, show, export, delete runs.
    #[command(subcommand)]
    Results(results::ResultsCmd),
    /// Compare configurations test by test: differences, groups, efficiency, findings.
    Compare(Box<report::CompareArgs>),
    /// Report one or more runs: tables, charts, disclosure (HTML or Markdown).
    Report(report::ReportArgs),
    /// Disclose this system: CPU, memory, kernel, interfaces, block devices, TCP settings.
    Sysinfo {
        /// Print one JSON document on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Print a shell completion script on stdout.
    #[command(
        after_help = "Install:\n  bash: iotoll completions bash > /etc/bash_completion.d/iotoll\n  zsh:  iotoll completions zsh > \"${fpath[1]}/_iotoll\"\n  fish: iotoll completions fish > ~/.config/fish/completions/iotoll.fish"
    )]
    Completions {
        /// The shell to complete for.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff) on stdout.
    #[command(
        after_help = "Install: iotoll man > /usr/local/share/man/man1/iotoll.1, then `man iotoll`.\nRead without installing: iotoll man | man -l -"
    )]
    Man,
}

/// clap suggests a subcommand only for near spellings (`rnu` gets
/// nothing); this adds the closest one by edits where clap found none.
fn suggest_subcommand(mut e: clap::Error) -> clap::Error {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    use clap::CommandFactory;
    if e.kind() != ErrorKind::InvalidSubcommand || e.get(ContextKind::SuggestedSubcommand).is_some()
    {
        return e;
    }
    let Some(ContextValue::String(bad)) = e.get(ContextKind::InvalidSubcommand).cloned() else {
        return e;
    };
    // The command whose subcommand was mistyped: follow the words before it.
    let mut cmd = Cli::command();
    for word in std::env::args().skip(1).take_while(|w| *w != bad) {
        match cmd.find_subcommand(&word) {
            Some(c) => cmd = c.clone(),
            None => break,
        }
    }
    let names = cmd.get_subcommands().map(|c| c.get_name());
    if let Some(name) = iotoll_model::text::closest(&bad, names) {
        e.insert(
            ContextKind::SuggestedSubcommand,
            ContextValue::Strings(vec![name.to_string()]),
        );
    }
    e
}

/// `iotoll completions SHELL`: the script for the whole command tree.
fn completions(shell: clap_complete::Shell) -> anyhow::Result<()> {
    use clap::CommandFactory;
    clap_complete::generate(shell, &mut Cli::command(), "iotoll", &mut std::io::stdout());
    Ok(())
}

/// `iotoll man`: iotoll(1), with every subcommand's options in it.
fn man() -> anyhow::Result<()> {
    use clap::CommandFactory;
    Ok(iotoll_report::man::page(
        &Cli::command(),
        &mut std::io::stdout().lock(),
    )?)
}

/// An error that is the user's to fix on the command line: exit status 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// An error the user fixes on the command line (exit 2), saying `msg`.
pub fn usage(msg: impl std::fmt::Display) -> anyhow::Error {
    UsageError(msg.to_string()).into()
}

/// A run that was interrupted after printing what it measured.
#[derive(Debug, thiserror::Error)]
#[error("interrupted")]
pub struct Interrupted;

/// Labelling, output and storage flags every measuring command shares.
#[derive(Args)]
pub struct MeasureOpts {
    /// Configuration label recorded with the result (e.g. "sw-initiator").
    #[arg(long, value_name = "LABEL")]
    pub config: Option<String>,
    /// Print one JSON document on stdout (see docs/json.md).
    #[arg(long)]
    pub json: bool,
    /// No progress line on stderr.
    #[arg(long, short)]
    pub quiet: bool,
    /// Print one line per interval while the test runs, as `iperf -i`
    /// does (e.g. 1s, 500ms; at least 100ms): its throughput, IOPS or
    /// transactions/s and whole-host CPU %. On stdout before the table; on
    /// stderr with --json, which stays one document.
    #[arg(long, value_name = "DUR", value_parser = iotoll_run::interval::parse)]
    pub interval: Option<std::time::Duration>,
    /// Other processes using more than this % of the host's CPU in the
    /// window make the result "interfered" (a warning; see docs/json.md).
    #[arg(long, value_name = "PCT", value_parser = pct_arg, default_value = "5")]
    pub interference_pct: f64,
    /// A process of the system under test on this host (an iSCSI target,
    /// a server), by command name or pid; repeatable. Its CPU is reported
    /// as its own part (cpu_sut_pct), not as interference.
    #[arg(long, value_name = "NAME|PID")]
    pub sut_process: Vec<iotoll_probe::procs::SutProcess>,
    /// Results database the run is stored in [default: $XDG_DATA_HOME/iotoll/results.db].
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
    /// Do not store the result.
    #[arg(long, conflicts_with = "db")]
    pub no_db: bool,
}

/// `--db` of the commands that read or manage stored runs.
#[derive(Args)]
pub struct DbArg {
    /// Results database [default: $XDG_DATA_HOME/iotoll/results.db].
    #[arg(long, value_name = "PATH", global = true)]
    db: Option<PathBuf>,
}

impl DbArg {
    pub fn path(&self) -> PathBuf {
        self.db.clone().unwrap_or_else(iotoll_store::default_path)
    }
}

/// This host's disclosure, as `iotoll sysinfo` shows it and every run stores it.
pub fn host() -> iotoll_probe::sysinfo::Host {
    iotoll_probe::sysinfo::host(iotoll_model::VERSION, option_env!("IOTOLL_BUILD_COMMIT"))
}

/// `iotoll sysinfo`: this host's disclosure, as every run stores it.
fn sysinfo(json: bool) -> anyhow::Result<()> {
    let h = host();
    // JSON through a JSON value: keys in the order every stored record has.
    let value = iotoll_model::spec::to_json(&h);
    output::show(json, &value, |_| iotoll_report::text::host(&h))
}

/// `--ramp` and `--time` of a single measurement.
#[derive(Args)]
pub struct Window {
    /// Ramp-up before the measurement window (500ms, 4s, 2m, 1h).
    #[arg(long, value_name = "DUR", value_parser = parse_duration, default_value = "1s")]
    pub ramp: Duration,
    /// Length of the measurement window.
    #[arg(long, value_name = "DUR", value_parser = parse_duration, default_value = "10s")]
    pub time: Duration,
}

/// A percentage of the host's CPU, 0 to 100.
pub fn pct_arg(s: &str) -> Result<f64, String> {
    s.trim()
        .parse::<f64>()
        .ok()
        .filter(|v| (0.0..=100.0).contains(v))
        .ok_or_else(|| format!("'{s}' is not a percentage from 0 to 100"))
}

/// A library error for the binary: the user's to fix (exit 2) or not.
pub fn usage_or<E: MeasureError>(e: E) -> anyhow::Error {
    usage_if(E::is_usage)(e)
}

/// A library error for the binary: the user's to fix (exit 2) where
/// `is_usage` says so, else exit 1.
pub fn usage_if<E>(is_usage: impl Fn(&E) -> bool) -> impl Fn(E) -> anyhow::Error
where
    E: std::error::Error + Send + Sync + 'static,
{
    move |e| if is_usage(&e) { usage(e) } else { e.into() }
}

/// A session's error for the binary: interrupted (exit 130), the user's
/// to fix (exit 2) or not.
pub fn session_err(e: iotoll_suite::SessionError) -> anyhow::Error {
    match e {
        iotoll_suite::SessionError::Interrupted => Interrupted.into(),
        e if e.is_usage() => usage(e),
        e => e.into(),
    }
}

/// Runs one measuring command as a session of one test
/// (`iotoll_suite::session`): opens the results database first (an
/// unusable one is an error before any workload), installs the Ctrl-C
/// handler, shows progress on a terminal, prints the result (JSON or
/// table), stores it, and turns an interrupted window into exit status
/// 130. A run that failed (an engine thread panic, connections or I/Os
/// failed, an engine error mid-run) prints its partial figures marked
/// `failed`, is stored as a failed run with no result, and exits 1
/// naming the failure; errors the user fixes on the command line exit 2.
pub fn measure<E: MeasureError>(
    o: &MeasureOpts,
    run: impl FnOnce(iotoll_run::RunControl) -> Result<iotoll_model::ResultDoc, E>,
) -> anyhow::Result<()> {
    let db = (!o.no_db).then(|| o.db.clone().unwrap_or_else(iotoll_store::default_path));
    let mut session = iotoll_suite::Session::open(db.as_deref()).map_err(session_err)?;
    let flag = signals::install();
    let to = iotoll_report::term::IntervalTo::beside(o.json);
    let mut progress =
        iotoll_report::term::TermProgress::new(o.quiet).with_interval(o.interval, to);
    let ctl = iotoll_run::RunControl {
        interrupted: &flag,
        progress: &mut progress,
        schedule: None,
    };
    let res = session.measure(&o.sut_process, o.interference_pct, ctl, run);
    progress.clear();
    let m = res.map_err(usage_or)?;
    // On stdout: one JSON document with `--json`, else the table.
    output::show(o.json, &m.doc, iotoll_report::text::result)?;
    let said = session.record_measured(&m, host).map_err(session_err)?;
    if let Some(line) = said.filter(|_| !o.quiet || m.failure.is_some()) {
        eprintln!("iotoll: {line}");
    }
    if let Some(msg) = m.failure {
        anyhow::bail!("{msg} (the figures printed are partial and not a result)");
    }
    if m.doc.status == ResultStatus::Interrupted {
        eprintln!(
            "iotoll: interrupted; the figures above cover the part of the window that was measured"
        );
        return Err(Interrupted.into());
    }
    Ok(())
}

fn main() -> ExitCode {
    // `iotoll ... | head` ends quietly, like any Unix tool. Sockets are
    // unaffected: every socket write passes MSG_NOSIGNAL.
    // SAFETY: restoring the default disposition of one signal at start-up.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    iotoll_run::log::install();
    let cli = Cli::try_parse().unwrap_or_else(|e| suggest_subcommand(e).exit());
    let result = match cli.cmd {
        Cmd::Agent(a) => agent::main(a),
        Cmd::Disk(c) => disk::main(c),
        Cmd::Iscsi(c) => iscsi::main(c),
        Cmd::Lab(c) => lab::main(c),
        Cmd::Net(c) => net::main(c),
        Cmd::Suite(c) => suite::main(c),
        Cmd::Results(c) => results::main(c),
        Cmd::Sysinfo { json } => sysinfo(json),
        Cmd::Compare(a) => report::compare_cmd(*a),
        Cmd::Report(a) => report::report_cmd(a),
        Cmd::Completions { shell } => completions(shell),
        Cmd::Man => man(),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.is::<Interrupted>() => ExitCode::from(EXIT_INTERRUPTED),
        Err(e) => {
            eprintln!(
                "iotoll: error: {}",
                iotoll_model::text::error_chain(e.as_ref())
            );
            if e.is::<UsageError>() {
                ExitCode::from(2)
            } else if signals::interrupted() {
                ExitCode::from(EXIT_INTERRUPTED)
            } else {
                ExitCode::from(1)
            }
        }
    }
}
