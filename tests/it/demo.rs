//! The README's main command (`scripts/demo.sh`): a fixture reply applied to a scratch
//! repository, then `log`, `show` and `undo`, exactly as a user would run them.

use insta::assert_snapshot;

/// Commit ids and apply ids (words of 6–7 lower-case hex digits; no English word of the
/// output is one) replaced by `<id>`: they depend on the time of the apply.
fn redact_ids(text: &str) -> String {
    text.split_inclusive(|c: char| !c.is_ascii_hexdigit())
        .map(|piece| {
            let word = piece.trim_end_matches(|c: char| !c.is_ascii_hexdigit());
            let rest = &piece[word.len()..];
            let is_id = (6..=7).contains(&word.len())
                && word
                    .chars()
                    .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c));
            if is_id {
                format!("<id>{rest}")
            } else {
                piece.to_owned()
            }
        })
        .collect()
}

#[test]
fn the_readme_demo_applies_logs_and_undoes() {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/demo.sh");
    let out = std::process::Command::new("bash")
        .arg(&script)
        .env("GIT_LOAF", assert_cmd::cargo::cargo_bin("git-loaf"))
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_snapshot!(redact_ids(&String::from_utf8_lossy(&out.stdout)), @r#"
    $ git loaf apply < reply.md
    note: set notes.rewriteRef = refs/notes/loaf in this repository's config, so `git commit --amend` and `git rebase` keep the git-loaf records
    === LOAF RESULTS === apply <id> · commit <id> · PARTIAL: 2 ✅ 1 ❌
    k7m ✅ file_replace_text /repo/src/greet.py
    t3s ✅ file_write /repo/tests/test_greet.py
    q1w ❌ ERROR: Unknown action 'append_file' (did you mean 'file_append'?) (line 32)
    === END ===
    (exit 1: one block used an unknown action, on purpose; the rest is committed)

    $ git log --format='%h %s'
    <id> AI: Switch `greet` to an f-string, test it, and note it in the README
    <id> greet: first version

    $ git status --short
    ?? NOTES.txt

    $ git loaf log
    <id> <id> 2026-01-01T00:00:00Z ✅2 ❌1 AI: Switch `greet` to an f-string, test it, and note it in the README

    $ git loaf show --json | head -5
    {
      "success": false,
      "totalBlocks": 3,
      "executedActions": 2,
      "results": [

    $ git loaf undo
    Undid <id> (AI: Switch `greet` to an f-string, test it, and note it in the README): main <id> -> <id>
      src/greet.py
      tests/test_greet.py
    Your uncommitted changes are back as they were (staged and unstaged).

    $ git status --short
    ?? NOTES.txt

    $ git log --format='%h %s'
    <id> greet: first version
    "#);
}
