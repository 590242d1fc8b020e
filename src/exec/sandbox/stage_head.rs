//! The stage's HEAD and index kept across a run of code: code may switch the stage's branch,
//! commit in the sandbox's private layer or spoil the index; what git-loaf recorded of the
//! stage is put back after the run, and for a run that shows the user's view, the user's
//! index and HEAD stand in for the stage's own meanwhile ([`super::USERS_INDEX`]).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::{OWN_INDEX, USERS_INDEX};

/// The stage's HEAD before a run. Code may switch the stage to a branch or commit that
/// exists only in the sandbox's private layer of the git dir (`git checkout -b`, `git
/// commit`), or spoil its index; git-loaf's own record of the stage must survive that.
pub(super) struct StageHead {
    admin: PathBuf,
    head: Vec<u8>,
    had_worktree_config: bool,
    /// The user's view was put in place: the stage's own index waits at [`OWN_INDEX`].
    swapped: bool,
}

impl StageHead {
    /// The stage's admin folder (named by its `.git` file) and HEAD; None for a stage that
    /// is no linked worktree. With `users_head`, the user's HEAD and index are put in place
    /// of the stage's for the run.
    pub(super) fn save(stage_root: &Path, users_head: Option<&[u8]>) -> Option<StageHead> {
        let text = fs::read_to_string(stage_root.join(".git")).ok()?;
        let admin = stage_root.join(text.strip_prefix("gitdir:")?.trim());
        let head = fs::read(admin.join("HEAD")).ok()?;
        let had_worktree_config = admin.join("config.worktree").exists();
        let mut saved = StageHead {
            admin,
            head,
            had_worktree_config,
            swapped: false,
        };
        if let Some(users_head) = users_head {
            saved.swapped = saved.show_users(users_head).is_ok();
        }
        Some(saved)
    }

    /// The user's index and HEAD in place of the stage's own.
    fn show_users(&self, users_head: &[u8]) -> io::Result<()> {
        let (index, users) = (self.admin.join("index"), self.admin.join(USERS_INDEX));
        if !users.exists() {
            return Err(io::ErrorKind::NotFound.into());
        }
        if index.exists() {
            fs::rename(&index, self.admin.join(OWN_INDEX))?;
        }
        fs::rename(&users, &index)?;
        let fresh = self.admin.join("HEAD.loaf-users");
        fs::write(&fresh, users_head)?;
        fs::rename(&fresh, self.admin.join("HEAD"))
    }

    /// The stage's own index back; the one code leaves is the user's view for the next run.
    fn hide_users(&self) {
        let (index, own) = (self.admin.join("index"), self.admin.join(OWN_INDEX));
        if is_index(&index) {
            let _ = fs::rename(&index, self.admin.join(USERS_INDEX));
        }
        if own.exists() {
            let _ = fs::rename(&own, &index);
        } else {
            let _ = fs::remove_file(&index);
        }
    }

    /// HEAD as it was; an index that is no longer one (deleted, truncated, overwritten) is
    /// removed, so that git-loaf rebuilds it from HEAD rather than failing on it.
    pub(super) fn restore(&self) {
        if self.swapped {
            self.hide_users();
        }
        let head = self.admin.join("HEAD");
        if fs::read(&head).ok().as_deref() != Some(self.head.as_slice()) {
            // Whole or not at all: a kill here must not leave the stage without a HEAD.
            let fresh = self.admin.join("HEAD.loaf-restore");
            if fs::write(&fresh, &self.head).is_ok() {
                let _ = fs::rename(&fresh, &head);
            }
        }
        // git-loaf never writes a per-worktree config; one the code wrote (read where
        // `extensions.worktreeConfig` is on) could make later git commands in the stage run
        // its commands (`core.fsmonitor`).
        if !self.had_worktree_config {
            let _ = fs::remove_file(self.admin.join("config.worktree"));
        }
        let index = self.admin.join("index");
        if !is_index(&index) {
            let _ = fs::remove_file(&index);
        }
    }
}

/// Whether `path` holds a git index (its magic number).
fn is_index(path: &Path) -> bool {
    let mut magic = [0u8; 4];
    fs::File::open(path)
        .and_then(|mut f| io::Read::read_exact(&mut f, &mut magic))
        .is_ok()
        && &magic == b"DIRC"
}
