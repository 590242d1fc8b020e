//! Which loaf.yml governs (docs/loaf-yml.md, "A loaf.yml a reply writes waits for you"): the
//! last one the user accepted. A change a reply or an agent's turn makes that widens what
//! code may do waits for `git loaf config accept`; a narrowing applies at once.
//!
//! The loaf.yml in the working tree is the user's, and governs at once, when
//! - it is the text accepted last (`git loaf config accept`, or seen earlier as the user's);
//! - it is HEAD's and the newest commit that changed it is the user's own (no `Loaf-Apply`
//!   or `Loaf-Squash` trailer: not an apply, a recorded turn or a squash of them);
//! - it differs from HEAD's, no agent turn is being recorded, and it is not the text an
//!   apply or a turn last left there (an edit of the user's own: a reply's code cannot write
//!   the user's tree, and its file actions write through the stage and a commit).
//!
//! Otherwise a reply or an agent wrote it: it governs only if it widens nothing
//! ([`crate::config::widenings`]); if it does, the accepted text governs and the change
//! waits. The record of what was accepted is `loaf/config-accepted.json` in the git dir (one
//! per working tree), which a reply's code cannot write (the git dir is read-only inside the
//! sandbox). A repository without a record starts from the newest loaf.yml a commit of the
//! user's wrote on HEAD's first-parent history (none: no loaf.yml, the defaults).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::config::{Config, ConfigError, FILE_NAME, widenings};
use crate::git::Repository;
use crate::git::commit::parse_trailers;
use crate::git::file_history;
use crate::tx::session::TxError;

/// The record, inside the repository's common git dir (a linked worktree's: [`Record::path`]).
const RECORD: &str = "loaf/config-accepted.json";

/// Why the governing loaf.yml could not be found.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    /// A loaf.yml that must be used does not load.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Reading HEAD's history failed.
    #[error("git: {}", crate::git::words::plain(.0))]
    Git(#[from] git2::Error),
    /// The record of the accepted loaf.yml cannot be written.
    #[error("cannot write {}: {error}", path.display())]
    Record {
        /// The record.
        path: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
}

impl From<TrustError> for TxError {
    fn from(error: TrustError) -> TxError {
        match error {
            TrustError::Config(e) => TxError::Config(e),
            TrustError::Git(e) => TxError::Git(e),
            record @ TrustError::Record { .. } => TxError::Invalid {
                message: record.to_string(),
                hint: "make the repository's .git/loaf folder writable, then run the command again"
                    .into(),
            },
        }
    }
}

/// The loaf.yml that governs, and the change that waits for the user, if any.
#[derive(Debug, Clone)]
pub struct Governing {
    /// The configuration in force.
    pub config: Config,
    /// The loaf.yml text of the working tree (`None`: no file).
    pub working: Option<String>,
    /// The text accepted last (`None`: no file, the defaults).
    pub accepted: Option<String>,
    /// What the working tree's loaf.yml widens, when it waits for the user.
    pub pending: Option<Pending>,
}

/// A change to loaf.yml that widens what code may do and waits for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    /// What it widens, one line each.
    pub widenings: Vec<String>,
}

impl Pending {
    /// The line every report shows while the change waits.
    pub fn message(&self) -> String {
        format!(
            "a change to loaf.yml waits for the user, because it widens what code may do ({}); until it is accepted the loaf.yml the user accepted last governs. `git loaf config` shows it, `git loaf config accept` accepts it",
            self.widenings.join("; ")
        )
    }
}

/// What `git loaf config accept` did.
#[derive(Debug, Clone)]
pub struct Acceptance {
    /// The difference from the text accepted before to the one accepted now, as a unified
    /// diff; empty when nothing was waiting.
    pub diff: String,
    /// What the accepted text widens (empty: it was a narrowing, or nothing changed).
    pub widenings: Vec<String>,
}

/// What git-loaf keeps about loaf.yml.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Record {
    /// The text accepted last; absent before anything was accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    accepted: Option<Version>,
    /// [`fingerprint`] of the text an apply or an agent's turn last left in the working tree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    written: Option<String>,
}

/// One version of loaf.yml.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Version {
    /// Its text; `None`: no loaf.yml.
    text: Option<String>,
}

