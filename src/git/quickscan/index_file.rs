//! The index file read as git reads it before a status: its entries' stat data and blob ids
//! and the tree its cache says it holds, without verifying the file's checksum (git does not
//! either, except in `git fsck`) and without building a lookup table per entry. libgit2's
//! reading does both and costs a hook ~8 ms of CPU on 20,000 files, a sixth of what a whole
//! `git status` costs (see docs/agents.md#latency).
//!
//! The format is git's `Documentation/gitformat-index.txt`: a header (`DIRC`, version 2, 3
//! or 4, entry count), the entries sorted by path, then extensions. An index this reader
//! does not fully understand (a split index, a sparse index's folder entries, another object
//! format, any damage) is not read at all: the caller takes libgit2's reading instead, so a
//! mistake here can only cost time.

use std::io::Read as _;
use std::path::Path;

use git2::{IndexEntry, Oid};

/// The length of a SHA-1 object id in the file.
const ID_LEN: usize = 20;
/// Stat data (ten 32-bit fields), the id and the flags: the fixed part of an entry.
const FIXED_LEN: usize = 40 + ID_LEN + 2;
/// Flag: an extended-flags field follows (version 3 and up).
const EXTENDED: u16 = 0x4000;
/// Flag bits holding the path's length (0xfff: that long or longer).
const NAME_MASK: u16 = 0x0fff;

/// One entry as a scan needs it: its path (relative, `/`-separated) and what the index
/// recorded of the file.
#[derive(Debug, Clone, Copy)]
pub struct Entry<'a> {
    pub path: &'a [u8],
    pub ctime: (i64, u32),
    pub mtime: (i64, u32),
    pub ino: u32,
    pub mode: u32,
    pub size: u32,
    pub id: Oid,
    pub flags: u16,
    pub flags_extended: u16,
}

impl<'a> From<&'a IndexEntry> for Entry<'a> {
    fn from(e: &'a IndexEntry) -> Self {
        Entry {
            path: &e.path,
            ctime: (i64::from(e.ctime.seconds()), e.ctime.nanoseconds()),
            mtime: (i64::from(e.mtime.seconds()), e.mtime.nanoseconds()),
            ino: e.ino,
            mode: e.mode,
            size: e.file_size,
            id: e.id,
            flags: e.flags,
            flags_extended: e.flags_extended,
        }
    }
}

impl Entry<'_> {
    /// The entry as libgit2 holds one (the fields a scan skips, device and owner, zero).
    pub fn to_index_entry(self) -> IndexEntry {
        let time = |(seconds, nanos): (i64, u32)| {
            git2::IndexTime::new(i32::try_from(seconds).unwrap_or(0), nanos)
        };
        IndexEntry {
            ctime: time(self.ctime),
            mtime: time(self.mtime),
            dev: 0,
            ino: self.ino,
            mode: self.mode,
            uid: 0,
            gid: 0,
            file_size: self.size,
            id: self.id,
            flags: self.flags,
            flags_extended: self.flags_extended,
            path: self.path.to_vec(),
        }
    }
}

/// An entry's fields, its path a range of [`IndexFile::paths`].
#[derive(Debug, Clone, Copy)]
struct Raw {
    path: (usize, usize),
    ctime: (i64, u32),
    mtime: (i64, u32),
    ino: u32,
    mode: u32,
    size: u32,
    id: Oid,
    flags: u16,
    flags_extended: u16,
}

/// The index file as read.
pub struct IndexFile {
    /// Every entry's path, one after the other.
    paths: Vec<u8>,
    raw: Vec<Raw>,
    /// When the file was last written (entries modified since are "racily clean").
    pub written: (i64, u32),
    /// The tree of the whole index, when its cache (the `TREE` extension) holds it.
    pub tree: Option<Oid>,
}

impl IndexFile {
    /// Reads the index file at `path`; `None` when it is absent or not in a form this reader
    /// knows.
    pub fn read(path: &Path) -> Option<IndexFile> {
        let mut file = std::fs::File::open(path).ok()?;
        // The same open file's time: a rewrite (by rename) meanwhile cannot mix two files.
        let meta = file.metadata().ok()?;
        let written = super::unix_time(meta.modified().ok()?);
        let mut data = Vec::with_capacity(usize::try_from(meta.len()).ok()?);
        file.read_to_end(&mut data).ok()?;
        let mut read = parse(&data)?;
        read.written = written;
        Some(read)
    }

