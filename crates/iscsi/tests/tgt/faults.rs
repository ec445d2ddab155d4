//! Faults against a real target: each an error within a bound, never a
//! hang.

use super::*;

/// `f` returns an error within FAULT_BOUND; the error.
fn fails_in_bound<T>(what: &str, f: impl FnOnce() -> Result<T, Error>) -> Error {
    let t0 = Instant::now();
    let r = f();
    let took = t0.elapsed();
    let e = r.err().unwrap_or_else(|| panic!("{what}: succeeded"));
    eprintln!("{what}: {e} ({took:?})");
    assert!(took < FAULT_BOUND, "{what}: took {took:?}: {e:?}");
    e
}

#[test]
fn login_wrong_iqn() {
    let Some((tgt, _f)) = file_lun() else { return };
    let e = fails_in_bound("login to a missing target", || {
        Session::login(
            &tgt.portal(),
            "iqn.2026-11.test.iotoll:nope",
            &fault_cfg(),
            1,
            None,
        )
    });
    assert_eq!(e.kind, ErrorKind::Login, "{e:?}");
    assert!(e.msg.contains("not found"), "{e:?}");
    assert!(e.msg.contains("iqn.2026-11.test.iotoll:nope"), "{e:?}");
}

#[test]
fn connect_refused() {
    let port = tgt::free_port_nothing_listening();
    let portal = format!("127.0.0.1:{port}");
    let e = fails_in_bound("login to a closed port", || {
        Session::login(&portal, IQN, &fault_cfg(), 1, None)
    });
    assert_eq!(e.kind, ErrorKind::Connect, "{e:?}");
    assert!(e.msg.contains(&portal), "{e:?}");
    let e = fails_in_bound("discovery on a closed port", || {
        session::discover(&portal, &fault_cfg())
    });
    assert_eq!(e.kind, ErrorKind::Connect, "{e:?}");
}

#[test]
fn silent_peer_login_times_out() {
    let peer = SilentPeer::start();
    let t0 = Instant::now();
    let e = fails_in_bound("login to a silent peer", || {
        Session::login(&peer.portal(), IQN, &fault_cfg(), 1, None)
    });
    assert!(t0.elapsed() >= Duration::from_millis(1900), "{e:?}");
    assert_eq!(e.kind, ErrorKind::Timeout, "{e:?}");
    assert!(e.msg.contains("login"), "{e:?}");
    assert!(peer.accepted() >= 1);
    let e = fails_in_bound("discovery on a silent peer", || {
        session::discover(&peer.portal(), &fault_cfg())
    });
    assert_eq!(e.kind, ErrorKind::Timeout, "{e:?}");
}

#[test]
fn tgtd_killed_mid_run() {
    let Some((mut tgt, _iqn)) = Tgt::with_null_lun() else {
        return;
    };
    let mut s = login(&tgt, &fault_cfg(), 16);
    let mut killed_at = None;
    let (err, n) = read_loop(&mut s, 1, 16, Duration::from_secs(60), |s, slot, res| {
        if killed_at.is_none() {
            assert_eq!(res, 4096, "slot {slot}: {:?}", s.explain(slot));
            // Kill with commands outstanding, once I/O is under way.
            if s.stats().commands > 500 && s.outstanding() > 0 {
                tgt.kill();
                killed_at = Some(Instant::now());
            }
        }
        true
    });
    let killed_at = killed_at.expect("tgtd was never killed");
    let took = killed_at.elapsed();
    let e = err.unwrap_or_else(|| panic!("no error after the kill ({n} completions)"));
    eprintln!("{e}");
    assert!(
        took < FAULT_BOUND,
        "the error came {took:?} after the kill: {e:?}"
    );
    assert_eq!(e.kind, ErrorKind::Closed, "{e:?}");
    assert!(e.msg.contains(&tgt.portal()), "{e:?}");
    assert!(e.msg.contains("full-feature phase"), "{e:?}");
    // The session stays failed.
    let e2 = s.progress(&mut |_, _| {}).expect_err("a failed session");
    assert_eq!(e2.kind, ErrorKind::Closed, "{e2:?}");
}

/// tgtd stopped (SIGSTOP): connected but silent, commands outstanding. The
/// session fails with a timeout naming the oldest command.
#[test]
fn target_stops_answering() {
    let Some((tgt, _iqn)) = Tgt::with_null_lun() else {
        return;
    };
    let mut s = login(&tgt, &fault_cfg(), 8);
    read_one(&mut s);
    let pid = tgt.pid() as i32;
    let mut stopped_at = None;
    let (err, _) = read_loop(&mut s, 1, 8, Duration::from_secs(60), |s, slot, res| {
        if stopped_at.is_none() {
            assert_eq!(res, 4096, "slot {slot}: {:?}", s.explain(slot));
            if s.stats().commands > 200 && s.outstanding() > 0 {
                // SAFETY: kill(2) on our own child's pid.
                assert_eq!(unsafe { libc::kill(pid, libc::SIGSTOP) }, 0);
                stopped_at = Some(Instant::now());
            }
        }
        true
    });
    // SAFETY: as above; let drop's SIGKILL find a running process.
    unsafe { libc::kill(pid, libc::SIGCONT) };
    let took = stopped_at.expect("never stopped tgtd").elapsed();
    let e = err.expect("no error while the target was stopped");
    eprintln!("{e}");
    assert_eq!(e.kind, ErrorKind::Timeout, "{e:?}");
    assert!(took >= Duration::from_millis(1900), "{took:?}: {e:?}");
    assert!(took < FAULT_BOUND, "{took:?}: {e:?}");
    assert!(e.msg.contains("no answer within 2 s"), "{e:?}");
    assert!(e.msg.contains("READ(16)"), "{e:?}");
}

