//! The initiator (`iotoll_iscsi::session`) against a real target: a private
//! tgtd per test (tests/common/tgt.rs). Data integrity under each write path
//! (R2T, immediate and unsolicited data, digests), CHAP both ways, discovery,
//! the startup commands, faults (each an error within a bound, never a hang),
//! the command window and a loose throughput floor.
//!
//! Skips when tgtd or root is missing (fails instead under CI, env var CI
//! set). Time bounds are generous: the tests share a loaded 2-core machine.

#[path = "../common/start.rs"]
mod start;
#[path = "../common/tgt.rs"]
mod tgt;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use iotoll_iscsi::session::{self, Config, Session};
use iotoll_iscsi::text::Params;
use iotoll_iscsi::{chap, scsi, Error, ErrorKind, SessionInfo};
use start::start_io;
use tgt::{SilentPeer, Tgt, BLOCK_SIZE, IQN};

const BLOCK: u32 = BLOCK_SIZE as u32;
const LUN_BYTES: u64 = 8 << 20;
/// A bound for any call that must fail: the 2 s session timeout plus slack
/// for a loaded machine.
const FAULT_BOUND: Duration = Duration::from_secs(15);

fn cfg(timeout: Duration) -> Config {
    Config {
        timeout,
        ..Config::default()
    }
}

/// Timeout for the tests that must succeed: long, so load cannot fail them.
fn ok_cfg() -> Config {
    cfg(Duration::from_secs(30))
}

fn fault_cfg() -> Config {
    cfg(Duration::from_secs(2))
}

fn login(tgt: &Tgt, c: &Config, slots: usize) -> Session {
    Session::login(&tgt.portal(), IQN, c, slots, None).unwrap_or_else(|e| {
        panic!(
            "login to {IQN} at {}: {e:?}\ntgtd log:\n{}",
            tgt.portal(),
            tgt.log()
        )
    })
}

/// A non-repeating pattern: every 8-byte word is a hash of its index and
/// the seed, so a block written at the wrong offset (or a stale one) shows.
fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut v = Vec::with_capacity(len);
    for i in 0..len.div_ceil(8) as u64 {
        let mut z = i
            .wrapping_add(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15))
            .wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        v.extend_from_slice(&z.to_le_bytes());
    }
    v.truncate(len);
    v
}

/// (offset, len) pieces covering `total` bytes, cycling through `sizes`.
fn layout(total: u64, sizes: &[u32]) -> Vec<(u64, u32)> {
    let mut out = Vec::new();
    let mut off = 0u64;
    for &s in sizes.iter().cycle() {
        if off >= total {
            break;
        }
        let n = (s as u64).min(total - off) as u32;
        out.push((off, n));
        off += n as u64;
    }
    out
}

/// First differing byte, for a readable assertion on megabytes.
fn first_diff(a: &[u8], b: &[u8]) -> Option<usize> {
    if a.len() != b.len() {
        return Some(a.len().min(b.len()));
    }
    a.iter().zip(b).position(|(x, y)| x != y)
}

fn assert_same(what: &str, got: &[u8], want: &[u8]) {
    if let Some(i) = first_diff(got, want) {
        let end = (i + 16).min(got.len()).min(want.len());
        panic!(
            "{what}: differs at byte {i} (block {}): got {:02x?}, want {:02x?} (lengths {} and {})",
            i / BLOCK as usize,
            &got[i.min(end)..end],
            &want[i.min(end)..end],
            got.len(),
            want.len()
        );
    }
}

