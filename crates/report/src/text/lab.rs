//! `lab list`, `lab up` and `lab status`: the built-in labs, the labs that
//! are up, and one lab's hosts and links.

use iotoll_lab::LabState;
use std::fmt::Write;

/// The built-in labs, a line each.
pub fn builtins() -> String {
    let mut o = String::from("built-in labs:\n");
    for n in iotoll_lab::builtin_names() {
        let about = iotoll_lab::builtin_description(n).unwrap_or_default();
        let _ = writeln!(o, "  {n:<10} {about}");
    }
    o
}

/// The labs that are up, a line each.
pub fn running(up: &[LabState]) -> String {
    if up.is_empty() {
        return "labs up: none\n".into();
    }
    let mut o = String::from("labs up:\n");
    for s in up {
        let _ = writeln!(
            o,
            "  {:<10} {} hosts  {}  from {}{}",
            s.name,
            s.hosts.len(),
            s.subnet,
            s.source,
            if s.complete { "" } else { "  (incomplete)" }
        );
    }
    o
}

/// A lab that is up: its source and subnet, then each host with its TCP
/// settings and each of its links (address, MTU, shaping, offloads).
pub fn state(st: &LabState) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "lab {}  from {}{}  subnet {}  switch netns {}{}",
        st.name,
        st.source,
        joined(" --set ", &st.sets, " --set "),
        st.subnet,
        st.switch,
        if st.complete {
            ""
        } else {
            "  INCOMPLETE (its `up` did not finish: `lab down` it)"
        }
    );
    for h in &st.hosts {
        let mut tcp = Vec::new();
        if let Some(c) = &h.tcp.congestion_control {
            tcp.push(format!("cc {c}"));
        }
        if let Some(m) = &h.tcp.tcp_rmem {
            tcp.push(format!("rmem {m}"));
        }
        if let Some(m) = &h.tcp.tcp_wmem {
            tcp.push(format!("wmem {m}"));
        }
        tcp.extend(h.sysctl.iter().map(|(k, v)| format!("{k}={v}")));
        if let Some(c) = &h.cpus {
            tcp.push(format!(
                "cpus {} ({})",
                iotoll_lab::cpus::format_list(c),
                h.confinement.as_deref().unwrap_or("not yet confined")
            ));
        }
        let _ = writeln!(
            o,
            "  {:<10} netns {}{}",
            h.name,
            h.netns,
            joined("  ", &tcp, ", ")
        );
        for l in &h.links {
            let off: Vec<String> = l
                .offloads
                .list()
                .iter()
                .map(|(n, on)| format!("{n} {}", if *on { "on" } else { "off" }))
                .collect();
            let _ = writeln!(
                o,
                "    {:<5} {:<16} mtu {:<5} {}{}",
                l.ifname,
                format!("{}/{}", l.address, l.prefix_len),
                l.mtu,
                match (&l.rate, &l.shaper) {
                    (Some(r), Some(s)) => format!("{r} ({s})"),
                    _ => "unshaped".into(),
                },
                joined("  ", &off, ", ")
            );
        }
    }
    for n in &st.cpu_notes {
        let _ = writeln!(o, "  note: {n}");
    }
    o
}

/// `items` joined by `sep` after `lead`; nothing when there are none.
fn joined(lead: &str, items: &[String], sep: &str) -> String {
    match items.is_empty() {
        true => String::new(),
        false => format!("{lead}{}", items.join(sep)),
    }
}
