//! What `status` answers, whichever front door asked (docs/history.md): one paragraph per
//! thing in effect, each with the command that ends it, and the JSON form.

use std::path::Path;

use super::Status;
use crate::ops::undo::{display_ref, short};
use crate::ops::{OpError, Outcome, Response};

/// What is in effect in the working tree containing `cwd`, as text and JSON.
pub fn respond(cwd: &Path) -> Result<Response, OpError> {
    let status = super::status(cwd)?;
    Ok(Response::text(render(&status), Outcome::Success).with_json(&status))
}

/// The text form: one paragraph per thing in effect.
fn render(status: &Status) -> String {
    if status.is_quiet() {
        return "Nothing in effect: not stepped back, no turn being recorded, no apply kept, no saved work.\n".to_owned();
    }
    let mut out = String::new();
    if let Some(back) = &status.stepped_back {
        let branch = match back.branch.as_str() {
            "HEAD" => "the walk's tip".to_owned(),
            branch => display_ref(branch),
        };
        let steps = match back.back {
            Some(1) => "1 step back".to_owned(),
            Some(n) => format!("{n} steps back"),
            None => "off the history".to_owned(),
        };
        out.push_str(&format!(
            "Stepped back: HEAD at {} {}, {steps} from {branch} {}. `git loaf step-forward` goes toward the tip.\n",
            short(Some(&back.at)),
            back.subject,
            short(Some(&back.tip)),
        ));
        if !back.in_place {
            out.push_str(
                "  HEAD moved since the last step: step-forward will refuse and say why.\n",
            );
        }
    }
    for turn in &status.recording {
        let agent = turn
            .agent
            .as_deref()
            .map(|a| format!(" ({a})"))
            .unwrap_or_default();
        out.push_str(&format!(
            "Recording a turn: session {}{agent} since {}.\n",
            turn.session, turn.since
        ));
    }
    for kept in &status.kept {
        out.push_str(&format!(
            "NOT APPLIED: {} {} ({}): `git loaf take {}` applies it, `git loaf drop {}` discards it.\n",
            kept.id,
            kept.summary,
            short(Some(&kept.commit)),
            kept.id,
            kept.id
        ));
    }
    for work in &status.saved {
        let how = match work.commits {
            true => String::new(),
            false => format!(": `git loaf restore {}` puts it back", work.id),
        };
        out.push_str(&format!("Saved work {}, {}{how}.\n", work.id, work.why));
        for path in &work.paths {
            out.push_str(&format!("  {path}\n"));
        }
    }
    if let Some(journal) = &status.interrupted {
        out.push_str(&format!(
            "Interrupted: an operation stopped before it finished ({journal}); the next git-loaf command that changes anything finishes it or rolls it back.\n"
        ));
    }
    if !status.config_waits.is_empty() {
        out.push_str(&format!(
            "A loaf.yml change waits for you: it widens what code may do ({}). `git loaf config` shows it, `git loaf config accept` accepts it.\n",
            status.config_waits.join("; ")
        ));
    }
    if status.review_reports > 0 {
        let reports = match status.review_reports {
            1 => "A review report waits".to_owned(),
            n => format!("{n} review reports wait"),
        };
        out.push_str(&format!(
            "{reports} for the model: an agent's next prompt (record mode), the next MCP apply or watch's next results carries it, once.\n"
        ));
    }
    if let Some(error) = &status.config_error {
        out.push_str(&format!("loaf.yml cannot be used: {error}\n"));
    }
    out
}
