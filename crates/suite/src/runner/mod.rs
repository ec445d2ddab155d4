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
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

mod bench;
#[cfg(test)]
mod tests;

pub use bench::reclaim_stale_test_files;
use bench::Bench;
pub(crate) use bench::{reclaim_and_say, TempTarget, TEMP_PREFIX, TEMP_SUFFIX};

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
    /// Under `confidence`: what the repetitions came to (None with fewer
    /// than 3 of them, or without `confidence`).
    pub confidence: Option<iotoll_model::ci::Verdict>,
}

impl TestOutcome {
    /// A job's outcome before any repetition.
    pub fn new(job: &Job) -> TestOutcome {
        TestOutcome {
            name: job.name.clone(),
            group: job.group.clone(),
            kind: job.kind,
            rule: job.rule.clone(),
            metric: job.metric.clone(),
            reps: Vec::new(),
            selected: Selected::default(),
            repeatable: None,
            failures: Vec::new(),
            interfered: Vec::new(),
            not_run: 0,
            confidence: None,
        }
    }

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

/// A repetition starting: test `index` (from 1) of `total`, repetition
/// `rep` of `reps`, and the suite's time left.
pub struct TestStart<'a> {
    pub index: usize,
    pub total: usize,
    pub name: &'a str,
    pub rep: u32,
    pub reps: u32,
    pub eta: Duration,
}

