//! JavaScript string semantics the reference parser relies on.
//!
//! The reference parser is written in TypeScript, so its positions count UTF-16 code units,
//! its `trim()` strips ECMAScript white space (which differs from Rust's `char::is_whitespace`:
//! it includes U+FEFF and excludes U+0085), and quoted values are decoded with `JSON.parse`,
//! which accepts lone surrogate escapes that a Rust `String` cannot hold. Everything here
//! reproduces those rules on UTF-8 text.

use std::borrow::Cow;
use std::fmt::Write as _;

use nom::branch::alt;
use nom::bytes::complete::{take_while_m_n, take_while1};
use nom::character::complete::char;
use nom::combinator::{all_consuming, map, map_res, value};
use nom::multi::fold;
use nom::sequence::preceded;
use nom::{IResult, Parser};

/// ECMAScript `WhiteSpace` and `LineTerminator`: what `String.prototype.trim` and the regex
/// class `\s` match.
pub(crate) fn is_js_whitespace(c: char) -> bool {
    matches!(
        c,
        '\u{9}'..='\u{D}'
            | ' '
            | '\u{A0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200A}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202F}'
            | '\u{205F}'
            | '\u{3000}'
            | '\u{FEFF}'
    )
}

/// `s.trim()` in JavaScript.
pub fn trim(s: &str) -> &str {
    s.trim_matches(is_js_whitespace)
}

/// `s.trimEnd()` in JavaScript.
pub fn trim_end(s: &str) -> &str {
    s.trim_end_matches(is_js_whitespace)
}

/// `s.length` in JavaScript: the number of UTF-16 code units.
pub fn utf16_len(s: &str) -> usize {
    // Every character is one unit except those outside the BMP (4-byte UTF-8), which are two.
    s.bytes()
        .map(|b| usize::from(b & 0xC0 != 0x80) + usize::from(b >= 0xF0))
        .sum()
}

/// `s.indexOf(pair)` for a two-byte ASCII `pair`, as a byte offset: cheaper than a general
/// substring search on the short lines this runs on.
pub(crate) fn find_pair(s: &str, pair: [u8; 2]) -> Option<usize> {
    let bytes = s.as_bytes();
    memchr::memchr_iter(pair[0], bytes).find(|&i| bytes.get(i + 1) == Some(&pair[1]))
}

/// A string value as JavaScript holds it after `JSON.parse`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsString<'a> {
    /// The value as UTF-8, borrowed from the input when it has no escapes; a lone surrogate
    /// (possible in JavaScript, not in Rust) is U+FFFD here, which is also what Node writes
    /// for it when the value reaches a file.
    pub text: Cow<'a, str>,
    /// Only when the value holds a lone surrogate: its exact `JSON.stringify` encoding, so that
    /// `parse --json` still prints what the reference prints.
    pub exact_json: Option<Box<str>>,
}

impl<'a> JsString<'a> {
    /// A value that needs no special JSON encoding.
    pub fn new(text: impl Into<Cow<'a, str>>) -> Self {
        JsString {
            text: text.into(),
            exact_json: None,
        }
    }

    /// The same value, owning its text.
    pub fn into_owned(self) -> JsString<'static> {
        JsString {
            text: Cow::Owned(self.text.into_owned()),
            exact_json: self.exact_json,
        }
    }
}

/// Why `JSON.parse` rejected a quoted string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct JsonStringError;

/// `JSON.parse(quoted)` for a string literal `quoted` that starts and ends with `"`.
pub(crate) fn parse_json_string(quoted: &str) -> Result<JsString<'_>, JsonStringError> {
    let inner = quoted
        .strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .ok_or(JsonStringError)?;
    if !inner.contains(['\\', '"']) && !inner.bytes().any(|b| b < 0x20) {
        return Ok(JsString::new(inner));
    }
    let units = decode_to_utf16(inner)?;
    match String::from_utf16(&units) {
        Ok(text) => Ok(JsString::new(text)),
        Err(_) => Ok(JsString {
            text: Cow::Owned(String::from_utf16_lossy(&units)),
            exact_json: Some(stringify_utf16(&units).into_boxed_str()),
        }),
    }
}

