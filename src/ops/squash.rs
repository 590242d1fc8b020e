//! `git loaf squash` (docs/history.md): fold the run of commits ending at HEAD into one commit.
//!
//! select the run (first parents from HEAD; by default the git-loaf applies; a merge, a
//! commit that does not match or one older than the cutoff ends it) → refuse fewer than two
//! commits and already-pushed ones → write one commit with HEAD's tree on the oldest one's
//! parent, its message listing the squashed subjects and naming each apply (id and commit)
//! in a trailer → merge the applies' notes (their results) onto it → move the branch by
//! compare-and-swap, recorded in the operation log (the working tree and index are not
//! touched: the tree is HEAD's, so undo only moves the branch back) → optionally push with a
//! lease. No tree is rewritten and nothing is checked out: the cost follows the number of
//! commits squashed, not the size of the repository.

pub mod answer;
mod selecting;

use std::path::Path;
use std::time::UNIX_EPOCH;

use serde_json::{Value, json};

use super::{new_id, now_secs};
use crate::git::commit::{ensure_notes_rewrite, read_notes, read_report, write_note, write_report};
use crate::git::push::{self, PushError, Upstream};
use crate::git::{Oid, Repository, short_id};
use crate::notice::{Notice, NoticeKind};
use crate::report::redact;
use crate::tx::checkpoint;
use crate::tx::commits;
use crate::tx::oplog::{OpEntry, OpKind, UserState};
use crate::tx::publish::{self, PublishError, Transition, crash_point};
use crate::tx::session::{self, Session, TxError};
use selecting::plan;

pub use crate::git::commit::{SQUASH_TRAILER, SQUASHED_TRAILER};

/// What to squash and how.
#[derive(Debug, Clone, Default)]
pub struct SquashOptions {
    /// Select commits whose message contains any of these (`""` matches every commit);
    /// empty: the git-loaf applies.
    pub containing: Vec<String>,
    /// Only the record-mode turns of this session (`Loaf-Session`), with the other filters.
    pub session: Option<String>,
    /// Only commits made at or after this time (seconds since the epoch).
    pub after: Option<i64>,
    /// At most this many commits (the newest).
    pub limit: Option<usize>,
    /// The message instead of the generated one (the trailers are added to it).
    pub message: Option<String>,
    /// Only say what would be done.
    pub dry_run: bool,
    /// Push the branch afterwards (`--force-with-lease`).
    pub push: bool,
    /// Squash already-pushed commits; with `push`, push with `--force`.
    pub force: bool,
    /// Whether to sign the commit (`--gpg-sign`, `--no-gpg-sign`, commit.gpgSign).
    pub sign: crate::git::sign::SignRequest,
}

/// One commit of the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Picked {
    /// The commit.
    pub commit: Oid,
    /// Its subject.
    pub subject: String,
    /// Commit time, seconds since the epoch.
    pub time: i64,
    /// Its apply id (`Loaf-Apply`) or squash id (`Loaf-Squash`), if it is a git-loaf commit.
    pub loaf_id: Option<String>,
    /// Its whole message (for the trailers it carries).
    pub message: String,
}

/// Why the run stopped where it did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunEnd {
    /// The next commit does not match (a human commit, for the default selection).
    NotMatching(Oid, String),
    /// The next commit is a merge.
    Merge(Oid),
    /// The next commit is older than `--after` / `--hours` / `--days`.
    TooOld(Oid),
    /// The run reaches the repository's first commit.
    Root,
    /// `--limit` was reached.
    Limit,
}

/// What squash will do (or, after a dry run, would have done).
#[derive(Debug, Clone)]
pub struct SquashPlan {
    /// The ref moved.
    pub ref_name: String,
    /// HEAD now.
    pub head: Oid,
    /// The parent of the oldest squashed commit (`None`: the run starts at a root commit).
    pub base: Option<Oid>,
    /// The commits squashed, oldest first.
    pub picked: Vec<Picked>,
    /// How many more commits would have matched beyond `--limit`.
    pub more: usize,
    /// Why the run ended.
    pub end: RunEnd,
    /// The squash commit's message.
    pub message: String,
    /// Where `--push` pushes.
    pub upstream: Option<Upstream>,
}

/// What squash did.
#[derive(Debug)]
pub struct Squashed {
    /// The squash's id (its `Loaf-Squash` trailer and operation log entry).
    pub id: String,
    /// What was selected and the message.
    pub plan: SquashPlan,
    /// The squash commit (`None` for a dry run).
    pub commit: Option<Oid>,
    /// How the push went, when asked for.
    pub pushed: Option<Result<(), PushError>>,
    /// Things to tell the user on stderr.
    pub notices: Vec<Notice>,
}

