//! "Did you mean …?": the known name closest to what a model wrote.
//!
//! Models rarely misspell an action letter by letter; they write it in another convention:
//! verb first (`append_text_to_file`), camelCase (`appendToFile`), with their own verbs
//! (`add_to_file`, `list_dir`). So names are compared as sets of words first, synonyms mapped
//! to the schema's words and filler words dropped; plain edit distance is the fallback for
//! real typos (`file_wirte`).

/// Words models use for the same thing, mapped to the schema's word.
const SYNONYMS: &[(&str, &str)] = &[
    ("create", "write"),
    ("save", "write"),
    ("put", "write"),
    ("make", "create"),
    ("remove", "delete"),
    ("rm", "delete"),
    ("del", "delete"),
    ("unlink", "delete"),
    ("rename", "move"),
    ("mv", "move"),
    ("add", "append"),
    ("edit", "replace"),
    ("update", "replace"),
    ("modify", "replace"),
    ("substitute", "replace"),
    ("cat", "read"),
    ("view", "read"),
    ("show", "read"),
    ("open", "read"),
    ("list", "ls"),
    ("search", "grep"),
    ("find", "glob"),
    ("mkdir", "dir_create"),
    ("rmdir", "dir_delete"),
    ("folder", "dir"),
    ("directory", "dir"),
    ("run", "exec"),
    ("execute", "exec"),
];

/// Words that say nothing about which action is meant (`append_to_file`).
const FILLER: &[&str] = &[
    "to", "in", "into", "a", "an", "the", "of", "from", "at", "on", "by",
];

/// Words that name what an action works on rather than what it does: sharing only these
/// (`file_frobnicate` and `file_read` share `file`) is no sign of the same intent.
const NOUNS: &[&str] = &["file", "files", "dir", "text", "content", "path", "paths"];

/// The words of a name, lowercased, camelCase split, synonyms replaced by the schema's words,
/// filler dropped, sorted.
fn words(name: &str) -> Vec<String> {
    fn canonical(word: &str) -> Vec<String> {
        match SYNONYMS.iter().find(|(from, _)| *from == word) {
            // A synonym can expand to several words that are synonyms themselves
            // (`mkdir` → `dir_create` → `dir`, `write`).
            Some((_, to)) => to.split('_').flat_map(canonical).collect(),
            None => vec![word.to_owned()],
        }
    }
    let mut split = String::with_capacity(name.len() + 4);
    let mut previous_lower = false;
    for c in name.chars() {
        if c.is_ascii_uppercase() && previous_lower {
            split.push('_');
        }
        previous_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        split.push(c.to_ascii_lowercase());
    }
    let mut words: Vec<String> = split
        .split(['_', '-', ' ', '.'])
        .filter(|w| !w.is_empty() && !FILLER.contains(w))
        .flat_map(canonical)
        .collect();
    words.sort();
    words
}

/// How much of the two word lists is shared (Jaccard index of the sets), or 0 when what is
/// shared is only nouns.
fn word_overlap(a: &[String], b: &[String]) -> f64 {
    let shared: Vec<&String> = a.iter().filter(|w| b.contains(w)).collect();
    if shared.iter().all(|w| NOUNS.contains(&w.as_str())) {
        return 0.0;
    }
    let mut union: Vec<&String> = a.iter().chain(b).collect();
    union.sort();
    union.dedup();
    let mut shared = shared;
    shared.dedup();
    shared.len() as f64 / union.len() as f64
}

/// The candidate closest to `wrong`, if one is close enough to be a plausible intent: the
/// same words in another order or convention (`write_file`, `appendToFile` → `file_append`),
/// synonyms (`create_file`), most of the words (`append_text_to_file` → `file_append`), or a
/// small edit distance (`file_wirte`). Ties go to the earlier candidate.
pub fn closest<'a>(wrong: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let wrong_words = words(wrong);
    let wrong_lower = wrong.to_ascii_lowercase();
    let mut best: Option<(f64, &str)> = None;
    for candidate in candidates {
        let candidate_words = words(candidate);
        let score = if candidate_words == wrong_words {
            2.0
        } else {
            let overlap = word_overlap(&wrong_words, &candidate_words);
            let typo = strsim::normalized_damerau_levenshtein(&wrong_lower, candidate);
            let overlap = if overlap >= 0.5 { overlap } else { 0.0 };
            let typo = if typo >= 0.7 { typo } else { 0.0 };
            overlap.max(typo)
        };
        if score > 0.0 && best.is_none_or(|(s, _)| score > s) {
            best = Some((score, candidate));
        }
    }
    best.map(|(_, name)| name)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAMES: [&str; 10] = [
        "file_write",
        "file_replace_text",
        "file_append",
        "file_read",
        "file_read_numbered",
        "file_delete",
        "file_move",
        "dir_create",
        "ls",
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

    #[test]
    fn suggests_by_words_in_any_convention() {
        assert_eq!(closest("append_to_file", NAMES), Some("file_append"));
        assert_eq!(closest("appendToFile", NAMES), Some("file_append"));
        assert_eq!(closest("add_to_file", NAMES), Some("file_append"));
        assert_eq!(closest("append_text_to_file", NAMES), Some("file_append"));
        assert_eq!(closest("replace_in_file", NAMES), Some("file_replace_text"));
        assert_eq!(closest("read_numbered", NAMES), Some("file_read_numbered"));
        assert_eq!(closest("list_directory", NAMES), Some("ls"));
        assert_eq!(closest("run_code", NAMES), Some("exec"));
        assert_eq!(
            closest("oldText", ["old_text", "new_text"]),
            Some("old_text")
        );
        assert_eq!(
            closest("continue_on_error", ["run", "continueOnError", "timeout"]),
            Some("continueOnError")
        );
    }

    #[test]
    fn sharing_only_a_noun_is_no_match() {
        assert_eq!(closest("file_frobnicate", NAMES), None);
        assert_eq!(closest("dir_sync", NAMES), None);
    }
}
