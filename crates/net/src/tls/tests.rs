use super::record::*;
use super::*;
use std::io::{Read, Write};

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
    c.read_exact(&mut got).unwrap();
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
            (c, s) = carry(c, s, &data);
            s.write_all(&data).unwrap();
            assert_eq!(read_all(&mut c, len), data, "{cipher} {len} bytes back");
        }
    }
}

/// The record layer is TLS 1.3's, not a private format: a plain rustls
/// endpoint reads what it writes and the other way round.
#[test]
fn records_interoperate_with_rustls() {
    // Each cipher, and keys updated every 3rd record each way: rustls
    // follows our KeyUpdates, we follow its.
    for (cipher, update_after) in Cipher::ALL
        .map(|c| (c, 3))
        .into_iter()
        .chain([(DEFAULT_CIPHER, KEY_UPDATE_AFTER)])
    {
        let server = ServerTls::generate().unwrap();
        let client = ClientTls::pinned(cipher, &server.cert_hex()).unwrap();
        let (c, s) = pair();
        let config = server.config.clone();
        let data = payload(200_000);
        let expect = data.clone();
        let t = std::thread::spawn(move || {
            let conn = rustls::ServerConnection::new(config).unwrap();
            let mut tls = rustls::StreamOwned::new(conn, s);
            let got = read_all(&mut tls, expect.len());
            assert!(got == expect, "rustls read other bytes than were sent");
            if update_after < KEY_UPDATE_AFTER {
                tls.conn.refresh_traffic_keys().unwrap();
            }
            tls.write_all(b"reply from rustls").unwrap();
            tls.flush().unwrap();
            tls.conn.send_close_notify();
            tls.flush().unwrap();
        });
        let (mut cc, _) = handshake_all(vec![c], Side::Client(&client), soon(), &|| false).unwrap();
        let mut c = cc.remove(0);
        c.update_after = update_after;
        c.write_all(&data).unwrap();
        assert_eq!(read_all(&mut c, 17), b"reply from rustls", "{cipher}");
        // close_notify is the end of the stream.
        assert_eq!(c.read(&mut [0; 16]).unwrap(), 0);
        t.join().unwrap();
        // 13 records: an update after every 2.
        let updates = if update_after == 3 { (6, 1) } else { (0, 0) };
        assert_eq!((c.tx.generation, c.rx.generation), updates, "{cipher}");
    }
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
#[test]
fn one_thread_sends_and_receives_tls_both_ways() {
    use crate::engine::{tests::both_ways, DataConn, EngineParams};
    let p = EngineParams {
        msg: 128 << 10,
        req: 1,
        resp: 1,
        burst: 1,
        verify: true,
    };
    let tls = || {
        let (c, s, _) = tls_pair(Cipher::Aes128Gcm);
        (DataConn::Tls(Box::new(c)), DataConn::Tls(Box::new(s)))
    };
    // Each end's bytes count both of its connections; a starved
    // receiver shows below as rx 0 once the senders have gone far.
    for o in both_ways([tls(), tls()], p) {
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

/// Sends `data` from `a` to `b` (a thread writes, this one reads) and
/// checks it arrived intact; both ends back.
fn carry(a: TlsConn, mut b: TlsConn, data: &[u8]) -> (TlsConn, TlsConn) {
    let writer = {
        let (data, mut a) = (data.to_vec(), a);
        std::thread::spawn(move || {
            a.write_all(&data).unwrap();
            a
        })
    };
    assert!(read_all(&mut b, data.len()) == data, "data differs");
    (writer.join().unwrap(), b)
}

#[test]
fn keys_are_updated_before_their_limit_and_the_peer_follows() {
    for cipher in Cipher::ALL {
        let (mut c, mut s, _) = tls_pair(cipher);
        // Every 3rd record under a key: the 2 before it and the KeyUpdate.
        c.update_after = 3;
        s.update_after = 5;
        let data = payload(20 * MAX_PLAIN + 17);
        let (c, s) = carry(c, s, &data);
        let (s, c) = carry(s, c, &data);
        // 21 records, two data records per key: 10 updates one way; four
        // per key: 5 the other.
        assert_eq!((c.tx.generation, s.rx.generation), (10, 10), "{cipher}");
        assert_eq!((s.tx.generation, c.rx.generation), (5, 5), "{cipher}");
    }
}

#[test]
fn a_key_update_the_peer_asks_for_is_sent_before_the_next_record() {
    let (mut c, s, _) = tls_pair(DEFAULT_CIPHER);
    c.ask_key_update([24, 0, 0, 1, 1]).unwrap();
    let data = payload(MAX_PLAIN + 1);
    let (c, s) = carry(c, s, &data);
    assert_eq!((c.tx.generation, s.rx.generation), (1, 1));
    let (s, c) = carry(s, c, &data);
    assert_eq!((s.tx.generation, c.rx.generation), (1, 1));
    // A malformed one (request_update 2) ends the stream with its name.
    let (mut c, mut s) = (c, s);
    c.ask_key_update([24, 0, 0, 1, 2]).unwrap();
    let e = s.read(&mut [0; 16]).unwrap_err();
    assert!(e.to_string().contains("malformed TLS KeyUpdate"), "{e}");
}
