//! lorch with its real agents (`lorch agent ROLE -- CMD`, the model a canned script): the
//! builder's step is a git-loaf commit in the workspace, the run leaves `git status` clean,
//! and `git loaf log` and `git loaf undo` work on it.

use std::path::Path;
use std::process::Command;

use serde_json::json;

use crate::agent::fake_llm;
use crate::harness::{Ws, stderr, stdout};

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "Ada")
        .env("GIT_AUTHOR_EMAIL", "ada@example.com")
        .env("GIT_COMMITTER_NAME", "Ada")
        .env("GIT_COMMITTER_EMAIL", "ada@example.com")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn loaf(dir: &Path, args: &[&str]) -> std::process::Output {
    assert_cmd::Command::cargo_bin("git-loaf")
        .expect("git-loaf is built")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .expect("git-loaf runs")
}

#[test]
fn a_run_with_real_agents_commits_the_builders_work_through_git_loaf() {
    let replies = tempfile::tempdir().expect("tempdir");
    let reply = |name: &str, text: &str| {
        let path = replies.path().join(name);
        std::fs::write(&path, text).expect("write reply");
        path.display().to_string()
    };
    let builder = reply(
        "builder.md",
        "Here is the module.\n\n#!nesl [@three-char-SHA-256: b1d]\naction = \"file_write\"\npath = \"@ROOT@/src/hello.txt\"\ncontent = \"hello\\n\"\n#!end_b1d\n",
    );
    let reviewer = reply("review.md", "Reads well.\nVERDICT: approved\n");
    let spec = reply(
        "spec.md",
        "STATUS: no_changes_needed\nSUMMARY: nothing to record.\n",
    );
    let lorch = assert_cmd::cargo::cargo_bin("lorch").display().to_string();
    let agent = |role: &str, reply: &str| {
        json!({
            "cmd": [lorch, "agent", role, "--", "sh", fake_llm()],
            "heartbeat_interval_s": 1.0,
            "timeouts_s": {},
            "env": {
                "FAKE_REPLY": reply,
                "GIT_CONFIG_NOSYSTEM": "1",
                "GIT_CONFIG_GLOBAL": "/dev/null",
                "GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.com",
                "GIT_COMMITTER_NAME": "Ada", "GIT_COMMITTER_EMAIL": "ada@example.com"
            }
        })
    };
    let mut config = crate::harness::config();
    config["agents"] = json!({
        "builder": agent("builder", &builder),
        "reviewer": agent("reviewer", &reviewer),
        "spec_maintainer": agent("spec_maintainer", &spec),
    });
    let ws = Ws::new(&config);
    ws.write("SPEC.md", "# Spec\n\n## Status\n\n## Changelog\n");
    let root = ws.path().canonicalize().expect("canonical");
    git(&root, &["init", "-q", "-b", "main"]);
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-q", "-m", "start"]);

    let out = ws.lorch(&["run", "--task", "T-0042"], &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}",
        stdout(&out),
        stderr(&out)
    );
    assert_eq!(
        std::fs::read_to_string(root.join("src/hello.txt")).expect("the builder's file"),
        "hello\n"
    );
    // lorch's records and the agents' files stay out of git: a run leaves nothing untracked
    // that would make `git loaf undo` refuse.
    assert_eq!(git(&root, &["status", "--porcelain"]), "");
    let log = loaf(&root, &["log"]);
    let log = String::from_utf8_lossy(&log.stdout).into_owned();
    assert_eq!(log.lines().count(), 1, "one git-loaf commit: {log}");
    assert!(log.contains("✅1 ❌0"), "{log}");
    assert!(
        git(&root, &["log", "-1", "--format=%B"]).contains("Assisted-by: lorch builder"),
        "the commit names its agent"
    );
    let undo = loaf(&root, &["undo"]);
    assert_eq!(
        undo.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&undo.stderr)
    );
    assert!(
        !root.join("src/hello.txt").exists(),
        "undo takes the step back"
    );
    assert_eq!(git(&root, &["log", "--format=%s"]), "start\n");
}
