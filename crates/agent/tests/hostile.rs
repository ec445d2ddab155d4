//! issue 24: what an agent does against a console, a target and a peer
//! that try to make it write outside its allow-list, and what a console
//! does with a hostile or broken agent's report.

mod common;

use common::{
    agent, allow, disk_order, expect, host, hostile_agent, key, rate, raw_console, rr, stream, udp,
    Rewrite,
};
use iotoll_agent::console::{Console, ConsoleError, DiskTest, NetTest};
use iotoll_agent::wire::{self, AgentReport, FromAgent, ToAgent, Work};
use iotoll_net::proto::TestParams;
use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// An allowed `:rw` target swapped for a symlink to a file outside the
/// allow-list between PREPARE and START: the agent writes only the file
/// it prepared, never the other one; prepared again, the symlink is refused.
#[test]
fn an_allowed_target_swapped_for_a_symlink_after_prepare_is_not_written() {
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("outside");
    std::fs::write(&outside, vec![0x55u8; 4 << 20]).unwrap();
    let allowed = dir.path().join("a.tst");
    let addr = agent(vec![allow(&allowed, true)]);
    let link = raw_console(addr);
    let order = disk_order(0, 1 << 20);
    link.send(&ToAgent::Prepare {
        test: 1,
        work: Box::new(Work::Disk {
            order: order.clone(),
        }),
    });
    let m = expect(&link, |m| {
        matches!(m, FromAgent::Prepared { .. } | FromAgent::Error { .. })
    });
    assert!(matches!(m, FromAgent::Prepared { test: 1, .. }), "{m:?}");
    let moved = dir.path().join("moved");
    std::fs::rename(&allowed, &moved).unwrap();
    std::os::unix::fs::symlink(&outside, &allowed).unwrap();
    let now = wire::now_ns();
    let ms = |n: i64| n * 1_000_000;
    link.send(&ToAgent::Start {
        test: 1,
        on_ns: now + ms(300),
        off_ns: now + ms(800),
    });
    let m = expect(&link, |m| {
        matches!(m, FromAgent::Report { .. } | FromAgent::Error { .. })
    });
    assert!(
        std::fs::read(&outside).unwrap().iter().all(|b| *b == 0x55),
        "the file outside the allow-list was written"
    );
    if let FromAgent::Report { report, .. } = &m {
        let doc = report.disk.as_ref().expect("a disk report");
        assert!(doc.metrics["write_iops"] > 0.0, "{:?}", doc.metrics);
    }
    link.send(&ToAgent::Release { test: 1 });
    // Prepared again: the symlink now at the allowed path is refused.
    link.send(&ToAgent::Prepare {
        test: 2,
        work: Box::new(Work::Disk { order }),
    });
    let m = expect(&link, |m| {
        matches!(m, FromAgent::Prepared { .. } | FromAgent::Error { .. })
    });
    assert!(
        matches!(&m, FromAgent::Error { msg, .. } if msg.contains("symbolic link")),
        "{m:?}"
    );
    std::thread::sleep(Duration::from_millis(100));
    assert!(std::fs::read(&outside).unwrap().iter().all(|b| *b == 0x55));
    link.send(&ToAgent::Bye {});
}

/// A disk test of 1 s on `on`, each host's own target.
fn disk_test(on: &[&str]) -> DiskTest {
    DiskTest {
        on: on.iter().map(|h| h.to_string()).collect(),
        order: disk_order(0, 1 << 20),
    }
}

/// A hostile agent writing its own test file in `dir`.
fn evil(dir: &tempfile::TempDir, make: impl Fn() -> Rewrite + Send + Sync + 'static) -> SocketAddr {
    hostile_agent(vec![allow(&dir.path().join("e.tst"), true)], make)
}

/// The test's error names `host`, and says `what`.
fn refused(r: Result<iotoll_model::ResultDoc, ConsoleError>, host: &str, what: &str) {
    match r {
        Err(ConsoleError::Host { host: h, msg }) => {
            assert!(h == host && msg.contains(what), "host {h}: {msg}")
        }
        Err(e) => panic!("{e}"),
        Ok(doc) => panic!(
            "stored as {:?}: metrics {:?}, cpu {:?}",
            doc.status, doc.metrics, doc.cpu.local
        ),
    }
}

