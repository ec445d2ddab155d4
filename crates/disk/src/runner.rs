//! Runs one disk workload: workers with their engines, ramp-up, the
//! measurement window with its whole-host CPU snapshots, the one-second
//! series, and the result document.

use crate::engines::{self, Engine, EngineKind, IoResult, Request};
use crate::occupancy::{littles_law_depth, littles_law_tolerance, Occupancy};
use crate::pattern::{Io, IoGen, Line};
use crate::rng::Rng;
use crate::spec::{DiskSpec, EngineChoice};
use crate::target::{self, Target};
use crate::topology::{self, Assignment};
use crate::DiskError;
use hdrhistogram::Histogram;
use iotoll_model::metrics as mn;
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

/// Sets `Shared::failed` if the worker ends by panicking.
struct PanicFlag<'a>(&'a Shared);

impl Drop for PanicFlag<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.failed.store(true, Ordering::Release);
        }
    }
}

/// What was done on one target (by one worker, or in all) in the window.
struct Counts {
    reads: u64,
    writes: u64,
    read_bytes: u64,
    write_bytes: u64,
    errors: u64,
    hist: Histogram<u64>,
}

impl Counts {
    fn new() -> Self {
        Counts {
            reads: 0,
            writes: 0,
            read_bytes: 0,
            write_bytes: 0,
            errors: 0,
            hist: new_histogram(),
        }
    }

    fn add(&mut self, o: &Counts) {
        self.reads += o.reads;
        self.writes += o.writes;
        self.read_bytes += o.read_bytes;
        self.write_bytes += o.write_bytes;
        self.errors += o.errors;
        // Same bounds on both sides, so adding cannot fail.
        let _ = self.hist.add(&o.hist);
    }

    fn counts(&self) -> IoCounts {
        IoCounts {
            reads: self.reads,
            writes: self.writes,
            read_bytes: self.read_bytes,
            write_bytes: self.write_bytes,
        }
    }

    /// The rates, errors and latency of these counts over the window: the
    /// totals' metrics, or a part's.
    fn metrics(&self, window_s: f64) -> Metrics {
        let mut m = Metrics::new();
        let mut put = |k: &str, v: f64| {
            m.insert(k.to_string(), v);
        };
        put(mn::ERRORS, self.errors as f64);
        if window_s > 0.0 {
            let c = self.counts();
            put(mn::IOPS, c.ios() as f64 / window_s);
            put(mn::READ_IOPS, self.reads as f64 / window_s);
            put(mn::WRITE_IOPS, self.writes as f64 / window_s);
            put(mn::MB_S, c.bytes() as f64 / window_s / 1e6);
            put(mn::READ_MB_S, self.read_bytes as f64 / window_s / 1e6);
            put(mn::WRITE_MB_S, self.write_bytes as f64 / window_s / 1e6);
            put(mn::MIB_S, c.bytes() as f64 / window_s / 1048576.0);
        }
        write_latency_metrics(&self.hist, "lat", &mut m);
        m
    }
}

/// What one worker measured inside the window.
struct WorkerOut {
    /// Per target of the worker, in its order.
    targets: Vec<Counts>,
    /// I/Os and bytes of each access-spec line.
    lines: Vec<(u64, u64)>,
    first_error: Option<String>,
    /// Mean I/Os outstanding over the worker's view of the window.
    qd_achieved: f64,
    /// The CPUs it was seen on in the window.
    ran_on: Vec<u32>,
    /// What its engine had to say at the end (`Engine::report`).
    engine_note: Option<String>,
}

impl WorkerOut {
    fn new(targets: usize, lines: usize) -> Self {
        WorkerOut {
            targets: (0..targets).map(|_| Counts::new()).collect(),
            lines: vec![(0, 0); lines],
            first_error: None,
            qd_achieved: 0.0,
            ran_on: Vec::new(),
            engine_note: None,
        }
    }
}

/// One of a worker's targets.
struct PlanTarget {
    /// The target's path, for messages.
    path: String,
    region: crate::pattern::Region,
    /// Each line's alignment on it.
    aligns: Vec<u64>,
    /// The worker's place among the target's workers, and their number.
    place: (u32, u32),
}

struct WorkerPlan {
    index: u32,
    kind: EngineKind,
    spec: DiskSpec,
    targets: Vec<PlanTarget>,
    cpu: Option<u32>,
    seed: u64,
}

/// One worker: pin itself, set up its engine, report readiness, then keep
/// QD I/Os in flight on each target until told to stop, counting only
/// completions inside the window.
fn worker(
    plan: WorkerPlan,
    files: Vec<engines::Opened>,
    shared: Arc<Shared>,
    start: Arc<Barrier>,
    ready: mpsc::Sender<Result<Option<String>, String>>,
    clock: impl Clock,
) -> Result<WorkerOut, String> {
    let _flag = PanicFlag(&shared);
    let kind = plan.kind.name();
    // Pinned before the engine is built, so that its ring and buffers are
    // allocated on the CPU's memory node.
    let pinned = match plan.cpu {
        Some(cpu) => iotoll_probe::affinity::pin_current_thread(cpu)
            .map_err(|e| format!("worker {}: cannot pin to CPU {cpu}: {e}", plan.index)),
        None => Ok(()),
    };
    let depth = plan.spec.qd as usize * plan.targets.len();
    let bs = plan.spec.max_bs() as usize;
    let setup = pinned.and_then(|()| {
        plan.kind
            .open(files, depth, bs, plan.seed)
            .map_err(|e| format!("worker {}: cannot set up {kind}: {e}", plan.index))
    });
    let note = setup.as_ref().map(|(_, note)| note.clone());
    let _ = ready.send(note.map_err(String::clone));
    start.wait();
    let r = setup.and_then(|(engine, _)| work(&plan, engine, &shared, &clock));
    if r.is_err() {
        shared.failed.store(true, Ordering::Release);
    }
    r
}

/// What an I/O was, for messages: "write of 4096 bytes at offset 8192 on PATH".
fn io_desc(rq: &Request, target: &str) -> String {
    format!(
        "{} of {} bytes at offset {} on {target}",
        if rq.read { "read" } else { "write" },
        rq.len,
        rq.offset
    )
}

