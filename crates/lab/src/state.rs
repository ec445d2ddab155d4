//! The state file of a lab that is up: `iotoll-<name>.json` in the state
//! directory, written (and fsynced) before each namespace is created, and
//! the lock file that serializes `up` and `down`.

use crate::cpus::Assignment;
use crate::def::{format_rate, LabDef, Offloads, Subnet, TcpSettings};
use crate::{host_netns, switch_netns, LabError};
use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
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
    /// The `[host.sysctl]` table set in its namespace, by full name
    /// (absent in state files of older versions: none).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sysctl: BTreeMap<String, String>,
    /// Its own CPUs (absent: the machine's, shared with every host).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<Vec<u32>>,
    /// How what runs as the host is held to `cpus`: `cgroup-v2-cpuset`
    /// or `affinity` (inherited by children).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confinement: Option<String>,
    /// The host's cpuset cgroup, recorded before it is created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup: Option<PathBuf>,
    /// The RPS/XPS mask files written (paths inside the host's
    /// namespace) and the mask, to check at `status`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub queue_masks: Vec<(String, String)>,
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
    /// What the CPU assignment had to say (a fallback to shared CPUs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpu_notes: Vec<String>,
}

impl LabState {
    pub fn host(&self, name: &str) -> Option<&HostState> {
        self.hosts.iter().find(|h| h.name == name)
    }

    /// What a result discloses about the lab: name, source, overrides,
    /// the effective definition, and per host its links (address, MTU,
    /// rate, shaper, offloads), the TCP settings and sysctls it set, and
    /// the values in force in its namespace (null if unreadable).
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
                "sysctl": h.sysctl,
                // Read now, in the namespace: what the run ran with.
                "in_force": crate::host_in_force(h).unwrap_or(serde_json::Value::Null),
                "cpus": h.cpus.as_deref().map(crate::cpus::format_list),
                "cpu_confinement": h.confinement,
            })).collect::<Vec<_>>(),
            "cpu_notes": self.cpu_notes,
        })
    }
}

/// The state of `def` about to be created: every host and link planned,
/// no namespace created yet, not complete.
pub(crate) fn plan(
    def: &LabDef,
    subnet: Subnet,
    addrs: &[Vec<Ipv4Addr>],
    cpus: &Assignment,
) -> LabState {
    let hosts = def
        .hosts
        .iter()
        .zip(addrs)
        .zip(&cpus.cpus)
        .map(|((h, a), c)| HostState {
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
            sysctl: h.sysctl.clone(),
            cpus: c.clone(),
            confinement: None,
            cgroup: None,
            queue_masks: Vec::new(),
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
        cpu_notes: cpus.notes.clone(),
    }
}

fn io(what: &str, p: &Path, e: std::io::Error) -> LabError {
    // ELOOP from O_NOFOLLOW: the file is a symbolic link.
    if e.raw_os_error() == Some(libc::ELOOP) {
        return LabError::System(format!(
            "{what} {}: it is a symbolic link, which iotoll does not follow in its state directory (remove it)",
            p.display()
        ));
    }
    LabError::System(format!("{what} {}: {e}", p.display()))
}

/// Whether a state directory with this owner and mode is safe: anyone
/// else who can create, replace or remove files in it could plant a lab's
/// state (namespaces `down` removes, as root) or a symbolic link where
/// the lock or a temporary file goes. So it must belong to this user or
/// root and be writable by its owner only. A sticky world-writable
/// directory such as /tmp is refused too: the sticky bit stops others
/// removing our files, not creating theirs under the names we use.
fn dir_is_safe(uid: u32, mode: u32) -> bool {
    let me = iotoll_model::os::euid();
    (uid == me || uid == 0) && mode & 0o022 == 0
}

/// The state directory, checked: a directory, ours (or root's), writable
/// by its owner only; `Ok(None)` when it does not exist.
fn checked_dir() -> Result<Option<PathBuf>, LabError> {
    use std::os::unix::fs::MetadataExt;
    let d = state_dir();
    let m = match std::fs::metadata(&d) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io("cannot read the state directory", &d, e)),
    };
    if !m.is_dir() {
        return Err(LabError::System(format!(
            "the state directory {} is not a directory",
            d.display()
        )));
    }
    if !dir_is_safe(m.uid(), m.mode()) {
        return Err(LabError::System(format!(
            "the state directory {} (owner uid {}, mode {:o}) is writable by other users or owned by another user: refused, as anyone who can write there could make `lab down` remove what they name (use a directory of your own with mode 0700 or 0755: IOTOLL_LAB_DIR)",
            d.display(),
            m.uid(),
            m.mode() & 0o7777
        )));
    }
    Ok(Some(d))
}