/// A disk test on an agent whose traffic `make` rewrites is refused,
/// naming the agent and saying `what`.
fn disk_refused(make: impl Fn() -> Rewrite + Send + Sync + 'static, what: &str) {
    let dir = tempfile::tempdir().unwrap();
    let addr = evil(&dir, make);
    let mut console = Console::connect(vec![host("evil", addr)], Some(key())).unwrap();
    let stop = AtomicBool::new(false);
    refused(console.run_disk(&disk_test(&["evil"]), &stop), "evil", what);
}

/// issue 24: busy 1e308 % and -40 %, 1e15 IOPS, a latency of -5 us, a
/// window of 1e300 s (JSON carries no NaN): each makes the test invalid, naming the host, and no
/// document comes back to be stored.
#[test]
fn absurd_figures_make_the_test_invalid_naming_the_host() {
    type Bend = fn(&mut AgentReport);
    let cases: [(Bend, &str); 5] = [
        (|r| r.cpu.as_mut().unwrap().busy_pct = 1e308, "busy"),
        (|r| r.cpu.as_mut().unwrap().busy_pct = -40.0, "negative"),
        (
            |r| {
                let d = r.disk.as_mut().unwrap();
                d.metrics.insert("iops".into(), 1e15);
            },
            "iops",
        ),
        (
            |r| {
                let d = r.disk.as_mut().unwrap();
                d.metrics.insert("lat_mean_us".into(), -5.0);
            },
            "lat_mean_us",
        ),
        (|r| r.window_s = 1e300, "window_s"),
    ];
    for (bend, what) in cases {
        disk_refused(move || Rewrite::reports(bend), what);
    }
}

/// A report for another test, and one cut short though nobody stopped
/// it: refused.
#[test]
fn a_report_for_another_test_or_cut_short_unasked_is_refused() {
    disk_refused(
        || {
            Rewrite::from_agent(|m| match m {
                FromAgent::Report { test, report } => vec![FromAgent::Report {
                    test: test + 7,
                    report,
                }],
                m => vec![m],
            })
        },
        "test 8",
    );
    disk_refused(|| Rewrite::reports(|r| r.interrupted = true), "cut short");
}

/// A report sent at START (last test's figures) instead of after RECORD
/// OFF: refused.
#[test]
fn a_report_before_record_off_is_refused() {
    let stop = AtomicBool::new(false);
    let dir = tempfile::tempdir().unwrap();
    let addr = evil(&dir, || {
        let mut last: Option<Box<AgentReport>> = None;
        Rewrite {
            from_agent: Box::new(move |m| match m {
                FromAgent::Started { test } => match &last {
                    Some(r) => vec![
                        FromAgent::Started { test },
                        FromAgent::Report {
                            test,
                            report: r.clone(),
                        },
                    ],
                    None => vec![FromAgent::Started { test }],
                },
                FromAgent::Report { test, report } if last.is_none() => {
                    last = Some(report.clone());
                    vec![FromAgent::Report { test, report }]
                }
                FromAgent::Report { .. } => vec![],
                m => vec![m],
            }),
            to_agent: Box::new(|m| m),
        }
    });
    let mut console = Console::connect(vec![host("evil", addr)], Some(key())).unwrap();
    let t = disk_test(&["evil"]);
    console
        .run_disk(&t, &stop)
        .expect("the first report is honest");
    refused(console.run_disk(&t, &stop), "evil", "before RECORD OFF");
}

/// An agent whose clock says it is half a second before i64::MAX ns: the
/// offset is computed without wrapping, and a window that cannot be
/// expressed in its clock refuses the host (it wrapped 292 years before).
#[test]
fn an_agent_clock_near_i64_max_is_refused_not_wrapped() {
    disk_refused(
        || {
            Rewrite::from_agent(|m| match m {
                FromAgent::Clock { t1, t2, t3 } => {
                    let shift = i64::MAX - 500_000_000 - t2;
                    vec![FromAgent::Clock {
                        t1,
                        t2: t2 + shift,
                        t3: t3.saturating_add(shift),
                    }]
                }
                m => vec![m],
            })
        },
        "cannot be scheduled",
    );
}

type Tamper = fn(&mut AgentReport);

