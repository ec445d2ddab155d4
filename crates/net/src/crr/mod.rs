//! Connection rates, netperf's TCP_CRR and TCP_CC: `iotoll net crr`
//! (connect, request, response, close per transaction) and `iotoll net cc`
//! (connect and close). Each of the client's N workers opens one
//! connection after another to a listener the endpoint opened for this
//! test alone; its port is handed out over the authenticated control
//! connection, so every connection accepted there is the test's (for crr
//! the request also starts with the test's token, checked by the
//! endpoint, at no extra round trip).

pub mod client;
mod engine;
mod result;
mod serve;
pub(crate) mod server;

pub use engine::{CrrEngine, Out as ClientOut, Params as ClientParams};
pub use result::{fell_at_window, totals_disagree};
pub use serve::{CrrServer, Served};

use iotoll_run::{Phase, PhaseCell};
use std::io;
use std::sync::Arc;
use std::thread::JoinHandle;

/// Most concurrent clients of a rate test: one thread each at both ends.
pub const MAX_CLIENTS: u32 = 1000;
/// Bytes of the test's token at the head of every crr request.
pub const TOKEN_LEN: usize = 8;
/// How long one connect, read or write may take before the transaction is
/// counted as a timeout.
pub const IO_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// Starts `n` workers named `name`, each running `work(i)`, held until
/// all are started (see [`Gate`]). If one cannot be started, the test's
/// `phase` is set to `Stop` and those started are let go and joined.
pub(crate) fn start_held<T, F>(
    n: usize,
    name: &str,
    phase: &PhaseCell,
    work: F,
) -> io::Result<Vec<JoinHandle<T>>>
where
    T: Send + 'static,
    F: Fn(usize) -> T + Send + Sync + 'static,
{
    let work = Arc::new(work);
    let gate = Arc::new(Gate::new());
    let mut workers = Vec::with_capacity(n);
    for i in 0..n {
        let (g, w) = (gate.clone(), work.clone());
        let spawned = std::thread::Builder::new()
            .name(name.into())
            .stack_size(256 << 10)
            .spawn(move || {
                g.wait();
                w(i)
            });
        match spawned {
            Ok(h) => workers.push(h),
            Err(e) => {
                phase.set(Phase::Stop);
                gate.open();
                workers.into_iter().for_each(|w| drop(w.join()));
                return Err(e);
            }
        }
    }
    gate.open();
    Ok(workers)
}

/// Holds a test's workers until all are started. A worker that ran at
/// once competed with the thread still starting the others: on this
/// 2-CPU machine 1,000 of them took 6-9 s to start at each end (each new
/// thread waited behind the busy ones), and the endpoint gave up waiting
/// for the window; held back, they start in well under a second.
struct Gate {
    open: std::sync::Mutex<bool>,
    cv: std::sync::Condvar,
}

impl Gate {
    fn new() -> Gate {
        Gate {
            open: std::sync::Mutex::new(false),
            cv: std::sync::Condvar::new(),
        }
    }

    /// Lets every worker go (also those that must only see the test end).
    fn open(&self) {
        *self.open.lock().unwrap_or_else(|p| p.into_inner()) = true;
        self.cv.notify_all();
    }

    /// Waits until the gate opens, the calling worker made to yield to
    /// the thread that times the window first.
    fn wait(&self) {
        yield_to_control();
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        while !*open {
            open = self.cv.wait(open).unwrap_or_else(|p| p.into_inner());
        }
    }
}

/// How much nicer than the rest of the process a worker runs. A thousand
/// runnable workers on a lab host's one CPU held the thread that opens and
/// closes the window (and the endpoint's, that reads them) off the CPU for
/// seconds: in the pair-1g lab, `--conns 1000` ended with "the endpoint
/// gave up waiting for the window start" every time; at +10 the window ran
/// on time (5.22 s for 5 s). At +10, 2,000 workers of one process (1,000
/// clients against the in-process endpoint) beside two CPU hogs still held
/// it past the endpoint's 10 s once in three runs; the lowest priority
/// (+19, a fifth of +10's weight) leaves it more. Against each other the
/// workers are equal; against other processes they yield, which a result
/// flags as interference anyway.
const WORKER_NICE: i32 = 19;

