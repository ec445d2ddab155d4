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

/// A TCP socket's TCP_INFO, and how many bytes of it the kernel filled.
fn info(fd: RawFd) -> Option<(libc::tcp_info, usize)> {
    // socket2 has no TCP_INFO.
    // SAFETY: getsockopt writes at most `len` bytes into the zeroed struct
    // (all-zero is a valid tcp_info: it is plain integers).
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
        (rc == 0).then_some((ti, len as usize))
    }
}

/// (total retransmitted segments, smoothed RTT in us) of a TCP socket.
pub fn tcp_info(fd: RawFd) -> Option<(u32, u32)> {
    info(fd).map(|(ti, _)| (ti.tcpi_total_retrans, ti.tcpi_rtt))
}

/// (bytes the peer acknowledged, bytes received) over a TCP socket's life:
/// the kernel's own counters (Linux 4.6+), fresh at the instant they are
/// read, whatever the threads that use the socket are doing.
pub fn tcp_bytes(fd: RawFd) -> Option<(u64, u64)> {
    let (ti, len) = info(fd)?;
    let needed = std::mem::offset_of!(libc::tcp_info, tcpi_bytes_received) + 8;
    (len >= needed).then_some((ti.tcpi_bytes_acked, ti.tcpi_bytes_received))
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
        // The kernel counts what the peer acknowledged (the SYN is its
        // first byte) and what arrived, read or not.
        assert_eq!(tcp_bytes(c.as_raw_fd()), Some((1, 0)));
        let (mut s, _) = l.accept().unwrap();
        let (acked_before, _) = tcp_bytes(s.as_raw_fd()).unwrap();
        std::io::Write::write_all(&mut s, &[7u8; 1000]).unwrap();
        let end = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while tcp_bytes(c.as_raw_fd()).map(|b| b.1) != Some(1000) {
            assert!(std::time::Instant::now() < end, "1000 bytes never arrived");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        while tcp_bytes(s.as_raw_fd()).map(|b| b.0) != Some(acked_before + 1000) {
            assert!(
                std::time::Instant::now() < end,
                "1000 bytes never acknowledged"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        set_sockbuf(&c, 256 << 10).unwrap();
        ensure_nofile(64).unwrap();
        assert!(ensure_nofile(u64::MAX).is_err());
    }
}
