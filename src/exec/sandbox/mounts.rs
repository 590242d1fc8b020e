//! The isolated run's root (Linux): what the code sees, planned in git-loaf before the fork
//! ([`Isolated::prepare`]) and mounted in the relay between `fork` and `exec`
//! ([`MountPlan::enter`], where the order of the mounts is explained): a read-only copy of `/`,
//! the stage at the repository's path, the visible ignored entries over their placeholders,
//! the private `/tmp` and `/dev/shm`, `exec.writable`, the user's git dir through an overlay,
//! and the host's services and credentials hidden. The namespaces, the init and the relay
//! that run it are [`super::namespaces`].
//!
//! Every path is prepared as a C string before the fork: between `fork` and `exec` only
//! system calls run, and nothing allocates.

use std::ffi::{CStr, CString};
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use rustix::mount::{MountFlags, UnmountFlags};
use rustix::process::{Pid, Signal};

use super::{ApplyDir, Sandbox, Visible};

/// Where the code sees the user's git dir (inside its private /tmp): the real path is
/// hidden by the stage where the git dir is inside the repository.
const GIT_VIEW: &str = "/tmp/.loaf-git";

/// An isolated run, prepared in git-loaf before the fork.
pub(super) struct Isolated {
    tmp: tempfile::TempDir,
    plan: MountPlan,
    /// The private mount point of the git common dir, and the real path it stands for.
    scrub: (String, String),
}

/// Everything the relay needs after the fork, as C strings.
struct MountPlan {
    parent: i32,
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
    /// Keep the host's network namespace.
    network: bool,
    /// Bind mounts on the real tree, before the code's root is copied from it: the visible
    /// entries over their placeholders in the stage, the stage's `.git` file.
    binds: Vec<(CString, CString)>,
    /// Which of `binds` are made read-only: the visible ignored files (a `.envrc` or `.env`
    /// that a shell or a tool of the user's reads later); visible folders (`.venv`,
    /// `node_modules`, build caches) stay writable in place.
    read_only_binds: Vec<bool>,
    /// The code's root, made from a read-only copy of `/` (an empty folder of the apply).
    new_root: CString,
    /// Folders of the new root covered by an empty tmpfs, and socket files covered by
    /// `/dev/null`: where the host's services listen (a unix socket can be connected to
    /// through a read-only mount).
    masks: Vec<(CString, bool)>,
    /// Writable binds into the new root, in order: the private /tmp and /dev/shm, the stage
    /// at the repository's path, the `exec.writable` paths.
    writable: Vec<(CString, CString)>,
    /// The user's git dir as the code sees it (none outside a repository).
    git: Option<GitView>,
    cwd: CString,
}

/// How the code sees the user's git dir: an overlay whose writes land in the apply's
/// private layer; read-only where overlays cannot be made. The stage's own admin folder is
/// the real one, with a `commondir` naming the view.
struct GitView {
    /// The real git dir.
    common: CString,
    /// Where the code sees it, inside the new root.
    at: CString,
    /// The overlay's options; None where its paths cannot be written in them.
    overlay: Option<CString>,
    /// The stage's admin folder and its place in the view.
    admin: Option<(CString, CString)>,
    /// A `commondir` file naming the view, and where it goes.
    commondir: Option<(CString, CString)>,
}

