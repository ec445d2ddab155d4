use super::*;
use crate::compare::test_data::{cfg as labelled, compared, test};
use crate::info::TestInfo;

fn t(name: &str, kind: &str, pairs: &[(&str, f64)], repeatable: Option<bool>) -> TestData {
    TestData {
        repeatable,
        ..test(name, kind, pairs)
    }
}

fn cfg(tests: Vec<TestData>, notes: Vec<String>) -> ConfigData {
    ConfigData {
        notes,
        ..labelled("x", tests)
    }
}

#[test]
fn a_single_run_gets_findings_from_its_numbers() {
    let a = [
        ("iops", 1000.0),
        ("cpu_pct", 10.0),
        ("iops_per_cpu_pct", 100.0),
    ];
    let b = [
        ("iops", 3000.0),
        ("cpu_pct", 97.0),
        ("iops_per_cpu_pct", 3000.0 / 97.0),
    ];
    let s = [
        ("mbit_s", 9000.0),
        ("cpu_pct", 45.0),
        ("mbit_s_per_cpu_pct", 200.0),
    ];
    let c = cfg(
        vec![
            t("a", "disk", &a, Some(true)),
            t("b", "disk", &b, Some(false)),
            t("s", "net-stream", &s, None),
        ],
        vec!["interference: rustc (pid 7) used 30 % of the CPUs".into()],
    );
    let info = RunInfo {
        overridden: Some("durations overridden: ramp 0s, time 1s".into()),
        tests: vec![TestInfo {
            name: "s".into(),
            same_host: Some(true),
            interfered: Some(true),
            reps: 1,
            ..Default::default()
        }],
        ..Default::default()
    };
    let f = single_run(&c, &info, Some(50.0));
    let all = f.join("\n");
    for want in [
        "2 tests (disk): the highest IOPS was 3,000 on b at 97.0 % CPU",
        // Mean of 100 and 30.93 = 65.46.
        "65.5 IOPS per % CPU (mean of 2 tests, 30.9 to 100)",
        "s (stream): 9,000 Mbit/s at 45.0 % CPU; efficiency: 200 Mbit/s per % CPU.",
        "under the 50.0 % threshold on 2 of 3 tests (above it: b)",
        "CPU-bound",
        "(b)",
        "Not repeatable",
        ": b.",
        "Smoke run",
        "Interfered",
        "during s",
        "The network peer was this host",
    ] {
        assert!(all.contains(want), "{want} in {all}");
    }
    assert!(!all.contains("iops_per_cpu_pct"), "human names only: {all}");
}

#[test]
fn no_threshold_and_single_repetitions() {
    let m = [
        ("trans_s", 20000.0),
        ("cpu_pct", 12.0),
        ("cpu_others_pct", 300.0),
    ];
    let c = cfg(vec![t("a", "net-rr", &m, None)], Vec::new());
    let info = RunInfo {
        tests: vec![TestInfo {
            name: "a".into(),
            reps: 1,
            ..Default::default()
        }],
        ..Default::default()
    };
    let f = single_run(&c, &info, None).join("\n");
    assert!(f.contains("Whole-host CPU was 12.0 %"), "{f}");
    assert!(f.contains("Each test ran once"), "{f}");
    assert!(!f.contains("CPU-bound") && !f.contains("Smoke"), "{f}");
    assert!(
        f.contains("Inconsistent: other processes' CPU % exceeds the whole-host CPU % on a"),
        "{f}"
    );
}

fn mtu_config(label: &str, sets: &str, tests: Vec<TestData>) -> ConfigData {
    ConfigData {
        disclosure: Some(serde_json::json!({"lab": {"sets": sets}, "os": {"kernel": "6.1"}})),
        ..labelled(label, tests)
    }
}

/// The README's lab workflow: the first findings were "mtu9000 achieved
/// an average 207.1 % higher IOPS" and "10.42 × IOPS per % CPU" — disk
/// tests MTU cannot affect, on a baseline other processes loaded, with
/// the caveat several bullets later.
#[test]
fn findings_lead_with_what_the_compared_setting_can_affect() {
    let disk = |iops: f64, cpu: f64, interfered: bool| {
        let mut t =
            test("disk/spec=db-oltp-8k", "disk", &[]).with(&[("iops", iops), ("cpu_pct", cpu)]);
        t.spec = serde_json::json!({"bs": 8192}).into();
        if interfered {
            t.interference = vec!["interference: cargo 93 %".into()];
        }
        t
    };
    let stream = |mbit: f64, repeatable: bool| {
        let mut t = test("stream", "net-stream", &[]).with(&[("mbit_s", mbit), ("cpu_pct", 20.0)]);
        t.main_metric = "mbit_s".into();
        t.spec = serde_json::json!({"msg": 65536, "peer": "198.18.0.2:44933"}).into();
        t.repeatable = Some(repeatable);
        t
    };
    let base = vec![disk(10_000.0, 96.0, true), stream(940.0, true)];
    let cand = vec![disk(30_710.0, 30.0, false), stream(990.0, false)];
    let base = mtu_config("mtu1500", "", base);
    let cand = mtu_config("mtu9000", "mtu=9000", cand);
    let c = compared(base, cand);
    let f = &c.findings;
    let at = |needle: &str| {
        f.iter()
            .position(|x| x.contains(needle))
            .unwrap_or(usize::MAX)
    };
    // The stream findings (MTU can affect them) come first, the disk
    // ones after, said to be noise.
    assert!(f[0].contains("on net-stream tests"), "{f:#?}");
    assert!(at("on disk tests") > at("On net-stream tests"), "{f:#?}");
    let disk_line = &f[at("on disk tests")];
    for want in [
        "207.1 % higher IOPS",
        "Noise: what differs (lab.sets)",
        // Interference and repeatability in the same bullet, not apart.
        "⚑ Interfered on 1 of 1 tests",
        "disk/spec=db-oltp-8k (mtu1500)",
    ] {
        assert!(disk_line.contains(want), "{want} in {disk_line}");
    }
    let eff = &f[at("On disk tests")];
    assert!(eff.contains("Noise") && eff.contains("Interfered"), "{eff}");
    assert!(f[0].contains("⚠ Not repeatable"), "{}", f[0]);
    assert!(
        !f.iter()
            .any(|x| x.starts_with("Other processes used") || x.starts_with("Not repeatable")),
        "{f:#?}"
    );
}

