//! Hooks: commands from loaf.yml run before and after a reply's actions (the seed's hooks
//! manager). `${NAME}` in a command is replaced from loaf.yml's `vars` as written, and from
//! the run's own values (`${success}`, `${errors}`, …) shell-quoted: those carry text the
//! model wrote, which must never become shell syntax. The run's values are also in the
//! environment as `LOAF_<NAME>`.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use super::PathMap;
use super::process;
use crate::config::HookCommand;

/// What a list of hooks did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HooksRun {
    /// Every hook that ran succeeded (hooks with `continueOnError` may fail).
    pub success: bool,
    /// Each failure as `<command>: <error>`.
    pub errors: Vec<String>,
}

/// Bytes kept of a failing hook's output for its message.
const MESSAGE_OUTPUT: usize = 2000;

/// Runs `hooks` in order in `root` (or each one's `cwd`), stopping at the first failure of a
/// hook without `continueOnError`.
pub fn run_hooks(
    hooks: &[HookCommand],
    vars: &BTreeMap<String, String>,
    run_vars: &BTreeMap<String, String>,
    root: &Path,
    paths: &PathMap,
) -> HooksRun {
    let mut run = HooksRun {
        success: true,
        errors: Vec::new(),
    };
    for hook in hooks {
        if let Err(error) = run_hook(hook, vars, run_vars, root, paths) {
            run.success = false;
            run.errors
                .push(format!("{}: {}", hook.run, paths.scrub(&error)));
            if !hook.continue_on_error {
                break;
            }
        }
    }
    run
}

fn run_hook(
    hook: &HookCommand,
    vars: &BTreeMap<String, String>,
    run_vars: &BTreeMap<String, String>,
    root: &Path,
    paths: &PathMap,
) -> Result<(), String> {
    let command_text = interpolate(&hook.run, vars, run_vars);
    let cwd = hook
        .cwd
        .as_ref()
        .map_or_else(|| root.to_path_buf(), |c| paths.to_real(&root.join(c)));
    let mut command = Command::new("sh");
    command.args(["-c", &command_text]).current_dir(&cwd);
    for (name, value) in run_vars {
        command.env(format!("LOAF_{}", name.to_ascii_uppercase()), value);
    }
    let finished = process::run(command, hook.timeout, MESSAGE_OUTPUT)
        .map_err(|e| format!("cannot start sh in '{}': {e}", cwd.display()))?;
    if finished.timed_out {
        return Err(format!("timed out after {}s", hook.timeout.as_secs_f64()));
    }
    match finished.exit_code {
        Some(0) => Ok(()),
        code => {
            let output = [finished.stderr.trim(), finished.stdout.trim()]
                .into_iter()
                .find(|s| !s.is_empty())
                .map(|s| format!(": {s}"))
                .unwrap_or_default();
            let status = code.map_or("killed by a signal".to_owned(), |c| {
                format!("exit code {c}")
            });
            Err(format!("{status}{output}"))
        }
    }
}

/// `${NAME}` replaced: loaf.yml's vars as written, the run's values shell-quoted; unknown
/// names are left for the shell.
fn interpolate(
    command: &str,
    vars: &BTreeMap<String, String>,
    run_vars: &BTreeMap<String, String>,
) -> String {
    let mut out = String::with_capacity(command.len());
    let mut rest = command;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return out;
        };
        let name = &after[..end];
        match (run_vars.get(name), vars.get(name)) {
            (Some(value), _) => out.push_str(&shell_quote(value)),
            (None, Some(value)) => out.push_str(value),
            (None, None) => out.push_str(&rest[start..start + 2 + end + 1]),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

/// One shell word holding exactly `value`.
fn shell_quote(value: &str) -> String {
    format!("'{}'", value.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn hook(run: &str) -> HookCommand {
        HookCommand {
            run: run.into(),
            continue_on_error: false,
            timeout: Duration::from_secs(20),
            cwd: None,
        }
    }

    fn run(hooks: &[HookCommand], run_vars: &[(&str, &str)]) -> (HooksRun, tempfile::TempDir) {
        let dir = tempfile::tempdir().expect("tempdir");
        let vars = BTreeMap::from([("GREETING".to_owned(), "hello world".to_owned())]);
        let run_vars = run_vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let result = run_hooks(
            hooks,
            &vars,
            &run_vars,
            dir.path(),
            &PathMap::identity(dir.path()),
        );
        (result, dir)
    }

    #[test]
    fn vars_are_interpolated_and_run_values_stay_inert() {
        let (result, dir) = run(
            &[hook(
                "echo ${GREETING} ${success} > out.txt; echo ${errors} >> out.txt; echo \"$LOAF_ERRORS\" >> out.txt",
            )],
            &[
                ("success", "false"),
                ("errors", "x'; touch injected; echo '$(touch injected2)"),
            ],
        );
        assert!(result.success, "{result:?}");
        let out = std::fs::read_to_string(dir.path().join("out.txt")).expect("written");
        assert_eq!(
            out,
            "hello world false\nx'; touch injected; echo '$(touch injected2)\nx'; touch injected; echo '$(touch injected2)\n"
        );
        assert!(!dir.path().join("injected").exists() && !dir.path().join("injected2").exists());
    }

    #[test]
    fn a_failure_stops_unless_continue_on_error() {
        let (result, dir) = run(&[hook("echo boom >&2; exit 4"), hook("touch second")], &[]);
        assert!(!result.success);
        assert_eq!(result.errors, ["echo boom >&2; exit 4: exit code 4: boom"]);
        assert!(
            !dir.path().join("second").exists(),
            "stopped at the failure"
        );
        let mut tolerant = hook("exit 1");
        tolerant.continue_on_error = true;
        let (result, dir) = run(&[tolerant, hook("touch second")], &[]);
        assert!(!result.success, "a failure is still reported");
        assert!(dir.path().join("second").exists(), "went on");
    }

    #[test]
    fn timeout_and_cwd() {
        let mut slow = hook("sleep 30");
        slow.timeout = Duration::from_millis(300);
        let (result, _dir) = run(&[slow], &[]);
        assert_eq!(result.errors, ["sleep 30: timed out after 0.3s"]);
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join("sub")).expect("mkdir");
        let mut in_sub = hook("touch here");
        in_sub.cwd = Some("sub".into());
        let result = run_hooks(
            &[in_sub],
            &BTreeMap::new(),
            &BTreeMap::new(),
            dir.path(),
            &PathMap::identity(dir.path()),
        );
        assert!(result.success);
        assert!(dir.path().join("sub/here").exists());
    }
}
