//! Per-tool attribution in record mode (docs/agents.md): a change made during one of the agent's
//! tool calls is the agent's, one made between them the user's.
//!
//! The turn keeps two trees ([`ToolTrees`]): `agents`, the working tree as the last event
//! saw it, and `users`, the working tree at begin with only the user's changes laid on it.
//! A tool call's start lays what changed since `agents` (the user's work) on `users` and
//! moves `agents` to now; its end moves `agents` to now, so the call's own change widens the
//! gap between the two, which is what the turn's commit takes ([`super::record`]: the same
//! 3-way rule as an apply, `users` as the base).
//!
//! A tool that names its files (`Edit`, `Write`) costs reading those files only, at its
//! start and its end. Any other (a shell command) may write anywhere: its start only leaves
//! a mark (a file whose modification time the filesystem stamps), its end scans the tree
//! once (the checkpoint) and splits what changed since the last event by that stamp: a file
//! modified since the mark is the call's, one modified before it the user's (a deleted
//! file: by its folder's stamp). So a file the user changed between calls that the command
//! then changes too goes to the command whole; the pair costs one scan, about one
//! `git status`.
//!
//! No lock is taken (an agent waits on every tool event): each update is a compare-and-swap
//! of the turn's per-tool ref, retried when another event of the session came first. An
//! event for a session with no begun turn changes nothing.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::git::pack_write::Buffered;
use crate::git::quickscan;
use crate::git::treebuild::{self, Source, Value};
use crate::git::{Oid, Repository, treediff};
use crate::tx::checkpoint;
use crate::tx::merge::merge_entry;
use crate::tx::session::TxError;
use crate::tx::turn::{self, ToolTrees, Turn, Versioned};

/// How often an update is tried again when another event of the session updated the turn
/// between its read and its write.
const ATTEMPTS: usize = 8;

/// Which files a tool call may write, relative to nothing yet: as the event named them.
#[derive(Debug, Clone, Copy)]
pub enum Touched<'a> {
    /// Only these (absolute, or relative to the event's folder).
    Files(&'a [PathBuf]),
    /// Any file: the tree is scanned.
    Anything,
}

/// Which end of a tool call an event is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// The call begins: what changed since the last event is the user's.
    Start,
    /// The call ended: what changed since it began is the agent's.
    End,
}

/// What the tool event did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attributed {
    /// The turn's trees were updated (or already said it all).
    Recorded,
    /// The session has no begun turn: nothing to attribute.
    NoTurn,
}

/// A start or end of one of the agent's tool calls, in session `session`.
pub fn tool_event(
    cwd: &Path,
    session: &str,
    touched: Touched<'_>,
    phase: Phase,
) -> Result<Attributed, TxError> {
    let (repo, root) = open(cwd)?;
    let key = turn::session_key(session);
    let Touched::Files(files) = touched else {
        return shell_event(&repo, &key, phase);
    };
    let files = relative_files(&root, cwd, files);
    update_turn(&repo, &key, |repo, trees| {
        let now = Observed::Files(files_now(repo, &root, trees.agents, &files)?);
        match phase {
            Phase::Start => users_work_since(repo, trees, &now),
            Phase::End => Ok(Trees {
                agents: now.laid_on(repo, trees.agents)?,
                calls: trees.calls + 1,
                ..trees
            }),
        }
    })
}

/// A call of a tool that may write anywhere: its start leaves the mark, its end scans the
/// tree and gives what changed since the mark to the agent, the rest to the user.
fn shell_event(repo: &Repository, key: &str, phase: Phase) -> Result<Attributed, TxError> {
    let mark = mark_path(repo, key);
    if phase == Phase::Start {
        if turn::load_versioned(repo, key)?.is_none() {
            return Ok(Attributed::NoTurn);
        }
        leave_mark(&mark)?;
        return Ok(Attributed::Recorded);
    }
    // No mark (its start never came): all that changed since the last event is the call's.
    let since = std::fs::metadata(&mark).and_then(|m| m.modified()).ok();
    let root = repo.workdir().map(Path::to_path_buf).ok_or(TxError::Bare)?;
    let scanned = work_tree_now(repo, &root)?;
    let done = update_turn(repo, key, |repo, trees| {
        let changes = Observed::Tree(scanned).changes_since(repo, trees.agents)?;
        let users: Vec<(PathBuf, Value)> = changes
            .into_iter()
            .filter(|(path, _)| since.is_some_and(|mark| !modified_since(&root, path, mark)))
            .collect();
        let trees = users_work_since(repo, trees, &Observed::Files(users))?;
        Ok(Trees {
            agents: scanned,
            calls: trees.calls + 1,
            ..trees
        })
    });
    let _ = std::fs::remove_file(&mark);
    done
}

