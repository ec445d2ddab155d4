//! A run from the first check to its last record, as `suite run` goes
//! through it, step by step:
//!
//! 1. [`load`] the suite and resolve its [`placed_hosts`] (nothing
//!    created yet);
//! 2. [`Session::open`] the results database (refused before any
//!    workload if it cannot take the run);
//! 3. [`Session::bring_up_lab`] (`--lab`);
//! 4. [`Session::preflight`]: the host's warnings and the run's notes;
//! 5. [`Session::check`] the targets and the peer as the tests will use
//!    them;
//! 6. [`Session::begin`] the run in the database;
//! 7. [`Session::run_tests`] (`runner::run`: test file, endpoint, agents,
//!    every test's repetitions, each stored as it ends), which marks the
//!    run failed when the runner stops;
//! 8. [`Session::finish`] it.
//!
//! A single measurement (`disk run`, `net stream|rr|udp|crr|cc`) is a
//! session of one test: [`Session::open`], [`Session::measure`], and once
//! the binary has shown it, [`Session::record_measured`].

mod lab;
mod load;
mod plan;
mod single;

pub use lab::{builtins_with, host_names, SuiteLab};
pub use load::{load, placed_hosts};
pub use plan::{check_reps, plan, Plan, PlanRequest};
pub use single::{MeasureError, Measured};

use crate::file::Job;
use crate::file::Suite;
use crate::hosts::{HostAt, HostEntry};
use crate::runner::{self, LabRun, Options, Outcome, RunError, Sink, SinkError, TestOutcome};
use crate::SuiteProgress;
use iotoll_lab::LabError;
use iotoll_model::{Kind, ResultDoc, RunStatus};
use iotoll_probe::sysinfo::{Host, PeerPlace};
use iotoll_store::{Selection, Store, StoreError};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// Why a session could not go on.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Lab(#[from] LabError),
    /// The user's to fix on the command line or in a file.
    #[error("{0}")]
    Usage(String),
    #[error("reading {what}")]
    Read {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// The run (or its record) failed; the message says what became of it.
    #[error("{0}")]
    Failed(String),
    /// Ctrl-C before anything ran.
    #[error("interrupted")]
    Interrupted,
}

impl SessionError {
    /// The user's to fix on the command line (exit 2).
    pub fn is_usage(&self) -> bool {
        match self {
            SessionError::Usage(_) => true,
            SessionError::Lab(e) => e.is_usage(),
            _ => false,
        }
    }
}

/// One run: its database, its lab, its notes and disclosure, its id once
/// begun. Dropping it takes down a lab it brought up.
pub struct Session {
    lab: Option<SuiteLab>,
    /// None: a single measurement with `--no-db`.
    store: Option<Store>,
    notes: Vec<String>,
    disclosure: serde_json::Value,
    run: Option<i64>,
}

/// What the preflight is told of the run besides its suite.
pub struct Preflight<'a> {
    pub targets: &'a [PathBuf],
    /// `--peer`, resolved.
    pub peer: Option<SocketAddr>,
    /// The run's notes so far (overridden durations and sizes, an .icf's
    /// target mapping), shown and recorded.
    pub notes: Vec<String>,
    pub hosts_file: Option<&'a Path>,
    pub hosts: &'a [HostEntry],
}

/// `name (where)` for the run's progress: `c1 (10.0.0.1)`, `c2 (lab c2)`.
pub fn host_label(h: &HostEntry) -> String {
    match &h.at {
        HostAt::Address(a) => format!("{} ({a})", h.name),
        HostAt::Lab(l) => format!("{} (lab {l})", h.name),
    }
}

/// Network tests that use this process's endpoint (tests placed on hosts
/// have none here).
fn local_net(suite: &Suite) -> bool {
    (suite.jobs.iter()).any(|j| j.kind != Kind::Disk && j.placement.is_local())
}

impl Session {
    /// Opens the results database at `db` (None: nothing is stored) and
    /// checks that it can take a run: writable, unlocked, with room;
    /// before the workload, not after.
    pub fn open(db: Option<&Path>) -> Result<Session, SessionError> {
        let store = db.map(Store::open).transpose()?;
        if let Some(s) = &store {
            s.check_ready()?;
        }
        Ok(Session {
            lab: None,
            store,
            notes: Vec::new(),
            disclosure: serde_json::Value::Null,
            run: None,
        })
    }

    /// The database (a suite's session always has one).
    fn db(&self) -> Result<&Store, SessionError> {
        (self.store.as_ref()).ok_or_else(|| SessionError::Failed("no results database".into()))
    }

    /// The run's id, once begun.
    fn run_id(&self) -> Result<i64, SessionError> {
        (self.run).ok_or_else(|| SessionError::Failed("the run has not begun".into()))
    }

    /// The database, if any: for the report of the run.
    pub fn store(&self) -> Option<&Store> {
        self.store.as_ref()
    }

