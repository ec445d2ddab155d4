//! iSCSI end to end through the CLI: `disk run` on iscsi:// LUNs of a
//! private tgtd (accounting, disclosure, write protection, several LUNs,
//! digests, CHAP, faults, Ctrl-C) and `iscsi discover` / `iscsi luns`.
//! Needs root and tgt (tgtd, tgtadm); skipped otherwise, failed under CI.
//! Hostile targets (R2T floods, dribbled discovery) are scripted ones
//! (`fake.rs`) and need neither.
//! Every child is waited for with a deadline, so a hang fails the test
//! instead of stalling it.

#[path = "../common/mod.rs"]
mod common;
use common::*;
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::process::Output;
use std::time::{Duration, Instant};

#[path = "../../../iscsi/tests/common/tgt.rs"]
mod tgt;
use tgt::{SilentPeer, Tgt};

#[path = "../../../iscsi/tests/common/fake.rs"]
mod fake;

mod chap;
use chap::secret_file;

/// How long any fault may take to end a run (with `--io-timeout 2s`).
const FAULT_LIMIT: Duration = Duration::from_secs(30);

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

/// A part's I/Os, from its `counts`.
fn ios(part: &Value) -> u64 {
    let c = &part["counts"];
    u(&c["reads"]) + u(&c["writes"])
}

/// `iotoll disk run --no-db` on the `targets` with `line`'s words, as a
/// plain process.
fn disk(targets: &[&str], line: &str) -> std::process::Command {
    let mut c = raw();
    c.args(["disk", "run", "--no-db"]);
    for t in targets {
        c.args(["--target", t]);
    }
    c.args(words(line));
    // A target starved by a loaded machine (tgtd is a user process too)
    // must not fail a test about something else; the fault tests set
    // their own, short, timeout.
    if !line.contains("--io-timeout") {
        c.args(["--io-timeout", "45s"]);
    }
    c
}

