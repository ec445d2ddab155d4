//! The TLS 1.3 record layer (RFC 8446 section 5) on aws-lc-rs' AEAD, once the
//! handshake's traffic keys are taken over: records decrypted in place
//! and encrypted into one reused buffer, no allocation per record.

use super::Cipher;
use aws_lc_rs::aead::{self, Aad, LessSafeKey, Nonce, UnboundKey};
use aws_lc_rs::hkdf;
use rustls::ConnectionTrafficSecrets;
use std::io::{self, ErrorKind, Read, Write};
use std::net::TcpStream;
use std::os::fd::{AsRawFd, IntoRawFd, RawFd};

/// Records sent under one key before the sender updates it (RFC 8446
/// 5.5: AES-GCM keys are good for 2^24.5 full-size records; the same
/// limit is kept for every cipher).
pub(super) const KEY_UPDATE_AFTER: u64 = 1 << 24;

/// The handshake message type of a KeyUpdate (RFC 8446 4.6.3).
const KEY_UPDATE: u8 = 24;

/// One direction's key, static IV and record sequence number, and the
/// traffic secret they come from (the next key is derived from it).
pub(super) struct RecordKey {
    key: LessSafeKey,
    iv: [u8; aead::NONCE_LEN],
    seq: u64,
    cipher: Cipher,
    secret: Vec<u8>,
    /// Updates so far.
    pub(super) generation: u64,
}

impl Cipher {
    /// The AEAD, the suite's hash for HKDF, and the key length.
    fn algorithms(self) -> (&'static aead::Algorithm, hkdf::Algorithm) {
        match self {
            Cipher::Aes128Gcm => (&aead::AES_128_GCM, hkdf::HKDF_SHA256),
            Cipher::Aes256Gcm => (&aead::AES_256_GCM, hkdf::HKDF_SHA384),
            Cipher::Chacha20Poly1305 => (&aead::CHACHA20_POLY1305, hkdf::HKDF_SHA256),
        }
    }
}

/// HKDF-Expand-Label(secret, label, "", len) (RFC 8446 7.1).
fn expand_label(alg: hkdf::Algorithm, secret: &[u8], label: &[u8], len: usize) -> Vec<u8> {
    struct Len(usize);
    impl hkdf::KeyType for Len {
        fn len(&self) -> usize {
            self.0
        }
    }
    let (out_len, label_len) = ((len as u16).to_be_bytes(), [6 + label.len() as u8]);
    let info = [&out_len[..], &label_len, b"tls13 ", label, &[0]];
    let mut out = vec![0; len];
    // Only a length over 255 hashes fails; these are at most 48 bytes.
    let prk = hkdf::Prk::new_less_safe(alg, secret);
    if let Ok(okm) = prk.expand(&info, Len(len)) {
        let _ = okm.fill(&mut out);
    }
    out
}

impl RecordKey {
    /// The key of `secret`, a traffic secret of `cipher`'s suite.
    pub(super) fn from_secret(cipher: Cipher, secret: Vec<u8>) -> Result<Self, String> {
        let (aead_alg, hkdf_alg) = cipher.algorithms();
        let key = expand_label(hkdf_alg, &secret, b"key", aead_alg.key_len());
        let iv = expand_label(hkdf_alg, &secret, b"iv", aead::NONCE_LEN);
        let key = UnboundKey::new(aead_alg, &key).map_err(|_| "bad traffic key length")?;
        Ok(RecordKey {
            key: LessSafeKey::new(key),
            iv: iv.try_into().map_err(|_| "bad IV length")?,
            seq: 0,
            cipher,
            secret,
            generation: 0,
        })
    }

