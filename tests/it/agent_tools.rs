//! Per-tool attribution in record mode (DESIGN §3b, issue 36): each agent's documented tool
//! events (fixtures in `fixtures/agents/`) make a change during one of its tool calls the
//! agent's and one between them the user's, which stays out of the turn's commit at hunk
//! level and survives undo and redo of it; two sessions interleaved each commit their own.

use serde_json::{Value, json};

use crate::agents::{changed, event, hook};
use crate::scratch::{Scratch, trailer};

/// The file both the agent and the user edit, and its lines before the turn.
const CODE: &str = "code.txt";
const CODE_BEFORE: &str = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\n";

/// An agent and the fixtures of its events.
#[derive(Clone, Copy)]
struct AgentEvents {
    name: &'static str,
    begin: &'static str,
    end: &'static str,
}

const CLAUDE: AgentEvents = AgentEvents {
    name: "claude-code",
    begin: "claude-code/user_prompt_submit.json",
    end: "claude-code/stop.json",
};
const CODEX: AgentEvents = AgentEvents {
    name: "codex",
    begin: "codex/user_prompt_submit.json",
    end: "codex/stop.json",
};
const CURSOR: AgentEvents = AgentEvents {
    name: "cursor",
    begin: "cursor/before_submit_prompt.json",
    end: "cursor/stop.json",
};
const GEMINI: AgentEvents = AgentEvents {
    name: "gemini",
    begin: "gemini/before_agent.json",
    end: "gemini/after_agent.json",
};

/// The fixture `file` with `changes` (top-level fields) made.
fn event_with(scratch: &Scratch, file: &str, changes: &[(&str, Value)]) -> String {
    let mut value: Value = serde_json::from_str(&event(scratch, file, None)).expect("JSON");
    for (key, new) in changes {
        value[*key] = new.clone();
    }
    value.to_string()
}

/// Runs the hook with `input`, which must succeed and print what the agent expects.
fn run(scratch: &Scratch, agent: AgentEvents, input: &str) {
    let out = hook(scratch, agent.name, input);
    scratch.assert_exit(&out, 0);
    let expected = match agent.name {
        "cursor" | "gemini" => "{}\n",
        _ => "",
    };
    if !input.contains("beforeSubmitPrompt") {
        assert_eq!(String::from_utf8_lossy(&out.stdout), expected, "{input}");
    }
}

fn begin(scratch: &Scratch, agent: AgentEvents, prompt: &str) {
    run(scratch, agent, &event(scratch, agent.begin, Some(prompt)));
}

fn end(scratch: &Scratch, agent: AgentEvents) {
    run(scratch, agent, &event(scratch, agent.end, None));
}

/// The agent's edit tool replacing `old` by `new` in `path`, with the events its hooks get:
/// a start and an end naming the file (Claude Code's `Edit`, Gemini CLI's `replace`,
/// Codex's `apply_patch`), or Cursor's `afterFileEdit` with the edit.
fn agent_edit(scratch: &Scratch, agent: AgentEvents, path: &str, old: &str, new: &str) {
    let edit = || {
        let text = scratch.read(path).expect("the file");
        assert!(text.contains(old), "{path}: {text}");
        scratch.write(path, &text.replacen(old, new, 1));
    };
    let absolute = scratch.root.join(path).display().to_string();
    let tool = |pre: bool| -> String {
        let (file, tool_name, input) = match agent.name {
            "claude-code" => (
                if pre {
                    "claude-code/pre_tool_use.json"
                } else {
                    "claude-code/post_tool_use.json"
                },
                "Edit",
                json!({"file_path": absolute, "old_string": old, "new_string": new}),
            ),
            "gemini" => (
                if pre {
                    "gemini/before_tool.json"
                } else {
                    "gemini/after_tool.json"
                },
                "replace",
                json!({"file_path": absolute, "old_string": old, "new_string": new}),
            ),
            _ => (
                if pre {
                    "codex/pre_tool_use.json"
                } else {
                    "codex/post_tool_use.json"
                },
                "apply_patch",
                json!({"command": format!(
                    "*** Begin Patch\n*** Update File: {path}\n@@\n-{old}\n+{new}\n*** End Patch\n"
                )}),
            ),
        };
        event_with(
            scratch,
            file,
            &[("tool_name", tool_name.into()), ("tool_input", input)],
        )
    };
    if agent.name == "cursor" {
        edit();
        let after = event_with(
            scratch,
            "cursor/after_file_edit.json",
            &[
                ("file_path", absolute.clone().into()),
                ("edits", json!([{"old_string": old, "new_string": new}])),
            ],
        );
        run(scratch, agent, &after);
        return;
    }
    run(scratch, agent, &tool(true));
    edit();
    run(scratch, agent, &tool(false));
}

