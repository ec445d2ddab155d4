//! Exports of a stored run: long CSV, JSON, and Iometer 1.1.0's
//! results.csv layout for disk results (so existing spreadsheets keep
//! working). A value that was not measured is an empty cell, never 0.

use crate::{RunDetail, TestRow};
use iotoll_model::metrics::{self as mn, metric_def};
use iotoll_model::result::WorkerFigures;
use iotoll_model::{IoCounts, ResultDoc};
use iotoll_model::{Kind, Metrics};

/// A CSV writer into memory, quoting fields where RFC 4180 needs it; rows
/// may differ in length (Iometer's header block). Writing to memory cannot
/// fail, so its results are not checked.
fn writer() -> csv::Writer<Vec<u8>> {
    csv::WriterBuilder::new()
        .flexible(true)
        .from_writer(Vec::new())
}

/// A cell as it is safe to write: text that a spreadsheet would take for
/// a formula (it begins with `=`, `+`, `-`, `@`, a tab or a carriage
/// return: OWASP's CSV injection rule) gets a leading `'`. A cell that is
/// a plain number (`-5`, `-1.5e-3`: digits, sign, point and exponent
/// only) is left as it is: a number is data, never a formula, and a
/// quote would turn a negative figure into text. Every CSV row the
/// project writes goes through [`row`], so through this.
pub fn csv_cell(s: &str) -> std::borrow::Cow<'_, str> {
    let risky = s.starts_with(['=', '+', '-', '@', '\t', '\r']);
    if risky && !is_plain_number(s) {
        std::borrow::Cow::Owned(format!("'{s}"))
    } else {
        std::borrow::Cow::Borrowed(s)
    }
}

fn is_plain_number(s: &str) -> bool {
    s.bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'+' | b'-' | b'.' | b'e' | b'E'))
        && s.bytes().any(|b| b.is_ascii_digit())
        && s.parse::<f64>().is_ok_and(f64::is_finite)
}

/// Writes one row, every cell through [`csv_cell`].
fn row<I, S>(w: &mut csv::Writer<Vec<u8>>, cells: I)
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let cells: Vec<String> = cells
        .into_iter()
        .map(|c| csv_cell(c.as_ref()).into_owned())
        .collect();
    let _ = w.write_record(&cells);
}

fn text(w: csv::Writer<Vec<u8>>) -> String {
    // Only UTF-8 text went in.
    String::from_utf8_lossy(&w.into_inner().unwrap_or_default()).into_owned()
}

fn num(v: f64) -> String {
    // Shortest representation that reads back to the same value.
    format!("{v}")
}

/// The metrics a test is judged by: its selected repetition's, or the means.
pub fn selected_metrics(t: &TestRow) -> Option<&Metrics> {
    t.summary.as_ref().or_else(|| {
        t.reps
            .iter()
            .find(|r| Some(r.rep) == t.selected_rep)
            .map(|r| &r.doc.metrics)
    })
}

/// The long CSV's columns: `level` says what a row is a part of (`total`,
/// `host`, `pair`, `adapter`, `target`, `worker`) and `part` names it.
pub const CSV_HEAD: &str = "run,config,test,group,rep,selected,metric,value,unit,level,part";

