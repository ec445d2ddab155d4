//! Access specifications (docs/disk.md): Iometer's lists of
//! lines, each with its share of the I/Os, and the built-in ones: the
//! twelve of the studies and Iometer's four classic mixed patterns.

use crate::DiskError;
use serde::Serialize;
use std::time::Duration;

/// One line of an access specification: its share of the I/Os ("% of
/// access") and the transfer it makes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AccessLine {
    /// Percent of the I/Os this line makes; a spec's lines add up to 100.
    pub share_pct: u32,
    /// Transfer size in bytes.
    pub bs: u64,
    pub read_pct: u32,
    pub random_pct: u32,
    /// Iometer's transfer delay: the wait before each burst.
    #[serde(serialize_with = "ser_duration")]
    pub burst_delay: Duration,
    pub burst_len: u32,
    /// Offset alignment; None: the target's logical block size.
    pub align: Option<u64>,
}

fn ser_duration<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

/// 4 KiB random reads.
impl Default for AccessLine {
    fn default() -> Self {
        AccessLine::new(100, 4096, 100, 100)
    }
}

impl AccessLine {
    /// A line without delay or bursts, aligned on the target's blocks.
    pub const fn new(share_pct: u32, bs: u64, read_pct: u32, random_pct: u32) -> Self {
        AccessLine {
            share_pct,
            bs,
            read_pct,
            random_pct,
            burst_delay: Duration::ZERO,
            burst_len: 1,
            align: None,
        }
    }
}

/// An access specification: its lines and the outstanding I/Os it is run at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AccessSpec {
    pub name: String,
    pub lines: Vec<AccessLine>,
    /// Outstanding I/Os per worker and target.
    pub qd: u32,
    /// Where the figures come from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<&'static str>,
}

/// Most lines a spec may have (Iometer's editor allows 100).
pub const MAX_LINES: usize = 100;

/// Checks a spec's lines: at least one, each share positive, the shares
/// adding up to 100. `what` names the spec in the message.
pub fn check_lines(lines: &[AccessLine], what: &str) -> Result<(), DiskError> {
    let bad = |m: String| Err(DiskError::Invalid(format!("{what}: {m}")));
    if lines.is_empty() {
        return bad("has no lines".into());
    }
    if lines.len() > MAX_LINES {
        return bad(format!("has {} lines; at most {MAX_LINES}", lines.len()));
    }
    if let Some((i, _)) = lines.iter().enumerate().find(|(_, l)| l.share_pct == 0) {
        return bad(format!("line {} has a share of 0 %", i + 1));
    }
    let total: u64 = lines.iter().map(|l| l.share_pct as u64).sum();
    if total != 100 {
        let shares: Vec<String> = lines.iter().map(|l| l.share_pct.to_string()).collect();
        return bad(format!(
            "the lines' shares add up to {total} % ({}); they must add up to 100 %",
            shares.join(" + ")
        ));
    }
    Ok(())
}

/// (share %, transfer size) of each line of a built-in spec.
type Sizes = &'static [(u32, u64)];

/// A built-in spec as written here: lines of (share %, transfer size).
struct Builtin {
    name: &'static str,
    sizes: Sizes,
    read_pct: u32,
    random_pct: u32,
    qd: u32,
    source: Option<&'static str>,
}

const K: u64 = 1024;

const fn one(name: &'static str, sizes: Sizes, read: u32, random: u32, qd: u32) -> Builtin {
    Builtin {
        name,
        sizes,
        read_pct: read,
        random_pct: random,
        qd,
        source: None,
    }
}

/// Iometer's four classic patterns (docs/disk.md cites where the figures
/// come from); run at QD 16 unless told otherwise.
const IOMETER: &str = "Iometer's classic access patterns (docs/disk.md, \"The mixed built-ins\")";

const fn classic(name: &'static str, sizes: Sizes, read: u32, random: u32) -> Builtin {
    Builtin {
        source: Some(IOMETER),
        ..one(name, sizes, read, random, 16)
    }
}

