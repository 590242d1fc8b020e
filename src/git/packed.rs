//! Many new blobs written as one pack instead of as many loose objects. Recording a dirty
//! tree (250 changed files) or a large reply (1,000 files) wrote each blob as a file of its
//! own, in up to 256 folders, each then synced: most of the time such an operation took. A
//! pack is two files whatever the count. Blobs the object database already holds (the index's,
//! an earlier checkpoint's) are hashed, found, and not written again.
//!
//! libgit2 writes a pack from an in-memory object database (a mempack) whose dump gathers the
//! objects by commit: the new blobs are therefore put in one tree under one commit that carries
//! them into the pack. Nothing refers to that tree or commit; `git gc` drops them with the
//! other unreachable objects.

use std::io::Write as _;

use git2::{ObjectType, Oid, Repository, Signature, Time};

/// From this many new blobs on, they are written as one pack.
pub const PACK_FROM: usize = 64;

/// The blob ids of `contents`, in order; each one the object database lacks is written: as
/// one pack when there are at least [`PACK_FROM`] of them, else as loose objects (as
/// `Repository::blob` writes them). A pack that cannot be written falls back to loose
/// objects: the result is the same objects either way.
pub fn write_blobs(repo: &Repository, contents: &[&[u8]]) -> Result<Vec<Oid>, git2::Error> {
    let odb = repo.odb()?;
    let ids = contents
        .iter()
        .map(|c| Oid::hash_object(ObjectType::Blob, c))
        .collect::<Result<Vec<_>, _>>()?;
    let missing: Vec<&[u8]> = contents
        .iter()
        .zip(&ids)
        .filter(|(_, id)| !odb.exists(**id))
        .map(|(content, _)| *content)
        .collect();
    if missing.len() >= PACK_FROM {
        match write_pack(repo, &missing) {
            Ok(()) => return Ok(ids),
            Err(e) => tracing::debug!("new blobs as one pack: {e}; written loose instead"),
        }
    }
    for content in missing {
        repo.blob(content)?;
    }
    Ok(ids)
}

/// Writes `blobs` into the repository as one pack (with the tree and commit that carry them).
fn write_pack(repo: &Repository, blobs: &[&[u8]]) -> Result<(), git2::Error> {
    // A handle of its own, so that its writes, and only they, go to memory.
    let own = Repository::open(repo.path())?;
    let memory = own.odb()?;
    let mempack = memory.add_new_mempack_backend(1_000)?;
    let mut carrier = own.treebuilder(None)?;
    for (n, blob) in blobs.iter().enumerate() {
        carrier.insert(n.to_string(), own.blob(blob)?, 0o100_644)?;
    }
    let tree = own.find_tree(carrier.write()?)?;
    let signature = Signature::new("git-loaf", "git-loaf@localhost", &Time::new(0, 0))?;
    let message = "git-loaf: carries new blobs into one pack (refers to nothing)";
    own.commit(None, &signature, &signature, message, &tree, &[])?;
    let mut pack = git2::Buf::new();
    mempack.dump(&own, &mut pack)?;
    let odb = repo.odb()?;
    let mut writer = odb.packwriter()?;
    writer
        .write_all(&pack)
        .map_err(|e| git2::Error::from_str(&format!("writing the pack: {e}")))?;
    writer.commit()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::testing::{committed_repo, git};

    fn loose_objects(root: &std::path::Path) -> usize {
        git(root, &["count-objects", "-v"])
            .lines()
            .find_map(|l| l.strip_prefix("count: "))
            .and_then(|n| n.parse().ok())
            .expect("a count")
    }

    /// Many new blobs land in one pack (no loose object), readable by git and by this very
    /// handle; a blob git already had, and one given twice, are fine.
    #[test]
    fn many_new_blobs_are_one_pack_that_git_reads() {
        let dir = committed_repo();
        let root = dir.path();
        let repo = Repository::open(root).expect("open");
        let before = loose_objects(root);
        let mut contents: Vec<Vec<u8>> = (0..PACK_FROM + 5)
            .map(|n| format!("blob number {n}\n").into_bytes())
            .collect();
        contents.push(b"1\n2\n3\n".to_vec()); // a.txt's content: git has it
        contents.push(b"blob number 0\n".to_vec()); // given twice
        let slices: Vec<&[u8]> = contents.iter().map(Vec::as_slice).collect();
        let ids = write_blobs(&repo, &slices).expect("written");
        assert_eq!(loose_objects(root), before, "no loose object");
        for (id, content) in ids.iter().zip(&contents) {
            assert_eq!(repo.find_blob(*id).expect("found").content(), &content[..]);
            let shown = git(root, &["cat-file", "-p", &id.to_string()]);
            assert_eq!(shown.as_bytes(), &content[..]);
        }
        git(root, &["fsck", "--no-dangling"]);
    }

    /// A few new blobs are loose objects, as `Repository::blob` writes them; ones git already
    /// holds are not written again.
    #[test]
    fn a_few_new_blobs_are_loose_and_known_ones_are_not_written() {
        let dir = committed_repo();
        let root = dir.path();
        let repo = Repository::open(root).expect("open");
        let before = loose_objects(root);
        let ids = write_blobs(&repo, &[b"1\n2\n3\n", b"new\n"]).expect("written");
        assert_eq!(loose_objects(root), before + 1);
        assert_eq!(repo.find_blob(ids[1]).expect("found").content(), b"new\n");
    }
}
