//! `suite run`'s suite with every override applied, checked against the
//! flags before anything is created or recorded.

use super::{load, placed_hosts, SessionError};
use crate::file::Suite;
use crate::hosts::HostEntry;
use iotoll_net::auth::Key;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The flags of `suite run` that shape its suite.
pub struct PlanRequest<'a> {
    /// A built-in suite name, a suite file or an .icf.
    pub suite: &'a str,
    pub targets: &'a [PathBuf],
    pub reps: Option<u32>,
    pub config: Option<&'a str>,
    pub hosts_file: Option<&'a Path>,
    /// `--lab` and its `--lab-set`s.
    pub lab: Option<(&'a str, &'a [String])>,
    pub ramp: Option<Duration>,
    pub time: Option<Duration>,
    pub size: Option<u64>,
    /// `--yes`: run even if it is estimated to take more than 24 hours.
    pub yes: bool,
    /// `--report FILE`.
    pub report: Option<&'a Path>,
    /// `--peer HOST[:PORT]`.
    pub peer: Option<&'a str>,
    pub auth_key: Option<&'a Path>,
    /// `--confidence LEVEL,WIDTH` over every test's `confidence`.
    pub confidence: Option<iotoll_model::ci::Confidence>,
}

/// The suite to run, the notes that say what was overridden, its
/// estimated duration and the hosts its tests are placed on.
pub struct Plan {
    pub suite: Suite,
    pub notes: Vec<String>,
    pub estimate: Duration,
    pub hosts: Vec<HostEntry>,
    /// `--peer`, resolved.
    pub peer: Option<SocketAddr>,
    pub key: Option<Key>,
}

/// `--reps 0` is refused.
pub fn check_reps(reps: Option<u32>) -> Result<(), SessionError> {
    match reps {
        Some(0) => Err(SessionError::Usage("--reps must be at least 1".into())),
        _ => Ok(()),
    }
}

/// The suite of `suite run`, every flag checked.
pub fn plan(r: &PlanRequest) -> Result<Plan, SessionError> {
    let usage = SessionError::Usage;
    let (mut suite, mapping) = load(r.suite, r.targets, true)?;
    check_reps(r.reps)?;
    if r.config.is_some_and(|c| c.trim().is_empty()) {
        return Err(usage("--config must not be empty".into()));
    }
    // Every host a test names is found before anything is created or
    // recorded (a lab is only looked up here, brought up further on).
    let hosts = placed_hosts(&suite, r.hosts_file, r.lab)?;
    // The durations in effect decide the estimate.
    let durations = crate::durations::override_durations(&mut suite, r.ramp, r.time);
    let mut notes: Vec<String> = durations.map_err(usage)?.into_iter().collect();
    suite
        .apply_confidence(r.confidence, r.reps)
        .map_err(usage)?;
    if let Some(size) = r.size {
        notes.extend(suite.override_size(size).map_err(usage)?);
    }
    notes.extend(mapping);
    let estimate = crate::durations::planned(&suite, r.reps);
    if estimate > Duration::from_secs(24 * 3600) && !r.yes {
        let (name, est) = (&suite.name, crate::durations::length(estimate));
        let msg = format!("suite '{name}' is estimated to take {est}; add --yes to run it");
        return Err(usage(msg));
    }
    r.report.map(check_report).transpose()?;
    let key = r.auth_key.map(Key::load).transpose();
    let key = key.map_err(|e| usage(e.to_string()))?;
    let peer = r
        .peer
        .map(|p| iotoll_net::resolve(p, iotoll_net::DEFAULT_PORT));
    let peer = peer.transpose().map_err(|e| usage(e.to_string()))?;
    Ok(Plan {
        suite,
        notes,
        estimate,
        hosts,
        peer,
        key,
    })
}

/// `--report FILE` is refused unless its directory exists and the file is
/// not one.
fn check_report(p: &Path) -> Result<(), SessionError> {
    let dir = p.parent().filter(|d| !d.as_os_str().is_empty());
    let dir = dir.unwrap_or(Path::new("."));
    if dir.is_dir() && !p.is_dir() {
        return Ok(());
    }
    let msg = format!(
        "--report {}: no such directory, or a directory",
        p.display()
    );
    Err(SessionError::Usage(msg))
}
