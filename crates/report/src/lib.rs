//! Reports: the comparison of configurations test by test (`compare`), the
//! sentences drawn from it (`compare::findings`, and `findings` for a
//! single run), and its renderings (`markdown`, `html` with SVG charts
//! from `charts`).

pub mod charts;
pub mod compare;
pub mod disclosure;
pub mod findings;
pub mod fmt;
pub mod hosts;
pub mod html;
pub mod info;
pub mod markdown;
pub mod reps;
pub mod tables;

pub use compare::{compare, Comparison, ConfigData, TestData};
pub use info::{load, RunInfo};

#[cfg(test)]
pub(crate) mod fixtures;
