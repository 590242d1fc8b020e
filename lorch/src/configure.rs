//! `lorch config` (docs/lorch.md, "`lorch config`"): the interactive editor of
//! `lorch.json`.
//!
//! It shows the current values, then asks, one line each, for every agent's command (the
//! orchestration agent's too, which `lorch run` without `--task` needs), `spec_path`,
//! `policy.max_turns` and the tasks to add or edit (id, goal, files); Enter keeps a value.
//! Each answer is checked as it is given (the second tier of checks: programs found, paths
//! inside the workspace, [`answers`]) and asked again with the reason when it does not
//! pass; the whole file is then checked against the schema (the first tier), the changes
//! are listed, and lorch.json is written (temp file + rename, 0600) only if the user says
//! yes.
//!
//! Answers are read from any [`BufRead`], prompts written to any [`Write`]: the command line
//! passes the terminal, tests a script. The editor works on lorch.json as JSON, so that keys
//! it does not ask about (`env`, `timeouts_s`, `enabled`, …) stay as they were.

mod answers;
mod words;

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use thiserror::Error;

use super::config::{self, ConfigError, DEFAULT_MAX_TURNS, DEFAULT_SPEC_PATH, FILE_NAME};
use super::safety;

/// The agents whose commands `lorch config` asks for, in lorch.json's order (the
/// orchestration agent is optional: only `lorch run` without `--task` needs it).
const ROLES: [&str; 4] = ["builder", "reviewer", "spec_maintainer", "orchestration"];

/// How an edit ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// lorch.json was written.
    Written(PathBuf),
    /// Every answer kept the current value: nothing to write.
    Unchanged,
    /// The user said no to writing the changes.
    Declined,
}

/// Why `lorch config` stopped without writing.
#[derive(Debug, Error)]
pub enum ConfigureError {
    /// The answers ended (stdin closed) before the user confirmed.
    #[error("the answers ended before you confirmed: {} is as it was", .0.display())]
    InputEnded(PathBuf),
    /// lorch.json cannot be read, or what the answers made of it is invalid.
    #[error("{0}\n(fix lorch.json by hand, or move it away to start again from the defaults)")]
    Config(#[from] ConfigError),
    /// The terminal could not be read or written.
    #[error("the terminal: {0}")]
    Terminal(#[from] std::io::Error),
}

/// Runs the editor on `base/lorch.json` (the defaults when there is none yet).
/// `echo` repeats each answer after its prompt, for answers that do not come from a terminal.
pub fn edit(
    base: &Path,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
    echo: bool,
) -> Result<Outcome, ConfigureError> {
    let path = base.join(FILE_NAME);
    let (original, fresh) = read(&path)?;
    let workspace = base.join(original["workspace_root"].as_str().unwrap_or("."));
    let mut editor = Editor {
        base,
        workspace,
        path: path.clone(),
        input,
        out,
        echo,
        changes: Vec::new(),
    };
    editor.show(&original, fresh)?;
    let mut value = original.clone();
    editor.agents(&mut value)?;
    editor.spec_path(&mut value)?;
    editor.max_turns(&mut value)?;
    editor.tasks(&mut value)?;
    if editor.changes.is_empty() && !fresh {
        writeln!(editor.out, "No changes: {} is as it was.", path.display())?;
        return Ok(Outcome::Unchanged);
    }
    let mut text = serde_json::to_string_pretty(&value).unwrap_or_default();
    text.push('\n');
    config::parse(&path, &text)?;
    if !editor.confirm(fresh)? {
        writeln!(editor.out, "Not written: {} is as it was.", path.display())?;
        return Ok(Outcome::Declined);
    }
    safety::atomic_write(&path, text.as_bytes()).map_err(|source| ConfigError::Io {
        path: path.clone(),
        source,
    })?;
    writeln!(editor.out, "Wrote {}.", path.display())?;
    Ok(Outcome::Written(path))
}

/// lorch.json as JSON once it passes the schema, or the defaults; whether it was absent.
fn read(path: &Path) -> Result<(Value, bool), ConfigError> {
    let (text, fresh) = match std::fs::read_to_string(path) {
        Ok(text) => (text, false),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => (config::default_text(), true),
        Err(source) => {
            return Err(ConfigError::Io {
                path: path.to_owned(),
                source,
            });
        }
    };
    config::parse(path, &text)?;
    let value = serde_json::from_str(&text).map_err(|e| ConfigError::NotJson {
        path: path.to_owned(),
        message: e.to_string(),
    })?;
    Ok((value, fresh))
}

/// One session: where answers come from and go, and the changes made so far.
struct Editor<'a> {
    base: &'a Path,
    workspace: PathBuf,
    path: PathBuf,
    input: &'a mut dyn BufRead,
    out: &'a mut dyn Write,
    echo: bool,
    /// `what: before → after`, one per answer that changed something.
    changes: Vec<String>,
}

/// What Enter means at a prompt.
enum Enter<'s> {
    /// Keeps the value shown in brackets.
    Keeps(&'s str),
    /// Ends a list (no value shown).
    Ends,
    /// Is not an answer: a value is needed.
    Refused,
}

impl Editor<'_> {
    /// The current values, and how the questions work.
    fn show(&mut self, value: &Value, fresh: bool) -> std::io::Result<()> {
        if fresh {
            writeln!(
                self.out,
                "lorch config: there is no {} yet; starting from the defaults (written only when you confirm).",
                self.path.display()
            )?;
        } else {
            writeln!(self.out, "lorch config: {}", self.path.display())?;
        }
        for role in ROLES {
            writeln!(self.out, "  {role} command: {}", command_of(value, role))?;
        }
        writeln!(self.out, "  spec_path: {}", spec_path_of(value))?;
        writeln!(self.out, "  policy.max_turns: {}", max_turns_of(value))?;
        for task in value["tasks"].as_array().into_iter().flatten() {
            writeln!(
                self.out,
                "  task {}: {}",
                str_of(&task["id"]),
                str_of(&task["goal"])
            )?;
            writeln!(self.out, "    files: {}", files_of(task))?;
        }
        writeln!(
            self.out,
            "Enter keeps the value in brackets. Every answer is checked; nothing is written before you confirm."
        )
    }

