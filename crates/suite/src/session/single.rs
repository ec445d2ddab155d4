//! A single measurement (`disk run`, `net stream|rr`) as a session of one
//! test: stored as a run of one test and one repetition, named by its
//! workload (`stream/dir=tx,conns=4,msg=64k`) as a suite names a swept
//! test, so `compare` pairs it only with the same workload. What a
//! measuring library's error says about it: the user's to fix, or a run
//! that failed after its workload started (with the partial result), or
//! neither.

use super::{Session, SessionError};
use iotoll_model::{ResultDoc, ResultStatus, RunStatus};
use iotoll_probe::procs::SutProcess;
use iotoll_probe::sysinfo::Host;
use iotoll_run::RunControl;
use iotoll_store::{Selection, Store, StoreError};

/// An error of `iotoll_disk::run` or `iotoll_net::run`, as a session of
/// one test reads it.
pub trait MeasureError: std::error::Error + Send + Sync + Sized + 'static {
    /// The user's to fix on the command line.
    fn is_usage(&self) -> bool;
    /// A run that went wrong after its workload started: the failure and
    /// the partial result, marked `failed`; otherwise the error back.
    fn into_failed(self) -> Result<(String, ResultDoc), Self>;
}

macro_rules! measure_error {
    ($($e:path),*) => {$(
        impl MeasureError for $e {
            fn is_usage(&self) -> bool {
                <$e>::is_usage(self)
            }
            fn into_failed(self) -> Result<(String, ResultDoc), Self> {
                match self {
                    Self::Failed { msg, mut doc } => {
                        doc.status = ResultStatus::Failed;
                        Ok((msg, *doc))
                    }
                    e => Err(e),
                }
            }
        }
    )*};
}

measure_error!(iotoll_net::NetError, iotoll_disk::DiskError);

/// What the system under test's figure is, and what it cannot include.
fn sut_note(sut: &[SutProcess], doc: &ResultDoc) -> Option<String> {
    if sut.is_empty() {
        return None;
    }
    let named: Vec<String> = (sut.iter())
        .map(|p| match p {
            SutProcess::Pid(p) => format!("pid {p}"),
            SutProcess::Name(n) => n.clone(),
            SutProcess::NetNs(ino) => format!("network namespace {ino}"),
        })
        .collect();
    let a = doc.cpu.local.as_ref()?.account.as_ref()?;
    Some(if a.sut_pct > 0.0 {
        format!(
            "system under test ({}): its processes used {:.1} % of the host's CPU, reported as cpu_sut_pct and not as interference; cpu_initiator_pct is the host's busy CPU less that. The softirq and kernel-thread work it causes on this kernel cannot be split by process and stays in the initiator's figure",
            named.join(", "),
            a.sut_pct
        )
    } else {
        format!(
            "system under test ({}): no such process used CPU in the window (not running, idle, or named otherwise: names are the kernel's 15-character comm)",
            named.join(", ")
        )
    })
}

/// The run and its one test. The run holds the result's notes too,
/// because a failed run has no repetition to hold them and `results show`
/// says a run's notes; reports show each once (`RunInfo::notes`).
fn begin_single(store: &mut Store, doc: &ResultDoc, host: &Host) -> Result<(i64, i64), StoreError> {
    let spec = doc.spec.to_value();
    let name = iotoll_model::workload::test_name(doc.kind, &spec);
    let run = store.begin_run(
        &format!("single {}", doc.kind),
        doc.config.as_deref(),
        "",
        &iotoll_model::spec::to_json(host),
        &doc.notes,
    )?;
    let test = store.add_test(run, 1, &name, doc.kind, None, &spec, "all")?;
    Ok((run, test))
}

/// A single measurement as it ended: its document, and the failure if
/// its workload failed after it started (the document then holds the
/// partial figures, marked `failed`, and is no result).
pub struct Measured {
    pub doc: ResultDoc,
    pub failure: Option<String>,
}

