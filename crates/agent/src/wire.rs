//! The console–agent protocol: after the endpoint's handshake (both sides'
//! nonces, HMAC proofs of the pre-shared key) and `console`, every frame is
//! sealed by a [`Session`] (`iotoll_net::auth`, the framing the endpoint's
//! control protocol uses too, under a key of its own): an envelope
//! `{seq, mac, body}` whose MAC covers the direction, `seq` and `body` under
//! a key derived from the pre-shared key and this session's two nonces. So
//! a frame from another session (a recording) never verifies, and one
//! replayed, dropped or reordered inside a session breaks the count: either
//! ends the session.

use iotoll_model::{CpuReport, ResultDoc};
pub use iotoll_net::auth::{Session, Side, WireError};
use iotoll_net::proto::{Control, ProtoError, TestParams};
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::time::Duration;

/// Version of the console–agent protocol; both ends must agree.
pub const AGENT_PROTO: u32 = 1;
/// Largest frame of an authenticated session (a disk result document with
/// its series and histogram).
pub const MAX_AGENT_FRAME: usize = 32 << 20;

/// Console -> agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ToAgent {
    /// Who are you, what may you do (PREPARE: version and capabilities).
    Info {},
    /// One clock-offset probe: the console's wall clock when it sent this.
    Clock {
        t1: i64,
    },
    /// PREPARE one test's work: files made, listeners opened, data
    /// connections opened (clients, after every server is listening).
    Prepare {
        test: u64,
        work: Box<Work>,
    },
    /// Servers: wait until every data connection of the test is in. A
    /// server that is also a client in this test first opens `clients`
    /// (its NetServe's client pairs, with their servers' ports, which
    /// were not known at its PREPARE).
    Gather {
        test: u64,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        clients: Vec<PairSlot>,
    },
    /// START the load now; RECORD ON and OFF at these instants of the
    /// agent's own wall clock (the console applied its measured offset).
    Start {
        test: u64,
        on_ns: i64,
        off_ns: i64,
    },
    /// Stop the test's load at once (another host was lost, Ctrl-C).
    Abort {
        test: u64,
        reason: String,
    },
    /// Every end has reported: close the test's sockets and files.
    Release {
        test: u64,
    },
    Beat {},
    Bye {},
}

/// Agent -> console.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum FromAgent {
    Info {
        info: Box<AgentInfo>,
    },
    /// The probe's four timestamps: t2 when it arrived, t3 when this left.
    Clock {
        t1: i64,
        t2: i64,
        t3: i64,
    },
    /// Ready; a server says which port its data connections go to.
    Prepared {
        test: u64,
        port: Option<u16>,
        /// A TLS test's server: the certificate it generated for the test
        /// (hex, DER), which the console hands to the pairs' clients to pin.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cert: Option<String>,
        /// A UDP or connection-rate test's server: the port each pair it
        /// serves goes to (a socket or listener per pair, so each pair's
        /// counts are its own).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pair_ports: Vec<PairPort>,
    },
    Gathered {
        test: u64,
    },
    Started {
        test: u64,
    },
    /// COLLECT: the agent's side of the window.
    Report {
        test: u64,
        report: Box<AgentReport>,
    },
    Beat {},
    Error {
        test: Option<u64>,
        msg: String,
    },
}

/// What an agent says about itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentInfo {
    pub version: String,
    pub proto: u32,
    pub hostname: String,
    pub cpus: u32,
    pub boot_id: Option<String>,
    /// The targets it was started with (`--allow-target`), and whether it
    /// may write them.
    pub targets: Vec<AllowedTarget>,
    /// Its system disclosure.
    pub disclosure: serde_json::Value,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AllowedTarget {
    pub path: String,
    pub write: bool,
}

/// One test's work on one agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Work {
    Disk {
        order: DiskOrder,
    },
    /// Serve these pairs' data connections on one new data port.
    NetServe {
        params: TestParams,
        pairs: Vec<PairSlot>,
        /// Engine threads for this test (the suite's `threads`); None:
        /// the agent's own setting.
        #[serde(default)]
        threads: Option<u32>,
        /// Pairs this host is the client of in the same test (a host in
        /// two roles): opened at GATHER.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        clients: Vec<PairSlot>,
    },
    /// Open these pairs' data connections to their servers.
    NetClient {
        params: TestParams,
        pairs: Vec<PairSlot>,
        #[serde(default)]
        threads: Option<u32>,
    },
}

