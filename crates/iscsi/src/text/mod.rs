//! Text data segments (RFC 7143 §6) and the operational-parameter
//! negotiation an initiator runs in the login's operational stage (§13).
//!
//! `decode` expects a complete set of pairs: the caller joins the data
//! segments of PDUs sent with the Continue bit before decoding, because a
//! pair may span PDUs.

mod negotiate;

pub use negotiate::{offer_keys, params_pairs, Negotiation, NegotiationError};

/// RFC 7143 §6.1: key names are at most 63 bytes.
pub const MAX_KEY_LEN: usize = 63;

/// The longest value representation accepted. RFC 7143 caps most values at
/// 255 bytes and a CHAP_C at 1024 bytes of binary (2050 hex characters);
/// decoding does not know the key types, so it applies only the 8192-byte
/// amount of key=value text every implementation must be able to receive.
pub const MAX_VALUE_LEN: usize = 8192;

/// The MaxRecvDataSegmentLength a side is assumed to declare when it says
/// nothing (RFC 7143 §13.12).
pub const DEFAULT_MAX_RECV_DSL: u32 = 8192;

/// Range of the data-length keys (MaxRecvDataSegmentLength, MaxBurstLength,
/// FirstBurstLength): 512 to 2^24-1 (RFC 7143 §13.12-§13.14).
const LEN_MIN: u64 = 512;
const LEN_MAX: u64 = (1 << 24) - 1;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TextError {
    #[error("text pair {index} has no '=': {shown:?}")]
    MissingEquals { index: usize, shown: String },
    #[error("text pair {index} has an empty key")]
    EmptyKey { index: usize },
    #[error("text key {shown:?}... is {len} bytes, more than the 63 allowed")]
    KeyTooLong { shown: String, len: usize },
    #[error("value of text key {key} is {len} bytes, more than the {MAX_VALUE_LEN} accepted")]
    ValueTooLong { key: String, len: usize },
    #[error("text pair {index} is not UTF-8")]
    NotUtf8 { index: usize },
    #[error("text pair {index} is empty (two NUL delimiters in a row)")]
    EmptyPair { index: usize },
    #[error(
        "last text pair is not NUL-terminated (truncated, or a Continue-bit segment decoded alone)"
    )]
    Unterminated,
}

/// Appends each pair as `key=value\0`.
pub fn encode(pairs: &[(impl AsRef<str>, impl AsRef<str>)], out: &mut Vec<u8>) {
    for (k, v) in pairs {
        out.extend_from_slice(k.as_ref().as_bytes());
        out.push(b'=');
        out.extend_from_slice(v.as_ref().as_bytes());
        out.push(0);
    }
}

/// Decodes `key=value\0` pairs in order, duplicates kept (negotiation
/// decides what a repeated key means). NULs after the last pair are padding.
pub fn decode(data: &[u8]) -> Result<Vec<(String, String)>, TextError> {
    let end = data.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    if end == 0 {
        return Ok(Vec::new());
    }
    if end == data.len() {
        return Err(TextError::Unterminated);
    }
    let mut out = Vec::new();
    for (index, raw) in data[..end].split(|&b| b == 0).enumerate() {
        if raw.is_empty() {
            return Err(TextError::EmptyPair { index });
        }
        let eq = raw
            .iter()
            .position(|&b| b == b'=')
            .ok_or_else(|| TextError::MissingEquals {
                index,
                shown: shown(raw),
            })?;
        let (k, v) = (&raw[..eq], &raw[eq + 1..]);
        if k.is_empty() {
            return Err(TextError::EmptyKey { index });
        }
        if k.len() > MAX_KEY_LEN {
            return Err(TextError::KeyTooLong {
                shown: shown(k),
                len: k.len(),
            });
        }
        let key = std::str::from_utf8(k).map_err(|_| TextError::NotUtf8 { index })?;
        if v.len() > MAX_VALUE_LEN {
            return Err(TextError::ValueTooLong {
                key: key.to_string(),
                len: v.len(),
            });
        }
        let value = std::str::from_utf8(v).map_err(|_| TextError::NotUtf8 { index })?;
        out.push((key.to_string(), value.to_string()));
    }
    Ok(out)
}

