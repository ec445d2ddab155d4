//! An .icf as a suite: Iometer's managers, workers and cycling mapped
//! onto tests, or an error naming each thing that cannot be mapped.

use super::*;
use crate::file::{
    Common, Ctx, Given, LineItems, LineKeys, Raw, Span, SpecTable, SuiteError, SuiteKeys, Sweep,
    NOWHERE,
};
use crate::hosts::Placement;
use iotoll_disk::specs::AccessSpec;
use toml::{Spanned, Value};

/// What mapping an .icf onto a suite had to say.
#[derive(Debug, Clone, PartialEq)]
pub struct Import {
    /// Iometer's disk targets in order of first appearance: the n-th is
    /// the n-th `--target`.
    pub targets: Vec<String>,
    /// What the file says that iotoll does not do, or does its own way.
    pub notes: Vec<String>,
}

/// A name iotoll takes for a test: no '/', ',' or control characters.
pub fn test_name(s: &str) -> String {
    let n: String = (s.trim().chars())
        .filter(|c| !c.is_control())
        .map(|c| if c == '/' || c == ',' { '-' } else { c })
        .collect();
    n.trim().to_string()
}

/// The values Iometer's cycling steps through, from `start` up to `end`:
/// `start + k * step`, or `start * step^k` when exponential.
pub fn cycle_values(start: u32, end: u32, step: u32, exponential: bool) -> Vec<u32> {
    let mut out = Vec::new();
    let (mut v, mut k) = (start as u64, 1u32);
    while v <= end as u64 && out.len() < 10_000 {
        out.push(v as u32);
        v = if !exponential || step == 1 {
            v + step as u64
        } else {
            match (step as u64).checked_pow(k) {
                Some(p) => start as u64 * p,
                None => break,
            }
        };
        k += 1;
        if step == 0 {
            break;
        }
    }
    out
}

/// One access-spec position of the workers' assigned lists: the spec and
/// the workers that run it (Iometer runs the n-th spec of every worker
/// at once; a worker whose n-th is `Idle`, or who has none, rests).
struct Step<'a> {
    spec: &'a str,
    workers: Vec<&'a Worker>,
}

/// What cannot be mapped, each with its .icf line.
type Problems = Vec<(Option<usize>, String)>;

/// An .icf line number, or none for 0 (an item the file did not have).
fn at(n: usize) -> Option<usize> {
    Some(n).filter(|n| *n > 0)
}

/// How the workers of every step sit on the targets: `k` workers on each
/// target, or `k` workers spread over them all.
type Shape = (u32, bool);

/// What the .icf maps to, before it is built as a suite.
struct Mapping<'a> {
    setup: Setup,
    has_setup: bool,
    /// The disk workers that run, with their managers.
    active: Vec<(&'a Manager, &'a Worker)>,
    /// (key, name) of the targets in order of first appearance.
    targets: Vec<(String, String)>,
    steps: Vec<Step<'a>>,
    shape: Option<Shape>,
    /// The test type iotoll runs (a cycling that has nothing to cycle
    /// becomes the plain one).
    test_type: TestType,
    /// Each spec's queue depth; None when it runs at several.
    spec_qd: Vec<(&'a str, Option<u32>)>,
}

/// Maps an .icf onto a suite: access specs become `[[spec]]`s; the test
/// setup, ramp and time and the cycling sweeps; the workers and their
/// targets, `workers` and `spread` over the targets given with
/// `--target`. `stem` names the suite (the file's name without .icf).
/// What cannot be expressed is an error naming each thing and its line.
/// The suite is built directly, through the checks a suite file goes
/// through, each value placed on its line of `text` (the .icf's text), so
/// that their errors too name the .icf's lines.
pub fn import(
    icf: &Icf,
    text: &str,
    file: &str,
    stem: &str,
) -> Result<(crate::Suite, Import), IcfError> {
    let mut problems = Problems::new();
    let mut notes = Vec::new();
    let setup = icf.setup.clone().unwrap_or_default();
    let active = active_workers(icf, &mut problems);
    let targets = targets_in_order(&active, &mut problems);
    let steps = steps(icf, &active, &mut problems);
    let all: Vec<String> = targets.iter().map(|(k, _)| k.clone()).collect();
    let shape = common_shape(&steps, &all, &mut problems);
    one_region(&active, &mut problems);
    let test_type = test_type(&setup, shape, all.len(), &mut notes, &mut problems);
    let spec_qd = spec_queue_depths(&steps, test_type, &setup, &mut problems);
    if !problems.is_empty() {
        problems.sort_by_key(|(l, _)| *l);
        problems.dedup();
        return Err(IcfError {
            file: file.into(),
            problems,
        });
    }
    let m = Mapping {
        has_setup: icf.setup.is_some(),
        setup,
        active,
        targets,
        steps,
        shape,
        test_type,
        spec_qd,
    };
    notes.extend(unused_settings(icf, &m));
    let places = Places::new(text);
    let test = TestValues::of(icf, &m, &places, file, stem)?;
    too_large(icf, &m, file)?;
    let suite = build(icf, &m, &places, test, file, stem).map_err(|e| {
        let msg = match &e.key {
            Some(k) => format!("{k}: {}", e.msg),
            None => e.msg.clone(),
        };
        IcfError::one(file, e.line, msg)
    })?;
    let targets = m.targets.into_iter().map(|(_, n)| n).collect();
    Ok((suite, Import { targets, notes }))
}

