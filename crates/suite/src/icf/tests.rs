use super::*;
use crate::file::tests::disk;

const TWO: &str = include_str!("../../tests/fixtures/icf/two-workers.icf");

/// `e` says `part`.
fn says(e: &impl std::fmt::Display, part: &str) {
    assert!(e.to_string().contains(part), "{e}");
}

fn fixture(name: &str) -> String {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/icf/");
    std::fs::read_to_string(format!("{dir}{name}")).unwrap()
}

#[test]
fn reads_the_two_workers_fixture() {
    let icf = parse(TWO, "two-workers.icf").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(icf.version, "1.1.0");
    let s = icf.setup.as_ref().unwrap();
    assert_eq!(s.description, "mixed-qd");
    assert_eq!((s.run_secs(), s.ramp_s), (30, 5));
    assert_eq!(s.disk_workers, Spawn::Cpus);
    assert_eq!(s.test_type, TestType::CycleOutstandingIos);
    assert_eq!(
        s.queue_cycling,
        QueueCycle {
            start: 1,
            end: 16,
            step: 2,
            exponential: true
        }
    );
    assert_eq!(icf.specs.len(), 1);
    let spec = &icf.specs[0];
    assert_eq!(
        (spec.name.as_str(), spec.assignment.as_str()),
        ("mail store", "DISK")
    );
    let shares: Vec<u32> = spec.lines.iter().map(|l| l.share).collect();
    assert_eq!(shares, [60, 30, 10]);
    assert_eq!((spec.lines[1].size, spec.lines[1].align), (8192, 4096));
    assert_eq!((spec.lines[2].delay_ms, spec.lines[2].burst), (2, 4));
    let m = &icf.managers.as_ref().unwrap()[0];
    assert_eq!(
        (m.id, m.name.as_str(), m.address.as_str()),
        (1, "LAB-HOST", "")
    );
    assert_eq!(m.workers.len(), 2);
    let w = &m.workers[1];
    assert_eq!(
        (w.name.as_str(), w.kind, w.qd),
        ("Worker 2", WorkerKind::Disk, 1)
    );
    assert_eq!(w.disk_size, 2097152);
    assert_eq!(w.specs.as_deref(), Some(&["mail store".to_string()][..]));
    let t = &w.targets.as_ref().unwrap()[0];
    assert_eq!(
        (t.name.as_str(), t.disk_key().as_str()),
        ("PHYSICALDRIVE:2", "PHYSICALDRIVE:2")
    );
    let t0 = &m.workers[0].targets.as_ref().unwrap()[0];
    assert_eq!(t0.disk_key(), "E:");
}

#[test]
fn written_files_read_back_the_same() {
    let icf = parse(TWO, "a").unwrap();
    let text = write(&icf);
    let again = parse(&text, "b").unwrap_or_else(|e| panic!("{e}\n{text}"));
    let strip = |mut i: Icf| {
        // Lines differ (the writer adds the fixed-seed columns); the rest may not.
        for s in i.specs.iter_mut() {
            s.at = 0;
            s.lines.iter_mut().for_each(|l| l.at = 0);
        }
        if let Some(s) = i.setup.as_mut() {
            (s.at, s.run_time_at, s.test_type_at) = (0, 0, 0);
        }
        for m in i.managers.iter_mut().flatten() {
            m.at = 0;
            for w in m.workers.iter_mut() {
                w.at = 0;
                w.targets.iter_mut().flatten().for_each(|t| t.at = 0);
            }
        }
        i
    };
    assert_eq!(strip(icf), strip(again));
    // Iometer's layout: its headers are 80 columns, values tab-indented.
    assert!(text.starts_with("Version 1.1.0\n'TEST SETUP ====="));
    assert!(text
        .lines()
        .filter(|l| l.ends_with("====="))
        .all(|l| l.len() == 80));
    assert!(
        text.contains("'Run Time\n'\thours      minutes    seconds\n\t0          0          30\n")
    );
    assert!(text.contains(
        "'size,% of size,% reads,% random,delay,burst,align,reply\n\t4096,60,70,100,0,1,0,0\n"
    ));
    assert!(text.ends_with("'END manager list\nVersion 1.1.0\n"));
}

