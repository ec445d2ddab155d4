//! Issue 9: imports that damage the database, database errors that
//! mislead, sweeps and imports that hang, and the small ones in suites.

mod common;
use assert_cmd::Command;
use common::*;
use serde_json::{json, Value};
use std::path::Path;

const FIO: &str = "fio-randrw.json";
const IPERF3: &str = "iperf3-tx.json";

fn fixture(name: &str) -> String {
    let p = format!(
        "{}/../store/tests/fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(p).expect("fixture")
}

/// The fixture `name`'s JSON document after `edit`.
fn edited(name: &str, edit: impl Fn(&mut Value)) -> String {
    let text = fixture(name);
    let mut v: Value = serde_json::from_str(&text[text.find('{').unwrap()..]).unwrap();
    edit(&mut v);
    v.to_string()
}

/// `results import FILE` into `db`, labelled `imp`.
fn import(db: &str, file: &str, format: &str) -> Command {
    let mut c = db_cmd(db, "results import --config imp");
    c.args([file, "--format", format]);
    c
}

fn runs(db: &str) -> usize {
    if !Path::new(db).exists() {
        return 0;
    }
    iotoll_store::Store::open_read_only(Path::new(db))
        .map(|s| s.list_runs().unwrap().len())
        .unwrap_or(0)
}

/// The stored run labelled `config`.
fn detail(db: &str, config: &str) -> iotoll_store::RunDetail {
    let s = iotoll_store::Store::open_read_only(Path::new(db)).unwrap();
    s.run_detail(s.resolve(config).unwrap()).unwrap()
}

/// Imports `text`; asserts exit 2 with `want` in the message and nothing stored.
fn refused(t: &Tmp, format: &str, text: &str, want: &str) {
    let before = runs(&t.db);
    import(&t.db, &t.file("in.txt", text), format).fails(2, want);
    assert_eq!(runs(&t.db), before, "nothing stored: {want}");
}

#[test]
fn imports_that_would_damage_the_database_are_refused() {
    let t = Tmp::new();
    // 1e308 + 1e308 is infinite: refused, never stored as null.
    let huge = edited(FIO, |v| {
        v["jobs"][0]["read"]["iops"] = 1e308.into();
        v["jobs"][0]["write"]["iops"] = 1e308.into();
    });
    refused(&t, "fio-json", &huge, "iops comes to inf");
    let jobs = edited(FIO, |v| {
        let j = v["jobs"][0].clone();
        v["jobs"] = json!([j, null, 5, "x"]);
    });
    refused(
        &t,
        "fio-json",
        &jobs,
        "jobs[1]: expected a job object, got null",
    );
    // (fixture, "JSON pointer=the value put there", the message)
    let edits = [
        (
            FIO,
            "/jobs/0/read/iops=-5.0",
            "jobs[0].read.iops: -5 is negative",
        ),
        (
            FIO,
            "/jobs/0/read/iops=\"100\"",
            "jobs[0].read.iops: expected a number, got a string",
        ),
        (
            FIO,
            "/jobs/0/read/lat_ns/mean=-1.0",
            "jobs[0].read.lat_ns.mean",
        ),
        (FIO, "/jobs/0/usr_cpu=-3.0", "jobs[0].usr_cpu"),
        (
            IPERF3,
            "/start/test_start/num_streams=2.5",
            "start.test_start.num_streams: expected a whole number",
        ),
        (
            IPERF3,
            "/start/test_start/reverse=true",
            "start.test_start.reverse: expected 0 or 1, got true",
        ),
        (
            IPERF3,
            "/end/sum_received/bits_per_second=-1.0",
            "bits_per_second: -1 is negative",
        ),
    ];
    for (file, edit, want) in edits {
        let (at, x) = edit.split_once('=').unwrap();
        let x: Value = serde_json::from_str(x).unwrap();
        let text = edited(file, |v| *v.pointer_mut(at).expect(at) = x.clone());
        // fio-randrw.json is a fio-json document, iperf3-tx.json iperf3-json.
        let format = format!("{}-json", file.split('-').next().unwrap());
        refused(&t, &format, &text, want);
    }
    for (text, want) in [
        ("test,mb_s,mb_s\na,1,2\n", "column 'mb_s' appears twice"),
        ("test,mb_s\na,-4\n", "is negative"),
        ("test,iops\na,1e308\nb,1e309\n", "not a number"),
    ] {
        refused(&t, "table", text, want);
    }

    // What imported is readable everywhere afterwards.
    let f = t.file("bom.csv", "\u{feff}test,mb_s,cpu_pct\nread-4k,120,8\n");
    import(&t.db, &f, "table").succeeds();
    for line in [
        "results show imp",
        "results export imp --format json",
        "report imp",
    ] {
        t.cmd(line).succeeds();
    }
}

#[test]
fn fio_clones_sharing_a_job_name_import_whole() {
    let t = Tmp::new();
    // numjobs=3: three jobs with one name and equal parameters.
    let three = edited(FIO, |v| {
        let j = v["jobs"][0].clone();
        v["jobs"] = json!([j.clone(), j.clone(), j]);
    });
    import(&t.db, &t.file("fio.json", three), "fio-json").succeeds();
    let det = detail(&t.db, "imp");
    let names: std::collections::HashSet<_> = det.tests.iter().map(|t| &t.name).collect();
    assert_eq!((det.tests.len(), names.len()), (3, 3), "{names:?}");
}

fn tv(t: libc::timeval) -> f64 {
    t.tv_sec as f64 + t.tv_usec as f64 / 1e6
}

/// Runs `cmd` to its end with at most `bytes` of address space (a process
/// that holds more fails to allocate, exit by abort, whatever the machine)
/// and asserts it succeeded. Returns its wall time and CPU time (user and
/// system, from wait4's rusage: the child's own, whatever the load).
#[allow(clippy::zombie_processes)] // reaped by wait4, which gives its rusage
fn run_measured(cmd: &mut std::process::Command, bytes: u64) -> (f64, f64) {
    use std::io::Read;
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    let lim = libc::rlimit {
        rlim_cur: bytes as libc::rlim_t,
        rlim_max: bytes as libc::rlim_t,
    };
    // SAFETY: setrlimit is async-signal-safe; the closure allocates nothing.
    unsafe {
        cmd.pre_exec(move || match libc::setrlimit(libc::RLIMIT_AS, &lim) {
            0 => Ok(()),
            _ => Err(std::io::Error::last_os_error()),
        });
    }
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
    // SAFETY: rusage is plain integers, for which all zeroes is valid.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waiting for our own child, into live out-parameters.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
    assert_eq!(r, pid);
    let status = std::process::ExitStatus::from_raw(status);
    assert!(status.success(), "{status:?} {err}");
    (
        t0.elapsed().as_secs_f64(),
        tv(ru.ru_utime) + tv(ru.ru_stime),
    )
}

#[test]
fn table_imports_take_linear_time_and_memory_of_one_row() {
    let t = Tmp::new();
    // 4 times the rows may not take much more than 4 times the CPU (it was
    // quadratic, 16 times: 80,000 rows took 34 s).
    let table_cpu = |rows: usize| {
        let mut text = String::from("test,group,iops,mb_s,cpu_pct\n");
        for i in 0..rows {
            let (g, mb, cpu) = (i % 7, i % 500, 1 + i % 90);
            text.push_str(&format!("t{i},g{g},{},{mb},{cpu}\n", i + 1));
        }
        let f = t.file(&format!("big{rows}.csv"), &text);
        let mut cmd = raw();
        cmd.args(["results", "import", &f, "--format", "table"])
            .args(["--config", &format!("t{rows}"), "--db", &t.db]);
        // Rows go into the database as they are read (all of them held
        // took 3.5 KiB each: 40,000 rows, 140 MiB).
        let (secs, cpu) = run_measured(&mut cmd, 128 << 20);
        eprintln!("table {rows} rows: {secs:.1} s, CPU {cpu:.2} s");
        cpu
    };
    let small = table_cpu(10_000);
    let large = table_cpu(40_000);
    assert!(
        large < 8.0 * small.max(0.05),
        "10,000 rows: {small} s of CPU; 40,000 rows: {large} s"
    );
    assert_eq!(detail(&t.db, "t40000").tests.len(), 40_000);
}

/// An iperf3 -J document of about `bytes`, nearly all per-second
/// intervals, written piece by piece (the test holds none of it).
fn big_iperf3(path: &str, bytes: usize) {
    use std::io::Write;
    let mut v: Value = serde_json::from_str(&fixture(IPERF3)).unwrap();
    let iv = v["intervals"][0].to_string();
    v["intervals"] = json!("@INTERVALS@");
    let text = v.to_string();
    let (head, tail) = text.split_once("\"@INTERVALS@\"").unwrap();
    let mut w = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    write!(w, "{head}[{iv}").unwrap();
    for _ in 1..bytes / (iv.len() + 1) {
        write!(w, ",{iv}").unwrap();
    }
    write!(w, "]{tail}").unwrap();
    w.flush().unwrap();
}

#[test]
fn a_large_iperf3_document_imports_in_memory_of_the_result() {
    let t = Tmp::new();
    let f = t.path("big-iperf3.json");
    big_iperf3(&f, 40 << 20);
    let mut cmd = raw();
    cmd.args(["results", "import", &f, "--format", "iperf3-json"])
        .args(["--config", "big3", "--db", &t.db]);
    // At most 128 MiB of address space (code, stacks and heap): the 40 MiB
    // file alone parsed into a tree took 10 times the file (430 MiB).
    let (secs, cpu) = run_measured(&mut cmd, 128 << 20);
    eprintln!("iperf3 40 MiB in 128 MiB of address space: {secs:.1} s, CPU {cpu:.2} s");
    let det = detail(&t.db, "big3");
    assert_eq!(det.tests[0].name, "stream/dir=tx,conns=2,msg=128k");
}

/// A small tmpfs mounted for one test on a [`Tmp`], unmounted when dropped.
struct Tmpfs(Tmp);

impl Tmpfs {
    fn mount(size: &str) -> Option<Tmpfs> {
        if !can_run("root (to mount a tmpfs)", is_root()) {
            return None;
        }
        let t = Tmp::new();
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(t.dir.path())
            .status()
            .is_ok_and(|s| s.success());
        can_run("mount -t tmpfs", ok).then_some(Tmpfs(t))
    }

    fn read_only(&self) {
        let st = std::process::Command::new("mount")
            .args(["-o", "remount,ro"])
            .arg(self.0.dir.path())
            .status()
            .unwrap();
        assert!(st.success(), "remount read-only");
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(self.0.dir.path())
            .status();
    }
}

/// A database with one imported run labelled `imp`.
fn seeded(t: &Tmp) {
    let f = t.file("fio.json", fixture(FIO));
    import(&t.db, &f, "fio-json").succeeds();
    std::fs::remove_file(&f).unwrap();
    assert!(t.list().contains(" imp "));
}

const READERS: &[&str] = &[
    "results list",
    "results show imp",
    "results export imp --format csv",
    "compare imp imp",
];

/// A measuring command refused before its workload: exit 1, `want` in the
/// message, and no result printed (the workload never ran).
fn disk_run_refused(db: &str, want: &str) {
    let o = db_cmd(db, "disk run --json --ramp 0s --time 1s").out();
    let (out, err) = (String::from_utf8_lossy(&o.stdout), stderr(&o));
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains(want), "want '{want}' in: {err}");
    assert!(out.is_empty(), "the workload ran: {out}");
}

