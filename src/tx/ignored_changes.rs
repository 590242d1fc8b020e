//! What git will not commit (docs/apply.md): ignored files the actions wrote or deleted,
//! and empty folders from `dir_create`. They reach the user's tree at publish and leave it at
//! undo: [`extras`] records both sides as blobs, and [`Extras::publish`] / [`Extras::undo`]
//! move between them, never overwriting what the user changed meanwhile. The operation log
//! and the publish journal carry them.

use std::collections::BTreeSet;
use std::io::Write as _;
use std::path::{Component, Path, PathBuf};

use git2::{ObjectType, Oid, Repository};
use serde::{Deserialize, Serialize};

use crate::git::files::RealFolders;
use crate::git::repo::path_from_bytes;

/// Why ignored entries could not be listed, or extras recorded or moved.
#[derive(Debug, thiserror::Error)]
pub enum VisibleError {
    /// A `stage.isolate` pattern is not a glob.
    #[error("stage.isolate: invalid pattern '{pattern}': {error}")]
    Pattern {
        /// The pattern as written.
        pattern: String,
        /// What is wrong with it.
        error: globset::Error,
    },
    /// A git operation failed.
    #[error("ignored files: {}", crate::git::words::plain(.0))]
    Git(#[from] git2::Error),
    /// A file operation failed.
    #[error("ignored files: {}: {error}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
}

pub(crate) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> VisibleError + '_ {
    move |error| VisibleError::Io {
        path: path.to_path_buf(),
        error,
    }
}

/// Whether a path is inside a `.git` folder (any case: the filesystem may not care).
pub(crate) fn in_git_dir(relative: &Path) -> bool {
    relative.components().any(|c| match c {
        Component::Normal(name) => name.eq_ignore_ascii_case(".git"),
        _ => false,
    })
}

/// What a path holds, as [`Extras`] records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum State {
    /// Nothing.
    Absent,
    /// A file: its bytes as a blob in the repository's object database, and its permission
    /// bits (`0o600` stays `0o600`).
    File {
        /// The blob's id.
        blob: String,
        /// Permission bits.
        mode: u32,
    },
    /// A symbolic link: its target as a blob.
    Link {
        /// The blob's id.
        blob: String,
    },
    /// A folder (its content is not part of the state).
    Dir,
}

impl State {
    /// What `full` holds now; with `repo`, file bytes are written as blobs, else only hashed
    /// (to compare).
    fn read(full: &Path, repo: Option<&Repository>) -> Result<State, VisibleError> {
        let meta = match full.symlink_metadata() {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(State::Absent),
            Err(e) if e.raw_os_error() == Some(20) => return Ok(State::Absent), // ENOTDIR
            Err(e) => return Err(io(full)(e)),
        };
        let blob = |bytes: &[u8]| -> Result<String, VisibleError> {
            Ok(match repo {
                Some(repo) => crate::git::repo::write_blob(repo, bytes)?,
                None => Oid::hash_object(ObjectType::Blob, bytes)?,
            }
            .to_string())
        };
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(full).map_err(io(full))?;
            return Ok(State::Link {
                blob: blob(target.as_os_str().as_encoded_bytes())?,
            });
        }
        if meta.is_dir() {
            return Ok(State::Dir);
        }
        let bytes = std::fs::read(full).map_err(io(full))?;
        Ok(State::File {
            blob: blob(&bytes)?,
            mode: permissions(&meta),
        })
    }

    /// The same content, modes aside (a chmod by the user is not worth refusing over).
    fn same(&self, other: &State) -> bool {
        match (self, other) {
            (State::File { blob: a, .. }, State::File { blob: b, .. }) => a == b,
            (a, b) => a == b,
        }
    }
}

#[cfg(unix)]
fn permissions(meta: &std::fs::Metadata) -> u32 {
    use std::os::unix::fs::PermissionsExt as _;
    meta.permissions().mode() & 0o7777
}

#[cfg(not(unix))]
fn permissions(_meta: &std::fs::Metadata) -> u32 {
    0o644
}

/// One path git will not commit that the run changed: what the user's tree held before, and
/// what it holds after publish.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    /// Relative to the root.
    pub path: PathBuf,
    /// The user's before the apply.
    pub before: State,
    /// The stage's after the run.
    pub after: State,
}

/// What an apply changes in the user's tree besides the commit: ignored files the actions
/// wrote or deleted, and folders they created, parents before children. Serializable for the
/// operation log and the publish journal; its blobs must stay reachable
/// ([`Extras::keep_tree`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Extras {
    /// The changes, in the order publish makes them (undo goes backwards).
    pub changes: Vec<Change>,
}

