//! A blob's bytes written to a file without holding the blob whole in memory, as git's
//! checkout streams a big file: undo putting back a 50 MB file inflates it piece by piece
//! into the file, instead of into a 50 MB buffer first (whose page faults and zeroing cost a
//! fifth of that undo, and its size the peak memory). See docs/speed.md.
//!
//! A loose object is inflated from its file here; libgit2 cannot stream a packed one, so a
//! blob stored whole in a pack (not as a delta) is found through the pack's index and
//! inflated from the pack file, as git does for big files. A delta, an object of an
//! alternate or of a pack this does not read comes whole from libgit2, as does every blob
//! under the threshold ([`threshold`]). Nothing is re-hashed: git does not verify what it
//! checks out either (`git fsck` does).
//!
//! Only bytes the blob holds are written: conversions (CRLF, filters) are the caller's, which
//! streams only files no conversion applies to.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};

use git2::{ObjectType, Odb, Oid, Repository};

/// Blobs from this size on are streamed unless `core.bigFileThreshold` is lower: git
/// streams from 512 MiB (its threshold also turns off delta compression, which git-loaf does
/// not touch), but for writing a file out, streaming pays from a few megabytes: below that,
/// one read of the whole object costs less than our own lookup in a pack index.
pub(crate) const DEFAULT_THRESHOLD: u64 = 4 << 20;

/// How much is inflated before it is written out.
const CHUNK: usize = 256 << 10;

/// How much of an object's file is read at a time (under the size from which the allocator
/// maps memory for each buffer: many small blobs are read one after the other).
const READ_BUFFER: usize = 64 << 10;

/// Why a blob could not be written.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BlobStreamError {
    #[error(transparent)]
    Git(#[from] git2::Error),
    #[error("{id} is a {kind}, not a blob")]
    NotBlob { id: Oid, kind: String },
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("object {id} is damaged ({reason}): run `git fsck`, and restore it from another clone")]
    Damaged { id: Oid, reason: String },
}

impl From<BlobStreamError> for git2::Error {
    fn from(e: BlobStreamError) -> git2::Error {
        match e {
            BlobStreamError::Git(e) => e,
            other => git2::Error::from_str(&other.to_string()),
        }
    }
}

/// How a blob reached its file (what tests and the debug log look at).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Written {
    /// Read whole, then written.
    Whole,
    /// Inflated piece by piece into the file (a loose object, or one stored whole in a pack).
    Streamed,
}

/// The size from which blobs are streamed in `repo`: `core.bigFileThreshold` when it is
/// lower than [`DEFAULT_THRESHOLD`], else that.
pub(crate) fn threshold(repo: &Repository) -> u64 {
    repo.config()
        .and_then(|c| c.get_i64("core.bigFileThreshold"))
        .ok()
        .and_then(|v| u64::try_from(v).ok())
        .map_or(DEFAULT_THRESHOLD, |v| v.min(DEFAULT_THRESHOLD))
}

