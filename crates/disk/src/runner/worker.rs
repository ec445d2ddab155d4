//! The worker: its hot loop keeps QD I/Os in flight on its targets and
//! counts the completions inside the window (fio's io_u and backend).

use super::*;

/// Sets `Shared::failed` if the worker ends by panicking.
pub(super) struct PanicFlag<'a>(&'a Shared);

impl Drop for PanicFlag<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.failed.store(true, Ordering::Release);
        }
    }
}

/// The reads (or the writes) of one target in the window: how many, their
/// bytes, and their summed and largest response times (ns), for their
/// means and maxima apart (Iometer's read and write response times).
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Dir {
    pub(super) ios: u64,
    pub(super) bytes: u64,
    pub(super) ns: u64,
    pub(super) max_ns: u64,
}

impl Dir {
    fn add(&mut self, o: &Dir) {
        self.ios += o.ios;
        self.bytes += o.bytes;
        self.ns += o.ns;
        self.max_ns = self.max_ns.max(o.max_ns);
    }

    /// One I/O of `len` bytes that took `ns`.
    #[inline]
    fn record(&mut self, len: u64, ns: u64) {
        self.ios += 1;
        self.bytes += len;
        self.ns = self.ns.saturating_add(ns);
        self.max_ns = self.max_ns.max(ns);
    }
}

/// What was done on one target (by one worker, or in all) in the window;
/// the histogram holds the reads' and the writes' response times.
pub(super) struct Counts {
    pub(super) read: Dir,
    pub(super) write: Dir,
    pub(super) errors: u64,
    pub(super) hist: Histogram<u64>,
}

impl Counts {
    pub(super) fn new() -> Self {
        Counts {
            read: Dir::default(),
            write: Dir::default(),
            errors: 0,
            hist: new_histogram(),
        }
    }

    pub(super) fn add(&mut self, o: &Counts) {
        self.read.add(&o.read);
        self.write.add(&o.write);
        self.errors += o.errors;
        // Same bounds on both sides, so adding cannot fail.
        let _ = self.hist.add(&o.hist);
    }

    pub(super) fn counts(&self) -> IoCounts {
        IoCounts {
            reads: self.read.ios,
            writes: self.write.ios,
            read_bytes: self.read.bytes,
            write_bytes: self.write.bytes,
        }
    }

    /// The rates, errors and latency of these counts over the window: the
    /// totals' metrics, or a part's.
    pub(super) fn metrics(&self, window_s: f64) -> Metrics {
        let mut m = Metrics::new();
        let mut put = |k: &str, v: f64| {
            m.insert(k.to_string(), v);
        };
        put(mn::ERRORS, self.errors as f64);
        if window_s > 0.0 {
            let c = self.counts();
            put(mn::IOPS, c.ios() as f64 / window_s);
            put(mn::READ_IOPS, self.read.ios as f64 / window_s);
            put(mn::WRITE_IOPS, self.write.ios as f64 / window_s);
            put(mn::MB_S, c.bytes() as f64 / window_s / 1e6);
            put(mn::READ_MB_S, self.read.bytes as f64 / window_s / 1e6);
            put(mn::WRITE_MB_S, self.write.bytes as f64 / window_s / 1e6);
            put(mn::MIB_S, c.bytes() as f64 / window_s / 1048576.0);
        }
        write_latency_metrics(&self.hist, "lat", &mut m);
        let us = |ns: u64| ns as f64 / 1000.0;
        for (d, mean_k, max_k) in [
            (&self.read, mn::READ_LAT_MEAN_US, mn::READ_LAT_MAX_US),
            (&self.write, mn::WRITE_LAT_MEAN_US, mn::WRITE_LAT_MAX_US),
        ] {
            if d.ios > 0 {
                m.insert(mean_k.to_string(), us(d.ns) / d.ios as f64);
                m.insert(max_k.to_string(), us(d.max_ns));
            }
        }
        m
    }
}

