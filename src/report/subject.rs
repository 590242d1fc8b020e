//! The subject line of an apply's commit (`AI: {operation_summary}`, docs/apply.md): what the
//! reply's successful writes did to the paths the commit changes, in a few words. It reads
//! the [`ExecutionResult`], so it is made here, above git: the commit writer
//! ([`crate::git::commit`]) takes the finished message.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::actions::Schema;
use crate::exec::guard::lexical;

use super::ExecutionResult;
use super::inert::inert;

/// git's convention for a subject line's length (`git log --oneline`, `git shortlog`, and
/// every tool that lists commits one per line, cut or wrap past it).
pub(crate) const SUBJECT_MAX: usize = 72;

/// How many of the reply's changes a subject names at most; the rest are counted.
const NAMED_MAX: usize = 3;

/// `{operation_summary}`, the commit subject's words: what the apply's successful writes did
/// to the commit's `changed` paths (relative to `root`), each path named once (a file written
/// then edited is `file_write a.rs`), at most three named. `exec` is named only when it can
/// have made a change: some changed path no fs action accounts for (an `exec` that only ran
/// tests is not news in the log). No length limit: [`subject_line`] fits it to one. The
/// tests' view of [`subject_line`]'s words.
#[cfg(test)]
pub(crate) fn subject_summary(
    result: &ExecutionResult,
    root: &Path,
    changed: &[PathBuf],
) -> String {
    let items = items(result, root, changed);
    summary(&items, NAMED_MAX, false)
}

/// The commit's subject: `format` (loaf.yml's `commit_message_format`) with
/// `{operation_summary}` in it, in at most [`SUBJECT_MAX`] characters. What is dropped to
/// fit, in order: changes named (three, two, then one, the rest counted as `and N more`),
/// each tried first with whole paths and then with their middle folders as `…`
/// (`src/…/subject.rs`); only when even that is too long is the line cut ([`fit_subject`]).
///
/// With an `intent` (what the reply said it does, or the `message` an MCP client gave), that
/// takes the summary's place, cut to fit at a word with `…`.
pub fn subject_line(
    format: &str,
    intent: Option<&str>,
    result: &ExecutionResult,
    root: &Path,
    changed: &[PathBuf],
) -> String {
    if let Some(intent) = intent.filter(|i| !i.trim().is_empty()) {
        return fit_subject(&format.replace("{operation_summary}", intent.trim()));
    }
    let items = items(result, root, changed);
    let line = |named: usize, short: bool| {
        let text = format.replace("{operation_summary}", &summary(&items, named, short));
        inert(text.lines().next().unwrap_or("").trim()).into_owned()
    };
    for named in (1..=items.len().min(NAMED_MAX)).rev() {
        for short in [false, true] {
            let text = line(named, short);
            if text.chars().count() <= SUBJECT_MAX {
                return text;
            }
        }
    }
    fit_subject(&line(1, true))
}

/// `text`'s first line in at most [`SUBJECT_MAX`] characters: cut at the last word boundary
/// that fits, ending with `…` (a single word longer than that is cut inside it). Control
/// characters (from a path the reply named) show escaped ([`inert`]): `git log` prints the
/// subject on the user's terminal.
pub fn fit_subject(text: &str) -> String {
    let text = inert(text.lines().next().unwrap_or("").trim());
    let text = text.as_ref();
    if text.chars().count() <= SUBJECT_MAX {
        return text.to_owned();
    }
    let kept: String = text.chars().take(SUBJECT_MAX - 1).collect();
    // A boundary in the first half would throw away more than it keeps: cut the word.
    let at_word = match kept.rfind(' ') {
        Some(space) if kept[..space].chars().count() > SUBJECT_MAX / 2 => &kept[..space],
        _ => kept.as_str(),
    };
    let trimmed = at_word.trim_end_matches([' ', ',', ';', ':', '-']);
    format!("{trimmed}…")
}

/// One change a subject can name: an action and the paths it changed.
struct Item {
    /// `file_write`, `exec bash`, …
    action: String,
    /// The paths it changed, as the commit holds them.
    paths: Vec<PathBuf>,
    /// `old -> new` (a move) rather than a list.
    moved: bool,
    /// Paths it changed beyond those named.
    more: usize,
}

impl Item {
    fn render(&self, short: bool) -> String {
        let shown: Vec<String> = self
            .paths
            .iter()
            .map(|p| {
                if short {
                    shorten(p)
                } else {
                    p.display().to_string()
                }
            })
            .collect();
        let mut out = self.action.clone();
        if !shown.is_empty() {
            out.push(' ');
            out.push_str(&shown.join(if self.moved { " -> " } else { " " }));
        }
        if self.more > 0 {
            out.push_str(&format!(" (+{} more)", self.more));
        }
        out
    }
}

