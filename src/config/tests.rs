//! loaf.yml parsed: every section's values and every refusal's message.

use super::*;

#[test]
fn stage_isolate_is_read_and_checked() {
    let config = Config::parse(
        "stage:\n  isolate: [\".env\", \"**/secrets/**\"]\n",
        Path::new(""),
    )
    .expect("valid");
    assert_eq!(config.stage.isolate, [".env", "**/secrets/**"]);
    assert!(!config.stage.isolate_built_in);
    let none = Config::parse("version: 1\n", Path::new("")).expect("valid");
    assert_eq!(none.stage.isolate, super::DEFAULT_ISOLATE);
    assert!(none.stage.isolate_built_in);
    let empty = Config::parse("stage:\n  isolate: []\n", Path::new("")).expect("valid");
    assert!(
        empty.stage.isolate.is_empty(),
        "the user's list replaces the built-in one"
    );
    let other = Config::parse("stage:\n  share: [x]\n", Path::new("")).expect("valid");
    assert_eq!(other.stage.isolate, super::DEFAULT_ISOLATE);
    assert!(config.notices.is_empty());
    let error = Config::parse("version: 1\nstage:\n  isolate: [\"a[\"]\n", Path::new(""))
        .expect_err("a bad glob");
    assert!(
        error
            .to_string()
            .contains("line 3: stage.isolate: invalid pattern 'a['"),
        "{error}"
    );
}

#[test]
fn notes_outputs_is_hashes_by_default_full_on_request_and_checked() {
    let none = Config::parse("version: 1\n", Path::new("")).expect("valid");
    assert_eq!(none.notes_outputs, NotesOutputs::Hashes);
    let full = Config::parse("notes:\n  outputs: full\n", Path::new("")).expect("valid");
    assert_eq!(full.notes_outputs, NotesOutputs::Full);
    let hashes = Config::parse("notes:\n  outputs: hashes\n", Path::new("")).expect("valid");
    assert_eq!(hashes.notes_outputs, NotesOutputs::Hashes);
    let error = Config::parse("version: 1\nnotes:\n  outputs: all\n", Path::new(""))
        .expect_err("not a value");
    assert!(
        error
            .to_string()
            .contains("line 3: notes.outputs: 'all' is not one of hashes"),
        "{error}"
    );
    let error = Config::parse("notes:\n  output: full\n", Path::new("")).expect_err("typo");
    assert!(error.to_string().contains("outputs"), "{error}");
}

#[test]
fn stage_share_is_accepted_with_a_notice_pointing_to_isolate() {
    let config = Config::parse("stage:\n  share: [target]\n", Path::new("")).expect("valid");
    assert_eq!(config.stage.share, ["target"]);
    assert_eq!(config.notices.len(), 1);
    assert_eq!(config.notices[0].kind, crate::notice::NoticeKind::Config);
    assert!(
        config.notices[0]
            .text
            .contains("line 2: stage.share is deprecated")
            && config.notices[0].text.contains("stage.isolate"),
        "{:?}",
        config.notices
    );
}

#[test]
fn a_gc_section_sets_the_limit_and_turns_automatic_pruning_on() {
    let none = Config::parse("version: 1\n", Path::new("")).expect("valid");
    assert_eq!(
        none.gc,
        GcConfig {
            keep_days: DEFAULT_KEEP_DAYS,
            auto: false
        }
    );
    let set = Config::parse("gc:\n  keep-days: 30\n", Path::new("")).expect("valid");
    assert_eq!(
        set.gc,
        GcConfig {
            keep_days: 30,
            auto: true
        }
    );
    let error = Config::parse("gc:\n  keep_days: 30\n", Path::new("")).expect_err("typo");
    assert!(error.to_string().contains("keep-days"), "{error}");
}

#[test]
fn hook_commands_and_vars_must_be_strings_and_the_error_names_the_line() {
    let run = Config::parse(
        "version: 1\nhooks:\n  after:\n    - run: 123\n",
        Path::new(""),
    )
    .expect_err("a number");
    assert!(
        run.to_string().contains("line 4") && run.to_string().contains("123 is not a string"),
        "{run}"
    );
    let var =
        Config::parse("vars:\n  name: x\n  port: 8080\n", Path::new("")).expect_err("a number");
    assert!(
        var.to_string().contains("line 3") && var.to_string().contains("8080 is not a string"),
        "{var}"
    );
    let flag = Config::parse("vars:\n  on: true\n", Path::new("")).expect_err("a boolean");
    assert!(flag.to_string().contains("line 2"), "{flag}");
    // Quoted, or text that is not a number, they are what was written.
    let fine = Config::parse(
        "vars:\n  port: \"8080\"\n  name: x1\nhooks:\n  before:\n    - run: \"123\"\n",
        Path::new(""),
    )
    .expect("strings");
    assert_eq!(fine.vars["port"], "8080");
    assert_eq!(fine.vars["name"], "x1");
    assert_eq!(fine.hooks.before[0].run, "123");
}
