//! Text replacement: `file_replace_text` (exactly one match), `file_replace_all_text` (every
//! match, optionally exactly `count`), `file_replace_text_range` (from a unique beginning to
//! the unique end after it) and `files_replace_all_text` (every match in several files).
//!
//! Matching is exact, with one allowance: the model writes LF, so in a CRLF file its text is
//! matched, and its replacement written, with CRLF. The exception is an edit of the line
//! endings themselves (`old_text` and `new_text` differ only in CRLF/LF): its text is
//! matched and written exactly as the model wrote it, and one that would leave the file as
//! it is fails rather than reporting replacements it did not make. Matches never overlap (the
//! loaf seed's counting). A miss shows the closest lines of the file; several matches name
//! their lines.

use serde_json::{Value, json};

use super::call::{Call, Target};
use super::closest;
use super::text::{self, TextFile};
use crate::exec::{Access, ActionOutcome};

/// Where a piece of text occurs in a file, and the text as it was found.
struct Found {
    /// The text searched for, in the line-ending style that matched.
    needle: String,
    /// Byte offsets of the matches, in order, not overlapping.
    at: Vec<usize>,
    /// Whether the model's own line endings matched rather than the file's (a file of mixed
    /// line endings); the replacement is then written as the model wrote it too.
    as_written: bool,
}

impl Found {
    /// The matches of `wanted` in `file.text[from..]` (offsets relative to the whole text).
    fn search(file: &TextFile, wanted: &str, from: usize) -> Found {
        let hay = &file.text[from..];
        let needle = file.eol.apply(wanted);
        let at = offsets(hay, &needle, from);
        if at.is_empty() && needle != wanted {
            let raw = offsets(hay, wanted, from);
            if !raw.is_empty() {
                return Found {
                    needle: wanted.to_owned(),
                    at: raw,
                    as_written: true,
                };
            }
        }
        Found {
            needle,
            at,
            as_written: false,
        }
    }

    /// The matches of `old` in `file.text[from..]` for replacing them with `new`. When the
    /// two differ only in line endings, converting either to the file's style would undo the
    /// very edit asked for, so `old` is looked for as written first.
    fn for_edit(file: &TextFile, old: &str, new: &str, from: usize) -> Found {
        if line_endings_only(old, new) {
            let raw = offsets(&file.text[from..], old, from);
            if !raw.is_empty() {
                return Found {
                    needle: old.to_owned(),
                    at: raw,
                    as_written: true,
                };
            }
        }
        Found::search(file, old, from)
    }

    /// The replacement text in the style that matched.
    fn replacement(&self, file: &TextFile, new: &str) -> String {
        if self.as_written {
            new.to_owned()
        } else {
            file.eol.apply(new)
        }
    }
}

/// Whether `old` and `new` are the same text but for CRLF/LF.
fn line_endings_only(old: &str, new: &str) -> bool {
    old != new && old.replace("\r\n", "\n") == new.replace("\r\n", "\n")
}

/// Refuses a line-ending edit that changes nothing: the file already has `new_text`'s line
/// endings where `old_text` matched (its own style, which the match allowed for). The file
/// is left as it was exactly when each match is replaced by itself: `replacement` is the
/// matched text (with a different length, the file's length would change).
fn check_changed(found: &Found, replacement: &str, old: &str, new: &str) -> Result<(), String> {
    if found.needle == replacement && line_endings_only(old, new) {
        return Err(
            "old_text and new_text differ only in line endings, and the file already has new_text's line endings there: nothing to change"
                .to_owned(),
        );
    }
    Ok(())
}

fn offsets(hay: &str, needle: &str, base: usize) -> Vec<usize> {
    memchr::memmem::find_iter(hay.as_bytes(), needle.as_bytes())
        .map(|i| i + base)
        .collect()
}

/// The line (from 1) of each byte offset, offsets in order.
fn line_numbers(text: &str, offsets: &[usize]) -> Vec<usize> {
    let mut line = 1;
    let mut pos = 0;
    offsets
        .iter()
        .map(|&at| {
            line += memchr::memchr_iter(b'\n', &text.as_bytes()[pos..at]).count();
            pos = at;
            line
        })
        .collect()
}

/// `at line 4` / `at lines 3, 7 (2 matches), 12`.
fn where_lines(lines: &[usize]) -> String {
    let mut groups: Vec<(usize, usize)> = Vec::new();
    for &line in lines {
        match groups.last_mut() {
            Some((l, n)) if *l == line => *n += 1,
            _ => groups.push((line, 1)),
        }
    }
    let parts: Vec<String> = groups
        .iter()
        .map(|&(line, n)| match n {
            1 => line.to_string(),
            n => format!("{line} ({n} matches)"),
        })
        .collect();
    let noun = if groups.len() == 1 { "line" } else { "lines" };
    format!("at {noun} {}", parts.join(", "))
}

/// The seeds' not-found message with the closest lines of the file appended.
fn not_found(call: &Call, what: &str, file: &TextFile, wanted: &str, from_line: usize) -> String {
    call.fail(format!(
        "{what} not found in file{}",
        closest::describe(&file.text, wanted, from_line)
    ))
}

