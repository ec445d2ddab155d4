//! Multi-host tests (agents on many hosts, one console): each host's
//! figures over its own window with the document's totals under them, the
//! endpoint pairs (long lists collapsed to their extremes and a
//! min/median/max summary), the measured skew of the windows, and the
//! rows of the per-host chart; in a comparison, the hosts matched by name
//! and role side by side.

use crate::charts;
use crate::compare::{diff_pct, distinct, first_tests, ConfigData, MultiHost, Row};
use crate::fmt::{count, num, pct};
use crate::tables::{metric_cell, TRow, Table};
use iotoll_model::metrics::{self as mn, label};
use iotoll_model::{rederive_metrics, HostFigures, Kind, Metrics, PairFigures, Skew};

/// Pairs listed in full up to this many; beyond, the slowest and fastest
/// half of it each, and the summary.
pub const PAIRS_SHOWN: usize = 16;

/// A totals or summary row.
fn total_row(cells: Vec<String>) -> TRow {
    TRow {
        total: true,
        ..TRow::new(cells)
    }
}

/// Relative difference above which a total and the sum of its parts are
/// said to disagree (display rounding stays well under it).
const AGREE: f64 = 0.005;

/// The per-host columns of a kind: throughput, CPU, the headline
/// efficiency and the service demand.
fn columns(kind: Kind) -> &'static [&'static str] {
    match kind {
        Kind::NetStream | Kind::NetUdp => &[
            mn::MBIT_S,
            mn::TX_MBIT_S,
            mn::RX_MBIT_S,
            mn::CPU_PCT,
            mn::MBIT_S_PER_CPU_PCT,
            mn::CPU_US_PER_KB,
        ],
        Kind::Disk => &[
            mn::IOPS,
            mn::MB_S,
            mn::LAT_MEAN_US,
            mn::CPU_PCT,
            mn::IOPS_PER_CPU_PCT,
            mn::CPU_US_PER_IO,
        ],
        Kind::NetCrr | Kind::NetCc => &[
            mn::CONN_S,
            mn::CONNECT_MEAN_US,
            mn::CPU_PCT,
            mn::CONN_S_PER_CPU_PCT,
            mn::CPU_US_PER_CONN,
        ],
        Kind::NetRr => &[
            mn::TRANS_S,
            mn::RTT_MEAN_US,
            mn::CPU_PCT,
            mn::CPU_US_PER_TRANS,
        ],
    }
}

/// A host's metrics with the derived ones recomputed from its own values
/// (and its CPU count), so that the efficiency shown is its formula on the
/// throughput and CPU % shown beside it.
fn host_metrics(h: &HostFigures) -> Metrics {
    let mut m = h.metrics.clone();
    m.entry(mn::CPUS.to_string()).or_insert(h.cpus as f64);
    rederive_metrics(&mut m);
    m
}

/// The totals metric a column shows on the servers' row: their CPU and
/// the efficiency over it are `remote_…`; throughput is the test's, what
/// the clients sent being what the servers received (as the Iometer
/// export's endpoint row has it).
fn servers_metric(m: &str) -> Option<String> {
    let cpu = m == mn::CPU_PCT || m.contains("_per_cpu_pct") || m.starts_with("cpu_us_per_");
    match m {
        mn::TX_MBIT_S => Some(mn::RX_MBIT_S.into()),
        mn::RX_MBIT_S => Some(mn::TX_MBIT_S.into()),
        _ if !cpu => Some(m.to_string()),
        _ => Some(format!("remote_{m}")).filter(|r| mn::metric_def(r).is_some()),
    }
}

/// The totals rows, as (servers, role): the document's own figures,
/// never re-added from the hosts (a sum could differ from what the console
/// measured; `checks` says when it does). Network tests have the clients'
/// row (`cpu_pct`, weighted by CPU count) and, when measured, the
/// servers' (`remote_…`); disk tests one row for all hosts.
fn total_sides(servers_measured: bool) -> &'static [(bool, &'static str)] {
    if servers_measured {
        &[(false, "clients"), (true, "servers")]
    } else {
        &[(false, "all hosts")]
    }
}

