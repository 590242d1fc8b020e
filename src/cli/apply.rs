//! `git loaf apply`: run a reply's blocks.

use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::json;

use super::examples::examples;
use super::{CliError, Outcome, Response};
use crate::actions::{BlockError, ErrorType, ReplyPlan};
use crate::config::Config;
use crate::input::{Source, as_text, read_bytes};
use crate::ops::apply::{self, ApplyOptions};
use crate::report;
use crate::run;

/// Run an LLM's reply as one commit and print the results for the model.
///
/// Every valid NESL block runs, in order, in a staging worktree; what changed becomes one
/// commit on your branch (results in its trailers and a git note), then your branch, index
/// and files move to it. Uncommitted work you had stays uncommitted; `git loaf undo` takes
/// the apply back. Paste what it prints back to the model.
///
/// Exits 0 when everything succeeded, 1 when some block or action failed (what succeeded is
/// kept: failures are data), 2 for usage, configuration or input errors (nothing changed).
#[derive(Debug, Args)]
#[command(after_help = examples(&[
    (
        "Apply a reply saved from the chat, or pasted from the clipboard",
        &["git loaf apply reply.md", "xclip -o -selection clipboard | git loaf apply"],
    ),
    (
        "Check a reply first: the planned actions and every error, nothing changed",
        &["git loaf apply --dry-run reply.md"],
    ),
    ("Record which model wrote it", &["git loaf apply --model claude-sonnet-4 reply.md"]),
    ("Outside a repository: run it in place, no commit", &["git loaf apply --no-commit reply.md"]),
    ("The result as JSON, for a script", &["git loaf apply --json reply.md | jq .success"]),
]))]
pub struct ApplyArgs {
    /// The reply to read; `-` or nothing reads standard input.
    #[arg(value_name = "FILE|-")]
    file: Option<PathBuf>,
    /// Parse and validate only: print the planned actions and every error; change nothing.
    #[arg(long)]
    dry_run: bool,
    /// Run the actions directly in the current directory, without a git transaction (works
    /// outside a repository too).
    #[arg(long)]
    no_commit: bool,
    /// Print the result as JSON instead of the text report.
    #[arg(long)]
    json: bool,
    /// Record the model that wrote the reply (`Assisted-by:` trailer).
    #[arg(long, value_name = "MODEL")]
    model: Option<String>,
    /// Skip the repository's pre-commit and commit-msg git hooks, as `git commit --no-verify`.
    #[arg(long, short = 'n')]
    no_verify: bool,
    /// Sign the commit as `git commit -S` does (gpg.format, user.signingKey); KEY names the
    /// key. Default: as commit.gpgSign says.
    #[arg(long, short = 'S', value_name = "KEY", num_args = 0..=1, require_equals = true)]
    gpg_sign: Option<Option<String>>,
    /// Do not sign the commit, whatever commit.gpgSign says.
    #[arg(long)]
    no_gpg_sign: bool,
}

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

impl ApplyArgs {
    fn request(&self) -> ApplyRequest {
        ApplyRequest {
            dry_run: self.dry_run,
            no_commit: self.no_commit,
            model: self.model.clone(),
            no_verify: self.no_verify,
            sign: crate::git::sign::SignRequest::from_flags(
                self.gpg_sign.clone(),
                self.no_gpg_sign,
            ),
            message: None,
        }
    }
}

/// Runs `git loaf apply`.
pub fn run(args: &ApplyArgs) -> Result<Outcome, CliError> {
    super::show_progress(!args.json);
    let cwd = super::current_dir()?;
    let source = Source::from_arg(args.file.as_deref());
    let bytes = read_bytes(&source)?;
    let text = as_text(&bytes, &source)?;
    let response = respond(&cwd, text, &args.request())?;
    response.print(args.json)?;
    match response.error {
        Some(error) => Err(error),
        None => Ok(response.outcome),
    }
}

