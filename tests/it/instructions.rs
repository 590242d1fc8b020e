//! `git loaf instructions`: in sync with the schema and loaf.yml, and every example block it
//! prints is a block `apply` accepts.

use insta::assert_snapshot;

use crate::scratch::Scratch;
use git_loaf::actions::{Schema, runnable};

/// `git loaf instructions` at the root, root shown as `/repo`; it must succeed.
fn instructions(scratch: &Scratch) -> String {
    let out = scratch.loaf(&["instructions"], "");
    scratch.assert_exit(&out, 0);
    scratch.redact(&out.stdout)
}

/// The part of `text` from the line `start` up to (not including) the line starting `end`.
fn section<'a>(text: &'a str, start: &str, end: &str) -> &'a str {
    let from = text
        .find(start)
        .unwrap_or_else(|| panic!("{start} in:\n{text}"));
    let rest = &text[from..];
    let to = rest[start.len()..]
        .find(end)
        .map_or(rest.len(), |i| i + start.len());
    &rest[..to]
}

/// Every NESL block of `text`, header to end marker, each with its final line break.
fn blocks(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if line.starts_with("#!nesl ") {
            current = Some(String::new());
        }
        if let Some(block) = current.as_mut() {
            block.push_str(line);
            block.push('\n');
            if line.starts_with("#!end_") {
                found.extend(current.take());
            }
        }
    }
    assert!(current.is_none(), "a block never ends in:\n{text}");
    found
}

/// The section of one action: its parameters and example.
fn action_section<'a>(text: &'a str, name: &str) -> &'a str {
    section(text, &format!("\n### {name}\n"), "\n### ")
}

#[test]
fn lists_every_runnable_action_with_every_parameter_and_exec_only_when_enabled() {
    let scratch = Scratch::empty();
    let text = instructions(&scratch);
    assert!(
        text.contains("\nYou work on the repository at /repo."),
        "{text}"
    );
    let schema = Schema::get();
    let check = |text: &str, name: &str| {
        let part = action_section(text, name);
        let tool = schema
            .tool(name)
            .expect("a runnable action is in the schema");
        for param in &tool.params {
            let needed = if param.required {
                "required"
            } else {
                "optional"
            };
            let item = format!("\n- `{}` (", param.name);
            let line = part
                .split_once(&item)
                .and_then(|(_, rest)| rest.lines().next())
                .unwrap_or_else(|| panic!("{name}.{} listed in:\n{part}", param.name));
            assert!(
                line.contains(needed),
                "{name}.{} is {needed}: {line}",
                param.name
            );
        }
        assert_eq!(blocks(part).len(), 1, "one example for {name}:\n{part}");
        assert!(part.contains(&format!("action = \"{name}\"")), "{part}");
    };
    let actions: Vec<&str> = runnable().into_iter().filter(|a| *a != "exec").collect();
    assert_eq!(actions.len(), git_loaf::exec::fs::ACTIONS.len());
    for name in &actions {
        check(&text, name);
    }
    assert!(
        !text.contains("### exec"),
        "exec is off by default:\n{text}"
    );
    assert!(!text.contains("action = \"exec\""), "{text}");
    // The schema's actions nobody runs yet are never offered.
    assert!(
        !text.contains("### files_replace_text_in_parents"),
        "{text}"
    );
    assert!(!text.contains("### context_add"), "{text}");

    scratch.write("loaf.yml", "allowed-actions: [defaults, exec]\n");
    let text = instructions(&scratch);
    for name in runnable() {
        check(&text, name);
    }

    scratch.write("loaf.yml", "allowed-actions: [file_read, exec]\n");
    let text = instructions(&scratch);
    let listed: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("### "))
        .collect();
    assert_eq!(listed, ["file_read", "exec"], "{text}");
}