/// The disk workers that run: with targets and access specs. A network
/// worker with targets is a problem.
fn active_workers<'a>(icf: &'a Icf, problems: &mut Problems) -> Vec<(&'a Manager, &'a Worker)> {
    let mut active = Vec::new();
    for m in icf.managers.iter().flatten() {
        for w in &m.workers {
            let runs = w.targets.as_ref().is_some_and(|t| !t.is_empty())
                && (w.specs.as_ref())
                    .is_some_and(|s| s.iter().any(|s| !s.eq_ignore_ascii_case(IDLE)));
            match (w.kind, runs) {
                (WorkerKind::Disk, true) => active.push((m, w)),
                (_, true) => problems.push((
                    at(w.at),
                    format!(
                        "worker '{}' on manager '{}' is a network worker with targets: iotoll measures networks with net-stream and net-rr tests, not Iometer's network workers; remove it from the file",
                        w.name, m.name
                    ),
                )),
                _ => {}
            }
        }
    }
    let mut hosts: Vec<&str> = active.iter().map(|(m, _)| m.name.as_str()).collect();
    hosts.dedup();
    if hosts.len() > 1 {
        problems.push((
            at(active[0].0.at),
            format!(
                "workers on {} managers ({}): iotoll runs every worker on this host; keep one manager",
                hosts.len(),
                hosts.join(", ")
            ),
        ));
    }
    active
}

/// The targets as (key, name) in order of first appearance; a worker
/// with one target twice is a problem.
fn targets_in_order(
    active: &[(&Manager, &Worker)],
    problems: &mut Problems,
) -> Vec<(String, String)> {
    let mut targets: Vec<(String, String)> = Vec::new();
    for (_, w) in active {
        let mut mine: Vec<String> = Vec::new();
        for t in w.targets.iter().flatten() {
            let key = t.disk_key();
            if mine.contains(&key) {
                problems.push((
                    at(t.at),
                    format!("worker '{}' has target '{}' twice", w.name, t.name),
                ));
            }
            mine.push(key.clone());
            if !targets.iter().any(|(k, _)| *k == key) {
                targets.push((key, t.name.clone()));
            }
        }
    }
    targets
}

/// A worker's target keys, in its order.
fn keys(w: &Worker) -> Vec<String> {
    w.targets.iter().flatten().map(Target::disk_key).collect()
}

/// The specs in the order they run, and who runs each. Workers running
/// different specs at once, or a spec the file does not define, are
/// problems.
fn steps<'a>(
    icf: &'a Icf,
    active: &[(&'a Manager, &'a Worker)],
    problems: &mut Problems,
) -> Vec<Step<'a>> {
    let longest = active
        .iter()
        .map(|(_, w)| w.specs.as_ref().map_or(0, Vec::len))
        .max()
        .unwrap_or(0);
    let mut steps: Vec<Step> = Vec::new();
    for i in 0..longest {
        let running: Vec<(&Worker, &str)> = (active.iter())
            .filter_map(|(_, w)| Some((*w, w.specs.as_ref()?.get(i)?.as_str())))
            .filter(|(_, s)| !s.eq_ignore_ascii_case(IDLE))
            .collect();
        let Some((first, spec)) = running.first().copied() else {
            continue;
        };
        if let Some((w, other)) = running.iter().find(|(_, s)| *s != spec) {
            problems.push((
                at(w.at),
                format!(
                    "access spec {} of the workers' lists: worker '{}' runs '{spec}', worker '{}' runs '{other}' at the same time; an iotoll test runs one access spec on all its workers",
                    i + 1,
                    first.name,
                    w.name
                ),
            ));
            continue;
        }
        steps.push(Step {
            spec,
            workers: running.into_iter().map(|(w, _)| w).collect(),
        });
    }
    for s in &steps {
        if !icf.specs.iter().any(|f| f.name == s.spec) {
            problems.push((
                at(s.workers[0].at),
                format!(
                    "worker '{}' is assigned access spec '{}', which the file's ACCESS SPECIFICATIONS do not define (iotoll does not know Iometer's own default specs)",
                    s.workers[0].name, s.spec
                ),
            ));
        }
    }
    steps
}

