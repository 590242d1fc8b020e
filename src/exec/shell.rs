//! The `exec` action: runs a reply's bash, Python or JavaScript code and reports its exit
//! code and output.
//!
//! Each language runs its interpreter with the code as one argument (`bash -c`,
//! `python3 -c`, `node -e`), in the requested working directory (the root by default),
//! with stdin closed and the environment inherited. The code runs in its own process group:
//! at the timeout the whole group is killed, and anything it started in the background is
//! killed when it ends (see `process.rs`). Inside a transaction it runs in the workspace's
//! [sandbox](super::sandbox): `cd <repository root>` leads into the stage, and nothing it
//! starts survives it. Messages follow the loaf seed:
//! `exec: python3 not found in PATH (ENOENT)`, `exec: Process timeout after 30s (TIMEOUT)`.
//!
//! `data` is `{stdout, stderr, exit_code}` (`exit_code` null when there is none: timeout or
//! signal), plus `stdout_truncated` / `stderr_truncated: true` for a stream cut at
//! `max_output` bytes (its text then ends with a `… [output truncated at N bytes]` line).
//! With `return_output: false` a successful run reports only `exit_code`; a failed one keeps
//! its output so the model can see why.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::environment::DEFAULT_ENVIRONMENT;
use super::process::{self, Captured, Ending, Finished, Job};
use super::{Access, ActionOutcome, Params, Workspace};

/// The languages `exec` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Language {
    /// `bash -c <code>`.
    Bash,
    /// `python3 -c <code>`, or the project's `.venv/bin/python` ([`python_for`]).
    Python,
    /// `node -e <code>`.
    JavaScript,
}

impl Language {
    /// The language a `lang` parameter names: `bash`, `python` or `javascript`.
    pub fn from_name(name: &str) -> Option<Language> {
        match name {
            "bash" => Some(Language::Bash),
            "python" => Some(Language::Python),
            "javascript" => Some(Language::JavaScript),
            _ => None,
        }
    }

    /// The interpreter and the flag that makes it run its next argument as code.
    fn interpreter(self) -> (&'static str, &'static str) {
        match self {
            Language::Bash => ("bash", "-c"),
            Language::Python => ("python3", "-c"),
            Language::JavaScript => ("node", "-e"),
        }
    }
}

/// The project's virtualenv interpreter, `<root>/.venv/bin/python`, when there is one (the
/// user's own, which code sees at the same path): `lang = "python"` runs it instead of the
/// system's `python3`, with the packages the project installed.
pub(crate) fn python_for(root: &Path) -> Option<PathBuf> {
    let python = root.join(".venv").join("bin").join("python");
    python.is_file().then_some(python)
}

/// Runs an `exec` action: `code` in `lang`, in `cwd` (default: the root), within the
/// workspace's timeout and output cap.
pub fn run_exec(params: &Params, ws: &Workspace) -> ActionOutcome {
    run_exec_with_path(params, ws, None)
}

/// [`run_exec`] with PATH replaced by `path` (when given) for finding the interpreter and in
/// the code's environment.
pub(crate) fn run_exec_with_path(
    params: &Params,
    ws: &Workspace,
    path: Option<&OsStr>,
) -> ActionOutcome {
    let (Some(code), Some(lang)) = (text(params, "code"), text(params, "lang")) else {
        return ActionOutcome::fail("Invalid action: missing lang or code parameter");
    };
    let Some(language) = Language::from_name(lang) else {
        return ActionOutcome::fail(format!(
            "exec: Unsupported language '{lang}' (use bash, python or javascript)"
        ));
    };
    let cwd = match working_dir(params, ws) {
        Ok(cwd) => cwd,
        Err(message) => return ActionOutcome::fail(message),
    };
    let (program, flag) = language.interpreter();
    let venv = match language {
        Language::Python => python_for(ws.paths.user_root()),
        _ => None,
    };
    let program = venv.as_deref().and_then(Path::to_str).unwrap_or(program);
    let job = Job {
        program,
        args: vec![flag.into(), code.into()],
        cwd: &cwd,
        env: Vec::new(),
        environment: ws
            .sandbox
            .map_or(&DEFAULT_ENVIRONMENT, |sandbox| sandbox.environment()),
        path: path.map(OsStr::to_os_string),
        timeout: ws.exec_timeout,
        max_output: ws.max_output,
        sandbox: ws.sandbox,
    };
    match process::run(&job) {
        Ok(finished) => outcome(&finished, params, ws),
        Err(e) => ActionOutcome::fail(ws.paths.scrub(&format!("exec: {e}"))),
    }
}

