//! The model recipes of docs/lorch.md (issue 38), each run by `lorch agent` against a
//! stand-in of its CLI: a script that takes only the arguments the CLI documents, wants the
//! prompt on stdin as the recipe says it arrives, and prints its answer on stdout as the CLI
//! does. The recipes are read from the doc's table, so a recipe edited there into one that
//! would not run fails here.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use serde_json::{Value, json};

use crate::agent::{Agent, Workspace, command};

/// The shared end of every stand-in: the prompt must have come on stdin; the answer is
/// `$FAKE_REPLY`, on stdout.
const ANSWER: &str = r#"prompt=$(cat)
if [ -z "$prompt" ]; then echo "$name: no prompt on stdin" >&2; exit 2; fi
printf '%s\n' "$prompt" > "$FAKE_PROMPT"
cat "$FAKE_REPLY"
"#;

/// Each CLI's documented arguments (`--help` of the versions docs/lorch.md names).
const STAND_INS: [(&str, &str); 5] = [
    (
        // `claude -p` (`--print`) answers once and reads piped stdin.
        "claude",
        r#"name=claude; print=no
while [ $# -gt 0 ]; do
  case "$1" in
    -p|--print) print=yes ;;
    --disallowedTools|--allowedTools|--permission-mode|--model|--output-format) [ $# -ge 2 ] || { echo "claude: $1 needs a value" >&2; exit 2; }; shift ;;
    *) echo "claude: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
[ $print = yes ] || { echo "claude: interactive mode needs a terminal" >&2; exit 2; }
"#,
    ),
    (
        // `codex exec [--sandbox MODE] [-m MODEL] [PROMPT|-]`: `-` reads it from stdin;
        // progress on stderr, the final message on stdout.
        "codex",
        r#"name=codex
[ "$1" = exec ] || { echo "codex: interactive mode needs a terminal (use codex exec)" >&2; exit 2; }
shift; prompt_arg=""
while [ $# -gt 0 ]; do
  case "$1" in
    --sandbox|-s) case "$2" in read-only|workspace-write|danger-full-access) ;; *) echo "codex: bad --sandbox $2" >&2; exit 2 ;; esac; shift ;;
    -m|--model) [ $# -ge 2 ] || exit 2; shift ;;
    -) prompt_arg=stdin ;;
    -*) echo "codex: unknown option $1" >&2; exit 2 ;;
    *) echo "codex: the prompt is an argument, stdin is not read" >&2; prompt_arg=arg ;;
  esac
  shift
done
[ "$prompt_arg" = stdin ] || { echo "codex: no prompt (give one, or - for stdin)" >&2; exit 2; }
echo "codex: working" >&2
"#,
    ),
    (
        // `gemini -p TEXT`: headless, the text appended to what comes on stdin.
        "gemini",
        r#"name=gemini; headless=no
while [ $# -gt 0 ]; do
  case "$1" in
    -p|--prompt) [ $# -ge 2 ] || { echo "gemini: -p needs a value" >&2; exit 2; }; headless=yes; shift ;;
    -m|--model) [ $# -ge 2 ] || exit 2; shift ;;
    --yolo|-y) echo "gemini: --yolo approves every edit; not in a recipe" >&2; exit 2 ;;
    *) echo "gemini: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
[ $headless = yes ] || { echo "gemini: interactive mode needs a terminal" >&2; exit 2; }
"#,
    ),
    (
        // `llm [-m MODEL] [PROMPT]`: without a prompt argument it reads stdin.
        "llm",
        r#"name=llm
while [ $# -gt 0 ]; do
  case "$1" in
    -m|--model) [ $# -ge 2 ] || { echo "llm: -m needs a model" >&2; exit 2; }; shift ;;
    -*) echo "llm: unknown option $1" >&2; exit 2 ;;
    *) echo "llm: a prompt argument: stdin is ignored" >&2; exit 2 ;;
  esac
  shift
