//! Real short workloads on temp files, through the binary.

mod common;
use common::*;

/// The share of reads is the spec's within five standard deviations of
/// the binomial draw of this many I/Os (each I/O reads with probability
/// `p`): a slow window on a busy machine has fewer I/Os and a wider band,
/// never a failure by chance (about 6 in 10 million).
fn read_fraction_is(doc: &serde_json::Value, p: f64) {
    let ios = metric(doc, "iops") * metric(doc, "window_s");
    let frac = metric(doc, "read_iops") / metric(doc, "iops");
    let band = 5.0 * (p * (1.0 - p) / ios).sqrt();
    assert!(
        (frac - p).abs() <= band,
        "read fraction {frac} of {ios} I/Os, {p} expected (within {band})"
    );
}

fn check_accounting(doc: &serde_json::Value, bs: f64) {
    let w = metric(doc, "window_s");
    let ios = metric(doc, "iops") * w;
    assert!(ios > 100.0, "too few I/Os to judge: {ios}");
    let reads = metric(doc, "read_iops") * w;
    let writes = metric(doc, "write_iops") * w;
    assert!((reads + writes - ios).abs() < 0.5);
    // Bytes counted are exactly I/Os x transfer size.
    let bytes = metric(doc, "mb_s") * 1e6 * w;
    assert!(
        (bytes - ios * bs).abs() / bytes < 1e-9,
        "bytes {bytes} vs {ios} x {bs}"
    );
    let rb = metric(doc, "read_mb_s") * 1e6 * w;
    assert!((rb - reads * bs).abs() <= bs * 1e-6 + 1.0);
    assert_eq!(metric(doc, "errors"), 0.0);
    let lat = &doc["latency"];
    assert_eq!(lat["count"].as_f64().unwrap().round(), ios.round());
    assert!(metric(doc, "lat_min_us") <= metric(doc, "lat_p50_us"));
    assert!(metric(doc, "lat_p50_us") <= metric(doc, "lat_p99_us"));
    assert!(metric(doc, "lat_p99_us") <= metric(doc, "lat_max_us") + 1.0);
    // Reads' and writes' own response times weigh up to the mean of all
    // (held by the histogram to 0.1 %), and the larger maximum is the maximum.
    let m = &doc["metrics"];
    let part = |k: &str, n: f64| if n > 0.0 { metric(doc, k) * n } else { 0.0 };
    let weighed = part("read_lat_mean_us", reads) + part("write_lat_mean_us", writes);
    let all = metric(doc, "lat_mean_us") * ios;
    assert!((weighed - all).abs() <= 2e-3 * all, "{weighed} vs {all}");
    let max = [
        m["read_lat_max_us"].as_f64(),
        m["write_lat_max_us"].as_f64(),
    ]
    .into_iter()
    .flatten()
    .fold(0.0, f64::max);
    let lat_max = metric(doc, "lat_max_us");
    assert!(
        max <= lat_max && lat_max <= max * 1.002 + 0.001,
        "{max} vs {lat_max}"
    );
    // Whole-host CPU was measured on the window, and efficiency derived from it.
    let cpu = metric(doc, "cpu_pct");
    assert!(cpu > 0.0 && cpu <= 100.0);
    let eff = metric(doc, "iops_per_cpu_pct");
    assert!((eff - metric(doc, "iops") / cpu).abs() < 1e-6 * eff);
    let n = metric(doc, "cpus");
    let sd = metric(doc, "cpu_us_per_io");
    assert!((sd - cpu / 100.0 * n * 1e6 / metric(doc, "iops")).abs() < 1e-6 * sd);
    assert!(doc["cpu"]["local"]["per_core"].as_array().unwrap().len() as f64 == n);
    check_littles_law(doc);
}

/// The queue depth requested in total: QD per worker (1 for psync) x workers.
fn requested_depth(doc: &serde_json::Value) -> f64 {
    let per_worker = if doc["spec"]["engine"] == "psync" {
        1.0
    } else {
        doc["spec"]["qd"].as_f64().unwrap()
    };
    per_worker * doc["spec"]["workers"].as_f64().unwrap()
}

