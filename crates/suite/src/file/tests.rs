use super::*;

#[test]
fn builtin_suites_expand_to_the_expected_counts() {
    let want = [
        ("quick", 5),
        ("iscsi-initiator-study", 12),
        ("adapter-vs-hba-study", 24),
        ("hw-iscsi-study", 9),
        ("ten-gig-adapter-study", 10 + 14 + 3),
        ("bidirectional-transfer-study", 1),
    ];
    for (name, n) in want {
        let s = builtin(name);
        assert_eq!(s.name, name);
        assert_eq!(s.jobs.len(), n, "{name}");
    }
}

#[test]
fn iscsi_study_parameters() {
    let s = builtin("iscsi-initiator-study");
    assert_eq!(s.cpu_threshold_pct, Some(8.0));
    let j = s
        .jobs
        .iter()
        .find(|j| j.name == "large-block/spec=dss-1m")
        .unwrap();
    assert_eq!(j.rule, Rule::Median("mb_s".into()));
    assert_eq!(j.reps, 3);
    let d = disk(j);
    assert_eq!(
        (d.lines[0].bs, d.qd, d.workers, d.size),
        (1 << 20, 4, 1, Some(4 << 30))
    );
    assert_eq!(
        (d.ramp, d.time),
        (Duration::from_secs(60), Duration::from_secs(240))
    );
    assert_eq!(s.estimated(), Duration::from_secs(12 * 3 * 300));
}

#[test]
fn sweep_names_and_groups() {
    let text = r#"
name = "t"
[[test]]
name = "conns"
kind = "net-stream"
dir = ["tx", "rx"]
conns = [1, 10]
msg = "64k"
group = "{dir}"
"#;
    let s = parse(text, "t.toml").unwrap();
    let names: Vec<&str> = s.jobs.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "conns/dir=tx,conns=1",
            "conns/dir=tx,conns=10",
            "conns/dir=rx,conns=1",
            "conns/dir=rx,conns=10"
        ]
    );
    assert_eq!(s.jobs[2].group, "rx");
    let c = net(&s.jobs[3]);
    assert_eq!((c.dir, c.conns, c.msg), (iotoll_net::Dir::Rx, 10, 65536));
    assert_eq!(s.jobs[3].params["conns"], 10);
}

#[test]
fn spec_then_explicit_keys() {
    let s = suite("name='t'\n[[test]]\nname='a'\nkind='disk'\nspec='db-oltp-8k'\nqd=[1,4]\n");
    let d = disk(&s.jobs[1]);
    assert_eq!((d.lines[0].bs, d.qd), (8192, 4));
    assert_eq!(s.jobs[1].name, "a/qd=4");
}

pub(crate) fn err(text: &str) -> SuiteError {
    parse(text, "s.toml").unwrap_err()
}

/// A suite that parses, as the file `s.toml`.
pub(crate) fn suite(text: &str) -> Suite {
    parse(text, "s.toml").unwrap_or_else(|e| panic!("{e}"))
}

/// A built-in suite, parsed.
pub(crate) fn builtin(name: &str) -> Suite {
    suite(crate::builtin::find(name).unwrap())
}

/// A disk job's request.
pub(crate) fn disk(j: &Job) -> &DiskRequest {
    let JobSpec::Disk(d) = &j.spec else {
        panic!("{}: {:?}", j.name, j.spec)
    };
    d
}

/// A network job's client spec.
pub(crate) fn net(j: &Job) -> &ClientSpec {
    let JobSpec::Net(c) = &j.spec else {
        panic!("{}: {:?}", j.name, j.spec)
    };
    c
}

/// `e` is told on `line`, about `key`.
pub(crate) fn at(e: &SuiteError, line: usize, key: &str) {
    assert_eq!((e.line, e.key.as_deref()), (Some(line), Some(key)), "{e}");
}

pub(crate) fn key(e: &SuiteError, key: &str) {
    assert_eq!(e.key.as_deref(), Some(key), "{e}");
}

pub(crate) fn has(e: &SuiteError, part: &str) {
    assert!(e.msg.contains(part), "{e}");
}

pub(crate) fn starts(e: &SuiteError, part: &str) {
    assert!(e.msg.starts_with(part), "{e}");
}

