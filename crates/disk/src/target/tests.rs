use super::*;

fn spec_at(dir: &Path, name: &str) -> DiskRequest {
    DiskRequest {
        targets: vec![dir.join(name)],
        size: Some(1 << 20),
        ..Default::default()
    }
}

/// `s`'s targets prepared, pinned by `pins` (none: as they are now).
fn prep_pinned(s: &DiskRequest, pins: &[Pin]) -> Result<Vec<Target>, DiskError> {
    prepare_pinned(s, pins, &AtomicBool::new(false), &mut |_, _| {})
}

fn prep(s: &DiskRequest) -> Result<Target, DiskError> {
    let mut t = prep_pinned(s, &[])?;
    assert_eq!(t.len(), 1);
    Ok(t.remove(0))
}

#[test]
fn created_file_is_filled_and_removed() {
    let d = tempfile::tempdir().unwrap();
    let mut s = spec_at(d.path(), "t.tst");
    s.create = true;
    let t = prep(&s).unwrap();
    let data = std::fs::read(&t.path).unwrap();
    assert_eq!(data.len(), 1 << 20);
    assert_ne!(data[..4096], data[4096..8192], "non-repeating contents");
    assert!(data.iter().any(|b| *b != 0));
    let p = t.path.clone();
    drop(t);
    assert!(!p.exists());
}

#[test]
fn missing_path_without_create_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let e = prep(&spec_at(d.path(), "nope")).unwrap_err();
    assert!(e.to_string().contains("does not exist"), "{e}");
    assert!(!d.path().join("nope").exists());
}

#[test]
fn existing_file_needs_allow_destructive_to_write() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("data");
    std::fs::write(&p, vec![7u8; 1 << 20]).unwrap();
    let mut s = spec_at(d.path(), "data");
    s.lines[0].read_pct = 70;
    let e = prep(&s).unwrap_err();
    assert!(
        e.is_usage() && e.to_string().contains("--allow-destructive"),
        "{e}"
    );
    s.lines[0].read_pct = 100;
    let t = prep(&s).unwrap();
    drop(t);
    assert!(p.exists(), "an existing file is never removed");
}

#[test]
fn region_checks() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("f"), vec![0u8; 64 << 10]).unwrap();
    let mut s = spec_at(d.path(), "f");
    for (size, offset, bs, want) in [
        (Some(128 << 10), 0, 4096, "larger than the target"),
        (None, 64 << 10, 4096, "past its end"),
        (None, 1000, 4096, "--offset"),
        (None, 0, 1000, "O_DIRECT"),
    ] {
        (s.size, s.offset, s.lines[0].bs) = (size, offset, bs);
        let e = prep(&s).unwrap_err().to_string();
        assert!(e.contains(want), "{e}");
    }
    s.buffered = true;
    let t = prep(&s).unwrap();
    assert_eq!((t.region.start, t.region.len), (0, 64 << 10));
}

/// One bad target among several: refused before any test file is
/// made, and the test file to create at the other is not left behind.
#[test]
fn a_bad_target_among_several_leaves_no_test_file() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("small"), vec![0u8; 64 << 10]).unwrap();
    let mut s = spec_at(d.path(), "new.tst");
    s.create = true;
    s.targets.push(d.path().join("small"));
    let e = prep_pinned(&s, &[]).unwrap_err();
    assert!(e.to_string().contains("larger than the target"), "{e}");
    assert!(!d.path().join("new.tst").exists());
    // Writing: the existing file is refused before anything is made.
    s.size = Some(4096);
    s.lines[0].read_pct = 50;
    let e = prep_pinned(&s, &[]).unwrap_err();
    assert!(e.to_string().contains("--allow-destructive"), "{e}");
    assert!(!d.path().join("new.tst").exists());
    s.lines[0].read_pct = 100;
    let t = prep_pinned(&s, &[]).unwrap();
    let paths: Vec<_> = t.iter().map(|t| t.path.file_name().unwrap()).collect();
    assert_eq!(paths, ["new.tst", "small"], "in the order given");
}

/// issue 24: a target swapped for a symlink to another file after it
/// was prepared: the workers' descriptors are still the prepared file,
/// and the other file is never written.
#[test]
fn workers_use_the_prepared_file_even_when_its_path_is_swapped() {
    use std::os::unix::fs::FileExt;
    let d = tempfile::tempdir().unwrap();
    let outside = d.path().join("outside");
    std::fs::write(&outside, vec![0x55u8; 1 << 20]).unwrap();
    let mut s = spec_at(d.path(), "t.tst");
    (s.create, s.keep, s.buffered) = (true, true, true);
    s.lines[0].read_pct = 0;
    s.allow_destructive = true;
    let t = prep(&s).unwrap();
    let ino = std::fs::metadata(&t.path).unwrap().ino();
    let moved = d.path().join("moved");
    std::fs::rename(&t.path, &moved).unwrap();
    std::os::unix::fs::symlink(&outside, &t.path).unwrap();
    let crate::engines::Opened::File(f) = t.open_for_io().unwrap() else {
        panic!("a file target")
    };
    assert_eq!(f.metadata().unwrap().ino(), ino, "the prepared inode");
    f.write_all_at(&[1u8; 4096], 0).unwrap();
    assert!(std::fs::read(&outside).unwrap().iter().all(|b| *b == 0x55));
    assert_eq!(std::fs::read(&moved).unwrap()[..4096], [1u8; 4096]);
}

