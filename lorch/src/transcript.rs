//! The console transcript (docs/lorch.md, "Try it"): one human-readable line per message, a
//! pure function of the message as the ledger records it, so the console and
//! `events/run-*.ndjson` carry the same content (a transcript can be regenerated from a
//! ledger line by line).
//!
//! ```text
//! [lorch→builder] command implement (corr T-0042-1)
//! [builder] artifact.produced src/foo/bar.js (1.4 KiB)
//! [reviewer] review.completed changes_requested (reviews/T-0042.json)
//! [lorch] DONE
//! ```

use serde_json::Value;

use super::protocol::{AgentType, Event, Message};

/// The console line of `message`, `None` for the ledger's bookkeeping that has nothing to
/// tell a reader (a step accepted, heartbeats and logs, which go to the agents' logs).
pub fn render(message: &Message) -> Option<String> {
    match message {
        Message::Command(c) => {
            let mut line = format!(
                "[lorch→{}] command {} (corr {})",
                c.to.agent_type, c.action, c.correlation_id
            );
            if c.retry.attempt > 0 {
                line.push_str(&format!(
                    " retry {}/{}",
                    c.retry.attempt + 1,
                    c.retry.max_attempts
                ));
            }
            // With a budget (policy.max_model_calls): what the run has spent, what is left.
            if let Some(left) = c.inputs.get("max_model_calls").and_then(Value::as_u64) {
                let used = c.inputs.get("model_calls_used").and_then(Value::as_u64);
                line.push_str(&format!(
                    " · model calls: {} used, {left} left",
                    used.unwrap_or(0)
                ));
            }
            Some(line)
        }
        Message::Event(e) if e.from.agent_type == AgentType::System => system(e),
        Message::Event(e) => Some(agent_event(e)),
        Message::Heartbeat(_) | Message::Log(_) => None,
    }
}

fn text<'a>(payload: &'a serde_json::Map<String, Value>, key: &str) -> &'a str {
    payload.get(key).and_then(Value::as_str).unwrap_or("")
}

fn system(e: &Event) -> Option<String> {
    let p = &e.payload;
    let line = match e.event.as_str() {
        "system.run_started" => {
            let next: Vec<&str> = p
                .get("queue")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|t| t.get("id").and_then(Value::as_str))
                .collect();
            let then = if next.is_empty() {
                String::new()
            } else {
                format!(", then {}", next.join(", "))
            };
            format!("[lorch] run {} task {}{then}", text(p, "run_id"), e.task_id)
        }
        "system.task_started" => {
            format!("[lorch] task {} (after {})", e.task_id, text(p, "after"))
        }
        "system.run_resumed" => match p.get("reopened").and_then(Value::as_str) {
            Some(how) => format!("[lorch] resuming run {} ({how})", text(p, "run_id")),
            None => format!("[lorch] resuming run {}", text(p, "run_id")),
        },
        "system.snapshot" => format!("[lorch] snapshot {}", text(p, "snapshot_id")),
        "system.user_decision" if matches!(e.status.as_deref(), Some("clarified" | "resolved")) => {
            format!(
                "[lorch] user_decision {}: {}",
                e.status.as_deref().unwrap_or(""),
                text(p, "prompt")
            )
        }
        "system.user_decision" if p.get("conflict").is_some() => format!(
            "[lorch] user_decision {} ({} conflict)",
            e.status.as_deref().unwrap_or(""),
            text(p, "conflict")
        ),
        "system.user_decision" if e.status.as_deref() == Some("plan_chosen") => {
            format!(
                "[lorch] user_decision plan_chosen: {}",
                text(p, "approved_plan")
            )
        }
        "system.user_decision" => format!(
            "[lorch] user_decision {}: {}",
            e.status.as_deref().unwrap_or(""),
            p.get("approved_tasks")
                .and_then(Value::as_array)
                .filter(|a| !a.is_empty())
                .map_or_else(
                    || "no task".to_owned(),
                    |a| a
                        .iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join(", ")
                )
        ),
        "system.protocol_error" => format!(
            "[lorch] protocol error from {}: {}",
            text(p, "agent"),
            text(p, "error")
        ),
        "system.agent_unhealthy" => {
            format!(
                "[lorch] {} unhealthy: {}",
                text(p, "agent"),
                text(p, "reason")
            )
        }
        "system.agent_restarted" => format!(
            "[lorch] {} restarted ({}/{}) after {} ms",
            text(p, "agent"),
            p.get("restart").unwrap_or(&Value::Null),
            super::config::MAX_RESTARTS,
            p.get("delay_ms").unwrap_or(&Value::Null)
        ),
        "system.orphan_terminated" => format!(
            "[lorch] terminated orphaned {} (pid {})",
            text(p, "agent"),
            p.get("pid").unwrap_or(&Value::Null)
        ),
        "system.leftovers_killed" => format!(
            "[lorch] killed what was left of the run's processes (pids {})",
            p.get("pids")
                .and_then(Value::as_array)
                .map(|pids| pids
                    .iter()
                    .map(Value::to_string)
                    .collect::<Vec<_>>()
                    .join(", "))
                .unwrap_or_default()
        ),
        "system.step_completed" => match e.status.as_deref() {
            Some("ok") => return None,
            other => format!(
                "[lorch] {} {}: {}",
                text(p, "action"),
                if other == Some("retry") {
                    "will be retried"
                } else {
                    "failed"
                },
                text(p, "reason")
            ),
        },
        "system.run_completed" => match e.status.as_deref() {
            Some("completed") => "[lorch] DONE".to_owned(),
            Some("aborted") => format!(
                "[lorch] ABORTED: {}; `lorch resume --run {}` continues it",
                text(p, "reason"),
                text(p, "run_id")
            ),
            _ => format!("[lorch] FAILED: {}", text(p, "reason")),
        },
        other => format!("[lorch] {other}"),
    };
    Some(line)
}

