//! Suites end to end through the binary, into a temporary database.

mod common;
use common::*;
use predicates::prelude::*;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const TINY: &str = r#"
name = "tiny"
reps = 2
ramp = "0s"
time = "400ms"

[[test]]
name = "d"
kind = "disk"
select = "median:iops"
bs = ["4k", "64k"]
size = "8m"
group = "disk"

[[test]]
name = "s"
kind = "net-stream"
conns = 2
reps = 1

[[test]]
name = "r"
kind = "net-rr"
select = "mean"
"#;

/// `suite run FILE --quiet` into the test's database.
fn suite_run(t: &Tmp, file: &str) -> assert_cmd::Command {
    let mut c = t.cmd("suite run --quiet");
    c.arg(file);
    c
}

#[test]
fn a_short_suite_end_to_end() {
    let t = Tmp::new();
    let file = t.file("suite.toml", TINY);
    let report = t.path("run.html");
    let table = suite_run(&t, &file)
        .args(["--config", "base", "--report", &report])
        .succeeds();
    for want in [
        "d/bs=4k",
        "d/bs=64k",
        "IOPS",
        "Mbit/s",
        "transactions/s",
        "IOPS per % CPU",
        "run 1 complete",
        "report written",
    ] {
        assert!(table.contains(want), "{want:?} missing:\n{table}");
    }
    let html = std::fs::read_to_string(&report).unwrap();
    assert!(
        html.contains("<svg") && html.contains("d/bs=64k"),
        "the run's report"
    );

    let list = t.list();
    let mut lines = list.lines();
    let header = lines.next().unwrap_or_default();
    for col in ["id", "config", "suite", "started", "status", "tests"] {
        assert!(header.split_whitespace().any(|c| c == col), "{list}");
    }
    assert!(lines.next().unwrap_or_default().starts_with("1 "), "{list}");
    assert!(
        list.contains("base") && list.contains("tiny") && list.contains("complete"),
        "{list}"
    );

    let v = t.show("base");
    let tests = v["tests"].as_array().unwrap();
    assert_eq!(tests.len(), 4);
    let t0 = &tests[0];
    let reps = t0["reps"].as_array().unwrap();
    assert_eq!(reps.len(), 2);
    assert_eq!(t0["select"], "median:iops");
    let sel = t0["selected_rep"].as_i64().unwrap();
    // The selected repetition is the one with the lower-middle IOPS (2 reps: the lower).
    let iops: Vec<f64> = reps
        .iter()
        .map(|r| r["doc"]["metrics"]["iops"].as_f64().unwrap())
        .collect();
    // Among the clean ones, if exactly one was interfered (other tenants of
    // a shared machine): a clean repetition is selected when there is one.
    let interfered: Vec<bool> = reps
        .iter()
        .map(|r| r["doc"]["cpu"]["local"]["interference"]["interfered"] == true)
        .collect();
    let want = match (interfered[0], interfered[1]) {
        (false, true) => 1,
        (true, false) => 2,
        _ if iops[0] <= iops[1] => 1,
        _ => 2,
    };
    assert_eq!(sel, want, "{iops:?} {interfered:?}");
    assert!(t0["spread_pct"].as_f64().is_some());
    // Every stored repetition is a valid result document.
    for t in tests {
        for r in t["reps"].as_array().unwrap() {
            validate(&r["doc"]);
        }
    }
    assert_eq!(tests[3]["select"], "mean");
    assert!(tests[3]["summary"]["trans_s"].as_f64().unwrap() > 0.0);
    assert!(v["disclosure"]["cpu"]["threads"].as_u64().is_some());
    let text = v["suite_text"].as_str().unwrap();
    assert!(text.contains("name = \"tiny\""));

    let csv = t.cmd("results export 1 --format csv").succeeds();
    assert!(csv.starts_with("run,config,test,group,rep,selected,metric,value,unit,level,part\n"));
    assert!(csv.contains("1,base,d/bs=4k,disk,1,"), "{}", &csv[..300]);
    assert!(csv.contains(",r,r,mean,true,trans_s,"));
    let io = t.cmd("results export 1 --format iometer-csv").succeeds();
    let header = io.lines().find(|l| l.starts_with("'Target Type")).unwrap();
    for col in [
        "IOps",
        "MBps (Decimal)",
        "Average Response Time",
        "% CPU Utilization",
        "CPU Effectiveness",
    ] {
        assert!(header.split(',').any(|c| c == col), "{col} missing");
    }
    let all: Vec<&str> = io.lines().filter(|l| l.starts_with("ALL,")).collect();
    assert_eq!(all.len(), 4, "one row per test, network ones too:\n{io}");
    // The value in column `name` of the row of test `test`, above zero.
    let positive = |test: &str, name: &str| {
        let row = all
            .iter()
            .find(|l| l.starts_with(&format!("ALL,All,{test},")))
            .unwrap();
        let i = header.split(',').position(|c| c == name).unwrap();
        // Test names hold commas only inside quotes; these do not.
        let v = row.split(',').nth(i).unwrap_or_default();
        assert!(v.parse::<f64>().unwrap() > 0.0, "{name}: {row}");
    };
    positive("s", "MBps (Decimal)");
    positive("r", "Transactions per Second");
    positive("r", "Average Transaction Time");

    t.cmd("results delete 1").succeeds();
    assert!(t.list().is_empty());
    t.cmd("results show 1").fails(2, "no run 1");
}