/// The worker loop on a ready engine.
fn work(
    plan: &WorkerPlan,
    mut engine: Box<dyn Engine>,
    shared: &Shared,
    clock: &impl Clock,
) -> Result<WorkerOut, String> {
    let spec = &plan.spec;
    let mut gens: Vec<IoGen> = (plan.targets.iter().enumerate())
        .map(|(i, t)| {
            let lines: Vec<Line> = (spec.lines.iter().zip(&t.aligns))
                .map(|(l, &align)| Line {
                    share_pct: l.share_pct,
                    bs: l.bs,
                    align,
                    read_pct: l.read_pct,
                    random_pct: l.random_pct,
                })
                .collect();
            let seed = plan.seed ^ 0x5EED ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            IoGen::new(t.region, &lines, t.place.0, t.place.1, seed)
        })
        .collect();
    let nt = gens.len();
    let depth = engine.depth();
    // Each target has `qd` slots of its own (slot s serves target s % nt,
    // so the first fill goes round-robin); an engine with fewer slots than
    // targets (psync) takes the targets in turn.
    let fixed = depth >= nt;
    let mut turn = 0usize;
    let t0 = clock.now();
    let mut issued_at = vec![t0; depth];
    let mut reqs = vec![
        Request {
            file: 0,
            read: true,
            offset: 0,
            len: 0
        };
        depth
    ];
    let mut line_of = vec![0usize; depth];
    // An I/O drawn for a slot but held back by a burst delay.
    let mut held: Vec<Option<(usize, Io)>> = vec![None; depth];
    let name = |file: usize| plan.targets[file].path.as_str();
    let mut free: Vec<usize> = (0..depth).rev().collect();
    let mut pending: Vec<usize> = Vec::with_capacity(depth);
    // I/Os outstanding over time, and its integral at the first batch seen
    // inside the window and at the first one seen after it.
    let mut occ = Occupancy::new(t0);
    let (mut mark_start, mut mark_end) = (None::<(Instant, f64)>, None::<(Instant, f64)>);
    let bursting = spec.lines.iter().any(|l| !l.burst_delay.is_zero());
    let mut in_burst = 0u32;
    let live = &shared.live[plan.index as usize];
    let (mut all_ios, mut all_bytes) = (0u64, 0u64);
    let mut out = WorkerOut::new(nt, spec.lines.len());

    loop {
        // After a failure (here or in another worker) no new I/O starts;
        // those in flight are reaped.
        let failed = shared.failed.load(Ordering::Relaxed);
        if shared.phase.get() != Phase::Stop && !failed {
            while let Some(slot) = free.pop() {
                let (file, io) = held[slot].take().unwrap_or_else(|| {
                    let file = if fixed { slot % nt } else { turn };
                    turn = (turn + 1) % nt;
                    (file, gens[file].next_io())
                });
                let line = &spec.lines[io.line];
                if bursting && !line.burst_delay.is_zero() && in_burst >= line.burst_len {
                    // Iometer's transfer delay: wait before each burst, after
                    // the previous burst has completed.
                    held[slot] = Some((file, io));
                    if occ.outstanding() > 0 || !pending.is_empty() {
                        free.push(slot);
                        break;
                    }
                    sleep_unless_stopped(line.burst_delay, shared, clock);
                    in_burst = 0;
                    if shared.phase.get() == Phase::Stop {
                        free.push(slot);
                        break;
                    }
                    held[slot] = None;
                }
                let rq = Request {
                    file,
                    read: io.read,
                    offset: io.offset,
                    len: io.len as usize,
                };
                engine.queue(slot, rq).map_err(|e| {
                    format!(
                        "worker {}: {}: queueing a {} failed: {e}",
                        plan.index,
                        plan.kind.name(),
                        io_desc(&rq, name(file))
                    )
                })?;
                reqs[slot] = rq;
                line_of[slot] = io.line;
                in_burst += 1;
                pending.push(slot);
            }
        }
        // The first I/O of this batch and how many, for an error message.
        let batch_io = pending.first().map(|s| (*s, pending.len()));
        if !pending.is_empty() {
            // Every free slot is refilled, and all of them are handed to the
            // kernel together by the one system call below, which then waits
            // for the next completion. Their latency starts just before that
            // call. (Submitting each I/O with its own call, as before, kept
            // the last of N refills out of flight for N-1 system calls: at
            // QD 32 some 3-10 slots were idle on average; docs/disk.md.)
            let t = clock.now();
            for slot in pending.drain(..) {
                issued_at[slot] = t;
                occ.started(t);
            }
        }
        if occ.outstanding() == 0 {
            if failed || shared.phase.get() == Phase::Stop {
                break;
            }
            continue;
        }
        // Completion time and phase are read once per batch, the moment the
        // completions are seen: they all completed before we woke, and finer
        // stamps would not be truer.
        let mut batch: Option<(Instant, Phase)> = None;
        let mut n = 0u64;
        let mut failed_slot = None;
        engine
            .submit_and_reap(1, &mut |slot: usize, res: IoResult| {
                let (t, phase) = *batch.get_or_insert_with(|| (clock.now(), shared.phase.get()));
                n += 1;
                free.push(slot);
                let rq = &reqs[slot];
                let len = rq.len as u64;
                let ok = res == len as i64;
                all_ios += 1;
                if ok {
                    all_bytes += len;
                }
                let c = &mut out.targets[rq.file];
                if !ok && phase != Phase::Stop {
                    // A failed I/O fails the run, in the ramp-up too, and
                    // stops it: the figures could only get less true.
                    shared.failed.store(true, Ordering::Release);
                    c.errors += 1;
                    if out.first_error.is_none() {
                        failed_slot = Some(slot);
                        let io = io_desc(rq, name(rq.file));
                        out.first_error = Some(if res < 0 {
                            format!(
                                "{io} failed: {}",
                                std::io::Error::from_raw_os_error(-res as i32)
                            )
                        } else {
                            format!("{io} transferred only {res} bytes")
                        });
                    }
                }
                if !ok || phase != Phase::Measure {
                    return;
                }
                let ns = t.duration_since(issued_at[slot]).as_nanos() as u64;
                c.hist.saturating_record(ns.max(1));
                if rq.read {
                    c.reads += 1;
                    c.read_bytes += len;
                } else {
                    c.writes += 1;
                    c.write_bytes += len;
                }
                let l = &mut out.lines[line_of[slot]];
                l.0 += 1;
                l.1 += len;
            })
            .map_err(|e| {
                let what = match batch_io {
                    Some((slot, n)) => format!(
                        "submitting {n} I/O(s) (the first a {}) failed",
                        io_desc(&reqs[slot], name(reqs[slot].file))
                    ),
                    None => format!(
                        "waiting for the completions of {} I/O(s) in flight failed",
                        occ.outstanding()
                    ),
                };
                format!("worker {}: {}: {what}: {e}", plan.index, plan.kind.name())
            })?;
        // The engine may know why better than the errno (SCSI sense).
        if let (Some(slot), Some(first)) = (failed_slot, out.first_error.as_mut()) {
            if let Some(why) = engine.explain(slot) {
                first.push_str(&format!(" ({why})"));
            }
        }
        if let Some((t, phase)) = batch {
            match phase {
                Phase::Measure if mark_start.is_none() => {
                    mark_start = Some((t, occ.io_seconds_at(t)))
                }
                Phase::Stop if mark_start.is_some() && mark_end.is_none() => {
                    mark_end = Some((t, occ.io_seconds_at(t)))
                }
                _ => {}
            }
            if phase == Phase::Measure {
                // Where the worker really ran, not where it was asked to.
                if let Some(cpu) = iotoll_probe::affinity::current_cpu() {
                    if !out.ran_on.contains(&cpu) {
                        out.ran_on.push(cpu);
                    }
                }
            }
            occ.completed(t, n);
        }
        live.publish(all_ios, all_bytes);
    }
    if let Some((t0, a0)) = mark_start {
        let (t1, a1) = mark_end.unwrap_or_else(|| {
            let t = clock.now();
            (t, occ.io_seconds_at(t))
        });
        // The worker's own view of the window starts and ends a little
        // after the probe's (at the first batch it reaps in each phase), so
        // its mean is taken over that span.
        let span = t1.saturating_duration_since(t0).as_secs_f64();
        if span > 0.0 {
            out.qd_achieved = (a1 - a0) / span;
        }
    }
    out.ran_on.sort_unstable();
    out.engine_note = engine.report();
    Ok(out)
}

