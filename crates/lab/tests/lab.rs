//! Labs brought up for real: every built-in up and down leaving nothing,
//! multi-homing, offloads and TCP settings in the namespaces.
//! Needs root; skipped otherwise, failed under CI (`CI` set).
//! Every lab gets a unique name (`--set name=...`) and this test binary
//! its own state directory, so tests run in parallel with anything else.

use iotoll_lab::{HostState, LabState};
use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};

mod common;

use common::netns_with;

fn setup() -> bool {
    common::setup("lab")
}

/// A lab name unique to this process and test.
fn unique(tag: &str) -> String {
    common::unique("t", tag)
}

fn root_links() -> BTreeSet<String> {
    parse_links(
        &std::process::Command::new("ip")
            .args(["-o", "link", "show"])
            .output()
            .unwrap(),
    )
}

/// The links of a named network namespace.
fn links_in(ns: &str) -> BTreeSet<String> {
    parse_links(
        &std::process::Command::new("ip")
            .args(["-n", ns, "-o", "link", "show"])
            .output()
            .unwrap(),
    )
}

fn parse_links(out: &std::process::Output) -> BTreeSet<String> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split(':').nth(1))
        .map(|n| n.trim().split('@').next().unwrap_or("").to_string())
        .collect()
}

fn root_qdiscs() -> String {
    let out = std::process::Command::new("tc")
        .args(["qdisc", "show"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn up(builtin: &str, name: &str, sets: &[&str]) -> LabState {
    let mut s = vec![format!("name={name}")];
    s.extend(sets.iter().map(|x| x.to_string()));
    let def = iotoll_lab::load(builtin, &s).unwrap();
    iotoll_lab::up(&def, false).unwrap_or_else(|e| panic!("up {name}: {e}"))
}

#[test]
fn every_builtin_up_and_down_leaves_nothing_behind() {
    if !setup() {
        return;
    }
    for b in iotoll_lab::builtin_names() {
        let name = unique(&format!("bi{}", b.len()));
        let name = format!(
            "{name}-{}",
            b.replace('-', "").chars().take(6).collect::<String>()
        );
        let prefix = format!("iotoll-{name}-");
        let links_before = root_links();
        let qdiscs_before = root_qdiscs();
        assert!(netns_with(&prefix).is_empty());
        let st = up(b, &name, &[]);
        assert!(st.complete);
        let ns = netns_with(&prefix);
        assert_eq!(ns.len(), st.hosts.len() + 1, "{ns:?}");
        assert_eq!(st.namespaces.len(), ns.len());
        // The switch's ports are in the switch's namespace ...
        let ports: BTreeSet<String> = st
            .hosts
            .iter()
            .flat_map(|h| h.links.iter().map(|l| l.switch_port.clone()))
            .collect();
        let in_switch = links_in(&format!("{prefix}sw"));
        assert!(
            ports.is_subset(&in_switch),
            "{ports:?} not all in {in_switch:?}"
        );
        // ... and nothing of the lab is in the root namespace (whole lists:
        // no test of this binary touches the root namespace).
        assert_eq!(root_links(), links_before, "links in the root namespace");
        assert_eq!(root_qdiscs(), qdiscs_before, "qdiscs in the root namespace");
        assert_eq!(iotoll_lab::status(&name).unwrap().as_ref(), Some(&st));
        assert!(iotoll_lab::running()
            .unwrap()
            .iter()
            .any(|s| s.name == name));
        let removed = iotoll_lab::down(&name).unwrap();
        assert_eq!(removed.namespaces.len(), ns.len());
        assert!(netns_with(&prefix).is_empty(), "{:?}", netns_with(&prefix));
        assert!(iotoll_lab::status(&name).unwrap().is_none());
        assert_eq!(root_links(), links_before, "links in the root namespace");
        assert_eq!(root_qdiscs(), qdiscs_before, "qdiscs in the root namespace");
    }
}

fn rx_tx(host: &HostState, ifname: &str) -> (u64, u64) {
    let all = iotoll_lab::host_counters(host).unwrap();
    let i = all
        .iter()
        .find(|i| i.name == ifname)
        .unwrap_or_else(|| panic!("{ifname} not in {all:?}"));
    (i.rx_bytes, i.tx_bytes)
}

#[test]
fn traffic_to_address_k_uses_adapter_k() {
    if !setup() {
        return;
    }
    let name = unique("multi");
    let st = up("quad-100m", &name, &["rate=none"]);
    let server = st.host("server").unwrap().clone();
    let c1 = st.host("c1").unwrap().clone();
    assert_eq!(server.addresses.len(), 4);
    for k in 0..4 {
        let addr = server.addresses[k];
        let before: Vec<(u64, u64)> = (0..4).map(|j| rx_tx(&server, &format!("eth{j}"))).collect();
        let srv = server.clone();
        let listener = std::thread::spawn(move || {
            let _g = iotoll_lab::enter(&srv).unwrap();
            TcpListener::bind(SocketAddr::new(addr, 0)).unwrap()
        })
        .join()
        .unwrap();
        let port = listener.local_addr().unwrap().port();
        let echo = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut buf = vec![0u8; 1 << 20];
            let mut n = 0;
            while n < 4 << 20 {
                n += s.read(&mut buf).unwrap();
            }
            s.write_all(&vec![1u8; 4 << 20]).unwrap();
        });
        let c = c1.clone();
        std::thread::spawn(move || {
            let _g = iotoll_lab::enter(&c).unwrap();
            let mut s = TcpStream::connect(SocketAddr::new(addr, port)).unwrap();
            s.write_all(&vec![0u8; 4 << 20]).unwrap();
            let mut buf = vec![0u8; 1 << 20];
            let mut n = 0;
            while n < 4 << 20 {
                n += s.read(&mut buf).unwrap();
            }
        })
        .join()
        .unwrap();
        echo.join().unwrap();
        let after: Vec<(u64, u64)> = (0..4).map(|j| rx_tx(&server, &format!("eth{j}"))).collect();
        for j in 0..4 {
            let rx = after[j].0 - before[j].0;
            let tx = after[j].1 - before[j].1;
            if j == k {
                assert!(
                    rx >= 4 << 20 && tx >= 4 << 20,
                    "adapter {j} for {addr}: rx {rx} tx {tx}"
                );
            } else {
                assert!(
                    rx < 1 << 20 && tx < 1 << 20,
                    "adapter {j} carried {rx}/{tx} bytes for {addr}"
                );
            }
        }
    }
    iotoll_lab::down(&name).unwrap();
}

#[test]
fn offloads_mtu_and_tcp_settings_reach_the_namespaces() {
    if !setup() {
        return;
    }
    let name = unique("knobs");
    let st = up(
        "pair-1g",
        &name,
        &[
            "mtu=9000",
            "offloads.gro=on",
            "offloads.tso=off",
            "congestion_control=reno",
            "tcp_rmem=4096 65536 1000000",
        ],
    );
    for h in &st.hosts {
        assert_eq!(h.links[0].mtu, 9000);
        let off = iotoll_lab::link_offloads(h, "eth0").unwrap();
        assert!(off.contains(&("tso", false)), "{off:?}");
        assert!(off.contains(&("gro", true)), "{off:?}");
        assert_eq!(
            iotoll_lab::host_sysctl(h, "net.ipv4.tcp_congestion_control")
                .unwrap()
                .as_deref(),
            Some("reno")
        );
        assert_eq!(
            iotoll_lab::host_sysctl(h, "net.ipv4.tcp_rmem")
                .unwrap()
                .as_deref(),
            Some("4096\t65536\t1000000")
        );
    }
    let d = st.disclosure();
    assert_eq!(d["hosts"][0]["links"][0]["mtu"], 9000);
    assert_eq!(d["hosts"][0]["links"][0]["rate"], "1gbit");
    assert_eq!(d["hosts"][0]["links"][0]["offloads"]["tso"], false);
    assert_eq!(d["hosts"][1]["tcp"]["congestion_control"], "reno");
    assert_eq!(d["sets"][1], "mtu=9000");
    assert!(d["definition"].as_str().unwrap().contains("mtu = 9000"));
    // The thread's own namespace is back after the guard.
    let a = st.host("a").unwrap();
    let before = std::fs::read_link("/proc/thread-self/ns/net").unwrap();
    {
        let _g = iotoll_lab::enter(a).unwrap();
        assert_ne!(
            std::fs::read_link("/proc/thread-self/ns/net").unwrap(),
            before
        );
    }
    assert_eq!(
        std::fs::read_link("/proc/thread-self/ns/net").unwrap(),
        before
    );
    let b: IpAddr = st.host("b").unwrap().addresses[0];
    assert!(st.definition.contains(&b.to_string()));
    iotoll_lab::down(&name).unwrap();
}

#[test]
fn kernel_features_and_clashes_are_refused_before_anything_is_created() {
    if !setup() {
        return;
    }
    let name = unique("refuse");
    let prefix = format!("iotoll-{name}-");
    let sets = |extra: &str| vec![format!("name={name}"), extra.to_string()];
    let e = iotoll_lab::up(
        &iotoll_lab::load("pair", &sets("delay=1ms")).unwrap(),
        false,
    )
    .unwrap_err();
    assert!(e.is_usage() && e.to_string().contains("netem"), "{e}");
    let e = iotoll_lab::up(
        &iotoll_lab::load("pair", &sets("congestion_control=nosuchcc")).unwrap(),
        false,
    )
    .unwrap_err();
    assert!(e.is_usage() && e.to_string().contains("nosuchcc"), "{e}");
    // Available but not allowed: a namespace cannot default to it (EPERM).
    let list = |what: &str| {
        std::fs::read_to_string(format!("/proc/sys/net/ipv4/tcp_{what}_congestion_control"))
            .unwrap()
    };
    let allowed = list("allowed");
    let restricted = list("available")
        .split_whitespace()
        .find(|a| !allowed.split_whitespace().any(|b| b == *a))
        .map(str::to_string);
    match restricted {
        Some(cc) => {
            let e = iotoll_lab::up(
                &iotoll_lab::load("pair", &sets(&format!("congestion_control={cc}"))).unwrap(),
                false,
            )
            .unwrap_err();
            assert!(e.is_usage() && e.to_string().contains("not allowed"), "{e}");
        }
        None => eprintln!("every available congestion control is allowed: not tried"),
    }
    assert!(netns_with(&prefix).is_empty());
    assert!(iotoll_lab::status(&name).unwrap().is_none());
    // A subnet overlapping a lab that is up.
    let st = up("pair", &name, &[]);
    let other = unique("refuse2");
    let def = iotoll_lab::load(
        "pair",
        &[format!("name={other}"), format!("subnet={}", st.subnet)],
    )
    .unwrap();
    let e = iotoll_lab::up(&def, false).unwrap_err();
    assert!(e.is_usage() && e.to_string().contains("overlaps"), "{e}");
    assert!(netns_with(&format!("iotoll-{other}-")).is_empty());
    // Twice: refused, then replaced.
    let def = iotoll_lab::load("pair", &[format!("name={name}")]).unwrap();
    let e = iotoll_lab::up(&def, false).unwrap_err();
    assert!(e.is_usage() && e.to_string().contains("--replace"), "{e}");
    iotoll_lab::up(&def, true).unwrap();
    iotoll_lab::down(&name).unwrap();
    assert!(netns_with(&prefix).is_empty());
    let e = iotoll_lab::down(&name).unwrap_err();
    assert!(!e.is_usage() && e.to_string().contains("not up"), "{e}");
}

/// A throwaway namespace that is not the lab's, with a process in it;
/// removed (process and namespace) when dropped.
struct Foreign {
    name: String,
    sleeper: std::process::Child,
}

impl Foreign {
    fn new(tag: &str) -> Foreign {
        let name = format!("iotoll-test-foreign-{}-{tag}", std::process::id());
        let ok = std::process::Command::new("ip")
            .args(["netns", "add", &name])
            .status()
            .unwrap()
            .success();
        assert!(ok, "ip netns add {name}");
        let sleeper = std::process::Command::new("ip")
            .args(["netns", "exec", &name, "sleep", "600"])
            .spawn()
            .unwrap();
        Foreign { name, sleeper }
    }

    fn exists(&self) -> bool {
        std::path::Path::new("/run/netns").join(&self.name).exists()
    }

    fn sleeper_alive(&mut self) -> bool {
        self.sleeper.try_wait().unwrap().is_none()
    }
}

impl Drop for Foreign {
    fn drop(&mut self) {
        let _ = self.sleeper.kill();
        let _ = self.sleeper.wait();
        let _ = std::process::Command::new("ip")
            .args(["netns", "del", &self.name])
            .status();
    }
}

fn edit_state(name: &str, f: impl FnOnce(&mut serde_json::Value)) {
    let p = iotoll_lab::state_dir().join(format!("iotoll-{name}.json"));
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
    f(&mut v);
    std::fs::write(&p, serde_json::to_vec(&v).unwrap()).unwrap();
}

#[test]
fn down_leaves_a_foreign_namespace_named_in_an_edited_state_file_alone() {
    if !setup() {
        return;
    }
    let mut foreign = Foreign::new("down");
    let name = unique("foreign");
    let prefix = format!("iotoll-{name}-");
    up("pair", &name, &[]);
    // The foreign namespace by name, and by absolute path (which a join
    // onto /run/netns would take as given).
    let by_path = format!("/run/netns/{}", foreign.name);
    edit_state(&name, |v| {
        let ns = v["namespaces"].as_array_mut().unwrap();
        ns.insert(0, foreign.name.clone().into());
        ns.insert(0, by_path.clone().into());
    });
    // Nothing that reads the state to act on it takes it.
    let e = iotoll_lab::status(&name).unwrap_err().to_string();
    assert!(
        e.contains("does not produce") && e.contains("refused"),
        "{e}"
    );
    let e = iotoll_lab::down(&name).unwrap_err().to_string();
    assert!(e.contains(&foreign.name) && e.contains("left alone"), "{e}");
    assert!(foreign.exists(), "the foreign namespace was deleted");
    assert!(foreign.sleeper_alive(), "the process in it was killed");
    // The lab's own namespaces are gone, and its state file.
    assert!(netns_with(&prefix).is_empty(), "{:?}", netns_with(&prefix));
    assert!(iotoll_lab::status(&name).unwrap().is_none());
}

#[test]
fn a_host_namespace_edited_in_the_state_file_is_never_entered() {
    if !setup() {
        return;
    }
    let foreign = Foreign::new("host");
    let name = unique("edhost");
    up("pair", &name, &[]);
    for bad in [foreign.name.clone(), "/proc/1/ns/net".to_string()] {
        edit_state(&name, |v| v["hosts"][0]["netns"] = bad.clone().into());
        let e = iotoll_lab::status(&name).unwrap_err().to_string();
        assert!(e.contains("does not produce"), "{e}");
    }
    // A path-like name is refused by name, not joined onto /run/netns.
    let mut h = iotoll_lab::HostState {
        name: "a".into(),
        netns: "/proc/1/ns/net".into(),
        addresses: vec![],
        links: vec![],
        tcp: Default::default(),
        sysctl: Default::default(),
        cpus: None,
        confinement: None,
        cgroup: None,
        queue_masks: vec![],
    };
    let e = iotoll_lab::enter(&h).err().unwrap().to_string();
    assert!(e.contains("not a plain name"), "{e}");
    h.netns = "../../proc/1/ns/net".into();
    assert!(iotoll_lab::netns_path(&h).is_err());
    iotoll_lab::down(&name).unwrap();
    assert!(foreign.exists());
}