done
"#,
    ),
    (
        // `ollama run MODEL [PROMPT]`: a piped prompt on stdin.
        "ollama",
        r#"name=ollama
[ "$1" = run ] || { echo "ollama: unknown command $1" >&2; exit 2; }
[ $# -ge 2 ] || { echo "ollama: run needs a model" >&2; exit 2; }
shift 2
[ $# -eq 0 ] || { echo "ollama: a prompt argument: stdin is ignored" >&2; exit 2; }
"#,
    ),
];

/// The recipes of docs/lorch.md's table: each row's command, as JSON.
fn recipes() -> Vec<Vec<String>> {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/lorch.md"))
        .expect("docs/lorch.md");
    let start = doc
        .find("## Recipes for real model CLIs")
        .expect("the recipes section");
    let section = &doc[start..];
    let end = section[3..].find("\n## ").map_or(section.len(), |e| e + 3);
    section[..end]
        .lines()
        .filter(|l| l.starts_with("| ") && l.contains("`[\""))
        .map(|row| {
            let cell = row.split('|').nth(2).expect("command column").trim();
            let json = cell.trim_matches('`');
            serde_json::from_str(json).unwrap_or_else(|e| panic!("{json}: {e}"))
        })
        .collect()
}

fn install_stand_ins(bin: &Path) {
    std::fs::create_dir_all(bin).expect("mkdir");
    for (name, args) in STAND_INS {
        let path = bin.join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{args}{ANSWER}")).expect("stand-in");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
}

#[test]
fn every_recipe_of_the_doc_runs_against_a_stand_in_of_its_cli() {
    let recipes = recipes();
    let programs: Vec<&str> = recipes.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(
        programs,
        ["llm", "ollama", "claude", "codex", "gemini"],
        "the doc's table"
    );
    for recipe in &recipes {
        let ws = Workspace::with(&[("src/a.rs", "fn a() {}\n")]);
        let bin = ws.scratch("bin");
        install_stand_ins(&bin);
        let path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let reply = ws.reply("review.md", "Reads well.\nVERDICT: approved\n");
        let cmd: Vec<&str> = recipe.iter().map(String::as_str).collect();
        let mut agent = Agent::start_cmd(&ws, "reviewer", &[], &cmd, &reply, &[("PATH", &path)]);
        agent.send(&command(
            "reviewer",
            "review",
            "c-1",
            "ik-review-recipe-0001",
            json!({}),
        ));
        let answer: Vec<Value> = agent.answer();
        let done = answer.last().expect("an answer");
        assert_eq!(
            (done["event"].as_str(), done["status"].as_str()),
            (Some("review.completed"), Some("approved")),
            "{recipe:?}: {done:#}"
        );
        let prompt = std::fs::read_to_string(ws.scratch("prompt")).expect("the prompt");
        assert!(
            prompt.contains("VERDICT"),
            "{recipe:?} got the prompt: {prompt}"
        );
    }
}

#[test]
fn a_recipe_that_would_not_run_is_caught_by_its_stand_in() {
    let ws = Workspace::with(&[("src/a.rs", "fn a() {}\n")]);
    let bin = ws.scratch("bin");
    install_stand_ins(&bin);
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let reply = ws.reply("review.md", "VERDICT: approved\n");
    // codex without `exec` (interactive), llm given the prompt as an argument.
    for cmd in [&["codex"][..], &["llm", "-m", "MODEL", "review this"][..]] {
        let mut agent = Agent::start_cmd(&ws, "reviewer", &[], cmd, &reply, &[("PATH", &path)]);
        agent.send(&command(
            "reviewer",
            "review",
            "c-1",
            "ik-review-bad-recipe-01",
            json!({}),
        ));
        let answer = agent.answer();
        let done = answer.last().expect("an answer");
        assert_eq!(done["event"], "error", "{cmd:?}: {done:#}");
        assert_eq!(done["payload"]["code"], "agent_command_failed", "{cmd:?}");
    }
}
