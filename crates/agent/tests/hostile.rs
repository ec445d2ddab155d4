//! issue 24: what an agent does against a console, a target and a peer
//! that try to make it write outside its allow-list, and what a console
//! does with a hostile or broken agent's report.

mod common;

use common::{agent, allow, disk_order, expect, raw_console};
use iotoll_agent::wire::{self, FromAgent, ToAgent, Work};
use std::time::Duration;

/// An allowed `:rw` target swapped for a symlink to a file outside the
/// allow-list between PREPARE and START: the agent writes only the file
/// it prepared, never the other one; prepared again, the symlink is refused.
#[test]
fn an_allowed_target_swapped_for_a_symlink_after_prepare_is_not_written() {
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("outside");
    std::fs::write(&outside, vec![0x55u8; 4 << 20]).unwrap();
    let allowed = dir.path().join("a.tst");
    let addr = agent(vec![allow(&allowed, true)]);
    let link = raw_console(addr);
    let order = disk_order(0, 1 << 20);
    link.send(&ToAgent::Prepare {
        test: 1,
        work: Box::new(Work::Disk {
            order: order.clone(),
        }),
    });
    let m = expect(&link, |m| {
        matches!(m, FromAgent::Prepared { .. } | FromAgent::Error { .. })
    });
    assert!(matches!(m, FromAgent::Prepared { test: 1, .. }), "{m:?}");
    let moved = dir.path().join("moved");
    std::fs::rename(&allowed, &moved).unwrap();
    std::os::unix::fs::symlink(&outside, &allowed).unwrap();
    let now = wire::now_ns();
    let ms = |n: i64| n * 1_000_000;
    link.send(&ToAgent::Start {
        test: 1,
        on_ns: now + ms(300),
        off_ns: now + ms(800),
    });
    let m = expect(&link, |m| {
        matches!(m, FromAgent::Report { .. } | FromAgent::Error { .. })
    });
    assert!(
        std::fs::read(&outside).unwrap().iter().all(|b| *b == 0x55),
        "the file outside the allow-list was written"
    );
    if let FromAgent::Report { report, .. } = &m {
        let doc = report.disk.as_ref().expect("a disk report");
        assert!(doc.metrics["write_iops"] > 0.0, "{:?}", doc.metrics);
    }
    link.send(&ToAgent::Release { test: 1 });
    // Prepared again: the symlink now at the allowed path is refused.
    link.send(&ToAgent::Prepare {
        test: 2,
        work: Box::new(Work::Disk { order }),
    });
    let m = expect(&link, |m| {
        matches!(m, FromAgent::Prepared { .. } | FromAgent::Error { .. })
    });
    assert!(
        matches!(&m, FromAgent::Error { msg, .. } if msg.contains("symbolic link")),
        "{m:?}"
    );
    std::thread::sleep(Duration::from_millis(100));
    assert!(std::fs::read(&outside).unwrap().iter().all(|b| *b == 0x55));
    link.send(&ToAgent::Bye {});
}