/// A pinned target (an agent's allowed path) replaced, between the pin
/// and the prepare, by a symlink or by another file: refused.
#[test]
fn a_pinned_target_replaced_since_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let outside = d.path().join("outside");
    std::fs::write(&outside, vec![0u8; 1 << 20]).unwrap();
    let p = d.path().join("data");
    std::fs::write(&p, vec![7u8; 1 << 20]).unwrap();
    let mut s = spec_at(d.path(), "data");
    s.lines[0].read_pct = 100;
    let pins = vec![pin(&p).unwrap()];
    let go = |s: &DiskRequest| prep_pinned(s, &pins);
    assert!(go(&s).is_ok());
    // Kept under another name, so that its inode is not reused by
    // the file made in its place below.
    std::fs::rename(&p, d.path().join("kept")).unwrap();
    std::os::unix::fs::symlink(&outside, &p).unwrap();
    let e = go(&s).unwrap_err().to_string();
    assert!(e.contains("symbolic link"), "{e}");
    std::fs::remove_file(&p).unwrap();
    std::fs::write(&p, vec![7u8; 1 << 20]).unwrap();
    let e = go(&s).unwrap_err().to_string();
    assert!(e.contains("replaced since"), "{e}");
    // A file to create, pinned by its directory: a symlink planted at
    // its name is not followed, and nothing is written through it.
    let newp = d.path().join("new.tst");
    let pins = vec![pin(&newp).unwrap()];
    std::os::unix::fs::symlink(&outside, &newp).unwrap();
    s.targets = vec![newp.clone()];
    (s.create, s.allow_destructive) = (true, true);
    s.lines[0].read_pct = 0;
    let e = prep_pinned(&s, &pins).unwrap_err().to_string();
    assert!(e.contains("symbolic link"), "{e}");
    assert!(std::fs::read(&outside).unwrap().iter().all(|b| *b == 0));
    // A hard link planted at that name is the outside file under
    // another name: refused, and the outside file never written.
    std::fs::remove_file(&newp).unwrap();
    std::fs::hard_link(&outside, &newp).unwrap();
    let e = prep_pinned(&s, &pins).unwrap_err().to_string();
    assert!(e.contains("hard links"), "{e}");
    assert!(std::fs::read(&outside).unwrap().iter().all(|b| *b == 0));
}

/// A loop device over a file in `dir`, detached when dropped; None
/// without root or loop devices (the test is then skipped).
struct Loop(PathBuf);

impl Loop {
    fn new(dir: &Path) -> Option<Loop> {
        // SAFETY: a plain getter.
        if unsafe { libc::geteuid() } != 0 {
            return None;
        }
        let backing = dir.join("backing");
        std::fs::write(&backing, vec![0u8; 4 << 20]).ok()?;
        let out = std::process::Command::new("losetup")
            .args(["-f", "--show"])
            .arg(&backing)
            .output()
            .ok()?;
        let dev = String::from_utf8(out.stdout).ok()?.trim().to_string();
        (out.status.success() && !dev.is_empty()).then(|| Loop(dev.into()))
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = std::process::Command::new("losetup")
            .arg("-d")
            .arg(&self.0)
            .status();
    }
}

/// issue 24: a block device that will be written is claimed O_EXCL on
/// the one descriptor the workers use: a device claimed by another
/// (as a mount does) is refused, the claim holds while the target
/// lives, and a swapped path changes nothing the workers open.
#[test]
fn a_written_block_device_is_claimed_on_the_descriptor_the_workers_use() {
    let d = tempfile::tempdir().unwrap();
    let Some(dev) = Loop::new(d.path()) else {
        eprintln!("skipped: needs root and a loop device");
        return;
    };
    let link = d.path().join("by-id");
    std::os::unix::fs::symlink(&dev.0, &link).unwrap();
    let mut s = spec_at(d.path(), "by-id");
    s.lines[0].read_pct = 0;
    s.allow_destructive = true;
    s.buffered = true;
    let excl = || {
        OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_EXCL)
            .open(&dev.0)
    };
    let held = excl().unwrap();
    let e = prep(&s).unwrap_err().to_string();
    assert!(e.contains("in use"), "{e}");
    drop(held);
    let t = prep(&s).unwrap();
    assert_eq!(t.kind, TargetKind::BlockDevice);
    assert_eq!(
        excl().unwrap_err().raw_os_error(),
        Some(libc::EBUSY),
        "claimed while the target lives"
    );
    let rdev = std::fs::metadata(&dev.0).unwrap().rdev();
    std::fs::remove_file(&link).unwrap();
    std::fs::write(d.path().join("plain"), vec![0u8; 4 << 20]).unwrap();
    std::os::unix::fs::symlink(d.path().join("plain"), &link).unwrap();
    let crate::engines::Opened::File(f) = t.open_for_io().unwrap() else {
        panic!("a device target")
    };
    assert_eq!(f.metadata().unwrap().rdev(), rdev, "the device prepared");
    drop((f, t));
    assert!(excl().is_ok(), "released with the target");
}

#[test]
fn interrupted_preparation_removes_the_file() {
    let d = tempfile::tempdir().unwrap();
    let mut s = spec_at(d.path(), "t.tst");
    s.create = true;
    let e = prepare(&s, &AtomicBool::new(true), &mut |_, _| {}).unwrap_err();
    assert!(matches!(e, DiskError::Interrupted(_)));
    assert!(!d.path().join("t.tst").exists());
}