const SLOW: &str = r#"
name = "slow"
reps = 3
ramp = "0s"
time = "700ms"
[[test]]
name = "d"
kind = "disk"
size = "8m"
bs = ["4k", "8k", "16k"]
"#;

/// Runs SLOW and sends `signal` once its first repetition is stored (the
/// second starts).
fn signal_after_the_first_repetition(t: &Tmp, signal: i32) -> std::process::Output {
    let file = t.file("suite.toml", SLOW);
    signal_when(
        raw().args(["suite", "run", &file, "--db", &t.db]),
        signal,
        |e| e.contains("repetition 2/"),
    )
}

#[test]
fn sigint_marks_the_run_aborted_and_keeps_finished_repetitions() {
    let t = Tmp::new();
    let out = signal_after_the_first_repetition(&t, libc::SIGINT);
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let list = t.list();
    assert!(list.contains("interrupted"), "{list}");
    let reps: usize = t.show("1")["tests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["reps"].as_array().unwrap().len())
        .sum();
    assert!(reps >= 1, "finished repetitions kept");
}

#[test]
fn sigkill_leaves_a_sound_database_and_an_incomplete_run() {
    let t = Tmp::new();
    let out = signal_after_the_first_repetition(&t, libc::SIGKILL);
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&out.status),
        Some(libc::SIGKILL),
        "killed mid-run, not finished"
    );
    let s = iotoll_store::Store::open(Path::new(&t.db)).unwrap();
    assert!(s.integrity_ok().unwrap());
    drop(s);
    let list = t.list();
    assert!(list.contains("incomplete"), "{list}");
}

#[test]
fn bad_suites_are_refused_before_anything_runs() {
    let t = Tmp::new();
    for (text, needle) in [
        ("name = 't'\n[[test]\nname='x'\n", ":2"),
        (
            "name='t'\n[[test]]\nname='a'\nkind='disk'\nqd='deep'\n",
            ":5: key 'qd'",
        ),
        (
            "name='t'\n[[test]]\nname='a'\nkind='disk'\nfrobnicate=1\n",
            ":5: key 'frobnicate'",
        ),
        (
            "name='t'\n[[test]]\nname='a'\nkind='disk'\nspec=['db-oltp-9k']\n",
            "unknown spec 'db-oltp-9k'",
        ),
        (
            "name='t'\n[[test]]\nname='a'\nkind='disk'\nbs=[]\n",
            "empty sweep",
        ),
        (
            "name='t'\n[[test]]\nname='a'\nkind='disk'\n[[test]]\nname='a'\nkind='disk'\n",
            "duplicate test name",
        ),
    ] {
        let file = t.file("suite.toml", text);
        let err = suite_run(&t, &file).fails(2, needle);
        assert!(err.contains("suite.toml"), "{err}");
    }
    assert!(!Path::new(&t.db).exists(), "nothing was written");
    suite_run(&t, "no-such-suite").fails(2, "quick");
    // Over 24 hours asks for --yes.
    let file = t.file(
        "suite.toml",
        "name='t'\ntime='25h'\n[[test]]\nname='a'\nkind='disk'\n",
    );
    suite_run(&t, &file).fails(2, "--yes");
    // A report nobody could write is refused before anything runs.
    suite_run(&t, "quick")
        .args(["--report", "/no/such/dir/r.html"])
        .fails(2, "--report");
    assert!(!Path::new(&t.db).exists());
}

