//! Results from elsewhere, as configurations to compare against: published
//! tables (CSV of canonical metrics), fio's `--output-format=json` and
//! iperf3's `-J`. Each becomes result documents with canonical metrics;
//! what the source does not measure stays absent, and per-process CPU
//! figures are never passed off as whole-host CPU.

use iotoll_model::metrics::{self as mn, metric_def};
use iotoll_model::spec::{to_json, ImportSpec, Spec};
use iotoll_model::{derive_metrics, Kind, Metrics, ResultDoc};
use serde_json::Value;

/// One imported test: its name, group and result document.
#[derive(Debug, Clone)]
pub struct Imported {
    pub name: String,
    pub group: Option<String>,
    pub doc: ResultDoc,
}

/// An imported result: `spec` the workload parameters the source states,
/// in the native spec's keys (so `compare` can check them and the test
/// gets the native run's name), `started_s` the source's own start time
/// (seconds since the epoch).
fn doc(
    kind: Kind,
    source: &str,
    format: &str,
    mut metrics: Metrics,
    notes: Vec<String>,
    spec: ImportSpec,
    started_s: Option<f64>,
) -> ResultDoc {
    derive_metrics(&mut metrics);
    let started = started_s
        // Past year 9999 no RFC 3339 date can say it: the import's time then.
        .filter(|s| s.is_finite() && *s > 0.0 && *s < 253_402_300_800.0)
        .map(|s| std::time::UNIX_EPOCH + std::time::Duration::from_secs_f64(s))
        .unwrap_or_else(std::time::SystemTime::now);
    let spec = ImportSpec {
        imported_from: source.into(),
        format: format.into(),
        ..spec
    };
    // Imports state totals only.
    ResultDoc {
        started_at: humantime::format_rfc3339_seconds(started).to_string(),
        metrics,
        notes,
        ..ResultDoc::new(kind, Spec::Import(Box::new(spec)))
    }
}

/// A number at `path`: absent (or null) is None; anything but a finite,
/// non-negative number is an error naming the field.
fn number(v: &Value, path: &str) -> Result<Option<f64>, String> {
    match v {
        Value::Null => Ok(None),
        Value::Number(n) => match n.as_f64() {
            Some(x) if x.is_finite() && x >= 0.0 => Ok(Some(x)),
            Some(x) if x.is_finite() => Err(format!("{path}: {x} is negative")),
            _ => Err(format!("{path}: {n} is not a finite number")),
        },
        other => Err(wrong(path, "a number", other)),
    }
}

/// A whole, non-negative number at `path` (a count).
fn count(v: &Value, path: &str) -> Result<Option<u64>, String> {
    match v {
        Value::Null => Ok(None),
        Value::Number(n) => n
            .as_u64()
            .map(Some)
            .ok_or_else(|| format!("{path}: expected a whole number of 0 or more, got {n}")),
        other => Err(wrong(path, "a whole number", other)),
    }
}

/// iperf3's 0/1 flags.
fn flag(v: &Value, path: &str) -> Result<bool, String> {
    match v {
        Value::Null => Ok(false),
        Value::Number(n) if n.as_u64() == Some(0) => Ok(false),
        Value::Number(n) if n.as_u64() == Some(1) => Ok(true),
        other => Err(format!("{path}: expected 0 or 1, got {other}")),
    }
}

fn text_field<'a>(v: &'a Value, path: &str) -> Result<Option<&'a str>, String> {
    match v {
        Value::Null => Ok(None),
        Value::String(s) => Ok(Some(s)),
        other => Err(wrong(path, "a string", other)),
    }
}

/// The value at `path` under `v`: object keys separated by dots (null
/// where there is none).
fn get<'a>(v: &'a Value, path: &str) -> &'a Value {
    path.split('.').fold(v, |v, k| &v[k])
}

/// A CPU figure for a note: one decimal place, `?` where it is absent.
fn cpu_figure(v: &Value, path: &str) -> Result<String, String> {
    Ok(number(v, path)?.map_or("?".into(), |v| format!("{v:.1}")))
}

