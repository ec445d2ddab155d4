mod judging {
    use super::super::*;

    fn m(v: f64) -> iotoll_model::Metrics {
        [("iops".to_string(), v)].into_iter().collect()
    }

    #[test]
    fn repeatability_flagging() {
        let rule = Rule::Median("iops".into());
        let agree = [m(100.0), m(103.0), m(101.0)];
        let r: Vec<_> = agree.iter().collect();
        let (sel, ok) = judge(&r, &[], &rule, "iops", 5.0);
        assert_eq!(ok, Some(true));
        assert!((sel.spread_pct.unwrap() - 3.0 / 101.0 * 100.0).abs() < 1e-9);
        let disagree = [m(100.0), m(120.0), m(101.0)];
        let r: Vec<_> = disagree.iter().collect();
        assert_eq!(judge(&r, &[], &rule, "iops", 5.0).1, Some(false));
        assert_eq!(judge(&r, &[], &rule, "iops", 25.0).1, Some(true));
        let one = [m(100.0)];
        let r: Vec<_> = one.iter().collect();
        assert_eq!(
            judge(&r, &[], &rule, "iops", 5.0).1,
            None,
            "one repetition has no spread"
        );
        // The reported case: the headline agrees within 0.2 %, host CPU
        // was 93.7 % in one repetition and 5.7 % in the other.
        let with_cpu = |iops: f64, cpu: f64| {
            let mut x = m(iops);
            x.insert("cpu_pct".into(), cpu);
            x
        };
        let tenant = [with_cpu(1000.0, 93.7), with_cpu(1002.0, 5.7)];
        let r: Vec<_> = tenant.iter().collect();
        let (sel, ok) = judge(&r, &[true, false], &rule, "iops", 5.0);
        assert_eq!(ok, Some(false), "CPU disagrees");
        assert!(sel.spread_pct.unwrap() < 0.25);
        assert!(sel.disagree.len() == 1 && sel.disagree[0].starts_with("cpu_pct"));
        assert_eq!(sel.index, Some(1), "the clean repetition is kept");
        let none: [iotoll_model::Metrics; 2] = [Default::default(), Default::default()];
        let r: Vec<_> = none.iter().collect();
        assert_eq!(
            judge(&r, &[], &rule, "iops", 5.0).1,
            None,
            "no metric, no verdict"
        );
    }
}

mod reclaim {
    use super::super::bench::*;

    /// The test files of runs that were killed go, a lab agent's too; a
    /// live process's and other files stay.
    #[test]
    fn stale_test_files_of_dead_runs_are_reclaimed() {
        let d = tempfile::tempdir().unwrap();
        // No process has pid 2^22 + 1 (above the kernel's pid_max limit).
        let dead = 4_194_305;
        let me = std::process::id();
        let names = [
            format!("{TEMP_PREFIX}{dead}{TEMP_SUFFIX}"),
            format!("{TEMP_PREFIX}{dead}-c1{TEMP_SUFFIX}"),
            format!("{TEMP_PREFIX}{me}{TEMP_SUFFIX}"),
            format!("{TEMP_PREFIX}{me}-c1{TEMP_SUFFIX}"),
            format!("{TEMP_PREFIX}notapid{TEMP_SUFFIX}"),
        ];
        for n in &names {
            std::fs::write(d.path().join(n), b"x").unwrap();
        }
        let mut gone: Vec<String> = reclaim_stale_test_files(d.path())
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        gone.sort();
        let mut want = vec![names[0].clone(), names[1].clone()];
        want.sort();
        assert_eq!(gone, want);
        for n in &names[2..] {
            assert!(d.path().join(n).exists(), "{n}");
        }
    }
}
