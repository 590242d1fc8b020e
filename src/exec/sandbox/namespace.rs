//! The isolated run (Linux): the code's process in new user, mount and PID namespaces, set
//! up between `fork` and `exec` by std's `pre_exec`.
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
//! The relay makes the namespaces and mounts (see the parent module), forks the init, and
//! ends the way the code ended, so git-loaf sees the code's exit code or signal. The init
//! forks the code, reaps orphans, and exits as soon as the code's process does: the kernel
//! then kills everything left in the namespace (a `sleep 1000 &`, a `setsid` daemon). Each
//! of the relay and the init has `PR_SET_PDEATHSIG = SIGKILL`, so SIGKILL to git-loaf takes
//! the relay, then the init, then the namespace.
//!
//! Between `fork` and `exec` only system calls run: every path and string is prepared
//! before, as C strings, and nothing allocates. The relay and the init close every other
//! file descriptor they inherited (in particular std's pipe that reports a failed exec,
//! which git-loaf reads until every copy is closed).

use std::ffi::{CStr, CString};
use std::fs;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use rustix::fs::{Mode, OFlags};
use rustix::mount::{MountFlags, MountPropagationFlags};
use rustix::pipe::PipeFlags;
use rustix::process::{Pid, Signal};
use rustix::thread::UnshareFlags;

use super::{Sandbox, Visible};

/// Exit code of the relay or init when setting up failed after the point where an error can
/// be reported to git-loaf as a spawn error.
const SETUP_FAILED: i32 = 125;

/// An isolated run, prepared in git-loaf before the fork.
pub(super) struct Isolated {
    tmp: tempfile::TempDir,
    plan: Plan,
    /// The private mount point of the git common dir, and the real path it stands for.
    scrub: (String, String),
}

/// Everything the relay needs after the fork, as C strings.
struct Plan {
    parent: i32,
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
    /// Bind mounts, in order: the git dir on its private mount point, the git overlays, the
    /// visible entries over their placeholders.
    binds: Vec<(CString, CString)>,
    stage: CString,
    root: CString,
    cwd: CString,
}

impl Isolated {
    /// Prepares a run of code in `cwd` (a path as the code sees it, under the user's root or
    /// outside it).
    pub(super) fn prepare(
        sandbox: &Sandbox,
        visible: &[Visible],
        cwd: &Path,
    ) -> io::Result<Isolated> {
        let tmp = tempfile::Builder::new()
            .prefix("git-loaf-exec-")
            .tempdir()?;
        let common = fs::canonicalize(&sandbox.git_common_dir)?;
        let private_common = tmp.path().join("git");
        fs::create_dir(&private_common)?;
        let mut binds = vec![(c_path(&common)?, c_path(&private_common)?)];
        binds.extend(git_overlays(
            tmp.path(),
            &sandbox.stage_root,
            &common,
            &private_common,
        )?);
        for entry in visible {
            binds.push((c_path(&entry.user)?, c_path(&entry.stage)?));
        }
        let plan = Plan {
            parent: rustix::process::getpid().as_raw_nonzero().get(),
            uid_map: format!("{0} {0} 1\n", rustix::process::geteuid().as_raw()).into_bytes(),
            gid_map: format!("{0} {0} 1\n", rustix::process::getegid().as_raw()).into_bytes(),
            binds,
            stage: c_path(&sandbox.stage_root)?,
            root: c_path(&sandbox.user_root)?,
            cwd: c_path(cwd)?,
        };
        let scrub = (
            private_common.to_string_lossy().into_owned(),
            common.to_string_lossy().into_owned(),
        );
        Ok(Isolated { tmp, plan, scrub })
    }

    /// The private path of the git dir, which git commands may print, and the real one.
    pub(super) fn scrub(&self) -> (String, String) {
        self.scrub.clone()
    }

