//! The README teaches by example: its NESL primer is a fixture that applies as shown, and its
//! command table names every command `git loaf --help` lists.

use crate::scratch::Scratch;
use crate::support::{fixture, git_loaf, read};

/// Where the primer's repository lives in the README's text.
const PRIMER_ROOT: &str = "/home/you/hello";

fn readme() -> String {
    read(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
}

/// Apply and commit ids (lower-case hex words of 6 or 7 digits) as `<id>`.
fn without_ids(text: &str) -> String {
    text.split(' ')
        .map(|word| {
            let id = (6..=7).contains(&word.len())
                && word
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
            if id { "<id>" } else { word }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The ```text block that follows the primer in the README.
fn primer_report_in_readme(readme: &str, primer: &str) -> String {
    let at = readme
        .find(primer.trim_end())
        .expect("the README holds fixtures/005_readme_primer/reply.md verbatim");
    let after = &readme[at..];
    let start = after
        .find("```text\n")
        .expect("a report block follows the primer")
        + 8;
    let end = after[start..].find("```").expect("the report block ends") + start;
    after[start..end].to_owned()
}

#[test]
fn the_readme_primer_applies_as_the_readme_shows() {
    let primer = read(&fixture("005_readme_primer/reply.md"));
    let shown = primer_report_in_readme(&readme(), &primer);
    let scratch = Scratch::with(&[
        (
            "main.py",
            &read(&fixture("005_readme_primer/input/main.py")),
        ),
        ("loaf.yml", "allowed-actions: [defaults, exec]\n"),
    ]);
    let reply = primer.replace(PRIMER_ROOT, &scratch.root.to_string_lossy());
    let out = scratch.loaf(&["apply"], &reply);
    scratch.assert_exit(&out, 0);
    let printed =
        String::from_utf8_lossy(&out.stdout).replace(&*scratch.root.to_string_lossy(), PRIMER_ROOT);
    assert_eq!(
        without_ids(&format!("$ git loaf apply < reply.md\n{printed}")),
        without_ids(&shown)
    );
    assert_eq!(
        scratch.read("main.py").as_deref(),
        Some("from greet import greet\n\nprint(greet(\"world\"))\n")
    );
    assert_eq!(
        scratch.git(&["log", "--format=%s"]).lines().next(),
        Some("AI: file_write greet.py, file_replace_text main.py")
    );
}

/// The subcommands clap lists in `git loaf --help`.
fn commands_in_help() -> Vec<String> {
    let out = git_loaf().arg("--help").output().expect("git-loaf runs");
    let help = String::from_utf8_lossy(&out.stdout).into_owned();
    let list = help
        .split("Commands:\n")
        .nth(1)
        .and_then(|rest| rest.split("\n\n").next())
        .expect("a Commands: section")
        .to_owned();
    list.lines()
        .filter(|line| line.starts_with("  ") && !line.starts_with("   "))
        .filter_map(|line| line.split_whitespace().next().map(str::to_owned))
        .filter(|name| name != "help")
        .collect()
}

#[test]
fn the_readme_command_table_names_every_command() {
    let readme = readme();
    let table: String = readme
        .lines()
        .skip_while(|line| *line != "## Commands")
        .take_while(|line| !line.starts_with("**Exit codes**"))
        .collect::<Vec<_>>()
        .join("\n");
    let commands = commands_in_help();
    assert!(commands.len() >= 10, "{commands:?}");
    let missing: Vec<_> = commands
        .iter()
        .filter(|name| {
            !table.contains(&format!("`git loaf {name}"))
                && !table.contains(&format!("/ `{name}"))
                && !table.contains(&format!("/ {name}`"))
        })
        .collect();
    assert!(missing.is_empty(), "not in the README's table: {missing:?}");
}
