//! The initiator against a scripted target on loopback: what tgt never does
//! on request (NOP-In pings, Async messages, Reject, a one-command window,
//! bad Data-In, sense data, a dropped connection, hostile R2Ts and Data-In,
//! answers dribbled out, a target that stops reading), each checked for the
//! exact answer or the named error.

#[path = "common/fake.rs"]
mod fake;
#[path = "common/start.rs"]
mod start;

use fake::{fake, serve, Peer, IQN};
use iotoll_iscsi::pdu::{op, Bhs, Digests, NO_TAG};
use iotoll_iscsi::session::{self, Config, Session};
use iotoll_iscsi::{Error, ErrorKind};
use std::io::Write;
use std::time::{Duration, Instant};

fn cfg() -> Config {
    cfg_timeout(3)
}

fn cfg_timeout(secs: u64) -> Config {
    Config {
        timeout: Duration::from_secs(secs),
        ..Config::default()
    }
}

/// Starts an I/O of `buf.len()` bytes on `slot`, at the start of LUN 1.
fn submit(s: &mut Session, slot: usize, read: bool, buf: &mut [u8]) -> Result<(), Error> {
    // SAFETY: every test reaps until the command completes or the session
    // fails (and is then not used for it again), and buf outlives that.
    unsafe { start::start_io(s, slot, 1, read, 0, buf.len() as u32, buf.as_mut_ptr()) }
}

