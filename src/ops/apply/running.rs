//! The apply's run (docs/apply.md): what the reply's actions, exec and hooks run with — paths
//! redirected into the stage, the user's ignored files visible, the sandbox, the
//! repository's git hooks — then before hooks → actions, in order → after hooks, and a
//! check that no code reached the user's tree around the transaction.

use std::path::Path;
use std::rc::Rc;

use super::Tx;
use crate::exec::PathMap;
use crate::exec::sandbox::Sandbox;
use crate::git::{states, treediff};
use crate::notice::{Notice, NoticeKind};
use crate::ops::check::CheckedReply;
use crate::ops::exec_changes::StageWatch;
use crate::report::ExecutionResult;
use crate::tx::checkpoint::{self, Checkpoint};
use crate::tx::githooks::{GitHooks, Verify};
use crate::tx::publish::crash_point;
use crate::tx::session::{Session, TxError};
use crate::tx::stage::{self, Stage};
use crate::tx::visible_ignored;

/// What the reply's actions, exec and hooks run with.
pub(super) struct RunEnv {
    /// The repository's own git hooks (pre-commit, commit-msg, post-commit).
    pub(super) git_hooks: GitHooks,
    /// Which of the user's ignored files the stage shows, and which were copied in.
    pub(super) view: Rc<visible_ignored::Visibility>,
    /// The user's paths to the stage's, and back for output.
    pub(super) paths: PathMap,
    /// Where code runs; `None` when the apply runs none.
    pub(super) sandbox: Option<Sandbox>,
}

