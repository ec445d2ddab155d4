//! Targets: a test file iotoll creates (and fills with non-repeating data,
//! like Iometer's iobw.tst), or an existing file or block device, which may
//! only be written with `--allow-destructive`.

use crate::pattern::Region;
use crate::rng::Rng;
use crate::spec::{DiskRequest, DEFAULT_TEST_FILE_SIZE};
use crate::DiskError;
use std::ffi::{CString, OsString};
use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::os::unix::io::{AsRawFd, FromRawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

type Result<T, E = DiskError> = std::result::Result<T, E>;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TargetKind {
    /// A temporary test file, removed afterwards.
    TempFile,
    /// A test file created at the user's path with `--create`.
    CreatedFile,
    ExistingFile,
    BlockDevice,
    /// A LUN behind an `iscsi://` URL, driven by iotoll's own initiator.
    IscsiLun,
}

impl TargetKind {
    fn created(self) -> bool {
        matches!(self, TargetKind::TempFile | TargetKind::CreatedFile)
    }
}

/// A prepared target.
#[derive(Debug)]
pub struct Target {
    pub path: PathBuf,
    pub kind: TargetKind,
    pub region: Region,
    /// Size of the file or device in bytes.
    pub size: u64,
    pub logical_block: u64,
    /// Offset alignment of each access-spec line.
    pub aligns: Vec<u64>,
    pub direct: bool,
    /// A test file iotoll created is removed when the target is dropped
    /// (unless kept), whatever happened in between.
    _remove: RemoveGuard,
    /// The one descriptor of the file or device (None: an iSCSI LUN),
    /// opened once at prepare and checked there; every worker gets a
    /// duplicate of it, never a fresh open by name, so a path swapped for
    /// a symlink after the check changes nothing. A block device that will
    /// be written is opened O_EXCL: the kernel refuses it while mounted or
    /// claimed, and the claim holds for as long as the target lives.
    file: Option<File>,
    /// The device and inode that descriptor is.
    pub id: Option<(u64, u64)>,
    /// An iSCSI LUN: how to reach it and what its probe session found.
    pub iscsi: Option<IscsiProbe>,
}

/// What the probe session of an iSCSI target found, for the engine and
/// the disclosure.
#[derive(Debug, Clone)]
pub struct IscsiProbe {
    pub lun: crate::engines::iscsi::Lun,
    pub session: iotoll_iscsi::SessionInfo,
    pub inquiry: iotoll_iscsi::scsi::Inquiry,
    pub capacity: iotoll_iscsi::scsi::Capacity,
}

/// Removes a (half-made) test file unless disarmed.
#[derive(Debug)]
struct RemoveGuard(Option<PathBuf>);

impl Drop for RemoveGuard {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = std::fs::remove_file(p);
        }
    }
}

// _IOR(0x12, 114, size_t) on 64-bit Linux.
const BLKGETSIZE64: libc::c_ulong = 0x8008_1272;

fn block_device_geometry(f: &File) -> std::io::Result<(u64, u64)> {
    let mut size: u64 = 0;
    let mut lbs: libc::c_int = 0;
    // SAFETY: both ioctls write one integer of the type passed.
    unsafe {
        if libc::ioctl(f.as_raw_fd(), BLKGETSIZE64 as _, &mut size) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if libc::ioctl(f.as_raw_fd(), libc::BLKSSZGET as _, &mut lbs) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok((size, lbs.max(1) as u64))
}

/// The O_DIRECT offset alignment the kernel states for a file (statx
/// STATX_DIOALIGN, Linux 6.1+), else 512: the smallest logical block size.
fn file_dio_align(f: &File) -> u64 {
    // SAFETY: statx writes into the zeroed struct; the empty path with
    // AT_EMPTY_PATH refers to the descriptor itself.
    unsafe {
        let mut sx: libc::statx = std::mem::zeroed();
        let rc = libc::statx(
            f.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            libc::STATX_DIOALIGN,
            &mut sx,
        );
        if rc == 0 && sx.stx_mask & libc::STATX_DIOALIGN != 0 && sx.stx_dio_offset_align > 0 {
            return sx.stx_dio_offset_align as u64;
        }
    }
    512
}

/// The error of an I/O call on the target at `path`.
fn io_err(path: &Path) -> impl Fn(std::io::Error) -> DiskError + '_ {
    move |e| DiskError::target(path, io_err_msg(&e))
}

