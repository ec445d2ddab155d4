//! Issue 9, suites: early signals, stale test files of killed runs.

mod common;
use common::*;
use std::time::{Duration, Instant};

/// Whether `pid` has a handler installed for `sig` (/proc/PID/status SigCgt).
fn catches(pid: u32, sig: i32) -> bool {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return false;
    };
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
        .is_some_and(|mask| mask & (1 << (sig - 1)) != 0)
}

const TINY: &str = "name = \"tiny\"\n[[test]]\nname = \"d\"\nkind = \"disk\"\nbs = \"4k\"\nsize = \"1m\"\ntime = \"1s\"\nramp = \"0s\"\n";

/// Seen: SIGTERM in the first half second of a suite exited 143 (the
/// signal's default action) and stored nothing. The suite file is a FIFO,
/// so the process is held before it has read anything: it must already
/// catch SIGTERM there, and then end as interrupted (130, run aborted).
#[test]
fn sigterm_before_the_suite_is_read_is_an_interruption() {
    let t = Tmp::new();
    let fifo = t.path("suite.toml");
    let c = std::ffi::CString::new(fifo.as_str()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let mut child = raw()
        .args(["suite", "run", &fifo, "--quiet", "--db", &t.db])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !catches(child.id(), libc::SIGTERM) {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("SIGTERM is not caught while the suite file is being read");
        }
        assert!(child.try_wait().unwrap().is_none(), "exited early");
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    // Now let it read the suite (opening the FIFO's write end unblocks it).
    std::fs::write(&fifo, TINY).unwrap();
    let out = child.wait_with_output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(130), "{err}");
    let list = t.list();
    assert!(
        list.contains("interrupted"),
        "the run is stored as aborted: {list}"
    );
}

/// Seen: `kill -9` during a suite left /tmp/iotoll-suite-PID.tst that
/// nothing reclaimed. The next run removes those of dead PIDs, and only
/// those.
#[test]
fn test_files_of_killed_runs_are_reclaimed() {
    let t = Tmp::new();
    let tmp = t.dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    // A PID that has ended: a child we waited for.
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    let stale = tmp.join(format!("iotoll-suite-{dead}.tst"));
    let live = tmp.join(format!("iotoll-suite-{}.tst", std::process::id()));
    let other = tmp.join("iotoll-suite-notapid.tst");
    for f in [&stale, &live, &other] {
        std::fs::write(f, b"x").unwrap();
    }
    let suite = t.file("tiny.toml", TINY);
    cmd("suite run --reps 0")
        .env("TMPDIR", &tmp)
        .arg(&suite)
        .fails(2, "");
    assert!(stale.exists(), "nothing is removed by a refused command");
    let out = t.cmd("suite run").env("TMPDIR", &tmp).arg(&suite).out();
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(!stale.exists(), "the dead run's file is removed: {err}");
    assert!(
        err.contains("the test file of a run that was killed"),
        "{err}"
    );
    assert!(live.exists(), "a live process's file is kept");
    assert!(other.exists(), "a file not named by a PID is kept");
    // The run's own file is gone too when it ends.
    let left: Vec<_> = std::fs::read_dir(&tmp)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(left.len(), 2, "{left:?}");
}
