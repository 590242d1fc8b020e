//! What a command has to say, before it is said: the report for stdout (text, and the JSON
//! form where the command has one), the notices for stderr, and how it ended. The command
//! line prints it; `git loaf mcp` returns the same as a tool result, so both front doors
//! tell the same story.

use super::{CliError, Outcome};

/// A command's answer, not yet printed.
#[derive(Debug)]
pub struct Response {
    /// The report, as the command prints it on stdout without `--json`.
    pub text: String,
    /// The report as `--json` prints it, for the commands that have `--json` (kept as the
    /// printed text, so that the command line's output stays byte for byte what it was).
    pub json: Option<String>,
    /// What the command found and did besides its result (`note:` lines on stderr).
    pub notices: Vec<String>,
    /// How it ended.
    pub outcome: Outcome,
    /// Whether a caller that reads one flag (MCP's `isError`) should take it as failed: the
    /// command did nothing it was asked to (an apply that committed nothing). A failure
    /// with a result, such as an apply of which some blocks failed, is not.
    pub is_error: bool,
    /// An error to show after the report (an apply kept instead of applied, a push that
    /// failed after the squash): the report still stands.
    pub error: Option<CliError>,
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
    pub fn with_notices(mut self, notices: Vec<String>) -> Self {
        self.notices = notices;
        self
    }

    /// With the JSON form.
    pub fn with_json(mut self, json: String) -> Self {
        self.json = Some(json);
        self
    }

    /// Prints the notices on stderr and the report on stdout (its JSON form when `json`).
    pub fn print(&self, json: bool) -> Result<(), CliError> {
        super::print_notices(&self.notices);
        match (&self.json, json) {
            (Some(text), true) => super::print_out(text),
            _ => super::print_out(&self.text),
        }
    }
}
