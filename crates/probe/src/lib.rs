//! The CPU probe: whole-host CPU accounting on an exact window, and the
//! disclosure of the system measured. (The mechanics of a run around the
//! window are `iotoll_run`'s.)
//!
//! `stat` parses `/proc/stat` and turns two snapshots into a [`CpuReport`];
//! `procs` finds the top consumers from `/proc/*/stat`; `clock` finds the
//! nominal frequency; `sysinfo` discloses the system; [`CpuWindow`] ties them together for a measurement
//! window and [`HostSampler`] gives the one-second series. `affinity` pins
//! disk workers to CPUs and discloses where their devices' interrupts go.

pub mod affinity;
pub mod clock;
pub mod owncpus;
pub mod procs;
pub mod stat;
pub mod sysinfo;
mod window;

pub use iotoll_model::CpuReport;
pub use window::{
    enter_host_cpus, host_cpus, leave_host_cpus, set_thread_host_cpus, ClosedWindow, CpuWindow,
    HostSampler, HOST_CPUS_ENV,
};

#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("cannot read /proc/stat: {0}")]
    Read(#[source] std::io::Error),
    #[error("/proc/stat: unexpected format: {0}")]
    Format(String),
    #[error("the window was shorter than one clock tick; no CPU figure can be given")]
    EmptyWindow,
}
