//! Disk workloads with Iometer's semantics: access specifications (transfer
//! size, % read, % random, outstanding I/Os), a scheduler that turns them
//! into offsets, I/O engines behind one small trait, and the runner that
//! measures them against a whole-host CPU window.

pub mod engines;
pub mod occupancy;
pub mod pattern;
pub mod rng;
pub mod runner;
pub mod spec;
pub mod specs;
pub mod target;
pub mod topology;

pub use runner::run;
pub use spec::{DiskRequest, EngineChoice};
pub use specs::{builtin_specs, AccessLine, AccessSpec};

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum DiskError {
    /// The request itself is wrong (flags, spec, missing --allow-destructive):
    /// a usage error.
    #[error("{0}")]
    Invalid(String),
    /// The target cannot be used as asked (missing, a directory, too small,
    /// no permission).
    #[error("target {path}: {msg}")]
    Target { path: PathBuf, msg: String },
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
    #[error("engine {engine} is not available: {msg}")]
    EngineUnavailable { engine: &'static str, msg: String },
    #[error("interrupted {0}; nothing was measured")]
    Interrupted(&'static str),
    /// The workload ran but failed (I/Os or the engine failed mid-run, a
    /// worker panicked): never a result. `doc` holds the partial figures,
    /// with status `failed`.
    #[error("{msg}")]
    Failed {
        msg: String,
        doc: Box<iotoll_model::ResultDoc>,
    },
    #[error(transparent)]
    Probe(#[from] iotoll_probe::ProbeError),
}

impl DiskError {
    /// True for errors the user fixes by changing the command line.
    pub fn is_usage(&self) -> bool {
        matches!(self, DiskError::Invalid(_))
    }

    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        DiskError::Io {
            context: context.into(),
            source,
        }
    }

    pub(crate) fn target(path: &std::path::Path, msg: impl Into<String>) -> Self {
        DiskError::Target {
            path: path.to_path_buf(),
            msg: msg.into(),
        }
    }
}
