//! Issue 11: several targets, workers per target or spread, workers pinned
//! to CPUs, mixed access specifications — end to end through the CLI.

mod common;
use common::*;
use serde_json::Value;

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

/// A part's I/Os and bytes, from its `counts`.
fn ios(part: &Value) -> u64 {
    let c = &part["counts"];
    u(&c["reads"]) + u(&c["writes"])
}

fn bytes(part: &Value) -> u64 {
    let c = &part["counts"];
    u(&c["read_bytes"]) + u(&c["write_bytes"])
}

/// The I/Os of the window, from the latency histogram (every measured I/O
/// is timed), and checked against IOPS x window.
fn measured(doc: &Value) -> u64 {
    let n = u(&doc["latency"]["count"]);
    let from_rate = metric(doc, "iops") * metric(doc, "window_s");
    assert!(
        (from_rate - n as f64).abs() < 1e-6 * n as f64,
        "{from_rate} vs {n}"
    );
    n
}

/// Two test files, two workers each, or two workers spread over both:
/// per-target, per-worker and per-line counts add up to the totals
/// exactly, each target lists the workers that had it, and a spread
/// worker kept its QD on each target.
#[test]
fn several_targets_add_up_to_the_totals() {
    let t = Tmp::new();
    let (a, b) = (t.path("a.tst"), t.path("b.tst"));
    let targets = format!("{a},{b}");
    for (spread, want_workers) in [("", [[0, 1], [2, 3]]), ("--spread", [[0, 1], [0, 1]])] {
        let line = format!("--create --size 4m --workers 2 --qd 2 --read 70 {spread}");
        let doc = disk_json_on(&targets, &line);
        let n = measured(&doc);
        let (targets_, workers, lines) = (
            doc["targets"].as_array().unwrap(),
            doc["workers"].as_array().unwrap(),
            doc["lines"].as_array().unwrap(),
        );
        assert_eq!(targets_.iter().map(ios).sum::<u64>(), n);
        assert_eq!(workers.iter().map(ios).sum::<u64>(), n);
        assert_eq!(lines.iter().map(|l| u(&l["ios"])).sum::<u64>(), n);
        let all_bytes: u64 = targets_.iter().map(bytes).sum();
        assert_eq!(workers.iter().map(bytes).sum::<u64>(), all_bytes);
        assert_eq!(n * 4096, all_bytes);
        let had: Vec<Vec<u64>> = (targets_.iter())
            .map(|t| t["workers"].as_array().unwrap().iter().map(u).collect())
            .collect();
        assert_eq!(had, want_workers.map(|w| w.to_vec()));
        for (t, path) in targets_.iter().zip([&a, &b]) {
            assert_eq!(t["target"], path.as_str());
            assert_eq!(t["target_kind"], "created-file");
            assert!(ios(t) > 0, "target {path} got no I/O");
            for k in ["iops", "mb_s", "lat_mean_us", "lat_p99_us", "errors"] {
                assert!(t["metrics"][k].is_number(), "{k} in {t}");
            }
        }
        let spec = &doc["spec"];
        assert_eq!((u(&spec["ntargets"]), u(&spec["workers"])), (2, 2));
        assert_eq!(
            spec["spread"].as_bool().unwrap_or(false),
            !spread.is_empty()
        );
        // Four I/Os outstanding per worker when spread (2 on each of its
        // targets), two otherwise: 8 in all either way.
        let qd = metric(&doc, "qd_achieved");
        assert!(qd > 0.0 && qd <= 8.0 + 1e-9, "{qd}");
        assert!(!std::path::Path::new(&a).exists(), "test files are removed");
    }
}

