//! The agents of a suite's multi-host tests, and the console that drives
//! them: agents started by the run itself (one process per lab host, in
//! its namespace, on a per-run key) or already running at the hosts
//! file's addresses.

use crate::file::{Job, JobSpec};
use crate::hosts::{HostAt, Placement};
use crate::runner::{Options, RunError};
use iotoll_agent::console::{Console, ConsoleError, DiskTest, HostSpec, NetTest};
use iotoll_agent::local::LocalAgent;
use iotoll_agent::wire::DiskOrder;
use iotoll_model::ResultDoc;
use iotoll_net::auth::Key;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// How long a local agent may take to start listening.
const SPAWN_WAIT: Duration = Duration::from_secs(10);
/// How long ssh may take to log in and start an agent.
const SSH_WAIT: Duration = Duration::from_secs(20);

pub struct Fleet {
    pub console: Console,
    /// Agents this run started; stopped when the fleet is dropped.
    _agents: Vec<LocalAgent>,
    _ssh: Vec<iotoll_agent::ssh::SshAgent>,
    /// Per-host test files made for lab agents, removed at the end.
    _files: Vec<crate::runner::TempTarget>,
}

/// Starts what needs starting and connects to every host some job uses.
pub fn start(
    opts: &Options,
    jobs: &[Job],
    progress: &mut dyn FnMut(&str),
) -> Result<Option<Fleet>, RunError> {
    if jobs.iter().all(|j| j.placement.is_local()) {
        return Ok(None);
    }
    let needs_disk = jobs
        .iter()
        .any(|j| matches!(j.placement, Placement::Disk { .. }));
    let lab_hosts = opts.ssh.is_some() || opts.hosts.iter().any(|h| matches!(h.at, HostAt::Lab(_)));
    // Agents this run starts take a key made for the run (unless the user
    // gave one); agents already running need the user's.
    let key = match &opts.auth_key {
        Some(k) => k.clone(),
        None if lab_hosts => {
            let k = iotoll_agent::ssh::run_key().map_err(|e| {
                RunError::Hosts(format!("cannot make a key for this run's agents: {e}"))
            })?;
            Key::from_bytes(&k)
        }
        None => {
            return Err(RunError::Hosts(
                "multi-host tests on agents at addresses need their key: add --auth-key FILE"
                    .into(),
            ))
        }
    };
    let mut agents = Vec::new();
    let mut ssh_agents = Vec::new();
    // Agents started here may write what this run's flags allow.
    let allow_given: Vec<String> = (opts.targets.iter())
        .map(|t| {
            format!(
                "{}{}",
                t.display(),
                if opts.allow_destructive { ":rw" } else { "" }
            )
        })
        .collect();
    let mut files = Vec::new();
    let mut specs = Vec::new();
    for h in &opts.hosts {
        match &h.at {
            HostAt::Lab(name) => {
                let Some(l) = &opts.lab else {
                    return Err(RunError::Hosts(format!(
                        "host {}: a lab host ({name}) needs --lab",
                        h.name
                    )));
                };
                let state = l.lab.host(name).ok_or_else(|| {
                    RunError::Hosts(format!(
                        "host {}: lab '{}' has no host '{name}'",
                        h.name, l.lab.name
                    ))
                })?;
                let Some(ip) = state.addresses.first().copied() else {
                    return Err(RunError::Hosts(format!(
                        "host {}: lab host {name} has no address",
                        h.name
                    )));
                };
                let listen = std::net::SocketAddr::new(ip, iotoll_net::DEFAULT_PORT);
                let mut allow = allow_given.clone();
                if allow.is_empty() && needs_disk && files.is_empty() {
                    // Files of agents of runs that were killed go first.
                    for p in crate::runner::reclaim_stale_test_files(&std::env::temp_dir()) {
                        progress(&format!(
                            "removed {}, the test file of a run that was killed",
                            p.display()
                        ));
                    }
                }
                if allow.is_empty() && needs_disk {
                    let f = std::env::temp_dir().join(format!(
                        "{}{}-{}{}",
                        crate::runner::TEMP_PREFIX,
                        std::process::id(),
                        h.name,
                        crate::runner::TEMP_SUFFIX
                    ));
                    allow.push(format!("{}:rw", f.display()));
                    files.push(crate::runner::TempTarget(f));
                }
                let exe = opts.agent_exe.clone().ok_or_else(|| {
                    RunError::Hosts(
                        "cannot start lab agents: iotoll's own executable is unknown".into(),
                    )
                })?;
                let a = LocalAgent::spawn(
                    &exe,
                    Some(
                        &iotoll_lab::netns_path(state)
                            .map_err(|e| RunError::Hosts(e.to_string()))?,
                    ),
                    listen,
                    key.bytes(),
                    &allow,
                    SPAWN_WAIT,
                )
                .map_err(|e| RunError::Hosts(format!("host {}: {e}", h.name)))?;
                specs.push(HostSpec {
                    name: h.name.clone(),
                    address: a.address,
                    data: if h.data.is_empty() {
                        state.addresses.clone()
                    } else {
                        h.data.clone()
                    },
                });
                agents.push(a);
            }
            HostAt::Address(a) => {
                let address = iotoll_net::resolve(a, iotoll_net::DEFAULT_PORT)
                    .map_err(|e| RunError::Hosts(format!("host {}: {e}", h.name)))?;
                if let Some(s) = &opts.ssh {
                    // The agent listens on every address of its host, on
                    // the port the hosts file gives; the console connects
                    // to the address as given.
                    let listen = match address {
                        std::net::SocketAddr::V4(_) => format!("0.0.0.0:{}", address.port()),
                        std::net::SocketAddr::V6(_) => format!("[::]:{}", address.port()),
                    };
                    let destination = h.ssh.clone().unwrap_or_else(|| address.ip().to_string());
                    let launch = iotoll_agent::ssh::SshLaunch {
                        agent: s.agent.clone(),
                        extra: s.args.clone(),
                        allow_targets: allow_given.clone(),
                        ..iotoll_agent::ssh::SshLaunch::new(destination, listen)
                    };
                    let a = iotoll_agent::ssh::SshAgent::start(&launch, key.bytes(), SSH_WAIT)
                        .map_err(|e| RunError::Hosts(e.with_host(&h.name).to_string()))?;
                    ssh_agents.push(a);
                }
                specs.push(HostSpec {
                    name: h.name.clone(),
                    address,
                    data: h.data.clone(),
                });
            }
        }
    }
    if !agents.is_empty() {
        progress(&format!("started {} agent(s) in the lab", agents.len()));
    }
    if !ssh_agents.is_empty() {
        progress(&format!(
            "started {} agent(s) through ssh",
            ssh_agents.len()
        ));
    }
    let console = Console::connect(specs, Some(key)).map_err(|e| RunError::Hosts(e.to_string()))?;
    Ok(Some(Fleet {
        console,
        _agents: agents,
        _ssh: ssh_agents,
        _files: files,
    }))
}

