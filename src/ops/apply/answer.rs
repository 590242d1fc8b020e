//! What an apply answers, whichever front door asked (docs/apply.md): a reply checked once,
//! then refused, checked only (`dry_run`), run in place (`no_commit`) or run as one
//! transaction; a reply without a block runs nothing and says how a block is written; an
//! apply whose commit was kept instead of published is NOT APPLIED; automatic gc runs after.

use std::path::Path;

use serde_json::json;

use super::ApplyOptions;
use crate::actions::{BlockError, ErrorType, ReplyPlan};
use crate::config::Config;
use crate::notice::{Notice, NoticeKind};
use crate::ops::check::{self, CheckedReply};
use crate::ops::{OpError, Outcome, Response, execute};
use crate::report;

/// What `git loaf apply` is asked to do with a reply, whichever front door asked.
#[derive(Debug, Clone, Default)]
pub struct ApplyRequest {
    /// Parse and validate only.
    pub dry_run: bool,
    /// Run in place, without a git transaction.
    pub no_commit: bool,
    /// The model that wrote the reply.
    pub model: Option<String>,
    /// Skip the repository's pre-commit and commit-msg hooks.
    pub no_verify: bool,
    /// Whether to sign the commit.
    pub sign: crate::git::sign::SignRequest,
    /// What the change is for (the commit's subject after `AI: `).
    pub message: Option<String>,
}

