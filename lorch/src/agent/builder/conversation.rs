//! The builder's step as a conversation (docs/lorch.md, "The three agents"): the model's
//! reply is applied through git-loaf, and git-loaf's report, with the output of the
//! `--check` commands that failed, goes back to the model as the next turn, until every
//! block succeeded, the step changed files and the checks pass, or `max_turns` is reached.
//!
//! ```text
//! prompt ─→ model ─→ git loaf apply ─→ assess ─┬─ all ✅, files changed, checks pass ─→ squash the turns ─→ one commit
//!   ↑                                          └─ otherwise: the report back ─┐
//!   └──────────────── next turn (the conversation so far) ←───────────────────┘
//!                                    max_turns reached: undo the turns ─→ no commit
//! ```
//!
//! Every turn's apply is a git-loaf commit of what succeeded (the model sees the files as
//! they are now, so a fix builds on what worked); a step that succeeds ends as ONE commit,
//! its turns squashed by git-loaf's squash as `git loaf squash` does; a step that does not
//! is undone through git-loaf and leaves none. A reply that changes nothing (it only reads,
//! or has no blocks) is a turn that did not finish the task: its report (the files it read)
//! goes back like any other.

use std::path::Path;

use git_loaf::api::{Applied, ApplyOptions, SquashOptions, apply, squash as loaf_squash};
use serde_json::{Value, json};

use super::{Step, assess};
use crate::agent::emit::Draft;
use crate::agent::prompt::{self, Dialogue, Turn};
use crate::agent::{Shim, StepError};
use crate::protocol::{Command, EventType, LogLevel, Message, Object};

/// Turns per step when neither lorch.json (`policy.max_turns`) nor `--max-turns` says.
pub const DEFAULT_MAX_TURNS: usize = 4;

/// The most turns of `command`'s step: `inputs.max_turns` (lorch sends lorch.json's
/// `policy.max_turns`), else the agent's `--max-turns`; at least one.
pub fn max_turns(shim: &Shim, command: &Command) -> usize {
    command
        .inputs
        .get("max_turns")
        .and_then(Value::as_u64)
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or(shim.options.max_turns)
        .max(1)
}

/// A turn's apply that reached the user's branch: its id and commit.
struct Made {
    apply: String,
    commit: String,
}

/// The last turn, as `builder.completed` reports it.
struct Last {
    report: String,
    succeeded: usize,
    failed: usize,
    problems: Vec<String>,
    checks: Vec<Value>,
    notices: Vec<String>,
    turns: usize,
}

/// Talks with the model until the step is done or `max_turns` is reached; returns the step
/// as one commit, or with no commit and the reasons. `earlier` is why the last attempt at
/// the same command failed.
pub fn converse(
    shim: &Shim,
    command: &Command,
    key: &str,
    earlier: Option<&str>,
) -> Result<Step, StepError> {
    let root = &shim.options.workspace;
    // The same text `git loaf instructions` prints here: the syntax and the actions the
    // loaf.yml the user accepted allows (a wider one a turn wrote waits for the user).
    let instructions =
        git_loaf::api::instructions(root).map_err(|e| StepError::Apply(e.to_string()))?;
    let mut made = Vec::new();
    match talk(shim, command, key, earlier, &instructions, &mut made) {
        Ok((last, true)) => finish(shim, command, made, last),
        Ok((last, false)) => Ok(give_up(shim, &made, last)),
        Err(error) => {
            // The model or git-loaf failed mid-step: what the earlier turns made goes too.
            if let Err(why) = undo(root, &made) {
                let _ = shim.emitter.log(LogLevel::Warn, &why, Object::new());
            }
            Err(error)
        }
    }
}

