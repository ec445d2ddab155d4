//! Issue 9: imports that damage the database, database errors that
//! mislead, sweeps and imports that hang, and the small ones in suites.

mod common;
use common::*;
use std::path::Path;

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

fn fixture(name: &str) -> String {
    let p = format!(
        "{}/../store/tests/fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(p).expect("fixture")
}

fn import(db: &Path, file: &Path, format: &str) -> std::process::Output {
    iotoll()
        .args(["results", "import", s(file), "--format", format])
        .args(["--config", "imp", "--db", s(db)])
        .output()
        .expect("run iotoll")
}

fn runs(db: &Path) -> usize {
    if !db.exists() {
        return 0;
    }
    iotoll_store::Store::open_read_only(db)
        .map(|s| s.list_runs().unwrap().len())
        .unwrap_or(0)
}

fn fio_with(edit: impl Fn(&mut serde_json::Value)) -> String {
    let text = fixture("fio-randrw.json");
    let mut v: serde_json::Value = serde_json::from_str(&text[text.find('{').unwrap()..]).unwrap();
    edit(&mut v);
    v.to_string()
}

/// Imports `text`; asserts exit 2 with `want` in the message and nothing stored.
fn refused(dir: &Path, format: &str, text: &str, want: &str) {
    let db = dir.join("r.db");
    let f = dir.join("in.txt");
    std::fs::write(&f, text).unwrap();
    let before = runs(&db);
    let o = import(&db, &f, format);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{want}: {err}");
    assert!(err.contains(want), "want '{want}' in: {err}");
    assert_eq!(runs(&db), before, "nothing stored: {want}");
}

#[test]
fn imports_that_would_damage_the_database_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    // 1e308 + 1e308 is infinite: refused, never stored as null.
    let huge = fio_with(|v| {
        v["jobs"][0]["read"]["iops"] = 1e308.into();
        v["jobs"][0]["write"]["iops"] = 1e308.into();
    });
    refused(dir, "fio-json", &huge, "iops comes to inf");
    let neg = fio_with(|v| v["jobs"][0]["read"]["iops"] = (-5.0).into());
    refused(dir, "fio-json", &neg, "jobs[0].read.iops: -5 is negative");
    let string = fio_with(|v| v["jobs"][0]["read"]["iops"] = "100".into());
    refused(
        dir,
        "fio-json",
        &string,
        "jobs[0].read.iops: expected a number, got a string",
    );
    let jobs = fio_with(|v| {
        let j = v["jobs"][0].clone();
        v["jobs"] = serde_json::json!([j, null, 5, "x"]);
    });
    refused(
        dir,
        "fio-json",
        &jobs,
        "jobs[1]: expected a job object, got null",
    );
    let neg_lat = fio_with(|v| v["jobs"][0]["read"]["lat_ns"]["mean"] = (-1.0).into());
    refused(dir, "fio-json", &neg_lat, "jobs[0].read.lat_ns.mean");
    let neg_cpu = fio_with(|v| v["jobs"][0]["usr_cpu"] = (-3.0).into());
    refused(dir, "fio-json", &neg_cpu, "jobs[0].usr_cpu");

    let iperf = |edit: &dyn Fn(&mut serde_json::Value)| {
        let mut v: serde_json::Value = serde_json::from_str(&fixture("iperf3-tx.json")).unwrap();
        edit(&mut v);
        v.to_string()
    };
    refused(
        dir,
        "iperf3-json",
        &iperf(&|v| v["start"]["test_start"]["num_streams"] = 2.5.into()),
        "start.test_start.num_streams: expected a whole number",
    );
    refused(
        dir,
        "iperf3-json",
        &iperf(&|v| v["start"]["test_start"]["reverse"] = true.into()),
        "start.test_start.reverse: expected 0 or 1, got true",
    );
    refused(
        dir,
        "iperf3-json",
        &iperf(&|v| v["end"]["sum_received"]["bits_per_second"] = (-1.0).into()),
        "bits_per_second: -1 is negative",
    );
    refused(
        dir,
        "table",
        "test,mb_s,mb_s\na,1,2\n",
        "column 'mb_s' appears twice",
    );
    refused(dir, "table", "test,mb_s\na,-4\n", "is negative");
    refused(
        dir,
        "table",
        "test,iops\na,1e308\nb,1e309\n",
        "not a number",
    );

    // What imported is readable everywhere afterwards.
    let db = dir.join("r.db");
    let f = dir.join("bom.csv");
    std::fs::write(&f, "\u{feff}test,mb_s,cpu_pct\nread-4k,120,8\n").unwrap();
    let o = import(&db, &f, "table");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for cmd in [
        vec!["results", "show", "imp"],
        vec!["results", "export", "imp", "--format", "json"],
        vec!["report", "imp"],
    ] {
        let o = iotoll().args(&cmd).args(["--db", s(&db)]).output().unwrap();
        assert!(
            o.status.success(),
            "{cmd:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

#[test]
fn fio_clones_sharing_a_job_name_import_whole() {
    let d = tempfile::tempdir().unwrap();
    // numjobs=3: three jobs with one name and equal parameters.
    let three = fio_with(|v| {
        let j = v["jobs"][0].clone();
        v["jobs"] = serde_json::json!([j.clone(), j.clone(), j]);
    });
    let f = d.path().join("fio.json");
    std::fs::write(&f, three).unwrap();
    let db = d.path().join("r.db");
    let o = import(&db, &f, "fio-json");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s = iotoll_store::Store::open_read_only(&db).unwrap();
    let det = s.run_detail(s.resolve("imp").unwrap()).unwrap();
    let names: Vec<&str> = det.tests.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names.len(), 3, "{names:?}");
    let uniq: std::collections::HashSet<_> = names.iter().collect();
    assert_eq!(uniq.len(), 3, "{names:?}");
}

fn tv(t: libc::timeval) -> f64 {
    t.tv_sec as f64 + t.tv_usec as f64 / 1e6
}

/// Runs `cmd` to its end: its exit status, wall time and CPU time (user
/// and system, from wait4's rusage: the child's own, whatever the load).
#[allow(clippy::zombie_processes)] // reaped by wait4, which gives its rusage
fn run_measured(cmd: &mut std::process::Command) -> (std::process::ExitStatus, String, f64, f64) {
    use std::io::Read;
    use std::os::unix::process::ExitStatusExt;
    let t0 = std::time::Instant::now();
    let mut child = cmd
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        e.read_to_string(&mut err).unwrap();
    }
    let pid = child.id() as i32;
    let mut status = 0;
    // SAFETY: zeroed rusage out-parameter; waiting for our own child.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
    assert_eq!(r, pid);
    (
        std::process::ExitStatus::from_raw(status),
        err,
        t0.elapsed().as_secs_f64(),
        tv(ru.ru_utime) + tv(ru.ru_stime),
    )
}

/// Runs the command with at most `bytes` of address space: a process that
/// holds more fails to allocate (exit by abort), whatever the machine.
fn limit_address_space(cmd: &mut std::process::Command, bytes: u64) {
    use std::os::unix::process::CommandExt;
    // SAFETY: setrlimit is async-signal-safe; the closure allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            let lim = libc::rlimit {
                rlim_cur: bytes as libc::rlim_t,
                rlim_max: bytes as libc::rlim_t,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &lim) == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        });
    }
}

