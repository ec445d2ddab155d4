//! The results tables: a kind's key metrics, every metric of a test, the
//! main metric by test across configurations, efficiency, and the
//! adapters of multi-homed hosts.

use super::{
    ci_cell, cpu_cell, kind_title, kinds, metric_cell, remote_cpu_metric, same_host,
    same_host_label, test_cell, test_names, TRow, Table,
};
use crate::compare::{distinct, first_tests, Comparison, ConfigData, TestData};
use crate::fmt::{num, pct};
use crate::info::RunInfo;
use iotoll_model::metrics::{self as mn, label};
use iotoll_model::Kind;
use std::collections::BTreeSet;

fn metric_columns(kind: Kind) -> &'static [&'static str] {
    match kind {
        Kind::Disk => &[
            mn::IOPS,
            mn::MB_S,
            mn::LAT_MEAN_US,
            mn::LAT_P99_US,
            mn::QD_ACHIEVED,
            mn::CPU_PCT,
            mn::CPU_OTHERS_PCT,
            mn::IOPS_PER_CPU_PCT,
            mn::MB_S_PER_CPU_PCT,
            mn::CPU_US_PER_IO,
        ],
        Kind::NetStream => &[
            mn::MBIT_S,
            mn::CONNS,
            mn::RETRANSMITS,
            mn::FAIRNESS,
            mn::CPU_PCT,
            mn::CPU_OTHERS_PCT,
            mn::REMOTE_CPU_PCT,
            mn::MBIT_S_PER_CPU_PCT,
            mn::REMOTE_MBIT_S_PER_CPU_PCT,
            mn::CPU_US_PER_KB,
        ],
        Kind::NetUdp => &[
            mn::MBIT_S,
            mn::OFFERED_MBIT_S,
            mn::LOSS_PCT,
            mn::JITTER_US,
            mn::OUT_OF_ORDER,
            mn::CPU_PCT,
            mn::REMOTE_CPU_PCT,
            mn::MBIT_S_PER_CPU_PCT,
            mn::CPU_US_PER_KB,
        ],
        Kind::NetRr => &[
            mn::TRANS_S,
            mn::CONNS,
            mn::RTT_MEAN_US,
            mn::RTT_P99_US,
            mn::LATENCY_ONE_WAY_US,
            mn::CPU_PCT,
            mn::CPU_OTHERS_PCT,
            mn::REMOTE_CPU_PCT,
            mn::CPU_US_PER_TRANS,
        ],
        Kind::NetCrr | Kind::NetCc => &[
            mn::CONN_S,
            mn::CONNS,
            mn::CONNECT_P99_US,
            mn::TRANS_MEAN_US,
            mn::FAILURES,
            mn::CPU_PCT,
            mn::REMOTE_CPU_PCT,
            mn::CONN_S_PER_CPU_PCT,
            mn::CPU_US_PER_CONN,
        ],
    }
}

