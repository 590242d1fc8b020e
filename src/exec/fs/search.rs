//! Looking around: `ls` (one directory), `grep` (a substring in files, with line numbers) and
//! `glob` (file paths matching a pattern).
//!
//! What the fs-guard would refuse to read is left out, as if it were not there. `grep` and
//! `glob` walk the tree as ripgrep does: inside a git repository `.gitignore` and
//! `.git/info/exclude` are respected (build output and dependencies are rarely what the
//! model is looking for), `.ignore` files everywhere; `.git` itself is skipped, symlinks are
//! not followed. Results are sorted by path.

use std::fs;
use std::path::Path;

use globset::{GlobBuilder, GlobMatcher};
use serde_json::{Value, json};

use super::call::{Call, Target};
use super::os_error::os_error;
use super::text::TextFile;
use crate::exec::{Access, ActionOutcome};

/// Results returned at most; past this, the action fails with the first ones and asks for a
/// narrower search (a flood of matches helps no one).
const MAX_RESULTS: usize = 1000;
/// Characters of a matching line returned at most.
const MAX_LINE_CHARS: usize = 300;

/// Fails unless `target` is a directory, in Node's words for a directory read.
fn require_dir(target: &Target) -> Result<(), String> {
    let meta = fs::metadata(&target.real).map_err(|e| os_error(&e, "scandir", &target.user))?;
    if meta.is_dir() {
        Ok(())
    } else {
        let e = std::io::Error::from(std::io::ErrorKind::NotADirectory);
        Err(os_error(&e, "scandir", &target.user))
    }
}

/// `ls`: data `[{name, type, size, modified}]`, sorted by name; `type` is `file`,
/// `directory`, `symlink` or `other`; `size` is in bytes (0 for all but files); `modified` is
/// RFC 3339 UTC to the second.
pub(super) fn ls(call: &Call) -> Result<ActionOutcome, String> {
    let target = call.path("path", &[Access::Read])?;
    require_dir(&target)?;
    let entries = fs::read_dir(&target.real).map_err(|e| os_error(&e, "scandir", &target.user))?;
    // The user's ignored entries the stage lacks are listed as the user has them.
    let shown = call.ws.paths.shown_in(&target.real);
    let names: std::collections::BTreeSet<_> = shown.iter().filter_map(|p| p.file_name()).collect();
    let staged = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.file_name().is_none_or(|name| !names.contains(name)));
    let mut listing: Vec<(String, Value)> = Vec::new();
    for path in staged.chain(shown.iter().cloned()) {
        if !call.allowed(Access::Read, &path) {
            continue;
        }
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        let kind = if meta.is_symlink() {
            "symlink"
        } else if meta.is_dir() {
            "directory"
        } else if meta.is_file() {
            "file"
        } else {
            "other"
        };
        let size = if meta.is_file() { meta.len() } else { 0 };
        let modified = meta
            .modified()
            .map(|t| humantime::format_rfc3339_seconds(t).to_string())
            .unwrap_or_default();
        let name = path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        listing.push((
            name.clone(),
            json!({"name": name, "type": kind, "size": size, "modified": modified}),
        ));
    }
    listing.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(ActionOutcome::ok(Some(Value::Array(
        listing.into_iter().map(|(_, v)| v).collect(),
    ))))
}

/// The files under `root` as ripgrep would search them (ignore files respected, `.git` and
/// symlinks skipped), sorted, that the guard lets the model read.
fn walk_files(call: &Call, root: &Path) -> Vec<std::path::PathBuf> {
    let mut walker = ignore::WalkBuilder::new(root);
    walker
        .hidden(false)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(false)
        .ignore(true)
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(|entry| entry.file_name() != ".git");
    walker
        .build()
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_some_and(|t| t.is_file()))
        .map(ignore::DirEntry::into_path)
        .filter(|path| call.allowed(Access::Read, path))
        .collect()
}

/// Fails with the first `MAX_RESULTS` results when there are more, asking for less.
fn capped(call: &Call, mut results: Vec<Value>, what: &str) -> ActionOutcome {
    if results.len() <= MAX_RESULTS {
        return ActionOutcome::ok(Some(Value::Array(results)));
    }
    results.truncate(MAX_RESULTS);
    ActionOutcome {
        success: false,
        error: Some(call.fail(format!(
            "more than {MAX_RESULTS} {what}; the first {MAX_RESULTS} are returned. Narrow the search"
        ))),
        data: Some(Value::Array(results)),
    }
}

