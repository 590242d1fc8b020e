//! The full result of a loaf commit, kept as a note under [`NOTES_REF`] (carried across
//! `git commit --amend` and `git rebase` by [`ensure_notes_rewrite`]) and as a local report,
//! without the file contents the commit already holds ([`NOTE_BLOB_KEY`]).

use std::path::Path;

use git2::{Oid, Repository};
use serde_json::Value;

use super::identity::identity;

/// The notes ref holding each loaf commit's full ExecutionResult.
pub(crate) const NOTES_REF: &str = "refs/notes/loaf";

/// In a stored note, an object `{"loaf-blob": "<oid>", "bytes": N}` stands for a string
/// parameter that the annotated commit's tree holds, byte for byte, as blob `<oid>` at the
/// action's own path (the content of a `file_write`): the note keeps outputs, errors and
/// hashes, not a second copy of files the commit already has. [`read_note`] puts the
/// strings back, so every reader sees the full result.
pub(crate) const NOTE_BLOB_KEY: &str = "loaf-blob";

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
pub(crate) fn elide_committed(
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
                let normal = crate::paths::lexical(Path::new(path));
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
pub(crate) fn restore_committed(repo: &Repository, note: &mut Value) -> usize {
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
pub(crate) fn read_note(repo: &Repository, commit: Oid) -> Option<String> {
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
pub(crate) const NOTES_REWRITE_MARKER: &str = "loaf.notesRewriteRefDone";

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
    use super::*;
    use crate::git::testing::{git, init_repo};

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
