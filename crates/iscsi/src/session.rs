//! A session: login (security and operational negotiation), then the
//! full-feature phase with its command window. One connection per session,
//! ErrorRecoveryLevel 0: any protocol fault ends the session with an error
//! that names the state it was in.
//!
//! The hot path (`submit`, `progress`) works on a non-blocking socket and
//! reused buffers: a command becomes a PDU encoded into the send buffer (its
//! immediate and unsolicited data copied behind it), Data-In is copied from
//! the receive buffer straight into the caller's I/O buffer, and the task
//! table is fixed at login. Nothing is allocated per I/O.

use crate::conn::{self, secs, Conn};
pub use crate::conn::{MAX_SEGMENT, TX_LIMIT};
use crate::pdu::{self, op, sn_le, sn_lt, Bhs, Digests, In, NO_TAG};
use crate::{chap, scsi, text, Error, ErrorKind};
use std::collections::VecDeque;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU16, Ordering};
use std::time::{Duration, Instant};

/// How a session is set up.
#[derive(Debug, Clone)]
pub struct Config {
    pub initiator_name: String,
    pub secrets: Option<chap::Secrets>,
    pub offer: text::Offer,
    /// Login, every command, logout: a target silent for this long ends the
    /// session with an error.
    pub timeout: Duration,
}

pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

impl Default for Config {
    fn default() -> Self {
        Config {
            initiator_name: default_initiator_name(),
            secrets: None,
            offer: text::Offer::default(),
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

/// `iqn.2026-11.org.iotoll:HOSTNAME`: the host is named so a target's logs
/// and ACLs can tell initiators apart.
pub fn default_initiator_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes into buf.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    let host = if rc == 0 {
        let n = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        String::from_utf8_lossy(&buf[..n])
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                    c.to_ascii_lowercase()
                } else {
                    '-'
                }
            })
            .collect()
    } else {
        "host".to_string()
    };
    format!("iqn.2026-11.org.iotoll:{host}")
}

/// What a session negotiated, for the run's disclosure.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SessionInfo {
    pub portal: String,
    pub target: String,
    pub initiator: String,
    pub isid: String,
    pub tsih: u16,
    /// "None", "CHAP" or "CHAP (mutual)".
    pub auth: String,
    pub header_digest: String,
    pub data_digest: String,
    /// Every negotiated operational key with its result.
    pub negotiated: Vec<(String, String)>,
}

/// A target found by SendTargets discovery.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Discovered {
    pub name: String,
    /// TargetAddress values: `host:port,tpgt`.
    pub addresses: Vec<String>,
}

/// The command window as the I/Os saw it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WindowStats {
    /// Commands that had to wait because CmdSN was past MaxCmdSN.
    pub waited: u64,
    pub commands: u64,
    /// The smallest window (MaxCmdSN - ExpCmdSN + 1) seen in the
    /// full-feature phase.
    pub min_window: u32,
    /// Commands retried after a UNIT ATTENTION.
    pub unit_attentions: u64,
    /// Async messages of SCSI events (event 0) received.
    pub async_events: u64,
}

/// Outcome of a command run to completion by [`Session::command`].
#[derive(Debug, Clone)]
pub struct CmdOutcome {
    pub status: u8,
    pub sense: Option<scsi::Sense>,
    pub data: Vec<u8>,
}

struct Task {
    live: bool,
    /// The command is on its way to the target (not held back in
    /// `waiting`): only then may the target answer it.
    sent: bool,
    gen: u16,
    read: bool,
    lun: [u8; 8],
    cdb: [u8; 16],
    len: u32,
    buf: *mut u8,
    /// Data-In bytes received: with DataPDUInOrder=Yes (which iotoll
    /// always negotiates) also the offset the next Data-In must start at,
    /// so each byte is counted once.
    got: u32,
    /// The DataSN the next Data-In must carry.
    data_sn: u32,
    /// The R2TSN the next R2T must carry.
    r2t_sn: u32,
    /// Write data sent unsolicited or asked for by an R2T: the end of it
    /// (DataSequenceInOrder=Yes), below which an R2T asks again.
    sent_to: u32,
    /// R2Ts whose last Data-Out is not yet in the send buffer.
    r2ts: u32,
    /// Write data put in the send buffer (immediate and Data-Out): a
    /// write has moved its bytes only when this reaches its length.
    out: u32,
    /// Entries of this task in the session's transfer queue.
    queued: u32,
    since: Instant,
    retries: u8,
    status: u8,
    sense: Option<scsi::Sense>,
    error: Option<String>,
}

impl Task {
    fn new(now: Instant) -> Task {
        Task {
            live: false,
            sent: false,
            gen: 0,
            read: true,
            lun: [0; 8],
            cdb: [0; 16],
            len: 0,
            buf: std::ptr::null_mut(),
            got: 0,
            data_sn: 0,
            r2t_sn: 0,
            sent_to: 0,
            r2ts: 0,
            out: 0,
            queued: 0,
            since: now,
            retries: 0,
            status: 0,
            sense: None,
            error: None,
        }
    }

    fn itt(&self, slot: usize) -> u32 {
        (self.gen as u32) << 16 | slot as u32
    }

    fn describe(&self, slot: usize) -> String {
        let name = match self.cdb[0] {
            scsi::OP_READ_16 => "READ(16)",
            scsi::OP_WRITE_16 => "WRITE(16)",
            scsi::OP_INQUIRY => "INQUIRY",
            scsi::OP_REPORT_LUNS => "REPORT LUNS",
            scsi::OP_SERVICE_ACTION_IN_16 => "READ CAPACITY(16)",
            scsi::OP_TEST_UNIT_READY => "TEST UNIT READY",
            _ => "SCSI command",
        };
        let mut s = name.to_string();
        if matches!(self.cdb[0], scsi::OP_READ_16 | scsi::OP_WRITE_16) {
            let lba = u64::from_be_bytes(self.cdb[2..10].try_into().unwrap_or([0; 8]));
            let blocks = u32::from_be_bytes(self.cdb[10..14].try_into().unwrap_or([0; 4]));
            let _ = write!(s, " of {blocks} blocks at LBA {lba}");
        }
        let _ = write!(s, " (ITT 0x{:08x})", self.itt(slot));
        s
    }
}

/// Write data still to send for a task: unsolicited Data-Out (TTT
/// reserved) or the answer to one R2T. Data-Out PDUs are encoded from it
/// into the send buffer as far as the buffer has room, straight from the
/// caller's I/O buffer.
#[derive(Debug, Clone, Copy)]
struct Transfer {
    slot: usize,
    itt: u32,
    ttt: u32,
    off: u32,
    end: u32,
    data_sn: u32,
    r2t: bool,
}

/// Slots are 16 bits of the ITT; the other 16 are a generation, so a late
/// PDU for a reused slot is recognized as stale.
pub const MAX_SLOTS: usize = 0xffff;

