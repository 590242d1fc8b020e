//! `git loaf gc` merging the packs git-loaf wrote (a dirty tree's objects, one pack per
//! recording: see [`super::pack_write`]) into one, so that they do not pile up between git's
//! own repacks: every object lookup that misses looks in every pack.
//!
//! The merged pack is written and synced before any old one goes, and an old one goes only
//! when the new pack's index lists every object it held; its index is removed first, so that
//! no reader sees a pack without one.

use std::collections::HashSet;
use std::path::Path;

use git2::{Oid, Repository};

use super::pack_write::{self, entry};

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
    let pack_dir = repo.commondir().join("objects").join("pack");
    let names = pack_write::recorded(repo);
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
    let new = pack_write::write_pack(repo, ids.len(), entries)?;
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
    pack_write::set_recorded(repo, &[new])
        .map_err(|e| git2::Error::from_str(&format!("recording the merged pack: {e}")))?;
    Ok(merged)
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
