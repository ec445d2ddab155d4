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
use iotoll_model::{derive_metrics, CpuSection, Metrics, ResultDoc};
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
        if shared.phase() != Phase::Stop {
            while let Some(slot) = free.pop() {
                if bursting && in_burst == spec.burst_len {
                    // Iometer's transfer delay: wait before each burst, after
                    // the previous burst has completed.
                    if occ.outstanding() > 0 || !pending.is_empty() {
                        free.push(slot);
                        break;
                    }
                    sleep_unless_stopped(spec.burst_delay, &shared);
                    in_burst = 0;
                    if shared.phase() == Phase::Stop {
                        free.push(slot);
                        break;
                    }
                }
                let io = gen.next_io();
                engine
                    .queue(slot, io.read, io.offset)
                    .map_err(|e| format!("worker {}: queueing I/O: {e}", plan.index))?;
                is_read[slot] = io.read;
                in_burst += 1;
                pending.push(slot);
            }
        }
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
            if shared.phase() == Phase::Stop {
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
                if phase != Phase::Measure {
                    return;
                }
                if !ok {
                    out.errors += 1;
                    if out.first_error.is_none() {
                        out.first_error = Some(if res < 0 {
                            std::io::Error::from_raw_os_error(-res as i32).to_string()
                        } else {
                            format!("short transfer of {res} of {bs} bytes")
                        });
                    }
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
            .map_err(|e| format!("worker {}: {}: {e}", plan.index, engine.name()))?;
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
            Some(series.next_due())
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
    });
    let start = Arc::new(Barrier::new(spec.workers as usize + 1));
    let (ready_tx, ready_rx) = mpsc::channel();
    let base_seed = Rng::seed_from_time(spec.bs);
    let mut handles = Vec::new();
    for w in 0..spec.workers {
        let file = target.open_for_io()?;
        let plan = WorkerPlan {
            index: w,
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
        join_all(handles);
        return Err(DiskError::Interrupted("during ramp-up"));
    }
    let started_at = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let window = CpuWindow::start_with(|| shared.set(Phase::Measure))?;
    let measure_end = Instant::now() + spec.time;
    let completed = shared.wait(measure_end, &mut series, &mut ctl, total);
    let closed = window.finish_with(|| shared.set(Phase::Stop));
    let outs = join_all(handles);

    let mut merged = WorkerOut::new();
    for o in outs {
        let o = o.map_err(|msg| DiskError::EngineUnavailable {
            engine: kind.name(),
            msg,
        })?;
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
    if !completed {
        notes.push(format!(
            "interrupted after {:.1} s of the {} s window; figures cover the part measured",
            closed.window_s,
            spec.time.as_secs_f64()
        ));
    }
    if merged.errors > 0 {
        notes.push(format!(
            "{} I/Os failed; first error: {}",
            merged.errors,
            merged.first_error.as_deref().unwrap_or("unknown")
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
    let metrics = disk_metrics(&merged, closed.window_s, cpu.as_ref());
    notes.extend(depth_notes(spec, kind, &metrics, merged.errors));
    Ok(ResultDoc {
        iotoll_version: iotoll_model::VERSION.to_string(),
        kind: "disk".into(),
        status: if completed { "complete" } else { "interrupted" }.into(),
        started_at,
        config: spec.config.clone(),
        spec: spec_json(spec, &target, kind),
        metrics,
        cpu: CpuSection {
            local: cpu,
            remote: None,
            same_host: None,
        },
        latency: latency_report(&merged.hist),
        series: series.into_points(),
        notes,
        disclosure: None,
    })
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
    serde_json::json!({
        "spec": spec.spec_name,
        "target": t.path.display().to_string(),
        "target_kind": t.kind,
        "target_size": t.size,
        "bs": spec.bs,
        "read_pct": spec.read_pct,
        "random_pct": spec.random_pct,
        "qd": spec.qd,
        "workers": spec.workers,
        "size": t.region.len,
        "offset": t.region.start,
        "align": t.align,
        "logical_block_size": t.logical_block,
        "burst_delay_s": spec.burst_delay.as_secs_f64(),
        "burst_len": spec.burst_len,
        "engine": kind.name(),
        "engine_requested": spec.engine,
        "direct": t.direct,
        "ramp_s": spec.ramp.as_secs_f64(),
        "time_s": spec.time.as_secs_f64(),
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
