//! Ctrl-C and SIGTERM: the first asks the run to stop cleanly and report
//! what it measured; a second Ctrl-C exits at once.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

/// Exit status of a run cut short by Ctrl-C or SIGTERM (128 + SIGINT).
pub const EXIT_INTERRUPTED: u8 = 130;

static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// Installs the handlers (once) and returns the flag they set.
pub fn install() -> Arc<AtomicBool> {
    FLAG.get_or_init(|| {
        let flag = Arc::new(AtomicBool::new(false));
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            // A second signal while the flag is set exits immediately.
            let _ = signal_hook::flag::register_conditional_shutdown(
                sig,
                EXIT_INTERRUPTED as i32,
                flag.clone(),
            );
            let _ = signal_hook::flag::register(sig, flag.clone());
        }
        flag
    })
    .clone()
}

/// Whether a Ctrl-C or SIGTERM came.
pub fn interrupted() -> bool {
    FLAG.get().is_some_and(|f| f.load(Ordering::Relaxed))
}
