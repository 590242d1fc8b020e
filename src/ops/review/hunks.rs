//! The hunks a review walks (docs/review.md): an AI commit's change against its parent,
//! numbered `1`, `2`, … in diff order; which hunk `--reject PATH[:LINE]` or an id names;
//! splitting a hunk at the context between its changes (as `git add -p` does); and the file
//! a verdict leaves: the parent's version with the kept hunks laid on it.

use std::path::{Component, Path, PathBuf};

use serde::Serialize;

use crate::git::hunks::{Entry, FilePatch};
use crate::report::inert::{inert, inert_bytes};
use crate::tx::session::TxError;

/// A hunk that is a whole file: rejecting it restores the parent's entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Whole {
    /// The commit added the file.
    Added,
    /// The commit deleted the file.
    Deleted,
    /// Not text on one side (or a symbolic link, or a change of mode only).
    Binary,
}

/// One line of a hunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// `' '` context, `'-'` removed, `'+'` added.
    pub origin: char,
    /// Its bytes, with the line break (none on a last line without one).
    pub text: Vec<u8>,
}

/// One hunk of the commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// Its id, `1`, `2`, … in diff order.
    pub id: usize,
    /// The file.
    pub path: PathBuf,
    /// Set when the hunk is the whole file.
    pub whole: Option<Whole>,
    /// First line on the parent's side (1-based; 0 when that side is empty).
    pub old_start: u32,
    /// Lines on the parent's side.
    pub old_lines: u32,
    /// First line on the commit's side.
    pub new_start: u32,
    /// Lines on the commit's side.
    pub new_lines: u32,
    /// Its lines (empty for a binary file).
    pub lines: Vec<Line>,
    /// The file's entries in the parent and in the commit.
    pub entries: (Entry, Entry),
}

impl Hunk {
    /// Lines added and removed.
    pub fn counts(&self) -> (usize, usize) {
        let count = |o: char| self.lines.iter().filter(|l| l.origin == o).count();
        (count('+'), count('-'))
    }

    /// The commit's lines it spans, `START-END` (`START` for one line).
    pub fn span(&self) -> String {
        let end = self.new_start + self.new_lines.max(1) - 1;
        if end == self.new_start {
            self.new_start.to_string()
        } else {
            format!("{}-{end}", self.new_start)
        }
    }

    /// `@@ -a,b +c,d @@` and the lines, as `git diff` prints them, to read: control
    /// characters a reply wrote show escaped ([`inert_bytes`]), never act on a terminal.
    pub fn diff_text(&self, lines: &[Line]) -> String {
        String::from_utf8_lossy(&self.patch_bytes(lines, true)).into_owned()
    }

    /// The same as bytes, exactly as the lines hold them unless `escaped`: what the editor
    /// opens, so that the edit starts from the file's own bytes.
    pub fn patch_bytes(&self, lines: &[Line], escaped: bool) -> Vec<u8> {
        let mut out = format!(
            "@@ -{},{} +{},{} @@\n",
            self.old_start, self.old_lines, self.new_start, self.new_lines
        )
        .into_bytes();
        for line in lines {
            out.push(line.origin as u8);
            if escaped {
                out.extend_from_slice(inert_bytes(&line.text).as_bytes());
            } else {
                out.extend_from_slice(&line.text);
            }
            if !line.text.ends_with(b"\n") {
                out.extend_from_slice(b"\n\\ No newline at end of file\n");
            }
        }
        out
    }

    /// The path, control characters escaped.
    pub fn shown_path(&self) -> String {
        inert(&self.path.display().to_string()).into_owned()
    }

    /// The hunk as `git diff` prints it: binary and whole files say so.
    pub fn shown(&self) -> String {
        match self.whole {
            Some(Whole::Binary) => format!("Binary file {} changed\n", self.shown_path()),
            _ => self.diff_text(&self.lines),
        }
    }
}

