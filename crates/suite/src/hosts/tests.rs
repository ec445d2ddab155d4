use super::*;
use crate::file::tests::{at, builtin, err, has, key, net, starts, suite};
use crate::parse;

fn file_err(text: &str) -> SuiteError {
    parse_hosts_file(text, "h.toml").unwrap_err()
}

const NET: &str = "name='t'\n[[test]]\nname='bidir'\nkind='net-stream'\n";
const DISK: &str = "name='t'\n[[test]]\nname='d'\nkind='disk'\n";

#[test]
fn host_tables_of_every_form() {
    let text = r#"name = "t"
[hosts]
srv = "10.0.0.1"
c1 = "client1.lab:7600"
c2 = { address = "[fd00::2]:7700", ssh = "bench@c2", data = ["10.0.1.2", "10.0.2.2"] }
c3 = { lab = "c3" }
c4 = { address = "10.0.0.4" }
[hosts.c5]
address = "c5.lab"

[[test]]
name = "d"
kind = "disk"
"#;
    let s = parse(text, "s.toml").unwrap_or_else(|e| panic!("{e}"));
    let h = &s.hosts;
    let names: Vec<&str> = h.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, ["srv", "c1", "c2", "c3", "c4", "c5"]);
    assert_eq!(h[0].at, HostAt::Address("10.0.0.1".into()));
    assert_eq!(h[0].data, ["10.0.0.1".parse::<IpAddr>().unwrap()]);
    assert_eq!(h[0].origin, "s.toml:3");
    assert_eq!(h[1].at, HostAt::Address("client1.lab:7600".into()));
    assert!(
        h[1].data.is_empty(),
        "a name's IP is known only at run time"
    );
    assert_eq!(h[2].ssh.as_deref(), Some("bench@c2"));
    assert_eq!(h[2].data.len(), 2);
    assert_eq!(h[3].at, HostAt::Lab("c3".into()));
    assert_eq!(h[4].data, ["10.0.0.4".parse::<IpAddr>().unwrap()]);
    assert_eq!(
        (h[5].at.clone(), h[5].origin.as_str()),
        (HostAt::Address("c5.lab".into()), "s.toml:8")
    );
}

#[test]
fn bad_host_entries_name_the_host_and_key() {
    let e = err("name='t'\n[hosts]\nc1 = { address = '10.0.0.1', colour = 'red' }\n");
    at(&e, 3, "colour");
    assert_eq!(
        e.msg,
        "unknown key for host 'c1'; known: address, ssh, data, or lab"
    );
    let e = err("name='t'\n[hosts]\n'bad name' = '10.0.0.1'\n");
    has(&e, "'bad name' is not a host name");
    let long = "h".repeat(33);
    let e = err(&format!("name='t'\n[hosts]\n{long} = '10.0.0.1'\n"));
    has(&e, "1-32 characters");
    let e = err("name='t'\n[hosts]\nc1 = '10.0.0.1:99999'\n");
    at(&e, 3, "c1");
    assert_eq!(
        e.msg,
        "'10.0.0.1:99999' is not ADDR[:PORT] (the port must be 1-65535)"
    );
    let e = err("name='t'\n[hosts]\nc1 = 'a b'\n");
    has(&e, "expected an IP address or a host name");
    let e = err("name='t'\n[hosts]\nc1 = 7\n");
    starts(&e, "host 'c1': expected \"ADDR[:PORT]\"");
    let e = err("name='t'\n[hosts]\nc1 = { ssh = 'u@c1' }\n");
    assert_eq!(
        e.msg,
        "host 'c1' has no address: give address = \"ADDR[:PORT]\" or lab = \"HOST\""
    );
    let e = err("name='t'\n[hosts]\nc1 = { address = 'x', lab = 'c1' }\n");
    assert_eq!(
        (e.key.as_deref(), e.msg.as_str()),
        (
            Some("c1.lab"),
            "host 'c1' has both address and lab: give one"
        )
    );
    let e = err("name='t'\n[hosts]\nc1 = { lab = 'c1', ssh = 'u@x' }\n");
    has(&e, "ssh does not apply");
    let e = err("name='t'\n[hosts]\nc1 = { address = 'x', ssh = '-oProxyCommand=sh' }\n");
    key(&e, "c1.ssh");
    has(&e, "not starting with '-'");
    let e = err("name='t'\n[hosts]\nc1 = { address = 'x', data = ['10.0.0.1', 'eth0'] }\n");
    assert_eq!(
        (e.key.as_deref(), e.msg.as_str()),
        (Some("c1.data"), "'eth0' is not an IP address")
    );
    let e = err("name='t'\n[hosts]\nc1 = { address = 'x', data = [] }\n");
    starts(&e, "expected a list of IP addresses");
    let e = err("name='t'\nhosts = 3\n");
    at(&e, 2, "hosts");
}