#[test]
fn table_imports_take_linear_time_and_memory_of_one_row() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("r.db");
    // 4 times the rows may not take much more than 4 times the CPU (it was
    // quadratic, 16 times: 80,000 rows took 34 s).
    let table_cpu = |rows: usize| {
        let mut t = String::from("test,group,iops,mb_s,cpu_pct\n");
        for i in 0..rows {
            t.push_str(&format!(
                "t{i},g{},{},{},{}\n",
                i % 7,
                i + 1,
                i % 500,
                1 + i % 90
            ));
        }
        let f = d.path().join(format!("big{rows}.csv"));
        std::fs::write(&f, &t).unwrap();
        let mut cmd = raw();
        cmd.args(["results", "import", s(&f), "--format", "table"])
            .args(["--config", &format!("t{rows}"), "--db", s(&db)]);
        // Rows go into the database as they are read (all of them held
        // took 3.5 KiB each: 40,000 rows, 140 MiB).
        limit_address_space(&mut cmd, 128 << 20);
        let (st, err, secs, cpu) = run_measured(&mut cmd);
        assert!(st.success(), "{err}");
        eprintln!("table {rows} rows: {secs:.1} s, CPU {cpu:.2} s");
        cpu
    };
    let small = table_cpu(10_000);
    let large = table_cpu(40_000);
    assert!(
        large < 8.0 * small.max(0.05),
        "10,000 rows: {small} s of CPU; 40,000 rows: {large} s"
    );
    let s = iotoll_store::Store::open_read_only(&db).unwrap();
    let det = s.run_detail(s.resolve("t40000").unwrap()).unwrap();
    assert_eq!(det.tests.len(), 40_000);
}

