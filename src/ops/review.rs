//! `git loaf review` (docs/review.md): keep or reject an AI commit's change hunk by hunk,
//! and tell the model what was rejected and why.
//!
//! list the commit's hunks (read only) → lock → refuse while stepped back or while a turn is
//! being recorded → the rejected hunks taken out of each file (the parent's version with the
//! kept hunks laid on it) → when the commit is the unpushed tip, a commit holding only the
//! kept hunks replaces it (trailer and note say what was rejected); otherwise a new commit
//! reverts the rejected hunks → the working tree and index follow, the user's uncommitted
//! work merged back (a rejected hunk under an uncommitted edit of the user's is refused) →
//! publish, one entry of the operation log (`undo` brings the hunks back, `redo` removes
//! them again) → the report for the model stored, delivered once ([`report`]).

pub mod answer;
pub mod hunks;
mod landing;
pub mod report;
mod target;

use std::path::{Path, PathBuf};

use super::{new_id, now_secs};
use crate::git::{Oid, Repository, refs, short_oid, treediff};
use crate::notice::{Notice, NoticeKind};
use crate::tx::checkpoint;
use crate::tx::commits::{self, CommitInfo};
use crate::tx::merge::{self, Overlap};
use crate::tx::oplog::{OpEntry, OpKind, UserState};
use crate::tx::publish::{self, PublishError, Transition};
use crate::tx::session::{self, Session, TxError};
use hunks::{Hunk, Line, Pick};
use landing::{kept_entries, revert, rewrite};
use report::RejectedHunk;
use target::{
    loaf_id, not_on_branch, overlaps, parent_tree, refuse_states, refuse_stepped_back, target,
};

/// The trailer a review adds: on a rewritten commit, what it rejected; on a revert commit,
/// the review's id.
pub const REVIEW_TRAILER: &str = "Loaf-Review";
/// On a revert commit: the AI commit whose hunks it reverts.
pub const REVIEWED_TRAILER: &str = "Loaf-Reviewed";

/// Each file with a rejected hunk and its entry once the hunks are out.
pub(super) type Kept = Vec<(PathBuf, crate::git::hunks::Entry)>;

/// How far back the default (the last apply or turn) is looked for.
pub(super) const SEARCH_LIMIT: usize = 1000;

/// An AI commit's hunks.
#[derive(Debug, Clone)]
pub struct Listing {
    /// The commit.
    pub commit: Oid,
    /// Its apply (or turn) id.
    pub apply: String,
    /// Its subject.
    pub subject: String,
    /// Its hunks, in diff order.
    pub hunks: Vec<Hunk>,
    /// Where the command runs, relative to the root (for `PATH` arguments).
    pub cwd_in_repo: PathBuf,
}

/// What to do with one hunk that is not kept whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// The hunk's id.
    pub hunk: usize,
    /// `None`: rejected whole; else its lines as kept (a split or an edit), starting from
    /// the same parent lines.
    pub kept: Option<Vec<Line>>,
    /// Why (may be empty).
    pub reason: String,
}

/// How the review reached the history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Landed {
    /// The tip was replaced by a commit with the kept hunks.
    Rewritten {
        /// The AI commit.
        old: Oid,
        /// The branch's new tip.
        new: Oid,
    },
    /// No hunk was kept: the tip (`old`) was dropped, the branch is at its parent.
    Dropped {
        /// The AI commit.
        old: Oid,
        /// Its parent, the branch's new tip.
        parent: Oid,
    },
    /// A new commit reverts the rejected hunks.
    Reverted {
        /// The revert commit.
        commit: Oid,
    },
}

/// What a review did.
#[derive(Debug)]
pub struct Reviewed {
    /// The review's id (its operation log entry).
    pub id: String,
    /// The commit reviewed.
    pub commit: Oid,
    /// How it landed.
    pub landed: Landed,
    /// The hunks rejected.
    pub rejected: Vec<RejectedHunk>,
    /// The report for the model.
    pub report: String,
    /// Things to tell the user.
    pub notices: Vec<Notice>,
}

