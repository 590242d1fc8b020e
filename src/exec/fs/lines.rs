//! Line-addressed actions: `file_read_numbered` (lines with their numbers, all or a range)
//! and `file_replace_lines` (a range replaced by new content), sharing the range syntax
//! `"4"` or `"23-43"` and the numbering also used to show the closest match of a failed
//! replace.

use serde_json::json;

use super::call::Call;
use super::text::{Eol, load};
use crate::exec::{Access, ActionOutcome};

/// An inclusive range of lines, from 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct LineRange {
    pub first: usize,
    pub last: usize,
}

impl LineRange {
    /// `"4"` or `"23-43"`; otherwise the seeds' message (without the action's name).
    pub fn parse(spec: &str) -> Result<LineRange, String> {
        let invalid = || format!("Invalid line specification '{spec}'");
        let number = |s: &str| -> Result<usize, String> {
            let s = s.trim();
            if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
                return Err(invalid());
            }
            match s.parse::<usize>() {
                Ok(n) if n >= 1 => Ok(n),
                _ => Err(invalid()),
            }
        };
        let (first, last) = match spec.split_once('-') {
            Some((a, b)) => (number(a)?, number(b)?),
            None => {
                let n = number(spec)?;
                (n, n)
            }
        };
        if first > last {
            return Err(format!(
                "Invalid line range '{spec}' (start must be <= end)"
            ));
        }
        Ok(LineRange { first, last })
    }
}

/// `lines` numbered from `first`: `<n><delimiter><line>` per line, the numbers right-aligned
/// to the widest one, joined by LF.
pub(super) fn numbered(first: usize, lines: &[&str], delimiter: &str) -> String {
    let width = (first + lines.len().saturating_sub(1)).to_string().len();
    let mut out = String::new();
    for (i, line) in lines.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&format!("{:>width$}{delimiter}{line}", first + i));
    }
    out
}

/// The lines of `text` without their line breaks.
fn lines_of(text: &str) -> Vec<&str> {
    text.split_inclusive('\n')
        .map(|l| {
            let l = l.strip_suffix('\n').unwrap_or(l);
            l.strip_suffix('\r').unwrap_or(l)
        })
        .collect()
}

/// `file_read_numbered`: data `{path, content}`, the requested lines numbered. A range past
/// the end fails, as in the seeds, but still returns the lines that exist. An empty file
/// read whole or from line 1 (`"1"`) is empty content, not a failure (slupe's case: a file
/// just created empty has nothing to number, and the model asked for nothing it lacks).
pub(super) fn file_read_numbered(call: &Call) -> Result<ActionOutcome, String> {
    let target = call.path("path", &[Access::Read])?;
    let spec = call.opt_line_spec("lines")?;
    let delimiter = call.opt_text("delimiter")?.unwrap_or(": ");
    let range = match spec.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(s) => Some(LineRange::parse(s).map_err(|e| call.fail(e))?),
    };
    let file = load(&target, call.ws.max_file_size).map_err(|e| e.for_action(call.action))?;
    let lines = lines_of(&file.text);
    let total = lines.len();
    let LineRange { first, last } = range.unwrap_or(LineRange {
        first: 1,
        last: total,
    });
    if total == 0 && first == 1 && last <= 1 {
        return Ok(ActionOutcome::ok(Some(
            json!({"path": target.user, "content": ""}),
        )));
    }
    let content = if first > total {
        String::new()
    } else {
        numbered(first, &lines[first - 1..last.min(total)], delimiter)
    };
    let data = json!({"path": target.user, "content": content});
    if last > total {
        return Ok(ActionOutcome {
            success: false,
            error: Some(call.fail(format!(
                "Requested lines {} but file only has {total} lines",
                spec.unwrap_or_default().trim()
            ))),
            data: Some(data),
        });
    }
    Ok(ActionOutcome::ok(Some(data)))
}

/// `file_replace_lines`: data `{path, lines_replaced}`. The new lines take the file's line
/// breaks; the last one ends with a break exactly when the last replaced line did.
pub(super) fn file_replace_lines(call: &Call) -> Result<ActionOutcome, String> {
    let target = call.path("path", &[Access::Read, Access::Write])?;
    let spec = call
        .opt_line_spec("lines")?
        .ok_or_else(|| call.fail("internal error: parameter 'lines' is missing"))?;
    let new_content = call.text("new_content")?;
    let range = LineRange::parse(spec.trim()).map_err(|e| call.fail(e))?;
    let file = load(&target, call.ws.max_file_size).map_err(|e| e.for_action(call.action))?;
    let segments: Vec<&str> = file.text.split_inclusive('\n').collect();
    if range.last > segments.len() {
        return Err(call.fail(format!(
            "Line range {} is out of bounds (file has {} lines)",
            spec.trim(),
            segments.len()
        )));
    }
    let replaced_last = segments[range.last - 1];
    let ending = if replaced_last.ends_with("\r\n") {
        "\r\n"
    } else if replaced_last.ends_with('\n') {
        "\n"
    } else {
        ""
    };
    let mut text = segments[..range.first - 1].concat();
    text.push_str(&Eol::Lf.apply(new_content).replace('\n', file.eol.as_str()));
    text.push_str(ending);
    text.push_str(&segments[range.last..].concat());
    let bytes = file.encode(&text);
    super::text::check_size(&target.user, bytes.len(), call.ws.max_file_size)
        .map_err(|e| e.for_action(call.action))?;
    super::text::store(&target, &bytes)?;
    Ok(ActionOutcome::ok(Some(json!({
        "path": target.user,
        "lines_replaced": range.last - range.first + 1,
    }))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_parse_like_the_seeds() {
        assert_eq!(LineRange::parse("4"), Ok(LineRange { first: 4, last: 4 }));
        assert_eq!(
            LineRange::parse("23-43"),
            Ok(LineRange {
                first: 23,
                last: 43
            })
        );
        for bad in ["", "0", "a", "1-", "-3", "1-2-3", "2.5", "0-4"] {
            assert_eq!(
                LineRange::parse(bad),
                Err(format!("Invalid line specification '{bad}'")),
                "{bad}"
            );
        }
        assert_eq!(
            LineRange::parse("9-3"),
            Err("Invalid line range '9-3' (start must be <= end)".to_owned())
        );
    }

    #[test]
    fn numbers_are_right_aligned() {
        assert_eq!(numbered(9, &["a", "b"], ": "), " 9: a\n10: b");
        assert_eq!(lines_of("a\r\nb\n\nc"), ["a", "b", "", "c"]);
    }
}
