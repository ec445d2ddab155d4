//! Size and duration parsing, as docs/design.md states them: sizes are binary
//! multiples (k = 1024, as Iometer and fio), durations take ms/s/m/h.

use std::time::Duration;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnitError {
    #[error("empty value")]
    Empty,
    #[error("'{0}' is not a size: use a whole number with an optional suffix k, m, g or t (binary multiples: 4k = 4096 bytes)")]
    BadSize(String),
    #[error("'{0}' is too large")]
    Overflow(String),
    #[error("'{0}' is not a rate: use bits per second with an optional suffix k, m or g (decimal, as iperf's -b: 500m = 500,000,000 bit/s), e.g. 100m, 1.5g; leave it out for an unlimited sender")]
    BadRate(String),
    #[error("'{0}' is not a duration: use a whole number with a unit, e.g. 500ms, 4s, 2m, 1h")]
    BadDuration(String),
}

/// Parses `512`, `4k`, `64K`, `1m`, `4g`, `1t` (also `4KiB`, `4kb`: all binary).
/// Zero is accepted here; callers that need a positive size check it, so the
/// error can name their flag.
pub fn parse_size(s: &str) -> Result<u64, UnitError> {
    let (num, suffix) = number_and_unit(s, |c| c.is_ascii_digit())?;
    if num.is_empty() {
        return Err(UnitError::BadSize(s.to_string()));
    }
    let n: u64 = num
        .parse()
        .map_err(|_| UnitError::Overflow(s.to_string()))?;
    let shift = match suffix.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return Err(UnitError::BadSize(s.to_string())),
    };
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| UnitError::Overflow(s.to_string()))
}

/// `s`, trimmed, split where its number (the characters `in_number`
/// takes) ends: `4k` -> (`4`, `k`).
fn number_and_unit(s: &str, in_number: impl Fn(char) -> bool) -> Result<(&str, &str), UnitError> {
    let t = s.trim();
    if t.is_empty() {
        return Err(UnitError::Empty);
    }
    Ok(t.split_at(t.find(|c| !in_number(c)).unwrap_or(t.len())))
}

/// Parses a rate in bits per second: `500m`, `1.5g`, `64k`, `1000000`
/// (decimal multiples, as iperf's `-b`, unlike sizes: a link's rate is
/// decimal). Zero and fractions of a bit are refused.
pub fn parse_rate(s: &str) -> Result<u64, UnitError> {
    let bad = || UnitError::BadRate(s.to_string());
    let (num, suffix) = number_and_unit(s, |c| c.is_ascii_digit() || c == '.')?;
    let n: f64 = num.parse().map_err(|_| bad())?;
    let mult = match suffix.to_ascii_lowercase().as_str() {
        "" => 1e0,
        "k" => 1e3,
        "m" => 1e6,
        "g" => 1e9,
        _ => return Err(bad()),
    };
    let bits = n * mult;
    if !bits.is_finite() || bits < 1.0 || bits.fract() != 0.0 {
        return Err(bad());
    }
    if bits > u64::MAX as f64 / 2.0 {
        return Err(UnitError::Overflow(s.to_string()));
    }
    Ok(bits as u64)
}

/// Renders a rate in bits per second the way a user would type it back:
/// `500m`, `1g`, `1500k`, `123`.
pub fn format_rate(bits: u64) -> String {
    for (unit, suffix) in [(1_000_000_000, "g"), (1_000_000, "m"), (1_000, "k")] {
        if bits >= unit && bits % unit == 0 {
            return format!("{}{suffix}", bits / unit);
        }
    }
    bits.to_string()
}

/// Renders a byte count the way a user would type it back: `4k`, `1m`, `1536`.
pub fn format_size(bytes: u64) -> String {
    const UNITS: [(u32, &str); 4] = [(40, "t"), (30, "g"), (20, "m"), (10, "k")];
    for (shift, suffix) in UNITS {
        let unit = 1u64 << shift;
        if bytes >= unit && bytes % unit == 0 {
            return format!("{}{}", bytes / unit, suffix);
        }
    }
    bytes.to_string()
}

/// Decimals a figure is shown with: none from 100 up, one from 10, two
/// from 1, three below and four below 0.01 (three significant digits at
/// least). Every rendering (terminal, Markdown, HTML, notes) rounds by it.
pub fn decimals(v: f64) -> usize {
    match v.abs() {
        a if a >= 100.0 => 0,
        a if a >= 10.0 => 1,
        a if a >= 1.0 || a == 0.0 => 2,
        a if a >= 0.01 => 3,
        _ => 4,
    }
}

/// Groups the integer digits of `s` (an optional sign, digits, an optional
/// fraction) by thousands with commas: `-1234.5` -> `-1,234.5`.
pub fn group_digits(s: &str) -> String {
    let (sign, rest) = s.strip_prefix('-').map_or(("", s), |r| ("-", r));
    let (int, frac) = rest.split_at(rest.find('.').unwrap_or(rest.len()));
    let mut out = String::with_capacity(s.len() + int.len() / 3);
    out.push_str(sign);
    for (i, ch) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out.push_str(frac);
    out
}

/// A figure with the decimals its size calls for ([`decimals`]), digits
/// grouped: `52,301`, `47.3`, `2.51`, `0.069`, `0.00`; None when it is not
/// finite.
pub fn format_figure(v: f64) -> Option<String> {
    // `+ 0.0` makes -0.0 plain 0: exactly zero never reads as negative.
    let v = v + 0.0;
    v.is_finite()
        .then(|| group_digits(&format!("{v:.*}", decimals(v))))
}