/// The hunks of the AI commit `id` names (an apply or turn id, a commit; default: the last
/// apply or turn on the branch). Only reads.
pub fn list(cwd: &Path, id: Option<&str>) -> Result<Listing, TxError> {
    let repo = session::open(cwd, "review")?;
    // Without libgit2's trailing separator: the operation log names the folder so.
    let root: PathBuf = repo.workdir().ok_or(TxError::Bare)?.components().collect();
    // Stepped back, "the last apply" would be found below the step: the wrong commit.
    refuse_stepped_back(&repo, &root)?;
    listing(&repo, cwd, id)
}

fn listing(repo: &Repository, cwd: &Path, id: Option<&str>) -> Result<Listing, TxError> {
    let commit = target(repo, id)?;
    let apply = loaf_id(&commit).unwrap_or_default();
    let files = crate::git::hunks::patches(repo, parent_tree(repo, &commit)?, commit.tree)?;
    let root = repo.workdir().ok_or(TxError::Bare)?;
    let cwd_in_repo = relative_to(cwd, root);
    Ok(Listing {
        commit: commit.id,
        apply,
        subject: commit.summary,
        hunks: hunks::number(files),
        cwd_in_repo,
    })
}

/// `cwd` relative to `root` (both made canonical where they can be); the root itself when
/// it is not inside.
fn relative_to(cwd: &Path, root: &Path) -> PathBuf {
    let canonical = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    canonical(cwd)
        .strip_prefix(canonical(root))
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// The verdicts of a non-interactive review: every hunk `picks` names rejected whole, with
/// `reason`. Absolute paths are taken relative to the root when they are inside it.
pub fn rejecting(
    listing: &Listing,
    root: &Path,
    picks: &[String],
    reason: &str,
) -> Result<Vec<Verdict>, TxError> {
    // An absolute path inside the root, as the model names files: made relative to where
    // the command runs. One outside stays absolute, and is refused as outside.
    let up = "../".repeat(listing.cwd_in_repo.components().count());
    let picks: Vec<Pick> = picks
        .iter()
        .map(|p| match Path::new(p).strip_prefix(root) {
            Ok(inner) => Pick::parse(&format!("{up}{}", inner.display())),
            Err(_) => Pick::parse(p),
        })
        .collect();
    let cwd = listing.cwd_in_repo.clone();
    let ids = hunks::picked(&listing.hunks, &picks, &cwd)?;
    Ok(ids
        .into_iter()
        .map(|hunk| Verdict {
            hunk,
            kept: None,
            reason: reason.to_owned(),
        })
        .collect())
}

/// Reviews `listed` (as [`list`] returned it) with `verdicts`: the rejected hunks leave the
/// branch and the working tree, as one operation.
pub fn review(cwd: &Path, listed: &Listing, verdicts: &[Verdict]) -> Result<Reviewed, TxError> {
    if verdicts.is_empty() {
        return Err(TxError::Invalid {
            message: "no hunk was rejected: nothing to change".into(),
            hint: "`git loaf review --reject PATH[:LINE]` names the hunks to take out".into(),
        });
    }
    let session = Session::begin(cwd, "review")?;
    let repo = &session.repo;
    refuse_states(repo, &session.root)?;
    let now = listing(repo, cwd, Some(&listed.commit.to_string()))?;
    if now.hunks != listed.hunks {
        return Err(TxError::Refused {
            message: "the commit's hunks are not the ones listed".into(),
            hint: "run `git loaf review` again".into(),
        });
    }
    let commit = commits::read(repo, listed.commit)?;
    let (ref_name, head) = refs::head_ref(repo)?;
    let Some(head) = head else {
        return Err(not_on_branch(&commit));
    };
    if head != commit.id && !commits::descends_from(repo, &head.to_string(), &commit.id.to_string())
    {
        return Err(not_on_branch(&commit));
    }
    checkpoint::refuse_intent_to_add(repo)
        .map_err(|paths| TxError::intent_to_add(&paths, "review"))?;
    let cp = checkpoint::take(repo).map_err(TxError::from_checkpoint)?;
    let id = new_id("review");
    let rejected = rejected_records(&now.hunks, verdicts);
    let report = report::text(&short_oid(commit.id), &commit.summary, &rejected);
    let kept = kept_entries(repo, &now.hunks, verdicts)?;
    let landed = if head == commit.id && refs::first_pushed(repo, head, commit.parent)?.is_none() {
        rewrite(repo, &commit, &kept, &id, &rejected)?
    } else {
        revert(repo, &commit, head, &kept, &id, rejected.len())?
    };
    let new_head = match &landed {
        Landed::Rewritten { new, .. } => *new,
        Landed::Dropped { parent, .. } => *parent,
        Landed::Reverted { commit } => *commit,
    };
    let new_tree = commits::read(repo, new_head)?.tree;
    let changed: Vec<PathBuf> = treediff::changed_paths(repo, Some(cp.head_tree), Some(new_tree))?
        .into_iter()
        .collect();
    let (work, index, _) = match merge::land(repo, &cp, cp.head_tree, new_tree, &changed)? {
        Ok(landing) => landing,
        Err(Overlap(reason)) => return Err(overlaps(&reason)),
    };
    let moved = Moved {
        ref_name,
        head,
        new_head,
        cp: &cp,
        to: (work, index),
    };
    let transition = transition(&session, &id, &commit, moved);
    let skipped = publish::publish(repo, &transition, true).map_err(|e| match e {
        PublishError::Changed(_) | PublishError::Moved { .. } => TxError::Refused {
            message: format!("nothing was reviewed: {e}"),
            hint: "run `git loaf review` again".into(),
        },
        other => TxError::Publish(other),
    })?;
    let mut notices = session.notices.clone();
    notices.extend(publish::left_alone_notice(&skipped));
    if let Err(error) = report::store(repo.path(), &id, &report, &effect(&commit, &landed)) {
        notices.push(Notice::new(NoticeKind::Record, error.to_string()));
    }
    Ok(Reviewed {
        id,
        commit: commit.id,
        landed,
        rejected,
        report,
        notices,
    })
}

/// The branch's move a review makes, and the user's files and index before and after.
struct Moved<'a> {
    ref_name: String,
    head: Oid,
    new_head: Oid,
    cp: &'a checkpoint::Checkpoint,
    to: (Oid, Oid),
}

