//! `git loaf apply`: run a reply's blocks.

use std::path::PathBuf;

use clap::Args;
use serde_json::json;

use super::{CliError, Outcome};
use crate::actions::{self, Plan};
use crate::input::{Source, as_text, read_bytes};
use crate::nesl;
use crate::ops::apply::{self, ApplyOptions};
use crate::report;

/// Run every valid block of an LLM's reply and print the results for the model.
///
/// Exits 0 when everything succeeded, 1 when some block or action failed (what succeeded is
/// kept: failures are data), 2 for usage, configuration or input errors (nothing changed).
#[derive(Debug, Args)]
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
}

/// Runs `git loaf apply`.
pub fn run(args: &ApplyArgs) -> Result<Outcome, CliError> {
    let cwd = super::current_dir()?;
    let root = crate::git::worktree_root(&cwd).unwrap_or_else(|| cwd.clone());
    let source = Source::from_arg(args.file.as_deref());
    let bytes = read_bytes(&source)?;
    let text = as_text(&bytes, &source)?;
    if args.dry_run {
        let plan = actions::plan(text, &nesl::parse(text), &root);
        let report = if args.json {
            dry_run_json(&plan)
        } else {
            dry_run_text(&plan)
        };
        print(&report)?;
        return Ok(if plan.errors.is_empty() {
            Outcome::Success
        } else {
            Outcome::Failed
        });
    }
    if !args.no_commit {
        return transaction(args, &cwd, text);
    }
    let config = crate::config::Config::load(&root).map_err(|e| {
        CliError::usage(e.to_string(), "fix loaf.yml (see loaf.yml.example for every key), or move it away to use the defaults")
    })?;
    let result = crate::Loaf::with_config(&root, config).execute(text);
    print(&if args.json {
        result.to_json() + "\n"
    } else {
        result.to_text()
    })?;
    Ok(if result.success {
        Outcome::Success
    } else {
        Outcome::Failed
    })
}

/// The apply as a git transaction.
fn transaction(args: &ApplyArgs, cwd: &std::path::Path, text: &str) -> Result<Outcome, CliError> {
    let options = ApplyOptions {
        model: args.model.clone(),
    };
    let applied = apply::apply(cwd, text, &options)?;
    super::print_notices(&applied.notices);
    let result = &applied.result;
    print(&if args.json {
        result.to_json() + "\n"
    } else {
        result.to_text()
    })?;
    if let Some(kept) = &applied.kept {
        return Err(CliError::refused(
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
    Ok(if result.success {
        Outcome::Success
    } else {
        Outcome::Failed
    })
}

fn print(text: &str) -> Result<(), CliError> {
    super::print_out(text)
}

/// The planned actions and the blocks that would not run.
fn dry_run_text(plan: &Plan) -> String {
    let mut out = String::from("=== LOAF DRY RUN ===\n");
    for action in &plan.actions {
        let target = report::action_target(&action.name, &action.params);
        out.push_str(&format!("{} {}{target}\n", action.block_id, action.name));
    }
    for error in &plan.errors {
        out.push_str(&report::block_error_line(error));
    }
    let n = plan.actions.len();
    out.push_str(&format!(
        "=== {n} action{} would run; {} error{} ===\n",
        if n == 1 { "" } else { "s" },
        plan.errors.len(),
        if plan.errors.len() == 1 { "" } else { "s" },
    ));
    out
}

fn dry_run_json(plan: &Plan) -> String {
    let actions: Vec<_> = plan
        .actions
        .iter()
        .map(|a| json!({"blockId": a.block_id, "action": a.name, "params": a.params}))
        .collect();
    let value = json!({
        "success": plan.errors.is_empty(),
        "totalBlocks": plan.total_blocks,
        "actions": actions,
        "parseErrors": plan.errors,
    });
    serde_json::to_string_pretty(&value).unwrap_or_default() + "\n"
}
