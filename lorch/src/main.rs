//! The `lorch` binary: the orchestrator of AI agents (docs/lorch.md). All of it is in the
//! `lorch` library, so that tests drive it in-process; this only hands over the command
//! line.

fn main() -> std::process::ExitCode {
    // libgit2 set up as git-loaf's own binary sets it (large trees kept parsed: undo and
    // squash run in this process), before any thread exists.
    git_loaf::api::init();
    lorch::cli::main()
}
