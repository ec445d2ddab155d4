//! CHAP (RFC 1994) with MD5, as iSCSI's security stage uses it (RFC 7143
//! §12.1.3): the secret file, the response computation, the binary-value
//! encodings, and the initiator's half of one- and two-way CHAP.
//!
//! No error message and no Debug output carries a secret.

use iotoll_model::secret::{read_secret_file, SecretFileError};
use md5::{Digest, Md5};
use std::collections::VecDeque;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::text::parse_number;

/// CHAP_A value of MD5 (RFC 1994 §4.1), the only algorithm we offer.
pub const CHAP_A_MD5: &str = "5";

/// RFC 7143 §12.1.3: a CHAP_C is at most 1024 bytes.
pub const MAX_CHALLENGE_LEN: usize = 1024;

/// Length of the challenges we issue: MD5's block of entropy; RFC 1994
/// leaves the length to the implementation.
pub const CHALLENGE_LEN: usize = 16;

/// RFC 7143 §12.1.3 asks for secrets of at least 96 bits where the link is
/// not encrypted; shorter ones are reported by `Secrets::warnings`.
pub const RECOMMENDED_SECRET_LEN: usize = 12;

#[derive(Debug, thiserror::Error)]
pub enum ChapError {
    #[error("cannot read CHAP secret file {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "UNPROTECTED CHAP SECRET FILE: {} has mode {mode:04o}, so group or others may read or change it; \
         it holds a secret and is refused (run: chmod 600 {})",
        path.display(), path.display()
    )]
    Unprotected { path: PathBuf, mode: u32 },
    #[error(
        "UNPROTECTED CHAP SECRET FILE: {} belongs to uid {owner}, neither this user (uid {me}) nor root, \
         so that user may change it; it is refused (run: chown {me} {})",
        path.display(), path.display()
    )]
    ForeignOwner { path: PathBuf, owner: u32, me: u32 },
    #[error("{}:{line}: {msg}", path.display())]
    Syntax {
        path: PathBuf,
        line: usize,
        msg: String,
    },
    #[error("{}: {msg}", path.display())]
    Incomplete { path: PathBuf, msg: &'static str },
    #[error("invalid binary value: {0}")]
    BadBinary(String),
    #[error("CHAP exchange: {0}")]
    Protocol(String),
    #[error("target failed mutual CHAP: {0}")]
    MutualFailed(String),
    #[error("no random bytes for a CHAP challenge: {0}")]
    Random(std::io::Error),
}

/// The CHAP names and secrets of one session. The `_in` pair is mutual
/// CHAP: the target's name and secret, which the initiator checks.
#[derive(Clone, PartialEq, Eq)]
pub struct Secrets {
    pub username: String,
    pub password: Vec<u8>,
    pub username_in: Option<String>,
    pub password_in: Option<Vec<u8>>,
}

impl fmt::Debug for Secrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Secrets")
            .field("username", &self.username)
            .field("password", &"<redacted>")
            .field("username_in", &self.username_in)
            .field(
                "password_in",
                &self.password_in.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

impl Secrets {
    /// Weaknesses worth telling the user about that do not stop a login:
    /// short secrets are legal, and some targets impose their own limits,
    /// so refusing them here would only get in the way.
    pub fn warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        let mut check = |name: &str, s: &[u8]| {
            if s.len() < RECOMMENDED_SECRET_LEN {
                w.push(format!(
                    "CHAP {name} is {} bytes; RFC 7143 recommends at least {RECOMMENDED_SECRET_LEN}",
                    s.len()
                ));
            }
        };
        check("password", &self.password);
        if let Some(p) = &self.password_in {
            check("password_in", p);
        }
        w
    }
}