/// Each wrong [[test]] is told, not only the first.
#[test]
fn every_wrong_test_is_told_at_once() {
    let e = err("name='t'\n[[test]]\nname='a'\nkind='disk'\nqd=0\n[[test]]\nname='b'\nkind='disk'\n[[test]]\nname='c'\nkind='net-stream'\nconns='x'\n");
    assert_eq!(e.line, Some(5), "{e}");
    assert_eq!(e.also.len(), 1, "{e}");
    assert_eq!(e.also[0].line, Some(12), "{e}");
    let shown = e.to_string();
    assert_eq!(shown.lines().count(), 2, "{shown}");
    assert!(
        shown.contains("s.toml:5") && shown.contains("s.toml:12"),
        "{shown}"
    );
}

/// `sut = [...]`: the system under test's processes, by name or pid.
#[test]
fn the_system_under_test_by_name_or_pid() {
    use iotoll_probe::procs::SutProcess;
    let s = suite("name='t'\nsut=['tgtd', 42]\n[[test]]\nname='a'\nkind='disk'\n");
    assert_eq!(
        s.sut,
        [SutProcess::Name("tgtd".into()), SutProcess::Pid(42)]
    );
    for bad in ["sut=[0]", "sut='tgtd'", "sut=['']"] {
        let e = err(&format!(
            "name='t'\n{bad}\n[[test]]\nname='a'\nkind='disk'\n"
        ));
        at(&e, 2, "sut");
    }
}

#[test]
fn bad_suites_name_file_line_and_key() {
    let e = err("name = 't'\n[[test]\n");
    assert_eq!((e.file.as_str(), e.line), ("s.toml", Some(2)), "{e}");
    let e = err("name='t'\n[[test]]\nname='a'\nkind='disk'\nbogus=1\n");
    at(&e, 5, "bogus");
    let e = err("name='t'\n[[test]]\nname='a'\nkind='disk'\nqd='deep'\n");
    at(&e, 5, "qd");
    let e = err("name='t'\n[[test]]\nname='a'\nkind='disk'\nspec=['nope']\n");
    assert!(
        e.msg.contains("unknown spec 'nope'") && e.line == Some(5),
        "{e}"
    );
    let e = err("name='t'\n[[test]]\nname='a'\nkind='disk'\nbs=[]\n");
    assert!(
        e.msg.contains("empty sweep") && e.key.as_deref() == Some("bs"),
        "{e}"
    );
    let e = err("name='t'\n[[test]]\nname='a'\nkind='disk'\n[[test]]\nname='a'\nkind='net-rr'\n");
    assert!(e.msg.contains("duplicate") && e.line == Some(6), "{e}");
    let e = err("name='t'\n[[test]]\nname='a'\nkind='disk'\nread=150\n");
    has(&e, "outside 0-100");
    let e = err("name='t'\n[[test]]\nname='a'\nkind='net-rr'\ndir='tx'\n");
    key(&e, "dir");
    let e = err("name='t'\nwhatever=1\n[[test]]\nname='a'\nkind='disk'\n");
    at(&e, 2, "whatever");
    let e = err("name='t'\n[[test]]\nname='a'\nkind='tape'\n");
    has(&e, "unknown kind");
    let e = err("name='t'\nselect='best'\n[[test]]\nname='a'\nkind='disk'\n");
    key(&e, "select");
    let e = err("name='t'\n");
    has(&e, "no [[test]]");
    let e = err("name='t'\n[[test]]\nname='a'\nkind='disk'\ngroup='{dir}'\n");
    has(&e, "{dir}");
    let e = err("name='t'\ninterference_pct=150\n[[test]]\nname='a'\nkind='disk'\n");
    at(&e, 2, "interference_pct");
    let s = suite("name='t'\ninterference_pct=2\n[[test]]\nname='a'\nkind='disk'\n[[test]]\nname='b'\nkind='disk'\ninterference_pct=7.5\n");
    assert_eq!(
        (s.jobs[0].interference_pct, s.jobs[1].interference_pct),
        (2.0, 7.5)
    );
}

