//! What each role is shown (issue 26 finding 2): the reviewer the task's whole change
//! (`base..HEAD`, not HEAD's commit alone), the spec-maintainer the change and the review,
//! the builder the repository's files.

use std::path::Path;

use serde_json::json;

use crate::agent::{Agent, Workspace, command};
use crate::conversation::workspace;
use crate::deterministic::git_in as git;
use crate::harness::{assert_exit, stdout};

fn whole_change_llm() -> String {
    concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/it/llm/whole-change-llm.sh"
    )
    .to_owned()
}

/// The prompts of `path` that start with `start`.
fn prompts_of(path: &Path, start: &str) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .split("=== prompt ===\n")
        .filter(|p| p.starts_with(start))
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_reviewer_sees_the_whole_change_and_approves_the_task_with_its_fix() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let log = scratch.path().join("prompts");
    let log_str = log.display().to_string();
    let (ws, root) = workspace(&whole_change_llm(), &[("LLM_PROMPTS", &log_str)]);
    let start = git(&root, &["rev-parse", "HEAD"]);
    let out = ws.lorch(&["run", "--task", "T-0042"], &[]);
    assert_exit(&out, 0);
    let shown = stdout(&out);
    let first = shown
        .find("changes_requested")
        .expect("the first review asks for more");
    assert!(shown[first..].contains("approved"), "{shown}");
    let reviews = prompts_of(&log, "You are the reviewer");
    assert_eq!(reviews.len(), 2);
    let second = &reviews[1];
    assert!(
        second.contains(&format!("`git diff {} HEAD`", start.trim()))
            && second.contains("+Hello, lorch")
            && second.contains("+Goodbye"),
        "{second}"
    );
    // The spec-maintainer sees the change and the review.
    let spec = prompts_of(&log, "You are the spec-maintainer");
    assert_eq!(spec.len(), 1);
    assert!(
        spec[0].contains("+Hello, lorch")
            && spec[0].contains("+Goodbye")
            && spec[0].contains("## The review (reviews/T-0042.json)")
            && spec[0].contains("The greeting and the farewell are both there."),
        "{}",
        spec[0]
    );
    // The builder sees the repository's files, to ask for any it needs.
    let builder = prompts_of(&log, "You are the builder");
    assert!(
        builder[0].contains("## The repository's files (`git ls-files`)\n")
            && builder[0].contains("\ngreeting.txt\nlorch.json\nspecs/MASTER-SPEC.md\n"),
        "{}",
        builder[0]
    );
}

#[test]
fn a_review_with_no_builder_commit_does_not_pass_the_users_last_commit_off_as_the_task() {
    let ws = Workspace::with(&[("a.txt", "a\n")]);
    let reply = ws.reply("review.md", "VERDICT: approved\n");
    let mut agent = Agent::start(&ws, "reviewer", &[], &reply, &[]);
    agent.send(&command(
        "reviewer",
        "review",
        "c-1",
        "ik-review-T-0042-1",
        json!({}),
    ));
    agent.answer();
    let prompt = std::fs::read_to_string(ws.scratch("prompt")).expect("prompt");
    assert!(
        prompt.contains("lorch named no base or commits for this task: below is HEAD's own commit, which may not be the task's work."),
        "{prompt}"
    );
}

#[test]
fn a_huge_change_is_shown_up_to_the_budget_with_every_file_in_the_summary() {
    let ws = Workspace::with(&[("a.txt", "a\n")]);
    let base = ws.git(&["rev-parse", "HEAD"]).trim().to_owned();
    ws.write("small.txt", "small\n");
    ws.write("big.txt", &"x".repeat(700 * 1024));
    ws.git(&["add", "-A"]);
    ws.git(&["commit", "-q", "-m", "big"]);
    let reply = ws.reply("review.md", "VERDICT: approved\n");
    let mut agent = Agent::start(&ws, "reviewer", &[], &reply, &[]);
    agent.send(&command(
        "reviewer",
        "review",
        "c-1",
        "ik-review-T-0042-1",
        json!({"base": base}),
    ));
    agent.answer();
    let prompt = std::fs::read_to_string(ws.scratch("prompt")).expect("prompt");
    assert!(
        prompt.contains(" big.txt   | 1 +\n small.txt | 1 +\n"),
        "{}",
        &prompt[..4000.min(prompt.len())]
    );
    assert!(prompt.contains("+small"));
    assert!(
        prompt.contains("more than the 524288 shown here; not shown: big.txt ("),
        "{}",
        &prompt[..4000.min(prompt.len())]
    );
    assert!(prompt.len() < 600 * 1024);
}

#[test]
fn a_revision_that_looks_like_an_option_is_refused() {
    let ws = Workspace::with(&[("a.txt", "a\n")]);
    let reply = ws.reply("review.md", "VERDICT: approved\n");
    let mut agent = Agent::start(&ws, "reviewer", &[], &reply, &[]);
    agent.send(&command(
        "reviewer",
        "review",
        "c-1",
        "ik-review-T-0042-1",
        json!({"base": "--output=/tmp/x"}),
    ));
    let answer = agent.answer();
    assert_eq!(answer[0]["event"], "error");
    assert_eq!(ws.runs(), 0, "the model is not asked");
}
