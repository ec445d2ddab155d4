//! Results stored by an earlier version (the database of
//! crates/store/tests/fixtures/v1, written at commit a18823f) still show,
//! export, report and compare, with the figures that version stored.

mod common;
use common::*;
use iotoll_model::units::format_number;
use serde_json::Value;

fn fixture() -> (tempfile::TempDir, String) {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("results.db");
    let src = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../store/tests/fixtures/v1/results.db"
    );
    std::fs::copy(src, &db).unwrap();
    let db = db.to_str().unwrap().to_string();
    (d, db)
}

fn run(args: &[&str], db: &str) -> String {
    let out = iotoll().args(args).args(["--db", db]).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Per run: each test's headline figure, and every repetition's document,
/// as the old version stored them.
type Stored = (i64, Vec<(String, f64)>, Vec<Value>);

fn stored(db: &str) -> Vec<Stored> {
    let s = iotoll_store::Store::open_read_only(std::path::Path::new(db)).unwrap();
    let runs = s.list_runs().unwrap();
    runs.iter()
        .map(|r| {
            let tests = s.run_detail(r.id).unwrap().tests;
            let heads = tests.iter().map(|t| {
                let m = t.summary.as_ref().unwrap();
                (t.name.clone(), m[t.kind.headline()])
            });
            let docs = tests.iter().flat_map(|t| &t.reps);
            let docs = docs.map(|r| serde_json::to_value(&r.doc).unwrap());
            (r.id, heads.collect(), docs.collect())
        })
        .collect()
}

#[test]
fn a_v1_database_shows_exports_and_reports_what_it_stored() {
    let (d, db) = fixture();
    let runs = stored(&db);
    assert_eq!(runs.len(), 10);
    assert_eq!(run(&["results", "list"], &db).lines().count(), 11);
    for (id, tests, want) in &runs {
        let id = id.to_string();
        let shown = run(&["results", "show", &id], &db);
        let exported: Value =
            serde_json::from_str(&run(&["results", "export", &id, "--format", "json"], &db))
                .unwrap();
        let docs: Vec<&Value> = exported["tests"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|t| t["reps"].as_array().unwrap().iter().map(|r| &r["doc"]))
            .collect();
        assert_eq!(docs, want.iter().collect::<Vec<_>>(), "run {id}: as stored");
        // What the old version printed or imported then, today's schema
        // still accepts.
        for doc in &docs {
            validate(doc);
        }
        run(&["results", "export", &id, "--format", "csv"], &db);
        let md = d.path().join(format!("report{id}.md"));
        run(&["report", &id, "--md", md.to_str().unwrap()], &db);
        let md = std::fs::read_to_string(md).unwrap();
        for (name, v) in tests {
            assert!(shown.contains(name.as_str()), "run {id}: {name}");
            let fig = format_number(*v);
            assert!(md.contains(&fig), "run {id} {name}: {fig} in the report");
        }
    }
}

#[test]
fn a_v1_database_compares_native_runs_and_imports() {
    let (d, db) = fixture();
    let runs = stored(&db);
    let fig = |run: i64| runs.iter().find(|r| r.0 == run).unwrap().1[0].1;
    // Disk runs against each other and an fio import of the same workload;
    // streams against an iperf3 import.
    let md = d.path().join("c.md");
    for (runs, want) in [(["1", "2", "9"], [1, 2, 9]), (["3", "5", "10"], [3, 5, 10])] {
        let mut args = vec!["compare"];
        args.extend(runs);
        args.extend(["--md", md.to_str().unwrap()]);
        run(&args, &db);
        let text = std::fs::read_to_string(&md).unwrap();
        for r in want {
            assert!(text.contains(&format_number(fig(r))), "run {r} in {runs:?}");
        }
        assert!(text.contains("System differences"));
    }
    let c: Value = serde_json::from_str(&run(&["compare", "4", "6", "--json"], &db)).unwrap();
    let row = &c["rows"][0];
    assert_eq!(row["metric"], "trans_s");
    assert_eq!(row["values"], serde_json::json!([fig(4), fig(6)]));
}