/// The review as the operation log records it.
fn transition(session: &Session, id: &str, commit: &CommitInfo, moved: Moved<'_>) -> Transition {
    let (work, index) = (moved.to.0.to_string(), moved.to.1.to_string());
    let (from_work, from_index) = (
        moved.cp.work_tree.to_string(),
        moved.cp.index_tree.to_string(),
    );
    Transition {
        workdir: session.root.clone(),
        ref_name: moved.ref_name.clone(),
        old: Some(moved.head.to_string()),
        new: Some(moved.new_head.to_string()),
        from_work: from_work.clone(),
        from_index: from_index.clone(),
        to_work: work.clone(),
        to_index: index.clone(),
        message: format!("git-loaf review {id}: {}", commit.summary),
        op: OpEntry {
            id: id.to_owned(),
            kind: OpKind::Review,
            target: Some(commit.id.to_string()),
            time: now_secs(),
            workdir: session.root.display().to_string(),
            ref_name: moved.ref_name,
            summary: format!("review of {}", commit.summary),
            before: UserState {
                head: Some(moved.head.to_string()),
                work: from_work,
                index: from_index,
            },
            after: UserState {
                head: Some(moved.new_head.to_string()),
                work,
                index,
            },
            extras: Default::default(),
            reply_key: None,
        },
    }
}

/// The record of each hunk a verdict takes out.
fn rejected_records(hunks: &[Hunk], verdicts: &[Verdict]) -> Vec<RejectedHunk> {
    verdicts
        .iter()
        .filter_map(|v| {
            let hunk = hunks.iter().find(|h| h.id == v.hunk)?;
            Some(RejectedHunk::of(hunk, v.kept.as_deref(), &v.reason))
        })
        .collect()
}