/// Reads `key = value` lines (`username`, `password`, `username_in`,
/// `password_in`; open-iscsi's `node.session.auth.` prefix is accepted so
/// lines can be pasted from iscsid.conf). Lines starting with `#` are
/// comments; a `#` elsewhere is part of the value, since secrets may hold
/// one. Whitespace around keys and values is trimmed.
pub fn load_secret_file(path: &Path) -> Result<Secrets, ChapError> {
    let data = read_secret_file(path).map_err(|e| match e {
        SecretFileError::Io(source) => ChapError::Io {
            path: path.to_path_buf(),
            source,
        },
        SecretFileError::Unprotected { mode } => ChapError::Unprotected {
            path: path.to_path_buf(),
            mode,
        },
        SecretFileError::ForeignOwner { owner, me } => ChapError::ForeignOwner {
            path: path.to_path_buf(),
            owner,
            me,
        },
    })?;
    parse_secrets(path, &data)
}

fn parse_secrets(path: &Path, data: &[u8]) -> Result<Secrets, ChapError> {
    let syntax = |line: usize, msg: String| ChapError::Syntax {
        path: path.to_path_buf(),
        line,
        msg,
    };
    let incomplete = |msg| ChapError::Incomplete {
        path: path.to_path_buf(),
        msg,
    };
    let mut fields: [Option<Vec<u8>>; 4] = Default::default();
    const KEYS: [&str; 4] = ["username", "password", "username_in", "password_in"];
    for (i, raw) in data.split(|&b| b == b'\n').enumerate() {
        let line = i + 1;
        let l = raw.trim_ascii();
        if l.is_empty() || l[0] == b'#' {
            continue;
        }
        let eq = l
            .iter()
            .position(|&b| b == b'=')
            .ok_or_else(|| syntax(line, "expected 'key = value'".into()))?;
        let key = String::from_utf8_lossy(l[..eq].trim_ascii()).into_owned();
        let value = l[eq + 1..].trim_ascii();
        let short = key.strip_prefix("node.session.auth.").unwrap_or(&key);
        let Some(slot) = KEYS.iter().position(|k| *k == short) else {
            // The text of the line is not shown: a line that is not a known
            // key may well be a secret (`password  c2VjcmV0=`, a base64
            // secret whose padding looked like the '=').
            let hint = match KEYS.iter().find(|k| {
                short
                    .strip_prefix(**k)
                    .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_whitespace()))
            }) {
                Some(k) => format!("; '{k}' must be followed by '='"),
                None => String::new(),
            };
            return Err(syntax(
                line,
                format!(
                    "unknown key (expected username, password, username_in or password_in; the line is not shown, as it may hold a secret){hint}"
                ),
            ));
        };
        if fields[slot].is_some() {
            return Err(syntax(line, format!("'{short}' given twice")));
        }
        if value.is_empty() {
            return Err(syntax(line, format!("'{short}' is empty")));
        }
        if slot % 2 == 0 && std::str::from_utf8(value).is_err() {
            return Err(syntax(line, format!("'{short}' is not UTF-8")));
        }
        fields[slot] = Some(value.to_vec());
    }
    let [user, pass, user_in, pass_in] = fields;
    let text = |v: Vec<u8>| String::from_utf8_lossy(&v).into_owned();
    let username = user.map(text).ok_or_else(|| incomplete("no 'username'"))?;
    let password = pass.ok_or_else(|| incomplete("no 'password'"))?;
    let (username_in, password_in) = match (user_in, pass_in) {
        (Some(u), Some(p)) => (Some(text(u)), Some(p)),
        (None, None) => (None, None),
        (Some(_), None) => return Err(incomplete("'username_in' without 'password_in'")),
        (None, Some(_)) => return Err(incomplete("'password_in' without 'username_in'")),
    };
    // RFC 7143 §12.1.3: a secret that authenticates the initiator must not
    // authenticate a target, or a rogue target could reflect our challenge.
    if password_in.as_ref() == Some(&password) {
        return Err(incomplete(
            "'password_in' equals 'password'; mutual CHAP needs two different secrets",
        ));
    }
    Ok(Secrets {
        username,
        password,
        username_in,
        password_in,
    })
}

