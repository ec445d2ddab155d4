//! The README's `disk run` and `results list` samples and
//! docs/example-report.html are what the result's table, `results list` and
//! `compare --html` print for fixed runs (no
//! measurement): the fixtures in tests/fixtures are stored in a fresh
//! database and the commands a user runs render them. A test fails when a
//! checked-in sample drifts from that; docs/gen.sh (IOTOLL_BLESS=1) rewrites
//! them.

mod common;
#[path = "common/samples.rs"]
mod samples;

use common::Tmp;
use iotoll_model::{Kind, ResultDoc, RunStatus};
use iotoll_store::{Selection, Store};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

fn fixture(name: &str) -> Value {
    let p = samples::repo_file(&format!("crates/cli/tests/fixtures/{name}"));
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn field<T: DeserializeOwned>(v: &Value, k: &str) -> T {
    serde_json::from_value(v[k].clone()).unwrap_or_else(|e| panic!("fixture field {k}: {e}"))
}

/// A fixture document with its derived metrics computed, as a run stores it.
fn result_doc(v: &Value) -> ResultDoc {
    let mut doc: ResultDoc = serde_json::from_value(v.clone()).expect("a result document");
    iotoll_model::derive_metrics(&mut doc.metrics);
    doc
}

/// Stores `run` (laid out as `results export --format json` writes one)
/// with its times as given; returns its id.
fn store_run(db: &str, run: &Value) -> i64 {
    let mut store = Store::open(std::path::Path::new(db)).expect("a new database");
    let notes: Vec<String> = field(run, "notes");
    let config: Option<String> = field(run, "config");
    let suite_text: Option<String> = field(run, "suite_text");
    let id = store
        .begin_run(
            run["suite"].as_str().expect("suite"),
            config.as_deref(),
            suite_text.as_deref().unwrap_or(""),
            &run["disclosure"],
            &notes,
        )
        .expect("run stored");
    for t in run["tests"].as_array().expect("tests") {
        let group: Option<String> = field(t, "group");
        let kind: Kind = field(t, "kind");
        let select: String = field(t, "select");
        let test = store
            .add_test(
                id,
                field(t, "seq"),
                t["name"].as_str().expect("name"),
                kind,
                group.as_deref(),
                &t["params"],
                &select,
            )
            .expect("test stored");
        let mut selected = None;
        for r in t["reps"].as_array().expect("reps") {
            let doc = result_doc(&r["doc"]);
            let rep: i64 = field(r, "rep");
            if Some(rep) == field::<Option<i64>>(t, "selected_rep") {
                selected = Some(doc.metrics.clone());
            }
            store.add_rep(test, rep, &doc).expect("repetition stored");
        }
        let sel = Selection {
            rule: select,
            selected_rep: field(t, "selected_rep"),
            spread_pct: field(t, "spread_pct"),
            repeatable: field(t, "repeatable"),
            summary: selected,
        };
        store.finish_test(test, &sel).expect("test finished");
    }
    let status: RunStatus = field(run, "status");
    store.finish_run(id, status, &notes).expect("run finished");
    drop(store);
    set_times(db, id, run);
    id
}

/// The store stamps runs with the time they are stored: a sample shows the
/// fixture's.
fn set_times(db: &str, id: i64, run: &Value) {
    let c = rusqlite::Connection::open(db).expect("database");
    c.execute(
        "UPDATE runs SET started_at = ?2, finished_at = ?3, pid = NULL WHERE id = ?1",
        rusqlite::params![id, run["started_at"].as_str(), run["finished_at"].as_str()],
    )
    .expect("times set");
}

/// A single `disk run`, stored as the CLI stores one: a run of one test
/// named by its workload.
fn single_run(doc: &Value) -> Value {
    let d = result_doc(doc);
    json!({
        "suite": "single disk", "config": doc["config"], "status": "complete",
        "started_at": doc["started_at"], "finished_at": "2026-11-22T10:00:05Z",
        "notes": [], "disclosure": {}, "suite_text": null,
        "tests": [{
            "seq": 1, "name": iotoll_model::workload::test_name(d.kind, &d.spec.to_value()),
            "kind": "disk", "group": null, "params": doc["spec"], "select": "all",
            "selected_rep": 1, "spread_pct": null, "repeatable": null,
            "reps": [{"rep": 1, "status": "complete", "doc": doc}],
        }],
    })
}

/// The database behind the samples: the README's disk run, two suite runs
/// of io_uring against psync (the example report), and a table import.
fn sample_db() -> Tmp {
    let tmp = Tmp::new();
    store_run(&tmp.db, &single_run(&fixture("disk-run.json")));
    for run in fixture("engines-runs.json").as_array().expect("runs") {
        store_run(&tmp.db, run);
    }
    // A test name with commas is quoted, as docs/reports.md says.
    let table = tmp.file(
        "paper.csv",
        "test,group,mbit_s,cpu_pct\n\"stream/dir=tx,conns=4,msg=64k\",stream,9410,31.5\n",
    );
    tmp.cmd("results import --format table --config vendor-paper")
        .arg(&table)
        .assert()
        .success();
    set_times(
        &tmp.db,
        4,
        &json!({"started_at": "2026-11-23T09:15:02Z", "finished_at": "2026-11-23T09:15:02Z"}),
    );
    tmp
}

#[test]
fn readme_results_list_sample_is_what_results_list_prints() {
    let tmp = sample_db();
    let out = tmp.cmd("results list").output().expect("results list runs");
    assert!(out.status.success(), "{}", common::stderr(&out));
    let text = String::from_utf8(out.stdout).expect("utf-8");
    samples::readme_sample("results-list", &text);
}

/// The table `disk run` prints after a run (`iotoll_report::text::result`).
#[test]
fn readme_disk_run_sample_is_what_disk_run_prints() {
    let doc = result_doc(&fixture("disk-run.json"));
    samples::readme_sample("disk-run", &iotoll_report::text::result(&doc));
}

#[test]
fn example_report_is_what_compare_writes() {
    let tmp = sample_db();
    let html = tmp.path("example-report.html");
    let out = common::iotoll()
        .args(["compare", "io_uring", "psync", "--cpu-threshold", "50"])
        .args(["--html", &html, "--db", &tmp.db])
        .output()
        .expect("compare runs");
    assert!(out.status.success(), "{}", common::stderr(&out));
    let text = std::fs::read_to_string(&html).expect("the report was written");
    samples::generated_file("docs/example-report.html", &text);
}

/// The fixtures are result documents as iotoll writes them: the samples
/// show what a real document renders as.
#[test]
fn sample_fixtures_are_valid_result_documents() {
    common::validate(&fixture("disk-run.json"));
    for run in fixture("engines-runs.json").as_array().expect("runs") {
        for t in run["tests"].as_array().expect("tests") {
            for r in t["reps"].as_array().expect("reps") {
                common::validate(&r["doc"]);
            }
        }
    }
}
