//! `git loaf saved` and `git loaf restore <id>` (docs/history.md): the work git-loaf moved out of
//! the user's files to make room (a forced undo, a step-back onto a commit that changes a file
//! being edited, a step-forward that could not merge, a walk that could not step forward),
//! listed, and put back exactly as it was: untracked files untracked, unstaged changes
//! unstaged, staged ones staged.
//!
//! restore: lock → read the saved work → checkpoint the user's files → refuse, naming them,
//! the paths where the user has changes of their own that putting it back would overwrite →
//! publish the files and index with the saved paths put back, as an operation of the log
//! (`git loaf undo` takes it back, and lists the work again) → the saved ref put away under
//! `refs/loaf/restored/<id>`: nothing is left to restore.

use std::path::{Path, PathBuf};

use git2::{ObjectType, Repository, Tree};

use super::{new_id, now_secs};
use crate::git::treebuild::{Value, tree_with_values};
use crate::git::{Oid, refs};
use crate::notice::Notice;
use crate::tx::carry::Work;
use crate::tx::checkpoint::{self, Checkpoint};
use crate::tx::oplog::{OpEntry, OpKind, UserState};
use crate::tx::publish::{PublishError, Transition, left_alone_notice};
use crate::tx::saved::{self, SavedWork};
use crate::tx::session::{self, Session, TxError};

/// One piece of saved work, as `git loaf saved` lists it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub(crate) struct Listed {
    /// The id `git loaf restore` takes.
    pub id: String,
    /// What saved it.
    pub why: String,
    /// When (seconds since the epoch).
    pub time: i64,
    /// The paths it holds changes to.
    pub paths: Vec<String>,
    /// Whether it is commits of the user's, not uncommitted work (nothing to restore).
    pub commits: bool,
}

/// The saved work in the repository containing `cwd`, oldest first.
pub fn list(cwd: &Path) -> Result<Vec<Listed>, TxError> {
    let repo = session::open(cwd, "saved")?;
    listed(&repo)
}

/// [`list`] on an open repository (`git loaf status` shows it too).
pub fn listed(repo: &Repository) -> Result<Vec<Listed>, TxError> {
    let mut out = Vec::new();
    for work in saved::list(repo)? {
        let why = match work.commits {
            true => format!(
                "commits you made, saved by a forced undo (`git branch <name> {}{}` keeps them)",
                saved::SAVED_PREFIX,
                work.id
            ),
            false => work.why.trim_start_matches("loaf: ").to_owned(),
        };
        out.push(Listed {
            why,
            commits: work.commits,
            paths: shown(&work.paths(repo)?),
            id: work.id,
            time: work.time,
        });
    }
    Ok(out)
}

/// What `git loaf restore` put back.
#[derive(Debug)]
pub(crate) struct Restored {
    /// The saved work's id.
    pub id: String,
    /// The restore's id in the operation log.
    pub op: String,
    /// Files put back with their changes unstaged.
    pub unstaged: Vec<String>,
    /// Files put back untracked.
    pub untracked: Vec<String>,
    /// Files put back with their changes staged.
    pub staged: Vec<String>,
    /// Paths that already held the saved version.
    pub already: Vec<String>,
    /// Things to tell the user on stderr.
    pub notices: Vec<Notice>,
}

/// `git loaf restore <id>`: puts the saved work `id` back into the files and index.
pub fn restore(cwd: &Path, id: &str) -> Result<Restored, TxError> {
    let mut session = Session::begin(cwd, "restore")?;
    let repo = &session.repo;
    let Some(work) = saved::read(repo, id)? else {
        return Err(TxError::Invalid {
            message: format!("there is no saved work '{id}'"),
            hint: "`git loaf saved` lists the saved work and its ids".into(),
        });
    };
    if work.commits {
        return Err(TxError::Invalid {
            message: format!(
                "{id} holds commits you made (saved by a forced undo), not uncommitted work"
            ),
            hint: format!(
                "`git branch <name> {}{id}` puts them on a branch",
                saved::SAVED_PREFIX
            ),
        });
    }
    checkpoint::refuse_intent_to_add(repo)
        .map_err(|paths| TxError::intent_to_add(&paths, "restore"))?;
    let cp = checkpoint::take(repo).map_err(TxError::from_checkpoint)?;
    let plan = RestorePlan::of(repo, &work, &cp)?;
    if !plan.overwritten.is_empty() {
        return Err(TxError::Refused {
            message: format!(
                "cannot restore {id}: it would overwrite your uncommitted changes in {}",
                shown(&plan.overwritten).join(", ")
            ),
            hint: format!(
                "commit, stash or move those changes away, then run `git loaf restore {id}` again; nothing was changed"
            ),
        });
    }
    let mut notices = std::mem::take(&mut session.notices);
    let to = Work {
        work: tree_with_values(repo, cp.work_tree, &plan.work)?,
        index: tree_with_values(repo, cp.index_tree, &plan.index)?,
    };
    let op = new_id(&format!("restore {id}"));
    if to.work != cp.work_tree || to.index != cp.index_tree {
        let transition = transition(&session, &op, id, &cp, to)?;
        let skipped = crate::tx::publish::publish(repo, &transition, true)
            .map_err(|e| refuse_publish(e, id))?;
        notices.extend(left_alone_notice(&skipped));
    }
    saved::put_away(repo, id)?;
    Ok(Restored {
        id: id.to_owned(),
        op,
        unstaged: shown(&plan.unstaged),
        untracked: shown(&plan.untracked),
        staged: shown(&plan.staged),
        already: shown(&plan.already),
        notices,
    })
}

