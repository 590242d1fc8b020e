//! The seeds' end-to-end cases (`test-data/execute/basic-operations.md`, converted to NESL):
//! each reply runs through `Loaf::execute` in a fresh folder, and the ExecutionResult must
//! equal the expected JSON exactly. Paths `/tmp/NNN-name/...` in a case are rewritten into
//! the folder, which is the root. Changes from the seeds beyond syntax:
//! - 002: `exec` is implemented now (and listed in loaf.yml for that case), so it succeeds
//!   with its output where the seed expected "Action not implemented: exec";
//! - 011, 012: the error messages go on after the seed's text with the lines of the matches
//!   (DESIGN §4: several matches list every match's line), so the expected text is longer.

use git_loaf::Loaf;
use git_loaf::config::Config;
use serde_json::Value;

use crate::support::{markdown_cases, pretty, read, test_data};

#[test]
fn seed_end_to_end_cases() {
    let cases = markdown_cases(&read(&test_data("execute/basic-operations.md")));
    assert_eq!(cases.len(), 16, "the seeds have 16 cases");
    let mut failures = Vec::new();
    for (name, fences) in &cases {
        let [reply, expected] = fences.as_slice() else {
            panic!("{name}: expected a reply and a JSON fence");
        };
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical");
        let root_text = root.to_string_lossy();
        let rewrite = |s: &str| s.replace("/tmp/", &format!("{root_text}/"));
        let mut config = Config::default_for(&root);
        if reply.contains("action = \"exec\"") {
            config.allowed_actions = Some(vec!["file_write".into(), "exec".into()]);
        }
        let result = Loaf::with_config(&root, config).execute(&rewrite(reply));
        let actual: Value = serde_json::from_str(&result.to_json()).expect("JSON");
        let expected: Value =
            serde_json::from_str(&rewrite(expected)).unwrap_or_else(|e| panic!("{name}: {e}"));
        if pretty(&actual) != pretty(&expected) {
            failures.push(format!(
                "--- {name}\nexpected:\n{}\nactual:\n{}",
                pretty(&expected),
                pretty(&actual)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of 16 differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
