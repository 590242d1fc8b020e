//! The blobs of the working tree's changed files, remembered by their stat data, so that a
//! file the user changed and has not touched since the last checkpoint is neither read nor
//! hashed again: the user's 250 dirty files cost one apply's checkpoint, not every
//! operation's (the undo right after it, the next apply).
//!
//! Trusted exactly as git trusts its index: an entry counts only while the file's mtime,
//! ctime, inode, device, size and mode are all as recorded, the recorded stat was the same
//! before and after the file was read, and the file was last modified strictly before the
//! cache was written (a change within the same clock tick as the write could keep every stat
//! field: such a "racily clean" entry is hashed again). The blob must still be in the object
//! database. The cache lives in the working tree's own git dir (the stage has its own), is
//! replaced whole by each tree built from disk (so it holds the current dirty set, never
//! more), and anything unreadable in it is ignored: it can only save time, never change a
//! result.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use git2::{Oid, Repository};

const FILE: &str = "loaf/blob-cache";
const HEADER: &str = "loaf-blob-cache 1";

/// A file's stat data, as far as it tells whether the content changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp {
    mtime: (i64, i64),
    ctime: (i64, i64),
    ino: u64,
    dev: u64,
    size: u64,
    mode: u32,
}

impl Stamp {
    /// The stamp of `meta` (from `symlink_metadata`); `None` where stat data is not enough.
    #[cfg(unix)]
    pub fn of(meta: &std::fs::Metadata) -> Option<Stamp> {
        use std::os::unix::fs::MetadataExt as _;
        Some(Stamp {
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
            ino: meta.ino(),
            dev: meta.dev(),
            size: meta.size(),
            mode: meta.mode(),
        })
    }

    /// No stamp off unix: nothing is cached.
    #[cfg(not(unix))]
    pub fn of(_meta: &std::fs::Metadata) -> Option<Stamp> {
        None
    }

    /// The stamp of the file at `path` now.
    pub fn now(path: &Path) -> Option<Stamp> {
        std::fs::symlink_metadata(path)
            .ok()
            .and_then(|m| Stamp::of(&m))
    }
}

/// The cache of one working tree, as read at the start of a tree build.
#[derive(Debug, Default)]
pub(crate) struct BlobCache {
    entries: HashMap<PathBuf, (Stamp, Oid)>,
}

impl BlobCache {
    /// The cache of `root` (the working tree of `repo`); empty when there is none, it is
    /// another tree's, or it cannot be read.
    pub fn load(repo: &Repository, root: &Path) -> BlobCache {
        let file = repo.path().join(FILE);
        let written = std::fs::symlink_metadata(&file)
            .ok()
            .and_then(|m| Stamp::of(&m))
            .map(|s| s.mtime);
        let (Some(written), Ok(text)) = (written, std::fs::read(&file)) else {
            return BlobCache::default();
        };
        BlobCache {
            entries: parse(&text, root)
                .unwrap_or_default()
                .into_iter()
                // Racily clean: modified in the clock tick the cache was written in.
                .filter(|(_, (stamp, _))| stamp.mtime < written)
                .collect(),
        }
    }

    /// The blob recorded for `path` when the file's stamp is still `stamp` and the object
    /// database still has the blob.
    pub fn lookup(&self, repo: &Repository, path: &Path, stamp: Option<Stamp>) -> Option<Oid> {
        let (recorded, id) = self.entries.get(path)?;
        let odb = repo.odb().ok()?;
        (Some(*recorded) == stamp && odb.exists(*id)).then_some(*id)
    }
}

/// Replaces the cache of `root` with `entries` (path relative to `root`, stamp, blob). A
/// failure costs only time: the next build hashes those files again.
pub fn save(repo: &Repository, root: &Path, entries: &[(PathBuf, Stamp, Oid)]) {
    let file = repo.path().join(FILE);
    if entries.is_empty() {
        let _ = std::fs::remove_file(&file);
        return;
    }
    let mut out = format!("{HEADER}\n").into_bytes();
    out.extend_from_slice(root.as_os_str().as_encoded_bytes());
    out.push(b'\n');
    for (path, s, id) in entries {
        let name = path.as_os_str().as_encoded_bytes();
        if name.contains(&b'\n') {
            continue;
        }
        let line = format!(
            "{id} {} {} {} {} {} {} {} {} ",
            s.mtime.0, s.mtime.1, s.ctime.0, s.ctime.1, s.ino, s.dev, s.size, s.mode
        );
        out.extend_from_slice(line.as_bytes());
        out.extend_from_slice(name);
        out.push(b'\n');
    }
    // Last: a file cut short by a crash is refused whole.
    out.extend_from_slice(b"end\n");
    let Some(dir) = file.parent() else { return };
    let _ = std::fs::create_dir_all(dir);
    let Ok(mut temp) = tempfile::NamedTempFile::new_in(dir) else {
        return;
    };
    if std::io::Write::write_all(&mut temp, &out).is_ok() {
        let _ = temp.persist(&file);
    }
}

