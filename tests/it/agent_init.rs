//! `git loaf init --agent` never breaks the user's settings files (DESIGN §3b): Codex's
//! TOML keeps its comments and any form of a `git-loaf` server the user declared, a file
//! that is not JSON or TOML is refused with nothing written, a symlinked settings file is
//! updated where it points and stays a symlink, and numbers come back as they were written.
//! Every agent `init` knows is checked.

use std::path::Path;

use crate::scratch::Scratch;

/// Every settings file `init --agent` writes, with its agent.
const FILES: [(&str, &str); 7] = [
    ("claude-code", ".claude/settings.json"),
    ("claude-code", ".mcp.json"),
    ("codex", ".codex/hooks.json"),
    ("codex", ".codex/config.toml"),
    ("cursor", ".cursor/hooks.json"),
    ("cursor", ".cursor/mcp.json"),
    ("gemini", ".gemini/settings.json"),
];

/// `git loaf init --agent` for every agent.
fn init_all(scratch: &Scratch) -> std::process::Output {
    scratch.loaf(
        &[
            "init",
            "--agent",
            "claude-code",
            "--agent",
            "codex",
            "--agent",
            "cursor",
            "--agent",
            "gemini",
        ],
        "",
    )
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn init_agent_codex_keeps_every_form_of_a_git_loaf_server_the_user_declared() {
    let forms = [
        "[mcp_servers.git-loaf] # my build\ncommand = \"/opt/loaf/bin/git-loaf\"\nargs = [\"mcp\"]\n",
        "[mcp_servers]\ngit-loaf = { command = \"/opt/loaf/bin/git-loaf\", args = [\"mcp\"] }\n",
        "[mcp_servers.\"git-loaf\"]\ncommand = \"/opt/loaf/bin/git-loaf\"\n",
        "[ mcp_servers . git-loaf ]\ncommand = \"/opt/loaf/bin/git-loaf\"\n",
        "model = \"gpt-5-codex\"\nmcp_servers.git-loaf.command = \"/opt/loaf/bin/git-loaf\"\n",
    ];
    for form in forms {
        let scratch = Scratch::with(&[("README.md", "hi\n")]);
        scratch.write(".codex/config.toml", form);
        let out = scratch.loaf(&["init", "--agent", "codex"], "");
        scratch.assert_exit(&out, 0);
        assert_eq!(
            scratch.read(".codex/config.toml").as_deref(),
            Some(form),
            "left exactly as written"
        );
        let said = stdout(&out);
        assert!(
            said.contains(
                "codex: .codex/config.toml is already set up (kept your own MCP server `git-loaf` in [mcp_servers], as you declared it: not changed)"
            ),
            "{form}\n{said}"
        );
    }
}

#[test]
fn init_agent_codex_adds_its_server_keeping_comments_and_layout() {
    let scratch = Scratch::with(&[("README.md", "hi\n")]);
    let config = "# Codex, my way\nmodel = \"gpt-5-codex\"   # pinned\n\n[mcp_servers]\ndb = { command = \"db-mcp\" }\n\n[profiles.fast]\nmodel = \"o4-mini\"\n";
    scratch.write(".codex/config.toml", config);
    let out = scratch.loaf(&["init", "--agent", "codex"], "");
    scratch.assert_exit(&out, 0);
    assert_eq!(
        scratch.read(".codex/config.toml").as_deref(),
        Some(
            "# Codex, my way\nmodel = \"gpt-5-codex\"   # pinned\n\n[mcp_servers]\ndb = { command = \"db-mcp\" }\n\n[mcp_servers.git-loaf]\ncommand = \"git\"\nargs = [\"loaf\", \"mcp\"]\n\n[profiles.fast]\nmodel = \"o4-mini\"\n"
        )
    );
    assert!(
        stdout(&out).contains(
            "codex: wrote .codex/config.toml: added MCP server `git-loaf` (`git loaf mcp`)"
        ),
        "{}",
        stdout(&out)
    );
}

#[test]
fn init_agent_refuses_settings_that_are_not_json_or_toml_and_writes_nothing() {
    for (agent, path) in FILES {
        let scratch = Scratch::with(&[("README.md", "hi\n")]);
        let broken = if path.ends_with(".toml") {
            "{\"model\": \"gpt-5\"}\n"
        } else {
            "model = \"opus\"\n"
        };
        scratch.write(path, broken);
        let out = init_all(&scratch);
        scratch.assert_exit(&out, 2);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let kind = if path.ends_with(".toml") {
            "TOML (line 1, column 1"
        } else {
            "JSON (expected value at line 1 column 1)"
        };
        assert!(
            stderr.contains(&format!(
                "cannot set up {agent}: {path} is not valid {kind}"
            )),
            "{path}: {stderr}"
        );
        assert!(
            stderr.contains("fix the file (or move it away)"),
            "{stderr}"
        );
        assert_eq!(scratch.read(path).as_deref(), Some(broken), "{path}");
        for (_, other) in FILES.iter().filter(|(_, p)| *p != path) {
            assert_eq!(scratch.read(other), None, "{path}: nothing written");
        }
        assert_eq!(scratch.read("loaf.yml"), None, "{path}: nothing written");
    }
}

#[test]
fn init_agent_updates_a_symlinked_settings_file_where_it_points() {
    let scratch = Scratch::with(&[("README.md", "hi\n")]);
    let dotfiles = scratch.sibling("dotfiles");
    std::fs::create_dir_all(&dotfiles).expect("mkdir");
    for (n, (_, path)) in FILES.iter().enumerate() {
        let target = dotfiles.join(format!("{n}-{}", path.replace('/', "_")));
        let text = if path.ends_with(".toml") {
            "model = \"gpt-5\"\n"
        } else {
            "{\"theme\": \"dark\"}\n"
        };
        std::fs::write(&target, text).expect("write");
        let link = scratch.root.join(path);
        std::fs::create_dir_all(link.parent().expect("folder")).expect("mkdir");
        std::os::unix::fs::symlink(&target, &link).expect("symlink");
    }
    let out = init_all(&scratch);
    scratch.assert_exit(&out, 0);
    for (n, (agent, path)) in FILES.iter().enumerate() {
        let link = scratch.root.join(path);
        let meta = std::fs::symlink_metadata(&link).expect("there");
        assert!(meta.file_type().is_symlink(), "{path} is still a symlink");
        let target = dotfiles.join(format!("{n}-{}", path.replace('/', "_")));
        assert_eq!(std::fs::read_link(&link).ok(), Some(target.clone()));
        let text = std::fs::read_to_string(&target).expect("target");
        let wired = if path.ends_with(".toml") || path.contains("mcp") {
            "git-loaf".to_owned()
        } else {
            format!("git loaf agent-hook {agent}")
        };
        assert!(
            text.contains(&wired),
            "{path} → {}:\n{text}",
            target.display()
        );
        assert!(text.contains("theme") || text.contains("model"), "{text}");
    }
    assert_only_links_in(&dotfiles, FILES.len());
}

/// `folder` holds `count` files and nothing left over (no temporary file).
fn assert_only_links_in(folder: &Path, count: usize) {
    let names: Vec<String> = std::fs::read_dir(folder)
        .expect("read")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), count, "{names:?}");
}

