//! The system side: commands (`ip`, `tc`), entering namespaces, the
//! capability check, kernel probes, sysctls and the SIOCETHTOOL ioctl.

use crate::LabError;
use iotoll_probe::sysinfo::offload_commands;
use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

fn sys(m: impl Into<String>) -> LabError {
    LabError::System(m.into())
}

/// Runs `prog args...`; its stderr names the failure.
pub fn run(prog: &str, args: &[&str]) -> Result<String, LabError> {
    let out = Command::new(prog)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| sys(format!("cannot run {prog}: {e} (is iproute2 installed?)")))?;
    if !out.status.success() {
        return Err(sys(format!(
            "{prog} {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Runs `prog -n NETNS -batch -` with `lines` on stdin (`ip` or `tc`):
/// one process for many commands; the first failing line is named.
pub fn batch(prog: &str, netns: &str, lines: &[String]) -> Result<(), LabError> {
    if lines.is_empty() {
        return Ok(());
    }
    let mut child = Command::new(prog)
        .args(["-n", netns, "-batch", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| sys(format!("cannot run {prog}: {e} (is iproute2 installed?)")))?;
    let text = lines.join("\n") + "\n";
    if let Some(mut stdin) = child.stdin.take() {
        // A write error shows up as the command's failure below.
        let _ = stdin.write_all(text.as_bytes());
    }
    let out = child
        .wait_with_output()
        .map_err(|e| sys(format!("{prog}: {e}")))?;
    if !out.status.success() {
        return Err(sys(format!(
            "{prog} -n {netns} failed: {} (commands: {})",
            String::from_utf8_lossy(&out.stderr).trim(),
            lines.join("; ")
        )));
    }
    Ok(())
}

/// Whether this process has capability `bit` in its effective set (CapEff).
fn has_cap(bit: u32) -> bool {
    let Ok(s) = std::fs::read_to_string("/proc/self/status") else {
        return false;
    };
    s.lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .is_some_and(|caps| caps & (1 << bit) != 0)
}

/// CAP_NET_ADMIN: creating namespaces' links, qdiscs and addresses.
pub fn has_net_admin() -> bool {
    has_cap(12)
}

/// CAP_SYS_ADMIN: entering a namespace (setns), as `ip netns exec` does.
pub fn has_sys_admin() -> bool {
    has_cap(21)
}

/// Moves the calling thread into the network namespace `ns` (an open
/// namespace file).
pub fn setns(ns: &File) -> std::io::Result<()> {
    nix::sched::setns(ns, nix::sched::CloneFlags::CLONE_NEWNET).map_err(std::io::Error::from)
}

/// The calling thread's current network namespace, as an open file.
pub fn current_netns() -> std::io::Result<File> {
    File::open("/proc/thread-self/ns/net")
}

/// Runs `f` on a new thread inside the namespace at `path` (the calling
/// thread's namespace never changes).
pub fn in_netns<T: Send>(
    path: &Path,
    f: impl FnOnce() -> Result<T, LabError> + Send,
) -> Result<T, LabError> {
    let ns = File::open(path).map_err(|e| sys(format!("{}: {e}", path.display())))?;
    std::thread::scope(|s| {
        s.spawn(move || {
            setns(&ns).map_err(|e| sys(format!("setns {}: {e}", path.display())))?;
            f()
        })
        .join()
        .unwrap_or_else(|_| Err(sys("a namespace thread panicked")))
    })
}

/// Whether the kernel can attach qdisc `kind` (with `args`): tried on `lo`
/// of a throwaway namespace (a thread that unshares its network namespace;
/// `tc` inherits it), so nothing outside is touched.
pub fn probe_qdiscs<'a>(kinds: &[(&'a str, &str)]) -> Result<Vec<(&'a str, bool)>, LabError> {
    let probe = || {
        // This thread's network namespace only.
        let what = "cannot create a namespace to probe the kernel";
        nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET)
            .map_err(|e| sys(format!("{what}: {}", std::io::Error::from(e))))?;
        let mut res = Vec::new();
        for &(k, a) in kinds {
            let mut args = vec!["qdisc", "replace", "dev", "lo", "root"];
            args.extend(a.split_whitespace());
            let ok = Command::new("tc")
                .args(&args)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .map_err(|e| sys(format!("cannot run tc: {e} (is iproute2 installed?)")))?
                .success();
            res.push((k, ok));
        }
        Ok(res)
    };
    std::thread::scope(|s| s.spawn(probe).join())
        .unwrap_or_else(|_| Err(sys("the probe thread panicked")))
}

/// What the kernel said to a sysctl tried in a throwaway namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SysctlProbe {
    /// Kept per network namespace, and the value taken as written.
    Taken,
    /// The whole machine's: not in a new namespace's /proc/sys, or there
    /// read-only (the kernel shows some global values, e.g.
    /// net.core.rmem_max, to a namespace that cannot change them).
    Global,
    /// No such sysctl in this kernel, inside a namespace or out.
    Unknown,
    /// Per namespace, but the write failed (the kernel's error).
    Refused(String),
    /// Per namespace, but it reads back other than written.
    Kept(String),
}

