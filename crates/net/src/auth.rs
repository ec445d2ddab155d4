//! Pre-shared-key authentication: HMAC-SHA256 challenge-response in both
//! directions, compared in constant time.

use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::path::{Path, PathBuf};

type HmacSha256 = Hmac<Sha256>;

#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("auth key {path}: {1}", path = .0.display())]
    Read(PathBuf, #[source] std::io::Error),
    /// (the file, the key's length in bytes)
    #[error("auth key {path}: {1} bytes is too short; use at least 16 (e.g. head -c 32 /dev/urandom | base64 > KEYFILE)", path = .0.display())]
    TooShort(PathBuf, usize),
    /// (the file, its mode bits)
    #[error("UNPROTECTED AUTH KEY FILE: {path} has mode {1:04o}, so group or others may read or change it; it holds a secret and is refused (run: chmod 600 {path})", path = .0.display())]
    Unprotected(PathBuf, u32),
}

/// A pre-shared key read from a file.
#[derive(Clone)]
pub struct Key(Vec<u8>);

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Key(..)")
    }
}

impl Key {
    /// Reads a key file; surrounding whitespace (a trailing newline) is not
    /// part of the key. A file group or others may read or change is
    /// refused, as CHAP secret files are (one rule: `read_secret_file`).
    pub fn load(path: &Path) -> Result<Key, KeyError> {
        use iotoll_model::secret::{read_secret_file, SecretFileError};
        let raw = read_secret_file(path).map_err(|e| match e {
            SecretFileError::Io(e) => KeyError::Read(path.into(), e),
            SecretFileError::Unprotected { mode } => KeyError::Unprotected(path.into(), mode),
        })?;
        let key = raw.trim_ascii().to_vec();
        if key.len() < 16 {
            return Err(KeyError::TooShort(path.into(), key.len()));
        }
        Ok(Key(key))
    }

    pub fn from_bytes(b: &[u8]) -> Key {
        Key(b.to_vec())
    }

    /// The key itself (to hand to an agent this process starts, on its
    /// stdin).
    pub fn bytes(&self) -> &[u8] {
        &self.0
    }

    fn hmac(&self, label: &str, a: &str, b: &str) -> HmacSha256 {
        // HMAC takes keys of any length.
        let mut m = HmacSha256::new_from_slice(&self.0).expect("HMAC accepts any key length");
        for part in [label, a, b] {
            m.update(&(part.len() as u32).to_be_bytes());
            m.update(part.as_bytes());
        }
        m
    }

    /// The proof for (`label`, `a`, `b`), hex.
    pub fn mac(&self, label: &str, a: &str, b: &str) -> String {
        hex(&self.hmac(label, a, b).finalize().into_bytes())
    }

    /// Constant-time check of a peer's proof.
    pub fn verify(&self, label: &str, a: &str, b: &str, mac_hex: &str) -> bool {
        unhex(mac_hex, 128).is_some_and(|bytes| self.hmac(label, a, b).verify_slice(&bytes).is_ok())
    }
}

/// 16 random bytes from the kernel, hex.
pub fn nonce() -> String {
    let mut b = [0u8; 16];
    // SAFETY: getrandom writes at most b.len() bytes into b.
    let n = unsafe { libc::getrandom(b.as_mut_ptr().cast(), b.len(), 0) };
    if n != b.len() as isize {
        // Never reached on Linux >= 3.17; a time-based nonce still never repeats.
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        b.copy_from_slice(&t.to_le_bytes());
    }
    hex(&b)
}

pub(crate) fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Hex to bytes; None if malformed or longer than `max` bytes.
pub(crate) fn unhex(s: &str, max: usize) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 || s.len() > 2 * max {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proofs_verify_only_with_the_same_key_and_inputs() {
        let k = Key::from_bytes(b"0123456789abcdef");
        let other = Key::from_bytes(b"0123456789abcdeX");
        let m = k.mac("client", "n1", "n2");
        assert!(k.verify("client", "n1", "n2", &m));
        assert!(!other.verify("client", "n1", "n2", &m));
        assert!(
            !k.verify("server", "n1", "n2", &m),
            "labels separate directions"
        );
        assert!(!k.verify("client", "n2", "n1", &m));
        assert!(!k.verify("client", "n1", "n2", "zz"));
        assert!(!k.verify("client", "n1", "n2", ""));
    }

    #[test]
    fn nonces_differ() {
        assert_ne!(nonce(), nonce());
        assert_eq!(nonce().len(), 32);
    }

    #[test]
    fn key_file() {
        let d = std::env::temp_dir().join(format!("iotoll-key-{}", std::process::id()));
        std::fs::write(&d, "  0123456789abcdef0123\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = |m| std::fs::set_permissions(&d, std::fs::Permissions::from_mode(m)).unwrap();
        mode(0o644);
        assert!(matches!(
            Key::load(&d),
            Err(KeyError::Unprotected(_, 0o644))
        ));
        mode(0o600);
        let k = Key::load(&d).unwrap();
        assert_eq!(k.0, b"0123456789abcdef0123");
        std::fs::write(&d, "short\n").unwrap();
        assert!(matches!(Key::load(&d), Err(KeyError::TooShort(_, 5))));
        std::fs::remove_file(&d).unwrap();
        assert!(Key::load(&d).is_err());
    }
}
