//! `iotoll agent`: the endpoint plus console sessions (crates/agent).

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use iotoll_agent::start;

#[derive(Args)]
#[command(
    after_help = "An agent serves network tests like `iotoll net serve`, and takes a console's orders (`iotoll suite run FILE --hosts hosts.toml`): disk tests on the targets it allows, network clients toward other agents, its system disclosure, each measured on a CPU window the console schedules across all hosts. It never runs a command.

Targets: only the paths given with --allow-target are ever opened for a disk test, read-only unless given as PATH:rw (then a missing test file may be created, and an existing file or device may be written: this flag is the agent's consent; the console cannot grant it).

Authentication: --auth-key FILE holds a pre-shared key (at least 16 bytes) the console must prove; every session is keyed on fresh nonces from both sides and every message is signed and numbered, so a recorded session cannot be replayed. With --auth-key - the key is the first line of stdin and the agent exits when stdin closes (how `suite run --ssh` ties an agent to its ssh session). Without a key the agent listens on loopback only.

On start it prints one line on stdout: `iotoll agent listening on ADDR:PORT`. Running agents as a service, over ssh or on Kubernetes: docs/agent-deploy.md.",
    args_conflicts_with_subcommands = true
)]
pub struct AgentArgs {
    #[command(subcommand)]
    cmd: Option<AgentCmd>,
    /// Address and port to listen on [default: [::]:7575; 127.0.0.1:7575 without a key].
    #[arg(long, value_name = "ADDR[:PORT]")]
    listen: Option<String>,
    /// File holding the pre-shared key consoles must prove; `-`: the first line of stdin.
    #[arg(long, value_name = "FILE|-")]
    auth_key: Option<String>,
    /// A disk target this agent may test, read-only; PATH:rw allows writing (repeatable).
    #[arg(long = "allow-target", value_name = "PATH[:rw]")]
    allow_target: Vec<String>,
    /// Data-engine threads [default: one per core].
    #[arg(long, value_name = "N")]
    threads: Option<usize>,
}

#[derive(Subcommand)]
enum AgentCmd {
    /// Kubernetes manifests of a fleet of agents (headless Service and an indexed Job, or a DaemonSet), and their hosts file.
    K8sManifests(crate::k8s::K8sArgs),
}

pub fn main(a: AgentArgs) -> Result<()> {
    if let Some(AgentCmd::K8sManifests(k)) = &a.cmd {
        return crate::k8s::run(k);
    }
    let (listen, key) = (a.listen.as_deref(), a.auth_key.as_deref());
    let started = start::start(listen, key, &a.allow_target, a.threads);
    let (cfg, listener) = started.map_err(crate::usage_or)?;
    let bound = listener.local_addr().context("listener address")?;
    let flag = iotoll_run::signals::install();
    if a.auth_key.as_deref() == Some("-") {
        start::stop_when_stdin_closes(flag.clone());
    }
    {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "iotoll agent listening on {bound}");
        let _ = out.flush();
    }
    start::serve(listener, cfg, &flag).map_err(crate::usage_or)
}
