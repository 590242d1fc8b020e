//! `lorch agent --sandbox` (§13): the model command runs in git-loaf's namespace sandbox,
//! where it may write the workspace and nothing else (not the user's other files, not the
//! repository's git dir), and an agent that cannot have the sandbox refuses to start.

use std::path::Path;

use serde_json::json;

use crate::agent::{Agent, Workspace, command};

/// A model that tries to write inside the workspace, outside it (`$OUTSIDE`) and into the
/// repository's hooks, then approves, saying what it managed.
const MODEL: &str = r#"cat > /dev/null
try() { if (echo "$2" > "$1") 2>/dev/null; then echo written; else echo refused; fi; }
inside=$(try "$LORCH_WORKSPACE/inside.txt" inside)
outside=$(try "$OUTSIDE" outside)
hook=$(try "$LORCH_WORKSPACE/.git/hooks/pre-commit" 'exit 1')
printf '```json\n{"status": "approved", "summary": "inside=%s outside=%s hook=%s"}\n```\n' "$inside" "$outside" "$hook"
"#;

fn review(ws: &Workspace, flags: &[&str], outside: &Path) -> String {
    let outside = outside.display().to_string();
    let reply = ws.scratch("unused.md");
    // The script as an argument: the sandbox's /tmp, where the test's scratch files are,
    // is a private one.
    let mut agent = Agent::start_cmd(
        ws,
        "reviewer",
        flags,
        &["sh", "-c", MODEL],
        &reply,
        &[("OUTSIDE", &outside)],
    );
    agent.send(&command(
        "reviewer",
        "review",
        "c-1",
        &format!("ik-sandbox-{}-0001", flags.len()),
        json!({}),
    ));
    let answer = agent.answer();
    let _ = agent.finish();
    assert_eq!(answer[0]["event"], "review.completed", "{answer:#?}");
    let review = ws.read("reviews/T-0042.json");
    let review: serde_json::Value = serde_json::from_str(&review).expect("JSON");
    review["summary"].as_str().unwrap_or("").to_owned()
}

/// A folder outside the workspace: the test's target folder (outside /tmp, which the
/// sandbox replaces by a private one, unless the clone itself lies under /tmp).
fn elsewhere() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tempdir")
}

#[test]
fn a_sandboxed_model_writes_the_workspace_and_nothing_else() {
    let ws = Workspace::with(&[("a.txt", "a\n")]);
    let dir = elsewhere();
    let outside = dir.path().join("outside.txt");
    let summary = review(&ws, &["--sandbox"], &outside);
    assert_eq!(summary, "inside=written outside=refused hook=written");
    assert_eq!(ws.read("inside.txt"), "inside\n");
    assert!(!outside.exists(), "nothing written outside the workspace");
    assert!(
        !ws.root.join(".git/hooks/pre-commit").exists(),
        "what it wrote in the git dir was dropped"
    );

    // The same model without the sandbox reaches both: what the sandbox is for.
    let ws = Workspace::with(&[("a.txt", "a\n")]);
    let outside = dir.path().join("outside-too.txt");
    let summary = review(&ws, &[], &outside);
    assert_eq!(summary, "inside=written outside=written hook=written");
    assert!(outside.exists());
    assert!(ws.root.join(".git/hooks/pre-commit").exists());
}

#[test]
fn an_agent_that_cannot_have_its_sandbox_refuses_to_start() {
    let ws = Workspace::with(&[("a.txt", "a\n")]);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_lorch"))
        .args(["agent", "reviewer", "--sandbox", "--", "cat"])
        .current_dir(&ws.root)
        .env("LOAF_SANDBOX", "off")
        .output()
        .expect("lorch agent runs");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("lorch agent: --sandbox: git-loaf's sandbox cannot be made here, so the model would run uncontained"),
        "{stderr}"
    );
}

/// A builder model that writes `b.txt` (its NESL reply from `$REPLY`).
const BUILDER_MODEL: &str =
    r#"cat > /dev/null; printf '%s\n' "$REPLY" | sed "s|@ROOT@|$LORCH_WORKSPACE|g""#;

const WRITE_B: &str = "#!nesl [@three-char-SHA-256: b1d]\naction = \"file_write\"\npath = \"@ROOT@/b.txt\"\ncontent = \"b\"\n#!end_b1d";

/// The builder's `tests` after one step whose check writes `outside`.
fn build(ws: &Workspace, sandboxed: bool, outside: &Path) -> serde_json::Value {
    let outside = outside.display().to_string();
    let check = "echo checked > \"$OUTSIDE\"";
    let mut flags = vec!["--check", check, "--max-turns", "1"];
    if sandboxed {
        flags.push("--sandbox");
    }
    let mut agent = Agent::start_cmd(
        ws,
        "builder",
        &flags,
        &["sh", "-c", BUILDER_MODEL],
        &ws.scratch("unused.md"),
        &[("OUTSIDE", &outside), ("REPLY", WRITE_B)],
    );
    agent.send(&command(
        "builder",
        "implement",
        "c-1",
        &format!("ik-sandbox-build-{sandboxed}-0001"),
        json!({"goal": "write b"}),
    ));
    let answer = agent.answer();
    let _ = agent.finish();
    let done = answer.last().expect("an answer");
    assert_eq!(done["event"], "builder.completed", "{answer:#?}");
    done["payload"]["tests"].clone()
}

#[test]
fn a_sandboxed_builders_checks_run_the_models_code_contained_too() {
    let dir = elsewhere();
    let ws = Workspace::with(&[("a.txt", "a\n")]);
    let outside = dir.path().join("checked.txt");
    let tests = build(&ws, true, &outside);
    assert_eq!(tests["status"], "fail", "{tests:#}");
    // Read-only where the folder is visible; absent where it lies under /tmp (a clone in
    // /tmp: the sandbox's /tmp is its own).
    let output = tests["checks"][0]["output_tail"].as_str().unwrap_or("");
    assert!(
        [
            "Read-only file system",
            "nonexistent",
            "No such file or directory"
        ]
        .iter()
        .any(|why| output.contains(why)),
        "{tests:#}"
    );
    assert!(!outside.exists(), "the check could not write outside");

    let ws = Workspace::with(&[("a.txt", "a\n")]);
    let tests = build(&ws, false, &outside);
    assert_eq!(tests["status"], "pass", "{tests:#}");
    assert_eq!(
        std::fs::read_to_string(&outside).expect("written"),
        "checked\n"
    );
}

#[test]
fn doctor_and_run_say_when_an_agents_sandbox_cannot_be_made() {
    let mut c = crate::harness::config();
    c["agents"]["reviewer"]["cmd"] = json!([
        env!("CARGO_BIN_EXE_lorch"),
        "agent",
        "reviewer",
        "--sandbox",
        "--",
        "cat"
    ]);
    let ws = crate::harness::Ws::new(&c);
    let out = ws.lorch(&["doctor"], &[]);
    let console = crate::harness::stdout(&out);
    assert!(
        console.contains("ok   reviewer sandbox (--sandbox): git-loaf's namespaces can be made\n"),
        "{console}"
    );
    let out = ws.lorch(&["run", "--task", "T-0042"], &[("LOAF_SANDBOX", "off")]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = crate::harness::stderr(&out);
    assert!(
        stderr.contains(
            "FAIL reviewer sandbox (--sandbox): --sandbox: git-loaf's sandbox cannot be made here"
        ),
        "{stderr}"
    );
    assert!(!ws.path().join("events").exists(), "nothing ran");
}
