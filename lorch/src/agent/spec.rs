//! The spec-maintainer: the task and SPEC.md → model → an edit confined to the sections it
//! may change ([`ALLOWED`]; docs/lorch.md, "The three agents") → SPEC.md written through
//! git-loaf as one commit (atomically outside git) → `spec.updated`,
//! `spec.no_changes_needed` or `spec.changes_requested`, with `spec_notes/<task>.json`.
//!
//! The reply (its prompt says so): a line `STATUS: updated | no_changes_needed |
//! changes_requested`, a line `SUMMARY: …`, and for each section to change the whole new
//! section, `## ` heading first, in a ```` ```spec-section ```` fenced block. Each replaces
//! the section of that heading, or is appended when the spec has none.
//!
//! The guard does not trust the reply's shape: it splits the old and the new SPEC.md into
//! `##` sections and compares them one by one. `Status` and `Completion` may change;
//! `Changelog` and `Open Questions` may only grow at their end; any other section changed,
//! added or removed refuses the whole edit: SPEC.md is left as it was and an `error` event
//! (`payload.code` `forbidden_spec_edit`) names the sections.

use std::collections::HashMap;

use git_loaf::api::{ApplyOptions, apply};
use serde_json::json;

use super::emit::Draft;
use super::reviewer::write_json;
use super::verdict::fenced_blocks;
use super::{Answer, Shim, StepError, input_str};
use crate::protocol::{Command, EventType, Object, Timestamp};
use crate::safety;

/// What may happen to an allowed section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Any edit.
    Edit,
    /// Text added at its end only.
    Append,
}

/// The sections the spec maintainer may change, by heading (compared ignoring case).
pub const ALLOWED: [(&str, Rule); 4] = [
    ("Status", Rule::Edit),
    ("Changelog", Rule::Append),
    ("Completion", Rule::Edit),
    ("Open Questions", Rule::Append),
];

/// The spec file when `inputs.spec` does not name one.
pub const DEFAULT_SPEC: &str = "SPEC.md";

/// The name given to the text before the first `##` heading.
const PREAMBLE: &str = "(text before the first ## heading)";

/// The rule for a section, `None` when it may not change.
pub fn rule(title: &str) -> Option<Rule> {
    ALLOWED
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(title.trim()))
        .map(|(_, rule)| *rule)
}

/// One `##` section: its heading's title (`None` for the preamble) and its whole text,
/// heading line included.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// The heading's text.
    pub title: Option<String>,
    /// The section's lines.
    pub text: String,
}

impl Section {
    fn name(&self) -> &str {
        self.title.as_deref().unwrap_or(PREAMBLE)
    }
}

/// The title of a level-2 ATX heading line (`## Title`, closing `#`s dropped).
fn heading(line: &str) -> Option<String> {
    let rest = line.strip_prefix("## ")?;
    Some(rest.trim().trim_end_matches('#').trim().to_owned())
}

/// Splits a markdown document into its `##` sections (headings inside fenced code do not
/// count).
pub fn split(doc: &str) -> Vec<Section> {
    let mut sections = vec![Section {
        title: None,
        text: String::new(),
    }];
    let mut fence: Option<String> = None;
    for line in doc.split_inclusive('\n') {
        let trimmed = line.trim_start();
        let marker: String = trimmed
            .chars()
            .take_while(|c| *c == '`' || *c == '~')
            .collect();
        if marker.len() >= 3 {
            match &fence {
                None => fence = Some(marker),
                Some(open)
                    if marker.starts_with(open.as_str())
                        && trimmed[marker.len()..].trim().is_empty() =>
                {
                    fence = None
                }
                Some(_) => {}
            }
        } else if fence.is_none()
            && let Some(title) = heading(line)
        {
            sections.push(Section {
                title: Some(title),
                text: String::new(),
            });
        }
        if let Some(last) = sections.last_mut() {
            last.text.push_str(line);
        }
    }
    if sections.first().is_some_and(|s| s.text.is_empty()) {
        sections.remove(0);
    }
    sections
}

