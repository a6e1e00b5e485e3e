//! Ctrl-C: long-running subcommands (echo, pub, bench) stop cleanly instead of dying, so that
//! they leave their participant rows closed rather than dead.

use std::sync::atomic::{AtomicBool, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Installs the handler (once; later calls do nothing).
pub fn install() {
    // An error means a handler is installed already (ours): nothing to do.
    let _ = ctrlc::set_handler(|| {
        // Relaxed: a flag polled by the main loop; nothing else is published through it.
        INTERRUPTED.store(true, Ordering::Relaxed);
    });
}

/// Whether Ctrl-C (SIGINT or SIGTERM) was received.
pub fn requested() -> bool {
    // Relaxed: see `install`.
    INTERRUPTED.load(Ordering::Relaxed)
}
