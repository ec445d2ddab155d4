//! A test's data port: its listener and token, and the data connections
//! accepted on it, each placed by the token and index in its header.

use super::{SessionError, DATA_HEADER};
use crate::engine::Role;
use crate::proto::{Control, TestParams};
use crate::sock;
use std::io::Read;
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::io::AsRawFd;
use std::time::{Duration, Instant};

/// A test's data port on `ip`, with the test's socket buffers (accepted
/// sockets inherit them, and the window scale is chosen from them at the
/// handshake) and a deep accept backlog: std listens with 128, which drops
/// SYNs when a thousand connections arrive at once, and each retry costs a
/// second.
pub fn data_listener(ip: IpAddr, sockbuf: Option<u64>) -> std::io::Result<TcpListener> {
    let listener = TcpListener::bind(SocketAddr::new(ip, 0))?;
    if let Some(b) = sockbuf {
        let _ = sock::set_sockbuf(&listener, b);
    }
    let _ = socket2::SockRef::from(&listener).listen(8192);
    Ok(listener)
}

/// A random token that identifies a test's (or a pair's) data connections.
pub fn data_token() -> std::io::Result<u64> {
    Ok(u64::from_le_bytes(iotoll_model::secret::random()?))
}

/// How long a data connection may take to send its header once accepted.
/// The headers are read concurrently, so this bounds only how long a
/// silent connection holds a descriptor, never the test.
const HEADER_WAIT: Duration = Duration::from_secs(2);
/// Most data connections whose header is still incomplete; beyond it the
/// oldest is dropped (a real client sends its header with the connection,
/// so it is read at once and never waits here).
pub const MAX_HALF_OPEN: usize = 256;

/// A data connection whose header has not fully arrived.
struct HalfOpen {
    s: TcpStream,
    h: [u8; DATA_HEADER],
    got: usize,
    since: Instant,
}

enum HeaderRead {
    Done,
    More,
    Gone,
}

impl HalfOpen {
    /// Reads what has arrived of the header (the socket is non-blocking).
    fn read(&mut self) -> HeaderRead {
        while self.got < DATA_HEADER {
            match self.s.read(&mut self.h[self.got..]) {
                Ok(0) => return HeaderRead::Gone,
                Ok(n) => self.got += n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return HeaderRead::More,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return HeaderRead::Gone,
            }
        }
        HeaderRead::Done
    }
}

/// Accepts the announced data connections, each identified by the test's
/// token; strays are dropped. Headers are read concurrently (an event
/// loop), each within [`HEADER_WAIT`], so connections that say nothing
/// neither slow the test nor fail it. Fails at the deadline with a count,
/// and at once when the client's control connection closes (or speaks out
/// of turn): a client that vanished never keeps the endpoint waiting.
pub(super) fn accept_data(
    listener: TcpListener,
    ctl: &Control,
    token: u64,
    roles: &[Role],
    p: &TestParams,
    deadline: Instant,
) -> Result<Vec<(TcpStream, Role)>, SessionError> {
    let abort = || {
        ctl.peer_spoke()
            .then(|| "the client closed its control connection (or spoke out of turn)".to_string())
    };
    let groups = accept_groups(listener, &[(token, roles)], p, deadline, &abort)?;
    Ok(groups.into_iter().flatten().collect())
}

/// [`accept_data`] for several groups of connections at once (an agent
/// serving several endpoint pairs on one data port), each group with its
/// own token and roles; `abort` says why to give up (None: go on).
/// Returns each group's connections in the order of its roles.
pub fn accept_groups(
    listener: TcpListener,
    groups: &[(u64, &[Role])],
    p: &TestParams,
    deadline: Instant,
    abort: &dyn Fn() -> Option<String>,
) -> Result<Vec<Vec<(TcpStream, Role)>>, SessionError> {
    use mio::unix::SourceFd;
    use mio::{Interest, Poll, Token};
    let io = |what: &'static str| {
        move |e| SessionError::io(format!("accepting data connections: {what}"), e)
    };
    let mut poll = Poll::new().map_err(io("epoll"))?;
    listener.set_nonblocking(true).map_err(io("listener"))?;
    let lfd = listener.as_raw_fd();
    let r = poll
        .registry()
        .register(&mut SourceFd(&lfd), Token(0), Interest::READABLE);
    r.map_err(io("epoll"))?;
    let slots = accept_loop(&mut poll, &listener, groups, deadline, abort)?;
    let mut out = Vec::with_capacity(groups.len());
    for (g, (_, roles)) in slots.into_iter().zip(groups) {
        let mut conns = Vec::with_capacity(g.len());
        for (s, r) in g.into_iter().zip(roles.iter()) {
            let Some(s) = s else { continue };
            s.set_nonblocking(false).map_err(io("socket"))?;
            if p.nodelay {
                let _ = s.set_nodelay(true);
            }
            if let Some(b) = p.sockbuf {
                let _ = sock::set_sockbuf(&s, b);
            }
            conns.push((s, *r));
        }
        out.push(conns);
    }
    Ok(out)
}

