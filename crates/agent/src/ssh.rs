//! `--ssh`: starting agents on the hosts of a hosts file through the system ssh.
//!
//! The console runs the system `ssh` (not a Rust ssh library) so that
//! everything the user already set up applies unchanged: `~/.ssh/config`
//! (Host aliases, User, Port, IdentityFile, ProxyJump), the ssh-agent,
//! known_hosts. Each agent runs as
//!
//! ```text
//! ssh -o BatchMode=yes -T [EXTRA...] -o ConnectTimeout=N DESTINATION -- \
//!     AGENT agent --listen LISTEN --auth-key - [--allow-target T]...
//! ```
//!
//! with the per-run key written as the first line of ssh's stdin (a key on
//! a command line would show in `ps` on both machines). The stdin stays
//! open for the agent's life: closing it is how the agent is stopped (the
//! agent exits at EOF), and if the console dies the kernel closes it, so
//! the remote agent never outlives its console. No pty is requested
//! (`-T`), so the stream carries the key and the `listening on` line
//! byte for byte.

use std::borrow::Cow;
use std::fmt;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What the agent prints on stdout once it is listening, before `ADDR:PORT`.
pub use crate::local::LISTENING;

/// How long [`SshAgent::stop`] waits for ssh to exit after closing its stdin.
pub const STOP_GRACE: Duration = Duration::from_secs(2);

/// How much of ssh's stderr is kept for messages (its last bytes).
const STDERR_TAIL: usize = 4096;

/// The agent's contract: at least this many bytes of key after trimming.
const MIN_KEY: usize = 16;

/// How to start one agent through ssh.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshLaunch {
    /// The ssh destination, e.g. `user@host` or a `Host` alias of ~/.ssh/config.
    pub destination: String,
    /// The agent program on the remote host (default `iotoll`, found on the
    /// remote PATH). One word: it is quoted like every other argument, so
    /// `sudo iotoll` is not a command here (log in as the user it needs,
    /// or name a wrapper script); a leading `~/` is expanded remotely.
    pub agent: String,
    /// `ADDR:PORT` the agent listens on, there.
    pub listen: String,
    /// The local ssh program (default `ssh`).
    pub ssh: String,
    /// Extra ssh options placed before the destination, e.g. `-F config`,
    /// `-i key`, `-o Port=2222`. They come before iotoll's own
    /// `-o ConnectTimeout`, so a user's value of it wins (ssh keeps the
    /// first value of an option).
    pub extra: Vec<String>,
    /// `--allow-target` of the agent, each `PATH` or `PATH:rw`.
    pub allow_targets: Vec<String>,
}

impl Default for SshLaunch {
    fn default() -> Self {
        SshLaunch {
            destination: String::new(),
            agent: "iotoll".into(),
            listen: String::new(),
            ssh: "ssh".into(),
            extra: Vec::new(),
            allow_targets: Vec::new(),
        }
    }
}

impl SshLaunch {
    /// The defaults (`iotoll` through `ssh`) for `destination`, listening on `listen`.
    pub fn new(destination: impl Into<String>, listen: impl Into<String>) -> SshLaunch {
        SshLaunch {
            destination: destination.into(),
            listen: listen.into(),
            ..SshLaunch::default()
        }
    }

    /// The command line the remote shell runs (each word quoted for a
    /// POSIX shell: ssh joins its arguments with spaces and hands the
    /// string to the remote user's shell, which splits it again).
    pub fn remote_command(&self) -> String {
        let args = crate::agent_args(&self.listen, "-", &self.allow_targets).map(shell_quote);
        let words: Vec<Cow<str>> = std::iter::once(quote_program(&self.agent))
            .chain(args)
            .collect();
        words.join(" ")
    }

    /// The arguments of the local ssh (after the program name). `timeout`
    /// also bounds ssh's own TCP connect (`ConnectTimeout`, whole seconds,
    /// at least 1).
    pub fn ssh_args(&self, timeout: Duration) -> Vec<String> {
        let mut a: Vec<String> = vec!["-o".into(), "BatchMode=yes".into(), "-T".into()];
        a.extend(self.extra.iter().cloned());
        a.push("-o".into());
        a.push(format!("ConnectTimeout={}", timeout.as_secs().max(1)));
        a.push(self.destination.clone());
        // `--` ends ssh's options: OpenSSH goes on parsing options after
        // the destination, and the remote command starts with the agent's
        // path, which must never be taken for one.
        a.push("--".into());
        a.push(self.remote_command());
        a
    }

