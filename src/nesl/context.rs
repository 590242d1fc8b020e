//! The context window shown with every syntax error: five lines centred on the error, shifted
//! to stay inside the input (the whole input when it has five lines or fewer).
//!
//! The window is cut from the input split on `\n` alone, so a CRLF input keeps its `\r`s here
//! although the error's own `content` line has none: the reference does the same.

/// Lines in a context window.
pub(crate) const CONTEXT_LINES: usize = 5;

/// 0-based first and last line of the window around 1-based `target_line`, in an input of
/// `total` lines.
pub(crate) fn window(total: usize, target_line: usize) -> (usize, usize) {
    if total <= CONTEXT_LINES {
        return (0, total.saturating_sub(1));
    }
    let half = (CONTEXT_LINES / 2) as isize;
    let total = total as isize;
    let target = target_line as isize - 1;
    let (mut start, mut end) = (target - half, target + half);
    if start < 0 {
        end -= start;
        start = 0;
    } else if end >= total {
        start -= end - total + 1;
        end = total - 1;
    }
    (start.max(0) as usize, end.min(total - 1) as usize)
}

/// Start offsets of the `\n`-separated lines of an input, built on the first error only.
#[derive(Debug)]
pub(crate) struct LineIndex<'a> {
    content: &'a str,
    starts: Vec<usize>,
}

impl<'a> LineIndex<'a> {
    /// Indexes `content`.
    pub fn new(content: &'a str) -> Self {
        let starts = std::iter::once(0)
            .chain(content.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        LineIndex { content, starts }
    }

    /// The context window around 1-based `target_line`.
    pub fn context(&self, target_line: usize) -> &'a str {
        let (first, last) = window(self.starts.len(), target_line);
        let end = match self.starts.get(last + 1) {
            Some(next) => next - 1,
            None => self.content.len(),
        };
        &self.content[self.starts[first]..end]
    }
}

/// The context window around 1-based `target_line` of `content`.
pub fn context_window(content: &str, target_line: usize) -> String {
    LineIndex::new(content).context(target_line).to_owned()
}
