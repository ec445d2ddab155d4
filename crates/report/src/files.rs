//! The report files the commands write: a comparison as Markdown and
//! HTML (`compare`, `report`), and one stored run's (`suite run --report`).

use crate::{compare, ConfigData, RunInfo};
use iotoll_store::{Store, StoreError};
use std::path::{Path, PathBuf};

/// A report that could not be written.
#[derive(Debug, thiserror::Error)]
pub enum FilesError {
    #[error("writing {}", .0.display())]
    Write(PathBuf, #[source] std::io::Error),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The files a report goes to: `--md`, `--html`.
#[derive(Default)]
pub struct Files<'a> {
    pub md: Option<&'a Path>,
    pub html: Option<&'a Path>,
}

impl Files<'_> {
    /// The Markdown report, after writing the files asked for; `wrote` is
    /// told of each as it is written.
    pub fn write(
        &self,
        c: &crate::Comparison,
        configs: &[ConfigData],
        infos: &[RunInfo],
        title: &str,
        wrote: &mut dyn FnMut(&Path),
    ) -> Result<String, FilesError> {
        let md = crate::markdown::render(c, configs, infos);
        if let Some(p) = self.md {
            write(p, &md, wrote)?;
        }
        if let Some(p) = self.html {
            write(p, &crate::html::render(c, configs, infos, title), wrote)?;
        }
        Ok(md)
    }
}

fn write(path: &Path, text: &str, wrote: &mut dyn FnMut(&Path)) -> Result<(), FilesError> {
    std::fs::write(path, text).map_err(|e| FilesError::Write(path.into(), e))?;
    wrote(path);
    Ok(())
}

/// One stored run's report at `path`: Markdown when the file ends in
/// `.md`, else HTML.
pub fn write_run_report(
    store: &Store,
    run: i64,
    cpu_threshold: Option<f64>,
    path: &Path,
    wrote: &mut dyn FnMut(&Path),
) -> Result<(), FilesError> {
    let (config, info) = crate::load(&store.run_detail(run)?);
    let (configs, infos) = ([config], [info]);
    let c = compare(&configs, None, true, cpu_threshold);
    let md = path.extension().is_some_and(|e| e == "md");
    let files = Files {
        html: (!md).then_some(path),
        md: md.then_some(path),
    };
    files.write(&c, &configs, &infos, "report", wrote)?;
    Ok(())
}
