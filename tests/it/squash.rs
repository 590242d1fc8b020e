//! `git loaf squash` on real repositories: every way of selecting the run, the dry run,
//! `--limit`, the refusals (one commit, a merge, pushed commits), a dirty working tree left
//! alone, undo and redo, `log` and `show` of a squash, `--push` against a local bare remote
//! (and the lease failing when the remote moved), and notes following `git commit --amend`
//! and `git rebase`.

use std::process::Output;

use crate::scratch::{ENV, Scratch, block, git_in};
use crate::support::git_loaf;

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// An apply writing `path`; returns its id (the block id is derived from it, so unique).
fn apply(s: &Scratch, path: &str, content: &str) -> String {
    let out = s.apply(&block(
        "k1a",
        "file_write",
        &[("path", &format!("/repo/{path}")), ("content", content)],
    ));
    s.assert_exit(&out, 0);
    crate::scratch::trailer(s, "HEAD", "Loaf-Apply")
}

/// An apply whose commit is dated `date` (any form git takes).
fn apply_at(s: &Scratch, path: &str, date: &str) {
    let reply = s.reply(&block(
        "k1a",
        "file_write",
        &[("path", &format!("/repo/{path}")), ("content", "x\n")],
    ));
    let out = git_loaf()
        .current_dir(&s.root)
        .envs(ENV)
        .env("GIT_AUTHOR_DATE", date)
        .env("GIT_COMMITTER_DATE", date)
        .arg("apply")
        .write_stdin(reply)
        .output()
        .expect("git-loaf runs");
    s.assert_exit(&out, 0);
}

fn rev(s: &Scratch, rev: &str) -> String {
    s.git(&["rev-parse", rev]).trim().to_owned()
}

/// Everything under refs/ and the config: a dry run or a refusal changes none of it.
fn refs_and_config(s: &Scratch) -> String {
    let config = std::fs::read_to_string(s.root.join(".git/config")).expect("config");
    s.git(&["for-each-ref"]) + &config
}

#[test]
fn the_default_run_is_the_applies_back_to_a_human_commit() {
    let s = Scratch::with(&[("a.txt", "one\n")]);
    apply(&s, "early.txt", "ai\n");
    s.write("mine.txt", "mine\n");
    s.commit_all("mine");
    let human = s.head();
    let ids: Vec<String> = ["b.txt", "c.txt", "d.txt"]
        .iter()
        .map(|p| apply(&s, p, "ai\n"))
        .collect();
    let tip = s.head();
    let tip_tree = rev(&s, "HEAD^{tree}");

    let out = s.loaf(&["squash"], "");
    s.assert_exit(&out, 0);
    assert!(
        stdout(&out).contains("Squashed 3 commits"),
        "{}",
        stdout(&out)
    );
    assert_eq!(rev(&s, "HEAD^{tree}"), tip_tree, "HEAD's tree exactly");
    assert_eq!(rev(&s, "HEAD^"), human, "on the parent of the oldest apply");
    assert_eq!(
        s.git(&["log", "-1", "--format=%an <%ae>|%cn <%ce>"]).trim(),
        "Ada <ada@example.com>|Ada <ada@example.com>"
    );
    let body = s.git(&["log", "-1", "--format=%B"]);
    let subject = body.lines().next().unwrap_or("");
    assert_eq!(
        subject,
        "AI: squashed 3 applies (2026-01-01): 3 files changed"
    );
    assert!(
        body.contains("\n- AI: file_write b.txt\n- AI: file_write c.txt\n- AI: file_write d.txt\n"),
        "the subjects, oldest first: {body}"
    );
    // git reads the trailers: one Loaf-Squashed per apply, in order, with its commit.
    let squashed = s.git(&[
        "log",
        "-1",
        "--format=%(trailers:key=Loaf-Squashed,valueonly)",
    ]);
    let listed: Vec<&str> = squashed.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(listed.len(), 3, "{squashed}");
    for (line, id) in listed.iter().zip(&ids) {
        assert!(line.starts_with(&format!("{id} ")), "{line} names {id}");
    }
    assert!(
        listed[2].ends_with(&tip),
        "the newest apply's commit: {}",
        listed[2]
    );
    // The applies' results are in the squash's note, not its message (`history_log.rs`).
    let results = s.git(&[
        "log",
        "-1",
        "--format=%(trailers:key=Loaf-Result,valueonly)",
    ]);
    assert_eq!(results.trim(), "", "{body}");
    assert_eq!(s.git(&["rev-list", "--count", "HEAD"]).trim(), "4");
    s.assert_tidy();
}

