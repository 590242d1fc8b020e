//! The fs-guard: which paths actions may read and write (docs/loaf-yml.md).
//!
//! Patterns are globs (`*` stays within one path segment, `**` spans any number); relative
//! ones resolve from loaf.yml's folder. A checked path is canonicalized first — symlinks
//! resolved, and for a path that does not exist yet, its nearest existing parent — so a
//! symlink or `..` cannot lead outside. Among the patterns that match, the most specific
//! wins (the one with the most path segments free of wildcards); on a tie, deny wins. No
//! match: denied. Without an `fs-guard` key: the root is allowed for reading and writing,
//! its `.git` denied, everything else denied.
//!
//! A refusal names the rule: the pattern that matched and the loaf.yml key it is in
//! (`fs-guard.write.deny`), or that no pattern of `fs-guard.<access>.allow` matched; paths
//! that `stage.isolate` keeps from replies ([`FsGuard::isolating`]) are refused with that
//! pattern and key.
//!
//! Whatever the rules say, the repository's git directories ([`FsGuard::protect`]) and the
//! root's `.git` (in any letter case, file or folder) are never read or written, nor is a
//! `.git` anywhere below the root written (git cannot record such a path); and fenced
//! places ([`FsGuard::fenced`]: submodules, paths outside a sparse checkout) are refused
//! with their own reason.

use std::collections::BTreeMap;
use std::io;
use std::path::{Component, Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};
use serde::Deserialize;

use super::secret_paths::Isolation;
use super::{Access, AccessCheck};

/// `ELOOP`, which std cannot name on stable yet (`ErrorKind::FilesystemLoop`).
const ELOOP: i32 = if cfg!(target_os = "linux") { 40 } else { 62 };

/// A pattern in loaf.yml that is not a valid glob.
#[derive(Debug, thiserror::Error)]
#[error("fs-guard: invalid pattern '{pattern}': {error}")]
pub struct GuardError {
    /// The pattern as written.
    pub pattern: String,
    /// What is wrong with it.
    pub error: globset::Error,
}

/// One allow or deny pattern, made absolute.
#[derive(Debug, Clone)]
struct Rule {
    /// As loaf.yml writes it, for messages.
    pattern: String,
    matchers: Vec<GlobMatcher>,
    allow: bool,
    specificity: usize,
}

/// The rules of one access kind, and the allowed patterns as messages show them.
#[derive(Debug, Clone)]
struct RuleSet {
    rules: Vec<Rule>,
    allowed: Vec<String>,
}

/// Decides what actions may read and write.
#[derive(Debug, Clone)]
pub struct FsGuard {
    read: RuleSet,
    write: RuleSet,
    /// The root, canonical: its `.git` is never touched.
    root: PathBuf,
    /// Git directories (canonical) never touched.
    protected: Vec<PathBuf>,
    /// Places no action may touch, by path: looked up for each ancestor of a checked path,
    /// so that thousands of fences (a sparse checkout) cost a few lookups per check.
    fences: BTreeMap<PathBuf, String>,
    /// Where the rules come from, as messages name it.
    source: &'static str,
    /// What `stage.isolate` keeps from replies.
    isolation: Option<Isolation>,
}

/// loaf.yml's `fs-guard`: globs allowed and denied, for reading and for writing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FsGuardConfig {
    /// Reading files and listing directories.
    #[serde(default)]
    pub read: GuardRules,
    /// Creating, changing, moving, deleting.
    #[serde(default)]
    pub write: GuardRules,
}

/// Allowed and denied globs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GuardRules {
    /// Globs that allow.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Globs that deny.
    #[serde(default)]
    pub deny: Vec<String>,
}

/// The guard without a `fs-guard` key in loaf.yml: the root allowed for reading and writing,
/// `.git` denied (patterns relative to the root).
pub(crate) fn built_in_rules() -> FsGuardConfig {
    let rules = GuardRules {
        allow: vec!["./**".into()],
        deny: vec!["./.git".into(), "./.git/**".into()],
    };
    FsGuardConfig {
        read: rules.clone(),
        write: rules,
    }
}

impl FsGuard {
    /// The guard for `config` (loaf.yml's `fs-guard`, or the defaults when `None`), with
    /// relative patterns resolved from `config_dir`; `root` is the repository root (or the
    /// current directory outside a repository).
    pub fn new(
        config: Option<&FsGuardConfig>,
        root: &Path,
        config_dir: &Path,
    ) -> Result<FsGuard, GuardError> {
        let defaults;
        let source = match config {
            Some(_) => "loaf.yml",
            None => {
                "the built-in defaults (loaf.yml has no fs-guard key; adding one replaces them)"
            }
        };
        let (config, base) = match config {
            Some(config) => (config, config_dir),
            None => {
                defaults = built_in_rules();
                (&defaults, root)
            }
        };
        let base = canonical_or_same(base);
        Ok(FsGuard {
            read: RuleSet::new(&config.read, &base)?,
            write: RuleSet::new(&config.write, &base)?,
            root: canonical_or_same(root),
            protected: Vec::new(),
            fences: BTreeMap::new(),
            source,
            isolation: None,
        })
    }