/// A multi-host test's multi-homed hosts (more than one adapter): what
/// each adapter received and sent over the host's window, from its
/// interface counters (headers included), and the host's adapters
/// together beside the payload its pairs counted. None when no host has
/// several adapters.
pub fn adapter_table(
    name: &str,
    mh: &crate::compare::MultiHost,
    label_of: Option<&str>,
) -> Option<Table> {
    let window = mh.totals.get(mn::WINDOW_S).copied().unwrap_or(0.0);
    let hosts: Vec<_> = mh.hosts.iter().filter(|h| h.ifaces.len() > 1).collect();
    if hosts.is_empty() {
        return None;
    }
    let mut rows = Vec::new();
    for h in hosts {
        let w = h.cpu.as_ref().map_or(window, |c| c.window_s);
        let ifaces: Vec<_> = h.ifaces.iter().map(|i| i.rated(w)).collect();
        let wire: f64 = ifaces.iter().filter_map(|i| i.mbit_s()).sum();
        for i in &ifaces {
            let share = i.mbit_s().filter(|_| wire > 0.0).map(|v| v / wire * 100.0);
            rows.push(TRow::new(vec![
                h.name.clone(),
                i.name.clone(),
                num(i.rx_mbit_s),
                num(i.tx_mbit_s),
                num(i.mbit_s()),
                share.map_or("–".into(), |v| format!("{v:.1}")),
            ]));
        }
        let sum = |f: fn(&iotoll_model::IfaceFigures) -> Option<f64>| {
            ifaces.iter().map(f).sum::<Option<f64>>()
        };
        rows.push(TRow {
            total: true,
            ..TRow::new(vec![
                h.name.clone(),
                format!(
                    "all adapters (payload {} Mbit/s)",
                    num(h.metrics.get(mn::MBIT_S).copied())
                ),
                num(sum(|i| i.rx_mbit_s)),
                num(sum(|i| i.tx_mbit_s)),
                num(Some(wire)),
                if wire > 0.0 {
                    "100.0".into()
                } else {
                    "–".into()
                },
            ])
        });
    }
    let prefix = label_of.map(|l| format!("{l}: ")).unwrap_or_default();
    Some(Table {
        title: format!(
            "{prefix}{name}: per adapter ({})",
            crate::reps::host_table_source(mh)
        ),
        head: ["host", "adapter", "received Mbit/s", "sent Mbit/s", "Mbit/s", "share %"]
            .map(String::from)
            .to_vec(),
        rows,
        note: Some("Each adapter's interface counters over its host's window: bytes on the wire, headers included, so the adapters together carry a little more than the payload (goodput) the host's pairs counted.".into()),
    })
}

/// Per kind: the key metrics of every test (a row per configuration when
/// there are several).
pub fn metrics(configs: &[ConfigData], infos: &[RunInfo]) -> Vec<Table> {
    let many = configs.len() > 1;
    let mut out = Vec::new();
    for kind in kinds(configs) {
        let names = test_names(configs, kind);
        // Whether `f` holds of some test in some configuration.
        let any = |f: &dyn Fn(usize, &str) -> bool| {
            (names.iter()).any(|n| (0..configs.len()).any(|ci| f(ci, n)))
        };
        let cols: Vec<&str> = (metric_columns(kind).iter().copied())
            .filter(|m| {
                any(&|ci, n| {
                    let has = configs[ci]
                        .test(n)
                        .is_some_and(|t| t.metrics.contains_key(*m));
                    has && !(remote_cpu_metric(m) && same_host(infos, ci, n))
                })
            })
            .collect();
        let any_same_host = any(&|ci, n| same_host(infos, ci, n));
        // Disk throughput in Mbit/s when every test of the table's
        // configurations asks (suite key unit = "mbit_s").
        let mbit = kind == Kind::Disk
            && (configs.iter().flat_map(|c| &c.tests))
                .filter(|t| t.kind == kind)
                .all(|t| iotoll_model::ci::wants_mbit(t.kind, &t.params));
        let in_unit = |m: &str| iotoll_model::ci::disk_mbit(m).filter(|_| mbit);
        let ci_of = |ci: usize, n: &str| infos.get(ci).and_then(|i| i.test(n)?.ci95.clone());
        let any_ci = any(&|ci, n| ci_of(ci, n).is_some());
        let mut head = vec!["test".to_string()];
        if many {
            head.push("configuration".into());
        }
        head.extend((cols.iter()).map(|m| in_unit(m).map_or(label(m), |(l, _)| l).to_string()));
        if any_ci {
            head.push("95 % CI (mean of reps)".into());
        }
        let mut rows = Vec::new();
        let mut any_interfered = false;
        for n in &names {
            for (ci, cfg) in configs.iter().enumerate() {
                let Some(t) = configs[ci].test(n) else {
                    continue;
                };
                let sh = same_host(infos, ci, n);
                let warn = t.repeatable == Some(false);
                // Flagged as in the suite's table and the findings.
                let interfered = (infos.get(ci).and_then(|i| i.test(n)?.interfered)) == Some(true);
                any_interfered |= interfered;
                let flag = if interfered { " ⚑" } else { "" };
                let mut cells = vec![format!("{}{flag}", test_cell(n, warn))];
                if many {
                    cells.push(cfg.label.clone());
                }
                for m in &cols {
                    let v = t.metrics.get(*m).copied();
                    cells.push(metric_cell(
                        m,
                        in_unit(m).map_or(v, |(_, f)| v.map(|v| v * f)),
                        sh,
                    ));
                }
                if any_ci {
                    cells
                        .push(ci_of(ci, n).map_or("–".into(), |c| ci_cell(&c, in_unit(&c.metric))));
                }
                rows.push(TRow::plain(cells, many.then_some(ci), warn));
            }
        }
        let mut note = String::from(
            "Efficiency = throughput / whole-host CPU % of the same row; service demand = busy CPU-µs of the whole host per unit.",
        );
        if any_same_host {
            note.push_str(" (same host): the peer ran on this host, so its CPU is this host's and is not shown as a second machine's.");
        }
        if any_interfered {
            note.push_str(" ⚑: other processes used the CPU during the test (interference); its CPU figures include their work.");
        }
        if any_ci {
            note.push_str(" 95 % CI: the confidence interval of the mean of the selection metric over the test's repetitions (Student t, n − 1 degrees of freedom), given for 3 or more; the figure beside it is the selection (median repetition or mean).");
        }
        if mbit {
            note.push_str(" Disk throughput in Mbit/s as the suite asks (MB/s × 8, both decimal).");
        }
        out.push(Table {
            title: format!("{}: results", kind_title(kind)),
            head,
            rows,
            note: Some(note),
        });
    }
    out
}

