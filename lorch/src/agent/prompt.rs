//! The prompts: what each role's model is told, as plain markdown on its stdin.
//!
//! Every prompt starts with the task (id, action, goal, the command's inputs as JSON) and
//! ends with the exact form of reply the shim can use, since the shim, not a human, reads
//! it: NESL blocks for the builder (the text of `git loaf instructions`, so the model learns
//! the syntax and the actions this repository allows), a JSON verdict for the reviewer
//! ([`super::verdict`]), a status line and whole sections for the spec-maintainer
//! ([`super::spec`]).

use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;

use crate::protocol::{Action, Command};
use crate::safety;

/// Bytes of one file shown in a prompt.
pub const MAX_FILE_BYTES: usize = 64 * 1024;
/// Bytes of a diff shown to the reviewer.
pub const MAX_DIFF_BYTES: usize = 512 * 1024;
/// Bytes of a diff shown to the spec-maintainer (its prompt holds the whole spec too).
pub const MAX_SPEC_DIFF_BYTES: usize = 128 * 1024;
/// Paths of `git ls-files` listed in the builder's prompt.
pub const MAX_LISTED_FILES: usize = 2000;

/// The task: id, action, goal, inputs.
pub fn task_section(command: &Command) -> String {
    let mut out = format!(
        "# Task {} ({})\n\n",
        command.task_id,
        command.action.as_str()
    );
    if let Some(goal) = super::input_str(command, "goal") {
        let _ = writeln!(out, "## Goal\n\n{goal}\n");
    }
    let inputs = serde_json::to_string_pretty(&Value::Object(command.inputs.clone()))
        .unwrap_or_else(|_| "{}".into());
    let _ = writeln!(out, "## Inputs\n\n```json\n{inputs}\n```\n");
    if !command.expected_outputs.is_empty() {
        out.push_str("## Expected outputs\n\n");
        for output in &command.expected_outputs {
            let required = if output.is_required() {
                ""
            } else {
                " (optional)"
            };
            let description = output
                .description
                .as_deref()
                .map(|d| format!(": {d}"))
                .unwrap_or_default();
            let _ = writeln!(out, "- `{}`{required}{description}", output.path);
        }
        out.push('\n');
    }
    out
}

/// The paths a command names: `inputs.files` (strings) and the expected outputs.
pub fn named_files(command: &Command) -> Vec<String> {
    let mut files: Vec<String> = command
        .inputs
        .get("files")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect();
    for output in &command.expected_outputs {
        if !files.contains(&output.path) {
            files.push(output.path.clone());
        }
    }
    files
}

/// A section with the content of each file (or why it is not shown).
pub fn files_section(workspace: &Path, files: &[String]) -> String {
    if files.is_empty() {
        return String::new();
    }
    let mut out = String::from("## Files\n\n");
    for file in files {
        let shown = match safety::confine(workspace, file) {
            Err(e) => format!("(not shown: {e})"),
            Ok(path) => match std::fs::read(&path) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    "(does not exist yet)".to_owned()
                }
                Err(e) => format!("(cannot be read: {e})"),
                Ok(bytes) if bytes.len() > MAX_FILE_BYTES => {
                    format!("({} bytes: too large to show here; read it)", bytes.len())
                }
                Ok(bytes) => match String::from_utf8(bytes) {
                    Ok(text) => format!("````\n{text}\n````"),
                    Err(_) => "(binary)".to_owned(),
                },
            },
        };
        let _ = writeln!(out, "### {file}\n\n{shown}\n");
    }
    out
}

/// Bytes of one earlier reply shown again in a later turn's prompt.
const MAX_TURN_REPLY_BYTES: usize = 32 * 1024;
/// Bytes of one earlier turn's git-loaf report shown again.
const MAX_TURN_REPORT_BYTES: usize = 32 * 1024;

/// One earlier turn of the builder's conversation, as the next prompt tells it.
#[derive(Debug, Clone)]
pub struct Turn {
    /// The model's reply.
    pub reply: String,
    /// git-loaf's report of its apply.
    pub report: String,
    /// Why the step was not done after it.
    pub problems: Vec<String>,
    /// The `--check` results that did not pass (command, exit code, output tail).
    pub failed_checks: Vec<Value>,
}

/// Where the builder's conversation stands.
#[derive(Debug, Clone, Copy)]
pub struct Dialogue<'a> {
    /// Why the last attempt at this command (same idempotency key) failed, when one did.
    pub earlier: Option<&'a str>,
    /// What the user rejected of earlier changes with `git loaf review`, not yet told.
    pub rejected: Option<&'a str>,
    /// The turns so far, oldest first.
    pub turns: &'a [Turn],
    /// This turn's number, from 1.
    pub number: usize,
    /// The most turns.
    pub max: usize,
}

