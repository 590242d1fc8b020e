//! The commands lorch sends: a new step's command (its inputs, expected
//! outputs, idempotency key, pinned version, deadline), the same command resent (same IK, or
//! re-pinned when the workspace changed), and what every command carries besides.

use std::path::Path;
use std::time::SystemTime;

use serde_json::{Value, json};

use super::{
    Action, AgentRef, AgentType, Command, ExpectedOutput, Object, Orchestrator, Retry, RunError,
    StepDone, Timestamp, Version, agent_for, idempotency_key, store,
};

impl Orchestrator {
    /// Takes the workspace's snapshot and the version commands are pinned to,
    /// recorded when the snapshot is a new one.
    pub(super) fn pin(&mut self) -> Result<Version, RunError> {
        let version = store::take_snapshot(&self.store, Some(&self.config.spec_path))?;
        if self.state.snapshots.last() != Some(&version.snapshot_id) {
            let m = self.system(
                "system.snapshot",
                None,
                json!({"snapshot_id": version.snapshot_id, "code_hash": version.code_hash, "specs_hash": version.specs_hash}),
            );
            self.record(&m)?;
        }
        Ok(version)
    }

    /// The inputs every command carries besides its own: the spec (whose `specs_hash` the
    /// agent computes) and, when `policy.strict_version_pinning` is false, that the agent
    /// pins by content ([`crate::version`]).
    pub(super) fn common_inputs(&self, inputs: &mut Value) {
        inputs["spec"] = json!(self.config.spec_path);
        if !self.config.policy.strict_version_pinning {
            inputs["strict_version_pinning"] = json!(false);
        }
    }

    pub(super) fn send_new(&mut self, action: Action) -> Result<(), RunError> {
        let version = self.pin()?;
        let step = self.state.steps.len() as u32 + 1;
        let task = &self.state.task;
        let mut inputs = json!({"goal": task.goal, "files": task.files, "step": step});
        if matches!(action, Action::Implement | Action::ImplementChanges) {
            inputs["max_turns"] = json!(self.config.policy.max_turns);
        }
        self.common_inputs(&mut inputs);
        if matches!(action, Action::Review | Action::UpdateSpec) {
            let (base, commits) = task_change(&self.store.workspace, &self.state.steps);
            if let Some(base) = base {
                inputs["base"] = json!(base);
            }
            if !commits.is_empty() {
                inputs["commits"] = json!(commits);
            }
        }
        if let Some(last) = self.state.steps.last() {
            inputs["after"] = json!({
                "action": last.action.as_str(),
                "result": last.result,
                "artifacts": last.payload.get("artifacts").cloned().unwrap_or(Value::Null),
            });
        }
        let expected_outputs = match action {
            Action::Review => vec![ExpectedOutput {
                path: format!("reviews/{}.json", task.id),
                description: Some("the review".to_owned()),
                required: None,
            }],
            Action::UpdateSpec => vec![ExpectedOutput {
                path: format!("spec_notes/{}.json", task.id),
                description: Some("spec notes".to_owned()),
                required: Some(false),
            }],
            _ => Vec::new(),
        };
        let ik = idempotency_key(
            action,
            &task.id,
            &version.snapshot_id,
            &inputs,
            &expected_outputs,
        );
        let correlation_id = format!("{}-{step}", task.id);
        let agent = agent_for(action);
        let command = Command {
            message_id: format!("{correlation_id}.1"),
            correlation_id,
            task_id: task.id.clone(),
            idempotency_key: ik,
            to: AgentRef {
                agent_type: agent,
                agent_id: None,
            },
            action,
            inputs: match inputs {
                Value::Object(map) => map,
                _ => Object::new(),
            },
            expected_outputs,
            version,
            deadline: self.deadline(agent, action),
            retry: Retry {
                attempt: 0,
                max_attempts: self.config.policy.retry.max_attempts,
            },
            priority: 0,
        };
        self.send(command)
    }

    pub(super) fn deadline(&self, agent: AgentType, action: Action) -> Timestamp {
        Timestamp(SystemTime::now() + self.config.agents.get(agent).timeout(action))
    }

    /// Sends the command in flight again, same IK; a new attempt when the
    /// last one failed.
    pub(super) fn resend(&mut self) -> Result<(), RunError> {
        let Some(cur) = self.state.current.clone() else {
            return Ok(());
        };
        let mut command = cur.command.clone();
        if cur.fresh {
            command.retry.attempt = 0;
        } else if cur.bump {
            command.retry.attempt += 1;
            if command.retry.attempt >= command.retry.max_attempts {
                return self.fail(format!(
                    "{} exhausted its {} attempts",
                    command.action, command.retry.max_attempts
                ));
            }
        }
        if cur.resnapshot {
            let version = self.pin()?;
            let mut inputs = command.inputs.clone();
            inputs.remove(super::budget::INPUT);
            inputs.remove(super::budget::USED);
            command.idempotency_key = idempotency_key(
                command.action,
                &command.task_id,
                &version.snapshot_id,
                &Value::Object(inputs),
                &command.expected_outputs,
            );
            command.version = version;
        }
        command.message_id = format!("{}.{}", command.correlation_id, cur.sends + 1);
        command.deadline = self.deadline(command.to.agent_type, command.action);
        self.send(command)
    }
}

/// The task's change so far: the commits of its builder steps (from their receipts), oldest
/// first, and the parent of the first as the base (`None` when there is none: no builder
/// commit, or the first is a root commit).
fn task_change(workspace: &Path, steps: &[StepDone]) -> (Option<String>, Vec<String>) {
    let commits: Vec<String> = steps
        .iter()
        .filter(|s| matches!(s.action, Action::Implement | Action::ImplementChanges))
        .filter_map(|s| s.payload.get("commit").and_then(Value::as_str))
        .map(str::to_owned)
        .collect();
    let base = commits.first().and_then(|first| {
        let repo = git2::Repository::discover(workspace).ok()?;
        let oid = git2::Oid::from_str(first).ok()?;
        let parent = repo.find_commit(oid).ok()?.parent_id(0).ok()?;
        Some(parent.to_string())
    });
    (base, commits)
}
