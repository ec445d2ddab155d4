//! The data engine: a small fixed pool of threads, each driving its share
//! of the connections. A thread with several connections runs an epoll
//! loop (mio, edge-triggered); a thread with exactly one uses plain blocking
//! calls, which saves the epoll_wait per operation. Buffers belong to the
//! thread and are reused; nothing is allocated per send or receive.

use crate::proto::ByteStats;
use crate::sock;
use crate::tls::TlsConn;
use hdrhistogram::Histogram;
use iotoll_run::{new_histogram, Live, Phase, PhaseCell};
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};
use std::collections::VecDeque;
use std::io::{self, ErrorKind, Read, Write};
use std::os::fd::{FromRawFd, IntoRawFd, OwnedFd};
use std::os::unix::io::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

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
    /// every socket until then), for the bytes their peers acknowledged.
    senders: Vec<RawFd>,
    /// The stream receivers' sockets, for the bytes they received.
    receivers: Vec<RawFd>,
    /// Each sender's bytes acknowledged and each receiver's bytes received
    /// as last read, so that a socket whose TCP_INFO cannot be read keeps
    /// its count and the running total never steps back.
    acked: Vec<AtomicU64>,
    got: Vec<AtomicU64>,
}

struct ThreadOut {
    conns: Vec<Finished>,
    transactions: u64,
    rtt: Histogram<u64>,
    errors: u64,
    first_error: Option<String>,
}

struct Conn<S> {
    sock: S,
    fd: RawFd,
    role: Role,
    /// Send: bytes of the current message already written.
    partial: usize,
    /// RR: bytes owed to the peer.
    owed: u64,
    /// RR: bytes of the current request/response already received.
    rx_partial: u64,
    /// RrClient: when each outstanding request was issued.
    sent_at: VecDeque<Instant>,
    /// Recv: payload received since the connection opened (where the
    /// stream is in the sender's messages).
    rx_seen: u64,
    count: ConnCount,
    retrans_base: Option<u32>,
    open: bool,
    /// Waiting for another turn (see [`Turn::More`]).
    queued: bool,
}

enum ReadOutcome {
    Progress,
    Nothing,
    Eof,
}

/// How a connection's turn ([`Conn::drive`]) ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Turn {
    Closed,
    /// Its socket would block: the next event brings it back.
    Blocked,
    /// It used its whole turn with work left: edge-triggered epoll will not
    /// report it again, so it is driven again without waiting.
    More,
}

/// Rounds of a connection's turn (each a write and a read attempt).
const TURN_OPS: u32 = 16;

struct ThreadState<'a> {
    p: EngineParams,
    phase: &'a PhaseCell,
    /// Test-only fault: panic when the window opens (see `FAULT_ENV`).
    inject_panic: bool,
    transactions: u64,
    rtt: Histogram<u64>,
    ops_total: u64,
    bytes_total: u64,
    errors: u64,
    first_error: Option<String>,
    /// With `verify`: one period of the senders' payload pattern.
    pattern: Vec<u8>,
}

impl<'a> ThreadState<'a> {
    fn publish(&self, live: &Live) {
        live.publish(self.ops_total, self.bytes_total);
    }

    fn new(p: EngineParams, phase: &'a PhaseCell, inject_panic: bool) -> Self {
        let mut pattern = vec![0; if p.verify { PATTERN_LEN } else { 0 }];
        fill_payload(&mut pattern);
        ThreadState {
            pattern,
            p,
            phase,
            inject_panic,
            transactions: 0,
            rtt: new_histogram(),
            ops_total: 0,
            bytes_total: 0,
            errors: 0,
            first_error: None,
        }
    }
}

impl<S: Read + Write + AsRawFd> Conn<S> {
    fn new(sock: S, role: Role, p: &EngineParams) -> Self {
        let mut c = Conn {
            fd: sock.as_raw_fd(),
            sock,
            role,
            partial: 0,
            owed: 0,
            rx_partial: 0,
            sent_at: VecDeque::with_capacity(p.burst as usize),
            rx_seen: 0,
            count: ConnCount::default(),
            retrans_base: None,
            open: true,
            queued: false,
        };
        if role == Role::RrClient {
            let now = Instant::now();
            c.owed = p.req * p.burst as u64;
            c.sent_at.extend(std::iter::repeat_n(now, p.burst as usize));
        }
        c
    }

    fn sends(&self) -> bool {
        self.role != Role::Recv
    }

