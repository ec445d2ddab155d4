//! Side-by-side system disclosure: each configuration's record flattened
//! to `path = value` rows, with the rows that differ marked.

use crate::compare::ConfigData;
use serde_json::Value;
use std::collections::BTreeMap;

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
            for x in a {
                let name = x["name"].as_str().unwrap_or("?");
                flatten(&format!("{prefix}[{name}]"), x, out);
            }
        }
        Value::Array(a) => {
            out.insert(
                prefix.to_string(),
                a.iter()
                    .map(|x| x.to_string().trim_matches('"').to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
            );
        }
        Value::Null => {
            out.insert(prefix.to_string(), "–".into());
        }
        Value::String(s) => {
            out.insert(prefix.to_string(), s.clone());
        }
        other => {
            out.insert(prefix.to_string(), other.to_string());
        }
    }
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
    let mut keys: Vec<&String> = flat.iter().flat_map(|m| m.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| !k.ends_with(".name"))
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
