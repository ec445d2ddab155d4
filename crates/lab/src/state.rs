//! The state file of a lab that is up: `iotoll-<name>.json` in the state
//! directory, written (and fsynced) before each namespace is created, and
//! the lock file that serializes `up` and `down`.

use crate::def::{format_rate, LabDef, Offloads, Subnet, TcpSettings};
use crate::{host_netns, switch_netns, LabError};
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// The state directory: `$IOTOLL_LAB_DIR`, else `/run/iotoll`.
pub fn state_dir() -> PathBuf {
    std::env::var_os("IOTOLL_LAB_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/run/iotoll"))
}

pub(crate) fn path(name: &str) -> PathBuf {
    state_dir().join(format!("iotoll-{name}.json"))
}

/// One link (adapter) of a host that is up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinkState {
    /// The interface in the host's namespace (`eth0`, `eth1`, ...).
    pub ifname: String,
    pub address: IpAddr,
    pub prefix_len: u8,
    pub mtu: u32,
    /// `1gbit`, `100mbit`; `None`: unshaped.
    pub rate: Option<String>,
    pub rate_bps: Option<u64>,
    /// `tbf` or `htb` when shaped.
    pub shaper: Option<String>,
    /// The offloads the lab set (the others are the kernel's defaults).
    pub offloads: Offloads,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss: Option<String>,
    /// The veth's other end, a port of the switch's bridge.
    pub switch_port: String,
}

/// One host of a lab that is up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostState {
    pub name: String,
    /// Its network namespace (`iotoll-<lab>-<host>`).
    pub netns: String,
    /// Its links' addresses, in link order.
    pub addresses: Vec<IpAddr>,
    pub links: Vec<LinkState>,
    /// TCP settings the lab set in its namespace (absent: the kernel's defaults).
    pub tcp: TcpSettings,
}

/// A lab that is up (or whose `up` did not finish: `complete` false).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LabState {
    pub name: String,
    /// The built-in's name or the lab file's path.
    pub source: String,
    /// The `--set KEY=VALUE` overrides, in order.
    pub sets: Vec<String>,
    /// The effective lab as TOML text (every link's values, addresses, subnet).
    pub definition: String,
    /// `198.18.0.0/24`.
    pub subnet: String,
    pub hosts: Vec<HostState>,
    /// The switch's namespace (`iotoll-<lab>-sw`; bridge `br0`).
    pub switch: String,
    /// The namespaces created, each recorded before it was created:
    /// exactly what `down` removes.
    pub namespaces: Vec<String>,
    /// Whether `up` finished.
    pub complete: bool,
    /// The process that ran `up`.
    pub pid: u32,
    /// When `up` began (seconds since the epoch).
    pub started: u64,
}

impl LabState {
    pub fn host(&self, name: &str) -> Option<&HostState> {
        self.hosts.iter().find(|h| h.name == name)
    }

    /// What a result discloses about the lab: name, source, overrides,
    /// the effective definition, and per host its links (address, MTU,
    /// rate, shaper, offloads) and TCP settings.
    pub fn disclosure(&self) -> serde_json::Value {
        serde_json::json!({
            "name": self.name,
            "source": self.source,
            "sets": self.sets,
            "definition": self.definition,
            "subnet": self.subnet,
            "hosts": self.hosts.iter().map(|h| serde_json::json!({
                "name": h.name,
                "addresses": h.addresses,
                "links": h.links.iter().map(|l| serde_json::json!({
                    "ifname": l.ifname,
                    "address": l.address,
                    "mtu": l.mtu,
                    "rate": l.rate,
                    "shaper": l.shaper,
                    "offloads": l.offloads,
                    "delay": l.delay,
                    "loss": l.loss,
                })).collect::<Vec<_>>(),
                "tcp": h.tcp,
            })).collect::<Vec<_>>(),
        })
    }
}

