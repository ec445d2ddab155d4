//! The results database: SQLite (bundled), versioned schema with
//! migrations, WAL, every repetition committed the moment it finishes.
//!
//! Runs hold tests; tests hold repetitions; each repetition keeps its whole
//! result document (spec, metrics, CPU detail, latency histogram, series)
//! and its metrics in a table of their own for querying.

#![forbid(unsafe_code)]

pub mod export;
pub mod import;

use iotoll_model::{Kind, ResultDoc, ResultStatus, RunStatus};
use rusqlite::{params, Connection, ErrorCode, OpenFlags, OptionalExtension};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The schema this iotoll writes. A database with a higher version was
/// written by a newer iotoll and is refused, never modified.
pub const SCHEMA_VERSION: i64 = 1;

/// Migrations: entry i takes the schema from version i to i + 1.
const MIGRATIONS: &[&str] = &[r#"
CREATE TABLE runs (
    id          INTEGER PRIMARY KEY,
    suite       TEXT NOT NULL,
    config      TEXT,
    notes       TEXT NOT NULL DEFAULT '[]',
    started_at  TEXT NOT NULL,
    finished_at TEXT,
    status      TEXT NOT NULL CHECK (status IN ('running','complete','aborted','failed','incomplete')),
    pid         INTEGER,
    disclosure  TEXT,
    suite_text  TEXT
);
CREATE TABLE tests (
    id           INTEGER PRIMARY KEY,
    run_id       INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    seq          INTEGER NOT NULL,
    name         TEXT NOT NULL,
    kind         TEXT NOT NULL,
    grp          TEXT,
    params       TEXT NOT NULL,
    select_rule  TEXT NOT NULL,
    selected_rep INTEGER,
    spread_pct   REAL,
    repeatable   INTEGER,
    summary      TEXT,
    UNIQUE (run_id, name)
);
CREATE TABLE reps (
    id      INTEGER PRIMARY KEY,
    test_id INTEGER NOT NULL REFERENCES tests(id) ON DELETE CASCADE,
    rep     INTEGER NOT NULL,
    status  TEXT NOT NULL,
    doc     TEXT NOT NULL,
    UNIQUE (test_id, rep)
);
CREATE TABLE metrics (
    rep_id INTEGER NOT NULL REFERENCES reps(id) ON DELETE CASCADE,
    name   TEXT NOT NULL,
    value  REAL NOT NULL,
    PRIMARY KEY (rep_id, name)
);
CREATE INDEX tests_run ON tests(run_id);
CREATE INDEX reps_test ON reps(test_id);
"#];

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("results database {path}: {msg}")]
    Open { path: PathBuf, msg: String },
    #[error("results database {path} was written by a newer iotoll (schema {found}; this iotoll knows up to {known}); use that iotoll or another --db")]
    TooNew {
        path: PathBuf,
        found: i64,
        known: i64,
    },
    #[error("no results database at {0} (nothing has been stored there yet)")]
    Missing(PathBuf),
    #[error("no run {0} in the results database")]
    NoRun(String),
    /// A label none of whose runs is complete: one of them only by its id.
    #[error("'{label}' has no complete run (its latest: {latest}); give a run id to use an unfinished one, e.g. `iotoll results show {id}`")]
    NoCompleteRun {
        label: String,
        /// `run 7 (failed), run 5 (aborted)`, newest first.
        latest: String,
        id: RunId,
    },
    #[error("results database: {0}")]
    Sql(#[from] rusqlite::Error),
    #[error("results database: stored document is damaged: {0}")]
    Json(#[from] serde_json::Error),
    /// Input an import could not take (nothing was stored).
    #[error("{0}")]
    Input(String),
}

/// The room [`Store::check_ready`] keeps beside the database for a result
/// the database cannot take: `.iotoll-rescue-room-<pid>`.
fn rescue_room(db: &Path) -> PathBuf {
    dir_of(db).join(format!("{RESCUE_ROOM_PREFIX}{}", std::process::id()))
}

const RESCUE_ROOM_PREFIX: &str = ".iotoll-rescue-room-";

/// Sets aside [`MIN_FREE_BYTES`] beside the database (an allocated file)
/// so that a result is kept there even when the database's writes fill
/// the filesystem; [`keep_unstored`] frees it first. Best effort: without
/// it a rescue still tries beside the database, then elsewhere. Rooms
/// left by processes that died (SIGKILL) are removed.
fn reserve_rescue_room(db: &Path) {
    let dir = dir_of(db);
    if let Ok(entries) = std::fs::read_dir(&dir) {
        for e in entries.flatten() {
            let n = e.file_name();
            let stale = n
                .to_str()
                .and_then(|n| n.strip_prefix(RESCUE_ROOM_PREFIX))
                .and_then(|pid| pid.parse::<i64>().ok())
                .is_some_and(|pid| !pid_alive(pid));
            if stale {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    let p = rescue_room(db);
    let Ok(f) = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&p)
    else {
        return;
    };
    if nix::fcntl::posix_fallocate(&f, 0, MIN_FREE_BYTES as libc::off_t).is_err() {
        let _ = std::fs::remove_file(&p);
    }
}

/// Keeps a finished result the database could not take: its JSON document
/// in a new file beside the database (in the room set aside for it, when
/// the database's filesystem is full), else in the current directory, else
/// the temporary directory. Returns where it is.
pub fn keep_unstored(db: &Path, doc: &ResultDoc) -> Result<PathBuf, String> {
    use std::io::Write;
    let _ = std::fs::remove_file(rescue_room(db));
    let text = serde_json::to_string_pretty(doc).map_err(|e| e.to_string())?;
    let name = format!(
        "iotoll-unstored-{}-{}.json",
        doc.started_at.replace(':', ""),
        std::process::id()
    );
    let mut tried = Vec::new();
    for dir in [dir_of(db), PathBuf::from("."), std::env::temp_dir()] {
        let p = dir.join(&name);
        let r = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&p)
            .and_then(|mut f| {
                f.write_all(text.as_bytes())?;
                f.write_all(b"\n")?;
                f.sync_all()
            });
        match r {
            Ok(()) => return Ok(std::path::absolute(&p).unwrap_or(p)),
            Err(e) => {
                // A partial file is no result: do not leave it.
                if e.kind() != std::io::ErrorKind::AlreadyExists {
                    let _ = std::fs::remove_file(&p);
                }
                tried.push(format!("{}: {e}", p.display()));
            }
        }
    }
    Err(tried.join("; "))
}

/// `$XDG_DATA_HOME/iotoll/results.db`, else `~/.local/share/iotoll/results.db`.
pub fn default_path() -> PathBuf {
    let base = std::env::var_os("XDG_DATA_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
        .unwrap_or_else(|| PathBuf::from("."));
    base.join("iotoll").join("results.db")
}

/// A word stored as text (a kind, a status) read back as its enum.
fn word<T: serde::de::DeserializeOwned>(r: &rusqlite::Row, i: usize) -> rusqlite::Result<T> {
    let s: String = r.get(i)?;
    serde_json::from_value(serde_json::Value::String(s)).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(i, rusqlite::types::Type::Text, Box::new(e))
    })
}

pub type RunId = i64;
pub type TestId = i64;

#[derive(Debug, Clone, Serialize)]
pub struct RunRow {
    pub id: RunId,
    pub suite: String,
    pub config: Option<String>,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub status: RunStatus,
    pub notes: Vec<String>,
    pub tests: i64,
}

#[derive(Debug, Clone, Serialize)]
pub struct RepRow {
    pub rep: i64,
    pub status: ResultStatus,
    pub doc: ResultDoc,
}

#[derive(Debug, Clone, Serialize)]
pub struct TestRow {
    pub seq: i64,
    pub name: String,
    pub kind: Kind,
    pub group: Option<String>,
    pub params: serde_json::Value,
    pub select: String,
    pub selected_rep: Option<i64>,
    pub spread_pct: Option<f64>,
    pub repeatable: Option<bool>,
    /// The selection's metrics (the selected repetition's, or the means).
    pub summary: Option<iotoll_model::Metrics>,
    /// The 95 % confidence interval of the selection metric over the
    /// complete repetitions, with 3 or more of them ([`TestRow::compute_ci95`]).
    pub ci95: Option<iotoll_model::Ci95>,
    pub reps: Vec<RepRow>,
}

impl TestRow {
    /// The metric the test is selected by (`median:METRIC`, else the
    /// kind's headline).
    pub fn select_metric(&self) -> &str {
        iotoll_model::ci::rule_metric(&self.select, self.kind)
    }

    /// The 95 % confidence interval of [`TestRow::select_metric`] over the
    /// complete repetitions; None with fewer than 3.
    pub fn compute_ci95(&self) -> Option<iotoll_model::Ci95> {
        let m = self.select_metric();
        let values = (self.reps.iter())
            .filter(|r| r.status == ResultStatus::Complete)
            .filter_map(|r| r.doc.metrics.get(m).copied());
        iotoll_model::Ci95::of(m, values)
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct RunDetail {
    #[serde(flatten)]
    pub run: RunRow,
    pub disclosure: Option<serde_json::Value>,
    pub suite_text: Option<String>,
    pub tests: Vec<TestRow>,
}

/// What a finished test records about its repetitions.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    pub rule: String,
    pub selected_rep: Option<i64>,
    pub spread_pct: Option<f64>,
    pub repeatable: Option<bool>,
    pub summary: Option<iotoll_model::Metrics>,
}

pub struct Store {
    conn: Connection,
    path: PathBuf,
    read_only: bool,
}

impl Drop for Store {
    fn drop(&mut self) {
        // The room check_ready set aside is not needed past this store.
        if !self.read_only {
            let _ = std::fs::remove_file(rescue_room(&self.path));
        }
    }
}

fn now() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

use iotoll_model::os::pid_alive;

/// How long opening waits out other processes' locks, and how long each
/// write waits for the database to be free.
pub const BUSY_WAIT: Duration = Duration::from_secs(10);

/// Free space a measuring command needs before it runs a workload.
const MIN_FREE_BYTES: u64 = 1 << 20;

fn busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

/// Runs `f` again while SQLite answers "busy" without having waited (its
/// deadlock avoidance, WAL recovery, a journal-mode change racing another
/// process), until `deadline`.
fn retry_busy<T>(
    deadline: Instant,
    mut f: impl FnMut() -> rusqlite::Result<T>,
) -> rusqlite::Result<T> {
    let mut pause = Duration::from_millis(2);
    loop {
        match f() {
            Err(e) if busy(&e) && Instant::now() < deadline => {
                // Jitter keeps processes that collided from colliding again.
                let jitter = Duration::from_micros(u64::from(std::process::id() % 997));
                std::thread::sleep(pause + jitter);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            r => return r,
        }
    }
}

/// A pragma's answer, asked again while SQLite answers "busy" (see
/// [`retry_busy`]) until `deadline`.
fn pragma<T: rusqlite::types::FromSql>(
    conn: &Connection,
    deadline: Instant,
    sql: &str,
) -> rusqlite::Result<T> {
    retry_busy(deadline, || conn.query_row(sql, [], |r| r.get(0)))
}

/// An [`StoreError::Open`] of `path` saying `msg`.
fn open_err(path: &Path) -> impl Fn(String) -> StoreError + Copy + '_ {
    move |msg| StoreError::Open {
        path: path.to_path_buf(),
        msg,
    }
}

/// A database written by a newer iotoll is refused.
fn check_version(path: &Path, found: i64) -> Result<(), StoreError> {
    if found > SCHEMA_VERSION {
        return Err(StoreError::TooNew {
            path: path.to_path_buf(),
            found,
            known: SCHEMA_VERSION,
        });
    }
    Ok(())
}

fn statvfs(dir: &Path) -> Option<nix::sys::statvfs::Statvfs> {
    nix::sys::statvfs::statvfs(dir).ok()
}

fn writable(p: &Path) -> bool {
    nix::unistd::access(p, nix::unistd::AccessFlags::W_OK).is_ok()
}

fn dir_of(path: &Path) -> PathBuf {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    dir.map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// Free bytes for this user on the filesystem holding `dir`.
#[allow(clippy::unnecessary_cast)] // the field types differ between platforms
fn free_bytes(dir: &Path) -> Option<u64> {
    statvfs(dir).map(|s| s.blocks_available() as u64 * s.fragment_size() as u64)
}

/// What keeps the database from being written, as the filesystem tells it.
fn fs_problem(path: &Path) -> Option<String> {
    let dir = dir_of(path);
    let st = statvfs(&dir)?;
    let d = dir.display();
    if st.flags().contains(nix::sys::statvfs::FsFlags::ST_RDONLY) {
        Some(format!("is read-only: {d} is on a read-only filesystem"))
    } else if free_bytes(&dir).is_some_and(|f| f < 64 * 1024) {
        Some(format!(
            "cannot be written: the filesystem holding {d} is full"
        ))
    } else if !writable(&dir) {
        Some(format!(
            "is read-only: no permission to create files in {d}"
        ))
    } else if path.exists() && !writable(path) {
        Some("is read-only: no permission to write it".into())
    } else {
        None
    }
}

/// Says what is wrong, in the user's terms, for an SQLite error.
fn describe(path: &Path, e: &rusqlite::Error) -> String {
    match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => format!(
            "is locked by another process (waited {} s; another program, e.g. an sqlite3 shell or a backup, holds it): {e}",
            BUSY_WAIT.as_secs()
        ),
        Some(ErrorCode::DatabaseCorrupt) => format!(
            "is corrupt ({e}); iotoll will not use it: restore a backup or give another --db"
        ),
        Some(ErrorCode::NotADatabase) => format!("is not an iotoll results database ({e})"),
        Some(ErrorCode::DiskFull) => format!(
            "cannot be written: the filesystem holding {} is full",
            dir_of(path).display()
        ),
        Some(
            ErrorCode::ReadOnly
            | ErrorCode::SystemIoFailure
            | ErrorCode::CannotOpen
            | ErrorCode::PermissionDenied,
        ) => match fs_problem(path) {
            Some(p) => format!("{p} ({e})"),
            None => format!("cannot be used: {e}"),
        },
        _ => format!("cannot be used: {e}"),
    }
}

/// Percent-encodes a path for an SQLite `file:` URI.
fn uri_path(p: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let abs = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let mut s = String::from("file:");
    for &b in abs.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-_.~".contains(&b) {
            s.push(b as char);
        } else {
            s.push_str(&format!("%{b:02X}"));
        }
    }
    s
}

