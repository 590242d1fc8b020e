//! Running a reply without a git transaction (`apply --no-commit`; later also the part of a
//! transaction that happens inside the stage): load loaf.yml, check every block, run every
//! valid action in order, and report.

use std::path::{Path, PathBuf};

use crate::actions::{self, Action};
use crate::config::{Config, ConfigError};
use crate::exec::guard::FsGuard;
use crate::exec::{self, Outcome, PathMap, Workspace};
use crate::nesl;
use crate::report::{ActionResult, ExecutionResult};

/// git-loaf for library users: a root (repository or folder) with its loaf.yml.
///
/// ```no_run
/// let loaf = git_loaf::Loaf::open(std::path::Path::new("/repo"))?;
/// let result = loaf.execute("#!nesl [@three-char-SHA-256: ab1]\naction = \"file_read\"\npath = \"/repo/README.md\"\n#!end_ab1\n");
/// println!("{}", result.to_text());
/// # Ok::<(), git_loaf::config::ConfigError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Loaf {
    root: PathBuf,
    config: Config,
}

impl Loaf {
    /// Reads `root/loaf.yml` (defaults without one).
    pub fn open(root: &Path) -> Result<Loaf, ConfigError> {
        Ok(Loaf {
            root: root.to_path_buf(),
            config: Config::load(root)?,
        })
    }

    /// With a configuration already loaded.
    pub fn with_config(root: &Path, config: Config) -> Loaf {
        Loaf {
            root: root.to_path_buf(),
            config,
        }
    }

    /// Runs a reply directly in the root (no git transaction).
    pub fn execute(&self, reply: &str) -> ExecutionResult {
        execute(reply, &self.config, &PathMap::identity(&self.root))
    }
}

/// Runs `reply` where `paths` says: parse, check every block, run every valid action in
/// order. Never fails: whatever goes wrong is in the result.
pub fn execute(reply: &str, config: &Config, paths: &PathMap) -> ExecutionResult {
    let root = paths.user_root();
    let guard = match FsGuard::new(config.fs_guard.as_ref(), &paths.to_real(root), &config.dir) {
        Ok(guard) => guard,
        Err(error) => {
            return ExecutionResult {
                fatal_error: Some(format!("loaf.yml: {error}")),
                ..ExecutionResult::default()
            };
        }
    };
    let parsed = nesl::parse(reply);
    let plan = actions::plan(reply, &parsed, root);
    let ws = Workspace {
        guard: &guard,
        paths,
        max_file_size: config.max_file_size,
        exec_timeout: config.exec.timeout,
        max_output: config.exec.max_output,
    };
    let results: Vec<ActionResult> = plan
        .actions
        .iter()
        .enumerate()
        .map(|(i, action)| run_action(i + 1, action, config, &ws))
        .collect();
    ExecutionResult {
        success: plan.errors.is_empty() && results.iter().all(|r| r.success),
        total_blocks: plan.total_blocks,
        executed_actions: results.len(),
        results,
        parse_errors: plan.errors,
        ..ExecutionResult::default()
    }
}

/// Runs one action, if loaf.yml allows it.
fn run_action(seq: usize, action: &Action, config: &Config, ws: &Workspace<'_>) -> ActionResult {
    let outcome = if !config.allows(&action.name) {
        Outcome::fail(format!(
            "{name}: not enabled in loaf.yml. To let replies run it, add it to allowed-actions in {file} \
             (e.g. `allowed-actions: [file_write, file_read, {name}]`)",
            name = action.name,
            file = ws
                .paths
                .to_user(&config.dir.join(crate::config::FILE_NAME))
                .display(),
        ))
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
    }
}
