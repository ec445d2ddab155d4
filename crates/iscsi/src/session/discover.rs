//! SendTargets discovery (RFC 7143 §12.3 and appendix C) on a discovery
//! session.

use super::exchange::{exchange, Deadline, MAX_DISCOVERY_TEXT};
use super::login::{login_phase, new_isid, LoggedIn};
use super::{protocol, Config, Discovered};
use crate::conn::Conn;
use crate::pdu::{self, In, Itt, LogoutRequest, StatSn, TextRequest, Ttt};
use crate::{text, Result};
use std::time::Duration;

const STATE: &str = "discovery (SendTargets)";

/// SendTargets discovery on a discovery session.
pub fn discover(portal: &str, cfg: &Config) -> Result<Vec<Discovered>> {
    let mut conn = Conn::connect(portal, cfg.timeout)?;
    let li = login_phase(&mut conn, cfg, None, new_isid()?, None)?;
    conn.dec.max_data = li.params.max_recv_dsl_initiator.max(8192);
    let (body, itt, exp_stat_sn) = send_targets(&mut conn, &li, cfg)?;
    let pairs = text::decode(&body).map_err(|e| protocol(portal, STATE, e))?;
    let found = targets(pairs);
    // Best effort: the answer is in hand.
    let req = LogoutRequest {
        itt: Itt(itt + 1),
        cmd_sn: li.cmd_sn,
        exp_stat_sn,
    };
    let mut dl = Deadline::new(cfg.timeout.min(Duration::from_secs(2)));
    let _ = exchange(&mut conn, req.bhs(), &[], &mut dl, "logout", None);
    Ok(found)
}

/// Asks for SendTargets=All and joins the answer, however many Text
/// Responses it takes: the text, the last ITT used and the next ExpStatSN.
fn send_targets(conn: &mut Conn, li: &LoggedIn, cfg: &Config) -> Result<(Vec<u8>, u32, StatSn)> {
    let portal = conn.portal.clone();
    let mut body = Vec::new();
    let mut data = Vec::new();
    text::encode(&[("SendTargets", "All")], &mut data);
    // Immediate Text Requests: CmdSN does not advance.
    let (mut exp_stat_sn, mut ttt, mut itt) = (li.exp_stat_sn, Ttt::NONE, 1u32);
    let mut dl = Deadline::new(cfg.timeout);
    for _ in 0..1000 {
        let req = TextRequest {
            itt: Itt(itt),
            ttt,
            cmd_sn: li.cmd_sn,
            exp_stat_sn,
        };
        let (bhs, chunk) = exchange(conn, req.bhs(), &data, &mut dl, STATE, None)?;
        let what = match pdu::parse_in(&bhs).map_err(|e| protocol(&portal, STATE, e))? {
            In::TextResponse { .. } if body.len() + chunk.len() > MAX_DISCOVERY_TEXT => format!(
                "the SendTargets answer goes past {MAX_DISCOVERY_TEXT} bytes, more than iotoll takes"
            ),
            In::TextResponse {
                final_, ttt: t, sn, ..
            } => {
                body.extend_from_slice(&chunk);
                exp_stat_sn = sn.stat_sn.next();
                if final_ {
                    break;
                }
                // The answer continues: ask for the rest with an empty request.
                ttt = t;
                data.clear();
                itt += 1;
                continue;
            }
            In::Reject { reason, .. } => format!(
                "the target rejected SendTargets ({})",
                pdu::reject_reason(reason)
            ),
            _ => format!(
                "expected a Text Response, got {}",
                pdu::op_name(bhs.opcode())
            ),
        };
        return Err(protocol(&portal, STATE, what));
    }
    Ok((body, itt, exp_stat_sn))
}

/// The targets of a SendTargets answer, each with the addresses after it.
fn targets(pairs: Vec<(String, String)>) -> Vec<Discovered> {
    let mut found: Vec<Discovered> = Vec::new();
    for (k, v) in pairs {
        match k.as_str() {
            "TargetName" => found.push(Discovered {
                name: v,
                addresses: Vec::new(),
            }),
            "TargetAddress" => {
                if let Some(t) = found.last_mut() {
                    t.addresses.push(v);
                }
            }
            _ => {}
        }
    }
    found
}
