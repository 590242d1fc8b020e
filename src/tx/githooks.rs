//! The repository's own git hooks, run as `git commit` runs them (docs/apply.md, "Your git hooks
//! and commit signing").
//!
//! An apply commit is written by libgit2, which runs no hooks; a user whose repository has a
//! `pre-commit` hook (formatter, linter, secret scanner, the pre-commit framework) or a
//! `commit-msg` hook expects every commit on their branch to have passed it. So, before the
//! commit is published:
//!
//! - `pre-commit` runs in the stage, with the stage's index holding exactly the commit's
//!   tree (HEAD's tree plus the apply's paths) and the stage's HEAD on the user's branch (at
//!   the parent), as `git commit` runs it with the index it is about to commit. The user's other
//!   uncommitted work is in the stage's files but not in that index: unstaged, as it would be for
//!   `git commit`. What the hook changes becomes part of the commit, as with loaf.yml's after
//!   hooks: files it rewrote in the stage (a formatter) and paths it `git add`ed.
//! - `prepare-commit-msg` (`<file> message`, as with `git commit -m`) and `commit-msg`
//!   (`<file>`) run with the message in `$GIT_DIR/COMMIT_EDITMSG`; what they leave there is
//!   the message, cleaned up as `git commit -m` cleans it (trailing whitespace, blank lines).
//! - A non-zero exit of any of them refuses the commit: nothing is published, and the
//!   [`Refusal`] carries the hook's output for the report.
//! - `post-commit` runs after publish, in the user's tree; its exit status changes nothing.
//!
//! Hooks are found where git finds them: `core.hooksPath` (relative to the root, `~`
//! expanded) or the common git dir's `hooks` (linked worktrees share it), executable files
//! only. Finding them costs a config read and a few `stat`s, so an apply in a repository
//! without hooks does nothing more.
//!
//! They run **as the user had them before the apply** (docs/apply.md, "Your git hooks and commit
//! signing"): when the apply starts, before any action, the hooks found and the files beside them
//! are copied into a private folder of the git common dir (`loaf/githooks`, 0700), and that copy
//! runs, in every place hooks run. A reply that writes `.githooks/pre-commit` (a tracked
//! `core.hooksPath`) gets its version committed; it runs from the next apply on. A hook that did
//! not exist before the apply never runs in it. The hook's `$0` is the copy's path.
//!
//! They run in the same sandbox as `exec` (the stage at the repository's path, ignored
//! entries such as `node_modules` or `.venv` in place), so the hook reaches its tools; its
//! git dir path differs there, which is why the command asks git for `GIT_DIR` and the hooks
//! folder rather than being given them. As git does, it exports `GIT_DIR`, `GIT_INDEX_FILE`
//! (the index the commit is made from) and `GIT_EDITOR=:`, and runs the hook at the root.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use git2::{Oid, Repository};

mod copy;

use super::stage::{Stage, StageError, Touched};
use crate::exec::PathMap;
use crate::exec::environment::CodeEnvironment;
use crate::exec::hooks::{Hook, HookRun, run_hooks_with};
use crate::exec::sandbox::Sandbox;
use crate::notice::{Notice, NoticeKind};
use copy::{COPY_DIR, HooksCopy, copy_hooks, is_executable};

/// How long a git hook may run (`git commit` waits forever; the pre-commit framework's first
/// run installs its environments, which takes minutes).
pub(crate) const GIT_HOOK_TIMEOUT: Duration = Duration::from_secs(600);

/// Bytes of a refusing hook's output kept for the report (its end, where the reason is).
const OUTPUT_KEPT: usize = 4000;

/// The hooks `git commit` would run in this repository, as they were when the apply began.
///
/// Found and copied before any action runs, so that a reply writing a hook (a tracked
/// `core.hooksPath` such as `.githooks`) cannot run its own code in its own apply: the copy
/// runs, the reply's version is committed and runs from the next apply on. The copy is
/// removed when this is dropped.
#[derive(Debug)]
pub(crate) struct GitHooks {
    /// The hooks present (executable) and enabled, by name.
    found: Vec<&'static str>,
    /// The copy of the hooks folder, when there are hooks to run.
    copy: Option<HooksCopy>,
    /// loaf.yml's `exec.env`, for the hook run outside the sandbox (`post-commit`); the
    /// others get the sandbox's.
    environment: CodeEnvironment,
}

/// Which hooks run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[expect(
    clippy::enum_variant_names,
    reason = "`NoVerify` is git's `--no-verify`"
)]
pub(crate) enum Verify {
    /// All of them, as `git commit`.
    All,
    /// `--no-verify`: not `pre-commit` nor `commit-msg` (as `git commit --no-verify`).
    NoVerify,
    /// None (loaf.yml `git-hooks: false`).
    None,
}

