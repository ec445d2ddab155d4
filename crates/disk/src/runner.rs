//! Runs one disk workload: workers with their engines, ramp-up, the
//! measurement window with its whole-host CPU snapshots, the one-second
//! series, and the result document.

use crate::engines::{self, EngineKind, IoResult};
use crate::occupancy::{littles_law_depth, littles_law_tolerance, Occupancy};
use crate::pattern::IoGen;
use crate::rng::Rng;
use crate::spec::{DiskSpec, EngineChoice};
use crate::target::{self, Target};
use crate::DiskError;
use hdrhistogram::Histogram;
use iotoll_model::metrics as mn;
use iotoll_model::{derive_metrics, CpuSection, Kind, Metrics, ResultDoc, ResultStatus};
use iotoll_probe::{
    latency_report, new_histogram, wait_until, Counting, CpuWindow, Phase, PhaseCell, RunControl,
    SeriesRecorder,
};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Barrier};
use std::time::{Duration, Instant, SystemTime};

/// Counters a worker publishes for the live series, on its own cache line.
#[repr(align(128))]
#[derive(Default)]
struct Live {
    ios: AtomicU64,
    bytes: AtomicU64,
}

struct Shared {
    phase: PhaseCell,
    live: Vec<Live>,
    /// A worker failed (an engine error or a panic): the run stops.
    failed: std::sync::atomic::AtomicBool,
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

impl Shared {
    fn phase(&self) -> Phase {
        self.phase.get()
    }