#[test]
fn a_host_listed_twice_names_the_host_and_its_line() {
    let e = err("name='t'\n[hosts]\nc1 = '10.0.0.1'\nc2 = '10.0.0.2'\nc1 = '10.0.0.3'\n");
    assert_eq!(
        (e.line, e.msg.as_str()),
        (Some(5), "host 'c1' is listed twice"),
        "{e}"
    );
    let e = file_err("[hosts]\nc1 = '10.0.0.1'\n\n[hosts.c1]\naddress = '10.0.0.3'\n");
    assert_eq!(
        (e.line, e.msg.as_str()),
        (Some(4), "host 'c1' is listed twice"),
        "{e}"
    );
    assert_eq!(e.to_string(), "h.toml:4: host 'c1' is listed twice");
    // Other duplicate keys say which key.
    let e = err("name='t'\nname='u'\n");
    assert_eq!(
        (e.line, e.msg.as_str()),
        (Some(2), "duplicate key 'name'"),
        "{e}"
    );
}

#[test]
fn two_hosts_at_one_address_name_both() {
    let e = file_err("[hosts]\na = '10.0.0.1'\nb = { address = '10.0.0.1:7575' }\n");
    assert_eq!(e.line, Some(3), "{e}");
    assert_eq!(
        e.msg,
        "hosts 'a' and 'b' are the same agent (10.0.0.1:7575)"
    );
    let e = file_err("[hosts]\na = 'Srv.Lab'\nb = 'srv.lab:7575'\n");
    starts(&e, "hosts 'a' and 'b' are the same agent");
    let e = file_err("[hosts]\na = '::1'\nb = '[::1]'\n");
    assert_eq!(e.msg, "hosts 'a' and 'b' are the same agent ([::1]:7575)");
    // Another port is another agent.
    assert_eq!(
        parse_hosts_file("[hosts]\na = '10.0.0.1'\nb = '10.0.0.1:7576'\n", "h")
            .unwrap()
            .len(),
        2
    );
}

#[test]
fn hosts_files_hold_hosts_only() {
    let e = file_err("name = 'x'\n[hosts]\na = '10.0.0.1'\n");
    at(&e, 1, "name");
    starts(&e, "a hosts file has only a [hosts] table");
    let e = file_err("# nothing\n");
    assert_eq!(e.msg, "the hosts file defines no host ([hosts] table)");
    let e = file_err("[hosts]\na = '10.0.0.1\n");
    assert_eq!((e.file.as_str(), e.line), ("h.toml", Some(2)), "{e}");
    let h = parse_hosts_file("[hosts]\nsrv = '10.0.0.1'\n", "h.toml").unwrap();
    assert_eq!(h[0].origin, "h.toml:2");
}

