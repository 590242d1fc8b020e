//! `stage.isolate` for the file actions (docs/sandbox-and-safety.md, "Secrets: what is kept out"):
//! paths kept from replies.
//!
//! The transaction keeps isolated ignored entries out of the stage (exec and hooks never see
//! them); the file actions, which could otherwise name any path, are refused here with a
//! message naming the pattern and the loaf.yml key, so the model can ask the user rather than
//! guess. A path is isolated when it or one of its folders matches a pattern; a path git
//! tracks is not (its content is in the history already, e.g. a `.env.example`).
//!
//! Patterns are relative to the root and read like `.gitignore` lines: one without a slash
//! (`.env`, `*.pem`, `id_rsa*`) names a file or folder at any depth; one with a slash
//! (`.aws/**`, `config/secrets.yml`), or starting with `./` or `/` (`./.env`), is anchored at
//! the root; `*` stays within a folder, `**` spans any; `dir/**` also matches `dir` itself.

use std::path::{Path, PathBuf};
use std::rc::Rc;

use globset::GlobMatcher;

/// The secret files kept from replies when loaf.yml has no `stage.isolate` key.
pub use crate::paths::{pattern_forms as forms, pattern_glob as glob};

/// Whether a path (relative to the root) is tracked by git: such paths are never isolated.
pub(crate) type Tracked = Rc<dyn Fn(&Path) -> bool>;

/// The compiled `stage.isolate` of one run.
#[derive(Clone)]
pub struct Isolation {
    root: PathBuf,
    rules: Vec<(String, GlobMatcher)>,
    tracked: Tracked,
    /// Whether the patterns are the built-in list (loaf.yml has no `stage.isolate`).
    built_in: bool,
}

impl std::fmt::Debug for Isolation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Isolation")
            .field("root", &self.root)
            .field(
                "patterns",
                &self.rules.iter().map(|r| &r.0).collect::<Vec<_>>(),
            )
            .field("built_in", &self.built_in)
            .finish()
    }
}

impl Isolation {
    /// `patterns` under `root` (canonical, as the guard sees paths); `built_in` when they are
    /// [`crate::paths::SECRET_FILES`] because loaf.yml does not set the key.
    pub fn new(
        patterns: &[String],
        root: &Path,
        built_in: bool,
        tracked: Tracked,
    ) -> Result<Isolation, globset::Error> {
        let mut rules = Vec::new();
        for pattern in patterns {
            for form in forms(pattern) {
                rules.push((pattern.clone(), glob(&form)?.compile_matcher()));
            }
        }
        Ok(Isolation {
            root: root.to_path_buf(),
            rules,
            tracked,
            built_in,
        })
    }

    /// The pattern that keeps `path` (absolute, `..` resolved) from replies, if any.
    pub fn pattern_for(&self, path: &Path) -> Option<&str> {
        let relative = path.strip_prefix(&self.root).ok()?;
        if self.rules.is_empty() || relative.as_os_str().is_empty() {
            return None;
        }
        let pattern = relative
            .ancestors()
            .filter(|p| !p.as_os_str().is_empty())
            .find_map(|p| self.rules.iter().find(|(_, m)| m.is_match(p)))
            .map(|(pattern, _)| pattern.as_str())?;
        (!(self.tracked)(relative)).then_some(pattern)
    }

    /// Why `shown` (the path as the action named it) is refused, naming the pattern and the
    /// loaf.yml key that would allow it.
    pub fn refusal(&self, shown: &Path, pattern: &str) -> String {
        let whose = if self.built_in {
            "the built-in stage.isolate list (loaf.yml sets no stage.isolate; listing your own there replaces it)"
        } else {
            "stage.isolate in loaf.yml"
        };
        format!(
            "'{}' is kept from replies by {whose} (pattern `{pattern}`): it may hold secrets. Ask the user for what you need from it, or to remove the pattern from stage.isolate in loaf.yml to allow it",
            shown.display()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn isolation(patterns: &[&str], tracked: &'static [&'static str]) -> Isolation {
        let patterns: Vec<String> = patterns.iter().map(|p| (*p).to_owned()).collect();
        let tracked: Tracked = Rc::new(move |p: &Path| tracked.iter().any(|t| p == Path::new(t)));
        Isolation::new(&patterns, Path::new("/r"), false, tracked).expect("globs")
    }

    #[test]
    fn the_default_list_keeps_secret_files_out_at_any_depth_and_tracked_ones_in() {
        let defaults: Vec<&str> = crate::paths::SECRET_FILES.to_vec();
        let iso = isolation(&defaults, &[".env.example"]);
        let kept = |p: &str| iso.pattern_for(Path::new(p)).map(str::to_owned);
        assert_eq!(kept("/r/.env").as_deref(), Some(".env"));
        assert_eq!(kept("/r/backend/.env").as_deref(), Some(".env"));
        assert_eq!(kept("/r/.env.local").as_deref(), Some(".env.*"));
        assert_eq!(kept("/r/.env.example"), None, "tracked");
        assert_eq!(kept("/r/certs/server.pem").as_deref(), Some("*.pem"));
        assert_eq!(kept("/r/deploy/id_rsa.pub").as_deref(), Some("id_rsa*"));
        assert_eq!(kept("/r/.ssh").as_deref(), Some(".ssh/**"));
        assert_eq!(kept("/r/.aws/credentials").as_deref(), Some(".aws/**"));
        assert_eq!(kept("/r/.npmrc").as_deref(), Some(".npmrc"));
        assert_eq!(kept("/r/src/main.rs"), None);
        assert_eq!(kept("/r/environment.rs"), None);
        assert_eq!(kept("/elsewhere/.env"), None, "outside the root");
        assert_eq!(kept("/r"), None);
    }

    #[test]
    fn a_folder_pattern_covers_what_is_inside() {
        let iso = isolation(&[".venv"], &[]);
        assert_eq!(
            iso.pattern_for(Path::new("/r/.venv/pyvenv.cfg")),
            Some(".venv")
        );
        assert_eq!(iso.pattern_for(Path::new("/r/venv/x")), None);
        let root_only = isolation(&["./.env", "/x.key"], &[]);
        assert_eq!(root_only.pattern_for(Path::new("/r/.env")), Some("./.env"));
        assert_eq!(root_only.pattern_for(Path::new("/r/a/.env")), None);
        assert_eq!(root_only.pattern_for(Path::new("/r/x.key")), Some("/x.key"));
        assert_eq!(root_only.pattern_for(Path::new("/r/a/x.key")), None);
        let anchored = isolation(&["config/secret.yml"], &[]);
        assert_eq!(
            anchored.pattern_for(Path::new("/r/config/secret.yml")),
            Some("config/secret.yml")
        );
        assert_eq!(
            anchored.pattern_for(Path::new("/r/x/config/secret.yml")),
            None
        );
    }
}
