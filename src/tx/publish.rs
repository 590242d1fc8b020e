//! Publishing: moving the user's branch and files from one state to another as one step that
//! a crash cannot leave half done.
//!
//! A [`Transition`] names the ref to move (compare-and-swap from `old` to `new`) and the trees
//! of the working tree and index before and after. [`publish`]:
//! 1. checks the ref still holds `old` and, for an apply, that the user has not changed a path
//!    the transition changes (otherwise nothing is touched: [`PublishError::Moved`] /
//!    [`PublishError::Changed`]);
//! 2. writes the operation log's entry (not yet logged: no ref names it) and a journal
//!    (`<git dir>/loaf/journal.json`, renamed into place whole), both durable;
//! 3. moves the ref by compare-and-swap — the commit point;
//! 4. writes only the paths that differ to the working tree and index;
//! 5. logs the entry (the log's ref moved to it) and deletes the journal.
//!
//! Killed before 3, the journal is dropped by the next command: all before. Killed after 3,
//! the next command finishes 4 and 5 ([`super::recovery`]): all after. While rolling forward, a file is
//! written only if it still holds its before or after content, so a change the user made in
//! between is never overwritten.

use std::path::{Path, PathBuf};

use git2::{Index, Repository};

use super::last_look::{Checker, changed_by_user};
use super::oplog::{self, OpEntry, OpKind};
use super::publish_files::write_files;
use super::stage_swap::StageSwap;
pub(crate) use super::transition::list;
pub use super::transition::{Attachment, Transition, crash_point, current, differing, mark_start};
use super::transition::{
    Journal, Paths, Undecided, drop_logged_journal, io_error, journal_path, oid, write_journal,
};
use crate::git::durable;
use crate::git::index_lock::{IndexLock, IndexLockError};
use crate::notice::{Notice, NoticeKind};

