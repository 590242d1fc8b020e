//! `lorch.json` (docs/lorch.md, "Running it"): created with the defaults when absent,
//! checked at startup against a JSON Schema of ours (`lorch/schemas/config.v1.json`, same
//! validator as the protocol) so that a mistake is reported with the field and what is
//! expected there, then read into typed settings.
//!
//! One deliberate change to the spec's defaults: the default agent commands go through
//! `lorch agent ROLE -- claude -p`, since a bare `claude` does not speak the protocol.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;
use thiserror::Error;

use super::protocol::{Action, AgentType};
use super::safety;
use super::validate::Violation;

mod retry;

pub use retry::{Backoff, RATE_LIMIT_ENV, RateLimit, RetryPolicy};

/// The file's name, in the folder lorch runs in.
pub const FILE_NAME: &str = "lorch.json";

/// The schema of `lorch.json`.
pub const SCHEMA: &str = include_str!("../schemas/config.v1.json");

/// At most this many restarts per agent per run.
pub const MAX_RESTARTS: u32 = 5;

/// Turns of a builder step when `policy.max_turns` does not say.
pub const DEFAULT_MAX_TURNS: u32 = 4;

/// Missed heartbeats before an agent is unhealthy.
pub const MISSED_HEARTBEATS: u32 = 3;

/// The goal of the task in the `lorch.json` lorch writes: a placeholder that `lorch run`
/// refuses to hand to a model.
pub const PLACEHOLDER_GOAL: &str = "Describe your task here (and list the files it is about in `files`): lorch will not run this placeholder";

/// What `lorch.json` holds when lorch creates it, with a placeholder task.
pub fn default_text() -> String {
    let agent = |role: &str, timeouts: Value, hb: bool| {
        let mut a = serde_json::json!({
            "cmd": ["lorch", "agent", role, "--", "claude", "-p"],
            "timeouts_s": timeouts,
            "env": { "CLAUDE_AGENT_ROLE": role }
        });
        if hb {
            a["heartbeat_interval_s"] = 10.into();
        }
        a
    };
    let value = serde_json::json!({
        "version": "1.0",
        "workspace_root": ".",
        "policy": {
            "concurrency": 1,
            "message_max_bytes": 262144,
            "artifact_max_bytes": 1073741824u64,
            "retry": { "max_attempts": 3, "backoff": { "initial_ms": 1000, "max_ms": 60000, "multiplier": 2.0, "jitter": "full" } },
            "strict_version_pinning": true,
            "parallel_reviews": false,
            "redact_secrets_in_logs": true,
            "max_turns": DEFAULT_MAX_TURNS
        },
        "agents": {
            "builder": agent("builder", serde_json::json!({ "implement": 600, "implement_changes": 600 }), true),
            "reviewer": agent("reviewer", serde_json::json!({ "review": 300 }), true),
            "spec_maintainer": agent("spec_maintainer", serde_json::json!({ "update_spec": 180 }), false),
            "orchestration": agent("orchestration", serde_json::json!({ "intake": 180, "task_discovery": 180 }), false),
        },
        "tasks": [
            { "id": "T-0042", "goal": PLACEHOLDER_GOAL, "files": [] }
        ]
    });
    let mut text = serde_json::to_string_pretty(&value).unwrap_or_default();
    text.push('\n');
    text
}