/// The loaf.yml that governs in `repo` (whose working tree is `root`), learning on the way
/// a version that is the user's (it is recorded as accepted). For an operation that holds
/// the lock; [`peek`] for one that only reads.
pub(crate) fn governing(repo: &Repository, root: &Path) -> Result<Governing, TrustError> {
    find_governing(repo, root, true)
}

/// [`governing`], recording nothing: for commands that change nothing (`instructions`,
/// `apply --dry-run`, `config`). It finds what [`governing`] finds: the record only keeps
/// what the repository's state shows at that moment.
pub(crate) fn peek(repo: &Repository, root: &Path) -> Result<Governing, TrustError> {
    find_governing(repo, root, false)
}

fn find_governing(repo: &Repository, root: &Path, learn: bool) -> Result<Governing, TrustError> {
    let working = read_working(root)?;
    let mut record = Record::load(repo);
    let mut accepted = record.accepted.clone();
    if accepted.as_ref().map(|v| &v.text) != Some(&working)
        && written_by_user(repo, working.as_deref(), &record)?
    {
        accepted = Some(Version {
            text: working.clone(),
        });
    }
    let accepted = match accepted {
        Some(version) => version,
        None => first_accepted(repo)?,
    };
    if learn && record.accepted.as_ref() != Some(&accepted) {
        record.accepted = Some(accepted.clone());
        record.save(repo)?;
    }
    let accepted = accepted.text;
    let widened = if accepted == working {
        Vec::new()
    } else {
        widenings(accepted.as_deref(), working.as_deref(), root)
    };
    let (governs, pending) = match widened.is_empty() {
        true => (&working, None),
        false => (&accepted, Some(Pending { widenings: widened })),
    };
    let config = match governs {
        Some(text) => Config::parse(text, root)?,
        None => Config::default_for(root),
    };
    Ok(Governing {
        config,
        working,
        accepted,
        pending,
    })
}

/// `git loaf config`: the loaf.yml that governs in the repository containing `cwd`, and the
/// change that waits, if any.
pub fn show(cwd: &Path) -> Result<Governing, TxError> {
    let repo = crate::tx::session::open(cwd, "config")?;
    let root: PathBuf = repo.workdir().ok_or(TxError::Bare)?.components().collect();
    Ok(peek(&repo, &root)?)
}

/// `git loaf config accept`, with the operation lock held (an apply reads the record under
/// it): [`accept`] in the repository containing `cwd`.
pub(crate) fn accept_here(cwd: &Path) -> Result<Acceptance, TxError> {
    let session = crate::tx::session::Session::begin(cwd, "config accept")?;
    Ok(accept(&session.repo, &session.root)?)
}

/// [`load`], an unusable loaf.yml an error that says how to fix it (exit 2 on the command
/// line).
pub fn load_or_explain(root: &Path) -> Result<Config, super::OpError> {
    load(root).map_err(|e| {
        super::OpError::usage(
            e.to_string(),
            "fix loaf.yml (see loaf.yml.example for every key), or move it away to use the defaults",
        )
    })
}

/// The configuration that governs in the repository whose working tree is `root`; outside
/// a repository (`apply --no-commit` in a plain folder), `root`'s loaf.yml as it is.
pub fn load(root: &Path) -> Result<Config, TrustError> {
    match crate::git::repo::discover(root) {
        Ok(repo) if repo.workdir().is_some() => Ok(peek(&repo, root)?.config),
        _ => Ok(Config::load(root)?),
    }
}

/// Records that an apply or an agent's turn left the working tree's loaf.yml as it is now,
/// if it differs from `before` (its text when the operation began): the text is then
/// theirs, not the user's, until the user accepts it or changes it.
pub(crate) fn note_written(
    repo: &Repository,
    root: &Path,
    before: Option<&str>,
) -> Result<(), TrustError> {
    match read_working(root)?.as_deref() == before {
        true => Ok(()),
        false => note_written_now(repo, root),
    }
}

/// Records that an apply or an agent's turn wrote the working tree's loaf.yml as it is now.
pub(crate) fn note_written_now(repo: &Repository, root: &Path) -> Result<(), TrustError> {
    let now = read_working(root)?;
    let mut record = Record::load(repo);
    record.written = Some(fingerprint(now.as_deref()));
    record.save(repo)
}