/// The working tree as `git add -A` would record it (a checkpoint's working tree): the
/// index's tree with what the quick scan found changed laid on it, the index file read as
/// git reads it (not through libgit2, which costs ~8 ms of CPU on 20,000 files);
/// a checkpoint where that scan cannot tell.
fn work_tree_now(repo: &Repository, root: &Path) -> Result<Oid, TxError> {
    let found = quickscan::on_index_file(repo)?;
    let file_mode = repo.config()?.get_bool("core.fileMode").unwrap_or(true);
    let Some(found) = found.filter(|_| file_mode) else {
        // libgit2's add_all knows what the scan leaves out (core.fileMode off, submodules).
        return Ok(checkpoint::take(repo)
            .map_err(TxError::from_checkpoint)?
            .work_tree);
    };
    // An untracked secret file stays out of the recorded tree, as in every checkpoint.
    let paths: Vec<PathBuf> = found
        .paths
        .iter()
        .map(|(bytes, tracked)| {
            (
                crate::git::repo::path_from_bytes(bytes).into_owned(),
                tracked,
            )
        })
        .filter(|(path, tracked)| **tracked || !crate::git::secret_files::is_secret(path))
        .map(|(path, _)| path)
        .collect();
    if paths.is_empty() {
        return Ok(found.index_tree);
    }
    // Converting a file's content looks up attributes and the file's own entry in the
    // index: a handle whose index holds just those entries spares reading the whole one.
    let filters = Repository::open(repo.path())?;
    filters.set_workdir(root, false)?;
    let mut lookups = git2::Index::new()?;
    for entry in &found.lookups {
        lookups.add(entry)?;
    }
    filters.set_index(&mut lookups)?;
    let buffered = Buffered::open(repo)?;
    let source = Source {
        repo: buffered.repo(),
        base: found.index_tree,
        root,
        filters: &filters,
        remember: true,
        objects_in_memory: Some(buffered.budget()),
    };
    let tree = treebuild::tree_with_paths(&source, &paths)?;
    buffered.keep(repo, Some(found.index_tree), tree)?;
    Ok(tree)
}

/// Forgets the mark of a shell call of session `key` whose end never came (a new turn
/// begins, or the turn ends): the next call's start leaves its own.
pub fn forget_mark(repo: &Repository, key: &str) {
    let _ = std::fs::remove_file(mark_path(repo, key));
}

/// Where the mark of session `key`'s running shell call is.
fn mark_path(repo: &Repository, key: &str) -> PathBuf {
    repo.commondir().join("loaf").join("tool-start").join(key)
}

/// Leaves the mark (an earlier one stays: with calls running side by side, the first one's
/// start counts).
fn leave_mark(mark: &Path) -> Result<(), TxError> {
    let io = |e: std::io::Error| TxError::Invalid {
        message: format!(
            "cannot mark the start of the tool call ({}): {e}",
            mark.display()
        ),
        hint: "check that the repository's .git folder is writable".into(),
    };
    if let Some(folder) = mark.parent() {
        std::fs::create_dir_all(folder).map_err(io)?;
    }
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(mark)
    {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(io(e)),
    }
}

/// Whether the file at `path` (or, when it is gone, the nearest folder above it that is
/// there) was modified at or after `mark`.
fn modified_since(root: &Path, path: &Path, mark: SystemTime) -> bool {
    let mut at = Some(root.join(path));
    while let Some(here) = at {
        if let Ok(meta) = std::fs::symlink_metadata(&here) {
            return meta.modified().is_ok_and(|t| t >= mark);
        }
        at = here
            .parent()
            .filter(|p| p.starts_with(root))
            .map(Path::to_path_buf);
    }
    true
}

