//! `git loaf config`: which loaf.yml governs, and `git loaf config accept` for a change a
//! reply or an agent made that waits for the user (docs/loaf-yml.md, "A loaf.yml a reply writes
//! waits for you").

use clap::{Args, Subcommand};

use super::{CliError, Outcome};
use crate::ops::config::{self, Governing};

/// Show the loaf.yml in force, or accept a change to it that waits for you.
///
/// A change to loaf.yml made by an apply or an agent's turn that lets code do more (exec,
/// the network, writable paths, hooks, the sandbox off, …) takes effect only once you accept
/// it; until then the loaf.yml you accepted last governs. A narrowing takes effect at once,
/// and so does your own edit of loaf.yml or a commit of yours that changes it. `git loaf
/// config` shows which loaf.yml governs and the change that waits, with what it widens.
#[derive(Debug, Args)]
#[command(after_help = super::examples::examples(&[
    ("See which loaf.yml governs and what waits", &["git loaf config"]),
    ("Accept the change that waits (prints the difference)", &["git loaf config accept"]),
]))]
pub struct ConfigArgs {
    #[command(subcommand)]
    action: Option<ConfigAction>,
}

#[derive(Debug, Subcommand)]
enum ConfigAction {
    /// Accept the working tree's loaf.yml as it is now: print its difference from the one
    /// accepted before, and let it govern from the next apply on.
    Accept,
}

/// Runs `git loaf config`.
pub fn run(args: &ConfigArgs) -> Result<Outcome, CliError> {
    let cwd = super::current_dir()?;
    let text = match args.action {
        None => render(&config::show(&cwd)?),
        Some(ConfigAction::Accept) => {
            let accepted = config::accept_here(&cwd)?;
            if accepted.diff.is_empty() {
                "nothing waits: the loaf.yml in the working tree is the one accepted\n".to_owned()
            } else {
                let mut out = accepted.diff;
                out.push_str("accepted: loaf.yml as it is in the working tree governs from the next apply on");
                if !accepted.widenings.is_empty() {
                    out.push_str(", with what it widens:");
                }
                out.push('\n');
                for line in &accepted.widenings {
                    out.push_str(&format!("  {line}\n"));
                }
                out
            }
        }
    };
    super::print_out(&text).map(|()| Outcome::Success)
}

/// Which loaf.yml governs, its text, and the change that waits.
fn render(governing: &Governing) -> String {
    let mut out = String::new();
    let (source, text) = match &governing.pending {
        Some(_) => ("the one you accepted last", &governing.accepted),
        None => ("the working tree's", &governing.working),
    };
    out.push_str(&format!("loaf.yml in force: {source}\n"));
    match text {
        Some(text) => {
            for line in text.lines() {
                out.push_str(&format!("    {line}\n"));
            }
        }
        None => out.push_str("    (no loaf.yml: the built-in defaults)\n"),
    }
    match &governing.pending {
        None if governing.working != governing.accepted => out.push_str(
            "the working tree's loaf.yml differs from the one accepted, but widens nothing: it governs as it is\n",
        ),
        None => out.push_str("nothing waits for you\n"),
        Some(pending) => {
            out.push_str("waiting for you: a change to loaf.yml that widens what code may do:\n");
            for line in &pending.widenings {
                out.push_str(&format!("  {line}\n"));
            }
            out.push_str(&config::difference(
                governing.accepted.as_deref(),
                governing.working.as_deref(),
            ));
            out.push_str("accept it with `git loaf config accept`\n");
        }
    }
    out
}
