//! The CPU probe: whole-host CPU accounting on an exact window.
//!
//! `stat` parses `/proc/stat` and turns two snapshots into a [`CpuReport`];
//! `procs` finds the top consumers from `/proc/*/stat`; `clock` finds the
//! nominal frequency; `sysinfo` discloses the system; [`CpuWindow`] ties them together for a measurement
//! window and [`HostSampler`] gives the one-second series.

pub mod clock;
mod latency;
mod pacing;
pub mod procs;
pub mod stat;
pub mod sysinfo;
mod window;

pub use iotoll_model::CpuReport;
pub use latency::{latency_report, new_histogram};
pub use pacing::{
    wait_until, Counting, Phase, PhaseCell, Progress, RunControl, SeriesRecorder, Silent,
};
pub use window::{ClosedWindow, CpuWindow, HostSampler};

#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: unexpected format: {what}")]
    Format { path: String, what: String },
    #[error("the window was shorter than one clock tick; no CPU figure can be given")]
    EmptyWindow,
}