/// What one worker measured inside the window.
pub(super) struct WorkerOut {
    /// Per target of the worker, in its order.
    pub(super) targets: Vec<Counts>,
    /// I/Os and bytes of each access-spec line.
    pub(super) lines: Vec<(u64, u64)>,
    pub(super) first_error: Option<String>,
    /// Mean I/Os outstanding over the worker's view of the window.
    pub(super) qd_achieved: f64,
    /// The summed latencies (s) of the I/Os it measured as its occupancy
    /// count has them: the integral over its view of the window, less the
    /// edges (`occupancy::ages`). Little's law compares it with theirs.
    pub(super) lat_io_s: f64,
    /// The CPUs it was seen on in the window.
    pub(super) ran_on: Vec<u32>,
    /// What its engine had to say at the end (`Engine::report`).
    pub(super) engine_note: Option<String>,
}

impl WorkerOut {
    pub(super) fn new(targets: usize, lines: usize) -> Self {
        WorkerOut {
            targets: (0..targets).map(|_| Counts::new()).collect(),
            lines: vec![(0, 0); lines],
            first_error: None,
            qd_achieved: 0.0,
            lat_io_s: 0.0,
            ran_on: Vec::new(),
            engine_note: None,
        }
    }
}

/// One of a worker's targets.
pub(super) struct PlanTarget {
    /// The target's path, for messages.
    pub(super) path: String,
    pub(super) region: crate::pattern::Region,
    /// Each line's alignment on it.
    pub(super) aligns: Vec<u64>,
    /// The worker's place among the target's workers, and their number.
    pub(super) place: (u32, u32),
}

pub(super) struct WorkerPlan {
    pub(super) index: u32,
    pub(super) kind: EngineKind,
    pub(super) spec: DiskRequest,
    pub(super) targets: Vec<PlanTarget>,
    pub(super) cpu: Option<u32>,
    pub(super) seed: u64,
}

/// One worker: pin itself, set up its engine, report readiness, then keep
/// QD I/Os in flight on each target until told to stop, counting only
/// completions inside the window.
pub(super) fn worker(
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
pub(super) fn io_desc(rq: &Request, target: &str) -> String {
    format!(
        "{} of {} bytes at offset {} on {target}",
        if rq.read { "read" } else { "write" },
        rq.len,
        rq.offset
    )
}

/// The worker loop on a ready engine.
pub(super) fn work(
    plan: &WorkerPlan,
    mut engine: Box<dyn Engine>,
    shared: &Shared,
    clock: &impl Clock,
) -> Result<WorkerOut, String> {
    let mut w = Loop::new(plan, engine.depth(), shared, clock);
    w.eager = engine.submits_on_queue();
    let live = &shared.live[plan.index as usize];
    loop {
        // After a failure (here or in another worker) no new I/O starts;
        // those in flight are reaped.
        let failed = shared.failed.load(Ordering::Relaxed);
        if shared.phase.get() != Phase::Stop && !failed {
            w.refill(&mut *engine)?;
        }
        let batch_io = w.stamp_pending();
        if w.occ.outstanding() == 0 {
            if failed || shared.phase.get() == Phase::Stop {
                break;
            }
            continue;
        }
        w.reap(&mut *engine, batch_io)?;
        live.publish(w.all_ios, w.all_bytes);
    }
    Ok(w.finish(&*engine))
}

/// The state of a worker's loop: its slots (one per I/O the engine can
/// hold), the I/Os drawn for them, and what it counted.
struct Loop<'a, C: Clock> {
    plan: &'a WorkerPlan,
    shared: &'a Shared,
    clock: &'a C,
    gens: Vec<IoGen>,
    /// Each target has `qd` slots of its own (slot s serves target s % nt,
    /// so the first fill goes round-robin); an engine with fewer slots
    /// than targets (psync) takes the targets in turn.
    fixed: bool,
    /// The engine submits each I/O as it is queued (io_uring): its start
    /// is stamped just before `queue`, not in `stamp_pending`.
    eager: bool,
    turn: usize,
    issued_at: Vec<Instant>,
    reqs: Vec<Request>,
    line_of: Vec<usize>,
    /// An I/O drawn for a slot but held back by a burst delay.
    held: Vec<Option<(usize, Io)>>,
    free: Vec<usize>,
    /// Slots queued since the last submission.
    pending: Vec<usize>,
    /// I/Os outstanding over time, and its integral at the first batch
    /// seen inside the window and at the first one seen after it.
    occ: Occupancy,
    mark_start: Option<Mark>,
    mark_end: Option<Mark>,
    bursting: bool,
    in_burst: u32,
    stall: Stall,
    /// The burst delay's multiplier ([`noise_scale`]; 1 outside tests).
    delay_scale: u32,
    all_ios: u64,
    all_bytes: u64,
    out: WorkerOut,
}

