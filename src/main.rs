//! The `git-loaf` binary: parse arguments, run, exit with the command's code.

fn main() -> std::process::ExitCode {
    git_loaf::cli::main()
}