fn total_value(mh: &MultiHost, servers: bool, m: &str) -> Option<f64> {
    let key = if servers {
        servers_metric(m)?
    } else {
        m.to_string()
    };
    mh.totals.get(&key).copied()
}

/// The per-host table of one configuration: every host's figures over its
/// window, then the totals rows.
pub fn host_table(name: &str, kind: Kind, mh: &MultiHost, label_of: Option<&str>) -> Table {
    let hosts: Vec<Metrics> = mh.hosts.iter().map(host_metrics).collect();
    let cols: Vec<&str> = (columns(kind).iter().copied())
        .filter(|m| mh.totals.contains_key(*m) || hosts.iter().any(|h| h.contains_key(*m)))
        .collect();
    let mut head = vec!["host".to_string(), "role".into(), "CPUs".into()];
    head.extend(cols.iter().map(|m| label(m).to_string()));
    let interference = |h: &HostFigures| h.cpu.as_ref()?.interference.clone();
    let judged = mh.hosts.iter().any(|h| interference(h).is_some());
    if judged {
        head.extend(["other processes' CPU %".into(), "steal %".into()]);
    }
    head.extend(["window on (µs)".into(), "window off (µs)".into()]);
    let mut rows: Vec<TRow> = (mh.hosts.iter().zip(&hosts))
        .map(|(h, m)| {
            let mut cells = vec![h.name.clone(), h.role.clone(), h.cpus.to_string()];
            cells.extend((cols.iter()).map(|c| metric_cell(c, m.get(*c).copied(), false)));
            if judged {
                cells.extend(match interference(h) {
                    Some(i) => {
                        let flag = if i.interfered { " ⚑" } else { "" };
                        [
                            format!("{}{flag}", num(Some(i.others_pct))),
                            num(Some(i.steal_pct)),
                        ]
                    }
                    None => ["–".into(), "–".into()],
                });
            }
            // Exactly on time reads `0.00`, never `-0.00` (`num`).
            cells.extend([num(Some(h.on_us)), num(Some(h.off_us))]);
            TRow::new(cells)
        })
        .collect();
    let servers_measured = mh.totals.contains_key(mn::REMOTE_CPU_PCT);
    for &(servers, role) in total_sides(servers_measured) {
        // The document's CPU count, machines sharing a kernel counted once.
        let cpus = if servers { mn::REMOTE_CPUS } else { mn::CPUS };
        let mut cells = vec![
            "total".into(),
            role.into(),
            count(mh.totals.get(cpus).copied()),
        ];
        cells.extend((cols.iter()).map(|c| metric_cell(c, total_value(mh, servers, c), false)));
        let blank = if judged { 4 } else { 2 };
        cells.extend(std::iter::repeat_n("–".to_string(), blank));
        rows.push(total_row(cells));
    }
    let mut note = vec![format!(
        "Each host over its own window ({}). Efficiency = the row's throughput / its whole-host CPU %; service demand = its busy CPU-µs per unit. Window on/off: when its window opened and closed against the scheduled instants (console's clock, µs).",
        crate::reps::host_table_source(mh)
    )];
    note.push(if servers_measured {
        "Totals as the test measured them: throughput of all hosts; the clients' CPU % (and the servers', as remote CPU) weighted by CPU count.".into()
    } else {
        "Totals as the test measured them: throughput of all hosts, CPU % weighted by CPU count.".into()
    });
    note.extend(shared_kernels(&mh.hosts));
    if judged {
        note.push(format!(
            "Other processes' CPU %: processes other than the test's own iotoll (and its system under test) on the host's machine (or its own CPUs) in its window, judged once per machine (hosts sharing a kernel carry one verdict; lab hosts with CPUs of their own, one per set); steal: the hypervisor's. ⚑: above the interference threshold{}.",
            match mh.hosts.iter().find_map(|h| interference(h).filter(|i| i.interfered)) {
                Some(i) => format!(" ({} %): the test is INTERFERED", num(Some(i.threshold_pct))),
                None => String::new(),
            }
        ));
    }
    note.extend(checks(kind, mh));
    note.extend(
        mh.hosts
            .iter()
            .flat_map(|h| h.notes.iter().map(move |n| format!("{}: {n}", h.name))),
    );
    Table {
        title: titled(name, "hosts", label_of),
        head,
        rows,
        note: Some(note.join(" ")),
    }
}

