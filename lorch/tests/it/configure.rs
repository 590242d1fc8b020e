//! `lorch config` (§8.3, Phase 3): the interactive editor of lorch.json, driven by a scripted
//! user on stdin. Every answer is checked (programs on PATH, paths inside the workspace, the
//! numbers and ids the schema allows) and asked again with the reason; lorch.json is written
//! only on a yes, whole, keeping what the editor does not ask about.

use std::os::unix::fs::PermissionsExt as _;

use serde_json::{Value, json};

use crate::harness::{Ws, config, fake_agent, stderr, stdout};

/// The output with the workspace and the fake agent's path replaced by placeholders.
fn shown(ws: &Ws, text: &str) -> String {
    let real = ws.path().canonicalize().expect("canonical");
    text.replace(&fake_agent(), "AGENT")
        .replace(&real.display().to_string(), "WS")
        .replace(&ws.path().display().to_string(), "WS")
}

fn files_in(ws: &Ws) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(ws.path())
        .expect("dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn config_asks_again_on_each_bad_answer_and_writes_the_good_ones_on_yes() {
    let mut c = config();
    c["agents"]["builder"]["env"] = json!({ "MODEL": "m1" });
    let ws = Ws::new(&c);
    ws.write("docs/SPEC.md", "# Spec\n\n## Status\n");
    let answers = [
        "no-such-program-xyz",             // builder: not on PATH
        "lorch agent reviewer -- python3", // builder: another role's shim
        "python3 'unclosed",               // builder: not words
        "sh -c 'echo hi'",                 // builder: accepted
        "",                                // reviewer: kept
        "",                                // spec maintainer: kept
        "lorch agent builder -- sh",       // orchestration: the builder's shim
        "",                                // orchestration: left unset
        "../SPEC.md",                      // spec_path: outside
        "docs/nope.md",                    // spec_path: absent
        "docs/SPEC.md",                    // accepted
        "0",                               // max_turns: below 1
        "six",                             // not a number
        "6",                               // accepted
        "../T",                            // task id: not an id
        "T-0100",                          // a new task
        "",                                // goal: a new task needs one
        "Greet the user",                  // accepted
        "src/greet.rs ../etc/passwd",      // files: outside
        "src/greet.rs 'docs/a b.md'",      // accepted
        "T-0042",                          // edit the existing task
        "",                                // its goal kept
        "src/x.rs",                        // its files set
        "",                                // no more tasks
        "maybe",                           // confirm: not y/n
        "y",
    ];
    let out = ws.lorch_typing(&["config"], &(answers.join("\n") + "\n"));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        shown(&ws, &stdout(&out)),
        "\
lorch config: WS/lorch.json
  builder command: python3 AGENT
  reviewer command: python3 AGENT
  spec_maintainer command: python3 AGENT
  orchestration command: -
  spec_path: specs/MASTER-SPEC.md
  policy.max_turns: 4
  task T-0042: Implement sections 3.1–3.3 of /specs/MASTER-SPEC.md
    files: -
Enter keeps the value in brackets. Every answer is checked; nothing is written before you confirm.
builder command [python3 AGENT]: no-such-program-xyz
  not accepted: `no-such-program-xyz` is not found (not on PATH, or not executable): install it or give its path. Try again.
builder command [python3 AGENT]: lorch agent reviewer -- python3
  not accepted: `lorch agent reviewer` is not the builder: write `lorch agent builder … -- MODEL COMMAND`. Try again.
builder command [python3 AGENT]: python3 'unclosed
  not accepted: a ' quote is not closed. Try again.
builder command [python3 AGENT]: sh -c 'echo hi'
reviewer command [python3 AGENT]: 
spec_maintainer command [python3 AGENT]: 
orchestration command [-]: lorch agent builder -- sh
  not accepted: `lorch agent builder` is not the orchestration: write `lorch agent orchestration … -- MODEL COMMAND`. Try again.
orchestration command [-]: 
spec_path [specs/MASTER-SPEC.md]: ../SPEC.md
  not accepted: ../SPEC.md: `..` is not allowed in an artifact path: the spec must be inside the workspace. Try again.
spec_path [specs/MASTER-SPEC.md]: docs/nope.md
  not accepted: WS/docs/nope.md does not exist: write the spec there first, or give the path where it is. Try again.
spec_path [specs/MASTER-SPEC.md]: docs/SPEC.md
policy.max_turns [4]: 0
  not accepted: `0` is not a whole number from 1 to 100. Try again.
policy.max_turns [4]: six
  not accepted: `six` is not a whole number from 1 to 100. Try again.
policy.max_turns [4]: 6
task to add or edit, by id (Enter: no more): ../T
  not accepted: `../T` is not a task id: a letter or digit, then letters, digits, `.`, `_` or `-` (e.g. T-0042). Try again.
task to add or edit, by id (Enter: no more): T-0100
  T-0100 goal: 
  not accepted: a task needs a goal: say what it should build. Try again.
  T-0100 goal: Greet the user
  T-0100 files (blank-separated, `-` for none) [-]: src/greet.rs ../etc/passwd
  not accepted: ../etc/passwd: `..` is not allowed in an artifact path: a task's files must be inside the workspace. Try again.
  T-0100 files (blank-separated, `-` for none) [-]: src/greet.rs 'docs/a b.md'
task to add or edit, by id (Enter: no more): T-0042
  T-0042 goal [Implement sections 3.1–3.3 of /specs/MASTER-SPEC.md]: 
  T-0042 files (blank-separated, `-` for none) [-]: src/x.rs
task to add or edit, by id (Enter: no more): 
Changes:
  agents.builder.cmd: python3 AGENT → sh -c 'echo hi'
  spec_path: specs/MASTER-SPEC.md → docs/SPEC.md
  policy.max_turns: 4 → 6
  tasks: added T-0100: Greet the user (files: src/greet.rs 'docs/a b.md')
  task T-0042: Implement sections 3.1–3.3 of /specs/MASTER-SPEC.md (files: -) → Implement sections 3.1–3.3 of /specs/MASTER-SPEC.md (files: src/x.rs)
Write lorch.json? (y/n): maybe
  not accepted: answer y or n. Try again.
Write lorch.json? (y/n): y
Wrote WS/lorch.json.
"
    );
    let written = ws.json("lorch.json");
    assert_eq!(
        written["agents"]["builder"]["cmd"],
        json!(["sh", "-c", "echo hi"])
    );
    // What the editor does not ask about stays as it was.
    assert_eq!(
        written["agents"]["builder"]["env"],
        json!({ "MODEL": "m1" })
    );
    assert_eq!(written["agents"]["reviewer"], c["agents"]["reviewer"]);
    assert_eq!(written["policy"]["retry"], c["policy"]["retry"]);
    assert_eq!(written["spec_path"], "docs/SPEC.md");
    assert_eq!(written["policy"]["max_turns"], 6);
    assert_eq!(
        written["tasks"],
        json!([
            { "id": "T-0042", "goal": "Implement sections 3.1–3.3 of /specs/MASTER-SPEC.md", "files": ["src/x.rs"] },
            { "id": "T-0100", "goal": "Greet the user", "files": ["src/greet.rs", "docs/a b.md"] }
        ])
    );
    let mode = std::fs::metadata(ws.path().join("lorch.json"))
        .expect("meta")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    // Written by rename: no temporary file left beside it.
    assert_eq!(files_in(&ws), ["docs", "lorch.json", "specs"]);
    // lorch reads what it wrote: the new task runs (preflight passes up to its model).
    let out = ws.lorch(&["doctor"], &[]);
    assert!(
        stdout(&out).contains("ok   spec `docs/SPEC.md` (spec_path)"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn config_writes_nothing_when_the_user_says_no_or_the_answers_end() {
    let ws = Ws::new(&config());
    let before = std::fs::read(ws.path().join("lorch.json")).expect("lorch.json");

    let out = ws.lorch_typing(&["config"], "\n\n\n\n\n7\n\nn\n");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = shown(&ws, &stdout(&out));
    assert!(
        text.ends_with(
            "Changes:\n  policy.max_turns: 4 → 7\nWrite lorch.json? (y/n): n\nNot written: WS/lorch.json is as it was.\n"
        ),
        "{text}"
    );
    assert_eq!(
        std::fs::read(ws.path().join("lorch.json")).expect("lorch.json"),
        before
    );

    // The answers end before the confirmation: exit 2, nothing written.
    let out = ws.lorch_typing(&["config"], "\n\n\n\n\n7\n");
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        shown(&ws, &stderr(&out)),
        "lorch config: the answers ended before you confirmed: WS/lorch.json is as it was\n"
    );
    assert_eq!(
        std::fs::read(ws.path().join("lorch.json")).expect("lorch.json"),
        before
    );

    // Every answer Enter: nothing changed, nothing asked.
    let out = ws.lorch_typing(&["config"], "\n\n\n\n\n\n\n");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        shown(&ws, &stdout(&out)).ends_with("No changes: WS/lorch.json is as it was.\n"),
        "{}",
        stdout(&out)
    );
    assert_eq!(
        std::fs::read(ws.path().join("lorch.json")).expect("lorch.json"),
        before
    );
}

