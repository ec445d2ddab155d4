use super::*;
use crate::{RepRow, RunRow};
use serde_json::{json, Value};

/// Names the document's access specification.
fn name_spec(doc: &mut ResultDoc, name: &str) {
    let mut s = doc.spec.to_value();
    s["spec"] = name.into();
    doc.spec = iotoll_model::spec::Spec::of(doc.kind, s);
}

/// The long CSV's records (under its header).
fn records(out: &str) -> Vec<csv::StringRecord> {
    let mut r = csv::Reader::from_reader(out.as_bytes());
    r.records().map(Result::unwrap).collect()
}

/// The Iometer export's records, header block included.
fn iometer_records(text: &str) -> Vec<csv::StringRecord> {
    let mut r = csv::ReaderBuilder::new();
    let r = r
        .has_headers(false)
        .flexible(true)
        .from_reader(text.as_bytes());
    r.into_records().map(Result::unwrap).collect()
}

/// Repetition `rep`: a complete result of `kind` with `spec` and `metrics`.
fn result(rep: i64, kind: &str, config: &str, spec: Value, metrics: Value) -> RepRow {
    let doc = iotoll_model::fixtures::doc(kind, spec, metrics);
    RepRow {
        rep,
        status: iotoll_model::ResultStatus::Complete,
        doc: ResultDoc {
            config: Some(config.into()),
            ..doc
        },
    }
}

fn disk_rep(rep: i64, iops: f64, read_iops: f64, cpu: f64) -> RepRow {
    let spec = json!({
        "spec": "db-oltp-8k", "workers": 1, "qd": 28, "offset": 0, "size": 4294967296u64,
        "logical_block_size": 512
    });
    let metrics = json!({
        "window_s": 10.0, "iops": iops, "read_iops": read_iops, "write_iops": iops - read_iops,
        "mb_s": iops * 8192.0 / 1e6, "read_mb_s": read_iops * 8192.0 / 1e6,
        "write_mb_s": (iops - read_iops) * 8192.0 / 1e6, "lat_mean_us": 250.0, "lat_max_us": 4000.0,
        "errors": 0.0, "cpu_pct": cpu, "cpu_user_pct": 1.0, "cpu_system_pct": cpu - 2.0,
        "cpu_softirq_pct": 0.5, "cpu_irq_pct": 0.5, "cpu_nominal_mhz": 2600.0,
        "interrupts_s": 5000.0, "iops_per_cpu_pct": iops / cpu
    });
    result(rep, "disk", "hba", spec, metrics)
}

fn run() -> RunDetail {
    let reps = vec![
        disk_rep(1, 1000.0, 700.0, 10.0),
        disk_rep(2, 1100.0, 770.0, 11.0),
    ];
    RunDetail {
        run: RunRow {
            id: 7,
            suite: "iscsi-initiator-study".into(),
            config: Some("hba, port 1".into()),
            started_at: "2026-11-22T00:00:00Z".into(),
            finished_at: Some("2026-11-22T01:00:00Z".into()),
            status: iotoll_model::RunStatus::Complete,
            notes: vec![],
            tests: 1,
        },
        disclosure: None,
        suite_text: None,
        tests: vec![TestRow {
            seq: 1,
            name: "small-block/spec=db-oltp-8k".into(),
            kind: iotoll_model::Kind::Disk,
            group: Some("iops".into()),
            params: json!({"spec": "db-oltp-8k"}),
            select: "median:iops".into(),
            selected_rep: Some(1),
            spread_pct: Some(10.0),
            repeatable: Some(false),
            summary: None,
            ci95: None,
            confidence: None,
            reps,
        }],
    }
}

#[test]
fn long_csv() {
    insta::assert_snapshot!(csv(&run()));
}

