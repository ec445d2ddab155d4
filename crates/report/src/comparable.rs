//! Whether a comparison answers anything: one that compares nothing, or
//! (when asked to be strict) pairs tests that ran different workloads, is
//! refused rather than shown as a table.

use crate::{Comparison, ConfigData};

/// Why a comparison is refused.
#[derive(Debug, thiserror::Error)]
pub enum NotComparable {
    /// No test has the same name and a value of the metric everywhere;
    /// the message lists each configuration's tests, and the metrics they
    /// share if any.
    #[error(
        "nothing to compare: no test has the same name and a value of {metric} in every configuration\n  {lists}{hint}"
    )]
    Nothing {
        metric: String,
        lists: String,
        hint: String,
    },
    /// Paired tests ran different workloads (`--strict`).
    #[error("--strict: paired tests ran different workloads (only the configuration may differ):\n  {}", .0.join("\n  "))]
    Differing(Vec<String>),
}

/// Refuses a comparison that compares nothing, or with `strict` one whose
/// paired tests ran different workloads; else those pairs (a warning).
pub fn check(
    c: &Comparison,
    configs: &[ConfigData],
    strict: bool,
) -> Result<Vec<String>, NotComparable> {
    if c.compared_nothing() {
        let lists: Vec<String> = (configs.iter())
            .map(|cfg| {
                let names: Vec<&str> = cfg.tests.iter().map(|t| t.name.as_str()).collect();
                format!("{} (run {}): {}", cfg.label, cfg.run_id, names.join(", "))
            })
            .collect();
        let metric = c.rows.first().map(|r| r.metric.as_str());
        // Runs without the default metric (imports, studies selected by
        // another figure) can still be compared on the ones they share.
        let other = crate::info::comparable_metrics(configs, metric);
        let hint = match other.as_slice() {
            [] => String::new(),
            [m, ..] => format!(
                "\n  the tests have {}: compare one with --metric, e.g. --metric {m}",
                other.join(", ")
            ),
        };
        return Err(NotComparable::Nothing {
            metric: metric.unwrap_or("the metric").to_string(),
            lists: lists.join("\n  "),
            hint,
        });
    }
    match c.differing() {
        d if strict && !d.is_empty() => Err(NotComparable::Differing(d)),
        d => Ok(d),
    }
}
