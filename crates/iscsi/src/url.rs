//! `iscsi://HOST[:PORT]/IQN[/LUN]` URLs and `HOST[:PORT]` portals, as the
//! command line takes them.
//!
//! Errors never echo the whole input back: a user who typed credentials into
//! the URL must not see them copied into a log or a report.

use std::fmt;
use std::net::Ipv6Addr;
use std::str::FromStr;

/// The iSCSI well-known port (RFC 7143 §13).
pub const DEFAULT_PORT: u16 = 3260;

/// The highest LUN reachable with single-level peripheral (0..=255) or flat
/// (0..=16383) addressing, the only methods `scsi::encode_lun` produces.
pub use crate::scsi::MAX_LUN;

/// An iSCSI name is at most 223 bytes (RFC 7143 §4.2.7.1).
const MAX_NAME_LEN: usize = 223;

const SCHEME: &str = "iscsi://";
const USAGE: &str = "iscsi://HOST[:PORT]/IQN[/LUN]";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    #[error("not an iSCSI URL: expected {USAGE}, got scheme '{0}'")]
    WrongScheme(String),
    #[error("not an iSCSI URL: expected {USAGE}")]
    NoScheme,
    #[error(
        "CHAP credentials go in --chap-secret-file, not in the URL (remove the 'user:pass@' part)"
    )]
    UserInfo,
    #[error("empty host in iSCSI address")]
    EmptyHost,
    #[error("invalid host '{0}': {1}")]
    BadHost(String, &'static str),
    #[error("invalid port '{0}': expected a number from 1 to 65535")]
    BadPort(String),
    #[error("missing target name: expected {USAGE}")]
    MissingIqn,
    #[error("invalid target name '{0}': {1}")]
    BadIqn(String, String),
    #[error("invalid LUN '{0}': expected a number from 0 to {MAX_LUN}")]
    BadLun(String),
    #[error("LUN {0} is out of range: iotoll addresses LUNs with peripheral/flat addressing, which reaches 0..={MAX_LUN}")]
    LunTooLarge(u64),
    #[error("give the portal as HOST[:PORT], without iscsi:// or a target name")]
    PortalIsUrl,
    #[error("unexpected '{0}' after the {1}")]
    TrailingJunk(String, &'static str),
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IscsiUrl {
    /// A host name or IP address; IPv6 without brackets.
    pub host: String,
    pub port: u16,
    pub iqn: String,
    pub lun: Option<u64>,
}

/// True when `s` looks meant as an iSCSI URL, so callers can route it here
/// rather than treat it as a file path.
pub fn is_iscsi_url(s: &str) -> bool {
    s.get(..SCHEME.len())
        .is_some_and(|p| p.eq_ignore_ascii_case(SCHEME))
}

/// Parses `iscsi://HOST[:PORT]/IQN[/LUN]`.
pub fn parse(s: &str) -> Result<IscsiUrl, UrlError> {
    let rest = strip_scheme(s)?;
    // Checked on the whole rest, not the authority only: a password holding
    // a '/' would otherwise end the authority early and be reported as a
    // bad port, echoing part of it. '@' is valid in no part of the URL.
    if rest.contains('@') {
        return Err(UrlError::UserInfo);
    }
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let (host, port) = parse_authority(authority)?;
    let (iqn, lun_part) = path
        .split_once('/')
        .map_or((path, None), |(i, l)| (i, Some(l)));
    if iqn.is_empty() {
        return Err(UrlError::MissingIqn);
    }
    check_iqn(iqn)?;
    let lun = lun_part.map(parse_lun).transpose()?;
    Ok(IscsiUrl {
        host,
        port,
        iqn: iqn.to_string(),
        lun,
    })
}

/// Parses the `HOST[:PORT]` of `iotoll iscsi discover`. A bare IPv6 address
/// without brackets is accepted when the whole string is one, since then
/// there is no port to confuse it with.
pub fn parse_portal(s: &str) -> Result<(String, u16), UrlError> {
    if is_iscsi_url(s) {
        return Err(UrlError::PortalIsUrl);
    }
    if let Ok(a) = s.parse::<Ipv6Addr>() {
        return Ok((a.to_string(), DEFAULT_PORT));
    }
    if let Some(i) = s.find('/') {
        return Err(UrlError::TrailingJunk(s[i..].to_string(), "portal"));
    }
    parse_authority(s)
}

impl IscsiUrl {
    /// `host:port`, with brackets around an IPv6 address, ready for
    /// `TcpStream::connect` and for the TargetAddress-style display.
    pub fn portal(&self) -> String {
        format_portal(&self.host, self.port)
    }

    pub fn with_lun(&self, lun: u64) -> IscsiUrl {
        IscsiUrl {
            lun: Some(lun),
            ..self.clone()
        }
    }
}

/// `host:port`, bracketing IPv6 so the port separator is unambiguous.
pub fn format_portal(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

impl fmt::Display for IscsiUrl {
    // The port is always written so two spellings of the same target
    // (with and without :3260) compare and report identically.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{SCHEME}{}/{}", self.portal(), self.iqn)?;
        if let Some(lun) = self.lun {
            write!(f, "/{lun}")?;
        }
        Ok(())
    }
}

impl FromStr for IscsiUrl {
    type Err = UrlError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse(s)
    }
}

fn strip_scheme(s: &str) -> Result<&str, UrlError> {
    if is_iscsi_url(s) {
        return Ok(&s[SCHEME.len()..]);
    }
    let scheme =
        |w: &&str| !w.is_empty() && w.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'+');
    match s.find("://").map(|i| &s[..i]).filter(scheme) {
        Some(w) => Err(UrlError::WrongScheme(w.to_string())),
        None => Err(UrlError::NoScheme),
    }
}

