//! The client's workers: each opens one connection after another, as
//! netperf's TCP_CRR and TCP_CC clients do, with blocking sockets.

use super::{start_held, Cause, Failures, IO_TIMEOUT, TOKEN_LEN};
use crate::client::drive::Driven;
use hdrhistogram::Histogram;
use iotoll_run::{new_histogram, Phase, PhaseCell};
use socket2::{Domain, Protocol, Socket, Type};
use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
pub struct Params {
    pub server: SocketAddr,
    pub token: u64,
    /// None: connect and close only (cc).
    pub exchange: Option<(u64, u64)>,
    pub linger0: bool,
    pub bind: Vec<IpAddr>,
}

/// One worker's counts.
pub struct Out {
    /// Transactions (connections for cc) completed in the window.
    pub window_done: u64,
    /// Failures in the window, by cause.
    pub failures: Failures,
    /// Over the whole test, ramp-up and drain included: what the endpoint's
    /// totals are checked against.
    pub total_done: u64,
    pub total_failed: u64,
    pub connect: Histogram<u64>,
    pub trans: Histogram<u64>,
    pub first_error: Option<String>,
}

impl Out {
    pub(crate) fn new() -> Out {
        Out {
            window_done: 0,
            failures: Failures::default(),
            total_done: 0,
            total_failed: 0,
            connect: new_histogram(),
            trans: new_histogram(),
            first_error: None,
        }
    }

    fn merge(&mut self, o: Out) {
        self.window_done += o.window_done;
        self.failures.merge(&o.failures);
        self.total_done += o.total_done;
        self.total_failed += o.total_failed;
        let _ = self.connect.add(&o.connect);
        let _ = self.trans.add(&o.trans);
        if self.first_error.is_none() {
            self.first_error = o.first_error;
        }
    }
}

pub struct CrrEngine {
    phase: Arc<PhaseCell>,
    done: Arc<AtomicU64>,
    bytes_each: u64,
    workers: Vec<JoinHandle<Out>>,
}

impl CrrEngine {
    pub fn start(p: Params, n: usize, phase: Arc<PhaseCell>) -> io::Result<CrrEngine> {
        let p = Arc::new(p);
        let done = Arc::new(AtomicU64::new(0));
        let workers = {
            let (p, ph, done) = (p.clone(), phase.clone(), done.clone());
            start_held(n, "iotoll-crr", &phase, move |i| worker(&p, i, &ph, &done))?
        };
        let bytes_each = p.exchange.map_or(0, |(q, r)| q + r);
        Ok(CrrEngine {
            phase,
            done,
            bytes_each,
            workers,
        })
    }

    /// Connections (transactions for crr) completed so far, all phases.
    pub fn done(&self) -> u64 {
        self.done.load(Ordering::Relaxed)
    }

    /// Stops the workers once each has finished its transaction, and
    /// their counts.
    pub fn join(self) -> Out {
        Driven::finish(self)
    }
}

impl Driven for CrrEngine {
    type Out = Out;
    fn totals(&self) -> (u64, u64) {
        let n = self.done.load(Ordering::Relaxed);
        (n, n * self.bytes_each)
    }
    /// Each worker finishes the transaction it is in (at most
    /// [`IO_TIMEOUT`] per step), so every connection it opened is closed
    /// and counted before the endpoint reports.
    fn finish(self) -> Out {
        self.phase.set(Phase::Stop);
        let mut out = Out::new();
        for w in self.workers {
            match w.join() {
                Ok(o) => out.merge(o),
                Err(_) => {
                    out.total_failed += 1;
                    out.failures.add(Cause::Other);
                    out.first_error = Some("a connection worker panicked".into());
                }
            }
        }
        out
    }
    fn abandon(self) {
        self.finish();
    }
}

