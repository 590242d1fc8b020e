//! Writing whole contents: `file_write` (create or overwrite, parents created) and
//! `file_append` (add to the end, creating the file if needed).

use std::fs;
use std::path::Path;

use serde_json::json;

use super::call::{Call, Target};
use super::os_error::os_error;
use super::text::{self, Eol, TextFile};
use crate::exec::{Access, ActionOutcome};

/// Creates the missing parent directories of `target`.
fn create_parents(target: &Target) -> Result<(), String> {
    let Some(parent) = target.checked.parent() else {
        return Ok(());
    };
    fs::create_dir_all(parent).map_err(|e| {
        let user_parent = Path::new(&target.user)
            .parent()
            .map_or_else(|| target.user.clone(), |p| p.to_string_lossy().into_owned());
        os_error(&e, "mkdir", &user_parent)
    })
}

/// `file_write`: data `{path, bytesWritten}`. Overwriting a CRLF file writes the content
/// with CRLF, and a file that had a byte order mark keeps it.
pub(super) fn file_write(call: &Call) -> Result<ActionOutcome, String> {
    let content = call.text("content")?;
    let target = call.path("path", &[Access::Write])?;
    let (bom, eol) = text::existing_style(&target.checked).unwrap_or((false, Eol::Lf));
    let previous = TextFile {
        bom,
        text: String::new(),
        eol,
    };
    let content = match eol {
        Eol::CrLf => Eol::CrLf.apply(content),
        Eol::Lf => content.to_owned(),
    };
    let bytes = previous.encode(&content);
    text::check_size(&target.user, bytes.len(), call.ws.max_file_size)
        .map_err(|e| e.for_action(call.action))?;
    create_parents(&target)?;
    text::store(&target, &bytes)?;
    Ok(ActionOutcome::ok(Some(
        json!({"path": target.user, "bytesWritten": bytes.len()}),
    )))
}

/// `file_append`: data `{path, bytesWritten}` (the bytes added), plus `created: true` when
/// the file did not exist. Content goes on a line of its own: if the file's last line has
/// no line break, one is added first, so appending line after line never glues two
/// together. The content takes the file's line breaks.
pub(super) fn file_append(call: &Call) -> Result<ActionOutcome, String> {
    let content = call.text("content")?;
    let target = call.path("path", &[Access::Read, Access::Write])?;
    if fs::symlink_metadata(&target.checked)
        .is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
    {
        text::check_size(&target.user, content.len(), call.ws.max_file_size)
            .map_err(|e| e.for_action(call.action))?;
        create_parents(&target)?;
        text::store(&target, content.as_bytes())?;
        return Ok(ActionOutcome::ok(Some(json!({
            "path": target.user,
            "bytesWritten": content.len(),
            "created": true,
        }))));
    }
    let file = text::load(&target, call.ws.max_file_size).map_err(|e| e.for_action(call.action))?;
    let mut addition = String::new();
    if !content.is_empty() {
        if !file.text.is_empty() && !file.text.ends_with('\n') {
            addition.push_str(file.eol.as_str());
        }
        addition.push_str(&file.eol.apply(content));
    }
    let bytes = file.encode(&(file.text.clone() + &addition));
    text::check_size(&target.user, bytes.len(), call.ws.max_file_size)
        .map_err(|e| e.for_action(call.action))?;
    text::store(&target, &bytes)?;
    Ok(ActionOutcome::ok(Some(
        json!({"path": target.user, "bytesWritten": addition.len()}),
    )))
}
