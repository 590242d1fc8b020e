//! Files past `core.bigFileThreshold` (lowered here, so a megabyte is big): undo and redo
//! stream the blob into the file and put back exactly its bytes; conversions (`text=auto`,
//! `eol=crlf`) apply to them as `git checkout` applies them, above the threshold as below;
//! and a blob damaged mid-stream leaves the user's file as it was. See docs/speed.md.

use crate::scratch::{Scratch, block};
use crate::support::git_loaf;

/// About 1.2 MB of numbered lines.
fn big_text(tag: &str) -> String {
    (0..60_000)
        .map(|i| format!("{tag} line {i:06}\n"))
        .collect()
}

/// A repository whose `big.txt` is past a 512 KiB `core.bigFileThreshold`.
fn big_repo() -> Scratch {
    let s = Scratch::empty();
    s.git(&["config", "core.bigFileThreshold", "512k"]);
    s.write("big.txt", &big_text("old"));
    s.commit_all("a big file");
    s
}

fn replace(id: &str, path: &str, old: &str, new: &str) -> String {
    block(
        id,
        "file_replace_text",
        &[
            ("path", &format!("/repo/{path}")),
            ("old_text", old),
            ("new_text", new),
        ],
    )
}

/// `git loaf args` with the debug log, which names each file streamed.
fn loaf_logged(s: &Scratch, args: &[&str]) -> (String, std::process::Output) {
    let out = git_loaf()
        .current_dir(&s.root)
        .envs(crate::scratch::ENV)
        .env("LOAF_LOG", "debug")
        .args(args)
        .output()
        .expect("git-loaf runs");
    (String::from_utf8_lossy(&out.stderr).into_owned(), out)
}

#[test]
fn a_big_file_is_streamed_back_by_undo_and_redo_byte_for_byte() {
    let s = big_repo();
    let before = std::fs::read(s.root.join("big.txt")).expect("read");
    let out = s.apply(&replace("b1g", "big.txt", "old line 030000", "new line"));
    s.assert_exit(&out, 0);
    let after = std::fs::read(s.root.join("big.txt")).expect("read");
    assert_ne!(after, before);
    for (command, bytes) in [("undo", &before), ("redo", &after)] {
        let (log, out) = loaf_logged(&s, &[command]);
        s.assert_exit(&out, 0);
        assert!(log.contains("big.txt: streamed from its object"), "{log}");
        assert!(
            std::fs::read(s.root.join("big.txt")).expect("read") == *bytes,
            "{command} put back its bytes"
        );
    }
    assert_eq!(s.git(&["status", "--porcelain"]), "");
    s.assert_tidy();
}

/// The same file from a pack, as most old versions are: streamed too.
#[test]
fn a_packed_big_file_is_streamed_back_by_undo() {
    let s = big_repo();
    s.git(&["repack", "-a", "-d", "-q"]);
    s.git(&["prune-packed"]);
    let before = std::fs::read(s.root.join("big.txt")).expect("read");
    let out = s.apply(&replace("p4k", "big.txt", "old line 000001", "new line"));
    s.assert_exit(&out, 0);
    let (log, undo) = loaf_logged(&s, &["undo"]);
    s.assert_exit(&undo, 0);
    assert!(log.contains("big.txt: streamed from its object"), "{log}");
    assert!(std::fs::read(s.root.join("big.txt")).expect("read") == before);
    s.assert_tidy();
}

/// `text=auto eol=crlf`: a small and a big file are both checked out with CRLF, as git
/// does whatever the size, after the apply and after its undo.
#[test]
fn conversions_apply_to_big_files_as_git_applies_them() {
    let s = Scratch::empty();
    s.git(&["config", "core.bigFileThreshold", "512k"]);
    s.write(".gitattributes", "*.txt text=auto eol=crlf\n");
    s.write("big.txt", &big_text("old"));
    s.write("small.txt", "old small\nsecond\n");
    s.commit_all("files");
    let out = s.apply(&format!(
        "{}{}",
        replace("c1a", "big.txt", "old line 000002", "new line"),
        replace("c2a", "small.txt", "old small", "new small")
    ));
    s.assert_exit(&out, 0);
    let like_git = |s: &Scratch| {
        for path in ["big.txt", "small.txt"] {
            let ours = std::fs::read(s.root.join(path)).expect("read");
            assert!(ours.windows(2).any(|w| w == b"\r\n"), "{path}: CRLF");
            std::fs::remove_file(s.root.join(path)).expect("rm");
            s.git(&["checkout", "--", path]);
            let theirs = std::fs::read(s.root.join(path)).expect("checked out");
            assert!(ours == theirs, "{path}: what `git checkout` writes");
        }
        assert_eq!(s.git(&["status", "--porcelain"]), "");
    };
    like_git(&s);
    let undo = s.loaf(&["undo"], "");
    s.assert_exit(&undo, 0);
    like_git(&s);
    s.assert_tidy();
}

/// The old blob damaged in the object database (git stored it in a pack: past
/// `core.bigFileThreshold`, `git add` writes a pack): undo stops with an error naming it,
/// and the user's file (the applied version) is untouched, with no half-written copy beside
/// it.
#[test]
fn a_blob_damaged_mid_stream_leaves_the_users_file_untouched() {
    let s = big_repo();
    let old = s.git(&["rev-parse", "HEAD:big.txt"]);
    let old = old.trim();
    let packs = s.root.join(".git/objects/pack");
    let pack = std::fs::read_dir(&packs)
        .expect("git add wrote a pack")
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "pack"))
        .expect("a pack");
    let out = s.apply(&replace("d4m", "big.txt", "old line 030000", "new line"));
    s.assert_exit(&out, 0);
    let applied = std::fs::read(s.root.join("big.txt")).expect("read");
    // The pack holds that one blob: garbage in the middle of its compressed bytes.
    let mut bytes = std::fs::read(&pack).expect("read the pack");
    let middle = bytes.len() / 2;
    bytes[middle..middle + 64].fill(0x55);
    let _ = std::fs::remove_file(&pack);
    std::fs::write(&pack, &bytes).expect("damage");
    let undo = s.loaf(&["undo"], "");
    assert_ne!(undo.status.code(), Some(0), "undo fails");
    let said = String::from_utf8_lossy(&undo.stderr);
    assert!(said.contains(old), "names the object: {said}");
    assert!(
        std::fs::read(s.root.join("big.txt")).expect("read") == applied,
        "the user's file is untouched"
    );
    let left: Vec<_> = std::fs::read_dir(&s.root)
        .expect("ls")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains("loaf-"))
        .collect();
    assert!(left.is_empty(), "no half-written file: {left:?}");
}
