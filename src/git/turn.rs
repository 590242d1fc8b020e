//! The turns record mode has begun and not yet committed (DESIGN §3b): one per session, kept
//! as `refs/loaf/record/<key>` → a commit nobody else refers to, whose tree holds the
//! checkpoint taken at `begin` (`work/` and `index/`, so `git gc` keeps both) and whose
//! message is the turn as JSON (session, agent, prompt, time, HEAD). Writing the ref is the
//! one step that makes a begin exist, so a crash leaves either no turn or a whole one.
//!
//! Once the agent sends tool events, the turn also holds two trees ([`ToolTrees`], kept as
//! `users/` and `agents/`): what the working tree would be had only the user worked, and the
//! working tree as the last event saw it. Tool events update them without the repository's
//! lock (a hook must cost next to nothing), so each update is a compare-and-swap of the ref
//! ([`replace`]): two events of one session racing never lose one another's update.

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
    /// Per-tool attribution, from the agent's first tool event on; `None`: the agent sent
    /// only turn events, and the turn is attributed as a whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<ToolTrees>,
}

/// What per-tool attribution has seen of a turn (DESIGN §3b): a change made during one of
/// the agent's tool calls is the agent's, one made between them the user's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolTrees {
    /// The working tree at begin with the user's changes made since laid on it (the agent's
    /// tool calls left out): the base the turn's commit takes the agent's hunks from.
    pub users: String,
    /// The working tree as the last event saw it (its paths; the others as at begin).
    pub agents: String,
    /// How many tool calls began.
    pub calls: u32,
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
    let commit = turn_commit(repo, turn)?;
    let name = ref_name(key);
    repo.reference(&name, commit, true, "git-loaf: record begin")?;
    sync_ref(repo, &name)
}

/// Records `turn` as session `key`'s begun turn if the ref still names `old` (the version
/// the caller read); `false`, nothing changed, when it moved meanwhile (read again) or is
/// gone (the turn was committed).
pub fn replace(repo: &Repository, key: &str, turn: &Turn, old: Oid) -> Result<bool, git2::Error> {
    let commit = turn_commit(repo, turn)?;
    let name = ref_name(key);
    match repo.reference_matching(&name, commit, true, old, "git-loaf: record tool event") {
        Ok(_) => {}
        Err(e)
            if matches!(
                e.code(),
                git2::ErrorCode::Modified | git2::ErrorCode::NotFound
            ) =>
        {
            return Ok(false);
        }
        Err(e) => return Err(e),
    }
    sync_ref(repo, &name)?;
    Ok(true)
}

/// The commit holding `turn`, its objects durable.
fn turn_commit(repo: &Repository, turn: &Turn) -> Result<Oid, git2::Error> {
    let mut tree = repo.treebuilder(None)?;
    tree.insert("work", turn.work_tree()?, TREE_MODE)?;
    tree.insert("index", turn.index_tree()?, TREE_MODE)?;
    if let Some(tools) = &turn.tools {
        tree.insert("users", Oid::from_str(&tools.users)?, TREE_MODE)?;
        tree.insert("agents", Oid::from_str(&tools.agents)?, TREE_MODE)?;
    }
    let tree = tree.write()?;
    let message =
        serde_json::to_string(turn).map_err(|e| git2::Error::from_str(&format!("record: {e}")))?;
    let commit = write_commit(repo, tree, &[], &message)?;
    durable::sync_new_objects(repo).map_err(io)?;
    Ok(commit)
}

fn sync_ref(repo: &Repository, name: &str) -> Result<(), git2::Error> {
    durable::sync_ref(repo, name).map_err(io)
}

fn io(e: std::io::Error) -> git2::Error {
    git2::Error::from_str(&format!("record: {e}"))
}

/// Session `key`'s begun turn, if there is one.
pub fn load(repo: &Repository, key: &str) -> Result<Option<Turn>, git2::Error> {
    Ok(load_versioned(repo, key)?.map(|(_, turn)| turn))
}

/// Session `key`'s begun turn and the version read (for [`replace`]), if there is one.
pub fn load_versioned(repo: &Repository, key: &str) -> Result<Option<(Oid, Turn)>, git2::Error> {
    let commit = match repo.refname_to_id(&ref_name(key)) {
        Ok(id) => repo.find_commit(id)?,
        Err(e) if e.code() == git2::ErrorCode::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let id = commit.id();
    let message = commit.message_raw().unwrap_or_default();
    serde_json::from_str(message)
        .map(|turn| Some((id, turn)))
        .map_err(|e| {
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
            tools: None,
        };
        assert_eq!(load(&repo, "s1").expect("load"), None);
        save(&repo, "s1", &turn).expect("save");
        assert_eq!(load(&repo, "s1").expect("load"), Some(turn.clone()));
        let (old, _) = load_versioned(&repo, "s1").expect("load").expect("begun");
        let tools = ToolTrees {
            users: turn.work.clone(),
            agents: turn.work.clone(),
            calls: 1,
        };
        let later = Turn {
            tools: Some(tools),
            ..turn.clone()
        };
        assert!(replace(&repo, "s1", &later, old).expect("replace"));
        assert!(
            !replace(&repo, "s1", &turn, old).expect("replace"),
            "a stale version is not written"
        );
        assert_eq!(load(&repo, "s1").expect("load"), Some(later));
        forget(&repo, "s1").expect("forget");
        forget(&repo, "s1").expect("forgetting twice is fine");
        assert_eq!(load(&repo, "s1").expect("load"), None);
    }
}
