//! SIGINT and SIGTERM during a run (docs/lorch.md, "Failures, Ctrl-C and resuming"): the
//! first one is noted, and the scheduler, which looks at [`received`] between messages,
//! records the run `aborted`, stops every agent and what they started, and exits; `lorch
//! resume` continues the run. A second signal while that happens ends lorch at once (the
//! default action), for a user who does not want to wait.
//!
//! The handler only stores the signal's number: all the work happens in the scheduler's
//! thread, outside the handler, where anything may be done.

use std::sync::atomic::{AtomicI32, Ordering};

static RECEIVED: AtomicI32 = AtomicI32::new(0);

extern "C" fn note(signal: libc::c_int) {
    if RECEIVED.swap(signal, Ordering::SeqCst) != 0 {
        // SAFETY: signal(2) and raise(3) are async-signal-safe; the second signal gets its
        // default action, which ends the process.
        unsafe {
            libc::signal(signal, libc::SIG_DFL);
            libc::raise(signal);
        }
    }
}

/// Catches SIGINT and SIGTERM from now on (for the rest of the process: a run's).
pub fn install() {
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: `note` only touches an atomic and calls async-signal-safe functions.
        unsafe {
            libc::signal(signal, note as *const () as libc::sighandler_t);
        }
    }
}

/// The signal that asked the run to stop, by name, if one came.
pub fn received() -> Option<&'static str> {
    match RECEIVED.load(Ordering::SeqCst) {
        0 => None,
        libc::SIGINT => Some("SIGINT"),
        libc::SIGTERM => Some("SIGTERM"),
        _ => Some("a signal"),
    }
}

/// Sleeps `total`, or less when a signal comes meanwhile (a backoff must not hold an abort).
pub fn sleep(total: std::time::Duration) {
    let until = std::time::Instant::now() + total;
    let slice = std::time::Duration::from_millis(50);
    while received().is_none() {
        let now = std::time::Instant::now();
        if now >= until {
            return;
        }
        std::thread::sleep(slice.min(until - now));
    }
}