    fn check(&self) -> Result<(), LaunchErrorKind> {
        let d = &self.destination;
        let spaced = d.chars().any(|c| c.is_whitespace() || c.is_control());
        for (bad, why) in [
            (d.trim().is_empty(), "the ssh destination is empty"),
            // ssh would read it as an option (e.g. -oProxyCommand=...).
            (d.starts_with('-'), "the ssh destination starts with '-'"),
            (spaced, "the ssh destination contains white space"),
            (self.agent.is_empty(), "the remote agent command is empty"),
            (
                self.listen.is_empty(),
                "the agent's listen address is empty",
            ),
            (self.ssh.is_empty(), "the ssh program is empty"),
        ] {
            if bad {
                return Err(LaunchErrorKind::BadLaunch(why.into()));
            }
        }
        Ok(())
    }
}

/// `s` as one word for a POSIX shell (sh, bash, dash, zsh): unchanged when
/// every character is one no shell treats specially, else in single
/// quotes, each `'` written as `'\''`.
pub fn shell_quote(s: &str) -> Cow<'_, str> {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-+=:,./@%".contains(c);
    if !s.is_empty() && s.chars().all(plain) {
        return Cow::Borrowed(s);
    }
    Cow::Owned(format!("'{}'", s.replace('\'', "'\\''")))
}

/// The agent program quoted, but with a leading `~/` left unquoted so the
/// remote shell expands it to the remote home (`~/bin/iotoll`).
fn quote_program(p: &str) -> Cow<'_, str> {
    match p.strip_prefix("~/") {
        Some(rest) if !rest.is_empty() => Cow::Owned(format!("~/{}", shell_quote(rest))),
        _ => shell_quote(p),
    }
}

/// A per-run random key: 32 random bytes from the kernel, as 64 lowercase
/// hex characters (a line the agent reads with `--auth-key -`). Without
/// randomness there is no key worth having (a guessable one would let
/// anyone drive the agents): an error.
pub fn run_key() -> std::io::Result<Vec<u8>> {
    let raw = iotoll_model::secret::random::<32>()?;
    Ok(hex::encode(raw).into_bytes())
}

/// Why an agent could not be started or stopped through ssh.
#[derive(Debug, thiserror::Error)]
#[error("{}: {kind}", who(.host.as_deref(), .destination))]
pub struct LaunchError {
    /// The hosts file's name for the host, when the caller added it
    /// ([`LaunchError::with_host`]).
    pub host: Option<String>,
    /// The ssh destination.
    pub destination: String,
    pub kind: LaunchErrorKind,
}

impl LaunchError {
    /// The same error naming the host as the hosts file does:
    /// `host c1 (root@198.18.0.3): ...`.
    pub fn with_host(mut self, name: impl Into<String>) -> LaunchError {
        self.host = Some(name.into());
        self
    }
}

/// Who a [`LaunchError`] is about: `host c1 (root@198.18.0.3)`, or the
/// destination alone.
fn who(host: Option<&str>, destination: &str) -> String {
    match host {
        Some(h) => format!("host {h} ({destination})"),
        None => destination.to_string(),
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LaunchErrorKind {
    /// The launch itself is unusable (empty or option-like destination, ...).
    #[error("{0}")]
    BadLaunch(String),
    #[error("bad key: {0}")]
    BadKey(String),
    #[error("cannot run '{ssh}': {error}")]
    Spawn { ssh: String, error: std::io::Error },
    /// ssh ended before the agent said it was listening (or, at stop, with
    /// a failure): ssh's own status (255 for its own errors, else the
    /// remote command's) and what it wrote on stderr.
    #[error("{}", exited(status, stderr))]
    Exited { status: String, stderr: String },
    #[error("no '{}' line within {}{}", LISTENING.trim_end(), humantime::format_duration(*after), tail(stderr))]
    Timeout { after: Duration, stderr: String },
    #[error(
        "ssh did not exit within {} of its stdin closing: killed{}",
        humantime::format_duration(STOP_GRACE),
        tail(stderr)
    )]
    NotStopped { stderr: String },
    #[error("{0}")]
    Io(String),
}

