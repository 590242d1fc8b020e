//! The durable records (docs/lorch.md, "What is recorded, and what survives a crash"), in
//! the folder [`crate::records`] chooses (the workspace, or
//! its `.lorch/` when the project has folders of those names): the ledger `events/run-<id>.ndjson`,
//! `receipts/<task>/step-<n>.json`, `state/run.json` and `state/index.json`,
//! `snapshots/snap-XXXX.manifest.json`, the agents' logs `logs/<agent>/run-<id>.ndjson` and
//! the transcript `transcripts/run-<id>.txt`.
//!
//! Every write goes through [`safety`] (0600 files in 0700 folders, atomic or synced appends)
//! and every line lorch records is redacted first. Each durable write also counts
//! towards `LORCH_CRASH_AFTER_WRITES`, a test hook that SIGKILLs lorch right after the N-th
//! write, so the resume tests can stop a run at every moment that matters.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;
use serde_json::Value;

use super::protocol::{Message, Timestamp, Version};
use super::safety::{self, naming, redact};

/// The environment variable of the crash hook.
pub const CRASH_ENV: &str = "LORCH_CRASH_AFTER_WRITES";

static WRITES: AtomicU64 = AtomicU64::new(0);
static CRASH_AFTER: LazyLock<Option<u64>> =
    LazyLock::new(|| std::env::var(CRASH_ENV).ok().and_then(|v| v.parse().ok()));

/// Counts one durable write; with the crash hook set, dies by SIGKILL after the N-th, as a
/// power cut or `kill -9` would stop lorch (no destructor, no flush).
fn wrote() {
    let n = WRITES.fetch_add(1, Ordering::SeqCst) + 1;
    if *CRASH_AFTER == Some(n) {
        // SAFETY: kill(2) on our own pid has no memory effects.
        unsafe {
            libc::kill(libc::getpid(), libc::SIGKILL);
        }
    }
}

/// The ledger of run `run_id`.
pub fn ledger_path(workspace: &Path, run_id: &str) -> PathBuf {
    super::records::root(workspace)
        .join("events")
        .join(format!("run-{run_id}.ndjson"))
}

/// What to tell someone who named a run that is not here: the runs that are (their ids,
/// newest last), and how to resume one.
pub fn known_runs(workspace: &Path) -> String {
    let mut ids: Vec<String> = std::fs::read_dir(super::records::root(workspace).join("events"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let id = name.strip_prefix("run-")?.strip_suffix(".ndjson")?;
            Some(id.to_owned())
        })
        .collect();
    ids.sort();
    if ids.is_empty() {
        "there is no run in this workspace: start one with `lorch run --task ID`".to_owned()
    } else {
        format!(
            "the runs here are {}: `lorch resume --run ID` with one of them",
            ids.join(", ")
        )
    }
}

/// `state/run.json`.
pub fn state_path(workspace: &Path) -> PathBuf {
    super::records::root(workspace)
        .join("state")
        .join("run.json")
}

/// A run's receipt of step `step`.
pub fn receipt_path(workspace: &Path, task_id: &str, step: u32) -> PathBuf {
    super::records::root(workspace)
        .join("receipts")
        .join(task_id)
        .join(format!("step-{step}.json"))
}

/// Where lorch writes what one run records.
#[derive(Debug, Clone)]
pub struct Store {
    /// The workspace.
    pub workspace: PathBuf,
    /// Where the record folders are ([`crate::records::root`] of the workspace, settled
    /// once when the run starts).
    pub records: PathBuf,
    /// The run.
    pub run_id: String,
    /// Values never written anywhere (secrets).
    pub secrets: Vec<String>,
}

impl Store {
    /// The ledger file.
    pub fn ledger(&self) -> PathBuf {
        self.records
            .join("events")
            .join(format!("run-{}.ndjson", self.run_id))
    }

    /// The console transcript's copy, `transcripts/run-<id>.txt`.
    pub fn transcript(&self) -> PathBuf {
        self.records
            .join("transcripts")
            .join(format!("run-{}.txt", self.run_id))
    }

    /// `text` without secrets.
    pub fn redact(&self, text: &str) -> String {
        redact(text, &self.secrets)
    }

    /// Appends `message` to the ledger, redacted, synced before returning.
    pub fn record(&self, message: &Message) -> io::Result<()> {
        let line = serde_json::to_string(message).map_err(io::Error::other)?;
        let ledger = self.ledger();
        safety::append_line(&ledger, &self.redact(&line)).map_err(naming(&ledger))?;
        wrote();
        Ok(())
    }

    /// Writes a JSON document atomically (0600).
    pub fn write_json<T: Serialize>(&self, path: &Path, value: &T) -> io::Result<()> {
        let mut text = serde_json::to_string_pretty(value).map_err(io::Error::other)?;
        text.push('\n');
        safety::atomic_write(path, self.redact(&text).as_bytes()).map_err(naming(path))?;
        wrote();
        Ok(())
    }

