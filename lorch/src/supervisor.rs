//! The agent supervisor (docs/lorch.md, "Supervision"): starts each agent in a process
//! group of its own, drains its stdout and stderr on threads (a chatty agent never blocks
//! on a full pipe), checks every line against the protocol, and hands the scheduler one
//! stream of [`Incoming`] items. Heartbeats and `log` lines go straight to
//! `logs/<agent>/run-<id>.ndjson`; events and bad lines go to the scheduler, which records
//! them in the ledger.
//!
//! Liveness, timeouts, backoff and the restart limit are decided by the scheduler with the
//! numbers kept here ([`Agent::last_heartbeat`], [`Agent::generation`]). A heartbeat is
//! taken where it is read, on the agent's reader thread, not queued with the events: a
//! flood of events that lorch records one by one (each synced to the ledger) must never
//! hide that an agent, flooding or idle, is alive.
//!
//! An agent runs in the workspace with lorch.json's `env` for it plus `LORCH_AGENT_TYPE`,
//! `LORCH_AGENT_ID` (`builder#1`, then `#2` after a restart), `LORCH_HEARTBEAT_INTERVAL_S`,
//! `LORCH_RUN_ID` and `LORCH_WORKSPACE`; the last two also let a resumed lorch recognize the
//! orphans of a crashed one.

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::io::{BufWriter, Read, Write};
use std::os::unix::fs::OpenOptionsExt as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::ndjson::LineReader;
use super::protocol::{AgentType, Message};
use super::safety::{self, redact};
use super::validate::{ProtocolError, validate};

/// What a reader thread hands the scheduler.
#[derive(Debug)]
pub struct Incoming {
    /// From which agent.
    pub agent: AgentType,
    /// From which start of it (messages of a killed instance are dropped).
    pub generation: u32,
    /// What it said.
    pub item: Item,
}

/// One item of an agent's stdout.
#[derive(Debug)]
pub enum Item {
    /// A valid event (heartbeats and logs go to the agent's log; a heartbeat also moves
    /// [`Agent::last_heartbeat`], at once).
    Event(Box<Message>),
    /// A line that is not a valid message; `line` is its start, for the record.
    Bad(ProtocolError, String),
    /// Stdout closed: the agent exited or is about to.
    Eof,
}

/// A running agent.
#[derive(Debug)]
pub struct Agent {
    /// Its role.
    pub agent_type: AgentType,
    /// The process (leader of its own process group).
    pub child: Child,
    /// Its stdin, where commands go.
    pub stdin: Option<ChildStdin>,
    /// Which start this is (0 first).
    pub generation: u32,
    /// When it last gave a heartbeat (or started), set by its reader thread.
    heartbeat: Arc<Mutex<Instant>>,
}

/// How to start an agent.
#[derive(Debug, Clone)]
pub struct Spawn<'a> {
    /// Its role.
    pub agent_type: AgentType,
    /// The command line.
    pub cmd: &'a [String],
    /// Extra environment.
    pub env: &'a BTreeMap<String, String>,
    /// Heartbeat interval, told to the agent.
    pub heartbeat_interval: Duration,
    /// The workspace (its working directory).
    pub workspace: &'a Path,
    /// The run.
    pub run_id: &'a str,
    /// Where its logs go.
    pub log_dir: PathBuf,
    /// Longest line.
    pub max_line: usize,
    /// Values to redact from its logs.
    pub secrets: &'a [String],
    /// Which start this is.
    pub generation: u32,
}

impl Spawn<'_> {
    /// Starts the agent and its reader threads.
    pub fn start(&self, tx: &Sender<Incoming>) -> std::io::Result<Agent> {
        let (program, args) = self
            .cmd
            .split_first()
            .ok_or_else(|| std::io::Error::other("empty agent command"))?;
        safety::create_private_dir(&self.log_dir)?;
        let mut child = Command::new(program)
            .args(args)
            .current_dir(self.workspace)
            .envs(self.env)
            .env("LORCH_AGENT_TYPE", self.agent_type.as_str())
            .env(
                "LORCH_AGENT_ID",
                format!("{}#{}", self.agent_type, self.generation + 1),
            )
            .env(
                "LORCH_HEARTBEAT_INTERVAL_S",
                self.heartbeat_interval.as_secs_f64().to_string(),
            )
            .env("LORCH_RUN_ID", self.run_id)
            .env("LORCH_WORKSPACE", self.workspace)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own group: lorch can stop the agent and whatever it started (an LLM CLI)
            // as one, and a terminal's Ctrl-C reaches lorch, which decides.
            .process_group(0)
            .spawn()?;
        let stdout = child.stdout.take();
        let stderr = child.stderr.take();
        let heartbeat = Arc::new(Mutex::new(Instant::now()));
        let log = self.log_dir.join(format!("run-{}.ndjson", self.run_id));
        let err_log = self.log_dir.join(format!("run-{}.stderr", self.run_id));
        if let Some(stdout) = stdout {
            let tx = tx.clone();
            let reader = Reader {
                agent: self.agent_type,
                generation: self.generation,
                max: self.max_line,
                secrets: self.secrets.to_vec(),
                heartbeat: Arc::clone(&heartbeat),
            };
            std::thread::spawn(move || reader.read_stdout(stdout, &log, &tx));
        }
        if let Some(stderr) = stderr {
            let secrets = self.secrets.to_vec();
            std::thread::spawn(move || drain_stderr(stderr, &err_log, &secrets));
        }
        Ok(Agent {
            agent_type: self.agent_type,
            stdin: child.stdin.take(),
            child,
            generation: self.generation,
            heartbeat,
        })
    }
}

