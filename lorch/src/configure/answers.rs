//! The checks of each answer to `lorch config` (the second tier of checks, on top of the
//! schema): what the user typed, turned into the value lorch.json will hold, or the reason it
//! cannot be, said so that the user knows what to type instead.

use std::path::Path;

use super::words;
use crate::checks::{builder_checks, find_program, is_shim, programs};
use crate::config::PLACEHOLDER_GOAL;
use crate::safety::confine;

/// The most turns the schema allows (`policy.max_turns`).
const MAX_TURNS: u32 = 100;

/// An agent's command: words, each program found (on PATH, or relative to `base`), and for
/// `lorch agent …` the right role, a model command after `--`, and a builder's `--check`.
pub fn command(role: &str, answer: &str, base: &Path) -> Result<Vec<String>, String> {
    let cmd = words::split(answer).map_err(|e| e.to_string())?;
    if cmd.is_empty() {
        return Err("the command is empty".to_owned());
    }
    if is_shim(&cmd) {
        shim(role, &cmd)?;
    }
    for program in programs(&cmd) {
        if find_program(program, base).is_none() {
            return Err(format!(
                "`{program}` is not found (not on PATH, or not executable): install it or give its path"
            ));
        }
    }
    Ok(cmd)
}

/// `lorch agent ROLE [--check CMD]… -- MODEL…`, for the agent `role`.
fn shim(role: &str, cmd: &[String]) -> Result<(), String> {
    let given = cmd.get(2).map_or("", String::as_str);
    if given != role {
        return Err(format!(
            "`lorch agent {given}` is not the {role}: write `lorch agent {role} … -- MODEL COMMAND`"
        ));
    }
    let model = cmd
        .iter()
        .position(|a| a == "--")
        .and_then(|at| cmd.get(at + 1));
    if model.is_none() {
        return Err(format!(
            "no model command after `--`: write `lorch agent {role} -- MODEL COMMAND` (docs/lorch.md has recipes)"
        ));
    }
    if role == "builder" {
        builder_checks(cmd)?;
    }
    Ok(())
}

/// `spec_path`: a file inside the workspace (the spec maintainer edits it at the end of every
/// run, and `lorch run` refuses to start without it).
pub fn spec_path(answer: &str, workspace: &Path) -> Result<String, String> {
    let path = confine(workspace, answer)
        .map_err(|e| format!("{e}: the spec must be inside the workspace"))?;
    if !path.is_file() {
        return Err(format!(
            "{} does not exist: write the spec there first, or give the path where it is",
            path.display()
        ));
    }
    relative(&path, workspace)
}

/// `policy.max_turns`: a whole number from 1 to 100.
pub fn max_turns(answer: &str) -> Result<u32, String> {
    match answer.parse::<u32>() {
        Ok(n) if (1..=MAX_TURNS).contains(&n) => Ok(n),
        _ => Err(format!(
            "`{answer}` is not a whole number from 1 to {MAX_TURNS}"
        )),
    }
}

/// A task's id ([`crate::config::check_task_id`]).
pub fn task_id(answer: &str) -> Result<String, String> {
    crate::config::check_task_id(answer).map(|()| answer.to_owned())
}

/// A task's goal: what to build, in words (not the placeholder lorch writes).
pub fn goal(answer: &str) -> Result<String, String> {
    if answer.is_empty() || answer == PLACEHOLDER_GOAL {
        return Err("a task needs a goal: say what it should build".to_owned());
    }
    Ok(answer.to_owned())
}

/// A task's files: words (quote a name with blanks), each inside the workspace, kept
/// relative to it; they need not exist yet (the builder may create them). `-` is none.
pub fn files(answer: &str, workspace: &Path) -> Result<Vec<String>, String> {
    if answer == "-" {
        return Ok(Vec::new());
    }
    let mut out: Vec<String> = Vec::new();
    for word in words::split(answer).map_err(|e| e.to_string())? {
        let path = confine(workspace, &word)
            .map_err(|e| format!("{e}: a task's files must be inside the workspace"))?;
        let rel = relative(&path, workspace)?;
        if !out.contains(&rel) {
            out.push(rel);
        }
    }
    Ok(out)
}

/// `path` (inside the workspace, as [`confine`] returns it) relative to the workspace.
fn relative(path: &Path, workspace: &Path) -> Result<String, String> {
    let root = workspace
        .canonicalize()
        .map_err(|e| format!("{}: {e}", workspace.display()))?;
    let rel = path.strip_prefix(&root).unwrap_or(path);
    Ok(rel.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_ids_and_goals_are_checked_with_what_to_type_instead() {
        assert_eq!(max_turns("6"), Ok(6));
        assert!(max_turns("0").is_err());
        assert!(max_turns("101").is_err());
        assert_eq!(
            max_turns("four"),
            Err("`four` is not a whole number from 1 to 100".to_owned())
        );
        assert_eq!(task_id("T-0100"), Ok("T-0100".to_owned()));
        assert!(task_id("../x").is_err());
        assert!(task_id("-x").is_err());
        assert!(goal("").is_err());
        assert!(goal(PLACEHOLDER_GOAL).is_err());
    }

    #[test]
    fn a_shim_command_must_be_the_agents_own_role_with_a_model_and_a_builders_check() {
        let cmd = |s: &str| words::split(s).expect("words");
        assert!(shim("reviewer", &cmd("lorch agent builder -- llm")).is_err());
        assert!(shim("reviewer", &cmd("lorch agent reviewer")).is_err());
        assert!(shim("builder", &cmd("lorch agent builder -- llm")).is_err());
        assert_eq!(
            shim(
                "builder",
                &cmd("lorch agent builder --check 'cargo test' -- llm")
            ),
            Ok(())
        );
    }
}