/// The state of `def` about to be created: every host and link planned,
/// no namespace created yet, not complete.
pub(crate) fn plan(def: &LabDef, subnet: Subnet, addrs: &[Vec<Ipv4Addr>]) -> LabState {
    let hosts = def
        .hosts
        .iter()
        .zip(addrs)
        .map(|(h, a)| HostState {
            name: h.name.clone(),
            netns: host_netns(&def.name, &h.name),
            addresses: a.iter().map(|a| IpAddr::V4(*a)).collect(),
            links: h
                .links
                .iter()
                .zip(a)
                .enumerate()
                .map(|(k, (l, a))| LinkState {
                    ifname: format!("eth{k}"),
                    address: IpAddr::V4(*a),
                    prefix_len: subnet.prefix,
                    mtu: l.mtu,
                    rate: l.rate.map(format_rate),
                    rate_bps: l.rate,
                    shaper: l.rate.map(|_| l.shaper.name().to_string()),
                    offloads: l.offloads,
                    delay: l.delay.clone(),
                    loss: l.loss.clone(),
                    switch_port: format!("{}-{k}", h.name),
                })
                .collect(),
            tcp: h.tcp.clone(),
        })
        .collect();
    LabState {
        name: def.name.clone(),
        source: def.source.clone(),
        sets: def.sets.clone(),
        definition: def.to_toml(Some(subnet), Some(addrs)),
        subnet: subnet.to_string(),
        hosts,
        switch: switch_netns(&def.name),
        namespaces: Vec::new(),
        complete: false,
        pid: std::process::id(),
        started: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
    }
}

fn io(what: &str, p: &Path, e: std::io::Error) -> LabError {
    LabError::System(format!("{what} {}: {e}", p.display()))
}

fn ensure_dir() -> Result<PathBuf, LabError> {
    let d = state_dir();
    std::fs::create_dir_all(&d).map_err(|e| io("cannot create the state directory", &d, e))?;
    Ok(d)
}

/// An exclusive flock on `<state dir>/lock`, held until dropped.
pub(crate) struct Lock(File);

pub(crate) fn lock() -> Result<Lock, LabError> {
    let p = ensure_dir()?.join("lock");
    let f = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&p)
        .map_err(|e| io("cannot open the lock file", &p, e))?;
    loop {
        // SAFETY: flock on a descriptor we own.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } == 0 {
            return Ok(Lock(f));
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(io("cannot lock", &p, e));
        }
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        // SAFETY: unlocking our own descriptor (closing would too).
        unsafe { libc::flock(self.0.as_raw_fd(), libc::LOCK_UN) };
    }
}

/// Writes the state file atomically (temporary file, fsync, rename, fsync
/// of the directory): a crash leaves the old or the new state, never half.
pub(crate) fn write(st: &LabState) -> Result<(), LabError> {
    let d = ensure_dir()?;
    let p = path(&st.name);
    let tmp = d.join(format!(".iotoll-{}.json.tmp", st.name));
    let text = serde_json::to_vec_pretty(st).map_err(|e| LabError::System(e.to_string()))?;
    let mut f = File::create(&tmp).map_err(|e| io("cannot write", &tmp, e))?;
    f.write_all(&text)
        .and_then(|_| f.sync_all())
        .map_err(|e| io("cannot write", &tmp, e))?;
    std::fs::rename(&tmp, &p).map_err(|e| io("cannot write", &p, e))?;
    File::open(&d)
        .and_then(|d| d.sync_all())
        .map_err(|e| io("cannot sync", &d, e))
}

pub(crate) fn read(p: &Path) -> Result<Option<LabState>, LabError> {
    match std::fs::read(p) {
        Ok(b) => serde_json::from_slice(&b)
            .map(Some)
            .map_err(|e| LabError::System(format!("state file {} is damaged: {e}", p.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io("cannot read", p, e)),
    }
}

pub(crate) fn remove(name: &str) -> Result<(), LabError> {
    let p = path(name);
    match std::fs::remove_file(&p) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io("cannot remove", &p, e)),
    }
}

pub(crate) fn list() -> Result<Vec<LabState>, LabError> {
    let d = state_dir();
    let entries = match std::fs::read_dir(&d) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
        Err(e) => return Err(io("cannot read", &d, e)),
    };
    let mut v = Vec::new();
    for e in entries.flatten() {
        let n = e.file_name();
        let Some(n) = n.to_str() else { continue };
        if n.starts_with("iotoll-") && n.ends_with(".json") {
            if let Some(s) = read(&e.path())? {
                v.push(s);
            }
        }
    }
    v.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(v)
}
