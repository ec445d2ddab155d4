use super::*;

/// issue 24: a non-finite figure anywhere (not only in `metrics`)
/// is left out, and the document then reads back.
#[test]
fn every_non_finite_figure_is_left_out_and_the_document_reads_back() {
    let cpu = CpuReport {
        cpus: 4,
        window_s: 1.0,
        busy_pct: f64::INFINITY,
        ..Default::default()
    };
    let metrics = serde_json::json!({"iops": 1.0});
    let mut d = crate::fixtures::doc("disk", serde_json::json!({}), metrics);
    d.metrics.insert("cpu_pct".into(), f64::NAN);
    d.cpu.local = Some(cpu.clone());
    d.hosts = vec![HostFigures {
        name: "h".into(),
        cpu: Some(cpu),
        on_us: f64::NEG_INFINITY,
        ..Default::default()
    }];
    d.pairs = vec![PairFigures {
        mbit_s: f64::NAN,
        ..Default::default()
    }];
    d.skew_us = Some(Skew {
        start: f64::INFINITY,
        stop: 0.0,
        clock: 0.0,
    });
    let text = serde_json::to_string(&d).unwrap();
    assert!(serde_json::from_str::<ResultDoc>(&text).is_err(), "damaged");
    assert!(d.drop_non_finite());
    let back: ResultDoc = serde_json::from_str(&serde_json::to_string(&d).unwrap()).unwrap();
    assert!(back.cpu.local.is_none() && back.hosts[0].cpu.is_none());
    assert_eq!((back.hosts[0].on_us, back.pairs[0].mbit_s), (0.0, 0.0));
    assert!(back.skew_us.is_none() && !back.metrics.contains_key("cpu_pct"));
    assert_eq!(back.metrics["iops"], 1.0);
    let note = back.notes.last().unwrap();
    assert!(
        note.contains("hosts[0].cpu") && note.contains("cpu.local"),
        "{note}"
    );
    assert!(!d.drop_non_finite(), "clean now");
}

