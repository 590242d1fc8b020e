//! The `exec` action: run bash, Python or JavaScript code, with a timeout that kills the
//! whole process group and capped output. Messages follow the seed's exec runner.

use std::path::PathBuf;
use std::process::Command;

use serde_json::json;

use super::process;
use super::{Access, Outcome, Params, Workspace};

/// The interpreter and its arguments for a language of the schema.
fn interpreter(lang: &str, code: &str) -> Option<(&'static str, Vec<String>)> {
    match lang {
        "bash" => Some(("bash", vec!["-c".into(), code.into()])),
        "python" => Some(("python3", vec!["-c".into(), code.into()])),
        "javascript" => Some(("node", vec!["-e".into(), code.into()])),
        _ => None,
    }
}

/// Runs an `exec` action: `{stdout, stderr, exit_code}` in data; success when the code
/// exits 0.
pub fn run_exec(params: &Params, ws: &Workspace<'_>) -> Outcome {
    let text = |key: &str| params.get(key).and_then(|v| v.as_str());
    let (Some(lang), Some(code)) = (text("lang"), text("code")) else {
        return Outcome::fail("exec: internal error: parameters 'lang' and 'code' are required");
    };
    let Some((program, args)) = interpreter(lang, code) else {
        return Outcome::fail(format!(
            "exec: unsupported language '{lang}' (use bash, python or javascript)"
        ));
    };
    let user_cwd = text("cwd").map_or_else(|| ws.paths.user_root().to_path_buf(), PathBuf::from);
    let cwd = match ws.guard.check(Access::Read, &ws.paths.to_real(&user_cwd)) {
        Ok(cwd) => cwd,
        Err(message) => return Outcome::fail(ws.paths.scrub(&message)),
    };
    if !cwd.is_dir() {
        return Outcome::fail(format!(
            "exec: cwd is not a directory: '{}'",
            user_cwd.display()
        ));
    }
    run_program(program, &args, &cwd, ws)
}

/// Runs `program args` in `cwd` and turns what it did into an outcome.
fn run_program(
    program: &str,
    args: &[String],
    cwd: &std::path::Path,
    ws: &Workspace<'_>,
) -> Outcome {
    let mut command = Command::new(program);
    command.args(args).current_dir(cwd);
    let finished = match process::run(command, ws.exec_timeout, ws.max_output) {
        Ok(finished) => finished,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Outcome::fail(format!("exec: {program} not found in PATH (ENOENT)"));
        }
        Err(e) => return Outcome::fail(format!("exec: cannot start {program}: {e}")),
    };
    let mark = |text: String, truncated: bool| {
        if truncated {
            format!("{text}\n… [output truncated at {} bytes]", ws.max_output)
        } else {
            text
        }
    };
    let stdout = ws
        .paths
        .scrub(&mark(finished.stdout, finished.stdout_truncated));
    let stderr = ws
        .paths
        .scrub(&mark(finished.stderr, finished.stderr_truncated));
    let mut data = json!({"stdout": stdout, "stderr": stderr, "exit_code": finished.exit_code});
    if finished.stdout_truncated {
        data["stdout_truncated"] = json!(true);
    }
    if finished.stderr_truncated {
        data["stderr_truncated"] = json!(true);
    }
    let error = if finished.timed_out {
        Some(format!(
            "exec: Process timeout after {}s (TIMEOUT)",
            ws.exec_timeout.as_secs_f64()
        ))
    } else {
        match finished.exit_code {
            Some(0) => None,
            Some(code) => Some(format!("exec: Process exited with code {code}")),
            None => Some("exec: Process killed by a signal".to_owned()),
        }
    };
    Outcome {
        success: error.is_none(),
        error,
        data: Some(data),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::time::{Duration, Instant};

    use serde_json::json;

    use super::*;
    use crate::exec::{AllowAll, PathMap};

    fn run(params: serde_json::Value, timeout: Duration, max_output: usize) -> Outcome {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical");
        let paths = PathMap::identity(&root);
        let mut ws = Workspace::permissive(&AllowAll, &paths);
        ws.exec_timeout = timeout;
        ws.max_output = max_output;
        run_exec(params.as_object().expect("object"), &ws)
    }

    #[test]
    fn each_language_runs_and_reports_streams_and_exit_code() {
        let second = Duration::from_secs(20);
        for (lang, code) in [
            ("bash", "echo out; echo err >&2"),
            (
                "python",
                "import sys; print('out'); print('err', file=sys.stderr)",
            ),
            ("javascript", "console.log('out'); console.error('err')"),
        ] {
            let outcome = run(json!({"lang": lang, "code": code}), second, 1024);
            assert!(outcome.success, "{lang}: {outcome:?}");
            assert_eq!(
                outcome.data,
                Some(json!({"stdout": "out\n", "stderr": "err\n", "exit_code": 0})),
                "{lang}"
            );
        }
        let failed = run(
            json!({"lang": "bash", "code": "echo partial; exit 3"}),
            second,
            1024,
        );
        assert!(!failed.success);
        assert_eq!(
            failed.error.as_deref(),
            Some("exec: Process exited with code 3")
        );
        assert_eq!(
            failed.data.and_then(|d| d.get("stdout").cloned()),
            Some(json!("partial\n"))
        );
    }

    #[test]
    fn cwd_is_honoured() {
        let outcome = run(
            json!({"lang": "bash", "code": "pwd", "cwd": "/"}),
            Duration::from_secs(20),
            1024,
        );
        assert_eq!(
            outcome.data.and_then(|d| d.get("stdout").cloned()),
            Some(json!("/\n"))
        );
    }

    #[test]
    fn timeout_kills_the_whole_process_group() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pid_file = dir.path().join("pid");
        let code = format!("sleep 100 & echo $! > {}; wait", pid_file.display());
        let started = Instant::now();
        let outcome = run(
            json!({"lang": "bash", "code": code}),
            Duration::from_millis(500),
            1024,
        );
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "did not wait for the grandchild"
        );
        assert_eq!(
            outcome.error.as_deref(),
            Some("exec: Process timeout after 0.5s (TIMEOUT)")
        );
        let pid = std::fs::read_to_string(&pid_file).expect("the grandchild wrote its pid");
        // Reaped by init or a zombie at most: no longer running.
        let state =
            std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).unwrap_or_default();
        assert!(
            state.is_empty() || state.contains(") Z "),
            "grandchild still running: {state}"
        );
    }

    #[test]
    fn output_is_capped_and_marked() {
        let outcome = run(
            json!({"lang": "bash", "code": "head -c 100000 /dev/zero | tr '\\0' x"}),
            Duration::from_secs(20),
            1000,
        );
        let data = outcome.data.expect("data");
        let stdout = data["stdout"].as_str().expect("stdout");
        assert!(
            stdout.starts_with(&"x".repeat(1000))
                && stdout.ends_with("[output truncated at 1000 bytes]"),
            "{stdout}"
        );
        assert_eq!(data["stdout_truncated"], json!(true));
    }

    #[test]
    fn a_missing_interpreter_is_named() {
        let paths = PathMap::identity(Path::new("/"));
        let ws = Workspace::permissive(&AllowAll, &paths);
        let outcome = run_program("python3-that-is-not-installed", &[], Path::new("/"), &ws);
        assert_eq!(
            outcome.error.as_deref(),
            Some("exec: python3-that-is-not-installed not found in PATH (ENOENT)")
        );
    }
}
