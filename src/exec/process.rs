//! Running one child process for `exec` and the hooks: its own process group, a timeout that
//! kills the whole group, and output streams captured up to a cap.
//!
//! Why a process group: code from a reply (or a hook) may start children of its own —
//! `sleep 100 &`, a dev server, a test runner's workers. Killing only the direct child would
//! leave them running and holding our output pipes open, so nothing would ever return. The
//! child is started as the leader of a new group, and every way out of [`run`] — exit,
//! signal or timeout — ends with SIGKILL to that group. Processes started by the code do
//! not outlive it; one that left the group (`setsid`) is not waited for longer than
//! [`PIPE_GRACE`].
//!
//! Inside a transaction the job carries a [`Sandbox`]: the child then runs in namespaces
//! where the stage is at the user's path and nothing outlives it, or, in the fallback, with
//! its process group recorded for crash recovery (see `sandbox.rs`).
//!
//! Output is read on one thread per stream while the child runs, so a child writing more
//! than a pipe holds never blocks. Bytes past the cap are read and dropped; the result says
//! how many there were.

use std::ffi::OsString;
use std::io::{self, Read};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process_group};

use super::environment::CodeEnvironment;
use super::sandbox::Sandbox;

/// How long, once the process group is gone, the output pipes may take to reach their end
/// (a process that escaped the group can hold them open forever).
pub(crate) const PIPE_GRACE: Duration = Duration::from_millis(500);

/// What to run and within which limits.
#[derive(Debug, Clone)]
pub struct Job<'a> {
    /// The program, looked up in PATH (the `path` below when set).
    pub program: &'a str,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Where it runs; must be an existing directory (a missing one would also fail with
    /// ENOENT and be mistaken for a missing program, so callers check it first).
    pub cwd: &'a Path,
    /// Extra environment variables on top of the inherited environment (without its
    /// secrets: see `environment.rs`).
    pub env: Vec<(OsString, OsString)>,
    /// What the child gets of this process's environment (before `env` and `path`).
    pub environment: &'a CodeEnvironment,
    /// Replaces PATH, for looking up the program and in the child's environment.
    pub path: Option<OsString>,
    /// When to kill the process group.
    pub timeout: Duration,
    /// Bytes kept of each output stream.
    pub max_output: usize,
    /// Where the process runs inside a transaction (`cwd` is then a stage path); None: as
    /// it is, where `cwd` says.
    pub sandbox: Option<&'a Sandbox>,
}

/// How the process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// It exited by itself with this code.
    Exited(i32),
    /// A signal ended it (not ours): the signal's name, e.g. `SIGSEGV`, or its number.
    Signalled(SignalName),
    /// It ran past the timeout and its group was killed.
    TimedOut,
}

/// A signal as messages show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SignalName(pub i32);

impl std::fmt::Display for SignalName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const NAMES: [(Signal, &str); 15] = [
            (Signal::HUP, "SIGHUP"),
            (Signal::INT, "SIGINT"),
            (Signal::QUIT, "SIGQUIT"),
            (Signal::ILL, "SIGILL"),
            (Signal::TRAP, "SIGTRAP"),
            (Signal::ABORT, "SIGABRT"),
            (Signal::BUS, "SIGBUS"),
            (Signal::FPE, "SIGFPE"),
            (Signal::KILL, "SIGKILL"),
            (Signal::USR1, "SIGUSR1"),
            (Signal::SEGV, "SIGSEGV"),
            (Signal::USR2, "SIGUSR2"),
            (Signal::PIPE, "SIGPIPE"),
            (Signal::ALARM, "SIGALRM"),
            (Signal::TERM, "SIGTERM"),
        ];
        match NAMES.iter().find(|(signal, _)| signal.as_raw() == self.0) {
            Some((_, name)) => f.write_str(name),
            None => write!(f, "signal {}", self.0),
        }
    }
}

/// One output stream as captured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Captured {
    /// The kept bytes, decoded as UTF-8 (invalid sequences replaced).
    pub text: String,
    /// How many bytes the stream carried in all.
    pub total_bytes: u64,
    /// Whether bytes were dropped past the cap.
    pub truncated: bool,
}

