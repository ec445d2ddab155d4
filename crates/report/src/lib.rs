//! Reports: the comparison of configurations test by test (`compare`), the
//! sentences drawn from it (`findings`), and its renderings (`markdown`,
//! `html` with SVG charts).

pub mod compare;
pub mod disclosure;
pub mod html;
pub mod markdown;

pub use compare::{compare, Comparison, ConfigData, TestData};