/// The turns; `made` gets every commit they leave. The last turn, and whether it finished
/// the step.
fn talk(
    shim: &Shim,
    command: &Command,
    key: &str,
    earlier: Option<&str>,
    instructions: &str,
    made: &mut Vec<Made>,
) -> Result<(Last, bool), StepError> {
    let root = &shim.options.workspace;
    let max = max_turns(shim, command);
    let options = ApplyOptions {
        model: Some(shim.options.model()),
        reply_key: Some(key.to_owned()),
        // A step made in one turn is that turn's commit: it names the task and step too.
        message: Some(step_subject(command)),
        ..ApplyOptions::default()
    };
    let mut turns: Vec<Turn> = Vec::new();
    // A `git loaf review` report waiting for the model: the builder is the model here.
    let rejected = git_loaf::api::take_review_report(root);
    for number in 1..=max {
        let dialogue = Dialogue {
            earlier,
            rejected: rejected.as_deref(),
            turns: &turns,
            number,
            max,
        };
        let prompt = prompt::builder(command, root, instructions, &dialogue);
        let reply = shim.ask_turn(command, &prompt, number)?;
        let applied =
            apply(root, &reply.text, &options).map_err(|e| StepError::Apply(e.to_string()))?;
        let git = applied.result.git.clone().unwrap_or_default();
        let published = git.not_applied.is_none() && applied.kept.is_none();
        if let (Some(commit), true) = (&git.commit, published) {
            made.push(Made {
                apply: git.apply.clone(),
                commit: commit.clone(),
            });
        }
        let (problems, checks) = assess(shim, command, apply_problems(&applied), !made.is_empty());
        let last = last_turn(&applied, problems, checks, number);
        let verdict = if last.problems.is_empty() {
            format!("done ({})", applied.result.tally())
        } else if number < max && applied.kept.is_none() {
            format!(
                "{}; the report goes back to the model",
                last.problems.join("; ")
            )
        } else {
            last.problems.join("; ")
        };
        progress(shim, command, number, max, &verdict);
        if last.problems.is_empty() {
            return Ok((last, true));
        }
        // The user's branch moved meanwhile: the conversation cannot build on it.
        if applied.kept.is_some() || number == max {
            return Ok((last, false));
        }
        turns.push(Turn {
            reply: reply.text,
            report: last.report.clone(),
            problems: last.problems.clone(),
            failed_checks: last
                .checks
                .iter()
                .filter(|c| c["status"] != "pass")
                .cloned()
                .collect(),
        });
    }
    Err(StepError::Apply("no turn was taken".into()))
}

/// Tells lorch how the turn went, as a `builder.progress` event (the console shows its
/// `message`): the run's reader sees the conversation as it happens.
fn progress(shim: &Shim, command: &Command, number: usize, max: usize, verdict: &str) {
    let message = format!("turn {number} of {max}: {verdict}");
    let mut payload = Object::new();
    payload.insert("turn".into(), json!(number));
    payload.insert("max_turns".into(), json!(max));
    payload.insert("message".into(), json!(message));
    let draft = Draft::new(EventType::BuilderProgress, None, payload);
    // A failed write is found out by the command loop at its next write.
    let _ = shim
        .emitter
        .send(&Message::Event(shim.emitter.event(command, draft)));
}

/// Why an apply falls short by itself.
fn apply_problems(applied: &Applied) -> Vec<String> {
    let result = &applied.result;
    let mut problems = Vec::new();
    if result.total_blocks == 0 {
        problems.push("the reply has no NESL blocks".to_owned());
    } else if !result.success {
        problems.push(format!(
            "the apply did not fully succeed ({})",
            result.tally()
        ));
    }
    if let Some(why) = result.git.as_ref().and_then(|g| g.not_applied.as_ref()) {
        problems.push(format!("not applied: {why}"));
    }
    if let Some(kept) = &applied.kept {
        problems.push(format!(
            "the commit was not published ({}); kept as {}",
            kept.reason, kept.refname
        ));
    }
    problems
}

fn last_turn(applied: &Applied, problems: Vec<String>, checks: Vec<Value>, turns: usize) -> Last {
    let result = &applied.result;
    let ok = result.results.iter().filter(|r| r.success).count();
    Last {
        report: result.to_text(),
        succeeded: ok,
        failed: result.results.len() - ok + result.parse_errors.len(),
        problems,
        checks,
        // The text as git-loaf prints it: `builder.completed` carries sentences.
        notices: applied.notices.iter().map(ToString::to_string).collect(),
        turns,
    }
}

/// The finished step as one commit: its turns squashed when there are several.
fn finish(shim: &Shim, command: &Command, made: Vec<Made>, last: Last) -> Result<Step, StepError> {
    let (apply_id, commit) = match made.as_slice() {
        [one] => (one.apply.clone(), one.commit.clone()),
        _ => match squash(shim, command, made.len()) {
            Ok(squashed) => squashed,
            Err(error) => {
                let mut last = last;
                last.problems.push(format!(
                    "the turns could not be squashed into one commit: {error}"
                ));
                return Ok(give_up(shim, &made, last));
            }
        },
    };
    Ok(Step {
        report: last.report,
        succeeded: last.succeeded,
        failed: last.failed,
        problems: Vec::new(),
        apply_id,
        commit: Some(commit),
        checks: last.checks,
        turns: last.turns,
        notices: last.notices,
        recovered: false,
    })
}