fn open_log(path: &Path) -> Option<BufWriter<std::fs::File>> {
    OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .open(path)
        .ok()
        .map(BufWriter::new)
}

/// What reads one agent's stdout.
struct Reader {
    agent: AgentType,
    generation: u32,
    max: usize,
    secrets: Vec<String>,
    heartbeat: Arc<Mutex<Instant>>,
}

impl Reader {
    /// Reads stdout to its end as fast as it comes: each line validated, heartbeats and logs
    /// written to the agent's log (buffered, not synced: liveness data, not the ledger), a
    /// heartbeat's time kept at once; events and bad lines sent to the scheduler.
    fn read_stdout(&self, stdout: impl Read, log: &Path, tx: &Sender<Incoming>) {
        let mut log = open_log(log);
        let send = |item| {
            tx.send(Incoming {
                agent: self.agent,
                generation: self.generation,
                item,
            })
        };
        let mut reader = LineReader::with_limit(stdout, self.max);
        while let Some(line) = reader.read_line() {
            let item = match line {
                Ok(bytes) => match validate(&bytes) {
                    Ok(message @ (Message::Heartbeat(_) | Message::Log(_))) => {
                        if let Some(log) = log.as_mut() {
                            let text = String::from_utf8_lossy(&bytes);
                            let _ = writeln!(log, "{}", redact(&text, &self.secrets));
                            let _ = log.flush();
                        }
                        if matches!(message, Message::Heartbeat(_)) {
                            *self
                                .heartbeat
                                .lock()
                                .unwrap_or_else(PoisonError::into_inner) = Instant::now();
                        }
                        continue;
                    }
                    Ok(message) => Item::Event(Box::new(message)),
                    Err(e) => {
                        let start = String::from_utf8_lossy(&bytes[..bytes.len().min(512)]);
                        Item::Bad(e, start.into_owned())
                    }
                },
                Err(super::ndjson::ReadError::Protocol(e)) => Item::Bad(e, String::new()),
                Err(_) => break,
            };
            if send(item).is_err() {
                return;
            }
        }
        let _ = send(Item::Eof);
    }
}

fn drain_stderr(mut stderr: impl Read, path: &Path, secrets: &[String]) {
    let mut log = open_log(path);
    let mut buf = [0u8; 8192];
    loop {
        match stderr.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if let Some(log) = log.as_mut() {
                    let text = String::from_utf8_lossy(&buf[..n]);
                    let _ = log.write_all(redact(&text, secrets).as_bytes());
                    let _ = log.flush();
                }
            }
        }
    }
}

