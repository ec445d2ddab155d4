//! io_uring: keeps QD I/Os in flight per worker from one ring, with the
//! file and buffers registered once so the hot path neither allocates nor
//! takes per-I/O file references.

use super::{Buffers, Engine, IoResult};
use io_uring::{opcode, squeue, types, IoUring};
use std::fs::File;
use std::io;
use std::os::unix::io::AsRawFd;

pub struct IoUringEngine {
    ring: IoUring,
    bufs: Buffers,
    depth: usize,
    fixed_bufs: bool,
    // Keeps the registered descriptor open.
    _file: File,
}

/// Builds a ring with the cheapest completion mode the kernel offers:
/// single issuer + deferred task work (6.1+) means completions are run when
/// we ask for them, not by interrupting the worker.
fn build_ring(entries: u32) -> io::Result<IoUring> {
    let fast = IoUring::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .build(entries);
    match fast {
        Ok(r) => Ok(r),
        Err(_) => IoUring::builder().build(entries),
    }
}

/// Whether this kernel lets us create a ring at all (seccomp, sysctl
/// kernel.io_uring_disabled, or an old kernel may not).
pub fn probe() -> Result<(), String> {
    IoUring::new(2).map(|_| ()).map_err(|e| e.to_string())
}

impl IoUringEngine {
    pub fn new(file: File, qd: usize, bs: usize, seed: u64) -> io::Result<(Self, Option<String>)> {
        let bufs = Buffers::new(qd, bs, seed)?;
        let entries = (qd as u32).next_power_of_two().max(2);
        let ring = build_ring(entries)?;
        ring.submitter().register_files(&[file.as_raw_fd()])?;
        let iovecs: Vec<libc::iovec> = (0..qd)
            .map(|s| libc::iovec {
                iov_base: bufs.slot_ptr(s).cast(),
                iov_len: bs,
            })
            .collect();
        let mut note = None;
        // Registered buffers are pinned and count against RLIMIT_MEMLOCK for
        // unprivileged users; without them every I/O maps its buffer anew.
        // SAFETY: the iovecs point into `bufs`, which lives as long as the ring.
        let fixed_bufs = qd <= u16::MAX as usize
            && unsafe { ring.submitter().register_buffers(&iovecs) }.is_ok();
        if !fixed_bufs {
            note = Some("io_uring: I/O buffers could not be registered (RLIMIT_MEMLOCK?); each I/O maps its buffer, which costs some CPU".to_string());
        }
        Ok((
            IoUringEngine {
                ring,
                bufs,
                depth: qd,
                fixed_bufs,
                _file: file,
            },
            note,
        ))
    }

    fn submit_now(&mut self) -> io::Result<()> {
        loop {
            match self.ring.submit() {
                Ok(_) => return Ok(()),
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                // EBUSY/EAGAIN: completions must be reaped first; the next
                // submit_and_reap submits what is still queued.
                Err(e) if matches!(e.raw_os_error(), Some(libc::EBUSY) | Some(libc::EAGAIN)) => {
                    return Ok(())
                }
                Err(e) => return Err(e),
            }
        }
    }

    fn sqe(&self, slot: usize, read: bool, offset: u64) -> squeue::Entry {
        let ptr = self.bufs.slot_ptr(slot);
        let len = self.bufs.size() as u32;
        let fd = types::Fixed(0);
        let e = match (read, self.fixed_bufs) {
            (true, true) => opcode::ReadFixed::new(fd, ptr, len, slot as u16)
                .offset(offset)
                .build(),
            (false, true) => opcode::WriteFixed::new(fd, ptr, len, slot as u16)
                .offset(offset)
                .build(),
            (true, false) => opcode::Read::new(fd, ptr, len).offset(offset).build(),
            (false, false) => opcode::Write::new(fd, ptr, len).offset(offset).build(),
        };
        e.user_data(slot as u64)
    }
}

impl Engine for IoUringEngine {
    fn name(&self) -> &'static str {
        "io_uring"
    }

    fn depth(&self) -> usize {
        self.depth
    }

    fn queue(&mut self, slot: usize, read: bool, offset: u64) -> io::Result<()> {
        let e = self.sqe(slot, read, offset);
        // SAFETY: the buffer of `slot` stays allocated and untouched until its
        // completion is reaped (the worker only reuses a slot after `done`).
        let pushed = unsafe { self.ring.submission().push(&e) };
        if pushed.is_err() {
            // The queue holds at least `depth` entries and at most `depth` are
            // outstanding, so this means some were not submitted yet.
            self.submit_now()?;
            // SAFETY: as above.
            unsafe { self.ring.submission().push(&e) }
                .map_err(|_| io::Error::other("io_uring submission queue full"))?;
        }
        Ok(())
    }

    fn submit_and_reap(
        &mut self,
        min: usize,
        done: &mut dyn FnMut(usize, IoResult),
    ) -> io::Result<()> {
        loop {
            match self.ring.submit_and_wait(min) {
                Ok(_) => break,
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                // EBUSY: the completion queue is full; reap below, then retry.
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => break,
                Err(e) => return Err(e),
            }
        }
        for cqe in self.ring.completion() {
            done(cqe.user_data() as usize, cqe.result() as i64);
        }
        Ok(())
    }
}