/// Waits for `r` at most `limit`: a child still running then is killed and
/// fails the test. Returns its output and how long it ran after the call.
fn finish_within(mut r: Running, limit: Duration) -> (Output, Duration) {
    let t = Instant::now();
    while r.child.try_wait().expect("wait for iotoll").is_none() {
        if t.elapsed() > limit {
            let _ = r.child.kill();
            let out = r.finish();
            panic!(
                "still running after {limit:?}, killed; stderr: {}",
                stderr(&out)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    (r.finish(), t.elapsed())
}

/// Runs `cmd` to its end, within `limit`.
fn run_within(cmd: &mut std::process::Command, limit: Duration) -> (Output, Duration) {
    finish_within(Running::start_when(cmd, |_| true), limit)
}

/// `cmd` must exit with `code` within [`FAULT_LIMIT`] and say every one of
/// `needles` on stderr; returns stderr.
fn fails_within(cmd: &mut std::process::Command, code: i32, needles: &[&str]) -> String {
    let (out, took) = run_within(cmd, FAULT_LIMIT);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(code), "after {took:?}: {err}");
    for n in needles {
        assert!(err.contains(n), "{n:?} not in: {err}");
    }
    err
}

/// `cmd` must succeed (within two minutes) and print one JSON result.
/// The schema is checked once, in `result_documents_match_the_schema`.
fn json_ok(cmd: &mut std::process::Command) -> Value {
    let (out, _) = run_within(cmd, Duration::from_secs(120));
    ok_json(&out)
}

/// The run's only iSCSI disclosure entry.
fn disclosed(doc: &Value) -> &Value {
    let all = doc["disclosure"]["iscsi"]
        .as_array()
        .unwrap_or_else(|| panic!("no disclosure.iscsi in {}", doc["disclosure"]));
    assert_eq!(all.len(), 1, "{all:?}");
    &all[0]
}

/// A stable digest of a file's contents.
fn hash(path: &std::path::Path) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    std::fs::read(path).expect("read backing file").hash(&mut h);
    h.finish()
}

/// Whether tgtd has no connection to target 1 left within a few seconds
/// (the initiator logged out or closed them).
fn no_sessions_left(tgt: &Tgt) -> bool {
    within(Duration::from_secs(5), || tgt.connections(1).is_empty())
}

#[test]
fn read_run_on_a_null_lun_adds_up_and_discloses_the_session() {
    let Some((tgt, iqn)) = Tgt::with_null_lun() else {
        return;
    };
    let url = tgt.url(&iqn, 1);
    let me = "iqn.2026-11.test.iotoll:initiator-a";
    let line = format!("--time 2s --ramp 0s --qd 16 --json --initiator-name {me}");
    let doc = json_ok(&mut disk(&[&url], &line));

    let spec = &doc["spec"];
    assert_eq!(spec["engine"], "iscsi");
    assert_eq!(spec["target_kind"], "iscsi-lun");
    assert_eq!(spec["target"], url.as_str());
    assert_eq!(u(&spec["target_size"]), tgt::NULL_LUN_BYTES);
    assert_eq!(u(&spec["logical_block_size"]), tgt::BLOCK_SIZE);
    let targets = doc["targets"].as_array().unwrap();
    assert_eq!(targets.len(), 1);
    assert_eq!(spec["targets"][0]["kind"], "iscsi-lun");
    assert_eq!(targets[0]["target_kind"], "iscsi-lun");

    // Every measured I/O is counted once, on its target and its worker,
    // and IOPS x window is that count.
    let n = u(&doc["latency"]["count"]);
    assert!(n > 0);
    assert_eq!(targets.iter().map(ios).sum::<u64>(), n);
    let workers = doc["workers"].as_array().unwrap();
    assert_eq!(workers.iter().map(ios).sum::<u64>(), n);
    assert_eq!(u(&targets[0]["counts"]["writes"]), 0);
    assert_eq!(u(&targets[0]["counts"]["read_bytes"]), n * 4096);
    let iops = metric(&doc, "iops");
    assert!(iops > 0.0);
    let from_rate = iops * metric(&doc, "window_s");
    assert!(
        (from_rate - n as f64).abs() <= 1e-6 * n as f64,
        "{from_rate} vs {n}"
    );
    assert_eq!(metric(&doc, "errors"), 0.0);

    // Little's law: I/Os in flight = rate x time each spends in flight, for
    // the I/Os completed in the window (the edges are measured: a worker
    // descheduled across the window's end on a busy host moves them far).
    let qd = metric(&doc, "qd_achieved");
    let little = iops * metric(&doc, "lat_mean_us") / 1e6;
    assert!(qd > 0.0 && qd <= 16.0 + 1e-9, "qd_achieved {qd}");
    let completed = metric(&doc, "qd_completed");
    assert!(
        (little - completed).abs() <= 0.02 * qd,
        "iops x mean latency = {little}, qd_completed = {completed} (qd_achieved {qd})"
    );

    let d = disclosed(&doc);
    assert_eq!(d["url"], url.as_str());
    assert_eq!(d["portal"], tgt.portal().as_str());
    assert_eq!(d["target"], iqn.as_str());
    assert_eq!(u(&d["lun"]), 1);
    assert_eq!(d["initiator"], me);
    assert_eq!(d["auth"], "None");
    assert_eq!(
        (&d["header_digest"], &d["data_digest"]),
        (&"None".into(), &"None".into())
    );
    assert_eq!(d["vendor"], "IET");
    assert_eq!(d["product"], "VIRTUAL-DISK");
    assert_eq!(u(&d["block_size"]), tgt::BLOCK_SIZE);
    assert_eq!(u(&d["capacity_bytes"]), tgt::NULL_LUN_BYTES);
    let neg = &d["negotiated"];
    // tgt's defaults (see tgt.rs): it receives 8192-byte segments unless
    // told otherwise, and declares nothing then.
    assert_eq!(neg["TargetMaxRecvDataSegmentLength"], "8192", "{neg}");
    let mrdsl: u64 = neg["MaxRecvDataSegmentLength"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("MaxRecvDataSegmentLength in {neg}"));
    assert!((512..=(1 << 24) - 1).contains(&mrdsl), "{mrdsl}");
    for (k, v) in [
        ("HeaderDigest", "None"),
        ("DataDigest", "None"),
        ("InitialR2T", "Yes"),
        ("ImmediateData", "Yes"),
        ("FirstBurstLength", "65536"),
        ("MaxBurstLength", "262144"),
        ("MaxOutstandingR2T", "1"),
        ("ErrorRecoveryLevel", "0"),
        ("MaxConnections", "1"),
    ] {
        assert_eq!(neg[k], v, "{k} in {neg}");
    }
    assert!(no_sessions_left(&tgt), "sessions left: {}", tgt.show());
}

#[test]
fn writes_to_a_lun_need_allow_destructive() {
    let Some((tgt, file, iqn)) = Tgt::with_file_lun(4 << 20) else {
        return;
    };
    // Non-zero, non-repeating content, so that a write of anything shows.
    let content: Vec<u8> = (0u32..(4 << 20) / 4)
        .flat_map(|i| i.wrapping_mul(2_654_435_761).to_le_bytes())
        .collect();
    std::fs::write(file.path(), &content).unwrap();
    let before = hash(file.path());
    let url = tgt.url(&iqn, 1);
    let line = "--read 0 --bs 4k --qd 4 --time 1s --ramp 0s --json";

    let err = fails_within(&mut disk(&[&url], line), 2, &["--allow-destructive"]);
    assert!(err.contains(&url), "{err}");
    assert_eq!(
        hash(file.path()),
        before,
        "written without --allow-destructive"
    );
    assert!(tgt.show().contains("Backing store path"), "LUN gone?");

    let doc = json_ok(&mut disk(&[&url], &format!("{line} --allow-destructive")));
    let n = u(&doc["latency"]["count"]);
    let t = &doc["targets"][0]["counts"];
    assert!(u(&t["writes"]) > 0 && u(&t["reads"]) == 0, "{t}");
    assert_eq!(u(&t["writes"]), n);
    assert_eq!(u(&t["write_bytes"]), n * 4096);
    assert_eq!(u(&disclosed(&doc)["capacity_bytes"]), 4 << 20);
    let after = std::fs::read(file.path()).unwrap();
    assert_eq!(after.len(), content.len(), "the LUN's file changed size");
    assert_ne!(after, content, "no write reached the backing file");

    // --offset and --size keep the writes in their region of the LUN.
    std::fs::write(file.path(), &content).unwrap();
    let region = format!("{line} --allow-destructive --offset 1m --size 1m --random 0");
    json_ok(&mut disk(&[&url], &region));
    let after = std::fs::read(file.path()).unwrap();
    let mib = 1 << 20;
    assert!(after[..mib] == content[..mib], "written before the region");
    assert!(
        after[2 * mib..] == content[2 * mib..],
        "written past the region"
    );
    assert!(
        after[mib..2 * mib] != content[mib..2 * mib],
        "region not written"
    );
}

/// Transfer sizes, offsets and regions are checked against the LUN's
/// block size and capacity before any I/O: misaligned figures are usage
/// errors (2); a region past the LUN's end fails like one past a file's
/// end (1, as disk_errors.rs has it).
#[test]
fn regions_are_checked_against_the_lun() {
    let Some((tgt, iqn)) = Tgt::with_null_lun() else {
        return;
    };
    let url = tgt.url(&iqn, 1);
    for (line, code, needle) in [
        ("--bs 1000", 2, "multiple of the alignment 512"),
        ("--offset 100", 2, "multiple of the alignment 512"),
        ("--offset 1t", 1, "past its end (1099511627776 bytes)"),
        (
            "--size 2t",
            1,
            "larger than the target (1099511627776 bytes)",
        ),
    ] {
        let line = format!("--time 1s {line}");
        let err = fails_within(&mut disk(&[&url], &line), code, &[needle]);
        assert!(!err.contains("[measure]"), "ran: {err}");
    }
}

#[test]
fn two_luns_are_two_targets_with_a_session_each() {
    let Some((tgt, iqn)) = Tgt::with_null_lun() else {
        return;
    };
    tgt.add_lun_null(1, 2).unwrap();
    let (a, b) = (tgt.url(&iqn, 1), tgt.url(&iqn, 2));
    // Mid-window: one session per worker, each its own connection.
    let (n, doc) = sessions_mid_run(
        &tgt,
        &mut disk(&[&a, &b], "--time 3s --ramp 0s --qd 4 --json"),
    );
    assert_eq!(n, 2, "sessions mid-run");

    let n = u(&doc["latency"]["count"]);
    let targets = doc["targets"].as_array().unwrap();
    assert_eq!(targets.len(), 2);
    assert_eq!(targets.iter().map(ios).sum::<u64>(), n);
    for (t, (url, w)) in targets.iter().zip([(&a, 0), (&b, 1)]) {
        assert_eq!(t["target"], url.as_str());
        assert_eq!(t["target_kind"], "iscsi-lun");
        assert_eq!(t["workers"], serde_json::json!([w]));
        assert!(ios(t) > 0, "{url} got no I/O");
    }
    let workers = doc["workers"].as_array().unwrap();
    assert_eq!(workers.len(), 2);
    assert_eq!(workers.iter().map(ios).sum::<u64>(), n);
    let luns: Vec<u64> = (doc["disclosure"]["iscsi"].as_array().unwrap().iter())
        .map(|d| u(&d["lun"]))
        .collect();
    assert_eq!(luns, [1, 2]);
    // Each worker keeps its QD on its own LUN: 8 outstanding at most.
    let qd = metric(&doc, "qd_achieved");
    assert!(qd > 0.0 && qd <= 8.0 + 1e-9, "{qd}");
    assert!(no_sessions_left(&tgt), "sessions left: {}", tgt.show());
}

/// Sessions to target 1 (distinct session ids) once `cmd` has measured a
/// second, and its JSON result.
fn sessions_mid_run(tgt: &Tgt, cmd: &mut std::process::Command) -> (usize, Value) {
    let r = Running::start_when(cmd, |e| measured_seconds(e) >= 1);
    let conns = tgt.connections(1);
    let (out, _) = finish_within(r, Duration::from_secs(60));
    let sids: std::collections::BTreeSet<u64> = conns.iter().map(|c| c.0).collect();
    assert_eq!(
        sids.len(),
        conns.len(),
        "one connection per session: {conns:?}"
    );
    (sids.len(), ok_json(&out))
}

/// A session per worker and target: `--workers 2` on one LUN logs in
/// twice; one `--spread` worker on two LUNs has a session on each.
#[test]
fn each_worker_has_its_own_session_per_target() {
    let Some((tgt, iqn)) = Tgt::with_null_lun() else {
        return;
    };
    tgt.add_lun_null(1, 2).unwrap();
    let (a, b) = (tgt.url(&iqn, 1), tgt.url(&iqn, 2));
    let line = "--time 2s --ramp 0s --qd 2 --json";
    let (n, doc) = sessions_mid_run(&tgt, &mut disk(&[&a], &format!("{line} --workers 2")));
    assert_eq!(n, 2);
    let workers = doc["workers"].as_array().unwrap();
    assert_eq!(workers.len(), 2);
    assert_eq!(doc["targets"][0]["workers"], serde_json::json!([0, 1]));
    let count = u(&doc["latency"]["count"]);
    assert_eq!(workers.iter().map(ios).sum::<u64>(), count);
    assert!(workers.iter().all(|w| ios(w) > 0), "{workers:?}");

    let (n, doc) = sessions_mid_run(&tgt, &mut disk(&[&a, &b], &format!("{line} --spread")));
    assert_eq!(n, 2);
    assert_eq!(doc["workers"].as_array().unwrap().len(), 1);
    let targets = doc["targets"].as_array().unwrap();
    assert!(targets
        .iter()
        .all(|t| t["workers"] == serde_json::json!([0])));
    assert_eq!(
        targets.iter().map(ios).sum::<u64>(),
        u(&doc["latency"]["count"])
    );
    assert!(targets.iter().all(|t| ios(t) > 0), "{targets:?}");
    // Two slots on each LUN: 4 outstanding at most.
    let qd = metric(&doc, "qd_achieved");
    assert!(qd > 0.0 && qd <= 4.0 + 1e-9, "{qd}");
    assert!(no_sessions_left(&tgt), "sessions left: {}", tgt.show());
}

/// The human report names the LUN, what INQUIRY and READ CAPACITY found
/// and what the session negotiated.
#[test]
fn human_output_describes_the_lun_and_session() {
    let Some((tgt, iqn)) = Tgt::with_null_lun() else {
        return;
    };
    let url = tgt.url(&iqn, 1);
    let (out, _) = run_within(
        &mut disk(&[&url], "--time 1s --ramp 0s"),
        Duration::from_secs(60),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let first = text.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("disk ") && first.ends_with("iscsi"),
        "{text}"
    );
    assert!(text.contains(&format!("target {url} (iscsi-lun")), "{text}");
    let blocks = tgt::NULL_LUN_BYTES / tgt::BLOCK_SIZE;
    let lun = format!(
        "iscsi {iqn} LUN 1 at {}: IET VIRTUAL-DISK 0001, {blocks} blocks of 512 bytes",
        tgt.portal()
    );
    assert!(text.contains(&lun), "{lun:?} not in: {text}");
    assert!(
        text.contains("auth None, digests header None data None"),
        "{text}"
    );
    assert!(text.contains("(target's 8192)"), "{text}");
}

#[test]
fn digests_are_negotiated_or_refused() {
    let Some((tgt, iqn)) = Tgt::with_null_lun() else {
        return;
    };
    let url = tgt.url(&iqn, 1);
    let line = "--time 1s --ramp 0s --json --header-digest --data-digest";
    // tgt's default: no digests; asking for them must fail the login.
    for flag in ["--header-digest", "--data-digest"] {
        let what = flag.trim_start_matches("--").replace('-', " ");
        fails_within(
            &mut disk(&[&url], &format!("--time 1s --ramp 0s {flag}")),
            1,
            &["target refused", &format!("CRC32C {what}s"), flag],
        );
    }
    tgt.set_param(1, "HeaderDigest", "CRC32C,None").unwrap();
    tgt.set_param(1, "DataDigest", "CRC32C,None").unwrap();
    let doc = json_ok(&mut disk(&[&url], line));
    let d = disclosed(&doc);
    assert_eq!(d["header_digest"], "CRC32C");
    assert_eq!(d["data_digest"], "CRC32C");
    assert_eq!(d["negotiated"]["HeaderDigest"], "CRC32C");
    assert_eq!(d["negotiated"]["DataDigest"], "CRC32C");
    assert!(metric(&doc, "iops") > 0.0);
    assert_eq!(metric(&doc, "errors"), 0.0);
    // A target that allows both still gets None when not asked.
    let doc = json_ok(&mut disk(&[&url], "--time 1s --ramp 0s --json"));
    assert_eq!(disclosed(&doc)["header_digest"], "None");
    assert_eq!(disclosed(&doc)["data_digest"], "None");
}

#[test]
fn result_documents_match_the_schema() {
    let Some((tgt, iqn)) = Tgt::with_null_lun() else {
        return;
    };
    let url = tgt.url(&iqn, 1);
    let doc = json_ok(&mut disk(&[&url], "--time 1s --ramp 0s --json"));
    assert_eq!(disclosed(&doc)["vendor"], "IET");
    validate(&doc);
    let mut c = disk(&[&url], "--time 30s --ramp 0s --json");
    let out = signal_when(&mut c, libc::SIGINT, |e| measured_seconds(e) >= 1);
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    validate(&serde_json::from_slice(&out.stdout).expect("JSON on stdout"));
}

#[test]
fn tgtd_killed_mid_run_ends_the_run() {
    let Some((mut tgt, iqn)) = Tgt::with_null_lun() else {
        return;
    };
    let url = tgt.url(&iqn, 1);
    let mut c = disk(&[&url], "--time 20s --ramp 0s --qd 8 --io-timeout 2s");
    let r = Running::start_when(&mut c, |e| measured_seconds(e) >= 1);
    std::thread::sleep(Duration::from_millis(500));
    tgt.kill();
    let (out, took) = finish_within(r, FAULT_LIMIT);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("closed the connection"), "{err}");
    assert!(err.contains(&tgt.portal()), "{err}");
    assert!(
        took < Duration::from_secs(10),
        "took {took:?} after the kill"
    );
}

