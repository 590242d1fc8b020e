//! One file of the working tree as `git add` would record it, read without the index: what
//! an agent's edit-tool event costs (docs/agents.md, "Latency": a few milliseconds on a
//! 20,000-file repository, where reading the index alone takes ~11 ms).
//!
//! The answer is given only when no conversion can apply to the file (no `core.autocrlf`,
//! no filter driver configured, no attributes from outside the tree, and no
//! `.gitattributes` on its way from the root, on disk or in `base`; `core.fileMode` on) and
//! it is a regular file, a symlink or missing; anything else is left to [`super::treebuild`], which
//! knows every case.

use std::path::Path;

use git2::{Oid, Repository};

use super::filters::{ATTRIBUTES_FILE, Conversions};
use super::treebuild::Value;

const FILE_MODE: i32 = 0o100644;
const EXECUTABLE_MODE: i32 = 0o100755;
const LINK_MODE: i32 = 0o120000;

/// What the disk holds at `path` (relative to `root`) as `git add` would record it on top
/// of the tree `base` (`Some(None)`: nothing, or a file `git add` would leave out: ignored
/// or a secret file that `base` does not hold); `None` when this cannot tell (see the
/// module's doc).
pub(crate) fn plain_entry_now(
    repo: &Repository,
    root: &Path,
    base: Oid,
    path: &Path,
) -> Result<Option<Value>, git2::Error> {
    // With core.fileMode off the mode comes from the index: left to the full path.
    let file_mode = repo.config()?.get_bool("core.fileMode").unwrap_or(true);
    if !file_mode || Conversions::of(repo)?.anywhere() {
        return Ok(None);
    }
    let base = repo.find_tree(base)?;
    let attributes = path.ancestors().skip(1).any(|folder| {
        let file = folder.join(ATTRIBUTES_FILE);
        root.join(&file).symlink_metadata().is_ok() || base.get_path(&file).is_ok()
    });
    if attributes {
        return Ok(None);
    }
    let tracked = base.get_path(path).is_ok();
    let full = root.join(path);
    let meta = match full.symlink_metadata() {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Some(None)),
        Err(_) => return Ok(None),
    };
    if !tracked && (repo.is_path_ignored(path)? || super::secret_files::is_secret(path)) {
        return Ok(Some(None));
    }
    let kind = meta.file_type();
    if kind.is_symlink() {
        let Ok(target) = std::fs::read_link(&full) else {
            return Ok(None);
        };
        let id = repo.blob(target.as_os_str().as_encoded_bytes())?;
        return Ok(Some(Some((id, LINK_MODE))));
    }
    if !kind.is_file() {
        return Ok(None);
    }
    let Ok(content) = std::fs::read(&full) else {
        return Ok(None);
    };
    let mode = if executable(&meta) {
        EXECUTABLE_MODE
    } else {
        FILE_MODE
    };
    Ok(Some(Some((super::repo::write_blob(repo, &content)?, mode))))
}

#[cfg(unix)]
fn executable(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn executable(_meta: &std::fs::Metadata) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::testing::{committed_repo, git, write_file};

    #[test]
    fn a_plain_file_is_its_blob_and_attributes_or_ignored_files_are_told_apart() {
        let dir = committed_repo();
        let root = dir.path();
        let repo = Repository::open(root).expect("open");
        let head = repo
            .head()
            .and_then(|h| h.peel_to_tree())
            .expect("tree")
            .id();
        write_file(root, "src/new.rs", "fn main() {}\n");
        let entry = plain_entry_now(&repo, root, head, Path::new("src/new.rs")).expect("read");
        let id = git(root, &["hash-object", "src/new.rs"]);
        assert_eq!(
            entry,
            Some(Some((Oid::from_str(id.trim()).expect("id"), FILE_MODE)))
        );
        assert_eq!(
            plain_entry_now(&repo, root, head, Path::new("gone.rs")).expect("read"),
            Some(None)
        );
        write_file(root, ".gitignore", "*.log\n");
        write_file(root, "build.log", "x\n");
        assert_eq!(
            plain_entry_now(&repo, root, head, Path::new("build.log")).expect("read"),
            Some(None),
            "ignored and untracked: git add leaves it out"
        );
        write_file(root, "src/.gitattributes", "*.rs text eol=crlf\n");
        assert_eq!(
            plain_entry_now(&repo, root, head, Path::new("src/new.rs")).expect("read"),
            None,
            "attributes on the way: the full path decides"
        );
    }
}
