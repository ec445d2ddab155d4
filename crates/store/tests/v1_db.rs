//! Results stored by earlier versions still load (issue 10): a database
//! written by the binary of commit a18823f, before `spec` and the
//! disclosure became types (tests/fixtures/v1/README.md says what it holds).

use iotoll_model::spec::Spec;
use iotoll_model::Kind;
use iotoll_store::Store;
use serde_json::Value;

/// A copy of the fixture: opening a database may write to it.
fn fixture() -> (tempfile::TempDir, std::path::PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("results.db");
    let src = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/v1/results.db");
    std::fs::copy(src, &db).unwrap();
    (d, db)
}

/// (run, test name, rep).
type Key = (i64, String, i64);
/// A repetition as stored: its key, document and rows of the metrics table.
type Stored = (Key, Value, Vec<(String, f64)>);

/// Every repetition as the old binary wrote it.
fn raw(db: &std::path::Path) -> Vec<Stored> {
    let c = rusqlite::Connection::open(db).unwrap();
    let mut st = c
        .prepare(
            "SELECT t.run_id, t.name, r.rep, r.doc, r.id FROM reps r JOIN tests t ON t.id = r.test_id
             ORDER BY t.run_id, t.seq, r.rep",
        )
        .unwrap();
    let rows: Vec<(i64, String, i64, String, i64)> = st
        .query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let mut mq = c
        .prepare("SELECT name, value FROM metrics WHERE rep_id = ?1 ORDER BY name")
        .unwrap();
    rows.into_iter()
        .map(|(run, name, rep, doc, id)| {
            let m = mq
                .query_map([id], |r| Ok((r.get(0)?, r.get(1)?)))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            ((run, name, rep), serde_json::from_str(&doc).unwrap(), m)
        })
        .collect()
}

#[test]
fn every_run_test_and_repetition_of_a_v1_database_loads_unchanged() {
    let (_d, db) = fixture();
    let want = raw(&db);
    let store = Store::open(&db).unwrap();
    let runs = store.list_runs().unwrap();
    assert_eq!(runs.len(), 10);
    let mut got = Vec::new();
    let mut kinds = Vec::new();
    for run in &runs {
        let detail = store.run_detail(run.id).unwrap();
        assert_eq!(detail.tests.len() as i64, run.tests, "run {}", run.id);
        assert!(detail.disclosure.is_some(), "run {}", run.id);
        for t in &detail.tests {
            assert!(!t.reps.is_empty(), "run {} {}", run.id, t.name);
            for r in &t.reps {
                got.push(((run.id, t.name.clone(), r.rep), r.doc.clone()));
                kinds.push(t.kind);
            }
            // The selection's figures are one repetition's, or their mean.
            let summary = t.summary.as_ref().expect("a summary");
            assert!(summary.contains_key(t.kind.headline()), "{}", t.name);
        }
    }
    assert_eq!(got.len(), want.len());
    for ((key, doc), (want_key, want_doc, metrics)) in got.iter().zip(&want) {
        assert_eq!(key, want_key);
        // Read with today's types and written back, the document is what
        // the old binary stored: every key, null and figure.
        assert_eq!(&serde_json::to_value(doc).unwrap(), want_doc, "{key:?}");
        // The metrics table holds the same figures (to the last bit or
        // two: serde_json's default float parsing is not exact).
        let names: Vec<&String> = doc.metrics.keys().collect();
        assert_eq!(names, metrics.iter().map(|m| &m.0).collect::<Vec<_>>());
        for (k, v) in metrics {
            let d = doc.metrics[k];
            assert!((d - v).abs() <= v.abs() * 1e-15, "{key:?} {k}: {d} vs {v}");
        }
    }
    // Native runs' specs and disclosures read as today's types, by their
    // kind; imports keep what their source stated, with where it came from.
    let mut native = 0;
    for (((run, name, _), doc), kind) in got.iter().zip(&kinds) {
        let typed = match (kind, &doc.spec) {
            (_, Spec::Import(i)) => {
                assert!(!i.format.is_empty(), "run {run} {name}");
                continue;
            }
            (Kind::Disk, Spec::Disk(s)) => s.as_written.is_none(),
            (Kind::NetStream, Spec::Stream(s)) => s.as_written.is_none(),
            (Kind::NetRr, Spec::Rr(s)) => s.as_written.is_none(),
            _ => false,
        };
        assert!(typed, "run {run} {name}: {:?}", doc.spec);
        native += 1;
        if *kind != Kind::Disk {
            let d = doc.net_disclosure().expect("a network disclosure");
            assert!(d.local.identity.is_some() && d.remote["identity"].is_object());
            assert!(d.local.interface.link.is_some());
        }
    }
    assert_eq!(native, 6 + 3 * 2, "single runs and the suite's repetitions");
}