/// Writes the bytes of blob `id` of `repo` (whose object database `odb` is) into `out`, an
/// empty file at `path` (named in errors), streamed from `threshold` bytes on. On an error
/// `out` may hold part of the blob: the caller removes it.
pub(crate) fn write_blob(
    repo: &Repository,
    odb: &Odb,
    id: Oid,
    threshold: u64,
    out: &mut File,
    path: &Path,
) -> Result<Written, BlobStreamError> {
    let failed = |source| BlobStreamError::Write {
        path: path.to_path_buf(),
        source,
    };
    let objects = repo.commondir().join("objects");
    // A loose object says its size as it is opened: one open whatever its size.
    if let Some((mut inflate, size)) = loose(&objects, id)? {
        if size >= threshold {
            copy_exactly(&mut inflate, size, out, id, path)?;
            return Ok(Written::Streamed);
        }
        let mut data = Vec::with_capacity(size as usize);
        inflate
            .read_to_end(&mut data)
            .map_err(|e| damaged(id, &e.to_string()))?;
        if data.len() as u64 != size {
            return Err(damaged(
                id,
                &format!("{} bytes where it says {size}", data.len()),
            ));
        }
        out.write_all(&data).map_err(failed)?;
        return Ok(Written::Whole);
    }
    let (size, kind) = odb.read_header(id)?;
    if kind != ObjectType::Blob {
        return Err(BlobStreamError::NotBlob {
            id,
            kind: kind.str().to_owned(),
        });
    }
    let size = size as u64;
    if size >= threshold
        && let Some((pack, offset)) = whole_in_pack(&objects, id, size)
        // Only a pack that could not be opened (a `git gc` just replaced it) falls back;
        // once bytes are written, an error is the answer.
        && let Ok(file) = File::open(&pack)
    {
        let mut reader = BufReader::with_capacity(READ_BUFFER, file);
        reader
            .seek(SeekFrom::Start(offset))
            .map_err(|e| damaged(id, &e.to_string()))?;
        copy_exactly(
            flate2::bufread::ZlibDecoder::new(reader),
            size,
            out,
            id,
            path,
        )?;
        return Ok(Written::Streamed);
    }
    let object = odb.read(id)?;
    out.write_all(object.data()).map_err(failed)?;
    Ok(Written::Whole)
}

/// Copies all of `from` into `out`: exactly `size` bytes, or the object is damaged.
fn copy_exactly(
    mut from: impl Read,
    size: u64,
    out: &mut File,
    id: Oid,
    path: &Path,
) -> Result<(), BlobStreamError> {
    let mut buffer = vec![0u8; CHUNK];
    let mut total = 0u64;
    loop {
        let n = match from.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(damaged(id, &e.to_string())),
        };
        total += n as u64;
        if total > size {
            break;
        }
        out.write_all(&buffer[..n])
            .map_err(|source| BlobStreamError::Write {
                path: path.to_path_buf(),
                source,
            })?;
    }
    if total != size {
        return Err(damaged(
            id,
            &format!("{total} bytes inflated where it says {size}"),
        ));
    }
    Ok(())
}

fn damaged(id: Oid, reason: &str) -> BlobStreamError {
    BlobStreamError::Damaged {
        id,
        reason: reason.to_owned(),
    }
}

/// The loose object `id` of `objects`, if it is a loose blob: inflating from just past its
/// header, and its size. `None` when it is not loose, or does not start as a blob's (another
/// kind, or a format of git's past: libgit2 reads it, or says what is wrong). libgit2's own
/// stream, `Odb::reader`, loops forever on a loose object cut short, so it is read here.
fn loose(objects: &Path, id: Oid) -> Result<Option<(Inflate, u64)>, BlobStreamError> {
    let file = match File::open(super::repo::loose_object_path(objects, id)) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(damaged(id, &e.to_string())),
    };
    let mut inflate =
        flate2::bufread::ZlibDecoder::new(BufReader::with_capacity(READ_BUFFER, file));
    // `blob <size>` and a NUL, a byte at a time, so that the rest is left to stream.
    let mut header = Vec::with_capacity(32);
    let mut byte = [0u8; 1];
    while header.len() < 32 {
        if inflate.read_exact(&mut byte).is_err() {
            return Ok(None);
        }
        if byte[0] == 0 {
            break;
        }
        header.push(byte[0]);
    }
    let size = header
        .strip_prefix(b"blob ")
        .and_then(|digits| std::str::from_utf8(digits).ok())
        .and_then(|digits| digits.parse::<u64>().ok());
    Ok(size.map(|size| (inflate, size)))
}

/// A loose object's file, inflating.
type Inflate = flate2::bufread::ZlibDecoder<BufReader<File>>;

/// The pack holding `id` stored whole (a blob of `size` bytes, not a delta) and where its
/// compressed bytes start; `None` when no pack index (version 2, SHA-1) of `objects/pack`
/// lists it so, or anything is unreadable (the caller reads it whole through libgit2).
fn whole_in_pack(objects: &Path, id: Oid, size: u64) -> Option<(PathBuf, u64)> {
    let name: &[u8; 20] = id.as_bytes().try_into().ok()?;
    for entry in std::fs::read_dir(objects.join("pack")).ok()?.flatten() {
        let index = entry.path();
        if index.extension().is_none_or(|e| e != "idx") {
            continue;
        }
        let Some(offset) = offset_in_index(&index, name) else {
            continue;
        };
        let pack = index.with_extension("pack");
        return entry_data(&pack, offset, size).map(|start| (pack, start));
    }
    None
}