/// Per test: every metric, one column per configuration.
pub fn every_metric(configs: &[ConfigData], infos: &[RunInfo]) -> Vec<Table> {
    first_tests(configs)
        .iter()
        .map(|t| {
            let n = &t.name;
            let per: Vec<Option<&TestData>> = configs.iter().map(|c| c.test(n)).collect();
            let keys: BTreeSet<&String> = per
                .iter()
                .flatten()
                .flat_map(|t| t.metrics.keys())
                .collect();
            let mut head = vec!["metric".to_string()];
            head.extend(configs.iter().map(|c| c.label.clone()));
            let mut hidden = false;
            let rows = keys
                .iter()
                .filter(|k| {
                    let hide = remote_cpu_metric(k)
                        && (0..configs.len())
                            .all(|ci| per[ci].is_none() || same_host(infos, ci, n));
                    hidden |= hide;
                    !hide
                })
                .map(|k| {
                    let mut cells = vec![format!("{} ({k})", label(k))];
                    for (ci, t) in per.iter().enumerate() {
                        let v = t.and_then(|t| t.metrics.get(*k).copied());
                        cells.push(metric_cell(k, v, same_host(infos, ci, n)));
                    }
                    TRow::new(cells)
                })
                .collect();
            Table {
                title: n.clone(),
                head,
                rows,
                note: hidden.then(|| {
                    "The peer ran on this host: its CPU figures are this host's and are left out."
                        .into()
                }),
            }
        })
        .collect()
}