#[test]
fn crlf_and_blank_lines_are_read() {
    let text = TWO
        .replace('\n', "\r\n")
        .replace("'END test setup", "\r\n'END test setup");
    assert_eq!(parse(&text, "x").unwrap().specs.len(), 1);
    assert!(looks_like_icf(&text));
    assert!(!looks_like_icf("name = 'x'\n"));
}

#[test]
fn shares_not_adding_to_100_name_the_spec_and_line() {
    let e = parse(&fixture("bad-shares.icf"), "bad-shares.icf").unwrap_err();
    assert_eq!(e.problems.len(), 1, "{e}");
    let (line, msg) = &e.problems[0];
    assert_eq!(*line, Some(38), "{e}");
    assert!(
        msg.contains("'mail store'") && msg.contains("95 % (60 + 30 + 5)"),
        "{e}"
    );
    assert!(e.to_string().starts_with("bad-shares.icf:38: "), "{e}");
}

#[test]
fn unknown_sections_and_keys_are_all_listed() {
    let e = parse(&fixture("unknown-section.icf"), "u.icf").unwrap_err();
    let msgs: Vec<String> = e
        .problems
        .iter()
        .map(|(l, m)| format!("{l:?} {m}"))
        .collect();
    assert_eq!(e.problems.len(), 2, "{e}");
    assert!(
        msgs[0].starts_with("Some(14) unknown key 'Record Resolts' in TEST SETUP"),
        "{e}"
    );
    assert!(
        msgs[1].contains("unknown section 'NETWORK TOPOLOGY';"),
        "{e}"
    );
}

#[test]
fn malformed_files_say_where() {
    let e = parse("name = 'x'\n", "x").unwrap_err();
    says(&e, "first line should be 'Version");
    let e = parse(
        &TWO.replace("\t4096,60,70,100,0,1,0,0", "\t4096,60,170,100,0,1,0,0"),
        "x",
    )
    .unwrap_err();
    says(&e, "% reads 170 is outside 0-100");
    let e = parse(&TWO.replace("'END test setup\n", ""), "x").unwrap_err();
    says(&e, "expected 'END test setup");
    let e = parse(&TWO.replace("\tCYCLE_OUTSTANDING_IOS", "\tSOMETIMES"), "x").unwrap_err();
    says(&e, "x:26: Test Type: expected one of NORMAL");
    let cut = &TWO[..TWO.find("'End worker").unwrap()];
    let e = parse(cut, "x").unwrap_err();
    says(&e, "ends inside");
}

#[test]
fn imports_the_two_workers_fixture() {
    let (s, imp) = suite(TWO, "two-workers.icf").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(imp.targets, ["E: \"DATA1\"", "PHYSICALDRIVE:2"]);
    assert_eq!(s.name, "two-workers");
    assert_eq!(s.text, TWO);
    let params: Vec<String> = s.jobs.iter().map(|j| j.params.to_string()).collect();
    assert_eq!(
        params,
        [1, 2, 4, 8, 16].map(|qd| format!(
            "{{\"qd\":{qd},\"size\":1073741824,\"spec\":\"mail store\",\"workers\":1}}"
        ))
    );
    let ms = |n: u64| Duration::from_millis(n);
    assert_eq!(
        s.jobs[0].ramp_time(),
        (Duration::from_secs(5), Duration::from_secs(30))
    );
    let d = disk(&s.jobs[4]);
    assert_eq!((d.qd, d.workers, d.size), (16, 1, Some(1 << 30)));
    let lines: Vec<_> = (d.lines.iter())
        .map(|l| {
            (
                l.share_pct,
                l.bs,
                l.read_pct,
                l.random_pct,
                l.burst_delay,
                l.burst_len,
                l.align,
            )
        })
        .collect();
    assert_eq!(
        lines,
        [
            (60, 4096, 70, 100, ms(0), 1, None),
            (30, 8192, 50, 100, ms(0), 1, Some(4096)),
            (10, 65536, 0, 0, ms(2), 4, None)
        ]
    );
    assert_eq!(
        imp.notes,
        ["maximum disk size and starting sector are counted in 512-byte sectors"]
    );
    // Each value knows the .icf line it came from: the queue depths are
    // the Test Type's (line 25).
    let deep = TWO.replace(
        "\t1          16         2          EXPONENTIAL",
        "\t1          131072     2          EXPONENTIAL",
    );
    let e = suite(&deep, "two-workers.icf").unwrap_err().to_string();
    assert!(e.starts_with("two-workers.icf:25: qd: qd 65536 "), "{e}");
}