/// Why the commit was not made: a hook refused it, or it could not be signed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    /// The report's headline: "the repository's pre-commit hook refused the commit (exit
    /// code 1)".
    pub reason: String,
    /// What the hook (or git) said, trimmed, the stage's paths shown as the user's.
    pub output: String,
}

impl Refusal {
    /// A commit git could not sign: its message.
    pub fn signing(message: &str) -> Refusal {
        Refusal {
            reason: "the commit could not be signed (commit.gpgSign / --gpg-sign)".to_owned(),
            output: trim_output(message),
        }
    }

    fn by(hook: &str, run: &HookRun) -> Refusal {
        let ending = match (run.exit_code, &run.error) {
            (Some(code), _) => format!("exit code {code}"),
            (None, Some(error)) => error.lines().next().unwrap_or_default().to_owned(),
            (None, None) => "failed".to_owned(),
        };
        let both = [run.stdout.trim_end(), run.stderr.trim_end()]
            .into_iter()
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join("\n");
        Refusal {
            reason: format!("the commit was refused by the repository's {hook} hook ({ending})"),
            output: trim_output(&both),
        }
    }
}

/// The commit as the apply planned it, and as the pre-commit hook leaves it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Planned {
    /// The commit's tree.
    pub tree: Oid,
    /// The stage's whole content (the user's uncommitted work included).
    pub staged: Oid,
    /// The paths the commit changes, relative to the root, sorted.
    pub changed: Vec<PathBuf>,
}

/// Where hooks run: the user's root (as the hook sees it), the path map of the stage, and the
/// sandbox (none outside a transaction, or when it runs no code).
#[derive(Clone, Copy)]
pub(crate) struct Place<'a> {
    /// The repository's root, as the user sees it.
    pub root: &'a Path,
    /// User paths to where they really are (the stage), and back for output.
    pub paths: &'a PathMap,
    /// The sandbox code runs in.
    pub sandbox: Option<&'a Sandbox>,
    /// The user's HEAD, the commit's parent: the stage's HEAD while hooks run, so that
    /// `git diff --cached` shows them the commit (`None`: an unborn branch).
    pub head: Option<Oid>,
    /// The ref the commit is for (`refs/heads/main`; `HEAD` when the user's is detached):
    /// the stage's HEAD names that branch while hooks run, so that hooks that read it
    /// (`git symbolic-ref HEAD`: a ticket number in the branch name, no commits to main)
    /// see what `git commit` would show them.
    pub branch: Option<&'a str>,
}

impl GitHooks {
    /// The hooks of `repo` (whose working tree is `root`) that `verify` lets run, copied
    /// as they are now into git-loaf's private folder of the common dir (0700). Without any,
    /// a config read and a few `stat`s: nothing is copied.
    pub fn take(repo: &Repository, root: &Path, verify: Verify) -> std::io::Result<GitHooks> {
        let names: &[&'static str] = match verify {
            Verify::All => &[
                "pre-commit",
                "prepare-commit-msg",
                "commit-msg",
                "post-commit",
            ],
            Verify::NoVerify => &["prepare-commit-msg", "post-commit"],
            Verify::None => &[],
        };
        let common = repo.commondir();
        let configured = repo
            .config()
            .ok()
            .and_then(|c| c.get_path("core.hooksPath").ok());
        let dir = match configured {
            Some(path) if path.is_absolute() => path,
            Some(path) => root.join(path),
            None => common.join("hooks"),
        };
        let found: Vec<&'static str> = names
            .iter()
            .copied()
            .filter(|name| is_executable(&dir.join(name)))
            .collect();
        let top = common.join(COPY_DIR);
        // A copy a killed apply left (the lock is held: no other apply uses it).
        match std::fs::remove_dir_all(&top) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        if found.is_empty() {
            return Ok(GitHooks {
                found,
                copy: None,
                environment: CodeEnvironment::default(),
            });
        }
        let copy = copy_hooks(&dir, root, &found, top)?;
        Ok(GitHooks {
            found,
            copy: Some(copy),
            environment: CodeEnvironment::default(),
        })
    }

    /// With loaf.yml's `exec.env` for the hooks run outside the sandbox.
    pub fn with_environment(self, environment: CodeEnvironment) -> GitHooks {
        GitHooks {
            environment,
            ..self
        }
    }

    /// Whether `name` will run.
    pub fn has(&self, name: &str) -> bool {
        self.found.contains(&name)
    }