/// The builder's prompt for turn `dialogue.number`: the task and the files as they are now,
/// the conversation so far, git-loaf's instructions, and what to reply.
pub fn builder(
    command: &Command,
    workspace: &Path,
    instructions: &str,
    dialogue: &Dialogue,
) -> String {
    let mut out = String::from(
        "You are the builder agent of lorch. Implement the task below in the repository by \
         writing NESL blocks, as the instructions at the end describe. Your blocks are \
         applied through git-loaf; tests and linters run afterwards. What happened comes back \
         to you as the next message, until the task is done: the step ends as one git \
         commit.\n\n",
    );
    out.push_str(&task_section(command));
    out.push_str(&files_section(workspace, &named_files(command)));
    out.push_str(&tracked_files_section(workspace));
    if command.action == Action::ImplementChanges {
        out.push_str(&findings_section(workspace, &command.task_id));
    }
    if let Some(earlier) = dialogue.earlier {
        let _ = writeln!(
            out,
            "## An earlier attempt at this step failed\n\n\
             Its changes were undone: the files shown above are as they are now. It failed \
             because:\n\n````\n{}\n````\n",
            super::clip(earlier, MAX_TURN_REPORT_BYTES)
        );
    }
    if let Some(rejected) = dialogue.rejected {
        let _ = writeln!(
            out,
            "## What the user rejected of earlier changes (git loaf review)\n\n````\n{}\n````\n",
            super::clip(rejected, MAX_TURN_REPORT_BYTES)
        );
    }
    out.push_str(&conversation_section(dialogue.turns));
    out.push_str(instructions);
    if dialogue.turns.is_empty() {
        out.push_str(
            "\n## Your reply\n\nReply with the NESL blocks that implement the task, and a \
             short explanation between them if you like. Nothing else is run.\n",
        );
    } else {
        let _ = write!(
            out,
            "\n## Your reply (turn {} of {})\n\nThe blocks of your earlier replies that \
             succeeded are applied: the files shown above are as they are now. Reply with the \
             NESL blocks that fix what failed or finish the task; do not repeat blocks that \
             succeeded. Nothing else is run.\n",
            dialogue.number, dialogue.max
        );
    }
    out
}

/// The conversation so far: each earlier reply, git-loaf's report of it, and why the step
/// was not done after it (with the failed checks' output).
fn conversation_section(turns: &[Turn]) -> String {
    if turns.is_empty() {
        return String::new();
    }
    let mut out = String::from("## The conversation so far\n\n");
    for (i, turn) in turns.iter().enumerate() {
        let n = i + 1;
        let reply = super::clip(&turn.reply, MAX_TURN_REPLY_BYTES);
        let report = super::clip(&turn.report, MAX_TURN_REPORT_BYTES);
        let _ = writeln!(
            out,
            "### Your reply {n}\n\n````\n{reply}\n````\n\n### git-loaf's report of reply {n}\n\n````\n{report}\n````\n"
        );
        if !turn.problems.is_empty() {
            let _ = writeln!(out, "### Why the task is not done after reply {n}\n");
            for problem in &turn.problems {
                let _ = writeln!(out, "- {problem}");
            }
            out.push('\n');
        }
        for check in &turn.failed_checks {
            let command = check["command"].as_str().unwrap_or_default();
            let how = match check["exit_code"].as_i64() {
                Some(code) => format!("exit code {code}"),
                None => check["status"].as_str().unwrap_or("failed").to_owned(),
            };
            let output = check["output_tail"].as_str().unwrap_or_default();
            let _ = writeln!(
                out,
                "### Check `{command}` failed ({how})\n\n````\n{output}\n````\n"
            );
        }
    }
    out
}

/// The task's review (`reviews/<task>.json`), when there is one.
pub fn review_section(workspace: &Path, task_id: &str) -> String {
    let path = format!("reviews/{task_id}.json");
    let Ok(full) = safety::confine(workspace, &path) else {
        return String::new();
    };
    match std::fs::read_to_string(full) {
        Ok(text) => format!(
            "## The review ({path})\n\n```json\n{}\n```\n\n",
            super::clip(&text, MAX_FILE_BYTES)
        ),
        Err(_) => String::new(),
    }
}

/// The repository's tracked files (`git ls-files`), none outside a repository.
pub fn tracked_files(workspace: &Path) -> Vec<String> {
    let out = std::process::Command::new("git")
        .args(["-c", "core.quotepath=off", "ls-files", "-z"])
        .current_dir(workspace)
        .output();
    let listed = match out {
        Ok(out) if out.status.success() => out.stdout,
        _ => return Vec::new(),
    };
    listed
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect()
}

