//! Record mode (docs/agents.md): the turns of an agent that edits files itself (Claude Code,
//! Codex, Cursor, Gemini CLI) become commits that are applies for `undo`, `redo`, `log`,
//! `show` and `squash`.
//!
//! `begin`: lock → finish the session's unfinished turn, if any → checkpoint (the same one
//! apply takes) → keep it as the session's turn (`refs/loaf/record/<session>`).
//!
//! `commit`: lock → checkpoint again → the user's side: the working tree at begin, with the
//! user's changes between the agent's tool calls laid on it when the agent sent tool events
//! ([`super::record_tool`]; else the turn is attributed whole) → the commit: the change from
//! the user's side to now laid on HEAD's version, per file, 3-way (docs/apply.md, "What an apply
//! commits, and what it leaves alone": the user's hunks stay uncommitted) → the index: the commit
//! with the user's staged hunks laid back on it → the note → publish (journal, compare-and-swap,
//! operation-log entry, as an apply) → forget the turn.
//!
//! The operation-log entry's before state is the user's state now with the turn's paths as
//! the user's side has them (and the index as at `begin`): undo takes out exactly the
//! agent's change, and leaves everything else the user has uncommitted (the user's changes
//! made during the turn included) as it is. Nothing runs code and no stage is used, so a
//! hook costs two status scans' worth at most.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::{new_id, now_secs};
use crate::git::commit::{write_note_value, write_report_value};
use crate::git::sign::{self, SignRequest};
use crate::git::{Oid, Repository, refs, short_oid, treebuild, treediff};
use crate::notice::{Notice, NoticeKind};
use crate::report::inert::inert;
use crate::report::subject::fit_subject;
use crate::report::{ExecutionResult, GitInfo};
use crate::tx::checkpoint::{self, Checkpoint};
use crate::tx::merge::merge_entry;
use crate::tx::oplog::{OpEntry, OpKind, UserState};
use crate::tx::ownership::{self, Sides};
use crate::tx::publish::{self, PublishError, Transition, crash_point};
use crate::tx::session::{Session, TxError};
use crate::tx::turn::{self, Turn};

/// The session when none is named.
pub const DEFAULT_SESSION: &str = "default";
/// The trailer naming a record commit's session.
pub const SESSION_TRAILER: &str = "Loaf-Session";

/// What `record begin` records about the turn.
#[derive(Debug, Clone, Default)]
pub struct BeginOptions {
    /// The session (`default` when `None`).
    pub session: Option<String>,
    /// `Assisted-by: <agent>`.
    pub agent: Option<String>,
    /// The user's prompt (its first line becomes the subject). Any text: its control
    /// characters are stored escaped ([`inert`]), so a NUL or an escape sequence never
    /// reaches the turn, the commit or a terminal.
    pub prompt: Option<String>,
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    /// Committed.
    Committed(Recorded),
    /// Nothing changed since begin: no commit.
    Unchanged,
}

/// A record commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    /// Its `Loaf-Apply` id.
    pub id: String,
    /// The commit.
    pub commit: Oid,
    /// Its subject.
    pub subject: String,
    /// The paths it holds.
    pub paths: Vec<PathBuf>,
    /// The files whose uncommitted lines of the user's the agent's edits overlapped, so
    /// that they are committed with them, as `path (lines 3-5)`.
    pub carried: Vec<String>,
    /// How many of the agent's tool calls the turn was attributed by; `None`: the agent
    /// sent only turn events, and the turn is attributed as a whole.
    pub tool_calls: Option<u32>,
}

/// What `begin` did.
#[derive(Debug)]
pub struct Begun {
    /// The session.
    pub session: String,
    /// Things to tell the user (an unfinished turn finished or discarded).
    pub notices: Vec<Notice>,
}

/// What `commit` did.
#[derive(Debug)]
pub struct Committed {
    /// The session.
    pub session: String,
    /// The outcome; `None` when the session had no begun turn.
    pub ended: Option<Ended>,
    /// Things to tell the user.
    pub notices: Vec<Notice>,
}