/// The changes git will not commit among the paths the run `touched` (relative to the root;
/// the targets of its write actions): stage files and folders that `tree` (the commit's)
/// does not hold, and user files in `copied` ([`super::visible_ignored::Visibility::copied`]) the
/// stage no longer holds. New folders on the way to a new file are changes too, so that undo
/// removes them. Both sides' bytes are written to `repo`'s object database.
pub fn extras(
    repo: &Repository,
    stage_root: &Path,
    tree: Oid,
    touched: &[PathBuf],
    copied: &BTreeSet<PathBuf>,
) -> Result<Extras, VisibleError> {
    let Some(user_root) = repo.workdir() else {
        return Ok(Extras::default());
    };
    let tree = repo.find_tree(tree)?;
    let mut changes: Vec<Change> = Vec::new();
    let mut seen = BTreeSet::new();
    let mut add = |change: Change, changes: &mut Vec<Change>| {
        if seen.insert(change.path.clone()) {
            changes.push(change);
        }
    };
    let (mut in_stage, mut in_users) = (
        RealFolders::under(stage_root),
        RealFolders::under(user_root),
    );
    for path in touched {
        let Some(path) = normal(path) else { continue };
        // A path beyond a link is not a path of the tree: git cannot hold it, and the link
        // leads elsewhere in the stage (which lives inside the git dir) than in the user's
        // tree. What the run did there is not the user's to receive.
        if in_git_dir(&path) || !in_stage.lead_to(&path) || !in_users.lead_to(&path) {
            continue;
        }
        if let Some(folder) = users_empty_folder(user_root, &path) {
            add(
                Change {
                    path: folder,
                    before: State::Dir,
                    after: State::Dir,
                },
                &mut changes,
            );
        }
        if tree.get_path(&path).is_ok() {
            continue;
        }
        let after = State::read(&stage_root.join(&path), Some(repo))?;
        if after == State::Absent && !copied.contains(&path) {
            continue;
        }
        let before = State::read(&user_root.join(&path), Some(repo))?;
        if before.same(&after) {
            continue;
        }
        if before == State::Absent {
            let mut folders: Vec<&Path> = path
                .ancestors()
                .skip(1)
                .filter(|a| !a.as_os_str().is_empty())
                .collect();
            folders.reverse();
            for folder in folders {
                if !user_root.join(folder).exists() && tree.get_path(folder).is_err() {
                    let change = Change {
                        path: folder.to_path_buf(),
                        before: State::Absent,
                        after: State::Dir,
                    };
                    add(change, &mut changes);
                }
            }
        }
        add(
            Change {
                path,
                before,
                after,
            },
            &mut changes,
        );
    }
    // Parents first: `Path` orders component by component.
    changes.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(Extras { changes })
}

/// The user's empty folder that a new file at `path` (none there yet) goes into, if any: the
/// deepest existing folder above it, when it holds nothing. Undo removes the file and the
/// folders the run creates below that one, and would then find it empty: it is recorded as a
/// folder before and after, which publish never removes. Folders above it are not emptied
/// (they hold it).
fn users_empty_folder(user_root: &Path, path: &Path) -> Option<PathBuf> {
    if std::fs::symlink_metadata(user_root.join(path)).is_ok() {
        return None;
    }
    let existing = path
        .ancestors()
        .skip(1)
        .take_while(|f| !f.as_os_str().is_empty())
        .find(|f| std::fs::symlink_metadata(user_root.join(f)).is_ok())?;
    let full = user_root.join(existing);
    let is_dir = std::fs::symlink_metadata(&full).is_ok_and(|m| m.is_dir());
    let empty = is_dir && std::fs::read_dir(&full).is_ok_and(|mut e| e.next().is_none());
    empty.then(|| existing.to_path_buf())
}

/// `path` with `.` and `..` resolved lexically; `None` if it leaves the root or is empty.
fn normal(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Normal(n) => out.push(n),
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            _ => return None,
        }
    }
    (!out.as_os_str().is_empty()).then_some(out)
}

impl Extras {
    /// Whether there is nothing to do.
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    /// The folders the changes leave in place (a folder after): publish does not remove
    /// them when a deletion leaves them empty.
    pub fn folders_after(&self) -> BTreeSet<PathBuf> {
        self.changes
            .iter()
            .filter(|c| c.after == State::Dir)
            .map(|c| c.path.clone())
            .collect()
    }

    /// A tree holding every blob the changes name (entries `0`, `1`, …), for the operation log
    /// to reference so that `git gc` keeps them.
    pub fn keep_tree(&self, repo: &Repository) -> Result<Oid, VisibleError> {
        let mut builder = repo.treebuilder(None)?;
        let blobs = self.changes.iter().flat_map(|c| [&c.before, &c.after]);
        for (i, state) in blobs.enumerate() {
            if let State::File { blob, .. } | State::Link { blob } = state {
                builder.insert(i.to_string(), Oid::from_str(blob)?, 0o100644)?;
            }
        }
        Ok(builder.write()?)
    }

    /// Makes the user's tree at `root` hold every change's `after`. A path that holds neither
    /// `before` nor `after` (the user changed it meanwhile), or a folder that is not empty
    /// when it should go, is left as it is and returned.
    pub fn publish(&self, repo: &Repository, root: &Path) -> Result<Vec<PathBuf>, VisibleError> {
        let mut skipped = Vec::new();
        for change in &self.changes {
            if !move_path(repo, root, change, &change.before, &change.after)? {
                skipped.push(change.path.clone());
            }
        }
        Ok(skipped)
    }

