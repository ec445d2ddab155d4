//! The terminal's renderings checked by what they must say.

use super::results::{multi_host, test_line};
use super::{consumer, split};

#[test]
fn top_consumers_show_pids_and_iotoll_roles() {
    let t = |pid: i32, comm: &str, k: bool, role: Option<&str>| iotoll_model::TopConsumer {
        pid,
        comm: comm.into(),
        kernel_thread: k,
        cpu_pct: 12.5,
        role: role.map(str::to_string),
    };
    assert_eq!(
        consumer(&t(7, "iotoll", false, Some("self"))),
        "iotoll pid 7 (this iotoll) 12.5 %"
    );
    assert_eq!(
        consumer(&t(8, "iotoll", false, Some("endpoint"))),
        "iotoll pid 8 (its endpoint) 12.5 %"
    );
    assert_eq!(
        consumer(&t(9, "iotoll", false, Some("iotoll"))),
        "iotoll pid 9 (another iotoll) 12.5 %"
    );
    assert_eq!(
        consumer(&t(14, "ksoftirqd/0", true, None)),
        "ksoftirqd/0 pid 14 [k] 12.5 %"
    );
}

#[test]
fn the_split_adds_up_and_names_each_part_once() {
    let a = iotoll_model::CpuAccount {
        self_pct: 9.1,
        others_pct: 40.2,
        kernel_threads_pct: 1.2,
        kernel_other_pct: 3.0,
        ..Default::default()
    };
    assert_eq!(
        split(&a, a.total()),
        "iotoll 9.1 + others 40.2 + kernel threads 1.2 + kernel, no process 3.0 = 53.5 % busy"
    );
}

fn row(kind: &str, metrics: serde_json::Value) -> iotoll_store::TestRow {
    iotoll_store::TestRow {
        seq: 1,
        name: "t".into(),
        kind: kind.parse().unwrap(),
        group: None,
        params: serde_json::json!({}),
        select: "mean".into(),
        selected_rep: None,
        spread_pct: Some(1.25),
        repeatable: Some(true),
        summary: serde_json::from_value(metrics).ok(),
        ci95: None,
        confidence: None,
        reps: vec![],
    }
}

/// issue 23 §7: `results show` of a multi-host run prints its
/// per-host and per-pair tables (and §6: a multi-homed host's adapters,
/// and the 95 % CI of 3+ repetitions).
#[test]
fn show_prints_a_multi_host_tests_hosts_pairs_and_adapters() {
    let mut t = row("net-stream", serde_json::json!({"mbit_s": 1600.0}));
    t.select = "median:mbit_s".into();
    let m = serde_json::json!({"mbit_s": 1600.0, "window_s": 10.0});
    let mut d = iotoll_model::fixtures::doc("net-stream", serde_json::json!({}), m);
    let host =
        |name: &str, role: &str, tx: f64, rx: f64, ifaces: usize| iotoll_model::HostFigures {
            ifaces: (0..ifaces)
                .map(|n| {
                    iotoll_model::IfaceFigures {
                        name: format!("eth{n}"),
                        rx_bytes: (rx * 1e6 / 8.0 * 10.0) as u64 / ifaces as u64,
                        tx_bytes: (tx * 1e6 / 8.0 * 10.0) as u64 / ifaces as u64,
                        ..Default::default()
                    }
                    .with_rates(10.0)
                })
                .collect(),
            ..iotoll_model::fixtures::stream_host(name, role, 4, tx, rx, 12.5)
        };
    d.hosts = vec![
        host("srv", "server", 0.0, 1600.0, 4),
        host("c1", "client", 800.0, 0.0, 1),
        host("c2", "client", 800.0, 0.0, 1),
    ];
    let pair = |c| iotoll_model::fixtures::pair(c, "srv", 800.0);
    d.pairs = vec![pair("c1"), pair("c2")];
    t.selected_rep = Some(2);
    t.reps = (1..=3)
        .map(|rep| {
            let mut d = d.clone();
            d.metrics
                .insert("mbit_s".into(), 1590.0 + 10.0 * rep as f64);
            iotoll_store::RepRow {
                rep,
                status: iotoll_model::ResultStatus::Complete,
                doc: d,
            }
        })
        .collect();
    t.ci95 = t.compute_ci95();
    let out = multi_host(&t);
    assert!(out.contains("repetition 2 (selected)"), "{out}");
    for want in [
        "per host:",
        "srv",
        "c1",
        "per pair:",
        "c2",
        "srv",
        "800",
        "per adapter",
    ] {
        assert!(out.contains(want), "{want}: {out}");
    }
    // The server's 4 adapters, 400 Mbit/s each, adding up to its 1,600.
    let adapters: Vec<&str> = out.lines().filter(|l| l.contains(" eth")).collect();
    assert_eq!(adapters.len(), 4, "{out}");
    assert!(
        adapters.iter().all(|l| l.trim_end().ends_with(" 400")),
        "{out}"
    );
    assert!(
        out.contains(
            "srv: adapters 1,600 Mbit/s on the wire (headers included) for 1,600 Mbit/s of payload"
        ),
        "{out}"
    );
    // Single-homed clients have no adapter lines.
    assert!(
        !out.lines()
            .any(|l| l.trim_start().starts_with("c1") && l.contains("eth0")),
        "{out}"
    );
    // 1600, 1610, 1620: 1610 ± 4.303 × 10 / √3 = ± 24.8.
    let line = test_line(&t, (0, 0));
    assert!(
        line.contains("95 % CI of mbit_s 1,585 to 1,635 (mean 1,610 ± 24.8, 3 reps)"),
        "{line}"
    );
}

