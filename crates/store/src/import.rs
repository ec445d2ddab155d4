//! Results from elsewhere, as configurations to compare against: published
//! tables (CSV of canonical metrics), fio's `--output-format=json` and
//! iperf3's `-J`. Each becomes result documents with canonical metrics;
//! what the source does not measure stays absent, and per-process CPU
//! figures are never passed off as whole-host CPU.

use iotoll_model::metrics::{self as mn, metric_def};
use iotoll_model::{derive_metrics, CpuSection, Metrics, ResultDoc};
use serde_json::Value;

/// One imported test: its name, group and result document.
#[derive(Debug)]
pub struct Imported {
    pub name: String,
    pub group: Option<String>,
    pub doc: ResultDoc,
}

/// The workload parameters the source states, in the native spec's keys
/// (so `compare` can check them and the test gets the native run's name),
/// and the source's own start time (seconds since the epoch).
#[derive(Default)]
struct Origin {
    spec: serde_json::Map<String, Value>,
    started_s: Option<f64>,
}

fn doc(
    kind: &str,
    source: &str,
    format: &str,
    mut metrics: Metrics,
    notes: Vec<String>,
    origin: Origin,
) -> ResultDoc {
    derive_metrics(&mut metrics);
    let started = origin
        .started_s
        .filter(|s| s.is_finite() && *s > 0.0)
        .map(|s| std::time::UNIX_EPOCH + std::time::Duration::from_secs_f64(s))
        .unwrap_or_else(std::time::SystemTime::now);
    let mut spec = origin.spec;
    spec.insert("imported_from".into(), source.into());
    spec.insert("format".into(), format.into());
    ResultDoc {
        iotoll_version: iotoll_model::VERSION.to_string(),
        kind: kind.to_string(),
        status: "complete".into(),
        started_at: humantime::format_rfc3339_seconds(started).to_string(),
        config: None,
        spec: Value::Object(spec),
        metrics,
        cpu: CpuSection {
            local: None,
            remote: None,
            same_host: None,
        },
        latency: None,
        series: Vec::new(),
        notes,
        disclosure: None,
    }
}

/// Splits one CSV line (RFC 4180 quoting).
fn csv_fields(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out.into_iter().map(|s| s.trim().to_string()).collect()
}

/// `test,group,mb_s,cpu_pct,...`: a `test` column, an optional `group`
/// column, and one column per canonical metric.
pub fn table(text: &str, source: &str) -> Result<Vec<Imported>, String> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let (_, head) = lines.next().ok_or("the table is empty")?;
    let cols = csv_fields(head);
    let test_col = cols
        .iter()
        .position(|c| c == "test")
        .ok_or("the header has no 'test' column")?;
    let group_col = cols.iter().position(|c| c == "group");
    for (i, c) in cols.iter().enumerate() {
        if i != test_col && Some(i) != group_col && metric_def(c).is_none() {
            return Err(format!(
                "line 1: column '{c}' is not a canonical metric name (see docs/metrics.md)"
            ));
        }
    }
    let mut out = Vec::new();
    for (n, line) in lines {
        let f = csv_fields(line);
        if f.len() != cols.len() {
            return Err(format!(
                "line {}: {} fields, the header has {}",
                n + 1,
                f.len(),
                cols.len()
            ));
        }
        let mut m = Metrics::new();
        for (i, v) in f.iter().enumerate() {
            if i == test_col || Some(i) == group_col || v.is_empty() {
                continue;
            }
            let x: f64 = v
                .parse()
                .ok()
                .filter(|x: &f64| x.is_finite())
                .ok_or_else(|| {
                    format!(
                        "line {}: column '{}': '{v}' is not a number",
                        n + 1,
                        cols[i]
                    )
                })?;
            m.insert(cols[i].clone(), x);
        }
        let name = f[test_col].clone();
        if name.is_empty() {
            return Err(format!("line {}: empty test name", n + 1));
        }
        if out.iter().any(|o: &Imported| o.name == name) {
            return Err(format!("line {}: duplicate test '{name}'", n + 1));
        }
        let kind = if m.contains_key(mn::IOPS) || m.contains_key(mn::MB_S) {
            "disk"
        } else if m.contains_key(mn::TRANS_S) {
            "net-rr"
        } else {
            "net-stream"
        };
        out.push(Imported {
            group: group_col.map(|g| f[g].clone()).filter(|g| !g.is_empty()),
            doc: doc(kind, source, "table", m, Vec::new(), Origin::default()),
            name,
        });
    }
    if out.is_empty() {
        return Err("the table has a header but no rows".into());
    }
    Ok(out)
}

