//! git-loaf as a library: a root (repository or folder) with its loaf.yml, running a reply
//! in place, without a git transaction (`apply --no-commit`), its code in the same sandbox
//! as in a transaction (docs/sandbox-and-safety.md).

use std::path::{Path, PathBuf};

use super::check::{CheckedReply, check};
use super::execute::execute_fenced;
use crate::config::{Config, ConfigError};
use crate::exec::PathMap;
use crate::exec::sandbox::Sandbox;
use crate::report::ExecutionResult;

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
    /// Reads `root/loaf.yml` as it is (defaults without one). In a repository where a reply
    /// may have written it, [`crate::ops::config::load`] gives the one the user accepted
    /// (docs/loaf-yml.md, "A loaf.yml a reply writes waits for you"), for [`Loaf::with_config`].
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

    /// Runs a reply directly in the root (no git transaction). Code (exec, hooks) runs in a
    /// sandbox that keeps it from the git dir, the rest of the filesystem and the network,
    /// as in a transaction (docs/sandbox-and-safety.md); only the root is written in place.
    pub fn execute(&self, reply: &str) -> ExecutionResult {
        self.execute_checked(&check(reply, &self.root))
    }

    /// [`Loaf::execute`], of a reply already checked (against this root).
    pub fn execute_checked(&self, reply: &CheckedReply<'_>) -> ExecutionResult {
        // Only a reply that runs code needs the sandbox (and the probe for namespaces).
        let sandbox = runs_code(reply, &self.config).then(|| {
            let common = crate::git::states::discover(&self.root)
                .ok()
                .map(|repo| repo.commondir().to_path_buf());
            Sandbox::in_place(&self.root, common.as_deref())
                .with_policy(sandbox_policy(&self.config))
        });
        execute_fenced(
            reply,
            &self.config,
            &PathMap::identity(&self.root),
            Vec::new(),
            sandbox.as_ref(),
            None,
        )
    }
}

/// Whether the reply or loaf.yml will run code (exec blocks, hooks): only then is a sandbox
/// made (and, in a transaction, the user's ignored entries listed for it).
pub(crate) fn runs_code(reply: &CheckedReply<'_>, config: &Config) -> bool {
    let hooks = !config.hooks.before.is_empty() || !config.hooks.after.is_empty();
    hooks || reply.runs_exec()
}

/// What loaf.yml allows code beyond the stage (`exec.network`, `exec.writable`,
/// `exec.sandbox`).
pub(crate) fn sandbox_policy(config: &Config) -> crate::exec::sandbox::Policy {
    crate::exec::sandbox::Policy {
        network: config.exec.network,
        writable: config.exec.writable.clone(),
        unisolated_allowed: config.exec.sandbox_off,
        env: config.exec.env.clone(),
    }
}

/// Runs `reply` where `paths` says: parse, check every block, run every valid action in
/// order. Never fails: whatever goes wrong is in the result.
pub fn execute(reply: &str, config: &Config, paths: &PathMap) -> ExecutionResult {
    let reply = check(reply, paths.user_root());
    execute_fenced(&reply, config, paths, Vec::new(), None, None)
}
