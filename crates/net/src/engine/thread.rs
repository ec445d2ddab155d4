//! An engine thread: its buffers, and its loop over its connections
//! (blocking calls for one, an edge-triggered epoll loop for several).

use super::conn::{Conn, Finished, ReadOutcome, ThreadState, Turn};
use super::{DataConn, EngineParams, Role};
use hdrhistogram::Histogram;
use iotoll_run::{Live, Phase, PhaseCell};
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};
use std::io::{ErrorKind, Read, Write};
use std::os::unix::io::AsRawFd;
use std::time::Duration;

pub(super) struct ThreadOut {
    pub(super) conns: Vec<Finished>,
    pub(super) transactions: u64,
    pub(super) rtt: Histogram<u64>,
    pub(super) errors: u64,
    pub(super) first_error: Option<String>,
}

const POLL_TICK: Duration = Duration::from_millis(100);
const PAGE: usize = 4096;

/// The `len` bytes of `v` (allocated `len + PAGE` long) that start on a page boundary.
fn page_aligned(v: &mut [u8], len: usize) -> &mut [u8] {
    let off = v.as_ptr().align_offset(PAGE).min(PAGE);
    &mut v[off..off + len]
}

pub(super) fn run_thread(
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
pub(super) const PATTERN_LEN: usize = 64 << 10;

/// Payload bytes are not all zero, so nothing on the path can shortcut
/// them: a pseudo-random 64 KiB pattern, repeated (copied, which is fast
/// even unoptimised, where a byte loop over 16 MiB takes a second).
pub(super) fn fill_payload(buf: &mut [u8]) {
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
pub(super) fn send_len(roles: impl Iterator<Item = Role>, p: &EngineParams) -> usize {
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
                Ok(ReadOutcome::Eof) => c.close(st, phase, None),
                Err(e) => c.close(st, phase, Some(e)),
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
pub(super) fn fail_all<S: Read + Write + AsRawFd>(
    st: &mut ThreadState,
    conns: &mut [Conn<S>],
    what: &str,
) {
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
