//! A round-trip histogram on the console wire: an agent's HDR histogram
//! (nanoseconds, [`iotoll_run::new_histogram`]'s bounds) as the
//! hex of its non-empty buckets, so the console merges the pairs'
//! histograms into the totals' percentiles instead of averaging
//! percentiles. The agent is a peer: what arrives is bounded in size and
//! checked value by value before anything is recorded.
//!
//! Bytes: for each non-empty bucket in increasing order, the gap from the
//! previous bucket's value and the count, both LEB128 varints.

use hdrhistogram::Histogram;
use iotoll_run::new_histogram;

/// Largest encoded histogram accepted (hex characters): a full histogram
/// of these bounds has under 40,000 buckets of at most 20 bytes each; a
/// real window's round trips fill a few hundred.
pub const MAX_HIST_HEX: usize = 2 * 40_000 * 20;

/// The hex text of `h`'s non-empty buckets.
pub fn encode(h: &Histogram<u64>) -> String {
    let mut bytes = Vec::new();
    let mut prev = 0u64;
    for v in h.iter_recorded() {
        let value = h.lowest_equivalent(v.value_iterated_to());
        put_varint(&mut bytes, value - prev);
        put_varint(&mut bytes, v.count_at_value());
        prev = value;
    }
    hex::encode(bytes)
}

/// The histogram `text` encodes, holding exactly `count` values (the
/// transactions the report claims), or what is wrong with it.
pub fn decode(text: &str, count: u64) -> Result<Histogram<u64>, String> {
    if text.len() > MAX_HIST_HEX {
        return Err(format!(
            "round-trip histogram of {} characters is over the limit of {MAX_HIST_HEX}",
            text.len()
        ));
    }
    let bytes = hex::decode(text).map_err(|e| format!("round-trip histogram is not hex: {e}"))?;
    let mut h = new_histogram();
    let (mut at, mut value, mut total) = (0usize, 0u64, 0u64);
    while at < bytes.len() {
        let gap = get_varint(&bytes, &mut at)?;
        let n = get_varint(&bytes, &mut at)?;
        // Buckets strictly increase (the first may start at the lowest value).
        if gap == 0 && total > 0 {
            return Err("round-trip histogram repeats a bucket".into());
        }
        value = (value.checked_add(gap))
            .filter(|v| *v >= 1 && *v <= h.high())
            .ok_or("round-trip histogram has a value out of range")?;
        if n == 0 {
            return Err("round-trip histogram has an empty bucket".into());
        }
        total = total
            .checked_add(n)
            .filter(|t| *t <= count)
            .ok_or_else(|| {
                format!("round-trip histogram holds more than the {count} transactions reported")
            })?;
        h.record_n(value, n)
            .map_err(|e| format!("round-trip histogram: {e:?}"))?;
    }
    if total != count {
        return Err(format!(
            "round-trip histogram holds {total} values for {count} transactions reported"
        ));
    }
    Ok(h)
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn get_varint(b: &[u8], at: &mut usize) -> Result<u64, String> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let Some(&byte) = b.get(*at) else {
            return Err("round-trip histogram is truncated".into());
        };
        *at += 1;
        let bits = u64::from(byte & 0x7f);
        if shift == 63 && bits > 1 {
            break;
        }
        v |= bits << shift;
        if byte & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err("round-trip histogram has a number over 64 bits".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Histogram<u64> {
        let mut h = new_histogram();
        for (v, n) in [(1u64, 3u64), (20_000, 500), (35_000, 40), (9_000_000, 1)] {
            h.record_n(v, n).unwrap();
        }
        h
    }

    #[test]
    fn round_trip_keeps_every_bucket() {
        let h = sample();
        let back = decode(&encode(&h), h.len()).unwrap();
        assert_eq!(back, h);
        for q in [0.5, 0.9, 0.99, 0.999] {
            assert_eq!(back.value_at_quantile(q), h.value_at_quantile(q));
        }
        let empty = new_histogram();
        assert!(decode(&encode(&empty), 0).unwrap().is_empty());
    }

    #[test]
    fn truncated_is_refused() {
        let text = encode(&sample());
        for cut in [2, text.len() / 4 * 2, text.len() - 2] {
            let e = decode(&text[..cut], 544).unwrap_err();
            assert!(e.contains("truncated") || e.contains("holds"), "{cut}: {e}");
        }
        // Half a byte: not hex.
        let e = decode(&text[..text.len() - 1], 544).unwrap_err();
        assert!(e.contains("not hex"), "{e}");
    }

    #[test]
    fn oversized_is_refused_before_decoding() {
        let e = decode(&"00".repeat(MAX_HIST_HEX), 0).unwrap_err();
        assert!(e.contains("over the limit"), "{e}");
    }

    #[test]
    fn garbage_is_refused() {
        let count = sample().len();
        for (text, what) in [
            ("zz", "not hex"),
            // Eleven continuation bytes: over 64 bits.
            ("ffffffffffffffffffffff01", "over 64 bits"),
            // A value past the histogram's highest (1 hour).
            ("ffffffffffffffff7f01", "out of range"),
            // Value 0.
            ("0001", "out of range"),
            // An empty bucket.
            ("0100", "empty bucket"),
            // The same bucket twice.
            ("01010001", "repeats"),
        ] {
            let e = decode(text, 2).unwrap_err();
            assert!(e.contains(what), "{text}: {e}");
        }
        // More values than transactions, and fewer.
        let text = encode(&sample());
        assert!(decode(&text, count - 1).unwrap_err().contains("more than"));
        assert!(decode(&text, count + 1).unwrap_err().contains("holds"));
    }
}
