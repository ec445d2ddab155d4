//! The control protocol: length-prefixed, strictly typed JSON messages on
//! one TCP connection per test.
//!
//! A frame is a 4-byte big-endian length, then that many bytes of JSON. The
//! length is capped at [`MAX_FRAME`]; every message is an object whose
//! `type` picks the variant, and unknown or wrongly typed fields are an
//! error, never a crash. Every read has a deadline. With a pre-shared key,
//! every message after the handshake (`hello`, `auth`, `auth_ok`) is sealed
//! by the connection's [`Session`]: the test request, the data port and
//! certificate, the report, errors; an unsealed, altered, replayed, dropped
//! or reordered one ends the test.

use crate::auth::{Session, WireError};
use iotoll_model::CpuReport;
use serde::{Deserialize, Serialize};
use std::io::ErrorKind::{Interrupted, TimedOut, WouldBlock};
use std::io::{self, Read, Write};
use std::time::{Duration, Instant};

/// Version of the control protocol; both ends must agree.
pub const PROTO_VERSION: u32 = 2;
/// Largest control frame accepted, bytes.
pub const MAX_FRAME: usize = 64 * 1024;
/// Largest sealed frame: a message of up to [`MAX_FRAME`] bytes as JSON
/// text inside an envelope (escaping at most doubles it), so sealing never
/// refuses a message that travels plain.
pub const MAX_SEALED_FRAME: usize = 2 * MAX_FRAME + 256;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TestKind {
    Stream,
    Rr,
    /// Datagrams over UDP, one socket per flow at each end (`msg` is the
    /// datagram's size).
    Udp,
    /// Connect, request, response, close per transaction (netperf TCP_CRR).
    Crr,
    /// Connect and close (netperf TCP_CC).
    Cc,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dir {
    /// The client sends.
    Tx,
    /// The server sends.
    Rx,
    /// Both, on separate connections.
    Bidir,
}

impl std::str::FromStr for Dir {
    type Err = String;

    /// `tx`, `rx` or `bidir` (`--dir`).
    fn from_str(s: &str) -> Result<Dir, String> {
        match s {
            "tx" => Ok(Dir::Tx),
            "rx" => Ok(Dir::Rx),
            "bidir" => Ok(Dir::Bidir),
            _ => Err(format!("unknown direction '{s}': use tx, rx or bidir")),
        }
    }
}

/// What the client asks the server to take part in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TestParams {
    pub kind: TestKind,
    pub dir: Dir,
    /// Connections per direction.
    pub conns: u32,
    /// Stream message (write) size, bytes.
    pub msg: u64,
    /// SO_SNDBUF/SO_RCVBUF on both ends; None: the kernel's autotuning.
    pub sockbuf: Option<u64>,
    pub nodelay: bool,
    /// Request and response sizes (rr), bytes.
    pub req: u64,
    pub resp: u64,
    /// Outstanding transactions per connection (rr).
    pub burst: u32,
    pub ramp_ms: u64,
    pub time_ms: u64,
    /// TLS 1.3 on every data connection, with this cipher (`tls::Cipher`
    /// name). Sent only when set, so a cleartext request is what older
    /// endpoints know (and they refuse this field by name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<String>,
    /// Receivers check every byte against the senders' pattern (stream).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub verify: bool,
    /// UDP: bits per second each sending end offers over its flows; None:
    /// unlimited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<u64>,
    /// UDP: the client's flow sockets' ports, in flow order (the endpoint
    /// sends to them at the control connection's address).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub udp_ports: Vec<u16>,
    /// crr/cc: the clients close with a reset (SO_LINGER 0). The endpoint
    /// needs it only to read the counts (a reset connection may be gone
    /// before its accept); an agent client closes so.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub linger0: bool,
}