/// Applies (or, with `dry_run`, checks) `text` in the repository (or folder) containing
/// `cwd`, and says what came of it.
pub fn respond(cwd: &Path, text: &str, request: &ApplyRequest) -> Result<Response, CliError> {
    let root = crate::git::worktree_root(cwd).unwrap_or_else(|| cwd.to_path_buf());
    // The transaction reads loaf.yml itself (inside its lock); the others read it here.
    let config = if request.dry_run || request.no_commit {
        Some(load_config(&root)?)
    } else {
        None
    };
    let plan = run::check_reply(text, &root);
    if request.dry_run {
        return Ok(dry_run(plan, config.as_ref(), text));
    }
    // No block: nothing to run, so no transaction (no lock, no stage, no hooks, no apply
    // id). A repository git-loaf must not touch is still refused first, and outside a
    // repository the transaction says to use --no-commit.
    if let Some(result) = run::no_block_result(text, &plan) {
        if config.is_none() {
            match crate::git::states::discover(cwd) {
                Ok(repo) => crate::git::states::refuse_in_progress(&repo, "apply")?,
                Err(_) => return transaction(request, cwd, text),
            }
        }
        return Ok(result_response(&result));
    }
    let Some(config) = config else {
        return transaction(request, cwd, text);
    };
    let result = crate::Loaf::with_config(&root, config).execute(text);
    Ok(result_response(&result))
}

/// The planned actions and every error, nothing changed.
fn dry_run(plan: ReplyPlan, config: Option<&Config>, text: &str) -> Response {
    let plan = refuse_disallowed(plan, config);
    let fatal = (plan.total_blocks == 0).then(|| run::no_block_message(text, &plan));
    let outcome = if plan.errors.is_empty() && fatal.is_none() {
        Outcome::Success
    } else {
        Outcome::Failed
    };
    Response::text(dry_run_text(&plan, fatal.as_deref()), outcome)
        .with_json(dry_run_json(&plan, fatal.as_deref()))
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
    let mut response = Response::text(result.to_text(), outcome).with_json(result.to_json() + "\n");
    response.is_error = !result.success && !committed;
    response
}

/// The loaf.yml that governs `root` (the one the user accepted, DESIGN §2); an unusable one
/// stops the command (exit 2) with the reason.
fn load_config(root: &Path) -> Result<Config, CliError> {
    crate::ops::config::load(root).map_err(|e| {
        CliError::usage(
            e.to_string(),
            "fix loaf.yml (see loaf.yml.example for every key), or move it away to use the defaults",
        )
    })
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
            message: run::not_enabled(&action.name, config, &file),
            action: Some(action.name),
            error_type: ErrorType::Validation,
            block_start_line: Some(action.start_line),
            nesl_content: None,
            line: None,
        }));
    plan
}

/// The apply as a git transaction.
fn transaction(request: &ApplyRequest, cwd: &Path, text: &str) -> Result<Response, CliError> {
    let options = ApplyOptions {
        model: request.model.clone(),
        // Recorded so that a watcher never runs a reply already applied by hand.
        reply_key: crate::watch::reply::key(text),
        no_verify: request.no_verify,
        sign: request.sign.clone(),
        message: request.message.clone(),
    };
    let applied = apply::apply(cwd, text, &options)?;
    let mut notices = applied.notices.clone();
    // loaf.yml's `gc` asks for pruning; it is due at most once a day. A failure costs
    // nothing of the apply, which is done: say it and go on.
    match crate::ops::gc::auto(cwd) {
        Ok(Some(pruned)) => notices.push(format!(
            "pruned {} operation-log entries older than {} days (loaf.yml gc.keep-days)",
            pruned.dropped.len(),
            pruned.keep_days
        )),
        Ok(None) => {}
        Err(error) => notices.push(format!("automatic gc did not run: {error}")),
    }
    let result = &applied.result;
    let mut response = result_response(result).with_notices(notices);
    if let Some(kept) = &applied.kept {
        response.is_error = true;
        response.error = Some(CliError::refused(
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

fn dry_run_json(plan: &ReplyPlan, fatal: Option<&str>) -> String {
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
    serde_json::to_string_pretty(&value).unwrap_or_default() + "\n"
}
