//! Iometer .icf files through the binary: `suite show|run FILE.icf` and
//! `suite export-icf`, and every bad input refused before anything runs.

mod common;
use common::*;
use std::path::Path;

fn fixture(name: &str) -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../suite/tests/fixtures/icf");
    dir.join(name).to_str().expect("utf-8").to_string()
}

/// The test names `suite show` lists (the lines after its header).
fn shown_tests(out: &str) -> Vec<String> {
    out.lines()
        .skip_while(|l| !l.starts_with("test "))
        .skip(1)
        .map(|l| words(l)[0].to_string())
        .collect()
}

const QDS: [&str; 5] = [
    "mixed-qd/qd=1",
    "mixed-qd/qd=2",
    "mixed-qd/qd=4",
    "mixed-qd/qd=8",
    "mixed-qd/qd=16",
];

#[test]
fn show_maps_the_targets_in_order_and_sweeps_the_qd_cycle() {
    let out = cmd("suite show")
        .arg(fixture("two-workers.icf"))
        .args(["--target", "/dev/sdb,/dev/sdc"])
        .succeeds();
    assert!(
        out.contains("Iometer target 'E: \"DATA1\"' -> /dev/sdb\n"),
        "{out}"
    );
    assert!(
        out.contains("Iometer target 'PHYSICALDRIVE:2' -> /dev/sdc\n"),
        "{out}"
    );
    assert!(out.contains("counted in 512-byte sectors"), "{out}");
    assert!(out.contains("two-workers: 5 tests"), "{out}");
    assert_eq!(shown_tests(&out), QDS);
    // Without --target, show lists what each would need.
    let out = cmd("suite show").arg(fixture("two-workers.icf")).succeeds();
    assert!(
        out.contains("Iometer target 'PHYSICALDRIVE:2' -> (give --target)"),
        "{out}"
    );
}

#[test]
fn the_mixed_spec_keeps_its_three_lines() {
    // Written back out, the imported spec has its lines and shares.
    let t = Tmp::new();
    let out = t.path("back.icf");
    cmd("suite export-icf")
        .arg(fixture("two-workers.icf"))
        .args([
            "--target",
            "E:,PHYSICALDRIVE:2",
            "--manager",
            "LAB",
            "-o",
            &out,
        ])
        .succeeds();
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(
        text.contains("\tmail store,NONE\n'size,% of size,% reads,% random,delay,burst,align,reply\n\t4096,60,70,100,0,1,0,0\n\t8192,30,50,100,0,1,4096,0\n\t65536,10,0,0,2,4,0,0\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "\t1          16         2          EXPONENTIAL\n'Test Type\n\tCYCLE_OUTSTANDING_IOS\n"
        ),
        "{text}"
    );
}

#[test]
fn export_then_import_gives_the_same_tests() {
    let t = Tmp::new();
    // A built-in study's test: per-spec queue depths as worker groups.
    let out = t.path("small.icf");
    cmd("suite export-icf iscsi-initiator-study --test small-block -o")
        .arg(&out)
        .succeeds();
    let back = cmd("suite show")
        .arg(&out)
        .args(["--target", "/dev/sdb"])
        .succeeds();
    let orig = cmd("suite show iscsi-initiator-study").succeeds();
    let want: Vec<String> = shown_tests(&orig)
        .into_iter()
        .filter(|n| n.starts_with("small-block/"))
        .collect();
    assert_eq!(shown_tests(&back), want);
    assert_eq!(want.len(), 10);
    // The fixture, exported and read again.
    let out = t.path("two.icf");
    cmd("suite export-icf --target E:,PHYSICALDRIVE:2 -o")
        .arg(&out)
        .arg(fixture("two-workers.icf"))
        .succeeds();
    let back = cmd("suite show").arg(&out).succeeds();
    assert_eq!(shown_tests(&back), QDS);
}

