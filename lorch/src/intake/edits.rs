//! What the user may answer to a proposal (approve it, or change the plan or the tasks),
//! one line each, read as an [`Edit`] and applied to the tasks in hand:
//!
//! ```text
//! y | yes                 build the tasks as they stand
//! n | no                  build nothing
//! drop ID                 leave task ID out
//! goal ID TEXT            reword task ID's goal
//! files ID PATH… | -      the files task ID is about (- for none)
//! plan PATH               derive the tasks from this plan instead (a candidate, or a file
//!                         of the workspace): the orchestration agent is asked again
//! ```
//!
//! Every edit is checked as lorch.json's tasks are (a goal said, files inside the
//! workspace); a bad one is answered with the reason and changes nothing.

use std::path::Path;

use crate::config::Task;
use crate::safety;

/// One answer, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Edit {
    /// Build the tasks as they stand.
    Yes,
    /// Build nothing.
    No,
    /// The tasks changed: what was done, for the record.
    Changed(String),
    /// Ask the orchestration agent for the tasks of this plan.
    Plan(String),
    /// Not an answer that can be taken, and why.
    Bad(String),
}

/// The help line shown after the question.
pub const HELP: &str =
    "y, n, or an edit: drop ID · goal ID TEXT · files ID PATH… (- for none) · plan PATH";

/// Reads `answer` and applies it to `tasks`; `plans` are the plan candidates the agent found,
/// `workspace` where files must be.
pub fn apply(answer: &str, tasks: &mut Vec<Task>, plans: &[String], workspace: &Path) -> Edit {
    let answer = answer.trim();
    let (word, rest) = answer.split_once(' ').unwrap_or((answer, ""));
    let rest = rest.trim();
    match word.to_ascii_lowercase().as_str() {
        "y" | "yes" => Edit::Yes,
        "n" | "no" => Edit::No,
        "drop" => match find(tasks, rest) {
            Ok(i) => {
                let task = tasks.remove(i);
                Edit::Changed(format!("dropped {}", task.id))
            }
            Err(bad) => bad,
        },
        "goal" => {
            let (id, goal) = rest.split_once(' ').unwrap_or((rest, ""));
            let goal = goal.trim();
            match find(tasks, id) {
                Ok(_) if goal.is_empty() => Edit::Bad(format!("goal {id} needs the new goal")),
                Ok(i) => {
                    tasks[i].goal = goal.to_owned();
                    Edit::Changed(format!("goal of {id}: {goal}"))
                }
                Err(bad) => bad,
            }
        }
        "files" => {
            let mut words = rest.split_whitespace();
            let id = words.next().unwrap_or("");
            let files: Vec<String> = words.filter(|f| *f != "-").map(str::to_owned).collect();
            let i = match find(tasks, id) {
                Ok(i) => i,
                Err(bad) => return bad,
            };
            if let Some(e) = files
                .iter()
                .find_map(|f| safety::confine(workspace, f).err())
            {
                return Edit::Bad(e.to_string());
            }
            tasks[i].files = files;
            Edit::Changed(format!("files of {id}: {}", tasks[i].files.join(" ")))
        }
        "plan" => plan(rest, plans, workspace),
        _ => Edit::Bad(format!("{answer:?} is not an answer")),
    }
}

fn find(tasks: &[Task], id: &str) -> Result<usize, Edit> {
    let known = || {
        tasks
            .iter()
            .map(|t| t.id.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    tasks.iter().position(|t| t.id == id).ok_or_else(|| {
        Edit::Bad(format!(
            "no task {id:?} in the proposal (its tasks: {})",
            known()
        ))
    })
}

fn plan(path: &str, plans: &[String], workspace: &Path) -> Edit {
    if path.is_empty() {
        return Edit::Bad(format!(
            "plan needs a file: one of {}, or another of the workspace",
            plans.join(", ")
        ));
    }
    if plans.iter().any(|p| p == path) {
        return Edit::Plan(path.to_owned());
    }
    match safety::confine(workspace, path) {
        Ok(full) if full.is_file() => Edit::Plan(path.to_owned()),
        Ok(_) => Edit::Bad(format!("{path} is not a file of the workspace")),
        Err(e) => Edit::Bad(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: &str) -> Task {
        Task {
            id: id.into(),
            goal: format!("goal {id}"),
            files: vec!["src/a.rs".into()],
        }
    }

    #[test]
    fn edits_change_the_tasks_and_bad_ones_change_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ws = dir.path();
        std::fs::write(ws.join("OTHER.md"), "# Other\n").expect("write");
        let plans = vec!["PLAN.md".to_owned()];
        let mut tasks = vec![task("T-1"), task("T-2")];
        let mut edit = |a: &str| apply(a, &mut tasks, &plans, ws);
        assert_eq!(edit("Y"), Edit::Yes);
        assert_eq!(edit("no"), Edit::No);
        assert_eq!(edit("drop T-1"), Edit::Changed("dropped T-1".into()));
        assert!(matches!(edit("drop T-1"), Edit::Bad(_)), "gone already");
        assert_eq!(
            edit("goal T-2  Say hello twice"),
            Edit::Changed("goal of T-2: Say hello twice".into())
        );
        assert!(matches!(edit("goal T-2"), Edit::Bad(_)));
        assert!(matches!(edit("files T-2 ../etc/passwd"), Edit::Bad(_)));
        assert_eq!(
            edit("files T-2 src/b.rs src/c.rs"),
            Edit::Changed("files of T-2: src/b.rs src/c.rs".into())
        );
        assert_eq!(edit("plan PLAN.md"), Edit::Plan("PLAN.md".into()));
        assert_eq!(edit("plan OTHER.md"), Edit::Plan("OTHER.md".into()));
        assert!(matches!(edit("plan NONE.md"), Edit::Bad(_)));
        assert!(matches!(edit("plan ../x.md"), Edit::Bad(_)));
        assert!(matches!(edit("maybe"), Edit::Bad(_)));
        assert_eq!(
            tasks,
            vec![Task {
                id: "T-2".into(),
                goal: "Say hello twice".into(),
                files: vec!["src/b.rs".into(), "src/c.rs".into()],
            }]
        );
    }
}
