//! Iometer configuration files (`.icf`, Iometer 1.1.0): read into a model
//! with each item's line, and written back in the layout Iometer saves.
//!
//! The format, as Iometer's own loader and saver read and write it: a
//! `Version 1.1.0` line first and last; sections opened by a comment
//! line such as `'TEST SETUP ====...` and closed by `'END test setup`.
//! Inside a section, a comment line (beginning with `'`) names a key; more
//! comment lines may follow it (column captions such as
//! `'\thours      minutes    seconds`), then one value line, indented with
//! a tab. An access specification's lines are comma-separated rows under
//! `'size,% of size,% reads,% random,delay,burst,align,reply`. Keys and
//! markers compare without regard to case; blank lines between items are
//! allowed.
//!
//! Unknown sections and keys are errors that list every one of them with
//! its line: iotoll would not know what such a file asks for.

use std::fmt;
use std::time::Duration;

/// What an .icf says, with the line each item is on (1-based).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Icf {
    /// As on the first line, e.g. `1.1.0`.
    pub version: String,
    pub setup: Option<Setup>,
    /// The RESULTS DISPLAY section (Iometer's bar charts), kept as written.
    pub display: Vec<(String, String)>,
    pub specs: Vec<Spec>,
    /// None: the file has no MANAGER LIST.
    pub managers: Option<Vec<Manager>>,
}

/// An access specification.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    pub name: String,
    /// NONE, ALL, DISK or NET: which new workers get it in Iometer's GUI.
    pub assignment: String,
    pub lines: Vec<Line>,
    pub at: usize,
}

/// One line of an access specification, in Iometer's units.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// Transfer size, bytes.
    pub size: u64,
    /// "% of size": this line's share of the I/Os.
    pub share: u32,
    pub reads: u32,
    pub random: u32,
    /// Transfer delay, ms.
    pub delay_ms: u64,
    /// Burst length, I/Os.
    pub burst: u32,
    /// Alignment, bytes; 0: the sector size.
    pub align: u64,
    /// Reply size, bytes (network workers); 0: none.
    pub reply: u64,
    pub at: usize,
}

/// Workers Iometer spawns for a new manager.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spawn {
    Cpus,
    N(u32),
}

/// Worker or disk (target) cycling: start, step, linear or exponential.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cycle {
    pub start: u32,
    pub step: u32,
    pub exponential: bool,
}

/// Queue depth cycling: start, end, step, linear or exponential.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueCycle {
    pub start: u32,
    pub end: u32,
    pub step: u32,
    pub exponential: bool,
}

/// Iometer's "Cycling Options".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TestType {
    Normal,
    CycleTargets,
    CycleWorkers,
    IncrementTargetsParallel,
    IncrementTargetsSerial,
    CycleWorkersAndTargets,
    CycleOutstandingIos,
    CycleOutstandingIosAndTargets,
}

const TEST_TYPES: [(TestType, &str); 8] = [
    (TestType::Normal, "NORMAL"),
    (TestType::CycleTargets, "CYCLE_TARGETS"),
    (TestType::CycleWorkers, "CYCLE_WORKERS"),
    (
        TestType::IncrementTargetsParallel,
        "INCREMENT_TARGETS_PARALLEL",
    ),
    (TestType::IncrementTargetsSerial, "INCREMENT_TARGETS_SERIAL"),
    (
        TestType::CycleWorkersAndTargets,
        "CYCLE_WORKERS_AND_TARGETS",
    ),
    (TestType::CycleOutstandingIos, "CYCLE_OUTSTANDING_IOS"),
    (
        TestType::CycleOutstandingIosAndTargets,
        "CYCLE_OUTSTANDING_IOS_AND_TARGETS",
    ),
];

impl TestType {
    pub fn as_str(self) -> &'static str {
        TEST_TYPES.iter().find(|(t, _)| *t == self).unwrap().1
    }
    fn parse(s: &str) -> Option<Self> {
        // Files before 1999 wrote the index of the GUI's list.
        let by_index = s.parse::<usize>().ok().and_then(|i| TEST_TYPES.get(i));
        (TEST_TYPES.iter())
            .find(|(_, n)| n.eq_ignore_ascii_case(s))
            .or(by_index)
            .map(|(t, _)| *t)
    }
}

/// The TEST SETUP section.
#[derive(Debug, Clone, PartialEq)]
pub struct Setup {
    pub description: String,
    /// Hours, minutes, seconds; all 0: until stopped.
    pub run_time: (u32, u32, u32),
    pub ramp_s: u32,
    pub disk_workers: Spawn,
    pub net_workers: Spawn,
    /// ALL, NO_TARGETS, NO_WORKERS, NO_MANAGERS or NONE.
    pub record: String,
    pub worker_cycling: Cycle,
    pub disk_cycling: Cycle,
    pub queue_cycling: QueueCycle,
    pub test_type: TestType,
    pub at: usize,
    pub run_time_at: usize,
    pub test_type_at: usize,
}

impl Default for Setup {
    fn default() -> Self {
        let one = Cycle {
            start: 1,
            step: 1,
            exponential: false,
        };
        Setup {
            description: String::new(),
            run_time: (0, 0, 0),
            ramp_s: 0,
            disk_workers: Spawn::Cpus,
            net_workers: Spawn::Cpus,
            record: "ALL".into(),
            worker_cycling: one,
            disk_cycling: one,
            queue_cycling: QueueCycle {
                start: 1,
                end: 32,
                step: 2,
                exponential: true,
            },
            test_type: TestType::Normal,
            at: 0,
            run_time_at: 0,
            test_type_at: 0,
        }
    }
}

impl Setup {
    pub fn run_secs(&self) -> u64 {
        let (h, m, s) = self.run_time;
        h as u64 * 3600 + m as u64 * 60 + s as u64
    }
}

/// A manager (a host running Dynamo) and its workers.
#[derive(Debug, Clone, PartialEq)]
pub struct Manager {
    pub id: u32,
    pub name: String,
    pub address: String,
    pub workers: Vec<Worker>,
    pub at: usize,
}

/// A worker's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerKind {
    Disk,
    NetTcp,
    NetVi,
}

impl WorkerKind {
    fn as_str(self) -> &'static str {
        match self {
            WorkerKind::Disk => "DISK",
            WorkerKind::NetTcp => "NETWORK,TCP",
            WorkerKind::NetVi => "NETWORK,VI",
        }
    }
    fn parse(s: &str) -> Option<Self> {
        let tokens: Vec<String> = s
            .split(',')
            .map(|t| t.trim().to_ascii_uppercase())
            .collect();
        match tokens.iter().map(String::as_str).collect::<Vec<_>>()[..] {
            ["DISK"] => Some(WorkerKind::Disk),
            ["NETWORK", "TCP"] => Some(WorkerKind::NetTcp),
            ["NETWORK", "VI"] => Some(WorkerKind::NetVi),
            _ => None,
        }
    }
}

/// A worker: its default target settings, assigned access specs (in the
/// order Iometer runs them) and targets.
#[derive(Debug, Clone, PartialEq)]
pub struct Worker {
    pub name: String,
    pub kind: WorkerKind,
    /// "# of Outstanding I/Os", per target.
    pub qd: u32,
    pub test_connection_rate: bool,
    pub trans_per_conn: u32,
    /// The fixed random seed, when one is used.
    pub fixed_seed: Option<u64>,
    /// "Maximum Disk Size", sectors; 0: the whole disk.
    pub disk_size: u64,
    pub start_sector: u64,
    pub data_pattern: Option<u32>,
    pub local_interface: Option<String>,
    pub vi_outstanding: Option<u32>,
    /// None: the file does not say (Iometer keeps the worker's own).
    pub specs: Option<Vec<String>>,
    pub targets: Option<Vec<Target>>,
    pub at: usize,
}

impl Worker {
    pub fn new(name: &str, kind: WorkerKind) -> Self {
        Worker {
            name: name.into(),
            kind,
            qd: 1,
            test_connection_rate: false,
            trans_per_conn: 1,
            fixed_seed: None,
            disk_size: 0,
            start_sector: 0,
            data_pattern: Some(0),
            local_interface: None,
            vi_outstanding: None,
            specs: None,
            targets: None,
            at: 0,
        }
    }
}

/// A worker's target: a disk such as `C: "OS"` or `PHYSICALDRIVE:1`, or a
/// network interface.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    pub name: String,
    /// DISK, NETWORK,TCP or NETWORK,VI.
    pub kind: WorkerKind,
    /// A network target's manager: id and name.
    pub manager: Option<(u32, String)>,
    pub at: usize,
}

impl Target {
    /// What identifies the disk, as Iometer matches it: a drive letter
    /// (`C:` of `C: "OS"` or `C:OS`), else the whole name.
    pub fn disk_key(&self) -> String {
        let b = self.name.as_bytes();
        if b.len() >= 2 && b[1] == b':' && b[0].is_ascii_alphabetic() {
            self.name[..2].to_ascii_uppercase()
        } else {
            self.name.clone()
        }
    }
}

/// Problems with an .icf, each with its line when it has one.
#[derive(Debug, Clone, PartialEq)]
pub struct IcfError {
    pub file: String,
    pub problems: Vec<(Option<usize>, String)>,
}

impl IcfError {
    pub fn one(file: &str, line: Option<usize>, msg: impl Into<String>) -> Self {
        IcfError {
            file: file.into(),
            problems: vec![(line, msg.into())],
        }
    }
}

impl fmt::Display for IcfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let file = iotoll_model::text::printable(&self.file);
        for (i, (line, msg)) in self.problems.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            match line {
                Some(l) => write!(f, "{file}:{l}: ")?,
                None => write!(f, "{file}: ")?,
            }
            write!(f, "{}", iotoll_model::text::printable(msg))?;
        }
        Ok(())
    }
}

impl std::error::Error for IcfError {}

/// Whether `text` looks like an .icf: its first line that is not blank
/// says `Version`.
pub fn looks_like_icf(text: &str) -> bool {
    let first = text.lines().map(str::trim).find(|l| !l.is_empty());
    first.is_some_and(|l| starts_with_ci(l, "Version"))
}