/// A table's title: the test, what the table shows, and the configuration
/// when there are several.
fn titled(name: &str, what: &str, label_of: Option<&str>) -> String {
    match label_of {
        Some(l) => format!("{name}: {what} — {l}"),
        None => format!("{name}: {what}"),
    }
}

/// Hosts that share a kernel (one boot id): one machine, whose CPU the
/// totals count once; or, where lab hosts have CPUs of their own, each
/// set of CPUs once.
fn shared_kernels(hosts: &[HostFigures]) -> Option<String> {
    let own = |h: &HostFigures| h.cpu.as_ref().and_then(|c| c.own_cpus.clone());
    let ids = distinct(hosts.iter().filter_map(|h| h.boot_id.as_deref()));
    let notes: Vec<String> = (ids.iter())
        .filter_map(|id| {
            let on: Vec<&HostFigures> = (hosts.iter())
                .filter(|h| h.boot_id.as_deref() == Some(*id))
                .collect();
            let names = |hs: &[&HostFigures]| hs.iter().map(|h| h.name.as_str()).collect::<Vec<_>>().join(", ");
            if on.len() < 2 {
                return None;
            }
            if on.iter().all(|h| own(h).is_none()) {
                return Some(format!(
                    "One machine (same kernel boot id), its CPU counted once in the totals: {}.",
                    names(&on)
                ));
            }
            let sets: Vec<String> = (distinct(on.iter().map(|h| own(h))).into_iter())
                .map(|set| {
                    let hs: Vec<&HostFigures> = on.iter().copied().filter(|h| own(h) == set).collect();
                    match &set {
                        Some(c) => format!("{} (CPUs {})", names(&hs), iotoll_probe::affinity::format_cpu_list(c)),
                        None => format!("{} (the machine's CPUs)", names(&hs)),
                    }
                })
                .collect();
            Some(format!(
                "One machine (same kernel boot id) whose lab hosts have CPUs of their own: each set counted once in the totals: {}.",
                sets.join("; ")
            ))
        })
        .collect();
    (!notes.is_empty()).then(|| notes.join(" "))
}

fn disagree(sum: f64, total: f64) -> bool {
    (sum - total).abs() > AGREE * total.abs().max(1e-9) && (sum - total).abs() > 0.01
}

