//! The `git-loaf` binary: parse arguments, run, exit with the command's code.
#![warn(clippy::too_many_lines)]

fn main() -> std::process::ExitCode {
    git_loaf::cli::main()
}
