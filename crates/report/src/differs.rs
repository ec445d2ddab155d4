//! What differs between the configurations: the short table a comparison
//! opens with (lab settings, the system's differing rows, the tests'
//! configuration — engine, direct I/O, target, TLS cipher, iSCSI digests —
//! and the kernel), and which part of a test each difference can reach, so
//! that findings on tests the compared setting cannot affect are ranked
//! after the others (or called noise).
//!
//! An endpoint's address (`ip:port` of an in-process or remote endpoint)
//! is never a difference: the port is ephemeral and the address is where
//! the endpoint was, not how the system was set up.

use crate::compare::{ConfigData, TestData};
use crate::tables::{TRow, Table};
use iotoll_model::Kind;
use serde::Serialize;

/// The part of a test a setting can affect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scope {
    /// Links, interfaces, TCP, lab settings, the peer's side, TLS.
    Network,
    /// Block devices, the I/O engine, direct I/O, the target.
    Storage,
    /// iSCSI session settings (digests): only iSCSI tests.
    Iscsi,
    /// The host as a whole (CPU, memory, kernel): every test.
    Host,
}

#[derive(Debug, Clone, Serialize)]
pub struct Difference {
    /// What differs (`lab.sets`, `os.kernel`, `engine (disk tests)`).
    pub item: String,
    /// Per configuration, baseline first; `–` where it has none.
    pub values: Vec<String>,
    pub scope: Scope,
    /// A state the system happened to be in (the clock at that moment,
    /// swap in use, iotoll's own build, an import's file), not a setting:
    /// shown, but never taken for what was compared.
    pub state: bool,
}

/// Rows shown in the opening table; the rest are under "System differences".
const SHOWN: usize = 12;

fn scope_of(key: &str) -> Scope {
    let top = key.split(['.', '[']).next().unwrap_or(key);
    match top {
        "lab" | "peer" | "interfaces" | "tcp" | "net" => Scope::Network,
        "block_devices" => Scope::Storage,
        "iscsi" => Scope::Iscsi,
        _ => Scope::Host,
    }
}

fn is_state(key: &str) -> bool {
    key == "cpu.current_mhz"
        || key.starts_with("memory.swap_used")
        || key.starts_with("iotoll.")
        || key == "imported_from"
        || key == "lab.source"
}

/// A row of addresses (an interface's, a lab host's, the lab's subnet,
/// chosen when the lab came up): where things listened, never what was
/// compared.
fn is_address(key: &str) -> bool {
    key.ends_with(".addresses") || key.ends_with(".address") || key == "lab.subnet"
}

