use super::*;
use crate::compare::test_data::{cfg, test as t};
use crate::info::RunInfo;
use crate::info::TestInfo;
use serde_json::Value;

fn info(name: &str, spec: Value, same_host: Option<bool>) -> RunInfo {
    RunInfo {
        tests: vec![TestInfo {
            name: name.into(),
            spec: spec.into(),
            same_host,
            ..Default::default()
        }],
        ..Default::default()
    }
}

#[test]
fn parameters_show_sizes_and_mark_differences() {
    let a = cfg("A", vec![t("x", "disk", &[])]);
    let b = cfg("B", vec![t("x", "disk", &[])]);
    let sa = serde_json::json!({"bs": 4096, "qd": 8, "ramp_s": 1.0, "time_s": 5.0, "target": "/tmp/f", "engine": "io_uring", "odd": 3, "qd_requested": 8});
    let mut sb = sa.clone();
    sb["engine"] = "psync".into();
    let p = parameters(&[a, b], &[info("x", sa, None), info("x", sb, None)]);
    let tab = &p[0];
    let col = |h: &str| tab.head.iter().position(|x| x == h);
    // Only the differing engine keeps a column; the rest is said once.
    assert_eq!(tab.head, vec!["test", "configuration", "engine"]);
    let e = col("engine").unwrap();
    assert!(tab.rows[0].cell_diff[e] && tab.rows[1].cell_diff[e]);
    assert_eq!(
        (tab.rows[0].cells[e].as_str(), tab.rows[1].cells[e].as_str()),
        ("io_uring", "psync")
    );
    let note = tab.note.clone().unwrap();
    for want in ["block size 4k", "QD 8", "ramp (s) 1", "time (s) 5", "odd=3"] {
        assert!(note.contains(want), "{want} in {note}");
    }
    assert!(to_md(tab).contains("**psync**"));
    // The depth asked of all workers is the QD column's here: not repeated.
    assert!(!note.contains("qd_requested"), "{note}");
    // Two workers at QD 8 ask for 16: that is said.
    let mut s2 = serde_json::json!({"bs": 4096, "qd": 8, "workers": 2, "qd_requested": 16});
    let two = |s: &Value| {
        parameters(
            &[cfg("A", vec![t("x", "disk", &[])])],
            &[info("x", s.clone(), None)],
        )
    };
    let tab = format!("{:?}", two(&s2)[0]);
    assert!(tab.contains("qd_requested=16"), "{tab}");
    s2["qd_requested"] = 8.into();
    assert!(!format!("{:?}", two(&s2)[0]).contains("qd_requested"));
}

/// A mixed spec on two targets: its `mix` and target count get columns;
/// the `lines` and `targets` lists behind them are not dumped as JSON.
#[test]
fn a_mixed_spec_on_targets_shows_its_mix_not_its_lists() {
    let a = cfg("A", vec![t("x", "disk", &[])]);
    let b = cfg("B", vec![t("x", "disk", &[])]);
    let sa = serde_json::json!({"spec": "iometer-file-server", "mix": "iometer-file-server",
        "ntargets": 2, "qd": 4, "engine": "io_uring", "target": "/tmp/a",
        "lines": [{"share_pct": 100, "bs": 512}], "targets": [{"path": "/tmp/a"}, {"path": "/tmp/b"}]});
    let mut sb = sa.clone();
    (sb["mix"], sb["ntargets"]) = ("60%4kr80x100+40%64kr80x100".into(), 4.into());
    let p = parameters(&[a, b], &[info("x", sa, None), info("x", sb, None)]);
    let tab = &p[0];
    assert!(
        tab.head.iter().any(|h| h == "mix") && tab.head.iter().any(|h| h == "targets"),
        "{:?}",
        tab.head
    );
    let all = format!("{:?} {:?}", tab.rows, tab.note);
    assert!(
        !all.contains("share_pct") && !all.contains("\"path\""),
        "{all}"
    );
}

#[test]
fn same_host_remote_cpu_is_not_a_second_machine() {
    let m = [
        ("mbit_s", 1000.0),
        ("cpu_pct", 50.0),
        ("remote_cpu_pct", 50.0),
        ("mbit_s_per_cpu_pct", 20.0),
    ];
    let a = [cfg("A", vec![t("s", "net-stream", &m)])];
    let same_host = |yes: bool| [info("s", Value::Null, Some(yes))];
    let tabs = metrics(&a, &same_host(true));
    let head = &tabs[0].head;
    assert!(!head.iter().any(|h| h.contains("remote")), "{head:?}");
    let all = every_metric(&a, &same_host(true));
    assert!(!all[0].rows.iter().any(|r| r.cells[0].contains("remote")));
    // A real second machine keeps its column.
    let tabs = metrics(&a, &same_host(false));
    assert!(tabs[0].head.iter().any(|h| h == "remote CPU %"));
    // Efficiency beside the CPU it is computed from: 1000 / 50.00 = 20.0.
    let r = &tabs[0].rows[0].cells;
    let col = |h: &str| tabs[0].head.iter().position(|x| x == h).unwrap();
    assert_eq!(r[col("CPU %")], "50.00");
    assert_eq!(r[col("Mbit/s per % CPU")], "20.0");
}

