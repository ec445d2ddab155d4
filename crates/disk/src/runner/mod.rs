//! Runs one disk workload: workers with their engines, ramp-up, the
//! measurement window with its whole-host CPU snapshots, the one-second
//! series, and the result document.

use crate::engines::{self, Engine, EngineKind, IoResult, Request};
use crate::occupancy::{ages, littles_law_depth, littles_law_rounding, Occupancy};
use crate::pattern::{Io, IoGen, Line};
use crate::rng::Rng;
use crate::spec::{DiskRequest, EngineChoice};
use crate::target::{self, Target};
use crate::topology::{self, Assignment};
use crate::DiskError;
use hdrhistogram::Histogram;
use iotoll_model::metrics as mn;
use iotoll_model::spec::{Disclosure, Spec, Typed};
use iotoll_model::{
    derive_metrics, CpuSection, IoCounts, Kind, LineFigures, Metrics, ResultDoc, ResultStatus,
    TargetFigures, WorkerFigures,
};
use iotoll_run::{
    interrupted_note, latency_report, new_histogram, take_cpu_report, write_latency_metrics, Clock,
    Counting, HostClock, Live, Phase, PhaseCell, RunControl, SeriesRecorder,
};
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc, Barrier};
use std::time::{Duration, Instant, SystemTime};

mod assemble;
#[cfg(test)]
mod tests;
mod worker;

pub use assemble::mix_word_of;
use assemble::*;
use worker::*;

struct Shared {
    phase: PhaseCell,
    live: Vec<Live>,
    /// A worker failed (an engine error or a panic): the run stops.
    failed: std::sync::atomic::AtomicBool,
}

impl Shared {
    fn new(workers: usize) -> Self {
        Shared {
            phase: PhaseCell::new(Phase::Ramp),
            live: (0..workers).map(|_| Live::default()).collect(),
            failed: Default::default(),
        }
    }
}

/// Chooses the engine; a fallback is only taken when the user did not ask
/// for io_uring by name, and it is always noted.
fn choose_engine(spec: &DiskRequest, notes: &mut Vec<String>) -> Result<EngineKind, DiskError> {
    // `validate` has checked that the engine can drive the targets.
    let kind = spec.planned_engine();
    if !matches!(kind, EngineKind::IoUring | EngineKind::IoUringSqpoll) {
        return Ok(kind);
    }
    match (engines::io_uring::probe(), spec.engine) {
        (Ok(()), _) => Ok(kind),
        (Err(e), EngineChoice::Auto) => {
            notes.push(format!(
                "io_uring is not available ({e}); fell back to the psync engine (one synchronous I/O at a time per worker)"
            ));
            Ok(EngineKind::Psync)
        }
        (Err(msg), _) => Err(DiskError::EngineUnavailable {
            engine: kind.name(),
            msg,
        }),
    }
}

/// Runs the workload and returns its result document. On Ctrl-C during the
/// measurement window the result covers the part measured and its status
/// is `interrupted`; before the window there is nothing to report.
pub fn run(spec: &DiskRequest, ctl: RunControl) -> Result<ResultDoc, DiskError> {
    run_on(spec, ctl, HostClock, None)
}

/// [`run`] on targets prepared earlier ([`target::prepare_pinned`]): the
/// workers use the descriptors opened and checked then, so nothing is
/// looked up by name again (an agent prepares at PREPARE, runs at START).
pub fn run_prepared(
    spec: &DiskRequest,
    targets: Vec<Target>,
    ctl: RunControl,
) -> Result<ResultDoc, DiskError> {
    run_on(spec, ctl, HostClock, Some(targets))
}