/// Seen: `file:2: --qd must be ...` for `qd` on line 5 (and `conns`):
/// the error names the key, on its line, in the file's words.
#[test]
fn engine_limits_name_the_key_and_its_line() {
    let e = err("name='t'\n\n[[test]]\nname='a'\nkind='disk'\nqd=0\n");
    at(&e, 6, "qd");
    starts(&e, "qd must be between 1 and");
    assert!(!e.to_string().contains("--"), "{e}");
    let e = err("name='t'\n[[test]]\nname='a'\nkind='net-stream'\ntime='2s'\nconns=[1, 0]\n");
    at(&e, 6, "conns");
    let e = err("name='t'\n[[test]]\nname='a'\nkind='disk'\nbs='4k'\nburst_len=0\n");
    at(&e, 6, "burst_len");
    // A limit broken by two keys together names both in the file's terms.
    let e = err("name='t'\n[[test]]\nname='a'\nkind='disk'\nsize='4k'\nbs='64k'\n");
    at(&e, 5, "size");
    assert!(
        e.msg.contains("(bs 65536)") || e.msg.contains("(bs 64k)"),
        "{e}"
    );
}

#[test]
fn flags_read_as_keys() {
    assert_eq!(
        flags_as_keys("--burst-len 0 (--bs 4k) --"),
        "burst_len 0 (bs 4k) "
    );
    assert_eq!(flags_as_keys("no flags"), "no flags");
}

/// Seen: `[[ test ]]` (spaces inside the brackets are valid TOML) was
/// missed by the line search, and errors in such a test had no line.
#[test]
fn spaced_test_headers_keep_lines() {
    let e = err(
        "name='t'\n[[ test ]]\nname='a'\nkind='disk'\n\n[[ test ]]\nname='b'\nkind='disk'\nqd=0\n",
    );
    at(&e, 9, "qd");
    let e = err("name='t'\n[[test]]\nname='a'\nkind='disk'\n[[ test ]]\nkind='disk'\n");
    assert_eq!(
        (e.line, e.msg.as_str()),
        (Some(5), "this [[test]] has no name")
    );
    let e = err("name='t'\n[[ test ]]\nname='a'\nkind='disk'\nbogus=1\n");
    at(&e, 5, "bogus");
}