fn starts_with_ci(s: &str, prefix: &str) -> bool {
    s.len() >= prefix.len()
        && s.is_char_boundary(prefix.len())
        && s[..prefix.len()].eq_ignore_ascii_case(prefix)
}

fn is_ci(s: &str, what: &str) -> bool {
    s.eq_ignore_ascii_case(what)
}

const SECTIONS: [&str; 4] = [
    "'TEST SETUP",
    "'RESULTS DISPLAY",
    "'ACCESS SPECIFICATIONS",
    "'MANAGER LIST",
];

/// A stop: a problem after which the rest of the section cannot be read.
type Stop = (usize, String);

struct Reader<'a> {
    lines: Vec<&'a str>,
    /// Index of the next line.
    i: usize,
    problems: Vec<(Option<usize>, String)>,
}

impl<'a> Reader<'a> {
    fn line_no(&self) -> usize {
        self.i + 1
    }

    fn skip_blank(&mut self) {
        while self.i < self.lines.len() && self.lines[self.i].is_empty() {
            self.i += 1;
        }
    }

    fn peek(&mut self) -> Option<&'a str> {
        self.skip_blank();
        self.lines.get(self.i).copied()
    }

    fn next_line(&mut self) -> Option<(usize, &'a str)> {
        let l = self.lines.get(self.i).copied()?;
        self.i += 1;
        Some((self.i, l))
    }

    /// A key (a comment line) and its value: the first line after the
    /// key's comment lines. `'End...` and `'Version` keys have no value.
    fn pair(&mut self, within: &str) -> Result<(usize, &'a str, usize, &'a str), Stop> {
        self.skip_blank();
        let at = self.line_no();
        let Some((_, key)) = self.next_line() else {
            return Err((at, format!("the file ends inside {within}")));
        };
        if !key.starts_with('\'') {
            return Err((
                at,
                format!("expected a comment line (') in {within}, found '{key}'"),
            ));
        }
        if starts_with_ci(key, "'End") || starts_with_ci(key, "'Version") {
            return Ok((at, key, at, ""));
        }
        while let Some(l) = self.lines.get(self.i) {
            if !l.starts_with('\'') {
                break;
            }
            if starts_with_ci(l, "'End") || starts_with_ci(l, "'Version") {
                // A key without its value (an empty item).
                return Ok((at, key, self.line_no(), ""));
            }
            self.i += 1;
        }
        match self.next_line() {
            Some((n, v)) => Ok((at, key, n, v)),
            None => Err((at, format!("'{}' has no value line", &key[1..]))),
        }
    }

    fn unknown(&mut self, at: usize, what: &str, key: &str) {
        self.problems
            .push((Some(at), format!("unknown key '{}' in {what}", &key[1..])));
    }
}

fn num<T: std::str::FromStr>(s: &str, at: usize, what: &str) -> Result<T, Stop> {
    s.trim().parse().map_err(|_| {
        (
            at,
            format!("{what}: expected a whole number, got '{}'", s.trim()),
        )
    })
}

/// Whole numbers and words of a value line, split at commas and blanks.
fn fields(v: &str) -> Vec<&str> {
    v.split(|c: char| c == ',' || c.is_whitespace())
        .filter(|f| !f.is_empty())
        .collect()
}

fn enabled(s: &str, at: usize, what: &str) -> Result<bool, Stop> {
    match s.to_ascii_uppercase().as_str() {
        "ENABLED" => Ok(true),
        "DISABLED" => Ok(false),
        _ => Err((
            at,
            format!("{what}: expected ENABLED or DISABLED, got '{s}'"),
        )),
    }
}

/// Reads an .icf. `file` names it in errors.
pub fn parse(text: &str, file: &str) -> Result<Icf, IcfError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut r = Reader {
        lines: text.lines().map(str::trim).collect(),
        i: 0,
        problems: Vec::new(),
    };
    let mut icf = Icf::default();
    let fail = |r: Reader, stop: Stop| {
        let mut problems = r.problems;
        problems.push((Some(stop.0), stop.1));
        problems.sort_by_key(|(l, _)| *l);
        IcfError {
            file: file.into(),
            problems,
        }
    };
    r.skip_blank();
    match r.next_line() {
        Some((_, l)) if starts_with_ci(l, "Version") => {
            icf.version = l["Version".len()..].trim().to_string();
        }
        _ => {
            let at = r.i.max(1);
            return Err(IcfError::one(
                file,
                Some(at),
                "not an Iometer configuration file: the first line should be 'Version 1.1.0' (or another version)",
            ));
        }
    }
    let mut seen: Vec<&str> = Vec::new();
    while let Some(l) = r.peek() {
        let at = r.line_no();
        if starts_with_ci(l, "Version") {
            // The closing version line.
            r.i += 1;
            continue;
        }
        let Some(section) = SECTIONS.iter().find(|s| starts_with_ci(l, s)) else {
            if let Some(name) = l.strip_prefix('\'') {
                let name = name.trim_end_matches(['=', ' ']);
                r.problems.push((
                    Some(at),
                    format!(
                        "unknown section '{name}'; known: TEST SETUP, RESULTS DISPLAY, ACCESS SPECIFICATIONS, MANAGER LIST"
                    ),
                ));
            } else {
                r.problems.push((
                    Some(at),
                    format!("unexpected line outside any section: '{l}'"),
                ));
            }
            // Skip to the next section or the closing version line.
            r.i += 1;
            while let Some(l) = r.peek() {
                if starts_with_ci(l, "Version") || SECTIONS.iter().any(|s| starts_with_ci(l, s)) {
                    break;
                }
                r.i += 1;
            }
            continue;
        };
        if seen.contains(section) {
            let msg = format!("a second {} section", &section[1..]);
            return Err(fail(r, (at, msg)));
        }
        seen.push(section);
        r.i += 1;
        let read = match *section {
            "'TEST SETUP" => test_setup(&mut r, at).map(|s| icf.setup = Some(s)),
            "'RESULTS DISPLAY" => display(&mut r).map(|d| icf.display = d),
            "'ACCESS SPECIFICATIONS" => access_specs(&mut r).map(|s| icf.specs = s),
            _ => managers(&mut r).map(|m| icf.managers = Some(m)),
        };
        if let Err(stop) = read {
            return Err(fail(r, stop));
        }
    }
    if !r.problems.is_empty() {
        let mut problems = r.problems;
        problems.sort_by_key(|(l, _)| *l);
        return Err(IcfError {
            file: file.into(),
            problems,
        });
    }
    Ok(icf)
}

fn cycle(v: &str, at: usize, what: &str, queue: bool) -> Result<(Vec<u32>, bool), Stop> {
    let f = fields(v);
    let n = if queue { 3 } else { 2 };
    let usage = || {
        let cols = if queue {
            "start, end, step"
        } else {
            "start, step"
        };
        (
            at,
            format!("{what}: expected {cols} and LINEAR or EXPONENTIAL, got '{v}'"),
        )
    };
    if f.len() != n + 1 {
        return Err(usage());
    }
    let nums: Vec<u32> = (f[..n].iter())
        .map(|x| x.parse().map_err(|_| usage()))
        .collect::<Result<_, _>>()?;
    let exponential = match f[n].to_ascii_uppercase().as_str() {
        "LINEAR" | "0" => false,
        "EXPONENTIAL" | "1" => true,
        _ => return Err(usage()),
    };
    Ok((nums, exponential))
}

fn spawn(v: &str, at: usize, what: &str) -> Result<Spawn, Stop> {
    if is_ci(v.trim(), "NUMBER_OF_CPUS") {
        Ok(Spawn::Cpus)
    } else {
        num(v, at, what).map(Spawn::N)
    }
}

fn test_setup(r: &mut Reader, section_at: usize) -> Result<Setup, Stop> {
    let mut s = Setup {
        at: section_at,
        ..Setup::default()
    };
    loop {
        let (at, key, vat, v) = r.pair("TEST SETUP")?;
        let k = &key[1..];
        let lower = k.to_ascii_lowercase();
        match lower.as_str() {
            "end test setup" => return Ok(s),
            "test description" => s.description = v.to_string(),
            "run time" => {
                let f = fields(v);
                let bad = || {
                    (
                        vat,
                        format!("Run Time: expected hours, minutes and seconds, got '{v}'"),
                    )
                };
                if f.len() != 3 {
                    return Err(bad());
                }
                let n: Vec<u32> =
                    (f.iter().map(|x| x.parse().map_err(|_| bad()))).collect::<Result<_, _>>()?;
                s.run_time = (n[0], n[1], n[2]);
                s.run_time_at = at;
            }
            l if l.starts_with("ramp up time") => s.ramp_s = num(v, vat, "Ramp Up Time")?,
            "default disk workers to spawn" => s.disk_workers = spawn(v, vat, k)?,
            "default network workers to spawn" => s.net_workers = spawn(v, vat, k)?,
            // Files before 1999: 0 meant one per CPU.
            "default workers to spawn" => {
                s.disk_workers = match num(v, vat, k)? {
                    0 => Spawn::Cpus,
                    n => Spawn::N(n),
                }
            }
            "record results" => {
                let known = ["ALL", "NO_TARGETS", "NO_WORKERS", "NO_MANAGERS", "NONE"];
                let up = v.trim().to_ascii_uppercase();
                s.record = match up.parse::<usize>() {
                    Ok(i) if i < known.len() => known[i].to_string(),
                    _ if known.contains(&up.as_str()) => up,
                    _ => {
                        let msg = format!(
                            "Record Results: expected one of {}, got '{v}'",
                            known.join(", ")
                        );
                        return Err((vat, msg));
                    }
                };
            }
            "worker cycling" | "disk cycling" => {
                let (n, exponential) = cycle(v, vat, k, false)?;
                let c = Cycle {
                    start: n[0],
                    step: n[1],
                    exponential,
                };
                if lower == "worker cycling" {
                    s.worker_cycling = c
                } else {
                    s.disk_cycling = c
                }
            }
            "queue depth cycling" => {
                let (n, exponential) = cycle(v, vat, k, true)?;
                s.queue_cycling = QueueCycle {
                    start: n[0],
                    end: n[1],
                    step: n[2],
                    exponential,
                };
            }
            "test type" => {
                s.test_type = TestType::parse(v.trim()).ok_or_else(|| {
                    let known: Vec<&str> = TEST_TYPES.iter().map(|(_, n)| *n).collect();
                    (
                        vat,
                        format!("Test Type: expected one of {}, got '{v}'", known.join(", ")),
                    )
                })?;
                s.test_type_at = at;
            }
            _ if starts_with_ci(k, "End") || starts_with_ci(k, "Version") => {
                return Err((at, format!("expected 'END test setup, found {key}")));
            }
            _ => r.unknown(at, "TEST SETUP", key),
        }
    }
}

