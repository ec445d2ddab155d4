//! Self-test of the tgt harness (tests/common/tgt.rs), using libiscsi's
//! command-line tools (Debian package libiscsi-bin) as the initiator. Skips
//! when tgtd, the tools or root are missing; under CI (env var CI set) it
//! fails instead.

#[path = "common/tgt.rs"]
mod tgt;

use std::fs::OpenOptions;
use std::io::{ErrorKind, Read};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use tgt::{SilentPeer, Tgt, IQN, NULL_LUN_BYTES};

/// A libiscsi tool, or None (skip; panics under CI).
fn tool(name: &str) -> Option<PathBuf> {
    tgt::find_tool(name).or_else(|| {
        tgt::skip(&format!(
            "{name} not installed (Debian package libiscsi-bin)"
        ))
    })
}

struct Out {
    ok: bool,
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl std::fmt::Debug for Out {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {:?}\n--- stdout:\n{}\n--- stderr:\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

/// Waits for `child` to exit; past `limit` it is killed and the test fails
/// with `late`.
fn wait_or_kill(child: &mut std::process::Child, limit: Duration, late: &str) -> ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{late}");
        }
        thread::sleep(Duration::from_millis(10));
    }
}

/// Run a command, killing it (by pid) after `limit`; output via temp files,
/// so no pipe can fill up.
fn run(mut cmd: Command, limit: Duration) -> Out {
    let (out, err) = (
        tempfile::NamedTempFile::new().unwrap(),
        tempfile::NamedTempFile::new().unwrap(),
    );
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(out.reopen().unwrap())
        .stderr(err.reopen().unwrap())
        .spawn()
        .expect("spawn");
    let status = wait_or_kill(
        &mut child,
        limit,
        &format!("{cmd:?} still running after {limit:?}"),
    );
    let text = |f: &tempfile::NamedTempFile| {
        String::from_utf8_lossy(&std::fs::read(f.path()).unwrap()).into_owned()
    };
    Out {
        ok: status.success(),
        code: status.code(),
        stdout: text(&out),
        stderr: text(&err),
    }
}

fn inq(url: &str) -> Option<Out> {
    let mut cmd = Command::new(tool("iscsi-inq")?);
    cmd.arg(url);
    Some(run(cmd, Duration::from_secs(20)))
}

fn readcapacity(url: &str) -> Option<Out> {
    let mut cmd = Command::new(tool("iscsi-readcapacity16")?);
    cmd.arg(url);
    Some(run(cmd, Duration::from_secs(20)))
}

fn assert_iet(out: &Out) {
    assert!(out.ok, "iscsi-inq failed: {out:?}");
    assert!(out.stdout.contains("Vendor:IET"), "vendor not IET: {out:?}");
}

/// "Total size:N" of iscsi-readcapacity16.
fn total_size(out: &Out) -> u64 {
    assert!(out.ok, "iscsi-readcapacity16 failed: {out:?}");
    out.stdout
        .lines()
        .find_map(|l| l.strip_prefix("Total size:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no Total size: {out:?}"))
}

fn refused(port: u16) -> bool {
    matches!(
        TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.kind()),
        Err(ErrorKind::ConnectionRefused)
    )
}

#[test]
fn file_lun_answers_inquiry() {
    let Some((tgt, file, iqn)) = Tgt::with_file_lun(16 << 20) else {
        return;
    };
    let Some(out) = inq(&tgt.url(&iqn, 1)) else {
        return;
    };
    assert_iet(&out);
    assert!(out.stdout.contains("Product:VIRTUAL-DISK"), "{out:?}");
    let Some(cap) = readcapacity(&tgt.url(&iqn, 1)) else {
        return;
    };
    assert_eq!(total_size(&cap), 16 << 20);
    let show = tgt.show();
    assert!(
        show.contains(&format!("Backing store path: {}", file.path().display())),
        "{show}"
    );
    assert!(show.contains("Backing store type: rdwr"), "{show}");
}

