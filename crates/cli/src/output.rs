//! JSON on stdout; the human renderings are `iotoll_report::text`'s.

/// `v` on stdout: one JSON document with `--json`, else as `text` renders it.
pub fn show<T: serde::Serialize>(
    json: bool,
    v: &T,
    text: impl FnOnce(&T) -> String,
) -> anyhow::Result<()> {
    if json {
        return print_json(v);
    }
    print!("{}", text(v));
    Ok(())
}

pub fn print_json<T: serde::Serialize>(v: &T) -> anyhow::Result<()> {
    let mut s = serde_json::to_string_pretty(v)?;
    s.push('\n');
    use std::io::Write as _;
    std::io::stdout().lock().write_all(s.as_bytes())?;
    Ok(())
}
