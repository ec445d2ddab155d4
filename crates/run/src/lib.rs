//! The mechanics every workload run shares: its phases and the pacing of
//! ramp-up and window (`pacing`), the clock and CPU source it runs on
//! (`clock`), progress hooks, the live counters behind the one-second
//! series (`counters`), latency histograms (`latency`), Ctrl-C and
//! SIGTERM (`signals`) and the bookkeeping at the window's end. CPU
//! accounting itself is `iotoll_probe`'s.

#![forbid(unsafe_code)]

mod clock;
mod counters;
pub mod interval;
mod latency;
pub mod log;
mod pacing;
pub mod signals;

pub use clock::{Clock, FakeClock, HostClock};
pub use counters::{jain_fairness, Live};
pub use interval::Labels;
pub use latency::{latency_report, new_histogram, write_latency_metrics};
pub use pacing::{
    wait_until, Counting, Phase, PhaseCell, Progress, RunControl, Schedule, SeriesRecorder, Silent,
};

use iotoll_model::CpuReport;
use iotoll_probe::ProbeError;
use std::time::Duration;

/// The note of a window that Ctrl-C cut short.
pub fn interrupted_note(window_s: f64, time: Duration) -> String {
    format!(
        "interrupted after {window_s:.1} s of the {} s window; figures cover the part measured",
        time.as_secs_f64()
    )
}

/// Moves a closed window's CPU report into the run: its notes join the
/// run's, or the run notes why `what` (e.g. "CPU", "local CPU") was not
/// measured.
pub fn take_cpu_report(
    report: Result<CpuReport, ProbeError>,
    what: &str,
    notes: &mut Vec<String>,
) -> Option<CpuReport> {
    match report {
        Ok(r) => {
            notes.extend(r.notes.iter().cloned());
            Some(r)
        }
        Err(e) => {
            notes.push(format!("{what} not measured: {e}"));
            None
        }
    }
}
