//! What `log` and `show` answer, whichever front door asked (docs/history.md): one line per
//! git-loaf commit, or the report an apply recorded, each with its JSON form.

use std::path::Path;

use super::Shown;
use crate::notice::{Notice, NoticeKind};
use crate::ops::{OpError, Outcome, Response};

/// The newest `max_count` applies on the branch of the repository containing `cwd`.
pub fn respond_log(cwd: &Path, max_count: usize) -> Result<Response, OpError> {
    let entries = super::log(cwd, max_count)?;
    let mut out = String::new();
    for e in &entries {
        let counts = match (e.kind, e.folded) {
            ("kept", _) => format!("NOT APPLIED (git loaf take {0} | git loaf drop {0})", e.id),
            // A recorded turn ran no actions: counting them would say nothing.
            ("turn", _) => "turn".to_owned(),
            (_, Some(folded)) => folded_words(folded, e.succeeded, e.failed),
            _ => format!("✅{} ❌{}", e.succeeded, e.failed),
        };
        out.push_str(&format!(
            "{} {} {} {counts} {}\n",
            crate::git::short_id(&e.commit),
            e.id,
            e.time,
            e.summary
        ));
    }
    let mut response = Response::text(out, Outcome::Success).with_json(&entries);
    // `-n 0` asks for nothing; only an unlimited look that found nothing means "none".
    if entries.is_empty() && max_count > 0 {
        response.notices.push(Notice::new(
            NoticeKind::Empty,
            "no git-loaf commits on this branch (`git loaf apply` makes them)",
        ));
    }
    Ok(response)
}

/// A squash as what it folded in: `squash of 2 applies ✅5 ❌1`, `squash of 3 turns`,
/// `squash of 1 apply ✅2 ❌0 and 2 turns` (turns have no ✅/❌ counts).
fn folded_words(folded: super::Folded, succeeded: usize, failed: usize) -> String {
    let count =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let applies = (folded.applies > 0).then(|| {
        format!(
            "{} ✅{succeeded} ❌{failed}",
            count(folded.applies, "apply", "applies")
        )
    });
    let turns = (folded.turns > 0).then(|| count(folded.turns, "turn", "turns"));
    match (applies, turns) {
        (Some(applies), Some(turns)) => format!("squash of {applies} and {turns}"),
        (Some(one), None) | (None, Some(one)) => format!("squash of {one}"),
        (None, None) => format!("squash ✅{succeeded} ❌{failed}"),
    }
}

/// What the apply at `rev` (default HEAD) recorded, in the repository containing `cwd`.
pub fn respond_show(cwd: &Path, rev: Option<&str>) -> Result<Response, OpError> {
    let shown = super::show(cwd, rev)?;
    let (text, result, notice) = match shown {
        Shown::Full {
            text,
            result,
            notice,
        } => (text, result, notice),
        Shown::TrailerOnly { commit, result } => {
            let json = pretty(&result);
            (
                json,
                result,
                Some(Notice::new(
                    NoticeKind::Record,
                    format!(
                        "the full record of {commit} is not here (fetch it: `git fetch origin refs/notes/loaf:refs/notes/loaf`); showing the commit's Loaf-Result trailer, in which file contents and outputs are hashes"
                    ),
                )),
            )
        }
    };
    Ok(Response::text(text, Outcome::Success)
        .with_json(&result)
        .with_notices(notice.into_iter().collect()))
}

fn pretty(value: &impl serde::Serialize) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default() + "\n"
}
