//! The plumbing of `git loaf gc` besides pruning the log: the refs forced undos saved, and
//! packing the loose objects only git-loaf's refs reach.
//!
//! Packing never deletes an object that is not in the new pack, and never packs a commit
//! the user's refs reach or anything their tips' trees hold (the edge git's own
//! `rev-list --objects ours --not theirs` draws). What is no longer reachable at all (the entries gc dropped) is
//! left loose for git's own `git gc`, which expires unreachable objects after its grace
//! period: deciding that an object is unreachable needs every ref, reflog, index and
//! worktree, which is git's job.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use git2::{ObjectType, Oid, Repository};

/// Where forced undos save the user's work.
const SAVED_PREFIX: &str = "refs/loaf/saved/";

/// A ref a forced undo wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Saved {
    /// The undo's id (the ref's last part).
    pub id: String,
    /// The full ref name.
    pub name: String,
    /// When the saved commit was made (seconds since the epoch).
    pub time: i64,
}

/// Where restored work waits, in case its restore is undone.
const RESTORED_PREFIX: &str = "refs/loaf/restored/";

/// The refs under `refs/loaf/saved/`, and `refs/loaf/restored/` (saved work restored since).
pub fn saved(repo: &Repository) -> Result<Vec<Saved>, git2::Error> {
    let mut out = Vec::new();
    let saved = repo.references_glob(&format!("{SAVED_PREFIX}*"))?;
    let restored = repo.references_glob(&format!("{RESTORED_PREFIX}*"))?;
    for reference in saved.chain(restored) {
        let reference = reference?;
        let Some(name) = reference.name().ok().map(str::to_owned) else {
            continue;
        };
        let time = reference
            .peel_to_commit()
            .map(|c| c.committer().when().seconds())
            .unwrap_or(0);
        out.push(Saved {
            id: name
                .trim_start_matches(SAVED_PREFIX)
                .trim_start_matches(RESTORED_PREFIX)
                .to_owned(),
            name,
            time,
        });
    }
    Ok(out)
}

/// Deletes the saved ref `name`.
pub(crate) fn drop_saved(repo: &Repository, name: &str) -> Result<(), git2::Error> {
    repo.find_reference(name)?.delete()
}

/// What [`pack`] did, or would do.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Packed {
    /// Loose objects put in the pack (and removed as loose files).
    pub objects: usize,
    /// The pack written, if any.
    pub pack: Option<PathBuf>,
    /// The packs git-loaf wrote (a dirty tree's objects, an operation's new objects made
    /// durable together) merged into one.
    pub merged: crate::git::pack_merge::Merged,
}

/// Whether `name` is one of git-loaf's refs.
fn is_ours(name: &str) -> bool {
    name.starts_with("refs/loaf/") || name == crate::git::notes::NOTES_REF
}

/// Packs the loose objects reachable from git-loaf's refs (`refs/loaf/…`, the notes) but
/// not from the user's, then removes their loose files; with `dry_run`, only counts them.
/// Objects already packed are not packed again, and a packed tree is not descended into
/// (what it holds was packed with it), so the cost follows what was written since the last
/// gc rather than the repository's size.
pub fn pack(repo: &Repository, dry_run: bool) -> Result<Packed, git2::Error> {
    let packed = pack_loose(repo, dry_run)?;
    Ok(Packed {
        merged: crate::git::pack_merge::merge(repo, dry_run)?,
        ..packed
    })
}