/// A test of `params` over one pair (cli → srv) whose server's reports
/// (`on_server`) or client's `rewrite` tampers with: refused, naming that
/// host and saying `what`.
fn pair_refused(params: TestParams, rewrite: Tamper, on_server: bool, what: &str) {
    let stop = AtomicBool::new(false);
    let evil = hostile_agent(vec![], move || Rewrite::reports(rewrite));
    let good = agent(vec![]);
    let (srv, cli) = if on_server {
        (evil, good)
    } else {
        (good, evil)
    };
    let hosts = vec![host("srv", srv), host("cli", cli)];
    let mut console = Console::connect(hosts, Some(key())).unwrap();
    let t = NetTest {
        pairs: vec![("cli".into(), "srv".into())],
        params,
        threads: None,
        config: None,
    };
    let name = if on_server { "srv" } else { "cli" };
    refused(console.run_net(&t, &stop), name, what);
}

/// The server of a pair claims three times the bytes its client sent:
/// the two ends disagree by more than could be in flight.
#[test]
fn a_pairs_ends_that_disagree_are_refused() {
    let stop = AtomicBool::new(false);
    let srv = hostile_agent(vec![], || {
        Rewrite::reports(|r| {
            for p in &mut r.pairs {
                p.rx *= 3;
            }
        })
    });
    let cli = agent(vec![]);
    let mut console =
        Console::connect(vec![host("srv", srv), host("cli", cli)], Some(key())).unwrap();
    let t = NetTest {
        pairs: vec![("cli".into(), "srv".into())],
        params: stream(1),
        threads: None,
        config: None,
    };
    refused(
        console.run_net(&t, &stop),
        "srv",
        "more apart than could be in flight",
    );
}

/// A request/response client whose round trips are garbage, claim more
/// transactions than its histogram holds, or name a pair it is not the
/// client of: the test is invalid, naming the host.
#[test]
fn a_clients_bad_round_trips_are_refused() {
    let cases: [(Tamper, &str); 3] = [
        (
            |r| r.rr.iter_mut().for_each(|p| p.rtt_hist.push_str("ff")),
            "truncated",
        ),
        (
            |r| r.rr.iter_mut().for_each(|p| p.transactions += 1),
            "holds",
        ),
        (
            |r| r.rr.iter_mut().for_each(|p| p.pair = 7),
            "not the client of",
        ),
    ];
    for (rewrite, what) in cases {
        pair_refused(rr(1), rewrite, false, what);
    }
}

/// A UDP pair's end whose counts cannot be: a server that counted more
/// than its client sent, a client that offered over the test's rate, a
/// count of a pair it is not that end of. The test is invalid, the host
/// named.
#[test]
fn a_udp_ends_impossible_counts_are_refused() {
    let cases: [(Tamper, bool, &str); 4] = [
        (
            |r| {
                for u in r.udp.iter_mut().filter_map(|u| u.received.as_mut()) {
                    u.datagrams += 1_000_000;
                    u.bytes += 1_000_000 * 1000;
                    u.flows.sum += 1_000_000 * 1000;
                    u.flows.max += 1_000_000 * 1000;
                }
            },
            true,
            "distinct datagrams of its client's window",
        ),
        (
            |r| {
                for u in r.udp.iter_mut().filter_map(|u| u.sent.as_mut()) {
                    u.datagrams *= 10;
                    u.bytes *= 10;
                }
            },
            false,
            "over the 2.000 Mbit/s the test paces at",
        ),
        (
            |r| r.udp.iter_mut().for_each(|u| u.pair = 3),
            false,
            "which the test does not have",
        ),
        (
            |r| {
                for u in r.udp.iter_mut() {
                    (u.sent, u.received) = (None, u.sent.map(|_| Default::default()));
                }
            },
            false,
            "which it does not serve",
        ),
    ];
    for (rewrite, on_server, what) in cases {
        pair_refused(udp(1, 2_000_000), rewrite, on_server, what);
    }
}

