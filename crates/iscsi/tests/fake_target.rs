//! The initiator against a scripted target on loopback: what tgt never does
//! on request (NOP-In pings, Async messages, Reject, a one-command window,
//! bad Data-In, sense data, a dropped connection), each checked for the
//! exact answer or the named error.

use iotoll_iscsi::pdu::{self, op, Bhs, Decoder, Digests, NO_TAG};
use iotoll_iscsi::session::{Config, Session};
use iotoll_iscsi::{text, ErrorKind};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const IQN: &str = "iqn.2026-11.test.iotoll:fake";

/// The target's end of one connection.
struct Peer {
    sock: TcpStream,
    buf: Vec<u8>,
    stat_sn: u32,
    exp_cmd_sn: u32,
    /// MaxCmdSN = ExpCmdSN + window - 1.
    window: u32,
}

impl Peer {
    fn recv(&mut self) -> Option<(Bhs, Vec<u8>)> {
        let dec = Decoder {
            digests: Digests::default(),
            max_data: 1 << 20,
        };
        loop {
            if let Ok(Some((p, n))) = dec.decode(&self.buf) {
                let out = (p.bhs, p.data.to_vec());
                self.buf.drain(..n);
                return Some(out);
            }
            let mut chunk = [0u8; 65536];
            match self.sock.read(&mut chunk) {
                Ok(0) | Err(_) => return None,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
            }
        }
    }

    fn send(&mut self, mut bhs: Bhs, data: &[u8]) {
        bhs.set_u32(28, self.exp_cmd_sn);
        bhs.set_u32(
            32,
            self.exp_cmd_sn.wrapping_add(self.window).wrapping_sub(1),
        );
        let mut out = Vec::new();
        pdu::encode(&mut out, bhs, data, Digests::default());
        let _ = self.sock.write_all(&out);
    }

    /// A PDU that carries status: takes the next StatSN.
    fn send_status(&mut self, mut bhs: Bhs, data: &[u8]) {
        bhs.set_u32(24, self.stat_sn);
        self.stat_sn = self.stat_sn.wrapping_add(1);
        self.send(bhs, data);
    }

    /// Answers Login Requests until the full-feature phase: every stage
    /// transition granted, every operational key answered with a value
    /// the RFC result functions allow.
    fn login(&mut self) {
        loop {
            let (req, data) = self.recv().expect("login request");
            assert_eq!(req.opcode(), op::LOGIN_REQ);
            let keys = text::decode(&data).expect("login keys");
            self.exp_cmd_sn = req.u32_at(24);
            let nsg = req.flags() & 3;
            let mut answer: Vec<(&str, String)> = Vec::new();
            for (k, v) in &keys {
                let a = match k.as_str() {
                    "HeaderDigest" | "DataDigest" => "None".to_string(),
                    "InitialR2T" => "Yes".into(),
                    "ImmediateData" => "Yes".into(),
                    "MaxBurstLength" => "262144".into(),
                    "FirstBurstLength" => "65536".into(),
                    "MaxOutstandingR2T" | "MaxConnections" => "1".into(),
                    "DataPDUInOrder" | "DataSequenceInOrder" => "Yes".into(),
                    "ErrorRecoveryLevel" => "0".into(),
                    "DefaultTime2Wait" => "2".into(),
                    "DefaultTime2Retain" => "0".into(),
                    "AuthMethod" => "None".into(),
                    _ => continue,
                };
                let _ = v;
                answer.push((k.as_str(), a));
            }
            let refs: Vec<(&str, &str)> = answer.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let mut body = Vec::new();
            text::encode(&refs, &mut body);
            let mut b = Bhs::new(op::LOGIN_RESP, false, 0x80 | (req.flags() & 0x0c) | nsg);
            b.0[8..14].copy_from_slice(&req.0[8..14]);
            if nsg == 3 {
                b.set_u16(14, 7);
            }
            b.set_itt(req.itt());
            self.send_status(b, &body);
            if nsg == 3 {
                return;
            }
        }
    }

    /// The next SCSI Command, skipping nothing else: any other PDU first
    /// is returned as is.
    fn command(&mut self) -> Option<(Bhs, Vec<u8>)> {
        let (b, d) = self.recv()?;
        if b.opcode() == op::SCSI_COMMAND {
            self.exp_cmd_sn = b.u32_at(24).wrapping_add(1);
        }
        Some((b, d))
    }

    /// Completes a read with its data and status in one Data-In.
    fn read_done(&mut self, cmd: &Bhs, residual: u32) {
        let len = cmd.u32_at(20) - residual;
        let mut b = Bhs::new(
            op::DATA_IN,
            false,
            0x81 | if residual > 0 { 0x02 } else { 0 },
        );
        b.set_itt(cmd.itt());
        b.set_u32(20, NO_TAG);
        b.set_u32(44, residual);
        self.send_status(b, &vec![0xab; len as usize]);
    }
}

