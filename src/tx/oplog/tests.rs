//! Tests of the operation log: appending, reading back, the undo and redo stacks, pruning
//! and a damaged log.

use super::*;
use crate::git::testing::{git, init_repo};

fn entry(id: &str, kind: OpKind, target: Option<&str>) -> OpEntry {
    OpEntry {
        id: id.to_owned(),
        kind,
        target: target.map(str::to_owned),
        time: 0,
        workdir: "/w".to_owned(),
        ref_name: "refs/heads/main".to_owned(),
        summary: format!("op {id}"),
        before: UserState {
            head: None,
            work: "x".to_owned(),
            index: "x".to_owned(),
        },
        after: UserState {
            head: None,
            work: "y".to_owned(),
            index: "y".to_owned(),
        },
        extras: Default::default(),
        reply_key: None,
    }
}

#[test]
fn appended_entries_read_back_newest_first_and_keep_their_objects() {
    let dir = init_repo();
    let root = dir.path();
    std::fs::write(root.join("a"), "a\n").expect("write");
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "one"]);
    let repo = Repository::open(root).expect("open");
    let head = repo.refname_to_id("HEAD").expect("head").to_string();
    let tree = repo
        .find_commit(Oid::from_str(&head).expect("oid"))
        .and_then(|c| c.tree())
        .expect("tree")
        .id()
        .to_string();
    let mut first = entry("a1", OpKind::Apply, None);
    first.after = UserState {
        head: Some(head.clone()),
        work: tree.clone(),
        index: tree,
    };
    append(&repo, &first).expect("append");
    append(&repo, &entry("u1", OpKind::Undo, Some("a1"))).expect("append");
    let all = entries(&repo).expect("entries");
    assert_eq!(
        all.iter().map(|e| e.id.as_str()).collect::<Vec<_>>(),
        ["u1", "a1"]
    );
    assert_eq!(all[1], first);
    assert_eq!(newest_id(&repo).expect("newest").as_deref(), Some("u1"));
    let chain = git(root, &["rev-list", "--first-parent", "--count", OPLOG_REF]);
    assert_eq!(
        chain.trim(),
        "3",
        "two entries and the root: never the user's history"
    );
    // The commit is kept alive by the log even if the branch forgets it.
    let reachable = git(root, &["rev-list", "--all"]);
    assert!(reachable.contains(&head));
    git(root, &["fsck", "--strict"]);
}

#[test]
fn undo_and_redo_walk_the_stacks_and_a_new_apply_clears_redo() {
    let log = |ops: &[OpEntry]| {
        let newest_first: Vec<OpEntry> = ops.iter().rev().cloned().collect();
        let s = stacks(&newest_first, "/w");
        let ids = |v: &[OpEntry]| v.iter().map(|e| e.id.clone()).collect::<Vec<_>>();
        (ids(&s.undoable), ids(&s.redoable))
    };
    let a = entry("a", OpKind::Apply, None);
    let b = entry("b", OpKind::Apply, None);
    let ub = entry("u1", OpKind::Undo, Some("b"));
    let ua = entry("u2", OpKind::Undo, Some("a"));
    let ra = entry("r1", OpKind::Redo, Some("a"));
    let c = entry("c", OpKind::Apply, None);
    assert_eq!(
        log(&[a.clone(), b.clone()]),
        (vec!["a".into(), "b".into()], vec![])
    );
    assert_eq!(
        log(&[a.clone(), b.clone(), ub.clone(), ua.clone()]),
        (vec![], vec!["b".into(), "a".into()])
    );
    assert_eq!(
        log(&[a.clone(), b.clone(), ub.clone(), ua.clone(), ra.clone()]),
        (vec!["a".into()], vec!["b".into()])
    );
    assert_eq!(
        log(&[a, b, ub, ua, ra, c]),
        (vec!["a".into(), "c".into()], vec![])
    );
    let mut elsewhere = entry("z", OpKind::Apply, None);
    elsewhere.workdir = "/other".to_owned();
    assert_eq!(log(&[elsewhere]), (vec![], vec![]), "per working tree");
}

/// The stacks read from the stored nodes, top first, as ids.
fn stored(repo: &Repository, workdir: &str) -> (Vec<String>, Vec<String>) {
    let ids = |walk: StackWalk<'_>| -> Vec<String> { walk.map(|e| e.expect("entry").id).collect() };
    (
        ids(undoable(repo, workdir).expect("undoable")),
        ids(redoable(repo, workdir).expect("redoable")),
    )
}

/// The stacks replayed from the whole log, top first, as ids.
fn replayed(repo: &Repository, workdir: &str) -> (Vec<String>, Vec<String>) {
    let s = stacks(&entries(repo).expect("entries"), workdir);
    let ids = |v: &[OpEntry]| v.iter().rev().map(|e| e.id.clone()).collect::<Vec<_>>();
    (ids(&s.undoable), ids(&s.redoable))
}

