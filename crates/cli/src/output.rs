//! Human and JSON renderings of a result document.

use iotoll_model::metrics as mn;
use iotoll_model::spec::{DiskSpec, NetDisclosure, NetSpec, TlsDisclosure};
use iotoll_model::text::printable;
use iotoll_model::{format_size, Kind, ResultDoc};
use std::fmt::Write;

pub fn print_json<T: serde::Serialize>(v: &T) -> anyhow::Result<()> {
    let mut s = serde_json::to_string_pretty(v)?;
    s.push('\n');
    use std::io::Write as _;
    std::io::stdout().lock().write_all(s.as_bytes())?;
    Ok(())
}

/// Groups digits: 1234567.8 -> "1,234,568" (no decimals at or above 100).
pub fn num(v: f64) -> String {
    iotoll_model::units::format_number(v)
}

fn disk_spec_line(s: &DiskSpec) -> String {
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
    let pinned = s.cpus.as_ref().map_or(String::new(), |c| {
        format!(
            "  pinned to CPU {}",
            iotoll_probe::affinity::format_cpu_list(c)
        )
    });
    let access = match (s.engine.as_str(), s.direct) {
        ("iscsi", _) => "",
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

/// The per-target, per-worker and per-line figures of a disk run, where
/// there is more than one of them (or the workers were pinned).
fn breakdown_lines(o: &mut String, doc: &ResultDoc) {
    let b = doc;
    let row = |o: &mut String, what: &str, extra: &str, m: &iotoll_model::Metrics| {
        let get = |k: &str| m.get(k).copied().map(num).unwrap_or("-".into());
        let _ = writeln!(
            o,
            "  {what:<28} {:>10} {:>9} {:>10} {:>10} {:>6}  {extra}",
            get(mn::IOPS),
            get(mn::MB_S),
            get(mn::LAT_MEAN_US),
            get(mn::LAT_P99_US),
            get(mn::ERRORS),
        );
    };
    let header = |o: &mut String, title: &str, extra: &str| {
        let _ = writeln!(
            o,
            "\n{title:<30} {:>10} {:>9} {:>10} {:>10} {:>6}  {extra}",
            "IOPS", "MB/s", "mean us", "p99 us", "errors"
        );
    };
    if b.targets.len() > 1 {
        header(o, "per target:", "workers");
        for t in &b.targets {
            let w: Vec<String> = t.workers.iter().map(u32::to_string).collect();
            row(o, &t.target, &w.join(","), &t.metrics);
        }
    }
    let pinned = b.workers.iter().any(|w| w.pinned.is_some());
    if b.workers.len() > 1 || pinned {
        header(o, "per worker:", "targets   pinned to (busy %)   ran on");
        for w in &b.workers {
            let t: Vec<String> = w.targets.iter().map(u32::to_string).collect();
            let pin = w.pinned.map_or("-".into(), |c| {
                format!(
                    "CPU {c} ({})",
                    w.pinned_busy_pct.map(num).unwrap_or("-".into())
                )
            });
            let ran = iotoll_probe::affinity::format_cpu_list(&w.ran_on);
            let extra = format!("{:<9} {pin:<20} {ran}", t.join(","));
            row(o, &format!("worker {}", w.id), &extra, &w.metrics);
        }
    }
    if b.lines.len() > 1 {
        let _ = writeln!(
            o,
            "\n{:<30} {:>8} {:>10} {:>12} {:>10}",
            "per line (size):", "asked %", "I/Os %", "I/Os", "bytes %"
        );
        for l in &b.lines {
            let _ = writeln!(
                o,
                "  {:<28} {:>8} {:>10.2} {:>12} {:>10.2}",
                format!("{} {}", l.line + 1, format_size(l.bs)),
                l.share_pct,
                l.ios_pct,
                num(l.ios as f64),
                l.bytes_pct
            );
        }
    }
}

fn d_get<'a>(m: &'a std::collections::BTreeMap<String, String>, k: &str) -> &'a str {
    m.get(k).map_or("?", String::as_str)
}

