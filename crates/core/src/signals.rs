//! Interruption, at the bottom of the pipeline: Ctrl-C and SIGTERM set
//! [`INTERRUPTED`]; every long loop (the driver's steps, a load's
//! batches, a device's setup, a server's start) looks at it and stops,
//! and cleanup runs to its end.

use std::sync::atomic::{AtomicBool, Ordering};

/// Set by the Ctrl-C handler: the running step's collector (which looks
/// every 50 ms at most) stops its threads, and the step records what it
/// measured.
pub static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Held while a second interrupt's handler cleans up (see
/// [`catch_interrupts`]); [`exit`] waits for it.
static EXITING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Ends the process with `code`, unless a second interrupt's handler is
/// cleaning up: then it waits, and the handler ends the process (130),
/// so its cleanup is never cut short.
pub fn exit(code: i32) -> ! {
    let _held = EXITING.lock();
    std::process::exit(code)
}

/// Makes Ctrl-C and SIGTERM set [`INTERRUPTED`]: work stops at its next
/// look and cleanup runs to its end. A second signal calls `second`
/// (None: it is ignored, as the first one's cleanup is then short and
/// sure), for when waiting is no longer wanted: a run's `second` kills
/// what it started, removes what it made and exits.
///
/// (`second` is the binary's `runner::abort`.)
pub fn catch_interrupts(second: Option<fn()>) {
    // Fails only when a handler is already set, which is then ours.
    let _ = ctrlc::set_handler(move || {
        if INTERRUPTED.swap(true, Ordering::SeqCst) {
            if let Some(f) = second {
                let _held = EXITING.lock();
                f();
            }
        }
    });
}
