//! TLS 1.3 on the data connections (`--tls`).
//!
//! rustls runs each handshake: ECDHE, and the endpoint's certificate,
//! generated for the test, pinned by the client (the certificate travels in
//! the control connection's `accept`, so there is no CA and no file). The
//! pin is only as good as that connection: with `--auth-key` the `accept`
//! is sealed (`auth::Session`), so nobody on the path can swap the
//! certificate or the data port; without a key anyone on the path can, and
//! can then read and rewrite the data and the endpoint's report.
//! Then, as kernel TLS would, the traffic keys are taken over and the
//! record layer (RFC 8446 section 5) runs here on aws-lc-rs' AEAD: the socket
//! is read in large pieces and records are decrypted in place and encrypted
//! into one reused buffer, with no allocation per record. What a test pays
//! for TLS is then the cipher and the framing, not a library's buffering.

mod record;
#[cfg(test)]
mod tests;

pub use record::TlsConn;
use record::{batch_for, RecordKey};
use rustls::crypto::{verify_tls13_signature, CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use std::io::{self, ErrorKind};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Who does what, for the disclosure.
pub const IMPLEMENTATION: &str =
    "handshake: rustls 0.23 (aws-lc-rs provider); record layer: iotoll's, on aws-lc-rs 1's AEAD";

/// The AEAD of a test's TLS 1.3 cipher suite.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cipher {
    Aes128Gcm,
    Aes256Gcm,
    Chacha20Poly1305,
}

pub const DEFAULT_CIPHER: Cipher = Cipher::Aes128Gcm;

impl Cipher {
    pub const ALL: [Cipher; 3] = [
        Cipher::Aes128Gcm,
        Cipher::Aes256Gcm,
        Cipher::Chacha20Poly1305,
    ];

    /// The name on the command line and in `spec.tls`.
    pub fn name(self) -> &'static str {
        match self {
            Cipher::Aes128Gcm => "aes-128-gcm",
            Cipher::Aes256Gcm => "aes-256-gcm",
            Cipher::Chacha20Poly1305 => "chacha20-poly1305",
        }
    }

    /// The TLS 1.3 cipher suite (RFC 8446 B.4).
    pub fn suite_name(self) -> &'static str {
        // rustls names its suites so; ours are all known to it.
        self.suite().suite().as_str().unwrap_or_default()
    }

    /// Every cipher's name, for messages: `aes-128-gcm, aes-256-gcm, ...`.
    pub fn names() -> String {
        let names: Vec<_> = Cipher::ALL.iter().map(|c| c.name()).collect();
        names.join(", ")
    }

    /// A cipher by its name or its suite's name, any case.
    pub fn parse(s: &str) -> Option<Cipher> {
        let s = s.trim();
        Cipher::ALL
            .into_iter()
            .find(|c| s.eq_ignore_ascii_case(c.name()) || s.eq_ignore_ascii_case(c.suite_name()))
    }

    fn suite(self) -> rustls::SupportedCipherSuite {
        use rustls::crypto::aws_lc_rs::cipher_suite as cs;
        match self {
            Cipher::Aes128Gcm => cs::TLS13_AES_128_GCM_SHA256,
            Cipher::Aes256Gcm => cs::TLS13_AES_256_GCM_SHA384,
            Cipher::Chacha20Poly1305 => cs::TLS13_CHACHA20_POLY1305_SHA256,
        }
    }

    fn of_suite(s: rustls::SupportedCipherSuite) -> Option<Cipher> {
        Cipher::ALL
            .into_iter()
            .find(|c| c.suite().suite() == s.suite())
    }
}

impl std::str::FromStr for Cipher {
    type Err = String;

    /// `--tls-cipher`: as [`Cipher::parse`], or why not.
    fn from_str(s: &str) -> Result<Cipher, String> {
        Cipher::parse(s).ok_or_else(|| format!("unknown cipher '{s}': use {}", Cipher::names()))
    }
}

impl std::fmt::Display for Cipher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot generate the endpoint's certificate: {0}")]
    Certificate(String),
    #[error("TLS configuration: {0}")]
    Config(#[from] rustls::Error),
    #[error("the endpoint's pinned certificate is not valid hex")]
    BadPin,
}

