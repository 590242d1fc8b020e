//! `git_loaf::api::reply_applies`: what the applies of one reply key left in the operation
//! log, as lorch's builder reads it to answer a step it already made (docs/lorch.md).

use git_loaf::api::{ApplyOptions, KeyedApply, apply, reply_applies, undo_to};

use crate::scratch::{Scratch, block};

/// Applies a reply writing `path` with `key`, and returns its apply id.
fn apply_keyed(s: &Scratch, n: usize, path: &str, key: &str) -> String {
    let reply = block(
        &format!("k{n}a"),
        "file_write",
        &[
            ("path", &format!("/repo/{path}")),
            ("content", &format!("{n}\n")),
        ],
    );
    let options = ApplyOptions {
        reply_key: Some(key.to_owned()),
        ..ApplyOptions::default()
    };
    let applied = apply(&s.root, &s.reply(&reply), &options).expect("apply");
    let git = applied.result.git.expect("a git apply");
    assert!(git.commit.is_some(), "apply {n} made a commit");
    git.apply
}

#[test]
fn finds_the_newest_apply_of_a_key_and_those_on_top_of_the_undo_stack() {
    let s = Scratch::with(&[("a.txt", "a\n")]);
    let ids: Vec<String> = [
        ("b.txt", "one"),
        ("c.txt", "two"),
        ("d.txt", "one"),
        ("e.txt", "one"),
    ]
    .into_iter()
    .enumerate()
    .map(|(n, (path, key))| apply_keyed(&s, n, path, key))
    .collect();

    let one = reply_applies(&s.root, "one", "test").expect("read the log");
    assert_eq!(
        one.newest,
        Some(KeyedApply {
            id: ids[3].clone(),
            commit: Some(s.head()),
        })
    );
    assert_eq!(
        one.on_top,
        [ids[3].clone(), ids[2].clone()],
        "the applies of the key on top, newest first, down to another key's"
    );
    assert!(one.notices.is_empty(), "{:?}", one.notices);

    let two = reply_applies(&s.root, "two", "test").expect("read the log");
    assert_eq!(two.newest.map(|a| a.id), Some(ids[1].clone()));
    assert!(two.on_top.is_empty(), "another key's apply is on top");

    let none = reply_applies(&s.root, "three", "test").expect("read the log");
    assert_eq!(none.newest, None);
    assert!(none.on_top.is_empty());

    // Undone, an apply stays the newest of its key in the log; the undo is on top now.
    undo_to(&s.root, &ids[3], false).expect("undo");
    let undone = reply_applies(&s.root, "one", "test").expect("read the log");
    assert_eq!(undone.newest.map(|a| a.id), Some(ids[3].clone()));
    assert!(undone.on_top.is_empty(), "{:?}", undone.on_top);
}
