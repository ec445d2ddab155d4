//! What a report shows about a run besides the compared numbers: its suite,
//! start and status, whether its durations were overridden (a smoke run),
//! and per test the parameters actually used, the ramp, whether the peer
//! was this host and whether another process interfered.

use crate::compare::ConfigData;
use iotoll_store::RunDetail;
use serde_json::Value;

/// One test's facts from its kept repetition's result document.
#[derive(Debug, Clone, Default)]
pub struct TestInfo {
    pub name: String,
    /// Every parameter actually used (the result's `spec`).
    pub spec: Value,
    /// Ramp-up, seconds (0 when none).
    pub ramp_s: f64,
    /// `cpu.same_host`: the network peer ran on this host (same kernel).
    pub same_host: Option<bool>,
    /// `cpu.local.interference.interfered`.
    pub interfered: Option<bool>,
    pub reps: usize,
    pub spread_pct: Option<f64>,
}

#[derive(Debug, Clone, Default)]
pub struct RunInfo {
    pub suite: String,
    pub started_at: String,
    pub status: String,
    /// The run's `durations overridden:` note, if any (smoke runs).
    pub overridden: Option<String>,
    pub tests: Vec<TestInfo>,
}

impl RunInfo {
    pub fn test(&self, name: &str) -> Option<&TestInfo> {
        self.tests.iter().find(|t| t.name == name)
    }

    /// Some network test's peer was this host.
    pub fn same_host(&self) -> bool {
        self.tests.iter().any(|t| t.same_host == Some(true))
    }
}

/// A peer on a loopback address is this host, whatever the result says
/// (results stored before `cpu.same_host` existed say nothing).
fn loopback_peer(spec: &Value) -> Option<bool> {
    let peer = spec["peer"].as_str()?;
    let host = peer
        .rsplit_once(':')
        .map_or(peer, |x| x.0)
        .trim_matches(|c| c == '[' || c == ']');
    host.parse::<std::net::IpAddr>()
        .ok()
        .filter(|ip| ip.is_loopback())
        .map(|_| true)
}

fn from_run(run: &RunDetail) -> RunInfo {
    let tests = run
        .tests
        .iter()
        .map(|t| {
            let rep = t
                .reps
                .iter()
                .find(|r| Some(r.rep) == t.selected_rep)
                .or(t.reps.first());
            let cpu = rep
                .and_then(|r| serde_json::to_value(&r.doc.cpu).ok())
                .unwrap_or(Value::Null);
            let spec = rep.map(|r| r.doc.spec.clone()).unwrap_or(Value::Null);
            TestInfo {
                name: t.name.clone(),
                same_host: cpu["same_host"].as_bool().or_else(|| loopback_peer(&spec)),
                ramp_s: spec["ramp_s"].as_f64().unwrap_or(0.0),
                spec,
                interfered: cpu["local"]["interference"]["interfered"].as_bool(),
                reps: t.reps.len(),
                spread_pct: t.spread_pct,
            }
        })
        .collect();
    RunInfo {
        suite: run.run.suite.clone(),
        started_at: run.run.started_at.clone(),
        status: run.run.status.clone(),
        overridden: run
            .run
            .notes
            .iter()
            .find(|n| n.starts_with("durations overridden:"))
            .cloned(),
        tests,
    }
}

/// The peer's side of the network tests' disclosure (interface, MTU,
/// offloads, TCP settings), as a `peer` object with its interfaces keyed
/// by name, so a changed peer MTU shows among the system differences.
fn peer_disclosure(run: &RunDetail) -> Option<Value> {
    let mut interfaces: Vec<Value> = Vec::new();
    let mut tcp: Option<Value> = None;
    for t in &run.tests {
        for r in &t.reps {
            let Some(remote) = r.doc.disclosure.as_ref().map(|d| &d["remote"]) else {
                continue;
            };
            if let Some(i) = remote.get("interface").filter(|i| i.is_object()) {
                let name = i["name"].as_str().unwrap_or("?");
                if !interfaces.iter().any(|x| x["name"].as_str() == Some(name)) {
                    let mut i = i.clone();
                    i["name"] = Value::String(name.to_string());
                    interfaces.push(i);
                }
            }
            if tcp.is_none() {
                tcp = remote.get("tcp").filter(|t| t.is_object()).cloned();
            }
        }
    }
    if interfaces.is_empty() && tcp.is_none() {
        return None;
    }
    let mut peer = serde_json::Map::new();
    if !interfaces.is_empty() {
        peer.insert("interfaces".into(), Value::Array(interfaces));
    }
    if let Some(t) = tcp {
        peer.insert("tcp".into(), t);
    }
    Some(Value::Object(peer))
}

/// A stored run as a report configuration and its facts. The disclosure
/// gains the peer's side (`peer.…`) from the network tests.
pub fn load(run: &RunDetail) -> (ConfigData, RunInfo) {
    let mut cfg = ConfigData::from_run(run);
    if let Some(peer) = peer_disclosure(run) {
        match cfg.disclosure.as_mut() {
            Some(Value::Object(m)) => {
                m.insert("peer".into(), peer);
            }
            _ => cfg.disclosure = Some(serde_json::json!({ "peer": peer })),
        }
    }
    (cfg, from_run(run))
}
