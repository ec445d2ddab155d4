//! Reports: the comparison of configurations test by test (`compare`), the
//! sentences drawn from it (`findings`: a comparison's, and a
//! single run), and its renderings (`markdown`, `html` with SVG charts
//! from `charts`, and `text` for the terminal: a run's table, `results
//! list` and `results show`), all of one `tables::Table` type.

#![forbid(unsafe_code)]

pub mod charts;
pub mod comparable;
pub mod compare;
pub mod differs;
pub mod disclosure;
pub mod files;
pub mod findings;
pub mod fmt;
pub mod hosts;
pub mod html;
pub mod info;
pub mod man;
pub mod markdown;
pub mod reps;
pub mod runs;
pub mod tables;
pub mod term;
pub mod text;

pub use compare::{compare, Comparison, ConfigData, TestData};
pub use info::{load, RunInfo};

#[cfg(test)]
pub(crate) mod fixtures;