/// The hunks of `files` (from [`crate::git::hunks::patches`]), numbered from 1.
pub fn number(files: Vec<FilePatch>) -> Vec<Hunk> {
    let mut hunks = Vec::new();
    for file in files {
        let lines_of = |raw: &crate::git::hunks::RawHunk| -> Vec<Line> {
            raw.lines
                .iter()
                .map(|(origin, text)| Line {
                    origin: *origin,
                    text: text.clone(),
                })
                .collect()
        };
        let entries = (file.old, file.new);
        let symlink = [file.old, file.new]
            .iter()
            .flatten()
            .any(|(_, mode)| *mode == 0o120000);
        let whole = if file.binary || symlink || file.hunks.is_empty() {
            Some(Whole::Binary)
        } else if file.old.is_none() {
            Some(Whole::Added)
        } else if file.new.is_none() {
            Some(Whole::Deleted)
        } else {
            None
        };
        if whole.is_some() {
            let raw = file.hunks.first();
            hunks.push(Hunk {
                id: hunks.len() + 1,
                path: file.path.clone(),
                whole,
                old_start: raw.map_or(0, |h| h.old_start),
                old_lines: raw.map_or(0, |h| h.old_lines),
                new_start: raw.map_or(0, |h| h.new_start),
                new_lines: raw.map_or(0, |h| h.new_lines),
                lines: if whole == Some(Whole::Binary) {
                    Vec::new()
                } else {
                    file.hunks.iter().flat_map(lines_of).collect()
                },
                entries,
            });
            continue;
        }
        for raw in &file.hunks {
            hunks.push(Hunk {
                id: hunks.len() + 1,
                path: file.path.clone(),
                whole: None,
                old_start: raw.old_start,
                old_lines: raw.old_lines,
                new_start: raw.new_start,
                new_lines: raw.new_lines,
                lines: lines_of(raw),
                entries,
            });
        }
    }
    hunks
}

/// What names hunks to reject: an id, or `PATH[:LINE]` (relative to `cwd`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pick {
    /// A hunk id as `--list` shows it.
    Id(usize),
    /// The hunk of PATH whose commit side holds LINE; every hunk of PATH without one.
    Path(String, Option<u32>),
}

impl Pick {
    /// `2`, `src/a.rs`, `src/a.rs:12`. A path that is all digits reads as an id (write
    /// `./12` for the file).
    pub fn parse(text: &str) -> Pick {
        if let Ok(id) = text.parse::<usize>() {
            return Pick::Id(id);
        }
        match text.rsplit_once(':') {
            Some((path, line)) if !path.is_empty() => match line.parse::<u32>() {
                Ok(line) => Pick::Path(path.to_owned(), Some(line)),
                Err(_) => Pick::Path(text.to_owned(), None),
            },
            _ => Pick::Path(text.to_owned(), None),
        }
    }
}

/// The ids of the hunks `picks` name (in id order, each once), `cwd_in_repo` being where the
/// command runs, relative to the root. A path outside the repository, a path without a
/// hunk, a line no hunk holds or an unknown id is an error that says what there is.
pub fn picked(hunks: &[Hunk], picks: &[Pick], cwd_in_repo: &Path) -> Result<Vec<usize>, TxError> {
    let listed = "`git loaf review --list` shows the hunks with their ids and lines";
    let mut ids = Vec::new();
    for pick in picks {
        match pick {
            Pick::Id(id) => {
                if !hunks.iter().any(|h| h.id == *id) {
                    return Err(TxError::Invalid {
                        message: format!(
                            "there is no hunk {id}: the commit has {} (ids 1 to {})",
                            hunks.len(),
                            hunks.len()
                        ),
                        hint: listed.into(),
                    });
                }
                ids.push(*id);
            }
            Pick::Path(text, line) => {
                let path = inside(cwd_in_repo, text).ok_or_else(|| TxError::Invalid {
                    message: format!("{text} is outside the repository"),
                    hint: "name a file the commit changed, relative to the current folder".into(),
                })?;
                let of_file: Vec<&Hunk> = hunks.iter().filter(|h| h.path == path).collect();
                if of_file.is_empty() {
                    return Err(TxError::Invalid {
                        message: format!(
                            "the commit does not change {}",
                            inert(&path.display().to_string())
                        ),
                        hint: listed.into(),
                    });
                }
                match line {
                    None => ids.extend(of_file.iter().map(|h| h.id)),
                    Some(line) => ids.push(at_line(&of_file, &path, *line)?),
                }
            }
        }
    }
    ids.sort_unstable();
    ids.dedup();
    Ok(ids)
}

/// The hunk of one file whose commit side holds `line`.
fn at_line(of_file: &[&Hunk], path: &Path, line: u32) -> Result<usize, TxError> {
    if let Some(hunk) = of_file.iter().find(|h| {
        h.whole != Some(Whole::Deleted)
            && h.new_start <= line
            && line < h.new_start + h.new_lines.max(1)
    }) {
        return Ok(hunk.id);
    }
    let spans: Vec<String> = of_file
        .iter()
        .map(|h| match h.whole {
            Some(Whole::Deleted) => "the whole file (deleted: name it without a line)".into(),
            Some(Whole::Binary) => "the whole file (not text)".into(),
            _ => format!("lines {}", h.span()),
        })
        .collect();
    Err(TxError::Invalid {
        message: format!(
            "no hunk of {} holds line {line}: its hunks hold {}",
            inert(&path.display().to_string()),
            spans.join(", ")
        ),
        hint: "give a line inside a hunk, or the path alone for all its hunks".into(),
    })
}

