//! Where `exec` code and hooks run inside a transaction, so that they cannot bypass it
//! or reach beyond it (docs/sandbox-and-safety.md).
//!
//! The model was told the repository's real path, so `cd /that/path && sed -i … a.txt` must
//! edit the stage, not the user's tree; a reply's code is untrusted, so it must not change
//! the user's git dir, their other files or the host, nor reach the network; and nothing it
//! starts may keep running after the apply — not even when git-loaf itself is SIGKILLed.
//!
//! # Isolated (Linux, user namespaces available)
//!
//! The code runs in new user, mount, PID and (unless `exec.network: true`) network
//! namespaces (see [`namespaces`] and [`mounts`]), under a root of its own where:
//! - **everything is read-only** (a recursive read-only copy of `/`) except what follows;
//! - the stage is mounted at the repository's real path, so every path the model knows
//!   leads into the stage; each [visible](Sandbox::new) ignored entry of the user's tree
//!   (`.venv`, `node_modules`) is mounted over its placeholder in the stage, so it is used,
//!   and written, in place;
//! - `/tmp` is private to the apply (a fresh folder, shared by the apply's runs, removed
//!   with it), and so is `/dev/shm`;
//! - the paths of [`Policy::writable`] (`exec.writable`: package caches) are writable;
//! - the user's git dir is seen at a private path through an overlay: git commands work
//!   (they may commit, branch, stash), but what they write lands in a layer private to the
//!   apply and is dropped with it — the user's hooks, config, refs, stash, index and objects
//!   never change. Only the stage's own admin folder (its HEAD and index, which git hooks
//!   `git add` to) is the real one. Objects the code wrote there that the stage's index
//!   needs are copied out, verified, by [`Sandbox::added_objects`]' caller;
//! - no capability is left to the code (it cannot unmount or remount any of this), and
//!   `no_new_privs` is set.
//!
//! The PID namespace's init is a small relay process of ours whose death kills everything in
//! the namespace; it dies when git-loaf dies (`PR_SET_PDEATHSIG`), when the code's main
//! process ends, and at the timeout (it is in the code's process group).
//!
//! # Without namespaces
//!
//! Where namespaces cannot be created (kernels or containers that forbid unprivileged user
//! namespaces), code is refused with the reason, unless the user chose to run it anyway:
//! `exec.sandbox: off` in loaf.yml ([`Policy::unisolated_allowed`]) or `LOAF_SANDBOX=off` in
//! the environment. Then it runs as before: in the stage, in its own process group. Visible
//! entries are symlinks to the user's entries for the duration of each run (placeholders are
//! put back after). The running process group is recorded in `<git common dir>/loaf/exec-pgid`
//! with its leader's start time, so that if git-loaf is killed the next command can end it
//! with [`kill_recorded`]. Writes through the repository's real path are not redirected in
//! this mode: [`Sandbox::isolated`] tells the caller to look for them, and
//! [`fallback_notice`] gives the one line to say so once per process.

use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};

mod fallback;
#[cfg(target_os = "linux")]
mod mounts;
#[cfg(target_os = "linux")]
mod namespaces;
mod orphans;
mod placeholders;
mod stage_head;

pub use fallback::fallback_notice;
use fallback::{arm_notice, link_visible, turns_off};
pub use orphans::kill_recorded;
use orphans::{RECORD, start_time};
pub(crate) use placeholders::Visible;
use stage_head::StageHead;

/// The environment variable that turns namespaces off (`LOAF_SANDBOX=off`).
pub(crate) const SANDBOX_ENV: &str = "LOAF_SANDBOX";

