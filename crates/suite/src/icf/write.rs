//! Writing the model in the layout Iometer saves.

use super::*;

/// The version iotoll writes: the release whose format it follows.
pub const WRITE_VERSION: &str = "1.1.0";

fn header(name: &str) -> String {
    let mut h = format!("'{name} ");
    while h.len() < 80 {
        h.push('=');
    }
    h
}

/// The file in the layout Iometer saves (sections in its order: TEST
/// SETUP, RESULTS DISPLAY, ACCESS SPECIFICATIONS, MANAGER LIST).
pub fn write(icf: &Icf) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let version = format!("Version {WRITE_VERSION}");
    let _ = writeln!(o, "{version}");
    if let Some(s) = &icf.setup {
        let cyc = |e: bool| if e { "EXPONENTIAL" } else { "LINEAR" };
        let spawn = |s: Spawn| match s {
            Spawn::Cpus => "NUMBER_OF_CPUS".to_string(),
            Spawn::N(n) => n.to_string(),
        };
        let (h, m, sec) = s.run_time;
        let _ = writeln!(o, "{}", header("TEST SETUP"));
        let _ = writeln!(o, "'Test Description\n\t{}", s.description);
        let _ = writeln!(
            o,
            "'Run Time\n'\t{:<11}{:<11}seconds\n\t{h:<11}{m:<11}{sec}",
            "hours", "minutes"
        );
        let _ = writeln!(o, "'Ramp Up Time (s)\n\t{}", s.ramp_s);
        let _ = writeln!(
            o,
            "'Default Disk Workers to Spawn\n\t{}",
            spawn(s.disk_workers)
        );
        let _ = writeln!(
            o,
            "'Default Network Workers to Spawn\n\t{}",
            spawn(s.net_workers)
        );
        let _ = writeln!(o, "'Record Results\n\t{}", s.record);
        for (name, c) in [
            ("Worker Cycling", s.worker_cycling),
            ("Disk Cycling", s.disk_cycling),
        ] {
            let _ = writeln!(
                o,
                "'{name}\n'\t{:<11}{:<11}step type\n\t{:<11}{:<11}{}",
                "start",
                "step",
                c.start,
                c.step,
                cyc(c.exponential)
            );
        }
        let q = s.queue_cycling;
        let _ = writeln!(
            o,
            "'Queue Depth Cycling\n'\t{:<11}{:<11}{:<11}step type\n\t{:<11}{:<11}{:<11}{}",
            "start",
            "end",
            "step",
            q.start,
            q.end,
            q.step,
            cyc(q.exponential)
        );
        let _ = writeln!(o, "'Test Type\n\t{}", s.test_type.as_str());
        let _ = writeln!(o, "'END test setup");
    }
    let _ = writeln!(o, "{}", header("RESULTS DISPLAY"));
    if icf.display.is_empty() {
        let _ = writeln!(
            o,
            "'Record Last Update Results,Update Frequency,Update Type\n\tDISABLED,1,WHOLE_TEST"
        );
        let bars = [
            "Total I/Os per Second",
            "Total MBs per Second (Decimal)",
            "Average I/O Response Time (ms)",
            "Maximum I/O Response Time (ms)",
            "% CPU Utilization (total)",
            "Total Error Count",
        ];
        for (i, b) in bars.iter().enumerate() {
            let _ = writeln!(o, "'Bar chart {} statistic\n\t{b}", i + 1);
        }
    } else {
        for (k, v) in &icf.display {
            let _ = writeln!(o, "{k}\n\t{v}");
        }
    }
    let _ = writeln!(o, "'END results display");
    let _ = writeln!(o, "{}", header("ACCESS SPECIFICATIONS"));
    for s in &icf.specs {
        let _ = writeln!(
            o,
            "'Access specification name,default assignment\n\t{},{}",
            s.name, s.assignment
        );
        let _ = writeln!(
            o,
            "'size,% of size,% reads,% random,delay,burst,align,reply"
        );
        for l in &s.lines {
            let _ = writeln!(
                o,
                "\t{},{},{},{},{},{},{},{}",
                l.size, l.share, l.reads, l.random, l.delay_ms, l.burst, l.align, l.reply
            );
        }
    }
    let _ = writeln!(o, "'END access specifications");
    if let Some(managers) = &icf.managers {
        let _ = writeln!(o, "{}", header("MANAGER LIST"));
        for m in managers {
            let _ = writeln!(o, "'Manager ID, manager name\n\t{},{}", m.id, m.name);
            let _ = writeln!(o, "'Manager network address\n\t{}", m.address);
            for w in &m.workers {
                write_worker(&mut o, w);
            }
            let _ = writeln!(o, "'End manager");
        }
        let _ = writeln!(o, "'END manager list");
    }
    let _ = writeln!(o, "{version}");
    o
}

fn write_worker(o: &mut String, w: &Worker) {
    use std::fmt::Write;
    let on = |b: bool| if b { "ENABLED" } else { "DISABLED" };
    let _ = writeln!(
        o,
        "'Worker\n\t{}\n'Worker type\n\t{}",
        w.name,
        w.kind.as_str()
    );
    let _ = writeln!(o, "'Default target settings for worker");
    let _ = writeln!(o, "'Number of outstanding IOs,test connection rate,transactions per connection,use fixed seed,fixed seed value");
    let _ = writeln!(
        o,
        "\t{},{},{},{},{}",
        w.qd,
        on(w.test_connection_rate),
        w.trans_per_conn,
        on(w.fixed_seed.is_some()),
        w.fixed_seed.unwrap_or(0)
    );
    if w.kind == WorkerKind::Disk {
        let _ = writeln!(o, "'Disk maximum size,starting sector,Data pattern");
        let _ = writeln!(
            o,
            "\t{},{},{}",
            w.disk_size,
            w.start_sector,
            w.data_pattern.unwrap_or(0)
        );
    } else {
        let _ = writeln!(
            o,
            "'Local network interface\n\t{}",
            w.local_interface.as_deref().unwrap_or("")
        );
        if w.kind == WorkerKind::NetVi {
            let _ = writeln!(
                o,
                "'VI outstanding IOs\n\t{}",
                w.vi_outstanding.unwrap_or(1)
            );
        }
    }
    let _ = writeln!(o, "'End default target settings for worker");
    if let Some(specs) = &w.specs {
        let _ = writeln!(o, "'Assigned access specs");
        for s in specs {
            let _ = writeln!(o, "\t{s}");
        }
        let _ = writeln!(o, "'End assigned access specs");
    }
    if let Some(targets) = &w.targets {
        let _ = writeln!(o, "'Target assignments");
        for t in targets {
            let _ = writeln!(
                o,
                "'Target\n\t{}\n'Target type\n\t{}",
                t.name,
                t.kind.as_str()
            );
            if let Some((id, name)) = &t.manager {
                let _ = writeln!(o, "'Target manager ID, manager name\n\t{id},{name}");
            }
            let _ = writeln!(o, "'End target");
        }
        let _ = writeln!(o, "'End target assignments");
    }
    let _ = writeln!(o, "'End worker");
}
