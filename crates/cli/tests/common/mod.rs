#![allow(dead_code)]

use assert_cmd::Command;
use serde_json::Value;
use std::path::PathBuf;

/// A results database per test process, so tests never touch the user's.
pub fn data_home() -> PathBuf {
    std::env::temp_dir().join(format!("iotoll-test-data-{}", std::process::id()))
}

pub fn iotoll() -> Command {
    let mut c = Command::cargo_bin("iotoll").expect("binary built");
    c.env_remove("TMPDIR");
    c.env("XDG_DATA_HOME", data_home());
    c
}

/// The binary as a plain process (for signals), with the test database.
pub fn raw() -> std::process::Command {
    let mut c = std::process::Command::new(bin_path());
    c.env("XDG_DATA_HOME", data_home());
    c
}

pub fn bin_path() -> PathBuf {
    assert_cmd::cargo::cargo_bin("iotoll")
}

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Runs a short real disk workload and returns its JSON document.
pub fn disk_json(args: &[&str]) -> Value {
    let out = iotoll()
        .args(["disk", "run", "--json", "--ramp", "0s", "--time", "1s"])
        .args(args)
        .output()
        .expect("run iotoll");
    assert!(
        out.status.success(),
        "iotoll {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON document ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    validate(&doc);
    doc
}

pub fn schema() -> Value {
    let p = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/result.schema.json");
    serde_json::from_str(&std::fs::read_to_string(p).expect("schema file")).expect("schema JSON")
}

pub fn schema_errors(doc: &Value) -> Vec<String> {
    let s = schema();
    let v = jsonschema::validator_for(&s).expect("schema compiles");
    v.iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect()
}

pub fn validate(doc: &Value) {
    let errs = schema_errors(doc);
    assert!(errs.is_empty(), "schema violations: {errs:#?}");
}

/// A command that must succeed and print one JSON document.
pub fn ok_json(out: &std::process::Output) -> Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON document ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

pub fn metric(doc: &Value, k: &str) -> f64 {
    doc["metrics"][k]
        .as_f64()
        .unwrap_or_else(|| panic!("metric {k} missing in {}", doc["metrics"]))
}

pub mod server;

/// Runs a short network test; returns (exit code, stdout JSON if any, stderr).
pub fn net_run(args: &[&str]) -> (i32, Option<Value>, String) {
    let out = iotoll()
        .args(["net"])
        .args(args)
        .args(["--json", "--quiet"])
        .output()
        .expect("run iotoll");
    let doc = serde_json::from_slice::<Value>(&out.stdout).ok();
    (
        out.status.code().unwrap_or(-1),
        doc,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A network test that must succeed; validated against the schema.
pub fn net_json(args: &[&str]) -> Value {
    let (code, doc, err) = net_run(args);
    assert_eq!(code, 0, "iotoll net {args:?} failed: {err}");
    let doc = doc.expect("JSON document");
    validate(&doc);
    doc
}

/// Starts `cmd`, sends it SIGINT after `wait`, and collects its output.
pub fn sigint_after(
    cmd: &mut std::process::Command,
    wait: std::time::Duration,
) -> std::process::Output {
    use std::process::Stdio;
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn iotoll");
    std::thread::sleep(wait);
    // SAFETY: sending a signal to our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    child.wait_with_output().expect("wait for iotoll")
}