/// Why `lorch.json` cannot be used.
#[derive(Debug, Error)]
pub enum ConfigError {
    /// Reading or creating it failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// Not JSON.
    #[error("{path}: not JSON: {message}")]
    NotJson {
        /// The file.
        path: PathBuf,
        /// serde_json's description, with line and column.
        message: String,
    },
    /// JSON that the schema refuses: each violation names the field and what is expected.
    #[error("{path}: invalid:\n{}", list(.violations))]
    Invalid {
        /// The file.
        path: PathBuf,
        /// Every violation.
        violations: Vec<Violation>,
    },
    /// The task asked for is not in `tasks`.
    #[error("task {0} is not in lorch.json's tasks")]
    UnknownTask(String),
    /// `lorch.json` was just written with the defaults: nothing is configured yet.
    #[error(
        "there was no lorch.json here: wrote {} with the defaults. Before a run, set in it:\n  \
         - each agent's model command, after `--` in its `cmd` (now `claude -p`; docs/lorch.md \
         has recipes for claude, codex, llm, ollama and gemini);\n  \
         - your task: its `goal` and the `files` it is about (now a placeholder, T-0042);\n  \
         - `spec_path`, where your spec is (unset, lorch reads specs/MASTER-SPEC.md, the \
         spec's layout, or SPEC.md when that is where it is).\n\
         Then `lorch doctor`, and `lorch run --task ID`. To watch a whole run with a scripted \
         model first, no LLM needed: sh examples/lorch/try.sh (in a clone of git-loaf)",
        .0.display()
    )]
    Created(PathBuf),
    /// The task's goal is still the placeholder lorch wrote.
    #[error(
        "task {0}'s goal in lorch.json is still the placeholder lorch wrote: describe the task \
         there (and the files it is about in `files`) before running it"
    )]
    PlaceholderTask(String),
}

fn list(violations: &[Violation]) -> String {
    let lines: Vec<String> = violations.iter().map(|v| format!("  {v}")).collect();
    lines.join("\n")
}

/// The settings lorch uses.
#[derive(Debug, Clone, Deserialize)]
pub struct Config {
    /// Where the agents work and lorch keeps its records, relative to `lorch.json`'s folder.
    #[serde(default = "dot")]
    pub workspace_root: String,
    /// `spec_path` as lorch.json gives it, if it does.
    #[serde(default, rename = "spec_path")]
    pub configured_spec_path: Option<String>,
    /// The spec the spec-maintainer keeps, relative to the workspace: lorch.json's
    /// `spec_path`, else the first of [`SPEC_PATHS`] that exists (see [`Config::find_spec`]).
    #[serde(skip)]
    pub spec_path: String,
    /// The `policy` object.
    #[serde(default)]
    pub policy: Policy,
    /// The agents by role.
    pub agents: Agents,
    /// The tasks `lorch run --task` can run.
    #[serde(default)]
    pub tasks: Vec<Task>,
}

fn dot() -> String {
    ".".to_owned()
}

/// `spec_path` when lorch.json does not say and no spec exists yet: the spec's own layout.
pub const DEFAULT_SPEC_PATH: &str = "specs/MASTER-SPEC.md";

/// Where lorch looks for the spec when lorch.json has no `spec_path`, in this order.
pub const SPEC_PATHS: [&str; 2] = [DEFAULT_SPEC_PATH, "SPEC.md"];

/// The `policy` object.
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct Policy {
    /// Largest protocol line.
    pub message_max_bytes: usize,
    /// Largest artifact.
    pub artifact_max_bytes: u64,
    /// Retries of a command and the backoff between restarts.
    pub retry: RetryPolicy,
    /// Redact `*_TOKEN`/`*_KEY`/`*_SECRET` values from what lorch records.
    pub redact_secrets_in_logs: bool,
    /// Agents check the command's whole snapshot (true, the default), or only the content
    /// of the code and the spec, `code_hash` and `specs_hash` (false): see
    /// [`crate::version`].
    pub strict_version_pinning: bool,
    /// The most turns of one builder step's conversation with its model (docs/lorch.md,
    /// "The three agents"): each reply applied, its report and failed checks sent back,
    /// until the step is done.
    pub max_turns: u32,
    /// The most model calls of a run and of each task.
    pub max_model_calls: ModelCalls,
    /// The most seconds one `lorch run` or `lorch resume` goes on.
    pub max_wall_s: Option<f64>,
}

/// `policy.max_model_calls`: none set, no limit.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ModelCalls {
    /// Of the whole run.
    pub per_run: Option<u64>,
    /// Of each task of the run.
    pub per_task: Option<u64>,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            message_max_bytes: super::validate::MAX_LINE_BYTES,
            artifact_max_bytes: 1 << 30,
            retry: RetryPolicy::default(),
            redact_secrets_in_logs: true,
            strict_version_pinning: true,
            max_turns: DEFAULT_MAX_TURNS,
            max_model_calls: ModelCalls::default(),
            max_wall_s: None,
        }
    }
}

