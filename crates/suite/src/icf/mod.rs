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

mod export;
mod import;
mod parse;
#[cfg(test)]
mod tests;
mod write;

pub use export::{export, ExportOptions};
pub use import::{cycle_values, import, suite, test_name, Import};
pub use parse::{looks_like_icf, parse};
pub use write::{write, WRITE_VERSION};

use std::fmt;
use std::time::Duration;

/// The access spec name that makes a worker rest in Iometer's lists.
const IDLE: &str = "Idle";

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
    /// As written, blanks around its commas and case aside.
    fn parse(s: &str) -> Option<Self> {
        let words: Vec<&str> = s.split(',').map(str::trim).collect();
        let all = [WorkerKind::Disk, WorkerKind::NetTcp, WorkerKind::NetVi];
        all.into_iter()
            .find(|k| k.as_str().eq_ignore_ascii_case(&words.join(",")))
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