/// Decodes the body of a JSON string literal into UTF-16 code units, as JavaScript does:
/// `body = (plain | escape)*`.
fn decode_to_utf16(inner: &str) -> Result<Vec<u16>, JsonStringError> {
    let piece = alt((map(plain, Piece::Plain), map(escape, Piece::Unit)));
    let units = fold(
        0..,
        piece,
        || Vec::with_capacity(inner.len()),
        |mut units, piece| {
            match piece {
                Piece::Plain(text) => units.extend(text.encode_utf16()),
                Piece::Unit(unit) => units.push(unit),
            }
            units
        },
    );
    all_consuming(units)
        .parse(inner)
        .map(|(_, units)| units)
        .map_err(|_: nom::Err<()>| JsonStringError)
}

/// A run of characters a JSON string holds as they are, or one escape.
enum Piece<'a> {
    Plain(&'a str),
    Unit(u16),
}

/// Characters that stand for themselves: anything but `"`, `\` and control characters
/// (U+007F and above are allowed, as `JSON.parse` allows them).
fn plain(input: &str) -> IResult<&str, &str, ()> {
    take_while1(|c: char| c != '"' && c != '\\' && c >= ' ').parse(input)
}

/// A backslash escape, as the UTF-16 code unit it stands for. `\u` takes exactly four hex
/// digits and may name half a surrogate pair: the caller decides what a lone half becomes.
fn escape(input: &str) -> IResult<&str, u16, ()> {
    let hex4 = take_while_m_n(4, 4, |c: char| c.is_ascii_hexdigit());
    let unicode = preceded(char('u'), map_res(hex4, |h| u16::from_str_radix(h, 16)));
    let unit = alt((
        value(0x22, char('"')),
        value(0x5C, char('\\')),
        value(0x2F, char('/')),
        value(0x08, char('b')),
        value(0x0C, char('f')),
        value(0x0A, char('n')),
        value(0x0D, char('r')),
        value(0x09, char('t')),
        unicode,
    ));
    preceded(char('\\'), unit).parse(input)
}

/// `JSON.stringify` of a UTF-16 string (well-formed variant: lone surrogates as `\udxxx`).
fn stringify_utf16(units: &[u16]) -> String {
    let mut out = String::with_capacity(units.len() + 2);
    out.push('"');
    for decoded in char::decode_utf16(units.iter().copied()) {
        match decoded {
            Ok('"') => out.push_str("\\\""),
            Ok('\\') => out.push_str("\\\\"),
            Ok('\u{8}') => out.push_str("\\b"),
            Ok('\u{C}') => out.push_str("\\f"),
            Ok('\n') => out.push_str("\\n"),
            Ok('\r') => out.push_str("\\r"),
            Ok('\t') => out.push_str("\\t"),
            Ok(c) if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            Ok(c) => out.push(c),
            Err(lone) => {
                let _ = write!(out, "\\u{:04x}", lone.unpaired_surrogate());
            }
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trim_follows_ecmascript_not_rust() {
        assert_eq!(trim("\u{FEFF} a \u{3000}"), "a");
        assert_eq!(trim("\u{85}a"), "\u{85}a");
        assert_eq!(trim_end("a \t"), "a");
    }

    #[test]
    fn utf16_len_counts_surrogate_pairs_twice() {
        assert_eq!(utf16_len("abc"), 3);
        assert_eq!(utf16_len("é中"), 2);
        assert_eq!(utf16_len("😀x"), 3);
    }

    #[test]
    fn json_strings_decode_like_json_parse() {
        let ok = |s: &str| parse_json_string(s).map(|v| v.text.into_owned());
        assert_eq!(ok(r#""plain""#), Ok("plain".into()));
        assert_eq!(ok(r#""a\"b\\c\/d\n""#), Ok("a\"b\\c/d\n".into()));
        assert_eq!(ok(r#""\u00e9\uD83D\uDE00""#), Ok("é😀".into()));
        assert_eq!(ok(r#""\x""#), Err(JsonStringError));
        assert_eq!(ok(r#""\u12""#), Err(JsonStringError));
        assert_eq!(ok("\"tab\there\""), Err(JsonStringError));
        assert_eq!(ok("\"del\u{7f}\""), Ok("del\u{7f}".into()));
    }

    #[test]
    fn lone_surrogates_keep_their_exact_json() {
        let v = parse_json_string(r#""a\ud800\n""#).unwrap();
        assert_eq!(v.text, "a\u{FFFD}\n");
        assert_eq!(v.exact_json.as_deref(), Some(r#""a\ud800\n""#));
    }
}
