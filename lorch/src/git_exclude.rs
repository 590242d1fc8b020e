//! Keeping lorch's records out of git's sight: folders it writes into the workspace
//! (the agents' `reviews/` and `spec_notes/`; the orchestrator's `events/`, `state/`, …)
//! are listed in the repository's `info/exclude`, which is local (never committed or
//! pushed). Shared by the agent shim and the orchestrator.
//!
//! Why: git-loaf refuses to undo or squash a builder step when files changed since it (it
//! would otherwise lose them), and a new untracked `reviews/T-0042.json` counts. Ignored
//! files do not: they are the user's, kept where they are, and the builder's stage still
//! sees them. A folder the project tracks is never listed: its new files would be hidden
//! from git, and left out of the builder's commits.

use std::io::{self, Write as _};
use std::path::Path;

/// The comment above the lines lorch adds. Its words stay as they are: lorch finds it in
/// the exclude files it wrote before, so that it never writes it twice.
const HEADER: &str = "# lorch records (issue 15): kept out of commits, so git loaf undo works";

/// Adds the `patterns` (gitignore syntax, e.g. `/reviews/`) missing from `info/exclude` of
/// the repository holding `workspace`; nothing outside a repository. Returns the added ones.
pub fn exclude(workspace: &Path, patterns: &[&str]) -> io::Result<Vec<String>> {
    let Some(common) = git_loaf::api::common_dir(workspace) else {
        return Ok(Vec::new());
    };
    let info = common.join("info");
    let path = info.join("exclude");
    let have = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e),
    };
    let missing: Vec<String> = patterns
        .iter()
        .filter(|p| !have.lines().any(|line| line.trim() == **p))
        .filter(|p| !is_tracked(workspace, p.trim_matches('/')))
        .map(|p| (*p).to_owned())
        .collect();
    if missing.is_empty() {
        return Ok(missing);
    }
    std::fs::create_dir_all(&info)?;
    let mut text = String::new();
    if !have.is_empty() && !have.ends_with('\n') {
        text.push('\n');
    }
    if !have.lines().any(|line| line == HEADER) {
        text.push_str(HEADER);
        text.push('\n');
    }
    for pattern in &missing {
        text.push_str(pattern);
        text.push('\n');
    }
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(&path)?;
    file.write_all(text.as_bytes())?;
    Ok(missing)
}

/// Whether the repository holding `workspace` tracks a file under `workspace/<folder>/`.
pub fn is_tracked(workspace: &Path, folder: &str) -> bool {
    let Ok(repo) = git2::Repository::discover(workspace) else {
        return false;
    };
    let (Some(workdir), Ok(index)) = (repo.workdir(), repo.index()) else {
        return false;
    };
    let (Ok(workdir), Ok(ws)) = (workdir.canonicalize(), workspace.canonicalize()) else {
        return false;
    };
    let Ok(inside) = ws.strip_prefix(&workdir) else {
        return false;
    };
    let mut prefix = inside.join(folder).to_string_lossy().replace('\\', "/");
    prefix.push('/');
    index
        .iter()
        .any(|entry| entry.path.starts_with(prefix.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds_each_pattern_once_under_one_header() {
        let dir = tempfile::tempdir().expect("tempdir");
        git2::Repository::init(dir.path()).expect("init");
        let exclude_file = dir.path().join(".git/info/exclude");
        std::fs::create_dir_all(exclude_file.parent().expect("info")).expect("mkdir");
        std::fs::write(&exclude_file, "*.log").expect("write");
        assert_eq!(
            exclude(dir.path(), &["/reviews/"]).expect("exclude"),
            ["/reviews/"]
        );
        assert_eq!(
            exclude(dir.path(), &["/reviews/", "/spec_notes/"]).expect("exclude"),
            ["/spec_notes/"]
        );
        assert!(
            exclude(dir.path(), &["/reviews/"])
                .expect("again")
                .is_empty()
        );
        assert_eq!(
            std::fs::read_to_string(&exclude_file).expect("read"),
            format!("*.log\n{HEADER}\n/reviews/\n/spec_notes/\n")
        );
        let outside = tempfile::tempdir().expect("tempdir");
        assert!(
            exclude(outside.path(), &["/x/"])
                .expect("no repo")
                .is_empty()
        );
    }

    #[test]
    fn a_folder_the_project_tracks_is_never_excluded() {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = git2::Repository::init(dir.path()).expect("init");
        std::fs::create_dir_all(dir.path().join("reviews")).expect("mkdir");
        std::fs::write(dir.path().join("reviews/notes.md"), "ours\n").expect("write");
        let mut index = repo.index().expect("index");
        index
            .add_path(Path::new("reviews/notes.md"))
            .expect("track reviews/");
        index.write().expect("write index");
        assert_eq!(
            exclude(dir.path(), &["/reviews/", "/spec_notes/"]).expect("exclude"),
            ["/spec_notes/"],
            "new files in the project's reviews/ must stay visible to git"
        );
    }
}