/// An iperf3 -J document of about `bytes`, nearly all per-second
/// intervals, written piece by piece (the test holds none of it).
fn big_iperf3(path: &Path, bytes: usize) {
    use std::io::Write;
    let mut v: serde_json::Value = serde_json::from_str(&fixture("iperf3-tx.json")).unwrap();
    let iv = v["intervals"][0].to_string();
    v["intervals"] = serde_json::json!("@INTERVALS@");
    let text = v.to_string();
    let (head, tail) = text.split_once("\"@INTERVALS@\"").unwrap();
    let mut w = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    w.write_all(head.as_bytes()).unwrap();
    w.write_all(b"[").unwrap();
    for i in 0..bytes / (iv.len() + 1) {
        if i > 0 {
            w.write_all(b",").unwrap();
        }
        w.write_all(iv.as_bytes()).unwrap();
    }
    w.write_all(b"]").unwrap();
    w.write_all(tail.as_bytes()).unwrap();
    w.flush().unwrap();
}

#[test]
fn a_large_iperf3_document_imports_in_memory_of_the_result() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("r.db");
    let f = d.path().join("big-iperf3.json");
    big_iperf3(&f, 40 << 20);
    let mut cmd = raw();
    cmd.args(["results", "import", s(&f), "--format", "iperf3-json"])
        .args(["--config", "big3", "--db", s(&db)]);
    // At most 128 MiB of address space (code, stacks and heap): the 40 MiB
    // file alone parsed into a tree took 10 times the file (430 MiB).
    limit_address_space(&mut cmd, 128 << 20);
    let (st, err, secs, cpu) = run_measured(&mut cmd);
    assert!(st.success(), "{st:?} {err}");
    eprintln!("iperf3 40 MiB in 128 MiB of address space: {secs:.1} s, CPU {cpu:.2} s");
    let s = iotoll_store::Store::open_read_only(&db).unwrap();
    let det = s.run_detail(s.resolve("big3").unwrap()).unwrap();
    assert_eq!(det.tests[0].name, "stream/dir=tx,conns=2,msg=128k");
}

