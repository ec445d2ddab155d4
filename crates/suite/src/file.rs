//! Suite files (TOML, docs/suites.md): parsing, checks with file, line and
//! key, and expansion of swept parameters into jobs.

use crate::select::Rule;
use iotoll_disk::{DiskSpec, EngineChoice};
use iotoll_model::text::printable;
use iotoll_model::{parse_duration, parse_size, units, Kind};
use iotoll_net::{ClientSpec, Dir, TestKind};
use std::time::Duration;
use toml::Value;

#[derive(Debug, Clone, PartialEq)]
pub struct SuiteError {
    pub file: String,
    pub line: Option<usize>,
    pub key: Option<String>,
    pub msg: String,
}

impl std::fmt::Display for SuiteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Keys and messages quote the file: shown escaped, never raw.
        write!(f, "{}", printable(&self.file))?;
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
        }
        if let Some(k) = &self.key {
            write!(f, ": key '{}'", printable(k))?;
        }
        write!(f, ": {}", printable(&self.msg))
    }
}

impl std::error::Error for SuiteError {}

#[derive(Debug, Clone)]
pub enum JobSpec {
    Disk(DiskSpec),
    Net(ClientSpec),
}

/// One expanded test.
#[derive(Debug, Clone)]
pub struct Job {
    /// Unique: the test's name and its swept values, e.g. `rr4k/qd=8`.
    pub name: String,
    pub group: String,
    pub kind: Kind,
    pub spec: JobSpec,
    /// Every parameter set for this job (swept ones included).
    pub params: serde_json::Value,
    pub reps: u32,
    pub rule: Rule,
    /// The metric the selection and the repeatability check use.
    pub metric: String,
    pub repeatability_pct: f64,
    pub rerun: u32,
    /// Other processes above this % of the host's CPU in a repetition's
    /// window make it interfered.
    pub interference_pct: f64,
}