impl<'a, C: Clock> Loop<'a, C> {
    fn new(plan: &'a WorkerPlan, depth: usize, shared: &'a Shared, clock: &'a C) -> Self {
        let spec = &plan.spec;
        let gens: Vec<IoGen> = (plan.targets.iter().enumerate())
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
        let t0 = clock.now();
        Loop {
            plan,
            shared,
            clock,
            gens,
            fixed: depth >= nt,
            eager: false,
            turn: 0,
            issued_at: vec![t0; depth],
            reqs: vec![Request::default(); depth],
            line_of: vec![0; depth],
            held: vec![None; depth],
            free: (0..depth).rev().collect(),
            pending: Vec::with_capacity(depth),
            occ: Occupancy::new(t0),
            mark_start: None,
            mark_end: None,
            bursting: spec.lines.iter().any(|l| !l.burst_delay.is_zero()),
            in_burst: 0,
            stall: Stall::armed(),
            delay_scale: noise_scale(),
            all_ios: 0,
            all_bytes: 0,
            out: WorkerOut::new(nt, spec.lines.len()),
        }
    }

    fn name(&self, file: usize) -> &str {
        self.plan.targets[file].path.as_str()
    }

    /// Queues an I/O in every free slot (a burst delay may hold one back).
    fn refill(&mut self, engine: &mut dyn Engine) -> Result<(), String> {
        let nt = self.gens.len();
        while let Some(slot) = self.free.pop() {
            let (file, io) = match self.held[slot].take() {
                Some(h) => h,
                None => {
                    let file = if self.fixed { slot % nt } else { self.turn };
                    self.turn = (self.turn + 1) % nt;
                    (file, self.gens[file].next_io())
                }
            };
            let line = &self.plan.spec.lines[io.line];
            if self.bursting && !line.burst_delay.is_zero() && self.in_burst >= line.burst_len {
                // Iometer's transfer delay: wait before each burst, after
                // the previous burst has completed.
                self.held[slot] = Some((file, io));
                if self.occ.outstanding() > 0 || !self.pending.is_empty() {
                    self.free.push(slot);
                    break;
                }
                let delay = line.burst_delay * self.delay_scale;
                sleep_unless_stopped(delay, self.shared, self.clock);
                self.in_burst = 0;
                if self.shared.phase.get() == Phase::Stop {
                    self.free.push(slot);
                    break;
                }
                self.held[slot] = None;
            }
            let rq = Request {
                file,
                read: io.read,
                offset: io.offset,
                len: io.len as usize,
            };
            if self.eager {
                // Handed to the kernel inside `queue`: its latency and its
                // place in the occupancy count start here.
                let t = self.clock.now();
                self.issued_at[slot] = t;
                self.occ.started(t);
            }
            engine.queue(slot, rq).map_err(|e| {
                format!(
                    "worker {}: {}: queueing a {} failed: {e}",
                    self.plan.index,
                    self.plan.kind.name(),
                    io_desc(&rq, self.name(file))
                )
            })?;
            self.reqs[slot] = rq;
            self.line_of[slot] = io.line;
            self.in_burst += 1;
            if !self.eager {
                self.pending.push(slot);
            }
        }
        Ok(())
    }

    /// Starts the latency clock of the slots queued since the last
    /// submission; returns the first of them and how many, for an error
    /// message.
    fn stamp_pending(&mut self) -> Option<(usize, usize)> {
        let batch_io = self.pending.first().map(|s| (*s, self.pending.len()));
        if !self.pending.is_empty() {
            // An engine that submits in `submit_and_reap` (iSCSI, psync,
            // null) starts every refill there: their latency starts just
            // before that call. io_uring submits each I/O in `queue` and is
            // stamped in `refill` instead (docs/disk.md, "How iotoll
            // submits").
            let t = self.clock.now();
            for slot in self.pending.drain(..) {
                self.issued_at[slot] = t;
                self.occ.started(t);
            }
        }
        batch_io
    }

