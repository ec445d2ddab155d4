//! One TCP connection to a portal: a non-blocking socket with a reused
//! receive buffer (PDUs are decoded from it in place) and a reused send
//! buffer (PDUs are encoded into it and flushed as the socket takes them).

use crate::pdu::{Bhs, Decoder, Digests, PduError, BHS_LEN, MAX_AHS_LEN};
use crate::Error;
use std::io::{ErrorKind, IoSliceMut, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::ops::Range;
use std::os::unix::io::AsRawFd;
use std::time::{Duration, Instant};

/// Bytes read from the socket per call at most, beyond the PDU in hand:
/// enough for a full window of small Data-In PDUs in one `recv`.
const RX_CHUNK: usize = 256 * 1024;

/// The send buffer takes no new PDU once this much is unsent: what a target
/// asks for waits (commands in the session's queue, Data-Out as a cursor
/// into the I/O buffer), so a target that stops reading or asks for data
/// again and again cannot make it grow. One PDU may go past it, and PDUs
/// the session sends are at most [`MAX_SEGMENT`] of data.
pub const TX_LIMIT: usize = 1 << 20;

/// The largest data segment the session puts in one PDU, whatever the
/// target declares it receives (up to 16 MiB): sending less is always
/// allowed, and it bounds what one PDU adds past [`TX_LIMIT`].
pub const MAX_SEGMENT: u32 = 256 * 1024;

/// A Data-In data segment at least this long is read from the socket
/// straight into the I/O buffer: copying it out of the receive buffer
/// again costs more than the extra `recv` for its header.
pub const DIRECT_MIN: usize = 16 * 1024;

/// While large data segments arrive, the receive buffer takes this much
/// per `recv` at most: the next PDU's header and small PDUs, leaving the
/// next large segment in the socket for its own buffer.
const RX_SMALL: usize = 4096;

/// The part of a data segment still to come, and where it goes.
struct Direct {
    dst: *mut u8,
    left: usize,
}

pub(crate) struct Conn {
    sock: TcpStream,
    pub portal: String,
    rx: Vec<u8>,
    rx_start: usize,
    rx_end: usize,
    pub tx: Vec<u8>,
    tx_pos: usize,
    pub dec: Decoder,
    direct: Option<Direct>,
    /// The last data segment was large: read small, so the next one can
    /// go straight to its buffer too.
    pub large: bool,
}

impl Conn {
    pub fn connect(portal: &str, timeout: Duration) -> Result<Conn, Error> {
        let addrs: Vec<_> = portal
            .to_socket_addrs()
            .map_err(|e| Error::connect(portal, format!("cannot resolve: {e}")))?
            .collect();
        let mut last = None;
        for a in &addrs {
            match TcpStream::connect_timeout(a, timeout) {
                Ok(sock) => {
                    sock.set_nodelay(true)
                        .and_then(|()| sock.set_nonblocking(true))
                        .map_err(|e| Error::connect(portal, e.to_string()))?;
                    return Ok(Conn {
                        sock,
                        portal: portal.to_string(),
                        rx: vec![0; RX_CHUNK + BHS_LEN + MAX_AHS_LEN + 8192 + 8],
                        rx_start: 0,
                        rx_end: 0,
                        tx: Vec::with_capacity(64 * 1024),
                        tx_pos: 0,
                        dec: Decoder {
                            digests: Digests::default(),
                            max_data: 8192,
                        },
                        direct: None,
                        large: false,
                    });
                }
                Err(e) => last = Some(e),
            }
        }
        let why = match last {
            Some(e) if e.kind() == ErrorKind::TimedOut => {
                format!("no answer to the TCP connect within {}", secs(timeout))
            }
            Some(e) if e.kind() == ErrorKind::ConnectionRefused => {
                "connection refused (nothing listens on that port)".to_string()
            }
            Some(e) => e.to_string(),
            None => "the name resolves to no address".to_string(),
        };
        Err(Error::connect(portal, why))
    }

    pub fn fd(&self) -> i32 {
        self.sock.as_raw_fd()
    }

    pub fn wants_write(&self) -> bool {
        self.tx_pos < self.tx.len()
    }

    /// Whether the send buffer takes another PDU: less than [`TX_LIMIT`]
    /// unsent. Sent bytes at its front are dropped once they are at least
    /// half of it, so a socket that takes a little at a time does not make
    /// it grow either (it stays under twice the limit and a PDU), and no
    /// byte is moved more often than one is sent.
    pub fn room(&mut self) -> bool {
        if self.tx.len() >= TX_LIMIT && self.tx_pos >= self.tx.len() / 2 {
            self.tx.drain(..self.tx_pos);
            self.tx_pos = 0;
        }
        self.unsent() < TX_LIMIT
    }

    /// Bytes queued and not yet taken by the socket.
    pub fn unsent(&self) -> usize {
        self.tx.len() - self.tx_pos
    }

    /// Sends what the socket takes without blocking.
    pub fn flush(&mut self) -> std::io::Result<()> {
        while self.tx_pos < self.tx.len() {
            match (&self.sock).write(&self.tx[self.tx_pos..]) {
                Ok(0) => return Err(ErrorKind::WriteZero.into()),
                Ok(n) => self.tx_pos += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        self.tx.clear();
        self.tx_pos = 0;
        Ok(())
    }

    /// Reads what the socket has without blocking; false when nothing was
    /// there. The end of the stream is an error: a target never closes a
    /// connection we did not log out. A data segment being read straight
    /// into its buffer takes the bytes first; what follows it goes to the
    /// receive buffer.
    pub fn fill(&mut self) -> std::io::Result<bool> {
        let need = match self.dec.frame_len(&self.rx[self.rx_start..self.rx_end]) {
            Ok(Some(n)) => n,
            _ => BHS_LEN,
        };
        if self.rx.len() - self.rx_start < need.max(BHS_LEN) + 4096 {
            // Move the partial PDU to the front (or grow, for a PDU larger
            // than the buffer: bounded by the decoder's max_data).
            self.rx.copy_within(self.rx_start..self.rx_end, 0);
            self.rx_end -= self.rx_start;
            self.rx_start = 0;
            if self.rx.len() < need + 4096 {
                self.rx.resize(need + RX_CHUNK, 0);
            }
        }
        let room = if self.large || self.direct.is_some() {
            (self.rx.len() - self.rx_end).min(RX_SMALL)
        } else {
            self.rx.len() - self.rx_end
        };
        let rx = &mut self.rx[self.rx_end..self.rx_end + room];
        loop {
            let r = match &self.direct {
                // SAFETY: `dst` is valid for `left` bytes (`read_into`'s
                // contract), and nothing else refers to them meanwhile.
                Some(d) => (&self.sock).read_vectored(&mut [
                    IoSliceMut::new(unsafe { std::slice::from_raw_parts_mut(d.dst, d.left) }),
                    IoSliceMut::new(rx),
                ]),
                None => (&self.sock).read(rx),
            };
            match r {
                Ok(0) => return Err(ErrorKind::UnexpectedEof.into()),
                Ok(mut n) => {
                    if let Some(d) = &mut self.direct {
                        let k = n.min(d.left);
                        // SAFETY: k <= left, inside the buffer.
                        d.dst = unsafe { d.dst.add(k) };
                        d.left -= k;
                        n -= k;
                        if d.left == 0 {
                            self.direct = None;
                        }
                    }
                    self.rx_end += n;
                    return Ok(true);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// The header of the PDU at the front of the receive buffer when its
    /// data segment is not all in yet: the header, the header's length
    /// (with AHS and digest) and the whole PDU's.
    pub fn header(&self) -> Result<Option<(Bhs, usize, usize)>, PduError> {
        let buf = &self.rx[self.rx_start..self.rx_end];
        let Some(total) = self.dec.frame_len(buf)? else {
            return Ok(None);
        };
        let bhs = Bhs::at(buf);
        let digest = if self.dec.digests.header { 4 } else { 0 };
        let hdr = BHS_LEN + bhs.ahs_len() + digest;
        // frame_len checks the header digest once it is in: wait for it.
        Ok((buf.len() >= hdr && buf.len() < total).then_some((bhs, hdr, total)))
    }

    /// Takes the PDU at the front (whose header is `hdr` bytes) as one
    /// whose `n`-byte data segment goes to `dst`: the part already received
    /// is copied there now, the rest `fill` reads into place. Its padding
    /// and digest stay in the receive buffer. Returns the bytes copied.
    ///
    /// # Safety
    /// `dst` must be valid for writes of `n` bytes, and not otherwise used,
    /// until [`Conn::direct_left`] is 0 or the connection is dropped.
    pub unsafe fn read_into(&mut self, hdr: usize, dst: *mut u8, n: usize) -> usize {
        self.consume(hdr);
        let have = (self.rx_end - self.rx_start).min(n);
        // SAFETY: `have` <= n bytes, from the receive buffer into `dst`
        // (the caller's contract); the two do not overlap.
        unsafe {
            std::ptr::copy_nonoverlapping(self.rx[self.rx_start..].as_ptr(), dst, have);
        }
        self.consume(have);
        self.large = true;
        self.direct = (have < n).then(|| Direct {
            // SAFETY: have < n, inside the caller's buffer.
            dst: unsafe { dst.add(have) },
            left: n - have,
        });
        have
    }

    /// Bytes of the data segment being read into place still to come.
    pub fn direct_left(&self) -> usize {
        self.direct.as_ref().map_or(0, |d| d.left)
    }

    /// The next whole PDU in the receive buffer: its header and where its
    /// data segment lies in `rx()`. It stays there until `consume`.
    pub fn next_pdu(&mut self) -> Result<Option<(Bhs, Range<usize>, usize)>, PduError> {
        let buf = &self.rx[self.rx_start..self.rx_end];
        match self.dec.decode(buf)? {
            None => Ok(None),
            Some((pdu, n)) => {
                let off = pdu.data.as_ptr() as usize - buf.as_ptr() as usize + self.rx_start;
                Ok(Some((pdu.bhs, off..off + pdu.data.len(), n)))
            }
        }
    }

    pub fn rx(&self) -> &[u8] {
        &self.rx
    }

    /// What is received and not yet consumed.
    pub fn received(&self) -> &[u8] {
        &self.rx[self.rx_start..self.rx_end]
    }

    pub fn consume(&mut self, n: usize) {
        self.rx_start += n;
        if self.rx_start == self.rx_end {
            self.rx_start = 0;
            self.rx_end = 0;
        }
    }

    /// Waits until the socket is readable (or writable, while there is
    /// something to send) or `until`; false on timeout.
    pub fn wait(&self, until: Instant) -> std::io::Result<bool> {
        let mut p = [pollfd(self.fd(), true, self.wants_write())];
        poll(&mut p, until).map(|n| n > 0)
    }
}

/// A pollfd for `fd`: readable when `read` (a session that stopped reading
/// until its send buffer drains waits for POLLOUT only), writable when
/// `write`.
pub(crate) fn pollfd(fd: i32, read: bool, write: bool) -> libc::pollfd {
    libc::pollfd {
        fd,
        events: (i16::from(read) * libc::POLLIN) | (i16::from(write) * libc::POLLOUT),
        revents: 0,
    }
}

/// poll(2) until `until`, retried on EINTR; the number of ready fds.
pub(crate) fn poll(fds: &mut [libc::pollfd], until: Instant) -> std::io::Result<usize> {
    loop {
        let left = until.saturating_duration_since(Instant::now());
        let ms = left.as_millis().min(i32::MAX as u128) as i32;
        let ms = if ms == 0 && !left.is_zero() { 1 } else { ms };
        // SAFETY: fds is a valid slice of pollfd for its length.
        let rc = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
        if rc >= 0 {
            return Ok(rc as usize);
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

pub(crate) fn secs(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}