#[test]
fn cycles_step_as_iometer_does() {
    assert_eq!(cycle_values(1, 16, 2, true), [1, 2, 4, 8, 16]);
    assert_eq!(cycle_values(2, 20, 3, true), [2, 6, 18]);
    assert_eq!(cycle_values(1, 10, 4, false), [1, 5, 9]);
    assert_eq!(cycle_values(4, 4, 1, true), [4]);
    assert_eq!(cycle_values(5, 4, 1, false), Vec::<u32>::new());
    assert_eq!(cycle_values(1, 3, 0, false), [1]);
}

#[test]
fn one_worker_on_every_target_is_spread() {
    let text = TWO.replace(
        "'Target\n\tE: \"DATA1\"\n'Target type\n\tDISK\n'End target\n",
        "'Target\n\tE: \"DATA1\"\n'Target type\n\tDISK\n'End target\n'Target\n\tPHYSICALDRIVE:2\n'Target type\n\tDISK\n'End target\n",
    );
    // Worker 2 keeps only PHYSICALDRIVE:2: not expressible.
    let icf = parse(&text, "x.icf").unwrap();
    let e = import(&icf, &text, "x.icf", "x").unwrap_err();
    says(&e, "cannot be expressed ('Worker 1' on E: \"DATA1\" + PHYSICALDRIVE:2, 'Worker 2' on PHYSICALDRIVE:2)");
    // Without worker 2, worker 1 is spread over both.
    let cut = text.find("'Worker\n\tWorker 2").unwrap();
    let end = text.find("'End manager").unwrap();
    let one = format!("{}{}", &text[..cut], &text[end..]);
    let (s, _) = import(&parse(&one, "x.icf").unwrap(), &one, "x.icf", "x").unwrap();
    let params: Vec<String> = s.jobs.iter().map(|j| j.params.to_string()).collect();
    assert!(
        params
            .iter()
            .all(|p| p.contains("\"spread\":true") && p.contains("\"workers\":1")),
        "{params:?}"
    );
}

#[test]
fn uneven_targets_are_refused_with_the_workers() {
    let text = fixture("uneven-targets.icf");
    let e = import(&parse(&text, "u.icf").unwrap(), &text, "u.icf", "u").unwrap_err();
    assert!(
        e.to_string().contains(
            "u.icf:50: access spec 'mail store': the workers' targets cannot be expressed"
        ),
        "{e}"
    );
}

fn expanded(s: &crate::Suite) -> Vec<(String, String)> {
    (s.jobs.iter())
        .filter_map(|j| match &j.spec {
            crate::JobSpec::Disk(d) => Some((j.name.clone(), format!("{d:?}"))),
            _ => None,
        })
        .collect()
}

fn round_trip(s: &crate::Suite, test: Option<&str>, targets: &[&str]) -> (crate::Suite, String) {
    let o = ExportOptions {
        test: test.map(str::to_string),
        targets: targets.iter().map(|t| t.to_string()).collect(),
        manager: "HOST".into(),
        cpus: 2,
    };
    let (icf, _) = export(s, &o).unwrap_or_else(|e| panic!("{e}"));
    let text = write(&icf);
    let (back, _) = suite(&text, "back.icf").unwrap_or_else(|e| panic!("{e}\n{text}"));
    (back, text)
}