/// `--workers 0` is one worker per online CPU, each pinned to its own:
/// where each ran is read back from the workers (`sched_getcpu`), not
/// from what was asked. `--cpus` puts them where it says.
#[test]
fn workers_run_on_the_cpus_they_are_pinned_to() {
    let online = iotoll_probe::affinity::online_cpus();
    let doc = disk_json(&words("--engine null --size 4m --workers 0"));
    let workers = doc["workers"].as_array().unwrap();
    assert_eq!(workers.len(), online.len(), "one worker per online CPU");
    for (i, (w, cpu)) in workers.iter().zip(&online).enumerate() {
        assert_eq!((u(&w["id"]), u(&w["pinned"])), (i as u64, *cpu as u64));
        assert_eq!(u(&w["cpu"]), *cpu as u64, "{w}");
        assert_eq!(w["ran_on"], serde_json::json!([cpu]), "{w}");
        assert!(w["pinned_busy_pct"].as_f64().is_some(), "{w}");
    }
    let last = *online.last().unwrap();
    let doc = disk_json(&words(&format!(
        "--engine null --size 4m --workers 2 --cpus {last}"
    )));
    for w in doc["workers"].as_array().unwrap() {
        assert_eq!(w["ran_on"], serde_json::json!([last]), "{w}");
    }
    assert_eq!(doc["spec"]["cpus"], serde_json::json!([last, last]));
    let human = cmd("disk run --engine null --size 4m --time 1s --no-db --workers 0").succeeds();
    assert!(human.contains("pinned to (busy %)"), "{human}");
}

/// The File Server mix: each line's share of the I/Os within 5 sigma of
/// the published share, every line's I/Os of its size.
#[test]
fn a_mixed_spec_keeps_its_shares() {
    let doc = disk_json(&words("--engine null --size 8m --spec iometer-file-server"));
    let n = measured(&doc);
    assert!(n > 1000, "too few I/Os to judge shares: {n}");
    let lines = doc["lines"].as_array().unwrap();
    let sizes: Vec<u64> = lines.iter().map(|l| u(&l["bs"])).collect();
    assert_eq!(sizes, [512, 1024, 2048, 4096, 8192, 16384, 32768, 65536]);
    let all_bytes: u64 = lines.iter().map(|l| u(&l["bytes"])).sum();
    for l in lines {
        let p = u(&l["share_pct"]) as f64 / 100.0;
        let got = u(&l["ios"]) as f64 / n as f64;
        let sigma = (p * (1.0 - p) / n as f64).sqrt();
        assert!((got - p).abs() < 5.0 * sigma, "{l} of {n}");
        assert_eq!(u(&l["bytes"]), u(&l["ios"]) * u(&l["bs"]));
    }
    let mb = metric(&doc, "mb_s") * metric(&doc, "window_s") * 1e6;
    assert!(
        (mb - all_bytes as f64).abs() < 1e-6 * mb,
        "{mb} vs {all_bytes}"
    );
    assert_eq!(doc["spec"]["mix"], "iometer-file-server");
    assert!(
        doc["spec"].get("bs").is_none(),
        "a mixed spec has no one bs"
    );
    // The test name carries the mix, not a made-up transfer size.
    let name = doc["spec"]["mix"].as_str().unwrap();
    assert_eq!(name, "iometer-file-server");
}

/// Bad topology input: a clear message, exit 2 (1 for a target that
/// cannot be used as asked, as for a single target), and no test file made.
#[test]
fn bad_topology_input_is_refused_before_any_file_is_created() {
    let t = Tmp::new();
    let (a, b) = (t.path("a.tst"), t.path("b.tst"));
    let small = t.file("small", vec![0u8; 64 << 10]);
    let cases = [
        (
            format!("--target {a} --cpus 4095"),
            2,
            "CPU 4095 is not online",
        ),
        (format!("--target {a} --cpus 3-1"), 2, "reversed"),
        (format!("--target {a},{b},{a}"), 2, "is given twice"),
        (
            format!("--target {a} --target {b} --workers 5000"),
            2,
            "--workers",
        ),
        (
            format!("--target {a},{small} --size 1m"),
            1,
            "larger than the target",
        ),
        (
            format!("--target {a},{small} --read 50 --size 4k"),
            2,
            "--allow-destructive",
        ),
        (
            format!("--target {a} --spec iometer-web-server --read 50"),
            2,
            "cannot be used with",
        ),
    ];
    for (line, code, needle) in cases {
        let mut c = cmd("disk run --create --time 1s");
        c.args(words(&line));
        c.fails(code, needle);
        assert!(!std::path::Path::new(&a).exists(), "{line} left {a}");
        assert!(!std::path::Path::new(&b).exists(), "{line} left {b}");
    }
}
