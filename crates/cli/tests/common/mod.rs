#![allow(dead_code)]

use assert_cmd::Command;
use serde_json::Value;
use std::path::PathBuf;
use std::process::Output;

/// A results database per test process, so tests never touch the user's.
/// It lives under cargo's target directory, not /tmp, and the first call
/// removes those left by test processes that have ended.
pub fn data_home() -> PathBuf {
    static SWEPT: std::sync::Once = std::sync::Once::new();
    let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    SWEPT.call_once(|| {
        for e in std::fs::read_dir(&root).into_iter().flatten().flatten() {
            let name = e.file_name();
            let Some(pid) = name
                .to_str()
                .and_then(|n| n.strip_prefix("iotoll-test-data-"))
                .and_then(|p| p.parse::<i32>().ok())
            else {
                continue;
            };
            // SAFETY: signal 0 only asks whether the process exists.
            if unsafe { libc::kill(pid, 0) } != 0 {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    });
    root.join(format!("iotoll-test-data-{}", std::process::id()))
}

pub fn iotoll() -> Command {
    let mut c = Command::cargo_bin("iotoll").expect("binary built");
    c.env_remove("TMPDIR");
    c.env("XDG_DATA_HOME", data_home());
    c
}

/// The binary as a plain process (for signals), with the test database.
pub fn raw() -> std::process::Command {
    let mut c = std::process::Command::new(bin_path());
    c.env("XDG_DATA_HOME", data_home());
    c
}

pub fn bin_path() -> PathBuf {
    assert_cmd::cargo::cargo_bin("iotoll")
}

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Whether a test that needs `what` can run here. Outside CI a missing
/// facility skips the test with a message; in CI (`CI` set, where the tests
/// run as root on a host with IPv6) it fails the test: nothing is skipped
/// silently where it can run.
pub fn can_run(what: &str, available: bool) -> bool {
    if available {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{what} is unavailable, but CI must run this test"
    );
    eprintln!("skipped: needs {what}");
    false
}

/// The words of a command line (none of them holds a space).
pub fn words(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// [`disk_json`] on `target` with `line`'s words.
pub fn disk_json_on(target: &str, line: &str) -> Value {
    disk_json(&[&["--target", target][..], &words(line)].concat())
}

/// Runs a short real disk workload and returns its JSON document.
pub fn disk_json(args: &[&str]) -> Value {
    let doc = cmd("disk run --json --ramp 0s --time 1s").args(args).json();
    validate(&doc);
    doc
}

pub fn schema() -> Value {
    let p = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/result.schema.json");
    serde_json::from_str(&std::fs::read_to_string(p).expect("schema file")).expect("schema JSON")
}

pub fn schema_errors(doc: &Value) -> Vec<String> {
    let s = schema();
    let v = jsonschema::validator_for(&s).expect("schema compiles");
    v.iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect()
}

pub fn validate(doc: &Value) {
    let errs = schema_errors(doc);
    assert!(errs.is_empty(), "schema violations: {errs:#?}");
}

/// A command that must succeed and print one JSON document.
pub fn ok_json(out: &std::process::Output) -> Value {
    assert!(out.status.success(), "{}", stderr(out));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON document ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// What a process wrote on stderr, for assertions and failure messages.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Running a command and judging how it ended; every failure message shows
/// what the command wrote on stderr (or the stdout that is not JSON).
pub trait Run {
    fn out(&mut self) -> Output;

    /// Must succeed; returns stdout.
    fn succeeds(&mut self) -> String {
        let out = self.out();
        assert!(out.status.success(), "{}", stderr(&out));
        String::from_utf8(out.stdout).expect("stdout is UTF-8")
    }

    /// Must succeed and print one JSON document.
    fn json(&mut self) -> Value {
        ok_json(&self.out())
    }

    /// Must exit with `code` and name `needle` on stderr; returns stderr.
    fn fails(&mut self, code: i32, needle: &str) -> String {
        let out = self.out();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(code), "{err}");
        assert!(err.contains(needle), "{needle:?} not in: {err}");
        err
    }
}

impl Run for Command {
    fn out(&mut self) -> Output {
        self.output().expect("run iotoll")
    }
}

impl Run for std::process::Command {
    fn out(&mut self) -> Output {
        self.output().expect("run the command")
    }
}

/// `iotoll` with `line`'s [`words`].
pub fn cmd(line: &str) -> Command {
    let mut c = iotoll();
    c.args(words(line));
    c
}

/// [`cmd`] on the results database `db` (`--db DB` follows the words, so
/// `line` must not end in a flag that takes a value).
pub fn db_cmd(db: &str, line: &str) -> Command {
    let mut c = cmd(line);
    c.args(["--db", db]);
    c
}

/// `results show RUN --json` of `db`.
pub fn show(db: &str, run: &str) -> Value {
    db_cmd(db, "results show --json").arg(run).json()
}

/// `results list` of `db`, one line per run.
pub fn list(db: &str) -> String {
    db_cmd(db, "results list").succeeds()
}

/// A temporary directory for a test's files and its results database.
pub struct Tmp {
    pub dir: tempfile::TempDir,
    /// The database's path (`r.db` in the directory; created by its first use).
    pub db: String,
}

/// Mode 0600: a key file group or others may read is refused.
pub fn owner_only(p: impl AsRef<std::path::Path>) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o600)).expect("chmod 600");
}

