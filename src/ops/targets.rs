//! The paths a reply's write actions name, as the stage holds them: what an apply commits and
//! what the exec change watch knows was written (both read them here).

use std::path::{Path, PathBuf};

use crate::actions::Schema;
use crate::exec::bad_path;
use crate::report::ActionResult;

/// The paths one action wrote, relative to `root`, sorted out of its parameters (nothing for
/// an action that does not write): never a path through a `.git`, nor one the actions
/// refused as bad.
pub(crate) fn action_targets(r: &ActionResult, root: &Path, stage: &Path) -> Vec<PathBuf> {
    let schema = Schema::get();
    let mut paths = Vec::new();
    if schema.tool(&r.action).is_none_or(|t| t.kind != "write") {
        return paths;
    }
    for key in ["path", "old_path", "new_path", "paths"] {
        let Some(value) = r.params.get(key).and_then(|v| v.as_str()) else {
            continue;
        };
        // Only `paths` is a list (one per line): any other value is one path, whole. Split,
        // a path with a line break would name other files than the one written, which
        // then would never be committed.
        let targets: Vec<&str> = if key == "paths" {
            value.lines().map(str::trim).collect()
        } else {
            vec![value]
        };
        for target in targets.into_iter().filter(|t| !t.is_empty()) {
            // A path the actions refused as bad (see [`bad_path`]) was not written, and
            // the stage cannot even look it up.
            let path = Path::new(target);
            if bad_path::check(path, &stage.join(path.strip_prefix(root).unwrap_or(path))).is_err()
            {
                continue;
            }
            if let Some(relative) = relative_to(root, path)
                && !relative
                    .components()
                    .any(|c| c.as_os_str().eq_ignore_ascii_case(".git"))
            {
                paths.push(relative);
            }
        }
    }
    paths
}

/// Whether `path` or one of its folders is a symlink in the stage.
pub(crate) fn through_symlink(stage: &Path, path: &Path) -> bool {
    path.ancestors()
        .filter(|p| !p.as_os_str().is_empty())
        .any(|p| {
            stage
                .join(p)
                .symlink_metadata()
                .is_ok_and(|m| m.file_type().is_symlink())
        })
}

/// `path` relative to `root`, `.` and `..` resolved lexically; `None` outside the root or for
/// the root itself.
fn relative_to(root: &Path, path: &Path) -> Option<PathBuf> {
    let normal = crate::exec::guard::lexical(path);
    let relative = normal.strip_prefix(root).ok()?;
    (!relative.as_os_str().is_empty()).then(|| relative.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_resolve_dots_and_stay_inside() {
        let root = Path::new("/repo");
        assert_eq!(
            relative_to(root, Path::new("/repo/a/../b.txt")),
            Some("b.txt".into())
        );
        assert_eq!(
            relative_to(root, Path::new("/repo/./x/y")),
            Some("x/y".into())
        );
        assert_eq!(relative_to(root, Path::new("/repo/../etc/passwd")), None);
        assert_eq!(relative_to(root, Path::new("/repo")), None);
        assert_eq!(relative_to(root, Path::new("/repository/a")), None);
    }
}