/// Sets `key` in `map` where there is a value for it.
fn put<V>(map: &mut impl Extend<(String, V)>, key: &str, v: Option<impl Into<V>>) {
    map.extend(v.map(|v| (key.to_string(), v.into())));
}

/// The error for `v` at `path` where `want` was expected.
fn wrong(path: &str, want: &str, v: &Value) -> String {
    format!("{path}: expected {want}, got {}", type_name(v))
}

fn type_name(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("{b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) => format!("a string (\"{}\")", s.escape_debug()),
        Value::Array(_) => "a list".into(),
        Value::Object(_) => "an object".into(),
    }
}

/// After the arithmetic: every figure is a finite number.
fn all_finite(m: &Metrics, what: &str) -> Result<(), String> {
    match m.iter().find(|(_, v)| !v.is_finite()) {
        Some((k, v)) => Err(format!(
            "{what}: {k} comes to {v}: the figures are too large to be real"
        )),
        None => Ok(()),
    }
}

/// `test,group,mb_s,cpu_pct,...`: a `test` column, an optional `group`
/// column, and one column per canonical metric. Read record by record:
/// time linear in the rows, memory in the results.
pub fn table(input: impl std::io::Read, source: &str) -> Result<Vec<Imported>, String> {
    let out = table_rows(input, source)?.collect::<Result<Vec<_>, _>>()?;
    if out.is_empty() {
        return Err(NO_ROWS.into());
    }
    Ok(out)
}

/// What a table with a header and nothing else is told.
pub const NO_ROWS: &str = "the table has a header but no rows";

/// A table's rows one at a time, as they are read: what a large table
/// imports through, holding one row in memory.
pub struct TableRows<R> {
    csv: csv::Reader<Bounded<R>>,
    record: csv::StringRecord,
    cols: Vec<String>,
    test_col: usize,
    group_col: Option<usize>,
    names: std::collections::HashSet<String>,
    source: String,
}

/// The longest record a table may have: a file without line breaks (or a
/// device that never ends one) is refused, not read into memory.
pub const MAX_LINE: usize = 1 << 20;

/// The input, refused once the record being read passes [`MAX_LINE`]
/// bytes: the csv reader asks for more only when it has parsed all it was
/// given and the record has not ended.
struct Bounded<R> {
    inner: R,
    read: u64,
    record_start: u64,
}

impl<R: std::io::Read> std::io::Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.read - self.record_start > MAX_LINE as u64 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("longer than {} MiB", MAX_LINE >> 20),
            ));
        }
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        Ok(n)
    }
}

/// Reads and checks a table's header; the rows follow from the iterator.
pub fn table_rows<R: std::io::Read>(input: R, source: &str) -> Result<TableRows<R>, String> {
    let mut t = TableRows {
        // Rows of the wrong length get this module's message; csv-core
        // skips empty lines and a UTF-8 byte-order mark (spreadsheets save one).
        csv: csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .from_reader(Bounded {
                inner: input,
                read: 0,
                record_start: 0,
            }),
        record: csv::StringRecord::new(),
        cols: Vec::new(),
        test_col: 0,
        group_col: None,
        names: std::collections::HashSet::new(),
        source: source.to_string(),
    };
    let cols = t.next_record().ok_or("the table is empty")??.1;
    let mut seen = std::collections::HashSet::new();
    if let Some(c) = cols.iter().find(|c| !seen.insert(c.as_str())) {
        return Err(format!("line 1: column '{c}' appears twice"));
    }
    t.test_col = cols
        .iter()
        .position(|c| c == "test")
        .ok_or("the header has no 'test' column")?;
    t.group_col = cols.iter().position(|c| c == "group");
    for (i, c) in cols.iter().enumerate() {
        if i != t.test_col && Some(i) != t.group_col && metric_def(c).is_none() {
            return Err(format!(
                "line 1: column '{c}' is not a canonical metric name (see docs/metrics.md)"
            ));
        }
    }
    t.cols = cols;
    Ok(t)
}