/// Where the parts do not add up to the document's totals, saying so
/// (the totals are shown as measured, not replaced by the sums).
pub fn checks(kind: Kind, mh: &MultiHost) -> Vec<String> {
    let mut out = Vec::new();
    let t = &mh.totals;
    let hosts = &mh.hosts;
    let sum_of = |k: &str, role: Option<&str>| -> Option<f64> {
        let hs = hosts.iter().filter(|h| role.is_none_or(|r| h.role == r));
        hs.map(|h| h.metrics.get(k).copied()).sum()
    };
    // Every byte is sent by one host: the hosts' sent rates add up to the
    // test's goodput. Disk I/Os and transactions are each one host's.
    let (what, key, role, of) = match kind {
        Kind::NetStream | Kind::NetUdp => ("hosts' sent Mbit/s", mn::TX_MBIT_S, None, mn::MBIT_S),
        Kind::Disk => ("hosts' IOPS", mn::IOPS, None, mn::IOPS),
        Kind::NetCrr | Kind::NetCc => (
            "hosts' clients' connections/s",
            mn::CONN_S,
            Some("client"),
            mn::CONN_S,
        ),
        Kind::NetRr => (
            "hosts' clients' transactions/s",
            mn::TRANS_S,
            Some("client"),
            mn::TRANS_S,
        ),
    };
    // So do the endpoint pairs' rates.
    let pairs = (!mh.pairs.is_empty()).then(|| mh.pairs.iter().map(|p| p.mbit_s).sum());
    for (what, sum, total) in [
        (what, sum_of(key, role), t.get(of)),
        ("pairs' Mbit/s", pairs, t.get(mn::MBIT_S)),
    ] {
        if let (Some(sum), Some(&total)) = (sum, total) {
            if disagree(sum, total) {
                out.push(format!(
                    "⚠ The {what} add up to {}, the total is {}.",
                    num(Some(sum)),
                    num(Some(total))
                ));
            }
        }
    }
    // CPU weighted by CPU count, each machine once: only when every host
    // has one role, so that each side's hosts are known.
    if !hosts.iter().any(|h| h.role == "client+server") {
        for (roles, key, whose) in [
            (&["client", "disk"][..], mn::CPU_PCT, "clients'"),
            (&["server"][..], mn::REMOTE_CPU_PCT, "servers'"),
        ] {
            let side = hosts.iter().filter(|h| roles.contains(&h.role.as_str()));
            let weighted = (HostFigures::one_per_machine(side).into_iter())
                .map(|h| h.metrics.get(mn::CPU_PCT).map(|c| (c, h.cpus as f64)));
            let Some(w) = weighted.collect::<Option<Vec<_>>>() else {
                continue;
            };
            let n: f64 = w.iter().map(|x| x.1).sum();
            if let (true, Some(&total)) = (n > 0.0, t.get(key)) {
                let mean = w.iter().map(|(c, k)| *c * *k).sum::<f64>() / n;
                if disagree(mean, total) {
                    out.push(format!(
                        "⚠ The {whose} CPU % weighted by CPU count is {}, the total says {}.",
                        num(Some(mean)),
                        num(Some(total))
                    ));
                }
            }
        }
    }
    out
}

/// The hosts of several configurations side by side, matched by name and
/// role: each configuration's throughput, CPU % and efficiency, and each
/// candidate's difference in throughput; a host only some configurations
/// have is named as such.
pub fn host_comparison(
    name: &str,
    kind: Kind,
    per: &[Option<&MultiHost>],
    labels: &[String],
) -> Table {
    let (thr, eff) = (kind.headline(), kind.headline_efficiency());
    let shown = [thr, mn::CPU_PCT, eff];
    let mut head = vec!["host".to_string(), "role".into()];
    for l in labels {
        head.extend(shown.iter().map(|m| format!("{} {l}", label(m))));
    }
    for l in labels.iter().skip(1) {
        head.push(format!("Δ {} {l}", label(thr)));
    }
    let keys = host_keys(per);
    let mut rows = Vec::new();
    let get = |v: &Option<Metrics>, m: &str| v.as_ref()?.get(m).copied();
    let row =
        |host: String, role: String, vals: Vec<Option<Metrics>>, missing: bool, total: bool| {
            let mut cells = vec![host, role];
            for v in &vals {
                cells.extend(shown.iter().map(|m| metric_cell(m, get(v, m), false)));
            }
            let of = |ci: usize| get(&vals[ci], thr);
            cells.extend((1..vals.len()).map(|ci| pct(diff_pct(of(0), of(ci)))));
            let mut r = TRow::new(cells);
            r.cell_diff[0] = missing;
            r.total = total;
            r
        };
    for (host, role) in keys {
        let vals: Vec<Option<Metrics>> = per
            .iter()
            .map(|mh| Some(host_metrics((*mh)?.host(&host, &role)?)))
            .collect();
        let present: Vec<&str> = (labels.iter().zip(&vals))
            .filter_map(|(l, v)| v.as_ref().map(|_| l.as_str()))
            .collect();
        let missing = present.len() < labels.len();
        let cell = if missing {
            format!("{host} (only in {})", present.join(", "))
        } else {
            host
        };
        rows.push(row(cell, role, vals, missing, false));
    }
    let any_servers = per
        .iter()
        .flatten()
        .any(|mh| mh.totals.contains_key(mn::REMOTE_CPU_PCT));
    for (servers, role) in total_sides(any_servers) {
        let vals: Vec<Option<Metrics>> = per
            .iter()
            .map(|mh| {
                let mh = (*mh)?;
                Some(
                    shown
                        .iter()
                        .filter_map(|m| Some((m.to_string(), total_value(mh, *servers, m)?)))
                        .collect(),
                )
            })
            .collect();
        rows.push(row("total".into(), role.to_string(), vals, false, true));
    }
    Table {
        title: format!("{name}: hosts side by side"),
        head,
        rows,
        note: Some(format!(
            "Hosts matched by name and role; highlighted: a host only some configurations have. Totals as each test measured them (CPU weighted by CPU count). Δ: candidate / baseline − 1 of {}. Figures of {}. Each configuration's full per-host table follows.",
            label(thr),
            (labels.iter().zip(per))
                .filter_map(|(l, mh)| Some(format!("{l}: {}", crate::reps::host_table_source((*mh)?))))
                .collect::<Vec<_>>()
                .join("; ")
        )),
    }
}

