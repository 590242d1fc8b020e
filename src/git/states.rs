//! Repository states git-loaf must respect (docs/apply.md): an operation in
//! progress (merge, rebase, `git am`, cherry-pick, revert, bisect) or unresolved conflicts,
//! which an apply, undo or redo would swallow into its commit or throw away, so they are
//! refused; an index git-loaf cannot read (split index, sparse index), refused by name; and
//! sparse checkouts, whose paths outside the sparse set actions may not touch.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use git2::{Repository, RepositoryState};

pub use super::repo::discover;

/// A state git-loaf refuses to work in: what is refused and why, and what to do next (an
/// operation reports it as its refusal).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Refused {
    /// What was refused and why.
    pub message: String,
    /// What to do next.
    pub hint: String,
}

/// Refuses `command` (`apply`, `undo`, `redo`) while the repository is in the middle of
/// something only the user can finish, or its index cannot be read exactly; nothing is
/// changed either way.
pub(crate) fn refuse_in_progress(repo: &Repository, command: &str) -> Result<(), Refused> {
    if let Some((what, finish)) = in_progress(repo) {
        return Err(Refused {
            message: format!(
                "{what} is in progress: git-loaf would commit on top of it or throw it away, so it does nothing until that is finished"
            ),
            hint: format!("{finish}, then run `git loaf {command}` again"),
        });
    }
    let index = match repo.index() {
        Ok(index) => index,
        Err(error) => return Err(unreadable_index(repo, &error, command)),
    };
    if index.has_conflicts() {
        let mut paths: Vec<String> = index
            .conflicts()
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|c| c.our.or(c.their).or(c.ancestor))
            .map(|e| String::from_utf8_lossy(&e.path).into_owned())
            .collect();
        paths.dedup();
        let shown = if paths.len() > 5 {
            format!("{} and {} more", paths[..5].join(", "), paths.len() - 5)
        } else {
            paths.join(", ")
        };
        return Err(Refused {
            message: format!("the index has unresolved conflicts ({shown})"),
            hint: format!(
                "resolve them and `git add` the files (or `git checkout --ours`/`--theirs` them), then run `git loaf {command}` again"
            ),
        });
    }
    Ok(())
}

/// The operation in progress, as a phrase, and how to finish or abandon it.
fn in_progress(repo: &Repository) -> Option<(&'static str, &'static str)> {
    let found = match repo.state() {
        RepositoryState::Clean => None,
        RepositoryState::Merge => Some((
            "a merge",
            "finish it (`git add` the resolved files, then `git merge --continue`) or abandon it with `git merge --abort`",
        )),
        RepositoryState::Rebase
        | RepositoryState::RebaseInteractive
        | RepositoryState::RebaseMerge => Some((
            "a rebase",
            "finish it with `git rebase --continue` (after `git add` of resolved files) or abandon it with `git rebase --abort`",
        )),
        RepositoryState::ApplyMailbox => Some((
            "a `git am`",
            "finish it with `git am --continue` or abandon it with `git am --abort`",
        )),
        RepositoryState::ApplyMailboxOrRebase => Some((
            "a rebase (or `git am`)",
            "finish it with `git rebase --continue` or abandon it with `git rebase --abort` (`git am --continue`/`--abort` for an am)",
        )),
        RepositoryState::CherryPick | RepositoryState::CherryPickSequence => Some((
            "a cherry-pick",
            "finish it with `git cherry-pick --continue` or abandon it with `git cherry-pick --abort`",
        )),
        RepositoryState::Revert | RepositoryState::RevertSequence => Some((
            "a revert",
            "finish it with `git revert --continue` or abandon it with `git revert --abort`",
        )),
        RepositoryState::Bisect => Some(bisect()),
    };
    found.or_else(|| pending_sequence(repo)).or_else(|| {
        // libgit2 looks for BISECT_LOG only; `git bisect start` writes BISECT_START first.
        repo.path().join("BISECT_START").exists().then(bisect)
    })
}

fn bisect() -> (&'static str, &'static str) {
    (
        "a bisect",
        "end it with `git bisect reset` when you are done",
    )
}

/// A cherry-pick or revert of several commits stopped between two of them: the picked
/// commit is committed (no CHERRY_PICK_HEAD any more, which is all libgit2 looks at) but the
/// sequencer still holds the rest, and git still calls it in progress.
fn pending_sequence(repo: &Repository) -> Option<(&'static str, &'static str)> {
    let todo = std::fs::read_to_string(repo.path().join("sequencer").join("todo")).ok()?;
    let first = todo
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))?;
    match first.split_whitespace().next()? {
        "revert" | "r" => Some((
            "a revert",
            "finish it with `git revert --continue` or abandon it with `git revert --abort`",
        )),
        _ => Some((
            "a cherry-pick",
            "finish it with `git cherry-pick --continue` or abandon it with `git cherry-pick --abort`",
        )),
    }
}

/// The refusal for an index libgit2 cannot read: named when it is a split index or a sparse
/// index, which git can turn off; otherwise the error as it is.
fn unreadable_index(repo: &Repository, error: &git2::Error, command: &str) -> Refused {
    let config = repo.config().ok();
    let flag = |name: &str| {
        config
            .as_ref()
            .and_then(|c| c.get_bool(name).ok())
            .unwrap_or(false)
    };
    let message = error.message();
    let (what, fix) = if message.contains("'link'") || flag("core.splitIndex") {
        (
            "a split index (`git update-index --split-index`, `core.splitIndex`)",
            "`git config core.splitIndex false && git update-index --no-split-index`",
        )
    } else if message.contains("'sdir'") || flag("index.sparse") {
        (
            "a sparse index (`index.sparse`)",
            "`git sparse-checkout init --no-sparse-index` (the sparse checkout itself is fine)",
        )
    } else {
        return Refused {
            message: format!("git-loaf cannot read this repository's index: {message}"),
            hint: format!(
                "`git status` should show what is unusual about it; once git-loaf can read it, run `git loaf {command}` again"
            ),
        };
    };
    Refused {
        message: format!(
            "this repository uses {what}, which git-loaf cannot read or write exactly ({message})"
        ),
        hint: format!("turn it off with {fix}, then run `git loaf {command}` again"),
    }
}

