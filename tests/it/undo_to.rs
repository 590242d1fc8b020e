//! `git loaf undo --to <id|N>`: a whole session undone in one step, exactly, with undo's
//! refusals, and itself undoable.

use std::process::Output;

use crate::scratch::{Scratch, block, trailer};

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn write(id: &str, path: &str, content: &str) -> String {
    block(id, "file_write", &[("path", path), ("content", content)])
}

fn oplog_length(s: &Scratch) -> usize {
    s.git(&["rev-list", "--first-parent", "--count", "refs/loaf/oplog"])
        .trim()
        .parse()
        .expect("a count")
}

/// Uncommitted work, then three applies (the second rewriting a file the first wrote).
fn session() -> (Scratch, String, Vec<String>) {
    let s = Scratch::with(&[("a.txt", "one\n")]);
    s.write("a.txt", "one\nmine, staged\n");
    s.git(&["add", "a.txt"]);
    s.write("u.txt", "untracked\n");
    let before = s.state();
    let mut ids = Vec::new();
    for (n, (path, content)) in [
        ("b.txt", "ai 1\n"),
        ("b.txt", "ai 2\n"),
        ("c.txt", "ai 3\n"),
    ]
    .into_iter()
    .enumerate()
    {
        let reply = write(&format!("k{n}a"), &format!("/repo/{path}"), content);
        s.assert_exit(&s.apply(&reply), 0);
        ids.push(trailer(&s, "HEAD", "Loaf-Apply"));
    }
    (s, before, ids)
}

#[test]
fn undoes_a_whole_session_in_one_step_and_a_plain_undo_redoes_it() {
    let (s, before, ids) = session();
    let after = s.state();
    let logged = oplog_length(&s);

    let out = s.loaf(&["undo", "--to", &ids[0]], "");
    s.assert_exit(&out, 0);
    assert_eq!(
        s.state(),
        before,
        "as before the first apply, uncommitted work included"
    );
    assert_eq!(oplog_length(&s), logged + 1, "one entry");
    let text = stdout(&out);
    assert!(
        text.starts_with(&format!(
            "Undid {} (3 operations, back to: AI: file_write b.txt): ",
            ids[0]
        )),
        "{text}"
    );
    assert!(text.contains("Undid 3 operations:"), "{text}");
    for id in &ids {
        assert!(text.contains(id.as_str()), "lists {id}: {text}");
    }

    let out = s.loaf(&["undo"], "");
    s.assert_exit(&out, 0);
    assert!(
        stdout(&out).contains(&format!(
            "(undo --to {0}: 3 operations, back to: AI: file_write b.txt)",
            ids[0]
        )),
        "names the walk it takes back: {}",
        stdout(&out)
    );
    assert_eq!(s.state(), after, "all three back");
    // And the operations are still there to undo one by one.
    s.assert_exit(&s.loaf(&["undo"], ""), 0);
    assert_eq!(s.read("c.txt"), None);
    assert_eq!(s.read("b.txt").as_deref(), Some("ai 2\n"));
    s.assert_tidy();
}