    /// The entries, in the file's (sorted) order.
    pub fn entries(&self) -> Vec<Entry<'_>> {
        self.raw
            .iter()
            .map(|r| Entry {
                path: &self.paths[r.path.0..r.path.1],
                ctime: r.ctime,
                mtime: r.mtime,
                ino: r.ino,
                mode: r.mode,
                size: r.size,
                id: r.id,
                flags: r.flags,
                flags_extended: r.flags_extended,
            })
            .collect()
    }
}

/// A cursor over the file's bytes; every read is bounds-checked (`None` past the end).
struct Bytes<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Bytes<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(n)?;
        let out = self.data.get(self.at..end)?;
        self.at = end;
        Some(out)
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_be_bytes(self.take(4)?.try_into().ok()?))
    }

    fn u16(&mut self) -> Option<u16> {
        Some(u16::from_be_bytes(self.take(2)?.try_into().ok()?))
    }

    /// Bytes up to the next NUL (which is skipped).
    fn until_nul(&mut self) -> Option<&'a [u8]> {
        let rest = self.data.get(self.at..)?;
        let len = memchr::memchr(0, rest)?;
        let out = &rest[..len];
        self.at += len + 1;
        Some(out)
    }

    /// Version 4's path prefix length: git's offset varint.
    fn varint(&mut self) -> Option<usize> {
        let mut byte = *self.take(1)?.first()?;
        let mut value = usize::from(byte & 0x7f);
        while byte & 0x80 != 0 {
            byte = *self.take(1)?.first()?;
            value = value
                .checked_add(1)?
                .checked_mul(128)?
                .checked_add(usize::from(byte & 0x7f))?;
        }
        Some(value)
    }
}

fn parse(data: &[u8]) -> Option<IndexFile> {
    let mut bytes = Bytes { data, at: 0 };
    if bytes.take(4)? != b"DIRC" {
        return None;
    }
    let version = bytes.u32()?;
    if !(2..=4).contains(&version) {
        return None;
    }
    let count = usize::try_from(bytes.u32()?).ok()?;
    // Each entry takes at least FIXED_LEN bytes: a damaged count cannot make a huge list.
    if count > data.len() / FIXED_LEN {
        return None;
    }
    let mut paths: Vec<u8> = Vec::with_capacity(data.len() / 3);
    let mut raw = Vec::with_capacity(count);
    let mut previous = (0usize, 0usize);
    for _ in 0..count {
        let start = bytes.at;
        let mut field = || bytes.u32();
        let ctime = (i64::from(field()?), field()?);
        let mtime = (i64::from(field()?), field()?);
        let (_dev, ino, mode, _uid, _gid, size) =
            (field()?, field()?, field()?, field()?, field()?, field()?);
        let id = Oid::from_bytes(bytes.take(ID_LEN)?).ok()?;
        let flags = bytes.u16()?;
        let flags_extended = if flags & EXTENDED != 0 {
            if version < 3 {
                return None;
            }
            bytes.u16()?
        } else {
            0
        };
        let at = paths.len();
        if version == 4 {
            let strip = bytes.varint()?;
            let kept = (previous.1 - previous.0).checked_sub(strip)?;
            paths.extend_from_within(previous.0..previous.0 + kept);
            paths.extend_from_slice(bytes.until_nul()?);
        } else {
            let name = bytes.until_nul()?;
            let len = usize::from(flags & NAME_MASK);
            if len != NAME_MASK as usize && len != name.len() {
                return None;
            }
            paths.extend_from_slice(name);
            // Padded with NULs to a multiple of 8 bytes (the NUL read counts among them).
            let padded = (bytes.at - start).div_ceil(8) * 8;
            bytes.take(padded - (bytes.at - start))?;
        }
        previous = (at, paths.len());
        raw.push(Raw {
            path: previous,
            ctime,
            mtime,
            ino,
            mode,
            size,
            id,
            flags,
            flags_extended,
        });
    }
    let tree = extensions(&mut bytes)?;
    Some(IndexFile {
        paths,
        raw,
        written: (0, 0),
        tree,
    })
}

