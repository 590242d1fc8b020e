//! The subject line of an apply's commit (`AI: {operation_summary}`, DESIGN §2): what the
//! reply's successful writes did to the paths the commit changes, in a few words. It reads
//! the [`ExecutionResult`], so it is made here, above git: the commit writer
//! ([`crate::git::commit`]) takes the finished message.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::actions::Schema;
use crate::exec::guard::lexical;

use super::ExecutionResult;

/// `{operation_summary}`, the commit subject's words: what the apply's successful writes did
/// to the commit's `changed` paths (relative to `root`), each path named once (a file written
/// then edited is `file_write a.rs`), at most three named. `exec` is named only when it can
/// have made a change: some changed path no fs action accounts for (an `exec` that only ran
/// tests is not news in the log).
pub fn subject_summary(result: &ExecutionResult, root: &Path, changed: &[PathBuf]) -> String {
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
    let mut items: Vec<String> = Vec::new();
    let mut execs: Vec<String> = Vec::new();
    for r in result.results.iter().filter(|r| r.success) {
        if r.action == "exec" {
            let lang = r.params.get("lang").and_then(|v| v.as_str()).unwrap_or("");
            let item = format!("exec {lang}").trim_end().to_owned();
            // The files it changed, as the transaction recorded them in its data.
            let paths: Vec<PathBuf> = ["created", "changed", "deleted"]
                .iter()
                .filter_map(|kind| r.data.as_ref()?.get(kind)?.as_array())
                .flatten()
                .flat_map(|p| relative(Some(p)))
                .collect();
            let new: Vec<String> = paths
                .iter()
                .filter(|p| in_commit(p) && !named.contains(*p))
                .map(|p| p.display().to_string())
                .collect();
            named.extend(paths);
            match new.len() {
                0 if !execs.contains(&item) => execs.push(item),
                0 => {}
                1..=3 => items.push(format!("{item} {}", new.join(" "))),
                n => items.push(format!("{item} {} (+{} more)", new[..3].join(" "), n - 3)),
            }
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
        let new: Vec<&PathBuf> = paths
            .iter()
            .filter(|p| in_commit(p) && !named.contains(*p))
            .collect();
        if new.is_empty() {
            continue;
        }
        let shown = |p: &PathBuf| p.display().to_string();
        items.push(match (r.action.as_str(), paths.as_slice()) {
            ("file_move", [old, new]) => format!("file_move {} -> {}", shown(old), shown(new)),
            (action, _) => format!(
                "{action} {}",
                new.iter().map(|p| shown(p)).collect::<Vec<_>>().join(" ")
            ),
        });
        named.extend(paths);
    }
    let unexplained = changed
        .iter()
        .any(|c| !c.ancestors().any(|a| named.contains(a)));
    if unexplained {
        items.extend(execs);
    }
    match items.len() {
        0 => "changes by hooks".to_owned(),
        1..=3 => items.join(", "),
        n => format!("{} and {} more", items[..3].join(", "), n - 3),
    }
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
}
