//! `lorch doctor` (the environment: `lorch.json`, agent commands, a writable workspace, git)
//! and `lorch validate --schemas` (every message recorded in the ledgers and the agents' logs
//! against the protocol's schemas; the lines agents sent that were refused, recorded as
//! `system.protocol_error`, count as failures of those agents).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::config::{self, Config};
use super::protocol::{AgentType, Message};
use super::validate::{check_schemas, validate};

/// One check: what, whether it passed, details.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// What was checked.
    pub what: String,
    /// Passed.
    pub ok: bool,
    /// Why not, or what was found.
    pub detail: String,
}

impl std::fmt::Display for Check {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mark = if self.ok { "ok  " } else { "FAIL" };
        write!(f, "{mark} {}", self.what)?;
        if !self.detail.is_empty() {
            write!(f, ": {}", self.detail)?;
        }
        Ok(())
    }
}

fn check(what: impl Into<String>, result: Result<String, String>) -> Check {
    let (ok, detail) = match result {
        Ok(d) => (true, d),
        Err(d) => (false, d),
    };
    Check {
        what: what.into(),
        ok,
        detail,
    }
}

/// Where `program` would be run from: itself when it has a `/`, else the first executable
/// of that name on `PATH`.
pub fn find_program(program: &str, base: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    let executable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let p = base.join(program);
        return executable(&p).then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| executable(p))
}

/// The checks of `lorch doctor`, run in `base` (the folder of `lorch.json`).
pub fn doctor(base: &Path) -> Vec<Check> {
    let mut checks = Vec::new();
    checks.push(check(
        "protocol schemas compile",
        check_schemas().map(|()| String::new()),
    ));
    let config: Option<Config> = match config::load(base) {
        Ok(Some(c)) => {
            checks.push(check("lorch.json", Ok("valid".to_owned())));
            Some(c)
        }
        Ok(None) => {
            checks.push(check(
                "lorch.json",
                Ok("absent: created with the defaults on the first run".to_owned()),
            ));
            config::parse(Path::new(config::FILE_NAME), &config::default_text())
                .ok()
                .map(|mut c| {
                    c.find_spec(&c.workspace(base));
                    c
                })
        }
        Err(e) => {
            checks.push(check("lorch.json", Err(e.to_string())));
            None
        }
    };
    if let Some(config) = &config {
        for agent in config.configured_agents() {
            for program in programs(&config.agents.get(agent).cmd) {
                checks.push(check(
                    format!("{agent} command `{program}`"),
                    find_program(program, base)
                        .map(|p| p.display().to_string())
                        .ok_or_else(|| "not found (not on PATH, or not executable)".to_owned()),
                ));
            }
        }
        let builder = &config.agents.get(AgentType::Builder).cmd;
        if is_shim(builder) {
            checks.push(check("builder runs checks", builder_checks(builder)));
            checks.push(check("builder runs lint", Ok(builder_lints(builder))));
        }
        let ws = config.workspace(base);
        for agent in config.configured_agents() {
            if sandboxed(&config.agents.get(agent).cmd) {
                checks.push(check(
                    format!("{agent} sandbox (--sandbox)"),
                    crate::agent::sandbox::contain(&ws, None, &[])
                        .map(|_| "git-loaf's namespaces can be made".to_owned()),
                ));
            }
        }
        checks.push(check("workspace writable", writable(&ws)));
        let shims = config
            .configured_agents()
            .iter()
            .any(|a| is_shim(&config.agents.get(*a).cmd));
        let spec = match &config.configured_spec_path {
            Some(path) => format!("spec `{path}` (spec_path)"),
            None => format!("spec `{}` (spec_path unset)", config.spec_path),
        };
        checks.push(check(spec, spec_file(&ws, config)));
        checks.push(check("records", Ok(records_place(&ws))));
        checks.push(check(
            "workspace is a git repository",
            match git2::Repository::discover(&ws) {
                Ok(r) => Ok(r
                    .workdir()
                    .map(|w| w.display().to_string())
                    .unwrap_or_default()),
                Err(e) if shims => Err(format!(
                    "{}: `lorch agent` commits its work through git-loaf, which needs one (git init)",
                    e.message()
                )),
                Err(_) => Ok("no (no agent is `lorch agent`, which would need one)".to_owned()),
            },
        ));
    }
    checks.push(check(
        "git on PATH",
        find_program("git", base)
            .map(|p| p.display().to_string())
            .ok_or_else(|| "not found".to_owned()),
    ));
    let ws = config
        .as_ref()
        .map_or_else(|| base.to_owned(), |c| c.workspace(base));
    checks.push(check("git identity", git_identity(&ws)));
    checks
}

