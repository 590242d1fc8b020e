//! Hooks: the commands loaf.yml runs before the actions (`hooks.before`) and after them
//! (`hooks.after`), as the loaf seed's HooksManager ran them.
//!
//! Each hook runs with `sh -c` in its own process group, in its `cwd` (default: the root),
//! and is killed with its whole group at its timeout. Hooks run in order; the first failure
//! stops the rest unless that hook has `continueOnError`. Inside a transaction they run in
//! the same [sandbox](super::sandbox) as `exec` code ([`run_hooks_in`]).
//!
//! # `${VAR}` in commands
//!
//! `${NAME}` is replaced for every `NAME` in the variables (loaf.yml's `vars` and the run's,
//! see [`run_context_vars`]); other `${...}` are left to the shell. Values are never pasted
//! into the command text: the run's values come from the reply (file paths, error messages)
//! and pasting `'; rm -rf ~ #` into a command would run it. Instead each variable is passed
//! as the environment variable `LOAF_VAR_<NAME>` and `${NAME}` becomes `${LOAF_VAR_NAME}`,
//! which the shell expands as data, never as code. Within double quotes or unquoted this
//! reads exactly like pasting the value (unquoted values are split into words, as pasted
//! ones would be); within single quotes the reference is spliced in between closing and
//! reopening quotes, so `'${NAME}'` too gives the value as written (as slupe's pasting
//! did), never `${LOAF_VAR_NAME}` and never shell syntax. `\${NAME}` stays a literal `${NAME}`.
//! Scripts a hook calls can read the same `LOAF_VAR_<NAME>` variables.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use super::PathMap;
use super::environment::{CodeEnvironment, DEFAULT_ENVIRONMENT};
use super::process::{self, Ending, Job};
use super::sandbox::Sandbox;

/// How long a hook may run when loaf.yml gives no `timeout` (the seed's 30000 ms).
pub(crate) const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(30);

/// Bytes kept of each hook's stdout and stderr.
pub(crate) const HOOK_OUTPUT_CAP: usize = 1024 * 1024;

/// Prefix of the environment variables that carry `${VAR}` values to hooks.
pub(crate) const VAR_ENV_PREFIX: &str = "LOAF_VAR_";

/// Bytes of a failed hook's stderr quoted in its error (the end, where the reason usually is).
const STDERR_IN_ERROR: usize = 2000;

/// One hook command from loaf.yml.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hook {
    /// The command, run by `sh -c` after `${VAR}` replacement.
    pub run: String,
    /// Go on with the next hook when this one fails.
    pub continue_on_error: bool,
    /// When to kill it (and everything it started).
    pub timeout: Duration,
    /// Where it runs, as the user writes paths; relative to the default directory. `None`:
    /// the default directory.
    pub cwd: Option<PathBuf>,
}

impl Hook {
    /// A hook with loaf.yml's defaults: stops the chain on failure, 30 s, default directory.
    pub fn new(run: impl Into<String>) -> Hook {
        Hook {
            run: run.into(),
            continue_on_error: false,
            timeout: DEFAULT_HOOK_TIMEOUT,
            cwd: None,
        }
    }
}

/// What one hook did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HookRun {
    /// The command as loaf.yml wrote it (before `${VAR}` replacement).
    pub command: String,
    /// Whether it exited with code 0 in time.
    pub success: bool,
    /// Its exit code, when it exited by itself.
    pub exit_code: Option<i32>,
    /// Its standard output (capped at [`HOOK_OUTPUT_CAP`]).
    pub stdout: String,
    /// Its standard error (capped at [`HOOK_OUTPUT_CAP`]).
    pub stderr: String,
    /// Why it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What a list of hooks did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HooksResult {
    /// The hooks that ran, in order (those after a stopping failure did not run).
    pub runs: Vec<HookRun>,
    /// `<command>: <error>` for every hook that failed, including those whose failure was
    /// tolerated by `continueOnError` (the seed's `hookErrors` entries).
    pub errors: Vec<String>,
    /// False when a hook without `continueOnError` failed.
    pub success: bool,
}

/// Runs `hooks` in order with `${VAR}` taken from `vars`; `default_cwd` (a user path, like
/// each hook's `cwd`) is where hooks without a `cwd` run. Paths are mapped with `paths`,
/// and the real ones are scrubbed from every output and message. No sandbox: for runs
/// outside a transaction (the tests'; code runs hooks through [`run_hooks_in`]).
#[cfg(test)]
pub(crate) fn run_hooks(
    hooks: &[Hook],
    vars: &BTreeMap<String, String>,
    default_cwd: &Path,
    paths: &PathMap,
) -> HooksResult {
    run_hooks_in(hooks, vars, default_cwd, paths, None)
}

