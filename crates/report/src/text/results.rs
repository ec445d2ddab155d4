//! `results list` and `results show`: the stored runs, and one run's tests
//! with their selections, confidence intervals, interference and, for a
//! multi-host test, its per-host, per-pair and per-adapter tables.

use super::detail::tls_summary;
use super::{consumer, or_dash};
use crate::tables::{to_text, TRow, Table};
use iotoll_model::metrics as mn;
use iotoll_model::text::printable;
use iotoll_model::units::format_number as num;
use iotoll_model::{Ci95, Interference, Kind, ResultDoc, ResultStatus};
use iotoll_store::{RepRow, RunDetail, RunRow, TestRow};
use std::fmt::Write;

/// A header, then one run per line beginning with its id; each column as
/// wide as its longest cell, so long labels stay aligned.
pub fn run_list(runs: &[RunRow]) -> String {
    let head = ["id", "config", "suite", "started", "status", "tests"];
    let mut t = Table::new("", &head);
    for r in runs {
        t.rows.push(TRow::new(vec![
            r.id.to_string(),
            printable(r.config.as_deref().unwrap_or("-")).into_owned(),
            printable(&r.suite).into_owned(),
            printable(&r.started_at).into_owned(),
            r.status.label().to_string(),
            r.tests.to_string(),
        ]));
    }
    to_text(&t, "", "l")
}

/// A run's tests, repetitions, selections and notes.
pub fn run_detail(d: &RunDetail) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "run {}  suite {}  config {}  {}  {} -> {}",
        d.run.id,
        printable(&d.run.suite),
        printable(d.run.config.as_deref().unwrap_or("-")),
        d.run.status.label(),
        printable(&d.run.started_at),
        printable(d.run.finished_at.as_deref().unwrap_or("-"))
    );
    let name_w = (d.tests.iter()).map(|t| printable(&t.name).chars().count());
    let group_w = (d.tests.iter()).map(|t| group(t).chars().count());
    let widths = (name_w.max().unwrap_or(0), group_w.max().unwrap_or(0));
    for t in &d.tests {
        let _ = writeln!(o, "  {}", test_line(t, widths));
        // Every repetition asked for the same cipher; the selected one's
        // handshakes stand for the test.
        let tls = (t.reps.iter())
            .filter(|r| t.selected_rep.is_none_or(|s| s == r.rep))
            .find_map(|r| r.doc.net_disclosure()?.tls.clone());
        if let Some(tls) = tls {
            let _ = writeln!(o, "    tls: {}", printable(&tls_summary(&tls)));
        }
        o.push_str(&multi_host(t));
        for r in &t.reps {
            interfered(&mut o, t, r);
        }
    }
    for n in &d.run.notes {
        let _ = writeln!(o, "  note: {}", printable(n));
    }
    o
}

fn group(t: &TestRow) -> String {
    printable(t.group.as_deref().unwrap_or("-")).into_owned()
}

/// A repetition other processes interfered with, and by whom: this host
/// and the endpoint's when it is another host, or a multi-host test's
/// machines (one verdict each).
fn interfered(o: &mut String, t: &TestRow, r: &RepRow) {
    let selected = if t.selected_rep == Some(r.rep) {
        " (selected)"
    } else {
        ""
    };
    let who = |i: &Interference| {
        i.processes
            .iter()
            .map(consumer)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let cpu = &r.doc.cpu;
    let remote = cpu.remote.as_ref().filter(|_| cpu.remote_separate());
    for (side, c) in [("", cpu.local.as_ref()), ("endpoint host: ", remote)] {
        let Some(i) = c
            .and_then(|c| c.interference.as_ref())
            .filter(|i| i.interfered)
        else {
            continue;
        };
        let _ = writeln!(
            o,
            "    rep {}{selected}: INTERFERED {side}others {} % of the host (threshold {} %): {}",
            r.rep,
            num(i.others_pct),
            num(i.threshold_pct),
            who(i)
        );
    }
    let hosts = r.doc.interfered_hosts();
    if let Some(i) = (r.doc.hosts.iter())
        .filter_map(|h| h.cpu.as_ref()?.interference.as_ref())
        .find(|i| i.interfered)
    {
        let _ = writeln!(
            o,
            "    rep {}{selected}: INTERFERED on host {}: others {} % + steal {} % (threshold {} %): {}",
            r.rep,
            printable(&hosts.join(", ")),
            num(i.others_pct),
            num(i.steal_pct),
            num(i.threshold_pct),
            who(i)
        );
    }
}

/// The headline metrics of a test's kind, as (label, metric).
fn shown_metrics(kind: Kind) -> &'static [(&'static str, &'static str)] {
    match kind {
        Kind::Disk => &[
            ("iops", mn::IOPS),
            ("MB/s", mn::MB_S),
            ("lat us", mn::LAT_MEAN_US),
        ],
        Kind::NetStream => &[("mbit/s", mn::MBIT_S)],
        Kind::NetRr => &[("trans/s", mn::TRANS_S), ("rtt us", mn::RTT_MEAN_US)],
        Kind::NetUdp => &[("mbit/s", mn::MBIT_S), ("loss %", mn::LOSS_PCT)],
        Kind::NetCrr => &[("conn/s", mn::CONN_S), ("trans us", mn::TRANS_MEAN_US)],
        Kind::NetCc => &[("conn/s", mn::CONN_S), ("connect us", mn::CONNECT_MEAN_US)],
    }
}