/// The agent's shell tool running `command` (here: `work`), with the events its hooks get.
fn agent_shell(scratch: &Scratch, agent: AgentEvents, work: impl FnOnce()) {
    let shell = json!({"command": "make"});
    let (pre, post) = match agent.name {
        "claude-code" => (
            event_with(
                scratch,
                "claude-code/pre_tool_use.json",
                &[("tool_name", "Bash".into()), ("tool_input", shell.clone())],
            ),
            event_with(
                scratch,
                "claude-code/post_tool_use.json",
                &[("tool_name", "Bash".into()), ("tool_input", shell)],
            ),
        ),
        "gemini" => (
            event_with(
                scratch,
                "gemini/before_tool.json",
                &[
                    ("tool_name", "run_shell_command".into()),
                    ("tool_input", shell.clone()),
                ],
            ),
            event_with(
                scratch,
                "gemini/after_tool.json",
                &[
                    ("tool_name", "run_shell_command".into()),
                    ("tool_input", shell),
                ],
            ),
        ),
        "codex" => (
            event(scratch, "codex/pre_tool_use.json", None),
            event(scratch, "codex/post_tool_use.json", None),
        ),
        _ => (
            event(scratch, "cursor/before_shell_execution.json", None),
            event(scratch, "cursor/after_shell_execution.json", None),
        ),
    };
    run(scratch, agent, &pre);
    work();
    run(scratch, agent, &post);
}

/// A repository with `code.txt` committed and the user's untracked notes.
fn repo() -> Scratch {
    let scratch = Scratch::with(&[(CODE, CODE_BEFORE), ("README.md", "hi\n")]);
    scratch.write("MYNOTES.txt", "my notes\n");
    scratch
}

/// The user's edit of `path`: its line `old` replaced by `new`.
fn edited(scratch: &Scratch, path: &str, old: &str, new: &str) {
    let text = scratch.read(path).expect("the file");
    users_write(scratch, path, &text.replacen(old, new, 1));
}

/// The user's edit of `path`: `line` added at its end.
fn append(scratch: &Scratch, path: &str, line: &str) {
    let text = scratch.read(path).unwrap_or_default();
    users_write(scratch, path, &format!("{text}{line}"));
}

/// Writes `path` as the user does between the agent's calls: a moment before the next one
/// starts. A shell call's start is a mark whose time the filesystem stamps, in ticks of a
/// few milliseconds; a test's edit and the hook that follows it can fall in one tick, which
/// a person at a keyboard never does: the file is stamped a second earlier.
fn users_write(scratch: &Scratch, path: &str, content: &str) {
    scratch.write(path, content);
    let file = std::fs::File::options()
        .write(true)
        .open(scratch.root.join(path))
        .expect("open");
    let earlier = std::time::SystemTime::now() - std::time::Duration::from_secs(1);
    file.set_modified(earlier).expect("stamp");
}

