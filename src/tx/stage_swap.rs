//! Publishing by moving files instead of writing them: where the stage holds what a publish
//! is about to write (its HEAD's tree has the same entry as the transition's `to_work`: every
//! changed path right after an apply, and after an undo that moved them back), the plain file
//! there is moved into the user's tree and the user's old file takes its place in the stage,
//! in one atomic exchange of the two names (Linux's `renameat2`). The user's file is, at every moment,
//! either its old or its new self, as with a new file renamed over it, but nothing is written:
//! a 1,000-file apply or undo costs 1,000 renames instead of 1,000 new files (each a new
//! inode, which on a busy filesystem costs far more than the write).
//!
//! The stage then holds the publish's before state at the moved paths, so its HEAD is set to
//! its tree with those entries. A moved path is also recorded (before anything moves, so that a crash leaves it
//! recorded): its file in the stage may be an inode the user had, which some process may still
//! hold open, so the stage never writes it in place; the next [`super::stage::Stage::reset_to`]
//! deletes it and checks it out anew. Every file is checked (type, one link, mode, content
//! hashed) right before it moves, so a stage that is not what its HEAD says moves nothing
//! wrong: the file is written as before.

use std::path::{Path, PathBuf};

use git2::{ObjectType, Oid, Repository, Tree};

use crate::exec::fs::single_name;
use crate::git::files::RealFolders;

/// The stage as the source of a publish's files.
pub(crate) struct StageSwap {
    stage: Repository,
    /// The tree of the stage's HEAD: what its files hold.
    tree: Oid,
    root: PathBuf,
    common_dir: PathBuf,
    /// The paths moved (exchanged or renamed into the user's tree).
    moved: Vec<PathBuf>,
    /// Whether the candidates were recorded (done once, before the first move).
    recorded: bool,
    /// Cleared when a move fails as the filesystem cannot do it (another filesystem, no
    /// exchange): the rest are written.
    usable: bool,
    /// The process's umask, which a file written anew gets its permissions through: a file
    /// the publish creates gets exactly those, whatever the stage's copy had. `None`
    /// (unknown): new files are written, not moved.
    umask: Option<u32>,
    /// The stage's folders found real.
    folders: RealFolders,
}

impl StageSwap {
    /// From this many changed paths on: below it, what moving saves (a new file each) does
    /// not pay for the stage's bookkeeping (its HEAD commit and the record, and rewriting the
    /// moved paths at the next reset).
    pub(crate) const WORTH_IT: usize = 32;

    /// The stage of `repo`, when it has one.
    pub(crate) fn of(repo: &Repository) -> Option<StageSwap> {
        if !cfg!(target_os = "linux") {
            return None;
        }
        let common_dir = repo.commondir().to_path_buf();
        let root = common_dir.join("loaf").join("stage");
        if !root.join(".git").is_file() {
            return None;
        }
        let stage = Repository::open(&root).ok()?;
        let tree = stage.head().ok()?.peel_to_tree().ok()?.id();
        Some(StageSwap {
            stage,
            tree,
            folders: RealFolders::under(&root),
            root,
            common_dir,
            moved: Vec::new(),
            recorded: false,
            usable: true,
            umask: umask(),
        })
    }

    /// Adds `candidates` (the paths that may move) to the record, before the first one moves:
    /// appended, so that a kill while it is written loses nothing recorded before (a torn
    /// last name only costs the next reset a needless rewrite).
    pub(crate) fn record(&mut self, candidates: &[&PathBuf]) -> std::io::Result<()> {
        use std::io::Write as _;
        let mut bytes = Vec::new();
        for path in candidates {
            bytes.extend_from_slice(path.as_os_str().as_encoded_bytes());
            bytes.push(0);
        }
        std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(super::stage_records::moved_record(&self.common_dir))?
            .write_all(&bytes)?;
        self.recorded = true;
        Ok(())
    }

    /// The tree of the stage's HEAD: a path where it has the entry a publish writes is worth
    /// a look with [`StageSwap::take`].
    pub(crate) fn tree(&self) -> Oid {
        self.tree
    }

