//! Natural-language intake (docs/lorch.md, "Running without a task"): a run started without
//! a task asks the orchestration agent (`intake`) to turn the user's words into tasks,
//! shows them to the user, who may edit them or pick another plan (then lorch asks the
//! agent for that plan's tasks: `task_discovery`), records the answer as
//! `system.user_decision`, and on approval builds the approved tasks one after another in
//! the same run (its ledger holds the intake before `system.run_started`). When the agent
//! asks questions instead (`orchestration.needs_clarification`), or reports a conflict it
//! cannot propose around (`orchestration.plan_conflict` without tasks), the user's answers
//! are recorded too and sent back with the same idempotency key, for the model to see them;
//! a conflict that comes with tasks is shown with them, and the user decides.
//!
//! The user's side (the terminal, lorch.json) is a [`User`] the command line provides, so
//! that the scheduler never reads a terminal itself. lorch checks the proposal again (the
//! agent is untrusted): ids the schema allows, goals said, files inside the workspace.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};

use super::{
    AgentRef, AgentType, Command, Config, EventType, Object, Orchestrator, Retry, RunError,
    RunState, Status, Task, idempotency_key, safety, signals, store, task_json,
};
use crate::config::check_task_id;
use crate::protocol::{Action, Event, strings};

/// The task id of the intake command (the spec's example gives the intake a task of its
/// own).
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
    /// The plan files discovery found, best first.
    pub candidates: Vec<String>,
    /// What the agent found contradicting (`orchestration.plan_conflict`).
    pub conflicts: Vec<String>,
}

/// What the user said to a proposal, with their words.
#[derive(Debug, Clone)]
pub enum Decision {
    /// Build these tasks (the proposal's, as the user edited them).
    Approved {
        /// What they typed.
        words: String,
        /// The tasks, in order.
        tasks: Vec<Task>,
        /// Their edits, one line each (`dropped T-2`, `goal of T-1: …`).
        changes: Vec<String>,
    },
    /// Do not.
    Denied(String),
    /// Derive the tasks from this plan instead (`task_discovery`).
    PlanChosen {
        /// What they typed.
        words: String,
        /// The plan file, relative to the workspace.
        plan: String,
    },
}

/// The user, as intake needs them.
pub trait User {
    /// Shows the proposal (its conflicts first) and asks for a decision.
    fn decide(&mut self, proposal: &Proposal) -> Decision;
    /// Keeps the approved tasks (in lorch.json), or says why it cannot.
    fn keep(&mut self, tasks: &[Task]) -> Result<(), String>;
    /// Shows `heading` and the orchestration agent's questions (or conflicts) and reads the
    /// answer; `None` when there is none (the input ended).
    fn answer(&mut self, heading: &str, questions: &[String]) -> Option<String>;
    /// Shows a conflict of the run and asks which of `choices` (key, what it does)
    /// to take; `None` when there is no answer (the input ended).
    fn settle(&mut self, conflict: &str, choices: &[(&str, &str)]) -> Option<String>;
}

/// Rounds of questions before lorch gives up on an orchestration agent that keeps asking.
pub const MAX_CLARIFICATIONS: u32 = 5;

/// Plans the user may pick before lorch stops asking the agent for another.
pub const MAX_PLAN_CHOICES: u32 = 5;

impl Orchestrator {
    /// Runs intake for `instruction`, then, on approval, the approved tasks one after
    /// another; returns how the run ended.
    pub fn run_from_words(
        config: Config,
        workspace: PathBuf,
        instruction: &str,
        user: &mut dyn User,
    ) -> Result<Status, RunError> {
        let _lock = store::lock_workspace(&workspace)?;
        signals::install();
        crate::records::keep_out_of_git(&workspace)?;
        let run_id = store::new_run_id();
        let intake = Task {
            id: INTAKE_TASK.to_owned(),
            goal: instruction.to_owned(),
            files: Vec::new(),
        };
        let mut o = Orchestrator::new(config, workspace, RunState::new(&run_id, intake));
        o.agents.insert(AgentType::Orchestration, None);
        let approved = o.converse(instruction, user);
        if let Some(mut agent) = o
            .agents
            .get_mut(&AgentType::Orchestration)
            .and_then(Option::take)
        {
            agent.stop(Duration::from_secs(2));
        }
        let Some(mut tasks) = approved? else {
            return o.wind_down(Ok(o.state.status.clone()));
        };
        let first = tasks.remove(0);
        o.state = RunState::new(&run_id, first.clone());
        o.state.queue = tasks;
        let queue: Vec<Value> = o.state.queue.iter().map(task_json).collect();
        let started = o.system(
            "system.run_started",
            None,
            json!({"run_id": run_id, "goal": first.goal, "files": first.files, "queue": queue}),
        );
        o.record(&started)?;
        o.pin()?;
        o.drive(user)
    }

