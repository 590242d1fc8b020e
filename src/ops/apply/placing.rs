//! What of the user's uncommitted work the stage must hold for one apply (docs/apply.md, "The
//! transaction, step by step"): all of it when code runs (exec, loaf.yml's hooks, the
//! repository's git hooks can read any file), else only what the reply's file actions name.
//! A reply of file actions on a tree with hundreds of dirty files then copies none of them
//! into the stage but the few it reads or writes.
//!
//! The stage stays where it was (the last apply's files) except at the paths the actions
//! name where the user's working tree differs from it: there it gets the user's version, as
//! recorded by the checkpoint (never the live file: the user may be typing). The result is a
//! tree like any other stage start, so the stage's HEAD always says what its files hold and a
//! crash while they are placed is recovered by the reset's in-flight record, as for any reset.
//! What the stage holds elsewhere is never read: the commit is the user's working tree with
//! what the run changed in the stage laid on it.

use std::collections::BTreeSet;
use std::ops::Bound;
use std::path::{Path, PathBuf};

use git2::{Oid, Repository, Tree};

use crate::actions::{Format, Schema};
use crate::ops::check::CheckedReply;

/// A symlink's mode in a tree.
const SYMLINK_MODE: i32 = 0o120000;

/// Files whose content decides how every other path is read or ignored: wherever the user
/// changed one, the stage gets the user's.
const RULE_FILES: &[&str] = &[".gitignore", ".gitattributes"];

/// The tree the stage starts from when the reply is file actions alone: `stage` (what the
/// stage holds now) with the user's working tree `work` laid on it at the paths the reply's
/// actions name, their folders and their contents. `None` when the stage must hold the whole
/// working tree: an action that is not a file action, a path that names the root (a search of
/// everything), passes through a symlink (what it reaches is not the path it names), or a
/// case-insensitive repository (another spelling would reach an unplaced file).
pub(super) fn partial_start(
    repo: &Repository,
    root: &Path,
    reply: &CheckedReply<'_>,
    stage: Oid,
    work: Oid,
) -> Result<Option<Oid>, git2::Error> {
    if repo.config()?.get_bool("core.ignorecase").unwrap_or(false) {
        return Ok(None);
    }
    let Some(named) = named_paths(root, reply) else {
        return Ok(None);
    };
    let differ = crate::git::treediff::changed_paths(repo, Some(stage), Some(work))?;
    if differ.is_empty() {
        return Ok(Some(stage));
    }
    let (stage_tree, work_tree) = (repo.find_tree(stage)?, repo.find_tree(work)?);
    if named
        .iter()
        .any(|path| through_symlink(root, &stage_tree, &work_tree, path))
    {
        return Ok(None);
    }
    let mut placed: BTreeSet<PathBuf> = differ
        .iter()
        .filter(|path| {
            path.file_name()
                .is_some_and(|name| RULE_FILES.iter().any(|rule| name == *rule))
        })
        .cloned()
        .collect();
    for path in &named {
        // The path itself and what is under it (a folder listed, searched, moved, deleted)…
        placed.extend(
            differ
                .range::<PathBuf, _>((Bound::Included(path), Bound::Unbounded))
                .take_while(|d| d.starts_with(path))
                .cloned(),
        );
        // …and a file where the user has a folder on its way, or the other way round.
        placed.extend(
            path.ancestors()
                .filter(|a| differ.contains(*a))
                .map(Path::to_path_buf),
        );
    }
    if placed.is_empty() {
        return Ok(Some(stage));
    }
    tracing::debug!(
        placed = placed.len(),
        differ = differ.len(),
        "stage: placing the user's work"
    );
    let placed: Vec<PathBuf> = placed.into_iter().collect();
    crate::git::treebuild::tree_with_entries(repo, stage, work, &placed).map(Some)
}

/// Every path the reply's actions name (parameters the schema declares as absolute paths),
/// relative to the root, `.` and `..` resolved; paths outside the root and through a `.git`
/// left out (the stage holds neither). `None` when an action is not a file action or a path
/// names the root itself or is not absolute.
fn named_paths(root: &Path, reply: &CheckedReply<'_>) -> Option<Vec<PathBuf>> {
    let schema = Schema::get();
    let mut named = Vec::new();
    for action in &reply.plan.actions {
        if !crate::exec::fs::ACTIONS.contains(&action.name.as_str()) {
            return None;
        }
        let tool = schema.tool(&action.name)?;
        let params = action.params_with_defaults();
        for def in tool.params.iter().filter(|d| d.format.is_some()) {
            let Some(value) = params.get(&def.name).and_then(|v| v.as_str()) else {
                continue;
            };
            let values: Vec<&str> = match def.format {
                Some(Format::AbsolutePathsPerLine) => value.split('\n').map(str::trim).collect(),
                _ => vec![value],
            };
            for value in values.into_iter().filter(|v| !v.is_empty()) {
                let path = Path::new(value);
                if !path.is_absolute() {
                    return None;
                }
                let path = crate::exec::root_spelled_as_ours(root, path);
                let normal = crate::paths::lexical(&path);
                let Ok(relative) = normal.strip_prefix(root) else {
                    continue;
                };
                if relative.as_os_str().is_empty() {
                    return None;
                }
                if relative
                    .components()
                    .any(|c| c.as_os_str().eq_ignore_ascii_case(".git"))
                {
                    continue;
                }
                named.push(relative.to_path_buf());
            }
        }
    }
    Some(named)
}

/// Whether `path` or a folder on its way is a symlink: in the user's tree (tracked or not),
/// in the stage's tree or in the recorded working tree.
fn through_symlink(root: &Path, stage: &Tree<'_>, work: &Tree<'_>, path: &Path) -> bool {
    let is_link = |tree: &Tree<'_>, at: &Path| {
        tree.get_path(at)
            .is_ok_and(|entry| entry.filemode() == SYMLINK_MODE)
    };
    path.ancestors()
        .filter(|a| !a.as_os_str().is_empty())
        .any(|at| {
            root.join(at)
                .symlink_metadata()
                .is_ok_and(|m| m.file_type().is_symlink())
                || is_link(stage, at)
                || is_link(work, at)
        })
}
