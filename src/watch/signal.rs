//! Ctrl-C (SIGINT) and SIGTERM as a request to stop: the handler only sets a flag, which the
//! watcher reads between applies, so an apply under way always finishes (its commit and
//! files land, or nothing does, as for any apply) before the watcher exits.

use std::sync::atomic::{AtomicBool, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);

/// Whether a stop was asked for.
pub fn requested() -> bool {
    STOP.load(Ordering::SeqCst)
}

#[cfg(unix)]
extern "C" fn on_signal(_signal: libc::c_int) {
    // Only an atomic store: nothing else is safe inside a signal handler.
    STOP.store(true, Ordering::SeqCst);
}

/// Installs the handler for SIGINT and SIGTERM.
#[cfg(unix)]
pub fn install() -> std::io::Result<()> {
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: a zeroed `sigaction` is a valid value to fill in; the handler is an
        // `extern "C"` function that only stores to an atomic (async-signal-safe), and
        // `SA_RESTART` keeps interrupted system calls (reads of the reply, git's I/O) going.
        let installed = unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as *const () as libc::sighandler_t;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut())
        };
        if installed != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Elsewhere the default handling stays: Ctrl-C ends the process.
#[cfg(not(unix))]
pub fn install() -> std::io::Result<()> {
    Ok(())
}
