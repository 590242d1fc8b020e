//! Where text the model expected is most nearly found: the window of lines most similar to
//! it, shown with line numbers in a not-found message so the model can copy the real text.
//!
//! Similarity is per line (the Sørensen–Dice coefficient of character bigrams, whitespace
//! ignored, as `strsim::sorensen_dice` computes it, but with each line's bigrams built once
//! rather than per comparison), averaged over the lines of the expected text; the window
//! slides over the file one line at a time. Each distinct file line is compared once per
//! expected line, and on very large files only the longest expected lines are compared, so
//! a miss stays cheap.

use std::collections::HashMap;

use super::lines::numbered;
use super::text::Eol;

/// Below this average similarity, nothing in the file is worth showing.
const MIN_SIMILARITY: f64 = 0.4;
/// Comparisons (expected lines × distinct file lines) spent at most.
const BUDGET: usize = 200_000;
/// Lines of the closest region shown at most.
const MAX_SHOWN: usize = 8;
/// Characters of a shown line at most.
const MAX_LINE_CHARS: usize = 160;

/// The best window found.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Closest {
    /// Its first line, from 1.
    pub first: usize,
    /// Its last line.
    pub last: usize,
    /// Average line similarity, 0 to 1.
    pub score: f64,
    /// Whether it equals the wanted text once all whitespace is removed.
    pub whitespace_only: bool,
}

/// The lines of `text` (line breaks and a final empty piece dropped).
fn file_lines(text: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = text
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    if text.ends_with('\n') || text.is_empty() {
        lines.pop();
    }
    lines
}

/// The window of `text`'s lines, from line `from` (1-based) on, most similar to `wanted`.
pub(super) fn find(text: &str, wanted: &str, from: usize) -> Option<Closest> {
    let lines = file_lines(text);
    let wanted_text = Eol::Lf.apply(wanted);
    let wanted: Vec<&str> = wanted_text.split('\n').map(str::trim).collect();
    let first_content = wanted.iter().position(|l| !l.is_empty())?;
    let last_content = wanted.iter().rposition(|l| !l.is_empty())?;
    let wanted = &wanted[first_content..=last_content];
    let start = from.saturating_sub(1);
    if start >= lines.len() {
        return None;
    }

    let mut ids: HashMap<&str, usize> = HashMap::new();
    let line_ids: Vec<usize> = lines[start..]
        .iter()
        .map(|l| {
            let next = ids.len();
            *ids.entry(l.trim()).or_insert(next)
        })
        .collect();
    let mut distinct = vec![""; ids.len()];
    for (line, &id) in &ids {
        distinct[id] = line;
    }

    let compared = compared_lines(wanted, distinct.len());
    let wanted_bigrams: Vec<Bigrams> = compared.iter().map(|&i| Bigrams::of(wanted[i])).collect();
    // similarity[k][id]: compared line k against distinct file line id. Each file line's
    // bigrams are built once and dropped, so memory stays at the size of this table.
    let mut similarity = vec![vec![0.0f32; distinct.len()]; compared.len()];
    for (id, line) in distinct.iter().enumerate() {
        let line = Bigrams::of(line);
        for (k, wanted) in wanted_bigrams.iter().enumerate() {
            similarity[k][id] = wanted.similarity(&line);
        }
    }

    let windows = line_ids.len().saturating_sub(wanted.len()) + 1;
    let mut best: Option<(usize, f64)> = None;
    for w in 0..windows {
        let total: f64 = compared
            .iter()
            .zip(&similarity)
            .map(|(&i, row)| line_ids.get(w + i).map_or(0.0, |&id| f64::from(row[id])))
            .sum();
        let score = total / compared.len() as f64;
        if best.is_none_or(|(_, b)| score > b) {
            best = Some((w, score));
        }
    }
    let (w, score) = best?;
    if score < MIN_SIMILARITY {
        return None;
    }
    let first = start + w + 1;
    let last = (first + wanted.len() - 1).min(lines.len());
    let squeeze = |s: &str| s.split_whitespace().collect::<String>();
    let whitespace_only =
        squeeze(&lines[first - 1..last].join("\n")) == squeeze(&wanted.join("\n"));
    Some(Closest {
        first,
        last,
        score,
        whitespace_only,
    })
}

/// The expected lines compared against each of `distinct` file lines: non-blank ones,
/// longest first, as many as the budget of comparisons allows (at least one).
fn compared_lines(wanted: &[&str], distinct: usize) -> Vec<usize> {
    let mut compared: Vec<usize> = (0..wanted.len())
        .filter(|&i| !wanted[i].is_empty())
        .collect();
    compared.sort_by_key(|&i| std::cmp::Reverse(wanted[i].len()));
    compared.truncate((BUDGET / distinct.max(1)).max(1));
    compared
}

/// A line reduced for comparison: its characters without whitespace, and their adjacent
/// pairs sorted, so two lines compare by one merge and no allocation.
struct Bigrams {
    squeezed: Vec<char>,
    pairs: Vec<u64>,
}

impl Bigrams {
    fn of(line: &str) -> Bigrams {
        let squeezed: Vec<char> = line.chars().filter(|c| !c.is_whitespace()).collect();
        let mut pairs: Vec<u64> = squeezed
            .windows(2)
            .map(|w| (u64::from(w[0]) << 32) | u64::from(w[1]))
            .collect();
        pairs.sort_unstable();
        Bigrams { squeezed, pairs }
    }