/// Runs `ops` (read?, offset, len) on `lun` with up to `qd` outstanding;
/// the I/O for byte offset X uses `buf[X..]`. Panics on any failed I/O.
fn run_ios(s: &mut Session, lun: u64, ops: &[(bool, u64, u32)], qd: usize, buf: &mut [u8]) {
    let base = buf.as_mut_ptr();
    for &(_, off, len) in ops {
        assert!(off + len as u64 <= buf.len() as u64);
    }
    let mut free: Vec<usize> = (0..qd).rev().collect();
    let mut in_slot = vec![usize::MAX; qd];
    let (mut next, mut finished) = (0usize, 0usize);
    let mut done = Vec::new();
    while finished < ops.len() {
        while next < ops.len() {
            let Some(slot) = free.pop() else { break };
            let (read, off, len) = ops[next];
            // SAFETY: the op's range lies within buf, which outlives the
            // loop; in-flight ranges are disjoint (each op its own range,
            // reads and writes never both in flight).
            unsafe { start_io(s, slot, lun, read, off, len, base.add(off as usize)).unwrap() };
            in_slot[slot] = next;
            next += 1;
        }
        s.reap(1, &mut |slot, res| done.push((slot, res)))
            .unwrap_or_else(|e| panic!("reap with {} of {} done: {e:?}", finished, ops.len()));
        for (slot, res) in done.drain(..) {
            let (read, off, len) = ops[in_slot[slot]];
            assert_eq!(
                res,
                len as i64,
                "{} of {len} bytes at {off}: {:?}",
                if read { "read" } else { "write" },
                s.explain(slot)
            );
            free.push(slot);
            finished += 1;
        }
    }
    assert_eq!(s.outstanding(), 0);
}

/// Writes a pattern over the whole file LUN through the initiator with
/// every transfer size, checks the backing file and reads it all back
/// through the initiator. Returns what the (logged out) session negotiated.
fn integrity(tgt: &Tgt, file: &Path, c: &Config, seed: u64) -> (Params, SessionInfo) {
    let mut s = login(tgt, c, 8);
    let want = pattern(LUN_BYTES as usize, seed);
    // 512 B (one block, immediate data only), 4 KiB, 64 KiB (= tgt's
    // FirstBurstLength, several 8 KiB Data-Out PDUs), 1 MiB (several R2T
    // sequences of MaxBurstLength 256 KiB).
    let writes: Vec<_> = layout(LUN_BYTES, &[512, 4096, 65536, 1 << 20])
        .into_iter()
        .map(|(o, n)| (false, o, n))
        .collect();
    let mut src = want.clone();
    run_ios(&mut s, 1, &writes, 6, &mut src);
    // Read back in another layout, so reads straddle the writes' edges.
    let reads: Vec<_> = layout(LUN_BYTES, &[1 << 20, 4096, 512, 65536, 3584])
        .into_iter()
        .map(|(o, n)| (true, o, n))
        .collect();
    let mut got = vec![0u8; LUN_BYTES as usize];
    run_ios(&mut s, 1, &reads, 6, &mut got);
    assert_same("read back through the initiator", &got, &want);
    let stats = s.stats();
    assert_eq!(stats.commands, (writes.len() + reads.len()) as u64);
    // Log out (tgt's rdwr store pwrites before it answers; after logout
    // nothing can be in flight), then compare the backing file.
    let out = (s.params.clone(), s.info.clone());
    s.logout().expect("logout");
    assert_same("the backing file", &tgt::read_file(file), &want);
    out
}

fn file_lun() -> Option<(Tgt, tempfile::NamedTempFile)> {
    Tgt::with_file_lun(LUN_BYTES).map(|(t, f, _)| (t, f))
}

/// Sets the target's session `params` (key, value).
fn set_params(tgt: &Tgt, params: &[(&str, &str)]) {
    for (k, v) in params {
        tgt.set_param(1, k, v)
            .unwrap_or_else(|e| panic!("{k}={v}: {e}"));
    }
}

/// A file LUN on a target whose session `params` are set first.
fn tuned_lun(params: &[(&str, &str)]) -> Option<(Tgt, tempfile::NamedTempFile)> {
    let (tgt, file) = file_lun()?;
    set_params(&tgt, params);
    Some((tgt, file))
}

/// The default configuration, offering both digests.
fn digests_cfg() -> Config {
    let mut c = ok_cfg();
    c.offer.header_digest = true;
    c.offer.data_digest = true;
    c
}