    /// Also refuses what `stage.isolate` keeps from replies.
    pub fn isolating(mut self, isolation: Isolation) -> FsGuard {
        self.isolation = Some(isolation);
        self
    }

    /// The pattern of `stage.isolate` that keeps `given` (as named, `..` resolved) or
    /// `resolved` (where it leads) from replies, if any.
    fn isolated(&self, given: &Path, resolved: &Path) -> Option<&str> {
        let isolation = self.isolation.as_ref()?;
        isolation
            .pattern_for(&lexical(given))
            .or_else(|| isolation.pattern_for(resolved))
    }

    /// Adds folders or files no action may read or write whatever the rules say, each with
    /// the reason the refusal gives (a submodule, which the stage does not check out; a path
    /// outside the sparse checkout). Both the path as given and the path it resolves to are
    /// checked.
    pub fn fenced(mut self, fences: Vec<(PathBuf, String)>) -> FsGuard {
        for (path, why) in fences {
            let resolved = canonical_or_same(&path);
            if resolved != path {
                self.fences.insert(resolved, why.clone());
            }
            self.fences.insert(path, why);
        }
        self
    }

    /// Adds git directories no action may read or write whatever the rules say (the
    /// repository's git dir and common dir): a path is refused when it resolves inside one.
    pub fn protect(mut self, dirs: Vec<PathBuf>) -> FsGuard {
        self.protected
            .extend(dirs.iter().map(|dir| canonical_or_same(dir)));
        self
    }

    /// The fence `path` or one of its folders is, if any.
    fn fence(&self, path: &Path) -> Option<&str> {
        path.ancestors()
            .find_map(|p| self.fences.get(p))
            .map(String::as_str)
    }

    /// Why `path` (absolute, `..` resolved lexically or by the filesystem) is git's own
    /// and never touched: the root's `.git` in any case, a git directory, or, for writing,
    /// any `.git` below the root. `given` is the path as the action named it.
    fn git_internal(&self, access: Access, given: &Path, path: &Path) -> Option<&'static str> {
        // Inside a transaction the root (the stage) is itself inside the git directory: a
        // path named under it stays there, but one reaching it from elsewhere (`<repo>/../
        // <repo>/.git/loaf/stage/x`) is the git directory.
        let in_root = given.starts_with(&self.root) && path.starts_with(&self.root);
        if !in_root && self.protected.iter().any(|dir| path.starts_with(dir)) {
            return Some(": it is inside the repository's git directory, which only git changes");
        }
        let inside = path.strip_prefix(&self.root).ok()?;
        let mut parts = inside.components().map(|c| c.as_os_str());
        let is_git = |part: &std::ffi::OsStr| part.eq_ignore_ascii_case(".git");
        if parts.next().is_some_and(is_git) {
            return Some(": it is the repository's git directory, which only git changes");
        }
        (access == Access::Write && parts.any(is_git)).then_some(
            ": a path with a `.git` folder in it belongs to another repository and git cannot record it",
        )
    }
}

impl RuleSet {
    fn new(rules: &GuardRules, base: &Path) -> Result<RuleSet, GuardError> {
        let mut set = RuleSet {
            rules: Vec::new(),
            allowed: Vec::new(),
        };
        for (patterns, allow) in [(&rules.allow, true), (&rules.deny, false)] {
            for pattern in patterns {
                let absolute = absolute_pattern(pattern, base);
                if allow {
                    set.allowed.push(absolute.clone());
                }
                set.rules.push(Rule {
                    pattern: pattern.clone(),
                    matchers: matchers(&absolute).map_err(|error| GuardError {
                        pattern: pattern.clone(),
                        error,
                    })?,
                    allow,
                    specificity: specificity(&absolute),
                });
            }
        }
        Ok(set)
    }

    /// The rule that decides `path`: the most specific matching one (deny wins ties);
    /// `None` when none matches (denied).
    fn decides(&self, path: &Path) -> Option<&Rule> {
        let mut best: Option<&Rule> = None;
        for rule in &self.rules {
            if !rule.matchers.iter().any(|m| m.is_match(path)) {
                continue;
            }
            best = match best {
                Some(b)
                    if b.specificity > rule.specificity
                        || (b.specificity == rule.specificity && !b.allow) =>
                {
                    Some(b)
                }
                _ => Some(rule),
            };
        }
        best
    }
}

