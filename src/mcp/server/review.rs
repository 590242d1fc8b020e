//! The MCP tool `review` (docs/review.md): list an AI commit's hunks, or reject some, by the
//! same rules as `git loaf review --list` / `--reject`; and the report of a review, carried
//! once by the next `apply` answer.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock};
use rmcp::{ErrorData, tool, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;

use super::{LoafServer, answered};
use crate::ops;

/// A hunk: its id as the listing shows it, or `PATH[:LINE]`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum HunkRef {
    /// The hunk's id.
    Id(u64),
    /// `PATH` (every hunk of the file) or `PATH:LINE` (the hunk whose lines hold LINE), or
    /// an id as text.
    Text(String),
}

/// Parameters of `review`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReviewParams {
    /// The apply or turn id, or a commit (default: the last apply or turn on the branch).
    pub id: Option<String>,
    /// The hunks to reject; empty: only list the hunks (ids, paths, lines, diffs).
    #[serde(default)]
    pub reject: Vec<HunkRef>,
    /// Why they are rejected (kept in the commit's note and in the report).
    pub reason: Option<String>,
}

#[tool_router(router = review_router, vis = "pub(super)")]
impl LoafServer {
    /// List the hunks of an AI commit (an apply or an agent's turn; the last one by
    /// default) with their ids, or reject some of them: they leave the commit (the tip is
    /// rewritten when not pushed, else a commit reverts them) and the working tree; the
    /// user's uncommitted work stays. `undo` brings them back. Do not reintroduce rejected
    /// changes.
    #[tool]
    async fn review(
        &self,
        Parameters(params): Parameters<ReviewParams>,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(self
            .run(move |repo| {
                let rejects: Vec<String> = params
                    .reject
                    .into_iter()
                    .map(|r| match r {
                        HunkRef::Id(id) => id.to_string(),
                        HunkRef::Text(text) => text,
                    })
                    .collect();
                if rejects.is_empty() {
                    answered(ops::review::answer::respond_list(
                        repo,
                        params.id.as_deref(),
                    ))
                } else {
                    let reason = params.reason.unwrap_or_default();
                    answered(ops::review::answer::respond_reject(
                        repo,
                        params.id.as_deref(),
                        &rejects,
                        &reason,
                    ))
                }
            })
            .await)
    }
}

/// `result` with the reports of reviews the model has not seen yet, taken away (once).
pub(super) fn with_reports(repo: &std::path::Path, mut result: CallToolResult) -> CallToolResult {
    if let Some(report) = crate::ops::review::take_report(repo) {
        result.content.push(ContentBlock::text(report));
    }
    result
}
