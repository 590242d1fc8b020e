//! The stage's records beside it in `<git dir>/loaf`, which outlive the process that wrote
//! them: where the stage's last run may have left ignored content (and whether a run is in
//! flight), which the stage reads at its next reset; and the paths a publish moved out of the
//! stage ([`super::stage_swap`]), which the next reset checks out anew. Both the stage and the
//! publish that swaps files with it write them, so they live below both.

use std::path::{Path, PathBuf};

use git2::Repository;

/// The record of where the stage's last run left ignored content, next to the stage: the
/// stage reads and writes it; a publish that moves a `.gitignore` into the stage forgets it
/// ([`forget_written`], from [`super::stage_swap`]).
pub(crate) const WRITTEN: &str = "stage-written";

/// The first line of the record of where the last run may have left ignored content
/// ([`WRITTEN`], next to the stage) when only the listed paths (NUL-separated after it) may hold some.
pub(crate) const WRITTEN_PATHS: &[u8] = b"paths\n";

/// The line the same record starts with while an apply runs in the stage: written with the
/// record at the run's reset (before HEAD or any file there moves) and taken off when the run
/// ends. A run that did not end (killed, a refused commit, failed hooks) leaves it, and the
/// next apply then scans the whole stage and ends the processes a killed sandbox left. One
/// record rewritten instead of a marker file made and deleted by every apply.
pub(crate) const IN_FLIGHT: &[u8] = b"in flight\n";

/// The record of the stage paths whose file may have come from the user's tree.
const MOVED: &str = "stage-moved";

/// The paths recorded as moved by a publish since the stage's last reset.
pub(crate) fn moved(common_dir: &Path) -> Vec<PathBuf> {
    let Ok(bytes) = std::fs::read(moved_record(common_dir)) else {
        return Vec::new();
    };
    bytes
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| crate::git::repo::path_from_bytes(p).into_owned())
        .collect()
}

/// Forgets the moved paths (the stage's reset checked them out anew).
pub(crate) fn forget_moved(common_dir: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(moved_record(common_dir)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

pub(crate) fn moved_record(common_dir: &Path) -> PathBuf {
    common_dir.join("loaf").join(MOVED)
}

/// The record [`WRITTEN`] of the repository whose common git dir is `common_dir` (the stage
/// shares it).
pub(crate) fn written_record_in(common_dir: &Path) -> PathBuf {
    common_dir.join("loaf").join(WRITTEN)
}

/// Forgets where the last run may have left ignored content, so that the next reset scans the
/// whole stage for it. Whether a run is in flight, which the record's first line says, stays.
pub(crate) fn forget_written(repo: &Repository) -> std::io::Result<()> {
    let record = written_record_in(repo.commondir());
    let bytes = std::fs::read(&record).unwrap_or_default();
    let in_flight = bytes.split_inclusive(|b| *b == b'\n').next();
    let kept = in_flight.filter(|line| *line == IN_FLIGHT);
    std::fs::write(&record, kept.unwrap_or_default())
}
