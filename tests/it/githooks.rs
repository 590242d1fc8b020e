//! The repository's own git hooks and commit signing (issue 14): hooks run as `git commit`
//! runs them, against exactly the committed content; a refusal publishes nothing; signed
//! commits pass `git verify-commit`.

use std::path::Path;

use crate::scratch::{Scratch, block, trailer};

/// Writes an executable hook script at `path` (relative to the root, or absolute).
fn hook(s: &Scratch, path: &str, script: &str) {
    use std::os::unix::fs::PermissionsExt as _;
    let full = s.root.join(path);
    std::fs::create_dir_all(full.parent().expect("a folder")).expect("mkdir");
    std::fs::write(&full, format!("#!/bin/sh\n{script}")).expect("write hook");
    std::fs::set_permissions(&full, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// A pre-commit hook refusing any staged file containing TODO, as many repositories have one:
/// it reads the index (`git diff --cached`), not the working tree.
const NO_TODO: &str = r#"
bad=$(git diff --cached --name-only -z | xargs -0 -r grep -l TODO --)
if [ -n "$bad" ]; then
  echo "pre-commit: TODO found in: $bad" >&2
  echo "pre-commit: cwd $(pwd)" >&2
  exit 1
fi
"#;

/// `git add -A && git commit --no-verify`: the test's own commits pass no hooks.
fn commit_without_hooks(s: &Scratch, message: &str) {
    s.git(&["add", "-A"]);
    s.git(&["commit", "-q", "--no-verify", "-m", message]);
}

fn write(id: &str, path: &str, content: &str) -> String {
    block(id, "file_write", &[("path", path), ("content", content)])
}

/// `git loaf apply` of `reply` with `env` added to the test environment.
fn apply_with(s: &Scratch, env: &[(&str, &std::ffi::OsStr)], reply: &str) -> std::process::Output {
    crate::support::git_loaf()
        .current_dir(&s.root)
        .envs(crate::scratch::ENV)
        .envs(env.iter().copied())
        .arg("apply")
        .write_stdin(s.reply(reply))
        .output()
        .expect("git-loaf runs")
}

fn stdout(s: &Scratch, out: &std::process::Output) -> String {
    s.redact(&out.stdout)
}

#[test]
fn a_pre_commit_hook_that_refuses_publishes_nothing_and_the_report_says_why() {
    let s = Scratch::with(&[("a.txt", "one\n")]);
    // The user's own uncommitted TODO is not in the commit: the hook must not see it.
    s.write("notes.txt", "TODO: mine\n");
    hook(&s, ".git/hooks/pre-commit", NO_TODO);
    let before = s.state();
    let out = s.apply(&format!(
        "{}{}",
        write("k1a", "/repo/a.txt", "two\n"),
        write("k2b", "/repo/b.txt", "TODO later\n")
    ));
    s.assert_exit(&out, 1);
    let report = stdout(&s, &out);
    let first = report.lines().next().unwrap_or_default();
    assert_eq!(
        first,
        "=== LOAF RESULTS === NOT APPLIED: the commit was refused by the repository's pre-commit hook (exit code 1)",
        "{report}"
    );
    assert!(
        report.contains("pre-commit: TODO found in: b.txt"),
        "{report}"
    );
    assert!(
        report.contains("pre-commit: cwd /repo\n"),
        "the stage's path is shown as the user's: {report}"
    );
    assert!(report.contains("k1a ✅ file_write /repo/a.txt"), "{report}");
    assert!(report.contains("k2b ✅ file_write /repo/b.txt"), "{report}");
    assert_eq!(s.state(), before, "branch, index and files untouched");

    // The stage is ready for the next apply: the fixed reply commits exactly its content.
    let out = s.apply(&write("k3c", "/repo/b.txt", "done\n"));
    s.assert_exit(&out, 0);
    assert_eq!(
        s.git(&["show", "--name-only", "--format=", "HEAD"]),
        "b.txt\n"
    );
    assert_eq!(s.read("a.txt").as_deref(), Some("one\n"));
    assert_eq!(s.read("notes.txt").as_deref(), Some("TODO: mine\n"));
    s.assert_tidy();
}

#[test]
fn no_verify_and_the_loaf_yml_key_skip_the_hooks() {
    let s = Scratch::with(&[("a.txt", "one\n")]);
    hook(&s, ".git/hooks/pre-commit", NO_TODO);
    hook(&s, ".git/hooks/commit-msg", "exit 1\n");
    let reply = s.reply(&write("k1a", "/repo/a.txt", "TODO\n"));
    let out = s.loaf(&["apply", "--no-verify"], &reply);
    s.assert_exit(&out, 0);
    assert_eq!(s.read("a.txt").as_deref(), Some("TODO\n"));

    s.write("loaf.yml", "git-hooks: false\n");
    commit_without_hooks(&s, "config");
    let out = s.apply(&write("k2b", "/repo/a.txt", "TODO again\n"));
    s.assert_exit(&out, 0);
    assert_eq!(s.read("a.txt").as_deref(), Some("TODO again\n"));
}

#[test]
fn files_a_pre_commit_hook_reformats_are_committed_as_reformatted() {
    let s = Scratch::with(&[("a.txt", "one\n"), ("other.txt", "mine  \n")]);
    // The user's uncommitted edit elsewhere: not the apply's, so the hook must not see it
    // staged, and it stays uncommitted.
    s.write("other.txt", "my edit  \n");
    // Strips trailing spaces from the staged files and stages them again, as formatters
    // wired through lint-staged do.
    hook(
        &s,
        ".git/hooks/pre-commit",
        r#"
git diff --cached --name-only | while IFS= read -r f; do
  sed -i 's/[[:space:]]*$//' "$f" && git add -- "$f"
done
"#,
    );
    let out = s.apply(&write("k1a", "/repo/a.txt", "two   \nthree \n"));
    s.assert_exit(&out, 0);
    assert_eq!(s.git(&["show", "HEAD:a.txt"]), "two\nthree\n");
    assert_eq!(s.read("a.txt").as_deref(), Some("two\nthree\n"));
    assert_eq!(
        s.git(&["show", "--name-only", "--format=", "HEAD"]),
        "a.txt\n"
    );
    assert_eq!(s.read("other.txt").as_deref(), Some("my edit  \n"));
    assert_eq!(s.git(&["status", "--porcelain"]), " M other.txt\n");
}

#[test]
fn a_formatter_that_only_rewrites_files_gets_its_changes_committed() {
    let s = Scratch::with(&[("a.txt", "one\n")]);
    // Rewrites without `git add`: what it changed is committed, as with loaf.yml's after hooks.
    hook(&s, ".git/hooks/pre-commit", "sed -i 's/ *$//' a.txt\n");
    let out = s.apply(&write("k1a", "/repo/a.txt", "two   \n"));
    s.assert_exit(&out, 0);
    assert_eq!(s.git(&["show", "HEAD:a.txt"]), "two\n");
    assert_eq!(s.git(&["status", "--porcelain"]), "");
}

#[test]
fn a_commit_msg_hook_can_refuse_and_edit_the_message() {
    let s = Scratch::with(&[("a.txt", "one\n")]);
    hook(
        &s,
        ".git/hooks/commit-msg",
        r#"
head -n1 "$1" | grep -q '^feat: ' && exit 0
echo "commit-msg: the subject must start with 'feat: '" >&2
exit 1
"#,
    );
    let before = s.state();
    let out = s.apply(&write("k1a", "/repo/a.txt", "two\n"));
    s.assert_exit(&out, 1);
    let report = stdout(&s, &out);
    assert!(
        report.starts_with("=== LOAF RESULTS === NOT APPLIED: the commit was refused by the repository's commit-msg hook (exit code 1)\n"),
        "{report}"
    );
    assert!(
        report.contains("the subject must start with 'feat: '"),
        "{report}"
    );
    assert_eq!(s.state(), before);

    s.write(
        "loaf.yml",
        "commit_message_format: \"feat: {operation_summary}\"\n",
    );
    commit_without_hooks(&s, "config");
    // prepare-commit-msg gets `message` as git commit -m gives it; it may add to the message,
    // here from the branch name, as hooks that copy a ticket number from it do.
    hook(
        &s,
        ".git/hooks/prepare-commit-msg",
        "[ \"$2\" = message ] || exit 1\nprintf '\\nRefs: %s\\n' \"$(git symbolic-ref --short HEAD)\" >> \"$1\"\n",
    );
    let out = s.apply(&write("k2b", "/repo/a.txt", "two\n"));
    s.assert_exit(&out, 0);
    let message = s.git(&["log", "-1", "--format=%B"]);
    assert!(message.starts_with("feat: file_write a.txt\n"), "{message}");
    assert!(message.contains("Loaf-Apply: "), "{message}");
    assert!(
        message.contains("\n\nRefs: main\nLoaf-Apply: "),
        "{message}"
    );
    // The stage names the branch only while hooks run.
    let worktrees = s.git(&["worktree", "list", "--porcelain"]);
    assert_eq!(
        worktrees.matches("branch refs/heads/main").count(),
        1,
        "{worktrees}"
    );
    s.assert_tidy();
    // git-loaf still knows its commit: the trailers stayed in the last paragraph.
    assert!(!trailer(&s, "HEAD", "Loaf-Apply").is_empty(), "{message}");
    let out = s.loaf(&["undo"], "");
    s.assert_exit(&out, 0);
    assert_eq!(s.read("a.txt").as_deref(), Some("one\n"));
}

#[test]
fn core_hooks_path_is_honoured_and_post_commit_runs_in_the_users_tree() {
    let s = Scratch::with(&[("a.txt", "one\n")]);
    hook(&s, ".githooks/pre-commit", NO_TODO);
    hook(
        &s,
        ".githooks/post-commit",
        "git rev-parse HEAD > \"$(git rev-parse --git-dir)/post-commit-saw\"\n",
    );
    s.commit_all("hooks");
    s.git(&["config", "core.hooksPath", ".githooks"]);
    // The default folder is not used when core.hooksPath is set.
    hook(&s, ".git/hooks/pre-commit", "exit 1\n");
    let out = s.apply(&write("k1a", "/repo/a.txt", "TODO\n"));
    s.assert_exit(&out, 1);
    assert!(stdout(&s, &out).contains("TODO found in: a.txt"));
    let out = s.apply(&write("k2b", "/repo/a.txt", "fine\n"));
    s.assert_exit(&out, 0);
    let saw =
        std::fs::read_to_string(s.root.join(".git/post-commit-saw")).expect("post-commit ran");
    assert_eq!(
        saw.trim(),
        s.head(),
        "after publish, in the user's repository"
    );
}

#[test]
fn hooks_of_the_main_repository_run_for_an_apply_in_a_linked_worktree() {
    let s = Scratch::with(&[("a.txt", "one\n")]);
    hook(&s, ".git/hooks/pre-commit", NO_TODO);
    let linked = s.sibling("linked");
    s.git(&[
        "worktree",
        "add",
        "-q",
        "-b",
        "side",
        &linked.to_string_lossy(),
    ]);
    let linked = linked.canonicalize().expect("canonical");
    let reply = write("k1a", "/repo/a.txt", "TODO\n").replace("/repo", &linked.to_string_lossy());
    let out = s.loaf_in(&linked, &["apply"], &reply);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("TODO found in: a.txt"));
}

/// The Python pre-commit framework, with a `repo: local` / `language: system` hook, installed
/// into a temporary virtualenv; skipped (with the reason printed) where it cannot be, failed when `CI` is set.
#[test]
fn the_pre_commit_framework_runs_its_local_hooks() {
    let venv = tempfile::tempdir().expect("tempdir");
    let Some(pre_commit) = install_pre_commit(venv.path()) else {
        return;
    };
    let s = Scratch::with(&[("a.txt", "one\n"), ("b.txt", "two\n")]);
    s.write(
        ".pre-commit-config.yaml",
        "repos:\n- repo: local\n  hooks:\n  - id: no-todo\n    name: no TODO\n    entry: sh -c '! grep -n TODO \"$@\"' --\n    language: system\n",
    );
    s.commit_all("pre-commit config");
    let home = venv.path().join("home");
    let install = std::process::Command::new(&pre_commit)
        .arg("install")
        .current_dir(&s.root)
        .envs(crate::scratch::ENV)
        .env("PRE_COMMIT_HOME", &home)
        .output()
        .expect("pre-commit runs");
    assert!(install.status.success(), "{install:?}");
    // The framework's cache (and the patch it stashes unstaged changes in) stays in the test.
    let env = [("PRE_COMMIT_HOME", home.as_os_str())];
    // Hooks run in the sandbox: the framework's virtualenv (under /tmp, which the sandbox
    // replaces by a private one) and its cache must be listed to be seen and written, as a
    // user lists `~/.cache/pre-commit`.
    s.write(
        "loaf.yml",
        &format!("exec:\n  writable: [\"{}\"]\n", venv.path().display()),
    );
    std::fs::write(s.root.join(".git/info/exclude"), "loaf.yml\n").expect("exclude");
    let out = apply_with(&s, &env, &write("k1a", "/repo/a.txt", "TODO\n"));
    s.assert_exit(&out, 1);
    let report = stdout(&s, &out);
    assert!(report.contains("no TODO"), "{report}");
    assert!(report.contains("1:TODO"), "{report}");
    // The framework stashes unstaged changes (here: the user's uncommitted edit, which is
    // not in the commit) and puts them back: they stay the user's, uncommitted.
    s.write("b.txt", "mine\n");
    let out = apply_with(&s, &env, &write("k2b", "/repo/a.txt", "done\n"));
    s.assert_exit(&out, 0);
    assert!(
        std::fs::read_dir(&home)
            .expect("the framework's home")
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with("patch")),
        "the framework stashed the user's unstaged edit while its hook ran"
    );
    assert_eq!(s.read("a.txt").as_deref(), Some("done\n"));
    assert_eq!(
        s.git(&["show", "--name-only", "--format=", "HEAD"]),
        "a.txt\n"
    );
    assert_eq!(s.git(&["status", "--porcelain"]), " M b.txt\n");
    assert_eq!(s.read("b.txt").as_deref(), Some("mine\n"));
}

