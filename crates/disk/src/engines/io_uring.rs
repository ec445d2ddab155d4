//! io_uring: keeps QD I/Os in flight per worker from one ring, with the
//! file and buffers registered once so the hot path neither allocates nor
//! takes per-I/O file references.
//!
//! The kernel writes into (reads) and reads from (writes) the buffers of
//! I/Os in flight until it posts their completions, so the engine never
//! frees its buffers with I/Os in flight: dropping it (also on an error
//! path) cancels them and reaps every completion, waiting at most
//! `DRAIN_BOUND`; I/Os still not completed then (a hung device) keep their
//! buffers, which are leaked rather than freed under the kernel.

use super::{Buffers, Done, Engine, Request};
use io_uring::{opcode, squeue, types, IoUring};
use std::fs::File;
use std::io;
use std::mem::ManuallyDrop;
use std::os::unix::io::AsRawFd;
use std::time::{Duration, Instant};

/// The most entries an io_uring submission queue can have
/// (IORING_MAX_ENTRIES): the deepest queue this engine keeps.
pub const MAX_DEPTH: u32 = 32_768;

/// How long dropping the engine waits for its in-flight I/Os.
pub const DRAIN_BOUND: Duration = Duration::from_secs(30);

/// user_data of the engine's own requests (cancels, timeouts); I/Os carry
/// their slot number.
const CANCEL_TAG: u64 = u64::MAX;
const TIMEOUT_TAG: u64 = u64::MAX - 1;

pub struct IoUringEngine {
    ring: IoUring,
    bufs: ManuallyDrop<Buffers>,
    depth: usize,
    fixed_bufs: bool,
    /// Which slots have an I/O queued or in flight (its completion not yet
    /// reaped), and how many.
    busy: Vec<bool>,
    in_flight: usize,
    #[cfg(test)]
    fault: Option<test_fault::Fault>,
    // Keeps the registered descriptors open.
    _files: Vec<File>,
}

/// Builds the ring: with deferred task work (single issuer, 6.1+; a
/// plain ring where the kernel lacks it), completions are run when the
/// worker waits for them, not by interrupting it. With `sqpoll`, a kernel
/// thread polls the submission queue instead, and no fallback: it was
/// asked for by name.
fn build_ring(entries: u32, sqpoll: bool) -> io::Result<IoUring> {
    if sqpoll {
        // The poller sleeps after 1 s without I/O; the worker wakes it then.
        return IoUring::builder()
            .setup_sqpoll(1000)
            .build(entries)
            .map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("a submission-queue polling thread (SQPOLL) cannot be set up: {e}"),
                )
            });
    }
    IoUring::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .build(entries)
        .or_else(|_| IoUring::builder().build(entries))
}

/// Whether this kernel lets us create a ring at all (seccomp, sysctl
/// kernel.io_uring_disabled, or an old kernel may not).
pub fn probe() -> Result<(), String> {
    IoUring::new(2).map(|_| ()).map_err(|e| e.to_string())
}

