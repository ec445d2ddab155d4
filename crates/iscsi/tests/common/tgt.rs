//! Test harness: a private Linux SCSI target daemon (Debian's `tgt`: tgtd,
//! tgtadm) per test, on a free loopback port, stopped on drop.
//!
//! Plain module, std + `tempfile` only, so other crates' tests can include it
//! with `#[path = "../../iscsi/tests/common/tgt.rs"] mod tgt;`. The including
//! crate needs `tempfile` as a dev-dependency. Needs root and tgt installed;
//! see [`Tgt::start`] for skipping.
//!
//! Each [`Tgt`] runs `tgtd -f -C N --iscsi portal=127.0.0.1:PORT` as a child
//! process. N (the "control port") only names tgtd's management socket,
//! `/var/run/tgtd/socket.N` (plus `socket.N.lock`, held with lockf by the
//! running tgtd); `tgtadm -C N` talks to it. N is derived from our pid and a
//! counter and must stay below 32768 (tgtd keeps it in a C `short`).
//!
//! Observed with tgt 1.0.85 (Debian 12), `tgtadm --op show --mode target
//! --tid 1` on a fresh target -- our tests rely on these defaults:
//!
//! ```text
//! MaxRecvDataSegmentLength=8192     (what tgt declares it can receive)
//! MaxXmitDataSegmentLength=8192
//! HeaderDigest=None                 DataDigest=None
//! InitialR2T=Yes                    ImmediateData=Yes
//! MaxOutstandingR2T=1
//! FirstBurstLength=65536            MaxBurstLength=262144
//! DataPDUInOrder=Yes                DataSequenceInOrder=Yes
//! ErrorRecoveryLevel=0              MaxConnections=1
//! DefaultTime2Wait=2                DefaultTime2Retain=20
//! IFMarker=No  OFMarker=No          MaxQueueCmd=128 (tgt's per-session queue)
//! nop_interval=0 nop_count=0        (tgt sends no NOP-In pings by default)
//! ```
//!
//! Login response to libiscsi (LIBISCSI_DEBUG=6): TargetPortalGroupTag=1,
//! HeaderDigest=None, DataDigest=None, InitialR2T=Yes, ImmediateData=Yes,
//! MaxBurstLength=262144, FirstBurstLength=65536, DefaultTime2Wait=2,
//! DefaultTime2Retain=0, MaxOutstandingR2T=1, ErrorRecoveryLevel=0,
//! IFMarker=No, OFMarker=No, MaxConnections=1, DataPDUInOrder=Yes,
//! DataSequenceInOrder=Yes -- and NO MaxRecvDataSegmentLength: tgt declares
//! its own only when it differs from the default 8192 (then e.g.
//! "MaxRecvDataSegmentLength=65536"), so an initiator must assume 8192 when
//! the key is absent.
//!
//! Other tgt behaviour worth knowing:
//! - A target always has LUN 0, a "controller" (type 0x0c) LU, in addition to
//!   the LUNs added; INQUIRY vendor is "IET     ", product "VIRTUAL-DISK" for
//!   disks; a disk LU's block size is 512.
//! - The `null` backing store ignores its path (we pass `/dev/null`) and has a
//!   fixed size of 1 TiB ([`NULL_LUN_BYTES`], 2^31 blocks of 512 bytes);
//!   writes are discarded, reads return unspecified data without touching a
//!   file. tgt has no option to change that size.
//! - `set_param` changes apply to sessions logged in afterwards.
//! - LUN removal (`--mode logicalunit --op delete`) has no `--force` flag (only
//!   target deletion has one); it succeeds while a session is logged in as
//!   long as no command for that LUN is queued in tgtd at that instant
//!   ("this logical unit is still active" otherwise; [`Tgt::remove_lun`]
//!   retries), and the other LUNs' sessions then get a unit attention
//!   REPORTED LUNS DATA HAS CHANGED. Commands to the removed LUN get CHECK
//!   CONDITION ILLEGAL REQUEST / LOGICAL UNIT NOT SUPPORTED (0x25/0x00).
//! - CHAP: an account bound incoming makes CHAP mandatory (a login without
//!   credentials fails with status 0x0201 Authentication failure); an account
//!   bound outgoing lets the initiator ask the target to authenticate too
//!   (mutual), but a one-way login still works. tgt accepts short secrets.
//! - If the portal cannot be bound (port taken), tgtd does NOT exit: it falls
//!   back to listening on 0.0.0.0:3260 and [::]:3260. [`Tgt::start`] checks
//!   the portal list and retries with another port.
//! - tgtd ignores SIGTERM; we stop it with SIGKILL. It exits on SIGINT, so a
//!   Ctrl-C of `cargo test` (sent to the process group) stops it too; a
//!   SIGKILL of the test binary leaves it running.