/// A target on a free loopback port running `script` on its one
/// connection after login.
fn fake(window: u32, script: impl FnOnce(&mut Peer) + Send + 'static) -> (String, JoinHandle<()>) {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let portal = l.local_addr().expect("addr").to_string();
    let h = std::thread::spawn(move || {
        let (sock, _) = l.accept().expect("accept");
        let mut p = Peer {
            sock,
            buf: Vec::new(),
            stat_sn: 100,
            exp_cmd_sn: 0,
            window,
        };
        p.login();
        script(&mut p);
    });
    (portal, h)
}

fn cfg() -> Config {
    Config {
        timeout: Duration::from_secs(3),
        ..Config::default()
    }
}

/// Reads 4 KiB on `slot` and reaps until it completes or the session
/// fails; the completion's result.
fn read_one(s: &mut Session, slot: usize, buf: &mut [u8]) -> Result<i64, iotoll_iscsi::Error> {
    // SAFETY: buf outlives the command: we reap until it completes or the
    // session fails (and is then not used for it again).
    unsafe { s.submit_io(slot, 1, true, 0, buf.len() as u32, 512, buf.as_mut_ptr())? };
    let mut got = None;
    let until = Instant::now() + Duration::from_secs(20);
    while got.is_none() {
        assert!(Instant::now() < until, "no completion and no error");
        s.reap(1, &mut |sl, r| {
            if sl == slot {
                got = Some(r)
            }
        })?;
    }
    Ok(got.unwrap_or_default())
}

#[test]
fn a_nop_in_ping_is_answered_at_once_with_its_tag() {
    let (portal, h) = fake(8, |p| {
        let mut ping = Bhs::new(op::NOP_IN, false, 0x80);
        ping.set_itt(NO_TAG);
        ping.set_u32(20, 0x1234_5678);
        ping.set_lun([0, 1, 0, 0, 0, 0, 0, 0]);
        let (cmd, _) = p.command().expect("command");
        p.send(ping, &[]);
        let (answer, _) = p.recv().expect("NOP-Out");
        assert_eq!(answer.opcode(), op::NOP_OUT);
        assert!(answer.immediate());
        assert_eq!(answer.itt(), NO_TAG);
        assert_eq!(answer.ttt(), 0x1234_5678);
        assert_eq!(answer.lun(), [0, 1, 0, 0, 0, 0, 0, 0]);
        p.read_done(&cmd, 0);
        let _ = p.recv();
    });
    let mut s = Session::login(&portal, IQN, &cfg(), 4).expect("login");
    let mut buf = vec![0u8; 4096];
    assert_eq!(read_one(&mut s, 0, &mut buf).expect("read"), 4096);
    assert!(buf.iter().all(|&b| b == 0xab));
    drop(s);
    h.join().expect("target script");
}

#[test]
fn an_async_logout_request_ends_the_session_naming_it() {
    let (portal, h) = fake(8, |p| {
        let _ = p.command();
        let mut a = Bhs::new(op::ASYNC, false, 0x80);
        a.set_itt(NO_TAG);
        a.set_byte(36, 1);
        a.set_u16(42, 5);
        p.send_status(a, &[]);
        let _ = p.recv();
    });
    let mut s = Session::login(&portal, IQN, &cfg(), 4).expect("login");
    let mut buf = vec![0u8; 4096];
    let e = read_one(&mut s, 0, &mut buf).expect_err("must fail");
    assert_eq!(e.kind, ErrorKind::Closed, "{e}");
    assert!(e.msg.contains("Async event 1"), "{e}");
    assert!(
        e.msg.contains("READ(16)"),
        "names the command outstanding: {e}"
    );
    drop(s);
    h.join().expect("target script");
}

#[test]
fn a_rejected_command_ends_the_session_naming_the_pdu() {
    let (portal, h) = fake(8, |p| {
        let (cmd, _) = p.command().expect("command");
        let mut r = Bhs::new(op::REJECT, false, 0x80);
        r.set_byte(2, 0x09);
        r.set_itt(NO_TAG);
        p.send_status(r, &cmd.0);
        let _ = p.recv();
    });
    let mut s = Session::login(&portal, IQN, &cfg(), 4).expect("login");
    let mut buf = vec![0u8; 4096];
    let e = read_one(&mut s, 0, &mut buf).expect_err("must fail");
    assert_eq!(e.kind, ErrorKind::Protocol, "{e}");
    assert!(e.msg.contains("rejected our SCSI Command PDU"), "{e}");
    assert!(e.msg.contains("invalid PDU field"), "{e}");
    drop(s);
    h.join().expect("target script");
}

