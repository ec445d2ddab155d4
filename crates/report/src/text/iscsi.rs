//! `iscsi discover` and `iscsi luns`. Names, addresses, INQUIRY strings
//! and a sense's text are the target's word: shown, never obeyed by the
//! terminal.

use iotoll_iscsi::inquiry::{Discovery, LunList};
use iotoll_model::text::printable;
use std::fmt::Write;

/// The targets a portal offers, a name and its addresses each;
/// `initiator` is the name that saw none.
pub fn discovery(d: &Discovery, initiator: &str) -> String {
    let mut o = String::new();
    if d.targets.is_empty() {
        let portal = &d.portal;
        let _ = writeln!(
            o,
            "{portal}: no targets offered to this initiator ({initiator})"
        );
    }
    for t in &d.targets {
        let _ = writeln!(o, "{}", printable(&t.name));
        for a in &t.addresses {
            let _ = writeln!(o, "    {}", printable(a));
        }
    }
    o
}

/// A target's LUNs, a line each.
pub fn luns(doc: &LunList) -> String {
    let mut o = String::new();
    let (target, portal, n) = (&doc.target, &doc.portal, doc.luns.len());
    let _ = writeln!(o, "{target} at {portal} ({n} LUNs)");
    let _ = writeln!(
        o,
        "{:>5}  {:<8} {:<16} {:<4} {:>6} {:>14}  url",
        "LUN", "vendor", "product", "rev", "block", "capacity"
    );
    for l in &doc.luns {
        let cap = match (l.capacity_bytes, &l.error) {
            (Some(c), _) => iotoll_model::format_size(c),
            (None, Some(e)) => printable(e).into_owned(),
            (None, None) => "-".into(),
        };
        let _ = writeln!(
            o,
            "{:>5}  {:<8} {:<16} {:<4} {:>6} {:>14}  {}",
            l.lun,
            printable(&l.vendor),
            printable(&l.product),
            printable(&l.revision),
            l.block_size.map_or("-".into(), |b| b.to_string()),
            cap,
            l.url
        );
    }
    o
}
