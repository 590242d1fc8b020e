//! What in a reply looked like a NESL block but is not one, found by scanning the reply's
//! text next to the parser's result: a ```` ```nesl ```` fence with no header in it, a
//! header line the parser does not take (`#!nesl[@…`, a missing space after the colon, an
//! indented header), an end marker with no header, and blocks swallowed by an unclosed
//! heredoc. The parser (reference-exact) stays silent or terse about these; the model needs
//! to be told what to write instead, or it regenerates the same mistake.

use crate::nesl::{self, ErrorCode, LineKind, ParseResult};

/// How a block is written, shown to a model whose reply had none.
pub const EXPECTED_FORM: &str = "#!nesl [@three-char-SHA-256: abc]\n\
                                 action = \"file_write\"\n\
                                 path = \"/absolute/path/to/file\"\n\
                                 content = <<'EOT_abc'\n\
                                 …file contents…\n\
                                 EOT_abc\n\
                                 #!end_abc";

/// A well-formed header for block `abc`, as messages show it.
const HEADER_EXAMPLE: &str = "#!nesl [@three-char-SHA-256: abc]";

/// Something in the reply that looked like NESL but did not make a block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NearMiss {
    /// 1-based line it starts on.
    pub line: usize,
    /// What is wrong and what to write instead.
    pub message: String,
    /// Whether the parser already reported this line (a header it could not read): the
    /// message then explains that error rather than adding another.
    pub parser_reported: bool,
}

/// A block whose header sits inside another block's unclosed heredoc.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Swallowed {
    /// The swallowed block's id.
    pub id: String,
    /// 1-based line of its header.
    pub line: usize,
    /// The block whose heredoc never closed.
    pub by: String,
    /// That heredoc's delimiter (`EOT_k6f`).
    pub delimiter: String,
    /// 1-based line where that heredoc opened.
    pub opened: usize,
}

impl Swallowed {
    /// The report's message for the swallowed block.
    pub fn message(&self) -> String {
        format!(
            "block {id} (line {line}) was swallowed by the unclosed heredoc of {by} (opened at line {opened}), so it did not run — close that heredoc with a line `{delim}` before `#!end_{by}`",
            id = self.id,
            line = self.line,
            by = self.by,
            opened = self.opened,
            delim = self.delimiter,
        )
    }
}

/// Lines of `text` as the parser splits them, without `\r`.
fn lines(text: &str) -> Vec<&str> {
    text.split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect()
}

/// Everything outside the parsed blocks that looked like NESL, in line order.
pub fn near_misses(text: &str, parsed: &ParseResult<'_>) -> Vec<NearMiss> {
    let lines = lines(text);
    // Lines of real blocks (an unclosed one runs to the end) are the parser's business:
    // heredoc content there may well quote NESL.
    // One mark per line (not a search of every block per line: a 1,000-block reply has
    // ~100,000 lines).
    let mut block_lines = vec![false; lines.len() + 2];
    for block in &parsed.blocks {
        let end = block.end_line.unwrap_or(lines.len()).min(lines.len());
        for mark in block_lines.iter_mut().take(end + 1).skip(block.start_line) {
            *mark = true;
        }
    }
    let in_block = |n: usize| block_lines.get(n).copied().unwrap_or(false);
    let mut misses = Vec::new();
    // An open fence: (line, is a nesl fence, saw a header-like line inside).
    let mut fence: Option<(usize, bool, bool)> = None;
    // A header we could not read waits for its end marker, which is then not news.
    let mut bad_header_open = false;
    for (i, line) in lines.iter().enumerate() {
        let n = i + 1;
        if in_block(n) {
            if let Some((_, _, seen)) = fence.as_mut() {
                *seen = true;
            }
            continue;
        }
        let trimmed = line.trim();
        if let Some(info) = trimmed
            .strip_prefix("```")
            .or_else(|| trimmed.strip_prefix("~~~"))
        {
            match fence.take() {
                Some((start, true, false)) => misses.push(fence_miss(start, Some(n))),
                Some(_) => {}
                None => {
                    let info = info.trim().to_ascii_lowercase();
                    fence = Some((n, info.split_whitespace().next() == Some("nesl"), false));
                }
            }
            continue;
        }
        if let Some(explanation) = header_problem(line) {
            if let Some((_, _, seen)) = fence.as_mut() {
                *seen = true;
            }
            bad_header_open = true;
            misses.push(NearMiss {
                line: n,
                message: explanation,
                parser_reported: nesl::classify_line(line) == LineKind::Header,
            });
            continue;
        }
        if nesl::classify_line(line) == LineKind::EndMarker {
            let inside_nesl_fence = fence.is_some_and(|(_, nesl, _)| nesl);
            if !std::mem::take(&mut bad_header_open) && !inside_nesl_fence {
                let marker = trimmed;
                let id = nesl::parse_end_marker(marker).unwrap_or("abc");
                misses.push(NearMiss {
                    line: n,
                    message: format!(
                        "`{marker}` ends a block that has no header, so nothing before it ran; start the block with `#!nesl [@three-char-SHA-256: {id}]`"
                    ),
                    parser_reported: false,
                });
            }
        }
    }
    if let Some((start, true, false)) = fence {
        misses.push(fence_miss(start, None));
    }
    misses.sort_by_key(|m| m.line);
    misses
}

