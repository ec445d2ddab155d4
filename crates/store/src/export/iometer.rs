//! Iometer 1.1.0's results.csv layout: its header block, then per test a
//! results header and the `ALL`, `MANAGER`, `PROCESSOR`, `WORKER` and
//! `DISK` rows Iometer writes, from the selected repetition or the means.

use super::{num, row, selected_metrics, text, writer};
use crate::{RunDetail, TestRow};
use iotoll_model::metrics as mn;
use iotoll_model::result::WorkerFigures;
use iotoll_model::{CpuReport, IoCounts, Kind, Metrics, ResultDoc};

/// Iometer 1.1.0 results.csv: its header block, then its results header
/// row with one `ALL` row per disk test (the selected repetition, or the
/// means), followed by `MANAGER`, `WORKER` and `DISK` rows when the
/// selected repetition has a breakdown ([`disk_breakdown_rows`]). Columns
/// iotoll does not measure are left empty.
pub const IOMETER_COLUMNS: &[&str] = &[
    "'Target Type",
    "Target Name",
    "Access Specification Name",
    "# Managers",
    "# Workers",
    "# Disks",
    "IOps",
    "Read IOps",
    "Write IOps",
    "MBps (Binary)",
    "Read MBps (Binary)",
    "Write MBps (Binary)",
    "MBps (Decimal)",
    "Read MBps (Decimal)",
    "Write MBps (Decimal)",
    "Transactions per Second",
    "Connections per Second",
    "Average Response Time",
    "Average Read Response Time",
    "Average Write Response Time",
    "Average Transaction Time",
    "Average Connection Time",
    "Maximum Response Time",
    "Maximum Read Response Time",
    "Maximum Write Response Time",
    "Maximum Transaction Time",
    "Maximum Connection Time",
    "Errors",
    "Read Errors",
    "Write Errors",
    "Bytes Read",
    "Bytes Written",
    "Read I/Os",
    "Write I/Os",
    "Connections",
    "Transactions per Connection",
    "Total Raw Read Response Time",
    "Total Raw Write Response Time",
    "Total Raw Transaction Time",
    "Total Raw Connection Time",
    "Maximum Raw Read Response Time",
    "Maximum Raw Write Response Time",
    "Maximum Raw Transaction Time",
    "Maximum Raw Connection Time",
    "Total Raw Run Time",
    "Starting Sector",
    "Maximum Size",
    "Queue Depth",
    "% CPU Utilization",
    "% User Time",
    "% Privileged Time",
    "% DPC Time",
    "% Interrupt Time",
    "Processor Speed",
    "Interrupts per Second",
    "CPU Effectiveness",
    "Packets/Second",
    "Packet Errors",
    "Segments Retransmitted/Second",
];

/// Why `iometer_csv` wrote nothing: never an empty success.
#[derive(Debug, thiserror::Error)]
#[error("run {run} has no result the Iometer results.csv layout can hold: {}", reasons.join("; "))]
pub struct IometerEmpty {
    pub run: i64,
    /// One line per test saying why it was left out.
    pub reasons: Vec<String>,
}

/// The Iometer export of a run and the tests it left out (with why).
#[derive(Debug)]
pub struct IometerExport {
    pub text: String,
    pub skipped: Vec<String>,
}

/// One row: column name → cell. Columns not named stay empty.
type Cells = std::collections::HashMap<&'static str, String>;

/// Fills column `col` when there is a value for it.
fn put(c: &mut Cells, col: &'static str, v: Option<f64>) {
    if let Some(v) = v {
        c.insert(col, num(v));
    }
}

/// Writes one row of Iometer's columns.
fn line(w: &mut csv::Writer<Vec<u8>>, cells: &Cells) {
    row(
        w,
        IOMETER_COLUMNS
            .iter()
            .map(|c| cells.get(c).map_or("", String::as_str)),
    );
}

/// Sets what the row is (`'Target Type`: ALL, MANAGER, ...) and its name.
fn target(c: &mut Cells, kind: &str, name: impl Into<String>) {
    c.insert("'Target Type", kind.into());
    c.insert("Target Name", name.into());
}