/// The CHAP response: MD5(identifier || secret || challenge), RFC 1994 §4.1.
pub fn response(id: u8, secret: &[u8], challenge: &[u8]) -> [u8; 16] {
    let mut h = Md5::new();
    h.update([id]);
    h.update(secret);
    h.update(challenge);
    h.finalize().into()
}

/// `0x`-prefixed lowercase hex, RFC 7143 §6.1's hex-constant.
pub fn encode_hex(bytes: &[u8]) -> String {
    format!("0x{}", hex::encode(bytes))
}

/// RFC 7143 §6.1's base64: the standard alphabet, padded when written;
/// padding optional when read, as some targets leave it off.
const B64: base64::engine::GeneralPurpose = base64::engine::GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    base64::engine::GeneralPurposeConfig::new()
        .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true),
);

/// `0b`-prefixed padded base64 (RFC 4648), RFC 7143 §6.1's base64-constant.
pub fn encode_base64(bytes: &[u8]) -> String {
    use base64::Engine;
    format!("0b{}", B64.encode(bytes))
}

/// Decodes an RFC 7143 §6.1 binary value: `0x`/`0X` hex (an odd digit
/// count implies a leading zero nibble) or `0b`/`0B` base64.
pub fn decode_binary(s: &str) -> Result<Vec<u8>, ChapError> {
    let bad = |why: &str| ChapError::BadBinary(why.to_string());
    let (prefix, body) = (s.get(..2), s.get(2..).unwrap_or(""));
    let out = match prefix {
        Some("0x" | "0X") => decode_hex(body).ok_or_else(|| bad("not a hex string after 0x"))?,
        Some("0b" | "0B") => {
            decode_base64(body).ok_or_else(|| bad("not a base64 string after 0b"))?
        }
        _ => return Err(bad("expected 0x (hex) or 0b (base64)")),
    };
    if out.is_empty() {
        return Err(bad("empty"));
    }
    Ok(out)
}

/// Hex digits to bytes; an odd count implies a leading zero nibble.
fn decode_hex(s: &str) -> Option<Vec<u8>> {
    match s.len() % 2 {
        0 => hex::decode(s).ok(),
        _ => hex::decode(format!("0{s}")).ok(),
    }
}

fn decode_base64(s: &str) -> Option<Vec<u8>> {
    use base64::Engine;
    // Padding, when present, must complete the last group of four.
    if s.ends_with('=') && s.len() % 4 != 0 {
        return None;
    }
    B64.decode(s).ok()
}

/// A CHAP identifier and challenge, as issued for mutual CHAP.
pub type Challenge = (u8, Vec<u8>);

/// The pairs to send the target, and our challenge when CHAP is mutual.
pub type Reply = (Vec<(String, String)>, Option<Challenge>);

/// Challenges we issued recently in this process, to spot a target that
/// hands one back to have us compute the answer (reflection).
static ISSUED: Mutex<VecDeque<Vec<u8>>> = Mutex::new(VecDeque::new());
const ISSUED_KEPT: usize = 64;

/// A random identifier and a 16-byte challenge from the kernel's CSPRNG;
/// without randomness there is no challenge worth issuing: an error.
pub fn try_new_challenge() -> Result<Challenge, ChapError> {
    let buf = iotoll_model::secret::random::<{ 1 + CHALLENGE_LEN }>().map_err(ChapError::Random)?;
    Ok((buf[0], buf[1..].to_vec()))
}

fn key<'a>(keys: &'a [(String, String)], name: &str) -> Result<&'a str, ChapError> {
    keys.iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
        .ok_or_else(|| ChapError::Protocol(format!("target sent no {name}")))
}

