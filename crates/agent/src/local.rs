//! Agents the console starts itself on this machine: one `iotoll agent`
//! process per lab host, inside that host's network namespace, with the
//! run's key on its stdin. Each is its own process, as on real hosts: its
//! CPU is accounted like another process's, and killing it is a lost host.

use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

/// What an agent prints once it listens.
pub const LISTENING: &str = "iotoll agent listening on ";

pub struct LocalAgent {
    child: Child,
    /// Kept open: the agent exits when it closes.
    stdin: Option<ChildStdin>,
    pub address: SocketAddr,
}

impl LocalAgent {
    /// Starts `exe agent --listen LISTEN --auth-key -` in the network
    /// namespace at `netns` (None: this one) and waits for it to listen.
    pub fn spawn(
        exe: &Path,
        netns: Option<&Path>,
        listen: SocketAddr,
        key: &[u8],
        allow: &[String],
        timeout: Duration,
    ) -> Result<LocalAgent, String> {
        let open = |p: &Path| {
            std::fs::File::open(p).map_err(|e| format!("network namespace {}: {e}", p.display()))
        };
        let ns = netns.map(open).transpose()?;
        let mut cmd = Command::new(exe);
        cmd.args(["agent", "--listen", &listen.to_string(), "--auth-key", "-"]);
        for a in allow {
            cmd.arg("--allow-target").arg(a);
        }
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(f) = ns {
            // SAFETY: between fork and exec only async-signal-safe calls:
            // setns(2) on a descriptor opened before the fork (nix's
            // wrapper neither allocates nor locks).
            unsafe {
                std::os::unix::process::CommandExt::pre_exec(&mut cmd, move || {
                    nix::sched::setns(&f, nix::sched::CloneFlags::CLONE_NEWNET)
                        .map_err(std::io::Error::from)
                });
            }
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
        let mut stdin = child.stdin.take();
        if let Some(s) = stdin.as_mut() {
            let mut line = key.to_vec();
            line.push(b'\n');
            if let Err(e) = s.write_all(&line).and_then(|_| s.flush()) {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("agent's stdin: {e}"));
            }
        }
        let said = tail(&mut child);
        let address = match wait_listening(&mut child, timeout) {
            Ok(a) => a,
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                std::thread::sleep(Duration::from_millis(50));
                let said = said
                    .lock()
                    .map(|s| s.trim().to_string())
                    .unwrap_or_default();
                return Err(if said.is_empty() {
                    e
                } else {
                    format!("{e}: {said}")
                });
            }
        };
        Ok(LocalAgent {
            child,
            stdin,
            address,
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Closes its stdin (it stops serving), waits up to 2 s, then kills it.
    pub fn stop(&mut self) {
        drop(self.stdin.take());
        let end = Instant::now() + Duration::from_secs(2);
        while Instant::now() < end {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for LocalAgent {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The last few KiB the agent wrote on stderr (its log), collected as it
/// goes so the pipe never fills.
fn tail(child: &mut Child) -> std::sync::Arc<std::sync::Mutex<String>> {
    let buf = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    if let Some(err) = child.stderr.take() {
        let b = buf.clone();
        std::thread::spawn(move || {
            let mut r = BufReader::new(err);
            let mut line = String::new();
            while r.read_line(&mut line).is_ok_and(|n| n > 0) {
                if let Ok(mut s) = b.lock() {
                    s.push_str(&line);
                    if s.len() > 4096 {
                        let cut = s.len() - 4096;
                        let cut = (cut..s.len()).find(|&i| s.is_char_boundary(i)).unwrap_or(0);
                        s.drain(..cut);
                    }
                }
                line.clear();
            }
        });
    }
    buf
}

/// Reads the agent's stdout until it says where it listens.
pub fn wait_listening(child: &mut Child, timeout: Duration) -> Result<SocketAddr, String> {
    let Some(out) = child.stdout.take() else {
        return Err("agent has no stdout".into());
    };
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut r = BufReader::new(out);
        let mut line = String::new();
        let got = r.read_line(&mut line).map(|_| line);
        let _ = tx.send(got);
        // Drain the rest, so the agent never blocks on a full pipe.
        let mut sink = String::new();
        while r.read_line(&mut sink).is_ok_and(|n| n > 0) {
            sink.clear();
        }
    });
    match rx.recv_timeout(timeout) {
        Ok(Ok(line)) => {
            let line = line.trim();
            let Some(a) = line.strip_prefix(LISTENING) else {
                return Err(match child.try_wait() {
                    Ok(Some(st)) => format!("agent exited ({st}) before listening"),
                    _ => format!("agent said '{line}' instead of where it listens"),
                });
            };
            a.parse().map_err(|e| format!("agent's address '{a}': {e}"))
        }
        Ok(Err(e)) => Err(format!("agent's stdout: {e}")),
        Err(_) => Err(format!(
            "agent did not listen within {} s",
            timeout.as_secs()
        )),
    }
}
