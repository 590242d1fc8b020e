//! The isolated run (Linux): the code's process in new user, mount, PID and network
//! namespaces under a root of its own, set up between `fork` and `exec` by std's
//! `pre_exec`.
//!
//! Three processes, all in the code's process group (so the timeout's group kill reaches
//! them all):
//!
//! ```text
//! git-loaf ── relay (the spawned child; outside the PID namespace)
//!               └── init (pid 1 of the new namespace)
//!                     └── the code (bash, python3, node, sh)
//! ```
//!
//! The relay makes the namespaces and the code's root (see [`super::mounts`] for the
//! mounts), forks the init, and ends the way the code ended, so git-loaf sees the code's
//! exit code or signal. The init forks the code, reaps orphans, and exits as soon as the
//! code's process does: the kernel then kills everything left in the namespace (a
//! `sleep 1000 &`, a `setsid` daemon). Each of the relay and the init has
//! `PR_SET_PDEATHSIG = SIGKILL`, so SIGKILL to git-loaf takes the relay, then the init, then
//! the namespace. The code itself starts with no capability and `no_new_privs`: inside its
//! user namespace it could otherwise unmount what hides the user's files.
//!
//! Between `fork` and `exec` only system calls run: every path and string is prepared
//! before, as C strings, and nothing allocates. Every descriptor git-loaf held before the
//! spawn is closed first thing in the relay (`exec/descriptors.rs`), so none reaches the
//! init or the code; the relay and the init then close the rest of theirs once they have
//! forked (in particular std's pipe that reports a failed exec, which git-loaf reads until
//! every copy is closed).

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

use rustix::fs::{Mode, OFlags};
use rustix::mount::{MountFlags, MountPropagationFlags};
use rustix::pipe::PipeFlags;
use rustix::process::Signal;
use rustix::thread::UnshareFlags;

/// Exit code of the relay or init when setting up failed after the point where an error can
/// be reported to git-loaf as a spawn error.
const SETUP_FAILED: i32 = 125;

/// In the relay, once the code's root is in place: forks the init (which forks the code and
/// returns, to let std exec it, only in the code's process); the relay ends in here as the
/// code ended.
pub(super) fn fork_init() -> io::Result<()> {
    let (status_read, status_write) = rustix::pipe::pipe_with(PipeFlags::CLOEXEC)?;
    let (alive_read, alive_write) =
        rustix::pipe::pipe_with(PipeFlags::CLOEXEC | PipeFlags::NONBLOCK)?;
    // SAFETY: std forked this process with libc's fork, which leaves libc's own locks
    // usable; only system calls follow in either process until exec or exit.
    match unsafe { libc::fork() } {
        -1 => Err(io::Error::last_os_error()),
        0 => {
            drop(status_read);
            drop(alive_write);
            init(status_write, alive_read)
        }
        init_pid => {
            drop(status_write);
            drop(alive_read);
            relay(init_pid, status_read, alive_write)
        }
    }
}

/// Brings up `lo` in the new network namespace (`SIOCSIFFLAGS` with `IFF_UP`).
pub(super) fn loopback_up() -> io::Result<()> {
    // SAFETY: plain system calls on a socket of our own and a zeroed `ifreq`.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut request: libc::ifreq = std::mem::zeroed();
        request.ifr_name[0] = b'l' as libc::c_char;
        request.ifr_name[1] = b'o' as libc::c_char;
        request.ifr_ifru.ifru_flags = (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
        let done = libc::ioctl(fd, libc::SIOCSIFFLAGS, &request);
        libc::close(fd);
        if done == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }
}

/// The code's process, right before exec: no capability in any set (it runs as root of
/// its user namespace when git-loaf runs as root, and could then undo the mounts), none to
/// regain through exec or set-user-id programs.
fn drop_privileges() -> io::Result<()> {
    // SAFETY: plain prctl system calls; an index past the kernel's last capability answers
    // EINVAL, which ends the loop.
    unsafe {
        for capability in 0..64 {
            if libc::prctl(libc::PR_CAPBSET_DROP, capability, 0, 0, 0) != 0 {
                if io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) {
                    break;
                }
                return Err(io::Error::last_os_error());
            }
        }
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        );
    }
    rustix::thread::set_capabilities(
        None,
        rustix::thread::CapabilitySets {
            effective: rustix::thread::CapabilitySet::empty(),
            permitted: rustix::thread::CapabilitySet::empty(),
            inheritable: rustix::thread::CapabilitySet::empty(),
        },
    )?;
    rustix::thread::set_no_new_privs(true)?;
    Ok(())
}

/// New user, mount and PID namespaces (and network, with `new_network`), with the
/// caller's user and group mapped to themselves and mounts private (nothing done here
/// propagates out).
pub(super) fn enter_namespaces(
    uid_map: &[u8],
    gid_map: &[u8],
    new_network: bool,
) -> io::Result<()> {
    let mut flags = UnshareFlags::NEWUSER | UnshareFlags::NEWNS | UnshareFlags::NEWPID;
    if new_network {
        flags |= UnshareFlags::NEWNET;
    }
    // SAFETY: no FILES flag: the descriptor table stays shared as it was.
    unsafe {
        rustix::thread::unshare_unsafe(flags)?;
    }
    match write_proc(c"/proc/self/setgroups", b"deny") {
        // Kernels before 3.19 have no setgroups file and need no denial.
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        other => other?,
    }
    write_proc(c"/proc/self/uid_map", uid_map)?;
    write_proc(c"/proc/self/gid_map", gid_map)?;
    rustix::mount::mount_change(
        c"/",
        MountPropagationFlags::PRIVATE | MountPropagationFlags::REC,
    )?;
    Ok(())
}

