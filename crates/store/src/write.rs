//! Writing: runs, tests and repetitions, each committed as it finishes;
//! imports; deletion.

use crate::*;

impl Store {
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
        let done = f(self).and_then(|v| Ok(self.conn.execute_batch("COMMIT").map(|()| v)?));
        if done.is_err() {
            let _ = self.conn.execute_batch("ROLLBACK");
        }
        done.map_err(|e| match e {
            StoreError::Sql(e) => err(e),
            e => e,
        })
    }

    pub(crate) fn insert_rep(
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

    /// Stores imported results as one complete run labelled `config`, in
    /// one transaction: all of it or nothing. The tests are stored as they
    /// are read: memory stays that of one test whatever the size of the
    /// input. An input error (`Err` from `tests`) is [`StoreError::Input`];
    /// either way nothing is stored. Returns the run and the number of tests.
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
                    &t.doc.spec.to_value(),
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
}