/// One `results show` line: only the fields that apply to the test's kind;
/// the name and group padded to `widths` (the run's longest).
pub(super) fn test_line(t: &TestRow, widths: (usize, usize)) -> String {
    let m = iotoll_store::export::selected_metrics(t);
    let g = |k: &str| m.and_then(|m| m.get(k).copied()).map(num);
    let (nw, gw) = widths;
    let mut l = format!(
        "{:<nw$} {:<gw$} {} reps  {}",
        printable(&t.name),
        group(t),
        t.reps.len(),
        t.select
    );
    let mbit = iotoll_model::ci::wants_mbit(t.kind, &t.params);
    for (label, k) in shown_metrics(t.kind) {
        // Disk throughput in Mbit/s where the suite asks (unit = "mbit_s").
        let (label, v) = match iotoll_model::ci::disk_mbit(k).filter(|_| mbit) {
            Some((l, f)) => (l, m.and_then(|m| m.get(*k)).map(|v| num(v * f))),
            None => (*label, g(k)),
        };
        let _ = write!(l, "  {label} {}", v.unwrap_or("-".into()));
    }
    // The metric the test is selected by, when the kind's columns lack it.
    let sel = t.select_metric();
    if !shown_metrics(t.kind).iter().any(|(_, k)| *k == sel) {
        let _ = write!(l, "  {sel} {}", g(sel).unwrap_or("-".into()));
    }
    let _ = write!(
        l,
        "  cpu % {}  spread % {}",
        g(mn::CPU_PCT).unwrap_or("-".into()),
        t.spread_pct.map_or("-".into(), |v| format!("{v:.1}"))
    );
    if let Some(c) = &t.ci95 {
        let _ = write!(l, "  {}", ci_text(c, mbit));
    }
    if t.repeatable == Some(false) {
        l.push_str("  NOT REPEATABLE");
    }
    l
}

/// "95 % CI of iops 980 to 1,020 (mean 1,000 ± 20, 3 reps)"; `mbit`
/// shows a disk MB/s metric in Mbit/s.
pub fn ci_text(c: &Ci95, mbit: bool) -> String {
    let in_mbit = iotoll_model::ci::disk_mbit(&c.metric).filter(|_| mbit);
    let (name, f) = in_mbit.unwrap_or((c.metric.as_str(), 1.0));
    let caveat = c.caveat().map_or(String::new(), |w| format!(": {w}"));
    format!(
        "95 % CI of {name} {} to {} (mean {} ± {}, {} reps){caveat}",
        num(c.low * f),
        num(c.high * f),
        num(c.mean * f),
        num(c.half_width * f),
        c.n
    )
}

/// A multi-host test's per-host, per-pair and per-adapter tables, of the
/// repetition its figures are (or, for a mean, the first complete one,
/// said so); empty for a single-host test.
pub(super) fn multi_host(t: &TestRow) -> String {
    let complete = || (t.reps.iter()).filter(|r| r.status == ResultStatus::Complete);
    let (rep, which) = match t.selected_rep {
        Some(s) => (t.reps.iter().find(|r| r.rep == s), "selected"),
        None => (complete().next(), "one of the mean's"),
    };
    let Some(rep) = rep.filter(|r| !r.doc.hosts.is_empty()) else {
        return String::new();
    };
    format!(
        "    repetition {} ({which}):\n{}",
        rep.rep,
        host_tables(&rep.doc, "    ")
    )
}

