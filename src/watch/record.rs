//! Which replies the watcher has run, by key, so that none runs twice.
//!
//! Two records, read together when the watcher starts and again before each reply is
//! considered (the operation log is read a last time with the lock held, see
//! [`crate::ops::apply::apply_once`]): the operation log, where every apply
//! the watcher made carries its reply's key (`reply_key`; written in the same step as the
//! commit, so an apply that committed is known even if the watcher died right after), and a
//! small file in the git dir (`loaf/watch-applied`) for the replies that committed nothing
//! (reads only, or every block failed) and so left no log entry.

use std::collections::HashMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::git::Repository;
use crate::tx::oplog::{self, OpKind};

/// The replies run so far: key → the apply's id (`None` when it recorded none).
#[derive(Debug, Default)]
pub struct AppliedReplies {
    keys: HashMap<String, Option<String>>,
    file: PathBuf,
}

impl AppliedReplies {
    /// Reads both records of `repo`.
    pub fn load(repo: &Repository) -> Result<AppliedReplies, std::io::Error> {
        let file = repo.commondir().join("loaf").join("watch-applied");
        let mut keys = HashMap::new();
        match std::fs::read_to_string(&file) {
            Ok(text) => {
                for line in text.lines() {
                    let mut words = line.split_whitespace();
                    if let Some(key) = words.next() {
                        let id = words.next().filter(|id| *id != "-").map(str::to_owned);
                        keys.insert(key.to_owned(), id);
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        let entries = oplog::entries(repo).map_err(std::io::Error::other)?;
        for entry in entries.into_iter().filter(|e| e.kind == OpKind::Apply) {
            if let Some(key) = entry.reply_key {
                keys.insert(key, Some(entry.id));
            }
        }
        Ok(AppliedReplies { keys, file })
    }

    /// Reads both records again: another process (`git loaf apply` by hand) may have run a
    /// reply since. On failure the records read before stay.
    pub fn reload(&mut self, root: &Path) -> Result<(), std::io::Error> {
        let repo = crate::git::states::discover(root).map_err(std::io::Error::other)?;
        *self = AppliedReplies::load(&repo)?;
        Ok(())
    }

    /// Whether the reply with `key` ran, and as which apply.
    pub fn get(&self, key: &str) -> Option<Option<&str>> {
        self.keys.get(key).map(Option::as_deref)
    }

    /// Records that the reply with `key` ran as `apply` (if it has an id).
    pub fn record(&mut self, key: &str, apply: Option<&str>) -> std::io::Result<()> {
        self.keys.insert(key.to_owned(), apply.map(str::to_owned));
        append_line(&self.file, &format!("{key} {}\n", apply.unwrap_or("-")))
    }
}

fn append_line(path: &Path, line: &str) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)?;
    file.write_all(line.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorded_keys_are_read_back_by_the_next_watcher() {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = Repository::init(dir.path()).expect("init");
        let mut first = AppliedReplies::load(&repo).expect("load");
        assert_eq!(first.get("k1"), None);
        first.record("k1", Some("abc123")).expect("record");
        first.record("k2", None).expect("record");
        let second = AppliedReplies::load(&repo).expect("load");
        assert_eq!(second.get("k1"), Some(Some("abc123")));
        assert_eq!(second.get("k2"), Some(None));
        assert_eq!(second.get("k3"), None);
    }
}