impl Work {
    /// The pairs this host serves and those it is the client of.
    pub fn slots(&self) -> (&[PairSlot], &[PairSlot]) {
        match self {
            Work::NetServe { pairs, clients, .. } => (pairs, clients),
            Work::NetClient { pairs, .. } => (&[], pairs),
            Work::Disk { .. } => (&[], &[]),
        }
    }
}

/// One endpoint pair as one of its ends sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PairSlot {
    pub pair: u32,
    /// Identifies the pair's data connections at the server.
    pub token: u64,
    /// Clients: where the pair's server listens.
    pub server: Option<SocketAddr>,
    /// Clients of a TLS test: the certificate to pin, the one the pair's
    /// server sent the console over its authenticated session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert: Option<String>,
}

impl PairSlot {
    /// GATHER's client pairs against PREPARE's: the same pairs with the
    /// same tokens, in order (only their servers' ports are new).
    pub fn same_pairs<'a>(
        given: &[PairSlot],
        prepared: impl Iterator<Item = &'a PairSlot>,
    ) -> Result<(), String> {
        let ids = given.iter().map(|p| (p.pair, p.token));
        if !ids.eq(prepared.map(|p| (p.pair, p.token))) {
            return Err("GATHER's client pairs are not the ones PREPARE named".into());
        }
        Ok(())
    }
}

/// A disk test as the console asks an agent for it: the workload, never
/// where it may write (the agent's own `--allow-target` flags decide).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiskOrder {
    /// Empty: every target the agent allows.
    pub targets: Vec<String>,
    pub spec_name: Option<String>,
    pub lines: Vec<OrderLine>,
    pub qd: u32,
    pub workers: u32,
    pub spread: bool,
    pub size: Option<u64>,
    pub offset: u64,
    pub engine: String,
    pub buffered: bool,
    pub ramp_ms: u64,
    pub time_ms: u64,
    pub config: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OrderLine {
    pub share_pct: u32,
    pub bs: u64,
    pub read_pct: u32,
    pub random_pct: u32,
    pub burst_delay_us: u64,
    pub burst_len: u32,
    pub align: Option<u64>,
}

impl From<&iotoll_disk::AccessLine> for OrderLine {
    fn from(l: &iotoll_disk::AccessLine) -> OrderLine {
        OrderLine {
            share_pct: l.share_pct,
            bs: l.bs,
            read_pct: l.read_pct,
            random_pct: l.random_pct,
            burst_delay_us: l.burst_delay.as_micros() as u64,
            burst_len: l.burst_len,
            align: l.align,
        }
    }
}

impl OrderLine {
    /// The access line this order line asks for, as the agent runs it.
    pub fn access_line(&self) -> iotoll_disk::AccessLine {
        iotoll_disk::AccessLine {
            share_pct: self.share_pct,
            bs: self.bs,
            read_pct: self.read_pct,
            random_pct: self.random_pct,
            burst_delay: Duration::from_micros(self.burst_delay_us),
            burst_len: self.burst_len,
            align: self.align,
        }
    }
}

/// One pair's payload at this end, inside its window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PairBytes {
    pub pair: u32,
    pub conns: u32,
    pub rx: u64,
    pub tx: u64,
}

/// A request/response client's pair in its window: its transactions and
/// their round trips ([`crate::histwire`]), which the console checks and
/// merges.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PairRr {
    pub pair: u32,
    pub transactions: u64,
    pub rtt_hist: String,
}

/// Where a UDP or connection-rate pair's traffic goes on its server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PairPort {
    pub pair: u32,
    pub port: u16,
}

/// A UDP pair at one end, in its window: what its client sent, or what
/// its server received of those datagrams (net's own counts, as a local
/// `net udp` has them), which the console checks against each other.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PairUdp {
    pub pair: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent: Option<iotoll_net::udp::Sent>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub received: Option<iotoll_net::udp::Received>,
}

/// A connection-rate (crr/cc) pair at one end: its client's counts, or
/// its server's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PairCrr {
    pub pair: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<CrrClient>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<CrrServed>,
}

/// A crr/cc pair's client: what its workers counted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrrClient {
    /// Connections (cc) or transactions (crr) completed in its window.
    pub window_done: u64,
    /// Failures in its window by cause, in `iotoll_net::crr::Cause::ALL`'s
    /// order.
    pub failures: [u64; 6],
    /// Over the whole test, ramp-up and drain included (what the server's
    /// totals are checked against).
    pub total_done: u64,
    pub total_failed: u64,
    /// Connect times and (crr) transaction times of the window's
    /// connections ([`crate::histwire`]), each holding `window_done`.
    pub connect_hist: String,
    pub trans_hist: String,
}