#[test]
fn csv_export_imports_back_with_newlines_and_commas_in_fields() {
    let (name, group) = ("read,\n\"4k\"", "g,\r\n1");
    let mut r = run();
    (r.tests[0].name, r.tests[0].group) = (name.into(), Some(group.into()));
    let out = csv(&r);
    let mut recs = records(&out);
    recs.retain(|rec| &rec[5] == "true");
    assert!(recs.iter().all(|rec| (&rec[2], &rec[3]) == (name, group)));
    // The selected repetition's rows as a table `results import` takes.
    let mut w = writer();
    let _ = w.write_record(
        ["test", "group"]
            .into_iter()
            .chain(recs.iter().map(|r| &r[6])),
    );
    let _ = w.write_record([name, group].into_iter().chain(recs.iter().map(|r| &r[7])));
    let back = crate::import::table(text(w).as_bytes(), "t.csv").unwrap();
    assert_eq!(
        (back[0].name.as_str(), back[0].group.as_deref()),
        (name, Some(group))
    );
    assert_eq!(back[0].doc.metrics["iops"], 1000.0);
    // Iometer's layout quotes the same way.
    r.run.suite = "study,\n2".into();
    name_spec(&mut r.tests[0].reps[0].doc, name);
    let recs = iometer_records(&iometer_csv(&r).unwrap().text);
    assert_eq!(
        (recs.len(), &recs[1][1], &recs[8][2]),
        (9, "study,\n2", name)
    );
}

#[test]
fn csv_exports_defuse_formula_cells_but_keep_numbers() {
    let hostile = [
        "=HYPERLINK(\"http://x\",\"y\")",
        "=cmd|' C calc'!A0",
        "@SUM(A1:A2)",
        "+1+1",
        "-2+3",
        "\tx",
        "\rx",
    ];
    for h in hostile {
        let mut r = run();
        r.run.config = Some(h.into());
        r.run.suite = h.into();
        r.tests[0].name = h.into();
        r.tests[0].group = Some(h.into());
        name_spec(&mut r.tests[0].reps[0].doc, h);
        r.tests[0].reps[0]
            .doc
            .metrics
            .insert("latency_us".into(), -5.0);
        let recs = records(&csv(&r));
        let want = format!("'{h}");
        for rec in &recs {
            assert_eq!((&rec[1], &rec[2], &rec[3]), (&*want, &*want, &*want));
        }
        // A figure the code wrote from an f64 stays a number.
        assert!(recs
            .iter()
            .any(|rec| &rec[6] == "latency_us" && &rec[7] == "-5"));
        let recs = iometer_records(&iometer_csv(&r).unwrap().text);
        assert_eq!(&recs[1][1], want, "suite");
        assert_eq!(&recs[8][2], want, "access specification (test name)");
        for rec in &recs {
            for c in rec {
                assert!(
                    !c.starts_with(['=', '+', '@', '\t', '\r'])
                        && (!c.starts_with('-') || c.parse::<f64>().is_ok()),
                    "{c:?} in {rec:?}"
                );
            }
        }
    }
    for (cell, want) in [
        ("-1.5e-3", "-1.5e-3"),
        ("-inf", "'-inf"),
        ("-", "'-"),
        ("'Target Type", "'Target Type"),
        ("read 4k", "read 4k"),
    ] {
        assert_eq!(csv_cell(cell), want);
    }
}

#[test]
fn iometer_results_csv() {
    let e = iometer_csv(&run()).unwrap();
    assert!(e.skipped.is_empty());
    let out = e.text;
    assert_eq!(cells(&out, 7), IOMETER_COLUMNS, "the header");
    // The selected repetition (rep 1), Iometer's units: ms, decimal MB/s.
    Row(&out, 8).has(&[
        ("IOps", "1000"),
        ("Average Response Time", "0.25"),
        ("MBps (Decimal)", "8.192"),
        ("% CPU Utilization", "10"),
        ("CPU Effectiveness", "100"),
        ("Read I/Os", "7000"),
        ("Maximum Size", "8388608"),
        // Not measured: empty, never 0.
        ("Average Read Response Time", ""),
    ]);
    insta::assert_snapshot!(out);
}

/// run() as one network test of `kind`, its repetition 1 selected.
fn net_run(kind: &str, metrics: Value, spec: Value) -> RunDetail {
    let mut r = run();
    r.run.suite = "net-stream".into();
    r.disclosure = Some(json!({"host": "lab-a"}));
    let t = &mut r.tests[0];
    t.name = match kind {
        "net-rr" => "rr/req=1k,resp=16k,conns=2,burst=4".into(),
        _ => "stream/dir=bidir,conns=4,msg=64k".into(),
    };
    t.kind = kind.parse().unwrap();
    t.group = None;
    t.params = json!({});
    t.select = "median".into();
    (t.spread_pct, t.repeatable) = (None, None);
    t.reps = vec![result(1, kind, "mtu9000", spec, metrics)];
    r
}