#[test]
fn clients_and_server_expand_into_pairs_in_client_order() {
    let s = suite(&format!(
        "{NET}clients = ['c1', 'c2']\nserver = 'srv'\npairs_per_client = 3\nconns = [1, 4]\n"
    ));
    assert_eq!(s.jobs.len(), 2, "placement is not swept");
    let p = |c: &str| (c.to_string(), "srv".to_string());
    let want = vec![p("c1"), p("c1"), p("c1"), p("c2"), p("c2"), p("c2")];
    for j in &s.jobs {
        assert_eq!(
            j.placement,
            Placement::Net {
                pairs: want.clone()
            }
        );
        assert_eq!(j.params["pairs"][3], serde_json::json!(["c2", "srv"]));
    }
    assert_eq!(s.jobs[1].name, "bidir/conns=4");
    assert_eq!(s.jobs[0].placement.hosts(), ["c1", "srv", "c2"]);
    // pairs_per_client defaults to 1.
    let s = suite(&format!("{NET}clients = ['c1', 'c2']\nserver = 'srv'\n"));
    assert_eq!(s.jobs[0].placement.label(), "2 pairs: c1>srv, c2>srv");
    let s = suite(&format!(
        "{NET}pairs = [['c1', 's1'], ['c2', 's1'], ['c1', 's2']]\n"
    ));
    assert_eq!(s.jobs[0].placement.hosts(), ["c1", "s1", "c2", "s2"]);
    let s = suite(&format!("{DISK}on = ['h1', 'h2']\n"));
    assert_eq!(
        s.jobs[0].placement,
        Placement::Disk {
            on: vec!["h1".into(), "h2".into()]
        }
    );
    assert_eq!(s.jobs[0].params["on"], serde_json::json!(["h1", "h2"]));
    assert_eq!(s.jobs[0].placement.label(), "on h1, h2");
    let s = suite(DISK);
    assert!(s.jobs[0].placement.is_local() && s.jobs[0].params.get("on").is_none());
}

#[test]
fn bad_placements_name_the_key() {
    let e = err(&format!("{NET}on = ['h1']\n"));
    at(&e, 5, "on");
    starts(
        &e,
        "on places a disk test; a net-stream test is placed with pairs",
    );
    let e = err(&format!("{DISK}pairs = [['a', 'b']]\n"));
    at(&e, 5, "pairs");
    assert_eq!(
        e.msg,
        "pairs places a network test; a disk test runs on hosts with on = [\"h1\", ...]"
    );
    let e = err(&format!("{DISK}server = 'b'\n"));
    key(&e, "server");
    let e = err(&format!(
        "{NET}pairs = [['a', 'b']]\nclients = ['c']\nserver = 's'\n"
    ));
    at(&e, 6, "clients");
    starts(&e, "pairs and clients both give the test's pairs");
    let e = err(&format!("{NET}pairs = [['a', 'b'], ['c', 'c']]\n"));
    key(&e, "pairs");
    assert_eq!(
        e.msg,
        "pair 2 has 'c' as both client and server: a pair needs two hosts"
    );
    let e = err(&format!("{NET}pairs = [['a', 'b', 'c']]\n"));
    starts(&e, "pair 1: expected a list of [client, server] pairs");
    let e = err(&format!("{NET}pairs = []\n"));
    starts(&e, "expected a list of [client, server] pairs");
    let e = err(&format!("{NET}clients = ['a', 's']\nserver = 's'\n"));
    assert_eq!(
        (e.key.as_deref(), e.msg.as_str()),
        (
            Some("clients"),
            "host 's' is both a client and the server: a pair needs two hosts"
        )
    );
    let e = err(&format!("{NET}clients = ['a']\n"));
    at(&e, 2, "server");
    let e = err(&format!("{NET}server = 's'\n"));
    key(&e, "clients");
    let e = err(&format!("{NET}pairs_per_client = 2\n"));
    key(&e, "pairs_per_client");
    let e = err(&format!(
        "{NET}clients = ['a']\nserver = 's'\npairs_per_client = 0\n"
    ));
    at(&e, 7, "pairs_per_client");
    let e = err(&format!(
        "{NET}clients = ['a', 'b']\nserver = 's'\npairs_per_client = 4000000000\n"
    ));
    has(&e, "more than 10000 pairs");
    let e = err(&format!("{DISK}on = ['h1', 'h1']\n"));
    assert_eq!(
        (e.key.as_deref(), e.msg.as_str()),
        (Some("on"), "host 'h1' is named twice")
    );
    let e = err(&format!("{DISK}on = 'h1'\n"));
    starts(&e, "expected a list of host names: on = ");
    let e = err(&format!("{DISK}on = ['no way']\n"));
    has(&e, "is not a host name");
    // The known keys of a kind include its placement keys.
    let e = err(&format!("{DISK}bogus = 1\n"));
    assert!(e.msg.ends_with("and to place it on hosts: on"), "{e}");
}