fn parse_authority(a: &str) -> Result<(String, u16), UrlError> {
    // '@' cannot occur in a host name or address, so any '@' here is userinfo.
    if a.contains('@') {
        return Err(UrlError::UserInfo);
    }
    if a.is_empty() {
        return Err(UrlError::EmptyHost);
    }
    let (host, port_text) = if let Some(v6) = a.strip_prefix('[') {
        let end = v6
            .find(']')
            .ok_or_else(|| UrlError::BadHost(a.to_string(), "'[' without a closing ']'"))?;
        let inner = &v6[..end];
        if inner.is_empty() {
            return Err(UrlError::EmptyHost);
        }
        let addr: Ipv6Addr = inner
            .parse()
            .map_err(|_| UrlError::BadHost(inner.to_string(), "not an IPv6 address"))?;
        let after = &v6[end + 1..];
        let port = match after.strip_prefix(':') {
            Some(p) => Some(p),
            None if after.is_empty() => None,
            None => return Err(UrlError::TrailingJunk(after.to_string(), "IPv6 address")),
        };
        (addr.to_string(), port)
    } else {
        let (h, p) = a.split_once(':').map_or((a, None), |(h, p)| (h, Some(p)));
        if p.is_some_and(|p| p.contains(':')) {
            return Err(UrlError::BadHost(
                a.to_string(),
                "an IPv6 address must be in brackets, e.g. [::1]:3260",
            ));
        }
        if h.is_empty() {
            return Err(UrlError::EmptyHost);
        }
        check_host(h)?;
        (h.to_string(), p)
    };
    let port = match port_text {
        None => DEFAULT_PORT,
        Some(p) => parse_port(p)?,
    };
    Ok((host, port))
}

fn check_host(h: &str) -> Result<(), UrlError> {
    let ok = h
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.' || b == b'_');
    if !ok {
        return Err(UrlError::BadHost(
            h.to_string(),
            "only letters, digits, '-', '.' and '_' may appear in a host name",
        ));
    }
    Ok(())
}

fn parse_port(p: &str) -> Result<u16, UrlError> {
    // u16::from_str would accept a leading '+'; a port is digits only.
    let digits = !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    match p.parse::<u16>() {
        Ok(n) if digits && n != 0 => Ok(n),
        _ => Err(UrlError::BadPort(p.to_string())),
    }
}

fn parse_lun(l: &str) -> Result<u64, UrlError> {
    if let Some(i) = l.find('/') {
        return Err(UrlError::TrailingJunk(l[i..].to_string(), "LUN"));
    }
    if l.is_empty() || !l.bytes().all(|b| b.is_ascii_digit()) {
        return Err(UrlError::BadLun(l.to_string()));
    }
    let n: u64 = l.parse().map_err(|_| UrlError::BadLun(l.to_string()))?;
    if n > MAX_LUN {
        return Err(UrlError::LunTooLarge(n));
    }
    Ok(n)
}

