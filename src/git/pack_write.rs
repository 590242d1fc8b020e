//! Many new objects kept as one pack file instead of a loose file each.
//!
//! Recording a dirty tree writes a blob for every changed file and a tree for every folder
//! above them: for 250 dirty files, ~450 loose objects, each a file to create, compress,
//! rename and later sync, which cost more than reading and hashing the files. Written
//! through a [`Buffered`] handle instead, the objects stay in memory (libgit2's mempack
//! backend: reads of them are served from there too) until [`Buffered::keep`] writes those a
//! result needs: a few as loose objects, as before; from [`PACK_FROM`] on, as one pack with
//! its index under `objects/pack` ([`super::pack_files`]; they are recorded, and merged when
//! many, by [`super::pack_merge`]). The pack holds no deltas, so it is written in
//! the time it takes to compress the objects; `git gc` repacks it with the rest.
//!
//! Objects a result does not reach are never written. What the repository already has is
//! not written again: a tree it has is taken as complete, as git takes it.

use std::collections::HashSet;

use git2::{ObjectType, Odb, OdbLookupFlags, Oid, Repository};

/// From this many new objects on, they are written as one pack (git itself unpacks a
/// fetched pack of fewer than 100 objects into loose ones: `transfer.unpackLimit`).
pub(crate) const PACK_FROM: usize = 64;

/// How many bytes of file content a [`Buffered`] build holds in memory (kept, it is held
/// about twice more while it is compressed into the pack); files past it are
/// written to disk as they are read, on several threads (a dirty tree of gigabytes must not
/// be held whole, and the content kept in memory is hashed on one thread).
pub(crate) const MEMORY_BUDGET: usize = 8 << 20;

/// A second handle on a repository whose object writes stay in memory until
/// [`Buffered::keep`].
pub(crate) struct Buffered {
    repo: Repository,
    budget: MemoryBudget,
}

/// What a build through a [`Buffered`] handle shares with the threads reading its files: the
/// bytes of content it may still hold in memory, and a plain handle on the same repository for
/// what goes to disk instead (opened the first time one is needed, then kept for the build:
/// a build reads an untracked folder's files one call each).
pub(crate) struct MemoryBudget {
    left: std::sync::atomic::AtomicUsize,
    git_dir: std::path::PathBuf,
    disk: std::sync::Mutex<Option<Repository>>,
}

impl MemoryBudget {
    /// Takes `len` bytes from what is left, if that many are.
    pub fn take(&self, len: usize) -> bool {
        use std::sync::atomic::Ordering::Relaxed;
        self.left
            .fetch_update(Relaxed, Relaxed, |left| left.checked_sub(len))
            .is_ok()
    }

    /// Writes `content` as a blob straight to disk.
    pub fn write_to_disk(&self, content: &[u8]) -> Result<Oid, git2::Error> {
        let mut disk = self.disk.lock().unwrap_or_else(|e| e.into_inner());
        let repo = match &mut *disk {
            Some(repo) => repo,
            none => none.insert(Repository::open(&self.git_dir)?),
        };
        crate::git::repo::write_blob(repo, content)
    }
}

/// What [`Buffered::keep`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Kept {
    /// Objects written.
    pub objects: usize,
    /// Whether as one pack (else as loose objects).
    pub packed: bool,
}

impl Buffered {
    /// Opens `repo` again (same git dir, same working tree) with an in-memory object store in
    /// front of its own: writes go there, reads look there first.
    pub fn open(repo: &Repository) -> Result<Buffered, git2::Error> {
        let buffered = Repository::open(repo.path())?;
        if let Some(workdir) = repo.workdir()
            && buffered.workdir() != Some(workdir)
        {
            buffered.set_workdir(workdir, false)?;
        }
        // libgit2 gives every write to the backend of highest priority (the loose one has 1,
        // packs 2). The backend lives as long as the handle's object database.
        buffered.odb()?.add_new_mempack_backend(1000)?;
        Ok(Buffered {
            repo: buffered,
            budget: MemoryBudget {
                left: std::sync::atomic::AtomicUsize::new(MEMORY_BUDGET),
                git_dir: repo.path().to_path_buf(),
                disk: std::sync::Mutex::new(None),
            },
        })
    }

