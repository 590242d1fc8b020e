//! An operation's new loose objects made durable as one pack (docs/apply.md, "Crash safety").
//!
//! A commit of five files in five folders writes a dozen or more loose objects (the blobs, a
//! tree per folder on the way up, the commit, its note, the log entry), and each lands in
//! its own fan-out folder (`objects/3f/…`): made durable one by one, that is a folder sync
//! each, and each folder sync waits for the disk to flush its cache (2-4 ms on this
//! project's machine; 14 of them were a quarter of a 5-file apply on git's own
//! repository). Copied into one pack instead, they cost the pack, its index and the pack
//! folder: three flushes however many folders they are spread over.
//!
//! The loose copies stay where libgit2 wrote them, not synced. Both git and libgit2 look in
//! packs before loose objects, so after a power loss that tore a loose copy the pack's is the
//! one read; `git gc` (`prune-packed`) removes the loose copies of packed objects, and
//! git-loaf's packs are merged when many ([`super::pack_merge`]).

use std::path::PathBuf;

use git2::Repository;

/// From this many fan-out folders to sync on, the objects are packed instead: below it the
/// folder syncs cost no more than the pack's three.
pub(crate) const PACK_FROM_FOLDERS: usize = 4;

/// Writes the loose objects at `paths` (`objects/xx/yyyy…`) as one pack with its index,
/// synced, and syncs the pack folder so that their names are on the disk too; returns the
/// pack's two files. Objects whose file name is not an object id are refused (the caller
/// syncs them as they are).
pub(crate) fn pack_and_sync(
    repo: &Repository,
    paths: &[&PathBuf],
) -> Result<[PathBuf; 2], git2::Error> {
    let odb = repo.odb()?;
    let mut entries = Vec::with_capacity(paths.len());
    for path in paths {
        let id = super::repo::loose_object_id(path)
            .ok_or_else(|| git2::Error::from_str("not a loose object's path"))?;
        let object = odb.read(id)?;
        let entry = super::pack_files::entry(object.kind(), object.data())
            .map_err(|e| git2::Error::from_str(&format!("compressing {id}: {e}")))?;
        entries.push((id, entry));
    }
    entries.sort_by_key(|(id, _)| *id);
    entries.dedup_by_key(|(id, _)| *id);
    let pack_dir = super::pack_files::pack_dir(repo);
    let made_folder = !pack_dir.is_dir();
    // Recorded before its files are there, as every pack git-loaf writes (see
    // `pack_write`): a write killed in between leaves a record the next merge tidies.
    let name = super::pack_files::write(repo, &entries, |name| {
        super::pack_merge::record(repo, name);
    })?;
    let io = |e: std::io::Error| git2::Error::from_str(&format!("syncing the pack folder: {e}"));
    super::durable::sync_dir(&pack_dir).map_err(io)?;
    if made_folder {
        super::durable::sync_dir(pack_dir.parent().unwrap_or(&pack_dir)).map_err(io)?;
    }
    odb.refresh()?;
    super::pack_merge::merge_when_many(repo);
    Ok([
        pack_dir.join(format!("{name}.pack")),
        pack_dir.join(format!("{name}.idx")),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::testing::{committed_repo, git};
    use git2::Oid;

    #[test]
    fn the_objects_are_readable_from_the_pack_alone() {
        let dir = committed_repo();
        let repo = Repository::open(dir.path()).expect("open");
        let ids: Vec<Oid> = (0..6)
            .map(|n| repo.blob(format!("blob {n}\n").as_bytes()).expect("blob"))
            .collect();
        let objects = repo.commondir().join("objects");
        let paths: Vec<PathBuf> = ids
            .iter()
            .map(|id| crate::git::repo::loose_object_path(&objects, *id))
            .collect();
        pack_and_sync(&repo, &paths.iter().collect::<Vec<_>>()).expect("packed");
        // The loose copies gone (as a power loss could tear them), git still reads each.
        for path in &paths {
            std::fs::remove_file(path).expect("remove loose");
        }
        for (n, id) in ids.iter().enumerate() {
            let shown = git(dir.path(), &["cat-file", "-p", &id.to_string()]);
            assert_eq!(shown, format!("blob {n}\n"));
        }
        assert_eq!(crate::git::pack_merge::recorded(&repo).len(), 1);
    }

    #[test]
    fn a_path_that_is_no_loose_object_is_refused() {
        let dir = committed_repo();
        let repo = Repository::open(dir.path()).expect("open");
        let odd = repo.commondir().join("objects").join("info").join("packs");
        assert!(pack_and_sync(&repo, &[&odd]).is_err());
    }
}
