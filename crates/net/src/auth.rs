//! Pre-shared-key authentication: HMAC-SHA256 challenge-response in both
//! directions, compared in constant time; then, for the rest of the
//! connection, every message sealed by a [`Session`].
//!
//! A sealed frame is an envelope `{seq, mac, body}`: `body` a message as
//! JSON text, `seq` counting from 1 in each direction, and `mac` an
//! HMAC-SHA256 over the sender's side, `seq` and `body` under a key derived
//! (HKDF-SHA256) from the pre-shared key and the connection's two nonces. So a frame from
//! another connection (a recording) never verifies, one reflected back to
//! its sender never verifies, and one altered, replayed, dropped or
//! reordered inside a connection breaks the MAC or the count: either ends
//! the session. The endpoint's control protocol (client and endpoint) and
//! the console–agent protocol (crates/agent) both use it, each with a key
//! of its own.

use crate::proto::ProtoError;
use aws_lc_rs::{hkdf, hmac};
use serde::{de::DeserializeOwned, Deserialize, Serialize};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("auth key {path}: {1}", path = .0.display())]
    Read(PathBuf, #[source] std::io::Error),
    /// (the file, the key's length in bytes)
    #[error("auth key {path}: {1} bytes is too short; use at least 16 (e.g. head -c 32 /dev/urandom | base64 > KEYFILE)", path = .0.display())]
    TooShort(PathBuf, usize),
    /// (the file, its mode bits)
    #[error("UNPROTECTED AUTH KEY FILE: {path} has mode {1:04o}, so group or others may read or change it; it holds a secret and is refused (run: chmod 600 {path})", path = .0.display())]
    Unprotected(PathBuf, u32),
    /// (the file, its owner's uid, this process's uid)
    #[error("UNPROTECTED AUTH KEY FILE: {path} belongs to uid {1}, neither this user (uid {2}) nor root, so that user may change it; it is refused (run: chown {2} {path})", path = .0.display())]
    ForeignOwner(PathBuf, u32, u32),
}

/// A pre-shared key read from a file.
#[derive(Clone)]
pub struct Key(Vec<u8>);

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Key(..)")
    }
}

impl Key {
    /// Reads a key file; surrounding whitespace (a trailing newline) is not
    /// part of the key. A file group or others may read or change is
    /// refused, as CHAP secret files are (one rule: `read_secret_file`).
    pub fn load(path: &Path) -> Result<Key, KeyError> {
        use iotoll_model::secret::{read_secret_file, SecretFileError};
        let raw = read_secret_file(path).map_err(|e| match e {
            SecretFileError::Io(e) => KeyError::Read(path.into(), e),
            SecretFileError::Unprotected { mode } => KeyError::Unprotected(path.into(), mode),
            SecretFileError::ForeignOwner { owner, me } => {
                KeyError::ForeignOwner(path.into(), owner, me)
            }
        })?;
        let key = raw.trim_ascii().to_vec();
        if key.len() < 16 {
            return Err(KeyError::TooShort(path.into(), key.len()));
        }
        Ok(Key(key))
    }

    pub fn from_bytes(b: &[u8]) -> Key {
        Key(b.to_vec())
    }

    /// The key itself (to hand to an agent this process starts, on its
    /// stdin).
    pub fn bytes(&self) -> &[u8] {
        &self.0
    }

    /// The proof for (`label`, `a`, `b`), hex.
    pub fn mac(&self, label: &str, a: &str, b: &str) -> String {
        tag(&self.hmac_key(), [label, a, b])
    }

    /// Constant-time check of a peer's proof.
    pub fn verify(&self, label: &str, a: &str, b: &str, mac_hex: &str) -> bool {
        authentic(&self.hmac_key(), [label, a, b], mac_hex)
    }

    fn hmac_key(&self) -> hmac::Key {
        hmac::Key::new(hmac::HMAC_SHA256, &self.0)
    }

    /// A session's key: HKDF-SHA256 (RFC 5869) with both nonces as salt,
    /// this key as input keying material and `purpose` as info.
    fn derive(&self, purpose: &str, nonces: &Nonces) -> hmac::Key {
        let salt = hkdf::Salt::new(
            hkdf::HKDF_SHA256,
            &framed(["nonces", &nonces.server, &nonces.client]),
        );
        let info = [purpose.as_bytes()];
        // HMAC_SHA256's output length (32) is far below HKDF's limit of
        // 255 hash lengths, so expanding cannot fail.
        let prk = salt.extract(&self.0);
        prk.expand(&info, hmac::HMAC_SHA256).map_or_else(
            |_| hmac::Key::new(hmac::HMAC_SHA256, &self.0),
            hmac::Key::from,
        )
    }
}

/// HMAC-SHA256 of the framed `parts` under `key`, hex.
fn tag(key: &hmac::Key, parts: [&str; 3]) -> String {
    hex::encode(hmac::sign(key, &framed(parts)))
}

