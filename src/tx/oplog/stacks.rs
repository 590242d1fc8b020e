//! Each working tree's undo and redo stacks, stored so that reading the top costs the same
//! whatever the log's length.
//!
//! A stack is a persistent linked list of node blobs, `{"id", "entry", "rest"}`: the
//! operation's id, the blob of its entry, and the node below (none at the bottom). Pushing
//! writes one node on top of the old top; popping is following `rest`; nodes are never
//! changed, so every entry's stacks stay valid after later entries. Each entry commit
//! records in `stacks.json` the top of both stacks of every working tree after it, and
//! holds the nodes it wrote as `node-<n>` beside it (that keeps them reachable, like the
//! entry; the entries a node names are older entries of the same chain; logs written
//! before hold them in a folder `nodes/`).
//!
//! The replay rules are [`super::stacks`]': an apply (or any operation of its own) is
//! pushed on the undo stack and clears the redo stack; an undo moves its target from the
//! undo stack to the redo stack, a redo back; a redo of the undo stack's top (an
//! `undo --to`, whose walk redo re-does) pops it. The target is the top under the repository
//! lock; were it deeper, the nodes above it are pushed again.

use std::collections::BTreeMap;

use git2::{Oid, Repository, TreeBuilder};
use serde::{Deserialize, Serialize};

use super::{OpEntry, OpKind, read_entry};

/// The file in an entry commit's tree holding every working tree's stack tops.
const STACKS_FILE: &str = "stacks.json";
/// What starts the names of the nodes an entry commit wrote, in its tree: beside the entry
/// rather than in a folder of their own, one object fewer to write and make durable.
const NODE_PREFIX: &str = "node-";

/// Where every working tree's stacks stand after one entry.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub(super) struct State {
    /// By working tree path.
    workdirs: BTreeMap<String, Tops>,
}

/// One working tree's stack tops (node blob ids).
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
struct Tops {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    undo: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    redo: Option<String>,
}

/// One stack element.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Node {
    /// The operation's id.
    id: String,
    /// The blob holding its entry.
    entry: String,
    /// The node below.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rest: Option<String>,
}

impl State {
    /// The state recorded in entry commit `commit`; `None` for a commit written before
    /// stacks were recorded (or the chain's root); an error when it cannot be read.
    pub(super) fn at(repo: &Repository, commit: Oid) -> Result<Option<State>, git2::Error> {
        let tree = repo.find_commit(commit)?.tree()?;
        let Some(file) = tree.get_name(STACKS_FILE).map(|e| e.id()) else {
            return Ok(None);
        };
        let blob = repo.find_blob(file)?;
        // Unreadable is not "absent": rewriting the log as if it had no stacks could drop
        // entries this version cannot read.
        serde_json::from_slice(blob.content())
            .map(Some)
            .map_err(|e| {
                git2::Error::from_str(&format!("operation log {commit}: {STACKS_FILE}: {e}"))
            })
    }

    /// Moves the stacks of `entry`'s working tree as `entry` did; returns the nodes written.
    pub(super) fn apply(
        &mut self,
        repo: &Repository,
        entry: &OpEntry,
        entry_blob: Oid,
    ) -> Result<Vec<Oid>, git2::Error> {
        let mut written = Vec::new();
        let tops = self.workdirs.entry(entry.workdir.clone()).or_default();
        match entry.kind {
            OpKind::Apply
            | OpKind::StepBack
            | OpKind::StepForward
            | OpKind::UndoTo
            | OpKind::Squash
            | OpKind::Restore
            | OpKind::Review => {
                let node = Node {
                    id: entry.id.clone(),
                    entry: entry_blob.to_string(),
                    rest: tops.undo.take(),
                };
                tops.undo = Some(push(repo, node, &mut written)?);
                tops.redo = None;
            }
            OpKind::Undo => {
                move_top(repo, entry, &mut tops.undo, &mut tops.redo, &mut written)?;
            }
            OpKind::Redo => {
                if !move_top(repo, entry, &mut tops.redo, &mut tops.undo, &mut written)? {
                    // Not on the redo stack: the redo of an `undo --to`, which re-did its
                    // walk; it leaves the undo stack as it was before the walk.
                    drop_top(repo, entry, &mut tops.undo)?;
                }
            }
        }
        Ok(written)
    }

    /// Records the state, and the nodes written for it, in an entry commit's tree.
    pub(super) fn write(
        &self,
        repo: &Repository,
        tree: &mut TreeBuilder<'_>,
        nodes: &[Oid],
    ) -> Result<(), git2::Error> {
        let json = serde_json::to_vec(self)
            .map_err(|e| git2::Error::from_str(&format!("operation log stacks: {e}")))?;
        tree.insert(
            STACKS_FILE,
            crate::git::repo::write_blob(repo, &json)?,
            0o100644,
        )?;
        for (i, node) in nodes.iter().enumerate() {
            tree.insert(format!("{NODE_PREFIX}{i}"), *node, 0o100644)?;
        }
        Ok(())
    }
}

