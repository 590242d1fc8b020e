//! Running a reply's blocks where a [`PathMap`] says (the stage of a transaction, or the
//! folder itself): before hooks, every valid action in order, after hooks, one result
//! (docs/apply.md). What each `exec` block changed is heard through a [`ChangeWatch`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::check::CheckedReply;
use crate::actions::{self, Action};
use crate::config::{Config, HookCommand};
use crate::exec::guard::FsGuard;
use crate::exec::hooks::{self, Hook};
use crate::exec::sandbox::Sandbox;
use crate::exec::secret_paths::Isolation;
use crate::exec::{self, ActionOutcome, PathMap, Workspace};
use crate::report::{ActionResult, ExecutionResult, HookErrors};

/// `stage.isolate` for the file actions at `real_root`; whether a path is tracked is asked
/// of the repository at `user_root` (the user's index: the stage's holds their untracked
/// files too), opened on the first isolated path met.
fn isolation(
    config: &Config,
    real_root: &Path,
    user_root: &Path,
) -> Result<Isolation, globset::Error> {
    let real_root = std::fs::canonicalize(real_root).unwrap_or_else(|_| real_root.to_path_buf());
    Isolation::new(
        &config.stage.isolate,
        &real_root,
        config.stage.isolate_built_in,
        crate::tx::visible_ignored::tracked_in(user_root),
    )
}

/// What code changed in the workspace, relative to the root, each list sorted: what the
/// commit would record (ignored files, such as build caches, are not in it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    /// Files that did not exist before.
    pub created: Vec<PathBuf>,
    /// Files whose content, mode or kind changed.
    pub changed: Vec<PathBuf>,
    /// Files that no longer exist.
    pub deleted: Vec<PathBuf>,
}

/// Tells what each `exec` block changed: the transaction looks at its stage before and after
/// each one (a run outside a transaction has none, and its exec results name no files).
pub trait ChangeWatch {
    /// Something other than exec code may have written to the workspace: a write action
    /// (`Some`: its result, which names its targets) or hooks (`None`: anything). The state
    /// last seen is stale there.
    fn written(&self, action: Option<&ActionResult>);
    /// Records the state the next code starts from.
    fn before(&self);
    /// What changed since [`ChangeWatch::before`]; `None` when it cannot tell.
    fn after(&self) -> Option<Changes>;
}

/// Paths of each kind kept in an exec result's data (the rest counted in `<kind>_more`):
/// the trailer and the note carry the data, and a build may create thousands of files.
pub const CHANGES_KEPT: usize = 100;