/// Every host of the configurations, as (name, role), in first-seen order.
fn host_keys(per: &[Option<&MultiHost>]) -> Vec<(String, String)> {
    let hosts = per.iter().flatten().flat_map(|mh| &mh.hosts);
    distinct(hosts.map(|h| (h.name.clone(), h.role.clone())))
}

impl MultiHost {
    fn host(&self, name: &str, role: &str) -> Option<&HostFigures> {
        self.hosts.iter().find(|h| h.name == name && h.role == role)
    }
}

/// The rows of the per-host chart: each host's headline throughput and
/// CPU % in every configuration (matched by name and role).
pub fn chart_rows(kind: Kind, per: &[Option<&MultiHost>]) -> Vec<Row> {
    let keys = host_keys(per);
    let names = distinct(keys.iter().map(|k| k.0.as_str()));
    let every = label_every(keys.iter().map(|k| k.0.chars().count()), keys.len());
    keys.iter()
        .enumerate()
        .map(|(i, (host, role))| {
            let of = |m: &str| -> Vec<Option<f64>> {
                per.iter()
                    .map(|mh| (*mh)?.host(host, role)?.metrics.get(m).copied())
                    .collect()
            };
            // A name with two roles needs its role to tell the bars apart.
            let twice =
                names.len() < keys.len() && keys.iter().filter(|k| &k.0 == host).count() > 1;
            // The chart labels a bar with the part after the last '/'.
            let name = if twice {
                format!("{host} ({role})").replace('/', "∕")
            } else {
                host.replace('/', "∕")
            };
            Row {
                test: if i % every == 0 { name } else { String::new() },
                metric: kind.headline().into(),
                values: of(kind.headline()),
                cpu_pct: of(mn::CPU_PCT),
                acceptable: vec![None; per.len()],
                interfered: vec![false; per.len()],
                ..Row::default()
            }
        })
        .collect()
}

/// Every how many bars a host is named so that names do not overlap (the
/// per-host table names them all).
pub fn label_every(name_lengths: impl Iterator<Item = usize>, bars: usize) -> usize {
    // The bar chart's plot area: the chart's width less its axes' label
    // areas and margins.
    let plot_w = (charts::W as i32 - charts::BARS_PLOT_MARGIN) as usize;
    let widest = name_lengths.max().unwrap_or(0) * charts::CHAR_W as usize + 10;
    (bars * widest).div_ceil(plot_w).max(1)
}

fn median(sorted: &[f64]) -> Option<f64> {
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2]),
        _ => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}

