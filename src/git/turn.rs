//! The turns record mode has begun and not yet committed (DESIGN §3b): one per session, kept
//! as `refs/loaf/record/<key>` → a commit nobody else refers to, whose tree holds the
//! checkpoint taken at `begin` (`work/` and `index/`, so `git gc` keeps both) and whose
//! message is the turn as JSON (session, agent, prompt, time, HEAD). Writing the ref is the
//! one step that makes a begin exist, so a crash leaves either no turn or a whole one.

use git2::{Oid, Repository};
use serde::{Deserialize, Serialize};

use super::commit::write_commit;
use super::durable;

/// Where begun turns are kept.
pub const TURN_PREFIX: &str = "refs/loaf/record/";
/// A tree entry's mode for a subtree.
const TREE_MODE: i32 = 0o040000;

/// A begun turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Turn {
    /// The session as the agent named it.
    pub session: String,
    /// `Assisted-by` for its commit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The user's prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// When it began, seconds since the epoch.
    pub time: i64,
    /// HEAD at begin (`None`: unborn).
    pub head: Option<String>,
    /// The working tree at begin, as `git add -A` would record it.
    pub work: String,
    /// The index at begin.
    pub index: String,
}

impl Turn {
    /// The working tree at begin.
    pub fn work_tree(&self) -> Result<Oid, git2::Error> {
        Oid::from_str(&self.work)
    }

    /// The index at begin.
    pub fn index_tree(&self) -> Result<Oid, git2::Error> {
        Oid::from_str(&self.index)
    }

    /// HEAD at begin.
    pub fn head_commit(&self) -> Result<Option<Oid>, git2::Error> {
        self.head.as_deref().map(Oid::from_str).transpose()
    }
}

/// The ref of session `key` (a name [`session_key`] made safe).
fn ref_name(key: &str) -> String {
    format!("{TURN_PREFIX}{key}")
}

/// A name for `session` that is safe as a ref's last part: the session itself when it is
/// made of letters, digits, `-`, `_` and `.` (Claude Code's and Gemini's UUIDs), else a hash
/// of it, so that no session id can name another ref or escape the folder.
pub fn session_key(session: &str) -> String {
    let plain = !session.is_empty()
        && session.len() <= 100
        && !session.starts_with('.')
        && !session.ends_with(".lock")
        && !session.contains("..")
        && session
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if plain {
        return session.to_owned();
    }
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(session.as_bytes());
    let hex: String = digest.iter().take(10).map(|b| format!("{b:02x}")).collect();
    format!("h-{hex}")
}

/// Records `turn` as session `key`'s begun turn (replacing any), durably.
pub fn save(repo: &Repository, key: &str, turn: &Turn) -> Result<(), git2::Error> {
    let mut tree = repo.treebuilder(None)?;
    tree.insert("work", turn.work_tree()?, TREE_MODE)?;
    tree.insert("index", turn.index_tree()?, TREE_MODE)?;
    let tree = tree.write()?;
    let message =
        serde_json::to_string(turn).map_err(|e| git2::Error::from_str(&format!("record: {e}")))?;
    let commit = write_commit(repo, tree, &[], &message)?;
    let io = |e: std::io::Error| git2::Error::from_str(&format!("record: {e}"));
    durable::sync_new_objects(repo).map_err(io)?;
    let name = ref_name(key);
    repo.reference(&name, commit, true, "git-loaf: record begin")?;
    durable::sync_ref(repo, &name).map_err(io)?;
    Ok(())
}

/// Session `key`'s begun turn, if there is one.
pub fn load(repo: &Repository, key: &str) -> Result<Option<Turn>, git2::Error> {
    let commit = match repo.refname_to_id(&ref_name(key)) {
        Ok(id) => repo.find_commit(id)?,
        Err(e) if e.code() == git2::ErrorCode::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let message = commit.message_raw().unwrap_or_default();
    serde_json::from_str(message).map(Some).map_err(|e| {
        git2::Error::from_str(&format!(
            "the begun turn {} cannot be read ({e}): `git update-ref -d {}` forgets it",
            ref_name(key),
            ref_name(key)
        ))
    })
}

/// Whether any session has a begun turn (an agent may be editing the working tree now).
pub fn any_begun(repo: &Repository) -> Result<bool, git2::Error> {
    Ok(repo
        .references_glob(&format!("{TURN_PREFIX}*"))?
        .next()
        .is_some())
}

/// Forgets session `key`'s begun turn (nothing when there is none). The user's files are
/// not touched.
pub fn forget(repo: &Repository, key: &str) -> Result<(), git2::Error> {
    match repo.find_reference(&ref_name(key)) {
        Ok(mut reference) => reference.delete(),
        Err(e) if e.code() == git2::ErrorCode::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_session_ids_are_kept_and_others_hashed() {
        let uuid = "0b6f1a0e-5c9d-4a8e-9d43-2f1b3c4d5e6f";
        assert_eq!(session_key(uuid), uuid);
        for odd in [
            "",
            "../x",
            "a/b",
            ".hidden",
            "x.lock",
            "a b",
            &"x".repeat(101),
        ] {
            let key = session_key(odd);
            assert!(key.starts_with("h-") && key.len() == 22, "{odd:?} → {key}");
        }
        assert_ne!(session_key("a/b"), session_key("a/c"));
    }

    #[test]
    fn a_turn_is_saved_loaded_and_forgotten() {
        let dir = crate::git::testing::committed_repo();
        let repo = Repository::open(dir.path()).expect("open");
        let cp = crate::git::checkpoint::take(&repo).expect("checkpoint");
        let turn = Turn {
            session: "s1".into(),
            agent: Some("claude-code".into()),
            prompt: Some("fix it".into()),
            time: 5,
            head: cp.head.map(|h| h.to_string()),
            work: cp.work_tree.to_string(),
            index: cp.index_tree.to_string(),
        };
        assert_eq!(load(&repo, "s1").expect("load"), None);
        save(&repo, "s1", &turn).expect("save");
        assert_eq!(load(&repo, "s1").expect("load"), Some(turn));
        forget(&repo, "s1").expect("forget");
        forget(&repo, "s1").expect("forgetting twice is fine");
        assert_eq!(load(&repo, "s1").expect("load"), None);
    }
}