/// `old` with each replacement section put in place of the section of the same title, or
/// appended when there is none. A replacement must start with its `##` heading.
pub fn edit(old: &str, replacements: &[String]) -> Result<String, String> {
    let mut sections = split(old);
    for replacement in replacements {
        let body = replacement.trim_matches('\n').trim_end();
        let title = body.lines().next().and_then(heading).ok_or_else(|| {
            format!(
                "a spec-section block must start with its `## ` heading line, not {:?}",
                body.lines().next().unwrap_or("")
            )
        })?;
        let position = sections.iter().position(|s| {
            s.title
                .as_deref()
                .is_some_and(|t| t.eq_ignore_ascii_case(&title))
        });
        match position {
            Some(i) => {
                // Keep the blank lines that separated it from the next section.
                let old_text = &sections[i].text;
                let trailing = &old_text[old_text.trim_end().len()..];
                let trailing = if trailing.contains('\n') {
                    trailing
                } else {
                    "\n"
                };
                sections[i].text = format!("{body}{trailing}");
            }
            None => {
                if let Some(last) = sections.last_mut() {
                    if !last.text.ends_with('\n') {
                        last.text.push('\n');
                    }
                    if !last.text.ends_with("\n\n") {
                        last.text.push('\n');
                    }
                }
                sections.push(Section {
                    title: Some(title),
                    text: format!("{body}\n"),
                });
            }
        }
    }
    Ok(sections.into_iter().map(|s| s.text).collect())
}

/// Compares `old` and `new` section by section: the titles of the sections that changed
/// (all allowed), or every forbidden change as (section, why).
pub fn check(old: &str, new: &str) -> Result<Vec<String>, Vec<(String, String)>> {
    let old_sections = split(old);
    let new_sections = split(new);
    // Sections pair up by title and occurrence (a title may repeat).
    let key = |sections: &[Section]| -> Vec<(String, usize)> {
        let mut seen: HashMap<String, usize> = HashMap::new();
        sections
            .iter()
            .map(|s| {
                let name = s.name().to_ascii_lowercase();
                let n = seen.entry(name.clone()).or_default();
                *n += 1;
                (name, *n)
            })
            .collect()
    };
    let old_keys = key(&old_sections);
    let new_keys = key(&new_sections);
    let mut changed = Vec::new();
    let mut forbidden = Vec::new();
    for (section, k) in new_sections.iter().zip(&new_keys) {
        let name = section.name().to_owned();
        let before = old_keys
            .iter()
            .position(|o| o == k)
            .map(|i| &old_sections[i]);
        let allowed = section.title.as_deref().and_then(rule);
        match before {
            Some(before) if before.text.trim_end() == section.text.trim_end() => {}
            Some(before) => match allowed {
                Some(Rule::Edit) => changed.push(name),
                Some(Rule::Append)
                    if section.text.trim_end().starts_with(before.text.trim_end()) =>
                {
                    changed.push(name)
                }
                Some(Rule::Append) => {
                    forbidden.push((name, "only appending at its end is allowed".to_owned()))
                }
                None => forbidden.push((name, "changed".to_owned())),
            },
            None if allowed.is_some() => changed.push(name),
            None => forbidden.push((name, "added".to_owned())),
        }
    }
    for (section, k) in old_sections.iter().zip(&old_keys) {
        if !new_keys.contains(k) {
            forbidden.push((section.name().to_owned(), "removed".to_owned()));
        }
    }
    if forbidden.is_empty() {
        Ok(changed)
    } else {
        Err(forbidden)
    }
}

/// The spec-maintainer's answer, as read from its reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecReply {
    /// `updated`, `no_changes_needed` or `changes_requested`.
    pub status: String,
    /// The summary line.
    pub summary: String,
    /// The replacement sections.
    pub sections: Vec<String>,
}

/// Reads the reply's status, summary and sections.
pub fn parse_reply(reply: &str) -> Result<SpecReply, String> {
    let field = |name: &str| {
        reply.lines().find_map(|line| {
            let (key, value) = line.trim().split_once(':')?;
            key.trim()
                .eq_ignore_ascii_case(name)
                .then(|| value.trim().to_owned())
        })
    };
    let status = field("STATUS")
        .map(|s| s.to_ascii_lowercase().replace([' ', '-'], "_"))
        .filter(|s| ["updated", "no_changes_needed", "changes_requested"].contains(&s.as_str()))
        .ok_or("expected a line `STATUS: updated`, `STATUS: no_changes_needed` or `STATUS: changes_requested`")?;
    Ok(SpecReply {
        status,
        summary: field("SUMMARY").unwrap_or_default(),
        sections: fenced_blocks(reply, "spec-section"),
    })
}