/// iSCSI sessions, and where the interrupts of the devices and NICs
/// involved go.
fn irq_lines(o: &mut String, doc: &ResultDoc) {
    let Some(d) = doc.disk_disclosure() else {
        return;
    };
    for i in &d.iscsi {
        let get = |k: &str| d_get(&i.negotiated, k);
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
    let _ = writeln!(o, "\ndevices: {devices}");
    for i in &d.irqs {
        let _ = writeln!(
            o,
            "  irq {:<5} {:<24} affinity {}",
            i.irq,
            i.name,
            i.affinity.as_deref().unwrap_or("?")
        );
    }
}

fn net_spec_line(kind: Kind, net: &NetSpec, what: String) -> String {
    format!(
        "{kind}  {what}  {} connection(s)  {} thread(s)\npeer {}{}{}",
        net.conns,
        net.threads,
        net.peer,
        if net.auth { " (authenticated)" } else { "" },
        net.tls
            .as_ref()
            .map_or(String::new(), |c| format!("  TLS {c}")),
    )
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

/// The first lines of the table: what ran, from the spec of its kind.
fn spec_lines(doc: &ResultDoc) -> Option<String> {
    Some(match doc.kind {
        Kind::Disk => disk_spec_line(doc.spec.disk()?),
        Kind::NetStream => {
            let s = doc.spec.stream()?;
            let what = format!(
                "stream {}  msg {}  sockbuf {}{}",
                s.dir,
                format_size(s.msg),
                s.net.sockbuf.map(format_size).unwrap_or("auto".into()),
                if s.net.nodelay { "  nodelay" } else { "" }
            );
            net_spec_line(doc.kind, &s.net, what)
        }
        Kind::NetRr => {
            let s = doc.spec.rr()?;
            let what = format!(
                "request/response {} / {}  burst {}",
                format_size(s.req),
                format_size(s.resp),
                s.burst
            );
            net_spec_line(doc.kind, &s.net, what)
        }
    })
}

fn cpu_line(o: &mut String, label: &str, c: &iotoll_model::CpuReport, with_self: bool) {
    let _ =
        writeln!(
        o,
        "  {:<12} {} % of {} CPUs busy   user {} sys {} irq {} softirq {} steal {}   iowait {}{}",
        label,
        num(c.busy_pct),
        c.cpus,
        num(c.modes.user + c.modes.nice),
        num(c.modes.system),
        num(c.modes.irq),
        num(c.modes.softirq),
        num(c.modes.steal),
        num(c.modes.iowait),
        if with_self {
            format!("   iotoll itself {} %", c.self_pct.map(num).unwrap_or("-".into()))
        } else {
            String::new()
        },
    );
}

/// Whether a consumer is this iotoll or its endpoint.
fn is_own(t: &iotoll_model::TopConsumer) -> bool {
    use iotoll_model::result::{ROLE_ENDPOINT, ROLE_SELF};
    matches!(t.role.as_deref(), Some(ROLE_SELF | ROLE_ENDPOINT))
}

/// `iotoll 9.1 + others 40.2 + kernel threads 1.2 + kernel, no process 3.0
/// = 53.5 % busy`: the window's busy CPU by who used it, parts that were
/// zero left out (iotoll's own and the others' always shown).
pub fn split(a: &iotoll_model::CpuAccount, busy_pct: f64) -> String {
    let parts = [
        ("iotoll", a.self_pct, true),
        ("its endpoint", a.endpoint_pct, false),
        ("the test's other agents", a.agents_pct, false),
        ("system under test", a.sut_pct, false),
        ("others", a.others_pct, true),
        ("kernel threads", a.kernel_threads_pct, false),
        ("kernel, no process", a.kernel_other_pct, false),
        ("steal", a.steal_pct, false),
    ];
    let shown: Vec<String> = (parts.iter())
        .filter(|(_, v, always)| *always || *v >= 0.05)
        .map(|(name, v, _)| format!("{name} {v:.1}"))
        .collect();
    // One decimal throughout, so that a reader's sum matches to rounding.
    format!("{} = {busy_pct:.1} % busy", shown.join(" + "))
}

/// `sh pid 4242 48.1 %`, with `[k]` for a kernel thread and what an iotoll
/// process is to this run: `this iotoll`, `its endpoint`, `another iotoll`.
pub fn consumer(t: &iotoll_model::TopConsumer) -> String {
    use iotoll_model::result::{ROLE_ENDPOINT, ROLE_IOTOLL, ROLE_SELF};
    let role = match t.role.as_deref() {
        Some(ROLE_SELF) => " (this iotoll)",
        Some(ROLE_ENDPOINT) => " (its endpoint)",
        Some(ROLE_IOTOLL) => " (another iotoll)",
        Some(iotoll_model::result::ROLE_SUT) => " (under test)",
        _ => "",
    };
    format!(
        "{} pid {}{}{role} {} %",
        t.comm,
        t.pid,
        if t.kernel_thread { " [k]" } else { "" },
        num(t.cpu_pct)
    )
}

fn disclosure_lines(o: &mut String, d: &NetDisclosure) {
    let remote = d.remote_side();
    for (side, s) in [("local", Some(&d.local)), ("remote", remote.as_ref())] {
        let Some(s) = s else { continue };
        let i = &s.interface;
        let link = i.link.clone().unwrap_or_default();
        let offs: Vec<String> = link
            .offloads
            .map(|f| f.flags())
            .into_iter()
            .flatten()
            .filter_map(|(k, on)| on.map(|on| if on { k.to_string() } else { format!("-{k}") }))
            .collect();
        let t = |k: &str| s.tcp.get(k).cloned().flatten().unwrap_or("?".into());
        let _ = writeln!(
            o,
            "  {:<12} {} {}  mtu {}  speed {}  driver {}  [{}]  {} rmem {} wmem {}",
            side,
            i.name.as_deref().unwrap_or("?"),
            i.address,
            link.mtu.map_or("null".into(), |m| m.to_string()),
            link.speed_mbit
                .map_or("-".into(), |v| format!("{v} Mbit/s")),
            link.driver.as_deref().unwrap_or("-"),
            offs.join(" "),
            t("tcp_congestion_control"),
            t("tcp_rmem"),
            t("tcp_wmem"),
        );
    }
}

/// One labelled line of the metrics present among `keys`.
fn value_line(o: &mut String, title: &str, keys: &[(&str, &str)], m: &iotoll_model::Metrics) {
    let mut l = format!("  {title:<12}");
    for (label, k) in keys {
        if let Some(v) = m.get(*k) {
            let _ = write!(l, " {label} {}", num(*v));
        }
    }
    let _ = writeln!(o, "{l}");
}

/// The compact table printed after a run.
pub fn human(doc: &ResultDoc) -> String {
    let m = &doc.metrics;
    let get = |k: &str| m.get(k).copied();
    let mut o = String::new();
    let header = spec_lines(doc).unwrap_or_else(|| doc.kind.to_string());
    let _ = writeln!(o, "{header}");
    let _ = write!(
        o,
        "window {} s  {}",
        get(mn::WINDOW_S).map_or("-".into(), |v| format!("{v:.2}")),
        doc.status
    );
    if let Some(c) = &doc.config {
        let _ = write!(o, "  config {c}");
    }
    let _ = writeln!(o, "\n");

    if let Some(iops) = get(mn::IOPS) {
        let _ = writeln!(
            o,
            "  {:<12} {} IOPS (read {}, write {})   {} MB/s ({} MiB/s)   errors {}",
            "throughput",
            num(iops),
            num(get(mn::READ_IOPS).unwrap_or(f64::NAN)),
            num(get(mn::WRITE_IOPS).unwrap_or(f64::NAN)),
            num(get(mn::MB_S).unwrap_or(f64::NAN)),
            num(get(mn::MIB_S).unwrap_or(f64::NAN)),
            num(get(mn::ERRORS).unwrap_or(0.0)),
        );
    }
    if let Some(mbit) = get(mn::MBIT_S) {
        let mut l = format!("  {:<12} {} Mbit/s", "goodput", num(mbit));
        if let (Some(tx), Some(rx)) = (get(mn::TX_MBIT_S), get(mn::RX_MBIT_S)) {
            let _ = write!(l, " (tx {}, rx {})", num(tx), num(rx));
        }
        if let (Some(lo), Some(hi)) = (get(mn::CONN_MBIT_S_MIN), get(mn::CONN_MBIT_S_MAX)) {
            let _ = write!(l, "   per connection {} to {}", num(lo), num(hi));
        }
        if let Some(f) = get(mn::FAIRNESS) {
            let _ = write!(l, "   fairness {f:.3}");
        }
        let _ = writeln!(o, "{l}");
        let _ = writeln!(
            o,
            "  {:<12} {} retransmits   srtt {} us   connections up in {} s   errors {}",
            "tcp",
            num(get(mn::RETRANSMITS).unwrap_or(f64::NAN)),
            get(mn::SRTT_US).map(num).unwrap_or("-".into()),
            get(mn::CONNECT_S).map_or("-".into(), |v| format!("{v:.3}")),
            num(get(mn::ERRORS).unwrap_or(0.0)),
        );
    }
    if let Some(t) = get(mn::TRANS_S) {
        let _ = writeln!(
            o,
            "  {:<12} {} transactions/s   one-way latency {} us   errors {}",
            "rr",
            num(t),
            get(mn::LATENCY_ONE_WAY_US).map(num).unwrap_or("-".into()),
            num(get(mn::ERRORS).unwrap_or(0.0)),
        );
        value_line(
            &mut o,
            "rtt us",
            &[
                ("mean", mn::RTT_MEAN_US),
                ("p50", mn::RTT_P50_US),
                ("p90", mn::RTT_P90_US),
                ("p99", mn::RTT_P99_US),
                ("p99.9", mn::RTT_P999_US),
                ("max", mn::RTT_MAX_US),
            ],
            m,
        );
    }
    if get(mn::LAT_MEAN_US).is_some() {
        value_line(
            &mut o,
            "latency us",
            &[
                ("mean", mn::LAT_MEAN_US),
                ("min", mn::LAT_MIN_US),
                ("p50", mn::LAT_P50_US),
                ("p90", mn::LAT_P90_US),
                ("p99", mn::LAT_P99_US),
                ("p99.9", mn::LAT_P999_US),
                ("p99.99", mn::LAT_P9999_US),
                ("max", mn::LAT_MAX_US),
            ],
            m,
        );
    }
    if let Some(qd) = get(mn::QD_ACHIEVED) {
        queue_line(&mut o, doc, qd);
    }
    match &doc.cpu.local {
        Some(c) => {
            // With the split, iotoll's own figure is one of its parts.
            cpu_line(&mut o, "cpu", c, c.account.is_none());
            if c.interrupts_s.is_some() || c.ctx_switches_s.is_some() {
                let _ = writeln!(
                    o,
                    "  {:<12} {} interrupts/s   {} context switches/s",
                    "",
                    c.interrupts_s.map(num).unwrap_or("-".into()),
                    c.ctx_switches_s.map(num).unwrap_or("-".into()),
                );
            }
            if let Some(a) = &c.account {
                let _ = writeln!(o, "  {:<12} {}", "cpu split", split(a, c.busy_pct));
            }
            // iotoll and its endpoint are parts of the split already:
            // each figure is printed once.
            let tops: Vec<String> = (c.top.iter())
                .filter(|t| c.account.is_none() || !is_own(t))
                .map(consumer)
                .collect();
            if !tops.is_empty() {
                let _ = writeln!(o, "  {:<12} {}", "top cpu", tops.join(", "));
            }
            if let Some(i) = &c.interference {
                let _ = match c.account {
                    Some(_) => writeln!(
                        o,
                        "  {:<12} others + steal {} the {} % threshold{}",
                        "interference",
                        if i.interfered { "above" } else { "within" },
                        num(i.threshold_pct),
                        if i.interfered { "  INTERFERED" } else { "" }
                    ),
                    None => writeln!(
                        o,
                        "  {:<12} {} % of the host by other processes (threshold {} %){}",
                        "others",
                        num(i.others_pct),
                        num(i.threshold_pct),
                        if i.interfered { "  INTERFERED" } else { "" }
                    ),
                };
            }
        }
        None => {
            let _ = writeln!(o, "  {:<12} not measured (see notes)", "cpu");
        }
    }
    if let Some(c) = &doc.cpu.remote {
        cpu_line(&mut o, "remote cpu", c, false);
    }
    let mut eff = Vec::new();
    for (k, unit) in [
        (mn::IOPS_PER_CPU_PCT, "IOPS per % CPU"),
        (mn::MB_S_PER_CPU_PCT, "MB/s per % CPU"),
        (mn::CPU_US_PER_IO, "CPU us per I/O"),
        (mn::CYCLES_PER_IO, "cycles per I/O"),
        (mn::MBIT_S_PER_CPU_PCT, "Mbit/s per % CPU (P/E)"),
        (mn::REMOTE_MBIT_S_PER_CPU_PCT, "Mbit/s per % remote CPU"),
        (mn::CPU_US_PER_KB, "CPU us per KB"),
        (mn::CYCLES_PER_BYTE, "cycles per byte"),
        (mn::CPU_US_PER_TRANS, "CPU us per transaction"),
    ] {
        if doc.kind == Kind::NetRr && (k == mn::CPU_US_PER_KB || k == mn::CYCLES_PER_BYTE) {
            continue;
        }
        if let Some(v) = get(k) {
            eff.push(format!("{} {unit}", num(v)));
        }
    }
    if !eff.is_empty() {
        let _ = writeln!(o, "  {:<12} {}", "efficiency", eff.join("   "));
    }
    breakdown_lines(&mut o, doc);
    if doc.kind == Kind::Disk {
        irq_lines(&mut o, doc);
    }
    if let Some(d) = doc.net_disclosure() {
        let _ = writeln!(o, "\nnetwork path:");
        disclosure_lines(&mut o, d);
        if let Some(t) = &d.tls {
            let _ = writeln!(o, "  {:<12} {}", "tls:", tls_summary(t));
            let _ = writeln!(o, "  {:<12} {}", "", t.implementation);
        }
    }
    if !doc.notes.is_empty() {
        let _ = writeln!(o, "\nnotes:");
        for n in &doc.notes {
            let _ = writeln!(o, "  - {n}");
        }
    }
    o
}

/// The disk queue depth kept, beside the one requested and the Little's-law
/// figure (IOPS x mean latency) a reader would check it against.
fn queue_line(o: &mut String, doc: &ResultDoc, qd: f64) {
    let m = &doc.metrics;
    let mut l = format!("  {:<12} qd_achieved {qd:.2}", "queue");
    if let Some(requested) = doc.spec.disk().and_then(|s| s.qd_requested) {
        let _ = write!(l, " of {requested} requested");
    }
    l.push_str(" (mean I/Os outstanding)");
    if let (Some(iops), Some(lat)) = (m.get(mn::IOPS), m.get(mn::LAT_MEAN_US)) {
        let _ = write!(l, "   iops x mean latency {:.2}", iops * lat / 1e6);
    }
    let _ = writeln!(o, "{l}");
}

#[cfg(test)]
mod tests {
    use super::{consumer, num};

    #[test]
    fn top_consumers_show_pids_and_iotoll_roles() {
        let t = |pid: i32, comm: &str, k: bool, role: Option<&str>| iotoll_model::TopConsumer {
            pid,
            comm: comm.into(),
            kernel_thread: k,
            cpu_pct: 12.5,
            role: role.map(str::to_string),
        };
        assert_eq!(
            consumer(&t(7, "iotoll", false, Some("self"))),
            "iotoll pid 7 (this iotoll) 12.5 %"
        );
        assert_eq!(
            consumer(&t(8, "iotoll", false, Some("endpoint"))),
            "iotoll pid 8 (its endpoint) 12.5 %"
        );
        assert_eq!(
            consumer(&t(9, "iotoll", false, Some("iotoll"))),
            "iotoll pid 9 (another iotoll) 12.5 %"
        );
        assert_eq!(
            consumer(&t(14, "ksoftirqd/0", true, None)),
            "ksoftirqd/0 pid 14 [k] 12.5 %"
        );
    }

    #[test]
    fn the_split_adds_up_and_names_each_part_once() {
        let a = iotoll_model::CpuAccount {
            self_pct: 9.1,
            others_pct: 40.2,
            kernel_threads_pct: 1.2,
            kernel_other_pct: 3.0,
            ..Default::default()
        };
        assert_eq!(
            super::split(&a, a.total()),
            "iotoll 9.1 + others 40.2 + kernel threads 1.2 + kernel, no process 3.0 = 53.5 % busy"
        );
    }

    #[test]
    fn number_formatting() {
        assert_eq!(num(1234567.8), "1,234,568");
        assert_eq!(num(100.0), "100");
        assert_eq!(num(12.345), "12.3");
        assert_eq!(num(1.2345), "1.23");
        assert_eq!(num(-4321.0), "-4,321");
        assert_eq!(num(f64::NAN), "-");
        assert_eq!(num(0.0), "0");
        assert_eq!(num(7.0), "7");
    }
}

/// The README's sample of this output, from a fixed document.
#[cfg(test)]
#[allow(dead_code)]
#[path = "../tests/common/samples.rs"]
mod samples;

#[cfg(test)]
mod sample_tests {
    use super::{human, samples};

    #[test]
    fn readme_disk_run_sample_is_what_human_prints() {
        let text = include_str!("../tests/fixtures/disk-run.json");
        let mut doc: iotoll_model::ResultDoc =
            serde_json::from_str(text).expect("the fixture is a result document");
        iotoll_model::derive_metrics(&mut doc.metrics);
        samples::readme_sample("disk-run", &human(&doc));
    }
}

/// Columns as wide as their widest cell, the first left-aligned and the
/// rest right-aligned (numbers), each line indented by `indent`.
fn aligned(o: &mut String, indent: &str, rows: &[Vec<String>]) {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let width: Vec<usize> = (0..cols)
        .map(|c| {
            (rows
                .iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count()))
            .max()
        })
        .map(|w| w.unwrap_or(0))
        .collect();
    for r in rows {
        let cells: Vec<String> = (r.iter().zip(&width).enumerate())
            .map(|(i, (s, w))| match i {
                0 | 1 => format!("{s:<w$}"),
                _ => format!("{s:>w$}"),
            })
            .collect();
        let _ = writeln!(o, "{indent}{}", cells.join("  ").trim_end());
    }
}

/// A multi-host test's per-host, per-pair and per-adapter tables (empty
/// for a single-host result): what `results show` prints under the test.
/// The adapters' lines end with what the host's adapters carried on the
/// wire beside the payload its pairs counted, so the split can be checked.
pub fn host_tables(doc: &ResultDoc, indent: &str) -> String {
    let mut o = String::new();
    if doc.hosts.is_empty() {
        return o;
    }
    let f = |m: &iotoll_model::Metrics, k: &str| m.get(k).map_or("-".into(), |v| num(*v));
    let pct = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.2}"));
    let disk = doc.kind == Kind::Disk;
    let mut rows = vec![if disk {
        [
            "host",
            "role",
            "cpus",
            "IOPS",
            "MB/s",
            "cpu %",
            "others %",
            "IOPS per % CPU",
        ]
    } else {
        [
            "host", "role", "cpus", "Mbit/s", "sent", "received", "cpu %", "others %",
        ]
    }
    .map(String::from)
    .to_vec()];
    for h in &doc.hosts {
        let m = &h.metrics;
        let mut r = vec![
            printable(&h.name).into_owned(),
            h.role.clone(),
            h.cpus.to_string(),
        ];
        let keys: &[&str] = if disk {
            &[mn::IOPS, mn::MB_S]
        } else {
            &[mn::MBIT_S, mn::TX_MBIT_S, mn::RX_MBIT_S]
        };
        r.extend(keys.iter().map(|k| f(m, k)));
        r.push(pct(m.get(mn::CPU_PCT).copied()));
        r.push(pct(m.get(mn::CPU_OTHERS_PCT).copied()));
        if disk {
            r.push(f(m, mn::IOPS_PER_CPU_PCT));
        }
        rows.push(r);
    }
    let _ = writeln!(o, "{indent}per host:");
    aligned(&mut o, &format!("{indent}  "), &rows);
    if !doc.pairs.is_empty() {
        let mut rows = vec![[
            "client",
            "server",
            "conns",
            "client->server MB",
            "server->client MB",
            "Mbit/s",
        ]
        .map(String::from)
        .to_vec()];
        for p in &doc.pairs {
            rows.push(vec![
                printable(&p.client).into_owned(),
                printable(&p.server).into_owned(),
                p.conns.to_string(),
                num(p.client_to_server_bytes as f64 / 1e6),
                num(p.server_to_client_bytes as f64 / 1e6),
                num(p.mbit_s),
            ]);
        }
        let _ = writeln!(o, "{indent}per pair:");
        aligned(&mut o, &format!("{indent}  "), &rows);
    }
    adapter_table(&mut o, doc, indent);
    o
}