impl IoUringEngine {
    pub fn new(
        files: Vec<File>,
        qd: usize,
        bs: usize,
        seed: u64,
        sqpoll: bool,
    ) -> io::Result<(Self, Option<String>)> {
        if qd == 0 || qd > MAX_DEPTH as usize {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "a queue depth of {qd} is outside 1-{MAX_DEPTH}, what an io_uring ring holds"
                ),
            ));
        }
        let bufs = Buffers::new(qd, bs, seed)?;
        let entries = (qd as u32).next_power_of_two().max(2);
        let ring = build_ring(entries, sqpoll)?;
        let fds: Vec<i32> = files.iter().map(AsRawFd::as_raw_fd).collect();
        ring.submitter().register_files(&fds)?;
        let iovecs: Vec<libc::iovec> = (0..qd)
            .map(|s| libc::iovec {
                iov_base: bufs.slot_ptr(s).cast(),
                iov_len: bs,
            })
            .collect();
        // Registered buffers are pinned and count against RLIMIT_MEMLOCK for
        // unprivileged users; without them every I/O maps its buffer anew.
        // SAFETY: the iovecs point into `bufs`, which lives as long as the ring.
        let fixed_bufs = qd <= u16::MAX as usize
            && unsafe { ring.submitter().register_buffers(&iovecs) }.is_ok();
        let mut notes = Vec::new();
        if !fixed_bufs {
            notes.push("io_uring: I/O buffers could not be registered (RLIMIT_MEMLOCK?); each I/O maps its buffer, which costs some CPU");
        }
        if sqpoll {
            notes.push("io_uring_sqpoll: a kernel thread per worker polls the submission queue (it sleeps after 1 s without I/O); it keeps a CPU busy, and that CPU is in the whole-host figures");
        }
        let note = (!notes.is_empty()).then(|| notes.join("; "));
        #[cfg(test)]
        let fault = files.first().and_then(test_fault::lookup);
        let engine = IoUringEngine {
            ring,
            bufs: ManuallyDrop::new(bufs),
            depth: qd,
            fixed_bufs,
            busy: vec![false; qd],
            in_flight: 0,
            #[cfg(test)]
            fault,
            _files: files,
        };
        Ok((engine, note))
    }

    /// I/Os queued or in flight whose completions were not reaped yet.
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Pushes one of the engine's own requests, submitting first if the
    /// queue is full. False if it cannot be queued.
    fn push_own(&mut self, e: &squeue::Entry) -> bool {
        // SAFETY: cancel requests carry no buffer; a timeout's timespec is
        // copied by the kernel when the request is submitted, which the
        // caller does before the timespec goes out of scope.
        if unsafe { self.ring.submission().push(e) }.is_ok() {
            return true;
        }
        if self.submit_now().is_err() {
            return false;
        }
        // SAFETY: as above.
        unsafe { self.ring.submission().push(e) }.is_ok()
    }

    /// Reaps every completion posted; returns how many were I/Os.
    fn reap_posted(&mut self, done: Done) -> usize {
        let mut n = 0;
        let mut cq = self.ring.completion();
        cq.sync();
        for cqe in &mut cq {
            let slot = cqe.user_data();
            if slot < self.depth as u64 && self.busy[slot as usize] {
                self.busy[slot as usize] = false;
                self.in_flight -= 1;
                n += 1;
                done(slot as usize, cqe.result() as i64);
            }
        }
        n
    }

    /// Cancels every I/O in flight and reaps their completions (cancelled,
    /// failed or done), waiting at most `bound`. Returns how many I/O
    /// completions were reaped; `in_flight()` is 0 afterwards unless the
    /// bound passed first.
    pub fn drain(&mut self, bound: Duration) -> usize {
        let deadline = Instant::now() + bound;
        let ts = types::Timespec::new().nsec(50_000_000);
        let mut reaped = self.reap_posted(&mut |_, _| {});
        let mut cancelled = false;
        while self.in_flight > 0 && Instant::now() < deadline {
            if !cancelled {
                // Queued but not yet submitted I/Os are submitted with the
                // cancels; they are cancelled or complete like the others.
                let slots: Vec<usize> = (0..self.depth).filter(|s| self.busy[*s]).collect();
                for s in slots {
                    let c = opcode::AsyncCancel::new(s as u64)
                        .build()
                        .user_data(CANCEL_TAG);
                    if !self.push_own(&c) {
                        break;
                    }
                }
                cancelled = true;
            }
            // Wakes the wait below even if nothing completes.
            let t = opcode::Timeout::new(&ts).build().user_data(TIMEOUT_TAG);
            if !self.push_own(&t) {
                break;
            }
            if let Err(e) = self.ring.submit_and_wait(1) {
                // Other than these, the ring cannot be entered any more:
                // nothing to wait with.
                if !matches!(
                    e.raw_os_error(),
                    Some(libc::EINTR | libc::EBUSY | libc::EAGAIN)
                ) {
                    break;
                }
            }
            reaped += self.reap_posted(&mut |_, _| {});
        }
        reaped
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

    fn sqe(&self, slot: usize, rq: Request) -> squeue::Entry {
        let Request {
            file, read, offset, ..
        } = rq;
        let ptr = self.bufs.slot_ptr(slot);
        let len = rq.len as u32;
        let fd = types::Fixed(file as u32);
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
    fn depth(&self) -> usize {
        self.depth
    }

    fn queue(&mut self, slot: usize, rq: Request) -> io::Result<()> {
        if self.busy.get(slot) != Some(&false)
            || rq.file >= self._files.len()
            || rq.len > self.bufs.size()
        {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("slot {slot} is in use or out of range, or a bad request {rq:?}"),
            ));
        }
        let e = self.sqe(slot, rq);
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
        self.busy[slot] = true;
        self.in_flight += 1;
        // Each I/O goes to the kernel at once with its own io_uring_enter
        // (with SQPOLL: only a wake-up of the poller when it sleeps), as
        // fio does by default: on virtio-blk this gave 1.2x the IOPS of one
        // call submitting every refill (BENCHMARKS.md, issue 27 §1).
        self.submit_now()
    }

    fn submits_on_queue(&self) -> bool {
        true
    }

    fn submit_and_reap(&mut self, min: usize, done: Done) -> io::Result<()> {
        #[cfg(test)]
        if let Some(e) = test_fault::fire(&mut self.fault) {
            // Hand the queued I/Os to the kernel, then fail as a real
            // io_uring_enter error would: they are in flight.
            let _ = self.ring.submit();
            return Err(e);
        }
        loop {
            match self.ring.submit_and_wait(min) {
                Ok(_) => break,
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                // EBUSY: the completion queue is full; reap below, then retry.
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => break,
                Err(e) => return Err(e),
            }
        }
        self.reap_posted(done);
        Ok(())
    }

    fn drain(&mut self) -> usize {
        IoUringEngine::drain(self, DRAIN_BOUND)
    }
}

