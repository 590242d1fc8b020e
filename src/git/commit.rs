//! Loaf commits: the message with its trailers (docs/trailers-and-notes.md), and the commit itself,
//! written with the user's identity ([`super::identity`]) and moving no ref. The full result a
//! commit carries as a note is [`super::notes`].

use git2::{Oid, Repository};

pub use super::identity::identity;
// The notes API, as the operations name it beside the commit they annotate.
pub use super::notes::{
    ensure_notes_rewrite, read_notes, read_report, write_note, write_note_value, write_report,
    write_report_value,
};

/// The trailer naming a squash commit's id.
pub const SQUASH_TRAILER: &str = "Loaf-Squash";
/// The trailer naming one squashed apply: `<apply id> <its commit>`.
pub const SQUASHED_TRAILER: &str = "Loaf-Squashed";

/// The trailers a loaf commit carries (docs/trailers-and-notes.md).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Trailers {
    /// `Loaf-Apply: <id>` on every apply commit.
    pub apply: Option<String>,
    /// `Loaf-Base: <oid>`: HEAD before the apply.
    pub base: Option<Oid>,
    /// `Loaf-Result: <single-line JSON>`.
    pub result: Option<String>,
    /// `Assisted-by: <model>`.
    pub assisted_by: Option<String>,
}

impl Trailers {
    /// `(key, value)` pairs in the order they are written.
    pub fn pairs(&self) -> Vec<(&'static str, String)> {
        let mut pairs = Vec::new();
        if let Some(id) = &self.apply {
            pairs.push(("Loaf-Apply", id.clone()));
        }
        if let Some(base) = self.base {
            pairs.push(("Loaf-Base", base.to_string()));
        }
        if let Some(result) = &self.result {
            pairs.push(("Loaf-Result", result.clone()));
        }
        if let Some(model) = &self.assisted_by {
            pairs.push(("Assisted-by", model.clone()));
        }
        pairs
    }
}

/// `subject`, a blank line, then the trailers, one per line. Values are made single-line
/// (a trailer value may not contain a line break; JSON from serde_json never does).
pub fn message(subject: &str, trailers: &Trailers) -> String {
    let subject = subject.lines().next().unwrap_or("").trim();
    let mut out = format!("{subject}\n\n");
    for (key, value) in trailers.pairs() {
        let value = value.replace(['\r', '\n'], " ");
        out.push_str(&format!("{key}: {value}\n"));
    }
    out
}

/// The trailers of a commit message: `Key: value` lines of its last paragraph.
pub(crate) fn parse_trailers(message: &str) -> Vec<(String, String)> {
    let last = message.trim_end().rsplit("\n\n").next().unwrap_or("");
    last.lines()
        .filter_map(|line| {
            let (key, value) = line.split_once(": ")?;
            let key_ok =
                !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
            key_ok.then(|| (key.to_owned(), value.to_owned()))
        })
        .collect()
}

/// Writes a commit of `tree` on `parents` with the user's identity (author and committer),
/// without moving any ref: publishing is a separate, compare-and-swap step.
pub(crate) fn write_commit(
    repo: &Repository,
    tree: Oid,
    parents: &[Oid],
    message: &str,
) -> Result<Oid, git2::Error> {
    let author = identity(repo, "AUTHOR")?;
    let committer = identity(repo, "COMMITTER")?;
    let tree = repo.find_tree(tree)?;
    let parents = parents
        .iter()
        .map(|p| repo.find_commit(*p))
        .collect::<Result<Vec<_>, _>>()?;
    let parents: Vec<&git2::Commit<'_>> = parents.iter().collect();
    repo.commit(None, &author, &committer, message, &tree, &parents)
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use super::*;
    use crate::git::notes::{NOTES_REF, read_note};
    use crate::git::testing::{git, init_repo};

    /// The git CLI in a deterministic environment.

    #[test]
    fn git_reads_back_the_trailers_and_the_note() {
        let dir = init_repo();
        let repo = Repository::open(dir.path()).expect("open");
        let tree = repo
            .treebuilder(None)
            .and_then(|b| b.write())
            .expect("empty tree");
        let result = serde_json::json!({
            "success": false,
            "results": [{"action": "file_write", "error": "old_text \"x\" not found:\n  42: é 😀"}],
            "long": "x".repeat(3000),
        })
        .to_string();
        let trailers = Trailers {
            apply: Some("3f2a1c".into()),
            base: Some(Oid::ZERO_SHA1),
            result: Some(result.clone()),
            assisted_by: Some("claude-x".into()),
        };
        let commit = write_commit(
            &repo,
            tree,
            &[],
            &message("AI: write a.rs\nsecond line", &trailers),
        )
        .expect("commit");
        write_note(&repo, commit, "{\"full\": true}").expect("note");
        let oid = commit.to_string();
        let value = git(
            dir.path(),
            &[
                "log",
                "-1",
                "--format=%(trailers:key=Loaf-Result,valueonly)",
                &oid,
            ],
        );
        assert_eq!(value.trim_end(), result);
        let parsed = git(dir.path(), &["interpret-trailers", "--parse"]);
        assert!(parsed.is_empty(), "sanity: no input, no trailers");
        let body = git(dir.path(), &["log", "-1", "--format=%B", &oid]);
        let mut cmd = Command::new("git")
            .args(["interpret-trailers", "--parse"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("spawn");
        std::io::Write::write_all(&mut cmd.stdin.take().expect("stdin"), body.as_bytes())
            .expect("write");
        let parsed =
            String::from_utf8(cmd.wait_with_output().expect("output").stdout).expect("utf8");
        assert_eq!(
            parsed,
            format!(
                "Loaf-Apply: 3f2a1c\nLoaf-Base: {}\nLoaf-Result: {result}\nAssisted-by: claude-x\n",
                Oid::ZERO_SHA1
            )
        );
        assert_eq!(
            git(dir.path(), &["log", "-1", "--format=%s", &oid]).trim_end(),
            "AI: write a.rs"
        );
        assert_eq!(
            git(dir.path(), &["log", "-1", "--format=%an <%ae>", &oid]).trim_end(),
            "Ada <ada@example.com>"
        );
        assert_eq!(
            git(dir.path(), &["notes", "--ref", NOTES_REF, "show", &oid]).trim_end(),
            "{\"full\": true}"
        );
        assert_eq!(
            read_note(&repo, commit).as_deref(),
            Some("{\"full\": true}")
        );
        let ours = parse_trailers(&body);
        assert_eq!(
            ours.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
            ["Loaf-Apply", "Loaf-Base", "Loaf-Result", "Assisted-by"]
        );
        assert_eq!(ours[2].1, result);
    }
}