/// One CSV line split into cells, quotes honoured.
fn cells(out: &str, line: usize) -> Vec<String> {
    let l = out.lines().nth(line).unwrap();
    let row: Vec<String> = iometer_records(l)[0].iter().map(String::from).collect();
    assert_eq!(row.len(), IOMETER_COLUMNS.len(), "{l}");
    row
}

fn col<'a>(row: &'a [String], name: &str) -> &'a str {
    &row[IOMETER_COLUMNS.iter().position(|c| *c == name).unwrap()]
}

#[test]
fn iometer_network_stream() {
    let r = net_run(
        "net-stream",
        json!({
            "window_s": 10.0, "mbit_s": 1200.0, "tx_mbit_s": 800.0, "rx_mbit_s": 400.0,
            "conns": 4.0, "retransmits": 25.0, "errors": 0.0,
            "cpu_pct": 40.0, "cpu_user_pct": 2.0, "cpu_system_pct": 30.0,
            "cpu_softirq_pct": 7.0, "cpu_irq_pct": 1.0, "interrupts_s": 20000.0,
            "remote_cpu_pct": 20.0, "remote_cpu_user_pct": 1.0, "remote_cpu_system_pct": 15.0,
            "mbit_s_per_cpu_pct": 30.0
        }),
        json!({"peer": "10.0.0.2:7575", "conns": 4, "dir": "bidir", "msg": 65536}),
    );
    let out = iometer_csv(&r).unwrap().text;
    // ALL, this host's MANAGER and its WORKER, the endpoint's MANAGER
    // and its WORKER (no CPU window in the fixture: no PROCESSOR rows).
    assert_eq!(out.lines().count(), 13, "{out}");
    assert_eq!(
        kinds_and_names(&result_rows(&out))[2],
        pair("WORKER", "lab-a worker")
    );
    worker_has(&out, 10, "Write MBps (Decimal)", "100");
    Row(&out, 8).has(&[
        ("'Target Type", "ALL"),
        (
            "Access Specification Name",
            "stream/dir=bidir,conns=4,msg=64k",
        ),
        ("# Managers", "2"),
        ("MBps (Decimal)", "150"),
        ("Write MBps (Decimal)", "100"),
        ("Read MBps (Decimal)", "50"),
        ("Bytes Written", "1000000000"),
        ("% CPU Utilization", "40"),
        ("Segments Retransmitted/Second", "2.5"),
        // send/recv calls are not counted: empty, never 0.
        ("IOps", ""),
        ("Transactions per Second", ""),
    ]);
    Row(&out, 11).has(&[
        ("'Target Type", "MANAGER"),
        ("Target Name", "10.0.0.2:7575"),
        // The endpoint's own CPU.
        ("% CPU Utilization", "20"),
        // The endpoint reads what we send.
        ("Read MBps (Decimal)", "100"),
    ]);
    insta::assert_snapshot!(out);
}

#[test]
fn iometer_network_rr() {
    let r = net_run(
        "net-rr",
        json!({
            "window_s": 10.0, "trans_s": 20000.0, "conns": 2.0, "errors": 0.0,
            "rtt_mean_us": 400.0, "rtt_max_us": 2500.0,
            "cpu_pct": 25.0, "cpu_user_pct": 5.0, "cpu_system_pct": 15.0
        }),
        json!({"peer": "[::1]:7575", "conns": 2, "req": 1000, "resp": 16000, "burst": 4}),
    );
    let out = iometer_csv(&r).unwrap().text;
    // No endpoint CPU measured: ALL and this host's MANAGER and WORKER only.
    assert_eq!(out.lines().count(), 11, "{out}");
    Row(&out, 8).has(&[
        ("Transactions per Second", "20000"),
        // A request write and a response read.
        ("IOps", "40000"),
        ("Write MBps (Decimal)", "20"),
        ("Read MBps (Decimal)", "320"),
        ("Average Transaction Time", "0.4"),
        ("Maximum Transaction Time", "2.5"),
        ("Queue Depth", "4"),
        ("CPU Effectiveness", "1600"),
        // Per-message latency is not measured.
        ("Average Response Time", ""),
    ]);
    Row(&out, 9).has(&[("Target Name", "lab-a")]);
    insta::assert_snapshot!(out);
}