impl Drop for IoUringEngine {
    fn drop(&mut self) {
        let drained = self.drain(DRAIN_BOUND);
        #[cfg(test)]
        test_fault::record_drop(&self.fault, drained, self.in_flight);
        let _ = drained;
        if self.in_flight == 0 {
            // SAFETY: no I/O is in flight, so the kernel holds no reference
            // to the buffers any more; they are dropped exactly once.
            unsafe { ManuallyDrop::drop(&mut self.bufs) };
        }
        // Otherwise the buffers are leaked: the kernel may still complete
        // into them after the ring is closed.
    }
}

/// Test-only failure injection: an engine opened on a file registered here
/// fails its `submit_and_reap` after a number of calls, with its queued
/// I/Os handed to the kernel first, and records what its drop drained.
#[cfg(test)]
pub mod test_fault {
    use std::fs::File;
    use std::io;
    use std::os::unix::fs::MetadataExt;
    use std::sync::Mutex;

    #[derive(Debug, Clone)]
    pub struct Fault {
        pub dev_ino: (u64, u64),
        /// Calls of submit_and_reap that succeed before the failure.
        pub after: u32,
        pub errno: i32,
    }

    /// Armed faults, and (file, drained, left in flight) per dropped engine.
    static FAULTS: Mutex<Vec<Fault>> = Mutex::new(Vec::new());
    /// A dropped engine: its file, I/Os drained, I/Os left in flight.
    type Dropped = ((u64, u64), usize, usize);
    static DROPS: Mutex<Vec<Dropped>> = Mutex::new(Vec::new());

    fn id(f: &File) -> Option<(u64, u64)> {
        f.metadata().ok().map(|m| (m.dev(), m.ino()))
    }

    pub fn arm(file: &File, after: u32, errno: i32) {
        let dev_ino = id(file).expect("stat");
        FAULTS.lock().unwrap().push(Fault {
            dev_ino,
            after,
            errno,
        });
    }

    pub fn lookup(file: &File) -> Option<Fault> {
        let id = id(file)?;
        let faults = FAULTS.lock().unwrap();
        faults.iter().find(|f| f.dev_ino == id).cloned()
    }

    pub fn fire(f: &mut Option<Fault>) -> Option<io::Error> {
        let f = f.as_mut()?;
        if f.after == 0 {
            return Some(io::Error::from_raw_os_error(f.errno));
        }
        f.after -= 1;
        None
    }

    pub fn record_drop(f: &Option<Fault>, drained: usize, left: usize) {
        if let Some(f) = f {
            DROPS.lock().unwrap().push((f.dev_ino, drained, left));
        }
    }