#![allow(dead_code)]

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// The name [`Tgt::with_file_lun`] and [`Tgt::with_null_lun`] give target 1.
pub const IQN: &str = "iqn.2026-11.test.iotoll:t1";

/// Size of a tgt `null` backing-store LUN: fixed by tgt at 1 TiB.
pub const NULL_LUN_BYTES: u64 = 1 << 40;

/// Block size of tgt's disk LUNs unless told otherwise.
pub const BLOCK_SIZE: u64 = 512;

/// Where tgtd puts its management sockets (`socket.N`, `socket.N.lock`).
pub const IPC_DIR: &str = "/var/run/tgtd";

/// How long [`Tgt::start`] waits for tgtd to answer.
const READY_TIMEOUT: Duration = Duration::from_secs(10);

/// Whether the environment variable `CI` is set: then missing tools or
/// privileges fail the test instead of skipping it.
pub fn in_ci() -> bool {
    std::env::var_os("CI").is_some()
}

/// Skip (return None after saying why on stderr) or, under CI, panic.
pub fn skip<T>(why: &str) -> Option<T> {
    if in_ci() {
        panic!("CI is set, not skipping: {why}");
    }
    eprintln!("skipping: {why}");
    None
}

/// A program by name: on PATH, else in the sbin directories (often not on a
/// non-root PATH).
pub fn find_tool(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/local/sbin", "/usr/bin", "/bin"].map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|p| {
            fs::metadata(p)
                .map(|m| m.is_file() && m.mode() & 0o111 != 0)
                .unwrap_or(false)
        })
}

/// Whether this process's effective uid is 0 (from /proc/self/status).
pub fn is_root() -> bool {
    fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|ids| ids.split_whitespace().nth(1).map(|e| e == "0"))
        })
        .unwrap_or(false)
}

/// A loopback port nothing listens on (bound to port 0, then released): a
/// connection to it is refused. Racy in principle, like any such helper.
pub fn free_port_nothing_listening() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.local_addr())
        .expect("bind 127.0.0.1:0")
        .port()
}

static NEXT_CTL: AtomicU32 = AtomicU32::new(0);

/// A control-port number for a new tgtd: from our pid and a per-process
/// counter, in 1024..32767, skipping numbers whose socket answers (a live
/// tgtd). tgtd's own lock catches the remaining races; `start` retries.
fn pick_ctl() -> u16 {
    const BASE: u32 = 1024;
    const SPAN: u32 = 32767 - BASE;
    let pid = std::process::id();
    loop {
        let c = NEXT_CTL.fetch_add(1, Ordering::Relaxed);
        // 61 consecutive numbers per pid before we overlap the next pid's.
        let n = BASE + (pid.wrapping_mul(61).wrapping_add(c)) % SPAN;
        if UnixStream::connect(format!("{IPC_DIR}/socket.{n}")).is_err() {
            return n as u16;
        }
    }
}

fn inode(path: &Path) -> Option<u64> {
    fs::symlink_metadata(path).ok().map(|m| m.ino())
}