/// Makes the calling thread (Linux's nice is per thread) [`WORKER_NICE`]
/// nicer than it was. Best effort: a failure leaves it as it was.
fn yield_to_control() {
    // SAFETY: getpriority/setpriority with who = 0 read and set the calling
    // thread's nice value; no memory is involved. (-1 is a valid nice, so a
    // failed read is taken as -1 too: the result is still nicer.)
    unsafe {
        let now = libc::getpriority(libc::PRIO_PROCESS, 0);
        libc::setpriority(libc::PRIO_PROCESS, 0, (now + WORKER_NICE).min(19));
    }
}

/// Why a connection failed, named as the user looks for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// Nothing listened (RST to the SYN).
    Refused,
    /// The peer reset an established connection.
    Reset,
    /// Connect, request or response took longer than [`IO_TIMEOUT`].
    Timeout,
    /// No local port left (EADDRNOTAVAIL): TIME_WAIT holds them all.
    PortsExhausted,
    /// The peer closed before the whole response came.
    Short,
    Other,
}

impl Cause {
    pub const ALL: [Cause; 6] = [
        Cause::Refused,
        Cause::Reset,
        Cause::Timeout,
        Cause::PortsExhausted,
        Cause::Short,
        Cause::Other,
    ];

    /// The word in notes and metric names (`failures_<name>`).
    pub fn name(self) -> &'static str {
        match self {
            Cause::Refused => "refused",
            Cause::Reset => "reset",
            Cause::Timeout => "timeout",
            Cause::PortsExhausted => "ports_exhausted",
            Cause::Short => "short_response",
            Cause::Other => "other",
        }
    }

    pub fn classify(e: &io::Error) -> Cause {
        use io::ErrorKind as K;
        match e.raw_os_error() {
            Some(libc::EADDRNOTAVAIL) => return Cause::PortsExhausted,
            Some(libc::ECONNREFUSED) => return Cause::Refused,
            Some(libc::ECONNRESET) | Some(libc::EPIPE) => return Cause::Reset,
            Some(libc::ETIMEDOUT) | Some(libc::EAGAIN) | Some(libc::EINPROGRESS) => {
                return Cause::Timeout
            }
            _ => {}
        }
        match e.kind() {
            K::ConnectionRefused => Cause::Refused,
            K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe => Cause::Reset,
            K::TimedOut | K::WouldBlock => Cause::Timeout,
            K::AddrNotAvailable => Cause::PortsExhausted,
            K::UnexpectedEof => Cause::Short,
            _ => Cause::Other,
        }
    }
}

/// Failures by cause, in [`Cause::ALL`]'s order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Failures(pub [u64; 6]);

impl Failures {
    pub fn add(&mut self, c: Cause) {
        self.0[c as usize] += 1;
    }
    pub fn merge(&mut self, o: &Failures) {
        for (a, b) in self.0.iter_mut().zip(o.0) {
            *a += b;
        }
    }
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }
    pub fn get(&self, c: Cause) -> u64 {
        self.0[c as usize]
    }
    /// "3 refused, 1 timeout"; None without failures.
    pub fn describe(&self) -> Option<String> {
        let v: Vec<String> = Cause::ALL
            .iter()
            .filter(|c| self.get(**c) > 0)
            .map(|c| format!("{} {}", self.get(*c), c.name().replace('_', " ")))
            .collect();
        (!v.is_empty()).then(|| v.join(", "))
    }
}

/// `/proc/sys/net/ipv4/ip_local_port_range`: "32768\t60999".
pub fn parse_port_range(s: &str) -> Option<(u16, u16)> {
    let mut it = s.split_whitespace().map(|w| w.parse::<u16>().ok());
    let (lo, hi) = (it.next()??, it.next()??);
    (lo <= hi && it.next().is_none()).then_some((lo, hi))
}

