//! The packs git-loaf wrote (a dirty tree's objects, one pack per recording: see
//! [`super::pack_write`]), recorded in `<git dir>/loaf/packs` and merged into one by `git loaf
//! gc` or when there are [`MERGE_FROM`], so that they do not pile up between git's own
//! repacks: every object lookup that misses looks in every pack.
//!
//! The merged pack is written and synced before any old one goes, and an old one goes only
//! when the new pack's index lists every object it held; its index is removed first, so that
//! no reader sees a pack without one.

use std::collections::HashSet;
use std::io::Write as _;
use std::path::Path;

use git2::{Oid, Repository};
use sha1::Digest as _;

use super::pack_files::{self, entry};

/// What [`merge`] did, or would do.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Merged {
    /// The packs merged (and removed).
    pub packs: usize,
    /// The objects they held, each once.
    pub objects: usize,
}

/// Merges the packs git-loaf wrote into one when there are two or more; with `dry_run`, only
/// counts them.
pub fn merge(repo: &Repository, dry_run: bool) -> Result<Merged, git2::Error> {
    if !dry_run {
        drop_leftovers(repo);
    }
    merge_these(repo, recorded(repo), dry_run)
}

/// [`merge`] of the recorded packs `names` only; the others stay recorded as they are.
fn merge_these(
    repo: &Repository,
    names: Vec<String>,
    dry_run: bool,
) -> Result<Merged, git2::Error> {
    let pack_dir = pack_files::pack_dir(repo);
    if names.len() < 2 {
        return Ok(Merged::default());
    }
    let mut ids: Vec<Oid> = Vec::new();
    let mut seen = HashSet::new();
    for name in &names {
        let idx = read(&pack_dir.join(format!("{name}.idx")))?;
        let listed = index_names(&idx)
            .ok_or_else(|| git2::Error::from_str(&format!("{name}.idx is not a pack index")))?;
        ids.extend(listed.into_iter().filter(|id| seen.insert(*id)));
    }
    let merged = Merged {
        packs: names.len(),
        objects: ids.len(),
    };
    if dry_run {
        return Ok(merged);
    }
    let odb = repo.odb()?;
    let entries = ids.iter().map(|id| {
        let object = odb.read(*id)?;
        entry(object.kind(), object.data())
            .map_err(|e| git2::Error::from_str(&format!("compressing {id}: {e}")))
    });
    let new = write_through_indexer(repo, ids.len(), entries)?;
    record(repo, &new);
    let (pack, idx) = (
        pack_dir.join(format!("{new}.pack")),
        pack_dir.join(format!("{new}.idx")),
    );
    for file in [&pack, &idx] {
        super::durable::sync_file(file)
            .map_err(|e| git2::Error::from_str(&format!("{}: {e}", file.display())))?;
    }
    let written = read(&idx)?;
    if let Some(missing) = ids.iter().find(|id| !index_holds(&written, id.as_bytes())) {
        return Err(git2::Error::from_str(&format!(
            "the merged pack {new} lacks {missing}: nothing was removed"
        )));
    }
    for name in names.iter().filter(|n| **n != new) {
        // The index first: a pack without one is ignored; an index without its pack is not.
        for ext in ["idx", "pack", "rev"] {
            let _ = std::fs::remove_file(pack_dir.join(format!("{name}.{ext}")));
        }
    }
    let mut kept: Vec<String> = recorded(repo)
        .into_iter()
        .filter(|n| !names.contains(n) && *n != new)
        .collect();
    kept.push(new);
    set_recorded(repo, &kept)
        .map_err(|e| git2::Error::from_str(&format!("recording the merged pack: {e}")))?;
    Ok(merged)
}

/// Writes a pack of `count` entries (see [`entry`]; version 2, no deltas) through libgit2's
/// indexer, which checks every object's name and the pack's checksum (what `git index-pack`
/// does for a fetch) and writes its index; returns its name (`pack-<checksum>`). Streamed:
/// the packs merged are never all in memory.
fn write_through_indexer(
    disk: &Repository,
    count: usize,
    entries: impl IntoIterator<Item = Result<Vec<u8>, git2::Error>>,
) -> Result<String, git2::Error> {
    let odb = disk.odb()?;
    let mut writer = odb.packwriter()?;
    let mut checksum = sha1::Sha1::new();
    let mut put = |bytes: &[u8]| -> Result<(), git2::Error> {
        checksum.update(bytes);
        writer
            .write_all(bytes)
            .map_err(|e| git2::Error::from_str(&format!("writing a pack: {e}")))
    };
    put(&pack_files::header(count)?)?;
    let mut written = 0;
    for entry in entries {
        put(&entry?)?;
        written += 1;
    }
    if written != count {
        return Err(git2::Error::from_str(&format!(
            "a pack of {count} objects was given {written}"
        )));
    }
    let checksum: [u8; 20] = checksum.finalize().into();
    writer
        .write_all(&checksum)
        .map_err(|e| git2::Error::from_str(&format!("writing a pack: {e}")))?;
    writer.commit()?;
    Ok(format!("pack-{}", Oid::from_bytes(&checksum)?))
}