    fn agents(&mut self, value: &mut Value) -> Result<(), ConfigureError> {
        for role in ROLES {
            let current = command_of(value, role);
            let (base, label) = (self.base, format!("{role} command"));
            if let Some(cmd) = self.ask(&label, Enter::Keeps(&current), |a| {
                answers::command(role, a, base)
            })? {
                self.changed(&format!("agents.{role}.cmd"), &current, &words::join(&cmd));
                value["agents"][role]["cmd"] = json!(cmd);
            }
        }
        Ok(())
    }

    fn spec_path(&mut self, value: &mut Value) -> Result<(), ConfigureError> {
        let current = spec_path_of(value);
        let ws = self.workspace.clone();
        if let Some(path) = self.ask("spec_path", Enter::Keeps(&current), |a| {
            answers::spec_path(a, &ws)
        })? {
            self.changed("spec_path", &current, &path);
            value["spec_path"] = json!(path);
        }
        Ok(())
    }

    fn max_turns(&mut self, value: &mut Value) -> Result<(), ConfigureError> {
        let current = max_turns_of(value).to_string();
        if let Some(n) = self.ask(
            "policy.max_turns",
            Enter::Keeps(&current),
            answers::max_turns,
        )? {
            self.changed("policy.max_turns", &current, &n.to_string());
            value["policy"]["max_turns"] = json!(n);
        }
        Ok(())
    }

    /// Tasks to add or edit, one id at a time, until Enter.
    fn tasks(&mut self, value: &mut Value) -> Result<(), ConfigureError> {
        let mut tasks: Vec<Value> = value["tasks"].as_array().cloned().unwrap_or_default();
        let label = "task to add or edit, by id (Enter: no more)";
        let mut asked = false;
        while let Some(id) = self.ask(label, Enter::Ends, answers::task_id)? {
            asked = true;
            let at = tasks.iter().position(|t| t["id"] == id.as_str());
            let before = at.map(|i| tasks[i].clone());
            let task = self.task(&id, before.clone())?;
            self.task_changed(before.as_ref(), &task);
            match at {
                Some(i) => tasks[i] = task,
                None => tasks.push(task),
            }
        }
        if asked {
            value["tasks"] = json!(tasks);
        }
        Ok(())
    }