/// Per adapter of every host that has more than one (a multi-homed host):
/// what each carried on the wire in the host's window.
fn adapter_table(o: &mut String, doc: &ResultDoc, indent: &str) {
    let window = doc.metrics.get(mn::WINDOW_S).copied().unwrap_or(0.0);
    let multi: Vec<_> = (doc.hosts.iter()).filter(|h| h.ifaces.len() > 1).collect();
    if multi.is_empty() {
        return;
    }
    let mut rows = vec![[
        "host",
        "adapter",
        "received Mbit/s",
        "sent Mbit/s",
        "Mbit/s",
    ]
    .map(String::from)
    .to_vec()];
    let mut sums = Vec::new();
    for h in multi {
        let w = h.cpu.as_ref().map_or(window, |c| c.window_s);
        let mut wire = 0.0;
        for i in &h.ifaces {
            let i = i.rated(w);
            let g = |v: Option<f64>| v.map_or("-".into(), num);
            wire += i.mbit_s().unwrap_or(0.0);
            rows.push(vec![
                printable(&h.name).into_owned(),
                printable(&i.name).into_owned(),
                g(i.rx_mbit_s),
                g(i.tx_mbit_s),
                g(i.mbit_s()),
            ]);
        }
        let payload = h.metrics.get(mn::MBIT_S).copied();
        sums.push(format!(
            "{}: adapters {} Mbit/s on the wire (headers included){}",
            printable(&h.name),
            num(wire),
            payload.map_or(String::new(), |p| format!(
                " for {} Mbit/s of payload",
                num(p)
            ))
        ));
    }
    let _ = writeln!(
        o,
        "{indent}per adapter (interface counters over the host's window):"
    );
    aligned(o, &format!("{indent}  "), &rows);
    for s in sums {
        let _ = writeln!(o, "{indent}  {s}");
    }
}
