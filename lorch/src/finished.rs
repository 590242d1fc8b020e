//! `lorch validate --run ID`: the checks of a passing run (docs/lorch.md, "Spec
//! conformance"), made on a
//! finished run from its records, so that anyone can tell afterwards whether a run really
//! passed and whether its work is still what it left:
//!
//! - the run is `completed` (its ledger and `state/index.json` say so);
//! - the ledger has a terminal event for each correlation it sent a command for;
//! - the last review is `approved`;
//! - the spec maintainer ended it with `spec.updated` or `spec.no_changes_needed`;
//! - every step's receipt exists as the ledger recorded it, and the newest receipt naming
//!   each file matches the file (it exists, same size and sha256);
//! - the spec's changes in the run are confined to the allowed sections: the spec
//!   as the run found it (the first snapshot's `specs_hash`) against the spec as it left it
//!   (`system.run_completed`'s), both kept by lorch in `snapshots/spec-<sha256>.md`, compared
//!   section by section as the spec maintainer's guard does. Whoever made them: the guard
//!   stops the spec maintainer, this finds an edit that came another way (a builder's reply
//!   that rewrote a requirement).
//!
//! A run that built several tasks (approved together at intake) is checked task by task.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;

use super::checks::Check;
use super::config::Task;
use super::protocol::{Action, AgentType, Artifact, Message};
use super::run_state::{RunState, Status, StepDone, is_terminal};
use super::step_rules::check_artifact;
use super::store;

