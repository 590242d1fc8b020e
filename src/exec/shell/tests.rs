use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use super::*;
use crate::exec::process::tests::{first_pid, is_running};
use crate::exec::{AccessCheck, AllowAll, PathMap};

fn params(pairs: Value) -> Params {
    match pairs {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

fn workspace<'a>(guard: &'a dyn AccessCheck, paths: &'a PathMap) -> Workspace<'a> {
    let mut ws = Workspace::permissive(guard, paths);
    ws.exec_timeout = Duration::from_secs(10);
    ws
}

fn exec_in(dir: &Path, lang: &str, code: &str) -> ActionOutcome {
    let paths = PathMap::identity(dir);
    run_exec(
        &params(json!({"lang": lang, "code": code})),
        &workspace(&AllowAll, &paths),
    )
}

#[test]
fn bash_reports_stdout_stderr_and_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let out = exec_in(dir.path(), "bash", "echo hi; echo oops >&2");
    assert_eq!(
        out,
        ActionOutcome::ok(Some(
            json!({"stdout": "hi\n", "stderr": "oops\n", "exit_code": 0})
        ))
    );
}

#[test]
fn python_runs_with_python3() {
    let dir = tempfile::tempdir().unwrap();
    let out = exec_in(
        dir.path(),
        "python",
        "import sys; print(sys.version_info[0])",
    );
    assert_eq!(
        out.data,
        Some(json!({"stdout": "3\n", "stderr": "", "exit_code": 0}))
    );
}

#[test]
fn javascript_runs_with_node() {
    let dir = tempfile::tempdir().unwrap();
    let out = exec_in(dir.path(), "javascript", "console.log(6 * 7)");
    assert_eq!(
        out.data,
        Some(json!({"stdout": "42\n", "stderr": "", "exit_code": 0}))
    );
}

#[test]
fn a_non_zero_exit_fails_and_keeps_the_output() {
    let dir = tempfile::tempdir().unwrap();
    let out = exec_in(dir.path(), "bash", "echo partial; echo broken >&2; exit 2");
    assert!(!out.success);
    assert_eq!(
        out.error.as_deref(),
        Some("exec: Process exited with code 2")
    );
    assert_eq!(
        out.data,
        Some(json!({"stdout": "partial\n", "stderr": "broken\n", "exit_code": 2}))
    );

    let out = exec_in(dir.path(), "python", "1/0");
    assert_eq!(
        out.error.as_deref(),
        Some("exec: Process exited with code 1")
    );
    let stderr = out
        .data
        .as_ref()
        .and_then(|d| d["stderr"].as_str())
        .unwrap();
    assert!(stderr.contains("ZeroDivisionError"), "{stderr}");

    let out = exec_in(dir.path(), "javascript", "process.exit(4)");
    assert_eq!(
        out.error.as_deref(),
        Some("exec: Process exited with code 4")
    );
}

#[test]
fn runs_in_the_given_cwd() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    let paths = PathMap::identity(dir.path());
    let out = run_exec(
        &params(json!({"lang": "bash", "code": "pwd -P", "cwd": sub.to_str().unwrap()})),
        &workspace(&AllowAll, &paths),
    );
    let expected = format!("{}\n", sub.canonicalize().unwrap().display());
    assert_eq!(out.data.unwrap()["stdout"], json!(expected));
}

#[test]
fn runs_in_the_real_root_by_default_and_shows_only_user_paths() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().canonicalize().unwrap().join("stage");
    std::fs::create_dir(&real).unwrap();
    std::fs::write(real.join("only-in-stage"), "").unwrap();
    let user = Path::new("/home/someone/repo");
    let paths = PathMap::redirect(user, &real);
    let out = run_exec(
        &params(json!({"lang": "bash", "code": "pwd -P; ls; echo \"$PWD/x\" >&2; exit 1"})),
        &workspace(&AllowAll, &paths),
    );
    assert_eq!(
        out.data,
        Some(json!({
            "stdout": "/home/someone/repo\nonly-in-stage\n",
            "stderr": "/home/someone/repo/x\n",
            "exit_code": 1
        }))
    );
}

#[test]
fn a_missing_cwd_is_reported_with_the_users_path() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope");
    let out = exec_in_cwd(dir.path(), missing.to_str().unwrap());
    assert_eq!(
        out.error,
        Some(format!(
            "exec: cwd not found '{}' (ENOENT)",
            missing.display()
        ))
    );
}

fn exec_in_cwd(root: &Path, cwd: &str) -> ActionOutcome {
    let paths = PathMap::identity(root);
    run_exec(
        &params(json!({"lang": "bash", "code": "touch ran", "cwd": cwd})),
        &workspace(&AllowAll, &paths),
    )
}

/// The real fs-guard of a loaf.yml allowing reads and writes only under `dir`.
fn only_under(dir: &Path) -> crate::exec::guard::FsGuard {
    let rules = crate::exec::guard::GuardRules {
        allow: vec![format!("{}/**", dir.display())],
        deny: Vec::new(),
    };
    let config = crate::exec::guard::FsGuardConfig {
        read: rules.clone(),
        write: rules,
    };
    crate::exec::guard::FsGuard::new(Some(&config), dir, dir).expect("guard")
}

