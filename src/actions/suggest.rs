//! "Did you mean …?": the known name closest to what a model wrote.

/// Words models use for the same thing, mapped to the schema's word.
const SYNONYMS: [(&str, &str); 12] = [
    ("create", "write"),
    ("save", "write"),
    ("remove", "delete"),
    ("rm", "delete"),
    ("rename", "move"),
    ("mv", "move"),
    ("mkdir", "dir_create"),
    ("rmdir", "dir_delete"),
    ("folder", "dir"),
    ("directory", "dir"),
    ("run", "exec"),
    ("execute", "exec"),
];

/// The words of a name, lowercased, with synonyms replaced by the schema's words, sorted.
fn words(name: &str) -> Vec<String> {
    fn canonical(word: &str) -> Vec<String> {
        match SYNONYMS.iter().find(|(from, _)| *from == word) {
            // A synonym can expand to several words that are synonyms themselves
            // (`mkdir` → `dir_create` → `dir`, `write`).
            Some((_, to)) => to.split('_').flat_map(canonical).collect(),
            None => vec![word.to_owned()],
        }
    }
    let mut words: Vec<String> = name
        .to_ascii_lowercase()
        .split(['_', '-', ' ', '.'])
        .filter(|w| !w.is_empty())
        .flat_map(canonical)
        .collect();
    words.sort();
    words
}

/// The candidate closest to `wrong`, if one is close enough to be a plausible intent: the
/// same words in another order (`write_file` → `file_write`), synonyms (`create_file`), or
/// a small edit distance (`file_wirte`).
pub fn closest<'a>(wrong: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let wrong_words = words(wrong);
    let mut best: Option<(f64, &str)> = None;
    for candidate in candidates {
        let score = if words(candidate) == wrong_words {
            2.0
        } else {
            strsim::normalized_damerau_levenshtein(&wrong.to_ascii_lowercase(), candidate)
        };
        if best.is_none_or(|(s, _)| score > s) {
            best = Some((score, candidate));
        }
    }
    best.filter(|(score, _)| *score >= 0.7)
        .map(|(_, name)| name)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAMES: [&str; 6] = [
        "file_write",
        "file_read",
        "file_delete",
        "file_move",
        "dir_create",
        "exec",
    ];

    #[test]
    fn suggests_reordered_synonyms_and_typos() {
        assert_eq!(closest("write_file", NAMES), Some("file_write"));
        assert_eq!(closest("create_file", NAMES), Some("file_write"));
        assert_eq!(closest("remove_file", NAMES), Some("file_delete"));
        assert_eq!(closest("file_wirte", NAMES), Some("file_write"));
        assert_eq!(closest("mkdir", NAMES), Some("dir_create"));
        assert_eq!(closest("Read_File", NAMES), Some("file_read"));
        assert_eq!(closest("launch_rocket", NAMES), None);
    }
}