fn fence_miss(start: usize, end: Option<usize>) -> NearMiss {
    let lines = match end {
        Some(end) => format!("lines {start}-{end}"),
        None => format!("line {start} to the end"),
    };
    NearMiss {
        line: start,
        message: format!(
            "a ```nesl fence ({lines}) with no `#!nesl` header line, so nothing in it ran; a block starts with a line `{HEADER_EXAMPLE}` and ends with `#!end_abc` (any 3-letter id, the same in both)"
        ),
        parser_reported: false,
    }
}

/// Why a line that looks like a header is not one, with the line it should be; `None` for
/// lines that are fine or look nothing like a header.
fn header_problem(line: &str) -> Option<String> {
    let trimmed = line.trim();
    let lower = trimmed.to_ascii_lowercase();
    let looks_like = lower.starts_with("#!nesl")
        || lower.starts_with("#! nesl")
        || (lower.starts_with("#!") && lower.contains("[@three-char-sha-256"));
    if !looks_like || nesl::parse_header(line).is_some() {
        return None;
    }
    let mut problems = Vec::new();
    if trimmed.len() != line.len() && line.starts_with(char::is_whitespace) {
        problems.push("it is indented (a header starts at the beginning of its line)");
    }
    if !trimmed.starts_with("#!nesl") {
        problems.push("it must start with `#!nesl`");
    } else if !trimmed.starts_with("#!nesl ") {
        problems.push("it needs a space after `#!nesl`");
    }
    let bracket = trimmed.find("[@");
    match bracket {
        None => problems.push("the id goes in `[@three-char-SHA-256: <id>]`"),
        Some(at) => {
            let inside = &trimmed[at + 2..];
            match inside.find(':') {
                None => problems.push("the label and id are separated by `: `"),
                Some(colon) if !inside[colon + 1..].starts_with(' ') => {
                    problems.push("it needs a space after the colon")
                }
                Some(_) => {}
            }
            if !trimmed.ends_with(']') {
                problems.push("it must end with `]`");
            }
        }
    }
    let id = guess_id(trimmed);
    // Block ids the parser would refuse get its own message (INVALID_BLOCK_ID), which is
    // clear; only the shape is explained here.
    let fixed = format!("#!nesl [@three-char-SHA-256: {id}]");
    if problems.is_empty() {
        problems.push("it does not have the header's exact shape");
    }
    Some(format!(
        "`{trimmed}` is not a NESL header: {}; write `{fixed}` (and end the block with `#!end_{id}`)",
        problems.join("; ")
    ))
}

/// The id a malformed header meant: what follows the last `:` (or `[@`) up to `]`, if it is
/// a plausible id; `abc` otherwise.
fn guess_id(header: &str) -> String {
    let after = header
        .rsplit_once(':')
        .map(|(_, rest)| rest)
        .or_else(|| header.split_once("[@").map(|(_, rest)| rest))
        .unwrap_or("");
    let id = after.trim().trim_end_matches(']').trim();
    if nesl::validate_block_id(id).is_ok() {
        id.to_owned()
    } else {
        "abc".to_owned()
    }
}

/// A heredoc that never closed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unclosed {
    /// The block it is in.
    pub block: String,
    /// Its delimiter (`EOT_k6f`).
    pub delimiter: String,
    /// 1-based line of its opener (`content = <<'EOT_k6f'`).
    pub opened: usize,
}

impl Unclosed {
    /// What to add to the parser's message: what went wrong and the fix. (The report points
    /// at the opener's line rather than the parser's, which is past the end of the reply.)
    pub fn hint(&self) -> String {
        format!(
            "; it took in everything after its opening line: end its content with a line `{}`",
            self.delimiter
        )
    }
}