/// A value with its IP addresses (and prefixes) blanked, so that a lab
/// link that differs only by the subnet it was given is not a difference.
fn without_addresses(v: &str) -> String {
    v.split_whitespace()
        .map(|t| {
            let ip = t.split('/').next().unwrap_or(t);
            if ip.parse::<std::net::IpAddr>().is_ok() {
                "·"
            } else {
                t
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Lab settings first, then the kernel, then the rest in the disclosure's
/// order; states last.
fn rank(d: &Difference) -> u8 {
    match () {
        _ if d.state => 4,
        _ if d.item.starts_with("lab.") => 0,
        _ if d.item.contains("kernel") => 1,
        _ if d.item.contains("(") => 2,
        _ => 3,
    }
}

/// A test's configuration: what is meant to differ between runs of the
/// same workload, as (item, value, scope).
pub(crate) fn setup_of(kind: Kind, doc: &iotoll_model::ResultDoc) -> Vec<(String, String)> {
    let s = doc.spec.stated();
    let mut out = Vec::new();
    let mut put = |k: &str, v: Option<String>| {
        if let Some(v) = v {
            out.push((k.to_string(), v));
        }
    };
    match kind {
        Kind::Disk => {
            put("engine", s.engine);
            put("direct", s.direct.map(|d| d.to_string()));
            put("target kind", s.target_kind);
            // A suite's temporary test file is named by the process id.
            put("target", s.target.filter(|t| !t.contains("iotoll-suite-")));
        }
        Kind::NetUdp => put("rate", s.rate.map(|r| iotoll_model::format_rate(r as u64))),
        Kind::NetCrr | Kind::NetCc => {}
        Kind::NetStream | Kind::NetRr => {
            // A native result states every key; an import's silence is not
            // cleartext.
            let native = s.auth.is_some();
            put("TLS cipher", s.tls.or(native.then(|| "none".into())));
            put("verify", s.verify.map(|v| v.to_string()));
        }
    }
    for session in doc.disk_disclosure().into_iter().flat_map(|d| &d.iscsi) {
        put("header digest", Some(session.header_digest.clone()));
        put("data digest", Some(session.data_digest.clone()));
    }
    out
}

fn setup_scope(item: &str) -> Scope {
    match item {
        "TLS cipher" | "verify" => Scope::Network,
        "header digest" | "data digest" => Scope::Iscsi,
        _ => Scope::Storage,
    }
}

/// The tests' configuration rows that differ: per item and kind, each
/// configuration's distinct values.
fn setup_rows(configs: &[ConfigData]) -> Vec<Difference> {
    let tests = configs.iter().flat_map(|c| &c.tests);
    let items = crate::compare::distinct(
        tests.flat_map(|t| t.setup.iter().map(|(k, _)| (t.kind, k.clone()))),
    );
    let mut out = Vec::new();
    for (kind, item) in items {
        let values: Vec<Vec<&str>> = configs
            .iter()
            .map(|c| {
                let vals = c
                    .tests
                    .iter()
                    .filter(|t| t.kind == kind)
                    .flat_map(|t| t.setup.iter().filter(|(k, _)| *k == item))
                    .map(|(_, v)| v.as_str());
                crate::compare::distinct(vals)
            })
            .collect();
        let stated: Vec<&Vec<&str>> = values.iter().filter(|v| !v.is_empty()).collect();
        if stated.len() < 2 || stated.iter().all(|v| *v == stated[0]) {
            continue;
        }
        out.push(Difference {
            item: format!("{item} ({} tests)", kind.noun()),
            values: (values.iter())
                .map(|v| match v.is_empty() {
                    true => "–".into(),
                    false => v.join(", "),
                })
                .collect(),
            scope: setup_scope(&item),
            state: false,
        });
    }
    out
}

/// Everything that differs between the configurations, lab settings first.
pub fn differences(configs: &[ConfigData]) -> Vec<Difference> {
    if configs.len() < 2 {
        return Vec::new();
    }
    let mut out: Vec<Difference> = crate::disclosure::table(configs)
        .into_iter()
        .filter(|r| r.differs && !is_address(&r.key))
        .filter(|r| {
            let bare: Vec<String> = r.values.iter().map(|v| without_addresses(v)).collect();
            bare.iter().any(|v| *v != bare[0])
        })
        .map(|r| Difference {
            scope: scope_of(&r.key),
            state: is_state(&r.key),
            item: r.key,
            values: r.values,
        })
        .collect();
    out.extend(setup_rows(configs));
    out.sort_by_key(rank);
    out
}

/// What a test's workload goes through.
fn involves(t: &TestData, scope: Scope) -> bool {
    let iscsi = t.setup.iter().any(|(k, v)| {
        (k == "engine" || k == "target kind") && v.contains("iscsi") || k.contains("digest")
    }) || (t.spec.stated().target).is_some_and(|s| s.starts_with("iscsi://"));
    match scope {
        Scope::Host => true,
        Scope::Network => t.kind != Kind::Disk || iscsi,
        Scope::Storage => t.kind == Kind::Disk,
        Scope::Iscsi => iscsi,
    }
}

/// Whether the compared settings can affect test `t`: None when nothing
/// but states differs (what was compared is not known).
pub fn affects(diffs: &[Difference], t: &TestData) -> Option<bool> {
    let settings: Vec<&Difference> = diffs.iter().filter(|d| !d.state).collect();
    (!settings.is_empty()).then(|| settings.iter().any(|d| involves(t, d.scope)))
}

/// The compared settings named briefly (`lab.sets, peer.interfaces[eth0].mtu`).
pub fn settings_named(diffs: &[Difference]) -> String {
    let names: Vec<&str> = diffs
        .iter()
        .filter(|d| !d.state)
        .map(|d| d.item.as_str())
        .collect();
    crate::findings::some(&names, 3, ", ", ", and ")
}

/// The opening table: item, then each configuration's value.
pub fn table(diffs: &[Difference], labels: &[String]) -> Option<Table> {
    if diffs.is_empty() {
        return None;
    }
    let mut head = vec!["what differs".to_string()];
    head.extend(labels.iter().cloned());
    let rows = diffs
        .iter()
        .take(SHOWN)
        .map(|d| {
            let item = if d.state {
                format!("{} (a state, not a setting)", d.item)
            } else {
                d.item.clone()
            };
            let mut cells = vec![item];
            cells.extend(d.values.iter().cloned());
            TRow::new(cells)
        })
        .collect();
    let mut note = String::from("Lab settings, the system's differing rows and the tests' configuration (engine, direct I/O, target, TLS cipher, iSCSI digests); an endpoint's address never counts.");
    if diffs.len() > SHOWN {
        note.push_str(&format!(
            " {} more under \"System differences\".",
            diffs.len() - SHOWN
        ));
    }
    Some(Table {
        title: "What differs between the configurations".into(),
        head,
        rows,
        note: Some(note),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::test_data::{cfg, test};
    use serde_json::json;

    fn with_disclosure(mut c: ConfigData, d: serde_json::Value) -> ConfigData {
        c.disclosure = Some(d);
        c
    }

    #[test]
    fn network_settings_do_not_reach_local_disk_tests() {
        let tests = || {
            let mut s = test("stream", "net-stream", &[("mbit_s", 1.0)]);
            s.spec = json!({"peer": "198.18.0.2:44933"}).into();
            vec![test("disk", "disk", &[("iops", 1.0)]), s]
        };
        let system = |sets: &str, mhz: u32| {
            json!({"lab": {"sets": sets}, "os": {"kernel": "6.1"},
                   "cpu": {"current_mhz": mhz}})
        };
        let a = with_disclosure(cfg("mtu1500", tests()), system("", 2000));
        let mut b = with_disclosure(cfg("mtu9000", tests()), system("mtu=9000", 2400));
        b.tests[1].spec = json!({"peer": "198.18.0.2:33135"}).into();
        let d = differences(&[a.clone(), b]);
        let items: Vec<&str> = d.iter().map(|d| d.item.as_str()).collect();
        assert_eq!(items, vec!["lab.sets", "cpu.current_mhz"], "no peer port");
        assert_eq!(affects(&d, &a.tests[0]), Some(false), "local disk test");
        assert_eq!(affects(&d, &a.tests[1]), Some(true), "stream test");
        // Only a state differs: what was compared is unknown.
        assert_eq!(affects(&d[1..], &a.tests[0]), None);
    }

    /// `compare mtu1500 mtu9000` highlighted the in-process endpoint's
    /// port (198.18.0.2:44933 vs :33135) on every network test and
    /// doubled its row.
    #[test]
    fn an_endpoint_address_is_never_a_difference() {
        use crate::info::{RunInfo, TestInfo};
        let run = |peer: &str| {
            let spec = json!({"dir": "tx", "conns": 4, "msg": 65536, "peer": peer});
            let mut t = test("stream", "net-stream", &[("mbit_s", 1.0)]);
            t.spec = spec.clone().into();
            let info = RunInfo {
                tests: vec![TestInfo {
                    name: "stream".into(),
                    spec: spec.into(),
                    ..Default::default()
                }],
                ..Default::default()
            };
            (t, info)
        };
        for (a, b) in [
            ("198.18.0.2:44933", "198.18.0.2:33135"),
            ("198.18.0.2:44933", "198.18.1.2:44933"),
            ("127.0.0.1:1", "[::1]:2"),
        ] {
            let ((ta, ia), (tb, ib)) = (run(a), run(b));
            let configs = [cfg("mtu1500", vec![ta]), cfg("mtu9000", vec![tb])];
            let params = crate::tables::parameters(&configs, &[ia, ib]);
            let rows = &params[0].rows;
            assert_eq!(rows.len(), 1, "{a} vs {b}: one row for the test");
            assert_eq!(rows[0].cells[1], "all", "{a} vs {b}");
            assert!(!rows[0].cell_diff.iter().any(|d| *d), "{a} vs {b}");
            // Each address is still shown, not the baseline's alone.
            let both = format!("{a} / {b}");
            assert!(rows[0].cells.contains(&both), "{:?}", rows[0].cells);
            assert!(differences(&configs).is_empty(), "{a} vs {b}");
            let c = crate::compare(&configs, None, true, None);
            assert!(c.rows[0].differs.is_empty(), "{a} vs {b}");
        }
    }

    /// A comparison opens with what differs (lab settings, kernel), before
    /// the findings, in Markdown and HTML; a single run has no such table.
    #[test]
    fn a_comparison_opens_with_what_differs() {
        use crate::fixtures::{render, single_host_run};
        let base = single_host_run(1, "mtu1500", 1.0);
        let mut cand = single_host_run(2, "mtu9000", 1.1);
        cand.disclosure = Some(json!({"host": "console", "kernel": "6.6",
            "lab": {"sets": "mtu=9000"}}));
        let (md, html) = render(&[base.clone(), cand]);
        let at = |text: &str, what: &str| text.find(what).unwrap_or(usize::MAX);
        assert!(
            at(&md, "## What differs") < at(&md, "## Key findings"),
            "{md}"
        );
        assert!(md.contains("| lab.sets | – | mtu=9000 |"), "{md}");
        assert!(md.contains("| kernel | 6.1 | 6.6 |"), "{md}");
        assert!(at(&html, "id=\"differs\"") < at(&html, "id=\"findings\""));
        let (md, _) = render(&[base]);
        assert!(!md.contains("What differs"), "{md}");
    }

    /// A lab comes up on a subnet it chooses: two runs on 198.18.2.0/24
    /// and 198.18.0.0/24 differ in addresses only, which is not what was
    /// compared; the MTU in the same row still is.
    #[test]
    fn lab_addresses_are_not_what_was_compared() {
        let lab = |subnet: &str, mtu: u32| {
            json!({"lab": {"subnet": format!("{subnet}.0/24"), "hosts": [{"name": "a",
                "addresses": [format!("{subnet}.1")],
                "links": [{"address": format!("{subnet}.1"), "ifname": "eth0", "mtu": mtu, "rate": "1gbit"}]}]}})
        };
        let a = with_disclosure(cfg("x", Vec::new()), lab("198.18.2", 1500));
        let b = with_disclosure(cfg("y", Vec::new()), lab("198.18.0", 1500));
        assert!(differences(&[a.clone(), b]).is_empty());
        let c = with_disclosure(cfg("z", Vec::new()), lab("198.18.0", 9000));
        let d = differences(&[a, c]);
        let items: Vec<&str> = d.iter().map(|d| d.item.as_str()).collect();
        assert_eq!(items, vec!["lab.hosts[a].links"]);
    }

    #[test]
    fn engines_and_digests_are_configuration() {
        let mut x = test("d", "disk", &[]);
        x.setup = vec![("engine".into(), "io_uring".into())];
        let mut y = x.clone();
        y.setup = vec![("engine".into(), "psync".into())];
        let d = differences(&[cfg("a", vec![x.clone()]), cfg("b", vec![y])]);
        assert_eq!(d[0].item, "engine (disk tests)");
        assert_eq!(d[0].values, vec!["io_uring", "psync"]);
        assert_eq!(affects(&d, &x), Some(true));
        let net = test("s", "net-stream", &[]);
        assert_eq!(affects(&d, &net), Some(false));
        let mut i = x.clone();
        i.setup.push(("header digest".into(), "CRC32C".into()));
        let mut j = x.clone();
        j.setup.push(("header digest".into(), "None".into()));
        let d = differences(&[cfg("a", vec![i.clone()]), cfg("b", vec![j])]);
        assert_eq!(d[0].scope, Scope::Iscsi);
        assert_eq!(affects(&d, &i), Some(true));
        assert_eq!(affects(&d, &test("local", "disk", &[])), Some(false));
    }
}
