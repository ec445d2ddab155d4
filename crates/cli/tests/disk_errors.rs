//! Every bad input gets a clear message naming what is wrong, a non-zero
//! exit status, and does no damage.

mod common;
use common::*;
use predicates::prelude::*;
use std::process::Command;
use std::time::{Duration, Instant};

fn run_fails(args: &[&str], code: i32, needle: &str) {
    iotoll()
        .args(["disk", "run", "--ramp", "0s", "--time", "1s"])
        .args(args)
        .assert()
        .code(code)
        .stdout(predicate::str::is_empty())
        .stderr(predicate::str::contains(needle));
}

#[test]
fn bad_numbers() {
    for (line, needle) in [
        ("--bs 0", "--bs must be positive"),
        ("--bs -4k", "--bs"),
        ("--bs 4q", "not a size"),
        ("--size 0", "--size must be positive"),
        ("--size -1m", "--size"),
        ("--qd 0", "--qd"),
        ("--qd -3", "--qd"),
        ("--workers 5000", "--workers"),
        ("--workers -1", "--workers"),
        ("--read 101", "--read"),
        ("--read -1", "--read"),
        ("--random 150", "--random"),
        ("--engine aio", "unknown engine"),
        ("--spec nope", "unknown spec 'nope'"),
        ("--spec dss-1m --bs 4k", "cannot be used with"),
    ] {
        run_fails(&words(line), 2, needle);
    }
    for (t, needle) in [
        ("0s", "--time must be positive"),
        ("soon", "not a duration"),
    ] {
        cmd("disk run --time").arg(t).fails(2, needle);
    }
}

#[test]
fn transfer_size_not_a_multiple_of_alignment_under_o_direct() {
    for (line, needle) in [
        ("--bs 1000 --size 1m", "not a multiple of the alignment"),
        (
            "--bs 4k --align 8k --size 1m",
            "not a multiple of the alignment",
        ),
        ("--bs 4k --align 100 --size 1m", "logical block size"),
        ("--offset 100 --size 1m --buffered", "--offset 100"),
    ] {
        run_fails(&words(line), 2, needle);
    }
}

#[test]
fn region_larger_than_the_file() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("small");
    std::fs::write(&p, vec![1u8; 64 << 10]).unwrap();
    let t = p.to_str().unwrap();
    for (line, needle) in [
        ("--size 128k", "larger than the target"),
        ("--offset 32k --size 64k", "larger than the target"),
        ("--offset 64k", "past its end"),
    ] {
        let mut a = vec!["--target", t];
        a.extend(words(line));
        run_fails(&a, 1, needle);
    }
    assert_eq!(std::fs::read(&p).unwrap(), vec![1u8; 64 << 10]);
}

#[test]
fn directory_and_missing_targets() {
    let t = Tmp::new();
    let (missing, deep) = (t.path("nope"), t.path("no/such/dir/f.tst"));
    run_fails(
        &["--target", t.dir.path().to_str().unwrap()],
        1,
        "is a directory",
    );
    run_fails(&["--target", &missing], 1, "does not exist");
    assert!(
        !std::path::Path::new(&missing).exists(),
        "nothing created without --create"
    );
    run_fails(&["--target", &deep, "--create"], 1, "does not exist");
    run_fails(&["--create"], 2, "--create needs --target");
}

/// A device that is not there is not a place for a test file: a missing
/// /dev/sdX is not told "add --create", and --create never makes a regular
/// file in the device directory (it would pass for the device later).
#[test]
fn a_missing_device_is_never_created() {
    let dev = format!("/dev/iotoll-no-such-disk-{}", std::process::id());
    for extra in [&[][..], &["--create"][..]] {
        let mut a = vec!["--target", dev.as_str()];
        a.extend(extra);
        run_fails(&a, 1, "no such device");
        assert!(!std::path::Path::new(&dev).exists(), "{dev} was created");
    }
    // The message never suggests --create there.
    let out = iotoll()
        .args(["disk", "run", "--time", "1s", "--target", &dev])
        .output()
        .unwrap();
    assert!(!stderr(&out).contains("add --create"), "{}", stderr(&out));
}

/// A workload refused on an existing file names each read share once
/// (an Iometer mix of eight lines at 80 % read was "80/80/80/...% read").
#[test]
fn a_refused_mix_names_its_read_share_once() {
    let t = Tmp::new();
    let f = t.file("f.tst", vec![0u8; 1 << 20]);
    let out = iotoll()
        .args([
            "disk",
            "run",
            "--time",
            "1s",
            "--target",
            &f,
            "--spec",
            "iometer-file-server",
        ])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("(80% read)"), "{err}");
}