#[test]
fn stored_stacks_match_the_replayed_log_after_every_entry() {
    let dir = init_repo();
    let repo = Repository::open(dir.path()).expect("open");
    // Two working trees interleaved; undo and redo of the top, of a deeper entry, and
    // of an id that is on no stack.
    let script: &[(&str, &str, OpKind, Option<&str>)] = &[
        ("/w", "a", OpKind::Apply, None),
        ("/o", "x", OpKind::Apply, None),
        ("/w", "b", OpKind::Apply, None),
        ("/w", "c", OpKind::Squash, None),
        ("/w", "u1", OpKind::Undo, Some("c")),
        ("/o", "u2", OpKind::Undo, Some("x")),
        ("/w", "u3", OpKind::Undo, Some("a")),
        ("/w", "r1", OpKind::Redo, Some("c")),
        ("/w", "u4", OpKind::Undo, Some("nowhere")),
        ("/w", "r2", OpKind::Redo, Some("a")),
        ("/w", "s", OpKind::StepBack, None),
        ("/o", "r3", OpKind::Redo, Some("x")),
        ("/w", "u5", OpKind::Undo, Some("s")),
        ("/w", "u6", OpKind::Undo, Some("a")),
        ("/w", "d", OpKind::UndoTo, Some("b")),
        ("/w", "r4", OpKind::Redo, Some("d")),
    ];
    for (workdir, id, kind, target) in script {
        let mut e = entry(id, *kind, *target);
        e.workdir = (*workdir).to_owned();
        if *id == "r4" {
            // Re-does d's walk: from the state d left to the one it found.
            std::mem::swap(&mut e.before, &mut e.after);
        }
        append(&repo, &e).expect("append");
        for w in ["/w", "/o"] {
            assert_eq!(stored(&repo, w), replayed(&repo, w), "after {id} in {w}");
        }
    }
    assert_eq!(
        stored(&repo, "/w"),
        (vec!["c".into(), "b".into()], vec![]),
        "the redo of the undo --to took it off"
    );
    git(dir.path(), &["fsck", "--strict", "--no-dangling"]);
}

#[test]
fn only_a_redo_that_walks_an_undo_to_back_takes_it_off_the_undo_stack() {
    let dir = init_repo();
    let repo = Repository::open(dir.path()).expect("open");
    append(&repo, &entry("a", OpKind::Apply, None)).expect("append");
    append(&repo, &entry("d", OpKind::UndoTo, Some("a"))).expect("append");
    // A redo going the way d went (as when a gc dropped the undo before it): d stays.
    append(&repo, &entry("r1", OpKind::Redo, Some("d"))).expect("append");
    let expected = (vec!["d".to_owned(), "a".to_owned()], vec![]);
    assert_eq!(stored(&repo, "/w"), expected);
    assert_eq!(replayed(&repo, "/w"), expected);
    // The redo of d's walk: from the state d left back to the one it found.
    let mut back = entry("r2", OpKind::Redo, Some("d"));
    std::mem::swap(&mut back.before, &mut back.after);
    append(&repo, &back).expect("append");
    let expected = (vec!["a".to_owned()], vec![]);
    assert_eq!(stored(&repo, "/w"), expected);
    assert_eq!(replayed(&repo, "/w"), expected);
}

#[test]
fn a_log_without_stacks_is_read_by_replay_and_rewritten_once_by_the_next_append() {
    let dir = init_repo();
    let repo = Repository::open(dir.path()).expect("open");
    for (id, kind, target) in [
        ("a", OpKind::Apply, None),
        ("b", OpKind::Apply, None),
        ("u", OpKind::Undo, Some("b")),
    ] {
        append(&repo, &entry(id, kind, target)).expect("append");
    }
    // As an older git-loaf wrote it: each commit's tree without the stacks.
    let mut tip: Option<Oid> = None;
    let mut all = entries(&repo).expect("entries");
    all.reverse();
    let signature = Signature::now("t", "t@t").expect("signature");
    for e in &all {
        let mut tree = repo.treebuilder(None).expect("tree");
        let blob = repo
            .blob(&serde_json::to_vec(e).expect("json"))
            .expect("blob");
        tree.insert(ENTRY_FILE, blob, 0o100644).expect("insert");
        let tree = repo.find_tree(tree.write().expect("write")).expect("tree");
        let parents: Vec<git2::Commit<'_>> = tip
            .iter()
            .map(|t| repo.find_commit(*t).expect("c"))
            .collect();
        let parents: Vec<&git2::Commit<'_>> = parents.iter().collect();
        tip = Some(
            repo.commit(None, &signature, &signature, "old", &tree, &parents)
                .expect("commit"),
        );
    }
    repo.reference(OPLOG_REF, tip.expect("tip"), true, "old log")
        .expect("ref");
    let expected = (vec!["a".to_owned()], vec!["b".to_owned()]);
    assert_eq!(stored(&repo, "/w"), expected, "replayed");
    append(&repo, &entry("c", OpKind::Apply, None)).expect("append");
    let tip = repo.refname_to_id(OPLOG_REF).expect("tip");
    assert!(stacks::State::at(&repo, tip).expect("state").is_some());
    assert_eq!(
        entries(&repo)
            .expect("entries")
            .iter()
            .map(|e| e.id.as_str())
            .collect::<Vec<_>>(),
        ["c", "u", "b", "a"]
    );
    assert_eq!(stored(&repo, "/w"), (vec!["c".into(), "a".into()], vec![]));
}

