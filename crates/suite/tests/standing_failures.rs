//! Repetitions that would fail for the same reason are not run: a test
//! whose target is refused stops after its first repetition, and the run
//! says why once, however many tests meet it (issue 23 §9: 36 failing
//! repetitions printed the same error 72 times).

use iotoll_model::ResultDoc;
use iotoll_run::Progress;
use iotoll_suite::file::Job;
use iotoll_suite::runner::{self, Options, Sink, SuiteProgress, TestOutcome};
use std::sync::atomic::AtomicBool;

/// Two disk tests of three repetitions each that only read.
const SUITE: &str = include_str!("fixtures/two-read-tests.toml");

/// Counts the lines the run prints.
#[derive(Default)]
struct Lines(Vec<String>);

impl Progress for Lines {}

impl SuiteProgress for Lines {
    fn line(&mut self, msg: &str) {
        self.0.push(msg.to_string());
    }
}

struct Nowhere;

impl Sink for Nowhere {
    fn begin_test(&mut self, _: usize, _: &Job) -> Result<i64, runner::SinkError> {
        Ok(1)
    }
    fn rep(&mut self, _: i64, _: u32, _: &ResultDoc) -> Result<(), runner::SinkError> {
        Ok(())
    }
    fn end_test(&mut self, _: i64, _: &Job, _: &TestOutcome) -> Result<(), runner::SinkError> {
        Ok(())
    }
}

#[test]
fn a_refused_target_stops_each_test_after_one_repetition_and_is_said_once() {
    let suite = iotoll_suite::parse(SUITE, "standing.toml").unwrap();
    let dir = tempfile::tempdir().unwrap();
    // The runner itself, without the CLI's check before the first test
    // (a target can also go away during a run).
    let opts = Options {
        targets: vec![dir.path().join("gone.tst")],
        ..Default::default()
    };
    let mut lines = Lines::default();
    let out = runner::run(
        &suite,
        &opts,
        &AtomicBool::new(false),
        &mut lines,
        &mut Nowhere,
    )
    .unwrap();
    assert_eq!(out.status, iotoll_model::RunStatus::Failed);
    assert_eq!(out.tests.len(), 2);
    for t in &out.tests {
        assert_eq!(t.failures.len(), 1, "{}: {:?}", t.name, t.failures);
        assert!(t.reps.is_empty());
        assert_eq!(t.not_run, 2, "{}", t.name);
    }
    let said = |all: &[String]| all.iter().filter(|n| n.contains("does not exist")).count();
    assert_eq!(said(&out.notes), 1, "{:#?}", out.notes);
    assert_eq!(said(&lines.0), 1, "{:#?}", lines.0);
    assert!(
        out.notes
            .iter()
            .any(|n| n.starts_with("d/bs=64k repetition 1 failed as d/bs=4k did")),
        "{:#?}",
        out.notes
    );
    assert!(
        out.notes[0].ends_with("2 more repetitions not run (the same cause would fail them)"),
        "{:#?}",
        out.notes
    );
}
