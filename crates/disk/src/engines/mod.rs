//! I/O engines behind one small trait, one file each (like fio's ioengine
//! ops): the worker loop queues I/Os on numbered buffer slots and reaps
//! completions; the engine decides how they reach the kernel.

pub mod io_uring;
pub mod iscsi;
pub mod null;
pub mod psync;

use crate::rng::Rng;
use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::fs::File;
use std::io;

/// What a completion carries: bytes transferred, or a negative errno.
pub type IoResult = i64;

/// Told of each completion: `(slot, result)`.
pub type Done<'a> = &'a mut dyn FnMut(usize, IoResult);

/// One I/O as the worker asks for it.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    /// Which of the engine's files (the worker's targets, in order).
    pub file: usize,
    pub read: bool,
    pub offset: u64,
    /// Bytes, at most the buffer size.
    pub len: usize,
}

pub trait Engine {
    /// How many I/Os this engine keeps in flight at most (buffer slots
    /// `0..depth`).
    fn depth(&self) -> usize;
    /// Prepares the I/O `rq` on the buffer of `slot`. An engine whose
    /// `submits_on_queue` is true hands it to the kernel here (io_uring:
    /// one `io_uring_enter` per I/O); the others start it in the next
    /// `submit_and_reap`. The worker takes an I/O's start time just before
    /// the call that submits it, so latency covers the submission itself.
    fn queue(&mut self, slot: usize, rq: Request) -> io::Result<()>;
    /// Hands everything queued and not yet submitted to the kernel in one
    /// go (psync: the `pread`/`pwrite` itself) and waits for
    /// at least `min` completions (0: do not wait); `done(slot, result)` is
    /// called once per completion.
    fn submit_and_reap(&mut self, min: usize, done: Done) -> io::Result<()>;
    /// Whether `queue` hands the I/O to the kernel itself (then its start
    /// time is taken just before `queue`, not before `submit_and_reap`);
    /// fixed for an engine's life.
    fn submits_on_queue(&self) -> bool {
        false
    }
    /// Cancels and reaps every I/O still in flight (bounded wait), before
    /// an error path gives up on the engine; returns how many completions
    /// were reaped. Dropping an engine drains it too: its buffers are never
    /// freed while the kernel may still use them.
    fn drain(&mut self) -> usize {
        0
    }
    /// Why the I/O last completed on `slot` failed, when the engine knows
    /// more than an errno (iSCSI: the SCSI status and sense).
    fn explain(&self, _slot: usize) -> Option<String> {
        None
    }
    /// What the run should know about the engine once it is over (iSCSI:
    /// the target's command window limited the depth).
    fn report(&self) -> Option<String> {
        None
    }
}

/// A target as one worker's engine gets it: an open file or device, or an
/// iSCSI LUN its engine logs in to itself.
#[derive(Debug)]
pub enum Opened {
    File(File),
    Iscsi(iscsi::Lun),
}

/// The files of `opened`, for the engines that take files.
fn files(engine: EngineKind, opened: Vec<Opened>) -> io::Result<Vec<File>> {
    let name = engine.name();
    (opened.into_iter())
        .map(|o| match o {
            Opened::File(f) => Ok(f),
            Opened::Iscsi(l) => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("the {name} engine cannot drive an iSCSI target ({})", l.url),
            )),
        })
        .collect()
}

/// Which engine a worker builds. io_uring needs its ring created on the
/// thread that uses it, so workers construct their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EngineKind {
    IoUring,
    /// io_uring with a kernel thread polling its submission queue
    /// (SQPOLL): for users who can spare a core.
    IoUringSqpoll,
    Psync,
    Null,
    Iscsi,
}

/// What an engine can do, declared by the engine as fio's ioengines
/// declare their flags: the runner, the checks and the output ask these,
/// never an engine's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    /// Keeps many I/Os in flight per worker; false: one synchronous I/O
    /// at a time, whatever `--qd` says.
    pub queued: bool,
    /// The most I/Os one worker can keep in flight, when the engine bounds
    /// it (an io_uring ring's entries).
    pub max_depth: Option<u32>,
    /// Drives `iscsi://` LUNs (true) or local files and devices (false).
    pub iscsi_targets: bool,
}

impl EngineKind {
    /// Every engine: the one list of their names.
    pub const ALL: [EngineKind; 5] = [
        EngineKind::IoUring,
        EngineKind::IoUringSqpoll,
        EngineKind::Psync,
        EngineKind::Null,
        EngineKind::Iscsi,
    ];