fn exited(status: &str, stderr: &str) -> String {
    if stderr.is_empty() {
        format!("{status} before the agent said it was listening (nothing on stderr)")
    } else {
        format!("{status}: {stderr}")
    }
}

fn tail(stderr: &str) -> String {
    if stderr.is_empty() {
        String::new()
    } else {
        format!("; ssh's stderr: {stderr}")
    }
}

/// An agent started through ssh; stopped by [`SshAgent::stop`] or on drop.
pub struct SshAgent {
    destination: String,
    listening: String,
    /// `None` once stopped.
    child: Option<Child>,
    /// Kept open: its EOF is the agent's signal to exit.
    stdin: Option<ChildStdin>,
    stderr: Arc<Mutex<Vec<u8>>>,
    stderr_done: Option<JoinHandle<()>>,
}

impl fmt::Debug for SshAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SshAgent")
            .field("destination", &self.destination)
            .field("listening", &self.listening)
            .field("pid", &self.child.as_ref().map(|c| c.id()))
            .finish()
    }
}

impl SshAgent {
    /// Runs ssh, hands the agent `key` on stdin and waits up to `timeout`
    /// for its `listening on` line. On any failure ssh is killed and
    /// reaped, and the error carries what ssh wrote on stderr.
    pub fn start(l: &SshLaunch, key: &[u8], timeout: Duration) -> Result<SshAgent, LaunchError> {
        let err = |kind| LaunchError {
            host: None,
            destination: l.destination.clone(),
            kind,
        };
        l.check().map_err(err)?;
        check_key(key).map_err(err)?;
        let spawn = || {
            Command::new(&l.ssh)
                .args(l.ssh_args(timeout))
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
        };
        // ETXTBSY: an ssh (wrapper) script just written can still be open
        // for writing in a child another thread forked and has not exec'd
        // yet; that lasts microseconds.
        let mut tries = 0;
        let mut child = loop {
            match spawn() {
                Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) && tries < 20 => {
                    tries += 1;
                    std::thread::sleep(Duration::from_millis(5));
                }
                r => {
                    break r.map_err(|error| {
                        err(LaunchErrorKind::Spawn {
                            ssh: l.ssh.clone(),
                            error,
                        })
                    })?
                }
            }
        };
        let (lines, stderr, stderr_done) = readers(&mut child);
        let mut agent = SshAgent {
            destination: l.destination.clone(),
            listening: String::new(),
            stdin: child.stdin.take(),
            child: Some(child),
            stderr,
            stderr_done: Some(stderr_done),
        };
        match agent.handshake(key, &lines, timeout) {
            Ok(addr) => {
                agent.listening = addr;
                // `lines` drops here: the reader thread goes on draining
                // the agent's stdout so it never blocks on a full pipe.
                Ok(agent)
            }
            Err(mut kind) => {
                agent.stdin = None;
                agent.kill();
                // Whatever the agent wrote, now that ssh is gone.
                if let LaunchErrorKind::Timeout { stderr, .. } = &mut kind {
                    *stderr = agent.stderr();
                }
                Err(err(kind))
            }
        }
    }

    /// The `ADDR:PORT` the agent printed (as it bound it, so possibly
    /// `0.0.0.0:7575`: the console connects to the hosts file's address).
    pub fn listening(&self) -> &str {
        &self.listening
    }

    /// The local ssh process's id.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    /// Closes ssh's stdin (the agent exits at EOF, and ssh with it), waits
    /// up to [`STOP_GRACE`], then kills ssh (its connection's end closes
    /// the agent's stdin too). An error when ssh had to be killed or
    /// exited with a failure.
    pub fn stop(mut self) -> Result<(), LaunchError> {
        self.shutdown().map_err(|kind| LaunchError {
            host: None,
            destination: self.destination.clone(),
            kind,
        })
    }

    fn handshake(
        &mut self,
        key: &[u8],
        lines: &Receiver<String>,
        timeout: Duration,
    ) -> Result<String, LaunchErrorKind> {
        let deadline = Instant::now() + timeout;
        let timed_out = || LaunchErrorKind::Timeout {
            after: timeout,
            stderr: String::new(),
        };
        if let Some(stdin) = self.stdin.as_mut() {
            // A failed write means ssh is already gone (e.g. refused
            // authentication): its exit status and stderr, read below,
            // say why better than EPIPE would.
            let _ = write_no_sigpipe(stdin, &[key, b"\n"].concat());
        }
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(timed_out());
            }
            match lines.recv_timeout(left.min(Duration::from_millis(100))) {
                Ok(line) => {
                    if let Some(addr) = line.trim_end().strip_prefix(LISTENING) {
                        return Ok(addr.trim().to_string());
                    }
                    // Anything else (a login banner, a shell rc's chatter)
                    // is not the agent's line: skip it.
                }
                Err(RecvTimeoutError::Timeout) => {
                    if let Some(status) = self.try_wait()? {
                        // ssh ended; its last stdout line may still be in
                        // flight, so drain what is left before giving up.
                        while let Ok(line) = lines.recv_timeout(Duration::from_millis(100)) {
                            if let Some(addr) = line.trim_end().strip_prefix(LISTENING) {
                                return Ok(addr.trim().to_string());
                            }
                        }
                        return Err(self.exited(status));
                    }
                }
                Err(RecvTimeoutError::Disconnected) => {
                    // stdout closed: ssh is ending. Wait for it (within the
                    // timeout) to report its status.
                    while Instant::now() < deadline {
                        if let Some(status) = self.try_wait()? {
                            return Err(self.exited(status));
                        }
                        std::thread::sleep(Duration::from_millis(20));
                    }
                    return Err(timed_out());
                }
            }
        }
    }

    fn try_wait(&mut self) -> Result<Option<ExitStatus>, LaunchErrorKind> {
        match self.child.as_mut() {
            Some(c) => c
                .try_wait()
                .map_err(|e| LaunchErrorKind::Io(format!("waiting for ssh: {e}"))),
            None => Ok(None),
        }
    }

    /// After ssh ended: its status and the whole of its stderr.
    fn exited(&mut self, status: ExitStatus) -> LaunchErrorKind {
        self.child = None;
        self.wait_stderr();
        LaunchErrorKind::Exited {
            status: describe(status),
            stderr: self.stderr(),
        }
    }

    /// Gives the stderr reader a moment to reach EOF once ssh is gone (a
    /// process that inherited the pipe could hold it open: not forever).
    fn wait_stderr(&mut self) {
        if let Some(h) = self.stderr_done.take() {
            let until = Instant::now() + Duration::from_secs(1);
            while !h.is_finished() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(10));
            }
            if h.is_finished() {
                let _ = h.join();
            }
        }
    }

    /// The last few KiB that ssh and the agent wrote on stderr so far.
    pub fn stderr(&self) -> String {
        let raw = self.stderr.lock().unwrap_or_else(PoisonError::into_inner);
        clean_stderr(&String::from_utf8_lossy(&raw))
    }

    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        self.wait_stderr();
    }

    fn shutdown(&mut self) -> Result<(), LaunchErrorKind> {
        // Dropping the pipe's write end is the EOF the agent waits for.
        self.stdin = None;
        let Some(mut child) = self.child.take() else {
            return Ok(());
        };
        let status = wait_or_kill(&mut child, STOP_GRACE)
            .map_err(|e| LaunchErrorKind::Io(format!("waiting for ssh: {e}")))?;
        self.wait_stderr();
        match status {
            Some(status) if status.success() => Ok(()),
            Some(status) => Err(LaunchErrorKind::Exited {
                status: describe(status),
                stderr: self.stderr(),
            }),
            None => Err(LaunchErrorKind::NotStopped {
                stderr: self.stderr(),
            }),
        }
    }
}

