//! Side-by-side system disclosure: each configuration's record flattened
//! to `path = value` rows, with the rows that differ marked.

use crate::compare::ConfigData;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

pub struct DiffRow {
    pub key: String,
    pub values: Vec<String>,
    pub differs: bool,
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
    keys.into_iter()
        .filter(|k| !k.ends_with(".name") && *k != "lab.definition")
        .map(|k| {
            let values: Vec<String> = flat
                .iter()
                .map(|m| m.get(k).cloned().unwrap_or_else(|| "–".into()))
                .collect();
            let differs = values.iter().any(|v| v != &values[0]);
            DiffRow {
                key: k.clone(),
                values,
                differs,
            }
        })
        .collect()
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
}
