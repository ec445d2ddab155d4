//! `iotoll agent k8s-manifests`: manifests on stdout, the hosts file with
//! --hosts-out (never over an existing file without --force), bad options
//! exit 2 naming the option and write nothing. The manifests' schema
//! validity is tested in crates/agent/tests/k8s_validate.rs.

mod common;

use common::Run;

/// `iotoll agent k8s-manifests ARGS`.
fn k8s(args: &[&str]) -> assert_cmd::Command {
    let mut c = common::iotoll();
    c.args(["agent", "k8s-manifests"]).args(args);
    c
}

#[test]
fn manifests_go_to_stdout_and_the_hosts_file_lists_the_jobs_pods() {
    let t = tempfile::tempdir().unwrap();
    let hosts = t.path().join("hosts.toml");
    let h = hosts.to_str().unwrap();
    let out = k8s(&[
        "--replicas",
        "2",
        "-n",
        "perf",
        "--image",
        "reg.example/iotoll:1",
        "--allow-target",
        "/dev/sdb:rw",
        "--hosts-out",
        h,
    ])
    .out();
    assert!(out.status.success(), "{}", common::stderr(&out));
    let y = String::from_utf8(out.stdout.clone()).unwrap();
    assert!(
        y.contains("kind: Job") && y.contains("completions: 2"),
        "{y}"
    );
    assert!(y.contains("image: \"reg.example/iotoll:1\""), "{y}");
    assert!(y.contains("\"--allow-target\", \"/dev/sdb:rw\""), "{y}");
    assert!(common::stderr(&out).contains("wrote the hosts file"));
    let text = std::fs::read_to_string(&hosts).unwrap();
    assert!(text.contains(
        "\"iotoll-agent-1\" = \"iotoll-agent-1.iotoll-agent.perf.svc.cluster.local:7575\""
    ));
    // Not over an existing file: exit 2, nothing printed, the file as it was.
    std::fs::write(&hosts, "mine\n").unwrap();
    let out = k8s(&["--hosts-out", h]).out();
    assert_eq!(out.status.code(), Some(2), "{}", common::stderr(&out));
    assert!(common::stderr(&out).contains("the file exists (--force overwrites it)"));
    assert!(out.stdout.is_empty());
    assert_eq!(std::fs::read_to_string(&hosts).unwrap(), "mine\n");
    // --force overwrites; a DaemonSet's hosts file is the template.
    k8s(&["--daemonset", "--hosts-out", h, "--force"]).succeeds();
    let text = std::fs::read_to_string(&hosts).unwrap();
    assert!(
        text.contains("DaemonSet") && text.contains("[hosts]"),
        "{text}"
    );
}

#[test]
fn bad_options_exit_2_naming_the_option() {
    let t = tempfile::tempdir().unwrap();
    let hosts = t.path().join("h.toml");
    let h = hosts.to_str().unwrap();
    for (args, needle) in [
        (
            &["--name", "Bad_Name"][..],
            "--name 'Bad_Name' is not a DNS label",
        ),
        (&["--namespace", "x."][..], "--namespace 'x.'"),
        (&["--replicas", "0"][..], "--replicas must be at least 1"),
        (&["--port", "0"][..], "--port"),
        (&["--key-secret", "a_b"][..], "--key-secret 'a_b'"),
        (&["--allow-target", "sdb"][..], "--allow-target 'sdb'"),
        (&["--image", ""][..], "--image"),
        (
            &["--daemonset", "--replicas", "3"][..],
            "cannot be used with",
        ),
    ] {
        let out = k8s(args).arg("--hosts-out").arg(h).out();
        let err = common::stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{needle:?} not in {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(!hosts.exists(), "{args:?} wrote the hosts file");
    }
    // --force means nothing without --hosts-out.
    k8s(&["--force"]).fails(2, "--hosts-out");
}