/// Waits up to `grace` for `child` to exit; after that (None), or when it
/// cannot be waited for (the error), it is killed and reaped.
pub(crate) fn wait_or_kill(
    child: &mut Child,
    grace: Duration,
) -> std::io::Result<Option<ExitStatus>> {
    let until = Instant::now() + grace;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Ok(Some(status)),
            Ok(None) if Instant::now() < until => std::thread::sleep(Duration::from_millis(20)),
            r => {
                let _ = child.kill();
                let _ = child.wait();
                return r.map(|_| None);
            }
        }
    }
}

impl Drop for SshAgent {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

/// `w.write_all(buf)` with SIGPIPE blocked in this thread: the iotoll
/// binary restores SIGPIPE's default action (so `| head` ends quietly),
/// under which writing to an ssh that already exited would kill the whole
/// console instead of returning EPIPE. A SIGPIPE the write raised is
/// taken off the thread's pending set before the old mask comes back.
fn write_no_sigpipe(w: &mut impl Write, buf: &[u8]) -> std::io::Result<()> {
    // SAFETY: sigset_t values are initialised by sigemptyset/sigpending
    // before use; the mask is changed for this thread only and restored.
    unsafe {
        let mut pipe: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut pipe);
        libc::sigaddset(&mut pipe, libc::SIGPIPE);
        let mut pending: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut pending);
        libc::sigpending(&mut pending);
        let was_pending = libc::sigismember(&pending, libc::SIGPIPE) == 1;
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::pthread_sigmask(libc::SIG_BLOCK, &pipe, &mut old);
        let r = w.write_all(buf).and_then(|()| w.flush());
        if matches!(&r, Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe) && !was_pending {
            let zero = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            libc::sigtimedwait(&pipe, std::ptr::null_mut(), &zero);
        }
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        r
    }
}

