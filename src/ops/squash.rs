//! `git loaf squash` (DESIGN §3): fold the run of commits ending at HEAD into one commit.
//!
//! select the run (first parents from HEAD; by default the git-loaf applies; a merge, a
//! commit that does not match or one older than the cutoff ends it) → refuse fewer than two
//! commits and already-pushed ones → write one commit with HEAD's tree on the oldest one's
//! parent, its message listing the squashed subjects and keeping each apply's id and
//! `Loaf-Result` as trailers → merge the applies' notes onto it → move the branch by
//! compare-and-swap, recorded in the operation log (the working tree and index are not
//! touched: the tree is HEAD's, so undo only moves the branch back) → optionally push with a
//! lease. No tree is rewritten and nothing is checked out: the cost follows the number of
//! commits squashed, not the size of the repository.

use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use serde_json::{Value, json};

use super::{new_id, now_secs};
use crate::git::commit::{
    ensure_notes_rewrite, parse_trailers, read_notes, read_report, write_note, write_report,
};
use crate::git::commits::{self, CommitInfo};
use crate::git::oplog::{OpEntry, OpKind, UserState};
use crate::git::publish::{self, PublishError, Transition, crash_point};
use crate::git::push::{self, PushError, Upstream};
use crate::git::session::{self, Session, TxError};
use crate::git::{Oid, Repository, checkpoint, refs, short_id, short_oid};
use crate::report::redact;

/// How far `--limit` keeps counting the commits it left out.
const COUNT_LIMIT: usize = 10_000;

/// The trailer naming a squash commit's id.
pub const SQUASH_TRAILER: &str = "Loaf-Squash";
/// The trailer naming one squashed apply: `<apply id> <its commit>`.
pub const SQUASHED_TRAILER: &str = "Loaf-Squashed";

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
pub struct Plan {
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
    pub plan: Plan,
    /// The squash commit (`None` for a dry run).
    pub commit: Option<Oid>,
    /// How the push went, when asked for.
    pub pushed: Option<Result<(), PushError>>,
    /// Things to tell the user on stderr.
    pub notices: Vec<String>,
}