/// The TIME_WAIT count of `/proc/net/sockstat`'s "TCP: inuse 5 orphan 0
/// tw 12 alloc 9 mem 1" line (this network namespace, IPv4 and IPv6).
pub fn parse_time_wait(sockstat: &str) -> Option<u64> {
    let line = sockstat.lines().find(|l| l.starts_with("TCP:"))?;
    let w: Vec<&str> = line.split_whitespace().collect();
    let i = w.iter().position(|x| *x == "tw")?;
    w.get(i + 1)?.parse().ok()
}

/// What the result says about TIME_WAIT when connections close normally:
/// each closed connection holds its local port for 60 s, so a rate above
/// ports/60 per second exhausts them.
pub fn time_wait_note(rate: f64) -> String {
    let range = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| parse_port_range(&s));
    let tw = std::fs::read_to_string("/proc/net/sockstat")
        .ok()
        .and_then(|s| parse_time_wait(&s));
    let mut s = String::from(
        "connections closed normally (no --linger0): this host, which closes first, keeps each one in TIME_WAIT for 60 s",
    );
    if let Some(tw) = tw {
        s += &format!(", {tw} socket(s) in TIME_WAIT (this network namespace) at the test's end");
    }
    if let Some((lo, hi)) = range {
        let ports = u64::from(hi - lo) + 1;
        s += &format!(
            "; the local port range {lo}-{hi} ({ports} ports) lasts at {:.0} connections/s per destination address for about {:.0} s unless TIME_WAIT ports are reused",
            rate,
            if rate > 0.0 { ports as f64 / rate } else { f64::INFINITY }
        );
        if tw.is_some_and(|tw| tw >= ports * 9 / 10) {
            s += "; the range is (nearly) full of TIME_WAIT sockets, so connects wait for a port the kernel may reuse, and that bounds the rate: --linger0 shows the rate without it";
        }
    }
    if let Ok(r) = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_tw_reuse") {
        let how = match r.trim() {
            "1" => "reuses them for new outgoing connections",
            "2" => "reuses them on loopback only",
            _ => "does not reuse them",
        };
        s += &format!("; net.ipv4.tcp_tw_reuse = {}: the kernel {how}", r.trim());
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_named_by_cause() {
        let os = io::Error::from_raw_os_error;
        assert_eq!(
            Cause::classify(&os(libc::EADDRNOTAVAIL)),
            Cause::PortsExhausted
        );
        assert_eq!(Cause::classify(&os(libc::ECONNREFUSED)), Cause::Refused);
        assert_eq!(Cause::classify(&os(libc::ECONNRESET)), Cause::Reset);
        assert_eq!(Cause::classify(&os(libc::EPIPE)), Cause::Reset);
        assert_eq!(Cause::classify(&os(libc::ETIMEDOUT)), Cause::Timeout);
        assert_eq!(Cause::classify(&os(libc::EAGAIN)), Cause::Timeout);
        let eof = io::Error::new(io::ErrorKind::UnexpectedEof, "x");
        assert_eq!(Cause::classify(&eof), Cause::Short);
        assert_eq!(Cause::classify(&os(libc::EMFILE)), Cause::Other);
        let mut f = Failures::default();
        assert_eq!(f.describe(), None);
        f.add(Cause::Refused);
        f.add(Cause::Refused);
        f.add(Cause::PortsExhausted);
        assert_eq!(f.total(), 3);
        assert_eq!(f.describe().unwrap(), "2 refused, 1 ports exhausted");
    }

    #[test]
    fn port_range_and_time_wait_are_read_from_proc() {
        assert_eq!(parse_port_range("32768\t60999\n"), Some((32768, 60999)));
        assert_eq!(parse_port_range("60999 32768"), None);
        assert_eq!(parse_port_range("1 2 3"), None);
        assert_eq!(parse_port_range("x"), None);
        let s =
            "sockets: used 200\nTCP: inuse 5 orphan 0 tw 12 alloc 9 mem 1\nUDP: inuse 1 mem 0\n";
        assert_eq!(parse_time_wait(s), Some(12));
        assert_eq!(parse_time_wait("TCP: inuse 5"), None);
    }
}