/// [`run_hooks`] in `sandbox` (inside a transaction: the stage at the user's path, no
/// survivors), as `exec` code runs.
pub fn run_hooks_in(
    hooks: &[Hook],
    vars: &BTreeMap<String, String>,
    default_cwd: &Path,
    paths: &PathMap,
    sandbox: Option<&Sandbox>,
) -> HooksResult {
    let environment = sandbox.map_or(&DEFAULT_ENVIRONMENT, |sandbox| sandbox.environment());
    run_hooks_with(hooks, vars, (default_cwd, paths), sandbox, environment)
}

/// [`run_hooks_in`] with `environment` (loaf.yml's `exec.env`) where no sandbox carries it:
/// the git hook run in the user's tree after the commit.
pub(crate) fn run_hooks_with(
    hooks: &[Hook],
    vars: &BTreeMap<String, String>,
    (default_cwd, paths): (&Path, &PathMap),
    sandbox: Option<&Sandbox>,
    environment: &CodeEnvironment,
) -> HooksResult {
    let env = var_environment(vars);
    let mut result = HooksResult {
        runs: Vec::new(),
        errors: Vec::new(),
        success: true,
    };
    for hook in hooks {
        let run = run_one(
            hook,
            vars,
            &env,
            (default_cwd, paths),
            (sandbox, environment),
        );
        let stop = run.error.is_some() && !hook.continue_on_error;
        if let Some(error) = &run.error {
            result.errors.push(format!("{}: {error}", hook.run));
        }
        result.runs.push(run);
        if stop {
            result.success = false;
            break;
        }
    }
    result
}

/// The run's variables for after-hooks, under loaf.yml's documented names (`SUCCESS`,
/// `TOTAL_BLOCKS`, `EXECUTED_ACTIONS`, `FAILED_ACTIONS`, `MODIFIED_FILES` joined with `,`,
/// `ERRORS` joined with `; `, `ERROR_COUNT`) and the seed's HookContext names (`success`,
/// `totalBlocks`, `executedActions`, `failedActions`, `modifiedFiles`, `errors`,
/// `errorCount`). Merge them over loaf.yml's `vars` so that the run's facts win.
pub(crate) fn run_context_vars(
    success: bool,
    total_blocks: usize,
    executed: usize,
    failed: usize,
    modified_files: &[String],
    errors: &[String],
) -> BTreeMap<String, String> {
    let values = [
        ("SUCCESS", "success", success.to_string()),
        ("TOTAL_BLOCKS", "totalBlocks", total_blocks.to_string()),
        ("EXECUTED_ACTIONS", "executedActions", executed.to_string()),
        ("FAILED_ACTIONS", "failedActions", failed.to_string()),
        ("MODIFIED_FILES", "modifiedFiles", modified_files.join(",")),
        ("ERRORS", "errors", errors.join("; ")),
        ("ERROR_COUNT", "errorCount", errors.len().to_string()),
    ];
    values
        .into_iter()
        .flat_map(|(upper, seed, value)| {
            [(upper.to_owned(), value.clone()), (seed.to_owned(), value)]
        })
        .collect()
}

fn run_one(
    hook: &Hook,
    vars: &BTreeMap<String, String>,
    env: &[(OsString, OsString)],
    (default_cwd, paths): (&Path, &PathMap),
    (sandbox, environment): (Option<&Sandbox>, &CodeEnvironment),
) -> HookRun {
    let failed = |error: String| HookRun {
        command: hook.run.clone(),
        success: false,
        exit_code: None,
        stdout: String::new(),
        stderr: String::new(),
        error: Some(paths.scrub(&error)),
    };
    let user_cwd = match &hook.cwd {
        Some(cwd) => default_cwd.join(cwd),
        None => default_cwd.to_path_buf(),
    };
    let cwd = paths.to_real(&user_cwd);
    let seen = match sandbox {
        Some(sandbox) => sandbox.seen_at(&cwd),
        None => cwd.clone(),
    };
    if !seen.is_dir() {
        return failed(format!("cwd not found '{}' (ENOENT)", user_cwd.display()));
    }
    let job = Job {
        program: "sh",
        args: vec!["-c".into(), reference_vars(&hook.run, vars).into()],
        cwd: &cwd,
        env: env.to_vec(),
        environment,
        path: None,
        timeout: hook.timeout,
        max_output: HOOK_OUTPUT_CAP,
        sandbox,
    };
    let finished = match process::run_shown_as(&job, &format!("hook: {}", hook.run)) {
        Ok(finished) => finished,
        Err(e) => return failed(e.to_string()),
    };
    let stdout = paths.scrub(&finished.stdout.marked(HOOK_OUTPUT_CAP));
    let stderr = paths.scrub(&finished.stderr.marked(HOOK_OUTPUT_CAP));
    let (exit_code, error) = match finished.ending {
        Ending::Exited(0) => (Some(0), None),
        Ending::Exited(code) => (
            Some(code),
            Some(with_stderr(
                format!("Process exited with code {code}"),
                &stderr,
            )),
        ),
        Ending::Signalled(signal) => (
            None,
            Some(with_stderr(
                format!("Process killed by signal {signal}"),
                &stderr,
            )),
        ),
        Ending::TimedOut => (
            None,
            Some(format!(
                "Process timeout after {} (TIMEOUT)",
                process::seconds(hook.timeout)
            )),
        ),
    };
    HookRun {
        command: hook.run.clone(),
        success: error.is_none(),
        exit_code,
        stdout,
        stderr,
        error,
    }
}