/// Iometer's CPU columns from one host's metrics (`prefix` "" for this host,
/// "remote_" for the endpoint).
fn cpu_cells(c: &mut Cells, m: &Metrics, prefix: &str) {
    let g = |k: &str| m.get(&format!("{prefix}{k}")).copied();
    put(c, "% CPU Utilization", g("cpu_pct"));
    put(c, "% User Time", g("cpu_user_pct"));
    put(c, "% Privileged Time", g("cpu_system_pct"));
    put(c, "% DPC Time", g("cpu_softirq_pct"));
    put(c, "% Interrupt Time", g("cpu_irq_pct"));
    put(c, "Processor Speed", g("cpu_nominal_mhz").map(|v| v * 1e6));
    put(c, "Interrupts per Second", g("interrupts_s"));
}

/// What the first repetition's spec states.
fn stated(t: &TestRow) -> iotoll_model::spec::Stated {
    (t.reps.first()).map_or_else(Default::default, |r| r.doc.spec.stated())
}

/// MB/s (decimal) as Iometer's binary MBps.
fn mib(mb: Option<f64>) -> Option<f64> {
    mb.map(|v| v * 1e6 / 1048576.0)
}

/// Microseconds as Iometer's milliseconds.
fn ms(us: Option<f64>) -> Option<f64> {
    us.map(|v| v / 1000.0)
}