    /// Whether any hook runs before the commit (then code runs: the sandbox is needed).
    pub fn any_before_commit(&self) -> bool {
        ["pre-commit", "prepare-commit-msg", "commit-msg"]
            .iter()
            .any(|name| self.has(name))
    }

    /// The shell command that runs hook `name` with `args` at the root of the working tree
    /// it is started in, with the environment `git commit` gives hooks.
    fn command(&self, name: &str, args: &[&str]) -> String {
        // The copy is inside the common dir, which the sandbox shows elsewhere: ask git.
        let rel = self
            .copy
            .as_ref()
            .map_or_else(|| Path::new(COPY_DIR).to_path_buf(), |c| c.hooks.clone());
        let hook = format!(
            "\"$(git rev-parse --git-common-dir)\"/{}",
            quote(&rel.join(name).to_string_lossy())
        );
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        format!(
            "hook={hook} && GIT_DIR=$(git rev-parse --absolute-git-dir) || exit 128\n\
             export GIT_DIR GIT_INDEX_FILE=\"$GIT_DIR/index\" GIT_EDITOR=:\n\
             exec \"$hook\" {}",
            args.join(" ")
        )
    }

    fn run(&self, name: &str, args: &[&str], place: Place<'_>) -> HookRun {
        let hook = Hook {
            timeout: GIT_HOOK_TIMEOUT,
            ..Hook::new(self.command(name, args))
        };
        // Against the commit's index, as `git commit` runs them: not the user's view.
        let sandbox = place.sandbox.map(Sandbox::with_stage_own_view);
        let environment = place
            .sandbox
            .map_or(&self.environment, |sandbox| sandbox.environment());
        let mut result = run_hooks_with(
            &[hook],
            &BTreeMap::new(),
            (place.root, place.paths),
            sandbox.as_ref(),
            environment,
        );
        result.runs.pop().unwrap_or(HookRun {
            command: name.to_owned(),
            success: false,
            exit_code: None,
            stdout: String::new(),
            stderr: String::new(),
            error: Some("did not run".to_owned()),
        })
    }
}

/// Runs `pre-commit` in the stage against exactly `planned.tree`, and returns the commit as
/// the hook leaves it: the files it rewrote in the stage and the paths it `git add`ed are
/// part of it (only those, besides the apply's). Without a pre-commit hook, `planned` as is.
/// On refusal the stage's index is put back and its files recorded as changed anywhere, so
/// the next apply's reset finds what the hook left.
pub fn pre_commit(
    hooks: &GitHooks,
    repo: &Repository,
    stage: &Stage,
    place: Place<'_>,
    planned: Planned,
) -> Result<Result<Planned, Refusal>, StageError> {
    if !hooks.has("pre-commit") || planned.changed.is_empty() {
        return Ok(Ok(planned));
    }
    let run = with_commit_index(stage, place, (planned.tree, planned.staged), || {
        hooks.run("pre-commit", &[], place)
    })?;
    let (run, hook_tree) = run;
    // The hook may have changed any file (and left caches): take the stage as it is now.
    let staged = stage.snapshot(&Touched::Anything, repo)?;
    if !run.success {
        return Ok(Err(Refusal::by("pre-commit", &run)));
    }
    let rewritten: Vec<PathBuf> =
        crate::git::treediff::changed_paths(repo, Some(planned.staged), Some(staged))?
            .into_iter()
            .collect();
    let added = crate::git::treediff::changed_paths(repo, Some(planned.tree), Some(hook_tree))?;
    let tree = if rewritten.is_empty() {
        hook_tree
    } else {
        crate::git::treebuild::tree_with_entries(repo, hook_tree, staged, &rewritten)?
    };
    let mut changed = planned.changed;
    changed.extend(rewritten);
    changed.extend(added);
    changed.sort();
    changed.dedup();
    Ok(Ok(Planned {
        tree,
        staged,
        changed,
    }))
}