/// [`run`] on the given clock and CPU source.
fn run_on<C: Clock>(
    spec: &DiskRequest,
    mut ctl: RunControl,
    clock: C,
    prepared: Option<Vec<Target>>,
) -> Result<ResultDoc, DiskError> {
    spec.validate()?;
    if let Some(cpus) = &spec.cpus {
        iotoll_probe::affinity::check_cpus(cpus).map_err(DiskError::Invalid)?;
    }
    let mut notes = Vec::new();
    let kind = choose_engine(spec, &mut notes)?;
    let targets = match prepared {
        Some(t) => t,
        None => {
            let progress = &mut *ctl.progress;
            target::prepare(spec, ctl.interrupted, &mut |d, t| progress.preparing(d, t))?
        }
    };
    let (online, cpus) = (iotoll_probe::affinity::online_cpus(), spec.cpus.as_deref());
    let assigned = topology::assign(targets.len(), spec.workers, spec.spread, cpus, &online);
    notes.extend(engine_notes(spec, kind));
    let shared = Arc::new(Shared::new(assigned.len()));
    let handles = start_workers(spec, kind, &targets, &assigned, &shared, &clock, &mut notes)?;

    let m = measure(spec, &mut ctl, &clock, &shared)?;
    let (ramped, completed, closed) = (m.ramped, m.completed, m.closed);
    let outs = join_all(handles);
    if !ramped && !shared.failed.load(Ordering::Acquire) {
        return Err(DiskError::Interrupted("during ramp-up"));
    }
    let window_s = closed.as_ref().map_or(0.0, |c| c.window_s);
    let (merged, failure) = merge(outs, &assigned, targets.len(), spec.lines.len(), window_s);
    // A worker that failed before the window leaves no figures but the failure.
    let failure = match ramped {
        true => failure,
        false => Some(failure.unwrap_or_else(|| "a worker failed".into())),
    };
    if !completed && failure.is_none() {
        notes.push(interrupted_note(window_s, spec.time));
    }
    let cpu = closed.and_then(|c| take_cpu_report(c.report, "CPU", &mut notes));
    let status = match (&failure, completed) {
        (Some(_), _) => ResultStatus::Failed,
        (None, true) => ResultStatus::Complete,
        (None, false) => ResultStatus::Interrupted,
    };
    let metrics = disk_metrics(&merged, window_s, cpu.as_ref());
    let errors = merged.total.errors;
    notes.extend(depth_notes(spec, kind, &assigned, &metrics, errors));
    notes.extend(merged.engine_notes.iter().cloned());
    let breakdown = breakdown(&merged, spec, &targets, &assigned, window_s, cpu.as_ref());
    notes.extend(pinning_notes(&breakdown));
    let paths: Vec<std::path::PathBuf> = (targets.iter())
        .filter(|t| t.iscsi.is_none())
        .map(|t| t.path.clone())
        .collect();
    let mut disclosure = iotoll_probe::affinity::disk_disclosure(&paths);
    disclosure.iscsi = (targets.iter().filter_map(target::iscsi_disclosure)).collect();
    let doc = ResultDoc {
        status,
        started_at: m.started_at,
        config: spec.config.clone(),
        metrics,
        cpu: CpuSection {
            local: cpu,
            ..Default::default()
        },
        latency: latency_report(&merged.total.hist),
        series: m.series,
        notes,
        disclosure: Some(Disclosure::Disk(Typed::from(disclosure))),
        targets: breakdown.targets,
        workers: breakdown.workers,
        lines: breakdown.lines,
        ..ResultDoc::new(Kind::Disk, spec_json(spec, &targets, &assigned, kind))
    };
    match failure {
        Some(why) => Err(failed(why, doc)),
        None => Ok(doc),
    }
}

/// What the run's settings mean for the figures, said once.
fn engine_notes(spec: &DiskRequest, kind: EngineKind) -> Vec<String> {
    let mut notes = Vec::new();
    if !kind.caps().queued && spec.qd > 1 {
        notes.push(format!(
            "the {} engine keeps one I/O in flight per worker; --qd {} has no effect",
            kind.name(),
            spec.qd
        ));
    }
    if spec.buffered {
        notes.push("buffered I/O: the page cache serves or absorbs I/Os, so results describe memory as much as the device".into());
    }
    notes
}

/// The phases of a run with its workers going: ramp-up, then the window
/// between two whole-host CPU snapshots, sampling the one-second series.
struct Measured {
    started_at: String,
    /// The ramp-up ended and the window opened.
    ramped: bool,
    /// The window ran its whole length.
    completed: bool,
    closed: Option<iotoll_probe::ClosedWindow>,
    series: Vec<iotoll_model::SeriesPoint>,
}

