//! The rules of a run's steps (docs/lorch.md, "What it does"): the hard-coded order
//! implement → review → spec maintenance ([`next_action`]), who does each ([`agent_for`]),
//! whether a terminal event is one lorch can accept and with what result ([`classify`]: a
//! builder's step only with passing tests, and lint when it ran lint), and whether an
//! artifact matches its file ([`check_artifact`]).

use std::path::Path;

use serde_json::Value;

use crate::canonical::sha256_hex;
use crate::protocol::{Action, AgentType, Artifact, Event, EventType, Object};
use crate::run_state::StepDone;
use crate::safety;

/// What comes after `steps`, or why not: after `limit` steps without an end, a
/// persistent conflict.
pub fn next_action(steps: &[StepDone], limit: u32) -> Result<Option<Action>, String> {
    if steps.len() as u32 >= limit {
        return Err(format!(
            "no agreement after {limit} steps (persistent conflict)"
        ));
    }
    let Some(last) = steps.last() else {
        return Ok(Some(Action::Implement));
    };
    Ok(match (last.action, last.result.as_str()) {
        (Action::Implement | Action::ImplementChanges, _) => Some(Action::Review),
        (Action::Review, "approved") => Some(Action::UpdateSpec),
        (Action::Review, _) => Some(Action::ImplementChanges),
        (Action::UpdateSpec, "changes_requested") => Some(Action::ImplementChanges),
        _ => None,
    })
}

/// Who does `action`.
pub fn agent_for(action: Action) -> AgentType {
    match action {
        Action::Review => AgentType::Reviewer,
        Action::UpdateSpec => AgentType::SpecMaintainer,
        _ => AgentType::Builder,
    }
}

/// The result of a terminal event for `action`, or why it is not one lorch can accept.
pub fn classify(action: Action, e: &Event) -> Result<String, String> {
    let status = e.status.clone().or_else(|| {
        e.payload
            .get("status")
            .and_then(Value::as_str)
            .map(str::to_owned)
    });
    match (action, &e.event) {
        (_, EventType::Error) => Err(format!(
            "error {}{}",
            e.payload
                .get("code")
                .and_then(Value::as_str)
                .unwrap_or("(no code)"),
            e.payload
                .get("message")
                .and_then(Value::as_str)
                .map(|m| format!(": {}", one_line(m, 300)))
                .unwrap_or_default()
        )),
        (Action::Implement | Action::ImplementChanges, EventType::BuilderCompleted) => {
            builder_result(status.as_deref(), &e.payload)
        }
        (Action::Review, EventType::ReviewCompleted) => match status.as_deref() {
            Some(s @ ("approved" | "changes_requested")) => Ok(s.to_owned()),
            other => Err(format!(
                "review.completed status {other:?} is not approved or changes_requested"
            )),
        },
        (Action::UpdateSpec, EventType::SpecUpdated) => Ok("updated".to_owned()),
        (Action::UpdateSpec, EventType::SpecNoChangesNeeded) => Ok("no_changes_needed".to_owned()),
        (Action::UpdateSpec, EventType::SpecChangesRequested) => Ok("changes_requested".to_owned()),
        (action, event) => Err(format!("{event} does not answer {action}")),
    }
}

/// The result of `builder.completed`: `success` only with passing tests (`tests.status ==
/// "pass"` or `tests.allowed_failures`); a step that failed is reported by what the builder
/// says went wrong (`payload.problems`: an apply git-loaf refused is not a test failure).
fn builder_result(status: Option<&str>, payload: &Object) -> Result<String, String> {
    let ok_status = matches!(
        status,
        None | Some("success" | "ok" | "completed" | "pass" | "passed")
    );
    let problems: Vec<String> = payload
        .get("problems")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(|p| one_line(p, 300))
                .collect()
        })
        .unwrap_or_default();
    if !ok_status && !problems.is_empty() {
        return Err(format!(
            "the builder's step failed: {}",
            problems.join("; ")
        ));
    }
    let tests = payload.get("tests");
    let allowed = tests
        .and_then(|t| t.get("allowed_failures"))
        .and_then(Value::as_bool)
        == Some(true);
    let tests_status = tests.and_then(|t| t.get("status")).and_then(Value::as_str);
    match tests_status {
        _ if allowed => {}
        Some("pass" | "passed") => {}
        None | Some("skipped") => {
            return Err(format!(
                "builder.completed without test results (tests {}): a step is accepted only with passing tests (§4); give the builder a check: lorch agent builder --check CMD -- …",
                tests_status.unwrap_or("absent")
            ));
        }
        Some(other) => {
            return Err(format!(
                "builder.completed without passing tests (tests {other})"
            ));
        }
    }
    // Lint, when the builder runs it (`--lint`), must pass as the tests do.
    let lint_status = payload
        .get("lint")
        .and_then(|l| l.get("status"))
        .and_then(Value::as_str);
    if let Some(status) = lint_status.filter(|s| !matches!(*s, "pass" | "passed")) {
        return Err(format!(
            "builder.completed without passing lint (lint {status})"
        ));
    }
    if ok_status {
        Ok("success".to_owned())
    } else {
        Err(format!(
            "builder.completed {} although its tests pass",
            status.unwrap_or("none")
        ))
    }
}

/// `text` on one line (runs of whitespace as one space), cut to `max` characters: an agent's
/// message on the console and in a failure's reason, where a CLI's whole stderr would drown
/// the line.
pub fn one_line(text: &str, max: usize) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if joined.chars().count() <= max {
        return joined;
    }
    let cut: String = joined.chars().take(max).collect();
    format!("{cut}…")
}

/// Checks one artifact against the file: confined, within the cap, same size and SHA-256.
pub fn check_artifact(workspace: &Path, a: &Artifact, max: u64) -> Result<(), String> {
    let path = safety::confine(workspace, &a.path).map_err(|e| e.to_string())?;
    let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", a.path))?;
    if bytes.len() as u64 > max {
        return Err(format!("{}: over the {max}-byte artifact cap", a.path));
    }
    let actual = sha256_hex(&bytes);
    let claimed = a.sha256.strip_prefix("sha256:").unwrap_or(&a.sha256);
    if bytes.len() as u64 != a.size || !claimed.eq_ignore_ascii_case(&actual) {
        return Err(format!(
            "{}: checksum mismatch (receipt sha256:{claimed} {} bytes, file sha256:{actual} {} bytes)",
            a.path,
            a.size,
            bytes.len()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_builder_step_is_accepted_only_with_passing_tests_and_lint_when_it_ran_lint() {
        let payload = |lint: &str| -> Object {
            let value = json!({"tests": {"status": "pass"}, "lint": {"status": lint}});
            value.as_object().cloned().unwrap_or_default()
        };
        assert_eq!(
            builder_result(Some("success"), &payload("pass")),
            Ok("success".to_owned())
        );
        assert_eq!(
            builder_result(Some("success"), &payload("fail")),
            Err("builder.completed without passing lint (lint fail)".to_owned())
        );
        let no_lint = json!({"tests": {"status": "pass"}});
        assert_eq!(
            builder_result(Some("success"), no_lint.as_object().expect("object")),
            Ok("success".to_owned())
        );
    }
}
