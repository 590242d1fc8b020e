//! Squash's plan: select the run (first parents from HEAD; by default the git-loaf
//! applies; a merge, a commit that does not match or one older than the cutoff ends it) →
//! refuse fewer than two commits and already-pushed ones → the message listing the squashed
//! subjects and naming each apply (id and commit) in a trailer.

use std::time::{Duration, UNIX_EPOCH};

use super::{Picked, RunEnd, SQUASH_TRAILER, SQUASHED_TRAILER, SquashOptions, SquashPlan};
use crate::git::commit::parse_trailers;
use crate::git::push::{self, Upstream};
use crate::git::{Repository, refs, short_oid};
use crate::report::subject::fit_subject;
use crate::tx::commits::{self, CommitInfo};
use crate::tx::session::TxError;

/// How far `--limit` keeps counting the commits it left out.
const COUNT_LIMIT: usize = 10_000;

/// Selects the run, checks it may be squashed and writes the message.
pub(super) fn plan(
    repo: &Repository,
    options: &SquashOptions,
    id: &str,
) -> Result<SquashPlan, TxError> {
    let (ref_name, head) = refs::head_ref(repo)?;
    let Some(head) = head else {
        return Err(TxError::Invalid {
            message: "nothing to squash: this branch has no commits yet".into(),
            hint: "`git loaf apply` makes commits; squash folds several into one".into(),
        });
    };
    // Checked before anything changes: a squash that cannot be pushed is not made.
    let upstream = if options.push {
        Some(upstream_of(repo, &ref_name)?)
    } else {
        None
    };
    if options.limit.is_some_and(|n| n < 2) {
        return Err(TxError::Invalid {
            message: "--limit must be at least 2: squash folds two or more commits into one".into(),
            hint: "leave --limit out to take the whole run".into(),
        });
    }
    let (picked, more, end) = select(repo, options)?;
    if picked.len() < 2 {
        return Err(too_few(&picked, &end, options));
    }
    let oldest = picked.last().map(|p| p.commit).unwrap_or(head);
    let base = commits::read(repo, oldest)?.parent;
    if !options.force
        && !options.push
        && let Some((commit, remote)) = refs::first_pushed(repo, head, base)?
    {
        return Err(TxError::Refused {
            message: format!(
                "commit {} of the run to squash is already on {remote}: squashing rewrites published history",
                short_oid(commit)
            ),
            hint: "`git loaf squash --push` squashes and force-pushes with a lease (refused if anyone pushed since your last fetch); `--force` squashes locally anyway".into(),
        });
    }
    let mut picked = picked;
    picked.reverse();
    let files = crate::git::squash::files_changed(repo, base, head)?;
    let message = message(id, &picked, files, options.message.as_deref())?;
    Ok(SquashPlan {
        ref_name,
        head,
        base,
        picked,
        more,
        end,
        message,
        upstream,
    })
}

/// The run from HEAD, newest first; how many more beyond `--limit`; why it ended.
fn select(
    repo: &Repository,
    options: &SquashOptions,
) -> Result<(Vec<Picked>, usize, RunEnd), TxError> {
    let mut picked = Vec::new();
    let mut more = 0;
    let Some(chain) = commits::first_parents(repo)? else {
        return Ok((picked, more, RunEnd::Root));
    };
    let limit = options.limit.unwrap_or(usize::MAX);
    for commit in chain {
        let commit = commit?;
        let end = if crate::git::squash::is_merge(repo, commit.id)? {
            Some(RunEnd::Merge(commit.id))
        } else if options.after.is_some_and(|after| commit.time < after) {
            Some(RunEnd::TooOld(commit.id))
        } else if !matches(&commit, &options.containing)
            || !in_session(&commit, options.session.as_deref())
        {
            Some(RunEnd::NotMatching(commit.id, commit.summary.clone()))
        } else {
            None
        };
        if let Some(end) = end {
            let end = if more > 0 { RunEnd::Limit } else { end };
            return Ok((picked, more, end));
        }
        if picked.len() < limit {
            picked.push(Picked {
                commit: commit.id,
                subject: commit.summary.clone(),
                time: commit.time,
                loaf_id: loaf_id(&commit.message),
                message: commit.message,
            });
        } else {
            more += 1;
            if more >= COUNT_LIMIT {
                break;
            }
        }
    }
    let end = if more > 0 {
        RunEnd::Limit
    } else {
        RunEnd::Root
    };
    Ok((picked, more, end))
}