/// An import into `db` that fails saying `want`, not that the database is
/// not iotoll's.
fn import_fails(db: &str, want: &str) {
    let t = Tmp::new();
    let o = import(db, &t.file("fio.json", fixture(FIO)), "fio-json").out();
    let err = stderr(&o);
    assert!(!o.status.success());
    assert!(err.contains(want), "{err}");
    assert!(!err.contains("not an iotoll"), "{err}");
}

#[test]
fn a_database_on_a_read_only_mount_is_read_and_said_to_be_read_only() {
    let Some(m) = Tmpfs::mount("16m") else {
        return;
    };
    let t = &m.0;
    seeded(t);
    m.read_only();
    for line in READERS {
        t.cmd(line).succeeds();
    }
    let out = Tmp::new();
    t.cmd("report imp")
        .args(["--md", &out.path("r.md")])
        .succeeds();
    import_fails(&t.db, "is read-only");
    disk_run_refused(&t.db, "read-only");
    disk_run_refused(&t.path("new.db"), "read-only");
}

#[test]
fn a_full_filesystem_is_said_to_be_full_and_a_failed_create_leaves_nothing() {
    let Some(m) = Tmpfs::mount("1m") else {
        return;
    };
    let t = &m.0;
    seeded(t);
    // Fill it to the last byte.
    {
        use std::io::Write;
        let mut f = std::fs::File::create(t.path("fill")).unwrap();
        let block = vec![0x5au8; 4096];
        while f.write_all(&block).is_ok() {}
        let _ = f.write_all(&block[..1]);
    }
    for line in READERS {
        t.cmd(line).succeeds();
    }
    import_fails(&t.db, "is full");
    disk_run_refused(&t.db, "is full");
    // A database that cannot be created leaves no file behind.
    let before = std::fs::read_dir(t.dir.path()).unwrap().count();
    disk_run_refused(&t.path("new.db"), "is full");
    import_fails(&t.path("new2.db"), "is full");
    let names: Vec<String> = std::fs::read_dir(t.dir.path())
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

/// Fills the filesystem holding `t` to the last byte.
fn fill(t: &Tmp) {
    use std::io::Write;
    let mut f = std::fs::File::create(t.path("fill")).unwrap();
    let block = vec![0x5au8; 4096];
    while f.write_all(&block).is_ok() {}
    let _ = f.write_all(&block[..1]);
}

/// A suite's database filesystem fills while a test waits (its endpoint
/// is busy with another client: an event, no timing): the repetition
/// measured next cannot be stored, and is kept beside the database (not
/// in the working directory), in a file the error names.
#[test]
fn a_suite_whose_database_fills_keeps_the_result_beside_it_and_names_it() {
    let Some(m) = Tmpfs::mount("8m") else {
        return;
    };
    let t = &m.0;
    seeded(t);
    let elsewhere = Tmp::new();
    let suite = elsewhere.file(
        "full.toml",
        "name = \"full\"\nreps = 1\nramp = \"0s\"\ntime = \"300ms\"\n\
         [[test]]\nname = \"s\"\nkind = \"net-stream\"\n",
    );
    let s = common::server::Server::start("127.0.0.1", &[]);
    let other = measuring(raw().args([
        "net", "stream", &s.addr, "--ramp", "0s", "--time", "120s", "--no-db",
    ]));
    let run = Running::start_when(
        raw()
            .current_dir(elsewhere.dir.path())
            .args(["suite", "run", &suite, "--db", &t.db, "--peer", &s.addr]),
        |e| e.contains("is busy with another test"),
    );
    fill(t);
    let mut other = other;
    other.signal(libc::SIGINT);
    other.finish();
    let o = run.finish();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("is full"), "{err}");
    let path = kept_path(&err);
    assert!(
        Path::new(path).starts_with(t.dir.path()),
        "not beside the database: {err}"
    );
    let kept: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(kept["kind"], "net-stream", "{kept}");
    // Nothing landed in the working directory.
    let names: Vec<String> = std::fs::read_dir(elsewhere.dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!names.iter().any(|n| n.contains("unstored")), "{names:?}");
}