    /// The key of `secret` at sequence number `seq`, checked against the
    /// key and IV the handshake gave: a secret that is not this
    /// connection's, or a derivation that differs from rustls', would
    /// only show later as records that fail or a KeyUpdate the peer cannot
    /// follow.
    pub(super) fn new(
        cipher: Cipher,
        (seq, extracted): (u64, ConnectionTrafficSecrets),
        secret: Vec<u8>,
    ) -> Result<Self, String> {
        let (key, iv) = match (cipher, extracted) {
            (Cipher::Aes128Gcm, ConnectionTrafficSecrets::Aes128Gcm { key, iv })
            | (Cipher::Aes256Gcm, ConnectionTrafficSecrets::Aes256Gcm { key, iv })
            | (Cipher::Chacha20Poly1305, ConnectionTrafficSecrets::Chacha20Poly1305 { key, iv }) => {
                (key, iv)
            }
            _ => return Err(format!("the traffic keys are not {cipher}'s")),
        };
        let mut k = RecordKey::from_secret(cipher, secret)?;
        let (aead_alg, hkdf_alg) = cipher.algorithms();
        let derived = expand_label(hkdf_alg, &k.secret, b"key", aead_alg.key_len());
        if derived != key.as_ref() || k.iv[..] != *iv.as_ref() {
            return Err("the traffic secret does not give the handshake's keys".into());
        }
        k.seq = seq;
        Ok(k)
    }

