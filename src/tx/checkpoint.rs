//! Checkpoints: the user's uncommitted work recorded as git objects, without changing the
//! user's files, index or HEAD, so that actions apply to exactly what the model saw and undo
//! can put that work back exactly.
//!
//! A checkpoint is two trees, never a commit on the user's branch (docs/apply.md): the working
//! tree as `git add -A` would record it (tracked changes and untracked, non-ignored files,
//! external clean filters applied; skip-worktree entries as the index has them, since a
//! sparse checkout's missing files are not deletions) and the index, partially staged files
//! included. The operation log keeps both alive; nothing of them reaches the branch unless
//! an apply changes that very path.

use std::path::{Path, PathBuf};

use git2::{Oid, Repository, StatusOptions};

use crate::git::pack_write::Buffered;

use crate::git::commit::write_commit;
use crate::git::index::known_index_tree;
use crate::git::refs::head_commit;

/// The recorded state of the user's working tree and index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checkpoint {
    /// HEAD when it was taken (`None` on an unborn branch).
    pub head: Option<Oid>,
    /// HEAD's tree (the empty tree on an unborn branch).
    pub head_tree: Oid,
    /// The working tree, as `git add -A` would record it.
    pub work_tree: Oid,
    /// The tree of the index (what was staged).
    pub index_tree: Oid,
}

impl Checkpoint {
    /// Whether the working tree and index are exactly HEAD.
    pub fn is_clean(&self) -> bool {
        self.work_tree == self.head_tree && self.index_tree == self.head_tree
    }

    /// A commit holding the working tree on top of HEAD, referenced by nobody but the caller
    /// (the stage's start, or what a forced undo saves under `refs/loaf/saved/`): HEAD itself
    /// when the working tree is HEAD's.
    pub fn as_commit(&self, repo: &Repository, subject: &str) -> Result<Oid, git2::Error> {
        match self.head {
            Some(head) if self.work_tree == self.head_tree => Ok(head),
            _ => write_commit(
                repo,
                self.work_tree,
                &self.head.into_iter().collect::<Vec<_>>(),
                subject,
            ),
        }
    }
}

/// Whether the working tree or index differs from HEAD (untracked, non-ignored files count).
/// Staged changes are found by comparing the index, as a tree, with HEAD's tree: libgit2
/// reuses the index's cached subtrees, so this is far cheaper than diffing HEAD against every
/// index entry. Then the working tree is scanned once against the index, and the refreshed
/// stat data written back so that the next scan (ours or git's) is fast. The reference
/// that `git::quickscan`'s tests check the quick scan against.
#[cfg(test)]
pub(crate) fn is_dirty(repo: &Repository) -> Result<bool, git2::Error> {
    let head_tree = match head_commit(repo)? {
        Some(head) => Some(repo.find_commit(head)?.tree_id()),
        None => None,
    };
    Ok(match scan(repo, head_tree)? {
        Scan::Clean => false,
        Scan::Staged => true,
        Scan::Files(files) => !files.is_empty(),
    })
}

/// What a look at the index and working tree found.
#[cfg(test)]
enum Scan {
    /// Both are HEAD's.
    Clean,
    /// The index differs from HEAD (the files were not looked at).
    Staged,
    /// The index is HEAD's; these paths of the working tree differ from it (untracked ones
    /// included; a nested repository's folder ends with `/`).
    Files(Vec<Vec<u8>>),
}

#[cfg(test)]
fn scan(repo: &Repository, head_tree: Option<Oid>) -> Result<Scan, git2::Error> {
    let mut index = repo.index()?;
    let staged = match (head_tree, index_tree(repo, &mut index)) {
        (Some(head), Ok(tree)) => head != tree,
        (None, Ok(_)) => !index.is_empty(),
        // Unmerged entries: certainly not clean.
        (_, Err(_)) => true,
    };
    if staged {
        tracing::debug!("checkpoint: the index differs from HEAD");
        return Ok(Scan::Staged);
    }
    if crate::git::quickscan::certainly_clean(repo)? {
        return Ok(Scan::Clean);
    }
    Ok(Scan::Files(workdir_changes(repo)?))
}

