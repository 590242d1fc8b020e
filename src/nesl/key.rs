//! Property keys: a Unicode letter or `_`, then letters, digits (`\p{N}`) or `_`; no
//! zero-width or control characters; at most 256 UTF-16 code units.

use unicode_properties::{GeneralCategoryGroup, UnicodeGeneralCategory};

use super::js;

/// The longest key allowed, in UTF-16 code units.
pub const KEY_MAX_LENGTH: usize = 256;

fn is_letter(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_alphabetic()
    } else {
        c.general_category_group() == GeneralCategoryGroup::Letter
    }
}

fn is_number(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_digit()
    } else {
        c.general_category_group() == GeneralCategoryGroup::Number
    }
}

fn may_start_key(c: char) -> bool {
    c == '_' || is_letter(c)
}

fn may_continue_key(c: char) -> bool {
    c == '_' || is_letter(c) || is_number(c)
}

/// Zero-width and control characters, refused even where a category would allow them.
fn is_excluded(c: char) -> bool {
    matches!(c, '\u{200B}'..='\u{200D}' | '\u{2060}' | '\u{FEFF}' | '\0'..='\u{1F}' | '\u{7F}'..='\u{9F}')
}

/// Checks a key, with the reference's message for the first rule it breaks.
pub fn validate_key(key: &str) -> Result<(), &'static str> {
    let Some(first) = key.chars().next() else {
        return Err("Key cannot be empty");
    };
    if js::utf16_len(key) > KEY_MAX_LENGTH {
        return Err("Key exceeds 256 character limit");
    }
    if !may_start_key(first) {
        return Err("Key must start with letter or underscore");
    }
    if key.chars().any(|c| is_excluded(c) || !may_continue_key(c)) {
        return Err("Key contains invalid characters");
    }
    Ok(())
}

/// The first character that makes `key` invalid, with its 0-based UTF-16 position.
pub fn find_invalid_char(key: &str) -> Option<(usize, char)> {
    let mut position = 0;
    for c in key.chars() {
        let allowed = if position == 0 {
            may_start_key(c)
        } else {
            may_continue_key(c)
        };
        if !allowed || is_excluded(c) {
            return Some((position, c));
        }
        position += c.len_utf16();
    }
    None
}
