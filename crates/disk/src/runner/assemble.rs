//! The result of a run: the workers' counts merged, the metrics, the
//! per-target, per-worker and per-line parts, and the notes on depth and
//! pinning (fio's stat).

use super::*;

/// The workers' figures added up: in all, per target, per worker, per line.
pub(super) struct Merged {
    pub(super) total: Counts,
    pub(super) targets: Vec<Counts>,
    /// Each worker's counts and metrics, worked out as it is merged: a
    /// latency histogram is 270 KiB, and a worker's is not kept past that.
    pub(super) workers: Vec<(IoCounts, Metrics)>,
    pub(super) ran_on: Vec<Vec<u32>>,
    pub(super) lines: Vec<(u64, u64)>,
    pub(super) qd_achieved: f64,
    /// The measured I/Os' latencies (s) by the workers' occupancy counts.
    pub(super) lat_io_s: f64,
    /// The engines' end-of-run notes, each once.
    pub(super) engine_notes: Vec<String>,
}

/// The workers' figures added up, and why the run failed if it did: a
/// worker that failed (its engine failed mid-run, or it panicked), or any
/// I/O that failed before the window closed.
pub(super) fn merge(
    outs: Vec<Result<WorkerOut, String>>,
    assigned: &[Assignment],
    ntargets: usize,
    nlines: usize,
    window_s: f64,
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
        lat_io_s: 0.0,
        engine_notes: Vec::new(),
    };
    for (o, a) in outs.into_iter().zip(assigned) {
        let mine = match o {
            Ok(o) => {
                for (c, &t) in o.targets.iter().zip(&a.targets) {
                    m.total.add(c);
                    m.targets[t].add(c);
                }
                for (l, o) in m.lines.iter_mut().zip(&o.lines) {
                    (l.0, l.1) = (l.0 + o.0, l.1 + o.1);
                }
                m.qd_achieved += o.qd_achieved;
                m.lat_io_s += o.lat_io_s;
                first_error = first_error.or(o.first_error);
                m.ran_on.push(o.ran_on);
                if let Some(n) = o.engine_note {
                    if !m.engine_notes.contains(&n) {
                        m.engine_notes.push(n);
                    }
                }
                // The worker's targets added up, onto the first: a worker
                // of one target is that target's counts, and no histogram
                // of its own is built.
                let mut targets = o.targets.into_iter();
                let mut mine = targets.next().unwrap_or_else(Counts::new);
                targets.for_each(|c| mine.add(&c));
                mine
            }
            Err(e) => {
                failure = failure.or(Some(e));
                m.ran_on.push(Vec::new());
                Counts::new()
            }
        };
        m.workers.push((mine.counts(), mine.metrics(window_s)));
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

pub(super) fn disk_metrics(
    o: &Merged,
    window_s: f64,
    cpu: Option<&iotoll_model::CpuReport>,
) -> Metrics {
    let mut m = o.total.metrics(window_s);
    m.insert(mn::WINDOW_S.to_string(), window_s);
    if window_s > 0.0 {
        m.insert(mn::QD_ACHIEVED.to_string(), o.qd_achieved);
        // The depth IOPS x mean latency should be: the measured I/Os by
        // the occupancy count, the edges taken off.
        m.insert(mn::QD_COMPLETED.to_string(), o.lat_io_s / window_s);
    }
    if let Some(c) = cpu {
        c.write_metrics(&mut m, "");
    }
    derive_metrics(&mut m);
    m
}

/// Per target, per worker and per line, over the window.
pub(super) struct Parts {
    pub(super) targets: Vec<TargetFigures>,
    pub(super) workers: Vec<WorkerFigures>,
    pub(super) lines: Vec<LineFigures>,
}

pub(super) fn breakdown(
    m: &Merged,
    spec: &DiskRequest,
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
            .map(|(w, ((a, (counts, metrics)), ran_on))| WorkerFigures {
                id: w as u32,
                cpu: match ran_on.as_slice() {
                    [one] => Some(*one),
                    _ => None,
                },
                ran_on: ran_on.clone(),
                pinned: a.cpu,
                pinned_busy_pct: a.cpu.and_then(busy),
                targets: a.targets.iter().map(|t| *t as u32).collect(),
                counts: counts.clone(),
                metrics: metrics.clone(),
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
pub(super) fn pinning_notes(b: &Parts) -> Vec<String> {
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

/// The I/Os the workers asked to keep in flight in all (a synchronous
/// engine keeps one per worker, whatever --qd says).
fn requested_depth(spec: &DiskRequest, kind: EngineKind, assigned: &[Assignment]) -> u32 {
    (assigned.iter())
        .map(|a| kind.requested_depth(spec.qd, a.targets.len()))
        .sum()
}

/// The queue depth kept, and the Little's-law check of the timing: when
/// IOPS × mean latency disagrees with the measured depth of the I/Os
/// completed in the window (`qd_completed`: `qd_achieved` less the edges,
/// both measured), latency was not timed over the interval the I/Os were
/// outstanding.
pub(super) fn depth_notes(
    spec: &DiskRequest,
    kind: EngineKind,
    assigned: &[Assignment],
    m: &Metrics,
    errors: u64,
) -> Vec<String> {
    let mut notes = Vec::new();
    let get = |k: &str| m.get(k).copied();
    let requested = f64::from(requested_depth(spec, kind, assigned));
    let Some(qd) = get(mn::QD_ACHIEVED) else {
        return notes;
    };
    let bursting = spec.lines.iter().any(|l| !l.burst_delay.is_zero());
    // Not 90 %: io_uring submits each I/O with its own system call, so
    // when a device completes I/Os in batches the slots freed by one reap
    // wait for the calls refilling the ones before them (some 2 of 32 on
    // virtio-blk; BENCHMARKS.md, issue 27 §1). That is the cost of
    // submitting at once, not a worker that fell behind.
    if !bursting && qd < 0.8 * requested {
        notes.push(format!(
            "qd_achieved {qd:.1} is below the {requested} I/Os requested: slots stayed empty between a completion being seen and the next I/O being submitted (workers short of CPU, or completions handled slower than they arrive)"
        ));
    }
    if let (Some(iops), Some(mean), 0) = (get(mn::IOPS), get(mn::LAT_MEAN_US), errors) {
        let little = littles_law_depth(iops, mean);
        let completed = get(mn::QD_COMPLETED).unwrap_or(qd);
        if (little - completed).abs() > littles_law_rounding(qd) {
            notes.push(format!(
                "Little's law check failed: iops x lat_mean_us = {little:.2} outstanding, measured {completed:.2} (qd_completed; qd_achieved {qd:.2} with the window's edges); the latency figures of this run are suspect"
            ));
        }
    }
    notes
}

/// A mixed spec's lines in one word: `10%512+5%1k+...r80x100`, or the
/// built-in's name (also for a console rebuilding the spec it ordered from
/// an agent).
pub fn mix_word_of(spec_name: Option<&str>, lines: &[crate::AccessLine]) -> Option<String> {
    if lines.len() < 2 {
        return None;
    }
    if let Some(n) = spec_name {
        return Some(n.to_string());
    }
    let part = |l: &crate::AccessLine| {
        let size = iotoll_model::format_size(l.bs);
        format!("{}%{size}r{}x{}", l.share_pct, l.read_pct, l.random_pct)
    };
    Some(lines.iter().map(part).collect::<Vec<_>>().join("+"))
}

pub(super) fn spec_json(
    spec: &DiskRequest,
    targets: &[Target],
    assigned: &[Assignment],
    kind: EngineKind,
) -> Spec {
    use iotoll_model::spec::{word, LineSpec, TargetSpec, Typed};
    let t = &targets[0];
    let single = (spec.lines.len() == 1).then(|| &spec.lines[0]);
    let workers = match spec.spread {
        true => assigned.len(),
        false => assigned.len() / targets.len().max(1),
    };
    Spec::Disk(Typed::from(iotoll_model::spec::DiskSpec {
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
        mix: mix_word_of(spec.spec_name.as_deref(), &spec.lines),
        qd: spec.qd,
        qd_requested: Some(requested_depth(spec, kind, assigned)),
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
    }))
}