/// Why a transition was not published. Nothing of the user's was changed, except with
/// [`PublishError::Unfinished`] (the change is published, the next command finishes it).
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    /// The ref no longer holds `old`.
    #[error("{ref_name} moved while git-loaf ran (now {now})")]
    Moved {
        /// The ref.
        ref_name: String,
        /// What it holds now.
        now: String,
    },
    /// The user changed paths the transition also changes.
    #[error("you changed {} while git-loaf ran", list(.0))]
    Changed(Vec<PathBuf>),
    /// Files nothing keeps (ignored or new since the checkpoint) are in a folder the
    /// transition replaces by a file: refused before anything moved, never deleted.
    #[error("{} would be deleted: a file goes where the folder holding {} is", list(.0), if .0.len() == 1 { "it" } else { "them" })]
    InTheWay(Vec<PathBuf>),
    /// Another git command holds the index lock.
    #[error("another git command is using the index ({} exists)", .0.display())]
    IndexLocked(PathBuf),
    /// Writing the index failed.
    #[error("{0}")]
    Index(IndexLockError),
    /// Writing ignored files or folders failed.
    #[error("{0}")]
    Visible(#[from] crate::tx::ignored_changes::VisibleError),
    /// git failed.
    #[error("{}", crate::git::words::plain(.0))]
    Git(#[from] git2::Error),
    /// The journal could not be written.
    #[error("cannot write the journal: {0}")]
    Io(#[from] std::io::Error),
    /// The operation log cannot take an entry: refused before anything was published.
    #[error("{0}")]
    DamagedLog(oplog::Damaged),
    /// A crashed operation's journal cannot be read, and the refs cannot tell what it did.
    #[error("{0}")]
    DamagedJournal(Undecided),
    /// Failed after the commit point: the change is published (the ref moved) but not
    /// finished; the journal stays, and the next git-loaf command finishes it.
    #[error("{0} (after the change was published: the branch or HEAD already moved)")]
    Unfinished(Box<PublishError>),
}

impl From<IndexLockError> for PublishError {
    fn from(error: IndexLockError) -> Self {
        match error {
            IndexLockError::Busy(path) => PublishError::IndexLocked(path),
            other => PublishError::Index(other),
        }
    }
}

/// Publishes `t`. With `check_user`, refuses when the user changed, since `from_*` was
/// recorded, a path this transition changes (apply); undo and redo check the whole state
/// themselves before calling. The user's `index.lock` is held from before that check until
/// the new index is in place. Returns the files left alone because the user changed them
/// between the check and the moment each would have been replaced (never overwritten).
pub fn publish(
    repo: &Repository,
    t: &Transition,
    check_user: bool,
) -> Result<Vec<PathBuf>, PublishError> {
    publish_attached(repo, t, check_user, &Attachment::default()).map(|(skipped, _)| skipped)
}

/// [`publish`] with a change of HEAD's attachment (`t.ref_name` is `HEAD`). In order: the
/// journal (durable), the detach, the move of HEAD (the commit point), files, index, log,
/// the attach, and the journal dropped: a crash anywhere is rolled back (up to the move) or
/// finished (after it) by [`recover`]. Returns the files left alone and whether HEAD ended
/// on `attach_to`.
pub fn publish_attached(
    repo: &Repository,
    t: &Transition,
    check_user: bool,
    attachment: &Attachment,
) -> Result<(Vec<PathBuf>, bool), PublishError> {
    let now = current(repo, &t.ref_name);
    if now != t.old {
        return Err(PublishError::Moved {
            ref_name: t.ref_name.clone(),
            now: now.unwrap_or_else(|| "unborn".to_owned()),
        });
    }
    // A log that cannot take the entry is found now, not after the user's files changed.
    oplog::check(repo).map_err(PublishError::DamagedLog)?;
    let paths = Paths::of(repo, t)?;
    // Whatever the user asked (even `--force`): nothing else keeps such files.
    let in_the_way = super::last_look::in_folders_replaced(repo, t, &paths.work)?;
    if !in_the_way.is_empty() {
        return Err(PublishError::InTheWay(in_the_way));
    }
    // Taken before the commit point, so that the index can always be written after it.
    let lock = IndexLock::acquire(repo)?;
    let mut index = lock.read(repo)?;
    let checker = Checker::new(repo, &t.workdir)?;
    checker.trust_index(&index, &paths.work);
    if check_user {
        let changed = changed_by_user(repo, t, &paths, &index, &checker)?;
        if !changed.is_empty() {
            return Err(PublishError::Changed(changed));
        }
    }
    // The log entry's objects are written now, so that the sync below makes them durable
    // with the rest in one batch: once the files are written, logging is only a ref's move.
    let entry = oplog::prepare(repo, &t.op)?;
    // What the journal and the refs will name must outlast a power loss before they do.
    durable::sync_new_objects(repo)?;
    let journal = journal_path(repo);
    write_journal(
        &journal,
        &Journal {
            transition: t.clone(),
            attachment: attachment.clone(),
        },
    )?;
    crash_point("journal");
    if let Err(e) = detach_and_move(repo, t, attachment) {
        let _ = std::fs::remove_file(&journal);
        return Err(e);
    }
    crash_point("ref");
    let written = Written {
        paths: &paths,
        checker: &checker,
        entry: &entry,
    };
    finish(repo, t, attachment, &written, &mut index, lock).map_err(|e| {
        // Past the commit point: the journal stays for the next command to finish with.
        PublishError::Unfinished(Box::new(e))
    })
}

/// Detaches HEAD if asked, then moves the ref; on failure HEAD is attached back (nothing
/// changed).
fn detach_and_move(
    repo: &Repository,
    t: &Transition,
    attachment: &Attachment,
) -> Result<(), PublishError> {
    let old = t.old.as_deref().map(oid).transpose()?;
    let detached = match (&attachment.detach_from, old) {
        (Some(branch), Some(old)) => {
            crate::git::refs::detach(repo, old)?;
            durable::sync_ref(repo, "HEAD")?;
            crash_point("detached");
            Some((branch, old))
        }
        _ => None,
    };
    let moved = move_ref(repo, t);
    if moved.is_err()
        && let Some((branch, old)) = detached
    {
        let _ = crate::git::refs::attach(repo, branch, old);
    }
    moved?;
    durable::sync_ref(repo, &t.ref_name)?;
    Ok(())
}

/// What [`publish_attached`] found and wrote before the commit point that [`finish`] goes on
/// with.
struct Written<'a> {
    /// The paths the transition changes.
    paths: &'a Paths,
    /// What the files held when checked.
    checker: &'a Checker<'a>,
    /// The log entry, written and durable, not yet logged.
    entry: &'a oplog::Prepared,
}

/// Everything after the commit point: files, index, what git does not track, the log entry,
/// HEAD attached, the journal dropped.
fn finish(
    repo: &Repository,
    t: &Transition,
    attachment: &Attachment,
    written: &Written<'_>,
    index: &mut Index,
    lock: IndexLock,
) -> Result<(Vec<PathBuf>, bool), PublishError> {
    let (paths, checker) = (written.paths, written.checker);
    let mut swap = if paths.work.len() >= StageSwap::WORTH_IT {
        StageSwap::of(repo)
    } else {
        None
    };
    let mut skipped = write_files(repo, t, paths, index, checker, swap.as_mut())?;
    if let Some(swap) = swap {
        // The user's files are in place: a stage whose HEAD cannot be set says so only in the
        // log (its moved paths are recorded, so the next reset rewrites them, and a file is
        // checked against the commit before it moves again).
        let from_work = repo.find_tree(oid(&t.from_work)?)?;
        if let Err(e) = swap.finish(repo, &from_work, oid(&t.to_work)?, &paths.work) {
            tracing::debug!("the stage's HEAD was not moved after its files moved: {e}");
        }
    }
    crash_point("index");
    lock.commit(index)?;
    crate::git::index::note_index_tree(repo, oid(&t.to_index)?);
    skipped.extend(publish_extras(repo, t)?);
    crash_point("files");
    log_prepared(repo, written.entry, &t.op)?;
    no_longer_kept(repo, &t.op)?;
    crash_point("oplog");
    let attached = attach_after(repo, t, attachment)?;
    crash_point("attached");
    drop_logged_journal(repo)?;
    Ok((skipped, attached))
}

/// A take lands a kept commit (an apply's entry under the kept id): logged, it is no longer
/// kept, or a take finished by recovery would be left to be taken twice.
pub(crate) fn no_longer_kept(repo: &Repository, op: &OpEntry) -> Result<(), git2::Error> {
    if op.kind == OpKind::Apply {
        crate::git::refs::drop_kept_if_any(repo, &op.id)?;
    }
    Ok(())
}

/// Attaches HEAD to `attachment.attach_to` when that branch holds `t.new` and HEAD is
/// detached there; whether HEAD is on it now. HEAD on another branch, or detached at another
/// commit, is the user's doing since (a checkout after a crash, before recovery): left as it
/// is, since moving it would leave the files and index of one commit under another.
pub(crate) fn attach_after(
    repo: &Repository,
    t: &Transition,
    attachment: &Attachment,
) -> Result<bool, git2::Error> {
    let (Some(branch), Some(new)) = (&attachment.attach_to, &t.new) else {
        return Ok(false);
    };
    let head = repo.find_reference("HEAD")?;
    match head.symbolic_target().ok().flatten() {
        Some(on) => return Ok(on == branch),
        None if head.target() != Some(oid(new)?) => return Ok(false),
        None => {}
    }
    let attached = crate::git::refs::attach(repo, branch, oid(new)?)?;
    durable::sync_ref(repo, "HEAD").map_err(|e| io_error("cannot sync", Path::new("HEAD"), e))?;
    Ok(attached)
}

/// Writes what git does not track (ignored files, empty folders) as the transition's log
/// entry says; a path the user changed meanwhile is left alone and returned. Repeating it
/// after a crash is harmless.
pub(crate) fn publish_extras(
    repo: &Repository,
    t: &Transition,
) -> Result<Vec<PathBuf>, PublishError> {
    if t.op.extras.is_empty() {
        return Ok(Vec::new());
    }
    Ok(t.op.extras.publish(repo, &t.workdir)?)
}

/// The notice for files a publish left alone because the user changed them just then.
pub fn left_alone_notice(skipped: &[PathBuf]) -> Option<Notice> {
    (!skipped.is_empty()).then(|| {
        Notice::new(
            NoticeKind::YourWork,
            format!(
                "left as you changed them just now (not overwritten): {}",
                list(skipped)
            ),
        )
    })
}

/// Appends the log entry and makes it durable (its objects, then the log's ref), so that
/// the journal is dropped only once the entry outlasts a power loss.
pub(crate) fn log_durably(repo: &Repository, entry: &OpEntry) -> Result<(), PublishError> {
    oplog::append(repo, entry)?;
    durable::sync_new_objects(repo)?;
    durable::sync_ref(repo, oplog::OPLOG_REF)?;
    Ok(())
}

/// Logs `entry`, its commit written (`prepared`) and made durable before the journal: only
/// the log's ref is moved and synced. Written again on a log that moved meanwhile, the new
/// commit's objects are synced first, as [`log_durably`] does.
fn log_prepared(
    repo: &Repository,
    prepared: &oplog::Prepared,
    entry: &OpEntry,
) -> Result<(), PublishError> {
    if oplog::record(repo, prepared, entry)? != prepared.commit() {
        durable::sync_new_objects(repo)?;
    }
    durable::sync_ref(repo, oplog::OPLOG_REF)?;
    Ok(())
}

pub(crate) fn move_ref(repo: &Repository, t: &Transition) -> Result<(), PublishError> {
    let moved = |e: git2::Error| {
        if e.code() == git2::ErrorCode::Modified || e.code() == git2::ErrorCode::Exists {
            PublishError::Moved {
                ref_name: t.ref_name.clone(),
                now: current(repo, &t.ref_name).unwrap_or_else(|| "unborn".to_owned()),
            }
        } else {
            PublishError::Git(e)
        }
    };
    match (&t.old, &t.new) {
        (Some(old), Some(new)) => repo
            .reference_matching(&t.ref_name, oid(new)?, true, oid(old)?, &t.message)
            .map(drop)
            .map_err(moved),
        (None, Some(new)) => repo
            .reference(&t.ref_name, oid(new)?, false, &t.message)
            .map(drop)
            .map_err(moved),
        (Some(old), None) => {
            let mut reference = repo.find_reference(&t.ref_name).map_err(moved)?;
            if reference.target().map(|o| o.to_string()).as_deref() != Some(old.as_str()) {
                return Err(moved(git2::Error::new(
                    git2::ErrorCode::Modified,
                    git2::ErrorClass::Reference,
                    "moved",
                )));
            }
            // libgit2 refuses the delete if the ref changed since it was read: still a CAS.
            reference.delete().map_err(moved)
        }
        (None, None) => Ok(()),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// HEAD detached at the commit the branch holds is attached to it; on the branch it
    /// stays; on another branch, or detached elsewhere (the user's checkouts since), it is
    /// left alone.
    #[test]
    fn attach_after_attaches_only_a_head_detached_where_the_branch_is() {
        let dir = repo();
        let root = dir.path();
        let repo = Repository::open(root).expect("open");
        let mut t = ai_commit(&repo, root, &[]);
        let main = git(root, &["rev-parse", "main"]).trim().to_owned();
        t.new = Some(main.clone());
        let attachment = Attachment {
            detach_from: None,
            attach_to: Some("refs/heads/main".to_owned()),
        };
        let head = || git(root, &["rev-parse", "--symbolic-full-name", "HEAD"]);
        git(root, &["switch", "-q", "-c", "other"]);
        assert!(!attach_after(&repo, &t, &attachment).expect("attach"));
        assert_eq!(head(), "refs/heads/other\n");
        git(root, &["switch", "-q", "--detach", "HEAD"]);
        git(root, &["commit", "-q", "--allow-empty", "-m", "elsewhere"]);
        assert!(!attach_after(&repo, &t, &attachment).expect("attach"));
        assert_eq!(head(), "HEAD\n");
        git(root, &["switch", "-q", "--detach", &main]);
        assert!(attach_after(&repo, &t, &attachment).expect("attach"));
        assert_eq!(head(), "refs/heads/main\n");
        assert!(attach_after(&repo, &t, &attachment).expect("attach"));
        assert_eq!(head(), "refs/heads/main\n");
    }

    /// The branch's compare-and-swap losing to another writer (it moved from `old`, or an
    /// unborn branch was born meanwhile) is the ref having moved, said as such, not a git
    /// error: the apply is then kept, not failed.
    #[test]
    fn a_lost_compare_and_swap_is_the_ref_having_moved() {
        let dir = repo();
        let root = dir.path();
        let repo = Repository::open(root).expect("open");
        let mut t = ai_commit(&repo, root, &[("new.txt", b"new\n", 0o100644)]);
        git(
            root,
            &[
                "commit",
                "-q",
                "--allow-empty",
                "-m",
                "the user's, meanwhile",
            ],
        );
        let now = git(root, &["rev-parse", "HEAD"]).trim().to_owned();
        match move_ref(&repo, &t) {
            Err(PublishError::Moved { now: said, .. }) => assert_eq!(said, now),
            other => panic!("not Moved: {other:?}"),
        }
        t.ref_name = "refs/heads/born-meanwhile".to_owned();
        let old = t.old.take();
        git(root, &["branch", "born-meanwhile"]);
        match move_ref(&repo, &t) {
            Err(PublishError::Moved { now: said, .. }) => assert_eq!(said, now),
            other => panic!("not Moved: {other:?}"),
        }
        // Back to unborn (the ref deleted), from a value it no longer holds: not deleted.
        t.ref_name = "refs/heads/main".to_owned();
        (t.old, t.new) = (old, None);
        match move_ref(&repo, &t) {
            Err(PublishError::Moved { now: said, .. }) => assert_eq!(said, now),
            other => panic!("not Moved: {other:?}"),
        }
        assert_eq!(
            git(root, &["rev-parse", "main"]).trim(),
            now,
            "main was kept"
        );
    }

    #[test]
    fn the_left_alone_notice_names_every_path_and_is_absent_without_one() {
        assert_eq!(left_alone_notice(&[]), None);
        let notice = left_alone_notice(&[PathBuf::from("a.txt"), PathBuf::from("docs/b.md")])
            .expect("a notice");
        assert_eq!(notice.kind, crate::notice::NoticeKind::YourWork);
        assert!(
            notice
                .text
                .starts_with("left as you changed them just now (not overwritten): ")
                && notice.text.contains("a.txt")
                && notice.text.contains("docs/b.md"),
            "{notice}"
        );
    }
    use crate::git::testing::{committed_repo as repo, git, make_dirty, user_state};
    use crate::tx::checkpoint;
    use crate::tx::oplog::{OpKind, UserState};

    /// The journal a publish of `t` writes.
    pub(crate) fn journal_of(t: &Transition) -> Journal {
        Journal {
            transition: t.clone(),
            attachment: Attachment::default(),
        }
    }

    pub(crate) fn tree_of(repo: &Repository, commit: &str) -> String {
        repo.find_commit(oid(commit).expect("oid"))
            .and_then(|c| c.tree())
            .expect("tree")
            .id()
            .to_string()
    }

    /// The transition of an AI commit on HEAD whose tree is HEAD's plus `files` (path,
    /// content, mode), from the clean tree to that commit's tree.
    pub(crate) fn ai_commit(
        repo: &Repository,
        root: &Path,
        files: &[(&str, &[u8], i32)],
    ) -> Transition {
        let head = repo.refname_to_id("HEAD").expect("head").to_string();
        let base_tree = tree_of(repo, &head);
        let base = repo.find_tree(oid(&base_tree).expect("oid")).expect("tree");
        let mut builder = repo.treebuilder(Some(&base)).expect("builder");
        for (path, content, mode) in files {
            let blob = repo.blob(content).expect("blob");
            builder.insert(path, blob, *mode).expect("insert");
        }
        let tree = builder.write().expect("tree").to_string();
        let commit = crate::git::commit::write_commit(
            repo,
            oid(&tree).expect("oid"),
            &[oid(&head).expect("oid")],
            "AI",
        )
        .expect("commit")
        .to_string();
        transition(
            root,
            &head,
            &commit,
            (&base_tree, &base_tree),
            (&tree, &tree),
        )
    }

    pub(crate) fn transition(
        root: &Path,
        old: &str,
        new: &str,
        from: (&str, &str),
        to: (&str, &str),
    ) -> Transition {
        let state = |head: &str, (work, index): (&str, &str)| UserState {
            head: Some(head.to_owned()),
            work: work.to_owned(),
            index: index.to_owned(),
        };
        Transition {
            workdir: root.to_path_buf(),
            ref_name: "refs/heads/main".to_owned(),
            old: Some(old.to_owned()),
            new: Some(new.to_owned()),
            from_work: from.0.to_owned(),
            from_index: from.1.to_owned(),
            to_work: to.0.to_owned(),
            to_index: to.1.to_owned(),
            message: "test".to_owned(),
            op: OpEntry {
                id: "t1".to_owned(),
                kind: OpKind::Apply,
                target: None,
                time: 0,
                workdir: root.display().to_string(),
                ref_name: "refs/heads/main".to_owned(),
                summary: "test".to_owned(),
                before: state(old, from),
                after: state(new, to),
                extras: Default::default(),
                reply_key: None,
            },
        }
    }

    /// Checkpoint a dirty state, publish the checkpoint commit as the new HEAD (clean), then
    /// publish back to the checkpoint: the user's dirty state comes back exactly.
    #[test]
    fn a_checkpointed_state_goes_forward_and_comes_back_exactly() {
        let dir = repo();
        let root = dir.path();
        make_dirty(root);
        let before = user_state(root);
        let repo = Repository::open(root).expect("open");
        let head = repo.refname_to_id("HEAD").expect("head").to_string();
        let cp = checkpoint::take(&repo).expect("take");
        let cp_commit = cp.as_commit(&repo, "work").expect("commit").to_string();
        let cp_tree = tree_of(&repo, &cp_commit);
        let cp_index = cp.index_tree.to_string();
        let forward = transition(
            root,
            &head,
            &cp_commit,
            (&cp_tree, &cp_index),
            (&cp_tree, &cp_tree),
        );
        publish(&repo, &forward, true).expect("forward");
        assert_eq!(
            git(root, &["status", "--porcelain", "--untracked-files=all"]),
            "",
            "clean at the checkpoint"
        );
        assert_eq!(git(root, &["rev-parse", "HEAD"]).trim(), cp_commit);
        std::fs::write(root.join("b.txt"), "later\n").expect("write");
        git(root, &["add", "b.txt"]);
        git(root, &["commit", "-q", "-m", "more"]);
        let tip = git(root, &["rev-parse", "HEAD"]).trim().to_owned();
        let tip_tree = tree_of(&repo, &tip);
        let back = transition(
            root,
            &tip,
            &head,
            (&tip_tree, &tip_tree),
            (&cp_tree, &cp_index),
        );
        publish(&repo, &back, false).expect("back");
        assert_eq!(
            user_state(root),
            before,
            "status, diffs and HEAD as they were"
        );
        assert!(
            !root.join("b.txt").exists(),
            "files created since are removed"
        );
        assert_eq!(
            std::fs::read_to_string(root.join("debug.log"))
                .ok()
                .as_deref(),
            Some("ignored\n")
        );
        assert!(!journal_path(&repo).exists());
        let ids: Vec<String> = oplog::entries(&repo)
            .expect("log")
            .into_iter()
            .map(|e| e.id)
            .collect();
        assert_eq!(ids.len(), 2);
    }

    #[test]
    fn refuses_when_the_branch_moved_or_the_user_changed_a_path() {
        let dir = repo();
        let root = dir.path();
        let repo = Repository::open(root).expect("open");
        let head = repo.refname_to_id("HEAD").expect("head").to_string();
        let base_tree = tree_of(&repo, &head);
        std::fs::write(root.join("a.txt"), "model\n").expect("write");
        let tree = {
            let mut index = repo.index().expect("index");
            index.add_path(Path::new("a.txt")).expect("add");
            let tree = index.write_tree().expect("tree");
            index.read(true).expect("reread");
            tree
        };
        std::fs::write(root.join("a.txt"), "1\n2\n3\n").expect("write");
        let commit =
            crate::git::commit::write_commit(&repo, tree, &[oid(&head).expect("oid")], "AI")
                .expect("commit");
        let t = transition(
            root,
            &head,
            &commit.to_string(),
            (&base_tree, &base_tree),
            (&tree.to_string(), &tree.to_string()),
        );
        std::fs::write(root.join("a.txt"), "the user's edit\n").expect("write");
        let err = publish(&repo, &t, true).expect_err("refused");
        assert!(
            matches!(&err, PublishError::Changed(p) if p == &[PathBuf::from("a.txt")]),
            "{err}"
        );
        assert_eq!(
            git(root, &["rev-parse", "HEAD"]).trim(),
            head,
            "nothing moved"
        );
        assert_eq!(
            std::fs::read_to_string(root.join("a.txt")).ok().as_deref(),
            Some("the user's edit\n")
        );
        std::fs::write(root.join("a.txt"), "1\n2\n3\n").expect("write");
        git(root, &["commit", "-q", "--allow-empty", "-m", "moved"]);
        let err = publish(&repo, &t, true).expect_err("refused");
        assert!(matches!(err, PublishError::Moved { .. }), "{err}");
        assert!(!journal_path(&repo).exists());
    }

    /// Written straight from their blobs: an executable keeps its bit, a symlink is a link,
    /// and git sees the tree clean.
    #[cfg(unix)]
    #[test]
    fn executables_and_symlinks_are_written_as_git_would() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = repo();
        let root = dir.path();
        let repo = Repository::open(root).expect("open");
        let t = ai_commit(
            &repo,
            root,
            &[
                ("run.sh", b"#!/bin/sh\necho hi\n", 0o100755),
                ("link", b"a.txt", 0o120000),
            ],
        );
        assert!(publish(&repo, &t, true).expect("publish").is_empty());
        let mode = std::fs::metadata(root.join("run.sh"))
            .expect("script")
            .permissions()
            .mode();
        assert_ne!(mode & 0o100, 0, "executable");
        assert_eq!(
            std::fs::read_link(root.join("link")).expect("a link"),
            PathBuf::from("a.txt")
        );
        assert_eq!(git(root, &["status", "--porcelain"]), "");
    }
}
