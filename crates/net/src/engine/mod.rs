//! The data engine: a small fixed pool of threads, each driving its share
//! of the connections. A thread with several connections runs an epoll
//! loop (mio, edge-triggered); a thread with exactly one uses plain blocking
//! calls, which saves the epoll_wait per operation. Buffers belong to the
//! thread and are reused; nothing is allocated per send or receive.

mod conn;
#[cfg(test)]
pub(crate) mod tests;
mod thread;

use crate::proto::ByteStats;
use crate::tls::TlsConn;
use hdrhistogram::Histogram;
use iotoll_run::{new_histogram, Live, PhaseCell};
use std::io::{self, Read, Write};
use std::os::fd::{IntoRawFd, OwnedFd};
use std::os::unix::io::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use thread::{run_thread, ThreadOut};

/// What a connection does on this end.
/// The discriminant is the role's code in a data connection's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Role {
    /// Writes `msg`-sized messages as fast as the socket takes them.
    Send = 0,
    /// Reads and discards.
    Recv = 1,
    /// Sends requests of `req` bytes, `burst` outstanding, times responses.
    RrClient = 2,
    /// Answers every `req` bytes received with `resp` bytes.
    RrServer = 3,
}

impl Role {
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The role the peer plays opposite this one.
    pub fn opposite(self) -> Role {
        match self {
            Role::Send => Role::Recv,
            Role::Recv => Role::Send,
            Role::RrClient => Role::RrServer,
            Role::RrServer => Role::RrClient,
        }
    }

    pub fn from_code(c: u8) -> Option<Role> {
        [Role::Send, Role::Recv, Role::RrClient, Role::RrServer]
            .into_iter()
            .find(|r| r.code() == c)
    }
}

#[derive(Debug, Clone, Copy)]
pub struct EngineParams {
    pub msg: usize,
    pub req: u64,
    pub resp: u64,
    pub burst: u32,
    /// Receivers check every byte against the senders' pattern.
    pub verify: bool,
}

/// A data connection as the engine drives it: the socket, or TLS records
/// over it.
pub enum DataConn {
    Plain(std::net::TcpStream),
    Tls(Box<TlsConn>),
}

impl DataConn {
    pub fn tcp(&self) -> &std::net::TcpStream {
        match self {
            DataConn::Plain(s) => s,
            DataConn::Tls(t) => t.tcp(),
        }
    }
}

impl From<std::net::TcpStream> for DataConn {
    fn from(s: std::net::TcpStream) -> Self {
        DataConn::Plain(s)
    }
}

impl Read for DataConn {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            DataConn::Plain(s) => s.read(buf),
            DataConn::Tls(t) => t.read(buf),
        }
    }
}

impl Write for DataConn {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            DataConn::Plain(s) => s.write(buf),
            DataConn::Tls(t) => t.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            DataConn::Plain(s) => s.flush(),
            DataConn::Tls(t) => t.flush(),
        }
    }
}

impl AsRawFd for DataConn {
    fn as_raw_fd(&self) -> RawFd {
        self.tcp().as_raw_fd()
    }
}

impl IntoRawFd for DataConn {
    fn into_raw_fd(self) -> RawFd {
        match self {
            DataConn::Plain(s) => s.into_raw_fd(),
            DataConn::Tls(t) => t.into_raw_fd(),
        }
    }
}

/// Payload counted inside the window, per connection.
#[derive(Debug, Clone, Copy, Default)]
pub struct ConnCount {
    pub rx: u64,
    pub tx: u64,
}

pub struct EngineOut {
    /// In the order the connections were given.
    pub per_conn: Vec<(Role, ConnCount)>,
    pub transactions: u64,
    /// Transaction round trips in the window, ns.
    pub rtt: Histogram<u64>,
    /// Retransmitted segments of sending sockets during the window.
    pub retransmits: u64,
    /// Mean smoothed RTT of sending sockets at the end, us.
    pub srtt_us: Option<f64>,
    /// Connections that failed before the window closed (in the ramp-up or
    /// inside the window; a connection lost in the ramp-up is missing from
    /// the window), each counted once, including every connection of an
    /// engine thread that panicked.
    pub errors: u64,
    /// The first failure; an engine thread panic is preferred over any other.
    pub first_error: Option<String>,
    /// An engine thread panicked: which one and its message.
    pub panic: Option<String>,
    /// The sockets, still open: the caller closes them once the other end
    /// has closed its window, so no end sees a close inside its window.
    pub sockets: Vec<OwnedFd>,
}