/// What to apply: a reply's text, or the blocks a caller built (MCP's `actions`).
#[derive(Debug, Clone)]
pub enum ReplyInput<'r> {
    /// A reply as the model wrote it.
    Text(&'r str),
    /// Blocks, each as the parser would have read it.
    Blocks(Vec<crate::nesl::Block<'static>>),
}

/// Applies (or, with `dry_run`, checks) `text` in the repository (or folder) containing
/// `cwd`, and says what came of it.
pub fn respond(cwd: &Path, text: &str, request: &ApplyRequest) -> Result<Response, OpError> {
    respond_to(cwd, ReplyInput::Text(text), request)
}

/// [`respond`], to a reply or to blocks.
pub fn respond_to(
    cwd: &Path,
    input: ReplyInput<'_>,
    request: &ApplyRequest,
) -> Result<Response, OpError> {
    let root = crate::git::worktree_root(cwd).unwrap_or_else(|| cwd.to_path_buf());
    // The transaction reads loaf.yml itself (inside its lock); the others read it here.
    let config = if request.dry_run || request.no_commit {
        // The loaf.yml the user accepted (docs/loaf-yml.md); an unusable one stops the apply.
        Some(crate::ops::config::load_or_explain(&root)?)
    } else {
        None
    };
    let reply = match input {
        ReplyInput::Text(text) => check::check(text, &root),
        ReplyInput::Blocks(blocks) => check::check_built(blocks, &root),
    };
    if request.dry_run {
        return Ok(dry_run(reply, config.as_ref()));
    }
    // No block: nothing to run, so no transaction (no lock, no stage, no hooks, no apply
    // id). A repository git-loaf must not touch is still refused first, and outside a
    // repository the transaction says to use --no-commit.
    if let Some(result) = check::no_block_result(reply.text, &reply.plan) {
        if config.is_none() {
            match crate::git::states::discover(cwd) {
                Ok(repo) => crate::git::states::refuse_in_progress(&repo, "apply")?,
                Err(_) => return transaction(request, cwd, &reply),
            }
        }
        return Ok(result_response(&result));
    }
    let Some(config) = config else {
        return transaction(request, cwd, &reply);
    };
    let result = crate::ops::loaf::Loaf::with_config(&root, config).execute_checked(&reply);
    Ok(result_response(&result))
}

/// The planned actions and every error, nothing changed.
fn dry_run(reply: CheckedReply<'_>, config: Option<&Config>) -> Response {
    let plan = refuse_disallowed(reply.plan, config);
    let fatal = (plan.total_blocks == 0).then(|| check::no_block_message(reply.text, &plan));
    let outcome = if plan.errors.is_empty() && fatal.is_none() {
        Outcome::Success
    } else {
        Outcome::Failed
    };
    Response::text(dry_run_text(&plan, fatal.as_deref()), outcome)
        .with_json(&dry_run_json(&plan, fatal.as_deref()))
}

/// A result's report; a failure is an error to a one-flag reader only when nothing of it
/// was committed.
fn result_response(result: &report::ExecutionResult) -> Response {
    let outcome = if result.success {
        Outcome::Success
    } else {
        Outcome::Failed
    };
    let committed = result.git.as_ref().is_some_and(|g| g.commit.is_some());
    let mut response = Response::text(result.to_text(), outcome).with_json(result);
    response.is_error = !result.success && !committed;
    response
}

/// The plan with every action loaf.yml does not enable turned into an error, as the run
/// would report it.
fn refuse_disallowed(mut plan: ReplyPlan, config: Option<&Config>) -> ReplyPlan {
    let Some(config) = config else {
        return plan;
    };
    let (allowed, refused): (Vec<_>, Vec<_>) = std::mem::take(&mut plan.actions)
        .into_iter()
        .partition(|a| config.allows(&a.name));
    plan.actions = allowed;
    let file = config.dir.join(crate::config::FILE_NAME);
    plan.errors
        .extend(refused.into_iter().map(|action| BlockError {
            block_id: action.block_id.clone(),
            message: execute::not_enabled(&action.name, config, &file),
            action: Some(action.name),
            error_type: ErrorType::Validation,
            block_start_line: Some(action.start_line),
            nesl_content: None,
            line: None,
        }));
    plan
}

/// The apply as a git transaction.
fn transaction(
    request: &ApplyRequest,
    cwd: &Path,
    reply: &CheckedReply<'_>,
) -> Result<Response, OpError> {
    let options = ApplyOptions {
        model: request.model.clone(),
        // Recorded so that a watcher never runs a reply already applied by hand.
        reply_key: reply.key.clone(),
        no_verify: request.no_verify,
        sign: request.sign.clone(),
        message: request.message.clone(),
    };
    let applied = super::apply_checked(cwd, reply, &options)?;
    let mut notices = applied.notices.clone();
    // loaf.yml's `gc` asks for pruning; it is due at most once a day. A failure costs
    // nothing of the apply, which is done: say it and go on.
    match crate::ops::gc::auto(cwd) {
        Ok(Some(pruned)) => notices.push(Notice::new(
            NoticeKind::Gc,
            format!(
                "pruned {} operation-log entries older than {} days (loaf.yml gc.keep-days)",
                pruned.dropped.len(),
                pruned.keep_days
            ),
        )),
        Ok(None) => {}
        Err(error) => notices.push(Notice::new(
            NoticeKind::Gc,
            format!("automatic gc did not run: {error}"),
        )),
    }
    let result = &applied.result;
    let mut response = result_response(result).with_notices(notices);
    if let Some(kept) = &applied.kept {
        response.is_error = true;
        response.error = Some(OpError::refused(
            format!(
                "NOT APPLIED: {}; nothing of yours was changed. The apply's commit is kept as {}",
                kept.reason, kept.refname
            ),
            format!(
                "look at it with `git loaf show {0}`, then `git loaf take {0}` to apply it to your tree (uncommitted edits are kept) or `git loaf drop {0}` to discard it",
                result
                    .git
                    .as_ref()
                    .map(|g| g.apply.as_str())
                    .unwrap_or_default()
            ),
        ));
    }
    Ok(response)
}

/// The planned actions and the blocks that would not run, in the reply's order.
fn dry_run_text(plan: &ReplyPlan, fatal: Option<&str>) -> String {
    let mut out = String::from("=== LOAF DRY RUN ===\n");
    if let Some(fatal) = fatal {
        out.push_str(&format!("FATAL: {}\n", fatal.replace('\n', "\n    ")));
    }
    for warning in &plan.warnings {
        out.push_str(&format!("warning: {warning}\n"));
    }
    let mut lines: Vec<(usize, String)> = plan
        .actions
        .iter()
        .map(|action| {
            let target = report::action_target(&action.name, &action.params);
            (
                action.start_line,
                format!("{} {}{target}\n", action.block_id, action.name),
            )
        })
        .collect();
    lines.extend(plan.errors.iter().map(|error| {
        (
            error.block_start_line.or(error.line).unwrap_or(0),
            report::block_error_line(error),
        )
    }));
    lines.sort_by_key(|(at, _)| *at);
    lines.into_iter().for_each(|(_, line)| out.push_str(&line));
    let n = plan.actions.len();
    out.push_str(&format!(
        "=== {n} action{} would run; {} error{} ===\n",
        if n == 1 { "" } else { "s" },
        plan.errors.len(),
        if plan.errors.len() == 1 { "" } else { "s" },
    ));
    out
}

fn dry_run_json(plan: &ReplyPlan, fatal: Option<&str>) -> serde_json::Value {
    let actions: Vec<_> = plan
        .actions
        .iter()
        .map(|a| json!({"blockId": a.block_id, "action": a.name, "params": a.params}))
        .collect();
    let mut value = json!({
        "success": plan.errors.is_empty() && fatal.is_none(),
        "totalBlocks": plan.total_blocks,
        "actions": actions,
        "parseErrors": plan.errors,
    });
    if let (Some(fatal), Some(map)) = (fatal, value.as_object_mut()) {
        map.insert("fatalError".to_owned(), json!(fatal));
    }
    value
}
