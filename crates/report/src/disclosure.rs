//! Side-by-side system disclosure: each configuration's record flattened
//! to `path = value` rows, with the rows that differ marked.

use crate::compare::ConfigData;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

pub struct DiffRow {
    /// What part of the system the row is about: one of [`GROUPS`].
    pub group: &'static str,
    pub key: String,
    pub values: Vec<String>,
    pub differs: bool,
}

/// The disclosure's groups, in the order a report shows them.
pub const GROUPS: [&str; 9] = [
    "system", "CPU", "memory", "NICs", "disks", "kernel", "lab", "iSCSI", "other",
];

/// The group of a flattened key: by its first part (`cpu.model`,
/// `interfaces[eth0].mtu`, `peer.tcp.…`), iSCSI wherever it is named.
fn group_of(key: &str) -> &'static str {
    let key = key.strip_prefix("peer.").unwrap_or(key);
    let head = key.split(['.', '[']).next().unwrap_or(key);
    if key.to_ascii_lowercase().contains("iscsi") {
        return "iSCSI";
    }
    match head {
        "host" | "iotoll" => "system",
        "cpu" => "CPU",
        "memory" => "memory",
        "interfaces" | "interface" => "NICs",
        "block_devices" => "disks",
        "os" | "tcp" | "kernel" => "kernel",
        "lab" => "lab",
        _ => "other",
    }
}

/// `a` before `b` as people count: runs of digits by value, so `c2`
/// comes before `c10` and `eth9` before `eth10`.
fn natural(a: &str, b: &str) -> std::cmp::Ordering {
    fn parts(s: &str) -> impl Iterator<Item = (bool, &[u8])> {
        let same = |x: &u8, y: &u8| x.is_ascii_digit() == y.is_ascii_digit();
        s.as_bytes()
            .chunk_by(same)
            .map(|p| (p[0].is_ascii_digit(), p))
    }
    let zeros = |d: &[u8]| d.iter().take_while(|c| **c == b'0').count();
    for (x, y) in parts(a).zip(parts(b)) {
        let o = match (x, y) {
            ((true, x), (true, y)) => {
                let (x, y) = (&x[zeros(x)..], &y[zeros(y)..]);
                x.len().cmp(&y.len()).then(x.cmp(y))
            }
            ((_, x), (_, y)) => x.cmp(y),
        };
        if o.is_ne() {
            return o;
        }
    }
    parts(a).count().cmp(&parts(b).count()).then(a.cmp(b))
}

fn flatten(prefix: &str, v: &Value, out: &mut BTreeMap<String, String>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                flatten(
                    &format!("{prefix}{}{k}", if prefix.is_empty() { "" } else { "." }),
                    v,
                    out,
                );
            }
        }
        Value::Array(a) if a.iter().all(|x| x.get("name").is_some()) && !a.is_empty() => {
            // Interfaces, block devices: keyed by name, not position.
            for x in a.iter().filter(|x| !unused_device(prefix, x)) {
                let name = x["name"].as_str().unwrap_or("?");
                flatten(&format!("{prefix}[{name}]"), x, out);
            }
        }
        Value::Array(a) => {
            out.insert(
                prefix.to_string(),
                a.iter().map(item).collect::<Vec<_>>().join(", "),
            );
        }
        Value::Null => {
            out.insert(prefix.to_string(), "–".into());
        }
        // A string as is, anything else as JSON.
        other => {
            out.insert(prefix.to_string(), item(other));
        }
    }
}

/// One element of a list: a string as is, a cache as `L2 Unified 512K`,
/// another object as its values.
fn item(x: &Value) -> String {
    match x {
        Value::String(s) => s.clone(),
        Value::Object(m) if m.contains_key("level") && m.contains_key("size") => format!(
            "L{} {} {}",
            item(&m["level"]),
            m.get("type").map(item).unwrap_or_default(),
            item(&m["size"])
        ),
        Value::Object(m) => m
            .values()
            .filter(|v| !v.is_null())
            .map(item)
            .collect::<Vec<_>>()
            .join(" "),
        other => other.to_string(),
    }
}

