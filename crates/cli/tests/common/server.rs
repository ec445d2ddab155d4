//! A real `iotoll net serve` child on a free loopback port.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub struct Server {
    pub child: Child,
    pub addr: String,
    pub log: Arc<Mutex<Vec<String>>>,
}

pub fn free_port(host: &str) -> u16 {
    std::net::TcpListener::bind((host, 0))
        .expect("bind a free port")
        .local_addr()
        .unwrap()
        .port()
}

impl Server {
    /// Starts an endpoint on `host` with extra flags; waits until it listens.
    pub fn start(host: &str, extra: &[&str]) -> Server {
        let port = free_port(host);
        let addr = if host.contains(':') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        };
        // A short handshake deadline unless the test sets its own.
        let handshake: &[&str] = if extra.contains(&"--handshake-timeout") {
            &[]
        } else {
            &["--handshake-timeout", "1s"]
        };
        let mut child = Command::new(super::bin_path())
            .args(["net", "serve", "--listen", &addr])
            .args(handshake)
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start server");
        let log = Arc::new(Mutex::new(Vec::new()));
        let stderr = child.stderr.take().unwrap();
        let l2 = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                l2.lock().unwrap().push(line);
            }
        });
        let s = Server { child, addr, log };
        s.wait_log("listening", Duration::from_secs(10));
        s
    }

    pub fn wait_log(&self, needle: &str, t: Duration) -> bool {
        super::within(t, || self.log_count(needle) > 0)
    }

    /// Waits (20 s at most) until the endpoint has logged `needle` `n` times.
    pub fn wait_count(&self, needle: &str, n: usize) -> bool {
        super::within(Duration::from_secs(20), || self.log_count(needle) >= n)
    }

    pub fn log_count(&self, needle: &str) -> usize {
        self.log
            .lock()
            .unwrap()
            .iter()
            .filter(|l| l.contains(needle))
            .count()
    }

    pub fn open_fds(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.child.id()))
            .map(|d| d.count())
            .unwrap_or(0)
    }

    /// The endpoint's open descriptors once they are at most `bound` (they
    /// close as the endpoint sees our ends close), or after `t`.
    pub fn fds_at_most(&self, bound: usize, t: Duration) -> usize {
        let mut n = 0;
        super::within(t, || {
            n = self.open_fds();
            n <= bound
        });
        n
    }

    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