#[test]
fn integrity_tgt_defaults() {
    let Some((tgt, file)) = file_lun() else {
        return;
    };
    let (p, info) = integrity(&tgt, file.path(), &ok_cfg(), 1);
    // tgt declares no MaxRecvDataSegmentLength at its default: 8192 holds.
    assert_eq!(p.max_recv_dsl_target, 8192, "{p:?}");
    assert_eq!(p.first_burst, 65536, "{p:?}");
    assert_eq!(p.max_burst, 262144, "{p:?}");
    assert!(p.initial_r2t, "{p:?}");
    assert!(p.immediate_data, "{p:?}");
    assert_eq!(p.max_outstanding_r2t, 1, "{p:?}");
    assert_eq!(p.error_recovery_level, 0, "{p:?}");
    assert_eq!(info.header_digest, "None");
    assert_eq!(info.data_digest, "None");
    assert_eq!(info.auth, "None");
}

#[test]
fn integrity_unsolicited_data_out() {
    let Some((tgt, file)) = tuned_lun(&[
        ("ImmediateData", "Yes"),
        ("InitialR2T", "No"),
        ("MaxRecvDataSegmentLength", "262144"),
        ("FirstBurstLength", "262144"),
    ]) else {
        return;
    };
    let (p, _) = integrity(&tgt, file.path(), &ok_cfg(), 2);
    assert!(!p.initial_r2t, "{p:?}");
    assert!(p.immediate_data, "{p:?}");
    assert_eq!(p.max_recv_dsl_target, 262144, "{p:?}");
    assert_eq!(p.first_burst, 262144, "{p:?}");
}

#[test]
fn integrity_no_immediate_data() {
    let Some((tgt, file)) = tuned_lun(&[("ImmediateData", "No"), ("InitialR2T", "Yes")]) else {
        return;
    };
    let (p, _) = integrity(&tgt, file.path(), &ok_cfg(), 3);
    assert!(!p.immediate_data, "{p:?}");
    assert!(p.initial_r2t, "{p:?}");
}

#[test]
fn integrity_digests() {
    let Some((tgt, file)) = tuned_lun(&[
        ("HeaderDigest", "CRC32C,None"),
        ("DataDigest", "CRC32C,None"),
    ]) else {
        return;
    };
    let c = digests_cfg();
    let (p, info) = integrity(&tgt, file.path(), &c, 4);
    assert_eq!(info.header_digest, "CRC32C", "{info:?}");
    assert_eq!(info.data_digest, "CRC32C", "{info:?}");
    assert!(p.header_digest && p.data_digest);
}

/// Digests with immediate data plus unsolicited Data-Out: tgt's 8 KiB
/// segments under a 256 KiB first burst make one command carry 8 KiB
/// immediate data and 31 unsolicited Data-Out PDUs before any R2T.
#[test]
fn integrity_digests_unsolicited() {
    let Some((tgt, file)) = tuned_lun(&[
        ("HeaderDigest", "CRC32C"),
        ("DataDigest", "CRC32C"),
        ("InitialR2T", "No"),
        ("FirstBurstLength", "262144"),
    ]) else {
        return;
    };
    let c = digests_cfg();
    let (p, info) = integrity(&tgt, file.path(), &c, 5);
    assert_eq!(info.header_digest, "CRC32C");
    assert_eq!(info.data_digest, "CRC32C");
    assert!(!p.initial_r2t && p.immediate_data, "{p:?}");
    assert_eq!(p.max_recv_dsl_target, 8192, "{p:?}");
    assert_eq!(p.first_burst, 262144, "{p:?}");
}

/// Unsolicited Data-Out without immediate data: the first burst goes in
/// Data-Out PDUs right behind the command.
#[test]
fn integrity_unsolicited_without_immediate_data() {
    let Some((tgt, file)) = tuned_lun(&[
        ("ImmediateData", "No"),
        ("InitialR2T", "No"),
        ("FirstBurstLength", "16384"),
    ]) else {
        return;
    };
    let (p, _) = integrity(&tgt, file.path(), &ok_cfg(), 6);
    assert!(!p.immediate_data, "{p:?}");
    assert!(!p.initial_r2t, "{p:?}");
    assert_eq!(p.first_burst, 16384, "{p:?}");
}

