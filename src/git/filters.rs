//! Blobs as `git add` stores them and files as `git checkout` writes them, for every
//! attribute: libgit2 applies only its built-in conversions (eol/crlf, `ident`) and ignores
//! external drivers (`filter=<name>` with `filter.<name>.clean`/`smudge`/`process`: git-lfs,
//! git-crypt), so this module adds them in git's order.
//!
//! - To the object database: the driver's clean first, then the built-ins (libgit2's blob
//!   writer with the path as hint).
//! - To the working tree: the built-ins first (a libgit2 checkout), then the driver's smudge
//!   on the file it wrote ([`smudge_in_place`]).
//!
//! Which conversions apply to a path is decided here ([`Conversions`]: `core.autocrlf`, a
//! configured driver, the attributes that convert); running a driver, a command or a
//! long-running filter process, is [`super::filter_process`]. A repository that configures
//! no driver and sets no attribute costs one config read per operation.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use git2::{AttrCheckFlags, AttrValue, Index, IndexAddOption, IndexEntry, Oid, Repository};

pub use super::filter_process::FilterError;
use super::filter_process::{Direction, drivers, has_driver, io, run_driver};

/// The blob `git add` stores for `content` found at `path` (relative to `repo`'s working
/// tree, whose attributes and config decide): the driver's clean, then the built-ins.
pub fn blob(repo: &Repository, path: &Path, content: Vec<u8>) -> Result<Oid, FilterError> {
    let content = run_driver(repo, path, content, Direction::Clean)?;
    let mut writer = repo.blob_writer(Some(path))?;
    writer.write_all(&content).map_err(io(path))?;
    Ok(writer.commit()?)
}

/// The blob `git add` stores for the regular file at `dir/path`, `path` naming it in `repo`.
/// Without a conversion the content goes to the object database in one write (the blob
/// writer's stream would create a second temporary file for every blob).
pub(crate) fn file_blob(
    repo: &Repository,
    conversions: &Conversions,
    dir: &Path,
    path: &Path,
) -> Result<Oid, FilterError> {
    let full = dir.join(path);
    let content = std::fs::read(&full).map_err(io(&full))?;
    if !conversions.apply_to(repo, path)? {
        return Ok(crate::git::repo::write_blob(repo, &content)?);
    }
    blob(repo, path, content)
}

/// The id of the blob `git add` would store for the regular file at `dir/path`, computed
/// without writing anything when no conversion applies to it (a check of the user's file,
/// not something to keep); with a conversion, the blob is written as [`file_blob`] does.
pub(crate) fn file_id(
    repo: &Repository,
    conversions: &Conversions,
    dir: &Path,
    path: &Path,
) -> Result<Oid, FilterError> {
    if conversions.apply_to(repo, path)? {
        return file_blob(repo, conversions, dir, path);
    }
    let full = dir.join(path);
    Ok(Oid::hash_file(git2::ObjectType::Blob, &full)?)
}

/// Whether any file of `tree` may be converted between the repository and the working tree:
/// `core.autocrlf`, a configured driver, or attributes anywhere (a `.gitattributes` in the
/// tree, `info/attributes`, `core.attributesFile`). A walk of the tree's folders, no file.
pub(crate) fn may_convert_any(repo: &Repository, tree: Oid) -> Result<bool, git2::Error> {
    let conversions = Conversions::of(repo)?;
    if conversions.autocrlf || conversions.drivers || conversions.outside_attributes {
        return Ok(true);
    }
    let mut found = false;
    repo.find_tree(tree)?
        .walk(git2::TreeWalkMode::PreOrder, |_, entry| {
            if entry.name_bytes() == ATTRIBUTES_FILE.as_bytes() {
                found = true;
                git2::TreeWalkResult::Abort
            } else {
                git2::TreeWalkResult::Ok
            }
        })
        .or_else(|e| if found { Ok(()) } else { Err(e) })?;
    Ok(found)
}

/// The name of a folder's attributes file.
pub(crate) const ATTRIBUTES_FILE: &str = ".gitattributes";

/// Whether attributes are set anywhere but in the working tree's `.gitattributes` files:
/// `core.attributesFile`, `info/attributes`, the default global file or the system one.
fn attributes_outside_tree(repo: &Repository) -> Result<bool, git2::Error> {
    let config = repo.config()?;
    if config.get_path("core.attributesFile").is_ok()
        || repo.path().join("info").join("attributes").exists()
        || repo.commondir().join("info").join("attributes").exists()
    {
        return Ok(true);
    }
    // Without a global config the default ($XDG_CONFIG_HOME/git/attributes) still applies.
    let xdg = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")));
    Ok(
        xdg.is_some_and(|dir| dir.join("git").join("attributes").exists())
            || (cfg!(unix) && Path::new("/etc/gitattributes").exists()),
    )
}