    /// The handle to build with.
    pub fn repo(&self) -> &Repository {
        &self.repo
    }

    /// The bytes of file content the build may still hold in memory (see
    /// [`crate::git::treebuild::Source::objects_in_memory`]).
    pub fn budget(&self) -> &MemoryBudget {
        &self.budget
    }

    /// Writes to `disk` (the same repository through a plain handle) every object that
    /// `tree` reaches and the repository does not have yet, skipping whatever `base` holds
    /// at the same place: as loose objects when few, else as one pack. The buffered writes
    /// nothing reaches are dropped.
    pub fn keep(
        self,
        disk: &Repository,
        base: Option<Oid>,
        tree: Oid,
    ) -> Result<Kept, git2::Error> {
        let disk_odb = disk.odb()?;
        let mut found = Vec::new();
        let mut seen = HashSet::new();
        self.new_objects(&disk_odb, base, tree, &mut found, &mut seen)?;
        if found.is_empty() {
            return Ok(Kept::default());
        }
        let odb = self.repo.odb()?;
        let mut objects = Vec::with_capacity(found.len());
        for id in &found {
            let object = odb.read(*id)?;
            objects.push((object.kind(), object.data().to_vec()));
        }
        let packed = found.len() >= PACK_FROM;
        if packed {
            let entries: Vec<(Oid, Vec<u8>)> =
                found.iter().copied().zip(compressed(&objects)?).collect();
            // Recorded before its files are there: a write killed between the pack and its
            // index leaves a recorded pack, which the next merge's tidying removes.
            super::pack_files::write(disk, &entries, |name| {
                super::pack_merge::record(disk, name);
            })?;
            super::pack_merge::merge_when_many(disk);
        } else {
            for (kind, data) in &objects {
                disk_odb.write(*kind, data)?;
            }
        }
        // Every object must now be on disk: a tree naming a missing object would be a
        // broken history (checked through a fresh look at the pack folder).
        disk_odb.refresh()?;
        if let Some(missing) = found.iter().find(|id| !disk_odb.exists(**id)) {
            return Err(git2::Error::from_str(&format!(
                "object {missing} was not written"
            )));
        }
        Ok(Kept {
            objects: found.len(),
            packed,
        })
    }

    /// The objects `tree` reaches that neither `base` (at the same place) nor the disk
    /// holds, each tree after what it holds: written loose in this order, a process killed
    /// half-way never leaves a tree whose objects are missing (a tree on disk is taken as
    /// complete, here and by git).
    fn new_objects(
        &self,
        disk: &Odb<'_>,
        base: Option<Oid>,
        tree: Oid,
        found: &mut Vec<Oid>,
        seen: &mut HashSet<Oid>,
    ) -> Result<(), git2::Error> {
        // Without looking at the pack folder again for every object it lacks (libgit2 does
        // that by default: one folder read per new object, a tenth of a dirty checkpoint's
        // time): a pack another process made meanwhile is missed at worst, and its objects
        // are then written again, a harmless copy; nothing missing is ever taken as there.
        let on_disk = |id: Oid| disk.exists_ext(id, OdbLookupFlags::NO_REFRESH);
        if base == Some(tree) || !seen.insert(tree) || on_disk(tree) {
            return Ok(());
        }
        let base = base.map(|b| self.repo.find_tree(b)).transpose()?;
        for entry in self.repo.find_tree(tree)?.iter() {
            let before = base
                .as_ref()
                .and_then(|b| b.get_name_bytes(entry.name_bytes()))
                .map(|e| (e.id(), e.kind()));
            if before.map(|(id, _)| id) == Some(entry.id()) {
                continue;
            }
            match entry.kind() {
                Some(ObjectType::Tree) => {
                    let base = before
                        .filter(|(_, kind)| *kind == Some(ObjectType::Tree))
                        .map(|(id, _)| id);
                    self.new_objects(disk, base, entry.id(), found, seen)?;
                }
                Some(ObjectType::Blob) if seen.insert(entry.id()) && !on_disk(entry.id()) => {
                    found.push(entry.id());
                }
                // A submodule's commit is not in this repository.
                _ => {}
            }
        }
        found.push(tree);
        Ok(())
    }
}

