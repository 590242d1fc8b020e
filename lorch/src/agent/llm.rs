//! Running the wrapped LLM command: the prompt on its stdin, the reply from its stdout, and
//! a deadline after which its whole process group is killed.
//!
//! The command runs as the leader of a new process group for the same reason `exec` does
//! (see `git_loaf::api::run`): a CLI that starts helpers must not leave them running, or
//! holding our pipes open, once it is killed. The prompt is written on its own thread and
//! both outputs are read on their own threads, so a model that prints before it has read
//! the whole prompt never deadlocks against us.

use std::io::{self, Read, Write};
use std::os::unix::process::{CommandExt as _, ExitStatusExt as _};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use rustix::process::{Pid, Signal, kill_process_group};

/// Bytes of a reply kept (a reply is read whole: a cut one would be applied half).
pub const MAX_REPLY_BYTES: usize = 16 * 1024 * 1024;
/// Bytes of stderr kept, the last ones (where a CLI says why it failed).
pub const STDERR_TAIL_BYTES: usize = 8 * 1024;
/// How long the pipes may stay open once the group is dead (a process that left the group).
const PIPE_GRACE: Duration = Duration::from_millis(500);

/// What the model said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// Its stdout, decoded as UTF-8 (invalid sequences replaced).
    pub text: String,
}

/// Why no reply came.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    /// The program could not be started.
    #[error("cannot start `{program}`: {source}")]
    Start {
        /// The program.
        program: String,
        /// What the OS said.
        source: io::Error,
    },
    /// It ran past the deadline and was killed.
    #[error("`{program}` did not answer within {seconds:.1}s and was killed")]
    TimedOut {
        /// The program.
        program: String,
        /// The time it had.
        seconds: f64,
    },
    /// It exited unsuccessfully.
    #[error("`{program}` failed ({how}){}", stderr_suffix(.stderr))]
    Failed {
        /// The program.
        program: String,
        /// `exit code 3` or `signal 9`.
        how: String,
        /// The end of its stderr.
        stderr: String,
    },
    /// Its reply is larger than [`MAX_REPLY_BYTES`].
    #[error("`{program}` replied with more than {MAX_REPLY_BYTES} bytes")]
    TooLong {
        /// The program.
        program: String,
    },
}

fn stderr_suffix(stderr: &str) -> String {
    let trimmed = stderr.trim();
    if trimmed.is_empty() {
        String::new()
    } else {
        format!(": {trimmed}")
    }
}

impl LlmError {
    /// The `payload.code` of the error event.
    pub fn code(&self) -> &'static str {
        match self {
            LlmError::Start { .. } => "agent_command_not_started",
            LlmError::TimedOut { .. } => "timeout",
            LlmError::Failed { .. } => "agent_command_failed",
            LlmError::TooLong { .. } => "reply_too_long",
        }
    }
}

/// Runs `cmd` in `cwd` with `env` added, `prompt` on its stdin, for at most `timeout`.
pub fn ask(
    cmd: &[String],
    prompt: &str,
    cwd: &Path,
    env: &[(String, String)],
    timeout: Duration,
) -> Result<Reply, LlmError> {
    let program = cmd.first().cloned().unwrap_or_default();
    let mut command = Command::new(&program);
    command
        .args(cmd.iter().skip(1))
        .current_dir(cwd)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    // lorch kills an agent that stops beating or runs past a timeout (SIGKILL, which the
    // shim cannot catch): the model must not go on running, and spending, without it.
    // SAFETY: between fork and exec only prctl(PR_SET_PDEATHSIG) runs, which is
    // async-signal-safe and touches no memory of the parent.
    unsafe {
        command.pre_exec(|| {
            rustix::process::set_parent_process_death_signal(Some(Signal::KILL))
                .map_err(io::Error::from)
        });
    }
    let mut child = command.spawn().map_err(|source| LlmError::Start {
        program: program.clone(),
        source,
    })?;
    let group = Pid::from_child(&child);
    if let Some(mut stdin) = child.stdin.take() {
        let prompt = prompt.to_owned();
        // A model that exits without reading all of it gets EPIPE here: not our error.
        thread::spawn(move || {
            let _ = stdin.write_all(prompt.as_bytes());
        });
    }
    let stdout = child
        .stdout
        .take()
        .map(|pipe| read_capped(pipe, MAX_REPLY_BYTES, false));
    let stderr = child
        .stderr
        .take()
        .map(|pipe| read_capped(pipe, STDERR_TAIL_BYTES, true));
    let (status_tx, status_rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = status_tx.send(child.wait());
    });
    let status = status_rx.recv_timeout(timeout);
    // Whatever happened, nothing of the group outlives the answer.
    let _ = kill_process_group(group, Signal::KILL);
    let collect = |rx: Option<mpsc::Receiver<(Vec<u8>, bool)>>| {
        rx.and_then(|rx| rx.recv_timeout(PIPE_GRACE).ok())
            .unwrap_or_default()
    };
    let (out, overflow) = collect(stdout);
    let (err, _) = collect(stderr);
    let stderr = String::from_utf8_lossy(&err).into_owned();
    let status = match status {
        Ok(Ok(status)) => status,
        Ok(Err(source)) => return Err(LlmError::Start { program, source }),
        Err(_) => {
            return Err(LlmError::TimedOut {
                program,
                seconds: timeout.as_secs_f64(),
            });
        }
    };
    if !status.success() {
        let how = match (status.code(), status.signal()) {
            (Some(code), _) => format!("exit code {code}"),
            (None, Some(signal)) => format!("signal {signal}"),
            (None, None) => "unknown status".to_owned(),
        };
        return Err(LlmError::Failed {
            program,
            how,
            stderr,
        });
    }
    if overflow {
        return Err(LlmError::TooLong { program });
    }
    Ok(Reply {
        text: String::from_utf8_lossy(&out).into_owned(),
    })
}

/// Reads `pipe` to its end on a thread, keeping `cap` bytes (the first ones, or the last
/// ones when `tail`); sends the bytes and whether any were dropped.
fn read_capped(
    mut pipe: impl Read + Send + 'static,
    cap: usize,
    tail: bool,
) -> mpsc::Receiver<(Vec<u8>, bool)> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut kept = Vec::new();
        let mut dropped = false;
        let mut chunk = vec![0u8; 64 * 1024];
        loop {
            match pipe.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => {
                    kept.extend_from_slice(&chunk[..n]);
                    if kept.len() > cap {
                        dropped = true;
                        if tail {
                            kept.drain(..kept.len() - cap);
                        } else {
                            kept.truncate(cap);
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        let _ = tx.send((kept, dropped));
    });
    rx
}