/// A multi-host test's per-host, per-pair and per-adapter tables (empty
/// for a single-host result): what `results show` prints under the test.
pub fn host_tables(doc: &ResultDoc, indent: &str) -> String {
    if doc.hosts.is_empty() {
        return String::new();
    }
    let pct = |v: Option<&f64>| v.map_or("-".into(), |v| format!("{v:.2}"));
    let disk = doc.kind == Kind::Disk;
    // The kind's figures, between the host's CPUs and its CPU.
    let figures: &[(&str, &str)] = match disk {
        true => &[("IOPS", mn::IOPS), ("MB/s", mn::MB_S)],
        false => &[
            ("Mbit/s", mn::MBIT_S),
            ("sent", mn::TX_MBIT_S),
            ("received", mn::RX_MBIT_S),
        ],
    };
    let mut head = vec!["host", "role", "cpus"];
    head.extend(figures.iter().map(|f| f.0));
    head.extend(["cpu %", "others %"]);
    if disk {
        head.push("IOPS per % CPU");
    }
    let mut hosts = Table::new("per host:", &head);
    for h in &doc.hosts {
        let m = &h.metrics;
        let mut r = vec![
            printable(&h.name).into_owned(),
            h.role.clone(),
            h.cpus.to_string(),
        ];
        r.extend(figures.iter().map(|(_, k)| or_dash(m.get(*k).copied())));
        r.push(pct(m.get(mn::CPU_PCT)));
        r.push(pct(m.get(mn::CPU_OTHERS_PCT)));
        if disk {
            r.push(or_dash(m.get(mn::IOPS_PER_CPU_PCT).copied()));
        }
        hosts.rows.push(TRow::new(r));
    }
    let mut o = to_text(&hosts, indent, "llr");
    if crate::hosts::pair_figures::moves_bytes(&doc.pairs) && !doc.pairs.is_empty() {
        let head = [
            "client",
            "server",
            "conns",
            "client->server MB",
            "server->client MB",
            "Mbit/s",
        ];
        let mut pairs = Table::new("per pair:", &head);
        for p in &doc.pairs {
            let cells = vec![
                printable(&p.client).into_owned(),
                printable(&p.server).into_owned(),
                p.conns.to_string(),
                num(p.client_to_server_bytes as f64 / 1e6),
                num(p.server_to_client_bytes as f64 / 1e6),
                num(p.mbit_s),
            ];
            pairs.rows.push(TRow::new(cells));
        }
        o.push_str(&to_text(&pairs, indent, "llr"));
    }
    let title = "per pair, {what}:";
    if let Some(t) = crate::hosts::pair_figures::pair_table(title, &doc.pairs, &doc.metrics) {
        o.push_str(&to_text(&t, indent, "llr"));
    }
    if let Some(t) = adapter_table(doc) {
        o.push_str(&to_text(&t, indent, "llr"));
    }
    o
}

/// Per adapter of every host that has more than one (a multi-homed host):
/// what each carried on the wire in the host's window, and under the table
/// what the host's adapters carried beside the payload its pairs counted,
/// so the split can be checked.
fn adapter_table(doc: &ResultDoc) -> Option<Table> {
    let window = doc.metrics.get(mn::WINDOW_S).copied().unwrap_or(0.0);
    let multi: Vec<_> = (doc.hosts.iter()).filter(|h| h.ifaces.len() > 1).collect();
    if multi.is_empty() {
        return None;
    }
    let mut t = Table::new(
        "per adapter (interface counters over the host's window):",
        &[
            "host",
            "adapter",
            "received Mbit/s",
            "sent Mbit/s",
            "Mbit/s",
        ],
    );
    let mut sums = Vec::new();
    for h in multi {
        let w = h.cpu.as_ref().map_or(window, |c| c.window_s);
        let mut wire = 0.0;
        for i in &h.ifaces {
            let i = i.rated(w);
            wire += i.mbit_s().unwrap_or(0.0);
            let cells = vec![
                printable(&h.name).into_owned(),
                printable(&i.name).into_owned(),
                or_dash(i.rx_mbit_s),
                or_dash(i.tx_mbit_s),
                or_dash(i.mbit_s()),
            ];
            t.rows.push(TRow::new(cells));
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
    t.note = Some(sums.join("\n"));
    Some(t)
}