const BUILTINS: &[Builtin] = &[
    one("web-file-server-4k", &[(100, 4 * K)], 95, 75, 64),
    one("web-file-server-8k", &[(100, 8 * K)], 95, 75, 28),
    one("web-file-server-64k", &[(100, 64 * K)], 95, 75, 20),
    one("dss-1m", &[(100, 1024 * K)], 100, 100, 4),
    one("media-streaming-64k", &[(100, 64 * K)], 98, 0, 1),
    one("sql-server-log-64k", &[(100, 64 * K)], 0, 0, 1),
    one("os-paging-64k", &[(100, 64 * K)], 90, 0, 1),
    one("web-server-log-8k", &[(100, 8 * K)], 0, 0, 12),
    one("db-oltp-8k", &[(100, 8 * K)], 70, 100, 28),
    one("exchange-email-4k", &[(100, 4 * K)], 67, 100, 52),
    one("os-drive-8k", &[(100, 8 * K)], 70, 100, 28),
    one("video-on-demand-512k", &[(100, 512 * K)], 100, 100, 4),
    classic(
        "iometer-file-server",
        &[
            (10, 512),
            (5, K),
            (5, 2 * K),
            (60, 4 * K),
            (2, 8 * K),
            (4, 16 * K),
            (4, 32 * K),
            (10, 64 * K),
        ],
        80,
        100,
    ),
    classic(
        "iometer-web-server",
        &[
            (22, 512),
            (15, K),
            (8, 2 * K),
            (23, 4 * K),
            (15, 8 * K),
            (2, 16 * K),
            (6, 32 * K),
            (7, 64 * K),
            (1, 128 * K),
            (1, 512 * K),
        ],
        100,
        100,
    ),
    classic("iometer-database", &[(100, 8 * K)], 67, 100),
    classic("iometer-workstation", &[(100, 8 * K)], 80, 80),
];

impl Builtin {
    fn spec(&self) -> AccessSpec {
        AccessSpec {
            name: self.name.to_string(),
            lines: (self.sizes.iter())
                .map(|&(share, bs)| AccessLine::new(share, bs, self.read_pct, self.random_pct))
                .collect(),
            qd: self.qd,
            source: self.source,
        }
    }
}

/// Every built-in access specification, in the order `iotoll disk specs` lists them.
pub fn builtin_specs() -> Vec<AccessSpec> {
    BUILTINS.iter().map(Builtin::spec).collect()
}

pub fn builtin_names() -> Vec<&'static str> {
    BUILTINS.iter().map(|b| b.name).collect()
}

pub fn find(name: &str) -> Option<AccessSpec> {
    BUILTINS.iter().find(|s| s.name == name).map(Builtin::spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sixteen_specs_with_unique_names_and_whole_shares() {
        let all = builtin_specs();
        assert_eq!(all.len(), 16);
        let mut n = builtin_names();
        n.sort();
        n.dedup();
        assert_eq!(n.len(), 16);
        for s in &all {
            check_lines(&s.lines, &s.name).unwrap();
        }
        let d = find("dss-1m").unwrap();
        assert_eq!(d.lines, [AccessLine::new(100, 1 << 20, 100, 100)]);
        assert_eq!(d.qd, 4);
        assert!(find("nope").is_none());
    }

    /// The published lines (issue 11; docs/disk.md cites the source).
    #[test]
    fn the_classic_mixes_have_their_published_lines() {
        let sizes = |n: &str| -> Vec<(u32, u64)> {
            find(n)
                .unwrap()
                .lines
                .iter()
                .map(|l| (l.share_pct, l.bs))
                .collect()
        };
        assert_eq!(
            sizes("iometer-file-server"),
            [
                (10, 512),
                (5, 1024),
                (5, 2048),
                (60, 4096),
                (2, 8192),
                (4, 16384),
                (4, 32768),
                (10, 65536)
            ]
        );
        assert_eq!(sizes("iometer-web-server").len(), 10);
        assert_eq!(sizes("iometer-web-server")[9], (1, 512 * 1024));
        let mix = |n: &str| {
            let l = &find(n).unwrap().lines[0];
            (l.bs, l.read_pct, l.random_pct)
        };
        assert_eq!(mix("iometer-file-server"), (512, 80, 100));
        assert_eq!(mix("iometer-web-server"), (512, 100, 100));
        assert_eq!(mix("iometer-database"), (8192, 67, 100));
        assert_eq!(mix("iometer-workstation"), (8192, 80, 80));
    }

    #[test]
    fn shares_must_add_up_to_100() {
        let l = |share| AccessLine::new(share, 4096, 100, 100);
        let err = |lines: &[AccessLine], what| check_lines(lines, what).unwrap_err().to_string();
        let e = err(&[l(60), l(30)], "spec 'x'");
        assert!(
            e.contains("spec 'x'") && e.contains("90 % (60 + 30)"),
            "{e}"
        );
        let e = err(&[l(100), l(0)], "s");
        assert!(e.contains("line 2 has a share of 0 %"), "{e}");
        assert!(err(&[], "s").contains("no lines"));
        check_lines(&[l(40), l(60)], "s").unwrap();
    }
}
