//! Agents the console starts itself on this machine: one `iotoll agent`
//! process per lab host, inside that host's network namespace, with the
//! run's key on its stdin. Each is its own process, as on real hosts: its
//! CPU is accounted like another process's, and killing it is a lost host.

use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::PoisonError;
use std::time::Duration;

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
    /// namespace at `netns` (None: this one), held to `cpus` (affinity,
    /// and the host's cgroup when it has one), and waits for it to listen.
    pub fn spawn(
        exe: &Path,
        netns: Option<&Path>,
        cpus: Option<(&[u32], Option<&Path>)>,
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
        cmd.args(crate::agent_args(&listen.to_string(), "-", allow));
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let set = cpus.map(|(c, _)| cpu_set(c)).transpose()?;
        if let Some((c, _)) = cpus {
            // Its CPU windows measure the host's own CPUs.
            cmd.env(
                iotoll_probe::HOST_CPUS_ENV,
                iotoll_probe::affinity::format_cpu_list(c),
            );
        }
        if ns.is_some() || set.is_some() {
            // SAFETY: between fork and exec only async-signal-safe calls:
            // setns(2) on a descriptor opened before the fork and
            // sched_setaffinity(2) of a set built before it (nix's
            // wrappers neither allocate nor lock).
            unsafe {
                std::os::unix::process::CommandExt::pre_exec(&mut cmd, move || {
                    if let Some(f) = &ns {
                        nix::sched::setns(f, nix::sched::CloneFlags::CLONE_NEWNET)?;
                    }
                    if let Some(s) = &set {
                        nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), s)?;
                    }
                    Ok(())
                });
            }
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
        if let Some((_, Some(dir))) = cpus {
            let p = dir.join("cgroup.procs");
            if let Err(e) = std::fs::write(&p, child.id().to_string()) {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("agent into {}: {e}", p.display()));
            }
        }
        let mut stdin = child.stdin.take();
        if let Some(s) = stdin.as_mut() {
            if let Err(e) = s.write_all(&[key, b"\n"].concat()).and_then(|_| s.flush()) {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("agent's stdin: {e}"));
            }
        }
        // stdout's lines to `lines` (then drained, so the agent never
        // blocks on a full pipe), stderr's last few KiB (its log) kept.
        let (lines, said, _) = crate::ssh::readers(&mut child);
        let address = match wait_listening(&lines, &mut child, timeout) {
            Ok(a) => a,
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                std::thread::sleep(Duration::from_millis(50));
                let said = said.lock().unwrap_or_else(PoisonError::into_inner);
                let said = String::from_utf8_lossy(&said);
                return Err(match said.trim() {
                    "" => e,
                    said => format!("{e}: {said}"),
                });
            }
        };
        Ok(LocalAgent {
            child,
            stdin,
            address,
        })
    }

    /// Closes its stdin (it stops serving), waits up to 2 s, then kills it.
    pub fn stop(&mut self) {
        drop(self.stdin.take());
        let _ = crate::ssh::wait_or_kill(&mut self.child, Duration::from_secs(2));
    }
}

impl Drop for LocalAgent {
    fn drop(&mut self) {
        self.stop();
    }
}

fn cpu_set(cpus: &[u32]) -> Result<nix::sched::CpuSet, String> {
    let mut s = nix::sched::CpuSet::new();
    for c in cpus {
        s.set(*c as usize).map_err(|e| format!("CPU {c}: {e}"))?;
    }
    Ok(s)
}

/// Waits for the agent's first line on stdout, which says where it listens.
fn wait_listening(
    lines: &Receiver<String>,
    child: &mut Child,
    timeout: Duration,
) -> Result<SocketAddr, String> {
    let line = match lines.recv_timeout(timeout) {
        Ok(line) => line,
        // stdout closed without a line.
        Err(RecvTimeoutError::Disconnected) => String::new(),
        Err(RecvTimeoutError::Timeout) => {
            return Err(format!(
                "agent did not listen within {} s",
                timeout.as_secs()
            ))
        }
    };
    let line = line.trim();
    let Some(a) = line.strip_prefix(LISTENING) else {
        return Err(match child.try_wait() {
            Ok(Some(st)) => format!("agent exited ({st}) before listening"),
            _ => format!("agent said '{line}' instead of where it listens"),
        });
    };
    a.parse().map_err(|e| format!("agent's address '{a}': {e}"))
}
