//! `lorch validate --run ID`: the checks of a passing run (MASTER-SPEC §11.1), made on a
//! finished run from its records, so that anyone can tell afterwards whether a run really
//! passed and whether its work is still what it left:
//!
//! - the run is `completed` (its ledger and `state/index.json` say so);
//! - the ledger has a terminal event for each correlation it sent a command for;
//! - the last review is `approved`;
//! - the spec maintainer ended it with `spec.updated` or `spec.no_changes_needed`;
//! - every step's receipt exists as the ledger recorded it, and the newest receipt naming
//!   each file matches the file (it exists, same size and sha256).
//!
//! (§11.1's "SPEC.md updates confined to allowed sections" is enforced when the spec
//! maintainer edits, which refuses any other edit whole; it is not checked again here.)

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;

use super::checks::Check;
use super::protocol::{Action, AgentType, Artifact, Message};
use super::run_state::{RunState, Status, check_artifact, is_terminal};
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

/// §11.1's checks of run `run_id` in `workspace`, one [`Check`] each.
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
    Ok(vec![
        check("run completed", completed(workspace, &state)),
        check("a terminal event for every command", terminals(&messages)),
        check(
            "final review approved",
            last_result(&state, Action::Review, &["approved"]),
        ),
        check(
            "spec maintainer confirmed",
            last_result(
                &state,
                Action::UpdateSpec,
                &["updated", "no_changes_needed"],
            ),
        ),
        check(
            "artifacts match their receipts",
            receipts(workspace, &state, max_artifact),
        ),
    ])
}

fn completed(workspace: &Path, state: &RunState) -> Result<String, String> {
    if state.status != Status::Completed {
        return Err(format!("the ledger says {}", state.status.as_str()));
    }
    let index = store::read_json(&workspace.join("state").join("index.json"))
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

fn last_result(state: &RunState, action: Action, wanted: &[&str]) -> Result<String, String> {
    let last = state.steps.iter().rev().find(|s| s.action == action);
    match last {
        Some(s) if wanted.contains(&s.result.as_str()) => {
            Ok(format!("step {}: {}", s.step, s.result))
        }
        Some(s) => Err(format!("step {}: {}", s.step, s.result)),
        None => Err(format!("no {action} step was accepted")),
    }
}

fn receipts(workspace: &Path, state: &RunState, max: u64) -> Result<String, String> {
    let mut problems = Vec::new();
    let mut newest: BTreeMap<String, Artifact> = BTreeMap::new();
    for step in &state.steps {
        let path = store::receipt_path(workspace, &state.task.id, step.step);
        let rel = format!("receipts/{}/step-{}.json", state.task.id, step.step);
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
        let artifacts: Vec<Artifact> = step
            .payload
            .get("artifacts")
            .cloned()
            .and_then(|a| serde_json::from_value(a).ok())
            .unwrap_or_default();
        for a in artifacts {
            newest.insert(a.path.clone(), a);
        }
    }
    problems.extend(
        newest
            .values()
            .filter_map(|a| check_artifact(workspace, a, max).err()),
    );
    if problems.is_empty() {
        Ok(format!(
            "{} receipts, {} files",
            state.steps.len(),
            newest.len()
        ))
    } else {
        Err(problems.join("; "))
    }
}