type Slots = Vec<Vec<Option<TcpStream>>>;

/// The data connections of an [`accept_loop`]: those placed, and those
/// whose header has not fully arrived (by their epoll token).
struct Arrivals<'a> {
    groups: &'a [(u64, &'a [Role])],
    slots: Slots,
    got: usize,
    half: std::collections::HashMap<usize, HalfOpen>,
    next_id: usize,
}

impl Arrivals<'_> {
    /// Places a connection whose header is complete; a stray is dropped.
    fn place(&mut self, c: HalfOpen) {
        let h = c.h;
        let t = u64::from_be_bytes([h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]]);
        let idx = u32::from_be_bytes([h[8], h[9], h[10], h[11]]) as usize;
        let Some(g) = self.groups.iter().position(|(token, _)| *token == t) else {
            return;
        };
        let roles = self.groups[g].1;
        let fits = idx < roles.len()
            && self.slots[g][idx].is_none()
            && Role::from_code(h[12]).map(Role::opposite) == Some(roles[idx]);
        if fits {
            self.slots[g][idx] = Some(c.s);
            self.got += 1;
        }
    }

    /// A connection just accepted: placed if its header is there, else
    /// watched (the oldest silent one dropped beyond [`MAX_HALF_OPEN`]).
    fn arrived(&mut self, poll: &mio::Poll, s: TcpStream) {
        use mio::unix::SourceFd;
        use mio::{Interest, Token};
        if s.set_nonblocking(true).is_err() {
            return;
        }
        let mut c = HalfOpen {
            s,
            h: [0; DATA_HEADER],
            got: 0,
            since: Instant::now(),
        };
        match c.read() {
            HeaderRead::Done => self.place(c),
            HeaderRead::Gone => {}
            HeaderRead::More => {
                if self.half.len() >= MAX_HALF_OPEN {
                    let oldest = self.half.iter().min_by_key(|(_, c)| c.since);
                    if let Some(k) = oldest.map(|(k, _)| *k) {
                        self.half.remove(&k);
                    }
                }
                let fd = c.s.as_raw_fd();
                let token = Token(self.next_id);
                let registry = poll.registry();
                if registry
                    .register(&mut SourceFd(&fd), token, Interest::READABLE)
                    .is_ok()
                {
                    self.half.insert(self.next_id, c);
                    self.next_id += 1;
                }
            }
        }
    }

    /// More of a watched connection's header has arrived.
    fn readable(&mut self, poll: &mio::Poll, id: usize) {
        let Some(mut c) = self.half.remove(&id) else {
            return;
        };
        match c.read() {
            HeaderRead::Done => {
                let fd = c.s.as_raw_fd();
                let _ = poll.registry().deregister(&mut mio::unix::SourceFd(&fd));
                self.place(c);
            }
            HeaderRead::More => {
                self.half.insert(id, c);
            }
            HeaderRead::Gone => {}
        }
    }
}

fn accept_loop(
    poll: &mut mio::Poll,
    listener: &TcpListener,
    groups: &[(u64, &[Role])],
    deadline: Instant,
    abort: &dyn Fn() -> Option<String>,
) -> Result<Slots, SessionError> {
    const LISTEN: mio::Token = mio::Token(0);
    let mut poll_events = mio::Events::with_capacity(1024);
    let mut a = Arrivals {
        groups,
        slots: (groups.iter())
            .map(|(_, roles)| (0..roles.len()).map(|_| None).collect())
            .collect(),
        got: 0,
        half: Default::default(),
        next_id: 2,
    };
    let want: usize = groups.iter().map(|(_, r)| r.len()).sum();
    while a.got < want {
        let (now, got) = (Instant::now(), a.got);
        if now >= deadline {
            return Err(SessionError::Refused(format!(
                "only {got} of {want} data connections arrived in time"
            )));
        }
        if let Some(why) = abort() {
            return Err(SessionError::Refused(format!(
                "{why} after {got} of {want} data connections"
            )));
        }
        // Silent connections past their time are dropped.
        a.half.retain(|_, c| c.since + HEADER_WAIT > now);
        let wait = deadline
            .saturating_duration_since(now)
            .min(Duration::from_millis(200));
        if let Err(e) = poll.poll(&mut poll_events, Some(wait)) {
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(SessionError::io("accepting data connections: epoll", e));
            }
        }
        for ev in poll_events.iter() {
            match ev.token() {
                LISTEN => loop {
                    match listener.accept() {
                        Ok((s, _)) => a.arrived(poll, s),
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                        Err(e) => return Err(SessionError::io("accepting data connections", e)),
                    }
                },
                mio::Token(id) => a.readable(poll, id),
            }
        }
    }
    Ok(a.slots)
}
