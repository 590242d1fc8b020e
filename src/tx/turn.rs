//! The turns record mode has begun and not yet committed (docs/agents.md): one per session, kept
//! as `refs/loaf/record/<key>` → a commit nobody else refers to, whose tree holds the
//! checkpoint taken at `begin` (`work/` and `index/`, so `git gc` keeps both) and whose
//! message is the turn as JSON (session, agent, prompt, time, HEAD). Writing the ref is the
//! one step that makes a begin exist, so a crash leaves either no turn or a whole one.
//!
//! Once the agent sends tool events, the turn also has two trees ([`ToolTrees`]): what the
//! working tree would be had only the user worked, and the working tree as the last event
//! saw it, kept as `refs/loaf/record-tools/<key>` → a commit whose parent is the begun turn's
//! and whose tree holds them (`users/`, `agents/`). Tool events update them without the
//! repository's lock and without fsync (a hook must cost next to nothing: an agent waits on
//! each), so each update is a compare-and-swap of that ref ([`replace_tools`]): two events of
//! one session racing never lose one another's update. What a power loss takes of them only
//! makes the turn attributed as a whole ([`load`] reads unreadable trees as none).

use git2::{Oid, Repository};
use serde::{Deserialize, Serialize};

use crate::git::commit::write_commit;
use crate::git::durable;

/// Where begun turns are kept.
pub const TURN_PREFIX: &str = "refs/loaf/record/";
/// Where the per-tool trees of begun turns are kept.
pub const TOOLS_PREFIX: &str = "refs/loaf/record-tools/";
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
    /// only turn events, and the turn is attributed as a whole. Kept under its own ref.
    #[serde(skip)]
    pub tools: Option<ToolTrees>,
}

/// What per-tool attribution has seen of a turn (docs/agents.md): a change made during one of
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

/// A begun turn as read, with the versions of its refs (for [`replace_tools`]).
#[derive(Debug, Clone)]
pub struct Versioned {
    /// The turn, its per-tool trees included.
    pub turn: Turn,
    /// The begun turn's commit.
    pub begun: Oid,
    /// The commit of its per-tool trees as read (`None`: none, or another turn's).
    pub tools: Option<Oid>,
}

/// Records `tools` as the per-tool trees of the turn `read` if nobody changed them since it
/// was read; `false`, nothing changed, when someone did (read again). Not fsynced: see the
/// module's doc.
pub fn replace_tools(
    repo: &Repository,
    key: &str,
    read: &Versioned,
    tools: &ToolTrees,
) -> Result<bool, git2::Error> {
    let mut tree = repo.treebuilder(None)?;
    tree.insert("users", Oid::from_str(&tools.users)?, TREE_MODE)?;
    tree.insert("agents", Oid::from_str(&tools.agents)?, TREE_MODE)?;
    let tree = tree.write()?;
    let message =
        serde_json::to_string(tools).map_err(|e| git2::Error::from_str(&format!("record: {e}")))?;
    let commit = write_commit(repo, tree, &[read.begun], &message)?;
    let name = tools_ref_name(key);
    let written = match (repo.refname_to_id(&name).ok(), read.tools) {
        (Some(now), Some(was)) if now != was => return Ok(false),
        (None, Some(_)) => return Ok(false),
        // Written for this very turn since it was read.
        (Some(now), None)
            if repo.find_commit(now).and_then(|c| c.parent_id(0)).ok() == Some(read.begun) =>
        {
            return Ok(false);
        }
        // Ours as read, or an earlier turn's (replaced, unless someone else does first).
        (Some(now), _) => {
            repo.reference_matching(&name, commit, true, now, "git-loaf: record tool event")
        }
        (None, None) => repo.reference(&name, commit, false, "git-loaf: record tool event"),
    };
    match written {
        Ok(_) => Ok(true),
        Err(e)
            if matches!(
                e.code(),
                git2::ErrorCode::Modified | git2::ErrorCode::NotFound | git2::ErrorCode::Exists
            ) =>
        {
            Ok(false)
        }
        Err(e) => Err(e),
    }
}

fn tools_ref_name(key: &str) -> String {
    format!("{TOOLS_PREFIX}{key}")
}

/// The per-tool trees of the turn whose commit is `begun`, and their commit; `None` when
/// there are none, they are another turn's, or they cannot be read (a power loss took them).
fn load_tools(repo: &Repository, key: &str, begun: Oid) -> Option<(Oid, ToolTrees)> {
    let id = repo.refname_to_id(&tools_ref_name(key)).ok()?;
    let commit = repo.find_commit(id).ok()?;
    if commit.parent_id(0).ok()? != begun {
        return None;
    }
    let tools: ToolTrees = serde_json::from_str(commit.message_raw().unwrap_or_default()).ok()?;
    for tree in [&tools.users, &tools.agents] {
        repo.find_tree(Oid::from_str(tree).ok()?).ok()?;
    }
    Some((id, tools))
}

/// The commit holding `turn`, its objects durable.
fn turn_commit(repo: &Repository, turn: &Turn) -> Result<Oid, git2::Error> {
    let mut tree = repo.treebuilder(None)?;
    tree.insert("work", turn.work_tree()?, TREE_MODE)?;
    tree.insert("index", turn.index_tree()?, TREE_MODE)?;
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
    Ok(load_versioned(repo, key)?.map(|read| read.turn))
}

/// Session `key`'s begun turn and the versions read (for [`replace_tools`]), if there is
/// one.
pub fn load_versioned(repo: &Repository, key: &str) -> Result<Option<Versioned>, git2::Error> {
    let commit = match repo.refname_to_id(&ref_name(key)) {
        Ok(id) => repo.find_commit(id)?,
        Err(e) if e.code() == git2::ErrorCode::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let id = commit.id();
    let message = commit.message_raw().unwrap_or_default();
    let tools = load_tools(repo, key, id);
    serde_json::from_str(message)
        .map(|turn: Turn| {
            Some(Versioned {
                turn: Turn {
                    tools: tools.as_ref().map(|(_, t)| t.clone()),
                    ..turn
                },
                begun: id,
                tools: tools.map(|(id, _)| id),
            })
        })
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
    for name in [tools_ref_name(key), ref_name(key)] {
        match repo.find_reference(&name) {
            Ok(mut reference) => reference.delete()?,
            Err(e) if e.code() == git2::ErrorCode::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
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
        let cp = crate::tx::checkpoint::take(&repo).expect("checkpoint");
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
        let read = load_versioned(&repo, "s1").expect("load").expect("begun");
        let tools = ToolTrees {
            users: turn.work.clone(),
            agents: turn.work.clone(),
            calls: 1,
        };
        assert!(replace_tools(&repo, "s1", &read, &tools).expect("replace"));
        assert!(
            !replace_tools(&repo, "s1", &read, &tools).expect("replace"),
            "a stale version is not written"
        );
        let later = Turn {
            tools: Some(tools),
            ..turn.clone()
        };
        assert_eq!(load(&repo, "s1").expect("load"), Some(later));
        // A new begin of the session: the trees of the turn before are not its.
        let next = Turn {
            time: 6,
            ..turn.clone()
        };
        save(&repo, "s1", &next).expect("save");
        assert_eq!(load(&repo, "s1").expect("load").and_then(|t| t.tools), None);
        forget(&repo, "s1").expect("forget");
        forget(&repo, "s1").expect("forgetting twice is fine");
        assert_eq!(load(&repo, "s1").expect("load"), None);
    }
}