/// Reads the extensions up to the trailing checksum: the root's tree from `TREE`; `None`
/// when one is required (its name starts with a lowercase letter: a split or sparse index)
/// or damaged.
fn extensions(bytes: &mut Bytes<'_>) -> Option<Option<Oid>> {
    let mut tree = None;
    while bytes.data.len().checked_sub(bytes.at)? > ID_LEN {
        let name = bytes.take(4)?;
        let len = usize::try_from(bytes.u32()?).ok()?;
        let body = bytes.take(len)?;
        match name {
            b"TREE" => tree = root_tree(body),
            _ if name[0].is_ascii_uppercase() => {}
            _ => return None,
        }
    }
    (bytes.data.len() - bytes.at == ID_LEN).then_some(tree)
}

/// The `TREE` extension's first entry, the root: `""` NUL, its entry count (`-1`: not
/// valid), a space, its subtree count, a newline, then its id when valid.
fn root_tree(body: &[u8]) -> Option<Oid> {
    let mut bytes = Bytes { data: body, at: 0 };
    if !bytes.until_nul()?.is_empty() {
        return None;
    }
    let count_end = memchr::memchr(b' ', &body[bytes.at..])?;
    let count = std::str::from_utf8(bytes.take(count_end)?).ok()?;
    if count.parse::<i64>().ok()? < 0 {
        return None;
    }
    let line_end = memchr::memchr(b'\n', &body[bytes.at..])?;
    bytes.take(line_end + 1)?;
    Oid::from_bytes(bytes.take(ID_LEN)?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::testing::{git, init_repo, write_file};

    /// The entries and the root's tree as libgit2 reads them, for each version git writes.
    #[test]
    fn reads_what_libgit2_reads_in_every_version() {
        let dir = init_repo();
        let root = dir.path();
        for (path, content) in [
            ("a.txt", "a\n"),
            ("src/deep/b.rs", "b\n"),
            ("src/deep/c.rs", "c\n"),
            ("src/e.rs", "e\n"),
            ("zz-a-rather-long-name/of/nested/folders.txt", "z\n"),
        ] {
            write_file(root, path, content);
        }
        git(root, &["add", "-A"]);
        git(root, &["commit", "-q", "-m", "one"]);
        git(root, &["update-index", "--skip-worktree", "src/e.rs"]);
        for version in ["2", "3", "4"] {
            git(root, &["update-index", "--index-version", version]);
            git(root, &["write-tree"]);
            let repo = git2::Repository::open(root).expect("open");
            let theirs: Vec<IndexEntry> = repo.index().expect("index").iter().collect();
            let file = IndexFile::read(&repo.path().join("index")).expect("read");
            let ours = file.entries();
            assert_eq!(ours.len(), theirs.len(), "version {version}");
            for (ours, theirs) in ours.iter().zip(&theirs) {
                let theirs = Entry::from(theirs);
                assert_eq!(
                    format!("{ours:?}"),
                    format!("{theirs:?}"),
                    "version {version}"
                );
            }
            let head_tree = repo.head().and_then(|h| h.peel_to_tree()).expect("tree");
            assert_eq!(file.tree, Some(head_tree.id()), "version {version}");
        }
    }

    /// A staged change invalidates the cached root tree: no tree, the entries still read.
    #[test]
    fn an_invalidated_tree_cache_gives_no_tree() {
        let dir = init_repo();
        let root = dir.path();
        write_file(root, "a.txt", "a\n");
        git(root, &["add", "-A"]);
        git(root, &["commit", "-q", "-m", "one"]);
        write_file(root, "a.txt", "changed\n");
        git(root, &["add", "a.txt"]);
        let file = IndexFile::read(&root.join(".git/index")).expect("read");
        assert_eq!((file.tree, file.entries().len()), (None, 1));
    }

    /// A damaged or cut file is not read (the caller takes libgit2's reading).
    #[test]
    fn a_damaged_file_is_not_read() {
        let dir = init_repo();
        let root = dir.path();
        write_file(root, "a.txt", "a\n");
        git(root, &["add", "-A"]);
        let data = std::fs::read(root.join(".git/index")).expect("index");
        assert!(parse(&data).is_some());
        for cut in [0, 11, 40, data.len() - 21] {
            assert!(parse(&data[..cut]).is_none(), "cut at {cut}");
        }
        let mut count = data.clone();
        count[11] = 200;
        assert!(parse(&count).is_none(), "a count past the entries");
    }
}
