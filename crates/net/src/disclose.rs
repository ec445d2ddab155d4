//! Disclosure for a network run: the interface that carries the traffic
//! (MTU, speed, driver, offloads) and the TCP sysctls that matter.

use serde_json::{json, Value};
use std::ffi::CStr;
use std::net::IpAddr;
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
];

fn read_trim(p: impl AsRef<Path>) -> Option<String> {
    std::fs::read_to_string(p)
        .ok()
        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// Name of the local interface that holds `ip`.
pub fn interface_of(ip: IpAddr) -> Option<String> {
    let ip = match ip {
        IpAddr::V6(v6) => v6
            .to_ipv4_mapped()
            .map(IpAddr::V4)
            .unwrap_or(IpAddr::V6(v6)),
        v4 => v4,
    };
    let mut found = None;
    // SAFETY: getifaddrs allocates a list we walk read-only and free once.
    unsafe {
        let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
        if libc::getifaddrs(&mut head) != 0 {
            return None;
        }
        let mut cur = head;
        while !cur.is_null() {
            let ifa = &*cur;
            if !ifa.ifa_addr.is_null() {
                let fam = (*ifa.ifa_addr).sa_family as i32;
                let addr = if fam == libc::AF_INET {
                    let sa = &*(ifa.ifa_addr as *const libc::sockaddr_in);
                    Some(IpAddr::from(u32::from_be(sa.sin_addr.s_addr).to_be_bytes()))
                } else if fam == libc::AF_INET6 {
                    let sa = &*(ifa.ifa_addr as *const libc::sockaddr_in6);
                    Some(IpAddr::from(sa.sin6_addr.s6_addr))
                } else {
                    None
                };
                if addr == Some(ip) {
                    found = Some(CStr::from_ptr(ifa.ifa_name).to_string_lossy().into_owned());
                    break;
                }
            }
            cur = ifa.ifa_next;
        }
        libc::freeifaddrs(head);
    }
    found
}

const SIOCETHTOOL: libc::c_ulong = 0x8946;

#[repr(C)]
struct EthtoolValue {
    cmd: u32,
    data: u32,
}

#[repr(C)]
struct IfReq {
    name: [libc::c_char; libc::IFNAMSIZ],
    data: *mut EthtoolValue,
    _pad: [u8; 16],
}

/// One legacy ethtool get-value command (the kernel answers these from the
/// device's feature flags, for every driver including lo and veth).
fn ethtool_get(sock: i32, ifname: &str, cmd: u32) -> Option<u32> {
    let mut v = EthtoolValue { cmd, data: 0 };
    let mut req = IfReq {
        name: [0; libc::IFNAMSIZ],
        data: &mut v,
        _pad: [0; 16],
    };
    for (d, s) in req
        .name
        .iter_mut()
        .zip(ifname.bytes().take(libc::IFNAMSIZ - 1))
    {
        *d = s as libc::c_char;
    }
    // SAFETY: SIOCETHTOOL reads the name and writes one EthtoolValue.
    let rc = unsafe { libc::ioctl(sock, SIOCETHTOOL as _, &mut req) };
    (rc == 0).then_some(v.data)
}

fn offloads(ifname: &str) -> Value {
    // SAFETY: a throwaway datagram socket for ioctls.
    let sock = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0) };
    if sock < 0 {
        return Value::Null;
    }
    const GRXCSUM: u32 = 0x14;
    const GTXCSUM: u32 = 0x16;
    const GTSO: u32 = 0x1e;
    const GGSO: u32 = 0x23;
    const GFLAGS: u32 = 0x25;
    const GGRO: u32 = 0x2b;
    const FLAG_LRO: u32 = 1 << 15;
    let b = |cmd| ethtool_get(sock, ifname, cmd).map(|v| v != 0);
    let v = json!({
        "tso": b(GTSO),
        "gso": b(GGSO),
        "gro": b(GGRO),
        "lro": ethtool_get(sock, ifname, GFLAGS).map(|f| f & FLAG_LRO != 0),
        "rx_checksum": b(GRXCSUM),
        "tx_checksum": b(GTXCSUM),
    });
    // SAFETY: closing the socket we opened.
    unsafe { libc::close(sock) };
    v
}

/// Everything about the path through `local_ip` that affects results.
pub fn network(local_ip: IpAddr) -> Value {
    let iface = interface_of(local_ip);
    let sysfs = |name: &str, f: &str| read_trim(format!("/sys/class/net/{name}/{f}"));
    let iface_json = match &iface {
        Some(name) => {
            let speed = sysfs(name, "speed")
                .and_then(|s| s.parse::<i64>().ok())
                .filter(|s| *s > 0);
            let driver = std::fs::read_link(format!("/sys/class/net/{name}/device/driver"))
                .ok()
                .and_then(|p| p.file_name().map(|f| f.to_string_lossy().into_owned()));
            json!({
                "name": name,
                "address": local_ip.to_string(),
                "mtu": sysfs(name, "mtu").and_then(|s| s.parse::<u64>().ok()),
                "speed_mbit": speed,
                "driver": driver,
                "offloads": offloads(name),
            })
        }
        None => json!({ "name": null, "address": local_ip.to_string() }),
    };
    let tcp: serde_json::Map<String, Value> = TCP_SYSCTLS
        .iter()
        .map(|k| {
            let short = k.rsplit('/').next().unwrap_or(k).to_string();
            (
                short,
                read_trim(format!("/proc/sys/{k}")).map_or(Value::Null, Value::String),
            )
        })
        .collect();
    json!({ "interface": iface_json, "tcp": tcp })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_found_and_described() {
        let d = network("127.0.0.1".parse().unwrap());
        assert_eq!(d["interface"]["name"], "lo");
        assert!(d["interface"]["mtu"].as_u64().unwrap() >= 1500);
        assert!(d["tcp"]["tcp_rmem"].is_string());
        assert!(d["interface"]["offloads"]["gso"].is_boolean(), "{d}");
    }
}