impl<R: std::io::Read> TableRows<R> {
    /// The next record that is not a blank line: the line it starts on and
    /// its trimmed fields.
    fn next_record(&mut self) -> Option<Result<(usize, Vec<String>), String>> {
        loop {
            let before = self.csv.position().clone();
            self.csv.get_mut().record_start = before.byte();
            let r = &mut self.record;
            match self.csv.read_record(r) {
                Ok(true) => {}
                Ok(false) => return None,
                Err(e) => {
                    let (line, why) = match e.kind() {
                        csv::ErrorKind::Utf8 { pos: Some(p), .. } => {
                            (p.line(), "not UTF-8 text".into())
                        }
                        _ => (before.line(), e.to_string()),
                    };
                    return Some(Err(format!("line {line}: {why}")));
                }
            }
            // The reader is past the record's line end; blank lines it
            // skipped are before the record, newlines in quotes inside it.
            let inside: u64 = r.iter().map(|f| f.matches('\n').count() as u64).sum();
            let line = (self.csv.position().line().saturating_sub(inside + 1)).max(before.line());
            let f: Vec<String> = r.iter().map(|f| f.trim().to_string()).collect();
            if f.len() > 1 || !f[0].is_empty() {
                return Some(Ok((line as usize, f)));
            }
        }
    }
}

impl<R: std::io::Read> Iterator for TableRows<R> {
    type Item = Result<Imported, String>;

    fn next(&mut self) -> Option<Self::Item> {
        Some(self.next_record()?.and_then(|(n, f)| self.row(n, f)))
    }
}

impl<R> TableRows<R> {
    fn row(&mut self, n: usize, f: Vec<String>) -> Result<Imported, String> {
        let cols = &self.cols;
        if f.len() != cols.len() {
            return Err(format!(
                "line {n}: {} fields, the header has {}",
                f.len(),
                cols.len()
            ));
        }
        let mut m = Metrics::new();
        for (i, v) in f.iter().enumerate() {
            if i == self.test_col || Some(i) == self.group_col || v.is_empty() {
                continue;
            }
            let at = || format!("line {n}: column '{}'", cols[i]);
            let x: f64 = v
                .parse()
                .ok()
                .filter(|x: &f64| x.is_finite())
                .ok_or_else(|| format!("{}: '{v}' is not a number", at()))?;
            if x < 0.0 {
                return Err(format!("{}: {v} is negative", at()));
            }
            m.insert(cols[i].clone(), x);
        }
        let name = f[self.test_col].clone();
        if name.is_empty() {
            return Err(format!("line {n}: empty test name"));
        }
        if !self.names.insert(name.clone()) {
            return Err(format!("line {n}: duplicate test '{name}'"));
        }
        let kind = if m.contains_key(mn::IOPS) || m.contains_key(mn::MB_S) {
            Kind::Disk
        } else if m.contains_key(mn::TRANS_S) {
            Kind::NetRr
        } else {
            Kind::NetStream
        };
        let d = doc(
            kind,
            &self.source,
            "table",
            m,
            Vec::new(),
            ImportSpec::default(),
            None,
        );
        all_finite(&d.metrics, &format!("line {n}"))?;
        Ok(Imported {
            group: self
                .group_col
                .map(|g| f[g].clone())
                .filter(|g| !g.is_empty()),
            doc: d,
            name,
        })
    }
}

/// Tools print notes before their JSON; the document starts at the first
/// '{'. Parsed straight from the reader into `T`, so parts of the file `T`
/// does not keep (iperf3's per-second intervals) are never held in memory.
fn json_body<T: serde::de::DeserializeOwned>(input: impl std::io::Read) -> Result<T, String> {
    use std::io::BufRead;
    let mut r = std::io::BufReader::with_capacity(1 << 16, input);
    let mut skipped = 0;
    loop {
        let buf = r.fill_buf().map_err(|e| e.to_string())?;
        if buf.is_empty() || skipped > MAX_LINE {
            return Err("no JSON object in the file".into());
        }
        skipped += buf.len();
        let brace = buf.iter().position(|b| *b == b'{');
        let n = brace.unwrap_or(buf.len());
        r.consume(n);
        if brace.is_some() {
            break;
        }
    }
    serde_json::from_reader(r).map_err(|e| format!("not valid JSON: {e}"))
}

