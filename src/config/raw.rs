//! loaf.yml as written: the YAML form serde reads, before `Config::parse` checks it and
//! gives it meaning.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use super::{DEFAULT_HOOK_TIMEOUT, FsGuardConfig, HookCommand};

/// A value that must be written as a string (a hook's `run`, a `vars` value): a number or a
/// boolean there is refused rather than turned into text (`run: 123` is almost always a
/// mistake, and `vars: {n: 010}` would not be what was written), and saphyr's error names
/// the line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Text(pub(super) String);

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Text, D::Error> {
        deserializer.deserialize_any(TextVisitor)
    }
}

pub(super) struct TextVisitor;

impl TextVisitor {
    fn not_text<E: serde::de::Error>(what: impl std::fmt::Display) -> E {
        E::custom(format!(
            "{what} is not a string; values here are strings: quote it (\"{what}\") if it is meant as text"
        ))
    }
}

impl serde::de::Visitor<'_> for TextVisitor {
    type Value = Text;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a string")
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Text, E> {
        Ok(Text(v.to_owned()))
    }

    fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Text, E> {
        Ok(Text(v))
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Text, E> {
        Err(Self::not_text(v))
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Text, E> {
        Err(Self::not_text(v))
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Text, E> {
        Err(Self::not_text(v))
    }

    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Text, E> {
        Err(Self::not_text(v))
    }
}

/// loaf.yml as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawConfig {
    pub(super) version: Option<u32>,
    #[serde(rename = "allowed-actions")]
    pub(super) allowed_actions: Option<Vec<String>>,
    #[serde(rename = "fs-guard")]
    pub(super) fs_guard: Option<FsGuardConfig>,
    pub(super) hooks: Option<RawHooks>,
    #[serde(default)]
    pub(super) vars: BTreeMap<String, Text>,
    pub(super) commit_message_format: Option<String>,
    #[serde(rename = "git-hooks")]
    pub(super) git_hooks: Option<bool>,
    pub(super) max_file_size: Option<u64>,
    pub(super) exec: Option<RawExec>,
    pub(super) stage: Option<RawStage>,
    pub(super) gc: Option<RawGc>,
    pub(super) notes: Option<RawNotes>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawNotes {
    pub(super) outputs: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawGc {
    #[serde(rename = "keep-days")]
    pub(super) keep_days: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawHooks {
    #[serde(default)]
    pub(super) before: Vec<RawHook>,
    #[serde(default)]
    pub(super) after: Vec<RawHook>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawHook {
    pub(super) run: Text,
    #[serde(rename = "continueOnError", default)]
    pub(super) continue_on_error: bool,
    /// Milliseconds.
    pub(super) timeout: Option<u64>,
    pub(super) cwd: Option<String>,
}

impl RawHook {
    pub(super) fn into_command(self) -> HookCommand {
        HookCommand {
            run: self.run.0,
            continue_on_error: self.continue_on_error,
            timeout: self
                .timeout
                .map_or(DEFAULT_HOOK_TIMEOUT, Duration::from_millis),
            cwd: self.cwd,
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawExec {
    pub(super) timeout: Option<u64>,
    pub(super) max_output: Option<usize>,
    pub(super) network: Option<bool>,
    #[serde(default)]
    pub(super) writable: Vec<String>,
    pub(super) sandbox: Option<String>,
    pub(super) env: Option<RawExecEnv>,
}

/// `exec.env`: variables passed to code although they look like secrets, and variables
/// set for it.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawExecEnv {
    #[serde(default)]
    pub(super) pass: Vec<Text>,
    #[serde(default)]
    pub(super) set: BTreeMap<String, Text>,
}

/// An `exec.writable` entry as a path: absolute, or `~/…` under the home folder; never
/// inside the repository (`dir`), whose files only the transaction writes.
pub(super) fn writable_path(entry: &str, dir: &Path) -> Result<PathBuf, String> {
    let path = match entry.strip_prefix("~/") {
        Some(rest) => match std::env::var_os("HOME") {
            Some(home) => PathBuf::from(home).join(rest),
            None => return Err(format!("'{entry}': HOME is not set to resolve `~/`")),
        },
        None => PathBuf::from(entry),
    };
    if !path.is_absolute() {
        return Err(format!(
            "'{entry}' is not an absolute path; write it whole (or `~/…`)"
        ));
    }
    if path
        .components()
        .any(|c| c == std::path::Component::ParentDir)
    {
        return Err(format!("'{entry}' holds `..`; write the path without it"));
    }
    let resolved = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
    let root = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    if !dir.as_os_str().is_empty() && (resolved.starts_with(&root) || root.starts_with(&resolved)) {
        return Err(format!(
            "'{entry}' is the repository or holds it; code writes the repository only through the apply"
        ));
    }
    Ok(path)
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawStage {
    pub(super) isolate: Option<Vec<String>>,
    pub(super) share: Option<Vec<String>>,
}