/// A path's directory: "." for a bare name.
fn parent_dir(p: &Path) -> &Path {
    p.parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

fn io_err_msg(e: &std::io::Error) -> String {
    match e.kind() {
        ErrorKind::PermissionDenied => "permission denied".into(),
        ErrorKind::NotFound => "does not exist".into(),
        _ => e.to_string(),
    }
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

const IS_A_DIRECTORY: &str =
    "is a directory; name a file (e.g. DIR/iotoll.tst with --create) or a block device";

/// Callback for test-file preparation: (bytes written, bytes total).
pub type PrepProgress<'a> = &'a mut dyn FnMut(u64, u64);

/// A target named twice, also through another path to the same file (a
/// symlink, `./`), which would double its workers unnoticed. A path that
/// does not exist yet is compared by its directory's.
pub fn given_twice(targets: &[PathBuf]) -> Option<&PathBuf> {
    let key = |p: &PathBuf| {
        // One LUN however its URL is spelled (default port, case of scheme).
        if let Some(u) = p.to_str().and_then(|t| iotoll_iscsi::url::parse(t).ok()) {
            return PathBuf::from(u.to_string());
        }
        std::fs::canonicalize(p)
            .or_else(|e| {
                // The root has no directory to compare it by.
                p.parent().ok_or(e)?;
                let name = p.file_name().unwrap_or_default();
                std::fs::canonicalize(parent_dir(p)).map(|d| d.join(name))
            })
            .unwrap_or_else(|_| p.clone())
    };
    let mut seen = std::collections::HashSet::new();
    targets.iter().find(|p| !seen.insert(key(p)))
}

/// Where a target must be, fixed before it is opened: an agent pins every
/// path it allows when it starts, a local run each target as it prepares
/// it. The target is then opened once, without following a symlink at its
/// last component, and its device and inode checked on that descriptor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pin {
    /// An existing file or device: its canonical path, and its inode.
    Inode { path: PathBuf, dev: u64, ino: u64 },
    /// A file that did not exist: `name` in this directory (its canonical
    /// path and inode), where it may be created.
    InDir {
        dir: PathBuf,
        dev: u64,
        ino: u64,
        name: OsString,
    },
}

impl Pin {
    /// The canonical path the pin stands for.
    pub fn path(&self) -> PathBuf {
        match self {
            Pin::Inode { path, .. } => path.clone(),
            Pin::InDir { dir, name, .. } => dir.join(name),
        }
    }
}

/// Pins `p` as it is now: symlinks the user named are followed here, once.
pub fn pin(p: &Path) -> Result<Pin> {
    let bad = |msg: String| DiskError::target(p, msg);
    match std::fs::canonicalize(p) {
        Ok(c) => {
            let m = std::fs::symlink_metadata(&c).map_err(|e| bad(io_err_msg(&e)))?;
            Ok(Pin::Inode {
                path: c,
                dev: m.dev(),
                ino: m.ino(),
            })
        }
        Err(e) if e.kind() != ErrorKind::NotFound => Err(bad(io_err_msg(&e))),
        Err(_) => {
            let Some(name) = p.file_name() else {
                return Err(bad("names no file".into()));
            };
            let parent = parent_dir(p);
            let dir = std::fs::canonicalize(parent)
                .map_err(|_| bad(format!("directory {} does not exist", parent.display())))?;
            let m = std::fs::metadata(&dir).map_err(|e| bad(io_err_msg(&e)))?;
            if !m.is_dir() {
                return Err(bad(format!("{} is not a directory", parent.display())));
            }
            Ok(Pin::InDir {
                dir,
                dev: m.dev(),
                ino: m.ino(),
                name: name.to_os_string(),
            })
        }
    }
}

/// `open(2)`/`openat(2)` of `path` (relative to `dir` if given), never
/// following a symlink at its last component and never blocking on a
/// FIFO or making a terminal ours.
fn open_nofollow(dir: Option<&File>, path: &Path, flags: libc::c_int) -> std::io::Result<File> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::from(ErrorKind::InvalidInput))?;
    let at = dir.map_or(libc::AT_FDCWD, |d| d.as_raw_fd());
    let flags = flags | libc::O_NOFOLLOW | libc::O_NOCTTY | libc::O_CLOEXEC;
    // SAFETY: a NUL-terminated path and a valid (or AT_FDCWD) directory;
    // the descriptor returned is owned by the File.
    let fd = unsafe { libc::openat(at, c.as_ptr(), flags, 0o600 as libc::c_uint) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor nobody else owns.
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// Sets or clears file status flags (O_NONBLOCK, O_DIRECT) on a descriptor.
fn set_flag(f: &File, flag: libc::c_int, on: bool) -> std::io::Result<()> {
    // SAFETY: fcntl on an open descriptor.
    unsafe {
        let cur = libc::fcntl(f.as_raw_fd(), libc::F_GETFL);
        if cur < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let new = if on { cur | flag } else { cur & !flag };
        if libc::fcntl(f.as_raw_fd(), libc::F_SETFL, new) < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The pinned directory of an `InDir` pin, opened and checked to still be
/// the one pinned.
fn open_pinned_dir(dir: &Path, dev: u64, ino: u64, shown: &Path) -> Result<File> {
    let d = open_nofollow(None, dir, libc::O_RDONLY | libc::O_DIRECTORY).map_err(|e| {
        DiskError::target(
            shown,
            format!("directory {}: {}", dir.display(), io_err_msg(&e)),
        )
    })?;
    let m = d.metadata().map_err(io_err(shown))?;
    if (m.dev(), m.ino()) != (dev, ino) {
        return Err(DiskError::target(
            shown,
            format!(
                "directory {} is no longer the directory it was when the target was allowed (replaced since); refusing it",
                dir.display()
            ),
        ));
    }
    Ok(d)
}

/// Opens a pinned target once: an existing one with `flags`, or creates
/// it. The descriptor is checked against the pin (device and inode) and
/// its type against `kind`.
fn open_pinned(pin: &Pin, kind: TargetKind, flags: libc::c_int, shown: &Path) -> Result<File> {
    let refused = |e: std::io::Error| {
        let why = match e.raw_os_error() {
            Some(libc::ELOOP) => {
                "is a symbolic link (it was not when the target was checked); refusing it"
            }
            Some(libc::EBUSY) => "device is in use (mounted?); refusing to write to it",
            Some(libc::EEXIST) => {
                "appeared while iotoll was creating its test file there; refusing it"
            }
            Some(libc::EISDIR) => IS_A_DIRECTORY,
            _ => return DiskError::target(shown, io_err_msg(&e)),
        };
        DiskError::target(shown, why)
    };
    let f = match pin {
        Pin::Inode { path, .. } => open_nofollow(None, path, flags).map_err(refused)?,
        Pin::InDir {
            dir,
            dev,
            ino,
            name,
        } => {
            let d = open_pinned_dir(dir, *dev, *ino, shown)?;
            let flags = match kind.created() {
                true => libc::O_RDWR | libc::O_CREAT | libc::O_EXCL,
                false => flags,
            };
            open_nofollow(Some(&d), Path::new(name), flags).map_err(refused)?
        }
    };
    let m = f.metadata().map_err(io_err(shown))?;
    if let Pin::Inode { dev, ino, .. } = pin {
        if (m.dev(), m.ino()) != (*dev, *ino) {
            return Err(DiskError::target(
                shown,
                "is no longer the file or device it was when the target was allowed (replaced since); refusing it",
            ));
        }
    }
    // A file that appeared at a directory's pin since it was allowed is
    // only taken if it is nothing but that name: a hard link planted there
    // is another file of the same inode, wherever that one lives.
    if matches!(pin, Pin::InDir { .. }) && m.is_file() && m.nlink() > 1 {
        return Err(DiskError::target(
            shown,
            format!(
                "has {} hard links: it is also another file, outside what was allowed; refusing it",
                m.nlink()
            ),
        ));
    }
    let as_checked = match kind {
        TargetKind::BlockDevice => m.file_type().is_block_device(),
        _ => m.is_file(),
    };
    if !as_checked {
        return Err(DiskError::target(
            shown,
            "changed while it was being prepared (it is no longer what was checked); refusing it",
        ));
    }
    set_flag(&f, libc::O_NONBLOCK, false).map_err(io_err(shown))?;
    Ok(f)
}

/// Where a target is and what it is: a path that does not exist yet is
/// a test file to create, only with --create and in a directory that
/// exists; None is a temporary test file. The pin says where the target
/// must be when it is opened (None: a temporary file or an iSCSI LUN).
fn resolve(
    p: Option<&Path>,
    create: bool,
    pinned: Option<&Pin>,
) -> Result<(PathBuf, TargetKind, Option<Pin>)> {
    let Some(p) = p else {
        let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("iotoll-{}-{n}.tst", std::process::id()));
        return Ok((p, TargetKind::TempFile, None));
    };
    let bad = |msg: &str| Err(DiskError::target(p, msg));
    if p.to_str().is_some_and(iotoll_iscsi::url::is_iscsi_url) {
        return Ok((p.to_path_buf(), TargetKind::IscsiLun, None));
    }
    let pin = match pinned {
        Some(pin) => pin.clone(),
        None => pin(p)?,
    };
    // What is there now, never through a symlink at the pinned place.
    let kind = match std::fs::symlink_metadata(pin.path()) {
        Ok(m) if m.file_type().is_symlink() => return bad("is a symbolic link; refusing it"),
        Ok(m) if m.is_dir() => return bad(IS_A_DIRECTORY),
        Ok(m) if m.is_file() => TargetKind::ExistingFile,
        Ok(m) if m.file_type().is_block_device() => TargetKind::BlockDevice,
        Ok(_) => return bad("is neither a regular file nor a block device"),
        Err(e) if e.kind() != ErrorKind::NotFound => return bad(&io_err_msg(&e)),
        // A missing device is a typo or an absent disk, never a place for a
        // test file: a regular file in /dev would pass for the device.
        Err(_) if in_device_directory(&pin.path()) => return bad(
            "does not exist: no such device (iotoll never creates a test file in the device directory; `lsblk` lists the block devices)",
        ),
        Err(_) if !create => return bad(
            "does not exist; add --create to have iotoll create a test file there, or omit --target for a temporary one",
        ),
        Err(_) if matches!(pin, Pin::Inode { .. }) => {
            return bad("no longer exists (it did when the target was allowed)")
        }
        Err(_) => TargetKind::CreatedFile,
    };
    Ok((p.to_path_buf(), kind, Some(pin)))
}

/// Whether `p` would be made in the kernel's device directory (the
/// devtmpfs mounted at /dev, wherever the path spells it), where only
/// device nodes belong. By filesystem, not by name: /dev/shm (a tmpfs of
/// its own) is a fine place for a test file.
fn in_device_directory(p: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(parent_dir(p)), std::fs::metadata("/dev")) {
        (Ok(d), Ok(dev)) => d.dev() == dev.dev(),
        (_, Err(_)) => p.starts_with("/dev"),
        _ => false,
    }
}

/// Resolves and checks every target, then creates and fills the test
/// files: a bad target (missing, too small, existing and to be written
/// without --allow-destructive) is refused before any test file is made.
/// Nothing is written to an existing target here.
pub fn prepare(
    spec: &DiskRequest,
    interrupted: &AtomicBool,
    progress: PrepProgress,
) -> Result<Vec<Target>> {
    prepare_pinned(spec, &[], interrupted, progress)
}

/// [`prepare`] with each of `spec.targets` pinned by the caller (an agent,
/// at its start); `pins` empty: each is pinned here, as it is now.
pub fn prepare_pinned(
    spec: &DiskRequest,
    pins: &[Pin],
    interrupted: &AtomicBool,
    progress: PrepProgress,
) -> Result<Vec<Target>> {
    let given: Vec<Option<&Path>> = match spec.targets.as_slice() {
        [] => vec![None],
        t => t.iter().map(|p| Some(p.as_path())).collect(),
    };
    if !pins.is_empty() && pins.len() != spec.targets.len() {
        return Err(DiskError::Invalid(format!(
            "{} pins for {} targets",
            pins.len(),
            spec.targets.len()
        )));
    }
    let resolved = (given.into_iter().enumerate())
        .map(|(i, p)| resolve(p, spec.create, pins.get(i)))
        .collect::<Result<Vec<_>, _>>()?;
    for (path, kind, _) in &resolved {
        if !kind.created() && spec.writes() && !spec.allow_destructive {
            let what = match kind {
                TargetKind::BlockDevice => "is a block device",
                TargetKind::IscsiLun => "is an iSCSI LUN (a device)",
                _ => "is an existing file",
            };
            // Each distinct read share once: an Iometer mix's eight lines
            // at 80 % read are "80% read", not "80/80/80/80/80/80/80/80%".
            let mut reads: Vec<u32> = spec.lines.iter().map(|l| l.read_pct).collect();
            reads.sort_unstable();
            reads.dedup();
            let reads: Vec<String> = reads.iter().map(u32::to_string).collect();
            return Err(DiskError::Invalid(format!(
                "target {} {what} and this workload writes ({}% read): its contents would be overwritten; add --allow-destructive if that is what you want, or use a read-only spec (--read 100)",
                path.display(),
                reads.join("/")
            )));
        }
    }
    // Existing targets are opened and checked first, so that one of them
    // being wrong leaves no test file behind.
    let (created, existing): (Vec<_>, Vec<_>) =
        (resolved.into_iter().enumerate()).partition(|(_, (_, kind, _))| kind.created());
    let mut out: Vec<(usize, Target)> = Vec::new();
    for (i, (path, kind, pin)) in existing.into_iter().chain(created) {
        let target = prepare_one(spec, path, kind, pin, interrupted, &mut *progress)?;
        out.push((i, target));
    }
    out.sort_by_key(|(i, _)| *i);
    Ok(out.into_iter().map(|(_, t)| t).collect())
}

fn prepare_one(
    spec: &DiskRequest,
    path: PathBuf,
    kind: TargetKind,
    pin: Option<Pin>,
    interrupted: &AtomicBool,
    progress: PrepProgress,
) -> Result<Target> {
    let direct = !spec.buffered;
    let mut guard = RemoveGuard(None);
    let mut iscsi = None;
    let (file, size, lbs) = if kind == TargetKind::IscsiLun {
        if spec.buffered {
            return Err(DiskError::Invalid(format!(
                "--buffered has no meaning for an iSCSI target ({}): there is no page cache between iotoll's initiator and the LUN",
                path.display()
            )));
        }
        let probe = probe_iscsi(spec, &path, interrupted)?;
        let (size, block) = (probe.capacity.bytes(), probe.capacity.block_size as u64);
        iscsi = Some(probe);
        (None, size, block)
    } else if kind.created() {
        let (f, size) = create_test_file(spec, &path, kind, pin.as_ref())?;
        guard.0 = Some(path.clone());
        let lbs = file_dio_align(&f);
        (Some(f), size, lbs)
    } else {
        let (f, size, lbs) = open_existing(spec, &path, kind, pin.as_ref())?;
        (Some(f), size, lbs)
    };
    let aligns = check_alignment(spec, &path, lbs, iscsi.is_some())?;
    let len = check_region(spec, &path, size)?;
    if let (true, Some(f)) = (kind.created(), &file) {
        fill_test_file(f, &path, size, interrupted, progress)?;
    }
    if let (true, Some(f)) = (direct, &file) {
        set_flag(f, libc::O_DIRECT, true).map_err(|e| match e.raw_os_error() {
            Some(libc::EINVAL) => DiskError::target(
                &path,
                "its filesystem does not support O_DIRECT (tmpfs on older kernels?); use --buffered",
            ),
            _ => io_err(&path)(e),
        })?;
    }
    let meta = file.as_ref().map(File::metadata).transpose();
    let id = meta.map_err(io_err(&path))?.map(|m| (m.dev(), m.ino()));
    if spec.keep {
        guard.0 = None;
    }
    Ok(Target {
        _remove: guard,
        path,
        kind,
        region: Region {
            start: spec.offset,
            len,
        },
        size,
        logical_block: lbs,
        aligns,
        direct,
        file,
        id,
        iscsi,
    })
}

/// Creates a test file (not yet filled): the file and the size it is to
/// have, the region and the offset before it.
fn create_test_file(
    spec: &DiskRequest,
    path: &Path,
    kind: TargetKind,
    pin: Option<&Pin>,
) -> Result<(File, u64)> {
    let size = spec
        .offset
        .checked_add(spec.size.unwrap_or(DEFAULT_TEST_FILE_SIZE))
        .ok_or_else(|| DiskError::Invalid("--offset + --size overflows".into()))?;
    let cannot = |e: DiskError| match e {
        DiskError::Target { path, msg } => DiskError::Target {
            path,
            msg: format!("cannot create test file: {msg}"),
        },
        e => e,
    };
    let f = match pin {
        Some(pin) => open_pinned(pin, kind, 0, path).map_err(cannot)?,
        None => OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)
            .map_err(|e| {
                DiskError::target(path, format!("cannot create test file: {}", io_err_msg(&e)))
            })?,
    };
    Ok((f, size))
}

