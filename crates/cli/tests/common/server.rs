//! A real `iotoll net serve` child on a free loopback port.

use serde_json::Value;
use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A control frame: its length (4 bytes, big-endian), then `json`.
pub fn frame(json: &str) -> Vec<u8> {
    let mut v = (json.len() as u32).to_be_bytes().to_vec();
    v.extend_from_slice(json.as_bytes());
    v
}

/// Reads one control frame, waiting `t` at most.
pub fn read_frame(s: &mut TcpStream, t: Duration) -> std::io::Result<Value> {
    s.set_read_timeout(Some(t))?;
    let mut len = [0u8; 4];
    s.read_exact(&mut len)?;
    let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
    s.read_exact(&mut body)?;
    serde_json::from_slice(&body).map_err(|e| std::io::Error::new(ErrorKind::InvalidData, e))
}

pub fn write_frame(s: &mut TcpStream, v: &Value) {
    s.write_all(&frame(&v.to_string())).expect("write a frame");
}

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
