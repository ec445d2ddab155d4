//! `--confidence LEVEL,WIDTH` (suite key `confidence`) end to end: a test
//! is repeated until its interval is narrow enough, or `--reps` is spent.

mod common;
use common::*;

/// The notes and tests of run 1.
fn run1(t: &Tmp) -> serde_json::Value {
    t.show("1")
}

/// A test whose selection metric is the same in every repetition (the
/// connections a stream opens: 2, exactly, however busy the host) has an
/// interval of width 0: it converges at the third repetition and the
/// other three of the six allowed are not run. The progress line counts
/// the six (the worst case) until then. The repetitions' whole-host CPU,
/// which a busy machine moves by more than the default 5 % (a test.sh run
/// saw 93 % and 100 %, and so a test not repeatable run on to six), is
/// left out of the agreement: this test is about the interval.
#[test]
fn a_test_that_repeats_exactly_converges_at_three() {
    let t = Tmp::new();
    let file = t.file(
        "s.toml",
        "name='c'\nreps=6\nconfidence='95,5'\nrepeatability_pct=1000\nramp='0s'\ntime='300ms'\n[[test]]\nname='s'\nkind='net-stream'\nconns=2\nselect='median:conns'\n",
    );
    let out = t.cmd("suite run").arg(&file).out();
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("repetition 3/6"), "{err}");
    assert!(!err.contains("repetition 4/6"), "{err}");
    let shown = cmd("suite show").arg(&file).succeeds();
    assert!(
        shown.contains("until its 95 % interval is ±2.5 % of the mean: 3 to 6 repetitions"),
        "{shown}"
    );
    let v = run1(&t);
    let test = &v["tests"][0];
    assert_eq!(test["reps"].as_array().unwrap().len(), 3, "{test}");
    assert_eq!(test["params"]["confidence"], "95,5");
    assert_ne!(test["repeatable"], false, "{test}");
    let c = &test["confidence"];
    assert_eq!(
        (&c["level"], &c["width_pct"], &c["n"]),
        (&95.into(), &5.0.into(), &3.into())
    );
    assert_eq!(
        (&c["half_pct"], &c["converged"]),
        (&0.0.into(), &true.into()),
        "{c}"
    );
    let notes = v["notes"].to_string();
    assert!(
        notes.contains(
            "s: converged after 3 repetitions: 95 % interval ±0.00 % of the mean (wanted ±2.5 %)"
        ),
        "{notes}"
    );
}

/// Injected noise (the test hook scales the burst delay of successive
/// runs by 1, 3, 2, 4: IOPS differ up to 4×) never converges: every one
/// of `--reps` runs, the test is flagged not repeatable, and the notes say
/// it did not converge and how wide the interval was.
#[test]
fn a_noisy_test_does_not_converge_and_is_flagged() {
    let t = Tmp::new();
    let file = t.file(
        "s.toml",
        "name='n'\nreps=2\nramp='0s'\ntime='300ms'\n[[test]]\nname='d'\nkind='disk'\nengine='null'\nsize='4m'\nqd=1\nburst_delay='5ms'\nburst_len=1\n",
    );
    let out = t
        .cmd("suite run --quiet --confidence 95,5 --reps 4")
        .arg(&file)
        .env("IOTOLL_INJECT_FAULT", "disk-noise")
        .succeeds();
    assert!(out.contains("NOT REPEATABLE"), "{out}");
    let v = run1(&t);
    let test = &v["tests"][0];
    assert_eq!(test["reps"].as_array().unwrap().len(), 4, "{test}");
    assert_eq!(test["repeatable"], false);
    assert_eq!(test["params"]["confidence"], "95,5");
    let c = &test["confidence"];
    assert_eq!(
        (&c["n"], &c["converged"]),
        (&4.into(), &false.into()),
        "{c}"
    );
    assert!(c["half_pct"].as_f64().unwrap() > 2.5, "{c}");
    let notes = v["notes"].to_string();
    assert!(
        notes.contains("d: not converged after 4 repetitions: 95 % interval ±"),
        "{notes}"
    );
    assert!(notes.contains("(not converged)"), "{notes}");
}

/// Bad values are refused before anything runs or is stored.
#[test]
fn bad_confidence_is_refused_before_anything_runs() {
    let t = Tmp::new();
    let file = t.file(
        "s.toml",
        "name='c'\nreps=5\n[[test]]\nname='d'\nkind='disk'\nsize='4m'\n",
    );
    t.cmd("suite run --confidence 80,5")
        .arg(&file)
        .fails(2, "80 % is not supported (90, 95 or 99)");
    t.cmd("suite run --confidence 95")
        .arg(&file)
        .fails(2, "expected LEVEL,WIDTH");
    t.cmd("suite run --confidence 95,5 --reps 2")
        .arg(&file)
        .fails(2, "confidence needs at least 3 repetitions");
    let conf = t.file(
        "conf.toml",
        "name='c'\nreps=5\nconfidence='95,5'\n[[test]]\nname='d'\nkind='disk'\n",
    );
    cmd("suite show --reps 2")
        .arg(&conf)
        .fails(2, "--reps is 2");
    let low = t.file(
        "low.toml",
        "name='c'\nconfidence='95,5'\n[[test]]\nname='d'\nkind='disk'\n",
    );
    t.cmd("suite run").arg(&low).fails(2, "low.toml");
    let bad = t.file(
        "bad.toml",
        "name='c'\nreps=5\n[[test]]\nname='d'\nkind='disk'\nconfidence='97,5'\n",
    );
    t.cmd("suite run")
        .arg(&bad)
        .fails(2, "97 % is not supported");
    assert!(!std::path::Path::new(&t.db).exists(), "nothing stored");
}
