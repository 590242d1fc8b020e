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
//! A driver is a shell command run with `sh -c` in a working tree of the repository (`%f`
//! is the quoted path), or a long-running process speaking git's filter protocol version 2
//! (pkt-lines), started at most once per driver and kept for every later file. As in git, a
//! failing driver passes the content through with a warning, unless
//! `filter.<name>.required` is set: then the conversion is an error naming the path.
//!
//! Drivers are read from the config once per process (a git-loaf run is one operation) and
//! long-running filters live until [`finish`]. A repository that configures no driver costs
//! one config read: no attribute is looked up.

use std::collections::HashMap;
use std::io::{BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, LazyLock, Mutex};

use git2::{AttrCheckFlags, AttrValue, Index, IndexAddOption, IndexEntry, Oid, Repository};

/// A conversion that could not be made.
#[derive(Debug, thiserror::Error)]
pub enum FilterError {
    /// A driver marked `filter.<name>.required` failed or is missing.
    #[error("{}: {direction} filter '{driver}' failed: {reason}", .path.display())]
    Required {
        /// The file being converted.
        path: PathBuf,
        /// `clean` or `smudge`.
        direction: &'static str,
        /// The driver's name.
        driver: String,
        /// What went wrong.
        reason: String,
    },
    /// A file could not be read or written.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// git failed.
    #[error("{0}")]
    Git(#[from] git2::Error),
}

impl From<FilterError> for git2::Error {
    fn from(error: FilterError) -> git2::Error {
        match error {
            FilterError::Git(e) => e,
            other => git2::Error::from_str(&other.to_string()),
        }
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> FilterError + '_ {
    move |source| FilterError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Which way content goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    /// Working tree → object database.
    Clean,
    /// Object database → working tree.
    Smudge,
}

impl Direction {
    fn name(self) -> &'static str {
        match self {
            Direction::Clean => "clean",
            Direction::Smudge => "smudge",
        }
    }
}

/// `filter.<name>.*` from the config.
#[derive(Debug, Default, Clone)]
struct Driver {
    clean: Option<String>,
    smudge: Option<String>,
    process: Option<String>,
    required: bool,
}

/// The drivers of one repository and the long-running filters started for it.
struct Drivers {
    /// Where commands run.
    cwd: PathBuf,
    by_name: HashMap<String, Driver>,
    /// Long-running filters by driver name; `Err` once one failed to start or broke, so it
    /// is not started again for every file.
    running: HashMap<String, Result<LongRunning, String>>,
}

/// Drivers by common git dir (`None`: the repository configures none).
type Registry = HashMap<PathBuf, Option<Arc<Mutex<Drivers>>>>;

static REGISTRY: LazyLock<Mutex<Registry>> = LazyLock::new(|| Mutex::new(HashMap::new()));

/// The drivers `repo` configures, read once; `None` when it configures none (the fast path:
/// nothing else is looked up).
fn drivers(repo: &Repository) -> Result<Option<Arc<Mutex<Drivers>>>, git2::Error> {
    let key = repo.commondir().to_path_buf();
    let mut registry = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(found) = registry.get(&key) {
        return Ok(found.clone());
    }
    let by_name = read_drivers(repo)?;
    let found = (!by_name.is_empty()).then(|| {
        Arc::new(Mutex::new(Drivers {
            cwd: command_dir(repo),
            by_name,
            running: HashMap::new(),
        }))
    });
    registry.insert(key, found.clone());
    Ok(found)
}

/// Where driver commands run: the repository's working tree, except for a working tree
/// inside the git dir (the stage), whose commands run in the main working tree, as for the
/// user's own `git add`: tools such as git-crypt look for their keys in the git dir of the
/// folder they run in.
fn command_dir(repo: &Repository) -> PathBuf {
    let common = repo.commondir();
    match repo.workdir() {
        Some(dir) if dir.starts_with(common) => common
            .parent()
            .filter(|p| common.file_name().is_some_and(|n| n == ".git") && p.is_dir())
            .unwrap_or(dir)
            .to_path_buf(),
        Some(dir) => dir.to_path_buf(),
        None => common.to_path_buf(),
    }
}

fn read_drivers(repo: &Repository) -> Result<HashMap<String, Driver>, git2::Error> {
    let config = repo.config()?.snapshot()?;
    let mut by_name: HashMap<String, Driver> = HashMap::new();
    let mut entries = config.entries(Some(r"^filter\..*\.(clean|smudge|process|required)$"))?;
    // Not an Iterator: each entry borrows the iterator until the next call.
    #[allow(clippy::while_let_on_iterator)]
    while let Some(entry) = entries.next() {
        let entry = entry?;
        let Ok(name) = entry.name() else { continue };
        let Some(rest) = name.strip_prefix("filter.") else {
            continue;
        };
        let Some((driver, key)) = rest.rsplit_once('.') else {
            continue;
        };
        let value = entry.value().ok().map(str::to_owned);
        let slot = by_name.entry(driver.to_owned()).or_default();
        match key {
            "clean" => slot.clean = value,
            "smudge" => slot.smudge = value,
            "process" => slot.process = value,
            "required" => {
                slot.required = config.get_bool(name).unwrap_or(false);
            }
            _ => {}
        }
    }
    Ok(by_name)
}

/// Drops every driver read and stops the long-running filters, waiting for them as git does
/// when a command ends. The next conversion reads the config again.
pub fn finish() {
    let drained: Vec<_> = {
        let mut registry = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
        registry.drain().collect()
    };
    for drivers in drained.into_iter().filter_map(|(_, d)| d) {
        let mut drivers = drivers.lock().unwrap_or_else(|e| e.into_inner());
        for (_, running) in drivers.running.drain() {
            if let Ok(process) = running {
                process.stop();
            }
        }
    }
}

/// The driver `path` names through its `filter` attribute, if one is configured.
fn driver_for(
    repo: &Repository,
    drivers: &Drivers,
    path: &Path,
) -> Result<Option<(String, Driver)>, git2::Error> {
    let value = repo.get_attr_bytes(path, "filter", AttrCheckFlags::FILE_THEN_INDEX)?;
    let name = match AttrValue::from_bytes(value) {
        AttrValue::String(name) => name.as_bytes(),
        AttrValue::Bytes(name) => name,
        _ => return Ok(None),
    };
    let name = String::from_utf8_lossy(name).into_owned();
    Ok(drivers
        .by_name
        .get(&name)
        .map(|driver| (name, driver.clone())))
}

/// Whether `path` has a configured driver in `repo` (cheap when no driver is configured).
pub fn has_driver(repo: &Repository, path: &Path) -> Result<bool, git2::Error> {
    let Some(drivers) = drivers(repo)? else {
        return Ok(false);
    };
    let drivers = drivers.lock().unwrap_or_else(|e| e.into_inner());
    Ok(driver_for(repo, &drivers, path)?.is_some())
}

/// Runs `path`'s driver (if any) over `content` in `direction`; the content unchanged when
/// there is none or a non-required one fails.
fn run_driver(
    repo: &Repository,
    path: &Path,
    content: Vec<u8>,
    direction: Direction,
) -> Result<Vec<u8>, FilterError> {
    let Some(drivers) = drivers(repo)? else {
        return Ok(content);
    };
    let mut drivers = drivers.lock().unwrap_or_else(|e| e.into_inner());
    let Some((name, driver)) = driver_for(repo, &drivers, path)? else {
        return Ok(content);
    };
    let command = match direction {
        Direction::Clean => driver.clean.as_deref(),
        Direction::Smudge => driver.smudge.as_deref(),
    }
    .filter(|c| !c.is_empty());
    // As in git: a command for the direction wins over `process` only when no process is
    // configured.
    let outcome = match (&driver.process, command) {
        (Some(process), _) if !process.is_empty() => {
            let cwd = drivers.cwd.clone();
            let slot = drivers
                .running
                .entry(name.clone())
                .or_insert_with(|| LongRunning::start(process, &cwd));
            match slot {
                Ok(filter) => {
                    let result = filter.convert(direction, path, &content);
                    if let Err(Failure::Broken(reason)) = &result {
                        *slot = Err(reason.clone());
                    }
                    result.map_err(Failure::into_reason)
                }
                Err(reason) => Err(reason.clone()),
            }
        }
        (_, Some(command)) => run_command(command, path, &drivers.cwd, &content),
        _ => Err(format!("no {} command is configured", direction.name())),
    };
    match outcome {
        Ok(converted) => Ok(converted),
        Err(reason) if driver.required => Err(FilterError::Required {
            path: path.to_path_buf(),
            direction: direction.name(),
            driver: name,
            reason,
        }),
        Err(reason) => {
            // git warns and goes on with the content unconverted; a missing command for
            // this direction is simply no conversion.
            if driver.process.is_some() || command.is_some() {
                tracing::warn!(
                    "{}: {} filter '{name}' failed ({reason}); content used as is",
                    path.display(),
                    direction.name()
                );
            }
            Ok(content)
        }
    }
}

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
pub fn file_blob(
    repo: &Repository,
    conversions: &Conversions,
    dir: &Path,
    path: &Path,
) -> Result<Oid, FilterError> {
    let full = dir.join(path);
    let content = std::fs::read(&full).map_err(io(&full))?;
    if !conversions.apply_to(repo, path)? {
        return Ok(repo.blob(&content)?);
    }
    blob(repo, path, content)
}

/// The id of the blob `git add` would store for the regular file at `dir/path`, computed
/// without writing anything when no conversion applies to it (a check of the user's file,
/// not something to keep); with a conversion, the blob is written as [`file_blob`] does.
pub fn file_id(
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
pub fn may_convert_any(repo: &Repository, tree: Oid) -> Result<bool, git2::Error> {
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
pub struct Conversions {
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
pub fn smudge_in_place<P: AsRef<Path>>(
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
pub fn smudge_worktree<P: AsRef<Path>>(
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
        index.add(&super::index_lock::with_stat(entry, &meta))?;
    }
    index.write()
}

/// [`smudge_worktree`] for every file `repo`'s index holds: after a full checkout.
pub fn smudge_whole_worktree(repo: &Repository) -> Result<(), git2::Error> {
    if drivers(repo)?.is_none() {
        return Ok(());
    }
    let paths: Vec<PathBuf> = repo
        .index()?
        .iter()
        .map(|e| super::path_from_bytes(&e.path).into_owned())
        .collect();
    smudge_worktree(repo, paths)
}

/// `mode` with the executable bits set where it grants reading (as `chmod +x` would under a
/// usual umask), or cleared.
#[cfg(unix)]
pub fn with_executable(mode: u32, executable: bool) -> u32 {
    if executable {
        mode | ((mode & 0o444) >> 2)
    } else {
        mode & !0o111
    }
}

/// Gives `new`, a freshly checked-out file about to replace `old`, the permissions `old` has
/// (a 600 file stays 600), except the executable bits, which follow `new` (the tree): set,
/// they are granted where `old` grants reading, as `chmod +x` would under a usual umask.
/// Nothing is done when `old` is not a regular file; failing only costs the permissions.
#[cfg(unix)]
pub fn keep_permissions(old: &Path, new: &Path) {
    use std::os::unix::fs::PermissionsExt as _;
    let (Ok(before), Ok(after)) = (std::fs::symlink_metadata(old), std::fs::metadata(new)) else {
        return;
    };
    if !before.is_file() || !after.is_file() {
        return;
    }
    let kept = before.permissions().mode() & 0o666;
    let mode = with_executable(kept, after.permissions().mode() & 0o111 != 0);
    if mode != after.permissions().mode() & 0o7777 {
        let _ = std::fs::set_permissions(new, std::fs::Permissions::from_mode(mode));
    }
}

/// Permissions other than the executable bit are not git's business elsewhere.
#[cfg(not(unix))]
pub fn keep_permissions(_old: &Path, _new: &Path) {}

/// `git add -A` into the in-memory `index` of `repo`'s working tree: libgit2's `add_all` and
/// `update_all`, except that the files with a driver are cleaned through it (libgit2 would
/// store their raw bytes).
pub fn add_all(repo: &Repository, index: &mut Index) -> Result<(), git2::Error> {
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
            if path.as_os_str().as_encoded_bytes().ends_with(b"/") {
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
    super::index_lock::entry(path, id, file_mode(meta), Some(meta))
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

/// `path` quoted for `sh` as git quotes `%f`.
fn shell_quote(path: &Path) -> String {
    let text = path.to_string_lossy();
    let mut out = String::with_capacity(text.len() + 2);
    out.push('\'');
    for c in text.chars() {
        match c {
            '\'' => out.push_str("'\\''"),
            '!' => out.push_str("'\\!'"),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// `command` with `%f` (the quoted path) and `%%` expanded, as git expands it.
fn expand(command: &str, path: &Path) -> String {
    let mut out = String::with_capacity(command.len());
    let mut chars = command.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.peek() {
            Some('f') => {
                chars.next();
                out.push_str(&shell_quote(path));
            }
            Some('%') => {
                chars.next();
                out.push('%');
            }
            _ => out.push('%'),
        }
    }
    out
}

/// A one-shot driver command: `content` on stdin, the converted content on stdout.
fn run_command(command: &str, path: &Path, cwd: &Path, content: &[u8]) -> Result<Vec<u8>, String> {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(expand(command, path))
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run '{command}': {e}"))?;
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let mut stdout = child.stdout.take().ok_or("no stdout")?;
    // Written from another thread while stdout is read, or a filter that writes before it
    // has read everything would block on a full pipe.
    let output = std::thread::scope(|scope| {
        let writer = scope.spawn(move || stdin.write_all(content));
        let mut output = Vec::new();
        let read = stdout.read_to_end(&mut output);
        // A filter may exit without reading everything (`true`): not an error by itself.
        let _ = writer.join();
        read.map(|_| output)
    })
    .map_err(|e| format!("reading its output: {e}"))?;
    let status = child.wait().map_err(|e| e.to_string())?;
    if !status.success() {
        return Err(format!("'{command}' exited with {status}"));
    }
    Ok(output)
}

/// The largest payload of one pkt-line (git's `LARGE_PACKET_DATA_MAX`).
const PKT_MAX: usize = 65516;

fn write_pkt(out: &mut impl Write, data: &[u8]) -> std::io::Result<()> {
    write!(out, "{:04x}", data.len() + 4)?;
    out.write_all(data)
}

fn write_flush(out: &mut impl Write) -> std::io::Result<()> {
    out.write_all(b"0000")
}

/// One pkt-line: `None` for a flush packet.
fn read_pkt(input: &mut impl Read) -> std::io::Result<Option<Vec<u8>>> {
    let mut head = [0u8; 4];
    input.read_exact(&mut head)?;
    let len = std::str::from_utf8(&head)
        .ok()
        .and_then(|h| usize::from_str_radix(h, 16).ok())
        .ok_or_else(|| std::io::Error::other("bad pkt-line length"))?;
    if len == 0 {
        return Ok(None);
    }
    if len < 4 {
        return Err(std::io::Error::other("bad pkt-line length"));
    }
    let mut data = vec![0u8; len - 4];
    input.read_exact(&mut data)?;
    Ok(Some(data))
}

/// Text packets up to a flush, each without its trailing newline.
fn read_list(input: &mut impl Read) -> std::io::Result<Vec<String>> {
    let mut lines = Vec::new();
    while let Some(packet) = read_pkt(input)? {
        let text = String::from_utf8_lossy(&packet);
        lines.push(text.trim_end_matches('\n').to_owned());
    }
    Ok(lines)
}

/// Why one conversion by a long-running filter failed.
enum Failure {
    /// The filter refused this file (`status=error`): it stays usable.
    Refused(String),
    /// The filter is gone or speaks nonsense (`status=abort` too): not asked again.
    Broken(String),
}

impl Failure {
    fn into_reason(self) -> String {
        match self {
            Failure::Refused(r) | Failure::Broken(r) => r,
        }
    }
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Failure {
        Failure::Broken(format!("the filter process failed: {e}"))
    }
}

/// A `filter.<name>.process` filter (git's long-running filter protocol, version 2).
struct LongRunning {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    clean: bool,
    smudge: bool,
}

impl LongRunning {
    /// Starts `command` and shakes hands: version 2, capabilities clean and smudge.
    fn start(command: &str, cwd: &Path) -> Result<LongRunning, String> {
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(command)
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run '{command}': {e}"))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err("no pipes to the filter process".to_owned());
        };
        let mut filter = LongRunning {
            child,
            stdin,
            stdout: BufReader::new(stdout),
            clean: false,
            smudge: false,
        };
        match filter.handshake() {
            Ok(()) => Ok(filter),
            Err(e) => {
                filter.stop();
                Err(format!("'{command}': {e}"))
            }
        }
    }

    fn handshake(&mut self) -> std::io::Result<()> {
        let out = &mut self.stdin;
        write_pkt(out, b"git-filter-client\n")?;
        write_pkt(out, b"version=2\n")?;
        write_flush(out)?;
        out.flush()?;
        let welcome = read_list(&mut self.stdout)?;
        if welcome.first().map(String::as_str) != Some("git-filter-server")
            || !welcome.iter().any(|l| l == "version=2")
        {
            return Err(std::io::Error::other(format!(
                "not a version 2 filter process (said {welcome:?})"
            )));
        }
        let out = &mut self.stdin;
        write_pkt(out, b"capability=clean\n")?;
        write_pkt(out, b"capability=smudge\n")?;
        write_flush(out)?;
        out.flush()?;
        for capability in read_list(&mut self.stdout)? {
            match capability.as_str() {
                "capability=clean" => self.clean = true,
                "capability=smudge" => self.smudge = true,
                _ => {}
            }
        }
        Ok(())
    }

    /// One file through the filter.
    fn convert(
        &mut self,
        direction: Direction,
        path: &Path,
        content: &[u8],
    ) -> Result<Vec<u8>, Failure> {
        let capable = match direction {
            Direction::Clean => self.clean,
            Direction::Smudge => self.smudge,
        };
        if !capable {
            return Err(Failure::Refused(format!(
                "the filter process does not {}",
                direction.name()
            )));
        }
        let out = &mut self.stdin;
        write_pkt(out, format!("command={}\n", direction.name()).as_bytes())?;
        let mut pathname = b"pathname=".to_vec();
        pathname.extend_from_slice(path.as_os_str().as_encoded_bytes());
        pathname.push(b'\n');
        write_pkt(out, &pathname)?;
        write_flush(out)?;
        for chunk in content.chunks(PKT_MAX) {
            write_pkt(out, chunk)?;
        }
        write_flush(out)?;
        out.flush()?;
        let status = |list: &[String]| {
            list.iter()
                .rev()
                .find_map(|l| l.strip_prefix("status=").map(str::to_owned))
        };
        let first = status(&read_list(&mut self.stdout)?);
        match first.as_deref() {
            Some("success") => {}
            Some("abort") => return Err(Failure::Broken("the filter process aborted".into())),
            Some(other) => {
                return Err(Failure::Refused(format!("the filter process said {other}")));
            }
            None => return Err(Failure::Broken("the filter process sent no status".into())),
        }
        let mut converted = Vec::with_capacity(content.len());
        while let Some(packet) = read_pkt(&mut self.stdout)? {
            converted.extend_from_slice(&packet);
        }
        // A second status list: empty keeps "success"; anything else overrides it.
        match status(&read_list(&mut self.stdout)?).as_deref() {
            None | Some("success") => Ok(converted),
            Some("abort") => Err(Failure::Broken("the filter process aborted".into())),
            Some(other) => Err(Failure::Refused(format!("the filter process said {other}"))),
        }
    }

    /// Closes its input (the protocol's way to say "done") and waits for it to exit.
    fn stop(self) {
        let LongRunning {
            mut child, stdin, ..
        } = self;
        drop(stdin);
        let _ = child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::testing::{git, init_repo, write_file};

    #[test]
    fn percent_f_is_the_quoted_path() {
        assert_eq!(
            expand("x %f %% %q", Path::new("it's a!.txt")),
            r"x 'it'\''s a'\!'.txt' % %q"
        );
    }

    #[test]
    fn pkt_lines_round_trip() {
        let mut buffer = Vec::new();
        write_pkt(&mut buffer, b"version=2\n").expect("write");
        write_flush(&mut buffer).expect("write");
        assert_eq!(buffer, b"000eversion=2\n0000");
        let mut input = buffer.as_slice();
        assert_eq!(read_list(&mut input).expect("read"), ["version=2"]);
    }

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