/// `git loaf config accept`: the working tree's loaf.yml becomes the accepted one. A text
/// that does not load is refused (it would stop every apply).
pub fn accept(repo: &Repository, root: &Path) -> Result<Acceptance, TrustError> {
    let governing = governing(repo, root)?;
    if governing.working == governing.accepted {
        return Ok(Acceptance {
            diff: String::new(),
            widenings: Vec::new(),
        });
    }
    if let Some(text) = &governing.working {
        Config::parse(text, root)?;
    }
    let mut record = Record::load(repo);
    record.accepted = Some(Version {
        text: governing.working.clone(),
    });
    record.save(repo)?;
    Ok(Acceptance {
        diff: difference(governing.accepted.as_deref(), governing.working.as_deref()),
        widenings: governing.pending.map(|p| p.widenings).unwrap_or_default(),
    })
}

/// The unified diff from the accepted text to the working tree's.
pub fn difference(accepted: Option<&str>, working: Option<&str>) -> String {
    similar::TextDiff::from_lines(accepted.unwrap_or(""), working.unwrap_or(""))
        .unified_diff()
        .header("loaf.yml (accepted)", "loaf.yml")
        .to_string()
}

/// Whether the user wrote the working tree's loaf.yml (`working`); see the module's doc.
fn written_by_user(
    repo: &Repository,
    working: Option<&str>,
    record: &Record,
) -> Result<bool, TrustError> {
    let head = file_history::at_head(repo, FILE_NAME)?;
    if head.as_deref() == working.map(str::as_bytes) {
        let newest = file_history::newest_change(repo, FILE_NAME, |_| true)?;
        return Ok(newest.is_none_or(|change| !by_git_loaf(&change.message)));
    }
    if crate::tx::turn::any_begun(repo)? {
        return Ok(false);
    }
    Ok(record.written.as_deref() != Some(fingerprint(working).as_str()))
}

/// The version to start from without a record: the newest a commit of the user's wrote.
fn first_accepted(repo: &Repository) -> Result<Version, TrustError> {
    let users = file_history::newest_change(repo, FILE_NAME, |m| !by_git_loaf(m))?;
    Ok(Version {
        text: users
            .and_then(|change| change.content)
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned()),
    })
}

/// Whether a commit message is git-loaf's: an apply, a recorded turn or a squash of them.
fn by_git_loaf(message: &str) -> bool {
    parse_trailers(message)
        .iter()
        .any(|(key, _)| key == "Loaf-Apply" || key == crate::git::commit::SQUASH_TRAILER)
}

/// The working tree's loaf.yml (`None`: no file).
fn read_working(root: &Path) -> Result<Option<String>, ConfigError> {
    let path = root.join(FILE_NAME);
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok(Some(text)),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(ConfigError::Read { path, error }),
    }
}

/// A short stand-in for a version's text.
fn fingerprint(text: Option<&str>) -> String {
    match text {
        Some(text) => Sha256::digest(text.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect(),
        None => "none".to_owned(),
    }
}

impl Record {
    /// One record per working tree (each may have its own loaf.yml): the main one's is
    /// [`RECORD`], a linked worktree's carries its name.
    fn path(repo: &Repository) -> PathBuf {
        let main = repo.commondir().join(RECORD);
        match repo.path().file_name().filter(|_| repo.is_worktree()) {
            Some(name) => {
                main.with_file_name(format!("config-accepted-{}.json", name.to_string_lossy()))
            }
            None => main,
        }
    }

    /// The record; a missing or unreadable one is no record (the start is then worked out
    /// again from history, which never trusts more than the user's own commits).
    fn load(repo: &Repository) -> Record {
        std::fs::read(Record::path(repo))
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    /// Writes the record whole (a crash leaves the old one or the new one) and durably.
    fn save(&self, repo: &Repository) -> Result<(), TrustError> {
        let path = Record::path(repo);
        let failed = |error: std::io::Error| TrustError::Record {
            path: path.clone(),
            error,
        };
        let dir = path.parent().unwrap_or(&path);
        std::fs::create_dir_all(dir).map_err(failed)?;
        let mut file = tempfile::NamedTempFile::new_in(dir).map_err(failed)?;
        serde_json::to_writer(&mut file, self).map_err(|e| failed(e.into()))?;
        file.as_file().sync_all().map_err(failed)?;
        file.persist(&path).map_err(|e| failed(e.error))?;
        crate::git::durable::sync_dir(dir).map_err(failed)
    }
}
