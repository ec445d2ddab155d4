//! A connection-rate test's serving side on its own listener, started and
//! joined by its caller: the endpoint's session (`server.rs`) runs one,
//! an agent one for each pair it serves.

use super::server::{acceptor, Counts};
use super::start_held;
use crate::proto::{CrrEnd, TestKind};
use iotoll_run::{Phase, PhaseCell};
use std::net::TcpListener;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;

/// The serving side's counts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Served {
    /// Over the whole test, ramp-up and drain included.
    pub end: CrrEnd,
    /// Connections served, and failed, while the phase was `Measure`.
    pub window_done: u64,
    pub window_errors: u64,
    pub first_error: Option<String>,
}

pub struct CrrServer {
    phase: Arc<PhaseCell>,
    counts: Arc<Counts>,
    workers: Vec<JoinHandle<()>>,
}

impl CrrServer {
    /// `threads` acceptors on `listener` (blocking, with an accept
    /// timeout so each sees the phase), serving `kind`'s exchange of
    /// `req` and `resp` bytes to connections whose requests carry `token`.
    pub fn start(
        listener: TcpListener,
        kind: TestKind,
        (req, resp): (u64, u64),
        token: u64,
        threads: usize,
        phase: Arc<PhaseCell>,
    ) -> std::io::Result<CrrServer> {
        // A blocking accept wakes one waiting thread per connection (a
        // non-blocking one polled by every thread would wake them all);
        // the timeout lets each see the end of the test.
        socket2::SockRef::from(&listener).set_read_timeout(Some(super::server::ACCEPT_WAIT))?;
        let counts = Arc::new(Counts::default());
        let listener = Arc::new(listener);
        let exchange = (kind == TestKind::Crr).then_some((req, resp));
        // Connections wait in the listener's backlog meanwhile.
        let workers = {
            let (l, ph, c) = (listener.clone(), phase.clone(), counts.clone());
            start_held(threads, "iotoll-crr-serve", &phase, move |_| {
                acceptor(&l, &ph, &c, token, exchange)
            })?
        };
        Ok(CrrServer {
            phase,
            counts,
            workers,
        })
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> u64 {
        self.counts.accepted.load(Ordering::Acquire)
    }

    /// Stops serving once no connection has come for a while after the
    /// phase is `Stop` (the clients' last transactions are answered), and
    /// the counts.
    pub fn join(self) -> Served {
        self.phase.set(Phase::Stop);
        for w in self.workers {
            let _ = w.join();
        }
        let c = &self.counts;
        let first_error = (c.first_error.lock())
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        Served {
            end: CrrEnd {
                accepted: c.accepted.load(Ordering::Acquire),
                responded: c.responded.load(Ordering::Acquire),
                bad_token: c.bad_token.load(Ordering::Acquire),
            },
            window_done: c.window_done.load(Ordering::Acquire),
            window_errors: c.window_errors.load(Ordering::Acquire),
            first_error,
        }
    }
}