impl Isolated {
    /// Prepares a run of code in `cwd` (a path as the code sees it, under the user's root or
    /// outside it), with the apply's private folders in `apply`.
    pub(super) fn prepare(
        sandbox: &Sandbox,
        apply: &ApplyDir,
        visible: &[Visible],
        cwd: &Path,
    ) -> io::Result<Isolated> {
        let tmp = tempfile::Builder::new()
            .prefix("git-loaf-exec-")
            .tempdir()?;
        // Outside a repository (`apply --no-commit` in a plain folder) there is no git dir.
        let common = match sandbox.git_common_dir.as_os_str().is_empty() {
            true => None,
            false => Some(fs::canonicalize(&sandbox.git_common_dir)?),
        };
        let user_root = fs::canonicalize(&sandbox.user_root)?;
        let new_root = apply.path().join("root");
        let private_tmp = apply.path().join("tmp");
        // Where `path` is in the new root. Mount points inside the private /tmp (which hides
        // the real one: the git view, the repository's path when it is under /tmp) are made
        // in the folder that becomes it.
        let in_root = |path: &Path| -> io::Result<PathBuf> {
            if let Ok(rel) = path.strip_prefix("/tmp") {
                fs::create_dir_all(private_tmp.join(rel))?;
            }
            Ok(new_root.join(path.strip_prefix("/").unwrap_or(path)))
        };
        // Code run in place (no stage: `apply --no-commit`) sees the git dir where it is;
        // in a transaction the stage hides that path, so it is seen at a private one.
        let in_place = sandbox.stage_root == sandbox.user_root;
        let view_path = match &common {
            Some(common) if in_place => common.clone(),
            _ => PathBuf::from(GIT_VIEW),
        };
        let view = in_root(&view_path)?;
        let mut binds = Vec::new();
        let mut read_only_binds = Vec::new();
        let (gitfile, admin) = match &common {
            Some(common) if !in_place => stage_gitfile(tmp.path(), &sandbox.stage_root, common)?,
            _ => (None, None),
        };
        if let Some((file, target)) = gitfile {
            binds.push((c_path(&file)?, c_path(&target)?));
            read_only_binds.push(false);
        }
        for entry in visible {
            binds.push((c_path(&entry.user)?, c_path(&entry.stage)?));
            read_only_binds.push(!entry.is_folder());
        }
        let mut writable = Vec::new();
        if Path::new("/tmp").is_dir() && user_root != Path::new("/tmp") {
            writable.push((c_path(&private_tmp)?, c_path(&new_root.join("tmp"))?));
        }
        if Path::new("/dev/shm").is_dir() {
            writable.push((
                c_path(&apply.path().join("shm"))?,
                c_path(&new_root.join("dev/shm"))?,
            ));
        }
        writable.push((c_path(&sandbox.stage_root)?, c_path(&in_root(&user_root)?)?));
        for path in &sandbox.policy.writable {
            if fs::create_dir_all(path).is_err() && !path.exists() {
                continue;
            }
            let real = fs::canonicalize(path)?;
            writable.push((c_path(&real)?, c_path(&in_root(&real)?)?));
        }
        let git = match &common {
            Some(common) => Some(GitView::plan(
                common,
                &view,
                admin.as_deref(),
                apply,
                tmp.path(),
            )?),
            None => None,
        };
        let keep: Vec<&Path> = std::iter::once(user_root.as_path())
            .chain(sandbox.policy.writable.iter().map(PathBuf::as_path))
            .collect();
        let masks = service_masks(sandbox.policy.network, &keep)
            .into_iter()
            .map(|(path, dir)| {
                let at = new_root.join(path.strip_prefix("/").unwrap_or(&path));
                Ok((c_path(&at)?, dir))
            })
            .collect::<io::Result<Vec<_>>>()?;
        let plan = MountPlan {
            parent: rustix::process::getpid().as_raw_nonzero().get(),
            uid_map: format!("{0} {0} 1\n", rustix::process::geteuid().as_raw()).into_bytes(),
            gid_map: format!("{0} {0} 1\n", rustix::process::getegid().as_raw()).into_bytes(),
            network: sandbox.policy.network,
            binds,
            read_only_binds,
            new_root: c_path(&new_root)?,
            masks,
            writable,
            git,
            cwd: c_path(cwd)?,
        };
        let real = common.unwrap_or_else(|| view_path.clone());
        let scrub = (
            view_path.to_string_lossy().into_owned(),
            real.to_string_lossy().into_owned(),
        );
        Ok(Isolated { tmp, plan, scrub })
    }

    /// The private path of the git dir, which git commands may print, and the real one.
    pub(super) fn scrub(&self) -> (String, String) {
        self.scrub.clone()
    }

    /// Makes `command` run isolated. The folder returned holds the run's files: keep it
    /// until the process is gone.
    pub(super) fn install(self, command: &mut Command) -> tempfile::TempDir {
        let plan = self.plan;
        // SAFETY: the closure runs in the forked child and only makes system calls on data
        // prepared here (see `MountPlan::enter`).
        unsafe {
            command.pre_exec(move || plan.enter());
        }
        self.tmp
    }
}

impl GitView {
    /// The view of `common` at `view` (in the new root), with the stage's admin folder
    /// `admin` (relative to `common`) real and its `commondir` naming the view.
    fn plan(
        common: &Path,
        view: &Path,
        admin: Option<&Path>,
        apply: &ApplyDir,
        tmp: &Path,
    ) -> io::Result<GitView> {
        let commondir = match admin {
            Some(rel) => {
                let file = tmp.join("commondir");
                fs::write(&file, format!("{GIT_VIEW}\n"))?;
                Some((c_path(&file)?, c_path(&view.join(rel).join("commondir"))?))
            }
            None => None,
        };
        Ok(GitView {
            overlay: overlay_options(common, apply.path()),
            admin: match admin {
                Some(rel) => Some((c_path(&common.join(rel))?, c_path(&view.join(rel))?)),
                None => None,
            },
            commondir,
            common: c_path(common)?,
            at: c_path(view)?,
        })
    }
}

