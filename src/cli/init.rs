//! `git loaf init`: set a repository up for git-loaf.

use std::io::Write as _;

use clap::Args;

use super::{CliError, Outcome};
use crate::agents::Agent;
use crate::agents::settings::{self, Edit, SettingsError};
use crate::config::{Config, FILE_NAME};
use crate::git::exclude::{self, LOAF_DIR_PATTERN};

/// The documented starter configuration (every key, with its default), written as
/// `loaf.yml`.
pub const LOAF_YML_EXAMPLE: &str = include_str!("../../loaf.yml.example");

/// Set this repository up for git-loaf and print the next steps.
///
/// Writes a starter `loaf.yml` at the repository root (every key documented, with its
/// default; an existing `loaf.yml` is never overwritten), makes `git commit --amend` and
/// `git rebase` keep git-loaf's notes (`notes.rewriteRef`), and keeps the watcher's folder
/// `.loaf/` out of git (`.git/info/exclude`). Running it again changes nothing.
///
/// Exits 0 when the repository is set up (also when it already was), 2 outside a
/// repository or when something cannot be written.
#[derive(Debug, Args)]
#[command(after_help = super::examples::examples(&[
    ("Set up a repository, then tell the model how to write replies", &[
        "git loaf init",
        "git loaf instructions | xclip -selection clipboard",
    ]),
]))]
pub struct InitArgs {
    /// Also wire AGENT's project settings (repeatable): its hooks run `git loaf agent-hook
    /// AGENT`, so each turn becomes a commit, and its MCP servers list `git loaf mcp`
    /// (claude-code: .claude/settings.json, .mcp.json; codex: .codex/hooks.json,
    /// .codex/config.toml; cursor: .cursor/hooks.json, .cursor/mcp.json; gemini:
    /// .gemini/settings.json). Merged into what the files hold (comments and layout of
    /// config.toml kept; a `git-loaf` MCP server already declared is left as it is); a file
    /// that is not valid JSON (TOML for config.toml) is refused and nothing is written; a
    /// settings file that is a symlink is updated where it points.
    #[arg(long = "agent", value_name = "AGENT", value_parser = parse_agent)]
    agents: Vec<Agent>,
}

fn parse_agent(text: &str) -> Result<Agent, String> {
    text.parse()
        .map_err(|e: crate::agents::UnknownAgent| e.to_string())
}

/// Runs `git loaf init`.
pub fn run(args: &InitArgs) -> Result<Outcome, CliError> {
    let cwd = super::current_dir()?;
    let repo = crate::tx::session::open(&cwd, "init").map_err(|_| {
        CliError::usage(
            format!("{} is not inside a git repository", cwd.display()),
            "cd into your repository, or make one with `git init`, then run `git loaf init` again",
        )
    })?;
    let Some(root) = crate::git::worktree_root(&cwd) else {
        return Err(CliError::usage(
            "this is a bare repository: there is no working tree for loaf.yml",
            "run it in a working tree of this repository (`git worktree add`)",
        ));
    };
    // Checked first: a settings file that cannot be merged stops init before it writes.
    let wiring = plan_agents(&root, &args.agents)?;
    let mut done = Vec::new();
    let path = root.join(FILE_NAME);
    let created = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path);
    match created {
        Ok(mut file) => {
            file.write_all(LOAF_YML_EXAMPLE.as_bytes())
                .map_err(|e| cannot_write(&path.display().to_string(), &e))?;
            done.push(format!(
                "wrote {FILE_NAME}: every key documented, with its default (`exec` stays off until you list it)"
            ));
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            done.push(format!(
                "kept your {FILE_NAME} as it is (init never overwrites it; loaf.yml.example in git-loaf's repository documents every key)"
            ));
            if let Err(error) = Config::load(&root) {
                done.push(format!("but it does not load: {error}"));
            }
        }
        Err(e) => return Err(cannot_write(&path.display().to_string(), &e)),
    }
    match crate::git::notes::ensure_notes_rewrite(&repo) {
        Ok(true) => done.push(
            "set notes.rewriteRef = refs/notes/loaf in this repository's config: `git commit --amend` and `git rebase` keep git-loaf's records".to_owned(),
        ),
        Ok(false) => done.push("notes.rewriteRef: already set up".to_owned()),
        Err(e) => return Err(cannot_write("the repository's config", &e)),
    }
    match exclude::ensure_excluded(&repo, LOAF_DIR_PATTERN) {
        Ok(true) => done.push(format!(
            "added {LOAF_DIR_PATTERN} to .git/info/exclude: the watcher's reply and results files stay out of git"
        )),
        Ok(false) => done.push(format!("{LOAF_DIR_PATTERN} is already in .git/info/exclude")),
        Err(e) => return Err(cannot_write(&e.path.display().to_string(), &e.error)),
    }
    done.extend(write_agents(&root, &wiring)?);
    let mut text = format!("git-loaf is set up in {}:\n", root.display());
    for line in &done {
        text.push_str(&format!("  - {line}\n"));
    }
    if args.agents.is_empty() {
        text.push_str(NEXT_STEPS);
    } else {
        text.push_str(&next_with_agents(&args.agents));
    }
    super::print_out(&text)?;
    Ok(Outcome::Success)
}