/// A connection-rate pair's end whose counts cannot be: a client whose
/// histogram does not hold its connections, a server that served fewer
/// than its client completed (the ends disagree). The test is invalid,
/// the host named.
#[test]
fn a_rate_pairs_impossible_counts_are_refused() {
    let cases: [(Tamper, bool, &str); 3] = [
        (
            |r| {
                for c in r.crr.iter_mut().filter_map(|c| c.client.as_mut()) {
                    c.window_done += 1;
                    c.total_done += 1;
                }
            },
            false,
            "connect times",
        ),
        (
            |r| {
                for s in r.crr.iter_mut().filter_map(|c| c.server.as_mut()) {
                    s.responded /= 2;
                }
            },
            true,
            "the ends disagree",
        ),
        (
            |r| {
                for s in r.crr.iter_mut().filter_map(|c| c.server.as_mut()) {
                    s.window_done = s.accepted + 1;
                }
            },
            true,
            "do not fit",
        ),
    ];
    for (rewrite, on_server, what) in cases {
        pair_refused(
            rate(iotoll_net::proto::TestKind::Crr, 1),
            rewrite,
            on_server,
            what,
        );
    }
}

/// A server whose certificate is swapped on its way to the console (a
/// test-only mismatch: the client pins another certificate than the one
/// the server presents): the pair fails, saying why.
#[test]
fn a_tls_pin_mismatch_fails_the_pair() {
    let stop = AtomicBool::new(false);
    let other = iotoll_net::tls::ServerTls::generate().unwrap().cert_hex();
    let srv = hostile_agent(vec![], move || {
        let other = other.clone();
        Rewrite::from_agent(move |m| match m {
            FromAgent::Prepared {
                test,
                port,
                cert,
                pair_ports,
            } => vec![FromAgent::Prepared {
                test,
                port,
                cert: cert.map(|_| other.clone()),
                pair_ports,
            }],
            m => vec![m],
        })
    });
    let cli = agent(vec![]);
    let mut console =
        Console::connect(vec![host("srv", srv), host("cli", cli)], Some(key())).unwrap();
    let t = NetTest {
        pairs: vec![("cli".into(), "srv".into())],
        params: iotoll_net::proto::TestParams {
            tls: Some("aes-128-gcm".into()),
            ..rr(1)
        },
        threads: None,
        config: None,
    };
    match console.run_net(&t, &stop) {
        Err(ConsoleError::Host { host, msg }) => {
            assert!(
                msg.contains("TLS") && msg.contains("another certificate") && host == "cli",
                "host {host}: {msg}"
            )
        }
        Err(e) => panic!("{e}"),
        Ok(doc) => panic!("a pin mismatch ran: {:?}", doc.metrics),
    }
}

/// A host that claims another's boot id (one kernel) with another CPU
/// count: the hosts are not what they say, and the test is invalid.
#[test]
fn a_spoofed_boot_id_with_another_cpu_count_is_refused() {
    let stop = AtomicBool::new(false);
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let honest = agent(vec![allow(&d1.path().join("h.tst"), true)]);
    // Every agent here runs on this kernel: they share its boot id.
    let spoof = evil(&d2, || Rewrite {
        from_agent: Box::new(|m| match m {
            FromAgent::Info { mut info } => {
                info.cpus += 2;
                vec![FromAgent::Info { info }]
            }
            FromAgent::Report { test, mut report } => {
                if let Some(c) = report.cpu.as_mut() {
                    c.cpus += 2;
                }
                vec![FromAgent::Report { test, report }]
            }
            m => vec![m],
        }),
        to_agent: Box::new(|m| m),
    });
    let mut console = Console::connect(
        vec![host("real", honest), host("spoof", spoof)],
        Some(key()),
    )
    .unwrap();
    refused(
        console.run_disk(&disk_test(&["real", "spoof"]), &stop),
        "spoof",
        "different CPU counts",
    );
}

/// An agent that says it has no CPUs (or millions) is refused when the
/// console connects, named.
#[test]
fn an_agent_claiming_an_impossible_cpu_count_is_refused() {
    for cpus in [0, 4_000_000_000] {
        let dir = tempfile::tempdir().unwrap();
        let addr = evil(&dir, move || Rewrite {
            from_agent: Box::new(move |m| match m {
                FromAgent::Info { mut info } => {
                    info.cpus = cpus;
                    vec![FromAgent::Info { info }]
                }
                m => vec![m],
            }),
            to_agent: Box::new(|m| m),
        });
        match Console::connect(vec![host("evil", addr)], Some(key())) {
            Err(ConsoleError::Host { host, msg }) => {
                assert!(host == "evil" && msg.contains("CPUs"), "{msg}")
            }
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("{cpus} CPUs accepted"),
        }
    }
}

