//! What a text holds: no reply at all, a reply still being written (what `git loaf watch`
//! waits on), or a complete reply and its key, which every apply records so that the
//! watcher never runs a reply twice (docs/watch.md).
//!
//! The key is a hash of the reply's blocks only, from each header line to its end marker:
//! the prose around them, blank lines between them and line endings (an editor or clipboard
//! turning `\n` into `\r\n`) do not change it, so re-saving or re-copying the same reply is
//! recognised; any change inside a block, or a new block, makes a new key.

use sha2::{Digest, Sha256};

/// The state of a text, as the watcher acts on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Readiness {
    /// No NESL block at all: not a reply (or not yet).
    NoBlocks,
    /// The last block is still open, or a header is being written: the text is probably
    /// being saved or streamed right now.
    Incomplete {
        /// The open block's id, when its header is complete.
        block: Option<String>,
        /// The line where it starts.
        line: usize,
    },
    /// Complete blocks: ready to run.
    Ready {
        /// The key of its blocks.
        key: String,
        /// How many blocks it has.
        blocks: usize,
        /// For each shorter run of its first blocks (1, 2, … of them): the key that run had
        /// as a reply of its own, and the line where the next block starts. A new reply
        /// appended below one already applied is recognised by these.
        earlier: Vec<(String, usize)>,
    },
}

