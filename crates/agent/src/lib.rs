//! The agent and the console.
//!
//! An agent (`iotoll agent`) is the network endpoint plus, for an
//! authenticated console, workloads on command: disk tests on the targets
//! it was started with, network clients toward other agents, its system
//! disclosure. The console (`suite run --hosts|--lab`) drives every agent
//! of a test through Iometer's phases (docs/agents.md): PREPARE (version
//! and capabilities, clock offset, files), START (ramp-up), RECORD ON at
//! one scheduled instant, RECORD OFF, STOP, COLLECT.

pub mod agent;
pub mod checks;
pub mod console;
pub mod crr;
mod engines;
pub mod histwire;
pub mod k8s;
pub mod link;
pub mod local;
pub mod series;
pub mod ssh;
pub mod start;
pub mod udp;
mod window;
pub mod wire;

/// An agent's command line after the program (local, through ssh, in a
/// pod): `agent --listen LISTEN --auth-key KEY`, then `--allow-target` for
/// each of `allow`.
pub fn agent_args<'a>(
    listen: &'a str,
    key: &'a str,
    allow: &'a [String],
) -> impl Iterator<Item = &'a str> {
    let targets = allow.iter().flat_map(|t| ["--allow-target", t.as_str()]);
    ["agent", "--listen", listen, "--auth-key", key]
        .into_iter()
        .chain(targets)
}

/// `n` over `window_s`, per second (0 without a window).
pub(crate) fn per_s(n: f64, window_s: f64) -> f64 {
    if window_s > 0.0 {
        n / window_s
    } else {
        0.0
    }
}