/// A host's CPUs, each `busy` % of its time (user, system and softirq
/// 2:1:1).
fn cores(busy: &[f64]) -> iotoll_model::CpuReport {
    let core = |(cpu, busy): (usize, &f64)| iotoll_model::CpuCore {
        cpu: cpu as u32,
        busy_pct: *busy,
        modes: iotoll_model::CpuModes {
            user: busy / 2.0,
            system: busy / 4.0,
            softirq: busy / 4.0,
            idle: 100.0 - busy,
            ..Default::default()
        },
    };
    iotoll_model::CpuReport {
        cpus: busy.len() as u32,
        per_core: busy.iter().enumerate().map(core).collect(),
        ..Default::default()
    }
}

/// issue 23 §7: PROCESSOR rows per CPU of each manager of a network
/// test; an endpoint on this very kernel has no CPUs of its own.
#[test]
fn iometer_network_managers_have_their_processors() {
    for (same_host, want) in [(Some(false), 2 + 4), (Some(true), 2)] {
        let mut r = net_run(
            "net-stream",
            json!({"window_s": 10.0, "mbit_s": 800.0, "tx_mbit_s": 800.0, "rx_mbit_s": 0.0,
                   "cpu_pct": 40.0, "remote_cpu_pct": 20.0}),
            json!({"peer": "10.0.0.2:7575", "conns": 4, "dir": "tx", "msg": 65536}),
        );
        let cpu = &mut r.tests[0].reps[0].doc.cpu;
        let (local, remote) = (cores(&[10.0, 20.0]), cores(&[10.0, 20.0, 30.0, 40.0]));
        (cpu.local, cpu.remote, cpu.same_host) = (Some(local), Some(remote), same_host);
        let out = iometer_csv(&r).unwrap().text;
        let rows = kinds_and_names(&result_rows(&out));
        let procs: Vec<&(String, String)> = rows.iter().filter(|r| r.0 == "PROCESSOR").collect();
        assert_eq!(procs.len(), want, "{out}");
        // This host's two come right after its MANAGER row.
        assert_eq!(rows[1].0, "MANAGER", "{out}");
        assert_eq!(
            (&rows[2].1, &rows[3].1),
            (&"CPU 0".to_string(), &"CPU 1".to_string())
        );
        assert_eq!(
            col(&cells(&out, 11), "% CPU Utilization"),
            "20",
            "CPU 1's own"
        );
    }
}

/// issue 23 §7: separate read and write response times.
#[test]
fn iometer_has_read_and_write_response_times() {
    let mut r = run();
    let m = &mut r.tests[0].reps[0].doc.metrics;
    for (k, v) in [
        ("read_lat_mean_us", 200.0),
        ("write_lat_mean_us", 350.0),
        ("read_lat_max_us", 4000.0),
        ("write_lat_max_us", 2500.0),
    ] {
        m.insert(k.into(), v);
    }
    let out = iometer_csv(&r).unwrap().text;
    let all = cells(&out, 8);
    assert_eq!(col(&all, "'Target Type"), "ALL", "{out}");
    assert_eq!(
        [
            "Average Read Response Time",
            "Average Write Response Time",
            "Maximum Read Response Time",
            "Maximum Write Response Time"
        ]
        .map(|k| col(&all, k).to_string()),
        ["0.2", "0.35", "4", "2.5"]
    );
}