/// `pip install pre-commit` into a virtualenv under `dir`: its `pre-commit` program.
fn install_pre_commit(dir: &Path) -> Option<std::path::PathBuf> {
    let env = dir.join("venv");
    let made = std::process::Command::new("python3")
        .args(["-m", "venv"])
        .arg(&env)
        .output();
    if !made.is_ok_and(|o| o.status.success()) {
        crate::support::unavailable("python3 -m venv is not available");
        return None;
    }
    let pip = std::process::Command::new(env.join("bin/pip"))
        .args(["install", "-q", "--disable-pip-version-check", "pre-commit"])
        .output();
    match pip {
        Ok(o) if o.status.success() => Some(env.join("bin/pre-commit")),
        Ok(o) => {
            crate::support::unavailable(&format!(
                "pip install pre-commit failed: {}",
                String::from_utf8_lossy(&o.stderr)
                    .lines()
                    .last()
                    .unwrap_or_default()
            ));
            None
        }
        Err(e) => {
            crate::support::unavailable(&format!("pip cannot run: {e}"));
            None
        }
    }
}

/// A throwaway ssh key and the allowed-signers file naming it; `None` (printed) without
/// `ssh-keygen`.
fn ssh_signing(s: &Scratch) -> Option<()> {
    let key = s.sibling("signing-key");
    let made = std::process::Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "ada", "-f"])
        .arg(&key)
        .output();
    if !made.is_ok_and(|o| o.status.success()) {
        crate::support::unavailable("ssh-keygen is not available");
        return None;
    }
    let public = std::fs::read_to_string(key.with_extension("pub")).expect("public key");
    let allowed = s.sibling("allowed-signers");
    std::fs::write(&allowed, format!("ada@example.com {public}")).expect("write");
    s.git(&["config", "gpg.format", "ssh"]);
    s.git(&["config", "user.signingKey", &key.to_string_lossy()]);
    s.git(&[
        "config",
        "gpg.ssh.allowedSignersFile",
        &allowed.to_string_lossy(),
    ]);
    Some(())
}