/// Why a tgtd attempt failed.
enum StartErr {
    /// Try again with another control number or port.
    Retry(String),
    /// Give up.
    Fatal(String),
}

/// A private tgtd. Killed (SIGKILL, by pid), reaped and its socket files
/// removed on drop.
pub struct Tgt {
    child: Child,
    ctl: u16,
    /// The portal's address: 127.0.0.1, or a lab host's in `netns`.
    ip: Ipv4Addr,
    port: u16,
    /// The network namespace tgtd runs in (None: this process's).
    netns: Option<String>,
    tgtadm: PathBuf,
    /// tgtd's stdout and stderr go here (a file, so tgtd never blocks on a
    /// full pipe).
    log: tempfile::NamedTempFile,
    /// Inodes of socket.N and socket.N.lock while ours ran: we only remove
    /// the files if they are still these.
    sock_ino: Option<u64>,
    lock_ino: Option<u64>,
    stopped: bool,
}

impl Tgt {
    /// Start a private tgtd, ready for tgtadm. None (after "skipping: ..." on
    /// stderr) when tgtd or tgtadm is missing or we are not root; under CI
    /// (env var CI set) that panics instead. Panics if tgtd does not come up.
    pub fn start() -> Option<Tgt> {
        Self::start_at(None)
    }

    /// [`Tgt::start`] inside network namespace `netns` (a lab host), its
    /// portal on `ip`, port 3260 (the namespace is private). The portal
    /// cannot be reached from this process's namespace: readiness is
    /// tgtd listing it.
    pub fn start_in(netns: &str, ip: Ipv4Addr) -> Option<Tgt> {
        Self::start_at(Some((netns, ip)))
    }

    fn start_at(place: Option<(&str, Ipv4Addr)>) -> Option<Tgt> {
        let (Some(tgtd), Some(tgtadm)) = (find_tool("tgtd"), find_tool("tgtadm")) else {
            return skip("tgtd not installed (Debian package tgt)");
        };
        if !is_root() {
            return skip("not root (tgtd needs root)");
        }
        let mut why = Vec::new();
        for _ in 0..20 {
            match Self::try_start(&tgtd, &tgtadm, place) {
                Ok(t) => return Some(t),
                Err(StartErr::Retry(w)) => why.push(w),
                Err(StartErr::Fatal(w)) => panic!("tgtd did not start: {w}"),
            }
        }
        panic!(
            "tgtd did not start after 20 attempts:\n{}",
            why.join("\n---\n")
        );
    }

