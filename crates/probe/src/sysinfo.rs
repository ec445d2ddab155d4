//! System disclosure: what a result was measured on. The whole host for
//! `iotoll sysinfo` and every stored run (CPU, memory, kernel, every network
//! interface with its offloads, block devices, TCP sysctls), the network
//! path of one run (`network`), and the warnings worth reading before a
//! suite starts.

use iotoll_model::spec::{Coalescing, Identity, Interface, Link, NetSide, Offloads};
use nix::ifaddrs::InterfaceAddress;
use nix::sys::socket::{socket, SockFlag, SockaddrStorage};
use nix::sys::socket::{AddressFamily::Inet, SockType::Datagram};
use nix::sys::utsname::{uname, UtsName};
use serde::Serialize;
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::net::IpAddr;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;

/// The TCP settings that change throughput and latency results.
const TCP_SYSCTLS: &[&str] = &[
    "net/ipv4/tcp_rmem",
    "net/ipv4/tcp_wmem",
    "net/ipv4/tcp_congestion_control",
    "net/ipv4/tcp_timestamps",
    "net/ipv4/tcp_sack",
    "net/ipv4/tcp_window_scaling",
    "net/ipv4/tcp_low_latency",
    "net/core/rmem_max",
    "net/core/wmem_max",
    "net/core/default_qdisc",
    // Study 004's 10 GbE tuning: buffers and queues.
    "net/ipv4/tcp_mem",
    "net/ipv4/tcp_max_syn_backlog",
    "net/core/rmem_default",
    "net/core/wmem_default",
    "net/core/optmem_max",
    "net/core/netdev_max_backlog",
];

