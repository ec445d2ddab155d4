//! Room on the database's file system: the free space a run needs, the
//! rescue room kept beside the database, and a result kept in a file when
//! the database cannot take it.

use crate::*;

/// The room [`Store::check_ready`] keeps beside the database for a result
/// the database cannot take: `.iotoll-rescue-room-<pid>`.
pub(crate) fn rescue_room(db: &Path) -> PathBuf {
    dir_of(db).join(format!("{RESCUE_ROOM_PREFIX}{}", std::process::id()))
}

pub(crate) const RESCUE_ROOM_PREFIX: &str = ".iotoll-rescue-room-";

/// Sets aside [`MIN_FREE_BYTES`] beside the database (an allocated file)
/// so that a result is kept there even when the database's writes fill
/// the filesystem; [`keep_unstored`] frees it first. Best effort: without
/// it a rescue still tries beside the database, then elsewhere. Rooms
/// left by processes that died (SIGKILL) are removed.
pub(crate) fn reserve_rescue_room(db: &Path) {
    let dir = dir_of(db);
    if let Ok(entries) = std::fs::read_dir(&dir) {
        for e in entries.flatten() {
            let n = e.file_name();
            let stale = n
                .to_str()
                .and_then(|n| n.strip_prefix(RESCUE_ROOM_PREFIX))
                .and_then(|pid| pid.parse::<i64>().ok())
                .is_some_and(|pid| !pid_alive(pid));
            if stale {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    let p = rescue_room(db);
    let Ok(f) = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&p)
    else {
        return;
    };
    if nix::fcntl::posix_fallocate(&f, 0, MIN_FREE_BYTES as libc::off_t).is_err() {
        let _ = std::fs::remove_file(&p);
    }
}

/// Keeps a finished result the database could not take: its JSON document
/// in a new file beside the database (in the room set aside for it, when
/// the database's filesystem is full), else in the current directory, else
/// the temporary directory. Returns where it is.
pub fn keep_unstored(db: &Path, doc: &ResultDoc) -> Result<PathBuf, String> {
    use std::io::Write;
    let _ = std::fs::remove_file(rescue_room(db));
    let text = serde_json::to_string_pretty(doc).map_err(|e| e.to_string())?;
    let name = format!(
        "iotoll-unstored-{}-{}.json",
        doc.started_at.replace(':', ""),
        std::process::id()
    );
    let mut tried = Vec::new();
    for dir in [dir_of(db), PathBuf::from("."), std::env::temp_dir()] {
        let p = dir.join(&name);
        let r = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&p)
            .and_then(|mut f| {
                f.write_all(text.as_bytes())?;
                f.write_all(b"\n")?;
                f.sync_all()
            });
        match r {
            Ok(()) => return Ok(std::path::absolute(&p).unwrap_or(p)),
            Err(e) => {
                // A partial file is no result: do not leave it.
                if e.kind() != std::io::ErrorKind::AlreadyExists {
                    let _ = std::fs::remove_file(&p);
                }
                tried.push(format!("{}: {e}", p.display()));
            }
        }
    }
    Err(tried.join("; "))
}

/// Free space a measuring command needs before it runs a workload.
pub(crate) const MIN_FREE_BYTES: u64 = 1 << 20;

pub(crate) fn statvfs(dir: &Path) -> Option<nix::sys::statvfs::Statvfs> {
    nix::sys::statvfs::statvfs(dir).ok()
}

pub(crate) fn writable(p: &Path) -> bool {
    nix::unistd::access(p, nix::unistd::AccessFlags::W_OK).is_ok()
}

pub(crate) fn dir_of(path: &Path) -> PathBuf {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    dir.map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// Free bytes for this user on the filesystem holding `dir`.
#[allow(clippy::unnecessary_cast)] // the field types differ between platforms
pub(crate) fn free_bytes(dir: &Path) -> Option<u64> {
    statvfs(dir).map(|s| s.blocks_available() as u64 * s.fragment_size() as u64)
}

/// What keeps the database from being written, as the filesystem tells it.
pub(crate) fn fs_problem(path: &Path) -> Option<String> {
    let dir = dir_of(path);
    let st = statvfs(&dir)?;
    let d = dir.display();
    if st.flags().contains(nix::sys::statvfs::FsFlags::ST_RDONLY) {
        Some(format!("is read-only: {d} is on a read-only filesystem"))
    } else if free_bytes(&dir).is_some_and(|f| f < 64 * 1024) {
        Some(format!(
            "cannot be written: the filesystem holding {d} is full"
        ))
    } else if !writable(&dir) {
        Some(format!(
            "is read-only: no permission to create files in {d}"
        ))
    } else if path.exists() && !writable(path) {
        Some("is read-only: no permission to write it".into())
    } else {
        None
    }
}
