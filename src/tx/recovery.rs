//! Recovery: finishing or rolling back an operation a crash interrupted, from its journal
//! ([`super::transition`]). Killed before its commit point (the ref's move), an operation is
//! rolled back: the journal is dropped. Killed after it, it is rolled forward: its files,
//! index and log entry are written as [`super::publish`] would have, each file only where it
//! still holds its before or after content, so a change the user made in between is never
//! overwritten.
//!
//! When the journal cannot be read (empty or cut short: a power
//! loss before it reached the disk, a disk error). The journal is made durable before the
//! ref moves, so this should mean the ref never moved; but it is not taken on trust: what
//! the refs say decides.
//!
//! - HEAD is where git-loaf's last recorded operation of this working tree left it: the
//!   interrupted one did not move it (or got as far as its log entry); nothing to do.
//! - HEAD's last move (its reflog) was git-loaf's and HEAD still holds what it moved to:
//!   that operation passed its commit point and is not recorded. Its files and index are
//!   written, from the commit before to the commit after, each only where it still holds
//!   its before content (the user's edits are left alone), and the message says so and how
//!   to take it back (the log cannot: the user's state before it is unknown).
//! - HEAD's last move was not git-loaf's: the interrupted operation did not move it.
//! - No reflog to tell: refused, the journal kept, with how to check and repair.

use std::path::{Path, PathBuf};

use git2::{Oid, Repository};

use super::last_look::Checker;
use super::oplog::{self, OpEntry, OpKind, UserState};
use super::publish::{PublishError, attach_after, log_durably, no_longer_kept, publish_extras};
use super::publish_files::{temp_beside, write_files};
use super::transition::{
    Attachment, Journal, Paths, STAGING_PREFIX, Transition, Undecided, current, drop_journal,
    journal_path, oid,
};
use crate::git::durable;
use crate::git::index_lock::IndexLock;

/// How many of the log's newest entries are searched for this working tree's last one.
const LOOK_BACK: usize = 64;

/// What a crashed operation left, and what [`recover`] did with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Recovered {
    /// No journal: nothing to do.
    Nothing,
    /// The crash came before the ref moved: the journal was dropped (all before).
    RolledBack,
    /// The ref had moved: the files, index and log were finished (all after). Paths the user
    /// changed in between were left as they are.
    RolledForward {
        /// Paths left alone because they held neither the before nor the after content.
        skipped: Vec<PathBuf>,
    },
    /// The ref had moved to the operation's commit and then on (a commit made before the
    /// next loaf command): its files and index were not all written; nothing was changed.
    Superseded {
        /// The operation's commit.
        commit: String,
        /// What the ref holds now.
        now: String,
    },
    /// The journal was empty or cut short, and HEAD shows the operation did not move it.
    Unmoved {
        /// `empty` or `unreadable`.
        what: &'static str,
        /// What showed it.
        why: String,
    },
    /// The journal was empty or cut short, and HEAD's reflog shows the operation moved it
    /// (from `old` to `new`) without being recorded: its files and index were written now.
    Unrecorded {
        /// `empty` or `unreadable`.
        what: &'static str,
        /// The reflog message of the move (`git-loaf apply <id>: …`).
        message: String,
        /// Where HEAD was.
        old: String,
        /// Where it is.
        new: String,
        /// Paths left alone because the user had changed them.
        skipped: Vec<PathBuf>,
    },
}

/// The journal of a publish a crash interrupted, which the next command that takes the
/// lock finishes or drops, if there is one.
pub fn pending(repo: &Repository) -> Option<PathBuf> {
    Some(journal_path(repo)).filter(|path| path.exists())
}