/// issue 23 §7: a multi-host run's long CSV has its hosts, pairs and
/// adapters beside the totals (a `level` column), and they add up.
#[test]
fn long_csv_has_every_level_of_a_multi_host_run() {
    let mut r = net_run(
        "net-stream",
        json!({"window_s": 10.0, "mbit_s": 1600.0, "cpu_pct": 20.0}),
        json!({"dir": "tx", "conns": 4, "msg": 65536}),
    );
    let host = |name: &str, mbit: f64| iotoll_model::HostFigures {
        name: name.into(),
        role: "client".into(),
        metrics: iotoll_model::metrics::of(&[("mbit_s", mbit)]),
        ifaces: vec![
            iotoll_model::IfaceFigures {
                name: "eth0".into(),
                tx_bytes: 600_000_000,
                ..Default::default()
            }
            .with_rates(10.0),
            iotoll_model::IfaceFigures {
                name: "eth1".into(),
                tx_bytes: 400_000_000,
                ..Default::default()
            }
            .with_rates(10.0),
        ],
        ..Default::default()
    };
    let d = &mut r.tests[0].reps[0].doc;
    d.hosts = vec![host("c1", 800.0), host("c2", 800.0)];
    // 1,000,000,000 bytes each in 10 s.
    let pair = |c| iotoll_model::fixtures::pair(c, "s1", 800.0);
    d.pairs = vec![pair("c1"), pair("c2")];
    let out = csv(&r);
    let recs = records(&out);
    let sum = |level: &str, metric: &str| -> f64 {
        (recs.iter())
            .filter(|r| &r[9] == level && &r[6] == metric)
            .map(|r| r[7].parse::<f64>().unwrap())
            .sum()
    };
    assert_eq!(sum("total", "mbit_s"), 1600.0);
    assert_eq!(sum("host", "mbit_s"), 1600.0, "{out}");
    assert_eq!(sum("pair", "mbit_s"), 1600.0, "{out}");
    assert_eq!(sum("adapter", "tx_bytes"), 2e9, "{out}");
    assert_eq!(sum("adapter", "tx_mbit_s"), 1600.0, "{out}");
    let parts: std::collections::BTreeSet<(String, String)> = (recs.iter())
        .map(|r| (r[9].to_string(), r[10].to_string()))
        .collect();
    for want in [("host", "c1"), ("pair", "c2->s1"), ("adapter", "c1/eth1")] {
        assert!(parts.contains(&(want.0.into(), want.1.into())), "{parts:?}");
    }
}

/// issue 23 §6: the 95 % CI of the selection metric is exported.
#[test]
fn long_csv_has_the_confidence_interval() {
    let mut r = run();
    let t = &mut r.tests[0];
    t.reps = vec![
        disk_rep(1, 1000.0, 700.0, 10.0),
        disk_rep(2, 1100.0, 770.0, 10.0),
        disk_rep(3, 1200.0, 840.0, 10.0),
    ];
    t.ci95 = t.compute_ci95();
    let out = csv(&r);
    let ci = iotoll_model::Ci95::of("iops", [1000.0, 1100.0, 1200.0]).unwrap();
    assert!(
        out.contains(&format!(",ci95_low,false,iops,{},", ci.low)),
        "{out}"
    );
    assert!(
        out.contains(&format!(",ci95_high,false,iops,{},", ci.high)),
        "{out}"
    );
}

/// A multi-host stream test: the ALL row of its totals, then one
/// MANAGER row per host with its own figures and CPU.
#[test]
fn iometer_multi_host_stream_has_a_manager_per_host() {
    let mut r = net_run(
        "net-stream",
        json!({"window_s": 10.0, "mbit_s": 1600.0, "tx_mbit_s": 1600.0, "rx_mbit_s": 0.0,
               "cpu_pct": 20.0, "remote_cpu_pct": 30.0}),
        json!({"dir": "tx", "conns": 4, "msg": 65536}),
    );
    let host =
        |name, role, tx, rx, cpu| iotoll_model::fixtures::stream_host(name, role, 4, tx, rx, cpu);
    r.tests[0].reps[0].doc.hosts = vec![
        host("s1", "server", 0.0, 1600.0, 30.0),
        host("c1", "client", 800.0, 0.0, 18.0),
        host("c2", "client", 800.0, 0.0, 22.0),
    ];
    // The server's two CPUs, each with its own figures.
    r.tests[0].reps[0].doc.hosts[0].cpu = Some(iotoll_model::CpuReport {
        busy_pct: 30.0,
        ..cores(&[40.0, 20.0])
    });
    let out = iometer_csv(&r).unwrap().text;
    // Header block (6), the results header (2), ALL, then per host its
    // MANAGER, its PROCESSOR rows and its WORKER.
    assert_eq!(out.lines().count(), 8 + 1 + 3 * 2 + 2, "{out}");
    let kinds = kinds_and_names(&result_rows(&out));
    let want = [
        ("ALL", "All"),
        ("MANAGER", "s1"),
        ("PROCESSOR", "CPU 0"),
        ("PROCESSOR", "CPU 1"),
        ("WORKER", "s1 worker"),
        ("MANAGER", "c1"),
        ("WORKER", "c1 worker"),
        ("MANAGER", "c2"),
        ("WORKER", "c2 worker"),
    ];
    assert_eq!(kinds, pairs(&want), "{out}");
    Row(&out, 10).has(&[
        ("% CPU Utilization", "40"),
        ("% User Time", "20"),
        ("% DPC Time", "10"),
    ]);
    worker_has(&out, 12, "Read MBps (Decimal)", "200");
    Row(&out, 8).has(&[
        ("'Target Type", "ALL"),
        ("# Managers", "3"),
        ("Write MBps (Decimal)", "200"),
        ("% CPU Utilization", "20"),
    ]);
    assert_eq!(kinds[1], pair("MANAGER", "s1"));
    Row(&out, 9).has(&[
        // The server received it all, over the test's window.
        ("Read MBps (Decimal)", "200"),
        ("Bytes Read", "2000000000"),
        // Its own CPU.
        ("% CPU Utilization", "30"),
    ]);
    Row(&out, 15).has(&[
        ("Target Name", "c2"),
        ("Write MBps (Decimal)", "100"),
        ("% CPU Utilization", "22"),
    ]);
}