/// A crr/cc pair's server: what its acceptors counted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrrServed {
    pub accepted: u64,
    pub responded: u64,
    pub bad_token: u64,
    /// Served, and failed, in its window.
    pub window_done: u64,
    pub window_errors: u64,
}

/// An agent's side of one test's window.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentReport {
    /// Its wall clock when the window really opened and closed, ns.
    pub on_ns: Option<i64>,
    pub off_ns: Option<i64>,
    pub window_s: f64,
    pub cpu: Option<CpuReport>,
    pub cpu_error: Option<String>,
    /// Its interfaces over the window (loopback left out).
    pub ifaces: Vec<iotoll_model::IfaceFigures>,
    /// A disk test: its result document, as a local run makes it.
    pub disk: Option<Box<ResultDoc>>,
    /// A network test: each pair's bytes at this end.
    pub pairs: Vec<PairBytes>,
    pub errors: u64,
    pub first_error: Option<String>,
    pub retransmits: u64,
    /// The window was cut short (abort).
    pub interrupted: bool,
    /// A network test: the engine threads this host ran.
    #[serde(default)]
    pub threads: u32,
    pub notes: Vec<String>,
    /// A network test: its bytes received second by second (the disk
    /// document carries its own), the seconds counted from RECORD ON.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub series: Vec<iotoll_model::SeriesPoint>,
    /// A request/response client: each of its pairs' round trips.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rr: Vec<PairRr>,
    /// A UDP test: each of its pairs' counts at this end.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub udp: Vec<PairUdp>,
    /// A connection-rate test: each of its pairs' counts at this end.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub crr: Vec<PairCrr>,
}

/// Reads one frame of a session (the caller opens it).
pub fn recv_frame(ctl: &mut Control, timeout: Duration) -> Result<Vec<u8>, ProtoError> {
    ctl.recv_frame(timeout, MAX_AGENT_FRAME)
}

/// The wall clock, ns since the epoch (what clock offsets relate).
pub fn now_ns() -> i64 {
    let ns = system_time_ns(std::time::SystemTime::now());
    #[cfg(test)]
    let ns = ns + WALL_STEP_NS.with(|s| s.get());
    ns
}

#[cfg(test)]
thread_local! {
    /// A step of this thread's wall clock, for tests of what a clock step
    /// must not change.
    pub(crate) static WALL_STEP_NS: std::cell::Cell<i64> = const { std::cell::Cell::new(0) };
}

pub fn system_time_ns(t: std::time::SystemTime) -> i64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