/// Little's law as an invariant: the depth measured directly (integral of
/// the in-flight count) less the part of it at the window's edges, which the
/// tool measures too (`qd_completed`: without the I/Os outstanding across
/// the window's end, with the latency before its start of those outstanding
/// then), equals IOPS x mean latency, up to the histogram's rounding of the
/// mean, whatever the speed or load of the host; and no more I/Os are ever
/// outstanding than slots exist.
fn check_littles_law(doc: &serde_json::Value) {
    let qd = metric(doc, "qd_achieved");
    let requested = requested_depth(doc);
    assert!(
        qd > 0.0 && qd <= requested * 1.001,
        "qd_achieved {qd} of {requested}"
    );
    let little = metric(doc, "iops") * metric(doc, "lat_mean_us") / 1e6;
    let completed = metric(doc, "qd_completed");
    assert!(
        (little - completed).abs() <= 0.02 * qd,
        "Little's law: iops x lat_mean = {little}, qd_completed = {completed} (qd_achieved {qd})"
    );
    let notes = doc["notes"].to_string();
    assert!(!notes.contains("Little's law check failed"), "{notes}");
}

#[test]
fn io_uring_random_mixed() {
    let doc = disk_json(&words(
        "--engine io_uring --bs 4k --read 70 --random 100 --qd 8 --size 16m",
    ));
    assert_eq!(doc["status"], "complete");
    assert_eq!(doc["spec"]["engine"], "io_uring");
    assert_eq!(doc["spec"]["qd"], 8);
    check_accounting(&doc, 4096.0);
    read_fraction_is(&doc, 0.70);
    // The temporary test file is gone.
    let t = doc["spec"]["target"].as_str().unwrap();
    assert!(!std::path::Path::new(t).exists(), "{t} left behind");
}

/// The engine keeps the requested depth in flight, on a real device. That
/// every slot is refilled is checked exactly on a fake clock
/// (`runner::tests::a_full_queue_meets_littles_law_exactly`, 8 of 8); here the bound is loose because
/// the machine is real: io_uring submits each I/O with its own system call
/// (issue 27 §1), so a slot freed by a reap waits for the calls refilling
/// the ones before it (some 2 of 32 at QD 32 on the 2-CPU VM, 13.7 of 16
/// seen here), and a worker descheduled while it refills leaves its free
/// slots empty. Half the depth still fails an engine that holds fewer I/Os
/// than asked. The file lives under the target directory, not in $TMPDIR,
/// which may be tmpfs (where O_DIRECT reads complete inside the submitting
/// system call and the queue is never full).
#[test]
fn io_uring_keeps_the_requested_depth_in_flight() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let target = dir.path().join("qd.tst");
    let doc = cmd("disk run --json --ramp 200ms --time 2s --create --size 64m")
        .args(["--engine", "io_uring", "--bs", "4k", "--read", "100"])
        .args(["--random", "100", "--qd", "16", "--target"])
        .arg(&target)
        .json();
    validate(&doc);
    assert_eq!(doc["spec"]["direct"], true);
    let qd = metric(&doc, "qd_achieved");
    assert!(
        (8.0..=16.0).contains(&qd),
        "qd_achieved {qd} of 16; notes: {}",
        doc["notes"]
    );
    check_accounting(&doc, 4096.0);
}

/// `--engine io_uring_sqpoll` (issue 27 §1): the same engine with a
/// polling kernel thread; the document names it (valid by the schema) and
/// says what its poller costs. Skipped where the kernel refuses SQPOLL.
#[test]
fn io_uring_sqpoll_runs_and_says_what_it_costs() {
    let out = cmd("disk run --json --ramp 0s --time 1s --size 16m --qd 8")
        .args(["--engine", "io_uring_sqpoll"])
        .output()
        .unwrap();
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("SQPOLL"), "{err}");
        eprintln!("SQPOLL unavailable here; test skipped: {err}");
        return;
    }
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    validate(&doc);
    assert_eq!(doc["spec"]["engine"], "io_uring_sqpoll");
    let notes = doc["notes"].to_string();
    assert!(notes.contains("polls the submission queue"), "{notes}");
    check_accounting(&doc, 4096.0);
}

#[test]
fn psync_sequential_write() {
    let doc = disk_json(&words(
        "--engine psync --bs 8k --read 0 --random 0 --size 8m --qd 4",
    ));
    assert_eq!(doc["spec"]["engine"], "psync");
    check_accounting(&doc, 8192.0);
    assert_eq!(metric(&doc, "read_iops"), 0.0);
    let notes = doc["notes"].to_string();
    assert!(notes.contains("--qd 4 has no effect"), "{notes}");
}