impl TestParams {
    /// The result's typed spec of a test of these parameters, `net` holding
    /// what every network kind shares; a local client's and a test across
    /// hosts' alike.
    pub fn spec(&self, net: iotoll_model::spec::NetSpec) -> iotoll_model::spec::Spec {
        use iotoll_model::spec::{word, CrrSpec, RrSpec, Spec, StreamSpec, Typed, UdpSpec};
        match self.kind {
            TestKind::Stream => Spec::Stream(Typed::from(StreamSpec {
                net,
                dir: word(&self.dir),
                msg: self.msg,
            })),
            TestKind::Rr => Spec::Rr(Typed::from(RrSpec {
                net,
                req: self.req,
                resp: self.resp,
                burst: self.burst,
            })),
            // `rate` is each pair's, as `conns` is.
            TestKind::Udp => Spec::Udp(Typed::from(UdpSpec {
                net,
                dir: word(&self.dir),
                size: self.msg,
                rate: self.rate,
            })),
            TestKind::Crr | TestKind::Cc => {
                let crr = self.kind == TestKind::Crr;
                Spec::Crr(Typed::from(CrrSpec {
                    net,
                    req: if crr { self.req } else { 0 },
                    resp: if crr { self.resp } else { 0 },
                    linger0: self.linger0,
                }))
            }
        }
    }
}

/// The server's side of the window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerReport {
    pub window_s: f64,
    pub cpu: Option<CpuReport>,
    pub cpu_error: Option<String>,
    /// Payload the server received in the window: sum, per-connection
    /// min/max and sum of squares (for Jain's fairness) in bytes.
    pub rx: ByteStats,
    pub tx_bytes: u64,
    pub transactions: u64,
    pub retransmits: u64,
    pub srtt_us: Option<f64>,
    /// Connections that failed inside the endpoint's window.
    pub errors: u64,
    pub first_error: Option<String>,
    pub disclosure: serde_json::Value,
    /// UDP: what the endpoint's sender and receiver counted. Sent only for
    /// a UDP test, so older clients never see it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp: Option<UdpEnd>,
    /// Connection rates: the endpoint's counts over the whole test. Sent
    /// only for crr/cc tests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crr: Option<CrrEnd>,
}

/// The endpoint's counts of a crr/cc test, ramp-up and drain included.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrrEnd {
    /// Connections accepted on the test's port.
    pub accepted: u64,
    /// Responses sent in full (crr).
    pub responded: u64,
    /// Connections whose request did not start with the test's token.
    pub bad_token: u64,
}

/// One end's counts of a UDP test.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UdpEnd {
    pub sent: crate::udp::Sent,
    /// None when this end received nothing by design (it only sent).
    pub received: Option<crate::udp::Received>,
}

/// Aggregates over per-connection byte counts, so a report's size does not
/// grow with the number of connections.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ByteStats {
    pub conns: u64,
    pub sum: u64,
    pub min: u64,
    pub max: u64,
    pub sum_sq: f64,
}

impl ByteStats {
    pub fn from_counts(counts: impl IntoIterator<Item = u64>) -> Self {
        let mut s = ByteStats {
            min: u64::MAX,
            ..Default::default()
        };
        for c in counts {
            s.conns += 1;
            s.sum += c;
            s.min = s.min.min(c);
            s.max = s.max.max(c);
            s.sum_sq += (c as f64) * (c as f64);
        }
        if s.conns == 0 {
            s.min = 0;
        }
        s
    }