/// issue 23 §6: the figures the studies publish (a 95 % CI beside every
/// figure with 3+ repetitions, disk Mbit/s where the suite asks, and each
/// adapter of a multi-homed host).
mod published {
    use crate::fixtures::{doc, multi_host_run, multi_stream_doc, render, run};
    use crate::fmt::num;
    use crate::tables::*;
    use serde_json::json;

    fn disk(iops: f64, mb_s: f64) -> iotoll_model::ResultDoc {
        let m = json!({"iops": iops, "mb_s": mb_s, "cpu_pct": 10.0, "cpus": 4.0, "window_s": 10.0});
        let mut d = doc("disk", json!({"bs": 32768}), m);
        iotoll_model::derive_metrics(&mut d.metrics);
        d
    }

    /// A run whose test `read` has three repetitions (100, 110, 120 MB/s),
    /// the median selected.
    fn three_reps(unit: Option<&str>) -> iotoll_store::RunDetail {
        let mut r = run(1, "base", vec![("read", disk(3051.8, 100.0))]);
        let t = &mut r.tests[0];
        t.select = "median:mb_s".into();
        for (rep, mb) in [(2, 110.0), (3, 120.0)] {
            t.reps.push(iotoll_store::RepRow {
                rep,
                status: iotoll_model::ResultStatus::Complete,
                doc: disk(mb / 0.032768, mb),
            });
        }
        t.selected_rep = Some(2);
        t.summary = Some(t.reps[1].doc.metrics.clone());
        if let Some(u) = unit {
            t.params = json!({ "unit": u });
        }
        t.ci95 = t.compute_ci95();
        r
    }

    fn results_table(r: &iotoll_store::RunDetail) -> Table {
        let (cfg, info) = crate::load(r);
        metrics(&[cfg], &[info]).remove(0)
    }

