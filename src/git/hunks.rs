//! The hunks of a commit, as `git add -p` shows them: each changed file of a diff between
//! two trees with its hunks (3 lines of context), line by line, as bytes. What `git loaf
//! review` walks (see docs/review.md); the rules of the review are in `ops::review`.

use std::path::{Path, PathBuf};

use git2::{DiffOptions, Oid, Patch, Repository};

/// One path's entry in a tree: blob and mode, `None` for absent.
pub type Entry = Option<(Oid, i32)>;

/// How many lines of context a hunk has (as `git diff` and `git add -p`).
pub const CONTEXT_LINES: u32 = 3;

/// One changed file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilePatch {
    /// The path, relative to the repository's root.
    pub path: PathBuf,
    /// Its entry before.
    pub old: Entry,
    /// Its entry after.
    pub new: Entry,
    /// Whether either side is not text (no line hunks then).
    pub binary: bool,
    /// The hunks, in file order (empty for a binary file or a change of mode only).
    pub hunks: Vec<RawHunk>,
}

/// One hunk: where it sits on each side and its lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawHunk {
    /// First line on the old side (1-based; 0 when the old side is empty).
    pub old_start: u32,
    /// Lines on the old side.
    pub old_lines: u32,
    /// First line on the new side (1-based; 0 when the new side is empty).
    pub new_start: u32,
    /// Lines on the new side.
    pub new_lines: u32,
    /// Each line: `' '` context, `'-'` removed, `'+'` added, and its bytes (with the line
    /// break, except on a last line that has none).
    pub lines: Vec<(char, Vec<u8>)>,
}

/// The changed files from `old` (`None`: the empty tree) to `new`, in path order, without
/// rename detection (a moved file is a deletion and an addition).
pub fn patches(
    repo: &Repository,
    old: Option<Oid>,
    new: Oid,
) -> Result<Vec<FilePatch>, git2::Error> {
    let old_tree = old.map(|o| repo.find_tree(o)).transpose()?;
    let new_tree = repo.find_tree(new)?;
    let mut options = DiffOptions::new();
    options.context_lines(CONTEXT_LINES);
    let diff = repo.diff_tree_to_tree(old_tree.as_ref(), Some(&new_tree), Some(&mut options))?;
    let mut files = Vec::new();
    for index in 0..diff.deltas().len() {
        let Some(delta) = diff.get_delta(index) else {
            continue;
        };
        let side = |file: git2::DiffFile<'_>| -> Entry {
            file.exists().then(|| (file.id(), i32::from(file.mode())))
        };
        let (old_entry, new_entry) = (side(delta.old_file()), side(delta.new_file()));
        let Some(path) = delta.new_file().path().or(delta.old_file().path()) else {
            continue;
        };
        let path = path.to_path_buf();
        // Submodules (commits in the tree) have no lines to review.
        if [old_entry, new_entry]
            .iter()
            .flatten()
            .any(|(_, mode)| *mode == 0o160000)
        {
            continue;
        }
        let patch = Patch::from_diff(&diff, index)?;
        let binary = delta.flags().is_binary() || patch.is_none();
        let hunks = match (&patch, binary) {
            (Some(patch), false) => hunks_of(patch)?,
            _ => Vec::new(),
        };
        files.push(FilePatch {
            path,
            old: old_entry,
            new: new_entry,
            binary,
            hunks,
        });
    }
    Ok(files)
}

fn hunks_of(patch: &Patch<'_>) -> Result<Vec<RawHunk>, git2::Error> {
    let mut hunks = Vec::new();
    for h in 0..patch.num_hunks() {
        let (hunk, count) = patch.hunk(h)?;
        let mut lines = Vec::with_capacity(count);
        for l in 0..count {
            let line = patch.line_in_hunk(h, l)?;
            // `=`, `>`, `<` mark "no newline at end of file": the line itself already
            // lacks its break.
            if matches!(line.origin(), ' ' | '+' | '-') {
                lines.push((line.origin(), line.content().to_vec()));
            }
        }
        hunks.push(RawHunk {
            old_start: hunk.old_start(),
            old_lines: hunk.old_lines(),
            new_start: hunk.new_start(),
            new_lines: hunk.new_lines(),
            lines,
        });
    }
    Ok(hunks)
}

/// The entry at `path` in `tree`.
pub fn entry_at(repo: &Repository, tree: Oid, path: &Path) -> Result<Entry, git2::Error> {
    let tree = repo.find_tree(tree)?;
    Ok(crate::git::treediff::blob_at(&tree, path))
}

/// A blob's bytes.
pub fn blob_bytes(repo: &Repository, blob: Oid) -> Result<Vec<u8>, git2::Error> {
    Ok(repo.find_blob(blob)?.content().to_vec())
}