/// A path iotoll may use as a database: absent, or a regular file
/// (through symbolic links) — never a device, pipe or directory.
fn check_kind(path: &Path) -> Result<bool, String> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => Ok(true),
        Ok(m) if m.is_dir() => Err("is a directory".into()),
        Ok(_) => Err("is not a regular file (a device, pipe or socket); give a file path".into()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(format!("cannot be used: {e}")),
    }
}

fn open_rw(p: &Path) -> rusqlite::Result<Connection> {
    use OpenFlags as F;
    let flags = F::SQLITE_OPEN_READ_WRITE | F::SQLITE_OPEN_CREATE | F::SQLITE_OPEN_NO_MUTEX;
    Connection::open_with_flags(p, flags)
}

fn remove_db_files(p: &Path) {
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut f = p.as_os_str().to_owned();
        f.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(f));
    }
}

/// Builds a new database beside `path` (WAL set, schema migrated, while no
/// other process can see it) and links it into place. Returns whether it
/// was put there (false: another process created one first — use that).
/// Nothing is left behind when it fails.
fn create_new(path: &Path) -> Result<bool, String> {
    static SEQ: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "results.db".into());
    let tmp = dir_of(path).join(format!(
        ".{name}.new-{}-{}",
        std::process::id(),
        SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    let build = || -> Result<(), String> {
        let sql = |e: rusqlite::Error| describe(path, &e);
        let conn = open_rw(&tmp).map_err(sql)?;
        // No other process can see it yet: nothing to wait for.
        let mode: String = pragma(&conn, Instant::now(), "PRAGMA journal_mode=WAL").map_err(sql)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(format!(
                "cannot be created: the filesystem does not support SQLite's WAL (journal mode stays {mode})"
            ));
        }
        conn.execute_batch(&format!(
            "BEGIN; {} PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;",
            MIGRATIONS.join("\n")
        ))
        .map_err(sql)?;
        conn.close().map_err(|(_, e)| sql(e))
    };
    let out = match build() {
        Err(e) => Err(e),
        Ok(()) => match std::fs::hard_link(&tmp, path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
            // No hard links here: the database is created in place.
            Err(_) => Ok(false),
        },
    };
    remove_db_files(&tmp);
    out
}

