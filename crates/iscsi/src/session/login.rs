//! The login phase, one stage after the other: security negotiation
//! (without authentication, or CHAP), then operational negotiation until
//! the target moves to the full-feature phase. Each stage is a method of
//! [`Login`], which holds what every Login Request carries.

use super::exchange::{exchange, Deadline};
use super::{protocol, Config};
use crate::conn::Conn;
use crate::pdu::{self, op, Bhs, CmdSn, Digests, In, Itt, LoginRequest, Sn, Stage, StatSn};
use crate::{chap, text, Error, ErrorKind, Result};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU16, Ordering};

static ISID_QUALIFIER: AtomicU16 = AtomicU16::new(1);

pub(super) fn new_isid() -> Result<[u8; 6]> {
    let c = iotoll_model::secret::random::<3>().map_err(|e| {
        Error::new(
            ErrorKind::Connect,
            format!("iSCSI: no randomness for a session id: {e}"),
        )
    })?;
    let q = ISID_QUALIFIER.fetch_add(1, Ordering::Relaxed).to_be_bytes();
    // Type 10b: random (RFC 7143 §11.12.5).
    Ok([0x80, c[0], c[1], c[2], q[0], q[1]])
}

/// What a login ends with: the negotiated parameters and the numbers the
/// full-feature phase starts from.
pub(super) struct LoggedIn {
    pub params: text::Params,
    pub tsih: u16,
    pub exp_stat_sn: StatSn,
    pub cmd_sn: CmdSn,
    pub exp_cmd_sn: CmdSn,
    pub max_cmd_sn: CmdSn,
    pub auth: String,
}

/// A Login Response that did not refuse the login.
struct Answer {
    /// The stage the target moves on to (T bit set), if it does.
    next: Option<u8>,
    tsih: u16,
    sn: Sn,
    keys: Vec<(String, String)>,
}

/// One login in progress.
struct Login<'a> {
    conn: &'a mut Conn,
    portal: String,
    /// None for a discovery session.
    target: Option<&'a str>,
    isid: [u8; 6],
    itt: Itt,
    exp_stat_sn: StatSn,
    /// Reused for each request's text.
    data: Vec<u8>,
    dl: Deadline,
    cancel: Option<&'a AtomicBool>,
}

/// Login Requests are immediate: CmdSN stays at the session's first.
const FIRST_CMD_SN: CmdSn = CmdSn(1);
const SECURITY: &str = "login (security negotiation)";
const CHAP: &str = "login (CHAP)";
const OPERATIONAL: &str = "login (operational negotiation)";

/// The login phase, from the first Login Request to the full-feature phase.
pub(super) fn login_phase(
    conn: &mut Conn,
    cfg: &Config,
    target: Option<&str>,
    isid: [u8; 6],
    cancel: Option<&AtomicBool>,
) -> Result<LoggedIn> {
    let mut login = Login {
        portal: conn.portal.clone(),
        conn,
        target,
        isid,
        itt: Itt(0),
        exp_stat_sn: StatSn(0),
        data: Vec::new(),
        dl: Deadline::new(cfg.timeout),
        cancel,
    };
    let auth = login.security(cfg)?;
    let (neg, last) = login.operational(cfg)?;
    let params = neg.params();
    // Digests start with the full-feature phase: login PDUs carry none.
    login.conn.dec.digests = Digests {
        header: params.header_digest,
        data: params.data_digest,
    };
    Ok(LoggedIn {
        params,
        tsih: last.tsih,
        exp_stat_sn: login.exp_stat_sn,
        cmd_sn: FIRST_CMD_SN,
        exp_cmd_sn: last.sn.exp_cmd_sn,
        max_cmd_sn: last.sn.max_cmd_sn,
        auth,
    })
}