/// Tries each `(key, value)` in a throwaway network namespace (a thread
/// that unshares its own; nothing outside is touched): per namespace or
/// global, and whether the kernel takes the value. A key is per
/// namespace exactly when a new namespace has it writable: the kernel
/// registers per-namespace sysctls for each namespace and leaves the
/// global ones out or read-only there (on 6.18: tcp_mem and
/// netdev_max_backlog absent, core rmem/wmem max/default read-only).
pub fn probe_sysctls(pairs: &[(&str, &str)]) -> Result<Vec<SysctlProbe>, LabError> {
    let path = |k: &str| format!("/proc/sys/{}", k.replace('.', "/"));
    // Outside first (this thread's namespace): unknown or global.
    let outside: Vec<bool> = pairs
        .iter()
        .map(|(k, _)| Path::new(&path(k)).exists())
        .collect();
    let probe = || {
        let what = "cannot create a namespace to probe the kernel";
        nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET)
            .map_err(|e| sys(format!("{what}: {}", std::io::Error::from(e))))?;
        let words = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        let res = (pairs.iter().zip(&outside))
            .map(|(&(k, v), &outside)| {
                use std::os::unix::fs::PermissionsExt;
                let p = path(k);
                let Ok(meta) = std::fs::metadata(&p) else {
                    return if outside {
                        SysctlProbe::Global
                    } else {
                        SysctlProbe::Unknown
                    };
                };
                if meta.permissions().mode() & 0o200 == 0 {
                    return SysctlProbe::Global;
                }
                if let Err(e) = std::fs::write(&p, v) {
                    return SysctlProbe::Refused(e.to_string());
                }
                match sysctl_get(k) {
                    Some(got) if words(&got) == words(v) => SysctlProbe::Taken,
                    got => SysctlProbe::Kept(got.unwrap_or_else(|| "(unreadable)".into())),
                }
            })
            .collect();
        Ok(res)
    };
    std::thread::scope(|s| s.spawn(probe).join())
        .unwrap_or_else(|_| Err(sys("the probe thread panicked")))
}

/// Writes a sysctl of the calling thread's network namespace (`net/ipv4/...`).
pub fn sysctl(key: &str, value: &str) -> Result<(), LabError> {
    let p = format!("/proc/sys/{}", key.replace('.', "/"));
    std::fs::write(&p, value).map_err(|e| sys(format!("sysctl {key}={value}: {e}")))
}

/// Reads a sysctl of the calling thread's network namespace.
pub fn sysctl_get(key: &str) -> Option<String> {
    let p = format!("/proc/sys/{}", key.replace('.', "/"));
    std::fs::read_to_string(p)
        .ok()
        .map(|s| s.trim().to_string())
}

/// Sets offloads of `ifname` in the calling thread's namespace (as
/// `ethtool -K`), then reads each back: a setting the device refuses or
/// cannot keep (e.g. tso without sg) is an error naming it: bad input, as
/// the combination asked for cannot be had.
pub fn set_offloads(host: &str, ifname: &str, settings: &[(&str, bool)]) -> Result<(), LabError> {
    let at = format!("host '{host}' {ifname}");
    for (name, on) in settings {
        let (_, set) =
            offload_commands(name).ok_or_else(|| sys(format!("unknown offload {name}")))?;
        iotoll_probe::sysinfo::ethtool_value(ifname, set, u32::from(*on))
            .map_err(|e| sys(format!("{at}: setting {name} {}: {e}", onoff(*on))))?;
    }
    for (name, on) in settings {
        let got = get_offload(ifname, name)?;
        if got != *on {
            return Err(LabError::Usage(format!(
                "{at}: offload {name} stays {} when set {} (a feature it depends on is off? tso and gso need sg on)",
                onoff(got),
                onoff(*on)
            )));
        }
    }
    Ok(())
}

fn get_offload(ifname: &str, name: &str) -> Result<bool, LabError> {
    let (get, _) = offload_commands(name).ok_or_else(|| sys(format!("unknown offload {name}")))?;
    iotoll_probe::sysinfo::ethtool_value(ifname, get, 0)
        .map(|v| v != 0)
        .map_err(|e| sys(format!("{ifname}: reading {name}: {e}")))
}

/// The offloads of `ifname` in the calling thread's namespace, every one.
pub fn offloads(ifname: &str) -> Result<Vec<(&'static str, bool)>, LabError> {
    ["sg", "tx_checksum", "rx_checksum", "tso", "gso", "gro"]
        .into_iter()
        .map(|n| Ok((n, get_offload(ifname, n)?)))
        .collect()
}

fn onoff(b: bool) -> &'static str {
    if b {
        "on"
    } else {
        "off"
    }
}