/// A small tmpfs mounted for one test, unmounted when dropped.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(size: &str) -> Option<Tmpfs> {
        if !can_run("root (to mount a tmpfs)", is_root()) {
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .status()
            .is_ok_and(|s| s.success());
        can_run("mount -t tmpfs", ok).then_some(Tmpfs { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn read_only(&self) {
        let st = std::process::Command::new("mount")
            .args(["-o", "remount,ro"])
            .arg(self.path())
            .status()
            .unwrap();
        assert!(st.success(), "remount read-only");
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

fn run_db(args: &[&str], db: &Path) -> (Option<i32>, String, String) {
    let o = iotoll().args(args).args(["--db", s(db)]).output().unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// A database with one imported run labelled `a`.
fn seeded(db: &Path) {
    let f = db.with_file_name("fio.json");
    std::fs::write(&f, fixture("fio-randrw.json")).unwrap();
    let o = import(db, &f, "fio-json");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::remove_file(&f).unwrap();
    let o = iotoll()
        .args(["results", "list", "--db", s(db)])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&o.stdout).contains(" imp "));
}

const READERS: &[&[&str]] = &[
    &["results", "list"],
    &["results", "show", "imp"],
    &["results", "export", "imp", "--format", "csv"],
    &["compare", "imp", "imp"],
];

/// A measuring command refused before its workload: exit 1, `want` in the
/// message, and no result printed (the workload never ran).
fn disk_run_refused(db: &Path, want: &str) {
    let (code, out, err) = run_db(
        &["disk", "run", "--json", "--ramp", "0s", "--time", "1s"],
        db,
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains(want), "want '{want}' in: {err}");
    assert!(out.is_empty(), "the workload ran: {out}");
}

#[test]
fn a_database_on_a_read_only_mount_is_read_and_said_to_be_read_only() {
    let Some(m) = Tmpfs::mount("16m") else {
        return;
    };
    let db = m.path().join("r.db");
    seeded(&db);
    m.read_only();
    for args in READERS {
        let (code, _, err) = run_db(args, &db);
        assert_eq!(code, Some(0), "{args:?}: {err}");
    }
    let md = tempfile::tempdir().unwrap();
    let md = md.path().join("r.md");
    let (code, _, err) = run_db(&["report", "imp", "--md", s(&md)], &db);
    assert_eq!(code, Some(0), "{err}");
    let f = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(f.path(), fixture("fio-randrw.json")).unwrap();
    let o = import(&db, f.path(), "fio-json");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(err.contains("is read-only"), "{err}");
    assert!(!err.contains("not an iotoll"), "{err}");
    disk_run_refused(&db, "read-only");
    disk_run_refused(&m.path().join("new.db"), "read-only");
}

#[test]
fn a_full_filesystem_is_said_to_be_full_and_a_failed_create_leaves_nothing() {
    let Some(m) = Tmpfs::mount("1m") else {
        return;
    };
    let db = m.path().join("r.db");
    seeded(&db);
    // Fill it to the last byte.
    {
        use std::io::Write;
        let mut f = std::fs::File::create(m.path().join("fill")).unwrap();
        let block = vec![0x5au8; 4096];
        while f.write_all(&block).is_ok() {}
        let _ = f.write_all(&block[..1]);
    }
    for args in READERS {
        let (code, _, err) = run_db(args, &db);
        assert_eq!(code, Some(0), "{args:?}: {err}");
    }
    let f = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(f.path(), fixture("fio-randrw.json")).unwrap();
    let o = import(&db, f.path(), "fio-json");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(err.contains("is full"), "{err}");
    assert!(!err.contains("not an iotoll"), "{err}");
    disk_run_refused(&db, "is full");
    // A database that cannot be created leaves no file behind.
    let before = std::fs::read_dir(m.path()).unwrap().count();
    disk_run_refused(&m.path().join("new.db"), "is full");
    let o = import(&m.path().join("new2.db"), f.path(), "fio-json");
    assert!(String::from_utf8_lossy(&o.stderr).contains("is full"));
    let names: Vec<String> = std::fs::read_dir(m.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        !names.iter().any(|n| n.contains("new")),
        "left behind: {names:?}"
    );
    assert_eq!(before, names.len(), "{names:?}");
}

#[test]
fn a_corrupt_page_is_found_on_open() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("r.db");
    seeded(&db);
    // Fold the WAL into the file, then damage a b-tree page.
    iotoll_store::Store::open(&db).unwrap();
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
    let pages: u64 = conn
        .query_row("PRAGMA page_count", [], |r| r.get(0))
        .unwrap();
    let page: u64 = conn
        .query_row("PRAGMA page_size", [], |r| r.get(0))
        .unwrap();
    drop(conn);
    assert!(pages > 3);
    {
        use std::io::{Seek, Write};
        let mut f = std::fs::OpenOptions::new().write(true).open(&db).unwrap();
        f.seek(std::io::SeekFrom::Start(3 * page)).unwrap();
        f.write_all(&vec![0xde; page as usize]).unwrap();
    }
    for args in READERS {
        let (code, _, err) = run_db(args, &db);
        assert_eq!(code, Some(1), "{args:?}: {err}");
        assert!(err.contains("is corrupt"), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    }
    disk_run_refused(&db, "is corrupt");
}

#[test]
fn a_path_that_is_not_a_regular_file_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let fifo = d.path().join("fifo");
    let c = std::ffi::CString::new(s(&fifo)).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    for db in [Path::new("/dev/null"), fifo.as_path(), d.path()] {
        for args in [&["results", "list"][..], &["results", "show", "1"]] {
            let (code, _, err) = run_db(args, db);
            assert_ne!(code, Some(0), "{db:?} {args:?}");
            assert!(
                err.contains("not a regular file") || err.contains("is a directory"),
                "{err}"
            );
        }
        disk_run_refused(db, "results database");
    }
    assert!(!Path::new("/dev/null-journal").exists());
    assert!(!Path::new("/dev/null-wal").exists());
}

#[test]
fn a_finished_result_is_kept_when_a_lock_outlasts_the_wait() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("r.db");
    seeded(&db);
    let target = d.path().join("t.tst");
    // The database was checked before the workload. Once the workload is
    // measuring (its progress says so), someone else takes the database's
    // write lock and keeps it until the run has ended.
    let mut run = Running::start_when(
        raw()
            .args(["disk", "run", "--json", "--ramp", "0s", "--time", "120s"])
            .args([
                "--target",
                s(&target),
                "--create",
                "--size",
                "8m",
                "--buffered",
            ])
            .args(["--db", s(&db)]),
        |e| measured_seconds(e) >= 1,
    );
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch("BEGIN EXCLUSIVE").unwrap();
    // The lock is held: now end the workload (Ctrl-C keeps its result), so
    // no timing decides whether the lock came first.
    run.signal(libc::SIGINT);
    let o = run.finish();
    conn.execute_batch("ROLLBACK").unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(130), "{err}");
    assert!(err.contains("is locked"), "{err}");
    // The printed result is the one kept, in the file the message names.
    let printed: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let path = kept_path(&err);
    assert!(Path::new(path).starts_with(d.path()), "{err}");
    let kept: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(kept, printed);
    // Nothing half-stored: only the seeded run.
    assert_eq!(runs(&db), 1);
}

