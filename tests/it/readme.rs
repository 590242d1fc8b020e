//! The README teaches by example: its NESL primer is a fixture that applies as shown, and its
//! command table names every command `git loaf --help` lists. It stays short (the reference
//! lives in `docs/`, one page per topic), links every docs page, and every link between the
//! README and the docs pages leads somewhere.

use std::path::{Path, PathBuf};

use crate::scratch::Scratch;
use crate::support::{fixture, git_loaf, read};

/// Where the primer's repository lives in the README's text.
const PRIMER_ROOT: &str = "/home/you/hello";

/// The most lines README.md may have: it teaches; the reference is in `docs/`.
const README_MAX_LINES: usize = 300;

fn project() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn readme() -> String {
    read(&project().join("README.md"))
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
        Some("AI: Move the greeting into its own module, call it from main.py, run it")
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

#[test]
fn the_readme_teaches_in_at_most_300_lines() {
    let lines = readme().lines().count();
    assert!(
        lines <= README_MAX_LINES,
        "README.md has {lines} lines; move reference text to a page in docs/"
    );
}

/// The `docs/*.md` pages, by file name, sorted.
fn docs_pages() -> Vec<String> {
    let mut pages: Vec<String> = std::fs::read_dir(project().join("docs"))
        .expect("docs/ exists")
        .map(|entry| {
            entry
                .expect("docs/ lists")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|name| name.ends_with(".md"))
        .collect();
    pages.sort();
    pages
}

/// The targets of the inline Markdown links `[text](target)` in `text`, outside code.
fn link_targets(text: &str) -> Vec<String> {
    let mut targets = Vec::new();
    let mut in_code = false;
    for line in text.lines() {
        if line.starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            targets.push(after[..end].to_owned());
            rest = &after[end..];
        }
    }
    targets
}

#[test]
fn the_readme_links_every_docs_page_and_each_exists() {
    let linked: Vec<String> = link_targets(&readme())
        .into_iter()
        .filter_map(|target| target.strip_prefix("docs/").map(str::to_owned))
        .map(|target| target.split('#').next().unwrap_or_default().to_owned())
        .collect();
    assert!(!linked.is_empty(), "the README links no docs page");
    let pages = docs_pages();
    let missing: Vec<_> = linked.iter().filter(|page| !pages.contains(page)).collect();
    assert!(
        missing.is_empty(),
        "the README links pages docs/ lacks: {missing:?}"
    );
    let unlinked: Vec<_> = pages.iter().filter(|page| !linked.contains(page)).collect();
    assert!(
        unlinked.is_empty(),
        "docs pages the README does not link: {unlinked:?}"
    );
}

#[test]
fn every_docs_page_opens_with_a_summary_that_links_back_to_the_readme() {
    for page in docs_pages() {
        let text = read(&project().join("docs").join(&page));
        let mut lines = text.lines();
        let title = lines.next().unwrap_or_default();
        assert!(
            title.starts_with("# "),
            "docs/{page} starts with its title: {title:?}"
        );
        assert_eq!(
            lines.next(),
            Some(""),
            "docs/{page}: a blank line after the title"
        );
        let summary = lines.next().unwrap_or_default();
        assert!(
            summary.len() > 40 && summary.contains("[README](../README.md)"),
            "docs/{page}: the third line is a one-line summary linking back: {summary:?}"
        );
        assert_eq!(
            lines.next(),
            Some(""),
            "docs/{page}: the summary is one line"
        );
    }
}

/// The anchor GitHub gives a heading: lower case, punctuation other than `-` and `_` dropped,
/// spaces made `-`.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of the headings of a Markdown text, outside code.
fn anchors(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut in_code = false;
    for line in text.lines() {
        if line.starts_with("```") {
            in_code = !in_code;
        } else if !in_code && line.starts_with('#') {
            found.push(anchor(line.trim_start_matches('#')));
        }
    }
    found
}

/// Every relative link of the file at `from` (README.md or a docs page): the file it names
/// exists, and the heading its `#anchor` names is in that file.
fn broken_links(from: &Path) -> Vec<String> {
    let text = read(from);
    let folder = from.parent().expect("a file has a folder");
    link_targets(&text)
        .into_iter()
        .filter(|target| !target.contains("://"))
        .filter(|target| {
            let (file, fragment) = target.split_once('#').unwrap_or((target, ""));
            let file: PathBuf = if file.is_empty() {
                from.to_owned()
            } else {
                folder.join(file)
            };
            let Ok(linked) = std::fs::read_to_string(&file) else {
                return true;
            };
            !fragment.is_empty() && !anchors(&linked).iter().any(|a| a == fragment)
        })
        .collect()
}

#[test]
fn every_link_of_the_readme_and_the_docs_leads_somewhere() {
    let mut files = vec![project().join("README.md")];
    files.extend(
        docs_pages()
            .iter()
            .map(|page| project().join("docs").join(page)),
    );
    let broken: Vec<_> = files
        .iter()
        .flat_map(|file| {
            broken_links(file)
                .into_iter()
                .map(move |target| format!("{}: {target}", file.display()))
        })
        .collect();
    assert!(
        broken.is_empty(),
        "links to no file or heading: {broken:#?}"
    );
}