impl Agent {
    /// Writes one line to the agent's stdin.
    pub fn send(&mut self, line: &str) -> std::io::Result<()> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| std::io::Error::other("stdin closed"))?;
        stdin.write_all(format!("{line}\n").as_bytes())?;
        stdin.flush()
    }

    /// When it last gave a heartbeat (or started).
    pub fn last_heartbeat(&self) -> Instant {
        *self
            .heartbeat
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The process id (also its process group).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Kills the agent's process group and reaps it.
    pub fn kill(&mut self) {
        self.stdin = None;
        kill_group(self.pid() as i32, libc::SIGKILL);
        let _ = self.child.wait();
    }

    /// Closes stdin (the protocol's "no more commands"), waits up to `grace`, then kills.
    pub fn stop(&mut self, grace: Duration) {
        self.stdin = None;
        let until = Instant::now() + grace;
        while Instant::now() < until {
            if let Ok(Some(_)) = self.child.try_wait() {
                kill_group(self.pid() as i32, libc::SIGKILL);
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.kill();
    }
}

impl Agent {
    /// Stops the agent now (an abort): SIGTERM to its process group, up to `grace` for it to
    /// go, then SIGKILL to the group.
    pub fn terminate(&mut self, grace: Duration) {
        self.stdin = None;
        kill_group(self.pid() as i32, libc::SIGTERM);
        let until = Instant::now() + grace;
        while Instant::now() < until {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.kill();
    }
}

/// Kills every process that still belongs to run `run_id` and returns their pids: the
/// processes whose environment has `LORCH_RUN_ID=<run_id>`, which lorch gives its agents and
/// they pass on to the models and checks they start, whatever process group those made
/// for themselves (a model's helper outlives the model's group leader, which the agent's
/// `PR_SET_PDEATHSIG` kills). lorch itself is never one: it does not have the variable.
pub fn kill_run_leftovers(run_id: &str) -> Vec<u32> {
    let marker = format!("LORCH_RUN_ID={run_id}");
    let mut killed: Vec<u32> = Vec::new();
    // A process may start another while it is being killed: look again until none is left
    // (a few rounds; a killed process leaves /proc's environ readable no more).
    for _ in 0..20 {
        let found = processes_with(&marker);
        if found.is_empty() {
            break;
        }
        for pid in found {
            // SAFETY: kill(2) has no memory effects.
            unsafe {
                libc::kill(pid as i32, libc::SIGKILL);
            }
            if !killed.contains(&pid) {
                killed.push(pid);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    killed.sort_unstable();
    killed
}

/// The processes (other than this one) whose environment holds `var` (`NAME=value`).
fn processes_with(var: &str) -> Vec<u32> {
    let me = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| *pid != me)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|raw| raw.split(|b| *b == 0).any(|v| v == var.as_bytes()))
        })
        .collect()
}

/// Makes lorch the reaper of what its agents leave: a model (or a check) whose agent died
/// is handed to lorch instead of to init, which in a container is often a program that
/// reaps nothing, so that [`reap_orphans`] can collect it. Best effort: without it, orphans
/// go to init as before.
/// Called by the `lorch` binary only ([`crate::cli`]): a program that drives a run
/// in-process has children of its own, which lorch must not reap.
pub fn adopt_orphans() {
    // SAFETY: prctl(PR_SET_CHILD_SUBREAPER) only sets a flag of this process.
    let set = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    if set == 0 {
        ADOPTING.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Whether [`adopt_orphans`] made this process the reaper of its descendants.
static ADOPTING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Reaps every child lorch has left once its agents are stopped and the run's leftovers
/// killed (orphaned models and checks handed to it by [`adopt_orphans`]), so that no
/// zombie outlives the run; waits up to `grace` for those still dying.
pub fn reap_orphans(grace: Duration) {
    if !ADOPTING.load(std::sync::atomic::Ordering::SeqCst) {
        return;
    }
    let until = Instant::now() + grace;
    loop {
        let mut status = 0;
        // SAFETY: waitpid(2) writes only `status`.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        match pid {
            p if p > 0 => continue,
            // Children are left, none has ended yet: they were killed, give them a moment.
            0 if Instant::now() < until => std::thread::sleep(Duration::from_millis(10)),
            // No child left (ECHILD), or the grace is over.
            _ => break,
        }
    }
}

/// Sends `signal` to process group `pgid`.
pub fn kill_group(pgid: i32, signal: i32) {
    if pgid > 1 {
        // SAFETY: kill(2) has no memory effects; a negative pid names the group.
        unsafe {
            libc::kill(-pgid, signal);
        }
    }
}

/// Whether process `pid` is an agent lorch started for `run_id` as `agent`: its environment
/// says so (lorch sets `LORCH_RUN_ID` and `LORCH_AGENT_TYPE`), so a recycled pid is never
/// mistaken for an orphaned agent.
pub fn is_our_agent(pid: u32, run_id: &str, agent: AgentType) -> bool {
    let Ok(raw) = std::fs::read(format!("/proc/{pid}/environ")) else {
        return false;
    };
    let run = format!("LORCH_RUN_ID={run_id}");
    let role = format!("LORCH_AGENT_TYPE={agent}");
    let vars: Vec<&[u8]> = raw.split(|b| *b == 0).collect();
    vars.contains(&run.as_bytes()) && vars.contains(&role.as_bytes())
}

/// A random number (for backoff jitter and ids): std's randomly keyed hasher over the time.
pub fn random() -> u64 {
    use std::hash::{BuildHasher as _, Hasher as _};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    hasher.finish()
}