/// A measured figure as a reader wants it: as [`format_figure`], but whole
/// numbers without decimals (`1,234,568`, `20.0`, `0.510`, `7`, `0`); `-`
/// for a non-finite value.
pub fn format_number(v: f64) -> String {
    if v.is_finite() && v.fract() == 0.0 {
        return group_digits(&format!("{:.0}", v + 0.0));
    }
    format_figure(v).unwrap_or_else(|| "-".into())
}

/// Parses `500ms`, `4s`, `2m`, `1h`, `1.5s`; a bare number means seconds.
pub fn parse_duration(s: &str) -> Result<Duration, UnitError> {
    let (num, unit) = number_and_unit(s, |c| c.is_ascii_digit() || c == '.')?;
    let value: f64 = num
        .parse()
        .map_err(|_| UnitError::BadDuration(s.to_string()))?;
    let secs_per_unit = match unit.trim() {
        "" | "s" | "sec" => 1.0,
        "ms" => 1e-3,
        "us" => 1e-6,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => return Err(UnitError::BadDuration(s.to_string())),
    };
    let secs = value * secs_per_unit;
    if !secs.is_finite() || secs > 1e9 {
        return Err(UnitError::Overflow(s.to_string()));
    }
    Ok(Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("512"), Ok(512));
        assert_eq!(parse_size("4k"), Ok(4096));
        assert_eq!(parse_size("64K"), Ok(65536));
        assert_eq!(parse_size("1m"), Ok(1 << 20));
        assert_eq!(parse_size("4g"), Ok(4 << 30));
        assert_eq!(parse_size("4KiB"), Ok(4096));
        assert_eq!(parse_size("0"), Ok(0));
        assert!(matches!(parse_size("-4k"), Err(UnitError::BadSize(_))));
        assert!(matches!(parse_size("4x"), Err(UnitError::BadSize(_))));
        assert!(matches!(parse_size("k"), Err(UnitError::BadSize(_))));
        assert!(matches!(parse_size("1.5k"), Err(UnitError::BadSize(_))));
        assert!(matches!(
            parse_size("99999999999t"),
            Err(UnitError::Overflow(_))
        ));
        assert_eq!(parse_size(""), Err(UnitError::Empty));
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("4s"), Ok(Duration::from_secs(4)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("3"), Ok(Duration::from_secs(3)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert!(parse_duration("-1s").is_err());
        assert!(parse_duration("4d").is_err());
        assert!(parse_duration("s").is_err());
    }

    #[test]
    fn figures_round_alike_everywhere() {
        assert_eq!(format_number(1234567.8), "1,234,568");
        assert_eq!(format_number(100.0), "100");
        assert_eq!(format_number(12.345), "12.3");
        assert_eq!(format_number(1.2345), "1.23");
        assert_eq!(format_number(0.0694), "0.069");
        assert_eq!(format_number(-4321.0), "-4,321");
        assert_eq!(format_number(-0.0), "0");
        assert_eq!(format_number(f64::NAN), "-");
        assert_eq!(
            (format_number(0.0), format_number(7.0)),
            ("0".into(), "7".into())
        );
        assert_eq!(format_figure(0.0).as_deref(), Some("0.00"));
        assert_eq!(format_figure(-0.0).as_deref(), Some("0.00"));
        assert_eq!(format_figure(-1500.0).as_deref(), Some("-1,500"));
        assert_eq!(format_figure(0.001234).as_deref(), Some("0.0012"));
        assert_eq!(format_figure(f64::INFINITY), None);
    }

    #[test]
    fn rates_are_decimal_bits() {
        assert_eq!(parse_rate("500m"), Ok(500_000_000));
        assert_eq!(parse_rate("1.5g"), Ok(1_500_000_000));
        assert_eq!(parse_rate("64K"), Ok(64_000));
        assert_eq!(parse_rate("1000"), Ok(1000));
        for bad in ["0", "0m", "x", "1.5", "5q", "-1m", "0.0001k", "."] {
            assert!(parse_rate(bad).is_err(), "{bad}");
        }
        assert!(matches!(parse_rate("1e30g"), Err(UnitError::BadRate(_))));
        for r in [500_000_000, 1_000_000_000, 1_500_000, 123] {
            assert_eq!(parse_rate(&format_rate(r)), Ok(r));
        }
        assert_eq!(format_rate(950_000_000), "950m");
    }

    #[test]
    fn format_round_trips_common_sizes() {
        assert_eq!(format_size(4096), "4k");
        assert_eq!(format_size(1536), "1536");
        assert_eq!(format_size(1 << 30), "1g");
    }

    proptest! {
        #[test]
        fn size_roundtrip(n in 0u64..(1 << 40)) {
            prop_assert_eq!(parse_size(&format_size(n)), Ok(n));
        }

        #[test]
        fn suffix_multiplies(n in 0u64..1_000_000, s in prop::sample::select(vec![("k", 10u32), ("M", 20), ("g", 30)])) {
            prop_assert_eq!(parse_size(&format!("{n}{}", s.0)), Ok(n << s.1));
        }

        #[test]
        fn parse_size_never_panics(s in ".{0,12}") {
            let _ = parse_size(&s);
            let _ = parse_duration(&s);
        }
    }
}