/// Credentials in the home folder that code has no business reading (a reply's code could
/// print them into the report the model gets): hidden, unless listed in `exec.writable`.
const HOME_SECRET_FOLDERS: [&str; 9] = [
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".kube",
    ".docker",
    ".config/gh",
    ".config/gcloud",
    ".password-store",
];

/// Credential files in the home folder, hidden like [`HOME_SECRET_FOLDERS`].
const HOME_SECRET_FILES: [&str; 5] = [
    ".netrc",
    ".git-credentials",
    ".npmrc",
    ".pypirc",
    ".config/git/credentials",
];

/// Where the host's services listen, to hide from code (a unix socket is connected to through
/// a read-only mount): the user's runtime folder (session bus, agents, keyrings), the system
/// bus, container engines, terminal multiplexers; all of `/run` without the network (it then
/// needs no resolver configuration either); and the credentials of [`HOME_SECRET_FOLDERS`]
/// and [`HOME_SECRET_FILES`]. Each existing one as (path, is a folder); none that holds a
/// path in `keep` (the repository, `exec.writable`), which is mounted over them anyway.
fn service_masks(network: bool, keep: &[&Path]) -> Vec<(PathBuf, bool)> {
    let folders: &[&str] = if network {
        &[
            "/run/user",
            "/run/dbus",
            "/run/screen",
            "/run/containerd",
            "/run/podman",
            "/run/snapd",
            "/var/run/docker",
        ]
    } else {
        &["/run", "/var/run"]
    };
    let sockets = [
        "/run/docker.sock",
        "/var/run/docker.sock",
        "/run/snapd.socket",
        "/run/snapd-snap.socket",
    ];
    let mut masks: Vec<(PathBuf, bool)> = Vec::new();
    let holds_kept = |path: &Path| keep.iter().any(|k| k.starts_with(path));
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let in_home = |names: &[&str]| -> Vec<PathBuf> {
        home.iter()
            .flat_map(|home| names.iter().map(move |name| home.join(name)))
            .collect()
    };
    let folders = folders
        .iter()
        .map(PathBuf::from)
        .chain(in_home(&HOME_SECRET_FOLDERS));
    let sockets = sockets
        .iter()
        .map(PathBuf::from)
        .chain(in_home(&HOME_SECRET_FILES));
    for folder in folders {
        let Ok(real) = fs::canonicalize(folder) else {
            continue;
        };
        let covered = masks.iter().any(|(m, _)| real.starts_with(m));
        if real.is_dir() && !holds_kept(&real) && !covered {
            masks.push((real, true));
        }
    }
    for socket in sockets {
        let Ok(real) = fs::canonicalize(socket) else {
            continue;
        };
        let covered = masks.iter().any(|(m, _)| real.starts_with(m));
        if !real.is_dir() && !covered {
            masks.push((real, false));
        }
    }
    masks
}

/// The stage's `.git` file names its worktree admin folder by a path in the real git dir,
/// which the code does not see there: a file naming the admin folder in the view instead,
/// to mount over it, and the admin folder's path inside the git dir. Nothing when the stage
/// is not a linked worktree of `common`.
#[allow(clippy::type_complexity)]
fn stage_gitfile(
    tmp: &Path,
    stage: &Path,
    common: &Path,
) -> io::Result<(Option<(PathBuf, PathBuf)>, Option<PathBuf>)> {
    let gitfile = stage.join(".git");
    let Some(admin) = fs::read_to_string(&gitfile)
        .ok()
        .and_then(|text| Some(PathBuf::from(text.strip_prefix("gitdir:")?.trim())))
        .map(|admin| stage.join(admin))
        .and_then(|admin| fs::canonicalize(admin).ok())
    else {
        return Ok((None, None));
    };
    let Ok(rel) = admin.strip_prefix(common) else {
        return Ok((None, None));
    };
    let new_gitfile = tmp.join("gitfile");
    fs::write(
        &new_gitfile,
        format!("gitdir: {}\n", Path::new(GIT_VIEW).join(rel).display()),
    )?;
    Ok((Some((new_gitfile, gitfile)), Some(rel.to_path_buf())))
}