impl Login<'_> {
    /// One Login Request and its Response; a refusal becomes a login error.
    fn step(
        &mut self,
        keys: &[(impl AsRef<str>, impl AsRef<str>)],
        csg: Stage,
        transit: Option<Stage>,
        state: &str,
    ) -> Result<Answer> {
        self.data.clear();
        text::encode(keys, &mut self.data);
        let req = LoginRequest {
            isid: self.isid,
            tsih: 0,
            itt: self.itt,
            cid: 0,
            cmd_sn: FIRST_CMD_SN,
            exp_stat_sn: self.exp_stat_sn,
            csg,
            transit,
        };
        let (bhs, body) = exchange(
            self.conn,
            req.bhs(),
            &self.data,
            &mut self.dl,
            state,
            self.cancel,
        )?;
        self.itt = Itt(self.itt.0.wrapping_add(1));
        let resp = pdu::parse_in(&bhs).map_err(|e| protocol(&self.portal, state, e))?;
        let In::LoginResponse {
            transit,
            nsg,
            tsih,
            class,
            detail,
            sn,
            ..
        } = resp
        else {
            return Err(self.not_a_login_response(&bhs, state));
        };
        self.exp_stat_sn = sn.stat_sn.next();
        if class != 0 {
            return Err(self.refused(class, detail, state));
        }
        let keys = text::decode(&body).map_err(|e| protocol(&self.portal, state, e))?;
        Ok(Answer {
            next: transit.then_some(nsg),
            tsih,
            sn,
            keys,
        })
    }

    fn not_a_login_response(&self, bhs: &Bhs, state: &str) -> Error {
        let what = if bhs.opcode() == op::REJECT {
            format!(
                "the target rejected our Login Request ({})",
                pdu::reject_reason(bhs.byte(2))
            )
        } else {
            format!(
                "expected a Login Response, got {}",
                pdu::op_name(bhs.opcode())
            )
        };
        protocol(&self.portal, state, what)
    }

    /// A Login Response with a status other than success.
    fn refused(&self, class: u8, detail: u8, state: &str) -> Error {
        let portal = &self.portal;
        let kind = match (class, detail) {
            (2, 1) => ErrorKind::Auth,
            _ => ErrorKind::Login,
        };
        let mut msg = format!(
            "iSCSI {portal}: login refused during {state}: {}",
            pdu::login_status(class, detail)
        );
        if (class, detail) == (2, 1) {
            msg.push_str(" — check the username and secret in --chap-secret-file");
        }
        if (class, detail) == (2, 3) {
            if let Some(t) = self.target {
                let _ = write!(msg, ": {t} (see `iotoll iscsi discover {portal}`)");
            }
        }
        Error::new(kind, msg)
    }

    /// Security negotiation; the authentication used, as the disclosure
    /// names it.
    fn security(&mut self, cfg: &Config) -> Result<String> {
        let mut first = vec![("InitiatorName", cfg.initiator_name.as_str())];
        match self.target {
            Some(t) => first.extend([("SessionType", "Normal"), ("TargetName", t)]),
            None => first.push(("SessionType", "Discovery")),
        }
        match &cfg.secrets {
            None => self.no_authentication(first),
            Some(secrets) => self.chap(first, secrets),
        }
    }

    fn no_authentication(&mut self, mut first: Vec<(&str, &str)>) -> Result<String> {
        first.push(("AuthMethod", "None"));
        let to_operational = Some(Stage::Operational);
        let r = self.step(&first, Stage::Security, to_operational, SECURITY)?;
        if let Some((_, v)) = r.keys.iter().find(|(k, _)| k == "AuthMethod") {
            if v != "None" {
                return Err(Error::new(
                    ErrorKind::Auth,
                    format!("iSCSI {}: the target requires authentication (AuthMethod={}); give the CHAP secret with --chap-secret-file", self.portal, iotoll_model::text::printable(v)),
                ));
            }
        }
        self.on_to_operational(&r, SECURITY)?;
        Ok("None".to_string())
    }

    /// CHAP (RFC 7143 §12.1.3): the method agreed, the algorithm and the
    /// challenge, our answer (and ours to the target when mutual).
    fn chap(&mut self, mut first: Vec<(&str, &str)>, secrets: &chap::Secrets) -> Result<String> {
        first.push(("AuthMethod", "CHAP"));
        let r = self.step(&first, Stage::Security, None, SECURITY)?;
        match r.keys.iter().find(|(k, _)| k == "AuthMethod") {
            Some((_, v)) if v == "CHAP" => {}
            other => {
                return Err(Error::new(
                    ErrorKind::Auth,
                    format!(
                        "iSCSI {}: the target does not use CHAP for this target (AuthMethod={}); drop --chap-secret-file or set up a CHAP account on the target",
                        self.portal,
                        other.map_or("<none>", |(_, v)| v.as_str())
                    ),
                ))
            }
        }
        let challenge = self.step(&[("CHAP_A", chap::CHAP_A_MD5)], Stage::Security, None, CHAP)?;
        let auth_err = |e: String| Error::new(ErrorKind::Auth, e);
        let (answer, ours) = chap::initiator_reply(secrets, &challenge.keys)
            .map_err(|e| auth_err(format!("iSCSI {}: CHAP: {e}", self.portal)))?;
        let r = self.step(&answer, Stage::Security, Some(Stage::Operational), CHAP)?;
        if let Some(ours) = &ours {
            chap::check_target_response(secrets, ours, &r.keys)
                .map_err(|e| auth_err(format!("iSCSI {}: {e}", self.portal)))?;
        }
        self.on_to_operational(&r, CHAP)?;
        Ok(if ours.is_some() {
            "CHAP (mutual)"
        } else {
            "CHAP"
        }
        .to_string())
    }

    /// An error unless the security stage's last answer `r` moves on to
    /// operational negotiation.
    fn on_to_operational(&self, r: &Answer, state: &str) -> Result<()> {
        if r.next == Some(Stage::Operational as u8) {
            return Ok(());
        }
        let after = if state == CHAP { " after CHAP" } else { "" };
        let what = format!("the target did not move on to operational negotiation{after}");
        Err(protocol(&self.portal, state, what))
    }

    /// Operational negotiation, up to 8 rounds; the negotiation and the
    /// answer that moved to the full-feature phase.
    fn operational(&mut self, cfg: &Config) -> Result<(text::Negotiation, Answer)> {
        let mut neg = text::Negotiation::new(cfg.offer.clone());
        let mut keys: Vec<(String, String)> = text::offer_keys(&cfg.offer);
        if self.target.is_none() {
            // Discovery sessions negotiate only these (the rest is Irrelevant).
            keys.retain(|(k, _)| {
                matches!(
                    k.as_str(),
                    "HeaderDigest" | "DataDigest" | "MaxRecvDataSegmentLength"
                )
            });
        }
        let to_full = Some(Stage::FullFeature);
        for _ in 0..8 {
            let r = self.step(&keys, Stage::Operational, to_full, OPERATIONAL)?;
            keys = neg.apply_response(&r.keys).map_err(|e| {
                let msg = format!("iSCSI {}: {OPERATIONAL}: {e}", self.portal);
                Error::new(ErrorKind::Login, msg)
            })?;
            if r.next == Some(Stage::FullFeature as u8) {
                return Ok((neg, r));
            }
        }
        Err(protocol(
            &self.portal,
            OPERATIONAL,
            "the target did not reach the full-feature phase after 8 rounds",
        ))
    }
}