    /// Sørensen–Dice coefficient of the two bigram multisets: 1 for equal lines, 0 for
    /// nothing in common.
    fn similarity(&self, other: &Bigrams) -> f32 {
        if self.squeezed == other.squeezed {
            return 1.0;
        }
        if self.pairs.is_empty() || other.pairs.is_empty() {
            return 0.0;
        }
        let (mut i, mut j, mut common) = (0, 0, 0usize);
        while i < self.pairs.len() && j < other.pairs.len() {
            match self.pairs[i].cmp(&other.pairs[j]) {
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => j += 1,
                std::cmp::Ordering::Equal => {
                    common += 1;
                    i += 1;
                    j += 1;
                }
            }
        }
        (2 * common) as f32 / (self.pairs.len() + other.pairs.len()) as f32
    }
}

/// What to add to a not-found message: the closest region of `text` (from line `from`)
/// to `wanted`, with line numbers, or why there is none.
pub(super) fn describe(text: &str, wanted: &str, from: usize) -> String {
    let Some(found) = find(text, wanted, from) else {
        return if text.is_empty() {
            " (the file is empty)".to_owned()
        } else {
            " (no similar lines in the file)".to_owned()
        };
    };
    let lines = file_lines(text);
    let span = if found.first == found.last {
        format!("line {}", found.first)
    } else {
        format!("lines {}-{}", found.first, found.last)
    };
    let head = if found.whitespace_only {
        let (verb, pronoun) = if found.first == found.last {
            ("differs", "it")
        } else {
            ("differ", "them")
        };
        format!(
            "; {span} {verb} from it only in whitespace (indentation, spaces or line breaks), copy {pronoun} exactly"
        )
    } else {
        format!(
            "; closest match at {span} ({}% similar)",
            (found.score * 100.0).round() as u32
        )
    };
    let shown_last = found.last.min(found.first + MAX_SHOWN - 1);
    let shown: Vec<String> = lines[found.first - 1..shown_last]
        .iter()
        .map(|l| shorten(l))
        .collect();
    let shown: Vec<&str> = shown.iter().map(String::as_str).collect();
    let mut message = format!("{head}:\n{}", numbered(found.first, &shown, ": "));
    if shown_last < found.last {
        message.push_str(&format!("\n... ({} more lines)", found.last - shown_last));
    }
    message
}

fn shorten(line: &str) -> String {
    match line.char_indices().nth(MAX_LINE_CHARS) {
        Some((cut, _)) => format!("{}...", &line[..cut]),
        None => line.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "use std::io;\n\nfn main() {\n    let name = \"world\";\n    println!(\"hello {name}\");\n}\n\nfn other() {}\n";

    #[test]
    fn finds_the_window_most_like_the_wanted_lines() {
        let found = find(FILE, "let name = \"wrld\";\nprintln!(\"hello {name}\");", 1).unwrap();
        assert_eq!((found.first, found.last), (4, 5));
        assert!(!found.whitespace_only);
    }

    #[test]
    fn notices_a_whitespace_only_difference() {
        let found = find(FILE, "fn main() {\n  let name = \"world\";", 1).unwrap();
        assert_eq!(
            (found.first, found.last, found.whitespace_only),
            (3, 4, true)
        );
    }

    #[test]
    fn shows_nothing_when_nothing_is_similar() {
        assert_eq!(find(FILE, "SELECT * FROM users WHERE id = 7", 1), None);
        assert_eq!(describe("", "x", 1), " (the file is empty)");
    }

    #[test]
    fn similarity_is_the_dice_coefficient_of_bigrams() {
        let sim = |a: &str, b: &str| Bigrams::of(a).similarity(&Bigrams::of(b));
        assert_eq!(sim("a b", "ab"), 1.0);
        assert_eq!(sim("}", "}"), 1.0);
        assert_eq!(sim("}", "{"), 0.0);
        // night: ni ig gh ht; nacht: na ac ch ht; one pair in common of eight.
        assert_eq!(sim("night", "nacht"), 0.25);
    }

    #[test]
    fn a_miss_in_a_large_file_is_found_within_the_budget_of_comparisons() {
        let text: String = (0..100_000)
            .map(|i| {
                format!(
                    "    let value_{i} = compute(alpha_{}, beta_{});\n",
                    i % 997,
                    i % 313
                )
            })
            .collect();
        let wanted: String = (0..20)
            .map(|i| format!("    let valu_{i} = compute(alpha, beta_{i});\n"))
            .collect();
        let found = find(&text, &wanted, 1).expect("similar lines");
        assert_eq!(found.first, 1);
        // The cost is bounded by counting, not timing: the table of comparisons stays
        // within the budget however many distinct lines the file has.
        let wanted: Vec<&str> = wanted.lines().collect();
        for distinct in [10, 1_000, 100_000, 10_000_000] {
            let compared = compared_lines(&wanted, distinct).len();
            assert!(compared >= 1);
            assert!(
                compared * distinct <= BUDGET.max(distinct),
                "{compared} lines against {distinct}"
            );
        }
    }

    #[test]
    fn searches_only_from_the_given_line() {
        let found = find(FILE, "fn other() {}", 7).unwrap();
        assert_eq!(found.first, 8);
        assert_eq!(find(FILE, "use std::io;", 3).map(|f| f.first), None);
    }
}
