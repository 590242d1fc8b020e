//! Agents that edit files with their own tools (Claude Code, Codex, Cursor, Gemini CLI): a
//! front door beside `cli/` and `watch/` (docs/agents.md). [`hook`] reads an agent's hook event
//! and says which record-mode step it is (the operation itself is [`crate::ops::record`]);
//! [`settings`] wires the hooks and the MCP server into the agent's project settings for
//! `git loaf init --agent` ([`codex_config`] for Codex's TOML).

pub mod codex_config;
pub mod feedback;
pub mod hook;
pub mod json_doc;
pub mod settings;

use std::fmt;
use std::str::FromStr;

/// What an edit adds to a settings file, and what of the user's it keeps that the user
/// should know about.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    /// What is added (`record-mode hooks …`, `MCP server …`).
    pub added: Vec<String>,
    /// What was there already under git-loaf's name and is left as the user wrote it.
    pub kept: Vec<String>,
}

/// An agent git-loaf knows the hooks of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Agent {
    /// Anthropic's Claude Code.
    ClaudeCode,
    /// OpenAI's Codex CLI.
    Codex,
    /// The Cursor editor's agent.
    Cursor,
    /// Google's Gemini CLI.
    Gemini,
}

impl Agent {
    /// Every agent, in the order help lists them.
    pub const ALL: [Agent; 4] = [
        Agent::ClaudeCode,
        Agent::Codex,
        Agent::Cursor,
        Agent::Gemini,
    ];

    /// The name on the command line (`git loaf agent-hook claude-code`), and in
    /// `Assisted-by`.
    pub fn name(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "claude-code",
            Agent::Codex => "codex",
            Agent::Cursor => "cursor",
            Agent::Gemini => "gemini",
        }
    }
}

impl fmt::Display for Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An agent name git-loaf does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown agent '{0}' (known: claude-code, codex, cursor, gemini)")]
pub struct UnknownAgent(pub String);

impl FromStr for Agent {
    type Err = UnknownAgent;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Agent::ALL
            .into_iter()
            .find(|a| a.name() == text)
            .or(match text {
                "claude" => Some(Agent::ClaudeCode),
                "gemini-cli" => Some(Agent::Gemini),
                _ => None,
            })
            .ok_or_else(|| UnknownAgent(text.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back() {
        for agent in Agent::ALL {
            assert_eq!(agent.name().parse::<Agent>(), Ok(agent));
        }
        assert_eq!("claude".parse::<Agent>(), Ok(Agent::ClaudeCode));
        assert!("vim".parse::<Agent>().is_err());
    }
}