/// Opens a file or device that exists, as it was pinned: the file, its
/// size and its logical block (or O_DIRECT alignment).
fn open_existing(
    spec: &DiskRequest,
    path: &Path,
    kind: TargetKind,
    pin: Option<&Pin>,
) -> Result<(File, u64, u64)> {
    let Some(pin) = pin else {
        return Err(DiskError::target(path, "was never pinned"));
    };
    let mut flags = libc::O_NONBLOCK;
    flags |= match spec.writes() {
        true => libc::O_RDWR,
        false => libc::O_RDONLY,
    };
    if kind == TargetKind::BlockDevice && spec.writes() {
        flags |= libc::O_EXCL;
    }
    let f = open_pinned(pin, kind, flags, path)?;
    let (size, lbs) = if kind == TargetKind::BlockDevice {
        block_device_geometry(&f)
            .map_err(|e| DiskError::target(path, format!("cannot read device geometry: {e}")))?
    } else {
        let m = f.metadata().map_err(io_err(path))?;
        (m.len(), file_dio_align(&f))
    };
    Ok((f, size, lbs))
}

/// Each line's alignment (its --align, or the target's logical block
/// `lbs`), checked against the block size, the transfer size and the
/// offset.
fn check_alignment(spec: &DiskRequest, path: &Path, lbs: u64, iscsi: bool) -> Result<Vec<u64>> {
    let direct = !spec.buffered;
    // Why transfers must be aligned, for the messages below.
    let why_aligned = if iscsi {
        "SCSI commands address whole blocks"
    } else {
        "required by O_DIRECT; use --buffered to go through the page cache"
    };
    let offset = spec.offset;
    let aligns: Vec<u64> = spec.lines.iter().map(|l| l.align.unwrap_or(lbs)).collect();
    for (l, &align) in spec.lines.iter().zip(&aligns) {
        let bs = l.bs;
        if direct && align % lbs != 0 {
            return Err(DiskError::Invalid(format!(
                "--align {align} is not a multiple of the logical block size {lbs} of {} ({why_aligned})",
                path.display()
            )));
        }
        if direct && bs % align != 0 {
            // Say where the alignment came from: --align, or the target.
            let whose = match l.align {
                Some(_) => "--align".to_string(),
                None if iscsi => format!("the block size of {}", path.display()),
                None => format!("the O_DIRECT alignment of {}", path.display()),
            };
            return Err(DiskError::Invalid(format!(
                "--bs {bs} is not a multiple of the alignment {align} ({whose}; {why_aligned}; use a transfer size that is a multiple of {align})"
            )));
        }
        if offset % align != 0 {
            return Err(DiskError::Invalid(format!(
                "--offset {offset} is not a multiple of the alignment {align}"
            )));
        }
    }
    Ok(aligns)
}

