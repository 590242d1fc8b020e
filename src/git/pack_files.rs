//! A pack and its index written directly, for objects whose names are already known (a
//! dirty tree recorded through [`super::pack_write`]): libgit2's indexer would inflate and
//! hash every object again to learn what the writer already knows.
//!
//! The files are git's pack format version 2 (a header, each object's type, size and
//! zlib-compressed bytes, the SHA-1 of it all) and pack index version 2 (a fan-out table by
//! first byte, the sorted names, each entry's CRC-32 and offset, 64-bit offsets past 2 GiB,
//! the pack's checksum, its own). Each is written aside, synced, and renamed into
//! `objects/pack`, the pack before its index: readers find packs by their index, so none
//! ever sees a pack without its objects.

use std::io::Write as _;
use std::path::Path;

use git2::{ObjectType, Oid, Repository};
use sha1::Digest as _;

/// How the files a pack is written into before their rename are named (git's `prune`
/// removes `tmp_*` files of the pack folder after two weeks; git-loaf's own tidying, at once).
pub(crate) const TEMPORARY_PREFIX: &str = "tmp_loaf_";

/// One pack entry: the header (type in bits 4–6 of the first byte, the size in its low four
/// bits and then seven bits a byte, low first, the top bit saying more follow) and the
/// compressed data.
pub(crate) fn entry(kind: ObjectType, data: &[u8]) -> std::io::Result<Vec<u8>> {
    let code: u8 = match kind {
        ObjectType::Commit => 1,
        ObjectType::Tree => 2,
        ObjectType::Blob => 3,
        ObjectType::Tag => 4,
        _ => return Err(std::io::Error::other("not a storable object type")),
    };
    let mut out = Vec::with_capacity(data.len() / 2 + 16);
    let mut size = data.len() as u64;
    let mut byte = (code << 4) | (size & 0x0f) as u8;
    size >>= 4;
    while size > 0 {
        out.push(byte | 0x80);
        byte = (size & 0x7f) as u8;
        size >>= 7;
    }
    out.push(byte);
    let mut encoder = flate2::write::ZlibEncoder::new(out, flate2::Compression::fast());
    encoder.write_all(data)?;
    encoder.finish()
}

/// Offsets from here on go to the index's table of 64-bit offsets.
const LARGE_OFFSET: u64 = 0x8000_0000;

/// Writes `entries` (each object's name and pack entry, see [`entry`]),
/// distinct names, as one pack with its index; returns its name (`pack-<checksum>`), which
/// `before_files` is given first, before either file is in place.
pub(crate) fn write(
    disk: &Repository,
    entries: &[(Oid, Vec<u8>)],
    before_files: impl FnOnce(&str),
) -> Result<String, git2::Error> {
    let size = 12 + entries.iter().map(|(_, e)| e.len()).sum::<usize>() + 20;
    let mut pack = Vec::with_capacity(size);
    pack.extend_from_slice(&header(entries.len())?);
    let mut listed: Vec<(Oid, u32, u64)> = Vec::with_capacity(entries.len());
    for (id, entry) in entries {
        listed.push((*id, crc32fast::hash(entry), pack.len() as u64));
        pack.extend_from_slice(entry);
    }
    let checksum: [u8; 20] = sha1::Sha1::digest(&pack).into();
    pack.extend_from_slice(&checksum);
    listed.sort_by_key(|(id, _, _)| *id);
    if listed.windows(2).any(|w| w[0].0 == w[1].0) {
        return Err(git2::Error::from_str(
            "an object is listed twice for one pack",
        ));
    }
    let index = index(&listed, &checksum);
    let name = format!("pack-{}", Oid::from_bytes(&checksum)?);
    let dir = pack_dir(disk);
    std::fs::create_dir_all(&dir).map_err(|e| io_error(&dir, e))?;
    before_files(&name);
    put(&dir, &format!("{name}.pack"), &pack)?;
    put(&dir, &format!("{name}.idx"), &index)?;
    Ok(name)
}

/// The folder of a repository's packs.
pub(crate) fn pack_dir(repo: &Repository) -> std::path::PathBuf {
    repo.commondir().join("objects").join("pack")
}

/// A version 2 pack's header: its signature, version and number of objects.
pub(crate) fn header(count: usize) -> Result<[u8; 12], git2::Error> {
    let count =
        u32::try_from(count).map_err(|_| git2::Error::from_str("too many objects for one pack"))?;
    let mut out = [0; 12];
    out[..4].copy_from_slice(b"PACK");
    out[4..8].copy_from_slice(&2u32.to_be_bytes());
    out[8..].copy_from_slice(&count.to_be_bytes());
    Ok(out)
}

/// The version 2 index of a pack whose entries are `listed` (name, CRC-32, offset; sorted by
/// name) and whose checksum is `checksum`.
fn index(listed: &[(Oid, u32, u64)], checksum: &[u8; 20]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + 256 * 4 + listed.len() * 28 + 40);
    out.extend_from_slice(&[0xff, b't', b'O', b'c']);
    out.extend_from_slice(&2u32.to_be_bytes());
    let mut counts = [0u32; 256];
    for (id, _, _) in listed {
        counts[usize::from(id.as_bytes()[0])] += 1;
    }
    let mut below = 0u32;
    for count in counts {
        below += count;
        out.extend_from_slice(&below.to_be_bytes());
    }
    for (id, _, _) in listed {
        out.extend_from_slice(id.as_bytes());
    }
    for (_, crc, _) in listed {
        out.extend_from_slice(&crc.to_be_bytes());
    }
    let mut large: Vec<u64> = Vec::new();
    for (_, _, offset) in listed {
        let small = if *offset < LARGE_OFFSET {
            *offset as u32
        } else {
            large.push(*offset);
            0x8000_0000 | (large.len() as u32 - 1)
        };
        out.extend_from_slice(&small.to_be_bytes());
    }
    for offset in large {
        out.extend_from_slice(&offset.to_be_bytes());
    }
    out.extend_from_slice(checksum);
    let own: [u8; 20] = sha1::Sha1::digest(&out).into();
    out.extend_from_slice(&own);
    out
}