#[test]
fn lun_removed_mid_run_names_the_sense() {
    let Some((tgt, iqn)) = Tgt::with_null_lun() else {
        return;
    };
    let url = tgt.url(&iqn, 1);
    let mut c = disk(&[&url], "--time 20s --ramp 0s --qd 4 --io-timeout 2s");
    let r = Running::start_when(&mut c, |e| measured_seconds(e) >= 1);
    tgt.remove_lun(1, 1).unwrap();
    let (out, took) = finish_within(r, FAULT_LIMIT);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    // The sense key and its additional sense code, by name and number.
    let lower = err.to_lowercase();
    assert!(lower.contains("illegal request"), "{err}");
    assert!(
        lower.contains("logical unit not supported (25/00)"),
        "{err}"
    );
    assert!(err.contains("the figures printed are partial"), "{err}");
    assert!(
        took < Duration::from_secs(10),
        "took {took:?} after the removal"
    );
}

#[test]
fn login_faults_are_named() {
    let Some((tgt, iqn)) = Tgt::with_null_lun() else {
        return;
    };
    let line = "--time 1s --ramp 0s --io-timeout 2s";
    let wrong_iqn = format!("iscsi://{}/iqn.2026-11.test.iotoll:nope/1", tgt.portal());
    let err = fails_within(&mut disk(&[&wrong_iqn], line), 1, &["not found"]);
    assert!(err.contains("iqn.2026-11.test.iotoll:nope"), "{err}");

    let port = tgt::free_port_nothing_listening();
    let closed = format!("iscsi://127.0.0.1:{port}/{iqn}/1");
    fails_within(&mut disk(&[&closed], line), 1, &["refused"]);

    let silent = SilentPeer::start();
    let mute = format!("iscsi://{}/{iqn}/1", silent.portal());
    let t = Instant::now();
    let err = fails_within(&mut disk(&[&mute], line), 1, &["no answer within 2 s"]);
    assert!(err.contains(&silent.portal()), "{err}");
    assert!(
        t.elapsed() >= Duration::from_secs(2),
        "gave up early: {err}"
    );
    assert!(silent.accepted() >= 1);
}