/// What putting saved work back changes, path by path.
#[derive(Default)]
struct RestorePlan {
    /// New values for the working tree and the index.
    work: Vec<(PathBuf, Value)>,
    index: Vec<(PathBuf, Value)>,
    /// Paths put back with the change staged, or not.
    staged: Vec<PathBuf>,
    unstaged: Vec<PathBuf>,
    untracked: Vec<PathBuf>,
    /// Paths already as saved.
    already: Vec<PathBuf>,
    /// Paths where the user has changes of their own that putting it back would overwrite.
    overwritten: Vec<PathBuf>,
}

impl RestorePlan {
    /// Each path of the saved work gets its saved file; its index entry is the saved one
    /// when the saved change was staged, and stays as it is otherwise (HEAD's: an untracked
    /// file stays untracked). A path whose file or index entry differs from HEAD and from
    /// what would be put there is the user's: overwritten, refused.
    fn of(
        repo: &Repository,
        work: &SavedWork,
        cp: &Checkpoint,
    ) -> Result<RestorePlan, git2::Error> {
        let tree = |id: Oid| repo.find_tree(id);
        let (head, now_work, now_index) = (
            tree(cp.head_tree)?,
            tree(cp.work_tree)?,
            tree(cp.index_tree)?,
        );
        let (base_index, saved_work, saved_index) = (
            tree(work.base.index)?,
            tree(work.work.work)?,
            tree(work.work.index)?,
        );
        let mut plan = RestorePlan::default();
        for path in work.paths(repo)? {
            let at = |t: &Tree<'_>| crate::git::treediff::blob_at(t, &path);
            let (head_value, file, entry) = (at(&head), at(&now_work), at(&now_index));
            let want_file = at(&saved_work);
            let staged = at(&saved_index) != at(&base_index);
            let want_entry = if staged { at(&saved_index) } else { entry };
            let theirs = |now: Value, want: Value| now != head_value && now != want;
            if theirs(file, want_file)
                || (staged && theirs(entry, want_entry))
                || in_the_way(&now_work, &head, &path)
            {
                plan.overwritten.push(path);
                continue;
            }
            if file == want_file && entry == want_entry {
                plan.already.push(path);
                continue;
            }
            plan.work.push((path.clone(), want_file));
            plan.index.push((path.clone(), want_entry));
            if staged {
                plan.staged.push(path);
            } else if want_entry.is_none() && want_file.is_some() {
                plan.untracked.push(path);
            } else {
                plan.unstaged.push(path);
            }
        }
        Ok(plan)
    }
}

/// Whether the user's files have something of their own where `path` would go: a changed or
/// untracked file on the way to it, or a folder in its place.
fn in_the_way(now: &Tree<'_>, head: &Tree<'_>, path: &Path) -> bool {
    let is_folder = |t: &Tree<'_>, p: &Path| {
        t.get_path(p)
            .is_ok_and(|e| e.kind() == Some(ObjectType::Tree))
    };
    let id = |t: &Tree<'_>, p: &Path| t.get_path(p).ok().map(|e| e.id());
    if is_folder(now, path) && id(now, path) != id(head, path) {
        return true;
    }
    path.ancestors().skip(1).any(|folder| {
        !folder.as_os_str().is_empty()
            && !is_folder(now, folder)
            && now.get_path(folder).is_ok()
            && id(now, folder) != id(head, folder)
    })
}

/// The move from the user's files `cp` to `to`, HEAD staying where it is.
fn transition(
    session: &Session,
    op: &str,
    id: &str,
    cp: &Checkpoint,
    to: Work,
) -> Result<Transition, TxError> {
    let (ref_name, head) = refs::head_ref(&session.repo)?;
    let head = head.map(|h| h.to_string());
    let workdir = session.root.display().to_string();
    Ok(Transition {
        workdir: session.root.clone(),
        ref_name: ref_name.clone(),
        old: head.clone(),
        new: head.clone(),
        from_work: cp.work_tree.to_string(),
        from_index: cp.index_tree.to_string(),
        to_work: to.work.to_string(),
        to_index: to.index.to_string(),
        message: format!("git-loaf restore {id}"),
        op: OpEntry {
            id: op.to_owned(),
            kind: OpKind::Restore,
            target: Some(id.to_owned()),
            time: now_secs(),
            workdir,
            ref_name,
            summary: format!("restore saved work {id}"),
            before: UserState {
                head: head.clone(),
                work: cp.work_tree.to_string(),
                index: cp.index_tree.to_string(),
            },
            after: UserState {
                head,
                work: to.work.to_string(),
                index: to.index.to_string(),
            },
            extras: Default::default(),
            reply_key: None,
        },
    })
}

/// A publish that found the user changing things meanwhile is a refusal (nothing changed).
fn refuse_publish(error: PublishError, id: &str) -> TxError {
    match error {
        PublishError::Changed(_) | PublishError::Moved { .. } => TxError::Refused {
            message: format!("{error}; nothing was changed"),
            hint: format!("run `git loaf restore {id}` again"),
        },
        other => TxError::Publish(other),
    }
}

fn shown(paths: &[PathBuf]) -> Vec<String> {
    paths.iter().map(|p| p.display().to_string()).collect()
}