/// The directory the code runs in: `cwd` or the root, mapped to where it really is and
/// allowed by the fs-guard for reading.
fn working_dir(params: &Params, ws: &Workspace) -> Result<PathBuf, String> {
    let user = match text(params, "cwd") {
        Some(cwd) => PathBuf::from(cwd),
        None => ws.paths.user_root().to_path_buf(),
    };
    if !user.is_absolute() {
        return Err(format!(
            "exec: cwd must be an absolute path, got '{}'",
            user.display()
        ));
    }
    let mapped = ws.paths.to_real(&user);
    super::bad_path::check(&user, &mapped).map_err(|bad| format!("exec: cwd: {bad}"))?;
    let real = ws
        .guard
        .check(Access::Read, &mapped)
        .map_err(|refusal| ws.paths.scrub(&refusal))?;
    // Inside a visible ignored folder the stage holds only a placeholder; the code will
    // see the user's folder there.
    let seen = match ws.sandbox {
        Some(sandbox) => sandbox.seen_at(&real),
        None => real.clone(),
    };
    match std::fs::metadata(&seen) {
        Ok(meta) if meta.is_dir() => Ok(real),
        Ok(_) => Err(format!(
            "exec: cwd is not a directory '{}' (ENOTDIR)",
            user.display()
        )),
        Err(_) => Err(format!("exec: cwd not found '{}' (ENOENT)", user.display())),
    }
}

fn outcome(finished: &Finished, params: &Params, ws: &Workspace) -> ActionOutcome {
    let error = match finished.ending {
        Ending::Exited(0) => None,
        Ending::Exited(code) => Some(format!("exec: Process exited with code {code}")),
        // The seed's wording, without the `exec:` its other messages carry.
        Ending::Signalled(signal) => Some(format!("Process killed by signal {signal}")),
        Ending::TimedOut => Some(format!(
            "exec: Process timeout after {} (TIMEOUT)",
            process::seconds(ws.exec_timeout)
        )),
    };
    let error = error.map(|error| match network_hint(finished, ws) {
        Some(hint) => format!("{error}; {hint}"),
        None => error,
    });
    let exit_code = match finished.ending {
        Ending::Exited(code) => json!(code),
        _ => Value::Null,
    };
    let return_output = params
        .get("return_output")
        .and_then(Value::as_bool)
        .unwrap_or(true);
    let mut data = Map::new();
    if return_output || error.is_some() {
        stream(&mut data, "stdout", &finished.stdout, ws);
        stream(&mut data, "stderr", &finished.stderr, ws);
    }
    data.insert("exit_code".into(), exit_code);
    // No exit code: say why, so that the report reads "timed out after 30 s", not "null".
    match finished.ending {
        Ending::TimedOut => {
            let secs = ws.exec_timeout.as_secs_f64();
            let secs = if secs.fract() == 0.0 {
                json!(ws.exec_timeout.as_secs())
            } else {
                json!(secs)
            };
            data.insert("timed_out_after_secs".into(), secs);
        }
        Ending::Signalled(signal) => {
            data.insert("signal".into(), json!(signal.to_string()));
        }
        Ending::Exited(_) => {}
    }
    ActionOutcome {
        success: error.is_none(),
        error,
        data: Some(Value::Object(data)),
    }
}

/// Puts a stream's text in `data` under `name`, and `<name>_truncated` when it was cut.
fn stream(data: &mut Map<String, Value>, name: &str, captured: &Captured, ws: &Workspace) {
    let text = ws.paths.scrub(&captured.marked(ws.max_output));
    data.insert(name.into(), Value::String(text));
    if captured.truncated {
        data.insert(format!("{name}_truncated"), Value::Bool(true));
    }
}

/// What failing code that wanted the network is told, when the sandbox kept it out and the
/// output reads like a network error (DNS, unreachable, refused connections).
fn network_hint(finished: &Finished, ws: &Workspace) -> Option<&'static str> {
    const SIGNS: [&str; 14] = [
        "network is unreachable",
        "could not resolve",
        "name resolution",
        "name or service not known",
        "nodename nor servname",
        "getaddrinfo",
        "no route to host",
        "connection refused",
        "enetunreach",
        "econnrefused",
        "eai_again",
        "failed to connect",
        "unable to connect",
        "network unreachable",
    ];
    let sandbox = ws.sandbox?;
    if !sandbox.isolated() || sandbox.network() {
        return None;
    }
    let output = format!("{}\n{}", finished.stdout.text, finished.stderr.text).to_lowercase();
    SIGNS.iter().any(|sign| output.contains(sign)).then_some(
        "the sandbox has no network (only a loopback of its own): set `exec: { network: true }` in loaf.yml if the code needs it",
    )
}

fn text<'p>(params: &'p Params, key: &str) -> Option<&'p str> {
    params.get(key).and_then(Value::as_str)
}

#[cfg(test)]
mod tests;