    /// Moves the stage's file at `path` to `to` (the user's file there, if any, takes its
    /// place in the stage) when the stage's file is exactly blob `id` with `mode` and the
    /// user's is a plain file of one link or absent. `false`: nothing moved (the caller
    /// writes the file).
    pub(crate) fn take(&mut self, path: &Path, to: &Path, id: Oid, mode: i32) -> bool {
        if !self.usable || !self.recorded || !(mode == 0o100644 || mode == 0o100755) {
            return false;
        }
        let from = self.root.join(path);
        if !self.folders.lead_to(path) || has_attributes(&from) || !holds_blob(&from, id, mode) {
            return false;
        }
        let user = match std::fs::symlink_metadata(to) {
            Ok(meta) if meta.is_file() && single_name(&meta) => true,
            Ok(_) => return false,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
            Err(_) => return false,
        };
        if user {
            crate::git::files::keep_permissions(to, &from);
        } else {
            // A new file gets what a file created now gets (the stage's copy may have been
            // given any permissions by the code a reply ran).
            let Some(umask) = self.umask else {
                return false;
            };
            let wanted = if mode == 0o100755 { 0o777 } else { 0o666 } & !umask;
            if set_mode(&from, wanted).is_err() {
                return false;
            }
        }
        // Then it was just written, as a file written now would be (a build tool compares
        // its time with what it made from it).
        let result = exchange(&from, to, user).map(|()| {
            let _ = touch(to);
        });
        self.moved(path, result)
    }

    /// Moves the user's file at `from` (which the publish deletes) to `path` in the stage,
    /// where nothing is, when it is a plain file of one link. `false`: nothing moved (the
    /// caller deletes it).
    pub(crate) fn take_deleted(&mut self, path: &Path, from: &Path) -> bool {
        if !self.usable || !self.recorded {
            return false;
        }
        if !std::fs::symlink_metadata(from).is_ok_and(|m| m.is_file() && single_name(&m)) {
            return false;
        }
        let to = self.root.join(path);
        if !self.folders.lead_to(path) {
            return false;
        }
        if let Some(parent) = to.parent()
            && std::fs::create_dir_all(parent).is_err()
        {
            return false;
        }
        let result = exchange(from, &to, false);
        self.moved(path, result)
    }

    /// Notes how the move of `path` went: whether it moved.
    fn moved(&mut self, path: &Path, result: std::io::Result<()>) -> bool {
        match result {
            Ok(()) => {
                self.moved.push(path.to_path_buf());
                true
            }
            Err(error) => {
                // Another filesystem, or one without exchange: the rest are written. A name
                // taken meanwhile (the user created the file just then) is not given up for
                // the others; the caller writes this one as it would have without moves.
                if error.kind() != std::io::ErrorKind::AlreadyExists {
                    self.usable = false;
                }
                false
            }
        }
    }

    /// After the publish: the stage holds `from_work`'s entries where files moved (the
    /// user's old files, or nothing for a file the publish created); its HEAD is set to a
    /// commit of its tree with those entries.
    /// `changed` are the paths the publish changes, from `to_work`.
    pub(crate) fn finish(
        self,
        repo: &Repository,
        from_work: &Tree<'_>,
        to_work: Oid,
        changed: &[PathBuf],
    ) -> Result<(), git2::Error> {
        let StageSwap {
            stage,
            tree,
            root,
            mut moved,
            ..
        } = self;
        if moved.is_empty() {
            return Ok(());
        }
        moved.sort();
        // The ignore rules the stage's next reset goes by are its files': where a moved
        // `.gitignore` changed them, the ignored output the run left is found by a scan.
        if moved
            .iter()
            .any(|p| p.file_name().is_some_and(|n| n == ".gitignore"))
        {
            super::stage_records::forget_written(repo)
                .map_err(|e| git2::Error::from_str(&format!("stage record: {e}")))?;
        }
        // A file moved out as new left its folders empty in the stage: git keeps no empty
        // folder.
        for path in &moved {
            if from_work.get_path(path).is_err() {
                crate::git::files::remove_empty_parents(&root, path);
            }
        }
        // Usually the stage held the after tree and every changed file moved (the moved ones
        // are among the changed): its tree is then the before tree, with nothing to build;
        // likewise when every path where it differs from the before tree moved.
        let all_moved = tree == to_work && moved.len() == changed.len();
        let tree = if all_moved
            || crate::git::treediff::changed_paths(repo, Some(tree), Some(from_work.id()))?
                .iter()
                .all(|p| moved.binary_search(p).is_ok())
        {
            from_work.id()
        } else {
            crate::git::treebuild::tree_with_entries(repo, tree, from_work.id(), &moved)?
        };
        let commit = crate::git::commit::write_commit(repo, tree, &[], "loaf: stage")?;
        stage.set_head_detached(commit)
    }
}