    /// The conversation of intake: the proposal, the user's choice of another plan (the
    /// agent asked again, `task_discovery`), until they approve or decline; the approved
    /// tasks, kept in lorch.json, or `None` when none are to be built (recorded).
    fn converse(
        &mut self,
        instruction: &str,
        user: &mut dyn User,
    ) -> Result<Option<Vec<Task>>, RunError> {
        let inputs = json!({"user_instruction": instruction});
        let Some(mut proposal) = self.ask_orchestration(Action::Intake, inputs, user)? else {
            return Ok(None);
        };
        let mut choices = 0;
        loop {
            match user.decide(&proposal) {
                Decision::PlanChosen { words, plan } if choices < MAX_PLAN_CHOICES => {
                    choices += 1;
                    let m = self.system(
                        "system.user_decision",
                        Some("plan_chosen"),
                        json!({"approved_plan": plan, "proposed_plan": proposal.plan, "conflicts": proposal.conflicts, "prompt": words}),
                    );
                    self.record(&m)?;
                    let inputs = json!({"user_instruction": instruction, "plan": plan});
                    match self.ask_orchestration(Action::TaskDiscovery, inputs, user)? {
                        Some(p) => proposal = p,
                        None => return Ok(None),
                    }
                }
                Decision::PlanChosen { words, .. } => {
                    return self.approve(&proposal, Decision::Denied(words), user);
                }
                decision => return self.approve(&proposal, decision, user),
            }
        }
    }

    /// Sends `action` (`intake`, or `task_discovery` for a plan the user chose) with
    /// `inputs` and waits for its proposal, putting the agent's questions (and conflicts it
    /// proposes nothing for) to the user and sending their answers back with the same key
    /// `None` when the run failed or was aborted on the way (recorded).
    fn ask_orchestration(
        &mut self,
        action: Action,
        mut inputs: Value,
        user: &mut dyn User,
    ) -> Result<Option<Proposal>, RunError> {
        let version = self.pin()?;
        self.common_inputs(&mut inputs);
        let key = idempotency_key(action, INTAKE_TASK, &version.snapshot_id, &inputs, &[]);
        let round = self.state.current.as_ref().map_or(0, |c| {
            c.command
                .correlation_id
                .rsplit('-')
                .next()
                .and_then(|n| n.parse::<u32>().ok())
                .unwrap_or(0)
        }) + 1;
        let correlation_id = format!("{INTAKE_TASK}-{round}");
        let command = Command {
            message_id: format!("{correlation_id}.1"),
            correlation_id,
            task_id: INTAKE_TASK.to_owned(),
            idempotency_key: key,
            to: AgentRef {
                agent_type: AgentType::Orchestration,
                agent_id: None,
            },
            action,
            inputs: match inputs {
                Value::Object(map) => map,
                _ => Object::new(),
            },
            expected_outputs: Vec::new(),
            version,
            deadline: self.deadline(AgentType::Orchestration, action),
            retry: Retry {
                attempt: 0,
                max_attempts: self.config.policy.retry.max_attempts,
            },
            priority: 0,
        };
        self.send(command)?;
        let Some(answer) = self.await_proposal(user)? else {
            return Ok(None);
        };
        match proposal(&answer, &self.store.workspace) {
            Ok(p) => Ok(Some(p)),
            Err(reason) => {
                self.fail(reason)?;
                Ok(None)
            }
        }
    }

