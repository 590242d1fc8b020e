//! The applies a reply key names, for a program that applies replies on someone's behalf
//! and must not apply the same one twice (lorch's builder, which keys each step's turns by
//! the step; docs/lorch.md, "What is recorded, and what survives a crash"): the newest such
//! apply of this working tree, and those still on top of its undo stack.
//!
//! Read with the operation lock held, after recovery: a publish a killed apply left half
//! done (its branch moved, its log entry not yet written) is finished first, so that the
//! apply it made is found rather than made again.

use crate::notice::Notice;
use std::path::Path;

use crate::tx::oplog::{self, OpEntry, OpKind};
use crate::tx::session::{Session, TxError};

/// The newest apply carrying a reply key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyedApply {
    /// The apply's id.
    pub id: String,
    /// Its commit, when it made one (HEAD moved).
    pub commit: Option<String>,
}

/// What the operation log holds of one reply key in one working tree.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplyApplies {
    /// The newest apply with the key; `None` when there is none.
    pub newest: Option<KeyedApply>,
    /// The applies with the key on top of the undo stack, newest first: the ones `git loaf
    /// undo` would take back next, still separate commits.
    pub on_top: Vec<String>,
    /// What recovery did on the way in (a crashed operation finished), to tell the user.
    pub notices: Vec<Notice>,
}

/// The applies of the working tree containing `cwd` that carry `key` (see
/// [`crate::ops::apply::ApplyOptions::reply_key`]). Linked worktrees share one log: an
/// apply with the same key made in another worktree is not this one's. `command` names the
/// caller in the lock (what another git-loaf command waiting for it says) and in a refusal.
pub fn reply_applies(cwd: &Path, key: &str, command: &str) -> Result<ReplyApplies, TxError> {
    let mut session = Session::begin(cwd, command)?;
    let workdir = session.root.display().to_string();
    let ours = |entry: &OpEntry| {
        entry.kind == OpKind::Apply
            && entry.workdir == workdir
            && entry.reply_key.as_deref() == Some(key)
    };
    let mut on_top = Vec::new();
    for entry in oplog::undoable(&session.repo, &workdir)? {
        let entry = entry?;
        if !ours(&entry) {
            break;
        }
        on_top.push(entry.id);
    }
    let mut newest = None;
    for entry in oplog::walk(&session.repo) {
        let entry = entry?;
        if ours(&entry) {
            let commit = entry
                .after
                .head
                .filter(|h| Some(h) != entry.before.head.as_ref());
            newest = Some(KeyedApply {
                id: entry.id,
                commit,
            });
            break;
        }
    }
    Ok(ReplyApplies {
        newest,
        on_top,
        notices: std::mem::take(&mut session.notices),
    })
}