/// Where exec code and hooks run: the user's paths, the stage behind them, and the ignored
/// entries of the user's tree to show in place.
#[derive(Debug, Clone)]
pub struct Sandbox {
    user_root: PathBuf,
    stage_root: PathBuf,
    git_common_dir: PathBuf,
    visible: Vec<PathBuf>,
    isolated: bool,
    /// Why namespaces are not used, when they are not.
    unisolated_because: Option<String>,
    policy: Policy,
    /// The apply's private folders (its `/tmp`, the git dir's private layer), made by the
    /// first isolated run and removed when the last copy of the sandbox goes.
    apply_dir: Arc<OnceLock<ApplyDir>>,
    /// What code sees as the stage's HEAD and index: the user's ([`Sandbox::showing_users`]).
    users_head: Option<Vec<u8>>,
}

/// The index the code sees, in the stage's admin folder: the user's index, then as the
/// reply's earlier code left it. Written by the transaction before the run
/// (`Stage::write_users_index`); in place of the stage's own index while code runs.
pub(crate) const USERS_INDEX: &str = "index.loaf-users";

/// Where the stage's own index waits while code runs with [`USERS_INDEX`] in its place; a
/// crash leaves it there, and the next apply puts it back (`Stage::begin_run`).
pub(crate) const OWN_INDEX: &str = "index.loaf-own";

/// What the user's loaf.yml allows code beyond the stage (`exec.network`, `exec.writable`,
/// `exec.sandbox`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    /// Keep the host's network (`exec.network: true`); by default code has a loopback of its
    /// own and nothing else.
    pub network: bool,
    /// Absolute paths code may write outside the transaction (package caches); not undone.
    pub writable: Vec<PathBuf>,
    /// Run code without namespaces where they are unavailable (`exec.sandbox: off`); by
    /// default such code is refused.
    pub unisolated_allowed: bool,
    /// What code gets of git-loaf's environment beyond the default (`exec.env`).
    pub env: super::environment::CodeEnvironment,
}

/// The private folders of one apply's isolated runs.
#[derive(Debug)]
pub(crate) struct ApplyDir {
    dir: tempfile::TempDir,
}

