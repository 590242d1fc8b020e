//! The user's side of natural-language intake (docs/lorch.md, "Running without a task"):
//! `lorch run` without `--task` asks
//! what to do, shows what the orchestration agent proposes (and the conflicts it found),
//! lets the user edit it ([`edits`]: drop or reword a task, change its files, pick another
//! plan) and approve or decline it, and adds the approved tasks to lorch.json (atomically,
//! as `lorch config` does) before they run. The scheduler's side, which talks to the agent
//! and records the decisions, is [`crate::scheduler::Orchestrator::run_from_words`].

pub mod edits;

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::config::{self, FILE_NAME, Task};
use super::safety;
use super::scheduler::{Decision, Proposal, User};

/// The first question, asked of the user.
pub const QUESTION: &str =
    "lorch> What should I do? (e.g., \"Use PLAN.md and manage its implementation\")";

/// A user at a terminal (or a script on stdin), with the folder of lorch.json.
pub struct Terminal<'a> {
    /// Their answers.
    pub input: &'a mut dyn BufRead,
    /// Where questions go.
    pub out: &'a mut dyn Write,
    /// Repeat each answer after its question (when stdin is not a terminal).
    pub echo: bool,
    /// The folder of lorch.json.
    pub base: PathBuf,
    /// The workspace (where a task's files and a plan must be).
    pub workspace: PathBuf,
}

impl Terminal<'_> {
    /// Asks `question` and reads one line, trimmed; `None` when the input ended.
    pub fn ask(&mut self, question: &str) -> Option<String> {
        let _ = write!(self.out, "{question} ");
        let _ = self.out.flush();
        let mut line = String::new();
        match self.input.read_line(&mut line) {
            Ok(n) if n > 0 => {
                let answer = line.trim().to_owned();
                if self.echo {
                    let _ = writeln!(self.out, "{answer}");
                }
                Some(answer)
            }
            _ => {
                let _ = writeln!(self.out);
                None
            }
        }
    }
}

impl Terminal<'_> {
    fn show(&mut self, tasks: &[Task]) {
        for task in tasks {
            let _ = writeln!(self.out, "  {}: {}", task.id, task.goal);
            let _ = writeln!(self.out, "    files: {}", task.files.join(" "));
        }
        if tasks.is_empty() {
            let _ = writeln!(self.out, "  (no task left)");
        }
    }
}

/// The question put to a proposal.
pub const APPROVE: &str =
    "lorch> Add these tasks to lorch.json and build them? (y/n, or edit them)";

impl User for Terminal<'_> {
    fn decide(&mut self, proposal: &Proposal) -> Decision {
        if proposal.conflicts.is_empty() {
            let _ = writeln!(self.out, "lorch: the orchestration agent proposes:");
        } else {
            let _ = writeln!(
                self.out,
                "lorch: the orchestration agent proposes, but found conflicts (lorch changes no plan or spec; you decide):"
            );
            for c in &proposal.conflicts {
                let _ = writeln!(self.out, "  CONFLICT: {c}");
            }
        }
        self.show(&proposal.tasks);
        if let Some(plan) = &proposal.plan {
            let _ = writeln!(self.out, "  plan: {plan}");
        }
        let others: Vec<&str> = proposal
            .candidates
            .iter()
            .map(String::as_str)
            .filter(|c| Some(*c) != proposal.plan.as_deref())
            .take(5)
            .collect();
        if !others.is_empty() {
            let _ = writeln!(self.out, "  other plans: {}", others.join(", "));
        }
        if !proposal.notes.is_empty() {
            let _ = writeln!(self.out, "  notes: {}", proposal.notes);
        }
        let mut tasks = proposal.tasks.clone();
        let mut said = Vec::new();
        let mut changes = Vec::new();
        loop {
            let Some(answer) = self.ask(APPROVE) else {
                return Decision::Denied("(no answer: the input ended)".to_owned());
            };
            said.push(answer.clone());
            let words = said.join(" / ");
            let workspace = self.workspace.clone();
            match edits::apply(&answer, &mut tasks, &proposal.candidates, &workspace) {
                edits::Edit::Yes if tasks.is_empty() => {
                    let _ = writeln!(self.out, "  no task left to build: n to stop, or plan PATH");
                }
                edits::Edit::Yes => {
                    return Decision::Approved {
                        words,
                        tasks,
                        changes,
                    };
                }
                edits::Edit::No => return Decision::Denied(words),
                edits::Edit::Plan(plan) => return Decision::PlanChosen { words, plan },
                edits::Edit::Changed(what) => {
                    changes.push(what);
                    let _ = writeln!(self.out, "lorch: the tasks now:");
                    self.show(&tasks);
                }
                edits::Edit::Bad(why) => {
                    let _ = writeln!(self.out, "  {why}");
                    let _ = writeln!(self.out, "  answer {}", edits::HELP);
                }
            }
        }
    }

    fn keep(&mut self, tasks: &[Task]) -> Result<(), String> {
        add_tasks(&self.base, tasks).map(|_| ())
    }

    fn settle(&mut self, conflict: &str, choices: &[(&str, &str)]) -> Option<String> {
        let _ = writeln!(self.out, "lorch: CONFLICT: {conflict}");
        for (key, what) in choices {
            let _ = writeln!(self.out, "  {key}: {what}");
        }
        let keys: Vec<&str> = choices.iter().map(|(k, _)| *k).collect();
        let question = format!("lorch> What now? ({})", keys.join("/"));
        loop {
            let answer = self.ask(&question)?.to_ascii_lowercase();
            if keys.contains(&answer.as_str()) {
                return Some(answer);
            }
            let _ = writeln!(self.out, "  answer {}", keys.join(" or "));
        }
    }

    fn answer(&mut self, heading: &str, questions: &[String]) -> Option<String> {
        let _ = writeln!(self.out, "lorch: {heading}");
        for q in questions {
            let _ = writeln!(self.out, "  {q}");
        }
        loop {
            match self.ask("lorch> Your answer:")? {
                a if a.is_empty() => {
                    let _ = writeln!(self.out, "  an answer is needed (or end the input to stop)");
                }
                a => return Some(a),
            }
        }
    }
}

