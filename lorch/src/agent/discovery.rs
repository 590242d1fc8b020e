//! File discovery for natural-language intake (docs/lorch.md, "Running without a task"):
//! the plan and spec files a user's words may be about, ranked, for the orchestration
//! agent's prompt and its `plan_candidates`.
//!
//! Every `.md`, `.rst` and `.txt` file of the workspace (recursively from `.`, which holds
//! the `docs`, `specs` and `plans` folders the spec names; hidden folders, `node_modules`,
//! what git ignores and lorch's own records skipped), ranked by the tokens `plan`, `spec`
//! and `proposal` in its path, then by the words of the instruction found in its first
//! heading. The user approves the plan with the tasks; nothing here is taken as a decision.

use std::path::Path;

use crate::records::FOLDERS;

/// Candidates kept.
pub const MAX_CANDIDATES: usize = 20;

/// Files read for their first heading (past this, a candidate ranks by its name only).
const MAX_HEADING_BYTES: usize = 4096;

/// A plan or spec file that may be meant.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// Relative to the workspace.
    pub path: String,
    /// 0 to 1: how likely this is the plan or spec meant.
    pub confidence: f64,
}

/// The candidates of `workspace` for `instruction`, best first (ties by path).
pub fn candidates(workspace: &Path, instruction: &str) -> Vec<Candidate> {
    let words: Vec<String> = instruction
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() > 3)
        .map(str::to_lowercase)
        .collect();
    let walk = ignore::WalkBuilder::new(workspace)
        .hidden(true)
        .require_git(false)
        .filter_entry(|e| e.file_name() != "node_modules")
        .build();
    let mut found: Vec<(u32, Candidate)> = Vec::new();
    for entry in walk.flatten() {
        let path = entry.path();
        let Ok(rel) = path.strip_prefix(workspace) else {
            continue;
        };
        let rel = rel.to_string_lossy().into_owned();
        let top = rel.split('/').next().unwrap_or("");
        let text_file = ["md", "rst", "txt"]
            .iter()
            .any(|e| path.extension().is_some_and(|x| x == *e));
        if !text_file || !path.is_file() || FOLDERS.contains(&top) {
            continue;
        }
        let lower = rel.to_lowercase();
        let named = ["plan", "spec", "proposal"]
            .iter()
            .filter(|t| lower.contains(*t))
            .count() as u32;
        let heading = first_heading(path).to_lowercase();
        let echoed = words
            .iter()
            .filter(|w| heading.contains(w.as_str()) || lower.contains(w.as_str()))
            .count() as u32;
        let score = named * 4 + echoed.min(4);
        let confidence = (0.1 + 0.2 * f64::from(named) + 0.1 * f64::from(echoed.min(4))).min(0.95);
        let confidence = (confidence * 100.0).round() / 100.0;
        found.push((
            score,
            Candidate {
                path: rel,
                confidence,
            },
        ));
    }
    found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.path.cmp(&b.1.path)));
    found
        .into_iter()
        .take(MAX_CANDIDATES)
        .map(|(_, c)| c)
        .collect()
}

/// The first markdown heading or non-blank line of the file's start.
fn first_heading(path: &Path) -> String {
    use std::io::Read as _;
    let mut head = Vec::new();
    if let Ok(file) = std::fs::File::open(path) {
        let _ = file.take(MAX_HEADING_BYTES as u64).read_to_end(&mut head);
    }
    let text = String::from_utf8_lossy(&head);
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
        .trim_start_matches('#')
        .trim()
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_and_specs_rank_first_and_hidden_or_other_files_are_left_out() {
        let dir = tempfile::tempdir().expect("tempdir");
        let write = |rel: &str, text: &str| {
            let p = dir.path().join(rel);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(p, text).expect("write");
        };
        write("PLAN.md", "# The plan\n");
        write("docs/plan_v2.md", "# Plan, take two\n");
        write("README.md", "# Greeting tool\n");
        write("notes.txt", "misc\n");
        write("src/main.rs", "fn main() {}\n");
        write(".hidden/plan.md", "# no\n");
        write("node_modules/x/spec.md", "# no\n");
        write("events/run-1.md", "# lorch's own\n");
        let found = candidates(dir.path(), "Manage the greeting PLAN");
        let paths: Vec<&str> = found.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(
            paths,
            ["PLAN.md", "docs/plan_v2.md", "README.md", "notes.txt"]
        );
        assert!(found[0].confidence > found[2].confidence, "{found:?}");
    }
}