    /// The goal and files of task `id` (`before`, when it exists).
    fn task(&mut self, id: &str, before: Option<Value>) -> Result<Value, ConfigureError> {
        let mut task = before.unwrap_or_else(|| json!({ "id": id, "goal": "" }));
        let old_goal = str_of(&task["goal"]).to_owned();
        let enter = if answers::goal(&old_goal).is_ok() {
            Enter::Keeps(&old_goal)
        } else {
            Enter::Refused
        };
        if let Some(goal) = self.ask(&format!("  {id} goal"), enter, answers::goal)? {
            task["goal"] = json!(goal);
        }
        let old_files = files_of(&task);
        let ws = self.workspace.clone();
        let label = format!("  {id} files (blank-separated, `-` for none)");
        if let Some(files) =
            self.ask(&label, Enter::Keeps(&old_files), |a| answers::files(a, &ws))?
        {
            task["files"] = json!(files);
        }
        Ok(task)
    }

    fn task_changed(&mut self, before: Option<&Value>, after: &Value) {
        let id = str_of(&after["id"]);
        let shown = |t: &Value| format!("{} (files: {})", str_of(&t["goal"]), files_of(t));
        match before {
            None => self
                .changes
                .push(format!("tasks: added {id}: {}", shown(after))),
            Some(b) if b != after => self.changed(&format!("task {id}"), &shown(b), &shown(after)),
            Some(_) => {}
        }
    }

    fn changed(&mut self, what: &str, before: &str, after: &str) {
        if before != after {
            self.changes.push(format!("{what}: {before} → {after}"));
        }
    }

    /// Lists the changes and asks whether to write them.
    fn confirm(&mut self, fresh: bool) -> Result<bool, ConfigureError> {
        writeln!(self.out, "Changes:")?;
        if fresh {
            writeln!(self.out, "  {} created", FILE_NAME)?;
        }
        for change in &self.changes {
            writeln!(self.out, "  {change}")?;
        }
        let yes_no = |a: &str| match a.to_ascii_lowercase().as_str() {
            "y" | "yes" => Ok(true),
            "n" | "no" => Ok(false),
            _ => Err("answer y or n".to_owned()),
        };
        let label = format!("Write {}? (y/n)", FILE_NAME);
        Ok(self.ask(&label, Enter::Refused, yes_no)?.unwrap_or(false))
    }

    /// Asks until the answer passes `check`; `None` when Enter keeps the value or ends a list.
    fn ask<T>(
        &mut self,
        label: &str,
        enter: Enter<'_>,
        check: impl Fn(&str) -> Result<T, String>,
    ) -> Result<Option<T>, ConfigureError> {
        loop {
            match enter {
                Enter::Keeps(current) => write!(self.out, "{label} [{current}]: ")?,
                Enter::Ends | Enter::Refused => write!(self.out, "{label}: ")?,
            }
            self.out.flush()?;
            let mut line = String::new();
            if self.input.read_line(&mut line)? == 0 {
                writeln!(self.out)?;
                return Err(ConfigureError::InputEnded(self.path.clone()));
            }
            let answer = line.trim();
            if self.echo {
                writeln!(self.out, "{answer}")?;
            }
            let result = match (answer.is_empty(), &enter) {
                (true, Enter::Keeps(_) | Enter::Ends) => return Ok(None),
                // No value to keep: the check says what is needed.
                _ => check(answer),
            };
            match result {
                Ok(v) => return Ok(Some(v)),
                Err(why) => writeln!(self.out, "  not accepted: {why}. Try again.")?,
            }
        }
    }
}

fn str_of(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

fn command_of(value: &Value, role: &str) -> String {
    let cmd: Vec<String> = value["agents"][role]["cmd"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|w| str_of(w).to_owned())
        .collect();
    if cmd.is_empty() {
        // Not configured (the orchestration agent): Enter leaves it so.
        return "-".to_owned();
    }
    words::join(&cmd)
}

fn spec_path_of(value: &Value) -> String {
    value["spec_path"]
        .as_str()
        .unwrap_or(DEFAULT_SPEC_PATH)
        .to_owned()
}

fn max_turns_of(value: &Value) -> u64 {
    value["policy"]["max_turns"]
        .as_u64()
        .unwrap_or(u64::from(DEFAULT_MAX_TURNS))
}

fn files_of(task: &Value) -> String {
    let files: Vec<String> = task["files"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| str_of(f).to_owned())
        .collect();
    if files.is_empty() {
        "-".to_owned()
    } else {
        words::join(&files)
    }
}