/// Tools print notes before their JSON; the document starts at the first '{'.
fn json_body(text: &str) -> Result<Value, String> {
    let start = text.find('{').ok_or("no JSON object in the file")?;
    serde_json::from_str(&text[start..]).map_err(|e| format!("not valid JSON: {e}"))
}

/// fio `--output-format=json`: one test per job.
pub fn fio_json(text: &str, source: &str) -> Result<Vec<Imported>, String> {
    let v = json_body(text)?;
    let jobs = v["jobs"]
        .as_array()
        .ok_or("no 'jobs' array: is this fio --output-format=json?")?;
    let mut out: Vec<Imported> = Vec::new();
    for (i, j) in jobs.iter().enumerate() {
        let jobname = j["jobname"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| format!("job{i}"));
        let f = |dir: &str, k: &str| j[dir][k].as_f64();
        let runtime_s = j["job_runtime"]
            .as_f64()
            .filter(|r| *r > 0.0)
            .map(|r| r / 1000.0);
        let (spec, sync_engine) = fio_spec(&v["global options"], &j["job options"]);
        // fio stamps its output when the jobs end.
        let started_s = v["timestamp"]
            .as_f64()
            .map(|t| t - runtime_s.unwrap_or(0.0));
        let spec_v = Value::Object(spec.clone());
        // The native run's name; jobs with equal parameters keep theirs apart.
        let mut name =
            iotoll_model::workload::test_name("disk", &spec_v).unwrap_or(jobname.clone());
        if out.iter().any(|o| o.name == name) {
            name = format!("{name}/job={jobname}");
        }
        let (ri, wi) = (
            f("read", "iops").unwrap_or(0.0),
            f("write", "iops").unwrap_or(0.0),
        );
        let (rb, wb) = (
            f("read", "bw_bytes").unwrap_or(0.0),
            f("write", "bw_bytes").unwrap_or(0.0),
        );
        let mut m = Metrics::new();
        m.insert(mn::IOPS.into(), ri + wi);
        m.insert(mn::READ_IOPS.into(), ri);
        m.insert(mn::WRITE_IOPS.into(), wi);
        m.insert(mn::MB_S.into(), (rb + wb) / 1e6);
        m.insert(mn::READ_MB_S.into(), rb / 1e6);
        m.insert(mn::WRITE_MB_S.into(), wb / 1e6);
        if let Some(r) = runtime_s {
            m.insert(mn::WINDOW_S.into(), r);
        }
        if let Some(e) = j["error"].as_f64() {
            m.insert(mn::ERRORS.into(), e);
        }
        // Total latency (submission to completion): mean weighted by I/Os.
        let n = |d: &str| j[d]["lat_ns"]["N"].as_f64().unwrap_or(0.0);
        let (nr, nw) = (n("read"), n("write"));
        if nr + nw > 0.0 {
            let mean = (j["read"]["lat_ns"]["mean"].as_f64().unwrap_or(0.0) * nr
                + j["write"]["lat_ns"]["mean"].as_f64().unwrap_or(0.0) * nw)
                / (nr + nw);
            m.insert(mn::LAT_MEAN_US.into(), mean / 1000.0);
            let ext = |k: &str, pick: fn(f64, f64) -> f64| {
                let vals: Vec<f64> = ["read", "write"]
                    .iter()
                    .filter(|d| n(d) > 0.0)
                    .filter_map(|d| j[d]["lat_ns"][k].as_f64())
                    .collect();
                vals.into_iter().reduce(pick).map(|v| v / 1000.0)
            };
            if let Some(v) = ext("min", f64::min) {
                m.insert(mn::LAT_MIN_US.into(), v);
            }
            if let Some(v) = ext("max", f64::max) {
                m.insert(mn::LAT_MAX_US.into(), v);
            }
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
                if let Some(v) = j[d]["clat_ns"]["percentile"][key].as_f64() {
                    m.insert(metric.into(), v / 1000.0);
                }
            }
        }
        let mut notes = vec![format!(
            "imported from fio: its CPU figures are the fio process's own (usr {} %, sys {} % of one CPU), not whole-host, so cpu_pct and the efficiency metrics are absent",
            j["usr_cpu"].as_f64().map(|v| format!("{v:.1}")).unwrap_or("?".into()),
            j["sys_cpu"].as_f64().map(|v| format!("{v:.1}")).unwrap_or("?".into()),
        )];
        if sync_engine {
            notes.push(
                "fio's engine is synchronous: its queue depth is 1 whatever iodepth says".into(),
            );
        }
        out.push(Imported {
            name,
            group: None,
            doc: doc(
                "disk",
                source,
                "fio-json",
                m,
                notes,
                Origin { spec, started_s },
            ),
        });
    }
    if out.is_empty() {
        return Err("fio's output has no jobs".into());
    }
    Ok(out)
}