/// The hostile review's modes: a keyed agent's figures, each within
/// bounds, that contradict each other, the test or what the agent said
/// when the console connected. Each makes the test invalid, naming the
/// host; none is stored as complete.
#[test]
fn contradictory_figures_make_the_test_invalid_naming_the_host() {
    type Bend = fn(&mut AgentReport);
    fn metrics(r: &mut AgentReport) -> &mut iotoll_model::Metrics {
        &mut r.disk.as_mut().unwrap().metrics
    }
    let cases: [(&str, Bend, &str); 6] = [
        (
            "iops-incoherent",
            |r| {
                metrics(r).insert("iops".into(), 9e9);
                metrics(r).insert("write_iops".into(), 9e9);
            },
            "at 4096 bytes per I/O is not its mb_s",
        ),
        (
            "lat-max",
            |r| {
                for (k, v) in metrics(r).iter_mut() {
                    if k.starts_with("lat") {
                        *v = 0.999e6;
                    }
                }
            },
            "Little's law",
        ),
        (
            "onoff-swap",
            |r| std::mem::swap(&mut r.on_ns, &mut r.off_ns),
            "closed",
        ),
        (
            "cpus-huge",
            |r| r.cpu.as_mut().unwrap().cpus = 16_384,
            "CPU window counts 16384 CPUs, and it said it has",
        ),
        (
            "spec-lie",
            |r| {
                let spec = &mut r.disk.as_mut().unwrap().spec;
                let mut s = spec.to_value();
                s["read_pct"] = 100.into();
                s["target"] = "/etc/shadow".into();
                s["time_s"] = 1e308.into();
                *spec = s.into();
            },
            "spec says read_pct 100; the console ordered 0",
        ),
        (
            "status-lie",
            |r| r.disk.as_mut().unwrap().status = iotoll_model::ResultStatus::Failed,
            "says failed",
        ),
    ];
    let stop = AtomicBool::new(false);
    for (mode, bend, what) in cases {
        let dir = tempfile::tempdir().unwrap();
        let addr = evil(&dir, move || Rewrite::reports(bend));
        let mut console = Console::connect(vec![host("evil", addr)], Some(key())).unwrap();
        eprintln!("mode {mode}");
        refused(console.run_disk(&disk_test(&["evil"]), &stop), "evil", what);
    }
}

/// "bigbox": a host that says it has 16,384 CPUs, at connect and in its
/// window, all but idle (0.01 % busy), to dilute the test's CPU: its
/// total is not a mean of the CPUs it lists, and it is refused.
#[test]
fn a_host_whose_total_cpu_is_not_its_cores_mean_is_refused() {
    disk_refused(
        || {
            Rewrite::from_agent(|m| match m {
                FromAgent::Info { mut info } => {
                    info.cpus = 16_384;
                    vec![FromAgent::Info { info }]
                }
                FromAgent::Report { test, mut report } => {
                    let c = report.cpu.as_mut().unwrap();
                    c.cpus = 16_384;
                    c.busy_pct = 0.01;
                    c.modes = iotoll_model::CpuModes {
                        idle: 99.99,
                        ..Default::default()
                    };
                    for k in &mut c.per_core {
                        k.busy_pct = 0.0;
                        k.modes = iotoll_model::CpuModes {
                            idle: 100.0,
                            ..Default::default()
                        };
                    }
                    vec![FromAgent::Report { test, report }]
                }
                m => vec![m],
            })
        },
        "outside its CPUs' own",
    );
}

/// The spec stored is the one the console ordered, whatever the agent's
/// copy says of the parameters the order leaves to it.
#[test]
fn the_stored_spec_is_the_consoles_order() {
    let stop = AtomicBool::new(false);
    let dir = tempfile::tempdir().unwrap();
    let addr = evil(&dir, || Rewrite::reports(|_| {}));
    let mut console = Console::connect(vec![host("evil", addr)], Some(key())).unwrap();
    let t = disk_test(&["evil"]);
    let doc = console.run_disk(&t, &stop).unwrap();
    let s = doc.spec.disk().unwrap();
    assert_eq!((s.bs, s.read_pct, s.qd), (Some(4096), Some(0), 4));
    assert_eq!(s.target, dir.path().join("e.tst").display().to_string());
    assert_eq!((s.time_s, s.ramp_s), (1.0, 0.2));
}