    fn try_start(
        tgtd: &Path,
        tgtadm: &Path,
        place: Option<(&str, Ipv4Addr)>,
    ) -> Result<Tgt, StartErr> {
        let ctl = pick_ctl();
        let (ip, port) = match place {
            Some((_, ip)) => (ip, 3260),
            None => (Ipv4Addr::LOCALHOST, free_port_nothing_listening()),
        };
        let log = tempfile::Builder::new()
            .prefix("tgtd-log-")
            .tempfile()
            .map_err(|e| StartErr::Fatal(format!("temp file for tgtd's log: {e}")))?;
        let out = |what| {
            OpenOptions::new()
                .append(true)
                .open(log.path())
                .map_err(|e| StartErr::Fatal(format!("open tgtd's log for {what}: {e}")))
        };
        let (stdout, stderr) = (out("stdout")?, out("stderr")?);
        // `ip netns exec` execs tgtd in place: the child's pid is tgtd's.
        let mut cmd = match place {
            Some((ns, _)) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns]).arg(tgtd);
                c
            }
            None => Command::new(tgtd),
        };
        let child = cmd
            .arg("-f")
            .arg("-C")
            .arg(ctl.to_string())
            .arg("--iscsi")
            .arg(format!("portal={ip}:{port}"))
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr)
            .spawn()
            .map_err(|e| StartErr::Fatal(format!("spawn {}: {e}", tgtd.display())))?;
        let mut t = Tgt {
            child,
            ctl,
            ip,
            port,
            netns: place.map(|(ns, _)| ns.to_string()),
            tgtadm: tgtadm.to_path_buf(),
            log,
            sock_ino: None,
            lock_ino: None,
            stopped: false,
        };
        // On error `t` drops here: kills our child, leaves foreign files alone.
        t.wait_ready()?;
        t.sock_ino = inode(&t.socket_path());
        t.lock_ino = inode(&t.lock_path());
        Ok(t)
    }

    fn wait_ready(&mut self) -> Result<(), StartErr> {
        let deadline = Instant::now() + READY_TIMEOUT;
        let want = format!("Portal: {}", self.portal());
        let mut last = String::new();
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                self.stopped = true;
                let log = self.log();
                let msg = format!(
                    "tgtd -C {} exited early ({status}); its output:\n{log}",
                    self.ctl
                );
                return Err(
                    if log.contains("another tgtd is using") || log.contains("unable to bind") {
                        StartErr::Retry(msg)
                    } else {
                        StartErr::Fatal(msg)
                    },
                );
            }
            // tgtd answers on its management socket and lists our portal ...
            match self.tgtadm(&["--op", "show", "--mode", "portal"]) {
                Ok(portals) if portals.lines().any(|l| l.trim().starts_with(&want)) => {
                    // ... and accepts TCP there (then the child is still ours).
                    let reachable = self.netns.is_some()
                        || TcpStream::connect_timeout(&self.addr(), Duration::from_secs(1)).is_ok();
                    if reachable && matches!(self.child.try_wait(), Ok(None)) {
                        return Ok(());
                    }
                }
                Ok(portals) => {
                    // Our tgtd is up (it answers only once its portals are
                    // set up, and said so in its log), but the portal failed
                    // (port taken meanwhile): it then listens on *:3260
                    // instead. Try another port. (Without that line in our
                    // log, another tgtd answered: ours will exit on the lock.)
                    if self.log().contains("unable to bind")
                        && matches!(self.child.try_wait(), Ok(None))
                    {
                        self.sock_ino = inode(&self.socket_path());
                        self.lock_ino = inode(&self.lock_path());
                        return Err(StartErr::Retry(format!(
                            "tgtd -C {} did not get portal {}; portals:\n{portals}\nits output:\n{}",
                            self.ctl,
                            self.portal(),
                            self.log()
                        )));
                    }
                }
                Err(e) => last = e,
            }
            if Instant::now() > deadline {
                return Err(StartErr::Fatal(format!(
                    "tgtd -C {} not ready on {} within {:?}; last tgtadm error: {last}\ntgtd's output:\n{}",
                    self.ctl,
                    self.portal(),
                    READY_TIMEOUT,
                    self.log()
                )));
            }
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// The TCP port of the iSCSI portal.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The control-port number N (`tgtadm -C N`, `/var/run/tgtd/socket.N`).
    pub fn ctl(&self) -> u16 {
        self.ctl
    }

    /// tgtd's pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// "IP:PORT" (127.0.0.1 unless started in a namespace).
    pub fn portal(&self) -> String {
        format!("{}:{}", self.ip, self.port)
    }

    /// The portal as a socket address.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from((self.ip, self.port))
    }

    /// "iscsi://IP:PORT/IQN/LUN" (libiscsi's URL form).
    pub fn url(&self, iqn: &str, lun: u64) -> String {
        format!("iscsi://{}/{iqn}/{lun}", self.portal())
    }

    /// tgtd's stdout and stderr so far.
    pub fn log(&self) -> String {
        fs::read(self.log.path())
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
    }

    fn socket_path(&self) -> PathBuf {
        PathBuf::from(format!("{IPC_DIR}/socket.{}", self.ctl))
    }

    fn lock_path(&self) -> PathBuf {
        PathBuf::from(format!("{IPC_DIR}/socket.{}.lock", self.ctl))
    }

    /// Run `tgtadm -C N --lld iscsi ARGS...`: its stdout, or on failure its
    /// exit status and stderr. Every wrapper below goes through this.
    pub fn tgtadm(&self, args: &[&str]) -> Result<String, String> {
        let out = Command::new(&self.tgtadm)
            .arg("-C")
            .arg(self.ctl.to_string())
            .args(["--lld", "iscsi"])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("run {}: {e}", self.tgtadm.display()))?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(format!(
                "tgtadm -C {} --lld iscsi {} failed ({}): {}",
                self.ctl,
                args.join(" "),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }
    }

    fn run(&self, args: &[&str]) -> Result<(), String> {
        self.tgtadm(args).map(drop)
    }

    /// New target `tid` (must not be 0) named `iqn`.
    pub fn add_target(&self, tid: u32, iqn: &str) -> Result<(), String> {
        let tid = tid.to_string();
        self.run(&[
            "--op",
            "new",
            "--mode",
            "target",
            "--tid",
            &tid,
            "--targetname",
            iqn,
        ])
    }

    /// Allow every initiator address (ACL "ALL"); without an ACL tgt refuses
    /// logins to the target.
    pub fn bind_all(&self, tid: u32) -> Result<(), String> {
        let tid = tid.to_string();
        self.run(&[
            "--op",
            "bind",
            "--mode",
            "target",
            "--tid",
            &tid,
            "--initiator-address",
            "ALL",
        ])
    }

    /// LUN `lun` backed by the regular file (or block device) `path`, through
    /// tgt's `rdwr` backing store (pread/pwrite). Size: the file's.
    pub fn add_lun_file(&self, tid: u32, lun: u64, path: &Path) -> Result<(), String> {
        let path = path.to_str().ok_or("backing-store path is not UTF-8")?;
        self.add_lun(tid, lun, "rdwr", path)
    }

    /// LUN `lun` on tgt's `null` backing store: always [`NULL_LUN_BYTES`]
    /// (1 TiB, 512-byte blocks), writes discarded, reads return garbage,
    /// no disk I/O -- for protocol-bound benchmarks.
    pub fn add_lun_null(&self, tid: u32, lun: u64) -> Result<(), String> {
        self.add_lun(tid, lun, "null", "/dev/null")
    }

    fn add_lun(&self, tid: u32, lun: u64, bstype: &str, path: &str) -> Result<(), String> {
        let store = ["--bstype", bstype, "--backing-store", path];
        self.lun_op("new", tid, lun, &store)
    }

    /// `tgtadm --op OP --mode logicalunit` on LUN `lun` of target `tid`,
    /// with `more` arguments.
    fn lun_op(&self, op: &str, tid: u32, lun: u64, more: &[&str]) -> Result<(), String> {
        let (tid, lun) = (tid.to_string(), lun.to_string());
        let mut args = vec!["--op", op, "--mode", "logicalunit"];
        args.extend(["--tid", &tid, "--lun", &lun]);
        args.extend(more);
        self.run(&args)
    }

    /// Remove LUN `lun`, also while sessions are logged in. tgt refuses while
    /// a command for the LUN is queued ("still active"), so this retries for
    /// up to 5 s.
    pub fn remove_lun(&self, tid: u32, lun: u64) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            match self.lun_op("delete", tid, lun, &[]) {
                Err(e) if e.contains("still active") && Instant::now() < deadline => {
                    thread::sleep(Duration::from_millis(10))
                }
                r => return r,
            }
        }
    }

    /// Set a target's login parameter, e.g. ("MaxRecvDataSegmentLength",
    /// "4096"), ("InitialR2T", "No"), ("ImmediateData", "No"),
    /// ("FirstBurstLength", "16384"), ("MaxBurstLength", "65536"),
    /// ("HeaderDigest", "CRC32C"), ("DataDigest", "CRC32C,None"). Unknown
    /// names and bad values fail ("invalid request"). Applies to later logins.
    pub fn set_param(&self, tid: u32, key: &str, value: &str) -> Result<(), String> {
        let tid = tid.to_string();
        self.run(&[
            "--op", "update", "--mode", "target", "--tid", &tid, "--name", key, "--value", value,
        ])
    }

    /// A CHAP account (user, secret), usable by any target once bound.
    pub fn add_chap_account(&self, user: &str, pass: &str) -> Result<(), String> {
        self.run(&[
            "--op",
            "new",
            "--mode",
            "account",
            "--user",
            user,
            "--password",
            pass,
        ])
    }

    /// One-way CHAP: the initiator must log in to `tid` as `user` (with that
    /// account's secret). Several incoming accounts may be bound.
    pub fn bind_incoming_account(&self, tid: u32, user: &str) -> Result<(), String> {
        let tid = tid.to_string();
        self.run(&[
            "--op", "bind", "--mode", "account", "--tid", &tid, "--user", user,
        ])
    }

    /// Mutual CHAP: `tid` answers the initiator's challenge as `user` (one
    /// outgoing account per target). Needs an incoming account too.
    pub fn bind_outgoing_account(&self, tid: u32, user: &str) -> Result<(), String> {
        let tid = tid.to_string();
        self.run(&[
            "--op",
            "bind",
            "--mode",
            "account",
            "--tid",
            &tid,
            "--user",
            user,
            "--outgoing",
        ])
    }

    /// `tgtadm --op show --mode target`: every target, its I_T nexuses
    /// (sessions), LUNs, accounts and ACLs. Panics if tgtd does not answer.
    pub fn show(&self) -> String {
        self.tgtadm(&["--op", "show", "--mode", "target"])
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// `tgtadm --op show --mode target --tid TID`: the target's parameters as
    /// `name=value` lines (see the header comment). Panics on failure.
    pub fn params(&self, tid: u32) -> String {
        let tid = tid.to_string();
        self.tgtadm(&["--op", "show", "--mode", "target", "--tid", &tid])
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// The (session id, connection id) of each connection to `tid`.
    pub fn connections(&self, tid: u32) -> Vec<(u64, u64)> {
        let tid = tid.to_string();
        let out = self
            .tgtadm(&["--op", "show", "--mode", "conn", "--tid", &tid])
            .unwrap_or_else(|e| panic!("{e}"));
        // "Session: 11\n    Connection: 0\n        Initiator: ..."
        let mut sid = None;
        let mut conns = Vec::new();
        for line in out.lines().map(str::trim) {
            if let Some(s) = line.strip_prefix("Session:") {
                sid = s.trim().parse().ok();
            } else if let (Some(c), Some(s)) = (line.strip_prefix("Connection:"), sid) {
                if let Ok(c) = c.trim().parse() {
                    conns.push((s, c));
                }
            }
        }
        conns
    }

    /// Close a connection from the target side (a fault: the initiator sees
    /// its TCP connection end).
    pub fn close_connection(&self, tid: u32, sid: u64, cid: u64) -> Result<(), String> {
        let (tid, sid, cid) = (tid.to_string(), sid.to_string(), cid.to_string());
        self.run(&[
            "--op", "delete", "--mode", "conn", "--tid", &tid, "--sid", &sid, "--cid", &cid,
        ])
    }

    /// Kill tgtd now (SIGKILL by pid), reap it and remove its socket files.
    /// Connections to it are reset, the port is closed afterwards. Idempotent;
    /// drop does the same.
    pub fn kill(&mut self) {
        if !self.stopped {
            // Err only if it already exited; the wait reaps it either way.
            let _ = self.child.kill();
            let _ = self.child.wait();
            self.stopped = true;
        }
        // Remove socket.N and its lock only if they are the files our tgtd
        // had (a later tgtd with the same N would have made new ones).
        for (path, ino) in [
            (self.socket_path(), self.sock_ino),
            (self.lock_path(), self.lock_ino),
        ] {
            if ino.is_some() && inode(&path) == ino {
                let _ = fs::remove_file(&path);
            }
        }
        self.sock_ino = None;
        self.lock_ino = None;
    }

    /// Whether tgtd is still running.
    pub fn is_running(&mut self) -> bool {
        !self.stopped && matches!(self.child.try_wait(), Ok(None))
    }

    /// A tgtd with target 1 ([`IQN`]), ACL ALL, and LUN 1 on a new sparse
    /// temporary file of `size_bytes` (a multiple of 512). The file lives as
    /// long as the returned handle. None: see [`Tgt::start`].
    pub fn with_file_lun(size_bytes: u64) -> Option<(Tgt, tempfile::NamedTempFile, String)> {
        let tgt = Tgt::start()?;
        let file = tempfile::Builder::new()
            .prefix("iotoll-iscsi-lun-")
            .tempfile()
            .expect("temporary backing file");
        file.as_file()
            .set_len(size_bytes)
            .expect("size the backing file");
        tgt.add_target(1, IQN).unwrap();
        tgt.bind_all(1).unwrap();
        tgt.add_lun_file(1, 1, file.path()).unwrap();
        Some((tgt, file, IQN.to_string()))
    }

    /// A tgtd with target 1 ([`IQN`]), ACL ALL, and LUN 1 on the null
    /// backing store (1 TiB, no disk I/O). None: see [`Tgt::start`].
    pub fn with_null_lun() -> Option<(Tgt, String)> {
        Self::null_lun(Tgt::start()?)
    }

    /// [`Tgt::with_null_lun`] in a lab host: see [`Tgt::start_in`].
    pub fn with_null_lun_in(netns: &str, ip: Ipv4Addr) -> Option<(Tgt, String)> {
        Self::null_lun(Tgt::start_in(netns, ip)?)
    }

    fn null_lun(tgt: Tgt) -> Option<(Tgt, String)> {
        tgt.add_target(1, IQN).unwrap();
        tgt.bind_all(1).unwrap();
        tgt.add_lun_null(1, 1).unwrap();
        Some((tgt, IQN.to_string()))
    }
}

impl Drop for Tgt {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A TCP listener on 127.0.0.1 that accepts connections and never sends
/// anything (nor reads: what the peer sends stays unread), keeping them open
/// until dropped. For login/connect timeout tests.
pub struct SilentPeer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    accepted: Arc<AtomicUsize>,
    conns: Arc<Mutex<Vec<TcpStream>>>,
    thread: Option<JoinHandle<()>>,
}

impl SilentPeer {
    pub fn start() -> SilentPeer {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local_addr");
        let stop = Arc::new(AtomicBool::new(false));
        let accepted = Arc::new(AtomicUsize::new(0));
        let conns = Arc::new(Mutex::new(Vec::new()));
        let thread = {
            let (stop, accepted, conns) = (stop.clone(), accepted.clone(), conns.clone());
            thread::spawn(move || {
                for conn in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    if let Ok(conn) = conn {
                        accepted.fetch_add(1, Ordering::SeqCst);
                        conns.lock().unwrap().push(conn);
                    }
                }
            })
        };
        SilentPeer {
            addr,
            stop,
            accepted,
            conns,
            thread: Some(thread),
        }
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// "127.0.0.1:PORT".
    pub fn portal(&self) -> String {
        self.addr.to_string()
    }

    /// How many connections it accepted so far.
    pub fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
}

impl Drop for SilentPeer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the blocking accept with a connection of our own.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        for c in self.conns.lock().unwrap().drain(..) {
            let _ = c.shutdown(Shutdown::Both);
        }
    }
}

