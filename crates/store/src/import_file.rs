//! `results import`: a file of results from elsewhere (a CSV table, fio
//! or iperf3 JSON), streamed into the database as one run.

use crate::import::{fio_json, iperf3_json, table_rows, Imported};
use crate::{RunId, Store, StoreError};
use std::path::Path;

/// What an import stored.
pub struct ImportedRun {
    pub run: RunId,
    pub tests: usize,
    /// Each test's first note, by test name (fio and iperf3 say what they
    /// could not carry over).
    pub notes: Vec<(String, String)>,
}

/// Imports `file` in `format` (`table`, `fio-json` or `iperf3-json`) as a
/// run labelled `config` into the database at `db`. What the user fixes
/// (the flags, the file, its contents) is [`StoreError::Input`].
pub fn import_file(
    db: &Path,
    file: &Path,
    format: &str,
    config: &str,
) -> Result<ImportedRun, StoreError> {
    if config.trim().is_empty() {
        return Err(StoreError::Input("--config must not be empty".into()));
    }
    let src = file.display().to_string();
    let bad = |e: String| StoreError::Input(format!("{src}: {e}"));
    // Streamed: memory follows the results, not the file.
    let f = std::fs::File::open(file).map_err(|e| bad(e.to_string()))?;
    // A file or a pipe; a directory or device (/dev/zero) is no input.
    let kind = f.metadata().map(|m| m.file_type());
    let readable = kind.is_ok_and(|k| {
        use std::os::unix::fs::FileTypeExt;
        k.is_file() || k.is_fifo() || k.is_socket()
    });
    if !readable {
        return Err(bad("not a file or a pipe (a directory or a device)".into()));
    }
    let parsed = match format {
        // Row by row into the database: memory of one row.
        "table" => {
            let rows = table_rows(f, &src).map_err(bad)?;
            let stored = Store::open(db)?.import_stream(format, &src, config, rows);
            let (run, tests) = stored.map_err(|e| match e {
                StoreError::Input(m) => bad(m),
                e => e,
            })?;
            let notes = Vec::new();
            return Ok(ImportedRun { run, tests, notes });
        }
        "fio-json" => fio_json(f, &src),
        "iperf3-json" => iperf3_json(f, &src),
        _ => return Err(StoreError::Input(format!("no import format '{format}'"))),
    };
    let tests = parsed.map_err(bad)?;
    let first_note = |t: &Imported| Some((t.name.clone(), t.doc.notes.first()?.clone()));
    let notes = tests.iter().filter_map(first_note).collect();
    let rows = tests.into_iter().map(Ok);
    let (run, tests) = Store::open(db)?.import_stream(format, &src, config, rows)?;
    Ok(ImportedRun { run, tests, notes })
}