#[test]
fn containing_selects_by_message_any_of_them_and_empty_takes_every_commit() {
    let s = Scratch::with(&[("a.txt", "one\n")]);
    for (file, message) in [("b", "chore: b"), ("c", "fix: c"), ("d", "feat: d")] {
        s.write(file, "x\n");
        s.commit_all(message);
    }
    let out = s.loaf(
        &["squash", "--containing", "feat:", "--containing", "fix:"],
        "",
    );
    s.assert_exit(&out, 0);
    assert_eq!(
        s.git(&["log", "--format=%s", "-3"]),
        "AI: squashed 2 commits (2026-01-01): 2 files changed\nchore: b\ninitial\n",
        "not applies: said so; the chore commit ends the run"
    );

    // `""` matches every commit, back to the root: the squash becomes the root.
    let tree = rev(&s, "HEAD^{tree}");
    let out = s.loaf(&["squash", "--containing", ""], "");
    s.assert_exit(&out, 0);
    assert_eq!(s.git(&["rev-list", "--count", "HEAD"]).trim(), "1");
    assert_eq!(rev(&s, "HEAD^{tree}"), tree);
    assert!(!s.git(&["cat-file", "-p", "HEAD"]).contains("parent "));
}

#[test]
fn after_hours_and_days_take_only_commits_since_then() {
    let s = Scratch::with(&[("a.txt", "one\n")]);
    for (file, date) in [
        ("b", "2026-01-01T10:00:00Z"),
        ("c", "2026-01-02T10:00:00Z"),
        ("d", "2026-01-03T10:00:00Z"),
    ] {
        apply_at(&s, file, date);
    }
    let out = s.loaf(&["squash", "--dry-run", "--after", "2026-01-02"], "");
    s.assert_exit(&out, 0);
    let text = stdout(&out);
    assert!(text.contains("Would squash 2 commits"), "{text}");
    assert!(text.contains("older than asked"), "{text}");
    assert!(text.contains("(2026-01-02 to 2026-01-03)"), "{text}");
    let out = s.loaf(
        &[
            "squash",
            "--dry-run",
            "--after",
            "2026-01-02T12:00:00+02:00",
        ],
        "",
    );
    assert!(
        stdout(&out).contains("Would squash 2 commits"),
        "10:00Z is after 10:00Z: {}",
        stdout(&out)
    );
    let out = s.loaf(&["squash", "--after", "2026-01-03"], "");
    s.assert_exit(&out, 2);
    assert!(stderr(&out).contains("only 1 commit"), "{}", stderr(&out));

    // --hours and --days count back from now.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs();
    let s = Scratch::with(&[("a.txt", "one\n")]);
    for (file, ago) in [
        ("b", 3 * 86_400),
        ("c", 5 * 3600),
        ("d", 90 * 60),
        ("e", 30 * 60),
    ] {
        apply_at(&s, file, &format!("@{} +0000", now - ago));
    }
    let selected = |args: &[&str]| {
        let mut all = vec!["squash", "--dry-run"];
        all.extend_from_slice(args);
        let out = s.loaf(&all, "");
        s.assert_exit(&out, 0);
        stdout(&out)
    };
    assert!(selected(&["--hours", "2"]).contains("Would squash 2 commits"));
    assert!(selected(&["--hours", "6"]).contains("Would squash 3 commits"));
    assert!(selected(&["--days", "4"]).contains("Would squash 4 commits"));
}

