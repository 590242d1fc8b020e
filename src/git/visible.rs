//! Ignored files and folders made visible in the stage (DESIGN §2 "Stage", §5 `stage.isolate`).
//!
//! The stage is a git worktree, so it holds what git tracks and the user's untracked files,
//! never what git ignores: `.venv`, `node_modules`, `target`, `.env`. Everything ignored is
//! nevertheless visible to a reply, as in the user's tree, except what `stage.isolate`
//! keeps out. Three pieces do it:
//!
//! - **File actions** read the user's file wherever the stage holds nothing and the path is
//!   ignored ([`Visibility`], handed to the actions through [`PathMap::showing`]): a lookup
//!   per path, no walk. A write first copies the user's file into the stage, where it then
//!   wins for the rest of the run.
//! - **exec and hooks** see the topmost ignored entries of the user's tree mounted (or linked)
//!   over placeholders: [`ignored_entries`] lists them (a status walk of the user's tree, so
//!   only when exec or hooks run) and [`place`] makes the placeholders.
//! - **What git will not commit** (ignored files the actions wrote or deleted, empty folders
//!   from `dir_create`) reaches the user's tree at publish and leaves it at undo: [`extras`]
//!   records both sides as blobs, and [`Extras::publish`] / [`Extras::undo`] move between them,
//!   never overwriting what the user changed meanwhile.
//!
//! [`PathMap::showing`]: crate::exec::PathMap::showing

use std::cell::{OnceCell, RefCell};
use std::collections::{BTreeSet, HashSet};
use std::io::Write as _;
use std::path::{Component, Path, PathBuf};

use git2::{ObjectType, Oid, Repository};
use globset::{GlobSet, GlobSetBuilder};
use serde::{Deserialize, Serialize};

use super::repo::path_from_bytes;

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
    #[error("ignored files: {0}")]
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

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> VisibleError + '_ {
    move |error| VisibleError::Io {
        path: path.to_path_buf(),
        error,
    }
}

/// `stage.isolate` compiled. A pattern is relative to the root and reads like a
/// `.gitignore` line (`.env` and `*.pem` at any depth, `.aws/**` at the root: `*` stays
/// within a folder); one ending in `/**` also matches the folder itself, so `secrets/**`
/// keeps the whole `secrets` folder out ([`crate::exec::isolate::forms`]).
pub fn isolate_set(patterns: &[String]) -> Result<GlobSet, VisibleError> {
    let mut set = GlobSetBuilder::new();
    for pattern in patterns {
        for form in crate::exec::isolate::forms(pattern) {
            let glob =
                crate::exec::isolate::glob(&form).map_err(|error| VisibleError::Pattern {
                    pattern: pattern.clone(),
                    error,
                })?;
            set.add(glob);
        }
    }
    set.build().map_err(|error| VisibleError::Pattern {
        pattern: patterns.join(", "),
        error,
    })
}

/// Whether a path relative to `root` is tracked in the index of the repository there (a
/// file, or a folder holding tracked files): what `stage.isolate` never keeps from replies.
/// The index is read on the first question.
pub fn tracked_in(root: &Path) -> crate::exec::isolate::Tracked {
    let root = root.to_path_buf();
    let index: OnceCell<Option<git2::Index>> = OnceCell::new();
    std::rc::Rc::new(move |relative: &Path| {
        let index = index.get_or_init(|| Repository::open(&root).ok()?.index().ok());
        let Some(index) = index else {
            return false;
        };
        let folder = format!("{}/", relative.to_string_lossy());
        index.get_path(relative, 0).is_some()
            || index
                .find_prefix(&folder)
                .ok()
                .and_then(|i| index.get(i))
                .is_some_and(|e| e.path.starts_with(folder.as_bytes()))
    })
}

/// Whether `relative` or one of its folders is kept out by `stage.isolate`.
pub fn isolated(isolate: &GlobSet, relative: &Path) -> bool {
    !isolate.is_empty()
        && relative
            .ancestors()
            .filter(|p| !p.as_os_str().is_empty())
            .any(|p| isolate.is_match(p))
}

/// A topmost ignored entry of the user's working tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// Relative to the root.
    pub path: PathBuf,
    /// A folder (everything in it is ignored too), not a file.
    pub is_dir: bool,
}