#[test]
fn built_in_studies_round_trip() {
    for (name, test) in [("iscsi-initiator-study", "small-block"), ("quick", "disk")] {
        let s = crate::file::tests::builtin(name);
        let (back, text) = round_trip(&s, Some(test), &[]);
        let want: Vec<_> = expanded(&s)
            .into_iter()
            .filter(|(n, _)| n.starts_with(test))
            .collect();
        assert_eq!(expanded(&back), want, "{name}\n{text}");
    }
    // Per-spec queue depths: a group of workers per QD, idle in turn.
    let s = crate::file::tests::builtin("quick");
    let (_, text) = round_trip(&s, None, &[]);
    assert!(
        text.contains(
            "'Assigned access specs\n\tdb-oltp-8k\n\tIdle\n\tIdle\n'End assigned access specs"
        ),
        "{text}"
    );
}

#[test]
fn the_fixture_round_trips() {
    let (s, imp) = suite(TWO, "two-workers.icf").unwrap();
    assert_eq!(imp.targets.len(), 2);
    let names: Vec<String> = expanded(&s).into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        [
            "mixed-qd/qd=1",
            "mixed-qd/qd=2",
            "mixed-qd/qd=4",
            "mixed-qd/qd=8",
            "mixed-qd/qd=16"
        ]
    );
    let (back, text) = round_trip(&s, None, &["E:", "PHYSICALDRIVE:2"]);
    assert_eq!(expanded(&back), expanded(&s), "{text}");
    assert!(text.contains("'Queue Depth Cycling\n'\tstart      end        step       step type\n\t1          16         2          EXPONENTIAL\n'Test Type\n\tCYCLE_OUTSTANDING_IOS\n"), "{text}");
}

#[test]
fn exports_refuse_what_an_icf_cannot_hold() {
    let s = crate::file::tests::builtin("adapter-vs-hba-study");
    let e = export(&s, &ExportOptions::default()).unwrap_err();
    assert!(
        e.contains("3 disk tests (read, write, rw)") && e.contains("--test"),
        "{e}"
    );
    let e = export(
        &s,
        &ExportOptions {
            test: Some("nope".into()),
            ..Default::default()
        },
    )
    .unwrap_err();
    says(&e, "no disk test 'nope'");
    let s = crate::parse(
        "name='t'\n[[test]]\nname='a'\nkind='disk'\nworkers=[1,2]\n",
        "t",
    )
    .unwrap();
    let e = export(&s, &ExportOptions::default()).unwrap_err();
    says(&e, "workers differs");
}

/// An .icf of one manager with `workers` (name, QD, specs, targets).
fn setup_with(test_type: &str, workers: &[(&str, u32, &[&str], &[&str])]) -> String {
    let mut t = TWO[..TWO.find("'Worker\n").unwrap()].replace("CYCLE_OUTSTANDING_IOS", test_type);
    t = t.replace("'END access specifications", "'Access specification name,default assignment\n\tseq,NONE\n'size,% of size,% reads,% random,delay,burst,align,reply\n\t65536,100,100,0,0,1,0,0\n'END access specifications");
    let mut icf = parse(&format!("{t}'End manager\n'END manager list\n"), "x").unwrap();
    let m = &mut icf.managers.as_mut().unwrap()[0];
    for (name, qd, specs, targets) in workers {
        let mut w = Worker::new(name, WorkerKind::Disk);
        w.qd = *qd;
        w.specs = Some(specs.iter().map(|s| s.to_string()).collect());
        w.targets = Some(
            (targets.iter())
                .map(|n| Target {
                    name: n.to_string(),
                    kind: WorkerKind::Disk,
                    manager: None,
                    at: 0,
                })
                .collect(),
        );
        m.workers.push(w);
    }
    write(&icf)
}