/// A step's layout: k workers on each target, or workers spread over
/// them all (`all`: every target's key).
fn layout(s: &Step, all: &[String]) -> Result<Shape, String> {
    let mut per = vec![0u32; all.len()];
    let single = s.workers.iter().all(|w| keys(w).len() == 1);
    if single {
        for w in &s.workers {
            let k = &keys(w)[0];
            if let Some(i) = all.iter().position(|t| t == k) {
                per[i] += 1;
            }
        }
        if per.iter().all(|n| *n == per[0]) {
            return Ok((per[0], false));
        }
    }
    let mut sorted = all.to_vec();
    sorted.sort();
    let spread = s.workers.iter().all(|w| {
        let mut k = keys(w);
        k.sort();
        k == sorted
    });
    if spread {
        return Ok((s.workers.len() as u32, true));
    }
    let each: Vec<String> = (s.workers.iter())
        .map(|w| {
            let names: Vec<String> = w.targets.iter().flatten().map(|t| t.name.clone()).collect();
            format!("'{}' on {}", w.name, names.join(" + "))
        })
        .collect();
    Err(format!(
        "access spec '{}': the workers' targets cannot be expressed ({}): iotoll runs the same number of workers on each target, each on one, or workers that each have all the targets (spread)",
        s.spec,
        each.join(", ")
    ))
}

/// The one layout every step shares (an iotoll test keeps its workers).
fn common_shape(steps: &[Step], all: &[String], problems: &mut Problems) -> Option<Shape> {
    let how = |l: Shape| {
        if l.1 {
            " spread over all targets"
        } else {
            " per target"
        }
    };
    let mut shape: Option<Shape> = None;
    for s in steps {
        match (layout(s, all), shape) {
            (Ok(l), None) => shape = Some(l),
            (Ok(l), Some(p)) if p == l => {}
            (Ok(l), Some(p)) => problems.push((
                at(s.workers[0].at),
                format!(
                    "access spec '{}' runs {} worker(s){} and an earlier one {} worker(s){}: an iotoll test keeps its workers for every spec it sweeps",
                    s.spec,
                    l.0,
                    how(l),
                    p.0,
                    how(p),
                ),
            )),
            (Err(m), _) => problems.push((at(s.workers[0].at), m)),
        }
    }
    shape
}

/// One region for all: Iometer's maximum disk size and starting sector
/// must be the same on every worker.
fn one_region(active: &[(&Manager, &Worker)], problems: &mut Problems) {
    let Some((_, first)) = active.first() else {
        return;
    };
    let region = |w: &Worker| (w.disk_size, w.start_sector);
    if let Some((_, w)) = active.iter().find(|(_, w)| region(w) != region(first)) {
        problems.push((
            at(w.at),
            format!(
                "worker '{}' has maximum disk size {} and starting sector {}, worker '{}' {} and {}: iotoll tests one region on every target",
                w.name, w.disk_size, w.start_sector, first.name, first.disk_size, first.start_sector
            ),
        ));
    }
}