impl Job {
    pub fn ramp_time(&self) -> (Duration, Duration) {
        match &self.spec {
            JobSpec::Disk(d) => (d.ramp, d.time),
            JobSpec::Net(n) => (n.ramp, n.time),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Suite {
    pub name: String,
    pub description: Option<String>,
    /// The file as given, stored with every run.
    pub text: String,
    pub cpu_threshold_pct: Option<f64>,
    pub jobs: Vec<Job>,
}

impl Suite {
    /// Ramp + time of every repetition (reruns and preparation excluded).
    pub fn estimated(&self) -> Duration {
        crate::durations::planned(self, None)
    }
}

/// Most tests a suite may expand to. Beyond it a sweep is almost surely a
/// mistake (10,000 tests of even 10 s are a day), and the expansion itself
/// would take memory and time before anything runs.
pub const MAX_TESTS: usize = 10_000;

const SUITE_KEYS: &[&str] = &[
    "name",
    "description",
    "reps",
    "select",
    "repeatability_pct",
    "rerun",
    "interference_pct",
    "cpu_threshold_pct",
    "ramp",
    "time",
    "test",
];
/// Keys any test may set, which are not workload parameters.
const META_KEYS: &[&str] = &[
    "name",
    "kind",
    "group",
    "reps",
    "select",
    "repeatability_pct",
    "rerun",
    "interference_pct",
    "ramp",
    "time",
];
const DISK_KEYS: &[&str] = &[
    "spec",
    "bs",
    "read",
    "random",
    "qd",
    "workers",
    "size",
    "offset",
    "align",
    "burst_delay",
    "burst_len",
    "engine",
    "buffered",
];
const STREAM_KEYS: &[&str] = &["dir", "conns", "msg", "sockbuf", "nodelay", "threads"];
const RR_KEYS: &[&str] = &[
    "conns", "req", "resp", "size", "burst", "sockbuf", "nodelay", "threads",
];

/// The line of `key` inside the `idx`-th `[[test]]` block (or the top of
/// the file), for error messages.
/// "--burst-len 0 (--bs 4k)" as a suite file says it: "burst_len 0 (bs 4k)".
fn flags_as_keys(msg: &str) -> String {
    let mut out = String::with_capacity(msg.len());
    let mut rest = msg;
    while let Some(at) = rest.find("--") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let end = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .unwrap_or(after.len());
        out.push_str(&after[..end].replace('-', "_"));
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

fn key_line(text: &str, idx: Option<usize>, key: &str) -> Option<usize> {
    let mut block: Option<usize> = None;
    let mut seen = 0;
    for (n, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.starts_with("[[test]]") {
            block = Some(seen);
            seen += 1;
            if key.is_empty() && block == idx {
                return Some(n + 1);
            }
            continue;
        }
        if block == idx {
            if let Some((k, _)) = t.split_once('=') {
                if k.trim().trim_matches('"') == key {
                    return Some(n + 1);
                }
            }
        }
    }
    None
}

struct Ctx<'a> {
    file: &'a str,
    text: &'a str,
}

impl Ctx<'_> {
    /// An engine's validation error, which speaks of command-line flags
    /// ("--qd must be ..."), told in the file's terms: the key it is about,
    /// on that key's line, in the words of the file (`qd`, `burst_len`).
    fn invalid(&self, idx: Option<usize>, msg: &str) -> SuiteError {
        let key = msg
            .strip_prefix("--")
            .map(|rest| rest.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-')))
            .and_then(|mut words| words.next())
            .map(|flag| flag.replace('-', "_"));
        self.err(idx, key.as_deref(), flags_as_keys(msg))
    }

    fn err(&self, idx: Option<usize>, key: Option<&str>, msg: impl Into<String>) -> SuiteError {
        SuiteError {
            file: self.file.to_string(),
            line: key
                .and_then(|k| key_line(self.text, idx, k))
                .or_else(|| idx.and_then(|i| key_line(self.text, Some(i), ""))),
            key: key.map(str::to_string),
            msg: msg.into(),
        }
    }
}

fn as_size(v: &Value) -> Result<u64, String> {
    match v {
        Value::Integer(i) if *i >= 0 => Ok(*i as u64),
        Value::String(s) => parse_size(s).map_err(|e| e.to_string()),
        other => Err(format!(
            "expected a size (4096 or \"4k\"), got {}",
            other.type_str()
        )),
    }
}

fn as_u32(v: &Value) -> Result<u32, String> {
    match v {
        Value::Integer(i) if (0..=u32::MAX as i64).contains(i) => Ok(*i as u32),
        other => Err(format!("expected a whole number, got {other}")),
    }
}

fn as_str(v: &Value) -> Result<&str, String> {
    v.as_str()
        .ok_or_else(|| format!("expected a string, got {}", v.type_str()))
}

fn as_bool(v: &Value) -> Result<bool, String> {
    v.as_bool()
        .ok_or_else(|| format!("expected true or false, got {}", v.type_str()))
}

fn as_duration(v: &Value) -> Result<Duration, String> {
    parse_duration(as_str(v)?).map_err(|e| e.to_string())
}

fn pct(v: &Value) -> Result<u32, String> {
    let p = as_u32(v)?;
    if p > 100 {
        return Err(format!("{p} is outside 0-100"));
    }
    Ok(p)
}

fn cores() -> u32 {
    std::thread::available_parallelism()
        .map(|n| n.get() as u32)
        .unwrap_or(1)
}

fn apply_disk(s: &mut DiskSpec, key: &str, v: &Value) -> Result<(), String> {
    match key {
        "spec" => s.apply_builtin(as_str(v)?).map_err(|e| e.to_string())?,
        "bs" => s.bs = as_size(v)?,
        "read" => s.read_pct = pct(v)?,
        "random" => s.random_pct = pct(v)?,
        "qd" => s.qd = as_u32(v)?,
        // 0: one worker per CPU core.
        "workers" => s.workers = Some(as_u32(v)?).filter(|w| *w > 0).unwrap_or_else(cores),
        "size" => s.size = Some(as_size(v)?),
        "offset" => s.offset = as_size(v)?,
        "align" => s.align = Some(as_size(v)?),
        "burst_delay" => s.burst_delay = as_duration(v)?,
        "burst_len" => s.burst_len = as_u32(v)?,
        "engine" => s.engine = EngineChoice::parse(as_str(v)?)?,
        "buffered" => s.buffered = as_bool(v)?,
        _ => return Err("not a disk parameter".into()),
    }
    Ok(())
}

fn apply_net(s: &mut ClientSpec, key: &str, v: &Value) -> Result<(), String> {
    match key {
        "dir" => {
            s.dir = match as_str(v)? {
                "tx" => Dir::Tx,
                "rx" => Dir::Rx,
                "bidir" => Dir::Bidir,
                d => return Err(format!("unknown direction '{d}': use tx, rx or bidir")),
            }
        }
        "conns" => s.conns = as_u32(v)?,
        "msg" => s.msg = as_size(v)?,
        "sockbuf" => s.sockbuf = Some(as_size(v)?),
        "nodelay" => s.nodelay = as_bool(v)?,
        "threads" => s.threads = Some(as_u32(v)? as usize).filter(|t| *t > 0),
        "req" => s.req = as_size(v)?,
        "resp" => s.resp = as_size(v)?,
        "size" => {
            s.req = as_size(v)?;
            s.resp = s.req;
        }
        "burst" => s.burst = as_u32(v)?,
        _ => return Err("not a network parameter".into()),
    }
    Ok(())
}

fn value_json(v: &Value) -> serde_json::Value {
    serde_json::to_value(v).unwrap_or(serde_json::Value::Null)
}

fn value_label(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Parses and expands a suite. `file` names it in errors.
pub fn parse(text: &str, file: &str) -> Result<Suite, SuiteError> {
    let cx = Ctx { file, text };
    let doc: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        let line = e
            .span()
            .map(|s| text[..s.start.min(text.len())].lines().count().max(1));
        SuiteError {
            file: file.to_string(),
            line,
            key: None,
            msg: e.message().to_string(),
        }
    })?;
    for k in doc.keys() {
        if !SUITE_KEYS.contains(&k.as_str()) {
            return Err(cx.err(
                None,
                Some(k),
                format!("unknown suite key; known: {}", SUITE_KEYS.join(", ")),
            ));
        }
    }
    let top = |k: &str| doc.get(k);
    let name = match top("name") {
        Some(v) => as_str(v)
            .map_err(|m| cx.err(None, Some("name"), m))?
            .to_string(),
        None => return Err(cx.err(None, None, "the suite has no name = \"...\"")),
    };
    if name.contains(char::is_control) {
        return Err(cx.err(
            None,
            Some("name"),
            "a suite name must not contain control characters",
        ));
    }
    let description = top("description")
        .and_then(|v| v.as_str())
        .map(str::to_string);
    let cpu_threshold_pct = match top("cpu_threshold_pct") {
        Some(v) => Some(
            v.as_float()
                .or(v.as_integer().map(|i| i as f64))
                .ok_or_else(|| cx.err(None, Some("cpu_threshold_pct"), "expected a number"))?,
        ),
        None => None,
    };
    let tests = match top("test") {
        Some(Value::Array(a)) if !a.is_empty() => a,
        Some(Value::Array(_)) | None => {
            return Err(cx.err(None, None, "the suite has no [[test]]"))
        }
        Some(_) => return Err(cx.err(None, Some("test"), "expected [[test]] tables")),
    };

    let mut jobs: Vec<Job> = Vec::new();
    let mut names: std::collections::HashSet<String> = std::collections::HashSet::new();
    let mut base_names: Vec<String> = Vec::new();
    for (idx, t) in tests.iter().enumerate() {
        let i = Some(idx);
        let Value::Table(t) = t else {
            return Err(cx.err(i, None, "a [[test]] must be a table"));
        };
        // Per-test value, else the suite's.
        let get = |k: &str| {
            t.get(k)
                .map(|v| (v, i))
                .or_else(|| doc.get(k).map(|v| (v, None)))
        };
        let tname = match t.get("name") {
            Some(v) => as_str(v)
                .map_err(|m| cx.err(i, Some("name"), m))?
                .to_string(),
            None => return Err(cx.err(i, None, "this [[test]] has no name")),
        };
        if tname.is_empty() || tname.contains(['/', ',']) || tname.contains(char::is_control) {
            return Err(cx.err(
                i,
                Some("name"),
                "a test name must be non-empty, without '/', ',' or control characters",
            ));
        }
        if base_names.contains(&tname) {
            return Err(cx.err(i, Some("name"), format!("duplicate test name '{tname}'")));
        }
        base_names.push(tname.clone());
        let kind: Kind = match t.get("kind") {
            Some(v) => as_str(v)
                .and_then(str::parse)
                .map_err(|m| cx.err(i, Some("kind"), m))?,
            None => {
                return Err(cx.err(
                    i,
                    None,
                    format!("test '{tname}' has no kind ({})", Kind::names()),
                ))
            }
        };
        let params_allowed = match kind {
            Kind::Disk => DISK_KEYS,
            Kind::NetStream => STREAM_KEYS,
            Kind::NetRr => RR_KEYS,
        };
        let default_metric = kind.headline();
        for k in t.keys() {
            if !META_KEYS.contains(&k.as_str()) && !params_allowed.contains(&k.as_str()) {
                return Err(cx.err(
                    i,
                    Some(k),
                    format!(
                        "unknown key for a {kind} test; known: {}",
                        params_allowed.join(", ")
                    ),
                ));
            }
        }
        let reps = match get("reps") {
            Some((v, at)) => as_u32(v)
                .ok()
                .filter(|r| *r >= 1)
                .ok_or_else(|| cx.err(at, Some("reps"), "expected a whole number of at least 1"))?,
            None => 1,
        };
        let rerun = match get("rerun") {
            Some((v, at)) => as_u32(v).map_err(|m| cx.err(at, Some("rerun"), m))?,
            None => 0,
        };
        let repeatability_pct = match get("repeatability_pct") {
            Some((v, at)) => v
                .as_float()
                .or(v.as_integer().map(|x| x as f64))
                .filter(|x| *x >= 0.0)
                .ok_or_else(|| {
                    cx.err(
                        at,
                        Some("repeatability_pct"),
                        "expected a number of 0 or more",
                    )
                })?,
            None => 5.0,
        };
        let interference_pct = match get("interference_pct") {
            Some((v, at)) => v
                .as_float()
                .or(v.as_integer().map(|x| x as f64))
                .filter(|x| (0.0..=100.0).contains(x))
                .ok_or_else(|| {
                    cx.err(
                        at,
                        Some("interference_pct"),
                        "expected a number from 0 to 100 (% of the host's CPU)",
                    )
                })?,
            None => iotoll_model::result::DEFAULT_INTERFERENCE_PCT,
        };
        let rule = match get("select") {
            Some((v, at)) => Rule::parse(
                as_str(v).map_err(|m| cx.err(at, Some("select"), m))?,
                default_metric,
            )
            .map_err(|m| cx.err(at, Some("select"), m))?,
            None => Rule::Median(default_metric.to_string()),
        };
        let metric = match &rule {
            Rule::Median(m) => m.clone(),
            _ => default_metric.to_string(),
        };
        if !iotoll_model::metrics::produces(kind, &metric) {
            let at = get("select").and_then(|x| x.1);
            return Err(cx.err(
                at.or(i),
                Some("select"),
                format!("a {kind} test has no metric '{metric}' to select by"),
            ));
        }
        let dur = |k: &str| -> Result<Option<Duration>, SuiteError> {
            match get(k) {
                Some((v, at)) => as_duration(v).map(Some).map_err(|m| cx.err(at, Some(k), m)),
                None => Ok(None),
            }
        };
        let ramp = dur("ramp")?;
        let time = dur("time")?;
        if time == Some(Duration::ZERO) {
            return Err(cx.err(
                get("time").and_then(|x| x.1),
                Some("time"),
                "must be positive",
            ));
        }

        // Parameters: a list is a sweep; `spec` is applied first so that
        // explicit keys override the spec's values.
        let mut keys: Vec<(&String, Vec<&Value>)> = Vec::new();
        for (k, v) in t
            .iter()
            .filter(|(k, _)| params_allowed.contains(&k.as_str()))
        {
            let vals: Vec<&Value> = match v {
                Value::Array(a) if a.is_empty() => {
                    return Err(cx.err(i, Some(k), "empty sweep: give at least one value"))
                }
                Value::Array(a) => a.iter().collect(),
                one => vec![one],
            };
            keys.push((k, vals));
        }
        keys.sort_by_key(|(k, _)| {
            (
                k.as_str() != "spec",
                params_allowed.iter().position(|p| p == k),
            )
        });
        let swept: Vec<&str> = keys
            .iter()
            .filter(|(_, v)| v.len() > 1)
            .map(|(k, _)| k.as_str())
            .collect();
        let group_tpl = match t.get("group") {
            Some(v) => as_str(v)
                .map_err(|m| cx.err(i, Some("group"), m))?
                .to_string(),
            None => tname.clone(),
        };

        // Counted before anything is expanded: a sweep of a million
        // combinations is refused at once, not built.
        let combos = keys
            .iter()
            .try_fold(1usize, |acc, (_, v)| acc.checked_mul(v.len()))
            .filter(|c| jobs.len().saturating_add(*c) <= MAX_TESTS)
            .ok_or_else(|| {
                let total = keys
                    .iter()
                    .fold(1f64, |acc, (_, v)| acc * v.len() as f64);
                cx.err(
                    i,
                    None,
                    format!(
                        "test '{tname}' sweeps {} combinations ({}), and the suite would have more than {MAX_TESTS} tests: split it into several suites or sweep fewer values",
                        units::format_number(total),
                        keys.iter()
                            .filter(|(_, v)| v.len() > 1)
                            .map(|(k, v)| format!("{k}: {}", v.len()))
                            .collect::<Vec<_>>()
                            .join(" x ")
                    ),
                )
            })?;
        jobs.reserve(combos);
        for n in 0..combos {
            // Mixed-radix digits of n pick one value per key.
            let mut rest = n;
            let mut pick: Vec<(&str, &Value)> = Vec::with_capacity(keys.len());
            for (k, vals) in keys.iter().rev() {
                pick.push((k.as_str(), vals[rest % vals.len()]));
                rest /= vals.len();
            }
            pick.reverse();
            let mut params = serde_json::Map::new();
            let net = |kind| {
                JobSpec::Net(ClientSpec {
                    kind,
                    ..ClientSpec::default()
                })
            };
            let mut spec = match kind {
                Kind::Disk => JobSpec::Disk(DiskSpec::default()),
                Kind::NetStream => net(TestKind::Stream),
                Kind::NetRr => net(TestKind::Rr),
            };
            for (k, v) in &pick {
                let r = match &mut spec {
                    JobSpec::Disk(d) => apply_disk(d, k, v),
                    JobSpec::Net(c) => apply_net(c, k, v),
                };
                r.map_err(|m| cx.err(i, Some(k), m))?;
                params.insert(k.to_string(), value_json(v));
            }
            match &mut spec {
                JobSpec::Disk(d) => {
                    d.ramp = ramp.unwrap_or(d.ramp);
                    d.time = time.unwrap_or(d.time);
                    d.validate().map_err(|e| cx.invalid(i, &e.to_string()))?;
                }
                JobSpec::Net(c) => {
                    c.ramp = ramp.unwrap_or(c.ramp);
                    c.time = time.unwrap_or(c.time);
                    c.validate().map_err(|e| cx.invalid(i, &e.to_string()))?;
                }
            }
            let label = |k: &str| {
                pick.iter()
                    .find(|(pk, _)| *pk == k)
                    .map(|(_, v)| value_label(v))
            };
            let suffix: Vec<String> = swept
                .iter()
                .filter_map(|k| label(k).map(|v| format!("{k}={v}")))
                .collect();
            let name = if suffix.is_empty() {
                tname.clone()
            } else {
                format!("{tname}/{}", suffix.join(","))
            };
            let mut group = group_tpl.clone();
            for (k, v) in &pick {
                group = group.replace(&format!("{{{k}}}"), &value_label(v));
            }
            if let Some(open) = group.find('{') {
                return Err(cx.err(
                    i,
                    Some("group"),
                    format!("'{}' names no parameter of this test", &group[open..]),
                ));
            }
            if !names.insert(name.clone()) {
                return Err(cx.err(
                    i,
                    Some("name"),
                    format!("duplicate test name '{name}' after expansion"),
                ));
            }
            jobs.push(Job {
                name,
                group,
                kind,
                spec,
                params: serde_json::Value::Object(params),
                reps,
                rule: rule.clone(),
                metric: metric.clone(),
                repeatability_pct,
                rerun,
                interference_pct,
            });
        }
    }
    Ok(Suite {
        name,
        description,
        text: text.to_string(),
        cpu_threshold_pct,
        jobs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin::BUILTIN;

    #[test]
    fn builtin_suites_expand_to_the_expected_counts() {
        let want = [
            ("quick", 5),
            ("iscsi-initiator-study", 12),
            ("adapter-vs-hba-study", 24),
            ("hw-iscsi-study", 9),
            ("ten-gig-adapter-study", 10 + 14 + 3),
            ("bidirectional-transfer-study", 1),
        ];
        for (name, n) in want {
            let text = BUILTIN.iter().find(|(b, _)| *b == name).unwrap().1;
            let s = parse(text, name).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(s.name, name);
            assert_eq!(s.jobs.len(), n, "{name}");
        }
    }

    #[test]
    fn iscsi_study_parameters() {
        let s = parse(crate::builtin::find("iscsi-initiator-study").unwrap(), "x").unwrap();
        assert_eq!(s.cpu_threshold_pct, Some(8.0));
        let j = s
            .jobs
            .iter()
            .find(|j| j.name == "large-block/spec=dss-1m")
            .unwrap();
        assert_eq!(j.rule, Rule::Median("mb_s".into()));
        assert_eq!(j.reps, 3);
        let JobSpec::Disk(d) = &j.spec else { panic!() };
        assert_eq!(
            (d.bs, d.qd, d.workers, d.size),
            (1 << 20, 4, 1, Some(4 << 30))
        );
        assert_eq!(
            (d.ramp, d.time),
            (Duration::from_secs(60), Duration::from_secs(240))
        );
        assert_eq!(s.estimated(), Duration::from_secs(12 * 3 * 300));
    }

    #[test]
    fn sweep_names_and_groups() {
        let text = r#"
name = "t"
[[test]]
name = "conns"
kind = "net-stream"
dir = ["tx", "rx"]
conns = [1, 10]
msg = "64k"
group = "{dir}"
"#;
        let s = parse(text, "t.toml").unwrap();
        let names: Vec<&str> = s.jobs.iter().map(|j| j.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "conns/dir=tx,conns=1",
                "conns/dir=tx,conns=10",
                "conns/dir=rx,conns=1",
                "conns/dir=rx,conns=10"
            ]
        );
        assert_eq!(s.jobs[2].group, "rx");
        let JobSpec::Net(c) = &s.jobs[3].spec else {
            panic!()
        };
        assert_eq!((c.dir, c.conns, c.msg), (Dir::Rx, 10, 65536));
        assert_eq!(s.jobs[3].params["conns"], 10);
    }

    #[test]
    fn spec_then_explicit_keys() {
        let s = parse(
            "name='t'\n[[test]]\nname='a'\nkind='disk'\nspec='db-oltp-8k'\nqd=[1,4]\n",
            "t",
        )
        .unwrap();
        let JobSpec::Disk(d) = &s.jobs[1].spec else {
            panic!()
        };
        assert_eq!((d.bs, d.qd), (8192, 4));
        assert_eq!(s.jobs[1].name, "a/qd=4");
    }

    fn err(text: &str) -> SuiteError {
        parse(text, "s.toml").unwrap_err()
    }

    #[test]
    fn bad_suites_name_file_line_and_key() {
        let e = err("name = 't'\n[[test]\n");
        assert_eq!((e.file.as_str(), e.line), ("s.toml", Some(2)), "{e}");
        let e = err("name='t'\n[[test]]\nname='a'\nkind='disk'\nbogus=1\n");
        assert_eq!((e.line, e.key.as_deref()), (Some(5), Some("bogus")), "{e}");
        let e = err("name='t'\n[[test]]\nname='a'\nkind='disk'\nqd='deep'\n");
        assert_eq!((e.line, e.key.as_deref()), (Some(5), Some("qd")), "{e}");
        let e = err("name='t'\n[[test]]\nname='a'\nkind='disk'\nspec=['nope']\n");
        assert!(
            e.msg.contains("unknown spec 'nope'") && e.line == Some(5),
            "{e}"
        );
        let e = err("name='t'\n[[test]]\nname='a'\nkind='disk'\nbs=[]\n");
        assert!(
            e.msg.contains("empty sweep") && e.key.as_deref() == Some("bs"),
            "{e}"
        );
        let e =
            err("name='t'\n[[test]]\nname='a'\nkind='disk'\n[[test]]\nname='a'\nkind='net-rr'\n");
        assert!(e.msg.contains("duplicate") && e.line == Some(6), "{e}");
        let e = err("name='t'\n[[test]]\nname='a'\nkind='disk'\nread=150\n");
        assert!(e.msg.contains("outside 0-100"), "{e}");
        let e = err("name='t'\n[[test]]\nname='a'\nkind='net-rr'\ndir='tx'\n");
        assert_eq!(e.key.as_deref(), Some("dir"), "{e}");
        let e = err("name='t'\nwhatever=1\n[[test]]\nname='a'\nkind='disk'\n");
        assert_eq!(
            (e.line, e.key.as_deref()),
            (Some(2), Some("whatever")),
            "{e}"
        );
        let e = err("name='t'\n[[test]]\nname='a'\nkind='tape'\n");
        assert!(e.msg.contains("unknown kind"), "{e}");
        let e = err("name='t'\nselect='best'\n[[test]]\nname='a'\nkind='disk'\n");
        assert_eq!(e.key.as_deref(), Some("select"), "{e}");
        let e = err("name='t'\n");
        assert!(e.msg.contains("no [[test]]"), "{e}");
        let e = err("name='t'\n[[test]]\nname='a'\nkind='disk'\ngroup='{dir}'\n");
        assert!(e.msg.contains("{dir}"), "{e}");
        let e = err("name='t'\ninterference_pct=150\n[[test]]\nname='a'\nkind='disk'\n");
        assert_eq!(
            (e.line, e.key.as_deref()),
            (Some(2), Some("interference_pct")),
            "{e}"
        );
        let s = parse(
            "name='t'\ninterference_pct=2\n[[test]]\nname='a'\nkind='disk'\n[[test]]\nname='b'\nkind='disk'\ninterference_pct=7.5\n",
            "t",
        )
        .unwrap();
        assert_eq!(
            (s.jobs[0].interference_pct, s.jobs[1].interference_pct),
            (2.0, 7.5)
        );
    }

    /// Seen: `file:2: --qd must be ...` for `qd` on line 5 (and `conns`):
    /// the error names the key, on its line, in the file's words.
    #[test]
    fn engine_limits_name_the_key_and_its_line() {
        let e = err("name='t'\n\n[[test]]\nname='a'\nkind='disk'\nqd=0\n");
        assert_eq!((e.line, e.key.as_deref()), (Some(6), Some("qd")), "{e}");
        assert!(e.msg.starts_with("qd must be between 1 and"), "{e}");
        assert!(!e.to_string().contains("--"), "{e}");
        let e = err("name='t'\n[[test]]\nname='a'\nkind='net-stream'\ntime='2s'\nconns=[1, 0]\n");
        assert_eq!((e.line, e.key.as_deref()), (Some(6), Some("conns")), "{e}");
        let e = err("name='t'\n[[test]]\nname='a'\nkind='disk'\nbs='4k'\nburst_len=0\n");
        assert_eq!(
            (e.line, e.key.as_deref()),
            (Some(6), Some("burst_len")),
            "{e}"
        );
        // A limit broken by two keys together names both in the file's terms.
        let e = err("name='t'\n[[test]]\nname='a'\nkind='disk'\nsize='4k'\nbs='64k'\n");
        assert_eq!((e.line, e.key.as_deref()), (Some(5), Some("size")), "{e}");
        assert!(
            e.msg.contains("(bs 65536)") || e.msg.contains("(bs 64k)"),
            "{e}"
        );
    }

    #[test]
    fn flags_read_as_keys() {
        assert_eq!(
            flags_as_keys("--burst-len 0 (--bs 4k) --"),
            "burst_len 0 (bs 4k) "
        );
        assert_eq!(flags_as_keys("no flags"), "no flags");
    }

    /// Seen: control characters in suite and test names reached the
    /// terminal raw. They are refused, and errors quoting them escape them.
    #[test]
    fn control_characters_in_names_are_refused_and_escaped() {
        // TOML basic strings decode \u001b to ESC.
        let e = err(r#"name="a\u001b[2J"
[[test]]
name="a"
kind="disk"
"#);
        assert!(e.msg.contains("control characters"), "{e}");
        let e = err(r#"name="t"
[[test]]
name="x\u0007"
kind="disk"
"#);
        assert!(e.msg.contains("control characters"), "{e}");
        let e = err(r#"name="t"
[[test]]
name="a"
kind="disk"
"q\u001b]0;pwned\u0007"=1
"#);
        let shown = e.to_string();
        assert!(
            !shown.contains('\u{1b}') && shown.contains("\\u{1b}"),
            "{shown}"
        );
    }

    /// Seen: a sweep of 10^6 combinations made `suite show` run for over a
    /// minute and grow past 225 MB; now it is refused before expanding.
    #[test]
    fn huge_sweeps_are_refused_before_expanding() {
        let values: Vec<String> = (1..=1000).map(|v| v.to_string()).collect();
        let list = values.join(",");
        let text =
            format!("name='t'\n[[test]]\nname='a'\nkind='disk'\nqd=[{list}]\nworkers=[{list}]\n");
        let e = err(&text);
        assert!(e.msg.contains("1,000,000 combinations"), "{e}");
        assert!(e.msg.contains("qd: 1000 x workers: 1000"), "{e}");
        assert_eq!(e.line, Some(2), "{e}");
        // Counted over the whole suite, not per test.
        let half: Vec<String> = (1..=6000).map(|v| format!("'{v}k'")).collect();
        let half = half.join(",");
        let text = format!(
            "name='t'\n[[test]]\nname='a'\nkind='disk'\nbs=[{half}]\n[[test]]\nname='b'\nkind='disk'\nbs=[{half}]\n"
        );
        assert!(err(&text).msg.contains("more than 10000 tests"));
        // An enormous product is refused without being built.
        let big: Vec<String> = (1..=64).map(|v| v.to_string()).collect();
        let big = big.join(",");
        let keys = ["qd", "workers", "read", "random", "burst_len", "align"];
        let mut text = "name='t'\n[[test]]\nname='a'\nkind='disk'\n".to_string();
        for k in keys {
            text.push_str(&format!("{k}=[{big}]\n"));
        }
        assert!(err(&text).msg.contains("combinations"));
    }

    /// Expansion is linear: 10,000 swept values expand at once (the
    /// duplicate-name check was a scan of every earlier test).
    #[test]
    fn a_large_sweep_expands() {
        let values: Vec<String> = (1..=10_000).map(|v| format!("'{v}k'")).collect();
        let text = format!(
            "name='t'\n[[test]]\nname='a'\nkind='disk'\nbs=[{}]\n",
            values.join(",")
        );
        let s = parse(&text, "t").unwrap();
        assert_eq!(s.jobs.len(), 10_000);
        assert_eq!(s.jobs[9_999].name, "a/bs=10000k");
    }
}
