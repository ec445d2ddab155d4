//! A multi-host test's result document, assembled from its hosts'
//! checked reports: per-host rows, pairs, totals and the CPU weighted by
//! machine.

use super::{Console, DiskTest, DriveTimes, NetTest, Part, PerPair};
use crate::per_s;
use crate::wire::{AgentReport, Work};
use iotoll_model::metrics as mn;
use iotoll_model::spec::{NetSpec, Spec};
use iotoll_model::SeriesPoint;
use iotoll_model::{
    CpuReport, CpuSection, HostFigures, Kind, Metrics, PairFigures, ResultDoc, ResultStatus, Skew,
};
use iotoll_net::TestKind;
use iotoll_probe::affinity::format_cpu_list;
use std::time::Duration;

/// What a network test's hosts reported: their rows and series, and per
/// pair the bytes each way (as the receiving end counted them, with its
/// window, seconds) and the connections.
#[derive(Default)]
struct NetHosts {
    hosts: Vec<HostFigures>,
    seconds: Vec<(usize, Vec<SeriesPoint>)>,
    c2s: Vec<(u64, f64)>,
    s2c: Vec<(u64, f64)>,
    conns: Vec<u32>,
    /// The most engine threads a host ran.
    threads: u32,
    errors: u64,
    retransmits: u64,
    interrupted: bool,
    notes: Vec<String>,
}

impl Console {
    /// One host's row: its CPU, its window against the schedule.
    fn host_row(
        &self,
        p: &Part,
        r: &AgentReport,
        times: &DriveTimes,
        mut metrics: Metrics,
    ) -> HostFigures {
        let h = &self.hosts[p.host];
        let info = self.agent(p.host).map(|a| &a.info);
        if let Some(c) = &r.cpu {
            c.write_metrics(&mut metrics, "");
        }
        metrics.insert(mn::WINDOW_S.into(), r.window_s);
        iotoll_model::derive_metrics(&mut metrics);
        let console = |ns: Option<i64>, at: i64| {
            ns.map_or(0.0, |n| (n - p.offset.offset_ns - at) as f64 / 1e3)
        };
        let mut notes = r.notes.clone();
        if let Some(e) = &r.cpu_error {
            notes.push(format!("CPU not measured: {e}"));
        }
        HostFigures {
            name: h.name.clone(),
            address: h.address.to_string(),
            role: p.role.to_string(),
            cpus: r
                .cpu
                .as_ref()
                .map_or_else(|| info.map_or(0, |i| i.cpus), |c| c.cpus),
            boot_id: info.and_then(|i| i.boot_id.clone()),
            metrics,
            cpu: r.cpu.clone(),
            on_us: console(r.on_ns, times.on_ns),
            off_us: console(r.off_ns, times.off_ns),
            disclosure: info.map(|i| i.disclosure.clone()),
            notes,
            // Rates over the window the counters were read on (the host's).
            ifaces: (r.ifaces.iter())
                .map(|i| i.clone().with_rates(r.window_s))
                .collect(),
        }
    }

