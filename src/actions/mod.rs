//! Actions: what a NESL block asks for, checked against the action schema
//! (`unified-design.yaml`, compiled in): names, required parameters, types and formats.

mod schema;
mod suggest;
mod validate;

pub use schema::{Format, OutputDisplay, ParamDef, ParamType, Schema, ToolDef};
pub use suggest::closest;
pub use validate::{Action, BlockError, ErrorType, Plan, plan};

/// The action schema exactly as the user wrote it (`unified-design.yaml` at the repository
/// root): every tool, its parameters and their types.
pub const SCHEMA_YAML: &str = include_str!("../../unified-design.yaml");

#[cfg(test)]
mod tests {
    use super::*;

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
        let text = include_str!("../../loaf.yml.example");
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
