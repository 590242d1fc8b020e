//! `git loaf status` (docs/history.md): one place that says what git-loaf has in effect in this
//! working tree, each with the command that ends it: a walk of step-backs, an agent's turn
//! being recorded, applies kept instead of applied, saved work, an operation a crash
//! interrupted, a loaf.yml change that waits for the user, a review's report that waits for
//! the model.
//!
//! It only reads (no lock, nothing recovered or recorded), so it runs beside any operation.

pub mod answer;

use std::path::Path;

use serde::Serialize;

use super::saved::{self, Listed};
use super::step::{self, SteppedBack};
use crate::git::refs;
use crate::tx::session::{self, TxError};
use crate::tx::{commits, recovery, turn};

/// What is in effect.
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    /// The walk of step-backs HEAD is on, if any.
    pub stepped_back: Option<SteppedBack>,
    /// The agents' turns being recorded, oldest first.
    pub recording: Vec<Recording>,
    /// Applies kept, not applied (`git loaf take` / `git loaf drop`).
    pub kept: Vec<Kept>,
    /// Saved work (`git loaf restore`).
    pub saved: Vec<Listed>,
    /// The journal of an operation a crash interrupted, which the next git-loaf command
    /// that changes anything finishes or rolls back.
    pub interrupted: Option<String>,
    /// A loaf.yml change that waits for `git loaf config accept`: what it widens.
    pub config_waits: Vec<String>,
    /// Why loaf.yml cannot be read, when it cannot.
    pub config_error: Option<String>,
    /// Review reports not yet given to the model (`git loaf review`).
    pub review_reports: usize,
}

impl Status {
    /// Whether nothing is in effect.
    pub fn is_quiet(&self) -> bool {
        self.stepped_back.is_none()
            && self.recording.is_empty()
            && self.kept.is_empty()
            && self.saved.is_empty()
            && self.interrupted.is_none()
            && self.config_waits.is_empty()
            && self.config_error.is_none()
            && self.review_reports == 0
    }
}

/// A turn being recorded.
#[derive(Debug, Clone, Serialize)]
pub struct Recording {
    /// The session as the agent named it.
    pub session: String,
    /// The agent (`Assisted-by`), when it said.
    pub agent: Option<String>,
    /// When the turn began, RFC 3339 UTC.
    pub since: String,
}

/// An apply kept instead of applied.
#[derive(Debug, Clone, Serialize)]
pub struct Kept {
    /// The apply id.
    pub id: String,
    /// Its commit.
    pub commit: String,
    /// Its subject.
    pub summary: String,
}

/// What is in effect in the working tree containing `cwd`.
pub fn status(cwd: &Path) -> Result<Status, TxError> {
    let repo = session::open(cwd, "status")?;
    let root: std::path::PathBuf = repo.workdir().ok_or(TxError::Bare)?.components().collect();
    let (config_waits, config_error) = match super::config::peek(&repo, &root) {
        Ok(governing) => (
            governing.pending.map(|p| p.widenings).unwrap_or_default(),
            None,
        ),
        Err(error) => (Vec::new(), Some(TxError::from(error).to_string())),
    };
    Ok(Status {
        stepped_back: step::stepped_back(&repo, &root)?,
        recording: recording(&repo)?,
        kept: kept(&repo)?,
        saved: saved::listed(&repo)?,
        interrupted: recovery::pending(&repo).map(|path| path.display().to_string()),
        config_waits,
        config_error,
        review_reports: super::review::reports_waiting(&repo),
    })
}

/// The turns begun and not yet committed, oldest first.
fn recording(repo: &crate::git::Repository) -> Result<Vec<Recording>, TxError> {
    let mut turns = Vec::new();
    for reference in repo.references_glob(&format!("{}*", turn::TURN_PREFIX))? {
        let reference = reference?;
        let Some(key) = reference
            .name()
            .ok()
            .and_then(|n| n.strip_prefix(turn::TURN_PREFIX))
        else {
            continue;
        };
        if let Some(turn) = turn::load(repo, key)? {
            turns.push(turn);
        }
    }
    turns.sort_by_key(|t| t.time);
    Ok(turns
        .into_iter()
        .map(|t| Recording {
            session: t.session,
            agent: t.agent,
            since: super::log::rfc3339(t.time),
        })
        .collect())
}

/// The applies kept instead of applied.
fn kept(repo: &crate::git::Repository) -> Result<Vec<Kept>, TxError> {
    let mut out = Vec::new();
    for k in refs::kept(repo)? {
        out.push(Kept {
            summary: commits::read(repo, k.commit)?.summary,
            commit: k.commit.to_string(),
            id: k.id,
        });
    }
    Ok(out)
}
