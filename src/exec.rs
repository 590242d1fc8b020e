//! Running validated actions: filesystem operations, the fs-guard, code execution and hooks.
//!
//! Knows nothing about git. Outside a transaction (`apply --no-commit`) actions run where
//! their paths say; inside one, the transaction hands over a [`PathMap`] that redirects the
//! repository's paths into the staging worktree, and every path and message that reaches
//! the report is mapped back, so the model only ever sees its own paths.

pub(crate) mod bad_path;
pub(crate) mod descriptors;
pub mod environment;
pub mod fs;

pub mod guard;
pub mod hooks;
pub mod process;
pub mod sandbox;
pub(crate) mod secret_paths;
pub mod shell;
mod user_view;

use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

/// An action's parameters after validation and type conversion, in the block's key order.
pub type Params = serde_json::Map<String, Value>;

/// What one action did: the `success`, `error` and `data` of the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ActionOutcome {
    /// Whether the action did what it was asked.
    pub success: bool,
    /// Why not, written for the model to fix its next reply in one go.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What it produced (file contents, listings, exec output, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ActionOutcome {
    /// A success, with or without data.
    pub fn ok(data: Option<Value>) -> Self {
        ActionOutcome {
            success: true,
            error: None,
            data,
        }
    }

    /// A failure with its message.
    pub fn fail(error: impl Into<String>) -> Self {
        ActionOutcome {
            success: false,
            error: Some(error.into()),
            data: None,
        }
    }
}

/// Reading or writing, as the fs-guard distinguishes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Reading a file or listing a directory.
    Read,
    /// Creating, changing, moving or deleting.
    Write,
}

impl Access {
    /// `read` or `write`, as messages say it.
    pub fn as_str(self) -> &'static str {
        match self {
            Access::Read => "read",
            Access::Write => "write",
        }
    }
}

/// Decides whether a path may be read or written (the fs-guard implements it).
pub trait AccessCheck {
    /// The path to use (canonical, symlinks resolved) when access is allowed; otherwise the
    /// refusal message, `fs-guard violation: <read|write> access denied for '<path>'` and
    /// the allowed roots.
    fn check(&self, access: Access, path: &Path) -> Result<PathBuf, String>;
}

/// Allows everything: for tests of the actions themselves.
#[derive(Debug, Clone, Copy, Default)]
pub struct AllowAll;

impl AccessCheck for AllowAll {
    fn check(&self, _: Access, path: &Path) -> Result<PathBuf, String> {
        Ok(path.to_path_buf())
    }
}

/// Which of the user's files show through the staging worktree where it holds nothing: the
/// files git ignores (`.venv`, `node_modules`, `.env`), which a worktree never holds. The
/// transaction implements it (`tx::visible_ignored::Visibility`); this module only asks.
pub trait ShowThrough {
    /// Whether the user's file or folder at `relative` (to the root) is visible.
    fn shows(&self, relative: &Path) -> bool;
    /// Whether the stage holds only a placeholder at `relative` (an empty file or folder
    /// where exec gets the user's entry mounted), which hides nothing.
    fn placeholder(&self, relative: &Path) -> bool;
    /// The user's file at `relative` was copied into the stage to be changed: from now on
    /// the stage's copy (or its absence, if the run deletes it) is what the run sees.
    fn copy_made(&self, relative: &Path);
}

/// Maps the paths the model sees (the user's) to where actions really run, and back; and,
/// in a stage, which of the user's own files show through it ([`ShowThrough`]).
#[derive(Clone)]
pub struct PathMap {
    user_root: PathBuf,
    real_root: PathBuf,
    through: Option<Rc<dyn ShowThrough>>,
    /// The real root, canonical, when it is a scratch copy whose files are written in place.
    scratch: Option<PathBuf>,
}

impl std::fmt::Debug for PathMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PathMap")
            .field("user_root", &self.user_root)
            .field("real_root", &self.real_root)
            .field("show_through", &self.through.is_some())
            .finish()
    }
}

impl PathMap {
    /// No redirection: actions run where their paths say.
    pub fn identity(root: &Path) -> Self {
        PathMap {
            user_root: root.to_path_buf(),
            real_root: root.to_path_buf(),
            through: None,
            scratch: None,
        }
    }

    /// Paths under `user_root` run under `real_root` instead.
    pub fn redirect(user_root: &Path, real_root: &Path) -> Self {
        PathMap {
            user_root: user_root.to_path_buf(),
            real_root: real_root.to_path_buf(),
            through: None,
            scratch: None,
        }
    }

