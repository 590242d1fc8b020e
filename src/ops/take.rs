//! Commits an apply could not publish (the branch moved, or the user's edits overlapped the
//! reply's), kept as `refs/loaf/<apply id>`: listed by `git loaf log`, applied later by
//! `git loaf take` — onto the current HEAD, merged with the user's uncommitted edits, which
//! stay uncommitted — or discarded by `git loaf drop`.

use std::path::{Path, PathBuf};

use git2::{Oid, Repository};

use super::apply::{head_ref, now_secs};
use crate::git::checkpoint;
use crate::git::commit::{read_note, write_commit, write_note};
use crate::git::merge::{self, Overlap};
use crate::git::oplog::{OpEntry, OpKind, UserState};
use crate::git::publish::{self, Transition, blob_at};
use crate::git::session::{Session, TxError};
use crate::git::treebuild::tree_with_values;

/// A kept commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptCommit {
    /// The apply id (the ref's last part).
    pub id: String,
    /// The commit.
    pub commit: Oid,
}

/// The kept commits, by apply id.
pub fn list(repo: &Repository) -> Result<Vec<KeptCommit>, git2::Error> {
    let mut out = Vec::new();
    for reference in repo.references_glob("refs/loaf/*")? {
        let reference = reference?;
        let Some(name) = reference
            .name()
            .ok()
            .and_then(|n| n.strip_prefix("refs/loaf/"))
        else {
            continue;
        };
        if name.contains('/') || !name.chars().all(|c| c.is_ascii_hexdigit()) {
            continue;
        }
        if let Some(commit) = reference.target() {
            out.push(KeptCommit {
                id: name.to_owned(),
                commit,
            });
        }
    }
    Ok(out)
}

fn find(repo: &Repository, id: &str) -> Result<KeptCommit, TxError> {
    list(repo)?
        .into_iter()
        .find(|k| k.id == id)
        .ok_or_else(|| TxError::Invalid {
            message: format!("no kept apply '{id}'"),
            hint: "`git loaf log` lists the kept applies (marked kept)".into(),
        })
}

/// `git loaf drop <id>`: deletes the kept commit's ref.
pub fn drop_kept(cwd: &Path, id: &str) -> Result<KeptCommit, TxError> {
    let session = Session::begin(cwd, "drop")?;
    let kept = find(&session.repo, id)?;
    session
        .repo
        .find_reference(&format!("refs/loaf/{id}"))?
        .delete()?;
    Ok(kept)
}

/// What `take` did.
#[derive(Debug)]
pub struct Taken {
    /// The commit now on the branch.
    pub commit: Oid,
    /// Paths whose working file merged the user's uncommitted edits.
    pub merged: Vec<PathBuf>,
    /// Things to tell the user.
    pub notices: Vec<String>,
}