    pub(super) fn net_doc(
        &self,
        t: &NetTest,
        parts: &[Part],
        names: &[(String, String)],
        times: &DriveTimes,
        per_pair: &PerPair,
    ) -> ResultDoc {
        let mut g = self.net_hosts(parts, names, times);
        let rate = |(b, w): (u64, f64)| mbit_s(b, w);
        let mut pairs: Vec<PairFigures> = (names.iter().enumerate())
            .map(|(k, (c, s))| PairFigures {
                client: c.clone(),
                server: s.clone(),
                conns: g.conns[k],
                client_to_server_bytes: g.c2s[k].0,
                server_to_client_bytes: g.s2c[k].0,
                mbit_s: rate(g.c2s[k]) + rate(g.s2c[k]),
                ..Default::default()
            })
            .collect();
        if let PerPair::Udp(ways) = per_pair {
            super::udp::write_pairs(ways, &mut pairs);
        }
        let series = crate::series::merge(&g.hosts, &g.seconds);
        let mut m = Metrics::new();
        m.insert(mn::TX_MBIT_S.into(), g.c2s.iter().map(|x| rate(*x)).sum());
        m.insert(mn::RX_MBIT_S.into(), g.s2c.iter().map(|x| rate(*x)).sum());
        m.insert(mn::MBIT_S.into(), pairs.iter().map(|p| p.mbit_s).sum());
        m.insert(mn::CONNS.into(), g.conns.iter().map(|c| *c as f64).sum());
        m.insert(mn::PAIRS.into(), pairs.len() as f64);
        m.insert(mn::HOSTS.into(), g.hosts.len() as f64);
        m.insert(mn::ERRORS.into(), g.errors as f64);
        m.insert(mn::RETRANSMITS.into(), g.retransmits as f64);
        let rates: Vec<f64> = pairs.iter().map(|p| p.mbit_s).collect();
        let sum: f64 = rates.iter().sum();
        let sum_sq: f64 = rates.iter().map(|r| r * r).sum();
        if let Some(f) = iotoll_run::jain_fairness(rates.len() as f64, sum, sum_sq) {
            m.insert(mn::PAIR_FAIRNESS.into(), f);
        }
        m.insert(mn::WINDOW_S.into(), mean_window(&g.hosts));
        match per_pair {
            PerPair::Rr(rtts) => {
                // A pair's transactions are its client's, over its client's window.
                let windows: Vec<f64> = g.s2c.iter().map(|(_, w)| *w).collect();
                super::rr::write(rtts, &windows, &mut pairs, &mut m);
            }
            PerPair::Udp(ways) => {
                super::udp::host_rates(&pairs, &mut g.hosts);
                g.notes
                    .extend(super::udp::write_totals(ways, &pairs, &mut m));
                // Each pair's client offers `rate` on its own.
                g.notes.extend(ways.iter().zip(&pairs).filter_map(|(w, p)| {
                    let who = format!("pair {} > {}: {}", p.client, p.server, p.client);
                    w.short_of_rate(&who, t.params.rate)
                }))
            }
            PerPair::Rate(rates) => {
                let linger0 = t.params.linger0;
                g.notes
                    .extend(super::crr::write(rates, linger0, &mut pairs, &mut m));
                super::crr::host_latencies(rates, &pairs, &mut g.hosts);
                if !linger0 {
                    let rate = m.get(mn::CONN_S).copied().unwrap_or(0.0);
                    g.notes
                        .extend(iotoll_net::crr::fell_at_window(&series, rate));
                }
            }
            PerPair::Bytes => {}
        }
        // A host in both roles is in both figures.
        let local = weighted_cpu(&g.hosts, |h| h.role != "server");
        let remote = weighted_cpu(&g.hosts, |h| h.role != "client");
        if let Some(c) = &local {
            c.write_metrics(&mut m, "");
        }
        if let Some(c) = &remote {
            c.write_metrics(&mut m, "remote_");
        }
        iotoll_model::derive_metrics(&mut m);
        let same_host = shared_kernel(&g.hosts);
        if same_host {
            g.notes.push(one_kernel_note(
                &g.hosts,
                ", and the clients' and servers' CPU are the same figure",
            ));
        }
        if g.interrupted {
            g.notes
                .push("a window was cut short (the test was stopped)".into());
        }
        let config = t.config.clone();
        let kind = match per_pair {
            PerPair::Rr(_) => Kind::NetRr,
            PerPair::Udp(_) => Kind::NetUdp,
            PerPair::Rate(_) if t.params.kind == TestKind::Cc => Kind::NetCc,
            PerPair::Rate(_) => Kind::NetCrr,
            PerPair::Bytes => Kind::NetStream,
        };
        let base = multi_host_doc(kind, g.interrupted, times, config, m, g.notes);
        ResultDoc {
            spec: self.net_spec(t, parts, g.threads),
            cpu: CpuSection {
                local,
                remote,
                same_host: Some(same_host),
            },
            series,
            hosts: g.hosts,
            pairs,
            skew_us: Some(skew(parts)),
            ..base
        }
    }

