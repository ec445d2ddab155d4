//! The schema and its migrations.

use crate::*;

/// Migrations: entry i takes the schema from version i to i + 1.
pub(crate) const MIGRATIONS: &[&str] = &[r#"
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

/// A database written by a newer iotoll is refused.
pub(crate) fn check_version(path: &Path, found: i64) -> Result<(), StoreError> {
    if found > SCHEMA_VERSION {
        return Err(StoreError::TooNew {
            path: path.to_path_buf(),
            found,
            known: SCHEMA_VERSION,
        });
    }
    Ok(())
}

impl Store {
    /// Brings the schema up to date and marks runs whose process died as
    /// `incomplete`, in one immediate (write-locked) transaction that
    /// re-reads the version, so processes opening a new database at the
    /// same moment migrate it once.
    pub(crate) fn migrate(&mut self) -> rusqlite::Result<()> {
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
    pub(crate) fn mark_incomplete(conn: &Connection) -> rusqlite::Result<()> {
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
}