/// The whole host: what `iotoll sysinfo` shows and every run stores. A
/// value that cannot be read is null.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Host {
    pub host: String,
    pub iotoll: Build,
    pub os: Os,
    pub cpu: Cpu,
    pub memory: Memory,
    pub interfaces: Vec<HostInterface>,
    pub block_devices: Vec<BlockDevice>,
    pub tcp: BTreeMap<String, Option<String>>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Build {
    pub version: String,
    pub commit: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Os {
    pub kernel: String,
    pub arch: String,
    pub distribution: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Cpu {
    pub model: Option<String>,
    pub sockets: usize,
    pub cores: usize,
    pub threads: u32,
    pub online: Option<String>,
    pub smt: Option<bool>,
    pub nominal_mhz: Option<f64>,
    pub nominal_mhz_source: Option<String>,
    pub current_mhz: Option<f64>,
    pub governor: Option<String>,
    pub scaling_driver: Option<String>,
    pub caches: Vec<Cache>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Cache {
    pub level: String,
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub size: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Memory {
    pub total_bytes: Option<u64>,
    pub swap_total_bytes: Option<u64>,
    pub swap_used_bytes: Option<u64>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct HostInterface {
    pub name: String,
    pub addresses: Vec<String>,
    #[serde(flatten)]
    pub link: Link,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct BlockDevice {
    pub name: String,
    pub model: Option<String>,
    pub size_bytes: Option<u64>,
    pub rotational: Option<bool>,
    pub scheduler: Option<String>,
    pub queue_depth: Option<u64>,
    pub nr_requests: Option<u64>,
    pub logical_block_size: Option<u64>,
}

pub(crate) fn read_trim(p: impl AsRef<Path>) -> Option<String> {
    std::fs::read_to_string(p)
        .ok()
        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// Name of the local interface that holds `ip`.
pub fn interface_of(ip: IpAddr) -> Option<String> {
    // An IPv4-mapped IPv6 address is held as its IPv4 address.
    let ip = Some(ip.to_canonical());
    let found = if_addrs().into_iter().find(|(_, a)| *a == ip);
    found.map(|(name, _)| name)
}

/// Every (interface name, address) pair of getifaddrs, in its order.
fn if_addrs() -> Vec<(String, Option<IpAddr>)> {
    let Ok(addrs) = nix::ifaddrs::getifaddrs() else {
        return Vec::new();
    };
    let ip = |a: SockaddrStorage| match (a.as_sockaddr_in(), a.as_sockaddr_in6()) {
        (Some(v4), _) => Some(IpAddr::V4(v4.ip())),
        (_, Some(v6)) => Some(IpAddr::V6(v6.ip())),
        _ => None,
    };
    let pair = |a: InterfaceAddress| (a.interface_name, a.address.and_then(ip));
    addrs.map(pair).collect()
}

const SIOCETHTOOL: libc::c_ulong = 0x8946;

#[repr(C)]
struct EthtoolValue {
    cmd: u32,
    data: u32,
}

/// struct ifreq: the interface's name, then a union (`u`, padded to its
/// 24 bytes and more).
#[repr(C)]
struct IfReq<U> {
    name: [libc::c_char; libc::IFNAMSIZ],
    u: U,
    _pad: [u8; 24],
}

/// A datagram socket for ethtool ioctls, closed when dropped.
fn ethtool_socket() -> Option<OwnedFd> {
    socket(Inet, Datagram, SockFlag::SOCK_CLOEXEC, None).ok()
}

/// One ioctl `request` on `ifname` (truncated to IFNAMSIZ - 1 bytes) with
/// `u` in the ifreq's union; what the kernel leaves there.
fn ifreq<U>(sock: &OwnedFd, ifname: &str, request: libc::c_ulong, u: U) -> std::io::Result<U> {
    let mut req = IfReq {
        name: [0; libc::IFNAMSIZ],
        u,
        _pad: [0; 24],
    };
    for (d, s) in req
        .name
        .iter_mut()
        .zip(ifname.bytes().take(libc::IFNAMSIZ - 1))
    {
        *d = s as libc::c_char;
    }
    // SAFETY: the interface requests read the name and the union, and
    // write at most the union back (SIOCETHTOOL: the command struct its
    // pointer points to; see `ethtool`).
    match unsafe { libc::ioctl(sock.as_raw_fd(), request as _, &mut req) } {
        0 => Ok(req.u),
        _ => Err(std::io::Error::last_os_error()),
    }
}

/// One SIOCETHTOOL on `ifname` with `data`, the ethtool command struct the
/// kernel reads and fills.
fn ethtool<T>(sock: &OwnedFd, ifname: &str, data: &mut T) -> std::io::Result<()> {
    let data: *mut libc::c_void = (data as *mut T).cast();
    ifreq(sock, ifname, SIOCETHTOOL, data).map(drop)
}

/// The offloads the legacy ethtool commands get and set, by the name
/// `ethtool -K` and lab files use: (name, get command, set command)
/// (include/uapi/linux/ethtool.h).
const OFFLOAD_COMMANDS: [(&str, u32, u32); 6] = [
    ("rx_checksum", 0x14, 0x15),
    ("tx_checksum", 0x16, 0x17),
    ("sg", 0x18, 0x19),
    ("tso", 0x1e, 0x1f),
    ("gso", 0x23, 0x24),
    ("gro", 0x2b, 0x2c),
];

/// An offload's (get, set) commands, by its name.
pub fn offload_commands(name: &str) -> Option<(u32, u32)> {
    let (_, get, set) = OFFLOAD_COMMANDS.iter().find(|c| c.0 == name)?;
    Some((*get, *set))
}

/// One legacy ethtool get or set command (struct ethtool_value) on
/// `ifname`, in the calling thread's network namespace; the value the
/// kernel leaves.
pub fn ethtool_value(ifname: &str, cmd: u32, data: u32) -> std::io::Result<u32> {
    let sock = ethtool_socket().ok_or_else(std::io::Error::last_os_error)?;
    let mut v = EthtoolValue { cmd, data };
    ethtool(&sock, ifname, &mut v)?;
    Ok(v.data)
}

/// What ETHTOOL_GDRVINFO says about an interface's driver. Every field is
/// None when the driver left it empty (or wrote "N/A").
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DriverInfo {
    pub driver: Option<String>,
    pub version: Option<String>,
    pub firmware: Option<String>,
    pub bus_info: Option<String>,
}

/// A NUL-terminated field of a kernel struct, None when empty or "N/A".
fn c_field(b: &[u8]) -> Option<String> {
    let end = b.iter().position(|c| *c == 0).unwrap_or(b.len());
    let v = String::from_utf8_lossy(&b[..end]).trim().to_string();
    (!v.is_empty() && v != "N/A").then_some(v)
}

/// The driver of `ifname` as the ethtool driver-info ioctl (SIOCETHTOOL
/// with ETHTOOL_GDRVINFO) reports it: this also names drivers that have no
/// sysfs `device/driver` link (veth, bridge, tun, bonding). None when the
/// interface does not exist or its driver does not answer (loopback).
pub fn driver_info(ifname: &str) -> Option<DriverInfo> {
    // struct ethtool_drvinfo (linux/ethtool.h): cmd, then driver, version,
    // fw_version, bus_info, erom_version (32 bytes each), reserved2 (12),
    // n_priv_flags, n_stats, testinfo_len, eedump_len, regdump_len (u32).
    #[repr(C)]
    #[derive(Default)]
    #[allow(dead_code)] // the kernel writes every field; we read four
    struct DrvInfo {
        cmd: u32,
        driver: [u8; 32],
        version: [u8; 32],
        fw_version: [u8; 32],
        bus_info: [u8; 32],
        erom_version: [u8; 32],
        reserved2: [u8; 12],
        counts: [u32; 5],
    }
    const ETHTOOL_GDRVINFO: u32 = 0x3;
    if ifname.is_empty() || ifname.len() >= libc::IFNAMSIZ {
        return None;
    }
    let mut info = DrvInfo {
        cmd: ETHTOOL_GDRVINFO,
        ..Default::default()
    };
    ethtool(&ethtool_socket()?, ifname, &mut info).ok()?;
    Some(DriverInfo {
        driver: c_field(&info.driver),
        version: c_field(&info.version),
        firmware: c_field(&info.fw_version),
        bus_info: c_field(&info.bus_info),
    })
}

fn offloads(ifname: &str) -> Option<Offloads> {
    let sock = ethtool_socket()?;
    const GFLAGS: u32 = 0x25;
    const FLAG_LRO: u32 = 1 << 15;
    // A legacy ethtool get-value command (the kernel answers these from the
    // device's feature flags, for every driver including lo and veth).
    let get = |cmd| {
        let mut v = EthtoolValue { cmd, data: 0 };
        ethtool(&sock, ifname, &mut v).ok().map(|()| v.data)
    };
    let b = |name| get(offload_commands(name)?.0).map(|v| v != 0);
    Some(Offloads {
        tso: b("tso"),
        gso: b("gso"),
        gro: b("gro"),
        lro: get(GFLAGS).map(|f| f & FLAG_LRO != 0),
        rx_checksum: b("rx_checksum"),
        tx_checksum: b("tx_checksum"),
    })
}

/// Whether /sys shows this thread's network namespace: false in a thread
/// that entered another one (a lab host), where /sys/class/net still lists
/// the namespace sysfs was mounted in, and names there may be another
/// device's. Told by the interface names, which the kernel gives for the
/// calling thread's namespace.
fn sysfs_is_ours() -> bool {
    let Ok(ours) = nix::net::if_::if_nameindex() else {
        return true;
    };
    let mut ours: Vec<String> = ours
        .iter()
        .map(|i| i.name().to_string_lossy().into_owned())
        .collect();
    ours.sort();
    ours == dir_names("/sys/class/net")
}

/// The MTU by SIOCGIFMTU, which answers for this thread's namespace.
fn mtu_ioctl(ifname: &str) -> Option<u64> {
    const SIOCGIFMTU: libc::c_ulong = 0x8921;
    if ifname.is_empty() || ifname.len() >= libc::IFNAMSIZ {
        return None;
    }
    let mtu: libc::c_int = ifreq(&ethtool_socket()?, ifname, SIOCGIFMTU, 0).ok()?;
    (mtu > 0).then_some(mtu as u64)
}

/// The link speed by ETHTOOL_GSET, Mbit/s; None when unknown.
fn speed_ioctl(ifname: &str) -> Option<u64> {
    // struct ethtool_cmd (linux/ethtool.h), 44 bytes.
    #[repr(C)]
    #[derive(Default)]
    #[allow(dead_code)] // the kernel writes every field; we read two
    struct EthtoolCmd {
        cmd: u32,
        supported: u32,
        advertising: u32,
        speed: u16,
        bytes: [u8; 6],
        maxtxpkt: u32,
        maxrxpkt: u32,
        speed_hi: u16,
        mdix: [u8; 2],
        lp_advertising: u32,
        reserved: [u32; 2],
    }
    const ETHTOOL_GSET: u32 = 0x1;
    let mut c = EthtoolCmd {
        cmd: ETHTOOL_GSET,
        ..Default::default()
    };
    ethtool(&ethtool_socket()?, ifname, &mut c).ok()?;
    let speed = u32::from(c.speed) | (u32::from(c.speed_hi) << 16);
    (speed > 0 && speed != u32::MAX && speed != 0xffff).then_some(speed as u64)
}

fn link(name: &str) -> Link {
    let ours = sysfs_is_ours();
    let sysfs = |f: &str| {
        ours.then(|| read_trim(format!("/sys/class/net/{name}/{f}")))
            .flatten()
    };
    let info = driver_info(name).unwrap_or_default();
    // The sysfs link names the bound driver of a physical device; drivers
    // without one (veth, bridge, tun) answer the ethtool ioctl.
    let driver = ours
        .then(|| std::fs::read_link(format!("/sys/class/net/{name}/device/driver")).ok())
        .flatten()
        .and_then(|p| p.file_name().map(|f| f.to_string_lossy().into_owned()))
        .or(info.driver);
    Link {
        mtu: mtu_ioctl(name).or_else(|| sysfs("mtu").and_then(|s| s.parse::<u64>().ok())),
        // The kernel prints an unknown speed as -1 (or 0).
        speed_mbit: speed_ioctl(name).or_else(|| {
            sysfs("speed")
                .and_then(|s| s.parse().ok())
                .filter(|s| *s > 0)
        }),
        driver,
        driver_version: info.version,
        firmware: info.firmware,
        bus_info: info.bus_info,
        offloads: offloads(name),
        coalescing: coalescing(name),
    }
}

/// Interrupt coalescing of `ifname` (ETHTOOL_GCOALESCE, as `ethtool -c`);
/// None where the driver has none (veth, bridge, loopback answer
/// EOPNOTSUPP): absent, not an error.
pub fn coalescing(ifname: &str) -> Option<Coalescing> {
    const ETHTOOL_GCOALESCE: u32 = 0x0e;
    // struct ethtool_coalesce (linux/ethtool.h): cmd, then 22 u32 fields;
    // rx_coalesce_usecs is [1], rx_max_coalesced_frames [2],
    // tx_coalesce_usecs [5], tx_max_coalesced_frames [6],
    // use_adaptive_rx_coalesce [10], use_adaptive_tx_coalesce [11].
    let mut c = [0u32; 23];
    c[0] = ETHTOOL_GCOALESCE;
    if ifname.is_empty() || ifname.len() >= libc::IFNAMSIZ {
        return None;
    }
    ethtool(&ethtool_socket()?, ifname, &mut c).ok()?;
    Some(Coalescing {
        rx_usecs: c[1],
        rx_frames: c[2],
        tx_usecs: c[5],
        tx_frames: c[6],
        adaptive_rx: c[10] != 0,
        adaptive_tx: c[11] != 0,
    })
}

/// Everything about the path through `local_ip` that affects results, and
/// who this end is.
pub fn network(local_ip: IpAddr) -> NetSide {
    let name = interface_of(local_ip);
    NetSide {
        interface: Interface {
            link: name.as_deref().map(link),
            name,
            // A dual-stack endpoint's IPv4 client arrives as ::ffff:a.b.c.d:
            // shown as users wrote it.
            address: local_ip.to_canonical().to_string(),
        },
        tcp: tcp_sysctls(),
        identity: Some(identity()),
    }
}

/// This process: this kernel's boot id, its pid and start time.
pub fn identity() -> Identity {
    let pid = i32::try_from(std::process::id()).ok();
    Identity {
        boot_id: boot_id(),
        pid,
        start_ticks: pid.and_then(crate::procs::start_ticks),
    }
}

/// Whether this CPU has `flag` in /proc/cpuinfo's `flags` (x86) or
/// `Features` (Arm) line, e.g. `aes`; None if neither line is there.
pub fn cpu_flag(flag: &str) -> Option<bool> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    let flags = crate::clock::cpuinfo_field(&info, "flags")
        .or_else(|| crate::clock::cpuinfo_field(&info, "Features"))?;
    Some(flags.split_whitespace().any(|w| w == flag))
}

fn cpu() -> Cpu {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let mut sockets = std::collections::BTreeSet::new();
    let mut cores = std::collections::BTreeSet::new();
    let mut threads = 0u32;
    let (mut phys, mut core) = (String::new(), String::new());
    for l in cpuinfo.lines() {
        if let Some((k, v)) = l.split_once(':') {
            match k.trim() {
                "processor" => threads += 1,
                "physical id" => phys = v.trim().to_string(),
                "core id" => core = v.trim().to_string(),
                _ => {}
            }
        } else if l.trim().is_empty() && threads > 0 {
            sockets.insert(phys.clone());
            cores.insert((phys.clone(), core.clone()));
        }
    }
    let cpu0 = "/sys/devices/system/cpu/cpu0";
    let caches = (0..8)
        .filter_map(|i| {
            let d = format!("{cpu0}/cache/index{i}");
            Some(Cache {
                level: read_trim(format!("{d}/level"))?,
                kind: read_trim(format!("{d}/type")),
                size: read_trim(format!("{d}/size")),
            })
        })
        .collect();
    let (nominal_mhz, nominal_mhz_source) = crate::clock::nominal_mhz().unzip();
    Cpu {
        model: crate::clock::cpuinfo_field(&cpuinfo, "model name"),
        sockets: sockets.len().max(1),
        cores: cores.len().max(1),
        threads,
        online: read_trim("/sys/devices/system/cpu/online"),
        smt: read_trim("/sys/devices/system/cpu/smt/active").map(|v| v == "1"),
        nominal_mhz,
        nominal_mhz_source,
        current_mhz: crate::clock::cpuinfo_field(&cpuinfo, "cpu MHz")
            .and_then(|v| v.parse::<f64>().ok()),
        governor: read_trim(format!("{cpu0}/cpufreq/scaling_governor")),
        scaling_driver: read_trim(format!("{cpu0}/cpufreq/scaling_driver")),
        caches,
    }
}

fn meminfo_kib(key: &str) -> Option<u64> {
    let m = std::fs::read_to_string("/proc/meminfo").ok()?;
    m.lines().find_map(|l| {
        let rest = l.strip_prefix(key)?.strip_prefix(':')?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

fn os_release() -> Option<String> {
    let t = std::fs::read_to_string("/etc/os-release").ok()?;
    t.lines()
        .find_map(|l| l.strip_prefix("PRETTY_NAME="))
        .map(|v| v.trim_matches('"').to_string())
}

/// Every network interface, its addresses and offloads.
fn interfaces() -> Vec<HostInterface> {
    let mut addrs: BTreeMap<String, Vec<String>> = Default::default();
    for (name, ip) in if_addrs() {
        if let Some(ip) = ip {
            addrs.entry(name).or_default().push(ip.to_string());
        }
    }
    let interface = |name: String| HostInterface {
        link: link(&name),
        addresses: addrs.remove(&name).unwrap_or_default(),
        name,
    };
    dir_names("/sys/class/net")
        .into_iter()
        .map(interface)
        .collect()
}

/// The names in a directory, sorted; none when it cannot be read.
pub(crate) fn dir_names(dir: impl AsRef<Path>) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

fn block_device(name: String) -> BlockDevice {
    let b = format!("/sys/block/{name}");
    let sched = read_trim(format!("{b}/queue/scheduler")).map(|s| {
        s.split_whitespace()
            .find(|w| w.starts_with('['))
            .map(|w| w.trim_matches(['[', ']']).to_string())
            .unwrap_or(s)
    });
    let num = |f: &str| read_trim(format!("{b}/{f}")).and_then(|s| s.parse::<u64>().ok());
    BlockDevice {
        model: read_trim(format!("{b}/device/model")),
        size_bytes: num("size").map(|s| s * 512),
        rotational: read_trim(format!("{b}/queue/rotational")).map(|v| v == "1"),
        scheduler: sched,
        queue_depth: num("device/queue_depth"),
        nr_requests: num("queue/nr_requests"),
        logical_block_size: num("queue/logical_block_size"),
        name,
    }
}

/// The TCP and socket-buffer sysctls of the calling thread's network
/// namespace, by last name part (a global one reads the machine's).
pub fn tcp_sysctls() -> BTreeMap<String, Option<String>> {
    TCP_SYSCTLS
        .iter()
        .map(|k| {
            let short = k.rsplit('/').next().unwrap_or(k).to_string();
            (short, read_trim(format!("/proc/sys/{k}")))
        })
        .collect()
}

/// The whole host, for `iotoll sysinfo` and every stored run.
pub fn host(version: &str, commit: Option<&str>) -> Host {
    let u = uname().ok();
    let f = |g: fn(&UtsName) -> &OsStr| {
        u.as_ref()
            .map_or(String::new(), |u| g(u).to_string_lossy().into())
    };
    let kib = |k| meminfo_kib(k).map(|k| k * 1024);
    Host {
        host: f(UtsName::nodename),
        iotoll: Build {
            version: version.into(),
            commit: commit.map(Into::into),
        },
        os: Os {
            kernel: format!("{} {}", f(UtsName::sysname), f(UtsName::release)),
            arch: f(UtsName::machine),
            distribution: os_release(),
        },
        cpu: cpu(),
        memory: Memory {
            total_bytes: kib("MemTotal"),
            swap_total_bytes: kib("SwapTotal"),
            swap_used_bytes: kib("SwapTotal")
                .zip(kib("SwapFree"))
                .map(|(t, f)| t.saturating_sub(f)),
        },
        interfaces: interfaces(),
        block_devices: dir_names("/sys/block")
            .into_iter()
            .map(block_device)
            .collect(),
        tcp: tcp_sysctls(),
    }
}

/// The filesystem type a path lives on, from /proc/self/mounts (longest
/// matching mount point).
pub fn fs_type(path: &Path) -> Option<String> {
    let p = std::fs::canonicalize(path)
        .or_else(|_| {
            std::fs::canonicalize(
                path.parent()
                    .filter(|p| !p.as_os_str().is_empty())
                    .unwrap_or(Path::new(".")),
            )
        })
        .ok()?;
    let mounts = std::fs::read_to_string("/proc/self/mounts").ok()?;
    mounts
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 3 && p.starts_with(f[1])).then(|| (f[1].len(), f[2].to_string()))
        })
        .max_by_key(|(n, _)| *n)
        .map(|(_, t)| t)
}

/// Where a run's network peer is, as far as the warnings care.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PeerPlace {
    /// Another machine, or no network test at all: nothing to say.
    Remote,
    /// This host, over loopback.
    Loopback,
    /// Another network namespace of this host (a lab): veth, not a NIC.
    Lab,
}

/// Warnings worth reading before a suite starts: each one can make results
/// unrepresentative. `busy` lists (process, % of all CPUs) seen in a short
/// sample before the start.
pub fn warnings(
    host: &Host,
    disk_target: Option<&Path>,
    peer: PeerPlace,
    busy: &[(String, f64)],
) -> Vec<String> {
    let mut w = Vec::new();
    if let Some(g) = &host.cpu.governor {
        if g != "performance" {
            w.push(format!("CPU frequency governor is '{g}', not 'performance': clocks may change during the run"));
        }
    }
    for (name, pct) in busy {
        w.push(format!(
            "another process was already using {pct:.1} % of the CPUs before the start: {name}"
        ));
    }
    if host.memory.swap_used_bytes.is_some_and(|u| u > 0) {
        w.push("swap is in use: memory pressure may distort the results".into());
    }
    if let Some(t) = disk_target {
        if let Some(fs) = fs_type(t) {
            if fs == "tmpfs" || fs == "ramfs" {
                w.push(format!("the disk target {} is on {fs}: that is memory, not a device (and O_DIRECT may be impossible)", t.display()));
            }
        }
    }
    match peer {
        PeerPlace::Remote => {}
        PeerPlace::Loopback => w.push("the network peer is on this host: loopback results measure host-internal copies, not a NIC".into()),
        PeerPlace::Lab => w.push("the network peer is a lab host on this machine: traffic crosses veth links between namespaces, not a NIC, and both ends share this machine's CPUs".into()),
    }
    w
}

/// This kernel's boot id (`/proc/sys/kernel/random/boot_id`): equal on
/// both ends of a test exactly when they run on the same kernel, whatever
/// their network namespaces, containers or addresses.
pub fn boot_id() -> Option<String> {
    read_trim("/proc/sys/kernel/random/boot_id").filter(|s| !s.is_empty())
}

/// Processes other than `me` that used more than `threshold_pct` of all
/// CPUs over `sample`.
pub fn busy_processes(
    sample: std::time::Duration,
    threshold_pct: f64,
    me: i32,
) -> Vec<(String, f64)> {
    let a = crate::procs::snapshot();
    std::thread::sleep(sample);
    let b = crate::procs::snapshot();
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get() as u32)
        .unwrap_or(1);
    let roles = crate::procs::Roles {
        own_pid: me,
        ..crate::procs::Roles::this_process()
    };
    crate::procs::figures(
        &crate::procs::consumers(&a, &b),
        sample.as_secs_f64(),
        cpus,
        crate::procs::clk_tck(),
        &roles,
    )
    .into_iter()
    .filter(|t| t.pid != me && t.cpu_pct > threshold_pct)
    .map(|t| (format!("{} (pid {})", t.comm, t.pid), t.cpu_pct))
    .collect()
}

/// Every interface's byte and packet counters in the calling thread's
/// network namespace (`/proc/thread-self/net/dev`: a thread that entered a
/// lab host's namespace sees that host's interfaces).
pub fn iface_counters() -> Vec<iotoll_model::IfaceFigures> {
    let text = std::fs::read_to_string("/proc/thread-self/net/dev")
        .or_else(|_| std::fs::read_to_string("/proc/net/dev"))
        .unwrap_or_default();
    parse_net_dev(&text)
}

fn parse_net_dev(text: &str) -> Vec<iotoll_model::IfaceFigures> {
    text.lines()
        .filter_map(|l| {
            let (name, rest) = l.split_once(':')?;
            let f: Vec<u64> = rest
                .split_whitespace()
                .map(|x| x.parse().ok())
                .collect::<Option<_>>()?;
            // rx: bytes packets errs drop fifo frame compressed multicast; then tx.
            (f.len() >= 16).then(|| iotoll_model::IfaceFigures {
                name: name.trim().to_string(),
                rx_bytes: f[0],
                rx_packets: f[1],
                tx_bytes: f[8],
                tx_packets: f[9],
                ..Default::default()
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_record() {
        let h = host("0.1.0", Some("abc"));
        assert!(h.cpu.threads >= 1);
        assert!(h.memory.total_bytes.unwrap() > 0);
        assert!(h.interfaces.iter().any(|i| i.name == "lo"));
        assert_eq!(h.iotoll.commit.as_deref(), Some("abc"));
        assert!(h.os.kernel.starts_with("Linux"));
    }

    #[test]
    fn warnings_read_the_record() {
        let mut h = Host::default();
        h.cpu.governor = Some("powersave".into());
        h.memory.swap_used_bytes = Some(4096);
        let w = warnings(
            &h,
            Some(Path::new("/dev/shm/x")),
            PeerPlace::Loopback,
            &[("hog (pid 1)".into(), 42.0)],
        );
        assert_eq!(w.len(), 5, "{w:?}");
        assert!(w[0].contains("powersave") && w[1].contains("hog") && w[2].contains("swap"));
        assert!(w[3].contains("tmpfs") && w[4].contains("loopback"));
        h.cpu.governor = Some("performance".into());
        h.memory.swap_used_bytes = None;
        let lab = warnings(&h, None, PeerPlace::Lab, &[]);
        assert!(
            lab.len() == 1 && lab[0].contains("veth") && !lab[0].contains("loopback"),
            "{lab:?}"
        );
        assert!(warnings(&h, None, PeerPlace::Remote, &[]).is_empty());
    }

    #[test]
    fn loopback_is_found_and_described() {
        let d = network("127.0.0.1".parse().unwrap());
        assert_eq!(d.interface.name.as_deref(), Some("lo"));
        let mapped = interface_of("::ffff:127.0.0.1".parse().unwrap());
        assert_eq!(mapped.as_deref(), Some("lo"), "IPv4-mapped is IPv4");
        // And shown as IPv4 (a tester saw ::ffff:127.0.0.1).
        let d6 = network("::ffff:127.0.0.1".parse().unwrap());
        assert_eq!(d6.interface.address, "127.0.0.1");
        let link = d.interface.link.expect("lo is described");
        assert!(link.mtu.unwrap() >= 1500);
        assert!(d.tcp["tcp_rmem"].is_some());
        assert!(d.tcp["tcp_max_syn_backlog"].is_some());
        assert!(link.offloads.unwrap().gso.is_some());
        // Loopback has no interrupts to coalesce: absent, not an error.
        assert_eq!(link.coalescing, None);
        assert_eq!(d.identity, Some(identity()));
    }

    #[test]
    fn loopback_and_missing_interfaces_have_no_driver_info() {
        // lo's ethtool ops have no get_drvinfo: the ioctl fails, and that is
        // "not reported", not an error.
        assert_eq!(driver_info("lo"), None);
        let d = network("127.0.0.1".parse().unwrap())
            .interface
            .link
            .unwrap();
        assert!(d.driver.is_none() && d.driver_version.is_none(), "{d:?}");
        assert!(d.bus_info.is_none(), "{d:?}");
        assert_eq!(driver_info("no-such-if0"), None);
        assert_eq!(driver_info(""), None);
        assert_eq!(driver_info("a-name-longer-than-ifnamsiz"), None);
    }

    #[test]
    fn c_fields() {
        assert_eq!(c_field(b"veth\0\0\0"), Some("veth".into()));
        assert_eq!(c_field(b"N/A\0"), None);
        assert_eq!(c_field(b"\0junk"), None);
        assert_eq!(c_field(b"full"), Some("full".into()));
    }

    /// A veth pair in a namespace of our own: veth has no sysfs
    /// `device/driver` link, so only the ethtool ioctl names its driver.
    #[test]
    fn veth_driver_comes_from_ethtool() {
        use std::process::Command;
        if !nix::unistd::geteuid().is_root() {
            assert!(std::env::var_os("CI").is_none(), "CI runs as root");
            eprintln!("skipped: creating a network namespace needs root");
            return;
        }
        let ns = format!("disclosure-probe-{}", std::process::id());
        let ip = |args: &[&str]| {
            Command::new("ip")
                .args(args)
                .status()
                .is_ok_and(|s| s.success())
        };
        if !ip(&["netns", "add", &ns]) {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI has ip(8) and namespaces"
            );
            eprintln!("skipped: `ip netns add` failed (no ip(8) or no namespace support)");
            return;
        }
        struct Cleanup(String);
        impl Drop for Cleanup {
            fn drop(&mut self) {
                let _ = std::process::Command::new("ip")
                    .args(["netns", "del", &self.0])
                    .status();
            }
        }
        let _cleanup = Cleanup(ns.clone());
        assert!(ip(&[
            "-n", &ns, "link", "add", "dv0", "type", "veth", "peer", "name", "dv1"
        ]));
        let path = format!("/run/netns/{ns}");
        // setns(CLONE_NEWNET) moves only the calling thread: do it in one.
        let (info, iface) = std::thread::spawn(move || {
            let f = std::fs::File::open(&path).unwrap();
            let netns = nix::sched::CloneFlags::CLONE_NEWNET;
            nix::sched::setns(f, netns).unwrap_or_else(|e| panic!("setns: {e}"));
            (driver_info("dv0"), link("dv0"))
        })
        .join()
        .unwrap();
        let info = info.expect("veth answers ETHTOOL_GDRVINFO");
        assert_eq!(info.driver.as_deref(), Some("veth"));
        assert!(info.version.is_some(), "{info:?}");
        // sysfs here is our mount namespace's (no dv0 in it): the driver
        // can only have come from the ioctl in the veth's namespace.
        assert_eq!(iface.driver.as_deref(), Some("veth"), "{iface:?}");
        assert_eq!(iface.driver_version, info.version);
    }

    #[test]
    fn parses_proc_net_dev() {
        let t = "Inter-|   Receive                                                |  Transmit\n face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n    lo: 1000      10    0    0    0     0          0         0     2000      20    0    0    0     0       0          0\n  eth0: 5 1 0 0 0 0 0 0 7 1 0 0 0 0 0 0\n";
        let got = parse_net_dev(t);
        let brief: Vec<_> = (got.iter())
            .map(|i| {
                (
                    i.name.as_str(),
                    i.rx_bytes,
                    i.rx_packets,
                    i.tx_bytes,
                    i.tx_packets,
                )
            })
            .collect();
        assert_eq!(
            brief,
            vec![("lo", 1000, 10, 2000, 20), ("eth0", 5, 1, 7, 1)]
        );
        assert!(!iface_counters().is_empty());
    }
}