    fn cell<'a>(t: &'a Table, head: &str) -> &'a str {
        let i = (t.head.iter().position(|h| h == head)).unwrap_or_else(|| panic!("{:?}", t.head));
        &t.rows[0].cells[i]
    }

    #[test]
    fn the_results_table_gives_the_confidence_interval() {
        let t = results_table(&three_reps(None));
        let c = iotoll_model::Ci95::of("mb_s", [100.0, 110.0, 120.0]).unwrap();
        // 110 ± 4.303 × 10 / √3 = 110 ± 24.84.
        assert!((c.half_width - 4.303 * 10.0 / 3f64.sqrt()).abs() < 1e-9);
        let want = format!(
            "MB/s {} – {} (± 22.6 %)",
            num(Some(c.low)),
            num(Some(c.high))
        );
        assert_eq!(cell(&t, "95 % CI (mean of reps)"), want);
        assert!(t.note.as_deref().unwrap_or("").contains("Student t"));
        // One repetition: no column at all (not a column of dashes).
        let one = results_table(&run(1, "base", vec![("read", disk(3051.8, 100.0))]));
        assert!(!one.head.iter().any(|h| h.contains("CI")), "{:?}", one.head);
    }

    /// A test interfered in one of its repetitions is flagged in the
    /// results table as in the suite's table and the findings (the HTML
    /// results tables had no ⚑).
    #[test]
    fn an_interfered_test_is_flagged_in_the_results_table() {
        let mut r = three_reps(None);
        assert!(!cell(&results_table(&r), "test").contains('⚑'));
        let cpu = iotoll_model::fixtures::cpu_with_others(2, 60.0, 40.0);
        r.tests[0].reps[2].doc.cpu.local = Some(cpu);
        let t = results_table(&r);
        assert_eq!(cell(&t, "test"), "read ⚑");
        assert!(t
            .note
            .as_deref()
            .unwrap_or("")
            .contains("⚑: other processes"));
    }

    #[test]
    fn disk_throughput_in_mbit_s_where_the_suite_asks() {
        let t = results_table(&three_reps(Some("mbit_s")));
        assert_eq!(cell(&t, "Mbit/s"), "880", "110 MB/s x 8");
        assert!(!t.head.iter().any(|h| h == "MB/s"), "{:?}", t.head);
        // 110 MB/s / 10 % = 11 MB/s per % = 88 Mbit/s per %.
        assert_eq!(cell(&t, "Mbit/s per % CPU"), "88.0");
        assert!(cell(&t, "95 % CI (mean of reps)").starts_with("Mbit/s 681"));
        let plain = results_table(&three_reps(None));
        assert_eq!(cell(&plain, "MB/s"), "110");
    }

    /// Study 001's server with 4 adapters: each adapter's rates from its
    /// counters, adding up to the host's wire total, which holds the
    /// payload and its headers.
    #[test]
    fn a_multi_homed_server_has_its_adapters() {
        let mut d = multi_stream_doc(&["c1", "c2", "c3", "c4"], &["srv"], 1.0);
        let window = d.metrics["window_s"];
        let payload_mbit = d.hosts[0].metrics["mbit_s"];
        // Each adapter carries one client's pair: payload plus 66 bytes of
        // headers per 1448-byte segment each way, as counters count it.
        let seg = |bytes: u64| bytes.div_ceil(1448);
        let ifaces: Vec<iotoll_model::IfaceFigures> = (d.pairs.iter().enumerate())
            .map(|(n, p)| iotoll_model::IfaceFigures {
                name: format!("eth{n}"),
                rx_bytes: p.client_to_server_bytes + 66 * seg(p.client_to_server_bytes),
                rx_packets: seg(p.client_to_server_bytes),
                tx_bytes: p.server_to_client_bytes + 66 * seg(p.server_to_client_bytes),
                tx_packets: seg(p.server_to_client_bytes),
                ..Default::default()
            })
            .collect();
        // An older document: counters only (the rates come from the window).
        d.hosts[0].ifaces = ifaces.clone();
        let r = multi_host_run(1, "base", d);
        let (cfg, _) = crate::load(&r);
        let mh = cfg.tests.iter().find_map(|t| t.multi.as_ref()).unwrap();
        let t = adapter_table("mesh", mh, None).unwrap();
        assert_eq!(t.rows.len(), 5, "4 adapters and the host's line");
        let f = |s: &str| s.replace(',', "").parse::<f64>().unwrap();
        let each: f64 = t.rows[..4].iter().map(|r| f(&r.cells[4])).sum();
        let all = f(&t.rows[4].cells[4]);
        let wire: f64 = ifaces
            .iter()
            .map(|i| (i.rx_bytes + i.tx_bytes) as f64)
            .sum::<f64>()
            * 8.0
            / window
            / 1e6;
        // Shown rounded to 3 significant digits: within half a unit each.
        assert!((all - wire).abs() <= 0.5, "{all} vs {wire}");
        assert!((each - wire).abs() <= 4.0 * 0.5, "{each} vs {wire}");
        // Headers ride on the payload: never less than it, and at most the
        // headers every counted packet can have (66 bytes each).
        let packets: u64 = ifaces.iter().map(|i| i.rx_packets + i.tx_packets).sum();
        let headers = packets as f64 * 66.0 * 8.0 / window / 1e6;
        assert!(wire >= payload_mbit && wire - payload_mbit <= headers + 1e-6);
        // Shares add up to 100 %.
        let shares: f64 = t.rows[..4].iter().map(|r| f(&r.cells[5])).sum();
        assert!((shares - 100.0).abs() <= 4.0 * 0.05, "{shares}");
        // And the report shows it.
        let (md, html) = render(&[r]);
        assert!(md.contains("mesh: per adapter") && html.contains("mesh: per adapter"));
    }
}

/// The terminal's tables: each column as wide as its widest cell (head
/// included), aligned as asked, the note's lines under the rows.
#[test]
fn text_columns_fit_their_content() {
    let mut t = Table::new("per host:", &["host", "role", "Mbit/s"]);
    for cells in [["a-long-name", "client", "9"], ["s", "server", "12,345"]] {
        t.rows.push(TRow::new(cells.map(String::from).to_vec()));
    }
    t.note = Some("one\ntwo".into());
    let text = to_text(&t, " ", "llr");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], " per host:");
    assert_eq!(lines[1], "   host         role    Mbit/s");
    assert_eq!(lines[2], "   a-long-name  client       9");
    assert_eq!(lines[3], "   s            server  12,345");
    assert_eq!(&lines[4..], ["   one", "   two"]);
    // No title: the rows at the indent itself; one letter aligns them all.
    (t.title, t.note) = (String::new(), None);
    assert!(to_text(&t, "", "l").starts_with("host         role    Mbit/s\n"));
}

/// CPU % cells keep two decimals (the efficiency beside them is checked
/// against them); a small UDP loss keeps its significant digits instead
/// of reading 0.00 (a tester saw 0.00 % where `results show` said
/// 0.0013 %).
#[test]
fn loss_keeps_its_digits_and_cpu_two_decimals() {
    assert_eq!(metric_cell(mn::LOSS_PCT, Some(0.0013), false), "0.0013");
    assert_eq!(metric_cell(mn::LOSS_PCT, Some(1.5), false), "1.50");
    assert_eq!(metric_cell(mn::CPU_PCT, Some(12.345), false), "12.35");
    assert_eq!(metric_cell(mn::CPU_PCT, Some(0.0013), false), "0.00");
}