/// The test type iotoll runs: a cycling of targets that has nothing to
/// cycle is dropped (a note says so); one iotoll cannot express is a
/// problem.
fn test_type(
    setup: &Setup,
    shape: Option<Shape>,
    targets: usize,
    notes: &mut Vec<String>,
    problems: &mut Problems,
) -> TestType {
    let trivial_targets = targets <= 1 || shape.is_some_and(|(_, spread)| !spread);
    match setup.test_type {
        TestType::CycleTargets if trivial_targets => {
            notes.push(
                "Test Type CYCLE_TARGETS: each worker has one target, so there is nothing to cycle"
                    .to_string(),
            );
            TestType::Normal
        }
        TestType::CycleOutstandingIosAndTargets if trivial_targets => {
            notes.push("Test Type CYCLE_OUTSTANDING_IOS_AND_TARGETS: each worker has one target, so only the queue depth is cycled".to_string());
            TestType::CycleOutstandingIos
        }
        t @ (TestType::Normal | TestType::CycleOutstandingIos) => t,
        TestType::CycleWorkers
            if shape.is_none_or(|(k, spread)| spread || targets <= 1 || k == 1 && targets == 1) =>
        {
            TestType::CycleWorkers
        }
        other => {
            problems.push((
                at(setup.test_type_at),
                format!(
                    "Test Type {}: iotoll cannot express it (it runs every test on all the targets given, with one layout of workers); use NORMAL, CYCLE_OUTSTANDING_IOS, or CYCLE_WORKERS with workers spread over all targets",
                    other.as_str()
                ),
            ));
            other
        }
    }
}

/// Each spec's queue depth, from the workers that run it; unless the
/// queue depth is cycled, workers or steps that disagree are problems.
fn spec_queue_depths<'a>(
    steps: &[Step<'a>],
    t: TestType,
    setup: &Setup,
    problems: &mut Problems,
) -> Vec<(&'a str, Option<u32>)> {
    let cycled = t == TestType::CycleOutstandingIos;
    let mut spec_qd: Vec<(&str, Option<u32>)> = Vec::new();
    for s in steps {
        let qd = s.workers[0].qd;
        if let Some(w) = s.workers.iter().find(|w| w.qd != qd).filter(|_| !cycled) {
            problems.push((
                at(w.at),
                format!(
                    "access spec '{}': worker '{}' has {} outstanding I/Os, worker '{}' {}: an iotoll test runs all its workers at one queue depth",
                    s.spec, s.workers[0].name, qd, w.name, w.qd
                ),
            ));
        }
        match spec_qd.iter_mut().find(|(n, _)| *n == s.spec) {
            Some((_, q)) if *q != Some(qd) => *q = None,
            Some(_) => {}
            None => spec_qd.push((s.spec, Some(qd))),
        }
    }
    if !cycled {
        if let Some((name, _)) = spec_qd.iter().find(|(_, q)| q.is_none()) {
            problems.push((
                at(setup.test_type_at),
                format!("access spec '{name}' runs at more than one queue depth in the workers' lists: an iotoll spec has one"),
            ));
        }
    }
    spec_qd
}

/// Notes: what the file says that is read but not done.
fn unused_settings(icf: &Icf, m: &Mapping) -> Vec<String> {
    let mut notes = Vec::new();
    if icf.managers.is_none() {
        notes.push("no MANAGER LIST: one test runs every access specification in the file, in order, with iotoll's default workers".into());
    }
    if !m.has_setup {
        notes.push("no TEST SETUP: iotoll's default ramp-up and window".into());
    } else if m.setup.run_secs() == 0 {
        notes.push(
            "Run Time 0 (Iometer: until stopped): iotoll uses its default window; give --time"
                .into(),
        );
    }
    let workers = || m.active.iter().map(|(_, w)| *w);
    if workers().any(|w| w.disk_size > 0 || w.start_sector > 0) {
        notes.push("maximum disk size and starting sector are counted in 512-byte sectors".into());
    }
    if workers().any(|w| w.data_pattern.is_some_and(|p| p != 0)) {
        notes.push("the workers' data pattern is not used: iotoll writes its own".into());
    }
    if workers().any(|w| w.fixed_seed.is_some()) {
        notes.push("the fixed random seed is not used".into());
    }
    let used = |n: &str| m.steps.iter().any(|s| s.spec == n) || icf.managers.is_none();
    if (icf.specs.iter())
        .filter(|s| used(&s.name))
        .flat_map(|s| &s.lines)
        .any(|l| l.reply > 0)
    {
        notes.push("reply sizes are not used (they apply to Iometer's network workers)".into());
    }
    notes
}

/// Where each line of the .icf's text starts: a value mapped from a line
/// is placed there, so that the suite's own checks tell their errors on
/// the .icf's lines.
struct Places<'t> {
    text: &'t str,
    starts: Vec<usize>,
}