const PAIRS: &str = "name='t'\n[hosts]\nc1 = '10.0.0.1'\nsrv = { address = '10.0.0.9', ssh = 'me@srv' }\n[[test]]\nname='bidir'\nkind='net-stream'\npairs = [['c1', 'srv'], ['c2', 'srv'], ['c9', 'srv']]\n[[test]]\nname='d'\nkind='disk'\non = ['c2', 'c1']\n";

#[test]
fn hosts_files_override_the_suite_and_only_used_hosts_return() {
    let s = suite(PAIRS);
    let file = parse_hosts_file(
        "[hosts]\nsrv = '10.1.0.9'\nc2 = '10.1.0.2'\nc9 = '10.1.0.3'\nunused = '10.1.0.4'\n",
        "h.toml",
    )
    .unwrap();
    let r = resolve_hosts(&s, &file, None).unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<&str> = r.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, ["c1", "srv", "c2", "c9"], "first-use order");
    assert_eq!(
        r[0].origin, "s.toml:3",
        "the suite's where the file has none"
    );
    assert_eq!(
        (r[1].at.clone(), r[1].ssh.clone(), r[1].origin.as_str()),
        (HostAt::Address("10.1.0.9".into()), None, "h.toml:2"),
        "the file's entry replaces the suite's whole"
    );
}

#[test]
fn unknown_hosts_name_test_pair_and_host() {
    let s = suite(PAIRS);
    let file = parse_hosts_file("[hosts]\nc2 = '10.1.0.2'\n", "h.toml").unwrap();
    let e = resolve_hosts(&s, &file, None).unwrap_err();
    assert_eq!(
        e,
        "test 'bidir': pair 3 names host 'c9', which is not in the hosts file or the suite's [hosts] (known: c1, srv, c2)"
    );
    let e = resolve_hosts(
        &suite("name='t'\n[[test]]\nname='bidir'\nkind='net-stream'\npairs = [['c1', 'srv']]\n"),
        &[],
        None,
    )
    .unwrap_err();
    assert_eq!(
        e,
        "test 'bidir': pair 1 names host 'c1', which is not in any [hosts] table (known: none)"
    );
    let file = parse_hosts_file("[hosts]\nc1 = '10.1.0.2'\nsrv = '10.1.0.3'\n", "h.toml").unwrap();
    let e = resolve_hosts(&suite(&format!("{DISK}on = ['c1', 'c9']\n")), &file, None).unwrap_err();
    assert_eq!(
        e,
        "test 'd': on names host 'c9', which is not in the hosts file (known: c1, srv)"
    );
    // Two names for one agent, across the suite and the file.
    let file = parse_hosts_file("[hosts]\nc2 = '10.0.0.1'\nc9 = '10.0.0.3'\n", "h.toml").unwrap();
    let e = resolve_hosts(&s, &file, None).unwrap_err();
    assert_eq!(
        e,
        "hosts 'c1' (s.toml:3) and 'c2' (h.toml:2) are the same agent (10.0.0.1:7575)"
    );
}