/// A block device that holds nothing: size 0 (unattached loop devices, an
/// unconfigured zram), which only lengthens the disclosure.
fn unused_device(prefix: &str, x: &Value) -> bool {
    prefix.ends_with("block_devices") && x["size_bytes"].as_f64() == Some(0.0)
}

pub fn table(configs: &[ConfigData]) -> Vec<DiffRow> {
    let flat: Vec<BTreeMap<String, String>> = configs
        .iter()
        .map(|c| {
            let mut m = BTreeMap::new();
            if let Some(d) = &c.disclosure {
                flatten("", d, &mut m);
            }
            m
        })
        .collect();
    let keys: BTreeSet<&String> = flat.iter().flat_map(|m| m.keys()).collect();
    // A lab's file is recorded whole with the run; its per-link rows are
    // what a comparison shows differ.
    let mut rows: Vec<DiffRow> = keys
        .into_iter()
        .filter(|k| !k.ends_with(".name") && *k != "lab.definition")
        .map(|k| {
            let values: Vec<String> = flat
                .iter()
                .map(|m| m.get(k).cloned().unwrap_or_else(|| "–".into()))
                .collect();
            let differs = values.iter().any(|v| v != &values[0]);
            DiffRow {
                group: group_of(k),
                key: k.clone(),
                values,
                differs,
            }
        })
        .collect();
    // What differs first, then group by group, each in natural order.
    let rank = |g: &str| GROUPS.iter().position(|x| *x == g).unwrap_or(GROUPS.len());
    rows.sort_by(|a, b| {
        (b.differs.cmp(&a.differs))
            .then(rank(a.group).cmp(&rank(b.group)))
            .then_with(|| natural(&a.key, &b.key))
    });
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(d: serde_json::Value) -> ConfigData {
        ConfigData {
            disclosure: Some(d),
            ..crate::compare::test_data::cfg("x", Vec::new())
        }
    }

    #[test]
    fn differing_rows_are_marked_and_interfaces_keyed_by_name() {
        let a = cfg(
            serde_json::json!({"cpu": {"model": "X"}, "interfaces": [{"name": "eth0", "mtu": 1500}, {"name": "lo", "mtu": 65536}]}),
        );
        let b = cfg(
            serde_json::json!({"cpu": {"model": "X"}, "interfaces": [{"name": "lo", "mtu": 65536}, {"name": "eth0", "mtu": 9000}]}),
        );
        let t = table(&[a, b]);
        let row = |k: &str| t.iter().find(|r| r.key == k).unwrap();
        assert!(row("interfaces[eth0].mtu").differs);
        assert_eq!(row("interfaces[eth0].mtu").values, vec!["1500", "9000"]);
        assert!(
            !row("interfaces[lo].mtu").differs,
            "matched by name, not position"
        );
        assert!(!row("cpu.model").differs);
    }

    #[test]
    fn lab_sysctls_in_force_and_coalescing_that_differ_are_shown() {
        // The shapes LabState::disclosure and sysinfo record.
        let run = |sack: &str, table: serde_json::Value, rx_usecs: u32| {
            cfg(serde_json::json!({
                "interfaces": [{"name": "eth0", "coalescing": {"rx_usecs": rx_usecs, "adaptive_rx": false}}],
                "lab": {"hosts": [{"name": "a", "sysctl": table.clone(),
                    "in_force": {"tcp": {"tcp_sack": sack, "tcp_mem": "1 2 3"}, "sysctl": table}}]}
            }))
        };
        let t = table(&[
            run("1", serde_json::json!({}), 0),
            run("0", serde_json::json!({"net.ipv4.tcp_sack": "0"}), 50),
        ]);
        let row = |k: &str| t.iter().find(|r| r.key == k).unwrap();
        let sack = row("lab.hosts[a].in_force.tcp.tcp_sack");
        assert!(sack.differs && sack.group == "lab");
        assert_eq!(sack.values, vec!["1", "0"]);
        let set = row("lab.hosts[a].in_force.sysctl.net.ipv4.tcp_sack");
        assert_eq!(set.values, vec!["–", "0"]);
        assert!(set.differs);
        assert!(!row("lab.hosts[a].in_force.tcp.tcp_mem").differs);
        let coal = row("interfaces[eth0].coalescing.rx_usecs");
        assert!(coal.differs && coal.group == "NICs");
        assert!(!row("interfaces[eth0].coalescing.adaptive_rx").differs);
    }

    #[test]
    fn empty_block_devices_are_left_out() {
        let d = serde_json::json!({"cpu": {"caches": [{"level": "1", "size": "32K", "type": "Data"}]}, "block_devices": [
            {"name": "loop0", "size_bytes": 0, "scheduler": "none"},
            {"name": "zram0", "size_bytes": 0},
            {"name": "loop1", "size_bytes": 1048576, "scheduler": "none"},
            {"name": "vda", "size_bytes": 274877906944u64, "scheduler": "mq-deadline"}
        ]});
        let t = table(&[cfg(d)]);
        let keys: Vec<&str> = t.iter().map(|r| r.key.as_str()).collect();
        assert!(keys.contains(&"block_devices[vda].scheduler"), "{keys:?}");
        assert!(
            keys.contains(&"block_devices[loop1].size_bytes"),
            "{keys:?}"
        );
        assert!(
            !keys
                .iter()
                .any(|k| k.contains("loop0") || k.contains("zram0")),
            "{keys:?}"
        );
        let caches = t.iter().find(|r| r.key == "cpu.caches").unwrap();
        assert_eq!(caches.values, vec!["L1 Data 32K"]);
    }

    /// Rows are grouped (CPU, memory, NICs, disks, kernel, lab, iSCSI),
    /// what differs first, and lab hosts in natural order: c1, c2, …, c10
    /// (c10 came between c1 and c2, differing rows anywhere).
    #[test]
    fn rows_are_grouped_natural_and_differing_first() {
        let hosts = |mtu10: u32| {
            let hs: Vec<serde_json::Value> = (1..=10)
                .map(|i| serde_json::json!({"name": format!("c{i}"), "mtu": if i == 10 { mtu10 } else { 1500 }}))
                .collect();
            serde_json::json!({
                "host": "h", "cpu": {"model": "X"}, "memory": {"total_bytes": 1},
                "interfaces": [{"name": "eth10", "mtu": 1500}, {"name": "eth2", "mtu": 1500}],
                "block_devices": [{"name": "vda", "size_bytes": 1}],
                "os": {"kernel": "6.1"}, "tcp": {"x": 1},
                "lab": {"hosts": hs},
                "iscsi": {"sessions": 1}
            })
        };
        let t = table(&[cfg(hosts(1500)), cfg(hosts(9000))]);
        let keys: Vec<&str> = t.iter().map(|r| r.key.as_str()).collect();
        assert_eq!(keys[0], "lab.hosts[c10].mtu", "{keys:?}");
        assert!(t[0].differs && t[1..].iter().all(|r| !r.differs));
        let groups: Vec<&str> = t[1..].iter().map(|r| r.group).collect();
        let mut order = groups.clone();
        order.dedup();
        assert_eq!(
            order,
            vec!["system", "CPU", "memory", "NICs", "disks", "kernel", "lab", "iSCSI"]
        );
        let lab: Vec<&str> = t[1..]
            .iter()
            .filter(|r| r.group == "lab")
            .map(|r| r.key.as_str())
            .collect();
        assert_eq!(lab[0], "lab.hosts[c1].mtu");
        assert_eq!(lab[1], "lab.hosts[c2].mtu");
        assert_eq!(lab[8], "lab.hosts[c9].mtu");
        let nics: Vec<&str> = t
            .iter()
            .filter(|r| r.group == "NICs")
            .map(|r| r.key.as_str())
            .collect();
        assert_eq!(nics, vec!["interfaces[eth2].mtu", "interfaces[eth10].mtu"]);
    }
}
