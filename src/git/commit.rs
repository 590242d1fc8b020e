//! Loaf commits: the message with its trailers, the commit itself with the user's identity,
//! and the full result as a note under `refs/notes/loaf` (kept across `git commit --amend`
//! and `git rebase` by [`ensure_notes_rewrite`]), without the file contents the commit
//! already holds ([`NOTE_BLOB_KEY`]).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use git2::{Oid, Repository, Signature};
use serde_json::Value;

use crate::actions::Schema;
use crate::report::ExecutionResult;

/// The notes ref holding each loaf commit's full ExecutionResult.
pub const NOTES_REF: &str = "refs/notes/loaf";

/// The trailers a loaf commit carries (DESIGN §2).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Trailers {
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
pub fn parse_trailers(message: &str) -> Vec<(String, String)> {
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

/// `{operation_summary}`, the commit subject's words: what the apply's successful writes did
/// to the commit's `changed` paths (relative to `root`), each path named once (a file written
/// then edited is `file_write a.rs`), at most three named. `exec` is named only when it can
/// have made a change: some changed path no fs action accounts for (an `exec` that only ran
/// tests is not news in the log).
pub fn subject_summary(result: &ExecutionResult, root: &Path, changed: &[PathBuf]) -> String {
    let schema = Schema::get();
    let relative = |value: Option<&serde_json::Value>| -> Vec<PathBuf> {
        value
            .and_then(|v| v.as_str())
            .into_iter()
            .flat_map(str::lines)
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .filter_map(|p| {
                let normal = crate::exec::guard::lexical(Path::new(p));
                let relative = normal.strip_prefix(root).ok()?;
                (!relative.as_os_str().is_empty()).then(|| relative.to_path_buf())
            })
            .collect()
    };
    // A folder action changes the files under it. Sorted, a folder's files follow it: one
    // lookup per path, not a scan of every changed path (a reply may write thousands).
    let changed_set: BTreeSet<&Path> = changed.iter().map(PathBuf::as_path).collect();
    let in_commit = |path: &Path| {
        changed_set
            .range(path..)
            .next()
            .is_some_and(|c| c.starts_with(path))
    };
    let mut named: BTreeSet<PathBuf> = BTreeSet::new();
    let mut items: Vec<String> = Vec::new();
    let mut execs: Vec<String> = Vec::new();
    for r in result.results.iter().filter(|r| r.success) {
        if r.action == "exec" {
            let lang = r.params.get("lang").and_then(|v| v.as_str()).unwrap_or("");
            let item = format!("exec {lang}").trim_end().to_owned();
            // The files it changed, as the transaction recorded them in its data.
            let paths: Vec<PathBuf> = ["created", "changed", "deleted"]
                .iter()
                .filter_map(|kind| r.data.as_ref()?.get(kind)?.as_array())
                .flatten()
                .flat_map(|p| relative(Some(p)))
                .collect();
            let new: Vec<String> = paths
                .iter()
                .filter(|p| in_commit(p) && !named.contains(*p))
                .map(|p| p.display().to_string())
                .collect();
            named.extend(paths);
            match new.len() {
                0 if !execs.contains(&item) => execs.push(item),
                0 => {}
                1..=3 => items.push(format!("{item} {}", new.join(" "))),
                n => items.push(format!("{item} {} (+{} more)", new[..3].join(" "), n - 3)),
            }
            continue;
        }
        if schema.tool(&r.action).is_none_or(|t| t.kind != "write") {
            continue;
        }
        let paths: Vec<PathBuf> = match r.action.as_str() {
            "file_move" => [
                relative(r.params.get("old_path")),
                relative(r.params.get("new_path")),
            ]
            .concat(),
            "files_replace_all_text" => relative(r.params.get("paths")),
            _ => relative(r.params.get("path")),
        };
        let new: Vec<&PathBuf> = paths
            .iter()
            .filter(|p| in_commit(p) && !named.contains(*p))
            .collect();
        if new.is_empty() {
            continue;
        }
        let shown = |p: &PathBuf| p.display().to_string();
        items.push(match (r.action.as_str(), paths.as_slice()) {
            ("file_move", [old, new]) => format!("file_move {} -> {}", shown(old), shown(new)),
            (action, _) => format!(
                "{action} {}",
                new.iter().map(|p| shown(p)).collect::<Vec<_>>().join(" ")
            ),
        });
        named.extend(paths);
    }
    let unexplained = changed
        .iter()
        .any(|c| !c.ancestors().any(|a| named.contains(a)));
    if unexplained {
        items.extend(execs);
    }
    match items.len() {
        0 => "changes by hooks".to_owned(),
        1..=3 => items.join(", "),
        n => format!("{} and {} more", items[..3].join(", "), n - 3),
    }
}

/// Writes a commit of `tree` on `parents` with the user's identity (author and committer),
/// without moving any ref: publishing is a separate, compare-and-swap step.
pub fn write_commit(
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

/// The user's identity as git would use it: `GIT_<ROLE>_NAME`, `_EMAIL` and `_DATE` from the
/// environment win over `user.name`/`user.email` and the current time (libgit2 reads only
/// the config).
pub fn identity(repo: &Repository, role: &str) -> Result<Signature<'static>, git2::Error> {
    let env = |key: &str| std::env::var(format!("GIT_{role}_{key}")).ok();
    let configured = repo.signature();
    let name = env("NAME").or_else(|| {
        configured
            .as_ref()
            .ok()
            .and_then(|s| s.name().ok().map(str::to_owned))
    });
    let email = env("EMAIL").or_else(|| {
        configured
            .as_ref()
            .ok()
            .and_then(|s| s.email().ok().map(str::to_owned))
    });
    let (Some(name), Some(email)) = (name, email) else {
        // Let libgit2 say what is missing (user.name / user.email).
        return configured.map(|s| s.to_owned());
    };
    match env("DATE") {
        Some(date) => Signature::new(&name, &email, &git_date(role, &date)?),
        None => Signature::now(&name, &email),
    }
}

/// `GIT_<ROLE>_DATE` read as git reads it, in every form git accepts (RFC 2822, ISO 8601,
/// `@<seconds> <±hhmm>`, ...): git's raw form is taken as it is, anything else is handed to
/// `git var`, git's own parser; a date git refuses is refused with git's reason, never
/// silently replaced by the current time.
fn git_date(role: &str, date: &str) -> Result<git2::Time, git2::Error> {
    if let Some(time) = raw_date(date) {
        return Ok(time);
    }
    let ident = std::process::Command::new("git")
        .args(["var", &format!("GIT_{role}_IDENT")])
        // Only the date is wanted: a name and an email so that git asks for nothing else.
        .env(format!("GIT_{role}_NAME"), "git-loaf")
        .env(format!("GIT_{role}_EMAIL"), "git-loaf@localhost")
        .env(format!("GIT_{role}_DATE"), date)
        .output();
    let refused = |why: &str| {
        git2::Error::from_str(&format!(
            "GIT_{role}_DATE='{date}' is not a date git accepts ({why}): write it as git does, e.g. `2005-04-07T22:13:13+0200`, `Thu, 07 Apr 2005 22:13:13 +0200` or `@1112911993 +0200`, or unset it"
        ))
    };
    match ident {
        Ok(out) if out.status.success() => {
            let text = String::from_utf8_lossy(&out.stdout);
            // `Name <email> <seconds> <±hhmm>`: the raw form again.
            let tail: Vec<&str> = text.trim_end().rsplitn(3, ' ').collect();
            match tail.as_slice() {
                [zone, seconds, _] => raw_date(&format!("{seconds} {zone}")),
                _ => None,
            }
            .ok_or_else(|| refused(&format!("git var printed '{}'", text.trim_end())))
        }
        Ok(out) => {
            let said = String::from_utf8_lossy(&out.stderr);
            Err(refused(said.trim().trim_start_matches("fatal: ")))
        }
        Err(error) => Err(refused(&format!(
            "git could not be run to read it: {error}"
        ))),
    }
}

/// git's raw date form, `<seconds> <±hhmm>`, with or without a leading `@`.
fn raw_date(text: &str) -> Option<git2::Time> {
    let text = text.trim();
    let (seconds, zone) = text.strip_prefix('@').unwrap_or(text).split_once(' ')?;
    let seconds: i64 = seconds.parse().ok()?;
    let sign = match zone.as_bytes().first()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let digits = &zone[1..];
    if digits.len() != 4 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let hhmm: i32 = digits.parse().ok()?;
    Some(git2::Time::new(
        seconds,
        sign * (hhmm / 100 * 60 + hhmm % 100),
    ))
}

/// In a stored note, an object `{"loaf-blob": "<oid>", "bytes": N}` stands for a string
/// parameter that the annotated commit's tree holds, byte for byte, as blob `<oid>` at the
/// action's own path (the content of a `file_write`): the note keeps outputs, errors and
/// hashes, not a second copy of files the commit already has. [`read_note`] puts the
/// strings back, so every reader sees the full result.
pub const NOTE_BLOB_KEY: &str = "loaf-blob";

/// Strings shorter than this stay in the note: a reference would not be much smaller.
const NOTE_ELIDE_MIN: usize = 128;

/// Stores `text` (the full ExecutionResult, or a squash's records of several) as the note of
/// `commit` under [`NOTES_REF`], without the file contents the commit holds (see
/// [`NOTE_BLOB_KEY`]); text that is not such JSON is stored as it is.
pub fn write_note(repo: &Repository, commit: Oid, text: &str) -> Result<Oid, git2::Error> {
    let parsed = text
        .contains("\"params\"")
        .then(|| serde_json::from_str::<Value>(text).ok())
        .flatten();
    match (parsed, repo.workdir()) {
        (Some(value), Some(root)) => {
            let root = root.to_path_buf();
            write_note_value(repo, commit, &root, value)
        }
        _ => store_note(repo, commit, text),
    }
}

/// [`write_note`] of a note already in JSON form, the actions' paths relative to `root`
/// (the working tree the reply named).
pub fn write_note_value(
    repo: &Repository,
    commit: Oid,
    root: &Path,
    mut note: Value,
) -> Result<Oid, git2::Error> {
    elide_committed(repo, commit, root, &mut note)?;
    let text = serde_json::to_string_pretty(&note)
        .map_err(|e| git2::Error::from_str(&format!("note: {e}")))?;
    store_note(repo, commit, &text)
}

/// Stores `report` (the full record, outputs included) as `commit`'s local report
/// ([`super::reports`]), without the file contents the commit holds, as a note is stored.
pub fn write_report_value(
    repo: &Repository,
    commit: Oid,
    root: &Path,
    mut report: Value,
) -> Result<(), git2::Error> {
    elide_committed(repo, commit, root, &mut report)?;
    let text = serde_json::to_string_pretty(&report)
        .map_err(|e| git2::Error::from_str(&format!("report: {e}")))?;
    super::reports::write(repo, commit, &text)
}

/// [`write_report_value`] of a report given as text (copied from another commit).
pub fn write_report(repo: &Repository, commit: Oid, text: &str) -> Result<(), git2::Error> {
    let parsed = serde_json::from_str::<Value>(text).ok();
    match (parsed, repo.workdir()) {
        (Some(value), Some(root)) => {
            let root = root.to_path_buf();
            write_report_value(repo, commit, &root, value)
        }
        _ => super::reports::write(repo, commit, text),
    }
}

/// The local report of `commit`, in full, if this repository holds one.
pub fn read_report(repo: &Repository, commit: Oid) -> Option<String> {
    super::reports::read(repo, commit).map(|text| full_note(repo, text))
}

fn store_note(repo: &Repository, commit: Oid, text: &str) -> Result<Oid, git2::Error> {
    let signature = identity(repo, "COMMITTER")?;
    repo.note(&signature, &signature, Some(NOTES_REF), commit, text, true)
}

/// Replaces, in every action result of `note`, each string parameter that `commit`'s tree
/// holds as the blob at the action's `path` (or `new_path`) by a [`NOTE_BLOB_KEY`]
/// reference; returns how many. Sizes are compared first, so only a string as long as the
/// file is hashed. A file the commit holds differently (an eol filter, a later edit in the
/// same reply) keeps its string.
pub fn elide_committed(
    repo: &Repository,
    commit: Oid,
    root: &Path,
    note: &mut Value,
) -> Result<usize, git2::Error> {
    let tree = repo.find_commit(commit)?.tree()?;
    let odb = repo.odb()?;
    let mut elided = 0;
    for_each_params(note, &mut |params| {
        let blobs: Vec<(Oid, usize)> = ["path", "new_path"]
            .iter()
            .filter_map(|key| params.get(*key)?.as_str())
            .filter_map(|path| {
                let normal = crate::exec::guard::lexical(Path::new(path));
                let relative = normal.strip_prefix(root).ok()?.to_path_buf();
                let entry = tree.get_path(&relative).ok()?;
                (entry.kind() == Some(git2::ObjectType::Blob)).then(|| entry.id())
            })
            .filter_map(|oid| odb.read_header(oid).ok().map(|(size, _)| (oid, size)))
            .collect();
        if blobs.is_empty() {
            return;
        }
        for value in params.values_mut() {
            let Value::String(text) = value else { continue };
            if text.len() < NOTE_ELIDE_MIN {
                continue;
            }
            let same = blobs.iter().find(|(oid, size)| {
                *size == text.len()
                    && Oid::hash_object(git2::ObjectType::Blob, text.as_bytes()).ok() == Some(*oid)
            });
            if let Some((oid, size)) = same {
                *value = serde_json::json!({ NOTE_BLOB_KEY: oid.to_string(), "bytes": size });
                elided += 1;
            }
        }
    });
    Ok(elided)
}

/// Puts back every [`NOTE_BLOB_KEY`] reference of `note`'s action results; returns how many.
/// A blob that is gone (the commit was collected) leaves its reference.
pub fn restore_committed(repo: &Repository, note: &mut Value) -> usize {
    let mut restored = 0;
    for_each_params(note, &mut |params| {
        for value in params.values_mut() {
            let Some(oid) = value
                .as_object()
                .filter(|o| o.len() == 2 && o.contains_key("bytes"))
                .and_then(|o| o.get(NOTE_BLOB_KEY)?.as_str())
                .and_then(|hex| Oid::from_str(hex).ok())
            else {
                continue;
            };
            let text = repo
                .find_blob(oid)
                .ok()
                .and_then(|blob| String::from_utf8(blob.content().to_vec()).ok());
            if let Some(text) = text {
                *value = Value::String(text);
                restored += 1;
            }
        }
    });
    restored
}

/// Calls `f` on the `params` of every action result in `value` (an ExecutionResult, or a
/// squash's records holding several): objects with an `action` string and `params`.
fn for_each_params(value: &mut Value, f: &mut impl FnMut(&mut serde_json::Map<String, Value>)) {
    match value {
        Value::Object(map) => {
            if map.get("action").is_some_and(Value::is_string)
                && let Some(Value::Object(params)) = map.get_mut("params")
            {
                f(params);
                return;
            }
            map.values_mut().for_each(|v| for_each_params(v, f));
        }
        Value::Array(items) => items.iter_mut().for_each(|v| for_each_params(v, f)),
        _ => {}
    }
}

/// A stored note as readers want it: the strings [`write_note`] left out put back.
fn full_note(repo: &Repository, text: String) -> String {
    if !text.contains(NOTE_BLOB_KEY) {
        return text;
    }
    let Ok(mut value) = serde_json::from_str::<Value>(&text) else {
        return text;
    };
    if restore_committed(repo, &mut value) == 0 {
        return text;
    }
    serde_json::to_string_pretty(&value).unwrap_or(text)
}

/// The note of `commit` under [`NOTES_REF`], if any, in full.
pub fn read_note(repo: &Repository, commit: Oid) -> Option<String> {
    let text = repo
        .find_note(Some(NOTES_REF), commit)
        .ok()?
        .message()
        .ok()
        .map(str::to_owned)?;
    Some(full_note(repo, text))
}

/// The notes of `commits` under [`NOTES_REF`], in order (`None` where there is none), in
/// full: the notes tree is read once and each note found by its path in it (flat, or fanned
/// out as `ab/cdef…` once git has reorganised a large notes tree), rather than one full
/// lookup per commit.
pub fn read_notes(repo: &Repository, commits: &[Oid]) -> Vec<Option<String>> {
    let Ok(tree) = repo
        .find_reference(NOTES_REF)
        .and_then(|r| r.peel_to_tree())
    else {
        return vec![None; commits.len()];
    };
    commits
        .iter()
        .map(|commit| {
            let hex = commit.to_string();
            let paths = [
                hex.clone(),
                format!("{}/{}", &hex[..2], &hex[2..]),
                format!("{}/{}/{}", &hex[..2], &hex[2..4], &hex[4..]),
            ];
            let blob = paths
                .iter()
                .find_map(|p| tree.get_path(std::path::Path::new(p)).ok())
                .and_then(|entry| repo.find_blob(entry.id()).ok())?;
            let text = String::from_utf8(blob.content().to_vec()).ok()?;
            Some(full_note(repo, text))
        })
        .collect()
}

/// The config key recording that git-loaf has set `notes.rewriteRef` up in this repository
/// (or that the user asked it not to: any value there stops it from touching the config).
pub const NOTES_REWRITE_MARKER: &str = "loaf.notesRewriteRefDone";

/// Makes `git commit --amend` and `git rebase` carry the loaf notes over to the commits they
/// rewrite (git copies notes only of the refs `notes.rewriteRef` names). Once per repository:
/// when no configured value covers [`NOTES_REF`] (exactly or by a glob such as
/// `refs/notes/*`), `refs/notes/loaf` is appended to the local config — the key is
/// multi-valued, so the user's other values stay — and [`NOTES_REWRITE_MARKER`] is set so that
/// a user who removes it later is not overruled. Returns whether `notes.rewriteRef` was added.
pub fn ensure_notes_rewrite(repo: &Repository) -> Result<bool, git2::Error> {
    let config = repo.config()?;
    if config.get_entry(NOTES_REWRITE_MARKER).is_ok() {
        return Ok(false);
    }
    let mut covered = false;
    if let Ok(values) = config.multivar("notes.rewriteRef", None) {
        values.for_each(|entry| {
            covered |= entry.value().is_ok_and(covers_notes_ref);
        })?;
    }
    let mut local = config.open_level(git2::ConfigLevel::Local)?;
    if !covered {
        // set_multivar replaces only values matching the pattern: none here, so it appends.
        local.set_multivar("notes.rewriteRef", "^refs/notes/loaf$", NOTES_REF)?;
    }
    local.set_bool(NOTES_REWRITE_MARKER, true)?;
    Ok(!covered)
}

/// Whether a `notes.rewriteRef` value (a ref or a glob ending in `*`) names [`NOTES_REF`].
fn covers_notes_ref(value: &str) -> bool {
    match value.strip_suffix('*') {
        Some(prefix) => NOTES_REF.starts_with(prefix),
        None => value == NOTES_REF,
    }
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use super::*;
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

    fn action(
        action: &str,
        params: serde_json::Value,
        success: bool,
    ) -> crate::report::ActionResult {
        crate::report::ActionResult {
            seq: 1,
            block_id: "b1".into(),
            action: action.into(),
            params: params.as_object().cloned().unwrap_or_default(),
            success,
            error: None,
            data: None,
            start_line: 1,
        }
    }

    fn summary(results: Vec<crate::report::ActionResult>, changed: &[&str]) -> String {
        let result = ExecutionResult {
            results,
            ..ExecutionResult::default()
        };
        let changed: Vec<PathBuf> = changed.iter().map(PathBuf::from).collect();
        subject_summary(&result, Path::new("/repo"), &changed)
    }

    #[test]
    fn a_subject_names_each_path_once() {
        use serde_json::json;
        let written = summary(
            vec![
                action("file_write", json!({"path": "/repo/a.rs"}), true),
                action("file_replace_text", json!({"path": "/repo/a.rs"}), true),
                action("file_append", json!({"path": "/repo/./b.md"}), true),
                action("file_replace_text", json!({"path": "/repo/c.rs"}), false),
                action("file_read", json!({"path": "/repo/d.rs"}), true),
            ],
            &["a.rs", "b.md"],
        );
        assert_eq!(written, "file_write a.rs, file_append b.md");
        let moved = summary(
            vec![
                action(
                    "file_move",
                    json!({"old_path": "/repo/x", "new_path": "/repo/y"}),
                    true,
                ),
                action("file_write", json!({"path": "/repo/y"}), true),
                action("dir_delete", json!({"path": "/repo/old"}), true),
            ],
            &["old/1.txt", "x", "y"],
        );
        assert_eq!(moved, "file_move x -> y, dir_delete old");
    }

    #[test]
    fn exec_is_named_only_when_something_else_changed() {
        use serde_json::json;
        let tests_only = summary(
            vec![
                action("file_write", json!({"path": "/repo/a.rs"}), true),
                action("exec", json!({"lang": "bash", "code": "cargo test"}), true),
            ],
            &["a.rs"],
        );
        assert_eq!(tests_only, "file_write a.rs");
        let generated = summary(
            vec![
                action("file_write", json!({"path": "/repo/a.rs"}), true),
                action("exec", json!({"lang": "bash", "code": "make gen"}), true),
                action("exec", json!({"lang": "bash", "code": "make fmt"}), true),
            ],
            &["a.rs", "gen.rs"],
        );
        assert_eq!(generated, "file_write a.rs, exec bash");
        let many = summary(
            (1..=5)
                .map(|i| action("file_write", json!({"path": format!("/repo/{i}")}), true))
                .collect(),
            &["1", "2", "3", "4", "5"],
        );
        assert_eq!(many, "file_write 1, file_write 2, file_write 3 and 2 more");
        assert_eq!(summary(Vec::new(), &["fmt.rs"]), "changes by hooks");
    }

    #[test]
    fn dates_are_read_in_every_form_git_takes_as_git_reads_them() {
        let dir = init_repo();
        let root = dir.path();
        // The oracle: the date git itself records in a commit given the same variable.
        let by_git = |date: &str| {
            let tree = git(root, &["write-tree"]);
            let out = std::process::Command::new("git")
                .args(["commit-tree", tree.trim(), "-m", "x"])
                .current_dir(root)
                .env("GIT_COMMITTER_DATE", date)
                .output()
                .expect("git runs");
            assert!(out.status.success(), "git refused {date}");
            let commit = String::from_utf8_lossy(&out.stdout).trim().to_owned();
            git(root, &["log", "-1", "--date=raw", "--format=%cd", &commit])
                .trim()
                .to_owned()
        };
        let ours = |date: &str| {
            let time = git_date("COMMITTER", date).expect("accepted");
            let minutes = time.offset_minutes();
            let sign = if minutes < 0 { '-' } else { '+' };
            let minutes = minutes.abs();
            format!(
                "{} {sign}{:02}{:02}",
                time.seconds(),
                minutes / 60,
                minutes % 60
            )
        };
        for date in [
            "Thu, 07 Apr 2005 22:13:13 +0200",
            "Thu, 7 Apr 2005 22:13:13 -0700",
            "2005-04-07T22:13:13+0200",
            "2005-04-07T22:13:13Z",
            "2005-04-07 22:13:13",
            "2005.04.07T22:13:13 +0530",
            "@1112911993 +0200",
            "1112911993 -0130",
            "2026-01-01T00:00:00Z",
        ] {
            assert_eq!(ours(date), by_git(date), "{date}");
        }
        let refused = git_date("COMMITTER", "next tuesday").expect_err("refused");
        assert!(
            refused
                .message()
                .contains("GIT_COMMITTER_DATE='next tuesday' is not a date git accepts"),
            "{refused}"
        );
    }

    #[test]
    fn notes_rewrite_is_appended_once_and_keeps_the_users_values() {
        let dir = init_repo();
        let root = dir.path();
        let repo = Repository::open(root).expect("open");
        let values = |root: &std::path::Path| {
            let out = std::process::Command::new("git")
                .args(["config", "--local", "--get-all", "notes.rewriteRef"])
                .current_dir(root)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .output()
                .expect("git runs");
            String::from_utf8_lossy(&out.stdout).into_owned()
        };
        git(root, &["config", "notes.rewriteRef", "refs/notes/commits"]);
        assert!(ensure_notes_rewrite(&repo).expect("configures"));
        assert_eq!(values(root), "refs/notes/commits\nrefs/notes/loaf\n");
        // The user removes it: git-loaf does not put it back.
        git(root, &["config", "--unset", "notes.rewriteRef", "loaf"]);
        assert!(!ensure_notes_rewrite(&repo).expect("reads"));
        assert_eq!(values(root), "refs/notes/commits\n");

        // A glob that already covers the loaf notes: nothing added, marker set.
        let dir = init_repo();
        let root = dir.path();
        let repo = Repository::open(root).expect("open");
        git(root, &["config", "notes.rewriteRef", "refs/notes/*"]);
        assert!(!ensure_notes_rewrite(&repo).expect("reads"));
        assert_eq!(values(root), "refs/notes/*\n");
        assert_eq!(
            git(root, &["config", "--bool", NOTES_REWRITE_MARKER]).trim(),
            "true"
        );
    }
}