/// `git loaf record begin`: checkpoints the user's state as the session's turn. An earlier
/// turn of the session that never ended (the agent crashed or was interrupted) is committed
/// first, or, when it cannot be, forgotten: its files stay as they are either way.
pub fn begin(cwd: &Path, options: &BeginOptions) -> Result<Begun, TxError> {
    let session = Session::begin(cwd, "record begin")?;
    crash_point("locked");
    let name = options
        .session
        .clone()
        .unwrap_or_else(|| DEFAULT_SESSION.to_owned());
    let key = turn::session_key(&name);
    let repo = &session.repo;
    let mut notices = session.notices.clone();
    if let Some(unfinished) = turn::load(repo, &key)? {
        notices.push(finish_unfinished(&session, &key, &unfinished));
    }
    refuse_intent_to_add(repo, "record begin")?;
    let cp = checkpoint::take(repo).map_err(TxError::from_checkpoint)?;
    // A loaf.yml the user edited before the turn is theirs (and accepted); one that changes
    // while the turn is being recorded is not (docs/loaf-yml.md, "A loaf.yml a reply writes waits
    // for you").
    crate::ops::config::governing(repo, &session.root)?;
    let begun = Turn {
        session: name.clone(),
        agent: options.agent.clone(),
        prompt: options.prompt.as_deref().map(|p| inert(p).into_owned()),
        time: now_secs(),
        head: cp.head.map(|h| h.to_string()),
        work: cp.work_tree.to_string(),
        index: cp.index_tree.to_string(),
        tools: None,
    };
    turn::save(repo, &key, &begun)?;
    super::record_tool::forget_mark(repo, &key);
    Ok(Begun {
        session: name,
        notices,
    })
}

/// Commits an unfinished turn, else forgets it; the notice saying which.
fn finish_unfinished(session: &Session, key: &str, unfinished: &Turn) -> Notice {
    let what = format!(
        "the previous turn of session {} never ended (no `record commit`)",
        unfinished.session
    );
    let outcome = end_turn(session, unfinished);
    let forgotten = turn::forget(&session.repo, key);
    let text = match (outcome, forgotten) {
        (Ok(Ended::Committed(r)), _) => format!(
            "{what}: committed its changes as {} ({}); `git loaf undo` takes it back",
            short_oid(r.commit),
            r.subject
        ),
        (Ok(Ended::Unchanged), _) => format!("{what}: it changed nothing; forgotten"),
        (Err(e), Ok(())) => format!(
            "{what} and could not be committed ({e}): forgotten; its changes stay in your files, uncommitted"
        ),
        (Err(e), Err(f)) => format!(
            "{what} and could not be committed ({e}) nor forgotten ({f}); its changes stay in your files"
        ),
    };
    Notice::new(NoticeKind::Turn, text)
}

/// `git loaf record commit`: commits what changed since the session's `begin`.
pub fn commit(cwd: &Path, session_name: Option<&str>) -> Result<Committed, TxError> {
    let session = Session::begin(cwd, "record commit")?;
    crash_point("locked");
    let name = session_name.unwrap_or(DEFAULT_SESSION).to_owned();
    let key = turn::session_key(&name);
    let mut notices = session.notices.clone();
    let Some(begun) = turn::load(&session.repo, &key)? else {
        return Ok(Committed {
            session: name,
            ended: None,
            notices,
        });
    };
    let ended = end_turn(&session, &begun)?;
    // After publish: a crash before this leaves a turn whose paths are committed, which the
    // next begin finds unchanged and forgets.
    turn::forget(&session.repo, &key)?;
    super::record_tool::forget_mark(&session.repo, &key);
    if let Ended::Committed(r) = &ended
        && !r.carried.is_empty()
    {
        notices.push(Notice::new(
            NoticeKind::YourWork,
            format!(
                "the agent's edits overlap lines of yours that were not committed, so the commit holds them too: {}; `git loaf undo` gives them back uncommitted",
                r.carried.join(", ")
            ),
        ));
    }
    Ok(Committed {
        session: name,
        ended: Some(ended),
        notices,
    })
}

/// A refusal when `git add -N` entries are staged (a checkpoint cannot hold them).
fn refuse_intent_to_add(repo: &Repository, command: &str) -> Result<(), TxError> {
    checkpoint::refuse_intent_to_add(repo).map_err(|paths| TxError::intent_to_add(&paths, command))
}

/// The turn's paths and the trees of its commit, index and undo.
struct TurnPlan {
    /// The paths the commit changes.
    paths: Vec<PathBuf>,
    /// The commit's tree: HEAD's with the agent's change laid on it.
    tree: Oid,
    /// The files whose uncommitted lines the agent's edits overlapped (see [`Recorded`]).
    carried: Vec<String>,
    /// The index after: the user's, with the commit's change laid on it.
    to_index: Oid,
    /// What undo restores: the user's state now with those paths as at begin.
    before: (Oid, Oid),
}