/// Answers the target's CHAP_A/CHAP_I/CHAP_C with CHAP_N and CHAP_R, plus
/// our own CHAP_I and CHAP_C when `secrets` asks for mutual CHAP; the
/// challenge is returned for `check_target_response`.
pub fn initiator_reply(
    secrets: &Secrets,
    target_keys: &[(String, String)],
) -> Result<Reply, ChapError> {
    let alg = key(target_keys, "CHAP_A")?;
    if parse_number(alg) != Some(5) {
        return Err(ChapError::Protocol(format!(
            "target chose CHAP_A={alg}; we offered only 5 (MD5)"
        )));
    }
    let id_text = key(target_keys, "CHAP_I")?;
    let id = parse_number(id_text)
        .and_then(|n| u8::try_from(n).ok())
        .ok_or_else(|| {
            ChapError::Protocol(format!("CHAP_I={id_text} is not a number from 0 to 255"))
        })?;
    let challenge = decode_binary(key(target_keys, "CHAP_C")?)
        .map_err(|e| ChapError::Protocol(format!("CHAP_C: {e}")))?;
    if challenge.len() > MAX_CHALLENGE_LEN {
        return Err(ChapError::Protocol(format!(
            "CHAP_C is {} bytes, more than the {MAX_CHALLENGE_LEN} RFC 7143 allows",
            challenge.len()
        )));
    }
    let issued = ISSUED.lock().unwrap_or_else(|p| p.into_inner());
    if issued.contains(&challenge) {
        return Err(ChapError::Protocol(
            "target sent back a challenge we issued (reflection attack); refusing to answer it"
                .into(),
        ));
    }
    drop(issued);

    let mut out = vec![
        ("CHAP_N".to_string(), secrets.username.clone()),
        (
            "CHAP_R".to_string(),
            encode_hex(&response(id, &secrets.password, &challenge)),
        ),
    ];
    let ours = if secrets.username_in.is_some() && secrets.password_in.is_some() {
        // RFC 7143 §12.1.3: an originator must not reuse the responder's
        // challenge for the other direction.
        let (our_id, our_c) = loop {
            let c = try_new_challenge()?;
            if c.1 != challenge {
                break c;
            }
        };
        let mut issued = ISSUED.lock().unwrap_or_else(|p| p.into_inner());
        if issued.len() == ISSUED_KEPT {
            issued.pop_front();
        }
        issued.push_back(our_c.clone());
        out.push(("CHAP_I".to_string(), our_id.to_string()));
        out.push(("CHAP_C".to_string(), encode_hex(&our_c)));
        Some((our_id, our_c))
    } else {
        None
    };
    Ok((out, ours))
}

