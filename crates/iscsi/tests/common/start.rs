//! Starting one I/O on a session, for the tests that drive the initiator
//! against a target (scripted or tgt).

use iotoll_iscsi::session::{Io, Session};
use iotoll_iscsi::Error;

/// Starts `len` bytes at byte `offset` of `lun` (512-byte blocks) on
/// task `slot`, read into or written from `buf`.
///
/// # Safety
/// `buf` must be valid for `len` bytes until the I/O completes, or the
/// session fails and is not used for it again.
pub unsafe fn start_io(
    s: &mut Session,
    slot: usize,
    lun: u64,
    read: bool,
    offset: u64,
    len: u32,
    buf: *mut u8,
) -> Result<(), Error> {
    let io = Io {
        lun,
        read,
        offset,
        len,
        block: 512,
    };
    // SAFETY: forwarded from the caller.
    unsafe { s.submit_io(slot, io, buf) }
}