    /// The next generation's key (RFC 8446 7.2): the secret expanded with
    /// "traffic upd", its key and IV, sequence numbers from 0.
    fn update(&mut self) -> Result<(), String> {
        let (_, hkdf_alg) = self.cipher.algorithms();
        let len = hkdf::KeyType::len(&hkdf_alg);
        let next = expand_label(hkdf_alg, &self.secret, b"traffic upd", len);
        let generation = self.generation + 1;
        *self = RecordKey::from_secret(self.cipher, next)?;
        self.generation = generation;
        Ok(())
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

pub(super) const HEADER: usize = 5;
pub(super) const TAG: usize = 16;
/// Largest plaintext of a record (RFC 8446 5.1).
pub(super) const MAX_PLAIN: usize = 1 << 14;
/// Largest ciphertext of a record (RFC 8446 5.2).
pub(super) const MAX_CIPHER: usize = MAX_PLAIN + 256;
pub(super) const APPLICATION_DATA: u8 = 23;
pub(super) const ALERT: u8 = 21;
pub(super) const HANDSHAKE: u8 = 22;
pub(super) const CHANGE_CIPHER_SPEC: u8 = 20;
/// Socket reads and writes move up to this much at a time (plus a record)
/// with few connections; with many, less, so that all of a test's buffers
/// stay within [`BUFFER_BUDGET`].
pub(super) const BATCH: usize = 256 << 10;
pub(super) const MIN_BATCH: usize = MAX_PLAIN;
pub(super) const BUFFER_BUDGET: usize = 64 << 20;

/// The batch of each of `conns` connections.
pub(super) fn batch_for(conns: usize) -> usize {
    (BUFFER_BUDGET / conns.max(1)).clamp(MIN_BATCH, BATCH)
}

fn invalid(msg: impl Into<String>) -> io::Error {
    io::Error::new(ErrorKind::InvalidData, msg.into())
}

/// A data connection after its handshake: TLS 1.3 records over the socket,
/// read and written like a socket (`Read`/`Write` move application
/// payload; `WouldBlock` when the socket would block).
pub struct TlsConn {
    pub(super) sock: TcpStream,
    pub(super) tx: RecordKey,
    pub(super) rx: RecordKey,
    /// Records sent under one key before it is updated.
    pub(super) update_after: u64,
    /// The peer asked for a KeyUpdate: ours goes before our next record.
    update_asked: bool,
    /// Ciphertext read from the socket: `rbuf[rpos..rend]` is not yet
    /// decrypted.
    rbuf: Vec<u8>,
    rpos: usize,
    rend: usize,
    /// Decrypted payload not yet handed out: `rbuf[plain]`.
    plain: std::ops::Range<usize>,
    /// Records encrypted but not yet written: `wbuf[wpos..wend]`.
    pub(super) wbuf: Vec<u8>,
    wpos: usize,
    pub(super) wend: usize,
    /// The peer closed (TCP end or close_notify).
    eof: bool,
    /// Most plaintext encrypted per write, and ciphertext read per read
    /// (see [`batch_for`]).
    batch: usize,
}

impl TlsConn {
    pub(super) fn new(sock: TcpStream, tx: RecordKey, rx: RecordKey, batch: usize) -> TlsConn {
        TlsConn {
            sock,
            tx,
            rx,
            update_after: KEY_UPDATE_AFTER,
            update_asked: false,
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
            // The peer's next records are under its next key; it may ask
            // for ours to change too. Nothing may follow a KeyUpdate in its
            // record (RFC 8446 5.1: no handshake message spans a key
            // change).
            HANDSHAKE if inner.first() == Some(&KEY_UPDATE) => {
                let request = match inner[..t] {
                    [KEY_UPDATE, 0, 0, 1, r @ (0 | 1)] => r,
                    _ => return Err(invalid("malformed TLS KeyUpdate from the peer")),
                };
                self.rx.update().map_err(invalid)?;
                self.update_asked |= request == 1;
            }
            // A session ticket is of no use here.
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

    /// Encrypts `data` as records into the (empty) write buffer, each
    /// record's key updated first when it is due.
    pub(super) fn seal(&mut self, data: &[u8]) -> io::Result<()> {
        let records = data.len().div_ceil(MAX_PLAIN);
        // At worst a KeyUpdate before every record.
        let need = data.len() + records * (2 * (HEADER + 1 + TAG) + KEY_UPDATE_MSG.len());
        if self.wbuf.len() < need {
            self.wbuf.resize(need, 0);
        }
        let mut at = 0;
        for chunk in data.chunks(MAX_PLAIN) {
            // The KeyUpdate is the old key's last record.
            if self.update_asked || self.tx.seq + 1 >= self.update_after {
                at = self.seal_record(at, &KEY_UPDATE_MSG, HANDSHAKE)?;
                self.tx.update().map_err(invalid)?;
                self.update_asked = false;
            }
            at = self.seal_record(at, chunk, APPLICATION_DATA)?;
        }
        self.wpos = 0;
        self.wend = at;
        Ok(())
    }

    /// Encrypts one record of `content` of type `ctype` into the write
    /// buffer at `at`; where it ends.
    fn seal_record(&mut self, at: usize, content: &[u8], ctype: u8) -> io::Result<usize> {
        let len = content.len() + 1 + TAG;
        let len16 = (len as u16).to_be_bytes();
        let h = [APPLICATION_DATA, 3, 3, len16[0], len16[1]];
        self.wbuf[at..at + HEADER].copy_from_slice(&h);
        let body = at + HEADER..at + HEADER + content.len() + 1;
        self.wbuf[body.start..body.end - 1].copy_from_slice(content);
        self.wbuf[body.end - 1] = ctype;
        let nonce = self.tx.next_nonce();
        let tag = self
            .tx
            .key
            .seal_in_place_separate_tag(nonce, Aad::from(h), &mut self.wbuf[body.clone()])
            .map_err(|_| invalid("TLS record encryption failed"))?;
        self.wbuf[body.end..body.end + TAG].copy_from_slice(tag.as_ref());
        Ok(body.end + TAG)
    }
}

#[cfg(test)]
impl TlsConn {
    /// Sends a KeyUpdate asking the peer to update its key too (iotoll
    /// never asks; a peer may), and its raw bytes as sent.
    pub(super) fn ask_key_update(&mut self, msg: [u8; 5]) -> io::Result<()> {
        self.wbuf.resize(HEADER + msg.len() + 1 + TAG, 0);
        let end = self.seal_record(0, &msg, HANDSHAKE)?;
        self.tx.update().map_err(invalid)?;
        self.sock.write_all(&self.wbuf[..end])
    }
}

/// Our KeyUpdate: update_not_requested (we never ask the peer to change
/// its key; each side updates its own before its limit).
const KEY_UPDATE_MSG: [u8; 5] = [KEY_UPDATE, 0, 0, 1, 0];

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
