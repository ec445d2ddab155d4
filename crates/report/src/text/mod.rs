//! Terminal text: the compact table printed after a run (`result`), and
//! `results list` and `results show` (`results`). Tables go through the
//! report's one `Table` type (`tables::to_text`); figures through the one
//! number formatter (`iotoll_model::units`).

use iotoll_model::metrics as mn;
use iotoll_model::units::format_number as num;
use iotoll_model::{Kind, ResultDoc};
use std::fmt::Write;

mod cpu;
mod detail;
mod host;
pub mod iscsi;
pub mod lab;
pub mod progress;
mod results;
mod spec;
mod specs;
pub mod suite;
#[cfg(test)]
mod tests;

pub use cpu::{consumer, split};
pub use detail::tls_summary;
pub use host::host;
pub use results::{ci_text, host_tables, run_detail, run_list};
pub use specs::specs;

fn or_dash(v: Option<f64>) -> String {
    v.map_or("-".into(), num)
}

/// The compact table printed after a run.
pub fn result(doc: &ResultDoc) -> String {
    let get = |k: &str| doc.metrics.get(k).copied();
    let mut o = String::new();
    let header = spec::lines(doc).unwrap_or_else(|| doc.kind.to_string());
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
    throughput(&mut o, doc);
    latency(&mut o, doc);
    cpu::lines(&mut o, doc);
    efficiency(&mut o, doc);
    detail::breakdown(&mut o, doc);
    if doc.kind == Kind::Disk {
        detail::iscsi_and_irqs(&mut o, doc);
    }
    detail::network_path(&mut o, doc);
    if !doc.notes.is_empty() {
        let _ = writeln!(o, "\nnotes:");
        for n in &doc.notes {
            let _ = writeln!(o, "  - {n}");
        }
    }
    o
}

/// The throughput lines of the run's kind: IOPS, goodput and TCP, or
/// transactions.
fn throughput(o: &mut String, doc: &ResultDoc) {
    let get = |k: &str| doc.metrics.get(k).copied();
    let n = |k: &str| num(get(k).unwrap_or(f64::NAN));
    let errors = num(get(mn::ERRORS).unwrap_or(0.0));
    if let Some(iops) = get(mn::IOPS) {
        let _ = writeln!(
            o,
            "  {:<12} {} IOPS (read {}, write {})   {} MB/s ({} MiB/s)   errors {errors}",
            "throughput",
            num(iops),
            n(mn::READ_IOPS),
            n(mn::WRITE_IOPS),
            n(mn::MB_S),
            n(mn::MIB_S),
        );
    }
    if let Some(mbit) = get(mn::MBIT_S) {
        let mut l = format!("  {:<12} {} Mbit/s", "goodput", num(mbit));
        if let (Some(tx), Some(rx)) = (get(mn::TX_MBIT_S), get(mn::RX_MBIT_S)) {
            let _ = write!(l, " (tx {}, rx {})", num(tx), num(rx));
        }
        let per = if doc.kind == Kind::NetUdp {
            "flow"
        } else {
            "connection"
        };
        if let (Some(lo), Some(hi)) = (get(mn::CONN_MBIT_S_MIN), get(mn::CONN_MBIT_S_MAX)) {
            let _ = write!(l, "   per {per} {} to {}", num(lo), num(hi));
        }
        if let Some(f) = get(mn::FAIRNESS) {
            let _ = write!(l, "   fairness {f:.3}");
        }
        let _ = writeln!(o, "{l}");
        if doc.kind == Kind::NetUdp {
            return udp_lines(o, doc, &errors);
        }
        let _ = writeln!(
            o,
            "  {:<12} {} retransmits   srtt {} us   connections up in {} s   errors {errors}",
            "tcp",
            n(mn::RETRANSMITS),
            or_dash(get(mn::SRTT_US)),
            get(mn::CONNECT_S).map_or("-".into(), |v| format!("{v:.3}")),
        );
    }
    if let Some(t) = get(mn::TRANS_S) {
        let _ = writeln!(
            o,
            "  {:<12} {} transactions/s   one-way latency {} us   errors {errors}",
            "rr",
            num(t),
            or_dash(get(mn::LATENCY_ONE_WAY_US)),
        );
    }
}