/// The topmost ignored entries of `repo`'s working tree, as `git status --ignored` lists
/// them (an ignored folder as one entry, not its content), sorted: without `.git`, without
/// what `isolate` keeps out, and nothing inside a submodule.
///
/// It reads the folders that hold tracked files (the index names them) and the untracked
/// folders, and asks the ignore rules only about names the index does not know: no file is
/// stat'ed or hashed, unlike a status. Still a walk of the tree's folders: call it only when
/// exec or hooks will run.
pub fn ignored_entries(repo: &Repository, isolate: &GlobSet) -> Result<Vec<Entry>, VisibleError> {
    let Some(root) = repo.workdir() else {
        return Ok(Vec::new());
    };
    let index = repo.index()?;
    let mut tracked: HashSet<Vec<u8>> = HashSet::with_capacity(index.len());
    let mut folders: BTreeSet<Vec<u8>> = BTreeSet::new();
    folders.insert(Vec::new());
    for entry in index.iter() {
        let path = entry.path;
        let mut end = path.len();
        while let Some(slash) = path[..end].iter().rposition(|b| *b == b'/') {
            if !folders.insert(path[..slash].to_vec()) {
                break;
            }
            end = slash;
        }
        // Submodules (gitlinks) are tracked names too: nothing inside is looked at.
        tracked.insert(path);
    }
    let known = |name: &Path| {
        let bytes = name.as_os_str().as_encoded_bytes();
        tracked.contains(bytes) || folders.contains(bytes)
    };
    let mut walk = Walk {
        repo,
        root,
        isolate,
        entries: Vec::new(),
    };
    for folder in &folders {
        walk.folder(&path_from_bytes(folder), &known)?;
    }
    let mut entries = walk.entries;
    entries.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(entries)
}

/// The state of an [`ignored_entries`] walk.
struct Walk<'a> {
    repo: &'a Repository,
    root: &'a Path,
    isolate: &'a GlobSet,
    entries: Vec<Entry>,
}

impl Walk<'_> {
    /// Looks at the names in `folder` that `known` (tracked) does not claim: an ignored one
    /// is an entry, an untracked folder is walked in turn (unless it is a repository of its
    /// own, which git does not look into either) and, when all it holds is ignored, becomes
    /// one entry itself, as git lists it. Returns whether all `folder` holds is ignored (and
    /// nothing of it isolated).
    fn folder(
        &mut self,
        folder: &Path,
        known: &dyn Fn(&Path) -> bool,
    ) -> Result<bool, VisibleError> {
        let Ok(read) = std::fs::read_dir(self.root.join(folder)) else {
            return Ok(false);
        };
        let (mut ignored, mut other) = (0, 0);
        for child in read.filter_map(Result::ok) {
            let path = folder.join(child.file_name());
            let is_dir = child.file_type().is_ok_and(|t| t.is_dir());
            let entry = if in_git_dir(&path) || known(&path) {
                false
            } else if self.repo.is_path_ignored(&path)? {
                true
            } else if is_dir && !self.root.join(&path).join(".git").exists() {
                let mark = self.entries.len();
                let whole = self.folder(&path, &|_| false)?;
                if whole {
                    self.entries.truncate(mark);
                }
                whole
            } else {
                false
            };
            if entry && !isolated(self.isolate, &path) {
                ignored += 1;
                self.entries.push(Entry { path, is_dir });
            } else {
                other += 1;
            }
        }
        Ok(ignored > 0 && other == 0)
    }
}

/// Whether a path is inside a `.git` folder (any case: the filesystem may not care).
fn in_git_dir(relative: &Path) -> bool {
    relative.components().any(|c| match c {
        Component::Normal(name) => name.eq_ignore_ascii_case(".git"),
        _ => false,
    })
}

/// The placeholders [`place`] made: empty files and folders in the stage where exec and
/// hooks get the user's entries mounted or linked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Placed {
    root: PathBuf,
    made: Vec<(Entry, Identity)>,
}

/// What a placeholder is on disk, to tell it from a file written at the same path later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Identity(u64, u64);

#[cfg(unix)]
fn identity(meta: &std::fs::Metadata) -> Identity {
    use std::os::unix::fs::MetadataExt as _;
    Identity(meta.dev(), meta.ino())
}

#[cfg(not(unix))]
fn identity(meta: &std::fs::Metadata) -> Identity {
    Identity(0, meta.len())
}

/// Makes an empty folder or file in the stage at every entry where the stage holds nothing
/// (they are ignored, so git never sees them). Entries under one another get one placeholder:
/// the topmost.
pub fn place(stage_root: &Path, entries: &[Entry]) -> Result<Placed, VisibleError> {
    let mut placed = Placed {
        root: stage_root.to_path_buf(),
        made: Vec::new(),
    };
    for entry in entries {
        let full = stage_root.join(&entry.path);
        if full.symlink_metadata().is_ok() {
            continue;
        }
        if let Some(parent) = full.parent() {
            std::fs::create_dir_all(parent).map_err(io(parent))?;
        }
        if entry.is_dir {
            std::fs::create_dir(&full).map_err(io(&full))?;
        } else {
            std::fs::File::create(&full).map_err(io(&full))?;
        }
        let meta = full.symlink_metadata().map_err(io(&full))?;
        placed.made.push((entry.clone(), identity(&meta)));
    }
    Ok(placed)
}

