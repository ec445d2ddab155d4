use super::*;
use crate::fixtures::{multi_host_run, multi_stream_doc, render};
use crate::tables::cpu_cell;

/// The breakdown of `doc` as repetition 1, selected.
fn mh(doc: &iotoll_model::ResultDoc) -> MultiHost {
    let (status, doc) = (doc.status, doc.clone());
    MultiHost::of(
        &iotoll_store::RepRow {
            rep: 1,
            status,
            doc,
        },
        true,
    )
    .unwrap()
}

fn col(t: &Table, h: &str) -> usize {
    t.head
        .iter()
        .position(|x| x == h)
        .unwrap_or_else(|| panic!("no column {h}: {:?}", t.head))
}

fn row<'a>(t: &'a Table, host: &str, role: &str) -> &'a [String] {
    &t.rows
        .iter()
        .find(|r| r.cells[0] == host && r.cells[1] == role)
        .unwrap_or_else(|| panic!("no row {host} {role}"))
        .cells
}

fn parse(cell: &str) -> f64 {
    cell.replace(',', "").parse().unwrap()
}

/// Half a unit of the last digit `cell` shows.
fn half_ulp(cell: &str) -> f64 {
    let decimals = cell.split_once('.').map_or(0, |x| x.1.len()) as i32;
    0.5 * 10f64.powi(-decimals)
}

const CLIENTS: [&str; 4] = ["c1", "c2", "c3", "c4"];

/// Seen: other processes used 95-99 % of a lab's CPU, the stored
/// host records said interfered, and neither the results nor the
/// report said so. The test is interfered (the finding, the ⚑), and
/// the per-host table shows other processes' CPU and steal.
#[test]
fn an_interfered_host_flags_the_test_and_shows_in_the_host_table() {
    let mut doc = multi_stream_doc(&CLIENTS, &["s1"], 1.0);
    for h in &mut doc.hosts {
        let others_pct = if h.name == "c3" { 95.0 } else { 1.0 };
        h.cpu = Some(iotoll_model::CpuReport {
            cpus: h.cpus,
            busy_pct: others_pct + 2.0,
            interference: Some(iotoll_model::Interference {
                others_pct,
                ..Default::default()
            }),
            ..Default::default()
        });
    }
    assert!(doc.apply_interference_threshold(5.0));
    let t = host_table("t", Kind::NetStream, &mh(&doc), None);
    let others = col(&t, "other processes' CPU %");
    assert_eq!(row(&t, "c3", "client")[others], "95.0 ⚑");
    assert_eq!(row(&t, "c1", "client")[others], "1.00");
    assert!(t.head.iter().any(|h| h == "steal %"));
    let (md, _) = render(&[multi_host_run(1, "base", doc)]);
    assert!(md.contains("Interfered:"), "{md}");
    assert!(md.contains("host c3's CPU"), "{md}");
}

#[test]
fn the_totals_rows_are_the_documents_totals() {
    let doc = multi_stream_doc(&CLIENTS, &["s1"], 1.0);
    let m = mh(&doc);
    let t = host_table("mesh", Kind::NetStream, &m, None);
    assert_eq!(
        t.rows.len(),
        5 + 2,
        "5 hosts, the clients' and servers' totals"
    );
    let clients = row(&t, "total", "clients");
    for c in columns(Kind::NetStream) {
        assert_eq!(
            clients[col(&t, label(c))],
            metric_cell(c, doc.metrics.get(*c).copied(), false),
            "{c}"
        );
    }
    assert_eq!(clients[col(&t, "CPUs")], "16");
    let servers = row(&t, "total", "servers");
    assert_eq!(
        servers[col(&t, "CPU %")],
        cpu_cell(Some(doc.metrics["remote_cpu_pct"]))
    );
    assert_eq!(
        servers[col(&t, "Mbit/s per % CPU")],
        num(doc.metrics.get("remote_mbit_s_per_cpu_pct").copied())
    );
    assert_eq!(servers[col(&t, "Mbit/s")], clients[col(&t, "Mbit/s")]);
    // What the clients sent, the servers received.
    assert_eq!(
        servers[col(&t, "sent Mbit/s")],
        clients[col(&t, "received Mbit/s")]
    );
    assert_eq!(row(&t, "s1", "server")[col(&t, "window on (µs)")], "0.00");
    // The fixture's parts add up: nothing to warn about.
    assert!(!t.note.clone().unwrap().contains('⚠'), "{:?}", t.note);
}