fn sleep_unless_stopped(d: Duration, shared: &Shared, clock: &impl Clock) {
    let until = clock.now() + d;
    while shared.phase.get() != Phase::Stop {
        let left = until.saturating_duration_since(clock.now());
        if left.is_zero() {
            return;
        }
        clock.sleep(left.min(Duration::from_millis(50)));
    }
}

/// Chooses the engine; a fallback is only taken when the user did not ask
/// for io_uring by name, and it is always noted.
fn choose_engine(spec: &DiskSpec, notes: &mut Vec<String>) -> Result<EngineKind, DiskError> {
    let is_url = |p: &std::path::PathBuf| p.to_str().is_some_and(iotoll_iscsi::url::is_iscsi_url);
    let urls = spec.targets.iter().filter(|p| is_url(p)).count();
    if urls > 0 && urls < spec.targets.len() {
        return Err(DiskError::Invalid(
            "iscsi:// targets and local files or devices cannot be mixed in one run (each worker has one engine); run them separately".into(),
        ));
    }
    match (spec.engine, urls > 0) {
        (EngineChoice::Auto | EngineChoice::Iscsi, true) => Ok(EngineKind::Iscsi),
        (EngineChoice::Iscsi, false) => Err(DiskError::Invalid(
            "--engine iscsi drives iscsi://HOST[:PORT]/IQN/LUN targets; give one with --target"
                .into(),
        )),
        (other, true) => Err(DiskError::Invalid(format!(
            "--engine {} cannot drive iscsi:// targets: iotoll's own initiator does (omit --engine, or --engine iscsi)",
            other.name()
        ))),
        (EngineChoice::Psync, false) => Ok(EngineKind::Psync),
        (EngineChoice::Null, false) => Ok(EngineKind::Null),
        (EngineChoice::IoUring, false) => engines::io_uring::probe()
            .map(|_| EngineKind::IoUring)
            .map_err(|msg| DiskError::EngineUnavailable {
                engine: "io_uring",
                msg,
            }),
        (EngineChoice::Auto, false) => match engines::io_uring::probe() {
            Ok(()) => Ok(EngineKind::IoUring),
            Err(e) => {
                notes.push(format!(
                    "io_uring is not available ({e}); fell back to the psync engine (one synchronous I/O at a time per worker)"
                ));
                Ok(EngineKind::Psync)
            }
        },
    }
}

/// Runs the workload and returns its result document. On Ctrl-C during the
/// measurement window the result covers the part measured and its status
/// is `interrupted`; before the window there is nothing to report.
pub fn run(spec: &DiskSpec, ctl: RunControl) -> Result<ResultDoc, DiskError> {
    run_on(spec, ctl, HostClock, None)
}

/// [`run`] on targets prepared earlier ([`target::prepare_pinned`]): the
/// workers use the descriptors opened and checked then, so nothing is
/// looked up by name again (an agent prepares at PREPARE, runs at START).
pub fn run_prepared(
    spec: &DiskSpec,
    targets: Vec<Target>,
    ctl: RunControl,
) -> Result<ResultDoc, DiskError> {
    run_on(spec, ctl, HostClock, Some(targets))
}