impl DiskOrder {
    /// The order for a disk test as a suite defines it; `targets` are the
    /// paths asked for on every host (empty: each agent's own).
    pub fn from_spec(s: &iotoll_disk::DiskRequest) -> DiskOrder {
        DiskOrder {
            targets: s.targets.iter().map(|p| p.display().to_string()).collect(),
            spec_name: s.spec_name.clone(),
            lines: s.lines.iter().map(OrderLine::from).collect(),
            qd: s.qd,
            workers: s.workers,
            spread: s.spread,
            size: s.size,
            offset: s.offset,
            engine: s.engine.name().to_string(),
            buffered: s.buffered,
            ramp_ms: s.ramp.as_millis() as u64,
            time_ms: s.time.as_millis() as u64,
            config: s.config.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iotoll_net::auth::{Key, Nonces};

    fn pair(key: Option<&Key>) -> (Session, Session) {
        let n = Nonces {
            server: "s1".into(),
            client: "c1".into(),
        };
        (
            Session::new(key, &n, Side::Console),
            Session::new(key, &n, Side::Agent),
        )
    }

    #[test]
    fn frames_verify_in_order_only() {
        let k = Key::from_bytes(b"0123456789abcdef");
        let (mut console, mut agent) = pair(Some(&k));
        let f1 = console.seal(&ToAgent::Info {});
        let f2 = console.seal(&ToAgent::Beat {});
        assert_eq!(agent.open::<ToAgent>(&f1).unwrap(), ToAgent::Info {});
        // Replayed inside the session.
        assert!(matches!(
            agent.open::<ToAgent>(&f1),
            Err(WireError::Sequence { got: 1, want: 2 })
        ));
        assert_eq!(agent.open::<ToAgent>(&f2).unwrap(), ToAgent::Beat {});
        // Reflected back to the console: the direction is in the MAC.
        let mut console2 = pair(Some(&k)).0;
        assert!(matches!(
            console2.open::<FromAgent>(&f1),
            Err(WireError::BadMac(1)) | Err(WireError::Malformed(_))
        ));
    }

    #[test]
    fn another_session_never_verifies() {
        let k = Key::from_bytes(b"0123456789abcdef");
        let (mut console, _) = pair(Some(&k));
        let recorded = console.seal(&ToAgent::Info {});
        let other = Nonces {
            server: "s2".into(),
            client: "c1".into(),
        };
        let mut agent = Session::new(Some(&k), &other, Side::Agent);
        assert!(matches!(
            agent.open::<ToAgent>(&recorded),
            Err(WireError::BadMac(1))
        ));
        // Without a MAC in a keyed session.
        let (mut plain, _) = pair(None);
        let unkeyed = plain.seal(&ToAgent::Info {});
        let mut agent = pair(Some(&k)).1;
        assert!(matches!(
            agent.open::<ToAgent>(&unkeyed),
            Err(WireError::MissingMac(1))
        ));
        // A tampered body.
        let (mut console, mut agent) = pair(Some(&k));
        let f = String::from_utf8(console.seal(&ToAgent::Beat {})).unwrap();
        let f = f.replace("beat", "bye");
        assert!(matches!(
            agent.open::<ToAgent>(f.as_bytes()),
            Err(WireError::BadMac(1))
        ));
    }

    /// A UDP or connection-rate pair's counts, and a server's ports per
    /// pair: what arrives round-trips; truncated, with a field unknown, a
    /// figure of the wrong type or sign, or failures not six causes, it is
    /// refused when read, never half-taken.
    #[test]
    fn pair_counts_on_the_wire_are_strict() {
        let report = AgentReport {
            udp: vec![PairUdp {
                pair: 1,
                sent: Some(iotoll_net::udp::Sent {
                    datagrams: 10,
                    bytes: 10_000,
                    refused: 0,
                }),
                received: None,
            }],
            crr: vec![PairCrr {
                pair: 0,
                client: Some(CrrClient {
                    window_done: 3,
                    failures: [0, 1, 0, 0, 0, 0],
                    total_done: 5,
                    total_failed: 1,
                    connect_hist: "0103".into(),
                    trans_hist: String::new(),
                }),
                server: None,
            }],
            ..Default::default()
        };
        let text = serde_json::to_string(&report).unwrap();
        let back: AgentReport = serde_json::from_str(&text).unwrap();
        assert_eq!(
            (back.udp, back.crr),
            (report.udp.clone(), report.crr.clone())
        );
        let read = |t: &str| serde_json::from_str::<AgentReport>(t);
        for cut in [1, text.len() / 2, text.len() - 1] {
            assert!(read(&text[..cut]).is_err(), "truncated at {cut}");
        }
        for (from, to) in [
            ("\"refused\":0", "\"refused\":0,\"extra\":1"),
            ("\"datagrams\":10", "\"datagrams\":-10"),
            ("\"datagrams\":10", "\"datagrams\":\"10\""),
            ("[0,1,0,0,0,0]", "[0,1,0,0,0]"),
            ("[0,1,0,0,0,0]", "[0,1,0,0,0,0,0]"),
            ("\"pair\":1", "\"pair\":4294967296"),
        ] {
            assert!(text.contains(from), "{from}");
            assert!(read(&text.replacen(from, to, 1)).is_err(), "{to}");
        }
        let prepared = FromAgent::Prepared {
            test: 1,
            port: None,
            cert: None,
            pair_ports: vec![PairPort {
                pair: 0,
                port: 5000,
            }],
        };
        let text = serde_json::to_string(&prepared).unwrap();
        assert!(serde_json::from_str::<FromAgent>(&text).is_ok());
        for bad in [
            text.replace("5000", "70000"),
            text.replace("5000", "-1"),
            text.replace("\"port\":5000", "\"port\":5000,\"x\":0"),
        ] {
            assert!(serde_json::from_str::<FromAgent>(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        let (_, mut agent) = pair(None);
        for bad in [
            &b""[..],
            b"{}",
            b"[1,2]",
            br#"{"seq":1,"mac":null,"body":"{\"type\":\"launch\"}"}"#,
            br#"{"seq":1,"mac":null,"body":"{\"type\":\"info\",\"x\":1}"}"#,
        ] {
            assert!(agent.open::<ToAgent>(bad).is_err());
        }
    }
}
