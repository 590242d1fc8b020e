//! `lorch agent --sandbox` (docs/lorch.md, "Sandboxing agents"):
//! the model command and the builder's checks run in git-loaf's namespace sandbox
//! ([`git_loaf::api::Sandbox`]), the one its `exec` actions run in, in place on the
//! workspace:
//!
//! - everything is read-only except the workspace, a private `/tmp` and the folders named by
//!   `--sandbox-writable` (a model CLI's cache or logs);
//! - the repository's git dir is seen through a layer whose writes are dropped: hooks,
//!   config, refs and objects never change (the builder's changes go through git-loaf, from
//!   the reply, outside the sandbox);
//! - nothing started inside outlives the command (a PID namespace whose init dies with the
//!   agent);
//! - the network stays: a model CLI talks to its API (or a local server), so it cannot be
//!   cut without cutting the model.
//!
//! It is opt-in and never degrades: where namespaces cannot be made (a kernel or container
//! that forbids them, `LOAF_SANDBOX=off`), the agent refuses to start and says so.
//!
//! The model is run through git-loaf's `run` (process group, timeout, output caps);
//! that runner gives the code no stdin, so the prompt reaches the model through a file in
//! the agent's state folder (inside the git dir, which the sandbox shows read-only) that a
//! `sh` redirects to its stdin.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use git_loaf::api::{CodeEnvironment, Ending, Job, Policy, RunError, Sandbox};

use super::llm::{LlmError, MAX_REPLY_BYTES, Reply, STDERR_TAIL_BYTES};

/// The sandbox of `workspace` (whose repository's common git dir is `common`), with
/// `writable` folders besides it; an error saying why when it cannot be made here.
pub fn contain(
    workspace: &Path,
    common: Option<&Path>,
    writable: &[PathBuf],
) -> Result<Sandbox, String> {
    let mut folders = Vec::new();
    for dir in writable {
        let absolute = std::path::absolute(dir)
            .map_err(|e| format!("--sandbox-writable {}: {e}", dir.display()))?;
        folders.push(absolute);
    }
    let sandbox = Sandbox::in_place(workspace, common).with_policy(Policy {
        network: true,
        writable: folders,
        unisolated_allowed: false,
        env: CodeEnvironment::default(),
    });
    if !sandbox.isolated() {
        let why = sandbox
            .refusal()
            .unwrap_or_else(|| "namespaces are turned off (LOAF_SANDBOX=off)".to_owned());
        return Err(format!(
            "--sandbox: git-loaf's sandbox cannot be made here, so the model would run uncontained ({why}); run the agent without --sandbox, or where user namespaces are allowed"
        ));
    }
    Ok(sandbox)
}

/// Runs `cmd` in `sandbox` with `prompt` on its stdin (through a file in `state_dir`) and
/// `env` added, for at most `timeout`: [`super::llm::ask`], contained.
pub fn ask(
    sandbox: &Sandbox,
    cmd: &[String],
    prompt: &str,
    state_dir: &Path,
    env: &[(String, String)],
    timeout: Duration,
) -> Result<Reply, LlmError> {
    let program = cmd.first().cloned().unwrap_or_default();
    let start = |source| LlmError::Start {
        program: program.clone(),
        source,
    };
    let prompt_file = state_dir.join(format!("prompt-{}.md", std::process::id()));
    crate::safety::atomic_write(&prompt_file, prompt.as_bytes()).map_err(start)?;
    let mut args: Vec<OsString> = vec![
        "-c".into(),
        r#"f=$1; shift; exec "$@" < "$f""#.into(),
        "sh".into(),
        prompt_file.clone().into(),
    ];
    args.extend(cmd.iter().map(OsString::from));
    // The model's command is the user's, run on purpose: it gets its API key.
    let whole = CodeEnvironment::whole();
    let job = Job {
        program: "sh",
        args,
        cwd: sandbox.user_root(),
        env: env
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect(),
        environment: &whole,
        path: None,
        timeout,
        // One byte past the cap tells a reply that is too long from one that fits.
        max_output: MAX_REPLY_BYTES + 1,
        sandbox: Some(sandbox),
    };
    let finished = git_loaf::api::run(&job);
    let _ = std::fs::remove_file(&prompt_file);
    let finished = finished.map_err(|e| match e {
        RunError::NotFound(_) => start(std::io::Error::from(std::io::ErrorKind::NotFound)),
        RunError::Refused(why) => start(std::io::Error::other(why)),
        RunError::Io { source, .. } => start(source),
    })?;
    let stderr = super::tail(&finished.stderr.text, STDERR_TAIL_BYTES);
    match finished.ending {
        Ending::Exited(0) => {}
        // `sh` says 127 when the program is not found (the exec failed).
        Ending::Exited(127) => {
            return Err(start(std::io::Error::other(stderr.trim().to_owned())));
        }
        Ending::Exited(code) => {
            return Err(LlmError::Failed {
                program,
                how: format!("exit code {code}"),
                stderr,
            });
        }
        Ending::Signalled(signal) => {
            return Err(LlmError::Failed {
                program,
                how: format!("signal {signal}"),
                stderr,
            });
        }
        Ending::TimedOut => {
            return Err(LlmError::TimedOut {
                program,
                seconds: timeout.as_secs_f64(),
            });
        }
    }
    if finished.stdout.truncated || finished.stdout.text.len() > MAX_REPLY_BYTES {
        return Err(LlmError::TooLong { program });
    }
    Ok(Reply {
        text: finished.stdout.text,
    })
}