/// The agents: the three of every run, and the orchestration agent of natural-language
/// intake, used only by `lorch run` without `--task`.
#[derive(Debug, Clone, Deserialize)]
pub struct Agents {
    /// Builder.
    pub builder: AgentConfig,
    /// Reviewer.
    pub reviewer: AgentConfig,
    /// Spec maintainer.
    pub spec_maintainer: AgentConfig,
    /// Orchestration (NL intake), when configured.
    #[serde(default)]
    pub orchestration: Option<AgentConfig>,
}

impl Agents {
    /// The orchestration agent, when configured and not `enabled: false`.
    pub fn orchestration(&self) -> Option<&AgentConfig> {
        self.orchestration.as_ref().filter(|a| a.enabled)
    }

    /// The configuration of one role. lorch starts the orchestration agent only when it is
    /// configured (`lorch run` without `--task` checks first); unconfigured, its settings
    /// read as the builder's, which nothing then uses.
    pub fn get(&self, agent: AgentType) -> &AgentConfig {
        match agent {
            AgentType::Reviewer => &self.reviewer,
            AgentType::SpecMaintainer => &self.spec_maintainer,
            AgentType::Orchestration => self.orchestration().unwrap_or(&self.builder),
            _ => &self.builder,
        }
    }
}

/// One agent.
#[derive(Debug, Clone, Deserialize)]
pub struct AgentConfig {
    /// `false` leaves the agent out (`orchestration.enabled`): as if it were not
    /// configured.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// The command line.
    pub cmd: Vec<String>,
    /// Heartbeats expected this often (10 s by default).
    #[serde(default = "ten")]
    pub heartbeat_interval_s: f64,
    /// Per-action timeouts.
    #[serde(default)]
    pub timeouts_s: BTreeMap<String, f64>,
    /// Environment added to the agent's.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

fn yes() -> bool {
    true
}

fn ten() -> f64 {
    10.0
}

impl AgentConfig {
    /// The heartbeat interval.
    pub fn heartbeat_interval(&self) -> Duration {
        Duration::from_secs_f64(self.heartbeat_interval_s)
    }

    /// The timeout of `action`: configured, else the spec's default for it.
    pub fn timeout(&self, action: Action) -> Duration {
        let default = match action {
            Action::Implement | Action::ImplementChanges => 600.0,
            Action::Review => 300.0,
            _ => 180.0,
        };
        Duration::from_secs_f64(
            self.timeouts_s
                .get(action.as_str())
                .copied()
                .unwrap_or(default),
        )
    }
}

/// One task.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Task {
    /// `T-0042`.
    pub id: String,
    /// What to do.
    pub goal: String,
    /// The files the task is about, relative to the workspace: every command carries them
    /// (`inputs.files`), and the builder's prompt shows their content (a file that does not
    /// exist yet is shown as such).
    #[serde(default)]
    pub files: Vec<String>,
}

/// Whether `id` can name a task: a letter or digit, then letters, digits, `.`, `_` or `-`
/// (the schema's pattern: it names files such as `reviews/<id>.json`).
pub fn check_task_id(id: &str) -> Result<(), String> {
    let mut chars = id.chars();
    let ok = chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "`{id}` is not a task id: a letter or digit, then letters, digits, `.`, `_` or `-` (e.g. T-0042)"
        ))
    }
}

impl Config {
    /// Every configured agent: the three of every run, then the orchestration agent if set.
    pub fn configured_agents(&self) -> Vec<AgentType> {
        let mut agents = vec![
            AgentType::Builder,
            AgentType::Reviewer,
            AgentType::SpecMaintainer,
        ];
        if self.agents.orchestration().is_some() {
            agents.push(AgentType::Orchestration);
        }
        agents
    }

    /// The workspace, `workspace_root` resolved against `base` (the folder of `lorch.json`).
    pub fn workspace(&self, base: &Path) -> PathBuf {
        base.join(&self.workspace_root)
    }