#[test]
fn null_lun_answers_inquiry_and_is_1_tib() {
    let Some((tgt, iqn)) = Tgt::with_null_lun() else {
        return;
    };
    let Some(out) = inq(&tgt.url(&iqn, 1)) else {
        return;
    };
    assert_iet(&out);
    let Some(cap) = readcapacity(&tgt.url(&iqn, 1)) else {
        return;
    };
    assert_eq!(total_size(&cap), NULL_LUN_BYTES);
    assert!(
        cap.stdout.contains("LOGICAL BLOCK LENGTH IN BYTES:512"),
        "{cap:?}"
    );
}

/// The defaults written in tgt.rs's header comment, which tests rely on.
#[test]
fn defaults_are_the_documented_ones() {
    let Some((tgt, _iqn)) = Tgt::with_null_lun() else {
        return;
    };
    assert_params(
        &tgt,
        &[
            "MaxRecvDataSegmentLength=8192",
            "MaxXmitDataSegmentLength=8192",
            "HeaderDigest=None",
            "DataDigest=None",
            "InitialR2T=Yes",
            "ImmediateData=Yes",
            "MaxOutstandingR2T=1",
            "FirstBurstLength=65536",
            "MaxBurstLength=262144",
            "ErrorRecoveryLevel=0",
            "MaxConnections=1",
            "MaxQueueCmd=128",
        ],
    );
}

/// Asserts that target 1's parameters, as tgt shows them, include each
/// `key=value` of `want`.
fn assert_params(tgt: &Tgt, want: &[&str]) {
    let params = tgt.params(1);
    for want in want {
        assert!(
            params.lines().any(|l| l == *want),
            "{want} not in:\n{params}"
        );
    }
}

#[test]
fn set_param_reaches_the_login() {
    let Some((tgt, iqn)) = Tgt::with_null_lun() else {
        return;
    };
    tgt.set_param(1, "MaxRecvDataSegmentLength", "65536")
        .unwrap();
    tgt.set_param(1, "HeaderDigest", "CRC32C").unwrap();
    tgt.set_param(1, "InitialR2T", "No").unwrap();
    let want = [
        "MaxRecvDataSegmentLength=65536",
        "HeaderDigest=CRC32C",
        "InitialR2T=No",
    ];
    assert_params(&tgt, &want);
    assert!(tgt.set_param(1, "NoSuchKey", "1").is_err());
    assert!(tgt.set_param(1, "MaxBurstLength", "lots").is_err());

    // libiscsi logs the login response's keys at debug level 6. tgt declares
    // MaxRecvDataSegmentLength only when it is not the default 8192.
    let Some(inq) = tool("iscsi-inq") else {
        return;
    };
    let mut cmd = Command::new(inq);
    cmd.env("LIBISCSI_DEBUG", "6").arg(tgt.url(&iqn, 1));
    let out = run(cmd, Duration::from_secs(20));
    assert_iet(&out);
    for want in [
        "TargetLoginReply: MaxRecvDataSegmentLength=65536",
        "TargetLoginReply: HeaderDigest=CRC32C",
        "TargetLoginReply: InitialR2T=No",
    ] {
        assert!(out.stderr.contains(want), "{want} not in: {out:?}");
    }
}

#[test]
fn chap_one_way() {
    let Some((tgt, iqn)) = Tgt::with_null_lun() else {
        return;
    };
    tgt.add_chap_account("alice", "alicesecret1").unwrap();
    tgt.bind_incoming_account(1, "alice").unwrap();
    assert!(
        tgt.add_chap_account("alice", "again").is_err(),
        "duplicate account accepted"
    );
    let portal = tgt.portal();
    let url = |cred: &str| format!("iscsi://{cred}{portal}/{iqn}/1");

    let Some(good) = inq(&url("alice%alicesecret1@")) else {
        return;
    };
    assert_iet(&good);
    let bad = inq(&url("alice%wrongsecret1@")).unwrap();
    assert!(!bad.ok, "wrong secret logged in: {bad:?}");
    assert!(bad.stderr.contains("Authentication failure"), "{bad:?}");
    let bad_user = inq(&url("bob%alicesecret1@")).unwrap();
    assert!(!bad_user.ok, "unknown user logged in: {bad_user:?}");
    let none = inq(&url("")).unwrap();
    assert!(!none.ok, "login without CHAP accepted: {none:?}");
}

