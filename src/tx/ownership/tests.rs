use super::*;

/// A tree of `files` (path, content) in `repo`.
fn tree(repo: &Repository, files: &[(&str, &str)]) -> Oid {
    let empty = repo
        .treebuilder(None)
        .and_then(|b| b.write())
        .expect("empty tree");
    let values: Vec<(PathBuf, Entry)> = files
        .iter()
        .map(|(path, content)| {
            let blob = repo.blob(content.as_bytes()).expect("blob");
            (PathBuf::from(path), Some((blob, 0o100644)))
        })
        .collect();
    tree_with_values(repo, empty, &values).expect("tree")
}

fn content(repo: &Repository, tree: Oid, path: &str) -> Option<String> {
    let tree = repo.find_tree(tree).expect("tree");
    let (blob, _) = blob_at(&tree, Path::new(path))?;
    let blob = repo.find_blob(blob).expect("blob");
    Some(String::from_utf8_lossy(blob.content()).into_owned())
}

const HEAD: &str = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n";

fn with_line(text: &str, number: usize, line: &str) -> String {
    text.lines()
        .enumerate()
        .map(|(i, l)| {
            if i + 1 == number {
                format!("{line}\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect()
}

struct Case {
    _dir: tempfile::TempDir,
    repo: Repository,
}

impl Case {
    fn new() -> Case {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = Repository::init(dir.path()).expect("init");
        Case { _dir: dir, repo }
    }

    fn sides(&self, head: &str, index: &str, work: &str, staged: Option<&str>) -> Sides {
        let one = |text: Option<&str>| match text {
            Some(text) => tree(&self.repo, &[("f.txt", text)]),
            None => tree(&self.repo, &[]),
        };
        Sides {
            head: one(Some(head)),
            index: one(Some(index)),
            work: one(Some(work)),
            staged: one(staged),
        }
    }

    fn run(&self, sides: Sides) -> (Committed, UserAfter) {
        let changed: Vec<PathBuf> = changed_paths(&self.repo, Some(sides.work), Some(sides.staged))
            .expect("diff")
            .into_iter()
            .collect();
        let committed = commit_tree(&self.repo, sides, &changed).expect("commit tree");
        let after = user_after(&self.repo, sides, committed.tree).expect("after");
        (committed, after)
    }

    fn text(&self, tree: Oid) -> Option<String> {
        content(&self.repo, tree, "f.txt")
    }
}

#[test]
fn the_reply_s_line_is_committed_and_the_user_s_unstaged_line_stays_unstaged() {
    let case = Case::new();
    let mine = with_line(HEAD, 1, "mine");
    let reply = with_line(&mine, 9, "reply");
    let (committed, after) = case.run(case.sides(HEAD, HEAD, &mine, Some(&reply)));
    assert_eq!(case.text(committed.tree), Some(with_line(HEAD, 9, "reply")));
    assert!(committed.carried.is_empty());
    assert_eq!(case.text(after.work), Some(reply));
    assert_eq!(
        case.text(after.index),
        Some(with_line(HEAD, 9, "reply")),
        "nothing staged"
    );
    assert!(after.kept.is_empty());
}

#[test]
fn a_staged_hunk_of_the_user_s_stays_staged() {
    let case = Case::new();
    let mine = with_line(HEAD, 1, "mine");
    let reply = with_line(&mine, 9, "reply");
    let (committed, after) = case.run(case.sides(HEAD, &mine, &mine, Some(&reply)));
    assert_eq!(case.text(committed.tree), Some(with_line(HEAD, 9, "reply")));
    assert_eq!(
        case.text(after.index),
        Some(reply.clone()),
        "line 1 staged on top"
    );
    assert_eq!(case.text(after.work), Some(reply));
}

#[test]
fn a_reply_that_changes_the_user_s_own_line_carries_it_and_names_the_lines() {
    let case = Case::new();
    let mine = with_line(HEAD, 3, "mine");
    let reply = with_line(HEAD, 3, "reply");
    let (committed, after) = case.run(case.sides(HEAD, HEAD, &mine, Some(&reply)));
    assert_eq!(case.text(committed.tree), Some(reply.clone()));
    assert_eq!(committed.carried, vec!["f.txt (line 3)".to_owned()]);
    assert_eq!(case.text(after.work), Some(reply.clone()));
    assert_eq!(case.text(after.index), Some(reply));
}

#[test]
fn code_that_reverts_the_user_s_work_commits_nothing_and_the_work_is_kept() {
    let case = Case::new();
    let mine = with_line(HEAD, 1, "mine");
    // `git checkout -- .` in the stage: the file is HEAD's again.
    let (committed, after) = case.run(case.sides(HEAD, HEAD, &mine, Some(HEAD)));
    assert_eq!(case.text(committed.tree), Some(HEAD.to_owned()));
    assert!(committed.changed.is_empty());
    assert_eq!(case.text(after.work), Some(mine));
    assert_eq!(after.kept, vec![PathBuf::from("f.txt")]);
    // Reverting the user's line while adding one of its own: its line only.
    let mine = with_line(HEAD, 1, "mine");
    let reply = with_line(HEAD, 9, "reply");
    let (committed, after) = case.run(case.sides(HEAD, HEAD, &mine, Some(&reply)));
    assert_eq!(case.text(committed.tree), Some(reply.clone()));
    assert_eq!(case.text(after.work), Some(with_line(&mine, 9, "reply")));
    assert_eq!(after.kept, vec![PathBuf::from("f.txt")]);
}

#[test]
fn a_deleted_file_holding_the_user_s_work_stays_and_its_deletion_is_not_committed() {
    let case = Case::new();
    let mine = with_line(HEAD, 1, "mine");
    let (committed, after) = case.run(case.sides(HEAD, HEAD, &mine, None));
    assert_eq!(case.text(committed.tree), Some(HEAD.to_owned()));
    assert_eq!(case.text(after.work), Some(mine));
    assert_eq!(case.text(after.index), Some(HEAD.to_owned()));
    assert_eq!(after.kept, vec![PathBuf::from("f.txt")]);
}

#[test]
fn without_uncommitted_work_the_reply_s_result_is_the_commit() {
    let case = Case::new();
    let reply = with_line(HEAD, 5, "reply");
    let (committed, after) = case.run(case.sides(HEAD, HEAD, HEAD, Some(&reply)));
    assert_eq!(case.text(committed.tree), Some(reply.clone()));
    assert_eq!(case.text(after.work), Some(reply.clone()));
    assert_eq!(case.text(after.index), Some(reply));
    assert!(after.kept.is_empty() && committed.carried.is_empty());
}

#[test]
fn only_the_overlapping_hunk_is_carried_the_user_s_other_hunk_stays_uncommitted() {
    let case = Case::new();
    let mine = with_line(&with_line(HEAD, 1, "mine"), 6, "mine too");
    let reply = with_line(&mine, 6, "reply");
    let (committed, after) = case.run(case.sides(HEAD, HEAD, &mine, Some(&reply)));
    assert_eq!(case.text(committed.tree), Some(with_line(HEAD, 6, "reply")));
    assert_eq!(committed.carried, vec!["f.txt (line 6)".to_owned()]);
    assert_eq!(case.text(after.work), Some(reply));
    assert_eq!(case.text(after.index), Some(with_line(HEAD, 6, "reply")));
}
