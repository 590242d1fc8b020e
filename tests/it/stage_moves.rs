//! Publishing moves the stage's files instead of writing new ones (the user's old file takes
//! their place in the stage), and undo moves them back: checked through what the files'
//! inodes show, with the stage's files always what its HEAD says and a process that holds a
//! user's old file open never seeing it change.

use std::io::{Read as _, Seek as _};
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use crate::crash::spawn_apply;
use crate::scratch::{Scratch, block, git_cmd};

fn stage(s: &Scratch) -> PathBuf {
    s.root.join(".git/loaf/stage")
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .mode()
}

fn chmod(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

fn ino(path: &Path) -> u64 {
    std::fs::symlink_metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .ino()
}

/// The tree the stage's files make (ignored files left out), next to its HEAD's tree.
fn stage_tree_and_head(s: &Scratch) -> (String, String) {
    let index = s.sibling("stage-check-index");
    let _ = std::fs::remove_file(&index);
    let run = |args: &[&str]| {
        let out = git_cmd(&stage(s), args)
            .env("GIT_INDEX_FILE", &index)
            .output()
            .expect("git runs");
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    run(&["add", "-A"]);
    (run(&["write-tree"]), run(&["rev-parse", "HEAD^{tree}"]))
}

/// git sees the user's tree clean: every file and index entry as the commit has it.
fn assert_clean(s: &Scratch) {
    assert_eq!(
        s.git(&["status", "--porcelain", "--untracked-files=all"]),
        ""
    );
}

fn assert_stage_is_its_head(s: &Scratch, when: &str) {
    let (files, head) = stage_tree_and_head(s);
    assert_eq!(files, head, "{when}: the stage's files are its HEAD's tree");
}

fn write(id: &str, path: &str, content: &str) -> String {
    block(id, "file_write", &[("path", path), ("content", content)])
}

/// Blocks writing 40 new files under `folder`: publish moves files from the stage only when
/// there are enough of them to pay for its bookkeeping.
fn many(folder: &str) -> String {
    (0..40)
        .map(|i| {
            write(
                &format!("{}{i:02}", &folder[..1]),
                &format!("/repo/{folder}/f{i}.txt"),
                &format!("{folder} {i}\n"),
            )
        })
        .collect()
}

#[test]
fn an_apply_moves_the_stages_files_in_and_undo_and_redo_move_them_back_and_forth() {
    let s = Scratch::with(&[
        ("a.txt", "a one\n"),
        ("b.txt", "b one\n"),
        ("keep.txt", "kept\n"),
    ]);
    s.write("run.sh", "#!/bin/sh\necho one\n");
    chmod(&s.root.join("run.sh"), 0o755);
    s.commit_all("an executable");
    // The first apply creates the stage.
    s.assert_exit(
        &s.apply(&write("s1a", "/repo/keep.txt", "kept, twice\n")),
        0,
    );
    let old_a = ino(&s.root.join("a.txt"));
    let reply = [
        write("m1a", "/repo/a.txt", "a two\n"),
        write("m2b", "/repo/sub/new.txt", "new\n"),
        block("m3c", "file_delete", &[("path", "/repo/b.txt")]),
        write("m4d", "/repo/run.sh", "#!/bin/sh\necho two\n"),
        many("moved"),
    ]
    .concat();
    s.assert_exit(&s.apply(&reply), 0);
    assert_eq!(s.read("a.txt").as_deref(), Some("a two\n"));
    assert_eq!(s.read("sub/new.txt").as_deref(), Some("new\n"));
    assert_eq!(s.read("b.txt"), None);
    assert_eq!(mode(&s.root.join("run.sh")) & 0o111, 0o111, "executable");
    assert_clean(&s);
    // The user's old a.txt is in the stage now (moved, not copied), with its old content.
    assert_eq!(ino(&stage(&s).join("a.txt")), old_a);
    assert_eq!(
        std::fs::read_to_string(stage(&s).join("a.txt"))
            .ok()
            .as_deref(),
        Some("a one\n")
    );
    assert!(
        !stage(&s).join("sub").exists(),
        "the new file moved out, with its folder"
    );
    assert_stage_is_its_head(&s, "after the apply");
    let applied = s.state();

    s.assert_exit(&s.loaf(&["undo"], ""), 0);
    assert_eq!(s.read("a.txt").as_deref(), Some("a one\n"));
    assert_eq!(
        ino(&s.root.join("a.txt")),
        old_a,
        "the user's own file is back"
    );
    assert_eq!(s.read("b.txt").as_deref(), Some("b one\n"));
    assert_eq!(s.read("sub/new.txt"), None);
    assert_eq!(s.read("run.sh").as_deref(), Some("#!/bin/sh\necho one\n"));
    assert_eq!(mode(&s.root.join("run.sh")) & 0o111, 0o111, "executable");
    assert_clean(&s);
    assert_stage_is_its_head(&s, "after the undo");

    s.assert_exit(&s.loaf(&["redo"], ""), 0);
    assert_eq!(s.state(), applied);
    assert_eq!(ino(&stage(&s).join("a.txt")), old_a);
    assert_stage_is_its_head(&s, "after the redo");
    s.assert_tidy();
}

/// a.txt and b.txt, and a first apply (which creates the stage).
fn with_a_stage() -> Scratch {
    let s = Scratch::with(&[("a.txt", "a one\n"), ("b.txt", "b one\n")]);
    s.assert_exit(&s.apply(&write("s1a", "/repo/b.txt", "b two\n")), 0);
    s
}

#[test]
fn a_process_holding_the_users_old_file_never_sees_the_stage_write_it() {
    let s = with_a_stage();
    let mut held = std::fs::File::open(s.root.join("a.txt")).expect("open");
    let old_a = ino(&s.root.join("a.txt"));
    let reply = write("h1a", "/repo/a.txt", "a two\n") + &many("held");
    s.assert_exit(&s.apply(&reply), 0);
    assert_eq!(ino(&stage(&s).join("a.txt")), old_a);
    // The next apply brings the stage to the new HEAD: a.txt there is the user's old file,
    // which it deletes and writes anew rather than rewriting in place.
    s.assert_exit(&s.apply(&write("h2b", "/repo/b.txt", "b three\n")), 0);
    assert_ne!(ino(&stage(&s).join("a.txt")), old_a);
    let mut seen = String::new();
    held.rewind().expect("rewind");
    held.read_to_string(&mut seen).expect("read");
    assert_eq!(seen, "a one\n", "the open file kept its content");
    assert_eq!(s.read("a.txt").as_deref(), Some("a two\n"));
    assert_stage_is_its_head(&s, "after the second apply");
    s.assert_tidy();
}

#[test]
fn a_stage_file_that_is_not_what_the_commit_holds_is_written_not_moved() {
    let s = with_a_stage();
    let reply = [
        write("t1a", "/repo/a.txt", "a two\n"),
        write("t2b", "/repo/b.txt", "b three\n"),
        many("tampered"),
    ]
    .concat();
    let tampered = stage(&s).join("a.txt");
    let out = s.apply_pausing(&reply, "committed", || {
        std::fs::write(&tampered, "not what was committed\n").expect("write");
    });
    s.assert_exit(&out, 0);
    assert_eq!(s.read("a.txt").as_deref(), Some("a two\n"));
    assert_eq!(s.read("b.txt").as_deref(), Some("b three\n"));
    assert_clean(&s);
    assert_eq!(
        std::fs::read_to_string(&tampered).ok().as_deref(),
        Some("not what was committed\n"),
        "left in the stage"
    );
    // The next apply puts the stage right.
    s.assert_exit(&s.apply(&write("t3b", "/repo/b.txt", "b four\n")), 0);
    assert_stage_is_its_head(&s, "after the next apply");
    s.assert_tidy();
}

#[test]
fn a_crash_while_files_move_is_finished_and_the_stage_put_right() {
    let s = Scratch::with(&[("a.txt", "a one\n"), ("b.txt", "b one\n"), ("c.txt", "c\n")]);
    s.assert_exit(&s.apply(&write("s1a", "/repo/c.txt", "c two\n")), 0);
    let reply = [
        write("k1a", "/repo/a.txt", "a two\n"),
        write("k2b", "/repo/b.txt", "b two\n"),
        many("killed"),
    ]
    .concat();
    let out = spawn_apply(&s, &s.reply(&reply), &[("LOAF_CRASH_AT", "checkout")])
        .wait()
        .expect("git-loaf runs");
    assert!(!out.success(), "it crashed");
    // The next command finishes the publish; the next apply finds the stage as it must.
    s.assert_exit(
        &s.apply(&block("k0r", "file_read", &[("path", "/repo/a.txt")])),
        0,
    );
    assert_eq!(s.read("a.txt").as_deref(), Some("a two\n"));
    assert_eq!(s.read("b.txt").as_deref(), Some("b two\n"));
    assert_clean(&s);
    s.assert_exit(&s.apply(&write("k3c", "/repo/c.txt", "c three\n")), 0);
    assert_stage_is_its_head(&s, "after the next apply");
    assert_eq!(s.read("a.txt").as_deref(), Some("a two\n"));
    s.assert_exit(&s.loaf(&["undo"], ""), 0);
    s.assert_exit(&s.loaf(&["undo"], ""), 0);
    assert_eq!(s.read("a.txt").as_deref(), Some("a one\n"));
    assert_eq!(s.read("b.txt").as_deref(), Some("b one\n"));
    s.assert_tidy();
}

/// Files a conversion applies to (here CRLF line ends in one folder) are written as git would
/// check them out, the others moved; the stage's HEAD says which it holds, and undo brings
/// every file back as it was.
#[test]
fn converted_files_are_written_and_the_rest_moved_then_undone() {
    let s = Scratch::with(&[
        ("crlf/.gitattributes", "*.txt text eol=crlf\n"),
        // As git checks it out (committed with LF).
        ("crlf/c.txt", "c one\r\n"),
        ("a.txt", "a one\n"),
    ]);
    s.assert_exit(&s.apply(&write("s1a", "/repo/a.txt", "a two\n")), 0);
    let before = s.state();
    let old_a = ino(&s.root.join("a.txt"));
    let reply = [
        write("c1a", "/repo/a.txt", "a three\n"),
        write("c2c", "/repo/crlf/c.txt", "c two\nline\n"),
        many("crlf"),
        many("plain"),
    ]
    .concat();
    s.assert_exit(&s.apply(&reply), 0);
    assert_clean(&s);
    assert_eq!(ino(&stage(&s).join("a.txt")), old_a, "moved");
    assert_eq!(
        std::fs::read(s.root.join("crlf/c.txt")).ok().as_deref(),
        Some(&b"c two\r\nline\r\n"[..]),
        "checked out with CRLF, as git would"
    );
    assert_eq!(
        std::fs::read(s.root.join("crlf/f3.txt")).ok().as_deref(),
        Some(&b"crlf 3\r\n"[..])
    );
    assert_stage_is_its_head(&s, "after the apply");
    s.assert_exit(&s.loaf(&["undo"], ""), 0);
    assert_eq!(s.state(), before);
    assert_eq!(ino(&s.root.join("a.txt")), old_a, "moved back");
    assert_stage_is_its_head(&s, "after the undo");
    s.assert_exit(&s.apply(&write("s2a", "/repo/a.txt", "a four\n")), 0);
    assert_stage_is_its_head(&s, "after the next apply");
    s.assert_tidy();
}

const WITH_EXEC: (&str, &str) = (
    "loaf.yml",
    "allowed-actions: [file_write, file_delete, exec]\n",
);

fn exec(id: &str, code: &str) -> String {
    block(id, "exec", &[("lang", "bash"), ("code", code)])
}

/// A file the repository tracks though `.gitignore` matches it stays tracked when code runs
/// after a reset that wrote the stage's files without its index.
#[test]
fn a_tracked_ignored_file_survives_a_run_of_code() {
    let s = Scratch::with(&[WITH_EXEC, (".gitignore", "*.log\n"), ("a.txt", "a\n")]);
    s.assert_exit(&s.apply(&write("i1b", "/repo/b.txt", "b\n")), 0);
    s.write("keep.log", "precious\n");
    s.git(&["add", "-f", "keep.log"]);
    s.git(&["commit", "-q", "-m", "forced"]);
    let reply = write("i2c", "/repo/c.txt", "c\n") + &exec("i3e", "true");
    s.assert_exit(&s.apply(&reply), 0);
    assert_eq!(s.read("keep.log").as_deref(), Some("precious\n"));
    assert_eq!(
        s.git(&["show", "--name-status", "--format=", "HEAD"]),
        "A\tc.txt\n"
    );
    assert_clean(&s);
}

/// A path recorded as moved under a folder that is a symlink in the stage (another worktree's
/// state, or a link out of the repository) is never deleted through the link.
#[test]
fn a_recorded_path_under_a_symlinked_folder_is_not_followed() {
    let s = Scratch::with(&[WITH_EXEC, ("a.txt", "a\n")]);
    let outside = s.sibling("outside");
    std::fs::create_dir_all(&outside).expect("mkdir");
    std::fs::write(outside.join("g0.txt"), "not the repository's\n").expect("write");
    std::os::unix::fs::symlink(&outside, s.root.join("docs")).expect("symlink");
    s.commit_all("a link out");
    s.assert_exit(&s.apply(&write("l1a", "/repo/a.txt", "a two\n")), 0);
    assert!(stage(&s).join("docs").is_symlink());
    std::fs::write(s.root.join(".git/loaf/stage-moved"), "docs/g0.txt\0").expect("record");
    let reply = write("l2a", "/repo/a.txt", "a three\n") + &exec("l3e", "true");
    s.assert_exit(&s.apply(&reply), 0);
    assert_eq!(
        std::fs::read_to_string(outside.join("g0.txt"))
            .ok()
            .as_deref(),
        Some("not the repository's\n")
    );
    assert_clean(&s);
    s.assert_tidy();
}

/// Files the reply's code created in the stage with odd permissions arrive as files created
/// by git would: the umask's permissions, no set-user-id bit.
#[test]
fn new_files_moved_out_get_the_permissions_of_a_new_file() {
    let s = Scratch::with(&[WITH_EXEC, ("a.txt", "a\n")]);
    s.assert_exit(&s.apply(&write("p1a", "/repo/a.txt", "a two\n")), 0);
    let code = "mkdir n && for i in $(seq 40); do echo $i > n/f$i.txt; chmod 600 n/f$i.txt; done \
                && printf '#!/bin/sh\\n' > n/run.sh && chmod 4755 n/run.sh \
                && echo ro > n/ro.txt && chmod 444 n/ro.txt";
    s.assert_exit(&s.apply(&exec("p2e", code)), 0);
    let status = std::fs::read_to_string("/proc/self/status").expect("status");
    let umask = status
        .lines()
        .find_map(|l| l.strip_prefix("Umask:"))
        .and_then(|m| u32::from_str_radix(m.trim(), 8).ok())
        .expect("umask");
    assert_eq!(mode(&s.root.join("n/f7.txt")) & 0o7777, 0o666 & !umask);
    assert_eq!(mode(&s.root.join("n/ro.txt")) & 0o7777, 0o666 & !umask);
    assert_eq!(mode(&s.root.join("n/run.sh")) & 0o7777, 0o777 & !umask);
    assert_clean(&s);
}

/// A change of the executable bit alone reaches the user's file, and undo takes it back.
#[test]
fn a_change_of_mode_alone_is_published_and_undone() {
    let s = Scratch::with(&[WITH_EXEC, ("run.sh", "#!/bin/sh\n")]);
    s.assert_exit(&s.apply(&exec("x1e", "chmod +x run.sh")), 0);
    assert_ne!(mode(&s.root.join("run.sh")) & 0o111, 0, "executable");
    assert_clean(&s);
    s.assert_exit(&s.loaf(&["undo"], ""), 0);
    assert_eq!(mode(&s.root.join("run.sh")) & 0o111, 0, "not executable");
    assert_clean(&s);
}

/// A file moved into the user's tree, either way, has just been written as far as tools that
/// compare times are concerned.
#[test]
fn moved_files_get_the_time_they_arrive() {
    let s = with_a_stage();
    let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000_000);
    std::fs::File::options()
        .write(true)
        .open(s.root.join("a.txt"))
        .and_then(|f| f.set_modified(old))
        .expect("an old time");
    let mtime = |p: &str| {
        std::fs::metadata(s.root.join(p))
            .and_then(|m| m.modified())
            .expect("mtime")
    };
    let reply = write("t1a", "/repo/a.txt", "a two\n") + &many("times");
    s.assert_exit(&s.apply(&reply), 0);
    let before_undo = std::time::SystemTime::now() - std::time::Duration::from_secs(2);
    s.assert_exit(&s.loaf(&["undo"], ""), 0);
    assert_eq!(s.read("a.txt").as_deref(), Some("a one\n"));
    assert!(mtime("a.txt") >= before_undo, "not its old time");
}

/// A stage file with extended attributes (set here while the apply is paused, as code the
/// reply ran could) is written for the user, not moved with them.
#[test]
fn a_stage_file_with_extended_attributes_is_written_not_moved() {
    let s = with_a_stage();
    let reply = write("x1a", "/repo/a.txt", "a two\n") + &many("xattr");
    let marked = stage(&s).join("a.txt");
    let out = s.apply_pausing(&reply, "committed", || {
        rustix::fs::lsetxattr(&marked, "user.loaf", b"1", rustix::fs::XattrFlags::empty())
            .expect("extended attributes on this filesystem");
    });
    s.assert_exit(&out, 0);
    assert_eq!(s.read("a.txt").as_deref(), Some("a two\n"));
    assert_eq!(
        rustix::fs::llistxattr_query(s.root.join("a.txt")).expect("list"),
        0,
        "no attribute reached the user's file"
    );
    assert_clean(&s);
}
