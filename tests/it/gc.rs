//! `git loaf gc`: old operation-log entries go, undo and redo of the kept ones still work,
//! git-loaf's loose objects are packed, and nothing the user's refs reach is touched.

use std::collections::BTreeSet;

use git_loaf::ops::gc;
use git_loaf::tx::oplog;
use git_loaf::tx::session::Session;

use crate::scratch::{Scratch, block};

fn write(s: &Scratch, id: &str, path: &str) -> std::process::Output {
    let out = s.apply(&block(
        id,
        "file_write",
        &[("path", &format!("/repo/{path}")), ("content", path)],
    ));
    s.assert_exit(&out, 0);
    out
}

/// The entries' ids and times, newest first.
fn log(s: &Scratch) -> Vec<(String, i64)> {
    let repo = git2::Repository::open(&s.root).expect("open");
    oplog::entries(&repo)
        .expect("entries")
        .into_iter()
        .map(|e| (e.id, e.time))
        .collect()
}

/// The loose object files, as ids.
fn loose(s: &Scratch) -> BTreeSet<String> {
    let objects = s.root.join(".git/objects");
    let mut out = BTreeSet::new();
    for dir in std::fs::read_dir(&objects).expect("objects") {
        let dir = dir.expect("entry").path();
        let name = dir
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        if name.len() != 2 {
            continue;
        }
        for file in std::fs::read_dir(&dir).expect("fan-out folder") {
            let file = file
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .into_owned();
            out.insert(format!("{name}{file}"));
        }
    }
    out
}

/// What the user's refs hold: their commits and everything their tips' trees hold.
fn users(s: &Scratch) -> BTreeSet<String> {
    let mut out: BTreeSet<String> = s
        .git(&["rev-list", "--branches", "--tags", "--remotes", "HEAD"])
        .lines()
        .map(str::to_owned)
        .collect();
    for tip in s
        .git(&[
            "for-each-ref",
            "--format=%(objectname)",
            "refs/heads/",
            "refs/tags/",
        ])
        .lines()
    {
        out.insert(
            s.git(&["rev-parse", &format!("{tip}^{{tree}}")])
                .trim()
                .to_owned(),
        );
        for line in s.git(&["ls-tree", "-r", "-t", tip]).lines() {
            out.extend(line.split_whitespace().nth(2).map(str::to_owned));
        }
    }
    out
}

/// Every object the user's refs reach, history included.
fn reachable(s: &Scratch) -> Vec<String> {
    s.git(&[
        "rev-list",
        "--objects",
        "--branches",
        "--tags",
        "--remotes",
        "HEAD",
    ])
    .lines()
    .map(|l| l.split(' ').next().unwrap_or("").to_owned())
    .collect()
}

#[test]
fn old_entries_go_and_undo_redo_of_the_kept_ones_still_work() {
    let s = Scratch::with(&[("a.txt", "a\n")]);
    write(&s, "w1a", "one.txt");
    write(&s, "w2b", "two.txt");
    // Entries are timed in seconds: the third is surely newer than the first two.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    write(&s, "w3c", "three.txt");
    let before = log(&s);
    assert_eq!(before.len(), 3);
    let newest = before[0].1;
    let head = s.head();

    let session = Session::begin(&s.root, "gc").expect("session");
    let dry = gc::collect(&session, 0, newest, true).expect("dry run");
    assert_eq!((dry.dropped.len(), dry.kept), (2, 1));
    assert_eq!(log(&s), before, "a dry run changes nothing");
    let done = gc::collect(&session, 0, newest, false).expect("gc");
    drop(session);
    assert_eq!(
        done.dropped
            .iter()
            .map(|e| e.id.clone())
            .collect::<Vec<_>>(),
        [before[2].0.clone(), before[1].0.clone()],
        "oldest first"
    );
    assert_eq!(log(&s), before[..1], "the newest is kept");
    assert_eq!(s.head(), head, "the branch did not move");

    let undo = s.loaf(&["undo"], "");
    s.assert_exit(&undo, 0);
    assert_eq!(s.read("three.txt"), None);
    assert_eq!(
        s.read("two.txt").as_deref(),
        Some("two.txt"),
        "not undoable now"
    );
    let again = s.loaf(&["undo"], "");
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("nothing to undo"),
        "the dropped applies are not undoable: {}",
        String::from_utf8_lossy(&again.stderr)
    );
    let redo = s.loaf(&["redo"], "");
    s.assert_exit(&redo, 0);
    assert_eq!(s.read("three.txt").as_deref(), Some("three.txt"));
    s.git(&["fsck", "--strict", "--no-dangling"]);
}