/// Iometer's rate, response-time and error columns of a disk test or a
/// part of one (a worker, a target) from its metrics.
fn io_rate_cells(c: &mut Cells, m: &Metrics) {
    let get = |k: &str| m.get(k).copied();
    let (iops, mb_s) = (get(mn::IOPS), get(mn::MB_S));
    let (read_mb, write_mb) = (get(mn::READ_MB_S), get(mn::WRITE_MB_S));
    let vals: [(&'static str, Option<f64>); 19] = [
        ("IOps", iops),
        ("Read IOps", get(mn::READ_IOPS)),
        ("Write IOps", get(mn::WRITE_IOPS)),
        ("MBps (Binary)", mib(mb_s)),
        ("Read MBps (Binary)", mib(read_mb)),
        ("Write MBps (Binary)", mib(write_mb)),
        ("MBps (Decimal)", mb_s),
        ("Read MBps (Decimal)", read_mb),
        ("Write MBps (Decimal)", write_mb),
        // A disk transaction is one I/O in Iometer.
        ("Transactions per Second", iops),
        ("Average Response Time", ms(get(mn::LAT_MEAN_US))),
        ("Average Transaction Time", ms(get(mn::LAT_MEAN_US))),
        ("Maximum Response Time", ms(get(mn::LAT_MAX_US))),
        ("Maximum Transaction Time", ms(get(mn::LAT_MAX_US))),
        ("Average Read Response Time", ms(get(mn::READ_LAT_MEAN_US))),
        (
            "Average Write Response Time",
            ms(get(mn::WRITE_LAT_MEAN_US)),
        ),
        ("Maximum Read Response Time", ms(get(mn::READ_LAT_MAX_US))),
        ("Maximum Write Response Time", ms(get(mn::WRITE_LAT_MAX_US))),
        ("Errors", get(mn::ERRORS)),
    ];
    for (k, v) in vals {
        put(c, k, v);
    }
}

fn disk_cells(t: &TestRow, m: &Metrics) -> Cells {
    let g = |k: &str| m.get(k).copied();
    let sp = stated(t);
    let window = g("window_s");
    let times = |rate: Option<f64>| rate.zip(window).map(|(r, w)| (r * w).round());
    let bytes = |mb: Option<f64>| mb.zip(window).map(|(v, w)| (v * 1e6 * w).round());
    let lbs = sp.logical_block_size;
    let sectors = |bytes: Option<f64>| bytes.zip(lbs).map(|(b, lbs)| (b / lbs).floor());
    let mut c = Cells::new();
    target(&mut c, "ALL", "All");
    let name = sp.spec_name.as_deref();
    c.insert("Access Specification Name", name.unwrap_or(&t.name).into());
    c.insert("# Managers", "1".into());
    c.insert("# Disks", "1".into());
    io_rate_cells(&mut c, m);
    // The network columns (packets, connections) stay empty.
    let vals: [(&'static str, Option<f64>); 9] = [
        ("# Workers", sp.workers),
        ("Bytes Read", bytes(g("read_mb_s"))),
        ("Bytes Written", bytes(g("write_mb_s"))),
        ("Read I/Os", times(g("read_iops"))),
        ("Write I/Os", times(g("write_iops"))),
        ("Starting Sector", sectors(sp.offset)),
        ("Maximum Size", sectors(sp.size)),
        ("Queue Depth", sp.qd),
        ("CPU Effectiveness", g("iops_per_cpu_pct")),
    ];
    for (k, v) in vals {
        put(&mut c, k, v);
    }
    cpu_cells(&mut c, m, "");
    c
}

/// The breakdown of the one repetition a disk test's figures are: None
/// when they are the means of several (no one repetition's parts add up to
/// them), when nothing is selected, or when the document has none (network
/// results, imports, documents made before iotoll wrote it).
fn selected_breakdown(t: &TestRow) -> Option<&ResultDoc> {
    selected_doc(t).filter(|b| !b.workers.is_empty() || !b.targets.is_empty())
}

/// The selected repetition's document, when the test's figures are that
/// repetition's (not a mean).
fn selected_doc(t: &TestRow) -> Option<&ResultDoc> {
    if t.select == "mean" {
        return None;
    }
    let rep = t.selected_rep?;
    Some(&t.reps.iter().find(|r| r.rep == rep)?.doc)
}

/// Iometer's PROCESSOR rows of one manager: one per CPU (`CPU 0`, ...),
/// each with that CPU's busy % and modes over the window, as Iometer
/// writes them between a MANAGER row and its WORKER rows.
fn processor_rows(cpu: Option<&CpuReport>) -> Vec<Cells> {
    let Some(c) = cpu else { return Vec::new() };
    (c.per_core.iter())
        .map(|core| {
            let mut r = Cells::new();
            target(&mut r, "PROCESSOR", format!("CPU {}", core.cpu));
            put(&mut r, "% CPU Utilization", Some(core.busy_pct));
            put(
                &mut r,
                "% User Time",
                Some(core.modes.user + core.modes.nice),
            );
            put(&mut r, "% Privileged Time", Some(core.modes.system));
            put(&mut r, "% DPC Time", Some(core.modes.softirq));
            put(&mut r, "% Interrupt Time", Some(core.modes.irq));
            r
        })
        .collect()
}

/// A manager as Iometer writes a Dynamo running one worker: its MANAGER
/// row (`c`, named `name`), its PROCESSOR rows, then its WORKER row, the
/// manager's figures without the CPU columns, which Iometer leaves empty
/// on worker rows (CPU is the manager's).
fn one_worker_manager(rows: &mut Vec<Cells>, mut c: Cells, name: &str, cpu: Option<&CpuReport>) {
    target(&mut c, "MANAGER", name);
    c.remove("# Managers");
    let mut w = c.clone();
    // The CPU columns: "% CPU Utilization" to "CPU Effectiveness".
    let cpu_cols = (IOMETER_COLUMNS.iter()).skip_while(|c| **c != "% CPU Utilization");
    for k in cpu_cols.take_while(|c| **c != "Packets/Second") {
        w.remove(k);
    }
    target(&mut w, "WORKER", format!("{name} worker"));
    rows.push(c);
    rows.extend(processor_rows(cpu));
    rows.push(w);
}

/// A multi-host test as Iometer writes a test of several managers (one
/// Dynamo per host): the `ALL` row of the test's totals, then a `MANAGER`
/// row per host with that host's figures over its window and its own CPU.
/// A network host's figures are its own sends and receipts, except a
/// request/response server's, whose reads are the requests (as the
/// endpoint's row of a single-host test).
fn multi_host_rows(t: &TestRow, m: &Metrics, doc: &ResultDoc) -> Vec<Cells> {
    let cells = |m: &Metrics, endpoint: bool| match t.kind {
        Kind::Disk => Some(disk_cells(t, m)),
        _ => net_cells(t, m, endpoint, ""),
    };
    let mut rows = Vec::new();
    let Some(mut all) = cells(m, false) else {
        return rows;
    };
    target(&mut all, "ALL", "All");
    // A disk test is named by its access spec (disk_cells), as without hosts.
    all.entry("Access Specification Name")
        .or_insert_with(|| t.name.clone());
    all.insert("# Managers", doc.hosts.len().to_string());
    rows.push(all);
    for h in &doc.hosts {
        let mut hm = h.metrics.clone();
        // Totals over the window need its length; a host's is the test's.
        if let Some(w) = m.get(mn::WINDOW_S) {
            hm.entry(mn::WINDOW_S.to_string()).or_insert(*w);
        }
        let endpoint = t.kind == Kind::NetRr && h.role == "server";
        if let Some(mut c) = cells(&hm, endpoint) {
            c.entry("Access Specification Name")
                .or_insert_with(|| t.name.clone());
            // Each host runs its share as one worker (its engine's threads
            // are not reported apart): the worker's figures are the host's.
            one_worker_manager(&mut rows, c, &h.name, h.cpu.as_ref());
        }
    }
    rows
}

/// Iometer's I/O columns from the figures of one part of a disk run (a
/// worker, or a target). The read and write shares of `iops` and `mb_s`
/// go by the part's counts, so that Read + Write is the total as on
/// Iometer's rows. Latency per direction from the part's read and write
/// response times (absent from older documents: empty). No CPU
/// columns: per-worker CPU is not measured (Iometer leaves them empty on
/// its WORKER and DISK rows too).
fn io_cells(io: &IoCounts, m: &Metrics) -> Cells {
    let mut c = Cells::new();
    io_rate_cells(&mut c, m);
    let vals: [(&'static str, Option<f64>); 4] = [
        ("Bytes Read", Some(io.read_bytes as f64)),
        ("Bytes Written", Some(io.write_bytes as f64)),
        ("Read I/Os", Some(io.reads as f64)),
        ("Write I/Os", Some(io.writes as f64)),
    ];
    for (k, v) in vals {
        put(&mut c, k, v);
    }
    c
}

/// A disk test with a breakdown, the rows Iometer writes for one manager
/// (`ManagerList::SaveResults`, `Manager::SaveResults`,
/// `Worker::SaveResults`): the `ALL` row, a `MANAGER` row for this host
/// (the same figures: one host runs every worker), then each worker's
/// `WORKER` row followed by a `DISK` row for each of its targets.
///
/// Iometer's DISK row under a worker holds that worker's I/Os on that
/// target. iotoll measures those when a worker has one target (a worker
/// per target, the default, however many workers share a target): then
/// the rows nest as Iometer's do, the target's DISK row under each of its
/// workers with that worker's figures. With `spread` every worker has
/// every target, and the breakdown holds per-worker and per-target totals,
/// not each worker's share of each target: then all `WORKER` rows come
/// first and one `DISK` row per target follows with the target's totals
/// (all its workers). Either way the WORKER rows add up to the ALL row, and
/// so do the DISK rows.
///
/// `# Workers` and `# Disks` count as Iometer does: workers, and targets
/// per worker (a target two workers have counts twice). Iometer's
/// PROCESSOR rows (one per CPU) come between MANAGER and WORKER.
fn disk_breakdown_rows(mut all: Cells, b: &ResultDoc, host: &str) -> Vec<Cells> {
    let assigned: usize = b.workers.iter().map(|w| w.targets.len()).sum();
    let disks = if assigned > 0 {
        assigned
    } else {
        b.targets.len()
    };
    all.insert("# Workers", b.workers.len().to_string());
    all.insert("# Disks", disks.to_string());
    let mut manager = all.clone();
    target(&mut manager, "MANAGER", host);
    manager.remove("# Managers");
    // Settings Iometer repeats on its WORKER and DISK rows (the worker's).
    let settings: Vec<(&'static str, String)> = ["Starting Sector", "Maximum Size", "Queue Depth"]
        .into_iter()
        .filter_map(|k| all.get(k).map(|v| (k, v.clone())))
        .collect();
    let part = |kind: &str, name: String, io: &IoCounts, m: &Metrics| {
        let mut c = io_cells(io, m);
        target(&mut c, kind, name);
        c.extend(settings.iter().cloned());
        c
    };
    let spec_name = all.get("Access Specification Name").cloned();
    let worker = |w: &WorkerFigures| {
        let mut c = part("WORKER", format!("Worker {}", w.id), &w.counts, &w.metrics);
        if let Some(s) = &spec_name {
            c.insert("Access Specification Name", s.clone());
        }
        c.insert("# Disks", w.targets.len().to_string());
        c
    };
    let path = |n: u32| {
        (b.targets.get(n as usize))
            .map(|t| t.target.clone())
            .unwrap_or_else(|| format!("target {n}"))
    };
    let mut rows = vec![all, manager];
    rows.extend(processor_rows(b.cpu.local.as_ref()));
    let nested = !b.workers.is_empty() && b.workers.iter().all(|w| w.targets.len() <= 1);
    if nested {
        for w in &b.workers {
            rows.push(worker(w));
            if let Some(&n) = w.targets.first() {
                rows.push(part("DISK", path(n), &w.counts, &w.metrics));
            }
        }
    } else {
        rows.extend(b.workers.iter().map(worker));
        rows.extend(
            b.targets
                .iter()
                .map(|t| part("DISK", t.target.clone(), &t.counts, &t.metrics)),
        );
    }
    rows
}

/// A network test the way Iometer reports a network client worker: each
/// message sent is a write I/O, each one received a read I/O, and a
/// request/response pair is a transaction. `endpoint` gives the same test
/// seen from the endpoint (its reads are the client's writes); `prefix` is
/// the prefix of the CPU metrics to show ("" this host's, "remote_" the
/// endpoint's). Returns None when the test has nothing Iometer's network
/// columns can hold.
fn net_cells(t: &TestRow, m: &Metrics, endpoint: bool, prefix: &str) -> Option<Cells> {
    let g = |k: &str| m.get(k).copied();
    let sp = stated(t);
    let window = g("window_s");
    let mut c = Cells::new();
    // (read MB/s, write MB/s, read I/Os per s, write I/Os per s) as the client saw them.
    let (mut read_mb, mut write_mb, mut read_ios, mut write_ios) = match t.kind {
        Kind::NetStream | Kind::NetUdp => {
            // Goodput as the receivers counted it; iotoll counts bytes, not
            // send()/recv() calls, so the I/O counts stay empty.
            let write_mb = g("tx_mbit_s").map(|v| v / 8.0);
            let read_mb = g("rx_mbit_s").map(|v| v / 8.0);
            if write_mb.is_none() && read_mb.is_none() {
                return None;
            }
            put(
                &mut c,
                "Segments Retransmitted/Second",
                g("retransmits")
                    .zip(window)
                    .filter(|(_, w)| *w > 0.0)
                    .map(|(r, w)| r / w),
            );
            (read_mb, write_mb, None, None)
        }
        Kind::NetRr => {
            let tps = g("trans_s")?;
            put(&mut c, "Transactions per Second", Some(tps));
            put(&mut c, "Average Transaction Time", ms(g("rtt_mean_us")));
            put(&mut c, "Maximum Transaction Time", ms(g("rtt_max_us")));
            put(&mut c, "Queue Depth", sp.burst);
            (
                sp.resp.map(|b| tps * b / 1e6),
                sp.req.map(|b| tps * b / 1e6),
                Some(tps),
                Some(tps),
            )
        }
        Kind::NetCrr => {
            // One transaction per connection: Iometer's transaction columns.
            let tps = g("conn_s")?;
            put(&mut c, "Transactions per Second", Some(tps));
            put(&mut c, "Connections per Second", Some(tps));
            put(&mut c, "Average Transaction Time", ms(g("trans_mean_us")));
            put(&mut c, "Maximum Transaction Time", ms(g("trans_max_us")));
            (None, None, Some(tps), Some(tps))
        }
        Kind::NetCc => {
            put(&mut c, "Connections per Second", Some(g("conn_s")?));
            (None, None, None, None)
        }
        Kind::Disk => return None,
    };
    if endpoint {
        std::mem::swap(&mut read_mb, &mut write_mb);
        std::mem::swap(&mut read_ios, &mut write_ios);
    }
    let sum = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
    };
    let iops = read_ios.zip(write_ios).map(|(r, w)| r + w);
    let mb = sum(read_mb, write_mb);
    let total =
        |rate: Option<f64>, unit: f64| rate.zip(window).map(|(r, w)| (r * unit * w).round());
    put(&mut c, "IOps", iops);
    put(&mut c, "Read IOps", read_ios);
    put(&mut c, "Write IOps", write_ios);
    put(&mut c, "MBps (Binary)", mib(mb));
    put(&mut c, "Read MBps (Binary)", mib(read_mb));
    put(&mut c, "Write MBps (Binary)", mib(write_mb));
    put(&mut c, "MBps (Decimal)", mb);
    put(&mut c, "Read MBps (Decimal)", read_mb);
    put(&mut c, "Write MBps (Decimal)", write_mb);
    put(&mut c, "Bytes Read", total(read_mb, 1e6));
    put(&mut c, "Bytes Written", total(write_mb, 1e6));
    put(&mut c, "Read I/Os", total(read_ios, 1.0));
    put(&mut c, "Write I/Os", total(write_ios, 1.0));
    put(&mut c, "Errors", g("errors"));
    cpu_cells(&mut c, m, prefix);
    // Iometer's CPU Effectiveness: IOps per % CPU of the same manager.
    let cpu = m.get(&format!("{prefix}cpu_pct")).copied();
    let effectiveness = iops.zip(cpu).filter(|(_, c)| *c > 0.0).map(|(i, c)| i / c);
    put(&mut c, "CPU Effectiveness", effectiveness);
    Some(c)
}

pub fn iometer_csv(run: &RunDetail) -> Result<IometerExport, IometerEmpty> {
    let mut w = writer();
    for r in [
        &["'Test Type", "Test Description"][..],
        &["0", &run.run.suite],
        &["'Version"],
        &["1.1.0"],
        &["'Time Stamp"],
        &[&run.run.started_at],
    ] {
        row(&mut w, r);
    }
    let mut rows = 0;
    let mut skipped = Vec::new();
    let host = run
        .disclosure
        .as_ref()
        .and_then(|d| d.get("host"))
        .and_then(|h| h.as_str())
        .unwrap_or("local");
    for t in &run.tests {
        let Some(m) = selected_metrics(t) else {
            skipped.push(format!(
                "test '{}' has no selected repetition or means",
                t.name
            ));
            continue;
        };
        // A multi-host test's hosts add up to one repetition's figures (a
        // mean has none to add up to it).
        let multi_host = selected_doc(t).filter(|d| !d.hosts.is_empty());
        let lines = match (multi_host, t.kind) {
            (Some(doc), _) => Ok(multi_host_rows(t, m, doc)),
            (None, Kind::Disk) => Ok(match selected_breakdown(t) {
                Some(b) => disk_breakdown_rows(disk_cells(t, m), b, host),
                None => vec![disk_cells(t, m)],
            }),
            (None, _) => net_rows(t, m, host),
        };
        match lines {
            Ok(lines) => {
                // Iometer writes a results header before each test's rows.
                row(&mut w, ["'Results"]);
                row(&mut w, IOMETER_COLUMNS);
                lines.iter().for_each(|c| line(&mut w, c));
                rows += 1;
            }
            Err(why) => skipped.push(why),
        }
    }
    if rows == 0 {
        return Err(IometerEmpty {
            run: run.run.id,
            reasons: if skipped.is_empty() {
                vec!["it has no tests".into()]
            } else {
                skipped
            },
        });
    }
    Ok(IometerExport {
        text: text(w),
        skipped,
    })
}

/// A network test's rows: the totals, this host's manager with its
/// processors and worker, then the endpoint's when its CPU was measured.
/// Err: why the test has nothing Iometer's network columns can hold.
fn net_rows(t: &TestRow, m: &Metrics, host: &str) -> Result<Vec<Cells>, String> {
    let Some(mut all) = net_cells(t, m, false, "") else {
        return Err(format!(
            "test '{}' ({}) has no throughput or transaction rate",
            t.name, t.kind
        ));
    };
    let peer = stated(t).peer;
    let peer = peer.as_deref().unwrap_or("endpoint");
    let remote_cpu = m.contains_key("remote_cpu_pct");
    target(&mut all, "ALL", "All");
    all.insert("Access Specification Name", t.name.clone());
    all.insert("# Managers", if remote_cpu { "2" } else { "1" }.into());
    let mut rows = vec![all.clone()];
    // This host's manager, then the endpoint's when its CPU was
    // measured (Iometer writes one MANAGER row per Dynamo), each with
    // its PROCESSOR rows (of the selected repetition: a mean has no
    // one window per CPU) and its one network worker.
    let cpu = selected_doc(t).map(|d| &d.cpu);
    one_worker_manager(&mut rows, all, host, cpu.and_then(|c| c.local.as_ref()));
    if remote_cpu {
        if let Some(mut ep) = net_cells(t, m, true, "remote_") {
            ep.insert("Access Specification Name", t.name.clone());
            // The same kernel's CPUs are this host's, listed above.
            let remote = cpu.filter(|c| c.same_host != Some(true));
            let remote = remote.and_then(|c| c.remote.as_ref());
            one_worker_manager(&mut rows, ep, peer, remote);
        }
    }
    Ok(rows)
}