    /// The real root is a scratch copy (the stage: nobody reads it while actions run, and a
    /// crash resets it), so its files are written in place rather than through a temporary
    /// file and a rename.
    pub fn scratch(mut self) -> Self {
        if self.user_root != self.real_root {
            self.scratch = Some(
                std::fs::canonicalize(&self.real_root).unwrap_or_else(|_| self.real_root.clone()),
            );
        }
        self
    }

    /// Whether the resolved path `checked` is in the scratch copy.
    pub fn in_scratch(&self, checked: &Path) -> bool {
        self.scratch
            .as_ref()
            .is_some_and(|root| checked.starts_with(root))
    }

    /// Where `real_root` holds nothing (or a placeholder), the user's file shows through
    /// when `through` says so: reads get the user's file, writes a copy of it first.
    pub fn showing(mut self, through: Rc<dyn ShowThrough>) -> Self {
        if self.user_root != self.real_root {
            self.through = Some(through);
        }
        self
    }

    /// The root as the model sees it (the repository root, or the current directory).
    pub fn user_root(&self) -> &Path {
        &self.user_root
    }

    /// Where a path the model wrote really is. A path whose `..` climb out of the root
    /// (`<root>/../x`) is outside it, not under the real root's parent.
    pub fn to_real(&self, user: &Path) -> PathBuf {
        let user = if self.user_root == self.real_root {
            std::borrow::Cow::Borrowed(user)
        } else {
            root_spelled_as_ours(&self.user_root, user)
        };
        let user = user.as_ref();
        match user.strip_prefix(&self.user_root) {
            Ok(rest) if self.user_root != self.real_root && !climbs_out(rest) => {
                self.real_root.join(rest)
            }
            _ => user.to_path_buf(),
        }
    }

    /// How the model should see a real path.
    pub fn to_user(&self, real: &Path) -> PathBuf {
        match real.strip_prefix(&self.real_root) {
            Ok(rest) if self.user_root != self.real_root => self.user_root.join(rest),
            _ => real.to_path_buf(),
        }
    }

    /// A message or output with every mention of the real root replaced by the user's.
    pub fn scrub(&self, text: &str) -> String {
        if self.user_root == self.real_root {
            return text.to_owned();
        }
        let (real, user) = (
            self.real_root.to_string_lossy(),
            self.user_root.to_string_lossy(),
        );
        text.replace(real.as_ref(), user.as_ref())
    }

    /// The user's own file (or folder) to use for the real path `real`, when the stage holds
    /// nothing there, or only a placeholder, and the user's path shows through and exists.
    /// No walk: one `lstat` in the stage, then one question to [`ShowThrough`].
    pub fn show_through(&self, real: &Path) -> Option<PathBuf> {
        let through = self.through.as_ref()?;
        let relative = normal_relative(real.strip_prefix(&self.real_root).ok()?)?;
        match real.symlink_metadata() {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Ok(_) if through.placeholder(&relative) => {}
            _ => return None,
        }
        let user = self.user_root.join(&relative);
        (user.symlink_metadata().is_ok() && through.shows(&relative)).then_some(user)
    }

    /// The user's entries in the folder matching the real folder `real_dir` that show
    /// through it (the stage lacks them, or holds a placeholder), as the user's paths.
    pub fn shown_in(&self, real_dir: &Path) -> Vec<PathBuf> {
        let Some(through) = self.through.as_ref() else {
            return Vec::new();
        };
        let Some(relative) = real_dir.strip_prefix(&self.real_root).ok() else {
            return Vec::new();
        };
        let Ok(entries) = std::fs::read_dir(self.user_root.join(relative)) else {
            return Vec::new();
        };
        entries
            .filter_map(Result::ok)
            .filter_map(|entry| {
                let name = entry.file_name();
                let here = relative.join(&name);
                let hidden =
                    real_dir.join(&name).symlink_metadata().is_ok() && !through.placeholder(&here);
                (!hidden && through.shows(&here)).then(|| entry.path())
            })
            .collect()
    }

    /// The path the fs-guard should judge for `path`: a user's file that shows through is
    /// judged as if it were in the stage (the guard's rules are anchored there), after its
    /// symlinks are resolved, so a link out of the tree is judged where it leads.
    pub fn guard_view(&self, path: &Path) -> PathBuf {
        if self.through.is_none()
            || path.starts_with(&self.real_root)
            || !path.starts_with(&self.user_root)
        {
            return path.to_path_buf();
        }
        let resolved = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        let root =
            std::fs::canonicalize(&self.user_root).unwrap_or_else(|_| self.user_root.clone());
        match resolved.strip_prefix(&root) {
            Ok(rest) => self.real_root.join(rest),
            Err(_) => resolved,
        }
    }

