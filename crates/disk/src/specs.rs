//! The built-in Iometer access specifications (DESIGN.md). Burst: transfer
//! delay 0, burst length 1; I/Os aligned on sector boundaries.

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct AccessSpec {
    pub name: &'static str,
    /// Transfer size in bytes.
    pub bs: u64,
    pub read_pct: u32,
    pub random_pct: u32,
    /// Outstanding I/Os per target.
    pub qd: u32,
}

const K: u64 = 1024;

pub const BUILTIN_SPECS: &[AccessSpec] = &[
    spec("web-file-server-4k", 4 * K, 95, 75, 64),
    spec("web-file-server-8k", 8 * K, 95, 75, 28),
    spec("web-file-server-64k", 64 * K, 95, 75, 20),
    spec("dss-1m", 1024 * K, 100, 100, 4),
    spec("media-streaming-64k", 64 * K, 98, 0, 1),
    spec("sql-server-log-64k", 64 * K, 0, 0, 1),
    spec("os-paging-64k", 64 * K, 90, 0, 1),
    spec("web-server-log-8k", 8 * K, 0, 0, 12),
    spec("db-oltp-8k", 8 * K, 70, 100, 28),
    spec("exchange-email-4k", 4 * K, 67, 100, 52),
    spec("os-drive-8k", 8 * K, 70, 100, 28),
    spec("video-on-demand-512k", 512 * K, 100, 100, 4),
];

const fn spec(name: &'static str, bs: u64, read_pct: u32, random_pct: u32, qd: u32) -> AccessSpec {
    AccessSpec {
        name,
        bs,
        read_pct,
        random_pct,
        qd,
    }
}

pub fn find(name: &str) -> Option<&'static AccessSpec> {
    BUILTIN_SPECS.iter().find(|s| s.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn twelve_specs_with_unique_names() {
        assert_eq!(BUILTIN_SPECS.len(), 12);
        let mut n: Vec<_> = BUILTIN_SPECS.iter().map(|s| s.name).collect();
        n.sort();
        n.dedup();
        assert_eq!(n.len(), 12);
        let d = find("dss-1m").unwrap();
        assert_eq!(
            (d.bs, d.read_pct, d.random_pct, d.qd),
            (1 << 20, 100, 100, 4)
        );
        assert!(find("nope").is_none());
    }
}