#[derive(serde::Deserialize)]
struct FioTop {
    #[serde(default)]
    jobs: Value,
    #[serde(default, rename = "global options")]
    global: Value,
    #[serde(default)]
    timestamp: Value,
}

/// fio `--output-format=json`: one test per job.
pub fn fio_json(input: impl std::io::Read, source: &str) -> Result<Vec<Imported>, String> {
    let v: FioTop = json_body(input)?;
    let jobs = match &v.jobs {
        Value::Array(a) => a,
        Value::Null => return Err("no 'jobs' array: is this fio --output-format=json?".into()),
        other => return Err(wrong("jobs", "a list", other)),
    };
    let timestamp = number(&v.timestamp, "timestamp")?;
    let mut out: Vec<Imported> = Vec::new();
    let mut names = std::collections::HashSet::new();
    for (i, j) in jobs.iter().enumerate() {
        let at = |k: &str| format!("jobs[{i}].{k}");
        let num = |k: &str| number(get(j, k), &at(k));
        if !j.is_object() {
            return Err(wrong(&format!("jobs[{i}]"), "a job object", j));
        }
        for part in [
            "read",
            "write",
            "read.lat_ns",
            "write.lat_ns",
            "job options",
        ] {
            let v = get(j, part);
            if !(v.is_null() || v.is_object()) {
                return Err(wrong(&at(part), "an object", v));
            }
        }
        let jobname = text_field(&j["jobname"], &at("jobname"))?
            .map(str::to_string)
            .unwrap_or_else(|| format!("job{i}"));
        let runtime_s = num("job_runtime")?.filter(|r| *r > 0.0).map(|r| r / 1000.0);
        let (spec, sync_engine) = fio_spec(&v.global, &j["job options"]);
        // fio stamps its output when the jobs end.
        let started_s = timestamp.map(|t| t - runtime_s.unwrap_or(0.0));
        // The native run's name; jobs with equal parameters keep theirs
        // apart, and clones sharing a job name (numjobs) are numbered.
        let base = iotoll_model::workload::test_name(Kind::Disk, &to_json(&spec));
        let name = unique_name(&mut names, base, &jobname);
        let ri = num("read.iops")?.unwrap_or(0.0);
        let wi = num("write.iops")?.unwrap_or(0.0);
        let rb = num("read.bw_bytes")?.unwrap_or(0.0);
        let wb = num("write.bw_bytes")?.unwrap_or(0.0);
        let mut m = Metrics::new();
        m.insert(mn::IOPS.into(), ri + wi);
        m.insert(mn::READ_IOPS.into(), ri);
        m.insert(mn::WRITE_IOPS.into(), wi);
        m.insert(mn::MB_S.into(), (rb + wb) / 1e6);
        m.insert(mn::READ_MB_S.into(), rb / 1e6);
        m.insert(mn::WRITE_MB_S.into(), wb / 1e6);
        put(&mut m, mn::WINDOW_S, runtime_s);
        let errors = count(&j["error"], &at("error"))?;
        put(&mut m, mn::ERRORS, errors.map(|e| e as f64));
        fio_latency(j, i, &mut m)?;
        let cpu = |k: &str| cpu_figure(&j[k], &at(k));
        let mut notes = vec![format!(
            "imported from fio: its CPU figures are the fio process's own (usr {} %, sys {} % of one CPU), not whole-host, so cpu_pct and the efficiency metrics are absent",
            cpu("usr_cpu")?,
            cpu("sys_cpu")?,
        )];
        if sync_engine {
            notes.push(
                "fio's engine is synchronous: its queue depth is 1 whatever iodepth says".into(),
            );
        }
        let d = doc(Kind::Disk, source, "fio-json", m, notes, spec, started_s);
        all_finite(&d.metrics, &format!("jobs[{i}] ({jobname})"))?;
        out.push(Imported {
            name,
            group: None,
            doc: d,
        });
    }
    if out.is_empty() {
        return Err("fio's output has no jobs".into());
    }
    Ok(out)
}