/// Writes `bytes` as `dir/name`: aside first, synced, read-only, then renamed into place.
fn put(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), git2::Error> {
    let target = dir.join(name);
    let mut aside = tempfile::Builder::new()
        .prefix(TEMPORARY_PREFIX)
        .tempfile_in(dir)
        .map_err(|e| io_error(dir, e))?;
    aside
        .write_all(bytes)
        .and_then(|()| aside.as_file().sync_all())
        .map_err(|e| io_error(&target, e))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let _ = aside
            .as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o444));
    }
    aside
        .persist(&target)
        .map_err(|e| io_error(&target, e.error))?;
    Ok(())
}

fn io_error(path: &Path, error: std::io::Error) -> git2::Error {
    git2::Error::from_str(&format!("{}: {error}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::testing::{committed_repo, git};

    /// The index written here is byte for byte the one `git index-pack` makes of the same
    /// pack (which also checks every object's name against its content).
    #[test]
    fn the_index_is_the_one_git_index_pack_makes() {
        let dir = committed_repo();
        let repo = Repository::open(dir.path()).expect("repo");
        let entries: Vec<(Oid, Vec<u8>)> = (0..300)
            .map(|n| {
                let data = format!("object {n}\n").repeat(n % 5 + 1);
                let id = Oid::hash_object(git2::ObjectType::Blob, data.as_bytes()).expect("id");
                (
                    id,
                    entry(git2::ObjectType::Blob, data.as_bytes()).expect("entry"),
                )
            })
            .collect();
        let name = write(&repo, &entries, |_| {}).expect("written");
        let pack_dir = dir.path().join(".git/objects/pack");
        let ours = std::fs::read(pack_dir.join(format!("{name}.idx"))).expect("our index");
        let theirs = dir.path().join("theirs.idx");
        let pack = pack_dir.join(format!("{name}.pack"));
        git(
            dir.path(),
            &[
                "index-pack",
                "-o",
                theirs.to_str().expect("utf-8"),
                pack.to_str().expect("utf-8"),
            ],
        );
        assert!(
            ours == std::fs::read(&theirs).expect("git's index"),
            "indexes differ"
        );
        let (id, _) = &entries[42];
        assert_eq!(
            git(dir.path(), &["cat-file", "-p", &id.to_string()]),
            "object 42\nobject 42\nobject 42\n"
        );
        // Nothing is left aside in the pack folder.
        let leftovers: Vec<_> = std::fs::read_dir(&pack_dir)
            .expect("pack dir")
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("tmp_"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }

    /// Past 2 GiB an entry's offset goes to the table of 64-bit offsets, its 32-bit slot
    /// holding the top bit and its place there (pack index version 2, as git reads it):
    /// from exactly 2^31 on, which a 32-bit slot cannot tell from a table reference.
    #[test]
    fn offsets_from_2_gib_on_go_to_the_large_offset_table() {
        let id = |n: u8| Oid::from_bytes(&[n; 20]).expect("id");
        let listed = [
            (id(1), 0xaaaa_aaaa, 0x7fff_ffff),
            (id(2), 0xbbbb_bbbb, 0x8000_0000),
            (id(3), 0xcccc_cccc, 0x1_2345_6789),
        ];
        let out = index(&listed, &[7; 20]);
        let (names, crcs) = (8 + 256 * 4, 8 + 256 * 4 + 3 * 20);
        let (offsets, large) = (crcs + 3 * 4, crcs + 3 * 4 + 3 * 4);
        let word = |at: usize| u32::from_be_bytes(out[at..at + 4].try_into().expect("4 bytes"));
        assert_eq!(&out[names + 20..names + 40], &[2; 20]);
        assert_eq!(word(crcs + 4), 0xbbbb_bbbb);
        assert_eq!(
            [word(offsets), word(offsets + 4), word(offsets + 8)],
            [0x7fff_ffff, 0x8000_0000, 0x8000_0001]
        );
        let long = |at: usize| u64::from_be_bytes(out[at..at + 8].try_into().expect("8 bytes"));
        assert_eq!([long(large), long(large + 8)], [0x8000_0000, 0x1_2345_6789]);
        assert_eq!(
            &out[large + 16..large + 36],
            &[7; 20],
            "the pack's checksum"
        );
        assert_eq!(out.len(), large + 16 + 40);
    }

    #[test]
    fn a_name_listed_twice_is_refused_before_anything_is_written() {
        let dir = committed_repo();
        let repo = Repository::open(dir.path()).expect("repo");
        let id = Oid::hash_object(git2::ObjectType::Blob, b"x").expect("id");
        let one = entry(git2::ObjectType::Blob, b"x").expect("entry");
        let err = write(&repo, &[(id, one.clone()), (id, one)], |_| {}).expect_err("refused");
        assert!(err.message().contains("twice"), "{err}");
        assert!(
            !dir.path()
                .join(".git/objects/pack")
                .read_dir()
                .is_ok_and(|mut d| d
                    .any(|e| e.is_ok_and(|e| e.file_name().to_string_lossy().ends_with(".pack"))))
        );
    }
}
