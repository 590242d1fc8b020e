//! The action names of slupe, the successor tool: verb first (`write_file`,
//! `replace_text_in_file`), where the schema puts the noun first (`file_write`). Replies
//! written for slupe use them; they are accepted and the action is reported under the
//! schema's name from validation on.

/// slupe's name → the schema's. slupe's own list (its `ActionDefinitions`), then the
/// verb-first forms of the schema's other noun-first actions, which a model taught slupe's
/// convention writes the same way.
pub const ALIASES: &[(&str, &str)] = &[
    ("write_file", "file_write"),
    ("append_to_file", "file_append"),
    ("replace_text_in_file", "file_replace_text"),
    ("replace_all_text_in_file", "file_replace_all_text"),
    ("replace_text_range_in_file", "file_replace_text_range"),
    ("replace_lines_in_file", "file_replace_lines"),
    ("read_file", "file_read"),
    ("read_file_numbered", "file_read_numbered"),
    ("read_files", "files_read"),
    ("delete_file", "file_delete"),
    ("move_file", "file_move"),
    ("replace_all_text_in_files", "files_replace_all_text"),
    ("create_dir", "dir_create"),
    ("delete_dir", "dir_delete"),
];

/// The schema's name for `name`: itself, or the action a slupe name stands for.
pub fn canonical(name: &str) -> &str {
    ALIASES
        .iter()
        .find(|(alias, _)| *alias == name)
        .map_or(name, |(_, schema)| schema)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::actions::Schema;

    #[test]
    fn every_alias_names_an_action_that_runs() {
        for (alias, name) in ALIASES {
            assert!(Schema::get().tool(name).is_some(), "{alias} → {name}");
            assert!(crate::actions::implemented(name), "{alias} → {name}");
            assert!(
                Schema::get().tool(alias).is_none(),
                "{alias} is no schema name"
            );
        }
        assert_eq!(canonical("replace_text_in_file"), "file_replace_text");
        assert_eq!(canonical("file_write"), "file_write");
        assert_eq!(canonical("launch_rocket"), "launch_rocket");
    }
}
