//! Paths as text, below everything else: the one module the git plumbing (`git/`) may import
//! from the rest of the crate. A path made lexical (`.` and `..` resolved without reading
//! anything), and the patterns of secret files with the globs each stands for, which both
//! the file actions' `stage.isolate` (`exec::secret_paths`) and the checkpoints that leave
//! untracked secrets out of every object (`git::secret_files`) read.
//!
//! Patterns read like `.gitignore` lines: one without a slash (`.env`, `*.pem`, `id_rsa*`)
//! names a file or folder at any depth; one with a slash (`.aws/**`), or starting with `./`
//! or `/`, is anchored at the root; `*` stays within a folder, `**` spans any; `dir/**` also
//! matches `dir` itself. See docs/sandbox-and-safety.md.

use std::path::{Component, Path, PathBuf};

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// `path` with `.` and `..` resolved as text (nothing is read).
pub(crate) fn lexical(path: &Path) -> PathBuf {
    let mut normal = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                normal.pop();
            }
            Component::CurDir => {}
            other => normal.push(other),
        }
    }
    normal
}

/// The secret files kept from replies when loaf.yml has no `stage.isolate` key, and left out
/// of every checkpoint when untracked.
pub(crate) const SECRET_FILES: [&str; 11] = [
    ".env",
    ".env.*",
    "*.pem",
    "*.key",
    "id_rsa*",
    "id_ed25519*",
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".aws/**",
    ".ssh/**",
];

/// The globs one pattern stands for (see the module's doc).
pub fn pattern_forms(pattern: &str) -> Vec<String> {
    let pattern = pattern.trim();
    let anchored = pattern.starts_with("./") || pattern.starts_with('/');
    let trimmed = pattern
        .trim_start_matches("./")
        .trim_start_matches('/')
        .trim_end_matches('/');
    let mut out = vec![trimmed.to_owned()];
    if let Some(folder) = trimmed.strip_suffix("/**") {
        out.push(folder.to_owned());
    }
    if !anchored && !trimmed.contains('/') {
        out.push(format!("**/{trimmed}"));
    }
    out
}

/// One glob of a pattern's form: `*` does not cross a `/`.
pub fn pattern_glob(form: &str) -> Result<globset::Glob, globset::Error> {
    GlobBuilder::new(form).literal_separator(true).build()
}

/// A pattern that is not a glob, or a set that cannot be built (then `pattern` names them
/// all).
#[derive(Debug)]
pub struct PatternError {
    /// The pattern.
    pub pattern: String,
    /// What globset said.
    pub error: globset::Error,
}

/// One set of every glob `patterns` stand for.
pub fn pattern_set<S: AsRef<str>>(patterns: &[S]) -> Result<GlobSet, PatternError> {
    let mut set = GlobSetBuilder::new();
    for pattern in patterns {
        let pattern = pattern.as_ref();
        for form in pattern_forms(pattern) {
            let glob = pattern_glob(&form).map_err(|error| PatternError {
                pattern: pattern.to_owned(),
                error,
            })?;
            set.add(glob);
        }
    }
    set.build().map_err(|error| PatternError {
        pattern: patterns
            .iter()
            .map(AsRef::as_ref)
            .collect::<Vec<_>>()
            .join(", "),
        error,
    })
}