/// fio's job options (over its global options) in the disk spec's keys;
/// the flag says the engine is synchronous (queue depth 1). Options fio
/// leaves at their defaults are filled in with fio's defaults.
fn fio_spec(global: &Value, job: &Value) -> (serde_json::Map<String, Value>, bool) {
    let opt = |k: &str| job[k].as_str().or_else(|| global[k].as_str());
    let num = |k: &str, default: u64| {
        opt(k)
            .map(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(Some(default))
    };
    let mut spec = serde_json::Map::new();
    // `bs=4k` only: a range or separate read/write sizes name no single size.
    if let Some(bs) = opt("bs")
        .or(opt("blocksize"))
        .map_or(Some(4096), |b| iotoll_model::parse_size(b).ok())
    {
        spec.insert("bs".into(), bs.into());
    }
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
        spec.insert("read_pct".into(), r.into());
        spec.insert("random_pct".into(), random.into());
    }
    let engine = opt("ioengine").unwrap_or("psync");
    let sync_engine = matches!(engine, "sync" | "psync" | "vsync" | "pvsync" | "pvsync2");
    let qd = if sync_engine {
        Some(1)
    } else {
        num("iodepth", 1)
    };
    if let Some(q) = qd {
        spec.insert("qd".into(), q.into());
    }
    if let Some(n) = num("numjobs", 1) {
        spec.insert("workers".into(), n.into());
    }
    if let Some(s) = opt("size").and_then(|s| iotoll_model::parse_size(s).ok()) {
        spec.insert("size".into(), s.into());
    }
    let secs = |k: &str| {
        opt(k)
            .and_then(|v| iotoll_model::parse_duration(v).ok())
            .map(|d| d.as_secs_f64())
    };
    if let Some(t) = secs("runtime") {
        spec.insert("time_s".into(), t.into());
    }
    if let Some(t) = secs("ramp_time") {
        spec.insert("ramp_s".into(), t.into());
    }
    spec.insert("engine".into(), format!("fio {engine}").into());
    if let Some(d) = opt("direct") {
        spec.insert("direct".into(), (d == "1").into());
    }
    (spec, sync_engine)
}