/// `grep`: data `[{file, line_number, line}]`, every line containing `pattern` (plain
/// text, case-sensitive) in `path` (a file, or a directory searched recursively), optionally
/// only in files matching the glob `include` (`*.rs` matches file names, `src/**/*.rs`
/// paths relative to `path`). Binary, non-UTF-8 and oversized files are skipped when met
/// in a directory, and refused when named.
pub(super) fn grep(call: &Call) -> Result<ActionOutcome, String> {
    let pattern = call.text("pattern")?;
    let include = call.opt_text("include")?;
    if pattern.is_empty() {
        return Err(call.fail("pattern cannot be empty"));
    }
    if pattern.contains('\n') {
        return Err(call.fail("pattern must be a single line: lines are searched one at a time"));
    }
    let target = call.path("path", &[Access::Read])?;
    let include = include
        .filter(|i| !i.trim().is_empty())
        .map(|i| Ok::<_, String>((compile(call, "include", i.trim())?, !i.contains('/'))))
        .transpose()?;
    let meta = fs::metadata(&target.real).map_err(|e| os_error(&e, "open", &target.user))?;
    let mut results = Vec::new();
    if !meta.is_dir() {
        let file = super::text::load(&target, call.ws.max_file_size)
            .map_err(|e| e.for_action(call.action))?;
        search_text(&file, pattern, &target.user, &mut results);
        return Ok(capped(call, results, "matching lines"));
    }
    for path in walk_files(call, &target.real) {
        let relative = path.strip_prefix(&target.real).unwrap_or(&path);
        if let Some((matcher, names_only)) = &include {
            let subject = if *names_only {
                Path::new(relative.file_name().unwrap_or_default())
            } else {
                relative
            };
            if !matcher.is_match(subject) {
                continue;
            }
        }
        let Some(file) = read_small_text(&path, call.ws.max_file_size) else {
            continue;
        };
        let user = call.user_path_under(&target, &path);
        search_text(&file, pattern, &user, &mut results);
        if results.len() > MAX_RESULTS {
            break;
        }
    }
    Ok(capped(call, results, "matching lines"))
}

/// A file's text if it is a UTF-8 text file within the size limit.
fn read_small_text(path: &Path, max: u64) -> Option<TextFile> {
    if fs::metadata(path).ok()?.len() > max {
        return None;
    }
    TextFile::decode(fs::read(path).ok()?, "").ok()
}

fn search_text(file: &TextFile, pattern: &str, user: &str, results: &mut Vec<Value>) {
    for (i, line) in file.text.split('\n').enumerate() {
        if results.len() > MAX_RESULTS {
            return;
        }
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.contains(pattern) {
            let shown = match line.char_indices().nth(MAX_LINE_CHARS) {
                Some((cut, _)) => format!("{}...", &line[..cut]),
                None => line.to_owned(),
            };
            results.push(json!({"file": user, "line_number": i + 1, "line": shown}));
        }
    }
}

/// The glob in parameter `name`, `*` staying within a directory.
fn compile(call: &Call, name: &str, pattern: &str) -> Result<GlobMatcher, String> {
    let glob = GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map_err(|e| call.fail(format!("Invalid {name} pattern '{pattern}': {}", e.kind())))?;
    Ok(glob.compile_matcher())
}

/// `glob`: data `[path]`, the absolute paths of the files under `base_path` whose path
/// relative to it matches `pattern` (`*` stays within a directory, `**` crosses any number:
/// `**/*.rs` finds Rust files at any depth, `*.rs` only at the top). An absolute pattern
/// must lie under `base_path`.
pub(super) fn glob(call: &Call) -> Result<ActionOutcome, String> {
    let pattern = call.text("pattern")?;
    let target = call.path("base_path", &[Access::Read])?;
    let relative_pattern = if Path::new(pattern).is_absolute() {
        let base = format!("{}/", target.user.trim_end_matches('/'));
        pattern.strip_prefix(&base).ok_or_else(|| {
            call.fail(format!(
                "pattern '{pattern}' is not under base_path '{}'; use a pattern relative to base_path",
                target.user
            ))
        })?
    } else {
        pattern.strip_prefix("./").unwrap_or(pattern)
    };
    if relative_pattern.is_empty() {
        return Err(call.fail("pattern cannot be empty"));
    }
    let matcher = compile(call, "glob", relative_pattern)?;
    require_dir(&target)?;
    let mut results = Vec::new();
    for path in walk_files(call, &target.real) {
        let relative = path.strip_prefix(&target.real).unwrap_or(&path);
        if matcher.is_match(relative) {
            results.push(Value::String(call.user_path_under(&target, &path)));
            if results.len() > MAX_RESULTS {
                break;
            }
        }
    }
    Ok(capped(call, results, "files match"))
}