/// Why a run cannot be checked at all.
#[derive(Debug, thiserror::Error)]
pub enum FinishedError {
    /// No ledger for that id (a usage error).
    #[error("no run {0}: {1}")]
    NoRun(String, String),
    /// The ledger cannot be read.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

fn check(what: &str, result: Result<String, String>) -> Check {
    let (ok, detail) = match result {
        Ok(d) => (true, d),
        Err(d) => (false, d),
    };
    Check {
        what: what.to_owned(),
        ok,
        detail,
    }
}

/// The checks that run `run_id` in `workspace` passed, one [`Check`] each.
pub fn check_run(
    workspace: &Path,
    run_id: &str,
    max_artifact: u64,
) -> Result<Vec<Check>, FinishedError> {
    let ledger = store::ledger_path(workspace, run_id);
    if !ledger.exists() {
        return Err(FinishedError::NoRun(
            run_id.to_owned(),
            format!(
                "events/run-{run_id}.ndjson does not exist; {}",
                store::known_runs(workspace)
            ),
        ));
    }
    let messages = store::read_ledger(&ledger)?;
    let Some(state) = RunState::from_ledger(&messages) else {
        return Err(FinishedError::NoRun(
            run_id.to_owned(),
            format!("events/run-{run_id}.ndjson has no run_started"),
        ));
    };
    let tasks = state.all_tasks();
    let per_task = |f: &dyn Fn(&[StepDone]) -> Result<String, String>| {
        let results: Vec<(String, Result<String, String>)> = tasks
            .iter()
            .map(|(task, steps)| (task.id.clone(), f(steps)))
            .collect();
        if let [(_, only)] = results.as_slice() {
            return only.clone();
        }
        let line = |(id, r): &(String, Result<String, String>)| match r {
            Ok(d) | Err(d) => format!("{id} {d}"),
        };
        let text = results.iter().map(line).collect::<Vec<_>>().join("; ");
        if results.iter().all(|(_, r)| r.is_ok()) {
            Ok(text)
        } else {
            Err(text)
        }
    };
    Ok(vec![
        check("run completed", completed(workspace, &state)),
        check("a terminal event for every command", terminals(&messages)),
        check(
            "final review approved",
            per_task(&|steps| last_result(steps, Action::Review, &["approved"])),
        ),
        check(
            "spec maintainer confirmed",
            per_task(&|steps| {
                last_result(steps, Action::UpdateSpec, &["updated", "no_changes_needed"])
            }),
        ),
        check(
            "artifacts match their receipts",
            receipts(workspace, &tasks, max_artifact),
        ),
        check(
            "spec edits within the allowed sections",
            spec_edits(workspace, &messages),
        ),
    ])
}

fn completed(workspace: &Path, state: &RunState) -> Result<String, String> {
    if state.status != Status::Completed {
        return Err(format!("the ledger says {}", state.status.as_str()));
    }
    let index = store::read_json(
        &crate::records::root(workspace)
            .join("state")
            .join("index.json"),
    )
    .map_err(|e| format!("state/index.json: {e}"))?
    .unwrap_or(Value::Null);
    match index["runs"][&state.run_id]["status"].as_str() {
        Some("completed") => Ok("ledger and state/index.json".to_owned()),
        other => Err(format!(
            "state/index.json says {}",
            other.unwrap_or("nothing of it")
        )),
    }
}

fn terminals(messages: &[Message]) -> Result<String, String> {
    let mut sent = BTreeSet::new();
    let mut ended = BTreeSet::new();
    for m in messages {
        match m {
            Message::Command(c) => {
                sent.insert(c.correlation_id.clone());
            }
            Message::Event(e)
                if e.from.agent_type != AgentType::System && is_terminal(&e.event) =>
            {
                ended.insert(e.correlation_id.clone());
            }
            _ => {}
        }
    }
    let open: Vec<&String> = sent.difference(&ended).collect();
    if open.is_empty() {
        Ok(format!("{} correlations", sent.len()))
    } else {
        Err(format!(
            "none for {}",
            open.iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    }
}

fn last_result(steps: &[StepDone], action: Action, wanted: &[&str]) -> Result<String, String> {
    let last = steps.iter().rev().find(|s| s.action == action);
    match last {
        Some(s) if wanted.contains(&s.result.as_str()) => {
            Ok(format!("step {}: {}", s.step, s.result))
        }
        Some(s) => Err(format!("step {}: {}", s.step, s.result)),
        None => Err(format!("no {action} step was accepted")),
    }
}

fn receipts(workspace: &Path, tasks: &[(&Task, &[StepDone])], max: u64) -> Result<String, String> {
    let mut problems = Vec::new();
    let mut newest: BTreeMap<String, Artifact> = BTreeMap::new();
    let mut count = 0;
    for (task, steps) in tasks {
        for step in *steps {
            count += 1;
            let path = store::receipt_path(workspace, &task.id, step.step);
            let rel = format!("receipts/{}/step-{}.json", task.id, step.step);
            let mut recorded = Value::Object(step.payload.clone());
            if let Some(map) = recorded.as_object_mut() {
                map.remove("receipt_path");
            }
            match store::read_json(&path) {
                Ok(Some(receipt)) if receipt == recorded => {}
                Ok(Some(_)) => problems.push(format!("{rel} differs from the ledger")),
                Ok(None) => problems.push(format!("{rel} is missing")),
                Err(e) => problems.push(format!("{rel}: {e}")),
            }
            for a in Artifact::listed_in(&step.payload) {
                newest.insert(a.path.clone(), a);
            }
        }
    }
    problems.extend(
        newest
            .values()
            .filter_map(|a| check_artifact(workspace, a, max).err()),
    );
    if problems.is_empty() {
        Ok(format!("{count} receipts, {} files", newest.len()))
    } else {
        Err(problems.join("; "))
    }
}

/// The spec as the run found it and as it left it, compared section by section.
fn spec_edits(workspace: &Path, messages: &[Message]) -> Result<String, String> {
    fn system<'a>(messages: &'a [Message], name: &'static str) -> impl Iterator<Item = &'a Value> {
        messages.iter().filter_map(move |m| match m {
            Message::Event(e) if e.event.as_str() == name => e.payload.get("specs_hash"),
            _ => None,
        })
    }
    let system = |name: &'static str| system(messages, name);
    let start = system("system.snapshot").find_map(Value::as_str);
    let end = system("system.run_completed")
        .last()
        .and_then(Value::as_str);
    let (start, end) = match (start, end) {
        (Some(start), Some(end)) => (start, end),
        (None, None) if system("system.run_completed").next().is_some() => {
            return Ok("the run had no spec file".to_owned());
        }
        _ => {
            return Err(
                "the ledger does not say which spec the run found and left (specs_hash): a run that did not complete, or one of an older lorch"
                    .to_owned(),
            );
        }
    };
    if start == end {
        return Ok("the spec is as the run found it".to_owned());
    }
    let read = |hash: &str| {
        let path = store::spec_copy_path(workspace, hash);
        std::fs::read_to_string(&path).map_err(|e| {
            format!(
                "{}: {e} (lorch's copy of the spec; it cannot be compared without it)",
                path.strip_prefix(workspace).unwrap_or(&path).display()
            )
        })
    };
    let (old, new) = (read(start)?, read(end)?);
    match crate::agent::spec::check(&old, &new) {
        Ok(sections) => Ok(format!("changed: {}", sections.join(", "))),
        Err(forbidden) => Err(format!(
            "changed outside the allowed sections: {}",
            forbidden
                .iter()
                .map(|(section, why)| format!("{section} ({why})"))
                .collect::<Vec<_>>()
                .join("; ")
        )),
    }
}
