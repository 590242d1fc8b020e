//! Reading AI history back: `git loaf log` lists the loaf commits (applies and squashes of
//! them) on HEAD's first-parent chain; `git loaf show` prints what an apply recorded, or,
//! for a squash, what each apply it folded in recorded. Both only read, so they take no lock
//! and work while another operation runs.

pub mod answer;

use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use serde::Serialize;
use serde_json::Value;

use crate::git::commit::parse_trailers;
use crate::git::notes::{NOTES_REF, read_note, read_report};
use crate::git::refs;
use crate::notice::{Notice, NoticeKind};
use crate::ops::record::SESSION_TRAILER;
use crate::ops::squash::{SQUASH_TRAILER, SQUASHED_TRAILER};
use crate::report::redact;
use crate::tx::commits::{self, CommitInfo};
use crate::tx::oplog::{self, OpKind};
use crate::tx::session::{self, TxError};

/// How far back `log` looks for loaf commits on the first-parent chain.
const SCAN_LIMIT: usize = 100_000;

/// How many commits in a row older than every loaf commit this repository knows of the walk
/// reads before it stops: a few commits dated out of order (a skewed clock, a rebase that
/// kept old dates) do not end it early, and the cost stays a handful of commits whatever the
/// history's length.
const PAST_OLDEST_KNOWN: usize = 64;

/// One loaf commit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LogEntry {
    /// The commit id.
    pub commit: String,
    /// `apply`, `turn` (an agent's turn in record mode), `squash` (a `git loaf squash` of
    /// applies and turns), or `kept` for an apply's commit that was not published
    /// (`git loaf take` / `git loaf drop`).
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
    /// For a squash: what it folded in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub folded: Option<Folded>,
}

/// What a squash folded in: applies (with ✅/❌ counts) and recorded turns (without).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Folded {
    /// Applies of replies.
    pub applies: usize,
    /// Agents' turns recorded in record mode.
    pub turns: usize,
}

/// The newest `limit` loaf commits reachable from HEAD along first parents.
pub fn log(cwd: &Path, limit: usize) -> Result<Vec<LogEntry>, TxError> {
    let repo = session::open(cwd, "log")?;
    // Kept commits first: they wait for the user to take or drop them.
    let mut kept = Vec::new();
    for k in refs::kept(&repo)? {
        if let Some(mut e) = commits::read(&repo, k.commit)
            .ok()
            .and_then(|c| entry(&repo, &c))
        {
            e.kind = "kept";
            kept.push(e);
        }
    }
    kept.truncate(limit);
    let Some(chain) = commits::first_parents(&repo)? else {
        return Ok(kept);
    };
    let mut end = WalkEnd::new(&repo);
    let mut out = kept;
    for commit in chain.take(SCAN_LIMIT) {
        if out.len() >= limit {
            break;
        }
        let commit = commit?;
        if end.reached(commit.time) {
            break;
        }
        out.extend(entry(&repo, &commit));
    }
    Ok(out)
}

/// Where `log`'s walk down the first-parent chain may end early: more than
/// [`PAST_OLDEST_KNOWN`] commits in a row older than the oldest commit holding a loaf note.
/// The notes are read only once the walk is that long (a `log -n 5` that finds its five
/// near the top never reads them); the commits' dates seen until then are replayed, so the
/// walk ends exactly where it would had they been read first.
struct WalkEnd<'r> {
    repo: &'r crate::git::Repository,
    /// `None` until read; then the oldest noted commit's time, if any commit has a note.
    oldest_known: Option<Option<i64>>,
    /// The dates walked before the notes were read.
    seen: Vec<i64>,
    /// Commits in a row older than `oldest_known`.
    past_oldest: usize,
}

impl<'r> WalkEnd<'r> {
    fn new(repo: &'r crate::git::Repository) -> Self {
        Self {
            repo,
            oldest_known: None,
            seen: Vec::new(),
            past_oldest: 0,
        }
    }

    /// Whether the walk ends at a commit dated `time` (before reading it).
    fn reached(&mut self, time: i64) -> bool {
        let oldest = match self.oldest_known {
            Some(oldest) => oldest,
            None if self.seen.len() < PAST_OLDEST_KNOWN => {
                self.seen.push(time);
                return false;
            }
            None => {
                let oldest = oldest_known_loaf_commit(self.repo);
                self.oldest_known = Some(oldest);
                for earlier in std::mem::take(&mut self.seen) {
                    self.count(oldest, earlier);
                }
                oldest
            }
        };
        self.count(oldest, time);
        self.past_oldest > PAST_OLDEST_KNOWN
    }