    /// (drained, left in flight) of every dropped engine opened on `file`.
    pub fn drops(file: &File) -> Vec<(usize, usize)> {
        let id = id(file).expect("stat");
        let drops = DROPS.lock().unwrap();
        drops
            .iter()
            .filter(|d| d.0 == id)
            .map(|d| (d.1, d.2))
            .collect()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::fd::{FromRawFd, OwnedFd};

    /// A pipe: (read end as a File, write end).
    fn pipe() -> (File, File) {
        let mut fds = [0; 2];
        // SAFETY: fds has room for the two descriptors pipe2 writes.
        assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
        // SAFETY: both descriptors were just created and are ours alone.
        unsafe {
            (
                File::from(OwnedFd::from_raw_fd(fds[0])),
                File::from(OwnedFd::from_raw_fd(fds[1])),
            )
        }
    }

    /// Whether io_uring can be tested here; without it a test is skipped,
    /// except in CI.
    pub(crate) fn ring_or_skip() -> bool {
        match probe() {
            Ok(()) => true,
            Err(e) if std::env::var_os("CI").is_some() => panic!("io_uring unavailable in CI: {e}"),
            Err(e) => {
                eprintln!("io_uring unavailable here ({e}); test skipped");
                false
            }
        }
    }

    /// Reads from an empty pipe stay in flight until cancelled: `drain`
    /// cancels every one and reaps its completion, and none of them is
    /// left to consume data written afterwards.
    #[test]
    fn drain_cancels_and_reaps_every_io_in_flight() {
        if !ring_or_skip() {
            return;
        }
        let (r, mut w) = pipe();
        let (mut e, _) =
            IoUringEngine::new(vec![r.try_clone().unwrap()], 4, 4096, 1, false).unwrap();
        for slot in 0..4 {
            e.queue(slot, read_at_0(4096)).unwrap();
        }
        let mut early = 0;
        e.submit_and_reap(0, &mut |_, _| early += 1).unwrap();
        assert_eq!(early, 0, "nothing to read yet");
        assert_eq!(e.in_flight(), 4);
        let reaped = e.drain(Duration::from_secs(30));
        assert_eq!(reaped, 4);
        assert_eq!(e.in_flight(), 0);
        // No read is left pending in the kernel: the data stays in the pipe.
        w.write_all(b"still here").unwrap();
        drop(w);
        drop(e);
        let mut got = String::new();
        (&r).read_to_string(&mut got).unwrap();
        assert_eq!(got, "still here");
    }

    /// The error path of issue 9: `submit_and_reap` fails with I/Os in
    /// flight and the worker gives up on the engine; dropping it drains
    /// them before the buffers are freed (before, the ring was closed and
    /// the buffers freed with the reads still pending).
    #[test]
    fn dropping_after_a_failed_submit_drains_first() {
        if !ring_or_skip() {
            return;
        }
        let (r, mut w) = pipe();
        test_fault::arm(&r, 0, libc::EIO);
        let (mut e, _) =
            IoUringEngine::new(vec![r.try_clone().unwrap()], 8, 512, 1, false).unwrap();
        for slot in 0..8 {
            e.queue(slot, read_at_0(512)).unwrap();
        }
        let err = e.submit_and_reap(1, &mut |_, _| {}).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EIO));
        assert_eq!(e.in_flight(), 8);
        drop(e);
        assert_eq!(test_fault::drops(&r), vec![(8, 0)], "(drained, left)");
        w.write_all(b"x").unwrap();
        drop(w);
        let mut got = Vec::new();
        (&r).read_to_end(&mut got).unwrap();
        assert_eq!(got, b"x");
    }

    /// Each I/O reaches the kernel in `queue`, not later: nothing is left
    /// in the submission queue, and the worker stamps it before `queue`.
    #[test]
    fn queue_submits_each_io_at_once() {
        if !ring_or_skip() {
            return;
        }
        let (r, mut w) = pipe();
        let (mut e, _) =
            IoUringEngine::new(vec![r.try_clone().unwrap()], 4, 512, 1, false).unwrap();
        assert!(e.submits_on_queue());
        for slot in 0..4 {
            e.queue(slot, read_at_0(512)).unwrap();
            assert!(
                e.ring.submission().is_empty(),
                "slot {slot} not submitted by queue"
            );
        }
        assert_eq!(e.in_flight(), 4);
        w.write_all(&[7; 512]).unwrap();
        let mut got = Vec::new();
        e.submit_and_reap(1, &mut |slot, res| got.push((slot, res)))
            .unwrap();
        assert_eq!(got.len(), 1, "one pipe write completes one read: {got:?}");
        assert_eq!(got[0].1, 512);
    }

    fn read_at_0(len: usize) -> Request {
        Request {
            file: 0,
            read: true,
            offset: 0,
            len,
        }
    }

    #[test]
    fn depth_beyond_the_ring_is_refused() {
        if !ring_or_skip() {
            return;
        }
        let (r, _w) = pipe();
        let err = IoUringEngine::new(vec![r], MAX_DEPTH as usize + 1, 512, 1, false)
            .err()
            .unwrap();
        assert!(err.to_string().contains("32768"), "{err}");
    }
}
