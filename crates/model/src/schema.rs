//! The JSON Schema of the result document, generated from the types and
//! the metric registry and checked in as `docs/result.schema.json` (a test
//! fails when they differ; `IOTOLL_BLESS=1` rewrites it).

use crate::metrics::{MetricDef, METRICS};
use crate::spec::{
    CrrSpec, DiskDisclosure, DiskSpec, NetDisclosure, RrSpec, SpecOf, StreamSpec, UdpSpec,
};
use crate::{Kind, ResultDoc};
use schemars::generate::{Contract, SchemaSettings};
use schemars::transform::{RecursiveTransform, Transform};
use schemars::{json_schema, Schema, SchemaGenerator};
use serde_json::{json, Value};

/// The schema of what `--json` prints: it describes serialized output, so
/// a field that is always written is required even when it may be null.
pub fn result_schema() -> Value {
    let mut g = SchemaSettings::draft2020_12()
        .with(|s| s.contract = Contract::Serialize)
        .into_generator();
    let mut root = g.root_schema_for::<ResultDoc>();
    root.insert("$id".into(), "iotoll/result.schema.json".into());
    // The spec and the disclosure each kind writes. A spec is the kind's
    // own or an import's; the disclosure is null for an import and for a
    // multi-host result (each host's is in `hosts[].disclosure`).
    let net = g.subschema_for::<Option<NetDisclosure>>();
    let mut shape = |k: Kind| match k {
        Kind::Disk => {
            let d = g.subschema_for::<Option<DiskDisclosure>>();
            (g.subschema_for::<SpecOf<DiskSpec>>(), d)
        }
        Kind::NetStream => (g.subschema_for::<SpecOf<StreamSpec>>(), net.clone()),
        Kind::NetRr => (g.subschema_for::<SpecOf<RrSpec>>(), net.clone()),
        Kind::NetUdp => (g.subschema_for::<SpecOf<UdpSpec>>(), net.clone()),
        Kind::NetCrr | Kind::NetCc => (g.subschema_for::<SpecOf<CrrSpec>>(), net.clone()),
    };
    let all_of: Vec<Value> = (Kind::ALL.iter())
        .map(|&k| {
            let (spec, disclosure) = shape(k);
            json!({
                "if": {"properties": {"kind": {"const": k.as_str()}}},
                "then": {"properties": {"spec": spec, "disclosure": disclosure}},
            })
        })
        .collect();
    root.insert("allOf".into(), all_of.into());
    if let Some(defs) = root.get_mut("$defs").and_then(Value::as_object_mut) {
        defs.extend(g.take_definitions(true));
    }
    RecursiveTransform(non_negative).transform(&mut root);
    root.to_value()
}

/// Every figure in a result is a count, a size, a rate, a time or a share:
/// numbers without a stated lower bound get 0.
fn non_negative(s: &mut Schema) {
    let numeric = match s.get("type") {
        Some(Value::String(t)) => t == "number" || t == "integer",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "number" || t == "integer"),
        _ => false,
    };
    if numeric && s.get("minimum").is_none() && s.get("exclusiveMinimum").is_none() {
        s.insert("minimum".into(), 0.into());
    }
}

/// A share of all CPUs. Rounding of tick counts can put a sum of shares a
/// hair above 100.
pub fn pct(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "number", "minimum": 0, "maximum": 100.0001})
}

/// Every property a share of all CPUs ([`pct`]).
pub fn pct_properties(s: &mut Schema) {
    if let Some(props) = s.get_mut("properties").and_then(Value::as_object_mut) {
        for p in props.values_mut() {
            *p = pct(&mut SchemaGenerator::default()).to_value();
        }
    }
}

/// The `metrics` map: exactly the registered names, each with its meaning.
pub fn metrics(_: &mut SchemaGenerator) -> Schema {
    let props: serde_json::Map<String, Value> = METRICS
        .iter()
        .map(|d| (d.name.to_string(), metric(d)))
        .collect();
    json_schema!({
        "type": "object",
        "description": "Flat map of canonical metric names (docs/metrics.md). A metric that could not be measured is absent, never 0.",
        "properties": props,
        "additionalProperties": false,
    })
}

/// One metric's value: its unit says its bounds.
fn metric(d: &MetricDef) -> Value {
    let mut s = json!({
        "type": "number",
        "minimum": 0,
        "description": format!("{} ({})", d.meaning, d.unit),
    });
    let bare = d.name.strip_prefix("remote_").unwrap_or(d.name);
    match (d.unit, bare) {
        ("s", "window_s") | ("MHz", _) => {
            s["exclusiveMinimum"] = 0.into();
            s.as_object_mut().map(|o| o.remove("minimum"));
        }
        ("count", "cpus") => {
            s["minimum"] = 1.into();
            s["multipleOf"] = 1.into();
        }
        ("count", "errors") => s["multipleOf"] = 1.into(),
        ("ratio", _) => s["maximum"] = 1.into(),
        // What other processes or this one used can be counted a little
        // over the whole host's share: only the modes are capped.
        ("%", "cpu_self_pct" | "cpu_others_pct") => {}
        ("%", _) => s["maximum"] = 100.0001.into(),
        _ => {}
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/result.schema.json is what `result_schema` makes;
    /// `IOTOLL_BLESS=1` rewrites it.
    #[test]
    fn result_schema_json_matches_the_types() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/result.schema.json");
        let want = serde_json::to_string_pretty(&result_schema()).unwrap() + "\n";
        if std::env::var_os("IOTOLL_BLESS").is_some() {
            std::fs::write(path, &want).unwrap();
        }
        let doc = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            doc == want,
            "docs/result.schema.json differs from the types: run IOTOLL_BLESS=1 cargo test -p iotoll-model result_schema"
        );
    }
}
