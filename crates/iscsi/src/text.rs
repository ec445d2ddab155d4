//! Text data segments (RFC 7143 §6) and the operational-parameter
//! negotiation an initiator runs in the login's operational stage (§13).
//!
//! `decode` expects a complete set of pairs: the caller joins the data
//! segments of PDUs sent with the Continue bit before decoding, because a
//! pair may span PDUs.

use std::collections::{BTreeMap, BTreeSet};

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
pub fn encode(pairs: &[(&str, &str)], out: &mut Vec<u8>) {
    for (k, v) in pairs {
        out.extend_from_slice(k.as_bytes());
        out.push(b'=');
        out.extend_from_slice(v.as_bytes());
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

// Session-wide values we want but do not expose in `Offer`. Time2Retain 0:
// at ErrorRecoveryLevel 0 we never reinstate tasks after a connection loss,
// so the target need not keep them.
const ERL: u32 = 0;
const MAX_CONNECTIONS: u32 = 1;
const TIME2WAIT: u32 = 2;
const TIME2RETAIN: u32 = 0;

/// The RFC 7143 §6.2.2 result functions of the keys we negotiate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rule {
    /// The responder picks one value of the originator's list.
    List,
    And,
    Or,
    Min(u64, u64),
    Max(u64, u64),
}

fn rule(key: &str) -> Option<Rule> {
    Some(match key {
        "HeaderDigest" | "DataDigest" => Rule::List,
        "ImmediateData" => Rule::And,
        "InitialR2T" | "DataPDUInOrder" | "DataSequenceInOrder" => Rule::Or,
        "MaxBurstLength" | "FirstBurstLength" => Rule::Min(LEN_MIN, LEN_MAX),
        "MaxOutstandingR2T" | "MaxConnections" => Rule::Min(1, 65535),
        "ErrorRecoveryLevel" => Rule::Min(0, 2),
        "DefaultTime2Retain" => Rule::Min(0, 3600),
        "DefaultTime2Wait" => Rule::Max(0, 3600),
        _ => return None,
    })
}

/// The operational keys an initiator sends in its first operational-stage
/// Login Request. Markers are left out: RFC 7143 obsoletes them and a
/// key not sent keeps its "No" default.
pub fn offer_keys(offer: &Offer) -> Vec<(String, String)> {
    let digest = |want: bool| if want { "CRC32C,None" } else { "None" };
    let pairs: [(&str, String); 14] = [
        ("HeaderDigest", digest(offer.header_digest).into()),
        ("DataDigest", digest(offer.data_digest).into()),
        ("MaxRecvDataSegmentLength", offer.max_recv_dsl.to_string()),
        ("ErrorRecoveryLevel", ERL.to_string()),
        ("InitialR2T", yes_no(offer.initial_r2t).into()),
        ("ImmediateData", yes_no(offer.immediate_data).into()),
        ("MaxBurstLength", offer.max_burst.to_string()),
        ("FirstBurstLength", offer.first_burst.to_string()),
        ("MaxOutstandingR2T", offer.max_outstanding_r2t.to_string()),
        ("DataPDUInOrder", "Yes".into()),
        ("DataSequenceInOrder", "Yes".into()),
        ("MaxConnections", MAX_CONNECTIONS.to_string()),
        ("DefaultTime2Wait", TIME2WAIT.to_string()),
        ("DefaultTime2Retain", TIME2RETAIN.to_string()),
    ];
    pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

/// The target's keys and values are its word: shown, never obeyed by a
/// terminal.
fn p(s: &str) -> std::borrow::Cow<'_, str> {
    iotoll_model::text::printable(s)
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NegotiationError {
    #[error("target rejected {}={offered}, which iotoll needs", p(.key))]
    Rejected { key: String, offered: String },
    #[error("target does not understand {} (offered {}={offered}), a key every RFC 7143 target supports", p(.key), p(.key))]
    NotUnderstood { key: String, offered: String },
    #[error("target answered {}={} to our {}={offered}: {why}", p(.key), p(.value), p(.key))]
    OutsideOffer {
        key: String,
        value: String,
        offered: String,
        why: &'static str,
    },
    #[error("target sent {}={}: {why}", p(.key), p(.value))]
    BadValue {
        key: String,
        value: String,
        why: &'static str,
    },
    #[error("target negotiated {} twice: {}, then {}", p(.key), p(.first), p(.second))]
    Twice {
        key: String,
        first: String,
        second: String,
    },
}

/// The initiator's side of operational negotiation: built from the offer
/// that was sent, fed every pair the target returns.
#[derive(Debug, Clone)]
pub struct Negotiation {
    offer: Offer,
    params: Params,
    /// Keys we offered and the value sent, not yet answered.
    pending: BTreeMap<String, String>,
    /// Keys settled, with the value that settled them, to spot a target
    /// negotiating one twice.
    settled: BTreeMap<String, String>,
    /// Keys the target answered Irrelevant: they keep their defaults.
    irrelevant: BTreeSet<String>,
    target_alias: Option<String>,
    target_portal_group_tag: Option<u16>,
}

impl Negotiation {
    /// Starts a negotiation in which `offer_keys(&offer)` has been sent.
    pub fn new(offer: Offer) -> Negotiation {
        let pending = offer_keys(&offer)
            .into_iter()
            .filter(|(k, _)| k != "MaxRecvDataSegmentLength")
            .collect();
        let params = Params {
            max_recv_dsl_initiator: offer.max_recv_dsl,
            ..Params::default()
        };
        Negotiation {
            offer,
            params,
            pending,
            settled: BTreeMap::new(),
            irrelevant: BTreeSet::new(),
            target_alias: None,
            target_portal_group_tag: None,
        }
    }

    /// Applies one Login Response's pairs. Returns the pairs we must send
    /// back: answers to keys the target offered on its own.
    pub fn apply_response(
        &mut self,
        pairs: &[(String, String)],
    ) -> Result<Vec<(String, String)>, NegotiationError> {
        let mut answers = Vec::new();
        for (key, value) in pairs {
            if let Some(a) = self.apply_one(key, value)? {
                answers.push((key.clone(), a));
            }
        }
        Ok(answers)
    }

    fn apply_one(&mut self, key: &str, value: &str) -> Result<Option<String>, NegotiationError> {
        let bad = |why| NegotiationError::BadValue {
            key: key.to_string(),
            value: value.to_string(),
            why,
        };
        match key {
            // Declarative: what the target receives bounds what we send.
            "MaxRecvDataSegmentLength" => {
                let n = parse_number(value)
                    .filter(|n| (LEN_MIN..=LEN_MAX).contains(n))
                    .ok_or_else(|| bad("expected a number from 512 to 16777215"))?;
                self.params.max_recv_dsl_target = n as u32;
                return Ok(None);
            }
            "TargetAlias" => {
                self.target_alias = Some(value.to_string());
                return Ok(None);
            }
            "TargetPortalGroupTag" => {
                let t = parse_number(value)
                    .and_then(|n| u16::try_from(n).ok())
                    .ok_or_else(|| bad("expected a number from 0 to 65535"))?;
                self.target_portal_group_tag = Some(t);
                return Ok(None);
            }
            // Redirection and SendTargets data: the login code reads
            // these itself; nothing to negotiate.
            "TargetAddress" => return Ok(None),
            _ => {}
        }

        let special = matches!(value, "NotUnderstood" | "Irrelevant" | "Reject");
        if let Some(offered) = self.pending.remove(key) {
            if special {
                return self.special_answer(key, value, offered).map(|()| None);
            }
            let outcome = check_answer(key, value, &offered, rule(key))?;
            self.set(key, &outcome);
            self.settled.insert(key.to_string(), value.to_string());
            return Ok(None);
        }
        // Answering a special value would only invite another one back.
        if special {
            return Ok(None);
        }
        if let Some(first) = self.settled.get(key) {
            if first == value {
                return Ok(None);
            }
            return Err(NegotiationError::Twice {
                key: key.to_string(),
                first: first.clone(),
                second: value.to_string(),
            });
        }
        let answer = match rule(key) {
            Some(r) => self.answer_offer(key, value, r),
            // RFC 7143 §13.26: a responder SHOULD answer the obsolete
            // marker keys Reject and MAY answer No; "No" also satisfies an
            // RFC 3720 target, which knows them.
            None if matches!(key, "IFMarker" | "OFMarker") => "No".to_string(),
            None if matches!(key, "IFMarkInt" | "OFMarkInt") => "Reject".to_string(),
            None => "NotUnderstood".to_string(),
        };
        self.settled.insert(key.to_string(), value.to_string());
        Ok(Some(answer))
    }

    fn special_answer(
        &mut self,
        key: &str,
        value: &str,
        offered: String,
    ) -> Result<(), NegotiationError> {
        let key_s = key.to_string();
        match value {
            // The key does not apply in this session (e.g. FirstBurstLength
            // with InitialR2T=Yes and ImmediateData=No): the default holds.
            "Irrelevant" => {
                self.irrelevant.insert(key_s.clone());
                self.settled.insert(key_s, value.to_string());
                Ok(())
            }
            // Every key we send is mandatory in RFC 7143 and offered within
            // its range, so either answer means a broken or incompatible
            // target; running on with silently different parameters would
            // misreport the measurement.
            "Reject" => Err(NegotiationError::Rejected {
                key: key_s,
                offered,
            }),
            _ => Err(NegotiationError::NotUnderstood {
                key: key_s,
                offered,
            }),
        }
    }

    /// Our answer to a key the target offered and we did not, computed by
    /// the key's result function from what we would have offered. An
    /// offer we cannot parse is answered Reject (RFC 7143 §6.2), leaving
    /// the default in force.
    fn answer_offer(&mut self, key: &str, value: &str, r: Rule) -> String {
        let ours = self.preference(key);
        let answer = match r {
            Rule::List => {
                let acceptable: Vec<&str> = ours.split(',').collect();
                value
                    .split(',')
                    .find(|v| acceptable.contains(v))
                    .map(str::to_string)
            }
            Rule::And | Rule::Or => parse_bool(value).and_then(|theirs| {
                let mine = parse_bool(&ours)?;
                let v = if r == Rule::And {
                    mine && theirs
                } else {
                    mine || theirs
                };
                Some(yes_no(v).to_string())
            }),
            Rule::Min(lo, hi) | Rule::Max(lo, hi) => parse_number(value)
                .filter(|n| (lo..=hi).contains(n))
                .and_then(|theirs| {
                    let mine = parse_number(&ours)?;
                    let v = if matches!(r, Rule::Min(..)) {
                        mine.min(theirs)
                    } else {
                        mine.max(theirs)
                    };
                    Some(v.to_string())
                }),
        };
        match answer {
            Some(a) => {
                self.set(key, &a);
                a
            }
            None => "Reject".to_string(),
        }
    }

    /// What we would offer for `key`, in its wire form.
    fn preference(&self, key: &str) -> String {
        offer_keys(&self.offer)
            .into_iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
            .unwrap_or_default()
    }

    /// Records a checked outcome; the value has passed its key's range.
    fn set(&mut self, key: &str, v: &str) {
        let p = &mut self.params;
        let n = || parse_number(v).map_or(0, |n| n as u32);
        match key {
            "HeaderDigest" => p.header_digest = v == "CRC32C",
            "DataDigest" => p.data_digest = v == "CRC32C",
            "ImmediateData" => p.immediate_data = v == "Yes",
            "InitialR2T" => p.initial_r2t = v == "Yes",
            "DataPDUInOrder" => p.data_pdu_in_order = v == "Yes",
            "DataSequenceInOrder" => p.data_sequence_in_order = v == "Yes",
            "MaxBurstLength" => p.max_burst = n(),
            "FirstBurstLength" => p.first_burst = n(),
            "MaxOutstandingR2T" => p.max_outstanding_r2t = n(),
            "MaxConnections" => p.max_connections = n(),
            "ErrorRecoveryLevel" => p.error_recovery_level = n(),
            "DefaultTime2Retain" => p.default_time2retain = n(),
            "DefaultTime2Wait" => p.default_time2wait = n(),
            _ => {}
        }
    }

    /// Keys offered that the target has not answered yet. When login ends
    /// with some left, they keep their RFC defaults in `params`.
    pub fn unanswered(&self) -> Vec<&str> {
        self.pending.keys().map(String::as_str).collect()
    }

    pub fn target_alias(&self) -> Option<&str> {
        self.target_alias.as_deref()
    }

    pub fn target_portal_group_tag(&self) -> Option<u16> {
        self.target_portal_group_tag
    }

    /// The parameters in force. FirstBurstLength is capped at
    /// MaxBurstLength (RFC 7143 §13.14): a target configured with a larger
    /// first burst than max burst would otherwise have us send more
    /// unsolicited data than a burst may hold, and sending less than
    /// allowed is always legal.
    pub fn params(&self) -> Params {
        let mut p = self.params.clone();
        p.first_burst = p.first_burst.min(p.max_burst);
        p
    }
}

/// The parameters in force as key=value pairs, for a run's disclosure.
/// `TargetMaxRecvDataSegmentLength` is the target's declaration (what we
/// may send); `MaxRecvDataSegmentLength` ours (what it may send us).
pub fn params_pairs(p: &Params) -> Vec<(String, String)> {
    let digest = |on: bool| if on { "CRC32C" } else { "None" };
    let pairs: [(&str, String); 15] = [
        ("HeaderDigest", digest(p.header_digest).into()),
        ("DataDigest", digest(p.data_digest).into()),
        (
            "MaxRecvDataSegmentLength",
            p.max_recv_dsl_initiator.to_string(),
        ),
        (
            "TargetMaxRecvDataSegmentLength",
            p.max_recv_dsl_target.to_string(),
        ),
        ("FirstBurstLength", p.first_burst.to_string()),
        ("MaxBurstLength", p.max_burst.to_string()),
        ("ImmediateData", yes_no(p.immediate_data).into()),
        ("InitialR2T", yes_no(p.initial_r2t).into()),
        ("MaxOutstandingR2T", p.max_outstanding_r2t.to_string()),
        ("DataPDUInOrder", yes_no(p.data_pdu_in_order).into()),
        (
            "DataSequenceInOrder",
            yes_no(p.data_sequence_in_order).into(),
        ),
        ("ErrorRecoveryLevel", p.error_recovery_level.to_string()),
        ("MaxConnections", p.max_connections.to_string()),
        ("DefaultTime2Wait", p.default_time2wait.to_string()),
        ("DefaultTime2Retain", p.default_time2retain.to_string()),
    ];
    pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

/// Checks the target's answer to our offer against the key's result
/// function and returns the outcome in wire form.
fn check_answer(
    key: &str,
    value: &str,
    offered: &str,
    r: Option<Rule>,
) -> Result<String, NegotiationError> {
    let outside = |why| NegotiationError::OutsideOffer {
        key: key.to_string(),
        value: value.to_string(),
        offered: offered.to_string(),
        why,
    };
    match r {
        Some(Rule::List) => {
            if value.contains(',') {
                return Err(outside("a responder picks one value, not a list"));
            }
            if !offered.split(',').any(|o| o == value) {
                return Err(outside("not one of the values we offered"));
            }
        }
        Some(r @ (Rule::And | Rule::Or)) => {
            let theirs = parse_bool(value).ok_or_else(|| outside("expected Yes or No"))?;
            let mine = offered == "Yes";
            // AND with our No can only be No; OR with our Yes only Yes.
            if r == Rule::And && !mine && theirs {
                return Err(outside("the result function is AND, so it must be No"));
            }
            if r == Rule::Or && mine && !theirs {
                return Err(outside("the result function is OR, so it must be Yes"));
            }
        }
        Some(Rule::Min(lo, hi)) | Some(Rule::Max(lo, hi)) => {
            let theirs = parse_number(value).ok_or_else(|| outside("not a number"))?;
            if !(lo..=hi).contains(&theirs) {
                return Err(outside("outside the range RFC 7143 allows"));
            }
            let mine = parse_number(offered).unwrap_or(theirs);
            if matches!(r, Some(Rule::Min(..))) && theirs > mine {
                return Err(outside(
                    "the result function is minimum, so it may not exceed our offer",
                ));
            }
            if matches!(r, Some(Rule::Max(..))) && theirs < mine {
                return Err(outside(
                    "the result function is maximum, so it may not be below our offer",
                ));
            }
            return Ok(theirs.to_string());
        }
        None => {}
    }
    Ok(value.to_string())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn encode_decode_roundtrip() {
        let mut out = Vec::new();
        encode(
            &[("A", "1"), ("TargetAlias", "disk = one"), ("E", "")],
            &mut out,
        );
        assert_eq!(out, b"A=1\0TargetAlias=disk = one\0E=\0");
        out.extend_from_slice(&[0, 0]);
        assert_eq!(
            decode(&out).unwrap(),
            pairs(&[("A", "1"), ("TargetAlias", "disk = one"), ("E", "")])
        );
        assert_eq!(decode(b"").unwrap(), vec![]);
        assert_eq!(decode(b"\0\0\0\0").unwrap(), vec![]);
    }

    #[test]
    fn decode_rejects() {
        assert!(matches!(
            decode(b"A=1\0B\0"),
            Err(TextError::MissingEquals { index: 1, .. })
        ));
        assert!(matches!(
            decode(b"=1\0"),
            Err(TextError::EmptyKey { index: 0 })
        ));
        assert!(matches!(
            decode(b"A=1\0\0B=2\0"),
            Err(TextError::EmptyPair { index: 1 })
        ));
        assert!(matches!(
            decode(b"A=\xff\0"),
            Err(TextError::NotUtf8 { index: 0 })
        ));
        assert_eq!(decode(b"A=1"), Err(TextError::Unterminated));
        let k63 = format!("{}=v\0", "K".repeat(63));
        assert!(decode(k63.as_bytes()).is_ok());
        let k64 = format!("{}=v\0", "K".repeat(64));
        assert!(matches!(
            decode(k64.as_bytes()),
            Err(TextError::KeyTooLong { len: 64, .. })
        ));
        let v = format!("CHAP_C=0x{}\0", "a".repeat(MAX_VALUE_LEN - 2));
        assert!(decode(v.as_bytes()).is_ok());
        let v = format!("CHAP_C=0x{}\0", "a".repeat(MAX_VALUE_LEN - 1));
        assert!(matches!(
            decode(v.as_bytes()),
            Err(TextError::ValueTooLong { .. })
        ));
    }

    #[test]
    fn numbers() {
        assert_eq!(parse_number("8192"), Some(8192));
        assert_eq!(parse_number("0x2000"), Some(8192));
        assert_eq!(parse_number("0X2000"), Some(8192));
        assert_eq!(parse_number("+5"), None);
        assert_eq!(parse_number("0x"), None);
        assert_eq!(parse_number(""), None);
        assert_eq!(parse_number("12a"), None);
        assert_eq!(parse_number("99999999999999999999999"), None);
    }

    #[test]
    fn offer_is_consistent() {
        let o = Offer::default();
        assert!(o.first_burst <= o.max_burst);
        let keys = offer_keys(&o);
        let get = |k: &str| keys.iter().find(|(kk, _)| kk == k).map(|(_, v)| v.as_str());
        assert_eq!(get("HeaderDigest"), Some("None"));
        assert_eq!(get("ErrorRecoveryLevel"), Some("0"));
        assert_eq!(get("InitialR2T"), Some("No"));
        assert_eq!(get("MaxConnections"), Some("1"));
        let keys = offer_keys(&Offer {
            data_digest: true,
            ..o
        });
        assert!(keys.contains(&("DataDigest".into(), "CRC32C,None".into())));
    }

    /// A typical LIO answer to our default offer.
    fn lio_answer() -> Vec<(String, String)> {
        pairs(&[
            ("TargetAlias", "LIO Target"),
            ("TargetPortalGroupTag", "1"),
            ("HeaderDigest", "None"),
            ("DataDigest", "None"),
            ("MaxRecvDataSegmentLength", "8192"),
            ("ErrorRecoveryLevel", "0"),
            ("InitialR2T", "Yes"),
            ("ImmediateData", "Yes"),
            ("MaxBurstLength", "262144"),
            ("FirstBurstLength", "65536"),
            ("MaxOutstandingR2T", "1"),
            ("DataPDUInOrder", "Yes"),
            ("DataSequenceInOrder", "Yes"),
            ("MaxConnections", "1"),
            ("DefaultTime2Wait", "2"),
            ("DefaultTime2Retain", "0"),
        ])
    }

    #[test]
    fn full_negotiation() {
        let mut n = Negotiation::new(Offer::default());
        assert_eq!(n.apply_response(&lio_answer()).unwrap(), vec![]);
        assert!(n.unanswered().is_empty());
        let p = n.params();
        assert_eq!(p.max_recv_dsl_initiator, 262144);
        assert_eq!(p.max_recv_dsl_target, 8192);
        assert_eq!(p.max_burst, 262144);
        assert_eq!(p.first_burst, 65536);
        assert!(p.initial_r2t);
        assert!(p.immediate_data);
        assert_eq!(p.default_time2retain, 0);
        assert_eq!(n.target_alias(), Some("LIO Target"));
        assert_eq!(n.target_portal_group_tag(), Some(1));
    }

    #[test]
    fn absent_keys_keep_defaults() {
        let mut n = Negotiation::new(Offer::default());
        n.apply_response(&pairs(&[("MaxBurstLength", "131072")]))
            .unwrap();
        let p = n.params();
        assert_eq!(p.max_recv_dsl_target, DEFAULT_MAX_RECV_DSL);
        assert_eq!(p.max_burst, 131072);
        assert_eq!(p.first_burst, 65536);
        assert!(n.unanswered().contains(&"FirstBurstLength"));
    }

    #[test]
    fn list_digests() {
        let offer = Offer {
            header_digest: true,
            data_digest: true,
            ..Offer::default()
        };
        let mut n = Negotiation::new(offer.clone());
        n.apply_response(&pairs(&[
            ("HeaderDigest", "CRC32C"),
            ("DataDigest", "None"),
        ]))
        .unwrap();
        assert!(n.params().header_digest);
        assert!(!n.params().data_digest);

        // Outside the offer: we did not offer CRC32C.
        let mut n = Negotiation::new(Offer::default());
        let e = n
            .apply_response(&pairs(&[("HeaderDigest", "CRC32C")]))
            .unwrap_err();
        assert!(
            matches!(e, NegotiationError::OutsideOffer { ref key, ref value, .. }
            if key == "HeaderDigest" && value == "CRC32C")
        );
        assert!(e.to_string().contains("HeaderDigest=CRC32C"), "{e}");

        let mut n = Negotiation::new(offer);
        assert!(n
            .apply_response(&pairs(&[("DataDigest", "CRC32C,None")]))
            .is_err());
        let mut n = Negotiation::new(Offer::default());
        assert!(n.apply_response(&pairs(&[("DataDigest", "MD5")])).is_err());
    }

    #[test]
    fn boolean_and() {
        let mut n = Negotiation::new(Offer::default());
        n.apply_response(&pairs(&[("ImmediateData", "No")]))
            .unwrap();
        assert!(!n.params().immediate_data);

        let mut n = Negotiation::new(Offer {
            immediate_data: false,
            ..Offer::default()
        });
        let e = n
            .apply_response(&pairs(&[("ImmediateData", "Yes")]))
            .unwrap_err();
        assert!(e.to_string().contains("AND"), "{e}");
        assert!(Negotiation::new(Offer::default())
            .apply_response(&pairs(&[("ImmediateData", "yes")]))
            .is_err());
    }

    #[test]
    fn boolean_or() {
        let mut n = Negotiation::new(Offer::default());
        n.apply_response(&pairs(&[("InitialR2T", "Yes")])).unwrap();
        assert!(n.params().initial_r2t);
        let mut n = Negotiation::new(Offer::default());
        n.apply_response(&pairs(&[("InitialR2T", "No")])).unwrap();
        assert!(!n.params().initial_r2t);

        let mut n = Negotiation::new(Offer::default());
        let e = n
            .apply_response(&pairs(&[("DataPDUInOrder", "No")]))
            .unwrap_err();
        assert!(e.to_string().contains("OR"), "{e}");
    }

    #[test]
    fn numerical_min_and_max() {
        let mut n = Negotiation::new(Offer::default());
        n.apply_response(&pairs(&[
            ("MaxBurstLength", "0x40000"),
            ("MaxOutstandingR2T", "1"),
            ("DefaultTime2Retain", "0"),
            ("DefaultTime2Wait", "10"),
        ]))
        .unwrap();
        assert_eq!(n.params().max_burst, 262144);
        assert_eq!(n.params().default_time2wait, 10);

        let above = |k: &str, v: &str| {
            Negotiation::new(Offer::default())
                .apply_response(&pairs(&[(k, v)]))
                .unwrap_err()
        };
        let e = above("MaxBurstLength", "16777215");
        assert!(e.to_string().contains("minimum"), "{e}");
        assert!(e.to_string().contains("MaxBurstLength=16777215"), "{e}");
        assert!(matches!(
            above("MaxOutstandingR2T", "4"),
            NegotiationError::OutsideOffer { .. }
        ));
        assert!(matches!(
            above("ErrorRecoveryLevel", "1"),
            NegotiationError::OutsideOffer { .. }
        ));
        assert!(matches!(
            above("MaxConnections", "2"),
            NegotiationError::OutsideOffer { .. }
        ));
        assert!(matches!(
            above("DefaultTime2Retain", "20"),
            NegotiationError::OutsideOffer { .. }
        ));
        let e = above("DefaultTime2Wait", "1");
        assert!(e.to_string().contains("maximum"), "{e}");
        assert!(matches!(
            above("MaxBurstLength", "100"),
            NegotiationError::OutsideOffer { .. }
        ));
        assert!(matches!(
            above("FirstBurstLength", "lots"),
            NegotiationError::OutsideOffer { .. }
        ));
    }

    #[test]
    fn first_burst_capped_by_max_burst() {
        let mut n = Negotiation::new(Offer::default());
        n.apply_response(&pairs(&[
            ("MaxBurstLength", "65536"),
            ("FirstBurstLength", "262144"),
        ]))
        .unwrap();
        assert_eq!(n.params().first_burst, 65536);
    }

    #[test]
    fn declarative_max_recv_dsl() {
        let mut n = Negotiation::new(Offer::default());
        n.apply_response(&pairs(&[("MaxRecvDataSegmentLength", "1048576")]))
            .unwrap();
        assert_eq!(n.params().max_recv_dsl_target, 1048576);
        assert_eq!(n.params().max_recv_dsl_initiator, 262144);
        for bad in ["511", "16777216", "x"] {
            let e = Negotiation::new(Offer::default())
                .apply_response(&pairs(&[("MaxRecvDataSegmentLength", bad)]))
                .unwrap_err();
            assert!(e.to_string().contains(bad), "{e}");
        }
    }

    #[test]
    fn special_values() {
        let mut n = Negotiation::new(Offer::default());
        n.apply_response(&pairs(&[("FirstBurstLength", "Irrelevant")]))
            .unwrap();
        assert_eq!(n.params().first_burst, 65536);

        let e = Negotiation::new(Offer::default())
            .apply_response(&pairs(&[("MaxConnections", "Reject")]))
            .unwrap_err();
        assert_eq!(
            e,
            NegotiationError::Rejected {
                key: "MaxConnections".into(),
                offered: "1".into()
            }
        );
        assert!(e.to_string().contains("MaxConnections=1"));
        let e = Negotiation::new(Offer::default())
            .apply_response(&pairs(&[("DataSequenceInOrder", "NotUnderstood")]))
            .unwrap_err();
        assert!(matches!(e, NegotiationError::NotUnderstood { .. }));

        // A special value for a key we never sent gets no answer.
        let mut n = Negotiation::new(Offer::default());
        assert_eq!(
            n.apply_response(&pairs(&[("X-foo", "Reject")])).unwrap(),
            vec![]
        );
    }

    #[test]
    fn target_offers_answered() {
        let mut n = Negotiation::new(Offer::default());
        let ans = n
            .apply_response(&pairs(&[
                ("X-com.example.Thing", "1"),
                ("IFMarker", "Yes"),
                ("OFMarkInt", "2048~8192"),
                ("TargetAddress", "10.0.0.1:3260,1"),
            ]))
            .unwrap();
        assert_eq!(
            ans,
            pairs(&[
                ("X-com.example.Thing", "NotUnderstood"),
                ("IFMarker", "No"),
                ("OFMarkInt", "Reject"),
            ])
        );
    }

    #[test]
    fn target_offers_a_key_we_did_not_send() {
        let mut n = Negotiation::new(Offer {
            data_digest: true,
            ..Offer::default()
        });
        for k in [
            "MaxBurstLength",
            "DataDigest",
            "InitialR2T",
            "ImmediateData",
            "DefaultTime2Wait",
        ] {
            n.pending.remove(k);
        }
        let ans = n
            .apply_response(&pairs(&[
                ("MaxBurstLength", "131072"),
                ("DataDigest", "None,CRC32C"),
                ("InitialR2T", "Yes"),
                ("ImmediateData", "No"),
                ("DefaultTime2Wait", "0"),
            ]))
            .unwrap();
        assert_eq!(
            ans,
            pairs(&[
                ("MaxBurstLength", "131072"),
                ("DataDigest", "None"),
                ("InitialR2T", "Yes"),
                ("ImmediateData", "No"),
                ("DefaultTime2Wait", "2"),
            ])
        );
        let p = n.params();
        assert_eq!(p.max_burst, 131072);
        assert!(!p.data_digest && p.initial_r2t && !p.immediate_data);
        assert_eq!(p.default_time2wait, 2);

        let mut n = Negotiation::new(Offer::default());
        n.pending.remove("MaxBurstLength");
        n.pending.remove("HeaderDigest");
        let ans = n
            .apply_response(&pairs(&[
                ("MaxBurstLength", "1"),
                ("HeaderDigest", "CRC32C"),
            ]))
            .unwrap();
        assert_eq!(
            ans,
            pairs(&[("MaxBurstLength", "Reject"), ("HeaderDigest", "Reject")])
        );
        assert_eq!(n.params().max_burst, 262144);
    }

    #[test]
    fn twice() {
        let mut n = Negotiation::new(Offer::default());
        n.apply_response(&pairs(&[("MaxBurstLength", "65536")]))
            .unwrap();
        n.apply_response(&pairs(&[("MaxBurstLength", "65536")]))
            .unwrap();
        let e = n
            .apply_response(&pairs(&[("MaxBurstLength", "32768")]))
            .unwrap_err();
        assert!(matches!(e, NegotiationError::Twice { .. }));
    }

    proptest::proptest! {
        #[test]
        fn decode_never_panics(data in proptest::collection::vec(proptest::num::u8::ANY, 0..300)) {
            let _ = decode(&data);
        }

        #[test]
        fn roundtrip(kv in proptest::collection::vec(("[A-Za-z][A-Za-z0-9_.-]{0,62}", "[ -~]{0,100}"), 0..10)) {
            let borrowed: Vec<(&str, &str)> = kv.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            let mut out = Vec::new();
            encode(&borrowed, &mut out);
            proptest::prop_assert_eq!(decode(&out).unwrap(), kv);
        }
    }
}
