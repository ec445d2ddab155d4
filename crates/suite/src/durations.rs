//! Smoke runs of long studies and the suite's ETA: `--time`/`--ramp`
//! override every test's window and ramp-up (recorded as a run note), and
//! the remaining time is estimated from what has actually run.

use crate::file::Suite;
use iotoll_model::text;
use std::collections::BTreeMap;
use std::time::Duration;

/// The beginning of the run note that records overridden durations.
pub const OVERRIDE_NOTE: &str = "durations overridden:";

/// A suite's length as `suite list`, `show` and the progress line say it.
pub fn length(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..=119 => format!("{s} s"),
        120..=7199 => format!("{} min", s / 60),
        _ => format!("{:.1} h", s as f64 / 3600.0),
    }
}

/// A duration the way suite files and `--time` write them: `500ms`, `5s`,
/// `2m`, `1h`, `90s`.
pub fn dur_label(d: Duration) -> String {
    let ms = d.as_millis();
    if ms % 1000 != 0 {
        return format!("{ms}ms");
    }
    let s = d.as_secs();
    match s {
        0 => "0s".into(),
        s if s % 3600 == 0 => format!("{}h", s / 3600),
        s if s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

/// The distinct values among `ds`, each with how many tests had it:
/// `2m` or `2m (20 tests), 4m (4 tests)`.
fn originals(ds: impl Iterator<Item = Duration>) -> String {
    let mut count: BTreeMap<Duration, usize> = BTreeMap::new();
    for d in ds {
        *count.entry(d).or_default() += 1;
    }
    if count.len() == 1 {
        return count.keys().map(|d| dur_label(*d)).collect();
    }
    let each = count
        .iter()
        .map(|(d, n)| format!("{} ({})", dur_label(*d), text::count(*n, "test")));
    each.collect::<Vec<_>>().join(", ")
}

/// Sets every test's ramp-up and/or window. Returns the run note (beginning
/// with [`OVERRIDE_NOTE`]) naming the values in effect and the suite's own,
/// or None when nothing was overridden. The jobs' `params` gain `ramp` /
/// `time` so the stored test parameters say what ran. An invalid value
/// (a zero window) is an error naming the flag.
pub fn override_durations(
    suite: &mut Suite,
    ramp: Option<Duration>,
    time: Option<Duration>,
) -> Result<Option<String>, String> {
    if ramp.is_none() && time.is_none() {
        return Ok(None);
    }
    if time == Some(Duration::ZERO) {
        return Err("--time must be positive".into());
    }
    let orig_ramp = originals(suite.jobs.iter().map(|j| j.ramp_time().0));
    let orig_time = originals(suite.jobs.iter().map(|j| j.ramp_time().1));
    for j in &mut suite.jobs {
        j.spec.set_durations(ramp, time);
        (j.spec.validate()).map_err(|e| format!("--time/--ramp for test '{}': {e}", j.name))?;
        if let Some(p) = j.params.as_object_mut() {
            if let Some(r) = ramp {
                p.insert("ramp".into(), dur_label(r).into());
            }
            if let Some(t) = time {
                p.insert("time".into(), dur_label(t).into());
            }
        }
    }
    let mut set = Vec::new();
    let mut was = Vec::new();
    if let Some(t) = time {
        set.push(format!("time {}", dur_label(t)));
        was.push(format!("time {orig_time}"));
    }
    if let Some(r) = ramp {
        set.push(format!("ramp {}", dur_label(r)));
        was.push(format!("ramp {orig_ramp}"));
    }
    Ok(Some(format!(
        "{OVERRIDE_NOTE} {} for every test (the suite's: {}); a smoke run, not the study as specified",
        set.join(", "),
        was.join("; ")
    )))
}

/// Planned time of the whole suite: ramp + window of every repetition,
/// with `reps` (the `--reps` override) in place of each test's own.
pub fn planned(suite: &Suite, reps: Option<u32>) -> Duration {
    let plan = Eta::new(suite, reps).plan;
    plan.iter().map(|(d, n)| *d * *n).sum()
}

/// Time left: the planned ramp + window of the repetitions still to run,
/// plus the overhead measured so far (connection set-up, CPU sampling,
/// stopping, storing) for each of them. `done_reps` repetitions planned at
/// `planned_done` in total took `elapsed`; before any has finished the
/// plan is all there is.
pub fn remaining(
    planned_left: Duration,
    reps_left: u32,
    planned_done: Duration,
    done_reps: u32,
    elapsed: Duration,
) -> Duration {
    if done_reps == 0 {
        return planned_left;
    }
    let overhead = (elapsed.as_secs_f64() - planned_done.as_secs_f64()) / done_reps as f64;
    let left = planned_left.as_secs_f64() + overhead * reps_left as f64;
    Duration::from_secs_f64(left.max(0.0))
}

/// Follows a suite's progress for [`remaining`]: which repetitions are
/// planned (with `--reps`) and which have run.
#[derive(Debug, Clone)]
pub struct Eta {
    /// Per test: ramp + window of one repetition, repetitions planned.
    plan: Vec<(Duration, u32)>,
    planned_done: Duration,
    done_reps: u32,
}

impl Eta {
    pub fn new(suite: &Suite, reps: Option<u32>) -> Eta {
        Eta {
            plan: suite
                .jobs
                .iter()
                .map(|j| {
                    let (r, t) = j.ramp_time();
                    (r + t, reps.unwrap_or(j.reps).max(1))
                })
                .collect(),
            planned_done: Duration::ZERO,
            done_reps: 0,
        }
    }

    /// A repetition of test `job` (0-based) ran (or failed trying).
    pub fn rep_done(&mut self, job: usize) {
        if let Some((d, _)) = self.plan.get(job) {
            self.planned_done += *d;
            self.done_reps += 1;
        }
    }

    /// Time left when repetition `rep` (1-based) of `limit` of test `job`
    /// is about to start, `elapsed` since the suite's first test began.
    pub fn at(&self, job: usize, rep: u32, limit: u32, elapsed: Duration) -> Duration {
        // This test's repetitions from `rep` on, then every later test's.
        let this =
            (self.plan.get(job)).map(|(d, _)| (*d, limit.saturating_sub(rep.saturating_sub(1))));
        let left = this
            .into_iter()
            .chain(self.plan.iter().skip(job + 1).copied());
        let (planned_left, reps_left) =
            left.fold((Duration::ZERO, 0u32), |(p, r), (d, n)| (p + d * n, r + n));
        remaining(
            planned_left,
            reps_left,
            self.planned_done,
            self.done_reps,
            elapsed,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: &str = r#"
name = "long"
reps = 3
ramp = "30s"
time = "2m"

[[test]]
name = "d"
kind = "disk"
bs = ["4k", "64k"]

[[test]]
name = "s"
kind = "net-stream"
time = "4m"
"#;

    fn suite() -> Suite {
        crate::parse(S, "long.toml").unwrap()
    }

    #[test]
    fn labels() {
        assert_eq!(dur_label(Duration::from_millis(500)), "500ms");
        assert_eq!(dur_label(Duration::from_secs(5)), "5s");
        assert_eq!(dur_label(Duration::from_secs(90)), "90s");
        assert_eq!(dur_label(Duration::from_secs(120)), "2m");
        assert_eq!(dur_label(Duration::from_secs(7200)), "2h");
        assert_eq!(dur_label(Duration::ZERO), "0s");
    }

    #[test]
    fn overrides_set_every_test_and_say_so() {
        let mut s = suite();
        assert_eq!(planned(&s, None), Duration::from_secs(3 * (150 * 2 + 270)));
        let note = override_durations(&mut s, Some(Duration::ZERO), Some(Duration::from_secs(5)))
            .unwrap()
            .unwrap();
        assert!(note.starts_with(OVERRIDE_NOTE), "{note}");
        assert!(note.contains("time 5s, ramp 0s"), "{note}");
        assert!(
            note.contains("the suite's: time 2m (2 tests), 4m (1 test); ramp 30s"),
            "{note}"
        );
        for j in &s.jobs {
            assert_eq!(j.ramp_time(), (Duration::ZERO, Duration::from_secs(5)));
            assert_eq!(j.params["time"], "5s");
            assert_eq!(j.params["ramp"], "0s");
        }
        assert_eq!(planned(&s, None), Duration::from_secs(3 * 5 * 3));
        assert_eq!(planned(&s, Some(1)), Duration::from_secs(15));
    }

    #[test]
    fn only_what_was_given_is_overridden() {
        let mut s = suite();
        let note = override_durations(&mut s, None, Some(Duration::from_secs(1)))
            .unwrap()
            .unwrap();
        assert!(!note.contains("ramp"), "{note}");
        assert_eq!(s.jobs[0].ramp_time().0, Duration::from_secs(30));
        assert!(s.jobs[0].params.get("ramp").is_none());
        let mut s = suite();
        assert_eq!(override_durations(&mut s, None, None).unwrap(), None);
        assert!(s.jobs[0].params.get("time").is_none());
        let e = override_durations(&mut s, None, Some(Duration::ZERO)).unwrap_err();
        assert!(e.contains("--time"), "{e}");
    }

    #[test]
    fn remaining_adds_the_measured_overhead() {
        let s = Duration::from_secs;
        // Nothing run yet: the plan.
        assert_eq!(remaining(s(100), 10, s(0), 0, s(3)), s(100));
        // 4 repetitions of 10 s took 60 s: 5 s of overhead each, for the 6 left.
        assert_eq!(remaining(s(60), 6, s(40), 4, s(60)), s(90));
        // Faster than planned (never below zero).
        assert_eq!(remaining(s(10), 1, s(40), 4, s(0)), s(0));
    }

    #[test]
    fn eta_uses_reps_override_and_what_ran() {
        let s = Duration::from_secs;
        let mut su = suite();
        override_durations(&mut su, Some(s(0)), Some(s(5))).unwrap();
        // --reps 1: three tests of 5 s, not 3 × 3.
        let mut e = Eta::new(&su, Some(1));
        assert_eq!(e.at(0, 1, 1, s(0)), s(15));
        // The first repetition took 8 s: 3 s overhead for it and each of the 2 left.
        e.rep_done(0);
        assert_eq!(e.at(1, 1, 1, s(8)), s(16));
        e.rep_done(1);
        assert_eq!(e.at(2, 1, 1, s(16)), s(8));
        // Without the override the suite's own reps count.
        let e = Eta::new(&su, None);
        assert_eq!(e.at(0, 1, 3, s(0)), s(45));
        // Mid-test: repetition 2 of 3 of the first test, 2 left of it.
        assert_eq!(e.at(0, 2, 3, s(0)), s(40));
        // A rerun beyond the plan (limit raised) is counted.
        assert_eq!(e.at(2, 4, 4, s(0)), s(5));
    }
}