fn display(r: &mut Reader) -> Result<Vec<(String, String)>, Stop> {
    let mut out = Vec::new();
    loop {
        let (at, key, _, v) = r.pair("RESULTS DISPLAY")?;
        let k = key[1..].to_ascii_lowercase();
        if k == "end results display" {
            return Ok(out);
        }
        let known = k == "record last update results,update frequency,update type"
            || k == "update frequency,update type"
            || k.starts_with("bar chart ");
        if known {
            out.push((key.to_string(), v.to_string()));
        } else if k.starts_with("end") || k.starts_with("version") {
            return Err((at, format!("expected 'END results display, found {key}")));
        } else {
            r.unknown(at, "RESULTS DISPLAY", key);
        }
    }
}

fn access_specs(r: &mut Reader) -> Result<Vec<Spec>, Stop> {
    let mut specs: Vec<Spec> = Vec::new();
    loop {
        let (at, key, vat, v) = r.pair("ACCESS SPECIFICATIONS")?;
        let k = key[1..].to_ascii_lowercase();
        if k == "end access specifications" {
            return Ok(specs);
        }
        if k != "access specification name,default assignment" {
            if k.starts_with("end") || k.starts_with("version") {
                return Err((
                    at,
                    format!("expected 'END access specifications, found {key}"),
                ));
            }
            r.unknown(at, "ACCESS SPECIFICATIONS", key);
            continue;
        }
        let (name, assignment) = v.rsplit_once(',').unwrap_or((v, "NONE"));
        let name = name.trim().to_string();
        if name.is_empty() {
            return Err((vat, "an access specification without a name".into()));
        }
        let assignment = assignment.trim().to_ascii_uppercase();
        if !["NONE", "ALL", "DISK", "NET", "0", "1", "2", "3"].contains(&assignment.as_str()) {
            let msg = format!("access specification '{name}': default assignment '{assignment}' is not NONE, ALL, DISK or NET");
            return Err((vat, msg));
        }
        // The caption line of the columns.
        r.skip_blank();
        match r.next_line() {
            Some((_, l)) if l.starts_with('\'') => {}
            _ => {
                let msg = format!("access specification '{name}': expected the line 'size,% of size,% reads,% random,delay,burst,align,reply");
                return Err((r.i, msg));
            }
        }
        let mut lines = Vec::new();
        while let Some(l) = r.peek() {
            if l.starts_with('\'') {
                break;
            }
            let lat = r.line_no();
            r.i += 1;
            let f: Vec<&str> = l.split(',').map(str::trim).collect();
            if f.len() != 8 {
                let msg = format!("access specification '{name}': a line has 8 fields (size,% of size,% reads,% random,delay,burst,align,reply), this one {}: '{l}'", f.len());
                return Err((lat, msg));
            }
            let n = |i: usize, what: &str| {
                num::<u64>(f[i], lat, &format!("access specification '{name}': {what}"))
            };
            let pct = |i: usize, what: &str| -> Result<u32, Stop> {
                match n(i, what)? {
                    p if p <= 100 => Ok(p as u32),
                    p => Err((
                        lat,
                        format!("access specification '{name}': {what} {p} is outside 0-100"),
                    )),
                }
            };
            lines.push(Line {
                size: n(0, "size")?,
                share: pct(1, "% of size")?,
                reads: pct(2, "% reads")?,
                random: pct(3, "% random")?,
                delay_ms: n(4, "delay")?,
                burst: num(f[5], lat, &format!("access specification '{name}': burst"))?,
                align: n(6, "align")?,
                reply: n(7, "reply")?,
                at: lat,
            });
        }
        let total: u64 = lines.iter().map(|l| l.share as u64).sum();
        if lines.is_empty() {
            r.problems.push((
                Some(vat),
                format!("access specification '{name}' has no lines"),
            ));
        } else if total != 100 {
            let shares: Vec<String> = lines.iter().map(|l| l.share.to_string()).collect();
            r.problems.push((
                Some(vat),
                format!(
                    "access specification '{name}': the lines' shares (% of size) add up to {total} % ({}); they must add up to 100 %",
                    shares.join(" + ")
                ),
            ));
        }
        if specs.iter().any(|s| s.name == name) {
            r.problems.push((
                Some(vat),
                format!("a second access specification named '{name}'"),
            ));
        }
        specs.push(Spec {
            name,
            assignment,
            lines,
            at: vat,
        });
    }
}

fn managers(r: &mut Reader) -> Result<Vec<Manager>, Stop> {
    let mut out = Vec::new();
    loop {
        let (at, key, vat, v) = r.pair("MANAGER LIST")?;
        let k = key[1..].to_ascii_lowercase();
        if k == "end manager list" {
            return Ok(out);
        }
        if k != "manager id, manager name" {
            if k.starts_with("end") || k.starts_with("version") {
                return Err((at, format!("expected 'END manager list, found {key}")));
            }
            r.unknown(at, "MANAGER LIST", key);
            continue;
        }
        let (id, name) = v.split_once(',').unwrap_or((v, ""));
        let id = num(id, vat, "manager ID")?;
        let (aat, akey, _, address) = r.pair("a manager")?;
        if !is_ci(akey, "'Manager network address") {
            return Err((aat, format!("expected 'Manager network address after the manager's ID and name, found {akey}")));
        }
        let mut m = Manager {
            id,
            name: name.trim().to_string(),
            address: address.to_string(),
            workers: Vec::new(),
            at: vat,
        };
        loop {
            let (at, key, vat, v) = r.pair("a manager")?;
            let k = key[1..].to_ascii_lowercase();
            if k == "end manager" {
                break;
            }
            if k != "worker" {
                if k.starts_with("end") || k.starts_with("version") {
                    return Err((at, format!("expected 'End manager, found {key}")));
                }
                r.unknown(at, "a manager", key);
                continue;
            }
            m.workers.push(worker(r, v, vat)?);
        }
        out.push(m);
    }
}

fn worker(r: &mut Reader, name: &str, at: usize) -> Result<Worker, Stop> {
    let (tat, tkey, tvat, tv) = r.pair("a worker")?;
    if !is_ci(tkey, "'Worker type") {
        return Err((
            tat,
            format!("expected 'Worker type after the worker's name, found {tkey}"),
        ));
    }
    let kind = WorkerKind::parse(tv).ok_or_else(|| {
        (
            tvat,
            format!("worker '{name}': type '{tv}' is not DISK, NETWORK,TCP or NETWORK,VI"),
        )
    })?;
    let mut w = Worker::new(name, kind);
    w.data_pattern = None;
    w.at = at;
    let what = format!("worker '{name}'");
    loop {
        r.skip_blank();
        let Some((cat, c)) = r.next_line() else {
            return Err((r.i, format!("the file ends inside {what}")));
        };
        let lower = c.to_ascii_lowercase();
        match lower.as_str() {
            "'end worker" => return Ok(w),
            "'default target settings for worker" => defaults(r, &mut w, &what)?,
            "'assigned access specs" => {
                let mut specs = Vec::new();
                loop {
                    r.skip_blank();
                    match r.next_line() {
                        Some((_, l)) if is_ci(l, "'End assigned access specs") => break,
                        Some((lat, l)) if l.starts_with('\'') => {
                            return Err((lat, format!("{what}: expected an access specification's name or 'End assigned access specs, found {l}")));
                        }
                        Some((_, l)) => specs.push(l.to_string()),
                        None => {
                            return Err((cat, format!("{what}: no 'End assigned access specs")))
                        }
                    }
                }
                w.specs = Some(specs);
            }
            "'target assignments" => w.targets = Some(targets(r, &what)?),
            _ if c.starts_with('\'')
                && !lower.starts_with("'end")
                && !lower.starts_with("'version") =>
            {
                r.unknown(cat, &what, c);
                // Its value, if it has one.
                if r.lines.get(r.i).is_some_and(|l| !l.starts_with('\'')) {
                    r.i += 1;
                }
            }
            _ => return Err((cat, format!("{what}: expected 'End worker, found '{c}'"))),
        }
    }
}

fn defaults(r: &mut Reader, w: &mut Worker, what: &str) -> Result<(), Stop> {
    loop {
        let (at, key, vat, v) = r.pair(what)?;
        let k = key[1..].to_ascii_lowercase();
        let f: Vec<&str> = v.split(',').map(str::trim).collect();
        let field = |i: usize, name: &str| -> Result<&str, Stop> {
            f.get(i)
                .copied()
                .ok_or_else(|| (vat, format!("{what}: no {name} in '{v}'")))
        };
        match k.as_str() {
            "end default target settings for worker" => return Ok(()),
            "number of outstanding ios,test connection rate,transactions per connection"
            | "number of outstanding ios,test connection rate,transactions per connection,use fixed seed,fixed seed value" => {
                w.qd = num(field(0, "number of outstanding I/Os")?, vat, "number of outstanding I/Os")?;
                w.test_connection_rate = enabled(field(1, "test connection rate")?, vat, "test connection rate")?;
                w.trans_per_conn = num(field(2, "transactions per connection")?, vat, "transactions per connection")?;
                if k.ends_with("fixed seed value") {
                    let on = enabled(field(3, "use fixed seed")?, vat, "use fixed seed")?;
                    let seed = num(field(4, "fixed seed value")?, vat, "fixed seed value")?;
                    w.fixed_seed = on.then_some(seed);
                }
            }
            "disk maximum size,starting sector" | "disk maximum size,starting sector,data pattern" => {
                w.disk_size = num(field(0, "disk maximum size")?, vat, "disk maximum size")?;
                w.start_sector = num(field(1, "starting sector")?, vat, "starting sector")?;
                if k.ends_with("data pattern") {
                    w.data_pattern = Some(num(field(2, "data pattern")?, vat, "data pattern")?);
                }
            }
            "local network interface" => w.local_interface = Some(v.to_string()),
            "vi outstanding ios" => w.vi_outstanding = Some(num(v, vat, "VI outstanding IOs")?),
            _ if k.starts_with("end") || k.starts_with("version") => {
                return Err((at, format!("{what}: expected 'End default target settings for worker, found {key}")));
            }
            _ => r.unknown(at, &format!("the default target settings of {what}"), key),
        }
    }
}

