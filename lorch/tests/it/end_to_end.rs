//! The §15 scenario with lorch's real agents (`lorch agent ROLE -- CMD`, the model a script
//! printing canned replies) in a git repository: implement → changes requested →
//! implement_changes → approved → spec.updated → done, each builder step (and the spec
//! update) one git-loaf commit that `git loaf log`, `squash` and `undo` work on, receipts
//! matching the files, and the run killed at many moments and resumed ending the same.

use std::path::Path;

use serde_json::json;
use sha2::Digest as _;

use crate::agent::{ENV, fake_llm};
use crate::deterministic::git_in as git;
use crate::harness::{Ws, assert_exit, stderr, stdout};

/// Runs `git loaf args` in `dir`.
fn loaf(dir: &Path, args: &[&str]) -> std::process::Output {
    assert_cmd::Command::new(crate::binaries::git_loaf())
        .args(args)
        .current_dir(dir)
        .envs(ENV)
        .output()
        .expect("git-loaf runs")
}

/// The §15 scenario's replies, by correlation id (the fake model prints the one for the
/// command it is run for): implement, changes requested, implement_changes, approved,
/// spec updated.
pub(crate) const REPLIES: [(&str, &str); 5] = [
    (
        "T-0042-1",
        "Here is the module.\n\n#!nesl [@three-char-SHA-256: b1d]\naction = \"file_write\"\npath = \"@ROOT@/src/hello.txt\"\ncontent = \"hello\"\n#!end_b1d\n",
    ),
    (
        "T-0042-2",
        "The file must end with a newline.\nVERDICT: changes_requested\n",
    ),
    (
        "T-0042-3",
        "Fixed.\n\n#!nesl [@three-char-SHA-256: c2f]\naction = \"file_write\"\npath = \"@ROOT@/src/hello.txt\"\ncontent = \"hello\\n\"\n#!end_c2f\n",
    ),
    ("T-0042-4", "Reads well now.\nVERDICT: approved\n"),
    (
        "T-0042-5",
        "STATUS: updated\nSUMMARY: T-0042 is done.\n\n```spec-section\n## Status\n\n| Task | State |\n|------|-------|\n| T-0042 | done |\n```\n",
    ),
];

pub(crate) const SPEC: &str = "# Spec\n\n## Requirements\n\n- src/hello.txt says hello.\n\n## Status\n\n| Task | State |\n|------|-------|\n| T-0042 | todo |\n\n## Changelog\n";

/// A git workspace whose lorch.json runs the real agents on the canned replies in `replies`.
fn workspace(replies: &Path) -> (Ws, std::path::PathBuf) {
    for (id, text) in REPLIES {
        std::fs::write(replies.join(format!("{id}.md")), text).expect("write reply");
    }
    let lorch = assert_cmd::cargo::cargo_bin("lorch").display().to_string();
    let agent = |role: &str| {
        // lorch accepts a builder's step only with passing tests (§4).
        let checks: &[&str] = if role == "builder" {
            &["--check", "test -f src/hello.txt"]
        } else {
            &[]
        };
        let llm = fake_llm();
        let cmd = [
            &[lorch.as_str(), "agent", role][..],
            checks,
            &["--", "sh", &llm],
        ]
        .concat();
        json!({
            "cmd": cmd,
            "heartbeat_interval_s": 1.0,
            "timeouts_s": {},
            "env": ENV
                .iter()
                .map(|(k, v)| (k.to_string(), json!(v)))
                .chain([("FAKE_REPLY".to_owned(), json!(replies.display().to_string()))])
                .collect::<serde_json::Map<_, _>>(),
        })
    };
    let mut config = crate::harness::config();
    config["spec_path"] = json!("SPEC.md");
    config["agents"] = json!({
        "builder": agent("builder"),
        "reviewer": agent("reviewer"),
        "spec_maintainer": agent("spec_maintainer"),
    });
    let ws = Ws::new(&config);
    ws.write("SPEC.md", SPEC);
    let root = ws.path().canonicalize().expect("canonical");
    git(&root, &["init", "-q", "-b", "main"]);
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-q", "-m", "start"]);
    (ws, root)
}

/// What a finished run leaves: the files, the commits' subjects and authors' agents, and
/// the receipts' artifacts.
fn outcome(root: &Path) -> String {
    let hello = std::fs::read_to_string(root.join("src/hello.txt")).unwrap_or_default();
    let spec = std::fs::read_to_string(root.join("SPEC.md")).unwrap_or_default();
    let commits = git(
        root,
        &["log", "--format=%s | %(trailers:key=Assisted-by,valueonly)"],
    );
    format!("{hello:?}\n{spec}\n{commits}")
}