/// Cursor's `afterFileEdit`: the agent edited `file`; its content before is the content now
/// with `edits` taken back (each edit's new text replaced by its old one, last edit first).
/// When they cannot be taken back (the file changed again since), the whole change since
/// the last event counts as the agent's.
pub fn file_edited(
    cwd: &Path,
    session: &str,
    file: &Path,
    edits: &[(String, String)],
) -> Result<Attributed, TxError> {
    let (repo, root) = open(cwd)?;
    let key = turn::session_key(session);
    let files = relative_files(&root, cwd, &[file.to_path_buf()]);
    let Some(path) = files.first() else {
        return Ok(Attributed::NoTurn);
    };
    let before = std::fs::read_to_string(root.join(path))
        .ok()
        .and_then(|now| taken_back(&now, edits));
    update_turn(&repo, &key, |repo, trees| {
        let now = files_now(repo, &root, trees.agents, &files)?;
        let trees = match &before {
            Some(text) => {
                let blob = crate::git::filters::blob(repo, path, text.clone().into_bytes())
                    .map_err(|e| TxError::Git(git2::Error::from_str(&e.to_string())))?;
                let mode = now
                    .first()
                    .and_then(|(_, v)| v.map(|(_, m)| m))
                    .unwrap_or(0o100644);
                let start = Observed::Files(vec![(path.clone(), Some((blob, mode)))]);
                users_work_since(repo, trees, &start)?
            }
            None => trees,
        };
        Ok(Trees {
            agents: Observed::Files(now).laid_on(repo, trees.agents)?,
            calls: trees.calls + 1,
            ..trees
        })
    })
}

/// The repository at `cwd` and its working tree's root. Objects written from now on are
/// this event's to make durable (no lock stamps the start: the clock does).
fn open(cwd: &Path) -> Result<(Repository, PathBuf), TxError> {
    let repo = Repository::discover(cwd).map_err(|_| TxError::NotARepository {
        path: cwd.to_path_buf(),
        command: "agent-hook".into(),
    })?;
    let root = repo.workdir().map(Path::to_path_buf).ok_or(TxError::Bare)?;
    crate::git::durable::mark_start(None);
    Ok((repo, root))
}

/// `now` with each edit's new text replaced by its old text, last edit first; `None` when
/// an edit's new text is not there (or is empty, which says nothing of where it was).
fn taken_back(now: &str, edits: &[(String, String)]) -> Option<String> {
    if edits.is_empty() {
        return None;
    }
    let mut text = now.to_owned();
    for (old, new) in edits.iter().rev() {
        if new.is_empty() {
            return None;
        }
        let at = text.find(new.as_str())?;
        text.replace_range(at..at + new.len(), old);
    }
    Some(text)
}

/// The per-tool trees of a turn, as ids.
#[derive(Debug, Clone, Copy)]
struct Trees {
    users: Oid,
    agents: Oid,
    calls: u32,
}

/// What an event found on disk: some files (each path's entry now), or the whole tree.
enum Observed {
    Files(Vec<(PathBuf, Value)>),
    Tree(Oid),
}

impl Observed {
    /// The tree `base` with what was found laid on it.
    fn laid_on(&self, repo: &Repository, base: Oid) -> Result<Oid, TxError> {
        match self {
            Observed::Files(values) => Ok(treebuild::tree_with_values(repo, base, values)?),
            Observed::Tree(tree) => Ok(*tree),
        }
    }

    /// The paths where what was found differs from `agents`, with the entry now.
    fn changes_since(
        &self,
        repo: &Repository,
        agents: Oid,
    ) -> Result<Vec<(PathBuf, Value)>, TxError> {
        let seen = repo.find_tree(agents)?;
        match self {
            Observed::Files(values) => Ok(values
                .iter()
                .filter(|(path, value)| treediff::blob_at(&seen, path) != *value)
                .cloned()
                .collect()),
            Observed::Tree(tree) => {
                let now = repo.find_tree(*tree)?;
                Ok(treediff::changed_paths(repo, Some(agents), Some(*tree))?
                    .into_iter()
                    .map(|path| {
                        let value = treediff::blob_at(&now, &path);
                        (path, value)
                    })
                    .collect())
            }
        }
    }
}