/// Every heredoc the parser found unclosed, with the line it opened on.
pub fn unclosed_heredocs(text: &str, parsed: &ParseResult<'_>) -> Vec<Unclosed> {
    if !parsed
        .errors
        .iter()
        .any(|e| e.code == ErrorCode::UnclosedHeredoc)
    {
        return Vec::new();
    }
    let lines = lines(text);
    let mut found = Vec::new();
    for error in parsed
        .errors
        .iter()
        .filter(|e| e.code == ErrorCode::UnclosedHeredoc)
    {
        let Some(by) = error.block_id.as_deref() else {
            continue;
        };
        let Some(block) = parsed
            .blocks
            .iter()
            .rev()
            .find(|b| b.id == by && b.end_line.is_none())
        else {
            continue;
        };
        // The message names the delimiter: "Heredoc 'EOT_k6f' not closed before EOF".
        let Some(delimiter) = error.message.split('\'').nth(1) else {
            continue;
        };
        let opener = format!("<<'{delimiter}'");
        let Some(opened) = (block.start_line..=lines.len())
            .find(|&n| lines.get(n - 1).is_some_and(|l| l.contains(&opener)))
        else {
            continue;
        };
        found.push(Unclosed {
            block: by.to_owned(),
            delimiter: delimiter.to_owned(),
            opened,
        });
    }
    found
}

/// Blocks whose header is inside another block's heredoc that never closed: the parser
/// read them as that heredoc's text.
pub fn swallowed(text: &str, parsed: &ParseResult<'_>) -> Vec<Swallowed> {
    let heredocs = unclosed_heredocs(text, parsed);
    if heredocs.is_empty() {
        return Vec::new();
    }
    let lines = lines(text);
    let mut found = Vec::new();
    for heredoc in heredocs {
        for n in heredoc.opened + 1..=lines.len() {
            if let Some(id) = lines.get(n - 1).and_then(|l| nesl::parse_header(l.trim())) {
                found.push(Swallowed {
                    id: id.to_owned(),
                    line: n,
                    by: heredoc.block.clone(),
                    delimiter: heredoc.delimiter.clone(),
                    opened: heredoc.opened,
                });
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn misses(text: &str) -> Vec<(usize, String)> {
        near_misses(text, &nesl::parse(text))
            .into_iter()
            .map(|m| (m.line, m.message))
            .collect()
    }

    #[test]
    fn a_fence_without_a_header_is_named_with_its_lines() {
        let found = misses("Here:\n```nesl\naction = \"file_write\"\n```\nbye\n");
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].0, 2);
        assert!(found[0].1.contains("(lines 2-4)"), "{found:?}");
    }

    #[test]
    fn a_fence_with_a_block_in_it_is_fine() {
        let text = "```nesl\n#!nesl [@three-char-SHA-256: ab1]\naction = \"ls\"\npath = \"/r\"\n#!end_ab1\n```\n";
        assert_eq!(misses(text), Vec::new());
    }

    #[test]
    fn other_fences_and_prose_are_not_news() {
        assert_eq!(
            misses("```rust\nfn a() {}\n```\nno blocks here\n"),
            Vec::new()
        );
    }

    #[test]
    fn a_header_missing_the_space_after_the_colon_shows_the_fix() {
        let found = misses("#!nesl [@three-char-SHA-256:abc]\naction = \"ls\"\n#!end_abc\n");
        assert_eq!(
            found.len(),
            1,
            "the end marker belongs to the bad header: {found:?}"
        );
        assert_eq!(
            found[0].1,
            "`#!nesl [@three-char-SHA-256:abc]` is not a NESL header: it needs a space after the colon; write `#!nesl [@three-char-SHA-256: abc]` (and end the block with `#!end_abc`)"
        );
    }

    #[test]
    fn headers_the_parser_ignores_are_found_too() {
        let found =
            misses("#!nesl[@three-char-SHA-256: k2p]\n  #!nesl [@three-char-SHA-256: k3q]\n");
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].1.contains("a space after `#!nesl`"), "{found:?}");
        assert!(found[0].1.contains("`#!nesl [@three-char-SHA-256: k2p]`"));
        assert!(found[1].1.contains("indented"), "{found:?}");
    }

    #[test]
    fn an_end_marker_without_a_header() {
        let found = misses("action = \"ls\"\n#!end_q1w\n");
        assert_eq!(found.len(), 1);
        assert!(
            found[0].1.contains("`#!nesl [@three-char-SHA-256: q1w]`"),
            "{found:?}"
        );
    }

    #[test]
    fn a_header_inside_an_unclosed_heredoc_is_swallowed() {
        let text = "#!nesl [@three-char-SHA-256: k6f]\naction = \"file_write\"\npath = \"/r/a\"\ncontent = <<'EOT_k6f'\nhello\n#!end_k6f\n\n#!nesl [@three-char-SHA-256: k7g]\naction = \"ls\"\n#!end_k7g\n";
        let parsed = nesl::parse(text);
        let found = swallowed(text, &parsed);
        assert_eq!(
            found,
            vec![Swallowed {
                id: "k7g".into(),
                line: 8,
                by: "k6f".into(),
                delimiter: "EOT_k6f".into(),
                opened: 4,
            }]
        );
        assert_eq!(near_misses(text, &parsed), Vec::new(), "inside a block");
    }
}
