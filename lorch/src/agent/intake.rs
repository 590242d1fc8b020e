//! The orchestration agent (docs/lorch.md, "Running without a task"): `intake` turns what
//! the user asked for into proposed tasks; `task_discovery` derives the tasks of one plan
//! file (`inputs.plan`, the plan the user picked among the candidates). Its prompt holds
//! the user's words, the plan and spec candidates of file discovery ([`super::discovery`],
//! the best few shown whole; for `task_discovery` the chosen plan first) and the
//! repository's files (`git ls-files`); the model answers with one JSON object, checked
//! here before it becomes `orchestration.proposed_tasks`, `orchestration.plan_conflict`
//! when it names conflicts (a task contradicting the spec or another task, plan files that
//! disagree), or `orchestration.needs_clarification` when it asks questions instead. It
//! never edits a file: lorch writes the tasks the user approves.
//!
//! The reply, in a ```` ```json ```` fenced block (the last one counts) or as the whole reply:
//!
//! ```text
//! {"tasks": [{"id": "T-0001", "goal": "…", "files": ["src/a.rs"]}], "plan": "PLAN.md", "notes": "…"}
//! {"tasks": […], "conflicts": ["T-0002 contradicts SPEC.md's Requirements: …"]}
//! {"questions": ["Which plan: PLAN.md or docs/plan_v2.md?"]}
//! ```

use std::fmt::Write as _;
use std::path::Path;

use serde_json::{Map, Value, json};

use super::discovery::{self, Candidate};
use super::emit::Draft;
use super::verdict::fenced_blocks;
use super::{Answer, Shim, StepError};
use crate::config::check_task_id;
use crate::protocol::{Command, EventType, Object, strings};
use crate::safety::confine;

/// Candidates whose content the prompt shows.
const SHOWN_CANDIDATES: usize = 3;

/// Handles `intake` and `task_discovery` (the tasks of `inputs.plan`).
pub fn handle(shim: &Shim, command: &Command) -> Result<Answer, StepError> {
    let root = &shim.options.workspace;
    let instruction = super::input_str(command, "user_instruction").unwrap_or("");
    let mut found = discovery::candidates(root, instruction);
    let chosen = super::input_str(command, "plan");
    if let Some(plan) = chosen {
        confine(root, plan)?;
        found.retain(|c| c.path != plan);
        found.insert(
            0,
            Candidate {
                path: plan.to_owned(),
                confidence: 1.0,
            },
        );
    }
    let prompt = prompt(root, command, instruction, &found);
    let reply = shim.ask(command, &prompt)?;
    let mut payload = Object::new();
    let candidates: Vec<Value> = found
        .iter()
        .map(|c| json!({"path": c.path, "confidence": c.confidence}))
        .collect();
    payload.insert("plan_candidates".into(), json!(candidates));
    let draft = match parse_reply(&reply.text, root).map_err(StepError::NoProposal)? {
        Reply::Questions(questions) => {
            payload.insert("questions".into(), json!(questions));
            Draft::new(
                EventType::OrchestrationNeedsClarification,
                Some("needs_clarification"),
                payload,
            )
        }
        Reply::Tasks {
            tasks,
            plan,
            notes,
            conflicts,
        } => {
            let bare = tasks.is_empty();
            payload.insert("derived_tasks".into(), json!(tasks));
            if let Some(plan) = plan.or_else(|| chosen.map(str::to_owned)) {
                payload.insert("plan".into(), json!(plan));
            }
            payload.insert("notes".into(), json!(notes));
            if conflicts.is_empty() {
                Draft::new(
                    EventType::OrchestrationProposedTasks,
                    Some("proposed"),
                    payload,
                )
            } else {
                payload.insert("conflicts".into(), json!(conflicts));
                let status = if bare { "unresolved" } else { "conflict" };
                Draft::new(EventType::OrchestrationPlanConflict, Some(status), payload)
            }
        }
    };
    // Questions, and conflicts with no task, get no receipt: lorch sends the user's answers
    // with the same key, and they must reach the model.
    let asks = draft.event == EventType::OrchestrationNeedsClarification
        || draft.status.as_deref() == Some("unresolved");
    let keep = !asks;
    Ok(Answer {
        drafts: vec![draft],
        keep,
    })
}