    /// Makes `command` run isolated. The folder returned holds the mount points: keep it
    /// until the process is gone.
    pub(super) fn install(self, command: &mut Command) -> tempfile::TempDir {
        let plan = self.plan;
        // SAFETY: the closure runs in the forked child and only makes system calls on data
        // prepared here (see `Plan::enter`).
        unsafe {
            command.pre_exec(move || plan.enter());
        }
        self.tmp
    }
}

/// Bind mounts that keep git working inside the stage once it covers the root: the stage's
/// `.git` file names its worktree admin folder by a path under the root, and that folder's
/// `commondir` names the git dir by an absolute path (libgit2 writes one). Both are overlaid
/// with files naming the private mount point of the git dir instead. Nothing when the stage
/// is not a linked worktree of `common`.
fn git_overlays(
    tmp: &Path,
    stage: &Path,
    common: &Path,
    private_common: &Path,
) -> io::Result<Vec<(CString, CString)>> {
    let gitfile = stage.join(".git");
    let Some(admin) = fs::read_to_string(&gitfile)
        .ok()
        .and_then(|text| Some(PathBuf::from(text.strip_prefix("gitdir:")?.trim())))
        .map(|admin| stage.join(admin))
        .and_then(|admin| fs::canonicalize(admin).ok())
    else {
        return Ok(Vec::new());
    };
    let Ok(rel) = admin.strip_prefix(common) else {
        return Ok(Vec::new());
    };
    let private_admin = private_common.join(rel);
    let new_gitfile = tmp.join("gitfile");
    fs::write(
        &new_gitfile,
        format!("gitdir: {}\n", private_admin.display()),
    )?;
    let mut binds = Vec::new();
    if admin.join("commondir").is_file() {
        let new_commondir = tmp.join("commondir");
        fs::write(&new_commondir, format!("{}\n", private_common.display()))?;
        binds.push((
            c_path(&new_commondir)?,
            c_path(&private_admin.join("commondir"))?,
        ));
    }
    binds.push((c_path(&new_gitfile)?, c_path(&gitfile)?));
    Ok(binds)
}

fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes()).map_err(io::Error::other)
}

impl Plan {
    /// In the relay, between fork and exec. Returns (to let std exec the code) only in the
    /// code's process; the relay and the init end in here.
    fn enter(&self) -> io::Result<()> {
        rustix::process::set_parent_process_death_signal(Some(Signal::KILL))?;
        // git-loaf may have died before the line above took effect.
        if Pid::as_raw(rustix::process::getppid()) != self.parent {
            exit(1);
        }
        enter_namespaces(&self.uid_map, &self.gid_map)?;
        for (from, to) in &self.binds {
            rustix::mount::mount_bind(from.as_c_str(), to.as_c_str())?;
        }
        rustix::mount::mount_bind_recursive(self.stage.as_c_str(), self.root.as_c_str())?;
        rustix::process::chdir(self.cwd.as_c_str())?;
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
}

/// New user, mount and PID namespaces, with the caller's user and group mapped to
/// themselves and mounts private (nothing done here propagates out).
fn enter_namespaces(uid_map: &[u8], gid_map: &[u8]) -> io::Result<()> {
    // SAFETY: no FILES flag: the descriptor table stays shared as it was.
    unsafe {
        rustix::thread::unshare_unsafe(
            UnshareFlags::NEWUSER | UnshareFlags::NEWNS | UnshareFlags::NEWPID,
        )?;
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
    // A /proc of this namespace, for `ps` and `$$`-based tools; without it they see the
    // outer one, which is harmless.
    let _ = rustix::mount::mount(
        c"proc",
        c"/proc",
        c"proc",
        MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC,
        None,
    );
    // SAFETY: as in `Plan::enter`.
    match unsafe { libc::fork() } {
        -1 => exit(SETUP_FAILED),
        0 => Ok(()),
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

fn exit(code: i32) -> ! {
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
            enter_namespaces(&uid_map, &gid_map)?;
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