#[test]
fn chap_mutual() {
    let Some((tgt, iqn)) = Tgt::with_null_lun() else {
        return;
    };
    tgt.add_chap_account("alice", "alicesecret1").unwrap();
    tgt.add_chap_account("target1", "targetsecret1").unwrap();
    tgt.bind_incoming_account(1, "alice").unwrap();
    tgt.bind_outgoing_account(1, "target1").unwrap();
    let show = tgt.show();
    assert!(show.contains("target1 (outgoing)"), "{show}");
    // libiscsi: the target's credentials as URL arguments (or in
    // LIBISCSI_CHAP_TARGET_USERNAME / _PASSWORD).
    let base = format!("iscsi://alice%alicesecret1@{}/{iqn}/1", tgt.portal());

    let Some(good) = inq(&format!(
        "{base}?target_user=target1&target_password=targetsecret1"
    )) else {
        return;
    };
    assert_iet(&good);
    let bad = inq(&format!(
        "{base}?target_user=target1&target_password=wrongsecret1"
    ))
    .unwrap();
    assert!(!bad.ok, "target with the wrong secret accepted: {bad:?}");
    assert!(bad.stderr.contains("CHAP_R"), "{bad:?}");
    // An outgoing account does not force mutual CHAP.
    assert_iet(&inq(&base).unwrap());
}

#[test]
fn remove_lun_idle() {
    let Some((tgt, iqn)) = Tgt::with_null_lun() else {
        return;
    };
    tgt.add_lun_null(1, 2).unwrap();
    let Some(out) = inq(&tgt.url(&iqn, 2)) else {
        return;
    };
    assert_iet(&out);
    tgt.remove_lun(1, 2).unwrap();
    assert!(!tgt.show().contains("LUN: 2"), "{}", tgt.show());
    // libiscsi's login ends with TEST UNIT READY: fails on a missing LUN.
    let gone = inq(&tgt.url(&iqn, 2)).unwrap();
    assert!(!gone.ok, "{gone:?}");
    assert!(
        gone.stderr.contains("LOGICAL_UNIT_NOT_SUPPORTED"),
        "{gone:?}"
    );
    assert!(tgt.remove_lun(1, 2).is_err(), "removed a missing LUN");
    assert_iet(&inq(&tgt.url(&iqn, 1)).unwrap());
}

/// Starts `tool` with `args` on `url`, its output (both streams) to `log`.
fn spawn_logged(
    tool: PathBuf,
    args: &[&str],
    url: String,
    log: &tempfile::NamedTempFile,
) -> std::process::Child {
    Command::new(tool)
        .args(args)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(log.reopen().unwrap())
        .stderr(log.reopen().unwrap())
        .spawn()
        .unwrap()
}

