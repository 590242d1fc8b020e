//! `loaf.yml`: the repository's git-loaf configuration (docs/loaf-yml.md). Every key is optional;
//! unknown keys and bad values are errors that name the line, so a typo never silently
//! changes what a reply may touch.

mod locate;
mod raw;
mod widen;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::actions::Schema;
/// `fs-guard`'s rules: plain data the guard takes ([`crate::exec::guard`]).
pub use crate::exec::guard::{FsGuardConfig, GuardRules};
use crate::notice::{Notice, NoticeKind};
use locate::{first_line, has_word, line_in_section, line_of, name_the_key, unquoted};
use raw::{RawConfig, RawExec, RawHook, RawHooks, RawStage, writable_path};
pub use widen::widenings;

/// The `allowed-actions` entry that stands for every default action: all the filesystem
/// actions (what a reply may run without the key), so that `[defaults, exec]` adds `exec`
/// without listing the rest.
pub(crate) const DEFAULTS_ENTRY: &str = "defaults";

/// The file name, at the repository root (or the current directory outside a repository).
pub const FILE_NAME: &str = "loaf.yml";

/// Why loaf.yml could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// It exists but cannot be read.
    #[error("cannot read {}: {error}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
    /// Bad YAML, an unknown key or a value of the wrong type.
    #[error("{}: {message}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong, with line and column.
        message: String,
    },
}

/// The configuration in force.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Format version (1).
    pub version: u32,
    /// Actions a reply may run, `defaults` expanded to the fs actions; `None`: every fs
    /// action (not `exec`).
    pub allowed_actions: Option<Vec<String>>,
    /// Where actions may read and write; `None`: the defaults of the fs-guard.
    pub fs_guard: Option<FsGuardConfig>,
    /// Commands around the actions.
    pub hooks: HooksConfig,
    /// Variables for `${VAR}` in hooks.
    pub vars: BTreeMap<String, String>,
    /// The commit message's first line; `{operation_summary}` is what the apply did.
    pub commit_message_format: String,
    /// `git-hooks`: run the repository's own git hooks (pre-commit, commit-msg, ...) as
    /// `git commit` does (default true).
    pub git_hooks: bool,
    /// Larger files are refused by every action.
    pub max_file_size: u64,
    /// Limits of `exec`.
    pub exec: ExecConfig,
    /// The staging worktree.
    pub stage: StageConfig,
    /// Pruning the operation log (`git loaf gc`).
    pub gc: GcConfig,
    /// `notes.outputs`: what the notes that can be pushed record of outputs.
    pub notes_outputs: NotesOutputs,
    /// The folder loaf.yml is in (relative fs-guard patterns resolve from it).
    pub dir: PathBuf,
    /// Things to tell the user about loaf.yml on stderr (deprecated keys).
    pub notices: Vec<Notice>,
}

/// `hooks`: commands before and after the actions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HooksConfig {
    /// Before the actions; a failure aborts the apply.
    pub before: Vec<HookCommand>,
    /// After the actions; failures are recorded.
    pub after: Vec<HookCommand>,
}

/// One hook command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookCommand {
    /// The command, run by `sh -c`.
    pub run: String,
    /// Go on with the next hook when this one fails.
    pub continue_on_error: bool,
    /// Killed after this long.
    pub timeout: Duration,
    /// Where it runs; default the root.
    pub cwd: Option<String>,
}

/// `exec`: limits of code execution and what its sandbox allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecConfig {
    /// Killed (the whole process group) after this long.
    pub timeout: Duration,
    /// Bytes kept of each output stream.
    pub max_output: usize,
    /// `network: true`: code keeps the host's network (default: none).
    pub network: bool,
    /// `writable`: absolute paths code may write outside the transaction (package caches);
    /// `~/` is the home folder.
    pub writable: Vec<PathBuf>,
    /// `sandbox: off`: where namespaces are unavailable, run code without them instead of
    /// refusing it. It never turns off a sandbox that can be made.
    pub sandbox_off: bool,
    /// `env`: what code gets of git-loaf's environment beyond the default (which withholds
    /// the variables holding secrets).
    pub env: crate::exec::environment::CodeEnvironment,
}

/// `stage`: the staging worktree.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StageConfig {
    /// Globs (relative to the root) of ignored files and folders kept out of the stage, and
    /// of untracked paths the file actions refuse; every other ignored entry of the user's
    /// tree is visible there (docs/sandbox-and-safety.md, "Secrets: what is kept out"). Without the
    /// key: the common secret files ([`DEFAULT_ISOLATE`]).
    pub isolate: Vec<String>,
    /// Whether `isolate` is the built-in list (loaf.yml has no `stage.isolate` key).
    pub isolate_built_in: bool,
    /// Deprecated, no effect: ignored folders the stage was to share. Every ignored entry is
    /// visible now; loading a loaf.yml that sets it adds a notice to [`Config::notices`].
    pub share: Vec<String>,
}

