//! What a new user (and the model) meets first: a block missing its end line, two blocks
//! with one id, and `step-back` beside an untracked loaf.yml.

use crate::scratch::{Scratch, block};

#[test]
fn a_block_missing_its_end_line_gets_one_line_saying_where_to_add_it() {
    let s = Scratch::with(&[("README.md", "# demo\n")]);
    let unclosed = block(
        "aa1",
        "file_write",
        &[("path", "/repo/a.txt"), ("content", "a")],
    )
    .replace("#!end_aa1\n", "");
    let closed = block(
        "bb2",
        "file_write",
        &[("path", "/repo/b.txt"), ("content", "b")],
    );
    let reply = format!("Here:\n\n```nesl\n{unclosed}```\n\nand\n\n```nesl\n{closed}```\n");
    let out = s.apply(&reply);
    s.assert_exit(&out, 1);
    let report = s.redact(&out.stdout);
    let lines: Vec<&str> = report.lines().filter(|l| l.starts_with("aa1 ")).collect();
    assert_eq!(
        lines,
        ["aa1 ❌ ERROR: no end line: add `#!end_aa1` after line 7 (before the ``` fence) (line 7)"],
        "{report}"
    );
    assert!(report.contains("bb2 ✅ file_write /repo/b.txt"), "{report}");
    // The parser's own result stays the reference's: each line it could not read.
    let parsed = s.loaf(&["parse", "--json"], &s.reply(&reply));
    let json: serde_json::Value = serde_json::from_slice(&parsed.stdout).expect("json");
    let codes: Vec<&str> = json["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .filter_map(|e| e["code"].as_str())
        .collect();
    assert_eq!(
        codes,
        [
            "MALFORMED_ASSIGNMENT",
            "MALFORMED_ASSIGNMENT",
            "MALFORMED_ASSIGNMENT",
            "UNCLOSED_BLOCK"
        ]
    );
}

#[test]
fn two_blocks_with_one_id_both_run_and_the_report_warns_naming_both_lines() {
    let s = Scratch::with(&[("README.md", "# demo\n")]);
    let reply = format!(
        "{}{}",
        block(
            "aa1",
            "file_write",
            &[("path", "/repo/a.txt"), ("content", "a")]
        ),
        block(
            "aa1",
            "file_write",
            &[("path", "/repo/b.txt"), ("content", "b")]
        ),
    );
    let out = s.apply(&reply);
    s.assert_exit(&out, 0);
    let report = s.redact(&out.stdout);
    assert!(
        report.contains("warning: block id aa1 is used by two blocks (lines 1 and 6)"),
        "{report}"
    );
    assert_eq!(s.read("a.txt").as_deref(), Some("a"));
    assert_eq!(s.read("b.txt").as_deref(), Some("b"));
}

#[test]
fn step_back_leaves_an_untracked_loaf_yml_in_place_and_step_forward_keeps_it() {
    let s = Scratch::with(&[("a.txt", "1\n")]);
    s.write("a.txt", "2\n");
    s.commit_all("c2");
    let config = "allowed-actions: [defaults, exec]\n";
    s.write("loaf.yml", config);
    s.write("a.txt", "mine\n");
    let before = s.state();
    let back = s.loaf(&["step-back"], "");
    s.assert_exit(&back, 0);
    // Untouched and untracked, while the commit's other changes were kept away.
    assert_eq!(s.read("loaf.yml").as_deref(), Some(config));
    assert_eq!(s.read("a.txt").as_deref(), Some("1\n"));
    assert_eq!(
        s.git(&["status", "--porcelain", "--untracked-files=all"]),
        "?? loaf.yml\n"
    );
    let said = String::from_utf8_lossy(&back.stdout);
    let (in_place, kept) = said
        .split_once("Kept aside")
        .unwrap_or_else(|| panic!("{said}"));
    assert!(in_place.contains("  loaf.yml\n"), "{said}");
    assert!(
        kept.contains("  a.txt") && !kept.contains("loaf.yml"),
        "{said}"
    );
    // The configuration is in effect while stepped back.
    let instructions = s.loaf(&["instructions"], "");
    assert!(
        String::from_utf8_lossy(&instructions.stdout).contains("### exec"),
        "loaf.yml is read"
    );
    let forward = s.loaf(&["step-forward"], "");
    s.assert_exit(&forward, 0);
    assert_eq!(s.state(), before);
    // And undo of a step-back gives back exactly the state before it.
    s.assert_exit(&s.loaf(&["step-back"], ""), 0);
    s.assert_exit(&s.loaf(&["undo"], ""), 0);
    assert_eq!(s.state(), before);
}

/// A loaf.yml that is staged (not untracked) is the user's work on this commit like any
/// other: in a file the step does not touch, it stays in place, staged; step-forward leaves
/// it so.
#[test]
fn step_back_keeps_a_staged_loaf_yml_in_place_like_the_other_changes() {
    let s = Scratch::with(&[("a.txt", "1\n")]);
    s.write("a.txt", "2\n");
    s.commit_all("c2");
    s.write("loaf.yml", "allowed-actions: [defaults, exec]\n");
    s.git(&["add", "loaf.yml"]);
    let before = s.state();
    let back = s.loaf(&["step-back"], "");
    s.assert_exit(&back, 0);
    assert_eq!(
        s.read("loaf.yml").as_deref(),
        Some("allowed-actions: [defaults, exec]\n")
    );
    assert_eq!(
        s.git(&["status", "--porcelain", "--untracked-files=all"]),
        "A  loaf.yml\n"
    );
    s.assert_exit(&s.loaf(&["step-forward"], ""), 0);
    assert_eq!(s.state(), before);
}

/// Something else than a file where git-loaf keeps its lock (a folder someone made): the
/// operation stops before changing anything, names the path, and says it can go.
#[test]
fn a_folder_where_the_lock_goes_is_named_with_what_to_do() {
    let s = Scratch::with(&[("a.txt", "1\n")]);
    let lock = s.root.join(".git/loaf/lock");
    let _ = std::fs::remove_file(&lock);
    std::fs::create_dir_all(&lock).expect("a folder at the lock's path");
    let before = s.state();
    let out = s.apply(&block(
        "aa1",
        "file_write",
        &[("path", "/repo/b.txt"), ("content", "b")],
    ));
    s.assert_exit(&out, 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&lock.display().to_string()), "{stderr}");
    assert!(
        stderr.contains("anything else at its path can be removed"),
        "{stderr}"
    );
    assert_eq!(s.state(), before, "nothing changed");
    std::fs::remove_dir(&lock).expect("removed");
    s.assert_exit(
        &s.apply(&block(
            "bb2",
            "file_write",
            &[("path", "/repo/b.txt"), ("content", "b")],
        )),
        0,
    );
}