/// The whole LUN in one WRITE(16) and one READ(16), with 256 KiB PDUs both
/// ways (tgt's MaxXmitDataSegmentLength raised to our 256 KiB) and
/// digests: the largest PDUs the session takes, 32 R2T sequences.
#[test]
fn whole_lun_in_one_command() {
    let Some((tgt, file)) = tuned_lun(&[
        ("MaxRecvDataSegmentLength", "262144"),
        ("MaxXmitDataSegmentLength", "262144"),
        ("HeaderDigest", "CRC32C"),
        ("DataDigest", "CRC32C"),
    ]) else {
        return;
    };
    let c = digests_cfg();
    let mut s = login(&tgt, &c, 1);
    assert_eq!(s.params.max_recv_dsl_target, 262144, "{:?}", s.params);
    let want = pattern(LUN_BYTES as usize, 7);
    let mut src = want.clone();
    let len = LUN_BYTES as u32;
    run_ios(&mut s, 1, &[(false, 0, len)], 1, &mut src);
    let mut got = vec![0u8; LUN_BYTES as usize];
    run_ios(&mut s, 1, &[(true, 0, len)], 1, &mut got);
    assert_same("read back through the initiator", &got, &want);
    // 32 Data-In PDUs of 256 KiB: past the first receive, they are read
    // straight into the buffer (digests checked there), and every byte is
    // counted once either way.
    let st = s.stats();
    assert_eq!(st.data_in_copied + st.data_in_direct, LUN_BYTES, "{st:?}");
    assert!(st.data_in_direct >= LUN_BYTES / 2, "{st:?}");
    s.logout().unwrap();
    assert_same("the backing file", &tgt::read_file(file.path()), &want);
}

/// A new session's first command is a large write that meets the unit
/// attention: it is sent again with its immediate and unsolicited data
/// (the target drops the first attempt's), and the data lands intact.
#[test]
fn unit_attention_on_first_write() {
    let Some((tgt, file)) = file_lun() else {
        return;
    };
    let configs: [&[(&str, &str)]; 3] = [
        &[],
        &[("InitialR2T", "No"), ("FirstBurstLength", "262144")],
        &[
            ("InitialR2T", "No"),
            ("ImmediateData", "No"),
            ("FirstBurstLength", "16384"),
        ],
    ];
    let mut want = vec![0u8; LUN_BYTES as usize];
    for (i, params) in configs.iter().enumerate() {
        set_params(&tgt, params);
        let mut s = login(&tgt, &ok_cfg(), 2);
        assert_eq!(s.params.initial_r2t, params.is_empty(), "{:?}", s.params);
        let off = i << 20;
        want[off..][..1 << 20].copy_from_slice(&pattern(1 << 20, 10 + i as u64));
        let mut src = want.clone();
        run_ios(&mut s, 1, &[(false, off as u64, 1 << 20)], 1, &mut src);
        assert!(s.stats().unit_attentions >= 1, "{:?}", s.stats());
        s.logout().unwrap();
        assert_same("the backing file", &tgt::read_file(file.path()), &want);
    }
}

/// tgt pinging with NOP-Ins (nop_interval 1 s, nop_count 2): the session
/// answers them, with digests on, and is not dropped.
#[test]
fn answers_target_nop_in() {
    let Some((tgt, _iqn)) = Tgt::with_null_lun() else {
        return;
    };
    set_params(
        &tgt,
        &[
            ("nop_interval", "1"),
            ("nop_count", "2"),
            ("HeaderDigest", "CRC32C"),
            ("DataDigest", "CRC32C"),
        ],
    );
    let c = digests_cfg();
    let mut s = login(&tgt, &c, 1);
    // QD 1 with pauses: tgt's pings fall between commands, for 5 s.
    let (err, n) = read_loop(&mut s, 1, 1, Duration::from_secs(5), |s, slot, res| {
        assert_eq!(res, 4096, "{:?}", s.explain(slot));
        thread::sleep(Duration::from_millis(20));
        true
    });
    assert!(
        err.is_none(),
        "after {n} reads: {err:?}\ntgtd log:\n{}",
        tgt.log()
    );
    assert_eq!(tgt.connections(1).len(), 1);
    // The control: tgt really pings. A session left alone (nothing calls
    // progress) leaves them unanswered, and tgt drops it.
    thread::sleep(Duration::from_secs(5));
    let e = s
        .command(1, scsi::read16(0, 8), 4096)
        .expect_err("tgt should have dropped a session that ignored its pings");
    assert_eq!(e.kind, ErrorKind::Closed, "{e:?}");
}