/// Handles `update_spec`.
pub fn handle(shim: &Shim, command: &Command) -> Result<Answer, StepError> {
    let root = &shim.options.workspace;
    let spec_file = input_str(command, "spec")
        .unwrap_or(DEFAULT_SPEC)
        .to_owned();
    let path = safety::confine(root, &spec_file)?;
    let old = std::fs::read_to_string(&path).map_err(StepError::io(format!("read {spec_file}")))?;
    let change = super::change::section(root, command, super::prompt::MAX_SPEC_DIFF_BYTES)?;
    let prompt = super::prompt::spec_maintainer(command, root, &spec_file, &old, &change);
    let reply = shim.ask(command, &prompt)?;
    let answer = parse_reply(&reply.text).map_err(|e| StepError::NoVerdict(e.to_owned()))?;
    // Redacted before the edit: a secret the old text happens to hold is not "changed".
    let sections: Vec<String> = answer
        .sections
        .iter()
        .map(|s| shim.emitter.redact(s))
        .collect();
    let new = edit(&old, &sections).map_err(StepError::NoVerdict)?;
    let changed = check(&old, &new).map_err(|forbidden| StepError::ForbiddenSpecEdit {
        file: spec_file.clone(),
        sections: forbidden.iter().map(|(s, _)| s.clone()).collect(),
        why: forbidden
            .iter()
            .map(|(s, why)| format!("{s}: {why}"))
            .collect::<Vec<_>>()
            .join("; "),
    })?;
    let mut artifacts = Vec::new();
    let mut commit = None;
    if new != old {
        commit = write_spec(shim, &path, &spec_file, &new)?;
        artifacts.extend(super::artifact(root, &spec_file));
    }
    let requested = answer.status == "changes_requested";
    let notes = format!("spec_notes/{}.json", command.task_id);
    shim.exclude(&["/spec_notes/"]);
    write_json(
        &safety::confine(root, &notes)?,
        json!({
            "task_id": command.task_id,
            "status": if requested { "changes_requested" } else { "approved" },
            "summary": answer.summary,
            "sections_changed": changed,
            "created_at": Timestamp::now().to_string(),
        }),
        shim.emitter.secrets(),
    )?;
    artifacts.extend(super::artifact(root, &notes));
    let (event, status) = if requested {
        (EventType::SpecChangesRequested, "changes_requested")
    } else if changed.is_empty() {
        (EventType::SpecNoChangesNeeded, "no_changes_needed")
    } else {
        (EventType::SpecUpdated, "updated")
    };
    let mut payload = Object::new();
    payload.insert("summary".into(), json!(answer.summary));
    payload.insert("spec".into(), json!(spec_file));
    payload.insert("sections_changed".into(), json!(changed));
    payload.insert("notes".into(), json!(notes));
    payload.insert("commit".into(), json!(commit));
    Ok(Answer {
        drafts: vec![Draft {
            artifacts: Some(artifacts),
            ..Draft::new(event, Some(status), payload)
        }],
        keep: true,
    })
}

/// Writes the new spec. In a git repository through git-loaf, as one transaction and one
/// commit (`Assisted-by: lorch spec_maintainer …`): the spec step is then undoable and
/// squashable like the builder's, and leaves no uncommitted change that would make
/// `git loaf undo` refuse to take earlier steps back. Elsewhere atomically.
/// Returns the commit.
fn write_spec(
    shim: &Shim,
    path: &std::path::Path,
    spec_file: &str,
    new: &str,
) -> Result<Option<String>, StepError> {
    let root = &shim.options.workspace;
    if git_loaf::api::worktree_root(root).is_none() {
        safety::atomic_write(path, new.as_bytes())
            .map_err(StepError::io(format!("write {spec_file}")))?;
        return Ok(None);
    }
    let reply = file_write_block(&path.display().to_string(), new);
    let options = ApplyOptions {
        model: Some(shim.options.model()),
        ..ApplyOptions::default()
    };
    let applied = apply(root, &reply, &options).map_err(|e| StepError::Apply(e.to_string()))?;
    let git = applied.result.git.clone().unwrap_or_default();
    let refused = git
        .not_applied
        .clone()
        .or_else(|| applied.kept.as_ref().map(|k| k.reason.clone()))
        .or_else(|| (!applied.result.success).then(|| applied.result.to_text()));
    match refused {
        Some(why) => Err(StepError::Apply(format!(
            "{spec_file} was not written: {why}"
        ))),
        None => Ok(git.commit),
    }
}