/// `gc`: how long the operation log keeps entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GcConfig {
    /// Entries older than this many days are dropped by `git loaf gc` (its default).
    pub keep_days: u64,
    /// Whether git-loaf prunes on its own (at most once a day): set when loaf.yml has a
    /// `gc` section.
    pub auto: bool,
}

/// `notes.outputs`: what the note of a loaf commit (`refs/notes/loaf`, which users push)
/// records of what the blocks read and printed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum NotesOutputs {
    /// `{bytes, sha256}` of each output, never the bytes (the default): the full report stays
    /// in the repository where the apply ran.
    #[default]
    Hashes,
    /// The outputs themselves, as the report showed them.
    Full,
}

/// Default `stage.isolate`: the common secret files.
pub(crate) const DEFAULT_ISOLATE: &[&str] = &crate::paths::SECRET_FILES;

/// Default `gc.keep-days`.
pub(crate) const DEFAULT_KEEP_DAYS: u64 = 90;

/// Default `max_file_size`: 10 MiB.
pub(crate) const DEFAULT_MAX_FILE_SIZE: u64 = 10 * 1024 * 1024;
/// Default exec timeout.
pub(crate) const DEFAULT_EXEC_TIMEOUT: Duration = Duration::from_secs(30);
/// Default bytes kept of each exec output stream: 1 MiB.
pub(crate) const DEFAULT_MAX_OUTPUT: usize = 1024 * 1024;
/// Default hook timeout.
pub(crate) const DEFAULT_HOOK_TIMEOUT: Duration = crate::exec::hooks::DEFAULT_HOOK_TIMEOUT;

impl Config {
    /// Everything at its default, for a loaf.yml in `dir`.
    pub fn default_for(dir: &Path) -> Config {
        Config {
            version: 1,
            allowed_actions: None,
            fs_guard: None,
            hooks: HooksConfig::default(),
            vars: BTreeMap::new(),
            commit_message_format: "AI: {operation_summary}".to_owned(),
            git_hooks: true,
            max_file_size: DEFAULT_MAX_FILE_SIZE,
            exec: ExecConfig {
                timeout: DEFAULT_EXEC_TIMEOUT,
                max_output: DEFAULT_MAX_OUTPUT,
                network: false,
                writable: Vec::new(),
                sandbox_off: false,
                env: crate::exec::environment::CodeEnvironment::default(),
            },
            stage: StageConfig {
                isolate: DEFAULT_ISOLATE.iter().map(|p| (*p).to_owned()).collect(),
                isolate_built_in: true,
                share: Vec::new(),
            },
            gc: GcConfig {
                keep_days: DEFAULT_KEEP_DAYS,
                auto: false,
            },
            notes_outputs: NotesOutputs::Hashes,
            dir: dir.to_path_buf(),
            notices: Vec::new(),
        }
    }