    /// Submits what is queued, waits for at least one completion and
    /// counts every completion seen.
    fn reap(
        &mut self,
        engine: &mut dyn Engine,
        batch_io: Option<(usize, usize)>,
    ) -> Result<(), String> {
        // Completion time and phase are read once per batch, the moment the
        // completions are seen: they all completed before we woke, and finer
        // stamps would not be truer.
        let mut batch: Option<(Instant, Phase)> = None;
        let mut n = 0u64;
        let mut failed_slot = None;
        let (clock, shared) = (self.clock, self.shared);
        let reaped = engine.submit_and_reap(1, &mut |slot: usize, res: IoResult| {
            let (t, phase) = *batch.get_or_insert_with(|| {
                self.stall.fire();
                (clock.now(), shared.phase.get())
            });
            n += 1;
            if self.complete(slot, res, t, phase) {
                failed_slot = Some(slot);
            }
        });
        reaped.map_err(|e| {
            let what = match batch_io {
                Some((slot, n)) => format!(
                    "submitting {n} I/O(s) (the first a {}) failed",
                    io_desc(&self.reqs[slot], self.name(self.reqs[slot].file))
                ),
                None => format!(
                    "waiting for the completions of {} I/O(s) in flight failed",
                    self.occ.outstanding()
                ),
            };
            format!(
                "worker {}: {}: {what}: {e}",
                self.plan.index,
                self.plan.kind.name()
            )
        })?;
        // The engine may know why better than the errno (SCSI sense).
        if let (Some(slot), Some(first)) = (failed_slot, self.out.first_error.as_mut()) {
            if let Some(why) = engine.explain(slot) {
                first.push_str(&format!(" ({why})"));
            }
        }
        if let Some((t, phase)) = batch {
            self.mark(t, phase, n as usize);
            self.occ.completed(t, n);
        }
        Ok(())
    }