/// Largest pinned certificate accepted, bytes (ours are about 400).
const MAX_CERT: usize = 8 << 10;

/// The certificate's subject: there is no name to check, the certificate
/// itself is pinned.
const SERVER_NAME: &str = "iotoll-endpoint";

fn provider(suites: Vec<rustls::SupportedCipherSuite>) -> Arc<CryptoProvider> {
    Arc::new(CryptoProvider {
        cipher_suites: suites,
        ..rustls::crypto::aws_lc_rs::default_provider()
    })
}

/// The endpoint's TLS for one test: a fresh key and self-signed
/// certificate (ECDSA P-256), accepting every TLS 1.3 suite of [`Cipher`].
pub struct ServerTls {
    config: Arc<rustls::ServerConfig>,
    cert: CertificateDer<'static>,
}

impl ServerTls {
    pub fn generate() -> Result<ServerTls, TlsError> {
        let cert_err = |e: rcgen::Error| TlsError::Certificate(e.to_string());
        let key = rcgen::KeyPair::generate().map_err(cert_err)?;
        let params =
            rcgen::CertificateParams::new(vec![SERVER_NAME.to_string()]).map_err(cert_err)?;
        let cert = params.self_signed(&key).map_err(cert_err)?.der().clone();
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let suites = Cipher::ALL.into_iter().map(Cipher::suite).collect();
        let mut config = rustls::ServerConfig::builder_with_provider(provider(suites))
            .with_protocol_versions(&[&rustls::version::TLS13])?
            .with_no_client_auth()
            .with_single_cert(vec![cert.clone()], key)?;
        // No tickets: nothing may follow the handshake on the wire before
        // the record layer takes over (and no test resumes a session).
        config.send_tls13_tickets = 0;
        config.enable_secret_extraction = true;
        Ok(ServerTls {
            config: Arc::new(config),
            cert,
        })
    }

    /// The certificate the client pins, hex (DER).
    pub fn cert_hex(&self) -> String {
        hex::encode(self.cert.as_ref())
    }
}

/// The client's TLS for one test: one suite offered, the endpoint's
/// certificate pinned.
pub struct ClientTls {
    config: Arc<rustls::ClientConfig>,
    cipher: Cipher,
}

impl ClientTls {
    pub fn pinned(cipher: Cipher, cert_hex: &str) -> Result<ClientTls, TlsError> {
        let cert =
            CertificateDer::from(crate::auth::unhex(cert_hex, MAX_CERT).ok_or(TlsError::BadPin)?);
        let provider = provider(vec![cipher.suite()]);
        let verifier = Arc::new(Pinned {
            cert,
            algs: provider.signature_verification_algorithms,
        });
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13])?
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth();
        config.resumption = rustls::client::Resumption::disabled();
        config.enable_sni = false;
        config.enable_secret_extraction = true;
        Ok(ClientTls {
            config: Arc::new(config),
            cipher,
        })
    }
}

/// Accepts exactly one certificate, and checks the handshake's signature
/// with it.
#[derive(Debug)]
struct Pinned {
    cert: CertificateDer<'static>,
    algs: WebPkiSupportedAlgorithms,
}

impl rustls::client::danger::ServerCertVerifier for Pinned {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        if end_entity.as_ref() == self.cert.as_ref() && intermediates.is_empty() {
            Ok(rustls::client::danger::ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::ApplicationVerificationFailure,
            ))
        }
    }

    fn verify_tls12_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        Err(rustls::Error::PeerIncompatible(
            rustls::PeerIncompatible::Tls12NotOffered,
        ))
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(message, cert, dss, &self.algs)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algs.supported_schemes()
    }
}