#[test]
fn a_total_that_differs_from_its_parts_is_shown_as_measured_and_said() {
    let mut doc = multi_stream_doc(&CLIENTS, &["s1"], 1.0);
    let measured = doc.metrics["mbit_s"] * 1.05;
    doc.metrics.insert("mbit_s".into(), measured);
    *doc.metrics.get_mut("cpu_pct").unwrap() += 3.0;
    let t = host_table("mesh", Kind::NetStream, &mh(&doc), None);
    assert_eq!(
        row(&t, "total", "clients")[col(&t, "Mbit/s")],
        num(Some(measured))
    );
    let note = t.note.unwrap();
    for want in [
        "⚠ The hosts' sent Mbit/s add up to",
        "⚠ The pairs' Mbit/s add up to",
        "⚠ The clients' CPU % weighted by CPU count is 23.0, the total says 26.0",
    ] {
        assert!(note.contains(want), "{want} in {note}");
    }
}

#[test]
fn each_hosts_efficiency_is_its_throughput_over_its_cpu_as_shown() {
    let doc = multi_stream_doc(&CLIENTS, &["s1", "s2"], 1.0);
    let t = host_table("mesh", Kind::NetStream, &mh(&doc), None);
    let [m, c, pe] = ["Mbit/s", "CPU %", "Mbit/s per % CPU"].map(|h| col(&t, h));
    for r in t.rows.iter().filter(|r| r.cells[0] != "total") {
        let (mbit, cpu, shown) = (parse(&r.cells[m]), parse(&r.cells[c]), parse(&r.cells[pe]));
        // What the shown inputs allow, widened by the shown index's rounding.
        let lo = (mbit - half_ulp(&r.cells[m])) / (cpu + half_ulp(&r.cells[c]));
        let hi = (mbit + half_ulp(&r.cells[m])) / (cpu - half_ulp(&r.cells[c]));
        let slack = half_ulp(&r.cells[pe]);
        assert!(
            shown >= lo - slack && shown <= hi + slack,
            "{}: {shown} not {mbit} / {cpu}",
            r.cells[0]
        );
    }
}

#[test]
fn a_thousand_pairs_collapse_to_their_extremes_and_a_summary() {
    let clients: Vec<String> = (1..=40).map(|i| format!("c{i:02}")).collect();
    let servers: Vec<String> = (1..=25).map(|i| format!("s{i:02}")).collect();
    let c: Vec<&str> = clients.iter().map(String::as_str).collect();
    let s: Vec<&str> = servers.iter().map(String::as_str).collect();
    let doc = multi_stream_doc(&c, &s, 1.0);
    assert_eq!(doc.pairs.len(), 1000);
    let m = mh(&doc);
    let t = pair_table("mesh", &m, None, true);
    assert_eq!(t.rows.len(), 8 + 1 + 8 + 4, "{:#?}", t.rows);
    assert_eq!(t.rows[8].cells[0], "… 984 more pairs");
    let rates: Vec<f64> = doc.pairs.iter().map(|p| p.mbit_s).collect();
    let min = rates.iter().copied().fold(f64::INFINITY, f64::min);
    let max = rates.iter().copied().fold(0.0, f64::max);
    let total = col(&t, "Mbit/s");
    assert_eq!(t.rows[0].cells[total], num(Some(min)), "slowest first");
    assert_eq!(t.rows[16].cells[total], num(Some(max)), "fastest last");
    assert_eq!(row(&t, "min of 1000 pairs", "")[total], num(Some(min)));
    assert_eq!(row(&t, "max of 1000 pairs", "")[total], num(Some(max)));
    assert_eq!(
        row(&t, "sum of 1000 pairs", "")[col(&t, "connections")],
        "4,000"
    );
    let note = t.note.clone().unwrap();
    assert!(
        note.contains(&format!("{:.3}", doc.metrics["pair_fairness"])),
        "{note}"
    );
    // The report: the Markdown stays short, the HTML folds every pair away.
    let (md, html) = render(&[multi_host_run(1, "big", doc)]);
    crate::fixtures::dump("multihost-1000", &md, &html);
    assert!(md.lines().count() < 260, "{} lines", md.lines().count());
    assert!(md.contains("… 984 more pairs"));
    assert!(html.contains("<details><summary>mesh: endpoint pairs: all 1000 pairs</summary>"));
    assert_eq!(
        html.matches("<td>c17</td><td>s09</td>").count(),
        1,
        "each pair once, folded"
    );
}