/// Whether a file's content can differ from its blob's in a repository: `core.autocrlf`, a
/// configured driver, or, per path, the attributes that convert (`text`, `eol`, `crlf`,
/// `ident`, `working-tree-encoding`, `filter`). When none applies, a file is its blob byte
/// for byte: it is hashed without being written, and written from the blob directly.
#[derive(Debug)]
pub(crate) struct Conversions {
    autocrlf: bool,
    drivers: bool,
    /// Attributes come from somewhere besides the tree's `.gitattributes` files: every path
    /// is looked up.
    outside_attributes: bool,
    /// Answers by path: publish asks up to four times per file.
    known: std::cell::RefCell<HashMap<PathBuf, bool>>,
    /// Whether a folder (relative) has a `.gitattributes` file, on disk or in the index:
    /// a path with none on its way from the root has no attribute, which spares libgit2's
    /// five lookups (each re-checks every attributes file on the path).
    folders: std::cell::RefCell<HashMap<PathBuf, bool>>,
}

/// The attributes under which git converts content between the repository and the files.
const CONVERTING: [&str; 5] = ["text", "eol", "crlf", "ident", "working-tree-encoding"];

impl Conversions {
    /// Reads the repository's config (once per operation is enough).
    pub fn of(repo: &Repository) -> Result<Conversions, git2::Error> {
        let config = repo.config()?;
        // `true` or `input` convert; anything else set (an unusual spelling) is treated as
        // converting too, which only costs the slower, exact path.
        let autocrlf = match config.get_string("core.autocrlf") {
            Ok(value) => !matches!(
                value.to_ascii_lowercase().as_str(),
                "false" | "no" | "off" | "0" | ""
            ),
            Err(_) => false,
        };
        Ok(Conversions {
            autocrlf,
            drivers: drivers(repo)?.is_some(),
            outside_attributes: attributes_outside_tree(repo)?,
            known: Default::default(),
            folders: Default::default(),
        })
    }