/// The first 8 bytes of a block hash, in hex: a key.
fn key_of(hash: Sha256) -> String {
    hash.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The key of `text` (already `parsed`) when it is a complete reply (see [`inspect`]): what
/// `git loaf watch` records for each apply, and what any other apply records so that the
/// watcher knows the reply ran.
pub fn key(text: &str, parsed: &crate::nesl::ParseResult<'_>) -> Option<String> {
    match inspect_parsed(text, parsed) {
        Readiness::Ready { key, .. } => Some(key),
        Readiness::NoBlocks | Readiness::Incomplete { .. } => None,
    }
}

/// The header every block starts with.
const HEADER: &str = "#!nesl";

/// Inspects `text` (see [`Readiness`]).
pub fn inspect(text: &str) -> Readiness {
    inspect_parsed(text, &crate::nesl::parse(text))
}

/// [`inspect`], of a text already parsed.
pub fn inspect_parsed(text: &str, parsed: &crate::nesl::ParseResult<'_>) -> Readiness {
    let lines: Vec<&str> = text.split('\n').collect();
    if let Some(line) = header_being_written(&lines, parsed.blocks.last().map(block_end)) {
        return Readiness::Incomplete { block: None, line };
    }
    let Some(last) = parsed.blocks.last() else {
        return Readiness::NoBlocks;
    };
    if last.end_line.is_none() || end_marker_being_written(&lines, &last.id) {
        return Readiness::Incomplete {
            block: Some(last.id.to_string()),
            line: last.start_line,
        };
    }
    let mut hash = Sha256::new();
    let mut earlier = Vec::new();
    for (i, block) in parsed.blocks.iter().enumerate() {
        if i > 0 {
            earlier.push((key_of(hash.clone()), block.start_line));
        }
        // A block left open in the middle (another header followed) runs until that header.
        let end = block.end_line.unwrap_or_else(|| {
            parsed
                .blocks
                .get(i + 1)
                .map_or(lines.len(), |next| next.start_line.saturating_sub(1))
        });
        let span = lines
            .get(block.start_line.saturating_sub(1)..end.min(lines.len()))
            .unwrap_or_default();
        for line in span {
            let line = line.strip_suffix('\r').unwrap_or(line);
            // Length-prefixed, so that no two different spans hash alike.
            hash.update((line.len() as u64).to_le_bytes());
            hash.update(line.as_bytes());
        }
        hash.update(u64::MAX.to_le_bytes());
    }
    Readiness::Ready {
        key: key_of(hash),
        blocks: parsed.blocks.len(),
        earlier,
    }
}

/// The text ends, without a line ending, in the middle of the last block's end marker: the
/// parser closes a block on any `#!end_` line (reporting the mismatch), so a save cut inside
/// `#!end_abc` would otherwise look complete.
fn end_marker_being_written(lines: &[&str], id: &str) -> bool {
    let Some(last) = lines.last().map(|l| l.trim()) else {
        return false;
    };
    last.starts_with("#!end_") && last != format!("#!end_{id}")
}

/// The line where a block ends (its end marker, or its header when it has none).
fn block_end(block: &crate::nesl::Block<'_>) -> usize {
    block.end_line.unwrap_or(block.start_line)
}

/// A header after the last block that is not (yet) one the parser reads: its last line is
/// the beginning of `#!nesl` without a line ending (a save or a stream cut there), or a
/// `#!nesl` line that does not parse as a header is the text's last non-empty line. Its
/// 1-based line.
fn header_being_written(lines: &[&str], last_block_end: Option<usize>) -> Option<usize> {
    let (index, line) = lines
        .iter()
        .enumerate()
        .rev()
        .find(|(_, l)| !l.trim().is_empty())?;
    let number = index + 1;
    if last_block_end.is_some_and(|end| number <= end) {
        return None;
    }
    let trimmed = line.trim();
    // `#!` at least: a lone `#` ending a text is more often a heading being typed.
    let unfinished =
        index + 1 == lines.len() && trimmed.starts_with("#!") && HEADER.starts_with(trimmed);
    let unreadable_header = trimmed.starts_with(HEADER);
    (unfinished || unreadable_header).then_some(number)
}

#[cfg(test)]
mod tests {
    use super::*;

    const REPLY: &str = "Here you go.\n\n#!nesl [@three-char-SHA-256: k1m]\naction = \"file_write\"\npath = \"/r/a.txt\"\ncontent = <<'EOT_k1m'\nhello\nEOT_k1m\n#!end_k1m\n\nAnd a second one:\n#!nesl [@three-char-SHA-256: q2w]\naction = \"file_delete\"\npath = \"/r/b.txt\"\n#!end_q2w\nThanks!\n";

    fn key(text: &str) -> String {
        super::key(text, &crate::nesl::parse(text))
            .unwrap_or_else(|| panic!("not ready: {:?}", inspect(text)))
    }

    #[test]
    fn the_key_ignores_prose_blank_lines_and_line_endings() {
        let base = key(REPLY);
        assert_eq!(base.len(), 16);
        let other_prose = REPLY
            .replace("Here you go.", "Sure! Changes below.")
            .replace("Thanks!\n", "");
        assert_eq!(key(&other_prose), base);
        assert_eq!(key(&REPLY.replace("\n\n", "\n\n\n  \n")), base);
        assert_eq!(key(&REPLY.replace('\n', "\r\n")), base);
    }

    #[test]
    fn any_change_inside_a_block_or_a_new_block_is_a_new_key() {
        let base = key(REPLY);
        assert_ne!(key(&REPLY.replace("hello", "hello!")), base);
        assert_ne!(key(&REPLY.replace("hello\n", "hello \n")), base);
        assert_ne!(key(&REPLY.replace("/r/b.txt", "/r/c.txt")), base);
        let more = format!(
            "{REPLY}#!nesl [@three-char-SHA-256: z9z]\naction = \"file_read\"\npath = \"/r/a.txt\"\n#!end_z9z\n"
        );
        assert_ne!(key(&more), base);
        assert!(matches!(inspect(&more), Readiness::Ready { blocks: 3, .. }));
    }

    #[test]
    fn a_reply_cut_anywhere_inside_its_blocks_is_incomplete() {
        let end = REPLY.find("#!end_q2w").expect("end") + "#!end_q2w".len();
        let first_header = REPLY.find("#!nesl").expect("header");
        let first_end = REPLY.find("#!end_k1m").expect("end") + "#!end_k1m".len();
        let second_header = REPLY
            .find("#!nesl [@three-char-SHA-256: q2w]")
            .expect("header");
        // Cut between two blocks (or right after a `#` that may start anything), the text is a
        // complete shorter reply (the debounce, not the content, covers that); cut from `#!`
        // on, inside a block, it must wait.
        for cut in (first_header + 2..first_end).chain(second_header + 2..end) {
            let partial = &REPLY[..cut];
            assert!(
                !matches!(inspect(partial), Readiness::Ready { .. }),
                "cut at {cut}: {partial:?} gave {:?}",
                inspect(partial)
            );
        }
        assert!(matches!(inspect(&REPLY[..end]), Readiness::Ready { .. }));
        assert_eq!(
            inspect(&REPLY[..REPLY.find("hello").expect("body")]),
            Readiness::Incomplete {
                block: Some("k1m".into()),
                line: 3
            }
        );
    }

    #[test]
    fn text_without_blocks_is_no_reply() {
        assert_eq!(inspect(""), Readiness::NoBlocks);
        assert_eq!(
            inspect("<!-- paste a reply here -->\n"),
            Readiness::NoBlocks
        );
        assert_eq!(
            inspect("just some copied text\nwith = signs\n"),
            Readiness::NoBlocks
        );
    }
}
