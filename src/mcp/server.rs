//! The MCP server: one method per tool, each with a typed parameter struct whose doc
//! comments are the schema's descriptions (rmcp generates the tool list from them).
//!
//! A tool answers every call with a tool result, never a protocol error, when the call
//! reached it: a wrong parameter, a reply without blocks or a path outside the repository is
//! a result with `isError` saying what to send instead, and the server goes on.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rmcp::handler::server::router::prompt::PromptRouter;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ErrorCode, GetPromptResult,
    PromptMessage, Role,
};
use rmcp::service::RequestContext;
use rmcp::{
    ErrorData, RoleServer, ServerHandler, prompt, prompt_handler, prompt_router, tool,
    tool_handler, tool_router,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::{actions, answer};
use crate::git::sign::SignRequest;
use crate::ops::apply::answer::{ApplyRequest, ReplyInput};
use crate::ops::squash::answer::SquashRequest;
use crate::ops::{self, OpError, Outcome, Response};

mod review;

/// Parameters of `apply`: `reply` or `actions`, not both.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApplyParams {
    /// A reply holding NESL blocks (`#!nesl [@three-char-SHA-256: id]` … `#!end_id`), as
    /// the `instructions` tool describes; text around the blocks is ignored.
    pub reply: Option<String>,
    /// The actions to run, in order, instead of a reply: objects such as
    /// `{"action": "file_write", "path": "/repo/src/a.rs", "content": "…"}`, each with the
    /// parameters `instructions` lists for its action (paths absolute, inside the
    /// repository). In the report they are blocks a1, a2, … in this order.
    pub actions: Option<Vec<Map<String, Value>>>,
    /// The model that wrote it, recorded in the commit as `Assisted-by:`.
    pub model: Option<String>,
    /// What the change is for, in a few words (`Fix the off-by-one in the pager`): the
    /// commit's subject after `AI: `. Without it, the reply's opening sentence, else a
    /// summary of its actions.
    pub message: Option<String>,
    /// Only check: list the actions that would run and every error; change nothing.
    #[serde(default)]
    pub dry_run: bool,
}

/// An apply id or a number of operations.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum IdOrCount {
    /// The last N operations.
    Count(u64),
    /// An apply id, or the commit an apply made (as `log` shows them).
    Id(String),
}

/// Parameters of `undo`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UndoParams {
    /// Undo every operation back to and including this one, in one step: an apply id, the
    /// commit an apply made, or a count N (the last N operations). Without it: the most
    /// recent operation.
    pub to: Option<IdOrCount>,
}

/// Parameters of `redo` (none).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RedoParams {}

/// Parameters of `log`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LogParams {
    /// Show at most this many, newest first (default 20).
    pub n: Option<usize>,
}

/// Parameters of `show`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShowParams {
    /// An apply id or a commit (default HEAD: the last apply).
    pub id: Option<String>,
}

/// Parameters of `squash`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SquashParams {
    /// Select commits whose message contains any of these texts instead of the applies
    /// (`""` matches every commit).
    #[serde(default)]
    pub containing: Vec<String>,
    /// Only the turns record mode committed for this session (`Loaf-Session` trailer), e.g.
    /// an agent's session id.
    #[serde(default)]
    pub session: Option<String>,
    /// Only commits made at or after this date (`2026-01-01`, `2026-01-01T12:00:00+02:00`,
    /// `@<seconds>`, `3 days ago`; UTC unless a zone is given).
    pub after: Option<String>,
    /// Only commits of the last N hours.
    pub hours: Option<u64>,
    /// Only commits of the last N days.
    pub days: Option<u64>,
    /// At most the N newest commits of the run.
    pub limit: Option<usize>,
    /// The commit message instead of the generated one (the git-loaf trailers are added).
    pub message: Option<String>,
    /// Only show the commits and the message it would write; change nothing.
    #[serde(default)]
    pub dry_run: bool,
    /// Then push the branch to its upstream with --force-with-lease.
    #[serde(default)]
    pub push: bool,
    /// Squash commits already pushed; with `push`, push with --force.
    #[serde(default)]
    pub force: bool,
    /// Sign the commit (true) or not (false); absent: as commit.gpgSign says.
    pub sign: Option<bool>,
    /// The key to sign with (signs).
    pub signing_key: Option<String>,
}

/// git-loaf's tools for the repository the server was started in.
#[derive(Debug, Clone)]
pub struct LoafServer {
    /// Where the operations run (the repository's or a folder inside it).
    repo: Arc<PathBuf>,
    /// One call at a time: two calls of one client would otherwise meet at the
    /// repository's lock and the second be refused.
    busy: Arc<Mutex<()>>,
    tool_router: ToolRouter<Self>,
    prompt_router: PromptRouter<Self>,
}