#[test]
fn a_missing_lun_lists_the_luns_there_are() {
    let Some((tgt, iqn)) = Tgt::with_null_lun() else {
        return;
    };
    let nine = tgt.url(&iqn, 9);
    let err = fails_within(
        &mut disk(&[&nine], "--time 1s --ramp 0s"),
        1,
        &["LUN 9 does not exist"],
    );
    assert!(err.contains("its LUNs: 0, 1"), "{err}");
}

#[test]
fn a_missing_lun_is_refused_before_the_run() {
    let Some((tgt, iqn)) = Tgt::with_null_lun() else {
        return;
    };
    let nine = tgt.url(&iqn, 9);
    let (out, took) = run_within(
        &mut disk(&[&nine], "--time 10s --ramp 0s --json"),
        FAULT_LIMIT,
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("LUN 9 does not exist"), "{err}");
    assert!(out.stdout.is_empty());
    assert!(took < Duration::from_secs(8), "ran {took:?}");
}

#[test]
fn bad_targets_are_usage_errors() {
    // No target needed: these are refused before any connection (a port
    // nothing listens on would make an attempt exit 1).
    let port = tgt::free_port_nothing_listening();
    let iqn = tgt::IQN;
    let file = tempfile::NamedTempFile::new().unwrap();
    let local = file.path().to_str().unwrap();
    let good = format!("iscsi://127.0.0.1:{port}/{iqn}/1");
    let cases: [(&[&str], &str); 5] = [
        (
            &[&format!("iscsi://127.0.0.1:{port}/{iqn}")],
            "name the LUN",
        ),
        (
            &[&format!("iscsi://ini:pw@127.0.0.1:{port}/{iqn}/1")],
            "--chap-secret-file",
        ),
        (&[&format!("iscsi://127.0.0.1:0/{iqn}/1")], "port"),
        (&[&good, local], "cannot be mixed"),
        (&[&good], "--allow-destructive"),
    ];
    for (i, (targets, needle)) in cases.into_iter().enumerate() {
        // The last case writes.
        let line = if i == 4 { "--read 50" } else { "" };
        let err = fails_within(
            &mut disk(targets, &format!("--time 1s {line}")),
            2,
            &[needle],
        );
        assert!(
            !err.contains(":pw@") || err.contains("not in the URL"),
            "{err}"
        );
    }
    fails_within(
        &mut disk(&[&good], "--time 1s --io-timeout 0s"),
        2,
        &["--io-timeout"],
    );
}