#[test]
fn show_prints_the_metric_a_test_is_selected_by() {
    let metrics = serde_json::json!({"iops": 1000.0, "lat_p99_us": 812.0});
    let mut t = row("disk", metrics);
    t.select = "median:lat_p99_us".into();
    let l = test_line(&t, (0, 0));
    assert!(l.contains("lat_p99_us 812"), "{l}");
    t.select = "median:iops".into();
    assert_eq!(test_line(&t, (0, 0)).matches("1,000").count(), 1);
}

#[test]
fn show_prints_disk_mbit_s_where_the_suite_asks() {
    let mut t = row("disk", serde_json::json!({"iops": 1000.0, "mb_s": 4.096}));
    t.params = serde_json::json!({"unit": "mbit_s"});
    let l = test_line(&t, (0, 0));
    assert!(l.contains("Mbit/s 32.8") && !l.contains("MB/s"), "{l}");
}

#[test]
fn show_prints_only_the_fields_of_the_kind() {
    let net = serde_json::json!({"mbit_s": 940.0, "cpu_pct": 12.0});
    let net = test_line(&row("net-stream", net), (0, 0));
    assert!(
        net.contains("mbit/s 940 ") && net.contains("cpu % 12"),
        "{net}"
    );
    assert!(!net.contains("iops") && !net.contains("trans/s"), "{net}");
    let rr = test_line(
        &row("net-rr", serde_json::json!({"trans_s": 5000.0})),
        (0, 0),
    );
    assert!(
        rr.contains("trans/s 5,000") && !rr.contains("mbit/s"),
        "{rr}"
    );
    let disk = serde_json::json!({"iops": 1000.0, "mb_s": 4.096, "cpu_pct": 3.0});
    let disk = test_line(&row("disk", disk), (0, 0));
    assert!(
        disk.contains("iops 1,000") && disk.contains("MB/s 4.10"),
        "{disk}"
    );
    assert!(
        !disk.contains("mbit/s") && !disk.contains("trans/s"),
        "{disk}"
    );
    // A metric of the kind that was not measured is shown as missing.
    assert!(disk.contains("lat us -"), "{disk}");
}

/// A loopback path says so (a tester saw an empty-looking `network path:`
/// of "lo ... speed - driver -"); an IPv4-mapped address is shown as IPv4.
#[test]
fn a_network_path_is_loopback_or_named_in_ipv4() {
    use iotoll_model::spec::{Disclosure, NetDisclosure, Typed};
    let with = |local: &str, remote: &str| {
        let mut d = iotoll_model::fixtures::doc(
            "net-stream",
            serde_json::json!({}),
            serde_json::json!({"mbit_s": 10.0}),
        );
        let side = |ip: &str| {
            let mut s = iotoll_probe::sysinfo::network("127.0.0.1".parse().unwrap());
            s.interface.address = ip.into();
            s
        };
        d.disclosure = Some(Disclosure::Net(Typed::from(NetDisclosure {
            local: side(local),
            remote: serde_json::to_value(side(remote)).unwrap(),
            tls: None,
        })));
        super::result(&d)
    };
    let lo = with("127.0.0.1", "::ffff:127.0.0.1");
    assert!(lo.contains("network path: loopback"), "{lo}");
    assert!(lo.contains("rmem"), "the TCP settings stay: {lo}");
    let far = with("10.0.0.1", "::ffff:10.0.0.2");
    assert!(far.contains("network path:\n"), "{far}");
    assert!(
        far.contains(" 10.0.0.2 ") && !far.contains("::ffff:"),
        "{far}"
    );
}