#[test]
fn it_packs_only_what_loaf_refs_reach_and_leaves_the_users_objects_alone() {
    let s = Scratch::with(&[("a.txt", "a\n")]);
    write(&s, "w1a", "one.txt");
    write(&s, "w2b", "two.txt");
    s.loaf(&["undo"], "");
    // A kept commit, whatever its age, stays.
    let head = s.head();
    s.git(&["update-ref", "refs/loaf/abc123", &head]);
    let loose_before = loose(&s);
    let users = users(&s);
    let out = s.loaf(&["gc"], "");
    s.assert_exit(&out, 0);
    let printed = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        printed.starts_with("dropped 0 operation-log entries older than 90 days (3 kept)\npacked "),
        "{printed}"
    );
    let loose_after = loose(&s);
    let packed: BTreeSet<&String> = loose_before.difference(&loose_after).collect();
    assert!(!packed.is_empty(), "something was packed: {printed}");
    assert!(
        packed.iter().all(|o| !users.contains(*o)),
        "nothing the user's refs reach is packed"
    );
    assert!(
        loose_before
            .iter()
            .filter(|o| users.contains(*o))
            .all(|o| loose_after.contains(o)),
        "the user's loose objects stay loose"
    );
    for object in packed.iter().copied().chain(&reachable(&s)) {
        s.git(&["cat-file", "-e", object]);
    }
    assert_eq!(s.git(&["rev-parse", "refs/loaf/abc123"]).trim(), head);
    s.git(&["fsck", "--strict", "--no-dangling"]);
    // The undone apply can still be re-done from the packed objects.
    let redo = s.loaf(&["redo"], "");
    s.assert_exit(&redo, 0);
    assert_eq!(s.read("two.txt").as_deref(), Some("two.txt"));
    // A second gc has nothing loose of git-loaf's left but what the redo wrote.
    let out = s.loaf(&["gc", "--dry-run"], "");
    s.assert_exit(&out, 0);
    let printed = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        printed.starts_with("would drop 0 operation-log entries older than 90 days (4 kept)\n"),
        "{printed}"
    );
}

#[test]
fn a_saved_ref_goes_with_its_forced_undo_and_kept_commits_stay() {
    let s = Scratch::with(&[("a.txt", "a\n")]);
    write(&s, "w1a", "one.txt");
    s.write("a.txt", "edited by the user\n");
    let undo = s.loaf(&["undo", "--force"], "");
    s.assert_exit(&undo, 0);
    let saved = s.git(&["for-each-ref", "--format=%(refname)", "refs/loaf/saved/"]);
    assert_eq!(saved.lines().count(), 1, "the forced undo saved the edit");
    s.git(&["update-ref", "refs/loaf/abc123", "HEAD"]);
    let session = Session::begin(&s.root, "gc").expect("session");
    let far = log(&s)[0].1 + 1000 * 24 * 60 * 60;
    let done = gc::collect(&session, 1, far, false).expect("gc");
    drop(session);
    assert_eq!(done.saved_dropped, [saved.trim().to_owned()]);
    assert_eq!(done.kept, 0);
    assert_eq!(
        s.git(&["for-each-ref", "--format=%(refname)", "refs/loaf/"]),
        "refs/loaf/abc123\n",
        "no log, no saved ref; the kept commit stays"
    );
    assert_eq!(s.read("a.txt").as_deref(), Some("a\n"), "files untouched");
    let undo = s.loaf(&["undo"], "");
    assert!(String::from_utf8_lossy(&undo.stderr).contains("nothing to undo"));
    s.git(&["fsck", "--strict", "--no-dangling"]);
}