/// The length of the region the I/O covers in a target of `size` bytes,
/// checked to hold at least one transfer.
fn check_region(spec: &DiskRequest, path: &Path, size: u64) -> Result<u64> {
    let offset = spec.offset;
    let region_err = |msg: String| Err(DiskError::target(path, msg));
    if offset >= size {
        return region_err(format!(
            "--offset {offset} is at or past its end ({size} bytes)"
        ));
    }
    let len = spec.size.unwrap_or(size - offset);
    if offset.saturating_add(len) > size {
        return region_err(format!(
            "the region --offset {offset} + --size {len} = {} bytes is larger than the target ({size} bytes)",
            offset + len
        ));
    }
    let bs = spec.max_bs();
    if len < bs {
        return region_err(format!(
            "the region ({len} bytes) is smaller than one transfer (--bs {bs})"
        ));
    }
    Ok(len)
}

/// Logs a session in to an iSCSI target, reads the LUN's capacity and
/// identity, and logs out: a bad URL, an unreachable portal, a refused
/// login or a missing LUN is refused here, before any worker starts.
fn probe_iscsi(spec: &DiskRequest, path: &Path, interrupted: &AtomicBool) -> Result<IscsiProbe> {
    let text = path.to_string_lossy();
    let url = iotoll_iscsi::url::parse(&text)
        .map_err(|e| DiskError::Invalid(format!("target {text}: {e}")))?;
    let Some(lun_no) = url.lun else {
        return Err(DiskError::Invalid(format!(
            "target {text}: name the LUN: iscsi://HOST[:PORT]/IQN/LUN (`iotoll iscsi luns {text}` lists them)"
        )));
    };
    let config = std::sync::Arc::new(spec.iscsi.config()?);
    let lun = crate::engines::iscsi::Lun {
        url: url.clone(),
        config,
        block: 512,
    };
    let fail = |e: iotoll_iscsi::Error| DiskError::target(path, e.msg);
    let mut s = lun.login(1, Some(interrupted)).map_err(|e| match e.kind {
        iotoll_iscsi::ErrorKind::Interrupted => {
            DiskError::Interrupted("while logging in to the iSCSI target")
        }
        _ => fail(e),
    })?;
    let inquiry = s.inquiry(lun_no).map_err(fail)?;
    if !inquiry.is_connected_disk() {
        let luns = s.report_luns().unwrap_or_default();
        let list: Vec<String> = luns.iter().map(u64::to_string).collect();
        let list = match list.is_empty() {
            true => "none".to_string(),
            false => list.join(", "),
        };
        let why = if inquiry.peripheral_qualifier != 0 {
            format!("LUN {lun_no} does not exist on {}", url.iqn)
        } else {
            format!(
                "LUN {lun_no} is not a disk (SCSI peripheral type {})",
                inquiry.peripheral_type
            )
        };
        return Err(DiskError::target(path, format!("{why}; its LUNs: {list}")));
    }
    let capacity = s.read_capacity(lun_no).map_err(fail)?;
    let session = s.info.clone();
    let _ = s.logout();
    Ok(IscsiProbe {
        lun: crate::engines::iscsi::Lun {
            block: capacity.block_size,
            ..lun
        },
        session,
        inquiry,
        capacity,
    })
}