/// The user's work since the last event (what `now` shows changed since `agents`) laid on
/// `users`, and `agents` moved to now. Where the user's change overlaps one of the agent's
/// earlier edits of the file, the user's version stands in `users` (the user took the lines
/// over).
fn users_work_since(repo: &Repository, trees: Trees, now: &Observed) -> Result<Trees, TxError> {
    let changes = now.changes_since(repo, trees.agents)?;
    let (seen, users) = (repo.find_tree(trees.agents)?, repo.find_tree(trees.users)?);
    let mut values = Vec::new();
    for (path, value) in &changes {
        let (base, ours) = (
            treediff::blob_at(&seen, path),
            treediff::blob_at(&users, path),
        );
        let merged = merge_entry(repo, path, base, ours, *value)?.unwrap_or(*value);
        values.push((path.clone(), merged));
    }
    Ok(Trees {
        users: treebuild::tree_with_values(repo, trees.users, &values)?,
        agents: now.laid_on(repo, trees.agents)?,
        calls: trees.calls,
    })
}

/// What the disk holds at `files` now, as `git add` would record each (a missing file:
/// `None`), read against the tree `base` (ignored files it does not hold stay out).
fn files_now(
    repo: &Repository,
    root: &Path,
    base: Oid,
    files: &[PathBuf],
) -> Result<Vec<(PathBuf, Value)>, TxError> {
    let mut plain = Vec::new();
    for path in files {
        match crate::git::file_entry::plain_entry_now(repo, root, base, path)? {
            Some(value) => plain.push((path.clone(), value)),
            None => break,
        }
    }
    if plain.len() == files.len() {
        return Ok(plain);
    }
    let source = Source {
        repo,
        base,
        root,
        filters: repo,
        remember: false,
        objects_in_memory: None,
    };
    let tree = repo.find_tree(treebuild::tree_with_paths(&source, files)?)?;
    Ok(files
        .iter()
        .map(|path| (path.clone(), treediff::blob_at(&tree, path)))
        .collect())
}

