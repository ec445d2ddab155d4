//! null: completes every I/O at once without touching the target (like
//! fio's engines/null.c). It measures the runner itself, and lets tests run
//! the worker loop without a device.

use super::{Engine, IoResult};
use std::io;

pub struct NullEngine {
    depth: usize,
    bs: usize,
    queued: Vec<usize>,
}

impl NullEngine {
    pub fn new(qd: usize, bs: usize) -> Self {
        NullEngine {
            depth: qd.max(1),
            bs,
            queued: Vec::with_capacity(qd),
        }
    }
}

impl Engine for NullEngine {
    fn depth(&self) -> usize {
        self.depth
    }

    fn queue(&mut self, slot: usize, _read: bool, _offset: u64) -> io::Result<()> {
        self.queued.push(slot);
        Ok(())
    }

    fn submit_and_reap(
        &mut self,
        _min: usize,
        done: &mut dyn FnMut(usize, IoResult),
    ) -> io::Result<()> {
        for slot in self.queued.drain(..) {
            done(slot, self.bs as IoResult);
        }
        Ok(())
    }
}