    /// Jain's fairness index: (sum x)^2 / (n * sum x^2); None without data.
    pub fn fairness(&self) -> Option<f64> {
        iotoll_run::jain_fairness(self.conns as f64, self.sum as f64, self.sum_sq)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Msg {
    /// Server -> client, first: protocol version and the challenge.
    Hello {
        proto: u32,
        version: String,
        nonce: String,
        auth: bool,
    },
    /// Client -> server: its own challenge and its answer to the server's.
    Auth {
        nonce: String,
        mac: Option<String>,
    },
    /// Server -> client: accepted, with the server's proof of the key.
    AuthOk {
        mac: Option<String>,
    },
    Test {
        params: TestParams,
    },
    /// Client -> server, instead of a test: this connection is a console's
    /// session with an agent (crates/agent), speaking agent protocol
    /// `proto` from here on. `net serve` refuses it by name.
    Console {
        proto: u32,
    },
    /// Server -> client: where to open the data connections.
    Accept {
        data_port: u16,
        token: u64,
        /// With TLS: the endpoint's certificate for this test (DER, hex),
        /// which the client pins.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cert: Option<String>,
    },
    /// Server -> client: all data connections are in.
    Ready {},
    /// Client -> server: ramp-up is over; open the CPU window now.
    WindowStart {},
    /// Client -> server: close the CPU window now and report.
    WindowEnd {},
    Report {
        report: Box<ServerReport>,
    },
    /// Client -> server: the test is over.
    Stop {},
    /// Server -> client: another test is running.
    Busy {
        msg: String,
    },
    Error {
        msg: String,
    },
}

impl Msg {
    /// The message's `type` on the wire.
    pub fn name(&self) -> String {
        let v = serde_json::to_value(self).unwrap_or_default();
        v["type"].as_str().unwrap_or_default().to_string()
    }
}

/// Who an end of a test is. The endpoint sends its own inside its report's
/// `disclosure` object, under `identity`: every typed message refuses
/// unknown fields, in older iotoll builds too, while `disclosure` is
/// free-form, so an older client ignores it and an older endpoint simply
/// does not send it (then the client cannot tell whether the peer is this
/// host, and says nothing).
pub use iotoll_model::spec::Identity;

/// The peer's process as seen on this host, when it runs here: its pid, if
/// that pid on this host is the process the peer described (same start
/// time); None for another host, another PID namespace, or a peer that did
/// not say.
pub fn local_pid_of(me: &Identity, peer: &Identity) -> Option<i32> {
    if me.same_host(peer) != Some(true) {
        return None;
    }
    let pid = peer.pid?;
    let start = peer.start_ticks?;
    (iotoll_probe::procs::start_ticks(pid) == Some(start)).then_some(pid)
}

#[derive(Debug, thiserror::Error)]
pub enum ProtoError {
    #[error("connection closed by peer")]
    Closed,
    #[error("no message within {0:?}")]
    Timeout(Duration),
    /// (the frame's length, the limit it exceeds)
    #[error("frame of {0} bytes exceeds the {1}-byte limit")]
    TooLarge(u64, usize),
    #[error("malformed message: {0}")]
    Malformed(String),
    /// A sealed frame that did not open: not what the key's holder sent.
    #[error("{0}: the control connection was altered on the path (a message changed, replayed, dropped or reordered); the test is void")]
    Forged(Box<WireError>),
    /// A plain message (which) where the session is keyed.
    #[error("an unauthenticated {0} on a keyed control connection: forged on the path, or sent by an iotoll that does not authenticate its control messages (use the same version at both ends); the test is void")]
    Unsealed(String),
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// Decodes one frame body. Never panics, whatever the bytes.
pub fn decode(body: &[u8]) -> Result<Msg, ProtoError> {
    serde_json::from_slice(body).map_err(|e| ProtoError::Malformed(e.to_string()))
}

pub fn encode(msg: &Msg) -> Vec<u8> {
    // Serializing our own types cannot fail (no maps with non-string keys).
    frame(&serde_json::to_vec(msg).unwrap_or_default())
}

/// `body` behind its 4-byte big-endian length: one frame on the wire.
pub fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 4);
    out.extend_from_slice(&(body.len() as u32).to_be_bytes());
    out.extend_from_slice(body);
    out
}

/// Decodes one frame's body, opening it with `session` when there is one.
fn open_with(session: Option<&mut Session>, body: &[u8]) -> Result<Msg, ProtoError> {
    let Some(session) = session else {
        return decode(body);
    };
    session.open(body).map_err(|e| match e {
        WireError::Proto(e) => e,
        // Not an envelope: a plain message is named, so an older peer's
        // refusal is not mistaken for noise.
        WireError::Malformed(m) => match decode(body) {
            Ok(plain) => ProtoError::Unsealed(match &plain {
                Msg::Error { msg } | Msg::Busy { msg } => {
                    format!("'{}' message (it says: {msg})", plain.name())
                }
                _ => format!("'{}' message", plain.name()),
            }),
            Err(_) => ProtoError::Malformed(m),
        },
        e => ProtoError::Forged(Box::new(e)),
    })
}

/// A control connection with a deadline on every read; once the handshake
/// has proven a key, sealed (see [`Control::seal_with`]).
pub struct Control {
    pub stream: std::net::TcpStream,
    session: Option<Session>,
}

impl Control {
    pub fn new(stream: std::net::TcpStream) -> io::Result<Self> {
        stream.set_nodelay(true)?;
        stream.set_write_timeout(Some(Duration::from_secs(10)))?;
        Ok(Control {
            stream,
            session: None,
        })
    }