    fn count(&mut self, oldest: Option<i64>, time: i64) {
        if oldest.is_some_and(|oldest| time < oldest) {
            self.past_oldest += 1;
        } else {
            self.past_oldest = 0;
        }
    }
}

/// The commit time of the oldest commit holding a loaf note (every apply, squash and
/// recorded turn gets one, and notes follow rebases), or `None` when there is none. Below it
/// the first-parent chain holds no loaf commit this repository made or fetched the notes of,
/// so `log` need not read the rest of a long history: with fewer loaf commits than asked
/// for, it stops shortly past this time instead of walking every commit. Without any note
/// (a clone without `refs/notes/loaf`) it reads the whole chain, finding loaf commits by
/// their trailers. Costs one commit read per note, not per commit in the history.
fn oldest_known_loaf_commit(repo: &crate::git::Repository) -> Option<i64> {
    let notes = repo
        .find_reference(NOTES_REF)
        .and_then(|r| r.peel_to_tree())
        .ok()?;
    let mut annotated = Vec::new();
    noted_commits(repo, &notes, "", &mut annotated);
    annotated
        .into_iter()
        .filter_map(|id| repo.find_commit(id).ok())
        .map(|commit| commit.time().seconds())
        .min()
}

/// The objects the notes tree `tree` annotates, `prefix` being the hex digits of the
/// fan-out folders above it: read from the tree itself, not through libgit2's note
/// iterator, which first loads the index (a whole read and checksum of it, for git's own
/// repository the larger part of a `log -n 5`).
fn noted_commits(
    repo: &crate::git::Repository,
    tree: &git2::Tree<'_>,
    prefix: &str,
    found: &mut Vec<crate::git::Oid>,
) {
    for entry in tree.iter() {
        let Ok(name) = entry.name() else { continue };
        let hex = format!("{prefix}{name}");
        match entry.kind() {
            Some(git2::ObjectType::Tree) if hex.len() < 40 => {
                if let Ok(sub) = repo.find_tree(entry.id()) {
                    noted_commits(repo, &sub, &hex, found);
                }
            }
            // A full object name: `Oid::from_str` would take a short one too.
            Some(git2::ObjectType::Blob) if hex.len() == 40 => {
                found.extend(crate::git::Oid::from_str(&hex).ok());
            }
            _ => {}
        }
    }
}

fn entry(repo: &crate::git::Repository, commit: &CommitInfo) -> Option<LogEntry> {
    let trailers = parse_trailers(&commit.message);
    let get = |key: &str| {
        trailers
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
    };
    let (kind, id) = match (get("Loaf-Apply"), get(SQUASH_TRAILER)) {
        (Some(id), _) if get(SESSION_TRAILER).is_some() => ("turn", id),
        (Some(id), _) => ("apply", id),
        (None, Some(id)) => ("squash", id),
        (None, None) => return None,
    };
    // A squash's counts are the sums of the applies it folded in. An older squash carries
    // each one's `Loaf-Result` in its message; a newer one names them only, and its record
    // (the local report, else the note) holds their results.
    let mut results: Vec<Value> = trailers
        .iter()
        .filter(|(k, _)| k == "Loaf-Result")
        .filter_map(|(_, json)| serde_json::from_str::<Value>(json).ok())
        .collect();
    if kind == "squash" && results.is_empty() {
        results = squash_results(repo, commit.id);
    }
    let (succeeded, failed) = results
        .iter()
        .map(counts)
        .fold((0, 0), |(ok, bad), (o, b)| (ok + o, bad + b));
    let folded = (kind == "squash").then(|| folded(repo, &trailers));
    Some(LogEntry {
        commit: commit.id.to_string(),
        kind,
        id,
        time: rfc3339(commit.time),
        summary: commit.summary.clone(),
        succeeded,
        failed,
        folded,
    })
}

/// What a squash folded in, from its `Loaf-Squashed: <id> <commit>` trailers: a folded
/// commit carrying `Loaf-Session` was a recorded turn (one no longer in the repository
/// counts as an apply).
fn folded(repo: &crate::git::Repository, trailers: &[(String, String)]) -> Folded {
    let mut out = Folded {
        applies: 0,
        turns: 0,
    };
    for (_, value) in trailers.iter().filter(|(k, _)| k == SQUASHED_TRAILER) {
        let was_turn = value
            .split_whitespace()
            .nth(1)
            .and_then(|hex| crate::git::Oid::from_str(hex).ok())
            .and_then(|oid| commits::read(repo, oid).ok())
            .is_some_and(|c| {
                parse_trailers(&c.message)
                    .iter()
                    .any(|(k, _)| k == SESSION_TRAILER)
            });
        if was_turn {
            out.turns += 1;
        } else {
            out.applies += 1;
        }
    }
    out
}