#[test]
fn a_count_undoes_the_last_n_operations() {
    let (s, _, ids) = session();
    s.assert_exit(&s.loaf(&["undo", "--to", "2"], ""), 0);
    assert_eq!(s.read("b.txt").as_deref(), Some("ai 1\n"));
    assert_eq!(s.read("c.txt"), None);
    assert_eq!(trailer(&s, "HEAD", "Loaf-Apply"), ids[0]);

    let out = s.loaf(&["undo", "--to", "9"], "");
    s.assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("cannot undo 9 operations"),
        "{}",
        stderr(&out)
    );
    let out = s.loaf(&["undo", "--to", "nosuch"], "");
    s.assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("no operation 'nosuch'"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn refuses_when_things_changed_since_unless_forced() {
    let (s, before, ids) = session();
    s.write("c.txt", "edited since\n");
    let changed = s.state();
    let out = s.loaf(&["undo", "--to", &ids[0]], "");
    s.assert_exit(&out, 3);
    assert_eq!(s.state(), changed, "nothing changed");
    assert!(stderr(&out).contains("--force"), "{}", stderr(&out));

    let out = s.loaf(&["undo", "--to", &ids[0], "--force"], "");
    s.assert_exit(&out, 0);
    assert_eq!(s.state(), before);
    assert!(
        stdout(&out).contains("`git loaf restore "),
        "{}",
        stdout(&out)
    );
}

#[test]
fn refuses_to_remove_a_pushed_commit_in_the_run() {
    let (s, _, ids) = session();
    s.git(&["update-ref", "refs/remotes/origin/main", "HEAD~1"]);
    let out = s.loaf(&["undo", "--to", &ids[0]], "");
    s.assert_exit(&out, 3);
    assert!(stderr(&out).contains("origin/main"), "{}", stderr(&out));
    // The last one alone was not pushed.
    s.assert_exit(&s.loaf(&["undo", "--to", &ids[2]], ""), 0);
    assert_eq!(s.read("c.txt"), None);
    // `--force` overrides it (the user will force-push).
    s.assert_exit(&s.loaf(&["redo"], ""), 0);
    s.assert_exit(&s.loaf(&["undo", "--to", &ids[0], "--force"], ""), 0);
    assert_eq!(s.read("b.txt"), None);
    assert_eq!(s.read("c.txt"), None);
}

/// A run of steps undone at once goes back to the commit the first step left, exactly; a run
/// that starts on the branch and ends detached is refused with a way that works.
#[test]
fn undoes_a_run_of_steps_and_refuses_one_that_changes_the_branch() {
    let s = Scratch::with(&[("a.txt", "1\n")]);
    for n in 2..=4 {
        s.write("a.txt", &format!("{n}\n"));
        s.commit_all(&format!("c{n}"));
    }
    s.assert_exit(&s.loaf(&["step-back"], ""), 0);
    s.write("x.txt", "at c3\n");
    let at_c3 = s.state();
    s.assert_exit(&s.loaf(&["step-back"], ""), 0);
    s.assert_exit(&s.loaf(&["step-back"], ""), 0);

    s.assert_exit(&s.loaf(&["undo", "--to", "2"], ""), 0);
    assert_eq!(s.state(), at_c3);

    // The first step-back left main: undoing back to it would re-attach HEAD mid-run.
    let out = s.loaf(&["undo", "--to", "4"], "");
    s.assert_exit(&out, 3);
    assert!(stderr(&out).contains("step-forward"), "{}", stderr(&out));
}

/// Work made between two of the operations `undo --to` walks back is carried by the later
/// ones (an apply keeps the user's edits uncommitted): going back past them would drop it.
/// `undo --to` refuses then as plain `undo` would one step before it, naming the file;
/// `--force` saves that work under refs/loaf/saved/ first.
#[test]
fn refuses_when_work_was_made_between_the_operations_and_force_saves_it() {
    let s = Scratch::with(&[("a.txt", "one\n")]);
    s.assert_exit(&s.apply(&write("k1a", "/repo/b.txt", "ai 1\n")), 0);
    let first = trailer(&s, "HEAD", "Loaf-Apply");
    s.write("mine.txt", "made after the first apply\n");
    s.assert_exit(&s.apply(&write("k2a", "/repo/c.txt", "ai 2\n")), 0);
    let after = s.state();

    let out = s.loaf(&["undo", "--to", &first], "");
    s.assert_exit(&out, 3);
    assert_eq!(s.state(), after, "nothing changed");
    assert_eq!(
        s.read("mine.txt").as_deref(),
        Some("made after the first apply\n")
    );
    let err = stderr(&out);
    assert!(err.contains("mine.txt"), "names the path: {err}");
    assert!(err.contains("--force"), "{err}");
    assert!(
        !stdout(&out).contains("back as they were"),
        "{}",
        stdout(&out)
    );

    let out = s.loaf(&["undo", "--to", &first, "--force"], "");
    s.assert_exit(&out, 0);
    assert_eq!(s.read("mine.txt"), None);
    assert_eq!(s.read("b.txt"), None);
    let text = stdout(&out);
    let id = text
        .split('`')
        .find_map(|c| c.strip_prefix("git loaf restore "))
        .unwrap_or_else(|| panic!("names the restore that brings it back: {text}"));
    s.assert_exit(&s.loaf(&["restore", id], ""), 0);
    assert_eq!(
        s.read("mine.txt").as_deref(),
        Some("made after the first apply\n")
    );
    assert_eq!(s.read("b.txt"), None, "only the user's work came back");
    assert_eq!(
        s.git(&["status", "--porcelain", "--untracked-files=all"]),
        "?? mine.txt\n"
    );
}

/// A commit made between two of the operations is refused too (it would be dropped from
/// the branch), and `--force` keeps it reachable under refs/loaf/saved/.
#[test]
fn refuses_when_a_commit_was_made_between_the_operations() {
    let s = Scratch::with(&[("a.txt", "one\n")]);
    s.assert_exit(&s.apply(&write("k1a", "/repo/b.txt", "ai 1\n")), 0);
    let first = trailer(&s, "HEAD", "Loaf-Apply");
    s.write("mine.txt", "committed\n");
    s.commit_all("mine");
    let mine = s.head();
    s.assert_exit(&s.apply(&write("k2a", "/repo/c.txt", "ai 2\n")), 0);
    let after = s.state();

    let out = s.loaf(&["undo", "--to", &first], "");
    s.assert_exit(&out, 3);
    assert_eq!(s.state(), after, "nothing changed");
    let out = s.loaf(&["undo", "--to", &first, "--force"], "");
    s.assert_exit(&out, 0);
    let saved = s.git(&["for-each-ref", "--format=%(refname)", "refs/loaf/saved/"]);
    let saved = saved
        .lines()
        .find(|r| !r.contains('-'))
        .unwrap_or_else(|| panic!("the undo's own saved ref: {saved}"));
    s.git(&["merge-base", "--is-ancestor", &mine, saved]);
}

/// `redo` right after `undo --to` re-does the whole walk, in one step; a second `redo` has
/// nothing left to re-do, and the operations can then be undone one by one again.
#[test]
fn redo_after_undo_to_redoes_the_whole_walk() {
    let (s, before, ids) = session();
    let after = s.state();
    s.assert_exit(&s.loaf(&["undo", "--to", &ids[0]], ""), 0);
    assert_eq!(s.state(), before);

    let out = s.loaf(&["redo"], "");
    s.assert_exit(&out, 0);
    assert_eq!(s.state(), after, "all three back");
    let text = stdout(&out);
    assert!(
        text.contains(&format!("(the 3 operations `undo --to {}` undid)", ids[0])),
        "{text}"
    );
    assert!(text.contains("Redid 3 operations:"), "{text}");

    let out = s.loaf(&["redo"], "");
    s.assert_exit(&out, 2);
    assert_eq!(s.state(), after, "a second redo changes nothing");

    s.assert_exit(&s.loaf(&["undo"], ""), 0);
    assert_eq!(s.read("c.txt"), None);
    assert_eq!(s.read("b.txt").as_deref(), Some("ai 2\n"));
    s.assert_exit(&s.loaf(&["redo"], ""), 0);
    assert_eq!(s.state(), after);
    s.assert_tidy();
}

/// A count reads the undo stack only as deep as it goes (the cost does not grow with the
/// log): with the bottom of the stack unreadable, `--to 1` still undoes the top one, and
/// only going down to the bottom finds the damage.
#[test]
fn a_count_reads_the_stack_only_as_deep_as_it_goes() {
    let (s, _, ids) = session();
    // The first apply's stack node, the bottom one, made unreadable.
    let node = s.git(&["rev-parse", "refs/loaf/oplog~2:node-0"]);
    remove_object(&s, node.trim());
    let out = s.loaf(&["undo", "--to", "1"], "");
    s.assert_exit(&out, 0);
    assert_eq!(s.read("c.txt"), None);
    assert_eq!(trailer(&s, "HEAD", "Loaf-Apply"), ids[1]);
    // The damage is real: going down to the first apply reads the bottom node.
    let out = s.loaf(&["undo", "--to", &ids[0]], "");
    s.assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("object not found"),
        "{}",
        stderr(&out)
    );
}

