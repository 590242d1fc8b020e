//! Natural-language intake (Phase 2: §4.1.2, §14.1): a run started without a task asks the
//! orchestration agent (`intake`) to turn the user's words into tasks, shows them to the
//! user, records the answer as `system.user_decision`, and on approval runs the first task
//! in the same run (its ledger holds the intake before `system.run_started`). When the agent
//! asks questions instead (`orchestration.needs_clarification`), the user's answers are
//! recorded too and sent back with the same idempotency key, as §14.1 says.
//!
//! The user's side (the terminal, lorch.json) is a [`User`] the command line provides, so
//! that the scheduler never reads a terminal itself. lorch checks the proposal again (the
//! agent is untrusted): ids the schema allows, goals said, files inside the workspace.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};

use super::{
    AgentRef, AgentType, Command, Config, EventType, Object, Orchestrator, Retry, RunError,
    RunState, Status, Task, idempotency_key, keep_records_out_of_git, safety, signals,
    store,
};
use crate::config::check_task_id;
use crate::protocol::{Action, Event};

/// The task id of the intake command (§3.1's example gives the intake a task of its own).
pub const INTAKE_TASK: &str = "intake";

/// The tasks the orchestration agent proposed, as lorch checked them.
#[derive(Debug, Clone)]
pub struct Proposal {
    /// In the order to build them.
    pub tasks: Vec<Task>,
    /// The plan or spec file the agent used, if it says.
    pub plan: Option<String>,
    /// Its notes.
    pub notes: String,
}

/// What the user said to a proposal, with their words.
#[derive(Debug, Clone)]
pub enum Decision {
    /// Build the tasks.
    Approved(String),
    /// Do not.
    Denied(String),
}

/// The user, as intake needs them.
pub trait User {
    /// Shows the proposal and asks for approval.
    fn decide(&mut self, proposal: &Proposal) -> Decision;
    /// Keeps the approved tasks (in lorch.json), or says why it cannot.
    fn keep(&mut self, tasks: &[Task]) -> Result<(), String>;
    /// Shows the orchestration agent's questions and reads the answer; `None` when there
    /// is none (the input ended).
    fn answer(&mut self, questions: &[String]) -> Option<String>;
}

/// Rounds of questions before lorch gives up on an orchestration agent that keeps asking.
pub const MAX_CLARIFICATIONS: u32 = 5;

impl Orchestrator {
    /// Runs intake for `instruction`, then, on approval, the first approved task. Returns how
    /// the run ended and the approved tasks after the first (the caller runs them next).
    pub fn run_from_words(
        config: Config,
        workspace: PathBuf,
        instruction: &str,
        user: &mut dyn User,
    ) -> Result<(Status, Vec<Task>), RunError> {
        let _lock = store::lock_workspace(&workspace)?;
        signals::install();
        keep_records_out_of_git(&workspace)?;
        let run_id = store::new_run_id();
        let intake = Task {
            id: INTAKE_TASK.to_owned(),
            goal: instruction.to_owned(),
            files: Vec::new(),
        };
        let mut o = Orchestrator::new(config, workspace, RunState::new(&run_id, intake));
        o.agents.insert(AgentType::Orchestration, None);
        let proposal = o.intake(instruction, user);
        if let Some(mut agent) = o
            .agents
            .get_mut(&AgentType::Orchestration)
            .and_then(Option::take)
        {
            agent.stop(Duration::from_secs(2));
        }
        let Some(proposal) = proposal? else {
            return o
                .wind_down(Ok(o.state.status.clone()))
                .map(|s| (s, Vec::new()));
        };
        let Some(mut tasks) = o.approve(&proposal, user)? else {
            return o
                .wind_down(Ok(o.state.status.clone()))
                .map(|s| (s, Vec::new()));
        };
        let first = tasks.remove(0);
        o.state = RunState::new(&run_id, first.clone());
        let started = o.system(
            "system.run_started",
            None,
            json!({"run_id": run_id, "goal": first.goal, "files": first.files}),
        );
        o.record(&started)?;
        o.pin()?;
        o.drive().map(|s| (s, tasks))
    }

    /// Sends `intake` and waits for its answer, putting the agent's questions to the user and
    /// sending their answers back with the same key (§4.1.2, §14.1); `None` when the run
    /// failed or was aborted on the way (recorded).
    fn intake(
        &mut self,
        instruction: &str,
        user: &mut dyn User,
    ) -> Result<Option<Proposal>, RunError> {
        let version = self.pin()?;
        let mut inputs = json!({"user_instruction": instruction});
        self.common_inputs(&mut inputs);
        let key = idempotency_key(
            Action::Intake,
            INTAKE_TASK,
            &version.snapshot_id,
            &inputs,
            &[],
        );
        let correlation_id = format!("{INTAKE_TASK}-1");
        let command = Command {
            message_id: format!("{correlation_id}.1"),
            correlation_id,
            task_id: INTAKE_TASK.to_owned(),
            idempotency_key: key,
            to: AgentRef {
                agent_type: AgentType::Orchestration,
                agent_id: None,
            },
            action: Action::Intake,
            inputs: match inputs {
                Value::Object(map) => map,
                _ => Object::new(),
            },
            expected_outputs: Vec::new(),
            version,
            deadline: self.deadline(AgentType::Orchestration, Action::Intake),
            retry: Retry {
                attempt: 0,
                max_attempts: self.config.policy.retry.max_attempts,
            },
            priority: 0,
        };
        self.send(command)?;
        let mut rounds = 0;
        let answer = loop {
            if self.state.status != Status::Running || signals::received().is_some() {
                return Ok(None);
            }
            let Some(cur) = self.state.current.clone() else {
                return Ok(None);
            };
            match cur.terminal {
                // An error (a reply with no usable task, a model that did not answer) is
                // retried as a failed step is, until the attempts run out.
                Some(t)
                    if t.event == EventType::Error
                        && cur.command.retry.attempt + 1 < cur.command.retry.max_attempts =>
                {
                    let reason = proposal(&t, &self.store.workspace)
                        .err()
                        .unwrap_or_default();
                    let m = self.system(
                        "system.step_completed",
                        Some("retry"),
                        json!({"step": 0, "action": "intake", "reason": reason, "resnapshot": true}),
                    );
                    self.record(&m)?;
                }
                Some(t) if t.event == EventType::OrchestrationNeedsClarification => {
                    rounds += 1;
                    if rounds > MAX_CLARIFICATIONS || !self.clarify(&t, user)? {
                        break t;
                    }
                }
                Some(terminal) => break terminal,
                None if !cur.sent_live => self.resend()?,
                None => self.wait()?,
            }
        };
        match proposal(&answer, &self.store.workspace) {
            Ok(p) => Ok(Some(p)),
            Err(reason) => {
                self.fail(reason)?;
                Ok(None)
            }
        }
    }

