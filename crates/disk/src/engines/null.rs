//! null: completes every I/O at once without touching the target (like
//! fio's engines/null.c). It measures the runner itself, and lets tests run
//! the worker loop without a device.

use super::{Done, Engine, IoResult, Request};
use std::io;

pub struct NullEngine {
    depth: usize,
    /// Queued I/Os: (slot, bytes).
    queued: Vec<(usize, usize)>,
    /// The files' paths, to record which target each I/O was for (paths,
    /// not inodes: a concurrent test's deleted file can lend its inode to
    /// a new one while its I/Os are still in the record).
    #[cfg(test)]
    ids: Vec<std::path::PathBuf>,
}

impl NullEngine {
    pub fn new(depth: usize) -> Self {
        NullEngine {
            depth: depth.max(1),
            queued: Vec::with_capacity(depth),
            #[cfg(test)]
            ids: Vec::new(),
        }
    }

    /// An engine for a worker's files, which it never touches (tests
    /// record which file each I/O was for).
    pub fn on(depth: usize, _files: &[std::fs::File]) -> Self {
        #[allow(unused_mut)]
        let mut e = Self::new(depth);
        #[cfg(test)]
        {
            use std::os::fd::AsRawFd;
            let id = |f: &std::fs::File| {
                std::fs::read_link(format!("/proc/self/fd/{}", f.as_raw_fd())).unwrap_or_default()
            };
            e.ids = _files.iter().map(id).collect();
        }
        e
    }
}

impl Engine for NullEngine {
    fn depth(&self) -> usize {
        self.depth
    }

    fn queue(&mut self, slot: usize, rq: Request) -> io::Result<()> {
        self.queued.push((slot, rq.len));
        #[cfg(test)]
        if let Some(id) = self.ids.get(rq.file) {
            record::push(id.clone(), rq);
        }
        Ok(())
    }

    fn submit_and_reap(&mut self, _min: usize, done: Done) -> io::Result<()> {
        for (slot, len) in self.queued.drain(..) {
            done(slot, len as IoResult);
        }
        Ok(())
    }
}

/// Every I/O the null engines of this test process were asked for, with
/// the path of its file and the thread that asked.
#[cfg(test)]
pub mod record {
    use super::Request;
    use std::sync::Mutex;

    #[derive(Debug, Clone)]
    pub struct Asked {
        pub file: std::path::PathBuf,
        pub thread: String,
        pub rq: Request,
    }

    pub static ASKED: Mutex<Vec<Asked>> = Mutex::new(Vec::new());

    pub(super) fn push(file: std::path::PathBuf, rq: Request) {
        let thread = std::thread::current().name().unwrap_or("").to_string();
        if let Ok(mut v) = ASKED.lock() {
            v.push(Asked { file, thread, rq });
        }
    }
}