#[test]
fn pruning_drops_entries_and_replays_the_rest() {
    let dir = init_repo();
    let repo = Repository::open(dir.path()).expect("open");
    for (id, kind, target, time) in [
        ("a", OpKind::Apply, None, 10),
        ("b", OpKind::Apply, None, 20),
        ("u", OpKind::Undo, Some("a"), 30),
        ("c", OpKind::Apply, None, 40),
    ] {
        let mut e = entry(id, kind, target);
        e.time = time;
        append(&repo, &e).expect("append");
    }
    let dry = prune(&repo, |e| e.time < 25, true).expect("dry run");
    assert_eq!(dry.dropped.len(), 2);
    assert_eq!(
        entries(&repo).expect("entries").len(),
        4,
        "dry run: nothing gone"
    );
    let pruned = prune(&repo, |e| e.time < 25, false).expect("prune");
    assert_eq!(
        pruned
            .dropped
            .iter()
            .map(|e| e.id.as_str())
            .collect::<Vec<_>>(),
        ["a", "b"]
    );
    assert_eq!(pruned.kept, 2);
    // The undo of a dropped apply counts for nothing; c is left to undo.
    assert_eq!(stored(&repo, "/w"), (vec!["c".into()], vec![]));
    assert_eq!(stored(&repo, "/w"), replayed(&repo, "/w"));
    let chain = git(
        dir.path(),
        &["rev-list", "--first-parent", "--count", OPLOG_REF],
    );
    assert_eq!(chain.trim(), "3", "two entries and the root");
    prune(&repo, |_| true, false).expect("prune all");
    assert!(repo.refname_to_id(OPLOG_REF).is_err(), "no log left");
    assert_eq!(stored(&repo, "/w"), (vec![], vec![]));
}

/// An entry prepared on one tip and logged after the log moved (nothing moves it while the
/// lock is held, but a bug must not drop an entry) is written again on the new tip: both
/// entries stay, in the order they were logged, and the stacks count both.
#[test]
fn an_entry_prepared_before_the_log_moved_is_logged_on_the_new_tip() {
    let dir = init_repo();
    let repo = Repository::open(dir.path()).expect("open");
    append(&repo, &entry("a1", OpKind::Apply, None)).expect("append");
    let late = entry("a3", OpKind::Apply, None);
    let prepared = prepare(&repo, &late).expect("prepare");
    append(&repo, &entry("a2", OpKind::Apply, None)).expect("append");
    let logged = record(&repo, &prepared, &late).expect("record");
    assert_ne!(logged, prepared.commit(), "written again");
    let ids: Vec<String> = entries(&repo)
        .expect("entries")
        .into_iter()
        .map(|e| e.id)
        .collect();
    assert_eq!(ids, ["a3", "a2", "a1"]);
    let undoable: Vec<String> = undoable(&repo, "/w")
        .expect("stack")
        .map(|e| e.expect("entry").id)
        .collect();
    assert_eq!(undoable, ["a3", "a2", "a1"]);
}

/// An entry commit's tree names the entry, its stacks and nodes, and the user's trees it
/// keeps alive, with no folder of its own: each entry writes and makes durable only its
/// commit, one tree and its blobs.
#[test]
fn an_entry_writes_no_folder_of_its_own() {
    let dir = crate::git::testing::committed_repo();
    let root = dir.path();
    let repo = Repository::open(root).expect("open");
    let tree = git(root, &["rev-parse", "HEAD^{tree}"]).trim().to_owned();
    let mut applied = entry("a1", OpKind::Apply, None);
    applied.after.work = tree.clone();
    append(&repo, &applied).expect("append");
    let commit = append(&repo, &entry("u1", OpKind::Undo, Some("a1"))).expect("append");
    for commit in [
        commit,
        repo.find_commit(commit)
            .expect("commit")
            .parent_id(0)
            .expect("parent"),
    ] {
        let entry_tree = repo
            .find_commit(commit)
            .and_then(|c| c.tree())
            .expect("tree");
        for item in entry_tree.iter() {
            if item.kind() == Some(git2::ObjectType::Tree) {
                assert_eq!(
                    item.id().to_string(),
                    tree,
                    "{} is the user's tree, not a folder of the entry's",
                    item.name().unwrap_or("?")
                );
            }
        }
    }
    assert_eq!(
        undoable(&repo, "/w").expect("stack").count(),
        0,
        "the stacks read back"
    );
    assert_eq!(redoable(&repo, "/w").expect("stack").count(), 1);
}