/// The `counts` and `metrics` of `reads` and `writes` 8 KiB I/Os over
/// run()'s 10 s window.
fn io(reads: u64, writes: u64, lat_mean_us: f64) -> (Value, Value) {
    let (ios, bytes) = (reads + writes, (reads + writes) * 8192);
    let counts = json!({"reads": reads, "writes": writes, "read_bytes": reads * 8192,
        "write_bytes": writes * 8192});
    let metrics = json!({
        "errors": 0, "iops": ios as f64 / 10.0, "read_iops": reads as f64 / 10.0,
        "write_iops": writes as f64 / 10.0, "mb_s": bytes as f64 / 10.0 / 1e6,
        "read_mb_s": (reads * 8192) as f64 / 10.0 / 1e6,
        "write_mb_s": (writes * 8192) as f64 / 10.0 / 1e6, "lat_mean_us": lat_mean_us,
        "lat_p99_us": 900.0, "lat_max_us": 4000.0
    });
    (counts, metrics)
}

fn target(path: &str, workers: &[u32], reads: u64, writes: u64) -> Value {
    let (counts, metrics) = io(reads, writes, 250.0);
    json!({"target": path, "target_kind": "block-device", "workers": workers,
           "counts": counts, "metrics": metrics})
}

fn worker(n: u32, targets: &[u32], reads: u64, writes: u64, lat: f64) -> Value {
    let (counts, metrics) = io(reads, writes, lat);
    json!({"id": n, "cpu": n, "targets": targets, "pinned": null, "ran_on": [n],
           "pinned_busy_pct": null, "counts": counts, "metrics": metrics})
}

/// Sets the per-target and per-worker figures of `doc` from `parts`.
fn set_parts(doc: &mut iotoll_model::ResultDoc, parts: &Value) {
    doc.targets = serde_json::from_value(parts["targets"].clone()).unwrap();
    doc.workers = serde_json::from_value(parts["workers"].clone()).unwrap();
}

/// run() with per-target and per-worker figures on the selected
/// repetition (rep 1: 7000 reads and 3000 writes in 10 s, 1000 IOPS).
fn run_with(parts: Value) -> RunDetail {
    let mut r = run();
    set_parts(&mut r.tests[0].reps[0].doc, &parts);
    r
}

/// `spread`: 2 workers, each on both targets; per-worker and per-target
/// totals only.
fn spread_run() -> RunDetail {
    run_with(json!({
        "targets": [
            target("/dev/sdb", &[0, 1], 5000, 1500),
            target("/dev/sdc", &[0, 1], 2000, 1500)
        ],
        "workers": [worker(0, &[0, 1], 4000, 2000, 240.0), worker(1, &[0, 1], 3000, 1000, 265.0)],
        "lines": []
    }))
}

/// A worker per target, 2 per target: 4 workers, each on one target.
fn nested_run() -> RunDetail {
    run_with(json!({
        "targets": [
            target("/dev/sdb", &[0, 1], 5000, 1500),
            target("/dev/sdc", &[2, 3], 2000, 1500)
        ],
        "workers": [
            worker(0, &[0], 2500, 750, 240.0), worker(1, &[0], 2500, 750, 250.0),
            worker(2, &[1], 1000, 750, 255.0), worker(3, &[1], 1000, 750, 260.0)
        ],
        "lines": []
    }))
}