#[test]
fn a_comparison_matches_hosts_and_names_the_ones_on_one_side() {
    let base = multi_stream_doc(&CLIENTS, &["s1"], 1.0);
    let cand = multi_stream_doc(&["c1", "c2", "c3", "c5"], &["s1"], 1.1);
    let (b, c) = (mh(&base), mh(&cand));
    let labels = ["base".to_string(), "cand".to_string()];
    let t = host_comparison("mesh", Kind::NetStream, &[Some(&b), Some(&c)], &labels);
    let names: Vec<&str> = t.rows.iter().map(|r| r.cells[0].as_str()).collect();
    assert_eq!(
        names,
        [
            "s1",
            "c1",
            "c2",
            "c3",
            "c4 (only in base)",
            "c5 (only in cand)",
            "total",
            "total"
        ]
    );
    let c4 = t
        .rows
        .iter()
        .find(|r| r.cells[0].starts_with("c4"))
        .unwrap();
    assert!(c4.cell_diff[0]);
    assert_eq!(c4.cells[col(&t, "Mbit/s cand")], "–");
    // c1 is the same host at 1.1 × the rate.
    assert_eq!(row(&t, "c1", "client")[col(&t, "Δ Mbit/s cand")], "+10.0 %");
    let clients = row(&t, "total", "clients");
    assert_eq!(
        clients[col(&t, "Mbit/s cand")],
        num(Some(cand.metrics["mbit_s"]))
    );
    let chart = chart_rows(Kind::NetStream, &[Some(&b), Some(&c)]);
    assert_eq!(chart.len(), 6);
    assert_eq!(
        chart[4].values,
        vec![Some(base.hosts[4].metrics["mbit_s"]), None]
    );
    let (md, html) = render(&[
        multi_host_run(1, "base", base),
        multi_host_run(2, "cand", cand),
    ]);
    crate::fixtures::dump("multihost-compare", &md, &html);
    insta::assert_snapshot!("multi_host_compare_md", md);
    assert!(html.contains("mesh: Mbit/s per host"));
}