/// `text` (relative to `cwd_in_repo`, or absolute… which is never inside: the caller makes
/// absolute paths relative first) as a path relative to the root, `..` resolved by its
/// words; `None` when it leaves the repository.
fn inside(cwd_in_repo: &Path, text: &str) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for component in cwd_in_repo.join(text).components() {
        match component {
            Component::Normal(part) => out.push(part),
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    (!out.as_os_str().is_empty()).then_some(out)
}

/// The hunk's lines with every change undone: removed lines kept, added ones dropped.
pub fn rejected_lines(lines: &[Line]) -> Vec<Line> {
    lines
        .iter()
        .filter(|l| l.origin != '+')
        .map(|l| Line {
            origin: ' ',
            text: l.text.clone(),
        })
        .collect()
}

/// The runs of changes of a hunk that context lines separate (git's rule for `s`): each as
/// the range of its lines, context excluded. One run: it cannot be split.
pub fn runs(lines: &[Line]) -> Vec<std::ops::Range<usize>> {
    let mut runs = Vec::new();
    let mut start = None;
    for (i, line) in lines.iter().enumerate() {
        match (line.origin == ' ', start) {
            (false, None) => start = Some(i),
            (true, Some(s)) => {
                runs.push(s..i);
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        runs.push(s..lines.len());
    }
    runs
}

/// The hunk's lines with the runs marked in `rejected` undone.
pub fn with_runs_rejected(lines: &[Line], rejected: &[std::ops::Range<usize>]) -> Vec<Line> {
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if rejected.iter().any(|r| r.contains(&i)) {
            out.extend(rejected_lines(std::slice::from_ref(line)));
        } else {
            out.push(line.clone());
        }
    }
    out
}

/// The parent's side of lines: context and removed lines.
fn old_side(lines: &[Line]) -> Vec<&[u8]> {
    lines
        .iter()
        .filter(|l| l.origin != '+')
        .map(|l| l.text.as_slice())
        .collect()
}

/// Whether `edited` (a hunk as the user edited it) still starts from the parent's lines of
/// `original`: only then can it take the hunk's place.
pub fn fits(original: &[Line], edited: &[Line]) -> bool {
    old_side(original) == old_side(edited)
}

/// The file `old` with each hunk replaced by its lines as kept: `hunks` are the file's
/// hunks in order, each with the lines to lay (its own when kept, [`rejected_lines`] when
/// rejected, an edit or a split in between).
pub fn kept_content(old: &[u8], hunks: &[(&Hunk, &[Line])]) -> Vec<u8> {
    let old_lines: Vec<&[u8]> = old.split_inclusive(|b| *b == b'\n').collect();
    let mut out = Vec::with_capacity(old.len());
    let mut cursor = 0usize;
    for (hunk, lines) in hunks {
        // An empty parent side starts "after line 0".
        let start = if hunk.old_lines == 0 {
            hunk.old_start as usize
        } else {
            hunk.old_start.saturating_sub(1) as usize
        };
        let start = start.min(old_lines.len());
        for line in old_lines.get(cursor..start).unwrap_or_default() {
            out.extend_from_slice(line);
        }
        cursor = cursor.max(start);
        for line in *lines {
            match line.origin {
                ' ' => {
                    out.extend_from_slice(&line.text);
                    cursor += 1;
                }
                '-' => cursor += 1,
                _ => out.extend_from_slice(&line.text),
            }
        }
    }
    for line in old_lines.get(cursor..).unwrap_or_default() {
        out.extend_from_slice(line);
    }
    out
}

/// A hunk as the user edited it (`git add -p`'s `e`): lines starting with `' '`, `'-'` or
/// `'+'`; `#` comment lines and the `@@` header are dropped; an empty line is an empty
/// context line; `\ No newline at end of file` takes the line break off the line before.
pub fn parse_edited(text: &[u8]) -> Vec<Line> {
    let mut lines: Vec<Line> = Vec::new();
    for raw in text.split_inclusive(|b| *b == b'\n') {
        let (origin, rest) = match raw.first() {
            Some(b'\\') => {
                if let Some(last) = lines.last_mut()
                    && last.text.ends_with(b"\n")
                {
                    last.text.pop();
                }
                continue;
            }
            Some(c @ (b' ' | b'-' | b'+')) => (*c as char, &raw[1..]),
            Some(b'\n') => (' ', raw),
            _ => continue,
        };
        lines.push(Line {
            origin,
            text: rest.to_vec(),
        });
    }
    lines
}

#[cfg(test)]
mod tests;