#[tool_router]
impl LoafServer {
    /// The server for the repository containing `repo`.
    pub fn new(repo: PathBuf) -> Self {
        LoafServer {
            repo: Arc::new(repo),
            busy: Arc::new(Mutex::new(())),
            tool_router: Self::tool_router() + Self::review_router(),
            prompt_router: Self::prompt_router(),
        }
    }

    /// Run a reply's NESL blocks, or a list of actions, as one git commit in this repository
    /// (file edits, reads, shell commands; all in a staging worktree). Returns the report
    /// to read: each block's outcome and output. The user's uncommitted work is kept out
    /// of the commit; `undo` takes it back. isError when nothing was applied.
    #[tool]
    async fn apply(
        &self,
        Parameters(params): Parameters<ApplyParams>,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(self.run(move |repo| apply(repo, params)).await)
    }

    /// Undo the most recent git-loaf operation (apply, squash, …), restoring the files,
    /// index and HEAD exactly as they were; again to go further back, `redo` to go forward.
    /// Refuses when anything changed since or its commits were pushed.
    #[tool]
    async fn undo(
        &self,
        Parameters(params): Parameters<UndoParams>,
    ) -> Result<CallToolResult, ErrorData> {
        let to = params.to.map(|to| match to {
            IdOrCount::Count(n) => n.to_string(),
            IdOrCount::Id(id) => id,
        });
        Ok(self
            .run(move |repo| answered(ops::undo::answer::respond_undo(repo, to.as_deref(), false)))
            .await)
    }

    /// Re-do the operation the last undo undid.
    #[tool]
    async fn redo(
        &self,
        Parameters(_params): Parameters<RedoParams>,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(self
            .run(|repo| answered(ops::undo::answer::respond_redo(repo)))
            .await)
    }

    /// List the git-loaf commits on the current branch, newest first: commit, apply id,
    /// time, succeeded and failed counts, summary.
    #[tool(annotations(read_only_hint = true))]
    async fn log(
        &self,
        Parameters(params): Parameters<LogParams>,
    ) -> Result<CallToolResult, ErrorData> {
        let n = params.n.unwrap_or(20);
        Ok(self
            .run(move |repo| answered(ops::log::answer::respond_log(repo, n)))
            .await)
    }

    /// Print the report an apply recorded (the same text `apply` returned), by apply id or
    /// commit; the last apply by default.
    #[tool(annotations(read_only_hint = true))]
    async fn show(
        &self,
        Parameters(params): Parameters<ShowParams>,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(self
            .run(move |repo| answered(ops::log::answer::respond_show(repo, params.id.as_deref())))
            .await)
    }

    /// Fold the run of git-loaf commits at the tip of the branch into one commit (its
    /// message lists the folded subjects). The user's uncommitted work is not touched;
    /// `undo` takes the squash back.
    #[tool]
    async fn squash(
        &self,
        Parameters(params): Parameters<SquashParams>,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(self
            .run(move |repo| answered(ops::squash::answer::respond(repo, &squash_request(params))))
            .await)
    }

    /// What git-loaf has in effect in this repository, each with the command that ends it:
    /// a step-back walk (HEAD detached, how far back), an agent's turn being recorded,
    /// applies kept instead of applied (NOT APPLIED), saved work, an interrupted operation,
    /// a loaf.yml change that waits for the user. Only reads.
    #[tool(annotations(read_only_hint = true))]
    async fn status(&self) -> Result<CallToolResult, ErrorData> {
        Ok(self
            .run(|repo| answered(ops::status::answer::respond(repo)))
            .await)
    }

    /// How to write replies for this repository: the NESL syntax, the repository's root
    /// (paths are absolute, under it), and every action loaf.yml allows with its
    /// parameters. Read it before the first `apply`.
    #[tool(annotations(read_only_hint = true))]
    async fn instructions(&self) -> Result<CallToolResult, ErrorData> {
        Ok(self
            .run(|repo| {
                answered(
                    ops::instructions::render(repo)
                        .map(|text| Response::text(text, Outcome::Success)),
                )
            })
            .await)
    }
}

// `#[prompt]` adds an undocumented metadata function beside the method.
#[allow(missing_docs)]
#[prompt_router]
impl LoafServer {
    /// How to write git-loaf replies for this repository (the `instructions` tool's text),
    /// to put in the model's context.
    #[prompt(name = "instructions")]
    async fn instructions_prompt(&self) -> Result<GetPromptResult, ErrorData> {
        let repo = Arc::clone(&self.repo);
        let text = tokio::task::spawn_blocking(move || ops::instructions::render(&repo))
            .await
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?
            .map_err(|e| ErrorData::internal_error(e.render(), None))?;
        Ok(
            GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)])
                .with_description("How to write git-loaf replies for this repository"),
        )
    }
}

impl LoafServer {
    /// The answer to a call of a tool that is not here: the ones that are.
    fn unknown_tool(&self, name: &str) -> CallToolResult {
        let tools: Vec<String> = self
            .tool_router
            .list_all()
            .into_iter()
            .map(|tool| tool.name.to_string())
            .collect();
        answer::bad_input(
            &format!("there is no tool {name:?}"),
            &format!("the tools are {}", tools.join(", ")),
        )
    }