/// `git loaf take <id>`: the kept commit, rebased onto HEAD when HEAD moved, is published
/// like an apply: only its paths change; the user's uncommitted edits to them are merged and
/// stay uncommitted. Undo takes it back.
pub fn take(cwd: &Path, id: &str) -> Result<Taken, TxError> {
    let mut session = Session::begin(cwd, "take")?;
    let repo = &session.repo;
    let kept = find(repo, id)?;
    let (ref_name, head) = head_ref(repo)?;
    let commit = repo.find_commit(kept.commit)?;
    let parent = commit.parent_ids().next();
    let refuse = |reason: String| TxError::Refused {
        message: format!("cannot take {id}: {reason}"),
        hint: format!(
            "resolve it by hand (`git cherry-pick refs/loaf/{id}`), or `git loaf drop {id}` and apply the reply again"
        ),
    };
    // On the current HEAD: the commit itself, or the same change replayed onto HEAD.
    let landed = if parent == head {
        kept.commit
    } else {
        let Some(head) = head else {
            return Err(refuse("the branch has no commit to take it onto".into()));
        };
        let onto = repo.find_commit(head)?;
        let mut index = repo.cherrypick_commit(&commit, &onto, 0, None)?;
        if index.has_conflicts() {
            let paths: Vec<String> = index
                .conflicts()?
                .filter_map(|c| c.ok())
                .filter_map(|c| c.our.or(c.their).or(c.ancestor))
                .map(|e| String::from_utf8_lossy(&e.path).into_owned())
                .collect();
            return Err(refuse(format!(
                "it conflicts with commits made since in {}",
                paths.join(", ")
            )));
        }
        let tree = index.write_tree_to(repo)?;
        let message = commit.message().ok().unwrap_or_default().to_owned();
        write_commit(repo, tree, &[head], &message)?
    };
    if let Some(note) = read_note(repo, kept.commit) {
        write_note(
            repo,
            landed,
            &note.replace("NOT APPLIED", "taken later; was not applied"),
        )?;
    }
    let target_tree = repo.find_commit(landed)?.tree_id();
    let cp = checkpoint::take(repo)?;
    let head_tree = cp.head_tree;
    let changed: Vec<PathBuf> =
        crate::git::treediff::changed_paths(repo, Some(head_tree), Some(target_tree))?
            .into_iter()
            .collect();
    let (work, index, merged) = match land(repo, &cp, head_tree, target_tree, &changed)? {
        Ok(landing) => landing,
        Err(Overlap(reason)) => return Err(refuse(reason)),
    };
    let summary = commit
        .summary()
        .ok()
        .flatten()
        .unwrap_or_default()
        .to_owned();
    let transition = Transition {
        workdir: session.root.clone(),
        ref_name: ref_name.clone(),
        old: head.map(|o| o.to_string()),
        new: Some(landed.to_string()),
        from_work: cp.work_tree.to_string(),
        from_index: cp.index_tree.to_string(),
        to_work: work.to_string(),
        to_index: index.to_string(),
        message: format!("git-loaf take {id}: {summary}"),
        op: OpEntry {
            id: id.to_owned(),
            kind: OpKind::Apply,
            target: None,
            time: now_secs(),
            workdir: session.root.display().to_string(),
            ref_name,
            summary,
            before: UserState {
                head: head.map(|o| o.to_string()),
                work: cp.work_tree.to_string(),
                index: cp.index_tree.to_string(),
            },
            after: UserState {
                head: Some(landed.to_string()),
                work: work.to_string(),
                index: index.to_string(),
            },
            extras: Default::default(),
        },
    };
    let skipped = publish::publish(repo, &transition, true).map_err(|e| match e {
        publish::PublishError::Changed(_) | publish::PublishError::Moved { .. } => {
            refuse(e.to_string())
        }
        other => TxError::Publish(other),
    })?;
    repo.find_reference(&format!("refs/loaf/{id}"))?.delete()?;
    let mut notices = std::mem::take(&mut session.notices);
    notices.extend(publish::left_alone_notice(&skipped));
    Ok(Taken {
        commit: landed,
        merged,
        notices,
    })
}

/// The working tree and index trees after a landing, and the paths merged with the user's
/// edits.
type Landing = (Oid, Oid, Vec<PathBuf>);

/// The working tree and index after landing `target` (a tree on top of `head_tree`) on the
/// user's state `cp`: each changed path merged with the user's uncommitted edits there.
fn land(
    repo: &Repository,
    cp: &checkpoint::Checkpoint,
    head_tree: Oid,
    target_tree: Oid,
    changed: &[PathBuf],
) -> Result<Result<Landing, Overlap>, git2::Error> {
    let (head, target) = (repo.find_tree(head_tree)?, repo.find_tree(target_tree)?);
    let (work, index) = (
        repo.find_tree(cp.work_tree)?,
        repo.find_tree(cp.index_tree)?,
    );
    let mut work_values = Vec::new();
    let mut index_values = Vec::new();
    let mut merged = Vec::new();
    for path in changed {
        let (base, theirs) = (blob_at(&head, path), blob_at(&target, path));
        let staged = blob_at(&index, path);
        if staged != base && staged != theirs {
            return Ok(Err(Overlap(format!(
                "you have staged changes to {}",
                path.display()
            ))));
        }
        let ours = blob_at(&work, path);
        let entry = match merge::merge_entry(repo, path, base, ours, theirs)? {
            Ok(entry) => entry,
            Err(overlap) => return Ok(Err(overlap)),
        };
        if ours != base {
            merged.push(path.clone());
        }
        work_values.push((path.clone(), entry));
        index_values.push((path.clone(), theirs));
    }
    let work = tree_with_values(repo, cp.work_tree, &work_values)?;
    let index = tree_with_values(repo, cp.index_tree, &index_values)?;
    Ok(Ok((work, index, merged)))
}