/// A NESL reply writing `content` to `path` whole: a heredoc, whose delimiter (from the
/// block id) must not occur in the content; the heredoc's value ends before the line break
/// that precedes the delimiter, hence the one added.
pub fn file_write_block(path: &str, content: &str) -> String {
    let id = (0..100)
        .map(|n| format!("s{n:02}"))
        .find(|id| {
            !content.contains(&format!("EOT_{id}")) && !content.contains(&format!("#!end_{id}"))
        })
        .unwrap_or_else(|| "s00".to_owned());
    let path = serde_json::to_string(path).unwrap_or_default();
    format!(
        "#!nesl [@three-char-SHA-256: {id}]\naction = \"file_write\"\npath = {path}\ncontent = <<'EOT_{id}'\n{content}\nEOT_{id}\n#!end_{id}\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: &str = "# Spec\n\nIntro.\n\n## Requirements\n\n- R1\n\n```md\n## not a heading\n```\n\n## Status\n\n| T-1 | todo |\n\n## Changelog\n\n- v1\n";

    #[test]
    fn splits_on_level_two_headings_outside_fences_and_joins_back_exactly() {
        let sections = split(SPEC);
        let titles: Vec<_> = sections.iter().map(|s| s.name().to_owned()).collect();
        assert_eq!(titles, [PREAMBLE, "Requirements", "Status", "Changelog"]);
        assert_eq!(
            sections.iter().map(|s| s.text.as_str()).collect::<String>(),
            SPEC
        );
    }

    #[test]
    fn allowed_edits_pass_and_every_other_change_is_named() {
        let new = edit(
            SPEC,
            &[
                "## Status\n\n| T-1 | done |".into(),
                "## Changelog\n\n- v1\n- v2".into(),
                "## Open Questions\n\n- why?".into(),
            ],
        )
        .expect("edit");
        assert_eq!(
            new,
            "# Spec\n\nIntro.\n\n## Requirements\n\n- R1\n\n```md\n## not a heading\n```\n\n## Status\n\n| T-1 | done |\n\n## Changelog\n\n- v1\n- v2\n\n## Open Questions\n\n- why?\n"
        );
        assert_eq!(
            check(SPEC, &new),
            Ok(vec![
                "Status".into(),
                "Changelog".into(),
                "Open Questions".into()
            ])
        );
        let rewritten = edit(SPEC, &["## Changelog\n\n- v0".into()]).expect("edit");
        assert_eq!(
            check(SPEC, &rewritten),
            Err(vec![(
                "Changelog".into(),
                "only appending at its end is allowed".into()
            )])
        );
        let smuggled = edit(
            SPEC,
            &["## Status\n\n| T-1 | done |\n\n## Requirements\n\n- none".into()],
        )
        .expect("edit");
        assert_eq!(
            check(SPEC, &smuggled),
            Err(vec![("Requirements".into(), "added".into())])
        );
        let direct = edit(SPEC, &["## Requirements\n\n- R1 relaxed".into()]).expect("edit");
        assert_eq!(
            check(SPEC, &direct),
            Err(vec![("Requirements".into(), "changed".into())])
        );
        assert!(edit(SPEC, &["no heading".into()]).is_err());
    }

    #[test]
    fn the_file_write_block_carries_the_content_exactly() {
        for content in ["a\nb\n", "a\nb", "", "\n\n", "EOT_s00\n#!end_s01\nx := y\n"] {
            let block = file_write_block("/repo/SPEC \"1\".md", content);
            let parsed = git_loaf::api::parse(&block);
            assert!(parsed.errors.is_empty(), "{content:?}: {:?}", parsed.errors);
            let properties = &parsed.blocks[0].properties;
            assert_eq!(properties.get("path"), Some("/repo/SPEC \"1\".md"));
            assert_eq!(properties.get("content"), Some(content), "{block}");
        }
    }

    #[test]
    fn the_reply_needs_a_status() {
        let reply = "STATUS: updated\nSUMMARY: done\n```spec-section\n## Status\nok\n```\n";
        assert_eq!(
            parse_reply(reply),
            Ok(SpecReply {
                status: "updated".into(),
                summary: "done".into(),
                sections: vec!["## Status\nok".into()],
            })
        );
        assert!(parse_reply("All good").is_err());
    }
}