/// Digests wanted but the target allows only None: a login error that
/// says so, not a session without the asked-for protection.
#[test]
fn digests_refused_by_target() {
    let Some((tgt, _file)) = file_lun() else {
        return;
    };
    tgt.set_param(1, "HeaderDigest", "None").unwrap();
    let mut c = fault_cfg();
    c.offer.header_digest = true;
    let e = Session::login(&tgt.portal(), IQN, &c, 1, None)
        .err()
        .expect("login must fail");
    assert_eq!(e.kind, ErrorKind::Login, "{e:?}");
    assert!(e.msg.contains("digest"), "{e:?}");
}

// ---- CHAP ----

const USER: &str = "iotoll-user";
const SECRET: &str = "initiator-secret-1";
const TARGET_USER: &str = "tgt-user";
const TARGET_SECRET: &str = "target-secret-22";

/// A secret file (mode 0600) with these lines, loaded.
fn secrets(dir: &Path, name: &str, body: &str) -> chap::Secrets {
    let p = dir.join(name);
    fs::write(&p, body).unwrap();
    fs::set_permissions(&p, fs::Permissions::from_mode(0o600)).unwrap();
    chap::load_secret_file(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn chap_target(mutual: bool) -> Option<(Tgt, tempfile::NamedTempFile)> {
    let (tgt, f) = file_lun()?;
    tgt.add_chap_account(USER, SECRET).unwrap();
    tgt.bind_incoming_account(1, USER).unwrap();
    if mutual {
        tgt.add_chap_account(TARGET_USER, TARGET_SECRET).unwrap();
        tgt.bind_outgoing_account(1, TARGET_USER).unwrap();
    }
    Some((tgt, f))
}

fn with_secrets(s: chap::Secrets, timeout: Duration) -> Config {
    Config {
        secrets: Some(s),
        ..cfg(timeout)
    }
}

/// One 4 KiB read: the session really works.
fn read_one(s: &mut Session) {
    let out = s
        .command(1, scsi::read16(0, 8), 4096)
        .expect("READ(16) after login");
    assert_eq!(out.status, scsi::STATUS_GOOD, "{:?}", out.sense);
    assert_eq!(out.data.len(), 4096);
}

#[test]
fn chap_one_way() {
    let Some((tgt, _f)) = chap_target(false) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let sec = secrets(
        dir.path(),
        "ok",
        &format!("# one-way\nusername = {USER}\npassword = {SECRET}\n"),
    );
    let mut s = login(&tgt, &with_secrets(sec, Duration::from_secs(30)), 1);
    assert_eq!(s.info.auth, "CHAP");
    read_one(&mut s);
    s.logout().unwrap();

    // The same file readable by others is refused before any login.
    let p = dir.path().join("open");
    fs::write(&p, format!("username = {USER}\npassword = {SECRET}\n")).unwrap();
    fs::set_permissions(&p, fs::Permissions::from_mode(0o644)).unwrap();
    let e = chap::load_secret_file(&p).expect_err("mode 0644 must be refused");
    assert!(
        matches!(e, chap::ChapError::Unprotected { .. }),
        "{e:?}: {e}"
    );

    // A wrong secret: the target refuses, kind Auth.
    let bad = secrets(
        dir.path(),
        "bad",
        &format!("username = {USER}\npassword = not-the-secret\n"),
    );
    let t0 = Instant::now();
    let e = Session::login(&tgt.portal(), IQN, &with_secrets(bad, secs(2)), 1, None)
        .err()
        .expect("a wrong secret must not log in");
    assert_eq!(e.kind, ErrorKind::Auth, "{e:?}");
    assert!(t0.elapsed() < FAULT_BOUND);

    // A wrong user name: Auth as well.
    let bad = secrets(
        dir.path(),
        "baduser",
        &format!("username = nobody\npassword = {SECRET}\n"),
    );
    let e = Session::login(&tgt.portal(), IQN, &with_secrets(bad, secs(2)), 1, None)
        .err()
        .expect("an unknown user must not log in");
    assert_eq!(e.kind, ErrorKind::Auth, "{e:?}");
}

#[test]
fn chap_required_but_none_given() {
    let Some((tgt, _f)) = chap_target(false) else {
        return;
    };
    let t0 = Instant::now();
    let e = Session::login(&tgt.portal(), IQN, &fault_cfg(), 1, None)
        .err()
        .expect("a target requiring CHAP must refuse a login without it");
    assert!(t0.elapsed() < FAULT_BOUND);
    assert_eq!(e.kind, ErrorKind::Auth, "{e:?}");
    assert!(e.msg.contains("--chap-secret-file"), "{e:?}");
}

#[test]
fn chap_mutual() {
    let Some((tgt, _f)) = chap_target(true) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let body = |pin: &str| {
        format!(
            "node.session.auth.username = {USER}\nnode.session.auth.password = {SECRET}\nusername_in = {TARGET_USER}\npassword_in = {pin}\n"
        )
    };
    let sec = secrets(dir.path(), "ok", &body(TARGET_SECRET));
    let mut s = login(&tgt, &with_secrets(sec, Duration::from_secs(30)), 1);
    assert_eq!(s.info.auth, "CHAP (mutual)");
    read_one(&mut s);
    s.logout().unwrap();

    // The target proves a secret other than the one we expect: we refuse.
    let bad = secrets(dir.path(), "bad", &body("wrong-target-secret"));
    let t0 = Instant::now();
    let e = Session::login(&tgt.portal(), IQN, &with_secrets(bad, secs(2)), 1, None)
        .err()
        .expect("a target with the wrong secret must be refused");
    assert!(t0.elapsed() < FAULT_BOUND);
    assert_eq!(e.kind, ErrorKind::Auth, "{e:?}");

    // One-way CHAP still logs in to a target with an outgoing account.
    let one = secrets(
        dir.path(),
        "oneway",
        &format!("username = {USER}\npassword = {SECRET}\n"),
    );
    let s = login(&tgt, &with_secrets(one, Duration::from_secs(30)), 1);
    assert_eq!(s.info.auth, "CHAP");
    s.logout().unwrap();
}

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

// ---- discovery and startup commands ----

const IQN2: &str = "iqn.2026-11.test.iotoll:t2";

#[test]
fn discovery_lists_both_targets() {
    let Some((tgt, _f)) = file_lun() else { return };
    tgt.add_target(2, IQN2).unwrap();
    tgt.bind_all(2).unwrap();
    tgt.add_lun_null(2, 1).unwrap();
    let found = session::discover(&tgt.portal(), &ok_cfg())
        .unwrap_or_else(|e| panic!("discover: {e:?}\n{}", tgt.log()));
    let mut names: Vec<&str> = found.iter().map(|d| d.name.as_str()).collect();
    names.sort();
    assert_eq!(names, [IQN, IQN2], "{found:?}");
    for d in &found {
        assert!(
            d.addresses
                .iter()
                .any(|a| a.starts_with(&format!("{},", tgt.portal()))),
            "{} lacks address {}: {:?}",
            d.name,
            tgt.portal(),
            d.addresses
        );
    }
    // Both are real: a login to the second works.
    let s = Session::login(&tgt.portal(), IQN2, &ok_cfg(), 1, None).unwrap();
    s.logout().unwrap();
}

#[test]
fn startup_commands_and_unit_attention() {
    let Some((tgt, _f)) = file_lun() else { return };
    tgt.add_lun_null(1, 2).unwrap();

    // A new session's first media command meets the power-on/reset unit
    // attention tgt sets for a new I_T nexus: it is retried, not failed.
    let mut s = login(&tgt, &ok_cfg(), 1);
    assert_eq!(s.stats().unit_attentions, 0);
    read_one(&mut s);
    assert!(
        s.stats().unit_attentions >= 1,
        "no unit attention retried: {:?}",
        s.stats()
    );
    s.logout().unwrap();

    let mut s = login(&tgt, &ok_cfg(), 1);
    let out = s
        .command(1, scsi::cdb16(&scsi::inquiry(96)), 96)
        .expect("INQUIRY");
    assert_eq!(out.status, scsi::STATUS_GOOD);
    let inq = scsi::Inquiry::parse(&out.data).unwrap();
    assert_eq!(inq.vendor.trim(), "IET", "{inq:?}");
    assert_eq!(inq.product.trim(), "VIRTUAL-DISK", "{inq:?}");
    assert_eq!(inq.peripheral_type, 0, "{inq:?}");

    let out = s
        .command(0, scsi::cdb16(&scsi::inquiry(96)), 96)
        .expect("INQUIRY of LUN 0");
    let inq0 = scsi::Inquiry::parse(&out.data).unwrap();
    assert_eq!(inq0.peripheral_type, 0x0c, "tgt's LUN 0: {inq0:?}");

    let out = s
        .command(1, scsi::read_capacity16(32), 32)
        .expect("READ CAPACITY(16)");
    assert_eq!(out.status, scsi::STATUS_GOOD, "{:?}", out.sense);
    let cap = scsi::Capacity::parse(&out.data).unwrap();
    assert_eq!(cap.block_size, BLOCK);
    assert_eq!(cap.blocks(), LUN_BYTES / BLOCK_SIZE, "{cap:?}");
    assert_eq!(cap.bytes(), LUN_BYTES);

    let out = s
        .command(2, scsi::read_capacity16(32), 32)
        .expect("READ CAPACITY(16) of the null LUN");
    let cap = scsi::Capacity::parse(&out.data).unwrap();
    assert_eq!(cap.bytes(), tgt::NULL_LUN_BYTES, "{cap:?}");

    let out = s
        .command(0, scsi::cdb16(&scsi::report_luns(4096)), 4096)
        .expect("REPORT LUNS");
    assert_eq!(out.status, scsi::STATUS_GOOD, "{:?}", out.sense);
    let mut luns = scsi::parse_report_luns(&out.data);
    luns.sort();
    assert_eq!(luns, [0, 1, 2]);

    let out = s
        .command(1, scsi::cdb16(&scsi::test_unit_ready()), 0)
        .expect("TEST UNIT READY");
    assert_eq!(out.status, scsi::STATUS_GOOD, "{:?}", out.sense);
    assert!(out.data.is_empty());

    // A LUN that does not exist: CHECK CONDITION with sense, not an Err.
    let out = s
        .command(7, scsi::read16(0, 1), 512)
        .expect("a command to a missing LUN completes");
    assert_eq!(out.status, scsi::STATUS_CHECK_CONDITION);
    let sense = out.sense.expect("sense data");
    assert_eq!(sense.key, 0x5, "{sense}");
    assert_eq!((sense.asc, sense.ascq), (0x25, 0x00), "{sense}");
    s.logout().unwrap();
}

/// LUNs above 255 use the flat addressing method (SAM-5 §4.7.7).
#[test]
fn lun_above_255() {
    let Some((tgt, _iqn)) = Tgt::with_null_lun() else {
        return;
    };
    tgt.add_lun_null(1, 300).unwrap();
    let mut s = login(&tgt, &ok_cfg(), 1);
    let out = s
        .command(0, scsi::cdb16(&scsi::report_luns(4096)), 4096)
        .unwrap();
    let mut luns = scsi::parse_report_luns(&out.data);
    luns.sort();
    assert_eq!(luns, [0, 1, 300]);
    let out = s.command(300, scsi::read_capacity16(32), 32).unwrap();
    assert_eq!(out.status, scsi::STATUS_GOOD, "{:?}", out.sense);
    let cap = scsi::Capacity::parse(&out.data).unwrap();
    assert_eq!(cap.bytes(), tgt::NULL_LUN_BYTES);
    let out = s.command(300, scsi::read16(0, 8), 4096).unwrap();
    assert_eq!(out.status, scsi::STATUS_GOOD, "{:?}", out.sense);
    s.logout().unwrap();
}

/// Keeps `qd` 4 KiB reads of `lun` in flight for `limit`, until `on_done`
/// (told of each completion) returns false, or until an error: the error,
/// and the number of completions.
fn read_loop(
    s: &mut Session,
    lun: u64,
    qd: usize,
    limit: Duration,
    mut on_done: impl FnMut(&Session, usize, i64) -> bool,
) -> (Option<Error>, u64) {
    let mut buf = vec![0u8; qd * 4096];
    let base = buf.as_mut_ptr();
    let mut free: Vec<usize> = (0..qd).collect();
    let mut done = Vec::new();
    let mut n = 0u64;
    let mut lba = 0u64;
    let until = Instant::now() + limit;
    while Instant::now() < until {
        while let Some(slot) = free.pop() {
            // SAFETY: each slot owns buf[slot * 4096..][..4096]; buf
            // outlives the session's use of it (the session is not used
            // for I/O after this function).
            let r =
                unsafe { start_io(s, slot, lun, true, lba * 4096, 4096, base.add(slot * 4096)) };
            if let Err(e) = r {
                return (Some(e), n);
            }
            lba = (lba + 1) % 1024;
        }
        if let Err(e) = s.reap(1, &mut |slot, res| done.push((slot, res))) {
            return (Some(e), n);
        }
        for (slot, res) in done.drain(..) {
            n += 1;
            free.push(slot);
            if !on_done(s, slot, res) {
                // Let the others finish, so the buffer may go.
                let _ = s.reap(s.outstanding(), &mut |_, _| {});
                return (None, n);
            }
        }
    }
    let _ = s.reap(s.outstanding(), &mut |_, _| {});
    (None, n)
}

mod faults;

// ---- command window and throughput ----

#[test]
fn more_commands_than_the_window() {
    let Some((tgt, _iqn)) = Tgt::with_null_lun() else {
        return;
    };
    const N: usize = 200;
    let mut s = login(&tgt, &ok_cfg(), N);
    let mut buf = vec![0u8; N * 4096];
    let base = buf.as_mut_ptr();
    for round in 0..3 {
        for slot in 0..N {
            // SAFETY: slot-owned 4 KiB of buf, which outlives the I/O.
            unsafe {
                start_io(
                    &mut s,
                    slot,
                    1,
                    true,
                    slot as u64 * 4096,
                    4096,
                    base.add(slot * 4096),
                )
                .unwrap()
            };
        }
        let mut results = Vec::new();
        while results.len() < N {
            s.reap(N - results.len(), &mut |slot, res| {
                results.push((slot, res))
            })
            .unwrap_or_else(|e| panic!("round {round}: {e:?}"));
        }
        results.sort();
        assert_eq!(results.len(), N);
        for (i, &(slot, res)) in results.iter().enumerate() {
            assert_eq!(slot, i);
            assert_eq!(res, 4096, "slot {slot}: {:?}", s.explain(slot));
        }
    }
    let st = s.stats();
    assert_eq!(st.commands, 3 * N as u64);
    // tgt's MaxQueueCmd is 128: the window is smaller than our depth, so
    // commands waited for it (counted once the first answer opened it).
    assert!(st.min_window < N as u32, "{st:?}");
    assert!(st.waited > 0, "{st:?}");
    s.logout().unwrap();
}

#[test]
fn throughput_sanity() {
    let Some((tgt, _iqn)) = Tgt::with_null_lun() else {
        return;
    };
    let mut s = login(&tgt, &ok_cfg(), 32);
    read_one(&mut s);
    let t0 = Instant::now();
    let (err, n) = read_loop(&mut s, 1, 32, Duration::from_secs(2), |s, slot, res| {
        assert_eq!(res, 4096, "{:?}", s.explain(slot));
        true
    });
    assert!(err.is_none(), "{err:?}");
    let took = t0.elapsed();
    eprintln!(
        "4 KiB reads, QD 32, null LUN: {n} in {took:?} ({:.0}/s)",
        n as f64 / took.as_secs_f64()
    );
    assert!(n > 1000, "only {n} reads in {took:?}");
    s.logout().unwrap();
}
