//! Writing the model in the layout Iometer saves.

use super::*;
use std::fmt::{Display, Write};

/// The version iotoll writes: the release whose format it follows.
pub const WRITE_VERSION: &str = "1.1.0";

/// The text being written, line by line.
struct Out(String);

impl Out {
    fn line(&mut self, l: impl Display) {
        let _ = writeln!(self.0, "{l}");
    }

    /// An item: its key's comment line, then its value tab-indented.
    fn item(&mut self, key: &str, value: impl Display) {
        self.line(format_args!("'{key}\n\t{value}"));
    }

    /// An item of columns: a comment line of captions over the values,
    /// each but the last padded to 11 columns.
    fn columns(&mut self, key: &str, captions: &[&str], values: &[String]) {
        let row = |cells: Vec<&str>| {
            let (last, padded) = cells.split_last().unwrap_or((&"", &[]));
            let padded: String = padded.iter().map(|c| format!("{c:<11}")).collect();
            format!("\t{padded}{last}")
        };
        let values = row(values.iter().map(String::as_str).collect());
        self.line(format_args!(
            "'{key}\n'{}\n{values}",
            row(captions.to_vec())
        ));
    }

    /// A section's header line: its name, filled with `=` to 80 columns.
    fn header(&mut self, name: &str) {
        self.line(format_args!("{:=<80}", format!("'{name} ")));
    }
}

/// The file in the layout Iometer saves (sections in its order: TEST
/// SETUP, RESULTS DISPLAY, ACCESS SPECIFICATIONS, MANAGER LIST).
pub fn write(icf: &Icf) -> String {
    let mut o = Out(String::new());
    let version = format!("Version {WRITE_VERSION}");
    o.line(&version);
    if let Some(s) = &icf.setup {
        write_setup(&mut o, s);
    }
    o.header("RESULTS DISPLAY");
    if icf.display.is_empty() {
        o.item(
            "Record Last Update Results,Update Frequency,Update Type",
            "DISABLED,1,WHOLE_TEST",
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
            o.item(&format!("Bar chart {} statistic", i + 1), b);
        }
    } else {
        for (k, v) in &icf.display {
            o.line(format_args!("{k}\n\t{v}"));
        }
    }
    o.line("'END results display");
    o.header("ACCESS SPECIFICATIONS");
    for s in &icf.specs {
        let name = "Access specification name,default assignment";
        o.item(name, format_args!("{},{}", s.name, s.assignment));
        o.line("'size,% of size,% reads,% random,delay,burst,align,reply");
        for l in &s.lines {
            o.line(format_args!(
                "\t{},{},{},{},{},{},{},{}",
                l.size, l.share, l.reads, l.random, l.delay_ms, l.burst, l.align, l.reply
            ));
        }
    }
    o.line("'END access specifications");
    if let Some(managers) = &icf.managers {
        o.header("MANAGER LIST");
        for m in managers {
            o.item(
                "Manager ID, manager name",
                format_args!("{},{}", m.id, m.name),
            );
            o.item("Manager network address", &m.address);
            for w in &m.workers {
                write_worker(&mut o, w);
            }
            o.line("'End manager");
        }
        o.line("'END manager list");
    }
    o.line(&version);
    o.0
}

fn write_setup(o: &mut Out, s: &Setup) {
    let cyc = |e: bool| if e { "EXPONENTIAL" } else { "LINEAR" }.to_string();
    let spawn = |s: Spawn| match s {
        Spawn::Cpus => "NUMBER_OF_CPUS".to_string(),
        Spawn::N(n) => n.to_string(),
    };
    let (h, m, sec) = s.run_time;
    o.header("TEST SETUP");
    o.item("Test Description", &s.description);
    let hms = [h, m, sec].map(|n| n.to_string());
    o.columns("Run Time", &["hours", "minutes", "seconds"], &hms);
    o.item("Ramp Up Time (s)", s.ramp_s);
    o.item("Default Disk Workers to Spawn", spawn(s.disk_workers));
    o.item("Default Network Workers to Spawn", spawn(s.net_workers));
    o.item("Record Results", &s.record);
    for (name, c) in [
        ("Worker Cycling", s.worker_cycling),
        ("Disk Cycling", s.disk_cycling),
    ] {
        let values = [c.start.to_string(), c.step.to_string(), cyc(c.exponential)];
        o.columns(name, &["start", "step", "step type"], &values);
    }
    let q = s.queue_cycling;
    let values = [q.start, q.end, q.step].map(|n| n.to_string());
    let values = [&values[..], &[cyc(q.exponential)]].concat();
    let captions = ["start", "end", "step", "step type"];
    o.columns("Queue Depth Cycling", &captions, &values);
    o.item("Test Type", s.test_type.as_str());
    o.line("'END test setup");
}

fn write_worker(o: &mut Out, w: &Worker) {
    let on = |b: bool| if b { "ENABLED" } else { "DISABLED" };
    o.item("Worker", &w.name);
    o.item("Worker type", w.kind.as_str());
    o.line("'Default target settings for worker");
    o.item(
        "Number of outstanding IOs,test connection rate,transactions per connection,use fixed seed,fixed seed value",
        format_args!(
            "{},{},{},{},{}",
            w.qd,
            on(w.test_connection_rate),
            w.trans_per_conn,
            on(w.fixed_seed.is_some()),
            w.fixed_seed.unwrap_or(0)
        ),
    );
    if w.kind == WorkerKind::Disk {
        let pattern = w.data_pattern.unwrap_or(0);
        let values = format_args!("{},{},{pattern}", w.disk_size, w.start_sector);
        o.item("Disk maximum size,starting sector,Data pattern", values);
    } else {
        let interface = w.local_interface.as_deref().unwrap_or("");
        o.item("Local network interface", interface);
        if w.kind == WorkerKind::NetVi {
            o.item("VI outstanding IOs", w.vi_outstanding.unwrap_or(1));
        }
    }
    o.line("'End default target settings for worker");
    if let Some(specs) = &w.specs {
        o.line("'Assigned access specs");
        for s in specs {
            o.line(format_args!("\t{s}"));
        }
        o.line("'End assigned access specs");
    }
    if let Some(targets) = &w.targets {
        o.line("'Target assignments");
        for t in targets {
            o.item("Target", &t.name);
            o.item("Target type", t.kind.as_str());
            if let Some((id, name)) = &t.manager {
                o.item(
                    "Target manager ID, manager name",
                    format_args!("{id},{name}"),
                );
            }
            o.line("'End target");
        }
        o.line("'End target assignments");
    }
    o.line("'End worker");
}