#[test]
fn worker_cycling_over_spread_workers() {
    let both: &[&str] = &["E:", "F:"];
    let w: Vec<(&str, u32, &[&str], &[&str])> =
        (0..4).map(|_| ("W", 4, &["seq"][..], both)).collect();
    let mut text = setup_with("CYCLE_WORKERS", &w);
    text = text.replace(
        "'Worker Cycling\n'\tstart      step       step type\n\t1          1          LINEAR",
        "'Worker Cycling\n'\tstart      step       step type\n\t1          3          LINEAR",
    );
    let (s, _) = suite(&text, "w.icf").unwrap_or_else(|e| panic!("{e}\n{text}"));
    let spread: Vec<bool> = s.jobs.iter().map(|j| j.params["spread"] == true).collect();
    assert_eq!(spread, [true, true]);
    let names: Vec<&str> = s.jobs.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(names, ["mixed-qd/workers=1", "mixed-qd/workers=4"]);
    // Workers of their own per target cannot be cycled.
    let w = [
        ("A", 4, &["seq"][..], &["E:"][..]),
        ("B", 4, &["seq"][..], &["F:"][..]),
    ];
    let e = suite(&setup_with("CYCLE_WORKERS", &w), "w.icf").unwrap_err();
    says(&e, "Test Type CYCLE_WORKERS: iotoll cannot express it");
}

#[test]
fn specs_in_turn_with_idle_and_their_own_qd() {
    let w = [
        ("A", 4, &["mail store", "Idle"][..], &["E:"][..]),
        ("B", 32, &["Idle", "seq"][..], &["E:"][..]),
    ];
    let (s, _) = suite(&setup_with("NORMAL", &w), "i.icf").unwrap();
    let got: Vec<(String, u32, usize)> = (s.jobs.iter())
        .map(|j| {
            let d = disk(j);
            (j.name.clone(), d.qd, d.lines.len())
        })
        .collect();
    assert_eq!(
        got,
        [
            ("mixed-qd/spec=mail store".into(), 4, 3),
            ("mixed-qd/spec=seq".into(), 32, 1)
        ]
    );
    // Two workers at different QDs on the same spec at once: refused.
    let w = [
        ("A", 4, &["seq"][..], &["E:"][..]),
        ("B", 8, &["seq"][..], &["F:"][..]),
    ];
    let e = suite(&setup_with("NORMAL", &w), "i.icf").unwrap_err();
    says(&e, "worker 'A' has 4 outstanding I/Os, worker 'B' 8");
    // Different specs at once: refused.
    let w = [
        ("A", 4, &["seq"][..], &["E:"][..]),
        ("B", 4, &["mail store"][..], &["F:"][..]),
    ];
    let e = suite(&setup_with("NORMAL", &w), "i.icf").unwrap_err();
    says(&e, "an iotoll test runs one access spec on all its workers");
    // A target twice on one worker.
    let w = [("A", 4, &["seq"][..], &["E:", "e: \"DATA\""][..])];
    let e = suite(&setup_with("NORMAL", &w), "i.icf").unwrap_err();
    says(&e, "worker 'A' has target 'e: \"DATA\"' twice");
    // A spec the file does not define.
    let w = [("A", 4, &["Default"][..], &["E:"][..])];
    let e = suite(&setup_with("NORMAL", &w), "i.icf").unwrap_err();
    says(
        &e,
        "'Default', which the file's ACCESS SPECIFICATIONS do not define",
    );
}

#[test]
fn specs_without_managers_run_in_order() {
    let cut = TWO.find("'MANAGER LIST").unwrap();
    let text = format!("{}Version 1.1.0\n", &TWO[..cut]);
    let (s, imp) = suite(&text, "n.icf").unwrap();
    assert!(imp.targets.is_empty());
    assert!(
        imp.notes[0].starts_with("no MANAGER LIST"),
        "{:?}",
        imp.notes
    );
    assert_eq!(s.jobs.len(), 5);
}