/// iperf3 `-J` (client side): one stream test.
pub fn iperf3_json(text: &str, source: &str) -> Result<Vec<Imported>, String> {
    let v = json_body(text)?;
    if let Some(e) = v["error"].as_str() {
        return Err(format!("iperf3 reported an error: {e}"));
    }
    let recv = &v["end"]["sum_received"];
    let bps = recv["bits_per_second"]
        .as_f64()
        .ok_or("no end.sum_received.bits_per_second: is this iperf3 -J output?")?;
    let ts = &v["start"]["test_start"];
    if ts["protocol"].as_str().is_some_and(|p| p != "TCP") {
        return Err("only TCP tests can be imported".into());
    }
    let reverse = ts["reverse"].as_i64().unwrap_or(0) != 0;
    let mut m = Metrics::new();
    let mbit = bps / 1e6;
    m.insert(mn::MBIT_S.into(), mbit);
    m.insert(
        if reverse {
            mn::RX_MBIT_S
        } else {
            mn::TX_MBIT_S
        }
        .into(),
        mbit,
    );
    if let Some(s) = recv["seconds"].as_f64() {
        m.insert(mn::WINDOW_S.into(), s);
    }
    if let Some(n) = ts["num_streams"].as_f64() {
        m.insert(mn::CONNS.into(), n);
    }
    if let Some(r) = v["end"]["sum_sent"]["retransmits"].as_f64() {
        m.insert(mn::RETRANSMITS.into(), r);
    }
    let cpu = &v["end"]["cpu_utilization_percent"];
    let notes = vec![format!(
        "imported from iperf3: its CPU figures are per process (client {} %, server {} %), not whole-host, so cpu_pct and the P/E index are absent",
        cpu["host_total"].as_f64().map(|v| format!("{v:.1}")).unwrap_or("?".into()),
        cpu["remote_total"].as_f64().map(|v| format!("{v:.1}")).unwrap_or("?".into()),
    )];
    let dir = if ts["bidir"].as_i64().unwrap_or(0) != 0 {
        "bidir"
    } else if reverse {
        "rx"
    } else {
        "tx"
    };
    let mut spec = serde_json::Map::new();
    spec.insert("dir".into(), dir.into());
    spec.insert(
        "conns".into(),
        ts["num_streams"].as_u64().unwrap_or(1).into(),
    );
    if let Some(b) = ts["blksize"].as_u64() {
        spec.insert("msg".into(), b.into());
    }
    if let Some(d) = ts["duration"].as_f64() {
        spec.insert("time_s".into(), d.into());
    }
    // iperf3's --omit is the ramp-up left out of the figures.
    if let Some(o) = ts["omit"].as_f64() {
        spec.insert("ramp_s".into(), o.into());
    }
    let spec_v = Value::Object(spec.clone());
    let name =
        iotoll_model::workload::test_name("net-stream", &spec_v).unwrap_or_else(|| "stream".into());
    Ok(vec![Imported {
        name,
        group: Some(dir.into()),
        doc: doc(
            "net-stream",
            source,
            "iperf3-json",
            m,
            notes,
            Origin {
                spec,
                started_s: v["start"]["timestamp"]["timesecs"].as_f64(),
            },
        ),
    }])
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIO: &str = include_str!("../tests/fixtures/fio-randrw.json");
    const IPERF3: &str = include_str!("../tests/fixtures/iperf3-tx.json");

    #[test]
    fn fio_fixture_from_the_real_tool() {
        let r = fio_json(FIO, "fio-randrw.json").unwrap();
        assert_eq!(r.len(), 1);
        let m = &r[0].doc.metrics;
        // The name the native run gets: randrw 70 % read, 4k, psync (QD 1).
        assert_eq!(r[0].name, "disk/bs=4k,read=70,random=100,qd=1,workers=1");
        // fio's own time (its stamp minus the 1 s runtime), not the import's.
        assert_eq!(r[0].doc.started_at, "2026-11-22T01:33:15Z");
        assert_eq!(r[0].doc.spec["size"], 16 << 20);
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
        assert!(fio_json("{}", "x").is_err());
        assert!(fio_json("not json", "x").is_err());
    }

    #[test]
    fn iperf3_fixture_from_the_real_tool() {
        let r = iperf3_json(IPERF3, "iperf3-tx.json").unwrap();
        let m = &r[0].doc.metrics;
        assert_eq!(r[0].name, "stream/dir=tx,conns=2,msg=128k");
        assert_eq!(r[0].doc.started_at, "2026-11-22T01:33:16Z");
        assert!((m["mbit_s"] - 23336.36218459598).abs() < 1e-6);
        assert_eq!(m["tx_mbit_s"], m["mbit_s"]);
        assert_eq!((m["conns"], m["retransmits"]), (2.0, 9.0));
        assert!(!m.contains_key("cpu_pct"));
        assert!(iperf3_json(r#"{"error": "unable to connect"}"#, "x")
            .unwrap_err()
            .contains("unable to connect"));
    }

    #[test]
    fn published_table() {
        let t = "test,group,mb_s,cpu_pct\n\"read, 4k\",read,120.5,8\nwrite-4k,write,80,\n";
        let r = table(t, "t.csv").unwrap();
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
        assert!(table("test,bogus\na,1\n", "t")
            .unwrap_err()
            .contains("'bogus'"));
        assert!(table("test,mb_s\na,fast\n", "t")
            .unwrap_err()
            .contains("line 2"));
        assert!(table("group,mb_s\nx,1\n", "t")
            .unwrap_err()
            .contains("'test'"));
        assert!(table("test,mb_s\na,1\na,2\n", "t")
            .unwrap_err()
            .contains("duplicate"));
        assert!(table("", "t").is_err());
    }
}
