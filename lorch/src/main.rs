//! The `lorch` binary: the orchestrator of AI agents (docs/lorch.md). All of it is in the
//! `lorch` library, so that tests drive it in-process; this only hands over the command
//! line.

fn main() -> std::process::ExitCode {
    lorch::cli::main()
}
