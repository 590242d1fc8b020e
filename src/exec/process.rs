//! Running a child process for `exec` and hooks: in its own process group, with a timeout
//! that kills the whole group, and each output stream capped.

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What a finished (or killed) process left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    /// Exit code; `None` when killed by a signal (a timeout included).
    pub exit_code: Option<i32>,
    /// Standard output, decoded lossily, at most the cap.
    pub stdout: String,
    /// Standard error, likewise.
    pub stderr: String,
    /// Whether stdout was longer than the cap.
    pub stdout_truncated: bool,
    /// Whether stderr was longer than the cap.
    pub stderr_truncated: bool,
    /// Whether the timeout killed it.
    pub timed_out: bool,
}

/// How often a running child is polled.
const POLL: Duration = Duration::from_millis(5);
/// How long to wait for output pipes to close once the process group is gone.
const PIPE_GRACE: Duration = Duration::from_millis(500);

/// Runs `command` (stdin closed) in a new process group; after `timeout` the whole group is
/// killed. Processes the command left behind in its group are killed when it exits, so a
/// background child can neither outlive it nor hold its output open.
pub fn run(
    mut command: Command,
    timeout: Duration,
    max_output: usize,
) -> std::io::Result<Finished> {
    use std::os::unix::process::CommandExt as _;
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = command.spawn()?;
    let stdout = child.stdout.take().map(|s| capture(s, max_output));
    let stderr = child.stderr.take().map(|s| capture(s, max_output));
    let (status, timed_out) = wait(&mut child, timeout)?;
    kill_group(child.id());
    let deadline = Instant::now() + PIPE_GRACE;
    let (stdout, stdout_truncated) = collect(stdout, deadline);
    let (stderr, stderr_truncated) = collect(stderr, deadline);
    Ok(Finished {
        exit_code: if timed_out {
            None
        } else {
            status.and_then(|s| s.code())
        },
        stdout,
        stderr,
        stdout_truncated,
        stderr_truncated,
        timed_out,
    })
}

fn wait(
    child: &mut Child,
    timeout: Duration,
) -> std::io::Result<(Option<std::process::ExitStatus>, bool)> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok((Some(status), false));
        }
        if Instant::now() >= deadline {
            kill_group(child.id());
            let _ = child.kill();
            return Ok((child.wait().ok(), true));
        }
        std::thread::sleep(POLL);
    }
}

/// SIGKILL to every process of the group led by `pid`. std cannot signal a group, so this
/// asks `kill(1)`; a group already gone is fine.
fn kill_group(pid: u32) {
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{pid}")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// Reads a stream to its end on a thread, keeping the first `max` bytes.
fn capture(mut stream: impl Read + Send + 'static, max: usize) -> JoinHandle<(Vec<u8>, bool)> {
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        let mut truncated = false;
        let mut buf = [0u8; 64 * 1024];
        loop {
            match stream.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let room = max.saturating_sub(kept.len());
                    kept.extend_from_slice(&buf[..n.min(room)]);
                    truncated |= n > room;
                }
            }
        }
        (kept, truncated)
    })
}

fn collect(handle: Option<JoinHandle<(Vec<u8>, bool)>>, deadline: Instant) -> (String, bool) {
    let Some(handle) = handle else {
        return (String::new(), false);
    };
    while !handle.is_finished() && Instant::now() < deadline {
        std::thread::sleep(POLL);
    }
    if !handle.is_finished() {
        // Something outside the group still holds the pipe: give up on the rest.
        return (String::new(), true);
    }
    match handle.join() {
        Ok((bytes, truncated)) => (String::from_utf8_lossy(&bytes).into_owned(), truncated),
        Err(_) => (String::new(), true),
    }
}