/// From this many packs of its own on, git-loaf merges them into one after writing the next
/// (as `git loaf gc` does), so that they stay well below the 50 at which git's own `gc
/// --auto` repacks the whole repository, and every lookup that misses reads few indexes.
pub(crate) const MERGE_FROM: usize = 16;

/// Packs from this size on are left out of the merges [`merge_when_many`] makes: each
/// operation writes a small pack (its new objects, see `durable_pack`), and merging them
/// must not read a large one (a recorded dirty tree of gigabytes, or the pack earlier merges
/// grew to) again every few operations. `git loaf gc` merges them all; git's own gc
/// repacks them with the rest.
const SMALL_PACK: u64 = 1 << 20;

/// Merges git-loaf's small packs (under [`SMALL_PACK`]) when there are [`MERGE_FROM`] or
/// more. Best effort: a merge that fails leaves every pack as it was.
pub(crate) fn merge_when_many(disk: &Repository) {
    drop_leftovers(disk);
    let pack_dir = pack_files::pack_dir(disk);
    let small: Vec<String> = recorded(disk)
        .into_iter()
        .filter(|name| {
            std::fs::metadata(pack_dir.join(format!("{name}.pack")))
                .is_ok_and(|m| m.len() < SMALL_PACK)
        })
        .collect();
    if small.len() >= MERGE_FROM
        && let Err(e) = merge_these(disk, small, false)
    {
        tracing::debug!("packs not merged: {e}");
    }
}

/// The file listing the packs git-loaf wrote (one name a line), which `git loaf gc` merges.
fn record_path(repo: &Repository) -> std::path::PathBuf {
    repo.commondir().join("loaf").join("packs")
}

/// Adds `name` to the packs git-loaf wrote. Best effort: a pack left out is only not merged
/// by `git loaf gc` (git's own gc repacks it with the rest).
pub(crate) fn record(repo: &Repository, name: &str) {
    let path = record_path(repo);
    let appended = std::fs::create_dir_all(path.parent().unwrap_or(&path)).and_then(|()| {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut f| f.write_all(format!("{name}\n").as_bytes()))
    });
    if let Err(e) = appended {
        tracing::debug!("cannot record pack {name}: {e}");
    }
}

/// The packs git-loaf wrote that are still there (their index present), oldest first.
pub(crate) fn recorded(repo: &Repository) -> Vec<String> {
    let pack_dir = pack_files::pack_dir(repo);
    let text = std::fs::read_to_string(record_path(repo)).unwrap_or_default();
    let mut names: Vec<String> = Vec::new();
    for name in text.lines() {
        let valid = name.len() == 45
            && name.starts_with("pack-")
            && name[5..].bytes().all(|b| b.is_ascii_hexdigit());
        if valid
            && !names.iter().any(|n| n == name)
            && pack_dir.join(format!("{name}.idx")).is_file()
        {
            names.push(name.to_owned());
        }
    }
    names
}

/// Removes what a killed write of git-loaf's left in the pack folder, which no reader uses:
/// a recorded pack without its index (killed between the renames of the two, or between a
/// merge's removal of an old pack's index and of the pack), and the files `tmp_loaf_*` its
/// writes start with. The caller holds git-loaf's lock, under which alone git-loaf writes
/// packs, so none of these is being written. A pack git-loaf did not record is left alone
/// (git's own fetch or repack renames a pack before its index too). Best effort.
pub(crate) fn drop_leftovers(repo: &Repository) {
    let pack_dir = pack_files::pack_dir(repo);
    let Ok(entries) = std::fs::read_dir(&pack_dir) else {
        return;
    };
    let text = std::fs::read_to_string(record_path(repo)).unwrap_or_default();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let orphan = name.strip_suffix(".pack").is_some_and(|base| {
            text.lines().any(|line| line == base) && !pack_dir.join(format!("{base}.idx")).exists()
        });
        if orphan || name.starts_with(pack_files::TEMPORARY_PREFIX) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
    let kept = recorded(repo);
    if kept.len() != text.lines().count() {
        let _ = set_recorded(repo, &kept);
    }
}

/// Replaces the record with `names` (written aside, then renamed over it).
fn set_recorded(repo: &Repository, names: &[String]) -> std::io::Result<()> {
    let path = record_path(repo);
    let aside = path.with_extension("new");
    let text: String = names.iter().map(|n| format!("{n}\n")).collect();
    std::fs::write(&aside, text)?;
    std::fs::rename(&aside, &path)
}

fn read(path: &Path) -> Result<Vec<u8>, git2::Error> {
    std::fs::read(path).map_err(|e| git2::Error::from_str(&format!("{}: {e}", path.display())))
}