/// Constant-time check of `mac_hex` against the framed `parts` under `key`
/// (a tag is 32 bytes; longer hex is not decoded at all).
fn authentic(key: &hmac::Key, parts: [&str; 3], mac_hex: &str) -> bool {
    unhex(mac_hex, 64).is_some_and(|t| hmac::verify(key, &framed(parts), &t).is_ok())
}

/// Each part behind its length, so that no two lists of parts frame alike.
fn framed<const N: usize>(parts: [&str; N]) -> Vec<u8> {
    let mut v = Vec::new();
    for part in parts {
        v.extend_from_slice(&(part.len() as u32).to_be_bytes());
        v.extend_from_slice(part.as_bytes());
    }
    v
}

/// The endpoint's and the client's (or console's) challenges of one
/// connection, hex: a session's key is derived from them.
#[derive(Debug, Clone)]
pub struct Nonces {
    pub server: String,
    pub client: String,
}

/// Which end a frame came from: part of what its MAC covers, so a frame
/// never verifies when reflected back to its sender.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// `net stream`, `net rr`, a suite's network test.
    Client,
    /// `net serve`, an agent's or a suite's in-process endpoint.
    Endpoint,
    Console,
    Agent,
}

impl Side {
    /// (its label in the MAC, the side at the other end, and what the
    /// session key is derived for). The control protocol and the agent
    /// protocol that follows it on a console's connection never share a
    /// key, so a frame of one never verifies in the other.
    fn row(self) -> (&'static str, Side, &'static str) {
        match self {
            Side::Client => ("client", Side::Endpoint, "control-session"),
            Side::Endpoint => ("endpoint", Side::Client, "control-session"),
            Side::Console => ("console", Side::Agent, "agent-session"),
            Side::Agent => ("agent", Side::Console, "agent-session"),
        }
    }

    fn label(self) -> &'static str {
        self.row().0
    }

    fn peer(self) -> Side {
        self.row().1
    }

    fn purpose(self) -> &'static str {
        self.row().2
    }
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Envelope {
    seq: u64,
    mac: Option<String>,
    body: String,
}

#[derive(Debug, thiserror::Error)]
pub enum WireError {
    #[error("{0}")]
    Proto(#[from] ProtoError),
    #[error("frame {got} out of sequence (expected {want}): replayed, dropped or reordered")]
    Sequence { got: u64, want: u64 },
    #[error("frame {0} failed authentication")]
    BadMac(u64),
    #[error("frame {0} has no MAC, and this session is keyed")]
    MissingMac(u64),
    #[error("malformed message: {0}")]
    Malformed(String),
}

/// A connection's session key and counters, one per side.
#[derive(Debug, Clone)]
pub struct Session {
    key: Option<hmac::Key>,
    me: Side,
    sent: u64,
    received: u64,
}

impl Session {
    /// Keyed on the pre-shared key and both nonces (None: frames carry no
    /// MAC; only an agent without a key, on loopback, runs such a session).
    pub fn new(key: Option<&Key>, nonces: &Nonces, me: Side) -> Session {
        let key = key.map(|k| k.derive(me.purpose(), nonces));
        Session {
            key,
            me,
            sent: 0,
            received: 0,
        }
    }

    /// The next frame's body for `msg`.
    pub fn seal<T: Serialize>(&mut self, msg: &T) -> Vec<u8> {
        self.sent += 1;
        // Serialising our own types cannot fail.
        let body = serde_json::to_string(msg).unwrap_or_default();
        let seq = self.sent;
        let mac = (self.key.as_ref()).map(|k| tag(k, [self.me.label(), &seq.to_string(), &body]));
        serde_json::to_vec(&Envelope { seq, mac, body }).unwrap_or_default()
    }

