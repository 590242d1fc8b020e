//! Signed commits, as `git commit -S` makes them (docs/apply.md, "Your git hooks and commit
//! signing").
//!
//! libgit2 signs nothing, and re-implementing git's signing (OpenPGP through `gpg.program`,
//! ssh through `ssh-keygen -Y sign` with `gpg.ssh.program` and `user.signingkey` that may be a
//! file, a literal key or `key::…`, an agent, `gpg.ssh.defaultKeyCommand`; x509 through
//! `gpgsm`) would drift from git's behaviour. So a signed commit is handed to git itself:
//! `git commit-tree -S[<key>]` with the tree, the parents, the message on stdin and the
//! user's identity and dates in `GIT_AUTHOR_*`/`GIT_COMMITTER_*`, which writes exactly the
//! commit [`super::commit::write_commit`] would, plus its signature. A signing failure is
//! git's own message, and the caller refuses to publish.

use std::io::Write as _;
use std::process::{Command, Stdio};

use git2::{Oid, Repository, Signature};

/// Whether to sign, as the command line asks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum SignRequest {
    /// As `commit.gpgSign` says (git's default).
    #[default]
    AsConfigured,
    /// `--no-gpg-sign`: never.
    Never,
    /// `--gpg-sign[=<key>]`: always, with `<key>` or `user.signingKey` / the default key.
    With(Option<String>),
}

impl SignRequest {
    /// The request from `--gpg-sign[=KEY]` (`Some(None)` without a key) and `--no-gpg-sign`
    /// (the later flag wins in git; clap cannot tell the order, so `--no-gpg-sign` wins).
    pub fn from_flags(gpg_sign: Option<Option<String>>, no_gpg_sign: bool) -> SignRequest {
        match (gpg_sign, no_gpg_sign) {
            (_, true) => SignRequest::Never,
            (Some(key), false) => SignRequest::With(key.filter(|k| !k.is_empty())),
            (None, false) => SignRequest::AsConfigured,
        }
    }

    /// `None`: do not sign; `Some(key)`: sign, with `key` when one is named. Reads
    /// `commit.gpgSign` only when the request leaves it to the configuration.
    pub fn resolve(&self, repo: &Repository) -> Option<Option<String>> {
        match self {
            SignRequest::Never => None,
            SignRequest::With(key) => Some(key.clone()),
            SignRequest::AsConfigured => {
                let on = repo
                    .config()
                    .and_then(|c| c.get_bool("commit.gpgsign"))
                    .unwrap_or(false);
                on.then_some(None)
            }
        }
    }
}

/// Why a signed commit could not be written.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SignError {
    /// git could not sign (no key, agent refused, gpg failed): its own message.
    #[error("signing the commit failed: {0}")]
    Refused(String),
    /// git could not be run at all.
    #[error("signing the commit needs git: {0}")]
    Spawn(#[from] std::io::Error),
    /// The identity, tree or parents could not be read.
    #[error("signing the commit: {}", super::words::plain(.0))]
    Git(#[from] git2::Error),
}

impl SignError {
    /// The error as a git error, for operations that report it as one (squash).
    pub fn into_git(self) -> git2::Error {
        match self {
            SignError::Git(error) => error,
            other => git2::Error::from_str(&other.to_string()),
        }
    }
}

/// The commit of `tree` on `parents` with `message` and the user's identity, signed when
/// `request` (or `commit.gpgSign`) asks for it: [`write_signed_commit`], else
/// [`super::commit::write_commit`].
pub(crate) fn write_commit(
    repo: &Repository,
    tree: Oid,
    parents: &[Oid],
    message: &str,
    request: &SignRequest,
) -> Result<Oid, SignError> {
    match request.resolve(repo) {
        None => Ok(super::commit::write_commit(repo, tree, parents, message)?),
        Some(key) => write_signed_commit(repo, tree, parents, message, key.as_deref()),
    }
}

/// Writes the commit of `tree` on `parents` with `message` and the user's identity, signed
/// by git with `key` (`None`: `user.signingKey` or the signing program's default), without
/// moving any ref.
pub(crate) fn write_signed_commit(
    repo: &Repository,
    tree: Oid,
    parents: &[Oid],
    message: &str,
    key: Option<&str>,
) -> Result<Oid, SignError> {
    let author = super::identity::identity(repo, "AUTHOR")?;
    let committer = super::identity::identity(repo, "COMMITTER")?;
    let mut command = Command::new("git");
    command
        .arg("commit-tree")
        .arg(tree.to_string())
        .arg(match key {
            Some(key) => format!("-S{key}"),
            None => "-S".to_owned(),
        })
        .arg("-F")
        .arg("-");
    for parent in parents {
        command.arg("-p").arg(parent.to_string());
    }
    // The user's repository, whatever the environment git-loaf was started in names.
    for name in ["GIT_INDEX_FILE", "GIT_WORK_TREE", "GIT_OBJECT_DIRECTORY"] {
        command.env_remove(name);
    }
    command.env("GIT_DIR", repo.path());
    command.current_dir(repo.workdir().unwrap_or(repo.path()));
    for (role, who) in [("AUTHOR", &author), ("COMMITTER", &committer)] {
        command.env(format!("GIT_{role}_NAME"), lossy(who.name_bytes()));
        command.env(format!("GIT_{role}_EMAIL"), lossy(who.email_bytes()));
        command.env(format!("GIT_{role}_DATE"), git_date(who));
    }
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    if let Some(mut stdin) = child.stdin.take() {
        // A git that failed early closes its stdin: its exit status says why, below.
        let _ = stdin.write_all(message.as_bytes());
    }
    let output = child.wait_with_output()?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    match Oid::from_str(stdout.trim()) {
        Ok(oid) if output.status.success() => Ok(oid),
        _ => {
            let stderr = String::from_utf8_lossy(&output.stderr).trim().to_owned();
            Err(SignError::Refused(if stderr.is_empty() {
                format!("git commit-tree -S ended with {}", output.status)
            } else {
                stderr
            }))
        }
    }
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `@<seconds> <±hhmm>`: git's raw date form, so the signed commit has the same dates as an
/// unsigned one would.
fn git_date(who: &Signature<'_>) -> String {
    let when = who.when();
    let offset = when.offset_minutes();
    let sign = if offset < 0 { '-' } else { '+' };
    let offset = offset.abs();
    format!(
        "@{} {sign}{:02}{:02}",
        when.seconds(),
        offset / 60,
        offset % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_become_a_request() {
        assert_eq!(
            SignRequest::from_flags(None, false),
            SignRequest::AsConfigured
        );
        assert_eq!(
            SignRequest::from_flags(Some(None), false),
            SignRequest::With(None)
        );
        assert_eq!(
            SignRequest::from_flags(Some(Some("ABC".into())), false),
            SignRequest::With(Some("ABC".into()))
        );
        assert_eq!(
            SignRequest::from_flags(Some(None), true),
            SignRequest::Never
        );
    }

    #[test]
    fn dates_keep_their_zone() {
        let who =
            Signature::new("A", "a@x", &git2::Time::new(1_700_000_000, -330)).expect("signature");
        assert_eq!(git_date(&who), "@1700000000 -0530");
        let who = Signature::new("A", "a@x", &git2::Time::new(5, 120)).expect("signature");
        assert_eq!(git_date(&who), "@5 +0200");
    }
}