/// Squashes the run ending at HEAD in the repository containing `cwd`: lock → plan (select
/// the run, refuse what may not be squashed) → checkpoint → commit → merge the notes →
/// publish → push.
pub fn squash(cwd: &Path, options: &SquashOptions) -> Result<Squashed, TxError> {
    if options.dry_run {
        return dry_run(cwd, options);
    }
    let session = Session::begin(cwd, "squash")?;
    crash_point("locked");
    let repo = &session.repo;
    let mut notices = session.notices.clone();
    let id = new_id("squash");
    let plan = plan(repo, options, &id)?;
    crash_point("planned");
    let (work, index) = checkpoint_work(repo)?;
    let commit = commit(repo, &plan, options)?;
    record_merged(repo, &session.root, commit, &id, &plan.picked)?;
    crash_point("committed");
    notices.extend(notes_rewrite_notice(repo));
    let transition = transition(&session, &id, &plan, commit, (work, index));
    publish_squash(repo, &transition)?;
    crash_point("published");
    let root = session.root.clone();
    // The lock is not needed to push, and a pre-push hook may run git-loaf itself.
    drop(session);
    let pushed = plan
        .upstream
        .as_ref()
        .map(|upstream| push::push(&root, &plan.ref_name, upstream, options.force));
    Ok(Squashed {
        id,
        plan,
        commit: Some(commit),
        pushed,
        notices,
    })
}

/// `--dry-run`: what squash would do. Only reads: no lock, no crash recovery, nothing
/// written.
fn dry_run(cwd: &Path, options: &SquashOptions) -> Result<Squashed, TxError> {
    let repo = session::open(cwd, "squash")?;
    let id = new_id("squash");
    let plan = plan(&repo, options, &id)?;
    Ok(Squashed {
        id,
        plan,
        commit: None,
        pushed: None,
        notices: Vec::new(),
    })
}

/// The user's uncommitted work (working tree and index trees), recorded so that undo can
/// tell nothing changed since; squash leaves it exactly as it is.
fn checkpoint_work(repo: &Repository) -> Result<(String, String), TxError> {
    checkpoint::refuse_intent_to_add(repo)
        .map_err(|paths| TxError::intent_to_add(&paths, "squash"))?;
    let current = checkpoint::take(repo).map_err(TxError::from_checkpoint)?;
    let (work, index) = (
        current.work_tree.to_string(),
        current.index_tree.to_string(),
    );
    crash_point("scanned");
    Ok((work, index))
}

/// The squash commit: HEAD's tree on the run's base. Signed as `git commit` would sign it
/// (commit.gpgSign, --gpg-sign); a failure stops the squash before anything moves, with
/// git's message.
fn commit(repo: &Repository, plan: &SquashPlan, options: &SquashOptions) -> Result<Oid, TxError> {
    let tree = commits::read(repo, plan.head)?.tree;
    let parents: Vec<Oid> = plan.base.into_iter().collect();
    let commit = crate::git::sign::write_commit(repo, tree, &parents, &plan.message, &options.sign)
        .map_err(crate::git::sign::SignError::into_git)?;
    crash_point("commit");
    Ok(commit)
}

/// Notes follow `git commit --amend` and `git rebase` once notes.rewriteRef is set. Not
/// worth failing the squash for: the notes still work, they just do not follow a rebase.
fn notes_rewrite_notice(repo: &Repository) -> Option<Notice> {
    let text = match ensure_notes_rewrite(repo) {
        Ok(true) => "set notes.rewriteRef = refs/notes/loaf in this repository's config, so `git commit --amend` and `git rebase` keep the git-loaf records".to_owned(),
        Ok(false) => return None,
        Err(e) => format!(
            "could not set notes.rewriteRef = refs/notes/loaf in the repository's config ({}): `git rebase` will not carry the git-loaf notes",
            e.message()
        ),
    };
    Some(Notice::new(NoticeKind::Notes, text))
}