impl Placed {
    /// The placeholders, relative to the stage's root.
    pub fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.made.iter().map(|(entry, _)| entry)
    }

    /// Whether the stage still holds the placeholder `relative`, as made (empty, the same
    /// file).
    pub fn holds(&self, relative: &Path) -> bool {
        self.made.iter().any(|(entry, id)| {
            entry.path == relative && self.unchanged(&self.root.join(relative), entry, *id)
        })
    }

    fn unchanged(&self, full: &Path, entry: &Entry, id: Identity) -> bool {
        let Ok(meta) = full.symlink_metadata() else {
            return false;
        };
        identity(&meta) == id
            && if entry.is_dir {
                meta.is_dir() && std::fs::read_dir(full).is_ok_and(|mut d| d.next().is_none())
            } else {
                meta.is_file() && meta.len() == 0
            }
    }

    /// Removes the placeholders that are still as made; returns those that were not (a run
    /// wrote there), which stay.
    pub fn remove(&self) -> Vec<PathBuf> {
        let mut kept = Vec::new();
        for (entry, id) in self.made.iter().rev() {
            let full = self.root.join(&entry.path);
            let removed = self.unchanged(&full, entry, *id)
                && if entry.is_dir {
                    std::fs::remove_dir(&full).is_ok()
                } else {
                    std::fs::remove_file(&full).is_ok()
                };
            if !removed && full.symlink_metadata().is_ok() {
                kept.push(entry.path.clone());
            }
        }
        kept
    }
}

/// Which of the user's paths the file actions see through the stage: ignored ones (not
/// tracked, not isolated, not in `.git` or a submodule). Implements
/// [`ShowThrough`](crate::exec::ShowThrough); the user's repository is opened on the first
/// question, so a run that never meets a path the stage lacks pays nothing.
pub struct Visibility {
    root: PathBuf,
    isolate: GlobSet,
    repo: OnceCell<Option<(Repository, git2::Index, Vec<PathBuf>)>>,
    copied: RefCell<BTreeSet<PathBuf>>,
    placeholders: Option<Placed>,
}

impl std::fmt::Debug for Visibility {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Visibility")
            .field("root", &self.root)
            .field("copied", &self.copied)
            .finish()
    }
}

impl Visibility {
    /// The visibility of the user's tree at `root` (the repository's working tree).
    pub fn new(root: &Path, isolate: GlobSet) -> Visibility {
        Visibility {
            root: root.to_path_buf(),
            isolate,
            repo: OnceCell::new(),
            copied: RefCell::new(BTreeSet::new()),
            placeholders: None,
        }
    }

    /// Also treats these placeholders, while they are as made, as holding nothing.
    pub fn with_placeholders(mut self, placed: Placed) -> Visibility {
        self.placeholders = Some(placed);
        self
    }

    /// The user's paths the run copied into the stage to change them (the only ones whose
    /// absence from the stage afterwards means the run deleted them): for [`extras`].
    pub fn copied(&self) -> BTreeSet<PathBuf> {
        self.copied.borrow().clone()
    }

    fn repo(&self) -> Option<&(Repository, git2::Index, Vec<PathBuf>)> {
        self.repo
            .get_or_init(|| {
                let repo = Repository::open(&self.root).ok()?;
                let index = repo.index().ok()?;
                let submodules = repo
                    .submodules()
                    .map(|subs| subs.iter().map(|s| s.path().to_path_buf()).collect())
                    .unwrap_or_default();
                Some((repo, index, submodules))
            })
            .as_ref()
    }
}

impl crate::exec::ShowThrough for Visibility {
    fn shows(&self, relative: &Path) -> bool {
        if relative.as_os_str().is_empty()
            || in_git_dir(relative)
            || isolated(&self.isolate, relative)
            || self.copied.borrow().contains(relative)
        {
            return false;
        }
        let Some((repo, index, submodules)) = self.repo() else {
            return false;
        };
        if submodules.iter().any(|s| relative.starts_with(s)) {
            return false;
        }
        // A tracked path (even one matching an ignore rule) is the stage's: if the stage
        // lacks it, the run deleted it.
        let key = relative.to_string_lossy();
        if index.get_path(relative, 0).is_some()
            || index
                .find_prefix(format!("{key}/"))
                .ok()
                .and_then(|i| index.get(i))
                .is_some_and(|e| e.path.starts_with(format!("{key}/").as_bytes()))
        {
            return false;
        }
        repo.is_path_ignored(relative).unwrap_or(false)
    }

    fn placeholder(&self, relative: &Path) -> bool {
        self.placeholders
            .as_ref()
            .is_some_and(|p| p.holds(relative))
    }

    fn copy_made(&self, relative: &Path) {
        self.copied.borrow_mut().insert(relative.to_path_buf());
    }
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
                Some(repo) => repo.blob(bytes)?,
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
/// does not hold, and user files in `copied` ([`Visibility::copied`]) the stage no longer
/// holds. New folders on the way to a new file are changes too, so that undo removes them.
/// Both sides' bytes are written to `repo`'s object database.
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
    for path in touched {
        let Some(path) = normal(path) else { continue };
        if in_git_dir(&path) {
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
