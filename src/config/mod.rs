//! `loaf.yml`: the repository's git-loaf configuration (DESIGN §5). Every key is optional;
//! unknown keys and bad values are errors that name the line, so a typo never silently
//! changes what a reply may touch.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::actions::Schema;

/// The `allowed-actions` entry that stands for every default action: all the filesystem
/// actions (what a reply may run without the key), so that `[defaults, exec]` adds `exec`
/// without listing the rest.
pub const DEFAULTS_ENTRY: &str = "defaults";

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
    pub notices: Vec<String>,
}

/// `fs-guard`: globs allowed and denied, for reading and for writing.
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
}

/// `stage`: the staging worktree.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StageConfig {
    /// Globs (relative to the root) of ignored files and folders kept out of the stage, and
    /// of untracked paths the file actions refuse; every other ignored entry of the user's
    /// tree is visible there (DESIGN §2 "Stage", "Secrets"). Without the key: the common
    /// secret files ([`crate::exec::isolate::DEFAULT_ISOLATE`]).
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

/// Default `gc.keep-days`.
pub const DEFAULT_KEEP_DAYS: u64 = 90;

/// Default `max_file_size`: 10 MiB.
pub const DEFAULT_MAX_FILE_SIZE: u64 = 10 * 1024 * 1024;
/// Default exec timeout.
pub const DEFAULT_EXEC_TIMEOUT: Duration = Duration::from_secs(30);
/// Default bytes kept of each exec output stream: 1 MiB.
pub const DEFAULT_MAX_OUTPUT: usize = 1024 * 1024;
/// Default hook timeout.
pub const DEFAULT_HOOK_TIMEOUT: Duration = crate::exec::hooks::DEFAULT_HOOK_TIMEOUT;

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
            },
            stage: StageConfig {
                isolate: crate::exec::isolate::DEFAULT_ISOLATE
                    .iter()
                    .map(|p| (*p).to_owned())
                    .collect(),
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
        Ok(())
    }

    /// loaf.yml's `stage` section: an error names its line.
    fn read_stage(&mut self, text: &str, dir: &Path, stage: RawStage) -> Result<(), String> {
        if let Some(isolate) = stage.isolate {
            for pattern in &isolate {
                for form in crate::exec::isolate::forms(pattern) {
                    crate::exec::isolate::glob(&form).map_err(|e| {
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
            self.notices.push(format!(
                "{}: {}stage.share is deprecated and has no effect: every ignored file and folder is now visible in the stage; remove it, and list what to keep out under stage.isolate",
                dir.join(FILE_NAME).display(),
                line_of(text, "share:")
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

/// A YAML scalar without its quotes.
fn unquoted(value: &str) -> &str {
    for quote in ['"', '\''] {
        if let Some(inner) = value
            .strip_prefix(quote)
            .and_then(|v| v.strip_suffix(quote))
        {
            return inner;
        }
    }
    value
}

/// Whether `word` occurs in `text` as a whole word (not inside a longer name).
fn has_word(text: &str, word: &str) -> bool {
    let is_name = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        !before.is_some_and(is_name) && !after.is_some_and(is_name)
    })
}

/// `line N: ` for the first line, from the top-level key `section:` on, that `matches`
/// (called with the line's key and value, comments and a list dash removed; both empty for a
/// line without a colon, the value then being the whole item), or nothing.
fn line_in_section(text: &str, section: &str, matches: impl Fn(&str, &str) -> bool) -> String {
    let start = format!("{section}:");
    // The section's own line counts too (`allowed-actions: [a, b]`).
    let Some(first) = text.lines().position(|l| l.starts_with(&start)) else {
        return String::new();
    };
    text.lines()
        .enumerate()
        .skip(first)
        .take_while(|(i, l)| *i == first || l.is_empty() || l.starts_with([' ', '\t', '-', '#']))
        .find(|(i, l)| {
            let content = l.split(" #").next().unwrap_or(l).trim();
            let content = content.strip_prefix("- ").unwrap_or(content).trim();
            let content = if *i == first {
                content.strip_prefix(&start).unwrap_or(content).trim()
            } else {
                content
            };
            match content.split_once(':') {
                Some((key, value)) => matches(key.trim(), value.trim()),
                None => matches("", content),
            }
        })
        .map(|(i, _)| format!("line {}: ", i + 1))
        .unwrap_or_default()
}

/// `line N: ` for the first line of `text` containing `needle`, or nothing.
fn line_of(text: &str, needle: &str) -> String {
    text.lines()
        .position(|l| l.contains(needle))
        .map(|i| format!("line {}: ", i + 1))
        .unwrap_or_default()
}

/// A serde-saphyr message `line L column C: what`, with the key written on line L named
/// (`line 3 column 16: max_file_size: invalid u64`), unless the message names it already.
fn name_the_key(text: &str, message: &str) -> String {
    let message = message.replace(
        "expected sequence start",
        "expected a list, e.g. [\"./**\"]",
    );
    let Some(rest) = message.strip_prefix("line ") else {
        return message;
    };
    let Some((position, what)) = rest.split_once(": ") else {
        return message.clone();
    };
    let line: Option<usize> = position.split(' ').next().and_then(|n| n.parse().ok());
    let key = line
        .and_then(|n| text.lines().nth(n.saturating_sub(1)))
        .map(|l| l.trim_start().trim_start_matches("- ").trim_start())
        .and_then(|l| l.split_once(':').map(|(k, _)| k.trim()))
        .filter(|k| !k.is_empty() && !what.contains(&format!("'{k}'")));
    match key {
        Some(key) => format!("line {position}: {key}: {what}"),
        None => message.clone(),
    }
}

/// The first line of a serde-saphyr error (`line L column C: what`), without the snippet,
/// with a did-you-mean for an unknown key.
fn first_line(message: &str) -> String {
    let line = message.lines().next().unwrap_or(message);
    let line = line.strip_prefix("error: ").unwrap_or(line);
    let Some((at, rest)) = line.split_once("unknown field `") else {
        return line.to_owned();
    };
    let Some((key, expected)) = rest.split_once("`, expected ") else {
        return line.to_owned();
    };
    let known: Vec<&str> = expected
        .trim_start_matches("one of ")
        .split(", ")
        .map(|k| k.trim_matches('`'))
        .collect();
    let hint = crate::actions::closest(key, known.iter().copied())
        .map(|s| format!(" (did you mean '{s}'?)"))
        .unwrap_or_default();
    format!(
        "{at}unknown key '{key}'{hint}; known keys here: {}",
        known.join(", ")
    )
}

/// A value that must be written as a string (a hook's `run`, a `vars` value): a number or a
/// boolean there is refused rather than turned into text (`run: 123` is almost always a
/// mistake, and `vars: {n: 010}` would not be what was written), and saphyr's error names
/// the line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Text(String);

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Text, D::Error> {
        deserializer.deserialize_any(TextVisitor)
    }
}

struct TextVisitor;

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
struct RawConfig {
    version: Option<u32>,
    #[serde(rename = "allowed-actions")]
    allowed_actions: Option<Vec<String>>,
    #[serde(rename = "fs-guard")]
    fs_guard: Option<FsGuardConfig>,
    hooks: Option<RawHooks>,
    #[serde(default)]
    vars: BTreeMap<String, Text>,
    commit_message_format: Option<String>,
    #[serde(rename = "git-hooks")]
    git_hooks: Option<bool>,
    max_file_size: Option<u64>,
    exec: Option<RawExec>,
    stage: Option<RawStage>,
    gc: Option<RawGc>,
    notes: Option<RawNotes>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNotes {
    outputs: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGc {
    #[serde(rename = "keep-days")]
    keep_days: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHooks {
    #[serde(default)]
    before: Vec<RawHook>,
    #[serde(default)]
    after: Vec<RawHook>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHook {
    run: Text,
    #[serde(rename = "continueOnError", default)]
    continue_on_error: bool,
    /// Milliseconds.
    timeout: Option<u64>,
    cwd: Option<String>,
}

impl RawHook {
    fn into_command(self) -> HookCommand {
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
struct RawExec {
    timeout: Option<u64>,
    max_output: Option<usize>,
    network: Option<bool>,
    #[serde(default)]
    writable: Vec<String>,
    sandbox: Option<String>,
}

/// An `exec.writable` entry as a path: absolute, or `~/…` under the home folder; never
/// inside the repository (`dir`), whose files only the transaction writes.
fn writable_path(entry: &str, dir: &Path) -> Result<PathBuf, String> {
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
struct RawStage {
    isolate: Option<Vec<String>>,
    share: Option<Vec<String>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stage_isolate_is_read_and_checked() {
        let config = Config::parse(
            "stage:\n  isolate: [\".env\", \"**/secrets/**\"]\n",
            Path::new(""),
        )
        .expect("valid");
        assert_eq!(config.stage.isolate, [".env", "**/secrets/**"]);
        assert!(!config.stage.isolate_built_in);
        let none = Config::parse("version: 1\n", Path::new("")).expect("valid");
        assert_eq!(none.stage.isolate, crate::exec::isolate::DEFAULT_ISOLATE);
        assert!(none.stage.isolate_built_in);
        let empty = Config::parse("stage:\n  isolate: []\n", Path::new("")).expect("valid");
        assert!(
            empty.stage.isolate.is_empty(),
            "the user's list replaces the built-in one"
        );
        let other = Config::parse("stage:\n  share: [x]\n", Path::new("")).expect("valid");
        assert_eq!(other.stage.isolate, crate::exec::isolate::DEFAULT_ISOLATE);
        assert!(config.notices.is_empty());
        let error = Config::parse("version: 1\nstage:\n  isolate: [\"a[\"]\n", Path::new(""))
            .expect_err("a bad glob");
        assert!(
            error
                .to_string()
                .contains("line 3: stage.isolate: invalid pattern 'a['"),
            "{error}"
        );
    }

    #[test]
    fn notes_outputs_is_hashes_by_default_full_on_request_and_checked() {
        let none = Config::parse("version: 1\n", Path::new("")).expect("valid");
        assert_eq!(none.notes_outputs, NotesOutputs::Hashes);
        let full = Config::parse("notes:\n  outputs: full\n", Path::new("")).expect("valid");
        assert_eq!(full.notes_outputs, NotesOutputs::Full);
        let hashes = Config::parse("notes:\n  outputs: hashes\n", Path::new("")).expect("valid");
        assert_eq!(hashes.notes_outputs, NotesOutputs::Hashes);
        let error = Config::parse("version: 1\nnotes:\n  outputs: all\n", Path::new(""))
            .expect_err("not a value");
        assert!(
            error
                .to_string()
                .contains("line 3: notes.outputs: 'all' is not one of hashes"),
            "{error}"
        );
        let error = Config::parse("notes:\n  output: full\n", Path::new("")).expect_err("typo");
        assert!(error.to_string().contains("outputs"), "{error}");
    }

    #[test]
    fn stage_share_is_accepted_with_a_notice_pointing_to_isolate() {
        let config = Config::parse("stage:\n  share: [target]\n", Path::new("")).expect("valid");
        assert_eq!(config.stage.share, ["target"]);
        assert_eq!(config.notices.len(), 1);
        assert!(
            config.notices[0].contains("line 2: stage.share is deprecated")
                && config.notices[0].contains("stage.isolate"),
            "{:?}",
            config.notices
        );
    }

    #[test]
    fn a_gc_section_sets_the_limit_and_turns_automatic_pruning_on() {
        let none = Config::parse("version: 1\n", Path::new("")).expect("valid");
        assert_eq!(
            none.gc,
            GcConfig {
                keep_days: DEFAULT_KEEP_DAYS,
                auto: false
            }
        );
        let set = Config::parse("gc:\n  keep-days: 30\n", Path::new("")).expect("valid");
        assert_eq!(
            set.gc,
            GcConfig {
                keep_days: 30,
                auto: true
            }
        );
        let error = Config::parse("gc:\n  keep_days: 30\n", Path::new("")).expect_err("typo");
        assert!(error.to_string().contains("keep-days"), "{error}");
    }

    #[test]
    fn hook_commands_and_vars_must_be_strings_and_the_error_names_the_line() {
        let run = Config::parse(
            "version: 1\nhooks:\n  after:\n    - run: 123\n",
            Path::new(""),
        )
        .expect_err("a number");
        assert!(
            run.to_string().contains("line 4") && run.to_string().contains("123 is not a string"),
            "{run}"
        );
        let var =
            Config::parse("vars:\n  name: x\n  port: 8080\n", Path::new("")).expect_err("a number");
        assert!(
            var.to_string().contains("line 3") && var.to_string().contains("8080 is not a string"),
            "{var}"
        );
        let flag = Config::parse("vars:\n  on: true\n", Path::new("")).expect_err("a boolean");
        assert!(flag.to_string().contains("line 2"), "{flag}");
        // Quoted, or text that is not a number, they are what was written.
        let fine = Config::parse(
            "vars:\n  port: \"8080\"\n  name: x1\nhooks:\n  before:\n    - run: \"123\"\n",
            Path::new(""),
        )
        .expect("strings");
        assert_eq!(fine.vars["port"], "8080");
        assert_eq!(fine.vars["name"], "x1");
        assert_eq!(fine.hooks.before[0].run, "123");
    }
}