    fn set(&self, p: Phase) {
        self.phase.set(p);
    }
}

/// What one worker measured inside the window.
struct WorkerOut {
    reads: u64,
    writes: u64,
    read_bytes: u64,
    write_bytes: u64,
    errors: u64,
    first_error: Option<String>,
    hist: Histogram<u64>,
    /// Mean I/Os outstanding over the worker's view of the window.
    qd_achieved: f64,
}

impl WorkerOut {
    fn new() -> Self {
        WorkerOut {
            reads: 0,
            writes: 0,
            read_bytes: 0,
            write_bytes: 0,
            errors: 0,
            first_error: None,
            hist: new_histogram(),
            qd_achieved: 0.0,
        }
    }
}

struct WorkerPlan {
    index: u32,
    /// The target's path, for messages.
    target: String,
    kind: EngineKind,
    spec: DiskSpec,
    region: crate::pattern::Region,
    align: u64,
    seed: u64,
}

/// One worker: set up its engine, report readiness, then keep QD I/Os in
/// flight until told to stop, counting only completions inside the window.
fn worker(
    plan: WorkerPlan,
    file: std::fs::File,
    shared: Arc<Shared>,
    start: Arc<Barrier>,
    ready: mpsc::Sender<Result<Option<String>, String>>,
) -> Result<WorkerOut, String> {
    let _flag = PanicFlag(&shared);
    let r = work(plan, file, &shared, start, ready);
    if r.is_err() {
        shared.failed.store(true, Ordering::Release);
    }
    r
}

/// What an I/O was, for messages: "write of 4096 bytes at offset 8192 on PATH".
fn io_desc(read: bool, bs: usize, offset: u64, target: &str) -> String {
    format!(
        "{} of {bs} bytes at offset {offset} on {target}",
        if read { "read" } else { "write" }
    )
}

fn work(
    plan: WorkerPlan,
    file: std::fs::File,
    shared: &Shared,
    start: Arc<Barrier>,
    ready: mpsc::Sender<Result<Option<String>, String>>,
) -> Result<WorkerOut, String> {
    let spec = &plan.spec;
    let bs = spec.bs as usize;
    let setup = plan.kind.open(file, spec.qd as usize, bs, plan.seed);
    let (mut engine, note) = match setup {
        Ok(x) => x,
        Err(e) => {
            let msg = format!(
                "worker {}: cannot set up {}: {e}",
                plan.index,
                plan.kind.name()
            );
            let _ = ready.send(Err(msg.clone()));
            start.wait();
            return Err(msg);
        }
    };
    let _ = ready.send(Ok(note));
    start.wait();

    let mut gen = IoGen::new(
        plan.region,
        spec.bs,
        plan.align,
        spec.read_pct,
        spec.random_pct,
        plan.index,
        spec.workers,
        plan.seed ^ 0x5EED,
    );
    let depth = engine.depth();
    let t0 = Instant::now();
    let mut issued_at = vec![t0; depth];
    let mut is_read = vec![false; depth];
    let mut offset_of = vec![0u64; depth];
    let target = plan.target.as_str();
    let mut free: Vec<usize> = (0..depth).rev().collect();
    let mut pending: Vec<usize> = Vec::with_capacity(depth);
    // I/Os outstanding over time, and its integral at the first batch seen
    // inside the window and at the first one seen after it.
    let mut occ = Occupancy::new(t0);
    let (mut mark_start, mut mark_end) = (None::<(Instant, f64)>, None::<(Instant, f64)>);
    let bursting = !spec.burst_delay.is_zero();
    let mut in_burst = 0u32;
    let live = &shared.live[plan.index as usize];
    let (mut all_ios, mut all_bytes) = (0u64, 0u64);
    let mut out = WorkerOut::new();

    loop {
        // After a failure (here or in another worker) no new I/O starts;
        // those in flight are reaped.
        let failed = shared.failed.load(Ordering::Relaxed);
        if shared.phase() != Phase::Stop && !failed {
            while let Some(slot) = free.pop() {
                if bursting && in_burst == spec.burst_len {
                    // Iometer's transfer delay: wait before each burst, after
                    // the previous burst has completed.
                    if occ.outstanding() > 0 || !pending.is_empty() {
                        free.push(slot);
                        break;
                    }
                    sleep_unless_stopped(spec.burst_delay, shared);
                    in_burst = 0;
                    if shared.phase() == Phase::Stop {
                        free.push(slot);
                        break;
                    }
                }
                let io = gen.next_io();
                engine.queue(slot, io.read, io.offset).map_err(|e| {
                    format!(
                        "worker {}: {}: queueing a {} failed: {e}",
                        plan.index,
                        engine.name(),
                        io_desc(io.read, bs, io.offset, target)
                    )
                })?;
                is_read[slot] = io.read;
                offset_of[slot] = io.offset;
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
            let t = Instant::now();
            for slot in pending.drain(..) {
                issued_at[slot] = t;
                occ.started(t);
            }
        }
        if occ.outstanding() == 0 {
            if failed || shared.phase() == Phase::Stop {
                break;
            }
            continue;
        }
        // Completion time and phase are read once per batch, the moment the
        // completions are seen: they all completed before we woke, and finer
        // stamps would not be truer.
        let mut batch: Option<(Instant, Phase)> = None;
        let mut n = 0u64;
        engine
            .submit_and_reap(1, &mut |slot: usize, res: IoResult| {
                let (t, phase) = *batch.get_or_insert_with(|| (Instant::now(), shared.phase()));
                n += 1;
                free.push(slot);
                let ok = res == bs as i64;
                all_ios += 1;
                if ok {
                    all_bytes += bs as u64;
                }
                if !ok && phase != Phase::Stop {
                    // A failed I/O fails the run, in the ramp-up too, and
                    // stops it: the figures could only get less true.
                    shared.failed.store(true, Ordering::Release);
                    out.errors += 1;
                    if out.first_error.is_none() {
                        let io = io_desc(is_read[slot], bs, offset_of[slot], target);
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
                out.hist.saturating_record(ns.max(1));
                if is_read[slot] {
                    out.reads += 1;
                    out.read_bytes += bs as u64;
                } else {
                    out.writes += 1;
                    out.write_bytes += bs as u64;
                }
            })
            .map_err(|e| {
                let what = match batch_io {
                    Some((slot, n)) => format!(
                        "submitting {n} I/O(s) (the first a {}) failed",
                        io_desc(is_read[slot], bs, offset_of[slot], target)
                    ),
                    None => format!(
                        "waiting for the completions of {} I/O(s) in flight on {target} failed",
                        occ.outstanding()
                    ),
                };
                format!("worker {}: {}: {what}: {e}", plan.index, engine.name())
            })?;
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
            occ.completed(t, n);
        }
        live.ios.store(all_ios, Ordering::Relaxed);
        live.bytes.store(all_bytes, Ordering::Relaxed);
    }
    if let Some((t0, a0)) = mark_start {
        let (t1, a1) = mark_end.unwrap_or_else(|| {
            let t = Instant::now();
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
    Ok(out)
}

fn sleep_unless_stopped(d: Duration, shared: &Shared) {
    let until = Instant::now() + d;
    while shared.phase() != Phase::Stop {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        std::thread::sleep(left.min(Duration::from_millis(50)));
    }
}

/// Chooses the engine; a fallback is only taken when the user did not ask
/// for io_uring by name, and it is always noted.
fn choose_engine(choice: EngineChoice, notes: &mut Vec<String>) -> Result<EngineKind, DiskError> {
    match choice {
        EngineChoice::Psync => Ok(EngineKind::Psync),
        EngineChoice::IoUring => engines::io_uring::probe()
            .map(|_| EngineKind::IoUring)
            .map_err(|msg| DiskError::EngineUnavailable {
                engine: "io_uring",
                msg,
            }),
        EngineChoice::Auto => match engines::io_uring::probe() {
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

impl Shared {
    /// Running totals over all workers (I/Os, bytes), for the series.
    fn totals(&self) -> (u64, u64) {
        self.live.iter().fold((0, 0), |(i, b), l| {
            (
                i + l.ios.load(Ordering::Relaxed),
                b + l.bytes.load(Ordering::Relaxed),
            )
        })
    }

    /// Waits until `until` while sampling the series; false if interrupted.
    fn wait(
        &self,
        until: Instant,
        series: &mut SeriesRecorder,
        ctl: &mut RunControl,
        total: Duration,
    ) -> bool {
        wait_until(until, ctl.interrupted, || {
            series.poll(self.phase(), || self.totals(), ctl.progress, total);
            (!self.failed.load(Ordering::Acquire)).then(|| series.next_due())
        })
    }
}

/// Runs the workload and returns its result document. On Ctrl-C during the
/// measurement window the result covers the part measured and its status
/// is `interrupted`; before the window there is nothing to report.
pub fn run(spec: &DiskSpec, mut ctl: RunControl) -> Result<ResultDoc, DiskError> {
    spec.validate()?;
    let mut notes = Vec::new();
    let kind = choose_engine(spec.engine, &mut notes)?;
    let target = {
        let progress = &mut *ctl.progress;
        target::prepare(spec, ctl.interrupted, &mut |d, t| progress.preparing(d, t))?
    };
    if kind == EngineKind::Psync && spec.qd > 1 {
        notes.push(format!(
            "the psync engine keeps one I/O in flight per worker; --qd {} has no effect",
            spec.qd
        ));
    }
    if spec.buffered {
        notes.push("buffered I/O: the page cache serves or absorbs I/Os, so results describe memory as much as the device".into());
    }

    let shared = Arc::new(Shared {
        phase: PhaseCell::new(Phase::Ramp),
        live: (0..spec.workers).map(|_| Live::default()).collect(),
        failed: Default::default(),
    });
    let start = Arc::new(Barrier::new(spec.workers as usize + 1));
    let (ready_tx, ready_rx) = mpsc::channel();
    let base_seed = Rng::seed_from_time(spec.bs);
    let mut handles = Vec::new();
    for w in 0..spec.workers {
        let file = target.open_for_io()?;
        let plan = WorkerPlan {
            index: w,
            target: target.path.display().to_string(),
            kind,
            spec: spec.clone(),
            region: target.region,
            align: target.align,
            seed: base_seed
                .wrapping_add(w as u64)
                .wrapping_mul(0x9E37_79B9_7F4A_7C15),
        };
        let (sh, st, tx) = (shared.clone(), start.clone(), ready_tx.clone());
        let h = std::thread::Builder::new()
            .name(format!("iotoll-disk-{w}"))
            .spawn(move || worker(plan, file, sh, st, tx))
            .map_err(|e| DiskError::io("starting worker thread", e))?;
        handles.push(h);
    }
    drop(ready_tx);
    let mut setup_err = None;
    for r in ready_rx.iter().take(spec.workers as usize) {
        match r {
            Ok(Some(n)) if !notes.contains(&n) => notes.push(n),
            Ok(_) => {}
            Err(e) => setup_err = setup_err.or(Some(e)),
        }
    }
    if setup_err.is_some() {
        shared.set(Phase::Stop);
    }
    start.wait();
    if let Some(msg) = setup_err {
        join_all(handles);
        return Err(DiskError::EngineUnavailable {
            engine: kind.name(),
            msg,
        });
    }

    let total = spec.ramp + spec.time;
    let mut series = SeriesRecorder::new(Counting::DiskIo);
    if !shared.wait(series.t_run() + spec.ramp, &mut series, &mut ctl, total) {
        shared.set(Phase::Stop);
        let outs = join_all(handles);
        if !shared.failed.load(Ordering::Acquire) {
            return Err(DiskError::Interrupted("during ramp-up"));
        }
        // A worker failed before the window: no figures but the failure.
        let started_at = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
        let (merged, failure) = merge(outs);
        let doc = Doc {
            spec,
            target: &target,
            kind,
            started_at,
            merged: &merged,
            window_s: 0.0,
            cpu: None,
            series,
            notes,
            status: ResultStatus::Failed,
        }
        .build();
        let why = failure.unwrap_or_else(|| "a worker failed".into());
        return Err(failed(why, doc));
    }
    let started_at = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let window = CpuWindow::start_with(|| shared.set(Phase::Measure))?;
    let measure_end = Instant::now() + spec.time;
    let completed = shared.wait(measure_end, &mut series, &mut ctl, total);
    let closed = window.finish_with(|| shared.set(Phase::Stop));
    let outs = join_all(handles);
    let (merged, failure) = merge(outs);
    if !completed && failure.is_none() {
        notes.push(format!(
            "interrupted after {:.1} s of the {} s window; figures cover the part measured",
            closed.window_s,
            spec.time.as_secs_f64()
        ));
    }
    let cpu = match closed.report {
        Ok(r) => {
            notes.extend(r.notes.iter().cloned());
            Some(r)
        }
        Err(e) => {
            notes.push(format!("CPU not measured: {e}"));
            None
        }
    };
    let status = match (&failure, completed) {
        (Some(_), _) => ResultStatus::Failed,
        (None, true) => ResultStatus::Complete,
        (None, false) => ResultStatus::Interrupted,
    };
    let doc = Doc {
        spec,
        target: &target,
        kind,
        started_at,
        merged: &merged,
        window_s: closed.window_s,
        cpu,
        series,
        notes,
        status,
    }
    .build();
    match failure {
        Some(f) => Err(failed(f, doc)),
        None => Ok(doc),
    }
}

/// The workers' figures added up, and why the run failed if it did: a
/// worker that failed (its engine failed mid-run, or it panicked), or any
/// I/O that failed before the window closed.
fn merge(outs: Vec<Result<WorkerOut, String>>) -> (WorkerOut, Option<String>) {
    let mut merged = WorkerOut::new();
    let mut failure = None;
    for o in outs {
        let o = match o {
            Ok(o) => o,
            Err(msg) => {
                failure.get_or_insert(msg);
                continue;
            }
        };
        merged.reads += o.reads;
        merged.writes += o.writes;
        merged.read_bytes += o.read_bytes;
        merged.write_bytes += o.write_bytes;
        merged.errors += o.errors;
        merged.qd_achieved += o.qd_achieved;
        merged.first_error = merged.first_error.or(o.first_error);
        // Same bounds on both sides, so adding cannot fail.
        let _ = merged.hist.add(&o.hist);
    }
    if failure.is_none() && merged.errors > 0 {
        failure = Some(format!(
            "{} I/O(s) failed; the first: {}",
            merged.errors,
            merged.first_error.as_deref().unwrap_or("unknown")
        ));
    } else if merged.errors > 0 {
        failure = failure.map(|f| {
            format!(
                "{f}; besides, {} I/O(s) failed, the first: {}",
                merged.errors,
                merged.first_error.as_deref().unwrap_or("unknown")
            )
        });
    }
    (merged, failure)
}

fn failed(why: String, mut doc: ResultDoc) -> DiskError {
    let msg = format!("the workload failed: {why}");
    doc.notes.insert(0, format!("failed: {why}"));
    DiskError::Failed {
        msg,
        doc: Box::new(doc),
    }
}

/// Everything a result document is made of.
struct Doc<'a> {
    spec: &'a DiskSpec,
    target: &'a Target,
    kind: EngineKind,
    started_at: String,
    merged: &'a WorkerOut,
    window_s: f64,
    cpu: Option<iotoll_model::CpuReport>,
    series: SeriesRecorder,
    notes: Vec<String>,
    status: ResultStatus,
}

impl Doc<'_> {
    fn build(self) -> ResultDoc {
        let metrics = disk_metrics(self.merged, self.window_s, self.cpu.as_ref());
        let mut notes = self.notes;
        notes.extend(depth_notes(
            self.spec,
            self.kind,
            &metrics,
            self.merged.errors,
        ));
        ResultDoc {
            iotoll_version: iotoll_model::VERSION.to_string(),
            kind: Kind::Disk,
            status: self.status,
            started_at: self.started_at,
            config: self.spec.config.clone(),
            spec: spec_json(self.spec, self.target, self.kind),
            metrics,
            cpu: CpuSection {
                local: self.cpu,
                remote: None,
                same_host: None,
            },
            latency: latency_report(&self.merged.hist),
            series: self.series.into_points(),
            notes,
            disclosure: None,
        }
    }
}

fn join_all(
    handles: Vec<std::thread::JoinHandle<Result<WorkerOut, String>>>,
) -> Vec<Result<WorkerOut, String>> {
    handles
        .into_iter()
        .map(|h| {
            h.join()
                .unwrap_or_else(|_| Err("worker thread panicked".into()))
        })
        .collect()
}

fn disk_metrics(o: &WorkerOut, window_s: f64, cpu: Option<&iotoll_model::CpuReport>) -> Metrics {
    let mut m = Metrics::new();
    let mut put = |k: &str, v: f64| {
        m.insert(k.to_string(), v);
    };
    put(mn::WINDOW_S, window_s);
    put(mn::ERRORS, o.errors as f64);
    if window_s > 0.0 {
        let ios = (o.reads + o.writes) as f64;
        let bytes = (o.read_bytes + o.write_bytes) as f64;
        put(mn::IOPS, ios / window_s);
        put(mn::READ_IOPS, o.reads as f64 / window_s);
        put(mn::WRITE_IOPS, o.writes as f64 / window_s);
        put(mn::MB_S, bytes / window_s / 1e6);
        put(mn::READ_MB_S, o.read_bytes as f64 / window_s / 1e6);
        put(mn::WRITE_MB_S, o.write_bytes as f64 / window_s / 1e6);
        put(mn::MIB_S, bytes / window_s / 1048576.0);
        put(mn::QD_ACHIEVED, o.qd_achieved);
    }
    let h = &o.hist;
    if !h.is_empty() {
        let us = |ns: u64| ns as f64 / 1000.0;
        put(mn::LAT_MEAN_US, h.mean() / 1000.0);
        put(mn::LAT_MIN_US, us(h.min()));
        put(mn::LAT_MAX_US, us(h.max()));
        put(mn::LAT_P50_US, us(h.value_at_quantile(0.50)));
        put(mn::LAT_P90_US, us(h.value_at_quantile(0.90)));
        put(mn::LAT_P99_US, us(h.value_at_quantile(0.99)));
        put(mn::LAT_P999_US, us(h.value_at_quantile(0.999)));
        put(mn::LAT_P9999_US, us(h.value_at_quantile(0.9999)));
    }
    if let Some(c) = cpu {
        c.write_metrics(&mut m, "");
    }
    derive_metrics(&mut m);
    m
}

/// The queue depth kept, and the Little's-law check of the timing: when
/// IOPS × mean latency disagrees with the measured depth, latency was not
/// timed over the interval the I/Os were outstanding.
fn depth_notes(spec: &DiskSpec, kind: EngineKind, m: &Metrics, errors: u64) -> Vec<String> {
    let mut notes = Vec::new();
    let get = |k: &str| m.get(k).copied();
    let per_worker = if kind == EngineKind::Psync {
        1
    } else {
        spec.qd
    };
    let requested = (per_worker * spec.workers) as f64;
    let (Some(qd), Some(window_s)) = (get(mn::QD_ACHIEVED), get(mn::WINDOW_S)) else {
        return notes;
    };
    if spec.burst_delay.is_zero() && qd < 0.9 * requested {
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

fn spec_json(spec: &DiskSpec, t: &Target, kind: EngineKind) -> serde_json::Value {
    use iotoll_model::spec::{to_json, word};
    to_json(&iotoll_model::spec::DiskSpec {
        spec: spec.spec_name.clone(),
        target: t.path.display().to_string(),
        target_kind: word(&t.kind),
        target_size: t.size,
        bs: spec.bs,
        read_pct: spec.read_pct,
        random_pct: spec.random_pct,
        qd: spec.qd,
        workers: spec.workers,
        size: t.region.len,
        offset: t.region.start,
        align: t.align,
        logical_block_size: t.logical_block,
        burst_delay_s: spec.burst_delay.as_secs_f64(),
        burst_len: spec.burst_len,
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

    fn metrics(pairs: &[(&str, f64)]) -> Metrics {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    fn spec(qd: u32, workers: u32) -> DiskSpec {
        DiskSpec {
            qd,
            workers,
            ..DiskSpec::default()
        }
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
        let dir = std::env::temp_dir().join(format!("iotoll-runner-fault-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("target.bin");
        let f = std::fs::File::create(&path).unwrap();
        f.set_len(4 << 20).unwrap();
        crate::engines::io_uring::test_fault::arm(&f, 100, libc::EIO);
        let spec = DiskSpec {
            target: Some(path.clone()),
            bs: 4096,
            read_pct: 100,
            random_pct: 100,
            qd: 8,
            engine: EngineChoice::IoUring,
            buffered: true,
            ramp: Duration::ZERO,
            time: Duration::from_secs(120),
            ..DiskSpec::default()
        };
        let stop = std::sync::atomic::AtomicBool::new(false);
        let mut silent = iotoll_probe::Silent;
        let t0 = Instant::now();
        let r = run(
            &spec,
            RunControl {
                interrupted: &stop,
                progress: &mut silent,
            },
        );
        let took = t0.elapsed();
        let drops = crate::engines::io_uring::test_fault::drops(&f);
        let _ = std::fs::remove_dir_all(&dir);
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

    #[test]
    fn consistent_run_has_no_depth_notes() {
        // 400k IOPS x 79.5 us = 31.8 outstanding, measured 31.9 of 32.
        let m = metrics(&[
            (mn::WINDOW_S, 10.0),
            (mn::IOPS, 400_000.0),
            (mn::LAT_MEAN_US, 79.5),
            (mn::LAT_MAX_US, 2_000.0),
            (mn::QD_ACHIEVED, 31.9),
        ]);
        assert!(depth_notes(&spec(32, 1), EngineKind::IoUring, &m, 0).is_empty());
    }

    #[test]
    fn the_issue_example_fails_the_check() {
        // 301k IOPS x 73 us = 22 outstanding while 32 were in flight: the
        // latency was timed over the wrong interval.
        let m = metrics(&[
            (mn::WINDOW_S, 10.0),
            (mn::IOPS, 301_000.0),
            (mn::LAT_MEAN_US, 73.0),
            (mn::LAT_MAX_US, 2_000.0),
            (mn::QD_ACHIEVED, 31.9),
        ]);
        let notes = depth_notes(&spec(32, 1), EngineKind::IoUring, &m, 0);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].contains("Little's law check failed"), "{notes:?}");
        assert!(notes[0].contains("21.97"), "{notes:?}");
    }

    #[test]
    fn a_queue_kept_short_is_noted() {
        // 22 of 32 outstanding, consistently timed: the queue was not full.
        let m = metrics(&[
            (mn::WINDOW_S, 10.0),
            (mn::IOPS, 301_000.0),
            (mn::LAT_MEAN_US, 73.0),
            (mn::LAT_MAX_US, 2_000.0),
            (mn::QD_ACHIEVED, 22.0),
        ]);
        let notes = depth_notes(&spec(32, 1), EngineKind::IoUring, &m, 0);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].contains("below the 32 I/Os requested"),
            "{notes:?}"
        );
        // psync keeps one I/O per worker, whatever --qd says.
        let m = metrics(&[(mn::WINDOW_S, 10.0), (mn::QD_ACHIEVED, 1.9)]);
        assert!(depth_notes(&spec(32, 2), EngineKind::Psync, &m, 0).is_empty());
        let m = metrics(&[(mn::WINDOW_S, 10.0), (mn::QD_ACHIEVED, 1.5)]);
        assert_eq!(depth_notes(&spec(32, 2), EngineKind::Psync, &m, 0).len(), 1);
    }
}