    /// Each host's row of a network test, and what its report says of
    /// each pair it had a side of.
    fn net_hosts(
        &self,
        parts: &[Part],
        names: &[(String, String)],
        times: &DriveTimes,
    ) -> NetHosts {
        let n = names.len();
        let mut g = NetHosts {
            c2s: vec![(0, 0.0); n],
            s2c: vec![(0, 0.0); n],
            conns: vec![0; n],
            ..Default::default()
        };
        let mut threads = Vec::new();
        // Request/response: each pair's transactions, from its client.
        let (mut pair_trans, mut rr) = (vec![0u64; n], false);
        for r in parts.iter().filter_map(|p| p.report.as_ref()) {
            rr |= !r.rr.is_empty();
            for x in r.rr.iter().filter(|x| (x.pair as usize) < n) {
                pair_trans[x.pair as usize] = x.transactions;
            }
        }
        for p in parts {
            let Some(r) = &p.report else { continue };
            let (mut rx, mut tx) = (0u64, 0u64);
            for pb in &r.pairs {
                let k = pb.pair as usize;
                if k >= n {
                    continue;
                }
                rx += pb.rx;
                tx += pb.tx;
                if p.serves_pair(pb.pair) {
                    g.c2s[k] = (pb.rx, r.window_s);
                    g.conns[k] = pb.conns;
                } else {
                    g.s2c[k] = (pb.rx, r.window_s);
                }
            }
            g.errors += r.errors;
            if r.threads > 0 {
                threads.push((r.threads, self.hosts[p.host].name.as_str()));
            }
            g.retransmits += r.retransmits;
            g.interrupted |= r.interrupted;
            if let Some(e) = &r.first_error {
                g.notes.push(format!(
                    "host {}: {} connection(s) failed; first: {e}",
                    self.hosts[p.host].name, r.errors
                ));
            }
            let rate = |b: u64| mbit_s(b, r.window_s);
            let mut m = Metrics::from([
                (mn::RX_MBIT_S.into(), rate(rx)),
                (mn::TX_MBIT_S.into(), rate(tx)),
                (mn::MBIT_S.into(), rate(rx) + rate(tx)),
                (
                    mn::CONNS.into(),
                    r.pairs.iter().map(|p| p.conns as f64).sum(),
                ),
            ]);
            if rr && r.window_s > 0.0 {
                // The transactions this host took part in, either end: its
                // CPU per transaction (cpu_us_per_trans) is of those.
                let n: u64 = (r.pairs.iter())
                    .filter_map(|pb| pair_trans.get(pb.pair as usize))
                    .sum();
                m.insert(mn::TRANS_S.into(), n as f64 / r.window_s);
            }
            if !r.crr.is_empty() {
                // The connections this host took part in, either end: its
                // CPU per connection (cpu_us_per_conn) is of those.
                let ends = r.crr.iter().map(|c| {
                    c.client.as_ref().map_or(0, |c| c.window_done)
                        + c.server.as_ref().map_or(0, |s| s.window_done)
                });
                let n: u64 = ends.sum();
                m.insert(mn::CONN_S.into(), per_s(n as f64, r.window_s));
                for k in [mn::MBIT_S, mn::TX_MBIT_S, mn::RX_MBIT_S] {
                    m.remove(k);
                }
            }
            g.seconds.push((g.hosts.len(), r.series.clone()));
            g.hosts.push(self.host_row(p, r, times, m));
        }
        // Most threads first; hosts in the test's order within a count.
        threads.sort_by_key(|t| std::cmp::Reverse(t.0));
        g.threads = threads.first().map_or(0, |t| t.0);
        let said: Vec<String> = (threads.chunk_by(|a, b| a.0 == b.0))
            .map(|c| {
                let hosts: Vec<&str> = c.iter().map(|t| t.1).collect();
                format!("{} on {}", c[0].0, hosts.join(", "))
            })
            .collect();
        if !said.is_empty() {
            g.notes.push(format!("engine threads: {}", said.join("; ")));
        }
        g
    }

    /// The spec of a network test across hosts: its servers are its peer.
    /// `threads`: the most any host ran.
    fn net_spec(&self, t: &NetTest, parts: &[Part], threads: u32) -> Spec {
        let servers: Vec<String> = (parts.iter())
            .filter(|p| matches!(p.work, Work::NetServe { .. }))
            .map(|p| self.hosts[p.host].address.to_string())
            .collect();
        let net = NetSpec {
            peer: servers.join(","),
            conns: t.params.conns,
            sockbuf: t.params.sockbuf,
            nodelay: t.params.nodelay,
            bind: vec![],
            ramp_s: t.params.ramp_ms as f64 / 1e3,
            time_s: t.params.time_ms as f64 / 1e3,
            threads: threads as usize,
            auth: self.key.is_some(),
            tls: t.params.tls.clone(),
            verify: t.params.verify,
        };
        t.params.spec(net)
    }

