//! The initiator's side of operational negotiation (RFC 7143 §6.2, §13):
//! the keys offered, the rules that settle each, and the checks on what
//! the target answers.

use super::{parse_bool, parse_number, yes_no, Offer, Params, LEN_MAX, LEN_MIN};
use std::collections::BTreeMap;

type Result<T> = std::result::Result<T, NegotiationError>;

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
    pub(super) pending: BTreeMap<String, String>,
    /// Keys settled, with the value that settled them, to spot a target
    /// negotiating one twice.
    settled: BTreeMap<String, String>,
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
            target_alias: None,
            target_portal_group_tag: None,
        }
    }

    /// Applies one Login Response's pairs. Returns the pairs we must send
    /// back: answers to keys the target offered on its own.
    pub fn apply_response(&mut self, pairs: &[(String, String)]) -> Result<Vec<(String, String)>> {
        let mut answers = Vec::new();
        for (key, value) in pairs {
            if let Some(a) = self.apply_one(key, value)? {
                answers.push((key.clone(), a));
            }
        }
        Ok(answers)
    }

    fn apply_one(&mut self, key: &str, value: &str) -> Result<Option<String>> {
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

    fn special_answer(&mut self, key: &str, value: &str, offered: String) -> Result<()> {
        let key_s = key.to_string();
        match value {
            // The key does not apply in this session (e.g. FirstBurstLength
            // with InitialR2T=Yes and ImmediateData=No): the default holds.
            "Irrelevant" => {
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
        (answer.inspect(|a| self.set(key, a))).unwrap_or_else(|| "Reject".to_string())
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
fn check_answer(key: &str, value: &str, offered: &str, r: Option<Rule>) -> Result<String> {
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
