//! Reading: the list of runs, a label or id resolved, a run in full.

use crate::*;

impl Store {
    pub(crate) fn run_row(r: &rusqlite::Row) -> rusqlite::Result<RunRow> {
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

    pub(crate) const RUN_COLS: &'static str = "r.id, r.suite, r.config, r.started_at, r.finished_at, r.status, r.notes, (SELECT COUNT(*) FROM tests t WHERE t.run_id = r.id), r.pid";

    /// The runs `tail` (`WHERE ...`, `ORDER BY ...`) selects.
    fn runs(&self, tail: &str, p: impl rusqlite::Params) -> Result<Vec<RunRow>, StoreError> {
        let sql = format!("SELECT {} FROM runs r {tail}", Self::RUN_COLS);
        let mut st = self.conn.prepare(&sql)?;
        let rows = st.query_map(p, Self::run_row)?;
        Ok(rows.collect::<Result<Vec<_>, _>>()?)
    }

    pub fn list_runs(&self) -> Result<Vec<RunRow>, StoreError> {
        self.runs("ORDER BY r.id", [])
    }

    /// The runs stored at `path` (`results list`). None there yet: the
    /// database is set up (as a measuring command would), so the path is
    /// known to be usable; where that fails there is still nothing stored
    /// to list.
    pub fn list_runs_at(path: &Path) -> Result<Vec<RunRow>, StoreError> {
        let s = match Store::open_read_only(path) {
            Err(StoreError::Missing(_)) => Store::open(path).ok(),
            r => Some(r?),
        };
        Ok(s.map(|s| s.list_runs()).transpose()?.unwrap_or_default())
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
        let others = self.runs("WHERE r.config = ?1 ORDER BY r.id DESC LIMIT 3", [what])?;
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
                    confidence: None,
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
            t.confidence = t.compute_confidence();
        }
        Ok(RunDetail {
            run,
            disclosure: disclosure.and_then(|d| serde_json::from_str(&d).ok()),
            suite_text,
            tests: tests.into_iter().map(|(_, _, t)| t).collect(),
        })
    }
}