fn write_proc(path: &CStr, data: &[u8]) -> io::Result<()> {
    let fd = rustix::fs::open(path, OFlags::WRONLY | OFlags::CLOEXEC, Mode::empty())?;
    rustix::io::write(&fd, data)?;
    Ok(())
}

/// Pid 1 of the namespace: forks the code, reaps orphans, and exits when the code's process
/// ends (which kills the rest of the namespace), after writing its wait status to the relay.
fn init(status: OwnedFd, alive: OwnedFd) -> io::Result<()> {
    if rustix::process::set_parent_process_death_signal(Some(Signal::KILL)).is_err() {
        exit(SETUP_FAILED);
    }
    // The relay holds the other end of `alive`: end of file means it died before the line
    // above, and nobody would kill this namespace.
    if matches!(rustix::io::read(&alive, &mut [0u8; 1]), Ok(0)) {
        exit(SETUP_FAILED);
    }
    // A /proc of this namespace, for `ps` and `$$`-based tools. Where one cannot be made
    // (a container that masks parts of its /proc), the host's is hidden instead: it would
    // show the user's other processes, whose environment may hold credentials.
    let mounted = rustix::mount::mount(
        c"proc",
        c"/proc",
        c"proc",
        MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC,
        None,
    );
    if mounted.is_err() {
        let _ = rustix::mount::mount(
            c"tmpfs",
            c"/proc",
            c"tmpfs",
            MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC,
            Some(c"mode=555"),
        );
    }
    // SAFETY: as in `fork_init`.
    match unsafe { libc::fork() } {
        -1 => exit(SETUP_FAILED),
        0 => drop_privileges(),
        code => {
            close_other_fds([status.as_raw_fd(), status.as_raw_fd()]);
            let ended = wait_for(code, true);
            let _ = rustix::io::write(&status, &ended.to_ne_bytes());
            exit(0)
        }
    }
}

/// The spawned child: waits for the init and ends as the code ended.
fn relay(init_pid: i32, status: OwnedFd, alive: OwnedFd) -> ! {
    close_other_fds([status.as_raw_fd(), alive.as_raw_fd()]);
    let init_ended = wait_for(init_pid, false);
    let mut raw = [0u8; 4];
    let mut got = 0;
    while got < raw.len() {
        match rustix::io::read(&status, &mut raw[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(_) => break,
        }
    }
    // Without the code's status the init was killed (timeout, git-loaf's death): end as
    // it did.
    let ended = if got == raw.len() {
        i32::from_ne_bytes(raw)
    } else {
        init_ended
    };
    drop(alive);
    end_as(ended)
}

/// Waits for `pid` and returns its wait status; with `reap_others`, children other than
/// `pid` are reaped along the way (the init's duty).
fn wait_for(pid: i32, reap_others: bool) -> i32 {
    let target = if reap_others { -1 } else { pid };
    loop {
        let mut status = 0;
        // SAFETY: a plain system call with a valid pointer.
        let got = unsafe { libc::waitpid(target, &mut status, 0) };
        if got == pid {
            return status;
        }
        if got == -1 && io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            exit(SETUP_FAILED);
        }
    }
}

/// Exits with the same code, or dies of the same signal (without a core dump: that would be
/// a dump of git-loaf's memory).
fn end_as(status: i32) -> ! {
    if libc::WIFEXITED(status) {
        exit(libc::WEXITSTATUS(status));
    }
    if libc::WIFSIGNALED(status) {
        let signal = libc::WTERMSIG(status);
        let no_core = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: plain system calls; the default action of `signal` ends this process.
        unsafe {
            libc::setrlimit(libc::RLIMIT_CORE, &no_core);
            libc::signal(signal, libc::SIG_DFL);
            libc::kill(libc::getpid(), signal);
        }
        exit(128 + signal);
    }
    exit(SETUP_FAILED)
}

/// Closes every descriptor from 3 up except `keep`.
fn close_other_fds(mut keep: [RawFd; 2]) {
    keep.sort_unstable();
    let mut low: u32 = 3;
    for fd in keep {
        let Ok(fd) = u32::try_from(fd) else { continue };
        if fd > low {
            close_range(low, fd - 1);
        }
        low = low.max(fd + 1);
    }
    close_range(low, u32::MAX);
}

fn close_range(low: u32, high: u32) {
    // SAFETY: closing descriptors this process does not use any more.
    let done = unsafe { libc::syscall(libc::SYS_close_range, low, high, 0) } == 0;
    if !done {
        // Kernels before 5.9: one by one, up to a bound that covers what git-loaf opens.
        for fd in low..=high.min(4095) {
            // SAFETY: as above.
            unsafe { libc::close(fd as RawFd) };
        }
    }
}

pub(super) fn exit(code: i32) -> ! {
    // SAFETY: `_exit` runs no handlers and flushes nothing shared with git-loaf.
    unsafe { libc::_exit(code) }
}

/// Whether this process may create the namespaces: a child tries, then exits.
pub(super) fn probe() -> Result<(), String> {
    let uid_map = format!("{0} {0} 1\n", rustix::process::geteuid().as_raw()).into_bytes();
    let gid_map = format!("{0} {0} 1\n", rustix::process::getegid().as_raw()).into_bytes();
    let mut command = Command::new("true");
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: the closure only makes system calls on data prepared here.
    unsafe {
        command.pre_exec(move || {
            enter_namespaces(&uid_map, &gid_map, true)?;
            exit(0)
        });
    }
    let unavailable = |e: io::Error| format!("user namespaces unavailable: {e}");
    let status = command
        .spawn()
        .and_then(|mut child| child.wait())
        .map_err(unavailable)?;
    if status.success() {
        Ok(())
    } else {
        Err(unavailable(io::Error::other(status.to_string())))
    }
}
