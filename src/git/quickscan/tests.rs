//! The fast dirty check against what libgit2's status and the checkpoint decide.

use super::*;
use crate::git::testing::{git, init_repo, write_file};
use git2::Oid;

#[test]
fn clean_only_when_nothing_differs() {
    let dir = init_repo();
    let root = dir.path();
    let write = |p: &str, c: &str| write_file(root, p, c);
    write(".gitignore", "target/\n*.log\n");
    write("a.txt", "a\n");
    write("src/deep/b.rs", "b\n");
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "one"]);
    // Let the clock move past the files' mtimes, then refresh the index (not racy).
    std::thread::sleep(std::time::Duration::from_millis(20));
    git(root, &["update-index", "--really-refresh"]);
    let repo = Repository::open(root).expect("open");
    let clean = || certainly_clean(&repo).expect("scan");
    assert!(clean(), "a fresh checkout is clean");
    write("target/out.bin", "ignored\n");
    write("src/debug.log", "ignored\n");
    assert!(clean(), "ignored files do not count");
    write("src/deep/new.rs", "untracked\n");
    assert!(!clean(), "an untracked file");
    std::fs::remove_file(root.join("src/deep/new.rs")).expect("rm");
    write("newdir/x", "untracked folder\n");
    assert!(!clean(), "an untracked folder");
    std::fs::remove_dir_all(root.join("newdir")).expect("rm");
    assert!(clean());
    write("a.txt", "changed\n");
    assert!(!clean(), "a modified file");
    write("a.txt", "a\n");
    assert!(!clean(), "same content, new stat: the full status decides");
    // What publish does: the file written, then at once its index entry (libgit2 smudges
    // it if racily clean; then its content decides).
    let mut index = repo.index().expect("index");
    index.add_path(Path::new("a.txt")).expect("add");
    index.write().expect("write");
    assert!(clean(), "an entry written right after its file");
    std::fs::remove_file(root.join("src/deep/b.rs")).expect("rm");
    assert!(!clean(), "a deleted file");
}

/// The candidates are every changed tracked file and untracked file, and nothing else;
/// an untracked folder sends the caller to the full status.
#[test]
fn candidates_name_what_may_differ() {
    let dir = init_repo();
    let root = dir.path();
    let write = |p: &str, c: &str| write_file(root, p, c);
    write(".gitignore", "*.log\n");
    write("a.txt", "a\n");
    write("src/b.rs", "b\n");
    write("src/c.rs", "c\n");
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "one"]);
    std::thread::sleep(std::time::Duration::from_millis(20));
    git(root, &["update-index", "--really-refresh"]);
    let repo = Repository::open(root).expect("open");
    let found = || {
        candidates(&repo).expect("scan").map(|mut paths| {
            paths.sort();
            paths
                .into_iter()
                .map(|p| String::from_utf8_lossy(&p).into_owned())
                .collect::<Vec<_>>()
        })
    };
    assert_eq!(found(), Some(vec![]));
    write("src/b.rs", "changed\n");
    std::fs::remove_file(root.join("src/c.rs")).expect("rm");
    write("src/new.rs", "new\n");
    write("src/debug.log", "ignored\n");
    assert_eq!(
        found(),
        Some(vec![
            "src/b.rs".to_owned(),
            "src/c.rs".to_owned(),
            "src/new.rs".to_owned()
        ])
    );
    write("newdir/x", "untracked folder\n");
    assert_eq!(found(), None);
}