#[test]
fn discover_and_luns() {
    let Some((tgt, file, iqn)) = Tgt::with_file_lun(8 << 20) else {
        return;
    };
    let portal = tgt.portal();
    let doc = cmd("iscsi discover --json").arg(&portal).json();
    assert_eq!(doc["portal"], portal.as_str());
    let t = doc["targets"].as_array().unwrap();
    assert_eq!(t.len(), 1, "{doc}");
    assert_eq!(t[0]["name"], iqn.as_str());
    let addrs = t[0]["addresses"].to_string();
    assert!(addrs.contains(&portal), "{addrs}");

    let human = cmd("iscsi discover").arg(&portal).succeeds();
    assert!(human.lines().next() == Some(iqn.as_str()), "{human}");
    assert!(human.contains(&portal), "{human}");

    let target_url = format!("iscsi://{portal}/{iqn}");
    let doc = cmd("iscsi luns --json").arg(&target_url).json();
    assert_eq!(doc["target"], iqn.as_str());
    let luns = doc["luns"].as_array().unwrap();
    let numbers: Vec<u64> = luns.iter().map(|l| u(&l["lun"])).collect();
    assert_eq!(numbers, [0, 1], "{doc}");
    let one = &luns[1];
    assert_eq!(one["url"], tgt.url(&iqn, 1).as_str());
    assert_eq!(u(&one["device_type"]), 0);
    assert_eq!(one["vendor"], "IET");
    assert_eq!(u(&one["block_size"]), tgt::BLOCK_SIZE);
    let size = file.as_file().metadata().unwrap().len();
    assert_eq!(u(&one["capacity_bytes"]), size);
    // LUN 0 is tgt's controller: listed, but not a disk.
    assert!(luns[0]["capacity_bytes"].is_null());
    assert!(luns[0]["error"].as_str().unwrap().contains("not a disk"));
    // One LUN by its URL.
    let doc = cmd("iscsi luns --json").arg(tgt.url(&iqn, 1)).json();
    assert_eq!(doc["luns"].as_array().unwrap().len(), 1);
    assert_eq!(u(&doc["luns"][0]["capacity_bytes"]), size);

    let human = cmd("iscsi luns").arg(&target_url).succeeds();
    assert!(human.contains(&iqn) && human.contains("2 LUNs"), "{human}");
    let row = (human.lines())
        .find(|l| l.ends_with(&tgt.url(&iqn, 1)))
        .unwrap_or_else(|| panic!("no row for LUN 1: {human}"));
    let cols = words(row);
    assert_eq!(cols[..3], ["1", "IET", "VIRTUAL-DISK"], "{row}");
    assert!(cols.contains(&"512") && cols.contains(&"8m"), "{row}");

    let port = tgt::free_port_nothing_listening();
    cmd("iscsi discover")
        .arg(format!("127.0.0.1:{port}"))
        .fails(1, "refused");
    cmd("iscsi luns")
        .arg(format!("iscsi://{portal}/iqn.2026-11.test.iotoll:nope"))
        .fails(1, "not found");
    cmd("iscsi discover").arg("127.0.0.1:0").fails(2, "port");
    let silent = SilentPeer::start();
    let (out, took) = run_within(
        raw().args(["iscsi", "discover", "--io-timeout", "2s", &silent.portal()]),
        FAULT_LIMIT,
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("no answer within 2 s"), "{err}");
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(10),
        "{took:?}"
    );
    assert!(no_sessions_left(&tgt), "sessions left: {}", tgt.show());
}