/// Commits the turn `begun` (see [`commit`]), with the lock held by `session`.
fn end_turn(session: &Session, begun: &Turn) -> Result<Ended, TxError> {
    let repo = &session.repo;
    refuse_intent_to_add(repo, "record commit")?;
    let (ref_name, head) = refs::head_ref(repo)?;
    let now = checkpoint::take(repo).map_err(TxError::from_checkpoint)?;
    crash_point("scanned");
    let Some(plan) = plan(repo, begun, &now)? else {
        return Ok(Ended::Unchanged);
    };
    let id = new_id(&begun.work);
    let subject = subject(begun.prompt.as_deref(), &plan.paths);
    let message = message(&subject, &id, &begun.session, begun.agent.as_deref());
    let commit = sign::write_commit(
        repo,
        plan.tree,
        &head.into_iter().collect::<Vec<_>>(),
        &message,
        &SignRequest::AsConfigured,
    )
    .map_err(sign::SignError::into_git)?;
    crash_point("commit");
    let recorded = Recorded {
        id,
        commit,
        subject,
        paths: plan.paths.clone(),
        carried: plan.carried.clone(),
        tool_calls: begun.tools.as_ref().map(|t| t.calls),
    };
    write_record(session, begun, &recorded, head, now.work_tree)?;
    crash_point("committed");
    let transition = transition(session, &ref_name, head, &now, &plan, &recorded);
    publish::publish(repo, &transition, true).map_err(|e| match e {
        PublishError::Changed(_) | PublishError::Moved { .. } | PublishError::IndexLocked(_) => {
            TxError::Refused {
                message: format!("the turn was not committed: {e}"),
                hint: "run `git loaf record commit` again (the turn is kept until it commits)"
                    .into(),
            }
        }
        other => TxError::Publish(other),
    })?;
    if recorded
        .paths
        .iter()
        .any(|p| p == Path::new(crate::config::FILE_NAME))
    {
        // The agent's loaf.yml: it governs only once the user accepts it, if it widens.
        // The turn is committed: failing here must not say otherwise, and the commit's
        // trailers already mark the text as the agent's while it is HEAD's.
        let _ = crate::ops::config::note_written_now(repo, &session.root);
    }
    Ok(Ended::Committed(recorded))
}

/// The turn's paths and trees; `None` when it changed nothing that HEAD does not already
/// hold (the agent changed nothing, or committed its change itself).
fn plan(repo: &Repository, begun: &Turn, now: &Checkpoint) -> Result<Option<TurnPlan>, TxError> {
    let work_before = begun.work_tree()?;
    let users =
        super::record_tool::users_tree_at_end(repo, begun, now.work_tree)?.unwrap_or(work_before);
    let paths: Vec<PathBuf> = treediff::changed_paths(repo, Some(users), Some(now.work_tree))?
        .into_iter()
        .collect();
    if paths.is_empty() {
        return Ok(None);
    }
    let paths = without_committed_since(repo, begun, now, users, paths)?;
    if paths.is_empty() {
        return Ok(None);
    }
    let sides = Sides {
        head: now.head_tree,
        work: users,
        index: now.index_tree,
        staged: now.work_tree,
    };
    let committed = ownership::commit_tree(repo, sides, &paths)?;
    if committed.tree == now.head_tree {
        return Ok(None);
    }
    let to_index = ownership::index_after(repo, now.head_tree, now.index_tree, committed.tree)?;
    let before = (
        treebuild::tree_with_entries(repo, now.work_tree, users, &paths)?,
        treebuild::tree_with_entries(repo, now.index_tree, begun.index_tree()?, &paths)?,
    );
    Ok(Some(TurnPlan {
        paths: committed.changed,
        tree: committed.tree,
        carried: committed.carried,
        to_index,
        before,
    }))
}

