//! The help as a user meets it: every command's help ends with examples, every example is a
//! command line the parser accepts (so renaming a flag without its examples fails here), the
//! top-level help lists every command in one line each, and `-h` / `help <cmd>` print clap's
//! help on stdout.

use clap::{CommandFactory as _, Parser as _};
use git_loaf::cli::Cli;
use git_loaf::cli::examples::{self, Line};

use crate::support::git_loaf;

/// Every command, the top level first, as (name as typed after `git loaf`, its help text).
fn every_help() -> Vec<(String, String)> {
    let mut cli = Cli::command();
    cli.build();
    let mut helps = vec![(String::new(), cli.render_long_help().to_string())];
    for sub in cli.get_subcommands_mut() {
        if sub.get_name() == "help" {
            continue;
        }
        helps.push((
            sub.get_name().to_owned(),
            sub.render_long_help().to_string(),
        ));
    }
    helps
}

/// The arguments after `git loaf` in a shell command line, as the shell would pass them:
/// quotes removed, up to the first pipe, redirection, `;`, `&` or `)`. None when the line
/// does not run `git loaf`.
fn loaf_args(line: &str) -> Option<Vec<String>> {
    let at = line.find("git loaf")?;
    let mut args = Vec::new();
    let mut word: Option<String> = None;
    let mut quote: Option<char> = None;
    for c in line[at + "git loaf".len()..].chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.get_or_insert_default().push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                word.get_or_insert_default();
            }
            (None, '|' | '<' | '>' | ';' | '&' | ')') => break,
            (None, c) if c.is_whitespace() => args.extend(word.take()),
            (None, c) => word.get_or_insert_default().push(c),
        }
    }
    args.extend(word);
    Some(args)
}

/// Whether clap accepts `args` (help and version requests are accepted command lines).
fn parses(args: &[String]) -> Result<(), String> {
    let argv = std::iter::once("git-loaf".to_owned()).chain(args.iter().cloned());
    match Cli::try_parse_from(argv) {
        Ok(_) => Ok(()),
        Err(e) if !e.use_stderr() => Ok(()),
        Err(e) => Err(e.render().to_string()),
    }
}

#[test]
fn the_example_reader_splits_like_a_shell_and_rejects_a_renamed_flag() {
    let args = |line: &str| loaf_args(line).expect("runs git loaf");
    assert_eq!(
        args(r#"git loaf squash -m "Add the parser" --hours 8 | cat"#),
        ["squash", "-m", "Add the parser", "--hours", "8"]
    );
    assert_eq!(
        args("source <(git loaf completions bash)"),
        ["completions", "bash"]
    );
    assert_eq!(
        args("git loaf parse --json - < r.md"),
        ["parse", "--json", "-"]
    );
    assert_eq!(loaf_args("xclip -o"), None);
    // What the examples test relies on: a flag that does not exist fails to parse.
    assert!(parses(&args("git loaf apply --dryrun reply.md")).is_err());
    assert!(parses(&args("git loaf apply --dry-run reply.md")).is_ok());
}

#[test]
fn every_command_has_examples_and_every_example_parses() {
    let helps = every_help();
    assert!(helps.len() > 10, "{helps:?}");
    for (name, help) in &helps {
        let lines = examples::lines(help);
        let commands: Vec<&str> = lines
            .iter()
            .filter_map(|line| match line {
                Line::Command(command) => Some(*command),
                Line::What(_) => None,
            })
            .collect();
        assert!(
            !commands.is_empty(),
            "`git loaf {name}` has no examples:\n{help}"
        );
        assert!(
            matches!(lines.first(), Some(Line::What(_))),
            "`git loaf {name}`: examples start with what they do:\n{help}"
        );
        let mut uses_the_command = false;
        for command in commands {
            let args = loaf_args(command)
                .unwrap_or_else(|| panic!("`git loaf {name}`: {command:?} runs no git loaf"));
            if let Err(e) = parses(&args) {
                panic!("`git loaf {name}`: the example {command:?} does not parse:\n{e}");
            }
            uses_the_command |= name.is_empty() || args.first() == Some(name);
        }
        assert!(
            uses_the_command,
            "`git loaf {name}`: no example uses the command itself:\n{help}"
        );
    }
}

#[test]
fn the_top_level_help_lists_every_command_on_one_line() {
    let out = git_loaf().arg("-h").output().expect("runs");
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stderr.is_empty(), "{out:?}");
    let help = String::from_utf8_lossy(&out.stdout).into_owned();
    let listed: Vec<&str> = help
        .lines()
        .skip_while(|line| *line != "Commands:")
        .skip(1)
        .take_while(|line| !line.is_empty())
        .collect();
    let mut cli = Cli::command();
    cli.build();
    for sub in cli.get_subcommands() {
        let name = sub.get_name();
        let line = listed
            .iter()
            .find(|line| line.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("{name} is not listed:\n{help}"));
        let about = sub.get_about().map(ToString::to_string).unwrap_or_default();
        assert!(
            !about.is_empty() && line.ends_with(&about),
            "{name}'s summary fits on its line: {line:?}\n{help}"
        );
    }
    assert_eq!(listed.len(), cli.get_subcommands().count(), "{help}");
    assert!(help.contains("Examples:"), "{help}");
}

#[test]
fn dash_h_and_help_cmd_print_clap_help_with_examples_on_stdout() {
    for args in [
        &["apply", "-h"][..],
        &["help", "apply"],
        &["apply", "--help"],
        &["help", "squash"],
    ] {
        let out = git_loaf().args(args).output().expect("runs");
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        assert!(out.stderr.is_empty(), "{args:?}: {out:?}");
        let help = String::from_utf8_lossy(&out.stdout);
        let name = args.iter().find(|a| !a.starts_with('-') && **a != "help");
        let usage = format!("Usage: git loaf {}", name.expect("a command"));
        assert!(help.contains(&usage), "{args:?}:\n{help}");
        assert!(help.contains("\nExamples:\n  # "), "{args:?}:\n{help}");
    }
    let long = git_loaf().args(["--help"]).output().expect("runs");
    let long = String::from_utf8_lossy(&long.stdout);
    assert!(long.contains("Exit codes: 0"), "{long}");
}

#[test]
fn installed_man_pages_carry_the_examples_one_command_per_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = git_loaf()
        .args(["install-man-pages", "--dir"])
        .arg(dir.path())
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let page = std::fs::read_to_string(dir.path().join("git-loaf-apply.1")).expect("page");
    assert!(
        page.contains(".SH EXAMPLES\n.PP\n"),
        "an EXAMPLES section:\n{page}"
    );
    assert!(
        page.contains(".nf\ngit loaf apply reply.md\n"),
        "commands unfilled:\n{page}"
    );
    assert!(
        page.contains("git loaf apply \\-\\-dry\\-run reply.md\n"),
        "{page}"
    );
}
