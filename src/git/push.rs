//! Pushing a rewritten branch with the git CLI (the user's remotes, credentials and hooks
//! as `git push` has them): the branch's upstream as configured (`branch.<b>.remote`,
//! `branch.<b>.merge`), and a push guarded by `--force-with-lease` on what the
//! remote-tracking ref held before the rewrite, so that work pushed by someone else since
//! the last fetch is never overwritten.

use std::path::Path;
use std::process::Command;

use git2::{Oid, Repository};

/// Where a branch pushes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upstream {
    /// The remote's name (`origin`).
    pub remote: String,
    /// The branch on the remote (`refs/heads/main`).
    pub remote_ref: String,
    /// The remote-tracking ref (`refs/remotes/origin/main`).
    pub tracking: String,
    /// What the remote-tracking ref holds (`None`: never fetched, the lease then expects the
    /// remote branch not to exist).
    pub lease: Option<Oid>,
}

/// Why a push failed. The remote is untouched either way.
#[derive(Debug, thiserror::Error)]
pub enum PushError {
    /// The remote branch is no longer what the remote-tracking ref says: someone pushed.
    #[error(
        "the remote branch {remote_ref} on {remote} moved since it was last fetched: nothing was pushed"
    )]
    RemoteMoved {
        /// The remote.
        remote: String,
        /// The branch on it.
        remote_ref: String,
        /// What git said.
        stderr: String,
    },
    /// git push failed for another reason (network, permissions, hooks).
    #[error("git push failed: {stderr}")]
    Failed {
        /// What git said.
        stderr: String,
    },
    /// git could not be run.
    #[error("cannot run git: {0}")]
    Spawn(#[from] std::io::Error),
}

/// The upstream of `branch_ref` (`refs/heads/<b>`), `None` when none is configured.
pub fn upstream(repo: &Repository, branch_ref: &str) -> Result<Option<Upstream>, git2::Error> {
    let Some(branch) = branch_ref.strip_prefix("refs/heads/") else {
        return Ok(None);
    };
    let config = repo.config()?;
    let (Ok(remote), Ok(remote_ref)) = (
        config.get_string(&format!("branch.{branch}.remote")),
        config.get_string(&format!("branch.{branch}.merge")),
    ) else {
        return Ok(None);
    };
    // `.` is the repository itself: there is nothing to push to.
    if remote == "." {
        return Ok(None);
    }
    let Ok(tracking) = repo.branch_upstream_name(branch_ref) else {
        return Ok(None);
    };
    let Ok(tracking) = tracking.as_str().map(str::to_owned) else {
        return Ok(None);
    };
    let lease = repo.refname_to_id(&tracking).ok();
    Ok(Some(Upstream {
        remote,
        remote_ref,
        tracking,
        lease,
    }))
}

/// `git push --force-with-lease=<remote ref>:<lease> <remote> <branch>:<remote ref>` (or
/// `--force`) in `workdir`, with the user's environment.
pub fn push(
    workdir: &Path,
    branch_ref: &str,
    upstream: &Upstream,
    force: bool,
) -> Result<(), PushError> {
    let guard = if force {
        "--force".to_owned()
    } else {
        let lease = upstream.lease.map(|o| o.to_string()).unwrap_or_default();
        format!("--force-with-lease={}:{lease}", upstream.remote_ref)
    };
    let out = Command::new("git")
        .args(["push", "--porcelain", &guard, &upstream.remote])
        .arg(format!("{branch_ref}:{}", upstream.remote_ref))
        .current_dir(workdir)
        .output()?;
    if out.status.success() {
        return Ok(());
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr).trim().to_owned();
    // `--porcelain` reports a failed lease as `!\t<src>:<dst>\t[rejected] (stale info)`.
    if stdout.contains("stale info") || stderr.contains("stale info") {
        return Err(PushError::RemoteMoved {
            remote: upstream.remote.clone(),
            remote_ref: upstream.remote_ref.clone(),
            stderr,
        });
    }
    let detail = if stderr.is_empty() {
        stdout.trim().to_owned()
    } else {
        stderr
    };
    Err(PushError::Failed { stderr: detail })
}
