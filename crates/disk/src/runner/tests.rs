use super::*;
use iotoll_run::FakeClock;
use std::sync::atomic::AtomicBool;

fn metrics(pairs: &[(&str, f64)]) -> Metrics {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

/// A 10 s window with a 2 ms maximum latency, `edge` of the depth `qd` at
/// its edges (the rest is `qd_completed`).
fn depth_metrics(iops: f64, lat_mean_us: f64, qd: f64, edge: f64) -> Metrics {
    metrics(&[
        (mn::WINDOW_S, 10.0),
        (mn::IOPS, iops),
        (mn::LAT_MEAN_US, lat_mean_us),
        (mn::LAT_MAX_US, 2_000.0),
        (mn::QD_ACHIEVED, qd),
        (mn::QD_COMPLETED, qd - edge),
    ])
}

fn spec(qd: u32, workers: u32) -> DiskRequest {
    DiskRequest {
        qd,
        workers,
        ..DiskRequest::default()
    }
}

/// One worker at `qd`, `burst_len` I/Os a burst, `delay_us` before each.
fn bursts(qd: u32, burst_len: u32, delay_us: u64) -> DiskRequest {
    let mut s = spec(qd, 1);
    s.lines[0].burst_len = burst_len;
    s.lines[0].burst_delay = Duration::from_micros(delay_us);
    s
}

fn read_pct(mut s: DiskRequest, pct: u32) -> DiskRequest {
    s.lines[0].read_pct = pct;
    s
}

/// Issue 9: an engine error mid-run (here io_uring_enter failing with
/// EIO, injected, while the worker waits with 8 I/Os handed to the
/// kernel: io_uring submits each I/O in `queue`, so the failing call is
/// the wait) ends the run at once as failed, saying what failed (the
/// call, the I/Os in flight, the errno) rather than "engine ... is not
/// available", and the engine drains all 8 in-flight I/Os before its
/// buffers are freed.
#[test]
fn engine_failure_mid_run_fails_the_run_naming_what_failed() {
    if !crate::engines::io_uring::tests::ring_or_skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("target.bin");
    let f = std::fs::File::create(&path).unwrap();
    f.set_len(4 << 20).unwrap();
    crate::engines::io_uring::test_fault::arm(&f, 100, libc::EIO);
    let spec = DiskRequest {
        targets: vec![path.clone()],
        qd: 8,
        engine: EngineChoice::IoUring,
        buffered: true,
        ramp: Duration::ZERO,
        time: Duration::from_secs(120),
        ..DiskRequest::default()
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
        "the workload failed: worker 0: io_uring: waiting for the completions of 8 I/O(s) in flight failed",
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

/// The null engine on a fake clock: each batch takes `.2` to complete;
/// with a stall `.3` (at, for how long), the first batch due at or after
/// `at` is seen that much later, as by a worker descheduled then; `.4`:
/// whether it says it submits in `queue` (as io_uring does).
struct Timed(
    crate::engines::null::NullEngine,
    FakeClock,
    Duration,
    Option<(Instant, Duration)>,
    bool,
);

impl Engine for Timed {
    fn depth(&self) -> usize {
        self.0.depth()
    }
    fn queue(&mut self, slot: usize, rq: Request) -> std::io::Result<()> {
        self.0.queue(slot, rq)
    }
    fn submits_on_queue(&self) -> bool {
        self.4
    }
    fn submit_and_reap(&mut self, m: usize, f: &mut dyn FnMut(usize, i64)) -> std::io::Result<()> {
        self.1.advance(self.2);
        if let Some((at, long)) = self.3 {
            if self.1.now() >= at {
                self.1.advance(long);
                self.3 = None;
            }
        }
        self.0.submit_and_reap(m, f)
    }
}

/// One worker on a fake clock that moves only by the engine's service
/// time and the burst delays; the window is from 1 s to 2 s. Returns
/// what it measured and its live totals (I/Os, bytes).
fn work_on_fake_clock(spec: DiskRequest, service: Duration) -> (One, (u64, u64)) {
    work_stalled(spec, service, None, false)
}

/// [`work_on_fake_clock`] with a stall of the worker (at, for how long).
fn work_stalled(
    spec: DiskRequest,
    service: Duration,
    stall: Option<(Duration, Duration)>,
    eager: bool,
) -> (One, (u64, u64)) {
    let clock = FakeClock::new(Default::default(), 0);
    let stall = stall.map(|(at, long)| (clock.now() + at, long));
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
    let engine = Box::new(Timed(null, clock.clone(), service, stall, eager));
    let out = work(&plan, engine, &shared, &clock).unwrap();
    let one = One {
        qd_achieved: out.qd_achieved,
        lat_io_s: out.lat_io_s,
        c: out.targets.into_iter().next().unwrap(),
    };
    (one, Live::totals(&shared.live))
}

/// A one-target worker's figures.
struct One {
    c: Counts,
    qd_achieved: f64,
    lat_io_s: f64,
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
    assert_eq!((out.read.ios + out.write.ios, out.hist.len()), (400, 400));
    assert_eq!(out.read.bytes + out.write.bytes, 400 * 4096);
    assert!(out.read.ios > 0 && out.write.ios > 0);
    assert_eq!(
        live,
        (800, 800 * 4096),
        "ramp-up I/Os are done, not measured"
    );
    assert!((mean - 100_000.0).abs() < 100.0, "{mean}");
    // From the first completion in the window (1000.1 ms) to its end
    // (2000 ms), 399 I/Os of 0.1 ms were outstanding.
    assert!((qd - 39.9 / 999.9).abs() < 1e-9, "{qd}");
    // Little's law on the exact clock: 400 I/O/s x 100 us; the occupancy
    // count has the same 400 x 100 us of latency, its edges taken off: the
    // first I/O's 0.1 ms before its batch and the 0 outstanding at the end.
    let little = littles_law_depth(400.0, mean / 1000.0);
    assert!((out.lat_io_s - 0.04).abs() < 1e-12, "{}", out.lat_io_s);
    assert!(
        (little - out.lat_io_s).abs() <= littles_law_rounding(qd),
        "{little} {qd}"
    );
}

/// `--burst-delay 10ms --burst-len 2 --qd 4` paces a worker to exactly
/// 200 IOPS when its I/Os take no time (the CLI test can only bound
/// it from above on a real clock).
#[test]
fn burst_pacing_is_exact_on_the_fake_clock() {
    let (out, (all_ios, _)) = work_on_fake_clock(bursts(4, 2, 10_000), Duration::ZERO);
    assert_eq!((out.read.ios + out.write.ios, all_ios), (200, 400));
}

/// Without bursts a worker keeps its queue full: 8 I/Os every 100 us,
/// so 80,000 measured in the window, a depth of 8 by both counts; the
/// same whether the engine submits in `queue` (io_uring, each I/O
/// stamped there) or in `submit_and_reap`.
#[test]
fn a_full_queue_meets_littles_law_exactly() {
    for eager in [false, true] {
        let (out, (all_ios, _)) = work_stalled(spec(8, 1), Duration::from_micros(100), None, eager);
        assert_eq!((out.read.ios + out.write.ios, all_ios), (80_000, 160_000));
        assert!(
            (out.qd_achieved - 8.0).abs() < 1e-9,
            "{eager}: {}",
            out.qd_achieved
        );
        // 80,000 x 100 us by the occupancy count, edges taken off.
        assert!(
            (out.lat_io_s - 8.0).abs() < 1e-9,
            "{eager}: {}",
            out.lat_io_s
        );
        let little = littles_law_depth(80_000.0, out.hist.mean() / 1000.0);
        assert!((little - 8.0).abs() < 0.01, "{eager}: {little}");
    }
}

/// A worker descheduled for 100 ms across the window's end (from 1.95 s):
/// its 8 I/Os are outstanding to 2.05 s, in the depth, but have no latency
/// in the window. The depth is 8, IOPS x mean latency 7.6: the edge
/// (0.4) is measured, and Little's law holds with it exactly.
#[test]
fn a_stall_across_the_end_is_measured_as_an_edge() {
    let ms = Duration::from_millis;
    let (out, _) = work_stalled(
        spec(8, 1),
        Duration::from_micros(100),
        Some((ms(1950), ms(100))),
        false,
    );
    assert!((out.qd_achieved - 8.0).abs() < 1e-9, "{}", out.qd_achieved);
    let ios = out.read.ios + out.write.ios;
    assert_eq!(ios, 76_000);
    assert!((out.lat_io_s - 7.6).abs() < 1e-9, "{}", out.lat_io_s);
    let m = metrics(&[
        (mn::WINDOW_S, 1.0),
        (mn::IOPS, ios as f64),
        (mn::LAT_MEAN_US, out.hist.mean() / 1000.0),
        (mn::LAT_MAX_US, out.hist.max() as f64 / 1000.0),
        (mn::QD_ACHIEVED, out.qd_achieved),
        (mn::QD_COMPLETED, out.lat_io_s),
    ]);
    let assigned = topology::assign(1, 1, false, None, &[0]);
    let notes = depth_notes(&spec(8, 1), EngineKind::Null, &assigned, &m, 0);
    assert!(notes.is_empty(), "{notes:?}");
    // Without the edge, the check would call the latency wrong.
    let mut m = m;
    m.remove(mn::QD_COMPLETED);
    let notes = depth_notes(&spec(8, 1), EngineKind::Null, &assigned, &m, 0);
    assert!(notes[0].contains("Little's law check failed"), "{notes:?}");
}

/// The run's figures are its workers' added up, histogram and depth too.
#[test]
fn merged_figures_are_the_workers_sums() {
    let outs = [bursts(1, 4, 9_600), spec(8, 1)]
        .map(|s| work_on_fake_clock(read_pct(s, 50), Duration::from_micros(100)).0);
    let figures = |o: &Counts| {
        [
            o.read.ios,
            o.write.ios,
            o.read.bytes,
            o.write.bytes,
            o.hist.len(),
        ]
    };
    let want: Vec<u64> = (0..5)
        .map(|i| outs.iter().map(|o| figures(o)[i]).sum())
        .collect();
    let per_worker: Vec<_> = outs
        .iter()
        .map(|o| (o.c.counts(), o.c.metrics(2.0)))
        .collect();
    let qd: f64 = outs.iter().map(|o| o.qd_achieved).sum();
    let lat_io_s: f64 = outs.iter().map(|o| o.lat_io_s).sum();
    let outs: Vec<_> = (outs.into_iter())
        .map(|o| {
            let mut w = WorkerOut::new(0, 1);
            (w.targets, w.qd_achieved, w.lat_io_s) = (vec![o.c], o.qd_achieved, o.lat_io_s);
            Ok(w)
        })
        .collect();
    let assigned = topology::assign(1, 2, false, None, &[0]);
    let (m, failure) = merge(outs, &assigned, 1, 1, 2.0);
    assert!(failure.is_none(), "{failure:?}");
    assert_eq!(m.workers, per_worker);
    assert_eq!((figures(&m.total).to_vec(), m.qd_achieved), (want, qd));
    assert_eq!(m.lat_io_s, lat_io_s);
    assert_eq!(figures(&m.targets[0]), figures(&m.total));
}

/// A whole null run (3 workers, ramp 1 s, window 2 s) on the fake clock,
/// its CPU `cpu`, Ctrl-C at `ctrl_c` after its start if given.
fn run_fake(cpu: iotoll_model::CpuReport, ctrl_c: Option<u64>) -> Result<ResultDoc, DiskError> {
    let dir = tempfile::tempdir().unwrap();
    let spec = DiskRequest {
        targets: vec![dir.path().join("t.bin")],
        ..null_spec(spec(4, 3))
    };
    run_fake_with(read_pct(spec, 70), 3, cpu, ctrl_c)
}

/// `s` on the null engine over 1 MiB test files it creates, ramp 1 s,
/// window 2 s.
fn null_spec(s: DiskRequest) -> DiskRequest {
    DiskRequest {
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
    spec: DiskRequest,
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

fn half_busy() -> iotoll_model::CpuReport {
    iotoll_model::CpuReport {
        cpus: 2,
        busy_pct: 50.0,
        ..Default::default()
    }
}

/// A run's reads and writes have response times of their own, which
/// weighted by their counts give the mean of all.
#[test]
fn reads_and_writes_have_their_own_response_times() {
    let doc = run_fake(half_busy(), None).unwrap();
    let m = &doc.metrics;
    let (reads, writes) = (m[mn::READ_IOPS] * 2.0, m[mn::WRITE_IOPS] * 2.0);
    assert!(reads > 0.0 && writes > 0.0, "{m:?}");
    // The two means weighted by their counts are the mean of all
    // (which the histogram holds to its precision, 0.1 %).
    let parts = m[mn::READ_LAT_MEAN_US] * reads + m[mn::WRITE_LAT_MEAN_US] * writes;
    let all = m[mn::LAT_MEAN_US] * (reads + writes);
    assert!((parts - all).abs() <= 2e-3 * all, "{parts} vs {all}");
    // The larger maximum is the maximum (the histogram's bucket holds it).
    let max = m[mn::READ_LAT_MAX_US].max(m[mn::WRITE_LAT_MAX_US]);
    let lat_max = m[mn::LAT_MAX_US];
    assert!(
        max <= lat_max && lat_max <= max * 1.002 + 0.001,
        "{max} vs {lat_max}"
    );
    for k in [mn::READ_LAT_MEAN_US, mn::WRITE_LAT_MEAN_US] {
        assert!(m[k] >= m[mn::LAT_MIN_US] * 0.998 && m[k] <= lat_max, "{k}");
    }
}

/// The window is exactly as long as asked, the series goes ramp ->
/// measure, and the figures add up (rates x window = the I/Os in the
/// latency histogram).
#[test]
fn a_null_run_on_the_fake_clock_accounts_exactly() {
    let doc = run_fake(half_busy(), None).unwrap();
    let engine = doc.spec.disk().unwrap().engine.as_str();
    assert_eq!((doc.status.as_str(), engine), ("complete", "null"));
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
    let mut s = DiskRequest {
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
        let s = doc.spec.disk().unwrap();
        assert_eq!((s.spread, s.ntargets), (spread, Some(2)));
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
        (depth_metrics(400_000.0, 79.5, 31.9, 0.0), 1, uring, vec![]),
        // 301k IOPS x 73 us = 22 outstanding while 32 were in flight, none
        // of them at the edges: the latency was timed over the wrong
        // interval.
        (
            depth_metrics(301_000.0, 73.0, 31.9, 0.0),
            1,
            uring,
            vec!["Little's law check failed", "21.97", "measured 31.90"],
        ),
        // The same with 9.9 of the 31.9 outstanding across the window's end
        // (a worker descheduled there): the latency is right.
        (depth_metrics(301_000.0, 73.0, 31.9, 9.9), 1, uring, vec![]),
        // 9.9 at the edges but 5 more missing: still wrongly timed.
        (
            depth_metrics(251_000.0, 73.0, 31.9, 9.9),
            1,
            uring,
            vec!["Little's law check failed", "18.32", "measured 22.00"],
        ),
        // 22 of 32 outstanding, consistently timed: the queue was not full.
        (
            depth_metrics(301_000.0, 73.0, 22.0, 0.0),
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