    /// From now on every message sent is sealed by `session`, and every
    /// message received must open with it: the handshake is over and has
    /// proven the key.
    pub fn seal_with(&mut self, session: Session) {
        self.session = Some(session);
    }

    pub fn send(&mut self, msg: &Msg) -> Result<(), ProtoError> {
        let plain = encode(msg).split_off(4);
        if plain.len() > MAX_FRAME {
            return Err(ProtoError::TooLarge(plain.len() as u64, MAX_FRAME));
        }
        let body = match &mut self.session {
            Some(s) => s.seal(msg),
            None => plain,
        };
        self.send_frame(&body)
    }

    /// Decodes one frame's body: sealed when the session is keyed.
    fn open(&mut self, body: &[u8]) -> Result<Msg, ProtoError> {
        open_with(self.session.as_mut(), body)
    }

    /// Decodes a frame's body that is still in the socket (peeked), as
    /// [`Control::recv`] would, without counting it.
    pub fn open_peeked(&self, body: &[u8]) -> Result<Msg, ProtoError> {
        open_with(self.session.clone().as_mut(), body)
    }

    /// True when the peer has closed the connection or sent something
    /// unasked (during a test the endpoint speaks only when asked, so either
    /// means the test is over). Never blocks.
    pub fn peer_spoke(&self) -> bool {
        let mut b = [std::mem::MaybeUninit::uninit()];
        let peek = socket2::SockRef::from(&self.stream)
            .recv_with_flags(&mut b, libc::MSG_PEEK | libc::MSG_DONTWAIT);
        !matches!(peek, Err(e) if matches!(e.kind(), WouldBlock | Interrupted))
    }

    /// Reads one message, failing if it has not fully arrived within `timeout`.
    pub fn recv(&mut self, timeout: Duration) -> Result<Msg, ProtoError> {
        let max = match self.session {
            Some(_) => MAX_SEALED_FRAME,
            None => MAX_FRAME,
        };
        let body = self.recv_frame(timeout, max)?;
        self.open(&body)
    }

    /// Reads one frame's body of at most `max` bytes (an agent session,
    /// once authenticated, carries whole result documents).
    pub fn recv_frame(&mut self, timeout: Duration, max: usize) -> Result<Vec<u8>, ProtoError> {
        let deadline = Instant::now() + timeout;
        let mut len = [0u8; 4];
        self.read_exact_by(&mut len, deadline, timeout)?;
        let n = u32::from_be_bytes(len) as u64;
        if n > max as u64 {
            return Err(ProtoError::TooLarge(n, max));
        }
        let mut body = vec![0u8; n as usize];
        self.read_exact_by(&mut body, deadline, timeout)?;
        Ok(body)
    }

    /// Sends one frame's body as it is.
    pub fn send_frame(&mut self, body: &[u8]) -> Result<(), ProtoError> {
        Ok(self.stream.write_all(&frame(body))?)
    }