/// While iscsi-perf reads LUN 1 (a session logged in, commands in flight),
/// LUN 2 and then LUN 1 itself can be removed; iscsi-perf then fails.
#[test]
fn remove_lun_while_logged_in() {
    let Some((tgt, iqn)) = Tgt::with_null_lun() else {
        return;
    };
    tgt.add_lun_null(1, 2).unwrap();
    let Some(perf) = tool("iscsi-perf") else {
        return;
    };
    let log = tempfile::NamedTempFile::new().unwrap();
    let mut child = spawn_logged(perf, &["-t", "20", "-m", "8"], tgt.url(&iqn, 1), &log);
    let deadline = Instant::now() + Duration::from_secs(10);
    while tgt.connections(1).is_empty() {
        assert!(Instant::now() < deadline, "iscsi-perf never logged in");
        thread::sleep(Duration::from_millis(20));
    }
    thread::sleep(Duration::from_millis(300));
    tgt.remove_lun(1, 2).unwrap();
    tgt.remove_lun(1, 1).unwrap();
    let late = "iscsi-perf still running after its LUN went away";
    let status = wait_or_kill(&mut child, Duration::from_secs(10), late);
    let mut text = String::new();
    OpenOptions::new()
        .read(true)
        .open(log.path())
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    // How it fails varies (LOGICAL UNIT NOT SUPPORTED, or a command
    // cancelled after the unit attention), but it stops with "ABORTED!".
    assert!(!status.success(), "{text}");
    assert!(text.contains("ABORTED!"), "{text}");
    assert!(!tgt.show().contains("LUN: 1"));
}