#[test]
fn lab_hosts_fill_in_undefined_names() {
    let lab: Vec<String> = ["server", "c1", "c2"].map(String::from).to_vec();
    let s = suite(&format!("{NET}clients = ['c1', 'c2']\nserver = 'server'\n"));
    let r = resolve_hosts(&s, &[], Some(&lab)).unwrap();
    assert_eq!(r.len(), 3);
    assert_eq!(
        (r[0].at.clone(), r[0].origin.as_str()),
        (HostAt::Lab("c1".into()), "--lab")
    );
    // A defined name wins over the lab's.
    let file = parse_hosts_file("[hosts]\nc2 = '10.0.0.2'\n", "h.toml").unwrap();
    let r = resolve_hosts(&s, &file, Some(&lab)).unwrap();
    assert_eq!(r[2].at, HostAt::Address("10.0.0.2".into()));
    let s = suite(&format!("{NET}clients = ['c1', 'c7']\nserver = 'server'\n"));
    let e = resolve_hosts(&s, &[], Some(&lab)).unwrap_err();
    assert_eq!(e, "test 'bidir': pair 2 names host 'c7', which is neither in any [hosts] table (known: none) nor a host of the lab (its hosts: server, c1, c2)");
    // { lab = ... } needs --lab, and a host the lab has.
    let s = suite(&format!("name='t'\n[hosts]\nbig = {{ lab = 'server' }}\nsmall = {{ lab = 'c9' }}\n{}on = ['big', 'small']\n", &DISK[9..]));
    let e = resolve_hosts(&s, &[], None).unwrap_err();
    assert_eq!(
        e,
        "test 'd': on names host 'big', which is { lab = \"server\" } (s.toml:3): give --lab NAME"
    );
    let e = resolve_hosts(&s, &[], Some(&lab)).unwrap_err();
    assert_eq!(e, "test 'd': on names host 'small', which is { lab = \"c9\" } (s.toml:4), but the lab has no host 'c9' (its hosts: server, c1, c2)");
    // One lab host under two names is one agent.
    let s = suite(&format!(
        "name='t'\n[hosts]\nbig = {{ lab = 'c1' }}\n{}on = ['big', 'c1']\n",
        &DISK[9..]
    ));
    let e = resolve_hosts(&s, &[], Some(&lab)).unwrap_err();
    assert!(
        e.starts_with("hosts 'big' (s.toml:3) and 'c1' (--lab) are the same agent"),
        "{e}"
    );
}

#[test]
fn the_bidirectional_study_runs_in_quad_100m() {
    let s = builtin("bidirectional-transfer-study");
    let j = &s.jobs[0];
    let Placement::Net { pairs } = &j.placement else {
        panic!("{:?}", j.placement)
    };
    assert_eq!(pairs.len(), 16);
    assert_eq!(pairs[15], ("c16".to_string(), "server".to_string()));
    let c = net(j);
    assert_eq!(
        (c.conns, c.dir, c.time),
        (
            1,
            iotoll_net::Dir::Bidir,
            std::time::Duration::from_secs(120)
        )
    );
    assert_eq!((j.reps, j.rule.label()), (3, "mean".to_string()));
    let lab = iotoll_lab::load("quad-100m", &[]).unwrap();
    let names: Vec<String> = lab.hosts.iter().map(|h| h.name.clone()).collect();
    let r = resolve_hosts(&s, &[], Some(&names)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.len(), 17);
    assert!(r.iter().all(|h| matches!(h.at, HostAt::Lab(_))));
}

/// An .icf written here holds this host's workers: a placed test is
/// refused, not exported without its hosts.
#[test]
fn export_icf_refuses_placed_tests() {
    let s = suite(&format!("{DISK}on = ['h1', 'h2']\n"));
    let o = crate::icf::ExportOptions {
        test: None,
        targets: Vec::new(),
        manager: "HOST".into(),
        cpus: 2,
    };
    let e = crate::icf::export(&s, &o).unwrap_err();
    assert_eq!(e, "test 'd' runs on hosts (h1, h2): an .icf written by iotoll holds this host's workers only; export a test without `on`");
}

#[test]
fn addresses() {
    for (a, host, port) in [
        ("10.0.0.1", "10.0.0.1", 7575),
        ("10.0.0.1:9", "10.0.0.1", 9),
        ("::1", "::1", 7575),
        ("[::1]:80", "::1", 80),
        ("Host.Lab", "host.lab", 7575),
        ("host:1", "host", 1),
    ] {
        assert_eq!(check_address(a).unwrap().0, (host.to_string(), port), "{a}");
    }
    for a in [
        "", ":80", "h:0", "h:x", "[::1", "[nope]:1", "[::1]80", "-h", "a b", "h:1:2",
    ] {
        assert!(check_address(a).is_err(), "{a}");
    }
}