/// Checks the target's CHAP_N and CHAP_R against the mutual-CHAP name and
/// secret and the challenge we sent.
pub fn check_target_response(
    secrets: &Secrets,
    our_challenge: &Challenge,
    target_keys: &[(String, String)],
) -> Result<(), ChapError> {
    let (Some(name_in), Some(secret_in)) = (&secrets.username_in, &secrets.password_in) else {
        return Err(ChapError::Protocol(
            "mutual CHAP check without username_in/password_in".into(),
        ));
    };
    let name = key(target_keys, "CHAP_N")?;
    if name != name_in {
        // The target's word: shown, never obeyed by the terminal.
        let name: String = name.chars().take(256).collect();
        return Err(ChapError::MutualFailed(format!(
            "it answered as '{}', expected '{name_in}'",
            iotoll_model::text::printable(&name)
        )));
    }
    let got = decode_binary(key(target_keys, "CHAP_R")?)
        .map_err(|e| ChapError::Protocol(format!("CHAP_R: {e}")))?;
    let (id, challenge) = our_challenge;
    let want = response(*id, secret_in, challenge);
    // Compared without an early exit so timing does not reveal how much of
    // a forged response was right.
    let same = got.len() == want.len()
        && got
            .iter()
            .zip(want.iter())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0;
    if !same {
        return Err(ChapError::MutualFailed("wrong response".into()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;

    use crate::text::tests::pairs;

    fn secrets(mutual: bool) -> Secrets {
        Secrets {
            username: "iqn.1994-05.com.redhat:init".into(),
            password: b"initiatorsecret1".to_vec(),
            username_in: mutual.then(|| "tgtuser".into()),
            password_in: mutual.then(|| b"targetsecret12".to_vec()),
        }
    }

    #[test]
    fn response_vectors() {
        // python3 -c 'import hashlib; print(hashlib.md5(bytes([1])+b"initiatorsecret1"+bytes(range(16))).hexdigest())'
        let c: Vec<u8> = (0..16).collect();
        assert_eq!(
            encode_hex(&response(1, b"initiatorsecret1", &c)),
            "0xb5acf4353f7f990cd7cd8a562f75712e"
        );
        let c = decode_binary("0x0123456789abcdeffedcba9876543210").unwrap();
        assert_eq!(
            encode_hex(&response(0xa7, b"targetsecret12", &c)),
            "0xda88abcba08c08ce4f4d87a88caaf2b1"
        );
    }

    #[test]
    fn hex() {
        assert_eq!(encode_hex(&[0, 0xab, 0x10]), "0x00ab10");
        assert_eq!(decode_binary("0X00AB10").unwrap(), vec![0, 0xab, 0x10]);
        assert_eq!(decode_binary("0xabc").unwrap(), vec![0x0a, 0xbc]);
        assert!(decode_binary("0x").is_err());
        assert!(decode_binary("0xzz").is_err());
        assert!(decode_binary("0x+1").is_err());
        assert!(decode_binary("abcd").is_err());
        assert!(decode_binary("").is_err());
        assert!(decode_binary("0").is_err());
    }

    #[test]
    fn base64() {
        // python3 -c 'import base64; print(base64.b64encode(b"hello world!"))'
        assert_eq!(
            decode_binary("0baGVsbG8gd29ybGQh").unwrap(),
            b"hello world!"
        );
        assert_eq!(decode_binary("0BYWI=").unwrap(), b"ab");
        assert_eq!(decode_binary("0bYWI").unwrap(), b"ab");
        assert_eq!(decode_binary("0bYQ==").unwrap(), b"a");
        assert_eq!(
            decode_binary("0b+vv8/f7/").unwrap(),
            vec![250, 251, 252, 253, 254, 255]
        );
        assert_eq!(encode_base64(&[250, 251, 252, 253, 254, 255]), "0b+vv8/f7/");
        assert_eq!(encode_base64(b"a"), "0bYQ==");
        assert_eq!(encode_base64(b"ab"), "0bYWI=");
        for bad in [
            "0b", "0bY", "0bYQ=", "0bYQ===", "0bY!==", "0bYW=I", "0b====",
        ] {
            assert!(decode_binary(bad).is_err(), "{bad}");
        }
    }

    proptest::proptest! {
        #[test]
        fn binary_roundtrip(v in proptest::collection::vec(proptest::num::u8::ANY, 1..100)) {
            proptest::prop_assert_eq!(decode_binary(&encode_hex(&v)).unwrap(), v.clone());
            proptest::prop_assert_eq!(decode_binary(&encode_base64(&v)).unwrap(), v);
        }

        #[test]
        fn decode_binary_never_panics(s in "\\PC{0,40}") {
            let _ = decode_binary(&s);
        }
    }

    #[test]
    fn challenge_is_random() {
        let (_, a) = try_new_challenge().unwrap();
        let (_, b) = try_new_challenge().unwrap();
        assert_eq!(a.len(), CHALLENGE_LEN);
        assert_ne!(a, b);
    }

    fn write_file(body: &str, mode: u32) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(body.as_bytes()).unwrap();
        std::fs::set_permissions(f.path(), std::fs::Permissions::from_mode(mode)).unwrap();
        f
    }

    #[test]
    fn secret_file() {
        let f = write_file(
            "# CHAP for the lab target\n\n  username = iqn.x:init\npassword=p#ss w0rd 1234\r\n\
             node.session.auth.username_in = tgt\npassword_in = another secret\n",
            0o600,
        );
        let s = load_secret_file(f.path()).unwrap();
        assert_eq!(s.username, "iqn.x:init");
        assert_eq!(s.password, b"p#ss w0rd 1234");
        assert_eq!(s.username_in.as_deref(), Some("tgt"));
        assert_eq!(s.password_in.as_deref(), Some(&b"another secret"[..]));
        assert!(s.warnings().is_empty());
        let dbg = format!("{s:?}");
        assert!(!dbg.contains("w0rd") && !dbg.contains("another"), "{dbg}");

        let f = write_file("username=u\npassword=short\n", 0o400);
        let s = load_secret_file(f.path()).unwrap();
        assert_eq!(s.username_in, None);
        assert_eq!(s.warnings().len(), 1);
    }

    #[test]
    fn secret_file_refused() {
        let err = |body: &str, mode: u32| {
            let f = write_file(body, mode);
            let e = load_secret_file(f.path()).unwrap_err().to_string();
            assert!(e.contains(&f.path().display().to_string()), "{e}");
            assert!(!e.contains("topsecret"), "{e}");
            e
        };
        let ok = "username=u\npassword=topsecret12345\n";
        let e = err(ok, 0o640);
        assert!(e.contains("UNPROTECTED") && e.contains("0640"), "{e}");
        assert!(err(ok, 0o604).contains("UNPROTECTED"));
        assert!(err(ok, 0o620).contains("UNPROTECTED"));
        assert!(err("username=u\n", 0o600).contains("no 'password'"));
        assert!(err("password=topsecret12345\n", 0o600).contains("no 'username'"));
        assert!(err("username=u\npassword=\n", 0o600).contains(":2:"));
        let e = err("username=u\npassword=topsecret12345\nsecret=x\n", 0o600);
        assert!(e.contains(":3:") && e.contains("unknown key"), "{e}");
        // A key and its value without the '=', the value a base64 secret
        // whose padding is the only '=': the line is never shown.
        let e = err("username=u\npassword  dG9wc2VjcmV0LXh5eg=\n", 0o600);
        assert!(e.contains(":2:") && e.contains("unknown key"), "{e}");
        assert!(e.contains("'password' must be followed by '='"), "{e}");
        assert!(!e.contains("dG9w"), "the secret is echoed: {e}");
        let e = err("username=u\npassword=x\ndG9wc2VjcmV0LXh5eg==\n", 0o600);
        assert!(e.contains(":3:") && !e.contains("dG9w"), "{e}");
        assert!(err("username=u\npassword topsecret12345\n", 0o600).contains(":2:"));
        assert!(err("username=u\nusername=v\npassword=topsecret12345\n", 0o600).contains("twice"));
        assert!(err(&format!("{ok}username_in=t\n"), 0o600).contains("without 'password_in'"));
        assert!(err(&format!("{ok}password_in=topsecret99999\n"), 0o600)
            .contains("without 'username_in'"));
        assert!(err(
            &format!("{ok}username_in=t\npassword_in=topsecret12345\n"),
            0o600
        )
        .contains("different"));
        let missing = load_secret_file(Path::new("/nonexistent/chap")).unwrap_err();
        assert!(missing.to_string().contains("/nonexistent/chap"));
    }

    /// A target's CHAP_A (MD5), CHAP_I and CHAP_C.
    fn challenge(id: &str, c: &str) -> Vec<(String, String)> {
        pairs(&[("CHAP_A", CHAP_A_MD5), ("CHAP_I", id), ("CHAP_C", c)])
    }

    #[test]
    fn one_way_exchange() {
        let s = secrets(false);
        let c: Vec<u8> = (0..16).collect();
        let (out, ours) = initiator_reply(&s, &challenge("1", &encode_base64(&c))).unwrap();
        assert_eq!(ours, None);
        assert_eq!(
            out,
            pairs(&[
                ("CHAP_N", "iqn.1994-05.com.redhat:init"),
                ("CHAP_R", "0xb5acf4353f7f990cd7cd8a562f75712e"),
            ])
        );
    }

    #[test]
    fn mutual_exchange() {
        let s = secrets(true);
        let (out, ours) = initiator_reply(&s, &challenge("0x07", "0x00112233")).unwrap();
        let (id, c) = ours.clone().unwrap();
        assert_eq!(out[2], ("CHAP_I".to_string(), id.to_string()));
        assert_eq!(out[3], ("CHAP_C".to_string(), encode_hex(&c)));

        let good = encode_hex(&response(id, b"targetsecret12", &c));
        let ours = ours.unwrap();
        let check = |keys: &[(&str, &str)]| check_target_response(&s, &ours, &pairs(keys));
        check(&[("CHAP_N", "tgtuser"), ("CHAP_R", &good)]).unwrap();

        let wrong = encode_hex(&response(id, b"initiatorsecret1", &c));
        let e = check(&[("CHAP_N", "tgtuser"), ("CHAP_R", &wrong)]).unwrap_err();
        assert_eq!(e.to_string(), "target failed mutual CHAP: wrong response");
        let e = check(&[("CHAP_N", "evil"), ("CHAP_R", &good)]).unwrap_err();
        assert!(matches!(e, ChapError::MutualFailed(_)));
        assert!(check(&[("CHAP_N", "tgtuser")]).is_err());
        assert!(check(&[("CHAP_N", "tgtuser"), ("CHAP_R", "0x00")]).is_err());

        // Reflection: a target presenting the challenge we just issued.
        let e = initiator_reply(&s, &challenge("1", &encode_hex(&c))).unwrap_err();
        assert!(e.to_string().contains("reflection"), "{e}");
    }

    /// The hostile review: a target's CHAP_N carrying terminal escapes
    /// reached the terminal in the mutual-CHAP error; now shown escaped.
    #[test]
    fn a_target_chap_name_is_shown_escaped() {
        let s = secrets(true);
        let (_, ours) = initiator_reply(&s, &challenge("7", "0x00112233")).unwrap();
        let ours = ours.unwrap();
        let evil = "\u{1b}]0;PWN\u{7}\u{1b}[2J";
        let e = check_target_response(&s, &ours, &pairs(&[("CHAP_N", evil), ("CHAP_R", "0x00")]))
            .unwrap_err()
            .to_string();
        assert!(!e.chars().any(char::is_control), "{e:?}");
        assert!(e.contains("\\u{1b}]0;PWN"), "{e}");
    }

    #[test]
    fn bad_target_keys() {
        let s = secrets(false);
        let e = |v: &[(&str, &str)]| initiator_reply(&s, &pairs(v)).unwrap_err().to_string();
        assert!(e(&[("CHAP_A", "7"), ("CHAP_I", "1"), ("CHAP_C", "0x01")]).contains("CHAP_A=7"));
        assert!(e(&[("CHAP_A", "5"), ("CHAP_C", "0x01")]).contains("no CHAP_I"));
        assert!(e(&[("CHAP_A", "5"), ("CHAP_I", "256"), ("CHAP_C", "0x01")]).contains("CHAP_I=256"));
        assert!(e(&[("CHAP_A", "5"), ("CHAP_I", "1")]).contains("no CHAP_C"));
        assert!(e(&[("CHAP_A", "5"), ("CHAP_I", "1"), ("CHAP_C", "zz")]).contains("CHAP_C"));
        let big = encode_hex(&[1u8; 1025]);
        assert!(e(&[("CHAP_A", "5"), ("CHAP_I", "1"), ("CHAP_C", &big)]).contains("1025"));
        let none: &[(&str, &str)] = &[];
        assert!(e(none).contains("no CHAP_A"));
    }
}