#[test]
fn config_without_lorch_json_starts_from_the_defaults_and_creates_it_on_yes() {
    let ws = Ws::new(&Value::Null);
    ws.write("SPEC.md", "# Spec\n");
    let out = ws.lorch_typing(&["config"], "\n\n\n\nSPEC.md\n\n\nn\n");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        shown(&ws, &stdout(&out)).starts_with(
            "lorch config: there is no WS/lorch.json yet; starting from the defaults (written only when you confirm).\n"
        ),
        "{}",
        stdout(&out)
    );
    assert!(!ws.path().join("lorch.json").exists(), "not created on no");

    let out = ws.lorch_typing(&["config"], "\n\n\n\nSPEC.md\n\n\ny\n");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains(
            "Changes:\n  lorch.json created\n  spec_path: specs/MASTER-SPEC.md → SPEC.md\n"
        ),
        "{}",
        stdout(&out)
    );
    let mut expected: Value = serde_json::from_str(&lorch::config::default_text()).expect("JSON");
    expected["spec_path"] = json!("SPEC.md");
    assert_eq!(ws.json("lorch.json"), expected);
}

#[test]
fn config_refuses_to_edit_an_invalid_lorch_json_and_says_what_is_wrong() {
    let mut c = config();
    c["policy"]["max_turns"] = json!(0);
    let ws = Ws::new(&c);
    let before = std::fs::read(ws.path().join("lorch.json")).expect("lorch.json");
    let out = ws.lorch_typing(&["config"], "\n");
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stdout(&out), "");
    let err = shown(&ws, &stderr(&out));
    assert!(
        err.starts_with("lorch config: WS/lorch.json: invalid:\n  at /policy/max_turns: 0 is less than the minimum of 1")
            && err.ends_with("(fix lorch.json by hand, or move it away to start again from the defaults)\n"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(ws.path().join("lorch.json")).expect("lorch.json"),
        before
    );
}