    /// The notes said under a finished run's results: the durations and
    /// sizes its flags overrode, then the runner's.
    pub fn closing_notes(&self, outcome: &Outcome) -> Vec<String> {
        let overridden = self.notes.iter().filter(|n| {
            n.starts_with(crate::durations::OVERRIDE_NOTE) || n.starts_with(crate::file::SIZE_NOTE)
        });
        overridden.chain(&outcome.notes).cloned().collect()
    }

    /// The lab the run is in, as the runner's options take it.
    pub fn lab_run(&self) -> Option<LabRun> {
        self.lab.as_ref().map(|l| l.run.clone())
    }

    /// Sets up the lab before anything is recorded (see
    /// [`SuiteLab::bring_up`]); one brought up for this run comes down
    /// when the session is dropped, however the run ends.
    pub fn bring_up_lab(
        &mut self,
        lab: &str,
        sets: &[String],
        server: Option<&str>,
        client: Option<&str>,
        say: fn(&str),
    ) -> Result<(), SessionError> {
        self.lab = Some(SuiteLab::bring_up(lab, sets, server, client, say)?);
        Ok(())
    }

    /// Where the network tests' peer is, for the host's warnings: in a
    /// lab every network peer (the in-process endpoint's lab host, or the
    /// agents of placed tests) is a namespace of this machine.
    fn peer_place(&self, suite: &Suite, peer: Option<SocketAddr>) -> PeerPlace {
        let peer_local = peer.map_or(local_net(suite), |s| s.ip().is_loopback());
        let has_net = suite.jobs.iter().any(|j| j.kind != Kind::Disk);
        if self.lab.is_some() && has_net {
            PeerPlace::Lab
        } else if peer_local {
            PeerPlace::Loopback
        } else {
            PeerPlace::Remote
        }
    }

    /// The host's warnings (governor, busy processes, ...) and the run's
    /// notes, shown and kept for the record with `host`'s disclosure and
    /// the lab's; where the endpoint, the tests and the hosts are.
    pub fn preflight(
        &mut self,
        suite: &Suite,
        p: Preflight,
        host: &Host,
        progress: &mut dyn SuiteProgress,
    ) {
        let place = self.peer_place(suite, p.peer);
        let me = std::process::id() as i32;
        let busy = iotoll_probe::sysinfo::busy_processes(Duration::from_millis(500), 5.0, me);
        let target = p
            .targets
            .first()
            .cloned()
            .unwrap_or_else(std::env::temp_dir);
        let has_disk = suite.jobs.iter().any(|j| j.kind == Kind::Disk);
        let disk = has_disk.then_some(target.as_path());
        let warnings = iotoll_probe::sysinfo::warnings(host, disk, place, &busy);
        for w in &warnings {
            progress.line(&format!("warning: {w}"));
        }
        // The overrides first (they qualify every number), then warnings.
        for n in &p.notes {
            progress.line(n);
        }
        self.notes = p.notes;
        self.notes.extend(warnings);
        self.disclosure = iotoll_model::spec::to_json(host);
        if let Some(l) = &self.lab {
            self.disclosure["lab"] = l.disclosure();
            let endpoint = match local_net(suite) && p.peer.is_none() {
                true => format!("endpoint in {}, ", l.run.server),
                false => String::new(),
            };
            let (lab, client) = (&l.run.lab.name, &l.run.client);
            progress.line(&format!("lab {lab}: {endpoint}tests in {client}"));
        }
        if !p.hosts.is_empty() {
            let hosts: Vec<String> = p.hosts.iter().map(host_label).collect();
            progress.line(&format!("hosts: {}", hosts.join(", ")));
        } else if let Some(f) = p.hosts_file {
            progress.line(&format!(
                "warning: --hosts {}: suite '{}' has no test placed on hosts; its hosts are not used",
                f.display(),
                suite.name
            ));
        }
    }

    /// Checks the targets and `--peer` as the tests will use them, before
    /// anything is recorded (`runner::check`): a missing device is one
    /// error, not every repetition's.
    pub fn check(
        &self,
        suite: &Suite,
        opts: &Options,
        flag: &AtomicBool,
        progress: &mut dyn SuiteProgress,
    ) -> Result<(), SessionError> {
        let checked: Vec<String> = (opts.targets.iter())
            .map(|t| t.display().to_string())
            .chain(opts.peer.iter().map(|p| format!("--peer {p}")))
            .collect();
        if !checked.is_empty() {
            progress.line(&format!("checking {}", checked.join(", ")));
        }
        match runner::check(suite, opts, flag) {
            Ok(()) => Ok(()),
            Err(RunError::Target {
                source: iotoll_disk::DiskError::Interrupted(_),
                ..
            }) => Err(SessionError::Interrupted),
            Err(e) if e.is_usage() => Err(SessionError::Usage(format!("suite not started: {e}"))),
            Err(e) => Err(SessionError::Failed(format!("suite not started: {e}"))),
        }
    }