#[test]
fn connections_and_close_connection() {
    let Some((tgt, iqn)) = Tgt::with_null_lun() else {
        return;
    };
    let Some(perf) = tool("iscsi-perf") else {
        return;
    };
    assert!(tgt.connections(1).is_empty());
    let log = tempfile::NamedTempFile::new().unwrap();
    let args = ["-t", "20", "-m", "4", "-x", "0"];
    let mut child = spawn_logged(perf, &args, tgt.url(&iqn, 1), &log);
    let deadline = Instant::now() + Duration::from_secs(10);
    let conns = loop {
        let c = tgt.connections(1);
        if !c.is_empty() {
            break c;
        }
        assert!(Instant::now() < deadline, "iscsi-perf never logged in");
        thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(conns.len(), 1, "{conns:?}");
    let (sid, cid) = conns[0];
    tgt.close_connection(1, sid, cid).unwrap();
    // iscsi-perf may reconnect (libiscsi does so on its own); either way the
    // old connection is gone.
    let deadline = Instant::now() + Duration::from_secs(10);
    while tgt.connections(1).contains(&(sid, cid)) {
        assert!(
            Instant::now() < deadline,
            "connection {sid}/{cid} still there"
        );
        thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn kill_stops_tgtd_and_closes_the_port() {
    let Some((mut tgt, iqn)) = Tgt::with_null_lun() else {
        return;
    };
    let Some(out) = inq(&tgt.url(&iqn, 1)) else {
        return;
    };
    assert_iet(&out);
    let (port, ctl, pid) = (tgt.port(), tgt.ctl(), tgt.pid());
    let sock = PathBuf::from(format!("{}/socket.{ctl}", tgt::IPC_DIR));
    assert!(sock.exists());
    assert!(tgt.is_running());
    tgt.kill();
    assert!(!tgt.is_running());
    assert!(refused(port), "port {port} still open after kill");
    assert!(
        !PathBuf::from(format!("/proc/{pid}")).exists(),
        "tgtd {pid} not reaped"
    );
    assert!(!sock.exists(), "{} left behind", sock.display());
    assert!(tgt.tgtadm(&["--op", "show", "--mode", "target"]).is_err());
    let gone = inq(&tgt.url(&iqn, 1)).unwrap();
    assert!(!gone.ok);
    tgt.kill(); // idempotent; drop does it once more
}

#[test]
fn drop_stops_tgtd() {
    let Some(tgt) = Tgt::start() else { return };
    let (port, pid) = (tgt.port(), tgt.pid());
    drop(tgt);
    assert!(refused(port), "port {port} still open after drop");
    assert!(
        !PathBuf::from(format!("/proc/{pid}")).exists(),
        "tgtd {pid} not reaped"
    );
}

#[test]
fn two_instances_do_not_collide() {
    let Some(a) = Tgt::start() else { return };
    let Some(b) = Tgt::start() else { return };
    assert_ne!(a.ctl(), b.ctl());
    assert_ne!(a.port(), b.port());
    let (iqn_a, iqn_b) = ("iqn.2026-11.test.iotoll:a", "iqn.2026-11.test.iotoll:b");
    for (t, iqn) in [(&a, iqn_a), (&b, iqn_b)] {
        t.add_target(1, iqn).unwrap();
        t.bind_all(1).unwrap();
        t.add_lun_null(1, 1).unwrap();
    }
    assert!(
        a.show().contains(iqn_a) && !a.show().contains(iqn_b),
        "{}",
        a.show()
    );
    assert!(
        b.show().contains(iqn_b) && !b.show().contains(iqn_a),
        "{}",
        b.show()
    );
    let Some(out) = inq(&a.url(iqn_a, 1)) else {
        return;
    };
    assert_iet(&out);
    assert_iet(&inq(&b.url(iqn_b, 1)).unwrap());
    // Each portal serves only its own target.
    assert!(!inq(&a.url(iqn_b, 1)).unwrap().ok);
    drop(a);
    assert_iet(&inq(&b.url(iqn_b, 1)).unwrap());
}

#[test]
fn many_instances_at_once() {
    let handles: Vec<_> = (0..6)
        .map(|_| thread::spawn(|| Tgt::start().map(|t| (t.ctl(), t.port(), t))))
        .collect();
    let tgts: Vec<_> = handles
        .into_iter()
        .filter_map(|h| h.join().unwrap())
        .collect();
    let mut ctls: Vec<_> = tgts.iter().map(|t| t.0).collect();
    let mut ports: Vec<_> = tgts.iter().map(|t| t.1).collect();
    ctls.sort();
    ctls.dedup();
    ports.sort();
    ports.dedup();
    assert_eq!(ctls.len(), tgts.len());
    assert_eq!(ports.len(), tgts.len());
    for (_, _, t) in &tgts {
        t.add_target(1, IQN).unwrap();
    }
}

#[test]
fn silent_peer_accepts_and_says_nothing() {
    let peer = SilentPeer::start();
    let mut c = TcpStream::connect(peer.addr()).unwrap();
    c.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut buf = [0u8; 48];
    let e = c.read(&mut buf).unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
        "{e}"
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    while peer.accepted() < 1 {
        assert!(Instant::now() < deadline);
        thread::sleep(Duration::from_millis(10));
    }
    let port = peer.port();
    drop(peer);
    // Closed: our connection sees EOF (or a reset), new ones are refused.
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    assert!(matches!(c.read(&mut buf), Ok(0) | Err(_)));
    assert!(refused(port));
}

#[test]
fn free_port_refuses() {
    assert!(refused(tgt::free_port_nothing_listening()));
}

/// iscsi-perf's output format, as documented at the bottom of tgt.rs.
#[test]
fn iscsi_perf_output_format() {
    let Some((tgt, iqn)) = Tgt::with_null_lun() else {
        return;
    };
    let Some(perf) = tool("iscsi-perf") else {
        return;
    };
    let mut cmd = Command::new(perf);
    cmd.args(["-t", "2", "-m", "16", "-b", "16"])
        .arg(tgt.url(&iqn, 1));
    let out = run(cmd, Duration::from_secs(30));
    assert!(out.ok, "{out:?}");
    assert!(
        out.stdout
            .contains("performing SEQUENTIAL READ with 16 parallel requests"),
        "{out:?}"
    );
    assert!(
        out.stdout
            .contains("FIXED transfer size of 16 blocks (8192 byte)"),
        "{out:?}"
    );
    assert!(out.stdout.trim_end().ends_with("finished."), "{out:?}");
    // The last "iops average N (M MB/s)".
    let last = out.stdout.rsplit("iops average ").next().unwrap();
    let (iops, rest) = last.split_once(" (").unwrap();
    let mbs = rest.split_once(" MB/s)").unwrap().0;
    let (iops, mbs): (u64, u64) = (iops.parse().unwrap(), mbs.parse().unwrap());
    assert!(iops > 0);
    assert_eq!(mbs, (iops * 16 * 512) >> 20);
}