/// The index's tree: the one the last write of the index recorded, when the file is still
/// that one, else built (and written) from the entries, ~5 ms on 20,000 files.
fn index_tree(repo: &Repository, index: &mut git2::Index) -> Result<Oid, git2::Error> {
    match known_index_tree(repo) {
        Some(tree) => Ok(tree),
        None => index.write_tree_to(repo),
    }
}

/// The paths of the working tree that may differ from the index (untracked, non-ignored
/// files included; a nested repository's folder ends with `/`): the parallel scan's list
/// taken as it is (a file touched but unchanged among them: laying it on the index's tree
/// changes nothing), or, when that scan cannot tell, libgit2's single-threaded status.
fn workdir_candidates(repo: &Repository) -> Result<Vec<Vec<u8>>, git2::Error> {
    match crate::git::quickscan::candidates(repo)? {
        Some(paths) => {
            tracing::debug!("checkpoint: {} paths may differ", paths.len());
            Ok(paths)
        }
        None => {
            tracing::debug!("checkpoint: the parallel scan cannot tell");
            workdir_changes(repo)
        }
    }
}

/// The paths of the working tree that differ from the index, untracked (non-ignored) files
/// included, from one status scan that also refreshes the index's stat data on disk.
fn workdir_changes(repo: &Repository) -> Result<Vec<Vec<u8>>, git2::Error> {
    let mut options = StatusOptions::new();
    options
        .show(git2::StatusShow::Workdir)
        .include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_ignored(false)
        .exclude_submodules(true)
        .update_index(true);
    let statuses = repo.statuses(Some(&mut options))?;
    Ok(statuses.iter().map(|s| s.path_bytes().to_vec()).collect())
}

/// Paths staged with `git add -N` (intent to add). A checkpoint records the index as a tree,
/// which has no place for that flag (the entry would come back as a staged empty file), so
/// an operation refuses rather than restore something else than what was there.
pub(crate) fn refuse_intent_to_add(repo: &Repository) -> Result<(), Vec<String>> {
    const INTENT_TO_ADD: u16 = 1 << 13;
    let Ok(index) = repo.index() else {
        return Ok(());
    };
    let paths: Vec<String> = index
        .iter()
        .filter(|e| e.flags_extended & INTENT_TO_ADD != 0)
        .map(|e| String::from_utf8_lossy(&e.path).into_owned())
        .collect();
    if paths.is_empty() { Ok(()) } else { Err(paths) }
}

/// The flag git sets on index entries outside a sparse checkout.
const SKIP_WORKTREE: u16 = 1 << 14;

/// The empty tree's id (written if missing).
pub(crate) fn empty_tree(repo: &Repository) -> Result<Oid, git2::Error> {
    repo.treebuilder(None)?.write()
}