    /// Counts one completion seen at `t` in `phase`; true when it is the
    /// run's first failed I/O.
    #[inline]
    fn complete(&mut self, slot: usize, res: IoResult, t: Instant, phase: Phase) -> bool {
        self.free.push(slot);
        let rq = &self.reqs[slot];
        let len = rq.len as u64;
        let ok = res == len as i64;
        self.all_ios += 1;
        if ok {
            self.all_bytes += len;
        }
        let mut first_failure = false;
        let c = &mut self.out.targets[rq.file];
        if !ok && phase != Phase::Stop {
            // A failed I/O fails the run, in the ramp-up too, and stops
            // it: the figures could only get less true.
            self.shared.failed.store(true, Ordering::Release);
            c.errors += 1;
            if self.out.first_error.is_none() {
                first_failure = true;
                let io = io_desc(rq, self.plan.targets[rq.file].path.as_str());
                self.out.first_error = Some(if res < 0 {
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
            return first_failure;
        }
        let ns = (t.duration_since(self.issued_at[slot]).as_nanos() as u64).max(1);
        c.hist.saturating_record(ns);
        let dir = if rq.read { &mut c.read } else { &mut c.write };
        dir.record(len, ns);
        let l = &mut self.out.lines[self.line_of[slot]];
        l.0 += 1;
        l.1 += len;
        first_failure
    }

    /// Marks the integral of I/Os outstanding at the first batch seen in
    /// the window and the first seen after it, with the edges there, and
    /// the CPU the worker ran on in the window. `n` completions of the
    /// batch seen at `t` have freed their slots.
    fn mark(&mut self, t: Instant, phase: Phase, n: usize) {
        match phase {
            Phase::Measure if self.mark_start.is_none() => self.mark_start = Some(self.at(t, n)),
            Phase::Stop if self.mark_start.is_some() && self.mark_end.is_none() => {
                self.mark_end = Some(self.at(t, n))
            }
            _ => {}
        }
        if phase == Phase::Measure {
            // Where the worker really ran, not where it was asked to.
            if let Some(cpu) = iotoll_probe::affinity::current_cpu() {
                if !self.out.ran_on.contains(&cpu) {
                    self.out.ran_on.push(cpu);
                }
            }
        }
    }

    /// The integral and the edge at `t`, the last `n` free slots freed by
    /// the completions seen then: only at the two marks, so the hot path
    /// carries nothing for the edges.
    fn at(&self, t: Instant, n: usize) -> Mark {
        // Outstanding just before the batch: every slot not free before it.
        let mut outstanding = vec![true; self.issued_at.len()];
        for &s in &self.free[..self.free.len() - n] {
            outstanding[s] = false;
        }
        let stamps = (self.issued_at.iter().zip(outstanding))
            .filter_map(|(stamp, out)| out.then_some(*stamp));
        Mark {
            t,
            io_s: self.occ.io_seconds_at(t),
            edge_s: ages(t, stamps),
        }
    }

    /// The worker's figures: its mean queue depth over its view of the
    /// window and its measured I/Os' latencies by that count, the CPUs it
    /// ran on, its engine's note.
    fn finish(mut self, engine: &dyn Engine) -> WorkerOut {
        if let Some(m0) = self.mark_start {
            let m1 = (self.mark_end).unwrap_or_else(|| self.at(self.clock.now(), 0));
            // The worker's own view of the window starts and ends a little
            // after the probe's (at the first batch it reaps in each
            // phase), so its mean is taken over that span. A worker
            // descheduled across the window's end extends it: its I/Os
            // stay outstanding until it sees them complete.
            let span = m1.t.saturating_duration_since(m0.t).as_secs_f64();
            if span > 0.0 {
                self.out.qd_achieved = (m1.io_s - m0.io_s) / span;
            }
            self.out.lat_io_s = (m1.io_s - m1.edge_s) - (m0.io_s - m0.edge_s);
        }
        self.out.ran_on.sort_unstable();
        self.out.engine_note = engine.report();
        self.out
    }
}

/// The occupancy integral (I/O-seconds) at an instant a worker marks, and
/// the summed ages then of its I/Os outstanding (`occupancy::ages`).
#[derive(Clone, Copy)]
struct Mark {
    t: Instant,
    io_s: f64,
    edge_s: f64,
}

/// Test-only fault injection, in builds with the `test-hooks` feature (the
/// test suite's; never a release): with `IOTOLL_INJECT_FAULT=disk-stall@MS`
/// in its environment, each worker, the first time it wakes to completions
/// MS ms or more after it started, sleeps 600 ms before it looks at them,
/// as a worker the scheduler does not run on a busy host would; its I/Os
/// stay outstanding meanwhile. Tests place the stall across an edge of the
/// window. Without the variable (and in a release) it is never armed.
struct Stall(Option<Instant>);

impl Stall {
    fn armed() -> Self {
        let ms = cfg!(feature = "test-hooks")
            .then(|| std::env::var("IOTOLL_INJECT_FAULT").ok())
            .flatten()
            .and_then(|v| v.strip_prefix("disk-stall@")?.parse().ok());
        Stall(ms.map(|ms| Instant::now() + Duration::from_millis(ms)))
    }

    /// Once per batch, before the batch's time stamp.
    #[inline]
    fn fire(&mut self) {
        if self.0.is_some_and(|at| Instant::now() >= at) {
            self.0 = None;
            std::thread::sleep(Duration::from_millis(600));
        }
    }
}

/// Test-only noise, in builds with the `test-hooks` feature: with
/// `IOTOLL_INJECT_FAULT=disk-noise`, the burst delay of each worker started
/// in this process is scaled by the next of 1, 3, 2, 4 (then again), so
/// runs of one spec with a burst delay differ by up to 4× in IOPS, as on a
/// host whose load comes and goes: `--confidence` must not converge on
/// them. Without the variable (and in a release) the scale is 1.
fn noise_scale() -> u32 {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let armed = cfg!(feature = "test-hooks")
        && std::env::var("IOTOLL_INJECT_FAULT").is_ok_and(|v| v == "disk-noise");
    if !armed {
        return 1;
    }
    [1, 3, 2, 4][RUNS.fetch_add(1, Ordering::Relaxed) % 4]
}

pub(super) fn sleep_unless_stopped(d: Duration, shared: &Shared, clock: &impl Clock) {
    let until = clock.now() + d;
    while shared.phase.get() != Phase::Stop {
        let left = until.saturating_duration_since(clock.now());
        if left.is_zero() {
            return;
        }
        clock.sleep(left.min(Duration::from_millis(50)));
    }
}