#[test]
fn a_corrupt_page_is_found_on_open() {
    let t = Tmp::new();
    seeded(&t);
    // Fold the WAL into the file, then damage a b-tree page.
    iotoll_store::Store::open(Path::new(&t.db)).unwrap();
    let conn = rusqlite::Connection::open(&t.db).unwrap();
    let pragma = |sql: &str| -> u64 { conn.query_row(sql, [], |r| r.get(0)).unwrap() };
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
    let (pages, page) = (pragma("PRAGMA page_count"), pragma("PRAGMA page_size"));
    drop(conn);
    assert!(pages > 3);
    {
        use std::io::{Seek, Write};
        let mut f = std::fs::OpenOptions::new().write(true).open(&t.db).unwrap();
        f.seek(std::io::SeekFrom::Start(3 * page)).unwrap();
        f.write_all(&vec![0xde; page as usize]).unwrap();
    }
    for line in READERS {
        let err = t.cmd(line).fails(1, "is corrupt");
        assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    }
    disk_run_refused(&t.db, "is corrupt");
}

#[test]
fn a_path_that_is_not_a_regular_file_is_refused() {
    let t = Tmp::new();
    let fifo = t.path("fifo");
    let c = std::ffi::CString::new(fifo.as_str()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    for db in ["/dev/null", &fifo, t.dir.path().to_str().unwrap()] {
        for line in ["results list", "results show 1"] {
            let o = db_cmd(db, line).out();
            let err = stderr(&o);
            assert_ne!(o.status.code(), Some(0), "{db:?} {line}");
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
    let t = Tmp::new();
    seeded(&t);
    // The database was checked before the workload. Once the workload is
    // measuring (its progress says so), someone else takes the database's
    // write lock and keeps it until the run has ended.
    let mut run = measuring(
        raw()
            .args(words("disk run --json --ramp 0s --time 120s"))
            .args(words("--create --size 8m --buffered"))
            .args(["--target", &t.path("t.tst"), "--db", &t.db]),
    );
    let conn = rusqlite::Connection::open(&t.db).unwrap();
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
    let printed: Value = serde_json::from_slice(&o.stdout).unwrap();
    let path = kept_path(&err);
    assert!(Path::new(path).starts_with(t.dir.path()), "{err}");
    let kept: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(kept, printed);
    // Nothing half-stored: only the seeded run.
    assert_eq!(runs(&t.db), 1);
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
    let t = Tmp::new();
    t.cmd("results import /dev/stdin --format table --config piped")
        .write_stdin("test,mb_s\na,1\n")
        .succeeds();
    // An empty input; a device that never ends is refused at once, not
    // read forever.
    refused(&t, "table", "", "the table is empty");
    import(&t.db, "/dev/zero", "table").fails(2, "a device");
    // So is a line without end.
    let f = t.file("one-line.csv", vec![b'x'; 3 << 20]);
    import(&t.db, &f, "table").fails(2, "longer than 1 MiB");
    assert_eq!(runs(&t.db), 1);
}

#[test]
fn a_database_locked_past_the_wait_is_refused_before_the_workload() {
    let t = Tmp::new();
    seeded(&t);
    let conn = rusqlite::Connection::open(&t.db).unwrap();
    conn.execute_batch("BEGIN EXCLUSIVE").unwrap();
    disk_run_refused(&t.db, "is locked by another process");
    // Readers are not held up by a writer (WAL).
    let out = t.list();
    assert!(out.contains(" imp "), "{out}");
    conn.execute_batch("ROLLBACK").unwrap();
}