pub fn iscsi_disclosure(t: &Target) -> Option<iotoll_model::spec::IscsiDisclosure> {
    let p = t.iscsi.as_ref()?;
    let s = &p.session;
    Some(iotoll_model::spec::IscsiDisclosure {
        url: p.lun.url.to_string(),
        portal: s.portal.clone(),
        target: s.target.clone(),
        lun: p.lun.lun(),
        initiator: s.initiator.clone(),
        auth: s.auth.clone(),
        header_digest: s.header_digest.clone(),
        data_digest: s.data_digest.clone(),
        vendor: p.inquiry.vendor.clone(),
        product: p.inquiry.product.clone(),
        revision: p.inquiry.revision.clone(),
        block_size: p.capacity.block_size,
        capacity_bytes: p.capacity.bytes(),
        negotiated: s.negotiated.iter().cloned().collect(),
    })
}

/// Reserves the space, then writes non-repeating data so that no block of
/// the file is a hole or a duplicate a smart device could shortcut, and
/// drops it from the page cache so reads start cold.
fn fill_test_file(
    mut f: &File,
    path: &Path,
    size: u64,
    interrupted: &AtomicBool,
    progress: PrepProgress,
) -> Result<()> {
    let dir = path
        .parent()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let no_space = |e: std::io::Error| {
        if e.raw_os_error() == Some(libc::ENOSPC) {
            DiskError::target(
                path,
                format!("not enough free space in '{dir}' for a {size}-byte test file (removed it); choose a smaller --size or another place"),
            )
        } else {
            DiskError::io(format!("preparing test file {}", path.display()), e)
        }
    };
    // SAFETY: plain syscall on an open descriptor.
    let rc = unsafe { libc::posix_fallocate(f.as_raw_fd(), 0, size as libc::off_t) };
    // EOPNOTSUPP/EINVAL: the filesystem cannot reserve; the writes below still
    // find a full disk, just later.
    if rc == libc::ENOSPC || rc == libc::EFBIG {
        return Err(no_space(std::io::Error::from_raw_os_error(libc::ENOSPC)));
    }
    const CHUNK: usize = 1 << 20;
    let mut buf = vec![0u8; CHUNK];
    let mut rng = Rng::new(Rng::seed_from_time(size));
    let mut done = 0u64;
    while done < size {
        if interrupted.load(Ordering::Relaxed) {
            return Err(DiskError::Interrupted(
                "while preparing the test file (removed it)",
            ));
        }
        let n = (size - done).min(CHUNK as u64) as usize;
        rng.fill(&mut buf[..n]);
        f.write_all(&buf[..n]).map_err(no_space)?;
        done += n as u64;
        progress(done, size);
    }
    f.sync_data().map_err(no_space)?;
    // SAFETY: advisory call on an open descriptor.
    unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    Ok(())
}

impl Target {
    /// The target for one worker's I/O: read-only unless the workload
    /// writes; O_DIRECT unless buffered.
    pub fn open_for_io(&self) -> Result<crate::engines::Opened> {
        if let Some(p) = &self.iscsi {
            return Ok(crate::engines::Opened::Iscsi(p.lun.clone()));
        }
        // A duplicate of the one descriptor opened and checked at prepare:
        // the same open file, its access mode and O_DIRECT included.
        let Some(f) = &self.file else {
            return Err(DiskError::target(&self.path, "has no open descriptor"));
        };
        let f = f.try_clone().map_err(io_err(&self.path))?;
        Ok(crate::engines::Opened::File(f))
    }
}

#[cfg(test)]
mod tests;
