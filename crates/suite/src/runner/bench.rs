//! What the tests of a run use, started before the first and stopped
//! after the last: the temporary test file, the in-process endpoint, the
//! agents, the lab host the tests run in.

use super::{run_one, Options, RepError, RunError, SuiteProgress};
use crate::file::{Job, JobSpec, Suite};
use iotoll_disk::DiskError;
use iotoll_model::ResultDoc;
use iotoll_net::auth::Key;
use iotoll_run::RunControl;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// An endpoint inside this process, on an ephemeral loopback port.
struct LocalEndpoint {
    addr: String,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl LocalEndpoint {
    fn start(key: Option<Key>) -> Result<LocalEndpoint, RunError> {
        Self::spawn(key, || {
            let l = TcpListener::bind("127.0.0.1:0").map_err(RunError::Endpoint)?;
            Ok((l, ()))
        })
    }

    /// An endpoint in a lab host: its thread enters the host's namespace
    /// first, so its listener, the sessions' data ports (opened by threads
    /// it starts, which inherit the namespace) and every connection live
    /// there.
    fn start_in(host: &iotoll_lab::HostState, key: Option<Key>) -> Result<LocalEndpoint, RunError> {
        let ip = host
            .addresses
            .first()
            .copied()
            .ok_or_else(|| RunError::Lab(format!("lab host '{}' has no address", host.name)))?;
        let h = host.clone();
        Self::spawn(key, move || {
            let inside = iotoll_lab::enter(&h).map_err(|e| RunError::Lab(e.to_string()))?;
            let l = TcpListener::bind((ip, 0)).map_err(|e| {
                RunError::Lab(format!("endpoint on {ip} in host '{}': {e}", h.name))
            })?;
            Ok((l, inside))
        })
    }

    /// Runs the endpoint on its own thread, on the listener `open` makes
    /// there, keeping what `open` also returns alive while it serves.
    fn spawn<G: 'static>(
        key: Option<Key>,
        open: impl FnOnce() -> Result<(TcpListener, G), RunError> + Send + 'static,
    ) -> Result<LocalEndpoint, RunError> {
        let stop = Arc::new(AtomicBool::new(false));
        let s2 = stop.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("iotoll-endpoint".into())
            .spawn(move || {
                let opened = open().and_then(|(l, keep)| {
                    let a = l.local_addr().map_err(RunError::Endpoint)?;
                    Ok((l, keep, a))
                });
                let (l, _keep, listen) = match opened {
                    Ok(x) => x,
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                };
                let _ = tx.send(Ok(listen));
                let cfg = iotoll_net::ServerConfig {
                    listen,
                    key,
                    once: false,
                    limits: iotoll_net::Limits::default(),
                    threads: None,
                    handshake: iotoll_net::server::HANDSHAKE,
                    tls: true,
                    console: None,
                };
                let _ = iotoll_net::server::serve_silently(l, &cfg, &s2);
            })
            .map_err(RunError::Endpoint)?;
        let listen = rx
            .recv()
            .map_err(|_| RunError::Lab("the endpoint thread ended at once".into()))??;
        Ok(LocalEndpoint {
            addr: listen.to_string(),
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for LocalEndpoint {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The suite's temporary test file, removed at the end.
pub(crate) struct TempTarget(pub(crate) PathBuf);

/// Test files a suite run creates in `dir`: `iotoll-suite-PID.tst`.
pub(crate) const TEMP_PREFIX: &str = "iotoll-suite-";
pub(crate) const TEMP_SUFFIX: &str = ".tst";

/// Removes the test files that runs killed with `kill -9` left in `dir`
/// (their PID is gone), as the database marks their runs incomplete. A
/// file whose PID is alive is left alone, whoever that process is; only
/// regular files are removed. Returns what was removed.
pub fn reclaim_stale_test_files(dir: &Path) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return removed;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(TEMP_PREFIX))
            .and_then(|n| n.strip_suffix(TEMP_SUFFIX))
            // `PID`, or `PID-HOST` for a lab agent's file (crate::fleet).
            .and_then(|p| p.split('-').next()?.parse::<i64>().ok())
        else {
            continue;
        };
        let regular = e.file_type().is_ok_and(|t| t.is_file());
        if regular && !iotoll_probe::procs::pid_alive(pid) && std::fs::remove_file(e.path()).is_ok()
        {
            removed.push(e.path());
        }
    }
    removed
}

/// [`reclaim_stale_test_files`] in the temporary directory, each file
/// removed said.
pub(crate) fn reclaim_and_say(say: &mut dyn FnMut(&str)) {
    for p in reclaim_stale_test_files(&std::env::temp_dir()) {
        say(&format!(
            "removed {}, the test file of a run that was killed",
            p.display()
        ));
    }
}

impl Drop for TempTarget {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Creates and fills the suite's temporary test file, sized for the
/// largest region of its disk tests (removed when dropped, also when
/// filling it fails or is interrupted).
fn temp_target(
    suite: &Suite,
    interrupted: &AtomicBool,
    progress: &mut dyn SuiteProgress,
) -> Result<TempTarget, DiskError> {
    let size = (suite.jobs.iter())
        .filter_map(|j| match &j.spec {
            JobSpec::Disk(d) => {
                Some(d.offset + d.size.unwrap_or(iotoll_disk::spec::DEFAULT_TEST_FILE_SIZE))
            }
            _ => None,
        })
        .max()
        .unwrap_or(iotoll_disk::spec::DEFAULT_TEST_FILE_SIZE);
    reclaim_and_say(&mut |m| progress.line(m));
    let path =
        std::env::temp_dir().join(format!("{TEMP_PREFIX}{}{TEMP_SUFFIX}", std::process::id()));
    let prep = iotoll_disk::DiskRequest {
        targets: vec![path.clone()],
        create: true,
        keep: true,
        size: Some(size),
        ..Default::default()
    };
    progress.line(&format!(
        "preparing a {} MiB test file in {}",
        size >> 20,
        std::env::temp_dir().display()
    ));
    let t = iotoll_disk::target::prepare(&prep, interrupted, &mut |d, t| progress.preparing(d, t));
    let temp = TempTarget(path);
    t.map(|_| temp)
}

/// What the tests of a run use, started before the first: the disk
/// targets (one temporary test file for all disk tests, sized for the
/// largest, if none was given), an endpoint in this process (in the lab's
/// server host) unless `--peer`, the agents of the tests placed on hosts,
/// and the lab host the tests run in. Dropped at the end: the endpoint
/// stops, then the agents, then the test file goes.
pub(super) struct Bench<'a> {
    _local: Option<LocalEndpoint>,
    pub(super) fleet: Option<crate::fleet::Fleet>,
    _temp: Option<TempTarget>,
    targets: Vec<PathBuf>,
    endpoint: Option<String>,
    client_host: Option<&'a iotoll_lab::HostState>,
}

impl<'a> Bench<'a> {
    /// Starts what the suite's tests need; None: interrupted while
    /// preparing the test file.
    pub(super) fn start(
        suite: &Suite,
        opts: &'a Options,
        interrupted: &AtomicBool,
        progress: &mut dyn SuiteProgress,
    ) -> Result<Option<Bench<'a>>, RunError> {
        // Tests placed on hosts run on their agents, not here.
        let here = || suite.jobs.iter().filter(|j| j.placement.is_local());
        let needs_disk = here().any(|j| matches!(j.spec, JobSpec::Disk(_)));
        let needs_net = here().any(|j| matches!(j.spec, JobSpec::Net(_)));
        let (targets, temp) = match (opts.targets.is_empty(), needs_disk) {
            (false, _) => (opts.targets.clone(), None),
            (true, true) => match temp_target(suite, interrupted, progress) {
                Ok(t) => (vec![t.0.clone()], Some(t)),
                Err(DiskError::Interrupted(_)) => return Ok(None),
                Err(e) => return Err(e.into()),
            },
            (true, false) => (Vec::new(), None),
        };
        let local = Self::start_endpoint(opts, needs_net && opts.peer.is_none())?;
        let client_host = opts.lab.as_ref().map(|l| l.host(&l.client)).transpose()?;
        let fleet = {
            // The console reaches a lab's agents from inside the lab (its
            // client host); its sessions keep that namespace.
            let _inside = enter(client_host)?;
            crate::fleet::start(opts, &suite.jobs, &mut |m| progress.line(m))?
        };
        let endpoint = (opts.peer.clone()).or_else(|| local.as_ref().map(|l| l.addr.clone()));
        Ok(Some(Bench {
            _local: local,
            fleet,
            _temp: temp,
            targets,
            endpoint,
            client_host,
        }))
    }

    /// The in-process endpoint the network tests run against, if they
    /// need one: on loopback, or in the lab's server host.
    fn start_endpoint(opts: &Options, needed: bool) -> Result<Option<LocalEndpoint>, RunError> {
        Ok(match (&opts.lab, needed) {
            (_, false) => None,
            (Some(l), true) => Some(LocalEndpoint::start_in(
                l.host(&l.server)?,
                opts.auth_key.clone(),
            )?),
            (None, true) => Some(LocalEndpoint::start(opts.auth_key.clone())?),
        })
    }

    /// One repetition of `job`. In a lab, the test runs inside the client
    /// host: this thread enters its namespace for the repetition (threads
    /// the test starts inherit it) and comes back after.
    pub(super) fn run_rep(
        &mut self,
        job: &Job,
        opts: &Options,
        ctl: RunControl,
    ) -> Result<Result<ResultDoc, RepError>, RunError> {
        let _inside = enter(self.client_host)?;
        let (targets, endpoint) = (&self.targets, self.endpoint.as_deref());
        Ok(run_one(
            job,
            opts,
            targets,
            endpoint,
            self.fleet.as_mut(),
            ctl,
        ))
    }
}

/// This thread inside the lab host the tests run in, if any, until the
/// guard is dropped.
pub(super) fn enter(
    host: Option<&iotoll_lab::HostState>,
) -> Result<Option<iotoll_lab::NetnsGuard>, RunError> {
    let inside = host.map(iotoll_lab::enter).transpose();
    inside.map_err(|e| RunError::Lab(e.to_string()))
}