#[test]
fn limit_takes_the_newest_and_says_how_many_more_matched() {
    let s = Scratch::with(&[("a.txt", "one\n")]);
    for file in ["b", "c", "d", "e", "f"] {
        apply(&s, file, "x\n");
    }
    let base = rev(&s, "HEAD~3");
    let out = s.loaf(&["squash", "--limit", "3"], "");
    s.assert_exit(&out, 0);
    assert!(
        stdout(&out).contains("--limit 3: 2 more commits would have matched"),
        "{}",
        stdout(&out)
    );
    assert_eq!(rev(&s, "HEAD^"), base);
    let out = s.loaf(&["squash", "--limit", "1"], "");
    s.assert_exit(&out, 2);
}

#[test]
fn a_dry_run_prints_the_commits_and_message_and_changes_nothing() {
    let s = Scratch::with(&[("a.txt", "one\n")]);
    let ids: Vec<String> = ["b", "c"].iter().map(|f| apply(&s, f, "x\n")).collect();
    s.write("a.txt", "dirty\n");
    let (state, refs) = (s.state(), refs_and_config(&s));
    let out = s.loaf(&["squash", "--dry-run", "-m", "one change"], "");
    s.assert_exit(&out, 0);
    let text = stdout(&out);
    assert!(
        text.starts_with("Would squash 2 commits (dry run, nothing changed):\n"),
        "{text}"
    );
    for id in &ids {
        assert!(
            text.contains(&format!(" {id} AI: file_write ")),
            "{id}: {text}"
        );
    }
    assert!(
        text.contains("Message:\n  one change\n\n  Loaf-Squash: "),
        "{text}"
    );
    assert_eq!(s.state(), state);
    assert_eq!(refs_and_config(&s), refs, "no ref, note or config written");
}

#[test]
fn refuses_one_commit_a_merge_in_the_run_and_pushed_commits() {
    let s = Scratch::with(&[("a.txt", "one\n")]);
    apply(&s, "b", "x\n");
    let refs = refs_and_config(&s);
    let out = s.loaf(&["squash"], "");
    s.assert_exit(&out, 2);
    assert!(stderr(&out).contains("only 1 commit"), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("(\"initial\") is not a git-loaf apply"),
        "{}",
        stderr(&out)
    );
    assert_eq!(refs_and_config(&s), refs);

    // A merge ends the run, even of `--containing ""`.
    s.git(&["switch", "-q", "-c", "side", "HEAD~1"]);
    s.write("side.txt", "side\n");
    s.commit_all("side");
    s.git(&["switch", "-q", "main"]);
    s.git(&["merge", "-q", "--no-ff", "-m", "merge side", "side"]);
    let merge = s.head();
    apply(&s, "c", "x\n");
    let out = s.loaf(&["squash", "--containing", ""], "");
    s.assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("is a merge commit"),
        "{}",
        stderr(&out)
    );
    apply(&s, "d", "x\n");
    s.assert_exit(&s.loaf(&["squash", "--containing", ""], ""), 0);
    assert_eq!(rev(&s, "HEAD^"), merge);

    // Pushed: refused (exit 3) unless --force.
    apply(&s, "e", "x\n");
    s.git(&["update-ref", "refs/remotes/origin/main", "HEAD~1"]);
    apply(&s, "f", "x\n");
    let before = s.head();
    let out = s.loaf(&["squash"], "");
    s.assert_exit(&out, 3);
    assert!(
        stderr(&out).contains("already on origin/main"),
        "{}",
        stderr(&out)
    );
    assert_eq!(s.head(), before);
    s.assert_exit(&s.loaf(&["squash", "--force"], ""), 0);
    assert_ne!(s.head(), before);
}