/// Runs `prepare-commit-msg` and `commit-msg` on `message` for the commit of `tree` (the
/// stage's index holds it meanwhile; `staged` is what it holds after) and returns the
/// message they leave, cleaned up as `git commit -m` does. Without those hooks, `message`.
pub(crate) fn commit_message(
    hooks: &GitHooks,
    stage: &Stage,
    place: Place<'_>,
    (tree, staged): (Oid, Oid),
    message: String,
) -> Result<Result<String, Refusal>, StageError> {
    let names: Vec<&str> = ["prepare-commit-msg", "commit-msg"]
        .into_iter()
        .filter(|name| hooks.has(name))
        .collect();
    if names.is_empty() {
        return Ok(Ok(message));
    }
    let git_dir = Repository::open(stage.path())?.path().to_path_buf();
    let file = git_dir.join("COMMIT_EDITMSG");
    std::fs::write(&file, &message)?;
    let (refused, _) = with_commit_index(stage, place, (tree, staged), || {
        for name in &names {
            let args: &[&str] = match *name {
                "prepare-commit-msg" => &["\"$GIT_DIR/COMMIT_EDITMSG\"", "message"],
                _ => &["\"$GIT_DIR/COMMIT_EDITMSG\""],
            };
            let run = hooks.run(name, args, place);
            if !run.success {
                return Some(Refusal::by(name, &run));
            }
        }
        None
    })?;
    if let Some(refusal) = refused {
        return Ok(Err(refusal));
    }
    let edited = std::fs::read(&file)?;
    let cleaned = keep_trailers(&message, cleanup(&String::from_utf8_lossy(&edited)));
    if cleaned.is_empty() {
        return Ok(Err(Refusal {
            reason: "the commit was refused: the commit-msg hook left an empty message".to_owned(),
            output: String::new(),
        }));
    }
    Ok(Ok(cleaned))
}

/// Runs `post-commit` in the user's tree after publish; what it said (or that it failed) is
/// a notice, since `git commit` shows its output and ignores its status.
pub(crate) fn post_commit(hooks: &GitHooks, root: &Path) -> Option<Notice> {
    if !hooks.has("post-commit") {
        return None;
    }
    let paths = PathMap::identity(root);
    let place = Place {
        root,
        paths: &paths,
        sandbox: None,
        head: None,
        branch: None,
    };
    let run = hooks.run("post-commit", &[], place);
    let said = [run.stdout.trim_end(), run.stderr.trim_end()]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("\n");
    let text = match (&run.error, said.is_empty()) {
        (Some(error), _) => format!("post-commit hook failed (the commit stands): {error}"),
        (None, true) => return None,
        (None, false) => format!("post-commit hook: {}", trim_output(&said)),
    };
    Some(Notice::new(NoticeKind::Hook, text))
}

/// Runs `f` while the stage is as `git commit` has the repository when it runs hooks: HEAD
/// on the user's branch, at the commit's parent (the stage's own HEAD holds the user's
/// uncommitted work too, which would show as staged), and the index holding exactly `tree`
/// (stat data kept for the entries that match, so git in the hook does not re-read every
/// file). Gives back what `f` returned and the tree the index held when it ended (what the
/// hook `git add`ed), and puts the stage's (detached) HEAD and `staged`, its content, back.
///
/// The branch is named, never moved: a hook that commits or resets would move the user's
/// branch, which publish's compare-and-swap then sees (the apply's commit is kept, not
/// published). libgit2's `set_head` refuses a branch another worktree has checked out, so the
/// symbolic HEAD is written as a reference.
fn with_commit_index<T>(
    stage: &Stage,
    place: Place<'_>,
    (tree, staged): (Oid, Oid),
    f: impl FnOnce() -> T,
) -> Result<(T, Oid), StageError> {
    let stage_repo = Repository::open(stage.path())?;
    let head = stage.head()?;
    let hooked = || -> Result<(T, Oid), StageError> {
        match (place.branch, place.head) {
            (Some(branch), _) if branch.starts_with("refs/heads/") => {
                stage_repo.reference_symbolic("HEAD", branch, true, "git-loaf: git hooks")?;
            }
            (_, Some(parent)) => stage.set_head(parent)?,
            (_, None) => {}
        }
        let mut index = stage_repo.index()?;
        index.read_tree(&stage_repo.find_tree(tree)?)?;
        index.write()?;
        let out = f();
        index.read(true)?;
        // What the hook `git add`ed was written to the sandbox's private layer of the git
        // dir: the objects the index now names are brought into the repository (each one
        // hashed again on the way, so nothing lands under a name that is not its content).
        if let Some(added) = place.sandbox.and_then(Sandbox::added_objects) {
            bring_in_objects(&stage_repo, &added, index.iter().map(|entry| entry.id))?;
        }
        // A hook that left the index unmergeable leaves it as the commit planned it.
        let after = index.write_tree().unwrap_or(tree);
        index.read_tree(&stage_repo.find_tree(staged)?)?;
        index.write()?;
        Ok((out, after))
    };
    let hooked = hooked();
    // Whatever happened, the stage's HEAD is its own again (detached), never the branch.
    stage.set_head(head)?;
    hooked
}