    /// Records that the real path `real` now holds a copy of the user's file.
    pub fn copy_made(&self, real: &Path) {
        let relative = real
            .strip_prefix(&self.real_root)
            .ok()
            .and_then(normal_relative);
        if let (Some(through), Some(relative)) = (self.through.as_ref(), relative) {
            through.copy_made(&relative);
        }
    }
}

/// `relative` with `.` and `..` resolved lexically; `None` for the root itself or outside it.
fn normal_relative(relative: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for component in relative.components() {
        match component {
            std::path::Component::Normal(n) => out.push(n),
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir if out.pop() => {}
            _ => return None,
        }
    }
    (!out.as_os_str().is_empty()).then_some(out)
}

/// `path` with another spelling of `root` replaced by `root`: a folder that resolves to it
/// (the user reached the repository through a symlink, `~/code` → `/data/code`, and showed
/// the model those paths). Only a spelling of the root itself counts: a symlink under the
/// root is the guard's to judge where it leads.
pub(crate) fn root_spelled_as_ours<'p>(root: &Path, path: &'p Path) -> std::borrow::Cow<'p, Path> {
    use std::borrow::Cow;
    if !path.is_absolute() || path.starts_with(root) {
        return Cow::Borrowed(path);
    }
    let Ok(canonical_root) = root.canonicalize() else {
        return Cow::Borrowed(path);
    };
    for spelling in path.ancestors().filter(|a| a.parent().is_some()) {
        if spelling
            .canonicalize()
            .is_ok_and(|found| found == canonical_root)
            && let Ok(rest) = path.strip_prefix(spelling)
        {
            return Cow::Owned(root.join(rest));
        }
    }
    Cow::Borrowed(path)
}

/// Whether the `..` in relative `path` lead above where it starts.
fn climbs_out(path: &Path) -> bool {
    let mut depth = 0usize;
    for component in path.components() {
        match component {
            std::path::Component::ParentDir if depth == 0 => return true,
            std::path::Component::ParentDir => depth -= 1,
            std::path::Component::Normal(_) => depth += 1,
            _ => {}
        }
    }
    false
}

/// Where actions run and what they may touch.
pub struct Workspace<'a> {
    /// Decides what may be read and written.
    pub guard: &'a dyn AccessCheck,
    /// User paths ↔ real paths.
    pub paths: &'a PathMap,
    /// Files larger than this are refused (`max_file_size`, default 10 MiB).
    pub max_file_size: u64,
    /// How long `exec` code may run before its process group is killed.
    pub exec_timeout: Duration,
    /// Bytes kept of each exec output stream; the rest is cut and marked truncated.
    pub max_output: usize,
    /// Where `exec` code runs inside a transaction (the stage at the user's path, visible
    /// ignored entries, no survivors); None: directly where its paths say.
    pub sandbox: Option<&'a sandbox::Sandbox>,
}

impl Workspace<'_> {
    /// Defaults for tests: everything allowed, no redirection, 10 MiB, 30 s, 1 MiB, no
    /// sandbox.
    pub fn permissive<'a>(guard: &'a dyn AccessCheck, paths: &'a PathMap) -> Workspace<'a> {
        Workspace {
            guard,
            paths,
            max_file_size: 10 * 1024 * 1024,
            exec_timeout: Duration::from_secs(30),
            max_output: 1024 * 1024,
            sandbox: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_map_redirects_only_inside_the_root() {
        let map = PathMap::redirect(Path::new("/repo"), Path::new("/repo/.git/loaf/stage"));
        assert_eq!(
            map.to_real(Path::new("/repo/src/a.rs")),
            Path::new("/repo/.git/loaf/stage/src/a.rs")
        );
        assert_eq!(map.to_real(Path::new("/tmp/x")), Path::new("/tmp/x"));
        assert_eq!(
            map.to_user(Path::new("/repo/.git/loaf/stage/src/a.rs")),
            Path::new("/repo/src/a.rs")
        );
        assert_eq!(
            map.scrub("error at /repo/.git/loaf/stage/b: x"),
            "error at /repo/b: x"
        );
        let same = PathMap::identity(Path::new("/repo"));
        assert_eq!(same.to_real(Path::new("/repo/a")), Path::new("/repo/a"));
    }
}
