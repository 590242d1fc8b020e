//! The agents as a run sees them (docs/lorch.md, "Supervision"): started when a command is
//! for them (a restart backs off with full jitter, at most [`MAX_RESTARTS`] per run), their
//! messages taken in and checked (an agent speaks only for itself), their heartbeats and the
//! command's deadline watched while lorch waits for its terminal event; an agent that
//! exits, falls silent or times out is stopped and recorded unhealthy.

use std::time::{Duration, Instant};

use serde_json::json;

use super::{Orchestrator, RunError};
use crate::config::{self, MAX_RESTARTS, MISSED_HEARTBEATS};
use crate::protocol::{AgentType, Message};
use crate::signals;
use crate::supervisor::{self, Incoming, Item, Spawn};

impl Orchestrator {
    /// Starts `agent` if it is not running: the first start of this process is free, any
    /// other is a restart (backoff with full jitter, at most [`MAX_RESTARTS`] per run).
    pub(super) fn ensure_agent(&mut self, agent: AgentType) -> Result<(), String> {
        if self.agents.get(&agent).is_some_and(Option::is_some) {
            return Ok(());
        }
        let generation = self.started.get(&agent).copied().unwrap_or(0);
        if generation > 0 {
            let restarts = self.state.restarts.get(&agent).copied().unwrap_or(0);
            if restarts >= MAX_RESTARTS {
                return Err(format!("{agent} needed more than {MAX_RESTARTS} restarts"));
            }
            let delay = self
                .config
                .policy
                .retry
                .backoff
                .delay(restarts, supervisor::random());
            signals::sleep(delay);
            let m = self.system(
                "system.agent_restarted",
                None,
                json!({"agent": agent.as_str(), "restart": restarts + 1, "delay_ms": delay.as_millis() as u64}),
            );
            self.record(&m).map_err(|e| e.to_string())?;
        }
        let ac = self.config.agents.get(agent).clone();
        let mut env = ac.env.clone();
        let rate_limit = &self.config.policy.retry.rate_limit;
        if *rate_limit != config::RateLimit::default() {
            let text = serde_json::to_string(rate_limit).map_err(|e| e.to_string())?;
            env.insert(config::RATE_LIMIT_ENV.to_owned(), text);
        }
        let spawned = Spawn {
            agent_type: agent,
            cmd: &ac.cmd,
            env: &env,
            heartbeat_interval: ac.heartbeat_interval(),
            workspace: &self.store.workspace,
            run_id: &self.state.run_id,
            log_dir: self.store.log_dir(agent.as_str()),
            max_line: self.config.policy.message_max_bytes,
            secrets: &self.store.secrets,
            generation,
        }
        .start(&self.tx)
        .map_err(|e| format!("cannot start {agent} ({}): {e}", ac.cmd.join(" ")))?;
        self.started.insert(agent, generation + 1);
        self.agents.insert(agent, Some(spawned));
        self.write_state().map_err(|e| e.to_string())?;
        Ok(())
    }

    /// The agent is gone or unhealthy: stop it, record why; the command in flight, if it was
    /// its, is resent (new attempt, same IK) by the main loop after a restart.
    pub(super) fn lost(&mut self, agent: AgentType, reason: String) -> Result<(), RunError> {
        if let Some(mut a) = self.agents.get_mut(&agent).and_then(Option::take) {
            a.kill();
        }
        let m = self.system(
            "system.agent_unhealthy",
            None,
            json!({"agent": agent.as_str(), "reason": reason}),
        );
        self.record(&m)
    }

    /// Waits for the in-flight command's terminal event, recording what comes meanwhile, and
    /// watching heartbeats (3 misses → unhealthy) and the command's deadline.
    pub(super) fn wait(&mut self) -> Result<(), RunError> {
        let Some(cur) = self.state.current.clone() else {
            return Ok(());
        };
        let target = cur.command.to.agent_type;
        let timeout = self.config.agents.get(target).timeout(cur.command.action);
        let until = Instant::now() + timeout;
        // Every agent this run has started (the orchestration agent too, during intake).
        let watched: Vec<AgentType> = self.agents.keys().copied().collect();
        let tick = watched
            .iter()
            .map(|a| self.config.agents.get(*a).heartbeat_interval())
            .min()
            .unwrap_or(Duration::from_secs(10))
            .min(Duration::from_millis(500))
            / 4;
        loop {
            let current = self.state.current.as_ref();
            if current.is_none_or(|c| c.terminal.is_some() || !c.sent_live)
                || signals::received().is_some()
            {
                return Ok(());
            }
            // The clocks are checked after every message too: an agent flooding events must
            // not keep its own timeout (or another's missing heartbeats) from being noticed.
            if let Ok(incoming) = self.rx.recv_timeout(tick) {
                self.take(incoming)?;
            }
            let now = Instant::now();
            if now > until {
                return self.lost(
                    target,
                    format!("{} timed out after {:?}", cur.command.action, timeout),
                );
            }
            for &agent in &watched {
                let interval = self.config.agents.get(agent).heartbeat_interval();
                let late = self
                    .agents
                    .get(&agent)
                    .and_then(Option::as_ref)
                    .is_some_and(|a| {
                        now.saturating_duration_since(a.last_heartbeat())
                            > interval * MISSED_HEARTBEATS
                    });
                if late {
                    self.lost(
                        agent,
                        format!("no heartbeat for {MISSED_HEARTBEATS} intervals of {interval:?}"),
                    )?;
                }
            }
        }
    }

    pub(super) fn take(&mut self, incoming: Incoming) -> Result<(), RunError> {
        let Incoming {
            agent,
            generation,
            item,
        } = incoming;
        let live = self
            .agents
            .get(&agent)
            .and_then(Option::as_ref)
            .is_some_and(|a| a.generation == generation);
        match item {
            Item::Event(message) if live => {
                // Agents are untrusted: one may only speak for itself, and never as
                // lorch (a `command`, or a `system` event, would steer the run).
                let refused = match &*message {
                    Message::Event(e) if e.from.agent_type == agent => None,
                    Message::Event(e) => Some(format!(
                        "an event from {} on {agent}'s stdout",
                        e.from.agent_type
                    )),
                    other => Some(format!("agents do not send {}s", other.kind())),
                };
                match refused {
                    None => self.record(&message)?,
                    Some(error) => {
                        let line = serde_json::to_string(&*message).unwrap_or_default();
                        self.protocol_error(agent, error, line)?;
                    }
                }
            }
            Item::Bad(error, line) if live => {
                self.protocol_error(agent, error.to_string(), line)?
            }
            Item::Eof if live => self.lost(agent, "exited".to_owned())?,
            _ => {}
        }
        Ok(())
    }

    pub(super) fn protocol_error(
        &mut self,
        agent: AgentType,
        error: String,
        mut line: String,
    ) -> Result<(), RunError> {
        // The start of the line is enough to find the fault; the ledger stays small.
        if line.len() > 512 {
            let mut end = 512;
            while !line.is_char_boundary(end) {
                end -= 1;
            }
            line.truncate(end);
        }
        let m = self.system(
            "system.protocol_error",
            None,
            json!({"agent": agent.as_str(), "error": error, "line": line}),
        );
        self.record(&m)
    }
}