/// Moves `entry.target` from stack `from` to stack `to` (undo: undo → redo; redo: the other
/// way); nothing when it is not on `from`. Whether it was there.
fn move_top(
    repo: &Repository,
    entry: &OpEntry,
    from: &mut Option<String>,
    to: &mut Option<String>,
    written: &mut Vec<Oid>,
) -> Result<bool, git2::Error> {
    let Some(target) = entry.target.as_deref() else {
        return Ok(false);
    };
    // Walk down to the target, remembering what lies above it.
    let mut above = Vec::new();
    let mut next = from.clone();
    let found = loop {
        let Some(oid) = next else { break None };
        let node = read_node(repo, &oid)?;
        if node.id == target {
            break Some(node);
        }
        next = node.rest.clone();
        above.push(node);
    };
    let Some(found) = found else {
        return Ok(false);
    };
    // The stack without it: the nodes above pushed again onto what was below it.
    let mut rest = found.rest.clone();
    for node in above.into_iter().rev() {
        rest = Some(push(repo, Node { rest, ..node }, written)?);
    }
    *from = rest;
    let moved = Node {
        rest: to.take(),
        ..found
    };
    *to = Some(push(repo, moved, written)?);
    Ok(true)
}

/// Pops the undo stack `undo` when its top is `entry.target` and `entry` went back to the
/// state before it (a redo that re-did an `undo --to`'s walk; a plain redo of it, whose
/// undo a gc dropped, goes to the state after it and leaves it).
fn drop_top(
    repo: &Repository,
    entry: &OpEntry,
    undo: &mut Option<String>,
) -> Result<(), git2::Error> {
    let Some(top) = undo.clone() else {
        return Ok(());
    };
    let node = read_node(repo, &top)?;
    if Some(node.id.as_str()) != entry.target.as_deref() {
        return Ok(());
    }
    let walked_back = Oid::from_str(&node.entry)
        .ok()
        .and_then(|blob| read_entry(repo, blob))
        .is_some_and(|target| super::walks_back(entry, &target));
    if walked_back {
        *undo = node.rest;
    }
    Ok(())
}

/// Writes `node`; its id as stored in [`Tops`] and in the next node's `rest`.
fn push(repo: &Repository, node: Node, written: &mut Vec<Oid>) -> Result<String, git2::Error> {
    let json = serde_json::to_vec(&node)
        .map_err(|e| git2::Error::from_str(&format!("operation log stack: {e}")))?;
    let oid = crate::git::repo::write_blob(repo, &json)?;
    written.push(oid);
    Ok(oid.to_string())
}

fn read_node(repo: &Repository, oid: &str) -> Result<Node, git2::Error> {
    let blob = repo.find_blob(Oid::from_str(oid)?)?;
    serde_json::from_slice(blob.content())
        .map_err(|e| git2::Error::from_str(&format!("operation log stack node {oid}: {e}")))
}

/// The operations undo would undo in `workdir`, the next one first, read as far as asked.
pub fn undoable<'r>(repo: &'r Repository, workdir: &str) -> Result<StackWalk<'r>, git2::Error> {
    stack(repo, workdir, true)
}

/// The operations redo would re-do in `workdir`, the next one first, read as far as asked.
pub fn redoable<'r>(repo: &'r Repository, workdir: &str) -> Result<StackWalk<'r>, git2::Error> {
    stack(repo, workdir, false)
}

fn stack<'r>(
    repo: &'r Repository,
    workdir: &str,
    undo: bool,
) -> Result<StackWalk<'r>, git2::Error> {
    let Ok(tip) = repo.refname_to_id(super::OPLOG_REF) else {
        return Ok(StackWalk {
            repo,
            inner: Inner::Nodes(None),
        });
    };
    let inner = match State::at(repo, tip)? {
        Some(mut state) => {
            let tops = state.workdirs.remove(workdir).unwrap_or_default();
            Inner::Nodes(if undo { tops.undo } else { tops.redo })
        }
        // A log from before the stacks were stored: replayed whole, once.
        None => {
            let stacks = super::stacks(&super::entries(repo)?, workdir);
            let mut stack = if undo {
                stacks.undoable
            } else {
                stacks.redoable
            };
            stack.reverse();
            Inner::Replayed(stack.into_iter())
        }
    };
    Ok(StackWalk { repo, inner })
}

/// A stack, top first: [`undoable`], [`redoable`].
pub struct StackWalk<'r> {
    repo: &'r Repository,
    inner: Inner,
}

enum Inner {
    /// The next node to read.
    Nodes(Option<String>),
    /// Replayed from a log without stacks.
    Replayed(std::vec::IntoIter<OpEntry>),
}

impl Iterator for StackWalk<'_> {
    type Item = Result<OpEntry, git2::Error>;

    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.inner {
            Inner::Replayed(entries) => entries.next().map(Ok),
            Inner::Nodes(next) => loop {
                let oid = next.take()?;
                let node = match read_node(self.repo, &oid) {
                    Ok(node) => node,
                    Err(e) => return Some(Err(e)),
                };
                *next = node.rest.clone();
                let entry = match Oid::from_str(&node.entry) {
                    Ok(blob) => read_entry(self.repo, blob),
                    Err(e) => return Some(Err(e)),
                };
                // An entry this version cannot read is skipped, as in the log itself.
                if let Some(entry) = entry {
                    return Some(Ok(entry));
                }
            },
        }
    }
}
