//! Reading the reviewer's verdict from its reply, in the form its prompt asks for:
//!
//! - the last ```` ```json ```` fenced block (or the whole reply, when it is one JSON
//!   object) that is an object with `status` `approved` or `changes_requested`, an optional
//!   `summary` string and optional `findings` (objects with `path`, optional `line`,
//!   `comment`);
//! - failing that, the last line of the form `VERDICT: approved` /
//!   `VERDICT: changes_requested` (any case), the rest of the reply being the summary.
//!
//! No verdict is an error, never a guess: an unreadable review must not approve anything.

use serde_json::{Map, Value, json};

/// The two verdicts of `review.completed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// `approved`
    Approved,
    /// `changes_requested`
    ChangesRequested,
}

impl Verdict {
    /// The name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Approved => "approved",
            Verdict::ChangesRequested => "changes_requested",
        }
    }

    fn parse(text: &str) -> Option<Verdict> {
        match text.trim().to_ascii_lowercase().as_str() {
            "approved" | "approve" => Some(Verdict::Approved),
            "changes_requested" | "changes requested" | "request_changes" => {
                Some(Verdict::ChangesRequested)
            }
            _ => None,
        }
    }
}

/// A review as read from the reply.
#[derive(Debug, Clone, PartialEq)]
pub struct Review {
    /// The verdict.
    pub verdict: Verdict,
    /// What the reviewer says overall.
    pub summary: String,
    /// `{path, line?, comment}` objects.
    pub findings: Vec<Value>,
}

/// Bytes of a summary kept when it is the reply's prose.
const MAX_SUMMARY_BYTES: usize = 8 * 1024;

/// The verdict in `reply`, or what is missing.
pub fn parse_review(reply: &str) -> Result<Review, String> {
    let mut candidates = fenced_blocks(reply, "json");
    let trimmed = reply.trim();
    if trimmed.starts_with('{') {
        candidates.push(trimmed.to_owned());
    }
    for text in candidates.iter().rev() {
        if let Ok(Value::Object(object)) = serde_json::from_str::<Value>(text)
            && let Some(review) = from_object(&object)
        {
            return Ok(review);
        }
    }
    for (n, line) in reply
        .lines()
        .enumerate()
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
    {
        let Some((key, value)) = line.trim().split_once(':') else {
            continue;
        };
        if key.trim().eq_ignore_ascii_case("verdict")
            && let Some(verdict) = Verdict::parse(value)
        {
            let rest: Vec<&str> = reply
                .lines()
                .enumerate()
                .filter(|(i, _)| *i != n)
                .map(|(_, l)| l)
                .collect();
            return Ok(Review {
                verdict,
                summary: super::clip(rest.join("\n").trim(), MAX_SUMMARY_BYTES),
                findings: Vec::new(),
            });
        }
    }
    Err(
        "expected a ```json block with \"status\": \"approved\" or \"changes_requested\", or a line `VERDICT: approved|changes_requested`"
            .into(),
    )
}

fn from_object(object: &Map<String, Value>) -> Option<Review> {
    let verdict = Verdict::parse(object.get("status")?.as_str()?)?;
    let summary = object
        .get("summary")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let findings = object
        .get("findings")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(finding)
        .collect();
    Some(Review {
        verdict,
        summary,
        findings,
    })
}

/// A finding as `reviews/<task>.json` holds it (`path`, `line`, `comment`); a bare string
/// is a comment without a place.
fn finding(value: &Value) -> Option<Value> {
    match value {
        Value::String(comment) => Some(json!({ "comment": comment })),
        Value::Object(o) => {
            let mut out = Map::new();
            if let Some(path) = o.get("path").and_then(Value::as_str) {
                out.insert("path".into(), json!(path));
            }
            if let Some(line) = o.get("line").and_then(Value::as_u64) {
                out.insert("line".into(), json!(line));
            }
            let comment = o
                .get("comment")
                .or_else(|| o.get("message"))
                .and_then(Value::as_str)?;
            out.insert("comment".into(), json!(comment));
            Some(Value::Object(out))
        }
        _ => None,
    }
}

/// The contents of the fenced blocks of `text` whose info string is `info` (backtick fences
/// of three or more, closed by a fence at least as long).
pub fn fenced_blocks(text: &str, info: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut open: Option<(usize, Vec<&str>)> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        let ticks = trimmed.chars().take_while(|c| *c == '`').count();
        match &mut open {
            None => {
                if ticks >= 3 && trimmed[ticks..].trim().eq_ignore_ascii_case(info) {
                    open = Some((ticks, Vec::new()));
                }
            }
            Some((fence, lines)) => {
                if ticks >= *fence && trimmed[ticks..].trim().is_empty() {
                    blocks.push(lines.join("\n"));
                    open = None;
                } else {
                    lines.push(line);
                }
            }
        }
    }
    blocks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_last_json_verdict_then_a_verdict_line_and_refuses_to_guess() {
        let reply = "Looks fine.\n```json\n{\"status\":\"changes_requested\",\"summary\":\"x\"}\n```\nOn second thought:\n```json\n{\"status\":\"approved\",\"summary\":\"ok\",\"findings\":[{\"path\":\"a.rs\",\"line\":3,\"comment\":\"nit\"},\"general\"]}\n```\n";
        let review = parse_review(reply).expect("verdict");
        assert_eq!(review.verdict, Verdict::Approved);
        assert_eq!(review.summary, "ok");
        assert_eq!(
            review.findings,
            vec![
                json!({"path":"a.rs","line":3,"comment":"nit"}),
                json!({"comment":"general"})
            ]
        );
        let review = parse_review("Handle nulls.\nVERDICT: changes_requested\n").expect("line");
        assert_eq!(review.verdict, Verdict::ChangesRequested);
        assert_eq!(review.summary, "Handle nulls.");
        assert!(parse_review("I think it is good").is_err());
        assert!(parse_review("```json\n{\"status\":\"maybe\"}\n```").is_err());
    }
}