/// A pair's Mbit/s each way: its total split by its bytes each way, so
/// that the two always add up to the total shown.
fn each_way(p: &PairFigures) -> (f64, f64) {
    let (a, b) = (
        p.client_to_server_bytes as f64,
        p.server_to_client_bytes as f64,
    );
    if a + b > 0.0 {
        (p.mbit_s * a / (a + b), p.mbit_s * b / (a + b))
    } else {
        (0.0, 0.0)
    }
}

/// The endpoint pairs of one configuration's test. `collapse`: past
/// [`PAIRS_SHOWN`] pairs, only the slowest and the fastest are listed;
/// the min/median/max rows always cover every pair.
pub fn pair_table(name: &str, mh: &MultiHost, label_of: Option<&str>, collapse: bool) -> Table {
    let head: Vec<String> = [
        "client",
        "server",
        "connections",
        "client → server Mbit/s",
        "server → client Mbit/s",
        "Mbit/s",
    ]
    .map(String::from)
    .to_vec();
    let line = |p: &PairFigures| {
        let (up, down) = each_way(p);
        TRow::new(vec![
            p.client.clone(),
            p.server.clone(),
            p.conns.to_string(),
            num(Some(up)),
            num(Some(down)),
            num(Some(p.mbit_s)),
        ])
    };
    let n = mh.pairs.len();
    let mut rows = Vec::new();
    let collapsed = collapse && n > PAIRS_SHOWN;
    if collapsed {
        let mut by_rate: Vec<&PairFigures> = mh.pairs.iter().collect();
        by_rate.sort_by(|a, b| a.mbit_s.total_cmp(&b.mbit_s));
        let k = PAIRS_SHOWN / 2;
        rows.extend(by_rate[..k].iter().map(|p| line(p)));
        let mut gap = TRow::new(vec![String::new(); head.len()]);
        gap.cells[0] = format!("… {} more pairs", n - 2 * k);
        rows.push(gap);
        rows.extend(by_rate[n - k..].iter().map(|p| line(p)));
    } else {
        rows.extend(mh.pairs.iter().map(line));
    }
    if n > 1 {
        let col = |f: &dyn Fn(&PairFigures) -> f64| -> Vec<f64> {
            let mut v: Vec<f64> = mh.pairs.iter().map(f).collect();
            v.sort_by(f64::total_cmp);
            v
        };
        let cols = [
            col(&|p| p.conns as f64),
            col(&|p| each_way(p).0),
            col(&|p| each_way(p).1),
            col(&|p| p.mbit_s),
        ];
        let stat = |what: &str, f: &dyn Fn(&[f64]) -> Option<f64>| {
            let mut cells = vec![format!("{what} of {n} pairs"), String::new()];
            cells.push(count(f(&cols[0])));
            cells.extend(cols[1..].iter().map(|c| num(f(c))));
            total_row(cells)
        };
        rows.push(stat("min", &|v| v.first().copied()));
        rows.push(stat("median", &|v| median(v)));
        rows.push(stat("max", &|v| v.last().copied()));
        rows.push(stat("sum", &|v| Some(v.iter().sum())));
    }
    let fairness = match mh.totals.get(mn::PAIR_FAIRNESS) {
        Some(f) => format!("Jain's fairness over the pairs' Mbit/s: {:.3}", f),
        None => iotoll_run::jain_fairness(
            mh.pairs.len() as f64,
            mh.pairs.iter().map(|p| p.mbit_s).sum(),
            mh.pairs.iter().map(|p| p.mbit_s * p.mbit_s).sum(),
        )
        .map(|f| format!("Jain's fairness over the pairs' Mbit/s (from the pairs): {f:.3}"))
        .unwrap_or_else(|| "Jain's fairness: – (no pair moved data)".into()),
    };
    let mut note = format!(
        "{fairness} (1 = every pair the same). Each way: the pair's Mbit/s split by its bytes each way."
    );
    if collapsed {
        note.push_str(&format!(
            " The {k} slowest and {k} fastest of {n} pairs are listed; min, median and max are over all of them.",
            k = PAIRS_SHOWN / 2
        ));
    }
    Table {
        title: titled(name, "endpoint pairs", label_of),
        head,
        rows,
        note: Some(note),
    }
}