impl Tmp {
    pub fn new() -> Tmp {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let db = dir.path().join("r.db").to_str().expect("utf-8").to_string();
        Tmp { dir, db }
    }

    /// The path of `name` here (as an argument for the command line).
    pub fn path(&self, name: &str) -> String {
        let p = self.dir.path().join(name);
        p.to_str().expect("utf-8").to_string()
    }

    /// Writes the key file `name` here, owner-only as `--auth-key` wants
    /// it; returns its path.
    pub fn key(&self, name: &str, content: impl AsRef<[u8]>) -> String {
        let p = self.file(name, content);
        owner_only(&p);
        p
    }

    /// Writes the file `name` here; returns its path.
    pub fn file(&self, name: &str, content: impl AsRef<[u8]>) -> String {
        let p = self.path(name);
        std::fs::write(&p, content).expect("write a test file");
        p
    }

    pub fn cmd(&self, line: &str) -> Command {
        db_cmd(&self.db, line)
    }

    pub fn show(&self, run: &str) -> Value {
        show(&self.db, run)
    }

    pub fn list(&self) -> String {
        list(&self.db)
    }

    /// A directory for a test that needs root (labs, agents): `None`
    /// where it is skipped (see [`can_run`]).
    pub fn as_root() -> Option<Tmp> {
        can_run("root", is_root()).then(Tmp::new)
    }

    /// `iotoll suite run --db DB ARGS`, with the labs' state kept here.
    pub fn suite_run(&self, args: &[&str]) -> std::process::Command {
        let mut c = raw();
        c.env("IOTOLL_LAB_DIR", self.dir.path())
            .args(["suite", "run", "--db", &self.db])
            .args(args);
        c
    }

    /// The newest stored run's id, if any.
    pub fn last_run_id(&self) -> Option<u32> {
        (self.list().lines())
            .filter_map(|l| l.split_whitespace().next()?.parse::<u32>().ok())
            .max()
    }

    /// The newest stored run, checked against the published schema.
    pub fn last_run(&self) -> Value {
        let last = self.last_run_id().expect("a stored run");
        let run = self.show(&last.to_string());
        validate_run(&run);
        run
    }
}

/// A lab name of this test process, first letter from
/// IOTOLL_TEST_LAB_TAG (else `default`), so that test runs side by side
/// on one machine keep their labs apart.
pub fn lab_name(tag: &str, default: char) -> String {
    let first = std::env::var("IOTOLL_TEST_LAB_TAG")
        .ok()
        .and_then(|t| t.chars().next().filter(char::is_ascii_lowercase))
        .unwrap_or(default);
    format!("{first}{}-{tag}", std::process::id() % 100_000)
}

pub fn metric(doc: &Value, k: &str) -> f64 {
    doc["metrics"][k]
        .as_f64()
        .unwrap_or_else(|| panic!("metric {k} missing in {}", doc["metrics"]))
}

pub mod lab_suite;
pub mod proxy;
pub mod server;

/// Arguments of `iotoll net`: the test `kind`, the endpoint's address and
/// `line`'s [`words`].
pub fn net_args<'a>(kind: &'a str, addr: &'a str, line: &'a str) -> Vec<&'a str> {
    [&[kind, addr][..], &words(line)].concat()
}

