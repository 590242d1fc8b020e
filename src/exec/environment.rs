//! What code sees of git-loaf's environment (docs/sandbox-and-safety.md, "Secrets: what is kept
//! out"): everything but the variables whose names say they hold a secret.
//!
//! Users keep API keys and cloud tokens in their shell's environment, and git-loaf runs in
//! it; a reply's code that printed `env` would put them in the report the model reads. So
//! the code of a reply, a loaf.yml hook and a git hook get git-loaf's environment without
//! the names that contain (in any case) `KEY`, `SECRET` or `TOKEN` — the default excludes of
//! Codex's shell environment policy — nor `PASSWORD`, `PASSWD`, `PASSPHRASE`, `CREDENTIAL`,
//! nor the few credential variables those miss ([`SECRET_NAMES`]). What code needs stays:
//! `PATH`, `HOME`, `LANG`, `TERM`, the variables git-loaf sets itself for the run (`GIT_DIR`
//! of a hook, loaf.yml's `vars`), and git's `GIT_CONFIG_KEY_<n>`, which name settings.
//!
//! loaf.yml's `exec.env` changes that: `pass` lists names (or globs: `AWS_*`) given to code
//! even so, `set` sets variables for it.

use std::ffi::OsString;
use std::process::Command;

use globset::{Glob, GlobSet, GlobSetBuilder};

/// Parts of a name that mark it as a secret, compared without case.
const SECRET_PARTS: [&str; 7] = [
    "KEY",
    "SECRET",
    "TOKEN",
    "PASSWORD",
    "PASSWD",
    "PASSPHRASE",
    "CREDENTIAL",
];

/// Variables that hold or open credentials although no part of their name says so: a
/// client certificate's path, npm's registry login, MySQL's password, the ssh agent (which
/// signs and pushes as the user; the namespace sandbox hides its socket, the fallback
/// cannot).
const SECRET_NAMES: [&str; 4] = [
    "AZURE_CLIENT_CERTIFICATE_PATH",
    "NPM_CONFIG__AUTH",
    "MYSQL_PWD",
    "SSH_AUTH_SOCK",
];

/// loaf.yml's `exec.env`: what code gets beyond the default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CodeEnvironment {
    /// Names or globs (`AWS_*`) of variables passed although they look like secrets.
    pub pass: Vec<String>,
    /// Variables set for code, in loaf.yml's order.
    pub set: Vec<(String, String)>,
}

/// The default: nothing passed, nothing set (code outside any loaf.yml's reach).
pub static DEFAULT_ENVIRONMENT: CodeEnvironment = CodeEnvironment {
    pass: Vec::new(),
    set: Vec::new(),
};

impl CodeEnvironment {
    /// All of this process's environment, secrets included: for a program the user runs on
    /// purpose with it (lorch's model command needs its API key), never for a reply's code.
    pub fn whole() -> CodeEnvironment {
        CodeEnvironment {
            pass: vec!["*".to_owned()],
            set: Vec::new(),
        }
    }

    /// Whether this is the default (nothing passed, nothing set).
    pub fn is_default(&self) -> bool {
        self.pass.is_empty() && self.set.is_empty()
    }

    /// Makes `command` run with this process's environment without its secrets (except the
    /// ones passed), and with the variables set. Call it before anything else sets the
    /// command's variables: what git-loaf sets for the run stands.
    pub(crate) fn apply(&self, command: &mut Command) {
        let passed = pass_set(&self.pass).unwrap_or_else(|_| GlobSet::empty());
        for name in withheld(std::env::vars_os().map(|(name, _)| name), &passed) {
            command.env_remove(name);
        }
        for (name, value) in &self.set {
            command.env(name, value);
        }
    }
}

/// `pass` as one matcher; an entry that is not a valid glob is the error (loaf.yml refuses
/// it when loaded).
pub(crate) fn pass_set(pass: &[String]) -> Result<GlobSet, globset::Error> {
    let mut builder = GlobSetBuilder::new();
    for pattern in pass {
        builder.add(Glob::new(pattern)?);
    }
    builder.build()
}

/// Whether code does not get the variable `name` by default.
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    if git_config_key(&upper) {
        return false;
    }
    SECRET_PARTS.iter().any(|part| upper.contains(part)) || SECRET_NAMES.contains(&upper.as_str())
}

/// `GIT_CONFIG_KEY_<n>`: names a setting given to git through the environment (its value
/// is `GIT_CONFIG_VALUE_<n>`); without it git refuses to run.
fn git_config_key(upper: &str) -> bool {
    upper
        .strip_prefix("GIT_CONFIG_KEY_")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The names among `names` that code does not get.
fn withheld(names: impl Iterator<Item = OsString>, passed: &GlobSet) -> Vec<OsString> {
    names
        .filter(|name| {
            let name = name.to_string_lossy();
            is_secret_name(&name) && !passed.is_match(name.as_ref())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_hold_secrets_are_withheld_and_the_rest_kept() {
        for secret in [
            "OPENAI_API_KEY",
            "my_api_key",
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN",
            "GITHUB_TOKEN",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "AZURE_CLIENT_SECRET",
            "AZURE_CLIENT_CERTIFICATE_PATH",
            "PGPASSWORD",
            "MYSQL_PWD",
            "SSH_AUTH_SOCK",
        ] {
            assert!(is_secret_name(secret), "{secret}");
        }
        for kept in [
            "PATH",
            "HOME",
            "LANG",
            "TERM",
            "GIT_DIR",
            "GIT_AUTHOR_NAME",
            "GIT_CONFIG_KEY_0",
            "GIT_CONFIG_VALUE_0",
            "CARGO_HOME",
            "AWS_REGION",
        ] {
            assert!(!is_secret_name(kept), "{kept}");
        }
    }

    #[test]
    fn the_whole_environment_withholds_nothing() {
        let names = ["MY_API_KEY", "GH_TOKEN"].map(OsString::from);
        let passed = pass_set(&CodeEnvironment::whole().pass).expect("globs");
        assert!(withheld(names.into_iter(), &passed).is_empty());
    }

    #[test]
    fn passed_names_and_globs_are_kept() {
        let names = ["MY_API_KEY", "AWS_SECRET_ACCESS_KEY", "GH_TOKEN", "PATH"].map(OsString::from);
        let passed = pass_set(&["MY_API_KEY".to_owned(), "AWS_*".to_owned()]).expect("globs");
        assert_eq!(
            withheld(names.into_iter(), &passed),
            [OsString::from("GH_TOKEN")]
        );
    }
}