fn targets(r: &mut Reader, what: &str) -> Result<Vec<Target>, Stop> {
    let mut out = Vec::new();
    loop {
        let (at, key, vat, name) = r.pair(what)?;
        if is_ci(key, "'End target assignments") {
            return Ok(out);
        }
        if !is_ci(key, "'Target") {
            return Err((
                at,
                format!("{what}: expected 'Target or 'End target assignments, found {key}"),
            ));
        }
        let (tat, tkey, tvat, tv) = r.pair(what)?;
        if !is_ci(tkey, "'Target type") {
            return Err((
                tat,
                format!("{what}: expected 'Target type after the target's name, found {tkey}"),
            ));
        }
        let kind = WorkerKind::parse(tv).ok_or_else(|| {
            (
                tvat,
                format!("target '{name}': type '{tv}' is not DISK, NETWORK,TCP or NETWORK,VI"),
            )
        })?;
        let mut t = Target {
            name: name.to_string(),
            kind,
            manager: None,
            at: vat,
        };
        loop {
            let (kat, k, mvat, v) = r.pair(what)?;
            if is_ci(k, "'End target") {
                break;
            }
            if is_ci(k, "'Target manager ID, manager name") {
                let (id, mname) = v.split_once(',').unwrap_or((v, ""));
                t.manager = Some((
                    num(id, mvat, "target manager ID")?,
                    mname.trim().to_string(),
                ));
            } else if starts_with_ci(k, "'End") || starts_with_ci(k, "'Version") {
                return Err((kat, format!("{what}: expected 'End target, found {k}")));
            } else {
                r.unknown(kat, &format!("target '{name}' of {what}"), k);
            }
        }
        out.push(t);
    }
}

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

/// An .icf as a suite file: its TOML, and what the mapping had to say.
#[derive(Debug, Clone, PartialEq)]
pub struct Import {
    /// A suite file (docs/suites.md) that `file::parse` checks as any other.
    pub toml: String,
    /// For each line of `toml` (0-based), the .icf line it comes from.
    pub origin: Vec<Option<usize>>,
    /// Iometer's disk targets in order of first appearance: the n-th is
    /// the n-th `--target`.
    pub targets: Vec<String>,
    /// What the file says that iotoll does not do, or does its own way.
    pub notes: Vec<String>,
}

impl Import {
    /// The .icf line a line of the generated TOML came from.
    pub fn icf_line(&self, toml_line: usize) -> Option<usize> {
        self.origin
            .get(toml_line.checked_sub(1)?)
            .copied()
            .flatten()
    }
}

/// TOML text with the .icf line of each of its lines.
#[derive(Default)]
struct Out {
    text: String,
    origin: Vec<Option<usize>>,
}

impl Out {
    fn line(&mut self, at: Option<usize>, l: impl AsRef<str>) {
        self.text.push_str(l.as_ref());
        self.text.push('\n');
        self.origin.push(at);
    }
}

/// A TOML string.
fn quote(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// A name iotoll takes for a test: no '/', ',' or control characters.
pub fn test_name(s: &str) -> String {
    let n: String = (s.trim().chars())
        .filter(|c| !c.is_control())
        .map(|c| if c == '/' || c == ',' { '-' } else { c })
        .collect();
    n.trim().to_string()
}

/// The values Iometer's cycling steps through, from `start` up to `end`:
/// `start + k * step`, or `start * step^k` when exponential.
pub fn cycle_values(start: u32, end: u32, step: u32, exponential: bool) -> Vec<u32> {
    let mut out = Vec::new();
    let (mut v, mut k) = (start as u64, 1u32);
    while v <= end as u64 && out.len() < 10_000 {
        out.push(v as u32);
        v = if !exponential || step == 1 {
            v + step as u64
        } else {
            match (step as u64).checked_pow(k) {
                Some(p) => start as u64 * p,
                None => break,
            }
        };
        k += 1;
        if step == 0 {
            break;
        }
    }
    out
}

/// One access-spec position of the workers' assigned lists: the spec and
/// the workers that run it (Iometer runs the n-th spec of every worker
/// at once; a worker whose n-th is `Idle`, or who has none, rests).
struct Step<'a> {
    spec: &'a str,
    workers: Vec<&'a Worker>,
}

const IDLE: &str = "Idle";

