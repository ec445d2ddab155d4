//! Socket options, TCP_INFO and the file-descriptor limit.

use nix::sys::resource::{getrlimit, setrlimit, Resource};
use socket2::SockRef;
use std::io;
use std::os::fd::AsFd;
use std::os::unix::io::RawFd;

/// SO_SNDBUF and SO_RCVBUF (the kernel doubles the value for bookkeeping and
/// caps it at net.core.[rw]mem_max).
pub fn set_sockbuf(s: &impl AsFd, bytes: u64) -> io::Result<()> {
    let v = bytes.min(i32::MAX as u64) as usize;
    let s = SockRef::from(s);
    s.set_send_buffer_size(v)?;
    s.set_recv_buffer_size(v)
}

/// (total retransmitted segments, smoothed RTT in us) of a TCP socket.
pub fn tcp_info(fd: RawFd) -> Option<(u32, u32)> {
    // socket2 has no TCP_INFO.
    // SAFETY: getsockopt writes at most `len` bytes into the zeroed struct.
    unsafe {
        let mut ti: libc::tcp_info = std::mem::zeroed();
        let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
        let rc = libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut ti as *mut libc::tcp_info).cast(),
            &mut len,
        );
        (rc == 0).then_some((ti.tcpi_total_retrans, ti.tcpi_rtt))
    }
}

/// Bytes written to a TCP socket that the peer has not acknowledged yet
/// (SIOCOUTQ: still in the send buffer, a qdisc or on the wire).
pub fn unacked(fd: RawFd) -> Option<u64> {
    let mut v: libc::c_int = 0;
    // SAFETY: TIOCOUTQ (SIOCOUTQ) writes one int.
    let rc = unsafe { libc::ioctl(fd, libc::TIOCOUTQ, &mut v as *mut libc::c_int) };
    (rc == 0).then_some(v.max(0) as u64)
}

/// Bytes a TCP socket has received that the application has not read yet
/// (SIOCINQ).
pub fn unread(fd: RawFd) -> Option<u64> {
    let mut v: libc::c_int = 0;
    // SAFETY: FIONREAD (SIOCINQ) writes one int.
    let rc = unsafe { libc::ioctl(fd, libc::FIONREAD, &mut v as *mut libc::c_int) };
    (rc == 0).then_some(v.max(0) as u64)
}

#[derive(Debug, thiserror::Error)]
pub enum NofileError {
    #[error("{needed} file descriptors are needed but the hard limit (ulimit -Hn) is {hard}; raise it (e.g. in /etc/security/limits.conf) or use fewer connections")]
    HardLimit { needed: u64, hard: u64 },
    #[error("{call}: {source}")]
    Os {
        call: &'static str,
        source: io::Error,
    },
}

/// Raises RLIMIT_NOFILE so that `needed` descriptors fit; a clear error if
/// the hard limit is too low.
pub fn ensure_nofile(needed: u64) -> Result<(), NofileError> {
    let os = |call| move |source| NofileError::Os { call, source };
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).map_err(|e| os("getrlimit")(e.into()))?;
    if soft >= needed {
        return Ok(());
    }
    if hard < needed {
        return Err(NofileError::HardLimit { needed, hard });
    }
    setrlimit(Resource::RLIMIT_NOFILE, needed, hard).map_err(|e| os("setrlimit")(e.into()))
}

/// Waits up to `timeout` for `fd` to become readable (a listener: for a
/// connection to accept). Signals and timeouts simply return.
pub fn wait_readable(fd: RawFd, timeout: std::time::Duration) {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    unsafe { libc::poll(&mut p, 1, timeout.as_millis().min(i32::MAX as u128) as i32) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::io::AsRawFd;

    #[test]
    fn tcp_info_on_a_real_connection() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (retrans, _rtt) = tcp_info(c.as_raw_fd()).unwrap();
        assert_eq!(retrans, 0);
        assert_eq!(unacked(c.as_raw_fd()), Some(0));
        assert_eq!(unread(c.as_raw_fd()), Some(0));
        set_sockbuf(&c, 256 << 10).unwrap();
        ensure_nofile(64).unwrap();
        assert!(ensure_nofile(u64::MAX).is_err());
    }
}
