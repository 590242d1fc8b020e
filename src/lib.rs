//! git-loaf applies what an LLM wrote — file edits, reads and shell commands as NESL blocks in
//! its reply — to a git repository as one transaction.
//!
//! The pipeline, one stage per module, data flowing one way:
//!
//! ```text
//! reply text ──nesl──▶ blocks + syntax errors ──actions──▶ validated actions ──exec──▶ results
//!                                       (all of it staged and committed by git/)
//! ```
//!
//! So far: [`nesl`] (the syntax, exactly as the reference parser) and [`input`] (reading a
//! reply safely). The command line lives in [`cli`].
#![warn(missing_docs)]

pub mod actions;
pub mod cli;
pub mod config;
pub mod exec;
pub mod git;
pub mod input;
pub mod nesl;
pub mod report;

use std::path::Path;

use report::{ActionResult, ExecutionResult};

/// Runs a reply directly in `root` (no git transaction: `apply --no-commit`): parse,
/// validate, run every valid action in order, and report.
pub fn run_direct(reply: &str, root: &Path) -> ExecutionResult {
    let parsed = nesl::parse(reply);
    let plan = actions::plan(reply, &parsed, root);
    let results: Vec<ActionResult> = plan
        .actions
        .iter()
        .enumerate()
        .map(|(i, action)| {
            let outcome =
                exec::Outcome::fail(format!("Action not implemented yet: {}", action.name));
            ActionResult {
                seq: i + 1,
                block_id: action.block_id.clone(),
                action: action.name.clone(),
                params: action.params.clone(),
                success: outcome.success,
                error: outcome.error,
                data: outcome.data,
            }
        })
        .collect();
    ExecutionResult {
        success: plan.errors.is_empty() && results.iter().all(|r| r.success),
        total_blocks: plan.total_blocks,
        executed_actions: results.len(),
        results,
        parse_errors: plan.errors,
        ..ExecutionResult::default()
    }
}
