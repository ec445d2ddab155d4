//! A lab host's `[host.sysctl]` table for real: the values reach the
//! host's namespace (and only it) and the run's disclosure; keys the
//! kernel keeps for the whole machine are refused by name before
//! anything is created. Needs root; skipped otherwise, failed under CI.

mod common;

fn setup() -> bool {
    common::setup("sysctl")
}

/// A lab name of this process ("q-" for the engineer running these).
fn unique(tag: &str) -> String {
    common::unique("q-", tag)
}

fn namespaces_of(lab: &str) -> Vec<String> {
    common::netns_with(&format!("iotoll-{lab}-"))
        .into_iter()
        .collect()
}

fn machine(key: &str) -> String {
    std::fs::read_to_string(format!("/proc/sys/{}", key.replace('.', "/")))
        .unwrap()
        .trim()
        .to_string()
}

#[test]
fn tuned_pair_sets_its_sysctls_in_each_host_only_and_discloses_them() {
    if !setup() {
        return;
    }
    let name = unique("tuned");
    // ECN: a per-namespace key the built-in leaves alone, on one host only,
    // to a value unlike the kernel's default (2).
    let sets = vec![format!("name={name}"), "sysctl.a.net.ipv4.tcp_ecn=1".into()];
    let outside = [
        "net.ipv4.tcp_timestamps",
        "net.ipv4.tcp_sack",
        "net.ipv4.tcp_ecn",
    ]
    .map(|k| (k, machine(k)));
    let def = iotoll_lab::load("pair-10g-tuned", &sets).unwrap();
    let st = iotoll_lab::up(&def, false).unwrap();
    let get = |h: &str, k: &str| iotoll_lab::host_sysctl(st.host(h).unwrap(), k).unwrap();
    for h in ["a", "b"] {
        assert_eq!(get(h, "net.ipv4.tcp_timestamps").as_deref(), Some("0"));
        assert_eq!(get(h, "net.ipv4.tcp_sack").as_deref(), Some("0"));
        assert_eq!(get(h, "net.core.optmem_max").as_deref(), Some("16777216"));
        assert_eq!(
            get(h, "net.ipv4.tcp_max_syn_backlog").as_deref(),
            Some("8192")
        );
        assert_eq!(
            get(h, "net.ipv4.tcp_rmem").as_deref(),
            Some("4096\t87380\t16777216")
        );
    }
    assert_eq!(get("a", "net.ipv4.tcp_ecn").as_deref(), Some("1"));
    assert_eq!(
        get("b", "net.ipv4.tcp_ecn").as_deref(),
        Some("2"),
        "b is untouched"
    );
    // The machine's own values are as they were.
    for (k, v) in &outside {
        assert_eq!(&machine(k), v, "{k} outside the lab");
    }
    let d = st.disclosure();
    let a = &d["hosts"][0];
    assert_eq!(a["sysctl"]["net.ipv4.tcp_ecn"], "1");
    assert_eq!(a["in_force"]["sysctl"]["net.ipv4.tcp_ecn"], "1");
    assert_eq!(a["in_force"]["sysctl"]["net.ipv4.tcp_sack"], "0");
    assert_eq!(a["in_force"]["tcp"]["tcp_timestamps"], "0");
    assert_eq!(a["in_force"]["tcp"]["optmem_max"], "16777216");
    // Global ones are the machine's (absent inside a namespace).
    let mem = machine("net.ipv4.tcp_mem")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert_eq!(a["in_force"]["tcp"]["tcp_mem"], mem.as_str());
    assert!(a["in_force"]["tcp"]["netdev_max_backlog"].is_string());
    assert_eq!(d["hosts"][1]["in_force"]["tcp"]["tcp_sack"], "0");
    assert!(d["hosts"][1]["sysctl"].get("net.ipv4.tcp_ecn").is_none());
    iotoll_lab::down(&name).unwrap();
    assert!(namespaces_of(&name).is_empty());
}

#[test]
fn global_unknown_and_refused_sysctls_are_refused_before_anything_is_created() {
    if !setup() {
        return;
    }
    let name = unique("bad");
    let cases: &[(&[&str], &[&str])] = &[
        (
            &["sysctl.a.net.core.rmem_max=16777216", "sysctl.b.net.ipv4.tcp_mem=1 2 3"],
            &["net.core.rmem_max (host a), net.ipv4.tcp_mem (host b) are the whole machine's"],
        ),
        (
            &["sysctl.a.net.core.netdev_max_backlog=250000"],
            &["net.core.netdev_max_backlog (host a) is the whole machine's"],
        ),
        (&["sysctl.a.net.ipv4.no_such_knob=1"], &["net.ipv4.no_such_knob: no such sysctl"]),
        (
            &["sysctl.b.net.ipv4.tcp_congestion_control=nosuchcc"],
            &["host 'b': sysctl net.ipv4.tcp_congestion_control = \"nosuchcc\": the kernel refuses it"],
        ),
        (
            &["sysctl.a.net.ipv4.tcp_timestamps=x"],
            &["net.ipv4.tcp_timestamps = \"x\": the kernel refuses it"],
        ),
    ];
    for (extra, needles) in cases {
        let mut sets = vec![format!("name={name}")];
        sets.extend(extra.iter().map(|s| s.to_string()));
        let def = iotoll_lab::load("pair", &sets).unwrap();
        let e = iotoll_lab::up(&def, false).unwrap_err();
        assert!(e.is_usage(), "{e}");
        for n in *needles {
            assert!(e.to_string().contains(n), "{n:?} not in {e}");
        }
        assert!(
            namespaces_of(&name).is_empty(),
            "{extra:?} created something"
        );
        assert!(iotoll_lab::status(&name).unwrap().is_none());
    }
    // Not a network sysctl: refused when the lab is read.
    let e = iotoll_lab::load("pair", &["sysctl.a.kernel.pid_max=99999".into()]).unwrap_err();
    assert!(e.to_string().contains("only net.* sysctls"), "{e}");
}