impl ApplyDir {
    fn create() -> io::Result<ApplyDir> {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::Builder::new()
            .prefix("git-loaf-apply-")
            .tempdir()?;
        for name in ["tmp", "shm", "upper", "work", "root"] {
            fs::create_dir(dir.path().join(name))?;
        }
        // As /tmp and /dev/shm are: anyone may create, nobody removes another's files.
        for name in ["tmp", "shm"] {
            fs::set_permissions(dir.path().join(name), fs::Permissions::from_mode(0o1777))?;
        }
        Ok(ApplyDir { dir })
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for ApplyDir {
    fn drop(&mut self) {
        // The overlay leaves its work folder without permissions; the temporary folder's
        // removal must be able to enter it.
        use std::os::unix::fs::PermissionsExt;
        let work = self.dir.path().join("work").join("work");
        let _ = fs::set_permissions(work, fs::Permissions::from_mode(0o700));
    }
}

impl Sandbox {
    /// A sandbox for code run in the stage `stage_root` of the repository whose working tree
    /// is `user_root` (the path the model sees) and whose common git dir is `git_common_dir`
    /// (holding the stage's worktree admin folder). `visible` are root-relative paths of
    /// ignored entries of the user's tree that the code must see in place; entries that are
    /// not plain relative paths, or inside `.git`, are left out.
    ///
    /// Namespaces are used when they work and `LOAF_SANDBOX` is not `off`; the first call
    /// that decides otherwise arms [`fallback_notice`].
    pub fn new(
        user_root: &Path,
        stage_root: &Path,
        git_common_dir: &Path,
        visible: Vec<PathBuf>,
    ) -> Sandbox {
        let sandbox = Sandbox {
            user_root: user_root.to_path_buf(),
            stage_root: stage_root.to_path_buf(),
            git_common_dir: git_common_dir.to_path_buf(),
            visible: topmost(visible.into_iter().filter(|p| is_plain(p)).collect()),
            isolated: false,
            unisolated_because: None,
            policy: Policy::default(),
            apply_dir: Arc::new(OnceLock::new()),
            users_head: None,
        };
        let turned_off = std::env::var_os(SANDBOX_ENV).is_some_and(|v| turns_off(&v));
        if turned_off {
            return sandbox.turned_off(format!("{SANDBOX_ENV}=off"));
        }
        match namespaces_work() {
            Ok(()) => Sandbox {
                isolated: true,
                ..sandbox
            },
            Err(why) => Sandbox {
                unisolated_because: Some(why),
                ..sandbox
            },
        }
    }

    /// The same sandbox, where code sees the user's repository (docs/sandbox-and-safety.md): `head`
    /// is what the stage's HEAD file holds while code runs (the user's commit, detached), and
    /// [`USERS_INDEX`], when the transaction wrote one, is its index. What code does to either
    /// lives until the next run of the same apply, then the stage's own HEAD and index are back.
    pub fn showing_users(self, head: Vec<u8>) -> Sandbox {
        Sandbox {
            users_head: Some(head),
            ..self
        }
    }

    /// The same sandbox with the stage's own HEAD and index (the repository's git hooks,
    /// which run against the commit's index as `git commit` runs them).
    pub fn with_stage_own_view(&self) -> Sandbox {
        Sandbox {
            users_head: None,
            ..self.clone()
        }
    }

    /// A sandbox for code run in place, without a transaction (`apply --no-commit`): the
    /// user's tree at `root` is what the code writes, in place; the repository's git dir
    /// `git_common_dir` (None outside a repository), the rest of the filesystem and the
    /// network are kept from it as in a transaction.
    pub fn in_place(root: &Path, git_common_dir: Option<&Path>) -> Sandbox {
        Sandbox::new(
            root,
            root,
            git_common_dir.unwrap_or(Path::new("")),
            Vec::new(),
        )
    }

    /// The same sandbox with what loaf.yml allows code. Where namespaces are unavailable
    /// and the policy allows running without them, this arms [`fallback_notice`].
    pub fn with_policy(self, mut policy: Policy) -> Sandbox {
        // `LOAF_SANDBOX=off` (the user's environment) stands whatever loaf.yml says.
        policy.unisolated_allowed |= self.policy.unisolated_allowed;
        let sandbox = Sandbox { policy, ..self };
        match (&sandbox.unisolated_because, sandbox.isolated) {
            (Some(why), false) if sandbox.policy.unisolated_allowed => {
                arm_notice(why.clone());
                sandbox
            }
            _ => sandbox,
        }
    }

    /// The same sandbox without namespaces, as `LOAF_SANDBOX=off` would make it.
    pub fn without_isolation(self) -> Sandbox {
        self.turned_off("isolation turned off".into())
    }

    /// Without namespaces because the user said so: code runs (with a notice).
    fn turned_off(self, why: String) -> Sandbox {
        arm_notice(why.clone());
        Sandbox {
            isolated: false,
            unisolated_because: Some(why),
            policy: Policy {
                unisolated_allowed: true,
                ..self.policy
            },
            ..self
        }
    }

    /// What code gets of git-loaf's environment beyond the default (`exec.env`).
    pub(crate) fn environment(&self) -> &super::environment::CodeEnvironment {
        &self.policy.env
    }

    /// Why code may not run here at all: namespaces are unavailable and the user did not
    /// allow running without them. The message says how to allow it.
    pub fn refusal(&self) -> Option<String> {
        if self.isolated || self.policy.unisolated_allowed {
            return None;
        }
        let why = self
            .unisolated_because
            .as_deref()
            .unwrap_or("namespaces are unavailable");
        Some(format!(
            "refused: exec and hooks run only in git-loaf's sandbox, which cannot be made here \
             ({why}); to run code without it, set `exec: {{ sandbox: off }}` in loaf.yml (what \
             the code then writes to your files directly is reported as a failure)"
        ))
    }

    /// Whether code keeps the host's network (`exec.network: true`).
    pub fn network(&self) -> bool {
        self.policy.network
    }

    /// Where git commands run by code left the objects they wrote (loose, in git's layout),
    /// once a run made any: the stage's index may name them (a hook's `git add`). None
    /// before any isolated run.
    pub fn added_objects(&self) -> Option<PathBuf> {
        let objects = self.apply_dir.get()?.path().join("upper").join("objects");
        objects.is_dir().then_some(objects)
    }

    /// The apply's private folders, made on first use.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    fn apply_dir(&self) -> io::Result<&ApplyDir> {
        if let Some(dir) = self.apply_dir.get() {
            return Ok(dir);
        }
        let made = ApplyDir::create()?;
        // Another thread may have won the race: its folder is used, ours dropped.
        let _ = self.apply_dir.set(made);
        self.apply_dir
            .get()
            .ok_or_else(|| io::Error::other("the apply's private folder is missing"))
    }

    /// Whether code runs in namespaces, where it cannot reach the user's tree. When false,
    /// direct writes to the user's tree are possible and the caller should look for them.
    pub fn isolated(&self) -> bool {
        self.isolated
    }

    /// The repository's working tree, as the model sees it.
    pub fn user_root(&self) -> &Path {
        &self.user_root
    }

    /// Where the files really are.
    pub fn stage_root(&self) -> &Path {
        &self.stage_root
    }

    /// The user's git common dir.
    pub fn git_common_dir(&self) -> &Path {
        &self.git_common_dir
    }

    /// The root-relative ignored entries shown in place.
    pub fn visible(&self) -> &[PathBuf] {
        &self.visible
    }

    /// Where a stage path really leads while code runs: inside a visible entry, to the
    /// user's entry; elsewhere, unchanged. For checking that a working directory exists.
    pub fn seen_at(&self, stage_path: &Path) -> PathBuf {
        let Ok(rel) = stage_path.strip_prefix(&self.stage_root) else {
            return stage_path.to_path_buf();
        };
        match self.visible.iter().find(|v| rel.starts_with(v)) {
            Some(_) => self.user_root.join(rel),
            None => stage_path.to_path_buf(),
        }
    }

    /// How a stage path reads to the code (the user's path for the same file).
    fn as_user_sees(&self, stage_path: &Path) -> PathBuf {
        match stage_path.strip_prefix(&self.stage_root) {
            Ok(rel) => self.user_root.join(rel),
            Err(_) => stage_path.to_path_buf(),
        }
    }

    /// Prepares `command` (to be run in `cwd`, a stage path) for this sandbox. What is
    /// returned must live until the process group is gone: dropping it undoes the
    /// preparation.
    pub(crate) fn enter(&self, command: &mut Command, cwd: &Path) -> io::Result<SandboxRun> {
        // A git invoked by the code must find the stage's repository by discovery, not a
        // repository named by the environment git-loaf was started in.
        for name in [
            "GIT_DIR",
            "GIT_WORK_TREE",
            "GIT_INDEX_FILE",
            "GIT_COMMON_DIR",
            "GIT_OBJECT_DIRECTORY",
        ] {
            command.env_remove(name);
        }
        if let Some(refusal) = self.refusal() {
            return Err(io::Error::new(io::ErrorKind::PermissionDenied, refusal));
        }
        let visible = self.prepare_visible();
        #[cfg(target_os = "linux")]
        if self.isolated {
            let cwd = self.as_user_sees(cwd);
            // The code's own temporary files go to its private /tmp, whatever git-loaf's
            // TMPDIR is (that folder is read-only to it).
            command.env("TMPDIR", "/tmp");
            let run = mounts::Isolated::prepare(self, self.apply_dir()?, &visible, &cwd)?;
            let scrub = run.scrub();
            let tmp = run.install(command);
            return Ok(SandboxRun {
                _tmp: Some(tmp),
                scrub: Some(scrub),
                linked: Vec::new(),
                record_at: None,
                record: None,
                stage_head: StageHead::save(&self.stage_root, self.users_head.as_deref()),
            });
        }
        // Beside the stage (the same filesystem): the placeholders wait there, as the same
        // files, while symlinks stand in their place.
        let aside = tempfile::Builder::new()
            .prefix("placeholders-")
            .tempdir_in(self.stage_root.parent().unwrap_or(&self.stage_root))
            .ok();
        let linked = link_visible(&visible, aside.as_ref().map(|d| d.path()));
        command.current_dir(cwd);
        Ok(SandboxRun {
            _tmp: aside,
            scrub: None,
            linked,
            record_at: (!self.git_common_dir.as_os_str().is_empty())
                .then(|| self.git_common_dir.join(RECORD)),
            record: None,
            stage_head: StageHead::save(&self.stage_root, self.users_head.as_deref()),
        })
    }
}

/// What [`Sandbox::enter`] set up for one run.
pub(crate) struct SandboxRun {
    /// The isolated run's private folder (mount points and overlay files).
    _tmp: Option<tempfile::TempDir>,
    /// A private path the code may print, and the user's path it stands for.
    scrub: Option<(String, String)>,
    /// Fallback: placeholders replaced by symlinks, to put back, each with where it waits.
    linked: Vec<(Visible, Option<PathBuf>)>,
    /// Fallback: where to record the running process group.
    record_at: Option<PathBuf>,
    /// The record written, to remove.
    record: Option<PathBuf>,
    /// The stage's HEAD as the run found it, put back after it.
    stage_head: Option<StageHead>,
}

impl SandboxRun {
    /// The child was started as the leader of process group `pid`. In the fallback, the
    /// group is recorded for [`kill_recorded`]; isolated runs need no record (their init
    /// dies with git-loaf).
    pub(crate) fn started(&mut self, pid: u32) {
        let Some(path) = self.record_at.take() else {
            return;
        };
        let Some(start) = start_time(pid) else {
            return;
        };
        let written =
            make_parent(&path).and_then(|()| fs::write(&path, format!("{pid} {start}\n")));
        if written.is_ok() {
            self.record = Some(path);
        }
    }