/// A connection-rate test's rate and its failures, named.
fn conn_lines(o: &mut String, doc: &ResultDoc) {
    let m = &doc.metrics;
    let Some(rate) = m.get(mn::CONN_S) else {
        return;
    };
    let named: Vec<String> = (mn::METRICS.iter())
        .filter(|d| d.name.starts_with("failures_"))
        .filter_map(|d| Some((d.label, *m.get(d.name).filter(|v| **v > 0.0)?)))
        .map(|(l, v)| format!("{v} {l}"))
        .collect();
    let what = if doc.kind == Kind::NetCrr {
        "crr"
    } else {
        "cc"
    };
    let _ = writeln!(
        o,
        "  {:<12} {} connections/s   failed {}{}",
        what,
        num(*rate),
        or_dash(m.get(mn::FAILURES).copied()),
        if named.is_empty() {
            String::new()
        } else {
            format!(" ({})", named.join(", "))
        },
    );
    value_line(o, "connect us", "connect", m);
    if m.contains_key(mn::TRANS_MEAN_US) {
        value_line(o, "trans us", "trans", m);
    }
}

/// A UDP test's offered rate, loss and arrival order.
fn udp_lines(o: &mut String, doc: &ResultDoc, errors: &str) {
    let get = |k: &str| doc.metrics.get(k).copied();
    let n = |k: &str| or_dash(get(k));
    let _ = writeln!(
        o,
        "  {:<12} offered {} Mbit/s   loss {} % ({} of {} datagrams)   jitter {} us",
        "udp",
        n(mn::OFFERED_MBIT_S),
        n(mn::LOSS_PCT),
        n(mn::DATAGRAMS_LOST),
        n(mn::DATAGRAMS_SENT),
        n(mn::JITTER_US),
    );
    let _ = writeln!(
        o,
        "  {:<12} {} out of order   {} duplicates   {} ignored   errors {errors}",
        "",
        n(mn::OUT_OF_ORDER),
        n(mn::DUPLICATES),
        n(mn::DATAGRAMS_IGNORED),
    );
}

/// Round-trip and I/O latency percentiles, and the queue depth kept.
fn latency(o: &mut String, doc: &ResultDoc) {
    conn_lines(o, doc);
    let m = &doc.metrics;
    if m.contains_key(mn::TRANS_S) {
        value_line(o, "rtt us", "rtt", m);
    }
    if m.contains_key(mn::LAT_MEAN_US) {
        value_line(o, "latency us", "lat", m);
    }
    if let Some(qd) = m.get(mn::QD_ACHIEVED) {
        queue_line(o, doc, *qd);
    }
}

/// One labelled line of a family's times (`rtt` for `rtt_mean_us`,
/// `rtt_p50_us`, ...): the points the registry defines for it, those
/// present, in this order.
fn value_line(o: &mut String, title: &str, family: &str, m: &iotoll_model::Metrics) {
    const POINTS: [(&str, &str); 8] = [
        ("mean", "mean"),
        ("min", "min"),
        ("p50", "p50"),
        ("p90", "p90"),
        ("p99", "p99"),
        ("p99.9", "p999"),
        ("p99.99", "p9999"),
        ("max", "max"),
    ];
    let mut l = format!("  {title:<12}");
    for (label, point) in POINTS {
        let k = format!("{family}_{point}_us");
        if let Some(v) = m.get(&k).filter(|_| mn::metric_def(&k).is_some()) {
            let _ = write!(l, " {label} {}", num(*v));
        }
    }
    let _ = writeln!(o, "{l}");
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

/// The efficiency figures the document has, in one line.
fn efficiency(o: &mut String, doc: &ResultDoc) {
    let eff: Vec<String> = [
        (mn::IOPS_PER_CPU_PCT, "IOPS per % CPU"),
        (mn::MB_S_PER_CPU_PCT, "MB/s per % CPU"),
        (mn::CPU_US_PER_IO, "CPU us per I/O"),
        (mn::CYCLES_PER_IO, "cycles per I/O"),
        (mn::MBIT_S_PER_CPU_PCT, "Mbit/s per % CPU (P/E)"),
        (mn::REMOTE_MBIT_S_PER_CPU_PCT, "Mbit/s per % remote CPU"),
        (mn::CPU_US_PER_KB, "CPU us per KB"),
        (mn::CYCLES_PER_BYTE, "cycles per byte"),
        (mn::CPU_US_PER_TRANS, "CPU us per transaction"),
    ]
    .iter()
    // Per byte means nothing for request/response.
    .filter(|(k, _)| {
        doc.kind != Kind::NetRr || (*k != mn::CPU_US_PER_KB && *k != mn::CYCLES_PER_BYTE)
    })
    .filter_map(|(k, unit)| Some(format!("{} {unit}", num(*doc.metrics.get(*k)?))))
    .collect();
    if !eff.is_empty() {
        let _ = writeln!(o, "  {:<12} {}", "efficiency", eff.join("   "));
    }
}
