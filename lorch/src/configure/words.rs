//! A command line typed as one answer, split into its words the way a POSIX shell would
//! (without expansions), and a command shown back as words that split the same way.
//!
//! `lorch config` asks for an agent's `cmd` (a JSON array in lorch.json) as one line of
//! text: `lorch agent builder --check 'cargo test' -- llm -m gpt-4o`.

/// Why a line does not split into words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unclosed(pub char);

impl std::fmt::Display for Unclosed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "a {} quote is not closed", self.0)
    }
}

/// Splits `line` into words: blanks separate them; `'…'` is literal; `"…"` keeps blanks and
/// takes `\"` and `\\`; a backslash elsewhere makes the next character literal.
pub fn split(line: &str) -> Result<Vec<String>, Unclosed> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => words.extend(word.take()),
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => w.push(c),
                        None => return Err(Unclosed('\'')),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\')) => w.push(c),
                            Some(c) => {
                                w.push('\\');
                                w.push(c);
                            }
                            None => return Err(Unclosed('"')),
                        },
                        Some(c) => w.push(c),
                        None => return Err(Unclosed('"')),
                    }
                }
            }
            '\\' => {
                let w = word.get_or_insert_with(String::new);
                if let Some(c) = chars.next() {
                    w.push(c);
                }
            }
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    Ok(words)
}

/// `words` as one line that [`split`] turns back into them: plain words as they are, others
/// in single quotes.
pub fn join(words: &[String]) -> String {
    let plain = |w: &str| {
        !w.is_empty()
            && w.chars()
                .all(|c| c.is_ascii_alphanumeric() || "_./=:,+@%-".contains(c))
    };
    let shown: Vec<String> = words
        .iter()
        .map(|w| {
            if plain(w) {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', r"'\''"))
            }
        })
        .collect();
    shown.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_and_backslashes_split_as_in_a_shell() {
        assert_eq!(
            split(r#"lorch agent builder --check 'cargo test' -- "a \"b\"" c\ d"#),
            Ok(vec![
                "lorch".into(),
                "agent".into(),
                "builder".into(),
                "--check".into(),
                "cargo test".into(),
                "--".into(),
                r#"a "b""#.into(),
                "c d".into(),
            ])
        );
        assert_eq!(split("  "), Ok(vec![]));
        assert_eq!(split("''"), Ok(vec![String::new()]));
        assert_eq!(split("a 'b"), Err(Unclosed('\'')));
        assert_eq!(split("a \"b"), Err(Unclosed('"')));
    }

    #[test]
    fn join_shows_words_that_split_back_into_the_same() {
        let words: Vec<String> = ["sh", "-c", "echo 'hi' there", "", "x=1"]
            .map(String::from)
            .into();
        assert_eq!(join(&words), r"sh -c 'echo '\''hi'\'' there' '' x=1");
        assert_eq!(split(&join(&words)), Ok(words));
    }
}
