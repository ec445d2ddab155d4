//! The first lines of the table after a run: what ran, from the spec of
//! its kind.

use iotoll_model::spec::{DiskSpec, NetSpec};
use iotoll_model::{format_size, Kind, ResultDoc};
use iotoll_probe::affinity::format_cpu_list;
use std::fmt::Write;

/// What ran; None when the document's spec is not its kind's.
pub(super) fn lines(doc: &ResultDoc) -> Option<String> {
    Some(match doc.kind {
        Kind::Disk => disk(doc.spec.disk()?),
        Kind::NetStream => {
            let s = doc.spec.stream()?;
            let what = format!(
                "stream {}  msg {}  sockbuf {}{}",
                s.dir,
                format_size(s.msg),
                s.net.sockbuf.map(format_size).unwrap_or("auto".into()),
                if s.net.nodelay { "  nodelay" } else { "" }
            );
            net(doc.kind, &s.net, what)
        }
        Kind::NetRr => {
            let s = doc.spec.rr()?;
            let what = format!(
                "request/response {} / {}  burst {}",
                format_size(s.req),
                format_size(s.resp),
                s.burst
            );
            net(doc.kind, &s.net, what)
        }
        Kind::NetUdp => {
            let s = doc.spec.udp()?;
            let rate = s.rate.map_or("unlimited".into(), |r| {
                format!("{} bit/s", iotoll_model::format_rate(r))
            });
            let what = format!(
                "UDP {}  datagram {} bytes  rate {rate}  sockbuf {}",
                s.dir,
                s.size,
                s.net.sockbuf.map(format_size).unwrap_or("default".into()),
            );
            net(doc.kind, &s.net, what)
        }
        Kind::NetCrr | Kind::NetCc => {
            let s = doc.spec.crr()?;
            let close = if s.linger0 {
                "reset (linger0)"
            } else {
                "FIN (TIME_WAIT here)"
            };
            let what = match doc.kind {
                Kind::NetCrr => format!(
                    "connect/request/response {} / {}  close by {close}",
                    format_size(s.req),
                    format_size(s.resp)
                ),
                _ => format!("connect/close  close by {close}"),
            };
            net(doc.kind, &s.net, what)
        }
    })
}

fn disk(s: &DiskSpec) -> String {
    let name = s.spec.as_ref().map_or(String::new(), |n| format!("  {n}"));
    let what = match (s.bs, s.read_pct, s.random_pct) {
        (Some(bs), Some(r), Some(x)) => format!("{} {r}% read {x}% random", format_size(bs)),
        _ => format!("{} lines (below)", s.lines.len()),
    };
    let workers = match (s.spread, s.targets.len()) {
        (_, 0 | 1) => format!("{} worker(s)", s.workers),
        (true, _) => format!("{} worker(s) each on every target", s.workers),
        (false, _) => format!("{} worker(s) per target", s.workers),
    };
    let pinned = (s.cpus.as_ref()).map_or(String::new(), |c| {
        format!("  pinned to CPU {}", format_cpu_list(c))
    });
    // A LUN is driven by iotoll's initiator: no page cache to bypass.
    let access = match (s.target_kind.as_str(), s.direct) {
        ("iscsi-lun", _) => "",
        (_, true) => " O_DIRECT",
        (_, false) => " buffered",
    };
    let mut o = format!(
        "disk{name}  {what}  QD {} x {workers}{pinned}  {}{access}",
        s.qd, s.engine,
    );
    let region = format!(
        "region {} at {}",
        format_size(s.size),
        format_size(s.offset)
    );
    if s.targets.len() > 1 {
        let _ = write!(o, "\n{} targets, each {region}", s.targets.len());
    } else {
        let _ = write!(o, "\ntarget {} ({}, {region})", s.target, s.target_kind);
    }
    o
}

fn net(kind: Kind, net: &NetSpec, what: String) -> String {
    let (conns, threads) = match kind {
        // One sending and one receiving thread per end, whatever the flows.
        Kind::NetUdp => ("flow(s)", String::new()),
        // One thread per client.
        Kind::NetCrr | Kind::NetCc => ("client(s)", String::new()),
        _ => ("connection(s)", format!("  {} thread(s)", net.threads)),
    };
    format!(
        "{kind}  {what}  {} {conns}{threads}\npeer {}{}{}",
        net.conns,
        net.peer,
        if net.auth { " (authenticated)" } else { "" },
        net.tls
            .as_ref()
            .map_or(String::new(), |c| format!("  TLS {c}")),
    )
}