impl Fleet {
    /// One repetition of a placed job.
    pub fn run(
        &mut self,
        job: &Job,
        opts: &Options,
        interrupted: &AtomicBool,
    ) -> Result<ResultDoc, ConsoleError> {
        match (&job.placement, &job.spec) {
            (Placement::Disk { on }, JobSpec::Disk(d)) => {
                let mut d = d.clone();
                d.config = opts.config.clone();
                d.targets = opts.targets.clone();
                let t = DiskTest {
                    on: on.clone(),
                    order: DiskOrder::from_spec(&d),
                };
                self.console.run_disk(&t, interrupted)
            }
            (Placement::Net { pairs }, JobSpec::Net(n)) => {
                let t = NetTest {
                    pairs: pairs.clone(),
                    params: n.params(),
                    threads: n.threads.map(|t| t as u32),
                    config: opts.config.clone(),
                };
                self.console.run_net(&t, interrupted)
            }
            _ => Err(ConsoleError::Invalid(format!(
                "test '{}' is not placed on hosts",
                job.name
            ))),
        }
    }
}

/// A wall-clock instant (ns since the epoch) as RFC 3339 with microseconds.
pub fn rfc3339_us(ns: i64) -> String {
    let t = std::time::UNIX_EPOCH + Duration::from_nanos(ns.max(0) as u64);
    humantime::format_rfc3339_micros(t).to_string()
}