fn quick_check(conn: &Connection, path: &Path, deadline: Instant) -> Result<(), String> {
    match pragma::<String>(conn, deadline, "PRAGMA quick_check(1)") {
        Ok(s) if s == "ok" => Ok(()),
        Ok(s) => Err(format!(
            "is corrupt ({}); iotoll will not use it: restore a backup or give another --db",
            s.split_whitespace().collect::<Vec<_>>().join(" ")
        )),
        Err(e) => Err(describe(path, &e)),
    }
}

impl Store {
    /// Opens for writing (creating the directory and the database if
    /// needed), migrates, and marks runs whose process died (`kill -9`) as
    /// `incomplete`. Takes the write lock once, so a database that is
    /// read-only, full, locked or corrupt is refused here, before any
    /// workload runs, with what is wrong.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let err = open_err(path);
        let exists = check_kind(path).map_err(err)?;
        let dir = dir_of(path);
        std::fs::create_dir_all(&dir)
            .map_err(|e| err(format!("cannot create {}: {e}", dir.display())))?;
        if !exists {
            create_new(path).map_err(err)?;
            // Whoever created it, it must be a regular file now.
            check_kind(path).map_err(err)?;
        }
        let deadline = Instant::now() + BUSY_WAIT;
        let sql = |e: rusqlite::Error| err(describe(path, &e));
        let conn = open_rw(path).map_err(sql)?;
        conn.busy_timeout(BUSY_WAIT).map_err(sql)?;
        let version = pragma(&conn, deadline, "PRAGMA user_version").map_err(sql)?;
        check_version(path, version)?;
        // SQLite falls back to reading when it cannot write the file.
        if conn.is_readonly(rusqlite::MAIN_DB).unwrap_or(false) {
            return Err(err(fs_problem(path).unwrap_or_else(|| {
                "is read-only: no permission to write it".into()
            })));
        }
        quick_check(&conn, path, deadline).map_err(err)?;
        // New databases are created in WAL mode; one made some other way
        // (an empty file, a filesystem without hard links) switches here.
        let mode: String = pragma(&conn, deadline, "PRAGMA journal_mode").map_err(sql)?;
        if !mode.eq_ignore_ascii_case("wal") {
            pragma::<String>(&conn, deadline, "PRAGMA journal_mode=WAL").map_err(sql)?;
        }
        conn.execute_batch("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;")
            .map_err(sql)?;
        let mut store = Store {
            conn,
            path: path.to_path_buf(),
            read_only: false,
        };
        retry_busy(deadline, || store.migrate()).map_err(sql)?;
        Ok(store)
    }

    /// Opens for reading only: never creates, migrates or modifies the
    /// file, so results on a read-only or full filesystem can still be
    /// listed, shown, exported, reported and compared.
    pub fn open_read_only(path: &Path) -> Result<Store, StoreError> {
        let err = open_err(path);
        if !check_kind(path).map_err(err)? {
            return Err(StoreError::Missing(path.to_path_buf()));
        }
        let deadline = Instant::now() + BUSY_WAIT;
        let sql = |e: rusqlite::Error| err(describe(path, &e));
        let open = |immutable: bool| -> rusqlite::Result<(Connection, i64)> {
            let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
                | OpenFlags::SQLITE_OPEN_URI
                | OpenFlags::SQLITE_OPEN_NO_MUTEX;
            let conn = if immutable {
                Connection::open_with_flags(format!("{}?immutable=1", uri_path(path)), flags)?
            } else {
                Connection::open_with_flags(path, flags - OpenFlags::SQLITE_OPEN_URI)?
            };
            conn.busy_timeout(BUSY_WAIT)?;
            let v = pragma(&conn, deadline, "PRAGMA user_version")?;
            Ok((conn, v))
        };
        let mut wal = path.as_os_str().to_owned();
        wal.push("-wal");
        let (conn, version) = match open(false) {
            Ok(x) => x,
            // A WAL database needs its shared-memory file, which cannot be
            // created on a read-only or full filesystem; with no WAL
            // content outstanding the file alone is the whole database.
            Err(e)
                if !busy(&e)
                    && std::fs::metadata(&wal).map_or(true, |m| m.len() == 0)
                    && matches!(
                        e.sqlite_error_code(),
                        Some(
                            ErrorCode::CannotOpen
                                | ErrorCode::ReadOnly
                                | ErrorCode::SystemIoFailure
                                | ErrorCode::DiskFull
                        )
                    ) =>
            {
                open(true).map_err(|_| sql(e))?
            }
            Err(e) => return Err(sql(e)),
        };
        check_version(path, version)?;
        if version < SCHEMA_VERSION {
            // Never set up by iotoll: nothing stored in it yet.
            return Err(StoreError::Missing(path.to_path_buf()));
        }
        quick_check(&conn, path, deadline).map_err(err)?;
        Ok(Store {
            conn,
            path: path.to_path_buf(),
            read_only: true,
        })
    }

    /// Before a workload runs: the database takes a write and there is room
    /// for a result.
    pub fn check_ready(&self) -> Result<(), StoreError> {
        let err = open_err(&self.path);
        if self.read_only {
            return Err(err("is opened read-only".into()));
        }
        let dir = dir_of(&self.path);
        if let Some(free) = free_bytes(&dir).filter(|f| *f < MIN_FREE_BYTES) {
            return Err(err(format!(
                "cannot take a result: the filesystem holding {} is full ({} KiB free)",
                dir.display(),
                free / 1024
            )));
        }
        let deadline = Instant::now() + BUSY_WAIT;
        retry_busy(deadline, || {
            self.conn.execute_batch("BEGIN IMMEDIATE; ROLLBACK;")
        })
        .map_err(|e| err(describe(&self.path, &e)))?;
        reserve_rescue_room(&self.path);
        Ok(())
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Brings the schema up to date and marks runs whose process died as
    /// `incomplete`, in one immediate (write-locked) transaction that
    /// re-reads the version, so processes opening a new database at the
    /// same moment migrate it once.
    fn migrate(&mut self) -> rusqlite::Result<()> {
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let v: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        for step in v.max(0)..SCHEMA_VERSION {
            tx.execute_batch(MIGRATIONS[step as usize])?;
            tx.pragma_update(None, "user_version", step + 1)?;
        }
        Self::mark_incomplete(&tx)?;
        tx.commit()
    }

    /// Runs left `running` by a process that no longer exists.
    fn mark_incomplete(conn: &Connection) -> rusqlite::Result<()> {
        let mut st = conn.prepare("SELECT id, pid FROM runs WHERE status = 'running'")?;
        let dead: Vec<i64> = st
            .query_map([], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, Option<i64>>(1)?))
            })?
            .filter_map(|r| r.ok())
            .filter(|(_, pid)| !pid.is_some_and(pid_alive))
            .map(|(id, _)| id)
            .collect();
        for id in dead {
            conn.execute("UPDATE runs SET status = 'incomplete' WHERE id = ?1", [id])?;
        }
        Ok(())
    }

    pub fn begin_run(
        &self,
        suite: &str,
        config: Option<&str>,
        suite_text: &str,
        disclosure: &serde_json::Value,
        notes: &[String],
    ) -> Result<RunId, StoreError> {
        self.conn.execute(
            "INSERT INTO runs (suite, config, notes, started_at, status, pid, disclosure, suite_text)
             VALUES (?1, ?2, ?3, ?4, 'running', ?5, ?6, ?7)",
            params![
                suite,
                config,
                serde_json::to_string(notes)?,
                now(),
                std::process::id() as i64,
                disclosure.to_string(),
                suite_text
            ],
        )?;
        Ok(self.conn.last_insert_rowid())
    }

    #[allow(clippy::too_many_arguments)]
    pub fn add_test(
        &self,
        run: RunId,
        seq: i64,
        name: &str,
        kind: Kind,
        group: Option<&str>,
        params: &serde_json::Value,
        select: &str,
    ) -> Result<TestId, StoreError> {
        self.conn.prepare_cached(
            "INSERT INTO tests (run_id, seq, name, kind, grp, params, select_rule) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )?
        .execute(params![run, seq, name, kind.as_str(), group, params.to_string(), select])?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Stores one repetition and its metrics in one transaction (or as
    /// part of the one [`Store::atomically`] holds).
    pub fn add_rep(&mut self, test: TestId, rep: i64, doc: &ResultDoc) -> Result<(), StoreError> {
        if !self.conn.is_autocommit() {
            return Self::insert_rep(&self.conn, test, rep, doc);
        }
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        Self::insert_rep(&tx, test, rep, doc)?;
        tx.commit()?;
        Ok(())
    }

    /// Runs `f` in one write transaction: everything it stores, or nothing.
    /// Waits for another process's lock up to [`BUSY_WAIT`]; a lock held
    /// longer is an error saying the database is locked.
    pub fn atomically<T>(
        &mut self,
        f: impl FnOnce(&mut Store) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let deadline = Instant::now() + BUSY_WAIT;
        let path = self.path.clone();
        let err = |e: rusqlite::Error| match e.sqlite_error_code() {
            // What is wrong with the database, not with what was stored.
            Some(
                ErrorCode::DatabaseBusy
                | ErrorCode::DatabaseLocked
                | ErrorCode::DatabaseCorrupt
                | ErrorCode::NotADatabase
                | ErrorCode::DiskFull
                | ErrorCode::ReadOnly
                | ErrorCode::SystemIoFailure
                | ErrorCode::CannotOpen
                | ErrorCode::PermissionDenied,
            ) => open_err(&path)(describe(&path, &e)),
            _ => StoreError::Sql(e),
        };
        retry_busy(deadline, || self.conn.execute_batch("BEGIN IMMEDIATE")).map_err(err)?;
        match f(self) {
            Ok(v) => match self.conn.execute_batch("COMMIT") {
                Ok(()) => Ok(v),
                Err(e) => {
                    let _ = self.conn.execute_batch("ROLLBACK");
                    Err(err(e))
                }
            },
            Err(e) => {
                let _ = self.conn.execute_batch("ROLLBACK");
                Err(match e {
                    StoreError::Sql(e) => err(e),
                    e => e,
                })
            }
        }
    }

    fn insert_rep(
        conn: &Connection,
        test: TestId,
        rep: i64,
        doc: &ResultDoc,
    ) -> Result<(), StoreError> {
        // A non-finite figure would be stored as null and the document
        // could never be read back: every such figure is left out, in the
        // totals and everywhere else (CPU windows, hosts, pairs, skew).
        let mut clean = doc.clone();
        clean.drop_non_finite();
        let doc = &clean;
        conn.prepare_cached(
            "INSERT INTO reps (test_id, rep, status, doc) VALUES (?1, ?2, ?3, ?4)",
        )?
        .execute(params![
            test,
            rep,
            doc.status.as_str(),
            serde_json::to_string(doc)?
        ])?;
        let rep_id = conn.last_insert_rowid();
        let mut st =
            conn.prepare_cached("INSERT INTO metrics (rep_id, name, value) VALUES (?1, ?2, ?3)")?;
        for (k, v) in &doc.metrics {
            st.execute(params![rep_id, k, v])?;
        }
        Ok(())
    }

    pub fn finish_test(&self, test: TestId, sel: &Selection) -> Result<(), StoreError> {
        let summary = sel
            .summary
            .as_ref()
            .map(serde_json::to_string)
            .transpose()?;
        self.conn
            .prepare_cached(
                "UPDATE tests SET selected_rep = ?2, spread_pct = ?3, repeatable = ?4, summary = ?5 WHERE id = ?1",
            )?
            .execute(params![test, sel.selected_rep, sel.spread_pct, sel.repeatable, summary])?;
        Ok(())
    }

    pub fn finish_run(
        &self,
        run: RunId,
        status: RunStatus,
        notes: &[String],
    ) -> Result<(), StoreError> {
        self.conn.execute(
            "UPDATE runs SET status = ?2, finished_at = ?3, notes = ?4 WHERE id = ?1",
            params![run, status.as_str(), now(), serde_json::to_string(notes)?],
        )?;
        Ok(())
    }

    fn run_row(r: &rusqlite::Row) -> rusqlite::Result<RunRow> {
        let notes: String = r.get(6)?;
        let mut status = word(r, 5)?;
        // Read-only views do not mark dead runs; they show them as such.
        if status == RunStatus::Running && !r.get::<_, Option<i64>>(8)?.is_some_and(pid_alive) {
            status = RunStatus::Incomplete;
        }
        Ok(RunRow {
            id: r.get(0)?,
            suite: r.get(1)?,
            config: r.get(2)?,
            started_at: r.get(3)?,
            finished_at: r.get(4)?,
            status,
            notes: serde_json::from_str(&notes).unwrap_or_default(),
            tests: r.get(7)?,
        })
    }

    const RUN_COLS: &'static str = "r.id, r.suite, r.config, r.started_at, r.finished_at, r.status, r.notes, (SELECT COUNT(*) FROM tests t WHERE t.run_id = r.id), r.pid";

    pub fn list_runs(&self) -> Result<Vec<RunRow>, StoreError> {
        let mut st = self.conn.prepare(&format!(
            "SELECT {} FROM runs r ORDER BY r.id",
            Self::RUN_COLS
        ))?;
        let rows = st
            .query_map([], Self::run_row)?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }

    /// A run id, or a configuration label: its latest complete run. A
    /// label whose runs all failed, were aborted or are unfinished is an
    /// error naming them, never one of them quietly (a report or a
    /// comparison of a failed run reads as a result).
    pub fn resolve(&self, what: &str) -> Result<RunId, StoreError> {
        if let Ok(id) = what.parse::<i64>() {
            let found: Option<i64> = self
                .conn
                .query_row("SELECT id FROM runs WHERE id = ?1", [id], |r| r.get(0))
                .optional()?;
            if let Some(id) = found {
                return Ok(id);
            }
        }
        let complete: Option<RunId> = self
            .conn
            .query_row(
                "SELECT id FROM runs WHERE config = ?1 AND status = 'complete' ORDER BY id DESC LIMIT 1",
                [what],
                |r| r.get(0),
            )
            .optional()?;
        if let Some(id) = complete {
            return Ok(id);
        }
        let mut st = self.conn.prepare(&format!(
            "SELECT {} FROM runs r WHERE r.config = ?1 ORDER BY r.id DESC LIMIT 3",
            Self::RUN_COLS
        ))?;
        let others = st
            .query_map([what], Self::run_row)?
            .collect::<Result<Vec<_>, _>>()?;
        let Some(id) = others.first().map(|r| r.id) else {
            return Err(StoreError::NoRun(what.to_string()));
        };
        let latest: Vec<String> = others
            .iter()
            .map(|r| format!("run {} ({})", r.id, r.status))
            .collect();
        Err(StoreError::NoCompleteRun {
            label: what.to_string(),
            latest: latest.join(", "),
            id,
        })
    }

    pub fn run_detail(&self, id: RunId) -> Result<RunDetail, StoreError> {
        let (run, disclosure, suite_text) = self
            .conn
            .query_row(
                &format!(
                    "SELECT {}, r.disclosure, r.suite_text FROM runs r WHERE r.id = ?1",
                    Self::RUN_COLS
                ),
                [id],
                |r| {
                    Ok((
                        Self::run_row(r)?,
                        r.get::<_, Option<String>>(9)?,
                        r.get::<_, Option<String>>(10)?,
                    ))
                },
            )
            .optional()?
            .ok_or_else(|| StoreError::NoRun(id.to_string()))?;
        let mut st = self.conn.prepare(
            "SELECT id, seq, name, kind, grp, params, select_rule, selected_rep, spread_pct, repeatable, summary
             FROM tests WHERE run_id = ?1 ORDER BY seq",
        )?;
        // The JSON columns are parsed below: a damaged one is a
        // `StoreError::Json`, not an SQL error.
        let mut tests = st
            .query_map([id], |r| {
                let json: (String, Option<String>) = (r.get(5)?, r.get(10)?);
                let t = TestRow {
                    seq: r.get(1)?,
                    name: r.get(2)?,
                    kind: word(r, 3)?,
                    group: r.get(4)?,
                    params: serde_json::Value::Null,
                    select: r.get(6)?,
                    selected_rep: r.get(7)?,
                    spread_pct: r.get(8)?,
                    repeatable: r.get(9)?,
                    summary: None,
                    ci95: None,
                    reps: Vec::new(),
                };
                Ok((r.get::<_, i64>(0)?, json, t))
            })?
            .collect::<Result<Vec<_>, _>>()?;
        let mut rq = self
            .conn
            .prepare("SELECT rep, status, doc FROM reps WHERE test_id = ?1 ORDER BY rep")?;
        for (tid, (params, summary), t) in &mut tests {
            let reps = rq
                .query_map([*tid], |r| {
                    Ok((r.get(0)?, word(r, 1)?, r.get::<_, String>(2)?))
                })?
                .collect::<Result<Vec<_>, _>>()?;
            for (rep, status, doc) in reps {
                let doc = serde_json::from_str(&doc)?;
                t.reps.push(RepRow { rep, status, doc });
            }
            t.params = serde_json::from_str(params)?;
            t.summary = summary.as_deref().map(serde_json::from_str).transpose()?;
            t.ci95 = t.compute_ci95();
        }
        Ok(RunDetail {
            run,
            disclosure: disclosure.and_then(|d| serde_json::from_str(&d).ok()),
            suite_text,
            tests: tests.into_iter().map(|(_, _, t)| t).collect(),
        })
    }

    /// Stores imported results as one complete run labelled `config`, in
    /// one transaction: all of it or nothing.
    pub fn import(
        &mut self,
        format: &str,
        source: &str,
        config: &str,
        tests: &[import::Imported],
    ) -> Result<RunId, StoreError> {
        self.import_stream(format, source, config, tests.iter().cloned().map(Ok))
            .map(|(run, _)| run)
    }

    /// [`Store::import`] from tests as they are read: memory stays that of
    /// one test whatever the size of the input. An input error (`Err` from
    /// `tests`) is [`StoreError::Input`]; either way nothing is stored.
    /// Returns the run and the number of tests.
    pub fn import_stream(
        &mut self,
        format: &str,
        source: &str,
        config: &str,
        tests: impl Iterator<Item = Result<import::Imported, String>>,
    ) -> Result<(RunId, usize), StoreError> {
        self.atomically(|s| {
            let run = s.begin_run(
                &format!("import {format}"),
                Some(config),
                "",
                &serde_json::json!({ "imported_from": source }),
                &[],
            )?;
            let mut first: Option<String> = None;
            let mut n = 0;
            for t in tests {
                let t = t.map_err(StoreError::Input)?;
                n += 1;
                let id = s.add_test(
                    run,
                    n as i64,
                    &t.name,
                    t.doc.kind,
                    t.group.as_deref(),
                    &t.doc.spec,
                    "all",
                )?;
                let mut doc = t.doc;
                doc.config = Some(config.to_string());
                // Inside the import's transaction already.
                Self::insert_rep(&s.conn, id, 1, &doc)?;
                s.finish_test(
                    id,
                    &Selection {
                        rule: "all".into(),
                        selected_rep: Some(1),
                        summary: Some(doc.metrics),
                        ..Default::default()
                    },
                )?;
                // RFC 3339 UTC strings sort by time.
                if first.as_ref().is_none_or(|f| doc.started_at < *f) {
                    first = Some(doc.started_at);
                }
            }
            if n == 0 {
                // Only a table can get here empty: fio's and iperf3's parsers
                // refuse documents without results.
                return Err(StoreError::Input(import::NO_ROWS.into()));
            }
            s.finish_run(
                run,
                RunStatus::Complete,
                &[format!("imported from {source} ({format})")],
            )?;
            // The run is dated by the tool that measured it, not by the import.
            if let Some(first) = first {
                s.conn.execute(
                    "UPDATE runs SET started_at = ?1 WHERE id = ?2",
                    params![first, run],
                )?;
            }
            Ok((run, n))
        })
    }

    pub fn delete_run(&self, id: RunId) -> Result<(), StoreError> {
        let n = self.conn.execute("DELETE FROM runs WHERE id = ?1", [id])?;
        if n == 0 {
            return Err(StoreError::NoRun(id.to_string()));
        }
        Ok(())
    }

    pub fn integrity_ok(&self) -> Result<bool, StoreError> {
        let s: String = self
            .conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
        Ok(s == "ok")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(iops: f64) -> ResultDoc {
        serde_json::from_value(serde_json::json!({
            "iotoll_version": "0.1.0", "kind": "disk", "status": "complete",
            "started_at": "2026-11-22T00:00:00Z", "config": null, "spec": {},
            "metrics": {"iops": iops, "cpu_pct": 10.0},
            "cpu": {"local": null, "remote": null}, "latency": null, "series": [], "notes": [],
            "disclosure": null
        }))
        .unwrap()
    }

    /// A temporary directory and the path `r.db` in it.
    fn temp_db() -> (tempfile::TempDir, PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("r.db");
        (d, p)
    }

    /// The one number `sql` selects.
    fn number(s: &Store, sql: &str) -> i64 {
        s.conn.query_row(sql, [], |r| r.get(0)).unwrap()
    }

    fn running(s: &Store) -> RunId {
        s.begin_run("quick", None, "", &serde_json::Value::Null, &[])
            .unwrap()
    }

    #[test]
    fn migration_from_an_empty_database_and_round_trip() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("sub/dir/results.db");
        let mut s = Store::open(&p).unwrap();
        assert_eq!(number(&s, "PRAGMA user_version"), SCHEMA_VERSION);
        let run = s
            .begin_run(
                "quick",
                Some("base"),
                "name = 'quick'",
                &serde_json::json!({"host": "x"}),
                &[],
            )
            .unwrap();
        let t = s
            .add_test(
                run,
                1,
                "rr4k/qd=8",
                Kind::Disk,
                Some("read"),
                &serde_json::json!({"qd": 8}),
                "median:iops",
            )
            .unwrap();
        s.add_rep(t, 1, &doc(100.0)).unwrap();
        s.add_rep(t, 2, &doc(120.0)).unwrap();
        s.finish_test(
            t,
            &Selection {
                rule: "median:iops".into(),
                selected_rep: Some(2),
                spread_pct: Some(18.2),
                repeatable: Some(false),
                summary: Some(doc(120.0).metrics),
            },
        )
        .unwrap();
        s.finish_run(run, RunStatus::Complete, &["n".into()])
            .unwrap();
        let runs = s.list_runs().unwrap();
        assert_eq!(runs.len(), 1);
        assert_eq!((runs[0].status, runs[0].tests), (RunStatus::Complete, 1));
        let det = s.run_detail(run).unwrap();
        assert_eq!(det.tests[0].reps.len(), 2);
        assert_eq!(det.tests[0].repeatable, Some(false));
        assert_eq!(det.tests[0].reps[1].doc.metrics["iops"], 120.0);
        assert_eq!(s.resolve("base").unwrap(), run);
        assert_eq!(s.resolve(&run.to_string()).unwrap(), run);
        assert!(matches!(s.resolve("nope"), Err(StoreError::NoRun(_))));
        // A later failed run of the label is passed over; a label with
        // no complete run is refused, naming its runs (it resolved to
        // the failed one).
        let failed = s
            .begin_run("x", Some("base"), "", &serde_json::json!({}), &[])
            .unwrap();
        s.finish_run(failed, RunStatus::Failed, &[]).unwrap();
        assert_eq!(s.resolve("base").unwrap(), run);
        let mut unfinished = vec![failed];
        for status in [RunStatus::Failed, RunStatus::Aborted] {
            let id = s
                .begin_run("x", Some("f"), "", &serde_json::json!({}), &[])
                .unwrap();
            s.finish_run(id, status, &[]).unwrap();
            unfinished.push(id);
        }
        let e = s.resolve("f").unwrap_err();
        assert!(matches!(e, StoreError::NoCompleteRun { .. }), "{e}");
        let msg = e.to_string();
        assert!(
            msg.contains("no complete run") && msg.contains("(aborted), run"),
            "{msg}"
        );
        assert!(msg.contains("(failed)"), "{msg}");
        for id in unfinished {
            s.delete_run(id).unwrap();
        }
        assert!(s.integrity_ok().unwrap());
        s.delete_run(run).unwrap();
        assert!(s.list_runs().unwrap().is_empty());
        assert_eq!(number(&s, "SELECT COUNT(*) FROM metrics"), 0, "cascade");
    }

    #[test]
    fn a_newer_schema_is_refused_and_left_alone() {
        let (_d, p) = temp_db();
        {
            let c = Connection::open(&p).unwrap();
            c.pragma_update(None, "user_version", 99).unwrap();
        }
        let before = std::fs::read(&p).unwrap();
        assert!(matches!(
            Store::open(&p),
            Err(StoreError::TooNew { found: 99, .. })
        ));
        assert_eq!(std::fs::read(&p).unwrap(), before);
    }

    #[test]
    fn a_dead_process_leaves_an_incomplete_run() {
        let (_d, p) = temp_db();
        let s = Store::open(&p).unwrap();
        let run = running(&s);
        // A pid that cannot exist.
        s.conn
            .execute("UPDATE runs SET pid = 2147483000 WHERE id = ?1", [run])
            .unwrap();
        drop(s);
        let s = Store::open(&p).unwrap();
        assert_eq!(s.list_runs().unwrap()[0].status, RunStatus::Incomplete);
    }

    #[test]
    fn concurrent_first_opens_migrate_once() {
        let (_d, p) = temp_db();
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let p = p.clone();
                std::thread::spawn(move || Store::open(&p).map(|_| ()))
            })
            .collect();
        for h in handles {
            h.join().unwrap().unwrap();
        }
        assert!(Store::open(&p).unwrap().integrity_ok().unwrap());
    }

    fn imported(name: &str, iops: f64) -> import::Imported {
        import::Imported {
            name: name.into(),
            group: None,
            doc: doc(iops),
        }
    }

    #[test]
    fn an_import_is_all_or_nothing() {
        let (_d, p) = temp_db();
        let mut s = Store::open(&p).unwrap();
        // The third test fails to store: nothing of the import stays.
        let bad = [imported("a", 1.0), imported("b", 2.0), imported("a", 3.0)];
        assert!(s.import("table", "t.csv", "imp", &bad).is_err());
        assert!(s.list_runs().unwrap().is_empty());
        assert_eq!(number(&s, "SELECT COUNT(*) FROM tests"), 0);
        // And the connection is usable afterwards.
        let good = [imported("a", 1.0), imported("b", 2.0)];
        let run = s.import("table", "t.csv", "imp", &good).unwrap();
        assert_eq!(s.run_detail(run).unwrap().tests.len(), 2);
    }

    #[test]
    fn non_finite_figures_never_damage_a_stored_document() {
        let (_d, p) = temp_db();
        let mut s = Store::open(&p).unwrap();
        let run = running(&s);
        let t = s
            .add_test(run, 1, "t", Kind::Disk, None, &serde_json::json!({}), "all")
            .unwrap();
        let mut bad = doc(1.0);
        bad.metrics.insert("iops".into(), f64::INFINITY);
        bad.metrics.insert("mb_s".into(), f64::NAN);
        s.add_rep(t, 1, &bad).unwrap();
        let det = s.run_detail(run).expect("readable");
        let m = &det.tests[0].reps[0].doc.metrics;
        assert!(!m.contains_key("iops") && !m.contains_key("mb_s"));
        assert_eq!(m["cpu_pct"], 10.0);
    }

    /// A multi-host document: 1 server and 2 clients, 2 pairs, the skew.
    fn multi_host_doc() -> ResultDoc {
        let host = |name: &str, role: &str, mbit: f64, cpu: f64| iotoll_model::HostFigures {
            name: name.into(),
            address: format!("{name}.lab:7576"),
            role: role.into(),
            cpus: 4,
            boot_id: Some(format!("boot-{name}")),
            metrics: [
                ("mbit_s", mbit),
                ("cpu_pct", cpu),
                ("mbit_s_per_cpu_pct", mbit / cpu),
            ]
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect(),
            cpu: Some(iotoll_model::CpuReport {
                cpus: 4,
                window_s: 10.0,
                busy_pct: cpu,
                ..Default::default()
            }),
            on_us: -12.5,
            off_us: 30.25,
            disclosure: Some(serde_json::json!({"system": {"kernel": "6.1"}})),
            notes: vec![format!("{name}: a note")],
            ifaces: Vec::new(),
        };
        let pair = |client: &str, mbit: f64| iotoll_model::PairFigures {
            client: client.into(),
            server: "s1".into(),
            conns: 2,
            client_to_server_bytes: (mbit * 1e6 / 8.0 * 10.0) as u64,
            server_to_client_bytes: 0,
            mbit_s: mbit,
        };
        let mut d = doc(1.0);
        d.kind = Kind::NetStream;
        d.metrics = [
            ("mbit_s", 1900.0),
            ("cpu_pct", 21.0),
            ("pair_fairness", 0.9986),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), *v))
        .collect();
        d.hosts = vec![
            host("s1", "server", 1900.0, 30.0),
            host("c1", "client", 1000.0, 20.0),
            host("c2", "client", 900.0, 22.0),
        ];
        d.pairs = vec![pair("c1", 1000.0), pair("c2", 900.0)];
        d.skew_us = Some(iotoll_model::Skew {
            start: 48.5,
            stop: 96.0,
            clock: 20.0,
        });
        d
    }

    /// A running run with one network test, "mesh".
    fn mesh_test(s: &mut Store) -> (RunId, TestId) {
        let run = running(s);
        let t = s
            .add_test(
                run,
                1,
                "mesh",
                Kind::NetStream,
                None,
                &serde_json::json!({}),
                "all",
            )
            .unwrap();
        (run, t)
    }

    /// The stored document, its JSON export and that export read back are
    /// the document: hosts, pairs and skew included.
    #[test]
    fn a_multi_host_document_round_trips_through_store_and_export() {
        let (_d, p) = temp_db();
        let mut s = Store::open(&p).unwrap();
        let (run, t) = mesh_test(&mut s);
        let original = multi_host_doc();
        s.add_rep(t, 1, &original).unwrap();
        let det = s.run_detail(run).unwrap();
        let stored = &det.tests[0].reps[0].doc;
        let json = |d: &ResultDoc| serde_json::to_value(d).unwrap();
        assert_eq!(json(stored), json(&original));
        assert_eq!(stored.hosts, original.hosts);
        assert_eq!(stored.pairs, original.pairs);
        assert_eq!(stored.skew_us, original.skew_us);
        // `results export --format json`, read back.
        let exported: serde_json::Value =
            serde_json::from_str(&export::json(&det).unwrap()).unwrap();
        let doc = &exported["tests"][0]["reps"][0]["doc"];
        assert_eq!(doc, &json(&original));
        let back: ResultDoc = serde_json::from_value(doc.clone()).unwrap();
        assert_eq!(
            (back.hosts, back.pairs, back.skew_us),
            (original.hosts, original.pairs, original.skew_us)
        );
    }

    #[test]
    fn a_hosts_non_finite_figure_never_damages_a_stored_document() {
        let (_d, p) = temp_db();
        let mut s = Store::open(&p).unwrap();
        let (run, t) = mesh_test(&mut s);
        let mut bad = multi_host_doc();
        bad.hosts[1]
            .metrics
            .insert("mbit_s_per_cpu_pct".into(), f64::INFINITY);
        s.add_rep(t, 1, &bad).unwrap();
        let det = s.run_detail(run).expect("readable");
        let hosts = &det.tests[0].reps[0].doc.hosts;
        assert!(!hosts[1].metrics.contains_key("mbit_s_per_cpu_pct"));
        assert_eq!(hosts[1].metrics["mbit_s"], 1000.0);
        assert_eq!(hosts[0], multi_host_doc().hosts[0]);
    }

    /// issue 24: a host's CPU window of 1e308 % on 4 CPUs made the
    /// weighted CPU infinite, outside any `metrics`: the document was
    /// stored with `null` and every read of the run failed "damaged".
    #[test]
    fn a_non_finite_cpu_window_never_damages_a_stored_document() {
        let (_d, p) = temp_db();
        let mut s = Store::open(&p).unwrap();
        let (run, t) = mesh_test(&mut s);
        let mut bad = multi_host_doc();
        if let Some(c) = bad.hosts[1].cpu.as_mut() {
            c.busy_pct = 1e308 * 4.0;
        }
        bad.cpu.local = bad.hosts[1].cpu.clone();
        bad.skew_us = Some(iotoll_model::Skew {
            start: f64::NAN,
            stop: 0.0,
            clock: 0.0,
        });
        s.add_rep(t, 1, &bad).unwrap();
        let det = s.run_detail(run).expect("readable");
        let doc = &det.tests[0].reps[0].doc;
        assert!(doc.hosts[1].cpu.is_none() && doc.cpu.local.is_none());
        assert!(doc.skew_us.is_none());
        assert_eq!(doc.hosts[0], multi_host_doc().hosts[0]);
        assert!(doc.notes.iter().any(|n| n.contains("hosts[1].cpu")));
    }

    #[test]
    fn garbage_is_not_a_database() {
        let (_d, p) = temp_db();
        std::fs::write(&p, b"this is not sqlite at all, just text padding it out").unwrap();
        assert!(matches!(Store::open(&p), Err(StoreError::Open { .. })));
    }
}
