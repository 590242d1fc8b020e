//! Validation messages lead somewhere: each one, exactly as the model receives it, says what
//! to write instead. The reply in `test-data/hints/mixed-reply.md` mixes prose, a good block,
//! a slupe-named action, a misspelled action, an unquoted number, an unquoted heredoc
//! delimiter, an action the schema lists but nothing runs, and an unknown one.

use std::path::Path;

use git_loaf::{actions, nesl};
use insta::assert_snapshot;

use crate::support::{read, test_data};

/// Every block error of `reply` as `<block> <line>: <message>`, in block order.
fn messages(reply: &str) -> String {
    let plan = actions::plan(reply, &nesl::parse(reply), Path::new("/repo"));
    let mut errors = plan.errors.clone();
    errors.sort_by_key(|e| e.report_line());
    errors
        .iter()
        .map(|e| {
            format!(
                "{} line {}: {}",
                e.block_id,
                e.report_line().unwrap_or_default(),
                e.message
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn every_error_of_a_mixed_reply_says_what_to_write() {
    let reply = read(&test_data("hints/mixed-reply.md"));
    let plan = actions::plan(&reply, &nesl::parse(&reply), Path::new("/repo"));
    let names: Vec<(&str, &str)> = plan
        .actions
        .iter()
        .map(|a| (a.block_id.as_str(), a.name.as_str()))
        .collect();
    assert_eq!(
        names,
        [("ok1", "file_write"), ("sl6", "file_read")],
        "the good block and the slupe-named one run, under the schema's names"
    );
    assert_snapshot!(messages(&reply), @r#"
    ap2 line 11: Unknown action 'append_text_to_file' (did you mean 'file_append'?)
    ct3 line 22: Value must be a quoted string or heredoc; write it quoted: `count = "2"`
    pa4 line 25: Action 'files_replace_text_in_parents' cannot be used in a reply yet; available: file_write, file_replace_text, file_replace_text_range, file_replace_all_text, files_replace_all_text, file_append, file_delete, file_move, file_read, file_read_numbered, file_replace_lines, files_read, dir_create, dir_delete, ls, grep, glob, exec
    lr5 line 33: Unknown action 'launch_rocket'; available: file_write, file_replace_text, file_replace_text_range, file_replace_all_text, files_replace_all_text, file_append, file_delete, file_move, file_read, file_read_numbered, file_replace_lines, files_read, dir_create, dir_delete, ls, grep, glob, exec
    hd7 line 45: Value must be a quoted string or heredoc; a heredoc's delimiter is in single quotes: `content = <<'EOT_hd7'`
    "#);
}

#[test]
fn an_unquoted_value_is_shown_written_quoted() {
    let reply = "#!nesl [@three-char-SHA-256: q1a]\naction = \"file_read_numbered\"\npath = \"/repo/a\"\nlines = 4\ndelimiter = ': '\n#!end_q1a\n\
                 #!nesl [@three-char-SHA-256: q2b]\naction = \"file_write\"\npath = /repo/say \"hi\".txt\ncontent =\n#!end_q2b\n\
                 #!nesl [@three-char-SHA-256: q3c]\naction = \"file_write\"\npath = \"/repo/a\"\ncontent = \"a\\q\"\n#!end_q3c\n";
    assert_snapshot!(messages(reply), @r#"
    q1a line 4: Value must be a quoted string or heredoc; write it quoted: `lines = "4"`
    q1a line 5: Value must be a quoted string or heredoc; write it quoted: `delimiter = ": "`
    q2b line 9: Value must be a quoted string or heredoc; write it quoted: `path = "/repo/say \"hi\".txt"`
    q2b line 10: Value must be a quoted string or heredoc; write a value: `content = ""`, or a heredoc for several lines: `content = <<'EOT_q2b'`
    q3c line 15: Value must be a quoted string or heredoc; a quoted value is a JSON string: write a backslash as `\\`, or use a heredoc, whose text is taken as is: `content = <<'EOT_q3c'`
    "#);
}

#[test]
fn misspelled_actions_get_the_action_meant() {
    let cases = [
        ("appendToFile", "file_append"),
        ("add_to_file", "file_append"),
        ("create_file", "file_write"),
        ("replace_in_file", "file_replace_text"),
        ("read_lines_numbered", "file_read_numbered"),
        ("list_directory", "ls"),
        ("search_files", "grep"),
        ("make_dir", "dir_create"),
        ("remove_folder", "dir_delete"),
        ("run_bash", "exec"),
        ("file_wirte", "file_write"),
    ];
    for (wrong, meant) in cases {
        let reply = format!(
            "#!nesl [@three-char-SHA-256: m1a]\naction = \"{wrong}\"\npath = \"/repo/a\"\n#!end_m1a\n"
        );
        assert_eq!(
            messages(&reply),
            format!("m1a line 1: Unknown action '{wrong}' (did you mean '{meant}'?)"),
            "{wrong}"
        );
    }
}