fn check_key(key: &[u8]) -> Result<(), LaunchErrorKind> {
    if key.iter().any(|&b| b == b'\n' || b == b'\r') {
        return Err(LaunchErrorKind::BadKey(
            "it spans lines (the agent reads one line)".into(),
        ));
    }
    if key.trim_ascii().len() < MIN_KEY {
        return Err(LaunchErrorKind::BadKey(format!(
            "{} bytes; the agent needs at least {MIN_KEY}",
            key.trim_ascii().len()
        )));
    }
    Ok(())
}

fn describe(s: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (s.code(), s.signal()) {
        (Some(c), _) => format!("ssh exited with {c}"),
        (None, Some(sig)) => format!("ssh was killed by signal {sig}"),
        _ => format!("ssh ended ({s})"),
    }
}

/// ssh's stderr for a message: one line, without carriage returns and
/// without the notice that `UserKnownHostsFile=/dev/null` causes at
/// every connection (it would hide the real reason).
fn clean_stderr(s: &str) -> String {
    s.lines()
        .map(|l| l.trim_end_matches('\r').trim())
        .filter(|l| !l.is_empty() && !l.starts_with("Warning: Permanently added"))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Threads reading ssh's stdout (lines, to the returned channel, then
/// drained) and stderr (its last [`STDERR_TAIL`] bytes kept); a local
/// agent's too ([`crate::local`]).
pub(crate) fn readers(
    child: &mut Child,
) -> (Receiver<String>, Arc<Mutex<Vec<u8>>>, JoinHandle<()>) {
    let (tx, rx) = mpsc::channel();
    if let Some(out) = child.stdout.take() {
        std::thread::spawn(move || {
            let mut r = BufReader::new(out);
            let mut buf = Vec::new();
            loop {
                buf.clear();
                match r.read_until(b'\n', &mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        // Once start() has its line nobody listens: the
                        // send fails and the line is dropped, as it should.
                        let _ = tx.send(String::from_utf8_lossy(&buf).into_owned());
                    }
                }
            }
        });
    }
    let tail = Arc::new(Mutex::new(Vec::new()));
    let keep = tail.clone();
    let err = child.stderr.take();
    let done = std::thread::spawn(move || {
        let Some(mut err) = err else { return };
        let mut chunk = [0u8; 1024];
        loop {
            match err.read(&mut chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let mut t = keep.lock().unwrap_or_else(PoisonError::into_inner);
                    t.extend_from_slice(&chunk[..n]);
                    if t.len() > STDERR_TAIL {
                        let cut = t.len() - STDERR_TAIL;
                        t.drain(..cut);
                    }
                }
            }
        }
    });
    (rx, tail, done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;
    use std::path::{Path, PathBuf};

    const KEY: &[u8] = b"0123456789abcdef0123456789abcdef";

    #[test]
    fn quoting_leaves_plain_words_and_quotes_the_rest() {
        assert_eq!(shell_quote("/usr/bin/iotoll"), "/usr/bin/iotoll");
        assert_eq!(shell_quote("[::]:7575"), "'[::]:7575'");
        assert_eq!(shell_quote("0.0.0.0:7575"), "0.0.0.0:7575");
        assert_eq!(shell_quote("/dev/nvme0n1:rw"), "/dev/nvme0n1:rw");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote("$(reboot)"), "'$(reboot)'");
        assert_eq!(shell_quote("x;y&z|w`v`"), "'x;y&z|w`v`'");
        assert_eq!(shell_quote("*"), "'*'");
        assert_eq!(shell_quote("~root"), "'~root'");
    }

    /// Every quoted word comes back as itself from a real shell.
    #[test]
    fn quoted_words_survive_sh() {
        let words = [
            "plain",
            "a b",
            "it's",
            "'",
            "''",
            "\"dq\"",
            "$HOME",
            "$(echo no)",
            "back\\slash",
            "tab\there",
            "new\nline",
            "*",
            "~",
            "",
            "ü",
        ];
        let line: Vec<String> = words.iter().map(|w| shell_quote(w).into_owned()).collect();
        let script = format!(
            "for w in {}; do printf '%s\\0' \"$w\"; done",
            line.join(" ")
        );
        let out = Command::new("sh").args(["-c", &script]).output().unwrap();
        assert!(out.status.success());
        let got: Vec<&[u8]> = out.stdout.split(|&b| b == 0).collect();
        let want: Vec<&[u8]> = words
            .iter()
            .map(|w| w.as_bytes())
            .chain([&b""[..]])
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn remote_command_quotes_each_argument_and_expands_only_a_leading_tilde() {
        let mut l = SshLaunch::new("root@198.18.0.3", "[::]:7575");
        l.allow_targets = vec!["/dev/nvme0n1:rw".into(), "/mnt/my data".into()];
        assert_eq!(
            l.remote_command(),
            "iotoll agent --listen '[::]:7575' --auth-key - \
             --allow-target /dev/nvme0n1:rw --allow-target '/mnt/my data'"
        );
        l.agent = "~/bin/io toll".into();
        assert!(l.remote_command().starts_with("~/'bin/io toll' agent "));
        l.agent = "~".into();
        assert!(l.remote_command().starts_with("'~' agent "));
    }

    #[test]
    fn ssh_args_never_prompt_put_extra_first_and_end_options_before_the_command() {
        let mut l = SshLaunch::new("web1", "0.0.0.0:7575");
        l.extra = vec!["-F".into(), "/tmp/cfg".into()];
        let a = l.ssh_args(Duration::from_millis(300));
        assert_eq!(
            a,
            [
                "-o",
                "BatchMode=yes",
                "-T",
                "-F",
                "/tmp/cfg",
                "-o",
                "ConnectTimeout=1",
                "web1",
                "--",
                "iotoll agent --listen 0.0.0.0:7575 --auth-key -"
            ]
        );
        let a = l.ssh_args(Duration::from_secs(12));
        assert!(a.contains(&"ConnectTimeout=12".to_string()));
    }

    /// Under SIGPIPE's default action (as in the iotoll binary), writing
    /// to a pipe nobody reads is an error, not the end of the process.
    #[test]
    fn a_broken_pipe_is_an_error_even_with_sigpipe_at_its_default() {
        let mut fds = [0; 2];
        // SAFETY: pipe fills the two descriptors; the read end is closed
        // at once, the write end is owned by the File.
        let mut w = unsafe {
            assert_eq!(libc::pipe(fds.as_mut_ptr()), 0);
            libc::close(fds[0]);
            <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(fds[1])
        };
        // SAFETY: changes one signal's disposition, restored below (the
        // test harness ignores SIGPIPE, as every Rust program does).
        let prev = unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
        let r = write_no_sigpipe(&mut w, b"key\n");
        // SAFETY: as above.
        unsafe { libc::signal(libc::SIGPIPE, prev) };
        assert_eq!(r.unwrap_err().kind(), std::io::ErrorKind::BrokenPipe);
    }

    #[test]
    fn run_keys_are_64_hex_characters_and_differ() {
        let (a, b) = (run_key().unwrap(), run_key().unwrap());
        assert_eq!(a.len(), 64);
        assert!(a
            .iter()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        assert_ne!(a, b);
        assert!(check_key(&a).is_ok());
    }

    fn start_err(l: &SshLaunch, key: &[u8], t: Duration) -> LaunchError {
        match SshAgent::start(l, key, t) {
            Ok(a) => panic!("started: {a:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn unusable_launches_and_keys_are_refused_before_ssh_runs() {
        let t = Duration::from_secs(1);
        // A program that must never run: each case fails before spawning.
        let mut l = SshLaunch::new("-oProxyCommand=reboot", "0.0.0.0:7575");
        l.ssh = "/nonexistent/ssh".into();
        let e = start_err(&l, KEY, t);
        assert!(e.to_string().contains("starts with '-'"), "{e}");
        l.destination = "a b".into();
        assert!(start_err(&l, KEY, t).to_string().contains("white space"));
        l.destination = String::new();
        assert!(start_err(&l, KEY, t).to_string().contains("empty"));
        l.destination = "web1".into();
        l.listen = String::new();
        assert!(start_err(&l, KEY, t).to_string().contains("listen"));
        l.listen = "0.0.0.0:7575".into();
        let e = start_err(&l, b"short", t).with_host("c1");
        assert_eq!(
            e.to_string(),
            "host c1 (web1): bad key: 5 bytes; the agent needs at least 16"
        );
        let e = start_err(&l, b"0123456789abcdef\nsecond", t);
        assert!(e.to_string().contains("spans lines"), "{e}");
        let e = start_err(&l, KEY, t);
        assert!(matches!(e.kind, LaunchErrorKind::Spawn { .. }), "{e}");
        assert!(
            e.to_string()
                .starts_with("web1: cannot run '/nonexistent/ssh': "),
            "{e}"
        );
    }

    /// A stand-in for ssh: a shell script in a temporary directory.
    struct FakeSsh {
        dir: tempfile::TempDir,
    }

    impl FakeSsh {
        fn new(body: &str) -> FakeSsh {
            let dir = tempfile::tempdir().unwrap();
            let p = dir.path().join("ssh");
            let script = format!("#!/bin/sh\nD='{}'\n{body}\n", dir.path().display());
            std::fs::write(&p, script).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
            FakeSsh { dir }
        }

        fn launch(&self) -> SshLaunch {
            SshLaunch {
                ssh: self.dir.path().join("ssh").to_str().unwrap().into(),
                ..SshLaunch::new("root@198.18.0.3", "0.0.0.0:7575")
            }
        }

        fn file(&self, name: &str) -> PathBuf {
            self.dir.path().join(name)
        }
    }

    fn alive(pid: u32) -> bool {
        // The child is reaped by stop(), so /proc/PID is gone, not a zombie.
        Path::new(&format!("/proc/{pid}")).exists()
    }

    /// Behaves like ssh running the agent: records its arguments and the
    /// key line, says it listens, exits at stdin's EOF.
    const AGENT_LIKE: &str = r#"printf '%s\n' "$@" > "$D/args"
read -r key; printf '%s' "$key" > "$D/key"
echo "Welcome to the banner" 
echo "iotoll agent listening on 0.0.0.0:7575"
cat > /dev/null
echo bye >&2"#;

    #[test]
    fn the_key_goes_on_stdin_the_address_comes_back_and_stop_ends_it() {
        let f = FakeSsh::new(AGENT_LIKE);
        let a = SshAgent::start(&f.launch(), KEY, Duration::from_secs(10)).unwrap();
        assert_eq!(a.listening(), "0.0.0.0:7575");
        assert_eq!(std::fs::read(f.file("key")).unwrap(), KEY);
        let args = std::fs::read_to_string(f.file("args")).unwrap();
        assert!(!args.contains(std::str::from_utf8(KEY).unwrap()), "{args}");
        let want: Vec<String> = f.launch().ssh_args(Duration::from_secs(10));
        assert_eq!(args.lines().collect::<Vec<_>>(), want);
        let pid = a.pid().unwrap();
        let t = Instant::now();
        a.stop().unwrap();
        assert!(t.elapsed() < STOP_GRACE, "{:?}", t.elapsed());
        assert!(!alive(pid));
    }

    #[test]
    fn drop_stops_it_too() {
        let f = FakeSsh::new(AGENT_LIKE);
        let a = SshAgent::start(&f.launch(), KEY, Duration::from_secs(10)).unwrap();
        let pid = a.pid().unwrap();
        drop(a);
        assert!(!alive(pid));
    }

    /// ssh failing (its own refusal, no agent on the remote, an agent
    /// that ends quietly) names the destination, its status and its
    /// stderr, at once.
    #[test]
    fn ssh_ending_before_the_agent_listens_says_why() {
        for (script, want) in [
            (
                "echo \"Warning: Permanently added '198.18.0.3' (ED25519) to the list of known hosts.\r\" >&2\n\
                 echo 'root@198.18.0.3: Permission denied (publickey).' >&2\nexit 255",
                "host c1 (root@198.18.0.3): ssh exited with 255: \
                 root@198.18.0.3: Permission denied (publickey).",
            ),
            (
                "read -r key\necho 'sh: 1: iotoll: not found' >&2\nexit 127",
                "host c1 (root@198.18.0.3): ssh exited with 127: sh: 1: iotoll: not found",
            ),
            (
                "read -r key\nexit 0",
                "host c1 (root@198.18.0.3): ssh exited with 0 before the agent said it was listening (nothing on stderr)",
            ),
        ] {
            let f = FakeSsh::new(script);
            let t = Instant::now();
            let e = start_err(&f.launch(), KEY, Duration::from_secs(10)).with_host("c1");
            assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
            assert_eq!(e.to_string(), want);
        }
    }

    #[test]
    fn silence_times_out_and_ssh_is_killed() {
        let f = FakeSsh::new("echo $$ > \"$D/pid\"\necho 'connecting...' >&2\nexec sleep 30");
        let t = Instant::now();
        let e = start_err(&f.launch(), KEY, Duration::from_millis(500));
        assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
        assert!(matches!(e.kind, LaunchErrorKind::Timeout { .. }), "{e}");
        assert_eq!(
            e.to_string(),
            "root@198.18.0.3: no 'iotoll agent listening on' line within 500ms; \
             ssh's stderr: connecting..."
        );
        let pid: u32 = std::fs::read_to_string(f.file("pid"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(!alive(pid));
    }

    #[test]
    fn an_agent_deaf_to_eof_is_killed_after_the_grace() {
        let f = FakeSsh::new(
            "read -r key\necho 'iotoll agent listening on 127.0.0.1:1'\nexec sleep 30 </dev/null",
        );
        let a = SshAgent::start(&f.launch(), KEY, Duration::from_secs(10)).unwrap();
        let pid = a.pid().unwrap();
        let t = Instant::now();
        let e = a.stop().unwrap_err();
        assert!(t.elapsed() >= STOP_GRACE && t.elapsed() < STOP_GRACE * 2);
        assert!(matches!(e.kind, LaunchErrorKind::NotStopped { .. }), "{e}");
        assert!(!alive(pid));
    }

    #[test]
    fn a_failing_exit_at_stop_is_reported() {
        let f = FakeSsh::new(
            "read -r key\necho 'iotoll agent listening on 127.0.0.1:1'\ncat >/dev/null\necho 'agent: disk gone' >&2\nexit 1",
        );
        let a = SshAgent::start(&f.launch(), KEY, Duration::from_secs(10)).unwrap();
        let e = a.stop().unwrap_err();
        assert_eq!(
            e.to_string(),
            "root@198.18.0.3: ssh exited with 1: agent: disk gone"
        );
    }
}
