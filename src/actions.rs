//! Actions: what a NESL block asks for, checked against the action schema
//! (`unified-design.yaml`, compiled in): names, required parameters, types and formats.

mod alias;
mod schema;
mod suggest;
mod validate;

pub use alias::{ALIASES, canonical};
pub use schema::{Format, OutputDisplay, ParamDef, ParamType, Schema, ToolDef};
pub use suggest::closest;
pub use validate::{Action, BlockError, ErrorType, ReplyPlan, plan};

/// The action `exec` runs code; every other action a reply can run is a filesystem action.
pub const EXEC: &str = "exec";

/// Whether git-loaf can run the schema's action `name`: `exec`, or one of the filesystem
/// actions ([`crate::exec::fs::ACTIONS`], what the executor dispatches on). The schema also
/// lists actions nobody implements yet (`files_replace_text_in_parents`, `context_add`,
/// `git_squash`); those are refused at validation, never offered in a list of choices.
pub fn implemented(name: &str) -> bool {
    name == EXEC || crate::exec::fs::ACTIONS.contains(&name)
}

/// Every action a reply can run, in the schema's order: what messages offer as choices.
pub fn runnable() -> Vec<&'static str> {
    Schema::get()
        .names()
        .filter(|name| implemented(name))
        .collect()
}

/// The action schema exactly as the user wrote it (`unified-design.yaml` at the repository
/// root): every tool, its parameters and their types.
pub(crate) const SCHEMA_YAML: &str = include_str!("../unified-design.yaml");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runnable_actions_are_the_executed_ones_in_schema_order() {
        let mut expected: Vec<&str> = crate::exec::fs::ACTIONS.to_vec();
        expected.push(EXEC);
        let mut runnable = runnable();
        assert_eq!(runnable.first(), Some(&"file_write"), "schema order");
        assert!(!runnable.contains(&"files_replace_text_in_parents"));
        runnable.sort_unstable();
        expected.sort_unstable();
        assert_eq!(runnable, expected, "every executed action is in the schema");
    }

    #[test]
    fn schema_is_yaml_listing_the_fs_actions() {
        let schema: serde_json::Value = serde_saphyr::from_str(SCHEMA_YAML).expect("valid YAML");
        let tools = schema["tools"].as_object().expect("a tools map");
        for name in ["file_write", "file_replace_text", "file_read", "exec"] {
            assert!(tools.contains_key(name), "schema lists {name}");
        }
        assert_eq!(
            schema["tools"]["file_write"]["parameters"]["path"]["format"],
            "absolute_path"
        );
    }

    /// Until loaf.yml is loaded (a later issue), at least keep the example valid YAML that
    /// names every key of the design.
    #[test]
    fn loaf_yml_example_documents_every_key() {
        let text = include_str!("../loaf.yml.example");
        let example: serde_json::Value = serde_saphyr::from_str(text).expect("valid YAML");
        for key in [
            "version",
            "allowed-actions",
            "fs-guard",
            "hooks",
            "vars",
            "commit_message_format",
            "max_file_size",
            "exec",
            "stage",
        ] {
            assert!(example.get(key).is_some(), "loaf.yml.example sets {key}");
        }
        assert_eq!(example["fs-guard"]["write"]["deny"][0], "**/.git/**");
    }
}