/// What to do after `init`.
const NEXT_STEPS: &str = "
Next:
  1. Give the model the instructions for this repository (NESL syntax, its root, the allowed
     actions), in its system prompt or first message:
       git loaf instructions | xclip -selection clipboard     (macOS: | pbcopy)
  2. Apply its replies, either
       git loaf watch            save each reply to .loaf/reply.md, paste .loaf/results.md back
     or
       git loaf apply < reply.md
  3. Look back and tidy up: git loaf log, git loaf undo, git loaf squash
";

/// What to do after `init --agent`: start the agent, work as usual (record mode commits each
/// turn), look back; NESL and `watch` are for chat models, which these agents are not.
fn next_with_agents(agents: &[Agent]) -> String {
    let mut starts: Vec<&str> = agents
        .iter()
        .map(|agent| match agent {
            Agent::ClaudeCode => "claude",
            Agent::Codex => "codex",
            Agent::Cursor => "open this folder in Cursor (or run cursor-agent)",
            Agent::Gemini => "gemini",
        })
        .collect();
    starts.dedup();
    format!(
        "
Next:
  1. Start the agent in this repository: {}
     If it asks whether to trust this folder's hooks or its `git-loaf` MCP server, allow them.
  2. Work with it as usual: each prompt's edits become one commit, `AI: <your prompt>`, with
     your own uncommitted work left as it is (git loaf log lists the turns).
  3. Look back and tidy up: git loaf undo takes the last turn back, git loaf squash folds
     the turns into one commit (--session <id> for one session's)
",
        starts.join(", or ")
    )
}

/// Every agent's settings edits, read and checked before anything is written.
fn plan_agents(
    root: &std::path::Path,
    agents: &[Agent],
) -> Result<Vec<(Agent, Vec<Edit>)>, CliError> {
    let mut agents = agents.to_vec();
    agents.sort();
    agents.dedup();
    agents
        .into_iter()
        .map(|agent| {
            Ok((
                agent,
                settings::plan(root, agent).map_err(|e| settings_error(agent, &e))?,
            ))
        })
        .collect()
}

/// Writes the planned settings; what was done, for the summary.
fn write_agents(
    root: &std::path::Path,
    wiring: &[(Agent, Vec<Edit>)],
) -> Result<Vec<String>, CliError> {
    let mut done = Vec::new();
    for (agent, edits) in wiring {
        settings::write(root, edits).map_err(|e| settings_error(*agent, &e))?;
        for edit in edits {
            done.push(edit_line(*agent, edit));
        }
    }
    Ok(done)
}

/// What `init` did to one settings file, for the summary: what it added, and what of the
/// user's it kept under git-loaf's name.
fn edit_line(agent: Agent, edit: &Edit) -> String {
    let path = edit.path.display();
    let mut line = match edit.text {
        Some(_) => format!(
            "{agent}: wrote {path}: added {}",
            edit.changes.added.join("; ")
        ),
        None => format!("{agent}: {path} is already set up"),
    };
    if !edit.changes.kept.is_empty() {
        line.push_str(&format!(
            " (kept {}: not changed)",
            edit.changes.kept.join("; ")
        ));
    }
    line
}

fn settings_error(agent: Agent, error: &SettingsError) -> CliError {
    CliError::usage(
        format!("cannot set up {agent}: {error}"),
        "fix the file (or move it away), then run `git loaf init --agent` again; nothing was changed",
    )
}

fn cannot_write(what: &str, error: &dyn std::fmt::Display) -> CliError {
    CliError::usage(
        format!("cannot write {what}: {error}"),
        "check that the repository and its git directory are writable, then run `git loaf init` again (it only does what is missing)",
    )
}