/// Seen: control characters in suite and test names reached the
/// terminal raw. They are refused, and errors quoting them escape them.
#[test]
fn control_characters_in_names_are_refused_and_escaped() {
    // TOML basic strings decode \u001b to ESC: in the suite's name, then a test's.
    for (suite, test) in [(r"a\u001b[2J", "a"), ("t", r"x\u0007")] {
        let e = err(&format!(
            "name=\"{suite}\"\n[[test]]\nname=\"{test}\"\nkind=\"disk\"\n"
        ));
        has(&e, "control characters");
    }
    let e = err(r#"name="t"
[[test]]
name="a"
kind="disk"
"q\u001b]0;pwned\u0007"=1
"#);
    let shown = e.to_string();
    assert!(
        !shown.contains('\u{1b}') && shown.contains("\\u{1b}"),
        "{shown}"
    );
}

/// Seen: a sweep of 10^6 combinations made `suite show` run for over a
/// minute and grow past 225 MB; now it is refused before expanding.
#[test]
fn huge_sweeps_are_refused_before_expanding() {
    let values: Vec<String> = (1..=1000).map(|v| v.to_string()).collect();
    let list = values.join(",");
    let text =
        format!("name='t'\n[[test]]\nname='a'\nkind='disk'\nqd=[{list}]\nworkers=[{list}]\n");
    let e = err(&text);
    has(&e, "1,000,000 combinations");
    has(&e, "qd: 1000 x workers: 1000");
    assert_eq!(e.line, Some(2), "{e}");
    // Counted over the whole suite, not per test.
    let half: Vec<String> = (1..=6000).map(|v| format!("'{v}k'")).collect();
    let half = half.join(",");
    let text = format!(
        "name='t'\n[[test]]\nname='a'\nkind='disk'\nbs=[{half}]\n[[test]]\nname='b'\nkind='disk'\nbs=[{half}]\n"
    );
    assert!(err(&text).msg.contains("more than 10000 tests"));
    // An enormous product is refused without being built.
    let big: Vec<String> = (1..=64).map(|v| v.to_string()).collect();
    let big = big.join(",");
    let keys = ["qd", "workers", "read", "random", "burst_len", "align"];
    let mut text = "name='t'\n[[test]]\nname='a'\nkind='disk'\n".to_string();
    for k in keys {
        text.push_str(&format!("{k}=[{big}]\n"));
    }
    assert!(err(&text).msg.contains("combinations"));
}

/// Expansion is linear: 10,000 swept values expand at once (the
/// duplicate-name check was a scan of every earlier test).
#[test]
fn a_large_sweep_expands() {
    let values: Vec<String> = (1..=10_000).map(|v| format!("'{v}k'")).collect();
    let text = format!(
        "name='t'\n[[test]]\nname='a'\nkind='disk'\nbs=[{}]\n",
        values.join(",")
    );
    let s = parse(&text, "t").unwrap();
    assert_eq!(s.jobs.len(), 10_000);
    assert_eq!(s.jobs[9_999].name, "a/bs=10000k");
}

const MIXED: &str = r#"name = "m"
[[spec]]
name = "mail"
qd = 8
lines = [
  { share = 60, bs = "4k", read = 70, random = 100 },
  { share = 30, bs = 8192, read = 50, random = 100, align = "4k" },
  { share = 10, bs = "64k", read = 0, random = 0, burst_delay = "2ms", burst_len = 4 },
]

[[spec]]
name = "seq-read"
bs = "1m"
read = 100
random = 0

[[test]]
name = "t"
kind = "disk"
spec = ["mail", "seq-read", "db-oltp-8k"]
"#;

#[test]
fn file_specs_with_lines() {
    let s = parse(MIXED, "m.toml").unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<&str> = s.jobs.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(
        names,
        ["t/spec=mail", "t/spec=seq-read", "t/spec=db-oltp-8k"]
    );
    let d = disk(&s.jobs[0]);
    assert_eq!((d.spec_name.as_deref(), d.qd), (Some("mail"), 8));
    let shares: Vec<u32> = d.lines.iter().map(|l| l.share_pct).collect();
    assert_eq!(shares, [60, 30, 10]);
    assert_eq!((d.lines[1].bs, d.lines[1].align), (8192, Some(4096)));
    assert_eq!(
        (d.lines[2].burst_delay, d.lines[2].burst_len),
        (Duration::from_millis(2), 4)
    );
    let d = disk(&s.jobs[1]);
    assert_eq!(
        (d.lines.len(), d.lines[0].bs, d.lines[0].random_pct, d.qd),
        (1, 1 << 20, 0, 1)
    );
    let d = disk(&s.jobs[2]);
    assert_eq!((d.lines[0].bs, d.qd), (8192, 28));
    // A file spec shadows a built-in of its name.
    let t = "name='x'\n[[spec]]\nname='db-oltp-8k'\nbs='512'\n[[test]]\nname='a'\nkind='disk'\nspec='db-oltp-8k'\n";
    let s = parse(t, "x").unwrap();
    let d = disk(&s.jobs[0]);
    assert_eq!((d.lines[0].bs, d.qd), (512, 1));
}

#[test]
fn bad_file_specs_name_the_key_and_line() {
    let e = err(&MIXED.replace("share = 10,", "share = 5,"));
    at(&e, 5, "lines");
    has(&e, "add up to 95 %");
    // bs beside a mixed spec: the key is named on its line.
    let e = err(&MIXED.replace(
        "spec = [\"mail\", \"seq-read\", \"db-oltp-8k\"]",
        "spec = \"mail\"\nbs = \"8k\"",
    ));
    at(&e, 21, "bs");
    starts(
        &e,
        "bs sets the transfer of a single-line spec; spec 'mail' has 3 lines",
    );
    let e = err(&MIXED.replace("read = 70,", "read = 70, colour = 1,"));
    at(&e, 6, "colour");
    let e = err(&MIXED.replace("{ share = 60, bs = \"4k\",", "{ bs = \"4k\","));
    at(&e, 6, "share");
    let e = err(&MIXED.replace("bs = \"1m\"", "bs = \"2g\""));
    at(&e, 13, "bs");
    let e = err(&MIXED.replace("burst_len = 4", "burst_len = 0"));
    at(&e, 8, "burst_len");
    let e = err(&MIXED.replace("name = \"seq-read\"", "name = \"mail\""));
    assert!(
        e.msg.contains("a second [[spec]] named 'mail'") && e.line == Some(12),
        "{e}"
    );
    let e = err(&MIXED.replace("lines = [", "bs = 1\nlines = ["));
    key(&e, "bs");
    let e = err(&MIXED.replace("\"db-oltp-8k\"]", "\"nope\"]"));
    has(&e, "unknown spec 'nope'; the file's [[spec]]s and the built-ins: mail, seq-read, web-file-server-4k");
}

#[test]
fn workers_spread_and_cpus_pass_through() {
    let s = suite(
        "name='t'\n[[test]]\nname='a'\nkind='disk'\nworkers=0\nspread=true\ncpus='0-3'\nqd=32\n",
    );
    let d = disk(&s.jobs[0]);
    assert_eq!(
        (d.workers, d.spread, d.cpus.as_deref()),
        (0, true, Some(&[0, 1, 2, 3][..]))
    );
    let e = err("name='t'\n[[test]]\nname='a'\nkind='disk'\ncpus='3-1'\n");
    at(&e, 5, "cpus");
    let s = suite("name='t'\n[[test]]\nname='a'\nkind='disk'\nspread=[false,true]\n");
    assert_eq!(s.jobs[1].name, "a/spread=true");
}

/// `confidence`: the suite's for every test, a test's over it, recorded in
/// the params; bad values and too few `reps` refused at their line;
/// `--confidence` over all, refused with `--reps` under 3.
#[test]
fn confidence_keys() {
    let s = suite(
        "name='c'\nreps=5\nconfidence='95,5'\n[[test]]\nname='a'\nkind='disk'\n[[test]]\nname='b'\nkind='net-rr'\nconfidence='99, 2'\n",
    );
    let c: Vec<_> = s.jobs.iter().map(|j| j.confidence.unwrap()).collect();
    assert_eq!((c[0].level, c[0].width_pct), (95, 5.0));
    assert_eq!((c[1].level, c[1].width_pct), (99, 2.0));
    assert_eq!(s.jobs[0].params["confidence"], "95,5");
    assert_eq!(s.jobs[1].params["confidence"], "99,2");
    assert!(suite("name='c'\n[[test]]\nname='a'\nkind='disk'\n").jobs[0]
        .confidence
        .is_none());
    let e = err("name='c'\nreps=5\n[[test]]\nname='a'\nkind='disk'\nconfidence='80,5'\n");
    at(&e, 6, "confidence");
    assert!(e.to_string().contains("90, 95 or 99"), "{e}");
    let e = err("name='c'\nconfidence='95,5'\n[[test]]\nname='a'\nkind='disk'\n");
    at(&e, 2, "confidence");
    assert!(e.to_string().contains("reps of at least 3"), "{e}");
    let mut s = suite("name='c'\nreps=2\n[[test]]\nname='a'\nkind='disk'\n");
    let c = iotoll_model::ci::Confidence::parse("90,10").unwrap();
    let e = s.apply_confidence(Some(c), None).unwrap_err();
    assert!(e.contains("its reps is 2"), "{e}");
    let e = s.clone().apply_confidence(Some(c), Some(1)).unwrap_err();
    assert!(e.contains("--reps is 1"), "{e}");
    s.apply_confidence(Some(c), Some(3)).unwrap();
    assert_eq!(s.jobs[0].confidence, Some(c));
    assert_eq!(s.jobs[0].params["confidence"], "90,10");
}

/// `net-udp`: its keys become the client's UDP spec (size is the
/// datagram's, rate bits per second as a string or a number); wrong values
/// and placing it on hosts name the key and line.
#[test]
fn udp_tests_take_size_and_rate() {
    let s = suite("name='t'\n[[test]]\nname='u'\nkind='net-udp'\ndir='bidir'\nconns=2\nsize=512\nrate=['500m', 1000000]\n");
    let names: Vec<&str> = s.jobs.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(names, ["u/rate=500m", "u/rate=1000000"]);
    let c = net(&s.jobs[0]);
    assert_eq!(c.kind, TestKind::Udp);
    assert_eq!((c.msg, c.rate, c.conns), (512, Some(500_000_000), 2));
    assert_eq!(s.jobs[0].metric, "mbit_s");
    let c = net(&s.jobs[1]);
    assert_eq!(c.rate, Some(1_000_000));
    // Defaults: 1472-byte datagrams, unlimited.
    let d = suite("name='t'\n[[test]]\nname='u'\nkind='net-udp'\n");
    let c = net(&d.jobs[0]);
    assert_eq!((c.msg, c.rate), (1472, None));
    let e = err("name='t'\n[[test]]\nname='u'\nkind='net-udp'\nrate='fast'\n");
    at(&e, 5, "rate");
    has(&e, "not a rate");
    let e = err("name='t'\n[[test]]\nname='u'\nkind='net-udp'\n\nsize=16\n");
    at(&e, 6, "size");
    has(&e, "65507");
    let e = err("name='t'\n[[test]]\nname='u'\nkind='net-udp'\nmsg='1k'\n");
    has(&e, "unknown key");
    has(&e, "rate");
    // On hosts: each pair's client sends to its server.
    let s = suite(
        "name='t'\n[[test]]\nname='u'\nkind='net-udp'\npairs=[['a','b'],['b','a']]\nrate='100m'\n",
    );
    let Placement::Net { pairs } = &s.jobs[0].placement else {
        panic!()
    };
    assert_eq!(pairs.len(), 2);
    let e = err("name='t'\n[[test]]\nname='u'\nkind='net-udp'\npairs=[['a','b']]\ndir='bidir'\n");
    at(&e, 6, "dir");
    has(&e, "swap the pair's hosts");
    let e = err("name='t'\n[[test]]\nname='u'\nkind='net-udp'\nclients=['a']\nserver='b'\ndir=['tx','rx']\n");
    at(&e, 7, "dir");
}

/// `net-crr` and `net-cc`: their keys become the client's spec; keys of
/// other kinds are refused by name.
#[test]
fn connection_rate_tests_take_their_keys() {
    let s = suite(
        "name='t'\n[[test]]\nname='c'\nkind='net-crr'\nconns=[2, 8]\nsize='1k'\nlinger0=true\n",
    );
    let names: Vec<&str> = s.jobs.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(names, ["c/conns=2", "c/conns=8"]);
    let c = net(&s.jobs[1]);
    assert_eq!(c.kind, TestKind::Crr);
    assert_eq!((c.conns, c.req, c.resp, c.linger0), (8, 1024, 1024, true));
    assert_eq!(s.jobs[0].metric, "conn_s");
    let d = suite("name='t'\n[[test]]\nname='c'\nkind='net-cc'\n");
    let c = net(&d.jobs[0]);
    assert_eq!((c.kind, c.linger0), (TestKind::Cc, false));
    let e = err("name='t'\n[[test]]\nname='c'\nkind='net-cc'\nreq=10\n");
    has(&e, "unknown key");
    has(&e, "linger0");
    let e = err("name='t'\n[[test]]\nname='c'\nkind='net-crr'\nconns=5000\n");
    at(&e, 5, "conns");
    has(&e, "between 1 and 1000");
    let s = suite("name='t'\n[[test]]\nname='c'\nkind='net-crr'\npairs=[['a','b']]\n");
    assert!(matches!(&s.jobs[0].placement, Placement::Net { pairs } if pairs.len() == 1));
    // Placed on hosts, linger0 reaches the pairs' clients in the test's
    // parameters.
    let s = suite("name='t'\n[[test]]\nname='c'\nkind='net-cc'\npairs=[['a','b']]\nlinger0=true\n");
    let c = net(&s.jobs[0]);
    assert!(c.params().linger0);
}

/// `tls` on stream and rr tests, as `--tls`: true for the default cipher
/// or a cipher's name; anything else names the ciphers; udp has no TLS.
#[test]
fn tls_takes_true_or_a_cipher() {
    use iotoll_net::tls::Cipher;
    let s = suite("name='t'\n[[test]]\nname='a'\nkind='net-rr'\ntls=true\n[[test]]\nname='b'\nkind='net-stream'\ntls='chacha20-poly1305'\n[[test]]\nname='c'\nkind='net-stream'\ntls=false\n");
    let tls: Vec<Option<Cipher>> = s.jobs.iter().map(|j| net(j).tls).collect();
    assert_eq!(
        tls,
        [
            Some(Cipher::Aes128Gcm),
            Some(Cipher::Chacha20Poly1305),
            None
        ]
    );
    let e = err("name='t'\n[[test]]\nname='a'\nkind='net-rr'\ntls='rot13'\n");
    assert!(e.msg.contains("aes-128-gcm"), "{}", e.msg);
    let e = err("name='t'\n[[test]]\nname='a'\nkind='net-udp'\ntls=true\n");
    assert!(e.msg.contains("unknown key"), "{}", e.msg);
}
