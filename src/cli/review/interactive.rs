//! `git loaf review` on a terminal: each hunk shown as `git add -p` shows it, then
//! `Keep this hunk [y,n,s,e,q,?]?` — keep, reject (with a one-line reason), split at the
//! context between changes, edit in the editor git would open, quit (the rest kept).
//! Coloured as the rest of git-loaf's output is (`NO_COLOR` turns it off); no pager: a long
//! hunk scrolls, as in `git add -p` (docs/review.md).

use std::io::{BufRead as _, Write as _};
use std::ops::Range;
use std::path::Path;

use crate::cli::CliError;
use crate::cli::style::{self, Stream};
use crate::ops::review::hunks::{self, Hunk, Line};
use crate::ops::review::{self, Listing, Verdict};

const HELP: &str = "y - keep this hunk
n - reject this hunk (you are asked why, in one line)
s - split this hunk into smaller ones, at the context lines between its changes
e - edit this hunk: what you leave is what is kept
q - quit: keep this hunk and every one after it
? - print this help
";

/// What the user said of one hunk or piece.
enum Answer {
    Keep,
    Reject(String),
    Split,
    Edit,
    Quit,
}

/// The terminal: what is typed, and where the hunks are shown.
struct Terminal {
    input: std::io::StdinLock<'static>,
    colour: bool,
}

impl Terminal {
    fn say(&self, text: &str) -> Result<(), CliError> {
        super::super::print_out(text)
    }

    /// One line typed after `prompt`; `None` at the end of input.
    fn ask(&mut self, prompt: &str) -> Result<Option<String>, CliError> {
        self.say(prompt)?;
        let _ = std::io::stdout().flush();
        let mut line = String::new();
        let read = self
            .input
            .read_line(&mut line)
            .map_err(|e| CliError::usage(format!("cannot read the answer: {e}"), "run it again"))?;
        Ok((read > 0).then(|| line.trim_end_matches(['\n', '\r']).to_owned()))
    }

    fn paint(&self, code: &str, text: &str) -> String {
        if self.colour {
            format!("\x1b[{code}m{text}\x1b[m")
        } else {
            text.to_owned()
        }
    }

    /// Lines as `git diff` colours them.
    fn show_lines(&self, lines: &[Line]) -> Result<(), CliError> {
        let mut out = String::new();
        for line in lines {
            let text = format!(
                "{}{}",
                line.origin,
                crate::report::inert::inert_bytes(&line.text).trim_end_matches('\n')
            );
            out.push_str(&match line.origin {
                '+' => self.paint("32", &text),
                '-' => self.paint("31", &text),
                _ => text,
            });
            out.push('\n');
        }
        self.say(&out)
    }

    fn show_header(&self, hunk: &Hunk) -> Result<(), CliError> {
        let file = self.paint("1", &format!("--- {}", hunk.shown_path()));
        let header = format!(
            "@@ -{},{} +{},{} @@",
            hunk.old_start, hunk.old_lines, hunk.new_start, hunk.new_lines
        );
        self.say(&format!("{file}\n{}\n", self.paint("36", &header)))
    }

    /// Asks until the answer is one of `choices` (a letter each).
    fn choose(&mut self, prompt: &str, choices: &str) -> Result<Answer, CliError> {
        loop {
            let question = self.paint("1;34", &format!("{prompt} [{}]? ", spaced(choices)));
            let Some(answer) = self.ask(&question)? else {
                return Ok(Answer::Quit);
            };
            let letter = answer.trim().chars().next().unwrap_or('?');
            if !choices.contains(letter) || letter == '?' {
                self.say(HELP)?;
                continue;
            }
            return Ok(match letter {
                'y' => Answer::Keep,
                'n' => {
                    let reason = self.ask("Why (one line, Enter for no reason)? ")?;
                    Answer::Reject(reason.unwrap_or_default())
                }
                's' => Answer::Split,
                'e' => Answer::Edit,
                _ => Answer::Quit,
            });
        }
    }
}

fn spaced(choices: &str) -> String {
    choices
        .chars()
        .map(String::from)
        .collect::<Vec<_>>()
        .join(",")
}