/// Each agent's turn: two edits of `code.txt` and a shell command, with the user's own
/// edits between the calls (a changed line in `code.txt`, a new line in the untracked
/// notes) and after the last one.
#[test]
fn the_users_mid_turn_edits_stay_out_of_each_agents_commit_and_survive_undo_and_redo() {
    for agent in [CLAUDE, GEMINI, CODEX, CURSOR] {
        let scratch = repo();
        let initial = scratch.head();
        let before = scratch.state();
        begin(&scratch, agent, "Shout two and four, then build");
        agent_edit(&scratch, agent, CODE, "two\n", "TWO (agent)\n");
        edited(&scratch, CODE, "seven\n", "seven (mine)\n");
        append(&scratch, "MYNOTES.txt", "a new line\n");
        agent_edit(&scratch, agent, CODE, "four\n", "FOUR (agent)\n");
        agent_shell(&scratch, agent, || scratch.write("build.txt", "built\n"));
        append(&scratch, "MYNOTES.txt", "and after\n");
        end(&scratch, agent);

        let name = agent.name;
        assert_eq!(
            scratch.git(&["rev-parse", "HEAD~1"]).trim(),
            initial,
            "{name}"
        );
        assert_eq!(
            changed(&scratch, "HEAD"),
            "A\tbuild.txt\nM\tcode.txt\n",
            "{name}"
        );
        assert_eq!(
            scratch.git(&["show", "HEAD:code.txt"]),
            "one\nTWO (agent)\nthree\nFOUR (agent)\nfive\nsix\nseven\neight\n",
            "{name}: the agent's lines only"
        );
        assert_eq!(
            scratch
                .git(&["diff", "--", CODE])
                .lines()
                .filter(|l| l.starts_with(['+', '-'])
                    && !l.starts_with("+++")
                    && !l.starts_with("---"))
                .collect::<Vec<_>>(),
            vec!["-seven", "+seven (mine)"],
            "{name}: the user's line stays unstaged"
        );
        assert_eq!(
            scratch.git(&["status", "--porcelain", "--", "MYNOTES.txt"]),
            "?? MYNOTES.txt\n",
            "{name}: the notes stay untracked"
        );
        assert_eq!(
            scratch.read("MYNOTES.txt").as_deref(),
            Some("my notes\na new line\nand after\n")
        );
        assert_eq!(trailer(&scratch, "HEAD", "Assisted-by"), name);
        let show = scratch.loaf(&["show"], "");
        scratch.assert_exit(&show, 0);
        let text = String::from_utf8_lossy(&show.stdout);
        assert!(
            text.contains("attributed per tool call (3 calls)"),
            "{name}: {text}"
        );
        assert!(
            !text.contains("overlapped"),
            "{name}: nothing of the user's carried: {text}"
        );
        let after = scratch.state();

        scratch.assert_exit(&scratch.loaf(&["undo"], ""), 0);
        assert_eq!(scratch.head(), initial, "{name}");
        assert_eq!(
            scratch.read(CODE).as_deref(),
            Some("one\ntwo\nthree\nfour\nfive\nsix\nseven (mine)\neight\n"),
            "{name}: undo takes out the agent's lines, the user's stays"
        );
        assert_eq!(scratch.read("build.txt"), None, "{name}");
        assert_eq!(
            scratch.read("MYNOTES.txt").as_deref(),
            Some("my notes\na new line\nand after\n")
        );
        assert_ne!(
            scratch.state(),
            before,
            "{name}: the user's mid-turn work is still there"
        );
        scratch.assert_exit(&scratch.loaf(&["redo"], ""), 0);
        assert_eq!(
            scratch.state(),
            after,
            "{name}: redo puts the turn back exactly"
        );
        scratch.assert_tidy();
    }
}

/// An edit tool's events read only the file it names: what the user changes elsewhere,
/// even while the agent's edit runs, is the user's.
#[test]
fn an_edit_tools_events_read_only_its_file() {
    let scratch = repo();
    begin(&scratch, CLAUDE, "Shout two");
    let absolute = scratch.root.join(CODE).display().to_string();
    let input = json!({"file_path": absolute, "old_string": "two", "new_string": "TWO"});
    let pre = event_with(
        &scratch,
        "claude-code/pre_tool_use.json",
        &[("tool_name", "Edit".into()), ("tool_input", input.clone())],
    );
    let post = event_with(
        &scratch,
        "claude-code/post_tool_use.json",
        &[("tool_name", "Edit".into()), ("tool_input", input)],
    );
    run(&scratch, CLAUDE, &pre);
    edited(&scratch, CODE, "two\n", "TWO\n");
    scratch.write("mine.txt", "written by the user while the agent edited\n");
    run(&scratch, CLAUDE, &post);
    end(&scratch, CLAUDE);
    assert_eq!(changed(&scratch, "HEAD"), "M\tcode.txt\n");
    assert_eq!(
        scratch.git(&["status", "--porcelain"]),
        "?? MYNOTES.txt\n?? mine.txt\n"
    );
}

