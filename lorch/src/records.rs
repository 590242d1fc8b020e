//! Where lorch keeps its records (docs/lorch.md, "What is recorded, and what survives a
//! crash": `events/`, `state/`, `receipts/`, `snapshots/`,
//! `logs/`, `transcripts/`): at the top of the workspace, as the spec lays them out, unless
//! that would collide with the project's own folders; then all of them under one folder of
//! lorch's own, `.lorch/`, the same layout inside it.
//!
//! Why: records at the top are listed in the repository's `info/exclude` (so that `git
//! loaf undo` of a builder step is never refused because of them), and a project that keeps
//! its own `state/` or `logs/` folder would have its new files there hidden from git, and
//! left out of every commit and snapshot. So the choice is made from what is in the
//! workspace, the same way by lorch and by every agent (they compute the snapshot too):
//!
//! 1. records already under `.lorch/` stay there;
//! 2. a record folder name the project tracks in git, or one that is present without being
//!    lorch's (no `state/lock` of an earlier run beside it), sends them to `.lorch/`;
//! 3. otherwise they are at the top, as the spec lays them out.

use std::path::{Path, PathBuf};

/// The folder of lorch's own that holds the records when the top cannot.
pub const OWN_DIR: &str = ".lorch";

/// The record folders.
pub const FOLDERS: [&str; 6] = [
    "events",
    "state",
    "receipts",
    "snapshots",
    "logs",
    "transcripts",
];

/// Where the records of a workspace go, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// At the top of the workspace.
    Top,
    /// Under `.lorch/`, for the reason given.
    OwnFolder(String),
}

impl Location {
    /// The folder the record folders are in.
    pub fn root(&self, workspace: &Path) -> PathBuf {
        match self {
            Location::Top => workspace.to_path_buf(),
            Location::OwnFolder(_) => workspace.join(OWN_DIR),
        }
    }

    /// Whether the record folders are at the top of the workspace.
    pub fn at_top(&self) -> bool {
        *self == Location::Top
    }
}

/// Where the records of `workspace` go (see the module's rules).
pub fn location(workspace: &Path) -> Location {
    let own = workspace.join(OWN_DIR);
    if FOLDERS.iter().any(|f| own.join(f).is_dir()) {
        return Location::OwnFolder(format!("lorch's records are in {OWN_DIR}/ already"));
    }
    let tracked = tracked_folders(workspace);
    if let Some(name) = tracked.first() {
        return Location::OwnFolder(format!("the project tracks {name}/ in git"));
    }
    let lorchs = workspace.join("state").join("lock").is_file();
    if !lorchs && let Some(name) = FOLDERS.iter().find(|f| workspace.join(f).exists()) {
        return Location::OwnFolder(format!("{name}/ is the project's"));
    }
    Location::Top
}

/// The folder the records of `workspace` are in.
pub fn root(workspace: &Path) -> PathBuf {
    location(workspace).root(workspace)
}

/// Lists lorch's record folders in the workspace repository's `.git/info/exclude`: the
/// builder's steps are git-loaf applies, and untracked records would make `git loaf undo`
/// and `squash` of a run refuse. Only the folders that are lorch's: `/.lorch/` when the
/// records are there, never a folder of the project's.
pub fn keep_out_of_git(workspace: &Path) -> std::io::Result<()> {
    let patterns: Vec<String> = if location(workspace).at_top() {
        FOLDERS.iter().map(|f| format!("/{f}/")).collect()
    } else {
        vec![format!("/{OWN_DIR}/")]
    };
    let patterns: Vec<&str> = patterns.iter().map(String::as_str).collect();
    crate::git_exclude::exclude(workspace, &patterns).map(|_| ())
}

/// The record folder names that git tracks files under in `workspace` (none outside a
/// repository).
pub fn tracked_folders(workspace: &Path) -> Vec<&'static str> {
    FOLDERS
        .into_iter()
        .filter(|name| crate::git_exclude::is_tracked(workspace, name))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tracked_or_foreign_folder_sends_the_records_to_their_own_folder() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ws = dir.path();
        let repo = git2::Repository::init(ws).expect("init");
        assert_eq!(location(ws), Location::Top);
        std::fs::create_dir_all(ws.join("state")).expect("mkdir");
        std::fs::write(ws.join("state/lock"), "1").expect("lock");
        assert_eq!(location(ws), Location::Top, "lorch's own state/ stays");
        std::fs::create_dir_all(ws.join("logs")).expect("mkdir");
        std::fs::write(ws.join("logs/app.py"), "x").expect("write");
        let mut index = repo.index().expect("index");
        index.add_path(Path::new("logs/app.py")).expect("add");
        index.write().expect("write index");
        assert_eq!(
            location(ws),
            Location::OwnFolder("the project tracks logs/ in git".into())
        );
        assert_eq!(root(ws), ws.join(".lorch"));
        std::fs::create_dir_all(ws.join(".lorch/events")).expect("mkdir");
        assert!(matches!(location(ws), Location::OwnFolder(why) if why.contains("already")));

        let other = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(other.path().join("snapshots")).expect("mkdir");
        assert_eq!(
            location(other.path()),
            Location::OwnFolder("snapshots/ is the project's".into())
        );
    }
}
