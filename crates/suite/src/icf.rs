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
            .push((Some(at), format!("unknown key {key} in {what}")));
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
            if l.starts_with('\'') {
                let name = l.trim_end_matches(['=', ' ']);
                r.problems.push((
                    Some(at),
                    format!(
                        "unknown section {name}; known: TEST SETUP, RESULTS DISPLAY, ACCESS SPECIFICATIONS, MANAGER LIST"
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
            msgs[0].starts_with("Some(14) unknown key 'Record Resolts in TEST SETUP"),
            "{e}"
        );
        assert!(msgs[1].contains("unknown section 'NETWORK TOPOLOGY"), "{e}");
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
}