/// Reaps until `slot` completes or the session fails: its result.
fn complete(s: &mut Session, slot: usize) -> Result<i64, Error> {
    let mut got = None;
    let until = Instant::now() + Duration::from_secs(60);
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

/// Reads `buf.len()` bytes on `slot`: the completion's result.
fn read_one(s: &mut Session, slot: usize, buf: &mut [u8]) -> Result<i64, Error> {
    submit(s, slot, true, buf)?;
    complete(s, slot)
}

/// A read of `len` bytes answered by `script` (the command in hand): its
/// result, the data checked against [`pattern`] when it completes.
fn read_meets(
    len: usize,
    script: impl FnOnce(&mut Peer, &Bhs) + Send + 'static,
) -> Result<i64, Error> {
    let (portal, h) = fake(8, move |p| {
        let (cmd, _) = p.command().expect("command");
        script(p, &cmd);
        while p.recv().is_some() {}
    });
    let mut s = Session::login(&portal, IQN, &cfg(), 4, None).expect("login");
    let mut buf = vec![0u8; len];
    let r = read_one(&mut s, 0, &mut buf);
    if r.is_ok() {
        assert!(buf == pattern(len), "the data read differs");
    }
    drop(s);
    h.join().expect("target script");
    r
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
    let mut s = Session::login(&portal, IQN, &cfg(), 4, None).expect("login");
    let mut buf = vec![0u8; 4096];
    assert_eq!(read_one(&mut s, 0, &mut buf).expect("read"), 4096);
    assert!(buf.iter().all(|&b| b == 0xab));
    drop(s);
    h.join().expect("target script");
}

#[test]
fn an_async_logout_request_ends_the_session_naming_it() {
    let e = read_meets(4096, |p, _| {
        let mut a = Bhs::new(op::ASYNC, false, 0x80);
        a.set_itt(NO_TAG);
        a.set_byte(36, 1);
        a.set_u16(42, 5);
        p.send_status(a, &[]);
    })
    .expect_err("must fail");
    assert_eq!(e.kind, ErrorKind::Closed, "{e}");
    assert!(e.msg.contains("Async event 1"), "{e}");
    assert!(
        e.msg.contains("READ(16)"),
        "names the command outstanding: {e}"
    );
}

#[test]
fn a_rejected_command_ends_the_session_naming_the_pdu() {
    let e = read_meets(4096, |p, cmd| {
        let mut r = Bhs::new(op::REJECT, false, 0x80);
        r.set_byte(2, 0x09);
        r.set_itt(NO_TAG);
        p.send_status(r, &cmd.0);
    })
    .expect_err("must fail");
    assert_eq!(e.kind, ErrorKind::Protocol, "{e}");
    assert!(e.msg.contains("rejected our SCSI Command PDU"), "{e}");
    assert!(e.msg.contains("invalid PDU field"), "{e}");
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
    let mut s = Session::login(&portal, IQN, &cfg(), N, None).expect("login");
    let mut bufs = vec![vec![0u8; 4096]; N];
    // One command first: the window a login grants opens with the first
    // answer, and only waits after it count.
    assert_eq!(read_one(&mut s, 0, &mut bufs[0]).expect("first read"), 4096);
    for (slot, b) in bufs.iter_mut().enumerate().skip(1) {
        submit(&mut s, slot, true, b).expect("submit");
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
    let e = read_meets(4096, |p, cmd| {
        let mut b = Bhs::new(op::DATA_IN, false, 0x81);
        b.set_itt(cmd.itt());
        b.set_u32(40, 4000);
        p.send_status(b, &[0u8; 512]);
    })
    .expect_err("must fail");
    assert_eq!(e.kind, ErrorKind::Protocol, "{e}");
    assert!(e.msg.contains("Data-In of 512 bytes at offset 4000"), "{e}");
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
    let mut s = Session::login(&portal, IQN, &cfg(), 4, None).expect("login");
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
    let e = read_meets(4096, |p, _| {
        let _ = p.sock.shutdown(std::net::Shutdown::Both);
    })
    .expect_err("must fail");
    assert_eq!(e.kind, ErrorKind::Closed, "{e}");
    assert!(e.msg.contains("closed the connection"), "{e}");

    let (portal, h) = fake(8, |p| {
        let _ = p.command();
        // Says nothing more, keeps the connection open past the timeout.
        std::thread::sleep(Duration::from_secs(5));
    });
    let mut s = Session::login(&portal, IQN, &cfg(), 4, None).expect("login");
    let mut buf = vec![0u8; 4096];
    let t = Instant::now();
    let e = read_one(&mut s, 0, &mut buf).expect_err("must time out");
    assert_eq!(e.kind, ErrorKind::Timeout, "{e}");
    assert!(e.msg.contains("no answer within 3 s to a READ(16)"), "{e}");
    assert!(t.elapsed() < Duration::from_secs(15));
    h.join().expect("target script");
}

// ---- hostile targets ---------------------------------------------------------

/// `len` bytes whose every 4-byte word is its own offset: a byte in the
/// wrong place or sent twice shows.
fn pattern(len: usize) -> Vec<u8> {
    (0..len / 4)
        .flat_map(|i| ((i * 4) as u32).to_be_bytes())
        .collect()
}

/// Reads the Data-Out PDUs of one sequence (TTT `ttt`) until the F bit,
/// checking DataSN and offsets; appends their data to `into`.
fn data_out_sequence(p: &mut Peer, ttt: u32, from: u32, into: &mut Vec<u8>) {
    let mut off = from;
    for sn in 0.. {
        let (b, d) = p.recv().expect("Data-Out");
        assert_eq!(b.opcode(), op::DATA_OUT, "{b:?}");
        assert_eq!(b.ttt(), ttt, "{b:?}");
        assert_eq!(b.u32_at(36), sn, "DataSN");
        assert_eq!(b.u32_at(40), off, "buffer offset");
        off += d.len() as u32;
        into.extend_from_slice(&d);
        if b.final_bit() {
            return;
        }
    }
}

/// Immediate data, unsolicited Data-Out up to FirstBurstLength, then one
/// R2T per MaxBurstLength, each answered exactly: the target gets every
/// byte once, in order (what tgt exercises too, checked here byte by byte).
#[test]
fn a_write_sends_each_byte_once_as_asked() {
    const LEN: usize = 1 << 20;
    let want = pattern(LEN);
    let (portal, h) = serve(move |p| {
        p.keys = vec![("InitialR2T", "No".into())];
        p.login();
        let (cmd, imm) = p.command().expect("command");
        assert_eq!(
            imm.len(),
            8192,
            "immediate data: the target's 8 KiB segment"
        );
        let mut got = imm;
        data_out_sequence(p, NO_TAG, 8192, &mut got);
        assert_eq!(got.len(), 65536, "unsolicited data: FirstBurstLength");
        for (k, off) in (65536..LEN as u32).step_by(262144).enumerate() {
            let len = (LEN as u32 - off).min(262144);
            let r = p.r2t(&cmd, 0x100 + k as u32, k as u32, off, len);
            p.sock.write_all(&r).expect("R2T");
            data_out_sequence(p, 0x100 + k as u32, off, &mut got);
        }
        assert!(got == pattern(LEN), "the data written differs");
        p.good(&cmd);
        let _ = p.recv();
    });
    let mut s = Session::login(&portal, IQN, &cfg(), 4, None).expect("login");
    let mut buf = want;
    submit(&mut s, 0, false, &mut buf).expect("submit");
    assert_eq!(complete(&mut s, 0).expect("write"), LEN as i64);
    drop(s);
    h.join().expect("target script");
}

/// A 1 MiB write that `script` answers (after the command and its 8 KiB
/// of immediate data): the named protocol error it ends in.
fn write_fails(script: impl FnOnce(&mut Peer, &Bhs) + Send + 'static) -> String {
    let (portal, h) = fake(8, move |p| {
        let (cmd, _) = p.command().expect("command");
        script(p, &cmd);
        while p.recv().is_some() {}
    });
    let mut s = Session::login(&portal, IQN, &cfg(), 4, None).expect("login");
    let mut buf = vec![0u8; 1 << 20];
    submit(&mut s, 0, false, &mut buf).expect("submit");
    let e = complete(&mut s, 0).expect_err("must fail");
    assert_eq!(e.kind, ErrorKind::Protocol, "{e}");
    assert!(e.msg.contains("WRITE(16)"), "names the command: {e}");
    drop(s);
    h.join().expect("target script");
    e.msg
}

/// [`write_fails`] with `r2ts` from the target, sent in one go.
fn write_meets(r2ts: impl FnOnce(&Peer, &Bhs) -> Vec<u8> + Send + 'static) -> String {
    write_fails(move |p, cmd| {
        let batch = r2ts(p, cmd);
        let _ = p.sock.write_all(&batch);
    })
}

#[test]
fn r2ts_outside_the_negotiated_rules_are_protocol_errors() {
    const MIB: u32 = 1 << 20;
    // The attack seen: thousands of R2Ts, each for the whole transfer.
    let e = write_meets(|p, c| (0..4000).flat_map(|k| p.r2t(c, k, k, 0, MIB)).collect());
    assert!(
        e.contains("R2T (R2TSN 0) for 1048576 bytes at offset 0"),
        "{e}"
    );
    assert!(e.contains("already sent"), "{e}");
    // The same past the immediate data: the second is one too many.
    let e = write_meets(|p, c| {
        (0..4000)
            .flat_map(|k| p.r2t(c, k, k, 8192, 262144))
            .collect()
    });
    assert!(e.contains("R2T (R2TSN 1)"), "{e}");
    assert!(
        e.contains("MaxOutstandingR2T=1") || e.contains("already sent"),
        "{e}"
    );
    let e = write_meets(|p, c| p.r2t(c, 1, 1, 8192, 4096));
    assert!(e.contains("where R2TSN 0 was next"), "{e}");
    let e = write_meets(|p, c| p.r2t(c, 1, 0, 8192, 262145));
    assert!(e.contains("MaxBurstLength (262144)"), "{e}");
    let e = write_meets(|p, c| p.r2t(c, 1, 0, 8192, 0));
    assert!(e.contains("MaxBurstLength"), "{e}");
    let e = write_meets(|p, c| p.r2t(c, 1, 0, MIB - 4096, 8192));
    assert!(e.contains("of 1048576 bytes"), "{e}");
}

/// A range asked for, answered, then asked for again.
#[test]
fn an_r2t_for_data_already_sent_is_a_protocol_error() {
    let e = write_fails(|p, cmd| {
        let r = p.r2t(cmd, 7, 0, 8192, 65536);
        p.sock.write_all(&r).expect("R2T");
        data_out_sequence(p, 7, 8192, &mut Vec::new());
        let r = p.r2t(cmd, 8, 1, 8192 + 32768, 65536);
        p.sock.write_all(&r).expect("R2T");
    });
    assert!(
        e.contains("R2T (R2TSN 1) for 65536 bytes at offset 40960"),
        "{e}"
    );
    assert!(e.contains("up to offset 73728 were already sent"), "{e}");
}

/// A target that asks for 16 MiB and does not read: the Data-Out waits
/// in the I/O buffer, not in the send buffer, which stays within its
/// limit; once the target reads, every byte arrives once, in order.
#[test]
fn a_target_that_stops_reading_holds_a_write_back_not_the_memory() {
    const BURST: u32 = 16776192;
    const LEN: usize = 8192 + BURST as usize;
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let (portal, h) = serve(move |p| {
        p.keys = vec![("MaxBurstLength", BURST.to_string())];
        p.login();
        fake::shrink_buffers(&p.sock);
        let (cmd, imm) = p.command().expect("command");
        let r = p.r2t(&cmd, 9, 0, 8192, BURST);
        p.sock.write_all(&r).expect("R2T");
        // Reads nothing until the initiator has filled its send buffer.
        let _ = go_rx.recv();
        let mut got = imm;
        data_out_sequence(p, 9, 8192, &mut got);
        assert!(got == pattern(LEN), "the data written differs");
        p.good(&cmd);
        let _ = p.recv();
    });
    let mut s = Session::login(&portal, IQN, &cfg(), 4, None).expect("login");
    let mut buf = pattern(LEN);
    submit(&mut s, 0, false, &mut buf).expect("submit");
    let bound = session::TX_LIMIT + session::MAX_SEGMENT as usize + 64;
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        assert!(Instant::now() < until, "the send buffer never filled");
        s.reap(0, &mut |_, _| {}).expect("progress");
        let unsent = s.unsent();
        assert!(unsent <= bound, "{unsent} bytes queued, past {bound}");
        if unsent >= session::TX_LIMIT / 2 {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let _ = go_tx.send(());
    assert_eq!(complete(&mut s, 0).expect("write"), LEN as i64);
    drop(s);
    h.join().expect("target script");
}

/// A target that pings without end and reads nothing: the initiator stops
/// reading once its answers fill the send buffer, so the target is held
/// back by TCP instead of growing the initiator's memory.
#[test]
fn a_target_that_pings_and_stops_reading_is_held_back() {
    const FLOOD: usize = 160 << 20;
    let sent = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (sent2, done2) = (sent.clone(), done.clone());
    let (portal, h) = fake(8, move |p| {
        fake::shrink_buffers(&p.sock);
        let _ = p.command().expect("command");
        let mut ping = Bhs::new(op::NOP_IN, false, 0x80);
        ping.set_itt(NO_TAG);
        ping.set_u32(20, 0x1234);
        let one = p.frame(ping, &[]);
        let batch: Vec<u8> = one.iter().copied().cycle().take(one.len() * 1024).collect();
        // Blocked this long, the target counts as held back; on a busy
        // machine it may stop earlier, which only sends less.
        let _ = p.sock.set_write_timeout(Some(Duration::from_secs(3)));
        let mut n = 0;
        while n < FLOOD {
            match p.sock.write(&batch) {
                Ok(k) if k > 0 => n += k,
                _ => break,
            }
            sent2.store(n, std::sync::atomic::Ordering::SeqCst);
        }
        done2.store(true, std::sync::atomic::Ordering::SeqCst);
        let _ = p.sock.shutdown(std::net::Shutdown::Both);
    });
    let mut s = Session::login(&portal, IQN, &cfg_timeout(120), 4, None).expect("login");
    let mut buf = vec![0u8; 4096];
    submit(&mut s, 0, true, &mut buf).expect("submit");
    let bound = session::TX_LIMIT + 64;
    while !done.load(std::sync::atomic::Ordering::SeqCst) {
        if s.reap(0, &mut |_, _| {}).is_err() {
            break;
        }
        let unsent = s.unsent();
        assert!(unsent <= bound, "{unsent} bytes queued, past {bound}");
        std::thread::sleep(Duration::from_millis(1));
    }
    drop(s);
    h.join().expect("target script");
    let n = sent.load(std::sync::atomic::Ordering::SeqCst);
    eprintln!("the target pushed {n} bytes of pings before it was held back");
    assert!(n < 96 << 20, "the target pushed {n} bytes of pings");
}

/// A Data-In PDU with the status (final) bit.
fn data_in_status(p: &mut Peer, cmd: &Bhs, data_sn: u32, offset: u32, data: &[u8]) {
    let mut b = Bhs::new(op::DATA_IN, false, 0x81);
    b.set_itt(cmd.itt());
    b.set_u32(20, NO_TAG);
    b.set_u32(36, data_sn);
    b.set_u32(40, offset);
    p.send_status(b, data);
}

/// What a scripted target does with a command in hand.
type Script = Box<dyn FnOnce(&mut Peer, &Bhs) + Send>;

#[test]
fn data_in_and_statsn_outside_the_rules_are_protocol_errors() {
    const HALF: usize = 32768;
    let data = pattern(2 * HALF);
    // In order, four PDUs: complete.
    let d = data.clone();
    let r = read_meets(65536, move |p, c| {
        for k in 0..3u32 {
            let at = k as usize * 16384;
            p.data_in(c, k, at as u32, &d[at..at + 16384]);
        }
        data_in_status(p, c, 3, 49152, &d[49152..]);
    });
    assert_eq!(r.expect("in order"), 65536);

    let fails = |script: Script| {
        let e = read_meets(65536, script).expect_err("must fail");
        assert_eq!(e.kind, ErrorKind::Protocol, "{e}");
        assert!(e.msg.contains("READ(16)"), "names the command: {e}");
        e.msg
    };
    // The attack seen: the first half twice, the second never.
    let d = data.clone();
    let e = fails(Box::new(move |p, c| {
        p.data_in(c, 0, 0, &d[..HALF]);
        data_in_status(p, c, 1, 0, &d[..HALF]);
    }));
    assert!(
        e.contains("at offset 0") && e.contains("where offset 32768 was next"),
        "{e}"
    );
    let d = data.clone();
    let e = fails(Box::new(move |p, c| {
        p.data_in(c, 0, HALF as u32, &d[HALF..]);
        data_in_status(p, c, 1, 0, &d[..HALF]);
    }));
    assert!(e.contains("where offset 0 was next"), "{e}");
    let d = data.clone();
    let e = fails(Box::new(move |p, c| {
        p.data_in(c, 0, 0, &d[..HALF]);
        data_in_status(p, c, 2, HALF as u32, &d[HALF..]);
    }));
    assert!(
        e.contains("DataSN 2") && e.contains("where DataSN 1 was next"),
        "{e}"
    );
    let d = data.clone();
    let e = fails(Box::new(move |p, c| {
        p.stat_sn = p.stat_sn.wrapping_add(1 << 31);
        data_in_status(p, c, 0, 0, &d);
    }));
    assert!(
        e.contains("StatSN 2147483750, where StatSN 102 was next"),
        "{e}"
    );
    let d = data.clone();
    let e = fails(Box::new(move |p, c| {
        p.stat_sn = p.stat_sn.wrapping_sub(1);
        data_in_status(p, c, 0, 0, &d);
    }));
    assert!(e.contains("where StatSN 102 was next"), "{e}");
}

/// A target that answers SendTargets with "more to come" every 100 ms:
/// discovery ends at the I/O timeout, not after 1,000 rounds of it.
#[test]
fn a_dribbled_discovery_ends_at_the_timeout() {
    let (portal, h) = serve(|p| {
        p.login();
        fake::dribble_send_targets(p, 300);
    });
    let t = Instant::now();
    let e = session::discover(&portal, &cfg_timeout(1)).expect_err("must time out");
    assert_eq!(e.kind, ErrorKind::Timeout, "{e}");
    assert!(e.msg.contains("discovery (SendTargets)"), "{e}");
    assert!(
        t.elapsed() < Duration::from_secs(20),
        "took {:?}",
        t.elapsed()
    );
    h.join().expect("target script");
}

/// A target that answers every operational Login Request without ever
/// moving on: the login ends at the I/O timeout as a whole.
#[test]
fn a_dribbled_login_ends_at_the_timeout() {
    let (portal, h) = serve(|p| {
        for _ in 0..20 {
            let Some((req, data)) = p.recv() else { return };
            let operational = (req.flags() >> 2) & 3 == 1;
            if operational {
                std::thread::sleep(Duration::from_millis(400));
            }
            p.login_answer(&req, &data, !operational);
        }
    });
    let e = Session::login(&portal, IQN, &cfg_timeout(1), 4, None)
        .err()
        .expect("must time out");
    assert_eq!(e.kind, ErrorKind::Timeout, "{e}");
    assert!(
        e.msg
            .contains("login (operational negotiation) did not finish within 1 s"),
        "{e}"
    );
    h.join().expect("target script");
}

/// An R2T for a command the window still holds back (its ITT guessed):
/// the target cannot have it, so it names no outstanding command.
#[test]
fn an_r2t_for_a_command_not_yet_sent_is_a_protocol_error() {
    let (portal, h) = fake(1, |p| {
        let (cmd, _) = p.command().expect("command");
        let mut held = cmd;
        held.set_itt((1 << 16) | 1);
        let r = p.r2t(&held, 3, 0, 8192, 4096);
        p.sock.write_all(&r).expect("R2T");
        while p.recv().is_some() {}
    });
    let mut s = Session::login(&portal, IQN, &cfg(), 4, None).expect("login");
    let (mut a, mut b) = (vec![0u8; 65536], vec![0u8; 65536]);
    submit(&mut s, 0, false, &mut a).expect("submit");
    submit(&mut s, 1, false, &mut b).expect("submit");
    let e = complete(&mut s, 0).expect_err("must fail");
    assert_eq!(e.kind, ErrorKind::Protocol, "{e}");
    assert!(
        e.msg
            .contains("R2T for ITT 0x00010001, which names no outstanding command"),
        "{e}"
    );
    drop(s);
    h.join().expect("target script");
}

/// A target that asks for a write's data by R2T and answers GOOD without
/// waiting for it (the hostile review): the write moved only what was
/// sent, so it is short, and the reason names the command; never a full
/// write.
#[test]
fn a_write_answered_good_before_its_data_was_sent_is_short() {
    const LEN: u32 = 1 << 20;
    let (portal, h) = fake(8, move |p| {
        let (cmd, _) = p.command().expect("command");
        let mut batch = p.r2t(&cmd, 0x100, 0, 8192, 262144);
        let mut r = Bhs::new(op::SCSI_RESPONSE, false, 0x80);
        r.set_itt(cmd.itt());
        r.set_u32(24, p.stat_sn);
        p.stat_sn += 1;
        batch.extend(p.frame(r, &[]));
        p.sock.write_all(&batch).expect("R2T and GOOD");
        while p.recv().is_some() {}
    });
    let mut s = Session::login(&portal, IQN, &cfg(), 4, None).expect("login");
    let mut buf = vec![0u8; LEN as usize];
    submit(&mut s, 0, false, &mut buf).expect("submit");
    let got = complete(&mut s, 0).expect("a short write, not a session error");
    assert!(got < LEN as i64, "a write of {got} bytes counted in full");
    let why = s.explain(0).expect("the reason is kept").to_string();
    assert!(
        why.contains("WRITE(16)") && why.contains("answered GOOD"),
        "{why}"
    );
    drop(s);
    h.join().expect("target script");
}

const MIB: usize = 1 << 20;
const SEG: usize = 65536;

/// What a target does to the `k`-th of a 1 MiB read's sixteen 64 KiB
/// Data-In PDUs (encoded, digests included) before it sends it.
type Mangle = fn(k: usize, frame: &mut Vec<u8>);

/// A 1 MiB read answered by sixteen 64 KiB Data-In PDUs (the last with
/// status), with or without digests, each PDU passed through `mangle`:
/// the result, the session's statistics, and whether the 4 KiB past the
/// read's buffer stayed untouched.
fn large_read(digests: bool, mangle: Mangle) -> (Result<i64, Error>, session::WindowStats, bool) {
    let (portal, h) = serve(move |p| {
        if digests {
            p.keys = vec![
                ("HeaderDigest", "CRC32C".into()),
                ("DataDigest", "CRC32C".into()),
            ];
        }
        p.login();
        p.digests = Digests {
            header: digests,
            data: digests,
        };
        let (c, _) = p.command().expect("command");
        let d = pattern(MIB);
        for k in 0..MIB / SEG {
            let mut b = Bhs::new(op::DATA_IN, false, if k == 15 { 0x81 } else { 0 });
            b.set_itt(c.itt());
            b.set_u32(20, NO_TAG);
            b.set_u32(36, k as u32);
            b.set_u32(40, (k * SEG) as u32);
            if k == 15 {
                b.set_u32(24, p.stat_sn);
            }
            let mut f = p.frame(b, &d[k * SEG..(k + 1) * SEG]);
            mangle(k, &mut f);
            if p.sock.write_all(&f).is_err() {
                return;
            }
        }
        while p.recv().is_some() {}
    });
    let mut cfg = cfg();
    cfg.offer.header_digest = digests;
    cfg.offer.data_digest = digests;
    let mut s = Session::login(&portal, IQN, &cfg, 4, None).expect("login");
    let mut buf = vec![0u8; MIB + 4096];
    let r = read_one(&mut s, 0, &mut buf[..MIB]);
    if r.is_ok() {
        assert!(buf[..MIB] == pattern(MIB), "the data read differs");
    }
    let st = s.stats();
    drop(s);
    h.join().expect("target script");
    (r, st, buf[MIB..].iter().all(|&b| b == 0))
}

/// Large Data-In segments are read from the socket straight into the
/// read's buffer: every byte lands once, where it belongs, with the data
/// digest checked where it landed. Only the first receive (at most the
/// ~265 KiB receive buffer) and a few KiB around each later header can be
/// copied, however the bytes are timed.
#[test]
fn large_data_in_lands_in_place_each_byte_once() {
    for digests in [false, true] {
        let (r, st, guard) = large_read(digests, |_, _| {});
        assert_eq!(r.expect("the read"), MIB as i64, "digests {digests}");
        assert!(guard, "a byte past the buffer was written");
        assert_eq!(st.data_in_copied + st.data_in_direct, MIB as u64, "{st:?}");
        let most_copied = 272 * 1024 + 16 * 8192;
        assert!(
            st.data_in_copied <= most_copied,
            "digests {digests}: {st:?}"
        );
    }
}

/// On the in-place path as on the other, a corrupted segment fails its
/// data digest, and a Data-In that would run past the read is refused
/// before a byte of it is written.
#[test]
fn large_data_in_is_checked_before_and_after_it_lands() {
    // The last PDUs go in place (see above); a payload byte flipped.
    let (r, _, _) = large_read(true, |k, f| {
        if k == 12 {
            f[48 + 4 + 1000] ^= 1;
        }
    });
    let e = r.expect_err("a flipped byte");
    assert_eq!(e.kind, ErrorKind::Protocol, "{e}");
    assert!(
        e.msg.contains("data digest") || e.msg.contains("Data digest"),
        "{e}"
    );
    // The last PDU moved to end 48 KiB past the read.
    let (r, _, guard) = large_read(false, |k, f| {
        if k == 15 {
            f[40..44].copy_from_slice(&((15 * SEG + 49152) as u32).to_be_bytes());
        }
    });
    let e = r.expect_err("past the read");
    assert!(
        e.msg.contains("Data-In of 65536 bytes at offset 1032192"),
        "{e}"
    );
    assert!(guard, "a byte past the buffer was written");
}
