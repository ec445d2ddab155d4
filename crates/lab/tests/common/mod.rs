//! What the lab integration tests share: a state directory per test
//! binary, the root check, unique lab names, and the namespaces a lab left.

#![allow(dead_code)]

use std::collections::BTreeSet;
use std::path::PathBuf;

/// Gives this test binary (`tag`) its own lab state directory, once;
/// whether the tests can run: as root, or skipped (failed under CI).
pub fn setup(tag: &str) -> bool {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("lab-state-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        // Set once, before any test uses the library (all go through here).
        std::env::set_var("IOTOLL_LAB_DIR", &d);
        d
    });
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        assert!(
            std::env::var_os("CI").is_none(),
            "root is needed, but CI must run this test"
        );
        eprintln!("skipped: needs root");
    }
    root
}

/// A lab name unique to this process, test binary (`prefix`) and test.
pub fn unique(prefix: &str, tag: &str) -> String {
    format!("{prefix}{}-{tag}", std::process::id() % 100_000)
}

/// The network namespaces whose names start with `prefix`.
pub fn netns_with(prefix: &str) -> BTreeSet<String> {
    std::fs::read_dir("/run/netns")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.starts_with(prefix))
        .collect()
}
