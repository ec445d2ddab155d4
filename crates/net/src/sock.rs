//! Socket options, TCP_INFO and the file-descriptor limit.

use std::io;
use std::os::unix::io::RawFd;

fn setsockopt_int(fd: RawFd, level: i32, opt: i32, v: i32) -> io::Result<()> {
    // SAFETY: passes a pointer to a live c_int of the stated size.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            opt,
            (&v as *const i32).cast(),
            std::mem::size_of::<i32>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// SO_SNDBUF and SO_RCVBUF (the kernel doubles the value for bookkeeping and
/// caps it at net.core.[rw]mem_max).
pub fn set_sockbuf(fd: RawFd, bytes: u64) -> io::Result<()> {
    let v = bytes.min(i32::MAX as u64) as i32;
    setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUF, v)?;
    setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, v)
}

/// (total retransmitted segments, smoothed RTT in us) of a TCP socket.
pub fn tcp_info(fd: RawFd) -> Option<(u32, u32)> {
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

/// Raises RLIMIT_NOFILE so that `needed` descriptors fit; a clear error if
/// the hard limit is too low.
pub fn ensure_nofile(needed: u64) -> Result<(), String> {
    // SAFETY: get/setrlimit with a valid struct.
    unsafe {
        let mut r: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) != 0 {
            return Err(format!("getrlimit: {}", io::Error::last_os_error()));
        }
        if r.rlim_cur >= needed {
            return Ok(());
        }
        if r.rlim_max < needed {
            return Err(format!(
                "{needed} file descriptors are needed but the hard limit (ulimit -Hn) is {}; raise it (e.g. in /etc/security/limits.conf) or use fewer connections",
                r.rlim_max
            ));
        }
        r.rlim_cur = needed.max(r.rlim_cur);
        if libc::setrlimit(libc::RLIMIT_NOFILE, &r) != 0 {
            return Err(format!("setrlimit: {}", io::Error::last_os_error()));
        }
    }
    Ok(())
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

/// Re-listens with a deep backlog: std's 128 drops SYNs when a thousand
/// connections arrive at once, and each retry costs a second.
pub fn deepen_backlog(fd: RawFd) {
    // SAFETY: listen on a socket that is already listening only resizes the queue.
    unsafe { libc::listen(fd, 8192) };
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
        set_sockbuf(c.as_raw_fd(), 256 << 10).unwrap();
        ensure_nofile(64).unwrap();
        assert!(ensure_nofile(u64::MAX).is_err());
    }
}