/// Checks the name types of RFC 7143 §4.2.7.3 loosely: the prefix, the
/// length and a conservative character set. '_' is tolerated although RFC
/// 3722 does not allow it, because some targets are configured with it.
fn check_iqn(n: &str) -> Result<(), UrlError> {
    let bad = |why: &str| Err(UrlError::BadIqn(n.to_string(), why.to_string()));
    if n.len() > MAX_NAME_LEN {
        return bad("longer than 223 bytes");
    }
    if let Some(c) = n
        .chars()
        .find(|&c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '_')))
    {
        return bad(&format!("character {c:?} is not allowed in an iSCSI name"));
    }
    let prefix = n.get(..4).map(str::to_ascii_lowercase).unwrap_or_default();
    let rest = &n[prefix.len().min(n.len())..];
    let hex = |s: &str| s.bytes().all(|b| b.is_ascii_hexdigit());
    match prefix.as_str() {
        "iqn." if !rest.is_empty() => Ok(()),
        "iqn." => bad("nothing after 'iqn.'"),
        "eui." if rest.len() == 16 && hex(rest) => Ok(()),
        "eui." => bad("an eui. name has exactly 16 hex digits"),
        "naa." if (rest.len() == 16 || rest.len() == 32) && hex(rest) => Ok(()),
        "naa." => bad("a naa. name has 16 or 32 hex digits"),
        _ => bad("an iSCSI name starts with 'iqn.', 'eui.' or 'naa.'"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const IQN: &str = "iqn.2003-01.org.linux-iscsi.host:sn.1234";

    #[test]
    fn full_url() {
        let u = parse(&format!("iscsi://10.0.0.5:3261/{IQN}/7")).unwrap();
        assert_eq!(u.host, "10.0.0.5");
        assert_eq!(u.port, 3261);
        assert_eq!(u.iqn, IQN);
        assert_eq!(u.lun, Some(7));
        assert_eq!(u.to_string(), format!("iscsi://10.0.0.5:3261/{IQN}/7"));
    }

    #[test]
    fn defaults_and_case_insensitive_scheme() {
        let u = parse(&format!("ISCSI://san.example.com/{IQN}")).unwrap();
        assert_eq!(u.port, 3260);
        assert_eq!(u.lun, None);
        assert_eq!(u.to_string(), format!("iscsi://san.example.com:3260/{IQN}"));
        assert!(is_iscsi_url("IsCsI://x"));
        assert!(!is_iscsi_url("/dev/sda"));
        assert!(!is_iscsi_url("iscsi:"));
    }

    #[test]
    fn ipv6() {
        let u = parse("iscsi://[::1]:3261/iqn.x/0").unwrap();
        assert_eq!(u.host, "::1");
        assert_eq!(u.portal(), "[::1]:3261");
        assert_eq!(u.to_string(), "iscsi://[::1]:3261/iqn.x/0");
        let u = parse("iscsi://[fe80:0::1]/iqn.x").unwrap();
        assert_eq!(u.portal(), "[fe80::1]:3260");
        let e = |s: &str| parse(s).unwrap_err();
        assert!(matches!(e("iscsi://::1/iqn.x"), UrlError::BadHost(..)));
        assert!(matches!(e("iscsi://[::1/iqn.x"), UrlError::BadHost(..)));
        assert!(matches!(e("iscsi://[zz]/iqn.x"), UrlError::BadHost(..)));
        assert!(matches!(
            e("iscsi://[::1]x/iqn.x"),
            UrlError::TrailingJunk(..)
        ));
    }

    #[test]
    fn with_lun_and_eui_naa() {
        let u = parse("iscsi://h/eui.0123456789ABCDEF").unwrap();
        assert_eq!(
            u.with_lun(3).to_string(),
            "iscsi://h:3260/eui.0123456789ABCDEF/3"
        );
        assert!(parse("iscsi://h/naa.0123456789abcdef0123456789abcdef/1").is_ok());
        let e = |s: &str| parse(s).unwrap_err();
        assert!(matches!(e("iscsi://h/eui.0123"), UrlError::BadIqn(..)));
        assert!(matches!(e("iscsi://h/naa.xyz"), UrlError::BadIqn(..)));
    }

    #[test]
    fn rejects() {
        let e = |s: &str| parse(s).unwrap_err();
        assert!(matches!(e("http://h/iqn.x"), UrlError::WrongScheme(s) if s == "http"));
        assert_eq!(e("h/iqn.x"), UrlError::NoScheme);
        assert_eq!(e("iscsi:///iqn.x"), UrlError::EmptyHost);
        assert_eq!(e("iscsi://:3260/iqn.x"), UrlError::EmptyHost);
        assert!(matches!(e("iscsi://h:0/iqn.x"), UrlError::BadPort(_)));
        assert!(matches!(e("iscsi://h:65536/iqn.x"), UrlError::BadPort(_)));
        assert!(matches!(e("iscsi://h:abc/iqn.x"), UrlError::BadPort(_)));
        assert!(matches!(e("iscsi://h:/iqn.x"), UrlError::BadPort(_)));
        assert!(matches!(e("iscsi://h:+5/iqn.x"), UrlError::BadPort(_)));
        assert_eq!(e("iscsi://h"), UrlError::MissingIqn);
        assert_eq!(e("iscsi://h/"), UrlError::MissingIqn);
        assert!(matches!(e("iscsi://h/target0/1"), UrlError::BadIqn(..)));
        assert!(matches!(e("iscsi://h/iqn.x/abc"), UrlError::BadLun(_)));
        assert!(matches!(e("iscsi://h/iqn.x/"), UrlError::BadLun(_)));
        assert!(matches!(e("iscsi://h/iqn.x/-1"), UrlError::BadLun(_)));
        assert_eq!(e("iscsi://h/iqn.x/16384"), UrlError::LunTooLarge(16384));
        assert!(parse("iscsi://h/iqn.x/16383").is_ok());
        assert!(matches!(
            e("iscsi://h/iqn.x/1/2"),
            UrlError::TrailingJunk(..)
        ));
        assert!(matches!(e("iscsi://h/iqn.x?a=b"), UrlError::BadIqn(..)));
        assert!(matches!(e("iscsi://h bad/iqn.x"), UrlError::BadHost(..)));
    }

    #[test]
    fn userinfo_is_refused_without_echoing_the_secret() {
        for s in [
            "iscsi://user:s3cretpass@h/iqn.x/0",
            "iscsi://user@h/iqn.x",
            "iscsi://user:s3cretpass@[::1]/iqn.x",
            "iscsi://user:s3cret/pass@h/iqn.x",
        ] {
            let e = parse(s).unwrap_err();
            assert_eq!(e, UrlError::UserInfo);
            let msg = e.to_string();
            assert!(msg.contains("--chap-secret-file"), "{msg}");
            assert!(!msg.contains("s3cret"), "{msg}");
        }
        assert_eq!(parse_portal("u:p@h").unwrap_err(), UrlError::UserInfo);
    }

    #[test]
    fn messages_name_the_problem() {
        let msg = |s: &str| parse(s).unwrap_err().to_string();
        assert!(msg("iscsi://h/iqn.x/20000").contains("flat addressing"));
        assert!(msg("iscsi://h:99999/iqn.x").contains("99999"));
        assert!(msg("iscsi://h/foo").contains("'iqn.'"));
    }

    #[test]
    fn portal() {
        assert_eq!(parse_portal("10.1.1.1").unwrap(), ("10.1.1.1".into(), 3260));
        assert_eq!(parse_portal("san:3261").unwrap(), ("san".into(), 3261));
        assert_eq!(parse_portal("[::1]:3262").unwrap(), ("::1".into(), 3262));
        assert_eq!(parse_portal("::1").unwrap(), ("::1".into(), 3260));
        assert!(parse_portal("").is_err());
        assert!(parse_portal("h:0").is_err());
        assert!(parse_portal("h/iqn.x").is_err());
        assert_eq!(
            parse_portal("iscsi://h").unwrap_err(),
            UrlError::PortalIsUrl
        );
    }

    #[test]
    fn from_str_roundtrip() {
        let u: IscsiUrl = format!("iscsi://[2001:db8::2]:3260/{IQN}/255")
            .parse()
            .unwrap();
        assert_eq!(parse(&u.to_string()).unwrap(), u);
    }
}