/// The branch's move from HEAD to the squash commit, as the operation log records it; the
/// working tree and index (`work`, `index`) stay as they are.
fn transition(
    session: &Session,
    id: &str,
    plan: &SquashPlan,
    commit: Oid,
    (work, index): (String, String),
) -> Transition {
    let head = Some(plan.head.to_string());
    let subject = plan.message.lines().next().unwrap_or("").to_owned();
    let state = |head: Option<String>| UserState {
        head,
        work: work.clone(),
        index: index.clone(),
    };
    Transition {
        workdir: session.root.clone(),
        ref_name: plan.ref_name.clone(),
        old: head.clone(),
        new: Some(commit.to_string()),
        from_work: work.clone(),
        from_index: index.clone(),
        to_work: work.clone(),
        to_index: index.clone(),
        message: format!("git-loaf squash {id}: {subject}"),
        op: OpEntry {
            id: id.to_owned(),
            kind: OpKind::Squash,
            target: None,
            time: now_secs(),
            workdir: session.root.display().to_string(),
            ref_name: plan.ref_name.clone(),
            summary: subject,
            before: state(head),
            after: state(Some(commit.to_string())),
            extras: Default::default(),
            reply_key: None,
        },
    }
}

/// Publish: the branch moves by compare-and-swap; moved meanwhile, nothing changes.
fn publish_squash(repo: &Repository, transition: &Transition) -> Result<(), TxError> {
    match publish::publish(repo, transition, false) {
        Ok(_) => Ok(()),
        Err(PublishError::Moved { ref_name, now }) => Err(TxError::Refused {
            message: format!(
                "{} moved while git-loaf squashed it (now {}): nothing was changed",
                super::undo::display_ref(&ref_name),
                super::undo::short(Some(&now))
            ),
            hint: "run `git loaf squash` again".into(),
        }),
        Err(other) => Err(other.into()),
    }
}

/// Records the squash on `commit` as an apply is recorded (docs/trailers-and-notes.md): the folded
/// applies' full reports (the local ones, else their notes) as the squash's local report, and
/// their notes merged as its note, whose outputs are sizes and hashes unless loaf.yml says
/// `notes.outputs: full` — an older note that held outputs loses them here.
fn record_merged(
    repo: &Repository,
    root: &Path,
    commit: Oid,
    id: &str,
    picked: &[Picked],
) -> Result<(), TxError> {
    let outputs = crate::ops::config::governing(repo, root)?
        .config
        .notes_outputs;
    let commits: Vec<Oid> = picked.iter().map(|p| p.commit).collect();
    let notes = read_notes(repo, &commits);
    let reports: Vec<Option<String>> = commits
        .iter()
        .zip(&notes)
        .map(|(c, note)| read_report(repo, *c).or_else(|| note.clone()))
        .collect();
    write_report(repo, commit, &merged_note(id, picked, reports, false))?;
    let hashed = outputs == crate::config::NotesOutputs::Hashes;
    write_note(repo, commit, &merged_note(id, picked, notes, hashed))?;
    Ok(())
}

/// The squash commit's record: every folded apply's record, oldest first — its id, commit,
/// subject, text report and result — and the reports joined, so that `git loaf show` prints
/// each in order. The records of an earlier squash are carried over one by one. `records`
/// are the picked commits' own (notes or local reports); with `hashed`, every output in them
/// becomes its size and hash.
fn merged_note(id: &str, picked: &[Picked], records: Vec<Option<String>>, hashed: bool) -> String {
    let mut applies: Vec<Value> = Vec::new();
    for (p, note) in picked.iter().zip(records) {
        let note = note.and_then(|n| serde_json::from_str::<Value>(&n).ok());
        if let Some(inner) = note
            .as_ref()
            .and_then(|n| n["result"]["applies"].as_array())
        {
            applies.extend(inner.iter().cloned());
            continue;
        }
        let Some(apply) = p.loaf_id.clone() else {
            continue; // a commit of the user's: no record
        };
        let (text, result) = match &note {
            Some(n) => (n["text"].clone(), n["result"].clone()),
            None => (Value::Null, Value::Null),
        };
        applies.push(json!({
            "apply": apply,
            "commit": p.commit.to_string(),
            "subject": p.subject,
            "text": text,
            "result": result,
        }));
    }
    if hashed {
        for a in &mut applies {
            hash_record(a);
        }
    }
    let mut text = String::new();
    for a in &applies {
        let commit = a["commit"].as_str().unwrap_or("");
        text.push_str(&format!(
            "--- apply {} ({}): {} ---\n",
            a["apply"].as_str().unwrap_or("?"),
            short_id(commit),
            a["subject"].as_str().unwrap_or("")
        ));
        match a["text"].as_str() {
            Some(report) => text.push_str(report),
            None => text.push_str("(no record: the note of this apply was not here)\n"),
        }
        if !text.ends_with('\n') {
            text.push('\n');
        }
    }
    let mut value = json!({
        "text": text,
        "result": { "squash": id, "applies": applies },
    });
    if hashed {
        value["outputs"] = redact::HASHED_MARKER.into();
    }
    serde_json::to_string_pretty(&value).unwrap_or_default()
}