/// The results of the applies a squash folded in, from its record (none without one).
fn squash_results(repo: &crate::git::Repository, commit: crate::git::Oid) -> Vec<Value> {
    let record = read_report(repo, commit).or_else(|| read_note(repo, commit));
    let record = record.and_then(|text| serde_json::from_str::<Value>(&text).ok());
    record
        .as_ref()
        .and_then(|r| r["result"]["applies"].as_array())
        .map(|applies| applies.iter().map(|a| a["result"].clone()).collect())
        .unwrap_or_default()
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

/// `seconds` since the epoch as an RFC 3339 time in UTC.
pub(crate) fn rfc3339(seconds: i64) -> String {
    let time = UNIX_EPOCH + Duration::from_secs(seconds.max(0) as u64);
    humantime::format_rfc3339_seconds(time).to_string()
}

/// What an apply recorded.
#[derive(Debug, Clone, PartialEq)]
pub enum Shown {
    /// The record kept locally (outputs included), else the commit's note: the report as
    /// apply printed it, and the ExecutionResult.
    Full {
        /// The text report.
        text: String,
        /// The result as JSON.
        result: Value,
        /// What to tell the user about it: the outputs are not here, only their sizes and
        /// hashes (the note was read because this repository holds no local report).
        notice: Option<Notice>,
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
    let commit = match squash_commit(&repo, rev)? {
        Some(commit) => Some(commit),
        None => commits::resolve(&repo, rev)?,
    };
    let commit = commit.ok_or_else(|| TxError::Invalid {
        message: format!("unknown revision or apply id '{rev}'"),
        hint: "`git loaf log` lists the apply commits and their ids".into(),
    })?;
    let record = |text: Option<String>| {
        let value = serde_json::from_str::<Value>(&text?).ok()?;
        let report = value["text"].as_str()?.to_owned();
        let result = value.get("result")?.clone();
        // Hashed outputs are news only when there were outputs.
        let hashed = value["outputs"] == redact::HASHED_MARKER
            && redact::hash_outputs_in(&mut result.clone()) > 0;
        Some((report, result, hashed))
    };
    let local = record(local_report(&repo, &commit)?);
    let from_note = local.is_none();
    if let Some((text, result, hashed)) = local.or_else(|| record(read_note(&repo, commit.id))) {
        let notice = (from_note && hashed).then(|| {
            Notice::new(
                NoticeKind::Record,
                format!(
                    "the outputs of {} are not in this repository: its note (refs/notes/loaf) records what the blocks read and printed as sizes and sha256 only; the full report stays in the repository where it ran, until `git loaf gc` drops it with its operation-log entry",
                    crate::git::short_oid(commit.id)
                ),
            )
        });
        return Ok(Shown::Full {
            text,
            result,
            notice,
        });
    }
    let trailers = parse_trailers(&commit.message);
    let trailer = if trailers.iter().any(|(k, _)| k == SQUASH_TRAILER) {
        Some(squash_trailers(&trailers))
    } else {
        trailers
            .into_iter()
            .find(|(k, _)| k == "Loaf-Result")
            .and_then(|(_, v)| serde_json::from_str::<Value>(&v).ok())
    };
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

/// The full report this repository keeps for `commit`: its own, or, for a commit that
/// `git commit --amend` or `git rebase` rewrote (its note was carried over, the report was
/// not), the report of the commit its apply or squash made, found by the id in its trailers.
fn local_report(
    repo: &crate::git::Repository,
    commit: &CommitInfo,
) -> Result<Option<String>, TxError> {
    if let Some(report) = read_report(repo, commit.id) {
        return Ok(Some(report));
    }
    let trailers = parse_trailers(&commit.message);
    let Some(id) = trailers
        .iter()
        .find(|(k, _)| k == "Loaf-Apply" || k == SQUASH_TRAILER)
        .map(|(_, v)| v.trim().to_owned())
    else {
        return Ok(None);
    };
    for entry in oplog::walk(repo) {
        let entry = entry?;
        if entry.id == id && matches!(entry.kind, OpKind::Apply | OpKind::Squash) {
            let made = entry
                .after
                .head
                .and_then(|h| crate::git::Oid::from_str(&h).ok());
            return Ok(made.and_then(|oid| read_report(repo, oid)));
        }
    }
    Ok(None)
}

/// The commit a squash with id `rev` made, from the operation log (ids first: six hex digits
/// could also be read by git as an abbreviated commit).
fn squash_commit(repo: &crate::git::Repository, rev: &str) -> Result<Option<CommitInfo>, TxError> {
    // Only an operation id (six hex digits) can name one: `HEAD` or a branch does not cost
    // a walk of the whole log.
    if rev.len() != 6 || !rev.chars().all(|c| c.is_ascii_hexdigit()) {
        return Ok(None);
    }
    let mut made = None;
    for entry in oplog::walk(repo) {
        let entry = entry?;
        if entry.kind == OpKind::Squash && entry.id == rev {
            made = entry.after.head;
            break;
        }
    }
    let made = made.and_then(|h| crate::git::Oid::from_str(&h).ok());
    Ok(made.and_then(|oid| commits::read(repo, oid).ok()))
}

/// A squash commit's records without its note: each folded apply's id, commit and
/// `Loaf-Result`, in order.
fn squash_trailers(trailers: &[(String, String)]) -> Value {
    let mut applies: Vec<Value> = Vec::new();
    let squash = trailers
        .iter()
        .find(|(k, _)| k == SQUASH_TRAILER)
        .map(|(_, v)| v.clone());
    for (key, value) in trailers {
        if key == SQUASHED_TRAILER {
            let (apply, commit) = value.split_once(' ').unwrap_or((value, ""));
            applies.push(serde_json::json!({ "apply": apply, "commit": commit, "result": null }));
        } else if key == "Loaf-Result"
            && let Some(last) = applies.last_mut()
        {
            last["result"] = serde_json::from_str(value).unwrap_or(Value::Null);
        }
    }
    serde_json::json!({ "squash": squash, "applies": applies })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::testing::{self, git, init_repo};

    /// A commit of one changed file, dated `day` days after 2020-01-01, with `message`.
    fn commit_on_day(root: &Path, day: i64, message: &str) -> crate::git::Oid {
        testing::commit_on_day(root, "f.txt", &format!("{day} {message}\n"), day, message)
    }

    fn loaf_message(id: &str) -> String {
        format!("AI: {id}\n\nLoaf-Apply: {id}\n")
    }

    /// `plain` commits without trailers, one a day from `first_day`.
    fn plain_commits(root: &Path, first_day: i64, plain: i64) {
        for day in first_day..first_day + plain {
            commit_on_day(root, day, &format!("plain {day}"));
        }
    }

    fn ids(root: &Path) -> Vec<String> {
        log(root, 10)
            .expect("log")
            .into_iter()
            .map(|e| e.id)
            .collect()
    }

    /// With fewer loaf commits than asked for, the walk ends a little past the oldest commit
    /// holding a loaf note, not at the root: a loaf commit (found by its trailer alone) within
    /// that margin is listed, one further down is not, and a commit dated after the oldest
    /// noted one starts the count again (a skewed clock does not end the walk early).
    #[test]
    fn the_walk_ends_shortly_past_the_oldest_noted_loaf_commit() {
        let dir = init_repo();
        let root = dir.path();
        let margin = PAST_OLDEST_KNOWN as i64;
        commit_on_day(root, 0, &loaf_message("aaaaaa"));
        plain_commits(root, 1, 10);
        commit_on_day(root, 500, &loaf_message("bbbbbb"));
        plain_commits(root, 501, margin - 1);
        commit_on_day(root, 1_500, "a commit with a skewed clock");
        plain_commits(root, 600, 30);
        let noted = commit_on_day(root, 1_000, &loaf_message("cccccc"));
        commit_on_day(root, 2_000, &loaf_message("dddddd"));
        let repo = crate::git::Repository::open(root).expect("open");
        let sig = git2::Signature::now("Ada", "ada@example.com").expect("signature");
        repo.note(&sig, &sig, Some(NOTES_REF), noted, "{}", false)
            .expect("note");
        // bbbbbb is the margin's last commit past the noted one (counted from the skewed
        // commit); aaaaaa lies 11 commits further.
        assert_eq!(ids(root), ["dddddd", "cccccc", "bbbbbb"]);
        // With no note at all, the whole chain is read.
        git(root, &["update-ref", "-d", NOTES_REF]);
        assert_eq!(ids(root), ["dddddd", "cccccc", "bbbbbb", "aaaaaa"]);
    }
}