    /// Puts the agent's questions to the user, records the answer as `system.user_decision`
    /// (`clarified`), and sends intake again, same key, with the answer in
    /// `inputs.clarifications`; false when the user gave none.
    fn clarify(&mut self, asked: &Event, user: &mut dyn User) -> Result<bool, RunError> {
        let Some(cur) = self.state.current.clone() else {
            return Ok(false);
        };
        let questions: Vec<String> = asked
            .payload
            .get("questions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect();
        let Some(answer) = user.answer(&questions) else {
            return Ok(false);
        };
        let m = self.system(
            "system.user_decision",
            Some("clarified"),
            json!({"questions": questions, "prompt": answer}),
        );
        self.record(&m)?;
        let mut command = cur.command.clone();
        let mut answers: Vec<Value> = command
            .inputs
            .get("clarifications")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        answers.push(json!(format!("{} Answer: {answer}", questions.join(" "))));
        command
            .inputs
            .insert("clarifications".into(), json!(answers));
        command.message_id = format!("{}.{}", command.correlation_id, cur.sends + 1);
        command.deadline = self.deadline(AgentType::Orchestration, Action::Intake);
        self.send(command)?;
        Ok(true)
    }

    /// Asks the user, records `system.user_decision`, keeps the approved tasks; `None` when
    /// they are not to be run (recorded as the run's end).
    fn approve(
        &mut self,
        proposal: &Proposal,
        user: &mut dyn User,
    ) -> Result<Option<Vec<Task>>, RunError> {
        let ids: Vec<&str> = proposal.tasks.iter().map(|t| t.id.as_str()).collect();
        let (status, words, approved) = match user.decide(proposal) {
            Decision::Approved(words) => ("approved", words, ids.clone()),
            Decision::Denied(words) => ("denied", words, Vec::new()),
        };
        let m = self.system(
            "system.user_decision",
            Some(status),
            json!({"approved_plan": proposal.plan, "approved_tasks": approved, "proposed_tasks": ids, "prompt": words}),
        );
        self.record(&m)?;
        if approved.is_empty() {
            self.fail("you declined the proposed tasks: nothing was built".to_owned())?;
            return Ok(None);
        }
        if let Err(reason) = user.keep(&proposal.tasks) {
            self.fail(format!(
                "the approved tasks could not be added to lorch.json: {reason}"
            ))?;
            return Ok(None);
        }
        Ok(Some(proposal.tasks.clone()))
    }
}

/// The proposal in the agent's answer, checked; or why there is none to show.
fn proposal(answer: &Event, workspace: &std::path::Path) -> Result<Proposal, String> {
    let p = &answer.payload;
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    let field = |k: &str| p.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    match &answer.event {
        EventType::OrchestrationProposedTasks => {}
        EventType::OrchestrationNeedsClarification => {
            let questions: Vec<&str> = p
                .get("questions")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            return Err(format!(
                "the orchestration agent still needs to know more: {} Say it in your words and run again",
                questions.join(" ")
            ));
        }
        EventType::Error => {
            return Err(format!(
                "intake failed: {}: {}",
                field("code"),
                field("message")
            ));
        }
        other => return Err(format!("{other} does not answer intake")),
    }
    let mut tasks = Vec::new();
    for t in p
        .get("derived_tasks")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let id = text(t, "id");
        check_task_id(&id).map_err(|e| format!("the orchestration agent proposed {e}"))?;
        let goal = text(t, "goal");
        if goal.trim().is_empty() {
            return Err(format!(
                "the orchestration agent proposed task {id} without a goal"
            ));
        }
        let mut files = Vec::new();
        for f in t
            .get("files")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let f = f.as_str().unwrap_or("");
            safety::confine(workspace, f)
                .map_err(|e| format!("the orchestration agent proposed task {id}: {e}"))?;
            files.push(f.to_owned());
        }
        tasks.push(Task { id, goal, files });
    }
    if tasks.is_empty() {
        return Err("the orchestration agent proposed no task".to_owned());
    }
    Ok(Proposal {
        tasks,
        plan: p.get("plan").and_then(Value::as_str).map(str::to_owned),
        notes: field("notes"),
    })
}