/// "7.51 Mbit/s per % remote CPU" in the findings while the table said
/// "(same host)": a peer on this host has no remote-CPU efficiency.
#[test]
fn no_remote_cpu_efficiency_when_the_peer_is_this_host() {
    let stream = |same_host: bool| {
        let m = [
            ("mbit_s", 751.0),
            ("cpu_pct", 50.0),
            ("remote_cpu_pct", 100.0),
        ];
        let mut t = test("bidir", "net-stream", &[]).with(&m);
        t.same_host_peer = same_host;
        t
    };
    let info = RunInfo::default();
    let f = single_run(&cfg(vec![stream(true)], Vec::new()), &info, None).join("\n");
    assert!(f.contains("15.0 Mbit/s per % CPU"), "{f}");
    assert!(!f.contains("per % remote CPU"), "{f}");
    // A loopback peer known only to the run's facts counts too.
    let info_same = RunInfo {
        tests: vec![TestInfo {
            name: "bidir".into(),
            same_host: Some(true),
            ..Default::default()
        }],
        ..Default::default()
    };
    let f = single_run(&cfg(vec![stream(false)], Vec::new()), &info_same, None).join("\n");
    assert!(!f.contains("per % remote CPU"), "{f}");
    // A second machine keeps it.
    let f = single_run(&cfg(vec![stream(false)], Vec::new()), &info, None).join("\n");
    assert!(f.contains("7.51 Mbit/s per % remote CPU"), "{f}");
    // Comparisons: no remote mean, no remote finding.
    let c = compared(
        labelled("a", vec![stream(true)]),
        labelled("b", vec![stream(true)]),
    );
    assert!(c
        .efficiency
        .iter()
        .all(|e| !e.means.keys().any(|k| k.starts_with("remote"))));
    assert!(
        !c.findings.join("\n").contains("remote"),
        "{:?}",
        c.findings
    );
}

/// One efficiency mean over 4 KiB and 1 MiB tests said little: each
/// class of like tests gets its own.
#[test]
fn efficiency_is_per_class_of_like_tests() {
    let disk = |name: &str, bs: u64, iops: f64| {
        let mut t = test(name, "disk", &[]).with(&[("iops", iops), ("cpu_pct", 10.0)]);
        t.spec = serde_json::json!({"bs": bs}).into();
        t
    };
    let tests = || vec![disk("r4k", 4096, 50_000.0), disk("r1m", 1 << 20, 1_000.0)];
    let f = single_run(&cfg(tests(), Vec::new()), &RunInfo::default(), None).join("\n");
    assert!(f.contains("≤ 8k transfers: 5,000 IOPS per % CPU"), "{f}");
    assert!(f.contains("≥ 256k transfers: 100 IOPS per % CPU"), "{f}");
    assert!(!f.contains("2,550"), "no mean over both: {f}");
    let c = compared(labelled("a", tests()), labelled("b", tests()));
    let classes: Vec<(&str, usize)> = c
        .efficiency
        .iter()
        .filter(|e| e.label == "a")
        .map(|e| (e.class.as_str(), e.tests))
        .collect();
    assert_eq!(classes, vec![("≤ 8k", 1), ("≥ 256k", 1)]);
}

/// P/E 1.00 × but CPU µs per KB 0.66 ×: a footnote says what each
/// counts.
#[test]
fn disagreeing_efficiency_measures_get_a_footnote() {
    let stream = |cpus: f64| {
        let m = [("mbit_s", 1000.0), ("cpu_pct", 20.0), ("cpus", cpus)];
        vec![test("s", "net-stream", &[]).with(&m)]
    };
    let c = compared(labelled("a", stream(3.0)), labelled("b", stream(2.0)));
    let f = c.findings.join("\n");
    assert!(f.contains("delivered 1.00 × a's Mbit/s per % CPU"), "{f}");
    let note = c
        .findings
        .iter()
        .find(|x| x.starts_with("Footnote"))
        .unwrap_or_else(|| panic!("no footnote: {f}"));
    for want in [
        "Mbit/s per % CPU 1.00 ×",
        "CPU µs per KB 0.67 ×",
        "local end",
        "per KB moved",
    ] {
        assert!(note.contains(want), "{want} in {note}");
    }
    // Measures that agree need no footnote.
    let c = compared(labelled("a", stream(2.0)), labelled("b", stream(2.0)));
    assert!(!c.findings.iter().any(|x| x.starts_with("Footnote")));
}