/// Where pack index `index` (version 2) says object `name` starts in its pack.
fn offset_in_index(index: &Path, name: &[u8; 20]) -> Option<u64> {
    const HEADER: u64 = 8 + 256 * 4;
    let file = File::open(index).ok()?;
    let mut head = [0u8; HEADER as usize];
    file.read_exact_at(&mut head, 0).ok()?;
    if head[..8] != [0xff, b't', b'O', b'c', 0, 0, 0, 2] {
        return None;
    }
    let fan_out = |i: usize| {
        let at = 8 + 4 * i;
        u64::from(u32::from_be_bytes([
            head[at],
            head[at + 1],
            head[at + 2],
            head[at + 3],
        ]))
    };
    let count = fan_out(255);
    let first = usize::from(name[0]);
    let (mut low, mut high) = (
        if first == 0 { 0 } else { fan_out(first - 1) },
        fan_out(first),
    );
    let mut found = None;
    while low < high {
        let middle = low + (high - low) / 2;
        let mut seen = [0u8; 20];
        file.read_exact_at(&mut seen, HEADER + middle * 20).ok()?;
        match seen.cmp(name) {
            std::cmp::Ordering::Equal => {
                found = Some(middle);
                break;
            }
            std::cmp::Ordering::Less => low = middle + 1,
            std::cmp::Ordering::Greater => high = middle,
        }
    }
    let position = found?;
    // After the names: a CRC-32 each, then a 4-byte offset each, whose top bit sends larger
    // offsets to an 8-byte table after them.
    let offsets = HEADER + count * 24;
    let mut small = [0u8; 4];
    file.read_exact_at(&mut small, offsets + position * 4)
        .ok()?;
    let small = u32::from_be_bytes(small);
    if small & 0x8000_0000 == 0 {
        return Some(u64::from(small));
    }
    let mut large = [0u8; 8];
    let slot = u64::from(small & 0x7fff_ffff);
    file.read_exact_at(&mut large, offsets + count * 4 + slot * 8)
        .ok()?;
    Some(u64::from_be_bytes(large))
}

