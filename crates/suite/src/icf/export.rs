//! A suite's disk test as an .icf Iometer opens.

use super::*;

/// A disk test's job and what it runs.
type DiskJob<'a> = (&'a crate::Job, &'a iotoll_disk::DiskRequest);

/// (spec, QD) of each step, in the order the test runs them.
type Steps = Vec<(String, u32)>;

/// What `export` needs besides the suite.
#[derive(Debug, Clone, Default)]
pub struct ExportOptions {
    /// The disk test to write (an .icf holds one test setup); None: the
    /// suite's only disk test.
    pub test: Option<String>,
    /// Target names to write, e.g. `PHYSICALDRIVE:1` (empty: that one).
    pub targets: Vec<String>,
    /// The manager's name: Iometer restores workers on the manager of
    /// that name (a Dynamo that logs in with it).
    pub manager: String,
    /// Workers that `workers = 0` (one per CPU) stands for.
    pub cpus: u32,
}

/// A suite's disk test as an .icf: its access specs, in the order its
/// tests run them, its durations, queue depths (one QD for all, a QD
/// cycle, or a group of workers per QD that rest, on Iometer's `Idle`
/// spec, while another group runs) and its workers and targets. Returns
/// the file and notes on what it leaves out.
pub fn export(suite: &crate::Suite, o: &ExportOptions) -> Result<(Icf, Vec<String>), String> {
    let mut notes = Vec::new();
    let (test, jobs) = chosen_test(suite, o, &mut notes)?;
    // An .icf written here has one manager, this host: a test placed on
    // other hosts would lose where it runs, and Iometer's own managers are
    // other processes (Dynamo) this file cannot name.
    if let Some((j, _)) = jobs.iter().find(|(j, _)| !j.placement.is_local()) {
        return Err(format!(
            "test '{test}' runs on hosts ({}): an .icf written by iotoll holds this host's workers only; export a test without `on`",
            j.placement.hosts().join(", ")
        ));
    }
    let d0 = jobs[0].1;
    one_setup(&test, &jobs, &mut notes)?;
    let (specs, steps) = access_specs(&test, &jobs, &mut notes)?;
    let secs = |d: Duration| d.as_secs_f64().round() as u64;
    // Queue depths: one, a cycle over every spec, or a group per QD.
    let mut setup = Setup {
        description: test.clone(),
        run_time: {
            let t = secs(d0.time);
            ((t / 3600) as u32, (t % 3600 / 60) as u32, (t % 60) as u32)
        },
        ramp_s: secs(d0.ramp) as u32,
        disk_workers: Spawn::Cpus,
        net_workers: Spawn::N(0),
        ..Setup::default()
    };
    let groups = queue_groups(&steps, &mut setup, &mut notes);
    let workers = workers(&groups, d0, o, &mut notes);
    let icf = Icf {
        version: WRITE_VERSION.into(),
        setup: Some(setup),
        display: Vec::new(),
        specs,
        managers: Some(vec![Manager {
            id: 1,
            name: o.manager.clone(),
            address: String::new(),
            workers,
            at: 0,
        }]),
    };
    Ok((icf, notes))
}

/// The disk test to write (an .icf holds one) and its jobs, one per
/// access spec and queue depth it sweeps.
fn chosen_test<'a>(
    suite: &'a crate::Suite,
    o: &ExportOptions,
    notes: &mut Vec<String>,
) -> Result<(String, Vec<DiskJob<'a>>), String> {
    use crate::JobSpec;
    let base = |n: &str| n.split('/').next().unwrap_or(n).to_string();
    let disk: Vec<DiskJob> = (suite.jobs.iter())
        .filter_map(|j| match &j.spec {
            JobSpec::Disk(d) => Some((j, d)),
            _ => None,
        })
        .collect();
    let mut tests: Vec<String> = disk.iter().map(|(j, _)| base(&j.name)).collect();
    tests.dedup();
    let skipped = suite.jobs.len() - disk.len();
    if skipped > 0 {
        notes.push(format!(
            "{skipped} network test(s) left out: an .icf holds disk workloads"
        ));
    }
    let test = match (&o.test, tests.as_slice()) {
        (_, []) => return Err(format!("suite '{}' has no disk test to write as an .icf", suite.name)),
        (Some(t), _) if tests.contains(t) => t.clone(),
        (Some(t), _) => {
            return Err(format!("suite '{}' has no disk test '{t}'; its disk tests: {}", suite.name, tests.join(", ")))
        }
        (None, [one]) => one.clone(),
        (None, _) => {
            return Err(format!(
                "suite '{}' has {} disk tests ({}); an .icf holds one test setup: choose one with --test",
                suite.name,
                tests.len(),
                tests.join(", ")
            ))
        }
    };
    let jobs: Vec<DiskJob> = disk
        .into_iter()
        .filter(|(j, _)| base(&j.name) == test)
        .collect();
    Ok((test, jobs))
}

