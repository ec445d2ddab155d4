//! Human and JSON renderings of a result document: JSON here, the human
//! table in `iotoll_report::text`.

/// The compact table printed after a run.
pub use iotoll_report::text::result as human;

pub fn print_json<T: serde::Serialize>(v: &T) -> anyhow::Result<()> {
    let mut s = serde_json::to_string_pretty(v)?;
    s.push('\n');
    use std::io::Write as _;
    std::io::stdout().lock().write_all(s.as_bytes())?;
    Ok(())
}