#[test]
fn a_gc_section_in_loaf_yml_prunes_by_itself_once_a_day() {
    let s = Scratch::with(&[("a.txt", "a\n")]);
    write(&s, "w1a", "one.txt");
    assert_eq!(
        gc::auto(&s.root).expect("auto"),
        None,
        "no gc section: never"
    );
    assert_eq!(log(&s).len(), 1);
    s.write("loaf.yml", "gc:\n  keep-days: 0\n");
    s.commit_all("config");
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let pruned = gc::auto(&s.root).expect("auto").expect("it ran");
    assert_eq!(pruned.dropped.len(), 1);
    assert!(log(&s).is_empty());
    write(&s, "w2b", "two.txt");
    std::thread::sleep(std::time::Duration::from_millis(1100));
    assert_eq!(gc::auto(&s.root).expect("auto"), None, "not twice a day");
    assert_eq!(log(&s).len(), 1);
}

#[test]
fn an_apply_runs_the_pruning_loaf_yml_asks_for_and_says_so() {
    let s = Scratch::with(&[("a.txt", "a\n")]);
    write(&s, "w1a", "one.txt");
    std::thread::sleep(std::time::Duration::from_millis(1100));
    s.write("loaf.yml", "gc:\n  keep-days: 0\n");
    s.commit_all("config");
    let out = write(&s, "w2b", "two.txt");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("note: pruned") && stderr.contains("loaf.yml gc.keep-days"),
        "{stderr}"
    );
    assert_eq!(
        s.read("two.txt").as_deref(),
        Some("two.txt"),
        "the apply itself is whole"
    );
}

/// While stepped back, the kept uncommitted work lives only in the step-back's log entry:
/// gc keeps the steps of a walk in effect however old, says so, and after git's own
/// `gc --prune=now` step-forward and undo still bring everything back.
#[test]
fn it_keeps_what_a_pending_step_forward_needs_and_says_why() {
    let s = Scratch::with(&[("a.txt", "a\n")]);
    s.write("b.txt", "b\n");
    s.commit_all("second");
    s.write("a.txt", "a\nmine, uncommitted\n");
    s.write("new.txt", "untracked\n");
    let at_tip = s.state();
    s.assert_exit(&s.loaf(&["step-back"], ""), 0);
    s.assert_exit(&s.loaf(&["step-back"], ""), 2); // the first commit: nothing before it
    let stepped = s.state();
    // Entries are timed in seconds: the step is surely older than the limit below.
    std::thread::sleep(std::time::Duration::from_millis(1100));

    let out = s.loaf(&["gc", "--keep-days", "0"], "");
    s.assert_exit(&out, 0);
    let printed = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(printed.contains("kept 1 older entry"), "{printed}");
    assert!(printed.contains("step-back"), "says which: {printed}");
    assert!(printed.contains("step-forward"), "says why: {printed}");
    assert_eq!(log(&s).len(), 1, "the step stays in the log");
    s.git(&["reflog", "expire", "--expire=now", "--all"]);
    s.git(&["gc", "-q", "--prune=now"]);
    assert_eq!(s.state(), stepped);

    let out = s.loaf(&["step-forward"], "");
    s.assert_exit(&out, 0);
    assert_eq!(s.state(), at_tip, "the kept work came back");
    // And undo of the step-forward, then of the step-back, walk it exactly.
    s.assert_exit(&s.loaf(&["undo"], ""), 0);
    assert_eq!(s.state(), stepped);
    s.assert_exit(&s.loaf(&["undo"], ""), 0);
    assert_eq!(s.state(), at_tip);
    s.git(&["fsck", "--strict", "--no-dangling"]);
}