/// Whether the index can hold skip-worktree entries at all: that flag needs extended entry
/// flags, which git writes only in index version 3 and up (version 2 is the usual one), so
/// most repositories are answered without a look at their entries.
pub(crate) fn may_skip_worktree(index: &git2::Index) -> bool {
    index.version() >= 3
}

/// Paths outside the sparse checkout (index entries with the skip-worktree flag), as places
/// in the stage at `stage_root` that no action may read or write, each with its refusal: the
/// user's tree does not have those files, and a commit must not change them behind the
/// user's back. A folder whose every entry is skipped is fenced as a whole (so a new file
/// there is refused too, and a large sparse repository costs one fence per excluded folder,
/// not one per file); single skipped files elsewhere are fenced one by one.
pub(crate) fn sparse_fences(repo: &Repository, stage_root: &Path) -> Vec<(PathBuf, String)> {
    let Ok(index) = repo.index() else {
        return Vec::new();
    };
    if !may_skip_worktree(&index) {
        return Vec::new();
    }
    // Per folder: (entries under it, skipped entries under it).
    let mut folders: BTreeMap<PathBuf, (usize, usize)> = BTreeMap::new();
    let mut skipped_files = Vec::new();
    for entry in index.iter() {
        let path = super::repo::path_from_bytes(&entry.path).into_owned();
        let skipped =
            entry.flags_extended & git2::IndexEntryExtendedFlag::SKIP_WORKTREE.bits() != 0;
        for folder in path.ancestors().skip(1) {
            if folder.as_os_str().is_empty() {
                break;
            }
            let counts = folders.entry(folder.to_path_buf()).or_default();
            counts.0 += 1;
            counts.1 += usize::from(skipped);
        }
        if skipped {
            skipped_files.push(path);
        }
    }
    if skipped_files.is_empty() {
        return Vec::new();
    }
    let all_skipped = |folder: &Path| folders.get(folder).is_some_and(|(n, s)| n == s);
    // The topmost folder of `path` whose entries are all skipped, if any.
    let fenced_folder = |path: &Path| {
        path.ancestors()
            .skip(1)
            .filter(|f| !f.as_os_str().is_empty())
            .filter(|f| all_skipped(f))
            .last()
            .map(Path::to_path_buf)
    };
    let sparse = repo
        .config()
        .and_then(|c| c.get_bool("core.sparseCheckout"))
        .unwrap_or(false);
    let mut fences: BTreeMap<PathBuf, String> = BTreeMap::new();
    for file in skipped_files {
        let fenced = fenced_folder(&file).unwrap_or(file);
        if fences.contains_key(&fenced) {
            continue;
        }
        let is_folder = folders.contains_key(&fenced);
        let why = if sparse {
            let dir = if is_folder {
                fenced.as_path()
            } else {
                fenced.parent().unwrap_or(Path::new(""))
            };
            format!(
                "is outside your sparse checkout: git-loaf does not read or change it; `git sparse-checkout add {}` brings it in, then apply again",
                if dir.as_os_str().is_empty() {
                    "/".to_owned()
                } else {
                    dir.display().to_string()
                }
            )
        } else {
            format!(
                "is marked skip-worktree in the index: git-loaf does not read or change it; `git update-index --no-skip-worktree {}` clears that, then apply again",
                fenced.display()
            )
        };
        fences.insert(fenced, why);
    }
    fences
        .into_iter()
        .map(|(path, why)| (stage_root.join(path), why))
        .collect()
}

/// Submodule folders, as places in the stage at `stage_root`, each with the refusal an
/// action touching it gets: the stage does not check submodules out, and a change there
/// belongs to another repository.
pub(crate) fn submodule_fences(repo: &Repository, stage_root: &Path) -> Vec<(PathBuf, String)> {
    // libgit2's list walks HEAD's whole tree for gitlinks: first a look at what is already
    // in memory (the index) and at `.gitmodules`, which a repository with submodules has.
    const GITLINK: u32 = 0o160000;
    let has_gitmodules = repo
        .workdir()
        .is_some_and(|dir| dir.join(".gitmodules").symlink_metadata().is_ok());
    let index_has_gitlink = repo
        .index()
        .map_or(true, |index| index.iter().any(|e| e.mode == GITLINK));
    if !has_gitmodules && !index_has_gitlink {
        return Vec::new();
    }
    let Ok(submodules) = repo.submodules() else {
        return Vec::new();
    };
    submodules
        .iter()
        .map(|sub| {
            let path = sub.path().to_path_buf();
            let why = format!(
                "is inside the submodule '{}', another repository: git-loaf does not read or change it from here; run `git loaf apply` inside that folder for changes there",
                path.display()
            );
            (stage_root.join(path), why)
        })
        .collect()
}

/// The git directories an action must never read or write, whatever loaf.yml says: for the
/// repository containing `dir`, its git dir (a linked worktree's own admin folder) and the
/// common dir, which holds every other worktree's (the stage's included) and git-loaf's own
/// state. Empty outside a repository.
pub(crate) fn git_dirs(dir: &Path) -> Vec<PathBuf> {
    let Ok(repo) = discover(dir) else {
        return Vec::new();
    };
    let mut dirs = vec![repo.path().to_path_buf(), repo.commondir().to_path_buf()];
    dirs.dedup();
    dirs
}
