//! Blocks → actions, data-driven from `test-data/validation/cases.md`.

use std::path::Path;

use git_loaf::{actions, nesl};
use serde_json::{Value, json};

use crate::support::{markdown_cases, pretty, read, test_data};

#[test]
fn validation_cases() {
    let cases = markdown_cases(&read(&test_data("validation/cases.md")));
    assert!(cases.len() >= 8);
    for (name, fences) in cases {
        let [reply, expected] = fences.as_slice() else {
            panic!("{name}: expected a reply and a JSON fence");
        };
        let expected: Value =
            serde_json::from_str(expected).unwrap_or_else(|e| panic!("{name}: {e}"));
        let plan = actions::plan(reply, &nesl::parse(reply), Path::new("/repo"));
        let actual = json!({
            "actions": plan.actions.iter().map(|a| json!({
                "blockId": a.block_id, "action": a.name, "params": a.params,
            })).collect::<Vec<_>>(),
            "errors": plan.errors,
        });
        assert_eq!(pretty(&actual), pretty(&expected), "case {name}");
    }
}