#[test]
fn init_agent_writes_a_relative_symlink_through_to_its_target() {
    let scratch = Scratch::with(&[("README.md", "hi\n")]);
    scratch.write("shared/claude.json", "{\"model\": \"opus\"}\n");
    std::fs::create_dir_all(scratch.root.join(".claude")).expect("mkdir");
    std::os::unix::fs::symlink(
        "../shared/claude.json",
        scratch.root.join(".claude/settings.json"),
    )
    .expect("symlink");
    let out = scratch.loaf(&["init", "--agent", "claude-code"], "");
    scratch.assert_exit(&out, 0);
    let link = scratch.root.join(".claude/settings.json");
    assert_eq!(
        std::fs::read_link(&link).ok().as_deref(),
        Some(Path::new("../shared/claude.json"))
    );
    let text = scratch.read("shared/claude.json").expect("target");
    assert!(text.contains("git loaf agent-hook claude-code"), "{text}");
    assert!(text.contains("\"model\": \"opus\""), "{text}");
}

#[test]
fn init_agent_writes_numbers_back_exactly_as_they_were_written() {
    let numbers = "{\n  \"big\": 12345678901234567890123,\n  \"precise\": 0.1000000000000000055511151231257827,\n  \"float\": 1.0,\n  \"exp\": 1e400,\n  \"neg\": -0\n}\n";
    let scratch = Scratch::with(&[("README.md", "hi\n")]);
    for (_, path) in FILES.iter().filter(|(_, p)| p.ends_with(".json")) {
        scratch.write(path, numbers);
    }
    let out = init_all(&scratch);
    scratch.assert_exit(&out, 0);
    for (_, path) in FILES.iter().filter(|(_, p)| p.ends_with(".json")) {
        let text = scratch.read(path).expect("written");
        for kept in [
            "\"big\": 12345678901234567890123,",
            "\"precise\": 0.1000000000000000055511151231257827,",
            "\"float\": 1.0,",
            "\"exp\": 1e400,",
            "\"neg\": -0,",
        ] {
            assert!(text.contains(kept), "{path}: {kept} missing in\n{text}");
        }
    }
}
