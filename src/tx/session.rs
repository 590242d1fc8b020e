//! What every loaf command does first: find the repository, take its lock, and finish or
//! drop whatever a crashed operation left (journal, stage).

use std::path::{Path, PathBuf};
use std::time::Duration;

use git2::Repository;

use super::publish::PublishError;
use super::recovery::{self, Recovered};
use crate::git::lock::{LockError, RepoLock};
use crate::notice::{Notice, NoticeKind};

/// How long a command waits for another loaf operation to finish before giving up.
pub(crate) const LOCK_WAIT: Duration = Duration::from_secs(3);

/// Why a loaf command could not run. [`TxError::is_refusal`] tells the refusals (exit 3)
/// from the rest (exit 2); nothing of the user's was changed either way.
#[derive(Debug, thiserror::Error)]
pub enum TxError {
    /// Not inside a git repository.
    #[error("{} is not inside a git repository", .path.display())]
    NotARepository {
        /// Where the command ran.
        path: PathBuf,
        /// The command (`apply`, `undo`, `log`…): only `apply` has a way to work without git.
        command: String,
    },
    /// A bare repository has no working tree to apply to.
    #[error("this is a bare repository: there is no working tree to change")]
    Bare,
    /// Another loaf operation holds the lock, or the lock file is unusable.
    #[error(transparent)]
    Lock(#[from] LockError),
    /// Refused for safety, with what to do instead.
    #[error("{message}")]
    Refused {
        /// What was refused and why.
        message: String,
        /// What to do next.
        hint: String,
    },
    /// Cannot be done as asked (nothing to undo, unknown revision…).
    #[error("{message}")]
    Invalid {
        /// What is wrong.
        message: String,
        /// What to do next.
        hint: String,
    },
    /// loaf.yml is broken.
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    /// The staging worktree failed.
    #[error(transparent)]
    Stage(#[from] super::stage::StageError),
    /// Listing or writing ignored files failed.
    #[error(transparent)]
    Visible(#[from] crate::tx::ignored_changes::VisibleError),
    /// Publishing failed in a way that is not a refusal.
    #[error(transparent)]
    Publish(#[from] PublishError),
    /// git failed.
    #[error("git: {}", crate::git::words::plain(.0))]
    Git(git2::Error),
}

impl From<git2::Error> for TxError {
    /// git's error; a missing identity (no user.name/user.email) as git says it, with what
    /// to run.
    fn from(error: git2::Error) -> Self {
        match crate::git::identity::Missing::from_error(&error) {
            Some(missing) => TxError::Invalid {
                message: missing.message(),
                hint: missing.hint(),
            },
            None => TxError::Git(error),
        }
    }
}

impl From<crate::git::states::Refused> for TxError {
    fn from(refused: crate::git::states::Refused) -> Self {
        TxError::Refused {
            message: refused.message,
            hint: refused.hint,
        }
    }
}

impl TxError {
    /// The refusal for index entries staged with `git add -N` (intent to add), which a
    /// checkpoint cannot record exactly: `command` is the one to run again.
    pub fn intent_to_add(paths: &[String], command: &str) -> TxError {
        TxError::Refused {
            message: format!(
                "{} added with `git add -N` (intent to add): git-loaf cannot record that state exactly, so it could not be restored",
                paths.join(", ")
            ),
            hint: format!(
                "`git add` those files (or `git reset` them to untrack), then run `git loaf {command}` again"
            ),
        }
    }

    /// A checkpoint that could not be taken: when it is the index that cannot be recorded
    /// (a merge or rebase left conflict entries in it), a refusal saying how to finish.
    pub fn from_checkpoint(error: git2::Error) -> TxError {
        if error.class() == git2::ErrorClass::Index {
            TxError::Refused {
                message: format!("the index cannot be recorded: {}", error.message()),
                hint: "finish or abort the merge/rebase in progress (resolve conflicts and `git add` them), then apply again".into(),
            }
        } else {
            TxError::Git(error)
        }
    }

    /// Whether this is a refusal for safety (exit 3) rather than an error (exit 2).
    pub fn is_refusal(&self) -> bool {
        matches!(
            self,
            TxError::Refused { .. }
                | TxError::Lock(LockError::Busy { .. } | LockError::Starting)
                | TxError::Publish(
                    PublishError::IndexLocked(_)
                        | PublishError::InTheWay(_)
                        | PublishError::DamagedLog(_)
                        | PublishError::DamagedJournal(_)
                )
        )
    }

    /// What the user should do next.
    pub fn hint(&self) -> String {
        match self {
            TxError::NotARepository { command, .. } if command == "apply" => {
                "run it inside a git repository (`git init` makes one), or use `git loaf apply --no-commit` to change files without git".into()
            }
            TxError::NotARepository { command, .. } => format!(
                "`git loaf {command}` works on a repository's git-loaf history: run it inside the repository (cd into its working tree)"
            ),
            TxError::Bare => "run it in a working tree of this repository (`git worktree add`)".into(),
            TxError::Lock(LockError::Busy { .. } | LockError::Starting) => {
                "wait for it to finish and run the command again".into()
            }
            TxError::Lock(LockError::Io { .. }) => {
                "check that the git directory is writable and that the lock is a plain file (git-loaf makes it when it is missing: anything else at its path can be removed)".into()
            }
            TxError::Refused { hint, .. } | TxError::Invalid { hint, .. } => hint.clone(),
            TxError::Config(_) => {
                "fix loaf.yml (see loaf.yml.example for every key), or move it away to use the defaults".into()
            }
            TxError::Publish(PublishError::InTheWay(_)) => {
                "nothing was changed; move those files elsewhere (git does not track them, so nothing else keeps a copy), then run the command again".into()
            }
            TxError::Publish(PublishError::IndexLocked(path)) => format!(
                "wait for that git command to finish and try again; if none is running (a crash), remove {}",
                path.display()
            ),
            TxError::Publish(PublishError::DamagedLog(_)) => format!(
                "nothing was changed; if you know its last good entry, `git update-ref {log} <that commit>`; otherwise `git update-ref -d {log}` starts a new log (undo and redo of earlier operations are lost; your branches and files are not touched), then run the command again",
                log = super::oplog::OPLOG_REF
            ),
            TxError::Publish(PublishError::DamagedJournal(undecided)) => format!(
                "check `git status` and `git log -1`: if HEAD holds a git-loaf commit whose files are not in your working tree, `git checkout HEAD -- <path>` writes them (or `git reset --keep HEAD~1` takes the commit back); then remove {} and run the command again",
                undecided.path.display()
            ),
            TxError::Publish(PublishError::Unfinished(_)) => {
                "the change was published but not finished: the next git-loaf command that changes anything (apply, undo, step-back, …) finishes it first; `git status` shows the state now".into()
            }
            TxError::Stage(_) | TxError::Visible(_) | TxError::Publish(_) | TxError::Git(_) => {
                "nothing of yours was changed; run `git status` to check the repository, then try again (LOAF_LOG=debug shows more)".into()
            }
        }
    }
}

/// An open repository with the loaf lock held.
pub struct Session {
    /// The user's repository.
    pub repo: Repository,
    /// Its working tree root, as the model sees it (no trailing separator).
    pub root: PathBuf,
    /// Things to tell the user on stderr (a crashed operation finished, …).
    pub notices: Vec<Notice>,
    _lock: RepoLock,
}

impl Drop for Session {
    /// Long-running filter processes (git-lfs, git-crypt) started for this operation are
    /// told to finish and waited for, as git does at the end of a command.
    fn drop(&mut self) {
        crate::git::filter_process::finish();
    }
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").field("root", &self.root).finish()
    }
}

impl Session {
    /// The repository's common git dir (shared by all its worktrees): where git-loaf keeps
    /// its own state.
    pub fn common_dir(&self) -> &Path {
        self.repo.commondir()
    }

    /// Opens the repository containing `cwd`, takes its lock for `command`, recovers from a
    /// crashed operation, and refuses while the user is in the middle of a merge, rebase,
    /// cherry-pick, revert or bisect, or has unresolved conflicts
    /// ([`crate::git::states::refuse_in_progress`]).
    pub fn begin(cwd: &Path, command: &str) -> Result<Session, TxError> {
        let repo = crate::git::repo::discover(cwd).map_err(|_| TxError::NotARepository {
            path: cwd.to_path_buf(),
            command: command.to_owned(),
        })?;
        let root: PathBuf = repo.workdir().ok_or(TxError::Bare)?.components().collect();
        let lock = RepoLock::acquire(repo.commondir(), command, LOCK_WAIT)?;
        crate::git::durable::mark_start(lock.created_at());
        let mut notices = Vec::new();
        if let Some(dead) = lock.recovered() {
            let removed = remove_stale_git_locks(&repo, dead.since);
            if !removed.is_empty() {
                notices.push(Notice::new(
                    NoticeKind::Recovered,
                    format!(
                        "an earlier git-loaf operation (pid {}) died holding git lock files; removed {}",
                        dead.pid,
                        removed.join(", ")
                    ),
                ));
            }
        }
        // A damaged log is refused before anything, recovery included, writes to it.
        super::oplog::check(&repo).map_err(|e| TxError::Publish(PublishError::DamagedLog(e)))?;
        notices.extend(recovery_notice(recovery::recover(&repo)?));
        // After recovery, which only finishes git-loaf's own interrupted work: the user's
        // merge, rebase or conflicts are theirs to finish before anything else moves.
        // Parse the index once, into a private copy that publish can write under
        // index.lock (a failure only costs a second parse later).
        let _ = crate::git::index_lock::adopt(&repo);
        crate::git::states::refuse_in_progress(&repo, command)?;
        Ok(Session {
            repo,
            root,
            notices,
            _lock: lock,
        })
    }
}

/// What to tell the user about what recovery did; `None` when there was nothing to do.
fn recovery_notice(recovered: Recovered) -> Option<Notice> {
    let names = |skipped: &[PathBuf]| {
        skipped
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let text = match recovered {
        Recovered::Nothing => return None,
        Recovered::RolledBack => {
            "an earlier git-loaf operation was interrupted before it changed anything; cleaned up"
                .to_owned()
        }
        Recovered::Superseded { commit, now } => format!(
            "an earlier git-loaf operation was interrupted after it published commit {}, and the branch has moved on since (now {}) before its files and index were all written: check `git status`; `git diff {} {}` shows what the commit made after it differs",
            crate::git::repo::short_id(&commit),
            crate::git::repo::short_id(&now),
            crate::git::repo::short_id(&commit),
            crate::git::repo::short_id(&now),
        ),
        Recovered::RolledForward { skipped } => {
            let mut notice = "an earlier git-loaf operation was interrupted after it committed; its files are now written".to_owned();
            if !skipped.is_empty() {
                notice.push_str(&format!(
                    " (except {}, which you changed meanwhile: `git diff` shows your version against it)",
                    names(&skipped)
                ));
            }
            notice
        }
        Recovered::Unmoved { what, why } => format!(
            "an earlier git-loaf operation was interrupted and its journal was {what} (cut short, e.g. by a power loss); it did not move HEAD ({why}), so nothing of it was published; cleaned up"
        ),
        Recovered::Unrecorded {
            what,
            message,
            old,
            new,
            skipped,
        } => {
            let mut notice = format!(
                "an earlier git-loaf operation ({message}) was interrupted after it moved HEAD from {} to {}, and its journal was {what} (cut short, e.g. by a power loss): its files and index are now written",
                crate::git::repo::short_id(&old),
                crate::git::repo::short_id(&new),
            );
            if !skipped.is_empty() {
                notice.push_str(&format!(
                    " (except {}, which held your own changes: `git diff` shows them against it)",
                    names(&skipped)
                ));
            }
            notice.push_str(&format!(
                "; it is not in git-loaf's log, so `git loaf undo` cannot take it back: `git reset --keep {}` does",
                crate::git::repo::short_id(&old)
            ));
            notice
        }
    };
    Some(Notice::new(NoticeKind::Recovered, text))
}

/// Opens the repository containing `cwd` without the lock: for the commands that only read
/// (`log`, `show`), which may run while another operation does.
pub fn open(cwd: &Path, command: &str) -> Result<Repository, TxError> {
    crate::git::repo::discover(cwd).map_err(|_| TxError::NotARepository {
        path: cwd.to_path_buf(),
        command: command.to_owned(),
    })
}

/// Removes the `.lock` files a killed git-loaf process may have left: in the stage (ours
/// alone) always; in the user's repository only those created while that process ran
/// (modified at or after `since`, in seconds since the epoch) that no running process holds
/// open (git and libgit2 keep a lock file open until they commit or drop it), so that a
/// lock of one of the user's own git commands is never taken away. Returns what was
/// removed.
fn remove_stale_git_locks(repo: &Repository, since: u64) -> Vec<String> {
    let common = repo.commondir();
    let git_dir = repo.path();
    let stage_admin = common.join("worktrees").join("loaf-stage");
    let mut removed = Vec::new();
    let ours = [
        stage_admin.join("index.lock"),
        stage_admin.join("HEAD.lock"),
        common.join("refs/heads/loaf-stage.lock"),
        // libgit2's lock on the private index copy (`index_lock::adopt`): killed while
        // writing it, the next operation could not write its copy ("index is locked").
        crate::git::index_lock::scratch_lock_path(git_dir),
    ];
    for path in ours {
        if std::fs::remove_file(&path).is_ok() {
            removed.push(path.display().to_string());
        }
    }
    let mut users = vec![
        git_dir.join("index.lock"),
        git_dir.join("HEAD.lock"),
        common.join("packed-refs.lock"),
        common.join("config.lock"),
        common.join("refs/loaf/oplog.lock"),
        common.join("refs/notes/loaf.lock"),
    ];
    if let Ok(head) = repo.find_reference("HEAD")
        && let Ok(Some(branch)) = head.symbolic_target()
    {
        users.push(common.join(format!("{branch}.lock")));
    }
    for path in users {
        let created_during = std::fs::metadata(&path)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .is_some_and(|t| t.as_secs() >= since);
        if created_during && !held_open(&path) && std::fs::remove_file(&path).is_ok() {
            removed.push(path.display().to_string());
        }
    }
    removed
}

/// Whether any process has `path` open (Linux: `/proc/*/fd`). When that cannot be known, it
/// is assumed open: a lock is then left for the user (git's message names it).
fn held_open(path: &Path) -> bool {
    let Ok(processes) = std::fs::read_dir("/proc") else {
        return true;
    };
    let Ok(target) = path.canonicalize() else {
        return false; // gone already
    };
    for process in processes.flatten() {
        let Ok(fds) = std::fs::read_dir(process.path().join("fd")) else {
            continue; // another user's process, or exited meanwhile
        };
        if fds
            .flatten()
            .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|link| link == target))
        {
            return true;
        }
    }
    false
}