/// What git's configuration says of colour for an interactive review, as `git add -p` reads
/// it: `color.interactive`, else `color.ui`. `Some(false)` for `never`/`false`, `Some(true)`
/// for `always`, `None` for `auto`, `true` or unset (the terminal decides).
pub fn git_colour(cwd: &Path) -> Option<bool> {
    let repo = session::open(cwd, "review").ok()?;
    let config = repo.config().ok()?;
    let value = config
        .get_string("color.interactive")
        .or_else(|_| config.get_string("color.ui"))
        .ok()?;
    colour_setting(&value)
}

/// A `color.*` value: never/false off, always on, anything else (auto, true) undecided.
fn colour_setting(value: &str) -> Option<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "never" | "false" | "no" | "off" | "0" => Some(false),
        "always" => Some(true),
        _ => None,
    }
}

/// The editor `e` opens, as git chooses it: `GIT_EDITOR`, `core.editor`, `VISUAL`,
/// `EDITOR`, else `vi`.
pub fn editor(cwd: &Path) -> String {
    let set = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    set("GIT_EDITOR")
        .or_else(|| {
            let repo = session::open(cwd, "review").ok()?;
            let config = repo.config().ok()?;
            config.get_string("core.editor").ok()
        })
        .or_else(|| set("VISUAL"))
        .or_else(|| set("EDITOR"))
        .unwrap_or_else(|| "vi".to_owned())
}

/// The reports of reviews not yet given to the model, taken away (each is delivered once);
/// `None` when none waits or `cwd` is in no repository. A review undone since is not
/// reported (the hunks are back): its report waits for a redo.
pub fn take_report(cwd: &Path) -> Option<String> {
    let repo = session::open(cwd, "review").ok()?;
    report::take_pending(repo.path(), &|effect| in_effect(&repo, effect))
}

/// How many review reports wait for the model (`git loaf status` says so).
pub fn reports_waiting(repo: &Repository) -> usize {
    report::waiting(repo.path(), &|effect| in_effect(repo, effect))
}

/// Whether a review whose report was kept with `effect` (see [`effect`]) is in effect at
/// HEAD now.
fn in_effect(repo: &Repository, effect: &str) -> bool {
    let head = refs::head_commit(repo).ok().flatten();
    let holds = |commit: &str| {
        head.is_some_and(|h| {
            h.to_string() == commit || commits::descends_from(repo, &h.to_string(), commit)
        })
    };
    effect.lines().all(|line| match line.split_once(' ') {
        Some(("present", commit)) => holds(commit),
        Some(("absent", commit)) => !holds(commit),
        _ => true,
    })
}

/// When a review is in effect, as lines `present <commit>` (HEAD holds it) and `absent
/// <commit>` (HEAD does not): a revert commit present; a rewritten tip's new commit present
/// and the AI commit absent.
fn effect(commit: &CommitInfo, landed: &Landed) -> String {
    match landed {
        Landed::Reverted { commit: revert } => format!("present {revert}\n"),
        Landed::Rewritten { new, .. } => format!("present {new}\nabsent {}\n", commit.id),
        Landed::Dropped { parent, .. } => format!("present {parent}\nabsent {}\n", commit.id),
    }
}

#[cfg(test)]
mod colour_tests {
    use super::colour_setting;

    /// git's values: `never` and `false` turn colour off, `always` on; `auto` and `true`
    /// leave it to the terminal.
    #[test]
    fn colour_values_read_as_git_reads_them() {
        for off in ["never", "false", "NO", "off", "0"] {
            assert_eq!(colour_setting(off), Some(false), "{off}");
        }
        assert_eq!(colour_setting("always"), Some(true));
        for auto in ["auto", "true", ""] {
            assert_eq!(colour_setting(auto), None, "{auto}");
        }
    }
}