/// A logged-in session with `slots` task slots, plus one for its own
/// commands (`command`).
pub struct Session {
    conn: Conn,
    pub info: SessionInfo,
    pub params: text::Params,
    timeout: Duration,
    cmd_sn: u32,
    exp_cmd_sn: u32,
    max_cmd_sn: u32,
    exp_stat_sn: u32,
    tasks: Vec<Task>,
    /// Slots submitted but held back by the command window (or a full
    /// send buffer).
    waiting: VecDeque<usize>,
    /// Write data to send, in order; at most one unsolicited transfer and
    /// MaxOutstandingR2T answers per task, so bounded by the task table.
    transfers: VecDeque<Transfer>,
    /// PDUs are left unread until the send buffer has room again: the one
    /// at the front needs an answer (a NOP-Out) that would not fit.
    stalled: bool,
    live: usize,
    stats: WindowStats,
    now: Instant,
    last_scan: Instant,
    closed: bool,
}

// SAFETY: the raw buffer pointers in tasks are the caller's (see `submit`);
// a session is used by one thread at a time.
unsafe impl Send for Session {}

static ISID_QUALIFIER: AtomicU16 = AtomicU16::new(1);

fn new_isid() -> Result<[u8; 6], Error> {
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

fn closed_err(portal: &str, state: &str, e: &std::io::Error) -> Error {
    use std::io::ErrorKind as K;
    match e.kind() {
        K::UnexpectedEof | K::ConnectionReset | K::BrokenPipe | K::ConnectionAborted => Error::new(
            ErrorKind::Closed,
            format!("iSCSI {portal}: the target closed the connection during {state}"),
        ),
        _ => Error::new(
            ErrorKind::Closed,
            format!("iSCSI {portal}: socket error during {state}: {e}"),
        ),
    }
}

fn protocol(portal: &str, state: &str, what: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorKind::Protocol,
        format!("iSCSI {portal}: protocol error during {state}: {what}"),
    )
}

/// The end of a login, a discovery or a logout, however the target paces
/// its answers: each must be over within the I/O timeout as a whole, not
/// per answer, or a target answering "more to come" just in time would hold
/// a login for its 8 rounds and a discovery for its 1,000.
struct Deadline {
    until: Instant,
    total: Duration,
    /// PDUs received so far in the phase.
    answers: u32,
}

impl Deadline {
    fn new(total: Duration) -> Deadline {
        Deadline {
            until: Instant::now() + total,
            total,
            answers: 0,
        }
    }
}

/// The most SendTargets text a discovery takes (thousands of targets): the
/// target's answer is joined in memory before it is decoded.
pub const MAX_DISCOVERY_TEXT: usize = 1 << 20;

/// One request and its answer, outside the full-feature phase (login,
/// discovery, logout): sends `bhs` with `data` and waits for the next PDU.
fn exchange(
    conn: &mut Conn,
    bhs: Bhs,
    data: &[u8],
    dl: &mut Deadline,
    state: &str,
    cancel: Option<&AtomicBool>,
) -> Result<(Bhs, Vec<u8>), Error> {
    let digests = conn.dec.digests;
    pdu::encode(&mut conn.tx, bhs, data, digests);
    receive(conn, dl, state, cancel)
}

/// Sends what is queued and waits (until the phase's deadline) for the
/// next PDU, outside the full-feature phase.
fn receive(
    conn: &mut Conn,
    dl: &mut Deadline,
    state: &str,
    cancel: Option<&AtomicBool>,
) -> Result<(Bhs, Vec<u8>), Error> {
    let until = dl.until;
    loop {
        conn.flush()
            .map_err(|e| closed_err(&conn.portal, state, &e))?;
        match conn.next_pdu() {
            Err(e) => return Err(protocol(&conn.portal, state, e)),
            Ok(Some((bhs, range, n))) => {
                let data = conn.rx()[range].to_vec();
                conn.consume(n);
                dl.answers += 1;
                return Ok((bhs, data));
            }
            Ok(None) => {}
        }
        if conn
            .fill()
            .map_err(|e| closed_err(&conn.portal, state, &e))?
        {
            continue;
        }
        // Woken every 100 ms to see whether the user gave up (Ctrl-C).
        let slice = until.min(Instant::now() + Duration::from_millis(100));
        conn.wait(slice)
            .map_err(|e| closed_err(&conn.portal, state, &e))?;
        if cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
            return Err(Error::new(
                ErrorKind::Interrupted,
                format!("iSCSI {}: interrupted during {state}", conn.portal),
            ));
        }
        // Checked whether or not bytes came: a PDU trickled in a byte at a
        // time does not hold the phase open either.
        if Instant::now() >= until {
            let msg = if dl.answers == 0 {
                format!(
                    "iSCSI {}: no answer within {} during {state}",
                    conn.portal,
                    secs(dl.total)
                )
            } else {
                format!(
                    "iSCSI {}: {state} did not finish within {}: the target answered {} time(s) without completing it (the I/O timeout bounds a whole login or discovery)",
                    conn.portal,
                    secs(dl.total),
                    dl.answers
                )
            };
            return Err(Error::new(ErrorKind::Timeout, msg));
        }
    }
}

struct LoggedIn {
    params: text::Params,
    tsih: u16,
    exp_stat_sn: u32,
    cmd_sn: u32,
    exp_cmd_sn: u32,
    max_cmd_sn: u32,
    auth: String,
    negotiated: Vec<(String, String)>,
}