    pub(super) fn disk_doc(&self, t: &DiskTest, parts: &[Part], times: &DriveTimes) -> ResultDoc {
        let mut notes = Vec::new();
        let mut hosts = Vec::new();
        let mut m = Metrics::new();
        let mut interrupted = false;
        let mut lat_weighted = 0.0;
        let mut first_spec = None;
        let mut seconds = Vec::new();
        const SUMMED: [&str; 7] = [
            mn::IOPS,
            mn::READ_IOPS,
            mn::WRITE_IOPS,
            mn::MB_S,
            mn::READ_MB_S,
            mn::WRITE_MB_S,
            mn::ERRORS,
        ];
        for p in parts {
            let Some(r) = &p.report else { continue };
            interrupted |= r.interrupted;
            let mut hm = Metrics::new();
            if let Some(d) = &r.disk {
                let per_host = [
                    mn::LAT_MEAN_US,
                    mn::LAT_P99_US,
                    mn::LAT_MAX_US,
                    mn::QD_ACHIEVED,
                ];
                for k in SUMMED.iter().chain(&per_host) {
                    hm.extend(d.metrics.get(*k).map(|v| (k.to_string(), *v)));
                }
                let get = |k| d.metrics.get(k).copied().unwrap_or(0.0);
                for k in SUMMED {
                    *m.entry(k.to_string()).or_insert(0.0) += get(k);
                }
                lat_weighted += get(mn::IOPS) * get(mn::LAT_MEAN_US);
                if let Some(v) = d.metrics.get(mn::LAT_MAX_US) {
                    let e = m.entry(mn::LAT_MAX_US.to_string()).or_insert(0.0);
                    *e = e.max(*v);
                }
                first_spec = first_spec.or_else(|| Some(d.spec.clone()));
                notes.extend(
                    d.notes
                        .iter()
                        .map(|n| format!("host {}: {n}", self.hosts[p.host].name)),
                );
                seconds.push((hosts.len(), d.series.clone()));
            }
            hosts.push(self.host_row(p, r, times, hm));
        }
        if let Some(iops) = m.get(mn::IOPS).copied().filter(|i| *i > 0.0) {
            m.insert(mn::LAT_MEAN_US.into(), lat_weighted / iops);
        }
        notes.push("latency percentiles are per host (hosts[].metrics); the totals give the mean (weighted by I/Os) and the maximum".into());
        m.insert(mn::WINDOW_S.into(), mean_window(&hosts));
        m.insert(mn::HOSTS.into(), hosts.len() as f64);
        let local = weighted_cpu(&hosts, |_| true);
        if let Some(c) = &local {
            c.write_metrics(&mut m, "");
        }
        iotoll_model::derive_metrics(&mut m);
        if shared_kernel(&hosts) && hosts.len() > 1 {
            notes.push(one_kernel_note(&hosts, ""));
        }
        let config = t.order.config.clone();
        let base = multi_host_doc(Kind::Disk, interrupted, times, config, m, notes);
        ResultDoc {
            spec: first_spec.unwrap_or_default(),
            cpu: CpuSection {
                local,
                remote: None,
                same_host: None,
            },
            series: crate::series::merge(&hosts, &seconds),
            hosts,
            skew_us: Some(skew(parts)),
            ..base
        }
    }
}

/// A multi-host result's common parts; the caller adds its spec, CPU,
/// hosts, pairs and skew.
fn multi_host_doc(
    kind: Kind,
    interrupted: bool,
    times: &DriveTimes,
    config: Option<String>,
    metrics: Metrics,
    notes: Vec<String>,
) -> ResultDoc {
    ResultDoc {
        status: if interrupted {
            ResultStatus::Interrupted
        } else {
            ResultStatus::Complete
        },
        started_at: rfc3339(times.on_ns),
        config,
        metrics,
        notes,
        ..ResultDoc::new(kind, Default::default())
    }
}

