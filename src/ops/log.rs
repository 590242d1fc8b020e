//! Reading AI history back: `git loaf log` lists the loaf commits on HEAD's first-parent
//! chain; `git loaf show` prints what an apply recorded. Both only read, so they take no lock
//! and work while another operation runs.

use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use serde::Serialize;
use serde_json::Value;

use crate::git::commit::{parse_trailers, read_note};
use crate::git::commits::{self, CommitInfo};
use crate::git::refs;
use crate::git::session::{self, TxError};

/// How far back `log` looks for loaf commits on the first-parent chain.
const SCAN_LIMIT: usize = 100_000;

/// One loaf commit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LogEntry {
    /// The commit id.
    pub commit: String,
    /// `apply`, or `kept` for an apply's commit that was not published (`git loaf take` /
    /// `git loaf drop`).
    pub kind: &'static str,
    /// The apply's id.
    pub id: String,
    /// Commit time, RFC 3339 UTC.
    pub time: String,
    /// The subject line.
    pub summary: String,
    /// Actions that succeeded.
    pub succeeded: usize,
    /// Actions that failed plus blocks that did not run.
    pub failed: usize,
}

/// The newest `limit` loaf commits reachable from HEAD along first parents.
pub fn log(cwd: &Path, limit: usize) -> Result<Vec<LogEntry>, TxError> {
    let repo = session::open(cwd, "log")?;
    // Kept commits first: they wait for the user to take or drop them.
    let mut kept = Vec::new();
    for k in refs::kept(&repo)? {
        if let Some(mut e) = commits::read(&repo, k.commit).ok().as_ref().and_then(entry) {
            e.kind = "kept";
            kept.push(e);
        }
    }
    kept.truncate(limit);
    let Some(chain) = commits::first_parents(&repo)? else {
        return Ok(kept);
    };
    let mut out = kept;
    for commit in chain.take(SCAN_LIMIT) {
        if out.len() >= limit {
            break;
        }
        out.extend(entry(&commit?));
    }
    Ok(out)
}

fn entry(commit: &CommitInfo) -> Option<LogEntry> {
    let trailers = parse_trailers(&commit.message);
    let get = |key: &str| {
        trailers
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
    };
    let id = get("Loaf-Apply")?;
    let kind = "apply";
    let (succeeded, failed) = get("Loaf-Result")
        .and_then(|json| serde_json::from_str::<Value>(&json).ok())
        .map(|v| counts(&v))
        .unwrap_or((0, 0));
    Some(LogEntry {
        commit: commit.id.to_string(),
        kind,
        id,
        time: rfc3339(commit.time),
        summary: commit.summary.clone(),
        succeeded,
        failed,
    })
}

/// ✅ and ❌ counts of a recorded result.
fn counts(result: &Value) -> (usize, usize) {
    let results = result["results"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let ok = results.iter().filter(|r| r["success"] == true).count();
    let errors = result["parseErrors"].as_array().map_or(0, Vec::len);
    (ok, results.len() - ok + errors)
}

fn rfc3339(seconds: i64) -> String {
    let time = UNIX_EPOCH + Duration::from_secs(seconds.max(0) as u64);
    humantime::format_rfc3339_seconds(time).to_string()
}

/// What an apply recorded.
#[derive(Debug, Clone, PartialEq)]
pub enum Shown {
    /// The full record from the commit's note: the report as apply printed it, and the
    /// ExecutionResult.
    Full {
        /// The text report.
        text: String,
        /// The result as JSON.
        result: Value,
    },
    /// Only the `Loaf-Result` trailer (notes not fetched): bulky values are hashes.
    TrailerOnly {
        /// The commit.
        commit: String,
        /// The trailer's JSON.
        result: Value,
    },
}

/// The record of `rev` (a revision git understands, an apply id, or HEAD by default).
pub fn show(cwd: &Path, rev: Option<&str>) -> Result<Shown, TxError> {
    let repo = session::open(cwd, "show")?;
    let rev = rev.unwrap_or("HEAD");
    let commit = commits::resolve(&repo, rev)?.ok_or_else(|| TxError::Invalid {
        message: format!("unknown revision or apply id '{rev}'"),
        hint: "`git loaf log` lists the apply commits and their ids".into(),
    })?;
    if let Some(note) = read_note(&repo, commit.id)
        && let Ok(value) = serde_json::from_str::<Value>(&note)
        && let (Some(text), Some(result)) = (value["text"].as_str(), value.get("result"))
    {
        return Ok(Shown::Full {
            text: text.to_owned(),
            result: result.clone(),
        });
    }
    let trailer = parse_trailers(&commit.message)
        .into_iter()
        .find(|(k, _)| k == "Loaf-Result")
        .and_then(|(_, v)| serde_json::from_str::<Value>(&v).ok());
    match trailer {
        Some(result) => Ok(Shown::TrailerOnly {
            commit: commit.id.to_string(),
            result,
        }),
        None => Err(TxError::Invalid {
            message: format!("{rev} ({}) is not a git-loaf apply commit", commit.id),
            hint: "`git loaf log` lists the apply commits".into(),
        }),
    }
}