/// An existing file with a writing spec and no --allow-destructive is left
/// byte-for-byte unchanged (and its timestamps too).
#[test]
fn existing_file_is_not_written_without_allow_destructive() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("precious");
    let content: Vec<u8> = (0..(1u32 << 20)).map(|i| (i % 251) as u8).collect();
    std::fs::write(&p, &content).unwrap();
    let before = std::fs::metadata(&p).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    for args in [
        vec!["--read", "99"],
        vec!["--spec", "sql-server-log-64k"],
        vec!["--spec", "db-oltp-8k"],
    ] {
        let mut a = vec!["--target", p.to_str().unwrap()];
        a.extend(args);
        run_fails(&a, 2, "--allow-destructive");
    }
    assert_eq!(std::fs::read(&p).unwrap(), content);
    let after = std::fs::metadata(&p).unwrap();
    assert_eq!(before.modified().unwrap(), after.modified().unwrap());
}

#[test]
fn no_permission() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("locked");
    std::fs::write(&p, vec![0u8; 64 << 10]).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o000)).unwrap();
    let mut cmd = if is_root() {
        // Root ignores file modes: drop to nobody for this run.
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut c = assert_cmd::Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(bin_path());
        c
    } else {
        iotoll()
    };
    // nobody has no database to write; the target is what is tested.
    cmd.args(words("disk run --time 1s --no-db --target"))
        .arg(&p)
        .fails(1, "permission denied");
}

/// A full disk during preparation: the half-made test file is removed.
/// Needs root to mount a small tmpfs; as root (CI) it always runs.
#[test]
fn full_disk_during_preparation() {
    if !can_run("root (mounting a small tmpfs)", is_root()) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let mnt = d.path().to_str().unwrap();
    let ok = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=2m", "tmpfs", mnt])
        .status()
        .unwrap()
        .success();
    assert!(ok, "mount tmpfs");
    let target = d.path().join("t.tst");
    let res = std::panic::catch_unwind(|| {
        let mut a = vec!["--target", target.to_str().unwrap()];
        a.extend(words("--create --size 16m --buffered"));
        run_fails(&a, 1, "not enough free space");
        assert!(!target.exists(), "half-made test file left behind");
    });
    Command::new("umount").arg(mnt).status().unwrap();
    res.unwrap();
}

/// A block device with a writing spec and no --allow-destructive is
/// refused and left unchanged; a read-only spec runs on it.
#[test]
fn block_device() {
    if !can_run("root (creating a loop device)", is_root()) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let backing = d.path().join("disk.img");
    let content: Vec<u8> = (0..(8u32 << 20)).map(|i| (i % 253) as u8).collect();
    std::fs::write(&backing, &content).unwrap();
    let out = Command::new("losetup")
        .args(["-f", "--show"])
        .arg(&backing)
        .succeeds();
    let dev = out.trim().to_string();
    let res = std::panic::catch_unwind(|| {
        run_fails(&["--target", &dev, "--read", "50"], 2, "is a block device");
        assert!(
            std::fs::read(&backing).unwrap() == content,
            "refused run wrote to the device"
        );
        let doc = disk_json_on(&dev, "--read 100 --bs 4k --qd 4");
        assert_eq!(doc["spec"]["target_kind"], "block-device");
        assert_eq!(doc["spec"]["target_size"], 8 << 20);
        // With --allow-destructive two workers write to it (exclusive claim held once).
        let doc = disk_json_on(&dev, "--read 0 --workers 2 --allow-destructive --size 1m");
        assert!(metric(&doc, "write_iops") > 0.0);
    });
    Command::new("losetup").args(["-d", &dev]).status().unwrap();
    res.unwrap();
    // Only the first 1m was ever written, and only with --allow-destructive.
    let after = std::fs::read(&backing).unwrap();
    assert_eq!(after[1 << 20..], content[1 << 20..]);
    assert_ne!(after[..1 << 20], content[..1 << 20]);
}

#[test]
fn ctrl_c_during_the_window_reports_what_was_measured() {
    let mut c = raw();
    c.args(words("disk run --json --ramp 0s --time 60s --size 8m"));
    let t = Instant::now();
    // Interrupted once a second of the window has been measured.
    let out = signal_when(&mut c, libc::SIGINT, |e| measured_seconds(e) >= 1);
    assert!(
        t.elapsed() < Duration::from_secs(20),
        "did not stop promptly"
    );
    assert_eq!(out.status.code(), Some(130));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    validate(&doc);
    assert_eq!(doc["status"], "interrupted");
    let w = metric(&doc, "window_s");
    assert!(w > 0.5 && w < 30.0, "window {w}");
    assert!(metric(&doc, "iops") > 0.0);
    assert!(doc["notes"].to_string().contains("interrupted"));
    assert!(stderr(&out).contains("interrupted"));
    let target = doc["spec"]["target"].as_str().unwrap();
    assert!(
        !std::path::Path::new(target).exists(),
        "test file left behind"
    );
}

#[test]
fn ctrl_c_during_preparation_removes_the_test_file() {
    let d = tempfile::tempdir().unwrap();
    let mut c = raw();
    c.env("TMPDIR", d.path())
        .args(["disk", "run", "--size", "16g", "--time", "1s"]);
    // Interrupted while the 16 GiB file is being prepared.
    let out = signal_when(&mut c, libc::SIGINT, |e| e.contains("preparing"));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(out.stdout.is_empty());
    assert!(err.contains("preparing"), "{err}");
    let left: Vec<_> = std::fs::read_dir(d.path()).unwrap().collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}
