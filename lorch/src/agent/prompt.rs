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

/// The builder's prompt.
pub fn builder(command: &Command, workspace: &Path, instructions: &str) -> String {
    let mut out = String::from(
        "You are the builder agent of lorch. Implement the task below in the repository by \
         writing NESL blocks, as the instructions at the end describe. All your blocks are \
         applied as one git commit; tests and linters run afterwards.\n\n",
    );
    out.push_str(&task_section(command));
    out.push_str(&files_section(workspace, &named_files(command)));
    if command.action == Action::ImplementChanges {
        out.push_str(&findings_section(workspace, &command.task_id));
    }
    out.push_str(instructions);
    out.push_str(
        "\n## Your reply\n\nReply with the NESL blocks that implement the task, and a short \
         explanation between them if you like. Nothing else is run.\n",
    );
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

/// The reviewer's prompt: the task, the diff, and the verdict format.
pub fn reviewer(command: &Command, diff: &str) -> String {
    let mut out = String::from(
        "You are the reviewer agent of lorch. Review the builder's change below for \
         correctness, tests, and code quality against the task.\n\n",
    );
    out.push_str(&task_section(command));
    let diff = super::clip(diff, MAX_DIFF_BYTES);
    let _ = writeln!(out, "## The change\n\n````diff\n{diff}\n````\n");
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

/// The spec-maintainer's prompt: the task, SPEC.md, the rules of §10.5 and the reply format.
pub fn spec_maintainer(command: &Command, workspace: &Path, spec_path: &str, spec: &str) -> String {
    let mut out = String::from(
        "You are the spec-maintainer agent of lorch. Check that the task below is implemented \
         as the spec requires, and record its state in the spec.\n\n",
    );
    out.push_str(&task_section(command));
    out.push_str(&findings_section(workspace, &command.task_id));
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