/// Walks the hunks of `listing`; the verdicts of the hunks not kept whole.
pub fn walk(cwd: &Path, listing: &Listing) -> Result<Vec<Verdict>, CliError> {
    let mut terminal = Terminal {
        input: std::io::stdin().lock(),
        // git's `color.interactive` / `color.ui` first, as `git add -p`; else the terminal.
        colour: crate::ops::review::git_colour(cwd)
            .unwrap_or_else(|| style::colour(Stream::Stdout)),
    };
    terminal.say(&format!(
        "Reviewing {} {} ({} hunks)\n",
        crate::git::short_oid(listing.commit),
        listing.subject,
        listing.hunks.len()
    ))?;
    let mut verdicts = Vec::new();
    let total = listing.hunks.len();
    for hunk in &listing.hunks {
        let whole = hunk.whole.is_some();
        let splittable = !whole && hunks::runs(&hunk.lines).len() > 1;
        let choices = match (whole, splittable) {
            (true, _) => "ynq?",
            (false, true) => "ynseq?",
            (false, false) => "yneq?",
        };
        loop {
            terminal.show_header(hunk)?;
            if whole {
                terminal.say(&hunk.shown())?;
            } else {
                terminal.show_lines(&hunk.lines)?;
            }
            let prompt = format!("({}/{total}) Keep this hunk", hunk.id);
            match terminal.choose(&prompt, choices)? {
                Answer::Keep => break,
                Answer::Reject(reason) => {
                    verdicts.push(Verdict {
                        hunk: hunk.id,
                        kept: None,
                        reason,
                    });
                    break;
                }
                Answer::Split => {
                    if let Some(verdict) = split(&mut terminal, hunk)? {
                        verdicts.push(verdict);
                    }
                    break;
                }
                Answer::Edit => match edit(&mut terminal, cwd, hunk)? {
                    Some(verdict) => {
                        verdicts.extend(verdict);
                        break;
                    }
                    None => continue,
                },
                Answer::Quit => return Ok(verdicts),
            }
        }
    }
    Ok(verdicts)
}

/// `s`: each run of changes asked on its own, shown with the context around it.
fn split(terminal: &mut Terminal, hunk: &Hunk) -> Result<Option<Verdict>, CliError> {
    let runs = hunks::runs(&hunk.lines);
    terminal.say(&format!("Split into {} hunks.\n", runs.len()))?;
    let mut rejected: Vec<Range<usize>> = Vec::new();
    let mut reasons = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        let from = if i == 0 { 0 } else { runs[i - 1].end };
        let to = runs.get(i + 1).map_or(hunk.lines.len(), |next| next.start);
        terminal.show_lines(&hunk.lines[from..to])?;
        let prompt = format!(
            "(part {}/{} of hunk {}) Keep this part",
            i + 1,
            runs.len(),
            hunk.id
        );
        match terminal.choose(&prompt, "ynq?")? {
            Answer::Reject(reason) => {
                rejected.push(run.clone());
                if !reason.trim().is_empty() {
                    reasons.push(reason);
                }
            }
            Answer::Quit => break,
            _ => {}
        }
    }
    Ok(verdict_of(hunk, &rejected, runs.len(), reasons.join("; ")))
}

fn verdict_of(
    hunk: &Hunk,
    rejected: &[Range<usize>],
    runs: usize,
    reason: String,
) -> Option<Verdict> {
    if rejected.is_empty() {
        return None;
    }
    let kept = (rejected.len() < runs).then(|| hunks::with_runs_rejected(&hunk.lines, rejected));
    Some(Verdict {
        hunk: hunk.id,
        kept,
        reason,
    })
}

/// `e`: the hunk in the editor; what the user leaves is what is kept. `None`: the edit did
/// not fit (asked again); `Some(None)`: kept as it was.
fn edit(
    terminal: &mut Terminal,
    cwd: &Path,
    hunk: &Hunk,
) -> Result<Option<Option<Verdict>>, CliError> {
    let cannot = |e: std::io::Error| {
        CliError::usage(
            format!("cannot edit the hunk: {e}"),
            "answer y or n instead",
        )
    };
    let mut file = tempfile::Builder::new()
        .prefix("loaf-review-")
        .suffix(".diff")
        .tempfile()
        .map_err(cannot)?;
    let mut text = hunk.patch_bytes(&hunk.lines, false);
    text.extend_from_slice(b"# Make a removed line ('-') a context line (' ') to keep it; delete an added line ('+')\n# to drop it. Lines starting with # are ignored. What you leave is what is kept.\n");
    file.write_all(&text).map_err(cannot)?;
    file.flush().map_err(cannot)?;
    let editor = review::editor(cwd);
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$@\""))
        .arg(&editor)
        .arg(file.path())
        .status()
        .map_err(cannot)?;
    if !status.success() {
        terminal.say(&format!(
            "The editor ({editor}) failed: the hunk is asked again.\n"
        ))?;
        return Ok(None);
    }
    let edited = std::fs::read(file.path()).map_err(cannot)?;
    let lines = hunks::parse_edited(&edited);
    if !hunks::fits(&hunk.lines, &lines) {
        terminal.say("The edited hunk no longer starts from the same lines (a context or removed line changed): asked again.\n")?;
        return Ok(None);
    }
    if lines == hunk.lines {
        return Ok(Some(None));
    }
    let reason = terminal
        .ask("Why (one line, Enter for no reason)? ")?
        .unwrap_or_default();
    Ok(Some(Some(Verdict {
        hunk: hunk.id,
        kept: Some(lines),
        reason,
    })))
}