/// The new text as consecutive pieces: the unchanged stretches of `text` between the
/// matches, borrowed, and `replacement` at each match. Never joined in memory: a replace in
/// a 50 MB file then holds the file once, not three times (old, new, encoded).
fn replace_at<'a>(text: &'a str, found: &Found, replacement: &'a str) -> Vec<&'a str> {
    let mut out = Vec::with_capacity(2 * found.at.len() + 1);
    let mut pos = 0;
    for &at in &found.at {
        out.push(&text[pos..at]);
        out.push(replacement);
        pos = at + found.needle.len();
    }
    out.push(&text[pos..]);
    out
}

/// Encodes the new text (in pieces) back into `file`'s form and writes it, refusing a
/// result over the limit.
fn save(call: &Call, target: &Target, file: &TextFile, pieces: &[&str]) -> Result<(), String> {
    let bytes = file.encode_pieces(pieces);
    let size = bytes.iter().map(|b| b.len()).sum();
    text::check_size(&target.user, size, call.ws.max_file_size)
        .map_err(|e| e.for_action(call.action))?;
    text::store_pieces(target, &bytes)
}

/// Replaces every match in `found` by `new_text` and saves the file, refusing an edit that
/// would change nothing.
fn replace_and_save(
    call: &Call,
    target: &Target,
    file: &TextFile,
    found: &Found,
    old_text: &str,
    new_text: &str,
) -> Result<(), String> {
    let replacement = found.replacement(file, new_text);
    check_changed(found, &replacement, old_text, new_text).map_err(|e| call.fail(e))?;
    save(
        call,
        target,
        file,
        &replace_at(&file.text, found, &replacement),
    )
}

/// `file_replace_text`: data `{path, replacements: 1}`.
pub(super) fn file_replace_text(call: &Call) -> Result<ActionOutcome, String> {
    let old_text = call.text("old_text")?;
    let new_text = call.text("new_text")?;
    if old_text.is_empty() {
        return Err(call.fail("old_text cannot be empty"));
    }
    let target = call.path("path", &[Access::Read, Access::Write])?;
    let file = text::load(&target, call.ws.max_file_size).map_err(|e| e.for_action(call.action))?;
    let found = Found::for_edit(&file, old_text, new_text, 0);
    match found.at.len() {
        0 => return Err(not_found(call, "old_text", &file, old_text, 1)),
        1 => {}
        n => {
            return Err(call.fail(format!(
                "old_text appears {n} times, must appear exactly once: {}. Include more of the surrounding text to make it unique, or use file_replace_all_text",
                where_lines(&line_numbers(&file.text, &found.at))
            )));
        }
    }
    replace_and_save(call, &target, &file, &found, old_text, new_text)?;
    Ok(ActionOutcome::ok(Some(
        json!({"path": target.user, "replacements": 1}),
    )))
}

/// `file_replace_all_text`: data `{path, replacements}`. With `count`, the number of matches
/// must equal it; without, there must be at least one.
pub(super) fn file_replace_all_text(call: &Call) -> Result<ActionOutcome, String> {
    let old_text = call.text("old_text")?;
    let new_text = call.text("new_text")?;
    let count = call.opt_int("count")?;
    if old_text.is_empty() {
        return Err(call.fail("old_text cannot be empty"));
    }
    if let Some(n) = count.filter(|&n| n < 1) {
        return Err(call.fail(format!("count must be 1 or more, got {n}")));
    }
    let target = call.path("path", &[Access::Read, Access::Write])?;
    let file = text::load(&target, call.ws.max_file_size).map_err(|e| e.for_action(call.action))?;
    let found = Found::for_edit(&file, old_text, new_text, 0);
    let actual = found.at.len();
    if let Some(expected) = count.filter(|&n| n as usize != actual) {
        let mut message = format!("expected {expected} occurrences but found {actual}");
        if actual > 0 {
            message.push_str(&format!(
                ": {}",
                where_lines(&line_numbers(&file.text, &found.at))
            ));
        }
        return Err(call.fail(message));
    }
    if actual == 0 {
        return Err(not_found(call, "old_text", &file, old_text, 1));
    }
    replace_and_save(call, &target, &file, &found, old_text, new_text)?;
    Ok(ActionOutcome::ok(Some(
        json!({"path": target.user, "replacements": actual}),
    )))
}