/// [`pack`]'s loose objects.
fn pack_loose(repo: &Repository, dry_run: bool) -> Result<Packed, git2::Error> {
    let objects_dir = repo.commondir().join("objects");
    let loose = |oid: Oid| crate::git::repo::loose_object_path(&objects_dir, oid).is_file();
    let mut walk = repo.revwalk()?;
    let mut hidden_trees = HashSet::new();
    let mut any = false;
    for reference in repo.references()? {
        let reference = reference?;
        let Ok(commit) = reference.peel_to_commit() else {
            continue; // a tag of a blob, a broken ref: nothing to walk
        };
        if reference.name().is_ok_and(is_ours) {
            walk.push(commit.id())?;
            any = true;
        } else {
            walk.hide(commit.id())?;
            hidden_trees.insert(commit.tree_id());
        }
    }
    if let Ok(head) = repo.head().and_then(|h| h.peel_to_commit()) {
        walk.hide(head.id())?;
        hidden_trees.insert(head.tree_id());
    }
    if !any {
        return Ok(Packed::default());
    }
    // Everything the user's branch tips hold is left alone (git's own `rev-list --objects
    // ours --not theirs` marks the same edge). An old version only their history reaches
    // may be packed along: a storage move; it stays readable.
    let mut seen: HashSet<Oid> = HashSet::new();
    let mut trees: Vec<Oid> = hidden_trees.into_iter().collect();
    while let Some(tree) = trees.pop() {
        if !seen.insert(tree) {
            continue;
        }
        for entry in repo.find_tree(tree)?.iter() {
            match entry.kind() {
                Some(ObjectType::Tree) => trees.push(entry.id()),
                _ => {
                    seen.insert(entry.id());
                }
            }
        }
    }
    let mut found: Vec<Oid> = Vec::new();
    for commit in walk {
        let commit = repo.find_commit(commit?)?;
        if !loose(commit.id()) {
            continue; // packed, and its tree with it
        }
        found.push(commit.id());
        let mut trees = vec![commit.tree_id()];
        while let Some(tree) = trees.pop() {
            if !seen.insert(tree) || !loose(tree) {
                continue;
            }
            found.push(tree);
            for entry in repo.find_tree(tree)?.iter() {
                match entry.kind() {
                    Some(ObjectType::Tree) => trees.push(entry.id()),
                    Some(ObjectType::Blob) if seen.insert(entry.id()) && loose(entry.id()) => {
                        found.push(entry.id());
                    }
                    _ => {} // a submodule's commit is not in this repository
                }
            }
        }
    }
    if dry_run || found.is_empty() {
        return Ok(Packed {
            objects: found.len(),
            ..Packed::default()
        });
    }
    let pack = pack_and_remove_loose(repo, &objects_dir, &found)?;
    Ok(Packed {
        objects: found.len(),
        pack: Some(pack),
        ..Packed::default()
    })
}

/// Writes `found` (loose objects) as one pack, then removes the loose files the pack's
/// index lists; returns the pack.
fn pack_and_remove_loose(
    repo: &Repository,
    objects_dir: &Path,
    found: &[Oid],
) -> Result<PathBuf, git2::Error> {
    let mut builder = repo.packbuilder()?;
    for oid in found {
        builder.insert_object(*oid, None)?;
    }
    let pack_dir = objects_dir.join("pack");
    builder.write(&pack_dir, 0o444)?;
    let name = builder
        .name()?
        .map(str::to_owned)
        .ok_or_else(|| git2::Error::from_str("the pack was written without a name"))?;
    let pack = pack_dir.join(format!("pack-{name}.pack"));
    // The loose copies go only once the pack is surely on disk.
    for file in [pack.clone(), pack.with_extension("idx")] {
        std::fs::File::open(&file)
            .and_then(|f| f.sync_all())
            .map_err(|e| git2::Error::from_str(&format!("{}: {e}", file.display())))?;
    }
    if let Ok(dir) = std::fs::File::open(&pack_dir) {
        let _ = dir.sync_all();
    }
    // Only what the new pack's index lists loses its loose file.
    let index = std::fs::read(pack.with_extension("idx"))
        .map_err(|e| git2::Error::from_str(&format!("pack index: {e}")))?;
    for oid in found {
        if crate::git::pack_merge::index_holds(&index, oid.as_bytes()) {
            let _ = std::fs::remove_file(crate::git::repo::loose_object_path(objects_dir, *oid));
        }
    }
    Ok(pack)
}