    fn read_exact_by(
        &mut self,
        mut buf: &mut [u8],
        deadline: Instant,
        timeout: Duration,
    ) -> Result<(), ProtoError> {
        while !buf.is_empty() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(ProtoError::Timeout(timeout));
            }
            self.stream.set_read_timeout(Some(left))?;
            match self.stream.read(buf) {
                Ok(0) => return Err(ProtoError::Closed),
                Ok(n) => buf = &mut buf[n..],
                Err(e) if matches!(e.kind(), WouldBlock | TimedOut) => {
                    return Err(ProtoError::Timeout(timeout))
                }
                Err(e) if e.kind() == Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn params() -> TestParams {
        TestParams {
            kind: TestKind::Stream,
            dir: Dir::Bidir,
            conns: 4,
            msg: 65536,
            sockbuf: Some(262144),
            nodelay: false,
            req: 1,
            resp: 1,
            burst: 1,
            ramp_ms: 0,
            time_ms: 1000,
            tls: None,
            verify: false,
            rate: None,
            udp_ports: Vec::new(),
            linger0: false,
        }
    }

    #[test]
    fn round_trip() {
        for m in [
            Msg::Hello {
                proto: 1,
                version: "0.1.0".into(),
                nonce: "ab".into(),
                auth: true,
            },
            Msg::Test { params: params() },
            Msg::Accept {
                data_port: 4000,
                token: 7,
                cert: None,
            },
            Msg::Test {
                params: TestParams {
                    tls: Some("aes-128-gcm".into()),
                    verify: true,
                    ..params()
                },
            },
            Msg::Accept {
                data_port: 4000,
                token: 7,
                cert: Some("3082".into()),
            },
            Msg::WindowStart {},
            Msg::Busy { msg: "x".into() },
        ] {
            let f = encode(&m);
            assert_eq!(
                u32::from_be_bytes([f[0], f[1], f[2], f[3]]) as usize,
                f.len() - 4
            );
            assert_eq!(decode(&f[4..]).unwrap(), m);
        }
        // A cleartext request is what endpoints before TLS knew.
        let wire = |m: &Msg| String::from_utf8(encode(m)[4..].to_vec()).unwrap();
        let test = wire(&Msg::Test { params: params() });
        assert!(!test.contains("tls") && !test.contains("verify"), "{test}");
        let (data_port, token, cert) = (1, 2, None);
        let accept = wire(&Msg::Accept {
            data_port,
            token,
            cert,
        });
        assert!(!accept.contains("cert"), "{accept}");
        // The name in error messages is the wire's `type`.
        assert_eq!(Msg::AuthOk { mac: None }.name(), "auth_ok");
        assert_eq!(Msg::WindowEnd {}.name(), "window_end");
    }

    #[test]
    fn strict_typing() {
        assert!(decode(br#"{"type":"window_start","extra":1}"#).is_err());
        assert!(decode(br#"{"type":"accept","data_port":"80","token":1}"#).is_err());
        assert!(decode(br#"{"type":"accept","data_port":70000,"token":1}"#).is_err());
        assert!(decode(br#"{"type":"launch_missiles"}"#).is_err());
        assert!(decode(br#"{"data_port":1}"#).is_err());
        for (field, v) in [("conns", (-1).into()), ("surprise", true.into())] {
            let mut p = serde_json::to_value(params()).unwrap();
            p[field] = v;
            let m = serde_json::json!({"type": "test", "params": p});
            assert!(decode(m.to_string().as_bytes()).is_err());
        }
        assert!(decode(b"").is_err());
    }

    #[test]
    fn identity_in_disclosure() {
        let me = Identity {
            boot_id: Some("6c0a9b43-abe8-45f0-b667-ca18bde8c98e".into()),
            pid: Some(42),
            start_ticks: Some(4242),
        };
        let d = serde_json::json!({"interface": {"name": "lo"}, "identity": me});
        assert_eq!(Identity::from_disclosure(&d), me);
        assert_eq!(me.same_host(&Identity::from_disclosure(&d)), Some(true));
        let other = Identity {
            boot_id: Some("00000000-abe8-45f0-b667-ca18bde8c98e".into()),
            pid: Some(42),
            start_ticks: None,
        };
        assert_eq!(me.same_host(&other), Some(false));
        // This very process is recognised by pid and start time; the same
        // pid with another start time (another PID namespace) is not.
        let this = iotoll_probe::sysinfo::identity();
        assert_eq!(local_pid_of(&this, &this), this.pid);
        let impostor = Identity {
            start_ticks: this.start_ticks.map(|t| t + 1),
            ..this.clone()
        };
        assert_eq!(local_pid_of(&this, &impostor), None);
        assert_eq!(local_pid_of(&this, &other), None, "another host");
        // An older endpoint says nothing: no verdict.
        let old = Identity::from_disclosure(&serde_json::json!({"interface": {}}));
        assert_eq!(old, Identity::default());
        assert_eq!(me.same_host(&old), None);
        // Peer input is checked, never trusted.
        for bad in [
            serde_json::json!({"identity": {"boot_id": 7, "pid": "x"}}),
            serde_json::json!({"identity": {"boot_id": "not a boot id!", "pid": -1}}),
            serde_json::json!({"identity": {"boot_id": "a".repeat(65), "pid": 1u64 << 40}}),
            serde_json::json!({"identity": []}),
            serde_json::json!(null),
        ] {
            assert_eq!(
                Identity::from_disclosure(&bad),
                Identity::default(),
                "{bad}"
            );
        }
        // The report, disclosure included, still decodes as before.
        let report = Box::new(ServerReport {
            window_s: 1.0,
            disclosure: d,
            ..Default::default()
        });
        let m = Msg::Report { report };
        assert_eq!(decode(&encode(&m)[4..]).unwrap(), m);
    }

    /// Both ends of a control connection on loopback, sealed when `key`.
    fn connected(key: Option<&crate::auth::Key>) -> (Control, Control) {
        use crate::auth::{Nonces, Session, Side};
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (e, _) = l.accept().unwrap();
        let (mut c, mut e) = (Control::new(c).unwrap(), Control::new(e).unwrap());
        if let Some(k) = key {
            let n = Nonces {
                server: "s".into(),
                client: "c".into(),
            };
            c.seal_with(Session::new(Some(k), &n, Side::Client));
            e.seal_with(Session::new(Some(k), &n, Side::Endpoint));
        }
        (c, e)
    }

    #[test]
    fn a_keyed_control_connection_takes_only_sealed_messages() {
        let k = crate::auth::Key::from_bytes(b"0123456789abcdef");
        let t = Duration::from_secs(10);
        let (mut c, mut e) = connected(Some(&k));
        let accept = Msg::Accept {
            data_port: 4000,
            token: 7,
            cert: Some("3082".into()),
        };
        e.send(&accept).unwrap();
        assert_eq!(c.recv(t).unwrap(), accept);
        // A plain message where a sealed one is due: named, never taken.
        e.send_frame(&encode(&Msg::Ready {})[4..]).unwrap();
        let err = c.recv(t).unwrap_err();
        assert!(
            matches!(&err, ProtoError::Unsealed(m) if m == "'ready' message"),
            "{err}"
        );
        let (mut c, mut e) = connected(Some(&k));
        e.send_frame(&encode(&Msg::Error { msg: "old".into() })[4..])
            .unwrap();
        let err = c.recv(t).unwrap_err().to_string();
        assert!(err.contains("'error' message (it says: old)"), "{err}");
        // A sealed frame with its port rewritten.
        e.send(&accept).unwrap();
        let mut frame = c.recv_frame(t, MAX_FRAME).unwrap();
        let text = String::from_utf8(frame.clone()).unwrap();
        frame = text.replace("4000", "4001").into_bytes();
        let mut c2 = connected(Some(&k)).0;
        let err = c2.open(&frame).unwrap_err();
        assert!(matches!(&err, ProtoError::Forged(_)), "{err}");
        assert!(err.to_string().contains("the test is void"), "{err}");
        // A message just within the plain limit, full of characters JSON
        // escapes, still travels sealed.
        let (mut c, mut e) = connected(Some(&k));
        let big = Msg::Error {
            msg: "\"".repeat(MAX_FRAME / 2 - 20),
        };
        assert!(encode(&big).len() - 4 <= MAX_FRAME);
        e.send(&big).unwrap();
        assert_eq!(c.recv(t).unwrap(), big);
        // Without a key, plain as before.
        let (mut c, mut e) = connected(None);
        e.send(&Msg::Ready {}).unwrap();
        assert_eq!(c.recv(t).unwrap(), Msg::Ready {});
    }

    #[test]
    fn fairness() {
        let s = ByteStats::from_counts([10, 10, 10, 10]);
        assert_eq!(s.fairness(), Some(1.0));
        let s = ByteStats::from_counts([40, 0, 0, 0]);
        assert_eq!(s.fairness(), Some(0.25));
        assert_eq!((s.min, s.max, s.sum), (0, 40, 40));
        assert_eq!(ByteStats::from_counts([]).fairness(), None);
    }

    proptest! {
        // The fuzz target of the decoder, bounded for CI: arbitrary bytes
        // never panic.
        #![proptest_config(ProptestConfig::with_cases(20_000))]
        #[test]
        fn decode_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
            let _ = decode(&bytes);
        }

        // Near-valid JSON: mutations of real messages.
        #[test]
        fn decode_survives_mutations(i in 0usize..200, b in any::<u8>(), cut in 0usize..200) {
            let mut f = encode(&Msg::Test { params: params() })[4..].to_vec();
            let n = f.len();
            f[i % n] = b;
            f.truncate(cut.max(1).min(n));
            let _ = decode(&f);
        }
    }
}
