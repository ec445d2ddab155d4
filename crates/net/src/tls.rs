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
//! record layer (RFC 8446 section 5) runs here on ring's AEAD: the socket
//! is read in large pieces and records are decrypted in place and encrypted
//! into one reused buffer, with no allocation per record. What a test pays
//! for TLS is then the cipher and the framing, not a library's buffering.

use ring::aead::{self, Aad, LessSafeKey, Nonce, UnboundKey};
use rustls::crypto::{verify_tls13_signature, CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use rustls::{ConnectionTrafficSecrets, DigitallySignedStruct, SignatureScheme};
use std::io::{self, ErrorKind, Read, Write};
use std::net::TcpStream;
use std::os::fd::{AsRawFd, IntoRawFd, RawFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Who does what, for the disclosure.
pub const IMPLEMENTATION: &str =
    "handshake: rustls 0.23 (ring provider); record layer: iotoll's, on ring 0.17's AEAD";

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
        match self {
            Cipher::Aes128Gcm => "TLS13_AES_128_GCM_SHA256",
            Cipher::Aes256Gcm => "TLS13_AES_256_GCM_SHA384",
            Cipher::Chacha20Poly1305 => "TLS13_CHACHA20_POLY1305_SHA256",
        }
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
        use rustls::crypto::ring::cipher_suite as cs;
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
        ..rustls::crypto::ring::default_provider()
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
    done: bool,
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
    let conn: rustls::Connection = match side {
        Side::Client(c) => {
            let name = ServerName::try_from(SERVER_NAME)
                .map_err(|e| HandshakeError::Failed(i + 1, e.to_string()))?;
            (rustls::ClientConnection::new(c.config.clone(), name).map_err(failed)?).into()
        }
        Side::Server(s) => {
            (rustls::ServerConnection::new(s.config.clone()).map_err(failed)?).into()
        }
    };
    Ok(Pending {
        sock,
        conn,
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
    let tx = RecordKey::new(cipher, secrets.tx).map_err(&failed)?;
    let rx = RecordKey::new(cipher, secrets.rx).map_err(&failed)?;
    let agreed = Negotiated {
        cipher,
        group,
        handshake_s: 0.0,
    };
    Ok((TlsConn::new(p.sock, tx, rx, batch_for(n)), agreed))
}

/// One direction's key, static IV and record sequence number.
struct RecordKey {
    key: LessSafeKey,
    iv: [u8; aead::NONCE_LEN],
    seq: u64,
}

impl RecordKey {
    fn new(
        cipher: Cipher,
        (seq, secrets): (u64, ConnectionTrafficSecrets),
    ) -> Result<Self, String> {
        let (alg, key, iv) = match (cipher, secrets) {
            (Cipher::Aes128Gcm, ConnectionTrafficSecrets::Aes128Gcm { key, iv }) => {
                (&aead::AES_128_GCM, key, iv)
            }
            (Cipher::Aes256Gcm, ConnectionTrafficSecrets::Aes256Gcm { key, iv }) => {
                (&aead::AES_256_GCM, key, iv)
            }
            (Cipher::Chacha20Poly1305, ConnectionTrafficSecrets::Chacha20Poly1305 { key, iv }) => {
                (&aead::CHACHA20_POLY1305, key, iv)
            }
            _ => return Err(format!("the traffic keys are not {cipher}'s")),
        };
        let key = UnboundKey::new(alg, key.as_ref()).map_err(|_| "bad traffic key length")?;
        let iv: [u8; aead::NONCE_LEN] = iv.as_ref().try_into().map_err(|_| "bad IV length")?;
        Ok(RecordKey {
            key: LessSafeKey::new(key),
            iv,
            seq,
        })
    }

    /// The per-record nonce (RFC 8446 5.3): the sequence number, padded
    /// to the IV's length, XORed with the IV; then the number advances.
    fn next_nonce(&mut self) -> Nonce {
        let mut n = self.iv;
        for (b, s) in n[aead::NONCE_LEN - 8..]
            .iter_mut()
            .zip(self.seq.to_be_bytes())
        {
            *b ^= s;
        }
        self.seq += 1;
        Nonce::assume_unique_for_key(n)
    }
}

const HEADER: usize = 5;
const TAG: usize = 16;
/// Largest plaintext of a record (RFC 8446 5.1).
const MAX_PLAIN: usize = 1 << 14;
/// Largest ciphertext of a record (RFC 8446 5.2).
const MAX_CIPHER: usize = MAX_PLAIN + 256;
const APPLICATION_DATA: u8 = 23;
const ALERT: u8 = 21;
const HANDSHAKE: u8 = 22;
const CHANGE_CIPHER_SPEC: u8 = 20;
/// Socket reads and writes move up to this much at a time (plus a record)
/// with few connections; with many, less, so that all of a test's buffers
/// stay within [`BUFFER_BUDGET`].
const BATCH: usize = 256 << 10;
const MIN_BATCH: usize = MAX_PLAIN;
const BUFFER_BUDGET: usize = 64 << 20;

/// The batch of each of `conns` connections.
fn batch_for(conns: usize) -> usize {
    (BUFFER_BUDGET / conns.max(1)).clamp(MIN_BATCH, BATCH)
}

fn invalid(msg: impl Into<String>) -> io::Error {
    io::Error::new(ErrorKind::InvalidData, msg.into())
}

/// A data connection after its handshake: TLS 1.3 records over the socket,
/// read and written like a socket (`Read`/`Write` move application
/// payload; `WouldBlock` when the socket would block).
pub struct TlsConn {
    sock: TcpStream,
    tx: RecordKey,
    rx: RecordKey,
    /// Ciphertext read from the socket: `rbuf[rpos..rend]` is not yet
    /// decrypted.
    rbuf: Vec<u8>,
    rpos: usize,
    rend: usize,
    /// Decrypted payload not yet handed out: `rbuf[plain]`.
    plain: std::ops::Range<usize>,
    /// Records encrypted but not yet written: `wbuf[wpos..wend]`.
    wbuf: Vec<u8>,
    wpos: usize,
    wend: usize,
    /// The peer closed (TCP end or close_notify).
    eof: bool,
    /// Most plaintext encrypted per write, and ciphertext read per read
    /// (see [`batch_for`]).
    batch: usize,
}

impl TlsConn {
    fn new(sock: TcpStream, tx: RecordKey, rx: RecordKey, batch: usize) -> TlsConn {
        TlsConn {
            sock,
            tx,
            rx,
            batch,
            // Allocated by the first read (a sender never reads).
            rbuf: Vec::new(),
            rpos: 0,
            rend: 0,
            plain: 0..0,
            wbuf: Vec::new(),
            wpos: 0,
            wend: 0,
            eof: false,
        }
    }

    pub fn tcp(&self) -> &TcpStream {
        &self.sock
    }

    /// Decrypts the next whole record in the buffer, if there is one; its
    /// payload (possibly empty) becomes `plain`.
    fn open_record(&mut self) -> io::Result<bool> {
        let avail = self.rend - self.rpos;
        if avail < HEADER {
            return Ok(false);
        }
        let h: [u8; HEADER] = self.rbuf[self.rpos..self.rpos + HEADER]
            .try_into()
            .map_err(|_| invalid("record header"))?;
        let len = u16::from_be_bytes([h[3], h[4]]) as usize;
        if len > MAX_CIPHER {
            return Err(invalid(format!(
                "TLS record of {len} bytes exceeds the {MAX_CIPHER}-byte limit (record_overflow)"
            )));
        }
        if avail < HEADER + len {
            return Ok(false);
        }
        let body = self.rpos + HEADER..self.rpos + HEADER + len;
        self.rpos = body.end;
        match h[0] {
            APPLICATION_DATA => {}
            // Middlebox compatibility (RFC 8446 D.4): ignored.
            CHANGE_CIPHER_SPEC => return Ok(true),
            t => {
                return Err(invalid(format!(
                    "unexpected unencrypted TLS record of type {t}"
                )))
            }
        }
        let nonce = self.rx.next_nonce();
        let seq = self.rx.seq - 1;
        let inner = self
            .rx
            .key
            .open_in_place(nonce, Aad::from(h), &mut self.rbuf[body.clone()])
            .map_err(|_| {
                invalid(format!(
                    "TLS record {seq} failed authentication (bad_record_mac): the stream was altered"
                ))
            })?;
        // The content type is the last non-zero byte; zeros after it pad.
        let Some(t) = inner.iter().rposition(|b| *b != 0) else {
            return Err(invalid("TLS record without a content type"));
        };
        let (ctype, start) = (inner[t], body.start);
        match ctype {
            APPLICATION_DATA => self.plain = start..start + t,
            ALERT if inner[..t] == [1, 0] => self.eof = true,
            ALERT => {
                return Err(invalid(format!(
                    "TLS alert {} from the peer",
                    inner.get(1).copied().unwrap_or(0)
                )))
            }
            // A session ticket is of no use here; anything else after the
            // handshake (a KeyUpdate) is not followed by this record layer.
            HANDSHAKE if inner.first() == Some(&4) => {}
            other => {
                return Err(invalid(format!(
                "unexpected TLS message (content type {other}, first byte {}) after the handshake",
                inner.first().copied().unwrap_or(0)
            )))
            }
        }
        Ok(true)
    }

    /// Reads more ciphertext from the socket, first moving what is left to
    /// the front when the rest would not fit.
    fn fill(&mut self) -> io::Result<usize> {
        if self.rbuf.is_empty() {
            self.rbuf = vec![0; self.batch + HEADER + MAX_CIPHER];
        }
        if self.rbuf.len() - self.rend < HEADER + MAX_CIPHER {
            self.rbuf.copy_within(self.rpos..self.rend, 0);
            self.rend -= self.rpos;
            self.rpos = 0;
        }
        let n = self.sock.read(&mut self.rbuf[self.rend..])?;
        self.rend += n;
        Ok(n)
    }

    /// Writes out encrypted records; `WouldBlock` if some are left.
    fn flush_records(&mut self) -> io::Result<()> {
        while self.wpos < self.wend {
            match self.sock.write(&self.wbuf[self.wpos..self.wend]) {
                Ok(0) => return Err(ErrorKind::WriteZero.into()),
                Ok(n) => self.wpos += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Encrypts `data` as records into the (empty) write buffer.
    fn seal(&mut self, data: &[u8]) -> io::Result<()> {
        let records = data.len().div_ceil(MAX_PLAIN);
        let need = data.len() + records * (HEADER + 1 + TAG);
        if self.wbuf.len() < need {
            self.wbuf.resize(need, 0);
        }
        let mut at = 0;
        for chunk in data.chunks(MAX_PLAIN) {
            let len = chunk.len() + 1 + TAG;
            let len16 = (len as u16).to_be_bytes();
            let h = [APPLICATION_DATA, 3, 3, len16[0], len16[1]];
            self.wbuf[at..at + HEADER].copy_from_slice(&h);
            let body = at + HEADER..at + HEADER + chunk.len() + 1;
            self.wbuf[body.start..body.end - 1].copy_from_slice(chunk);
            self.wbuf[body.end - 1] = APPLICATION_DATA;
            let nonce = self.tx.next_nonce();
            let tag = self
                .tx
                .key
                .seal_in_place_separate_tag(nonce, Aad::from(h), &mut self.wbuf[body.clone()])
                .map_err(|_| invalid("TLS record encryption failed"))?;
            self.wbuf[body.end..body.end + TAG].copy_from_slice(tag.as_ref());
            at = body.end + TAG;
        }
        self.wpos = 0;
        self.wend = at;
        Ok(())
    }
}

impl Read for TlsConn {
    /// Hands out decrypted payload of every whole record already read;
    /// reads the socket only when there is none.
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let mut n = 0;
        loop {
            if !self.plain.is_empty() {
                let k = self.plain.len().min(out.len() - n);
                out[n..n + k].copy_from_slice(&self.rbuf[self.plain.start..self.plain.start + k]);
                self.plain.start += k;
                n += k;
                if n == out.len() {
                    return Ok(n);
                }
                continue;
            }
            if self.open_record()? {
                continue;
            }
            if n > 0 || self.eof {
                return Ok(n);
            }
            if self.fill()? == 0 {
                if self.rend > self.rpos {
                    return Err(invalid(
                        "the peer closed the connection inside a TLS record",
                    ));
                }
                self.eof = true;
            }
        }
    }
}

impl Write for TlsConn {
    /// Encrypts up to a batch of `data` and writes the records;
    /// records the socket did not take go out first on the next call
    /// (`WouldBlock` until they have).
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.flush_records()?;
        let take = data.len().min(self.batch);
        self.seal(&data[..take])?;
        match self.flush_records() {
            Err(e) if !matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => Err(e),
            _ => Ok(take),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        self.flush_records()
    }
}

impl AsRawFd for TlsConn {
    fn as_raw_fd(&self) -> RawFd {
        self.sock.as_raw_fd()
    }
}

impl IntoRawFd for TlsConn {
    fn into_raw_fd(self) -> RawFd {
        self.sock.into_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A connected loopback pair: (client end, server end).
    fn pair() -> (TcpStream, TcpStream) {
        crate::engine::tests::pairs(1).remove(0)
    }

    fn soon() -> Instant {
        Instant::now() + Duration::from_secs(30)
    }

    fn payload(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 + i / 251) as u8).collect()
    }

    /// Both ends' handshakes and record layers, over one connection.
    fn tls_pair(cipher: Cipher) -> (TlsConn, TlsConn, Negotiated) {
        let server = ServerTls::generate().unwrap();
        let client = ClientTls::pinned(cipher, &server.cert_hex()).unwrap();
        let (c, s) = pair();
        let t = std::thread::spawn(move || {
            handshake_all(vec![s], Side::Server(&server), soon(), &|| false).unwrap()
        });
        let (mut cc, n) = handshake_all(vec![c], Side::Client(&client), soon(), &|| false).unwrap();
        let (mut sc, sn) = t.join().unwrap();
        assert_eq!(n.cipher, sn.cipher);
        (cc.remove(0), sc.remove(0), n)
    }

    fn read_all(c: &mut impl Read, n: usize) -> Vec<u8> {
        let mut got = vec![0; n];
        let mut at = 0;
        while at < n {
            let k = c.read(&mut got[at..]).unwrap();
            assert!(k > 0, "early end after {at} of {n} bytes");
            at += k;
        }
        got
    }

    #[test]
    fn every_cipher_carries_data_both_ways_intact() {
        for cipher in Cipher::ALL {
            let (mut c, mut s, n) = tls_pair(cipher);
            assert_eq!(n.cipher, cipher);
            assert_eq!(n.group.as_deref(), Some("X25519"));
            // Sizes around the record boundary and a batch.
            for len in [1, MAX_PLAIN - 1, MAX_PLAIN, MAX_PLAIN + 1, 3 * BATCH + 5] {
                let data = payload(len);
                let writer = {
                    let data = data.clone();
                    let mut c2 = c;
                    std::thread::spawn(move || {
                        c2.write_all(&data).unwrap();
                        c2
                    })
                };
                assert_eq!(read_all(&mut s, len), data, "{cipher} {len} bytes");
                c = writer.join().unwrap();
                s.write_all(&data).unwrap();
                assert_eq!(read_all(&mut c, len), data, "{cipher} {len} bytes back");
            }
        }
    }

    /// The record layer is TLS 1.3's, not a private format: a plain rustls
    /// endpoint reads what it writes and the other way round.
    #[test]
    fn records_interoperate_with_rustls() {
        let server = ServerTls::generate().unwrap();
        let client = ClientTls::pinned(Cipher::Aes128Gcm, &server.cert_hex()).unwrap();
        let (c, s) = pair();
        let config = server.config.clone();
        let data = payload(200_000);
        let expect = data.clone();
        let t = std::thread::spawn(move || {
            let conn = rustls::ServerConnection::new(config).unwrap();
            let mut tls = rustls::StreamOwned::new(conn, s);
            let got = read_all(&mut tls, expect.len());
            assert!(got == expect, "rustls read other bytes than were sent");
            tls.write_all(b"reply from rustls").unwrap();
            tls.flush().unwrap();
            tls.conn.send_close_notify();
            tls.flush().unwrap();
        });
        let (mut cc, _) = handshake_all(vec![c], Side::Client(&client), soon(), &|| false).unwrap();
        let mut c = cc.remove(0);
        c.write_all(&data).unwrap();
        assert_eq!(read_all(&mut c, 17), b"reply from rustls");
        // close_notify is the end of the stream.
        assert_eq!(c.read(&mut [0; 16]).unwrap(), 0);
        t.join().unwrap();
    }

    #[test]
    fn another_certificate_is_refused() {
        let server = ServerTls::generate().unwrap();
        let other = ServerTls::generate().unwrap();
        let client = ClientTls::pinned(Cipher::Aes128Gcm, &other.cert_hex()).unwrap();
        let (c, s) = pair();
        let t = std::thread::spawn(move || {
            handshake_all(vec![s], Side::Server(&server), soon(), &|| false).err()
        });
        let e = handshake_all(vec![c], Side::Client(&client), soon(), &|| false)
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("data connection 1") && e.contains("certificate"),
            "{e}"
        );
        let e = t.join().unwrap().unwrap().to_string();
        assert!(e.contains("data connection 1"), "{e}");
    }

    /// Garbage instead of a ClientHello, and a peer that says nothing:
    /// each a clear error, the first at once.
    #[test]
    fn garbage_and_silence_fail_cleanly() {
        let server = ServerTls::generate().unwrap();
        let (mut c, s) = pair();
        c.write_all(&[0x42; 300]).unwrap();
        let t0 = Instant::now();
        let e = handshake_all(vec![s], Side::Server(&server), soon(), &|| false)
            .err()
            .unwrap();
        assert!(matches!(e, HandshakeError::Failed(1, _)), "{e}");
        assert!(t0.elapsed() < Duration::from_secs(10));
        let (_c, s) = pair();
        let deadline = Instant::now() + Duration::from_millis(300);
        let e = handshake_all(vec![s], Side::Server(&server), deadline, &|| false)
            .err()
            .unwrap();
        assert!(matches!(e, HandshakeError::Timeout(0, 1)), "{e}");
        let (_c, s) = pair();
        let e = handshake_all(vec![s], Side::Server(&server), soon(), &|| true)
            .err()
            .unwrap();
        assert!(matches!(e, HandshakeError::Aborted), "{e}");
    }

    #[test]
    fn an_altered_record_fails_authentication() {
        let (c, mut s, _) = tls_pair(Cipher::Aes128Gcm);
        // Seal one record by hand, flip a ciphertext bit, send it raw.
        let mut c = c;
        c.seal(b"hello, world").unwrap();
        let mut rec = c.wbuf[..c.wend].to_vec();
        rec[HEADER + 2] ^= 1;
        c.sock.write_all(&rec).unwrap();
        let e = s.read(&mut [0; 64]).unwrap_err();
        assert!(e.to_string().contains("bad_record_mac"), "{e}");
    }

    /// Both directions of TLS streams move when one engine thread at each
    /// end holds a sender and a receiver (the endpoint's `--dir bidir`):
    /// a TLS sender's socket never fills (its receiver decrypts faster than
    /// it encrypts), and once it starved the receivers of its thread.
    /// Waits for progress, not for a window, so a busy machine only slows it.
    #[test]
    fn one_thread_sends_and_receives_tls_both_ways() {
        use crate::engine::{DataConn, Engine, EngineParams, Role};
        use iotoll_run::{Phase, PhaseCell};
        let p = EngineParams {
            msg: 128 << 10,
            req: 1,
            resp: 1,
            burst: 1,
            verify: true,
        };
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for i in 0..2 {
            let (c, s, _) = tls_pair(Cipher::Aes128Gcm);
            let (ra, rb) = if i == 0 {
                (Role::Recv, Role::Send)
            } else {
                (Role::Send, Role::Recv)
            };
            a.push((DataConn::Tls(Box::new(c)), ra));
            b.push((DataConn::Tls(Box::new(s)), rb));
        }
        let phase = Arc::new(PhaseCell::new(Phase::Measure));
        let ea = Engine::start(a, p, phase.clone(), 1).unwrap();
        let eb = Engine::start(b, p, phase.clone(), 1).unwrap();
        // Each end's bytes count both of its connections; a starved
        // receiver shows below as rx 0 once the senders have gone far.
        let end = Instant::now() + Duration::from_secs(120);
        while ea.totals().1 < 64 << 20 || eb.totals().1 < 64 << 20 {
            assert!(Instant::now() < end, "no 64 MiB through each end in 120 s");
            std::thread::sleep(Duration::from_millis(10));
        }
        phase.set(Phase::Stop);
        for o in [ea.join(), eb.join()] {
            assert_eq!(o.errors, 0, "{:?}", o.first_error);
            let rx: u64 = o.per_conn.iter().map(|c| c.1.rx).sum();
            let tx: u64 = o.per_conn.iter().map(|c| c.1.tx).sum();
            assert!(rx >= 1 << 20 && tx >= 1 << 20, "rx {rx} tx {tx}");
        }
    }

    #[test]
    fn buffers_shrink_with_many_connections() {
        assert_eq!(batch_for(1), BATCH);
        assert_eq!(batch_for(10_000), MIN_BATCH);
        assert!(batch_for(1000) * 1000 <= BUFFER_BUDGET);
    }

    #[test]
    fn cipher_names() {
        assert_eq!(Cipher::parse("AES-128-GCM"), Some(Cipher::Aes128Gcm));
        assert_eq!(
            Cipher::parse("TLS13_CHACHA20_POLY1305_SHA256"),
            Some(Cipher::Chacha20Poly1305)
        );
        assert_eq!(Cipher::parse("rc4"), None);
        assert!(ClientTls::pinned(Cipher::Aes128Gcm, "zz").is_err());
    }
}
