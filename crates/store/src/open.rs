//! Opening: the locks and retries, checks of the file and the database,
//! creation, and why a database cannot be used.

use crate::*;

pub(crate) fn busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

/// Runs `f` again while SQLite answers "busy" without having waited (its
/// deadlock avoidance, WAL recovery, a journal-mode change racing another
/// process), until `deadline`.
pub(crate) fn retry_busy<T>(
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
pub(crate) fn pragma<T: rusqlite::types::FromSql>(
    conn: &Connection,
    deadline: Instant,
    sql: &str,
) -> rusqlite::Result<T> {
    retry_busy(deadline, || conn.query_row(sql, [], |r| r.get(0)))
}

/// An [`StoreError::Open`] of `path` saying `msg`.
pub(crate) fn open_err(path: &Path) -> impl Fn(String) -> StoreError + Copy + '_ {
    move |msg| StoreError::Open {
        path: path.to_path_buf(),
        msg,
    }
}

/// Says what is wrong, in the user's terms, for an SQLite error.
pub(crate) fn describe(path: &Path, e: &rusqlite::Error) -> String {
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
pub(crate) fn uri_path(p: &Path) -> String {
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
pub(crate) fn check_kind(path: &Path) -> Result<bool, String> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => Ok(true),
        Ok(m) if m.is_dir() => Err("is a directory".into()),
        Ok(_) => Err("is not a regular file (a device, pipe or socket); give a file path".into()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(format!("cannot be used: {e}")),
    }
}

pub(crate) fn open_rw(p: &Path) -> rusqlite::Result<Connection> {
    use OpenFlags as F;
    let flags = F::SQLITE_OPEN_READ_WRITE | F::SQLITE_OPEN_CREATE | F::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(p, flags)?;
    // A run writes a few rows, but the quick check at open reads every
    // page: SQLite's default 2 MiB page cache would keep that much of the
    // database in the process for the whole run (issue 27 §2).
    conn.execute_batch("PRAGMA cache_size = -256")?;
    Ok(conn)
}

pub(crate) fn remove_db_files(p: &Path) {
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
pub(crate) fn create_new(path: &Path) -> Result<bool, String> {
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
    // Not linked: another process created one first, or there are no hard
    // links here and the database is created in place.
    let out = build().map(|()| std::fs::hard_link(&tmp, path).is_ok());
    remove_db_files(&tmp);
    out
}

pub(crate) fn quick_check(conn: &Connection, path: &Path, deadline: Instant) -> Result<(), String> {
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

    pub fn integrity_ok(&self) -> Result<bool, StoreError> {
        let s: String = self
            .conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
        Ok(s == "ok")
    }
}