#[test]
fn with_commit_gpgsign_apply_and_squash_commits_are_signed_as_git_signs_them() {
    let s = Scratch::with(&[("a.txt", "one\n")]);
    if ssh_signing(&s).is_none() {
        return;
    }
    s.git(&["config", "commit.gpgSign", "true"]);
    let out = s.apply(&write("k1a", "/repo/a.txt", "two\n"));
    s.assert_exit(&out, 0);
    s.git(&["verify-commit", "HEAD"]);
    assert!(
        s.git(&["cat-file", "commit", "HEAD"])
            .contains("gpgsig -----BEGIN SSH SIGNATURE-----")
    );
    assert_eq!(
        s.git(&["log", "-1", "--format=%an %ad", "--date=raw"]),
        "Ada 1767225600 +0000\n"
    );
    let out = s.apply(&write("k2b", "/repo/a.txt", "three\n"));
    s.assert_exit(&out, 0);
    let out = s.loaf(&["squash"], "");
    s.assert_exit(&out, 0);
    s.git(&["verify-commit", "HEAD"]);
    assert_eq!(s.read("a.txt").as_deref(), Some("three\n"));

    // --no-gpg-sign overrides the configuration.
    let reply = s.reply(&write("k3c", "/repo/a.txt", "four\n"));
    let out = s.loaf(&["apply", "--no-gpg-sign"], &reply);
    s.assert_exit(&out, 0);
    assert!(!s.git(&["cat-file", "commit", "HEAD"]).contains("gpgsig"));
}

