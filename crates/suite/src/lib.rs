//! Suites: TOML files of tests whose list-valued parameters are swept
//! (cartesian product), run with repetitions, a selection rule and a
//! repeatability check. `file` parses and expands, `select` picks the
//! repetition (or mean) that represents a test, `runner` runs it all,
//! `session` takes a run from the database's first check to its record.

#![forbid(unsafe_code)]

pub mod builtin;
pub mod durations;
pub mod file;
pub mod fleet;
pub mod hosts;
pub mod icf;
pub mod icf_export;
pub mod runner;
pub mod select;
pub mod session;

pub use file::{parse, Job, JobSpec, Suite, SuiteError};
pub use hosts::{HostAt, HostEntry, Placement};
pub use runner::{
    OnHostFailure, OnInterference, Options, Outcome, Sink, SuiteProgress, TestOutcome,
};
pub use select::{select, Rule};
pub use session::{Session, SessionError};
