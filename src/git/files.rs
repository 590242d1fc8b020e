//! Files of a working tree as git leaves them: folders emptied by a deletion removed, a
//! file's permissions kept across a rewrite, the executable bits following the tree, and a
//! name under the root that means that place, not where a symlink among its folders leads.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Folders left empty above `path`, up to the working tree root, are removed (as git does).
pub(crate) fn remove_empty_parents(workdir: &Path, path: &Path) {
    remove_empty_parents_keeping(workdir, path, &BTreeSet::new());
}

/// [`remove_empty_parents`], stopping at the folders in `keep` (which then hold what is
/// above them).
pub(crate) fn remove_empty_parents_keeping(workdir: &Path, path: &Path, keep: &BTreeSet<PathBuf>) {
    let mut dir = path.parent();
    while let Some(parent) = dir.filter(|d| !d.as_os_str().is_empty()) {
        if keep.contains(parent) || std::fs::remove_dir(workdir.join(parent)).is_err() {
            break;
        }
        dir = parent.parent();
    }
}

/// `mode` with the executable bits set where it grants reading (as `chmod +x` would under a
/// usual umask), or cleared.
#[cfg(unix)]
pub(crate) fn with_executable(mode: u32, executable: bool) -> u32 {
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
pub(crate) fn keep_permissions(old: &Path, new: &Path) {
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
pub(crate) fn keep_permissions(_old: &Path, _new: &Path) {}

/// Gives a plain file the executable bits its mode says (git's `x` for whoever may read it),
/// for a change of mode alone; a filesystem that keeps no such bit is left as it is.
#[cfg(unix)]
pub(crate) fn set_executable(file: &Path, executable: bool) {
    use std::os::unix::fs::PermissionsExt as _;
    let Ok(meta) = std::fs::symlink_metadata(file) else {
        return;
    };
    let mode = meta.permissions().mode() & 0o7777;
    let wanted = with_executable(mode, executable);
    if meta.is_file() && wanted != mode {
        let _ = std::fs::set_permissions(file, std::fs::Permissions::from_mode(wanted));
    }
}

#[cfg(not(unix))]
pub(crate) fn set_executable(_file: &Path, _executable: bool) {}

/// Which folders of a tree (the stage's) are real folders: a name in the stage must mean that
/// place in the stage, not one a symlink among its folders leads to (in another worktree's
/// files, or outside the repository). Each folder is looked at once per operation.
pub(crate) struct RealFolders {
    root: PathBuf,
    known: std::collections::HashSet<PathBuf>,
}

impl RealFolders {
    pub(crate) fn under(root: &Path) -> RealFolders {
        RealFolders {
            root: root.to_path_buf(),
            known: Default::default(),
        }
    }

    /// Whether every folder on the way from the root to `path` (relative) is a real folder
    /// or absent (then made as one), never a symlink or a file.
    pub(crate) fn lead_to(&mut self, path: &Path) -> bool {
        let Some(parent) = path.parent() else {
            return true;
        };
        let mut folder = PathBuf::new();
        for part in parent.components() {
            folder.push(part);
            if self.known.contains(&folder) {
                continue;
            }
            match std::fs::symlink_metadata(self.root.join(&folder)) {
                Ok(meta) if meta.is_dir() => {
                    self.known.insert(folder.clone());
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return true,
                _ => return false,
            }
        }
        true
    }
}