/// `bytes` over `window_s`, Mbit/s (0 without a window).
fn mbit_s(bytes: u64, window_s: f64) -> f64 {
    per_s(bytes as f64 * 8.0, window_s) / 1e6
}

/// The hosts' mean window, seconds (0 without hosts).
fn mean_window(hosts: &[HostFigures]) -> f64 {
    let w = hosts
        .iter()
        .map(|h| h.metrics.get(mn::WINDOW_S).copied().unwrap_or(0.0));
    match hosts.len() {
        0 => 0.0,
        n => w.sum::<f64>() / n as f64,
    }
}

/// The CPU of the hosts `which` selects, each machine once (hosts that
/// share a kernel boot id share its CPU), weighted by CPU count.
pub(super) fn weighted_cpu(
    hosts: &[HostFigures],
    which: impl Fn(&HostFigures) -> bool,
) -> Option<CpuReport> {
    let measured = hosts.iter().filter(|h| which(h) && h.cpu.is_some());
    let reports: Vec<&CpuReport> = (HostFigures::one_per_machine(measured).into_iter())
        .filter_map(|h| h.cpu.as_ref())
        .collect();
    CpuReport::weighted(&reports)
}

/// What is and is not separate when every host runs on one kernel;
/// `shared_tail` finishes the sentence when no host has CPUs of its own.
pub(super) fn one_kernel_note(hosts: &[HostFigures], shared_tail: &str) -> String {
    // Grouped by set: 16 clients sharing one CPU are one phrase, not 16.
    let mut sets: Vec<(&[u32], Vec<&str>)> = Vec::new();
    for h in hosts {
        let Some(c) = h.cpu.as_ref().and_then(|c| c.own_cpus.as_deref()) else {
            continue;
        };
        match sets.iter_mut().find(|(s, _)| *s == c) {
            Some((_, names)) => names.push(&h.name),
            None => sets.push((c, vec![&h.name])),
        }
    }
    let own: Vec<String> = (sets.iter())
        .map(|(c, names)| match names[..] {
            [one] => format!("{one} on CPUs {}", format_cpu_list(c)),
            _ => format!("{} sharing CPUs {}", names.join(", "), format_cpu_list(c)),
        })
        .collect();
    if own.is_empty() {
        return format!("every host runs on one kernel (a lab on one machine): each host's CPU is that machine's CPU{shared_tail}");
    }
    format!(
        "every host runs on one kernel (a lab on one machine); hosts with CPUs of their own ({}) are measured on those CPUs and count separately in the totals (a shared set once), weighted by their CPU counts, but memory bandwidth, caches and the veth path between hosts stay shared; hosts without own CPUs report the machine's CPU",
        own.join(", ")
    )
}

/// Every host on one kernel (all boot ids known and equal).
pub(super) fn shared_kernel(hosts: &[HostFigures]) -> bool {
    let ids: Vec<Option<&str>> = hosts.iter().map(|h| h.boot_id.as_deref()).collect();
    ids.first().is_some_and(|f| f.is_some()) && ids.windows(2).all(|w| w[0] == w[1])
}

/// How far apart the windows opened and closed, on the console's clock.
fn skew(parts: &[Part]) -> Skew {
    let spread = |f: &dyn Fn(&AgentReport) -> Option<i64>| -> f64 {
        let v: Vec<i64> = (parts.iter())
            .filter_map(|p| Some(f(p.report.as_ref()?)? - p.offset.offset_ns))
            .collect();
        match (v.iter().max(), v.iter().min()) {
            (Some(a), Some(b)) => (a - b) as f64 / 1e3,
            _ => 0.0,
        }
    };
    Skew {
        start: spread(&|r| r.on_ns),
        stop: spread(&|r| r.off_ns),
        clock: parts.iter().map(|p| p.offset.rtt_ns).max().unwrap_or(0) as f64 / 2e3,
    }
}

fn rfc3339(ns: i64) -> String {
    let t = std::time::UNIX_EPOCH + Duration::from_nanos(ns.max(0) as u64);
    humantime::format_rfc3339_seconds(t).to_string()
}