/// The results rows (after the header block) as cells.
fn result_rows(out: &str) -> Vec<Vec<String>> {
    (8..out.lines().count()).map(|i| cells(out, i)).collect()
}

fn kinds_and_names(rows: &[Vec<String>]) -> Vec<(String, String)> {
    rows.iter()
        .map(|r| (col(r, "'Target Type").into(), col(r, "Target Name").into()))
        .collect()
}

fn pair(a: &str, b: &str) -> (String, String) {
    (a.to_string(), b.to_string())
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter().map(|(a, b)| pair(a, b)).collect()
}

/// The Iometer export of `r` and its results rows.
fn breakdown(r: &RunDetail) -> (String, Vec<Vec<String>>) {
    let out = iometer_csv(r).unwrap().text;
    let rows = result_rows(&out);
    (out, rows)
}

/// Row `line` of an Iometer export, to check its cells.
struct Row<'a>(&'a str, usize);

impl Row<'_> {
    /// Each (column, value) is as the row has it.
    #[track_caller]
    fn has(&self, want: &[(&str, &str)]) {
        let Row(out, line) = *self;
        let row = cells(out, line);
        for (k, v) in want {
            assert_eq!(col(&row, k), *v, "line {line}, {k}:\n{out}");
        }
    }
}

/// A WORKER row (line `line`): its host's figures (`column` is `value`),
/// no CPU (Iometer's CPU columns are the manager's).
#[track_caller]
fn worker_has(out: &str, line: usize, column: &str, value: &str) {
    let w = cells(out, line);
    assert_eq!(col(&w, column), value, "the host's figures");
    assert_eq!(col(&w, "% CPU Utilization"), "", "CPU is the manager's");
}

#[test]
fn iometer_breakdown_spread_rows() {
    let (out, rows) = breakdown(&spread_run());
    let want = [
        ("ALL", "All"),
        ("MANAGER", "local"),
        ("WORKER", "Worker 0"),
        ("WORKER", "Worker 1"),
        ("DISK", "/dev/sdb"),
        ("DISK", "/dev/sdc"),
    ];
    assert_eq!(kinds_and_names(&rows), pairs(&want));
    let c = |row: usize, name: &str| col(&rows[row], name).to_string();
    // Iometer's counts: 2 workers, 2 targets each.
    Row(&out, 8).has(&[("# Workers", "2"), ("# Disks", "4")]);
    assert_eq!(
        c(1, "# Managers"),
        "",
        "Iometer leaves it empty on MANAGER rows"
    );
    for k in [
        "IOps",
        "% CPU Utilization",
        "CPU Effectiveness",
        "Read I/Os",
    ] {
        assert_eq!(c(1, k), c(0, k), "MANAGER = ALL: {k}");
    }
    assert_eq!(c(2, "IOps"), "600");
    assert_eq!(c(2, "Read IOps"), "400");
    assert_eq!(c(2, "Write IOps"), "200");
    assert_eq!(c(2, "Read I/Os"), "4000");
    assert_eq!(c(2, "Bytes Written"), "16384000");
    assert_eq!(c(2, "Average Response Time"), "0.24");
    assert_eq!(c(2, "Transactions per Second"), "600");
    assert_eq!(c(2, "# Disks"), "2");
    assert_eq!(c(2, "Access Specification Name"), "db-oltp-8k");
    assert_eq!(c(2, "Queue Depth"), "28");
    assert_eq!(c(4, "IOps"), "650", "the target's totals, all its workers");
    assert_eq!(c(4, "Access Specification Name"), "");
    for row in 2..6 {
        for k in [
            "% CPU Utilization",
            "% User Time",
            "Processor Speed",
            "CPU Effectiveness",
        ] {
            assert_eq!(c(row, k), "", "per-worker CPU is not measured: {k}");
        }
        assert_eq!(c(row, "Average Read Response Time"), "");
    }
    insta::assert_snapshot!(out);
}