#[test]
fn builtin_spec_and_workers() {
    let doc = disk_json(&words(
        "--spec web-file-server-8k --workers 2 --size 16m --config baseline",
    ));
    assert_eq!(doc["spec"]["spec"], "web-file-server-8k");
    assert_eq!(doc["spec"]["bs"], 8192);
    assert_eq!(doc["spec"]["qd"], 28);
    assert_eq!(doc["config"], "baseline");
    check_accounting(&doc, 8192.0);
    read_fraction_is(&doc, 0.95);
}

/// Writes land only on aligned offsets inside the region: every untouched
/// byte of a zero-filled file stays zero, and written blocks hold random data.
#[test]
fn writes_honour_alignment_and_region() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("zeros");
    let len = 1usize << 20;
    std::fs::write(&p, vec![0u8; len]).unwrap();
    let (off, size) = (64usize << 10, 256usize << 10);
    disk_json_on(
        p.to_str().unwrap(),
        "--allow-destructive --buffered --bs 4k --align 8k --read 0 --random 100 \
         --offset 64k --size 256k",
    );
    let data = std::fs::read(&p).unwrap();
    assert_eq!(data.len(), len, "file size unchanged");
    assert!(
        data[..off].iter().all(|b| *b == 0),
        "bytes before --offset written"
    );
    assert!(
        data[off + size..].iter().all(|b| *b == 0),
        "bytes past the region written"
    );
    let mut written = 0;
    for blk in (off..off + size).step_by(4096) {
        let nonzero = data[blk..blk + 4096].iter().any(|b| *b != 0);
        if (blk - off) % 8192 != 0 {
            assert!(!nonzero, "unaligned block at {blk} written");
        } else if nonzero {
            written += 1;
        }
    }
    // 32 aligned positions, thousands of random writes: all are hit.
    assert_eq!(written, 32);
}

#[test]
fn read_only_run_on_existing_file_leaves_it_unchanged() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("data");
    let content: Vec<u8> = (0..(2u32 << 20))
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    std::fs::write(&p, &content).unwrap();
    let t = p.to_str().unwrap();
    let doc = disk_json_on(t, "--read 100 --random 0 --bs 64k");
    assert_eq!(doc["spec"]["target_kind"], "existing-file");
    assert_eq!(doc["spec"]["size"], 2 << 20);
    assert_eq!(std::fs::read(&p).unwrap(), content);
    // The null engine completes writes without touching the target.
    let doc = disk_json_on(t, "--read 0 --allow-destructive --engine null");
    assert_eq!(doc["spec"]["engine"], "null");
    assert!(metric(&doc, "write_iops") > 0.0);
    assert_eq!(std::fs::read(&p).unwrap(), content);
}

#[test]
fn created_test_file_is_kept_only_with_keep() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("t.tst");
    disk_json_on(p.to_str().unwrap(), "--create --size 4m");
    assert!(!p.exists());
    disk_json_on(p.to_str().unwrap(), "--create --keep --size 4m");
    assert_eq!(std::fs::metadata(&p).unwrap().len(), 4 << 20);
}

#[test]
fn burst_delay_limits_the_rate() {
    // 10 ms before each burst of 2 I/Os: at most ~200 IOPS.
    let doc = disk_json(&words("--burst-delay 10ms --burst-len 2 --qd 4 --size 4m"));
    let iops = metric(&doc, "iops");
    // The ceiling is the pacing; the floor only says it ran (a loaded host
    // may lag the pace, never beat it).
    assert!(iops > 20.0 && iops <= 205.0, "iops {iops}");
}

#[test]
fn human_output_has_the_table() {
    let s = cmd("disk run --ramp 0s --time 1s --size 4m").succeeds();
    for want in [
        "throughput",
        "IOPS",
        "latency us",
        "p99.99",
        "cpu",
        "% of",
        "efficiency",
        "CPU us per I/O",
        "qd_achieved",
        "iops x mean latency",
    ] {
        assert!(s.contains(want), "missing {want:?} in:\n{s}");
    }
}