/// Maps an .icf onto a suite: access specs become `[[spec]]`s; the test
/// setup, ramp and time and the cycling sweeps; the workers and their
/// targets, `workers` and `spread` over the targets given with
/// `--target`. `stem` names the suite (the file's name without .icf).
/// What cannot be expressed is an error naming each thing and its line.
pub fn import(icf: &Icf, file: &str, stem: &str) -> Result<Import, IcfError> {
    let mut problems: Vec<(Option<usize>, String)> = Vec::new();
    let mut notes = Vec::new();
    let setup = icf.setup.clone().unwrap_or_default();
    let has_setup = icf.setup.is_some();
    let at = |n: usize| Some(n).filter(|n| *n > 0);
    // The disk workers that run: with targets and access specs.
    let mut active: Vec<(&Manager, &Worker)> = Vec::new();
    for m in icf.managers.iter().flatten() {
        for w in &m.workers {
            let runs = w.targets.as_ref().is_some_and(|t| !t.is_empty())
                && (w.specs.as_ref())
                    .is_some_and(|s| s.iter().any(|s| !s.eq_ignore_ascii_case(IDLE)));
            match (w.kind, runs) {
                (WorkerKind::Disk, true) => active.push((m, w)),
                (_, true) => problems.push((
                    at(w.at),
                    format!(
                        "worker '{}' on manager '{}' is a network worker with targets: iotoll measures networks with net-stream and net-rr tests, not Iometer's network workers; remove it from the file",
                        w.name, m.name
                    ),
                )),
                _ => {}
            }
        }
    }
    let mut hosts: Vec<&str> = active.iter().map(|(m, _)| m.name.as_str()).collect();
    hosts.dedup();
    if hosts.len() > 1 {
        problems.push((
            at(active[0].0.at),
            format!(
                "workers on {} managers ({}): iotoll runs every worker on this host; keep one manager",
                hosts.len(),
                hosts.join(", ")
            ),
        ));
    }
    // Targets in order of first appearance.
    let mut targets: Vec<(String, String)> = Vec::new();
    for (_, w) in &active {
        let mut mine: Vec<String> = Vec::new();
        for t in w.targets.iter().flatten() {
            let key = t.disk_key();
            if mine.contains(&key) {
                problems.push((
                    at(t.at),
                    format!("worker '{}' has target '{}' twice", w.name, t.name),
                ));
            }
            mine.push(key.clone());
            if !targets.iter().any(|(k, _)| *k == key) {
                targets.push((key, t.name.clone()));
            }
        }
    }
    let keys =
        |w: &Worker| -> Vec<String> { w.targets.iter().flatten().map(Target::disk_key).collect() };
    // The specs in the order they run, and who runs each.
    let longest = active
        .iter()
        .map(|(_, w)| w.specs.as_ref().map_or(0, Vec::len))
        .max()
        .unwrap_or(0);
    let mut steps: Vec<Step> = Vec::new();
    for i in 0..longest {
        let running: Vec<(&Worker, &str)> = (active.iter())
            .filter_map(|(_, w)| Some((*w, w.specs.as_ref()?.get(i)?.as_str())))
            .filter(|(_, s)| !s.eq_ignore_ascii_case(IDLE))
            .collect();
        let Some((first, spec)) = running.first().copied() else {
            continue;
        };
        if let Some((w, other)) = running.iter().find(|(_, s)| *s != spec) {
            problems.push((
                at(w.at),
                format!(
                    "access spec {} of the workers' lists: worker '{}' runs '{spec}', worker '{}' runs '{other}' at the same time; an iotoll test runs one access spec on all its workers",
                    i + 1,
                    first.name,
                    w.name
                ),
            ));
            continue;
        }
        steps.push(Step {
            spec,
            workers: running.into_iter().map(|(w, _)| w).collect(),
        });
    }
    for s in &steps {
        if !icf.specs.iter().any(|f| f.name == s.spec) {
            problems.push((
                at(s.workers[0].at),
                format!(
                    "worker '{}' is assigned access spec '{}', which the file's ACCESS SPECIFICATIONS do not define (iotoll does not know Iometer's own default specs)",
                    s.workers[0].name, s.spec
                ),
            ));
        }
    }
    // Layout: k workers on each target, or workers spread over them all.
    let all: Vec<String> = targets.iter().map(|(k, _)| k.clone()).collect();
    let layout = |s: &Step| -> Result<(u32, bool), String> {
        let mut per = vec![0u32; all.len()];
        let single = s.workers.iter().all(|w| keys(w).len() == 1);
        if single {
            for w in &s.workers {
                let k = &keys(w)[0];
                per[all.iter().position(|t| t == k).unwrap()] += 1;
            }
            if per.iter().all(|n| *n == per[0]) {
                return Ok((per[0], false));
            }
        }
        let mut sorted = all.clone();
        sorted.sort();
        let spread = s.workers.iter().all(|w| {
            let mut k = keys(w);
            k.sort();
            k == sorted
        });
        if spread {
            return Ok((s.workers.len() as u32, true));
        }
        let each: Vec<String> = (s.workers.iter())
            .map(|w| {
                let names: Vec<String> =
                    w.targets.iter().flatten().map(|t| t.name.clone()).collect();
                format!("'{}' on {}", w.name, names.join(" + "))
            })
            .collect();
        Err(format!(
            "access spec '{}': the workers' targets cannot be expressed ({}): iotoll runs the same number of workers on each target, each on one, or workers that each have all the targets (spread)",
            s.spec,
            each.join(", ")
        ))
    };
    let mut shape: Option<(u32, bool)> = None;
    for s in &steps {
        match layout(s) {
            Ok(l) if shape.is_none_or(|p| p == l) => shape = Some(l),
            Ok(l) => problems.push((
                at(s.workers[0].at),
                format!(
                    "access spec '{}' runs {} worker(s){} and an earlier one {} worker(s){}: an iotoll test keeps its workers for every spec it sweeps",
                    s.spec,
                    l.0,
                    if l.1 { " spread over all targets" } else { " per target" },
                    shape.unwrap().0,
                    if shape.unwrap().1 { " spread over all targets" } else { " per target" },
                ),
            )),
            Err(m) => problems.push((at(s.workers[0].at), m)),
        }
    }
    // One region for all: Iometer's maximum disk size and starting sector.
    let first = active.first().map(|(_, w)| *w);
    if let Some(w) = active.iter().map(|(_, w)| *w).find(|w| {
        Some((w.disk_size, w.start_sector)) != first.map(|f| (f.disk_size, f.start_sector))
    }) {
        problems.push((
            at(w.at),
            format!(
                "worker '{}' has maximum disk size {} and starting sector {}, worker '{}' {} and {}: iotoll tests one region on every target",
                w.name, w.disk_size, w.start_sector, first.unwrap().name, first.unwrap().disk_size, first.unwrap().start_sector
            ),
        ));
    }
    // QD: each spec's from the workers that run it, unless cycled.
    let mut t = setup.test_type;
    let trivial_targets = all.len() <= 1 || shape.is_some_and(|(_, spread)| !spread);
    match t {
        TestType::CycleTargets if trivial_targets => {
            notes.push("Test Type CYCLE_TARGETS: each worker has one target, so there is nothing to cycle".to_string());
            t = TestType::Normal;
        }
        TestType::CycleOutstandingIosAndTargets if trivial_targets => {
            notes.push("Test Type CYCLE_OUTSTANDING_IOS_AND_TARGETS: each worker has one target, so only the queue depth is cycled".to_string());
            t = TestType::CycleOutstandingIos;
        }
        TestType::Normal | TestType::CycleOutstandingIos => {}
        TestType::CycleWorkers if shape.is_none_or(|(k, spread)| spread || all.len() <= 1 || k == 1 && all.len() == 1) => {}
        other => problems.push((
            at(setup.test_type_at),
            format!(
                "Test Type {}: iotoll cannot express it (it runs every test on all the targets given, with one layout of workers); use NORMAL, CYCLE_OUTSTANDING_IOS, or CYCLE_WORKERS with workers spread over all targets",
                other.as_str()
            ),
        )),
    }
    let mut spec_qd: Vec<(&str, Option<u32>)> = Vec::new();
    for s in &steps {
        let qd = s.workers[0].qd;
        if let Some(w) = s.workers.iter().find(|w| w.qd != qd) {
            if t != TestType::CycleOutstandingIos {
                problems.push((
                    at(w.at),
                    format!(
                        "access spec '{}': worker '{}' has {} outstanding I/Os, worker '{}' {}: an iotoll test runs all its workers at one queue depth",
                        s.spec, s.workers[0].name, qd, w.name, w.qd
                    ),
                ));
            }
        }
        match spec_qd.iter_mut().find(|(n, _)| *n == s.spec) {
            Some((_, q)) if *q != Some(qd) => *q = None,
            Some(_) => {}
            None => spec_qd.push((s.spec, Some(qd))),
        }
    }
    if t != TestType::CycleOutstandingIos {
        if let Some((name, _)) = spec_qd.iter().find(|(_, q)| q.is_none()) {
            problems.push((
                at(setup.test_type_at),
                format!("access spec '{name}' runs at more than one queue depth in the workers' lists: an iotoll spec has one"),
            ));
        }
    }
    if !problems.is_empty() {
        problems.sort_by_key(|(l, _)| *l);
        problems.dedup();
        return Err(IcfError {
            file: file.into(),
            problems,
        });
    }
    // Notes: what is read but not done.
    if icf.managers.is_none() {
        notes.push("no MANAGER LIST: one test runs every access specification in the file, in order, with iotoll's default workers".into());
    }
    if !has_setup {
        notes.push("no TEST SETUP: iotoll's default ramp-up and window".into());
    } else if setup.run_secs() == 0 {
        notes.push(
            "Run Time 0 (Iometer: until stopped): iotoll uses its default window; give --time"
                .into(),
        );
    }
    if active
        .iter()
        .any(|(_, w)| w.disk_size > 0 || w.start_sector > 0)
    {
        notes.push("maximum disk size and starting sector are counted in 512-byte sectors".into());
    }
    if active
        .iter()
        .any(|(_, w)| w.data_pattern.is_some_and(|p| p != 0))
    {
        notes.push("the workers' data pattern is not used: iotoll writes its own".into());
    }
    if active.iter().any(|(_, w)| w.fixed_seed.is_some()) {
        notes.push("the fixed random seed is not used".into());
    }
    let used = |n: &str| steps.iter().any(|s| s.spec == n) || icf.managers.is_none();
    if icf
        .specs
        .iter()
        .filter(|s| used(&s.name))
        .flat_map(|s| &s.lines)
        .any(|l| l.reply > 0)
    {
        notes.push("reply sizes are not used (they apply to Iometer's network workers)".into());
    }
    // The suite.
    let mut o = Out::default();
    o.line(
        None,
        format!(
            "# Imported from {} (Iometer {})",
            file.replace('\n', " "),
            icf.version
        ),
    );
    o.line(None, format!("name = {}", quote(stem)));
    if !setup.description.is_empty() {
        o.line(
            at(setup.at),
            format!("description = {}", quote(&setup.description)),
        );
    }
    if has_setup {
        o.line(at(setup.at), format!("ramp = \"{}s\"", setup.ramp_s));
        if setup.run_secs() > 0 {
            o.line(
                at(setup.run_time_at),
                format!("time = \"{}s\"", setup.run_secs()),
            );
        }
    }
    for s in &icf.specs {
        o.line(None, "");
        o.line(at(s.at), "[[spec]]");
        o.line(at(s.at), format!("name = {}", quote(&s.name)));
        if let Some((_, Some(q))) = spec_qd.iter().find(|(n, _)| *n == s.name) {
            o.line(at(s.at), format!("qd = {q}"));
        }
        o.line(at(s.at), "lines = [");
        for l in &s.lines {
            let align = match l.align {
                0 => String::new(),
                a => format!(", align = {a}"),
            };
            o.line(
                at(l.at),
                format!(
                    "  {{ share = {}, bs = {}, read = {}, random = {}, burst_delay = \"{}ms\", burst_len = {}{align} }},",
                    l.share, l.size, l.reads, l.random, l.delay_ms, l.burst
                ),
            );
        }
        o.line(at(s.at), "]");
    }
    let name = Some(test_name(&setup.description))
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| test_name(stem));
    let name = if name.is_empty() {
        "icf".to_string()
    } else {
        name
    };
    let list = |v: Vec<String>| match v.len() {
        1 => v[0].clone(),
        _ => format!("[{}]", v.join(", ")),
    };
    o.line(None, "");
    o.line(at(setup.at), "[[test]]");
    o.line(at(setup.at), format!("name = {}", quote(&name)));
    o.line(None, "kind = \"disk\"");
    let specs: Vec<String> = match icf.managers {
        Some(_) => steps.iter().map(|s| quote(s.spec)).collect(),
        None => icf.specs.iter().map(|s| quote(&s.name)).collect(),
    };
    let spec_at = steps
        .first()
        .map_or(icf.specs.first().map(|s| s.at), |s| at(s.workers[0].at));
    if specs.is_empty() {
        return Err(IcfError::one(file, None, "no access specification runs: no disk worker has both targets and assigned access specs"));
    }
    o.line(spec_at, format!("spec = {}", list(specs)));
    let w_at = first.map(|w| w.at);
    if let Some((k, spread)) = shape {
        if t == TestType::CycleWorkers {
            let c = setup.worker_cycling;
            let mut v = cycle_values(c.start, k, c.step, c.exponential);
            if v.last() != Some(&k) {
                // Iometer's last step runs every worker.
                v.push(k);
            }
            let v: Vec<String> = v.iter().filter(|n| **n > 0).map(u32::to_string).collect();
            o.line(at(setup.test_type_at), format!("workers = {}", list(v)));
        } else {
            o.line(w_at, format!("workers = {k}"));
        }
        if spread {
            o.line(w_at, "spread = true");
        }
    }
    if t == TestType::CycleOutstandingIos {
        let q = setup.queue_cycling;
        let v: Vec<String> = cycle_values(q.start, q.end, q.step, q.exponential)
            .iter()
            .map(u32::to_string)
            .collect();
        if v.is_empty() {
            return Err(IcfError::one(
                file,
                at(setup.test_type_at),
                format!(
                    "Queue Depth Cycling from {} to {} runs nothing",
                    q.start, q.end
                ),
            ));
        }
        o.line(at(setup.test_type_at), format!("qd = {}", list(v)));
    }
    if let Some(w) = first {
        if w.disk_size > 0 {
            o.line(w_at, format!("size = {}", w.disk_size * 512));
        }
        if w.start_sector > 0 {
            o.line(w_at, format!("offset = {}", w.start_sector * 512));
        }
    }
    Ok(Import {
        toml: o.text,
        origin: o.origin,
        targets: targets.into_iter().map(|(_, n)| n).collect(),
        notes,
    })
}

