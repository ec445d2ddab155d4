//! The vocabulary every iotoll crate shares: units, canonical metric names,
//! the derived-metric formulas and the shape of a result document.

#![forbid(unsafe_code)]

pub mod ci;
#[cfg(any(test, feature = "test-fixtures"))]
pub mod fixtures;
pub mod kind;
pub mod metrics;
pub mod os;
pub mod result;
pub mod schema;
pub mod secret;
pub mod spec;
pub mod text;
pub mod units;
pub mod workload;

pub use ci::Ci95;
pub use kind::{Kind, ResultStatus, RunStatus};
pub use metrics::{derive_metrics, rederive_metrics, Metrics};
pub use result::{
    CpuAccount, CpuCore, CpuModes, CpuReport, CpuSection, HostFigures, IfaceFigures, Interference,
    IoCounts, LatencyReport, LineFigures, MachineCpu, PairFigures, ResultDoc, SeriesPoint, Skew,
    TargetFigures, TopConsumer, WorkerFigures, HOST_ROLES,
};
pub use units::{format_rate, format_size, parse_duration, parse_rate, parse_size, UnitError};

/// The version string stamped into every JSON document.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
