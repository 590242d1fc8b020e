//! The files and index entries of a transition, written after its commit point: each file
//! checked right before it is replaced ([`Checker`]), so that one holding neither its before
//! nor its after content (the user's edit) is left alone, and written under another name then
//! renamed into place, so that it is always either its old or its new self.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use git2::build::CheckoutBuilder;
use git2::{Index, ObjectType, Oid, Repository, Tree};

use super::last_look::{Checker, beyond_symlink};
use super::stage_swap::StageSwap;
use super::transition::{Paths, STAGING_PREFIX, Transition, crash_point, io_error, oid};
use crate::git::blob_stream;
use crate::git::files::{remove_empty_parents_keeping, set_executable};
use crate::git::filters;
use crate::git::treediff::blob_at;

/// Writes the working tree paths that differ, then sets the index entries that differ (in
/// `index`, written by the caller). Each file is checked right before it is replaced: one
/// already holding its after content is left as it is (a roll-forward after a crash), one
/// holding neither its before nor its after content was changed by the user meanwhile and is
/// left alone and returned — nothing of the user's is ever overwritten. With `swap`, a file
/// the stage already holds is moved from there rather than written.
pub(crate) fn write_files(
    repo: &Repository,
    t: &Transition,
    paths: &Paths,
    index: &mut Index,
    checker: &Checker<'_>,
    mut swap: Option<&mut StageSwap>,
) -> Result<Vec<PathBuf>, git2::Error> {
    let mut files = Files {
        repo,
        t,
        checker,
        from_work: repo.find_tree(oid(&t.from_work)?)?,
        to_work: repo.find_tree(oid(&t.to_work)?)?,
        keep: t.op.extras.folders_after(),
        skipped: Vec::new(),
        threshold: blob_stream::threshold(repo),
    };
    let (gone, written) = files.first_look(&paths.work);
    let converted = files.converted(&written)?;
    let movable = match swap.as_deref_mut() {
        Some(stage) => files.movable(stage, &gone, &written, &converted)?,
        None => Vec::new(),
    };
    // Between the first look at each file and the last one right before it is replaced: a
    // test saves a file here to see the last look keep it.
    crash_point("replacing");
    files.delete(&gone, &movable, swap.as_deref_mut())?;
    files.write(&written, &converted, &movable, swap)?;
    crash_point("checkout");
    // Skipped files still get their after index entry: the user's edit then shows as an
    // unstaged change on top of the new HEAD, as if made after the operation.
    let to_index = repo.find_tree(oid(&t.to_index)?)?;
    let skipped: std::collections::HashSet<&PathBuf> = files.skipped.iter().collect();
    for path in &paths.index {
        let holds_it = !skipped.contains(path);
        set_index_entry(index, &t.workdir, path, &to_index, &files.to_work, holds_it)?;
    }
    Ok(files.skipped)
}

/// One [`write_files`]: the trees it goes between and the files it left alone so far.
struct Files<'a, 'r> {
    repo: &'r Repository,
    t: &'a Transition,
    checker: &'a Checker<'r>,
    from_work: Tree<'r>,
    to_work: Tree<'r>,
    /// Folders the operation leaves in place (the user's empty folders a reply wrote into):
    /// a deletion never removes them, even when it leaves them empty.
    keep: BTreeSet<PathBuf>,
    skipped: Vec<PathBuf>,
    /// From this size on a blob is streamed into its file.
    threshold: u64,
}

