//! One connection's state and its turn: what it writes and reads, the
//! request/response bookkeeping, the payload check, and how it ends.

use super::thread::{fill_payload, PATTERN_LEN};
use super::{ConnCount, EngineParams, Role, FAULT_ENV, FAULT_NET_PANIC};
use crate::sock;
use hdrhistogram::Histogram;
use iotoll_run::{new_histogram, Live, Phase, PhaseCell};
use std::collections::VecDeque;
use std::io::{self, ErrorKind, Read, Write};
use std::os::fd::{FromRawFd, IntoRawFd, OwnedFd};
use std::os::unix::io::{AsRawFd, RawFd};
use std::time::Instant;

pub(super) struct Conn<S> {
    pub(super) sock: S,
    pub(super) fd: RawFd,
    pub(super) role: Role,
    /// Send: bytes of the current message already written.
    pub(super) partial: usize,
    /// RR: bytes owed to the peer.
    pub(super) owed: u64,
    /// RR: bytes of the current request/response already received.
    pub(super) rx_partial: u64,
    /// RrClient: when each outstanding request was issued.
    pub(super) sent_at: VecDeque<Instant>,
    /// Recv: payload received since the connection opened (where the
    /// stream is in the sender's messages).
    pub(super) rx_seen: u64,
    pub(super) count: ConnCount,
    pub(super) retrans_base: Option<u32>,
    pub(super) open: bool,
    /// Waiting for another turn (see [`Turn::More`]).
    pub(super) queued: bool,
}

pub(super) enum ReadOutcome {
    Progress,
    Nothing,
    Eof,
}

/// How a connection's turn ([`Conn::drive`]) ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Turn {
    Closed,
    /// Its socket would block: the next event brings it back.
    Blocked,
    /// It used its whole turn with work left: edge-triggered epoll will not
    /// report it again, so it is driven again without waiting.
    More,
}

/// Rounds of a connection's turn (each a write and a read attempt).
const TURN_OPS: u32 = 16;

pub(super) struct ThreadState<'a> {
    pub(super) p: EngineParams,
    pub(super) phase: &'a PhaseCell,
    /// Test-only fault: panic when the window opens (see `FAULT_ENV`).
    pub(super) inject_panic: bool,
    pub(super) transactions: u64,
    pub(super) rtt: Histogram<u64>,
    pub(super) ops_total: u64,
    pub(super) bytes_total: u64,
    pub(super) errors: u64,
    pub(super) first_error: Option<String>,
    /// With `verify`: one period of the senders' payload pattern.
    pub(super) pattern: Vec<u8>,
}

impl<'a> ThreadState<'a> {
    pub(super) fn publish(&self, live: &Live) {
        live.publish(self.ops_total, self.bytes_total);
    }

    pub(super) fn new(p: EngineParams, phase: &'a PhaseCell, inject_panic: bool) -> Self {
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
    pub(super) fn new(sock: S, role: Role, p: &EngineParams) -> Self {
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

    /// One write attempt; true if bytes went out.
    pub(super) fn try_write(
        &mut self,
        st: &mut ThreadState,
        sbuf: &[u8],
        phase: Phase,
    ) -> io::Result<bool> {
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
    pub(super) fn try_read(
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
    pub(super) fn check_pattern(&mut self, st: &ThreadState, got: &[u8]) -> io::Result<()> {
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
    pub(super) fn drive(&mut self, st: &mut ThreadState, buf: &mut [u8], sbuf: &[u8]) -> Turn {
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

    pub(super) fn close(&mut self, st: &mut ThreadState, phase: Phase, err: Option<io::Error>) {
        let what = err.map(|e| e.to_string());
        self.fail(st, phase, || {
            what.unwrap_or_else(|| "peer closed the connection".into())
        });
    }

    /// Ends the connection; before the window closes that is a failure,
    /// counted once. Peers closing after the window are the normal end of
    /// a test; a connection lost in the ramp-up is missing from the window.
    pub(super) fn fail(
        &mut self,
        st: &mut ThreadState,
        phase: Phase,
        what: impl FnOnce() -> String,
    ) {
        if !self.open {
            return;
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
    }

    /// Takes the retransmit baseline when the window opens.
    pub(super) fn note_window_start(&mut self, st: &ThreadState) {
        if st.inject_panic {
            panic!("injected fault ({FAULT_ENV}={FAULT_NET_PANIC})");
        }
        if self.role != Role::Recv && self.retrans_base.is_none() {
            self.retrans_base = sock::tcp_info(self.fd).map(|t| t.0);
        }
    }
}

/// What is kept of a connection once it is done, read before its socket
/// closes: role, window counts, retransmits in the window and smoothed RTT
/// (sending sockets only).
pub(super) struct Finished {
    pub(super) role: Role,
    pub(super) count: ConnCount,
    pub(super) tcp: Option<(u64, u32)>,
    pub(super) socket: OwnedFd,
}

impl<S: IntoRawFd> Conn<S> {
    pub(super) fn finish(self) -> Finished {
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