    /// Settles `spec_path` when lorch.json does not set it: the first of [`SPEC_PATHS`]
    /// that is a file in `workspace`, else [`DEFAULT_SPEC_PATH`].
    pub fn find_spec(&mut self, workspace: &Path) {
        if self.configured_spec_path.is_some() {
            return;
        }
        let found = SPEC_PATHS
            .iter()
            .find(|p| workspace.join(p).is_file())
            .unwrap_or(&DEFAULT_SPEC_PATH);
        self.spec_path = (*found).to_owned();
    }

    /// The task `id`, refused while its goal is the placeholder lorch wrote.
    pub fn task(&self, id: &str) -> Result<&Task, ConfigError> {
        let task = self
            .tasks
            .iter()
            .find(|t| t.id == id)
            .ok_or_else(|| ConfigError::UnknownTask(id.to_owned()))?;
        if task.goal == PLACEHOLDER_GOAL {
            return Err(ConfigError::PlaceholderTask(id.to_owned()));
        }
        Ok(task)
    }
}

static VALIDATOR: LazyLock<Result<jsonschema::Validator, String>> = LazyLock::new(|| {
    let schema: Value = serde_json::from_str(SCHEMA).map_err(|e| e.to_string())?;
    jsonschema::draft202012::options()
        .build(&schema)
        .map_err(|e| e.to_string())
});

/// Checks `text` as `lorch.json` and reads it.
pub fn parse(path: &Path, text: &str) -> Result<Config, ConfigError> {
    let value: Value = serde_json::from_str(text).map_err(|e| ConfigError::NotJson {
        path: path.to_owned(),
        message: e.to_string(),
    })?;
    let invalid = |violations| ConfigError::Invalid {
        path: path.to_owned(),
        violations,
    };
    let validator = VALIDATOR.as_ref().map_err(|e| {
        invalid(vec![Violation {
            path: String::new(),
            message: format!("the config schema does not compile: {e}"),
        }])
    })?;
    let violations: Vec<Violation> = validator
        .iter_errors(&value)
        .map(|e| Violation {
            path: e.instance_path().as_str().to_owned(),
            message: e.to_string(),
        })
        .collect();
    if !violations.is_empty() {
        return Err(invalid(violations));
    }
    let mut config: Config = serde_json::from_value(value).map_err(|e| {
        invalid(vec![Violation {
            path: String::new(),
            message: e.to_string(),
        }])
    })?;
    config.spec_path = config
        .configured_spec_path
        .clone()
        .unwrap_or_else(|| DEFAULT_SPEC_PATH.to_owned());
    Ok(config)
}

/// Reads `dir/lorch.json`, or `None` when there is none.
pub fn load(dir: &Path) -> Result<Option<Config>, ConfigError> {
    let path = dir.join(FILE_NAME);
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            let mut config = parse(&path, &text)?;
            let workspace = config.workspace(dir);
            config.find_spec(&workspace);
            Ok(Some(config))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(ConfigError::Io { path, source }),
    }
}

/// Reads `dir/lorch.json`, creating it with the defaults first when absent. The
/// boolean says whether it was created.
pub fn load_or_init(dir: &Path) -> Result<(Config, bool), ConfigError> {
    if let Some(config) = load(dir)? {
        return Ok((config, false));
    }
    let path = dir.join(FILE_NAME);
    let text = default_text();
    safety::atomic_write(&path, text.as_bytes()).map_err(|source| ConfigError::Io {
        path: path.clone(),
        source,
    })?;
    parse(&path, &text).map(|c| (c, true))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_valid_and_say_what_8_2_says() {
        let config = parse(Path::new("lorch.json"), &default_text()).expect("valid");
        assert_eq!(config.policy.retry.max_attempts, 3);
        assert_eq!(config.policy.max_turns, 4);
        assert_eq!(config.policy.message_max_bytes, 262_144);
        assert_eq!(
            config.agents.builder.timeout(Action::Implement),
            Duration::from_secs(600)
        );
        assert_eq!(
            config.agents.spec_maintainer.timeout(Action::UpdateSpec),
            Duration::from_secs(180)
        );
        assert_eq!(config.tasks[0].id, "T-0042");
    }
}