/// Read all of a file (for tests comparing a LUN's backing file).
pub fn read_file(path: &Path) -> Vec<u8> {
    let mut v = Vec::new();
    File::open(path)
        .and_then(|mut f| f.read_to_end(&mut v))
        .unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    v
}

/// Write `data` at the start of a file (to seed a LUN's backing file).
pub fn write_file(path: &Path, data: &[u8]) {
    OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|mut f| f.write_all(data))
        .unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

// iscsi-perf (libiscsi-bin 1.19.0, "iscsi-perf version 0.1"), for the
// benchmark against libiscsi:
//
//   iscsi-perf [-i <initiator-name>] [-m <max_requests>] [-b blocks_per_request]
//              [-t timeout] [-r|--random] [-R|--random-blocks] [-l|--logging]
//              [-n|--ignore-errors] [-x <max_reconnects>] <iscsi-url>
//
// - READS ONLY (READ(16), one session, one connection); no write mode.
//   Sequential by default (wrapping at the end of the LUN); -r: a random LBA
//   per request.
// - -m N: requests kept in flight (queue depth), default 32.
// - -b N: blocks per request, default 8 (= 4096 bytes at tgt's 512-byte
//   blocks); -R: a random transfer size of 1..N blocks instead.
// - -t S: run time in seconds (default: until SIGINT/SIGTERM; the first one
//   finishes normally, a second aborts).
// - -i: initiator name (default iqn.2010-11.libiscsi:iscsi-perf).
// - -l: a newline after each once-a-second progress line (else only \r).
// - -x N: reconnect attempts (default unlimited); -n: go on after failed reads.
// - No --help: an unknown option prints the usage to stderr, exit 1.
// - Login: asks HeaderDigest=None,CRC32C (tgt picks None unless set to
//   CRC32C); CHAP via the URL (iscsi://user%secret@host:port/iqn/lun) like
//   every libiscsi tool. Sends a NOP-Out every 5 s.
// - Output on stdout. Once a second "\r" + a progress line; at the end "\r" +
//   "iops average N (M MB/s)" padded with spaces, then "\n\nfinished.\n",
//   exit 0. On a failed read: "Read16 failed with ..." on stderr (or nothing,
//   for a cancelled command), "\nABORTED!\n" on stdout, exit 1; a failed
//   login: "Login Failed. ..." on stderr, exit 10.
//   IOPS and MB/s are integers; MB/s = MiB/s (>> 20). In the final line MB/s
//   = average IOPS * blocks * block size (nominal: wrong with -R); the
//   progress lines' "current" and "average" MB/s count bytes transferred.
//
// Sample, `iscsi-perf -t 5 iscsi://127.0.0.1:PORT/iqn.2026-11.test.iotoll:t1/1`
// against a tgt null LUN (\r shown as new lines, trailing spaces trimmed):
//
//   iscsi-perf version 0.1 - (c) 2014-2015 by Peter Lieven <pl@ĸamp.de>
//
//   connected to iscsi://127.0.0.1:13263/iqn.2026-11.test.iotoll:t1/1
//   capacity is 2147483648 blocks or 1099511627776 byte (1048576 MB)
//   performing SEQUENTIAL READ with 32 parallel requests
//   FIXED transfer size of 8 blocks (4096 byte)
//   will run for 5 seconds.
//
//   00:00:04 - lba 887840, iops current 110947 (433 MB/s), iops average 110947 (433 MB/s), in_flight 32, busy 0
//   00:00:03 - lba 1469736, iops current 72736 (284 MB/s), iops average 91841 (358 MB/s), in_flight 32, busy 0
//   00:00:02 - lba 1932080, iops current 57791 (225 MB/s), iops average 80491 (314 MB/s), in_flight 32, busy 0
//   00:00:01 - lba 2446608, iops current 64315 (251 MB/s), iops average 76447 (298 MB/s), in_flight 32, busy 0
//   iops average 78425 (306 MB/s)
//
//   finished.
//
// (2 CPUs, tgt 1.0.85, libiscsi 1.19.0.) Parse the last
// "iops average (\d+) \((\d+) MB/s\)" of stdout; the exit status tells
// whether the run finished.