#[test]
fn a_dirty_tree_is_untouched_and_undo_redo_restore_head_exactly() {
    let s = Scratch::with(&[("a.txt", "1\n2\n3\n"), ("gone.txt", "x\n")]);
    for file in ["b", "c", "d"] {
        apply(&s, file, "ai\n");
    }
    // Partially staged, deleted, untracked.
    s.write("a.txt", "ONE\n2\n3\n");
    s.git(&["add", "a.txt"]);
    s.write("a.txt", "ONE\n2\nTHREE\n");
    std::fs::remove_file(s.root.join("gone.txt")).expect("rm");
    s.write("new.txt", "new\n");
    let before = s.state();
    let tip = s.head();

    let out = s.loaf(&["squash"], "");
    s.assert_exit(&out, 0);
    let squash = s.head();
    assert_ne!(squash, tip);
    assert_eq!(
        s.state().replace(&squash, "HEAD"),
        before.replace(&tip, "HEAD"),
        "only HEAD moved"
    );

    let out = s.loaf(&["undo"], "");
    s.assert_exit(&out, 0);
    assert!(stdout(&out).starts_with("Undid "), "{}", stdout(&out));
    assert!(
        !stdout(&out).contains("uncommitted changes are back"),
        "they never went away: {}",
        stdout(&out)
    );
    assert_eq!(s.state(), before, "HEAD, index and files exactly as before");

    s.assert_exit(&s.loaf(&["redo"], ""), 0);
    assert_eq!(s.head(), squash);
    assert_eq!(
        s.state().replace(&squash, "HEAD"),
        before.replace(&tip, "HEAD")
    );
    s.assert_tidy();
}

#[test]
fn log_and_show_of_a_squash_print_every_apply_in_order() {
    let s = Scratch::with(&[("a.txt", "one\n")]);
    let ids: Vec<String> = ["b", "c", "d"]
        .iter()
        .map(|f| apply(&s, f, "x\n"))
        .collect();
    let out = s.loaf(&["squash"], "");
    s.assert_exit(&out, 0);
    let squash_id = crate::scratch::trailer(&s, "HEAD", "Loaf-Squash");
    assert_eq!(squash_id.len(), 6, "{squash_id}");

    let log = stdout(&s.loaf(&["log"], ""));
    let first = log.lines().next().unwrap_or("");
    assert!(first.contains(&format!(" {squash_id} ")), "{log}");
    assert!(first.contains("✅3 ❌0 AI: squashed 3 applies"), "{log}");

    for rev in ["HEAD", squash_id.as_str()] {
        let out = s.loaf(&["show", rev], "");
        s.assert_exit(&out, 0);
        let text = stdout(&out);
        assert_eq!(text.matches("=== LOAF RESULTS ===").count(), 3, "{text}");
        let at: Vec<usize> = ids
            .iter()
            .map(|id| {
                text.find(&format!("--- apply {id} "))
                    .expect("each apply named")
            })
            .collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "in order: {text}");
    }
    // The squashed applies are still shown by their own ids.
    let out = s.loaf(&["show", &ids[0]], "");
    s.assert_exit(&out, 0);
    assert_eq!(stdout(&out).matches("=== LOAF RESULTS ===").count(), 1);

    // A squash of a squash and two more applies carries all five records.
    apply(&s, "e", "x\n");
    apply(&s, "f", "x\n");
    s.assert_exit(&s.loaf(&["squash"], ""), 0);
    assert!(
        s.git(&["log", "-1", "--format=%s"])
            .starts_with("AI: squashed 5 applies")
    );
    let text = stdout(&s.loaf(&["show"], ""));
    assert_eq!(text.matches("=== LOAF RESULTS ===").count(), 5, "{text}");

    // Without the notes (not fetched), the local report still gives every result.
    s.git(&["update-ref", "-d", "refs/notes/loaf"]);
    let out = s.loaf(&["show", "--json"], "");
    s.assert_exit(&out, 0);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let applies = json["applies"].as_array().expect("applies");
    assert_eq!(applies.len(), 5);
    assert_eq!(applies[0]["apply"], ids[0].as_str());
    assert!(
        applies.iter().all(|a| a["result"]["results"].is_array()),
        "{json}"
    );
}