/// Which end of the handshakes this is.
pub enum Side<'a> {
    Client(&'a ClientTls),
    Server(&'a ServerTls),
}

/// What the handshakes agreed on (the same for every connection of a test).
#[derive(Debug, Clone, PartialEq)]
pub struct Negotiated {
    pub cipher: Cipher,
    /// The key exchange group, e.g. X25519.
    pub group: Option<String>,
    /// Wall time of all the handshakes, s.
    pub handshake_s: f64,
}

#[derive(Debug, thiserror::Error)]
pub enum HandshakeError {
    /// (connection number from 1, what went wrong)
    #[error("TLS handshake on data connection {0} failed: {1}")]
    Failed(usize, String),
    #[error("only {0} of {1} TLS handshakes completed in time")]
    Timeout(usize, usize),
    /// `abort` said so (the peer ended the test on the control connection).
    #[error("TLS handshakes abandoned")]
    Aborted,
    #[error("TLS handshakes: {0}")]
    Io(#[from] io::Error),
}

/// One handshake under way.
struct Pending {
    sock: TcpStream,
    conn: rustls::Connection,
    secrets: Arc<TrafficSecrets>,
    done: bool,
}

/// A connection's application traffic secrets as its handshake derives
/// them (rustls hands them to a key log; `dangerous_extract_secrets`
/// gives only the keys, and a KeyUpdate needs the secrets): client's,
/// server's.
#[derive(Debug, Default)]
struct TrafficSecrets(std::sync::Mutex<[Option<Vec<u8>>; 2]>);

impl TrafficSecrets {
    const LABELS: [&'static str; 2] = ["CLIENT_TRAFFIC_SECRET_0", "SERVER_TRAFFIC_SECRET_0"];

    /// The secret of the client's direction (true) or the server's.
    fn take(&self, client: bool) -> Option<Vec<u8>> {
        let mut s = self.0.lock().unwrap_or_else(|p| p.into_inner());
        s[usize::from(!client)].take()
    }
}

impl rustls::KeyLog for TrafficSecrets {
    fn will_log(&self, label: &str) -> bool {
        Self::LABELS.contains(&label)
    }

    fn log(&self, label: &str, _client_random: &[u8], secret: &[u8]) {
        if let Some(i) = Self::LABELS.iter().position(|l| *l == label) {
            self.0.lock().unwrap_or_else(|p| p.into_inner())[i] = Some(secret.to_vec());
        }
    }
}

/// Writes and reads until the handshake is over (true), or the socket
/// would block (false).
fn drive(p: &mut Pending) -> Result<bool, String> {
    loop {
        while p.conn.wants_write() {
            match p.conn.write_tls(&mut p.sock) {
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e.to_string()),
            }
        }
        if !p.conn.is_handshaking() {
            return Ok(true);
        }
        match p.conn.read_tls(&mut p.sock) {
            Ok(0) => return Err("the peer closed the connection during the handshake".into()),
            Ok(_) => {
                if let Err(e) = p.conn.process_new_packets() {
                    // Tell the peer why (the alert), best effort.
                    let _ = p.conn.write_tls(&mut p.sock);
                    return Err(e.to_string());
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(false),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// Runs the TLS handshakes of all of a test's data connections at once
/// (non-blocking, one epoll loop), so one slow connection holds up none of
/// the others; then takes over each connection's traffic keys. `abort` is
/// asked a few times a second (the control connection's state).
pub fn handshake_all(
    socks: Vec<TcpStream>,
    side: Side,
    deadline: Instant,
    abort: &dyn Fn() -> bool,
) -> Result<(Vec<TlsConn>, Negotiated), HandshakeError> {
    let t0 = Instant::now();
    let n = socks.len();
    let hs = (socks.into_iter().enumerate())
        .map(|(i, sock)| begin(i, sock, &side))
        .collect::<Result<Vec<_>, _>>()?;
    let hs = drive_all(hs, deadline, abort)?;
    let mut negotiated = None;
    let mut out = Vec::with_capacity(n);
    for (i, p) in hs.into_iter().enumerate() {
        let (conn, agreed) = take_over(i, p, &side, n)?;
        negotiated.get_or_insert(agreed);
        out.push(conn);
    }
    let mut negotiated = negotiated.unwrap_or(Negotiated {
        cipher: DEFAULT_CIPHER,
        group: None,
        handshake_s: 0.0,
    });
    negotiated.handshake_s = t0.elapsed().as_secs_f64();
    Ok((out, negotiated))
}

/// Connection `i`'s handshake, not yet under way (its socket non-blocking).
fn begin(i: usize, sock: TcpStream, side: &Side) -> Result<Pending, HandshakeError> {
    sock.set_nonblocking(true)?;
    let failed = |e: rustls::Error| HandshakeError::Failed(i + 1, e.to_string());
    // A key log of its own per connection: it then holds that
    // connection's secrets and no other's.
    let secrets = Arc::new(TrafficSecrets::default());
    let conn: rustls::Connection = match side {
        Side::Client(c) => {
            let name = ServerName::try_from(SERVER_NAME)
                .map_err(|e| HandshakeError::Failed(i + 1, e.to_string()))?;
            let mut config = (*c.config).clone();
            config.key_log = secrets.clone();
            (rustls::ClientConnection::new(Arc::new(config), name).map_err(failed)?).into()
        }
        Side::Server(s) => {
            let mut config = (*s.config).clone();
            config.key_log = secrets.clone();
            (rustls::ServerConnection::new(Arc::new(config)).map_err(failed)?).into()
        }
    };
    Ok(Pending {
        sock,
        conn,
        secrets,
        done: false,
    })
}

/// Drives every handshake to its end in one epoll loop, until `deadline`
/// or until `abort` says so.
fn drive_all(
    mut hs: Vec<Pending>,
    deadline: Instant,
    abort: &dyn Fn() -> bool,
) -> Result<Vec<Pending>, HandshakeError> {
    use mio::unix::SourceFd;
    use mio::{Events, Interest, Poll, Token};
    let n = hs.len();
    let mut poll = Poll::new()?;
    let mut left = n;
    for (i, p) in hs.iter_mut().enumerate() {
        let fd = p.sock.as_raw_fd();
        poll.registry().register(
            &mut SourceFd(&fd),
            Token(i),
            Interest::READABLE | Interest::WRITABLE,
        )?;
        p.done = drive(p).map_err(|e| HandshakeError::Failed(i + 1, e))?;
        left -= usize::from(p.done);
    }
    let mut events = Events::with_capacity(1024);
    while left > 0 {
        let now = Instant::now();
        if now >= deadline {
            return Err(HandshakeError::Timeout(n - left, n));
        }
        if abort() {
            return Err(HandshakeError::Aborted);
        }
        let wait = (deadline - now).min(Duration::from_millis(200));
        if let Err(e) = poll.poll(&mut events, Some(wait)) {
            if e.kind() != ErrorKind::Interrupted {
                return Err(e.into());
            }
        }
        for ev in events.iter() {
            let i = ev.token().0;
            let Some(p) = hs.get_mut(i).filter(|p| !p.done) else {
                continue;
            };
            p.done = drive(p).map_err(|e| HandshakeError::Failed(i + 1, e))?;
            left -= usize::from(p.done);
        }
    }
    Ok(hs)
}

/// Connection `i`'s finished handshake, its traffic keys taken over (one
/// of `n` connections), and what it agreed on.
fn take_over(
    i: usize,
    p: Pending,
    side: &Side,
    n: usize,
) -> Result<(TlsConn, Negotiated), HandshakeError> {
    let failed = |m: String| HandshakeError::Failed(i + 1, m);
    let suite = p.conn.negotiated_cipher_suite();
    let cipher = suite
        .and_then(Cipher::of_suite)
        .ok_or_else(|| failed(format!("unexpected cipher suite {suite:?}")))?;
    if let Side::Client(c) = side {
        if cipher != c.cipher {
            return Err(failed(format!("{cipher} negotiated, {} asked", c.cipher)));
        }
    }
    let group = p
        .conn
        .negotiated_key_exchange_group()
        .map(|g| format!("{:?}", g.name()));
    let secrets = match p.conn {
        rustls::Connection::Client(c) => c.dangerous_extract_secrets(),
        rustls::Connection::Server(s) => s.dangerous_extract_secrets(),
    }
    .map_err(|e| failed(format!("taking over the traffic keys: {e}")))?;
    p.sock.set_nonblocking(false)?;
    let client = matches!(side, Side::Client(_));
    let secret = |client: bool| {
        (p.secrets.take(client))
            .ok_or_else(|| failed("the handshake logged no traffic secret".into()))
    };
    let tx = RecordKey::new(cipher, secrets.tx, secret(client)?).map_err(&failed)?;
    let rx = RecordKey::new(cipher, secrets.rx, secret(!client)?).map_err(&failed)?;
    let agreed = Negotiated {
        cipher,
        group,
        handshake_s: 0.0,
    };
    Ok((TlsConn::new(p.sock, tx, rx, batch_for(n)), agreed))
}