/// Ctrl-C while the target has not answered the login yet.
#[test]
fn ctrl_c_during_the_login_ends_the_run_at_once() {
    let silent = SilentPeer::start();
    let url = format!("iscsi://{}/{}/1", silent.portal(), tgt::IQN);
    let mut c = disk(&[&url], "--time 5s --io-timeout 20s");
    let mut r = Running::start_when(&mut c, |_| silent.accepted() > 0);
    r.signal(libc::SIGINT);
    let (out, took) = finish_within(r, FAULT_LIMIT);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(took < Duration::from_secs(3), "took {took:?}: {err}");
    assert!(!err.contains("no answer within"), "{err}");
}

#[test]
fn ctrl_c_reports_what_was_measured_and_leaves_the_target_serving() {
    let Some((tgt, iqn)) = Tgt::with_null_lun() else {
        return;
    };
    let url = tgt.url(&iqn, 1);
    let mut c = disk(&[&url], "--time 30s --ramp 0s --qd 8 --json");
    let mut r = Running::start_when(&mut c, |e| measured_seconds(e) >= 2);
    r.signal(libc::SIGINT);
    let (out, took) = finish_within(r, Duration::from_secs(20));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(took < Duration::from_secs(5), "took {took:?} to stop");
    let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(doc["status"], "interrupted");
    let w = metric(&doc, "window_s");
    assert!(w > 1.5 && w < 20.0, "window {w}");
    assert!(metric(&doc, "iops") > 0.0);
    let n = u(&doc["latency"]["count"]);
    assert_eq!(ios(&doc["targets"][0]), n);
    assert!(err.contains("interrupted"), "{err}");

    // The target serves a new session at once.
    let (out, took) = run_within(
        raw().args(["iscsi", "luns", "--json", "--io-timeout", "2s", &url]),
        FAULT_LIMIT,
    );
    assert!(took < Duration::from_secs(3), "{took:?}");
    let doc = ok_json(&out);
    assert_eq!(u(&doc["luns"][0]["capacity_bytes"]), tgt::NULL_LUN_BYTES);
    assert!(no_sessions_left(&tgt), "sessions left: {}", tgt.show());
}

