//! A git error in git's words: libgit2's message without the `; class=…; code=…` it appends
//! for programmers (its `Display`), which tells a user nothing and hides what git would say.

/// `error`'s message alone, as git would print it.
pub fn plain(error: &git2::Error) -> String {
    without_codes(error.message())
}

/// `text` without any `; class=Name (n)` or `; code=Name (n)` libgit2 appended to a message
/// somewhere inside it (errors wrapped in others reach the user as text): the last line of
/// defence at every place a message is shown.
pub(crate) fn without_codes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("; c") {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        match libgit2_suffix(tail) {
            Some(len) => rest = &tail[len..],
            None => {
                out.push_str("; c");
                rest = &tail[3..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The length of `; class=Word (n)` or `; code=Word (n)` at the start of `text`.
fn libgit2_suffix(text: &str) -> Option<usize> {
    let body = text
        .strip_prefix("; class=")
        .or_else(|| text.strip_prefix("; code="))?;
    let name = body.find(|c: char| !c.is_ascii_alphanumeric())?;
    let number = body[name..].strip_prefix(" (")?;
    let close = number.find(')')?;
    let digits = &number[..close];
    let is_number = !digits.is_empty()
        && digits
            .strip_prefix('-')
            .unwrap_or(digits)
            .chars()
            .all(|c| c.is_ascii_digit());
    (name > 0 && is_number).then(|| text.len() - number[close + 1..].len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libgit2_class_and_code_are_dropped_wherever_they_are() {
        let error = git2::Error::new(
            git2::ErrorCode::NotFound,
            git2::ErrorClass::Config,
            "config value 'user.name' was not found",
        );
        let shown = format!("git: {error}");
        assert!(shown.contains("class=Config (7)"), "{shown}");
        assert_eq!(
            without_codes(&shown),
            "git: config value 'user.name' was not found"
        );
        assert_eq!(plain(&error), "config value 'user.name' was not found");
        assert_eq!(
            without_codes("a; class=Odb (9); code=Ambiguous (-5)\nb; code=Locked (-14) c"),
            "a\nb c"
        );
    }

    #[test]
    fn text_that_only_looks_alike_stays() {
        for text in [
            "a; c",
            "x; class=",
            "x; code=Word",
            "x; code=Word (n)",
            "; cats",
        ] {
            assert_eq!(without_codes(text), text);
        }
    }
}
