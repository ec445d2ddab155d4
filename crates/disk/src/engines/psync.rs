//! psync: one synchronous pread/pwrite at a time per worker. The baseline
//! engine, and the fallback where io_uring is unavailable.

use super::{Buffers, Engine, IoResult};
use std::fs::File;
use std::io;
use std::os::unix::io::AsRawFd;

pub struct PsyncEngine {
    file: File,
    bufs: Buffers,
    queued: Option<(bool, u64)>,
}

impl PsyncEngine {
    pub fn new(file: File, bs: usize, seed: u64) -> io::Result<Self> {
        Ok(PsyncEngine {
            file,
            bufs: Buffers::new(1, bs, seed)?,
            queued: None,
        })
    }
}

impl Engine for PsyncEngine {
    fn depth(&self) -> usize {
        1
    }

    fn queue(&mut self, _slot: usize, read: bool, offset: u64) -> io::Result<()> {
        self.queued = Some((read, offset));
        Ok(())
    }

    fn submit_and_reap(
        &mut self,
        _min: usize,
        done: &mut dyn FnMut(usize, IoResult),
    ) -> io::Result<()> {
        let Some((read, offset)) = self.queued.take() else {
            return Ok(());
        };
        let fd = self.file.as_raw_fd();
        let (ptr, len) = (self.bufs.slot_ptr(0), self.bufs.size());
        let res = loop {
            // SAFETY: ptr is valid for len bytes for the lifetime of self.bufs.
            let r = unsafe {
                if read {
                    libc::pread(fd, ptr.cast(), len, offset as libc::off_t)
                } else {
                    libc::pwrite(fd, ptr.cast(), len, offset as libc::off_t)
                }
            };
            if r >= 0 {
                break r as i64;
            }
            let err = io::Error::last_os_error();
            if err.raw_os_error() != Some(libc::EINTR) {
                break -(err.raw_os_error().unwrap_or(libc::EIO) as i64);
            }
        };
        done(0, res);
        Ok(())
    }
}