impl Captured {
    /// The text, with a marker line saying where it was cut when it was.
    pub fn marked(&self, cap: usize) -> String {
        if !self.truncated {
            return self.text.clone();
        }
        let sep = if self.text.is_empty() || self.text.ends_with('\n') {
            ""
        } else {
            "\n"
        };
        format!("{}{sep}… [output truncated at {cap} bytes]", self.text)
    }
}

/// The process's ending and its output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    /// How it ended.
    pub ending: Ending,
    /// Its standard output.
    pub stdout: Captured,
    /// Its standard error.
    pub stderr: Captured,
}

/// Why the process could not be started or followed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The program is not in PATH.
    #[error("{0} not found in PATH (ENOENT)")]
    NotFound(String),
    /// The sandbox cannot be made here and the user did not allow running without it.
    #[error("{0}")]
    Refused(String),
    /// Starting or waiting failed for another reason.
    #[error("cannot run {program}: {source}")]
    Io {
        /// The program.
        program: String,
        /// What the OS said.
        source: io::Error,
    },
}

/// Runs the job to its end, or kills its process group at the timeout; the progress line
/// names it `exec <program>: <first line of the code>`.
pub fn run(job: &Job) -> Result<Finished, RunError> {
    let code = job
        .args
        .last()
        .map(|a| a.to_string_lossy())
        .unwrap_or_default();
    run_shown_as(job, &format!("exec {}: {code}", job.program))
}

/// [`run`], shown on the progress line (see `crate::progress`) as `label` while it runs.
pub(crate) fn run_shown_as(job: &Job, label: &str) -> Result<Finished, RunError> {
    if let Some(refusal) = job.sandbox.and_then(Sandbox::refusal) {
        return Err(RunError::Refused(refusal));
    }
    let mut command = Command::new(job.program);
    // First: what the run's own variables (below) set stands.
    job.environment.apply(&mut command);
    command
        .args(&job.args)
        .envs(job.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    if let Some(path) = &job.path {
        command.env("PATH", path);
    }
    // First of the child's preparations: the sandbox's relay and init must not hold them
    // either.
    super::descriptors::withhold_from(&mut command);
    let io_error = |source: io::Error| RunError::Io {
        program: job.program.to_owned(),
        source,
    };
    // Dropped (placeholders back, records removed) only once the group is dead.
    let mut session = match job.sandbox {
        Some(sandbox) => Some(sandbox.enter(&mut command, job.cwd).map_err(io_error)?),
        None => {
            command.current_dir(job.cwd);
            None
        }
    };
    let mut child = command.spawn().map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => RunError::NotFound(job.program.to_owned()),
        _ => io_error(e),
    })?;
    let started = Instant::now();
    let progress = crate::progress::start(label);
    let group = Pid::from_child(&child);
    if let Some(session) = &mut session {
        session.started(child.id());
    }

    let (done_tx, done_rx) = mpsc::channel();
    let stdout = child
        .stdout
        .take()
        .map(|pipe| Stream::read(pipe, job.max_output, done_tx.clone()));
    let stderr = child
        .stderr
        .take()
        .map(|pipe| Stream::read(pipe, job.max_output, done_tx.clone()));
    drop(done_tx);

    let (status_tx, status_rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = status_tx.send(child.wait());
    });

    let left = job.timeout.saturating_sub(started.elapsed());
    let (status, timed_out) = match status_rx.recv_timeout(left) {
        Ok(status) => (status, false),
        Err(_) => {
            kill_group(group);
            // SIGKILL cannot be caught; the wait returns at once unless the kernel is stuck.
            let status = status_rx
                .recv_timeout(PIPE_GRACE)
                .unwrap_or_else(|_| Err(io::Error::other("process did not die after SIGKILL")));
            (status, true)
        }
    };
    // The leader is gone; whatever it started in its group goes with it, so that nothing
    // keeps running in the user's repository or holds the pipes.
    kill_group(group);
    wait_for_streams(&done_rx, [stdout.is_some(), stderr.is_some()]);
    // Erased before anything else is printed.
    drop(progress);

    let status = status.map_err(io_error)?;
    let captured = |stream: Option<Stream>| {
        let mut captured = stream.map(|s| s.snapshot()).unwrap_or_else(empty);
        if let Some(session) = &session {
            captured.text = session.scrub(captured.text);
        }
        captured
    };
    Ok(Finished {
        ending: if timed_out {
            Ending::TimedOut
        } else {
            ending_of(status)
        },
        stdout: captured(stdout),
        stderr: captured(stderr),
    })
}