/// Reads an .icf as a suite: `parse`, `import`, then the suite file's
/// own checks (`file::parse`), whose errors are told on the .icf's lines.
pub fn suite(text: &str, file: &str) -> Result<(crate::Suite, Import), IcfError> {
    let icf = parse(text, file)?;
    let stem = std::path::Path::new(file)
        .file_stem()
        .map_or("icf".into(), |s| s.to_string_lossy().to_string());
    let imp = import(&icf, file, &stem)?;
    let mut s = crate::file::parse(&imp.toml, file).map_err(|e| {
        let msg = match &e.key {
            Some(k) => format!("{k}: {}", e.msg),
            None => e.msg.clone(),
        };
        IcfError::one(file, e.line.and_then(|l| imp.icf_line(l)), msg)
    })?;
    s.text = text.to_string();
    Ok((s, imp))
}

/// What `export` needs besides the suite.
#[derive(Debug, Clone, Default)]
pub struct ExportOptions {
    /// The disk test to write (an .icf holds one test setup); None: the
    /// suite's only disk test.
    pub test: Option<String>,
    /// Target names to write, e.g. `PHYSICALDRIVE:1` (empty: that one).
    pub targets: Vec<String>,
    /// The manager's name: Iometer restores workers on the manager of
    /// that name (a Dynamo that logs in with it).
    pub manager: String,
    /// Workers that `workers = 0` (one per CPU) stands for.
    pub cpus: u32,
}

/// A suite's disk test as an .icf: its access specs, in the order its
/// tests run them, its durations, queue depths (one QD for all, a QD
/// cycle, or a group of workers per QD that rest, on Iometer's `Idle`
/// spec, while another group runs) and its workers and targets. Returns
/// the file and notes on what it leaves out.
pub fn export(suite: &crate::Suite, o: &ExportOptions) -> Result<(Icf, Vec<String>), String> {
    use crate::JobSpec;
    let mut notes = Vec::new();
    let base = |n: &str| n.split('/').next().unwrap_or(n).to_string();
    let disk: Vec<(&crate::Job, &iotoll_disk::DiskSpec)> = (suite.jobs.iter())
        .filter_map(|j| match &j.spec {
            JobSpec::Disk(d) => Some((j, d)),
            _ => None,
        })
        .collect();
    let mut tests: Vec<String> = disk.iter().map(|(j, _)| base(&j.name)).collect();
    tests.dedup();
    let skipped = suite.jobs.len() - disk.len();
    if skipped > 0 {
        notes.push(format!(
            "{skipped} network test(s) left out: an .icf holds disk workloads"
        ));
    }
    let test = match (&o.test, tests.as_slice()) {
        (_, []) => return Err(format!("suite '{}' has no disk test to write as an .icf", suite.name)),
        (Some(t), _) if tests.contains(t) => t.clone(),
        (Some(t), _) => {
            return Err(format!("suite '{}' has no disk test '{t}'; its disk tests: {}", suite.name, tests.join(", ")))
        }
        (None, [one]) => one.clone(),
        (None, _) => {
            return Err(format!(
                "suite '{}' has {} disk tests ({}); an .icf holds one test setup: choose one with --test",
                suite.name,
                tests.len(),
                tests.join(", ")
            ))
        }
    };
    let jobs: Vec<(&crate::Job, &iotoll_disk::DiskSpec)> = disk
        .into_iter()
        .filter(|(j, _)| base(&j.name) == test)
        .collect();
    // An .icf written here has one manager, this host: a test placed on
    // other hosts would lose where it runs, and Iometer's own managers are
    // other processes (Dynamo) this file cannot name.
    if let Some((j, _)) = jobs.iter().find(|(j, _)| !j.placement.is_local()) {
        return Err(format!(
            "test '{test}' runs on hosts ({}): an .icf written by iotoll holds this host's workers only; export a test without `on`",
            j.placement.hosts().join(", ")
        ));
    }
    let d0 = jobs[0].1;
    // What one Iometer setup holds for all its tests.
    type Get = fn(&iotoll_disk::DiskSpec) -> String;
    let same: [(&str, Get); 6] = [
        ("ramp", |d| format!("{:?}", d.ramp)),
        ("time", |d| format!("{:?}", d.time)),
        ("workers", |d| d.workers.to_string()),
        ("spread", |d| d.spread.to_string()),
        ("size", |d| format!("{:?}", d.size)),
        ("offset", |d| d.offset.to_string()),
    ];
    for (key, get) in same {
        if let Some((j, d)) = jobs.iter().find(|(_, d)| get(d) != get(d0)) {
            return Err(format!(
                "test '{test}': {key} differs between '{}' ({}) and '{}' ({}); an .icf has one {key} for all the tests it runs",
                jobs[0].0.name,
                get(d0),
                j.name,
                get(d)
            ));
        }
    }
    if d0.cpus.is_some() {
        notes.push("cpus not written: Iometer does not pin workers".into());
    }
    if d0.engine != iotoll_disk::EngineChoice::Auto || d0.buffered {
        notes.push("engine and buffered not written: Iometer has neither".into());
    }
    let secs = |d: Duration| d.as_secs_f64().round() as u64;
    if d0.ramp.subsec_nanos() != 0 || d0.time.subsec_nanos() != 0 {
        notes.push("ramp and time rounded to whole seconds".into());
    }
    for (what, v) in [("size", d0.size.unwrap_or(0)), ("offset", d0.offset)] {
        if v % 512 != 0 {
            return Err(format!("test '{test}': {what} {v} is not a whole number of 512-byte sectors, which Iometer counts in"));
        }
    }
    // The access specs, named as iotoll names them.
    let mut specs: Vec<Spec> = Vec::new();
    let mut steps: Vec<(String, u32)> = Vec::new();
    for (j, d) in &jobs {
        let name = match &d.spec_name {
            Some(n) => n.clone(),
            None => j.name.replacen('/', " ", 1),
        };
        let name = name.replace(',', ";");
        let lines: Vec<Line> = (d.lines.iter())
            .map(|l| Line {
                size: l.bs,
                share: l.share_pct,
                reads: l.read_pct,
                random: l.random_pct,
                delay_ms: l.burst_delay.as_millis() as u64,
                burst: l.burst_len,
                align: l.align.unwrap_or(0),
                reply: 0,
                at: 0,
            })
            .collect();
        if d.lines
            .iter()
            .any(|l| l.burst_delay.subsec_nanos() % 1_000_000 != 0)
        {
            notes.push(format!("spec '{name}': delay rounded down to whole ms"));
        }
        match specs.iter().find(|s| s.name == name) {
            Some(s) if s.lines != lines => {
                return Err(format!(
                    "test '{test}': two different access specs would both be named '{name}'"
                ))
            }
            Some(_) => {}
            None => specs.push(Spec {
                name: name.clone(),
                assignment: "NONE".into(),
                lines,
                at: 0,
            }),
        }
        steps.push((name, d.qd));
    }
    // Queue depths: one, a cycle over every spec, or a group per QD.
    let mut setup = Setup {
        description: test.clone(),
        run_time: {
            let t = secs(d0.time);
            ((t / 3600) as u32, (t % 3600 / 60) as u32, (t % 60) as u32)
        },
        ramp_s: secs(d0.ramp) as u32,
        disk_workers: Spawn::Cpus,
        net_workers: Spawn::N(0),
        ..Setup::default()
    };
    let mut runs: Vec<(String, Vec<u32>)> = Vec::new();
    for (n, q) in &steps {
        match runs.last_mut() {
            Some((last, qs)) if last == n => qs.push(*q),
            _ => runs.push((n.clone(), vec![*q])),
        }
    }
    let cycle = (runs.iter().all(|(_, q)| *q == runs[0].1) && runs[0].1.len() > 1)
        .then(|| as_cycle(&runs[0].1))
        .flatten();
    // (QD, the spec each step runs or Idle) per group of workers.
    let groups: Vec<(u32, Vec<String>)> = if steps.iter().all(|(_, q)| *q == steps[0].1) {
        vec![(steps[0].1, steps.iter().map(|(n, _)| n.clone()).collect())]
    } else if let Some(c) = cycle {
        setup.test_type = TestType::CycleOutstandingIos;
        setup.queue_cycling = c;
        vec![(c.start, runs.iter().map(|(n, _)| n.clone()).collect())]
    } else {
        let mut qds: Vec<u32> = Vec::new();
        for (_, q) in &steps {
            if !qds.contains(q) {
                qds.push(*q);
            }
        }
        notes.push(format!(
            "the specs run at {} queue depths: a group of workers per queue depth, each idle while another runs",
            qds.len()
        ));
        (qds.iter())
            .map(|g| {
                let list = steps
                    .iter()
                    .map(|(n, q)| if q == g { n.clone() } else { IDLE.to_string() });
                (*g, list.collect())
            })
            .collect()
    };
    let targets: Vec<String> = match o.targets.is_empty() {
        true => vec!["PHYSICALDRIVE:1".to_string()],
        false => o.targets.clone(),
    };
    let per = match d0.workers {
        0 => {
            notes.push(format!(
                "workers = 0 (one per CPU) written as {} workers, this host's CPUs",
                o.cpus.max(1)
            ));
            o.cpus.max(1)
        }
        w => w,
    };
    let mut workers = Vec::new();
    for (qd, list) in &groups {
        let sets: Vec<Vec<String>> = if d0.spread {
            vec![targets.clone(); per as usize]
        } else {
            (targets.iter())
                .flat_map(|t| std::iter::repeat_n(vec![t.clone()], per as usize))
                .collect()
        };
        for set in sets {
            let mut w = Worker::new(&format!("Worker {}", workers.len() + 1), WorkerKind::Disk);
            w.qd = *qd;
            w.disk_size = d0.size.unwrap_or(0) / 512;
            w.start_sector = d0.offset / 512;
            w.specs = Some(list.clone());
            w.targets = Some(
                (set.into_iter())
                    .map(|name| Target {
                        name,
                        kind: WorkerKind::Disk,
                        manager: None,
                        at: 0,
                    })
                    .collect(),
            );
            workers.push(w);
        }
    }
    let icf = Icf {
        version: WRITE_VERSION.into(),
        setup: Some(setup),
        display: Vec::new(),
        specs,
        managers: Some(vec![Manager {
            id: 1,
            name: o.manager.clone(),
            address: String::new(),
            workers,
            at: 0,
        }]),
    };
    Ok((icf, notes))
}