    /// Output with private paths replaced by the user's.
    pub(crate) fn scrub(&self, text: String) -> String {
        match &self.scrub {
            Some((private, user)) if text.contains(private.as_str()) => {
                text.replace(private.as_str(), user)
            }
            _ => text,
        }
    }
}

impl Drop for SandboxRun {
    fn drop(&mut self) {
        if let Some(stage_head) = &self.stage_head {
            stage_head.restore();
        }
        if let Some(record) = &self.record {
            let _ = fs::remove_file(record);
        }
        for (visible, aside) in &self.linked {
            visible.unlink(aside.as_deref());
        }
    }
}

/// The entries not inside another one (which already shows them).
fn topmost(paths: Vec<PathBuf>) -> Vec<PathBuf> {
    paths
        .iter()
        .filter(|p| {
            !paths
                .iter()
                .any(|other| other != *p && p.starts_with(other))
        })
        .cloned()
        .collect()
}

/// A relative path of normal components, not inside `.git`.
fn is_plain(path: &Path) -> bool {
    let mut components = path.components();
    components
        .next()
        .is_some_and(|first| is_normal(first) && !first.as_os_str().eq_ignore_ascii_case(".git"))
        && components.all(is_normal)
}

fn is_normal(component: Component) -> bool {
    matches!(component, Component::Normal(_))
}

fn make_parent(path: &Path) -> io::Result<()> {
    match path.parent() {
        Some(parent) => fs::create_dir_all(parent),
        None => Ok(()),
    }
}

fn symlink(target: &Path, link: &Path) -> io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}

/// Whether this process can create the namespaces, tried once.
fn namespaces_work() -> Result<(), String> {
    #[cfg(target_os = "linux")]
    {
        static PROBE: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
        PROBE.get_or_init(namespaces::probe).clone()
    }
    #[cfg(not(target_os = "linux"))]
    {
        Err("namespaces are Linux only".into())
    }
}

#[cfg(test)]
mod tests;