/// Whether `commit` belongs in the run: its message contains one of `containing`, or, when
/// none is given, it is a git-loaf apply (or an earlier squash of applies).
fn matches(commit: &CommitInfo, containing: &[String]) -> bool {
    if containing.is_empty() {
        loaf_id(&commit.message).is_some()
    } else {
        containing.iter().any(|text| commit.message.contains(text))
    }
}

/// Whether `commit` is a turn of `session` (every commit when no session is asked for).
fn in_session(commit: &CommitInfo, session: Option<&str>) -> bool {
    session.is_none_or(|session| {
        parse_trailers(&commit.message)
            .iter()
            .any(|(k, v)| k == crate::ops::record::SESSION_TRAILER && v == session)
    })
}

/// The `Loaf-Apply` or `Loaf-Squash` id of a message.
fn loaf_id(message: &str) -> Option<String> {
    parse_trailers(message)
        .into_iter()
        .find(|(k, _)| k == "Loaf-Apply" || k == SQUASH_TRAILER)
        .map(|(_, v)| v)
}

/// The refusal when the run holds fewer than two commits, saying why it ended there.
fn too_few(picked: &[Picked], end: &RunEnd, options: &SquashOptions) -> TxError {
    let found = match picked.len() {
        0 => "no commit".to_owned(),
        n => format!("only {n} commit"),
    };
    let what = if let Some(session) = &options.session {
        format!("turn of session {session}")
    } else if options.containing.is_empty() {
        "git-loaf apply".to_owned()
    } else {
        format!(
            "commit containing {}",
            options
                .containing
                .iter()
                .map(|t| format!("{t:?}"))
                .collect::<Vec<_>>()
                .join(" or ")
        )
    };
    let why = match end {
        RunEnd::NotMatching(commit, subject) => {
            format!("{} (\"{subject}\") is not a {what}", short_oid(*commit))
        }
        RunEnd::Merge(commit) => {
            format!(
                "{} is a merge commit, which ends the run",
                short_oid(*commit)
            )
        }
        RunEnd::TooOld(commit) => {
            format!("{} is older than the time asked for", short_oid(*commit))
        }
        RunEnd::Root | RunEnd::Limit => "the branch has no more commits".to_owned(),
    };
    TxError::Invalid {
        message: format!(
            "nothing to squash: {found} from HEAD in the run ({why}); squash needs at least two"
        ),
        hint: "`git loaf squash --containing TEXT` selects commits by their message (`--containing \"\"` takes every commit up to a merge); `--dry-run` shows the selection".into(),
    }
}

/// The upstream `--push` pushes to, or why there is none.
fn upstream_of(repo: &Repository, ref_name: &str) -> Result<Upstream, TxError> {
    let Some(branch) = ref_name.strip_prefix("refs/heads/") else {
        return Err(TxError::Invalid {
            message: "--push needs a branch, but HEAD is detached".into(),
            hint: "`git switch <branch>` first, or squash without --push".into(),
        });
    };
    push::upstream(repo, ref_name)?.ok_or_else(|| TxError::Invalid {
        message: format!("--push: branch {branch} has no upstream to push to; nothing was changed"),
        hint: format!(
            "set one (`git branch --set-upstream-to origin/{branch}`, or `git push -u origin {branch}` once), then run `git loaf squash --push` again"
        ),
    })
}

