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
    placed_targets(r, root, stage)
        .into_iter()
        .flatten()
        .collect()
}

/// Whether a write action that succeeded names a target [`action_targets`] cannot place
/// under the root: what it wrote is then somewhere the stage must be scanned for, or the
/// block would be ✅ with its write never committed.
pub(crate) fn writes_unplaced(r: &ActionResult, root: &Path, stage: &Path) -> bool {
    r.success && placed_targets(r, root, stage).iter().any(Option::is_none)
}

/// Each target of a write action, relative to the root (`None`: not under it); the ones
/// refused as bad, or through a `.git`, left out (nothing was written there).
fn placed_targets(r: &ActionResult, root: &Path, stage: &Path) -> Vec<Option<PathBuf>> {
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
            match relative_to(root, path) {
                Some(relative)
                    if relative
                        .components()
                        .any(|c| c.as_os_str().eq_ignore_ascii_case(".git")) => {}
                placed => paths.push(placed),
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
    let path = crate::exec::root_spelled_as_ours(root, path);
    let normal = crate::exec::guard::lexical(&path);
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

    fn write(path: &str, success: bool) -> ActionResult {
        ActionResult {
            seq: 1,
            block_id: "b1".into(),
            action: "file_write".into(),
            params: serde_json::json!({ "path": path, "content": "x" })
                .as_object()
                .cloned()
                .unwrap_or_default(),
            success,
            error: None,
            data: None,
            start_line: 1,
        }
    }

    /// A folder that resolves to the root is another spelling of it; a symlink under the
    /// root is not (it is judged where it leads).
    #[test]
    fn a_symlink_to_the_root_spells_the_root() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("repo").join("");
        std::fs::create_dir_all(root.join("sub")).expect("mkdir");
        let root = root.canonicalize().expect("canonical");
        let alias = dir.path().join("alias");
        std::os::unix::fs::symlink(&root, &alias).expect("symlink");
        std::os::unix::fs::symlink(&root, root.join("sub/back")).expect("symlink");
        let stage = dir.path().join("stage");
        assert_eq!(
            relative_to(&root, &alias.join("a/b.txt")),
            Some("a/b.txt".into())
        );
        assert_eq!(
            relative_to(&root, &root.join("sub/back/c.txt")),
            Some("sub/back/c.txt".into()),
            "under the root: taken as written"
        );
        assert_eq!(relative_to(&root, &dir.path().join("elsewhere/x")), None);
        let through_alias = write(&alias.join("b.txt").display().to_string(), true);
        assert_eq!(
            action_targets(&through_alias, &root, &stage),
            vec![PathBuf::from("b.txt")]
        );
        assert!(!writes_unplaced(&through_alias, &root, &stage));
    }

    /// A write that succeeded at a path not placed under the root makes the caller scan the
    /// stage (else its block would be ✅ and the write never committed); a failed one, or one
    /// placed, does not.
    #[test]
    fn a_successful_write_that_cannot_be_placed_is_said() {
        let (root, stage) = (Path::new("/repo"), Path::new("/stage"));
        assert!(writes_unplaced(
            &write("/elsewhere/b.txt", true),
            root,
            stage
        ));
        assert!(!writes_unplaced(
            &write("/elsewhere/b.txt", false),
            root,
            stage
        ));
        assert!(!writes_unplaced(&write("/repo/b.txt", true), root, stage));
        assert!(!writes_unplaced(
            &write("/repo/.git/config", true),
            root,
            stage
        ));
    }
}