    /// Whether a `.gitattributes` file in `path`'s folders (the root's included) may give it
    /// an attribute: the file on disk (libgit2 reads the working tree's first) or in the index.
    fn attributes_on_path(&self, repo: &Repository, path: &Path) -> Result<bool, git2::Error> {
        let Some(workdir) = repo.workdir() else {
            return Ok(true);
        };
        let mut index: Option<Index> = None;
        for folder in path.ancestors().skip(1) {
            if let Some(&has) = self.folders.borrow().get(folder) {
                if has {
                    return Ok(true);
                }
                continue;
            }
            let file = folder.join(ATTRIBUTES_FILE);
            let mut has = workdir.join(&file).symlink_metadata().is_ok();
            if !has {
                if index.is_none() {
                    index = Some(repo.index()?);
                }
                has = index
                    .as_ref()
                    .is_some_and(|index| index.get_path(&file, 0).is_some());
            }
            self.folders.borrow_mut().insert(folder.to_path_buf(), has);
            if has {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Whether content may be converted whatever the path: `core.autocrlf`, a configured
    /// driver, or attributes from outside the tree.
    pub fn anywhere(&self) -> bool {
        self.autocrlf || self.drivers || self.outside_attributes
    }

    /// Whether the content of `path` (relative) may be converted on its way in or out.
    pub fn apply_to(&self, repo: &Repository, path: &Path) -> Result<bool, git2::Error> {
        if self.autocrlf {
            return Ok(true);
        }
        if let Some(known) = self.known.borrow().get(path) {
            return Ok(*known);
        }
        if !self.outside_attributes && !self.attributes_on_path(repo, path)? {
            self.known.borrow_mut().insert(path.to_path_buf(), false);
            return Ok(false);
        }
        let mut converts = self.drivers && has_driver(repo, path)?;
        for name in CONVERTING {
            if converts {
                break;
            }
            let value = repo.get_attr_bytes(path, name, AttrCheckFlags::FILE_THEN_INDEX)?;
            converts = !matches!(AttrValue::from_bytes(value), AttrValue::Unspecified);
        }
        self.known.borrow_mut().insert(path.to_path_buf(), converts);
        Ok(converts)
    }
}

/// After a libgit2 checkout of `paths` (relative) into `dir`, which applied the built-in
/// conversions: runs each file whose attributes name a driver through its smudge, in place,
/// so that `dir` holds what `git checkout` writes. Returns the paths rewritten. Symlinks,
/// folders and absent paths are left alone.
pub(crate) fn smudge_in_place<P: AsRef<Path>>(
    repo: &Repository,
    dir: &Path,
    paths: impl IntoIterator<Item = P>,
) -> Result<Vec<PathBuf>, FilterError> {
    if drivers(repo)?.is_none() {
        return Ok(Vec::new());
    }
    let mut rewritten = Vec::new();
    for path in paths {
        let path = path.as_ref();
        if !has_driver(repo, path)? {
            continue;
        }
        let full = dir.join(path);
        match std::fs::symlink_metadata(&full) {
            Ok(meta) if meta.is_file() => {}
            _ => continue,
        }
        let content = std::fs::read(&full).map_err(io(&full))?;
        let smudged = run_driver(repo, path, content.clone(), Direction::Smudge)?;
        if smudged != content {
            std::fs::write(&full, &smudged).map_err(io(&full))?;
            rewritten.push(path.to_path_buf());
        }
    }
    Ok(rewritten)
}

/// [`smudge_in_place`] in `repo`'s own working tree (the stage) after a checkout of `paths`;
/// the rewritten files' index entries then take their new stat data, so that a later scan
/// sees them unchanged (their blob is still the index's).
pub(crate) fn smudge_worktree<P: AsRef<Path>>(
    repo: &Repository,
    paths: impl IntoIterator<Item = P>,
) -> Result<(), git2::Error> {
    let Some(root) = repo.workdir() else {
        return Ok(());
    };
    if drivers(repo)?.is_none() {
        return Ok(());
    }
    let rewritten = smudge_in_place(repo, root, paths)?;
    if rewritten.is_empty() {
        return Ok(());
    }
    let mut index = repo.index()?;
    for path in &rewritten {
        let Some(entry) = index.get_path(path, 0) else {
            continue;
        };
        let full = root.join(path);
        let meta = std::fs::symlink_metadata(&full)
            .map_err(|e| git2::Error::from_str(&format!("{}: {e}", full.display())))?;
        index.add(&super::index::with_stat(entry, &meta))?;
    }
    index.write()
}

/// [`smudge_worktree`] for every file `repo`'s index holds: after a full checkout.
pub(crate) fn smudge_whole_worktree(repo: &Repository) -> Result<(), git2::Error> {
    if drivers(repo)?.is_none() {
        return Ok(());
    }
    let paths: Vec<PathBuf> = repo
        .index()?
        .iter()
        .map(|e| super::repo::path_from_bytes(&e.path).into_owned())
        .collect();
    smudge_worktree(repo, paths)
}

/// `git add -A` into the in-memory `index` of `repo`'s working tree: libgit2's `add_all` and
/// `update_all`, except that the files with a driver are cleaned through it (libgit2 would
/// store their raw bytes).
pub fn add_all(repo: &Repository, index: &mut Index) -> Result<(), git2::Error> {
    add_all_but(repo, index, &|_| false)
}

/// [`add_all`], leaving out the paths `leave_out` names (their bytes are never read, nor
/// written as blobs).
pub(crate) fn add_all_but(
    repo: &Repository,
    index: &mut Index,
    leave_out: &dyn Fn(&Path) -> bool,
) -> Result<(), git2::Error> {
    let Some(root) = repo.workdir().map(Path::to_path_buf) else {
        return Err(git2::Error::from_str(
            "a bare repository has no files to add",
        ));
    };
    let any = drivers(repo)?.is_some();
    let mut filtered: Vec<PathBuf> = Vec::new();
    let mut error: Option<git2::Error> = None;
    {
        // 0: libgit2 adds (or removes) the path; 1: skipped, cleaned below.
        let mut pick = |path: &Path, _: &[u8]| -> i32 {
            // An untracked nested repository comes as `dir/` (libgit2 cannot add it and
            // fails with "invalid path"): an untracked folder of another repository, left out.
            if path.as_os_str().as_encoded_bytes().ends_with(b"/") || leave_out(path) {
                return 1;
            }
            if !any || !root.join(path).is_file() {
                return 0;
            }
            match has_driver(repo, path) {
                Ok(true) => {
                    filtered.push(path.to_path_buf());
                    1
                }
                Ok(false) => 0,
                Err(e) => {
                    error.get_or_insert(e);
                    -1
                }
            }
        };
        index.add_all(["*"].iter(), IndexAddOption::DEFAULT, Some(&mut pick))?;
        index.update_all(["*"].iter(), Some(&mut pick))?;
    }
    if let Some(e) = error {
        return Err(e);
    }
    filtered.sort();
    filtered.dedup();
    let conversions = Conversions::of(repo)?;
    for path in filtered {
        let full = root.join(&path);
        let meta = std::fs::symlink_metadata(&full)
            .map_err(|e| git2::Error::from_str(&format!("{}: {e}", full.display())))?;
        let id = file_blob(repo, &conversions, &root, &path)?;
        index.add(&new_entry(&path, id, &meta))?;
    }
    Ok(())
}

/// `index.add_path(path)` with the blob `git add` stores: the file at `root/path` (in
/// `repo`'s working tree) cleaned through its driver when it has one, so that its entry gets
/// the file's stat data and the right blob (libgit2 would hash the raw bytes).
pub fn add_path(
    repo: &Repository,
    index: &mut Index,
    root: &Path,
    path: &Path,
) -> Result<(), git2::Error> {
    let full = root.join(path);
    let meta = std::fs::symlink_metadata(&full)
        .map_err(|e| git2::Error::from_str(&format!("{}: {e}", full.display())))?;
    if !meta.is_file() || !has_driver(repo, path)? {
        return index.add_path(path);
    }
    let id = file_blob(repo, &Conversions::of(repo)?, root, path)?;
    index.add(&new_entry(path, id, &meta))
}

/// An index entry for the file `path` holding blob `id`, with its stat data.
fn new_entry(path: &Path, id: Oid, meta: &std::fs::Metadata) -> IndexEntry {
    super::index::entry(path, id, file_mode(meta), Some(meta))
}

#[cfg(unix)]
fn file_mode(meta: &std::fs::Metadata) -> u32 {
    use std::os::unix::fs::PermissionsExt as _;
    if meta.permissions().mode() & 0o111 != 0 {
        0o100755
    } else {
        0o100644
    }
}

#[cfg(not(unix))]
fn file_mode(_meta: &std::fs::Metadata) -> u32 {
    0o100644
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::testing::{git, init_repo, write_file};

    /// A clean filter's blob is the one `git hash-object --path` computes, and without any
    /// driver the blob is libgit2's own (built-ins applied).
    #[test]
    fn clean_matches_git_hash_object() {
        let dir = init_repo();
        let root = dir.path();
        write_file(
            root,
            ".gitattributes",
            "*.up filter=up\n*.crlf text eol=crlf\n",
        );
        git(root, &["config", "filter.up.clean", "tr a-z A-Z"]);
        git(root, &["config", "filter.up.smudge", "tr A-Z a-z"]);
        write_file(root, "a.up", "hello\r\n");
        write_file(root, "b.crlf", "x\r\ny\r\n");
        let repo = Repository::open(root).expect("open");
        for name in ["a.up", "b.crlf"] {
            let conversions = Conversions::of(&repo).expect("config");
            let ours = file_blob(&repo, &conversions, root, Path::new(name)).expect("blob");
            let theirs = git(root, &["hash-object", "--path", name, name]);
            assert_eq!(ours.to_string(), theirs.trim(), "{name}");
        }
    }

    /// The id publish checks files by is the id `git add` would store, computed without
    /// writing the blob when no conversion applies, and through the filters when one does;
    /// the per-path and whole-tree answers agree with the attributes.
    #[test]
    fn attributes_are_looked_up_only_where_a_gitattributes_file_may_set_them() {
        let dir = init_repo();
        let root = dir.path();
        write_file(root, "a/b/c.txt", "x\r\n");
        write_file(root, "a/.gitattributes", "*.txt text eol=crlf\n");
        write_file(root, "other/d.txt", "x\r\n");
        git(root, &["add", "-A"]);
        git(root, &["commit", "-q", "-m", "files"]);
        let repo = Repository::open(root).expect("open");
        let conversions = Conversions::of(&repo).expect("config");
        let converts = |path: &str| {
            conversions
                .apply_to(&repo, Path::new(path))
                .expect("attributes")
        };
        assert!(converts("a/b/c.txt"), "from a folder above");
        assert!(!converts("other/d.txt"), "no attributes file on its way");
        // Deleted from disk but still in the index: libgit2 reads the index's.
        std::fs::remove_file(root.join("a/.gitattributes")).expect("remove");
        let conversions = Conversions::of(&repo).expect("config");
        assert!(
            conversions
                .apply_to(&repo, Path::new("a/b/c.txt"))
                .expect("attributes"),
            "the index's .gitattributes"
        );
        // One in the repository's info/attributes applies everywhere.
        write_file(root, ".git/info/attributes", "*.txt ident\n");
        let conversions = Conversions::of(&repo).expect("config");
        assert!(
            conversions
                .apply_to(&repo, Path::new("other/d.txt"))
                .expect("attributes")
        );
    }

    #[test]
    fn file_ids_match_git_and_conversions_follow_the_attributes() {
        let dir = init_repo();
        let root = dir.path();
        write_file(root, "plain.txt", "x\r\ny\r\n");
        write_file(root, "sub/b.crlf", "x\r\ny\r\n");
        git(root, &["add", "plain.txt"]);
        git(root, &["commit", "-q", "-m", "plain"]);
        let repo = Repository::open(root).expect("open");
        let head_tree = || {
            repo.head()
                .and_then(|h| h.peel_to_tree())
                .expect("tree")
                .id()
        };
        assert!(!may_convert_any(&repo, head_tree()).expect("scan"));
        write_file(root, "sub/.gitattributes", "*.crlf text eol=crlf\n");
        git(root, &["add", "-A"]);
        git(root, &["commit", "-q", "-m", "attributes"]);
        assert!(may_convert_any(&repo, head_tree()).expect("scan"));
        let conversions = Conversions::of(&repo).expect("config");
        assert!(
            !conversions
                .apply_to(&repo, Path::new("plain.txt"))
                .expect("attr")
        );
        assert!(
            conversions
                .apply_to(&repo, Path::new("sub/b.crlf"))
                .expect("attr")
        );
        let objects = || git(root, &["count-objects"]);
        let before = objects();
        let plain = file_id(&repo, &conversions, root, Path::new("plain.txt")).expect("id");
        assert_eq!(before, objects(), "hashed, not written");
        for (name, ours) in [
            ("plain.txt", plain),
            (
                "sub/b.crlf",
                file_id(&repo, &conversions, root, Path::new("sub/b.crlf")).expect("id"),
            ),
        ] {
            let theirs = git(root, &["hash-object", "--path", name, name]);
            assert_eq!(ours.to_string(), theirs.trim(), "{name}");
        }
        git(root, &["config", "core.autocrlf", "input"]);
        write_file(root, "new.txt", "x\r\ny\r\n");
        // libgit2 caches core.autocrlf per repository object.
        let repo = Repository::open(root).expect("open");
        let conversions = Conversions::of(&repo).expect("config");
        assert!(
            conversions
                .apply_to(&repo, Path::new("new.txt"))
                .expect("attr")
        );
        let ours = file_id(&repo, &conversions, root, Path::new("new.txt")).expect("id");
        let theirs = git(root, &["hash-object", "--path", "new.txt", "new.txt"]);
        assert_eq!(ours.to_string(), theirs.trim(), "autocrlf=input");
    }

    /// An entry made by [`add_path`] holds the cleaned blob and the file's stat data: git
    /// and libgit2 alike then see the file unchanged without re-reading it.
    #[test]
    fn add_path_stages_the_cleaned_blob_with_its_stat() {
        let dir = init_repo();
        let root = dir.path();
        write_file(root, ".gitattributes", "*.up filter=up\n");
        git(root, &["config", "filter.up.clean", "tr a-z A-Z"]);
        git(root, &["config", "filter.up.smudge", "tr A-Z a-z"]);
        write_file(root, "a.up", "hello\n");
        git(root, &["add", "-A"]);
        git(root, &["commit", "-q", "-m", "first"]);
        write_file(root, "a.up", "bye\n");
        let repo = Repository::open(root).expect("open");
        let mut index = repo.index().expect("index");
        add_path(&repo, &mut index, root, Path::new("a.up")).expect("add");
        index.write().expect("write");
        let staged = git(root, &["rev-parse", ":a.up"]);
        let added = git(root, &["hash-object", "--path=a.up", "a.up"]);
        assert_eq!(staged, added);
        let entry = index.get_path(Path::new("a.up"), 0).expect("entry");
        assert_ne!(entry.mtime.seconds(), 0, "stat data recorded");
        let mut options = git2::StatusOptions::new();
        options.show(git2::StatusShow::Workdir);
        let statuses = repo.statuses(Some(&mut options)).expect("status");
        assert!(statuses.is_empty(), "libgit2 sees the file unchanged");
    }
}
