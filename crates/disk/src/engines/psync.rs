//! psync: one synchronous pread/pwrite at a time per worker. The baseline
//! engine, and the fallback where io_uring is unavailable.

use super::{Buffers, Done, Engine, Request};
use std::fs::File;
use std::io;
use std::os::unix::io::AsRawFd;

pub struct PsyncEngine {
    files: Vec<File>,
    bufs: Buffers,
    queued: Option<Request>,
}

impl PsyncEngine {
    pub fn new(files: Vec<File>, bs: usize, seed: u64) -> io::Result<Self> {
        Ok(PsyncEngine {
            files,
            bufs: Buffers::new(1, bs, seed)?,
            queued: None,
        })
    }
}

impl Engine for PsyncEngine {
    fn depth(&self) -> usize {
        1
    }

    fn queue(&mut self, _slot: usize, rq: Request) -> io::Result<()> {
        if rq.file >= self.files.len() || rq.len > self.bufs.size() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("no file {} or more than a buffer: {rq:?}", rq.file),
            ));
        }
        self.queued = Some(rq);
        Ok(())
    }

    fn submit_and_reap(&mut self, _min: usize, done: Done) -> io::Result<()> {
        let Some(Request {
            file,
            read,
            offset,
            len,
        }) = self.queued.take()
        else {
            return Ok(());
        };
        let fd = self.files[file].as_raw_fd();
        let ptr = self.bufs.slot_ptr(0);
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