/// `paths` without those that commits made since begin (HEAD moved: the user, or another
/// session, committed) already hold as they are now. Refuses when such a commit changed a
/// path the turn changed, the file differs from it now, and the turn's change (from the
/// user's side `users`) does not lay on the commit without overlapping it: which version
/// the turn's commit should hold is for the user to say.
fn without_committed_since(
    repo: &Repository,
    begun: &Turn,
    now: &Checkpoint,
    users: Oid,
    paths: Vec<PathBuf>,
) -> Result<Vec<PathBuf>, TxError> {
    if begun.head_commit()? == now.head {
        return Ok(paths);
    }
    let tree_before = Oid::from_str(&checkpoint::commit_tree(repo, begun.head.as_deref())?)?;
    let moved = treediff::changed_paths(repo, Some(tree_before), Some(now.head_tree))?;
    let entry = |tree: Oid, path: &Path| -> Result<Option<(Oid, i32)>, TxError> {
        Ok(repo
            .find_tree(tree)?
            .get_path(path)
            .ok()
            .map(|e| (e.id(), e.filemode())))
    };
    let mut kept = Vec::new();
    let mut both = Vec::new();
    for path in paths {
        let (work, head) = (entry(now.work_tree, &path)?, entry(now.head_tree, &path)?);
        if !moved.contains(&path) {
            kept.push(path);
        } else if work != head {
            match merge_entry(repo, &path, entry(users, &path)?, head, work)? {
                Ok(_) => kept.push(path),
                Err(_) => both.push(path.display().to_string()),
            }
        }
    }
    if !both.is_empty() {
        return Err(TxError::Refused {
            message: format!(
                "the turn was not committed: commits made since it began also changed {}",
                both.join(", ")
            ),
            hint: "the agent's edits stay in your files, uncommitted: commit them yourself (`git commit`), or `git loaf record begin` to start the next turn".into(),
        });
    }
    Ok(kept)
}

/// The move of the branch and index to the record commit; the working tree stays as it is.
fn transition(
    session: &Session,
    ref_name: &str,
    head: Option<Oid>,
    now: &Checkpoint,
    plan: &TurnPlan,
    recorded: &Recorded,
) -> Transition {
    let head = head.map(|o| o.to_string());
    let (work, index) = (now.work_tree.to_string(), now.index_tree.to_string());
    let to_index = plan.to_index.to_string();
    Transition {
        workdir: session.root.clone(),
        ref_name: ref_name.to_owned(),
        old: head.clone(),
        new: Some(recorded.commit.to_string()),
        from_work: work.clone(),
        from_index: index,
        to_work: work.clone(),
        to_index: to_index.clone(),
        message: format!("git-loaf record {}: {}", recorded.id, recorded.subject),
        op: OpEntry {
            id: recorded.id.clone(),
            kind: OpKind::Apply,
            target: None,
            time: now_secs(),
            workdir: session.root.display().to_string(),
            ref_name: ref_name.to_owned(),
            summary: recorded.subject.clone(),
            before: UserState {
                head,
                work: plan.before.0.to_string(),
                index: plan.before.1.to_string(),
            },
            after: UserState {
                head: Some(recorded.commit.to_string()),
                work,
                index: to_index,
            },
            extras: Default::default(),
            reply_key: None,
        },
    }
}

/// `AI: <first line of the prompt>`, or a summary of the paths without one; at most 72
/// characters, cut at a word with `…` (as an apply's subject is: [`fit_subject`]). Control
/// characters show escaped (a turn begun before prompts were stored so may hold them).
pub fn subject(prompt: Option<&str>, paths: &[PathBuf]) -> String {
    let line = prompt
        .and_then(|p| p.lines().map(str::trim).find(|l| !l.is_empty()))
        .map(|l| inert(l).into_owned());
    let text = line.unwrap_or_else(|| {
        let names: Vec<String> = paths
            .iter()
            .take(3)
            .map(|p| p.display().to_string())
            .collect();
        let more = paths.len().saturating_sub(names.len());
        let mut text = format!("changed {}", names.join(", "));
        if more > 0 {
            text.push_str(&format!(" and {more} more"));
        }
        text
    });
    fit_subject(&format!("AI: {text}"))
}

/// The commit message: the subject, then `Loaf-Apply`, `Loaf-Session` and `Assisted-by`.
fn message(subject: &str, id: &str, session: &str, agent: Option<&str>) -> String {
    let one_line = |v: &str| inert(&v.replace(['\r', '\n'], " ")).into_owned();
    let mut text = format!(
        "{subject}\n\nLoaf-Apply: {id}\n{SESSION_TRAILER}: {}\n",
        one_line(session)
    );
    if let Some(agent) = agent {
        text.push_str(&format!("Assisted-by: {}\n", one_line(agent)));
    }
    text
}