/// The login phase, from the first Login Request to the full-feature phase.
fn login_phase(
    conn: &mut Conn,
    cfg: &Config,
    target: Option<&str>,
    isid: [u8; 6],
    cancel: Option<&AtomicBool>,
) -> Result<LoggedIn, Error> {
    let portal = conn.portal.clone();
    let cmd_sn = 1u32;
    let mut exp_stat_sn = 0u32;
    let mut itt = 0u32;
    let mut data = Vec::new();
    let mut dl = Deadline::new(cfg.timeout);
    // One Login Request/Response; status errors become login errors.
    let mut step = |conn: &mut Conn,
                    keys: &[(&str, &str)],
                    transit: bool,
                    csg: u8,
                    nsg: u8,
                    state: &str|
     -> Result<(In, Vec<(String, String)>), Error> {
        data.clear();
        text::encode(keys, &mut data);
        let req = pdu::login_request(transit, csg, nsg, isid, 0, itt, 0, cmd_sn, exp_stat_sn);
        let (bhs, body) = exchange(conn, req, &data, &mut dl, state, cancel)?;
        itt = itt.wrapping_add(1);
        let resp = pdu::parse_in(&bhs).map_err(|e| protocol(&portal, state, e))?;
        let In::LoginResponse {
            class, detail, sn, ..
        } = resp
        else {
            if bhs.opcode() == op::REJECT {
                return Err(protocol(
                    &portal,
                    state,
                    format!(
                        "the target rejected our Login Request ({})",
                        pdu::reject_reason(bhs.byte(2))
                    ),
                ));
            }
            return Err(protocol(
                &portal,
                state,
                format!(
                    "expected a Login Response, got {}",
                    pdu::op_name(bhs.opcode())
                ),
            ));
        };
        exp_stat_sn = sn.stat_sn.wrapping_add(1);
        if class != 0 {
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
                if let Some(t) = target {
                    let _ = write!(msg, ": {t} (see `iotoll iscsi discover {portal}`)");
                }
            }
            return Err(Error::new(kind, msg));
        }
        let pairs = text::decode(&body).map_err(|e| protocol(&portal, state, e))?;
        Ok((resp, pairs))
    };
    let transit_to = |r: &In| match *r {
        In::LoginResponse { transit, nsg, .. } => transit.then_some(nsg),
        _ => None,
    };

    // Security negotiation.
    let session_type = if target.is_some() {
        "Normal"
    } else {
        "Discovery"
    };
    let mut first: Vec<(&str, &str)> = vec![
        ("InitiatorName", cfg.initiator_name.as_str()),
        ("SessionType", session_type),
    ];
    if let Some(t) = target {
        first.push(("TargetName", t));
    }
    let security = "login (security negotiation)";
    let auth = match &cfg.secrets {
        None => {
            first.push(("AuthMethod", "None"));
            let (r, pairs) = step(
                conn,
                &first,
                true,
                pdu::STAGE_SECURITY,
                pdu::STAGE_OPERATIONAL,
                security,
            )?;
            if let Some((_, v)) = pairs.iter().find(|(k, _)| k == "AuthMethod") {
                if v != "None" {
                    return Err(Error::new(
                        ErrorKind::Auth,
                        format!("iSCSI {portal}: the target requires authentication (AuthMethod={}); give the CHAP secret with --chap-secret-file", iotoll_model::text::printable(v)),
                    ));
                }
            }
            if transit_to(&r) != Some(pdu::STAGE_OPERATIONAL) {
                return Err(protocol(
                    &portal,
                    security,
                    "the target did not move on to operational negotiation",
                ));
            }
            "None".to_string()
        }
        Some(secrets) => {
            first.push(("AuthMethod", "CHAP"));
            let (_, pairs) = step(
                conn,
                &first,
                false,
                pdu::STAGE_SECURITY,
                pdu::STAGE_OPERATIONAL,
                security,
            )?;
            match pairs.iter().find(|(k, _)| k == "AuthMethod") {
                Some((_, v)) if v == "CHAP" => {}
                other => {
                    return Err(Error::new(
                        ErrorKind::Auth,
                        format!(
                            "iSCSI {portal}: the target does not use CHAP for this target (AuthMethod={}); drop --chap-secret-file or set up a CHAP account on the target",
                            other.map_or("<none>", |(_, v)| v.as_str())
                        ),
                    ))
                }
            }
            let chap_state = "login (CHAP)";
            let (_, challenge) = step(
                conn,
                &[("CHAP_A", "5")],
                false,
                pdu::STAGE_SECURITY,
                pdu::STAGE_OPERATIONAL,
                chap_state,
            )?;
            let (answer, ours) = chap::initiator_reply(secrets, &challenge)
                .map_err(|e| Error::new(ErrorKind::Auth, format!("iSCSI {portal}: CHAP: {e}")))?;
            let keys: Vec<(&str, &str)> = answer
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            let (r, reply) = step(
                conn,
                &keys,
                true,
                pdu::STAGE_SECURITY,
                pdu::STAGE_OPERATIONAL,
                chap_state,
            )?;
            if let Some(ours) = &ours {
                chap::check_target_response(secrets, ours, &reply)
                    .map_err(|e| Error::new(ErrorKind::Auth, format!("iSCSI {portal}: {e}")))?;
            }
            if transit_to(&r) != Some(pdu::STAGE_OPERATIONAL) {
                return Err(protocol(
                    &portal,
                    chap_state,
                    "the target did not move on to operational negotiation after CHAP",
                ));
            }
            if ours.is_some() {
                "CHAP (mutual)"
            } else {
                "CHAP"
            }
            .to_string()
        }
    };

    // Operational negotiation.
    let state = "login (operational negotiation)";
    let mut neg = text::Negotiation::new(cfg.offer.clone());
    let mut keys: Vec<(String, String)> = text::offer_keys(&cfg.offer);
    if target.is_none() {
        // Discovery sessions negotiate only these (the rest is Irrelevant).
        keys.retain(|(k, _)| {
            matches!(
                k.as_str(),
                "HeaderDigest" | "DataDigest" | "MaxRecvDataSegmentLength"
            )
        });
    }
    let mut last = None;
    for _ in 0..8 {
        let refs: Vec<(&str, &str)> = keys.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let (r, pairs) = step(
            conn,
            &refs,
            true,
            pdu::STAGE_OPERATIONAL,
            pdu::STAGE_FULL_FEATURE,
            state,
        )?;
        keys = neg
            .apply_response(&pairs)
            .map_err(|e| Error::new(ErrorKind::Login, format!("iSCSI {portal}: {state}: {e}")))?;
        if transit_to(&r) == Some(pdu::STAGE_FULL_FEATURE) {
            last = Some(r);
            break;
        }
    }
    let Some(In::LoginResponse { tsih, sn, .. }) = last else {
        return Err(protocol(
            &portal,
            state,
            "the target did not reach the full-feature phase after 8 rounds",
        ));
    };
    let params = neg.params();
    let negotiated = text::params_pairs(&params);
    Ok(LoggedIn {
        params,
        tsih,
        exp_stat_sn,
        cmd_sn,
        exp_cmd_sn: sn.exp_cmd_sn,
        max_cmd_sn: sn.max_cmd_sn,
        auth,
        negotiated,
    })
}

fn digest_name(on: bool) -> String {
    if on { "CRC32C" } else { "None" }.to_string()
}