/// Claude Code and Gemini CLI at work in one repository at once, their events interleaved,
/// both editing `code.txt` (other lines) and a file of their own: each turn's commit holds
/// its own session's changes only, and the user's line stays uncommitted.
#[test]
fn two_sessions_interleaved_each_commit_only_their_own_tool_changes() {
    let scratch = repo();
    let initial = scratch.head();
    begin(&scratch, CLAUDE, "Shout two");
    begin(&scratch, GEMINI, "Shout six");
    agent_edit(&scratch, CLAUDE, CODE, "two\n", "TWO (claude)\n");
    agent_edit(&scratch, GEMINI, CODE, "six\n", "SIX (gemini)\n");
    edited(&scratch, CODE, "eight\n", "eight (mine)\n");
    agent_shell(&scratch, GEMINI, || scratch.write("gemini.txt", "g\n"));
    agent_shell(&scratch, CLAUDE, || scratch.write("claude.txt", "c\n"));
    end(&scratch, CLAUDE);
    assert_eq!(changed(&scratch, "HEAD"), "A\tclaude.txt\nM\tcode.txt\n");
    assert_eq!(
        scratch.git(&["show", "HEAD:code.txt"]),
        "one\nTWO (claude)\nthree\nfour\nfive\nsix\nseven\neight\n"
    );
    assert_eq!(trailer(&scratch, "HEAD", "Assisted-by"), "claude-code");
    end(&scratch, GEMINI);
    assert_eq!(scratch.git(&["rev-parse", "HEAD~2"]).trim(), initial);
    assert_eq!(changed(&scratch, "HEAD"), "M\tcode.txt\nA\tgemini.txt\n");
    assert_eq!(
        scratch.git(&["show", "HEAD:code.txt"]),
        "one\nTWO (claude)\nthree\nfour\nfive\nSIX (gemini)\nseven\neight\n"
    );
    assert_eq!(trailer(&scratch, "HEAD", "Assisted-by"), "gemini");
    assert_eq!(
        scratch.git(&["status", "--porcelain"]),
        " M code.txt\n?? MYNOTES.txt\n",
        "the user's line alone is left uncommitted"
    );
    // Undo of the later turn takes out Gemini's lines only.
    scratch.assert_exit(&scratch.loaf(&["undo"], ""), 0);
    assert_eq!(
        scratch.read(CODE).as_deref(),
        Some("one\nTWO (claude)\nthree\nfour\nfive\nsix\nseven\neight (mine)\n")
    );
    assert_eq!(scratch.read("gemini.txt"), None);
    assert_eq!(scratch.read("claude.txt").as_deref(), Some("c\n"));
}

/// An agent that sends only turn events: its turn is attributed whole (the user's mid-turn
/// edit goes with it), the note and `show` say so, and undo of it keeps a file changed
/// after the turn's end.
#[test]
fn a_turn_of_turn_events_only_is_attributed_whole_and_says_so() {
    let scratch = repo();
    begin(&scratch, CLAUDE, "Shout two");
    edited(&scratch, CODE, "two\n", "TWO\n");
    scratch.write("during.txt", "d\n");
    end(&scratch, CLAUDE);
    assert_eq!(changed(&scratch, "HEAD"), "M\tcode.txt\nA\tduring.txt\n");
    let show = scratch.loaf(&["show"], "");
    let text = String::from_utf8_lossy(&show.stdout);
    assert!(
        text.contains("attributed as a whole turn (the agent sent no tool events)"),
        "{text}"
    );
    let note: Value =
        serde_json::from_str(&scratch.git(&["notes", "--ref=loaf", "show", "HEAD"])).expect("JSON");
    assert_eq!(note["record"]["attribution"], "turn", "{note}");
    assert_eq!(note["record"]["toolCalls"], Value::Null, "{note}");
    // After the turn: a change of the user's to a file the turn committed.
    edited(&scratch, "during.txt", "d\n", "d, mine after the turn\n");
    let undo = scratch.loaf(&["undo"], "");
    scratch.assert_exit(&undo, 3);
    assert!(String::from_utf8_lossy(&undo.stderr).contains("during.txt"));
    assert_eq!(
        scratch.read("during.txt").as_deref(),
        Some("d, mine after the turn\n")
    );
}