impl Tx<'_> {
    /// The repository's own git hooks (pre-commit, commit-msg, post-commit): a config read
    /// and a few stats.
    pub(super) fn git_hooks(&self) -> Result<GitHooks, TxError> {
        let verify = match (self.config.git_hooks, self.options.no_verify) {
            (false, _) => Verify::None,
            (true, true) => Verify::NoVerify,
            (true, false) => Verify::All,
        };
        Ok(GitHooks::take(self.repo(), &self.root, verify)
            .map_err(stage::StageError::from)?
            .with_environment(self.config.exec.env.clone()))
    }

    /// Whether code runs in the stage: exec, loaf.yml's hooks, or git hooks before the
    /// commit (they are code too).
    pub(super) fn runs_code(&self, reply: &CheckedReply<'_>, git_hooks: &GitHooks) -> bool {
        crate::ops::loaf::runs_code(reply, &self.config) || git_hooks.any_before_commit()
    }

    /// The run's surroundings. Ignored files (a virtualenv, node_modules, .env) are seen
    /// as in the user's tree: fs actions read through to them; exec and hooks get them
    /// mounted in place, which needs the list of them (a walk of the tree's folders: only
    /// when code will run).
    pub(super) fn run_env(
        &mut self,
        stage: &Stage,
        git_hooks: GitHooks,
        runs_code: bool,
    ) -> Result<RunEnv, TxError> {
        let isolate = visible_ignored::isolate_set(&self.config.stage.isolate)?;
        let mut view = visible_ignored::Visibility::new(&self.root, isolate.clone());
        let sandbox = if runs_code {
            let entries = visible_ignored::ignored_entries(self.repo(), &isolate)?;
            // The empty placeholders the user's entries are mounted over stay in the stage
            // between runs: the file actions must see the user's file through them, not an
            // empty one. A user's symlink is copied as a symlink by the sandbox instead.
            let mounted: Vec<visible_ignored::Entry> = entries
                .iter()
                .filter(|e| !self.root.join(&e.path).is_symlink())
                .cloned()
                .collect();
            view = view.with_placeholders(visible_ignored::place(stage.path(), &mounted)?);
            Some(self.sandbox(stage, entries))
        } else {
            None
        };
        let view = Rc::new(view);
        let paths = PathMap::redirect(&self.root, stage.path())
            .scratch()
            .showing(view.clone());
        crash_point("sandbox");
        Ok(RunEnv {
            git_hooks,
            view,
            paths,
            sandbox,
        })
    }

    /// Code sees the user's repository (docs/sandbox-and-safety.md): the
    /// user's index and HEAD commit, whatever an earlier apply left in the stage. HEAD is
    /// detached there, not the user's branch: the stage's HEAD file is a real one, and while
    /// it named the branch, git would refuse the user's own `git switch` or `git rebase` of
    /// it as "checked out" in the stage (and a kill would leave it so). On an unborn branch,
    /// the stage's own.
    pub(super) fn show_users_view(
        &self,
        stage: &Stage,
        checkpoint: &Checkpoint,
        env: &mut RunEnv,
    ) -> Result<(), TxError> {
        let Some(sandbox) = env.sandbox.take() else {
            return Ok(());
        };
        env.sandbox = Some(match self.old_head {
            Some(head) => {
                stage.write_users_index(checkpoint.index_tree)?;
                sandbox.showing_users(format!("{head}\n").into_bytes())
            }
            None => sandbox,
        });
        Ok(())
    }

    /// The sandbox for code: the stage at the repository's path, ignored entries mounted in.
    fn sandbox(&mut self, stage: &Stage, entries: Vec<visible_ignored::Entry>) -> Sandbox {
        let sandbox = Sandbox::new(
            &self.root,
            stage.path(),
            self.session.common_dir(),
            entries.into_iter().map(|e| e.path).collect(),
        )
        .with_policy(crate::ops::loaf::sandbox_policy(&self.config));
        if let Some(notice) = crate::exec::sandbox::fallback_notice() {
            self.notices.push(Notice::new(NoticeKind::Sandbox, notice));
        }
        sandbox
    }

    /// Before hooks → actions, in order → after hooks, in the stage, with submodules and
    /// files outside the sparse set fenced off.
    pub(super) fn run_actions(
        &self,
        reply: &CheckedReply<'_>,
        stage: &Stage,
        env: &RunEnv,
        checkpoint: &Checkpoint,
        watch: &StageWatch<'_>,
    ) -> Result<ExecutionResult, TxError> {
        let repo = self.repo();
        let mut fences = states::submodule_fences(repo, stage.path());
        fences.extend(states::sparse_fences(repo, stage.path()));
        crash_point("fences");
        let mut result = crate::ops::execute::execute_fenced(
            reply,
            &self.config,
            &env.paths,
            fences,
            env.sandbox.as_ref(),
            Some(watch),
        );
        crash_point("executed");
        if env.sandbox.as_ref().is_some_and(|s| !s.isolated()) {
            report_escapes(&self.session, checkpoint, &self.root, &mut result)?;
        }
        Ok(result)
    }
}

/// Without namespaces, code could change the user's tree directly (the model knows its real
/// path): compare the user's tree with the checkpoint taken before the run, and turn every
/// code-running result into a failure naming what it changed, so nothing claims success for
/// changes that are neither committed nor undoable.
fn report_escapes(
    session: &Session,
    before: &Checkpoint,
    root: &Path,
    result: &mut ExecutionResult,
) -> Result<(), TxError> {
    let repo = &session.repo;
    let now = checkpoint::take(repo)?;
    if now.work_tree == before.work_tree && now.index_tree == before.index_tree {
        return Ok(());
    }
    let mut paths: Vec<String> =
        treediff::changed_paths(repo, Some(before.work_tree), Some(now.work_tree))?
            .into_iter()
            .map(|p| root.join(p).display().to_string())
            .collect();
    if paths.is_empty() {
        paths.push("the index".to_owned());
    }
    let message = format!(
        "changed the user's files directly, outside the transaction (not committed, not undoable by git loaf): {}",
        paths.join(", ")
    );
    for r in result.results.iter_mut().filter(|r| r.action == "exec") {
        r.success = false;
        r.error = Some(match &r.error {
            Some(e) => format!("{e}; {message}"),
            None => message.clone(),
        });
    }
    result.success = false;
    let hooks = result.hook_errors.get_or_insert_with(Default::default);
    hooks
        .after
        .push(format!("code run by this apply {message}"));
    Ok(())
}