    /// The folder of one agent's logs (heartbeats, log lines, stderr).
    pub fn log_dir(&self, agent: &str) -> PathBuf {
        self.records.join("logs").join(agent)
    }
}

/// Cuts a last line left incomplete by a crash in the middle of an append (a torn write),
/// so that the next append starts a line of its own. Says whether it cut anything.
pub fn repair_ledger(path: &Path) -> io::Result<bool> {
    let bytes = std::fs::read(path)?;
    if bytes.is_empty() || bytes.ends_with(b"\n") {
        return Ok(false);
    }
    let keep = bytes
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |at| at + 1);
    let file = std::fs::OpenOptions::new().write(true).open(path)?;
    file.set_len(keep as u64)?;
    file.sync_all()?;
    Ok(true)
}

/// The ledger's messages in order. A last line cut by a crash mid-append is left out; any
/// other line that does not read is an error (the ledger is lorch's own, always valid).
pub fn read_ledger(path: &Path) -> io::Result<Vec<Message>> {
    let text = std::fs::read_to_string(path)?;
    let mut messages = Vec::new();
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    for (i, line) in lines.iter().enumerate() {
        let complete = line.ends_with('\n');
        match super::validate::validate(line.trim_end_matches('\n').as_bytes()) {
            Ok(message) => messages.push(message),
            Err(_) if !complete && i + 1 == lines.len() => {}
            Err(e) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{}:{}: {e}", path.display(), i + 1),
                ));
            }
        }
    }
    Ok(messages)
}

/// Takes a snapshot of the workspace and the version commands are pinned to
/// ([`crate::version`]); writes its manifest to `snapshots/<id>.manifest.json` (the id is of
/// the manifest's bytes, so one id, one content) and a copy of the spec `spec` as it is to
/// [`spec_copy_path`] (so that `lorch validate --run` can tell afterwards what the run did
/// to it), and returns the version.
pub fn take_snapshot(store: &Store, spec: Option<&str>) -> io::Result<Version> {
    let (version, bytes) = crate::version::version_of(&store.workspace, spec)?;
    let path = store
        .records
        .join("snapshots")
        .join(format!("{}.manifest.json", version.snapshot_id));
    if !path.exists() {
        safety::atomic_write(&path, &bytes).map_err(naming(&path))?;
        wrote();
    }
    if let (Some(spec), Some(hash)) = (spec, &version.specs_hash) {
        let copy = spec_copy_in(&store.records, hash);
        if !copy.exists()
            && let Some(bytes) = crate::version::spec_bytes(&store.workspace, spec)?
        {
            safety::atomic_write(&copy, &bytes).map_err(naming(&copy))?;
            wrote();
        }
    }
    Ok(version)
}

/// Where [`take_snapshot`] keeps the spec whose `specs_hash` is `hash`.
pub fn spec_copy_path(workspace: &Path, hash: &str) -> PathBuf {
    spec_copy_in(&super::records::root(workspace), hash)
}

fn spec_copy_in(records: &Path, hash: &str) -> PathBuf {
    let hex = hash.strip_prefix("sha256:").unwrap_or(hash);
    records.join("snapshots").join(format!("spec-{hex}.md"))
}

/// A new run id: UTC date and time and a random suffix, `20251019-181000-3fa2`.
pub fn new_run_id() -> String {
    let now = Timestamp::now().0;
    let text = humantime::format_rfc3339_seconds(now).to_string();
    let digits: String = text
        .chars()
        .filter(|c| c.is_ascii_digit() || *c == 'T')
        .collect();
    let stamp = digits.replace('T', "-");
    format!("{stamp}-{:04x}", super::supervisor::random() & 0xffff)
}

/// Reads a JSON file, `None` when absent.
pub fn read_json(path: &Path) -> io::Result<Option<Value>> {
    match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// One lorch per workspace: an exclusive `flock` on `state/lock`, held while a run or a
/// resume goes on. The kernel drops it when the process ends, however it ends, so a crash
/// never leaves a stale lock; the file is opened close-on-exec, so agents do not inherit it.
#[derive(Debug)]
pub struct WorkspaceLock {
    _file: std::fs::File,
}

/// Takes the workspace lock, or says which process holds it.
pub fn lock_workspace(workspace: &Path) -> io::Result<WorkspaceLock> {
    use std::io::{Read as _, Seek as _, Write as _};
    use std::os::unix::fs::OpenOptionsExt as _;
    let dir = super::records::root(workspace).join("state");
    safety::create_private_dir(&dir)?;
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(dir.join("lock"))?;
    if rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_err() {
        let mut holder = String::new();
        let _ = file.read_to_string(&mut holder);
        return Err(io::Error::new(
            io::ErrorKind::WouldBlock,
            format!(
                "another lorch (pid {}) is running in this workspace",
                holder.trim()
            ),
        ));
    }
    file.set_len(0)?;
    file.rewind()?;
    write!(file, "{}", std::process::id())?;
    Ok(WorkspaceLock { _file: file })
}
