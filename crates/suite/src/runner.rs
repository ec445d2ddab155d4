//! Runs a suite: every job, its repetitions (and reruns while it is not
//! repeatable), the selection, and hands each result to a sink the moment
//! it exists, so nothing finished is lost on Ctrl-C or a crash.

use crate::file::{Job, JobSpec, Suite};
use crate::select::{agreement, select_clean, Rule, Selected};
use iotoll_disk::DiskError;
use iotoll_model::result::INTERFERENCE_NOTE;
use iotoll_model::{Kind, ResultDoc, ResultStatus, RunStatus};
use iotoll_net::auth::Key;
use iotoll_net::NetError;
use iotoll_run::{Progress, RunControl};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Disk targets of every disk test; empty: one temporary test file.
    pub targets: Vec<PathBuf>,
    pub allow_destructive: bool,
    /// Endpoint for every network test; None: an in-process one on loopback.
    pub peer: Option<String>,
    pub auth_key: Option<Key>,
    /// Overrides every test's repetitions.
    pub reps: Option<u32>,
    pub config: Option<String>,
    /// Overrides every test's `interference_pct`.
    pub interference_pct: Option<f64>,
    pub on_interference: OnInterference,
    /// How disk tests log in to `iscsi://` targets.
    pub iscsi: iotoll_disk::spec::IscsiOptions,
    /// Run in a lab (`--lab`): the endpoint in one host, every test in
    /// another.
    pub lab: Option<LabRun>,
    /// The hosts the suite's placed tests use, resolved
    /// (`hosts::resolve_hosts`: the suite's `[hosts]`, the hosts file over
    /// them, lab hosts).
    pub hosts: Vec<crate::hosts::HostEntry>,
    pub on_host_failure: OnHostFailure,
    /// This iotoll's executable, to start agents in lab hosts.
    pub agent_exe: Option<PathBuf>,
    /// Start the hosts' agents through ssh (`--ssh`).
    pub ssh: Option<SshOptions>,
}

/// How `--ssh` starts agents.
#[derive(Debug, Clone)]
pub struct SshOptions {
    /// The iotoll program there.
    pub agent: String,
    /// Extra ssh arguments, before the destination.
    pub args: Vec<String>,
}

/// What to do when a host of a multi-host test is lost (its agent stops
/// answering, or cannot be reached).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum OnHostFailure {
    /// The test is failed and the suite goes on with the next test.
    #[default]
    Continue,
    /// The run stops there.
    Stop,
}

/// Where a suite runs in a lab that is up.
#[derive(Debug, Clone)]
pub struct LabRun {
    pub lab: iotoll_lab::LabState,
    /// The host the in-process endpoint serves from (on its first address).
    pub server: String,
    /// The host every test runs in: network clients, and disk tests (so an
    /// `iscsi://` target in the lab is reached over the lab's link).
    pub client: String,
}

impl LabRun {
    fn host(&self, name: &str) -> Result<&iotoll_lab::HostState, RunError> {
        self.lab
            .host(name)
            .ok_or_else(|| RunError::Lab(format!("lab '{}' has no host '{name}'", self.lab.name)))
    }
}

/// What to do with a repetition other processes interfered with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum OnInterference {
    /// Keep it, with its warning (it is chosen only if no clean one exists).
    #[default]
    Warn,
    /// Also run one more repetition, at most [`MAX_INTERFERENCE_RERUNS`] per test.
    Rerun,
}

/// Extra repetitions `--on-interference rerun` may add to one test.
pub const MAX_INTERFERENCE_RERUNS: u32 = 2;

/// Why a sink could not take a result: its own error, kept whole.
pub type SinkError = Box<dyn std::error::Error + Send + Sync>;

/// Where results go as they happen (the results database).
pub trait Sink {
    fn begin_test(&mut self, seq: usize, job: &Job) -> Result<i64, SinkError>;
    fn rep(&mut self, test: i64, rep: u32, doc: &ResultDoc) -> Result<(), SinkError>;
    fn end_test(&mut self, test: i64, job: &Job, outcome: &TestOutcome) -> Result<(), SinkError>;
}

