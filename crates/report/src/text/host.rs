//! `iotoll sysinfo`: this host's disclosure, as every run stores it.

use iotoll_probe::sysinfo::{Host, HostInterface};
use std::fmt::Write;

/// A disclosed value as JSON writes it (2300.0, not 2300), "-" for what
/// could not be read.
fn s<T: serde::Serialize>(v: &T) -> String {
    match iotoll_model::spec::to_json(v) {
        serde_json::Value::String(s) => s,
        serde_json::Value::Null => "-".into(),
        other => other.to_string(),
    }
}

/// Bytes in GiB, one decimal.
fn gib(v: Option<u64>) -> String {
    s(&v.map(|b| format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64)))
}

/// The host's disclosure, a line a part (CPU, caches, memory, each adapter,
/// each block device, each TCP setting).
pub fn host(h: &Host) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "host         {}", h.host);
    let _ = writeln!(
        o,
        "iotoll       {} ({})",
        h.iotoll.version,
        s(&h.iotoll.commit)
    );
    let _ = writeln!(
        o,
        "os           {} {} ({})",
        h.os.kernel,
        h.os.arch,
        s(&h.os.distribution)
    );
    let c = &h.cpu;
    let _ = writeln!(o,
        "cpu          {}  {} socket(s), {} core(s), {} thread(s)  nominal {} MHz ({})  current {} MHz  governor {}  smt {}",
        s(&c.model), c.sockets, c.cores, c.threads, s(&c.nominal_mhz),
        s(&c.nominal_mhz_source), s(&c.current_mhz), s(&c.governor), s(&c.smt)
    );
    let caches: Vec<String> = c
        .caches
        .iter()
        .map(|x| format!("L{} {} {}", x.level, s(&x.kind), s(&x.size)))
        .collect();
    let _ = writeln!(o, "caches       {}", caches.join(", "));
    let m = &h.memory;
    let _ = writeln!(
        o,
        "memory       {}  swap {} (used {})",
        gib(m.total_bytes),
        gib(m.swap_total_bytes),
        gib(m.swap_used_bytes)
    );
    interfaces(&mut o, &h.interfaces);
    for b in &h.block_devices {
        let _ = writeln!(
            o,
            "block        {:<10} {:<20} {} rotational {} scheduler {} queue depth {}",
            b.name,
            s(&b.model),
            gib(b.size_bytes),
            s(&b.rotational),
            s(&b.scheduler),
            s(&b.queue_depth)
        );
    }
    for (k, v) in &h.tcp {
        let _ = writeln!(o, "tcp          {k} = {}", s(v));
    }
    o
}

/// A line an adapter: MTU, speed, driver, the offloads on, interrupt
/// coalescing where the driver has it, addresses.
fn interfaces(o: &mut String, all: &[HostInterface]) {
    for i in all {
        let l = &i.link;
        let mut offs: Vec<&str> = l
            .offloads
            .iter()
            .flat_map(|o| o.flags())
            .filter_map(|(k, on)| (on == Some(true)).then_some(k))
            .collect();
        offs.sort_unstable();
        let adaptive = |a: bool| if a { " adaptive" } else { "" };
        let coal = l.coalescing.as_ref().map_or(String::new(), |c| {
            format!(
                " coalesce rx {}us/{}{} tx {}us/{}{}",
                c.rx_usecs,
                c.rx_frames,
                adaptive(c.adaptive_rx),
                c.tx_usecs,
                c.tx_frames,
                adaptive(c.adaptive_tx)
            )
        });
        let _ = writeln!(
            o,
            "interface    {:<10} mtu {:<6} speed {:<6} driver {:<10} [{}]{coal} {}",
            i.name,
            s(&l.mtu),
            s(&l.speed_mbit),
            s(&l.driver),
            offs.join(" "),
            i.addresses.join(" ")
        );
    }
}
