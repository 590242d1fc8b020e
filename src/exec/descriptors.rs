//! Only what git-loaf opened reaches code (docs/sandbox-and-safety.md): descriptors git-loaf
//! inherited from whoever started it — a shell's `exec 7>>file`, an editor's or an agent's pipes, a
//! CI runner's sockets, a library caller's files — never reach the code it runs (a reply's
//! `exec`, a git hook, a loaf.yml hook).
//!
//! Such a descriptor bypasses every other wall: one open on the real git dir lets code plant
//! a hook that the user's next `git commit` runs outside any sandbox, one open on a file
//! appends to it, one on the MCP protocol stream forges messages to the client. So two
//! things happen, each enough on its own for the code's process:
//!
//! - [`withhold_inherited`], first thing in `main` (and again when the MCP server starts),
//!   marks every descriptor above 2 close-on-exec: no program git-loaf starts (git, a
//!   signing program, code) gets them.
//! - [`withhold_from`], on every command that runs code, closes in the child, before any
//!   other preparation, every descriptor above 2 that was open when the command was
//!   spawned, and marks the rest close-on-exec. This covers a library caller that never ran
//!   `main`, and the sandbox's relay and init (which never exec): a descriptor open in them
//!   would stay reachable through `/proc`.
//!
//! Git-loaf's own pipes to the child are made while spawning, after the list is taken, and
//! are moved to 0–2 before the child's preparation runs, so they keep working; so does the
//! pipe std uses to report a failed exec. (Should another thread close a listed descriptor
//! before the fork and std's pipe take its number, the child closes that pipe: a program
//! that cannot be started then shows as a child killed by SIGABRT instead of "not found";
//! nothing else changes.)

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::Command;

use rustix::fs::{Mode, OFlags};
use rustix::io::FdFlags;

/// Where the descriptor-by-descriptor fallback stops, on kernels without
/// `close_range(CLOSE_RANGE_CLOEXEC)` (before Linux 5.11) and without a listable
/// `/proc/self/fd` (in the child, where nothing may be allocated).
const FALLBACK_BOUND: RawFd = 4096;

/// Marks every descriptor above 2 this process holds close-on-exec, so that no program it
/// starts inherits them. Call it first thing in a program built on git-loaf.
pub(crate) fn withhold_inherited() {
    if mark_close_on_exec_from(3) {
        return;
    }
    for fd in open_above_stdio() {
        // SAFETY: `fd` was just listed as open; setting a flag on it does not close it.
        let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
        let _ = rustix::io::fcntl_setfd(fd, FdFlags::CLOEXEC);
    }
}

/// Makes `command`'s child close every descriptor above 2 that this process holds now and
/// mark any other one close-on-exec, before any other preparation registered after this
/// call runs (the sandbox's, see `sandbox/namespaces.rs`).
pub(crate) fn withhold_from(command: &mut Command) {
    let open = open_above_stdio();
    // SAFETY: the closure runs in the forked child and only makes system calls on the list
    // prepared here; it allocates nothing.
    unsafe {
        command.pre_exec(move || {
            for &fd in &open {
                libc::close(fd);
            }
            if !mark_close_on_exec_from(3) {
                for fd in 3..FALLBACK_BOUND {
                    let flags = libc::fcntl(fd, libc::F_GETFD);
                    if flags >= 0 {
                        libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
                    }
                }
            }
            Ok(())
        });
    }
}

/// `close_range(low, ~0, CLOSE_RANGE_CLOEXEC)`: whether the kernel did it (Linux 5.11).
fn mark_close_on_exec_from(low: u32) -> bool {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: a plain system call; it changes flags only, closing nothing.
        let done = unsafe {
            libc::syscall(
                libc::SYS_close_range,
                low,
                u32::MAX,
                libc::CLOSE_RANGE_CLOEXEC,
            )
        };
        done == 0
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = low;
        false
    }
}

/// The descriptors above 2 this process holds, from `/proc/self/fd` (without the one used
/// to list them, which is closed again when this returns); on a system without it, every
/// valid one below [`FALLBACK_BOUND`].
fn open_above_stdio() -> Vec<RawFd> {
    match listed_in_proc() {
        Some(listed) => listed,
        None => (3..FALLBACK_BOUND)
            .filter(|&fd| {
                // SAFETY: a plain system call on a number; an unused one answers EBADF.
                unsafe { libc::fcntl(fd, libc::F_GETFD) >= 0 }
            })
            .collect(),
    }
}

fn listed_in_proc() -> Option<Vec<RawFd>> {
    let dir: OwnedFd = rustix::fs::open(
        "/proc/self/fd",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()?;
    let own = dir.as_raw_fd();
    let mut entries = rustix::fs::Dir::new(dir).ok()?;
    let mut open = Vec::new();
    while let Some(entry) = entries.read() {
        let entry = entry.ok()?;
        let Some(fd) = entry
            .file_name()
            .to_str()
            .ok()
            .and_then(|name| name.parse::<RawFd>().ok())
        else {
            continue;
        };
        if fd > 2 && fd != own {
            open.push(fd);
        }
    }
    Some(open)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_listing_holds_an_open_file() {
        let file = tempfile::tempfile().expect("a temporary file");
        let listed = open_above_stdio();
        assert!(listed.contains(&file.as_raw_fd()), "{listed:?}");
        assert!(listed.iter().all(|&fd| fd > 2), "{listed:?}");
    }
}