impl EngineOut {
    /// What this end's receivers counted in the window.
    pub fn rx_stats(&self) -> ByteStats {
        let recv = self.per_conn.iter().filter(|(r, _)| *r == Role::Recv);
        ByteStats::from_counts(recv.map(|(_, c)| c.rx))
    }

    /// What this end's connections wrote in the window, bytes.
    pub fn tx_bytes(&self) -> u64 {
        self.per_conn.iter().map(|(_, c)| c.tx).sum()
    }
}

pub struct Engine {
    threads: Vec<(String, std::thread::JoinHandle<ThreadOut>)>,
    live: Arc<Vec<Live>>,
    /// Each connection, in the order given: (thread, index in its share).
    order: Vec<(usize, usize)>,
    /// The stream senders' sockets, open until `join` (the threads keep
    /// every socket until then), with the bytes their peers acknowledged,
    /// and the stream receivers' sockets with the bytes they received, as
    /// last read: a socket whose TCP_INFO cannot be read keeps its count,
    /// and the running total never steps back.
    senders: Vec<(RawFd, AtomicU64)>,
    receivers: Vec<(RawFd, AtomicU64)>,
}

impl Engine {
    /// Starts `threads` threads over `conns` (blocking std sockets, already
    /// set up). The engine runs until `phase` is `Stop`.
    pub fn start(
        conns: Vec<(DataConn, Role)>,
        p: EngineParams,
        phase: Arc<PhaseCell>,
        threads: usize,
    ) -> io::Result<Engine> {
        Self::start_with(conns, p, phase, threads, injected_panic())
    }

    /// `start`, with thread 0 panicking when the window opens if `inject`.
    fn start_with(
        conns: Vec<(DataConn, Role)>,
        p: EngineParams,
        phase: Arc<PhaseCell>,
        threads: usize,
        inject: bool,
    ) -> io::Result<Engine> {
        let n = conns.len();
        let fds = |role: Role| -> Vec<(RawFd, AtomicU64)> {
            (conns.iter())
                .filter(|(_, r)| *r == role)
                .map(|(c, _)| (c.as_raw_fd(), AtomicU64::new(0)))
                .collect()
        };
        let (senders, receivers) = (fds(Role::Send), fds(Role::Recv));
        let threads = threads.clamp(1, n.max(1));
        let mut shares: Vec<Vec<(DataConn, Role)>> = (0..threads).map(|_| Vec::new()).collect();
        let mut order = Vec::with_capacity(n);
        for (i, c) in conns.into_iter().enumerate() {
            let t = i % threads;
            order.push((t, shares[t].len()));
            shares[t].push(c);
        }
        let live: Arc<Vec<Live>> = Arc::new((0..threads).map(|_| Live::default()).collect());
        let mut handles = Vec::with_capacity(threads);
        let (ready, set_up) = std::sync::mpsc::channel::<()>();
        for (t, share) in shares.into_iter().enumerate() {
            let (phase, live, ready) = (phase.clone(), live.clone(), ready.clone());
            let name = format!("iotoll-net-{t}");
            let h = std::thread::Builder::new()
                .name(name.clone())
                .spawn(move || run_thread(share, p, &phase, &live[t], inject && t == 0, ready))?;
            handles.push((name, h));
        }
        // Returns once every thread has its buffers (megabytes to fill for
        // large messages), so the ramp-up is not spent setting up: each
        // thread drops its sender when set up (or when it dies).
        drop(ready);
        let _ = set_up.recv();
        Ok(Engine {
            threads: handles,
            live,
            order,
            senders,
            receivers,
        })
    }

