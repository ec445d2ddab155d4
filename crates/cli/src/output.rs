//! JSON on stdout; the human renderings are `iotoll_report::text`'s.

pub fn print_json<T: serde::Serialize>(v: &T) -> anyhow::Result<()> {
    let mut s = serde_json::to_string_pretty(v)?;
    s.push('\n');
    use std::io::Write as _;
    std::io::stdout().lock().write_all(s.as_bytes())?;
    Ok(())
}