#[test]
fn a_cwd_outside_the_allowed_area_is_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    // Canonical, as the guard reports paths.
    let base = dir.path().canonicalize().unwrap();
    let real = base.join("stage");
    let outside = base.join("outside");
    std::fs::create_dir_all(real.join("sub")).unwrap();
    std::fs::create_dir(&outside).unwrap();
    let user = Path::new("/home/someone/repo");
    let paths = PathMap::redirect(user, &real);
    // Allows only the stage's `ok` folder: `sub` (a real, existing folder) is refused, and
    // the refusal names the user's path, not the stage's.
    let guard = only_under(&real.join("ok"));
    let ws = workspace(&guard, &paths);
    let out = run_exec(
        &params(json!({"lang": "bash", "code": "touch ran", "cwd": "/home/someone/repo/sub"})),
        &ws,
    );
    assert_eq!(
        out,
        ActionOutcome::fail(
            "fs-guard violation: read access denied for '/home/someone/repo/sub': \
             no pattern in fs-guard.read.allow of loaf.yml matches it \
             (allowed read roots: /home/someone/repo/ok/**)"
        )
    );
    assert!(!real.join("sub/ran").exists());

    let out = run_exec(
        &params(json!({"lang": "bash", "code": "touch ran", "cwd": outside.to_str().unwrap()})),
        &ws,
    );
    assert!(
        out.error
            .unwrap()
            .starts_with("fs-guard violation: read access denied")
    );
    assert!(!outside.join("ran").exists());
}

#[test]
fn timeout_kills_the_code_and_what_it_started() {
    let dir = tempfile::tempdir().unwrap();
    let paths = PathMap::identity(dir.path());
    let mut ws = workspace(&AllowAll, &paths);
    ws.exec_timeout = Duration::from_millis(500);
    let started = Instant::now();
    let out = run_exec(
        &params(json!({"lang": "bash", "code": "sleep 60 & echo $!; echo waiting >&2; wait"})),
        &ws,
    );
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(
        out.error.as_deref(),
        Some("exec: Process timeout after 0.5s (TIMEOUT)")
    );
    let data = out.data.unwrap();
    assert_eq!(data["exit_code"], Value::Null);
    assert_eq!(data["stderr"], json!("waiting\n"));
    let grandchild = first_pid(data["stdout"].as_str().unwrap());
    assert!(
        !is_running(grandchild),
        "background sleep {grandchild} survived"
    );
}

#[test]
fn each_stream_is_capped_and_marked() {
    let dir = tempfile::tempdir().unwrap();
    let paths = PathMap::identity(dir.path());
    let mut ws = workspace(&AllowAll, &paths);
    ws.max_output = 10;
    let out = run_exec(
        &params(
            json!({"lang": "python", "code": "print('x' * 100); print('short', file=__import__('sys').stderr)"}),
        ),
        &ws,
    );
    assert_eq!(
        out.data,
        Some(json!({
            "stdout": "xxxxxxxxxx\n… [output truncated at 10 bytes]",
            "stdout_truncated": true,
            "stderr": "short\n",
            "exit_code": 0
        }))
    );
}

#[test]
fn a_missing_interpreter_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let empty = tempfile::tempdir().unwrap();
    let paths = PathMap::identity(dir.path());
    let ws = workspace(&AllowAll, &paths);
    for (lang, message) in [
        ("python", "exec: python3 not found in PATH (ENOENT)"),
        ("javascript", "exec: node not found in PATH (ENOENT)"),
        ("bash", "exec: bash not found in PATH (ENOENT)"),
    ] {
        let out = run_exec_with_path(
            &params(json!({"lang": lang, "code": "1"})),
            &ws,
            Some(empty.path().as_os_str()),
        );
        assert_eq!(out, ActionOutcome::fail(message));
    }
}

#[test]
fn return_output_false_keeps_only_the_exit_code_unless_it_failed() {
    let dir = tempfile::tempdir().unwrap();
    let paths = PathMap::identity(dir.path());
    let ws = workspace(&AllowAll, &paths);
    let quiet = |code: &str| {
        run_exec(
            &params(json!({"lang": "bash", "code": code, "return_output": false})),
            &ws,
        )
    };
    assert_eq!(quiet("echo noise").data, Some(json!({"exit_code": 0})));
    assert_eq!(
        quiet("echo why >&2; exit 1").data,
        Some(json!({"stdout": "", "stderr": "why\n", "exit_code": 1}))
    );
}

#[test]
fn bad_parameters_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(
        exec_in(dir.path(), "ruby", "puts 1"),
        ActionOutcome::fail("exec: Unsupported language 'ruby' (use bash, python or javascript)")
    );
    let paths = PathMap::identity(dir.path());
    assert_eq!(
        run_exec(
            &params(json!({"lang": "bash"})),
            &workspace(&AllowAll, &paths)
        ),
        ActionOutcome::fail("Invalid action: missing lang or code parameter")
    );
    assert_eq!(
        exec_in_cwd(dir.path(), "relative/dir"),
        ActionOutcome::fail("exec: cwd must be an absolute path, got 'relative/dir'")
    );
}