/// What one Iometer setup holds for all its tests must be the same in
/// every job; what Iometer has no place for is a note.
fn one_setup(test: &str, jobs: &[DiskJob], notes: &mut Vec<String>) -> Result<(), String> {
    let d0 = jobs[0].1;
    type Get = fn(&iotoll_disk::DiskRequest) -> String;
    let same: [(&str, Get); 6] = [
        ("ramp", |d| format!("{:?}", d.ramp)),
        ("time", |d| format!("{:?}", d.time)),
        ("workers", |d| d.workers.to_string()),
        ("spread", |d| d.spread.to_string()),
        ("size", |d| format!("{:?}", d.size)),
        ("offset", |d| d.offset.to_string()),
    ];
    for (key, get) in same {
        if let Some((j, d)) = jobs.iter().find(|(_, d)| get(d) != get(d0)) {
            return Err(format!(
                "test '{test}': {key} differs between '{}' ({}) and '{}' ({}); an .icf has one {key} for all the tests it runs",
                jobs[0].0.name,
                get(d0),
                j.name,
                get(d)
            ));
        }
    }
    if d0.cpus.is_some() {
        notes.push("cpus not written: Iometer does not pin workers".into());
    }
    if d0.engine != iotoll_disk::EngineChoice::Auto || d0.buffered {
        notes.push("engine and buffered not written: Iometer has neither".into());
    }
    if d0.ramp.subsec_nanos() != 0 || d0.time.subsec_nanos() != 0 {
        notes.push("ramp and time rounded to whole seconds".into());
    }
    for (what, v) in [("size", d0.size.unwrap_or(0)), ("offset", d0.offset)] {
        if v % 512 != 0 {
            return Err(format!("test '{test}': {what} {v} is not a whole number of 512-byte sectors, which Iometer counts in"));
        }
    }
    Ok(())
}

/// The access specs, named as iotoll names them, and the (spec, QD) of
/// each step in the order the test runs them.
fn access_specs(
    test: &str,
    jobs: &[DiskJob],
    notes: &mut Vec<String>,
) -> Result<(Vec<Spec>, Steps), String> {
    let mut specs: Vec<Spec> = Vec::new();
    let mut steps = Steps::new();
    for (j, d) in jobs {
        let name = (d.spec_name.clone())
            .unwrap_or_else(|| j.name.replacen('/', " ", 1))
            .replace(',', ";");
        let lines: Vec<Line> = (d.lines.iter())
            .map(|l| Line {
                size: l.bs,
                share: l.share_pct,
                reads: l.read_pct,
                random: l.random_pct,
                delay_ms: l.burst_delay.as_millis() as u64,
                burst: l.burst_len,
                align: l.align.unwrap_or(0),
                reply: 0,
                at: 0,
            })
            .collect();
        if d.lines
            .iter()
            .any(|l| l.burst_delay.subsec_nanos() % 1_000_000 != 0)
        {
            notes.push(format!("spec '{name}': delay rounded down to whole ms"));
        }
        match specs.iter().find(|s| s.name == name) {
            Some(s) if s.lines != lines => {
                return Err(format!(
                    "test '{test}': two different access specs would both be named '{name}'"
                ))
            }
            Some(_) => {}
            None => specs.push(Spec {
                name: name.clone(),
                assignment: "NONE".into(),
                lines,
                at: 0,
            }),
        }
        steps.push((name, d.qd));
    }
    Ok((specs, steps))
}