/// Each object as a pack entry (its type and size, then its zlib-compressed bytes), the
/// compressing shared out between threads when there are many.
fn compressed(objects: &[(ObjectType, Vec<u8>)]) -> Result<Vec<Vec<u8>>, git2::Error> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(4);
    let part = objects.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        let workers: Vec<_> = objects
            .chunks(part)
            .map(|chunk| {
                scope.spawn(move || -> std::io::Result<Vec<Vec<u8>>> {
                    chunk
                        .iter()
                        .map(|(kind, data)| super::pack_files::entry(*kind, data))
                        .collect()
                })
            })
            .collect();
        let mut all = Vec::with_capacity(objects.len());
        for worker in workers {
            let part = worker
                .join()
                .map_err(|_| git2::Error::from_str("a thread compressing objects panicked"))?
                .map_err(|e| git2::Error::from_str(&format!("compressing an object: {e}")))?;
            all.extend(part);
        }
        Ok(all)
    })
}

/// The pack files under `objects/pack` (for tests).
#[cfg(test)]
pub fn packs(repo: &Repository) -> Vec<std::path::PathBuf> {
    let dir = super::pack_files::pack_dir(repo);
    let mut found: Vec<_> = std::fs::read_dir(dir)
        .map(|read| {
            read.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "pack"))
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::git::pack_files::entry;
    use crate::git::pack_merge::{MERGE_FROM, recorded};
    use crate::git::testing::{committed_repo, git};

    /// A tree of `files` new blobs in folders of ten, built through `buffered`, on top of
    /// the committed tree `base`; returns the tree and the blobs' contents by id.
    fn build(buffered: &Buffered, base: Oid, files: usize) -> (Oid, Vec<(Oid, String)>) {
        let repo = buffered.repo();
        let mut root = repo
            .treebuilder(Some(&repo.find_tree(base).expect("base")))
            .expect("builder");
        let mut blobs = Vec::new();
        for folder in 0..files.div_ceil(10) {
            let mut sub = repo.treebuilder(None).expect("builder");
            for file in folder * 10..((folder + 1) * 10).min(files) {
                let text = format!("file {file}\n").repeat(file % 7 + 1);
                let id = repo.blob(text.as_bytes()).expect("blob");
                sub.insert(format!("f{file}.txt"), id, 0o100644)
                    .expect("insert");
                blobs.push((id, text));
            }
            let sub = sub.write().expect("tree");
            root.insert(format!("d{folder}"), sub, 0o040000)
                .expect("insert");
        }
        (root.write().expect("root"), blobs)
    }

    fn head_tree(repo: &Repository) -> Oid {
        repo.head()
            .and_then(|h| h.peel_to_tree())
            .expect("head")
            .id()
    }

    fn loose_count(root: &Path) -> usize {
        let out = git(root, &["count-objects", "-v"]);
        out.lines()
            .find_map(|l| l.strip_prefix("count: "))
            .and_then(|n| n.parse().ok())
            .expect("a count")
    }

    #[test]
    fn many_new_objects_become_one_pack_that_git_reads_and_checks() {
        let dir = committed_repo();
        let root = dir.path();
        let repo = Repository::open(root).expect("repo");
        let base = head_tree(&repo);
        let (loose_before, packs_before) = (loose_count(root), packs(&repo).len());
        let buffered = Buffered::open(&repo).expect("buffered");
        let (tree, blobs) = build(&buffered, base, 100);
        // Nothing reaches the disk before `keep`.
        assert!(!repo.odb().expect("odb").exists(tree));
        let kept = buffered.keep(&repo, Some(base), tree).expect("kept");
        // 100 blobs, 10 folders and the root; the base's own entries are not written again.
        assert_eq!(
            kept,
            Kept {
                objects: 111,
                packed: true
            }
        );
        assert_eq!(loose_count(root), loose_before, "no loose object written");
        assert_eq!(packs(&repo).len(), packs_before + 1);
        for (id, text) in &blobs {
            assert_eq!(git(root, &["cat-file", "-p", &id.to_string()]), *text);
        }
        git(
            root,
            &["verify-pack", packs(&repo)[0].to_str().expect("utf-8")],
        );
        // The tree as git sees it: the base's files and the new ones.
        let listed = git(root, &["ls-tree", "-r", "--name-only", &tree.to_string()]);
        assert!(
            listed.contains("a.txt\n") && listed.contains("d9/f99.txt\n"),
            "{listed}"
        );
        git(
            root,
            &[
                "update-ref",
                "refs/test/kept",
                &commit_of(&repo, tree).to_string(),
            ],
        );
        git(root, &["fsck", "--strict", "--no-dangling"]);
    }

    fn commit_of(repo: &Repository, tree: Oid) -> Oid {
        let sig =
            git2::Signature::new("Ada", "ada@example.com", &git2::Time::new(0, 0)).expect("sig");
        let tree = repo.find_tree(tree).expect("tree");
        repo.commit(None, &sig, &sig, "kept", &tree, &[])
            .expect("commit")
    }

    #[test]
    fn a_few_new_objects_are_written_loose_and_nothing_unreached_is_written() {
        let dir = committed_repo();
        let root = dir.path();
        let repo = Repository::open(root).expect("repo");
        let base = head_tree(&repo);
        let loose_before = loose_count(root);
        let buffered = Buffered::open(&repo).expect("buffered");
        let stray = buffered.repo().blob(b"never referenced\n").expect("blob");
        let (tree, _) = build(&buffered, base, 3);
        let kept = buffered.keep(&repo, Some(base), tree).expect("kept");
        assert_eq!(
            kept,
            Kept {
                objects: 5,
                packed: false
            }
        );
        assert_eq!(loose_count(root), loose_before + 5);
        assert!(
            !repo.odb().expect("odb").exists(stray),
            "an unreached write is dropped"
        );
        assert!(packs(&repo).is_empty());
    }

    #[test]
    fn objects_the_repository_has_are_not_written_again() {
        let dir = committed_repo();
        let root = dir.path();
        let repo = Repository::open(root).expect("repo");
        let base = head_tree(&repo);
        let first = Buffered::open(&repo).expect("buffered");
        let (tree, _) = build(&first, base, 70);
        assert!(first.keep(&repo, Some(base), tree).expect("kept").packed);
        // The same tree again, and against no base at all: everything is on disk already.
        let again = Buffered::open(&repo).expect("buffered");
        let (same, _) = build(&again, base, 70);
        assert_eq!(same, tree);
        assert_eq!(
            again.keep(&repo, None, same).expect("kept"),
            Kept::default()
        );
        assert_eq!(packs(&repo).len(), 1);
    }

    /// Written loose in this order, a kill between two writes never leaves a tree on disk
    /// whose objects are not (the next checkpoint takes a tree on disk as complete).
    #[test]
    fn every_tree_comes_after_the_objects_it_holds() {
        let dir = committed_repo();
        let repo = Repository::open(dir.path()).expect("repo");
        let buffered = Buffered::open(&repo).expect("buffered");
        let (tree, _) = build(&buffered, head_tree(&repo), 25);
        let (mut found, mut seen) = (Vec::new(), HashSet::new());
        let disk = repo.odb().expect("odb");
        buffered
            .new_objects(&disk, None, tree, &mut found, &mut seen)
            .expect("walked");
        assert_eq!(
            found.len(),
            25 + 3 + 1,
            "the base's objects are on disk already"
        );
        assert_eq!(found.last(), Some(&tree));
        for (at, id) in found.iter().enumerate() {
            let Ok(held) = buffered.repo().find_tree(*id) else {
                continue;
            };
            for entry in held.iter() {
                let child = found.iter().position(|f| *f == entry.id());
                assert!(
                    child.is_none_or(|c| c < at),
                    "{} after its tree",
                    entry.id()
                );
            }
        }
    }

    /// Recording many dirty trees never leaves more than `MERGE_FROM` packs of git-loaf's:
    /// the one that reaches it merges them all into one, every object still readable.
    #[test]
    fn the_packs_are_merged_when_they_reach_the_limit() {
        let dir = committed_repo();
        let root = dir.path();
        let repo = Repository::open(root).expect("repo");
        let base = head_tree(&repo);
        let mut trees = Vec::new();
        for round in 0..MERGE_FROM {
            let buffered = Buffered::open(&repo).expect("buffered");
            let blobs: Vec<Oid> = (0..PACK_FROM)
                .map(|n| {
                    buffered
                        .repo()
                        .blob(format!("{round}.{n}").as_bytes())
                        .expect("blob")
                })
                .collect();
            let mut builder = buffered.repo().treebuilder(None).expect("builder");
            for (n, blob) in blobs.iter().enumerate() {
                builder
                    .insert(format!("f{n}"), *blob, 0o100644)
                    .expect("insert");
            }
            let tree = builder.write().expect("tree");
            drop(builder);
            assert!(buffered.keep(&repo, Some(base), tree).expect("kept").packed);
            trees.push(tree);
            let expected = if round + 1 < MERGE_FROM { round + 1 } else { 1 };
            assert_eq!(packs(&repo).len(), expected, "after round {round}");
        }
        assert_eq!(recorded(&repo).len(), 1);
        for tree in trees {
            let listed = git(root, &["ls-tree", "-r", &tree.to_string()]);
            assert_eq!(listed.lines().count(), PACK_FROM);
        }
    }

    /// Past the memory budget, file content is written to disk as it is read: memory stays
    /// bounded by the budget however much is dirty, and the tree is the same.
    #[test]
    fn files_past_the_memory_budget_go_straight_to_disk() {
        let dir = committed_repo();
        let root = dir.path();
        let repo = Repository::open(root).expect("repo");
        let paths: Vec<std::path::PathBuf> = (0..120)
            .map(|n| {
                let path = std::path::PathBuf::from(format!("big/f{n:03}.txt"));
                let text = format!("{n:03}").repeat(333) + "\n";
                assert_eq!(text.len(), 1000);
                std::fs::create_dir_all(root.join("big")).expect("mkdir");
                std::fs::write(root.join(&path), text).expect("write");
                path
            })
            .collect();
        let base = head_tree(&repo);
        let buffered = Buffered::open(&repo).expect("buffered");
        buffered
            .budget()
            .left
            .store(80 * 1000, std::sync::atomic::Ordering::Relaxed);
        let loose_before = loose_count(root);
        let source = crate::git::treebuild::Source {
            repo: buffered.repo(),
            base,
            root,
            filters: &repo,
            remember: false,
            objects_in_memory: Some(buffered.budget()),
        };
        let tree = crate::git::treebuild::tree_with_paths(&source, &paths).expect("tree");
        assert_eq!(
            loose_count(root),
            loose_before + 40,
            "the 40 past the budget"
        );
        let kept = buffered.keep(&repo, Some(base), tree).expect("kept");
        assert_eq!(
            kept,
            Kept {
                objects: 80 + 2,
                packed: true
            }
        );
        git(root, &["add", "-A"]);
        assert_eq!(git(root, &["write-tree"]).trim(), tree.to_string());
    }

    #[test]
    fn pack_entry_sizes_use_the_varint_git_reads() {
        // 0x1234 bytes of a blob: type 3, low nibble 4, then 0x123 in 7-bit groups.
        let entry = entry(ObjectType::Blob, &[b'x'; 0x1234]).expect("entry");
        assert_eq!(&entry[..3], &[0x80 | (3 << 4) | 0x4, 0x80 | 0x23, 0x02]);
        let small = entry_header_only(ObjectType::Tree, 15);
        assert_eq!(small, vec![(2 << 4) | 15]);
    }

    fn entry_header_only(kind: ObjectType, len: usize) -> Vec<u8> {
        let data = vec![b'a'; len];
        let full = entry(kind, &data).expect("entry");
        full[..1].to_vec()
    }
}
