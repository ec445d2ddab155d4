//! `disk specs`: the built-in access specifications, a line each of
//! their lines.

use iotoll_disk::{AccessLine, AccessSpec};
use iotoll_model::format_size;
use std::fmt::Write;

/// The specs' table, and what their lines mean.
pub fn specs(all: &[AccessSpec]) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{:<22} {:>7} {:>6} {:>7} {:>9} {:>4}",
        "spec", "share %", "size", "read %", "random %", "QD"
    );
    let mut row = |name: &str, share: &str, l: &AccessLine, qd: &str| {
        let (bs, read, random) = (format_size(l.bs), l.read_pct, l.random_pct);
        let _ = writeln!(
            o,
            "{name:<22} {share:>7} {bs:>6} {read:>7} {random:>9} {qd:>4}"
        );
    };
    for s in all {
        let qd = s.qd.to_string();
        for (i, l) in s.lines.iter().enumerate() {
            // A mixed spec's name and QD on its first line only.
            let (name, qd) = match i {
                0 => (s.name.as_str(), qd.as_str()),
                _ => ("", ""),
            };
            row(name, &l.share_pct.to_string(), l, qd);
        }
    }
    o.push_str("\nMixed specs draw each I/O's line by its share; the iometer-* specs are Iometer's classic patterns (docs/disk.md cites them).\n");
    o
}