    /// Puts back every change's `before`, children first; skips (and returns) what no longer
    /// holds `after` or `before`, and folders that are not empty, so a folder the user
    /// already had, or filled since, is never removed.
    pub fn undo(&self, repo: &Repository, root: &Path) -> Result<Vec<PathBuf>, VisibleError> {
        let mut skipped = Vec::new();
        for change in self.changes.iter().rev() {
            if !move_path(repo, root, change, &change.after, &change.before)? {
                skipped.push(change.path.clone());
            }
        }
        skipped.reverse();
        Ok(skipped)
    }

    /// The changes that take the tree back: the order reversed, before and after swapped
    /// (what an undo publishes, and records for its own undo).
    pub fn inverted(&self) -> Extras {
        Extras {
            changes: self
                .changes
                .iter()
                .rev()
                .map(|c| Change {
                    path: c.path.clone(),
                    before: c.after.clone(),
                    after: c.before.clone(),
                })
                .collect(),
        }
    }

    /// [`Extras::publish`] again, after an undo.
    pub fn redo(&self, repo: &Repository, root: &Path) -> Result<Vec<PathBuf>, VisibleError> {
        self.publish(repo, root)
    }
}

/// Brings `change.path` under `root` from `from` to `to`; `false` when it holds something
/// else, or a folder to remove is not empty. Already at `to` counts as done (a publish
/// repeated after a crash).
fn move_path(
    repo: &Repository,
    root: &Path,
    change: &Change,
    from: &State,
    to: &State,
) -> Result<bool, VisibleError> {
    if !RealFolders::under(root).lead_to(&change.path) {
        // A link (or a file) now stands where a folder on the way was: writing through it
        // would write outside the tree. Left alone, as a path the user changed.
        return Ok(false);
    }
    let full = root.join(&change.path);
    let now = State::read(&full, None)?;
    if now.same(to) {
        return Ok(true);
    }
    if !now.same(from) {
        return Ok(false);
    }
    let cleared = match now {
        State::Absent => true,
        State::Dir => std::fs::remove_dir(&full).is_ok(),
        State::File { .. } | State::Link { .. } if matches!(to, State::Absent | State::Dir) => {
            std::fs::remove_file(&full).map_err(io(&full))?;
            true
        }
        // Replaced below by a rename, never left half written.
        State::File { .. } | State::Link { .. } => true,
    };
    if !cleared {
        return Ok(false);
    }
    match to {
        State::Absent => {}
        State::Dir => std::fs::create_dir(&full).map_err(io(&full))?,
        State::File { blob, mode } => {
            let bytes = repo.find_blob(Oid::from_str(blob)?)?;
            write_atomic(&full, bytes.content(), *mode)?;
        }
        State::Link { blob } => {
            let target = repo.find_blob(Oid::from_str(blob)?)?;
            link_atomic(&full, target.content())?;
        }
    }
    Ok(true)
}

/// The parent folder of `full`, created if needed.
fn parent_of(full: &Path) -> Result<&Path, VisibleError> {
    let parent = full.parent().ok_or_else(|| VisibleError::Io {
        path: full.to_path_buf(),
        error: std::io::Error::from(std::io::ErrorKind::InvalidInput),
    })?;
    std::fs::create_dir_all(parent).map_err(io(parent))?;
    Ok(parent)
}

/// Writes `bytes` with permissions `mode` to a temporary file next to `full`, then renames it
/// over `full`.
fn write_atomic(full: &Path, bytes: &[u8], mode: u32) -> Result<(), VisibleError> {
    let parent = parent_of(full)?;
    let mut temp = tempfile::NamedTempFile::new_in(parent).map_err(io(parent))?;
    temp.write_all(bytes).map_err(io(full))?;
    set_mode(temp.as_file(), mode).map_err(io(full))?;
    temp.persist(full).map_err(|e| io(full)(e.error))?;
    Ok(())
}

#[cfg(unix)]
fn set_mode(file: &std::fs::File, mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    file.set_permissions(std::fs::Permissions::from_mode(mode))
}

#[cfg(not(unix))]
fn set_mode(_file: &std::fs::File, _mode: u32) -> std::io::Result<()> {
    Ok(())
}

/// Makes `full` a symbolic link to `target` (bytes of a path), by a rename over it.
#[cfg(unix)]
fn link_atomic(full: &Path, target: &[u8]) -> Result<(), VisibleError> {
    let parent = parent_of(full)?;
    let temp = tempfile::Builder::new()
        .prefix(".loaf-link")
        .tempdir_in(parent)
        .map_err(io(parent))?;
    let link = temp.path().join("link");
    std::os::unix::fs::symlink(path_from_bytes(target).as_ref(), &link).map_err(io(full))?;
    std::fs::rename(&link, full).map_err(io(full))?;
    Ok(())
}

#[cfg(not(unix))]
fn link_atomic(full: &Path, target: &[u8]) -> Result<(), VisibleError> {
    write_atomic(full, target, 0o644)
}

#[cfg(test)]
mod tests;