/// How far apart the windows opened and closed, and whether the clocks
/// could tell.
pub fn skew_text(s: &Skew) -> String {
    let mut t = format!(
        "Window skew: the hosts' windows opened within {} µs and closed within {} µs of each other (clock offsets known to ±{} µs).",
        num(Some(s.start)),
        num(Some(s.stop)),
        num(Some(s.clock))
    );
    if s.start < s.clock || s.stop < s.clock {
        t.push_str(" A skew below the clock uncertainty is not resolved: the windows may be closer or further apart than that.");
    }
    t
}

/// One piece of what a report shows of a multi-host test.
pub enum Part {
    Table(Table),
    Text(String),
    /// The per-host chart (HTML only): bars of throughput, CPU % points.
    Chart {
        title: String,
        y_label: &'static str,
        rows: Vec<Row>,
        /// Only every this many bars is named (too many hosts for all).
        thinned: Option<usize>,
    },
    /// A collapsed pair table's every pair (HTML only, folded away).
    AllPairs {
        table: Table,
        pairs: usize,
    },
}

/// What a report shows of the tests some configuration ran on several
/// hosts, in report order. Of each: with several configurations the hosts
/// side by side first; the per-host chart; then each configuration's
/// per-host table, skew and pairs.
pub fn parts(configs: &[ConfigData]) -> Vec<Part> {
    let labels: Vec<String> = configs.iter().map(|c| c.label.clone()).collect();
    let many = configs.len() > 1;
    let mut out = Vec::new();
    for first in first_tests(configs) {
        let (name, kind) = (first.name.as_str(), first.kind);
        // The test's breakdown in each configuration (None where the
        // configuration lacks the test or ran it on one host).
        let per: Vec<Option<&MultiHost>> = (configs.iter())
            .map(|c| c.test(name)?.multi.as_ref())
            .collect();
        if per.iter().all(Option::is_none) {
            continue;
        }
        if many {
            out.push(Part::Table(host_comparison(name, kind, &per, &labels)));
        }
        let rows = chart_rows(kind, &per);
        let named = rows.iter().filter(|r| !r.test.is_empty()).count();
        out.push(Part::Chart {
            title: format!("{name}: {} per host", label(kind.headline())),
            y_label: label(kind.headline()),
            thinned: (named < rows.len()).then(|| rows.len().div_ceil(named.max(1))),
            rows,
        });
        for (ci, mh) in per.iter().enumerate() {
            let Some(mh) = mh else {
                if many {
                    out.push(Part::Text(format!(
                        "{}: {name} ran on one host (no per-host figures).",
                        labels[ci]
                    )));
                }
                continue;
            };
            let l = many.then_some(labels[ci].as_str());
            out.push(Part::Table(host_table(name, kind, mh, l)));
            if let Some(s) = &mh.skew_us {
                let prefix = l.map(|l| format!("{l}: ")).unwrap_or_default();
                out.push(Part::Text(format!("{prefix}{}", skew_text(s))));
            }
            // Per adapter of multi-homed hosts (crate::tables).
            if let Some(t) = crate::tables::adapter_table(name, mh, l) {
                out.push(Part::Table(t));
            }
            let bytes = pair_figures::moves_bytes(&mh.pairs);
            if !mh.pairs.is_empty() && bytes {
                out.push(Part::Table(pair_table(name, mh, l, true)));
            }
            let title = titled(name, "endpoint pairs' {what}", l);
            if let Some(t) = pair_figures::pair_table(&title, &mh.pairs, &mh.totals) {
                out.push(Part::Table(t));
            }
            if bytes && mh.pairs.len() > PAIRS_SHOWN {
                out.push(Part::AllPairs {
                    table: pair_table(name, mh, l, false),
                    pairs: mh.pairs.len(),
                });
            }
        }
    }
    out
}

pub mod pair_figures;
#[cfg(test)]
mod tests;
