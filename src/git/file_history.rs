//! One top-level file's history along HEAD's first parents: its content at HEAD and the
//! commits that changed it, newest first, with their messages, so that callers can tell who
//! wrote the version in force (docs/loaf-yml.md, "A loaf.yml a reply writes waits for you").

use git2::{Oid, Repository};

/// A commit that changed the file (or added or deleted it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The commit.
    pub commit: Oid,
    /// Its message, trailers included.
    pub message: String,
    /// The file as that commit left it (`None`: deleted).
    pub content: Option<Vec<u8>>,
}

/// The file `name` (at the root of the tree) as HEAD's commit holds it; `None` when HEAD is
/// unborn or holds no such file.
pub(crate) fn at_head(repo: &Repository, name: &str) -> Result<Option<Vec<u8>>, git2::Error> {
    let Some(head) = head_commit(repo)? else {
        return Ok(None);
    };
    content(repo, blob_in(&head, name)?)
}

/// How far back along first parents [`newest_change`] looks.
const MAX_WALK: usize = 10_000;

/// The newest commit, along HEAD's first parents (the last 10,000), that changed `name` and whose
/// message `wanted` accepts; `None` when no such commit exists.
pub(crate) fn newest_change(
    repo: &Repository,
    name: &str,
    wanted: impl Fn(&str) -> bool,
) -> Result<Option<Change>, git2::Error> {
    let mut next = head_commit(repo)?;
    let mut walked = 0;
    while let Some(commit) = next {
        walked += 1;
        if walked > MAX_WALK {
            // Not changed for that long: as if never (an apply must not cost a walk of a
            // million-commit history).
            return Ok(None);
        }
        let blob = blob_in(&commit, name)?;
        let parent = commit.parents().next();
        let before = match &parent {
            Some(parent) => blob_in(parent, name)?,
            None => None,
        };
        if blob != before {
            let message = String::from_utf8_lossy(commit.message_bytes()).into_owned();
            if wanted(&message) {
                return Ok(Some(Change {
                    commit: commit.id(),
                    message,
                    content: content(repo, blob)?,
                }));
            }
        }
        next = parent;
    }
    Ok(None)
}

fn head_commit(repo: &Repository) -> Result<Option<git2::Commit<'_>>, git2::Error> {
    match repo.head() {
        Ok(head) => Ok(Some(head.peel_to_commit()?)),
        Err(e)
            if matches!(
                e.code(),
                git2::ErrorCode::UnbornBranch | git2::ErrorCode::NotFound
            ) =>
        {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// The blob `name` names in `commit`'s tree (`None`: absent, or not a file).
fn blob_in(commit: &git2::Commit<'_>, name: &str) -> Result<Option<Oid>, git2::Error> {
    let tree = commit.tree()?;
    Ok(tree
        .get_name(name)
        .filter(|entry| entry.kind() == Some(git2::ObjectType::Blob))
        .map(|entry| entry.id()))
}

fn content(repo: &Repository, blob: Option<Oid>) -> Result<Option<Vec<u8>>, git2::Error> {
    blob.map(|id| repo.find_blob(id).map(|b| b.content().to_vec()))
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commit(repo: &Repository, files: &[(&str, &str)], message: &str) -> Oid {
        let mut builder = repo.treebuilder(None).expect("builder");
        for (name, text) in files {
            let blob = repo.blob(text.as_bytes()).expect("blob");
            builder.insert(name, blob, 0o100644).expect("insert");
        }
        let tree = repo
            .find_tree(builder.write().expect("tree"))
            .expect("tree");
        let sig = git2::Signature::new("T", "t@example.com", &git2::Time::new(0, 0)).expect("sig");
        let parent = repo.head().ok().and_then(|h| h.peel_to_commit().ok());
        let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
        repo.commit(Some("HEAD"), &sig, &sig, message, &tree, &parents)
            .expect("commit")
    }

    #[test]
    fn finds_the_newest_change_a_message_test_accepts() {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = Repository::init(dir.path()).expect("init");
        assert_eq!(at_head(&repo, "f").expect("unborn"), None);
        let mine = commit(&repo, &[("f", "1")], "mine");
        commit(&repo, &[("f", "1"), ("g", "x")], "other file");
        let theirs = commit(&repo, &[("f", "2"), ("g", "x")], "AI: x");
        assert_eq!(at_head(&repo, "f").expect("head"), Some(b"2".to_vec()));
        let newest = newest_change(&repo, "f", |_| true).expect("walk");
        assert_eq!(newest.map(|c| c.commit), Some(theirs));
        let users = newest_change(&repo, "f", |m| !m.starts_with("AI:")).expect("walk");
        assert_eq!(
            users.map(|c| (c.commit, c.content)),
            Some((mine, Some(b"1".to_vec())))
        );
        assert_eq!(
            newest_change(&repo, "g", |m| m == "nope").expect("walk"),
            None
        );
    }
}