/// The Iometer queue-depth cycle that steps through `qs`, if one does.
fn as_cycle(qs: &[u32]) -> Option<QueueCycle> {
    let (start, end) = (qs[0], *qs.last()?);
    let linear = qs[1].checked_sub(start).filter(|s| *s > 0);
    let exp = (start > 0 && qs[1] % start == 0)
        .then(|| qs[1] / start)
        .filter(|s| *s > 1);
    [(linear, false), (exp, true)]
        .into_iter()
        .find_map(|(step, exponential)| {
            let step = step?;
            (cycle_values(start, end, step, exponential) == qs).then_some(QueueCycle {
                start,
                end,
                step,
                exponential,
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: &str = include_str!("../tests/fixtures/icf/two-workers.icf");

    fn fixture(name: &str) -> String {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/icf/");
        std::fs::read_to_string(format!("{dir}{name}")).unwrap()
    }

    #[test]
    fn reads_the_two_workers_fixture() {
        let icf = parse(TWO, "two-workers.icf").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(icf.version, "1.1.0");
        let s = icf.setup.as_ref().unwrap();
        assert_eq!(s.description, "mixed-qd");
        assert_eq!((s.run_secs(), s.ramp_s), (30, 5));
        assert_eq!(s.disk_workers, Spawn::Cpus);
        assert_eq!(s.test_type, TestType::CycleOutstandingIos);
        assert_eq!(
            s.queue_cycling,
            QueueCycle {
                start: 1,
                end: 16,
                step: 2,
                exponential: true
            }
        );
        assert_eq!(icf.specs.len(), 1);
        let spec = &icf.specs[0];
        assert_eq!(
            (spec.name.as_str(), spec.assignment.as_str()),
            ("mail store", "DISK")
        );
        let shares: Vec<u32> = spec.lines.iter().map(|l| l.share).collect();
        assert_eq!(shares, [60, 30, 10]);
        assert_eq!((spec.lines[1].size, spec.lines[1].align), (8192, 4096));
        assert_eq!((spec.lines[2].delay_ms, spec.lines[2].burst), (2, 4));
        let m = &icf.managers.as_ref().unwrap()[0];
        assert_eq!(
            (m.id, m.name.as_str(), m.address.as_str()),
            (1, "LAB-HOST", "")
        );
        assert_eq!(m.workers.len(), 2);
        let w = &m.workers[1];
        assert_eq!(
            (w.name.as_str(), w.kind, w.qd),
            ("Worker 2", WorkerKind::Disk, 1)
        );
        assert_eq!(w.disk_size, 2097152);
        assert_eq!(w.specs.as_deref(), Some(&["mail store".to_string()][..]));
        let t = &w.targets.as_ref().unwrap()[0];
        assert_eq!(
            (t.name.as_str(), t.disk_key().as_str()),
            ("PHYSICALDRIVE:2", "PHYSICALDRIVE:2")
        );
        let t0 = &m.workers[0].targets.as_ref().unwrap()[0];
        assert_eq!(t0.disk_key(), "E:");
    }

    #[test]
    fn written_files_read_back_the_same() {
        let icf = parse(TWO, "a").unwrap();
        let text = write(&icf);
        let again = parse(&text, "b").unwrap_or_else(|e| panic!("{e}\n{text}"));
        let strip = |mut i: Icf| {
            // Lines differ (the writer adds the fixed-seed columns); the rest may not.
            for s in i.specs.iter_mut() {
                s.at = 0;
                s.lines.iter_mut().for_each(|l| l.at = 0);
            }
            if let Some(s) = i.setup.as_mut() {
                (s.at, s.run_time_at, s.test_type_at) = (0, 0, 0);
            }
            for m in i.managers.iter_mut().flatten() {
                m.at = 0;
                for w in m.workers.iter_mut() {
                    w.at = 0;
                    w.targets.iter_mut().flatten().for_each(|t| t.at = 0);
                }
            }
            i
        };
        assert_eq!(strip(icf), strip(again));
        // Iometer's layout: its headers are 80 columns, values tab-indented.
        assert!(text.starts_with("Version 1.1.0\n'TEST SETUP ====="));
        assert!(text
            .lines()
            .filter(|l| l.ends_with("====="))
            .all(|l| l.len() == 80));
        assert!(text
            .contains("'Run Time\n'\thours      minutes    seconds\n\t0          0          30\n"));
        assert!(text.contains(
            "'size,% of size,% reads,% random,delay,burst,align,reply\n\t4096,60,70,100,0,1,0,0\n"
        ));
        assert!(text.ends_with("'END manager list\nVersion 1.1.0\n"));
    }

    #[test]
    fn crlf_and_blank_lines_are_read() {
        let text = TWO
            .replace('\n', "\r\n")
            .replace("'END test setup", "\r\n'END test setup");
        assert_eq!(parse(&text, "x").unwrap().specs.len(), 1);
        assert!(looks_like_icf(&text));
        assert!(!looks_like_icf("name = 'x'\n"));
    }

    #[test]
    fn shares_not_adding_to_100_name_the_spec_and_line() {
        let e = parse(&fixture("bad-shares.icf"), "bad-shares.icf").unwrap_err();
        assert_eq!(e.problems.len(), 1, "{e}");
        let (line, msg) = &e.problems[0];
        assert_eq!(*line, Some(38), "{e}");
        assert!(
            msg.contains("'mail store'") && msg.contains("95 % (60 + 30 + 5)"),
            "{e}"
        );
        assert!(e.to_string().starts_with("bad-shares.icf:38: "), "{e}");
    }

    #[test]
    fn unknown_sections_and_keys_are_all_listed() {
        let e = parse(&fixture("unknown-section.icf"), "u.icf").unwrap_err();
        let msgs: Vec<String> = e
            .problems
            .iter()
            .map(|(l, m)| format!("{l:?} {m}"))
            .collect();
        assert_eq!(e.problems.len(), 2, "{e}");
        assert!(
            msgs[0].starts_with("Some(14) unknown key 'Record Resolts' in TEST SETUP"),
            "{e}"
        );
        assert!(
            msgs[1].contains("unknown section 'NETWORK TOPOLOGY';"),
            "{e}"
        );
    }

    #[test]
    fn malformed_files_say_where() {
        let e = parse("name = 'x'\n", "x").unwrap_err();
        assert!(
            e.to_string().contains("first line should be 'Version"),
            "{e}"
        );
        let e = parse(
            &TWO.replace("\t4096,60,70,100,0,1,0,0", "\t4096,60,170,100,0,1,0,0"),
            "x",
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("% reads 170 is outside 0-100"),
            "{e}"
        );
        let e = parse(&TWO.replace("'END test setup\n", ""), "x").unwrap_err();
        assert!(e.to_string().contains("expected 'END test setup"), "{e}");
        let e = parse(&TWO.replace("\tCYCLE_OUTSTANDING_IOS", "\tSOMETIMES"), "x").unwrap_err();
        assert!(
            e.to_string()
                .contains("x:26: Test Type: expected one of NORMAL"),
            "{e}"
        );
        let cut = &TWO[..TWO.find("'End worker").unwrap()];
        let e = parse(cut, "x").unwrap_err();
        assert!(e.to_string().contains("ends inside"), "{e}");
    }

    #[test]
    fn imports_the_two_workers_fixture() {
        let icf = parse(TWO, "two-workers.icf").unwrap();
        let imp = import(&icf, "two-workers.icf", "two-workers").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(imp.targets, ["E: \"DATA1\"", "PHYSICALDRIVE:2"]);
        let t = &imp.toml;
        assert!(t.contains("name = \"two-workers\"\n"), "{t}");
        assert!(t.contains("ramp = \"5s\"\ntime = \"30s\"\n"), "{t}");
        assert!(t.contains("[[spec]]\nname = \"mail store\"\nqd = 1\nlines = [\n  { share = 60, bs = 4096, read = 70, random = 100, burst_delay = \"0ms\", burst_len = 1 },\n  { share = 30, bs = 8192, read = 50, random = 100, burst_delay = \"0ms\", burst_len = 1, align = 4096 },\n  { share = 10, bs = 65536, read = 0, random = 0, burst_delay = \"2ms\", burst_len = 4 },\n]\n"), "{t}");
        assert!(t.contains("[[test]]\nname = \"mixed-qd\"\nkind = \"disk\"\nspec = \"mail store\"\nworkers = 1\nqd = [1, 2, 4, 8, 16]\nsize = 1073741824\n"), "{t}");
        assert_eq!(
            imp.notes,
            ["maximum disk size and starting sector are counted in 512-byte sectors"]
        );
        // Each TOML line knows where it came from.
        let qd_line = t.lines().position(|l| l.starts_with("qd = [")).unwrap() + 1;
        assert_eq!(imp.icf_line(qd_line), Some(25));
    }

    #[test]
    fn cycles_step_as_iometer_does() {
        assert_eq!(cycle_values(1, 16, 2, true), [1, 2, 4, 8, 16]);
        assert_eq!(cycle_values(2, 20, 3, true), [2, 6, 18]);
        assert_eq!(cycle_values(1, 10, 4, false), [1, 5, 9]);
        assert_eq!(cycle_values(4, 4, 1, true), [4]);
        assert_eq!(cycle_values(5, 4, 1, false), Vec::<u32>::new());
        assert_eq!(cycle_values(1, 3, 0, false), [1]);
    }

    #[test]
    fn one_worker_on_every_target_is_spread() {
        let text = TWO.replace(
            "'Target\n\tE: \"DATA1\"\n'Target type\n\tDISK\n'End target\n",
            "'Target\n\tE: \"DATA1\"\n'Target type\n\tDISK\n'End target\n'Target\n\tPHYSICALDRIVE:2\n'Target type\n\tDISK\n'End target\n",
        );
        // Worker 2 keeps only PHYSICALDRIVE:2: not expressible.
        let icf = parse(&text, "x.icf").unwrap();
        let e = import(&icf, "x.icf", "x").unwrap_err();
        assert!(e.to_string().contains("cannot be expressed ('Worker 1' on E: \"DATA1\" + PHYSICALDRIVE:2, 'Worker 2' on PHYSICALDRIVE:2)"), "{e}");
        // Without worker 2, worker 1 is spread over both.
        let cut = text.find("'Worker\n\tWorker 2").unwrap();
        let end = text.find("'End manager").unwrap();
        let one = format!("{}{}", &text[..cut], &text[end..]);
        let imp = import(&parse(&one, "x.icf").unwrap(), "x.icf", "x").unwrap();
        assert!(
            imp.toml.contains("workers = 1\nspread = true\n"),
            "{}",
            imp.toml
        );
    }

    #[test]
    fn uneven_targets_are_refused_with_the_workers() {
        let icf = parse(&fixture("uneven-targets.icf"), "u.icf").unwrap();
        let e = import(&icf, "u.icf", "u").unwrap_err();
        assert!(
            e.to_string().contains(
                "u.icf:50: access spec 'mail store': the workers' targets cannot be expressed"
            ),
            "{e}"
        );
    }

    fn expanded(s: &crate::Suite) -> Vec<(String, String)> {
        (s.jobs.iter())
            .filter_map(|j| match &j.spec {
                crate::JobSpec::Disk(d) => Some((j.name.clone(), format!("{d:?}"))),
                _ => None,
            })
            .collect()
    }

    fn round_trip(
        s: &crate::Suite,
        test: Option<&str>,
        targets: &[&str],
    ) -> (crate::Suite, String) {
        let o = ExportOptions {
            test: test.map(str::to_string),
            targets: targets.iter().map(|t| t.to_string()).collect(),
            manager: "HOST".into(),
            cpus: 2,
        };
        let (icf, _) = export(s, &o).unwrap_or_else(|e| panic!("{e}"));
        let text = write(&icf);
        let (back, _) = suite(&text, "back.icf").unwrap_or_else(|e| panic!("{e}\n{text}"));
        (back, text)
    }

    #[test]
    fn built_in_studies_round_trip() {
        for (name, test) in [("iscsi-initiator-study", "small-block"), ("quick", "disk")] {
            let s = crate::parse(crate::builtin::find(name).unwrap(), name).unwrap();
            let (back, text) = round_trip(&s, Some(test), &[]);
            let want: Vec<_> = expanded(&s)
                .into_iter()
                .filter(|(n, _)| n.starts_with(test))
                .collect();
            assert_eq!(expanded(&back), want, "{name}\n{text}");
        }
        // Per-spec queue depths: a group of workers per QD, idle in turn.
        let s = crate::parse(crate::builtin::find("quick").unwrap(), "quick").unwrap();
        let (_, text) = round_trip(&s, None, &[]);
        assert!(
            text.contains(
                "'Assigned access specs\n\tdb-oltp-8k\n\tIdle\n\tIdle\n'End assigned access specs"
            ),
            "{text}"
        );
    }

    #[test]
    fn the_fixture_round_trips() {
        let (s, imp) = suite(TWO, "two-workers.icf").unwrap();
        assert_eq!(imp.targets.len(), 2);
        let names: Vec<String> = expanded(&s).into_iter().map(|(n, _)| n).collect();
        assert_eq!(
            names,
            [
                "mixed-qd/qd=1",
                "mixed-qd/qd=2",
                "mixed-qd/qd=4",
                "mixed-qd/qd=8",
                "mixed-qd/qd=16"
            ]
        );
        let (back, text) = round_trip(&s, None, &["E:", "PHYSICALDRIVE:2"]);
        assert_eq!(expanded(&back), expanded(&s), "{text}");
        assert!(text.contains("'Queue Depth Cycling\n'\tstart      end        step       step type\n\t1          16         2          EXPONENTIAL\n'Test Type\n\tCYCLE_OUTSTANDING_IOS\n"), "{text}");
    }

    #[test]
    fn exports_refuse_what_an_icf_cannot_hold() {
        let s = crate::parse(crate::builtin::find("adapter-vs-hba-study").unwrap(), "a").unwrap();
        let e = export(&s, &ExportOptions::default()).unwrap_err();
        assert!(
            e.contains("3 disk tests (read, write, rw)") && e.contains("--test"),
            "{e}"
        );
        let e = export(
            &s,
            &ExportOptions {
                test: Some("nope".into()),
                ..Default::default()
            },
        )
        .unwrap_err();
        assert!(e.contains("no disk test 'nope'"), "{e}");
        let s = crate::parse(
            "name='t'\n[[test]]\nname='a'\nkind='disk'\nworkers=[1,2]\n",
            "t",
        )
        .unwrap();
        let e = export(&s, &ExportOptions::default()).unwrap_err();
        assert!(e.contains("workers differs"), "{e}");
    }

    /// An .icf of one manager with `workers` (name, QD, specs, targets).
    fn setup_with(test_type: &str, workers: &[(&str, u32, &[&str], &[&str])]) -> String {
        let mut t =
            TWO[..TWO.find("'Worker\n").unwrap()].replace("CYCLE_OUTSTANDING_IOS", test_type);
        t = t.replace("'END access specifications", "'Access specification name,default assignment\n\tseq,NONE\n'size,% of size,% reads,% random,delay,burst,align,reply\n\t65536,100,100,0,0,1,0,0\n'END access specifications");
        let icf = parse(&format!("{t}'End manager\n'END manager list\n"), "x").unwrap();
        let mut icf = icf;
        let m = &mut icf.managers.as_mut().unwrap()[0];
        for (name, qd, specs, targets) in workers {
            let mut w = Worker::new(name, WorkerKind::Disk);
            w.qd = *qd;
            w.specs = Some(specs.iter().map(|s| s.to_string()).collect());
            w.targets = Some(
                (targets.iter())
                    .map(|n| Target {
                        name: n.to_string(),
                        kind: WorkerKind::Disk,
                        manager: None,
                        at: 0,
                    })
                    .collect(),
            );
            m.workers.push(w);
        }
        write(&icf)
    }

    #[test]
    fn worker_cycling_over_spread_workers() {
        let both: &[&str] = &["E:", "F:"];
        let w: Vec<(&str, u32, &[&str], &[&str])> =
            (0..4).map(|_| ("W", 4, &["seq"][..], both)).collect();
        let mut text = setup_with("CYCLE_WORKERS", &w);
        text = text.replace(
            "'Worker Cycling\n'\tstart      step       step type\n\t1          1          LINEAR",
            "'Worker Cycling\n'\tstart      step       step type\n\t1          3          LINEAR",
        );
        let (s, imp) = suite(&text, "w.icf").unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert!(
            imp.toml.contains("workers = [1, 4]\nspread = true\n"),
            "{}",
            imp.toml
        );
        let names: Vec<&str> = s.jobs.iter().map(|j| j.name.as_str()).collect();
        assert_eq!(names, ["mixed-qd/workers=1", "mixed-qd/workers=4"]);
        // Workers of their own per target cannot be cycled.
        let w = [
            ("A", 4, &["seq"][..], &["E:"][..]),
            ("B", 4, &["seq"][..], &["F:"][..]),
        ];
        let e = suite(&setup_with("CYCLE_WORKERS", &w), "w.icf").unwrap_err();
        assert!(
            e.to_string()
                .contains("Test Type CYCLE_WORKERS: iotoll cannot express it"),
            "{e}"
        );
    }

    #[test]
    fn specs_in_turn_with_idle_and_their_own_qd() {
        let w = [
            ("A", 4, &["mail store", "Idle"][..], &["E:"][..]),
            ("B", 32, &["Idle", "seq"][..], &["E:"][..]),
        ];
        let (s, _) = suite(&setup_with("NORMAL", &w), "i.icf").unwrap();
        let got: Vec<(String, u32, usize)> = (s.jobs.iter())
            .map(|j| {
                let crate::JobSpec::Disk(d) = &j.spec else {
                    panic!()
                };
                (j.name.clone(), d.qd, d.lines.len())
            })
            .collect();
        assert_eq!(
            got,
            [
                ("mixed-qd/spec=mail store".into(), 4, 3),
                ("mixed-qd/spec=seq".into(), 32, 1)
            ]
        );
        // Two workers at different QDs on the same spec at once: refused.
        let w = [
            ("A", 4, &["seq"][..], &["E:"][..]),
            ("B", 8, &["seq"][..], &["F:"][..]),
        ];
        let e = suite(&setup_with("NORMAL", &w), "i.icf").unwrap_err();
        assert!(
            e.to_string()
                .contains("worker 'A' has 4 outstanding I/Os, worker 'B' 8"),
            "{e}"
        );
        // Different specs at once: refused.
        let w = [
            ("A", 4, &["seq"][..], &["E:"][..]),
            ("B", 4, &["mail store"][..], &["F:"][..]),
        ];
        let e = suite(&setup_with("NORMAL", &w), "i.icf").unwrap_err();
        assert!(
            e.to_string()
                .contains("an iotoll test runs one access spec on all its workers"),
            "{e}"
        );
        // A target twice on one worker.
        let w = [("A", 4, &["seq"][..], &["E:", "e: \"DATA\""][..])];
        let e = suite(&setup_with("NORMAL", &w), "i.icf").unwrap_err();
        assert!(
            e.to_string()
                .contains("worker 'A' has target 'e: \"DATA\"' twice"),
            "{e}"
        );
        // A spec the file does not define.
        let w = [("A", 4, &["Default"][..], &["E:"][..])];
        let e = suite(&setup_with("NORMAL", &w), "i.icf").unwrap_err();
        assert!(
            e.to_string()
                .contains("'Default', which the file's ACCESS SPECIFICATIONS do not define"),
            "{e}"
        );
    }

    #[test]
    fn specs_without_managers_run_in_order() {
        let cut = TWO.find("'MANAGER LIST").unwrap();
        let text = format!("{}Version 1.1.0\n", &TWO[..cut]);
        let (s, imp) = suite(&text, "n.icf").unwrap();
        assert!(imp.targets.is_empty());
        assert!(
            imp.notes[0].starts_with("no MANAGER LIST"),
            "{:?}",
            imp.notes
        );
        assert_eq!(s.jobs.len(), 5);
    }
}
