//! `git loaf mcp` driven by a second client nobody here wrote: the official MCP Python SDK
//! (`mcp` on PyPI), installed into a virtualenv cached in the target folder
//! (`tests/python/mcp_client.py` makes the calls; this test checks the answers and the
//! repository).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::scratch::{ENV, Scratch};

/// The cached virtualenv with `mcp` installed, made on first use; `None` (a skip, or a
/// failure under `CI`) when it cannot be made.
fn python_with_mcp() -> Option<PathBuf> {
    let target = Path::new(env!("CARGO_BIN_EXE_git-loaf"))
        .parent()
        .and_then(Path::parent)
        .expect("the binary is in <target>/<profile>/");
    let venv = target.join("mcp-python-venv");
    let python = venv.join("bin/python");
    if python.exists() && imports_mcp(&python) {
        return Some(python);
    }
    // Made beside and moved into place, so that a half-made one is never used.
    let building = target.join(format!("mcp-python-venv.{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&building);
    let made = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&building)
        .output();
    if !made.is_ok_and(|o| o.status.success()) {
        crate::support::unavailable("python3 -m venv is not available");
        return None;
    }
    let pip = Command::new(building.join("bin/pip"))
        .args(["install", "-q", "--disable-pip-version-check", "mcp"])
        .output();
    match pip {
        Ok(o) if o.status.success() => {}
        other => {
            let why = match other {
                Ok(o) => String::from_utf8_lossy(&o.stderr).into_owned(),
                Err(e) => e.to_string(),
            };
            crate::support::unavailable(&format!("pip install mcp failed: {why}"));
            return None;
        }
    }
    let _ = std::fs::remove_dir_all(&venv);
    if std::fs::rename(&building, &venv).is_err() {
        // Another test run put one there meanwhile: use that.
        let _ = std::fs::remove_dir_all(&building);
    }
    Some(python)
}

fn imports_mcp(python: &Path) -> bool {
    Command::new(python)
        .args(["-c", "import mcp"])
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn the_official_python_sdk_lists_applies_undoes_and_survives_bad_input() {
    let Some(python) = python_with_mcp() else {
        return;
    };
    let s = Scratch::with(&[("a.txt", "one\n")]);
    let before: usize = s
        .git(&["rev-list", "--count", "HEAD"])
        .trim()
        .parse()
        .expect("count");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/mcp_client.py");
    let out = Command::new(python)
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_git-loaf"))
        .arg(&s.root)
        .current_dir(&s.root)
        .envs(ENV)
        .env("NO_COLOR", "1")
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "the Python client finished: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answers: Value = serde_json::from_slice(&out.stdout).expect("the client printed JSON");
    assert_eq!(
        answers["tools"],
        serde_json::json!([
            "apply",
            "instructions",
            "log",
            "redo",
            "review",
            "show",
            "squash",
            "status",
            "undo"
        ])
    );
    assert_eq!(answers["prompts"], serde_json::json!(["instructions"]));
    assert!(
        answers["prompt_text"]
            .as_str()
            .is_some_and(|t| t.contains(&s.root.display().to_string())),
        "the prompt names the repository"
    );
    let apply = &answers["apply"];
    assert_eq!(apply["is_error"], Value::Bool(false), "{apply}");
    assert_eq!(apply["structured"]["success"], Value::Bool(true), "{apply}");
    for bad in ["bad_type", "no_blocks"] {
        assert_eq!(
            answers[bad]["is_error"],
            Value::Bool(true),
            "{bad}: {}",
            answers[bad]
        );
    }
    assert!(
        answers["no_blocks"]["text"]
            .as_str()
            .is_some_and(|t| t.contains("no NESL block"))
    );
    assert_eq!(
        answers["log"]["structured"]["entries"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );
    assert!(
        answers["undo"]["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("Undid "))
    );
    assert!(
        answers["redo"]["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("Redid "))
    );
    // One commit, redone: the file is there, recorded as the Python client's model.
    let after: usize = s
        .git(&["rev-list", "--count", "HEAD"])
        .trim()
        .parse()
        .expect("count");
    assert_eq!(after, before + 1);
    assert_eq!(
        s.read("from_python.txt").as_deref(),
        Some("written by the Python SDK\n")
    );
    assert!(
        s.git(&["log", "-1", "--format=%B"])
            .contains("Assisted-by: python-sdk")
    );
}