/// Why a suite run stopped before its end (failed repetitions do not stop it).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Sink(#[from] SinkError),
    /// Preparing the temporary test file.
    #[error(transparent)]
    Disk(#[from] DiskError),
    #[error("in-process endpoint: {0}")]
    Endpoint(#[source] std::io::Error),
    #[error("lab: {0}")]
    Lab(String),
    /// A host of the multi-host tests cannot take part (checked before
    /// any test runs).
    #[error("{0}")]
    Hosts(String),
    /// A disk test's target cannot be used as the test would use it
    /// (checked before any test runs).
    #[error("test '{test}': {source}")]
    Target {
        test: String,
        #[source]
        source: DiskError,
    },
    /// `--peer` does not answer as an endpoint (checked before any test runs).
    #[error("--peer: {0}")]
    Peer(#[source] NetError),
}

impl RunError {
    /// The user's to fix on the command line (a refused flag, a write to a
    /// target without --allow-destructive).
    pub fn is_usage(&self) -> bool {
        match self {
            RunError::Target { source, .. } => source.is_usage(),
            RunError::Peer(e) => e.is_usage(),
            _ => false,
        }
    }
}

/// What one job came to.
#[derive(Debug, Clone)]
pub struct TestOutcome {
    pub name: String,
    pub group: String,
    pub kind: Kind,
    pub rule: Rule,
    pub metric: String,
    /// Repetition numbers (1-based) that completed, with their documents.
    pub reps: Vec<(u32, ResultDoc)>,
    pub selected: Selected,
    pub repeatable: Option<bool>,
    pub failures: Vec<String>,
    /// Repetition numbers (1-based) other processes interfered with.
    pub interfered: Vec<u32>,
    /// Repetitions not run: a failure they would all meet again stopped
    /// the test.
    pub not_run: u32,
}

impl TestOutcome {
    /// 1-based repetition number of the selected one.
    pub fn selected_rep(&self) -> Option<u32> {
        self.selected
            .index
            .and_then(|i| self.reps.get(i))
            .map(|r| r.0)
    }
}

pub struct Outcome {
    pub status: RunStatus,
    pub tests: Vec<TestOutcome>,
    pub notes: Vec<String>,
}

/// Progress of the suite as a whole (one line per test and repetition).
pub trait SuiteProgress: Progress {
    fn test_start(
        &mut self,
        index: usize,
        total: usize,
        name: &str,
        rep: u32,
        reps: u32,
        eta: Duration,
    );
    fn line(&mut self, msg: &str);
}

/// An endpoint inside this process, on an ephemeral loopback port.
struct LocalEndpoint {
    addr: String,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl LocalEndpoint {
    fn start(key: Option<Key>) -> Result<LocalEndpoint, RunError> {
        Self::spawn(key, || {
            let l = TcpListener::bind("127.0.0.1:0").map_err(RunError::Endpoint)?;
            Ok((l, ()))
        })
    }

    /// An endpoint in a lab host: its thread enters the host's namespace
    /// first, so its listener, the sessions' data ports (opened by threads
    /// it starts, which inherit the namespace) and every connection live
    /// there.
    fn start_in(host: &iotoll_lab::HostState, key: Option<Key>) -> Result<LocalEndpoint, RunError> {
        let ip = host
            .addresses
            .first()
            .copied()
            .ok_or_else(|| RunError::Lab(format!("lab host '{}' has no address", host.name)))?;
        let h = host.clone();
        Self::spawn(key, move || {
            let inside = iotoll_lab::enter(&h).map_err(|e| RunError::Lab(e.to_string()))?;
            let l = TcpListener::bind((ip, 0)).map_err(|e| {
                RunError::Lab(format!("endpoint on {ip} in host '{}': {e}", h.name))
            })?;
            Ok((l, inside))
        })
    }

    /// Runs the endpoint on its own thread, on the listener `open` makes
    /// there, keeping what `open` also returns alive while it serves.
    fn spawn<G: 'static>(
        key: Option<Key>,
        open: impl FnOnce() -> Result<(TcpListener, G), RunError> + Send + 'static,
    ) -> Result<LocalEndpoint, RunError> {
        let stop = Arc::new(AtomicBool::new(false));
        let s2 = stop.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("iotoll-endpoint".into())
            .spawn(move || {
                let opened = open().and_then(|(l, keep)| {
                    let a = l.local_addr().map_err(RunError::Endpoint)?;
                    Ok((l, keep, a))
                });
                let (l, _keep, listen) = match opened {
                    Ok(x) => x,
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                };
                let _ = tx.send(Ok(listen));
                let cfg = iotoll_net::ServerConfig {
                    listen,
                    key,
                    once: false,
                    limits: iotoll_net::Limits::default(),
                    threads: None,
                    handshake: iotoll_net::server::HANDSHAKE,
                    tls: true,
                    console: None,
                };
                let _ = iotoll_net::server::serve_silently(l, &cfg, &s2);
            })
            .map_err(RunError::Endpoint)?;
        let listen = rx
            .recv()
            .map_err(|_| RunError::Lab("the endpoint thread ended at once".into()))??;
        Ok(LocalEndpoint {
            addr: listen.to_string(),
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for LocalEndpoint {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The suite's temporary test file, removed at the end.
pub(crate) struct TempTarget(pub(crate) PathBuf);

/// Test files a suite run creates in `dir`: `iotoll-suite-PID.tst`.
pub(crate) const TEMP_PREFIX: &str = "iotoll-suite-";
pub(crate) const TEMP_SUFFIX: &str = ".tst";

/// Removes the test files that runs killed with `kill -9` left in `dir`
/// (their PID is gone), as the database marks their runs incomplete. A
/// file whose PID is alive is left alone, whoever that process is; only
/// regular files are removed. Returns what was removed.
pub fn reclaim_stale_test_files(dir: &Path) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return removed;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(TEMP_PREFIX))
            .and_then(|n| n.strip_suffix(TEMP_SUFFIX))
            // `PID`, or `PID-HOST` for a lab agent's file (crate::fleet).
            .and_then(|p| p.split('-').next()?.parse::<i64>().ok())
        else {
            continue;
        };
        let regular = e.file_type().is_ok_and(|t| t.is_file());
        if regular && !iotoll_probe::procs::pid_alive(pid) && std::fs::remove_file(e.path()).is_ok()
        {
            removed.push(e.path());
        }
    }
    removed
}

impl Drop for TempTarget {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

enum RepError {
    Interrupted,
    Failed(String),
    /// Refused before anything was measured for a reason another
    /// repetition would meet again (the target is missing or too small,
    /// the login or a digest is refused, the spec is invalid): the test's
    /// other repetitions are not run.
    Standing(String),
    /// A host of a multi-host test was lost or refused: the test cannot go
    /// on as planned (`--on-host-failure` says what then).
    Host(String),
}

fn run_one(
    job: &Job,
    opts: &Options,
    targets: &[PathBuf],
    endpoint: Option<&str>,
    fleet: Option<&mut crate::fleet::Fleet>,
    ctl: RunControl,
) -> Result<ResultDoc, RepError> {
    if !job.placement.is_local() {
        use iotoll_agent::console::ConsoleError;
        let Some(fleet) = fleet else {
            return Err(RepError::Failed("no agents for a multi-host test".into()));
        };
        return match fleet.run(job, opts, ctl.interrupted) {
            Ok(doc) if doc.status == ResultStatus::Interrupted => Err(RepError::Interrupted),
            Ok(doc) => Ok(doc),
            Err(ConsoleError::Interrupted) => Err(RepError::Interrupted),
            Err(e @ (ConsoleError::Lost { .. } | ConsoleError::Host { .. })) => {
                Err(RepError::Host(e.to_string()))
            }
            Err(e) => Err(RepError::Failed(e.to_string())),
        };
    }
    let res = match &job.spec {
        JobSpec::Disk(d) => {
            let d = disk_spec(d, opts, targets);
            iotoll_disk::run(&d, ctl).map_err(|e| match e {
                DiskError::Interrupted(_) => RepError::Interrupted,
                e @ (DiskError::Invalid(_)
                | DiskError::Target { .. }
                | DiskError::EngineUnavailable { .. }) => RepError::Standing(e.to_string()),
                e => RepError::Failed(e.to_string()),
            })
        }
        JobSpec::Net(n) => {
            let mut n = n.clone();
            n.config = opts.config.clone();
            n.key = opts.auth_key.clone();
            if let Some(p) = endpoint {
                n.peer = p.to_string();
            }
            // A busy endpoint is retried by the client (`busy_wait`).
            iotoll_net::run(&n, ctl).map_err(|e| match e {
                NetError::Interrupted(_) => RepError::Interrupted,
                e @ (NetError::Invalid(_) | NetError::Nofile(_)) => {
                    RepError::Standing(e.to_string())
                }
                e => RepError::Failed(e.to_string()),
            })
        }
    }?;
    if res.status == ResultStatus::Interrupted {
        return Err(RepError::Interrupted);
    }
    Ok(res)
}

/// The disk spec a local disk job runs with: the run's label and iSCSI
/// login, and the suite's targets in place of the job's own.
fn disk_spec(
    d: &iotoll_disk::DiskSpec,
    opts: &Options,
    targets: &[PathBuf],
) -> iotoll_disk::DiskSpec {
    let mut d = d.clone();
    d.config = opts.config.clone();
    d.iscsi = opts.iscsi.clone();
    if !targets.is_empty() {
        d.targets = targets.to_vec();
        d.create = false;
        d.allow_destructive = opts.allow_destructive || opts.targets.is_empty();
    }
    d
}

/// Checks what the tests run here will use, before the first one runs,
/// as `disk run` does for its targets and the fleet for its hosts:
/// `--target` as each disk test would use it (present, large enough for
/// its region, aligned, writable only with --allow-destructive; an iSCSI
/// LUN logged in to and out of, nothing written), and `--peer` (it
/// answers and authenticates as an endpoint). In a lab this happens in
/// the client host, where the tests run.
pub fn check(suite: &Suite, opts: &Options, interrupted: &AtomicBool) -> Result<(), RunError> {
    let here = || suite.jobs.iter().filter(|j| j.placement.is_local());
    let client = opts.lab.as_ref().map(|l| l.host(&l.client)).transpose()?;
    let _inside = client
        .map(iotoll_lab::enter)
        .transpose()
        .map_err(|e| RunError::Lab(e.to_string()))?;
    if !opts.targets.is_empty() {
        // Tests that use the targets alike are checked once (an iSCSI
        // study logs in once, not once per test).
        let mut seen: Vec<String> = Vec::new();
        for job in here() {
            let JobSpec::Disk(d) = &job.spec else {
                continue;
            };
            let d = disk_spec(d, opts, &opts.targets);
            // What `prepare` checks: the region, each line's transfer and
            // alignment, writing, O_DIRECT.
            let lines: Vec<(u64, Option<u64>)> = d.lines.iter().map(|l| (l.bs, l.align)).collect();
            let key = format!(
                "{} {:?} {lines:?} {} {}",
                d.offset,
                d.size,
                d.writes(),
                d.buffered
            );
            if seen.contains(&key) {
                continue;
            }
            seen.push(key);
            iotoll_disk::target::prepare(&d, interrupted, &mut |_, _| {}).map_err(|e| {
                RunError::Target {
                    test: job.name.clone(),
                    source: size_hint(e, d.size),
                }
            })?;
        }
    }
    if let Some(p) = opts
        .peer
        .as_deref()
        .filter(|_| here().any(|j| matches!(j.spec, JobSpec::Net(_))))
    {
        let addr = iotoll_net::resolve(p, iotoll_net::DEFAULT_PORT).map_err(RunError::Peer)?;
        iotoll_net::client::handshake(&addr, opts.auth_key.as_ref()).map_err(RunError::Peer)?;
    }
    Ok(())
}

/// A region larger than the target names the disk flags (`--size`), which
/// a suite's user did not give: say that the size is the suite's and how
/// to run on a smaller target.
fn size_hint(e: DiskError, size: Option<u64>) -> DiskError {
    match (e, size) {
        (DiskError::Target { path, msg }, Some(size)) if msg.contains("larger than the target") => {
            DiskError::Target {
                path,
                msg: format!(
                    "{msg}: the test's size is {} (the suite's `size`, or --size); `suite run --size SIZE` sets a smaller one",
                    iotoll_model::units::format_size(size)
                ),
            }
        }
        (e, _) => e,
    }
}

/// Creates and fills the suite's temporary test file, sized for the
/// largest region of its disk tests (removed when dropped, also when
/// filling it fails or is interrupted).
fn temp_target(
    suite: &Suite,
    interrupted: &AtomicBool,
    progress: &mut dyn SuiteProgress,
) -> Result<TempTarget, DiskError> {
    let size = (suite.jobs.iter())
        .filter_map(|j| match &j.spec {
            JobSpec::Disk(d) => {
                Some(d.offset + d.size.unwrap_or(iotoll_disk::spec::DEFAULT_TEST_FILE_SIZE))
            }
            _ => None,
        })
        .max()
        .unwrap_or(iotoll_disk::spec::DEFAULT_TEST_FILE_SIZE);
    for p in reclaim_stale_test_files(&std::env::temp_dir()) {
        progress.line(&format!(
            "removed {}, the test file of a run that was killed",
            p.display()
        ));
    }
    let path =
        std::env::temp_dir().join(format!("{TEMP_PREFIX}{}{TEMP_SUFFIX}", std::process::id()));
    let prep = iotoll_disk::DiskSpec {
        targets: vec![path.clone()],
        create: true,
        keep: true,
        size: Some(size),
        ..Default::default()
    };
    progress.line(&format!(
        "preparing a {} MiB test file in {}",
        size >> 20,
        std::env::temp_dir().display()
    ));
    let t = iotoll_disk::target::prepare(&prep, interrupted, &mut |d, t| progress.preparing(d, t));
    let temp = TempTarget(path);
    t.map(|_| temp)
}

/// Runs every job of `suite` in order.
pub fn run(
    suite: &Suite,
    opts: &Options,
    interrupted: &AtomicBool,
    progress: &mut dyn SuiteProgress,
    sink: &mut dyn Sink,
) -> Result<Outcome, RunError> {
    let mut notes = Vec::new();
    // Tests placed on hosts run on their agents, not here.
    let here = || suite.jobs.iter().filter(|j| j.placement.is_local());
    let needs_disk = here().any(|j| matches!(j.spec, JobSpec::Disk(_)));
    let needs_net = here().any(|j| matches!(j.spec, JobSpec::Net(_)));

    // One temporary test file for all disk tests, sized for the largest.
    let mut _temp = None;
    let targets = match (opts.targets.is_empty(), needs_disk) {
        (false, _) => opts.targets.clone(),
        (true, true) => match temp_target(suite, interrupted, progress) {
            Ok(t) => {
                let path = t.0.clone();
                _temp = Some(t);
                vec![path]
            }
            Err(DiskError::Interrupted(_)) => {
                return Ok(Outcome {
                    status: RunStatus::Aborted,
                    tests: Vec::new(),
                    notes: vec!["interrupted while preparing the test file".into()],
                })
            }
            Err(e) => return Err(e.into()),
        },
        (true, false) => Vec::new(),
    };
    let local = match (&opts.lab, needs_net && opts.peer.is_none()) {
        (_, false) => None,
        (Some(l), true) => Some(LocalEndpoint::start_in(
            l.host(&l.server)?,
            opts.auth_key.clone(),
        )?),
        (None, true) => Some(LocalEndpoint::start(opts.auth_key.clone())?),
    };
    let client_host = opts.lab.as_ref().map(|l| l.host(&l.client)).transpose()?;
    // The console reaches a lab's agents from inside the lab (its client
    // host); its sessions keep that namespace.
    let mut fleet = {
        let _inside = client_host
            .map(iotoll_lab::enter)
            .transpose()
            .map_err(|e| RunError::Lab(e.to_string()))?;
        crate::fleet::start(opts, &suite.jobs, &mut |m| progress.line(m))?
    };
    let endpoint = opts
        .peer
        .clone()
        .or_else(|| local.as_ref().map(|l| l.addr.clone()));

    let total = suite.jobs.len();
    let t0 = Instant::now();
    let mut eta = crate::durations::Eta::new(suite, opts.reps);
    let mut tests = Vec::with_capacity(total);
    let mut status = RunStatus::Complete;
    let mut standing = Standing::default();
    'jobs: for (i, job) in suite.jobs.iter().enumerate() {
        let reps = opts.reps.unwrap_or(job.reps).max(1);
        let id = sink.begin_test(i + 1, job)?;
        let mut out = TestOutcome {
            name: job.name.clone(),
            group: job.group.clone(),
            kind: job.kind,
            rule: job.rule.clone(),
            metric: job.metric.clone(),
            reps: Vec::new(),
            selected: Selected {
                index: None,
                metrics: None,
                spread_pct: None,
                cpu_spread_pct: None,
                disagree: Vec::new(),
            },
            repeatable: None,
            failures: Vec::new(),
            interfered: Vec::new(),
            not_run: 0,
        };
        let threshold = opts.interference_pct.unwrap_or(job.interference_pct);
        let mut rep = 0u32;
        let mut limit = reps;
        let mut interference_reruns = 0u32;
        while rep < limit {
            rep += 1;
            let left = eta.at(i, rep, limit, t0.elapsed());
            progress.test_start(i + 1, total, &job.name, rep, limit, left);
            // In a lab, the test runs inside the client host: this thread
            // enters its namespace for the repetition (threads the test
            // starts inherit it) and comes back after.
            let inside = client_host
                .map(iotoll_lab::enter)
                .transpose()
                .map_err(|e| RunError::Lab(e.to_string()))?;
            let r = run_one(
                job,
                opts,
                &targets,
                endpoint.as_deref(),
                fleet.as_mut(),
                RunControl {
                    interrupted,
                    progress: &mut *progress,
                    schedule: None,
                },
            );
            drop(inside);
            eta.rep_done(i);
            match r {
                Ok(mut doc) => {
                    if let (Some(skew), Some(f)) = (&doc.skew_us, &fleet) {
                        progress.line(&format!(
                            "{} repetition {rep}: window on {} hosts opened at {} (skew {:.0} us at start, {:.0} us at stop)",
                            job.name,
                            doc.hosts.len(),
                            f.console
                                .last_record_on()
                                .map(crate::fleet::rfc3339_us)
                                .unwrap_or_default(),
                            skew.start,
                            skew.stop
                        ));
                    }
                    if doc.apply_interference_threshold(threshold) {
                        for n in doc
                            .notes
                            .iter()
                            .filter(|n| n.starts_with(INTERFERENCE_NOTE))
                        {
                            progress.line(&format!("{} repetition {rep}: {n}", job.name));
                            notes.push(format!("{} repetition {rep}: {n}", job.name));
                        }
                        if opts.on_interference == OnInterference::Rerun
                            && interference_reruns < MAX_INTERFERENCE_RERUNS
                        {
                            interference_reruns += 1;
                            limit += 1;
                            progress.line(&format!(
                                "{}: running one more repetition ({interference_reruns} of at most {MAX_INTERFERENCE_RERUNS} for interference)",
                                job.name
                            ));
                        }
                    }
                    sink.rep(id, rep, &doc)?;
                    out.reps.push((rep, doc));
                }
                Err(RepError::Interrupted) => {
                    status = RunStatus::Aborted;
                    notes.push(format!("interrupted during {} repetition {rep}", job.name));
                    finish(&mut out, job, sink, id)?;
                    tests.push(out);
                    break 'jobs;
                }
                Err(RepError::Host(e)) => {
                    progress.line(&format!("{} repetition {rep} failed: {e}", job.name));
                    notes.push(format!("{} repetition {rep} failed: {e}", job.name));
                    out.failures.push(format!("repetition {rep}: {e}"));
                    status = RunStatus::Failed;
                    finish(&mut out, job, sink, id)?;
                    tests.push(out);
                    if opts.on_host_failure == OnHostFailure::Stop {
                        notes.push("stopped: a host failed (--on-host-failure stop)".into());
                        break 'jobs;
                    }
                    // The host is gone for this test: the next test tries again.
                    continue 'jobs;
                }
                Err(RepError::Standing(e)) => {
                    let line = standing.note(&job.name, rep, limit, &e);
                    progress.line(&line);
                    notes.push(line);
                    out.failures.push(format!("repetition {rep}: {e}"));
                    out.not_run = limit - rep;
                    status = RunStatus::Failed;
                    break;
                }
                Err(RepError::Failed(e)) => {
                    progress.line(&format!("{} repetition {rep} failed: {e}", job.name));
                    // The run's notes say why it is failed; the repetition's
                    // partial figures are never stored as a result.
                    notes.push(format!("{} repetition {rep} failed: {e}", job.name));
                    out.failures.push(format!("repetition {rep}: {e}"));
                    status = RunStatus::Failed;
                }
            }
            if rep == limit {
                // Not repeatable yet: up to `rerun` extra repetitions.
                finish(&mut out, job, sink, None)?;
                if out.repeatable == Some(false) && limit < reps + job.rerun + interference_reruns {
                    limit += 1;
                }
            }
        }
        finish(&mut out, job, sink, id)?;
        if out.repeatable == Some(false) {
            notes.push(format!(
                "{}: not repeatable: {}",
                job.name,
                out.selected.disagree.join("; ")
            ));
        }
        tests.push(out);
    }
    drop(local);
    Ok(Outcome {
        status,
        tests,
        notes,
    })
}

/// The reasons that stopped tests, each said in full once: a later test
/// stopped by the same one names the first.
#[derive(Default)]
struct Standing(Vec<(String, String)>);

impl Standing {
    /// The run's note (and progress line) for `test` stopped at
    /// repetition `rep` of `of` by `why`.
    fn note(&mut self, test: &str, rep: u32, of: u32, why: &str) -> String {
        let left = match of - rep {
            0 => String::new(),
            n => format!(
                "; {} not run (the same cause would fail {})",
                iotoll_model::text::count(n as usize, "more repetition"),
                if n == 1 { "it" } else { "them" }
            ),
        };
        if let Some((_, first)) = self.0.iter().find(|(w, _)| w == why) {
            return format!("{test} repetition {rep} failed as {first} did{left}");
        }
        self.0.push((why.to_string(), test.to_string()));
        format!("{test} repetition {rep} failed: {why}{left}")
    }
}

/// The selection (clean repetitions preferred over `interfered` ones), and
/// whether all the repetitions agree within `limit_pct` on `metric` and on
/// whole-host CPU (None with fewer than two); `Selected::disagree` says
/// what did not.
pub fn judge(
    reps: &[&iotoll_model::Metrics],
    interfered: &[bool],
    rule: &Rule,
    metric: &str,
    limit_pct: f64,
) -> (Selected, Option<bool>) {
    let mut sel = select_clean(reps, interfered, rule, metric);
    let (ok, disagree) = agreement(reps, metric, limit_pct);
    sel.disagree = disagree;
    (sel, ok)
}

/// Applies the selection rule and the repeatability check; with a test id
/// the result is recorded.
fn finish(
    out: &mut TestOutcome,
    job: &Job,
    sink: &mut dyn Sink,
    id: impl Into<Option<i64>>,
) -> Result<(), SinkError> {
    let docs: Vec<&iotoll_model::Metrics> = out.reps.iter().map(|(_, d)| &d.metrics).collect();
    let interfered: Vec<bool> = out.reps.iter().map(|(_, d)| d.interfered()).collect();
    out.interfered = out
        .reps
        .iter()
        .filter(|(_, d)| d.interfered())
        .map(|(r, _)| *r)
        .collect();
    (out.selected, out.repeatable) = judge(
        &docs,
        &interfered,
        &job.rule,
        &job.metric,
        job.repeatability_pct,
    );
    if let Some(id) = id.into() {
        sink.end_test(id, job, out)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(v: f64) -> iotoll_model::Metrics {
        [("iops".to_string(), v)].into_iter().collect()
    }

    #[test]
    fn repeatability_flagging() {
        let rule = Rule::Median("iops".into());
        let agree = [m(100.0), m(103.0), m(101.0)];
        let r: Vec<_> = agree.iter().collect();
        let (sel, ok) = judge(&r, &[], &rule, "iops", 5.0);
        assert_eq!(ok, Some(true));
        assert!((sel.spread_pct.unwrap() - 3.0 / 101.0 * 100.0).abs() < 1e-9);
        let disagree = [m(100.0), m(120.0), m(101.0)];
        let r: Vec<_> = disagree.iter().collect();
        assert_eq!(judge(&r, &[], &rule, "iops", 5.0).1, Some(false));
        assert_eq!(judge(&r, &[], &rule, "iops", 25.0).1, Some(true));
        let one = [m(100.0)];
        let r: Vec<_> = one.iter().collect();
        assert_eq!(
            judge(&r, &[], &rule, "iops", 5.0).1,
            None,
            "one repetition has no spread"
        );
        // The reported case: the headline agrees within 0.2 %, host CPU
        // was 93.7 % in one repetition and 5.7 % in the other.
        let with_cpu = |iops: f64, cpu: f64| {
            let mut x = m(iops);
            x.insert("cpu_pct".into(), cpu);
            x
        };
        let tenant = [with_cpu(1000.0, 93.7), with_cpu(1002.0, 5.7)];
        let r: Vec<_> = tenant.iter().collect();
        let (sel, ok) = judge(&r, &[true, false], &rule, "iops", 5.0);
        assert_eq!(ok, Some(false), "CPU disagrees");
        assert!(sel.spread_pct.unwrap() < 0.25);
        assert!(sel.disagree.len() == 1 && sel.disagree[0].starts_with("cpu_pct"));
        assert_eq!(sel.index, Some(1), "the clean repetition is kept");
        let none: [iotoll_model::Metrics; 2] = [Default::default(), Default::default()];
        let r: Vec<_> = none.iter().collect();
        assert_eq!(
            judge(&r, &[], &rule, "iops", 5.0).1,
            None,
            "no metric, no verdict"
        );
    }
}

#[cfg(test)]
mod reclaim_tests {
    use super::*;

    /// The test files of runs that were killed go, a lab agent's too; a
    /// live process's and other files stay.
    #[test]
    fn stale_test_files_of_dead_runs_are_reclaimed() {
        let d = tempfile::tempdir().unwrap();
        // No process has pid 2^22 + 1 (above the kernel's pid_max limit).
        let dead = 4_194_305;
        let me = std::process::id();
        let names = [
            format!("{TEMP_PREFIX}{dead}{TEMP_SUFFIX}"),
            format!("{TEMP_PREFIX}{dead}-c1{TEMP_SUFFIX}"),
            format!("{TEMP_PREFIX}{me}{TEMP_SUFFIX}"),
            format!("{TEMP_PREFIX}{me}-c1{TEMP_SUFFIX}"),
            format!("{TEMP_PREFIX}notapid{TEMP_SUFFIX}"),
        ];
        for n in &names {
            std::fs::write(d.path().join(n), b"x").unwrap();
        }
        let mut gone: Vec<String> = reclaim_stale_test_files(d.path())
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        gone.sort();
        let mut want = vec![names[0].clone(), names[1].clone()];
        want.sort();
        assert_eq!(gone, want);
        for n in &names[2..] {
            assert!(d.path().join(n).exists(), "{n}");
        }
    }
}
