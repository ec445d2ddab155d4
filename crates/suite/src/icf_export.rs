//! What `suite export-icf` writes besides the suite: the target names,
//! checked as Iometer would show them, and the manager's name.

use crate::icf::ExportOptions;

/// A target name an .icf cannot hold.
#[derive(Debug, thiserror::Error)]
pub enum TargetNameError {
    #[error("--target '{}' is not a name Iometer can show", .0.escape_debug())]
    Unshowable(String),
    /// The same name twice (Iometer's names ignore case).
    #[error("--target {0} is given twice")]
    Twice(String),
}

/// The export's options: `targets` each a name Iometer can show and none
/// twice; the manager this host's name unless given; workers for
/// `workers = 0` one per CPU of this host.
pub fn export_options(
    test: Option<String>,
    targets: Vec<String>,
    manager: Option<String>,
) -> Result<ExportOptions, TargetNameError> {
    let unshowable = |t: &&String| t.trim().is_empty() || t.contains(char::is_control);
    if let Some(t) = targets.iter().find(unshowable) {
        return Err(TargetNameError::Unshowable(t.clone()));
    }
    let mut seen = std::collections::HashSet::new();
    if let Some(t) = (targets.iter()).find(|t| !seen.insert(t.to_ascii_uppercase())) {
        return Err(TargetNameError::Twice(t.clone()));
    }
    let manager = manager.unwrap_or_else(|| {
        let h = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
        Some(h.trim().to_string())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "localhost".into())
    });
    Ok(ExportOptions {
        test,
        targets,
        manager,
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
    })
}
