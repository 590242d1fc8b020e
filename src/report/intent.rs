//! What a reply says it does: the first sentence of the prose it opens with, before its first
//! block or code fence. It becomes the commit's subject (`AI: <intent>`) where today's action
//! summary would only say which actions touched which files.

use crate::nesl::HEADER_MARK;

/// The first sentence of `reply`'s opening prose, on one line, without markdown's heading,
/// list and emphasis marks or a closing `.`/`:`; `None` when the reply opens with a block
/// (or with nothing but marks). Not fitted to any length: the subject line is.
pub(crate) fn opening_sentence(reply: &str) -> Option<String> {
    let mut words: Vec<&str> = Vec::new();
    for line in reply.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with(HEADER_MARK.trim_end())
            || trimmed.starts_with("```")
            || trimmed.starts_with("~~~")
        {
            break;
        }
        if trimmed.is_empty() {
            if words.is_empty() {
                continue;
            }
            // A paragraph ends the sentence.
            break;
        }
        let text = trimmed.trim_start_matches('#').trim_start();
        let text = text
            .strip_prefix("- ")
            .or_else(|| text.strip_prefix("* "))
            .unwrap_or(text);
        words.extend(text.split_whitespace());
        if ends_sentence(text) {
            break;
        }
    }
    let joined = words.join(" ");
    let sentence = first_sentence(&joined).replace("**", "").replace("__", "");
    let sentence = sentence
        .trim()
        .trim_end_matches(['.', ':', ';', ','])
        .trim();
    (sentence.chars().any(char::is_alphanumeric)).then(|| sentence.to_owned())
}

/// Whether a line ends in a sentence's end (`.`, `!`, `?`, or `:` announcing the blocks).
fn ends_sentence(text: &str) -> bool {
    text.ends_with(['.', '!', '?', ':'])
}

/// `text` up to its first sentence end: `.`, `!` or `?` followed by a space (a dot inside
/// `utils.py` or `1.5` ends nothing).
fn first_sentence(text: &str) -> &str {
    let bytes = text.as_bytes();
    for (at, byte) in bytes.iter().enumerate() {
        if matches!(byte, b'.' | b'!' | b'?') && bytes.get(at + 1) == Some(&b' ') {
            let end = if *byte == b'.' { at } else { at + 1 };
            return &text[..end];
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::opening_sentence;

    #[test]
    fn the_first_sentence_before_the_first_block_is_the_intent() {
        let cases = [
            (
                "Fix the off-by-one in tqdm/utils.py's `_screen_shape`. Then test it.\n\n#!nesl [@three-char-SHA-256: a1b]\n",
                Some("Fix the off-by-one in tqdm/utils.py's `_screen_shape`"),
            ),
            (
                "I'll make the progress bar\nhonour NO_COLOR:\n\n```sh\n#!nesl [@three-char-SHA-256: a1b]\n",
                Some("I'll make the progress bar honour NO_COLOR"),
            ),
            (
                "## **Rename** the helper\n\nMore prose.\n#!nesl [@three-char-SHA-256: a1b]\n",
                Some("Rename the helper"),
            ),
            (
                "Version 1.5 is out! Upgrade.\n",
                Some("Version 1.5 is out!"),
            ),
            ("#!nesl [@three-char-SHA-256: a1b]\naction = \"ls\"\n", None),
            ("\n\n```\n#!nesl [@three-char-SHA-256: a1b]\n", None),
            ("---\n#!nesl [@three-char-SHA-256: a1b]\n", None),
        ];
        for (reply, intent) in cases {
            assert_eq!(opening_sentence(reply).as_deref(), intent, "{reply:?}");
        }
    }
}
