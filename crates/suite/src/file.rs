//! Suite files (TOML, docs/suites.md): read through serde structs that
//! reject unknown keys and keep each value's place in the file, checked
//! with file, line and key, and expanded (swept parameters) into jobs.

use crate::hosts::{HostEntry, Placement};
use crate::select::Rule;
use iotoll_disk::specs::{self, AccessLine, AccessSpec};
use iotoll_disk::{DiskRequest, EngineChoice};
use iotoll_model::ci::{DISK_UNIT_MBIT_S, DISK_UNIT_MB_S, UNIT_PARAM};
use iotoll_model::text::printable;
use iotoll_model::{parse_duration, parse_size, units, Kind};
use iotoll_net::{ClientSpec, Dir, TestKind};
use serde::de::{DeserializeOwned, IgnoredAny};
use std::collections::HashSet;
use std::time::Duration;
use toml::de::{DeTable, DeValue, ValueDeserializer};
use toml::{Spanned, Value};

#[derive(Debug, Clone, PartialEq)]
pub struct SuiteError {
    pub file: String,
    pub line: Option<usize>,
    pub key: Option<String>,
    pub msg: String,
    /// Errors of later `[[test]]`s of the same file, so that one edit can
    /// fix them all (each told on its own line).
    pub also: Vec<SuiteError>,
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
        write!(f, ": {}", printable(&self.msg))?;
        for e in &self.also {
            write!(f, "\n{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for SuiteError {}

#[derive(Debug, Clone)]
pub enum JobSpec {
    Disk(DiskRequest),
    Net(ClientSpec),
}

impl JobSpec {
    /// Replaces the ramp-up and/or the window.
    pub fn set_durations(&mut self, ramp: Option<Duration>, time: Option<Duration>) {
        let (r, t) = match self {
            JobSpec::Disk(d) => (&mut d.ramp, &mut d.time),
            JobSpec::Net(c) => (&mut c.ramp, &mut c.time),
        };
        *r = ramp.unwrap_or(*r);
        *t = time.unwrap_or(*t);
    }

    /// The engine's own checks, in its words (command-line flags).
    pub fn validate(&self) -> Result<(), String> {
        match self {
            JobSpec::Disk(d) => d.validate().map_err(|e| e.to_string()),
            JobSpec::Net(c) => c.validate().map_err(|e| e.to_string()),
        }
    }

    /// Sets a suite file's parameter `key`; `spec` names one of the
    /// file's `[[spec]]`s, else a built-in.
    fn apply(&mut self, key: &str, v: &Value, file_specs: &[AccessSpec]) -> Result<(), String> {
        match self {
            JobSpec::Disk(s) => match key {
                "spec" => {
                    let name = as_str(v)?;
                    match file_specs.iter().find(|f| f.name == name) {
                        Some(f) => s.apply_spec(f.clone()),
                        None if specs::find(name).is_some() => {
                            s.apply_builtin(name).map_err(|e| e.to_string())?
                        }
                        None => {
                            let mut known: Vec<&str> =
                                file_specs.iter().map(|f| f.name.as_str()).collect();
                            known.extend(specs::builtin_names());
                            return Err(format!(
                                "unknown spec '{name}'; the file's [[spec]]s and the built-ins: {}",
                                known.join(", ")
                            ));
                        }
                    }
                }
                "bs" => line(s, "bs")?.bs = as_size(v)?,
                "read" => line(s, "read")?.read_pct = pct(v)?,
                "random" => line(s, "random")?.random_pct = pct(v)?,
                "qd" => s.qd = as_u32(v)?,
                // 0: one per CPU (of `cpus`, else every online one), pinned.
                "workers" => s.workers = as_u32(v)?,
                "spread" => s.spread = as_bool(v)?,
                "cpus" => {
                    let list = match v {
                        Value::Integer(_) => as_u32(v)?.to_string(),
                        _ => as_str(v)?.to_string(),
                    };
                    s.cpus = Some(iotoll_probe::affinity::parse_cpu_list(&list)?);
                }
                "size" => s.size = Some(as_size(v)?),
                "offset" => s.offset = as_size(v)?,
                // These apply to every line of a mixed spec.
                "align" => {
                    let a = as_size(v)?;
                    s.lines.iter_mut().for_each(|l| l.align = Some(a));
                }
                "burst_delay" => {
                    let d = as_duration(v)?;
                    s.lines.iter_mut().for_each(|l| l.burst_delay = d);
                }
                "burst_len" => {
                    let n = as_u32(v)?;
                    s.lines.iter_mut().for_each(|l| l.burst_len = n);
                }
                "engine" => s.engine = EngineChoice::parse(as_str(v)?)?,
                "buffered" => s.buffered = as_bool(v)?,
                _ => return Err("not a disk parameter".into()),
            },
            JobSpec::Net(s) => match key {
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
            },
        }
        Ok(())
    }
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
    /// Where it runs: here, or on hosts (`on`, `pairs`; also in `params`).
    pub placement: Placement,
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
    /// `sut = [...]`: the processes of the system under test on this host
    /// (command names or pids); their CPU is not interference.
    pub sut: Vec<iotoll_probe::procs::SutProcess>,
    /// The file's `[hosts]` table, in its order (a hosts file's entries
    /// override these: `hosts::resolve_hosts`).
    pub hosts: Vec<HostEntry>,
    pub jobs: Vec<Job>,
}

/// The beginning of the run note that records an overridden region size.
pub const SIZE_NOTE: &str = "size overridden:";

impl Suite {
    /// Ramp + time of every repetition (reruns and preparation excluded).
    pub fn estimated(&self) -> Duration {
        crate::durations::planned(self, None)
    }

    /// `suite run --size`: every disk test's test file or region is `size`
    /// bytes, whatever the suite says (a study written for a 4 GiB LUN on
    /// a smaller one). Returns the run note (beginning with [`SIZE_NOTE`])
    /// naming the suite's own sizes, or None when the suite has no disk
    /// test. The jobs' `params` gain `size` so the stored parameters say
    /// what ran; a size smaller than a test's transfer is an error naming it.
    pub fn override_size(&mut self, size: u64) -> Result<Option<String>, String> {
        let mut was: Vec<String> = Vec::new();
        for j in &mut self.jobs {
            let JobSpec::Disk(d) = &mut j.spec else {
                continue;
            };
            let label = d.size.map_or("the whole target".into(), units::format_size);
            if !was.contains(&label) {
                was.push(label);
            }
            let bs = d.max_bs();
            if size < bs {
                return Err(format!(
                    "--size {} for test '{}': smaller than its transfer size {}",
                    units::format_size(size),
                    j.name,
                    units::format_size(bs)
                ));
            }
            d.size = Some(size);
            if let Some(p) = j.params.as_object_mut() {
                p.insert("size".into(), units::format_size(size).into());
            }
        }
        Ok((!was.is_empty()).then(|| {
            format!(
                "{SIZE_NOTE} {} for every disk test (the suite's: {})",
                units::format_size(size),
                was.join(", ")
            )
        }))
    }
}

/// Most tests a suite may expand to. Beyond it a sweep is almost surely a
/// mistake (10,000 tests of even 10 s are a day), and the expansion itself
/// would take memory and time before anything runs.
pub const MAX_TESTS: usize = 10_000;

/// A value as written, with its place in the file. Values stay raw TOML
/// until checked, so that each error says what was wrong with the value
/// ("expected a whole number, got \"deep\"") as it always has.
pub(crate) type Raw = Spanned<Value>;
/// A key that is only known here and read elsewhere.
pub(crate) type Known = Option<IgnoredAny>;
/// A value of the parsed file with its place, e.g. a `[[test]]` table.
pub(crate) type Node<'a> = Spanned<DeValue<'a>>;
/// A test's parameters as written, in the order of its kind's keys.
type Params = Vec<(&'static str, Sweep)>;
pub(crate) type Span = std::ops::Range<usize>;
pub(crate) type Checked<T> = Result<T, SuiteError>;

/// A workload parameter as written: one value, or a list of values to sweep.
#[derive(serde::Deserialize)]
struct Sweep(Raw);

impl Sweep {
    fn values(&self) -> &[Value] {
        match self.0.get_ref() {
            Value::Array(a) => a,
            one => std::slice::from_ref(one),
        }
    }
}

/// The suite's keys; any other is refused. The defaults it gives its tests
/// are read as `Common`, the tests table by table (`Ctx::test`).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct SuiteKeys {
    name: Option<Raw>,
    description: Option<Raw>,
    reps: Known,
    select: Known,
    repeatability_pct: Known,
    rerun: Known,
    interference_pct: Known,
    cpu_threshold_pct: Option<Raw>,
    sut: Option<Raw>,
    unit: Option<Raw>,
    ramp: Known,
    time: Known,
    test: Known,
    spec: Known,
    hosts: Known,
}

/// A `[[spec]]` table: an access specification for the file's disk tests.
/// Its transfer is `lines`, or for a single line `bs`, `read`, `random`
/// (and `burst_delay`, `burst_len`, `align`) on the table itself.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct SpecTable {
    name: Option<Raw>,
    qd: Option<Raw>,
    lines: Option<Raw>,
    share: Option<Raw>,
    bs: Option<Raw>,
    read: Option<Raw>,
    random: Option<Raw>,
    burst_delay: Option<Raw>,
    burst_len: Option<Raw>,
    align: Option<Raw>,
}

impl SpecTable {
    /// The single line given on the table itself.
    fn one(&mut self) -> LineKeys {
        LineKeys {
            share: self.share.take(),
            bs: self.bs.take(),
            read: self.read.take(),
            random: self.random.take(),
            burst_delay: self.burst_delay.take(),
            burst_len: self.burst_len.take(),
            align: self.align.take(),
        }
    }
}

/// One line of a `[[spec]]`.
#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct LineKeys {
    share: Option<Raw>,
    bs: Option<Raw>,
    read: Option<Raw>,
    random: Option<Raw>,
    burst_delay: Option<Raw>,
    burst_len: Option<Raw>,
    align: Option<Raw>,
}

impl LineKeys {
    fn any(&self) -> Option<(&'static str, &Raw)> {
        [
            ("share", &self.share),
            ("bs", &self.bs),
            ("read", &self.read),
            ("random", &self.random),
            ("burst_delay", &self.burst_delay),
            ("burst_len", &self.burst_len),
            ("align", &self.align),
        ]
        .into_iter()
        .find_map(|(k, v)| Some((k, v.as_ref()?)))
    }
}

/// The keys every test takes (the kind says which others it may have),
/// and the suite's defaults for them.
#[derive(serde::Deserialize)]
struct Common {
    name: Option<Raw>,
    kind: Option<Raw>,
    group: Option<Raw>,
    reps: Option<Raw>,
    select: Option<Raw>,
    repeatability_pct: Option<Raw>,
    rerun: Option<Raw>,
    interference_pct: Option<Raw>,
    ramp: Option<Raw>,
    time: Option<Raw>,
}

/// A test table of one kind, which refuses keys the kind does not take: the
/// keys of `Common`, then the kind's parameters (its command-line flags) in
/// the order expanded names list swept values.
macro_rules! kind_table {
    ($ty:ident: $($param:ident),+) => {
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        struct $ty {
            name: Known, kind: Known, group: Known, reps: Known, select: Known,
            repeatability_pct: Known, rerun: Known, interference_pct: Known,
            ramp: Known, time: Known,
            // Placement: read by `hosts::placement`, which refuses a kind's wrong ones.
            on: Known, pairs: Known, clients: Known, server: Known, pairs_per_client: Known,
            $($param: Option<Sweep>,)+
        }
        impl $ty {
            /// The test's parameters, or serde's error and the kind's keys.
            fn params(t: &Node) -> Result<Params, (toml::de::Error, &'static [&'static str])> {
                let table: Self = read(t).map_err(|e| (e, &[$(stringify!($param)),+][..]))?;
                let all = [$((stringify!($param), table.$param)),+];
                Ok(all.into_iter().filter_map(|(k, v)| Some((k, v?))).collect())
            }
        }
    };
}
kind_table!(DiskTest: spec, bs, read, random, qd, workers, spread, cpus, size, offset, align, burst_delay, burst_len, engine, buffered);
kind_table!(StreamTest: dir, conns, msg, sockbuf, nodelay, threads);
kind_table!(RrTest: conns, req, resp, size, burst, sockbuf, nodelay, threads);

