//! What the model is told after a review (docs/review.md): the hunks it wrote that the user
//! rejected, as it wrote them, each with the user's reason, and "do not reintroduce them".
//! The report is kept under the git dir until one channel delivers it — the agent's next
//! prompt hook, the next MCP `apply` answer — and then never again; `LAST.md` beside it
//! keeps the latest one for tools whose hooks cannot carry text.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::hunks::{Hunk, Line};

/// Where the reports wait, under the working tree's git dir.
const PENDING: &str = "loaf/review/pending";
/// The latest report, for agents that read it from a file.
pub const LAST: &str = "loaf/review/LAST.md";

/// One hunk the user rejected, in whole or in part.
#[derive(Debug, Clone, Serialize)]
pub struct RejectedHunk {
    /// Its id in the review.
    pub id: usize,
    /// The file.
    pub path: String,
    /// The commit's lines it spanned.
    pub lines: String,
    /// The hunk as the model wrote it (diff form).
    pub diff: String,
    /// What the user kept of it instead, when they kept part (diff form).
    pub kept: Option<String>,
    /// The user's reason (may be empty).
    pub reason: String,
}

impl RejectedHunk {
    /// The record of `hunk` rejected, with `kept` its lines as kept when only part was.
    pub fn of(hunk: &Hunk, kept: Option<&[Line]>, reason: &str) -> RejectedHunk {
        RejectedHunk {
            id: hunk.id,
            path: hunk.shown_path(),
            lines: hunk.span(),
            diff: hunk.shown(),
            kept: kept.map(|lines| hunk.diff_text(lines)),
            reason: reason.to_owned(),
        }
    }
}

/// The report's text for the model.
pub fn text(commit: &str, subject: &str, rejected: &[RejectedHunk]) -> String {
    let n = rejected.len();
    let mut out = format!(
        "git-loaf review: the user rejected {n} {} of your change {commit} ({subject}); {} no longer in the code.\n",
        if n == 1 { "hunk" } else { "hunks" },
        if n == 1 { "it is" } else { "they are" },
    );
    for hunk in rejected {
        let reason = if hunk.reason.trim().is_empty() {
            "(no reason given)".to_owned()
        } else {
            hunk.reason.trim().to_owned()
        };
        let reason = crate::report::inert::inert(&reason).into_owned();
        // Longer than any run of backticks in the hunk: its text cannot end the fence.
        let fence = fence(&format!(
            "{}{}",
            hunk.diff,
            hunk.kept.as_deref().unwrap_or("")
        ));
        out.push_str(&format!(
            "\n{} lines {} — rejected. Reason: {reason}\n{fence}diff\n{}{fence}\n",
            hunk.path, hunk.lines, hunk.diff
        ));
        if let Some(kept) = &hunk.kept {
            out.push_str(&format!(
                "The user kept this part of it:\n{fence}diff\n{kept}{fence}\n"
            ));
        }
    }
    out.push_str(
        "\nDo not reintroduce these changes. If you think one is needed, ask the user first.\n",
    );
    out
}

/// A Markdown fence of backticks longer than any run of them in `text` (at least three).
fn fence(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    "`".repeat((longest + 1).max(3))
}

/// Why a report could not be stored or read.
#[derive(Debug, thiserror::Error)]
#[error("cannot keep the review's report for the model in {}: {error}", .path.display())]
pub struct StoreError {
    path: PathBuf,
    error: std::io::Error,
}

fn failed(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |error| StoreError {
        path: path.to_path_buf(),
        error,
    }
}

/// Keeps `report` (of review `id`) for delivery, and as `LAST.md`; all written whole (a
/// temporary file renamed into place), so a reader never sees half a report. `effect`
/// says when the review is in effect (see [`take_pending`]), written before the report.
pub fn store(git_dir: &Path, id: &str, report: &str, effect: &str) -> Result<(), StoreError> {
    let pending = git_dir.join(PENDING);
    std::fs::create_dir_all(&pending).map_err(failed(&pending))?;
    write_whole(&pending.join(format!("{id}.effect")), effect)?;
    write_whole(&pending.join(format!("{id}.md")), report)?;
    write_whole(&git_dir.join(LAST), report)
}

fn write_whole(path: &Path, text: &str) -> Result<(), StoreError> {
    use std::io::Write as _;
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut temp = tempfile::Builder::new()
        .prefix(".review")
        .tempfile_in(dir)
        .map_err(failed(path))?;
    temp.write_all(text.as_bytes()).map_err(failed(path))?;
    temp.persist(path)
        .map_err(|e| e.error)
        .map_err(failed(path))?;
    Ok(())
}

/// The reports waiting whose review is in effect now (`in_effect` of the text [`store`] kept
/// beside each), oldest first; none when the folder cannot be read.
fn pending(git_dir: &Path, in_effect: &dyn Fn(&str) -> bool) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(git_dir.join(PENDING)) else {
        return Vec::new();
    };
    let mut names: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .filter(|p| {
            in_effect(&std::fs::read_to_string(p.with_extension("effect")).unwrap_or_default())
        })
        .collect();
    // Ids are random: the time a report was written orders them.
    names.sort_by_key(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok());
    names
}

/// How many reports wait for the model (see [`take_pending`]), without taking them.
pub fn waiting(git_dir: &Path, in_effect: &dyn Fn(&str) -> bool) -> usize {
    pending(git_dir, in_effect).len()
}

/// The reports waiting, oldest first, joined; each is taken away as it is read, so it is
/// delivered once. A report whose review is not in effect now (`in_effect` of the text
/// [`store`] kept beside it is false: the review was undone) is left waiting, for a redo.
/// `None` when none is delivered (or the folder cannot be read: a lost report is better
/// than a hook that fails the agent's prompt).
pub fn take_pending(git_dir: &Path, in_effect: &dyn Fn(&str) -> bool) -> Option<String> {
    let names = pending(git_dir, in_effect);
    let mut out = String::new();
    for path in names {
        let effect = path.with_extension("effect");
        // Renamed away first: of two hooks racing for it, one gets it.
        let taken = path.with_extension(format!("taken-{}", std::process::id()));
        if std::fs::rename(&path, &taken).is_err() {
            continue;
        }
        if let Ok(text) = std::fs::read_to_string(&taken) {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(&text);
        }
        let _ = std::fs::remove_file(&taken);
        let _ = std::fs::remove_file(&effect);
    }
    (!out.is_empty()).then_some(out)
}