/// The failed step: its commits undone, the last turn's problems and why it stopped.
fn give_up(shim: &Shim, made: &[Made], last: Last) -> Step {
    let mut problems = last.problems;
    let turns = last.turns;
    problems.push(match undo(&shim.options.workspace, made) {
        Ok(_) if made.is_empty() => format!("not done after {turns} turn(s)"),
        Ok(None) => format!(
            "not done after {turns} turn(s): its {} commit(s) were undone through git-loaf",
            made.len()
        ),
        Ok(Some(saved)) => format!(
            "not done after {turns} turn(s): its {} commit(s) were undone through git-loaf; {saved}",
            made.len()
        ),
        Err(why) => format!("not done after {turns} turn(s); {why}"),
    });
    Step {
        report: last.report,
        succeeded: last.succeeded,
        failed: last.failed,
        problems,
        apply_id: String::new(),
        commit: None,
        checks: last.checks,
        turns,
        notices: last.notices,
        recovered: false,
    }
}

/// The message of a step squashed from several turns: the task and the step in its subject
/// (`lorch T-0042 step 3 (implement_changes): <goal>`), and who wrote it, `Assisted-by:
/// lorch builder (<program>)`, as each turn's commit said (git-loaf's squash adds its own
/// `Loaf-Squash` trailers after it).
pub fn step_message(shim: &Shim, command: &Command, turns: usize) -> String {
    let subject = git_loaf::api::fit_subject(&step_subject(command));
    format!(
        "{subject}\n\nThe builder's {turns} turns of this step, squashed into one commit.\n\nAssisted-by: {}\n",
        shim.options.model()
    )
}

/// What a step is for, as its commits' subjects say it: `lorch T-0042 step 3
/// (implement_changes): <goal>` (git-loaf puts `AI: ` before it on each turn's commit).
fn step_subject(command: &Command) -> String {
    let step = command
        .inputs
        .get("step")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let goal = command
        .inputs
        .get("goal")
        .and_then(Value::as_str)
        .unwrap_or("");
    format!(
        "lorch {} step {step} ({}): {goal}",
        command.task_id, command.action
    )
}

/// Undoes the turns' commits through git-loaf (`git loaf undo --to <first apply>`). Files
/// changed since the first turn besides the turns' own (what the `--check` commands left, a
/// build's output) make git-loaf refuse; the undo is then forced, which first saves those
/// changes under `refs/loaf/saved/`: the answer says where. `Err`: why it could not undo.
fn undo(root: &Path, made: &[Made]) -> Result<Option<String>, String> {
    let Some(first) = made.first() else {
        return Ok(None);
    };
    if git_loaf::api::undo_to(root, &first.apply, false).is_ok() {
        return Ok(None);
    }
    match git_loaf::api::undo_to(root, &first.apply, true) {
        Ok(walked) => Ok(Some(match walked.saved {
            Some(saved) => format!(
                "what else changed in the files meanwhile (the checks' output) is saved as {saved}"
            ),
            None => "the undo was forced".to_owned(),
        })),
        Err(e) => Err(format!(
            "its commits could not be undone ({e}): `git loaf undo --to {}` takes them back",
            first.apply
        )),
    }
}

/// Squashes the last `turns` git-loaf applies at HEAD into one commit, as `git loaf squash
/// --limit <turns>` does, with [`step_message`]: its id and commit.
pub fn squash(shim: &Shim, command: &Command, turns: usize) -> Result<(String, String), StepError> {
    let options = SquashOptions {
        limit: Some(turns),
        message: Some(step_message(shim, command, turns)),
        ..SquashOptions::default()
    };
    let squashed = loaf_squash(&shim.options.workspace, &options)
        .map_err(|e| StepError::Apply(e.to_string()))?;
    let commit = squashed
        .commit
        .ok_or_else(|| StepError::Apply("git-loaf squash made no commit".into()))?;
    Ok((squashed.id, commit.to_string()))
}
