//! Ignored files and folders made visible in the stage (docs/sandbox-and-safety.md; `stage.isolate`
//! in docs/loaf-yml.md).
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
//!   from `dir_create`) reaches the user's tree at publish and leaves it at undo:
//!   [`super::ignored_changes`], re-exported here as the operations name it.
//!
//! [`PathMap::showing`]: crate::exec::PathMap::showing

use std::cell::{OnceCell, RefCell};
use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};

use git2::Repository;
use globset::GlobSet;
use serde::{Deserialize, Serialize};

pub use super::ignored_changes::{Extras, VisibleError, extras};
use super::ignored_changes::{in_git_dir, io};
use crate::git::repo::path_from_bytes;

/// `stage.isolate` compiled. A pattern is relative to the root and reads like a
/// `.gitignore` line (`.env` and `*.pem` at any depth, `.aws/**` at the root: `*` stays
/// within a folder); one ending in `/**` also matches the folder itself, so `secrets/**`
/// keeps the whole `secrets` folder out ([`crate::exec::secret_paths::forms`]).
pub fn isolate_set(patterns: &[String]) -> Result<GlobSet, VisibleError> {
    crate::paths::pattern_set(patterns).map_err(|e| VisibleError::Pattern {
        pattern: e.pattern,
        error: e.error,
    })
}

/// Whether a path relative to `root` is tracked in the index of the repository there (a
/// file, or a folder holding tracked files): what `stage.isolate` never keeps from replies.
/// The index is read on the first question.
pub(crate) fn tracked_in(root: &Path) -> crate::exec::secret_paths::Tracked {
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

#[cfg(test)]
pub(crate) mod tests;
