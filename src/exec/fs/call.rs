//! One action call: its typed parameters, and its paths mapped and checked by the fs-guard.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::exec::{Access, Params, Workspace};

/// An action being run: its name (for messages), its parameters and where it runs.
pub(super) struct Call<'a> {
    pub action: &'a str,
    pub params: &'a Params,
    pub ws: &'a Workspace<'a>,
}

/// A path the model named, where it really is, and where the fs-guard says to touch it.
#[derive(Debug, Clone)]
pub(super) struct Target {
    /// As the model wrote it: the only form that appears in results and messages.
    pub user: String,
    /// Mapped into the workspace, not resolved: the link itself when it is a symlink.
    pub real: PathBuf,
    /// As the guard returned it (canonical, symlinks resolved): where contents are read and
    /// written, so that writing through a symlink changes its target and keeps the link.
    pub checked: PathBuf,
    /// `checked` is in the stage, a scratch copy of the user's tree: written in place.
    pub scratch: bool,
}

impl<'a> Call<'a> {
    /// `<action>: <message>`, the form of every message that is not an OS error.
    pub fn fail(&self, message: impl std::fmt::Display) -> String {
        format!("{}: {message}", self.action)
    }

    /// A required string parameter. Validation guarantees it; if it is missing anyway, that
    /// is our bug, and the message says so instead of blaming the model.
    pub fn text(&self, name: &str) -> Result<&'a str, String> {
        match self.params.get(name) {
            Some(Value::String(s)) => Ok(s),
            other => Err(self.internal(name, "a string", other)),
        }
    }

    /// An optional string parameter.
    pub fn opt_text(&self, name: &str) -> Result<Option<&'a str>, String> {
        match self.params.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            other => Err(self.internal(name, "a string", other)),
        }
    }

    /// An optional integer parameter.
    pub fn opt_int(&self, name: &str) -> Result<Option<i64>, String> {
        match self.params.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) if n.is_i64() => Ok(n.as_i64()),
            other => Err(self.internal(name, "an integer", other)),
        }
    }

    /// A line specification (`"4"` or `"23-43"`): a string, or an integer if a conversion
    /// step turned `"4"` into `4`.
    pub fn opt_line_spec(&self, name: &str) -> Result<Option<String>, String> {
        match self.params.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(Value::Number(n)) => Ok(Some(n.to_string())),
            other => Err(self.internal(name, "a line range", other)),
        }
    }

    fn internal(&self, name: &str, wanted: &str, found: Option<&Value>) -> String {
        let found = match found {
            None => "missing".to_owned(),
            Some(v) => format!("{v}"),
        };
        self.fail(format!(
            "internal error: parameter '{name}' should be {wanted} after validation, found {found}"
        ))
    }

    /// The path parameter `name`, mapped and checked for every access in `needs`.
    pub fn path(&self, name: &str, needs: &[Access]) -> Result<Target, String> {
        self.target(self.text(name)?, needs)
    }

    /// `user` mapped into the workspace and checked by the fs-guard for every access in
    /// `needs` (the first refusal wins, nothing is touched).
    pub fn target(&self, user: &str, needs: &[Access]) -> Result<Target, String> {
        let path = Path::new(user);
        if !path.is_absolute() {
            return Err(self.fail(format!("path must be absolute, got '{user}'")));
        }
        let mapped = self.ws.paths.to_real(path);
        crate::exec::bad_path::check(path, &mapped).map_err(|bad| self.fail(bad))?;
        // Judged where the user's tree would lead (a link climbing out of the stage means
        // something else there than in the user's tree), but named as the model wrote it.
        let leads_to = self.ws.paths.leads_to(path);
        let real = self.ws.paths.entry_at(path);
        let mut checked = real.clone();
        for &access in needs {
            checked = self.ws.guard.check(access, &leads_to).map_err(|refusal| {
                let named = refusal.replace(
                    &format!("'{}'", leads_to.display()),
                    &format!("'{}'", mapped.display()),
                );
                self.ws.paths.scrub(&named)
            })?;
        }
        if let Some(own) = self.ws.paths.show_through(&real) {
            if !needs.contains(&Access::Write) {
                // Read where it is (symlinks resolved), judged by the guard where it leads.
                self.ws
                    .guard
                    .check(Access::Read, &self.ws.paths.guard_view(&own))
                    .map_err(|refusal| self.ws.paths.scrub(&refusal))?;
                let checked = std::fs::canonicalize(&own).unwrap_or_else(|_| own.clone());
                return Ok(Target {
                    user: user.to_owned(),
                    real: own,
                    checked,
                    scratch: false,
                });
            }
            self.copy_up(&own, &real, user)?;
        }
        Ok(Target {
            user: user.to_owned(),
            scratch: self.ws.paths.in_scratch(&checked),
            real,
            checked,
        })
    }

    /// Copies the user's file (or symlink) `own` into the stage at `real` before a change, so
    /// that the change starts from what the user has; folders are not copied (what goes into
    /// them lands in the stage's folder, and the rest of the user's still shows through).
    fn copy_up(&self, own: &Path, real: &Path, user: &str) -> Result<(), String> {
        let Ok(meta) = own.symlink_metadata() else {
            return Ok(());
        };
        let copied = if meta.file_type().is_symlink() {
            std::fs::read_link(own).and_then(|target| {
                make_parent(real)?;
                symlink(&target, real)
            })
        } else if meta.is_file() {
            make_parent(real).and_then(|()| std::fs::copy(own, real).map(|_| ()))
        } else {
            return Ok(());
        };
        copied.map_err(|e| super::os_error::os_error(&e, "copyfile", user))?;
        self.ws.paths.copy_made(real);
        Ok(())
    }

    /// Whether the guard allows `access` to a real path met while walking a directory (or a
    /// user's file that shows through the stage, judged as if it were in the stage).
    pub fn allowed(&self, access: Access, real: &Path) -> bool {
        self.ws
            .guard
            .check(access, &self.ws.paths.guard_view(real))
            .is_ok()
    }

    /// The model's form of a path found under `root` while walking it.
    pub fn user_path_under(&self, root: &Target, found: &Path) -> String {
        match found.strip_prefix(&root.real) {
            Ok(rest) if rest.as_os_str().is_empty() => root.user.clone(),
            Ok(rest) => Path::new(&root.user)
                .join(rest)
                .to_string_lossy()
                .into_owned(),
            Err(_) => self.ws.paths.to_user(found).to_string_lossy().into_owned(),
        }
    }
}

fn make_parent(path: &Path) -> std::io::Result<()> {
    match path.parent() {
        Some(parent) => std::fs::create_dir_all(parent),
        None => Ok(()),
    }
}

#[cfg(unix)]
fn symlink(target: &Path, link: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}

#[cfg(not(unix))]
fn symlink(target: &Path, link: &Path) -> std::io::Result<()> {
    std::fs::copy(target, link).map(|_| ())
}
