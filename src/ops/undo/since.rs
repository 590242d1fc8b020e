//! What changed since an operation, for undo's and redo's refusals: the paths that differ
//! from the state the operation left, and, for `undo --to`, what the user did between the
//! operations it walks back (work an apply carried along uncommitted, or a commit the next
//! operation was built on), which going back past them would drop.

use crate::git::Repository;
use crate::tx::oplog::{OpEntry, UserState};
use crate::tx::publish::differing;

/// How many paths a message names before "and N more".
const NAMED: usize = 5;

/// Something the user did between two operations of a run `undo --to` walks back.
#[derive(Debug, Clone)]
pub struct Between {
    /// The operation before the change.
    pub earlier: String,
    /// The operation after it, which found the repository changed.
    pub later: String,
    /// The working tree the earlier one left, and the one the later one found: their
    /// difference is what the user did.
    pub from_work: String,
    /// See `from_work`.
    pub to_work: String,
    /// The index the earlier one left.
    pub from_index: String,
    /// The index the later one found.
    pub to_index: String,
    /// Where a forced `undo --to` saved it: the id `git loaf restore` takes.
    pub saved: Option<String>,
    /// The paths that differ (working tree or index), sorted.
    pub paths: Vec<String>,
    /// Whether HEAD moved in between (the user committed, or switched).
    pub head_moved: bool,
}

/// The paths whose working tree or index entry differ between `expected` and the trees
/// `work` and `index`, sorted. A tree that cannot be read gives no paths rather than an
/// error: the caller is refusing anyway, and the refusal matters more than the list.
pub fn changed_paths(
    repo: &Repository,
    expected: &UserState,
    work: &str,
    index: &str,
) -> Vec<String> {
    let mut paths = std::collections::BTreeSet::new();
    for (then, now) in [(&expected.work, work), (&expected.index, index)] {
        if then != now {
            paths.extend(differing(repo, then, now).unwrap_or_default());
        }
    }
    paths.into_iter().map(|p| p.display().to_string()).collect()
}

/// What the user did between consecutive operations of `run` (oldest first), oldest first:
/// each operation's before state should be the state the one before it left.
pub fn between(repo: &Repository, run: &[OpEntry]) -> Vec<Between> {
    run.windows(2)
        .filter_map(|pair| {
            let (earlier, later) = (&pair[0], &pair[1]);
            if earlier.after == later.before {
                return None;
            }
            Some(Between {
                earlier: earlier.id.clone(),
                later: later.id.clone(),
                from_work: earlier.after.work.clone(),
                to_work: later.before.work.clone(),
                from_index: earlier.after.index.clone(),
                to_index: later.before.index.clone(),
                saved: None,
                paths: changed_paths(
                    repo,
                    &earlier.after,
                    &later.before.work,
                    &later.before.index,
                ),
                head_moved: earlier.after.head != later.before.head,
            })
        })
        .collect()
}

/// `a, b, c and 4 more` (the first few paths), `nothing` when there are none.
pub fn name_paths(paths: &[String]) -> String {
    if paths.is_empty() {
        return "nothing".to_owned();
    }
    let shown = paths
        .iter()
        .take(NAMED)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    match paths.len().checked_sub(NAMED) {
        Some(more) if more > 0 => format!("{shown} and {more} more"),
        _ => shown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_a_few_paths_then_counts_the_rest() {
        let paths: Vec<String> = (1..=7).map(|n| format!("f{n}")).collect();
        assert_eq!(name_paths(&paths[..1]), "f1");
        assert_eq!(name_paths(&paths[..5]), "f1, f2, f3, f4, f5");
        assert_eq!(name_paths(&paths), "f1, f2, f3, f4, f5 and 2 more");
        assert_eq!(name_paths(&[]), "nothing");
    }
}
