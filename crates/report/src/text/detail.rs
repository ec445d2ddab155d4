//! Under the table after a run: a disk run's per-target, per-worker and
//! per-line figures, its iSCSI sessions and interrupts; a network run's
//! path (interfaces, TCP settings, TLS).

use super::or_dash;
use crate::tables::{to_text, TRow, Table};
use iotoll_model::metrics as mn;
use iotoll_model::spec::{NetDisclosure, NetSide, TlsDisclosure};
use iotoll_model::text::printable;
use iotoll_model::units::format_number as num;
use iotoll_model::{format_size, Metrics, ResultDoc};
use iotoll_probe::affinity::format_cpu_list;
use std::fmt::Write;

/// The figures every breakdown row has, after its leading cells and before
/// its trailing ones.
const FIGURES: [&str; 5] = ["IOPS", "MB/s", "mean us", "p99 us", "errors"];
const FIGURE_KEYS: [&str; 5] = [
    mn::IOPS,
    mn::MB_S,
    mn::LAT_MEAN_US,
    mn::LAT_P99_US,
    mn::ERRORS,
];

fn figures_row(lead: String, m: &Metrics, rest: Vec<String>) -> TRow {
    let mut cells = vec![lead];
    cells.extend(FIGURE_KEYS.iter().map(|k| or_dash(m.get(*k).copied())));
    cells.extend(rest);
    TRow::new(cells)
}