/// Records the working tree and index. Writes objects only: the user's files, index and refs
/// are untouched. A clean tree costs a fast scan and no object; a dirty one, when nothing is
/// staged, one status scan and the changed files (the index's tree plus those paths), as
/// `git status` and hashing the dirty files would.
pub fn take(repo: &Repository) -> Result<Checkpoint, git2::Error> {
    let head = head_commit(repo)?;
    let head_tree = match head {
        Some(head) => repo.find_commit(head)?.tree_id(),
        None => empty_tree(repo)?,
    };
    let mut index = repo.index()?;
    let index_tree = index_tree(repo, &mut index)?;
    let files = workdir_candidates(repo)?;
    if files.is_empty() {
        return Ok(Checkpoint {
            head,
            head_tree,
            work_tree: index_tree,
            index_tree,
        });
    }
    if changes_apply_alone(repo, &index)?
        && let Some(root) = repo.workdir()
    {
        // The working tree is the index's tree with the changed paths as the disk holds
        // them (what `git add -A` would store for each); staged or not, every other path
        // is on disk as the index has it.
        let paths: Vec<PathBuf> = files
            .iter()
            .filter(|p| !p.ends_with(b"/"))
            .map(|p| crate::git::repo::path_from_bytes(p).into_owned())
            .filter(|p| !untracked_secret(&index, p))
            .collect();
        // Built in memory, then kept as one pack when it made many objects (a dirty tree's
        // hundreds of blobs and folders), not as hundreds of loose files.
        let buffered = Buffered::open(repo)?;
        let source = crate::git::treebuild::Source {
            repo: buffered.repo(),
            base: index_tree,
            root,
            filters: repo,
            remember: true,
            objects_in_memory: Some(buffered.budget()),
        };
        let work_tree = crate::git::treebuild::tree_with_paths(&source, &paths)?;
        let kept = buffered.keep(repo, Some(index_tree), work_tree)?;
        tracing::debug!(
            objects = kept.objects,
            packed = kept.packed,
            "checkpoint objects"
        );
        return Ok(Checkpoint {
            head,
            head_tree,
            work_tree,
            index_tree,
        });
    }
    // A sparse checkout's skip-worktree entries are absent from disk by design: git sees
    // them unchanged, and so must the working tree recorded here.
    let sparse: Vec<git2::IndexEntry> = if crate::git::states::may_skip_worktree(&index) {
        index
            .iter()
            .filter(|e| e.flags_extended & SKIP_WORKTREE != 0)
            .collect()
    } else {
        Vec::new()
    };
    // Add everything to the in-memory index to get the working tree as a tree, then drop
    // those changes: the index on disk is never written.
    // Untracked secret files are left out before their bytes are read (libgit2 writes the
    // blob of every path it adds).
    let tracked: std::collections::HashSet<Vec<u8>> = index.iter().map(|e| e.path).collect();
    let leave_out = |path: &Path| {
        crate::git::secret_files::is_secret(path)
            && !tracked.contains(path.as_os_str().as_encoded_bytes())
    };
    let added = crate::git::filters::add_all_but(repo, &mut index, &leave_out)
        .and_then(|()| sparse.iter().try_for_each(|e| index.add(e)))
        .and_then(|()| index.write_tree_to(repo));
    index.read(true)?;
    Ok(Checkpoint {
        head,
        head_tree,
        work_tree: added?,
        index_tree,
    })
}

/// Whether `path` is a secret file the index does not track: it stays out of the recorded
/// working tree ([`crate::git::secret_files`]).
fn untracked_secret(index: &git2::Index, path: &Path) -> bool {
    crate::git::secret_files::is_secret(path) && index.get_path(path, 0).is_none()
}

/// Whether the changed paths alone can be laid on the index's tree: not when the index may
/// hold skip-worktree entries or submodules, or `core.fileMode` is off (libgit2's `add_all`
/// knows those cases; the status scan leaves them out).
fn changes_apply_alone(repo: &Repository, index: &git2::Index) -> Result<bool, git2::Error> {
    const GITLINK: u32 = 0o160000;
    if crate::git::states::may_skip_worktree(index) || index.iter().any(|e| e.mode == GITLINK) {
        return Ok(false);
    }
    Ok(repo.config()?.get_bool("core.fileMode").unwrap_or(true))
}