/// A bounded, lossy rendering of peer bytes for an error message.
fn shown(b: &[u8]) -> String {
    String::from_utf8_lossy(&b[..b.len().min(40)]).into_owned()
}

/// Parses an RFC 7143 §6.1 numerical value: decimal or `0x` hex.
pub fn parse_number(s: &str) -> Option<u64> {
    let (digits, radix) = match s.get(..2) {
        Some("0x" | "0X") => (&s[2..], 16),
        _ => (s, 10),
    };
    // from_str_radix tolerates a leading '+', which the RFC grammar does not.
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

fn yes_no(b: bool) -> &'static str {
    if b {
        "Yes"
    } else {
        "No"
    }
}

fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "Yes" => Some(true),
        "No" => Some(false),
        _ => None,
    }
}

/// The session parameters in force once negotiation is over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Params {
    pub header_digest: bool,
    pub data_digest: bool,
    /// What we declared we receive: the largest data segment the target
    /// may send us.
    pub max_recv_dsl_initiator: u32,
    /// What the target declared it receives: the largest data segment we
    /// may send.
    pub max_recv_dsl_target: u32,
    pub first_burst: u32,
    pub max_burst: u32,
    pub immediate_data: bool,
    pub initial_r2t: bool,
    pub max_outstanding_r2t: u32,
    pub data_pdu_in_order: bool,
    pub data_sequence_in_order: bool,
    pub error_recovery_level: u32,
    pub max_connections: u32,
    pub default_time2wait: u32,
    pub default_time2retain: u32,
}

/// The RFC 7143 §13 defaults, which hold for every key not negotiated.
impl Default for Params {
    fn default() -> Self {
        Params {
            header_digest: false,
            data_digest: false,
            max_recv_dsl_initiator: DEFAULT_MAX_RECV_DSL,
            max_recv_dsl_target: DEFAULT_MAX_RECV_DSL,
            first_burst: 65536,
            max_burst: 262144,
            immediate_data: true,
            initial_r2t: true,
            max_outstanding_r2t: 1,
            data_pdu_in_order: true,
            data_sequence_in_order: true,
            error_recovery_level: 0,
            max_connections: 1,
            default_time2wait: 2,
            default_time2retain: 20,
        }
    }
}

/// What the initiator asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offer {
    /// Want CRC32C header digests; offered as "CRC32C,None" so a target
    /// without them still logs in.
    pub header_digest: bool,
    pub data_digest: bool,
    pub max_recv_dsl: u32,
    pub first_burst: u32,
    pub max_burst: u32,
    pub immediate_data: bool,
    pub initial_r2t: bool,
    pub max_outstanding_r2t: u32,
}

/// Tuned for throughput rather than for the RFC defaults. The burst and
/// segment keys resolve to the minimum of both offers, so offering high
/// lets the target's own configuration decide, which is what a measurement
/// should see; the values are those the Linux initiator (open-iscsi) sends,
/// so every common target is known to accept them.
impl Default for Offer {
    fn default() -> Self {
        Offer {
            // Digests cost CPU on both ends and are off in most deployments.
            header_digest: false,
            data_digest: false,
            // Fewer, larger Data-In PDUs for reads; 256 KiB bounds the
            // receive buffer one PDU needs.
            max_recv_dsl: 262144,
            // Unsolicited data for writes up to 256 KiB without an R2T
            // round trip; the target reserves buffers for it, so it is
            // not pushed to the maximum.
            first_burst: 262144,
            // 2^24-1 rounded down to 1 KiB: the largest legal value.
            max_burst: 16776192,
            // Immediate data and no initial R2T save a round trip per write.
            immediate_data: true,
            initial_r2t: false,
            max_outstanding_r2t: 1,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests;