/// Whether `done` holds within `t`, asked every 20 ms.
pub fn within(t: std::time::Duration, mut done: impl FnMut() -> bool) -> bool {
    let end = std::time::Instant::now() + t;
    while !done() {
        if std::time::Instant::now() >= end {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    true
}

/// Runs a short network test; returns (exit code, stdout JSON if any, stderr).
pub fn net_run(args: &[&str]) -> (i32, Option<Value>, String) {
    let out = iotoll()
        .args(["net"])
        .args(args)
        .args(["--json", "--quiet"])
        .output()
        .expect("run iotoll");
    let doc = serde_json::from_slice::<Value>(&out.stdout).ok();
    (
        out.status.code().unwrap_or(-1),
        doc,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A network test that must exit with `code`, naming `needle`; returns
/// its stderr.
pub fn net_fails(args: &[&str], code: i32, needle: &str) -> String {
    let (got, _, err) = net_run(args);
    assert_eq!(got, code, "{args:?}: {err}");
    assert!(err.contains(needle), "{args:?}: {needle:?} not in: {err}");
    err
}

/// A network test that must succeed; validated against the schema.
pub fn net_json(args: &[&str]) -> Value {
    let (code, doc, err) = net_run(args);
    assert_eq!(code, 0, "iotoll net {args:?} failed: {err}");
    let doc = doc.expect("JSON document");
    validate(&doc);
    doc
}

/// A child iotoll started with progress printed as lines on stderr, its
/// stdout and stderr collected as they come.
pub struct Running {
    pub child: std::process::Child,
    err: std::sync::Arc<std::sync::Mutex<String>>,
    readers: Option<(
        std::thread::JoinHandle<()>,
        std::thread::JoinHandle<Vec<u8>>,
    )>,
}

impl Running {
    /// Starts `cmd` and returns once `ready` holds for what it has written
    /// on stderr so far (an event, never a guessed delay), or once it has
    /// ended (the test's assertions then say so). One that is neither
    /// within two minutes is killed and fails the test.
    pub fn start_when(
        cmd: &mut std::process::Command,
        mut ready: impl FnMut(&str) -> bool,
    ) -> Running {
        use std::io::{BufRead, Read};
        use std::process::Stdio;
        use std::sync::{Arc, Mutex};
        use std::time::{Duration, Instant};
        let mut child = cmd
            .env("IOTOLL_PROGRESS", "lines")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn iotoll");
        let err = Arc::new(Mutex::new(String::new()));
        let mut stderr = std::io::BufReader::new(child.stderr.take().expect("stderr"));
        let e2 = err.clone();
        let reader = std::thread::spawn(move || {
            let mut line = String::new();
            while stderr.read_line(&mut line).is_ok_and(|n| n > 0) {
                e2.lock().unwrap().push_str(&line);
                line.clear();
            }
        });
        let mut stdout = child.stdout.take().expect("stdout");
        let out_reader = std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = stdout.read_to_end(&mut v);
            v
        });
        let deadline = Instant::now() + Duration::from_secs(120);
        while child.try_wait().expect("wait for iotoll").is_none() {
            if ready(&err.lock().unwrap()) {
                break;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("never ready: {}", err.lock().unwrap());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Running {
            child,
            err,
            readers: Some((reader, out_reader)),
        }
    }

    /// Sends `signal` (if the child is still running).
    pub fn signal(&mut self, signal: i32) {
        if self.child.try_wait().expect("wait for iotoll").is_none() {
            // SAFETY: sending a signal to our own child.
            unsafe { libc::kill(self.child.id() as i32, signal) };
        }
    }

    /// Waits for the child and returns what it wrote.
    pub fn finish(mut self) -> std::process::Output {
        let status = self.child.wait().expect("wait for iotoll");
        let (reader, out_reader) = self.readers.take().expect("readers");
        reader.join().expect("stderr reader");
        let stdout = out_reader.join().expect("stdout reader");
        let stderr = self.err.lock().unwrap().clone().into_bytes();
        std::process::Output {
            status,
            stdout,
            stderr,
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // A test that failed half-way leaves no process behind.
        if self.readers.is_some() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// [`Running::start_when`], then `signal`, then its output.
pub fn signal_when(
    cmd: &mut std::process::Command,
    signal: i32,
    ready: impl FnMut(&str) -> bool,
) -> std::process::Output {
    let mut r = Running::start_when(cmd, ready);
    r.signal(signal);
    r.finish()
}

/// Starts `cmd` and returns once it has measured a second of its window:
/// its connections are established and it is mid-test.
pub fn measuring(cmd: &mut std::process::Command) -> Running {
    Running::start_when(cmd, |e| measured_seconds(e) >= 1)
}

/// `[measure]` progress lines seen so far (each is one second of the window).
pub fn measured_seconds(stderr: &str) -> usize {
    stderr.lines().filter(|l| l.contains("[measure]")).count()
}

/// Every repetition's document of a run as `results show --json` prints it.
pub fn stored_docs(run: &Value) -> Vec<&Value> {
    let tests = run["tests"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    tests
        .iter()
        .flat_map(|t| t["reps"].as_array().map(Vec::as_slice).unwrap_or_default())
        .map(|r| &r["doc"])
        .collect()
}

/// [`validate`] of every document [`stored_docs`] finds in a run.
pub fn validate_run(run: &Value) {
    for d in stored_docs(run) {
        let errs = schema_errors(d);
        assert!(
            errs.is_empty(),
            "schema violations: {errs:#?}\nin the {} document of {}",
            d["kind"],
            d["started_at"]
        );
    }
}