/// The parts of one repetition's document, each as (level, part, metrics):
/// the totals first, then its hosts, pairs and adapters (multi-host tests),
/// targets and workers (disk runs). Each level's rows add up to the totals
/// as the document's do.
fn levels(doc: &ResultDoc) -> Vec<(&'static str, String, Metrics)> {
    let mut out = vec![("total", String::new(), doc.metrics.clone())];
    for h in &doc.hosts {
        out.push(("host", h.name.clone(), h.metrics.clone()));
    }
    for p in &doc.pairs {
        let m: Metrics = [
            (mn::CONNS, p.conns as f64),
            (mn::MBIT_S, p.mbit_s),
            ("client_to_server_bytes", p.client_to_server_bytes as f64),
            ("server_to_client_bytes", p.server_to_client_bytes as f64),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        out.push(("pair", format!("{}->{}", p.client, p.server), m));
    }
    for h in &doc.hosts {
        for i in &h.ifaces {
            let mut m: Metrics = [
                ("rx_bytes", i.rx_bytes as f64),
                ("tx_bytes", i.tx_bytes as f64),
                ("rx_packets", i.rx_packets as f64),
                ("tx_packets", i.tx_packets as f64),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
            for (k, v) in [(mn::RX_MBIT_S, i.rx_mbit_s), (mn::TX_MBIT_S, i.tx_mbit_s)] {
                if let Some(v) = v {
                    m.insert(k.to_string(), v);
                }
            }
            out.push(("adapter", format!("{}/{}", h.name, i.name), m));
        }
    }
    for t in &doc.targets {
        out.push(("target", t.target.clone(), t.metrics.clone()));
    }
    for w in &doc.workers {
        out.push(("worker", w.id.to_string(), w.metrics.clone()));
    }
    out
}

/// Long format: one row per repetition, part and metric (`level` and
/// `part`: the totals, then each host, pair, adapter, target and worker),
/// plus the means of a `mean` selection as rep `mean`, and the 95 %
/// confidence interval of the selection metric (3 or more repetitions) as
/// reps `ci95_low` and `ci95_high`.
pub fn csv(run: &RunDetail) -> String {
    let mut w = writer();
    row(&mut w, CSV_HEAD.split(','));
    let id = run.run.id.to_string();
    let config = run.run.config.as_deref().unwrap_or("");
    for t in &run.tests {
        let group = t.group.as_deref().unwrap_or("");
        let mut emit = |rep: &str, selected: bool, level: &str, part: &str, m: &Metrics| {
            for (k, v) in m {
                let unit = metric_def(k).map(|d| d.unit).unwrap_or(match k.as_str() {
                    "rx_bytes"
                    | "tx_bytes"
                    | "client_to_server_bytes"
                    | "server_to_client_bytes" => "bytes",
                    _ => "count",
                });
                let sel = selected.to_string();
                let r: [&str; 11] = [
                    &id,
                    config,
                    &t.name,
                    group,
                    rep,
                    &sel,
                    k,
                    &num(*v),
                    unit,
                    level,
                    part,
                ];
                row(&mut w, r);
            }
        };
        let all = t.select == "all";
        for r in &t.reps {
            let sel = all || Some(r.rep) == t.selected_rep;
            for (level, part, m) in levels(&r.doc) {
                emit(&r.rep.to_string(), sel, level, &part, &m);
            }
        }
        if t.select == "mean" {
            if let Some(m) = &t.summary {
                emit("mean", true, "total", "", m);
            }
        }
        if let Some(c) = &t.ci95 {
            for (rep, v) in [("ci95_low", c.low), ("ci95_high", c.high)] {
                let m: Metrics = [(c.metric.clone(), v)].into_iter().collect();
                emit(rep, false, "total", "", &m);
            }
        }
    }
    text(w)
}

pub fn json(run: &RunDetail) -> Result<String, serde_json::Error> {
    serde_json::to_string_pretty(run).map(|mut s| {
        s.push('\n');
        s
    })
}

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

fn line(cells: &Cells) -> Vec<String> {
    IOMETER_COLUMNS
        .iter()
        .map(|c| cells.get(c).cloned().unwrap_or_default())
        .collect()
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

fn disk_cells(t: &TestRow, m: &Metrics) -> Cells {
    let g = |k: &str| m.get(k).copied();
    let sp = stated(t);
    let window = g("window_s");
    let times = |rate: Option<f64>| rate.zip(window).map(|(r, w)| (r * w).round());
    let bytes = |mb: Option<f64>| mb.zip(window).map(|(v, w)| (v * 1e6 * w).round());
    let mib = |mb: Option<f64>| mb.map(|v| v * 1e6 / 1048576.0);
    let ms = |us: Option<f64>| us.map(|v| v / 1000.0);
    let lbs = sp.logical_block_size;
    let sectors = |bytes: Option<f64>| bytes.zip(lbs).map(|(b, lbs)| (b / lbs).floor());
    let mut c = Cells::new();
    c.insert("'Target Type", "ALL".into());
    c.insert("Target Name", "All".into());
    let name = sp.spec_name.as_deref();
    c.insert("Access Specification Name", name.unwrap_or(&t.name).into());
    c.insert("# Managers", "1".into());
    c.insert("# Disks", "1".into());
    let vals: [(&'static str, Option<f64>); 33] = [
        ("# Workers", sp.workers),
        ("IOps", g("iops")),
        ("Read IOps", g("read_iops")),
        ("Write IOps", g("write_iops")),
        ("MBps (Binary)", mib(g("mb_s"))),
        ("Read MBps (Binary)", mib(g("read_mb_s"))),
        ("Write MBps (Binary)", mib(g("write_mb_s"))),
        ("MBps (Decimal)", g("mb_s")),
        ("Read MBps (Decimal)", g("read_mb_s")),
        ("Write MBps (Decimal)", g("write_mb_s")),
        // A disk transaction is one I/O in Iometer.
        ("Transactions per Second", g("iops")),
        ("Average Response Time", ms(g("lat_mean_us"))),
        ("Average Transaction Time", ms(g("lat_mean_us"))),
        ("Maximum Response Time", ms(g("lat_max_us"))),
        ("Maximum Transaction Time", ms(g("lat_max_us"))),
        ("Average Read Response Time", ms(g(mn::READ_LAT_MEAN_US))),
        ("Average Write Response Time", ms(g(mn::WRITE_LAT_MEAN_US))),
        ("Maximum Read Response Time", ms(g(mn::READ_LAT_MAX_US))),
        ("Maximum Write Response Time", ms(g(mn::WRITE_LAT_MAX_US))),
        ("Errors", g("errors")),
        ("Bytes Read", bytes(g("read_mb_s"))),
        ("Bytes Written", bytes(g("write_mb_s"))),
        ("Read I/Os", times(g("read_iops"))),
        ("Write I/Os", times(g("write_iops"))),
        ("Starting Sector", sectors(sp.offset)),
        ("Maximum Size", sectors(sp.size)),
        ("Queue Depth", sp.qd),
        ("CPU Effectiveness", g("iops_per_cpu_pct")),
        ("Packets/Second", None),
        ("Packet Errors", None),
        ("Segments Retransmitted/Second", None),
        ("Connections", None),
        ("Connections per Second", None),
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
    if t.select == "mean" {
        return None;
    }
    let rep = t.selected_rep?;
    let b = &t.reps.iter().find(|r| r.rep == rep)?.doc;
    (!b.workers.is_empty() || !b.targets.is_empty()).then_some(b)
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

/// The document of a multi-host test's selected repetition, when the
/// test's figures are that repetition's (a mean has no hosts to add up to
/// it).
fn selected_multi_host(t: &TestRow) -> Option<&ResultDoc> {
    if t.select == "mean" {
        return None;
    }
    let rep = t.selected_rep?;
    let d = &t.reps.iter().find(|r| r.rep == rep)?.doc;
    (!d.hosts.is_empty()).then_some(d)
}

/// Iometer's PROCESSOR rows of one manager: one per CPU (`CPU 0`, ...),
/// each with that CPU's busy % and modes over the window, as Iometer
/// writes them between a MANAGER row and its WORKER rows.
fn processor_rows(cpu: Option<&iotoll_model::CpuReport>) -> Vec<Cells> {
    let Some(c) = cpu else { return Vec::new() };
    (c.per_core.iter())
        .map(|core| {
            let mut r = Cells::new();
            r.insert("'Target Type", "PROCESSOR".into());
            r.insert("Target Name", format!("CPU {}", core.cpu));
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

/// A manager's WORKER row: its figures without the CPU columns, which
/// Iometer leaves empty on worker rows (CPU is the manager's).
fn worker_row(manager: &Cells, name: String) -> Cells {
    let mut w = manager.clone();
    for k in [
        "% CPU Utilization",
        "% User Time",
        "% Privileged Time",
        "% DPC Time",
        "% Interrupt Time",
        "Processor Speed",
        "Interrupts per Second",
        "CPU Effectiveness",
    ] {
        w.remove(k);
    }
    w.insert("'Target Type", "WORKER".into());
    w.insert("Target Name", name);
    w
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
    all.insert("'Target Type", "ALL".into());
    all.insert("Target Name", "All".into());
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
            c.insert("'Target Type", "MANAGER".into());
            c.insert("Target Name", h.name.clone());
            c.entry("Access Specification Name")
                .or_insert_with(|| t.name.clone());
            c.remove("# Managers");
            // Each host runs its share as one worker (its engine's threads
            // are not reported apart): the worker's figures are the host's.
            let worker = worker_row(&c, format!("{} worker", h.name));
            rows.push(c);
            rows.extend(processor_rows(h.cpu.as_ref()));
            rows.push(worker);
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
    let get = |k: &str| m.get(k).copied();
    let mib = |v: Option<f64>| v.map(|v| v * 1e6 / 1048576.0);
    let ms = |us: Option<f64>| us.map(|v| v / 1000.0);
    let (iops, mb_s) = (get(mn::IOPS), get(mn::MB_S));
    let (read_mb, write_mb) = (get(mn::READ_MB_S), get(mn::WRITE_MB_S));
    let mut c = Cells::new();
    let vals: [(&'static str, Option<f64>); 24] = [
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
        ("Bytes Read", Some(io.read_bytes as f64)),
        ("Bytes Written", Some(io.write_bytes as f64)),
        ("Read I/Os", Some(io.reads as f64)),
        ("Write I/Os", Some(io.writes as f64)),
        ("Connections", None),
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
    manager.insert("'Target Type", "MANAGER".into());
    manager.insert("Target Name", host.to_string());
    manager.remove("# Managers");
    // Settings Iometer repeats on its WORKER and DISK rows (the worker's).
    let settings: Vec<(&'static str, String)> = ["Starting Sector", "Maximum Size", "Queue Depth"]
        .into_iter()
        .filter_map(|k| all.get(k).map(|v| (k, v.clone())))
        .collect();
    let part = |kind: &str, name: String, io: &IoCounts, m: &Metrics| {
        let mut c = io_cells(io, m);
        c.insert("'Target Type", kind.into());
        c.insert("Target Name", name);
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
        Kind::NetStream => {
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
            let ms = |us: Option<f64>| us.map(|v| v / 1000.0);
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
    let mib = |v: Option<f64>| v.map(|v| v * 1e6 / 1048576.0);
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
    // Iometer writes a results header before each test's rows.
    let header = |w: &mut csv::Writer<Vec<u8>>| {
        row(w, ["'Results"]);
        row(w, IOMETER_COLUMNS);
    };
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
        if let Some(doc) = selected_multi_host(t) {
            header(&mut w);
            for c in multi_host_rows(t, m, doc) {
                row(&mut w, line(&c));
            }
            rows += 1;
            continue;
        }
        if t.kind == Kind::Disk {
            header(&mut w);
            let all = disk_cells(t, m);
            match selected_breakdown(t) {
                Some(b) => {
                    for c in disk_breakdown_rows(all, b, host) {
                        row(&mut w, line(&c));
                    }
                }
                None => {
                    row(&mut w, line(&all));
                }
            }
            rows += 1;
            continue;
        }
        let Some(mut all) = net_cells(t, m, false, "") else {
            skipped.push(format!(
                "test '{}' ({}) has no throughput or transaction rate",
                t.name, t.kind
            ));
            continue;
        };
        let peer = stated(t).peer;
        let peer = peer.as_deref().unwrap_or("endpoint");
        let remote_cpu = m.contains_key("remote_cpu_pct");
        all.insert("'Target Type", "ALL".into());
        all.insert("Target Name", "All".into());
        all.insert("Access Specification Name", t.name.clone());
        all.insert("# Managers", if remote_cpu { "2" } else { "1" }.into());
        header(&mut w);
        row(&mut w, line(&all));
        // This host's manager, then the endpoint's when its CPU was
        // measured (Iometer writes one MANAGER row per Dynamo), each with
        // its PROCESSOR rows (of the selected repetition: a mean has no
        // one window per CPU) and its one network worker.
        let cpu = selected_doc(t).map(|d| &d.cpu);
        all.insert("'Target Type", "MANAGER".into());
        all.insert("Target Name", host.to_string());
        all.remove("# Managers");
        row(&mut w, line(&all));
        for c in processor_rows(cpu.and_then(|c| c.local.as_ref())) {
            row(&mut w, line(&c));
        }
        row(&mut w, line(&worker_row(&all, format!("{host} worker"))));
        if remote_cpu {
            if let Some(mut ep) = net_cells(t, m, true, "remote_") {
                ep.insert("'Target Type", "MANAGER".into());
                ep.insert("Target Name", peer.to_string());
                ep.insert("Access Specification Name", t.name.clone());
                row(&mut w, line(&ep));
                // The same kernel's CPUs are this host's, listed above.
                let remote = cpu.filter(|c| c.same_host != Some(true));
                for c in processor_rows(remote.and_then(|c| c.remote.as_ref())) {
                    row(&mut w, line(&c));
                }
                row(&mut w, line(&worker_row(&ep, format!("{peer} worker"))));
            }
        }
        rows += 1;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{RepRow, RunRow};
    use serde_json::{json, Value};

    /// Repetition `rep`: a complete result of `kind` with `spec` and `metrics`.
    /// Names the document's access specification.
    fn name_spec(doc: &mut ResultDoc, name: &str) {
        let mut s = doc.spec.to_value();
        s["spec"] = name.into();
        doc.spec = iotoll_model::spec::Spec::of(doc.kind, s);
    }

    fn result(rep: i64, kind: &str, config: &str, spec: Value, metrics: Value) -> RepRow {
        RepRow {
            rep,
            status: iotoll_model::ResultStatus::Complete,
            doc: serde_json::from_value(json!({
                "iotoll_version": "0.1.0", "kind": kind, "status": "complete",
                "started_at": "2026-11-22T00:00:00Z", "config": config, "spec": spec,
                "metrics": metrics,
                "cpu": {"local": null, "remote": null}, "latency": null, "series": [], "notes": [], "disclosure": null
            }))
            .unwrap(),
        }
    }

    fn disk_rep(rep: i64, iops: f64, read_iops: f64, cpu: f64) -> RepRow {
        let spec = json!({
            "spec": "db-oltp-8k", "workers": 1, "qd": 28, "offset": 0, "size": 4294967296u64,
            "logical_block_size": 512
        });
        let metrics = json!({
            "window_s": 10.0, "iops": iops, "read_iops": read_iops, "write_iops": iops - read_iops,
            "mb_s": iops * 8192.0 / 1e6, "read_mb_s": read_iops * 8192.0 / 1e6,
            "write_mb_s": (iops - read_iops) * 8192.0 / 1e6, "lat_mean_us": 250.0, "lat_max_us": 4000.0,
            "errors": 0.0, "cpu_pct": cpu, "cpu_user_pct": 1.0, "cpu_system_pct": cpu - 2.0,
            "cpu_softirq_pct": 0.5, "cpu_irq_pct": 0.5, "cpu_nominal_mhz": 2600.0,
            "interrupts_s": 5000.0, "iops_per_cpu_pct": iops / cpu
        });
        result(rep, "disk", "hba", spec, metrics)
    }

    fn run() -> RunDetail {
        let reps = vec![
            disk_rep(1, 1000.0, 700.0, 10.0),
            disk_rep(2, 1100.0, 770.0, 11.0),
        ];
        RunDetail {
            run: RunRow {
                id: 7,
                suite: "iscsi-initiator-study".into(),
                config: Some("hba, port 1".into()),
                started_at: "2026-11-22T00:00:00Z".into(),
                finished_at: Some("2026-11-22T01:00:00Z".into()),
                status: iotoll_model::RunStatus::Complete,
                notes: vec![],
                tests: 1,
            },
            disclosure: None,
            suite_text: None,
            tests: vec![TestRow {
                seq: 1,
                name: "small-block/spec=db-oltp-8k".into(),
                kind: iotoll_model::Kind::Disk,
                group: Some("iops".into()),
                params: json!({"spec": "db-oltp-8k"}),
                select: "median:iops".into(),
                selected_rep: Some(1),
                spread_pct: Some(10.0),
                repeatable: Some(false),
                summary: None,
                ci95: None,
                reps,
            }],
        }
    }

    #[test]
    fn long_csv() {
        insta::assert_snapshot!(csv(&run()));
    }

    #[test]
    fn csv_export_imports_back_with_newlines_and_commas_in_fields() {
        let (name, group) = ("read,\n\"4k\"", "g,\r\n1");
        let mut r = run();
        (r.tests[0].name, r.tests[0].group) = (name.into(), Some(group.into()));
        let out = csv(&r);
        let recs: Vec<csv::StringRecord> = csv::Reader::from_reader(out.as_bytes())
            .records()
            .map(Result::unwrap)
            .filter(|rec| &rec[5] == "true")
            .collect();
        assert!(recs.iter().all(|rec| (&rec[2], &rec[3]) == (name, group)));
        // The selected repetition's rows as a table `results import` takes.
        let mut w = writer();
        let _ = w.write_record(
            ["test", "group"]
                .into_iter()
                .chain(recs.iter().map(|r| &r[6])),
        );
        let _ = w.write_record([name, group].into_iter().chain(recs.iter().map(|r| &r[7])));
        let back = crate::import::table(text(w).as_bytes(), "t.csv").unwrap();
        assert_eq!(
            (back[0].name.as_str(), back[0].group.as_deref()),
            (name, Some(group))
        );
        assert_eq!(back[0].doc.metrics["iops"], 1000.0);
        // Iometer's layout quotes the same way.
        r.run.suite = "study,\n2".into();
        name_spec(&mut r.tests[0].reps[0].doc, name);
        let text = iometer_csv(&r).unwrap().text;
        let recs: Vec<csv::StringRecord> = csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .from_reader(text.as_bytes())
            .into_records()
            .map(Result::unwrap)
            .collect();
        assert_eq!(
            (recs.len(), &recs[1][1], &recs[8][2]),
            (9, "study,\n2", name)
        );
    }

    #[test]
    fn csv_exports_defuse_formula_cells_but_keep_numbers() {
        let hostile = [
            "=HYPERLINK(\"http://x\",\"y\")",
            "=cmd|' C calc'!A0",
            "@SUM(A1:A2)",
            "+1+1",
            "-2+3",
            "\tx",
            "\rx",
        ];
        for h in hostile {
            let mut r = run();
            r.run.config = Some(h.into());
            r.run.suite = h.into();
            r.tests[0].name = h.into();
            r.tests[0].group = Some(h.into());
            name_spec(&mut r.tests[0].reps[0].doc, h);
            r.tests[0].reps[0]
                .doc
                .metrics
                .insert("latency_us".into(), -5.0);
            let out = csv(&r);
            let recs: Vec<csv::StringRecord> = csv::Reader::from_reader(out.as_bytes())
                .records()
                .map(Result::unwrap)
                .collect();
            let want = format!("'{h}");
            for rec in &recs {
                assert_eq!((&rec[1], &rec[2], &rec[3]), (&*want, &*want, &*want));
            }
            // A figure the code wrote from an f64 stays a number.
            assert!(recs
                .iter()
                .any(|rec| &rec[6] == "latency_us" && &rec[7] == "-5"));
            let text = iometer_csv(&r).unwrap().text;
            let recs: Vec<csv::StringRecord> = csv::ReaderBuilder::new()
                .has_headers(false)
                .flexible(true)
                .from_reader(text.as_bytes())
                .into_records()
                .map(Result::unwrap)
                .collect();
            assert_eq!(&recs[1][1], want, "suite");
            assert_eq!(&recs[8][2], want, "access specification (test name)");
            for rec in &recs {
                for c in rec {
                    assert!(
                        !c.starts_with(['=', '+', '@', '\t', '\r'])
                            && (!c.starts_with('-') || c.parse::<f64>().is_ok()),
                        "{c:?} in {rec:?}"
                    );
                }
            }
        }
        assert_eq!(csv_cell("-1.5e-3"), "-1.5e-3");
        assert_eq!(csv_cell("-inf"), "'-inf");
        assert_eq!(csv_cell("-"), "'-");
        assert_eq!(csv_cell("'Target Type"), "'Target Type");
        assert_eq!(csv_cell("read 4k"), "read 4k");
    }

    #[test]
    fn iometer_results_csv() {
        let e = iometer_csv(&run()).unwrap();
        assert!(e.skipped.is_empty());
        let out = e.text;
        assert_eq!(cells(&out, 7), IOMETER_COLUMNS, "the header");
        let row = cells(&out, 8);
        let col = |name: &str| col(&row, name).to_string();
        // The selected repetition (rep 1), Iometer's units: ms, decimal MB/s.
        assert_eq!(col("IOps"), "1000");
        assert_eq!(col("Average Response Time"), "0.25");
        assert_eq!(col("MBps (Decimal)"), "8.192");
        assert_eq!(col("% CPU Utilization"), "10");
        assert_eq!(col("CPU Effectiveness"), "100");
        assert_eq!(col("Read I/Os"), "7000");
        assert_eq!(col("Maximum Size"), "8388608");
        assert_eq!(
            col("Average Read Response Time"),
            "",
            "not measured: empty, never 0"
        );
        insta::assert_snapshot!(out);
    }

    fn net_run(kind: &str, metrics: Value, spec: Value) -> RunDetail {
        let mut r = run();
        r.run.suite = "net-stream".into();
        r.disclosure = Some(json!({"host": "lab-a"}));
        r.tests = vec![TestRow {
            seq: 1,
            name: if kind == "net-rr" {
                "rr/req=1k,resp=16k,conns=2,burst=4".into()
            } else {
                "stream/dir=bidir,conns=4,msg=64k".into()
            },
            kind: kind.parse().unwrap(),
            group: None,
            params: json!({}),
            select: "median".into(),
            selected_rep: Some(1),
            spread_pct: None,
            repeatable: None,
            summary: None,
            ci95: None,
            reps: vec![result(1, kind, "mtu9000", spec, metrics)],
        }];
        r
    }

    /// One CSV line split into cells, quotes honoured.
    fn cells(out: &str, line: usize) -> Vec<String> {
        let l = out.lines().nth(line).unwrap();
        let mut r = csv::ReaderBuilder::new();
        let rec = r
            .has_headers(false)
            .from_reader(l.as_bytes())
            .into_records()
            .next();
        let row: Vec<String> = rec.unwrap().unwrap().iter().map(String::from).collect();
        assert_eq!(row.len(), IOMETER_COLUMNS.len(), "{l}");
        row
    }

    fn col<'a>(row: &'a [String], name: &str) -> &'a str {
        &row[IOMETER_COLUMNS.iter().position(|c| *c == name).unwrap()]
    }

    #[test]
    fn iometer_network_stream() {
        let r = net_run(
            "net-stream",
            json!({
                "window_s": 10.0, "mbit_s": 1200.0, "tx_mbit_s": 800.0, "rx_mbit_s": 400.0,
                "conns": 4.0, "retransmits": 25.0, "errors": 0.0,
                "cpu_pct": 40.0, "cpu_user_pct": 2.0, "cpu_system_pct": 30.0,
                "cpu_softirq_pct": 7.0, "cpu_irq_pct": 1.0, "interrupts_s": 20000.0,
                "remote_cpu_pct": 20.0, "remote_cpu_user_pct": 1.0, "remote_cpu_system_pct": 15.0,
                "mbit_s_per_cpu_pct": 30.0
            }),
            json!({"peer": "10.0.0.2:7575", "conns": 4, "dir": "bidir", "msg": 65536}),
        );
        let out = iometer_csv(&r).unwrap().text;
        // ALL, this host's MANAGER and its WORKER, the endpoint's MANAGER
        // and its WORKER (no CPU window in the fixture: no PROCESSOR rows).
        assert_eq!(out.lines().count(), 13, "{out}");
        let worker = cells(&out, 10);
        assert_eq!(
            (col(&worker, "'Target Type"), col(&worker, "Target Name")),
            ("WORKER", "lab-a worker")
        );
        assert_eq!(
            col(&worker, "Write MBps (Decimal)"),
            "100",
            "the host's figures"
        );
        assert_eq!(
            col(&worker, "% CPU Utilization"),
            "",
            "CPU is the manager's"
        );
        let all = cells(&out, 8);
        let c = |name: &str| col(&all, name).to_string();
        assert_eq!(c("'Target Type"), "ALL");
        assert_eq!(
            c("Access Specification Name"),
            "stream/dir=bidir,conns=4,msg=64k"
        );
        assert_eq!(c("# Managers"), "2");
        assert_eq!(c("MBps (Decimal)"), "150");
        assert_eq!(c("Write MBps (Decimal)"), "100");
        assert_eq!(c("Read MBps (Decimal)"), "50");
        assert_eq!(c("Bytes Written"), "1000000000");
        assert_eq!(c("% CPU Utilization"), "40");
        assert_eq!(c("Segments Retransmitted/Second"), "2.5");
        assert_eq!(
            c("IOps"),
            "",
            "send/recv calls are not counted: empty, never 0"
        );
        assert_eq!(c("Transactions per Second"), "");
        let ep = cells(&out, 11);
        assert_eq!(col(&ep, "'Target Type"), "MANAGER");
        assert_eq!(col(&ep, "Target Name"), "10.0.0.2:7575");
        assert_eq!(
            col(&ep, "% CPU Utilization"),
            "20",
            "the endpoint's own CPU"
        );
        assert_eq!(
            col(&ep, "Read MBps (Decimal)"),
            "100",
            "the endpoint reads what we send"
        );
        insta::assert_snapshot!(out);
    }

    #[test]
    fn iometer_network_rr() {
        let r = net_run(
            "net-rr",
            json!({
                "window_s": 10.0, "trans_s": 20000.0, "conns": 2.0, "errors": 0.0,
                "rtt_mean_us": 400.0, "rtt_max_us": 2500.0,
                "cpu_pct": 25.0, "cpu_user_pct": 5.0, "cpu_system_pct": 15.0
            }),
            json!({"peer": "[::1]:7575", "conns": 2, "req": 1000, "resp": 16000, "burst": 4}),
        );
        let out = iometer_csv(&r).unwrap().text;
        // No endpoint CPU measured: ALL and this host's MANAGER and WORKER only.
        assert_eq!(out.lines().count(), 11, "{out}");
        let all = cells(&out, 8);
        let c = |name: &str| col(&all, name).to_string();
        assert_eq!(c("Transactions per Second"), "20000");
        assert_eq!(c("IOps"), "40000", "a request write and a response read");
        assert_eq!(c("Write MBps (Decimal)"), "20");
        assert_eq!(c("Read MBps (Decimal)"), "320");
        assert_eq!(c("Average Transaction Time"), "0.4");
        assert_eq!(c("Maximum Transaction Time"), "2.5");
        assert_eq!(c("Queue Depth"), "4");
        assert_eq!(c("CPU Effectiveness"), "1600");
        assert_eq!(
            c("Average Response Time"),
            "",
            "per-message latency is not measured"
        );
        assert_eq!(col(&cells(&out, 9), "Target Name"), "lab-a");
        insta::assert_snapshot!(out);
    }

    /// issue 23 §7: PROCESSOR rows per CPU of each manager of a network
    /// test; an endpoint on this very kernel has no CPUs of its own.
    #[test]
    fn iometer_network_managers_have_their_processors() {
        let cores = |n: u32| iotoll_model::CpuReport {
            cpus: n,
            per_core: (0..n)
                .map(|cpu| iotoll_model::CpuCore {
                    cpu,
                    busy_pct: 10.0 * (cpu + 1) as f64,
                    modes: iotoll_model::CpuModes {
                        user: 0.0,
                        nice: 0.0,
                        system: 0.0,
                        irq: 0.0,
                        softirq: 0.0,
                        iowait: 0.0,
                        steal: 0.0,
                        idle: 100.0,
                    },
                })
                .collect(),
            ..Default::default()
        };
        for (same_host, want) in [(Some(false), 2 + 4), (Some(true), 2)] {
            let mut r = net_run(
                "net-stream",
                json!({"window_s": 10.0, "mbit_s": 800.0, "tx_mbit_s": 800.0, "rx_mbit_s": 0.0,
                       "cpu_pct": 40.0, "remote_cpu_pct": 20.0}),
                json!({"peer": "10.0.0.2:7575", "conns": 4, "dir": "tx", "msg": 65536}),
            );
            let cpu = &mut r.tests[0].reps[0].doc.cpu;
            (cpu.local, cpu.remote, cpu.same_host) = (Some(cores(2)), Some(cores(4)), same_host);
            let out = iometer_csv(&r).unwrap().text;
            let rows: Vec<(String, String)> = (8..out.lines().count())
                .map(|l| {
                    let c = cells(&out, l);
                    (
                        col(&c, "'Target Type").to_string(),
                        col(&c, "Target Name").to_string(),
                    )
                })
                .collect();
            let procs: Vec<&(String, String)> =
                rows.iter().filter(|r| r.0 == "PROCESSOR").collect();
            assert_eq!(procs.len(), want, "{out}");
            // This host's two come right after its MANAGER row.
            assert_eq!(rows[1].0, "MANAGER", "{out}");
            assert_eq!(
                (&rows[2].1, &rows[3].1),
                (&"CPU 0".to_string(), &"CPU 1".to_string())
            );
            assert_eq!(
                col(&cells(&out, 11), "% CPU Utilization"),
                "20",
                "CPU 1's own"
            );
        }
    }

    /// issue 23 §7: separate read and write response times.
    #[test]
    fn iometer_has_read_and_write_response_times() {
        let mut r = run();
        let m = &mut r.tests[0].reps[0].doc.metrics;
        for (k, v) in [
            ("read_lat_mean_us", 200.0),
            ("write_lat_mean_us", 350.0),
            ("read_lat_max_us", 4000.0),
            ("write_lat_max_us", 2500.0),
        ] {
            m.insert(k.into(), v);
        }
        let out = iometer_csv(&r).unwrap().text;
        let all = cells(&out, 8);
        assert_eq!(col(&all, "'Target Type"), "ALL", "{out}");
        assert_eq!(
            [
                "Average Read Response Time",
                "Average Write Response Time",
                "Maximum Read Response Time",
                "Maximum Write Response Time"
            ]
            .map(|k| col(&all, k).to_string()),
            ["0.2", "0.35", "4", "2.5"]
        );
    }

    /// issue 23 §7: a multi-host run's long CSV has its hosts, pairs and
    /// adapters beside the totals (a `level` column), and they add up.
    #[test]
    fn long_csv_has_every_level_of_a_multi_host_run() {
        let mut r = net_run(
            "net-stream",
            json!({"window_s": 10.0, "mbit_s": 1600.0, "cpu_pct": 20.0}),
            json!({"dir": "tx", "conns": 4, "msg": 65536}),
        );
        let host = |name: &str, mbit: f64| iotoll_model::HostFigures {
            name: name.into(),
            role: "client".into(),
            metrics: [("mbit_s".to_string(), mbit)].into_iter().collect(),
            ifaces: vec![
                iotoll_model::IfaceFigures {
                    name: "eth0".into(),
                    tx_bytes: 600_000_000,
                    ..Default::default()
                }
                .with_rates(10.0),
                iotoll_model::IfaceFigures {
                    name: "eth1".into(),
                    tx_bytes: 400_000_000,
                    ..Default::default()
                }
                .with_rates(10.0),
            ],
            ..Default::default()
        };
        let pair = |c: &str, bytes: u64| iotoll_model::PairFigures {
            client: c.into(),
            server: "s1".into(),
            conns: 2,
            client_to_server_bytes: bytes,
            server_to_client_bytes: 0,
            mbit_s: bytes as f64 * 8.0 / 10.0 / 1e6,
        };
        let d = &mut r.tests[0].reps[0].doc;
        d.hosts = vec![host("c1", 800.0), host("c2", 800.0)];
        d.pairs = vec![pair("c1", 1_000_000_000), pair("c2", 1_000_000_000)];
        let out = csv(&r);
        let recs: Vec<csv::StringRecord> = csv::Reader::from_reader(out.as_bytes())
            .records()
            .map(Result::unwrap)
            .collect();
        let sum = |level: &str, metric: &str| -> f64 {
            (recs.iter())
                .filter(|r| &r[9] == level && &r[6] == metric)
                .map(|r| r[7].parse::<f64>().unwrap())
                .sum()
        };
        assert_eq!(sum("total", "mbit_s"), 1600.0);
        assert_eq!(sum("host", "mbit_s"), 1600.0, "{out}");
        assert_eq!(sum("pair", "mbit_s"), 1600.0, "{out}");
        assert_eq!(sum("adapter", "tx_bytes"), 2e9, "{out}");
        assert_eq!(sum("adapter", "tx_mbit_s"), 1600.0, "{out}");
        let parts: std::collections::BTreeSet<(String, String)> = (recs.iter())
            .map(|r| (r[9].to_string(), r[10].to_string()))
            .collect();
        for want in [("host", "c1"), ("pair", "c2->s1"), ("adapter", "c1/eth1")] {
            assert!(parts.contains(&(want.0.into(), want.1.into())), "{parts:?}");
        }
    }

    /// issue 23 §6: the 95 % CI of the selection metric is exported.
    #[test]
    fn long_csv_has_the_confidence_interval() {
        let mut r = run();
        let t = &mut r.tests[0];
        t.reps = vec![
            disk_rep(1, 1000.0, 700.0, 10.0),
            disk_rep(2, 1100.0, 770.0, 10.0),
            disk_rep(3, 1200.0, 840.0, 10.0),
        ];
        t.ci95 = t.compute_ci95();
        let out = csv(&r);
        let ci = iotoll_model::Ci95::of("iops", [1000.0, 1100.0, 1200.0]).unwrap();
        assert!(
            out.contains(&format!(",ci95_low,false,iops,{},", ci.low)),
            "{out}"
        );
        assert!(
            out.contains(&format!(",ci95_high,false,iops,{},", ci.high)),
            "{out}"
        );
    }

    /// A multi-host stream test: the ALL row of its totals, then one
    /// MANAGER row per host with its own figures and CPU.
    #[test]
    fn iometer_multi_host_stream_has_a_manager_per_host() {
        let mut r = net_run(
            "net-stream",
            json!({"window_s": 10.0, "mbit_s": 1600.0, "tx_mbit_s": 1600.0, "rx_mbit_s": 0.0,
                   "cpu_pct": 20.0, "remote_cpu_pct": 30.0}),
            json!({"dir": "tx", "conns": 4, "msg": 65536}),
        );
        let host = |name: &str, role: &str, tx: f64, rx: f64, cpu: f64| iotoll_model::HostFigures {
            name: name.into(),
            role: role.into(),
            cpus: 4,
            metrics: [
                ("mbit_s", tx + rx),
                ("tx_mbit_s", tx),
                ("rx_mbit_s", rx),
                ("cpu_pct", cpu),
            ]
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect(),
            ..Default::default()
        };
        r.tests[0].reps[0].doc.hosts = vec![
            host("s1", "server", 0.0, 1600.0, 30.0),
            host("c1", "client", 800.0, 0.0, 18.0),
            host("c2", "client", 800.0, 0.0, 22.0),
        ];
        // The server's two CPUs, each with its own figures.
        let core = |cpu: u32, busy: f64| iotoll_model::CpuCore {
            cpu,
            busy_pct: busy,
            modes: iotoll_model::CpuModes {
                user: busy / 2.0,
                nice: 0.0,
                system: busy / 4.0,
                irq: 0.0,
                softirq: busy / 4.0,
                iowait: 0.0,
                steal: 0.0,
                idle: 100.0 - busy,
            },
        };
        r.tests[0].reps[0].doc.hosts[0].cpu = Some(iotoll_model::CpuReport {
            cpus: 2,
            busy_pct: 30.0,
            per_core: vec![core(0, 40.0), core(1, 20.0)],
            ..Default::default()
        });
        let out = iometer_csv(&r).unwrap().text;
        // Header block (6), the results header (2), ALL, then per host its
        // MANAGER, its PROCESSOR rows and its WORKER.
        assert_eq!(out.lines().count(), 8 + 1 + 3 * 2 + 2, "{out}");
        let kinds: Vec<(String, String)> = (8..17)
            .map(|l| {
                let c = cells(&out, l);
                (
                    col(&c, "'Target Type").to_string(),
                    col(&c, "Target Name").to_string(),
                )
            })
            .collect();
        let want = [
            ("ALL", "All"),
            ("MANAGER", "s1"),
            ("PROCESSOR", "CPU 0"),
            ("PROCESSOR", "CPU 1"),
            ("WORKER", "s1 worker"),
            ("MANAGER", "c1"),
            ("WORKER", "c1 worker"),
            ("MANAGER", "c2"),
            ("WORKER", "c2 worker"),
        ];
        assert_eq!(kinds, pairs(&want), "{out}");
        let p0 = cells(&out, 10);
        assert_eq!(
            (
                col(&p0, "% CPU Utilization"),
                col(&p0, "% User Time"),
                col(&p0, "% DPC Time")
            ),
            ("40", "20", "10")
        );
        let w = cells(&out, 12);
        assert_eq!(col(&w, "% CPU Utilization"), "", "CPU is the manager's");
        assert_eq!(col(&w, "Read MBps (Decimal)"), "200", "the host's figures");
        let all = cells(&out, 8);
        assert_eq!(col(&all, "'Target Type"), "ALL");
        assert_eq!(col(&all, "# Managers"), "3");
        assert_eq!(col(&all, "Write MBps (Decimal)"), "200");
        assert_eq!(col(&all, "% CPU Utilization"), "20");
        let s1 = cells(&out, 9);
        assert_eq!(
            (col(&s1, "'Target Type"), col(&s1, "Target Name")),
            ("MANAGER", "s1")
        );
        assert_eq!(
            col(&s1, "Read MBps (Decimal)"),
            "200",
            "the server received it all"
        );
        assert_eq!(
            col(&s1, "Bytes Read"),
            "2000000000",
            "over the test's window"
        );
        assert_eq!(col(&s1, "% CPU Utilization"), "30", "its own CPU");
        let c2 = cells(&out, 15);
        assert_eq!(col(&c2, "Target Name"), "c2");
        assert_eq!(col(&c2, "Write MBps (Decimal)"), "100");
        assert_eq!(col(&c2, "% CPU Utilization"), "22");
    }

    /// The `counts` and `metrics` of `reads` and `writes` 8 KiB I/Os over
    /// run()'s 10 s window.
    fn io(reads: u64, writes: u64, lat_mean_us: f64) -> (Value, Value) {
        let (ios, bytes) = (reads + writes, (reads + writes) * 8192);
        let counts = json!({"reads": reads, "writes": writes, "read_bytes": reads * 8192,
            "write_bytes": writes * 8192});
        let metrics = json!({
            "errors": 0, "iops": ios as f64 / 10.0, "read_iops": reads as f64 / 10.0,
            "write_iops": writes as f64 / 10.0, "mb_s": bytes as f64 / 10.0 / 1e6,
            "read_mb_s": (reads * 8192) as f64 / 10.0 / 1e6,
            "write_mb_s": (writes * 8192) as f64 / 10.0 / 1e6, "lat_mean_us": lat_mean_us,
            "lat_p99_us": 900.0, "lat_max_us": 4000.0
        });
        (counts, metrics)
    }

    fn target(path: &str, workers: &[u32], reads: u64, writes: u64) -> Value {
        let (counts, metrics) = io(reads, writes, 250.0);
        json!({"target": path, "target_kind": "block-device", "workers": workers,
               "counts": counts, "metrics": metrics})
    }

    fn worker(n: u32, targets: &[u32], reads: u64, writes: u64, lat: f64) -> Value {
        let (counts, metrics) = io(reads, writes, lat);
        json!({"id": n, "cpu": n, "targets": targets, "pinned": null, "ran_on": [n],
               "pinned_busy_pct": null, "counts": counts, "metrics": metrics})
    }

    /// Sets the per-target and per-worker figures of `doc` from `parts`.
    fn set_parts(doc: &mut iotoll_model::ResultDoc, parts: &Value) {
        doc.targets = serde_json::from_value(parts["targets"].clone()).unwrap();
        doc.workers = serde_json::from_value(parts["workers"].clone()).unwrap();
    }

    /// run() with per-target and per-worker figures on the selected
    /// repetition (rep 1: 7000 reads and 3000 writes in 10 s, 1000 IOPS).
    fn run_with(parts: Value) -> RunDetail {
        let mut r = run();
        set_parts(&mut r.tests[0].reps[0].doc, &parts);
        r
    }

    /// `spread`: 2 workers, each on both targets; per-worker and per-target
    /// totals only.
    fn spread_run() -> RunDetail {
        run_with(json!({
            "targets": [
                target("/dev/sdb", &[0, 1], 5000, 1500),
                target("/dev/sdc", &[0, 1], 2000, 1500)
            ],
            "workers": [worker(0, &[0, 1], 4000, 2000, 240.0), worker(1, &[0, 1], 3000, 1000, 265.0)],
            "lines": []
        }))
    }

    /// A worker per target, 2 per target: 4 workers, each on one target.
    fn nested_run() -> RunDetail {
        run_with(json!({
            "targets": [
                target("/dev/sdb", &[0, 1], 5000, 1500),
                target("/dev/sdc", &[2, 3], 2000, 1500)
            ],
            "workers": [
                worker(0, &[0], 2500, 750, 240.0), worker(1, &[0], 2500, 750, 250.0),
                worker(2, &[1], 1000, 750, 255.0), worker(3, &[1], 1000, 750, 260.0)
            ],
            "lines": []
        }))
    }

    /// The results rows (after the header block) as cells.
    fn result_rows(out: &str) -> Vec<Vec<String>> {
        (8..out.lines().count()).map(|i| cells(out, i)).collect()
    }

    fn kinds_and_names(rows: &[Vec<String>]) -> Vec<(String, String)> {
        rows.iter()
            .map(|r| (col(r, "'Target Type").into(), col(r, "Target Name").into()))
            .collect()
    }

    fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn iometer_breakdown_spread_rows() {
        let out = iometer_csv(&spread_run()).unwrap().text;
        let rows = result_rows(&out);
        assert_eq!(
            kinds_and_names(&rows),
            pairs(&[
                ("ALL", "All"),
                ("MANAGER", "local"),
                ("WORKER", "Worker 0"),
                ("WORKER", "Worker 1"),
                ("DISK", "/dev/sdb"),
                ("DISK", "/dev/sdc"),
            ])
        );
        let c = |row: usize, name: &str| col(&rows[row], name).to_string();
        // Iometer's counts: 2 workers, 2 targets each.
        assert_eq!(
            (c(0, "# Workers"), c(0, "# Disks")),
            ("2".into(), "4".into())
        );
        assert_eq!(
            c(1, "# Managers"),
            "",
            "Iometer leaves it empty on MANAGER rows"
        );
        for k in [
            "IOps",
            "% CPU Utilization",
            "CPU Effectiveness",
            "Read I/Os",
        ] {
            assert_eq!(c(1, k), c(0, k), "MANAGER = ALL: {k}");
        }
        assert_eq!(c(2, "IOps"), "600");
        assert_eq!(c(2, "Read IOps"), "400");
        assert_eq!(c(2, "Write IOps"), "200");
        assert_eq!(c(2, "Read I/Os"), "4000");
        assert_eq!(c(2, "Bytes Written"), "16384000");
        assert_eq!(c(2, "Average Response Time"), "0.24");
        assert_eq!(c(2, "Transactions per Second"), "600");
        assert_eq!(c(2, "# Disks"), "2");
        assert_eq!(c(2, "Access Specification Name"), "db-oltp-8k");
        assert_eq!(c(2, "Queue Depth"), "28");
        assert_eq!(c(4, "IOps"), "650", "the target's totals, all its workers");
        assert_eq!(c(4, "Access Specification Name"), "");
        for row in 2..6 {
            for k in [
                "% CPU Utilization",
                "% User Time",
                "Processor Speed",
                "CPU Effectiveness",
            ] {
                assert_eq!(c(row, k), "", "per-worker CPU is not measured: {k}");
            }
            assert_eq!(c(row, "Average Read Response Time"), "");
        }
        insta::assert_snapshot!(out);
    }

    #[test]
    fn iometer_breakdown_nests_disks_under_their_worker() {
        let out = iometer_csv(&nested_run()).unwrap().text;
        let rows = result_rows(&out);
        assert_eq!(
            kinds_and_names(&rows),
            pairs(&[
                ("ALL", "All"),
                ("MANAGER", "local"),
                ("WORKER", "Worker 0"),
                ("DISK", "/dev/sdb"),
                ("WORKER", "Worker 1"),
                ("DISK", "/dev/sdb"),
                ("WORKER", "Worker 2"),
                ("DISK", "/dev/sdc"),
                ("WORKER", "Worker 3"),
                ("DISK", "/dev/sdc"),
            ])
        );
        let c = |row: usize, name: &str| col(&rows[row], name).to_string();
        assert_eq!(
            (c(0, "# Workers"), c(0, "# Disks")),
            ("4".into(), "4".into())
        );
        // Each DISK row: its worker's I/Os on that target.
        for (w, d) in [(2, 3), (4, 5), (6, 7), (8, 9)] {
            for k in [
                "IOps",
                "Read IOps",
                "MBps (Decimal)",
                "Write I/Os",
                "Average Response Time",
            ] {
                assert_eq!(c(d, k), c(w, k), "row {d}: {k}");
            }
        }
        assert_eq!(c(3, "IOps"), "325");
        assert_eq!(c(7, "Read IOps"), "100");
        insta::assert_snapshot!(out);
    }

    #[test]
    fn iometer_breakdown_rows_add_up_to_all() {
        for r in [spread_run(), nested_run()] {
            let rows = result_rows(&iometer_csv(&r).unwrap().text);
            let num = |row: &[String], k: &str| col(row, k).parse::<f64>().unwrap();
            for k in [
                "IOps",
                "Read IOps",
                "Write IOps",
                "MBps (Decimal)",
                "MBps (Binary)",
                "Read I/Os",
                "Bytes Written",
            ] {
                let all = num(&rows[0], k);
                for kind in ["WORKER", "DISK"] {
                    let sum: f64 = rows
                        .iter()
                        .filter(|row| col(row, "'Target Type") == kind)
                        .map(|row| num(row, k))
                        .sum();
                    assert!(
                        (sum - all).abs() <= 1e-9 * all,
                        "{kind} rows' {k}: {sum} vs ALL {all}"
                    );
                }
            }
        }
    }

    #[test]
    fn iometer_without_a_usable_breakdown_is_unchanged() {
        let before = iometer_csv(&run()).unwrap().text;
        // Only the selected repetition's breakdown counts.
        let mut r = run();
        let spread = spread_run().tests[0].reps[0].doc.clone();
        let rep2 = &mut r.tests[0].reps[1].doc;
        (rep2.targets, rep2.workers) = (spread.targets, spread.workers);
        assert_eq!(
            iometer_csv(&r).unwrap().text,
            before,
            "a breakdown on another rep"
        );
        // Means: no one repetition's parts add up to them.
        let mut r = spread_run();
        r.tests[0].select = "mean".into();
        r.tests[0].summary = Some(run().tests[0].reps[0].doc.metrics.clone());
        assert_eq!(iometer_csv(&r).unwrap().text, before, "means");
        // An empty breakdown says nothing.
        let r = run_with(json!({"targets": [], "workers": [], "lines": []}));
        assert_eq!(iometer_csv(&r).unwrap().text, before, "empty");
    }

    #[test]
    fn iometer_breakdown_of_an_odd_document() {
        // A worker naming a target the breakdown does not list, a worker
        // with no I/O, and no targets at all: rows, no panic.
        let r = run_with(json!({
            "targets": [],
            "workers": [worker(0, &[7], 7000, 3000, 250.0), worker(1, &[], 0, 0, 250.0)],
            "lines": []
        }));
        let rows = result_rows(&iometer_csv(&r).unwrap().text);
        assert_eq!(
            kinds_and_names(&rows),
            pairs(&[
                ("ALL", "All"),
                ("MANAGER", "local"),
                ("WORKER", "Worker 0"),
                ("DISK", "target 7"),
                ("WORKER", "Worker 1"),
            ])
        );
        assert_eq!(col(&rows[4], "Read IOps"), "0");
    }

    #[test]
    fn iometer_refuses_an_empty_export() {
        let mut r = net_run("net-rr", json!({"window_s": 10.0}), json!({}));
        let e = iometer_csv(&r).unwrap_err().to_string();
        assert!(
            e.contains("run 7") && e.contains("no throughput or transaction rate"),
            "{e}"
        );
        r.tests[0].selected_rep = None;
        let e = iometer_csv(&r).unwrap_err().to_string();
        assert!(e.contains("no selected repetition"), "{e}");
        r.tests.clear();
        assert!(iometer_csv(&r)
            .unwrap_err()
            .to_string()
            .contains("no tests"));
    }
}