/// Progress of the suite as a whole (one line per test and repetition).
pub trait SuiteProgress: Progress {
    /// A repetition starts (nothing shown by default).
    fn test_start(&mut self, _: &TestStart) {}
    fn line(&mut self, msg: &str);
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
    d: &iotoll_disk::DiskRequest,
    opts: &Options,
    targets: &[PathBuf],
) -> iotoll_disk::DiskRequest {
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
    let _inside = bench::enter(client)?;
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

/// A suite run in progress: what it started, where it stands, what it
/// has recorded so far.
struct Pass<'a, 'p> {
    suite: &'a Suite,
    opts: &'a Options,
    interrupted: &'a AtomicBool,
    progress: &'p mut dyn SuiteProgress,
    sink: &'p mut dyn Sink,
    bench: Bench<'a>,
    eta: crate::durations::Eta,
    t0: Instant,
    notes: Vec<String>,
    status: RunStatus,
    tests: Vec<TestOutcome>,
    standing: Standing,
}

/// One test's repetitions so far: how many ran, how many it may have.
struct Reps {
    out: TestOutcome,
    /// The sink's id of the test.
    id: i64,
    /// The repetitions planned (`--reps` or the test's).
    planned: u32,
    rep: u32,
    limit: u32,
    interference_reruns: u32,
}

/// After a test: go on with the next, or stop the run.
#[derive(PartialEq)]
enum Next {
    Go,
    Stop,
}

/// Runs every job of `suite` in order.
pub fn run(
    suite: &Suite,
    opts: &Options,
    interrupted: &AtomicBool,
    progress: &mut dyn SuiteProgress,
    sink: &mut dyn Sink,
) -> Result<Outcome, RunError> {
    let Some(bench) = Bench::start(suite, opts, interrupted, progress)? else {
        return Ok(Outcome {
            status: RunStatus::Aborted,
            tests: Vec::new(),
            notes: vec!["interrupted while preparing the test file".into()],
        });
    };
    let mut pass = Pass {
        suite,
        opts,
        interrupted,
        progress,
        sink,
        bench,
        eta: crate::durations::Eta::new(suite, opts.reps),
        t0: Instant::now(),
        notes: Vec::new(),
        status: RunStatus::Complete,
        tests: Vec::with_capacity(suite.jobs.len()),
        standing: Standing::default(),
    };
    for (i, job) in suite.jobs.iter().enumerate() {
        if pass.run_test(i, job)? == Next::Stop {
            break;
        }
    }
    Ok(pass.outcome())
}

impl Pass<'_, '_> {
    /// Every repetition of one job (and its reruns while it is not
    /// repeatable), then its selection, recorded.
    fn run_test(&mut self, i: usize, job: &Job) -> Result<Next, RunError> {
        let planned = self.opts.reps.unwrap_or(job.reps).max(1);
        let mut t = Reps {
            out: TestOutcome::new(job),
            id: self.sink.begin_test(i + 1, job)?,
            planned,
            rep: 0,
            limit: planned,
            interference_reruns: 0,
        };
        while t.rep < t.limit {
            t.rep += 1;
            let r = self.run_rep(i, job, t.rep, t.limit)?;
            match r {
                Ok(doc) => {
                    self.keep(job, &mut t, doc)?;
                    if converged(&t.out, job) {
                        // Pinned down: the repetitions left are not needed.
                        t.limit = t.rep;
                    }
                }
                Err(RepError::Interrupted) => {
                    self.status = RunStatus::Aborted;
                    let note = format!("interrupted during {} repetition {}", job.name, t.rep);
                    self.notes.push(note);
                    self.end_test(job, t.out, t.id)?;
                    return Ok(Next::Stop);
                }
                Err(RepError::Host(e)) => {
                    self.failed(job, &mut t, &e);
                    self.end_test(job, t.out, t.id)?;
                    if self.opts.on_host_failure == OnHostFailure::Stop {
                        let note = "stopped: a host failed (--on-host-failure stop)";
                        self.notes.push(note.into());
                        return Ok(Next::Stop);
                    }
                    // The host is gone for this test: the next test tries again.
                    return Ok(Next::Go);
                }
                Err(RepError::Standing(e)) => {
                    let line = self.standing.note(&job.name, t.rep, t.limit, &e);
                    self.say(line);
                    t.out.failures.push(format!("repetition {}: {e}", t.rep));
                    t.out.not_run = t.limit - t.rep;
                    self.status = RunStatus::Failed;
                    break;
                }
                // The run's notes say why it is failed; the repetition's
                // partial figures are never stored as a result.
                Err(RepError::Failed(e)) => self.failed(job, &mut t, &e),
            }
            if t.rep == t.limit {
                // Not repeatable yet: up to `rerun` extra repetitions.
                finish(&mut t.out, job, self.sink, None)?;
                let most = t.planned + job.rerun + t.interference_reruns;
                if t.out.repeatable == Some(false) && t.limit < most {
                    t.limit += 1;
                }
            }
        }
        self.end_test(job, t.out, t.id)?;
        if let Some(c) = &job.confidence {
            let n = self.tests.last().map_or(0, |o| o.reps.len());
            let line = match self.tests.last().and_then(|o| o.confidence) {
                Some(v) => v.note(&job.name, c),
                None => format!(
                    "{}: not converged: {} % interval needs 3 measured repetitions, {} measured",
                    job.name, c.level, n
                ),
            };
            self.say(line);
        }
        if let Some(last) = self.tests.last().filter(|o| o.repeatable == Some(false)) {
            let disagree = last.selected.disagree.join("; ");
            self.notes
                .push(format!("{}: not repeatable: {disagree}", job.name));
        }
        Ok(Next::Go)
    }

    /// Repetition `rep` of `limit` of job `i`, with its progress line.
    fn run_rep(
        &mut self,
        i: usize,
        job: &Job,
        rep: u32,
        limit: u32,
    ) -> Result<Result<ResultDoc, RepError>, RunError> {
        self.progress.test_start(&TestStart {
            index: i + 1,
            total: self.suite.jobs.len(),
            name: &job.name,
            rep,
            reps: limit,
            eta: self.eta.at(i, rep, limit, self.t0.elapsed()),
        });
        let ctl = RunControl {
            interrupted: self.interrupted,
            progress: &mut *self.progress,
            schedule: None,
        };
        let r = self.bench.run_rep(job, self.opts, ctl);
        self.eta.rep_done(i);
        r
    }

    /// A measured repetition: its window's skew across hosts said, its
    /// interference judged (and one more repetition run for it, with
    /// `--on-interference rerun`), stored and kept.
    fn keep(&mut self, job: &Job, t: &mut Reps, mut doc: ResultDoc) -> Result<(), RunError> {
        let rep = t.rep;
        if let (Some(skew), Some(f)) = (&doc.skew_us, &self.bench.fleet) {
            self.progress.line(&format!(
                "{} repetition {rep}: window on {} hosts opened at {} (skew {:.0} us at start, {:.0} us at stop)",
                job.name,
                doc.hosts.len(),
                (f.console.last_record_on())
                    .map(crate::fleet::rfc3339_us)
                    .unwrap_or_default(),
                skew.start,
                skew.stop
            ));
        }
        let threshold = self.opts.interference_pct.unwrap_or(job.interference_pct);
        if doc.apply_interference_threshold(threshold) {
            let interfered = doc
                .notes
                .iter()
                .filter(|n| n.starts_with(INTERFERENCE_NOTE));
            for n in interfered {
                self.say(format!("{} repetition {rep}: {n}", job.name));
            }
            if self.opts.on_interference == OnInterference::Rerun
                && t.interference_reruns < MAX_INTERFERENCE_RERUNS
            {
                t.interference_reruns += 1;
                t.limit += 1;
                self.progress.line(&format!(
                    "{}: running one more repetition ({} of at most {MAX_INTERFERENCE_RERUNS} for interference)",
                    job.name, t.interference_reruns
                ));
            }
        }
        self.sink.rep(t.id, rep, &doc)?;
        t.out.reps.push((rep, doc));
        Ok(())
    }

    /// A repetition that failed (or lost a host): said, noted, counted.
    fn failed(&mut self, job: &Job, t: &mut Reps, e: &str) {
        self.say(format!("{} repetition {} failed: {e}", job.name, t.rep));
        t.out.failures.push(format!("repetition {}: {e}", t.rep));
        self.status = RunStatus::Failed;
    }

    /// A line shown now and kept in the run's notes.
    fn say(&mut self, line: String) {
        self.progress.line(&line);
        self.notes.push(line);
    }

    /// The test's selection, recorded, and the test kept.
    fn end_test(&mut self, job: &Job, mut out: TestOutcome, id: i64) -> Result<(), SinkError> {
        finish(&mut out, job, self.sink, id)?;
        self.tests.push(out);
        Ok(())
    }

    /// What the run came to. The endpoint, the agents and the test file
    /// go with the pass.
    fn outcome(self) -> Outcome {
        Outcome {
            status: self.status,
            tests: self.tests,
            notes: self.notes,
        }
    }
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

/// The values of the test's selection metric in its measured repetitions.
fn metric_values<'a>(out: &'a TestOutcome, job: &'a Job) -> impl Iterator<Item = f64> + 'a {
    (out.reps.iter()).filter_map(|(_, d)| d.metrics.get(&job.metric).copied())
}

/// Whether a test under `confidence` has its interval narrow enough.
fn converged(out: &TestOutcome, job: &Job) -> bool {
    (job.confidence.as_ref())
        .and_then(|c| c.judge(metric_values(out, job)))
        .is_some_and(|v| v.converged)
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
    if let Some(c) = &job.confidence {
        out.confidence = c.judge(metric_values(out, job));
        if out.confidence.is_some_and(|v| !v.converged) {
            // An unconverged test is flagged as a not repeatable one is.
            out.repeatable = Some(false);
            let half = (out.confidence.and_then(|v| v.half_pct))
                .map_or("undefined".into(), |h| format!("±{h:.2} %"));
            out.selected.disagree.push(format!(
                "{} {} % interval {half} of the mean, wanted ±{} % (not converged)",
                job.metric,
                c.level,
                c.width_pct / 2.0
            ));
        }
    }
    if let Some(id) = id.into() {
        sink.end_test(id, job, out)?;
    }
    Ok(())
}