/// The name and email git would sign the builder's commits with (`GIT_AUTHOR_NAME`, …,
/// else `user.name`/`user.email`), or the commands that set them.
fn git_identity(ws: &Path) -> Result<String, String> {
    let Ok(repo) = git2::Repository::discover(ws) else {
        return Ok("not needed: the workspace is not a git repository".to_owned());
    };
    let mut found = Vec::new();
    for role in ["AUTHOR", "COMMITTER"] {
        let sig = git_loaf::api::identity(&repo, role).map_err(|_| no_identity())?;
        found.push(format!(
            "{} <{}>",
            sig.name().unwrap_or("?"),
            sig.email().unwrap_or("?")
        ));
    }
    found.dedup();
    Ok(found.join(", committer "))
}

fn no_identity() -> String {
    "not set: git (and git-loaf, which commits the builder's work) needs your name and email. \
     Set them with:\n    git config --global user.name \"Your Name\"\n    git config --global \
     user.email \"you@example.com\"\n  (or without --global, for this repository only)"
        .to_owned()
}

/// Where lorch keeps its records in `ws`, and why there.
fn records_place(ws: &Path) -> String {
    let ws = &ws.canonicalize().unwrap_or_else(|_| ws.to_owned());
    match super::records::location(ws) {
        super::records::Location::Top => format!(
            "{} (events/, state/, receipts/, snapshots/, logs/, transcripts/ at the top, §5.2)",
            ws.display()
        ),
        super::records::Location::OwnFolder(why) => format!(
            "{} ({why}: the §5.2 layout inside lorch's own folder)",
            ws.join(super::records::OWN_DIR).display()
        ),
    }
}

/// The programs an agent command runs: its first word, and for `lorch agent ROLE -- CMD…`
/// the LLM command after `--` as well (the shim would only fail later, on the first command).
pub(crate) fn programs(cmd: &[String]) -> Vec<&str> {
    let mut out: Vec<&str> = cmd.first().map(String::as_str).into_iter().collect();
    if is_shim(cmd)
        && let Some(at) = cmd.iter().position(|a| a == "--")
        && let Some(llm) = cmd.get(at + 1)
    {
        out.push(llm);
    }
    out
}

/// The `--check` commands of `lorch agent builder …`: lorch accepts a builder's step only
/// with passing tests, so a builder that runs none could never finish one.
pub(crate) fn builder_checks(cmd: &[String]) -> Result<String, String> {
    let checks = shim_flag(cmd, "--check");
    if checks.is_empty() {
        Err("none: a step is accepted only with passing tests (§4); add `--check CMD` before `--` (e.g. --check 'cargo test')".to_owned())
    } else {
        Ok(checks.join("; "))
    }
}

/// The `--lint` commands of `lorch agent builder …` (optional: without any,
/// `builder.completed` carries no lint results).
fn builder_lints(cmd: &[String]) -> String {
    let lints = shim_flag(cmd, "--lint");
    if lints.is_empty() {
        "none (add `--lint CMD` before `--`, e.g. --lint 'cargo clippy', for builder.completed to carry lint results, §4.1.3)".to_owned()
    } else {
        lints.join("; ")
    }
}

/// The values of the shim's own `flag` (`--check X` or `--check=X`) before `--`.
fn shim_flag<'a>(cmd: &'a [String], flag: &str) -> Vec<&'a str> {
    let own = cmd
        .iter()
        .position(|a| a == "--")
        .map_or(cmd, |at| &cmd[..at]);
    own.iter()
        .enumerate()
        .filter_map(|(i, a)| match a.strip_prefix(flag) {
            Some("") => own.get(i + 1).map(String::as_str),
            Some(rest) => rest.strip_prefix('='),
            None => None,
        })
        .collect()
}