/// The file a "kept in FILE" message names.
fn kept_path(err: &str) -> &str {
    err.split("kept in ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("no file named: {err}"))
}

#[test]
fn imports_read_pipes_and_refuse_devices() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("r.db");
    let o = iotoll()
        .args(["results", "import", "/dev/stdin", "--format", "table"])
        .args(["--config", "piped", "--db", s(&db)])
        .write_stdin("test,mb_s\na,1\n")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // An empty input; a device that never ends is refused at once, not
    // read forever.
    refused(d.path(), "table", "", "the table is empty");
    let o = import(&db, Path::new("/dev/zero"), "table");
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("a device"));
    // So is a line without end.
    let f = d.path().join("one-line.csv");
    std::fs::write(&f, vec![b'x'; 3 << 20]).unwrap();
    let o = import(&db, &f, "table");
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("longer than 1 MiB"));
    assert_eq!(runs(&db), 1);
}

#[test]
fn a_database_locked_past_the_wait_is_refused_before_the_workload() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("r.db");
    seeded(&db);
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch("BEGIN EXCLUSIVE").unwrap();
    disk_run_refused(&db, "is locked by another process");
    // Readers are not held up by a writer (WAL).
    let (code, out, err) = run_db(&["results", "list"], &db);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains(" imp "), "{out}");
    conn.execute_batch("ROLLBACK").unwrap();
}
