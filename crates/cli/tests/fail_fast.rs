//! Suites that fail fast and say why once (issue 23 §9): targets and
//! `--peer` are checked before the first test, `--size` overrides the
//! suite's test file or region size.

mod common;
use common::*;

/// Two disk tests of three repetitions each that only read.
const DISK: &str = include_str!("../../suite/tests/fixtures/two-read-tests.toml");

const NET: &str = r#"
name = "ffnet"
reps = 3
ramp = "0s"
time = "300ms"

[[test]]
name = "s"
kind = "net-stream"
conns = 1
"#;

/// stdout and stderr together: a reason must be said once in all of it.
fn all_output(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `suite run --target MISSING` stops before the first test with one
/// error naming the target; nothing is recorded. (It ran every repetition,
/// each failing with the same error, printed twice.)
#[test]
fn a_missing_target_is_refused_before_the_first_test() {
    let t = Tmp::new();
    let file = t.file("s.toml", DISK);
    let missing = t.path("no-such-target.tst");
    let out = t
        .cmd("suite run --quiet")
        .args([&file, "--target", &missing])
        .out();
    let text = all_output(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert_eq!(text.matches("does not exist").count(), 1, "{text}");
    assert!(text.contains("suite not started"), "{text}");
    assert!(!text.contains("repetition"), "no repetition ran: {text}");
    let list = t.list();
    assert!(!list.contains("ff"), "nothing recorded: {list}");
}

/// `--peer` on a closed loopback port: one error before the first test.
#[test]
fn a_peer_that_does_not_answer_is_refused_before_the_first_test() {
    let t = Tmp::new();
    let file = t.file("s.toml", NET);
    // A port nothing listens on: bound, then closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("an ephemeral port")
        .port();
    let peer = format!("127.0.0.1:{port}");
    let out = t
        .cmd("suite run --quiet")
        .args([&file, "--peer", &peer])
        .out();
    let text = all_output(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert_eq!(text.matches("cannot connect").count(), 1, "{text}");
    assert!(text.contains("--peer"), "{text}");
    assert!(!text.contains("repetition"), "no repetition ran: {text}");
}

/// A study written for a bigger target runs on a small one with
/// `--size`; without it the check names the region, before any test.
#[test]
fn size_overrides_the_suites_region() {
    let t = Tmp::new();
    let file = t.file("s.toml", DISK);
    let target = t.file("small.tst", vec![0x5au8; 8 << 20]);
    let refused = t
        .cmd("suite run --quiet --reps 1")
        .args([&file, "--target", &target])
        .out();
    let text = all_output(&refused);
    assert_eq!(refused.status.code(), Some(1), "{text}");
    assert!(text.contains("larger than the target"), "{text}");
    // The size came from the suite, not a flag: say so, and how to change it.
    assert!(text.contains("the suite's `size`"), "{text}");
    assert!(text.contains("suite run --size SIZE"), "{text}");

    let out = t
        .cmd("suite run --quiet --reps 1 --size 4m --config small")
        .args([&file, "--target", &target])
        .succeeds();
    assert!(out.contains("complete"), "{out}");
    let run = t.show("small");
    let docs = stored_docs(&run);
    assert_eq!(docs.len(), 2, "{run}");
    for d in docs {
        assert_eq!(d["spec"]["size"], 4 << 20, "{d}");
    }
    let notes = run["notes"].to_string();
    assert!(notes.contains("size overridden: 4m"), "{notes}");
}

/// Two published tables that give MB/s only: the comparison of their
/// IOPS compares nothing, and says which metrics would (it named the
/// missing one only).
#[test]
fn compare_without_the_default_metric_suggests_the_ones_the_runs_have() {
    let t = Tmp::new();
    for (label, v) in [("pa", "100"), ("pb", "120")] {
        let f = t.file(&format!("{label}.csv"), format!("test,mb_s\nseq,{v}\n"));
        t.cmd("results import --format table")
            .args(["--config", label, &f])
            .succeeds();
    }
    let err = t.cmd("compare pa pb").fails(1, "nothing to compare");
    assert!(err.contains("--metric mb_s"), "{err}");
    t.cmd("compare pa pb --metric mb_s").succeeds();
}