/// A version 2 pack index's header and fan-out table: 8 bytes, then 256 counts.
const HEADER: usize = 8;
const FANOUT: usize = 256 * 4;

/// How many objects the fan-out says objects up to first byte `i` are.
fn count_at(idx: &[u8], i: usize) -> usize {
    let at = HEADER + i * 4;
    u32::from_be_bytes([idx[at], idx[at + 1], idx[at + 2], idx[at + 3]]) as usize
}

/// The object names a version 2 pack index lists (a 256-entry fan-out table, then the
/// sorted names); `None` when it is not one.
fn index_names(idx: &[u8]) -> Option<Vec<Oid>> {
    if idx.len() < HEADER + FANOUT || idx[..8] != [0xff, b't', b'O', b'c', 0, 0, 0, 2] {
        return None;
    }
    let total = count_at(idx, 255);
    let names = idx.get(HEADER + FANOUT..HEADER + FANOUT + total * 20)?;
    names.chunks(20).map(|n| Oid::from_bytes(n).ok()).collect()
}

/// Whether a version 2 pack index lists `name`.
pub(crate) fn index_holds(idx: &[u8], name: &[u8]) -> bool {
    if idx.len() < HEADER + FANOUT || idx[..4] != [0xff, b't', b'O', b'c'] {
        return false;
    }
    let total = count_at(idx, 255);
    let (names, width) = (HEADER + FANOUT, name.len());
    if name.is_empty() || idx.len() < names + total * width {
        return false;
    }
    let first = name[0] as usize;
    let start = if first == 0 {
        0
    } else {
        count_at(idx, first - 1)
    };
    let end = count_at(idx, first);
    (start..end.min(total)).any(|i| &idx[names + i * width..names + (i + 1) * width] == name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::testing::committed_repo;

    /// What a killed write left is tidied: a recorded pack whose index never came (and the
    /// record of it), git-loaf's temporary files; a pack git-loaf did not record, and a
    /// recorded pack with its index, stay.
    /// The merges made as packs pile up take the small packs only: a large one (a recorded
    /// dirty tree) stays as it is, recorded, and is not read again.
    #[test]
    fn many_small_packs_are_merged_without_the_large_one() {
        let dir = committed_repo();
        let repo = Repository::open(dir.path()).expect("repo");
        let pack = |data: &[u8]| {
            let id = Oid::hash_object(git2::ObjectType::Blob, data).expect("id");
            let entry = entry(git2::ObjectType::Blob, data).expect("entry");
            pack_files::write(&repo, &[(id, entry)], |name| record(&repo, name)).expect("pack")
        };
        // Incompressible: the pack stays past SMALL_PACK.
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let noise: Vec<u8> = (0..(SMALL_PACK as usize + 4096))
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect();
        let large = pack(&noise);
        for n in 0..MERGE_FROM {
            pack(format!("small {n}\n").as_bytes());
        }
        merge_when_many(&repo);
        let left = recorded(&repo);
        assert_eq!(left.len(), 2, "the large pack and the merged one: {left:?}");
        assert_eq!(left[0], large);
        let pack_dir = pack_files::pack_dir(&repo);
        assert!(pack_dir.join(format!("{large}.pack")).is_file());
        // Fewer small packs than MERGE_FROM now: nothing more to merge.
        merge_when_many(&repo);
        assert_eq!(recorded(&repo), left);
    }

    #[test]
    fn a_killed_write_leaves_nothing_behind_after_the_next() {
        let dir = committed_repo();
        let repo = Repository::open(dir.path()).expect("repo");
        let pack = |text: &str| {
            let data = text.as_bytes();
            let id = Oid::hash_object(git2::ObjectType::Blob, data).expect("id");
            let entry = entry(git2::ObjectType::Blob, data).expect("entry");
            pack_files::write(&repo, &[(id, entry)], |name| record(&repo, name)).expect("pack")
        };
        let whole = pack("a pack with its index\n");
        let killed = pack("a pack whose index never came\n");
        let pack_dir = pack_files::pack_dir(&repo);
        std::fs::remove_file(pack_dir.join(format!("{killed}.idx"))).expect("index gone");
        let temporary = pack_dir.join(format!("{}x1y2z3", pack_files::TEMPORARY_PREFIX));
        std::fs::write(&temporary, "half a pack").expect("temporary");
        let theirs = pack_dir.join(format!("pack-{}.pack", "ab".repeat(20)));
        std::fs::write(&theirs, "git's fetch, its index to come").expect("theirs");
        drop_leftovers(&repo);
        assert!(!pack_dir.join(format!("{killed}.pack")).exists());
        assert!(!temporary.exists());
        assert!(theirs.exists(), "not git-loaf's: left alone");
        for ext in ["pack", "idx"] {
            assert!(pack_dir.join(format!("{whole}.{ext}")).exists());
        }
        let record = std::fs::read_to_string(record_path(&repo)).expect("record");
        assert_eq!(record, format!("{whole}\n"));
    }
}