#[test]
fn every_example_it_prints_validates_in_a_dry_run() {
    for config in ["", "allowed-actions: [defaults, exec]\n"] {
        let scratch = Scratch::with(&[("README.md", "# hi\n")]);
        scratch.write("loaf.yml", config);
        let out = scratch.loaf(&["instructions"], "");
        scratch.assert_exit(&out, 0);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let examples = blocks(&text);
        // The syntax example, then one per action.
        let expected = 1 + runnable()
            .into_iter()
            .filter(|a| *a != "exec" || !config.is_empty())
            .count();
        assert_eq!(examples.len(), expected, "{text}");
        let reply = examples.join("\nSome prose between blocks.\n\n");
        let out = scratch.loaf(&["apply", "--dry-run"], &reply);
        scratch.assert_exit(&out, 0);
        let report = scratch.redact(&out.stdout);
        assert!(!report.contains('❌'), "{report}");
        assert!(
            report.contains(&format!("=== {expected} actions would run; 0 errors ===")),
            "{report}"
        );
        // A dry run changes nothing.
        assert_eq!(scratch.read("src/hello.txt"), None);
    }
}

#[test]
fn the_root_is_the_worktree_root_from_a_subdirectory_and_the_current_directory_outside() {
    let scratch = Scratch::empty();
    scratch.write("sub/dir/keep", "");
    let out = scratch.loaf_in(&scratch.root.join("sub/dir"), &["instructions"], "");
    scratch.assert_exit(&out, 0);
    let text = scratch.redact(&out.stdout);
    assert!(text.contains("starts with `/repo/`"), "{text}");

    let outside = scratch.sibling("plain");
    std::fs::create_dir(&outside).expect("mkdir");
    let outside = outside.canonicalize().expect("canonical");
    let out = scratch.loaf_in(&outside, &["instructions"], "");
    scratch.assert_exit(&out, 0);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("starts with `{}/`", outside.display())),
        "{text}"
    );
}

#[test]
fn an_unusable_loaf_yml_is_a_usage_error() {
    let scratch = Scratch::empty();
    scratch.write("loaf.yml", "allowed-actions: [file_wirte]\n");
    let out = scratch.loaf(&["instructions"], "");
    scratch.assert_exit(&out, 2);
    let err = scratch.redact(&out.stderr);
    assert!(err.contains("did you mean 'file_write'"), "{err}");
    assert!(err.contains("hint: "), "{err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn syntax_section() {
    let scratch = Scratch::empty();
    let text = instructions(&scratch);
    assert_snapshot!(section(&text, "## NESL syntax", "## Rules"), @r##"
    ## NESL syntax

    A block starts with a header line holding its id and ends with `#!end_` and the same id. Give every block its own id of three letters or digits. Inside, one property per line; `action` names what to do, the other properties are its parameters:

    ```
    #!nesl [@three-char-SHA-256: k7m]
    action = "file_write"
    path = "/repo/notes/\"quoted\" name.txt"
    content = <<'EOT_k7m'
    Hello world!
    how are you?
    EOT_k7m
    #!end_k7m
    ```

    - One-line value: `key = "value"`, a JSON string: write `\"` for a double quote, `\\` for a backslash, `\n` for a line break, `\t` for a tab. A value containing `:=` is refused: use a heredoc for it.
    - Heredoc (multi-line or verbatim value): `key = <<'EOT_k7m'`, then the lines of the value exactly as they are (no escapes), then a line that is just `EOT_k7m`. The delimiter is always `EOT_` followed by the block's id. The value ends before the line break preceding the delimiter: to end a file with a line break, leave an empty line before `EOT_k7m`.
    - Keys are letters, digits and `_`; each key once per block.
    - Text outside blocks is ignored, so explain freely between them. Do not indent the block's lines and do not put anything else on the header or end line.
"##);
}

/// The review report's file is named where the model can read it: in a linked worktree the
/// git folder is the worktree's own (its `.git` is a file there), not `<root>/.git/…`.
#[test]
fn the_review_reports_file_is_named_in_the_worktrees_own_git_folder() {
    let scratch = Scratch::with(&[("a.txt", "a\n")]);
    let linked = scratch.sibling("linked");
    scratch.git(&[
        "worktree",
        "add",
        "-q",
        linked.to_str().expect("utf-8 path"),
    ]);
    let main = instructions(&scratch);
    assert!(main.contains("`/repo/.git/loaf/review/LAST.md`"), "{main}");
    let out = scratch.loaf_in(&linked, &["instructions"], "");
    scratch.assert_exit(&out, 0);
    let text = String::from_utf8_lossy(&out.stdout);
    let expected = scratch
        .root
        .join(".git/worktrees/linked/loaf/review/LAST.md");
    assert!(
        text.contains(&format!("`{}`", expected.display())),
        "{text}"
    );
}