    /// Reads `dir/loaf.yml`; without one, the defaults.
    pub fn load(dir: &Path) -> Result<Config, ConfigError> {
        let path = dir.join(FILE_NAME);
        match std::fs::read_to_string(&path) {
            Ok(text) => Config::parse(&text, dir),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                Ok(Config::default_for(dir))
            }
            Err(error) => Err(ConfigError::Read { path, error }),
        }
    }

    /// Reads loaf.yml text, for a file in `dir`.
    pub fn parse(text: &str, dir: &Path) -> Result<Config, ConfigError> {
        let invalid = |message: String| ConfigError::Invalid {
            path: dir.join(FILE_NAME),
            message,
        };
        let raw: RawConfig = if text.trim().is_empty() {
            RawConfig::default()
        } else {
            serde_saphyr::from_str(text)
                .map_err(|e| invalid(name_the_key(text, &first_line(&e.to_string()))))?
        };
        let mut config = Config::default_for(dir);
        if let Some(version) = raw.version
            && version != 1
        {
            return Err(invalid(format!(
                "{}version: {version} is not supported; write `version: 1`",
                line_of(text, "version:")
            )));
        }
        if let Some(actions) = raw.allowed_actions {
            config.allowed_actions = Some(allowed_actions(text, &actions).map_err(invalid)?);
        }
        config.fs_guard = raw.fs_guard;
        if let Some(hooks) = &raw.hooks {
            check_hooks(text, hooks).map_err(invalid)?;
        }
        if let Some(hooks) = raw.hooks {
            config.hooks = HooksConfig {
                before: hooks
                    .before
                    .into_iter()
                    .map(RawHook::into_command)
                    .collect(),
                after: hooks.after.into_iter().map(RawHook::into_command).collect(),
            };
        }
        config.vars = raw.vars.into_iter().map(|(k, v)| (k, v.0)).collect();
        if let Some(format) = raw.commit_message_format {
            config.commit_message_format = format;
        }
        if let Some(git_hooks) = raw.git_hooks {
            config.git_hooks = git_hooks;
        }
        if let Some(size) = raw.max_file_size {
            config.max_file_size = size;
        }
        if let Some(exec) = raw.exec {
            config.read_exec(text, dir, exec).map_err(invalid)?;
        }
        if let Some(stage) = raw.stage {
            config.read_stage(text, dir, stage).map_err(invalid)?;
        }
        if let Some(notes) = raw.notes {
            config.notes_outputs =
                notes_outputs(text, notes.outputs.as_deref()).map_err(invalid)?;
        }
        if let Some(gc) = raw.gc {
            config.gc = GcConfig {
                keep_days: gc.keep_days.unwrap_or(DEFAULT_KEEP_DAYS),
                auto: true,
            };
        }
        Ok(config)
    }

    /// loaf.yml's `exec` section: an error names its line.
    fn read_exec(&mut self, text: &str, dir: &Path, exec: RawExec) -> Result<(), String> {
        if exec.timeout == Some(0) {
            return Err(format!(
                "{}exec.timeout: must be at least 1 (seconds)",
                line_in_section(text, "exec", |key, _| key == "timeout")
            ));
        }
        self.exec.timeout = exec
            .timeout
            .map_or(DEFAULT_EXEC_TIMEOUT, Duration::from_secs);
        self.exec.max_output = exec.max_output.unwrap_or(DEFAULT_MAX_OUTPUT);
        self.exec.network = exec.network.unwrap_or(false);
        self.exec.sandbox_off = match exec.sandbox.as_deref().map(str::trim) {
            None | Some("on") => false,
            Some("off") => true,
            Some(other) => {
                return Err(format!(
                    "{}exec.sandbox: '{other}' is not a choice; write `on` (the default) or `off` (run code without namespaces where they are unavailable)",
                    line_in_section(text, "exec", |key, _| key == "sandbox")
                ));
            }
        };
        for entry in &exec.writable {
            let path = writable_path(entry, dir)
                .map_err(|why| format!("{}exec.writable: {why}", line_of(text, entry)))?;
            self.exec.writable.push(path);
        }
        if let Some(env) = exec.env {
            self.exec.env = code_environment(text, env)?;
        }
        Ok(())
    }

    /// loaf.yml's `stage` section: an error names its line.
    fn read_stage(&mut self, text: &str, dir: &Path, stage: RawStage) -> Result<(), String> {
        if let Some(isolate) = stage.isolate {
            for pattern in &isolate {
                for form in crate::exec::secret_paths::forms(pattern) {
                    crate::exec::secret_paths::glob(&form).map_err(|e| {
                        format!(
                            "{}stage.isolate: invalid pattern '{pattern}': {}",
                            line_of(text, pattern),
                            e.kind()
                        )
                    })?;
                }
            }
            self.stage.isolate = isolate;
            self.stage.isolate_built_in = false;
        }
        if let Some(share) = stage.share {
            self.notices.push(Notice::new(
                NoticeKind::Config,
                format!(
                    "{}: {}stage.share is deprecated and has no effect: every ignored file and folder is now visible in the stage; remove it, and list what to keep out under stage.isolate",
                    dir.join(FILE_NAME).display(),
                    line_of(text, "share:")
                ),
            ));
            self.stage.share = share;
        }
        Ok(())
    }

    /// Whether a reply may run `action`: listed in `allowed-actions`, or, without that key,
    /// any action but `exec`.
    pub fn allows(&self, action: &str) -> bool {
        match &self.allowed_actions {
            Some(list) => list.iter().any(|a| a == action),
            None => action != "exec",
        }
    }
}