    /// Checks and decodes one frame's body from the peer.
    pub fn open<T: DeserializeOwned>(&mut self, frame: &[u8]) -> Result<T, WireError> {
        let env: Envelope =
            serde_json::from_slice(frame).map_err(|e| WireError::Malformed(e.to_string()))?;
        let want = self.received + 1;
        if env.seq != want {
            return Err(WireError::Sequence { got: env.seq, want });
        }
        if let Some(k) = &self.key {
            let Some(mac) = &env.mac else {
                return Err(WireError::MissingMac(env.seq));
            };
            let parts = [self.me.peer().label(), &env.seq.to_string(), &env.body];
            if !authentic(k, parts, mac) {
                return Err(WireError::BadMac(env.seq));
            }
        }
        self.received = want;
        serde_json::from_str(&env.body).map_err(|e| WireError::Malformed(e.to_string()))
    }
}

/// 16 random bytes from the kernel, hex. Without randomness there is no
/// challenge worth making: an error, never a guessable fallback.
pub fn nonce() -> std::io::Result<String> {
    Ok(hex::encode(iotoll_model::secret::random::<16>()?))
}

/// Hex to bytes; None if malformed or longer than `max` bytes.
pub(crate) fn unhex(s: &str, max: usize) -> Option<Vec<u8>> {
    if s.len() > 2 * max {
        return None;
    }
    hex::decode(s).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proofs_verify_only_with_the_same_key_and_inputs() {
        let k = Key::from_bytes(b"0123456789abcdef");
        let other = Key::from_bytes(b"0123456789abcdeX");
        let m = k.mac("client", "n1", "n2");
        assert!(k.verify("client", "n1", "n2", &m));
        assert!(!other.verify("client", "n1", "n2", &m));
        assert!(
            !k.verify("server", "n1", "n2", &m),
            "labels separate directions"
        );
        assert!(!k.verify("client", "n2", "n1", &m));
        assert!(!k.verify("client", "n1", "n2", "zz"));
        assert!(!k.verify("client", "n1", "n2", ""));
    }

    fn control_pair(key: &Key) -> (Session, Session) {
        let n = Nonces {
            server: "s1".into(),
            client: "c1".into(),
        };
        (
            Session::new(Some(key), &n, Side::Client),
            Session::new(Some(key), &n, Side::Endpoint),
        )
    }

    #[test]
    fn control_frames_verify_once_in_order_and_only_unaltered() {
        let k = Key::from_bytes(b"0123456789abcdef");
        let (mut client, mut endpoint) = control_pair(&k);
        let f1 = endpoint.seal(&"accept");
        let f2 = endpoint.seal(&"report");
        // Dropped (or reordered): the count breaks.
        assert!(matches!(
            client.clone().open::<String>(&f2),
            Err(WireError::Sequence { got: 2, want: 1 })
        ));
        assert_eq!(client.open::<String>(&f1).unwrap(), "accept");
        // Replayed.
        assert!(matches!(
            client.clone().open::<String>(&f1),
            Err(WireError::Sequence { got: 1, want: 2 })
        ));
        // Altered.
        let altered = String::from_utf8(f2.clone())
            .unwrap()
            .replace("report", "forged");
        assert!(matches!(
            client.clone().open::<String>(altered.as_bytes()),
            Err(WireError::BadMac(2))
        ));
        assert_eq!(client.open::<String>(&f2).unwrap(), "report");
        // Reflected back to its sender.
        let mut endpoint2 = control_pair(&k).1;
        assert!(matches!(
            endpoint2.open::<String>(&f1),
            Err(WireError::BadMac(1))
        ));
    }

    #[test]
    fn control_and_agent_sessions_never_share_a_key() {
        let k = Key::from_bytes(b"0123456789abcdef");
        let n = Nonces {
            server: "s1".into(),
            client: "c1".into(),
        };
        let mut client = Session::new(Some(&k), &n, Side::Client);
        let mut console = Session::new(Some(&k), &n, Side::Console);
        let mut agent = Session::new(Some(&k), &n, Side::Agent);
        assert!(matches!(
            agent.open::<String>(&client.seal(&"x")),
            Err(WireError::BadMac(1))
        ));
        assert_eq!(agent.open::<String>(&console.seal(&"x")).unwrap(), "x");
    }

    #[test]
    fn nonces_differ() {
        assert_ne!(nonce().unwrap(), nonce().unwrap());
        assert_eq!(nonce().unwrap().len(), 32);
    }

    #[test]
    fn key_file() {
        let d = std::env::temp_dir().join(format!("iotoll-key-{}", std::process::id()));
        std::fs::write(&d, "  0123456789abcdef0123\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = |m| std::fs::set_permissions(&d, std::fs::Permissions::from_mode(m)).unwrap();
        mode(0o644);
        assert!(matches!(
            Key::load(&d),
            Err(KeyError::Unprotected(_, 0o644))
        ));
        mode(0o600);
        let k = Key::load(&d).unwrap();
        assert_eq!(k.0, b"0123456789abcdef0123");
        std::fs::write(&d, "short\n").unwrap();
        assert!(matches!(Key::load(&d), Err(KeyError::TooShort(_, 5))));
        std::fs::remove_file(&d).unwrap();
        assert!(Key::load(&d).is_err());
    }

    /// The session key is HKDF-SHA256 (RFC 5869) of the pre-shared key,
    /// salted with both nonces, for the protocol's purpose; the vector was
    /// computed independently with Python's hmac and hashlib.
    #[test]
    fn the_session_key_is_hkdf_of_the_key_and_both_nonces() {
        let k = Key::from_bytes(b"0123456789abcdef");
        let nonces = Nonces {
            server: "aa".into(),
            client: "bb".into(),
        };
        let mut s = Session::new(Some(&k), &nonces, Side::Client);
        let env: Envelope = serde_json::from_slice(&s.seal(&"x")).unwrap();
        assert_eq!(
            env.mac.as_deref(),
            Some("b7603998690ad1e0e28518ebb538a5a937ce5c5fd58ed04ca9d6ba69a1920b26")
        );
    }
}
