//! Secret files that never enter an object git-loaf writes (docs/sandbox-and-safety.md, "Secrets:
//! what is kept out"): an untracked `.env`, a key or a credentials folder the user forgot to ignore
//! is left out of checkpoints, and so of the stage's start commit, of what a forced undo or
//! step-back saves, and of record mode's turns. Those objects are listed by `git log --all` and
//! sent by `git push --mirror`; the user's file stays where it is, untouched by undo.
//!
//! The patterns are the built-in `stage.isolate` list that `git loaf init` writes
//! ([`crate::paths::SECRET_FILES`]), read the same way. A tracked file is the
//! user's to commit: its content is in the history already.

use std::path::Path;
use std::sync::OnceLock;

use globset::GlobSet;

/// The compiled patterns; `None` if one of them is not a glob (a bug: they are constants).
fn patterns() -> Option<&'static GlobSet> {
    static SET: OnceLock<Option<GlobSet>> = OnceLock::new();
    SET.get_or_init(|| crate::paths::pattern_set(&crate::paths::SECRET_FILES).ok())
        .as_ref()
}

/// Whether `relative` (to the root, as git spells it) or one of its folders matches a
/// secret-file pattern.
pub(crate) fn is_secret(relative: &Path) -> bool {
    let Some(set) = patterns() else {
        return false;
    };
    relative
        .ancestors()
        .filter(|p| !p.as_os_str().is_empty())
        .any(|p| set.is_match(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_files_match_at_any_depth_and_inside_secret_folders() {
        for secret in [
            ".env",
            "app/.env.local",
            "certs/x.pem",
            ".aws/credentials",
            "id_rsa",
        ] {
            assert!(is_secret(Path::new(secret)), "{secret}");
        }
        for plain in ["env.rs", "src/main.rs", ".envrc.md/x", "keys.txt"] {
            assert!(!is_secret(Path::new(plain)), "{plain}");
        }
    }
}