#[test]
fn gpg_sign_asks_for_a_signature_and_a_signing_failure_publishes_nothing() {
    let s = Scratch::with(&[("a.txt", "one\n")]);
    if ssh_signing(&s).is_none() {
        return;
    }
    let reply = s.reply(&write("k1a", "/repo/a.txt", "two\n"));
    let out = s.loaf(&["apply", "--gpg-sign"], &reply);
    s.assert_exit(&out, 0);
    s.git(&["verify-commit", "HEAD"]);

    s.git(&["config", "user.signingKey", "/nonexistent/key"]);
    let before = s.state();
    let reply = s.reply(&write("k2b", "/repo/a.txt", "three\n"));
    let out = s.loaf(&["apply", "-S"], &reply);
    s.assert_exit(&out, 1);
    let report = stdout(&s, &out);
    assert!(
        report.starts_with("=== LOAF RESULTS === NOT APPLIED: the commit could not be signed"),
        "{report}"
    );
    assert!(
        report.contains("/nonexistent/key"),
        "git's own message: {report}"
    );
    assert_eq!(s.state(), before);
}

#[test]
fn without_namespaces_hooks_run_in_the_stage_and_their_output_names_the_users_paths() {
    let s = Scratch::with(&[("a.txt", "one\n")]);
    hook(&s, ".git/hooks/pre-commit", NO_TODO);
    let apply = |reply: &str| apply_with(&s, &[("LOAF_SANDBOX", "off".as_ref())], reply);
    let before = s.state();
    let out = apply(&write("k1a", "/repo/a.txt", "TODO\n"));
    s.assert_exit(&out, 1);
    let report = stdout(&s, &out);
    assert!(report.contains("TODO found in: a.txt"), "{report}");
    assert!(report.contains("pre-commit: cwd /repo\n"), "{report}");
    assert_eq!(s.state(), before);
    let out = apply(&write("k2b", "/repo/a.txt", "two\n"));
    s.assert_exit(&out, 0);
    assert_eq!(s.git(&["show", "HEAD:a.txt"]), "two\n");
}