/// `src/report/subject.rs` as `src/…/subject.rs`: the top folder and the file's name, which
/// say where and what.
fn shorten(path: &Path) -> String {
    let parts: Vec<String> = path
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    match parts.as_slice() {
        [first, _, .., last] => format!("{first}/…/{last}"),
        _ => path.display().to_string(),
    }
}

/// The first `named` items, then how many more, joined.
fn summary(items: &[Item], named: usize, short: bool) -> String {
    if items.is_empty() {
        return "changes by hooks".to_owned();
    }
    let shown: Vec<String> = items.iter().take(named).map(|i| i.render(short)).collect();
    let mut out = shown.join(", ");
    if items.len() > shown.len() {
        out.push_str(&format!(" and {} more", items.len() - shown.len()));
    }
    out
}

/// The changes of the commit, in the reply's order (see [`subject_summary`]).
fn items(result: &ExecutionResult, root: &Path, changed: &[PathBuf]) -> Vec<Item> {
    let schema = Schema::get();
    let relative = |value: Option<&serde_json::Value>| -> Vec<PathBuf> {
        value
            .and_then(|v| v.as_str())
            .into_iter()
            .flat_map(str::lines)
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .filter_map(|p| {
                let normal = lexical(Path::new(p));
                let relative = normal.strip_prefix(root).ok()?;
                (!relative.as_os_str().is_empty()).then(|| relative.to_path_buf())
            })
            .collect()
    };
    // A folder action changes the files under it. Sorted, a folder's files follow it: one
    // lookup per path, not a scan of every changed path (a reply may write thousands).
    let changed_set: BTreeSet<&Path> = changed.iter().map(PathBuf::as_path).collect();
    let in_commit = |path: &Path| {
        changed_set
            .range(path..)
            .next()
            .is_some_and(|c| c.starts_with(path))
    };
    let mut named: BTreeSet<PathBuf> = BTreeSet::new();
    let mut items: Vec<Item> = Vec::new();
    let mut execs: Vec<Item> = Vec::new();
    for r in result.results.iter().filter(|r| r.success) {
        if r.action == "exec" {
            let lang = r.params.get("lang").and_then(|v| v.as_str()).unwrap_or("");
            let action = format!("exec {lang}").trim_end().to_owned();
            // The files it changed, as the transaction recorded them in its data.
            let paths: Vec<PathBuf> = ["created", "changed", "deleted"]
                .iter()
                .filter_map(|kind| r.data.as_ref()?.get(kind)?.as_array())
                .flatten()
                .flat_map(|p| relative(Some(p)))
                .collect();
            let new: Vec<PathBuf> = paths
                .iter()
                .filter(|p| in_commit(p) && !named.contains(*p))
                .cloned()
                .collect();
            named.extend(paths);
            if new.is_empty() {
                if !execs.iter().any(|e| e.action == action) {
                    execs.push(Item {
                        action,
                        paths: Vec::new(),
                        moved: false,
                        more: 0,
                    });
                }
                continue;
            }
            let more = new.len().saturating_sub(NAMED_MAX);
            items.push(Item {
                action,
                paths: new.into_iter().take(NAMED_MAX).collect(),
                moved: false,
                more,
            });
            continue;
        }
        if schema.tool(&r.action).is_none_or(|t| t.kind != "write") {
            continue;
        }
        let paths: Vec<PathBuf> = match r.action.as_str() {
            "file_move" => [
                relative(r.params.get("old_path")),
                relative(r.params.get("new_path")),
            ]
            .concat(),
            "files_replace_all_text" => relative(r.params.get("paths")),
            _ => relative(r.params.get("path")),
        };
        let new: Vec<PathBuf> = paths
            .iter()
            .filter(|p| in_commit(p) && !named.contains(*p))
            .cloned()
            .collect();
        if new.is_empty() {
            continue;
        }
        let moved = r.action == "file_move" && paths.len() == 2;
        items.push(Item {
            action: r.action.clone(),
            paths: if moved { paths.clone() } else { new },
            moved,
            more: 0,
        });
        named.extend(paths);
    }
    let unexplained = changed
        .iter()
        .any(|c| !c.ancestors().any(|a| named.contains(a)));
    if unexplained {
        items.extend(execs);
    }
    items
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::ActionResult;

    fn action(action: &str, params: serde_json::Value, success: bool) -> ActionResult {
        ActionResult {
            seq: 1,
            block_id: "b1".into(),
            action: action.into(),
            params: params.as_object().cloned().unwrap_or_default(),
            success,
            error: None,
            data: None,
            start_line: 1,
        }
    }

    fn summary(results: Vec<ActionResult>, changed: &[&str]) -> String {
        let result = ExecutionResult {
            results,
            ..ExecutionResult::default()
        };
        let changed: Vec<PathBuf> = changed.iter().map(PathBuf::from).collect();
        subject_summary(&result, Path::new("/repo"), &changed)
    }

    #[test]
    fn a_subject_names_each_path_once() {
        use serde_json::json;
        let written = summary(
            vec![
                action("file_write", json!({"path": "/repo/a.rs"}), true),
                action("file_replace_text", json!({"path": "/repo/a.rs"}), true),
                action("file_append", json!({"path": "/repo/./b.md"}), true),
                action("file_replace_text", json!({"path": "/repo/c.rs"}), false),
                action("file_read", json!({"path": "/repo/d.rs"}), true),
            ],
            &["a.rs", "b.md"],
        );
        assert_eq!(written, "file_write a.rs, file_append b.md");
        let moved = summary(
            vec![
                action(
                    "file_move",
                    json!({"old_path": "/repo/x", "new_path": "/repo/y"}),
                    true,
                ),
                action("file_write", json!({"path": "/repo/y"}), true),
                action("dir_delete", json!({"path": "/repo/old"}), true),
            ],
            &["old/1.txt", "x", "y"],
        );
        assert_eq!(moved, "file_move x -> y, dir_delete old");
    }

    #[test]
    fn exec_is_named_only_when_something_else_changed() {
        use serde_json::json;
        let tests_only = summary(
            vec![
                action("file_write", json!({"path": "/repo/a.rs"}), true),
                action("exec", json!({"lang": "bash", "code": "cargo test"}), true),
            ],
            &["a.rs"],
        );
        assert_eq!(tests_only, "file_write a.rs");
        let generated = summary(
            vec![
                action("file_write", json!({"path": "/repo/a.rs"}), true),
                action("exec", json!({"lang": "bash", "code": "make gen"}), true),
                action("exec", json!({"lang": "bash", "code": "make fmt"}), true),
            ],
            &["a.rs", "gen.rs"],
        );
        assert_eq!(generated, "file_write a.rs, exec bash");
        let many = summary(
            (1..=5)
                .map(|i| action("file_write", json!({"path": format!("/repo/{i}")}), true))
                .collect(),
            &["1", "2", "3", "4", "5"],
        );
        assert_eq!(many, "file_write 1, file_write 2, file_write 3 and 2 more");
        assert_eq!(summary(Vec::new(), &["fmt.rs"]), "changes by hooks");
    }

    fn line(results: Vec<ActionResult>, changed: &[&str]) -> String {
        let result = ExecutionResult {
            results,
            ..ExecutionResult::default()
        };
        let changed: Vec<PathBuf> = changed.iter().map(PathBuf::from).collect();
        subject_line(
            "AI: {operation_summary}",
            None,
            &result,
            Path::new("/repo"),
            &changed,
        )
    }

    #[test]
    fn a_subject_fits_72_characters_naming_fewer_changes_then_shorter_paths() {
        use serde_json::json;
        let deep: Vec<String> = (1..=5)
            .map(|i| format!("src/report/rendering/module_number_{i}.rs"))
            .collect();
        let writes = |paths: &[String]| {
            paths
                .iter()
                .map(|p| action("file_write", json!({"path": format!("/repo/{p}")}), true))
                .collect::<Vec<_>>()
        };
        let changed: Vec<&str> = deep.iter().map(String::as_str).collect();
        assert_eq!(
            line(writes(&deep), &changed),
            "AI: file_write src/report/rendering/module_number_1.rs and 4 more"
        );
        let deeper: Vec<String> = deep.iter().map(|p| format!("crates/core/{p}")).collect();
        let changed: Vec<&str> = deeper.iter().map(String::as_str).collect();
        assert_eq!(
            line(writes(&deeper), &changed),
            "AI: file_write crates/…/module_number_1.rs and 4 more",
        );
        let short = line(
            writes(&["a.rs".to_owned(), "b.rs".to_owned()]),
            &["a.rs", "b.rs"],
        );
        assert_eq!(
            short, "AI: file_write a.rs, file_write b.rs",
            "short enough: as it was"
        );
        let huge = format!("/repo/{}.rs", "x".repeat(100));
        let cut = line(
            vec![action("file_write", json!({"path": huge}), true)],
            &[&huge[6..]],
        );
        assert_eq!(cut.chars().count(), 72, "{cut}");
        assert!(
            cut.starts_with("AI: file_write xxx") && cut.ends_with('…'),
            "{cut}"
        );
    }

    #[test]
    fn a_long_line_is_cut_at_a_word_with_an_ellipsis() {
        assert_eq!(fit_subject("AI: short\nsecond"), "AI: short");
        let words = format!("AI: {}", "word, ".repeat(20));
        let cut = fit_subject(&words);
        assert!(cut.chars().count() <= SUBJECT_MAX, "{cut}");
        assert!(
            cut.ends_with("word…"),
            "at a word, no comma before the ellipsis: {cut}"
        );
        let exact = "x".repeat(SUBJECT_MAX);
        assert_eq!(fit_subject(&exact), exact);
        let long = "é".repeat(100);
        assert_eq!(fit_subject(&long).chars().count(), SUBJECT_MAX);
    }
}