    /// Runs `call` on a blocking thread (the operations are synchronous), one call at a
    /// time; a panic is an answer too, and the server lives on.
    async fn run<F>(&self, call: F) -> CallToolResult
    where
        F: FnOnce(&Path) -> CallToolResult + Send + 'static,
    {
        let repo = Arc::clone(&self.repo);
        let busy = Arc::clone(&self.busy);
        let joined = tokio::task::spawn_blocking(move || {
            // A call that panicked poisoned nothing we keep: the lock guards no data.
            let _one_at_a_time = busy.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            call(&repo)
        })
        .await;
        joined.unwrap_or_else(|error| {
            answer::bad_input(
                &format!("the operation stopped unexpectedly: {error}"),
                "`log` shows what the repository holds now; report this as a git-loaf bug",
            )
        })
    }
}

#[tool_handler(router = self.tool_router, name = "git-loaf")]
#[prompt_handler(router = self.prompt_router)]
impl ServerHandler for LoafServer {
    /// As the router calls a tool, except that parameters the tool cannot take are a tool
    /// result the model reads (with what to send instead), not a protocol error its client
    /// may hide from it.
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        if self.tool_router.get(&name).is_none() {
            return Ok(self.unknown_tool(&name).into());
        }
        let call = ToolCallContext::new(self, request, context);
        let response = match self.tool_router.call(call).await {
            Err(error) if error.code == ErrorCode::INVALID_PARAMS => {
                return Ok(wrong_parameters(&name, &error.message).into());
            }
            other => other?,
        };
        // rmcp answers parameters it could not read with a bare tool error; say what to do.
        Ok(match response {
            CallToolResponse::Complete(result) => match unreadable_parameters(&result) {
                Some(message) => wrong_parameters(&name, &message),
                None => result,
            }
            .into(),
            other => other,
        })
    }
}

/// rmcp's message when a tool's parameters did not deserialize.
const UNREADABLE: &str = "failed to deserialize parameters:";

/// The message of a result rmcp made of parameters it could not read, if it is one.
fn unreadable_parameters(result: &CallToolResult) -> Option<String> {
    let [content] = result.content.as_slice() else {
        return None;
    };
    let text = &content.as_text()?.text;
    (result.is_error == Some(true) && text.starts_with(UNREADABLE)).then(|| text.clone())
}

/// What to tell a model whose parameters the tool cannot take.
fn wrong_parameters(name: &str, message: &str) -> CallToolResult {
    let message = message.trim_start_matches(UNREADABLE).trim();
    answer::bad_input(
        &format!("{name}: the parameters do not fit: {message}"),
        &format!(
            "call `{name}` again with parameters as its input schema describes (names, types); nothing was changed"
        ),
    )
}

/// `apply` with `reply` or `actions`.
fn apply(repo: &Path, params: ApplyParams) -> CallToolResult {
    const FORMS: &str = "give `reply` (text with NESL blocks) or `actions` (an array of {\"action\": NAME, PARAMETER: VALUE, …} objects); the `instructions` tool lists the actions and their parameters";
    let input = match (&params.reply, params.actions) {
        (Some(reply), None) => ReplyInput::Text(reply),
        (None, Some(list)) => match actions::to_blocks(&list) {
            Ok(blocks) => ReplyInput::Blocks(blocks),
            Err(error) => return answer::bad_input(&error.to_string(), FORMS),
        },
        (Some(_), Some(_)) => {
            return answer::bad_input("apply: both `reply` and `actions` were given", FORMS);
        }
        (None, None) => return answer::bad_input("apply: nothing to apply", FORMS),
    };
    let request = ApplyRequest {
        dry_run: params.dry_run,
        model: params.model,
        message: params.message,
        ..Default::default()
    };
    review::with_reports(
        repo,
        answered(ops::apply::answer::respond_to(repo, input, &request)),
    )
}

/// The request for `squash`.
fn squash_request(params: SquashParams) -> SquashRequest {
    let gpg_sign = match (&params.signing_key, params.sign) {
        (Some(key), _) => Some(Some(key.clone())),
        (None, Some(true)) => Some(None),
        (None, _) => None,
    };
    let no_gpg_sign = params.sign == Some(false) && params.signing_key.is_none();
    SquashRequest {
        containing: params.containing,
        session: params.session,
        after: params.after,
        hours: params.hours,
        days: params.days,
        limit: params.limit,
        message: params.message,
        dry_run: params.dry_run,
        push: params.push,
        force: params.force,
        sign: SignRequest::from_flags(gpg_sign, no_gpg_sign),
    }
}

/// A command's answer, or its error, as the tool result.
fn answered(response: Result<Response, OpError>) -> CallToolResult {
    match response {
        Ok(response) => answer::response(response),
        Err(error) => answer::error(&error),
    }
}
