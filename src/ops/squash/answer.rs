//! What `squash` answers, whichever front door asked (docs/history.md): the request (dates
//! and spans turned into one cutoff), what was or would be folded, the message, and a push
//! that failed after the squash as an error that leaves the squash standing.

use std::path::Path;

use super::{RunEnd, SquashOptions, Squashed};
use crate::git::push::PushError;
use crate::git::short_oid;
use crate::git::sign::SignRequest;
use crate::ops::undo::display_ref;
use crate::ops::{OpError, Outcome, Response};

/// What `squash` is asked, whichever front door asked.
#[derive(Debug, Clone, Default)]
pub struct SquashRequest {
    /// Select commits whose message contains any of these texts instead of the applies.
    pub containing: Vec<String>,
    /// Only the turns record mode committed for this session.
    pub session: Option<String>,
    /// Only commits made at or after this date, as the user wrote it.
    pub after: Option<String>,
    /// Only commits of the last N hours.
    pub hours: Option<u64>,
    /// Only commits of the last N days.
    pub days: Option<u64>,
    /// At most the N newest commits of the run.
    pub limit: Option<usize>,
    /// The commit message instead of the generated one.
    pub message: Option<String>,
    /// Only show what it would do.
    pub dry_run: bool,
    /// Then push the branch to its upstream.
    pub push: bool,
    /// Squash commits already pushed; with `push`, push with --force.
    pub force: bool,
    /// Whether to sign the commit.
    pub sign: SignRequest,
}

/// Squashes (or, with `dry_run`, shows what it would squash) in the repository containing
/// `cwd`; a push that failed after the squash is the response's error, the squash stays.
pub fn respond(cwd: &Path, request: &SquashRequest) -> Result<Response, OpError> {
    let options = options(request)?;
    let squashed = super::squash(cwd, &options)?;
    let mut response =
        Response::text(report(&squashed), Outcome::Success).with_notices(squashed.notices.clone());
    if let Some(Err(error)) = &squashed.pushed {
        response.outcome = Outcome::Failed;
        response.error = Some(push_failure(&squashed, error));
    }
    Ok(response)
}

/// The options, with `--after`, `--hours` and `--days` turned into one cutoff (the latest).
fn options(request: &SquashRequest) -> Result<SquashOptions, OpError> {
    let now = crate::ops::now_secs();
    let mut cutoffs = Vec::new();
    if let Some(text) = &request.after {
        cutoffs.push(super::parse_date(text, now).ok_or_else(|| {
            OpError::usage(
                format!("--after: cannot read the date {text:?}"),
                "give a date like 2026-01-01, 2026-01-01T12:00:00Z, @1767225600 or \"3 days ago\"",
            )
        })?);
    }
    cutoffs.extend(request.hours.map(|h| now - (h as i64).saturating_mul(3600)));
    cutoffs.extend(
        request
            .days
            .map(|d| now - (d as i64).saturating_mul(86_400)),
    );
    Ok(SquashOptions {
        containing: request.containing.clone(),
        session: request.session.clone(),
        after: cutoffs.into_iter().max(),
        limit: request.limit,
        message: request.message.clone(),
        dry_run: request.dry_run,
        push: request.push,
        force: request.force,
        sign: request.sign.clone(),
    })
}

/// What was (or would be) squashed, the message, and where the branch went.
fn report(squashed: &Squashed) -> String {
    let plan = &squashed.plan;
    let n = plan.picked.len();
    let mut out = match squashed.commit {
        None => format!("Would squash {n} commits (dry run, nothing changed):\n"),
        Some(_) => format!("Squashed {n} commits ({}):\n", squashed.id),
    };
    for p in plan.picked.iter().rev() {
        let id = p.loaf_id.as_deref().unwrap_or("------");
        out.push_str(&format!("  {} {id} {}\n", short_oid(p.commit), p.subject));
    }
    if plan.more > 0 {
        out.push_str(&format!(
            "--limit {n}: {} more commit{} would have matched\n",
            plan.more,
            if plan.more == 1 { "" } else { "s" }
        ));
    }
    let ended = match &plan.end {
        RunEnd::NotMatching(c, s) => Some(format!("the run ends at {} ({s})", short_oid(*c))),
        RunEnd::Merge(c) => Some(format!("the run ends at merge {}", short_oid(*c))),
        RunEnd::TooOld(c) => Some(format!(
            "the run ends at {}, older than asked",
            short_oid(*c)
        )),
        RunEnd::Root | RunEnd::Limit => None,
    };
    if let Some(ended) = ended {
        out.push_str(&format!("({ended})\n"));
    }
    match squashed.commit {
        None => {
            out.push_str("Message:\n");
            for line in plan.message.lines() {
                let indent = if line.is_empty() { "" } else { "  " };
                out.push_str(&format!("{indent}{line}\n"));
            }
        }
        Some(commit) => {
            out.push_str(&format!(
                "{}: {} -> {} {}\n",
                display_ref(&plan.ref_name),
                short_oid(plan.head),
                short_oid(commit),
                plan.message.lines().next().unwrap_or("")
            ));
            if let (Some(Ok(())), Some(up)) = (&squashed.pushed, &plan.upstream) {
                out.push_str(&format!("Pushed to {} {}.\n", up.remote, up.remote_ref));
            }
            out.push_str("`git loaf undo` takes the squash back.\n");
        }
    }
    out
}

/// The error shown when the push after a squash failed: the squash stays, and what to do.
fn push_failure(squashed: &Squashed, error: &PushError) -> OpError {
    let plan = &squashed.plan;
    let (remote, branch) = plan
        .upstream
        .as_ref()
        .map(|u| {
            (
                u.remote.clone(),
                u.remote_ref.trim_start_matches("refs/heads/").to_owned(),
            )
        })
        .unwrap_or_default();
    let kept = "the squash is kept locally (`git loaf undo` takes it back)";
    match error {
        PushError::RemoteMoved { .. } => OpError::refused(
            format!(
                "push refused: {remote}/{branch} moved since your last fetch (someone pushed); the remote is untouched and {kept}"
            ),
            format!(
                "`git fetch {remote}` and look at what is new (`git log HEAD..{remote}/{branch}`); to replace it anyway, `git push --force {remote} HEAD:{branch}`"
            ),
        ),
        other => OpError::usage(
            format!("{other}; {kept}"),
            format!(
                "fix the cause and push yourself: `git push --force-with-lease {remote} HEAD:{branch}`"
            ),
        ),
    }
}
