use std::time::Instant;

use super::*;
use crate::exec::process::tests::{first_pid, is_running};

fn vars(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn hook(run: &str) -> Hook {
    Hook::new(run)
}

fn tolerant(run: &str) -> Hook {
    Hook {
        continue_on_error: true,
        ..Hook::new(run)
    }
}

fn run_in(dir: &Path, hooks: &[Hook], vars: &BTreeMap<String, String>) -> HooksResult {
    run_hooks(hooks, vars, dir, &PathMap::identity(dir))
}

fn read(path: PathBuf) -> String {
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn vars_are_replaced_and_unknown_ones_left_to_the_shell() {
    let dir = tempfile::tempdir().unwrap();
    let result = run_in(
        dir.path(),
        &[hook(
            "echo \"${COMMIT_MSG}|${NOT_A_VAR}|$COMMIT_MSG|${COMMIT_MSG}\"; printenv LOAF_VAR_COMMIT_MSG",
        )],
        &vars(&[("COMMIT_MSG", "AI-assisted changes")]),
    );
    assert!(result.success, "{result:?}");
    assert_eq!(
        result.runs[0].stdout,
        "AI-assisted changes|||AI-assisted changes\nAI-assisted changes\n"
    );
    assert_eq!(
        result.runs[0].command,
        "echo \"${COMMIT_MSG}|${NOT_A_VAR}|$COMMIT_MSG|${COMMIT_MSG}\"; printenv LOAF_VAR_COMMIT_MSG"
    );
}

#[test]
fn references_are_rewritten_only_for_known_names() {
    let known = vars(&[("A", "1"), ("b_2", "2")]);
    assert_eq!(
        reference_vars("${A} ${b_2} ${C} $A ${1} ${A ${", &known),
        "${LOAF_VAR_A} ${LOAF_VAR_b_2} ${C} $A ${1} ${A ${"
    );
}

#[test]
fn references_follow_the_shell_quoting() {
    let known = vars(&[("A", "1")]);
    assert_eq!(
        reference_vars(
            r#"'${A}' "${A}" 'x "${A}" y' \${A} "\"${A}" 'a\'${A}"#,
            &known
        ),
        r#"''"${LOAF_VAR_A}"'' "${LOAF_VAR_A}" 'x "'"${LOAF_VAR_A}"'" y' \${A} "\"${LOAF_VAR_A}" 'a\'${LOAF_VAR_A}"#
    );
}

#[test]
fn a_var_in_single_quotes_gets_its_value_uninterpreted() {
    let dir = tempfile::tempdir().unwrap();
    let evil = "it's $(touch pwned1) `touch pwned2` '; touch pwned3; ' \\ ${HOME}";
    let result = run_in(
        dir.path(),
        &[hook(
            "printf '%s\\n' 'msg: ${COMMIT_MSG} end' > single.txt; echo '${NOT_A_VAR}' >> single.txt",
        )],
        &vars(&[("COMMIT_MSG", evil)]),
    );
    assert!(result.success, "{result:?}");
    for n in 1..=3 {
        assert!(
            !dir.path().join(format!("pwned{n}")).exists(),
            "pwned{n} ran"
        );
    }
    assert_eq!(
        read(dir.path().join("single.txt")),
        format!("msg: {evil} end\n${{NOT_A_VAR}}\n")
    );
}

#[test]
fn the_run_context_keeps_the_documented_and_the_seed_names() {
    let context = run_context_vars(
        false,
        4,
        3,
        1,
        &["/r/a.rs".into(), "/r/b.rs".into()],
        &["file_write: boom".into()],
    );
    let documented = [
        ("SUCCESS", "false"),
        ("TOTAL_BLOCKS", "4"),
        ("EXECUTED_ACTIONS", "3"),
        ("FAILED_ACTIONS", "1"),
        ("MODIFIED_FILES", "/r/a.rs,/r/b.rs"),
        ("ERRORS", "file_write: boom"),
        ("ERROR_COUNT", "1"),
        ("success", "false"),
        ("totalBlocks", "4"),
        ("executedActions", "3"),
        ("failedActions", "1"),
        ("modifiedFiles", "/r/a.rs,/r/b.rs"),
        ("errors", "file_write: boom"),
        ("errorCount", "1"),
    ];
    assert_eq!(context, vars(&documented));

    let dir = tempfile::tempdir().unwrap();
    let result = run_in(
        dir.path(),
        &[hook(
            "echo ${SUCCESS} ${TOTAL_BLOCKS} ${EXECUTED_ACTIONS} ${FAILED_ACTIONS} ${MODIFIED_FILES} \"${ERRORS}\"",
        )],
        &context,
    );
    assert_eq!(
        result.runs[0].stdout,
        "false 4 3 1 /r/a.rs,/r/b.rs file_write: boom\n"
    );
}

#[test]
fn values_from_the_run_cannot_inject_commands() {
    let dir = tempfile::tempdir().unwrap();
    let evil = "x\"; touch pwned1; echo \" $(touch pwned2) `touch pwned3` '; touch pwned4; '";
    let context = run_context_vars(
        false,
        1,
        1,
        1,
        &[format!("a;touch pwned5;{evil}")],
        &[evil.into()],
    );
    let result = run_in(
        dir.path(),
        &[
            hook("echo \"${ERRORS}\" > quoted.txt"),
            hook("echo ${ERRORS} > unquoted.txt"),
            hook("echo \"${MODIFIED_FILES}\" > files.txt"),
        ],
        &context,
    );
    assert!(result.success, "{result:?}");
    for n in 1..=5 {
        assert!(
            !dir.path().join(format!("pwned{n}")).exists(),
            "pwned{n} ran"
        );
    }
    assert_eq!(read(dir.path().join("quoted.txt")), format!("{evil}\n"));
    assert_eq!(
        read(dir.path().join("files.txt")),
        format!("a;touch pwned5;{evil}\n")
    );
}

#[test]
fn the_first_failure_stops_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let result = run_in(
        dir.path(),
        &[
            hook("echo one"),
            hook("echo broken >&2; exit 3"),
            hook("touch never"),
        ],
        &BTreeMap::new(),
    );
    assert!(!result.success);
    assert_eq!(result.runs.len(), 2);
    assert_eq!(
        result.errors,
        ["echo broken >&2; exit 3: Process exited with code 3: broken"]
    );
    assert_eq!(
        result.runs[1],
        HookRun {
            command: "echo broken >&2; exit 3".into(),
            success: false,
            exit_code: Some(3),
            stdout: String::new(),
            stderr: "broken\n".into(),
            error: Some("Process exited with code 3: broken".into()),
        }
    );
    assert!(!dir.path().join("never").exists());
}

#[test]
fn continue_on_error_goes_on_and_still_records_the_failure() {
    let dir = tempfile::tempdir().unwrap();
    let result = run_in(
        dir.path(),
        &[tolerant("exit 1"), hook("touch ran")],
        &BTreeMap::new(),
    );
    assert!(result.success);
    assert_eq!(result.runs.len(), 2);
    assert_eq!(result.errors, ["exit 1: Process exited with code 1"]);
    assert!(dir.path().join("ran").exists());
}

#[test]
fn timeout_kills_the_hook_and_what_it_started() {
    let dir = tempfile::tempdir().unwrap();
    let slow = Hook {
        timeout: Duration::from_millis(300),
        ..Hook::new("sleep 60 & echo $!; wait")
    };
    let started = Instant::now();
    let result = run_in(dir.path(), &[slow, hook("touch never")], &BTreeMap::new());
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(!result.success);
    assert_eq!(
        result.errors,
        ["sleep 60 & echo $!; wait: Process timeout after 0.3s (TIMEOUT)"]
    );
    assert_eq!(result.runs[0].exit_code, None);
    let grandchild = first_pid(&result.runs[0].stdout);
    assert!(
        !is_running(grandchild),
        "background sleep {grandchild} survived"
    );
    assert!(!dir.path().join("never").exists());
}

#[test]
fn cwd_is_relative_to_the_default_and_mapped_to_the_real_place() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().canonicalize().unwrap().join("stage");
    std::fs::create_dir_all(real.join("sub")).unwrap();
    let user = Path::new("/home/someone/repo");
    let paths = PathMap::redirect(user, &real);
    let in_sub = Hook {
        cwd: Some("sub".into()),
        ..Hook::new("pwd -P; touch here")
    };
    let result = run_hooks(&[hook("pwd -P"), in_sub], &BTreeMap::new(), user, &paths);
    assert!(result.success, "{result:?}");
    assert_eq!(result.runs[0].stdout, "/home/someone/repo\n");
    assert_eq!(result.runs[1].stdout, "/home/someone/repo/sub\n");
    assert!(real.join("sub/here").exists());

    let nowhere = Hook {
        cwd: Some("missing".into()),
        ..Hook::new("true")
    };
    let result = run_hooks(&[nowhere], &BTreeMap::new(), user, &paths);
    assert_eq!(
        result.errors,
        ["true: cwd not found '/home/someone/repo/missing' (ENOENT)"]
    );
}

#[test]
fn a_long_stderr_is_quoted_by_its_end() {
    let long = format!("{}END", "x".repeat(5000));
    let message = with_stderr("Process exited with code 1".into(), &long);
    assert!(message.starts_with("Process exited with code 1: …xxx"));
    assert!(message.ends_with("xxxEND"));
    assert_eq!(
        message.len(),
        "Process exited with code 1: …".len() + STDERR_IN_ERROR
    );
}