impl Session {
    /// Runs one measurement as this session's one test: the system under
    /// test's processes (`--sut-process`) are told apart in the CPU
    /// account, the result is held to the interference threshold, and a
    /// note says what the system under test's figure is. An error is the
    /// library's, the user's to fix or not ([`MeasureError::is_usage`]).
    pub fn measure<E: MeasureError>(
        &self,
        sut: &[SutProcess],
        interference_pct: f64,
        ctl: RunControl,
        run: impl FnOnce(RunControl) -> Result<ResultDoc, E>,
    ) -> Result<Measured, E> {
        iotoll_probe::procs::set_sut_processes(sut.to_vec());
        let mut doc = match run(ctl) {
            Ok(doc) => doc,
            Err(e) if e.is_usage() => return Err(e),
            Err(e) => {
                let (msg, doc) = e.into_failed()?;
                return Ok(Measured {
                    doc,
                    failure: Some(msg),
                });
            }
        };
        doc.apply_interference_threshold(interference_pct);
        doc.notes.extend(sut_note(sut, &doc));
        Ok(Measured { doc, failure: None })
    }

    /// Stores what [`Session::measure`] returned, once it has been shown:
    /// a result as [`Session::record_single`] stores it, a failure as
    /// [`Session::record_failed`] does. What to say of it, if anything:
    /// where it went, or why a failed run could not be recorded (that is
    /// never an error of its own: the failure is the error).
    pub fn record_measured(
        &mut self,
        m: &Measured,
        host: impl FnOnce() -> Host,
    ) -> Result<Option<String>, SessionError> {
        let db = (self.store.as_ref()).map_or(String::new(), |s| s.path().display().to_string());
        if m.failure.is_none() {
            let id = self.record_single(&m.doc, host)?;
            return Ok(id.map(|id| format!("stored as run {id} in {db}")));
        }
        Ok(self.record_failed(&m.doc, host).map(|r| match r {
            Ok(id) => format!("stored as failed run {id} in {db} (no result kept)"),
            Err(e) => format!(
                "the failed run could not be recorded: {}",
                iotoll_model::text::error_chain(&e)
            ),
        }))
    }

    /// Stores a single measurement as a run of one test and one
    /// repetition (all of it or none: never a run left `running`), and
    /// its id (None without a database). A result the database refuses is
    /// kept in a file beside it and the error says where: a finished
    /// result is never printed and then lost. `host`: this host's
    /// disclosure, read only if there is a database.
    fn record_single(
        &mut self,
        doc: &ResultDoc,
        host: impl FnOnce() -> Host,
    ) -> Result<Option<i64>, SessionError> {
        let Some(store) = self.store.as_mut() else {
            return Ok(None);
        };
        let host = host();
        let stored = store.atomically(|store| {
            let (run, test) = begin_single(store, doc, &host)?;
            store.add_rep(test, 1, doc)?;
            let selection = Selection {
                rule: "all".into(),
                selected_rep: Some(1),
                summary: Some(doc.metrics.clone()),
                ..Default::default()
            };
            store.finish_test(test, &selection)?;
            let status = match doc.status {
                ResultStatus::Interrupted => RunStatus::Aborted,
                _ => RunStatus::Complete,
            };
            store.finish_run(run, status, &doc.notes)?;
            Ok(run)
        });
        stored.map(Some).map_err(|e| {
            let kept = match iotoll_store::keep_unstored(store.path(), doc) {
                Ok(f) => format!("the result is kept in {}", f.display()),
                Err(why) => format!(
                    "the result could not be kept in a file either ({why}); the figures printed above are all there is"
                ),
            };
            SessionError::Failed(format!(
                "{}; the result was not stored: {kept}",
                iotoll_model::text::error_chain(&e)
            ))
        })
    }

    /// Stores a failed single measurement as a failed run: its test
    /// (named as [`Session::record_single`] names it) with no repetition
    /// and no summary, so no command ever takes its figures for a result;
    /// the notes (the failure first) say why. None without a database.
    fn record_failed(
        &mut self,
        doc: &ResultDoc,
        host: impl FnOnce() -> Host,
    ) -> Option<Result<i64, SessionError>> {
        let store = self.store.as_mut()?;
        let run = begin_single(store, doc, &host()).and_then(|(run, _)| {
            store
                .finish_run(run, RunStatus::Failed, &doc.notes)
                .map(|_| run)
        });
        Some(run.map_err(Into::into))
    }
}