fn worker(p: &Params, i: usize, phase: &PhaseCell, done: &AtomicU64) -> Out {
    let mut o = Out::new();
    let mut req = Vec::new();
    if let Some((q, _)) = p.exchange {
        req = vec![0u8; TOKEN_LEN + q as usize];
        req[..TOKEN_LEN].copy_from_slice(&p.token.to_be_bytes());
    }
    let mut buf = vec![0u8; 64 << 10];
    let bind = (!p.bind.is_empty()).then(|| p.bind[i % p.bind.len()]);
    while phase.get() != Phase::Stop {
        let t0 = Instant::now();
        let r = transaction(p, bind, &req, &mut buf, t0);
        // Counted in the window when it ended there.
        let measuring = phase.get() == Phase::Measure;
        match r {
            Ok(connect) => {
                let total = t0.elapsed();
                done.fetch_add(1, Ordering::Relaxed);
                o.total_done += 1;
                if measuring {
                    o.window_done += 1;
                    let _ = o.connect.record(ns(connect));
                    if p.exchange.is_some() {
                        let _ = o.trans.record(ns(total));
                    }
                }
            }
            Err(e) => {
                let cause = Cause::classify(&e);
                o.total_failed += 1;
                if measuring {
                    o.failures.add(cause);
                }
                if o.first_error.is_none() {
                    o.first_error = Some(format!("{}: {e}", cause.name()));
                }
                // A refusal or an exhausted port range fails at once:
                // back off so a worker does not spin on it.
                if matches!(cause, Cause::Refused | Cause::PortsExhausted) {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        }
    }
    o
}

fn ns(d: Duration) -> u64 {
    (d.as_nanos() as u64).max(1)
}

/// One connection: connect (its time returned), the request and the whole
/// response for crr, and the close. This end closes first, so the
/// TIME_WAIT is here, as with netperf (or a RST with `linger0`).
fn transaction(
    p: &Params,
    bind: Option<IpAddr>,
    req: &[u8],
    buf: &mut [u8],
    t0: Instant,
) -> io::Result<Duration> {
    let s = Socket::new(
        Domain::for_address(p.server),
        Type::STREAM,
        Some(Protocol::TCP),
    )?;
    if p.linger0 {
        s.set_linger(Some(Duration::ZERO))?;
    }
    if let Some(ip) = bind {
        s.bind(&SocketAddr::new(ip, 0).into())?;
    }
    // A blocking connect honours the send timeout: no non-blocking
    // connect and poll, which would cost four system calls more per
    // connection than the peer tools' loop.
    s.set_write_timeout(Some(IO_TIMEOUT))?;
    s.connect(&p.server.into())?;
    let connect = t0.elapsed();
    let Some((_, resp)) = p.exchange else {
        return Ok(connect);
    };
    s.set_read_timeout(Some(IO_TIMEOUT))?;
    s.set_nodelay(true)?;
    let mut t: TcpStream = s.into();
    t.write_all(req)?;
    let mut left = resp as usize;
    while left > 0 {
        let n = left.min(buf.len());
        match t.read(&mut buf[..n])? {
            0 => return Err(io::ErrorKind::UnexpectedEof.into()),
            got => left -= got,
        }
    }
    Ok(connect)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A port nothing listens on: every connect is refused, and counted
    /// and named as such in the window.
    #[test]
    fn a_refused_connection_is_counted_and_named() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let server = l.local_addr().unwrap();
        drop(l);
        let p = Params {
            server,
            token: 7,
            exchange: Some((1, 1)),
            linger0: false,
            bind: Vec::new(),
        };
        let phase = Arc::new(PhaseCell::new(Phase::Measure));
        let e = CrrEngine::start(p, 2, phase).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        let out = e.finish();
        assert_eq!(out.window_done, 0);
        assert_eq!(out.total_done, 0);
        assert!(out.failures.get(Cause::Refused) > 0, "{:?}", out.failures);
        assert_eq!(out.failures.total(), out.failures.get(Cause::Refused));
        assert!(out.total_failed >= out.failures.total());
        assert!(out.first_error.unwrap().starts_with("refused"));
    }
}
