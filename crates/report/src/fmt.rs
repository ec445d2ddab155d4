//! Numbers as people read them: thousands separators, no spurious
//! decimals, sizes as `512`, `4k`, `64k`; and text from runs (test, suite
//! and configuration names, notes, a peer's disclosure) made inert for
//! HTML and Markdown.

use iotoll_model::units::{decimals, format_figure, format_number, group_digits};

/// Text for HTML: `& < > "` as entities.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Text for Markdown, in running text or a table cell: what HTML would
/// read (`& < >`) as entities, Markdown's active characters (`\ ` * _ [ ]
/// | #`) escaped, control characters written as escapes. A test named
/// `<script>` or `a|b` reads as itself.
pub fn md(s: &str) -> String {
    let s = iotoll_model::text::printable(s);
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '#' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// A table value: `52,301`, `47.3`, `2.51`, or `–` when absent (the
/// rounding is `iotoll_model::units`', as every rendering's).
pub fn num(v: Option<f64>) -> String {
    v.and_then(format_figure).unwrap_or_else(|| "–".into())
}

/// A count (connections, errors, retransmits): whole numbers without
/// decimals, anything else as `num`.
pub fn count(v: Option<f64>) -> String {
    match v {
        Some(v) if v.is_finite() => format_number(v),
        _ => "–".into(),
    }
}

/// An axis tick: thousands separators and no trailing zeros (`50,000`,
/// `2.5`, `0`).
pub fn tick(v: f64) -> String {
    if !v.is_finite() {
        return String::new();
    }
    let s = format!("{v:.*}", decimals(v) + 1);
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    if s == "-0" {
        return "0".into();
    }
    group_digits(&s)
}

/// A signed difference in %: `+12.5 %`, `−3.0 %`.
pub fn pct(v: Option<f64>) -> String {
    v.map(|v| format!("{}{:.1} %", if v < 0.0 { "−" } else { "+" }, v.abs()))
        .unwrap_or_else(|| "–".into())
}

/// A byte count as Iometer and fio write it: `512`, `4k`, `64k`, `1m`
/// (binary multiples); a count that is not a whole multiple keeps its
/// digits.
pub fn size(bytes: f64) -> String {
    if bytes >= 1024.0 && bytes.fract() == 0.0 && bytes < 1.8e19 && (bytes as u64) % 1024 == 0 {
        iotoll_model::format_size(bytes as u64)
    } else {
        tick(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        assert_eq!(num(Some(52301.4)), "52,301");
        assert_eq!(num(Some(1234567.0)), "1,234,567");
        assert_eq!(num(Some(47.26)), "47.3");
        assert_eq!(num(Some(2.514)), "2.51");
        assert_eq!(num(Some(-1500.0)), "-1,500");
        assert_eq!(num(Some(0.0)), "0.00");
        assert_eq!(num(Some(0.0694)), "0.069");
        assert_eq!(num(None), "–");
        assert_eq!(num(Some(f64::NAN)), "–");
        assert_eq!(count(Some(4.0)), "4");
        assert_eq!(count(Some(12345.0)), "12,345");
        assert_eq!(count(Some(0.5)), "0.500");
        assert_eq!(tick(50000.0), "50,000");
        assert_eq!(tick(2.5), "2.5");
        assert_eq!(tick(0.0), "0");
        assert_eq!(tick(120.0), "120");
        assert_eq!(size(512.0), "512");
        assert_eq!(size(4096.0), "4k");
        assert_eq!(size(65536.0), "64k");
        assert_eq!(size(1048576.0), "1m");
        assert_eq!(size(1000.0), "1,000");
    }
}