/// `base`, or, when an earlier job has it, with the job's name (clones
/// sharing a job name, numjobs, are numbered: the third is #3, the second
/// having the plain job name).
fn unique_name(names: &mut std::collections::HashSet<String>, base: String, job: &str) -> String {
    let mut name = base.clone();
    if names.contains(&name) {
        name = format!("{base}/job={job}");
        let mut k = 3;
        while names.contains(&name) {
            name = format!("{base}/job={job}#{k}");
            k += 1;
        }
    }
    names.insert(name.clone());
    name
}

/// fio job `i`'s latency metrics, microseconds.
fn fio_latency(j: &Value, i: usize, m: &mut Metrics) -> Result<(), String> {
    let at = |k: &str| format!("jobs[{i}].{k}");
    let num = |k: &str| number(get(j, k), &at(k));
    // Total latency (submission to completion): mean weighted by I/Os.
    let nr = num("read.lat_ns.N")?.unwrap_or(0.0);
    let nw = num("write.lat_ns.N")?.unwrap_or(0.0);
    let lat = |d: &str, k: &str| num(&format!("{d}.lat_ns.{k}"));
    if nr + nw > 0.0 {
        let mean = (lat("read", "mean")?.unwrap_or(0.0) * nr
            + lat("write", "mean")?.unwrap_or(0.0) * nw)
            / (nr + nw);
        m.insert(mn::LAT_MEAN_US.into(), mean / 1000.0);
        let dirs = [("read", nr), ("write", nw)]
            .into_iter()
            .filter(|(_, n)| *n > 0.0);
        let mut ext = |k: &str, pick: fn(f64, f64) -> f64, metric: &str| {
            let vals = dirs.clone().filter_map(|(d, _)| lat(d, k).transpose());
            let vals: Vec<f64> = vals.collect::<Result<_, _>>()?;
            put(m, metric, vals.into_iter().reduce(pick).map(|v| v / 1000.0));
            Ok::<(), String>(())
        };
        ext("min", f64::min, mn::LAT_MIN_US)?;
        ext("max", f64::max, mn::LAT_MAX_US)?;
    }
    // Percentiles cannot be merged across directions: only when one
    // direction did all the I/O (fio's are completion latencies).
    let only = match (nr > 0.0, nw > 0.0) {
        (true, false) => Some("read"),
        (false, true) => Some("write"),
        _ => None,
    };
    if let Some(d) = only {
        for (key, metric) in [
            ("50.000000", mn::LAT_P50_US),
            ("90.000000", mn::LAT_P90_US),
            ("99.000000", mn::LAT_P99_US),
            ("99.900000", mn::LAT_P999_US),
            ("99.990000", mn::LAT_P9999_US),
        ] {
            let p = &j[d]["clat_ns"]["percentile"][key];
            let v = number(p, &at(&format!("{d}.clat_ns.percentile.{key}")))?;
            put(m, metric, v.map(|v| v / 1000.0));
        }
    }
    Ok(())
}