/// `files` relative to the repository's root (those outside it, or in its git dir, left
/// out): absolute ones as given or through the symlinks on the way, relative ones from the
/// event's folder `cwd`.
fn relative_files(root: &Path, cwd: &Path, files: &[PathBuf]) -> Vec<PathBuf> {
    let canonical_root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let inside = |path: &Path| -> Option<PathBuf> {
        if let Ok(rel) = path.strip_prefix(root) {
            return Some(rel.to_path_buf());
        }
        if let Ok(rel) = path.strip_prefix(&canonical_root) {
            return Some(rel.to_path_buf());
        }
        // The file may not exist (deleted): its folder is what resolves.
        let folder = path.parent()?.canonicalize().ok()?;
        let rel = folder.strip_prefix(&canonical_root).ok()?;
        Some(rel.join(path.file_name()?))
    };
    let mut out: Vec<PathBuf> = files
        .iter()
        .map(|f| {
            if f.is_absolute() {
                f.clone()
            } else {
                cwd.join(f)
            }
        })
        .filter_map(|f| inside(&f))
        .filter(|rel| {
            !rel.as_os_str().is_empty()
                && !rel.components().any(|c| {
                    matches!(c, std::path::Component::ParentDir) || c.as_os_str() == ".git"
                })
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Reads session `key`'s turn, computes its new trees with `change`, and writes them if
/// nobody else did meanwhile (else reads again).
fn update_turn(
    repo: &Repository,
    key: &str,
    change: impl Fn(&Repository, Trees) -> Result<Trees, TxError>,
) -> Result<Attributed, TxError> {
    for _ in 0..ATTEMPTS {
        let Some(read) = turn::load_versioned(repo, key)? else {
            return Ok(Attributed::NoTurn);
        };
        let new = change(repo, trees_of(&read.turn)?)?;
        let tools = ToolTrees {
            users: new.users.to_string(),
            agents: new.agents.to_string(),
            calls: new.calls,
        };
        if read.turn.tools.as_ref() == Some(&tools) || replace(repo, key, &read, &tools)? {
            return Ok(Attributed::Recorded);
        }
    }
    Err(TxError::Refused {
        message: "the tool event was not recorded: other events of the session kept changing the turn under it".into(),
        hint: "nothing to do: what this call changed counts as the agent's or yours by the next event".into(),
    })
}

fn replace(
    repo: &Repository,
    key: &str,
    read: &Versioned,
    tools: &ToolTrees,
) -> Result<bool, TxError> {
    Ok(turn::replace_tools(repo, key, read, tools)?)
}

/// The turn's per-tool trees; at its first tool event, both the working tree at begin.
fn trees_of(begun: &Turn) -> Result<Trees, TxError> {
    Ok(match &begun.tools {
        Some(tools) => Trees {
            users: Oid::from_str(&tools.users)?,
            agents: Oid::from_str(&tools.agents)?,
            calls: tools.calls,
        },
        None => Trees {
            users: begun.work_tree()?,
            agents: begun.work_tree()?,
            calls: 0,
        },
    })
}

/// At the end of a turn attributed per tool: its `users` tree with the user's changes made
/// since the last event (what differs between `agents` and the working tree `now`) laid on
/// it. `None` for a turn attributed as a whole.
pub fn users_tree_at_end(
    repo: &Repository,
    begun: &Turn,
    now: Oid,
) -> Result<Option<Oid>, TxError> {
    if begun.tools.is_none() {
        return Ok(None);
    }
    let trees = users_work_since(repo, trees_of(begun)?, &Observed::Tree(now))?;
    Ok(Some(trees.users))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_are_taken_back_last_first() {
        let edits = vec![
            ("a = 1".to_owned(), "a = 2".to_owned()),
            ("a = 2\n".to_owned(), "a = 3\nb\n".to_owned()),
        ];
        assert_eq!(
            taken_back("x\na = 3\nb\ny\n", &edits).as_deref(),
            Some("x\na = 1\ny\n")
        );
        assert_eq!(taken_back("x\n", &edits), None, "changed again since");
        assert_eq!(taken_back("x\n", &[]), None);
    }

    /// The working tree a shell call's end records is a checkpoint's, in the cases where
    /// reading the index file directly could differ from libgit2's reading: content
    /// converted by a tracked `.gitattributes` that is gone from disk, `core.autocrlf`
    /// keeping the CRs a tracked blob has, an untracked secret file, a deleted file, an
    /// executable bit, a staged change (the index's tree not cached), a new folder.
    #[test]
    fn a_shell_calls_end_records_the_working_tree_as_a_checkpoint_does() {
        use crate::git::testing::{git, init_repo, write_file};
        let dir = init_repo();
        let root = dir.path();
        write_file(root, ".gitattributes", "*.crlf text eol=crlf\n");
        write_file(root, "a.crlf", "one\ntwo\n");
        write_file(root, "dos.txt", "one\r\ntwo\r\n");
        write_file(root, "gone.txt", "gone\n");
        write_file(root, "run.sh", "echo\n");
        write_file(root, "src/deep/b.rs", "b\n");
        git(root, &["add", "-A"]);
        git(root, &["commit", "-q", "-m", "one"]);
        std::fs::remove_file(root.join(".gitattributes")).expect("rm");
        git(root, &["config", "core.autocrlf", "true"]);
        let same = |why: &str| {
            let repo = Repository::open(root).expect("open");
            let ours = work_tree_now(&repo, root).expect("ours");
            let theirs = checkpoint::take(&repo).expect("checkpoint").work_tree;
            assert_eq!(ours, theirs, "{why}");
        };
        same("nothing changed");
        write_file(root, "a.crlf", "one\ntwo\nthree\n");
        write_file(root, "dos.txt", "one\r\ntwo\r\nthree\r\n");
        same("converted by the index's attributes, CRs kept as the blob has them");
        write_file(root, ".env", "SECRET=1\n");
        std::fs::remove_file(root.join("gone.txt")).expect("rm");
        std::fs::set_permissions(
            root.join("run.sh"),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .expect("chmod");
        same("a secret file, a deletion, an executable bit");
        write_file(root, "src/deep/b.rs", "staged\n");
        git(root, &["add", "src/deep/b.rs"]);
        write_file(root, "src/deep/b.rs", "staged, then changed\n");
        same("a staged change");
        write_file(root, "new/folder/c.rs", "c\n");
        same("an untracked folder");
    }

    #[test]
    fn files_outside_the_repository_or_in_its_git_dir_are_left_out() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical");
        std::fs::create_dir_all(root.join("src")).expect("mkdir");
        let files = [
            root.join("src/a.rs"),
            PathBuf::from("b.rs"),
            PathBuf::from("/elsewhere/c.rs"),
            root.join(".git/config"),
            root.join("src/../../x"),
        ];
        assert_eq!(
            relative_files(&root, &root.join("src"), &files),
            vec![PathBuf::from("src/a.rs"), PathBuf::from("src/b.rs")]
        );
    }
}