    pub fn name(self) -> &'static str {
        match self {
            EngineKind::IoUring => "io_uring",
            EngineKind::IoUringSqpoll => "io_uring_sqpoll",
            EngineKind::Psync => "psync",
            EngineKind::Null => "null",
            EngineKind::Iscsi => "iscsi",
        }
    }

    /// The engine a name (or a spelling users type for it) stands for.
    pub fn from_name(s: &str) -> Option<EngineKind> {
        match s {
            "io-uring" | "iouring" => Some(EngineKind::IoUring),
            "io-uring-sqpoll" | "iouring-sqpoll" => Some(EngineKind::IoUringSqpoll),
            _ => EngineKind::ALL.into_iter().find(|k| k.name() == s),
        }
    }

    pub fn caps(self) -> Caps {
        let (queued, max_depth, iscsi_targets) = match self {
            EngineKind::IoUring | EngineKind::IoUringSqpoll => {
                (true, Some(io_uring::MAX_DEPTH), false)
            }
            EngineKind::Psync => (false, Some(1), false),
            EngineKind::Null => (true, None, false),
            EngineKind::Iscsi => (true, None, true),
        };
        Caps {
            queued,
            max_depth,
            iscsi_targets,
        }
    }

    /// The I/Os a worker with `targets` targets asks to keep in flight:
    /// `qd` on each, or one for a synchronous engine.
    pub fn requested_depth(self, qd: u32, targets: usize) -> u32 {
        match self.caps().queued {
            true => qd.saturating_mul(targets as u32),
            false => 1,
        }
    }

    /// Builds the engine for one worker over its targets: `depth` slots of
    /// `bs` bytes each (the largest transfer). The second value is a note
    /// about how the engine had to adapt (or, for iSCSI, what it negotiated).
    pub fn open(
        self,
        opened: Vec<Opened>,
        depth: usize,
        bs: usize,
        seed: u64,
    ) -> io::Result<(Box<dyn Engine>, Option<String>)> {
        let engine: Box<dyn Engine> = match self {
            EngineKind::Iscsi => {
                let luns = (opened.into_iter())
                    .map(|o| match o {
                        Opened::Iscsi(l) => Ok(l),
                        Opened::File(_) => Err(io::Error::new(
                            io::ErrorKind::InvalidInput,
                            "the iscsi engine drives iscsi:// targets only",
                        )),
                    })
                    .collect::<io::Result<Vec<_>>>()?;
                Box::new(iscsi::IscsiEngine::new(luns, depth, bs, seed)?)
            }
            EngineKind::IoUring | EngineKind::IoUringSqpoll => {
                let files = files(self, opened)?;
                let sqpoll = self == EngineKind::IoUringSqpoll;
                let (e, note) = io_uring::IoUringEngine::new(files, depth, bs, seed, sqpoll)?;
                return Ok((Box::new(e), note));
            }
            EngineKind::Psync => Box::new(psync::PsyncEngine::new(files(self, opened)?, bs, seed)?),
            EngineKind::Null => Box::new(null::NullEngine::on(depth, &files(self, opened)?)),
        };
        Ok((engine, None))
    }
}

/// `slots` I/O buffers of `size` bytes in one page-aligned allocation
/// (O_DIRECT needs aligned memory), filled with random data so writes do
/// not send zeros a device could compress or skip.
pub struct Buffers {
    ptr: *mut u8,
    layout: Layout,
    size: usize,
    slots: usize,
}

// SAFETY: the allocation is owned exclusively; engines hand raw pointers to
// the kernel only while they own the Buffers.
unsafe impl Send for Buffers {}

const BUF_ALIGN: usize = 4096;

impl Buffers {
    pub fn new(slots: usize, size: usize, seed: u64) -> io::Result<Self> {
        let total = slots
            .checked_mul(size)
            .filter(|t| *t > 0)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "buffer size overflow"))?;
        let layout = Layout::from_size_align(total, BUF_ALIGN)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        // SAFETY: layout has a non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        if ptr.is_null() {
            return Err(io::Error::new(
                io::ErrorKind::OutOfMemory,
                "cannot allocate I/O buffers",
            ));
        }
        // SAFETY: ptr is valid for `total` bytes and exclusively ours.
        Rng::new(seed).fill(unsafe { std::slice::from_raw_parts_mut(ptr, total) });
        Ok(Buffers {
            ptr,
            layout,
            size,
            slots,
        })
    }

    pub fn slot_ptr(&self, slot: usize) -> *mut u8 {
        debug_assert!(slot < self.slots);
        // SAFETY: slot < slots, so the offset stays inside the allocation.
        unsafe { self.ptr.add(slot * self.size) }
    }

    pub fn size(&self) -> usize {
        self.size
    }
}

impl Drop for Buffers {
    fn drop(&mut self) {
        // SAFETY: allocated with this layout in `new`.
        unsafe { dealloc(self.ptr, self.layout) }
    }
}
