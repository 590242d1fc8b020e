//! What git-loaf stores per apply: the note keeps outputs, errors and hashes but not the
//! file contents the commit already holds, and `git loaf show` still prints the full
//! record.

use serde_json::Value;

use crate::scratch::{Scratch, block};

/// A written file's content, long enough to be left out of the note.
fn long_content(name: &str) -> String {
    (0..60)
        .map(|i| format!("{name}: line {i} of a file the commit holds\n"))
        .collect()
}

#[test]
fn the_note_leaves_out_what_the_commit_holds_and_show_prints_the_full_record() {
    let s = Scratch::with(&[("a.txt", "alpha\n"), ("b.txt", "beta\n")]);
    let new = long_content("new");
    let later_edited = long_content("edited");
    let reply = [
        block(
            "w1a",
            "file_write",
            &[("path", "/repo/src/new.rs"), ("content", new.trim_end())],
        ),
        // Written, then edited by the same reply: the commit holds the edit, so the
        // written content must stay in the note.
        block(
            "w2b",
            "file_write",
            &[
                ("path", "/repo/e.txt"),
                ("content", later_edited.trim_end()),
            ],
        ),
        block(
            "r3c",
            "file_replace_text",
            &[
                ("path", "/repo/e.txt"),
                ("old_text", "edited: line 7 "),
                ("new_text", "EDITED: line 7 "),
            ],
        ),
        block("r4d", "file_read", &[("path", "/repo/a.txt")]),
        block(
            "e5e",
            "exec",
            &[("lang", "bash"), ("code", "echo exec-said-this")],
        ),
        block(
            "f6f",
            "file_replace_text",
            &[
                ("path", "/repo/b.txt"),
                ("old_text", "not there"),
                ("new_text", "x"),
            ],
        ),
        "#!nesl [@three-char-SHA-256: bad]\naction = \"file_write\"\npath = unquoted\n#!end_bad\n"
            .to_owned(),
    ]
    .concat();
    let applied = s.apply(&reply);
    s.assert_exit(&applied, 1);
    let shown = s.loaf(&["show"], "");
    s.assert_exit(&shown, 0);
    assert_eq!(
        s.redact(&shown.stdout),
        s.redact(&applied.stdout),
        "show prints the report apply printed"
    );

    // The stored note: outputs, errors and the edited file's written content are there;
    // the content the commit holds is a reference to its blob.
    let raw = s.git(&["notes", "--ref", "refs/notes/loaf", "show", "HEAD"]);
    let blob = s.git(&["rev-parse", "HEAD:src/new.rs"]);
    assert!(
        raw.contains(&format!("\"loaf-blob\": \"{}\"", blob.trim())),
        "{raw}"
    );
    assert!(!raw.contains("new: line 30 of"), "no second copy: {raw}");
    assert!(
        raw.contains("edited: line 30 of"),
        "not what the commit holds"
    );
    // What blocks read or printed is recorded as sizes and hashes only (DESIGN §2
    // "Secrets"); `show` below prints it all from the report kept locally.
    assert!(
        !raw.contains("alpha") && raw.contains("\"sha256\""),
        "outputs hashed: {raw}"
    );
    assert!(raw.contains("not there"), "errors stay");
    assert!(raw.len() < new.len() * 3, "{} bytes", raw.len());

    // The JSON record is whole again: apply's result, contents included.
    let applied_json = s.loaf(&["show", "--json"], "");
    s.assert_exit(&applied_json, 0);
    let result: Value = serde_json::from_slice(&applied_json.stdout).expect("JSON");
    let contents: Vec<&str> = result["results"]
        .as_array()
        .expect("results")
        .iter()
        .filter(|r| r["action"] == "file_write")
        .filter_map(|r| r["params"]["content"].as_str())
        .collect();
    assert_eq!(contents, [new.trim_end(), later_edited.trim_end()]);
    assert_eq!(
        std::fs::read_to_string(s.root.join("src/new.rs")).expect("written"),
        new.trim_end()
    );
}