#[test]
fn the_spec_scenario_runs_with_real_agents_one_git_loaf_commit_per_step() {
    let replies = tempfile::tempdir().expect("tempdir");
    let (ws, root) = workspace(replies.path());
    let out = ws.lorch(&["run", "--task", "T-0042"], &[]);
    assert_exit(&out, 0);
    let shown = stdout(&out);
    let order: Vec<&str> = [
        "builder.completed",
        "review.completed changes_requested",
        "builder.completed",
        "review.completed approved",
        "spec.updated",
    ]
    .into_iter()
    .collect();
    let mut at = 0;
    for event in &order {
        at += shown[at..]
            .find(event)
            .unwrap_or_else(|| panic!("{event} after byte {at}:\n{shown}"));
    }
    assert_eq!(
        std::fs::read_to_string(root.join("src/hello.txt")).expect("file"),
        "hello\n"
    );
    assert!(
        std::fs::read_to_string(root.join("SPEC.md"))
            .expect("spec")
            .contains("| T-0042 | done |")
    );
    // One git-loaf commit per builder step, and the spec update: three, each naming its agent.
    let commits = git(
        &root,
        &["log", "--format=%(trailers:key=Assisted-by,valueonly)"],
    );
    let agents: Vec<&str> = commits.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(
        agents
            .iter()
            .map(|a| a.split(' ').nth(1).unwrap_or_default())
            .collect::<Vec<_>>(),
        ["spec_maintainer", "builder", "builder"],
        "{commits}"
    );
    // Each builder step, made in one turn here, names its task and step in its subject.
    let subjects = git(&root, &["log", "--format=%s", "HEAD~3..HEAD~1"]);
    for subject in subjects.lines() {
        assert!(subject.starts_with("AI: lorch T-0042 step "), "{subjects}");
    }
    let log = loaf(&root, &["log"]);
    assert_eq!(String::from_utf8_lossy(&log.stdout).lines().count(), 3);
    // Receipts link each artifact to its step: the newest receipt naming a file holds the
    // file's checksum and size as the run left it.
    let mut newest = std::collections::BTreeMap::new();
    for step in 1..=5 {
        let path = root.join(format!("receipts/T-0042/step-{step}.json"));
        let receipt: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).expect("receipt")).expect("json");
        assert!(receipt["idempotency_key"].is_string(), "{receipt:#}");
        for artifact in receipt["artifacts"].as_array().into_iter().flatten() {
            let file = artifact["path"].as_str().expect("path").to_owned();
            newest.insert(file, artifact.clone());
        }
    }
    assert!(newest.contains_key("src/hello.txt"), "{newest:?}");
    for (file, artifact) in &newest {
        let bytes = std::fs::read(root.join(file)).expect("artifact exists");
        let digest = format!("{:x}", sha2::Sha256::digest(&bytes));
        let recorded = artifact["sha256"].as_str().expect("sha256");
        assert_eq!(recorded.trim_start_matches("sha256:"), digest, "{file}");
        assert_eq!(artifact["size"], bytes.len(), "{file}");
    }
    // lorch's records and the agents' files stay out of git; the run can be squashed into
    // one commit and that taken back.
    assert_eq!(git(&root, &["status", "--porcelain"]), "");
    let squash = loaf(&root, &["squash"]);
    assert_eq!(
        squash.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&squash.stderr)
    );
    assert_eq!(git(&root, &["rev-list", "--count", "HEAD"]), "2\n");
    let undo = loaf(&root, &["undo"]);
    assert_eq!(
        undo.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&undo.stderr)
    );
    assert_eq!(git(&root, &["rev-list", "--count", "HEAD"]), "4\n");
}

#[test]
fn killed_at_any_moment_and_resumed_the_run_with_real_agents_ends_the_same() {
    let replies = tempfile::tempdir().expect("tempdir");
    let (ws, root) = workspace(replies.path());
    let out = ws.lorch(&["run", "--task", "T-0042"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let expected = outcome(&root);
    let mut moments = 0;
    for n in (1..200).step_by(3) {
        let replies = tempfile::tempdir().expect("tempdir");
        let (ws, root) = workspace(replies.path());
        let crash = n.to_string();
        let out = ws.lorch(
            &["run", "--task", "T-0042"],
            &[("LORCH_CRASH_AFTER_WRITES", crash.as_str())],
        );
        if out.status.code() == Some(0) {
            break;
        }
        moments += 1;
        let out = ws.lorch(&["resume", "--run", &ws.run_id()], &[]);
        assert_eq!(out.status.code(), Some(0), "n={n}: {}", stderr(&out));
        assert_eq!(
            outcome(&root),
            expected,
            "n={n}: no builder step applied twice, none lost"
        );
        assert_eq!(git(&root, &["status", "--porcelain"]), "", "n={n}");
    }
    assert!(moments >= 5, "only {moments} crash moments tried");
}