/// `allowed-actions` as the configuration keeps it: `defaults` replaced by the filesystem
/// actions, each action once. An entry that is no action git-loaf runs is an error naming
/// its line, with a did-you-mean.
fn allowed_actions(text: &str, entries: &[String]) -> Result<Vec<String>, String> {
    let runnable = crate::actions::runnable();
    let mut allowed: Vec<String> = Vec::new();
    let mut add = |name: &str| {
        if !allowed.iter().any(|a| a == name) {
            allowed.push(name.to_owned());
        }
    };
    for entry in entries {
        let name = entry.trim();
        if name == DEFAULTS_ENTRY {
            crate::exec::fs::ACTIONS.iter().for_each(|a| add(a));
            continue;
        }
        if crate::actions::implemented(name) && Schema::get().tool(name).is_some() {
            add(name);
            continue;
        }
        let line = line_in_section(text, "allowed-actions", |_, item| has_word(item, name));
        let choices = || {
            std::iter::once(DEFAULTS_ENTRY)
                .chain(runnable.iter().copied())
                .collect::<Vec<_>>()
                .join(", ")
        };
        if Schema::get().tool(name).is_some() {
            return Err(format!(
                "{line}allowed-actions: '{name}' cannot be run by git-loaf yet; available: {}",
                choices()
            ));
        }
        let hint = crate::actions::closest(
            name,
            std::iter::once(DEFAULTS_ENTRY).chain(runnable.iter().copied()),
        )
        .map(|s| format!(" (did you mean '{s}'?)"))
        .unwrap_or_else(|| format!("; available: {}", choices()));
        return Err(format!(
            "{line}allowed-actions: unknown action '{name}'{hint}"
        ));
    }
    Ok(allowed)
}

/// `notes.outputs`: `hashes` or `full`; anything else is an error naming its line.
fn notes_outputs(text: &str, value: Option<&str>) -> Result<NotesOutputs, String> {
    match value.map(str::trim) {
        None | Some("hashes") => Ok(NotesOutputs::Hashes),
        Some("full") => Ok(NotesOutputs::Full),
        Some(other) => Err(format!(
            "{}notes.outputs: '{other}' is not one of hashes (the default: sizes and sha256 of what blocks read or printed), full (the outputs themselves, in notes you may push)",
            line_in_section(text, "notes", |key, _| key == "outputs")
        )),
    }
}

/// Hook values that would load but cannot work: an empty command, a timeout of 0 ms (every
/// run would time out at once). The error names the line, as a YAML error does.
fn check_hooks(text: &str, hooks: &RawHooks) -> Result<(), String> {
    for (list, name) in [(&hooks.before, "before"), (&hooks.after, "after")] {
        for (i, hook) in list.iter().enumerate() {
            if hook.run.0.trim().is_empty() {
                let line = line_in_section(text, "hooks", |key, value| {
                    key == "run" && unquoted(value).trim().is_empty()
                });
                return Err(format!(
                    "{line}hooks.{name}[{i}].run: the command is empty; write the command to run, e.g. `run: cargo fmt`"
                ));
            }
            if hook.timeout == Some(0) {
                let line = line_in_section(text, "hooks", |key, value| {
                    key == "timeout" && value.parse::<u64>() == Ok(0)
                });
                return Err(format!(
                    "{line}hooks.{name}[{i}].timeout: must be at least 1 (milliseconds; default 30000)"
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;

/// loaf.yml's `exec.env`: each `pass` entry a name or a glob, each `set` name one a program
/// can be given; an error names its line.
fn code_environment(
    text: &str,
    env: raw::RawExecEnv,
) -> Result<crate::exec::environment::CodeEnvironment, String> {
    let pass: Vec<String> = env.pass.into_iter().map(|p| p.0).collect();
    for pattern in &pass {
        if pattern.trim().is_empty() {
            return Err(format!(
                "{}exec.env.pass: an empty entry; write a variable's name or a glob such as `AWS_*`",
                line_in_section(text, "exec", |key, _| key == "pass")
            ));
        }
        if let Err(e) = crate::exec::environment::pass_set(std::slice::from_ref(pattern)) {
            return Err(format!(
                "{}exec.env.pass: '{pattern}' is not a name or a glob ({}); write a variable's name or a glob such as `AWS_*`",
                line_of(text, pattern),
                e.kind()
            ));
        }
    }
    let mut set = Vec::new();
    for (name, value) in env.set {
        let bad_name = name.is_empty() || name.contains(['=', '\0']);
        if bad_name || value.0.contains('\0') {
            let what = if bad_name {
                format!("'{name}' cannot be a variable's name (empty, or holding `=`)")
            } else {
                format!("the value of '{name}' holds a NUL byte")
            };
            return Err(format!(
                "{}exec.env.set: {what}; write `NAME: value`",
                line_in_section(text, "exec", |key, _| key == name)
            ));
        }
        set.push((name, value.0));
    }
    Ok(crate::exec::environment::CodeEnvironment { pass, set })
}