/// A suite's disk test runs on an iscsi:// `--target`, each repetition its
/// own login, results into the database with the LUN as the target.
#[test]
fn a_suite_runs_its_disk_test_on_a_lun() {
    let Some((tgt, iqn)) = Tgt::with_null_lun() else {
        return;
    };
    let url = tgt.url(&iqn, 1);
    let t = Tmp::new();
    let suite = t.file(
        "lun.toml",
        "name = \"lun\"\nreps = 2\nramp = \"0s\"\ntime = \"500ms\"\n\n[[test]]\nname = \"d\"\nkind = \"disk\"\nbs = \"4k\"\nqd = 8\n",
    );
    let (out, _) = run_within(
        raw().args([
            "suite",
            "run",
            "--quiet",
            &suite,
            "--db",
            &t.db,
            "--target",
            &url,
            "--io-timeout",
            "5s",
        ]),
        Duration::from_secs(120),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let run = show(&t.db, "1");
    let text = run.to_string();
    assert!(text.contains("iscsi-lun"), "{text}");
    assert!(text.contains(&url), "{text}");
    assert!(no_sessions_left(&tgt));
}

// ---- hostile targets (scripted, no tgt needed) -------------------------------

/// Runs `cmd` to its end within `limit`: its exit code, stderr and peak
/// resident set (KiB, from wait4's rusage of that one child).
// The child is reaped by wait4 (for its rusage), not Child::wait.
#[allow(clippy::zombie_processes)]
fn run_rss(cmd: &mut std::process::Command, limit: Duration) -> (Option<i32>, String, i64) {
    let err = tempfile::NamedTempFile::new().unwrap();
    let child = cmd
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(err.reopen().unwrap())
        .spawn()
        .expect("spawn iotoll");
    let pid = child.id() as libc::pid_t;
    let t = Instant::now();
    // SAFETY: rusage is plain integers, for which all zeroes is valid.
    let (mut status, mut ru) = (0, unsafe { std::mem::zeroed::<libc::rusage>() });
    loop {
        // SAFETY: pid is our child, not yet reaped; status and ru are
        // valid for writing.
        let rc = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut ru) };
        assert!(rc >= 0, "wait4: {}", std::io::Error::last_os_error());
        if rc == pid {
            break;
        }
        if t.elapsed() > limit {
            // SAFETY: kill of our own child by pid.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!(
                "still running after {limit:?}, killed; stderr: {}",
                std::fs::read_to_string(err.path()).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    let text = std::fs::read_to_string(err.path()).unwrap_or_default();
    (code, text, ru.ru_maxrss)
}

/// A write run of 1 MiB I/Os on `url`.
fn write_run(url: &str) -> std::process::Command {
    disk(
        &[url],
        "--bs 1m --qd 1 --read 0 --time 2s --ramp 0s --io-timeout 5s --allow-destructive",
    )
}

/// A target answering a 1 MiB write with hundreds of R2Ts ends the run
/// with a protocol error naming the R2T, and the run's memory stays that
/// of a run against a target that behaves, plus at most 8 MiB (seen:
/// 520 MB for 500 R2Ts, an abort for 4,000).
#[test]
fn a_flood_of_r2ts_ends_the_run_without_growing_its_memory() {
    let good = fake::LunTarget::start(std::sync::Arc::new(|p, cmd| p.take_write(cmd)));
    let (code, err, base) = run_rss(&mut write_run(&good.url()), FAULT_LIMIT);
    assert_eq!(code, Some(0), "{err}");
    // The attack seen: 500 R2Ts for the whole transfer; then the same
    // past the immediate data, with a MaxBurstLength that allows it.
    let whole = |p: &mut fake::Peer, cmd: &iotoll_iscsi::pdu::Bhs| {
        let len = cmd.u32_at(20);
        let b: Vec<u8> = (0..500).flat_map(|k| p.r2t(cmd, k, k, 0, len)).collect();
        let _ = std::io::Write::write_all(&mut p.sock, &b);
    };
    let rest = |p: &mut fake::Peer, cmd: &iotoll_iscsi::pdu::Bhs| {
        let len = cmd.u32_at(20);
        let b: Vec<u8> = (0..500)
            .flat_map(|k| p.r2t(cmd, k, k, 8192, len - 8192))
            .collect();
        let _ = std::io::Write::write_all(&mut p.sock, &b);
    };
    let targets = [
        (
            fake::LunTarget::start(std::sync::Arc::new(whole)),
            "already sent",
        ),
        (
            fake::LunTarget::with_keys(
                vec![("MaxBurstLength", "16776192".into())],
                std::sync::Arc::new(rest),
            ),
            "MaxOutstandingR2T=1",
        ),
    ];
    for (t, why) in targets {
        let (code, err, peak) = run_rss(&mut write_run(&t.url()), FAULT_LIMIT);
        eprintln!("peak RSS {peak} KiB (a target that behaves: {base} KiB)");
        assert_eq!(code, Some(1), "{err}");
        assert!(
            err.contains("protocol error") && err.contains("R2T (R2TSN"),
            "{err}"
        );
        assert!(err.contains(why) || err.contains("already sent"), "{err}");
        assert!(
            peak <= base + 8 * 1024,
            "peak RSS {peak} KiB, against {base} KiB with a target that behaves: {err}"
        );
    }
}

/// `iscsi discover` against a target that answers SendTargets with "more
/// to come" every 100 ms ends at `--io-timeout`, not 1,000 rounds of it.
#[test]
fn a_dribbled_discovery_ends_at_the_io_timeout() {
    let (portal, h) = fake::serve(|p| {
        p.login();
        fake::dribble_send_targets(p, 400);
    });
    let (out, took) = run_within(
        raw().args(["iscsi", "discover", "--io-timeout", "1s", &portal]),
        FAULT_LIMIT,
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("discovery (SendTargets) did not finish within 1 s"),
        "{err}"
    );
    assert!(took < Duration::from_secs(20), "took {took:?}");
    h.join().expect("target script");
}

/// A CHAP secret file whose `password` line lacks its '=' (the value a
/// base64 secret, its padding taken for one): the error names the line,
/// never its text.
#[test]
fn a_malformed_secret_file_line_is_not_echoed() {
    let dir = tempfile::tempdir().unwrap();
    let f = secret_file(
        &dir,
        "chap",
        "username = ini\npassword  c2VjcmV0LXNlY3JldC14eXo=\n",
        0o600,
    );
    let port = tgt::free_port_nothing_listening();
    let portal = format!("127.0.0.1:{port}");
    let (out, _) = run_within(
        raw().args(["iscsi", "discover", "--chap-secret-file", &f, &portal]),
        FAULT_LIMIT,
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(":2:") && err.contains("unknown key"), "{err}");
    assert!(!err.contains("c2Vj"), "the secret is echoed: {err}");
}

/// Terminal escapes in what a target says (the hostile review): INQUIRY's
/// vendor and product in `iscsi luns` and a run's description, and a
/// SendTargets TargetName and address in `iscsi discover`, are shown
/// escaped, never sent to the terminal raw.
#[test]
fn a_targets_escape_sequences_never_reach_the_terminal() {
    let raw_esc = |out: &Output| {
        let all = [out.stdout.as_slice(), out.stderr.as_slice()].concat();
        all.iter().any(|b| *b == 0x1b || *b == 0x07 || *b == 0x08)
    };
    let t = fake::LunTarget::with(
        vec![],
        fake::Lun {
            vendor: b"\x1b]0;X\x07\x1b[",
            product: b"\x1b[31mPWN\x1b[0m\x08\x08\x08\x08",
            ..fake::Lun::FAKE
        },
        std::sync::Arc::new(|p, cmd| p.take_write(cmd)),
    );
    let (out, _) = run_within(raw().args(["iscsi", "luns", &t.url()]), FAULT_LIMIT);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!raw_esc(&out), "{:?}", String::from_utf8_lossy(&out.stdout));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("\\u{1b}[31mPWN"), "{text}");
    let (out, _) = run_within(
        &mut disk(&[&t.url()], "--bs 64k --qd 1 --time 1s --ramp 0s"),
        FAULT_LIMIT,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!raw_esc(&out), "{:?}", String::from_utf8_lossy(&out.stdout));
    let (portal, h) = fake::serve(|p| {
        p.login();
        p.send_targets(&[
            ("TargetName", "iqn.2026-11.evil:\x1b]0;T\x07\x1b[2J"),
            ("TargetAddress", "127.0.0.1:3260,1\x1b[1A"),
        ]);
        if let Some((req, _)) = p.recv() {
            let mut b =
                iotoll_iscsi::pdu::Bhs::new(iotoll_iscsi::pdu::op::LOGOUT_RESP, false, 0x80);
            b.set_itt(req.itt());
            p.send_status(b, &[]);
        }
    });
    let (out, _) = run_within(raw().args(["iscsi", "discover", &portal]), FAULT_LIMIT);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!raw_esc(&out), "{:?}", String::from_utf8_lossy(&out.stdout));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("iqn.2026-11.evil:\\u{1b}]0;T"), "{text}");
    h.join().expect("target script");
}

/// A LUN of 2^64 blocks of 512 bytes (the hostile review): its capacity
/// was capped to 2^64 - 1 bytes, not a whole number of blocks, and the
/// run stored complete; now the run is refused, the capacity named.
#[test]
fn a_capacity_beyond_2_64_bytes_is_refused_naming_it() {
    let t = fake::LunTarget::with(
        vec![],
        fake::Lun {
            last_lba: u64::MAX,
            ..fake::Lun::FAKE
        },
        std::sync::Arc::new(|p, cmd| p.take_write(cmd)),
    );
    fails_within(
        &mut disk(&[&t.url()], "--bs 64k --qd 1 --time 1s --ramp 0s"),
        1,
        &[
            "18446744073709551616 blocks of 512 bytes",
            "more than the 2^64 bytes",
        ],
    );
}