/// The main metric of every test side by side: each configuration's value
/// and CPU %, the differences against the baseline, and the workload
/// parameters in which the paired tests differ.
pub fn comparison(c: &Comparison) -> Table {
    let many = c.configs.len() > 1;
    let any_differs = c.rows.iter().any(|r| !r.differs.is_empty());
    let mut head = vec!["test".to_string(), "group".into(), "metric".into()];
    for l in &c.configs {
        head.push(l.clone());
        head.push(if many {
            format!("CPU % {l}")
        } else {
            "CPU %".into()
        });
    }
    for l in c.configs.iter().skip(1) {
        head.push(format!("Δ {l}"));
    }
    if any_differs {
        head.push("workload differs".into());
    }
    let rows = c
        .rows
        .iter()
        .map(|r| {
            let mut cells = vec![
                test_cell(&r.test, r.not_repeatable),
                r.group.clone(),
                label(&r.metric).to_string(),
            ];
            for (i, v) in r.values.iter().enumerate() {
                let interfered = r.interfered.get(i).copied().unwrap_or(false);
                cells.push(format!("{}{}", num(*v), if interfered { " ⚑" } else { "" }));
                cells.push(format!(
                    "{}{}",
                    cpu_cell(r.cpu_pct[i]),
                    if r.acceptable[i] == Some(false) {
                        " ✗"
                    } else {
                        ""
                    }
                ));
            }
            cells.extend(r.diff_pct.iter().map(|d| pct(*d)));
            if any_differs {
                cells.push(r.differs.join(", "));
            }
            let mut row = TRow::plain(cells, None, r.not_repeatable);
            // Only the workload's cell, the last, is ever marked.
            if let Some(d) = row.cell_diff.last_mut() {
                *d = !r.differs.is_empty();
            }
            row
        })
        .collect();
    let mut notes = Vec::new();
    if let Some(th) = c.cpu_threshold_pct {
        notes.push(format!(
            "✗: CPU above the {} % threshold.",
            crate::fmt::tick(th)
        ));
    }
    if c.rows.iter().any(|r| r.interfered.iter().any(|i| *i)) {
        notes.push("⚑: other processes used the CPU during this configuration's test (interference); its CPU figures include their work.".into());
    }
    if any_differs {
        notes.push("Workload differs (highlighted): the paired tests did not run the same parameters, so their difference is not the configurations' alone.".into());
    }
    Table {
        title: "Main metric by test".into(),
        head,
        rows,
        note: (!notes.is_empty()).then(|| notes.join(" ")),
    }
}

/// Per result kind: each configuration's mean efficiency over the tests of
/// that kind every configuration has, and its ratio to the baseline.
pub fn efficiency(c: &Comparison, configs: &[ConfigData]) -> Vec<Table> {
    distinct(c.efficiency.iter().map(|e| (e.kind, e.class.clone())))
        .into_iter()
        .filter_map(|(kind, class)| {
            let of: Vec<&crate::compare::Efficiency> = c
                .efficiency
                .iter()
                .filter(|e| e.kind == kind && e.class == class)
                .collect();
            let metrics: Vec<&str> = kind
                .efficiency()
                .filter(|m| of.iter().any(|e| e.means.contains_key(*m)) || remote_cpu_metric(m) && of.iter().any(|e| same_host_label(configs, &e.label)))
                .collect();
            if metrics.is_empty() {
                return None;
            }
            let many = of.len() > 1;
            let mut head = vec!["configuration".to_string(), "tests".into()];
            for m in &metrics {
                head.push(label(m).to_string());
                if many {
                    head.push(format!("× {}", of[0].label));
                }
            }
            let rows = of
                .iter()
                .enumerate()
                .map(|(ci, e)| {
                    let sh = same_host_label(configs, &e.label);
                    let mut cells = vec![e.label.clone(), e.tests.to_string()];
                    for m in &metrics {
                        let v = e.means.get(*m).copied();
                        let b = of[0].means.get(*m).copied();
                        let hide = remote_cpu_metric(m)
                            && (sh || same_host_label(configs, &of[0].label));
                        cells.push(metric_cell(m, v, sh));
                        if many {
                            cells.push(match (v, b) {
                                (Some(v), Some(b)) if b > 0.0 && ci > 0 && !hide => {
                                    format!("{:.2} ×", v / b)
                                }
                                _ => "–".into(),
                            });
                        }
                    }
                    TRow::plain(cells, many.then_some(ci), false)
                })
                .collect();
            Some(Table {
                // Like tests only: one mean over 4k and 1m tests says little.
                title: match class.as_str() {
                    "" => format!("{}: efficiency", kind_title(kind)),
                    cl => format!("{}, {cl} transfers: efficiency", kind_title(kind)),
                },
                head,
                rows,
                note: Some(format!("Mean of the per-test values over the tests of this kind and transfer-size class that every configuration has ({}). Higher is better for “per % CPU”, lower for CPU µs.", of[0].names.join(", "))),
            })
        })
        .collect()
}