/// `undo --to` back to an unborn branch, then the user commits: undoing the `undo --to`
/// is refused, and the hint names no commit (there is none to revert or go back to).
#[test]
fn undoing_an_undo_to_an_unborn_branch_after_a_commit_names_no_commit() {
    let s = Scratch::empty();
    s.assert_exit(&s.apply(&write("a1a", "/repo/a.txt", "a\n")), 0);
    s.assert_exit(&s.apply(&write("b2b", "/repo/b.txt", "b\n")), 0);
    s.assert_exit(&s.loaf(&["undo", "--to", "2"], ""), 0);
    assert_eq!(s.head(), "unborn");
    s.write("c.txt", "mine\n");
    s.commit_all("mine");
    let out = s.loaf(&["undo"], "");
    s.assert_exit(&out, 3);
    let hint = stderr(&out);
    assert!(
        hint.contains("you committed since on the branch it left empty")
            && !hint.contains("(unborn)"),
        "{hint}"
    );
    assert_eq!(s.git(&["log", "--format=%s"]), "mine\n", "nothing moved");
}

/// Removes object `id` from the repository: its loose copy, and its copy in any pack (an
/// operation's objects are made durable as one pack too), whose other objects are unpacked
/// loose first.
fn remove_object(s: &Scratch, id: &str) {
    let pack_dir = s.root.join(".git/objects/pack");
    for entry in std::fs::read_dir(&pack_dir).expect("pack folder").flatten() {
        let idx = entry.path();
        if idx.extension().is_none_or(|x| x != "idx") {
            continue;
        }
        let listed = s.sh(&format!("git show-index < '{}'", idx.display()));
        if !String::from_utf8_lossy(&listed.stdout).contains(id) {
            continue;
        }
        let pack = idx.with_extension("pack");
        let aside = s.sibling("unpacked.pack");
        std::fs::rename(&pack, &aside).expect("pack aside");
        std::fs::remove_file(&idx).expect("its index");
        let unpacked = s.sh(&format!("git unpack-objects -q < '{}'", aside.display()));
        assert!(unpacked.status.success(), "{unpacked:?}");
    }
    let loose = s.root.join(".git/objects").join(&id[..2]).join(&id[2..]);
    std::fs::remove_file(loose).expect("a loose object");
}