    /// Waits for the orchestration agent's answer to the command in flight: errors retried
    /// as a failed step is, questions and bare conflicts put to the user.
    fn await_proposal(&mut self, user: &mut dyn User) -> Result<Option<Event>, RunError> {
        let mut rounds = 0;
        loop {
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
                        json!({"step": 0, "action": cur.command.action.as_str(), "reason": reason, "resnapshot": true}),
                    );
                    self.record(&m)?;
                }
                Some(t) if asks_the_user(&t) => {
                    rounds += 1;
                    if rounds > MAX_CLARIFICATIONS || !self.clarify(&t, user)? {
                        return Ok(Some(t));
                    }
                }
                Some(terminal) => return Ok(Some(terminal)),
                None if !cur.sent_live => self.resend()?,
                None => self.wait()?,
            }
        }
    }

    /// Puts the agent's questions (or the conflicts it found and proposed nothing for) to
    /// the user, records the answer as `system.user_decision` (`clarified`, `resolved`), and
    /// sends the command again, same key, with the answer in `inputs.clarifications`; false
    /// when the user gave none.
    fn clarify(&mut self, asked: &Event, user: &mut dyn User) -> Result<bool, RunError> {
        let Some(cur) = self.state.current.clone() else {
            return Ok(false);
        };
        let conflict = asked.event == EventType::OrchestrationPlanConflict;
        let key = if conflict { "conflicts" } else { "questions" };
        let questions = strings(asked.payload.get(key));
        let heading = if conflict {
            "the orchestration agent found a conflict (lorch changes no plan or spec; you decide how to go on):"
        } else {
            "the orchestration agent asks:"
        };
        let Some(answer) = user.answer(heading, &questions) else {
            return Ok(false);
        };
        let status = if conflict { "resolved" } else { "clarified" };
        let m = self.system(
            "system.user_decision",
            Some(status),
            json!({key: questions, "prompt": answer}),
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
        command.deadline = self.deadline(AgentType::Orchestration, command.action);
        self.send(command)?;
        Ok(true)
    }

    /// Records the user's `decision` on `proposal` as `system.user_decision` and keeps the
    /// approved tasks; `None` when none are to be built (recorded as the run's end).
    fn approve(
        &mut self,
        proposal: &Proposal,
        decision: Decision,
        user: &mut dyn User,
    ) -> Result<Option<Vec<Task>>, RunError> {
        let ids: Vec<&str> = proposal.tasks.iter().map(|t| t.id.as_str()).collect();
        let (status, words, tasks, changes) = match decision {
            Decision::Approved {
                words,
                tasks,
                changes,
            } => ("approved", words, tasks, changes),
            Decision::Denied(words) | Decision::PlanChosen { words, .. } => {
                ("denied", words, Vec::new(), Vec::new())
            }
        };
        let approved: Vec<&str> = tasks.iter().map(|t| t.id.as_str()).collect();
        let mut payload = json!({"approved_plan": proposal.plan, "approved_tasks": approved, "proposed_tasks": ids, "prompt": words});
        if !changes.is_empty() {
            payload["changes"] = json!(changes);
            payload["tasks"] = tasks.iter().map(task_json).collect();
        }
        if !proposal.conflicts.is_empty() {
            payload["conflicts"] = json!(proposal.conflicts);
        }
        let m = self.system("system.user_decision", Some(status), payload);
        self.record(&m)?;
        if tasks.is_empty() {
            self.fail("you declined the proposed tasks: nothing was built".to_owned())?;
            return Ok(None);
        }
        if let Err(reason) = user.keep(&tasks) {
            self.fail(format!(
                "the approved tasks could not be added to lorch.json: {reason}"
            ))?;
            return Ok(None);
        }
        Ok(Some(tasks))
    }
}

/// Whether the agent's answer is for the user to answer: questions, or conflicts it
/// proposes no task around.
fn asks_the_user(answer: &Event) -> bool {
    match answer.event {
        EventType::OrchestrationNeedsClarification => true,
        EventType::OrchestrationPlanConflict => answer
            .payload
            .get("derived_tasks")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty),
        _ => false,
    }
}

/// The proposal in the agent's answer, checked; or why there is none to show.
fn proposal(answer: &Event, workspace: &std::path::Path) -> Result<Proposal, String> {
    let p = &answer.payload;
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    let field = |k: &str| p.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    match &answer.event {
        EventType::OrchestrationProposedTasks | EventType::OrchestrationPlanConflict => {}
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
    let conflicts = strings(p.get("conflicts"));
    if tasks.is_empty() {
        return Err(if conflicts.is_empty() {
            "the orchestration agent proposed no task".to_owned()
        } else {
            format!(
                "the orchestration agent found conflicts and proposed no task: {} Resolve them in the plan or the spec and run again",
                conflicts.join(" ")
            )
        });
    }
    let candidates = p
        .get("plan_candidates")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c.get("path").and_then(Value::as_str))
        .map(str::to_owned)
        .collect();
    Ok(Proposal {
        tasks,
        plan: p.get("plan").and_then(Value::as_str).map(str::to_owned),
        notes: field("notes"),
        candidates,
        conflicts,
    })
}