/// The target drops the connection (tgtadm --mode conn --op delete).
#[test]
fn target_closes_connection() {
    let Some((tgt, _iqn)) = Tgt::with_null_lun() else {
        return;
    };
    let mut s = login(&tgt, &fault_cfg(), 8);
    read_one(&mut s);
    let conns = tgt.connections(1);
    assert_eq!(conns.len(), 1, "{conns:?}");
    let (sid, cid) = conns[0];
    let mut closed_at = None;
    let (err, _) = read_loop(&mut s, 1, 8, Duration::from_secs(60), |s, slot, res| {
        if closed_at.is_none() {
            assert_eq!(res, 4096, "slot {slot}: {:?}", s.explain(slot));
            if s.stats().commands > 200 {
                tgt.close_connection(1, sid, cid).unwrap();
                closed_at = Some(Instant::now());
            }
        }
        true
    });
    let took = closed_at.expect("never closed").elapsed();
    let e = err.expect("no error after the target closed the connection");
    eprintln!("{e}");
    assert!(took < FAULT_BOUND, "{took:?}: {e:?}");
    assert_eq!(e.kind, ErrorKind::Closed, "{e:?}");
}

#[test]
fn lun_removed_mid_run() {
    let Some((tgt, _iqn)) = Tgt::with_null_lun() else {
        return;
    };
    tgt.add_lun_null(1, 2).unwrap();
    let mut s = login(&tgt, &fault_cfg(), 4);
    // Clear the new nexus's unit attention on both LUNs first.
    read_one(&mut s);
    let out = s.command(2, scsi::read16(0, 1), 512).unwrap();
    assert_eq!(out.status, scsi::STATUS_GOOD);
    let mut failed: Option<(usize, i64, String)> = None;
    let mut good = 0u64;
    let removed = thread::scope(|sc| {
        let remover = sc.spawn(|| {
            thread::sleep(Duration::from_millis(300));
            // tgt refuses while a command is queued: retry for up to 20 s.
            let mut r = Err(String::new());
            for _ in 0..4 {
                r = tgt.remove_lun(1, 1);
                if r.is_ok() {
                    break;
                }
            }
            (r, Instant::now())
        });
        let (err, _) = read_loop(&mut s, 1, 4, Duration::from_secs(40), |s, slot, res| {
            if res >= 0 {
                assert_eq!(res, 4096);
                good += 1;
                return true;
            }
            failed = Some((slot, res, s.explain(slot).unwrap_or("").to_string()));
            false
        });
        assert!(err.is_none(), "the session failed: {err:?}");
        remover.join().unwrap()
    });
    let (r, removed_at) = removed;
    r.unwrap_or_else(|e| panic!("remove_lun: {e}"));
    assert!(good > 0);
    let (slot, res, why) = failed.expect("no I/O failed after the LUN was removed");
    eprintln!("{why}");
    assert!(removed_at.elapsed() < FAULT_BOUND + Duration::from_secs(25));
    assert_eq!(res, -(libc::EIO as i64), "slot {slot}: {why}");
    assert!(why.contains("READ(16)"), "{why}");
    assert!(why.contains("CHECK CONDITION"), "{why}");
    assert!(why.contains("ILLEGAL REQUEST"), "{why}");
    assert!(why.contains("(25/00)"), "LOGICAL UNIT NOT SUPPORTED: {why}");
    // The session goes on: the other LUN still reads (a unit attention
    // REPORTED LUNS DATA HAS CHANGED, if tgt sends one, is retried).
    let out = s.command(2, scsi::read16(0, 8), 4096).expect("LUN 2");
    assert_eq!(out.status, scsi::STATUS_GOOD, "{:?}", out.sense);
    s.logout().unwrap();
}

/// A session idle for longer than its timeout, then busy: the idle time
/// is not counted against the commands.
#[test]
fn idle_longer_than_timeout_then_io() {
    let Some((tgt, _iqn)) = Tgt::with_null_lun() else {
        return;
    };
    let mut s = login(&tgt, &fault_cfg(), 32);
    read_one(&mut s);
    for round in 0..2 {
        thread::sleep(Duration::from_millis(2500));
        let ops: Vec<_> = (0..64u64).map(|i| (true, i * 4096, 4096)).collect();
        let mut buf = vec![0u8; 64 * 4096];
        run_ios(&mut s, 1, &ops, 32, &mut buf);
        let _ = round;
    }
    s.logout().unwrap();
}