/// The note and local report of the commit: what `git loaf show` prints (the changed paths,
/// the prompt, the paths that held the user's uncommitted work) and the record as JSON.
fn write_record(
    session: &Session,
    begun: &Turn,
    recorded: &Recorded,
    base: Option<Oid>,
    work_now: Oid,
) -> Result<(), TxError> {
    let repo = &session.repo;
    let [created, changed, deleted] =
        treediff::created_changed_deleted(repo, begun.work_tree()?, work_now)?;
    let kinds = [
        ("created", &created),
        ("modified", &changed),
        ("deleted", &deleted),
    ];
    let mut files: Vec<Value> = Vec::new();
    for (kind, paths) in kinds {
        for path in paths {
            files.push(json!({"path": path.display().to_string(), "change": kind}));
        }
    }
    files.sort_by(|a, b| a["path"].as_str().cmp(&b["path"].as_str()));
    let result = ExecutionResult {
        success: true,
        git: Some(GitInfo {
            commit: Some(recorded.commit.to_string()),
            base: base.map(|o| o.to_string()),
            apply: recorded.id.clone(),
            uncommitted: recorded.carried.clone(),
            ..GitInfo::default()
        }),
        ..ExecutionResult::default()
    };
    let text = record_text(begun, recorded, &files);
    let note = json!({
        "text": text,
        "result": result,
        "record": {
            "session": begun.session,
            "agent": begun.agent,
            "prompt": begun.prompt,
            "files": files,
            "attribution": if recorded.tool_calls.is_some() { "tools" } else { "turn" },
            "toolCalls": recorded.tool_calls,
            "uncommittedBefore": recorded.carried,
        },
    });
    write_report_value(repo, recorded.commit, &session.root, note.clone())?;
    write_note_value(repo, recorded.commit, &session.root, note)?;
    Ok(())
}

/// The text `git loaf show` prints for a record commit.
fn record_text(begun: &Turn, recorded: &Recorded, files: &[Value]) -> String {
    let mut out = format!(
        "=== LOAF RECORD === turn {} · commit {}\nsession {}",
        recorded.id,
        short_oid(recorded.commit),
        begun.session
    );
    if let Some(agent) = &begun.agent {
        out.push_str(&format!(" · agent {agent}"));
    }
    out.push('\n');
    out.push_str(&match recorded.tool_calls {
        Some(calls) => format!(
            "attributed per tool call ({calls} {}): what changed between them is yours, left uncommitted\n",
            if calls == 1 { "call" } else { "calls" }
        ),
        None => "attributed as a whole turn (the agent sent no tool events): all that changed between the prompt and the end of the reply\n".to_owned(),
    });
    if let Some(prompt) = &begun.prompt {
        out.push_str("prompt:\n");
        for line in prompt.lines() {
            out.push_str(&format!("  {line}\n"));
        }
    }
    for file in files {
        let mark = match file["change"].as_str() {
            Some("created") => "A",
            Some("deleted") => "D",
            _ => "M",
        };
        out.push_str(&format!(
            "{mark} {}\n",
            file["path"].as_str().unwrap_or_default()
        ));
    }
    if !recorded.carried.is_empty() {
        out.push_str(&format!(
            "your uncommitted lines the agent's edits overlapped, committed with them: {}\n",
            recorded.carried.join(", ")
        ));
    }
    out.push_str("=== END ===\n");
    inert(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_take_the_prompts_first_line_and_fit_72_characters() {
        let paths = vec![PathBuf::from("a.rs")];
        assert_eq!(
            subject(Some("\n  Fix the parser \nand more"), &paths),
            "AI: Fix the parser"
        );
        let long = subject(Some(&"word ".repeat(40)), &paths);
        assert!(long.chars().count() <= 72, "{long}");
        assert!(long.ends_with("word…"), "cut at a word: {long}");
        let many: Vec<PathBuf> = ["a", "b", "c", "d", "e"]
            .iter()
            .map(PathBuf::from)
            .collect();
        assert_eq!(subject(None, &many), "AI: changed a, b, c and 2 more");
        assert_eq!(subject(Some("   "), &paths), "AI: changed a.rs");
    }

    #[test]
    fn the_message_carries_the_three_trailers() {
        assert_eq!(
            message("AI: x", "abc123", "s\n1", Some("claude-code")),
            "AI: x\n\nLoaf-Apply: abc123\nLoaf-Session: s 1\nAssisted-by: claude-code\n"
        );
        assert_eq!(
            message("AI: x", "abc123", "s", None),
            "AI: x\n\nLoaf-Apply: abc123\nLoaf-Session: s\n"
        );
    }
}