/// [`super::loaf::execute`], with folders or files (real paths) no action may touch and the reason each
/// refusal gives: the transaction fences off submodules, which the stage does not check
/// out, and paths outside a sparse checkout.
pub fn execute_fenced(
    reply: &CheckedReply<'_>,
    config: &Config,
    paths: &PathMap,
    fences: Vec<(PathBuf, String)>,
    sandbox: Option<&Sandbox>,
    watch: Option<&dyn ChangeWatch>,
) -> ExecutionResult {
    let root = paths.user_root();
    // A reply with no block at all succeeds here, as in the seed's library; the command
    // line refuses it before getting this far (see [`super::check::no_block_result`]).
    let plan = &reply.plan;
    // Inside a transaction the guard checks real (stage) paths, so its patterns resolve
    // from the real place of loaf.yml's folder.
    let config_dir = paths.to_real(&config.dir);
    let real_root = paths.to_real(root);
    // Whatever loaf.yml allows, git's own files stay git's: the git dir of the repository
    // actions run in (inside a transaction the stage's, whose common dir is the user's).
    let git_dirs = crate::git::states::git_dirs(&real_root);
    let guard = FsGuard::new(config.fs_guard.as_ref(), &real_root, &config_dir)
        .map_err(|e| e.to_string())
        .and_then(|guard| {
            let isolation = isolation(config, &real_root, root).map_err(|e| e.to_string())?;
            Ok(guard.fenced(fences).protect(git_dirs).isolating(isolation))
        });
    let guard = match guard {
        Ok(guard) => guard,
        Err(error) => {
            return ExecutionResult {
                fatal_error: Some(format!("loaf.yml: {error}")),
                ..ExecutionResult::default()
            };
        }
    };
    let before = hooks::run_hooks_in(
        &to_hooks(&config.hooks.before),
        &config.vars,
        root,
        paths,
        sandbox,
    );
    if !before.success {
        return ExecutionResult {
            fatal_error: Some("Before hooks failed - aborting execution".into()),
            hook_errors: Some(HookErrors {
                before: before.errors,
                after: Vec::new(),
            }),
            ..ExecutionResult::default()
        };
    }
    let ws = Workspace {
        guard: &guard,
        paths,
        max_file_size: config.max_file_size,
        exec_timeout: config.exec.timeout,
        max_output: config.exec.max_output,
        sandbox,
    };
    if !config.hooks.before.is_empty()
        && let Some(watch) = watch
    {
        watch.written(None);
    }
    let results: Vec<ActionResult> = plan
        .actions
        .iter()
        .enumerate()
        .map(|(i, action)| run_watched(i + 1, action, config, &ws, watch))
        .collect();
    let succeeded = plan.errors.is_empty() && results.iter().all(|r| r.success);
    let mut vars = config.vars.clone();
    vars.extend(run_vars(succeeded, plan.total_blocks, &results));
    if !config.hooks.after.is_empty()
        && let Some(watch) = watch
    {
        watch.written(None);
    }
    let after = hooks::run_hooks_in(&to_hooks(&config.hooks.after), &vars, root, paths, sandbox);
    // Every failure is recorded, tolerated ones (continueOnError) included; only the others
    // make the run unsuccessful (the seed counts after-hook failures).
    let hook_errors =
        (!before.errors.is_empty() || !after.errors.is_empty()).then_some(HookErrors {
            before: before.errors,
            after: after.errors,
        });
    ExecutionResult {
        warnings: plan.warnings.clone(),
        success: succeeded && after.success,
        total_blocks: plan.total_blocks,
        executed_actions: results.len(),
        results,
        parse_errors: plan.errors.clone(),
        hook_errors,
        ..ExecutionResult::default()
    }
}

/// loaf.yml's hook commands as the hook runner takes them.
fn to_hooks(commands: &[HookCommand]) -> Vec<Hook> {
    commands
        .iter()
        .map(|c| Hook {
            run: c.run.clone(),
            continue_on_error: c.continue_on_error,
            timeout: c.timeout,
            cwd: c.cwd.as_ref().map(PathBuf::from),
        })
        .collect()
}

/// The run's values for after hooks: the hook runner's names (upper case and the seed's),
/// plus the seed's `operations`.
fn run_vars(
    success: bool,
    total_blocks: usize,
    results: &[ActionResult],
) -> BTreeMap<String, String> {
    let mut modified: Vec<String> = Vec::new();
    for result in results.iter().filter(|r| r.success) {
        let writes = actions::Schema::get()
            .tool(&result.action)
            .is_some_and(|t| t.kind == "write");
        for key in ["path", "old_path", "new_path"] {
            if let (true, Some(path)) = (writes, result.params.get(key).and_then(|v| v.as_str()))
                && !modified.iter().any(|m| m == path)
            {
                modified.push(path.to_owned());
            }
        }
    }
    let errors: Vec<String> = results
        .iter()
        .filter_map(|r| {
            r.error.as_ref().map(|e| {
                format!(
                    "{}: {}",
                    r.action,
                    crate::report::error_message(&r.action, e)
                )
            })
        })
        .collect();
    let failed = results.iter().filter(|r| !r.success).count();
    let mut vars = hooks::run_context_vars(
        success,
        total_blocks,
        results.len(),
        failed,
        &modified,
        &errors,
    );
    let operations: Vec<String> = results
        .iter()
        .map(|r| format!("{}{}", r.action, if r.success { "" } else { " (failed)" }))
        .collect();
    vars.insert("operations".to_owned(), operations.join(","));
    vars.insert("OPERATIONS".to_owned(), operations.join(","));
    vars
}