/// [`run`] on the given clock and CPU source.
fn run_on<C: Clock>(
    spec: &DiskSpec,
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
    let online = iotoll_probe::affinity::online_cpus();
    let assigned = topology::assign(
        targets.len(),
        spec.workers,
        spec.spread,
        spec.cpus.as_deref(),
        &online,
    );
    if kind == EngineKind::Psync && spec.qd > 1 {
        notes.push(format!(
            "the psync engine keeps one I/O in flight per worker; --qd {} has no effect",
            spec.qd
        ));
    }
    if spec.buffered {
        notes.push("buffered I/O: the page cache serves or absorbs I/Os, so results describe memory as much as the device".into());
    }
    let shared = Arc::new(Shared::new(assigned.len()));
    let handles = start_workers(spec, kind, &targets, &assigned, &shared, &clock, &mut notes)?;

    let mut series = SeriesRecorder::new(Counting::DiskIo, spec.ramp + spec.time, clock.now());
    let schedule = ctl.schedule;
    let ramp_end = schedule.map_or(series.t_run() + spec.ramp, |s| s.on);
    let totals = || Live::totals(&shared.live);
    let go_on = || !shared.failed.load(Ordering::Acquire);
    // Waits while sampling the series; false if interrupted or a worker failed.
    let wait = |series: &mut SeriesRecorder, ctl: &mut RunControl, until| {
        series.wait(&clock, until, ctl, &shared.phase, totals, go_on)
    };
    // The instants the phase changed: the series' edges (what the window
    // does after, e.g. reading the process table, is not measured time).
    let edge_at = std::cell::Cell::new((clock.now(), (0, 0)));
    let window = clock.open_window_after(
        || wait(&mut series, &mut ctl, ramp_end),
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
        let completed = wait(&mut series, &mut ctl, measure_end);
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
    let outs = join_all(handles);
    if !ramped && !shared.failed.load(Ordering::Acquire) {
        return Err(DiskError::Interrupted("during ramp-up"));
    }
    let (merged, failure) = merge(outs, &assigned, targets.len(), spec.lines.len());
    // A worker that failed before the window leaves no figures but the failure.
    let failure = match ramped {
        true => failure,
        false => Some(failure.unwrap_or_else(|| "a worker failed".into())),
    };
    let window_s = closed.as_ref().map_or(0.0, |c| c.window_s);
    if !completed && failure.is_none() {
        notes.push(interrupted_note(window_s, spec.time));
    }
    let cpu = closed.and_then(|c| take_cpu_report(c.report, "CPU", &mut notes));
    let status = match (&failure, completed) {
        (Some(_), _) => ResultStatus::Failed,
        (None, true) => ResultStatus::Complete,
        (None, false) => ResultStatus::Interrupted,
    };
    let metrics = disk_metrics(&merged.total, merged.qd_achieved, window_s, cpu.as_ref());
    notes.extend(depth_notes(
        spec,
        kind,
        &assigned,
        &metrics,
        merged.total.errors,
    ));
    notes.extend(merged.engine_notes.iter().cloned());
    let breakdown = breakdown(&merged, spec, &targets, &assigned, window_s, cpu.as_ref());
    notes.extend(pinning_notes(&breakdown));
    let paths: Vec<std::path::PathBuf> = (targets.iter())
        .filter(|t| t.iscsi.is_none())
        .map(|t| t.path.clone())
        .collect();
    let mut disclosure = iotoll_probe::affinity::disk_disclosure(&paths);
    disclosure.iscsi = targets
        .iter()
        .filter_map(target::iscsi_disclosure)
        .collect();
    let doc = ResultDoc {
        iotoll_version: iotoll_model::VERSION.to_string(),
        kind: Kind::Disk,
        status,
        started_at,
        config: spec.config.clone(),
        spec: spec_json(spec, &targets, &assigned, kind),
        metrics,
        cpu: CpuSection {
            local: cpu,
            remote: None,
            same_host: None,
        },
        latency: latency_report(&merged.total.hist),
        series: series.into_points(),
        notes,
        disclosure: Some(iotoll_model::spec::to_json(&disclosure)),
        targets: breakdown.targets,
        workers: breakdown.workers,
        lines: breakdown.lines,
        hosts: Vec::new(),
        pairs: Vec::new(),
        skew_us: None,
    };
    match failure {
        Some(why) => Err(failed(why, doc)),
        None => Ok(doc),
    }
}

type Handle = std::thread::JoinHandle<Result<WorkerOut, String>>;

/// Starts the workers and waits until each has set up its engine (their
/// notes join `notes`); if one could not, all are stopped and joined.
fn start_workers<C: Clock>(
    spec: &DiskSpec,
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
        let (sh, st, tx, c) = (
            shared.clone(),
            start.clone(),
            ready_tx.clone(),
            clock.clone(),
        );
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

/// The workers' figures added up: in all, per target, per worker, per line.
struct Merged {
    total: Counts,
    targets: Vec<Counts>,
    workers: Vec<Counts>,
    ran_on: Vec<Vec<u32>>,
    lines: Vec<(u64, u64)>,
    qd_achieved: f64,
    /// The engines' end-of-run notes, each once.
    engine_notes: Vec<String>,
}

/// The workers' figures added up, and why the run failed if it did: a
/// worker that failed (its engine failed mid-run, or it panicked), or any
/// I/O that failed before the window closed.
fn merge(
    outs: Vec<Result<WorkerOut, String>>,
    assigned: &[Assignment],
    ntargets: usize,
    nlines: usize,
) -> (Merged, Option<String>) {
    let mut failure = None;
    let mut first_error = None;
    let mut m = Merged {
        total: Counts::new(),
        targets: (0..ntargets).map(|_| Counts::new()).collect(),
        workers: Vec::new(),
        ran_on: Vec::new(),
        lines: vec![(0, 0); nlines],
        qd_achieved: 0.0,
        engine_notes: Vec::new(),
    };
    for (o, a) in outs.into_iter().zip(assigned) {
        let mut mine = Counts::new();
        match o {
            Ok(o) => {
                for (c, &t) in o.targets.iter().zip(&a.targets) {
                    mine.add(c);
                    m.targets[t].add(c);
                }
                for (l, o) in m.lines.iter_mut().zip(&o.lines) {
                    (l.0, l.1) = (l.0 + o.0, l.1 + o.1);
                }
                m.qd_achieved += o.qd_achieved;
                first_error = first_error.or(o.first_error);
                m.ran_on.push(o.ran_on);
                if let Some(n) = o.engine_note {
                    if !m.engine_notes.contains(&n) {
                        m.engine_notes.push(n);
                    }
                }
            }
            Err(e) => {
                failure = failure.or(Some(e));
                m.ran_on.push(Vec::new());
            }
        }
        m.total.add(&mine);
        m.workers.push(mine);
    }
    if m.total.errors > 0 {
        let (n, first) = (m.total.errors, first_error.as_deref());
        let first = first.unwrap_or("unknown");
        failure = Some(match failure {
            None => format!("{n} I/O(s) failed; the first: {first}"),
            Some(f) => format!("{f}; besides, {n} I/O(s) failed, the first: {first}"),
        });
    }
    (m, failure)
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

fn disk_metrics(
    o: &Counts,
    qd_achieved: f64,
    window_s: f64,
    cpu: Option<&iotoll_model::CpuReport>,
) -> Metrics {
    let mut m = o.metrics(window_s);
    m.insert(mn::WINDOW_S.to_string(), window_s);
    if window_s > 0.0 {
        m.insert(mn::QD_ACHIEVED.to_string(), qd_achieved);
    }
    if let Some(c) = cpu {
        c.write_metrics(&mut m, "");
    }
    derive_metrics(&mut m);
    m
}

/// Per target, per worker and per line, over the window.
struct Parts {
    targets: Vec<TargetFigures>,
    workers: Vec<WorkerFigures>,
    lines: Vec<LineFigures>,
}

fn breakdown(
    m: &Merged,
    spec: &DiskSpec,
    targets: &[Target],
    assigned: &[Assignment],
    window_s: f64,
    cpu: Option<&iotoll_model::CpuReport>,
) -> Parts {
    let all_ios: u64 = m.lines.iter().map(|l| l.0).sum();
    let all_bytes: u64 = m.lines.iter().map(|l| l.1).sum();
    let pct = |x: u64, of: u64| {
        if of > 0 {
            x as f64 * 100.0 / of as f64
        } else {
            0.0
        }
    };
    let busy = |c: u32| {
        cpu.and_then(|r| r.per_core.iter().find(|k| k.cpu == c))
            .map(|k| k.busy_pct)
    };
    Parts {
        targets: (targets.iter().zip(&m.targets).enumerate())
            .map(|(i, (t, c))| TargetFigures {
                target: t.path.display().to_string(),
                target_kind: iotoll_model::spec::word(&t.kind),
                workers: (assigned.iter().enumerate())
                    .filter(|(_, a)| a.targets.contains(&i))
                    .map(|(w, _)| w as u32)
                    .collect(),
                counts: c.counts(),
                metrics: c.metrics(window_s),
            })
            .collect(),
        workers: (assigned.iter().zip(&m.workers).zip(&m.ran_on).enumerate())
            .map(|(w, ((a, c), ran_on))| WorkerFigures {
                id: w as u32,
                cpu: match ran_on.as_slice() {
                    [one] => Some(*one),
                    _ => None,
                },
                ran_on: ran_on.clone(),
                pinned: a.cpu,
                pinned_busy_pct: a.cpu.and_then(busy),
                targets: a.targets.iter().map(|t| *t as u32).collect(),
                counts: c.counts(),
                metrics: c.metrics(window_s),
            })
            .collect(),
        lines: (spec.lines.iter().zip(&m.lines).enumerate())
            .map(|(i, (l, &(ios, bytes)))| LineFigures {
                line: i as u32,
                share_pct: l.share_pct,
                bs: l.bs,
                ios,
                bytes,
                ios_pct: pct(ios, all_ios),
                bytes_pct: pct(bytes, all_bytes),
            })
            .collect(),
    }
}

/// A pinned worker seen on another CPU: the pinning did not hold (a
/// cgroup's cpuset, or the CPU went offline).
fn pinning_notes(b: &Parts) -> Vec<String> {
    (b.workers.iter())
        .filter_map(|w| {
            let cpu = w.pinned?;
            let off: Vec<u32> = w.ran_on.iter().copied().filter(|c| *c != cpu).collect();
            (!off.is_empty()).then(|| {
                format!(
                    "worker {} was pinned to CPU {cpu} but ran on CPU {}",
                    w.id,
                    iotoll_probe::affinity::format_cpu_list(&off)
                )
            })
        })
        .collect()
}

/// The queue depth kept, and the Little's-law check of the timing: when
/// IOPS × mean latency disagrees with the measured depth, latency was not
/// timed over the interval the I/Os were outstanding.
fn depth_notes(
    spec: &DiskSpec,
    kind: EngineKind,
    assigned: &[Assignment],
    m: &Metrics,
    errors: u64,
) -> Vec<String> {
    let mut notes = Vec::new();
    let get = |k: &str| m.get(k).copied();
    // psync keeps one I/O per worker, whatever --qd says.
    let requested: u32 = (assigned.iter())
        .map(|a| match kind {
            EngineKind::Psync => 1,
            _ => spec.qd * a.targets.len() as u32,
        })
        .sum();
    let requested = requested as f64;
    let (Some(qd), Some(window_s)) = (get(mn::QD_ACHIEVED), get(mn::WINDOW_S)) else {
        return notes;
    };
    let bursting = spec.lines.iter().any(|l| !l.burst_delay.is_zero());
    if !bursting && qd < 0.9 * requested {
        notes.push(format!(
            "qd_achieved {qd:.1} is below the {requested} I/Os requested: the workers could not keep the queue full (CPU-bound, or completions handled slower than they arrive)"
        ));
    }
    if let (Some(iops), Some(mean), Some(max), 0) = (
        get(mn::IOPS),
        get(mn::LAT_MEAN_US),
        get(mn::LAT_MAX_US),
        errors,
    ) {
        let little = littles_law_depth(iops, mean);
        if (little - qd).abs() > littles_law_tolerance(qd, requested, max, window_s) {
            notes.push(format!(
                "Little's law check failed: iops x lat_mean_us = {little:.2} outstanding, measured {qd:.2}; the latency figures of this run are suspect"
            ));
        }
    }
    notes
}

/// A mixed spec's lines in one word: `10%512+5%1k+...r80x100`, or the
/// built-in's name.
fn mix_word(spec: &DiskSpec) -> Option<String> {
    mix_word_of(spec.spec_name.as_deref(), &spec.lines)
}

/// [`mix_word`] of a spec's name and lines (a console rebuilding the
/// spec it ordered from an agent).
pub fn mix_word_of(spec_name: Option<&str>, lines: &[crate::AccessLine]) -> Option<String> {
    if lines.len() < 2 {
        return None;
    }
    if let Some(n) = spec_name {
        return Some(n.to_string());
    }
    let parts: Vec<String> = (lines.iter())
        .map(|l| {
            format!(
                "{}%{}r{}x{}",
                l.share_pct,
                iotoll_model::format_size(l.bs),
                l.read_pct,
                l.random_pct
            )
        })
        .collect();
    Some(parts.join("+"))
}

fn spec_json(
    spec: &DiskSpec,
    targets: &[Target],
    assigned: &[Assignment],
    kind: EngineKind,
) -> serde_json::Value {
    use iotoll_model::spec::{to_json, word, LineSpec, TargetSpec};
    let t = &targets[0];
    let single = (spec.lines.len() == 1).then(|| &spec.lines[0]);
    let workers = match spec.spread {
        true => assigned.len(),
        false => assigned.len() / targets.len().max(1),
    };
    to_json(&iotoll_model::spec::DiskSpec {
        spec: spec.spec_name.clone(),
        target: t.path.display().to_string(),
        target_kind: word(&t.kind),
        target_size: t.size,
        targets: (targets.iter())
            .map(|t| TargetSpec {
                path: t.path.display().to_string(),
                kind: word(&t.kind),
                size: t.size,
                logical_block_size: t.logical_block,
            })
            .collect(),
        ntargets: (targets.len() > 1).then_some(targets.len() as u32),
        bs: single.map(|l| l.bs),
        read_pct: single.map(|l| l.read_pct),
        random_pct: single.map(|l| l.random_pct),
        lines: (spec.lines.iter().zip(&t.aligns))
            .map(|(l, &align)| LineSpec {
                share_pct: l.share_pct,
                bs: l.bs,
                read_pct: l.read_pct,
                random_pct: l.random_pct,
                burst_delay_s: l.burst_delay.as_secs_f64(),
                burst_len: l.burst_len,
                align,
            })
            .collect(),
        mix: mix_word(spec),
        qd: spec.qd,
        workers: workers as u32,
        spread: spec.spread,
        cpus: (assigned.iter().map(|a| a.cpu))
            .collect::<Option<Vec<u32>>>()
            .filter(|c| !c.is_empty()),
        size: t.region.len,
        offset: t.region.start,
        align: single.map(|_| t.aligns[0]),
        logical_block_size: t.logical_block,
        burst_delay_s: single.map(|l| l.burst_delay.as_secs_f64()),
        burst_len: single.map(|l| l.burst_len),
        engine: kind.name().to_string(),
        engine_requested: word(&spec.engine),
        direct: t.direct,
        ramp_s: spec.ramp.as_secs_f64(),
        time_s: spec.time.as_secs_f64(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use iotoll_run::FakeClock;
    use std::sync::atomic::AtomicBool;

    fn metrics(pairs: &[(&str, f64)]) -> Metrics {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    /// A 10 s window with a 2 ms maximum latency.
    fn depth_metrics(iops: f64, lat_mean_us: f64, qd: f64) -> Metrics {
        metrics(&[
            (mn::WINDOW_S, 10.0),
            (mn::IOPS, iops),
            (mn::LAT_MEAN_US, lat_mean_us),
            (mn::LAT_MAX_US, 2_000.0),
            (mn::QD_ACHIEVED, qd),
        ])
    }

    fn spec(qd: u32, workers: u32) -> DiskSpec {
        DiskSpec {
            qd,
            workers,
            ..DiskSpec::default()
        }
    }

    /// One worker at `qd`, `burst_len` I/Os a burst, `delay_us` before each.
    fn bursts(qd: u32, burst_len: u32, delay_us: u64) -> DiskSpec {
        let mut s = spec(qd, 1);
        s.lines[0].burst_len = burst_len;
        s.lines[0].burst_delay = Duration::from_micros(delay_us);
        s
    }

    fn read_pct(mut s: DiskSpec, pct: u32) -> DiskSpec {
        s.lines[0].read_pct = pct;
        s
    }

    /// Issue 9: an engine error mid-run (here io_uring_enter failing with
    /// EIO, injected, with 8 I/Os handed to the kernel) ends the run at
    /// once as failed, saying what failed (the operation, target, offset,
    /// errno) rather than "engine ... is not available", and the engine
    /// drains all 8 in-flight I/Os before its buffers are freed.
    #[test]
    fn engine_failure_mid_run_fails_the_run_naming_what_failed() {
        if let Err(e) = crate::engines::io_uring::probe() {
            assert!(std::env::var_os("CI").is_none(), "io_uring in CI: {e}");
            eprintln!("io_uring unavailable ({e}); test skipped");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("target.bin");
        let f = std::fs::File::create(&path).unwrap();
        f.set_len(4 << 20).unwrap();
        crate::engines::io_uring::test_fault::arm(&f, 100, libc::EIO);
        let spec = DiskSpec {
            targets: vec![path.clone()],
            qd: 8,
            engine: EngineChoice::IoUring,
            buffered: true,
            ramp: Duration::ZERO,
            time: Duration::from_secs(120),
            ..DiskSpec::default()
        };
        let ctl = RunControl {
            interrupted: &AtomicBool::new(false),
            progress: &mut iotoll_run::Silent,
            schedule: None,
        };
        let t0 = Instant::now();
        let r = run(&spec, ctl);
        let took = t0.elapsed();
        let drops = crate::engines::io_uring::test_fault::drops(&f);
        let Err(DiskError::Failed { msg, doc }) = r else {
            panic!("expected a failed run, got {r:?}");
        };
        assert!(took < Duration::from_secs(60), "the run went on: {took:?}");
        for want in [
            "the workload failed: worker 0: io_uring: submitting ",
            "(the first a read of 4096 bytes at offset ",
            &format!(" on {}", path.display()),
            "Input/output error (os error 5)",
        ] {
            assert!(msg.contains(want), "{want:?} not in {msg:?}");
        }
        assert!(!msg.contains("not available"), "{msg}");
        assert_eq!(doc.status, ResultStatus::Failed);
        assert!(
            doc.notes[0].starts_with("failed: worker 0"),
            "{:?}",
            doc.notes
        );
        // Every I/O in flight at the failure was reaped before the buffers went.
        assert_eq!(drops, vec![(8, 0)], "(drained, left in flight)");
    }

    /// The null engine on a fake clock: each batch takes `.2` to complete.
    struct Timed(crate::engines::null::NullEngine, FakeClock, Duration);

    impl Engine for Timed {
        fn depth(&self) -> usize {
            self.0.depth()
        }
        fn queue(&mut self, slot: usize, rq: Request) -> std::io::Result<()> {
            self.0.queue(slot, rq)
        }
        fn submit_and_reap(
            &mut self,
            m: usize,
            f: &mut dyn FnMut(usize, i64),
        ) -> std::io::Result<()> {
            self.1.advance(self.2);
            self.0.submit_and_reap(m, f)
        }
    }

    /// One worker on a fake clock that moves only by the engine's service
    /// time and the burst delays; the window is from 1 s to 2 s. Returns
    /// what it measured and its live totals (I/Os, bytes).
    fn work_on_fake_clock(spec: DiskSpec, service: Duration) -> (One, (u64, u64)) {
        let clock = FakeClock::new(Default::default(), 0);
        let shared = Arc::new(Shared::new(1));
        let bs = spec.lines[0].bs;
        for (t, p) in [(1, Phase::Measure), (2, Phase::Stop)] {
            let sh = shared.clone();
            clock.at(Duration::from_secs(t), move || sh.phase.set(p));
        }
        let null = crate::engines::null::NullEngine::new(spec.qd as usize);
        let plan = WorkerPlan {
            index: 0,
            kind: EngineKind::Null,
            targets: vec![PlanTarget {
                path: "null".into(),
                region: crate::pattern::Region {
                    start: 0,
                    len: 1 << 20,
                },
                aligns: vec![bs],
                place: (0, 1),
            }],
            cpu: None,
            seed: 1,
            spec,
        };
        let engine = Box::new(Timed(null, clock.clone(), service));
        let out = work(&plan, engine, &shared, &clock).unwrap();
        let one = One {
            qd_achieved: out.qd_achieved,
            c: out.targets.into_iter().next().unwrap(),
        };
        (one, Live::totals(&shared.live))
    }

    /// A one-target worker's figures.
    struct One {
        c: Counts,
        qd_achieved: f64,
    }

    impl std::ops::Deref for One {
        type Target = Counts;
        fn deref(&self) -> &Counts {
            &self.c
        }
    }

    /// Bursts of 4 I/Os of 100 us, then 9.6 ms of delay: one burst every
    /// 10 ms, its I/Os completing 0.1-0.4 ms into it. Bursts 100-199
    /// complete inside the window, so exactly 400 I/Os are measured, of
    /// the 800 done.
    #[test]
    fn a_burst_spec_measures_an_exact_count_on_the_fake_clock() {
        let spec = read_pct(bursts(1, 4, 9_600), 50);
        let (out, live) = work_on_fake_clock(spec, Duration::from_micros(100));
        let (mean, qd) = (out.hist.mean(), out.qd_achieved);
        assert_eq!((out.reads + out.writes, out.hist.len()), (400, 400));
        assert_eq!(out.read_bytes + out.write_bytes, 400 * 4096);
        assert!(out.reads > 0 && out.writes > 0);
        assert_eq!(
            live,
            (800, 800 * 4096),
            "ramp-up I/Os are done, not measured"
        );
        assert!((mean - 100_000.0).abs() < 100.0, "{mean}");
        // From the first completion in the window (1000.1 ms) to its end
        // (2000 ms), 399 I/Os of 0.1 ms were outstanding.
        assert!((qd - 39.9 / 999.9).abs() < 1e-9, "{qd}");
        // Little's law on the exact clock: 400 I/O/s x 100 us.
        let little = littles_law_depth(400.0, mean / 1000.0);
        let tolerance = littles_law_tolerance(qd, 1.0, 100.0, 1.0);
        assert!((little - qd).abs() <= tolerance, "{little} {qd}");
    }

    /// `--burst-delay 10ms --burst-len 2 --qd 4` paces a worker to exactly
    /// 200 IOPS when its I/Os take no time (the CLI test can only bound
    /// it from above on a real clock).
    #[test]
    fn burst_pacing_is_exact_on_the_fake_clock() {
        let (out, (all_ios, _)) = work_on_fake_clock(bursts(4, 2, 10_000), Duration::ZERO);
        assert_eq!((out.reads + out.writes, all_ios), (200, 400));
    }

    /// Without bursts a worker keeps its queue full: 8 I/Os every 100 us,
    /// so 80,000 measured in the window, a depth of 8 by both counts.
    #[test]
    fn a_full_queue_meets_littles_law_exactly() {
        let (out, (all_ios, _)) = work_on_fake_clock(spec(8, 1), Duration::from_micros(100));
        assert_eq!((out.reads + out.writes, all_ios), (80_000, 160_000));
        assert!((out.qd_achieved - 8.0).abs() < 1e-9, "{}", out.qd_achieved);
        let little = littles_law_depth(80_000.0, out.hist.mean() / 1000.0);
        assert!((little - 8.0).abs() < 0.01, "{little}");
    }

    /// The run's figures are its workers' added up, histogram and depth too.
    #[test]
    fn merged_figures_are_the_workers_sums() {
        let outs = [bursts(1, 4, 9_600), spec(8, 1)]
            .map(|s| work_on_fake_clock(read_pct(s, 50), Duration::from_micros(100)).0);
        let figures = |o: &Counts| [o.reads, o.writes, o.read_bytes, o.write_bytes, o.hist.len()];
        let want: Vec<u64> = (0..5)
            .map(|i| outs.iter().map(|o| figures(o)[i]).sum())
            .collect();
        let qd: f64 = outs.iter().map(|o| o.qd_achieved).sum();
        let outs: Vec<_> = (outs.into_iter())
            .map(|o| {
                let mut w = WorkerOut::new(0, 1);
                (w.targets, w.qd_achieved) = (vec![o.c], o.qd_achieved);
                Ok(w)
            })
            .collect();
        let assigned = topology::assign(1, 2, false, None, &[0]);
        let (m, failure) = merge(outs, &assigned, 1, 1);
        assert!(failure.is_none(), "{failure:?}");
        assert_eq!((figures(&m.total).to_vec(), m.qd_achieved), (want, qd));
        assert_eq!(figures(&m.targets[0]), figures(&m.total));
    }

    /// A whole null run (3 workers, ramp 1 s, window 2 s) on the fake clock,
    /// its CPU `cpu`, Ctrl-C at `ctrl_c` after its start if given.
    fn run_fake(cpu: iotoll_model::CpuReport, ctrl_c: Option<u64>) -> Result<ResultDoc, DiskError> {
        let dir = tempfile::tempdir().unwrap();
        let spec = DiskSpec {
            targets: vec![dir.path().join("t.bin")],
            ..null_spec(spec(4, 3))
        };
        run_fake_with(read_pct(spec, 70), 3, cpu, ctrl_c)
    }

    /// `s` on the null engine over 1 MiB test files it creates, ramp 1 s,
    /// window 2 s.
    fn null_spec(s: DiskSpec) -> DiskSpec {
        DiskSpec {
            create: true,
            size: Some(1 << 20),
            engine: EngineChoice::Null,
            ramp: Duration::from_secs(1),
            time: Duration::from_secs(2),
            ..s
        }
    }

    /// Runs `spec`, which has `workers` workers in all, on the fake clock.
    fn run_fake_with(
        spec: DiskSpec,
        workers: u32,
        cpu: iotoll_model::CpuReport,
        ctrl_c: Option<u64>,
    ) -> Result<ResultDoc, DiskError> {
        // Each step of the main thread waits for 2 clock reads by each
        // worker and one more: one of them has then completed a batch in
        // that step.
        let clock = FakeClock::new(cpu, 2 * workers as u64 + 1);
        let flag = Arc::new(AtomicBool::new(false));
        if let Some(ms) = ctrl_c {
            let f = flag.clone();
            clock.at(Duration::from_millis(ms), move || {
                f.store(true, Ordering::Relaxed)
            });
        }
        let ctl = RunControl {
            interrupted: &flag,
            progress: &mut iotoll_run::Silent,
            schedule: None,
        };
        let t0 = clock.now();
        let r = run_on(&spec, ctl, clock.clone(), None);
        let took = clock.now() - t0;
        assert_eq!(
            took,
            Duration::from_millis(ctrl_c.map_or(3_000, |ms| ms.min(3_000)))
        );
        r
    }

    /// The window is exactly as long as asked, the series goes ramp ->
    /// measure, and the figures add up (rates x window = the I/Os in the
    /// latency histogram).
    #[test]
    fn a_null_run_on_the_fake_clock_accounts_exactly() {
        let cpu = iotoll_model::CpuReport {
            cpus: 2,
            busy_pct: 50.0,
            ..Default::default()
        };
        let doc = run_fake(cpu, None).unwrap();
        assert_eq!(
            (doc.status.as_str(), &doc.spec["engine"]),
            ("complete", &"null".into())
        );
        let m = &doc.metrics;
        assert_eq!((m[mn::WINDOW_S], m[mn::CPU_PCT]), (2.0, 50.0));
        assert_eq!(m[mn::READ_IOPS] + m[mn::WRITE_IOPS], m[mn::IOPS]);
        assert_eq!(m[mn::MB_S], m[mn::IOPS] * 4096.0 / 1e6);
        let lat = doc.latency.as_ref().expect("I/Os were measured");
        assert_eq!(lat.count as f64, m[mn::IOPS] * 2.0);
        assert_eq!(
            lat.histogram.iter().map(|b| b[1]).sum::<f64>(),
            lat.count as f64
        );
        // A point a second, at 1 s, 2 s and at the window's close (3 s):
        // the window's last second is a point too.
        let phases: Vec<&str> = doc.series.iter().map(|p| p.phase.as_str()).collect();
        assert_eq!(phases, ["ramp", "measure", "measure"]);
        // The measured points cover the window exactly (they missed its
        // last second: half of a 2 s window), so its seconds can add up to
        // its total.
        let mut prev = 0.0;
        let mut covered = 0.0;
        for p in &doc.series {
            if p.phase == "measure" {
                covered += p.t_s - prev;
            }
            prev = p.t_s;
        }
        assert!(
            (covered - m[mn::WINDOW_S]).abs() < 1e-6,
            "measured points cover {covered} s of a {} s window: {:?}",
            m[mn::WINDOW_S],
            doc.series
        );
        assert!(
            doc.notes.iter().all(|n| !n.contains("interrupted")),
            "{:?}",
            doc.notes
        );
    }

    /// A file's path, as the null engine records it.
    type FileId = std::path::PathBuf;
    /// The (file, request) pairs one worker's engine was asked for.
    type Asked = Vec<(FileId, Request)>;

    /// Two targets of 4 MiB, two workers each or two spread over both, a
    /// File Server mix: returns the document and, per worker, the files
    /// and requests its null engine was asked for.
    fn multi_target_run(spread: bool) -> (ResultDoc, Vec<FileId>, Vec<Asked>) {
        let dir = tempfile::tempdir().unwrap();
        let paths = vec![dir.path().join("a.tst"), dir.path().join("b.tst")];
        let mut s = DiskSpec {
            targets: paths.clone(),
            spread,
            buffered: true,
            size: Some(4 << 20),
            keep: true,
            ..null_spec(spec(4, 2))
        };
        s.apply_spec(crate::specs::find("iometer-file-server").unwrap());
        s.qd = 4;
        // The record is the whole process's: what earlier tests left goes.
        crate::engines::null::record::ASKED.lock().unwrap().clear();
        let workers = if spread { 2 } else { 4 };
        let doc = run_fake_with(s, workers, Default::default(), None).unwrap();
        let ids: Vec<FileId> = (paths.iter())
            .map(|p| std::fs::canonicalize(p).unwrap())
            .collect();
        let asked = crate::engines::null::record::ASKED.lock().unwrap().clone();
        let per_worker = (0..workers)
            .map(|w| {
                let me = format!("iotoll-disk-{w}");
                (asked.iter())
                    .filter(|a| a.thread == me && ids.contains(&a.file))
                    .map(|a| (a.file.clone(), a.rq))
                    .collect()
            })
            .collect();
        (doc, ids, per_worker)
    }

    /// Issue 11: the per-target, per-worker and per-line counts add up to
    /// the totals exactly; each target only received I/Os from its own
    /// workers, inside its region; each line's share of the I/Os is
    /// within 5 sigma of the share asked.
    #[test]
    fn several_targets_break_down_exactly() {
        for spread in [false, true] {
            let (doc, ids, asked) = multi_target_run(spread);
            let b = &doc;
            let total = doc.latency.as_ref().unwrap().count;
            let window = doc.metrics[mn::WINDOW_S];
            assert_eq!(window, 2.0);
            assert_eq!(doc.metrics[mn::IOPS] * window, total as f64);
            assert_eq!(b.targets.iter().map(|t| t.counts.ios()).sum::<u64>(), total);
            assert_eq!(b.workers.iter().map(|w| w.counts.ios()).sum::<u64>(), total);
            assert_eq!(b.lines.iter().map(|l| l.ios).sum::<u64>(), total);
            let all_bytes: u64 = b.targets.iter().map(|t| t.counts.bytes()).sum();
            assert_eq!(
                b.workers.iter().map(|w| w.counts.bytes()).sum::<u64>(),
                all_bytes
            );
            assert_eq!(b.lines.iter().map(|l| l.bytes).sum::<u64>(), all_bytes);
            // MB/s x window is the bytes, to float rounding.
            let mb = doc.metrics[mn::MB_S] * window * 1e6;
            assert!(
                (mb - all_bytes as f64).abs() <= 1e-9 * mb,
                "{mb} vs {all_bytes}"
            );
            assert_eq!(doc.spec["spread"].as_bool().unwrap_or(false), spread);
            assert_eq!(doc.spec["ntargets"], 2);
            // Who had which target: two workers each, or both spread over both.
            let workers: Vec<Vec<u32>> = b.targets.iter().map(|t| t.workers.clone()).collect();
            let want = if spread {
                [[0, 1], [0, 1]]
            } else {
                [[0, 1], [2, 3]]
            };
            assert_eq!(workers, want);
            for (w, asked) in asked.iter().enumerate() {
                let mine: Vec<&FileId> = b.workers[w]
                    .targets
                    .iter()
                    .map(|&t| &ids[t as usize])
                    .collect();
                for (file, rq) in asked {
                    assert!(
                        mine.contains(&file),
                        "worker {w} did I/O on a target not its own"
                    );
                    assert!(rq.offset + rq.len as u64 <= 4 << 20, "{rq:?}");
                    assert_eq!(
                        mine[rq.file], file,
                        "the engine's file index is the target's"
                    );
                }
            }
            // (A worker may be starved of the fake clock's steps on a busy
            // host and do nothing; the CLI test checks on the real clock
            // that every target gets I/O.)
            assert!(asked.iter().any(|a| !a.is_empty()), "no I/O recorded");
            for l in &b.lines {
                let p = l.share_pct as f64 / 100.0;
                let sigma = (p * (1.0 - p) / total as f64).sqrt();
                assert!(
                    (l.ios_pct / 100.0 - p).abs() < 5.0 * sigma,
                    "{l:?} of {total}"
                );
            }
        }
    }

    /// Ctrl-C half a second into the window: an interrupted result over
    /// that half second; in the ramp-up: nothing to report.
    #[test]
    fn ctrl_c_on_the_fake_clock() {
        let doc = run_fake(Default::default(), Some(1_500)).unwrap();
        assert_eq!(
            (doc.status.as_str(), doc.metrics[mn::WINDOW_S]),
            ("interrupted", 0.5)
        );
        let want = "interrupted after 0.5 s of the 2 s window";
        assert!(
            doc.notes.iter().any(|n| n.starts_with(want)),
            "{:?}",
            doc.notes
        );
        let r = run_fake(Default::default(), Some(500));
        assert!(
            matches!(r, Err(DiskError::Interrupted("during ramp-up"))),
            "{r:?}"
        );
    }

    /// The notes on the depth kept: (metrics, workers at --qd 32, engine,
    /// what the one note says if there is one).
    #[test]
    fn depth_notes_check_the_queue_and_littles_law() {
        let short = |qd| metrics(&[(mn::WINDOW_S, 10.0), (mn::QD_ACHIEVED, qd)]);
        let (uring, psync) = (EngineKind::IoUring, EngineKind::Psync);
        let cases = [
            // 400k IOPS x 79.5 us = 31.8 outstanding, measured 31.9 of 32.
            (depth_metrics(400_000.0, 79.5, 31.9), 1, uring, vec![]),
            // 301k IOPS x 73 us = 22 outstanding while 32 were in flight:
            // the latency was timed over the wrong interval.
            (
                depth_metrics(301_000.0, 73.0, 31.9),
                1,
                uring,
                vec!["Little's law check failed", "21.97"],
            ),
            // 22 of 32 outstanding, consistently timed: the queue was not full.
            (
                depth_metrics(301_000.0, 73.0, 22.0),
                1,
                uring,
                vec!["below the 32 I/Os requested"],
            ),
            // psync keeps one I/O per worker, whatever --qd says.
            (short(1.9), 2, psync, vec![]),
            (short(1.5), 2, psync, vec!["below the 2 I/Os requested"]),
        ];
        for (m, workers, kind, want) in cases {
            let assigned = topology::assign(1, workers, false, None, &[0]);
            let notes = depth_notes(&spec(32, workers), kind, &assigned, &m, 0);
            assert_eq!(notes.len(), usize::from(!want.is_empty()), "{notes:?}");
            for w in want {
                assert!(notes[0].contains(w), "{w:?} not in {notes:?}");
            }
        }
    }
}
