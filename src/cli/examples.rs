//! The "Examples:" section every command's help ends with, and the same examples as a man
//! page section.
//!
//! One layout, so that the help, the man pages and the test that runs every example through
//! the parser agree on what an example is: a heading line `Examples:`, then groups of a
//! `  # what it does` line followed by command lines indented by two spaces, exactly as a
//! user would type them (pipes and redirections included).

use std::fmt::Write as _;

use clap::builder::StyledStr;
use clap::builder::styling::Style;

/// The heading that starts the section.
pub const HEADING: &str = "Examples:";

/// The help's examples section from groups of (what it does, command lines), styled as clap
/// styles its own headings and literals (plain when colour is off).
pub fn examples(groups: &[(&str, &[&str])]) -> StyledStr {
    let heading = Style::new().bold().underline();
    let literal = Style::new().bold();
    let mut out = StyledStr::new();
    let _ = writeln!(out, "{heading}{HEADING}{heading:#}");
    for (i, (what, commands)) in groups.iter().enumerate() {
        if i > 0 {
            out.push_str("\n");
        }
        let _ = writeln!(out, "  # {what}");
        for command in *commands {
            let _ = writeln!(out, "  {literal}{command}{literal:#}");
        }
    }
    out
}

/// One line of an examples section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line<'a> {
    /// What the commands below it do.
    What(&'a str),
    /// A command line.
    Command(&'a str),
}

/// The lines of the examples section in a help text (plain, as `StyledStr` displays), in
/// order; empty when there is none.
pub fn lines(help: &str) -> Vec<Line<'_>> {
    let mut lines = help.lines();
    if !lines.any(|line| line.trim_end() == HEADING) {
        return Vec::new();
    }
    lines
        .filter_map(|line| {
            let line = line.strip_prefix("  ")?.trim_end();
            Some(match line.strip_prefix("# ") {
                Some(what) => Line::What(what),
                None => Line::Command(line),
            })
        })
        .collect()
}

/// The examples of a help text as a man page `EXAMPLES` section (roff), or nothing.
pub fn roff_section(help: &str) -> String {
    let lines = lines(help);
    if lines.is_empty() {
        return String::new();
    }
    let mut out = String::from(".SH EXAMPLES\n");
    let mut in_commands = false;
    for line in lines {
        match line {
            Line::What(what) => {
                if in_commands {
                    out.push_str(".fi\n.RE\n");
                    in_commands = false;
                }
                let _ = writeln!(out, ".PP\n{}", roff_escape(what));
            }
            Line::Command(command) => {
                if !in_commands {
                    out.push_str(".RS 4\n.nf\n");
                    in_commands = true;
                }
                let _ = writeln!(out, "{}", roff_escape(command));
            }
        }
    }
    if in_commands {
        out.push_str(".fi\n.RE\n");
    }
    out
}

/// `text` as one roff text line: backslashes and hyphens escaped (so that a command copied
/// from the page has ASCII hyphens), and a leading `.` or `'` kept from being a request.
fn roff_escape(text: &str) -> String {
    let escaped = text.replace('\\', "\\e").replace('-', "\\-");
    if escaped.starts_with(['.', '\'']) {
        format!("\\&{escaped}")
    } else {
        escaped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GROUPS: &[(&str, &[&str])] = &[
        ("Apply a reply", &["git loaf apply reply.md"]),
        ("Check it first", &["git loaf apply --dry-run", ".x"]),
    ];

    #[test]
    fn the_help_section_reads_back_as_the_same_lines() {
        let help = examples(GROUPS).to_string();
        assert_eq!(
            lines(&help),
            [
                Line::What("Apply a reply"),
                Line::Command("git loaf apply reply.md"),
                Line::What("Check it first"),
                Line::Command("git loaf apply --dry-run"),
                Line::Command(".x"),
            ]
        );
    }

    #[test]
    fn text_without_the_heading_has_no_examples() {
        assert!(lines("  git loaf apply\n").is_empty());
        assert_eq!(roff_section("nothing here"), "");
    }

    #[test]
    fn the_man_section_keeps_commands_unfilled_and_escaped() {
        let roff = roff_section(&examples(GROUPS).to_string());
        assert_eq!(
            roff,
            ".SH EXAMPLES\n.PP\nApply a reply\n.RS 4\n.nf\ngit loaf apply reply.md\n.fi\n.RE\n\
             .PP\nCheck it first\n.RS 4\n.nf\ngit loaf apply \\-\\-dry\\-run\n\\&.x\n.fi\n.RE\n"
        );
    }
}