/// A bare remote next to `s`, with `main` pushed and tracked.
fn with_remote(s: &Scratch) -> std::path::PathBuf {
    let remote = s.sibling("remote.git");
    git_in(
        s.root.parent().expect("parent"),
        &["init", "-q", "--bare", "-b", "main", "remote.git"],
    );
    s.git(&["remote", "add", "origin", &remote.to_string_lossy()]);
    s.git(&["push", "-q", "-u", "origin", "main"]);
    remote
}

#[test]
fn push_force_pushes_the_squash_with_a_lease() {
    let s = Scratch::with(&[("a.txt", "one\n")]);
    let remote = with_remote(&s);
    for file in ["b", "c", "d"] {
        apply(&s, file, "x\n");
    }
    s.git(&["push", "-q"]);
    let out = s.loaf(&["squash"], "");
    s.assert_exit(&out, 3);

    let out = s.loaf(&["squash", "--push"], "");
    s.assert_exit(&out, 0);
    assert!(
        stdout(&out).contains("Pushed to origin refs/heads/main."),
        "{}",
        stdout(&out)
    );
    assert_eq!(git_in(&remote, &["rev-parse", "main"]).trim(), s.head());
    assert_eq!(
        rev(&s, "origin/main"),
        s.head(),
        "the remote-tracking ref follows"
    );
    // Undo would now rewrite published history: refused.
    s.assert_exit(&s.loaf(&["undo"], ""), 3);
}

#[test]
fn push_fails_without_damage_when_the_remote_moved() {
    let s = Scratch::with(&[("a.txt", "one\n")]);
    let remote = with_remote(&s);
    for file in ["b", "c"] {
        apply(&s, file, "x\n");
    }
    s.git(&["push", "-q"]);
    // Someone else pushes meanwhile; we have not fetched.
    let other = s.sibling("other");
    git_in(
        s.root.parent().expect("parent"),
        &["clone", "-q", &remote.to_string_lossy(), "other"],
    );
    std::fs::write(other.join("theirs.txt"), "theirs\n").expect("write");
    git_in(&other, &["add", "-A"]);
    git_in(&other, &["commit", "-q", "-m", "theirs"]);
    git_in(&other, &["push", "-q"]);
    let theirs = git_in(&other, &["rev-parse", "HEAD"]).trim().to_owned();
    let tip = s.head();

    let out = s.loaf(&["squash", "--push"], "");
    s.assert_exit(&out, 1);
    let err = stderr(&out);
    assert!(
        err.contains("origin/main moved since your last fetch"),
        "{err}"
    );
    assert!(err.contains("the remote is untouched"), "{err}");
    assert!(err.contains("git fetch origin"), "{err}");
    assert_eq!(
        git_in(&remote, &["rev-parse", "main"]).trim(),
        theirs,
        "remote untouched"
    );
    let squash = s.head();
    assert_ne!(squash, tip, "the local squash is kept");
    assert_eq!(rev(&s, "HEAD^{tree}"), rev(&s, &format!("{tip}^{{tree}}")));
    // and can be taken back.
    s.assert_exit(&s.loaf(&["undo"], ""), 0);
    assert_eq!(s.head(), tip);

    // --push --force overwrites the remote.
    s.assert_exit(&s.loaf(&["squash", "--push", "--force"], ""), 0);
    assert_eq!(git_in(&remote, &["rev-parse", "main"]).trim(), s.head());
}

#[test]
fn push_without_an_upstream_is_refused_before_anything_changes() {
    let s = Scratch::with(&[("a.txt", "one\n")]);
    apply(&s, "b", "x\n");
    apply(&s, "c", "x\n");
    let refs = refs_and_config(&s);
    let out = s.loaf(&["squash", "--push"], "");
    s.assert_exit(&out, 2);
    assert!(stderr(&out).contains("has no upstream"), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("git branch --set-upstream-to origin/main"),
        "{}",
        stderr(&out)
    );
    assert_eq!(refs_and_config(&s), refs);
}

