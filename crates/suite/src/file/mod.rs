//! Suite files (TOML, docs/suites.md): read through serde structs that
//! reject unknown keys and keep each value's place in the file, checked
//! with file, line and key, and expanded (swept parameters) into jobs.
//! `access.rs` reads the `[[spec]]` tables, `jobs.rs` the `[[test]]`s and
//! their jobs; this file holds the types and the positions errors name.

use crate::hosts::{HostEntry, Placement};
use crate::select::Rule;
use iotoll_disk::specs::{self, AccessLine, AccessSpec};
use iotoll_disk::{DiskRequest, EngineChoice};
use iotoll_model::ci::{DISK_UNIT_MBIT_S, DISK_UNIT_MB_S, UNIT_PARAM};
use iotoll_model::text::printable;
use iotoll_model::{parse_duration, parse_size, units, Kind};
use iotoll_net::{ClientSpec, TestKind};
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
                "align" => every_line(s, as_size(v)?, |l, a| l.align = Some(a)),
                "burst_delay" => every_line(s, as_duration(v)?, |l, d| l.burst_delay = d),
                "burst_len" => every_line(s, as_u32(v)?, |l, n| l.burst_len = n),
                "engine" => s.engine = EngineChoice::parse(as_str(v)?)?,
                "buffered" => s.buffered = as_bool(v)?,
                _ => return Err("not a disk parameter".into()),
            },
            JobSpec::Net(s) => match key {
                "dir" => s.dir = as_str(v)?.parse()?,
                "conns" => s.conns = as_u32(v)?,
                "msg" => s.msg = as_size(v)?,
                "sockbuf" => s.sockbuf = Some(as_size(v)?),
                "nodelay" => s.nodelay = as_bool(v)?,
                "threads" => s.threads = Some(as_u32(v)? as usize).filter(|t| *t > 0),
                "req" => s.req = as_size(v)?,
                "resp" => s.resp = as_size(v)?,
                // A UDP test's datagram size.
                "size" if s.kind == TestKind::Udp => s.msg = as_size(v)?,
                "size" => {
                    s.req = as_size(v)?;
                    s.resp = s.req;
                }
                // Bits per second: 500000000 or "500m" (decimal, as --rate).
                "rate" => {
                    let r = match v {
                        Value::Integer(i) => i.to_string(),
                        _ => as_str(v)?.to_string(),
                    };
                    s.rate = Some(iotoll_model::parse_rate(&r).map_err(|e| e.to_string())?);
                }
                "burst" => s.burst = as_u32(v)?,
                "linger0" => s.linger0 = as_bool(v)?,
                // As --tls: true for the default cipher, or a cipher's name.
                "tls" => {
                    use iotoll_net::tls::{Cipher, DEFAULT_CIPHER};
                    s.tls = match v {
                        Value::Boolean(on) => on.then_some(DEFAULT_CIPHER),
                        _ => Some(Cipher::parse(as_str(v)?).ok_or_else(|| {
                            format!("expected true, false or one of {}", Cipher::names())
                        })?),
                    };
                }
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
    /// `confidence = "95,5"`: repetitions stop once the interval is that
    /// narrow (at least 3, at most `reps`).
    pub confidence: Option<iotoll_model::ci::Confidence>,
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

    /// `suite run --confidence` sets every test's (None: the file's stay),
    /// then each test under one is checked against the repetitions it may
    /// have (`--reps` over the file's): at least 3, the most it may run.
    pub fn apply_confidence(
        &mut self,
        c: Option<iotoll_model::ci::Confidence>,
        reps: Option<u32>,
    ) -> Result<(), String> {
        for j in &mut self.jobs {
            if let Some(c) = c {
                j.confidence = Some(c);
                if let Some(p) = j.params.as_object_mut() {
                    p.insert("confidence".into(), c.label().into());
                }
            }
            let most = reps.unwrap_or(j.reps);
            if j.confidence.is_some() && most < 3 {
                let whose = if reps.is_some() { "--reps" } else { "its reps" };
                return Err(format!(
                    "test '{}': confidence needs at least 3 repetitions (the most it may run), {whose} is {most}: give e.g. --reps 10",
                    j.name
                ));
            }
        }
        Ok(())
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
pub(crate) type Params = Vec<(&'static str, Sweep)>;
pub(crate) type Span = std::ops::Range<usize>;
pub(crate) type Checked<T> = Result<T, SuiteError>;

/// A workload parameter as written: one value, or a list of values to sweep.
#[derive(serde::Deserialize)]
pub(crate) struct Sweep(pub(crate) Raw);

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
#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub(crate) struct SuiteKeys {
    pub(crate) name: Option<Raw>,
    pub(crate) description: Option<Raw>,
    pub(crate) reps: Known,
    pub(crate) select: Known,
    pub(crate) repeatability_pct: Known,
    pub(crate) rerun: Known,
    pub(crate) confidence: Known,
    pub(crate) interference_pct: Known,
    pub(crate) cpu_threshold_pct: Option<Raw>,
    pub(crate) sut: Option<Raw>,
    pub(crate) unit: Option<Raw>,
    pub(crate) ramp: Known,
    pub(crate) time: Known,
    pub(crate) test: Known,
    pub(crate) spec: Known,
    pub(crate) hosts: Known,
}

/// The keys of one line of an access spec, written once for the two
/// tables that take them: a `[[spec]]` (its single line on the table
/// itself) and each line of its `lines`.
macro_rules! spec_tables {
    ($($key:ident),+) => {
        /// A `[[spec]]` table: an access specification for the file's disk
        /// tests. Its transfer is `lines`, or for a single line `bs`,
        /// `read`, `random` (and `burst_delay`, `burst_len`, `align`) on
        /// the table itself.
        #[derive(serde::Deserialize, Default)]
        #[serde(deny_unknown_fields)]
        pub(crate) struct SpecTable {
            pub(crate) name: Option<Raw>,
            pub(crate) qd: Option<Raw>,
            pub(crate) lines: Option<Raw>,
            $(pub(crate) $key: Option<Raw>,)+
        }

        /// One line of a `[[spec]]`.
        #[derive(serde::Deserialize, Default)]
        #[serde(deny_unknown_fields)]
        pub(crate) struct LineKeys {
            $(pub(crate) $key: Option<Raw>,)+
        }

        impl SpecTable {
            /// The single line given on the table itself.
            fn one(&mut self) -> LineKeys {
                LineKeys { $($key: self.$key.take(),)+ }
            }
        }

        impl LineKeys {
            /// The first key given, and its value.
            fn any(&self) -> Option<(&'static str, &Raw)> {
                [$((stringify!($key), &self.$key)),+]
                    .into_iter()
                    .find_map(|(k, v)| Some((k, v.as_ref()?)))
            }
        }
    };
}
spec_tables!(share, bs, read, random, burst_delay, burst_len, align);

/// The keys every test takes (the kind says which others it may have),
/// and the suite's defaults for them.
#[derive(serde::Deserialize, Default)]
pub(crate) struct Common {
    pub(crate) name: Option<Raw>,
    pub(crate) kind: Option<Raw>,
    pub(crate) group: Option<Raw>,
    pub(crate) reps: Option<Raw>,
    pub(crate) select: Option<Raw>,
    pub(crate) repeatability_pct: Option<Raw>,
    pub(crate) rerun: Option<Raw>,
    pub(crate) confidence: Option<Raw>,
    pub(crate) interference_pct: Option<Raw>,
    pub(crate) ramp: Option<Raw>,
    pub(crate) time: Option<Raw>,
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
            ramp: Known, time: Known, confidence: Known,
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
kind_table!(StreamTest: dir, conns, msg, sockbuf, nodelay, threads, tls);
kind_table!(RrTest: conns, req, resp, size, burst, sockbuf, nodelay, threads, tls);
kind_table!(UdpTest: dir, conns, size, rate, sockbuf);
kind_table!(CrrTest: conns, req, resp, size, linger0);
kind_table!(CcTest: conns, linger0);

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

/// `set` with `v` on every line of a disk test's spec.
fn every_line<T: Copy>(s: &mut DiskRequest, v: T, set: fn(&mut AccessLine, T)) {
    s.lines.iter_mut().for_each(|l| set(l, v));
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
pub(crate) struct Test {
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
    let head = cx.head(&suite)?;
    let defaults: Common = read(&root).map_err(|e| cx.de_err(e, str::to_string))?;
    let hosts = crate::hosts::hosts_table(&cx, &root)?;
    let file_specs = cx.specs(&root)?;
    let cx = cx.with_specs(file_specs);
    let jobs = cx.jobs(cx.tests(&root)?, |t, seen| cx.test(t, &defaults, seen))?;
    Ok(cx.suite(head, suite.description, hosts, jobs))
}

/// What a suite says of itself, checked.
pub(crate) struct Head {
    name: String,
    cpu_threshold_pct: Option<f64>,
    sut: Option<Vec<iotoll_probe::procs::SutProcess>>,
    unit: Option<String>,
}

/// A `[[test]]` as given, before its checks: its keys, and how its kind's
/// parameters and its placement are read once the kind is known.
pub(crate) struct Given<'g> {
    pub(crate) header: Span,
    pub(crate) common: Common,
    pub(crate) params: &'g dyn Fn(Kind) -> Checked<Params>,
    pub(crate) placement: &'g dyn Fn(Kind, &Span) -> Checked<Placement>,
}

/// The place of a value that is not in the text (one an import made
/// up): errors about it name no line.
pub(crate) const NOWHERE: Span = usize::MAX..usize::MAX;

/// The lines of a `[[spec]]`'s `lines = [...]`, each with its place, read
/// as their turn comes.
pub(crate) type LineItems<'x> = Box<dyn Iterator<Item = Checked<(Span, LineKeys)>> + 'x>;

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

    /// The suite's own keys checked: its name, CPU threshold, SUT and unit.
    pub(crate) fn head(&self, suite: &SuiteKeys) -> Checked<Head> {
        let name = self.check(suite.name.as_ref(), "name", |v| {
            let name = as_str(v)?;
            if name.contains(char::is_control) {
                return Err("a suite name must not contain control characters".into());
            }
            Ok(name.to_string())
        })?;
        let name = name.ok_or_else(|| self.err(None, None, "the suite has no name = \"...\""))?;
        let cpu_threshold_pct =
            self.check(suite.cpu_threshold_pct.as_ref(), "cpu_threshold_pct", |v| {
                as_number(v).ok_or_else(|| "expected a number".into())
            })?;
        let sut = self.check(suite.sut.as_ref(), "sut", |v| {
            let bad =
                || "expected a list of process names or pids, e.g. sut = [\"tgtd\"]".to_string();
            let items = v.as_array().ok_or_else(bad)?;
            let one = |v: &Value| {
                let text = match v.as_integer() {
                    Some(i) => i.to_string(),
                    None => as_str(v)?.to_string(),
                };
                text.parse::<iotoll_probe::procs::SutProcess>()
            };
            items.iter().map(one).collect::<Result<Vec<_>, String>>()
        })?;
        let unit = self.check(suite.unit.as_ref(), "unit", |v| match as_str(v)? {
            u @ (DISK_UNIT_MB_S | DISK_UNIT_MBIT_S) => Ok(u.to_string()),
            u => Err(format!(
                "unknown unit '{u}' for disk throughput: use {DISK_UNIT_MB_S} or {DISK_UNIT_MBIT_S}"
            )),
        })?;
        Ok(Head {
            name,
            cpu_threshold_pct,
            sut,
            unit,
        })
    }

    /// Every test checked (`check`) and expanded into jobs. Every test is
    /// checked even after one is wrong: all their errors are told at once,
    /// not one per attempt.
    pub(crate) fn jobs<T>(
        &self,
        tests: impl IntoIterator<Item = T>,
        check: impl Fn(T, &mut HashSet<String>) -> Checked<Test>,
    ) -> Checked<Vec<Job>> {
        let mut jobs = Vec::new();
        let (mut base_names, mut names) = (HashSet::new(), HashSet::new());
        let mut errors: Vec<SuiteError> = Vec::new();
        for t in tests {
            let checked = check(t, &mut base_names)
                .and_then(|test| self.expand(&test, &mut jobs, &mut names));
            if let Err(e) = checked {
                errors.push(e);
            }
        }
        if !errors.is_empty() {
            let mut first = errors.remove(0);
            first.also = errors;
            return Err(first);
        }
        Ok(jobs)
    }

    /// The suite, its jobs told the unit it publishes disk throughput in.
    pub(crate) fn suite(
        &self,
        head: Head,
        description: Option<Raw>,
        hosts: Vec<HostEntry>,
        mut jobs: Vec<Job>,
    ) -> Suite {
        // Stored with each disk test, so that results and reports of the
        // run publish its throughput as the suite asked.
        if let Some(u) = head.unit.filter(|u| u == DISK_UNIT_MBIT_S) {
            for j in jobs.iter_mut().filter(|j| j.kind == Kind::Disk) {
                if let serde_json::Value::Object(p) = &mut j.params {
                    p.insert(UNIT_PARAM.into(), u.clone().into());
                }
            }
        }
        Suite {
            name: head.name,
            description: description.and_then(|v| v.into_inner().as_str().map(str::to_string)),
            text: self.text.to_string(),
            cpu_threshold_pct: head.cpu_threshold_pct,
            sut: head.sut.unwrap_or_default(),
            hosts,
            jobs,
        }
    }

    /// The context with the suite's `[[spec]]`s, which tests look up.
    pub(crate) fn with_specs(self, file_specs: Vec<AccessSpec>) -> Ctx<'a> {
        Ctx { file_specs, ..self }
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
            line: at.filter(|s| *s != NOWHERE).map(|s| self.line_of(s.start)),
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
}

mod access;
mod jobs;

#[cfg(test)]
pub(crate) mod tests;