/// Squashes the run ending at HEAD in the repository containing `cwd`.
pub fn squash(cwd: &Path, options: &SquashOptions) -> Result<Squashed, TxError> {
    if options.dry_run {
        // Only reads: no lock, no crash recovery, nothing written.
        let repo = session::open(cwd, "squash")?;
        let id = new_id("squash");
        let plan = plan(&repo, options, &id)?;
        return Ok(Squashed {
            id,
            plan,
            commit: None,
            pushed: None,
            notices: Vec::new(),
        });
    }
    let session = Session::begin(cwd, "squash")?;
    crash_point("locked");
    let repo = &session.repo;
    let mut notices = session.notices.clone();
    let id = new_id("squash");
    let plan = plan(repo, options, &id)?;
    crash_point("planned");
    checkpoint::refuse_intent_to_add(repo)
        .map_err(|paths| TxError::intent_to_add(&paths, "squash"))?;
    // The user's uncommitted work, recorded so that undo can tell nothing changed since;
    // squash leaves it exactly as it is.
    let current = checkpoint::take(repo).map_err(TxError::from_checkpoint)?;
    let (work, index) = (
        current.work_tree.to_string(),
        current.index_tree.to_string(),
    );
    crash_point("scanned");
    let tree = commits::read(repo, plan.head)?.tree;
    let parents: Vec<Oid> = plan.base.into_iter().collect();
    // Signed as `git commit` would sign it (commit.gpgSign, --gpg-sign); a failure stops
    // the squash before anything moves, with git's message.
    let commit = crate::git::sign::write_commit(repo, tree, &parents, &plan.message, &options.sign)
        .map_err(crate::git::sign::SignError::into_git)?;
    crash_point("commit");
    record_merged(repo, &session.root, commit, &id, &plan.picked)?;
    crash_point("committed");
    // Not worth failing the squash for: the notes still work, they just do not follow a
    // rebase.
    match ensure_notes_rewrite(repo) {
        Ok(true) => notices.push(
            "set notes.rewriteRef = refs/notes/loaf in this repository's config, so `git commit --amend` and `git rebase` keep the git-loaf records".to_owned(),
        ),
        Ok(false) => {}
        Err(e) => notices.push(format!(
            "could not set notes.rewriteRef = refs/notes/loaf in the repository's config ({}): `git rebase` will not carry the git-loaf notes",
            e.message()
        )),
    }
    let head = Some(plan.head.to_string());
    let subject = plan.message.lines().next().unwrap_or("").to_owned();
    let state = |head: Option<String>| UserState {
        head,
        work: work.clone(),
        index: index.clone(),
    };
    let transition = Transition {
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
            id: id.clone(),
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
    };
    match publish::publish(repo, &transition, false) {
        Ok(_) => {}
        Err(PublishError::Moved { ref_name, now }) => {
            return Err(TxError::Refused {
                message: format!(
                    "{} moved while git-loaf squashed it (now {}): nothing was changed",
                    super::undo::display_ref(&ref_name),
                    super::undo::short(Some(&now))
                ),
                hint: "run `git loaf squash` again".into(),
            });
        }
        Err(other) => return Err(other.into()),
    }
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

/// Selects the run, checks it may be squashed and writes the message.
fn plan(repo: &Repository, options: &SquashOptions, id: &str) -> Result<Plan, TxError> {
    let (ref_name, head) = refs::head_ref(repo)?;
    let Some(head) = head else {
        return Err(TxError::Invalid {
            message: "nothing to squash: this branch has no commits yet".into(),
            hint: "`git loaf apply` makes commits; squash folds several into one".into(),
        });
    };
    // Checked before anything changes: a squash that cannot be pushed is not made.
    let upstream = if options.push {
        Some(upstream_of(repo, &ref_name)?)
    } else {
        None
    };
    if options.limit.is_some_and(|n| n < 2) {
        return Err(TxError::Invalid {
            message: "--limit must be at least 2: squash folds two or more commits into one".into(),
            hint: "leave --limit out to take the whole run".into(),
        });
    }
    let (picked, more, end) = select(repo, options)?;
    if picked.len() < 2 {
        return Err(too_few(&picked, &end, options));
    }
    let oldest = picked.last().map(|p| p.commit).unwrap_or(head);
    let base = commits::read(repo, oldest)?.parent;
    if !options.force
        && !options.push
        && let Some((commit, remote)) = refs::first_pushed(repo, head, base)?
    {
        return Err(TxError::Refused {
            message: format!(
                "commit {} of the run to squash is already on {remote}: squashing rewrites published history",
                short_oid(commit)
            ),
            hint: "`git loaf squash --push` squashes and force-pushes with a lease (refused if anyone pushed since your last fetch); `--force` squashes locally anyway".into(),
        });
    }
    let mut picked = picked;
    picked.reverse();
    let files = crate::git::squash::files_changed(repo, base, head)?;
    let message = message(id, &picked, files, options.message.as_deref())?;
    Ok(Plan {
        ref_name,
        head,
        base,
        picked,
        more,
        end,
        message,
        upstream,
    })
}

/// The run from HEAD, newest first; how many more beyond `--limit`; why it ended.
fn select(
    repo: &Repository,
    options: &SquashOptions,
) -> Result<(Vec<Picked>, usize, RunEnd), TxError> {
    let mut picked = Vec::new();
    let mut more = 0;
    let Some(chain) = commits::first_parents(repo)? else {
        return Ok((picked, more, RunEnd::Root));
    };
    let limit = options.limit.unwrap_or(usize::MAX);
    for commit in chain {
        let commit = commit?;
        let end = if crate::git::squash::is_merge(repo, commit.id)? {
            Some(RunEnd::Merge(commit.id))
        } else if options.after.is_some_and(|after| commit.time < after) {
            Some(RunEnd::TooOld(commit.id))
        } else if !matches(&commit, &options.containing)
            || !in_session(&commit, options.session.as_deref())
        {
            Some(RunEnd::NotMatching(commit.id, commit.summary.clone()))
        } else {
            None
        };
        if let Some(end) = end {
            let end = if more > 0 { RunEnd::Limit } else { end };
            return Ok((picked, more, end));
        }
        if picked.len() < limit {
            picked.push(Picked {
                commit: commit.id,
                subject: commit.summary.clone(),
                time: commit.time,
                loaf_id: loaf_id(&commit.message),
                message: commit.message,
            });
        } else {
            more += 1;
            if more >= COUNT_LIMIT {
                break;
            }
        }
    }
    let end = if more > 0 {
        RunEnd::Limit
    } else {
        RunEnd::Root
    };
    Ok((picked, more, end))
}

/// Whether `commit` belongs in the run: its message contains one of `containing`, or, when
/// none is given, it is a git-loaf apply (or an earlier squash of applies).
fn matches(commit: &CommitInfo, containing: &[String]) -> bool {
    if containing.is_empty() {
        loaf_id(&commit.message).is_some()
    } else {
        containing.iter().any(|text| commit.message.contains(text))
    }
}

/// Whether `commit` is a turn of `session` (every commit when no session is asked for).
fn in_session(commit: &CommitInfo, session: Option<&str>) -> bool {
    session.is_none_or(|session| {
        parse_trailers(&commit.message)
            .iter()
            .any(|(k, v)| k == super::record::SESSION_TRAILER && v == session)
    })
}

/// The `Loaf-Apply` or `Loaf-Squash` id of a message.
fn loaf_id(message: &str) -> Option<String> {
    parse_trailers(message)
        .into_iter()
        .find(|(k, _)| k == "Loaf-Apply" || k == SQUASH_TRAILER)
        .map(|(_, v)| v)
}

/// The refusal when the run holds fewer than two commits, saying why it ended there.
fn too_few(picked: &[Picked], end: &RunEnd, options: &SquashOptions) -> TxError {
    let found = match picked.len() {
        0 => "no commit".to_owned(),
        n => format!("only {n} commit"),
    };
    let what = if let Some(session) = &options.session {
        format!("turn of session {session}")
    } else if options.containing.is_empty() {
        "git-loaf apply".to_owned()
    } else {
        format!(
            "commit containing {}",
            options
                .containing
                .iter()
                .map(|t| format!("{t:?}"))
                .collect::<Vec<_>>()
                .join(" or ")
        )
    };
    let why = match end {
        RunEnd::NotMatching(commit, subject) => {
            format!("{} (\"{subject}\") is not a {what}", short_oid(*commit))
        }
        RunEnd::Merge(commit) => {
            format!(
                "{} is a merge commit, which ends the run",
                short_oid(*commit)
            )
        }
        RunEnd::TooOld(commit) => {
            format!("{} is older than the time asked for", short_oid(*commit))
        }
        RunEnd::Root | RunEnd::Limit => "the branch has no more commits".to_owned(),
    };
    TxError::Invalid {
        message: format!(
            "nothing to squash: {found} from HEAD in the run ({why}); squash needs at least two"
        ),
        hint: "`git loaf squash --containing TEXT` selects commits by their message (`--containing \"\"` takes every commit up to a merge); `--dry-run` shows the selection".into(),
    }
}

/// The upstream `--push` pushes to, or why there is none.
fn upstream_of(repo: &Repository, ref_name: &str) -> Result<Upstream, TxError> {
    let Some(branch) = ref_name.strip_prefix("refs/heads/") else {
        return Err(TxError::Invalid {
            message: "--push needs a branch, but HEAD is detached".into(),
            hint: "`git switch <branch>` first, or squash without --push".into(),
        });
    };
    push::upstream(repo, ref_name)?.ok_or_else(|| TxError::Invalid {
        message: format!("--push: branch {branch} has no upstream to push to; nothing was changed"),
        hint: format!(
            "set one (`git branch --set-upstream-to origin/{branch}`, or `git push -u origin {branch}` once), then run `git loaf squash --push` again"
        ),
    })
}

/// The squash commit's message: the generated subject (or the user's `-m`), the squashed
/// subjects, then the trailers: `Loaf-Squash: <id>` and, for every apply folded in (those
/// of an earlier squash included), `Loaf-Squashed: <apply id> <commit>` followed by its
/// `Loaf-Result`.
fn message(
    id: &str,
    picked: &[Picked],
    files: usize,
    custom: Option<&str>,
) -> Result<String, TxError> {
    let mut trailers = vec![(SQUASH_TRAILER.to_owned(), id.to_owned())];
    for p in picked {
        let pairs = parse_trailers(&p.message);
        if pairs.iter().any(|(k, _)| k == SQUASH_TRAILER) {
            // An earlier squash: keep the records it carries, not itself.
            trailers.extend(
                pairs
                    .into_iter()
                    .filter(|(k, _)| k == SQUASHED_TRAILER || k == "Loaf-Result"),
            );
        } else if let Some(apply) = pairs.iter().find(|(k, _)| k == "Loaf-Apply") {
            trailers.push((
                SQUASHED_TRAILER.to_owned(),
                format!("{} {}", apply.1, p.commit),
            ));
            trailers.extend(pairs.iter().find(|(k, _)| k == "Loaf-Result").cloned());
        }
    }
    let body = match custom {
        Some(text) if !text.trim().is_empty() => text.trim().to_owned(),
        Some(_) => {
            return Err(TxError::Invalid {
                message: "the message given with -m is empty".into(),
                hint: "give a message, or leave -m out for the generated one".into(),
            });
        }
        None => {
            let applies = trailers
                .iter()
                .filter(|(k, _)| k == SQUASHED_TRAILER)
                .count();
            let all_loaf = picked.iter().all(|p| p.loaf_id.is_some());
            let what = if all_loaf {
                format!("{applies} applies")
            } else {
                format!("{} commits", picked.len())
            };
            let range = date_range(picked);
            let plural = if files == 1 { "" } else { "s" };
            let mut text = format!("AI: squashed {what} ({range}): {files} file{plural} changed\n");
            for p in picked {
                text.push_str(&format!("\n- {}", p.subject));
            }
            text
        }
    };
    let mut out = format!("{}\n\n", body.trim_end());
    for (key, value) in trailers {
        out.push_str(&format!("{key}: {}\n", value.replace(['\r', '\n'], " ")));
    }
    Ok(out)
}

/// `2026-01-01` or `2026-01-01 to 2026-01-03` (UTC).
fn date_range(picked: &[Picked]) -> String {
    let day = |seconds: i64| {
        let time = UNIX_EPOCH + Duration::from_secs(seconds.max(0) as u64);
        humantime::format_rfc3339_seconds(time).to_string()[..10].to_owned()
    };
    let first = picked.iter().map(|p| p.time).min().unwrap_or(0);
    let last = picked.iter().map(|p| p.time).max().unwrap_or(0);
    let (first, last) = (day(first), day(last));
    if first == last {
        first
    } else {
        format!("{first} to {last}")
    }
}

/// Records the squash on `commit` as an apply is recorded (DESIGN §2 "Secrets"): the folded
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
    let outputs = crate::config::Config::load(root)?.notes_outputs;
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
pub fn parse_date(text: &str, now: i64) -> Option<i64> {
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