fn ensure_dir() -> Result<PathBuf, LabError> {
    if let Some(d) = checked_dir()? {
        return Ok(d);
    }
    let d = state_dir();
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o755)
        .create(&d)
        .map_err(|e| io("cannot create the state directory", &d, e))?;
    checked_dir()?
        .ok_or_else(|| LabError::System(format!("the state directory {} disappeared", d.display())))
}

/// Options that never follow a symbolic link in the last component.
fn nofollow() -> OpenOptions {
    let mut o = OpenOptions::new();
    o.custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
    o
}

/// An exclusive flock on `<state dir>/lock`, held until dropped.
pub(crate) struct Lock {
    _held: Flock<File>,
}

pub(crate) fn lock() -> Result<Lock, LabError> {
    let p = ensure_dir()?.join("lock");
    let mut f = nofollow()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(&p)
        .map_err(|e| io("cannot open the lock file", &p, e))?;
    loop {
        match Flock::lock(f, FlockArg::LockExclusive) {
            Ok(l) => return Ok(Lock { _held: l }),
            Err((again, Errno::EINTR)) => f = again,
            Err((_, e)) => return Err(io("cannot lock", &p, e.into())),
        }
    }
}

/// Writes the state file atomically (temporary file, fsync, rename, fsync
/// of the directory): a crash leaves the old or the new state, never half.
/// The temporary file is created new (a leftover, or a symbolic link
/// planted there, is removed first, never followed).
pub(crate) fn write(st: &LabState) -> Result<(), LabError> {
    let d = ensure_dir()?;
    let p = path(&st.name);
    let tmp = d.join(format!(".iotoll-{}.json.tmp", st.name));
    let text = serde_json::to_vec_pretty(st).map_err(|e| LabError::System(e.to_string()))?;
    remove_file(&tmp)?;
    let mut f = nofollow()
        .create_new(true)
        .write(true)
        .mode(0o644)
        .open(&tmp)
        .map_err(|e| io("cannot write", &tmp, e))?;
    f.write_all(&text)
        .and_then(|_| f.sync_all())
        .map_err(|e| io("cannot write", &tmp, e))?;
    // rename replaces a symbolic link at `p` itself, never its target.
    std::fs::rename(&tmp, &p).map_err(|e| io("cannot write", &p, e))?;
    File::open(&d)
        .and_then(|d| d.sync_all())
        .map_err(|e| io("cannot sync", &d, e))
}

/// Reads a state file (not following a symbolic link); `Ok(None)` when
/// there is none. The directory is checked first.
pub(crate) fn read(p: &Path) -> Result<Option<LabState>, LabError> {
    if checked_dir()?.is_none() {
        return Ok(None);
    }
    let mut f = match nofollow().read(true).open(p) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io("cannot read", p, e)),
    };
    let mut b = Vec::new();
    f.read_to_end(&mut b).map_err(|e| io("cannot read", p, e))?;
    serde_json::from_slice(&b)
        .map(Some)
        .map_err(|e| LabError::System(format!("state file {} is damaged: {e}", p.display())))
}

/// Removes `p` if it is there.
pub(crate) fn remove_file(p: &Path) -> Result<(), LabError> {
    match std::fs::remove_file(p) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io("cannot remove", p, e)),
    }
}

pub(crate) fn list() -> Result<Vec<LabState>, LabError> {
    let Some(d) = checked_dir()? else {
        return Ok(vec![]);
    };
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