/// Finishes or drops a publish a crash interrupted. Call with the repository lock held,
/// before anything else.
pub fn recover(repo: &Repository) -> Result<Recovered, PublishError> {
    if let Ok(entries) = std::fs::read_dir(repo.commondir().join("loaf")) {
        for entry in entries.flatten() {
            if entry
                .file_name()
                .to_string_lossy()
                .starts_with(STAGING_PREFIX)
            {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
    let journal = journal_path(repo);
    let text = match std::fs::read(&journal) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Recovered::Nothing),
        Err(e) => return Err(e.into()),
    };
    let Ok(Journal {
        transition: t,
        attachment,
    }) = serde_json::from_slice::<Journal>(&text)
    else {
        return recover_unreadable(repo, &journal, text.is_empty());
    };
    let Ok(user) = Repository::open(&t.workdir) else {
        // The working tree is gone (a removed linked worktree): nothing to finish there.
        std::fs::remove_file(&journal)?;
        return Ok(Recovered::RolledBack);
    };
    // A crash while a file was being written left its new content beside it.
    if let Ok(paths) = Paths::of(&user, &t) {
        for path in &paths.work {
            let _ = std::fs::remove_file(temp_beside(&t, path));
        }
    }
    let now = current(&user, &t.ref_name);
    if now != t.new && now != t.old {
        // The ref moved since the crash (the user committed, after removing the index.lock
        // the crash left). If it moved on from the operation's commit, that commit was
        // published and its files were not all written: say so, change nothing.
        let after_new = match (&now, &t.new) {
            (Some(now), Some(new)) => user
                .graph_descendant_of(oid(now)?, oid(new)?)
                .unwrap_or(false),
            _ => false,
        };
        drop_journal(repo)?;
        return Ok(if after_new {
            Recovered::Superseded {
                commit: t.new.clone().unwrap_or_default(),
                now: now.unwrap_or_default(),
            }
        } else {
            Recovered::RolledBack
        });
    }
    // When the ref does not move (old == new: e.g. a forced undo whose HEAD is already
    // where it goes), its value cannot tell whether the crash came before the commit point;
    // rolling forward carefully is safe either way.
    if now != t.new || (now == t.old && t.old != t.new) {
        reattach(&user, &t, &attachment)?;
        drop_journal(repo)?;
        return Ok(Recovered::RolledBack);
    }
    // Logged: publish wrote the files, index and what git does not track before the entry,
    // so only what follows the log is left. A journal a power loss brought back (its removal
    // is not synced) thus never rewrites a file the user changed since.
    if oplog::newest_id(&user)?.as_deref() == Some(t.op.id.as_str()) {
        no_longer_kept(&user, &t.op)?;
        attach_after(&user, &t, &attachment)?;
        drop_journal(repo)?;
        return Ok(Recovered::RolledForward {
            skipped: Vec::new(),
        });
    }
    let paths = Paths::of(&user, &t)?;
    let lock = IndexLock::acquire(&user)?;
    let mut index = lock.read(&user)?;
    let checker = Checker::new(&user, &t.workdir)?;
    let mut skipped = write_files(&user, &t, &paths, &mut index, &checker, None)?;
    lock.commit(&mut index)?;
    crate::git::index::note_index_tree(&user, oid(&t.to_index)?);
    skipped.extend(publish_extras(&user, &t)?);
    log_durably(&user, &t.op)?;
    no_longer_kept(&user, &t.op)?;
    attach_after(&user, &t, &attachment)?;
    drop_journal(repo)?;
    Ok(Recovered::RolledForward { skipped })
}

/// Rolling back a move of HEAD that detached it first: HEAD, still at `old`, goes back on
/// the branch it left (if that branch still holds `old`).
fn reattach(
    repo: &Repository,
    t: &Transition,
    attachment: &Attachment,
) -> Result<(), PublishError> {
    let (Some(branch), Some(old)) = (&attachment.detach_from, &t.old) else {
        return Ok(());
    };
    if repo.head_detached().unwrap_or(false) && current(repo, "HEAD").as_ref() == Some(old) {
        crate::git::refs::attach(repo, branch, oid(old)?)?;
        durable::sync_ref(repo, "HEAD")?;
    }
    Ok(())
}

/// Recovery when the journal cannot be read (see the module documentation).
fn recover_unreadable(
    repo: &Repository,
    journal: &Path,
    empty: bool,
) -> Result<Recovered, PublishError> {
    let what = if empty { "empty" } else { "unreadable" };
    let Some(head) = repo.head().ok().and_then(|h| h.target()) else {
        // Unborn: no operation left HEAD on a commit.
        drop_journal(repo)?;
        return Ok(Recovered::Unmoved {
            what,
            why: "HEAD has no commit".into(),
        });
    };
    let root: PathBuf = repo.workdir().unwrap_or(repo.path()).components().collect();
    let workdir = root.display().to_string();
    let last_logged = oplog::walk(repo)
        .take(LOOK_BACK)
        .filter_map(Result::ok)
        .find(|e| e.workdir == workdir);
    if last_logged.and_then(|e| e.after.head) == Some(head.to_string()) {
        drop_journal(repo)?;
        return Ok(Recovered::Unmoved {
            what,
            why: "HEAD is where git-loaf's last recorded operation left it".into(),
        });
    }
    let last_move = repo.reflog("HEAD").ok().and_then(|log| {
        log.get(0).map(|e| {
            (
                e.message().ok().flatten().unwrap_or("").to_owned(),
                e.id_old(),
                e.id_new(),
            )
        })
    });
    let Some((message, old, new)) = last_move else {
        return Err(PublishError::DamagedJournal(Undecided {
            path: journal.to_path_buf(),
            what,
        }));
    };
    if !message.starts_with("git-loaf ") || new != head {
        drop_journal(repo)?;
        return Ok(Recovered::Unmoved {
            what,
            why: format!("HEAD's last move was not git-loaf's ({message})"),
        });
    }
    let skipped = write_between(repo, &root, old, new)?;
    drop_journal(repo)?;
    Ok(Recovered::Unrecorded {
        what,
        message,
        old: old.to_string(),
        new: new.to_string(),
        skipped,
    })
}

/// Writes the files and index entries that differ between commits `old` and `new`, each
/// only where it still holds `old`'s version (see [`write_files`]).
fn write_between(
    repo: &Repository,
    root: &Path,
    old: Oid,
    new: Oid,
) -> Result<Vec<PathBuf>, PublishError> {
    let tree_of = |commit: Oid| -> Result<String, git2::Error> {
        if commit.is_zero() {
            return Ok(repo.treebuilder(None)?.write()?.to_string());
        }
        Ok(repo.find_commit(commit)?.tree_id().to_string())
    };
    let (from, to) = (tree_of(old)?, tree_of(new)?);
    let state = |tree: &str, head: Oid| UserState {
        head: Some(head.to_string()),
        work: tree.to_owned(),
        index: tree.to_owned(),
    };
    let t = Transition {
        workdir: root.to_path_buf(),
        ref_name: "HEAD".into(),
        old: Some(old.to_string()),
        new: Some(new.to_string()),
        from_work: from.clone(),
        from_index: from.clone(),
        to_work: to.clone(),
        to_index: to.clone(),
        message: String::new(),
        // Never logged: only names the files written on the way.
        op: OpEntry {
            id: format!("recovered-{new}"),
            kind: OpKind::Apply,
            target: None,
            time: 0,
            workdir: root.display().to_string(),
            ref_name: "HEAD".into(),
            summary: String::new(),
            before: state(&from, old),
            after: state(&to, new),
            extras: Default::default(),
            reply_key: None,
        },
    };
    let paths = Paths::of(repo, &t)?;
    let lock = IndexLock::acquire(repo)?;
    let mut index = lock.read(repo)?;
    let checker = Checker::new(repo, root)?;
    let skipped = write_files(repo, &t, &paths, &mut index, &checker, None)?;
    lock.commit(&mut index)?;
    Ok(skipped)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::testing::{committed_repo as repo, git};
    use crate::tx::publish::move_ref;
    use crate::tx::publish::tests::{ai_commit, journal_of, transition, tree_of};
    use crate::tx::transition::write_journal;

    /// A journal that cannot be read for another reason than being absent (here a folder in
    /// its place) is an error, never taken for "nothing to recover".
    #[test]
    fn a_journal_that_cannot_be_read_is_an_error_not_nothing() {
        let dir = crate::git::testing::committed_repo();
        let repo = Repository::open(dir.path()).expect("open");
        let journal = crate::tx::transition::journal_path(&repo);
        std::fs::create_dir_all(journal.join("in-the-way")).expect("a folder");
        assert!(
            recover(&repo).is_err(),
            "a folder in the journal's place was not an error"
        );
    }

    /// Killed after removing a file but before removing the folders it left empty: the
    /// roll-forward removes them (an undo must not leave empty folders behind).
    #[test]
    fn recovery_removes_the_empty_folders_a_killed_deletion_left() {
        let dir = repo();
        let root = dir.path();
        crate::git::testing::write_file(root, "d/e/f.txt", "f\n");
        git(root, &["add", "-A"]);
        git(root, &["commit", "-q", "-m", "deep"]);
        let repo = Repository::open(root).expect("open");
        let head = repo.refname_to_id("HEAD").expect("head").to_string();
        let with = tree_of(&repo, &head);
        git(root, &["rm", "-q", "d/e/f.txt"]);
        git(root, &["commit", "-q", "-m", "gone"]);
        let without_commit = git(root, &["rev-parse", "HEAD"]).trim().to_owned();
        let without = tree_of(&repo, &without_commit);
        git(root, &["reset", "-q", "--hard", &head]);
        // The undo's ref moved and its file went; the kill came before its folders did.
        let t = transition(
            root,
            &head,
            &without_commit,
            (&with, &with),
            (&without, &without),
        );
        write_journal(&journal_path(&repo), &journal_of(&t)).expect("journal");
        move_ref(&repo, &t).expect("ref");
        std::fs::remove_file(root.join("d/e/f.txt")).expect("rm");
        assert!(root.join("d/e").is_dir());
        assert!(matches!(
            recover(&repo).expect("recover"),
            Recovered::RolledForward { .. }
        ));
        assert!(!root.join("d").exists(), "no empty folder left behind");
        assert_eq!(git(root, &["status", "--porcelain"]), "");
    }

    #[test]
    fn recovery_rolls_forward_after_the_ref_moved_and_back_before() {
        let dir = repo();
        let root = dir.path();
        let repo = Repository::open(root).expect("open");
        let t = ai_commit(
            &repo,
            root,
            &[
                ("a.txt", b"model\n", 0o100644),
                ("new.txt", b"model\n", 0o100644),
            ],
        );
        // Crash after the journal, before the ref: rolled back.
        write_journal(&journal_path(&repo), &journal_of(&t)).expect("journal");
        assert_eq!(recover(&repo).expect("recover"), Recovered::RolledBack);
        assert_eq!(git(root, &["status", "--porcelain"]), "");
        // Crash after the ref moved, one file written and another edited by the user since.
        write_journal(&journal_path(&repo), &journal_of(&t)).expect("journal");
        move_ref(&repo, &t).expect("ref");
        std::fs::write(root.join("new.txt"), "model\n").expect("write");
        std::fs::write(root.join("a.txt"), "user\n").expect("write");
        let recovered = recover(&repo).expect("recover");
        assert_eq!(
            recovered,
            Recovered::RolledForward {
                skipped: vec![PathBuf::from("a.txt")]
            }
        );
        assert_eq!(
            std::fs::read_to_string(root.join("a.txt")).ok().as_deref(),
            Some("user\n"),
            "the user's edit kept"
        );
        assert_eq!(git(root, &["status", "--porcelain"]), " M a.txt\n");
        assert_eq!(oplog::newest_id(&repo).expect("log").as_deref(), Some("t1"));
        assert_eq!(recover(&repo).expect("again"), Recovered::Nothing);
    }

    /// Killed between writing a file's new content beside it and the rename: recovery
    /// removes that file (the roll-forward writes it again), leaving nothing but the tree.
    #[test]
    fn recovery_removes_new_content_a_kill_left_beside_its_file() {
        let dir = repo();
        let root = dir.path();
        let repo = Repository::open(root).expect("open");
        let t = ai_commit(&repo, root, &[("a.txt", b"model\n", 0o100644)]);
        let beside = temp_beside(&t, Path::new("a.txt"));
        assert_eq!(beside, root.join(".a.txt.loaf-t1"));
        for moved in [false, true] {
            write_journal(&journal_path(&repo), &journal_of(&t)).expect("journal");
            if moved {
                move_ref(&repo, &t).expect("ref");
            }
            std::fs::write(&beside, "model\n").expect("half-written");
            recover(&repo).expect("recover");
            assert!(!beside.exists(), "removed (ref moved: {moved})");
        }
        assert_eq!(
            std::fs::read_to_string(root.join("a.txt")).ok().as_deref(),
            Some("model\n")
        );
        assert_eq!(git(root, &["status", "--porcelain"]), "");
    }
}
