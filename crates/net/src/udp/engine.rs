//! The UDP data engine of one end: a sender thread that paces every flow
//! this end sends on, round-robin, and a receiver thread that polls every
//! socket this end receives on. Buffers are the threads' own, reused; the
//! receiver's accounting is bounded per flow.

use super::account::{Received, Receiver, Sent};
use super::pace::TokenBucket;
use super::wire::Header;
use iotoll_run::{Live, Phase, PhaseCell};
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::unix::io::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// This process's monotonic clock in ns, for datagram timestamps (only
/// differences of one end's readings are ever used).
pub fn mono_ns() -> u64 {
    static BASE: OnceLock<Instant> = OnceLock::new();
    BASE.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

/// How long the receiver keeps counting once told to stop, waiting for the
/// datagrams still on the way, and the quiet that ends that wait early.
const DRAIN_MAX: Duration = Duration::from_secs(1);
const DRAIN_QUIET: Duration = Duration::from_millis(60);

#[derive(Debug, Clone, Copy)]
pub struct UdpParams {
    /// Datagram payload, bytes.
    pub size: u64,
    /// Bits per second over all of this end's sending flows; None: as fast
    /// as the sockets take them.
    pub rate: Option<u64>,
    pub cookie: u64,
    /// Flows of the receiving side (the ids its datagrams may carry).
    pub flows: usize,
}

/// What one end's engine counted.
#[derive(Debug, Default)]
pub struct UdpOut {
    pub sent: Sent,
    pub received: Option<Received>,
    /// Sends that failed for another reason than a full buffer.
    pub errors: u64,
    pub first_error: Option<String>,
}

pub struct UdpEngine {
    sender: Option<JoinHandle<UdpOut>>,
    receiver: Option<JoinHandle<Receiver>>,
    draining: Arc<AtomicBool>,
    live: Arc<[Live; 2]>,
    phase: Arc<PhaseCell>,
}

impl UdpEngine {
    /// Starts sending on `send` (each socket with the address it sends
    /// to; flow ids in this order) and receiving on `recv`, counting what
    /// is sent while `phase` is `Measure` as the window's.
    pub fn start(
        send: Vec<(Arc<UdpSocket>, SocketAddr)>,
        recv: Vec<Arc<UdpSocket>>,
        p: UdpParams,
        phase: Arc<PhaseCell>,
    ) -> io::Result<UdpEngine> {
        let live: Arc<[Live; 2]> = Arc::new(Default::default());
        let draining = Arc::new(AtomicBool::new(false));
        // A socket that only sends is connected to its destination, as
        // iperf3's are: the kernel then finds its route once, not for
        // every datagram. One that also receives stays unconnected: the
        // other end sends to it from sockets of its own.
        let send: Vec<Flow> = (send.into_iter())
            .map(|(s, to)| {
                let shared = recv.iter().any(|r| Arc::ptr_eq(r, &s));
                let connected = !shared && s.connect(to).is_ok();
                (s, to, connected)
            })
            .collect();
        let sender = match send.is_empty() {
            true => None,
            false => {
                let (live, phase) = (live.clone(), phase.clone());
                Some(
                    std::thread::Builder::new()
                        .name("iotoll-udp-tx".into())
                        .spawn(move || send_loop(&send, p, &phase, &live[0]))?,
                )
            }
        };
        let receiver = match recv.is_empty() {
            true => None,
            false => {
                for s in &recv {
                    s.set_nonblocking(true)?;
                }
                let (live, draining) = (live.clone(), draining.clone());
                Some(
                    std::thread::Builder::new()
                        .name("iotoll-udp-rx".into())
                        .spawn(move || recv_loop(&recv, p, &draining, &live[1]))?,
                )
            }
        };
        Ok(UdpEngine {
            sender,
            receiver,
            draining,
            live,
            phase,
        })
    }

    /// Running totals (datagrams, bytes) sent and received, all phases.
    pub fn totals(&self) -> (u64, u64) {
        Live::totals(&self.live[..])
    }

    /// Stops the sender (if the caller has not set the phase to `Stop`
    /// already) and waits for it, then lets the receiver count what is
    /// still on the way.
    pub fn join(mut self) -> UdpOut {
        self.phase.set(Phase::Stop);
        let mut out = UdpOut::default();
        let panicked = |what: &str| Some(format!("the UDP {what} thread panicked"));
        if let Some(s) = self.sender.take() {
            match s.join() {
                Ok(s) => out = s,
                Err(_) => (out.errors, out.first_error) = (1, panicked("sending")),
            }
        }
        self.draining.store(true, Ordering::Release);
        if let Some(r) = self.receiver.take() {
            match r.join() {
                Ok(r) => out.received = Some(r.received()),
                Err(_) => {
                    out.errors += 1;
                    out.first_error = out.first_error.or(panicked("receiving"));
                }
            }
        }
        out
    }
}

/// However a test ends, its threads end (and free its sockets) soon after.
impl Drop for UdpEngine {
    fn drop(&mut self) {
        self.phase.set(Phase::Stop);
        self.draining.store(true, Ordering::Release);
    }
}

/// A sending flow: its socket, its destination, and whether the socket is
/// connected to it.
type Flow = (Arc<UdpSocket>, SocketAddr, bool);

/// The sender's counts (`received` None).
fn send_loop(flows: &[Flow], p: UdpParams, phase: &PhaseCell, live: &Live) -> UdpOut {
    let mut buf = vec![0u8; p.size as usize];
    let mut seqs = vec![0u64; flows.len()];
    let mut bucket = p.rate.map(|r| TokenBucket::new(r, p.size, mono_ns()));
    let mut out = UdpOut::default();
    let (mut all, mut all_bytes, mut i) = (0u64, 0u64, 0usize);
    for (s, _, _) in flows {
        // A blocked send must not outlive the test.
        let _ = s.set_write_timeout(Some(Duration::from_millis(100)));
    }
    let mut opened = false;
    loop {
        let ph = phase.get();
        if ph == Phase::Stop {
            break;
        }
        let now = mono_ns();
        if ph == Phase::Measure && !opened {
            opened = true;
            if let Some(b) = bucket.as_mut() {
                b.window_start(now);
            }
        }
        if let Some(wait) = bucket.as_mut().and_then(|b| b.take(p.size, now)) {
            std::thread::sleep(Duration::from_nanos(super::pace::sleep_ns(wait)));
            continue;
        }
        let in_window = ph == Phase::Measure;
        let (sock, to, connected) = &flows[i];
        Header {
            flow: i as u32,
            cookie: p.cookie,
            seq: seqs[i],
            send_ns: now,
            in_window,
        }
        .write(&mut buf);
        let sent = match connected {
            true => sock.send(&buf),
            false => sock.send_to(&buf, to),
        };
        match sent {
            Ok(_) => {
                seqs[i] += 1;
                if in_window {
                    out.sent.datagrams += 1;
                    out.sent.bytes += p.size;
                }
                all += 1;
                all_bytes += p.size;
                if all % 32 == 0 {
                    live.publish(all, all_bytes);
                }
            }
            // The socket's buffer or the device's queue is full: the
            // datagram was not sent (and not numbered).
            Err(e) if is_full(&e) => {
                if in_window {
                    out.sent.refused += 1;
                }
                std::thread::yield_now();
            }
            // Counted in the window only: a connected socket hears of the
            // receiver's end (ICMP port unreachable) while the test drains.
            Err(e) => {
                if in_window {
                    out.errors += 1;
                    out.first_error
                        .get_or_insert_with(|| format!("send to {to}: {e}"));
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        i = (i + 1) % flows.len();
    }
    live.publish(all, all_bytes);
    out
}

fn is_full(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    ) || e.raw_os_error() == Some(libc::ENOBUFS)
}

fn recv_loop(
    socks: &[Arc<UdpSocket>],
    p: UdpParams,
    draining: &AtomicBool,
    live: &Live,
) -> Receiver {
    let mut r = Receiver::new(p.cookie, p.flows);
    let mut buf = vec![0u8; 65536];
    let mut fds: Vec<libc::pollfd> = (socks.iter())
        .map(|s| libc::pollfd {
            fd: s.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let mut drain_since: Option<Instant> = None;
    let mut quiet_since = Instant::now();
    loop {
        if draining.load(Ordering::Acquire) {
            let since = *drain_since.get_or_insert_with(Instant::now);
            if since.elapsed() >= DRAIN_MAX || quiet_since.elapsed() >= DRAIN_QUIET {
                break;
            }
        }
        // SAFETY: `fds` is a valid, exclusively borrowed array of pollfd.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 20) };
        if n <= 0 {
            continue;
        }
        for (pfd, s) in fds.iter().zip(socks) {
            if pfd.revents == 0 {
                continue;
            }
            // A bounded batch per socket, so every flow gets its turn.
            for _ in 0..256 {
                match s.recv(&mut buf) {
                    Ok(len) => {
                        r.datagram(&buf[..len], mono_ns());
                        quiet_since = Instant::now();
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    // Would block, or an error queued by an ICMP message
                    // for an earlier send: nothing to count.
                    Err(_) => break,
                }
            }
        }
        let (d, b) = r.totals();
        live.publish(d, b);
    }
    r
}