/// Disk hosts: IOPS per % CPU beside each host's IOPS and CPU, one
/// totals row for all hosts, the IOPS checked against the total.
#[test]
fn disk_hosts_have_one_totals_row_and_their_iops_per_cpu() {
    let host = |name: &str, iops: f64, cpu: f64| HostFigures {
        name: name.into(),
        role: "disk".into(),
        cpus: 8,
        metrics: iotoll_model::metrics::of(&[
            ("iops", iops),
            ("mb_s", iops * 4096.0 / 1e6),
            ("cpu_pct", cpu),
        ]),
        ..Default::default()
    };
    let totals = iotoll_model::metrics::of(&[
        ("iops", 300_000.0),
        ("cpu_pct", 25.0),
        ("cpus", 16.0),
        ("iops_per_cpu_pct", 12_000.0),
    ]);
    let m = MultiHost {
        rep: 2,
        selected: true,
        totals,
        hosts: vec![host("d1", 100_000.0, 20.0), host("d2", 200_000.0, 30.0)],
        ..Default::default()
    };
    let t = host_table("rr4k", Kind::Disk, &m, None);
    assert_eq!(t.rows.len(), 3);
    assert_eq!(
        row(&t, "total", "all hosts")[col(&t, "IOPS per % CPU")],
        "12,000"
    );
    assert_eq!(row(&t, "d2", "disk")[col(&t, "IOPS per % CPU")], "6,667");
    // 30 % of 8 CPUs = 2.4 CPU-s per s over 200,000 I/Os = 12 µs.
    assert_eq!(row(&t, "d2", "disk")[col(&t, "CPU µs per I/O")], "12.0");
    assert!(!t.note.unwrap().contains('⚠'), "the parts add up");
}

#[test]
fn a_multi_host_report() {
    let (md, html) = render(&[multi_host_run(
        1,
        "base",
        multi_stream_doc(&CLIENTS, &["s1"], 1.0),
    )]);
    insta::assert_snapshot!("multi_host_report_md", md);
    assert!(html.contains("<h2 id=\"hosts\">Multi-host tests</h2>"));
    assert!(html.contains("Window skew: the hosts' windows opened within 48.5 µs"));
    crate::fixtures::dump("multihost", &md, &html);
}

/// issue 28: on one machine whose lab hosts have CPUs of their own, the
/// note says which sets are counted once, not that the machine is.
#[test]
fn one_machine_with_own_cpus_counts_each_set_once() {
    let host = |name: &str, own: Option<Vec<u32>>| HostFigures {
        name: name.into(),
        boot_id: Some("k".into()),
        cpu: Some(iotoll_model::CpuReport {
            own_cpus: own,
            ..Default::default()
        }),
        ..Default::default()
    };
    let shared = [host("a", None), host("b", None)];
    assert_eq!(
        shared_kernels(&shared).as_deref(),
        Some("One machine (same kernel boot id), its CPU counted once in the totals: a, b.")
    );
    let own = [
        host("server", Some(vec![0])),
        host("c1", Some(vec![1])),
        host("c2", Some(vec![1])),
    ];
    let n = shared_kernels(&own).unwrap();
    assert!(
        n.ends_with("each set counted once in the totals: server (CPUs 0); c1, c2 (CPUs 1)."),
        "{n}"
    );
}

/// rr across hosts: each pair's transactions/s and round-trip
/// percentiles, and the test's (the merged histogram's, which the result
/// states), in the Markdown and HTML reports and `results show`; a stream
/// test has no such table.
#[test]
fn rr_pairs_show_their_transactions_and_round_trips() {
    let mut d = multi_stream_doc(&["c1", "c2"], &["srv"], 1.0);
    assert!(pair_figures::pair_table("", &d.pairs, &d.metrics).is_none());
    d.kind = Kind::NetRr;
    let figures = [
        (12_345.0, 61.0, 180.0, 950.0),
        (6_789.0, 75.0, 2_400.0, 9_100.0),
    ];
    for (p, (t, p50, p99, p999)) in d.pairs.iter_mut().zip(figures) {
        p.transactions = Some((t * 10.0) as u64);
        p.metrics = iotoll_model::metrics::of(&[
            (mn::TRANS_S, t),
            (mn::RTT_P50_US, p50),
            (mn::RTT_P99_US, p99),
            (mn::RTT_P999_US, p999),
        ]);
    }
    // The merged histogram's: not the pairs' means (120.5, 1,290, 5,025).
    for (k, v) in [
        (mn::TRANS_S, 19_134.0),
        (mn::RTT_P50_US, 64.0),
        (mn::RTT_P99_US, 1_700.0),
        (mn::RTT_P999_US, 8_800.0),
    ] {
        d.metrics.insert(k.into(), v);
    }
    let text = crate::text::host_tables(&d, "");
    let (md, html) = render(&[multi_host_run(1, "rr", d)]);
    let rows = [
        "| 1 | c1 → srv | 12,345 | 61.0 | 180 | 950 |",
        "| 2 | c2 → srv | 6,789 | 75.0 | 2,400 | 9,100 |",
        "| all 2 pairs |  | 19,134 | 64.0 | 1,700 | 8,800 |",
    ];
    for r in rows {
        assert!(md.contains(r), "{r} not in:\n{md}");
    }
    assert!(md.contains("| pair | client → server | trans/s | p50 µs | p99 µs | p99.9 µs |"));
    assert!(
        html.contains("c2 → srv") && html.contains("9,100"),
        "{html}"
    );
    assert!(text.contains("per pair, transactions:"), "{text}");
    for want in ["c1 → srv", "12,345", "2,400", "all 2 pairs", "8,800"] {
        assert!(text.contains(want), "{want} not in:\n{text}");
    }
}

