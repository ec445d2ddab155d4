//! Files that hold a secret (a CHAP secret file, an `--auth-key` file):
//! read only when no one but their owner may read or change them. One
//! rule for every such file, so a key is refused exactly as a CHAP secret.
//! And the one source of the random bytes secrets, nonces, tokens and
//! session ids are made of.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Why a secret file was not read.
#[derive(Debug, thiserror::Error)]
pub enum SecretFileError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// Group or others may read or write it (the file's mode bits).
    #[error("mode {mode:04o} lets group or others read or change it")]
    Unprotected { mode: u32 },
    /// Another user owns it (neither this process's user nor root), so
    /// that user may change it whatever its mode.
    #[error("it belongs to uid {owner}, neither this user (uid {me}) nor root, who may change it")]
    ForeignOwner { owner: u32, me: u32 },
}

/// Reads a secret file whole, refusing it when group or others have any
/// permission on it. The mode is taken from the opened file (through a
/// symbolic link, the file it names), so it is the mode of what is read.
pub fn read_secret_file(path: &Path) -> Result<Vec<u8>, SecretFileError> {
    use std::os::unix::fs::MetadataExt;
    let mut f = File::open(path)?;
    let meta = f.metadata()?;
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(SecretFileError::Unprotected { mode });
    }
    let me = crate::os::euid();
    if meta.uid() != me && meta.uid() != 0 {
        return Err(SecretFileError::ForeignOwner {
            owner: meta.uid(),
            me,
        });
    }
    let mut data = Vec::new();
    f.read_to_end(&mut data)?;
    Ok(data)
}

/// `N` random bytes from the kernel (getrandom(2)). Every nonce, token,
/// key and id iotoll makes comes from here; without randomness there is
/// none worth having, so that is an error, never a clock-based fallback.
pub fn random<const N: usize>() -> std::io::Result<[u8; N]> {
    let mut b = [0u8; N];
    getrandom::fill(&mut b)?;
    Ok(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_owner_only_files_are_read() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("k");
        std::fs::write(&p, "secret").unwrap();
        for (mode, ok) in [
            (0o600, true),
            (0o400, true),
            (0o640, false),
            (0o604, false),
            (0o620, false),
            (0o602, false),
        ] {
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
            match read_secret_file(&p) {
                Ok(b) => assert!(ok && b == b"secret", "{mode:o}"),
                Err(SecretFileError::Unprotected { mode: m }) => {
                    assert!(!ok && m == mode, "{mode:o}")
                }
                Err(e) => panic!("{mode:o}: {e}"),
            }
        }
        // Through a symbolic link: the mode of the file it names.
        let l = d.path().join("l");
        std::os::unix::fs::symlink(&p, &l).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(matches!(
            read_secret_file(&l),
            Err(SecretFileError::Unprotected { .. })
        ));
    }

    /// A 0600 file another user owns is that user's to change: refused
    /// (needs root to give the file away; skipped otherwise).
    #[test]
    fn a_file_another_user_owns_is_refused() {
        use std::os::unix::fs::MetadataExt;
        if crate::os::euid() != 0 {
            return;
        }
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("k");
        std::fs::write(&p, "secret").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::os::unix::fs::chown(&p, Some(65534), None).unwrap();
        assert_eq!(std::fs::metadata(&p).unwrap().uid(), 65534);
        match read_secret_file(&p) {
            Err(e @ SecretFileError::ForeignOwner { owner: 65534, .. }) => {
                assert!(e.to_string().contains("uid 65534"), "{e}")
            }
            other => panic!("{other:?}"),
        }
        // Root's own files stay readable.
        std::os::unix::fs::chown(&p, Some(0), None).unwrap();
        assert!(read_secret_file(&p).is_ok());
    }

    #[test]
    fn random_bytes_differ() {
        let (a, b) = (random::<16>().unwrap(), random::<16>().unwrap());
        assert_ne!(a, b);
    }
}
