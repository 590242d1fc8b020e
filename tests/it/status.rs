//! `git loaf status`: each thing git-loaf can have in effect is named, with the command that
//! ends it (one test per state); it only reads, exits 0, and has `--json`. The MCP tool
//! answers as the command prints.

use std::process::{Command, Output};

use serde_json::Value;

use crate::scratch::{ENV, Scratch, block};

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `git loaf status`, which must exit 0 and change nothing; its text.
fn status(s: &Scratch) -> String {
    let before = s.state();
    let out = s.loaf(&["status"], "");
    s.assert_exit(&out, 0);
    assert_eq!(s.state(), before, "status changes nothing");
    stdout(&out)
}

/// `git loaf status --json`.
fn status_json(s: &Scratch) -> Value {
    let out = s.loaf(&["status", "--json"], "");
    s.assert_exit(&out, 0);
    serde_json::from_slice(&out.stdout).expect("JSON")
}

fn write(id: &str, path: &str, content: &str) -> String {
    block(id, "file_write", &[("path", path), ("content", content)])
}

#[test]
fn nothing_in_effect_says_so() {
    let s = Scratch::with(&[("a.txt", "one\n")]);
    s.write("a.txt", "my uncommitted edit\n");
    assert_eq!(
        status(&s),
        "Nothing in effect: not stepped back, no turn being recorded, no apply kept, no saved work.\n"
    );
    let json = status_json(&s);
    assert_eq!(json["stepped_back"], Value::Null);
    assert_eq!(json["recording"], serde_json::json!([]));
    assert_eq!(json["saved"], serde_json::json!([]));
}

#[test]
fn stepped_back_says_from_where_and_how_many_steps() {
    let s = Scratch::with(&[("a.txt", "1\n")]);
    for n in 2..=3 {
        s.write("a.txt", &format!("{n}\n"));
        s.commit_all(&format!("c{n}"));
    }
    let tip = s.head();
    s.assert_exit(&s.loaf(&["step-back"], ""), 0);
    s.assert_exit(&s.loaf(&["step-back"], ""), 0);
    let c1 = s.head();
    let text = status(&s);
    assert!(
        text.starts_with(&format!(
            "Stepped back: HEAD at {} initial, 2 steps back from main {}. `git loaf step-forward` goes toward the tip.\n",
            &c1[..7],
            &tip[..7]
        )),
        "{text}"
    );
    let json = status_json(&s);
    assert_eq!(json["stepped_back"]["back"], 2);
    assert_eq!(json["stepped_back"]["branch"], "refs/heads/main");
    assert_eq!(json["stepped_back"]["tip"], tip.as_str());

    // At the tip again: no longer stepped back.
    s.assert_exit(&s.loaf(&["step-forward"], ""), 0);
    s.assert_exit(&s.loaf(&["step-forward"], ""), 0);
    assert!(status(&s).starts_with("Nothing in effect"));
}

#[test]
fn a_turn_being_recorded_names_its_session_agent_and_start() {
    let s = Scratch::with(&[("a.txt", "one\n")]);
    let begun = s.loaf(
        &[
            "record",
            "begin",
            "--session",
            "s-42",
            "--agent",
            "claude-code",
        ],
        "",
    );
    s.assert_exit(&begun, 0);
    let text = status(&s);
    assert!(
        text.starts_with("Recording a turn: session s-42 (claude-code) since 20"),
        "{text}"
    );
    let json = status_json(&s);
    assert_eq!(json["recording"][0]["session"], "s-42");
    assert_eq!(json["recording"][0]["agent"], "claude-code");

    s.assert_exit(&s.loaf(&["record", "commit", "--session", "s-42"], ""), 0);
    assert!(!status(&s).contains("Recording"));
}

#[test]
fn an_apply_kept_aside_is_not_applied_with_take_and_drop() {
    let s = Scratch::with(&[("a.txt", "0\n")]);
    let reply = write("k7m", "/repo/b.txt", "AI");
    let out = s.apply_pausing(&reply, "committed", || {
        s.git(&["commit", "-q", "--allow-empty", "-m", "meanwhile"]);
    });
    s.assert_exit(&out, 3);
    let json = status_json(&s);
    let id = json["kept"][0]["id"]
        .as_str()
        .expect("a kept apply")
        .to_owned();
    let text = status(&s);
    assert!(text.contains(&format!("NOT APPLIED: {id} ")), "{text}");
    assert!(
        text.contains(&format!(
            "`git loaf take {id}` applies it, `git loaf drop {id}` discards it"
        )),
        "{text}"
    );
}

#[test]
fn saved_work_is_named_with_its_restore() {
    let s = Scratch::with(&[("a.txt", "one\n")]);
    s.assert_exit(&s.apply(&write("k1a", "/repo/b.txt", "ai\n")), 0);
    s.write("mine.txt", "mine\n");
    s.assert_exit(&s.loaf(&["undo", "--force"], ""), 0);
    let json = status_json(&s);
    let id = json["saved"][0]["id"]
        .as_str()
        .expect("saved work")
        .to_owned();
    let text = status(&s);
    assert!(
        text.contains(&format!(
            "Saved work {id}, uncommitted work saved by undo --force {id}: `git loaf restore {id}` puts it back.\n  mine.txt\n"
        )),
        "{text}"
    );
}

#[test]
fn an_interrupted_operation_is_named() {
    let s = Scratch::with(&[("a.txt", "1\n")]);
    s.write("a.txt", "2\n");
    s.commit_all("c2");
    let crashed = Command::new(assert_cmd::cargo::cargo_bin("git-loaf"))
        .args(["step-back"])
        .current_dir(&s.root)
        .envs(ENV)
        .env("LOAF_CRASH_AT", "ref")
        .output()
        .expect("runs");
    assert!(!crashed.status.success(), "aborted after its commit point");
    // Read without the state helper: the crash left git's index.lock behind.
    let out = s.loaf(&["status"], "");
    s.assert_exit(&out, 0);
    let text = stdout(&out);
    assert!(
        text.contains("Interrupted: an operation stopped before it finished ("),
        "{text}"
    );
    assert!(
        text.contains(
            "the next git-loaf command that changes anything finishes it or rolls it back"
        ),
        "{text}"
    );
    // The next operation finishes it (then undoes the step); nothing is interrupted now.
    s.assert_exit(&s.loaf(&["undo"], ""), 0);
    assert!(status(&s).starts_with("Nothing in effect"));
}

#[test]
fn a_loaf_yml_change_that_waits_is_named_with_accept() {
    let s = Scratch::with(&[
        ("loaf.yml", "allowed-actions: [defaults]\n"),
        ("a.txt", "a\n"),
    ]);
    let widen = write(
        "c1a",
        "/repo/loaf.yml",
        "allowed-actions: [defaults, exec]\n",
    );
    s.assert_exit(&s.apply(&widen), 0);
    let text = status(&s);
    assert!(
        text.contains("A loaf.yml change waits for you: it widens what code may do ("),
        "{text}"
    );
    assert!(
        text.contains("`git loaf config accept` accepts it"),
        "{text}"
    );
    assert!(
        !status_json(&s)["config_waits"]
            .as_array()
            .expect("a list")
            .is_empty()
    );
    s.assert_exit(&s.loaf(&["config", "accept"], ""), 0);
    assert!(status(&s).starts_with("Nothing in effect"));
}