/// Adds `tasks` to `base/lorch.json`, written whole (temp file + rename) after the schema
/// accepts it. A task already there as it is is kept; one whose id names another task
/// there is refused (the user's tasks are not overwritten by a model's).
pub fn add_tasks(base: &Path, tasks: &[Task]) -> Result<PathBuf, String> {
    let path = base.join(FILE_NAME);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut value: Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut list: Vec<Value> = value["tasks"].as_array().cloned().unwrap_or_default();
    for task in tasks {
        let new = json!({"id": task.id, "goal": task.goal, "files": task.files});
        match list.iter().find(|t| t["id"] == task.id.as_str()) {
            Some(old) if old["goal"] == new["goal"] && old["files"] == new["files"] => {}
            Some(_) => {
                return Err(format!(
                    "lorch.json already has another task {}: run it with --task {}, or rename one",
                    task.id, task.id
                ));
            }
            None => list.push(new),
        }
    }
    value["tasks"] = json!(list);
    let mut text = serde_json::to_string_pretty(&value).map_err(|e| e.to_string())?;
    text.push('\n');
    config::parse(&path, &text).map_err(|e| e.to_string())?;
    safety::atomic_write(&path, text.as_bytes()).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn approved_tasks_are_added_but_never_overwrite_another_task_of_the_same_id() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(FILE_NAME);
        let mut value: Value = serde_json::from_str(&config::default_text()).expect("JSON");
        value["tasks"] = json!([{"id": "T-1", "goal": "one", "files": []}]);
        std::fs::write(&path, value.to_string()).expect("write");
        let task = |id: &str, goal: &str| Task {
            id: id.into(),
            goal: goal.into(),
            files: vec!["src/a.rs".into()],
        };
        let before = std::fs::read(&path).expect("read");
        assert_eq!(
            add_tasks(dir.path(), &[task("T-2", "two"), task("T-1", "other")]),
            Err(
                "lorch.json already has another task T-1: run it with --task T-1, or rename one"
                    .to_owned()
            )
        );
        assert_eq!(
            std::fs::read(&path).expect("read"),
            before,
            "nothing written"
        );
        add_tasks(dir.path(), &[task("T-2", "two")]).expect("added");
        add_tasks(dir.path(), &[task("T-2", "two")]).expect("the same task again is no change");
        let after: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("JSON");
        assert_eq!(
            after["tasks"],
            json!([{"id": "T-1", "goal": "one", "files": []}, {"id": "T-2", "goal": "two", "files": ["src/a.rs"]}])
        );
    }
}
