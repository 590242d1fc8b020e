//! What an operation has to say, before it is said: the report (text, and the JSON form
//! where the operation has one), the notices, and how it ended. The command line prints it
//! (report on stdout, notices on stderr); `git loaf mcp` returns the same as a tool result,
//! so both front doors tell the same story (docs/mcp.md).

use super::OpError;
use crate::notice::Notice;

/// How an operation that ran ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Everything succeeded (exit 0).
    Success,
    /// It ran, but some block or action failed (exit 1).
    Failed,
}

/// An operation's answer, not yet printed.
#[derive(Debug)]
pub struct Response {
    /// The report, as the command prints it on stdout without `--json`.
    pub text: String,
    /// The report as data, for the operations that have a JSON form: what `--json` prints
    /// and what an MCP tool returns as structured content.
    pub json: Option<serde_json::Value>,
    /// What the operation found and did besides its result (`note:` lines on stderr).
    pub notices: Vec<Notice>,
    /// How it ended.
    pub outcome: Outcome,
    /// Whether a caller that reads one flag (MCP's `isError`) should take it as failed: the
    /// operation did nothing it was asked to (an apply that committed nothing). A failure
    /// with a result, such as an apply of which some blocks failed, is not.
    pub is_error: bool,
    /// An error to show after the report (an apply kept instead of applied, a push that
    /// failed after the squash): the report still stands.
    pub error: Option<OpError>,
}

impl Response {
    /// A report that ended as `outcome`, with no JSON form and nothing else to say.
    pub fn text(text: String, outcome: Outcome) -> Self {
        Response {
            text,
            json: None,
            notices: Vec::new(),
            outcome,
            is_error: outcome == Outcome::Failed,
            error: None,
        }
    }

    /// With notices to print first.
    pub fn with_notices(mut self, notices: Vec<Notice>) -> Self {
        self.notices = notices;
        self
    }

    /// With the JSON form of `data`.
    pub fn with_json(mut self, data: &impl serde::Serialize) -> Self {
        self.json = Some(serde_json::to_value(data).unwrap_or_else(
            |error| serde_json::json!({ "fatalError": format!("cannot serialize: {error}") }),
        ));
        self
    }
}