/// Whether a file has extended attributes (an ACL, a label, or whatever the code a reply ran
/// set): such a file is not moved to the user, where a new file would have none.
#[cfg(target_os = "linux")]
fn has_attributes(file: &Path) -> bool {
    rustix::fs::llistxattr_query(file).map_or(true, |size| size > 0)
}

#[cfg(not(target_os = "linux"))]
fn has_attributes(_file: &Path) -> bool {
    true
}

/// Sets a file's access and modification times to now.
#[cfg(target_os = "linux")]
fn touch(file: &Path) -> std::io::Result<()> {
    use rustix::fs::{AtFlags, CWD, Timespec, Timestamps, UTIME_NOW, utimensat};
    let now = Timespec {
        tv_sec: 0,
        tv_nsec: UTIME_NOW,
    };
    let times = Timestamps {
        last_access: now,
        last_modification: now,
    };
    utimensat(CWD, file, &times, AtFlags::SYMLINK_NOFOLLOW).map_err(std::io::Error::from)
}

#[cfg(not(target_os = "linux"))]
fn touch(_file: &Path) -> std::io::Result<()> {
    Ok(())
}

/// The process's umask, read from `/proc` (setting it to read it back would race with
/// threads creating files).
fn umask() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find_map(|l| l.strip_prefix("Umask:"))?;
    u32::from_str_radix(line.trim(), 8).ok()
}

#[cfg(unix)]
fn set_mode(file: &Path, mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(file, std::fs::Permissions::from_mode(mode))
}

#[cfg(not(unix))]
fn set_mode(_file: &Path, _mode: u32) -> std::io::Result<()> {
    Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
}

/// Whether the file at `file` is a plain file of one link whose content is blob `id` and
/// whose executable bit is `mode`'s.
#[cfg(unix)]
fn holds_blob(file: &Path, id: Oid, mode: i32) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    let Ok(meta) = std::fs::symlink_metadata(file) else {
        return false;
    };
    let executable = meta.permissions().mode() & 0o111 != 0;
    meta.is_file()
        && single_name(&meta)
        && executable == (mode == 0o100755)
        && Oid::hash_file(ObjectType::Blob, file).is_ok_and(|hashed| hashed == id)
}

#[cfg(not(unix))]
fn holds_blob(_file: &Path, _id: Oid, _mode: i32) -> bool {
    false
}

/// Exchanges the names `a` and `b` (`b` exists), or renames `a` to `b` (`b` must not).
#[cfg(target_os = "linux")]
fn exchange(a: &Path, b: &Path, b_exists: bool) -> std::io::Result<()> {
    use rustix::fs::{CWD, RenameFlags, renameat_with};
    let flags = if b_exists {
        RenameFlags::EXCHANGE
    } else {
        RenameFlags::NOREPLACE
    };
    renameat_with(CWD, a, CWD, b, flags).map_err(std::io::Error::from)
}

#[cfg(not(target_os = "linux"))]
fn exchange(_a: &Path, _b: &Path, _b_exists: bool) -> std::io::Result<()> {
    Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
}