/// Copies into `repo` the objects among `ids` it lacks that the loose-object folder `added`
/// holds. An object is written by its content, so a file in `added` whose content does not
/// hash to its name brings in nothing under that name.
fn bring_in_objects(
    repo: &Repository,
    added: &Path,
    ids: impl Iterator<Item = Oid>,
) -> Result<(), git2::Error> {
    let odb = repo.odb()?;
    let side = git2::Odb::new()?;
    side.add_disk_alternate(&added.to_string_lossy())?;
    for id in ids {
        if odb.exists(id) {
            continue;
        }
        if let Ok(object) = side.read(id) {
            odb.write(object.kind(), object.data())?;
        }
    }
    Ok(())
}

/// `edited` with the trailers of `original` (git-loaf's `Loaf-Apply`, `Loaf-Result`, …) in
/// its last paragraph, where git and git-loaf read trailers: a hook that added a paragraph
/// after them (`Refs: #14` after a blank line) would otherwise hide them, and undo, show and
/// squash would no longer know the commit. They are moved to the end, into the last
/// paragraph when that holds trailers only.
fn keep_trailers(original: &str, edited: String) -> String {
    let last = |text: &str| -> String {
        text.trim_end()
            .rsplit("\n\n")
            .next()
            .unwrap_or_default()
            .to_owned()
    };
    let original_last = last(original);
    let ours: Vec<&str> = original_last
        .lines()
        .filter(|line| !crate::git::commit::parse_trailers(line).is_empty())
        .collect();
    let edited_last = last(&edited);
    if ours
        .iter()
        .all(|line| edited_last.lines().any(|l| l == *line))
        || edited.is_empty()
    {
        return edited;
    }
    let body: Vec<&str> = edited.lines().filter(|l| !ours.contains(l)).collect();
    let mut out = cleanup(&body.join("\n"));
    let body_last = last(&out);
    let trailers_only = !body_last.is_empty()
        && crate::git::commit::parse_trailers(&body_last).len() == body_last.lines().count();
    if !trailers_only && !out.is_empty() {
        out.push('\n');
    }
    for line in ours {
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// `text` in single quotes for `sh`.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// The end of `text`, at most [`OUTPUT_KEPT`] bytes, marked when cut.
fn trim_output(text: &str) -> String {
    let text = text.trim();
    if text.len() <= OUTPUT_KEPT {
        return text.to_owned();
    }
    let mut start = text.len() - OUTPUT_KEPT;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    format!("…{}", &text[start..])
}

/// The message as `git commit -m` leaves it (`--cleanup=whitespace`): trailing whitespace
/// removed from every line, runs of blank lines made one, none at the start or end, one final
/// newline; empty when nothing is left.
fn cleanup(message: &str) -> String {
    let mut out = String::new();
    let mut blank = false;
    for line in message.lines().map(str::trim_end) {
        if line.is_empty() {
            blank = !out.is_empty();
            continue;
        }
        if blank {
            out.push('\n');
            blank = false;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_cleaned_as_git_commit_m_does() {
        assert_eq!(
            cleanup("\n\nfix: a  \n\n\n\nbody\t\n\n"),
            "fix: a\n\nbody\n"
        );
        assert_eq!(cleanup(" \n\n"), "");
    }

    #[test]
    fn loaf_trailers_stay_in_the_last_paragraph() {
        let original = "AI: x\n\nLoaf-Apply: abc\nLoaf-Base: 123\n";
        let appended = "AI: x\n\nLoaf-Apply: abc\nLoaf-Base: 123\n\nRefs: #14\n".to_owned();
        assert_eq!(
            keep_trailers(original, appended),
            "AI: x\n\nRefs: #14\nLoaf-Apply: abc\nLoaf-Base: 123\n"
        );
        let prose = "AI: x\n\nLoaf-Apply: abc\n\nsome words\n".to_owned();
        assert_eq!(
            keep_trailers("AI: x\n\nLoaf-Apply: abc\n", prose),
            "AI: x\n\nsome words\n\nLoaf-Apply: abc\n"
        );
        // A trailer added to theirs (git interpret-trailers, Signed-off-by): unchanged.
        let signed = "AI: x\n\nLoaf-Apply: abc\nLoaf-Base: 123\nSigned-off-by: A <a@x>\n";
        assert_eq!(keep_trailers(original, signed.to_owned()), signed);
    }

    #[test]
    fn quoting_survives_quotes() {
        assert_eq!(quote("a'b"), "'a'\\''b'");
    }

    #[test]
    fn long_output_keeps_its_end() {
        let long = format!("{}END", "x".repeat(OUTPUT_KEPT * 2));
        let kept = trim_output(&long);
        assert!(kept.starts_with('…') && kept.ends_with("END"));
        assert!(kept.len() <= OUTPUT_KEPT + '…'.len_utf8());
    }
}
