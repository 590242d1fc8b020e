//! `git loaf completions`: the shell completion script, generated from the same clap
//! definitions as the parser, so it can never name a command or option that does not exist.

use clap::{Args, CommandFactory, ValueEnum};

use super::examples::examples;
use super::{Cli, CliError, Outcome};

/// Print a shell completion script for `git-loaf` and `git loaf`.
///
/// The script goes to standard output: load it in the current shell, or save it where your
/// shell looks for completions.
#[derive(Debug, Args)]
#[command(after_help = examples(&[
    ("bash, in the current shell", &["source <(git loaf completions bash)"]),
    ("zsh and fish, saved where they look", &[
        "git loaf completions zsh > ~/.zfunc/_git-loaf",
        "git loaf completions fish > ~/.config/fish/completions/git-loaf.fish",
    ]),
]))]
pub struct CompletionsArgs {
    /// The shell to write the script for.
    shell: Shell,
}

/// The shells the script is written for.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum Shell {
    Bash,
    Zsh,
    Fish,
}

/// Runs `git loaf completions`.
pub fn run(args: &CompletionsArgs) -> Result<Outcome, CliError> {
    super::print_out(&script(args.shell)).map(|()| Outcome::Success)
}

/// The completion script for `shell`.
fn script(shell: Shell) -> String {
    let generator = match shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    let mut out = Vec::new();
    // `git-loaf`, not the `git loaf` usage name: shells complete the executable git runs,
    // and a name with a space would not be a valid completion target.
    let mut command = Cli::command().bin_name("git-loaf");
    clap_complete::generate(generator, &mut command, "git-loaf", &mut out);
    let mut text = String::from_utf8_lossy(&out).into_owned();
    if let Shell::Bash = shell {
        // clap_complete 4.6 spells a subcommand's state `git__loaf__subcmd__squash` where
        // it is set and `git__subcmd__loaf__subcmd__squash` where it is matched when the
        // bin name has a hyphen, so no subcommand's options ever complete
        // (clap-rs/clap#6421); spell the matches as they are set.
        text = text.replace("git__subcmd__loaf__", "git__loaf__");
        text.push_str(GIT_BASH_SHIM);
    }
    text
}

/// git's bash completion completes `git loaf …` by calling `_git_loaf` with the words of the
/// whole git command line (`git [-C dir] loaf …`), and zsh's and fish's git completions find
/// the `git-loaf` completion by themselves. This hands clap's function the words from `loaf`
/// on, as if `git-loaf` had been typed.
const GIT_BASH_SHIM: &str = r#"
# `git loaf <TAB>` (git's own bash completion calls _git_loaf).
_git_loaf() {
    local loaf_at=${__git_cmd_idx:-1}
    local COMP_WORDS=(git-loaf "${COMP_WORDS[@]:loaf_at+1}")
    local COMP_CWORD=$((COMP_CWORD - loaf_at))
    _git__loaf git-loaf "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
}
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_script_targets_git_loaf_and_names_the_subcommands() {
        for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
            let text = script(shell);
            assert!(text.contains("git-loaf"), "{shell:?}: {text}");
            assert!(text.contains("step-back"), "{shell:?}: {text}");
            assert!(text.contains("install-man-pages"), "{shell:?}: {text}");
        }
    }
}