#[test]
fn iometer_breakdown_nests_disks_under_their_worker() {
    let (out, rows) = breakdown(&nested_run());
    // Each worker, then its one target.
    let mut want = vec![pair("ALL", "All"), pair("MANAGER", "local")];
    for (w, disk) in [(0, "sdb"), (1, "sdb"), (2, "sdc"), (3, "sdc")] {
        want.push(pair("WORKER", &format!("Worker {w}")));
        want.push(pair("DISK", &format!("/dev/{disk}")));
    }
    assert_eq!(kinds_and_names(&rows), want);
    let c = |row: usize, name: &str| col(&rows[row], name).to_string();
    Row(&out, 8).has(&[("# Workers", "4"), ("# Disks", "4")]);
    // Each DISK row: its worker's I/Os on that target.
    for (w, d) in [(2, 3), (4, 5), (6, 7), (8, 9)] {
        for k in [
            "IOps",
            "Read IOps",
            "MBps (Decimal)",
            "Write I/Os",
            "Average Response Time",
        ] {
            assert_eq!(c(d, k), c(w, k), "row {d}: {k}");
        }
    }
    assert_eq!(c(3, "IOps"), "325");
    assert_eq!(c(7, "Read IOps"), "100");
    insta::assert_snapshot!(out);
}

#[test]
fn iometer_breakdown_rows_add_up_to_all() {
    for r in [spread_run(), nested_run()] {
        let rows = result_rows(&iometer_csv(&r).unwrap().text);
        let num = |row: &[String], k: &str| col(row, k).parse::<f64>().unwrap();
        for k in [
            "IOps",
            "Read IOps",
            "Write IOps",
            "MBps (Decimal)",
            "MBps (Binary)",
            "Read I/Os",
            "Bytes Written",
        ] {
            let all = num(&rows[0], k);
            for kind in ["WORKER", "DISK"] {
                let sum: f64 = rows
                    .iter()
                    .filter(|row| col(row, "'Target Type") == kind)
                    .map(|row| num(row, k))
                    .sum();
                assert!(
                    (sum - all).abs() <= 1e-9 * all,
                    "{kind} rows' {k}: {sum} vs ALL {all}"
                );
            }
        }
    }
}

#[test]
fn iometer_without_a_usable_breakdown_is_unchanged() {
    let before = iometer_csv(&run()).unwrap().text;
    // Only the selected repetition's breakdown counts.
    let mut r = run();
    let spread = spread_run().tests[0].reps[0].doc.clone();
    let rep2 = &mut r.tests[0].reps[1].doc;
    (rep2.targets, rep2.workers) = (spread.targets, spread.workers);
    assert_eq!(
        iometer_csv(&r).unwrap().text,
        before,
        "a breakdown on another rep"
    );
    // Means: no one repetition's parts add up to them.
    let mut r = spread_run();
    r.tests[0].select = "mean".into();
    r.tests[0].summary = Some(run().tests[0].reps[0].doc.metrics.clone());
    assert_eq!(iometer_csv(&r).unwrap().text, before, "means");
    // An empty breakdown says nothing.
    let r = run_with(json!({"targets": [], "workers": [], "lines": []}));
    assert_eq!(iometer_csv(&r).unwrap().text, before, "empty");
}

#[test]
fn iometer_breakdown_of_an_odd_document() {
    // A worker naming a target the breakdown does not list, a worker
    // with no I/O, and no targets at all: rows, no panic.
    let r = run_with(json!({
        "targets": [],
        "workers": [worker(0, &[7], 7000, 3000, 250.0), worker(1, &[], 0, 0, 250.0)],
        "lines": []
    }));
    let (_, rows) = breakdown(&r);
    assert_eq!(
        kinds_and_names(&rows),
        pairs(&[
            ("ALL", "All"),
            ("MANAGER", "local"),
            ("WORKER", "Worker 0"),
            ("DISK", "target 7"),
            ("WORKER", "Worker 1"),
        ])
    );
    assert_eq!(col(&rows[4], "Read IOps"), "0");
}

#[test]
fn iometer_refuses_an_empty_export() {
    let mut r = net_run("net-rr", json!({"window_s": 10.0}), json!({}));
    let e = iometer_csv(&r).unwrap_err().to_string();
    assert!(
        e.contains("run 7") && e.contains("no throughput or transaction rate"),
        "{e}"
    );
    r.tests[0].selected_rep = None;
    let e = iometer_csv(&r).unwrap_err().to_string();
    assert!(e.contains("no selected repetition"), "{e}");
    r.tests.clear();
    assert!(iometer_csv(&r)
        .unwrap_err()
        .to_string()
        .contains("no tests"));
}
