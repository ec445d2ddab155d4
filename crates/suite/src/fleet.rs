//! The agents of a suite's multi-host tests, and the console that drives
//! them: agents started by the run itself (one process per lab host, in
//! its namespace, on a per-run key) or already running at the hosts
//! file's addresses.

use crate::file::{Job, JobSpec};
use crate::hosts::{HostAt, HostEntry, Placement};
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
    let needs_disk = (jobs.iter()).any(|j| matches!(j.placement, Placement::Disk { .. }));
    let key = run_key(opts)?;
    let mut s = Starting {
        opts,
        key: &key,
        allow: allow_given(opts),
        needs_disk,
        agents: Vec::new(),
        ssh: Vec::new(),
        files: Vec::new(),
        specs: Vec::new(),
    };
    for h in &opts.hosts {
        match &h.at {
            HostAt::Lab(name) => s.lab_agent(h, name, progress)?,
            HostAt::Address(a) => s.agent_at(h, a)?,
        }
    }
    if !s.agents.is_empty() {
        progress(&format!("started {} agent(s) in the lab", s.agents.len()));
    }
    if !s.ssh.is_empty() {
        progress(&format!("started {} agent(s) through ssh", s.ssh.len()));
    }
    let (_agents, _ssh, _files) = (s.agents, s.ssh, s.files);
    let console =
        Console::connect(s.specs, Some(key)).map_err(|e| RunError::Hosts(e.to_string()))?;
    Ok(Some(Fleet {
        console,
        _agents,
        _ssh,
        _files,
    }))
}

/// The key of the run's agents: agents this run starts take one made for
/// the run (unless the user gave one); agents already running need the
/// user's.
fn run_key(opts: &Options) -> Result<Key, RunError> {
    let started_here =
        opts.ssh.is_some() || opts.hosts.iter().any(|h| matches!(h.at, HostAt::Lab(_)));
    match &opts.auth_key {
        Some(k) => Ok(k.clone()),
        None if started_here => {
            let k = iotoll_agent::ssh::run_key().map_err(|e| {
                RunError::Hosts(format!("cannot make a key for this run's agents: {e}"))
            })?;
            Ok(Key::from_bytes(&k))
        }
        None => Err(RunError::Hosts(
            "multi-host tests on agents at addresses need their key: add --auth-key FILE".into(),
        )),
    }
}

/// The targets agents started here may use: what this run's flags allow
/// (`PATH:rw` with --allow-destructive).
fn allow_given(opts: &Options) -> Vec<String> {
    let rw = if opts.allow_destructive { ":rw" } else { "" };
    (opts.targets.iter())
        .map(|t| format!("{}{rw}", t.display()))
        .collect()
}

/// The fleet as it is being started: what runs so far, and the hosts the
/// console will connect to.
struct Starting<'a> {
    opts: &'a Options,
    key: &'a Key,
    allow: Vec<String>,
    needs_disk: bool,
    agents: Vec<LocalAgent>,
    ssh: Vec<iotoll_agent::ssh::SshAgent>,
    files: Vec<crate::runner::TempTarget>,
    specs: Vec<HostSpec>,
}

impl Starting<'_> {
    /// An agent started in lab host `name` for host `h`, on its first
    /// address, with a test file of its own when no target was given.
    fn lab_agent(
        &mut self,
        h: &HostEntry,
        name: &str,
        progress: &mut dyn FnMut(&str),
    ) -> Result<(), RunError> {
        let hosts = RunError::Hosts;
        let Some(l) = &self.opts.lab else {
            return Err(hosts(format!(
                "host {}: a lab host ({name}) needs --lab",
                h.name
            )));
        };
        let state = l.lab.host(name).ok_or_else(|| {
            hosts(format!(
                "host {}: lab '{}' has no host '{name}'",
                h.name, l.lab.name
            ))
        })?;
        let Some(ip) = state.addresses.first().copied() else {
            return Err(hosts(format!(
                "host {}: lab host {name} has no address",
                h.name
            )));
        };
        let listen = std::net::SocketAddr::new(ip, iotoll_net::DEFAULT_PORT);
        let allow = self.allow_in_lab(h, progress);
        let exe = self.opts.agent_exe.clone().ok_or_else(|| {
            hosts("cannot start lab agents: iotoll's own executable is unknown".into())
        })?;
        let netns = iotoll_lab::netns_path(state).map_err(|e| hosts(e.to_string()))?;
        let key = self.key.bytes();
        let a = LocalAgent::spawn(
            &exe,
            Some(&netns),
            state.cpus.as_deref().map(|c| (c, state.cgroup.as_deref())),
            listen,
            key,
            &allow,
            SPAWN_WAIT,
        )
        .map_err(|e| hosts(format!("host {}: {e}", h.name)))?;
        let data = match h.data.is_empty() {
            true => state.addresses.clone(),
            false => h.data.clone(),
        };
        self.specs.push(HostSpec {
            name: h.name.clone(),
            address: a.address,
            data,
        });
        self.agents.push(a);
        Ok(())
    }

    /// What a lab agent may use: the run's targets, or a test file of its
    /// own (after removing those of runs that were killed).
    fn allow_in_lab(&mut self, h: &HostEntry, progress: &mut dyn FnMut(&str)) -> Vec<String> {
        let mut allow = self.allow.clone();
        if !allow.is_empty() || !self.needs_disk {
            return allow;
        }
        let tmp = std::env::temp_dir();
        if self.files.is_empty() {
            // Files of agents of runs that were killed go first.
            crate::runner::reclaim_and_say(progress);
        }
        let (prefix, suffix) = (crate::runner::TEMP_PREFIX, crate::runner::TEMP_SUFFIX);
        let f = tmp.join(format!("{prefix}{}-{}{suffix}", std::process::id(), h.name));
        allow.push(format!("{}:rw", f.display()));
        self.files.push(crate::runner::TempTarget(f));
        allow
    }

    /// Host `h` at address `a`: its agent started through ssh with
    /// `--ssh`, else one already running there.
    fn agent_at(&mut self, h: &HostEntry, a: &str) -> Result<(), RunError> {
        let address = iotoll_net::resolve(a, iotoll_net::DEFAULT_PORT)
            .map_err(|e| RunError::Hosts(format!("host {}: {e}", h.name)))?;
        if let Some(s) = &self.opts.ssh {
            // The agent listens on every address of its host, on the port
            // the hosts file gives; the console connects to the address
            // as given.
            let listen = match address {
                std::net::SocketAddr::V4(_) => format!("0.0.0.0:{}", address.port()),
                std::net::SocketAddr::V6(_) => format!("[::]:{}", address.port()),
            };
            let destination = h.ssh.clone().unwrap_or_else(|| address.ip().to_string());
            let launch = iotoll_agent::ssh::SshLaunch {
                agent: s.agent.clone(),
                extra: s.args.clone(),
                allow_targets: self.allow.clone(),
                ..iotoll_agent::ssh::SshLaunch::new(destination, listen)
            };
            let a = iotoll_agent::ssh::SshAgent::start(&launch, self.key.bytes(), SSH_WAIT)
                .map_err(|e| RunError::Hosts(e.with_host(&h.name).to_string()))?;
            self.ssh.push(a);
        }
        self.specs.push(HostSpec {
            name: h.name.clone(),
            address,
            data: h.data.clone(),
        });
        Ok(())
    }
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