/// The entries of a cache file written for `root`; `None` when it is not one, is another
/// tree's, or is incomplete.
fn parse(text: &[u8], root: &Path) -> Option<Vec<(PathBuf, (Stamp, Oid))>> {
    let mut lines = text.split(|b| *b == b'\n');
    if lines.next()? != HEADER.as_bytes() || lines.next()? != root.as_os_str().as_encoded_bytes() {
        return None;
    }
    let mut entries = Vec::new();
    for line in lines {
        if line == b"end" {
            return Some(entries);
        }
        entries.push(parse_line(line)?);
    }
    None
}

/// One entry: the blob, eight numbers, then the path (which may hold spaces).
fn parse_line(line: &[u8]) -> Option<(PathBuf, (Stamp, Oid))> {
    let mut fields = line.splitn(10, |b| *b == b' ');
    let id = Oid::from_str(std::str::from_utf8(fields.next()?).ok()?).ok()?;
    let mut numbers = [0i64; 7];
    for n in &mut numbers {
        *n = std::str::from_utf8(fields.next()?).ok()?.parse().ok()?;
    }
    let mode: u32 = std::str::from_utf8(fields.next()?).ok()?.parse().ok()?;
    let path = fields.next().filter(|p| !p.is_empty())?;
    let path = crate::git::repo::path_from_bytes(path).into_owned();
    let [ms, mns, cs, cns, ino, dev, size] = numbers;
    let stamp = Stamp {
        mtime: (ms, mns),
        ctime: (cs, cns),
        ino: u64::try_from(ino).ok()?,
        dev: u64::try_from(dev).ok()?,
        size: u64::try_from(size).ok()?,
        mode,
    };
    Some((path, (stamp, id)))
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use super::*;
    use crate::git::testing::{committed_repo, git, write_file};
    use crate::git::treebuild::{Source, tree_with_paths};

    /// The working tree's tree with `paths` read from disk, remembering as a checkpoint does.
    fn build(repo: &Repository, root: &Path, paths: &[&str]) -> Oid {
        let head = repo.head().and_then(|h| h.peel_to_tree()).expect("head");
        let source = Source {
            repo,
            base: head.id(),
            root,
            filters: repo,
            remember: true,
            objects_in_memory: None,
        };
        let paths: Vec<PathBuf> = paths.iter().map(PathBuf::from).collect();
        tree_with_paths(&source, &paths).expect("tree")
    }

    /// What `git add -A && git write-tree` records, the index put back after.
    fn git_tree(root: &Path) -> String {
        git(root, &["add", "-A"]);
        let tree = git(root, &["write-tree"]).trim().to_owned();
        git(root, &["reset", "-q"]);
        tree
    }

    /// The cache's file with `f(text)` in place of its text, its mtime kept.
    fn edit_cache(repo: &Repository, f: impl Fn(&str) -> String) {
        let file = repo.path().join(FILE);
        let when = std::fs::metadata(&file)
            .and_then(|m| m.modified())
            .expect("mtime");
        let text = std::fs::read_to_string(&file).expect("cache");
        std::fs::write(&file, f(&text)).expect("write");
        set_mtime(&file, when);
    }

    fn set_mtime(path: &Path, when: SystemTime) {
        let file = std::fs::File::options()
            .write(true)
            .open(path)
            .expect("open");
        file.set_modified(when).expect("set mtime");
    }

    fn mtime(path: &Path) -> SystemTime {
        std::fs::metadata(path)
            .and_then(|m| m.modified())
            .expect("mtime")
    }

    /// A repository whose `a.txt` the user edited a minute ago (past any racy window).
    fn edited_a_minute_ago() -> (tempfile::TempDir, Repository) {
        let dir = committed_repo();
        write_file(dir.path(), "a.txt", "the user's edit\n");
        let old = SystemTime::now() - Duration::from_secs(60);
        set_mtime(&dir.path().join("a.txt"), old);
        let repo = Repository::open(dir.path()).expect("open");
        (dir, repo)
    }

    /// The blob `tree` holds at `path`.
    fn blob_at(repo: &Repository, tree: Oid, path: &str) -> Oid {
        repo.find_tree(tree)
            .and_then(|t| t.get_path(Path::new(path)).map(|e| e.id()))
            .expect("the path's blob")
    }

    /// An old file's blob comes from the cache (shown by a cache that names another blob
    /// for it: the build takes that one, so the file was not read).
    #[test]
    fn an_unchanged_file_is_taken_from_the_cache_without_reading_it() {
        let (dir, repo) = edited_a_minute_ago();
        let root = dir.path();
        assert_eq!(build(&repo, root, &["a.txt"]).to_string(), git_tree(root));
        let other = repo.blob(b"not what a.txt holds\n").expect("blob");
        let real = repo
            .find_tree(build(&repo, root, &["a.txt"]))
            .and_then(|t| t.get_path(Path::new("a.txt")).map(|e| e.id()))
            .expect("a.txt");
        edit_cache(&repo, |text| {
            text.replace(&real.to_string(), &other.to_string())
        });
        let tree = repo
            .find_tree(build(&repo, root, &["a.txt"]))
            .expect("tree");
        assert_eq!(
            tree.get_path(Path::new("a.txt")).expect("a.txt").id(),
            other,
            "the cached blob is used while the stat data holds"
        );
    }

    /// A change that keeps the size and puts the mtime back (ctime moves), a file replaced
    /// by another (inode), and a file modified in the clock tick the cache was written in
    /// (racily clean): each is read again and recorded as it is now.
    #[test]
    fn changed_or_racy_files_are_read_again() {
        let dir = committed_repo();
        let root = dir.path();
        let old = SystemTime::now() - Duration::from_secs(60);
        for name in ["same-size.txt", "replaced.txt", "racy.txt"] {
            write_file(root, name, "version 1\n");
            set_mtime(&root.join(name), old);
        }
        let repo = Repository::open(root).expect("open");
        let paths = ["same-size.txt", "replaced.txt", "racy.txt"];
        build(&repo, root, &paths);
        std::thread::sleep(Duration::from_millis(20));
        write_file(root, "same-size.txt", "version 2\n");
        set_mtime(&root.join("same-size.txt"), old);
        std::fs::rename(root.join("same-size.txt"), root.join("tmp")).expect("mv");
        std::fs::rename(root.join("tmp"), root.join("same-size.txt")).expect("mv");
        let next = root.join("next");
        std::fs::write(&next, "version 2\n").expect("write");
        set_mtime(&next, old);
        std::fs::rename(&next, root.join("replaced.txt")).expect("replace");
        // racy.txt: changed (size kept), then the cache's time set to its mtime.
        write_file(root, "racy.txt", "version 2\n");
        let racy_time = mtime(&root.join("racy.txt"));
        let cache = repo.path().join(FILE);
        set_mtime(&cache, racy_time);
        // Its entry was remembered with the old stat data: make it claim the new one, so
        // that only the racy rule can refuse it.
        let stamp = Stamp::now(&root.join("racy.txt")).expect("stamp");
        edit_cache(&repo, |text| {
            text.lines()
                .map(|line| match line.strip_suffix(" racy.txt") {
                    Some(head) => {
                        let id = head.split(' ').next().unwrap_or_default();
                        format!(
                            "{id} {} {} {} {} {} {} {} {} racy.txt",
                            stamp.mtime.0,
                            stamp.mtime.1,
                            stamp.ctime.0,
                            stamp.ctime.1,
                            stamp.ino,
                            stamp.dev,
                            stamp.size,
                            stamp.mode
                        )
                    }
                    None => line.to_owned(),
                })
                .collect::<Vec<_>>()
                .join("\n")
                + "\n"
        });
        set_mtime(&cache, racy_time);
        assert_eq!(build(&repo, root, &paths).to_string(), git_tree(root));
    }

    /// A cache cut short, another working tree's, or naming a blob the object database no
    /// longer has: ignored, and the build is still what `git add` records.
    #[test]
    fn an_unusable_cache_is_ignored() {
        let (dir, repo) = edited_a_minute_ago();
        let root = dir.path();
        let expected = git_tree(root);
        let lie = repo.blob(b"a lie\n").expect("blob");
        let real = build(&repo, root, &["a.txt"]);
        assert_eq!(real.to_string(), expected);
        let blob = blob_at(&repo, real, "a.txt");
        let lying = |text: &str| text.replace(&blob.to_string(), &lie.to_string());
        // Cut short: no `end` line.
        edit_cache(&repo, |text| lying(text).replace("end\n", ""));
        assert_eq!(build(&repo, root, &["a.txt"]).to_string(), expected);
        // Another tree's.
        edit_cache(&repo, |text| {
            lying(text).replacen(&root.display().to_string(), "/elsewhere", 1)
        });
        assert_eq!(build(&repo, root, &["a.txt"]).to_string(), expected);
        // A blob that is gone.
        let missing = "0123456789012345678901234567890123456789";
        edit_cache(&repo, |text| text.replace(&blob.to_string(), missing));
        assert_eq!(build(&repo, root, &["a.txt"]).to_string(), expected);
    }
}
