//! A reply checked before anything runs, once: its text parsed and every block validated
//! into a plan, with what the parser leaves unsaid (blocks an unclosed heredoc swallowed,
//! what looked like a block but was not one, a missing end line) explained the way the
//! model can fix it (docs/nesl.md). Everything after — the dry run, the no-block answer,
//! the sandbox decision, the run — reads the [`CheckedReply`], never the text again.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::actions::{self, BlockError, ErrorType, ReplyPlan};
use crate::nesl;
use crate::nesl::diagnostics::missing_end;
use crate::nesl::diagnostics::near_miss::{self, EXPECTED_FORM};
use crate::report::ExecutionResult;

/// A reply, parsed and checked once.
#[derive(Debug, Clone)]
pub struct CheckedReply<'r> {
    /// The reply's text, without a byte order mark (its prose gives the commit's subject).
    pub text: &'r str,
    /// The root its paths were checked against (the repository's, or the folder).
    pub root: PathBuf,
    /// The actions to run and the blocks that will not.
    pub plan: ReplyPlan,
    /// The key of its blocks when it is a complete reply: what the operation log records,
    /// so that `git loaf watch` never runs it again.
    pub key: Option<String>,
}

impl CheckedReply<'_> {
    /// Whether an `exec` block will run (then, and for hooks, code needs a sandbox).
    pub fn runs_exec(&self) -> bool {
        self.plan.actions.iter().any(|a| a.name == "exec")
    }
}

/// Parses `reply` once and checks every block against `root`: the plan [`actions::plan`]
/// makes, with what the parser leaves unsaid explained, and the key of its blocks.
pub fn check<'r>(reply: &'r str, root: &Path) -> CheckedReply<'r> {
    // However the reply arrived (a library caller, lorch), a byte order mark is not text.
    let text = crate::input::without_bom(reply);
    let parsed = nesl::parse(text);
    CheckedReply {
        text,
        root: root.to_path_buf(),
        plan: check_blocks(text, &parsed, root),
        key: crate::ops::readiness::key(text, &parsed),
    }
}

/// Checks blocks a caller built instead of writing a reply (MCP's `actions`): no text, so
/// nothing to explain beside the parser and no key (no watcher sees them).
pub fn check_built(blocks: Vec<nesl::Block<'static>>, root: &Path) -> CheckedReply<'static> {
    let parsed = nesl::ParseResult {
        blocks,
        errors: Vec::new(),
    };
    let mut plan = actions::plan("", &parsed, root);
    plan.warnings.extend(duplicate_ids(&parsed));
    CheckedReply {
        text: "",
        root: root.to_path_buf(),
        plan,
        key: None,
    }
}

/// Checks every block of `reply` (see [`actions::plan`]) and adds what the parser leaves
/// unsaid: blocks swallowed by another block's unclosed heredoc, and whatever looked like a
/// block but was not one (a ```` ```nesl ```` fence without a header, a malformed header),
/// each with what to write instead.
fn check_blocks(reply: &str, parsed: &nesl::ParseResult<'_>, root: &Path) -> ReplyPlan {
    let mut plan = actions::plan(reply, parsed, root);
    for heredoc in near_miss::unclosed_heredocs(reply, parsed) {
        if let Some(error) = plan.errors.iter_mut().find(|e| {
            e.block_id == heredoc.block
                && e.message
                    .contains(&format!("'{}' not closed", heredoc.delimiter))
        }) {
            error.message.push_str(&heredoc.hint());
            error.line = Some(heredoc.opened);
        }
    }
    plan.warnings.extend(duplicate_ids(parsed));
    for missing in missing_end::missing_ends(reply, parsed) {
        collapse_missing_end(&mut plan.errors, &missing);
    }
    for swallowed in near_miss::swallowed(reply, parsed) {
        plan.errors.push(BlockError {
            block_id: swallowed.id.clone(),
            action: None,
            error_type: ErrorType::Syntax,
            message: swallowed.message(),
            block_start_line: Some(swallowed.line),
            nesl_content: None,
            line: None,
        });
    }
    for miss in near_miss::near_misses(reply, parsed) {
        // The parser already reported a header it could not read: explain that error
        // instead of adding a second one.
        let reported = plan
            .errors
            .iter_mut()
            .find(|e| miss.parser_reported && e.block_id == "unknown" && e.line == Some(miss.line));
        match reported {
            Some(error) => error.message = miss.message,
            None => plan.errors.push(BlockError {
                block_id: "unknown".to_owned(),
                action: None,
                error_type: ErrorType::Syntax,
                message: miss.message,
                block_start_line: Some(miss.line),
                nesl_content: None,
                line: Some(miss.line),
            }),
        }
    }
    plan
}

/// A warning for each block whose id an earlier block already has: the reference parser
/// takes both (and so do we: both run), but the report's lines can then not be told apart.
fn duplicate_ids(parsed: &nesl::ParseResult<'_>) -> Vec<String> {
    let mut first: BTreeMap<&str, usize> = BTreeMap::new();
    let mut warnings = Vec::new();
    for block in &parsed.blocks {
        match first.get(&*block.id) {
            Some(line) => warnings.push(format!(
                "block id {id} is used by two blocks (lines {line} and {again}): each is taken as a block of its own; give every block its own id, so that each result line names one block",
                id = block.id,
                again = block.start_line
            )),
            None => {
                first.insert(&block.id, block.start_line);
            }
        }
    }
    warnings
}

/// Replaces the parser's errors that only say block `missing.id` has no end line (a fence
/// or prose it ran on into, "not closed") by one error saying where the end line goes.
fn collapse_missing_end(errors: &mut Vec<BlockError>, missing: &missing_end::MissingEnd) {
    let ours = |e: &BlockError| {
        e.block_id == missing.id
            && e.error_type == ErrorType::Syntax
            && e.block_start_line == Some(missing.start)
            && e.line.is_some_and(|l| missing.replaces.contains(&l))
    };
    let Some(first) = errors.iter().position(ours) else {
        return;
    };
    let mut error = errors[first].clone();
    error.message = missing.message();
    error.line = Some(missing.after);
    errors.retain(|e| !ours(e));
    errors.insert(first.min(errors.len()), error);
}

/// The result for a reply without a single NESL block: nothing ran, and the report says
/// why, what looked like a block, and how one is written. `None` when there are blocks.
/// `git loaf apply` answers with this (exit 1) instead of running anything, hooks included:
/// a model that sent no block must hear so, not see an empty success.
pub fn no_block_result(reply: &str, plan: &ReplyPlan) -> Option<ExecutionResult> {
    (plan.total_blocks == 0).then(|| ExecutionResult {
        fatal_error: Some(no_block_message(reply, plan)),
        parse_errors: plan.errors.clone(),
        ..ExecutionResult::default()
    })
}

/// Why nothing ran when the reply has no block, with the form a block takes.
pub fn no_block_message(reply: &str, plan: &ReplyPlan) -> String {
    let why = if reply.trim().is_empty() {
        "the reply is empty: no NESL block found, nothing ran"
    } else if plan.errors.is_empty() {
        "no NESL block found in the reply, nothing ran"
    } else {
        "no NESL block found in the reply, nothing ran; what looked like one is listed below"
    };
    format!(
        "{why}. A block looks like this (any 3-letter id, the same in all three places):\n{EXPECTED_FORM}"
    )
}
