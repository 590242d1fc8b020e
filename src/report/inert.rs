//! Text that is safe to print on a terminal and to store in a commit: control characters
//! shown escaped instead of acted on (docs/sandbox-and-safety.md, "Terminal output: control
//! sequences are shown, never obeyed": output printed to a terminal has control sequences
//! neutralised).
//!
//! What a reply's code prints, a file it read, an agent's prompt can hold escape sequences
//! that a terminal obeys: `ESC ] 52 ; c ; … BEL` writes the clipboard, `ESC [ 2 J` clears the
//! screen, `ESC ] 0 ; … BEL` sets the window title, a lone carriage return hides what came
//! before it on the line. Shown escaped they are harmless, and clearer for a model reading
//! the report. Newline, tab and a carriage return ending a line (`\r\n`) are kept; ESC shows
//! as `\e`, NUL as `\0`, a lone CR as `\r`, the other C0 controls and DEL as `\xNN`, the C1
//! controls (U+0080–U+009F) as `\u{NN}`, and bytes that are not UTF-8 as `\xNN`.
//! Backslashes are left as they are: the escaped text is for reading, not for decoding.

use std::borrow::Cow;
use std::fmt::Write as _;

/// `text` with its control characters escaped (see the module's doc); borrowed when it has
/// none. Escaping twice changes nothing more.
pub(crate) fn inert(text: &str) -> Cow<'_, str> {
    let first = text
        .char_indices()
        .find(|&(at, c)| acts(c, text[at + c.len_utf8()..].chars().next()))
        .map(|(at, _)| at);
    let Some(first) = first else {
        return Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len() + 16);
    out.push_str(&text[..first]);
    let mut rest = text[first..].chars().peekable();
    while let Some(c) = rest.next() {
        if acts(c, rest.peek().copied()) {
            escape(c, &mut out);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `bytes` as text with what is not UTF-8 shown as `\xNN`, then made [`inert`].
pub(crate) fn inert_bytes(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        out.push_str(&inert(chunk.valid()));
        for byte in chunk.invalid() {
            let _ = write!(out, "\\x{byte:02x}");
        }
    }
    out
}

/// Whether `c` (followed by `next`) is a control a terminal would act on.
fn acts(c: char, next: Option<char>) -> bool {
    match c {
        '\n' | '\t' => false,
        '\r' => next != Some('\n'),
        _ => c.is_control(),
    }
}

/// Appends the visible form of the control `c`.
fn escape(c: char, out: &mut String) {
    let _ = match c {
        '\x1b' => write!(out, "\\e"),
        '\0' => write!(out, "\\0"),
        '\r' => write!(out, "\\r"),
        c if (c as u32) < 0x80 => write!(out, "\\x{:02x}", c as u32),
        c => write!(out, "\\u{{{:x}}}", c as u32),
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_sequences_show_escaped_and_lines_stay_lines() {
        assert_eq!(
            inert("copy\x1b]52;c;aGk=\x07 clear\x1b[2J title\x1b]0;x\x1b\\ end"),
            "copy\\e]52;c;aGk=\\x07 clear\\e[2J title\\e]0;x\\e\\ end"
        );
        assert_eq!(inert("a\tb\r\nc\n"), "a\tb\r\nc\n");
        assert_eq!(inert("50%\r100%\n"), "50%\\r100%\n");
        assert_eq!(
            inert("nul\0 del\x7f c1\u{9b}2J"),
            "nul\\0 del\\x7f c1\\u{9b}2J"
        );
        assert_eq!(inert("ends with\r"), "ends with\\r");
    }

    #[test]
    fn plain_text_is_borrowed_and_escaping_twice_changes_nothing() {
        assert!(matches!(inert("plain ✅ · text\n"), Cow::Borrowed(_)));
        let once = inert("\x1b[31mred\x1b[0m\r").into_owned();
        assert_eq!(inert(&once), once);
    }

    #[test]
    fn bytes_that_are_not_utf8_show_as_hex() {
        assert_eq!(
            inert_bytes(b"ok \xff\xfe \x1b[2J \xc3\xa9"),
            "ok \\xff\\xfe \\e[2J é"
        );
    }
}