/// Entries the stat data cannot decide send the caller to the full status: one outside
/// the sparse checkout (skip-worktree: its absence is no deletion), one added with
/// `git add -N` (intent-to-add: no blob yet), one marked assume-unchanged.
#[test]
fn flagged_entries_defer_to_the_full_status() {
    let dir = init_repo();
    let root = dir.path();
    write_file(root, "a.txt", "a\n");
    write_file(root, "far/b.txt", "b\n");
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "one"]);
    git(root, &["update-index", "--skip-worktree", "far/b.txt"]);
    std::fs::remove_file(root.join("far/b.txt")).expect("rm");
    let repo = Repository::open(root).expect("open");
    assert_eq!(candidates(&repo).expect("scan"), None, "skip-worktree");
    git(root, &["update-index", "--no-skip-worktree", "far/b.txt"]);
    git(root, &["checkout", "--", "far/b.txt"]);
    write_file(root, "new.txt", "new\n");
    git(root, &["add", "-N", "new.txt"]);
    let repo = Repository::open(root).expect("open");
    assert_eq!(candidates(&repo).expect("scan"), None, "intent-to-add");
    git(root, &["rm", "-q", "--cached", "new.txt"]);
    std::fs::remove_file(root.join("new.txt")).expect("rm");
    git(root, &["update-index", "--assume-unchanged", "a.txt"]);
    write_file(root, "a.txt", "changed, said unchanged\n");
    let repo = Repository::open(root).expect("open");
    assert_eq!(candidates(&repo).expect("scan"), None, "assume-unchanged");
}

/// Many files in many folders, looked at by the same threads: each folder's files are
/// read in their own folder.
#[test]
fn files_in_many_folders_are_each_read_where_they_are() {
    let dir = init_repo();
    let root = dir.path();
    for d in 0..12 {
        for f in 0..4 {
            write_file(root, &format!("d{d}/sub/f{f}.txt"), &format!("{d} {f}\n"));
            write_file(root, &format!("d{d}/g{f}.txt"), &format!("{f}\n"));
        }
    }
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "one"]);
    std::thread::sleep(std::time::Duration::from_millis(20));
    git(root, &["update-index", "--really-refresh"]);
    let repo = Repository::open(root).expect("open");
    assert_eq!(candidates(&repo).expect("scan"), Some(vec![]));
    write_file(root, "d7/sub/f2.txt", "changed\n");
    assert_eq!(
        candidates(&repo).expect("scan"),
        Some(vec![b"d7/sub/f2.txt".to_vec()])
    );
}

/// A tracked folder moved away and replaced by a symlink to where it went: its files'
/// stat data is unchanged behind the link, but git sees them deleted (it never follows a
/// symlink inside the tree); so must the scan.
#[test]
fn a_folder_replaced_by_a_symlink_is_not_followed() {
    let dir = init_repo();
    let root = dir.path();
    write_file(root, "d/x.txt", "x\n");
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "one"]);
    std::thread::sleep(std::time::Duration::from_millis(20));
    git(root, &["update-index", "--really-refresh"]);
    let away = tempfile::tempdir().expect("tempdir");
    let moved = away.path().join("d");
    std::fs::rename(root.join("d"), &moved).expect("move the folder away");
    std::os::unix::fs::symlink(&moved, root.join("d")).expect("symlink");
    let repo = Repository::open(root).expect("open");
    assert!(
        !certainly_clean(&repo).expect("scan"),
        "d/x.txt is gone for git"
    );
}

/// Sets the modification time of `path` (the file's ctime becomes now: do it before the
/// index records the file).
/// The index entry of `path` as the index file holds it now.
fn indexed(repo: &Repository, path: &str) -> IndexEntry {
    repo.index()
        .expect("index")
        .get_path(Path::new(path), 0)
        .expect("entry")
}

fn set_mtime(path: &Path, time: std::time::SystemTime) {
    std::fs::File::options()
        .write(true)
        .open(path)
        .and_then(|f| f.set_modified(time))
        .expect("set mtime");
}