#[test]
fn show_json_is_what_apply_json_printed() {
    let s = Scratch::with(&[("a.txt", "alpha\n")]);
    let new = long_content("json");
    let reply = [
        block(
            "w1a",
            "file_write",
            &[("path", "/repo/n.txt"), ("content", new.trim_end())],
        ),
        block("r2b", "file_read", &[("path", "/repo/a.txt")]),
    ]
    .concat();
    let applied = s.loaf(&["apply", "--json"], &s.reply(&reply));
    s.assert_exit(&applied, 0);
    let shown = s.loaf(&["show", "--json"], "");
    s.assert_exit(&shown, 0);
    assert_eq!(s.redact(&shown.stdout), s.redact(&applied.stdout));
    let raw = s.git(&["notes", "--ref", "refs/notes/loaf", "show", "HEAD"]);
    assert!(!raw.contains("json: line 30"), "{raw}");
}

/// A dirty tree of many files is recorded as one pack, not a loose object per file and
/// folder: undo and redo then restore every uncommitted file exactly, a reply's exec sees
/// the user's versions, and git reads the pack (`fsck`, `verify-pack`).
#[test]
fn a_large_dirty_tree_is_recorded_as_one_pack_and_restored_exactly() {
    let files: Vec<(String, String)> = (0..120)
        .map(|n| {
            (
                format!("src/m{}/f{n}.txt", n % 12),
                format!("committed {n}\n"),
            )
        })
        .collect();
    let mut refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_str()))
        .collect();
    refs.push(("loaf.yml", "allowed-actions: [defaults, exec]\n"));
    let s = Scratch::with(&refs);
    for (n, (path, _)) in files.iter().enumerate().take(90) {
        s.write(path, &format!("the user's edit {n}\n"));
    }
    for n in 0..30 {
        s.write(&format!("src/new/u{n}.txt"), &format!("untracked {n}\n"));
    }
    s.git(&["add", "src/m0/f0.txt"]);
    let before = s.state();
    let loose_before = loose_objects(&s);
    let packs = || std::fs::read_dir(s.root.join(".git/objects/pack")).map_or(0, |d| d.count());
    let packs_before = packs();

    let reply = [
        block(
            "w1a",
            "file_write",
            &[("path", "/repo/reply.txt"), ("content", "r\n")],
        ),
        block(
            "x2b",
            "exec",
            &[
                ("lang", "bash"),
                ("code", "cat src/m1/f1.txt src/new/u7.txt"),
            ],
        ),
    ]
    .concat();
    let out = s.apply(&reply);
    s.assert_exit(&out, 0);
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        report.contains("the user's edit 1") && report.contains("untracked 7"),
        "{report}"
    );
    // The checkpoint's 120 new blobs and 15 trees would be 135 loose files; what is left
    // loose (~25) is the commits, the note, the log entry, the exec's snapshot.
    let written = loose_objects(&s) - loose_before;
    assert!(written < 60, "{written} loose objects written");
    assert!(
        packs() > packs_before,
        "the checkpoint's objects are in a pack"
    );

    s.assert_exit(&s.loaf(&["undo"], ""), 0);
    assert_eq!(s.state(), before, "undo restores the dirty tree exactly");
    s.assert_exit(&s.loaf(&["redo"], ""), 0);
    s.assert_exit(&s.loaf(&["undo"], ""), 0);
    assert_eq!(s.state(), before);
    s.git(&["fsck", "--strict", "--no-dangling"]);
    for pack in std::fs::read_dir(s.root.join(".git/objects/pack"))
        .expect("packs")
        .flatten()
    {
        if pack.path().extension().is_some_and(|x| x == "pack") {
            s.git(&["verify-pack", pack.path().to_str().expect("utf-8")]);
        }
    }
    s.assert_tidy();
}

/// How many loose objects the repository holds.
fn loose_objects(s: &Scratch) -> usize {
    s.git(&["count-objects", "-v"])
        .lines()
        .find_map(|l| l.strip_prefix("count: "))
        .and_then(|n| n.parse().ok())
        .expect("a count")
}
