//! The copy of the repository's git hooks taken when an apply starts (`<git common dir>/loaf/githooks`,
//! 0700): the hooks found and the small files beside them, so that the hooks that run are the
//! ones the user had before the apply, never a version the reply wrote
//! ([`super::GitHooks::take`]). See docs/apply.md.

use std::path::{Path, PathBuf};

/// Where, under the git common dir, the hooks are copied when an apply starts.
pub(super) const COPY_DIR: &str = "loaf/githooks";

/// Bytes past which a file beside the hooks (not a hook itself) is not copied: helpers that
/// hooks source are small scripts.
const HELPER_MAX_BYTES: u64 = 1024 * 1024;

/// The private copy of a hooks folder, under the git common dir: every hook (even one of
/// code that the sandbox shows the git dir elsewhere, where it is asked of git), the files
/// beside them (husky's `h`, a sourced `common.sh`) and, for a folder inside the working
/// tree below the root, the files of its parent (husky's `_/pre-commit` runs
/// `../pre-commit`).
#[derive(Debug)]
pub(super) struct HooksCopy {
    /// The copy's top folder (absolute), removed on drop.
    pub(super) top: PathBuf,
    /// The hooks folder in the copy, relative to the common dir.
    pub(super) hooks: PathBuf,
}

impl Drop for HooksCopy {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.top);
    }
}

/// Copies the hooks folder `dir` (and, inside the working tree `root` below its root, the
/// files of its parent) into `top`, made private (0700). The hooks named `found` must copy;
/// a helper beside them that cannot (unreadable, too large) is left out.
pub(super) fn copy_hooks(
    dir: &Path,
    root: &Path,
    found: &[&str],
    top: PathBuf,
) -> std::io::Result<HooksCopy> {
    if let Some(parent) = top.parent() {
        std::fs::create_dir_all(parent)?;
    }
    private_dir(&top)?;
    // From here on a failure removes what was copied.
    let copy = HooksCopy {
        hooks: Path::new(COPY_DIR).join("hooks"),
        top,
    };
    let hooks = copy.top.join("hooks");
    private_dir(&hooks)?;
    for name in found {
        std::fs::copy(dir.join(name), hooks.join(name))?;
    }
    copy_helpers(dir, &hooks, |name| found.contains(&name));
    let parent = dir.parent().filter(|p| p.starts_with(root) && *p != root);
    if let Some(parent) = parent {
        copy_helpers(parent, &copy.top, |name| name == "hooks");
    }
    Ok(copy)
}

/// Copies the regular files of `from` (symlinks followed) into `to`, but those `skip`
/// names, git's `*.sample` files and files past [`HELPER_MAX_BYTES`]; at most 256 of them.
fn copy_helpers(from: &Path, to: &Path, skip: impl Fn(&str) -> bool) {
    let Ok(entries) = std::fs::read_dir(from) else {
        return;
    };
    for entry in entries.filter_map(Result::ok).take(256) {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if skip(name) || name.ends_with(".sample") {
            continue;
        }
        let path = entry.path();
        let small_file =
            std::fs::metadata(&path).is_ok_and(|m| m.is_file() && m.len() <= HELPER_MAX_BYTES);
        if small_file {
            // A helper that cannot be read is left out: the hook that needs it fails as
            // it would with any missing file.
            let _ = std::fs::copy(&path, to.join(name));
        }
    }
}

/// Creates the folder `path`, readable by its owner only.
fn private_dir(path: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(path)
}

/// Whether `path` is a file git would run as a hook (executable).
pub(super) fn is_executable(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        std::fs::metadata(path).is_ok_and(|m| m.is_file())
    }
}