#[test]
fn openpgp_signing_is_handed_to_gpg_as_git_does() {
    let s = Scratch::with(&[("a.txt", "one\n")]);
    let gnupg = s.sibling("gnupg");
    std::fs::create_dir(&gnupg).expect("mkdir");
    let gpg = |args: &[&str]| {
        std::process::Command::new("gpg")
            .args([
                "--batch",
                "--quiet",
                "--pinentry-mode",
                "loopback",
                "--passphrase",
                "",
            ])
            .args(args)
            .env("GNUPGHOME", &gnupg)
            .output()
    };
    let made = gpg(&[
        "--quick-gen-key",
        "Ada <ada@example.com>",
        "ed25519",
        "sign",
        "never",
    ]);
    if !made.is_ok_and(|o| o.status.success()) {
        crate::support::unavailable("gpg cannot make a key here");
        return;
    }
    s.git(&["config", "user.signingKey", "ada@example.com"]);
    s.git(&["config", "commit.gpgSign", "true"]);
    let reply = write("k1a", "/repo/a.txt", "two\n");
    let out = apply_with(&s, &[("GNUPGHOME", gnupg.as_os_str())], &reply);
    s.assert_exit(&out, 0);
    let verified = crate::scratch::git_cmd(&s.root, &["verify-commit", "HEAD"])
        .env("GNUPGHOME", &gnupg)
        .output()
        .expect("git runs");
    // The agent gpg started for this home ends with it.
    let _ = std::process::Command::new("gpgconf")
        .args(["--kill", "gpg-agent"])
        .env("GNUPGHOME", &gnupg)
        .output();
    assert!(
        verified.status.success(),
        "{}",
        String::from_utf8_lossy(&verified.stderr)
    );
    assert!(
        s.git(&["cat-file", "commit", "HEAD"])
            .contains("-----BEGIN PGP SIGNATURE-----")
    );
}