pub(crate) fn read<T: DeserializeOwned>(v: &Node) -> Result<T, toml::de::Error> {
    T::deserialize(ValueDeserializer::from(v.clone()))
}

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

/// The single line of a disk test's spec, for `key` to set.
fn line<'a>(s: &'a mut DiskRequest, key: &str) -> Result<&'a mut iotoll_disk::AccessLine, String> {
    s.single_line(key).map_err(|e| e.to_string())
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

pub(crate) fn as_u32(v: &Value) -> Result<u32, String> {
    match v {
        Value::Integer(i) if (0..=u32::MAX as i64).contains(i) => Ok(*i as u32),
        other => Err(format!("expected a whole number, got {other}")),
    }
}

pub(crate) fn as_str(v: &Value) -> Result<&str, String> {
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

fn as_number(v: &Value) -> Option<f64> {
    v.as_float().or(v.as_integer().map(|i| i as f64))
}

fn pct(v: &Value) -> Result<u32, String> {
    match as_u32(v)? {
        p if p > 100 => Err(format!("{p} is outside 0-100")),
        p => Ok(p),
    }
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

/// A [[test]] once checked: what each of its jobs is built from.
struct Test {
    name: String,
    name_at: Span,
    /// The `[[test]]` line: where errors about the whole test point.
    header: Span,
    group: String,
    group_at: Span,
    params: Params,
    /// Everything but the name, group and parameters of each job.
    proto: Job,
}

/// Parses and expands a suite. `file` names it in errors.
pub fn parse(text: &str, file: &str) -> Result<Suite, SuiteError> {
    let cx = Ctx::new(file, text);
    let root = cx.root()?;
    let suite: SuiteKeys = read(&root).map_err(|e| {
        cx.de_err(e, |known| {
            let known = known.trim_start_matches("one of ").replace('`', "");
            format!("unknown suite key; known: {known}")
        })
    })?;
    let name = cx.check(suite.name.as_ref(), "name", |v| {
        let name = as_str(v)?;
        if name.contains(char::is_control) {
            return Err("a suite name must not contain control characters".into());
        }
        Ok(name.to_string())
    })?;
    let name = name.ok_or_else(|| cx.err(None, None, "the suite has no name = \"...\""))?;
    let cpu_threshold_pct =
        cx.check(suite.cpu_threshold_pct.as_ref(), "cpu_threshold_pct", |v| {
            as_number(v).ok_or_else(|| "expected a number".into())
        })?;
    let sut = cx.check(suite.sut.as_ref(), "sut", |v| {
        let bad = || "expected a list of process names or pids, e.g. sut = [\"tgtd\"]".to_string();
        let items = v.as_array().ok_or_else(bad)?;
        let one = |v: &Value| {
            let text = match v.as_integer() {
                Some(i) => i.to_string(),
                None => as_str(v)?.to_string(),
            };
            iotoll_probe::procs::SutProcess::parse(&text)
                .ok_or_else(|| format!("'{text}' is neither a process name nor a pid above 0"))
        };
        items.iter().map(one).collect::<Result<Vec<_>, String>>()
    })?;
    let unit = cx.check(suite.unit.as_ref(), "unit", |v| match as_str(v)? {
        u @ (DISK_UNIT_MB_S | DISK_UNIT_MBIT_S) => Ok(u.to_string()),
        u => Err(format!(
            "unknown unit '{u}' for disk throughput: use {DISK_UNIT_MB_S} or {DISK_UNIT_MBIT_S}"
        )),
    })?;
    let defaults: Common = read(&root).map_err(|e| cx.de_err(e, str::to_string))?;
    let hosts = crate::hosts::hosts_table(&cx, &root)?;
    let file_specs = cx.specs(&root)?;
    let cx = Ctx { file_specs, ..cx };
    let mut jobs = Vec::new();
    let (mut base_names, mut names) = (HashSet::new(), HashSet::new());
    // Every [[test]] is checked even after one is wrong: all their errors
    // are told at once, not one per attempt.
    let mut errors: Vec<SuiteError> = Vec::new();
    for t in cx.tests(&root)? {
        let checked = (cx.test(t, &defaults, &mut base_names))
            .and_then(|test| cx.expand(&test, &mut jobs, &mut names));
        if let Err(e) = checked {
            errors.push(e);
        }
    }
    if !errors.is_empty() {
        let mut first = errors.remove(0);
        first.also = errors;
        return Err(first);
    }
    // Stored with each disk test, so that results and reports of the run
    // publish its throughput as the suite asked.
    if let Some(u) = unit.filter(|u| u == DISK_UNIT_MBIT_S) {
        for j in jobs.iter_mut().filter(|j| j.kind == Kind::Disk) {
            if let serde_json::Value::Object(p) = &mut j.params {
                p.insert(UNIT_PARAM.into(), u.clone().into());
            }
        }
    }
    Ok(Suite {
        name,
        description: (suite.description).and_then(|v| v.into_inner().as_str().map(str::to_string)),
        text: text.to_string(),
        cpu_threshold_pct,
        sut: sut.unwrap_or_default(),
        hosts,
        jobs,
    })
}

pub(crate) struct Ctx<'a> {
    pub(crate) file: &'a str,
    pub(crate) text: &'a str,
    /// The file's `[[spec]]`s: a test's `spec` looks here first.
    file_specs: Vec<AccessSpec>,
}

impl<'a> Ctx<'a> {
    pub(crate) fn new(file: &'a str, text: &'a str) -> Ctx<'a> {
        Ctx {
            file,
            text,
            file_specs: Vec::new(),
        }
    }

    /// The file as a tree of values that know their place in it.
    pub(crate) fn root(&self) -> Checked<Node<'a>> {
        let root = DeTable::parse(self.text).map_err(|e| {
            let msg = match (e.message(), e.span()) {
                ("duplicate key", Some(at)) => self.duplicate(at),
                (m, _) => m.to_string(),
            };
            self.err(e.span(), None, msg)
        })?;
        Ok(Spanned::new(root.span(), DeValue::Table(root.into_inner())))
    }

    /// TOML's "duplicate key" with the key, and for a `[hosts]` entry
    /// (the key under a `[hosts]` header, or in a `[hosts.NAME]` one) as
    /// a host listed twice.
    fn duplicate(&self, at: Span) -> String {
        let key = self.text.get(at.clone()).unwrap_or_default();
        let key = key.trim_matches(|c| c == '"' || c == '\'');
        let line_start = self.text[..at.start.min(self.text.len())]
            .rfind('\n')
            .map_or(0, |i| i + 1);
        // The table the key is in: its own line if that is a header, else
        // the nearest header above it.
        let header = self.text[line_start..]
            .lines()
            .next()
            .filter(|l| l.trim_start().starts_with('['))
            .or_else(|| {
                (self.text[..line_start].lines().rev()).find(|l| l.trim_start().starts_with('['))
            })
            .unwrap_or_default();
        let header: String = header.chars().filter(|c| !c.is_whitespace()).collect();
        if header == "[hosts]" || header.starts_with("[hosts.") {
            format!("host '{key}' is listed twice")
        } else {
            format!("duplicate key '{key}'")
        }
    }

    /// The line (1-based) of byte `offset`.
    pub(crate) fn line_of(&self, offset: usize) -> usize {
        let mut before = &self.text.as_bytes()[..offset.min(self.text.len())];
        if before.len() == self.text.len() {
            // An error at the very end is told on the last line.
            before = before.strip_suffix(b"\n").unwrap_or(before);
        }
        before.iter().filter(|b| **b == b'\n').count() + 1
    }

    pub(crate) fn err(
        &self,
        at: Option<Span>,
        key: Option<&str>,
        msg: impl Into<String>,
    ) -> SuiteError {
        SuiteError {
            file: self.file.to_string(),
            line: at.map(|s| self.line_of(s.start)),
            key: key.map(str::to_string),
            msg: msg.into(),
            also: Vec::new(),
        }
    }

    pub(crate) fn at(&self, v: &Raw, key: &str, msg: impl Into<String>) -> SuiteError {
        self.err(Some(v.span()), Some(key), msg)
    }

    /// A serde error in the file's terms: an unknown key is named, on its
    /// line, with the keys known there (`known` is given serde's list).
    pub(crate) fn de_err(&self, e: toml::de::Error, known: impl Fn(&str) -> String) -> SuiteError {
        let unknown = (e.message().strip_prefix("unknown field `"))
            .and_then(|rest| rest.split_once("`, expected "));
        match unknown {
            Some((key, expected)) => self.err(e.span(), Some(key), known(expected)),
            None => self.err(e.span(), None, e.message()),
        }
    }

    /// An engine's validation error, which speaks of command-line flags
    /// ("--qd must be ..."), told in the file's terms: the key it is about,
    /// on that key's line (else the test's), in the words of the file.
    fn invalid(&self, test: &Test, msg: &str) -> SuiteError {
        let said = flags_as_keys(msg);
        // The flag the message is about comes first: "--qd must be ...".
        let flag = said
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .next();
        let key = flag.filter(|_| msg.starts_with("--"));
        let at = key
            .and_then(|k| test.params.iter().find(|(p, _)| *p == k))
            .map_or(test.header.clone(), |(_, s)| s.0.span());
        self.err(Some(at), key, said.as_str())
    }

    /// The file's `[[spec]]` tables, each checked: a name, its lines
    /// (their shares adding up to 100) and its QD.
    fn specs(&self, root: &Node<'a>) -> Checked<Vec<AccessSpec>> {
        let tables = match root.get_ref().as_table().and_then(|t| t.get("spec")) {
            None => return Ok(Vec::new()),
            Some(n) => match n.get_ref() {
                DeValue::Array(a) => a.iter().collect::<Vec<_>>(),
                _ => {
                    return Err(self.err(Some(n.span()), Some("spec"), "expected [[spec]] tables"))
                }
            },
        };
        let mut out: Vec<AccessSpec> = Vec::new();
        for t in tables {
            let header = t.span();
            if !t.get_ref().is_table() {
                return Err(self.err(Some(header), None, "a [[spec]] must be a table"));
            }
            let mut table: SpecTable = read(t).map_err(|e| {
                self.de_err(e, |_| {
                    "unknown key for a [[spec]]; known: name, qd, lines, and for a single line share, bs, read, random, burst_delay, burst_len, align".into()
                })
            })?;
            let name = self.check(table.name.as_ref(), "name", |v| {
                let n = as_str(v)?;
                if n.is_empty() || n.contains(char::is_control) {
                    return Err("a spec name must be non-empty, without control characters".into());
                }
                Ok(n.to_string())
            })?;
            let Some(name) = name else {
                return Err(self.err(Some(header), None, "this [[spec]] has no name"));
            };
            if out.iter().any(|s| s.name == name) {
                let at = table.name.as_ref().unwrap();
                return Err(self.at(at, "name", format!("a second [[spec]] named '{name}'")));
            }
            let qd = self.check(table.qd.as_ref(), "qd", as_u32)?;
            let what = format!("spec '{name}'");
            let one = table.one();
            let lines = match (&table.lines, one.any()) {
                (Some(_), Some((k, v))) => {
                    let msg =
                        format!("{what} has lines = [...]; give {k} in each line, not beside them");
                    return Err(self.at(v, k, msg));
                }
                (Some(l), None) => {
                    let node = t.get_ref().as_table().and_then(|t| t.get("lines"));
                    let items: Vec<&Node> = match node.map(|n| n.get_ref()) {
                        Some(DeValue::Array(a)) if !a.is_empty() => a.iter().collect(),
                        _ => {
                            let msg = "expected a list of lines: [{ share = 60, bs = \"4k\", read = 70, random = 100 }, ...]";
                            return Err(self.at(l, "lines", msg));
                        }
                    };
                    let many = items.len() > 1;
                    let mut lines = Vec::with_capacity(items.len());
                    for item in items {
                        let keys: LineKeys = read(item).map_err(|e| {
                            self.de_err(e, |_| {
                                "unknown key for a line; known: share, bs, read, random, burst_delay, burst_len, align".into()
                            })
                        })?;
                        lines.push(self.line(&keys, many, item.span(), &what)?);
                    }
                    lines
                }
                (None, _) => vec![self.line(&one, false, header.clone(), &what)?],
            };
            if let Err(e) = specs::check_lines(&lines, &what) {
                let at = table.lines.as_ref().map_or(header.clone(), Raw::span);
                return Err(self.err(Some(at), Some("lines"), flags_as_keys(&e.to_string())));
            }
            out.push(AccessSpec {
                name,
                lines,
                qd: qd.unwrap_or(DiskRequest::default().qd),
                source: None,
            });
        }
        Ok(out)
    }

    /// One line of a `[[spec]]`; `many`: the spec has several, each of
    /// which must give its share.
    fn line(&self, k: &LineKeys, many: bool, at: Span, what: &str) -> Checked<AccessLine> {
        let mut l = AccessLine::default();
        match self.check(k.share.as_ref(), "share", |v| match as_u32(v)? {
            p if (1..=100).contains(&p) => Ok(p),
            p => Err(format!("share {p} is outside 1-100")),
        })? {
            Some(p) => l.share_pct = p,
            None if many => {
                let msg = format!("a line of {what} has no share (its % of the I/Os)");
                return Err(self.err(Some(at), Some("share"), msg));
            }
            None => {}
        }
        match self.check(k.bs.as_ref(), "bs", as_size)? {
            Some(bs) => l.bs = bs,
            None => {
                let msg = format!("a line of {what} has no bs (transfer size)");
                return Err(self.err(Some(at), Some("bs"), msg));
            }
        }
        if let Some(p) = self.check(k.read.as_ref(), "read", pct)? {
            l.read_pct = p;
        }
        if let Some(p) = self.check(k.random.as_ref(), "random", pct)? {
            l.random_pct = p;
        }
        if let Some(d) = self.check(k.burst_delay.as_ref(), "burst_delay", as_duration)? {
            l.burst_delay = d;
        }
        if let Some(b) = self.check(k.burst_len.as_ref(), "burst_len", as_u32)? {
            l.burst_len = b;
        }
        l.align = self.check(k.align.as_ref(), "align", as_size)?;
        // The engine's checks of one line, told on the line's key.
        let probe = DiskRequest {
            lines: vec![AccessLine {
                share_pct: 100,
                ..l.clone()
            }],
            ..DiskRequest::default()
        };
        if let Err(e) = probe.validate() {
            let msg = flags_as_keys(&e.to_string());
            let key = ["bs", "align", "burst_len"]
                .into_iter()
                .find(|k| msg.starts_with(k));
            let (key, raw) = match key {
                Some("bs") => (Some("bs"), k.bs.as_ref()),
                Some("align") => (Some("align"), k.align.as_ref()),
                Some(_) => (Some("burst_len"), k.burst_len.as_ref()),
                None => (None, None),
            };
            let msg = format!("{what}: {msg}");
            return Err(self.err(Some(raw.map_or(at, Raw::span)), key, msg));
        }
        Ok(l)
    }

    fn tests<'d>(&self, root: &'d Node<'a>) -> Checked<Vec<&'d Node<'a>>> {
        let test = root.get_ref().as_table().and_then(|t| t.get("test"));
        match test.map(|t| (t.get_ref(), t.span())) {
            Some((DeValue::Array(a), _)) if !a.is_empty() => Ok(a.iter().collect()),
            Some((DeValue::Array(_), _)) | None => {
                Err(self.err(None, None, "the suite has no [[test]]"))
            }
            Some((_, at)) => Err(self.err(Some(at), Some("test"), "expected [[test]] tables")),
        }
    }

    /// Checks one [[test]]: its name, its kind, the keys that kind takes
    /// and the settings it ends up with.
    fn test(&self, t: &Node, suite: &Common, seen: &mut HashSet<String>) -> Checked<Test> {
        let header = t.span();
        if !t.get_ref().is_table() {
            return Err(self.err(Some(header), None, "a [[test]] must be a table"));
        }
        let common: Common = read(t).map_err(|e| self.de_err(e, str::to_string))?;
        let name = self.check(common.name.as_ref(), "name", |v| {
            let name = as_str(v)?;
            if name.is_empty() || name.contains(['/', ',']) || name.contains(char::is_control) {
                let msg = "a test name must be non-empty, without '/', ',' or control characters";
                return Err(msg.into());
            }
            Ok(name.to_string())
        })?;
        let Some((name, name_v)) = name.zip(common.name.as_ref()) else {
            return Err(self.err(Some(header), None, "this [[test]] has no name"));
        };
        if !seen.insert(name.clone()) {
            return Err(self.at(name_v, "name", format!("duplicate test name '{name}'")));
        }
        let kind = self.check(common.kind.as_ref(), "kind", |v| as_str(v)?.parse::<Kind>())?;
        let Some(kind) = kind else {
            let msg = format!("test '{name}' has no kind ({})", Kind::names());
            return Err(self.err(Some(header), None, msg));
        };
        let params = match kind {
            Kind::Disk => DiskTest::params(t),
            Kind::NetStream => StreamTest::params(t),
            Kind::NetRr => RrTest::params(t),
        };
        let params = params.map_err(|(e, known)| {
            self.de_err(e, |_| {
                format!(
                    "unknown key for a {kind} test; known: {}, and to place it on hosts: {}",
                    known.join(", "),
                    crate::hosts::placement_keys(kind).join(", ")
                )
            })
        })?;
        let mut proto = self.proto(kind, &common, suite, &header)?;
        proto.placement = crate::hosts::placement(self, kind, t, &header)?;
        if let Some((k, s)) = params.iter().find(|(_, s)| s.values().is_empty()) {
            return Err(self.at(&s.0, k, "empty sweep: give at least one value"));
        }
        let group = self.check(common.group.as_ref(), "group", |v| {
            Ok(as_str(v)?.to_string())
        })?;
        Ok(Test {
            group_at: common.group.as_ref().map_or(header.clone(), Raw::span),
            group: group.unwrap_or_else(|| name.clone()),
            name,
            name_at: name_v.span(),
            header,
            params,
            proto,
        })
    }

    /// `v` checked by `check`; an error is told on the value's line.
    pub(crate) fn check<T>(
        &self,
        v: Option<&Raw>,
        key: &str,
        check: impl FnOnce(&Value) -> Result<T, String>,
    ) -> Checked<Option<T>> {
        v.map(|v| check(v.get_ref()).map_err(|m| self.at(v, key, m)))
            .transpose()
    }

    /// The job each of the test's combinations starts from: the kind's
    /// defaults, and each setting from the test, else the suite.
    fn proto(&self, kind: Kind, test: &Common, suite: &Common, header: &Span) -> Checked<Job> {
        let get = |key: fn(&Common) -> &Option<Raw>| key(test).as_ref().or(key(suite).as_ref());
        let reps = self.check(get(|d| &d.reps), "reps", |v| {
            let r = as_u32(v).ok().filter(|r| *r >= 1);
            r.ok_or_else(|| "expected a whole number of at least 1".into())
        })?;
        let rerun = self.check(get(|d| &d.rerun), "rerun", as_u32)?;
        let repeatability_pct =
            self.check(get(|d| &d.repeatability_pct), "repeatability_pct", |v| {
                let x = as_number(v).filter(|x| *x >= 0.0);
                x.ok_or_else(|| "expected a number of 0 or more".into())
            })?;
        let interference_pct =
            self.check(get(|d| &d.interference_pct), "interference_pct", |v| {
                let x = as_number(v).filter(|x| (0.0..=100.0).contains(x));
                x.ok_or_else(|| "expected a number from 0 to 100 (% of the host's CPU)".into())
            })?;
        let headline = kind.headline();
        let rule = self.check(get(|d| &d.select), "select", |v| {
            Rule::parse(as_str(v)?, headline)
        })?;
        let rule = rule.unwrap_or_else(|| Rule::Median(headline.to_string()));
        let metric = match &rule {
            Rule::Median(m) => m.clone(),
            _ => headline.to_string(),
        };
        if !iotoll_model::metrics::produces(kind, &metric) {
            // A suite-wide rule this test cannot follow: the test is named.
            let at = test.select.as_ref().map_or(header.clone(), Raw::span);
            let msg = format!("a {kind} test has no metric '{metric}' to select by");
            return Err(self.err(Some(at), Some("select"), msg));
        }
        let ramp = self.check(get(|d| &d.ramp), "ramp", as_duration)?;
        let time = self.check(get(|d| &d.time), "time", |v| {
            let t = Some(as_duration(v)?).filter(|t| !t.is_zero());
            t.ok_or_else(|| "must be positive".into())
        })?;
        let net = |kind| {
            JobSpec::Net(ClientSpec {
                kind,
                ..ClientSpec::default()
            })
        };
        let mut spec = match kind {
            Kind::Disk => JobSpec::Disk(DiskRequest::default()),
            Kind::NetStream => net(TestKind::Stream),
            Kind::NetRr => net(TestKind::Rr),
        };
        spec.set_durations(ramp, time);
        Ok(Job {
            name: String::new(),
            group: String::new(),
            kind,
            spec,
            params: serde_json::Value::Null,
            reps: reps.unwrap_or(1),
            rule,
            metric,
            repeatability_pct: repeatability_pct.unwrap_or(5.0),
            rerun: rerun.unwrap_or(0),
            interference_pct: interference_pct
                .unwrap_or(iotoll_model::result::DEFAULT_INTERFERENCE_PCT),
            placement: Placement::Local,
        })
    }

    /// Adds the test's jobs, one per combination of swept values. They are
    /// counted before any is built: a sweep of a million combinations is
    /// refused at once, not built.
    fn expand(&self, test: &Test, jobs: &mut Vec<Job>, names: &mut HashSet<String>) -> Checked<()> {
        let lens = || test.params.iter().map(|(_, s)| s.values().len());
        let combos = lens()
            .try_fold(1usize, |acc, n| acc.checked_mul(n))
            .filter(|c| jobs.len().saturating_add(*c) <= MAX_TESTS)
            .ok_or_else(|| {
                let total = lens().fold(1f64, |acc, n| acc * n as f64);
                let swept: Vec<String> = (test.params.iter())
                    .filter(|(_, s)| s.values().len() > 1)
                    .map(|(k, s)| format!("{k}: {}", s.values().len()))
                    .collect();
                let msg = format!(
                    "test '{}' sweeps {} combinations ({}), and the suite would have more than {MAX_TESTS} tests: split it into several suites or sweep fewer values",
                    test.name,
                    units::format_number(total),
                    swept.join(" x ")
                );
                self.err(Some(test.header.clone()), None, msg)
            })?;
        jobs.reserve(combos);
        for n in 0..combos {
            let job = self.job(test, n)?;
            if !names.insert(job.name.clone()) {
                let msg = format!("duplicate test name '{}' after expansion", job.name);
                return Err(self.err(Some(test.name_at.clone()), Some("name"), msg));
            }
            jobs.push(job);
        }
        Ok(())
    }

    /// The test's `n`th combination: the mixed-radix digits of `n` pick one
    /// value per parameter.
    fn job(&self, test: &Test, n: usize) -> Checked<Job> {
        let mut rest = n;
        let mut pick: Vec<(&str, &Value, &Sweep)> = Vec::with_capacity(test.params.len());
        for (k, s) in test.params.iter().rev() {
            let values = s.values();
            pick.push((k, &values[rest % values.len()], s));
            rest /= values.len();
        }
        pick.reverse();
        let mut job = test.proto.clone();
        (job.name, job.group) = (test.name.clone(), test.group.clone());
        let (mut params, mut sep) = (serde_json::Map::new(), '/');
        for (k, v, s) in &pick {
            (job.spec.apply(k, v, &self.file_specs))
                .map_err(|m| self.at(&s.0, k, flags_as_keys(&m)))?;
            params.insert(k.to_string(), value_json(v));
            let label = value_label(v);
            if s.values().len() > 1 {
                job.name += &format!("{sep}{k}={label}");
                sep = ',';
            }
            job.group = job.group.replace(&format!("{{{k}}}"), &label);
        }
        job.spec.validate().map_err(|m| self.invalid(test, &m))?;
        if let Some(open) = job.group.find('{') {
            let msg = format!("'{}' names no parameter of this test", &job.group[open..]);
            return Err(self.err(Some(test.group_at.clone()), Some("group"), msg));
        }
        // Stored with the results: where the test ran is one of its parameters.
        if let Some((k, v)) = job.placement.param() {
            params.insert(k.to_string(), v);
        }
        job.params = serde_json::Value::Object(params);
        Ok(job)
    }
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
            (d.lines[0].bs, d.qd, d.workers, d.size),
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
        assert_eq!((d.lines[0].bs, d.qd), (8192, 4));
        assert_eq!(s.jobs[1].name, "a/qd=4");
    }

    fn err(text: &str) -> SuiteError {
        parse(text, "s.toml").unwrap_err()
    }

    /// Each wrong [[test]] is told, not only the first.
    #[test]
    fn every_wrong_test_is_told_at_once() {
        let e = err("name='t'\n[[test]]\nname='a'\nkind='disk'\nqd=0\n[[test]]\nname='b'\nkind='disk'\n[[test]]\nname='c'\nkind='net-stream'\nconns='x'\n");
        assert_eq!(e.line, Some(5), "{e}");
        assert_eq!(e.also.len(), 1, "{e}");
        assert_eq!(e.also[0].line, Some(12), "{e}");
        let shown = e.to_string();
        assert_eq!(shown.lines().count(), 2, "{shown}");
        assert!(
            shown.contains("s.toml:5") && shown.contains("s.toml:12"),
            "{shown}"
        );
    }

    /// `sut = [...]`: the system under test's processes, by name or pid.
    #[test]
    fn the_system_under_test_by_name_or_pid() {
        use iotoll_probe::procs::SutProcess;
        let s = parse(
            "name='t'\nsut=['tgtd', 42]\n[[test]]\nname='a'\nkind='disk'\n",
            "t",
        )
        .unwrap();
        assert_eq!(
            s.sut,
            [SutProcess::Name("tgtd".into()), SutProcess::Pid(42)]
        );
        for bad in ["sut=[0]", "sut='tgtd'", "sut=['']"] {
            let e = err(&format!(
                "name='t'\n{bad}\n[[test]]\nname='a'\nkind='disk'\n"
            ));
            assert_eq!((e.line, e.key.as_deref()), (Some(2), Some("sut")), "{e}");
        }
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

    /// Seen: `[[ test ]]` (spaces inside the brackets are valid TOML) was
    /// missed by the line search, and errors in such a test had no line.
    #[test]
    fn spaced_test_headers_keep_lines() {
        let e = err("name='t'\n[[ test ]]\nname='a'\nkind='disk'\n\n[[ test ]]\nname='b'\nkind='disk'\nqd=0\n");
        assert_eq!((e.line, e.key.as_deref()), (Some(9), Some("qd")), "{e}");
        let e = err("name='t'\n[[test]]\nname='a'\nkind='disk'\n[[ test ]]\nkind='disk'\n");
        assert_eq!(
            (e.line, e.msg.as_str()),
            (Some(5), "this [[test]] has no name")
        );
        let e = err("name='t'\n[[ test ]]\nname='a'\nkind='disk'\nbogus=1\n");
        assert_eq!((e.line, e.key.as_deref()), (Some(5), Some("bogus")), "{e}");
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

    const MIXED: &str = r#"name = "m"
[[spec]]
name = "mail"
qd = 8
lines = [
  { share = 60, bs = "4k", read = 70, random = 100 },
  { share = 30, bs = 8192, read = 50, random = 100, align = "4k" },
  { share = 10, bs = "64k", read = 0, random = 0, burst_delay = "2ms", burst_len = 4 },
]

[[spec]]
name = "seq-read"
bs = "1m"
read = 100
random = 0

[[test]]
name = "t"
kind = "disk"
spec = ["mail", "seq-read", "db-oltp-8k"]
"#;

    #[test]
    fn file_specs_with_lines() {
        let s = parse(MIXED, "m.toml").unwrap_or_else(|e| panic!("{e}"));
        let names: Vec<&str> = s.jobs.iter().map(|j| j.name.as_str()).collect();
        assert_eq!(
            names,
            ["t/spec=mail", "t/spec=seq-read", "t/spec=db-oltp-8k"]
        );
        let JobSpec::Disk(d) = &s.jobs[0].spec else {
            panic!()
        };
        assert_eq!((d.spec_name.as_deref(), d.qd), (Some("mail"), 8));
        let shares: Vec<u32> = d.lines.iter().map(|l| l.share_pct).collect();
        assert_eq!(shares, [60, 30, 10]);
        assert_eq!((d.lines[1].bs, d.lines[1].align), (8192, Some(4096)));
        assert_eq!(
            (d.lines[2].burst_delay, d.lines[2].burst_len),
            (Duration::from_millis(2), 4)
        );
        let JobSpec::Disk(d) = &s.jobs[1].spec else {
            panic!()
        };
        assert_eq!(
            (d.lines.len(), d.lines[0].bs, d.lines[0].random_pct, d.qd),
            (1, 1 << 20, 0, 1)
        );
        let JobSpec::Disk(d) = &s.jobs[2].spec else {
            panic!()
        };
        assert_eq!((d.lines[0].bs, d.qd), (8192, 28));
        // A file spec shadows a built-in of its name.
        let t = "name='x'\n[[spec]]\nname='db-oltp-8k'\nbs='512'\n[[test]]\nname='a'\nkind='disk'\nspec='db-oltp-8k'\n";
        let JobSpec::Disk(d) = &parse(t, "x").unwrap().jobs[0].spec else {
            panic!()
        };
        assert_eq!((d.lines[0].bs, d.qd), (512, 1));
    }

    #[test]
    fn bad_file_specs_name_the_key_and_line() {
        let e = err(&MIXED.replace("share = 10,", "share = 5,"));
        assert_eq!((e.line, e.key.as_deref()), (Some(5), Some("lines")), "{e}");
        assert!(e.msg.contains("add up to 95 %"), "{e}");
        // bs beside a mixed spec: the key is named on its line.
        let e = err(&MIXED.replace(
            "spec = [\"mail\", \"seq-read\", \"db-oltp-8k\"]",
            "spec = \"mail\"\nbs = \"8k\"",
        ));
        assert_eq!((e.line, e.key.as_deref()), (Some(21), Some("bs")), "{e}");
        assert!(
            e.msg
                .starts_with("bs sets the transfer of a single-line spec; spec 'mail' has 3 lines"),
            "{e}"
        );
        let e = err(&MIXED.replace("read = 70,", "read = 70, colour = 1,"));
        assert_eq!((e.line, e.key.as_deref()), (Some(6), Some("colour")), "{e}");
        let e = err(&MIXED.replace("{ share = 60, bs = \"4k\",", "{ bs = \"4k\","));
        assert_eq!((e.line, e.key.as_deref()), (Some(6), Some("share")), "{e}");
        let e = err(&MIXED.replace("bs = \"1m\"", "bs = \"2g\""));
        assert_eq!((e.line, e.key.as_deref()), (Some(13), Some("bs")), "{e}");
        let e = err(&MIXED.replace("burst_len = 4", "burst_len = 0"));
        assert_eq!(
            (e.line, e.key.as_deref()),
            (Some(8), Some("burst_len")),
            "{e}"
        );
        let e = err(&MIXED.replace("name = \"seq-read\"", "name = \"mail\""));
        assert!(
            e.msg.contains("a second [[spec]] named 'mail'") && e.line == Some(12),
            "{e}"
        );
        let e = err(&MIXED.replace("lines = [", "bs = 1\nlines = ["));
        assert_eq!(e.key.as_deref(), Some("bs"), "{e}");
        let e = err(&MIXED.replace("\"db-oltp-8k\"]", "\"nope\"]"));
        assert!(e.msg.contains("unknown spec 'nope'; the file's [[spec]]s and the built-ins: mail, seq-read, web-file-server-4k"), "{e}");
    }

    #[test]
    fn workers_spread_and_cpus_pass_through() {
        let s = parse(
            "name='t'\n[[test]]\nname='a'\nkind='disk'\nworkers=0\nspread=true\ncpus='0-3'\nqd=32\n",
            "t",
        )
        .unwrap();
        let JobSpec::Disk(d) = &s.jobs[0].spec else {
            panic!()
        };
        assert_eq!(
            (d.workers, d.spread, d.cpus.as_deref()),
            (0, true, Some(&[0, 1, 2, 3][..]))
        );
        let e = err("name='t'\n[[test]]\nname='a'\nkind='disk'\ncpus='3-1'\n");
        assert_eq!((e.line, e.key.as_deref()), (Some(5), Some("cpus")), "{e}");
        let s = parse(
            "name='t'\n[[test]]\nname='a'\nkind='disk'\nspread=[false,true]\n",
            "t",
        )
        .unwrap();
        assert_eq!(s.jobs[1].name, "a/spread=true");
    }
}