/// Git's racily clean rule, made without waiting on the clock: an index entry whose
/// stat data matches the file exactly but whose mtime equals the index file's (the file
/// may have been rewritten, at the same size, in the same tick the index was written)
/// is decided by content. Here the content differs: the scan, and the checkpoint that
/// relies on it, must see the change.
#[test]
fn an_entry_as_new_as_the_index_is_decided_by_content() {
    let dir = init_repo();
    let root = dir.path();
    write_file(root, "a.txt", "aaaa\n");
    write_file(root, "b.txt", "b\n");
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "one"]);
    let tick = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_600_000_000);
    // Rewritten at the same size; the index then records the file's stat data with
    // the content it had before (what a same-tick rewrite leaves behind).
    write_file(root, "a.txt", "bbbb\n");
    set_mtime(&root.join("a.txt"), tick);
    let repo = Repository::open(root).expect("open");
    let before = git2::Oid::hash_object(ObjectType::Blob, b"aaaa\n").expect("hash");
    let mut index = repo.index().expect("index");
    index.add_path(Path::new("a.txt")).expect("add");
    let mut entry = index.get_path(Path::new("a.txt"), 0).expect("entry");
    entry.id = before;
    index.add(&entry).expect("add entry");
    index.write().expect("write index");
    // The index written in that same tick; read as the next command would.
    set_mtime(&repo.path().join("index"), tick);
    drop(index);
    let repo = Repository::open(root).expect("open");
    let entry = indexed(&repo, "a.txt");
    assert_eq!(
        (entry.id, entry.file_size, entry.mtime.seconds()),
        (before, 5, 1_600_000_000),
        "the entry is racily clean, not smudged"
    );
    assert!(!certainly_clean(&repo).expect("scan"));
    assert_eq!(
        candidates(&repo).expect("scan"),
        Some(vec![b"a.txt".to_vec()]),
        "b.txt, newer than the index but unchanged, is not a candidate"
    );
    assert!(crate::tx::checkpoint::is_dirty(&repo).expect("dirty"));
    let checkpoint = crate::tx::checkpoint::take(&repo).expect("checkpoint");
    let work = repo.find_tree(checkpoint.work_tree).expect("tree");
    let blob = work.get_name("a.txt").expect("a.txt").id();
    assert_eq!(
        repo.find_blob(blob).expect("blob").content(),
        b"bbbb\n",
        "the checkpoint records the file as it is"
    );
}

/// A repository holding `files` (and `links`: name, target), committed, its index
/// refreshed once the clock moved past the files: no entry is racily clean.
fn settled_repo(files: &[(&str, &str)], links: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = init_repo();
    let root = dir.path();
    for (path, content) in files {
        write_file(root, path, content);
    }
    for (name, target) in links {
        std::os::unix::fs::symlink(target, root.join(name)).expect("symlink");
    }
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "one"]);
    std::thread::sleep(std::time::Duration::from_millis(20));
    git(root, &["update-index", "--really-refresh"]);
    dir
}

/// The candidates as sorted strings.
fn candidate_names(repo: &Repository) -> Option<Vec<String>> {
    candidates(repo).expect("scan").map(|mut paths| {
        paths.sort();
        paths
            .into_iter()
            .map(|p| String::from_utf8_lossy(&p).into_owned())
            .collect()
    })
}

/// A tracked symlink is compared as a link: its own stat data, and when that cannot
/// tell (racily clean), its target as content — never the file it points to.
#[test]
fn a_tracked_symlink_is_compared_as_a_link() {
    let dir = settled_repo(&[("a.txt", "a\n")], &[("link", "a.txt")]);
    let root = dir.path();
    let repo = Repository::open(root).expect("open");
    assert!(certainly_clean(&repo).expect("scan"), "an unchanged link");
    assert_eq!(candidate_names(&repo), Some(vec![]));
    // The index file made older than every file: each entry is racily clean, decided
    // by its content (a link's target).
    let long_ago = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000_000);
    set_mtime(&repo.path().join("index"), long_ago);
    let repo = Repository::open(root).expect("open");
    assert_eq!(
        candidate_names(&repo),
        Some(vec![]),
        "racily clean, unchanged"
    );
    std::fs::remove_file(root.join("link")).expect("rm");
    std::os::unix::fs::symlink("b.txt", root.join("link")).expect("symlink");
    assert_eq!(candidate_names(&repo), Some(vec!["link".to_owned()]));
}

/// `git update-index --chmod=+x` stages a mode the file on disk does not have: the file
/// differs from its entry, and the checkpoint records it as the disk has it.
#[test]
fn an_executable_bit_staged_but_not_on_disk_is_a_difference() {
    let dir = settled_repo(&[("a.txt", "a\n"), ("b.txt", "b\n")], &[]);
    let root = dir.path();
    git(root, &["update-index", "--chmod=+x", "a.txt"]);
    let repo = Repository::open(root).expect("open");
    assert!(!certainly_clean(&repo).expect("scan"));
    assert_eq!(candidate_names(&repo), Some(vec!["a.txt".to_owned()]));
    let checkpoint = crate::tx::checkpoint::take(&repo).expect("checkpoint");
    let mode = |tree: Oid| {
        let tree = repo.find_tree(tree).expect("tree");
        tree.get_name("a.txt").expect("a.txt").filemode()
    };
    assert_eq!(
        (mode(checkpoint.work_tree), mode(checkpoint.index_tree)),
        (0o100644, 0o100755)
    );
}