/// SendTargets discovery on a discovery session.
pub fn discover(portal: &str, cfg: &Config) -> Result<Vec<Discovered>, Error> {
    let mut conn = Conn::connect(portal, cfg.timeout)?;
    let li = login_phase(&mut conn, cfg, None, new_isid()?, None)?;
    conn.dec.digests = Digests {
        header: li.params.header_digest,
        data: li.params.data_digest,
    };
    conn.dec.max_data = li.params.max_recv_dsl_initiator.max(8192);
    let state = "discovery (SendTargets)";
    let mut body = Vec::new();
    let mut data = Vec::new();
    text::encode(&[("SendTargets", "All")], &mut data);
    // Immediate Text Requests: CmdSN does not advance.
    let cmd_sn = li.cmd_sn;
    let (mut exp_stat_sn, mut ttt, mut itt) = (li.exp_stat_sn, NO_TAG, 1u32);
    let mut dl = Deadline::new(cfg.timeout);
    for _ in 0..1000 {
        let req = pdu::text_request(itt, ttt, cmd_sn, exp_stat_sn);
        let (bhs, chunk) = exchange(&mut conn, req, &data, &mut dl, state, None)?;
        match pdu::parse_in(&bhs).map_err(|e| protocol(portal, state, e))? {
            In::TextResponse {
                final_, ttt: t, sn, ..
            } => {
                if body.len() + chunk.len() > MAX_DISCOVERY_TEXT {
                    return Err(protocol(
                        portal,
                        state,
                        format!(
                            "the SendTargets answer goes past {MAX_DISCOVERY_TEXT} bytes, more than iotoll takes"
                        ),
                    ));
                }
                body.extend_from_slice(&chunk);
                exp_stat_sn = sn.stat_sn.wrapping_add(1);
                if final_ {
                    break;
                }
                // The answer continues: ask for the rest with an empty request.
                ttt = t;
                data.clear();
            }
            In::Reject { reason, .. } => {
                return Err(protocol(
                    portal,
                    state,
                    format!(
                        "the target rejected SendTargets ({})",
                        pdu::reject_reason(reason)
                    ),
                ))
            }
            _ => {
                return Err(protocol(
                    portal,
                    state,
                    format!(
                        "expected a Text Response, got {}",
                        pdu::op_name(bhs.opcode())
                    ),
                ))
            }
        }
        itt += 1;
    }
    let pairs = text::decode(&body).map_err(|e| protocol(portal, state, e))?;
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
    // Best effort: the answer is in hand.
    let req = pdu::logout_request(itt + 1, cmd_sn, exp_stat_sn);
    let mut dl = Deadline::new(cfg.timeout.min(Duration::from_secs(2)));
    let _ = exchange(&mut conn, req, &[], &mut dl, "logout", None);
    Ok(found)
}

impl Session {
    /// Connects to `portal`, logs in to `target` and gets `slots` task slots
    /// ready.
    pub fn login(portal: &str, target: &str, cfg: &Config, slots: usize) -> Result<Session, Error> {
        Session::login_cancellable(portal, target, cfg, slots, None)
    }

    /// [`Session::login`] that gives up (ErrorKind::Interrupted) within
    /// 100 ms of `cancel` being set, rather than at the timeout.
    pub fn login_cancellable(
        portal: &str,
        target: &str,
        cfg: &Config,
        slots: usize,
        cancel: Option<&AtomicBool>,
    ) -> Result<Session, Error> {
        let slots = slots.min(MAX_SLOTS - 1);
        let mut conn = Conn::connect(portal, cfg.timeout)?;
        let isid = new_isid()?;
        let li = login_phase(&mut conn, cfg, Some(target), isid, cancel)?;
        let p = &li.params;
        for (asked, got, which) in [
            (cfg.offer.header_digest, p.header_digest, "header"),
            (cfg.offer.data_digest, p.data_digest, "data"),
        ] {
            if asked && !got {
                return Err(Error::new(
                    ErrorKind::Login,
                    format!("iSCSI {portal}: the target refused CRC32C {which} digests (it answered None); drop --{which}-digest or enable digests on the target"),
                ));
            }
        }
        conn.dec.digests = Digests {
            header: p.header_digest,
            data: p.data_digest,
        };
        conn.dec.max_data = p.max_recv_dsl_initiator.max(512);
        let now = Instant::now();
        let transfers = (slots + 1) * (p.max_outstanding_r2t.min(16) as usize + 1);
        let info = SessionInfo {
            portal: portal.to_string(),
            target: target.to_string(),
            initiator: cfg.initiator_name.clone(),
            isid: hex::encode(isid),
            tsih: li.tsih,
            auth: li.auth,
            header_digest: digest_name(p.header_digest),
            data_digest: digest_name(p.data_digest),
            negotiated: li.negotiated,
        };
        Ok(Session {
            conn,
            info,
            params: li.params,
            timeout: cfg.timeout,
            cmd_sn: li.cmd_sn,
            exp_cmd_sn: li.exp_cmd_sn,
            max_cmd_sn: li.max_cmd_sn,
            exp_stat_sn: li.exp_stat_sn,
            tasks: (0..=slots).map(|_| Task::new(now)).collect(),
            waiting: VecDeque::with_capacity(slots + 1),
            transfers: VecDeque::with_capacity(transfers),
            stalled: false,
            live: 0,
            stats: WindowStats {
                min_window: u32::MAX,
                ..Default::default()
            },
            now,
            last_scan: now,
            closed: false,
        })
    }

    pub fn stats(&self) -> WindowStats {
        let mut s = self.stats;
        if s.min_window == u32::MAX {
            s.min_window = self.window();
        }
        s
    }

    /// MaxCmdSN - ExpCmdSN + 1: how many commands the target takes now.
    pub fn window(&self) -> u32 {
        self.max_cmd_sn
            .wrapping_sub(self.exp_cmd_sn)
            .wrapping_add(1)
            .min(1 << 31)
    }

    pub fn outstanding(&self) -> usize {
        self.live
    }

    pub fn fd(&self) -> i32 {
        self.conn.fd()
    }

    pub fn pollfd(&self) -> libc::pollfd {
        conn::pollfd(self.conn.fd(), !self.stalled, self.conn.wants_write())
    }

    /// Bytes in the send buffer not yet taken by the socket: at most
    /// [`conn::TX_LIMIT`] and one PDU, whatever the target does.
    pub fn unsent(&self) -> usize {
        self.conn.unsent()
    }

    /// Why the I/O last completed on `slot` failed (status, sense), if it did.
    pub fn explain(&self, slot: usize) -> Option<&str> {
        self.tasks.get(slot).and_then(|t| t.error.as_deref())
    }

    fn state(&self) -> String {
        let mut s = String::from("the full-feature phase");
        if self.live > 0 {
            let oldest = (self.tasks.iter().enumerate())
                .filter(|(_, t)| t.live)
                .min_by_key(|(_, t)| t.since);
            let _ = write!(s, " with {} command(s) outstanding", self.live);
            if let Some((slot, t)) = oldest {
                let _ = write!(s, ", the oldest a {}", t.describe(slot));
            }
        }
        s
    }