#[test]
fn a_smoke_run_overrides_every_duration_and_says_so() {
    let t = Tmp::new();
    // 2 × 25 h as written: far over the 24 h that asks for --yes.
    let file = t.file(
        "suite.toml",
        "name='long'\nreps=2\nramp='1h'\ntime='25h'\n\
         [[test]]\nname='d'\nkind='disk'\nsize='4m'\n\
         [[test]]\nname='r'\nkind='net-rr'\ntime='2h'\n",
    );
    suite_run(&t, &file).fails(2, "--yes");
    // What `show` estimates follows the overrides and --reps.
    let show = cmd("suite show --time 5s --ramp 0s").arg(&file).succeeds();
    assert!(show.contains("2 tests, estimated 20 s"), "{show}");
    assert!(
        show.contains("durations overridden: time 5s, ramp 0s"),
        "{show}"
    );
    let report = t.path("smoke.html");
    // No --yes needed for 0.6 s.
    let stdout = suite_run(&t, &file)
        .args(["--time", "300ms", "--ramp", "0s", "--reps", "1"])
        .args(["--report", &report])
        .timeout(Duration::from_secs(120))
        .succeeds();
    assert!(stdout.contains("note: durations overridden:"), "{stdout}");
    let v = t.show("1");
    let note = v["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n.as_str())
        .find(|n| n.starts_with("durations overridden:"))
        .expect("the override is a run note");
    assert!(
        note.contains("time 300ms, ramp 0s")
            && note.contains("time 2h (1 test), 25h (1 test); ramp 1h"),
        "{note}"
    );
    let tests = v["tests"].as_array().unwrap();
    assert_eq!(tests.len(), 2);
    for t in tests {
        assert_eq!(t["params"]["time"], "300ms", "{t}");
        assert_eq!(t["params"]["ramp"], "0s", "{t}");
        let reps = t["reps"].as_array().unwrap();
        assert_eq!(reps.len(), 1, "--reps 1");
        let spec = &reps[0]["doc"]["spec"];
        assert_eq!(spec["time_s"], 0.3, "{spec}");
        assert_eq!(spec["ramp_s"], 0.0, "{spec}");
    }
    let html = std::fs::read_to_string(&report).unwrap();
    assert!(html.contains("durations overridden"), "the report says so");
    // A zero window is refused before anything runs.
    suite_run(&t, &file)
        .args(["--time", "0s"])
        .fails(2, "--time must be positive");
}

#[test]
fn an_iometer_export_with_no_row_is_an_error() {
    let t = Tmp::new();
    // A network result with CPU only: nothing Iometer's columns can hold.
    let table = t.file("t.csv", "test,cpu_pct\ncpu-only,12.5\n");
    t.cmd("results import --format table --config x")
        .arg(&table)
        .succeeds();
    t.cmd("results export 1 --format iometer-csv")
        .assert()
        .code(2)
        .stdout(predicate::str::is_empty())
        .stderr(predicate::str::contains("cpu-only"))
        .stderr(predicate::str::contains(
            "no throughput or transaction rate",
        ));
}

#[test]
fn database_paths() {
    let t = Tmp::new();
    // A missing directory is created.
    let deep = t.path("a/b/c/r.db");
    db_cmd(&deep, "results list").succeeds();
    assert!(Path::new(&deep).exists());
    // An unusable one is a clear error before any workload starts.
    let bad = format!("{}/r.db", t.file("plain-file", "x"));
    let suite = t.file("suite.toml", TINY);
    let err = db_cmd(&bad, "suite run --quiet")
        .arg(&suite)
        .fails(1, "results database");
    assert!(err.contains("plain-file"), "{err}");
    assert!(!err.contains("[1/"), "a workload started: {err}");
    // A database from a newer iotoll is refused, not touched.
    let newer = t.path("newer.db");
    let c = rusqlite::Connection::open(&newer).unwrap();
    c.pragma_update(None, "user_version", 7).unwrap();
    drop(c);
    db_cmd(&newer, "results list").fails(1, "newer iotoll");
}

#[test]
fn suite_list_and_show() {
    let s = cmd("suite list").succeeds();
    for n in [
        "quick",
        "iscsi-initiator-study",
        "adapter-vs-hba-study",
        "hw-iscsi-study",
        "ten-gig-adapter-study",
        "bidirectional-transfer-study",
    ] {
        assert!(s.contains(n), "{n}");
    }
    let s = cmd("suite show bidirectional-transfer-study").succeeds();
    assert!(
        s.contains("16 pairs: c1>server, c2>server") && s.contains("c16>server"),
        "the study's placement: {s}"
    );
    let s = cmd("suite show ten-gig-adapter-study").succeeds();
    assert!(s.contains("27 tests"), "{s}");
    assert!(
        s.contains("conns/dir=rx,conns=1000") && s.contains("latency/size=1400"),
        "{s}"
    );
}

#[test]
fn sysinfo_discloses_the_host() {
    let v = cmd("sysinfo --json").json();
    for k in [
        "host",
        "iotoll",
        "os",
        "cpu",
        "memory",
        "interfaces",
        "block_devices",
        "tcp",
    ] {
        assert!(!v[k].is_null(), "{k} missing");
    }
    assert!(v["cpu"]["threads"].as_u64().unwrap() >= 1);
    let s = cmd("sysinfo").succeeds();
    assert!(
        s.contains("cpu") && s.contains("interface") && s.contains("tcp_rmem"),
        "{s}"
    );
}

/// With a 0 % repeatability bound two repetitions never agree exactly, so
/// `rerun = 1` adds one repetition, and the test is still flagged.
#[test]
fn rerun_adds_repetitions_while_not_repeatable() {
    let t = Tmp::new();
    let file = t.file(
        "suite.toml",
        "name='rr'\nreps=2\nrerun=1\nrepeatability_pct=0\nramp='0s'\ntime='300ms'\n[[test]]\nname='d'\nkind='disk'\nsize='4m'\n",
    );
    let table = suite_run(&t, &file).succeeds();
    assert!(
        table.contains("NOT REPEATABLE") && table.contains("3/3"),
        "{table}"
    );
    let v = t.show("1");
    assert_eq!(v["tests"][0]["reps"].as_array().unwrap().len(), 3);
    assert_eq!(v["tests"][0]["repeatable"], false);
    assert!(v["notes"].to_string().contains("not repeatable"));
}

/// A CPU hog that runs through the whole suite: every repetition is
/// interfered, `--on-interference rerun` adds exactly two more (its bound),
/// and `results show` names the hog by its PID. The hog burns up to a core
/// (reniced to -5 when root, so it outweighs ordinary processes on a shared
/// machine); the threshold, 1 % of the host, is far below its share.
#[test]
fn on_interference_rerun_is_bounded_and_results_show_names_the_hog() {
    let t = Tmp::new();
    let file = t.file(
        "suite.toml",
        "name='hog'\nreps=1\nramp='0s'\ntime='500ms'\n[[test]]\nname='d'\nkind='disk'\nsize='4m'\n",
    );
    let mut hog = Command::new("sh")
        .args(["-c", "while :; do :; done"])
        .spawn()
        .unwrap();
    let pid = hog.id();
    // SAFETY: setpriority on our own child; failure (not root) is harmless.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, pid as libc::id_t, -5);
    }
    let out = suite_run(&t, &file)
        .args(["--on-interference", "rerun", "--interference-pct", "1"])
        .out();
    let _ = hog.kill();
    let _ = hog.wait();
    assert!(out.status.success(), "{}", stderr(&out));
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(
        table.contains("3/3") && table.contains("INTERFERED (rep 1, 2, 3)"),
        "{table}"
    );
    assert!(table.contains(&format!("pid {pid}")), "{table}");
    let show = t.cmd("results show 1").succeeds();
    assert!(
        show.contains("rep 1")
            && show.contains("INTERFERED")
            && show.contains(&format!("sh pid {pid}")),
        "{show}"
    );
    let v = t.show("1");
    let reps = v["tests"][0]["reps"].as_array().unwrap();
    assert_eq!(reps.len(), 3, "one repetition + at most 2 reruns");
    for r in reps {
        validate(&r["doc"]);
        let i = &r["doc"]["cpu"]["local"]["interference"];
        assert_eq!(i["interfered"], true);
        assert_eq!(i["threshold_pct"], 1.0);
        assert!(i["processes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["pid"] == pid));
        assert!(r["doc"]["metrics"]["cpu_others_pct"].as_f64().unwrap() > 1.0);
    }
}

#[test]
fn interference_flags_are_checked() {
    cmd("suite run quick --interference-pct 150").fails(2, "--interference-pct");
    cmd("suite run quick --on-interference ignore").fails(2, "--on-interference");
}

/// A suite whose tests run on hosts: c1 and c2 to srv, and a disk test on c1.
const PLACED: &str = r#"
name = "placed"
time = "1s"

[[test]]
name = "bidir"
kind = "net-stream"
dir = "bidir"
pairs = [["c1", "srv"], ["c2", "srv"], ["c9", "srv"]]

[[test]]
name = "d"
kind = "disk"
on = ["c1"]
"#;

/// `suite run` of `suite` with `args` fails with exit 2 naming `needle`,
/// before anything is created: no results database, no workload.
fn refused(t: &Tmp, suite: &str, args: &[&str], needle: &str) -> String {
    let err = suite_run(t, suite).args(args).fails(2, needle);
    assert!(!Path::new(&t.db).exists(), "a database was created: {err}");
    assert!(!err.contains("[1/"), "a workload started: {err}");
    err
}

#[test]
fn hosts_files_are_checked_before_anything_runs() {
    let t = Tmp::new();
    let suite = t.file("placed.toml", PLACED);
    // A host listed twice: the file, its line and the host.
    let dup = t.file(
        "dup.toml",
        "[hosts]\nc1 = \"10.9.0.1\"\nsrv = \"10.9.0.9\"\nc1 = \"10.9.0.2\"\n",
    );
    refused(
        &t,
        &suite,
        &["--hosts", &dup],
        &format!("{dup}:4: host 'c1' is listed twice"),
    );
    // Two hosts at one address: both named.
    let same = t.file(
        "same.toml",
        "[hosts]\nc1 = \"10.9.0.1\"\nc2 = \"10.9.0.1:7575\"\n",
    );
    refused(
        &t,
        &suite,
        &["--hosts", &same],
        "hosts 'c1' and 'c2' are the same agent",
    );
    // A file that does not parse, or holds more than hosts.
    let bad = t.file("bad.toml", "[hosts]\nc1 = \"10.9.0.1\nsrv = 1\n");
    refused(&t, &suite, &["--hosts", &bad], &format!("{bad}:2"));
    let more = t.file("more.toml", "name = \"x\"\n[hosts]\nc1 = \"10.9.0.1\"\n");
    refused(
        &t,
        &suite,
        &["--hosts", &more],
        &format!("{more}:1: key 'name'"),
    );
    let err = refused(&t, &suite, &["--hosts", &t.path("none.toml")], "--hosts");
    assert!(err.contains("none.toml"), "{err}");
    // A pair naming a host the file does not have.
    let hosts = t.file(
        "hosts.toml",
        "[hosts]\nc1 = \"10.9.0.1\"\nc2 = \"10.9.0.2\"\nsrv = \"10.9.0.9\"\n",
    );
    refused(
        &t,
        &suite,
        &["--hosts", &hosts],
        "test 'bidir': pair 3 names host 'c9', which is not in the hosts file (known: c1, c2, srv)",
    );
}

#[test]
fn multi_host_suites_need_hosts_or_a_lab() {
    let t = Tmp::new();
    refused(
        &t,
        "bidirectional-transfer-study",
        &[],
        "test 'bidir' runs on hosts (c1, ..., server): give --hosts FILE or --lab NAME (e.g. --lab quad-100m)",
    );
    let suite = t.file("placed.toml", PLACED);
    let err = refused(
        &t,
        &suite,
        &[],
        "test 'bidir' runs on hosts (c1, ..., srv): give --hosts FILE or --lab NAME",
    );
    assert!(
        !err.contains("e.g."),
        "no built-in lab has these hosts: {err}"
    );
    // With --lab, a host neither defined nor in the lab is named (the lab
    // is only looked up: nothing is brought up).
    refused(
        &t,
        &suite,
        &["--lab", "quad-100m"],
        "test 'bidir': pair 1 names host 'srv', which is neither in any [hosts] table (known: none) nor a host of the lab (its hosts: server, c1,",
    );
    // --on-host-failure takes continue or stop.
    suite_run(&t, &suite)
        .args(["--on-host-failure", "later"])
        .fails(2, "--on-host-failure");
}
