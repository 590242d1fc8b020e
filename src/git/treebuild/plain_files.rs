//! The blobs of plain files (no filter applies): taken from the blob cache when the file has
//! not changed since it was last recorded, otherwise read and hashed, many at once on
//! several threads.

use std::path::Path;

use git2::{Oid, Repository};

use super::Source;
use crate::git::blob_cache::{self, BlobCache, Stamp};
use crate::git::pack_write::MemoryBudget;
use crate::git::repo::write_blob;

/// Plain files from this many on are read (and, unless the build's objects stay in memory,
/// compressed and written) on several threads: that is most of recording a large change (a
/// 1,000-file reply, 250 dirty files), and each thread's loose objects are files of their own.
pub(super) const PARALLEL_FROM: usize = 64;

/// At most this many threads read and write blobs (the writes contend in the filesystem
/// beyond it).
const MAX_THREADS: usize = 4;

/// A file larger than this is written straight to disk even when the build's objects stay in
/// memory (see [`crate::git::pack_write`]): held there it would be held twice, and a pack of
/// one large blob saves nothing over a loose object.
const IN_MEMORY_UP_TO: usize = 1 << 20;

/// The blobs of the plain files `plain` (change, path, mode, stamp), as (change, blob, mode):
/// with [`Source::remember`], those the cache knows unchanged are not read, and the others'
/// blobs are remembered when the file did not change while it was read.
pub(super) fn plain_values(
    source: &Source<'_>,
    plain: &[(usize, &Path, i32, Option<Stamp>)],
) -> Result<Vec<(usize, Oid, i32)>, git2::Error> {
    let (repo, root) = (source.repo, source.root);
    let in_memory = source.objects_in_memory;
    if !source.remember {
        let files: Vec<&Path> = plain.iter().map(|(_, path, _, _)| *path).collect();
        let ids = plain_blobs(repo, root, &files, in_memory)?;
        return Ok(plain
            .iter()
            .zip(ids)
            .map(|((change, _, mode, _), id)| (*change, id, *mode))
            .collect());
    }
    let cache = BlobCache::load(repo, root);
    let mut values = Vec::with_capacity(plain.len());
    let mut remembered = Vec::with_capacity(plain.len());
    let mut unknown = Vec::new();
    for item @ (change, path, mode, stamp) in plain {
        match cache.lookup(repo, path, *stamp) {
            Some(id) => {
                values.push((*change, id, *mode));
                remembered.extend(stamp.map(|s| (path.to_path_buf(), s, id)));
            }
            None => unknown.push(item),
        }
    }
    let files: Vec<&Path> = unknown.iter().map(|(_, path, _, _)| *path).collect();
    let ids = plain_blobs(repo, root, &files, in_memory)?;
    for ((change, path, mode, stamp), id) in unknown.into_iter().zip(ids) {
        values.push((*change, id, *mode));
        // Changed while it was read: the blob may be of neither version; not remembered.
        if let Some(stamp) = stamp
            && Stamp::now(&root.join(path)) == Some(*stamp)
        {
            remembered.push((path.to_path_buf(), *stamp, id));
        }
    }
    blob_cache::save(repo, root, &remembered);
    Ok(values)
}

/// What a worker made of one file: its bytes, for this thread to store in memory, or the
/// blob it wrote to disk itself.
enum Read {
    Bytes(Vec<u8>),
    Written(Oid),
}

/// The blobs of the plain files `paths` (relative to `root`), in order. A few are done on
/// this thread, many are shared out between it and a handle per extra thread on the same
/// object database (a handle is not shared between threads). With `in_memory` (the budget of
/// `repo`'s in-memory store), the workers only read the files, and this
/// thread stores them through `repo`; a large file, or one past the budget, a worker writes
/// to disk itself, so memory stays bounded however much is dirty.
pub(super) fn plain_blobs(
    repo: &Repository,
    root: &Path,
    paths: &[&Path],
    in_memory: Option<&MemoryBudget>,
) -> Result<Vec<Oid>, git2::Error> {
    let git_dir = repo.path();
    // A file's bytes, and whether they stay in memory (else they are written to disk).
    let read = |path: &Path| -> Result<(Vec<u8>, bool), git2::Error> {
        let full = root.join(path);
        let content = std::fs::read(&full)
            .map_err(|e| git2::Error::from_str(&format!("{}: {e}", full.display())))?;
        let kept = in_memory
            .is_some_and(|budget| content.len() <= IN_MEMORY_UP_TO && budget.take(content.len()));
        Ok((content, kept))
    };
    let work = |own: &Repository, path: &Path| -> Result<Read, git2::Error> {
        match read(path)? {
            (content, true) => Ok(Read::Bytes(content)),
            (content, false) => Ok(Read::Written(write_blob(own, &content)?)),
        }
    };
    // This thread writes what goes to disk through `repo`, or, when `repo` keeps its writes,
    // through the budget's plain handle.
    let mine = |path: &Path| -> Result<Read, git2::Error> {
        Ok(match (read(path)?, in_memory) {
            ((content, true), _) => Read::Bytes(content),
            ((content, false), Some(budget)) => Read::Written(budget.write_to_disk(&content)?),
            ((content, false), None) => Read::Written(write_blob(repo, &content)?),
        })
    };
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(MAX_THREADS);
    let reads: Vec<Read> = if paths.len() < PARALLEL_FROM || threads < 2 {
        paths
            .iter()
            .map(|path| mine(path))
            .collect::<Result<_, _>>()?
    } else {
        let mut parts = paths.chunks(paths.len().div_ceil(threads));
        let first = parts.next().unwrap_or_default();
        std::thread::scope(|scope| -> Result<Vec<Read>, git2::Error> {
            let others: Vec<_> = parts
                .map(|part| {
                    scope.spawn(move || -> Result<Vec<Read>, git2::Error> {
                        let own = Repository::open(git_dir)?;
                        part.iter().map(|path| work(&own, path)).collect()
                    })
                })
                .collect();
            let mut reads: Vec<Read> = first
                .iter()
                .map(|path| mine(path))
                .collect::<Result<_, _>>()?;
            for other in others {
                let part = other
                    .join()
                    .map_err(|_| git2::Error::from_str("a thread reading files panicked"))??;
                reads.extend(part);
            }
            Ok(reads)
        })?
    };
    reads
        .into_iter()
        .map(|read| match read {
            Read::Bytes(content) => write_blob(repo, &content),
            Read::Written(id) => Ok(id),
        })
        .collect()
}