fn prompt(root: &Path, command: &Command, instruction: &str, found: &[Candidate]) -> String {
    let mut out = format!(
        "# Intake ({})\n\nYou turn what the user asks for into tasks for a builder agent: each \
         task is built as one commit, reviewed, and checked against the spec. Do not change \
         any file; only answer.\n\n## What the user asks\n\n{instruction}\n\n",
        command.task_id
    );
    if let Some(plan) = super::input_str(command, "plan") {
        let _ = write!(
            out,
            "## The plan the user chose\n\nDerive the tasks from `{plan}` (shown below, first).\n\n"
        );
    }
    if let Some(Value::Array(answers)) = command.inputs.get("clarifications") {
        out.push_str("## The user's answers to your questions\n\n");
        for a in answers.iter().filter_map(Value::as_str) {
            let _ = writeln!(out, "- {a}");
        }
        out.push('\n');
    }
    if !found.is_empty() {
        out.push_str("## Plan and spec files that may be meant (best first)\n\n");
        for c in found {
            let _ = writeln!(out, "- `{}` ({:.2})", c.path, c.confidence);
        }
        out.push('\n');
        let shown: Vec<String> = found
            .iter()
            .take(SHOWN_CANDIDATES)
            .map(|c| c.path.clone())
            .collect();
        out.push_str(&super::prompt::files_section(root, &shown));
    }
    let files = super::prompt::tracked_files(root);
    if !files.is_empty() {
        out.push_str("## The repository's files (`git ls-files`)\n\n```\n");
        for f in files.iter().take(super::prompt::MAX_LISTED_FILES) {
            let _ = writeln!(out, "{f}");
        }
        out.push_str("```\n\n");
    }
    out.push_str(
        "## Your reply\n\nOne fenced ```json block with the tasks, in the order to build them:\n\n\
         ```json\n{\"tasks\": [{\"id\": \"T-0001\", \"goal\": \"what to build, precisely\", \
         \"files\": [\"src/a.rs\"]}], \"plan\": \"PLAN.md\", \"notes\": \"why these tasks\"}\n```\n\n\
         An id is a letter or digit, then letters, digits, `.`, `_` or `-`; `files` are the \
         paths the task is about, relative to the repository (they may not exist yet); `plan` \
         is the plan or spec file you used, if any. If a task would contradict the spec or \
         another task, or the plan files disagree, say so: add \"conflicts\": [\"what \
         contradicts what\"] (the user decides; never resolve it by changing a plan or the \
         spec). If you cannot tell what the user wants, reply instead with \
         {\"questions\": [\"…\"]}.\n",
    );
    out
}

/// What the model answered.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// Tasks to propose (none only when there are conflicts).
    Tasks {
        /// Each `{"id", "title", "goal", "files"}`, checked.
        tasks: Vec<Value>,
        /// The plan used.
        plan: Option<String>,
        /// Why.
        notes: String,
        /// What contradicts what, for the user to decide.
        conflicts: Vec<String>,
    },
    /// Questions for the user.
    Questions(Vec<String>),
}

/// Reads and checks the model's reply (untrusted): ids the schema allows, goals said,
/// files inside the workspace.
pub fn parse_reply(text: &str, workspace: &Path) -> Result<Reply, String> {
    let object: Map<String, Value> = fenced_blocks(text, "json")
        .last()
        .map_or_else(
            || serde_json::from_str(text.trim()),
            |b| serde_json::from_str(b),
        )
        .map_err(|e| format!("no JSON object with `tasks` or `questions` in the reply ({e})"))?;
    let questions = strings(object.get("questions"));
    if !questions.is_empty() {
        return Ok(Reply::Questions(questions));
    }
    let conflicts = strings(object.get("conflicts"));
    let none = Vec::new();
    let proposed = match object.get("tasks") {
        Some(Value::Array(proposed)) => proposed,
        _ if !conflicts.is_empty() => &none,
        _ => return Err("the reply's JSON has neither `tasks` nor `questions`".to_owned()),
    };
    if proposed.is_empty() && conflicts.is_empty() {
        return Err("the reply proposes no task".to_owned());
    }
    let mut tasks = Vec::new();
    for t in proposed {
        let id = t.get("id").and_then(Value::as_str).unwrap_or("");
        check_task_id(id)?;
        let goal = t.get("goal").and_then(Value::as_str).unwrap_or("").trim();
        if goal.is_empty() {
            return Err(format!("task {id} has no goal"));
        }
        let mut files = Vec::new();
        for f in strings(t.get("files")) {
            confine(workspace, &f).map_err(|e| format!("task {id}: {e}"))?;
            files.push(f);
        }
        let title: String = goal.lines().next().unwrap_or("").chars().take(80).collect();
        tasks.push(json!({"id": id, "title": title, "goal": goal, "files": files}));
    }
    Ok(Reply::Tasks {
        tasks,
        plan: object
            .get("plan")
            .and_then(Value::as_str)
            .map(str::to_owned),
        notes: object
            .get("notes")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
        conflicts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_becomes_checked_tasks_or_questions_and_anything_else_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ws = dir.path();
        let reply = "Here:\n```json\n{\"tasks\":[{\"id\":\"T-1\",\"goal\":\"Greet\\nwarmly\",\"files\":[\"src/a.rs\"]}],\"plan\":\"PLAN.md\"}\n```\n";
        assert_eq!(
            parse_reply(reply, ws),
            Ok(Reply::Tasks {
                tasks: vec![
                    json!({"id": "T-1", "title": "Greet", "goal": "Greet\nwarmly", "files": ["src/a.rs"]})
                ],
                plan: Some("PLAN.md".into()),
                notes: String::new(),
                conflicts: Vec::new(),
            })
        );
        assert_eq!(
            parse_reply("{\"conflicts\":[\"PLAN.md and SPEC.md disagree\"]}", ws),
            Ok(Reply::Tasks {
                tasks: Vec::new(),
                plan: None,
                notes: String::new(),
                conflicts: vec!["PLAN.md and SPEC.md disagree".into()],
            })
        );
        assert_eq!(
            parse_reply("{\"questions\":[\"Which plan?\"]}", ws),
            Ok(Reply::Questions(vec!["Which plan?".into()]))
        );
        for bad in [
            "I would build a greeting.",
            "{\"tasks\":[]}",
            "{\"tasks\":[{\"id\":\"../x\",\"goal\":\"g\"}]}",
            "{\"tasks\":[{\"id\":\"T-1\",\"goal\":\" \"}]}",
            "{\"tasks\":[{\"id\":\"T-1\",\"goal\":\"g\",\"files\":[\"../etc/passwd\"]}]}",
        ] {
            assert!(parse_reply(bad, ws).is_err(), "{bad}");
        }
    }
}