/// A file rewritten at the same size and given back its old modification time (what
/// `cp -p`, `tar -x` and `rsync -t` do) matches its entry in everything but its ctime:
/// git sees the change, so must the scan and the checkpoint.
#[test]
fn a_file_rewritten_with_its_old_mtime_is_seen() {
    let dir = settled_repo(&[("a.txt", "a\n"), ("b.txt", "b\n")], &[]);
    let root = dir.path();
    let repo = Repository::open(root).expect("open");
    let entry = indexed(&repo, "a.txt");
    write_file(root, "a.txt", "c\n");
    let old = std::time::UNIX_EPOCH
        + std::time::Duration::new(
            u64::try_from(entry.mtime.seconds()).expect("a recent mtime"),
            entry.mtime.nanoseconds(),
        );
    set_mtime(&root.join("a.txt"), old);
    assert!(!certainly_clean(&repo).expect("scan"));
    assert_eq!(candidate_names(&repo), Some(vec!["a.txt".to_owned()]));
    let checkpoint = crate::tx::checkpoint::take(&repo).expect("checkpoint");
    let work = repo.find_tree(checkpoint.work_tree).expect("tree");
    let blob = work.get_name("a.txt").expect("a.txt").id();
    assert_eq!(repo.find_blob(blob).expect("blob").content(), b"c\n");
}

/// An entry git or libgit2 "smudged" (size 0, so that its stat data cannot pass as
/// clean) is decided by content: clean while the file holds its blob, a candidate when
/// it does not.
#[test]
fn a_smudged_entry_is_decided_by_content() {
    let dir = settled_repo(&[("a.txt", "a\n"), ("b.txt", "b\n")], &[]);
    let root = dir.path();
    let smudge = |id: Option<Oid>| {
        let repo = Repository::open(root).expect("open");
        let mut index = repo.index().expect("index");
        let mut entry = index.get_path(Path::new("a.txt"), 0).expect("entry");
        entry.file_size = 0;
        if let Some(id) = id {
            entry.id = id;
        }
        index.add(&entry).expect("add entry");
        index.write().expect("write index");
        let repo = Repository::open(root).expect("open");
        let entry = indexed(&repo, "a.txt");
        assert_eq!(entry.file_size, 0, "the entry is smudged");
        repo
    };
    let repo = smudge(None);
    assert!(
        certainly_clean(&repo).expect("scan"),
        "the file holds its blob"
    );
    assert_eq!(candidate_names(&repo), Some(vec![]));
    let other = repo.blob(b"other\n").expect("blob");
    let repo = smudge(Some(other));
    assert!(!certainly_clean(&repo).expect("scan"));
    assert_eq!(candidate_names(&repo), Some(vec!["a.txt".to_owned()]));
}

/// A tracked empty file replaced by a folder: the full status decides (it knows which
/// files in the folder to take), and the checkpoint records the folder's files.
#[test]
fn an_empty_file_turned_folder_defers_to_the_full_status() {
    let dir = settled_repo(&[("e", ""), ("b.txt", "b\n")], &[]);
    let root = dir.path();
    std::fs::remove_file(root.join("e")).expect("rm");
    write_file(root, "e/x.txt", "x\n");
    let repo = Repository::open(root).expect("open");
    assert!(!certainly_clean(&repo).expect("scan"));
    assert_eq!(candidate_names(&repo), None);
    let checkpoint = crate::tx::checkpoint::take(&repo).expect("checkpoint");
    let work = repo.find_tree(checkpoint.work_tree).expect("tree");
    let file = work.get_path(Path::new("e/x.txt")).expect("e/x.txt").id();
    assert_eq!(repo.find_blob(file).expect("blob").content(), b"x\n");
}