/// (QD, the spec each step runs or Idle) per group of workers: one group
/// when every step has one QD or the QDs form an Iometer cycle (set in
/// `setup`), else a group per QD.
fn queue_groups(
    steps: &[(String, u32)],
    setup: &mut Setup,
    notes: &mut Vec<String>,
) -> Vec<(u32, Vec<String>)> {
    let mut runs: Vec<(String, Vec<u32>)> = Vec::new();
    for (n, q) in steps {
        match runs.last_mut() {
            Some((last, qs)) if last == n => qs.push(*q),
            _ => runs.push((n.clone(), vec![*q])),
        }
    }
    let cycle = (runs.iter().all(|(_, q)| *q == runs[0].1) && runs[0].1.len() > 1)
        .then(|| as_cycle(&runs[0].1))
        .flatten();
    // (QD, the spec each step runs or Idle) per group of workers.
    if steps.iter().all(|(_, q)| *q == steps[0].1) {
        vec![(steps[0].1, steps.iter().map(|(n, _)| n.clone()).collect())]
    } else if let Some(c) = cycle {
        setup.test_type = TestType::CycleOutstandingIos;
        setup.queue_cycling = c;
        vec![(c.start, runs.iter().map(|(n, _)| n.clone()).collect())]
    } else {
        let mut qds: Vec<u32> = Vec::new();
        for (_, q) in steps {
            if !qds.contains(q) {
                qds.push(*q);
            }
        }
        notes.push(format!(
            "the specs run at {} queue depths: a group of workers per queue depth, each idle while another runs",
            qds.len()
        ));
        (qds.iter())
            .map(|g| {
                let list = steps
                    .iter()
                    .map(|(n, q)| if q == g { n.clone() } else { IDLE.to_string() });
                (*g, list.collect())
            })
            .collect()
    }
}

/// The workers of every group, on the targets given, as the test lays
/// them out (`workers` per target, or spread over all).
fn workers(
    groups: &[(u32, Vec<String>)],
    d0: &iotoll_disk::DiskRequest,
    o: &ExportOptions,
    notes: &mut Vec<String>,
) -> Vec<Worker> {
    let targets: Vec<String> = match o.targets.is_empty() {
        true => vec!["PHYSICALDRIVE:1".to_string()],
        false => o.targets.clone(),
    };
    let per = match d0.workers {
        0 => {
            notes.push(format!(
                "workers = 0 (one per CPU) written as {} workers, this host's CPUs",
                o.cpus.max(1)
            ));
            o.cpus.max(1)
        }
        w => w,
    };
    let mut workers = Vec::new();
    for (qd, list) in groups {
        let sets: Vec<Vec<String>> = if d0.spread {
            vec![targets.clone(); per as usize]
        } else {
            (targets.iter())
                .flat_map(|t| std::iter::repeat_n(vec![t.clone()], per as usize))
                .collect()
        };
        for set in sets {
            let mut w = Worker::new(&format!("Worker {}", workers.len() + 1), WorkerKind::Disk);
            w.qd = *qd;
            w.disk_size = d0.size.unwrap_or(0) / 512;
            w.start_sector = d0.offset / 512;
            w.specs = Some(list.clone());
            w.targets = Some(
                (set.into_iter())
                    .map(|name| Target {
                        name,
                        kind: WorkerKind::Disk,
                        manager: None,
                        at: 0,
                    })
                    .collect(),
            );
            workers.push(w);
        }
    }
    workers
}

/// The Iometer queue-depth cycle that steps through `qs`, if one does.
fn as_cycle(qs: &[u32]) -> Option<QueueCycle> {
    let (start, end) = (qs[0], *qs.last()?);
    let linear = qs[1].checked_sub(start).filter(|s| *s > 0);
    let exp = (start > 0 && qs[1] % start == 0)
        .then(|| qs[1] / start)
        .filter(|s| *s > 1);
    [(linear, false), (exp, true)]
        .into_iter()
        .find_map(|(step, exponential)| {
            let step = step?;
            (cycle_values(start, end, step, exponential) == qs).then_some(QueueCycle {
                start,
                end,
                step,
                exponential,
            })
        })
}