impl<'t> Places<'t> {
    fn new(text: &'t str) -> Places<'t> {
        let starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        Places { text, starts }
    }

    /// The place of .icf line `line` (1-based); none: made up by the import.
    fn of(&self, line: Option<usize>) -> Span {
        match line.and_then(|n| self.starts.get(n.checked_sub(1)?)) {
            Some(&start) => {
                let end = self.text[start..]
                    .find('\n')
                    .map_or(self.text.len(), |n| start + n);
                start..end
            }
            None => NOWHERE,
        }
    }

    fn raw(&self, line: Option<usize>, v: impl Into<Value>) -> Raw {
        Spanned::new(self.of(line), v.into())
    }

    /// A whole number, checked to fit by `too_large` first.
    fn int(&self, line: Option<usize>, n: u64) -> Raw {
        self.raw(line, i64::try_from(n).unwrap_or(i64::MAX))
    }
}

/// The first number the suite cannot hold (TOML's integers are 64-bit
/// signed), in the order of the suite's keys: the specs' transfer sizes
/// and alignments, then the test's region.
fn too_large(icf: &Icf, m: &Mapping, file: &str) -> Result<(), IcfError> {
    let lines = icf.specs.iter().flat_map(|s| &s.lines);
    let sizes = lines.flat_map(|l| [(l.at, Some(l.size)), (l.at, Some(l.align))]);
    let region = m.active.first().map(|(_, w)| {
        let bytes = |sectors: u64| sectors.checked_mul(512);
        [(w.at, bytes(w.disk_size)), (w.at, bytes(w.start_sector))]
    });
    let mut all = sizes.chain(region.into_iter().flatten());
    match all.find(|(_, n)| n.is_none_or(|n| i64::try_from(n).is_err())) {
        Some((line, _)) => Err(IcfError::one(file, at(line), "u64 value was too large")),
        None => Ok(()),
    }
}

/// One value, or a list of them to sweep.
fn sweep(mut v: Vec<Value>) -> Value {
    match v.len() {
        1 => v.remove(0),
        _ => Value::Array(v),
    }
}

/// The parameters of the suite's one test, each with its .icf line, in
/// the order a disk test's keys expand.
struct TestValues {
    name: Raw,
    params: Vec<(&'static str, Raw)>,
}

impl TestValues {
    /// The test's specs, workers, sweeps and region; an .icf that runs
    /// nothing is refused.
    fn of(
        icf: &Icf,
        m: &Mapping,
        p: &Places,
        file: &str,
        stem: &str,
    ) -> Result<TestValues, IcfError> {
        let setup = &m.setup;
        let name = [test_name(&setup.description), test_name(stem)]
            .into_iter()
            .find(|n| !n.is_empty())
            .unwrap_or_else(|| "icf".into());
        let specs: Vec<Value> = match icf.managers {
            Some(_) => m.steps.iter().map(|s| s.spec.into()).collect(),
            None => icf.specs.iter().map(|s| s.name.as_str().into()).collect(),
        };
        let spec_at =
            (m.steps.first()).map_or(icf.specs.first().map(|s| s.at), |s| at(s.workers[0].at));
        if specs.is_empty() {
            return Err(IcfError::one(file, None, "no access specification runs: no disk worker has both targets and assigned access specs"));
        }
        let mut params = vec![("spec", p.raw(spec_at, sweep(specs)))];
        let type_at = at(setup.test_type_at);
        if m.test_type == TestType::CycleOutstandingIos {
            let q = setup.queue_cycling;
            let v: Vec<Value> = cycle_values(q.start, q.end, q.step, q.exponential)
                .into_iter()
                .map(|n| i64::from(n).into())
                .collect();
            if v.is_empty() {
                let msg = format!(
                    "Queue Depth Cycling from {} to {} runs nothing",
                    q.start, q.end
                );
                return Err(IcfError::one(file, type_at, msg));
            }
            params.push(("qd", p.raw(type_at, sweep(v))));
        }
        let first = m.active.first().map(|(_, w)| *w);
        let w_at = first.map(|w| w.at);
        if let Some((k, spread)) = m.shape {
            if m.test_type == TestType::CycleWorkers {
                let c = setup.worker_cycling;
                let mut v = cycle_values(c.start, k, c.step, c.exponential);
                if v.last() != Some(&k) {
                    // Iometer's last step runs every worker.
                    v.push(k);
                }
                let v = v
                    .into_iter()
                    .filter(|n| *n > 0)
                    .map(|n| i64::from(n).into());
                params.push(("workers", p.raw(type_at, sweep(v.collect()))));
            } else {
                params.push(("workers", p.raw(w_at, i64::from(k))));
            }
            if spread {
                params.push(("spread", p.raw(w_at, true)));
            }
        }
        if let Some(w) = first {
            if w.disk_size > 0 {
                params.push(("size", p.int(w_at, w.disk_size.saturating_mul(512))));
            }
            if w.start_sector > 0 {
                params.push(("offset", p.int(w_at, w.start_sector.saturating_mul(512))));
            }
        }
        Ok(TestValues {
            name: p.raw(at(setup.at), name),
            params,
        })
    }
}

/// The suite the mapping makes, through the checks a suite file goes
/// through: its name and settings, a `[[spec]]` for each access spec and
/// the one `[[test]]`.
fn build(
    icf: &Icf,
    m: &Mapping,
    p: &Places,
    test: TestValues,
    file: &str,
    stem: &str,
) -> Result<crate::Suite, SuiteError> {
    let setup = &m.setup;
    let cx = Ctx::new(file, p.text);
    let keys = SuiteKeys {
        name: Some(p.raw(None, stem)),
        description: (!setup.description.is_empty())
            .then(|| p.raw(at(setup.at), setup.description.as_str())),
        ..SuiteKeys::default()
    };
    let head = cx.head(&keys)?;
    let mut defaults = Common::default();
    if m.has_setup {
        defaults.ramp = Some(p.raw(at(setup.at), format!("{}s", setup.ramp_s)));
        if setup.run_secs() > 0 {
            let time = format!("{}s", setup.run_secs());
            defaults.time = Some(p.raw(at(setup.run_time_at), time));
        }
    }
    let mut specs: Vec<AccessSpec> = Vec::new();
    for s in &icf.specs {
        let spec = cx.spec(
            spec_table(s, m, p),
            p.of(at(s.at)),
            spec_lines(s, p),
            &specs,
        )?;
        specs.push(spec);
    }
    let cx = cx.with_specs(specs);
    let TestValues { name, params } = test;
    let params = std::cell::RefCell::new(Some(params));
    let given = Given {
        header: p.of(at(setup.at)),
        common: Common {
            name: Some(name),
            kind: Some(p.raw(None, "disk")),
            ..Common::default()
        },
        params: &|_| {
            let params = params.borrow_mut().take().unwrap_or_default();
            Ok(params.into_iter().map(|(k, v)| (k, Sweep(v))).collect())
        },
        placement: &|_, _| Ok(Placement::Local),
    };
    let jobs = cx.jobs([given], |t, seen| cx.checked_test(t, &defaults, seen))?;
    Ok(cx.suite(head, keys.description, Vec::new(), jobs))
}

/// An access spec as a `[[spec]]` table: its name and queue depth (when
/// it runs at one); its lines come from `spec_lines`.
fn spec_table(s: &Spec, m: &Mapping, p: &Places) -> SpecTable {
    let qd = m.spec_qd.iter().find(|(n, _)| *n == s.name);
    SpecTable {
        name: Some(p.raw(at(s.at), s.name.as_str())),
        qd: qd
            .and_then(|(_, q)| *q)
            .map(|q| p.raw(at(s.at), i64::from(q))),
        // Only its place is read: the lines themselves are `spec_lines`.
        lines: Some(p.raw(at(s.at), Value::Array(Vec::new()))),
        ..SpecTable::default()
    }
}

/// An access spec's lines in the suite's terms, each on its .icf line;
/// none for a spec without lines (refused as an empty `lines`).
fn spec_lines<'a>(s: &'a Spec, p: &'a Places) -> Option<LineItems<'a>> {
    if s.lines.is_empty() {
        return None;
    }
    Some(Box::new(s.lines.iter().map(move |l| {
        let on = at(l.at);
        let keys = LineKeys {
            share: Some(p.raw(on, i64::from(l.share))),
            bs: Some(p.int(on, l.size)),
            read: Some(p.raw(on, i64::from(l.reads))),
            random: Some(p.raw(on, i64::from(l.random))),
            burst_delay: Some(p.raw(on, format!("{}ms", l.delay_ms))),
            burst_len: Some(p.raw(on, i64::from(l.burst))),
            align: (l.align != 0).then(|| p.int(on, l.align)),
        };
        Ok((p.of(on), keys))
    })))
}

/// Reads an .icf as a suite: `parse`, then `import`, whose suite went
/// through a suite file's own checks, told on the .icf's lines.
pub fn suite(text: &str, file: &str) -> Result<(crate::Suite, Import), IcfError> {
    let icf = parse(text, file)?;
    let stem = std::path::Path::new(file)
        .file_stem()
        .map_or("icf".into(), |s| s.to_string_lossy().to_string());
    import(&icf, text, file, &stem)
}