    /// Records the run's start (suite, label, text, disclosure, notes):
    /// its id.
    pub fn begin(
        &mut self,
        suite: &Suite,
        config: Option<&str>,
        estimate: &str,
        progress: &mut dyn SuiteProgress,
    ) -> Result<i64, SessionError> {
        let db = self.db()?;
        let id = db.begin_run(
            &suite.name,
            config,
            &suite.text,
            &self.disclosure,
            &self.notes,
        )?;
        progress.line(&format!(
            "run {id}: suite {} ({}, ~{estimate}) into {}",
            suite.name,
            iotoll_model::text::count(suite.jobs.len(), "test"),
            db.path().display()
        ));
        self.run = Some(id);
        Ok(id)
    }

    /// The system under test whose CPU is its own part, not interference:
    /// the suite's and `extra` processes, and in a lab what runs in its
    /// other hosts (a target, a server).
    pub fn watch_system_under_test(
        &self,
        suite: &Suite,
        extra: &[iotoll_probe::procs::SutProcess],
    ) {
        let mut sut = [&suite.sut[..], extra].concat();
        if let Some(l) = &self.lab {
            let others = (l.run.lab.hosts.iter()).filter(|h| h.name != l.run.client);
            sut.extend(others.filter_map(|h| {
                iotoll_probe::procs::SutProcess::netns(&iotoll_lab::netns_path(h).ok()?)
            }));
        }
        iotoll_probe::procs::set_sut_processes(sut);
    }

    /// Runs every test, each repetition stored the moment it ends. When
    /// the runner stops, the run is marked failed with why; a database
    /// that cannot record that either (full, say) does not hide it.
    pub fn run_tests(
        &mut self,
        suite: &Suite,
        opts: &Options,
        flag: &AtomicBool,
        progress: &mut dyn SuiteProgress,
    ) -> Result<Outcome, SessionError> {
        let run = self.run_id()?;
        let store = (self.store.as_mut())
            .ok_or_else(|| SessionError::Failed("no results database".into()))?;
        let mut sink = StoreSink { store, run };
        let res = runner::run(suite, opts, flag, progress, &mut sink);
        res.map_err(|e| self.rescue(run, e))
    }

    /// The run the runner gave up on, marked failed with its notes and why.
    fn rescue(&self, run: i64, e: RunError) -> SessionError {
        let mut all = self.notes.clone();
        all.push(e.to_string());
        let marked = self
            .db()
            .and_then(|db| Ok(db.finish_run(run, RunStatus::Failed, &all)?));
        SessionError::Failed(match marked {
            Ok(()) => format!("run {run} failed: {e}"),
            Err(e2) => format!(
                "run {run} failed: {e}; it could not be marked failed in the database either: {e2}"
            ),
        })
    }

    /// Records the run's end: its status and every note.
    pub fn finish(&mut self, outcome: &Outcome) -> Result<(), SessionError> {
        let run = self.run_id()?;
        self.notes.extend(outcome.notes.iter().cloned());
        let status = outcome.status;
        self.db()?
            .finish_run(run, status, &self.notes)
            .map_err(|e| {
                SessionError::Failed(format!(
                    "run {run}: its repetitions are stored, but it could not be marked {status}: {e}"
                ))
            })
    }
}

/// The runner's [`Sink`] on the results database: each test and each
/// repetition recorded the moment it exists.
struct StoreSink<'a> {
    pub store: &'a mut Store,
    pub run: i64,
}

impl Sink for StoreSink<'_> {
    fn begin_test(&mut self, seq: usize, job: &Job) -> Result<i64, SinkError> {
        let (kind, group, rule) = (job.kind, Some(job.group.as_str()), job.rule.label());
        let id = self.store.add_test(
            self.run,
            seq as i64,
            &job.name,
            kind,
            group,
            &job.params,
            &rule,
        )?;
        Ok(id)
    }

    fn rep(&mut self, test: i64, rep: u32, doc: &ResultDoc) -> Result<(), SinkError> {
        // A measured repetition the database cannot take is kept in a file
        // and named, never just lost.
        self.store.add_rep(test, rep as i64, doc).map_err(|e| {
            match iotoll_store::keep_unstored(self.store.path(), doc) {
                Ok(p) => format!("{e}; the repetition's result is kept in {}", p.display()),
                Err(k) => format!("{e}; the result could not be kept either: {k}"),
            }
            .into()
        })
    }

    fn end_test(&mut self, test: i64, job: &Job, o: &TestOutcome) -> Result<(), SinkError> {
        let selection = Selection {
            rule: job.rule.label(),
            selected_rep: o.selected_rep().map(i64::from),
            spread_pct: o.selected.spread_pct,
            repeatable: o.repeatable,
            summary: o.selected.metrics.clone(),
        };
        self.store.finish_test(test, &selection)?;
        Ok(())
    }
}
