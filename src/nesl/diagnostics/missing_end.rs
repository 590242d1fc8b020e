//! A block whose `#!end_<id>` line is missing, as the report tells the model.
//!
//! The parser (reference-exact) reads on past the block's last property: the closing
//! ```` ``` ```` fence and the prose after it are each "not a valid key-value assignment",
//! and the block is "not closed" at the next header or at the end. Three or more ❌ lines
//! pointing at fences do not say what the fix is; one line does: add `#!end_<id>` after the
//! block's last line. The parser's own result (`git loaf parse --json`) is left as it is.

use crate::nesl::{ErrorCode, ParseResult};

/// A block with no end line, and the parser errors that only say so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingEnd {
    /// The block's id.
    pub id: String,
    /// 1-based line of its header.
    pub start: usize,
    /// Its last line: the end line goes right after it.
    pub after: usize,
    /// Whether the line after that is a ```` ``` ```` fence (the end line goes before it).
    pub before_fence: bool,
    /// The lines of the parser's errors this one replaces (each a line the block ran on
    /// into, or where it was found unclosed).
    pub replaces: Vec<usize>,
}

impl MissingEnd {
    /// The report's message.
    pub fn message(&self) -> String {
        let fence = if self.before_fence {
            " (before the ``` fence)"
        } else {
            ""
        };
        format!(
            "no end line: add `#!end_{id}` after line {after}{fence}",
            id = self.id,
            after = self.after,
        )
    }
}

/// Every block the parser left unclosed whose errors all come from that: lines after its
/// last property that are not properties (a fence, prose), and the unclosed error itself.
/// A block with an unclosed heredoc is not one of them (see `near_miss::unclosed_heredocs`),
/// nor one with another error past its last property.
pub fn missing_ends(text: &str, parsed: &ParseResult<'_>) -> Vec<MissingEnd> {
    let lines: Vec<&str> = text
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    let mut found = Vec::new();
    for (i, block) in parsed.blocks.iter().enumerate() {
        if block.end_line.is_some() {
            continue;
        }
        // Its errors: from its header to the next block's header (where "not closed before
        // new block" is reported), or past the end.
        let last = parsed
            .blocks
            .get(i + 1)
            .map_or(usize::MAX, |next| next.start_line);
        let errors: Vec<_> = parsed
            .errors
            .iter()
            .filter(|e| e.block_id.as_deref() == Some(&*block.id))
            .filter(|e| e.line > block.start_line && e.line <= last)
            .collect();
        let Some(unclosed) = errors.iter().find(|e| e.code == ErrorCode::UnclosedBlock) else {
            continue;
        };
        let ran_on: Vec<usize> = errors
            .iter()
            .filter(|e| e.code == ErrorCode::MalformedAssignment)
            .map(|e| e.line)
            .collect();
        // The block's last line: the last non-blank line before the unclosed error's that
        // the parser took (not one it could not read).
        let Some(after) = (block.start_line..unclosed.line.min(lines.len() + 1))
            .rev()
            .find(|&n| {
                let line = lines.get(n - 1).copied().unwrap_or("");
                !line.trim().is_empty() && !ran_on.contains(&n)
            })
        else {
            continue;
        };
        // Anything else wrong (a bad property, an error inside the block) stays as it is,
        // and so does a block whose unreadable lines are not all after its last one.
        let only_ran_on = errors.iter().all(|e| {
            e.code == ErrorCode::UnclosedBlock
                || (e.code == ErrorCode::MalformedAssignment && e.line > after)
        });
        if !only_ran_on {
            continue;
        }
        let before_fence = lines
            .get(after)
            .is_some_and(|l| l.trim_start().starts_with("```"));
        let mut replaces = ran_on;
        replaces.push(unclosed.line);
        found.push(MissingEnd {
            id: block.id.to_string(),
            start: block.start_line,
            after,
            before_fence,
            replaces,
        });
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nesl;

    fn ends(text: &str) -> Vec<(String, usize, bool, Vec<usize>)> {
        missing_ends(text, &nesl::parse(text))
            .into_iter()
            .map(|m| (m.id, m.after, m.before_fence, m.replaces))
            .collect()
    }

    const OPEN: &str =
        "#!nesl [@three-char-SHA-256: aa1]\naction = \"file_read\"\npath = \"/r/a\"\n";

    #[test]
    fn a_fenced_block_without_its_end_is_one_missing_end_after_its_last_line() {
        let text = format!(
            "```nesl\n{OPEN}```\n\nand\n\n```nesl\n#!nesl [@three-char-SHA-256: bb2]\naction = \"file_read\"\npath = \"/r/b\"\n#!end_bb2\n```\n"
        );
        assert_eq!(ends(&text), [("aa1".to_owned(), 4, true, vec![5, 7, 9, 9])]);
        let message = missing_ends(&text, &nesl::parse(&text))[0].message();
        assert!(
            message.starts_with("no end line: add `#!end_aa1` after line 4 (before the ``` fence)"),
            "{message}"
        );
    }

    #[test]
    fn at_the_end_of_the_reply_too() {
        assert_eq!(ends(OPEN), [("aa1".to_owned(), 3, false, vec![5])]);
        let fenced = format!("```nesl\n{OPEN}```\nThanks\n");
        assert_eq!(ends(&fenced), [("aa1".to_owned(), 4, true, vec![5, 6, 8])]);
    }

    #[test]
    fn other_errors_and_closed_blocks_are_left_to_the_parser() {
        assert_eq!(ends(&format!("{OPEN}#!end_aa1\n")), []);
        // A line it could not read between its properties: not only a missing end.
        let bad =
            "#!nesl [@three-char-SHA-256: aa1]\naction = \"file_read\"\noops\npath = \"/r/a\"\n";
        assert_eq!(ends(bad), []);
        // An unclosed heredoc has its own hint.
        let heredoc = "#!nesl [@three-char-SHA-256: aa1]\naction = \"file_write\"\npath = \"/r/a\"\ncontent = <<'EOT_aa1'\nx\n";
        assert_eq!(ends(heredoc), []);
    }
}
