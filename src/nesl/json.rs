//! `parse --json`: the result written exactly as `JSON.stringify(result, null, 2)` writes it.
//!
//! [`ParseResult`] also implements `Serialize` and `serde_json::to_writer_pretty` gives the
//! same bytes; this writer exists because string escaping dominates the time of a 20 MB
//! reply, and here it skips eight bytes at a time over text that needs none.

use std::io::{self, Write};

use super::js::JsString;
use super::{Block, ParseResult, SyntaxError};

/// Writes `result` as 2-space indented JSON with the reference's key order (no final newline).
pub fn write_json(result: &ParseResult<'_>, out: &mut impl Write) -> io::Result<()> {
    out.write_all(b"{\n  \"blocks\": ")?;
    write_array(out, &result.blocks, write_block)?;
    out.write_all(b",\n  \"errors\": ")?;
    write_array(out, &result.errors, write_error)?;
    out.write_all(b"\n}")
}

fn write_array<W: Write, T>(
    out: &mut W,
    items: &[T],
    item: fn(&mut W, &T) -> io::Result<()>,
) -> io::Result<()> {
    if items.is_empty() {
        return out.write_all(b"[]");
    }
    out.write_all(b"[")?;
    for (i, value) in items.iter().enumerate() {
        out.write_all(if i == 0 { b"\n    {" } else { b",\n    {" })?;
        item(out, value)?;
        out.write_all(b"\n    }")?;
    }
    out.write_all(b"\n  ]")
}

fn write_block<W: Write>(out: &mut W, block: &Block<'_>) -> io::Result<()> {
    out.write_all(b"\n      \"id\": ")?;
    write_str(out, &block.id)?;
    out.write_all(b",\n      \"properties\": ")?;
    if block.properties.is_empty() {
        out.write_all(b"{}")?;
    } else {
        out.write_all(b"{")?;
        for (i, (key, value)) in block.properties.raw_entries().enumerate() {
            out.write_all(if i == 0 {
                b"\n        "
            } else {
                b",\n        "
            })?;
            write_str(out, key)?;
            out.write_all(b": ")?;
            write_value(out, value)?;
        }
        out.write_all(b"\n      }")?;
    }
    write!(
        out,
        ",\n      \"startLine\": {},\n      \"endLine\": ",
        block.start_line
    )?;
    write_opt_number(out, block.end_line)
}

fn write_error<W: Write>(out: &mut W, error: &SyntaxError<'_>) -> io::Result<()> {
    write!(
        out,
        "\n      \"code\": \"{}\",\n      \"line\": {},\n      \"column\": {},\n      \"length\": {},\n      \"blockId\": ",
        error.code, error.line, error.column, error.length
    )?;
    match &error.block_id {
        Some(id) => write_str(out, id)?,
        None => out.write_all(b"null")?,
    }
    out.write_all(b",\n      \"content\": ")?;
    write_str(out, &error.content)?;
    out.write_all(b",\n      \"context\": ")?;
    write_str(out, &error.context)?;
    out.write_all(b",\n      \"message\": ")?;
    write_str(out, &error.message)
}

fn write_opt_number(out: &mut impl Write, n: Option<usize>) -> io::Result<()> {
    match n {
        Some(n) => write!(out, "{n}"),
        None => out.write_all(b"null"),
    }
}

fn write_value(out: &mut impl Write, value: &JsString<'_>) -> io::Result<()> {
    match &value.exact_json {
        Some(json) => out.write_all(json.as_bytes()),
        None => write_str(out, &value.text),
    }
}

/// Flags (the high bit of a byte) the bytes of `word` that are `"`, `\` or a control
/// character below 0x20. Flags above the first true one may be false, so only the lowest
/// flag is to be trusted.
fn escape_flags(word: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let zero_bytes = |v: u64| v.wrapping_sub(ONES) & !v & HIGHS;
    let below_space = word.wrapping_sub(ONES * 0x20) & !word & HIGHS;
    let quote = zero_bytes(word ^ (ONES * u64::from(b'"')));
    let backslash = zero_bytes(word ^ (ONES * u64::from(b'\\')));
    below_space | quote | backslash
}

/// Index of the first byte from `from` that needs escaping, or the length.
fn next_escape(bytes: &[u8], mut from: usize) -> usize {
    while let Some(chunk) = bytes.get(from..from + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let flags = escape_flags(u64::from_le_bytes(word));
        if flags != 0 {
            return from + (flags.trailing_zeros() / 8) as usize;
        }
        from += 8;
    }
    bytes[from..]
        .iter()
        .position(|&b| b < 0x20 || b == b'"' || b == b'\\')
        .map_or(bytes.len(), |i| from + i)
}

/// A JSON string literal, escaped as `JSON.stringify` (and serde_json) escape.
fn write_str(out: &mut impl Write, s: &str) -> io::Result<()> {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = s.as_bytes();
    out.write_all(b"\"")?;
    let mut clean_from = 0;
    loop {
        let i = next_escape(bytes, clean_from);
        if i > clean_from {
            out.write_all(&bytes[clean_from..i])?;
        }
        let Some(&byte) = bytes.get(i) else {
            break;
        };
        let unicode;
        let escape: &[u8] = match byte {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0C => b"\\f",
            _ => {
                unicode = [
                    b'\\',
                    b'u',
                    b'0',
                    b'0',
                    HEX[usize::from(byte >> 4)],
                    HEX[usize::from(byte & 0xF)],
                ];
                &unicode
            }
        };
        out.write_all(escape)?;
        clean_from = i + 1;
    }
    out.write_all(b"\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn via_writer(result: &ParseResult<'_>) -> String {
        let mut out = Vec::new();
        write_json(result, &mut out).expect("writes to a Vec");
        String::from_utf8(out).expect("UTF-8")
    }

    #[test]
    fn escapes_like_serde_json() {
        for s in [
            "",
            "plain text that is long enough",
            "q\"b\\s\n\r\t\u{8}\u{c}\u{1}\u{1f}\u{7f}é😀 end",
            "12345678\"",
            "\u{0}",
        ] {
            let mut ours = Vec::new();
            write_str(&mut ours, s).expect("writes");
            assert_eq!(
                String::from_utf8_lossy(&ours),
                serde_json::to_string(s).expect("json"),
                "{s:?}"
            );
        }
    }

    #[test]
    fn matches_serde_pretty_output() {
        let text = "#!nesl [@three-char-SHA-256: abc]\nk = \"v\\ud800\"\nempty = \"\"\nbad line\n#!end_abc\n\
                    #!nesl [@three-char-SHA-256: e]\n#!nesl [@three-char-SHA-256: xyz]\n";
        let result = crate::nesl::parse(text);
        assert_eq!(
            via_writer(&result),
            serde_json::to_string_pretty(&result).expect("json")
        );
        let empty = ParseResult::default();
        assert_eq!(
            via_writer(&empty),
            serde_json::to_string_pretty(&empty).expect("json")
        );
    }
}
