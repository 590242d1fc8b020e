//! The filesystem actions (defined in `unified-design.yaml`): writing, editing, reading, moving and
//! deleting files, directories, listing and searching.
//!
//! Every action follows the same steps: take its parameters (already validated against the
//! schema), map each path the model wrote to where it really is ([`PathMap::to_real`]), ask
//! the fs-guard for the access the action needs (a refusal touches nothing), do the work, and
//! describe the result with the model's own paths. Failures are data, written so that the
//! model can fix its next reply in one go: a replace whose text is not there shows the
//! closest lines of the file, several matches name their lines, OS errors read like Node's
//! (`ENOENT: no such file or directory, unlink '/repo/a.txt'`) as the seeds' tests expect.
//!
//! Text files keep what they were: CRLF files stay CRLF, a UTF-8 byte order mark stays,
//! binary and non-UTF-8 files are refused rather than corrupted, files over `max_file_size`
//! are refused, and every change is written to a temporary file and renamed into place, so a
//! failure leaves the old file whole.
//!
//! [`PathMap::to_real`]: crate::exec::PathMap::to_real

mod call;
mod closest;
mod lines;
mod os_error;
mod read;
mod replace;
mod search;
mod text;
mod tree;
mod write;

/// Whether no other name shares a file's contents (used by publish too).
pub(crate) use text::single_name;

use crate::exec::{ActionOutcome, Params, Workspace};
use call::Call;

/// The actions this module runs, in the schema's order.
pub const ACTIONS: &[&str] = &[
    "file_write",
    "file_append",
    "file_replace_text",
    "file_replace_all_text",
    "file_replace_text_range",
    "file_replace_lines",
    "files_replace_all_text",
    "file_read",
    "file_read_numbered",
    "files_read",
    "file_delete",
    "file_move",
    "dir_create",
    "dir_delete",
    "ls",
    "grep",
    "glob",
];

/// Runs one filesystem action and describes what it did. Never panics: every problem, an
/// unknown action included, is a failed [`ActionOutcome`] with a message for the model.
pub fn run(action: &str, params: &Params, ws: &Workspace) -> ActionOutcome {
    let call = Call { action, params, ws };
    let result = match action {
        "file_write" => write::file_write(&call),
        "file_append" => write::file_append(&call),
        "file_replace_text" => replace::file_replace_text(&call),
        "file_replace_all_text" => replace::file_replace_all_text(&call),
        "file_replace_text_range" => replace::file_replace_text_range(&call),
        "files_replace_all_text" => replace::files_replace_all_text(&call),
        "file_replace_lines" => lines::file_replace_lines(&call),
        "file_read" => read::file_read(&call),
        "file_read_numbered" => lines::file_read_numbered(&call),
        "files_read" => read::files_read(&call),
        "file_delete" => tree::file_delete(&call),
        "file_move" => tree::file_move(&call),
        "dir_create" => tree::dir_create(&call),
        "dir_delete" => tree::dir_delete(&call),
        "ls" => search::ls(&call),
        "grep" => search::grep(&call),
        "glob" => search::glob(&call),
        _ => return ActionOutcome::fail(format!("Unknown action: {action}")),
    };
    result.unwrap_or_else(ActionOutcome::fail)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::{AllowAll, PathMap};
    use std::path::Path;

    #[test]
    fn unknown_actions_fail_with_the_seed_message() {
        let paths = PathMap::identity(Path::new("/"));
        let ws = Workspace::permissive(&AllowAll, &paths);
        let outcome = run("file_frobnicate", &Params::new(), &ws);
        assert_eq!(
            outcome,
            ActionOutcome::fail("Unknown action: file_frobnicate")
        );
    }

    #[test]
    fn missing_parameters_are_reported_not_panicked_on() {
        let paths = PathMap::identity(Path::new("/"));
        let ws = Workspace::permissive(&AllowAll, &paths);
        for action in ACTIONS {
            let outcome = run(action, &Params::new(), &ws);
            let error = outcome.error.unwrap_or_default();
            assert!(
                !outcome.success && error.contains("internal error"),
                "{action}: {error}"
            );
        }
    }
}
