//! Code the reply wrote never runs during its own apply (DESIGN §2, issue 22): the git hooks
//! and loaf.yml's hooks run as the user had them before the apply, in every place they run;
//! a reply that changes one commits the change, which takes effect from the next apply.
//!
//! Every hook leaves a trace that says whose version ran ("user" or "reply") where the test
//! can see it whatever the sandbox allows: pre-commit writes a file in the stage (committed,
//! as a formatter's output is), prepare-commit-msg and commit-msg add a line to the message,
//! post-commit writes a file in the user's tree (it runs there, after publish).

use std::ffi::OsStr;
use std::process::Output;

use crate::scratch::{Scratch, block};

/// Writes an executable script at `path` (relative to the root).
fn script(s: &Scratch, path: &str, body: &str) {
    use std::os::unix::fs::PermissionsExt as _;
    let full = s.root.join(path);
    std::fs::create_dir_all(full.parent().expect("a folder")).expect("mkdir");
    std::fs::write(&full, format!("#!/bin/sh\n{body}")).expect("write hook");
    std::fs::set_permissions(&full, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// The four hooks, each marking that `who`'s version ran. pre-commit takes `who` from a
/// sibling it sources, as husky-style wrappers do, so that the sibling's version counts too.
fn hooks(who: &str) -> Vec<(&'static str, String)> {
    vec![
        ("common.sh", format!("who={who}\n")),
        (
            "pre-commit",
            ". \"$(dirname \"$0\")/common.sh\"\nprintf '%s\\n' \"$who\" > \"$PWD/pre-commit-ran\"\n"
                .to_owned(),
        ),
        (
            "prepare-commit-msg",
            format!("printf 'Prepared-by: {who}\\n' >> \"$1\"\n"),
        ),
        ("commit-msg", format!("printf 'Checked-by: {who}\\n' >> \"$1\"\n")),
        (
            "post-commit",
            format!("printf '{who}\\n' > \"$PWD/post-commit-ran\"\n"),
        ),
    ]
}

/// A reply rewriting every file of `folder` with `hooks(who)`, and `a.txt` with `a`.
fn rewriting_hooks(folder: &str, who: &str, a: &str) -> String {
    let mut reply = block(
        "w0a",
        "file_write",
        &[("path", "/repo/a.txt"), ("content", a)],
    );
    for (i, (name, body)) in hooks(who).into_iter().enumerate() {
        let path = format!("/repo/{folder}/{name}");
        let content = format!("#!/bin/sh\n{body}");
        reply.push_str(&block(
            &format!("h{i}b"),
            "file_write",
            &[("path", &path), ("content", &content)],
        ));
    }
    reply
}

fn apply_with(s: &Scratch, env: &[(&str, &OsStr)], reply: &str) -> Output {
    crate::support::git_loaf()
        .current_dir(&s.root)
        .envs(crate::scratch::ENV)
        .envs(env.iter().copied())
        .arg("apply")
        .write_stdin(s.reply(reply))
        .output()
        .expect("git-loaf runs")
}

/// Whose hooks ran for the last apply: pre-commit's committed mark, the message's lines and
/// post-commit's mark in the user's tree.
fn who_ran(s: &Scratch) -> (String, String, String) {
    let pre = s.git(&["show", "HEAD:pre-commit-ran"]).trim().to_owned();
    let message = s.git(&["log", "-1", "--format=%B"]);
    let lines: Vec<&str> = message
        .lines()
        .filter(|l| l.starts_with("Prepared-by:") || l.starts_with("Checked-by:"))
        .collect();
    let post = s
        .read("post-commit-ran")
        .unwrap_or_default()
        .trim()
        .to_owned();
    (pre, lines.join(", "), post)
}

fn run_user_hooks_before_the_replys(env: &[(&str, &OsStr)]) {
    let s = Scratch::with(&[("a.txt", "one\n")]);
    for (name, body) in hooks("user") {
        script(&s, &format!(".githooks/{name}"), &body);
    }
    s.commit_all("hooks");
    s.git(&["config", "core.hooksPath", ".githooks"]);

    let out = apply_with(&s, env, &rewriting_hooks(".githooks", "reply", "two\n"));
    s.assert_exit(&out, 0);
    assert_eq!(
        who_ran(&s),
        (
            "user".to_owned(),
            "Prepared-by: user, Checked-by: user".to_owned(),
            "user".to_owned()
        ),
        "the hooks as the user had them ran, never the reply's: {}",
        s.redact(&out.stdout)
    );
    // The reply's hooks are committed (modes kept) and in the user's tree, for next time.
    assert_eq!(
        s.git(&["show", "HEAD:.githooks/common.sh"]),
        "#!/bin/sh\nwho=reply\n"
    );
    assert!(
        s.git(&["ls-tree", "HEAD", ".githooks/commit-msg"])
            .starts_with("100755"),
        "still executable"
    );
    assert_eq!(
        s.read(".githooks/common.sh").as_deref(),
        Some("#!/bin/sh\nwho=reply\n")
    );

    let out = apply_with(
        &s,
        env,
        &block(
            "n1c",
            "file_write",
            &[("path", "/repo/a.txt"), ("content", "three\n")],
        ),
    );
    s.assert_exit(&out, 0);
    assert_eq!(
        who_ran(&s),
        (
            "reply".to_owned(),
            "Prepared-by: reply, Checked-by: reply".to_owned(),
            "reply".to_owned()
        ),
        "from the next apply on, the committed hooks run"
    );
    s.assert_tidy();
}

#[test]
fn a_reply_rewriting_tracked_hooks_runs_the_users_versions_and_commits_its_own() {
    run_user_hooks_before_the_replys(&[]);
}

#[test]
fn without_namespaces_too_the_users_hooks_run_and_not_the_replys() {
    run_user_hooks_before_the_replys(&[("LOAF_SANDBOX", OsStr::new("off"))]);
}

#[test]
fn hooks_in_the_git_dir_run_from_their_pre_apply_copy() {
    // A hooks folder the reply cannot write, still read before any action: the same rule.
    let s = Scratch::with(&[("a.txt", "one\n")]);
    for (name, body) in hooks("user") {
        script(&s, &format!(".git/hooks/{name}"), &body);
    }
    let out = s.apply(&block(
        "g1a",
        "file_write",
        &[("path", "/repo/a.txt"), ("content", "two\n")],
    ));
    s.assert_exit(&out, 0);
    assert_eq!(
        who_ran(&s),
        (
            "user".to_owned(),
            "Prepared-by: user, Checked-by: user".to_owned(),
            "user".to_owned()
        )
    );
    let common = s.root.join(".git/loaf");
    let left: Vec<_> = std::fs::read_dir(&common)
        .expect("loaf folder")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains("hooks"))
        .collect();
    assert!(left.is_empty(), "the copies are removed: {left:?}");
}

#[test]
fn a_hook_the_reply_creates_never_runs_in_its_own_apply() {
    let s = Scratch::with(&[("a.txt", "one\n")]);
    // An executable helper the reply can turn into a hook by rewriting and renaming it.
    script(&s, ".githooks/helper", "exit 0\n");
    s.commit_all("hooks");
    s.git(&["config", "core.hooksPath", ".githooks"]);
    let mut reply = block(
        "c1a",
        "file_write",
        &[
            ("path", "/repo/.githooks/helper"),
            (
                "content",
                "#!/bin/sh\nprintf 'Checked-by: reply\\n' >> \"$1\"\n",
            ),
        ],
    );
    reply.push_str(&block(
        "c2b",
        "file_move",
        &[
            ("old_path", "/repo/.githooks/helper"),
            ("new_path", "/repo/.githooks/commit-msg"),
        ],
    ));
    let out = s.apply(&reply);
    s.assert_exit(&out, 0);
    let message = s.git(&["log", "-1", "--format=%B"]);
    assert!(!message.contains("Checked-by"), "{message}");
    assert!(
        s.git(&["ls-tree", "HEAD", ".githooks/commit-msg"])
            .starts_with("100755")
    );

    let out = s.apply(&block(
        "c3c",
        "file_write",
        &[("path", "/repo/a.txt"), ("content", "two\n")],
    ));
    s.assert_exit(&out, 0);
    let message = s.git(&["log", "-1", "--format=%B"]);
    assert!(message.contains("Checked-by: reply"), "{message}");
}

#[test]
fn a_reply_adding_loaf_yml_hooks_runs_them_only_once_the_user_accepts_them() {
    let s = Scratch::with(&[("a.txt", "one\n"), ("loaf.yml", "vars: {}\n")]);
    let config = "hooks:\n  before:\n    - run: \"echo reply-before-ran >&2; exit 3\"\n  after:\n    - run: \"echo reply-after-ran >&2; exit 4\"\n";
    let mut reply = block(
        "y1a",
        "file_write",
        &[("path", "/repo/loaf.yml"), ("content", config)],
    );
    reply.push_str(&block(
        "y2b",
        "file_write",
        &[("path", "/repo/a.txt"), ("content", "two\n")],
    ));
    let out = s.apply(&reply);
    s.assert_exit(&out, 0);
    let report = s.redact(&out.stdout);
    // (The report names the waiting hooks: what shows they ran is their output.)
    assert!(
        !report.contains("hook (") && !report.contains("FATAL"),
        "{report}"
    );
    assert_eq!(s.git(&["show", "HEAD:a.txt"]), "two\n");
    assert_eq!(s.git(&["show", "HEAD:loaf.yml"]), config);

    // The next apply still runs under the loaf.yml the user accepted: the reply's hooks
    // wait for the user (DESIGN §2 "Config a reply writes waits for the user").
    let three = block(
        "y3c",
        "file_write",
        &[("path", "/repo/a.txt"), ("content", "three\n")],
    );
    let out = s.apply(&three);
    s.assert_exit(&out, 0);
    let report = s.redact(&out.stdout);
    // (The report names the waiting hooks: what shows they ran is their output.)
    assert!(
        !report.contains("hook (") && !report.contains("FATAL"),
        "{report}"
    );
    assert!(report.contains("git loaf config accept"), "{report}");
    assert_eq!(s.read("a.txt").as_deref(), Some("three\n"));

    // Accepted, its before hook runs (and stops the apply).
    s.assert_exit(&s.loaf(&["config", "accept"], ""), 0);
    let out = s.apply(&three.replace("three", "four"));
    let report = s.redact(&out.stdout);
    assert!(report.contains("reply-before-ran"), "{report}");
    assert_eq!(s.read("a.txt").as_deref(), Some("three\n"));
}

#[test]
fn husky_style_wrappers_run_the_users_hook_scripts_not_the_replys() {
    // husky 9: core.hooksPath = .husky/_ (ignored), whose wrappers run `.husky/<hook>`
    // (tracked, what users edit) through the helper `_/h`.
    let s = Scratch::with(&[("a.txt", "one\n")]);
    s.write(".husky/_/.gitignore", "*\n");
    script(
        &s,
        ".husky/_/h",
        "n=$(basename \"$0\")\nsh -e \"$(dirname \"$(dirname \"$0\")\")/$n\" \"$@\"\n",
    );
    script(&s, ".husky/_/pre-commit", ". \"$(dirname \"$0\")/h\"\n");
    s.write(
        ".husky/pre-commit",
        "printf 'user\\n' > \"$PWD/pre-commit-ran\"\n",
    );
    s.commit_all("husky");
    s.git(&["config", "core.hooksPath", ".husky/_"]);
    let reply = |id: &str, who: &str, a: &str| {
        let mut reply = block(
            &format!("{id}a"),
            "file_write",
            &[("path", "/repo/a.txt"), ("content", a)],
        );
        let hook = format!("printf '{who}\\n' > \"$PWD/pre-commit-ran\"\n");
        reply.push_str(&block(
            &format!("{id}b"),
            "file_write",
            &[("path", "/repo/.husky/pre-commit"), ("content", &hook)],
        ));
        reply
    };
    let out = s.apply(&reply("u1", "reply", "two\n"));
    s.assert_exit(&out, 0);
    assert_eq!(s.git(&["show", "HEAD:pre-commit-ran"]), "user\n");
    let out = s.apply(&reply("u2", "again", "three\n"));
    s.assert_exit(&out, 0);
    assert_eq!(s.git(&["show", "HEAD:pre-commit-ran"]), "reply\n");
}