#[test]
fn notes_follow_amend_and_rebase() {
    let s = Scratch::with(&[("a.txt", "one\n")]);
    // The first apply sets notes.rewriteRef up, and says so once.
    let first = s.apply(&block(
        "k1a",
        "file_write",
        &[("path", "/repo/b"), ("content", "x\n")],
    ));
    s.assert_exit(&first, 0);
    assert!(
        stderr(&first).contains("notes.rewriteRef"),
        "says so: {}",
        stderr(&first)
    );
    apply(&s, "c", "x\n");
    let out = s.loaf(&["squash"], "");
    s.assert_exit(&out, 0);
    assert!(!stderr(&out).contains("notes.rewriteRef"), "only once");
    assert_eq!(
        s.git(&["config", "--get-all", "notes.rewriteRef"]),
        "refs/notes/loaf\n"
    );
    let show = |rev: &str| {
        let out = s.loaf(&["show", rev], "");
        s.assert_exit(&out, 0);
        assert!(
            out.stderr.is_empty(),
            "the full record, not the trailer: {}",
            stderr(&out)
        );
        stdout(&out).matches("=== LOAF RESULTS ===").count()
    };

    let squash = s.head();
    s.git(&[
        "commit",
        "-q",
        "--amend",
        "-m",
        "squashed by hand\n\nLoaf-Squash: 000000",
    ]);
    assert_ne!(s.head(), squash);
    assert_eq!(show("HEAD"), 2, "the amended squash keeps its note");

    apply(&s, "d", "x\n");
    apply(&s, "e", "x\n");
    s.git(&["switch", "-q", "-c", "upstream", "HEAD~3"]);
    s.write("theirs.txt", "theirs\n");
    s.commit_all("theirs");
    s.git(&["switch", "-q", "main"]);
    let before = s.head();
    s.git(&["rebase", "-q", "upstream"]);
    assert_ne!(s.head(), before, "rebased");
    assert_eq!(show("HEAD"), 1);
    assert_eq!(show("HEAD~1"), 1);
    assert_eq!(show("HEAD~2"), 2);
}

/// The models that wrote the folded applies stay named as trailers git reads; an
/// `Assisted-by:` line in a message given with `-m` joins them (issue 38: a lorch step
/// squashed from several turns keeps the model that wrote it).
#[test]
fn a_squash_keeps_the_assisted_by_trailers_of_what_it_folds() {
    let s = Scratch::with(&[("a.txt", "a\n")]);
    for (path, model) in [
        ("b.txt", "model-one"),
        ("c.txt", "model-two"),
        ("d.txt", "model-one"),
    ] {
        let reply = s.reply(&block(
            "k1a",
            "file_write",
            &[("path", &format!("/repo/{path}")), ("content", "x\n")],
        ));
        s.assert_exit(&s.loaf(&["apply", "--model", model], &reply), 0);
    }
    let trailers = |rev: &str| {
        s.git(&[
            "log",
            "-1",
            "--format=%(trailers:key=Assisted-by,valueonly)",
            rev,
        ])
    };
    s.assert_exit(&s.loaf(&["squash"], ""), 0);
    assert_eq!(trailers("HEAD"), "model-one\nmodel-two\n\n");
    s.assert_exit(&s.loaf(&["undo"], ""), 0);
    let out = s.loaf(
        &[
            "squash",
            "-m",
            "Add three files\n\nAssisted-by: lorch builder",
        ],
        "",
    );
    s.assert_exit(&out, 0);
    assert_eq!(trailers("HEAD"), "model-one\nmodel-two\nlorch builder\n\n");
    assert_eq!(s.git(&["log", "-1", "--format=%s"]), "Add three files\n");
}