    /// Running totals (operations, bytes) for the one-second series: the
    /// bytes that reached the receiving end's TCP — received here, and sent
    /// from here once the peer acknowledged them — from the kernel's own
    /// per-socket counters (TCP_INFO), read at the instant of the sample.
    /// Goodput counts what the receiving end read in its window. Counting
    /// what senders wrote ran ahead of it by what socket buffers and a
    /// shaper's queue took; counting what threads published lagged behind
    /// when a busy CPU kept a thread from publishing for a second, and then
    /// ran above the link's rate (15 Gbit/s on a 10 Gbit/s link with 1,000
    /// connections). The kernel's counters are neither. One getsockopt per
    /// stream socket, once a second.
    pub fn totals(&self) -> (u64, u64) {
        let (ops, received) = self.received();
        let acked = kernel_bytes(&self.senders, |(acked, _)| acked);
        (ops, received + acked)
    }

    /// Running totals (operations, bytes received), the bytes counted as
    /// they reach this end's TCP: what a multi-host test adds up over its
    /// hosts, every byte being received by one of them.
    pub fn received(&self) -> (u64, u64) {
        // Live bytes: request/response traffic, as the threads count it.
        let (ops, rr) = Live::totals(&self.live);
        let got = kernel_bytes(&self.receivers, |(_, got)| got);
        (ops, rr + got)
    }

    /// Waits for the threads (after `phase` was set to `Stop`).
    pub fn join(self) -> EngineOut {
        let mut panic = None;
        let outs: Vec<Option<ThreadOut>> = self
            .threads
            .into_iter()
            .map(|(name, h)| {
                h.join()
                    .map_err(|p| {
                        panic.get_or_insert_with(|| {
                            format!("engine thread {name} panicked: {}", panic_message(&*p))
                        });
                    })
                    .ok()
            })
            .collect();
        // A panicked thread's connections are all lost (its sockets closed
        // as it unwound): each one counts as failed.
        let lost = self
            .order
            .iter()
            .filter(|(t, _)| outs[*t].is_none())
            .count() as u64;
        let per_conn = self.order.iter().map(|&(t, i)| {
            let f = outs[t].as_ref().and_then(|o| o.conns.get(i));
            f.map_or((Role::Recv, ConnCount::default()), |f| (f.role, f.count))
        });
        let mut out = EngineOut {
            per_conn: per_conn.collect(),
            transactions: 0,
            rtt: new_histogram(),
            retransmits: 0,
            srtt_us: None,
            errors: lost,
            first_error: None,
            panic: None,
            sockets: Vec::with_capacity(self.order.len()),
        };
        let (mut srtt_sum, mut srtt_n) = (0.0, 0u64);
        for o in outs.into_iter().flatten() {
            out.transactions += o.transactions;
            let _ = out.rtt.add(&o.rtt);
            out.errors += o.errors;
            out.first_error = out.first_error.or(o.first_error);
            for f in o.conns {
                out.sockets.push(f.socket);
                if let Some((retr, rtt)) = f.tcp {
                    out.retransmits += retr;
                    srtt_sum += rtt as f64;
                    srtt_n += 1;
                }
            }
        }
        if let Some(p) = panic {
            out.first_error = Some(p.clone());
            out.panic = Some(p);
        }
        out.srtt_us = (srtt_n > 0).then(|| srtt_sum / srtt_n as f64);
        out
    }
}

/// The text of a panic payload (`panic!` with a literal or a format).
fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}

/// The sum over `fds` of one of the kernel's byte counters (`pick` of
/// `sock::tcp_bytes`), each socket's last reading kept with it.
fn kernel_bytes(fds: &[(RawFd, AtomicU64)], pick: fn((u64, u64)) -> u64) -> u64 {
    (fds.iter())
        .map(|(fd, l)| {
            if let Some(b) = crate::sock::tcp_bytes(*fd) {
                l.fetch_max(pick(b), Ordering::Relaxed);
            }
            l.load(Ordering::Relaxed)
        })
        .sum()
}

/// Test-only fault injection, in builds with the `test-hooks` feature
/// (the test suite's; never a release): with
/// `IOTOLL_INJECT_FAULT=net-engine-panic` in its environment, the first
/// engine thread of this process panics when the window opens. It exists
/// so tests can check that a panic ends the run as failed (exit 1, stored
/// as failed); nothing else reads it.
pub const FAULT_ENV: &str = "IOTOLL_INJECT_FAULT";
pub const FAULT_NET_PANIC: &str = "net-engine-panic";

fn injected_panic() -> bool {
    cfg!(feature = "test-hooks")
        && std::env::var_os(FAULT_ENV).is_some_and(|v| v == FAULT_NET_PANIC)
}