    /// Starts a READ(16) or WRITE(16) of `len` bytes at byte `offset` of
    /// `lun` on task `slot`. `offset` and `len` are multiples of the
    /// block size `block`.
    ///
    /// # Safety
    /// `buf` must be valid for `len` bytes (written for a read, read for a
    /// write) until the completion of `slot` is reported, or the session is
    /// dropped.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn submit_io(
        &mut self,
        slot: usize,
        lun: u64,
        read: bool,
        offset: u64,
        len: u32,
        block: u32,
        buf: *mut u8,
    ) -> Result<(), Error> {
        let (lba, blocks) = (offset / block as u64, len / block);
        let cdb = if read {
            scsi::read16(lba, blocks)
        } else {
            scsi::write16(lba, blocks)
        };
        let lun = scsi::encode_lun(lun).map_err(|e| Error::new(ErrorKind::Scsi, e.to_string()))?;
        // SAFETY: forwarded from the caller.
        unsafe { self.submit(slot, lun, cdb, read, len, buf) }
    }

    /// Starts `cdb` on task `slot`.
    ///
    /// # Safety
    /// As for [`Session::submit_io`].
    pub unsafe fn submit(
        &mut self,
        slot: usize,
        lun: [u8; 8],
        cdb: [u8; 16],
        read: bool,
        len: u32,
        buf: *mut u8,
    ) -> Result<(), Error> {
        // Not the time of the last `progress`: a session may have idled
        // since, longer than the timeout.
        self.now = Instant::now();
        let now = self.now;
        let Some(t) = self.tasks.get_mut(slot) else {
            return Err(Error::new(
                ErrorKind::Protocol,
                format!("no task slot {slot}"),
            ));
        };
        if t.live {
            return Err(Error::new(
                ErrorKind::Protocol,
                format!("task slot {slot} is busy"),
            ));
        }
        t.live = true;
        t.sent = false;
        t.gen = t.gen.wrapping_add(1);
        t.read = read;
        t.lun = lun;
        t.cdb = cdb;
        t.len = len;
        t.buf = buf;
        t.since = now;
        t.retries = 0;
        t.status = 0;
        t.sense = None;
        t.error = None;
        self.live += 1;
        self.stats.commands += 1;
        let sn = self.cmd_sn.wrapping_add(self.waiting.len() as u32);
        let window_open = sn_le(sn, self.max_cmd_sn);
        if self.waiting.is_empty() && window_open && self.conn.room() {
            self.send_command(slot);
        } else {
            // The window a login grants is often a single command, and it
            // opens with the first answer: only waits after that say the
            // target's window limits the depth.
            if !window_open && self.stats.min_window != u32::MAX {
                self.stats.waited += 1;
            }
            self.waiting.push_back(slot);
        }
        Ok(())
    }

    /// Encodes the command on `slot` (with its immediate data) into the
    /// send buffer, taking the next CmdSN; the data it may send
    /// unsolicited beyond that is queued as a transfer.
    fn send_command(&mut self, slot: usize) {
        let p = &self.params;
        let digests = self.conn.dec.digests;
        let t = &mut self.tasks[slot];
        let itt = t.itt(slot);
        let (mut imm, mut unsolicited) = (0u32, 0u32);
        if !t.read && t.len > 0 {
            let first = if p.immediate_data || !p.initial_r2t {
                t.len.min(p.first_burst)
            } else {
                0
            };
            if p.immediate_data {
                imm = first.min(p.max_recv_dsl_target).min(MAX_SEGMENT);
            }
            if !p.initial_r2t {
                unsolicited = first;
            }
        }
        t.sent = true;
        t.got = 0;
        t.data_sn = 0;
        t.r2t_sn = 0;
        t.r2ts = 0;
        t.sent_to = imm.max(unsolicited);
        t.out = imm;
        let final_ = unsolicited <= imm;
        let bhs = pdu::scsi_command(
            itt,
            t.lun,
            t.read,
            !t.read,
            final_,
            t.len,
            self.cmd_sn,
            self.exp_stat_sn,
            &t.cdb,
        );
        self.cmd_sn = self.cmd_sn.wrapping_add(1);
        // SAFETY: the buffer is valid for len bytes (submit's contract).
        let data = |off: u32, n: u32| unsafe {
            std::slice::from_raw_parts(t.buf.add(off as usize), n as usize)
        };
        pdu::encode(&mut self.conn.tx, bhs, data(0, imm), digests);
        // Unsolicited Data-Out, up to FirstBurstLength.
        if unsolicited > imm {
            t.queued += 1;
            self.transfers.push_back(Transfer {
                slot,
                itt,
                ttt: NO_TAG,
                off: imm,
                end: unsolicited,
                data_sn: 0,
                r2t: false,
            });
        }
    }

    /// Sends the commands held back by the window, as far as it and the
    /// send buffer now allow.
    fn launch_waiting(&mut self) {
        while sn_le(self.cmd_sn, self.max_cmd_sn) && self.conn.room() {
            let Some(slot) = self.waiting.pop_front() else {
                break;
            };
            self.send_command(slot);
        }
    }

    /// Encodes queued Data-Out into the send buffer while it has room, in
    /// PDUs the target takes.
    fn pump(&mut self) {
        let digests = self.conn.dec.digests;
        let seg = self.params.max_recv_dsl_target.clamp(512, MAX_SEGMENT);
        while self.conn.room() {
            let Some(x) = self.transfers.front_mut() else {
                break;
            };
            // Transfers of a task leave the queue when it ends, so the slot
            // is live and its buffer valid.
            let t = &mut self.tasks[x.slot];
            let n = (x.end - x.off).min(seg);
            let last = x.off + n == x.end;
            let b = pdu::data_out(
                x.itt,
                x.ttt,
                t.lun,
                self.exp_stat_sn,
                x.data_sn,
                x.off,
                last,
            );
            // SAFETY: off + n <= end <= len, and buf is valid for len bytes
            // while the task is live (submit's contract).
            let d = unsafe { std::slice::from_raw_parts(t.buf.add(x.off as usize), n as usize) };
            pdu::encode(&mut self.conn.tx, b, d, digests);
            x.off += n;
            x.data_sn += 1;
            t.out += n;
            if last {
                if x.r2t {
                    t.r2ts = t.r2ts.saturating_sub(1);
                }
                t.queued = t.queued.saturating_sub(1);
                self.transfers.pop_front();
            }
        }
    }

    /// Drops what is still queued to send for the task on `slot`: it ended
    /// (the target may end a write before asking for all its data), and its
    /// buffer is the caller's again.
    fn drop_transfers(&mut self, slot: usize) {
        let t = &mut self.tasks[slot];
        if t.queued > 0 {
            self.transfers.retain(|x| x.slot != slot);
        }
        t.queued = 0;
        t.r2ts = 0;
    }

    /// Sends all the socket takes now: waiting commands and queued
    /// Data-Out, through the bounded send buffer.
    fn send(&mut self) -> Result<(), Error> {
        loop {
            self.launch_waiting();
            self.pump();
            self.conn
                .flush()
                .map_err(|e| closed_err(&self.conn.portal, &self.state(), &e))?;
            // The socket took everything: there may be room for more.
            let more = !self.transfers.is_empty()
                || (!self.waiting.is_empty() && sn_le(self.cmd_sn, self.max_cmd_sn));
            if self.conn.wants_write() || !more {
                return Ok(());
            }
        }
    }

    /// Takes the numbers a target PDU carries. A PDU with status must
    /// carry the StatSN expected: on one connection at ErrorRecoveryLevel 0
    /// statuses arrive in order and none can be asked for again, so any
    /// other value (a gap, a repeat, a jump of 2^31) is a lost, repeated or
    /// forged status (RFC 7143 §4.2.2.2 lets the initiator's tolerance be
    /// anything up to 2^31-1; iotoll's is 0).
    fn note_sn(&mut self, b: &Bhs, has_status: bool) -> Result<(), Error> {
        if has_status {
            if b.stat_sn() != self.exp_stat_sn {
                let what = format!(
                    "{} (ITT 0x{:08x}) with StatSN {}, where StatSN {} was next",
                    pdu::op_name(b.opcode()),
                    b.itt(),
                    b.stat_sn(),
                    self.exp_stat_sn
                );
                return Err(protocol(&self.conn.portal, &self.state(), what));
            }
            self.exp_stat_sn = b.stat_sn().wrapping_add(1);
        }
        let (exp, max) = (b.exp_cmd_sn(), b.max_cmd_sn());
        // MaxCmdSN below ExpCmdSN - 1 is invalid and ignored (§4.2.2.1).
        if !sn_lt(max, exp.wrapping_sub(1)) {
            if sn_lt(self.exp_cmd_sn, exp) {
                self.exp_cmd_sn = exp;
            }
            if sn_lt(self.max_cmd_sn, max) {
                self.max_cmd_sn = max;
            }
            let w = self.window();
            if w < self.stats.min_window {
                self.stats.min_window = w;
            }
        }
        Ok(())
    }

    fn task_of(&self, itt: u32, what: u8) -> Result<usize, Error> {
        let slot = (itt & 0xffff) as usize;
        match self.tasks.get(slot) {
            Some(t) if t.live && t.sent && t.itt(slot) == itt => Ok(slot),
            _ => Err(protocol(
                &self.conn.portal,
                &self.state(),
                format!(
                    "{} for ITT 0x{itt:08x}, which names no outstanding command",
                    pdu::op_name(what)
                ),
            )),
        }
    }

    /// A task is over: its slot is free again, and `done` hears of it
    /// (bytes transferred, or a negative errno with the reason kept for
    /// `explain`).
    fn finish(&mut self, slot: usize, residual: pdu::Residual, done: &mut dyn FnMut(usize, i64)) {
        self.drop_transfers(slot);
        let t = &mut self.tasks[slot];
        t.live = false;
        self.live -= 1;
        let res = if t.status == scsi::STATUS_GOOD {
            let short = if residual.underflow {
                residual.count.min(t.len)
            } else {
                0
            };
            // An I/O counts the bytes that really moved, each once: a read
            // what arrived, a write what was sent. A target that sends
            // less than it claims, or answers GOOD before it took the data
            // it asked for, makes a short I/O, not a full one.
            let want = t.len - short;
            let moved = if t.read { t.got } else { t.out };
            if !t.read && moved < want {
                t.error = Some(format!(
                    "{}: the target answered GOOD with {moved} of its {want} bytes sent (it did not wait for the data it asked for)",
                    t.describe(slot)
                ));
            }
            moved.min(want) as i64
        } else {
            let mut why = format!(
                "{}: SCSI status {}",
                t.describe(slot),
                scsi::status_name(t.status)
            );
            if let Some(s) = &t.sense {
                let _ = write!(why, ", sense {s}");
            }
            t.error = Some(why);
            -(libc::EIO as i64)
        };
        done(slot, res);
    }

    /// Handles one PDU from the target.
    fn handle(
        &mut self,
        bhs: Bhs,
        data: std::ops::Range<usize>,
        done: &mut dyn FnMut(usize, i64),
    ) -> Result<(), Error> {
        let parsed =
            pdu::parse_in(&bhs).map_err(|e| protocol(&self.conn.portal, &self.state(), e))?;
        match parsed {
            In::DataIn {
                itt,
                status,
                residual,
                offset,
                data_sn,
                ..
            } => {
                self.note_sn(&bhs, status.is_some())?;
                let slot = self.task_of(itt, op::DATA_IN)?;
                let n = data.len() as u32;
                let t = &mut self.tasks[slot];
                let bad = if !t.read || offset.checked_add(n).is_none_or(|end| end > t.len) {
                    Some(format!(
                        "Data-In of {n} bytes at offset {offset} for a {} of {} bytes",
                        t.describe(slot),
                        t.len
                    ))
                } else if data_sn != t.data_sn {
                    Some(format!(
                        "Data-In with DataSN {data_sn} for a {}, where DataSN {} was next (a Data-In PDU was lost, repeated or reordered)",
                        t.describe(slot),
                        t.data_sn
                    ))
                } else if n > 0 && offset != t.got {
                    // DataPDUInOrder=Yes and DataSequenceInOrder=Yes (both
                    // always negotiated): the data comes in order, each
                    // byte once, so a read has all its bytes exactly when
                    // `got` reaches its length.
                    Some(format!(
                        "Data-In of {n} bytes at offset {offset} for a {}, where offset {} was next (DataPDUInOrder=Yes: each byte once, in order)",
                        t.describe(slot),
                        t.got
                    ))
                } else {
                    None
                };
                if let Some(what) = bad {
                    return Err(protocol(&self.conn.portal, &self.state(), what));
                }
                t.data_sn = t.data_sn.wrapping_add(1);
                // SAFETY: offset + n <= len, and buf is valid for len bytes.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        self.conn.rx()[data].as_ptr(),
                        t.buf.add(offset as usize),
                        n as usize,
                    );
                }
                t.got += n;
                if let Some(s) = status {
                    t.status = s;
                    self.finish(slot, residual, done);
                }
            }
            In::ScsiResponse {
                itt,
                response,
                status,
                residual,
                ..
            } => {
                self.note_sn(&bhs, true)?;
                let slot = self.task_of(itt, op::SCSI_RESPONSE)?;
                let sense = if status == scsi::STATUS_CHECK_CONDITION {
                    scsi::parse_iscsi_sense(&self.conn.rx()[data])
                } else {
                    None
                };
                self.drop_transfers(slot);
                let t = &mut self.tasks[slot];
                if response != 0 {
                    t.status = 0xff;
                    t.error = Some(format!(
                        "{}: the target failed the command (iSCSI response 0x{response:02x})",
                        t.describe(slot)
                    ));
                    t.live = false;
                    self.live -= 1;
                    done(slot, -(libc::EIO as i64));
                    return Ok(());
                }
                if sense.as_ref().is_some_and(scsi::is_unit_attention) && t.retries < 3 {
                    // A unit attention (reset, LUN inventory changed) is a
                    // notice, not a failure: the command runs again.
                    t.retries += 1;
                    t.sent = false;
                    self.stats.unit_attentions += 1;
                    self.waiting.push_front(slot);
                    return Ok(());
                }
                t.status = status;
                t.sense = sense;
                self.finish(slot, residual, done);
            }
            In::R2T {
                itt,
                ttt,
                r2t_sn,
                offset,
                len,
                ..
            } => {
                self.note_sn(&bhs, false)?;
                let slot = self.task_of(itt, op::R2T)?;
                let (max_burst, max_r2t) = (self.params.max_burst, self.params.max_outstanding_r2t);
                let t = &mut self.tasks[slot];
                let asks = format!("R2T (R2TSN {r2t_sn}) for {len} bytes at offset {offset}");
                let bad = if t.read || offset.checked_add(len).is_none_or(|end| end > t.len) {
                    Some(format!(
                        "{asks} of a {} of {} bytes",
                        t.describe(slot),
                        t.len
                    ))
                } else if r2t_sn != t.r2t_sn {
                    Some(format!(
                        "{asks} of a {}, where R2TSN {} was next",
                        t.describe(slot),
                        t.r2t_sn
                    ))
                } else if offset < t.sent_to {
                    // DataSequenceInOrder=Yes, ErrorRecoveryLevel 0: no
                    // range is asked for twice, nor one sent unsolicited.
                    Some(format!(
                        "{asks} of a {}, whose bytes up to offset {} were already sent or asked for",
                        t.describe(slot),
                        t.sent_to
                    ))
                } else if len == 0 || len > max_burst {
                    Some(format!(
                        "{asks} of a {}: an R2T may ask for 1 to MaxBurstLength ({max_burst}) bytes",
                        t.describe(slot)
                    ))
                } else if t.r2ts >= max_r2t {
                    Some(format!(
                        "{asks} of a {}, while {} R2T(s) of it are still being answered (MaxOutstandingR2T={max_r2t})",
                        t.describe(slot),
                        t.r2ts
                    ))
                } else {
                    None
                };
                if let Some(what) = bad {
                    return Err(protocol(&self.conn.portal, &self.state(), what));
                }
                t.r2t_sn = t.r2t_sn.wrapping_add(1);
                t.sent_to = offset + len;
                t.r2ts += 1;
                t.queued += 1;
                self.transfers.push_back(Transfer {
                    slot,
                    itt,
                    ttt,
                    off: offset,
                    end: offset + len,
                    data_sn: 0,
                    r2t: true,
                });
            }
            In::NopIn { itt, ttt, lun, .. } => {
                self.note_sn(&bhs, itt != NO_TAG)?;
                if ttt != NO_TAG {
                    // The target pings: answer at once, without a CmdSN.
                    let b = pdu::nop_out(NO_TAG, ttt, lun, self.cmd_sn, self.exp_stat_sn);
                    pdu::encode(&mut self.conn.tx, b, &[], self.conn.dec.digests);
                }
            }
            In::Async {
                event,
                code,
                params,
                ..
            } => {
                self.note_sn(&bhs, true)?;
                match event {
                    0 => self.stats.async_events += 1,
                    255 => {}
                    1 => {
                        return Err(Error::new(
                            ErrorKind::Closed,
                            format!("iSCSI {}: the target asked to end the session (Async event 1, logout within {} s) during {}", self.conn.portal, params[2], self.state()),
                        ))
                    }
                    2 | 3 => {
                        return Err(Error::new(
                            ErrorKind::Closed,
                            format!("iSCSI {}: the target announced it drops the connection (Async event {event}) during {}", self.conn.portal, self.state()),
                        ))
                    }
                    4 => {
                        return Err(protocol(&self.conn.portal, &self.state(), "the target asks to renegotiate parameters (Async event 4), which iotoll does not support"))
                    }
                    _ => {
                        return Err(protocol(&self.conn.portal, &self.state(), format!("Async message with event {event} (vendor code {code})")))
                    }
                }
            }
            In::Reject { reason, .. } => {
                self.note_sn(&bhs, true)?;
                let d = &self.conn.rx()[data];
                let what = if d.len() >= pdu::BHS_LEN {
                    let mut h = [0u8; pdu::BHS_LEN];
                    h.copy_from_slice(&d[..pdu::BHS_LEN]);
                    let r = Bhs(h);
                    format!(
                        "the target rejected our {} PDU (ITT 0x{:08x}): {}",
                        pdu::op_name(r.opcode()),
                        r.itt(),
                        pdu::reject_reason(reason)
                    )
                } else {
                    format!("the target rejected a PDU: {}", pdu::reject_reason(reason))
                };
                return Err(protocol(&self.conn.portal, &self.state(), what));
            }
            _ => {
                let what = format!(
                    "unexpected {} in the full-feature phase",
                    pdu::op_name(bhs.opcode())
                );
                return Err(protocol(&self.conn.portal, &self.state(), what));
            }
        }
        Ok(())
    }

    /// Does all the socket allows without waiting: sends what is queued,
    /// handles every PDU received; the number of commands completed.
    pub fn progress(&mut self, done: &mut dyn FnMut(usize, i64)) -> Result<usize, Error> {
        if self.closed {
            return Err(Error::new(
                ErrorKind::Closed,
                format!("iSCSI {}: the session is closed", self.conn.portal),
            ));
        }
        let r = self.progress_inner(done);
        if r.is_err() {
            self.closed = true;
        }
        r
    }

    fn progress_inner(&mut self, done: &mut dyn FnMut(usize, i64)) -> Result<usize, Error> {
        let mut n = 0;
        let mut counting = |slot: usize, res: i64| {
            n += 1;
            done(slot, res);
        };
        self.now = Instant::now();
        loop {
            self.send()?;
            self.stalled = false;
            let mut handled = false;
            loop {
                let next = self
                    .conn
                    .next_pdu()
                    .map_err(|e| protocol(&self.conn.portal, &self.state(), e))?;
                let Some((bhs, range, len)) = next else { break };
                // A ping needs an answer in the send buffer: with no room,
                // reading stops here until the target takes what is
                // queued (backpressure, rather than a buffer that grows
                // as fast as the target pings).
                if bhs.opcode() == op::NOP_IN && bhs.ttt() != NO_TAG && !self.conn.room() {
                    self.stalled = true;
                    break;
                }
                self.handle(bhs, range, &mut counting)?;
                self.conn.consume(len);
                handled = true;
            }
            if handled {
                continue;
            }
            if self.stalled {
                break;
            }
            let got = self
                .conn
                .fill()
                .map_err(|e| closed_err(&self.conn.portal, &self.state(), &e))?;
            if !got {
                break;
            }
        }
        self.send()?;
        Ok(n)
    }

    /// An error if the oldest outstanding command has waited longer than
    /// the timeout.
    pub fn check_timeout(&mut self, now: Instant) -> Result<(), Error> {
        if self.live == 0 || now.duration_since(self.last_scan) < Duration::from_millis(100) {
            return Ok(());
        }
        self.last_scan = now;
        let oldest = (self.tasks.iter().enumerate())
            .filter(|(_, t)| t.live)
            .min_by_key(|(_, t)| t.since);
        if let Some((slot, t)) = oldest {
            if now.duration_since(t.since) > self.timeout {
                let waiting = if !self.waiting.contains(&slot) {
                    String::new()
                } else if !sn_le(self.cmd_sn, self.max_cmd_sn) {
                    format!(
                        " (still waiting for the command window: CmdSN {} > MaxCmdSN {})",
                        self.cmd_sn, self.max_cmd_sn
                    )
                } else {
                    format!(
                        " (still waiting to be sent: the target has not taken the {} bytes queued before it)",
                        self.conn.unsent()
                    )
                };
                self.closed = true;
                return Err(Error::new(
                    ErrorKind::Timeout,
                    format!(
                        "iSCSI {}: no answer within {} to a {}{waiting}, with {} command(s) outstanding",
                        self.conn.portal,
                        secs(self.timeout),
                        t.describe(slot),
                        self.live
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Progress until at least `min` commands completed (or none is left).
    pub fn reap(&mut self, min: usize, done: &mut dyn FnMut(usize, i64)) -> Result<usize, Error> {
        reap_all(
            std::slice::from_mut(self),
            min,
            &mut Vec::with_capacity(1),
            done,
        )
    }

    /// Runs one command to completion on the session's own slot (the last
    /// one): for INQUIRY, REPORT LUNS, READ CAPACITY. `data_in` is the
    /// allocation length of a command that returns data.
    pub fn command(&mut self, lun: u64, cdb: [u8; 16], data_in: u32) -> Result<CmdOutcome, Error> {
        let slot = self.tasks.len() - 1;
        let mut buf = vec![0u8; data_in as usize];
        let lun = scsi::encode_lun(lun).map_err(|e| Error::new(ErrorKind::Scsi, e.to_string()))?;
        // SAFETY: buf lives until the command completes below, or the
        // session fails and is never used for it again.
        unsafe { self.submit(slot, lun, cdb, true, data_in, buf.as_mut_ptr())? };
        let mut res = None;
        while res.is_none() {
            self.reap(1, &mut |s, r| {
                if s == slot {
                    res = Some(r);
                }
            })?;
        }
        let t = &self.tasks[slot];
        let n = res.unwrap_or(0).max(0) as usize;
        buf.truncate(n.min(t.got as usize));
        Ok(CmdOutcome {
            status: t.status,
            sense: t.sense,
            data: buf,
        })
    }

    /// Runs `cdb` on `lun` and requires GOOD status: the data, or an error
    /// (kind `Scsi`) naming the command `what`, the status and the sense.
    pub fn command_ok(
        &mut self,
        lun: u64,
        cdb: [u8; 16],
        data_in: u32,
        what: &str,
    ) -> Result<Vec<u8>, Error> {
        let out = self.command(lun, cdb, data_in)?;
        if out.status != scsi::STATUS_GOOD {
            let sense = out
                .sense
                .map(|s| format!(", sense {s}"))
                .unwrap_or_default();
            return Err(Error::new(
                ErrorKind::Scsi,
                format!(
                    "{what} of LUN {lun} failed: SCSI status {}{sense}",
                    scsi::status_name(out.status)
                ),
            ));
        }
        Ok(out.data)
    }

    /// Standard INQUIRY of `lun`.
    pub fn inquiry(&mut self, lun: u64) -> Result<scsi::Inquiry, Error> {
        let d = self.command_ok(lun, scsi::cdb16(&scsi::inquiry(96)), 96, "INQUIRY")?;
        scsi::Inquiry::parse(&d)
            .map_err(|e| Error::new(ErrorKind::Scsi, format!("INQUIRY of LUN {lun}: {e}")))
    }

    /// READ CAPACITY(16) of `lun`.
    pub fn read_capacity(&mut self, lun: u64) -> Result<scsi::Capacity, Error> {
        let what = "READ CAPACITY(16)";
        let d = self.command_ok(lun, scsi::read_capacity16(32), 32, what)?;
        scsi::Capacity::parse(&d)
            .map_err(|e| Error::new(ErrorKind::Scsi, format!("{what} of LUN {lun}: {e}")))
    }

    /// The target's LUNs (REPORT LUNS to LUN 0, which every target answers).
    pub fn report_luns(&mut self) -> Result<Vec<u64>, Error> {
        let d = self.command_ok(
            0,
            scsi::cdb16(&scsi::report_luns(16384)),
            16384,
            "REPORT LUNS",
        )?;
        Ok(scsi::parse_report_luns(&d))
    }

    /// Logs out (when no command is outstanding) and closes the connection.
    pub fn logout(mut self) -> Result<(), Error> {
        if self.closed || self.live > 0 {
            return Ok(());
        }
        self.closed = true;
        let req = pdu::logout_request(NO_TAG - 1, self.cmd_sn, self.exp_stat_sn);
        let mut dl = Deadline::new(self.timeout.min(Duration::from_secs(5)));
        // A NOP-In may come first; the Logout Response ends it.
        let (mut bhs, _) = exchange(&mut self.conn, req, &[], &mut dl, "logout", None)?;
        for _ in 0..16 {
            if bhs.opcode() == op::LOGOUT_RESP {
                return Ok(());
            }
            (bhs, _) = receive(&mut self.conn, &mut dl, "logout", None)?;
        }
        Err(protocol(&self.conn.portal, "logout", "no Logout Response"))
    }
}

/// Progress on all `sessions` until at least `min` commands completed
/// among them (or none is outstanding): their sockets are polled together,
/// waking at least every 100 ms to check every command's timeout. `fds` is
/// reused between calls, so the hot path does not allocate.
pub fn reap_all(
    sessions: &mut [Session],
    min: usize,
    fds: &mut Vec<libc::pollfd>,
    done: &mut dyn FnMut(usize, i64),
) -> Result<usize, Error> {
    let mut n = 0;
    loop {
        for s in sessions.iter_mut() {
            n += s.progress(done)?;
        }
        if n >= min || sessions.iter().all(|s| s.live == 0) {
            return Ok(n);
        }
        fds.clear();
        fds.extend(sessions.iter().map(Session::pollfd));
        let until = Instant::now() + Duration::from_millis(100);
        conn::poll(fds, until).map_err(|e| {
            let s = &sessions[0];
            closed_err(&s.conn.portal, &s.state(), &e)
        })?;
        let now = Instant::now();
        for s in sessions.iter_mut() {
            s.check_timeout(now)?;
        }
    }
}
