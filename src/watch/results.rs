//! Handing the results back: the text report written beside the reply (`results.md`), ready
//! to paste to the model, and the one line the terminal shows per apply.

use std::path::{Path, PathBuf};

use crate::ops::apply::Applied;
use crate::report::inert::inert;

/// The name of the results file, beside the watched file.
pub const RESULTS_FILE: &str = "results.md";

/// Where the results of replies saved to `file` go: `results.md` beside it (or
/// `<name>.results.md` when the watched file is itself called `results.md`).
pub fn results_path(file: &Path) -> PathBuf {
    let beside = file.with_file_name(RESULTS_FILE);
    if beside == file {
        file.with_file_name(format!("{RESULTS_FILE}.{RESULTS_FILE}"))
    } else {
        beside
    }
}

/// Writes `text` to `path` through a temporary file and a rename, so that whoever reads it
/// (an editor showing it, a `cat` into the clipboard) never sees half of it.
pub fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let mut temp = tempfile::Builder::new()
        .prefix(".loaf-results")
        .tempfile_in(dir)?;
    std::io::Write::write_all(&mut temp, text.as_bytes())?;
    temp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// One line for the terminal: the apply's id, the counts, the commit (or why it was not
/// applied), e.g. `apply 3f2a1c · 2 ✅ 1 ❌ · commit 1a2b3c4`; control characters (in a
/// fatal error's words, a path) shown escaped.
pub fn status_line(applied: &Applied) -> String {
    let result = &applied.result;
    let ok = result.results.iter().filter(|r| r.success).count();
    let failed = result.results.iter().filter(|r| !r.success).count() + result.parse_errors.len();
    let git = result.git.as_ref();
    let id = git
        .map(|g| g.apply.as_str())
        .filter(|id| !id.is_empty())
        .map_or_else(
            || "apply (nothing recorded)".to_owned(),
            |id| format!("apply {id}"),
        );
    let mut parts = vec![id, format!("{ok} ✅ {failed} ❌")];
    if let Some(fatal) = &result.fatal_error {
        parts.push(format!(
            "FATAL: {}",
            fatal.lines().next().unwrap_or_default()
        ));
    }
    match (&applied.kept, git.and_then(|g| g.commit.as_deref())) {
        (Some(kept), _) => parts.push(format!(
            "NOT APPLIED ({}), kept as {}",
            kept.reason, kept.refname
        )),
        (None, Some(commit)) => parts.push(format!("commit {}", crate::git::short_id(commit))),
        (None, None) => parts.push("no commit (nothing changed)".to_owned()),
    }
    if let Some(git) = git.filter(|g| !g.uncommitted.is_empty()) {
        parts.push(format!(
            "includes your uncommitted changes in {}",
            git.uncommitted.join(", ")
        ));
    }
    inert(&parts.join(" · ")).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_line_shows_control_characters_escaped() {
        let applied = Applied {
            result: crate::report::ExecutionResult {
                fatal_error: Some("cannot read \x1b[2J\x1b]0;x\x07 here\nmore".into()),
                ..Default::default()
            },
            kept: None,
            notices: Vec::new(),
        };
        assert_eq!(
            status_line(&applied),
            "apply (nothing recorded) · 0 ✅ 0 ❌ · FATAL: cannot read \\e[2J\\e]0;x\\x07 here · no commit (nothing changed)"
        );
    }

    #[test]
    fn results_go_beside_the_file_and_never_over_it() {
        assert_eq!(
            results_path(Path::new("/r/.loaf/reply.md")),
            Path::new("/r/.loaf/results.md")
        );
        assert_eq!(
            results_path(Path::new("/r/results.md")),
            Path::new("/r/results.md.results.md")
        );
    }

    #[test]
    fn results_replace_the_file_whole() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(RESULTS_FILE);
        write_atomically(&path, "first, longer text\n").expect("write");
        write_atomically(&path, "second\n").expect("write");
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "second\n");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .expect("list")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names, [RESULTS_FILE], "no temporary file left");
    }
}