#[test]
fn commands_stay_inside_a_one_command_window() {
    const N: usize = 6;
    let (portal, h) = fake(1, |p| {
        for _ in 0..N {
            let (cmd, _) = p.command().expect("command");
            // The window is one command: the next may only come after
            // this one's answer moved MaxCmdSN.
            assert_eq!(cmd.u32_at(24).wrapping_add(1), p.exp_cmd_sn);
            std::thread::sleep(Duration::from_millis(20));
            assert!(p.sock.set_nonblocking(true).is_ok());
            let mut extra = [0u8; 1];
            let early = matches!(p.sock.peek(&mut extra), Ok(n) if n > 0) || !p.buf.is_empty();
            assert!(p.sock.set_nonblocking(false).is_ok());
            assert!(!early, "a command was sent past MaxCmdSN");
            p.read_done(&cmd, 0);
        }
        let _ = p.recv();
    });
    let mut s = Session::login(&portal, IQN, &cfg(), N).expect("login");
    let mut bufs = vec![vec![0u8; 4096]; N];
    // One command first: the window a login grants opens with the first
    // answer, and only waits after it count.
    assert_eq!(read_one(&mut s, 0, &mut bufs[0]).expect("first read"), 4096);
    for (slot, b) in bufs.iter_mut().enumerate().skip(1) {
        // SAFETY: bufs outlive the commands, reaped below.
        unsafe {
            s.submit_io(slot, 1, true, 0, 4096, 512, b.as_mut_ptr())
                .expect("submit")
        };
    }
    let mut done = 1;
    let until = Instant::now() + Duration::from_secs(20);
    while done < N {
        assert!(Instant::now() < until);
        done += s.reap(1, &mut |_, r| assert_eq!(r, 4096)).expect("reap");
    }
    let st = s.stats();
    assert!(st.waited >= N as u64 - 2, "{st:?}");
    assert_eq!(st.min_window, 1, "{st:?}");
    drop(s);
    h.join().expect("target script");
}

#[test]
fn data_in_past_the_buffer_is_a_protocol_error() {
    let (portal, h) = fake(8, |p| {
        let (cmd, _) = p.command().expect("command");
        let mut b = Bhs::new(op::DATA_IN, false, 0x81);
        b.set_itt(cmd.itt());
        b.set_u32(40, 4000);
        p.send_status(b, &[0u8; 512]);
        let _ = p.recv();
    });
    let mut s = Session::login(&portal, IQN, &cfg(), 4).expect("login");
    let mut buf = vec![0u8; 4096];
    let e = read_one(&mut s, 0, &mut buf).expect_err("must fail");
    assert_eq!(e.kind, ErrorKind::Protocol, "{e}");
    assert!(e.msg.contains("Data-In of 512 bytes at offset 4000"), "{e}");
    drop(s);
    h.join().expect("target script");
}

#[test]
fn a_check_condition_fails_the_io_with_its_sense_and_a_short_read_is_short() {
    let (portal, h) = fake(8, |p| {
        let (cmd, _) = p.command().expect("command");
        let mut r = Bhs::new(op::SCSI_RESPONSE, false, 0x80);
        r.set_itt(cmd.itt());
        r.set_byte(3, 0x02);
        // SenseLength, then fixed-format sense: MEDIUM ERROR, 11/00.
        let mut sense = vec![
            0u8, 18, 0x70, 0, 0x03, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0x11, 0x00,
        ];
        sense.resize(20, 0);
        p.send_status(r, &sense);
        let (cmd, _) = p.command().expect("second command");
        p.read_done(&cmd, 1024);
        let _ = p.recv();
    });
    let mut s = Session::login(&portal, IQN, &cfg(), 4).expect("login");
    let mut buf = vec![0u8; 4096];
    let r = read_one(&mut s, 0, &mut buf).expect("completes");
    assert_eq!(r, -(libc::EIO as i64));
    let why = s.explain(0).expect("explained");
    assert!(
        why.contains("CHECK CONDITION") && why.contains("MEDIUM ERROR"),
        "{why}"
    );
    assert_eq!(
        read_one(&mut s, 1, &mut buf).expect("completes"),
        3072,
        "underflow"
    );
    drop(s);
    h.join().expect("target script");
}

#[test]
fn a_dropped_connection_and_a_silent_target_are_named_errors() {
    let (portal, h) = fake(8, |p| {
        let _ = p.command();
        let _ = p.sock.shutdown(std::net::Shutdown::Both);
    });
    let mut s = Session::login(&portal, IQN, &cfg(), 4).expect("login");
    let mut buf = vec![0u8; 4096];
    let e = read_one(&mut s, 0, &mut buf).expect_err("must fail");
    assert_eq!(e.kind, ErrorKind::Closed, "{e}");
    assert!(e.msg.contains("closed the connection"), "{e}");
    h.join().expect("target script");

    let (portal, h) = fake(8, |p| {
        let _ = p.command();
        // Says nothing more, keeps the connection open past the timeout.
        std::thread::sleep(Duration::from_secs(5));
    });
    let mut s = Session::login(&portal, IQN, &cfg(), 4).expect("login");
    let t = Instant::now();
    let e = read_one(&mut s, 0, &mut buf).expect_err("must time out");
    assert_eq!(e.kind, ErrorKind::Timeout, "{e}");
    assert!(e.msg.contains("no answer within 3 s to a READ(16)"), "{e}");
    assert!(t.elapsed() < Duration::from_secs(15));
    h.join().expect("target script");
}