/// The repository's tracked files (`git ls-files`), at most [`MAX_LISTED_FILES`], so that
/// the builder knows what there is and can ask to read it.
pub fn tracked_files_section(workspace: &Path) -> String {
    let files = tracked_files(workspace);
    if files.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "## The repository's files (`git ls-files`)\n\nTo see one that is not shown above, \
         reply with a block that reads it (`file_read`, `files_read`): its content comes back \
         in the next message.\n\n```\n",
    );
    for file in files.iter().take(MAX_LISTED_FILES) {
        let _ = writeln!(out, "{file}");
    }
    if files.len() > MAX_LISTED_FILES {
        let _ = writeln!(out, "… and {} more", files.len() - MAX_LISTED_FILES);
    }
    out.push_str("```\n\n");
    out
}

/// The review and spec notes of the task, when there are any: what implement_changes must
/// address.
pub fn findings_section(workspace: &Path, task_id: &str) -> String {
    let mut out = String::new();
    for (title, path) in [
        (
            "Review findings to address",
            format!("reviews/{task_id}.json"),
        ),
        (
            "Spec-maintainer notes to address",
            format!("spec_notes/{task_id}.json"),
        ),
    ] {
        let Ok(full) = safety::confine(workspace, &path) else {
            continue;
        };
        if let Ok(text) = std::fs::read_to_string(full) {
            let text = super::clip(&text, MAX_FILE_BYTES);
            let _ = writeln!(out, "## {title} ({path})\n\n```json\n{text}\n```\n");
        }
    }
    out
}

/// The reviewer's prompt: the task, the change ([`super::change::section`]), and the
/// verdict format.
pub fn reviewer(command: &Command, change: &str) -> String {
    let mut out = String::from(
        "You are the reviewer agent of lorch. Review the builder's change below for \
         correctness, tests, and code quality against the task.\n\n",
    );
    out.push_str(&task_section(command));
    out.push_str(change);
    out.push_str(
        "## Your reply\n\n\
         End your reply with your verdict as one JSON object in a ```json fenced block:\n\n\
         ```json\n\
         {\"status\": \"approved\", \"summary\": \"one paragraph\", \"findings\": []}\n\
         ```\n\n\
         `status` is `approved` or `changes_requested`. Each finding is \
         `{\"path\": \"src/a.rs\", \"line\": 42, \"comment\": \"what to change\"}` (`line` may \
         be omitted). Request changes only for problems the builder must fix. If you cannot \
         write JSON, a last line `VERDICT: approved` or `VERDICT: changes_requested` is \
         accepted too.\n",
    );
    out
}

/// The spec-maintainer's prompt: the task, its change ([`super::change::section`]), the
/// review, the spec, the sections it may change and the reply format.
pub fn spec_maintainer(
    command: &Command,
    workspace: &Path,
    spec_path: &str,
    spec: &str,
    change: &str,
) -> String {
    let mut out = String::from(
        "You are the spec-maintainer agent of lorch. Check that the task below is implemented \
         as the spec requires, and record its state in the spec.\n\n",
    );
    out.push_str(&task_section(command));
    out.push_str(change);
    out.push_str(&review_section(workspace, &command.task_id));
    let _ = writeln!(out, "## {spec_path}\n\n````markdown\n{spec}\n````\n");
    out.push_str(&format!(
        "## What you may change\n\n\
         Only these `##` sections of {spec_path}; an edit anywhere else is refused whole:\n\n\
         - `## Status`: the status table (task ids, states, timestamps);\n\
         - `## Completion`: completion markers (checkboxes, status tags);\n\
         - `## Changelog`: append entries at its end, change nothing already there;\n\
         - `## Open Questions`: append new items at its end, change nothing already there.\n\n\
         Never change requirements, acceptance criteria or instructions.\n\n\
         ## Your reply\n\n\
         Start with one line `STATUS: updated`, `STATUS: no_changes_needed` or \
         `STATUS: changes_requested` (the implementation does not meet the spec: the builder \
         gets your summary), then one line `SUMMARY: ...`. For each section you change, give \
         the whole new section, heading line included, in a fenced block whose info string is \
         `spec-section`:\n\n\
         ```spec-section\n\
         ## Status\n\
         | Task | State | Updated |\n\
         |------|-------|---------|\n\
         | {task} | done | 2025-10-19T18:30:00Z |\n\
         ```\n",
        task = command.task_id
    ));
    out
}