impl<'a> Files<'a, '_> {
    /// What a path may hold now for it to be replaced: its before content, or (done already)
    /// its after content.
    fn verdict(&self, path: &Path) -> Verdict {
        let before = blob_at(&self.from_work, path).map(|b| b.0);
        let after = blob_at(&self.to_work, path).map(|b| b.0);
        let now = self.checker.id(path, &self.from_work);
        if now == after {
            Verdict::Done
        } else if now == before {
            Verdict::Replace
        } else {
            Verdict::UserChanged
        }
    }

    /// The first look at every changed path: those to delete and those to write (a path the
    /// user changed is skipped; one already done has at most its mode or folders to finish).
    fn first_look(&mut self, work: &'a [PathBuf]) -> (Vec<&'a PathBuf>, Vec<&'a PathBuf>) {
        let mut write: Vec<&PathBuf> = Vec::new();
        for path in work {
            match self.verdict(path) {
                Verdict::Replace => write.push(path),
                Verdict::UserChanged => self.skipped.push(path.clone()),
                // A deletion a crash interrupted may have left its folders behind.
                Verdict::Done if blob_at(&self.to_work, path).is_none() => {
                    remove_empty_parents_keeping(&self.t.workdir, path, &self.keep);
                }
                // The content is there; the mode may be what changed (or a crash came between).
                Verdict::Done => {
                    if let Some((_, mode @ (0o100644 | 0o100755))) = blob_at(&self.to_work, path) {
                        set_executable(&self.t.workdir.join(path), mode == 0o100755);
                    }
                }
            }
        }
        // Deletions by hand (checkout would judge "untracked" against HEAD, which has already
        // moved); everything else by a checkout of just those paths, so filters (CRLF, eol)
        // apply as git would apply them.
        write
            .into_iter()
            .partition(|path| blob_at(&self.to_work, path).is_none())
    }

    /// The files to write that a conversion applies to (or a submodule), sorted as `written`
    /// is: they come from a libgit2 checkout; a file no conversion applies to is its blob,
    /// written straight from it (or moved from the stage).
    fn converted(&self, written: &[&'a PathBuf]) -> Result<Vec<&'a PathBuf>, git2::Error> {
        let mut converted = Vec::new();
        for path in written {
            match blob_at(&self.to_work, path) {
                Some((_, mode))
                    if mode != 0o160000
                        && !self.checker.conversions.apply_to(self.repo, path)? => {}
                _ => converted.push(*path),
            }
        }
        Ok(converted)
    }

    /// What may move between the stage and the user's tree, sorted: plain files where the
    /// stage's HEAD has what the publish writes (nothing, for a deletion). Recorded before any
    /// moves; nothing moves when the record cannot be written.
    fn movable(
        &self,
        stage: &mut StageSwap,
        gone: &[&'a PathBuf],
        written: &[&'a PathBuf],
        converted: &[&'a PathBuf],
    ) -> Result<Vec<&'a PathBuf>, git2::Error> {
        let stage_tree = self.repo.find_tree(stage.tree())?;
        let mut movable = Vec::new();
        for path in gone.iter().chain(written) {
            if blob_at(&stage_tree, path) == blob_at(&self.to_work, path)
                && converted.binary_search(path).is_err()
                && !self.checker.conversions.apply_to(self.repo, path)?
            {
                movable.push(*path);
            }
        }
        movable.sort();
        if !movable.is_empty()
            && let Err(e) = stage.record(&movable)
        {
            tracing::debug!("stage files not moved: {e}");
            movable.clear();
        }
        Ok(movable)
    }

    /// Deletes the files the transition deletes, each after a last look (moved into the stage
    /// where it holds the same).
    fn delete(
        &mut self,
        gone: &[&PathBuf],
        movable: &[&PathBuf],
        mut swap: Option<&mut StageSwap>,
    ) -> Result<(), git2::Error> {
        let workdir = &self.t.workdir;
        for path in gone {
            if self.verdict(path) != Verdict::Replace || beyond_symlink(workdir, path) {
                self.skipped.push((*path).clone());
            } else if movable.binary_search(path).is_ok()
                && swap
                    .as_deref_mut()
                    .is_some_and(|stage| stage.take_deleted(path, &workdir.join(path)))
            {
                remove_empty_parents_keeping(workdir, path, &self.keep);
            } else {
                remove_file(workdir, path, &self.keep)?;
            }
        }
        Ok(())
    }

    /// Writes the files the transition writes. Each file is written under another name, then
    /// renamed into place: a file is always either its old or its new self, even if the
    /// process dies in the middle. The files conversions apply to come from a checkout
    /// ([`Files::checkout_converted`]); the others from their blob, or moved from the stage.
    fn write(
        &mut self,
        written: &[&PathBuf],
        converted: &[&PathBuf],
        movable: &[&PathBuf],
        mut swap: Option<&mut StageSwap>,
    ) -> Result<(), git2::Error> {
        if written.is_empty() {
            return Ok(());
        }
        let staging = self.checkout_converted(converted)?;
        let checkout_dir = staging
            .as_ref()
            .map(|dir| dir.path().to_path_buf())
            .unwrap_or_default();
        for path in written {
            let to = self.t.workdir.join(path);
            // The last look before replacing: an edit saved since the first one wins; and
            // nothing is written through a link still standing where a folder goes.
            if self.verdict(path) != Verdict::Replace || beyond_symlink(&self.t.workdir, path) {
                self.skipped.push((*path).clone());
                continue;
            }
            make_room(&to)?;
            let from = if converted.binary_search(path).is_ok() {
                checkout_dir.join(path)
            } else if let Some((id, mode)) = blob_at(&self.to_work, path)
                && movable.binary_search(path).is_ok()
                && swap
                    .as_deref_mut()
                    .is_some_and(|swap| swap.take(path, &to, id, mode))
            {
                continue;
            } else {
                // Written beside its target (a new file in a busy folder of the git dir
                // costs the filesystem far more), under a name the journal determines, so
                // that recovery removes it if the process dies before the rename.
                let from = temp_beside(self.t, path);
                if let Some((id, mode)) = blob_at(&self.to_work, path)
                    && write_blob(self.repo, id, mode, &from, self.threshold)?
                        == blob_stream::Written::Streamed
                {
                    tracing::debug!("{}: streamed from its object", path.display());
                }
                from
            };
            crate::git::files::keep_permissions(&to, &from);
            std::fs::rename(&from, &to).map_err(|e| io_error("cannot write", &to, e))?;
        }
        drop(staging);
        Ok(())
    }

    /// A libgit2 checkout of just the `converted` paths into a folder next to the journal
    /// (filters applied, modes set), then their driver's smudge; `None` when there are none.
    fn checkout_converted(
        &self,
        converted: &[&PathBuf],
    ) -> Result<Option<tempfile::TempDir>, git2::Error> {
        if converted.is_empty() {
            return Ok(None);
        }
        let loaf_dir = self.repo.commondir().join("loaf");
        let dir = tempfile::Builder::new()
            .prefix(STAGING_PREFIX)
            .tempdir_in(&loaf_dir)
            .map_err(|e| io_error("cannot create a folder in", &loaf_dir, e))?;
        let mut checkout = CheckoutBuilder::new();
        checkout
            .force()
            .update_index(false)
            .disable_pathspec_match(true)
            .target_dir(dir.path());
        for path in converted {
            checkout.path(path.as_path());
        }
        self.repo
            .checkout_tree(self.to_work.as_object(), Some(&mut checkout))?;
        filters::smudge_in_place(self.repo, dir.path(), converted)?;
        Ok(Some(dir))
    }
}

/// Makes room for a file at `to`: a folder in the way goes first, and its parent folders are
/// made.
fn make_room(to: &Path) -> Result<(), git2::Error> {
    if to.is_dir() && !to.is_symlink() {
        std::fs::remove_dir_all(to).map_err(|e| io_error("cannot remove", to, e))?;
    }
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent).map_err(|e| io_error("cannot create", parent, e))?;
    }
    Ok(())
}

/// Where the new content of `path` is written before it is renamed over the user's file:
/// beside it, named after the operation (unique, recorded in the journal).
pub(crate) fn temp_beside(t: &Transition, path: &Path) -> PathBuf {
    let full = t.workdir.join(path);
    let name = full
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // Within the usual 255-byte limit on names.
    let name = if name.len() > 200 {
        Oid::hash_object(ObjectType::Blob, name.as_bytes())
            .map(|o| o.to_string())
            .unwrap_or_default()
    } else {
        name
    };
    full.with_file_name(format!(".{name}.loaf-{}", t.op.id))
}

/// Writes blob `id` as a new file (or symlink, by `mode`) at `file`, as a checkout without
/// conversions would: an executable gets the executable bits the umask allows. A big blob is
/// streamed into the file ([`blob_stream`]); a file left half-written by an error is removed
/// (the user's file, which it was to replace, is untouched).
pub(crate) fn write_blob(
    repo: &Repository,
    id: Oid,
    mode: i32,
    file: &Path,
    threshold: u64,
) -> Result<blob_stream::Written, git2::Error> {
    let failed = |e| io_error("cannot write", file, e);
    if mode == 0o120000 {
        let blob = repo.find_blob(id)?;
        use std::os::unix::ffi::OsStrExt as _;
        let target = std::ffi::OsStr::from_bytes(blob.content());
        std::os::unix::fs::symlink(target, file).map_err(failed)?;
        return Ok(blob_stream::Written::Whole);
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(if mode == 0o100755 { 0o777 } else { 0o666 });
    }
    let mut out = options.open(file).map_err(failed)?;
    let odb = repo.odb()?;
    blob_stream::write_blob(repo, &odb, id, threshold, &mut out, file).map_err(|e| {
        drop(out);
        let _ = std::fs::remove_file(file);
        e.into()
    })
}

/// What may be done with one file of the working tree, judged right before it is replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    /// It holds its before content: replace it.
    Replace,
    /// It already holds its after content.
    Done,
    /// It holds something else: the user's; leave it.
    UserChanged,
}

