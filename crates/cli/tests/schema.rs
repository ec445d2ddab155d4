//! issue 30: docs/result.schema.json accepts every document iotoll writes
//! or stores, checked with a validator that is not the schema's generator
//! (the `jsonschema` crate; the schema comes from `schemars`). Single runs
//! of each kind as printed and as stored, imports of every format, a
//! suite run as `results show --json` prints it, and the documents an
//! older version stored (the v1 fixture database). The multi-host
//! documents are checked where the lab tests make them (agents.rs,
//! agent_ssh.rs), so that no lab is brought up twice.

mod common;
use common::server::Server;
use common::*;
use serde_json::Value;
use std::collections::BTreeMap;

/// Documents validated, per kind of document (printed at the end, for
/// the record).
#[derive(Default)]
struct Seen(BTreeMap<&'static str, usize>);

impl Seen {
    /// Fails on the first document the schema rejects, naming it.
    fn check(&mut self, what: &'static str, doc: &Value) {
        let errs = schema_errors(doc);
        assert!(
            errs.is_empty(),
            "docs/result.schema.json rejects a {what} document: {errs:#?}\n{doc:#}"
        );
        *self.0.entry(what).or_default() += 1;
    }

    /// Every repetition's document of a run as `results show --json`
    /// prints it.
    fn run(&mut self, what: &'static str, run: &Value) {
        let reps = stored_docs(run);
        assert!(!reps.is_empty(), "{what}: no stored document in {run}");
        for d in reps {
            self.check(what, d);
        }
    }
}

impl Drop for Seen {
    fn drop(&mut self) {
        eprintln!(
            "documents validated against docs/result.schema.json: {:?}",
            self.0
        );
    }
}

fn fixture(path: &str) -> String {
    format!(
        "{}/../store/tests/fixtures/{path}",
        env!("CARGO_MANIFEST_DIR")
    )
}

#[test]
fn single_runs_of_every_kind_validate_printed_and_stored() {
    let t = Tmp::new();
    let mut seen = Seen::default();
    let target = t.path("t.bin");
    let disk = t
        .cmd("disk run --json --quiet --ramp 0s --time 1s --create --size 8m --config d")
        .args(["--target", &target])
        .json();
    seen.check("disk --json", &disk);
    let mixed = t
        .cmd("disk run --json --quiet --ramp 0s --time 1s --create --size 8m --spec iometer-file-server --config m")
        .args(["--target", &target])
        .json();
    seen.check("disk --json", &mixed);
    seen.run("disk stored", &t.show("d"));
    seen.run("disk stored", &t.show("m"));
    let s = Server::start("127.0.0.1", &[]);
    for (kind, extra) in [("stream", "--dir bidir --conns 2"), ("rr", "--burst 2")] {
        let line = format!(
            "net {kind} {} {extra} --json --quiet --ramp 200ms --time 1s",
            s.addr
        );
        let doc = t.cmd(&line).json();
        seen.check(
            if kind == "rr" {
                "net-rr --json"
            } else {
                "net-stream --json"
            },
            &doc,
        );
    }
    let runs = t.list();
    for id in runs
        .lines()
        .filter_map(|l| l.split_whitespace().next()?.parse::<u32>().ok())
    {
        let run = t.show(&id.to_string());
        let what = match run["tests"][0]["reps"][0]["doc"]["kind"].as_str() {
            Some("net-rr") => "net-rr stored",
            Some("net-stream") => "net-stream stored",
            _ => continue,
        };
        seen.run(what, &run);
    }
    assert!(seen.0.contains_key("net-rr stored") && seen.0.contains_key("net-stream stored"));
}

#[test]
fn imports_of_every_format_validate() {
    let t = Tmp::new();
    let mut seen = Seen::default();
    // A table with a disk row, a request/response row and a stream row:
    // each kind an import can be.
    let table = t.file(
        "t.csv",
        "test,group,iops,mb_s,trans_s,mbit_s,cpu_pct\nrand-4k,a,51234.5,209.85,,,37.5\nrr,b,,,12000,,\nstream,,,,,9400,12\n",
    );
    let fio = fixture("fio-randrw.json");
    let iperf3 = fixture("iperf3-tx.json");
    for (label, file, format, what) in [
        ("tbl", table.as_str(), "table", "table import"),
        ("fio", fio.as_str(), "fio-json", "fio-json import"),
        ("ipf", iperf3.as_str(), "iperf3-json", "iperf3-json import"),
        (
            "fio1",
            &fixture("v1/fio.json"),
            "fio-json",
            "fio-json import",
        ),
        (
            "ipf1",
            &fixture("v1/iperf3.json"),
            "iperf3-json",
            "iperf3-json import",
        ),
        ("tbl1", &fixture("v1/table.csv"), "table", "table import"),
    ] {
        t.cmd(&format!(
            "results import {file} --format {format} --config {label}"
        ))
        .succeeds();
        let run = t.show(label);
        for d in stored_docs(&run) {
            assert_eq!(d["spec"]["format"], format, "{d}");
        }
        seen.run(what, &run);
        // Its own variant, closed: neither a stray key nor a spec without
        // its origin passes.
        let doc = stored_docs(&run)[0].clone();
        let mut stray = doc.clone();
        stray["spec"]["target"] = "t.bin".into();
        let mut bare = doc;
        bare["spec"].as_object_mut().unwrap().remove("format");
        for d in [stray, bare] {
            assert!(!schema_errors(&d).is_empty(), "accepted {}", d["spec"]);
        }
    }
}

#[test]
fn a_suite_run_as_results_show_prints_it_validates() {
    let t = Tmp::new();
    let mut seen = Seen::default();
    let suite = t.file(
        "s.toml",
        "name = \"s\"\nreps = 2\nramp = \"0s\"\ntime = \"1s\"\n\
         [[test]]\nname = \"blk\"\nkind = \"disk\"\nbs = [\"4k\", \"64k\"]\nread = 70\nrandom = 100\nsize = \"8m\"\n\
         [[test]]\nname = \"st\"\nkind = \"net-stream\"\ndir = \"rx\"\n\
         [[test]]\nname = \"rr\"\nkind = \"net-rr\"\n",
    );
    t.cmd("suite run --quiet").arg(&suite).succeeds();
    seen.run("suite run stored", &t.show("1"));
}

#[test]
fn every_document_of_the_v1_database_validates() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("results.db");
    std::fs::copy(fixture("v1/results.db"), &db).unwrap();
    let db = db.to_str().unwrap();
    let mut seen = Seen::default();
    let runs = list(db);
    let ids: Vec<&str> = runs
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|id| id.parse::<u32>().is_ok())
        .collect();
    assert_eq!(ids.len(), 10, "{runs}");
    for id in ids {
        let run = show(db, id);
        for doc in stored_docs(&run) {
            let what = match (doc["spec"]["format"].as_str(), doc["kind"].as_str()) {
                (Some(_), _) => "v1 import",
                (None, Some("disk")) => "v1 disk",
                (None, Some("net-stream")) => "v1 net-stream",
                _ => "v1 net-rr",
            };
            seen.check(what, doc);
        }
    }
}