    /// One write attempt; true if bytes went out.
    fn try_write(&mut self, st: &mut ThreadState, sbuf: &[u8], phase: Phase) -> io::Result<bool> {
        // A sender's stream is whole messages, each the buffer's first
        // `msg` bytes, so a receiver can check it (`verify`).
        let (from, want) = match self.role {
            Role::Send => (self.partial, st.p.msg - self.partial),
            Role::RrClient | Role::RrServer => (0, self.owed.min(sbuf.len() as u64) as usize),
            Role::Recv => (0, 0),
        };
        // The buffer is sized for the thread's roles (`send_len`); never
        // index past it whatever the parameters are.
        let want = want.min(sbuf.len().saturating_sub(from));
        if want == 0 {
            return Ok(false);
        }
        match self.sock.write(&sbuf[from..from + want]) {
            Ok(n) => {
                match self.role {
                    Role::Send => self.partial = (self.partial + n) % st.p.msg,
                    _ => self.owed -= n as u64,
                }
                if phase == Phase::Measure {
                    self.count.tx += n as u64;
                }
                // A stream's bytes count for the series from the kernel's
                // counters (`Engine::totals`); request/response bytes here.
                if self.role != Role::Send {
                    st.bytes_total += n as u64;
                }
                Ok(n > 0)
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => Ok(false),
            Err(e) if e.kind() == ErrorKind::Interrupted => Ok(true),
            Err(e) => Err(e),
        }
    }

    /// One read attempt.
    fn try_read(
        &mut self,
        st: &mut ThreadState,
        buf: &mut [u8],
        phase: Phase,
    ) -> io::Result<ReadOutcome> {
        let max = match self.role {
            Role::Recv | Role::RrServer => buf.len(),
            Role::RrClient => {
                let expected = self.sent_at.len() as u64 * st.p.resp - self.rx_partial;
                expected.min(buf.len() as u64) as usize
            }
            Role::Send => 0,
        };
        if max == 0 {
            return Ok(ReadOutcome::Nothing);
        }
        let n = match self.sock.read(&mut buf[..max]) {
            Ok(0) => return Ok(ReadOutcome::Eof),
            Ok(n) => n as u64,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return Ok(ReadOutcome::Nothing)
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => return Ok(ReadOutcome::Progress),
            Err(e) => return Err(e),
        };
        if self.role == Role::Recv && st.p.verify {
            self.check_pattern(st, &buf[..n as usize])?;
        }
        let measuring = phase == Phase::Measure;
        if measuring {
            self.count.rx += n;
        }
        if self.role != Role::Recv {
            st.bytes_total += n;
        }
        match self.role {
            Role::RrClient => {
                self.rx_partial += n;
                let now = Instant::now();
                while self.rx_partial >= st.p.resp && !self.sent_at.is_empty() {
                    self.rx_partial -= st.p.resp;
                    let sent = self.sent_at.pop_front().unwrap_or(now);
                    st.ops_total += 1;
                    if measuring {
                        st.transactions += 1;
                        st.rtt
                            .saturating_record(now.duration_since(sent).as_nanos().max(1) as u64);
                    }
                    if phase != Phase::Stop {
                        self.owed += st.p.req;
                        self.sent_at.push_back(now);
                    }
                }
            }
            Role::RrServer => {
                self.rx_partial += n;
                while self.rx_partial >= st.p.req {
                    self.rx_partial -= st.p.req;
                    self.owed += st.p.resp;
                    st.ops_total += 1;
                    if measuring {
                        st.transactions += 1;
                    }
                }
            }
            _ => {}
        }
        Ok(ReadOutcome::Progress)
    }

    /// Compares received payload with the sender's messages (see
    /// `try_write`): a difference fails the connection, naming the byte.
    fn check_pattern(&mut self, st: &ThreadState, got: &[u8]) -> io::Result<()> {
        let msg = st.p.msg as u64;
        let mut done = 0;
        while done < got.len() {
            let at = (self.rx_seen + done as u64) % msg;
            let p = (at % PATTERN_LEN as u64) as usize;
            let k = (got.len() - done)
                .min((msg - at) as usize)
                .min(PATTERN_LEN - p);
            let want = &st.pattern[p..p + k];
            if let Some(i) = got[done..done + k]
                .iter()
                .zip(want)
                .position(|(a, b)| a != b)
            {
                let byte = self.rx_seen + (done + i) as u64;
                return Err(io::Error::new(
                    ErrorKind::InvalidData,
                    format!("payload differs from the sender's pattern at byte {byte} of the connection (--verify)"),
                ));
            }
            done += k;
        }
        self.rx_seen += got.len() as u64;
        Ok(())
    }

    /// Writes and reads until neither makes progress (what edge-triggered
    /// readiness requires), or for [`TURN_OPS`] rounds at most, so that a
    /// connection whose socket never fills (a TLS sender slower than its
    /// receiver) cannot starve the others of its thread.
    fn drive(&mut self, st: &mut ThreadState, buf: &mut [u8], sbuf: &[u8]) -> Turn {
        for _ in 0..TURN_OPS {
            let phase = st.phase.get();
            let res = self
                .try_write(st, sbuf, phase)
                .and_then(|w| Ok((w, self.try_read(st, buf, phase)?)));
            match res {
                Ok((_, ReadOutcome::Eof)) => {
                    self.close(st, phase, None);
                    return Turn::Closed;
                }
                Ok((false, ReadOutcome::Nothing)) => return Turn::Blocked,
                Ok(_) => {}
                Err(e) => {
                    self.close(st, phase, Some(e));
                    return Turn::Closed;
                }
            }
        }
        Turn::More
    }

    fn close(&mut self, st: &mut ThreadState, phase: Phase, err: Option<io::Error>) -> bool {
        let what = err.map(|e| e.to_string());
        self.fail(st, phase, || {
            what.unwrap_or_else(|| "peer closed the connection".into())
        })
    }

    /// Ends the connection; before the window closes that is a failure,
    /// counted once. Peers closing after the window are the normal end of
    /// a test; a connection lost in the ramp-up is missing from the window.
    fn fail(&mut self, st: &mut ThreadState, phase: Phase, what: impl FnOnce() -> String) -> bool {
        if !self.open {
            return false;
        }
        self.open = false;
        // The phase read before this I/O may be stale: the other end closes
        // only after this end stopped its window, so a close seen now is
        // inside the window only if the window is still open now.
        let phase = if phase == Phase::Stop {
            phase
        } else {
            st.phase.get()
        };
        if phase != Phase::Stop {
            st.errors += 1;
            if st.first_error.is_none() {
                st.first_error = Some(what());
            }
        }
        false
    }

    /// Takes the retransmit baseline when the window opens.
    fn note_window_start(&mut self, st: &ThreadState) {
        if st.inject_panic {
            panic!("injected fault ({FAULT_ENV}={FAULT_NET_PANIC})");
        }
        if self.sends() && self.retrans_base.is_none() {
            self.retrans_base = sock::tcp_info(self.fd).map(|t| t.0);
        }
    }
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
        let fds = |role: Role| -> Vec<RawFd> {
            (conns.iter())
                .filter(|(_, r)| *r == role)
                .map(|(c, _)| c.as_raw_fd())
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
            acked: senders.iter().map(|_| AtomicU64::new(0)).collect(),
            got: receivers.iter().map(|_| AtomicU64::new(0)).collect(),
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
        let acked = kernel_bytes(&self.senders, &self.acked, |(acked, _)| acked);
        (ops, received + acked)
    }

    /// Running totals (operations, bytes received), the bytes counted as
    /// they reach this end's TCP: what a multi-host test adds up over its
    /// hosts, every byte being received by one of them.
    pub fn received(&self) -> (u64, u64) {
        // Live bytes: request/response traffic, as the threads count it.
        let (ops, rr) = Live::totals(&self.live);
        let got = kernel_bytes(&self.receivers, &self.got, |(_, got)| got);
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
/// `sock::tcp_bytes`), each socket's last reading kept in `last`.
fn kernel_bytes(fds: &[RawFd], last: &[AtomicU64], pick: fn((u64, u64)) -> u64) -> u64 {
    (fds.iter().zip(last))
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

const POLL_TICK: Duration = Duration::from_millis(100);
const PAGE: usize = 4096;

/// The `len` bytes of `v` (allocated `len + PAGE` long) that start on a page boundary.
fn page_aligned(v: &mut [u8], len: usize) -> &mut [u8] {
    let off = v.as_ptr().align_offset(PAGE).min(PAGE);
    &mut v[off..off + len]
}

fn run_thread(
    share: Vec<(DataConn, Role)>,
    p: EngineParams,
    phase: &PhaseCell,
    live: &Live,
    inject_panic: bool,
    ready: std::sync::mpsc::Sender<()>,
) -> ThreadOut {
    // One connection with no pipelining: blocking calls, no epoll.
    let pipelined = share
        .first()
        .is_some_and(|c| matches!(c.1, Role::RrClient | Role::RrServer))
        && p.burst > 1;
    let single = share.len() == 1 && !pipelined;
    // A lone blocking receiver returns to the kernel after each 64 KiB (one
    // GRO/loopback segment), which reopens the window sooner: +5 % goodput at
    // 1 connection against 256 KiB reads (BENCHMARKS.md). An epoll thread
    // drains many sockets and saves syscalls with large reads.
    let recv_len = if single {
        64 << 10
    } else {
        p.msg.max(256 << 10)
    };
    let send_len = send_len(share.iter().map(|c| c.1), &p);
    // Page-aligned buffers: the kernel's copy to and from user memory is
    // measurably slower from a misaligned source (malloc puts large blocks at
    // page + 16).
    let mut rbuf = vec![0u8; recv_len + PAGE];
    let buf = page_aligned(&mut rbuf, recv_len);
    let mut sraw = vec![0u8; send_len + PAGE];
    let sbuf = page_aligned(&mut sraw, send_len);
    fill_payload(sbuf);
    let sbuf: &[u8] = sbuf;
    // Set up: the engine may start (see `Engine::start`).
    drop(ready);
    let mut st = ThreadState::new(p, phase, inject_panic);
    let conns = if single {
        run_blocking(share, &mut st, buf, sbuf, live)
    } else {
        run_poll(share, &mut st, buf, sbuf, live)
    };
    ThreadOut {
        conns,
        transactions: st.transactions,
        rtt: st.rtt,
        errors: st.errors,
        first_error: st.first_error,
    }
}

/// The period of the payload pattern.
const PATTERN_LEN: usize = 64 << 10;

/// Payload bytes are not all zero, so nothing on the path can shortcut
/// them: a pseudo-random 64 KiB pattern, repeated (copied, which is fast
/// even unoptimised, where a byte loop over 16 MiB takes a second).
fn fill_payload(buf: &mut [u8]) {
    let first = buf.len().min(PATTERN_LEN);
    for (i, b) in buf[..first].iter_mut().enumerate() {
        *b = (i as u32).wrapping_mul(2654435761).to_le_bytes()[3];
    }
    let mut done = first;
    while done < buf.len() {
        let n = done.min(buf.len() - done);
        buf.copy_within(..n, done);
        done += n;
    }
}

/// The send buffer a thread needs for the roles of all its connections
/// (not only its first: a bidirectional test gives a thread receivers and
/// senders): a whole message for a sender, a request or response (at most
/// 4 MiB, written in pieces beyond) for request/response; a thread that
/// only receives needs none.
fn send_len(roles: impl Iterator<Item = Role>, p: &EngineParams) -> usize {
    roles
        .map(|r| match r {
            Role::Send => p.msg,
            Role::RrClient | Role::RrServer => (p.req.max(p.resp) as usize).clamp(1, 4 << 20),
            Role::Recv => 0,
        })
        .max()
        .unwrap_or(0)
        .max(1)
}

/// What is kept of a connection once it is done, read before its socket
/// closes: role, window counts, retransmits in the window and smoothed RTT
/// (sending sockets only).
struct Finished {
    role: Role,
    count: ConnCount,
    tcp: Option<(u64, u32)>,
    socket: OwnedFd,
}

impl<S: IntoRawFd> Conn<S> {
    fn finish(self) -> Finished {
        let tcp = (self.role != Role::Recv)
            .then(|| sock::tcp_info(self.fd))
            .flatten();
        let base = self.retrans_base;
        let tcp = tcp.map(|(retr, rtt)| (retr.saturating_sub(base.unwrap_or(retr)) as u64, rtt));
        Finished {
            role: self.role,
            count: self.count,
            tcp,
            // SAFETY: into_raw_fd hands over sole ownership of the descriptor.
            socket: unsafe { OwnedFd::from_raw_fd(self.sock.into_raw_fd()) },
        }
    }
}

fn run_blocking(
    share: Vec<(DataConn, Role)>,
    st: &mut ThreadState,
    buf: &mut [u8],
    sbuf: &[u8],
    live: &Live,
) -> Vec<Finished> {
    let mut out = Vec::new();
    for (s, role) in share {
        // Timeouts let the loop see the phase change while a call blocks.
        let _ = s.tcp().set_read_timeout(Some(POLL_TICK));
        let _ = s.tcp().set_write_timeout(Some(POLL_TICK));
        let mut c = Conn::new(s, role, &st.p);
        let mut in_window = false;
        let mut n = 0u32;
        while c.open {
            let phase = st.phase.get();
            if phase == Phase::Stop {
                break;
            }
            if phase == Phase::Measure && !in_window {
                in_window = true;
                c.note_window_start(st);
            }
            let r = match c.try_write(st, sbuf, phase) {
                Ok(true) => Ok(ReadOutcome::Progress),
                Ok(false) => c.try_read(st, buf, phase),
                Err(e) => Err(e),
            };
            match r {
                Ok(ReadOutcome::Eof) => {
                    c.close(st, phase, None);
                }
                Err(e) => {
                    c.close(st, phase, Some(e));
                }
                _ => {}
            }
            n = n.wrapping_add(1);
            if n % 64 == 0 {
                st.publish(live);
            }
        }
        st.publish(live);
        out.push(c.finish());
    }
    out
}

/// Ends every open connection of a thread that can no longer serve them
/// (epoll failed), each counted as a failed connection.
fn fail_all<S: Read + Write + AsRawFd>(st: &mut ThreadState, conns: &mut [Conn<S>], what: &str) {
    let phase = st.phase.get();
    for c in conns.iter_mut() {
        c.fail(st, phase, || what.to_string());
    }
}

/// Drives connection `i` (if open) for one turn: deregistered when it
/// closes, queued in `more` when it has work left.
fn take_turn<S: Read + Write + AsRawFd>(
    conns: &mut [Conn<S>],
    i: usize,
    st: &mut ThreadState,
    buf: &mut [u8],
    sbuf: &[u8],
    poll: &Poll,
    more: &mut Vec<usize>,
) {
    let Some(c) = conns.get_mut(i).filter(|c| c.open) else {
        return;
    };
    match c.drive(st, buf, sbuf) {
        Turn::Closed => {
            let _ = poll.registry().deregister(&mut SourceFd(&c.fd));
        }
        Turn::Blocked => {}
        Turn::More if !c.queued => {
            c.queued = true;
            more.push(i);
        }
        Turn::More => {}
    }
}

fn run_poll(
    share: Vec<(DataConn, Role)>,
    st: &mut ThreadState,
    buf: &mut [u8],
    sbuf: &[u8],
    live: &Live,
) -> Vec<Finished> {
    let mut poll = match Poll::new() {
        Ok(p) => p,
        Err(e) => {
            let what = format!("cannot create an epoll instance: {e}");
            let mut conns: Vec<_> = share
                .into_iter()
                .map(|(s, role)| Conn::new(s, role, &st.p))
                .collect();
            fail_all(st, &mut conns, &what);
            return conns.into_iter().map(Conn::finish).collect();
        }
    };
    let mut conns = Vec::with_capacity(share.len());
    for (i, (s, role)) in share.into_iter().enumerate() {
        let _ = s.tcp().set_nonblocking(true);
        let fd = s.as_raw_fd();
        let interest = match role {
            Role::Send => Interest::WRITABLE,
            Role::Recv => Interest::READABLE,
            _ => Interest::READABLE | Interest::WRITABLE,
        };
        let registered = poll
            .registry()
            .register(&mut SourceFd(&fd), Token(i), interest);
        let mut c = Conn::new(s, role, &st.p);
        if let Err(e) = registered {
            // Never served: a failed connection, not a silent zero.
            let phase = st.phase.get();
            c.fail(st, phase, || format!("epoll register: {e}"));
        }
        conns.push(c);
    }
    // Connections that used their whole turn, to be driven again.
    let mut more = Vec::new();
    for i in 0..conns.len() {
        take_turn(&mut conns, i, st, buf, sbuf, &poll, &mut more);
    }
    let mut events = Events::with_capacity(1024);
    let mut in_window = false;
    loop {
        let phase = st.phase.get();
        if phase == Phase::Stop {
            break;
        }
        if phase == Phase::Measure && !in_window {
            in_window = true;
            conns.iter_mut().for_each(|c| c.note_window_start(st));
        }
        let again = std::mem::take(&mut more);
        let wait = if again.is_empty() {
            POLL_TICK
        } else {
            Duration::ZERO
        };
        if let Err(e) = poll.poll(&mut events, Some(wait)) {
            if e.kind() != ErrorKind::Interrupted {
                // No more events: every connection still open is lost.
                fail_all(st, &mut conns, &format!("epoll_wait: {e}"));
                break;
            }
        }
        for ev in events.iter() {
            take_turn(&mut conns, ev.token().0, st, buf, sbuf, &poll, &mut more);
        }
        for i in again {
            if let Some(c) = conns.get_mut(i) {
                c.queued = false;
            }
            take_turn(&mut conns, i, st, buf, sbuf, &poll, &mut more);
        }
        st.publish(live);
    }
    st.publish(live);
    conns
        .into_iter()
        .map(|c| {
            let _ = poll.registry().deregister(&mut SourceFd(&c.fd));
            c.finish()
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};

    fn params(msg: usize) -> EngineParams {
        EngineParams {
            msg,
            req: 1,
            resp: 1,
            burst: 1,
            verify: false,
        }
    }

    /// Connected loopback pairs: (one end, the other end).
    pub(crate) fn pairs(n: usize) -> Vec<(TcpStream, TcpStream)> {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let a = l.local_addr().unwrap();
        (0..n)
            .map(|_| {
                let c = TcpStream::connect(a).unwrap();
                let (s, _) = l.accept().unwrap();
                (c, s)
            })
            .collect()
    }

    fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
        let end = Instant::now() + Duration::from_secs(60);
        while !f() {
            assert!(Instant::now() < end, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn payload_is_the_pattern_throughout() {
        let mut b = vec![0u8; (200 << 10) + 7];
        fill_payload(&mut b);
        for (i, x) in b.iter().enumerate() {
            let j = i % (64 << 10);
            assert_eq!(*x, (j as u32).wrapping_mul(2654435761).to_le_bytes()[3]);
        }
        assert!(b.iter().any(|x| *x != 0));
    }

    #[test]
    fn send_buffer_fits_every_role_of_the_thread() {
        let p = params(8 << 20);
        // A bidirectional thread whose first connection receives.
        assert_eq!(send_len([Role::Recv, Role::Send].into_iter(), &p), 8 << 20);
        assert_eq!(send_len([Role::Recv].into_iter(), &p), 1);
        let rr = EngineParams {
            req: 64 << 20,
            resp: 10,
            ..p
        };
        assert_eq!(send_len([Role::RrServer].into_iter(), &rr), 4 << 20);
    }

    /// The bug of issue 9: a thread given a receiver first and then a
    /// sender of 8 MiB messages sized its send buffer for the receiver and
    /// panicked on its first write. Both ends here have one thread with
    /// a receiver and a sender, as the endpoint has in `--dir bidir`.
    #[test]
    fn bidirectional_8m_messages_flow_both_ways() {
        let p = params(8 << 20);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for (i, (x, y)) in pairs(2).into_iter().enumerate() {
            let (ra, rb) = if i == 0 {
                (Role::Recv, Role::Send)
            } else {
                (Role::Send, Role::Recv)
            };
            a.push((x.into(), ra));
            b.push((y.into(), rb));
        }
        let phase = Arc::new(PhaseCell::new(Phase::Ramp));
        let ea = Engine::start_with(a, p, phase.clone(), 1, false).unwrap();
        let eb = Engine::start_with(b, p, phase.clone(), 1, false).unwrap();
        phase.set(Phase::Measure);
        // Both directions move (each end's sender and receiver progress).
        wait_for("32 MiB each way", || {
            ea.totals().1 > 64 << 20 && eb.totals().1 > 64 << 20
        });
        phase.set(Phase::Stop);
        let (oa, ob) = (ea.join(), eb.join());
        for o in [&oa, &ob] {
            assert_eq!(o.errors, 0, "{:?}", o.first_error);
            assert!(o.panic.is_none(), "{:?}", o.panic);
            assert_eq!(o.sockets.len(), 2);
            let rx: u64 = o.per_conn.iter().map(|c| c.1.rx).sum();
            let tx: u64 = o.per_conn.iter().map(|c| c.1.tx).sum();
            assert!(rx > 0 && tx > 0, "rx {rx} tx {tx}");
        }
    }

    /// `verify`: whole messages of the pattern pass; one altered byte
    /// fails the connection, naming where.
    #[test]
    fn verify_finds_the_altered_byte() {
        let p = EngineParams {
            verify: true,
            ..params(100_000)
        };
        let (x, mut y) = pairs(1).pop().unwrap();
        let phase = Arc::new(PhaseCell::new(Phase::Measure));
        let e =
            Engine::start_with(vec![(x.into(), Role::Recv)], p, phase.clone(), 1, false).unwrap();
        let mut msg = vec![0u8; 100_000];
        fill_payload(&mut msg);
        y.write_all(&msg).unwrap();
        y.write_all(&msg[..70_000]).unwrap();
        let mut bad = msg[70_000..].to_vec();
        bad[5] ^= 0x80;
        y.write_all(&bad).unwrap();
        wait_for("the receiver to fail", || {
            e.threads[0].1.is_finished() || { e.totals().1 >= 200_000 }
        });
        std::thread::sleep(Duration::from_millis(300));
        phase.set(Phase::Stop);
        let o = e.join();
        assert_eq!(o.errors, 1);
        let err = o.first_error.unwrap_or_default();
        assert!(err.contains("at byte 170005"), "{err}");
        // Counted: the reads before the one that held the altered byte.
        assert!(o.per_conn[0].1.rx <= 170_005, "{}", o.per_conn[0].1.rx);
    }

    #[test]
    fn a_panicking_thread_fails_all_its_connections() {
        let p = params(64 << 10);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for (x, y) in pairs(4) {
            a.push((x.into(), Role::Send));
            b.push((y.into(), Role::Recv));
        }
        let phase = Arc::new(PhaseCell::new(Phase::Ramp));
        // Two threads: thread 0 (connections 0 and 2) panics.
        let ea = Engine::start_with(a, p, phase.clone(), 2, true).unwrap();
        let eb = Engine::start_with(b, p, phase.clone(), 2, false).unwrap();
        phase.set(Phase::Measure);
        wait_for("thread 0 to panic", || ea.threads[0].1.is_finished());
        phase.set(Phase::Stop);
        let oa = ea.join();
        let ob = eb.join();
        assert_eq!(oa.errors, 2, "{:?}", oa.first_error);
        let msg = oa.panic.as_deref().unwrap_or_default();
        assert!(msg.contains("engine thread iotoll-net-0 panicked"), "{msg}");
        assert!(msg.contains("injected fault"), "{msg}");
        assert_eq!(oa.first_error.as_deref(), Some(msg));
        assert_eq!(oa.per_conn.len(), 4);
        // Only the surviving thread's sockets are handed back.
        assert_eq!(oa.sockets.len(), 2);
        assert!(ob.panic.is_none());
    }

    /// An epoll failure ends every open connection of the thread, each
    /// counted (before, only `first_error` was set, so nobody reported it).
    #[test]
    fn epoll_errors_count_every_open_connection() {
        let phase = PhaseCell::new(Phase::Measure);
        let p = params(4096);
        let mut st = ThreadState::new(p, &phase, false);
        let ps = pairs(3);
        let receivers = || -> Vec<Conn<TcpStream>> {
            ps.iter()
                .map(|(x, _)| Conn::new(x.try_clone().unwrap(), Role::Recv, &p))
                .collect()
        };
        let mut conns = receivers();
        // One connection already closed by its peer (counted then).
        conns[1].close(&mut st, Phase::Measure, None);
        assert_eq!(st.errors, 1);
        fail_all(&mut st, &mut conns, "epoll_wait: Bad file descriptor");
        assert_eq!(st.errors, 3, "each open connection counted once");
        assert!(conns.iter().all(|c| !c.open));
        assert_eq!(
            st.first_error.as_deref(),
            Some("peer closed the connection")
        );
        // After the window, ending connections is no failure.
        let phase = PhaseCell::new(Phase::Stop);
        st.phase = &phase;
        let mut more = receivers();
        fail_all(&mut st, &mut more, "epoll_wait: x");
        assert_eq!(st.errors, 3);
        // A fresh thread: the epoll error is what is reported.
        let phase = PhaseCell::new(Phase::Ramp);
        st.phase = &phase;
        st.first_error = None;
        st.errors = 0;
        fail_all(&mut st, &mut more, "epoll_wait: x");
        assert_eq!(st.errors, 0, "already ended");
        let mut fresh = receivers();
        fail_all(&mut st, &mut fresh, "epoll_wait: Bad file descriptor");
        assert_eq!(st.errors, 3);
        assert_eq!(
            st.first_error.as_deref(),
            Some("epoll_wait: Bad file descriptor")
        );
    }
}
