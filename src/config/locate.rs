//! Where in loaf.yml's text a problem is: the line of a key or value, and a YAML error
//! message reduced to one line naming the key, so every configuration error points at the
//! line to fix.

/// A YAML scalar without its quotes.
pub(super) fn unquoted(value: &str) -> &str {
    for quote in ['"', '\''] {
        if let Some(inner) = value
            .strip_prefix(quote)
            .and_then(|v| v.strip_suffix(quote))
        {
            return inner;
        }
    }
    value
}

/// Whether `word` occurs in `text` as a whole word (not inside a longer name).
pub(super) fn has_word(text: &str, word: &str) -> bool {
    let is_name = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        !before.is_some_and(is_name) && !after.is_some_and(is_name)
    })
}

/// `line N: ` for the first line, from the top-level key `section:` on, that `matches`
/// (called with the line's key and value, comments and a list dash removed; both empty for a
/// line without a colon, the value then being the whole item), or nothing.
pub(super) fn line_in_section(
    text: &str,
    section: &str,
    matches: impl Fn(&str, &str) -> bool,
) -> String {
    let start = format!("{section}:");
    // The section's own line counts too (`allowed-actions: [a, b]`).
    let Some(first) = text.lines().position(|l| l.starts_with(&start)) else {
        return String::new();
    };
    text.lines()
        .enumerate()
        .skip(first)
        .take_while(|(i, l)| *i == first || l.is_empty() || l.starts_with([' ', '\t', '-', '#']))
        .find(|(i, l)| {
            let content = l.split(" #").next().unwrap_or(l).trim();
            let content = content.strip_prefix("- ").unwrap_or(content).trim();
            let content = if *i == first {
                content.strip_prefix(&start).unwrap_or(content).trim()
            } else {
                content
            };
            match content.split_once(':') {
                Some((key, value)) => matches(key.trim(), value.trim()),
                None => matches("", content),
            }
        })
        .map(|(i, _)| format!("line {}: ", i + 1))
        .unwrap_or_default()
}

/// `line N: ` for the first line of `text` containing `needle`, or nothing.
pub(super) fn line_of(text: &str, needle: &str) -> String {
    text.lines()
        .position(|l| l.contains(needle))
        .map(|i| format!("line {}: ", i + 1))
        .unwrap_or_default()
}

/// A serde-saphyr message `line L column C: what`, with the key written on line L named
/// (`line 3 column 16: max_file_size: invalid u64`), unless the message names it already.
pub(super) fn name_the_key(text: &str, message: &str) -> String {
    let message = message.replace(
        "expected sequence start",
        "expected a list, e.g. [\"./**\"]",
    );
    let Some(rest) = message.strip_prefix("line ") else {
        return message;
    };
    let Some((position, what)) = rest.split_once(": ") else {
        return message.clone();
    };
    let line: Option<usize> = position.split(' ').next().and_then(|n| n.parse().ok());
    let key = line
        .and_then(|n| text.lines().nth(n.saturating_sub(1)))
        .map(|l| l.trim_start().trim_start_matches("- ").trim_start())
        .and_then(|l| l.split_once(':').map(|(k, _)| k.trim()))
        .filter(|k| !k.is_empty() && !what.contains(&format!("'{k}'")));
    match key {
        Some(key) => format!("line {position}: {key}: {what}"),
        None => message.clone(),
    }
}

/// The first line of a serde-saphyr error (`line L column C: what`), without the snippet,
/// with a did-you-mean for an unknown key.
pub(super) fn first_line(message: &str) -> String {
    let line = message.lines().next().unwrap_or(message);
    let line = line.strip_prefix("error: ").unwrap_or(line);
    let Some((at, rest)) = line.split_once("unknown field `") else {
        return line.to_owned();
    };
    let Some((key, expected)) = rest.split_once("`, expected ") else {
        return line.to_owned();
    };
    let known: Vec<&str> = expected
        .trim_start_matches("one of ")
        .split(", ")
        .map(|k| k.trim_matches('`'))
        .collect();
    let hint = crate::actions::closest(key, known.iter().copied())
        .map(|s| format!(" (did you mean '{s}'?)"))
        .unwrap_or_default();
    format!(
        "{at}unknown key '{key}'{hint}; known keys here: {}",
        known.join(", ")
    )
}