/// Removes a file the transition deletes, then its folders left empty (as git does).
fn remove_file(workdir: &Path, path: &Path, keep: &BTreeSet<PathBuf>) -> Result<(), git2::Error> {
    let full = workdir.join(path);
    match std::fs::remove_file(&full) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(git2::Error::from_str(&format!(
                "cannot remove {}: {e}",
                full.display()
            )));
        }
    }
    remove_empty_parents_keeping(workdir, path, keep);
    Ok(())
}

/// Makes the index entry of `path` what `to_index` says. When the file on disk is that
/// content (`file_holds_it`: written by us or left as it was), the entry gets the file's stat
/// data (so git sees it clean without re-reading); otherwise (a partially staged file, or a
/// file the user changed meanwhile) zeroed stat data, so git re-hashes and sees the
/// difference.
fn set_index_entry(
    index: &mut Index,
    workdir: &Path,
    path: &Path,
    to_index: &Tree<'_>,
    to_work: &Tree<'_>,
    file_holds_it: bool,
) -> Result<(), git2::Error> {
    let Some((id, mode)) = blob_at(to_index, path) else {
        if index.get_path(path, 0).is_some()
            || (1..=3).any(|stage| index.get_path(path, stage).is_some())
        {
            index.remove_path(path)?;
        }
        return Ok(());
    };
    // Same blob and mode: the file is exactly the entry (a chmod-only difference must stay
    // visible to git, so it gets no trusted stat data).
    let same_as_file = file_holds_it && blob_at(to_work, path) == Some((id, mode));
    let meta = same_as_file
        .then(|| std::fs::symlink_metadata(workdir.join(path)).ok())
        .flatten();
    index.add(&crate::git::index::entry(
        path,
        id,
        mode as u32,
        meta.as_ref(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::testing::committed_repo as repo;

    /// The checker takes what the index says of a file whose stat data it records (as git
    /// does: shown here by an entry that lies about the content), and looks at the file
    /// again as soon as its stat data change.
    #[test]
    fn the_checker_trusts_the_index_as_git_does_until_the_file_changes() {
        let dir = repo();
        let root = dir.path();
        let repo = Repository::open(root).expect("open");
        let head = repo.head().and_then(|h| h.peel_to_tree()).expect("tree");
        std::fs::write(root.join("a.txt"), "mine\n").expect("write");
        let other = repo.blob(b"other\n").expect("blob");
        std::thread::sleep(std::time::Duration::from_millis(20));
        let index = index_claiming(&repo, root, "a.txt", other);
        let checker = Checker::new(&repo, root).expect("checker");
        checker.trust_index(&index, &[PathBuf::from("a.txt")]);
        assert_eq!(checker.id(Path::new("a.txt"), &head), Some(other));
        std::fs::write(root.join("a.txt"), "mine, changed\n").expect("write");
        let now = Oid::hash_object(ObjectType::Blob, b"mine, changed\n").expect("hash");
        assert_eq!(checker.id(Path::new("a.txt"), &head), Some(now));
    }

    /// The index written with an entry for `path` that names `blob` and the file's current
    /// stat data (an entry that vouches for content the file may not hold).
    fn index_claiming(repo: &Repository, root: &Path, path: &str, blob: Oid) -> git2::Index {
        let mut index = repo.index().expect("index");
        let meta = std::fs::symlink_metadata(root.join(path)).expect("stat");
        let entry = crate::git::index::entry(Path::new(path), blob, 0o100644, Some(&meta));
        index.add(&entry).expect("add");
        index.write().expect("write");
        index
    }

    /// Git's racily clean rule: an entry whose mtime is the index file's own (the file may
    /// have been rewritten, at the same size, in the tick the index was written) is not
    /// trusted; the file is read. Here the entry lies: publish must see what the file holds.
    #[test]
    fn the_checker_reads_a_file_as_new_as_the_index() {
        let dir = repo();
        let root = dir.path();
        let repo = Repository::open(root).expect("open");
        let head = repo.head().and_then(|h| h.peel_to_tree()).expect("tree");
        let tick = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_600_000_000);
        let set_mtime = |path: &Path| {
            std::fs::File::options()
                .write(true)
                .open(path)
                .and_then(|f| f.set_modified(tick))
                .expect("set mtime");
        };
        std::fs::write(root.join("a.txt"), "mine\n").expect("write");
        set_mtime(&root.join("a.txt"));
        let other = repo.blob(b"other\n").expect("blob");
        let index = index_claiming(&repo, root, "a.txt", other);
        set_mtime(&repo.path().join("index"));
        let checker = Checker::new(&repo, root).expect("checker");
        checker.trust_index(&index, &[PathBuf::from("a.txt")]);
        let mine = Oid::hash_object(ObjectType::Blob, b"mine\n").expect("hash");
        assert_eq!(checker.id(Path::new("a.txt"), &head), Some(mine));
    }
}