/// The twelve of the studies and Iometer's four mixed patterns, each
/// with its lines, their shares adding up to 100.
#[test]
fn specs_lists_the_twelve_and_the_four_mixes() {
    let v = cmd("disk specs --json").json();
    let all = v.as_array().unwrap();
    assert_eq!(all.len(), 16);
    for s in all {
        let lines = s["lines"].as_array().unwrap();
        let total: u64 = lines.iter().map(|l| l["share_pct"].as_u64().unwrap()).sum();
        assert_eq!(total, 100, "{s}");
    }
    let fs = all
        .iter()
        .find(|s| s["name"] == "iometer-file-server")
        .unwrap();
    assert_eq!(fs["lines"].as_array().unwrap().len(), 8);
    let s = cmd("disk specs").succeeds();
    for want in [
        "video-on-demand-512k",
        "exchange-email-4k",
        "iometer-file-server",
        "iometer-web-server",
        "iometer-database",
        "iometer-workstation",
    ] {
        assert!(s.contains(want), "{want} in:\n{s}");
    }
}

#[test]
fn schema_rejects_a_wrong_document() {
    let doc = disk_json(&["--size", "4m"]);
    type Edit = fn(&mut serde_json::Value);
    let wrong: [(&str, Edit); 9] = [
        ("not a kind", |d| d["kind"] = "nvme".into()),
        ("a disk spec under another kind", |d| {
            d["kind"] = "net-rr".into()
        }),
        ("an unknown top-level key", |d| d["surprise"] = 1.into()),
        ("a metric not in the registry", |d| {
            d["metrics"]["made_up_metric"] = 1.0.into()
        }),
        ("a string for a metric", |d| {
            d["metrics"]["iops"] = "100".into()
        }),
        ("a negative share of CPU", |d| {
            d["metrics"]["cpu_pct"] = (-3.0).into()
        }),
        ("a string for a size", |d| d["spec"]["bs"] = "4k".into()),
        ("an unknown spec key", |d| {
            d["spec"]["surprise"] = true.into()
        }),
        ("a disclosure for a disk", |d| {
            d["disclosure"] = serde_json::json!({"local": {}, "remote": {}})
        }),
    ];
    for (what, edit) in wrong {
        let mut d = doc.clone();
        edit(&mut d);
        assert!(!schema_errors(&d).is_empty(), "accepted {what}");
    }
}

#[test]
fn a_single_run_is_stored_with_its_label() {
    let t = Tmp::new();
    t.cmd("disk run --ramp 0s --time 1s --size 4m --config nvme-a --quiet")
        .succeeds();
    let v = t.show("nvme-a");
    assert_eq!(v["suite"], "single disk");
    assert_eq!(v["status"], "complete");
    assert!(v["tests"][0]["summary"]["iops"].as_f64().unwrap() > 0.0);
    validate(&v["tests"][0]["reps"][0]["doc"]);
    // --no-db stores nothing.
    let elsewhere = t.path("elsewhere");
    cmd("disk run --ramp 0s --time 1s --size 4m --no-db --quiet")
        .env("XDG_DATA_HOME", &elsewhere)
        .succeeds();
    assert!(!std::path::Path::new(&elsewhere).exists());
}

/// `--interference-pct` sets the threshold the window's other processes
/// are judged against; the document always carries the measurement.
#[test]
fn interference_threshold_flag() {
    let doc = disk_json(&["--size", "4m", "--no-db", "--interference-pct", "100"]);
    let i = &doc["cpu"]["local"]["interference"];
    assert_eq!(i["threshold_pct"], 100.0);
    assert_eq!(i["interfered"], false, "nothing exceeds 100 % of the host");
    assert!(!doc["notes"].to_string().contains("interference:"));
    assert!(doc["metrics"]["cpu_others_pct"].as_f64().is_some());
    let me = doc["cpu"]["local"]["top"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["role"] == "self")
        .count();
    assert!(me <= 1);
    cmd("disk run --interference-pct 101").fails(2, "--interference-pct");
}