/// The overlay's mount options: the real git dir below, the apply's layer above. None when
/// a path holds a character the options cannot carry as is.
fn overlay_options(common: &Path, apply: &Path) -> Option<CString> {
    let paths = [
        common.to_path_buf(),
        apply.join("upper"),
        apply.join("work"),
    ];
    let plain = |p: &PathBuf| {
        !p.as_os_str()
            .as_bytes()
            .iter()
            .any(|b| matches!(b, b',' | b':' | b'\\'))
    };
    if !paths.iter().all(plain) {
        return None;
    }
    let options = format!(
        "lowerdir={},upperdir={},workdir={},userxattr",
        paths[0].display(),
        paths[1].display(),
        paths[2].display()
    );
    CString::new(options).ok()
}

fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes()).map_err(io::Error::other)
}

impl MountPlan {
    /// In the relay, between fork and exec. Returns (to let std exec the code) only in the
    /// code's process; the relay and the init end in here.
    ///
    /// The order matters: binds on the real tree first (they are copied with it), then a
    /// recursive copy of `/` made read-only, then the writable binds into it (from the real
    /// tree, which is writable), the git view, and the switch of root, which leaves the real
    /// tree unreachable.
    fn enter(&self) -> io::Result<()> {
        rustix::process::set_parent_process_death_signal(Some(Signal::KILL))?;
        // git-loaf may have died before the line above took effect.
        if Pid::as_raw(rustix::process::getppid()) != self.parent {
            super::namespaces::exit(1);
        }
        super::namespaces::enter_namespaces(&self.uid_map, &self.gid_map, !self.network)?;
        if !self.network {
            // The code's own loopback (its test servers work); the host's stays out of reach.
            let _ = super::namespaces::loopback_up();
        }
        for ((from, to), read_only) in self.binds.iter().zip(&self.read_only_binds) {
            rustix::mount::mount_bind(from.as_c_str(), to.as_c_str())?;
            if *read_only {
                set_read_only(to)?;
            }
        }
        rustix::mount::mount_bind_recursive(c"/", self.new_root.as_c_str())?;
        set_read_only(&self.new_root)?;
        for (path, dir) in &self.masks {
            if *dir {
                rustix::mount::mount(
                    c"tmpfs",
                    path.as_c_str(),
                    c"tmpfs",
                    MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC,
                    Some(c"mode=755"),
                )?;
            } else {
                rustix::mount::mount_bind(c"/dev/null", path.as_c_str())?;
            }
        }
        for (from, to) in &self.writable {
            rustix::mount::mount_bind_recursive(from.as_c_str(), to.as_c_str())?;
        }
        if let Some(git) = &self.git {
            git.mount()?;
        }
        rustix::process::chdir(self.new_root.as_c_str())?;
        rustix::process::pivot_root(c".", c".")?;
        rustix::mount::unmount(c".", UnmountFlags::DETACH)?;
        rustix::process::chdir(c"/")?;
        rustix::process::chdir(self.cwd.as_c_str())?;
        super::namespaces::fork_init()
    }
}

impl GitView {
    /// Mounts the view (in the new root, before the switch): the overlay, or a read-only
    /// copy where an overlay cannot be made; then the stage's admin folder, writable, with
    /// its `commondir` naming the view.
    fn mount(&self) -> io::Result<()> {
        let overlaid = self.overlay.as_ref().is_some_and(|options| {
            rustix::mount::mount(
                c"overlay",
                self.at.as_c_str(),
                c"overlay",
                MountFlags::NOSUID | MountFlags::NODEV,
                Some(options.as_c_str()),
            )
            .is_ok()
        });
        if !overlaid {
            rustix::mount::mount_bind_recursive(self.common.as_c_str(), self.at.as_c_str())?;
            set_read_only(&self.at)?;
        }
        if let Some((admin, at)) = &self.admin {
            rustix::mount::mount_bind(admin.as_c_str(), at.as_c_str())?;
        }
        if let Some((file, at)) = &self.commondir {
            rustix::mount::mount_bind(file.as_c_str(), at.as_c_str())?;
        }
        Ok(())
    }
}

/// `mount_setattr(2)` (Linux 5.12) with `AT_RECURSIVE`: every mount at and below `path`
/// read-only and without set-user-id, in this mount namespace only.
fn set_read_only(path: &CStr) -> io::Result<()> {
    const MOUNT_ATTR_RDONLY: u64 = 0x1;
    const MOUNT_ATTR_NOSUID: u64 = 0x2;
    const AT_RECURSIVE: libc::c_uint = 0x8000;
    #[repr(C)]
    struct MountAttr {
        attr_set: u64,
        attr_clr: u64,
        propagation: u64,
        userns_fd: u64,
    }
    let attr = MountAttr {
        attr_set: MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: a plain system call with valid pointers and the struct's size.
    let done = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            path.as_ptr(),
            AT_RECURSIVE,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if done == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