/// Whether an agent command is `lorch agent … --sandbox … -- CMD` (the shim would refuse
/// to start where the sandbox cannot be made).
fn sandboxed(cmd: &[String]) -> bool {
    is_shim(cmd)
        && cmd
            .iter()
            .take_while(|a| *a != "--")
            .any(|a| a == "--sandbox")
}

/// Whether an agent command is lorch's own shim, `lorch agent ROLE …`.
pub(crate) fn is_shim(cmd: &[String]) -> bool {
    cmd.first()
        .is_some_and(|p| p.rsplit('/').next() == Some("lorch"))
        && cmd.get(1).is_some_and(|a| a == "agent")
}

/// The spec file inside the workspace: the spec-maintainer reads and edits it at the end of
/// every run, after all the builder's work. Without `spec_path`, both places lorch looks
/// are named.
fn spec_file(ws: &Path, config: &Config) -> Result<String, String> {
    let path = super::safety::confine(ws, &config.spec_path).map_err(|e| e.to_string())?;
    if path.is_file() {
        return Ok(path.display().to_string());
    }
    if config.configured_spec_path.is_some() {
        return Err(format!(
            "{} does not exist: write the spec there, or set spec_path in lorch.json to where it is",
            path.display()
        ));
    }
    let places: Vec<String> = config::SPEC_PATHS
        .iter()
        .map(|p| {
            let path = super::safety::confine(ws, p).unwrap_or_else(|_| ws.join(p));
            path.display().to_string()
        })
        .collect();
    Err(format!(
        "neither {} (the spec's layout, §5.2) nor {} exists: write the spec at one of them, \
         or set spec_path in lorch.json to where it is",
        places[0], places[1]
    ))
}

fn writable(ws: &Path) -> Result<String, String> {
    let probe = ws.join(format!(".lorch-doctor.{}", std::process::id()));
    std::fs::write(&probe, b"probe").map_err(|e| format!("{}: {e}", ws.display()))?;
    let _ = std::fs::remove_file(&probe);
    Ok(ws.display().to_string())
}

/// What `lorch validate --schemas` found in one file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileReport {
    /// The file, relative to the workspace.
    pub file: String,
    /// Messages that validate.
    pub valid: usize,
    /// `line N: problem` for each that does not, and for each protocol error recorded.
    pub problems: Vec<String>,
}

/// Validates every ledger (`events/run-*.ndjson`) and agent log (`logs/*/run-*.ndjson`) of
/// `workspace`.
pub fn validate_recorded(workspace: &Path) -> std::io::Result<Vec<FileReport>> {
    let mut files = Vec::new();
    let mut collect = |dir: PathBuf| -> std::io::Result<()> {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return Ok(());
        };
        for entry in entries {
            let path = entry?.path();
            if path.extension().is_some_and(|e| e == "ndjson") {
                files.push(path);
            }
        }
        Ok(())
    };
    let records = super::records::root(workspace);
    collect(records.join("events"))?;
    if let Ok(agents) = std::fs::read_dir(records.join("logs")) {
        for agent in agents {
            collect(agent?.path())?;
        }
    }
    files.sort();
    let mut reports = Vec::new();
    for path in files {
        let text = std::fs::read(&path)?;
        let mut report = FileReport {
            file: path
                .strip_prefix(workspace)
                .unwrap_or(&path)
                .display()
                .to_string(),
            ..FileReport::default()
        };
        for (i, line) in text.split(|b| *b == b'\n').enumerate() {
            if line.is_empty() {
                continue;
            }
            match validate(line) {
                Ok(Message::Event(e)) if e.event.as_str() == "system.protocol_error" => {
                    report.valid += 1;
                    let get = |k: &str| e.payload.get(k).and_then(Value::as_str).unwrap_or("");
                    report.problems.push(format!(
                        "line {}: {} sent an invalid line: {}",
                        i + 1,
                        get("agent"),
                        get("error")
                    ));
                }
                Ok(_) => report.valid += 1,
                Err(e) => report.problems.push(format!("line {}: {e}", i + 1)),
            }
        }
        reports.push(report);
    }
    Ok(reports)
}
