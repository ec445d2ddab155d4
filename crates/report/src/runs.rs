//! The runs a comparison or a report is of, read from the store by the
//! ids or labels a user names.

use crate::{ConfigData, RunInfo};
use iotoll_model::metrics::{metric_def, unknown_metric};
use iotoll_store::{RunDetail, Store, StoreError};

/// A named run that could not be read.
#[derive(Debug, thiserror::Error)]
pub enum RunsError {
    /// No run has that id or label: the user's to fix.
    #[error(transparent)]
    Unknown(StoreError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Each run `which` names (an id, or a label's latest complete run):
/// its configuration and what reports say of it, with the CPU threshold
/// its suite file states.
pub fn load(store: &Store, which: &[String]) -> Result<(Vec<ConfigData>, Vec<RunInfo>), RunsError> {
    let mut configs = Vec::new();
    let mut infos = Vec::new();
    for w in which {
        let id = store.resolve(w).map_err(RunsError::Unknown)?;
        let detail = store.run_detail(id)?;
        let (c, mut i) = crate::load(&detail);
        i.cpu_threshold_pct = suite_threshold(&detail);
        configs.push(c);
        infos.push(i);
    }
    Ok((configs, infos))
}

fn suite_threshold(run: &RunDetail) -> Option<f64> {
    let text = run.suite_text.as_deref()?;
    (iotoll_suite::parse(text, &run.run.suite).ok()?).cpu_threshold_pct
}

/// `--cpu-threshold` is a percentage of the host's CPU.
pub fn check_threshold(t: Option<f64>) -> Result<(), String> {
    match t.filter(|t| !(0.0..=100.0).contains(t)) {
        Some(t) => Err(format!("--cpu-threshold {t} is outside 0-100")),
        None => Ok(()),
    }
}

/// `compare`'s options checked: `--metric` names a metric, the threshold
/// is a percentage, `--by` is `group` or `none`; whether to group.
pub fn compare_options(
    metric: Option<&str>,
    by: &str,
    threshold: Option<f64>,
) -> Result<bool, String> {
    if let Some(m) = metric.filter(|m| metric_def(m).is_none()) {
        return Err(format!("--metric {}", unknown_metric(m)));
    }
    check_threshold(threshold)?;
    match by {
        "group" => Ok(true),
        "none" => Ok(false),
        other => Err(format!("--by '{other}': use group or none")),
    }
}