/// `reason: <the end of stderr>`, so that the recorded error says what went wrong.
fn with_stderr(reason: String, stderr: &str) -> String {
    let stderr = stderr.trim();
    if stderr.is_empty() {
        return reason;
    }
    let mut start = stderr.len().saturating_sub(STDERR_IN_ERROR);
    while !stderr.is_char_boundary(start) {
        start += 1;
    }
    let cut = if start > 0 { "…" } else { "" };
    format!("{reason}: {cut}{}", &stderr[start..])
}

/// Where a shell is in a command's quoting, as far as `${NAME}` replacement needs to know.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Quoting {
    Unquoted,
    Single,
    Double,
}

/// The command with each `${NAME}` of a known variable turned into a reference to the
/// environment variable that carries its value; everything else is left as written.
///
/// Unquoted and within double quotes the reference is `${LOAF_VAR_NAME}`, which the shell
/// expands as data. Within single quotes the shell expands nothing, so the reference closes
/// the quotes, expands within double quotes and reopens them (`'a ${X} b'` becomes
/// `'a '"${LOAF_VAR_X}"' b'`): the value lands in the single-quoted text exactly as if it
/// had been pasted there, and still is never read as shell syntax. A `${` after a backslash
/// (outside single quotes) is the shell's literal `${`, and stays so.
fn reference_vars(command: &str, vars: &BTreeMap<String, String>) -> String {
    let mut out = String::with_capacity(command.len());
    let mut quoting = Quoting::Unquoted;
    let mut rest = command;
    while let Some(c) = rest.chars().next() {
        if c == '$'
            && let Some(after) = rest.strip_prefix("${")
            && let Some((name, tail)) = after.split_once('}')
            && is_var_name(name)
            && vars.contains_key(name)
        {
            let reference = format!("${{{VAR_ENV_PREFIX}{name}}}");
            if quoting == Quoting::Single {
                out.push_str(&format!("'\"{reference}\"'"));
            } else {
                out.push_str(&reference);
            }
            rest = tail;
            continue;
        }
        let mut len = c.len_utf8();
        match (quoting, c) {
            (Quoting::Single, '\'') => quoting = Quoting::Unquoted,
            (Quoting::Single, _) => {}
            (_, '\\') => {
                // The escaped character is copied with its backslash, never interpreted here.
                len += rest[len..].chars().next().map_or(0, char::len_utf8);
            }
            (Quoting::Unquoted, '\'') => quoting = Quoting::Single,
            (Quoting::Unquoted, '"') => quoting = Quoting::Double,
            (Quoting::Double, '"') => quoting = Quoting::Unquoted,
            _ => {}
        }
        out.push_str(&rest[..len]);
        rest = &rest[len..];
    }
    out
}

/// `LOAF_VAR_<NAME>=value` for every variable whose name the shell accepts. A NUL cannot be
/// passed in the environment; it becomes U+FFFD.
fn var_environment(vars: &BTreeMap<String, String>) -> Vec<(OsString, OsString)> {
    vars.iter()
        .filter(|(name, _)| is_var_name(name))
        .map(|(name, value)| {
            (
                format!("{VAR_ENV_PREFIX}{name}").into(),
                value.replace('\0', "\u{fffd}").into(),
            )
        })
        .collect()
}

/// A shell variable name: a letter or `_`, then letters, digits and `_`.
fn is_var_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests;