#[test]
fn a_kept_commit_replayed_by_take_is_signed_as_configured() {
    let s = Scratch::with(&[("a.txt", "one\n")]);
    if ssh_signing(&s).is_none() {
        return;
    }
    s.git(&["config", "commit.gpgSign", "true"]);
    let reply = write("k1a", "/repo/b.txt", "AI\n");
    // The branch moves while the apply runs: its commit is kept aside, not published.
    let out = s.apply_pausing(&reply, "committed", || {
        s.git(&[
            "commit",
            "-q",
            "--allow-empty",
            "--no-gpg-sign",
            "-m",
            "meanwhile",
        ]);
    });
    s.assert_exit(&out, 3);
    let kept = s.git(&["for-each-ref", "--format=%(refname:lstrip=2)", "refs/loaf/"]);
    let id = kept
        .lines()
        .find(|l| *l != "oplog" && !l.contains('/'))
        .expect("a kept commit")
        .to_owned();
    let out = s.loaf(&["take", &id], "");
    s.assert_exit(&out, 0);
    assert_eq!(
        s.git(&["log", "-2", "--format=%s"]).lines().nth(1),
        Some("meanwhile")
    );
    s.git(&["verify-commit", "HEAD"]);
    assert_eq!(s.read("b.txt").as_deref(), Some("AI\n"));
}