/// crr and UDP across hosts: each pair's own figures in their kind's
/// columns (connections/s and connect times; offered, goodput, loss),
/// and a connection-rate test has no bytes-per-pair table, whose
/// megabytes and Mbit/s would all be 0.
#[test]
fn crr_and_udp_pairs_show_their_own_figures() {
    let mut d = multi_stream_doc(&["c1", "c2"], &["srv"], 1.0);
    d.kind = Kind::NetCrr;
    for (p, conn_s) in d.pairs.iter_mut().zip([731.0, 783.0]) {
        p.metrics = iotoll_model::metrics::of(&[
            (mn::CONN_S, conn_s),
            (mn::SERVED_CONN_S, conn_s),
            (mn::CONNECT_P50_US, 410.0),
            (mn::CONNECT_P99_US, 12_300.0),
            (mn::TRANS_P50_US, 900.0),
            (mn::TRANS_P99_US, 15_000.0),
            (mn::FAILURES, 0.0),
        ]);
    }
    d.metrics.insert(mn::CONN_S.into(), 1_514.0);
    let text = crate::text::host_tables(&d, "");
    assert!(text.contains("per pair, connections (crr):"), "{text}");
    assert!(
        text.contains("connect p99 µs") && text.contains("12,300"),
        "{text}"
    );
    assert!(text.contains("1,514"), "{text}");
    assert!(!text.contains("client->server MB"), "{text}");
    let (md, _) = render(&[multi_host_run(1, "crr", d.clone())]);
    assert!(md.contains("| 1 | c1 → srv | 731 | 731 |"), "{md}");
    // Failures are a count: 0, not 0.00.
    assert!(md.contains("| 900 | 15,000 | 0 |"), "{md}");
    assert!(!md.contains("client → server Mbit/s"), "{md}");

    d.kind = Kind::NetUdp;
    for p in d.pairs.iter_mut() {
        p.metrics = iotoll_model::metrics::of(&[
            (mn::OFFERED_MBIT_S, 40.0),
            (mn::MBIT_S, 25.0),
            (mn::DATAGRAMS_SENT, 15_000.0),
            (mn::DATAGRAMS_RECEIVED, 9_375.0),
            (mn::DATAGRAMS_LOST, 5_625.0),
            (mn::LOSS_PCT, 37.5),
            (mn::JITTER_US, 120.0),
        ]);
    }
    let text = crate::text::host_tables(&d, "");
    assert!(text.contains("per pair, datagrams:"), "{text}");
    assert!(
        text.contains("37.5") && text.contains("offered Mbit/s"),
        "{text}"
    );
    assert!(text.contains("client->server MB"), "{text}");
}