#[test]
fn an_icf_runs_on_its_targets() {
    let t = Tmp::new();
    // The fixture's region is 1 GiB (2097152 sectors): sparse files.
    let (a, b) = (t.path("a.dat"), t.path("b.dat"));
    for p in [&a, &b] {
        std::fs::File::create(p).unwrap().set_len(1 << 30).unwrap();
    }
    let out = t
        .cmd("suite run --time 200ms --ramp 0s --allow-destructive")
        .arg(fixture("two-workers.icf"))
        .args(["--target", &a, "--target", &b])
        .succeeds();
    for q in QDS {
        assert!(out.contains(q), "{out}");
    }
    let doc = t.show("1");
    let notes = doc.to_string();
    assert!(
        notes.contains("Iometer target 'E: \\\"DATA1\\\"' ->"),
        "{notes}"
    );
}

/// Exits 2 saying `needle`, and creates neither the database nor `-o`.
fn refused(t: &Tmp, args: &[&str], needle: &str) -> String {
    let err = cmd("suite")
        .args(args)
        .args(["--db", &t.db])
        .fails(2, needle);
    assert!(!Path::new(&t.db).exists(), "a database was created: {err}");
    err
}

#[test]
fn bad_icf_inputs_are_refused_before_anything_runs() {
    let t = Tmp::new();
    let two = fixture("two-workers.icf");
    // Too few --targets for the Iometer names: they are listed.
    let err = refused(
        &t,
        &["run", &two, "--target", "/tmp/x"],
        "names 2 Iometer target(s)",
    );
    assert!(err.contains("'E: \"DATA1\"', 'PHYSICALDRIVE:2'"), "{err}");
    refused(&t, &["run", &two], "give one --target for each");
    refused(&t, &["run", "missing.icf"], "missing.icf: no such file");
    // A target given twice (by any path).
    refused(
        &t,
        &["run", &two, "--target", "/tmp/x,/tmp/../tmp/x"],
        "is given twice",
    );
    refused(
        &t,
        &["run", "quick", "--target", "/tmp/x", "--target", "/tmp/x"],
        "is given twice",
    );
    // Shares not adding up to 100: the spec and its line.
    refused(
        &t,
        &["run", &fixture("bad-shares.icf"), "--target", "/tmp/x,/tmp/y"],
        "bad-shares.icf:38: access specification 'mail store': the lines' shares (% of size) add up to 95 %",
    );
    // Unknown sections and keys: every one, with its line.
    let err = refused(
        &t,
        &[
            "run",
            &fixture("unknown-section.icf"),
            "--target",
            "/tmp/x,/tmp/y",
        ],
        "unknown-section.icf:36: unknown section 'NETWORK TOPOLOGY'",
    );
    assert!(
        err.contains("unknown-section.icf:14: unknown key 'Record Resolts' in TEST SETUP"),
        "{err}"
    );
    // Workers and targets iotoll cannot lay out.
    refused(
        &t,
        &[
            "run",
            &fixture("uneven-targets.icf"),
            "--target",
            "/tmp/x,/tmp/y,/tmp/z",
        ],
        "the workers' targets cannot be expressed",
    );
}

#[test]
fn bad_exports_create_no_file() {
    let t = Tmp::new();
    let out = t.path("out.icf");
    let fails = |args: &[&str], needle: &str| {
        cmd("suite export-icf")
            .args(args)
            .args(["-o", &out])
            .fails(2, needle);
        assert!(!Path::new(&out).exists());
    };
    fails(&["adapter-vs-hba-study"], "3 disk tests (read, write, rw)");
    fails(
        &["adapter-vs-hba-study", "--test", "nope"],
        "no disk test 'nope'",
    );
    fails(&["bidirectional-transfer-study"], "has no disk test");
    fails(&[&fixture("bad-shares.icf")], "add up to 95 %");
    fails(
        &["quick", "--target", "E:,E:"],
        "--target E: is given twice",
    );
}