fn ids(v: &[u32]) -> String {
    v.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

/// The per-target, per-worker and per-line figures of a disk run, where
/// there is more than one of them (or the workers were pinned).
pub(super) fn breakdown(o: &mut String, doc: &ResultDoc) {
    if doc.targets.len() > 1 {
        let mut t = Table::new(
            "per target:",
            &[&["target"][..], &FIGURES, &["workers"]].concat(),
        );
        for x in &doc.targets {
            (t.rows).push(figures_row(
                x.target.clone(),
                &x.metrics,
                vec![ids(&x.workers)],
            ));
        }
        let _ = write!(o, "\n{}", to_text(&t, "", "lrrrrrl"));
    }
    let pinned = doc.workers.iter().any(|w| w.pinned.is_some());
    if doc.workers.len() > 1 || pinned {
        let rest = ["targets", "pinned to (busy %)", "ran on"];
        let mut t = Table::new("per worker:", &[&["worker"][..], &FIGURES, &rest].concat());
        for w in &doc.workers {
            let pin = w.pinned.map_or("-".into(), |c| {
                format!("CPU {c} ({})", or_dash(w.pinned_busy_pct))
            });
            let rest = vec![ids(&w.targets), pin, format_cpu_list(&w.ran_on)];
            t.rows.push(figures_row(w.id.to_string(), &w.metrics, rest));
        }
        let _ = write!(o, "\n{}", to_text(&t, "", "lrrrrrl"));
    }
    if doc.lines.len() > 1 {
        let head = ["line", "size", "asked %", "I/Os %", "I/Os", "bytes %"];
        let mut t = Table::new("per line:", &head);
        for l in &doc.lines {
            let cells = vec![
                (l.line + 1).to_string(),
                format_size(l.bs),
                l.share_pct.to_string(),
                format!("{:.2}", l.ios_pct),
                num(l.ios as f64),
                format!("{:.2}", l.bytes_pct),
            ];
            t.rows.push(TRow::new(cells));
        }
        let _ = write!(o, "\n{}", to_text(&t, "", "llr"));
    }
}

/// iSCSI sessions, and where the interrupts of the devices and NICs
/// involved go.
pub(super) fn iscsi_and_irqs(o: &mut String, doc: &ResultDoc) {
    let Some(d) = doc.disk_disclosure() else {
        return;
    };
    for i in &d.iscsi {
        let get = |k: &str| i.negotiated.get(k).map_or("?", String::as_str);
        let _ = writeln!(
            o,
            "\niscsi {} LUN {} at {}: {} {} {}, {} blocks of {} bytes\n  auth {}, digests header {} data {}, MaxRecvDataSegmentLength {} (target's {}), FirstBurstLength {}, MaxBurstLength {}, ImmediateData {}, InitialR2T {}",
            printable(&i.target),
            i.lun,
            printable(&i.portal),
            // INQUIRY's strings are the target's word.
            printable(&i.vendor),
            printable(&i.product),
            printable(&i.revision),
            i.capacity_bytes / u64::from(i.block_size.max(1)),
            i.block_size,
            i.auth,
            i.header_digest,
            i.data_digest,
            get("MaxRecvDataSegmentLength"),
            get("TargetMaxRecvDataSegmentLength"),
            get("FirstBurstLength"),
            get("MaxBurstLength"),
            get("ImmediateData"),
            get("InitialR2T"),
        );
    }
    if d.devices.is_empty() && d.irqs.is_empty() {
        return;
    }
    let devices = match d.devices.is_empty() {
        true => "none local".to_string(),
        false => d.devices.join(", "),
    };
    let mut t = Table::new(&format!("devices: {devices}"), &[]);
    for i in &d.irqs {
        let affinity = format!("affinity {}", i.affinity.as_deref().unwrap_or("?"));
        let cells = vec![format!("irq {}", i.irq), i.name.clone(), affinity];
        t.rows.push(TRow::new(cells));
    }
    let _ = write!(o, "\n{}", to_text(&t, "", "l"));
}

/// A network run's path: each side's interface and TCP settings, and TLS.
pub(super) fn network_path(o: &mut String, doc: &ResultDoc) {
    let Some(d) = doc.net_disclosure() else {
        return;
    };
    let remote = d.remote_side();
    let lo = |s: &NetSide| address(&s.interface.address).is_some_and(|ip| ip.is_loopback());
    if lo(&d.local) && remote.as_ref().is_none_or(lo) {
        // An interface line of loopback says nothing (no link, speed or
        // driver): a tester read it as an empty path.
        let _ = writeln!(
            o,
            "\nnetwork path: loopback (host-internal copying, no NIC)"
        );
        let _ = writeln!(o, "  {:<12} {}", "tcp:", tcp_line(&d.local));
    } else {
        let _ = writeln!(o, "\nnetwork path:");
        sides(o, d, remote.as_ref());
    }
    if let Some(t) = &d.tls {
        let _ = writeln!(o, "  {:<12} {}", "tls:", tls_summary(t));
        let _ = writeln!(o, "  {:<12} {}", "", t.implementation);
    }
}

/// An interface's address as users write it: an IPv4-mapped IPv6 address
/// (`::ffff:10.0.0.2`, what a dual-stack listener saw) in its IPv4 form.
fn address(a: &str) -> Option<std::net::IpAddr> {
    a.parse::<std::net::IpAddr>()
        .ok()
        .map(|ip| ip.to_canonical())
}

fn tcp_line(s: &NetSide) -> String {
    let t = |k: &str| s.tcp.get(k).cloned().flatten().unwrap_or("?".into());
    format!(
        "{} rmem {} wmem {}",
        t("tcp_congestion_control"),
        t("tcp_rmem"),
        t("tcp_wmem")
    )
}

fn sides(o: &mut String, d: &NetDisclosure, remote: Option<&NetSide>) {
    for (side, s) in [("local", Some(&d.local)), ("remote", remote)] {
        let Some(s) = s else { continue };
        let i = &s.interface;
        let link = i.link.clone().unwrap_or_default();
        let offs: Vec<String> = (link.offloads.map(|f| f.flags()).into_iter().flatten())
            .filter_map(|(k, on)| on.map(|on| if on { k.to_string() } else { format!("-{k}") }))
            .collect();
        let _ = writeln!(
            o,
            "  {:<12} {} {}  mtu {}  speed {}  driver {}  [{}]  {}",
            side,
            i.name.as_deref().unwrap_or("?"),
            address(&i.address).map_or(i.address.clone(), |ip| ip.to_string()),
            link.mtu.map_or("null".into(), |m| m.to_string()),
            (link.speed_mbit).map_or("-".into(), |v| format!("{v} Mbit/s")),
            link.driver.as_deref().unwrap_or("-"),
            offs.join(" "),
            tcp_line(s),
        );
    }
}

/// What the TLS handshakes agreed on, in one line: enough to tell a TLS
/// run from a cleartext one, and an AES suite's result on a CPU without
/// AES instructions from one with them.
pub fn tls_summary(t: &TlsDisclosure) -> String {
    format!(
        "{} {}, key exchange {}, handshakes {} ms, CPU AES {}",
        t.protocol,
        t.cipher_suite,
        t.key_exchange.as_deref().unwrap_or("?"),
        num(t.handshake_s * 1e3),
        match t.cpu_aes {
            Some(true) => "yes",
            Some(false) => "no",
            None => "unknown",
        }
    )
}