/// The tree of commit `head` (the empty tree for an unborn branch), as hex.
pub(crate) fn commit_tree(repo: &Repository, head: Option<&str>) -> Result<String, git2::Error> {
    match head {
        Some(h) => Ok(repo.find_commit(Oid::from_str(h)?)?.tree_id().to_string()),
        None => Ok(empty_tree(repo)?.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::testing::{committed_repo as repo, git, make_dirty, user_state as state};

    #[test]
    fn a_clean_tree_is_head_and_writes_nothing() {
        let dir = repo();
        let repo = Repository::open(dir.path()).expect("open");
        let checkpoint = take(&repo).expect("checkpoint");
        assert!(checkpoint.is_clean());
        let head = repo.head().and_then(|h| h.peel_to_commit()).expect("head");
        assert_eq!(checkpoint.head_tree, head.tree_id());
        assert_eq!(checkpoint.as_commit(&repo, "x").expect("commit"), head.id());
    }

    /// `is_dirty` (library users' question "is there uncommitted work?"): an ignored file is
    /// not work, an untracked one is, and so is a staged change alone.
    #[test]
    fn is_dirty_counts_untracked_and_staged_work_but_not_ignored_files() {
        let dir = repo();
        let root = dir.path();
        let dirty = || is_dirty(&Repository::open(root).expect("open")).expect("scan");
        crate::git::testing::write_file(root, "ignored.log", "noise\n");
        assert!(!dirty(), "clean but for an ignored file");
        crate::git::testing::write_file(root, "new.txt", "new\n");
        assert!(dirty(), "an untracked file");
        git(root, &["add", "new.txt"]);
        assert!(dirty(), "a staged file");
    }

    /// On an unborn branch nothing is committed yet: a new, empty repository holds no work,
    /// and a staged file is work even when the disk holds exactly what the index does.
    #[test]
    fn is_dirty_on_an_unborn_branch_counts_what_is_staged() {
        let dir = crate::git::testing::init_repo();
        let root = dir.path();
        let dirty = || is_dirty(&Repository::open(root).expect("open")).expect("scan");
        assert!(!dirty(), "a new, empty repository");
        crate::git::testing::write_file(root, "a.txt", "a\n");
        git(root, &["add", "a.txt"]);
        assert!(dirty(), "a file staged, none committed");
    }

    /// Uncommitted work of every kind (a partially staged file, a deletion, an untracked and
    /// an ignored file): recorded as trees, nothing of the user's changed, no commit made.
    #[test]
    fn records_the_staged_unstaged_split_without_changing_anything() {
        let dir = repo();
        let root = dir.path();
        make_dirty(root);
        let before = state(root);
        let index_before = git(root, &["ls-files", "--stage"]);
        let refs_before = git(root, &["for-each-ref"]);
        let repo = Repository::open(root).expect("open");
        let checkpoint = take(&repo).expect("checkpoint");
        assert!(!checkpoint.is_clean());
        assert_eq!(state(root), before, "the user's state is untouched");
        assert_eq!(git(root, &["ls-files", "--stage"]), index_before);
        assert_eq!(
            git(root, &["for-each-ref"]),
            refs_before,
            "no ref, no commit"
        );
        let cat = |tree: Oid, path: &str| git(root, &["cat-file", "-p", &format!("{tree}:{path}")]);
        assert_eq!(cat(checkpoint.work_tree, "a.txt"), "ONE\n2\nTHREE\n");
        assert_eq!(cat(checkpoint.index_tree, "a.txt"), "ONE\n2\n3\n");
        assert_eq!(cat(checkpoint.work_tree, "new.txt"), "new\n");
        let files = git(
            root,
            &["ls-tree", "--name-only", &checkpoint.work_tree.to_string()],
        );
        assert_eq!(
            files, ".gitignore\na.txt\nnew.txt\n",
            "deletion kept, ignored file left out"
        );
    }

    /// Files a sparse checkout leaves out are not deletions.
    #[test]
    fn skip_worktree_files_are_recorded_as_the_index_has_them() {
        let dir = repo();
        let root = dir.path();
        git(root, &["update-index", "--skip-worktree", "gone.txt"]);
        std::fs::remove_file(root.join("gone.txt")).expect("rm");
        std::fs::write(root.join("new.txt"), "new\n").expect("write");
        let repo = Repository::open(root).expect("open");
        let checkpoint = take(&repo).expect("checkpoint");
        let files = git(
            root,
            &["ls-tree", "--name-only", &checkpoint.work_tree.to_string()],
        );
        assert_eq!(files, ".gitignore\na.txt\ngone.txt\nnew.txt\n");
    }

    /// With nothing staged, the working tree is recorded from one status scan and the
    /// changed paths: the same tree `git add -A` builds, for every kind of change (a content
    /// change through a CRLF attribute, a deletion, an executable bit, a symlink, untracked
    /// files in a new folder), a nested repository left out as git leaves it out.
    #[cfg(unix)]
    #[test]
    fn an_unstaged_tree_is_recorded_as_git_add_all_records_it() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = repo();
        let root = dir.path();
        crate::git::testing::write_file(root, ".gitattributes", "*.crlf text eol=crlf\n");
        crate::git::testing::write_file(root, "run.sh", "echo\n");
        crate::git::testing::write_file(root, "w.crlf", "a\r\n");
        git(root, &["add", "-A"]);
        git(root, &["commit", "-q", "-m", "more"]);
        crate::git::testing::write_file(root, "a.txt", "changed\n");
        crate::git::testing::write_file(root, "w.crlf", "a\r\nb\r\n");
        std::fs::remove_file(root.join("gone.txt")).expect("rm");
        std::fs::set_permissions(root.join("run.sh"), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
        std::os::unix::fs::symlink("a.txt", root.join("link")).expect("symlink");
        crate::git::testing::write_file(root, "new/deep/n.txt", "n\n");
        git(&root.join("new"), &["init", "-q", "nested"]);
        crate::git::testing::write_file(root, "new/nested/x.txt", "x\n");
        let repo = Repository::open(root).expect("open");
        let checkpoint = take(&repo).expect("checkpoint");
        assert_eq!(
            checkpoint.index_tree, checkpoint.head_tree,
            "nothing staged"
        );
        let scratch = root.join(".git/scratch-index");
        std::fs::copy(root.join(".git/index"), &scratch).expect("copy");
        let with_index = |args: &[&str]| {
            let out = std::process::Command::new("git")
                .args(args)
                .current_dir(root)
                .env("GIT_INDEX_FILE", &scratch)
                .output()
                .expect("git runs");
            String::from_utf8_lossy(&out.stdout).trim().to_owned()
        };
        // git would add the nested repository as a gitlink (or fail, without a commit):
        // git-loaf leaves it out, as an untracked folder of another repository.
        with_index(&["add", "-A", "--", ".", ":!new/nested"]);
        let theirs = with_index(&["write-tree"]);
        assert_eq!(checkpoint.work_tree.to_string(), theirs);
    }

    /// With something staged the same fast route is taken: the working tree is the index's
    /// tree with the changed paths laid on it, so a file staged whole (the disk as the index,
    /// both unlike HEAD) keeps its staged content, beside a partly staged file, an unstaged
    /// edit and an untracked file; the index is recorded as it is.
    #[test]
    fn a_tree_with_staged_changes_is_recorded_as_git_add_all_records_it() {
        let dir = repo();
        let root = dir.path();
        crate::git::testing::write_file(root, "a.txt", "staged whole\n");
        crate::git::testing::write_file(root, "new-staged.txt", "added\n");
        git(root, &["add", "a.txt", "new-staged.txt"]);
        crate::git::testing::write_file(root, "gone.txt", "staged\n");
        git(root, &["add", "gone.txt"]);
        crate::git::testing::write_file(root, "gone.txt", "staged, then edited\n");
        crate::git::testing::write_file(root, "untracked.txt", "u\n");
        let index_before = git(root, &["write-tree"]);
        let repo = Repository::open(root).expect("open");
        let checkpoint = take(&repo).expect("checkpoint");
        assert_eq!(checkpoint.index_tree.to_string(), index_before.trim());
        assert_ne!(checkpoint.index_tree, checkpoint.head_tree, "staged work");
        git(root, &["add", "-A"]);
        let theirs = git(root, &["write-tree"]);
        assert_eq!(checkpoint.work_tree.to_string(), theirs.trim());
    }
}