fn agent_event(e: &Event) -> String {
    let mut line = format!("[{}] {}", e.from.agent_type, e.event);
    if let Some(status) = &e.status {
        line.push(' ');
        line.push_str(status);
    }
    if let Some(code) = e.payload.get("code").and_then(Value::as_str) {
        line.push(' ');
        line.push_str(code);
    }
    // An error says what failed (the program, the file): the code alone does not; the
    // builder's turns (`builder.progress`) say how each went.
    if let Some(message) = e.payload.get("message").and_then(Value::as_str) {
        match e.event.as_str() {
            "error" => {
                line.push_str(": ");
                line.push_str(&super::step_rules::one_line(message, 300));
            }
            "builder.progress" => {
                line.push_str(": ");
                line.push_str(message);
            }
            _ => {}
        }
    }
    let artifacts = e.artifacts.as_deref().unwrap_or_default();
    if e.event.as_str() == "artifact.produced" {
        for a in artifacts {
            line.push_str(&format!(" {} ({})", a.path, size(a.size)));
        }
    } else if !artifacts.is_empty() {
        let paths: Vec<&str> = artifacts.iter().map(|a| a.path.as_str()).collect();
        line.push_str(&format!(" ({})", paths.join(", ")));
    }
    line
}

/// `1432` → `1.4 KiB`, as the console shows sizes.
pub fn size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lines_of_section_9() {
        let line = r#"{"kind":"event","message_id":"m1","correlation_id":"c","task_id":"T-0042","from":{"agent_type":"builder"},"event":"artifact.produced","artifacts":[{"path":"src/foo/bar.js","sha256":"sha256:00","size":1432}],"occurred_at":"2025-10-19T18:09:58Z"}"#;
        let m = super::super::validate(line.as_bytes()).expect("valid");
        assert_eq!(
            render(&m).as_deref(),
            Some("[builder] artifact.produced src/foo/bar.js (1.4 KiB)")
        );
        let line = r#"{"kind":"event","message_id":"m2","correlation_id":"c","task_id":"T-0042","from":{"agent_type":"reviewer"},"event":"review.completed","status":"changes_requested","artifacts":[{"path":"reviews/T-0042.json","sha256":"sha256:00","size":10}],"occurred_at":"2025-10-19T18:09:58Z"}"#;
        let m = super::super::validate(line.as_bytes()).expect("valid");
        assert_eq!(
            render(&m).as_deref(),
            Some("[reviewer] review.completed changes_requested (reviews/T-0042.json)")
        );
        assert_eq!(size(800), "800 B");
    }

    #[test]
    fn an_error_names_what_failed_on_one_line() {
        let line = r#"{"kind":"event","message_id":"m3","correlation_id":"c","task_id":"T-0042","from":{"agent_type":"spec_maintainer"},"event":"error","status":"failed","payload":{"code":"io_error","message":"read SPEC.md:\n  No such file or directory (os error 2)"},"occurred_at":"2025-10-19T18:09:58Z"}"#;
        let m = super::super::validate(line.as_bytes()).expect("valid");
        assert_eq!(
            render(&m).as_deref(),
            Some(
                "[spec_maintainer] error failed io_error: read SPEC.md: No such file or directory (os error 2)"
            )
        );
    }
}
