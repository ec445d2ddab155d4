//! The results database: SQLite (bundled), versioned schema with
//! migrations, WAL, every repetition committed the moment it finishes.
//!
//! Runs hold tests; tests hold repetitions; each repetition keeps its whole
//! result document (spec, metrics, CPU detail, latency histogram, series)
//! and its metrics in a table of their own for querying.

#![forbid(unsafe_code)]

pub mod export;
pub mod import;
pub mod import_file;
mod open;
mod query;
mod schema;
mod space;
mod write;

use open::*;
use schema::*;
pub use space::keep_unstored;
use space::*;

use iotoll_model::{Kind, ResultDoc, ResultStatus, RunStatus};
use rusqlite::{params, Connection, ErrorCode, OpenFlags, OptionalExtension};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The schema this iotoll writes. A database with a higher version was
/// written by a newer iotoll and is refused, never modified.
pub const SCHEMA_VERSION: i64 = 1;

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
    /// A test repeated under `confidence` (its `params` say so): what its
    /// complete repetitions came to ([`TestRow::compute_confidence`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confidence: Option<iotoll_model::ci::Verdict>,
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

    /// Under the `confidence` of its parameters, whether the complete
    /// repetitions' [`TestRow::select_metric`] converged; None without
    /// one, or with fewer than 3 repetitions.
    pub fn compute_confidence(&self) -> Option<iotoll_model::ci::Verdict> {
        let c = self.params.get("confidence")?.as_str()?;
        let c = iotoll_model::ci::Confidence::parse(c).ok()?;
        let m = self.select_metric();
        let values = (self.reps.iter())
            .filter(|r| r.status == ResultStatus::Complete)
            .filter_map(|r| r.doc.metrics.get(m).copied());
        c.judge(values)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(iops: f64) -> ResultDoc {
        let metrics = serde_json::json!({"iops": iops, "cpu_pct": 10.0});
        iotoll_model::fixtures::doc("disk", serde_json::json!({}), metrics)
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

    /// A finished run labelled `label` with no tests.
    fn finished(s: &Store, label: &str, status: RunStatus) -> RunId {
        let id = (s.begin_run("x", Some(label), "", &serde_json::json!({}), &[])).unwrap();
        s.finish_run(id, status, &[]).unwrap();
        id
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
        let failed = finished(&s, "base", RunStatus::Failed);
        assert_eq!(s.resolve("base").unwrap(), run);
        let mut unfinished = vec![failed];
        for status in [RunStatus::Failed, RunStatus::Aborted] {
            unfinished.push(finished(&s, "f", status));
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
        let stored = s.import_stream("table", "t.csv", "imp", bad.into_iter().map(Ok));
        assert!(stored.is_err());
        assert!(s.list_runs().unwrap().is_empty());
        assert_eq!(number(&s, "SELECT COUNT(*) FROM tests"), 0);
        // And the connection is usable afterwards.
        let good = [imported("a", 1.0), imported("b", 2.0)];
        let stored = s.import_stream("table", "t.csv", "imp", good.into_iter().map(Ok));
        let (run, _) = stored.unwrap();
        assert_eq!(s.run_detail(run).unwrap().tests.len(), 2);
    }

    #[test]
    fn non_finite_figures_never_damage_a_stored_document() {
        let mut bad = doc(1.0);
        bad.metrics.insert("iops".into(), f64::INFINITY);
        bad.metrics.insert("mb_s".into(), f64::NAN);
        let m = &stored(&bad).metrics;
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
            metrics: iotoll_model::metrics::of(&[
                ("mbit_s", mbit),
                ("cpu_pct", cpu),
                ("mbit_s_per_cpu_pct", mbit / cpu),
            ]),
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
        let pair = |client, mbit| iotoll_model::fixtures::pair(client, "s1", mbit);
        let mut d = doc(1.0);
        d.kind = Kind::NetStream;
        d.metrics = iotoll_model::metrics::of(&[
            ("mbit_s", 1900.0),
            ("cpu_pct", 21.0),
            ("pair_fairness", 0.9986),
        ]);
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

    /// `doc` stored as a new database's one repetition, and read back.
    fn stored(doc: &ResultDoc) -> ResultDoc {
        let (_d, p) = temp_db();
        let mut s = Store::open(&p).unwrap();
        let (run, t) = mesh_test(&mut s);
        s.add_rep(t, 1, doc).unwrap();
        let mut det = s.run_detail(run).expect("readable");
        det.tests.remove(0).reps.remove(0).doc
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
        let mut bad = multi_host_doc();
        bad.hosts[1]
            .metrics
            .insert("mbit_s_per_cpu_pct".into(), f64::INFINITY);
        let hosts = &stored(&bad).hosts;
        assert!(!hosts[1].metrics.contains_key("mbit_s_per_cpu_pct"));
        assert_eq!(hosts[1].metrics["mbit_s"], 1000.0);
        assert_eq!(hosts[0], multi_host_doc().hosts[0]);
    }

    /// issue 24: a host's CPU window of 1e308 % on 4 CPUs made the
    /// weighted CPU infinite, outside any `metrics`: the document was
    /// stored with `null` and every read of the run failed "damaged".
    #[test]
    fn a_non_finite_cpu_window_never_damages_a_stored_document() {
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
        let doc = &stored(&bad);
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