/// Seen: iotoll's own CPU printed twice with two values (31.0 % and
/// 39.3 %), "others" below the sum of the processes listed under it, a
/// top list summing to more than the busy host. Now one account: its parts
/// add up to the busy figure, iotoll's own is its exact figure, printed
/// once, and no process exceeds the host.
#[test]
fn the_cpu_account_adds_up_and_each_figure_is_printed_once() {
    let doc = disk_json(&["--size", "4m", "--no-db"]);
    let c = &doc["cpu"]["local"];
    let a = &c["account"];
    let part = |k: &str| a[k].as_f64().unwrap_or_else(|| panic!("{k} in {a}"));
    let total: f64 = [
        "self_pct",
        "endpoint_pct",
        "sut_pct",
        "others_pct",
        "kernel_threads_pct",
        "kernel_other_pct",
        "steal_pct",
    ]
    .iter()
    .map(|k| part(k))
    .sum();
    let busy = c["busy_pct"].as_f64().unwrap();
    let tickless = doc["notes"].to_string().contains("tickless");
    assert!(tickless || (total - busy).abs() < 1e-6, "{a} vs {busy}");
    assert_eq!(a["self_pct"], c["self_pct"]);
    assert_eq!(a["others_pct"], c["interference"]["others_pct"]);
    for t in c["top"].as_array().unwrap() {
        assert!(t["cpu_pct"].as_f64().unwrap() <= busy + 1e-9, "{t}");
    }
    let s = cmd("disk run --ramp 0s --time 1s --size 4m --no-db").succeeds();
    assert!(!s.contains("iotoll itself"), "{s}");
    assert!(!s.contains("(this iotoll)"), "{s}");
    assert!(s.contains("cpu split") && s.contains("% busy"), "{s}");
}

/// Seen: an iSCSI target in the lab made 8 of 12 tests INTERFERED. A
/// process named as the system under test is its own part of the CPU
/// (cpu_sut_pct), never interference, and the initiator's figure is the
/// host's busy CPU less it.
#[test]
fn the_system_under_test_is_not_interference() {
    struct Hog(std::process::Child);
    impl Drop for Hog {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let hog = Hog(std::process::Command::new("sh")
        .args(["-c", "while :; do :; done"])
        .spawn()
        .unwrap());
    let pid = hog.0.id();
    let doc = disk_json(&["--size", "4m", "--no-db", "--sut-process", &pid.to_string()]);
    drop(hog);
    let c = &doc["cpu"]["local"];
    let sut = c["account"]["sut_pct"].as_f64().unwrap();
    assert!(
        sut > 0.0,
        "a spinning shell used no CPU in a 1 s window? {c}"
    );
    let i = &c["interference"];
    let named = i["processes"].as_array().unwrap();
    assert!(named.iter().all(|p| p["pid"] != pid), "{i}");
    assert_eq!(i["others_pct"], c["account"]["others_pct"]);
    let m = &doc["metrics"];
    assert_eq!(m["cpu_sut_pct"].as_f64(), Some(sut));
    let initiator = m["cpu_initiator_pct"].as_f64().unwrap();
    assert!((initiator - (m["cpu_pct"].as_f64().unwrap() - sut)).abs() < 1e-9);
    assert!(doc["notes"]
        .to_string()
        .contains("cannot be split by process"));
    cmd("disk run --sut-process 0").fails(2, "--sut-process");
}

/// A worker the scheduler does not run across an edge of the window (a
/// busy host; here a 600 ms stall injected just before it looks at a batch
/// of completions) keeps its I/Os outstanding all the while: across the
/// window's end they count in `qd_achieved` but, completing after it, have
/// no latency in the window; across its start, their latency before it is
/// measured but not in the window's depth. Little's law still holds with
/// the edges the tool measures, and its check stays quiet.
#[test]
#[cfg_attr(
    not(feature = "test-hooks"),
    ignore = "needs the test-hooks feature: run ./test.sh"
)]
fn littles_law_holds_when_a_worker_stalls_across_an_edge() {
    // The stall from 700 ms to 1300 ms after the workers start: across the
    // end of a 1 s window without ramp-up, across the start of one after a
    // 1 s ramp-up.
    for ramp in ["0s", "1s"] {
        let doc = cmd(&format!("disk run --json --ramp {ramp} --time 1s"))
            .env("IOTOLL_INJECT_FAULT", "disk-stall@700")
            .args(words(
                "--engine io_uring --bs 4k --read 70 --random 100 --qd 8 --size 16m",
            ))
            .json();
        validate(&doc);
        assert_eq!(doc["status"], "complete");
        check_accounting(&doc, 4096.0);
    }
}