/// How a duration reads in messages: `30s`, `1.5s`, `0.2s`.
pub(crate) fn seconds(duration: Duration) -> String {
    format!("{}s", duration.as_secs_f64())
}

fn ending_of(status: ExitStatus) -> Ending {
    match (status.code(), status.signal()) {
        (Some(code), _) => Ending::Exited(code),
        (None, Some(signal)) => Ending::Signalled(SignalName(signal)),
        // Neither a code nor a signal cannot happen for a waited-for child on Unix.
        (None, None) => Ending::Exited(-1),
    }
}

/// SIGKILL to the whole group. ESRCH (nobody left) is the usual, happy case.
fn kill_group(group: Pid) {
    let _ = kill_process_group(group, Signal::KILL);
}

/// Waits until both readers saw the end of their pipe, or [`PIPE_GRACE`] passed.
fn wait_for_streams(done: &mpsc::Receiver<()>, open: [bool; 2]) {
    let deadline = Instant::now() + PIPE_GRACE;
    let mut left = open.iter().filter(|&&o| o).count();
    while left > 0 {
        let now = Instant::now();
        if now >= deadline || done.recv_timeout(deadline - now).is_err() {
            return;
        }
        left -= 1;
    }
}

fn empty() -> Captured {
    Captured {
        text: String::new(),
        total_bytes: 0,
        truncated: false,
    }
}

/// What a reader thread collected so far; shared so that a snapshot can be taken even when
/// the thread is still blocked on a pipe held open by an escaped process.
#[derive(Default)]
struct Buffer {
    kept: Vec<u8>,
    total: u64,
}

struct Stream {
    buffer: Arc<Mutex<Buffer>>,
    cap: usize,
}

impl Stream {
    fn read(mut pipe: impl Read + Send + 'static, cap: usize, done: mpsc::Sender<()>) -> Stream {
        let buffer = Arc::new(Mutex::new(Buffer::default()));
        let shared = Arc::clone(&buffer);
        thread::spawn(move || {
            let mut chunk = vec![0u8; 64 * 1024];
            loop {
                match pipe.read(&mut chunk) {
                    Ok(0) => break,
                    Ok(n) => {
                        let mut buf = shared.lock().unwrap_or_else(PoisonError::into_inner);
                        let room = cap.saturating_sub(buf.kept.len()).min(n);
                        buf.kept.extend_from_slice(&chunk[..room]);
                        buf.total += n as u64;
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            let _ = done.send(());
        });
        Stream { buffer, cap }
    }

    fn snapshot(&self) -> Captured {
        let buf = self.buffer.lock().unwrap_or_else(PoisonError::into_inner);
        let truncated = buf.total > self.cap as u64;
        let mut kept: &[u8] = &buf.kept;
        if truncated {
            kept = without_cut_character(kept);
        }
        Captured {
            text: String::from_utf8_lossy(kept).into_owned(),
            total_bytes: buf.total,
            truncated,
        }
    }
}

/// The bytes without a character the cap cut in half (it would decode as U+FFFD).
fn without_cut_character(bytes: &[u8]) -> &[u8] {
    match bytes.utf8_chunks().last() {
        Some(chunk) if !chunk.invalid().is_empty() && chunk.invalid().len() < 4 => {
            &bytes[..bytes.len() - chunk.invalid().len()]
        }
        _ => bytes,
    }
}

#[cfg(test)]
pub(crate) mod tests;