impl AccessCheck for FsGuard {
    fn check(&self, access: Access, path: &Path) -> Result<PathBuf, String> {
        let set = match access {
            Access::Read => &self.read,
            Access::Write => &self.write,
        };
        let denied = |why: &str| {
            format!(
                "fs-guard violation: {} access denied for '{}'{why} (allowed {} roots: {})",
                access.as_str(),
                path.display(),
                access.as_str(),
                if set.allowed.is_empty() {
                    "none".to_owned()
                } else {
                    set.allowed.join(", ")
                }
            )
        };
        if path.as_os_str().as_encoded_bytes().contains(&0) {
            return Err(denied(": the path contains a NUL byte"));
        }
        if let Some(why) = self.fence(path) {
            return Err(format!("'{}' {why}", path.display()));
        }
        if !path.is_absolute() {
            return Err(denied(": the path is not absolute"));
        }
        // Before resolving: inside a transaction the root's `.git` is a file, under which
        // nothing resolves.
        if let Some(why) = self.git_internal(access, path, &lexical(path)) {
            return Err(denied(why));
        }
        let resolved = resolve(path).map_err(|e| {
            // A path through a symlink to the root's `.git` (a file inside a transaction)
            // fails to resolve: name the place rather than the error.
            let through_git = path
                .ancestors()
                .find_map(|p| p.canonicalize().ok())
                .and_then(|found| self.git_internal(access, path, &found));
            match (through_git, e.raw_os_error()) {
                (Some(why), _) => denied(why),
                (None, Some(ELOOP)) => {
                    denied(": too many levels of symbolic links (a symlink loop?)")
                }
                (None, _) => denied(&format!(": {e}")),
            }
        })?;
        // The resolved path is not shown: it may be a place the model never saw.
        if let Some(why) = self.git_internal(access, path, &resolved) {
            return Err(denied(why));
        }
        if let Some(why) = self.fence(&resolved) {
            return Err(format!("'{}' {why}", path.display()));
        }
        if let (Some(pattern), Some(isolation)) =
            (self.isolated(path, &resolved), self.isolation.as_ref())
        {
            return Err(isolation.refusal(path, pattern));
        }
        let rule = set.decides(&resolved);
        if rule.is_some_and(|r| r.allow) {
            return Ok(resolved);
        }
        let key = format!("fs-guard.{}", access.as_str());
        let why = match rule {
            Some(rule) => format!(
                ": it matches `{}` in {key}.deny of {}",
                rule.pattern, self.source
            ),
            None => format!(": no pattern in {key}.allow of {} matches it", self.source),
        };
        if resolved != path {
            Err(denied(&format!(
                " (it resolves to '{}'){why}",
                resolved.display()
            )))
        } else {
            Err(denied(&why))
        }
    }
}

/// The canonical form of `path`: symlinks and `..` resolved; for a path that does not exist
/// yet, its nearest existing parent's canonical form with the rest appended (`..` in the
/// rest resolved lexically: nothing there exists, so nothing there is a symlink).
fn resolve(path: &Path) -> io::Result<PathBuf> {
    let mut existing = path;
    let mut rest: Vec<Component<'_>> = Vec::new();
    loop {
        match existing.canonicalize() {
            Ok(mut resolved) => {
                for component in rest.iter().rev() {
                    match component {
                        Component::ParentDir => {
                            resolved.pop();
                        }
                        Component::Normal(part) => resolved.push(part),
                        _ => {}
                    }
                }
                return Ok(resolved);
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let Some(parent) = existing.parent() else {
                    return Err(e);
                };
                if let Some(last) = existing.components().next_back() {
                    rest.push(last);
                }
                existing = parent;
            }
            Err(e) => return Err(e),
        }
    }
}

pub(crate) use crate::paths::lexical;

fn canonical_or_same(path: &Path) -> PathBuf {
    resolve(path).unwrap_or_else(|_| path.to_path_buf())
}

/// A loaf.yml pattern made absolute: relative ones from `base`; the literal directory part of
/// an absolute one canonicalized (`/tmp` may be a symlink, as on macOS).
fn absolute_pattern(pattern: &str, base: &Path) -> String {
    let joined = if pattern.starts_with('/') {
        PathBuf::from(pattern)
    } else {
        base.join(pattern.trim_start_matches("./"))
    };
    let joined = joined.to_string_lossy().into_owned();
    let literal_end = joined.find(['*', '?', '[', '{']).unwrap_or(joined.len());
    let literal = &joined[..literal_end];
    let dir_end = literal.rfind('/').unwrap_or(0);
    if dir_end == 0 {
        return joined;
    }
    let dir = canonical_or_same(Path::new(&joined[..dir_end]));
    format!(
        "{}{}",
        dir.to_string_lossy().trim_end_matches('/'),
        &joined[dir_end..]
    )
}

/// `dir/**` also matches `dir` itself, so that the folder can be listed.
fn matchers(pattern: &str) -> Result<Vec<GlobMatcher>, globset::Error> {
    let build = |p: &str| {
        GlobBuilder::new(p)
            .literal_separator(true)
            .build()
            .map(|g| g.compile_matcher())
    };
    let mut matchers = vec![build(pattern)?];
    if let Some(dir) = pattern.strip_suffix("/**").filter(|d| !d.is_empty()) {
        matchers.push(build(dir)?);
    }
    Ok(matchers)
}

/// Path segments free of wildcards.
fn specificity(pattern: &str) -> usize {
    pattern
        .split('/')
        .filter(|s| !s.is_empty() && !s.contains(['*', '?', '[', '{']))
        .count()
}