/// A step undone while stepped back waits on the redo stack: gc keeps it and the undo that
/// put it there, so redo and both step-forwards still work after git's own gc.
#[test]
fn it_keeps_an_undone_step_of_the_walk_for_redo() {
    let s = Scratch::with(&[("a.txt", "1\n")]);
    for n in 2..=3 {
        s.write("a.txt", &format!("{n}\n"));
        s.commit_all(&format!("c{n}"));
    }
    s.write("mine.txt", "at the tip\n");
    let at_tip = s.state();
    s.assert_exit(&s.loaf(&["step-back"], ""), 0);
    s.write("mine2.txt", "at c2\n");
    s.assert_exit(&s.loaf(&["step-back"], ""), 0);
    let two_back = s.state();
    s.assert_exit(&s.loaf(&["undo"], ""), 0);
    std::thread::sleep(std::time::Duration::from_millis(1100));

    let out = s.loaf(&["gc", "--keep-days", "0"], "");
    s.assert_exit(&out, 0);
    let printed = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(printed.contains("kept 3 older entries"), "{printed}");
    s.git(&["reflog", "expire", "--expire=now", "--all"]);
    s.git(&["gc", "-q", "--prune=now"]);

    s.assert_exit(&s.loaf(&["redo"], ""), 0);
    assert_eq!(s.state(), two_back);
    s.assert_exit(&s.loaf(&["step-forward"], ""), 0);
    s.assert_exit(&s.loaf(&["step-forward"], ""), 0);
    assert_eq!(s.state(), at_tip);
}

/// The pack files under `.git/objects/pack`, by name.
fn pack_files(s: &Scratch) -> BTreeSet<String> {
    std::fs::read_dir(s.root.join(".git/objects/pack"))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".pack"))
                .collect()
        })
        .unwrap_or_default()
}

/// Each dirty tree of many files is recorded as a pack of its own; gc merges those packs
/// into one (after a dry run that changes nothing), and every recorded state is still
/// there: undo after the merge restores the dirty tree exactly.
#[test]
fn it_merges_the_packs_of_recorded_dirty_trees_into_one() {
    let files: Vec<(String, String)> = (0..80)
        .map(|n| (format!("m{}/f{n}.txt", n % 8), format!("committed {n}\n")))
        .collect();
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_str()))
        .collect();
    let s = Scratch::with(&refs);
    let mut states = Vec::new();
    for round in 0..3 {
        for (path, _) in &files {
            s.write(path, &format!("{path}: the user's edit, round {round}\n"));
        }
        states.push(s.state());
        write(&s, &format!("w{round}a"), &format!("reply{round}.txt"));
    }
    let before = pack_files(&s);
    // One per recorded dirty tree, and the commits' objects made durable together.
    assert!(
        before.len() >= 3,
        "one pack per recorded dirty tree: {before:?}"
    );
    let packs = format!("{} packs git-loaf wrote", before.len());

    let dry = s.loaf(&["gc", "--dry-run"], "");
    s.assert_exit(&dry, 0);
    assert!(
        String::from_utf8_lossy(&dry.stdout).contains(&format!("would merge {packs}")),
        "{}",
        String::from_utf8_lossy(&dry.stdout)
    );
    assert_eq!(pack_files(&s), before, "a dry run changes nothing");

    let out = s.loaf(&["gc"], "");
    s.assert_exit(&out, 0);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&format!("merged {packs}")),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let after = pack_files(&s);
    assert!(
        after.is_disjoint(&before),
        "the old packs are gone: {after:?}"
    );
    assert_eq!(after.len(), 2, "the merged pack and gc's own: {after:?}");
    // A second gc has one recorded pack left: nothing to merge.
    let again = s.loaf(&["gc"], "");
    assert!(!String::from_utf8_lossy(&again.stdout).contains("merged"));
    // Every recorded tree is reachable from the operation log: fsck reads them all.
    s.git(&["fsck", "--strict", "--no-dangling"]);

    // The last apply's dirty tree comes back from the merged pack.
    s.assert_exit(&s.loaf(&["undo"], ""), 0);
    assert_eq!(s.state(), states[2]);
}