/// Runs one action; an exec block's result names what it changed, and `watch` hears of
/// every other action that may write.
fn run_watched(
    seq: usize,
    action: &Action,
    config: &Config,
    ws: &Workspace<'_>,
    watch: Option<&dyn ChangeWatch>,
) -> ActionResult {
    let Some(watch) = watch else {
        return run_action(seq, action, config, ws);
    };
    if action.name != "exec" || !config.allows("exec") {
        let reads = actions::Schema::get()
            .tool(&action.name)
            .is_some_and(|t| t.kind == "read" || t.kind == "meta");
        let result = run_action(seq, action, config, ws);
        if !reads {
            watch.written(Some(&result));
        }
        return result;
    }
    watch.before();
    let mut result = run_action(seq, action, config, ws);
    if let Some(changes) = watch.after() {
        add_changes(&mut result, &changes, ws.paths.user_root());
    }
    result
}

/// Puts what an exec block changed into its data (`created`, `changed`, `deleted`: the
/// user's paths, at most [`CHANGES_KEPT`] of each, the rest counted in `<kind>_more`).
fn add_changes(result: &mut ActionResult, changes: &Changes, root: &Path) {
    let Some(serde_json::Value::Object(data)) = result.data.as_mut() else {
        return;
    };
    for (kind, paths) in [
        ("created", &changes.created),
        ("changed", &changes.changed),
        ("deleted", &changes.deleted),
    ] {
        if paths.is_empty() {
            continue;
        }
        let shown: Vec<serde_json::Value> = paths
            .iter()
            .take(CHANGES_KEPT)
            .map(|p| root.join(p).display().to_string().into())
            .collect();
        data.insert(kind.into(), shown.into());
        if paths.len() > CHANGES_KEPT {
            data.insert(format!("{kind}_more"), (paths.len() - CHANGES_KEPT).into());
        }
    }
}

/// Runs one action, if loaf.yml allows it.
fn run_action(seq: usize, action: &Action, config: &Config, ws: &Workspace<'_>) -> ActionResult {
    let outcome = if !config.allows(&action.name) {
        let file = ws.paths.to_user(&config.dir.join(crate::config::FILE_NAME));
        ActionOutcome::fail(not_enabled(&action.name, config, &file))
    } else if action.name == "exec" {
        exec::shell::run_exec(&action.params_with_defaults(), ws)
    } else {
        exec::fs::run(&action.name, &action.params_with_defaults(), ws)
    };
    ActionResult {
        seq,
        block_id: action.block_id.clone(),
        action: action.name.clone(),
        params: action.params.clone(),
        success: outcome.success,
        error: outcome.error,
        data: outcome.data,
        start_line: action.start_line,
    }
}

/// Why an action that exists was refused, and the loaf.yml line that enables it. The
/// message does not start with the action's name: the report line already shows it.
pub fn not_enabled(action: &str, config: &Config, loaf_yml: &Path) -> String {
    let file = loaf_yml.display();
    let why = if action == "exec" {
        "not enabled: exec runs code, so replies may use it only when loaf.yml allows it. "
    } else {
        "not enabled by allowed-actions in loaf.yml. "
    };
    match config.allowed_actions {
        // No list yet: the defaults plus this one, nothing else widened.
        None => format!(
            "{why}To enable it, put `allowed-actions: [defaults, {action}]` in {file} (the default actions plus {action})"
        ),
        // The user chose a list: only add to it.
        Some(_) => format!("{why}To enable it, add {action} to the allowed-actions list in {file}"),
    }
}