fn measure<C: Clock>(
    spec: &DiskRequest,
    ctl: &mut RunControl,
    clock: &C,
    shared: &Shared,
) -> Result<Measured, DiskError> {
    let mut series = SeriesRecorder::new(Counting::DiskIo, spec.ramp + spec.time, clock.now());
    let schedule = ctl.schedule;
    let ramp_end = schedule.map_or(series.t_run() + spec.ramp, |s| s.on);
    let totals = || Live::totals(&shared.live);
    let go_on = || !shared.failed.load(Ordering::Acquire);
    // Waits while sampling the series; false if interrupted or a worker failed.
    let wait = |series: &mut SeriesRecorder, ctl: &mut RunControl, until| {
        series.wait(clock, until, ctl, &shared.phase, totals, go_on)
    };
    // The instants the phase changed: the series' edges (what the window
    // does after, e.g. reading the process table, is not measured time).
    let edge_at = std::cell::Cell::new((clock.now(), (0, 0)));
    let window = clock.open_window_after(
        || wait(&mut series, ctl, ramp_end),
        || {
            shared.phase.set(Phase::Measure);
            edge_at.set((clock.now(), totals()));
            schedule.inspect(|s| s.mark_open());
        },
    )?;
    let ramped = window.is_some();
    let started_at = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let (completed, closed) = if let Some(window) = window {
        // The series' seconds start at the window's edge, and end at it.
        let (at, counts) = edge_at.get();
        series.edge(at, Phase::Ramp, || counts, ctl.progress);
        let measure_end = schedule.map_or(clock.now() + spec.time, |s| s.off);
        let completed = wait(&mut series, ctl, measure_end);
        let closed = clock.close_window(window, || {
            shared.phase.set(Phase::Stop);
            edge_at.set((clock.now(), totals()));
            schedule.inspect(|s| s.mark_close());
        });
        let (at, counts) = edge_at.get();
        series.edge(at, Phase::Measure, || counts, ctl.progress);
        (completed, Some(closed))
    } else {
        shared.phase.set(Phase::Stop);
        (false, None)
    };
    Ok(Measured {
        started_at,
        ramped,
        completed,
        closed,
        series: series.into_points(),
    })
}

type Handle = std::thread::JoinHandle<Result<WorkerOut, String>>;

/// Starts the workers and waits until each has set up its engine (their
/// notes join `notes`); if one could not, all are stopped and joined.
fn start_workers<C: Clock>(
    spec: &DiskRequest,
    kind: EngineKind,
    targets: &[Target],
    assigned: &[Assignment],
    shared: &Arc<Shared>,
    clock: &C,
    notes: &mut Vec<String>,
) -> Result<Vec<Handle>, DiskError> {
    let start = Arc::new(Barrier::new(assigned.len() + 1));
    let (ready_tx, ready_rx) = mpsc::channel();
    let base_seed = Rng::seed_from_time(spec.max_bs());
    let places = topology::places(assigned, targets.len());
    // Every worker's files are opened before any worker starts.
    let files = (assigned.iter())
        .map(|a| {
            (a.targets.iter())
                .map(|&t| targets[t].open_for_io())
                .collect::<Result<Vec<_>, _>>()
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut handles = Vec::new();
    for (w, ((a, places), files)) in assigned.iter().zip(places).zip(files).enumerate() {
        let plan = WorkerPlan {
            index: w as u32,
            kind,
            spec: spec.clone(),
            targets: (a.targets.iter().zip(places))
                .map(|(&t, place)| PlanTarget {
                    path: targets[t].path.display().to_string(),
                    region: targets[t].region,
                    aligns: targets[t].aligns.clone(),
                    place,
                })
                .collect(),
            cpu: a.cpu,
            seed: base_seed
                .wrapping_add(w as u64)
                .wrapping_mul(0x9E37_79B9_7F4A_7C15),
        };
        let (sh, st) = (shared.clone(), start.clone());
        let (tx, c) = (ready_tx.clone(), clock.clone());
        let h = std::thread::Builder::new()
            .name(format!("iotoll-disk-{w}"))
            .spawn(move || worker(plan, files, sh, st, tx, c))
            .map_err(|e| DiskError::io("starting worker thread", e))?;
        handles.push(h);
    }
    drop(ready_tx);
    let mut setup_err = None;
    for r in ready_rx.iter().take(assigned.len()) {
        match r {
            Ok(Some(n)) if !notes.contains(&n) => notes.push(n),
            Ok(_) => {}
            Err(e) => setup_err = setup_err.or(Some(e)),
        }
    }
    if setup_err.is_some() {
        shared.phase.set(Phase::Stop);
    }
    start.wait();
    match setup_err {
        Some(msg) => {
            join_all(handles);
            Err(DiskError::EngineUnavailable {
                engine: kind.name(),
                msg,
            })
        }
        None => Ok(handles),
    }
}

fn failed(why: String, mut doc: ResultDoc) -> DiskError {
    let msg = format!("the workload failed: {why}");
    doc.notes.insert(0, format!("failed: {why}"));
    DiskError::Failed {
        msg,
        doc: Box::new(doc),
    }
}

fn join_all(handles: Vec<Handle>) -> Vec<Result<WorkerOut, String>> {
    handles
        .into_iter()
        .map(|h| {
            h.join()
                .unwrap_or_else(|_| Err("worker thread panicked".into()))
        })
        .collect()
}