/// A host of a multi-host test whose window saw `others_pct` of other
/// processes, its own agent using `self_pct`.
fn host(name: &str, boot: &str, others_pct: f64, self_pct: f64) -> HostFigures {
    let agent = TopConsumer {
        pid: name.len() as i32 * 1000,
        comm: "iotoll".into(),
        kernel_thread: false,
        cpu_pct: self_pct,
        role: Some(ROLE_SELF.into()),
    };
    HostFigures {
        name: name.into(),
        address: "192.0.2.1:7576".into(),
        role: "client".into(),
        cpus: 2,
        boot_id: Some(boot.into()),
        cpu: Some(CpuReport {
            cpus: 2,
            busy_pct: others_pct + self_pct,
            self_pct: Some(self_pct),
            top: vec![agent],
            interference: Some(Interference {
                others_pct,
                ..Default::default()
            }),
            account: Some(CpuAccount {
                self_pct,
                others_pct,
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// A host's verdict (every host [`host`] makes has one).
fn interference(h: &HostFigures) -> &Interference {
    (h.cpu.as_ref())
        .and_then(|c| c.interference.as_ref())
        .unwrap()
}

fn doc(hosts: Vec<HostFigures>) -> ResultDoc {
    let none = serde_json::json!({});
    let mut d = crate::fixtures::doc("net-stream", serde_json::Value::Null, none);
    d.hosts = hosts;
    d
}

/// Seen: other processes used 95-99 % of a lab's CPU, the stored host
/// records said `interfered: true`, and the test was not flagged.
#[test]
fn a_multi_host_test_is_interfered_when_a_host_is() {
    let mut d = doc(vec![
        host("s1", "other", 1.0, 3.0),
        host("c1", "lab", 60.0, 10.0),
        host("c2", "lab", 60.0, 10.0),
    ]);
    assert!(d.apply_interference_threshold(5.0));
    assert!(d.interfered());
    assert_eq!(d.interfered_hosts(), ["c1", "c2"]);
    let notes: Vec<&String> = (d.notes.iter())
        .filter(|n| n.starts_with(INTERFERENCE_NOTE))
        .collect();
    assert_eq!(notes.len(), 1, "once per machine: {notes:?}");
    assert!(
        notes[0].contains("hosts c1, c2 (one machine"),
        "{}",
        notes[0]
    );
    // c2's agent (10 %) is the test's own, not interference.
    assert!(notes[0].contains("50.0 %"), "{}", notes[0]);
}

/// In a lab every host's agent sees the others' agents; they are the
/// test's own, and the machine is judged once.
#[test]
fn a_labs_own_agents_do_not_interfere() {
    let mut d = doc(vec![
        host("c1", "lab", 8.0, 4.0),
        host("c2", "lab", 8.0, 4.0),
        host("s1", "lab", 8.0, 4.0),
    ]);
    for h in &mut d.hosts {
        h.metrics.insert(crate::metrics::CPU_OTHERS_PCT.into(), 8.0);
    }
    assert!(!d.apply_interference_threshold(5.0), "{:?}", d.notes);
    assert!(!d.interfered());
    assert_eq!(interference(&d.hosts[1]).others_pct, 0.0);
    // Every host's account says the same: the other two agents are
    // the test's, not others, and the parts still add up; judging
    // again moves nothing twice.
    for _ in 0..2 {
        for h in &d.hosts {
            let c = h.cpu.as_ref().unwrap();
            let a = c.account.as_ref().unwrap();
            assert_eq!((a.agents_pct, a.others_pct), (8.0, 0.0), "{}", h.name);
            assert_eq!(h.metrics[crate::metrics::CPU_OTHERS_PCT], 0.0, "{}", h.name);
            assert_eq!(a.total(), c.busy_pct);
        }
        d.apply_interference_threshold(5.0);
    }
}

/// issue 28: lab hosts with CPUs of their own are judged each on theirs:
/// a hog confined to the server's CPU flags the server, not the clients
/// that share the rest of the machine (judged together, as before).
#[test]
fn hosts_with_own_cpus_are_judged_on_them() {
    let mut d = doc(vec![
        host("server", "lab", 40.0, 10.0),
        host("c1", "lab", 1.0, 10.0),
        host("c2", "lab", 1.0, 10.0),
    ]);
    for (h, own) in d.hosts.iter_mut().zip([vec![0], vec![1], vec![1]]) {
        h.cpu.as_mut().unwrap().own_cpus = Some(own);
    }
    assert!(d.apply_interference_threshold(5.0));
    assert_eq!(d.interfered_hosts(), ["server"]);
    let notes: Vec<&String> = (d.notes.iter())
        .filter(|n| n.starts_with(INTERFERENCE_NOTE))
        .collect();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].contains("host server's CPU"), "{}", notes[0]);
    // The clients share CPU 1: each sees the other's agent (10 %), which
    // is the test's own; the server's agent, on CPU 0, is not on theirs.
    let c1 = d.hosts[1].cpu.as_ref().unwrap();
    assert_eq!(c1.account.as_ref().unwrap().others_pct, 0.0);
    assert_eq!(interference(&d.hosts[0]).others_pct, 40.0);
}

/// A document this version writes reads back typed by its kind, and its
/// spec and disclosure write back exactly as they were.
#[test]
fn a_native_document_reads_typed_and_writes_back_unchanged() {
    let text = include_str!("../../../cli/tests/fixtures/disk-run.json");
    let doc: ResultDoc = serde_json::from_str(text).unwrap();
    assert!(matches!(&doc.spec, crate::spec::Spec::Disk(s) if s.as_written.is_none()));
    assert!(doc.spec.disk().is_some() && doc.disk_disclosure().is_some());
    let v: serde_json::Value = serde_json::from_str(text).unwrap();
    let back = serde_json::to_value(&doc).unwrap();
    assert_eq!(
        (&back["spec"], &back["disclosure"]),
        (&v["spec"], &v["disclosure"])
    );
}

/// A document of another shape than this version writes (here a key this
/// version does not know, and a disclosure field it writes otherwise) is
/// still read as its kind's types, as serde reads it, and written back as
/// it was.
#[test]
fn a_document_of_another_shape_reads_typed_and_writes_back_as_it_was() {
    let text = include_str!("../../../cli/tests/fixtures/disk-run.json");
    let mut v: serde_json::Value = serde_json::from_str(text).unwrap();
    v["spec"]["from_a_later_version"] = serde_json::json!([1, 2]);
    v["disclosure"]["from_a_later_version"] = serde_json::json!({"x": null});
    let doc: ResultDoc = serde_json::from_value(v.clone()).unwrap();
    assert!(matches!(&doc.spec, crate::spec::Spec::Disk(s) if s.as_written.is_some()));
    assert_eq!(
        doc.spec.disk().map(|s| s.qd),
        v["spec"]["qd"].as_u64().map(|q| q as u32)
    );
    assert!(doc.disk_disclosure().is_some());
    let back = serde_json::to_value(&doc).unwrap();
    assert_eq!(
        (&back["spec"], &back["disclosure"]),
        (&v["spec"], &v["disclosure"])
    );
}

/// issue 28: lab hosts measured on CPUs of their own count as machines of
/// their own in totals; hosts sharing a set (or none) count once.
#[test]
fn hosts_with_own_cpus_count_separately() {
    let host = |name: &str, own: Option<Vec<u32>>| HostFigures {
        name: name.into(),
        boot_id: Some("k".into()),
        cpu: Some(CpuReport {
            cpus: own.as_ref().map_or(4, |o| o.len() as u32),
            own_cpus: own,
            ..Default::default()
        }),
        ..Default::default()
    };
    let hs = [
        host("a", Some(vec![0, 1])),
        host("b", Some(vec![2])),
        host("c1", Some(vec![3])),
        host("c2", Some(vec![3])),
        host("x", None),
        host("y", None),
    ];
    let names: Vec<&str> = HostFigures::one_per_machine(&hs)
        .iter()
        .map(|h| h.name.as_str())
        .collect();
    assert_eq!(names, ["a", "b", "c1", "x"]);
}
