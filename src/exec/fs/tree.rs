//! Changing the tree: `file_delete`, `file_move` (parents created, an existing destination
//! overwritten and reported as `overwrote`), `dir_create` (with parents, like `mkdir -p`)
//! and `dir_delete` (empty directories only: nothing is ever deleted recursively).

use std::fs;
use std::io::ErrorKind;
use std::path::Path;

use serde_json::json;

use super::call::Call;
use super::os_error::{os_error, os_error2};
use super::text::write_atomic;
use crate::exec::{Access, ActionOutcome};

/// Names shown at most when a directory is not empty.
const MAX_NAMES: usize = 5;

/// `file_delete`: data `{path}`.
pub(super) fn file_delete(call: &Call) -> Result<ActionOutcome, String> {
    let target = call.path("path", &[Access::Write])?;
    fs::remove_file(&target.real).map_err(|e| {
        let message = os_error(&e, "unlink", &target.user);
        if target.real.is_dir() {
            format!("{message} (it is a directory: use dir_delete)")
        } else {
            message
        }
    })?;
    Ok(ActionOutcome::ok(Some(json!({"path": target.user}))))
}

/// `file_move`: data `{old_path, new_path}`, plus `overwrote: true` when `new_path` existed.
/// Moves files (and symlinks) only; a directory would carry paths the fs-guard never saw.
pub(super) fn file_move(call: &Call) -> Result<ActionOutcome, String> {
    let from = call.path("old_path", &[Access::Read, Access::Write])?;
    let to = call.path("new_path", &[Access::Write])?;
    let source = match fs::symlink_metadata(&from.real) {
        Ok(meta) => meta,
        Err(e) if e.kind() == ErrorKind::NotFound => {
            return Err(call.fail(format!("Source file not found '{}' (ENOENT)", from.user)));
        }
        Err(e) => return Err(os_error2(&e, "rename", &from.user, &to.user)),
    };
    if source.is_dir() {
        return Err(call.fail(format!(
            "Source is a directory '{}' (EISDIR): file_move moves files only",
            from.user
        )));
    }
    if from.real == to.real {
        return Ok(ActionOutcome::ok(Some(
            json!({"old_path": from.user, "new_path": to.user}),
        )));
    }
    let overwrote = fs::symlink_metadata(&to.real).is_ok();
    if let Some(parent) = to.real.parent() {
        fs::create_dir_all(parent).map_err(|e| {
            let user_parent = Path::new(&to.user)
                .parent()
                .map_or_else(|| to.user.clone(), |p| p.to_string_lossy().into_owned());
            os_error(&e, "mkdir", &user_parent)
        })?;
    }
    if to.real.is_dir() && !fs::symlink_metadata(&to.real).is_ok_and(|m| m.is_symlink()) {
        let e = std::io::Error::from(ErrorKind::IsADirectory);
        return Err(os_error2(&e, "rename", &from.user, &to.user));
    }
    match fs::rename(&from.real, &to.real) {
        Ok(()) => {}
        // Another filesystem (say /tmp to the repository): copy, then remove the original.
        Err(e) if e.kind() == ErrorKind::CrossesDevices && source.is_file() => {
            let copy = fs::read(&from.real)
                .and_then(|bytes| write_atomic(&to.real, &bytes))
                .and_then(|()| fs::set_permissions(&to.real, source.permissions()))
                .and_then(|()| fs::remove_file(&from.real));
            copy.map_err(|e| os_error2(&e, "rename", &from.user, &to.user))?;
        }
        Err(e) => return Err(os_error2(&e, "rename", &from.user, &to.user)),
    }
    let mut data = json!({"old_path": from.user, "new_path": to.user});
    if overwrote {
        data["overwrote"] = json!(true);
    }
    Ok(ActionOutcome::ok(Some(data)))
}

/// `dir_create`: data `{path}`. Parents are created too; a directory that already exists is
/// fine (there is nothing left to do), a file in the way is not.
pub(super) fn dir_create(call: &Call) -> Result<ActionOutcome, String> {
    let target = call.path("path", &[Access::Write])?;
    if fs::metadata(&target.real).is_ok_and(|m| !m.is_dir()) {
        let e = std::io::Error::from(ErrorKind::AlreadyExists);
        return Err(os_error(&e, "mkdir", &target.user));
    }
    fs::create_dir_all(&target.real).map_err(|e| os_error(&e, "mkdir", &target.user))?;
    Ok(ActionOutcome::ok(Some(json!({"path": target.user}))))
}

/// `dir_delete`: data `{path}`. Only an empty directory is removed; otherwise the message
/// names what is inside, so the model can delete it first if that is really what it wants.
pub(super) fn dir_delete(call: &Call) -> Result<ActionOutcome, String> {
    let target = call.path("path", &[Access::Write])?;
    let meta =
        fs::symlink_metadata(&target.real).map_err(|e| os_error(&e, "rmdir", &target.user))?;
    if !meta.is_dir() {
        let e = std::io::Error::from(ErrorKind::NotADirectory);
        return Err(format!(
            "{} (use file_delete for files)",
            os_error(&e, "rmdir", &target.user)
        ));
    }
    let entries = fs::read_dir(&target.real).map_err(|e| os_error(&e, "scandir", &target.user))?;
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            match entry.file_type() {
                Ok(t) if t.is_dir() => name + "/",
                _ => name,
            }
        })
        .collect();
    if !names.is_empty() {
        names.sort();
        let total = names.len();
        let more = total.saturating_sub(MAX_NAMES);
        names.truncate(MAX_NAMES);
        let mut list = names.join(", ");
        if more > 0 {
            list.push_str(&format!(" and {more} more"));
        }
        return Err(call.fail(format!(
            "Directory not empty '{}' (ENOTEMPTY): it contains {list}. dir_delete removes empty directories only; delete what is inside first",
            target.user
        )));
    }
    fs::remove_dir(&target.real).map_err(|e| os_error(&e, "rmdir", &target.user))?;
    Ok(ActionOutcome::ok(Some(json!({"path": target.user}))))
}
