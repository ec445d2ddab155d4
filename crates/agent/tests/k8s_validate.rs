//! The manifests of `iotoll agent k8s-manifests` against the Kubernetes
//! API schemas, with `kubernetes-validate --strict` (PyPI; test.sh installs
//! it in a venv under target/ and exports IOTOLL_KUBERNETES_VALIDATE).
//! Without the validator the test is skipped with a message, and fails
//! under CI. A deliberately broken manifest must be rejected first, so a
//! validator that accepts everything cannot pass the test.

use iotoll_agent::k8s::{manifests, K8sOptions};
use std::path::{Path, PathBuf};
use std::process::Command;

fn validator() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("IOTOLL_KUBERNETES_VALIDATE") {
        return Some(PathBuf::from(p));
    }
    let venv = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/k8s-validate-venv/bin/kubernetes-validate");
    if venv.is_file() {
        return Some(venv);
    }
    std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("kubernetes-validate"))
            .find(|f| f.is_file())
    })
}

/// The validator's verdict on `yaml`: success and its output.
fn validate(v: &Path, dir: &Path, name: &str, yaml: &str) -> (bool, String) {
    let f = dir.join(name);
    std::fs::write(&f, yaml).unwrap();
    let out = Command::new(v)
        .args(["--strict", "--no-warn"])
        .arg(&f)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", v.display()));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn job_and_daemonset_manifests_pass_the_kubernetes_schemas() {
    let Some(v) = validator() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "kubernetes-validate is missing, but CI must run this test (test.sh installs it)"
        );
        eprintln!("skipped: needs kubernetes-validate (pip install kubernetes-validate)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let job = K8sOptions {
        replicas: 4,
        namespace: "perf".into(),
        allow_targets: vec!["/dev/nvme1n1:rw".into(), "/var/lib/iotoll".into()],
        ..K8sOptions::default()
    };
    let ds = K8sOptions {
        daemonset: true,
        port: 7600,
        name: "agents".into(),
        key_secret: "agents.key".into(),
        image: "registry.example:5000/perf/iotoll:0.1.0".into(),
        ..K8sOptions::default()
    };
    let good = manifests(&job);
    // The control: one misspelt field must fail strict validation.
    let broken = good.replacen("completionMode:", "completionMod:", 1);
    assert_ne!(broken, good);
    let (ok, text) = validate(&v, dir.path(), "broken.yaml", &broken);
    assert!(!ok, "the validator accepted a misspelt field:\n{text}");
    for (name, o) in [("job.yaml", &job), ("daemonset.yaml", &ds)] {
        let y = manifests(o);
        let (ok, text) = validate(&v, dir.path(), name, &y);
        assert!(ok, "{name}:\n{text}\n{y}");
        // Every document was checked, not just the first.
        let kinds = if o.daemonset {
            ["service/", "daemonset/"]
        } else {
            ["service/", "job/"]
        };
        for k in kinds {
            assert!(text.contains(k), "{k} not validated:\n{text}");
        }
    }
}