/// `file_replace_text_range`: replaces from `old_text_beginning` (which must occur exactly
/// once) through the end of `old_text_end` (which must occur exactly once after it) with
/// `new_text`. Data `{path, replacements: 1}`.
pub(super) fn file_replace_text_range(call: &Call) -> Result<ActionOutcome, String> {
    let beginning = call.text("old_text_beginning")?;
    let end = call.text("old_text_end")?;
    let new_text = call.text("new_text")?;
    for (name, value) in [("old_text_beginning", beginning), ("old_text_end", end)] {
        if value.is_empty() {
            return Err(call.fail(format!("{name} cannot be empty")));
        }
    }
    let target = call.path("path", &[Access::Read, Access::Write])?;
    let file = text::load(&target, call.ws.max_file_size).map_err(|e| e.for_action(call.action))?;

    let start = Found::search(&file, beginning, 0);
    let start_at = match start.at.as_slice() {
        [] => return Err(not_found(call, "old_text_beginning", &file, beginning, 1)),
        [at] => *at,
        many => {
            return Err(call.fail(format!(
                "old_text_beginning appears {} times, must appear exactly once: {}. Include more of the surrounding text to make it unique",
                many.len(),
                where_lines(&line_numbers(&file.text, many))
            )));
        }
    };
    let after = start_at + start.needle.len();
    let start_line = line_numbers(&file.text, &[start_at])[0];
    let finish = Found::search(&file, end, after);
    let end_at = match finish.at.as_slice() {
        [] => {
            return Err(call.fail(format!(
                "old_text_end not found after old_text_beginning (line {start_line}){}",
                closest::describe(&file.text, end, start_line)
            )));
        }
        [at] => *at,
        many => {
            return Err(call.fail(format!(
                "old_text_end appears {} times after old_text_beginning (line {start_line}), must appear exactly once there: {}. Include more of the surrounding text to make it unique",
                many.len(),
                where_lines(&line_numbers(&file.text, many))
            )));
        }
    };
    let replacement = start.replacement(&file, new_text);
    let pieces = [
        &file.text[..start_at],
        replacement.as_str(),
        &file.text[end_at + finish.needle.len()..],
    ];
    save(call, &target, &file, &pieces)?;
    Ok(ActionOutcome::ok(Some(
        json!({"path": target.user, "replacements": 1}),
    )))
}

/// `files_replace_all_text`: every match in each file of `paths` (one per line), each file
/// on its own: a file that fails is left as it was and the others are still changed. Data
/// `{results: [{path, replacements, error?}]}`; fails if any file failed, naming them.
pub(super) fn files_replace_all_text(call: &Call) -> Result<ActionOutcome, String> {
    let paths = call.text("paths")?;
    let old_text = call.text("old_text")?;
    let new_text = call.text("new_text")?;
    if old_text.is_empty() {
        return Err(call.fail("old_text cannot be empty"));
    }
    let mut list: Vec<&str> = Vec::new();
    for path in paths.lines().map(str::trim).filter(|p| !p.is_empty()) {
        if !list.contains(&path) {
            list.push(path);
        }
    }
    if list.is_empty() {
        return Err(call.fail("No paths provided"));
    }
    let mut results = Vec::new();
    let mut failures = Vec::new();
    for path in &list {
        match replace_all_in(call, path, old_text, new_text) {
            Ok(n) => results.push(json!({"path": path, "replacements": n})),
            Err(error) => {
                failures.push(format!("  {path}: {error}"));
                results.push(json!({"path": path, "replacements": 0, "error": error}));
            }
        }
    }
    let data = Some(json!({ "results": Value::Array(results) }));
    if failures.is_empty() {
        return Ok(ActionOutcome::ok(data));
    }
    let summary = if failures.len() == list.len() {
        format!("all {} file(s) failed, nothing was changed", list.len())
    } else {
        format!(
            "{} of {} file(s) failed (the others were changed)",
            failures.len(),
            list.len()
        )
    };
    Ok(ActionOutcome {
        success: false,
        error: Some(call.fail(format!("{summary}:\n{}", failures.join("\n")))),
        data,
    })
}

/// One file of `files_replace_all_text`: the number of replacements, or why none were made
/// (without the action's name: the caller lists it under the path).
fn replace_all_in(
    call: &Call,
    path: &str,
    old_text: &str,
    new_text: &str,
) -> Result<usize, String> {
    let target = call.target(path, &[Access::Read, Access::Write])?;
    let file = text::load(&target, call.ws.max_file_size).map_err(|e| e.to_string())?;
    let found = Found::for_edit(&file, old_text, new_text, 0);
    if found.at.is_empty() {
        return Err(format!(
            "old_text not found in file{}",
            closest::describe(&file.text, old_text, 1)
        ));
    }
    let replacement = found.replacement(&file, new_text);
    check_changed(&found, &replacement, old_text, new_text)?;
    let bytes = file.encode_pieces(&replace_at(&file.text, &found, &replacement));
    let size = bytes.iter().map(|b| b.len()).sum();
    text::check_size(path, size, call.ws.max_file_size).map_err(|e| e.to_string())?;
    text::store_pieces(&target, &bytes)?;
    Ok(found.at.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn match_lines_are_grouped() {
        assert_eq!(where_lines(&[4]), "at line 4");
        assert_eq!(where_lines(&[1, 1]), "at line 1 (2 matches)");
        assert_eq!(where_lines(&[3, 7, 7, 12]), "at lines 3, 7 (2 matches), 12");
        let text = "a\nfoo\nb\nfoo foo\n";
        let at = offsets(text, "foo", 0);
        assert_eq!(line_numbers(text, &at), [2, 4, 4]);
    }
}