/// The squash commit's message: the generated subject (or the user's `-m`), the squashed
/// subjects one per line, then the trailers: `Loaf-Squash: <id>` and, for every apply
/// folded in (those of an earlier squash included), `Loaf-Squashed: <apply id> <commit>`.
/// The applies' results are not repeated here: the squash's note and report hold each
/// one's record ([`super::record_merged`]), as `git loaf show` prints them.
fn message(
    id: &str,
    picked: &[Picked],
    files: usize,
    custom: Option<&str>,
) -> Result<String, TxError> {
    let mut trailers = vec![(SQUASH_TRAILER.to_owned(), id.to_owned())];
    for p in picked {
        let pairs = parse_trailers(&p.message);
        if pairs.iter().any(|(k, _)| k == SQUASH_TRAILER) {
            // An earlier squash: keep the applies it names, not itself.
            trailers.extend(pairs.into_iter().filter(|(k, _)| k == SQUASHED_TRAILER));
        } else if let Some(apply) = pairs.iter().find(|(k, _)| k == "Loaf-Apply") {
            trailers.push((
                SQUASHED_TRAILER.to_owned(),
                format!("{} {}", apply.1, p.commit),
            ));
        }
    }
    // The models that wrote what is folded stay named, as trailers git reads (a lorch step
    // squashed from several turns, each `Assisted-by` its model); an `Assisted-by:` line in
    // the user's own message joins them there instead of standing in its body.
    let mut assisted: Vec<String> = Vec::new();
    for p in picked {
        for (key, value) in parse_trailers(&p.message) {
            if key == ASSISTED_BY && !assisted.contains(&value) {
                assisted.push(value);
            }
        }
    }
    let custom = custom.map(|text| {
        let prefix = format!("{ASSISTED_BY}:");
        let (named, rest): (Vec<&str>, Vec<&str>) =
            text.lines().partition(|l| l.starts_with(&prefix));
        for line in named {
            let value = line[prefix.len()..].trim().to_owned();
            if !value.is_empty() && !assisted.contains(&value) {
                assisted.push(value);
            }
        }
        rest.join("\n")
    });
    trailers.extend(assisted.into_iter().map(|v| (ASSISTED_BY.to_owned(), v)));
    let body = match custom.as_deref() {
        Some(text) if !text.trim().is_empty() => text.trim().to_owned(),
        Some(_) => {
            return Err(TxError::Invalid {
                message: "the message given with -m is empty".into(),
                hint: "give a message, or leave -m out for the generated one".into(),
            });
        }
        None => {
            let applies = trailers
                .iter()
                .filter(|(k, _)| k == SQUASHED_TRAILER)
                .count();
            let all_loaf = picked.iter().all(|p| p.loaf_id.is_some());
            // Recorded turns (record mode) are named as turns, not as applies.
            let turns = picked
                .iter()
                .filter(|p| {
                    parse_trailers(&p.message)
                        .iter()
                        .any(|(k, _)| k == crate::ops::record::SESSION_TRAILER)
                })
                .count();
            let counted = |n: usize, one: &str, many: &str| {
                format!("{n} {}", if n == 1 { one } else { many })
            };
            let what = if all_loaf && turns == applies {
                counted(turns, "turn", "turns")
            } else if all_loaf && turns > 0 {
                format!(
                    "{} and {}",
                    counted(applies - turns, "apply", "applies"),
                    counted(turns, "turn", "turns")
                )
            } else if all_loaf {
                format!("{applies} applies")
            } else {
                format!("{} commits", picked.len())
            };
            let range = date_range(picked);
            let plural = if files == 1 { "" } else { "s" };
            let mut text = fit_subject(&format!(
                "AI: squashed {what} ({range}): {files} file{plural} changed"
            ));
            text.push('\n');
            for p in picked {
                text.push_str(&format!("\n- {}", fit_subject(&p.subject)));
            }
            text
        }
    };
    let mut out = format!("{}\n\n", body.trim_end());
    for (key, value) in trailers {
        out.push_str(&format!("{key}: {}\n", value.replace(['\r', '\n'], " ")));
    }
    Ok(out)
}

/// The trailer naming the model that wrote a commit.
const ASSISTED_BY: &str = "Assisted-by";

/// `2026-01-01` or `2026-01-01 to 2026-01-03` (UTC).
pub(super) fn date_range(picked: &[Picked]) -> String {
    let day = |seconds: i64| {
        let time = UNIX_EPOCH + Duration::from_secs(seconds.max(0) as u64);
        humantime::format_rfc3339_seconds(time).to_string()[..10].to_owned()
    };
    let first = picked.iter().map(|p| p.time).min().unwrap_or(0);
    let last = picked.iter().map(|p| p.time).max().unwrap_or(0);
    let (first, last) = (day(first), day(last));
    if first == last {
        first
    } else {
        format!("{first} to {last}")
    }
}