/// Where the compressed bytes of the pack entry at `offset` start, when that entry is a blob
/// of `size` bytes stored whole (type 3; a delta is 6 or 7).
fn entry_data(pack: &Path, offset: u64, size: u64) -> Option<u64> {
    const BLOB: u8 = 3;
    let file = File::open(pack).ok()?;
    let mut header = [0u8; 16];
    let read = file.read_at(&mut header, offset).ok()?;
    let first = *header.first().filter(|_| read > 0)?;
    if (first >> 4) & 7 != BLOB {
        return None;
    }
    // The size: 4 bits in the first byte, then 7 per byte while the top bit is set.
    let mut length = u64::from(first & 0x0f);
    let mut shift = 4;
    let mut used = 1;
    let mut byte = first;
    while byte & 0x80 != 0 {
        byte = *header.get(used).filter(|_| used < read && shift < 64)?;
        length |= u64::from(byte & 0x7f) << shift;
        shift += 7;
        used += 1;
    }
    (length == size).then_some(offset + used as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::testing::{git, init_repo, write_file};

    /// Text of `lines` numbered lines (a few MB compress well but never repeat exactly).
    fn text(lines: usize, tag: &str) -> String {
        (0..lines).map(|i| format!("{tag} line {i}\n")).collect()
    }

    /// `content` written by [`write_blob`] from blob `id`, and how.
    fn written(repo: &Repository, id: Oid, threshold: u64) -> (Vec<u8>, Written) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("out");
        let mut out = File::create(&path).expect("create");
        let odb = repo.odb().expect("odb");
        let how = write_blob(repo, &odb, id, threshold, &mut out, &path).expect("written");
        drop(out);
        (std::fs::read(&path).expect("read"), how)
    }

    fn blob_id(root: &Path, rev: &str) -> Oid {
        Oid::from_str(git(root, &["rev-parse", rev]).trim()).expect("id")
    }

    /// Loose, packed whole, and packed as a delta: the bytes are the blob's every time;
    /// streamed but for the delta (and a blob under the threshold).
    #[test]
    fn big_blobs_stream_from_loose_objects_and_packs_byte_for_byte() {
        let dir = init_repo();
        let root = dir.path();
        let one = text(60_000, "first");
        write_file(root, "big.txt", &one);
        git(root, &["add", "big.txt"]);
        git(root, &["commit", "-q", "-m", "one"]);
        let two = format!("{one}one more line\n");
        write_file(root, "big.txt", &two);
        git(root, &["commit", "-q", "-a", "-m", "two"]);
        let repo = Repository::open(root).expect("open");
        let (first, second) = (
            blob_id(root, "HEAD~:big.txt"),
            blob_id(root, "HEAD:big.txt"),
        );
        let threshold = 64 << 10;
        assert_eq!(
            written(&repo, first, threshold),
            (one.clone().into_bytes(), Written::Streamed),
            "loose"
        );
        assert_eq!(
            written(&repo, second, u64::MAX),
            (two.clone().into_bytes(), Written::Whole),
            "under the threshold"
        );
        // Packed: one of the two is stored whole, the other as a delta of it.
        git(root, &["repack", "-a", "-d", "-q"]);
        git(root, &["prune-packed"]);
        let repo = Repository::open(root).expect("open");
        let (a, how_a) = written(&repo, first, threshold);
        let (b, how_b) = written(&repo, second, threshold);
        assert_eq!((a, b), (one.into_bytes(), two.into_bytes()));
        let mut hows = [how_a, how_b];
        hows.sort_by_key(|h| *h == Written::Streamed);
        assert_eq!(hows, [Written::Whole, Written::Streamed], "the delta whole");
    }

    /// A loose object cut short fails as damaged, after part of it was written (the caller
    /// removes that file).
    #[test]
    fn a_damaged_object_fails_mid_stream() {
        let dir = init_repo();
        let root = dir.path();
        write_file(root, "big.txt", &text(60_000, "cut"));
        git(root, &["add", "big.txt"]);
        let id = blob_id(root, ":big.txt");
        let loose = crate::git::repo::loose_object_path(&root.join(".git/objects"), id);
        let bytes = std::fs::read(&loose).expect("loose object");
        let mut perms = std::fs::metadata(&loose).expect("stat").permissions();
        #[allow(clippy::permissions_set_readonly_false)]
        perms.set_readonly(false);
        std::fs::set_permissions(&loose, perms).expect("chmod");
        std::fs::write(&loose, &bytes[..bytes.len() / 2]).expect("cut");
        let repo = Repository::open(root).expect("open");
        let odb = repo.odb().expect("odb");
        let out_dir = tempfile::tempdir().expect("tempdir");
        let path = out_dir.path().join("out");
        let mut out = File::create(&path).expect("create");
        let error = write_blob(&repo, &odb, id, 1024, &mut out, &path).expect_err("damaged");
        assert!(matches!(error, BlobStreamError::Damaged { .. }), "{error}");
        assert!(error.to_string().contains("git fsck"), "{error}");
    }

    /// `core.bigFileThreshold` lowers the threshold, never raises it.
    #[test]
    fn the_threshold_follows_a_lower_big_file_threshold() {
        let dir = init_repo();
        let root = dir.path();
        let repo = Repository::open(root).expect("open");
        assert_eq!(threshold(&repo), DEFAULT_THRESHOLD);
        git(root, &["config", "core.bigFileThreshold", "512k"]);
        assert_eq!(threshold(&repo), 512 << 10);
        git(root, &["config", "core.bigFileThreshold", "1g"]);
        assert_eq!(threshold(&repo), DEFAULT_THRESHOLD);
    }
}
