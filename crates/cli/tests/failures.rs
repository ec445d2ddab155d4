//! Issue 9, "a failed run never looks like a result": runs that fail exit 1
//! naming the failure and are stored as failed, never as a result; the
//! engines survive what used to panic them; limits are checked up front.

mod common;
use common::server::Server;
use common::*;
use serde_json::Value;
use std::process::Output;
use std::time::{Duration, Instant};

const SHORT: [&str; 4] = ["--ramp", "200ms", "--time", "1s"];

/// A network test that may meet the endpoint still finishing the previous
/// test ("busy"): retried within a generous deadline.
fn net_run_retrying_busy(args: &[&str]) -> (i32, Option<Value>, String) {
    let end = Instant::now() + Duration::from_secs(60);
    loop {
        let r = net_run(args);
        if r.0 == 0 || !r.2.contains("busy") || Instant::now() > end {
            return r;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The case: 8 MiB messages both ways used to panic the
/// endpoint's engine threads (a thread's send buffer was sized for its
/// first connection, a receiver) while the client exited 0 with near-zero
/// figures. Now the test runs, and the endpoint serves the next client.
#[test]
fn bidir_8m_messages_complete_and_the_endpoint_survives() {
    let mut s = Server::start("127.0.0.1", &[]);
    let args = [
        "stream", &s.addr, "--dir", "bidir", "--conns", "4", "--msg", "8m", "--no-db", "--ramp",
        "500ms", "--time", "1s",
    ];
    let (code, doc, err) = net_run_retrying_busy(&args);
    assert_eq!(code, 0, "{err}");
    let d = doc.expect("JSON document");
    validate(&d);
    assert_eq!(d["status"], "complete");
    assert_eq!(metric(&d, "errors"), 0.0, "{}", d["notes"]);
    // Data moved both ways (before, the endpoint's threads died at once).
    assert!(metric(&d, "tx_mbit_s") > 0.0, "{}", d["metrics"]);
    assert!(metric(&d, "rx_mbit_s") > 0.0, "{}", d["metrics"]);
    assert!(!d["notes"].to_string().contains("failed"), "{}", d["notes"]);
    assert!(s.alive(), "the endpoint died");
    assert_eq!(s.log_count("panicked"), 0, "{:?}", s.log.lock().unwrap());
    // The next client is served.
    let mut next = vec!["stream", &s.addr, "--conns", "2", "--no-db"];
    next.extend(SHORT);
    let (code, doc, err) = net_run_retrying_busy(&next);
    assert_eq!(code, 0, "{err}");
    assert!(metric(&doc.unwrap(), "mbit_s") > 0.0);
}

/// An engine thread that panics fails the run: exit 1 naming the panic,
/// the partial figures marked `failed`, the run stored as failed with no
/// result; the endpoint serves the next client.
#[test]
#[cfg_attr(
    not(feature = "test-hooks"),
    ignore = "needs the test-hooks feature: run ./test.sh"
)]
fn engine_thread_panic_fails_the_run_and_is_stored_as_failed() {
    let mut s = Server::start("127.0.0.1", &[]);
    let t = Tmp::new();
    let end = Instant::now() + Duration::from_secs(60);
    let out = loop {
        let out = t
            .cmd("net stream --conns 2 --threads 1 --json --quiet --config panicky")
            .env("IOTOLL_INJECT_FAULT", "net-engine-panic")
            .arg(&s.addr)
            .args(SHORT)
            .out();
        if !stderr(&out).contains("busy") || Instant::now() > end {
            break out;
        }
    };
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    for want in [
        "iotoll: error: the test failed",
        "engine thread iotoll-net-0 panicked",
        "injected fault",
        "stored as failed run",
    ] {
        assert!(err.contains(want), "{want:?} not in: {err}");
    }
    // The partial figures: one JSON document, marked failed, saying why.
    let d = failed_doc(&out);
    assert!(
        d["notes"][0].as_str().unwrap().starts_with("failed: "),
        "{}",
        d["notes"]
    );
    // Stored as failed, never as a result.
    let shown = stored_as_failed(&t, "panicky");
    assert_eq!(shown["status"], "failed", "{shown}");
    assert_eq!(shown["tests"].as_array().unwrap().len(), 1);
    // The endpoint is unharmed and serves the next client.
    assert!(s.alive());
    let mut next = vec!["stream", &s.addr, "--no-db"];
    next.extend(SHORT);
    let (code, _, err) = net_run_retrying_busy(&next);
    assert_eq!(code, 0, "{err}");
}

/// The one JSON document on stdout: valid, and marked failed.
fn failed_doc(out: &Output) -> Value {
    let d: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    validate(&d);
    assert_eq!(d["status"], "failed", "{d}");
    d
}

/// The run of `label` in the list is failed; its first test holds no
/// repetition and no summary, and says what panicked. Returns the run.
fn stored_as_failed(t: &Tmp, label: &str) -> Value {
    let list = t.list();
    let line = list.lines().find(|l| l.contains(label)).expect(&list);
    assert!(line.contains("failed"), "{list}");
    let shown = t.show(line.split_whitespace().next().unwrap());
    let text = shown.to_string();
    assert!(text.contains("panicked"), "{text}");
    let test = &shown["tests"][0];
    assert!(test["reps"].as_array().unwrap().is_empty(), "{text}");
    assert!(test["summary"].is_null(), "{text}");
    shown
}

/// `--qd` beyond what an io_uring ring holds used to pass validation and
/// then fail as "engine io_uring is not available".
#[test]
fn qd_beyond_the_ring_is_a_usage_error() {
    let err = cmd("disk run --qd 40000 --time 1s --no-db").fails(2, "--qd 40000");
    assert!(err.contains("32768"), "{err}");
    assert!(!err.contains("not available"), "{err}");
}

/// A target that starts failing mid-run: writes beyond RLIMIT_FSIZE fail
/// with EFBIG (SIGXFSZ ignored, as a file size limit is met in practice).
/// The run stops, exits 1 naming the operation, offset, target and errno
/// (not "engine ... is not available"), and is stored as failed.
#[test]
fn disk_io_failure_mid_run_names_what_failed_and_is_stored_as_failed() {
    use std::os::unix::process::CommandExt;
    let t = Tmp::new();
    let target = t.path("target.bin");
    std::fs::File::create(&target)
        .unwrap()
        .set_len(16 << 20)
        .unwrap();
    for engine in ["io_uring", "psync"] {
        let mut cmd = raw();
        cmd.args(["disk", "run", "--target"])
            .arg(&target)
            .args(["--allow-destructive", "--read", "0", "--random", "0"])
            .args(["--bs", "4k", "--qd", "4", "--engine", engine])
            .args(["--ramp", "0s", "--time", "120s", "--json", "--quiet"])
            .args(["--db", &t.db, "--config", &format!("efbig-{engine}")]);
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
                let lim = libc::rlimit {
                    rlim_cur: 1 << 20,
                    rlim_max: 1 << 20,
                };
                if libc::setrlimit(libc::RLIMIT_FSIZE, &lim) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let t0 = Instant::now();
        let out = cmd.output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        if engine == "io_uring" && err.contains("engine io_uring is not available") {
            assert!(std::env::var_os("CI").is_none(), "{err}");
            eprintln!("io_uring unavailable here: {err}");
            continue;
        }
        assert_eq!(out.status.code(), Some(1), "{engine}: {err}");
        assert!(
            t0.elapsed() < Duration::from_secs(90),
            "the run went on after its I/Os failed"
        );
        for want in [
            "iotoll: error: the workload failed: ",
            "I/O(s) failed; the first: write of 4096 bytes at offset ",
            &format!(" on {target}"),
            "File too large (os error 27)",
            "stored as failed run",
        ] {
            assert!(err.contains(want), "{engine}: {want:?} not in {err}");
        }
        assert!(!err.contains("not available"), "{err}");
        let d = failed_doc(&out);
        assert!(metric(&d, "errors") >= 1.0);
        let list = t.list();
        let line = list
            .lines()
            .find(|l| l.contains(&format!("efbig-{engine}")))
            .expect(&list);
        assert!(line.contains("failed"), "{list}");
    }
}

/// In a suite, a repetition whose engine thread panics is a failed
/// repetition: never stored as a result, the run marked failed, exit 1.
#[test]
#[cfg_attr(
    not(feature = "test-hooks"),
    ignore = "needs the test-hooks feature: run ./test.sh"
)]
fn a_panicking_repetition_in_a_suite_is_failed_not_a_result() {
    let t = Tmp::new();
    let file = t.file(
        "s.toml",
        "name = \"panics\"\nreps = 1\nramp = \"200ms\"\ntime = \"500ms\"\n\n[[test]]\nname = \"s\"\nkind = \"net-stream\"\nconns = 2\n",
    );
    t.cmd("suite run --quiet")
        .env("IOTOLL_INJECT_FAULT", "net-engine-panic")
        .arg(&file)
        .fails(1, "marked failed");
    stored_as_failed(&t, "panics");
}