/// fio's job options (over its global options) in the disk spec's keys;
/// the flag says the engine is synchronous (queue depth 1). Options fio
/// leaves at their defaults are filled in with fio's defaults.
fn fio_spec(global: &Value, job: &Value) -> (ImportSpec, bool) {
    let opt = |k: &str| job[k].as_str().or_else(|| global[k].as_str());
    let num = |k: &str, default: u64| {
        opt(k)
            .map(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(Some(default))
    };
    let mut spec = ImportSpec::default();
    // `bs=4k` only: a range or separate read/write sizes name no single size.
    let bs = opt("bs").or(opt("blocksize"));
    spec.bs = bs.map_or(Some(4096), |b| iotoll_model::parse_size(b).ok());
    let rw = opt("rw").or(opt("readwrite")).unwrap_or("read");
    let mix = opt("rwmixread")
        .and_then(|v| v.parse::<u64>().ok())
        .or_else(|| {
            opt("rwmixwrite")
                .and_then(|v| v.parse::<u64>().ok())
                .map(|w| 100u64.saturating_sub(w))
        })
        .unwrap_or(50);
    let (read, random) = match rw {
        "read" => (Some(100), 0),
        "write" => (Some(0), 0),
        "randread" => (Some(100), 100),
        "randwrite" => (Some(0), 100),
        "rw" | "readwrite" => (Some(mix), 0),
        "randrw" => (Some(mix), 100),
        _ => (None, 0),
    };
    if let Some(r) = read {
        spec.read_pct = Some(r);
        spec.random_pct = Some(random);
    }
    let engine = opt("ioengine").unwrap_or("psync");
    let sync_engine = matches!(engine, "sync" | "psync" | "vsync" | "pvsync" | "pvsync2");
    let qd = if sync_engine {
        Some(1)
    } else {
        num("iodepth", 1)
    };
    spec.qd = qd;
    spec.workers = num("numjobs", 1);
    spec.size = opt("size").and_then(|s| iotoll_model::parse_size(s).ok());
    let secs = |k: &str| {
        opt(k)
            .and_then(|v| iotoll_model::parse_duration(v).ok())
            .map(|d| d.as_secs_f64())
    };
    spec.time_s = secs("runtime");
    spec.ramp_s = secs("ramp_time");
    spec.engine = Some(format!("fio {engine}"));
    spec.direct = opt("direct").map(|d| d == "1");
    (spec, sync_engine)
}

#[derive(serde::Deserialize)]
struct Iperf3Top {
    #[serde(default)]
    start: Value,
    #[serde(default)]
    end: Value,
    #[serde(default)]
    error: Value,
}

/// iperf3 `-J` (client side): one stream test.
pub fn iperf3_json(input: impl std::io::Read, source: &str) -> Result<Vec<Imported>, String> {
    let top: Iperf3Top = json_body(input)?;
    if let Some(e) = text_field(&top.error, "error")? {
        return Err(format!("iperf3 reported an error: {e}"));
    }
    let v = serde_json::json!({ "start": top.start, "end": top.end });
    // The figure at `p` (a path under `v`, as errors name it).
    let num = |p: &str| number(get(&v, p), p);
    let whole = |p: &str| count(get(&v, p), p);
    let flag_at = |p: &str| flag(get(&v, p), p);
    let bps = num("end.sum_received.bits_per_second")?
        .ok_or("no end.sum_received.bits_per_second: is this iperf3 -J output?")?;
    let protocol = "start.test_start.protocol";
    if text_field(get(&v, protocol), protocol)?.is_some_and(|p| p != "TCP") {
        return Err("only TCP tests can be imported".into());
    }
    let reverse = flag_at("start.test_start.reverse")?;
    let bidir = flag_at("start.test_start.bidir")?;
    let streams = whole("start.test_start.num_streams")?;
    let mut m = Metrics::new();
    let mbit = bps / 1e6;
    m.insert(mn::MBIT_S.into(), mbit);
    let one_way = if reverse {
        mn::RX_MBIT_S
    } else {
        mn::TX_MBIT_S
    };
    m.insert(one_way.into(), mbit);
    put(&mut m, mn::WINDOW_S, num("end.sum_received.seconds")?);
    put(&mut m, mn::CONNS, streams.map(|n| n as f64));
    let retransmits = whole("end.sum_sent.retransmits")?;
    put(&mut m, mn::RETRANSMITS, retransmits.map(|r| r as f64));
    let pct = |k: &str| cpu_figure(get(&v, k), k);
    let notes = vec![format!(
        "imported from iperf3: its CPU figures are per process (client {} %, server {} %), not whole-host, so cpu_pct and the P/E index are absent",
        pct("end.cpu_utilization_percent.host_total")?,
        pct("end.cpu_utilization_percent.remote_total")?,
    )];
    let dir = match (bidir, reverse) {
        (true, _) => "bidir",
        (false, true) => "rx",
        (false, false) => "tx",
    };
    let spec = ImportSpec {
        dir: Some(dir.into()),
        conns: Some(streams.unwrap_or(1)),
        msg: whole("start.test_start.blksize")?,
        time_s: num("start.test_start.duration")?,
        // iperf3's --omit is the ramp-up left out of the figures.
        ramp_s: num("start.test_start.omit")?,
        ..ImportSpec::default()
    };
    let name = iotoll_model::workload::test_name(Kind::NetStream, &to_json(&spec));
    let started_s = num("start.timestamp.timesecs")?;
    let d = doc(
        Kind::NetStream,
        source,
        "iperf3-json",
        m,
        notes,
        spec,
        started_s,
    );
    all_finite(&d.metrics, "iperf3 result")?;
    Ok(vec![Imported {
        name,
        group: Some(dir.into()),
        doc: d,
    }])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Seen: a finite but huge tool timestamp (1e308) panicked the import.
    #[test]
    fn an_impossible_timestamp_is_the_imports_time() {
        for s in [1e308, 253_402_300_800.0, -1.0, f64::NAN] {
            let (m, spec) = (Metrics::new(), ImportSpec::default());
            let d = doc(Kind::Disk, "x", "table", m, vec![], spec, Some(s));
            assert!(d.started_at.starts_with("20"), "{s}: {}", d.started_at);
        }
    }

    const FIO: &str = include_str!("../tests/fixtures/fio-randrw.json");
    const IPERF3: &str = include_str!("../tests/fixtures/iperf3-tx.json");

    #[test]
    fn fio_fixture_from_the_real_tool() {
        let r = fio_json(FIO.as_bytes(), "fio-randrw.json").unwrap();
        assert_eq!(r.len(), 1);
        let m = &r[0].doc.metrics;
        // The name the native run gets: randrw 70 % read, 4k, psync (QD 1).
        assert_eq!(r[0].name, "disk/bs=4k,read=70,random=100,qd=1,workers=1");
        // fio's own time (its stamp minus the 1 s runtime), not the import's.
        assert_eq!(r[0].doc.started_at, "2026-11-22T01:33:15Z");
        assert_eq!(r[0].doc.spec.stated().size, Some((16 << 20) as f64));
        assert!((m["read_iops"] - 12037.962038).abs() < 1e-6);
        assert!((m["iops"] - (12037.962038 + 5142.857143)).abs() < 1e-6);
        assert!((m["read_mb_s"] - 49.307492).abs() < 1e-9);
        assert_eq!(m["window_s"], 1.0);
        assert!(m["lat_mean_us"] > 0.0);
        assert!(
            !m.contains_key("lat_p50_us"),
            "mixed read/write: no merged percentiles"
        );
        assert!(!m.contains_key("cpu_pct"), "fio's CPU is per-process");
        assert!(r[0].doc.notes[0].contains("not whole-host"));
        let mut v: Value = serde_json::from_str(&FIO[FIO.find('{').unwrap()..]).unwrap();
        v["jobs"][0]["write"] = 5.into();
        let e = fio_json(v.to_string().as_bytes(), "x").unwrap_err();
        assert_eq!(e, "jobs[0].write: expected an object, got the number 5");
        assert!(fio_json("{}".as_bytes(), "x").is_err());
        assert!(fio_json("not json".as_bytes(), "x").is_err());
    }

    #[test]
    fn iperf3_fixture_from_the_real_tool() {
        let r = iperf3_json(IPERF3.as_bytes(), "iperf3-tx.json").unwrap();
        let m = &r[0].doc.metrics;
        assert_eq!(r[0].name, "stream/dir=tx,conns=2,msg=128k");
        assert_eq!(r[0].doc.started_at, "2026-11-22T01:33:16Z");
        assert!((m["mbit_s"] - 23336.36218459598).abs() < 1e-6);
        assert_eq!(m["tx_mbit_s"], m["mbit_s"]);
        assert_eq!((m["conns"], m["retransmits"]), (2.0, 9.0));
        assert!(!m.contains_key("cpu_pct"));
        assert!(
            iperf3_json(r#"{"error": "unable to connect"}"#.as_bytes(), "x")
                .unwrap_err()
                .contains("unable to connect")
        );
    }

    /// This thread's CPU time, seconds: unaffected by other processes.
    fn thread_cpu() -> f64 {
        let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID).unwrap();
        t.tv_sec() as f64 + t.tv_nsec() as f64 / 1e9
    }

    #[test]
    fn table_parsing_is_linear_in_rows() {
        let cpu = |rows: usize| {
            let mut t = String::from("test,group,iops,mb_s\n");
            for i in 0..rows {
                t.push_str(&format!("t{i},g{},{},{}\n", i % 7, i + 1, i % 500));
            }
            let t0 = thread_cpu();
            assert_eq!(table(t.as_bytes(), "t.csv").unwrap().len(), rows);
            thread_cpu() - t0
        };
        // 8 times the rows: about 8 times the CPU (the duplicate check was
        // quadratic: 64 times).
        let (small, large) = (cpu(10_000), cpu(80_000));
        assert!(
            large < 20.0 * small.max(0.005),
            "10,000 rows: {small:.3} s; 80,000 rows: {large:.3} s"
        );
    }

    #[test]
    fn published_table() {
        let t = "test,group,mb_s,cpu_pct\n\"read, 4k\",read,120.5,8\nwrite-4k,write,80,\n";
        let r = table(t.as_bytes(), "t.csv").unwrap();
        assert_eq!(r[0].name, "read, 4k");
        assert_eq!(r[0].group.as_deref(), Some("read"));
        assert_eq!(
            r[0].doc.metrics["mb_s_per_cpu_pct"],
            120.5 / 8.0,
            "derived like any result"
        );
        assert!(
            !r[1].doc.metrics.contains_key("cpu_pct"),
            "empty cell: absent"
        );
        for (t, want) in [
            ("test,bogus\na,1\n", "'bogus'"),
            ("test,mb_s\na,fast\n", "line 2"),
            ("group,mb_s\nx,1\n", "'test'"),
            ("test,mb_s\na,1\na,2\n", "duplicate"),
        ] {
            let e = table(t.as_bytes(), "t").unwrap_err();
            assert!(e.contains(want), "{e}");
        }
        assert!(table("".as_bytes(), "t").is_err());
        // Windows line ends; a line without end is refused, not held.
        assert_eq!(
            table("test,mb_s\r\na,1\r\n".as_bytes(), "t").unwrap()[0].name,
            "a"
        );
        let endless = std::io::Read::take(std::io::repeat(b'x'), 1 << 30);
        let e = table(endless, "t").unwrap_err();
        assert!(e.contains("line 1: longer than 1 MiB"), "{e}");
        let e = table(&b"test,mb_s\na,\xff\n"[..], "t");
        assert!(e.unwrap_err().contains("line 2: not UTF-8"));
    }

    #[test]
    fn quoted_fields_may_hold_newlines_and_commas() {
        let t = "test,group,mb_s\n\"read,\n4k\",\"a \"\"b\"\", c\",120\n\nw,,\"8\"\n";
        let r = table(t.as_bytes(), "t.csv").unwrap();
        assert_eq!(r[0].name, "read,\n4k");
        assert_eq!(r[0].group.as_deref(), Some("a \"b\", c"));
        assert_eq!(r[0].doc.metrics["mb_s"], 120.0);
        assert_eq!((r[1].name.as_str(), r[1].group.as_deref()), ("w", None));
        // Errors name the line a record starts on, past quoted newlines
        // and blank lines.
        let e = table("test,mb_s\n\"a\nb\",1\n\nc,fast\n".as_bytes(), "t").unwrap_err();
        assert!(e.starts_with("line 5: column 'mb_s'"), "{e}");
        let e = table("test,mb_s\n\"a\nb\",1,2\n".as_bytes(), "t").unwrap_err();
        assert!(e.starts_with("line 2: 3 fields"), "{e}");
    }
}