/// One folded apply's record with its outputs as sizes and hashes: its result's, and its
/// text's (an older note's text had them written out; a hashed note's text already shows
/// only sizes and hashes).
fn hash_record(record: &mut Value) {
    let before = record["result"].clone();
    redact::hash_outputs_in(&mut record["result"]);
    if record["result"] != before
        && let Some(text) = record["text"].as_str()
    {
        record["text"] = redact::drop_outputs_from_text(text).into();
    }
}

/// A date as git takes it for `--after`/`--since`, in seconds since the epoch:
/// `2026-01-01`, `2026-01-01 12:00[:00]`, RFC 3339 with `Z` or an offset
/// (`2026-01-01T12:00:00+02:00`), `@<seconds>`, or a time ago (`3 days ago`, `2h`). Times
/// without a zone are UTC.
pub(crate) fn parse_date(text: &str, now: i64) -> Option<i64> {
    let text = text.trim();
    if let Some(seconds) = text.strip_prefix('@') {
        return seconds.parse().ok();
    }
    let ago = text.strip_suffix("ago").unwrap_or(text).trim();
    if let Ok(duration) = humantime::parse_duration(&ago.replace(' ', "")) {
        return Some(now - duration.as_secs() as i64);
    }
    // An offset (`+02:00`, `-0500`) after a time: humantime reads only UTC. The date's own
    // dashes are in its first 10 characters.
    let zone_at = text
        .char_indices()
        .skip(10)
        .filter(|(_, c)| *c == '+' || *c == '-')
        .map(|(i, _)| i)
        .last();
    let (stamp, offset) = match zone_at {
        Some(i) => {
            let (stamp, zone) = text.split_at(i);
            let digits = zone[1..].replace(':', "");
            if digits.len() != 4 || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let minutes =
                digits[..2].parse::<i64>().ok()? * 60 + digits[2..].parse::<i64>().ok()?;
            let sign = if zone.starts_with('-') { -1 } else { 1 };
            (stamp, sign * minutes * 60)
        }
        None => (text, 0),
    };
    let stamp = if stamp.len() == 10 {
        format!("{stamp}T00:00:00")
    } else if stamp.len() == 16 {
        format!("{stamp}:00")
    } else {
        stamp.to_owned()
    };
    let time = humantime::parse_rfc3339_weak(&stamp).ok()?;
    let seconds = time.duration_since(UNIX_EPOCH).ok()?.as_secs() as i64;
    Some(seconds - offset)
}

#[cfg(test)]
mod tests {
    use super::selecting::date_range;
    use super::*;

    #[test]
    fn dates_in_the_forms_git_takes() {
        let now = 1_767_225_600; // 2026-01-01T00:00:00Z
        assert_eq!(parse_date("2026-01-01", now), Some(now));
        assert_eq!(parse_date("2026-01-01T00:00:00Z", now), Some(now));
        assert_eq!(parse_date("2026-01-01 01:30", now), Some(now + 5400));
        assert_eq!(
            parse_date("2026-01-01T02:00:00+02:00", now),
            Some(now),
            "an offset east of UTC is earlier in UTC"
        );
        assert_eq!(parse_date("2025-12-31T19:00:00-0500", now), Some(now));
        assert_eq!(parse_date("@1767225600", now), Some(now));
        assert_eq!(parse_date("3 days ago", now), Some(now - 3 * 86_400));
        assert_eq!(parse_date("2h", now), Some(now - 7200));
        assert_eq!(parse_date("next tuesday", now), None);
    }

    #[test]
    fn a_day_or_a_range_of_days() {
        let at = |time: i64| Picked {
            commit: Oid::ZERO_SHA1,
            subject: String::new(),
            time,
            loaf_id: None,
            message: String::new(),
        };
        assert_eq!(
            date_range(&[at(1_767_225_600), at(1_767_225_700)]),
            "2026-01-01"
        );
        assert_eq!(
            date_range(&[at(1_767_225_600 + 86_400), at(1_767_225_600)]),
            "2026-01-01 to 2026-01-02"
        );
    }
}
